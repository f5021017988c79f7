//! Dequantization arithmetic (SPEC §12.2), in integer operations only: the reference of
//! every A65 route and what the EV74 firmware computes.
//!
//! For a code `q` of an integer dtype, a zero point `zp` and the multiplier `s` (binary32,
//! finite, > 0, subnormals allowed):
//!
//! 1. `d = q − zp` in 64 bits;
//! 2. `x` = `d` rounded once to binary32, nearest-even ([`i64_to_f32_bits`]);
//! 3. `y` = `x / s` rounded once to binary32, nearest-even, gradual underflow, overflow to
//!    ±∞, a zero numerator giving +0 ([`div_f32_bits`]);
//! 4. FP32 output `y`; FP16 output `y` rounded to binary16, nearest-even
//!    ([`f32_to_f16_bits`]); BF16 output §4's FP32 → BF16 rule on `y`
//!    ([`super::cast::f32_to_bf16`]).
//!
//! Nothing here reads or depends on the FP environment.
//!
//! ```
//! use simak_core::arith::dequant::dequantize;
//! use simak_core::DType;
//!
//! // (13 − 3) / 0.5 = 20 as FP32 bits.
//! assert_eq!(dequantize(13, 3, 0.5f32.to_bits(), DType::F32), 20f32.to_bits());
//! // 1 / 3 is a division rounded once, not 1 · (1/3).
//! assert_eq!(dequantize(1, 0, 3f32.to_bits(), DType::F32), 0x3eaa_aaab);
//! ```
#![deny(clippy::indexing_slicing)]

use crate::dtype::DType;

/// Step 2 of SPEC §12.2: `d` rounded once to binary32, nearest-even (exact for
/// `|d| < 2^24`), as bits. Zero gives +0.
pub const fn i64_to_f32_bits(d: i64) -> u32 {
    let sign = if d < 0 { 0x8000_0000u32 } else { 0 };
    let a = d.unsigned_abs();
    if a == 0 {
        return 0;
    }
    let len = 64 - a.leading_zeros(); // 1..=64
    let (kept, exp) = if len <= 24 {
        (a << (24 - len), len - 1)
    } else {
        let shift = len - 24;
        let kept = a >> shift;
        let rest = a & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let up = rest > half || (rest == half && kept & 1 == 1);
        (kept + up as u64, len - 1)
    };
    // kept in [2^23, 2^24]; 2^24 carries into the exponent through the addition.
    sign | (((127 + exp) << 23) + (kept as u32) - (1 << 23))
}

/// The significand and exponent of a finite binary32 magnitude: `|bits| = m · 2^e` with
/// `m < 2^24` (0 for ±0); the sign bit is ignored.
pub(crate) const fn split(bits: u32) -> (u64, i32) {
    let field = ((bits >> 23) & 0xff) as i32;
    let mantissa = (bits & 0x007f_ffff) as u64;
    if field == 0 {
        (mantissa, -149)
    } else {
        (mantissa | 1 << 23, field - 150)
    }
}

/// Step 3 of SPEC §12.2: `x / s` for a finite binary32 `x` and a finite binary32 `s > 0`
/// (bits), rounded once to binary32, nearest-even, subnormal results kept, overflow to ±∞;
/// a zero `x` (either sign) gives +0. Outside that domain (`s` zero, negative, infinite or
/// NaN, `x` not finite) the result is unspecified.
pub const fn div_f32_bits(x: u32, s: u32) -> u32 {
    let (mx, ex) = split(x & 0x7fff_ffff);
    let (ms, es) = split(s & 0x7fff_ffff);
    if mx == 0 || ms == 0 {
        return 0;
    }
    // x / s = (mx · 2^64 / ms) · 2^(ex − es − 64); the quotient (< 2^88) has ≥ 41
    // significant bits, and a nonzero remainder is sticky below its lowest bit.
    let dividend = (mx as u128) << 64;
    let quotient = dividend / ms as u128;
    let sticky = !dividend.is_multiple_of(ms as u128);
    round_f32(x & 0x8000_0000 != 0, quotient, ex - es - 64, sticky)
}

/// `magnitude · 2^exp` (`magnitude` nonzero, below 2^100), plus `sticky` nonzero bits
/// below its lowest bit, rounded once to binary32, nearest-even, subnormals kept,
/// overflow to ∞, with the given sign. `sticky` only with more than 24 significant bits
/// in `magnitude` (then the lowest bit is always below the rounding point). The one
/// rounding step of [`div_f32_bits`] and of Preproc's subtraction
/// ([`super::preproc::sub_f32_bits`]).
#[inline(always)]
pub(crate) const fn round_f32(negative: bool, magnitude: u128, exp: i32, sticky: bool) -> u32 {
    let sign = if negative { 0x8000_0000 } else { 0 };
    let len = 128 - magnitude.leading_zeros() as i32;
    let top = len - 1 + exp;
    let quantum = if top - 23 > -149 { top - 23 } else { -149 };
    let shift = quantum - exp;
    let rounded: u128 = if shift <= 0 {
        // Exact: fewer than 24 significant bits above the quantum.
        magnitude << (-shift) as u32
    } else if shift > 100 {
        // The value is below 2^(exp + 100) ≤ 2^(quantum − 1) / 2^(shift − 101): under half.
        0
    } else {
        let kept = magnitude >> shift as u32;
        let rest = magnitude & ((1u128 << shift as u32) - 1);
        let half = 1u128 << (shift as u32 - 1);
        let up = rest > half || (rest == half && (sticky || kept & 1 == 1));
        kept + up as u128
    };
    if rounded == 0 {
        return sign;
    }
    let magnitude = if quantum == -149 && rounded <= 1 << 23 {
        // Subnormal, or the carry into the smallest normal (whose bits are 2^23).
        rounded as u32
    } else {
        let (n, q) = if rounded == 1 << 24 {
            (1u128 << 23, quantum + 1)
        } else {
            (rounded, quantum)
        };
        let field = q + 150;
        if field >= 0xff {
            0x7f80_0000
        } else {
            ((field as u32) << 23) | (n as u32 & 0x007f_ffff)
        }
    };
    sign | magnitude
}

/// Step 4 of SPEC §12.2 for FP16: binary32 bits rounded to IEEE binary16, nearest-even,
/// subnormals kept, overflow to ±∞; NaN stays a NaN (quieted, sign and high payload kept).
pub const fn f32_to_f16_bits(bits: u32) -> u16 {
    let sign = ((bits >> 16) & 0x8000) as u16;
    let field = (bits >> 23) & 0xff;
    if field == 0xff {
        let mantissa = bits & 0x007f_ffff;
        return if mantissa == 0 {
            sign | 0x7c00
        } else {
            sign | 0x7e00 | (mantissa >> 13) as u16
        };
    }
    let (m, e) = split(bits & 0x7fff_ffff);
    if m == 0 {
        return sign;
    }
    let len = 64 - m.leading_zeros() as i32;
    let top = len - 1 + e;
    let quantum = if top - 10 > -24 { top - 10 } else { -24 };
    let shift = quantum - e;
    let rounded = if shift <= 0 {
        m << (-shift) as u32
    } else if shift >= 64 {
        0
    } else {
        let kept = m >> shift;
        let rest = m & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let up = rest > half || (rest == half && kept & 1 == 1);
        kept + up as u64
    };
    if rounded == 0 {
        return sign;
    }
    let magnitude = if quantum == -24 && rounded <= 1 << 10 {
        rounded as u16
    } else {
        let (n, q) = if rounded == 1 << 11 {
            (1u64 << 10, quantum + 1)
        } else {
            (rounded, quantum)
        };
        let field = q + 25;
        if field >= 0x1f {
            0x7c00
        } else {
            ((field as u16) << 10) | (n as u16 & 0x03ff)
        }
    };
    sign | magnitude
}

/// SPEC §12.2 for one code: `(q − zp)` to binary32, divided by the multiplier (bits), then
/// to `out` (`F32`: binary32 bits; `F16` / `BF16`: the 16-bit pattern, zero-extended). The
/// multiplier must be finite and > 0 (checked by admission); `out` another dtype gives the
/// FP32 bits.
pub const fn dequantize(q: i64, zero_point: i64, multiplier_bits: u32, out: DType) -> u32 {
    let x = i64_to_f32_bits(q.wrapping_sub(zero_point));
    let y = div_f32_bits(x, multiplier_bits);
    match out {
        DType::F16 => f32_to_f16_bits(y) as u32,
        DType::BF16 => super::cast::f32_to_bf16(y) as u32,
        _ => y,
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod test {
    extern crate std;

    use super::*;

    #[test]
    fn int_to_f32_matches_the_cast() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut cases = std::vec![
            0i64,
            1,
            -1,
            1 << 24,
            (1 << 24) + 1,
            (1 << 24) + 3,
            -(1 << 31)
        ];
        cases.extend([(1i64 << 32) - 1, -(1i64 << 32) + 1, i64::MAX, i64::MIN + 1]);
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push((x as i64) >> (x % 40));
        }
        for d in cases {
            assert_eq!(i64_to_f32_bits(d), (d as f32).to_bits(), "{d}");
        }
    }

    #[test]
    fn division_matches_the_hardware() {
        // The host's IEEE binary32 division (default environment: nearest-even, subnormals
        // kept) is the oracle; denominators finite and > 0, numerators finite.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut edges = std::vec![
            0u32,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x3f80_0000,
            0x4040_0000,
            0x3eaa_aaab,
            0x0000_0003,
        ];
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            edges.push(x as u32);
        }
        let finite = |b: u32| b & 0x7f80_0000 != 0x7f80_0000;
        for (k, &n) in edges.iter().enumerate() {
            let d = edges[(k * 7 + 3) % edges.len()] & 0x7fff_ffff;
            if !finite(n) || !finite(d) || d == 0 {
                continue;
            }
            // A zero numerator gives +0 (SPEC §12.2 step 3); an underflow keeps its sign.
            let want = if n & 0x7fff_ffff == 0 {
                0
            } else {
                (f32::from_bits(n) / f32::from_bits(d)).to_bits()
            };
            assert_eq!(div_f32_bits(n, d), want, "{n:#x} / {d:#x}");
        }
    }

    #[test]
    fn f16_matches_the_library_semantics() {
        // Known patterns: 1.0, 65504 (max), 65520 (rounds to ∞), 2^-24, 2^-25 (tie to 0),
        // 3·2^-26 (rounds up to 2^-24), the largest subnormal and its carry.
        let cases: [(f32, u16); 9] = [
            (1.0, 0x3c00),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00),
            (5.960_464_5e-8, 0x0001),
            (2.980_232_2e-8, 0x0000),
            (4.470_348_4e-8, 0x0001),
            (-2.0, 0xc000),
            (6.097_555e-5, 0x03ff),
            (6.103_515_6e-5, 0x0400),
        ];
        for (x, want) in cases {
            assert_eq!(f32_to_f16_bits(x.to_bits()), want, "{x}");
        }
        assert_eq!(f32_to_f16_bits(f32::INFINITY.to_bits()), 0x7c00);
        assert_eq!(f32_to_f16_bits(0x8000_0000), 0x8000);
    }
}
