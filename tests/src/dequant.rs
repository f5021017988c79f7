//! An exact rational reference of SPEC §12.2 (dequantization): it rounds by exact
//! comparison of scaled integers, with no floating-point arithmetic. Step 2 rounds `q − zp`
//! to binary32, step 3 rounds `x / s` to binary32; FP16 by the same exact rounding to
//! binary16; BF16 by §4's integer rule. Used by the Dequant tests of `std-adapter` and by
//! the `simak-qualify` correctness catalogue.

use std::cmp::Ordering;

use simak::DType;

/// `a · 2^ea` compared with `b · 2^eb` (nonnegative integers, exact).
fn cmp_scaled(a: u128, ea: i32, b: u128, eb: i32) -> Ordering {
    match (a == 0, b == 0) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    let ta = 128 - a.leading_zeros() as i32 + ea;
    let tb = 128 - b.leading_zeros() as i32 + eb;
    if ta != tb {
        return ta.cmp(&tb);
    }
    // Same top bit: the exponents differ by less than 128.
    if ea >= eb {
        (a << (ea - eb) as u32).cmp(&b)
    } else {
        a.cmp(&(b << (eb - ea) as u32))
    }
}

/// A binary format's finite positive values: bits → (significand, exponent).
#[derive(Clone, Copy)]
struct Format {
    mantissa_bits: u32,
    exp_bits: u32,
    bias: i32,
}

const F32: Format = Format {
    mantissa_bits: 23,
    exp_bits: 8,
    bias: 127,
};
const F16: Format = Format {
    mantissa_bits: 10,
    exp_bits: 5,
    bias: 15,
};

impl Format {
    /// The value of the positive bits `b` as `m · 2^e`.
    fn value(self, b: u32) -> (u128, i32) {
        let field = (b >> self.mantissa_bits) as i32;
        let m = u128::from(b & ((1 << self.mantissa_bits) - 1));
        let min_e = 1 - self.bias - self.mantissa_bits as i32;
        if field == 0 {
            (m, min_e)
        } else {
            (m | 1 << self.mantissa_bits, field - 1 + min_e)
        }
    }

    /// The bits of +∞.
    fn infinity(self) -> u32 {
        ((1 << self.exp_bits) - 1) << self.mantissa_bits
    }

    /// The positive rational `num / den · 2^e` (num, den > 0) rounded to nearest-even, with
    /// overflow to +∞ (rounding as if the exponent were unbounded: above the largest
    /// finite value by half an ulp or more → ∞).
    fn round(self, num: u128, den: u128, e: i32) -> u32 {
        // value ≥ c ⇔ num · 2^e ≥ c · den.
        let at_least = |b: u32| -> bool {
            let (m, ce) = self.value(b);
            let (lhs, le) = (num, e);
            // Compare num · 2^e with m · den · 2^ce.
            let rhs = m * den;
            cmp_scaled(lhs, le, rhs, ce) != Ordering::Less
        };
        // Largest b in [0, inf) with value(b) ≤ v.
        let (mut lo, mut hi) = (0u32, self.infinity());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if at_least(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        // lo ≤ v < next (next = lo + 1, value 2^(emax+1) for the infinity pattern).
        let (m0, e0) = self.value(lo);
        let (m1, e1) = if lo + 1 == self.infinity() {
            (1u128, self.value(lo).1 + self.mantissa_bits as i32 + 1)
        } else {
            self.value(lo + 1)
        };
        // Midpoint (m0·2^e0 + m1·2^e1) / 2 on a common exponent.
        let ec = e0.min(e1);
        let mid = (m0 << (e0 - ec) as u32) + (m1 << (e1 - ec) as u32);
        // v vs mid · 2^(ec − 1): num · 2^e vs mid · den · 2^(ec−1).
        match cmp_scaled(num, e, mid * den, ec - 1) {
            Ordering::Less => lo,
            Ordering::Greater => lo + 1,
            Ordering::Equal => {
                if lo & 1 == 0 {
                    lo
                } else {
                    lo + 1
                }
            }
        }
    }
}

/// SPEC §12.2 by the exact reference: the FP32 bits of `(q − zp) / s`.
pub fn reference_f32(q: i64, zp: i64, s_bits: u32) -> u32 {
    let d = q - zp;
    if d == 0 {
        return 0;
    }
    let sign = if d < 0 { 0x8000_0000 } else { 0 };
    // Step 2: x = |d| rounded to binary32.
    let x = F32.round(u128::from(d.unsigned_abs()), 1, 0);
    let (mx, ex) = F32.value(x);
    // Step 3: y = x / s, s = ms · 2^es.
    let (ms, es) = F32.value(s_bits);
    sign | F32.round(mx, ms, ex - es)
}

/// FP16 of an FP32 result, rounded exactly.
pub fn reference_f16(y: u32) -> u16 {
    let sign = ((y >> 16) & 0x8000) as u16;
    let a = y & 0x7fff_ffff;
    if a == 0 {
        return sign;
    }
    if a == 0x7f80_0000 {
        return sign | 0x7c00;
    }
    let (m, e) = F32.value(a);
    sign | F16.round(m, 1, e) as u16
}

/// SPEC §4's FP32 → BF16 rule.
pub fn reference_bf16(y: u32) -> u16 {
    (y.wrapping_add(0x7fff + ((y >> 16) & 1)) >> 16) as u16
}

/// SPEC §12.2 by the exact reference: the output bits of `(q − zp) / s` in `out` (FP32,
/// FP16 or BF16; any other dtype gives the FP32 bits).
pub fn reference(q: i64, zp: i64, s_bits: u32, out: DType) -> u32 {
    let y = reference_f32(q, zp, s_bits);
    match out {
        DType::F16 => u32::from(reference_f16(y)),
        DType::BF16 => u32::from(reference_bf16(y)),
        _ => y,
    }
}
