//! QuantTess: FP32 / BF16 / FP16 → INT8 in the `MlaTiled` layout (SPEC §3, §5; A65 only).
//!
//! The numerics are exactly Quant's (SPEC §3); the output is one INT8 byte plane per pixel,
//! tiled as SPEC §5 describes. Padding bytes are 0x00 whatever the zero point.
//!
//! ```
//! use simak_core::layout::{Channels, MlaTiled};
//! use simak_core::ops::quant::Params;
//! use simak_core::ops::quanttess::{check_inference, Request, TiledTensorSpec};
//! use simak_core::{DType, TensorSpec};
//!
//! let layout = MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 4, 3], Channels::PadTo16);
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([5, 3], DType::BF16),
//!     output: TiledTensorSpec::new([5, 3], DType::I8, layout),
//!     params: Params::new(0.5).with_zero_point(-3),
//! })?;
//! // Tiles of 4 and 1 pixels, 16 stored channels, one plane: 64 + 16 bytes.
//! assert_eq!(plan.output().capacity(), 80);
//! # Ok::<(), simak_core::AdmissionError>(())
//! ```

use crate::arith::quant::{Kernels, Multiplier, Rounding};
use crate::dtype::DType;
use crate::error::AdmissionError;
use crate::layout::TiledView;
use crate::ops::casttess::admit_ports;
pub use crate::ops::casttess::{TiledSpec, TiledTensorSpec};
use crate::ops::quant::{CheckedParams, Params};
use crate::tensor::{DynSpec, TensorSpec, View};

/// The output dtype of QuantTess.
pub const OUTPUT_DTYPE: DType = DType::I8;

/// An unchecked QuantTess request over a rank-`R` input (1 ≤ R ≤ 6 is checked by
/// [`check_inference`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<const R: usize> {
    /// Input port: `F32`, `BF16` or `F16`, contiguous or strided (byte strides).
    pub input: TensorSpec<R>,
    /// Output port: the input's logical shape, dtype I8 ([`OUTPUT_DTYPE`]), an `MlaTiled`
    /// layout. Admission rejects another dtype or shape.
    pub output: TiledTensorSpec<R>,
    /// Quant parameters (SPEC §3).
    pub params: Params,
}

/// A checked QuantTess plan: owning, immutable, backend-neutral (SPEC §6). `Copy`, `Send`
/// and `Sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    input: View,
    output: TiledView,
    quant: CheckedParams,
}

impl Plan {
    input_accessors!();

    /// The admitted output layout (capacity in bytes, one byte plane per element).
    pub const fn output(&self) -> &TiledView {
        &self.output
    }

    /// The output dtype, I8.
    pub const fn output_dtype(&self) -> DType {
        OUTPUT_DTYPE
    }

    quant_accessors!();
}

/// Admits a QuantTess request (SPEC §2, §3, §5). Reads no tensor data.
///
/// # Errors
///
/// - [`AdmissionError::Rank`] for rank 0;
/// - [`AdmissionError::DType`] on the input for `I8`, on the output for a dtype other
///   than I8;
/// - [`AdmissionError::ShapeMismatch`] when the output extents are not the input's;
/// - [`AdmissionError::MultiplierNotFinite`], [`AdmissionError::MultiplierNotPositive`],
///   [`AdmissionError::ZeroPointOutOfRange`];
/// - the layout errors of [`TensorSpec::admit`] on the input;
/// - the layout errors of [`MlaTiled::admit`](crate::layout::MlaTiled::admit) on the output.
pub fn check_inference<const R: usize>(request: &Request<R>) -> Result<Plan, AdmissionError> {
    check_inference_dyn(&DynRequest {
        input: request.input.as_dyn(),
        output: request.output.as_dyn(),
        params: request.params,
    })
}

/// An unchecked QuantTess request whose rank is known only at run time, for file readers
/// and language bindings. Admission is the same as for [`Request`] (which goes through
/// it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynRequest<'a> {
    /// Input port: `F32`, `BF16` or `F16`, contiguous or strided (strides in bytes).
    pub input: DynSpec<'a>,
    /// Output port: `I8` in the `MlaTiled` layout.
    pub output: TiledSpec<'a>,
    /// Quant parameters (SPEC §3).
    pub params: Params,
}

/// Admits a QuantTess request of run-time rank: as [`check_inference`], plus the output
/// spec's own rules.
///
/// # Errors
///
/// As [`check_inference`]; [`AdmissionError::DType`] on the output port for a dtype other
/// than I8; [`AdmissionError::ShapeMismatch`] when the output extents are not the input's;
/// [`AdmissionError::StridesRank`].
pub fn check_inference_dyn(request: &DynRequest<'_>) -> Result<Plan, AdmissionError> {
    let (input, output) = admit_ports(&request.input, &request.output, OUTPUT_DTYPE)?;
    let quant = request.params.check()?;
    Ok(Plan {
        input,
        output,
        quant,
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::error::Port;
    use crate::layout::{Channels, MlaTiled};

    #[test]
    fn admits_and_rejects() {
        let layout = MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 3],
            Channels::Compact,
        );
        let mut r = Request {
            input: TensorSpec::contiguous([2, 3], DType::F32),
            output: TiledTensorSpec::new([2, 3], DType::I8, layout),
            params: Params::new(2.0).with_zero_point(5),
        };
        let plan = check_inference(&r).unwrap();
        // One tile: 2 pixels × 3 bytes = 6, padded to 16.
        assert_eq!(plan.output().capacity(), 16);
        assert_eq!(plan.params(), Params::new(2.0).with_zero_point(5));
        assert_eq!(plan.kernels().dtype, DType::F32);
        r.params.zero_point = -129;
        assert_eq!(
            check_inference(&r),
            Err(AdmissionError::ZeroPointOutOfRange { zero_point: -129 })
        );
        r.params = Params::new(0.0);
        assert_eq!(
            check_inference(&r),
            Err(AdmissionError::MultiplierNotPositive { bits: 0 })
        );
    }

    #[test]
    fn the_typed_request_names_its_output_and_admission_checks_it() {
        let layout = MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 3],
            Channels::Compact,
        );
        let good = Request {
            input: TensorSpec::contiguous([2, 3], DType::F32),
            output: TiledTensorSpec::new([2, 3], DType::I8, layout),
            params: Params::new(2.0),
        };
        assert!(check_inference(&good).is_ok());
        // Another dtype (CastTess's BF16 included) is refused on the output port.
        for dtype in [DType::BF16, DType::F16, DType::F32] {
            let mut r = good;
            r.output.dtype = dtype;
            assert_eq!(
                check_inference(&r),
                Err(AdmissionError::DType {
                    port: Port::Output,
                    found: dtype
                })
            );
        }
        // Another shape: the same error as the run-time-rank request's.
        let mut r = good;
        r.output.extents = [3, 2];
        let e = check_inference(&r).unwrap_err();
        assert!(matches!(e, AdmissionError::ShapeMismatch { .. }), "{e:?}");
        assert_eq!(
            Err(e),
            check_inference_dyn(&DynRequest {
                input: DynSpec::contiguous(&[2, 3], DType::F32),
                output: TiledSpec {
                    extents: &[3, 2],
                    dtype: DType::I8,
                    layout
                },
                params: Params::new(2.0),
            })
        );
    }
}
