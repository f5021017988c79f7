//! NEON lanes: the Quant loop (16 elements per step), the BF16 conversions, the plane split
//! (`UZP1`/`UZP2` deinterleave, `TBL` shuffle) and the band kernel. NEON is part of the
//! AArch64 baseline.

use core::arch::aarch64::*;

use simak_core::DType;
use simak_core::arith::quant::{InputFormat, RoundingMode};
use simak_core::ops::quant::Rounding;

use super::super::isa::{Neon, lanes};
use super::super::quant::QuantLanes;

lanes! {
    impl QuantLanes for Neon with "neon" {
        type F = float32x4_t;
        type I = int32x4_t;
        type Zp = int16x8_t;
        type Bytes = int8x16_t;
        const LANES: usize = 4;

        fn splat(self, m: f32) -> float32x4_t {
            vdupq_n_f32(m)
        }

        fn zero_point(self, zp: i16) -> int16x8_t {
            vdupq_n_s16(zp)
        }

        fn convert<M: RoundingMode>(self, x: float32x4_t, m: float32x4_t) -> int32x4_t {
            // FCVT*S: NaN → 0, out-of-range values saturate.
            let p = vmulq_f32(x, m);
            match M::MODE {
                Rounding::TowardZero => vcvtq_s32_f32(p),
                Rounding::NearestEven => vcvtnq_s32_f32(p),
                Rounding::TowardPositive => vcvtpq_s32_f32(p),
                Rounding::TowardNegative => vcvtmq_s32_f32(p),
            }
        }

        fn narrow(self, v: [int32x4_t; 4], zp: int16x8_t) -> int8x16_t {
            let ab = vcombine_s16(vqmovn_s32(v[0]), vqmovn_s32(v[1]));
            let cd = vcombine_s16(vqmovn_s32(v[2]), vqmovn_s32(v[3]));
            vcombine_s8(vqmovn_s16(vqaddq_s16(ab, zp)), vqmovn_s16(vqaddq_s16(cd, zp)))
        }

        unsafe fn load<I: InputFormat>(self, ptr: *const u8) -> float32x4_t {
            if matches!(I::DTYPE, DType::F32) {
                // SAFETY: the caller guarantees 16 readable bytes at `ptr`; the A65 execute
                // checks the input's element alignment.
                return unsafe { vld1q_f32(ptr.cast()) };
            }
            // SAFETY: the caller guarantees 8 readable bytes at `ptr`.
            let h = unsafe { vld1_u16(ptr.cast()) };
            match I::DTYPE {
                DType::F16 => widen_f16(h),
                _ => vreinterpretq_f32_u32(vshll_n_u16::<16>(h)),
            }
        }

        unsafe fn store(self, ptr: *mut u8, bytes: int8x16_t, _stream: bool) {
            // SAFETY: the caller guarantees 16 writable bytes at `ptr`.
            unsafe { vst1q_s8(ptr.cast(), bytes) }
        }
    }
}

/// Exact FP16 → FP32: magnitude bits shifted into place and scaled by 2^112 (exact for
/// normals and subnormals), infinities and NaNs rebuilt with integer selects, sign ORed in.
#[target_feature(enable = "neon")]
#[inline]
fn widen_f16(h: uint16x4_t) -> float32x4_t {
    let w = vmovl_u16(h);
    let sign = vshlq_n_u32::<16>(vandq_u32(w, vdupq_n_u32(0x8000)));
    let magnitude = vandq_u32(w, vdupq_n_u32(0x7fff));
    let shifted = vshlq_n_u32::<13>(magnitude);
    let scaled = vmulq_f32(
        vreinterpretq_f32_u32(shifted),
        vdupq_n_f32(f32::from_bits(0x7780_0000)),
    );
    let special = vcgeq_u32(magnitude, vdupq_n_u32(0x7c00));
    let nonfinite = vorrq_u32(shifted, vdupq_n_u32(0x7f80_0000));
    let bits = vbslq_u32(special, nonfinite, vreinterpretq_u32_f32(scaled));
    vreinterpretq_f32_u32(vorrq_u32(bits, sign))
}
