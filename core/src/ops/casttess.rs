//! CastTess: FP32 / FP16 / BF16 → BF16 in the `MlaTiled` layout (SPEC §4, §5).
//!
//! The request names the input port and the output port (the input's shape, dtype BF16,
//! an `MlaTiled` layout), as the seeds' `TensorSpec{shape, BF16, tiled}` does; the output
//! is stored as two byte planes per pixel. There are no numerical parameters.
//!
//! ```
//! use simak_core::layout::{Channels, MlaTiled};
//! use simak_core::ops::casttess::{check_inference, Request, TiledTensorSpec};
//! use simak_core::{DType, TensorSpec};
//!
//! // SPEC §5 example: shape [W=2, C=3], axes (-, -, 0, 1), tile (1, 1, 2, 3), Compact.
//! let layout = MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact);
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     output: TiledTensorSpec::new([2, 3], DType::BF16, layout),
//! })?;
//! assert_eq!(plan.input().span(), 24);
//! assert_eq!(plan.output().capacity(), 16);
//! # Ok::<(), simak_core::AdmissionError>(())
//! ```
//!
//! Rank 0 is rejected:
//!
//! ```
//! use simak_core::layout::MlaTiled;
//! use simak_core::ops::casttess::{check_inference, Request, TiledTensorSpec};
//! use simak_core::{AdmissionError, DType, TensorSpec};
//!
//! let request = Request {
//!     input: TensorSpec::<0>::contiguous([], DType::F32),
//!     output: TiledTensorSpec::new([], DType::BF16, MlaTiled::new([None; 4], [1; 4], Default::default())),
//! };
//! assert_eq!(
//!     check_inference(&request),
//!     Err(AdmissionError::Rank { rank: 0, min: 1, max: 6 })
//! );
//! ```

use crate::dtype::DType;
use crate::error::{AdmissionError, Port};
use crate::layout::{MlaTiled, TiledView};
use crate::tensor::{DynSpec, MAX_RANK, TensorSpec, View};

/// The output dtype of CastTess.
pub const OUTPUT_DTYPE: DType = DType::BF16;

/// An unchecked CastTess request over a rank-`R` input (1 ≤ R ≤ 6 is checked by
/// [`check_inference`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<const R: usize> {
    /// Input port: `F32`, `F16` or `BF16`, contiguous or strided (byte strides).
    pub input: TensorSpec<R>,
    /// Output port: the input's logical shape, dtype BF16 ([`OUTPUT_DTYPE`]), an
    /// `MlaTiled` layout. Admission rejects another dtype or shape.
    pub output: TiledTensorSpec<R>,
}

/// A rank-`R` tiled output port as a request names it (SPEC §5): logical extents in
/// elements, dtype and `MlaTiled` layout. Used by the typed CastTess and QuantTess
/// requests; [`TiledSpec`] is its run-time-rank form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TiledTensorSpec<const R: usize> {
    /// Logical extents in elements (must be the input's).
    pub extents: [u64; R],
    /// Dtype (must be the op's output dtype: BF16 for CastTess, I8 for QuantTess).
    pub dtype: DType,
    /// The `MlaTiled` layout.
    pub layout: MlaTiled,
}

impl<const R: usize> TiledTensorSpec<R> {
    /// A tiled port of `extents` (elements), `dtype` and `layout`. Nothing is checked here.
    pub const fn new(extents: [u64; R], dtype: DType, layout: MlaTiled) -> Self {
        TiledTensorSpec {
            extents,
            dtype,
            layout,
        }
    }

    /// The run-time-rank form, borrowing the extents.
    pub fn as_dyn(&self) -> TiledSpec<'_> {
        TiledSpec {
            extents: &self.extents,
            dtype: self.dtype,
            layout: self.layout,
        }
    }
}

/// A checked CastTess plan: owning, immutable, backend-neutral (SPEC §6). `Copy`, `Send`
/// and `Sync`; reusable and shareable by independent calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    input: View,
    output: TiledView,
}

impl Plan {
    input_accessors!();

    /// The admitted output layout (capacity in bytes, two byte planes per element).
    pub const fn output(&self) -> &TiledView {
        &self.output
    }

    /// The output dtype, BF16.
    pub const fn output_dtype(&self) -> DType {
        OUTPUT_DTYPE
    }
}

/// Admits a CastTess request (SPEC §2, §4, §5). Reads no tensor data.
///
/// # Errors
///
/// - [`AdmissionError::Rank`] for rank 0;
/// - [`AdmissionError::DType`] on the input for `I8`, on the output for a dtype other
///   than BF16;
/// - [`AdmissionError::ShapeMismatch`] when the output extents are not the input's;
/// - the layout errors of [`TensorSpec::admit`] on the input;
/// - the layout errors of [`MlaTiled::admit`] on the output.
pub fn check_inference<const R: usize>(request: &Request<R>) -> Result<Plan, AdmissionError> {
    check_inference_dyn(&DynRequest {
        input: request.input.as_dyn(),
        output: request.output.as_dyn(),
    })
}

/// The tiled output port of a request whose rank is known only at run time: its logical
/// extents (the input's), its dtype (BF16 for CastTess, I8 for QuantTess) and layout, as
/// the seeds' requests name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TiledSpec<'a> {
    /// Logical extents in elements (the input's).
    pub extents: &'a [u64],
    /// Output dtype.
    pub dtype: DType,
    /// The `MlaTiled` layout.
    pub layout: MlaTiled,
}

/// An unchecked CastTess request whose rank is known only at run time, for file readers
/// and language bindings. Admission is the same as for [`Request`] (which goes through
/// it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynRequest<'a> {
    /// Input port: `F32`, `FP16` or `BF16`, contiguous or strided (strides in bytes).
    pub input: DynSpec<'a>,
    /// Output port: `BF16` in the `MlaTiled` layout.
    pub output: TiledSpec<'a>,
}

/// Admits a CastTess request of run-time rank: as [`check_inference`], plus the output
/// spec's own rules.
///
/// # Errors
///
/// As [`check_inference`]; [`AdmissionError::DType`] on the output port for a dtype other
/// than BF16; [`AdmissionError::ShapeMismatch`] when the output extents are not the
/// input's; [`AdmissionError::StridesRank`].
pub fn check_inference_dyn(request: &DynRequest<'_>) -> Result<Plan, AdmissionError> {
    let (input, output) = admit_ports(&request.input, &request.output, OUTPUT_DTYPE)?;
    Ok(Plan { input, output })
}

/// Admits the ports of a tiled request (CastTess or QuantTess, whose output dtype is
/// `output_dtype`): rank 1..=6, a float input, the output dtype and extents, the input
/// view, the layout over the input's extents.
pub(crate) fn admit_ports(
    input: &DynSpec<'_>,
    output: &TiledSpec<'_>,
    output_dtype: DType,
) -> Result<(View, TiledView), AdmissionError> {
    let rank = input.rank();
    if rank == 0 || rank > MAX_RANK {
        return Err(AdmissionError::Rank {
            rank,
            min: 1,
            max: MAX_RANK,
        });
    }
    if !input.dtype.is_float() {
        return Err(AdmissionError::DType {
            port: Port::Input,
            found: input.dtype,
        });
    }
    if output.dtype != output_dtype {
        return Err(AdmissionError::DType {
            port: Port::Output,
            found: output.dtype,
        });
    }
    crate::ops::quant::check_same_shape(input.extents, output.extents)?;
    output.layout.check_input_side()?;
    let view = input.admit(Port::Input)?;
    let planes = if output_dtype == DType::BF16 { 2 } else { 1 };
    let tiled = output.layout.admit(input.extents, planes)?;
    Ok((view, tiled))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::layout::{Channels, TileAxis};

    #[test]
    fn the_typed_request_names_its_output_and_admission_checks_it() {
        let layout = MlaTiled::new(
            [None, Some(0), Some(1), Some(2)],
            [1, 2, 2, 3],
            Channels::Compact,
        );
        let good = Request {
            input: TensorSpec::contiguous([3, 4, 3], DType::F16),
            output: TiledTensorSpec::new([3, 4, 3], DType::BF16, layout),
        };
        assert!(check_inference(&good).is_ok());
        for dtype in [DType::I8, DType::F16, DType::F32] {
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
        for extents in [[3, 4, 4], [4, 3, 3], [0, 4, 3]] {
            let mut r = good;
            r.output.extents = extents;
            let e = check_inference(&r).unwrap_err();
            assert!(matches!(e, AdmissionError::ShapeMismatch { .. }), "{e:?}");
            // The same error as the run-time-rank request's.
            assert_eq!(
                Err(e),
                check_inference_dyn(&DynRequest {
                    input: good.input.as_dyn(),
                    output: TiledSpec {
                        extents: &extents,
                        dtype: DType::BF16,
                        layout
                    },
                })
            );
        }
    }

    #[test]
    fn admits_strided_input_and_rejects_bad_requests() {
        let layout = MlaTiled::new(
            [None, Some(0), Some(1), Some(2)],
            [1, 2, 2, 3],
            Channels::PadTo16,
        );
        let plan = check_inference(&Request {
            input: TensorSpec::strided([3, 4, 3], [4, 12 * 4, 4 * 12 * 4], DType::F16),
            output: TiledTensorSpec::new([3, 4, 3], DType::BF16, layout),
        })
        .unwrap();
        assert_eq!(plan.elements(), 36);
        assert_eq!(plan.output_dtype(), DType::BF16);
        // Tiles (h, w): 2×2 ×2, 1×2 ×2 → pixels 4,4,2,2, each 32 bytes.
        assert_eq!(plan.output().capacity(), (4 + 4 + 2 + 2) * 32);
        let r = Request {
            input: TensorSpec::contiguous([3, 4, 3], DType::I8),
            output: TiledTensorSpec::new([3, 4, 3], DType::BF16, layout),
        };
        assert_eq!(
            check_inference(&r),
            Err(AdmissionError::DType {
                port: Port::Input,
                found: DType::I8
            })
        );
        let r = Request {
            input: TensorSpec::strided([3, 4, 3], [8, 4, 2], DType::F32),
            output: TiledTensorSpec::new([3, 4, 3], DType::BF16, layout),
        };
        assert!(matches!(
            check_inference(&r),
            Err(AdmissionError::StrideNotMultiple { .. })
        ));
        let r = Request {
            input: TensorSpec::contiguous([3, 4, 3], DType::F32),
            output: TiledTensorSpec::new(
                [3, 4, 3],
                DType::BF16,
                MlaTiled::new(
                    [None, Some(0), Some(1), Some(2)],
                    [1, 4, 2, 3],
                    Channels::Compact,
                ),
            ),
        };
        assert_eq!(
            check_inference(&r),
            Err(AdmissionError::TileExtent {
                role: TileAxis::H,
                tile: 4,
                extent: 3
            })
        );
    }
}
