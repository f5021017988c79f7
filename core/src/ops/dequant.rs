//! Dequant: strided INT8 / INT16 / INT32 → FP32 / FP16 / BF16 (SPEC §12.2), and the
//! dequantization parameters shared with DetessDequant.
//!
//! ```
//! use simak_core::ops::dequant::{check_inference, Params, Request};
//! use simak_core::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([4, 3], DType::I16),
//!     output: TensorSpec::strided([4, 3], [4, 16], DType::F32), // transposed
//!     params: Params::new(0.25).with_zero_point(-300),
//! })?;
//! assert_eq!(plan.output().span(), 48);
//! # Ok::<(), simak_core::AdmissionError>(())
//! ```

use crate::arith::dequant::dequantize;
use crate::arith::quant::Multiplier;
use crate::dtype::DType;
use crate::error::{AdmissionError, Port};
use crate::ops::quant::check_same_shape;
use crate::tensor::{DynSpec, MAX_RANK, TensorSpec, View};

/// Dequantization parameters as the caller gives them (SPEC §12.2): one multiplier and one
/// zero point per head (never per channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// binary32 bits of the multiplier `s` of SPEC §3 (finite, > 0, subnormals allowed):
    /// the number Quant multiplies by; dequantization divides by it.
    pub multiplier_bits: u32,
    /// Zero point: INT8 [-128, 127], INT16 [-32768, 32767], INT32 any. Default 0.
    pub zero_point: i32,
}

impl Params {
    /// Parameters with `multiplier` and zero point 0.
    pub const fn new(multiplier: f32) -> Params {
        Params::from_bits(multiplier.to_bits())
    }

    /// Parameters with the multiplier given as binary32 bits and zero point 0.
    pub const fn from_bits(multiplier_bits: u32) -> Params {
        Params {
            multiplier_bits,
            zero_point: 0,
        }
    }

    /// Sets the zero point.
    pub const fn with_zero_point(mut self, zero_point: i32) -> Params {
        self.zero_point = zero_point;
        self
    }

    /// Checks the parameters for codes of the integer dtype `input` and results in the
    /// float dtype `output` (SPEC §12.2).
    ///
    /// # Errors
    ///
    /// [`AdmissionError::DType`] (input) for a float `input`, (output) for an integer
    /// `output`; [`AdmissionError::MultiplierNotFinite`],
    /// [`AdmissionError::MultiplierNotPositive`]; [`AdmissionError::DequantZeroPoint`] for
    /// a zero point outside `input`'s range.
    pub fn check(&self, input: DType, output: DType) -> Result<CheckedParams, AdmissionError> {
        let Some((min, max)) = input.int_range() else {
            return Err(AdmissionError::DType {
                port: Port::Input,
                found: input,
            });
        };
        if !output.is_float() {
            return Err(AdmissionError::DType {
                port: Port::Output,
                found: output,
            });
        }
        Multiplier::from_bits(self.multiplier_bits)?;
        let zp = i64::from(self.zero_point);
        if zp < min || zp > max {
            return Err(AdmissionError::DequantZeroPoint {
                dtype: input,
                zero_point: self.zero_point,
            });
        }
        Ok(CheckedParams {
            params: *self,
            input,
            output,
        })
    }
}

/// Checked dequantization parameters: the multiplier is finite and > 0, the zero point in
/// the input dtype's range, the input an integer dtype and the output a float dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedParams {
    params: Params,
    input: DType,
    output: DType,
}

impl CheckedParams {
    /// The parameters as given.
    pub const fn params(&self) -> Params {
        self.params
    }

    /// The multiplier's binary32 bits.
    pub const fn multiplier_bits(&self) -> u32 {
        self.params.multiplier_bits
    }

    /// The zero point.
    pub const fn zero_point(&self) -> i32 {
        self.params.zero_point
    }

    /// The integer input dtype (`I8`, `I16` or `I32`).
    pub const fn input_dtype(&self) -> DType {
        self.input
    }

    /// The float output dtype (`F32`, `F16` or `BF16`).
    pub const fn output_dtype(&self) -> DType {
        self.output
    }

    /// SPEC §12.2 for one code `q` (sign-extended): the output bits (binary32, or the
    /// 16-bit pattern zero-extended), in integer arithmetic.
    pub const fn value(&self, q: i32) -> u32 {
        dequantize(
            q as i64,
            self.params.zero_point as i64,
            self.params.multiplier_bits,
            self.output,
        )
    }
}

/// An unchecked Dequant request over rank-`R` ports (0 ≤ R ≤ 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<const R: usize> {
    /// Input port: `I8`, `I16` or `I32`, contiguous or strided (byte strides).
    pub input: TensorSpec<R>,
    /// Output port: `F32`, `F16` or `BF16`, contiguous or strided, the input's shape.
    pub output: TensorSpec<R>,
    /// Parameters (SPEC §12.2).
    pub params: Params,
}

/// An unchecked Dequant request of run-time rank (extents and strides as slices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynRequest<'a> {
    /// Input port: `I8`, `I16` or `I32`.
    pub input: DynSpec<'a>,
    /// Output port: `F32`, `F16` or `BF16`, the input's shape.
    pub output: DynSpec<'a>,
    /// Parameters.
    pub params: Params,
}

/// A checked Dequant plan: owning, immutable, backend-neutral (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    input: View,
    output: View,
    params: CheckedParams,
}

impl Plan {
    /// The admitted input view (strides and span in bytes).
    pub const fn input(&self) -> &View {
        &self.input
    }

    /// The admitted output view (strides and span in bytes).
    pub const fn output(&self) -> &View {
        &self.output
    }

    /// The checked parameters.
    pub const fn params(&self) -> &CheckedParams {
        &self.params
    }

    /// Number of logical elements (0 when empty).
    pub const fn elements(&self) -> u64 {
        self.input.elements()
    }

    /// Whether the call is a no-op (some extent is zero).
    pub const fn is_empty(&self) -> bool {
        self.input.is_empty()
    }
}

/// Admits a Dequant request (SPEC §2, §12.2). Reads no tensor data.
///
/// # Errors
///
/// - [`AdmissionError::DType`] on the input for a float dtype, on the output for an
///   integer dtype;
/// - [`AdmissionError::MultiplierNotFinite`], [`AdmissionError::MultiplierNotPositive`],
///   [`AdmissionError::DequantZeroPoint`];
/// - [`AdmissionError::ShapeMismatch`];
/// - the layout errors of [`TensorSpec::admit`] on either port.
pub fn check_inference<const R: usize>(request: &Request<R>) -> Result<Plan, AdmissionError> {
    check_inference_dyn(&DynRequest {
        input: request.input.as_dyn(),
        output: request.output.as_dyn(),
        params: request.params,
    })
}

/// Admits a Dequant request of run-time rank: as [`check_inference`].
///
/// # Errors
///
/// As [`check_inference`]; also [`AdmissionError::Rank`] above rank 6 and
/// [`AdmissionError::StridesRank`].
pub fn check_inference_dyn(request: &DynRequest<'_>) -> Result<Plan, AdmissionError> {
    if request.input.rank() > MAX_RANK {
        return Err(AdmissionError::Rank {
            rank: request.input.rank(),
            min: 0,
            max: MAX_RANK,
        });
    }
    let params = request
        .params
        .check(request.input.dtype, request.output.dtype)?;
    check_same_shape(request.input.extents, request.output.extents)?;
    let input = request.input.admit(Port::Input)?;
    let output = request.output.admit(Port::Output)?;
    Ok(Plan {
        input,
        output,
        params,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn zero_point_ranges_and_dtypes() {
        let req = |i, o, zp| Request {
            input: TensorSpec::contiguous([3], i),
            output: TensorSpec::contiguous([3], o),
            params: Params::new(1.0).with_zero_point(zp),
        };
        let code = |r: Request<1>| check_inference(&r).map(|_| 0).unwrap_or_else(|e| e.code());
        assert_eq!(code(req(DType::I8, DType::F32, 127)), 0);
        assert_eq!(code(req(DType::I8, DType::F32, 128)), 0x223);
        assert_eq!(code(req(DType::I8, DType::F16, -129)), 0x223);
        assert_eq!(code(req(DType::I16, DType::BF16, -32768)), 0);
        assert_eq!(code(req(DType::I16, DType::F32, 32768)), 0x223);
        assert_eq!(code(req(DType::I32, DType::F32, i32::MIN)), 0);
        assert_eq!(code(req(DType::F32, DType::F32, 0)), 5);
        assert_eq!(code(req(DType::I8, DType::I8, 0)), 0x201);
        let mut r = req(DType::I8, DType::F32, 0);
        r.params.multiplier_bits = f32::NAN.to_bits();
        assert_eq!(code(r), 13);
        r.params.multiplier_bits = 0;
        assert_eq!(code(r), 14);
    }
}
