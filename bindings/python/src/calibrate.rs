//! `calibrate_absmax`: a Quant multiplier chosen from the data (SPEC §3, "Calibration
//! (absmax)"), the library's `simak::calibrate`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use simak::Port;
use simak::calibrate::{abs_max, absmax_multiplier};

use crate::arrays::{input_slice, read_input};
use crate::errors::{Names, guarded, lib_error};
use crate::run::run_detached;

/// The absmax multiplier of ``x``: ``127 / a`` as one binary32 division rounded to
/// nearest-even, where ``a`` is the largest ``|x|`` over the finite elements (NaN and ±inf
/// are skipped; subnormals count exactly); 1.0 when no element is finite and nonzero (all
/// zero, NaN or infinite, or empty: ONNX Runtime's rule for a zero range). The zero point
/// to use with it is 0. Computed in integer arithmetic (independent of the FP environment),
/// as ``simak quant --calibrate absmax`` does.
///
/// Args:
///     x: ``float32``, ``float16`` or ``ml_dtypes.bfloat16`` array of rank 0 to 6, any
///         admissible strides, read in place (``uint16`` with ``dtype="bf16"`` or
///         ``"f16"``).
///     dtype: the 16-bit format of ``uint16`` storage, as for :func:`quantize`.
///
/// Returns:
///     The multiplier as a Python float holding a binary32 value exactly (pass it, or
///     ``numpy.float32`` of it, to :func:`quantize`).
///
/// Raises:
///     SimakError: dtype (5), rank (6), a view that cannot be read in place (19, 20, 28,
///         0x604).
///     ValueError: ``127 / a`` is not a finite binary32 (``a`` below about 7.5e-37).
#[pyfunction]
#[pyo3(signature = (x, dtype=None))]
#[pyo3(text_signature = "(x, dtype=None)")]
pub(crate) fn calibrate_absmax(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<f64> {
    guarded(py, || {
        let names = Names {
            input: "x",
            output: "out",
        };
        let (dt, g) = read_input(py, x, dtype, 0)?;
        let view = g
            .spec(dt)
            .admit(Port::Input)
            .map_err(|e| lib_error(py, e, names))?;
        // SAFETY: `x`'s span is admission's for its own geometry, inside its buffer; the
        // slice is only read.
        let input = unsafe { input_slice(g.address, view.span()) };
        let a = run_detached(py, view.elements(), || abs_max(&view, input))
            .map_err(|e| lib_error(py, e, names))?;
        let bits = absmax_multiplier(a)
            .map_err(|e| PyValueError::new_err(format!("calibrate_absmax: {e}")))?;
        Ok(f64::from(f32::from_bits(bits)))
    })
}
