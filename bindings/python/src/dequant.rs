//! `dequantize`: INT8 back to FP32 with a multiplier and zero point.

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArrayDescrMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use simak::dequant::Dequant;
use simak::{DType, Port};

use crate::args::{multiplier_bits, repr, zero_point};
use crate::arrays::{Geometry, as_array, data_address, input_slice, new_array, num, output_slice};
use crate::errors::{Names, guarded, lib_error, simak_error};
use crate::run::run_detached;

/// INT8 back to FP32: ``(q - zero_point) / multiplier``, one binary32 division rounded to
/// nearest-even, computed in integer arithmetic (independent of the FP environment).
///
/// Args:
///     q: ``int8`` array of rank 0 to 6, any admissible strides, read in place.
///     multiplier: the multiplier ``q`` was quantized with (finite, > 0); a Python float
///         is rounded once to binary32, a ``numpy.float32`` taken exactly.
///     zero_point: integer in [-128, 127].
///
/// Returns:
///     A new C-order ``float32`` array of ``q``'s shape.
///
/// Raises:
///     SimakError: dtype (5), rank (6), multiplier (13, 14), zero point (15), a view that
///         cannot be read in place (19, 20, 28, 0x604).
#[pyfunction]
#[pyo3(signature = (q, multiplier, zero_point=None))]
#[pyo3(text_signature = "(q, multiplier, zero_point=0)")]
pub(crate) fn dequantize<'py>(
    py: Python<'py>,
    q: &Bound<'py, PyAny>,
    multiplier: &Bound<'py, PyAny>,
    zero_point: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let names = Names {
            input: "q",
            output: "out",
        };
        let bits = multiplier_bits(multiplier)?;
        let zp = match zero_point {
            Some(z) => self::zero_point(py, z)?,
            None => 0,
        };
        let d = Dequant::new(bits, zp).map_err(|e| lib_error(py, e, names))?;
        let qa = as_array(q)?;
        if qa.dtype().num() != num(NPY_TYPES::NPY_BYTE) {
            let code = 5;
            return Err(simak_error(
                py,
                code,
                format!(
                    "q has dtype {}; dequantize reads int8 (simak error code {code})",
                    repr(qa.dtype().as_any())
                ),
            ));
        }
        let g = Geometry::read(py, &qa, "q", 0)?;
        let view = g
            .spec(DType::I8)
            .admit(Port::Input)
            .map_err(|e| lib_error(py, e, names))?;
        let out = new_array::<f32>(py, g.extents())?;
        let o_address = data_address(&out);
        // SAFETY: `q`'s span is admission's for its own geometry; `out` is the new array of
        // 4 · elements bytes, referenced by nothing else, so the two cannot overlap.
        let (input, output) = unsafe {
            (
                input_slice(g.address, view.span()),
                output_slice(o_address, view.elements() * 4),
            )
        };
        run_detached(py, view.elements(), || d.run_view(&view, input, output))
            .map_err(|e| lib_error(py, e, names))?;
        Ok(out.into_any())
    })
}
