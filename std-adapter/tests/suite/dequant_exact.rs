//! Dequant (SPEC §12.2) against an exact rational reference written here: every INT8 and
//! every INT16 code × multipliers (subnormal, powers of two, 1/3, huge) × zero points at
//! the ends of their ranges; INT32 at ±2^31, ±2^24 ± 1 and random codes; FP32, FP16 and
//! BF16 outputs; at every level this CPU has. The reference rounds by exact comparison of
//! scaled integers (no floating-point arithmetic): step 2 rounds `q − zp` to binary32,
//! step 3 rounds `x / s` to binary32; FP16 by the same exact rounding to binary16; BF16 by
//! §4's integer rule.

use std::cmp::Ordering;

use simak::a65::{self, Level};
use simak::ops::dequant::{Params, Request, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::rng::Rng;

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
fn reference_f32(q: i64, zp: i64, s_bits: u32) -> u32 {
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
fn reference_f16(y: u32) -> u16 {
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
fn reference_bf16(y: u32) -> u16 {
    (y.wrapping_add(0x7fff + ((y >> 16) & 1)) >> 16) as u16
}

fn reference(q: i64, zp: i64, s_bits: u32, out: DType) -> u32 {
    let y = reference_f32(q, zp, s_bits);
    match out {
        DType::F16 => u32::from(reference_f16(y)),
        DType::BF16 => u32::from(reference_bf16(y)),
        _ => y,
    }
}

/// Multipliers: subnormal, powers of two, 1/3, huge, and a few ordinary ones.
fn multipliers() -> Vec<u32> {
    vec![
        1,           // smallest subnormal
        0x0000_0003, // subnormal
        0x0040_0000, // 2^-127
        0x0080_0000, // smallest normal
        2f32.powi(-24).to_bits(),
        0.5f32.to_bits(),
        1f32.to_bits(),
        2f32.powi(12).to_bits(),
        (1f32 / 3f32).to_bits(),
        3f32.to_bits(),
        0x3e99_999a, // 0.3
        0x7f7f_ffff, // largest finite
        2f32.powi(100).to_bits(),
    ]
}

/// Runs Dequant over `codes` (little-endian `dtype` bytes) at `level` and returns the
/// output bits per element.
fn run(dtype: DType, codes: &[u8], params: Params, out: DType, level: Level) -> Option<Vec<u32>> {
    let n = (codes.len() / dtype.size()) as u64;
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([n], dtype),
        output: TensorSpec::contiguous([n], out),
        params,
    })
    .expect("admits");
    let prepared = a65::dequant::prepare_at(&plan, level).ok()?;
    let mut y = vec![0u8; n as usize * out.size()];
    a65::execute_threaded(&prepared, 2, codes, &mut y).expect("runs");
    Some(
        y.chunks_exact(out.size())
            .map(|b| {
                let mut w = [0u8; 4];
                w[..b.len()].copy_from_slice(b);
                u32::from_le_bytes(w)
            })
            .collect(),
    )
}

fn sweep(dtype: DType, codes: Vec<i64>, zps: &[i64], levels: &[Level]) -> usize {
    let bytes: Vec<u8> = codes
        .iter()
        .flat_map(|&q| (q as i32).to_le_bytes()[..dtype.size()].to_vec())
        .collect();
    let mut checked = 0;
    for &s in &multipliers() {
        for &zp in zps {
            let params = Params::from_bits(s).with_zero_point(zp as i32);
            for out in [DType::F32, DType::F16, DType::BF16] {
                let want: Vec<u32> = codes.iter().map(|&q| reference(q, zp, s, out)).collect();
                for &level in levels {
                    let Some(got) = run(dtype, &bytes, params, out, level) else {
                        continue;
                    };
                    for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g, w,
                            "{dtype} q {} zp {zp} s 0x{s:08x} {out} {level}",
                            codes[k]
                        );
                    }
                    checked += got.len();
                }
            }
        }
    }
    checked
}

#[test]
fn reference_agrees_with_known_values() {
    // (13 − 3) / 0.5 = 20; 1 / 3; 1 / 0.3 (0x3e99999a) is 3.3333333 rounded once.
    assert_eq!(reference_f32(13, 3, 0.5f32.to_bits()), 20f32.to_bits());
    assert_eq!(reference_f32(1, 0, 3f32.to_bits()), 0x3eaa_aaab);
    assert_eq!(reference_f32(-1, 0, 1), 0xff80_0000);
    assert_eq!(reference_f32(1, 0, 0x7f7f_ffff), 0x0020_0000);
    // 2^24 + 1 rounds to 2^24 in step 2.
    assert_eq!(
        reference_f32((1 << 24) + 1, 0, 1f32.to_bits()),
        16_777_216f32.to_bits()
    );
    assert_eq!(reference_f16(65520f32.to_bits()), 0x7c00);
    assert_eq!(reference_f16(1f32.to_bits()), 0x3c00);
    assert_eq!(reference_f16(2f32.powi(-25).to_bits()), 0);
    assert_eq!(reference_f16((3.0 * 2f32.powi(-26)).to_bits()), 1);
}

#[test]
fn every_int8_code() {
    let levels = Level::detected();
    let codes: Vec<i64> = (-128..=127).collect();
    let n = sweep(DType::I8, codes, &[-128, -1, 0, 127], &levels);
    assert!(n >= 256 * 13 * 4 * 3);
}

#[test]
fn every_int16_code() {
    // Every code at the automatic level and the scalar one (the table is built once per
    // plan, the same way at every level; the walk differs).
    // Sampled (every 61st code and both ends) outside the `test` step.
    let levels = [Level::Scalar, *Level::detected().last().expect("one")];
    let all: Vec<i64> = (-32768..=32767).collect();
    let codes = simak_tests::sweeps::pick(&all, 61);
    let len = codes.len();
    assert!(len == 65_536 || !simak_tests::sweeps::full());
    let n = sweep(DType::I16, codes, &[-32768, 0, 32767], &levels);
    assert!(n >= len * 13 * 3 * 3);
}

#[test]
fn int32_edges_and_random_codes() {
    let mut codes: Vec<i64> = vec![
        i64::from(i32::MIN),
        i64::from(i32::MAX),
        1 << 24,
        (1 << 24) + 1,
        (1 << 24) - 1,
        -(1 << 24),
        -(1 << 24) - 1,
        -(1 << 24) + 1,
        (1 << 25) + 3,
        0,
        1,
        -1,
    ];
    let mut rng = Rng::new(0x2512_0032);
    let random = if simak_tests::sweeps::full() {
        2000
    } else {
        200
    };
    for _ in 0..random {
        codes.push(i64::from(rng.next_u32() as i32 >> (rng.below(31) as u32)));
    }
    let zps = [i64::from(i32::MIN), -1, 0, i64::from(i32::MAX)];
    // The integer path (what runs when the FP environment is not the default, and what
    // the firmware computes) against the reference too.
    for &s in &multipliers() {
        for &zp in &zps {
            for out in [DType::F32, DType::F16, DType::BF16] {
                for &q in &codes {
                    assert_eq!(
                        simak::arith::dequant::dequantize(q, zp, s, out),
                        reference(q, zp, s, out),
                        "integer path q {q} zp {zp} s 0x{s:08x} {out}"
                    );
                }
            }
        }
    }
    let n = sweep(DType::I32, codes, &zps, &Level::detected());
    assert!(n > 0);
}

#[test]
fn int32_never_fails_for_the_fp_environment() {
    // The seam feeds a flush-to-zero, denormals-are-zero control word to the generic
    // check: Dequant is not an FP route for it (INT32 reads the register itself and falls
    // back to the integer path), so the call succeeds with the reference's bits.
    let codes: Vec<u8> = [i32::MIN, 7, -(1 << 24) - 1]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([3], DType::I32),
        output: TensorSpec::contiguous([3], DType::F32),
        params: Params::from_bits(3).with_zero_point(5),
    })
    .expect("admits");
    let prepared = a65::dequant::prepare(&plan);
    let mut y = [0u8; 12];
    a65::execute_with_fp_control(&prepared, &codes, &mut y, Some(0x9fc0)).expect("never fails");
    for (k, q) in [i32::MIN, 7, -(1 << 24) - 1].into_iter().enumerate() {
        let got = u32::from_le_bytes(y[k * 4..k * 4 + 4].try_into().expect("4"));
        assert_eq!(got, reference_f32(i64::from(q), 5, 3));
    }
}

#[test]
fn scalar_strided_and_empty_tensors() {
    // Rank 0: one element.
    let plan = check_inference(&Request {
        input: TensorSpec::<0>::contiguous([], DType::I16),
        output: TensorSpec::<0>::contiguous([], DType::BF16),
        params: Params::new(0.5).with_zero_point(-2),
    })
    .expect("admits");
    let mut y = [0u8; 2];
    a65::dequant::execute(&a65::dequant::prepare(&plan), &7i16.to_le_bytes(), &mut y)
        .expect("runs");
    assert_eq!(
        u32::from(u16::from_le_bytes(y)),
        reference(7, -2, 0.5f32.to_bits(), DType::BF16)
    );
    // A transposed INT8 [3, 5] read into a padded FP16 output; gap bytes untouched.
    let q: Vec<u8> = (0..15u8).map(|k| k.wrapping_mul(37)).collect();
    let plan = check_inference(&Request {
        input: TensorSpec::strided([3, 5], [1, 3], DType::I8),
        output: TensorSpec::strided([3, 5], [14, 2], DType::F16),
        params: Params::new(3.0).with_zero_point(1),
    })
    .expect("admits");
    let mut y = vec![0xeeu8; 3 * 14];
    a65::execute_threaded(&a65::dequant::prepare(&plan), 3, &q, &mut y).expect("runs");
    for i in 0..3 {
        for j in 0..5 {
            let code = i64::from(q[i + 3 * j] as i8);
            let got = u16::from_le_bytes([y[i * 14 + j * 2], y[i * 14 + j * 2 + 1]]);
            assert_eq!(
                u32::from(got),
                reference(code, 1, 3f32.to_bits(), DType::F16)
            );
        }
        assert_eq!(&y[i * 14 + 10..i * 14 + 14], &[0xee; 4]);
    }
    // Empty: nothing written, no storage needed.
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([4, 0], DType::I32),
        output: TensorSpec::contiguous([4, 0], DType::F32),
        params: Params::new(1.0),
    })
    .expect("admits");
    a65::dequant::execute(&a65::dequant::prepare(&plan), &[], &mut []).expect("no-op");
}
