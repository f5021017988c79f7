//! DetessCast: a BF16 MLA output layout (SPEC §12.1) → FP32, strided: `bits << 16` for
//! every pattern, NaN payloads kept (SPEC §12).
//!
//! ```
//! use simak_core::layout::{Channels, MlaTiled};
//! use simak_core::ops::detess::Request;
//! use simak_core::ops::detesscast::check_inference;
//! use simak_core::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     dtype: DType::BF16,
//!     layout: MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 4, 16], Channels::CBlock16),
//!     output: TensorSpec::contiguous([4, 16], DType::F32),
//! })?;
//! assert_eq!(plan.input().capacity(), 4 * 16 * 2);
//! # Ok::<(), simak_core::AdmissionError>(())
//! ```

use crate::dtype::DType;
use crate::error::AdmissionError;
use crate::ops::detess::{DynRequest, Ports, Request, admit_ports, ports_accessors};

/// A checked DetessCast plan: owning, immutable, backend-neutral (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    ports: Ports,
}

impl Plan {
    ports_accessors!();
}

/// Admits a DetessCast request (SPEC §12): input BF16, output F32; otherwise as
/// [`crate::ops::detess::check_inference`].
///
/// # Errors
///
/// As [`crate::ops::detess::check_inference`]; [`AdmissionError::DType`] on the input for
/// a dtype other than BF16, on the output for one other than F32.
pub fn check_inference<const R: usize>(request: &Request<R>) -> Result<Plan, AdmissionError> {
    check_inference_dyn(&request.as_dyn())
}

/// Admits a DetessCast request of run-time rank: as [`check_inference`].
///
/// # Errors
///
/// As [`check_inference`]; also [`AdmissionError::StridesRank`].
pub fn check_inference_dyn(request: &DynRequest<'_>) -> Result<Plan, AdmissionError> {
    let ports = admit_ports(
        &request.input,
        &request.output,
        |d| d == DType::BF16,
        |d| d == DType::F32,
    )?;
    Ok(Plan { ports })
}
