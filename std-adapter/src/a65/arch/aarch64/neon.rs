//! NEON Quant kernel: 16 elements per iteration.

use core::arch::aarch64::*;

use simak_core::arith::quant as exact;

/// Loads 16 elements of format `IN` as four binary32 vectors.
///
/// # Safety
///
/// `ptr` must be valid for reading 16 elements of format `IN` (0 = FP32, 1 = BF16,
/// 2 = FP16).
#[target_feature(enable = "neon")]
#[inline]
unsafe fn load16<const IN: u8>(ptr: *const u8) -> [float32x4_t; 4] {
    match IN {
        0 => {
            let p = ptr.cast::<f32>();
            // SAFETY: the caller guarantees 64 readable bytes; vld1q has no alignment
            // requirement beyond the element's, and the A65 execute checks input alignment.
            let v = unsafe { vld1q_f32_x4(p) };
            [v.0, v.1, v.2, v.3]
        }
        _ => {
            // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
            let v = unsafe { vld1q_u16_x2(ptr.cast::<u16>()) };
            if IN == 1 {
                [
                    widen_bf16(vget_low_u16(v.0)),
                    widen_bf16(vget_high_u16(v.0)),
                    widen_bf16(vget_low_u16(v.1)),
                    widen_bf16(vget_high_u16(v.1)),
                ]
            } else {
                [
                    widen_f16(vget_low_u16(v.0)),
                    widen_f16(vget_high_u16(v.0)),
                    widen_f16(vget_low_u16(v.1)),
                    widen_f16(vget_high_u16(v.1)),
                ]
            }
        }
    }
}

#[target_feature(enable = "neon")]
#[inline]
fn widen_bf16(h: uint16x4_t) -> float32x4_t {
    vreinterpretq_f32_u32(vshll_n_u16::<16>(h))
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

#[target_feature(enable = "neon")]
#[inline]
fn convert<const MODE: u32>(x: float32x4_t, m: float32x4_t) -> int32x4_t {
    let p = vmulq_f32(x, m);
    match MODE {
        0 => vcvtq_s32_f32(p),
        1 => vcvtnq_s32_f32(p),
        2 => vcvtpq_s32_f32(p),
        _ => vcvtmq_s32_f32(p),
    }
}

/// Quantizes `n` elements (a multiple of 16).
///
/// # Safety
///
/// `input` must be valid for reading `n` elements of format `IN` and `output` for writing
/// `n` bytes.
#[target_feature(enable = "neon")]
unsafe fn body<const IN: u8, const MODE: u32>(
    m: f32,
    zero_point: i16,
    input: *const u8,
    output: *mut u8,
    n: usize,
) {
    let size = if IN == 0 { 4 } else { 2 };
    let mv = vdupq_n_f32(m);
    let zp = vdupq_n_s16(zero_point);
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 ≤ n, so elements i..i + 16 are readable.
        let [a, b, c, d] = unsafe { load16::<IN>(input.wrapping_add(i * size)) };
        let ab = vqaddq_s16(
            vcombine_s16(
                vqmovn_s32(convert::<MODE>(a, mv)),
                vqmovn_s32(convert::<MODE>(b, mv)),
            ),
            zp,
        );
        let cd = vqaddq_s16(
            vcombine_s16(
                vqmovn_s32(convert::<MODE>(c, mv)),
                vqmovn_s32(convert::<MODE>(d, mv)),
            ),
            zp,
        );
        let bytes = vcombine_s8(vqmovn_s16(ab), vqmovn_s16(cd));
        // SAFETY: i + 16 ≤ n, so the 16-byte store stays inside the `n` writable bytes.
        unsafe { vst1q_s8(output.wrapping_add(i).cast::<i8>(), bytes) };
        i += 16;
    }
}

fn wrapper<I: exact::InputFormat, M: exact::RoundingMode, const IN: u8, const MODE: u32>(
    m: &exact::Multiplier,
    zero_point: i32,
    input: &[u8],
    output: &mut [u8],
) {
    let n = output.len().min(input.len() / I::SIZE);
    let blocks = n / 16 * 16;
    // SAFETY: NEON is part of the AArch64 baseline; `input` holds at least
    // `blocks · I::SIZE` bytes and `output` at least `blocks` bytes.
    unsafe {
        body::<IN, MODE>(
            f32::from_bits(m.bits()),
            zero_point as i16,
            input.as_ptr(),
            output.as_mut_ptr(),
            blocks,
        );
    }
    exact::run::<I, M>(
        m,
        zero_point,
        &input[blocks * I::SIZE..n * I::SIZE],
        &mut output[blocks..n],
    );
}

/// The NEON run function for input format `input` (0 = FP32, 1 = BF16, 2 = FP16).
pub(crate) fn select(input: u8, rounding: exact::Rounding) -> exact::RunFn {
    macro_rules! by_mode {
        ($ty:ty, $in:literal) => {
            match rounding {
                exact::Rounding::TowardZero => wrapper::<$ty, exact::TowardZero, $in, 0>,
                exact::Rounding::NearestEven => wrapper::<$ty, exact::NearestEven, $in, 1>,
                exact::Rounding::TowardPositive => wrapper::<$ty, exact::TowardPositive, $in, 2>,
                exact::Rounding::TowardNegative => wrapper::<$ty, exact::TowardNegative, $in, 3>,
            }
        };
    }
    match input {
        0 => by_mode!(exact::F32, 0),
        1 => by_mode!(exact::Bf16, 1),
        _ => by_mode!(exact::F16, 2),
    }
}
