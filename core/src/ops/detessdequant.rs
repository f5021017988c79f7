//! DetessDequant: an INT8 / INT16 / INT32 MLA output layout (SPEC §12.1) → FP32 / FP16 /
//! BF16, strided, dequantized per SPEC §12.2. Exactly `Dequant(Detess(x))`.
//!
//! ```
//! use simak_core::layout::{Channels, MlaTiled};
//! use simak_core::ops::dequant::Params;
//! use simak_core::ops::detessdequant::{check_inference, Request};
//! use simak_core::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     dtype: DType::I8,
//!     layout: MlaTiled::new([None, Some(0), Some(1), Some(2)], [1, 19, 19, 273], Channels::CBlock16),
//!     output: TensorSpec::contiguous([19, 19, 273], DType::F32),
//!     params: Params::new(0.125).with_zero_point(-3),
//! })?;
//! assert_eq!(plan.input().capacity(), 103_968);
//! # Ok::<(), simak_core::AdmissionError>(())
//! ```

use crate::dtype::DType;
use crate::error::AdmissionError;
use crate::layout::MlaTiled;
use crate::ops::casttess::TiledSpec;
use crate::ops::dequant::{CheckedParams, Params};
use crate::ops::detess::{Ports, admit_ports, ports_accessors, tiled_input};
use crate::tensor::{DynSpec, TensorSpec};

/// An unchecked DetessDequant request over rank-`R` ports (1 ≤ R ≤ 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<const R: usize> {
    /// The tiled input's dtype: `I8`, `I16` or `I32`.
    pub dtype: DType,
    /// The tiled input's layout (SPEC §12.1).
    pub layout: MlaTiled,
    /// Output port: `F32`, `F16` or `BF16`, strided (byte strides), the logical shape.
    pub output: TensorSpec<R>,
    /// Dequantization parameters (SPEC §12.2).
    pub params: Params,
}

/// An unchecked DetessDequant request of run-time rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynRequest<'a> {
    /// The tiled input port (extents, dtype, layout).
    pub input: TiledSpec<'a>,
    /// The strided output port, the input's extents.
    pub output: DynSpec<'a>,
    /// Dequantization parameters (SPEC §12.2).
    pub params: Params,
}

/// A checked DetessDequant plan: owning, immutable, backend-neutral (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    ports: Ports,
    params: CheckedParams,
}

impl Plan {
    ports_accessors!();

    /// The checked dequantization parameters.
    pub const fn params(&self) -> &CheckedParams {
        &self.params
    }
}

/// Admits a DetessDequant request (SPEC §12, §12.1, §12.2). Reads no tensor data.
///
/// # Errors
///
/// As [`crate::ops::detess::check_inference`] (the input dtype must be `I8`, `I16` or
/// `I32`, the output `F32`, `F16` or `BF16`), then the parameter errors of
/// [`Params::check`].
pub fn check_inference<const R: usize>(request: &Request<R>) -> Result<Plan, AdmissionError> {
    check_inference_dyn(&DynRequest {
        input: tiled_input(request.dtype, request.layout, &request.output),
        output: request.output.as_dyn(),
        params: request.params,
    })
}

/// Admits a DetessDequant request of run-time rank: as [`check_inference`].
///
/// # Errors
///
/// As [`check_inference`]; also [`AdmissionError::StridesRank`].
pub fn check_inference_dyn(request: &DynRequest<'_>) -> Result<Plan, AdmissionError> {
    let ports = admit_ports(
        &request.input,
        &request.output,
        DType::is_int,
        DType::is_float,
    )?;
    let params = request
        .params
        .check(request.input.dtype, request.output.dtype)?;
    Ok(Plan { ports, params })
}
