//! The arithmetic of Preproc (SPEC §13): OpenCV's BT.601 fixed-point YUV → RGB and the
//! per-channel normalization `n = f32(f32(f32(p) / divisor) − mean) / std`, each step
//! rounded once to binary32, nearest-even, with gradual underflow.
//!
//! Integer code only: the results do not depend on the host FP environment, so the A65
//! tables, the EV74 firmware and any reference agree bit for bit.

use crate::arith::dequant::{div_f32_bits, round_f32, split};

/// OpenCV's BT.601 limited-range YUV → RGB in fixed point (SPEC §13; the formula of
/// `cv2.cvtColor(..., COLOR_YUV2RGB_NV12 / _I420)`): returns `[R, G, B]`.
///
/// `y = max(0, Y − 16)·1220542`; `R = sat_u8((y + 2^19 + 1673527·(V − 128)) >> 20)`;
/// `G = sat_u8((y + 2^19 − 852492·(V − 128) − 409993·(U − 128)) >> 20)`;
/// `B = sat_u8((y + 2^19 + 2116026·(U − 128)) >> 20)`, `>>` arithmetic.
///
/// ```
/// use simak_core::arith::preproc::yuv_to_rgb;
/// assert_eq!(yuv_to_rgb(16, 128, 128), [0, 0, 0]);
/// assert_eq!(yuv_to_rgb(235, 128, 128), [255, 255, 255]);
/// ```
#[inline(always)]
pub const fn yuv_to_rgb(y: u8, u: u8, v: u8) -> [u8; 3] {
    yuv_with_chroma(y, chroma_terms(u, v))
}

/// The chroma terms of [`yuv_to_rgb`] for one (U, V) pair, shared by the two to four
/// pixels that use it: `[1673527·(V − 128), −852492·(V − 128) − 409993·(U − 128),
/// 2116026·(U − 128)]`.
#[inline(always)]
pub const fn chroma_terms(u: u8, v: u8) -> [i32; 3] {
    let (u, v) = (u as i32 - 128, v as i32 - 128);
    [1_673_527 * v, -852_492 * v - 409_993 * u, 2_116_026 * u]
}

/// [`yuv_to_rgb`] of luma `y` with the [`chroma_terms`] of its (U, V) pair.
#[inline(always)]
pub const fn yuv_with_chroma(y: u8, chroma: [i32; 3]) -> [u8; 3] {
    // max(0, Y − 16), without a branch.
    let luma = y as i32 - 16;
    let base = (luma & !(luma >> 31)) * 1_220_542 + (1 << 19);
    [
        sat_u8((base + chroma[0]) >> 20),
        sat_u8((base + chroma[1]) >> 20),
        sat_u8((base + chroma[2]) >> 20),
    ]
}

/// Saturates to [0, 255], without branches (camera data saturates unpredictably): a
/// negative `x` is masked to 0, then one above 255 is ORed to all ones.
#[inline(always)]
const fn sat_u8(x: i32) -> u8 {
    let x = x & !(x >> 31);
    (x | ((255 - x) >> 31)) as u8
}

/// The normalization of SPEC §13 for one 8-bit value `p` of one output channel, as
/// binary32 bits: `n = f32(f32(f32(p) / divisor) − mean) / std`, each step rounded once
/// to binary32, nearest-even, subnormal results kept, overflow to ±∞.
///
/// `divisor_bits` is a finite binary32 > 0, `mean_bits` finite, `std_bits` finite and
/// nonzero (Preproc admission guarantees it); outside that domain the result is
/// unspecified. Signed zeros follow IEEE 754 (`0 / −s` is −0).
///
/// ```
/// use simak_core::arith::preproc::normalize;
/// let n = |p, d: f32, m: f32, s: f32| f32::from_bits(normalize(p, d.to_bits(), m.to_bits(), s.to_bits()));
/// assert_eq!(n(51, 255.0, 0.0, 1.0), 51.0f32 / 255.0);
/// assert_eq!(n(200, 1.0, 0.0, 1.0), 200.0);
/// assert_eq!(n(0, 255.0, 0.0, -1.0).to_bits(), 0x8000_0000);
/// ```
pub const fn normalize(p: u8, divisor_bits: u32, mean_bits: u32, std_bits: u32) -> u32 {
    let scaled = div_f32_bits(u8_to_f32_bits(p), divisor_bits);
    let centred = sub_f32_bits(scaled, mean_bits);
    let sign = (centred ^ std_bits) & 0x8000_0000;
    let magnitude = centred & 0x7fff_ffff;
    if magnitude == 0 {
        sign
    } else if magnitude >= 0x7f80_0000 {
        sign | 0x7f80_0000
    } else {
        div_f32_bits(magnitude, std_bits & 0x7fff_ffff) | sign
    }
}

/// The binary32 bits of `p` (exact).
const fn u8_to_f32_bits(p: u8) -> u32 {
    if p == 0 {
        return 0;
    }
    let len = 8 - p.leading_zeros();
    // p = 1.f × 2^(len − 1): the mantissa is p shifted to 24 bits without its top bit.
    let mantissa = ((p as u32) << (24 - len)) & 0x007f_ffff;
    ((126 + len) << 23) | mantissa
}

/// `a − b` rounded once to binary32, nearest-even, gradual underflow, overflow to ±∞, for
/// binary32 bits `a` (finite or infinite) and `b` (finite). An exact zero difference is
/// +0 (−0 only for `−0 − +0`), as IEEE 754 in round-to-nearest.
pub const fn sub_f32_bits(a: u32, b: u32) -> u32 {
    if a & 0x7fff_ffff >= 0x7f80_0000 {
        return a;
    }
    let (an, (am, ae)) = (a & 0x8000_0000 != 0, split(a));
    let (bn, (bm, be)) = (b & 0x8000_0000 != 0, split(b));
    let bn = !bn; // a − b = a + (−b)
    match (am == 0, bm == 0) {
        (true, true) => return if an && bn { 0x8000_0000 } else { 0 },
        (false, true) => return a,
        (true, false) => return b ^ 0x8000_0000,
        (false, false) => {}
    }
    // When the exponents differ by more than 60, the larger operand is normal and the
    // smaller is below a quarter of its smallest neighbouring gap: the result is the larger.
    if ae - be > 60 {
        return a;
    }
    if be - ae > 60 {
        return b ^ 0x8000_0000;
    }
    let e = if ae < be { ae } else { be };
    let sa = ((am as i128) << (ae - e)) * if an { -1 } else { 1 };
    let sb = ((bm as i128) << (be - e)) * if bn { -1 } else { 1 };
    let sum = sa + sb;
    if sum == 0 {
        return 0;
    }
    round_f32(sum < 0, sum.unsigned_abs(), e, false)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn u8_values_are_exact() {
        for p in 0..=255u8 {
            assert_eq!(u8_to_f32_bits(p), (p as f32).to_bits());
        }
    }

    #[test]
    fn subtraction_matches_the_hardware_on_edge_cases() {
        let values = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1.0e-45,
            -1.0e-45,
            1.1754942e-38,
            1.1754944e-38,
            3.4028235e38,
            -3.4028235e38,
            0.485,
            0.229,
            123.675,
            1.0e-30,
            1.0e30,
            16777216.0,
            16777217.0,
            0.003921569,
            f32::INFINITY,
        ];
        for &a in &values {
            for &b in &values[..values.len() - 1] {
                let want = a - b;
                assert_eq!(
                    sub_f32_bits(a.to_bits(), b.to_bits()),
                    want.to_bits(),
                    "{a:e} - {b:e}"
                );
            }
        }
    }
}
