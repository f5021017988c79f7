//! NEON CastTess kernels: FP32 and FP16 → BF16 in integer lanes (16 elements per step) and
//! the plane split (`UZP1`/`UZP2` deinterleave, `TBL` shuffle). NEON is part of the AArch64
//! baseline, so the `#[target_feature]` calls below are always sound.

use core::arch::aarch64::*;

use simak_core::DType;

use super::super::ConvertFn;
use super::super::generic::{self, Lanes};

/// 16 NEON bytes.
#[derive(Clone, Copy)]
pub(super) struct Neon(uint8x16_t);

impl Lanes for Neon {
    #[inline(always)]
    unsafe fn load(ptr: *const u8) -> Self {
        // SAFETY: the caller guarantees 16 readable bytes at `ptr`; byte loads need no
        // alignment.
        Neon(unsafe { vld1q_u8(ptr) })
    }

    #[inline(always)]
    unsafe fn store(self, ptr: *mut u8) {
        // SAFETY: the caller guarantees 16 writable bytes at `ptr`.
        unsafe { vst1q_u8(ptr, self.0) }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: NEON is part of the AArch64 baseline.
        Neon(unsafe { vdupq_n_u8(0) })
    }

    #[inline(always)]
    unsafe fn shuffle(self, pattern: Self) -> Self {
        // SAFETY: NEON is part of the AArch64 baseline; TBL gives 0 for indices ≥ 16.
        Neon(unsafe { vqtbl1q_u8(self.0, pattern.0) })
    }

    #[inline(always)]
    unsafe fn split16(a: Self, b: Self, k: usize) -> (Self, Self) {
        // SAFETY: NEON is part of the AArch64 baseline (the caller enabled it).
        unsafe { split16_neon(a.0, b.0, k) }
    }
}

#[target_feature(enable = "neon")]
#[inline]
fn split16_neon(a: uint8x16_t, b: uint8x16_t, k: usize) -> (Neon, Neon) {
    let kk = vdupq_n_u16(k.min(16) as u16);
    let idx_a = vcombine_u16(
        vcreate_u16(0x0003_0002_0001_0000),
        vcreate_u16(0x0007_0006_0005_0004),
    );
    let idx_b = vaddq_u16(idx_a, vdupq_n_u16(8));
    let a = vandq_u16(vreinterpretq_u16_u8(a), vcltq_u16(idx_a, kk));
    let b = vandq_u16(vreinterpretq_u16_u8(b), vcltq_u16(idx_b, kk));
    let (a, b) = (vreinterpretq_u8_u16(a), vreinterpretq_u8_u16(b));
    (Neon(vuzp1q_u8(a, b)), Neon(vuzp2q_u8(a, b)))
}

/// The split of [`super::super::SplitFn`] in NEON lanes.
pub(super) fn split(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    // SAFETY: NEON is part of the AArch64 baseline.
    unsafe { split_neon(bf, tc, sc, out) }
}

/// # Safety
///
/// NEON must be available (always on AArch64).
#[target_feature(enable = "neon")]
unsafe fn split_neon(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    // SAFETY: this function is compiled with NEON, the feature of `Neon`.
    unsafe { generic::split::<Neon>(bf, tc, sc, out) }
}

/// This level's conversion of a float `dtype` (BF16 is a copy).
pub(super) fn convert_fn(dtype: DType) -> ConvertFn {
    super::super::convert_by_dtype(dtype, convert_f32, convert_f16)
}

fn convert_f32(input: &[u8], output: &mut [u8]) {
    // SAFETY: NEON is part of the AArch64 baseline.
    unsafe { super::super::convert_blocks(DType::F32, 16, f32_body, input, output) }
}

fn convert_f16(input: &[u8], output: &mut [u8]) {
    // SAFETY: as in `convert_f32`.
    unsafe { super::super::convert_blocks(DType::F16, 16, f16_body, input, output) }
}

/// `(x + 0x7fff + ((x >> 16) & 1)) >> 16` per 32-bit lane, narrowed to 16 bits.
#[target_feature(enable = "neon")]
#[inline]
fn round_f32(x: uint32x4_t) -> uint16x4_t {
    let lsb = vandq_u32(vshrq_n_u32::<16>(x), vdupq_n_u32(1));
    vshrn_n_u32::<16>(vaddq_u32(x, vaddq_u32(lsb, vdupq_n_u32(0x7fff))))
}

/// Converts `n` FP32 elements (a multiple of 16).
///
/// # Safety
///
/// `input` valid for reading `4n` bytes, `output` for writing `2n` bytes.
#[target_feature(enable = "neon")]
unsafe fn f32_body(input: *const u8, output: *mut u8, n: usize) {
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 ≤ n, so bytes 4i..4i + 64 are readable; byte loads need no
        // alignment.
        let v = unsafe { vld1q_u8_x4(input.wrapping_add(4 * i)) };
        let lo = vcombine_u16(
            round_f32(vreinterpretq_u32_u8(v.0)),
            round_f32(vreinterpretq_u32_u8(v.1)),
        );
        let hi = vcombine_u16(
            round_f32(vreinterpretq_u32_u8(v.2)),
            round_f32(vreinterpretq_u32_u8(v.3)),
        );
        let r = uint8x16x2_t(vreinterpretq_u8_u16(lo), vreinterpretq_u8_u16(hi));
        // SAFETY: i + 16 ≤ n, so bytes 2i..2i + 32 of the output are writable.
        unsafe { vst1q_u8_x2(output.wrapping_add(2 * i), r) };
        i += 16;
    }
}

/// FP16 → BF16 per 16-bit lane; the algorithm of the x86-64 levels.
#[target_feature(enable = "neon")]
#[inline]
fn f16_lanes(h: uint16x8_t) -> uint16x8_t {
    let t = vandq_u16(h, vdupq_n_u16(0x7fff));
    let sign = vandq_u16(h, vdupq_n_u16(0x8000));
    let below_normal = vcltq_u16(t, vdupq_n_u16(0x400));
    let (m, s) = if vmaxvq_u16(below_normal) == 0 {
        (t, vdupq_n_u16(0))
    } else {
        let mut m = t;
        let mut s = vdupq_n_u16(0);
        macro_rules! step {
            ($k:literal) => {
                let lt = vcltq_u16(m, vdupq_n_u16(1 << (11 - $k)));
                m = vbslq_u16(lt, vshlq_n_u16::<$k>(m), m);
                s = vaddq_u16(s, vandq_u16(lt, vdupq_n_u16($k)));
            };
        }
        step!(8);
        step!(4);
        step!(2);
        step!(1);
        (m, s)
    };
    let tn = vaddq_u16(m, vshlq_n_u16::<10>(vsubq_u16(vdupq_n_u16(10), s)));
    let lsb = vandq_u16(vshrq_n_u16::<3>(tn), vdupq_n_u16(1));
    let rounded = vshrq_n_u16::<3>(vaddq_u16(vaddq_u16(tn, vdupq_n_u16(3)), lsb));
    let r = vaddq_u16(rounded, vdupq_n_u16(102 << 7));
    let r = vbicq_u16(r, vceqq_u16(t, vdupq_n_u16(0)));
    let special = vcgtq_u16(t, vdupq_n_u16(0x7bff));
    let nan = vcgtq_u16(t, vdupq_n_u16(0x7c00));
    let payload = vshrq_n_u16::<3>(vandq_u16(t, vdupq_n_u16(0x3ff)));
    let sv = vorrq_u16(
        vdupq_n_u16(0x7f80),
        vorrq_u16(vandq_u16(nan, vdupq_n_u16(0x40)), payload),
    );
    vorrq_u16(vbslq_u16(special, sv, r), sign)
}

/// Converts `n` FP16 elements (a multiple of 16).
///
/// # Safety
///
/// `input` valid for reading `2n` bytes, `output` for writing `2n` bytes.
#[target_feature(enable = "neon")]
unsafe fn f16_body(input: *const u8, output: *mut u8, n: usize) {
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 ≤ n, so bytes 2i..2i + 32 are readable; byte loads need no
        // alignment.
        let v = unsafe { vld1q_u8_x2(input.wrapping_add(2 * i)) };
        let r = uint8x16x2_t(
            vreinterpretq_u8_u16(f16_lanes(vreinterpretq_u16_u8(v.0))),
            vreinterpretq_u8_u16(f16_lanes(vreinterpretq_u16_u8(v.1))),
        );
        // SAFETY: i + 16 ≤ n, so bytes 2i..2i + 32 of the output are writable.
        unsafe { vst1q_u8_x2(output.wrapping_add(2 * i), r) };
        i += 16;
    }
}
