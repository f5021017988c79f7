//! AArch64 CastTess kernels: NEON (part of the AArch64 baseline, so always available).

mod neon;

use simak_core::DType;

use super::{ConvertFn, SplitFn};

/// The NEON kernels.
pub(super) fn kernels(dtype: DType) -> (ConvertFn, SplitFn) {
    (neon::convert_fn(dtype), neon::split)
}
