//! x86-64 Quant kernels: SSE4.1 (FP32, BF16), AVX2 + F16C and AVX-512 (F/BW/VL).
//!
//! Shared arithmetic of every level, per lane: `p = x · m` in binary32 (round-to-nearest,
//! gradual underflow: the environment is checked before execution); NaN lanes forced to 0;
//! `p` clamped above to 1024 (NaN-free now); converted to INT32 with the plan's rounding
//! mode (large negative values become `i32::MIN`); narrowed to INT16 with signed saturation,
//! the zero point added with INT16 saturation, narrowed to INT8 with saturation. Every step
//! preserves `saturate(round(p) + zp)` because |zp| ≤ 128 and the clamps lie far outside
//! [-384, 383].

pub(crate) mod avx2;
pub(crate) mod avx512;
pub(crate) mod sse41;

use simak_core::DType;
use simak_core::arith::quant::{Multiplier, RunFn};
use simak_core::ops::quant::Rounding;

use super::Route;

/// Upper clamp of the product before conversion to INT32.
pub(crate) const CLAMP_HI: f32 = 1024.0;

/// Reads MXCSR.
pub(crate) fn read_mxcsr() -> u32 {
    let mut value: u32 = 0;
    // SAFETY: `stmxcsr` stores the 32-bit MXCSR to the given address; it points to a live,
    // writable, aligned local `u32`. SSE is part of the x86-64 baseline.
    unsafe {
        core::arch::asm!(
            "stmxcsr [{ptr}]",
            ptr = in(reg) &mut value as *mut u32,
            options(nostack, preserves_flags)
        );
    }
    value
}

/// MXCSR default check: all six exception masks set (bits 7–12), RC = nearest (bits 13–14),
/// FTZ (bit 15) and DAZ (bit 6) clear. Status flags (bits 0–5) are ignored.
pub(crate) fn mxcsr_ok(control: u64) -> bool {
    control & 0xffc0 == 0x1f80
}

/// The multiplier as binary32 and the zero point as INT16, the kernels' constants.
#[inline(always)]
pub(crate) fn consts(m: &Multiplier, zero_point: i32) -> (f32, i16) {
    (f32::from_bits(m.bits()), zero_point as i16)
}

/// Elements an input format occupies, and its loader family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    F32,
    Bf16,
    F16,
}

impl Input {
    fn of(dtype: DType) -> Option<Input> {
        match dtype {
            DType::F32 => Some(Input::F32),
            DType::BF16 => Some(Input::Bf16),
            DType::F16 => Some(Input::F16),
            DType::I8 => None,
        }
    }
}

/// The route's run function when this CPU has its features.
pub(crate) fn run_fn(route: Route, dtype: DType, rounding: Rounding) -> Option<RunFn> {
    let input = Input::of(dtype)?;
    let f16c = std::is_x86_feature_detected!("f16c");
    match route {
        Route::Avx512 => {
            let ok = std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vl");
            ok.then(|| avx512::select(input, rounding))
        }
        Route::Avx2 => {
            // F16C is required for every input: the AVX2 kernels are compiled with it.
            let ok = std::is_x86_feature_detected!("avx2") && f16c;
            ok.then(|| avx2::select(input, rounding))
        }
        Route::Sse41 => {
            // F16C implies AVX (VEX encoding), so the SSE4.1 level takes FP32 and BF16 only;
            // FP16 on an SSE4.1-only CPU uses the exact path.
            let ok = std::is_x86_feature_detected!("sse4.1") && input != Input::F16;
            ok.then(|| sse41::select(input, rounding))
        }
        _ => None,
    }
}

/// Generates the safe run wrappers of one level: for each input × rounding pair, a `fn`
/// with the `RunFn` signature that runs the SIMD body over whole blocks and the exact
/// scalar path over the remainder.
macro_rules! level_select {
    ($body:ident, $block:expr, $stream_min:expr) => {
        use simak_core::arith::quant as exact;

        /// Runs of at least this many elements may use non-temporal stores.
        const STREAM_MIN: usize = $stream_min;

        fn wrapper<I: exact::InputFormat, M: exact::RoundingMode, const IN: u8, const MODE: u32>(
            m: &exact::Multiplier,
            zero_point: i32,
            input: &[u8],
            output: &mut [u8],
        ) {
            let n = output.len().min(input.len() / I::SIZE);
            let (mf, zp) = super::consts(m, zero_point);
            // Long runs stream their output: first bring the output to a 64-byte boundary
            // with the exact path, so that every vector store can be non-temporal.
            let stream = n >= STREAM_MIN;
            let head = if stream {
                (64 - output.as_ptr() as usize % 64) % 64
            } else {
                0
            };
            exact::run::<I, M>(m, zero_point, &input[..head * I::SIZE], &mut output[..head]);
            let (input, output) = (&input[head * I::SIZE..], &mut output[head..]);
            let n = n - head;
            let blocks = n / $block * $block;
            // Both calls: this wrapper is only handed out by `select`, which `run_fn` calls
            // after detecting the CPU features of this level (see the module doc); `input`
            // holds at least `blocks · I::SIZE` bytes and `output` at least `blocks` bytes,
            // which is all the body reads and writes.
            if stream {
                // SAFETY: features detected and buffer sizes as stated above.
                unsafe {
                    $body::<IN, MODE, true>(mf, zp, input.as_ptr(), output.as_mut_ptr(), blocks);
                }
            } else {
                // SAFETY: features detected and buffer sizes as stated above.
                unsafe {
                    $body::<IN, MODE, false>(mf, zp, input.as_ptr(), output.as_mut_ptr(), blocks);
                }
            }
            exact::run::<I, M>(
                m,
                zero_point,
                &input[blocks * I::SIZE..n * I::SIZE],
                &mut output[blocks..n],
            );
        }

        pub(crate) fn select(input: super::Input, rounding: exact::Rounding) -> exact::RunFn {
            macro_rules! by_mode {
                ($ty:ty, $in:literal) => {
                    match rounding {
                        exact::Rounding::TowardZero => wrapper::<$ty, exact::TowardZero, $in, 0>,
                        exact::Rounding::NearestEven => wrapper::<$ty, exact::NearestEven, $in, 1>,
                        exact::Rounding::TowardPositive => {
                            wrapper::<$ty, exact::TowardPositive, $in, 2>
                        }
                        exact::Rounding::TowardNegative => {
                            wrapper::<$ty, exact::TowardNegative, $in, 3>
                        }
                    }
                };
            }
            match input {
                super::Input::F32 => by_mode!(exact::F32, 0),
                super::Input::Bf16 => by_mode!(exact::Bf16, 1),
                super::Input::F16 => by_mode!(exact::F16, 2),
            }
        }
    };
}
pub(crate) use level_select;
