//! Quant (SPEC §3): `quantize`, the reusable `QuantPlan`, and the FP-control test seam.

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use simak::a65::{self, ExecuteError};
use simak::ops::quant;
use simak::ops::quant::Params;
use simak::{AdmissionError, DType, DynSpec, Port};

use crate::args::{
    check_threads, input_dtype, multiplier_bits, parse_dtype, parse_strides, parse_u64s, port_spec,
    quant_params, repr,
};
use crate::arrays::{
    Geometry, as_array, as_out_array, input_slice, new_array, num, output_slice, ranges_overlap,
    read_input, read_plan_input, same_geometry, strided_int8,
};
use crate::errors::{Names, QUANT_NAMES, guarded, lib_error, simak_error};
use crate::run::run_detached;

/// The `out=` array of a Quant call: writable, dtype `int8` (else the output dtype error,
/// 0x201).
fn int8_out<'py>(py: Python<'py>, o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    let oa = as_out_array(py, o, "out")?;
    if oa.dtype().num() != num(NPY_TYPES::NPY_BYTE) {
        let code = AdmissionError::DType {
            port: Port::Output,
            found: DType::I8,
        }
        .code();
        return Err(simak_error(
            py,
            code,
            format!(
                "out= has dtype {}; quantize writes int8",
                repr(oa.dtype().as_any())
            ),
        ));
    }
    Ok(oa)
}

/// Runs a prepared Quant call over admitted arrays, split over `threads`.
pub(crate) fn run_quant(
    py: Python<'_>,
    prepared: &a65::quant::Prepared,
    input: &Geometry,
    output: &Geometry,
    threads: usize,
    names: Names,
) -> PyResult<()> {
    let plan = prepared.plan();
    let (in_span, out_span) = (plan.input().span(), plan.output().span());
    if ranges_overlap(input.address, in_span, output.address, out_span) {
        return Err(lib_error(py, ExecuteError::Overlap, names));
    }
    // SAFETY: the spans are admission's for these arrays' own geometries, so both ranges
    // lie in the arrays' storage, kept alive by the caller's references for this call; the
    // output array was checked writeable, and the ranges were just checked disjoint.
    let (inp, outp) = unsafe {
        (
            input_slice(input.address, in_span),
            output_slice(output.address, out_span),
        )
    };
    let elements = plan.elements();
    let result = run_detached(py, elements, || {
        a65::execute_threaded(prepared, threads, inp, outp)
    });
    result.map_err(|e| lib_error(py, e, names))
}

/// Refuses an `out=` whose rank is not `x`'s, naming both ranks and shapes (admission
/// would name the first axis one of them lacks).
fn check_same_rank(py: Python<'_>, gin: &Geometry, gout: &Geometry) -> PyResult<()> {
    if gin.rank == gout.rank {
        return Ok(());
    }
    let code = AdmissionError::ShapeMismatch {
        axis: 0,
        input: 0,
        output: 0,
    }
    .code();
    Err(simak_error(
        py,
        code,
        format!(
            "out= has rank {} (shape {:?}) but x has rank {} (shape {:?}): out= must have x's shape",
            gout.rank,
            gout.extents(),
            gin.rank,
            gin.extents()
        ),
    ))
}

/// Quantizes ``x`` to INT8: ``saturate(round(x * multiplier) + zero_point)`` (SPEC §3).
///
/// Per element: the input is read exactly in its dtype, multiplied by ``multiplier`` with
/// the product rounded once to binary32 (nearest-even, subnormals kept), rounded to an
/// integer with ``rounding``, the zero point added, and the sum saturated to [-128, 127].
/// NaN and ±0 give the zero point, +inf 127, -inf -128.
///
/// Args:
///     x: ``float32``, ``float16`` or ``ml_dtypes.bfloat16`` array of rank 0 to 6, read in
///         place (C order, Fortran order or any strided view with nonnegative,
///         non-overlapping strides); ``uint16`` storage needs ``dtype="bf16"`` or ``"f16"``.
///         Anything else goes through ``np.asarray(x, copy=False)``, so a copy is never
///         made silently (PyTorch CPU tensors and JAX CPU arrays are read in place); an
///         object that would need a copy (a list, a float) is a ``TypeError``.
///     multiplier: the factor (it multiplies, it is not a scale to divide by): finite and
///         > 0. A Python float is rounded once to binary32 (nearest-even); a
///         ``numpy.float32`` is taken exactly.
///     zero_point: integer in [-128, 127], added after rounding.
///     rounding: ``"nearest-even"``, ``"toward-zero"``, ``"toward-positive"`` or
///         ``"toward-negative"``.
///     dtype: ``"f32"``, ``"bf16"``, ``"f16"`` or a NumPy dtype: the input's format (needed
///         for ``uint16`` storage; must agree with a float array's dtype).
///     out: optional ``int8`` array of ``x``'s shape, any admissible strides: only the
///         bytes of its elements are written (gaps keep their values).
///     threads: native threads to split the call over (``Prepared::split``), same bytes.
///     exact: use the exact integer route, which does not depend on the thread's FP
///         environment (flush-to-zero or denormals-are-zero make the SIMD routes refuse).
///
/// Returns:
///     ``out``, or a new C-order ``int8`` array of ``x``'s shape.
///
/// Raises:
///     SimakError: a broken rule, with ``.code`` from docs/errors.md: dtype (5), rank (6),
///         multiplier not finite (13) or not > 0 (14), zero point (15), shape of ``out``
///         (0x202), a view that cannot be read in place (19, 20, 28, 0x604), misaligned
///         data (0x403), overlapping ``x`` and ``out`` (0x407), FP environment (0x408),
///         read-only ``out`` (0x605), a bad option string (0x601).
///     ValueError: ``threads`` < 1.
#[pyfunction]
#[pyo3(signature = (x, multiplier, zero_point=None, rounding="nearest-even", dtype=None, out=None, threads=1, exact=false))]
#[pyo3(
    text_signature = "(x, multiplier, zero_point=0, rounding='nearest-even', dtype=None, out=None, threads=1, exact=False)"
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn quantize<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    multiplier: &Bound<'py, PyAny>,
    zero_point: Option<&Bound<'py, PyAny>>,
    rounding: &str,
    dtype: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
    exact: bool,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let threads = check_threads(threads)?;
        let params = quant_params(py, multiplier, zero_point, rounding)?;
        let (dt, gin) = read_input(py, x, dtype, 0)?;
        let (oa, gout) = match out {
            Some(o) => {
                let oa = int8_out(py, o)?;
                let g = Geometry::read(py, &oa, "out", 0)?;
                check_same_rank(py, &gin, &g)?;
                (Some(oa), Some(g))
            }
            None => (None, None),
        };
        let out_spec = match &gout {
            Some(g) => g.spec(DType::I8),
            None => DynSpec::contiguous(gin.extents(), DType::I8),
        };
        let plan = quant::check_inference_dyn(&quant::DynRequest {
            input: gin.spec(dt),
            output: out_spec,
            params,
        })
        .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
        let prepared = if exact {
            a65::quant::prepare_exact(&plan)
        } else {
            a65::quant::prepare(&plan)
        };
        let (oa, gout) = match (oa, gout) {
            (Some(a), Some(g)) => (a, g),
            _ => {
                let a = new_array::<i8>(py, gin.extents())?;
                let g = Geometry::read(py, &a, "out", 0)?;
                (a, g)
            }
        };
        run_quant(py, &prepared, &gin, &gout, threads, QUANT_NAMES)?;
        Ok(oa.into_any())
    })
}

/// A Quant plan: shape, dtype, parameters and strides admitted once, the A65 route chosen
/// once; ``execute`` then runs it on arrays of exactly that geometry with the least
/// per-call work.
///
/// Args:
///     shape: logical extents in elements (rank 0 to 6).
///     dtype: ``"f32"``, ``"bf16"``, ``"f16"`` or a NumPy dtype.
///     multiplier, zero_point, rounding: as for :func:`quantize`.
///     input_strides, output_strides: byte strides per axis (``None``: C order), as
///         NumPy's ``.strides`` gives them.
///     exact: the exact integer route (independent of the FP environment).
///
/// Raises:
///     SimakError: the admission rules, as :func:`quantize`; a negative extent or stride
///         (0x608).
#[pyclass(frozen, module = "simak")]
pub(crate) struct QuantPlan {
    pub(crate) prepared: a65::quant::Prepared,
    exact: bool,
    input_strided: bool,
    output_strided: bool,
}

/// A plan's constructor arguments, for pickling: shape, dtype, multiplier, zero point,
/// rounding, input strides, output strides (`None`: C order) and `exact`.
type QuantPlanArgs = (
    Vec<u64>,
    &'static str,
    f64,
    i32,
    &'static str,
    Option<Vec<u64>>,
    Option<Vec<u64>>,
    bool,
);

#[pymethods]
impl QuantPlan {
    #[new]
    #[pyo3(signature = (shape, dtype, multiplier, zero_point=None, rounding="nearest-even", input_strides=None, output_strides=None, exact=false))]
    #[pyo3(
        text_signature = "(shape, dtype, multiplier, zero_point=0, rounding='nearest-even', input_strides=None, output_strides=None, exact=False)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: &Bound<'_, PyAny>,
        multiplier: &Bound<'_, PyAny>,
        zero_point: Option<&Bound<'_, PyAny>>,
        rounding: &str,
        input_strides: Option<&Bound<'_, PyAny>>,
        output_strides: Option<&Bound<'_, PyAny>>,
        exact: bool,
    ) -> PyResult<QuantPlan> {
        guarded(py, || {
            let extents = parse_u64s(shape, "shape")?;
            let dt = parse_dtype(py, dtype)?;
            let params = quant_params(py, multiplier, zero_point, rounding)?;
            let si = parse_strides(input_strides, "input_strides")?;
            let so = parse_strides(output_strides, "output_strides")?;
            let plan = quant::check_inference_dyn(&quant::DynRequest {
                input: port_spec(&extents, si.as_deref(), dt),
                output: port_spec(&extents, so.as_deref(), DType::I8),
                params,
            })
            .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
            let prepared = if exact {
                a65::quant::prepare_exact(&plan)
            } else {
                a65::quant::prepare(&plan)
            };
            Ok(QuantPlan {
                prepared,
                exact,
                input_strided: si.is_some(),
                output_strided: so.is_some(),
            })
        })
    }

    /// Quantizes ``x`` (an array of exactly the plan's shape, dtype and input strides) into
    /// ``out`` (``int8``, the plan's output strides) or a new array.
    ///
    /// Without ``out=``, the new array is C order, or for a plan with ``output_strides`` a
    /// strided view over a zeroed buffer of ``output_span`` bytes.
    ///
    /// Raises:
    ///     SimakError: ``x`` or ``out`` does not have the plan's geometry or dtype (0x202
    ///         for the shape), and the execution errors of :func:`quantize`.
    #[pyo3(signature = (x, out=None, threads=1))]
    fn execute<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        threads: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(py, || {
            let threads = check_threads(threads)?;
            let plan = self.prepared.plan();
            let gin = read_plan_input(py, x, plan.input(), 0, QUANT_NAMES)?;
            let (oa, gout) = match out {
                Some(o) => {
                    let oa = int8_out(py, o)?;
                    let g = Geometry::read(py, &oa, "out", 0)?;
                    if !g.matches(plan.output()) {
                        let v = g
                            .spec(DType::I8)
                            .admit(Port::Output)
                            .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
                        same_geometry(py, &v, plan.output(), "out", "output")?;
                    }
                    (oa, g)
                }
                None => {
                    let a = if self.output_strided {
                        strided_int8(py, plan.output())?
                    } else {
                        new_array::<i8>(py, &plan.input().extents()[..plan.input().rank()])?
                    };
                    let g = Geometry::read(py, &a, "out", 0)?;
                    (a, g)
                }
            };
            run_quant(py, &self.prepared, &gin, &gout, threads, QUANT_NAMES)?;
            Ok(oa.into_any())
        })
    }

    /// The A65 route chosen once for this plan, e.g. ``"x86_64-avx512"`` or
    /// ``"exact-scalar"`` (a diagnostic name, not an API contract).
    #[getter]
    fn implementation(&self) -> &'static str {
        self.prepared.implementation()
    }

    /// Logical extents in elements.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.prepared.plan().input();
        PyTuple::new(py, &v.extents()[..v.rank()])
    }

    /// The input dtype name: ``"f32"``, ``"bf16"`` or ``"f16"``.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.prepared.plan().input().dtype().name()
    }

    /// The multiplier (a float holding the binary32 value exactly).
    #[getter]
    fn multiplier(&self) -> f64 {
        f64::from(f32::from_bits(
            self.prepared.plan().params().multiplier_bits,
        ))
    }

    /// The multiplier's binary32 bits.
    #[getter]
    fn multiplier_bits(&self) -> u32 {
        self.prepared.plan().params().multiplier_bits
    }

    /// The zero point.
    #[getter]
    fn zero_point(&self) -> i32 {
        self.prepared.plan().zero_point()
    }

    /// The rounding mode name.
    #[getter]
    fn rounding(&self) -> &'static str {
        self.prepared.plan().rounding().name()
    }

    /// Input byte strides as admitted (axes of extent 0 or 1 carry 0).
    #[getter]
    fn input_strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.prepared.plan().input();
        PyTuple::new(py, &v.strides()[..v.rank()])
    }

    /// Output byte strides as admitted (axes of extent 0 or 1 carry 0).
    #[getter]
    fn output_strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.prepared.plan().output();
        PyTuple::new(py, &v.strides()[..v.rank()])
    }

    /// Bytes the input port spans (0 when empty).
    #[getter]
    fn input_span(&self) -> u64 {
        self.prepared.plan().input().span()
    }

    /// Bytes the output port spans (0 when empty).
    #[getter]
    fn output_span(&self) -> u64 {
        self.prepared.plan().output().span()
    }

    /// Number of elements.
    #[getter]
    fn elements(&self) -> u64 {
        self.prepared.plan().elements()
    }

    /// Whether the plan uses the exact route.
    #[getter]
    fn exact(&self) -> bool {
        self.exact
    }

    /// Pickling: the plan's request (shape, dtype, multiplier, zero point, rounding,
    /// strides, ``exact``), admitted again by the constructor when loaded, so a pickle
    /// whose arguments break a rule raises :class:`SimakError`.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, pyo3::types::PyType>, QuantPlanArgs)> {
        let this = slf.get();
        let plan = this.prepared.plan();
        let (vi, vo) = (plan.input(), plan.output());
        let strides = |v: &simak::View| v.strides()[..v.rank()].to_vec();
        let args = (
            vi.extents()[..vi.rank()].to_vec(),
            vi.dtype().name(),
            f64::from(f32::from_bits(plan.params().multiplier_bits)),
            plan.zero_point(),
            plan.rounding().name(),
            this.input_strided.then(|| strides(vi)),
            this.output_strided.then(|| strides(vo)),
            this.exact,
        );
        Ok((slf.get_type(), args))
    }

    fn __repr__(&self) -> String {
        let plan = self.prepared.plan();
        let v = plan.input();
        format!(
            "QuantPlan(shape={:?}, dtype={:?}, multiplier={}, zero_point={}, rounding={:?}, implementation={:?})",
            &v.extents()[..v.rank()],
            v.dtype().name(),
            f32::from_bits(plan.params().multiplier_bits),
            plan.zero_point(),
            plan.rounding().name(),
            self.prepared.implementation()
        )
    }
}

/// The test seam of SPEC §10: Quant with the FP control word supplied instead of read from
/// the register (the register is never changed). Not public API.
#[pyfunction]
#[pyo3(signature = (x, multiplier, control, exact=false))]
pub(crate) fn _quantize_with_fp_control<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    multiplier: &Bound<'py, PyAny>,
    control: u64,
    exact: bool,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let xa = as_array(x)?;
        let dt = input_dtype(py, &xa, "x", None)?;
        let gin = Geometry::read(py, &xa, "x", 0)?;
        let plan = quant::check_inference_dyn(&quant::DynRequest {
            input: gin.spec(dt),
            output: DynSpec::contiguous(gin.extents(), DType::I8),
            params: Params::from_bits(multiplier_bits(multiplier)?),
        })
        .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
        let prepared = if exact {
            a65::quant::prepare_exact(&plan)
        } else {
            a65::quant::prepare(&plan)
        };
        let out = new_array::<i8>(py, gin.extents())?;
        let g = Geometry::read(py, &out, "out", 0)?;
        // SAFETY: as in `run_quant`: admission spans over live arrays; `out` is new.
        let (inp, outp) = unsafe {
            (
                input_slice(gin.address, plan.input().span()),
                output_slice(g.address, plan.output().span()),
            )
        };
        a65::execute_with_fp_control(&prepared, inp, outp, Some(control))
            .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
        Ok(out.into_any())
    })
}
