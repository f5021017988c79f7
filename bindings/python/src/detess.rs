//! The output side (SPEC §12): `detess`, `detess_cast`, `detess_dequant`, the reusable
//! `DetessPlan`, and `untile` (Detess at offset 0). One head per call: a layout over the
//! head's bytes at `offset` in an OFM buffer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use simak::a65::{self, ExecuteError, HostOp, PortNeed};
use simak::ops::casttess::TiledSpec;
use simak::ops::dequant::Params;
use simak::ops::detess as detess_op;
use simak::ops::{detesscast, detessdequant};
use simak::{AdmissionError, DType, DynSpec, View};

use crate::args::{check_threads, multiplier_bits, parse_strides, port_spec, repr};
use crate::arrays::{
    Geometry, as_out_array, bfloat16, data_address, input_slice, new_array_of, num, output_slice,
    ranges_overlap,
};
use crate::errors::{
    Names, PY_OFM_OFFSET, PY_OFM_SHORT, PY_OUT_DTYPE, PY_OUT_SHAPE, guarded, lib_error, simak_error,
};
use crate::layout::{Layout, tiled_input};
use crate::run::run_detached;

/// The argument names of the Detess ops, for messages.
pub(crate) const OFM_NAMES: Names = Names {
    input: "ofm",
    output: "out",
};

/// Which of the three Detess ops.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// Detess: the layout's dtype out.
    Detess,
    /// DetessCast: BF16 → FP32.
    Cast,
    /// DetessDequant: INT8 / INT16 / INT32 → FP32 / FP16 / BF16.
    Dequant,
}

impl Kind {
    /// The Python name: the function's.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Kind::Detess => "detess",
            Kind::Cast => "detess_cast",
            Kind::Dequant => "detess_dequant",
        }
    }

    fn parse(py: Python<'_>, s: &str) -> PyResult<Kind> {
        match s {
            "detess" => Ok(Kind::Detess),
            "detess_cast" => Ok(Kind::Cast),
            "detess_dequant" => Ok(Kind::Dequant),
            other => {
                let code = simak::error::BINDING_INVALID_ENUM;
                Err(simak_error(
                    py,
                    code,
                    format!(
                        "op={other:?} is none of \"detess\", \"detess_cast\", \"detess_dequant\""
                    ),
                ))
            }
        }
    }
}

/// A prepared head: one of the three A65 ops.
pub(crate) enum Prepared {
    Detess(a65::detess::Prepared),
    Cast(a65::detesscast::Prepared),
    /// Shared with the cache of recent plans ([`prepared_cached`]).
    Dequant(Arc<a65::detessdequant::Prepared>),
}

/// How many prepared plans of recent calls each cache keeps.
const CACHED_PLANS: usize = 8;

/// A cache of prepared plans of recent calls, most recent first, keyed by the checked
/// plan (whose equality is the whole request: geometry, dtypes, parameters).
pub(crate) type PlanCache<P, T> = Mutex<VecDeque<(P, Arc<T>)>>;

/// The prepared plan of `plan` from `cache`, or made by `prepare` and added (the least
/// recent entry dropped). The functions (`detess_dequant`, `dequantize`) call with the
/// same request frame after frame, and preparing builds the dequantization table of every
/// code (INT8: 256 entries, microseconds; INT16: 65,536, about a millisecond), which
/// would otherwise be paid on every call.
pub(crate) fn prepared_cached<P: PartialEq + Copy, T>(
    cache: &PlanCache<P, T>,
    plan: &P,
    prepare: impl FnOnce(&P) -> T,
) -> Arc<T> {
    {
        let mut entries = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = entries.iter().position(|(p, _)| p == plan)
            && let Some(entry) = entries.remove(k)
        {
            let prepared = Arc::clone(&entry.1);
            entries.push_front(entry);
            return prepared;
        }
    }
    // Prepared without the lock: another thread may do the same meanwhile (harmless).
    let prepared = Arc::new(prepare(plan));
    let mut entries = cache.lock().unwrap_or_else(|e| e.into_inner());
    entries.push_front((*plan, Arc::clone(&prepared)));
    entries.truncate(CACHED_PLANS);
    prepared
}

/// Prepared DetessDequant plans of recent calls.
static DETESS_DEQUANT_PLANS: PlanCache<detessdequant::Plan, a65::detessdequant::Prepared> =
    Mutex::new(VecDeque::new());

/// Runs `$body` with `$p` bound to the prepared op of any kind, `$O` to its op type.
macro_rules! each {
    ($self:expr, |$p:ident| $body:expr) => {
        match $self {
            Prepared::Detess($p) => $body,
            Prepared::Cast($p) => $body,
            Prepared::Dequant(a) => {
                let $p = &**a;
                $body
            }
        }
    };
}

/// The port needs of a prepared op.
fn needs_of<O: HostOp>(p: &a65::Prepared<O>) -> (PortNeed, PortNeed) {
    O::needs(p.plan())
}

impl Prepared {
    /// Admits and prepares: the layout's tiled input, `output` (extents the layout's),
    /// and for DetessDequant the parameters.
    fn admit(
        layout: &Layout,
        kind: Kind,
        output: DynSpec<'_>,
        params: Params,
    ) -> Result<Prepared, AdmissionError> {
        let view = &layout.view;
        let input = TiledSpec {
            extents: &view.extents()[..view.rank()],
            dtype: layout.dtype,
            layout: *view.layout(),
        };
        Ok(match kind {
            Kind::Detess => {
                let plan =
                    detess_op::check_inference_dyn(&detess_op::DynRequest { input, output })?;
                Prepared::Detess(a65::detess::prepare(&plan))
            }
            Kind::Cast => {
                let plan =
                    detesscast::check_inference_dyn(&detess_op::DynRequest { input, output })?;
                Prepared::Cast(a65::detesscast::prepare(&plan))
            }
            Kind::Dequant => {
                let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
                    input,
                    output,
                    params,
                })?;
                Prepared::Dequant(prepared_cached(
                    &DETESS_DEQUANT_PLANS,
                    &plan,
                    a65::detessdequant::prepare,
                ))
            }
        })
    }

    fn needs(&self) -> (PortNeed, PortNeed) {
        each!(self, |p| needs_of(p))
    }

    fn output(&self) -> &View {
        each!(self, |p| p.plan().output())
    }

    fn elements(&self) -> u64 {
        each!(self, |p| p.plan().elements())
    }

    fn implementation(&self) -> &'static str {
        each!(self, |p| p.implementation())
    }

    fn execute(&self, threads: usize, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
        each!(self, |p| a65::execute_threaded(p, threads, input, output))
    }
}

/// A NumPy dtype's simak dtype, for an output array (`uint16` is BF16 storage).
fn array_dtype(py: Python<'_>, descr: &Bound<'_, PyArrayDescr>) -> Option<DType> {
    if descr.itemsize() > 1 && descr.is_native_byteorder() == Some(false) {
        return None;
    }
    let n = descr.num();
    let table = [
        (NPY_TYPES::NPY_FLOAT, DType::F32),
        (NPY_TYPES::NPY_HALF, DType::F16),
        (NPY_TYPES::NPY_BYTE, DType::I8),
        (NPY_TYPES::NPY_SHORT, DType::I16),
        (NPY_TYPES::NPY_INT, DType::I32),
        (NPY_TYPES::NPY_USHORT, DType::BF16),
    ];
    if bfloat16(py).is_some_and(|(b, _)| b == n) {
        return Some(DType::BF16);
    }
    table
        .into_iter()
        .find(|&(t, _)| num(t) == n)
        .map(|(_, d)| d)
}

/// The NumPy name of a dtype, for messages and the default dtypes of new arrays.
pub(crate) const fn numpy_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
    }
}

/// The NumPy dtype of a simak dtype (`ml_dtypes.bfloat16` for BF16).
pub(crate) fn numpy_descr(py: Python<'_>, d: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
    static F16: PyOnceLock<Py<PyArrayDescr>> = PyOnceLock::new();
    Ok(match d {
        DType::F32 => numpy::dtype::<f32>(py),
        DType::I8 => numpy::dtype::<i8>(py),
        DType::I16 => numpy::dtype::<i16>(py),
        DType::I32 => numpy::dtype::<i32>(py),
        DType::F16 => F16
            .get_or_try_init(py, || {
                Ok::<_, PyErr>(PyArrayDescr::new(py, "float16")?.unbind())
            })?
            .bind(py)
            .clone(),
        DType::BF16 => bfloat16(py)
            .ok_or_else(|| {
                PyValueError::new_err(
                    "ml_dtypes is not importable: it is needed for bfloat16 results",
                )
            })?
            .1
            .clone(),
    })
}

/// An `out_dtype=` argument: `float32`, `float16` or `ml_dtypes.bfloat16` (or `"f32"`,
/// `"f16"`, `"bf16"`).
pub(crate) fn float_out_dtype(py: Python<'_>, d: &Bound<'_, PyAny>) -> PyResult<DType> {
    let bad = || {
        let code = simak::error::BINDING_INVALID_ENUM;
        simak_error(
            py,
            code,
            format!(
                "out_dtype={} is none of numpy.float32, numpy.float16, ml_dtypes.bfloat16 (or \"f32\", \"f16\", \"bf16\")",
                repr(d)
            ),
        )
    };
    crate::args::parse_dtype(py, d).map_err(|_| bad())
}

/// An `out=` array of the op's output dtype `want` and the layout's (or input's) logical
/// `shape`: writeable (0x605), the dtype (`PY_OUT_DTYPE`), the shape
/// (`PY_OUT_SHAPE`), nonnegative strides (0x604).
pub(crate) fn checked_out<'py>(
    py: Python<'py>,
    out: &Bound<'py, PyAny>,
    want: DType,
    shape: &[u64],
) -> PyResult<(Bound<'py, PyUntypedArray>, Geometry)> {
    let oa = as_out_array(py, out, "out")?;
    let dtype = oa.dtype();
    let found = array_dtype(py, &dtype);
    if found != Some(want) {
        let code = PY_OUT_DTYPE;
        return Err(simak_error(
            py,
            code,
            format!(
                "out= has dtype {}; this call writes {}",
                repr(dtype.as_any()),
                numpy_name(want)
            ),
        ));
    }
    let got: Vec<u64> = oa.shape().iter().map(|&e| e as u64).collect();
    if got != shape {
        let code = PY_OUT_SHAPE;
        return Err(simak_error(
            py,
            code,
            format!(
                "out= has shape {got:?}; this call writes the logical shape {shape:?} (any strides, e.g. a transposed view)"
            ),
        ));
    }
    let g = Geometry::read(py, &oa, "out", 0)?;
    Ok((oa, g))
}

/// The OFM buffer of a call: a C-contiguous `uint8` (or `int8`) array or bytes-like
/// object, its data address and length in bytes.
struct Ofm<'py> {
    /// Keeps the buffer alive for the call.
    _array: Bound<'py, PyUntypedArray>,
    address: usize,
    len: u64,
}

/// Reads `ofm`: the dtype (5), C-contiguity (0x607).
fn read_ofm<'py>(py: Python<'py>, ofm: &Bound<'py, PyAny>, name: &str) -> PyResult<Ofm<'py>> {
    let a = tiled_input(py, ofm, name)?;
    let n = a.dtype().num();
    if n != num(NPY_TYPES::NPY_UBYTE) && n != num(NPY_TYPES::NPY_BYTE) {
        let code = 5;
        return Err(simak_error(
            py,
            code,
            format!(
                "{name} has dtype {}; the MLA's output is read as the bytes of a uint8 buffer (np.frombuffer(data, np.uint8))",
                repr(a.dtype().as_any())
            ),
        ));
    }
    if !a.is_c_contiguous() {
        let code = simak::error::BINDING_NOT_CONTIGUOUS;
        return Err(simak_error(
            py,
            code,
            format!(
                "{name} must be a C-contiguous buffer of bytes; pass np.ascontiguousarray({name})"
            ),
        ));
    }
    Ok(Ofm {
        address: data_address(&a),
        len: a.len() as u64,
        _array: a,
    })
}

/// The head's start in the OFM: `offset` in `0..=len` (`PY_OFM_OFFSET`; an offset
/// equal to the length only for an empty head) and `offset + span <= len` (`short_code`:
/// `PY_OFM_SHORT`, or 0x411 for `untile`).
fn head_address(
    py: Python<'_>,
    ofm: &Ofm<'_>,
    offset: i128,
    span: u64,
    short_code: u32,
    name: &str,
) -> PyResult<usize> {
    let len = ofm.len;
    let at_end_ok = span == 0;
    let off = u64::try_from(offset)
        .ok()
        .filter(|&o| o < len || (o == len && at_end_ok));
    let Some(off) = off else {
        let code = PY_OFM_OFFSET;
        return Err(simak_error(
            py,
            code,
            format!(
                "offset={offset} is not a byte offset inside {name} ({len} bytes): 0 <= offset < {len}"
            ),
        ));
    };
    if len - off < span {
        let code = short_code;
        return Err(simak_error(
            py,
            code,
            format!(
                "{name} holds {} bytes from offset {off} but the layout's head spans {span} bytes (layout.capacity): the buffer is too short",
                len - off
            ),
        ));
    }
    // `off <= len`, and `len` bytes lie at `address`.
    Ok(ofm.address + off as usize)
}

/// Runs `prepared` on the head at `address` into the output storage at `out_address`,
/// checked before any write. A head whose address is not aligned as the op needs (16
/// bytes for tile alignment 16, the element size otherwise) is first copied into an
/// aligned buffer (a bytes object or an odd offset cannot promise alignment).
fn run_head(
    py: Python<'_>,
    prepared: &Prepared,
    address: usize,
    out_address: usize,
    threads: usize,
) -> PyResult<()> {
    let (need_in, _) = prepared.needs();
    let out_span = prepared.output().span();
    let span = need_in.span;
    if ranges_overlap(address, span, out_address, out_span) {
        return Err(lib_error(py, ExecuteError::Overlap, OFM_NAMES));
    }
    // SAFETY: `address..address + span` lies in the live OFM buffer (checked by
    // `head_address`, kept alive by the caller); the output range is admission's span for
    // the live, writeable output array's own geometry; the two were just checked disjoint.
    let (head, outp) = unsafe {
        (
            input_slice(address, span),
            output_slice(out_address, out_span),
        )
    };
    let aligned: Vec<u8>;
    let head = if address.is_multiple_of(need_in.align.max(1)) {
        head
    } else {
        let align = need_in.align;
        let mut buf = vec![0u8; head.len() + align];
        let skip = (align - buf.as_ptr() as usize % align) % align;
        buf[skip..skip + head.len()].copy_from_slice(head);
        aligned = buf;
        &aligned[skip..skip + head.len()]
    };
    run_detached(py, prepared.elements(), || {
        prepared.execute(threads, head, outp)
    })
    .map_err(|e| lib_error(py, e, OFM_NAMES))
}

/// A new output array of `shape` and dtype `d`: C order, or with `strides` (bytes) over
/// a zeroed buffer of `span` bytes.
fn new_out<'py>(
    py: Python<'py>,
    d: DType,
    shape: &[u64],
    strided: Option<&View>,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let descr = numpy_descr(py, d)?;
    let Some(view) = strided else {
        return new_array_of(py, descr, shape);
    };
    let np = py.import("numpy")?;
    let buffer = np.call_method1("zeros", (view.span().max(1), np.getattr("uint8")?))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", descr)?;
    kwargs.set_item("buffer", buffer)?;
    kwargs.set_item("strides", PyTuple::new(py, &view.strides()[..view.rank()])?)?;
    Ok(np
        .getattr("ndarray")?
        .call((PyTuple::new(py, shape)?,), Some(&kwargs))?
        .cast_into::<PyUntypedArray>()?)
}

/// The output dtype of an op on `layout`.
fn out_dtype_of(kind: Kind, layout: &Layout, dequant_out: DType) -> DType {
    match kind {
        Kind::Detess => layout.dtype,
        Kind::Cast => DType::F32,
        Kind::Dequant => dequant_out,
    }
}

/// A dequantization zero point for codes of `dtype`: an integer in the dtype's range,
/// else the admission error 0x223 (the value named as given, however large).
pub(crate) fn dequant_zero_point(
    py: Python<'_>,
    zp: Option<&Bound<'_, PyAny>>,
    dtype: DType,
) -> PyResult<i32> {
    let Some(zp) = zp else { return Ok(0) };
    let v: i128 = zp.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "zero_point must be an integer, not {}",
            repr(zp)
        ))
    })?;
    let (min, max) = dtype.int_range().unwrap_or((i64::MIN, i64::MAX));
    match i32::try_from(v) {
        Ok(z) if i128::from(min) <= v && v <= i128::from(max) => Ok(z),
        _ => {
            let code = AdmissionError::DequantZeroPoint {
                dtype,
                zero_point: 0,
            }
            .code();
            Err(simak_error(
                py,
                code,
                format!(
                    "zero point {v} is outside [{min}, {max}], the range of {} codes",
                    dtype.name()
                ),
            ))
        }
    }
}

/// One call of a Detess op (the functions and `untile`).
#[allow(clippy::too_many_arguments)]
fn call<'py>(
    py: Python<'py>,
    ofm: &Bound<'py, PyAny>,
    layout: &Layout,
    kind: Kind,
    params: Params,
    dequant_out: DType,
    offset: i128,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
    short_code: u32,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let threads = check_threads(threads)?;
    let ofm = read_ofm(py, ofm, name)?;
    let view = &layout.view;
    let shape = &view.extents()[..view.rank()];
    let address = head_address(py, &ofm, offset, view.capacity(), short_code, name)?;
    let want = out_dtype_of(kind, layout, dequant_out);
    let given = out.map(|o| checked_out(py, o, want, shape)).transpose()?;
    let spec = match &given {
        Some((_, g)) => g.spec(want),
        None => DynSpec::contiguous(shape, want),
    };
    let prepared =
        Prepared::admit(layout, kind, spec, params).map_err(|e| lib_error(py, e, OFM_NAMES))?;
    let (oa, out_address) = match given {
        Some((a, g)) => (a, g.address),
        None => {
            let a = new_out(py, want, shape, None)?;
            let address = data_address(&a);
            (a, address)
        }
    };
    run_head(py, &prepared, address, out_address, threads)?;
    Ok(oa.into_any())
}

/// Parameters of DetessDequant from Python arguments.
fn dequant_params(
    py: Python<'_>,
    layout: &Layout,
    multiplier: &Bound<'_, PyAny>,
    zero_point: Option<&Bound<'_, PyAny>>,
) -> PyResult<Params> {
    let bits = multiplier_bits(multiplier)?;
    let zp = dequant_zero_point(py, zero_point, layout.dtype)?;
    Ok(Params::from_bits(bits).with_zero_point(zp))
}

/// Detess (SPEC §12): one head of the MLA's output, in ``layout``, back to its logical
/// tensor in the layout's dtype, never reading padding.
///
/// Args:
///     ofm: the OFM buffer: a 1-D C-contiguous ``uint8`` (or ``int8``) array, or a
///         ``bytes``, ``bytearray`` or C-contiguous ``memoryview``, read in place.
///     layout: the head's :class:`Layout` (its ``dtype`` is the stored dtype; a batch of
///         frames is its leading outer axis). The head spans ``layout.capacity`` bytes.
///     offset: the head's byte offset in ``ofm`` (a multi-head OFM: the sum of the spans
///         of the heads before it, or the offset the model names).
///     out: optional array of ``layout.shape`` and the layout's dtype, any nonnegative,
///         non-overlapping strides (an NCHW view of NHWC data, for example): only its
///         elements are written.
///     threads: native threads to split the call over (same bytes).
///
/// Returns:
///     ``out``, or a new C-order array of ``layout.shape``: ``int8``, ``int16``, ``int32``
///     or ``ml_dtypes.bfloat16``.
///
/// Raises:
///     SimakError: ``ofm`` not bytes (5), not C-contiguous (0x607); ``offset`` outside
///         ``ofm`` (0x611); fewer than ``layout.capacity`` bytes from ``offset`` (0x610);
///         ``out`` of another dtype (0x612) or shape (0x613), read-only (0x605), with
///         negative (0x604), zero (21) or overlapping strides (29, 0x203); the c16 rule of
///         PadTo16 and CBlock16 inputs (0x224). Nothing is written on error.
///     ValueError: ``threads`` < 1.
#[pyfunction]
#[pyo3(signature = (ofm, layout, offset=0, out=None, threads=1))]
#[pyo3(text_signature = "(ofm, layout, offset=0, out=None, threads=1)")]
pub(crate) fn detess<'py>(
    py: Python<'py>,
    ofm: &Bound<'py, PyAny>,
    layout: &Bound<'py, Layout>,
    offset: i128,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let params = Params::from_bits(0);
        call(
            py,
            ofm,
            layout.get(),
            Kind::Detess,
            params,
            DType::F32,
            offset,
            out,
            threads,
            PY_OFM_SHORT,
            "ofm",
        )
    })
}

/// DetessCast (SPEC §12): one BF16 head of the MLA's output to FP32, ``bits << 16`` for
/// every pattern (NaN payloads kept).
///
/// Args:
///     ofm, layout, offset, threads: as for :func:`detess`; ``layout.dtype`` is
///         ``"bf16"``.
///     out: optional ``float32`` array of ``layout.shape``, any admissible strides.
///
/// Returns:
///     ``out``, or a new C-order ``float32`` array of ``layout.shape``.
///
/// Raises:
///     SimakError: as :func:`detess`; a layout of another dtype (5).
#[pyfunction]
#[pyo3(signature = (ofm, layout, offset=0, out=None, threads=1))]
#[pyo3(text_signature = "(ofm, layout, offset=0, out=None, threads=1)")]
pub(crate) fn detess_cast<'py>(
    py: Python<'py>,
    ofm: &Bound<'py, PyAny>,
    layout: &Bound<'py, Layout>,
    offset: i128,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        call(
            py,
            ofm,
            layout.get(),
            Kind::Cast,
            Params::from_bits(0),
            DType::F32,
            offset,
            out,
            threads,
            PY_OFM_SHORT,
            "ofm",
        )
    })
}

/// The dequantization output dtype: `out_dtype=` if given, else `out=`'s dtype if given,
/// else FP32.
fn dequant_out_dtype(
    py: Python<'_>,
    out_dtype: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
) -> PyResult<DType> {
    if let Some(d) = out_dtype {
        return float_out_dtype(py, d);
    }
    if let Some(o) = out
        && let Ok(a) = o.cast::<PyUntypedArray>()
        && let Some(d @ (DType::F32 | DType::F16 | DType::BF16)) = array_dtype(py, &a.dtype())
        && a.dtype().num() != num(NPY_TYPES::NPY_USHORT)
    {
        return Ok(d);
    }
    Ok(DType::F32)
}

/// DetessDequant (SPEC §12, §12.2): one INT8 / INT16 / INT32 head of the MLA's output to
/// real values, ``(q - zero_point) / multiplier`` per element: the difference exact in
/// 64 bits, rounded once to binary32, divided with one binary32 rounding (nearest-even,
/// subnormals kept), then rounded to the output dtype (FP16: nearest-even, overflow to
/// inf; BF16: SPEC §4). Exactly ``dequantize(detess(ofm, layout), ...)``; independent of
/// the FP environment.
///
/// Args:
///     ofm, layout, offset, threads: as for :func:`detess`; ``layout.dtype`` is ``"i8"``,
///         ``"i16"`` or ``"i32"``.
///     multiplier: the quantization multiplier (finite, > 0; the output divides by it);
///         a Python float is rounded once to binary32, a ``numpy.float32`` taken exactly.
///     zero_point: integer in the stored dtype's range (INT8 [-128, 127], INT16
///         [-32768, 32767], INT32 any i32).
///     out_dtype: ``numpy.float32`` (the default), ``numpy.float16`` or
///         ``ml_dtypes.bfloat16`` (or ``"f32"``, ``"f16"``, ``"bf16"``); when omitted
///         with ``out=``, ``out``'s dtype.
///     out: optional array of ``layout.shape`` and ``out_dtype``, any admissible strides.
///
/// Returns:
///     ``out``, or a new C-order array of ``layout.shape`` and ``out_dtype``.
///
/// Raises:
///     SimakError: as :func:`detess`; a layout of another dtype (5); multiplier not
///         finite (13) or not > 0 (14); zero point outside the dtype's range (0x223); a
///         bad ``out_dtype`` (0x601).
#[pyfunction]
#[pyo3(signature = (ofm, layout, multiplier, zero_point=None, out_dtype=None, offset=0, out=None, threads=1))]
#[pyo3(
    text_signature = "(ofm, layout, multiplier, zero_point=0, out_dtype=numpy.float32, offset=0, out=None, threads=1)"
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn detess_dequant<'py>(
    py: Python<'py>,
    ofm: &Bound<'py, PyAny>,
    layout: &Bound<'py, Layout>,
    multiplier: &Bound<'py, PyAny>,
    zero_point: Option<&Bound<'py, PyAny>>,
    out_dtype: Option<&Bound<'py, PyAny>>,
    offset: i128,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let layout = layout.get();
        let params = dequant_params(py, layout, multiplier, zero_point)?;
        let od = dequant_out_dtype(py, out_dtype, out)?;
        call(
            py,
            ofm,
            layout,
            Kind::Dequant,
            params,
            od,
            offset,
            out,
            threads,
            PY_OFM_SHORT,
            "ofm",
        )
    })
}

/// Reads a tiled buffer back into its logical tensor (SPEC §5, §12): :func:`detess` at
/// offset 0, never reading padding.
///
/// Args:
///     t: C-contiguous ``uint8`` (or ``int8``) array of at least ``layout.capacity``
///         bytes (as :func:`casttess` or :func:`quanttess` returns), or a ``bytes``,
///         ``bytearray`` or C-contiguous ``memoryview`` of them, read in place.
///     layout: the :class:`Layout` it was written with.
///
/// Returns:
///     A new C-order array of ``layout.shape``: ``ml_dtypes.bfloat16`` for a ``"bf16"``
///     layout, ``int8``, ``int16`` or ``int32`` for ``"i8"``, ``"i16"``, ``"i32"``.
///
/// Raises:
///     SimakError: ``t`` shorter than the capacity (0x411), not C-contiguous (0x607),
///         of another dtype than ``uint8`` or ``int8`` (5).
#[pyfunction]
pub(crate) fn untile<'py>(
    py: Python<'py>,
    t: &Bound<'py, PyAny>,
    layout: &Bound<'py, Layout>,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let layout = layout.get();
        let result = call(
            py,
            t,
            layout,
            Kind::Detess,
            Params::from_bits(0),
            DType::F32,
            0,
            None,
            1,
            simak::layout::UntileError::Tiled {
                required: 0,
                found: 0,
            }
            .code(),
            "t",
        );
        match result {
            // SPEC §5's own buffers may have PadTo16 C tiles that are neither C nor a
            // multiple of 16, which the MLA never writes (0x224); their bytes follow the
            // same formula, read by the layout's own reader.
            Err(e) if error_code(py, &e) == Some(0x224) => untile_section5(py, t, layout),
            other => other,
        }
    })
}

/// The `code` of a `SimakError`.
fn error_code(py: Python<'_>, e: &PyErr) -> Option<u32> {
    e.value(py).getattr("code").ok()?.extract().ok()
}

/// SPEC §5's reader (`TiledView::untile`) for the layouts Detess refuses.
fn untile_section5<'py>(
    py: Python<'py>,
    t: &Bound<'py, PyAny>,
    layout: &Layout,
) -> PyResult<Bound<'py, PyAny>> {
    let view = layout.view;
    let ofm = read_ofm(py, t, "t")?;
    let shape = &view.extents()[..view.rank()];
    let out = new_out(py, layout.dtype, shape, None)?;
    let logical_len = view.elements() * view.planes() as u64;
    // SAFETY: `t` is a live C-contiguous buffer of `ofm.len` bytes (at least the
    // capacity, checked by the Detess call that led here); `out` is the new array of
    // `logical_len` bytes, which nothing else references; they cannot overlap.
    let (tiled, logical) = unsafe {
        (
            input_slice(ofm.address, ofm.len),
            output_slice(data_address(&out), logical_len),
        )
    };
    run_detached(py, view.elements(), || view.untile(tiled, logical))
        .map_err(|e| lib_error(py, e, OFM_NAMES))?;
    Ok(out.into_any())
}

/// A Detess-family plan: one head's layout, op, parameters and output strides admitted
/// once and the A65 kernel level chosen once (for INT8 and INT16 dequantization, the table
/// of every code built once); :meth:`run` then reads heads with the least per-call work.
///
/// Args:
///     layout: the head's :class:`Layout`.
///     op: ``"detess"`` (the layout's dtype), ``"detess_cast"`` (BF16 → ``float32``) or
///         ``"detess_dequant"`` (INT8 / INT16 / INT32 → ``out_dtype``).
///     multiplier, zero_point, out_dtype: as for :func:`detess_dequant` (only with
///         ``op="detess_dequant"``, which needs ``multiplier``).
///     output_strides: the output's byte strides per axis (``None``: C order), as NumPy's
///         ``.strides`` gives them (an NCHW view of NHWC data, for example).
///
/// Raises:
///     SimakError: the admission rules, as the functions; a bad ``op`` (0x601); a
///         ``multiplier`` for another op, or none for ``"detess_dequant"`` (0x601); a
///         negative stride (0x608).
#[pyclass(frozen, module = "simak")]
pub(crate) struct DetessPlan {
    prepared: Prepared,
    layout: Py<Layout>,
    kind: Kind,
    output_strided: bool,
}

/// A plan's constructor arguments, for pickling: layout, op, multiplier, zero point,
/// output dtype name, output strides (`None`: C order).
type DetessPlanArgs = (
    Py<Layout>,
    &'static str,
    Option<f64>,
    Option<i32>,
    Option<&'static str>,
    Option<Vec<u64>>,
);

impl DetessPlan {
    /// The prepared op of the head.
    pub(crate) fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    fn params(&self) -> Option<Params> {
        match &self.prepared {
            Prepared::Dequant(p) => Some(p.plan().params().params()),
            _ => None,
        }
    }
}

#[pymethods]
impl DetessPlan {
    #[new]
    #[pyo3(signature = (layout, op="detess", multiplier=None, zero_point=None, out_dtype=None, output_strides=None))]
    #[pyo3(
        text_signature = "(layout, op='detess', multiplier=None, zero_point=0, out_dtype=numpy.float32, output_strides=None)"
    )]
    fn new(
        py: Python<'_>,
        layout: &Bound<'_, Layout>,
        op: &str,
        multiplier: Option<&Bound<'_, PyAny>>,
        zero_point: Option<&Bound<'_, PyAny>>,
        out_dtype: Option<&Bound<'_, PyAny>>,
        output_strides: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<DetessPlan> {
        guarded(py, || {
            let kind = Kind::parse(py, op)?;
            let l = layout.get();
            let misuse = |what: &str| {
                let code = simak::error::BINDING_INVALID_ENUM;
                simak_error(py, code, format!("op={op:?} {what}"))
            };
            let (params, od) = match (kind, multiplier) {
                (Kind::Dequant, Some(m)) => (
                    dequant_params(py, l, m, zero_point)?,
                    out_dtype
                        .map(|d| float_out_dtype(py, d))
                        .transpose()?
                        .unwrap_or(DType::F32),
                ),
                (Kind::Dequant, None) => {
                    return Err(misuse("needs a multiplier"));
                }
                (_, None) if zero_point.is_none() && out_dtype.is_none() => {
                    (Params::from_bits(0), DType::F32)
                }
                _ => {
                    return Err(misuse(
                        "takes no multiplier, zero_point or out_dtype (they are detess_dequant's)",
                    ));
                }
            };
            let view = &l.view;
            let shape = &view.extents()[..view.rank()];
            let strides = parse_strides(output_strides, "output_strides")?;
            let want = out_dtype_of(kind, l, od);
            let spec = port_spec(shape, strides.as_deref(), want);
            let prepared =
                Prepared::admit(l, kind, spec, params).map_err(|e| lib_error(py, e, OFM_NAMES))?;
            Ok(DetessPlan {
                prepared,
                layout: layout.clone().unbind(),
                kind,
                output_strided: strides.is_some(),
            })
        })
    }

    /// Reads the head at ``offset`` in ``ofm`` into ``out`` (the plan's shape, output
    /// dtype and output strides) or a new array (C order, or for a plan with
    /// ``output_strides`` a strided view over a zeroed buffer of ``output_span`` bytes).
    ///
    /// Raises:
    ///     SimakError: as :func:`detess`; ``out`` with other strides than the plan's
    ///         (0x606).
    #[pyo3(signature = (ofm, offset=0, out=None, threads=1))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        ofm: &Bound<'py, PyAny>,
        offset: i128,
        out: Option<&Bound<'py, PyAny>>,
        threads: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(py, || {
            let threads = check_threads(threads)?;
            let layout = self.layout.bind(py).get();
            let ofm = read_ofm(py, ofm, "ofm")?;
            let view = &layout.view;
            let shape = &view.extents()[..view.rank()];
            let address = head_address(py, &ofm, offset, view.capacity(), PY_OFM_SHORT, "ofm")?;
            let plan_out = self.prepared.output();
            let want = plan_out.dtype();
            let (oa, out_address) = match out {
                Some(o) => {
                    let (oa, g) = checked_out(py, o, want, shape)?;
                    if !g.matches(plan_out) && !plan_out.is_empty() {
                        let v = g
                            .spec(want)
                            .admit(simak::Port::Output)
                            .map_err(|e| lib_error(py, e, OFM_NAMES))?;
                        crate::arrays::same_geometry(py, &v, plan_out, "out", "output")?;
                    }
                    (oa, g.address)
                }
                None => {
                    let strided = self.output_strided.then_some(plan_out);
                    let a = new_out(py, want, shape, strided)?;
                    let address = data_address(&a);
                    (a, address)
                }
            };
            run_head(py, &self.prepared, address, out_address, threads)?;
            Ok(oa.into_any())
        })
    }

    /// The head's layout.
    #[getter]
    fn layout(&self, py: Python<'_>) -> Py<Layout> {
        self.layout.clone_ref(py)
    }

    /// ``"detess"``, ``"detess_cast"`` or ``"detess_dequant"``.
    #[getter]
    fn op(&self) -> &'static str {
        self.kind.name()
    }

    /// The multiplier (a float holding the binary32 value exactly), ``None`` unless
    /// ``"detess_dequant"``.
    #[getter]
    fn multiplier(&self) -> Option<f64> {
        self.params()
            .map(|p| f64::from(f32::from_bits(p.multiplier_bits)))
    }

    /// The zero point (0 unless ``"detess_dequant"``).
    #[getter]
    fn zero_point(&self) -> i32 {
        self.params().map_or(0, |p| p.zero_point)
    }

    /// The output dtype's name: ``"f32"``, ``"f16"``, ``"bf16"``, ``"i8"``, ``"i16"``,
    /// ``"i32"``.
    #[getter]
    fn out_dtype(&self) -> &'static str {
        self.prepared.output().dtype().name()
    }

    /// Logical extents in elements.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.prepared.output();
        PyTuple::new(py, &v.extents()[..v.rank()])
    }

    /// Output byte strides as admitted (axes of extent 0 or 1 carry 0).
    #[getter]
    fn output_strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.prepared.output();
        PyTuple::new(py, &v.strides()[..v.rank()])
    }

    /// Bytes the output spans (0 when empty).
    #[getter]
    fn output_span(&self) -> u64 {
        self.prepared.output().span()
    }

    /// Bytes of the head in the OFM buffer (``layout.capacity``).
    #[getter]
    fn span(&self) -> u64 {
        self.prepared.needs().0.span
    }

    /// Number of logical elements.
    #[getter]
    fn elements(&self) -> u64 {
        self.prepared.elements()
    }

    /// The A65 kernel level chosen once (a diagnostic name, not an API contract).
    #[getter]
    fn implementation(&self) -> &'static str {
        self.prepared.implementation()
    }

    /// Pickling: the plan's request (layout, op, multiplier, zero point, output dtype,
    /// output strides), admitted again by the constructor when loaded, so a pickle whose
    /// arguments break a rule raises :class:`SimakError`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, DetessPlanArgs)> {
        let this = slf.get();
        let py = slf.py();
        let params = this.params();
        let out = this.prepared.output();
        let args = (
            this.layout.clone_ref(py),
            this.kind.name(),
            params.map(|p| f64::from(f32::from_bits(p.multiplier_bits))),
            params.map(|p| p.zero_point),
            params.map(|_| out.dtype().name()),
            this.output_strided
                .then(|| out.strides()[..out.rank()].to_vec()),
        );
        Ok((slf.get_type(), args))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let layout = self.layout.bind(py).get();
        let mut s = format!(
            "DetessPlan(shape={:?}, op={:?}, dtype={:?}, channels={:?}",
            &layout.view.extents()[..layout.view.rank()],
            self.kind.name(),
            layout.dtype.name(),
            layout.view.channels().name(),
        );
        if let Some(p) = self.params() {
            s.push_str(&format!(
                ", multiplier={}, zero_point={}, out_dtype={:?}",
                f32::from_bits(p.multiplier_bits),
                p.zero_point,
                self.out_dtype()
            ));
        }
        s.push_str(&format!(", implementation={:?})", self.implementation()));
        s
    }
}
