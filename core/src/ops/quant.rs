//! Quant: FP32 / BF16 / FP16 → INT8 with one multiplier and zero point (SPEC §3).
//!
//! ```
//! use simak_core::ops::quant::{check_inference, Params, Request, Rounding};
//! use simak_core::{DType, TensorSpec};
//!
//! let request = Request {
//!     input: TensorSpec::strided([2, 3], [8, 2], DType::BF16),
//!     output: TensorSpec::strided([2, 3], [1, 2], DType::I8),
//!     params: Params::new(2.0).with_zero_point(-3).with_rounding(Rounding::TowardZero),
//! };
//! let plan = check_inference(&request).unwrap();
//! assert_eq!(plan.input().span(), 14);
//! assert_eq!(plan.output().span(), 6);
//! ```

use crate::dtype::DType;
use crate::error::{AdmissionError, Port};
use crate::tensor::{DynSpec, TensorSpec, View};

pub use crate::arith::quant::{Kernels, Multiplier, Rounding};

/// Quant parameters as the caller gives them (SPEC §3). Checked by [`check_inference`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// binary32 bits of the multiplier: finite, > 0, subnormals allowed. It multiplies.
    pub multiplier_bits: u32,
    /// Zero point, in [-128, 127]. Default 0.
    pub zero_point: i32,
    /// Integer rounding mode. Default [`Rounding::NearestEven`].
    pub rounding: Rounding,
}

impl Params {
    /// Parameters with `multiplier`, zero point 0 and nearest-even rounding.
    pub const fn new(multiplier: f32) -> Params {
        Params::from_bits(multiplier.to_bits())
    }

    /// Parameters with the multiplier given as binary32 bits, zero point 0, nearest-even.
    pub const fn from_bits(multiplier_bits: u32) -> Params {
        Params {
            multiplier_bits,
            zero_point: 0,
            rounding: Rounding::NearestEven,
        }
    }

    /// Sets the zero point.
    pub const fn with_zero_point(mut self, zero_point: i32) -> Params {
        self.zero_point = zero_point;
        self
    }

    /// Sets the rounding mode.
    pub const fn with_rounding(mut self, rounding: Rounding) -> Params {
        self.rounding = rounding;
        self
    }
}

impl Params {
    /// Checks the parameters (SPEC §3): decodes the multiplier once and checks the zero
    /// point. Shared by Quant and QuantTess admission.
    ///
    /// # Errors
    ///
    /// [`AdmissionError::MultiplierNotFinite`], [`AdmissionError::MultiplierNotPositive`],
    /// [`AdmissionError::ZeroPointOutOfRange`].
    pub fn check(&self) -> Result<CheckedParams, AdmissionError> {
        let multiplier = Multiplier::from_bits(self.multiplier_bits)?;
        let zero_point = self.zero_point;
        if !(-128..=127).contains(&zero_point) {
            return Err(AdmissionError::ZeroPointOutOfRange { zero_point });
        }
        Ok(CheckedParams {
            multiplier,
            zero_point,
            rounding: self.rounding,
        })
    }
}

/// Quant parameters after admission: the multiplier decoded once, a zero point in
/// [-128, 127] and a rounding mode (SPEC §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedParams {
    multiplier: Multiplier,
    zero_point: i32,
    rounding: Rounding,
}

impl CheckedParams {
    /// The decoded multiplier.
    pub const fn multiplier(&self) -> &Multiplier {
        &self.multiplier
    }

    /// The zero point, in [-128, 127].
    pub const fn zero_point(&self) -> i32 {
        self.zero_point
    }

    /// The rounding mode.
    pub const fn rounding(&self) -> Rounding {
        self.rounding
    }

    /// The parameters as the caller gave them.
    pub const fn params(&self) -> Params {
        Params {
            multiplier_bits: self.multiplier.bits(),
            zero_point: self.zero_point,
            rounding: self.rounding,
        }
    }

    /// The exact scalar specialization for `dtype` × this rounding mode.
    ///
    /// # Panics
    ///
    /// For `DType::I8`, which admission never lets through as a Quant input.
    pub fn kernels(&self, dtype: DType) -> Kernels {
        match Kernels::select(dtype, self.rounding) {
            Some(k) => k,
            None => panic!("i8 is not a quant input dtype"),
        }
    }
}

/// An unchecked Quant request over rank-`R` ports (R ≤ 6; rank 0 is a scalar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<const R: usize> {
    /// Input port: `F32`, `BF16` or `F16`, contiguous or strided.
    pub input: TensorSpec<R>,
    /// Output port: `I8`, contiguous or strided, same logical shape as the input.
    pub output: TensorSpec<R>,
    /// Parameters.
    pub params: Params,
}

/// A checked Quant plan: owning, immutable, backend-neutral (SPEC §6).
///
/// Holds the normalized input and output views, the parameters and the multiplier decoded
/// once. Reusable and shareable (`Copy`, `Send`, `Sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    input: View,
    output: View,
    quant: CheckedParams,
}

impl Plan {
    input_accessors!();

    /// The admitted output view.
    pub const fn output(&self) -> &View {
        &self.output
    }

    quant_accessors!();
}

/// Admits a Quant request (SPEC §2, §3).
///
/// No tensor data is read. On success the plan owns copies of everything it needs.
///
/// # Errors
///
/// - [`AdmissionError::DType`]: input not `F32`/`BF16`/`F16`, or output not `I8`;
/// - [`AdmissionError::ShapeMismatch`]: the logical extents differ;
/// - the layout errors of [`TensorSpec::admit`] for either port;
/// - [`AdmissionError::MultiplierNotFinite`], [`AdmissionError::MultiplierNotPositive`],
///   [`AdmissionError::ZeroPointOutOfRange`].
pub fn check_inference<const R: usize>(request: &Request<R>) -> Result<Plan, AdmissionError> {
    check_inference_dyn(&DynRequest {
        input: request.input.as_dyn(),
        output: request.output.as_dyn(),
        params: request.params,
    })
}

/// An unchecked Quant request whose rank is known only at run time (extents and strides
/// as slices): for callers such as file readers and language bindings. Admission is the
/// same as for [`Request`] (which goes through it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynRequest<'a> {
    /// Input port: `F32`, `BF16` or `F16`, contiguous or strided (strides in bytes).
    pub input: DynSpec<'a>,
    /// Output port: `I8`, contiguous or strided, same logical shape as the input.
    pub output: DynSpec<'a>,
    /// Parameters.
    pub params: Params,
}

/// Admits a Quant request of run-time rank (SPEC §2, §3): as [`check_inference`].
///
/// # Errors
///
/// As [`check_inference`]; also [`AdmissionError::Rank`] above rank 6,
/// [`AdmissionError::ShapeMismatch`] when the ports' ranks differ (at the first axis one
/// of them lacks, whose extent there counts as 0) and [`AdmissionError::StridesRank`].
pub fn check_inference_dyn(request: &DynRequest<'_>) -> Result<Plan, AdmissionError> {
    let input_dtype = request.input.dtype;
    if !input_dtype.is_float() {
        return Err(AdmissionError::DType {
            port: Port::Input,
            found: input_dtype,
        });
    }
    if request.output.dtype != DType::I8 {
        return Err(AdmissionError::DType {
            port: Port::Output,
            found: request.output.dtype,
        });
    }
    check_same_shape(request.input.extents, request.output.extents)?;
    let quant = request.params.check()?;
    let input = request.input.admit(Port::Input)?;
    let output = request.output.admit(Port::Output)?;
    Ok(Plan {
        input,
        output,
        quant,
    })
}

/// Input and output logical extents are equal (also in number).
///
/// # Errors
///
/// [`AdmissionError::ShapeMismatch`] at the first differing axis (an axis one port lacks
/// has extent 0 there).
pub(crate) fn check_same_shape(input: &[u64], output: &[u64]) -> Result<(), AdmissionError> {
    for axis in 0..input.len().max(output.len()) {
        let (a, b) = (
            input.get(axis).copied().unwrap_or(0),
            output.get(axis).copied().unwrap_or(0),
        );
        if a != b || input.len() != output.len() && axis >= input.len().min(output.len()) {
            return Err(AdmissionError::ShapeMismatch {
                axis,
                input: a,
                output: b,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    fn request() -> Request<2> {
        Request {
            input: TensorSpec::contiguous([2, 3], DType::F32),
            output: TensorSpec::contiguous([2, 3], DType::I8),
            params: Params::new(1.0),
        }
    }

    #[test]
    fn admits_a_plain_request() {
        let plan = check_inference(&request()).unwrap();
        assert_eq!(plan.elements(), 6);
        assert_eq!(plan.input().span(), 24);
        assert_eq!(plan.output().span(), 6);
        assert_eq!(plan.params(), Params::new(1.0));
    }

    #[test]
    fn rejects_each_parameter_rule() {
        let mut r = request();
        r.params.zero_point = 128;
        assert_eq!(
            check_inference(&r),
            Err(AdmissionError::ZeroPointOutOfRange { zero_point: 128 })
        );
        r.params = Params::new(f32::NAN);
        assert!(matches!(
            check_inference(&r),
            Err(AdmissionError::MultiplierNotFinite { .. })
        ));
        r.params = Params::new(-1.0);
        assert_eq!(
            check_inference(&r),
            Err(AdmissionError::MultiplierNotPositive { bits: 0xbf80_0000 })
        );
    }
}
