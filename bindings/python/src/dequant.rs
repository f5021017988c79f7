//! `dequantize` (SPEC §12.2): strided INT8 / INT16 / INT32 to FP32 / FP16 / BF16 with a
//! multiplier and zero point, the A65 Dequant op.

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArrayDescrMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use simak::a65::{self, ExecuteError};
use simak::ops::dequant::{self, Params};
use simak::{AdmissionError, DType, DynSpec};

use crate::args::{multiplier_bits, repr};
use crate::arrays::{
    Geometry, as_array, data_address, input_slice, num, output_slice, ranges_overlap,
};
use crate::detess::{
    PlanCache, checked_out, dequant_zero_point, float_out_dtype, numpy_descr, prepared_cached,
};
use crate::errors::{Names, guarded, lib_error, simak_error};
use crate::run::run_detached;

/// Prepared Dequant plans of recent calls (see `prepared_cached`).
static DEQUANT_PLANS: PlanCache<dequant::Plan, a65::dequant::Prepared> =
    PlanCache::new(std::collections::VecDeque::new());

/// Dequantization back to real values: ``(q - zero_point) / multiplier`` per element
/// (SPEC §12.2): the difference exact in 64 bits, rounded once to binary32 (exact for
/// INT8 and INT16), divided with one binary32 rounding to nearest-even (subnormals kept,
/// overflow to inf; a division, not a multiplication by ``1 / multiplier``), then rounded
/// to the output dtype (FP16: nearest-even; BF16: SPEC §4). Independent of the FP
/// environment.
///
/// Args:
///     q: ``int8``, ``int16`` or ``int32`` array of rank 0 to 6, any admissible strides,
///         read in place.
///     multiplier: the multiplier ``q`` was quantized with (finite, > 0); a Python float
///         is rounded once to binary32, a ``numpy.float32`` taken exactly.
///     zero_point: integer in ``q``'s range (INT8 [-128, 127], INT16 [-32768, 32767],
///         INT32 any i32).
///     out_dtype: ``numpy.float32`` (the default), ``numpy.float16`` or
///         ``ml_dtypes.bfloat16`` (or ``"f32"``, ``"f16"``, ``"bf16"``); when omitted with
///         ``out=``, ``out``'s dtype.
///     out: optional array of ``q``'s shape and ``out_dtype``, any nonnegative,
///         non-overlapping strides: only its elements are written.
///
/// Returns:
///     ``out``, or a new C-order array of ``q``'s shape and ``out_dtype``.
///
/// Raises:
///     SimakError: dtype of ``q`` (5), rank (6), multiplier (13, 14), zero point (INT8:
///         15, as before INT16 and INT32 came; INT16, INT32: 0x223), a view that cannot be
///         read in place (19, 20, 28, 0x604), misaligned ``q`` (0x403), ``out`` of another
///         dtype (0x612) or shape (0x613), read-only (0x605), overlapping ``q`` (0x407), a
///         bad ``out_dtype`` (0x601). Nothing is written on error.
#[pyfunction]
#[pyo3(signature = (q, multiplier, zero_point=None, out_dtype=None, out=None))]
#[pyo3(text_signature = "(q, multiplier, zero_point=0, out_dtype=numpy.float32, out=None)")]
pub(crate) fn dequantize<'py>(
    py: Python<'py>,
    q: &Bound<'py, PyAny>,
    multiplier: &Bound<'py, PyAny>,
    zero_point: Option<&Bound<'py, PyAny>>,
    out_dtype: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let names = Names {
            input: "q",
            output: "out",
        };
        let bits = multiplier_bits(multiplier)?;
        let qa = as_array(q)?;
        let descr = qa.dtype();
        let n = descr.num();
        let dt = if descr.itemsize() > 1 && descr.is_native_byteorder() == Some(false) {
            None
        } else if n == num(NPY_TYPES::NPY_BYTE) {
            Some(DType::I8)
        } else if n == num(NPY_TYPES::NPY_SHORT) {
            Some(DType::I16)
        } else if n == num(NPY_TYPES::NPY_INT) {
            Some(DType::I32)
        } else {
            None
        };
        let Some(dt) = dt else {
            let code = 5;
            return Err(simak_error(
                py,
                code,
                format!(
                    "q has dtype {}; dequantize reads int8, int16 or int32 in native byte order",
                    repr(descr.as_any())
                ),
            ));
        };
        let zp = if dt == DType::I8 {
            // INT8 keeps its code from before INT16 and INT32 came: Quant's zero point rule.
            match zero_point {
                Some(z) => crate::args::zero_point(py, z)?,
                None => 0,
            }
        } else {
            dequant_zero_point(py, zero_point, dt)?
        };
        if !(-128..=127).contains(&zp) && dt == DType::I8 {
            let code = AdmissionError::ZeroPointOutOfRange { zero_point: zp }.code();
            return Err(simak_error(
                py,
                code,
                format!("zero point {zp} is outside [-128, 127]"),
            ));
        }
        let params = Params::from_bits(bits).with_zero_point(zp);
        let od = match out_dtype {
            Some(d) => float_out_dtype(py, d)?,
            None => out
                .and_then(|o| o.cast::<numpy::PyUntypedArray>().ok())
                .and_then(|a| {
                    let d = a.dtype();
                    [
                        (NPY_TYPES::NPY_FLOAT, DType::F32),
                        (NPY_TYPES::NPY_HALF, DType::F16),
                    ]
                    .into_iter()
                    .find(|&(t, _)| num(t) == d.num())
                    .map(|(_, x)| x)
                    .or_else(|| {
                        crate::arrays::bfloat16(py)
                            .is_some_and(|(b, _)| b == d.num())
                            .then_some(DType::BF16)
                    })
                })
                .unwrap_or(DType::F32),
        };
        let g = Geometry::read(py, &qa, "q", 0)?;
        let given = out
            .map(|o| checked_out(py, o, od, g.extents()))
            .transpose()?;
        let out_spec = match &given {
            Some((_, go)) => go.spec(od),
            None => DynSpec::contiguous(g.extents(), od),
        };
        let plan = dequant::check_inference_dyn(&dequant::DynRequest {
            input: g.spec(dt),
            output: out_spec,
            params,
        })
        .map_err(|e| lib_error(py, e, names))?;
        let prepared = prepared_cached(&DEQUANT_PLANS, &plan, a65::dequant::prepare);
        let (oa, o_address) = match given {
            Some((a, go)) => (a, go.address),
            None => {
                let a = crate::arrays::new_array_of(py, numpy_descr(py, od)?, g.extents())?;
                let address = data_address(&a);
                (a, address)
            }
        };
        let (in_span, out_span) = (plan.input().span(), plan.output().span());
        if ranges_overlap(g.address, in_span, o_address, out_span) {
            return Err(lib_error(py, ExecuteError::Overlap, names));
        }
        // SAFETY: the spans are admission's for these arrays' own geometries, so both
        // ranges lie in the arrays' live storage (kept alive by the references held here);
        // the output array is writeable (checked, or new) and the ranges were just checked
        // disjoint.
        let (input, output) = unsafe {
            (
                input_slice(g.address, in_span),
                output_slice(o_address, out_span),
            )
        };
        run_detached(py, plan.elements(), || {
            a65::execute(&*prepared, input, output)
        })
        .map_err(|e| lib_error(py, e, names))?;
        Ok(oa.into_any())
    })
}
