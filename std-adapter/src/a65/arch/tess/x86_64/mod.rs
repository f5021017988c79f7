//! x86-64 CastTess kernels: AVX2 and AVX-512 (F/BW) conversions, SSSE3-lane split inside
//! AVX2 functions.
//!
//! Both conversions are integer code; FP16 subnormals are normalized with compare / shift /
//! blend steps, never through FP arithmetic or F16C (SPEC §4).

mod avx2;
mod avx512;
mod avx512vbmi;

use simak_core::DType;

use super::{BandFn, ConvertFn, RowsFn, SplitFn, TessLevel};

/// The kernels of `level` when this CPU has its features: conversion, split and the
/// optional fused rows and bands.
pub(super) fn kernels(
    level: TessLevel,
    dtype: DType,
) -> Option<(ConvertFn, SplitFn, Option<RowsFn>, Option<BandFn>)> {
    let has_avx2 = std::is_x86_feature_detected!("avx2");
    let has_avx512 = has_avx2
        && std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw");
    match level {
        TessLevel::Avx2 if has_avx2 => Some((avx2::convert_fn(dtype), avx2::split, None, None)),
        TessLevel::Avx512 if has_avx512 => {
            Some((avx512::convert_fn(dtype), avx2::split, None, None))
        }
        TessLevel::Avx512Vbmi if has_avx512 && std::is_x86_feature_detected!("avx512vbmi") => {
            Some((
                avx512::convert_fn(dtype),
                avx2::split,
                Some(avx512vbmi::rows_fn(dtype)),
                Some(avx512vbmi::band_fn(dtype)),
            ))
        }
        _ => None,
    }
}
