//! The exact CastTess conversions to BF16 (SPEC §4), as integer code.
//!
//! - FP32 → BF16: `(bits + 0x7fff + ((bits >> 16) & 1)) >> 16` on the `u32` bits with 32-bit
//!   wraparound, applied to NaNs too (no canonicalization: `0x7f800001` → `0x7f80`,
//!   `0x7fffffff` → `0x8000`).
//! - FP16 → BF16: the exact value rounded to nearest-even BF16; signed zeros, subnormals and
//!   infinities preserved; NaN → `sign | 0x7fc0 | (mantissa >> 3)`.
//! - BF16 → BF16: all 16 bits preserved.
//!
//! Nothing here depends on the host FP environment. These functions are the reference and
//! the scalar tail of every SIMD route.

use crate::dtype::DType;

/// FP32 → BF16 by the unsigned-bit rule of SPEC §4 (wraps; NaNs are not canonicalized).
///
/// # Examples
///
/// ```
/// use simak_core::arith::cast::f32_to_bf16;
/// assert_eq!(f32_to_bf16(1.0f32.to_bits()), 0x3f80);
/// assert_eq!(f32_to_bf16(0x7f80_0001), 0x7f80);
/// assert_eq!(f32_to_bf16(0x7fff_ffff), 0x8000);
/// ```
#[inline(always)]
pub const fn f32_to_bf16(bits: u32) -> u16 {
    (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// The exact binary32 bits of an IEEE binary16 value (subnormals normalized, NaN payload
/// shifted into the high mantissa bits, sign kept). Integer code only.
#[inline(always)]
pub const fn f16_to_f32_bits(bits: u16) -> u32 {
    let sign = ((bits & 0x8000) as u32) << 16;
    let exp = ((bits >> 10) & 0x1f) as u32;
    let mant = (bits & 0x3ff) as u32;
    if exp == 0x1f {
        return sign | 0x7f80_0000 | (mant << 13);
    }
    if exp != 0 {
        return sign | ((exp + 112) << 23) | (mant << 13);
    }
    if mant == 0 {
        return sign;
    }
    // Subnormal: mant · 2^-24 with its leading one at bit p (0..=9).
    let p = 31 - mant.leading_zeros();
    sign | ((p + 103) << 23) | ((mant << (23 - p)) & 0x7f_ffff)
}

/// FP16 → BF16 (SPEC §4): exact value rounded to nearest-even BF16; NaN →
/// `sign | 0x7fc0 | (mantissa >> 3)`.
///
/// # Examples
///
/// ```
/// use simak_core::arith::cast::f16_to_bf16;
/// assert_eq!(f16_to_bf16(0x0001), 0x3380); // 2^-24
/// assert_eq!(f16_to_bf16(0x03ff), 0x3880); // rounds up to 2^-14
/// assert_eq!(f16_to_bf16(0x7d00), 0x7fe0); // NaN keeps its high payload
/// ```
#[inline(always)]
pub const fn f16_to_bf16(bits: u16) -> u16 {
    let magnitude = bits & 0x7fff;
    if magnitude > 0x7c00 {
        return (bits & 0x8000) | 0x7fc0 | ((bits & 0x3ff) >> 3);
    }
    // Every finite FP16 value has at most 11 significant bits, so the FP32 rule rounds the
    // exact binary32 value to nearest-even without overflow; infinities pass unchanged.
    f32_to_bf16(f16_to_f32_bits(bits))
}

/// A binary64 value rounded once to binary32, nearest-even, as its bits: what `x as f32`
/// gives in the default FP environment, but in integer code, so that neither a directed
/// rounding mode nor flush-to-zero of the calling thread changes it (a binding converting
/// a host language's double multiplier uses this). Subnormal results are kept, values at
/// or above the binary32 overflow threshold become infinities, and a NaN stays a quiet NaN
/// with the sign and the top 22 payload bits kept.
///
/// # Examples
///
/// ```
/// use simak_core::arith::cast::f64_to_f32_bits;
/// assert_eq!(f64_to_f32_bits(0.1), 0x3dcc_cccd);
/// assert_eq!(f64_to_f32_bits(1e-39), 0x000a_e398); // a binary32 subnormal
/// assert_eq!(f64_to_f32_bits(-1e300), 0xff80_0000);
/// ```
pub const fn f64_to_f32_bits(x: f64) -> u32 {
    let bits = x.to_bits();
    let sign = ((bits >> 32) as u32) & 0x8000_0000;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let mant = bits & ((1u64 << 52) - 1);
    if exp == 0x7ff {
        return if mant == 0 {
            sign | 0x7f80_0000
        } else {
            sign | 0x7fc0_0000 | ((mant >> 29) as u32 & 0x003f_ffff)
        };
    }
    if exp == 0 {
        // Zero or a binary64 subnormal (below 2^-1022): zero in binary32, sign kept.
        return sign;
    }
    // x = m · 2^(exp − 1075) with the 53-bit significand m.
    let m = mant | 1u64 << 52;
    let biased = exp - 1023 + 127;
    // Bits of m below the binary32 significand (or below its subnormal grid).
    let shift: i32 = if biased >= 1 { 29 } else { 29 + 1 - biased };
    if shift > 54 {
        // Below half the smallest subnormal: zero.
        return sign;
    }
    let kept = m >> shift;
    let rest = m & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    let up = rest > half || (rest == half && kept & 1 == 1);
    // Normal: exponent field above the 23 significand bits (the implicit bit adds one to
    // it); subnormal: the field is 0 and `kept` is the significand. A carry out of the
    // significand moves into the exponent field, up to infinity (0x7f80_0000) at most.
    let field = if biased >= 1 {
        (biased as u64 - 1) << 23
    } else {
        0
    };
    let magnitude = field + kept + up as u64;
    if magnitude >= 0x7f80_0000 {
        return sign | 0x7f80_0000;
    }
    sign | magnitude as u32
}

/// BF16 → BF16: the identity on all 16 bits (SPEC §4).
#[inline(always)]
pub const fn bf16_to_bf16(bits: u16) -> u16 {
    bits
}

/// The BF16 bits of one element given its raw little-endian bits (zero-extended) in
/// `dtype`; `None` for `I8`, which is not a CastTess input.
pub const fn to_bf16(dtype: DType, bits: u32) -> Option<u16> {
    match dtype {
        DType::F32 => Some(f32_to_bf16(bits)),
        DType::F16 => Some(f16_to_bf16(bits as u16)),
        DType::BF16 => Some(bf16_to_bf16(bits as u16)),
        DType::I8 | DType::I16 | DType::I32 => None,
    }
}

/// Converts a contiguous run: `input` holds little-endian elements of `dtype`; `output`
/// receives BF16 values as little-endian byte pairs. Converts
/// `min(input.len() / dtype.size(), output.len() / 2)` elements and leaves the rest of
/// `output` untouched; integer input converts nothing.
pub fn run(dtype: DType, input: &[u8], output: &mut [u8]) {
    match dtype {
        DType::F32 => {
            for (i, o) in input.chunks_exact(4).zip(output.chunks_exact_mut(2)) {
                let bits = u32::from_le_bytes([i[0], i[1], i[2], i[3]]);
                o.copy_from_slice(&f32_to_bf16(bits).to_le_bytes());
            }
        }
        DType::F16 => {
            for (i, o) in input.chunks_exact(2).zip(output.chunks_exact_mut(2)) {
                let bits = u16::from_le_bytes([i[0], i[1]]);
                o.copy_from_slice(&f16_to_bf16(bits).to_le_bytes());
            }
        }
        DType::BF16 => {
            let n = input.len().min(output.len()) & !1;
            output[..n].copy_from_slice(&input[..n]);
        }
        DType::I8 | DType::I16 | DType::I32 => {}
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn fp32_literal_vectors() {
        let input = [
            0x7f80_0001u32,
            0xff80_0001,
            0x7f80_ffff,
            0x7fa0_0000,
            0x7fff_ffff,
            0xffff_ffff,
            0xffff_8000,
        ];
        let want = [0x7f80u16, 0xff80, 0x7f81, 0x7fa0, 0x8000, 0x0000, 0x0000];
        for (x, w) in input.iter().zip(want) {
            assert_eq!(f32_to_bf16(*x), w, "0x{x:08x}");
        }
        // Ties to even, both directions.
        assert_eq!(f32_to_bf16(0x3f80_8000), 0x3f80);
        assert_eq!(f32_to_bf16(0x3f81_8000), 0x3f82);
        assert_eq!(f32_to_bf16(0x3f80_8001), 0x3f81);
        // Largest finite rounds to infinity.
        assert_eq!(f32_to_bf16(0x7f7f_ffff), 0x7f80);
        // Subnormals are rounded, never flushed.
        assert_eq!(f32_to_bf16(0x0000_8000), 0x0000);
        assert_eq!(f32_to_bf16(0x0001_8000), 0x0002);
        assert_eq!(f32_to_bf16(0x8000_c000), 0x8001);
    }

    #[test]
    fn fp16_literal_vectors() {
        let cases: [(u16, u16); 13] = [
            (0xfc01, 0xffc0),
            (0x7c01, 0x7fc0),
            (0x7d00, 0x7fe0),
            (0x7fff, 0x7fff),
            (0xfe00, 0xffc0),
            (0xfdff, 0xffff),
            (0x0001, 0x3380),
            (0x8001, 0xb380),
            (0x03ff, 0x3880),
            (0x0201, 0x3800),
            (0x0202, 0x3800),
            (0x0203, 0x3801),
            (0x0003, 0x3440),
        ];
        for (x, w) in cases {
            assert_eq!(f16_to_bf16(x), w, "0x{x:04x}");
        }
        assert_eq!(f16_to_bf16(0x8000), 0x8000);
        assert_eq!(f16_to_bf16(0x7c00), 0x7f80);
        assert_eq!(f16_to_bf16(0xfc00), 0xff80);
        // 65504 rounds up to 65536.
        assert_eq!(f16_to_bf16(0x7bff), 0x4780);
    }

    #[test]
    fn fp16_widening_is_exact_for_every_finite_pattern() {
        for h in 0..=u16::MAX {
            if h & 0x7c00 == 0x7c00 {
                continue;
            }
            let f = f32::from_bits(f16_to_f32_bits(h));
            // Rebuild the FP16 value from its fields in f64 (exact).
            let e = ((h >> 10) & 0x1f) as i32;
            let m = (h & 0x3ff) as f64;
            let mag = if e == 0 {
                m * (2f64).powi(-24)
            } else {
                (1024.0 + m) * (2f64).powi(e - 25)
            };
            let v = if h & 0x8000 != 0 { -mag } else { mag };
            assert_eq!(f as f64, v, "0x{h:04x}");
            assert_eq!(f.is_sign_negative(), h & 0x8000 != 0);
        }
    }

    #[test]
    fn f64_to_f32_is_the_default_environment_cast() {
        // The oracle is the CPU's conversion (`as f32`) in the test's default environment.
        let check = |x: f64| {
            let want = x as f32;
            let got = f64_to_f32_bits(x);
            if want.is_nan() {
                assert!(f32::from_bits(got).is_nan(), "{x:e}: 0x{got:08x}");
                assert_eq!(got >> 31, (x.to_bits() >> 63) as u32, "{x:e} sign");
            } else {
                assert_eq!(got, want.to_bits(), "{x:e} (0x{:016x})", x.to_bits());
            }
        };
        // Around every binary32 boundary class: ties, subnormal grid, overflow threshold.
        for f in [
            0u32,
            1,
            2,
            3,
            0x007f_ffff,
            0x0080_0000,
            0x0080_0001,
            0x3f80_0000,
            0x3dcc_cccd,
            0x7f7f_fffe,
            0x7f7f_ffff,
        ] {
            let v = f32::from_bits(f) as f64;
            let next = f32::from_bits(f + 1) as f64;
            let tie = (v + next) / 2.0;
            for x in [
                v,
                next,
                tie,
                tie.next_down(),
                tie.next_up(),
                v.next_up(),
                next.next_down(),
            ] {
                check(x);
                check(-x);
            }
        }
        check(f32::from_bits(1) as f64 / 2.0); // exactly half the smallest subnormal: 0
        check((f32::from_bits(1) as f64 / 2.0).next_up()); // just above: the smallest
        check(f64::MAX);
        check(f64::MIN_POSITIVE);
        check(5e-324);
        check(f64::INFINITY);
        check(f64::NEG_INFINITY);
        check(f64::NAN);
        check(-f64::NAN);
        // Fixed-seed bit patterns across the whole binary64 range and near binary32's.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            check(f64::from_bits(s));
            // Exponents inside binary32's range and its subnormals.
            let e = 1023 - 160 + (s >> 56) % 300;
            check(f64::from_bits((s & 0x800f_ffff_ffff_ffff) | e << 52));
        }
    }

    #[test]
    fn run_converts_each_dtype() {
        let input = [0x3f80_8000u32.to_le_bytes(), 0x7fff_ffffu32.to_le_bytes()].concat();
        let mut out = [0xaau8; 6];
        run(DType::F32, &input, &mut out);
        assert_eq!(out, [0x80, 0x3f, 0x00, 0x80, 0xaa, 0xaa]);
        let mut out = [0u8; 4];
        run(DType::F16, &[0x01, 0x00, 0x00, 0x7d], &mut out);
        assert_eq!(out, [0x80, 0x33, 0xe0, 0x7f]);
        run(DType::BF16, &[1, 2, 3, 4], &mut out);
        assert_eq!(out, [1, 2, 3, 4]);
        assert_eq!(to_bf16(DType::I8, 0), None);
    }
}
