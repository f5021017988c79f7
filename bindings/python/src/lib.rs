//! `simak._native`: the Python extension module of the `simak` package, a thin layer over
//! the Rust library (`simak` crate). Every rule of the contract (`docs/contract.md`) keeps
//! its single implementation in Rust; this module only turns NumPy arrays into byte slices
//! with their extents and byte strides, converts errors into `simak.SimakError` with the
//! stable code of `docs/errors.md`, and releases the GIL while kernels run.
//!
//! Safety model: an array's data pointer and its (non-negative) byte strides describe the
//! elements NumPy guarantees to lie in its buffer; admission gives the accessed span, and a
//! slice of exactly that span starting at the data pointer is what the library reads or
//! writes. Input and output ranges are checked disjoint here, before any slice is formed,
//! so a shared and a mutable slice never alias. As with NumPy itself, another Python thread
//! writing the same arrays during a call is a data race the caller must avoid.

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use numpy::npyffi::{self, NPY_TYPES};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyTuple};
use simak::a65::{self, ExecuteError};
use simak::dequant::Dequant;
use simak::ev74::{self, CastTess, DecodeError, FieldValue, NativeEntry, Quant};
use simak::layout::{Channels, MlaTiled, TiledView};
use simak::ops::casttess as ct;
use simak::ops::quant;
use simak::ops::quant::{Params, Rounding};
use simak::ops::quanttess as qt;
use simak::{AdmissionError, DType, DynSpec, MAX_RANK, Port, View};

create_exception!(
    simak,
    SimakError,
    PyValueError,
    "An error of the simak library: a rule of the contract (docs/contract.md) was broken.\n\n\
     ``code`` is the stable numeric code of docs/errors.md (for example 14 for a multiplier\n\
     that is not > 0, 0x408 for an FP environment with flush-to-zero). A subclass of\n\
     ValueError."
);

/// Calls on at least this many elements release the GIL; smaller ones run in well under a
/// microsecond, less than releasing and taking back the GIL costs.
const DETACH_MIN_ELEMENTS: u64 = 4096;

/// `SimakError(message)` with `.code`.
fn simak_error(py: Python<'_>, code: u32, message: impl Into<String>) -> PyErr {
    let err = SimakError::new_err(message.into());
    // Setting an attribute on a fresh exception instance cannot fail short of memory
    // exhaustion, which Python then reports on its own.
    let _ = err.value(py).setattr("code", code);
    err
}

/// Which arguments an error is about, for the hints.
#[derive(Clone, Copy)]
struct Names {
    input: &'static str,
    output: &'static str,
}

const QUANT_NAMES: Names = Names {
    input: "x",
    output: "out",
};

/// Converts a library error into `SimakError`, adding the way out where the rule is about
/// a view NumPy made (strides) or the FP environment.
fn lib_error(py: Python<'_>, e: impl Into<simak::Error>, names: Names) -> PyErr {
    let e: simak::Error = e.into();
    let code = e.code();
    let mut message = e.to_string();
    let hint_in = format!(
        "; {} is a view simak cannot read in place: pass np.ascontiguousarray({}) to copy it",
        names.input, names.input
    );
    let hint_out = format!(
        "; {}= must be an array whose elements do not overlap, such as np.empty(shape, np.int8)",
        names.output
    );
    match code {
        // Input port stride rules: not a multiple, zero stride (broadcast), overlap.
        19 | 20 | 28 => message.push_str(&hint_in),
        0x203 | 21 | 29 => message.push_str(&hint_out),
        0x403 => message.push_str(&format!(
            "; the data of {} is not aligned to its element size: pass {}.copy(), a fresh aligned array",
            names.input, names.input
        )),
        0x408 => message.push_str(
            ": flush-to-zero or denormals-are-zero is set on this thread (for example by \
             torch.set_flush_denormal(True) or a library built with -ffast-math), which every \
             SIMD route refuses rather than give other bytes; pass exact=True for the exact \
             integer route, which does not depend on the FP environment",
        ),
        _ => {}
    }
    message.push_str(&format!(" (simak error code {code})"));
    simak_error(py, code, message)
}

/// Runs `f`, turning a panic into `SimakError` with code `BINDING_INTERNAL`: nothing
/// panics into Python.
fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            Err(simak_error(
                py,
                simak::error::BINDING_INTERNAL,
                format!(
                    "internal error (a simak bug, please report it): {what} (simak error code {})",
                    simak::error::BINDING_INTERNAL
                ),
            ))
        }
    }
}

/// Runs `f` without the GIL when the call is large enough to be worth it.
fn run_detached<T: Send>(py: Python<'_>, elements: u64, f: impl FnOnce() -> T + Send) -> T {
    if elements >= DETACH_MIN_ELEMENTS {
        py.detach(f)
    } else {
        f()
    }
}

/// `numpy.asarray`, cached.
fn asarray_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ASARRAY
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("asarray")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// `numpy.<name>` (looked up per call: only on the foreign-object path).
fn numpy_fn<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("numpy")?.getattr(name)
}

/// `numpy.float32`, cached.
fn float32_type(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static FLOAT32: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    FLOAT32
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("float32")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// `numpy.generic`, the type of NumPy scalars, cached.
fn generic_type(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static GENERIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    GENERIC
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("generic")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// The `ml_dtypes.bfloat16` dtype and its type number, if `ml_dtypes` imports.
fn bfloat16(py: Python<'_>) -> Option<(c_int, &Bound<'_, PyArrayDescr>)> {
    static BF16: PyOnceLock<Option<(c_int, Py<PyArrayDescr>)>> = PyOnceLock::new();
    BF16.get_or_init(py, || {
        let ty = py.import("ml_dtypes").ok()?.getattr("bfloat16").ok()?;
        let descr = PyArrayDescr::new(py, &ty).ok()?;
        Some((descr.num(), descr.unbind()))
    })
    .as_ref()
    .map(|(num, d)| (*num, d.bind(py)))
}

/// `x` as an ndarray: an ndarray as is, an object with `__dlpack__` through
/// `np.from_dlpack`, a NumPy scalar as its 0-d array, anything else through
/// `np.asarray(x, copy=False)` (which raises rather than copy).
fn as_array<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = x.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let py = x.py();
    // DLPack is zero-copy by definition (PyTorch CPU tensors, JAX CPU arrays): tried first,
    // since np.asarray(copy=False) refuses objects whose __array__ has no copy keyword.
    if x.hasattr("__dlpack__")?
        && let Ok(a) = numpy_fn(py, "from_dlpack")?.call1((x,))
    {
        return Ok(a.cast_into::<PyUntypedArray>()?);
    }
    let kwargs = PyDict::new(py);
    // A NumPy scalar (numpy.float32(1.5)) is a value, not a buffer: its 0-d array is made.
    if !x.is_instance(generic_type(py)?)? {
        kwargs.set_item("copy", false)?;
    }
    let a = asarray_fn(py)?.call((x,), Some(&kwargs)).map_err(|e| {
        if e.is_instance_of::<PyValueError>(py) {
            // NumPy would have to copy (a list, a Python float, None): say what to pass.
            PyTypeError::new_err(format!(
                "expected a NumPy array or an object NumPy can view without a copy (the buffer protocol, __array__, __dlpack__), not {}: convert it first, e.g. np.asarray(x, dtype=np.float32)",
                type_name(x)
            ))
        } else {
            e
        }
    })?;
    Ok(a.cast_into::<PyUntypedArray>()?)
}

/// An output array given by the caller: an ndarray, writeable.
fn as_out_array<'py>(
    py: Python<'py>,
    out: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let a = out.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{name}= must be a numpy.ndarray, not {}",
            out.get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    })?;
    // SAFETY: `a` is a live ndarray (checked above), so its object pointer is valid for
    // reading the flags field while we hold the GIL.
    let flags = unsafe { (*a.as_array_ptr()).fields.flags };
    if flags & npyffi::NPY_ARRAY_WRITEABLE == 0 {
        let code = simak::error::BINDING_READONLY;
        return Err(simak_error(
            py,
            code,
            format!("{name}= is a read-only array (simak error code {code})"),
        ));
    }
    Ok(a.clone())
}

/// An array's geometry: data address, extents in elements and byte strides (non-negative;
/// axes of extent 0 or 1 carry 0), its dtype's type number, byte order and item size.
struct Geometry {
    address: usize,
    rank: usize,
    extents: [u64; MAX_RANK],
    strides: [u64; MAX_RANK],
}

impl Geometry {
    /// Reads `a`. `min_rank` is the operation's lowest rank, for the rank error.
    fn read(
        py: Python<'_>,
        a: &Bound<'_, PyUntypedArray>,
        name: &str,
        min_rank: usize,
    ) -> PyResult<Geometry> {
        let rank = a.ndim();
        if rank > MAX_RANK {
            let e = AdmissionError::Rank {
                rank,
                min: min_rank,
                max: MAX_RANK,
            };
            return Err(simak_error(
                py,
                e.code(),
                format!(
                    "{name} has {rank} dimensions: {e} (simak error code {})",
                    e.code()
                ),
            ));
        }
        let mut extents = [0u64; MAX_RANK];
        let mut strides = [0u64; MAX_RANK];
        let empty = a.shape().contains(&0);
        for (axis, (&e, &s)) in a.shape().iter().zip(a.strides()).enumerate() {
            extents[axis] = e as u64;
            strides[axis] = if e <= 1 || empty {
                0
            } else if s < 0 {
                let code = simak::error::BINDING_NEGATIVE_STRIDE;
                return Err(simak_error(
                    py,
                    code,
                    format!(
                        "{name} has stride {s} bytes on axis {axis}: a negative stride (a reversed view such as x[::-1]) is not admitted, strides in bytes are unsigned in the contract; pass np.ascontiguousarray({name}) to copy it (simak error code {code})"
                    ),
                ));
            } else {
                s as u64
            };
        }
        let address = data_address(a);
        Ok(Geometry {
            address,
            rank,
            extents,
            strides,
        })
    }

    fn extents(&self) -> &[u64] {
        &self.extents[..self.rank]
    }

    /// Whether this nonempty array has exactly the admitted geometry `view` (whose axes of
    /// extent 0 or 1 carry stride 0, as here): then admitting it again would give `view`.
    fn matches(&self, view: &View) -> bool {
        self.rank == view.rank()
            && self.extents == *view.extents()
            && self.strides == *view.strides()
            && !self.extents().contains(&0)
    }

    /// The port spec. An empty array has no storage and NumPy gives its axes arbitrary
    /// strides (often 0), so it is described as row-major contiguous: nothing is read or
    /// written either way.
    fn spec(&self, dtype: DType) -> DynSpec<'_> {
        let extents = &self.extents[..self.rank];
        if extents.contains(&0) {
            DynSpec::contiguous(extents, dtype)
        } else {
            DynSpec::strided(extents, &self.strides[..self.rank], dtype)
        }
    }
}

/// The address of an array's first element.
fn data_address(a: &Bound<'_, PyUntypedArray>) -> usize {
    // SAFETY: `a` is a live ndarray, so its object pointer is valid for reading the data
    // pointer field while we hold the GIL (the `Bound` proves it).
    unsafe { (*a.as_array_ptr()).fields.data as usize }
}

/// Whether the byte ranges `[a, a + la)` and `[b, b + lb)` (nonempty) overlap.
fn ranges_overlap(a: usize, la: u64, b: usize, lb: u64) -> bool {
    let (a, b) = (a as u128, b as u128);
    la > 0 && lb > 0 && a < b + u128::from(lb) && b < a + u128::from(la)
}

/// The input slice of `span` bytes at `address`.
///
/// # Safety
///
/// `address..address + span` must be readable memory of a live array for the slice's
/// lifetime (the array's elements, as admission computed the span from its geometry).
unsafe fn input_slice<'a>(address: usize, span: u64) -> &'a [u8] {
    if span == 0 {
        return &[];
    }
    // SAFETY: the caller guarantees the range is the live array's readable storage.
    unsafe { std::slice::from_raw_parts(address as *const u8, span as usize) }
}

/// The output slice of `span` bytes at `address`.
///
/// # Safety
///
/// As [`input_slice`], writeable, and not overlapping any other slice alive at once.
unsafe fn output_slice<'a>(address: usize, span: u64) -> &'a mut [u8] {
    if span == 0 {
        return &mut [];
    }
    // SAFETY: the caller guarantees the range is the live, writeable array's storage and
    // that no other slice aliases it.
    unsafe { std::slice::from_raw_parts_mut(address as *mut u8, span as usize) }
}

/// The byte length of a C-contiguous array, or a `ValueError` naming it.
fn contiguous_bytes(a: &Bound<'_, PyUntypedArray>, name: &str) -> PyResult<u64> {
    if !a.is_c_contiguous() {
        let code = simak::error::BINDING_NOT_CONTIGUOUS;
        return Err(simak_error(
            a.py(),
            code,
            format!(
                "{name}= must be a C-contiguous array (a buffer of bytes); pass np.ascontiguousarray({name}) (simak error code {code})"
            ),
        ));
    }
    let itemsize = a.dtype().itemsize() as u64;
    Ok(a.len() as u64 * itemsize)
}

fn num(t: NPY_TYPES) -> c_int {
    t as c_int
}

/// The names of the dtype choices, for messages.
const DTYPE_CHOICES: &str = "\"f32\", \"bf16\", \"f16\" or a NumPy dtype (numpy.float32, numpy.float16, ml_dtypes.bfloat16)";

/// A `dtype=` argument: `"f32"`, `"bf16"`, `"f16"` or a NumPy dtype.
fn parse_dtype(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<DType> {
    let bad = |what: String| {
        let code = simak::error::BINDING_INVALID_ENUM;
        simak_error(
            py,
            code,
            format!("dtype={what} is none of {DTYPE_CHOICES} (simak error code {code})"),
        )
    };
    if let Ok(s) = dtype.extract::<pyo3::pybacked::PyBackedStr>() {
        return match &*s {
            "f32" | "float32" => Ok(DType::F32),
            "bf16" | "bfloat16" => Ok(DType::BF16),
            "f16" | "float16" => Ok(DType::F16),
            other => Err(bad(format!("{other:?}"))),
        };
    }
    let descr = PyArrayDescr::new(py, dtype).map_err(|_| bad(repr(dtype)))?;
    let n = descr.num();
    if n == num(NPY_TYPES::NPY_FLOAT) {
        Ok(DType::F32)
    } else if n == num(NPY_TYPES::NPY_HALF) {
        Ok(DType::F16)
    } else if bfloat16(py).is_some_and(|(b, _)| b == n) {
        Ok(DType::BF16)
    } else {
        Err(bad(repr(dtype)))
    }
}

/// The name of `x`'s type (`list`, `float`, `NoneType`).
fn type_name(x: &Bound<'_, PyAny>) -> String {
    x.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

fn repr(x: &Bound<'_, PyAny>) -> String {
    x.repr()
        .map_or_else(|_| "?".to_owned(), |r| r.to_string_lossy().into_owned())
}

/// The float dtype of input array `a` (`name` in messages), with an optional `dtype=`
/// override for `uint16` storage.
fn input_dtype(
    py: Python<'_>,
    a: &Bound<'_, PyUntypedArray>,
    name: &str,
    given: Option<DType>,
) -> PyResult<DType> {
    let descr = a.dtype();
    let n = descr.num();
    let refuse = |why: String| {
        let code = AdmissionError::DType {
            port: Port::Input,
            found: DType::F32,
        }
        .code();
        simak_error(py, code, format!("{why} (simak error code {code})"))
    };
    if descr.itemsize() > 1 && descr.is_native_byteorder() == Some(false) {
        return Err(refuse(format!(
            "{name} has dtype {} in non-native byte order; convert it with {name}.astype({name}.dtype.newbyteorder('='))",
            repr(descr.as_any())
        )));
    }
    let found = if n == num(NPY_TYPES::NPY_FLOAT) {
        Some(DType::F32)
    } else if n == num(NPY_TYPES::NPY_HALF) {
        Some(DType::F16)
    } else if bfloat16(py).is_some_and(|(b, _)| b == n) {
        Some(DType::BF16)
    } else if n == num(NPY_TYPES::NPY_USHORT) {
        // 16-bit storage: the caller says which format it holds.
        match given {
            Some(d @ (DType::BF16 | DType::F16)) => return Ok(d),
            _ => {
                return Err(refuse(format!(
                    "{name} has dtype uint16: say which 16-bit format it stores with dtype=\"bf16\" or dtype=\"f16\""
                )));
            }
        }
    } else {
        None
    };
    match (found, given) {
        (Some(f), None) => Ok(f),
        (Some(f), Some(g)) if f == g => Ok(f),
        (Some(f), Some(g)) => Err(refuse(format!(
            "{name} has dtype {} but dtype=\"{}\" was given: 16-bit data of one format is never read as another",
            f.name(),
            g.name()
        ))),
        (None, _) => Err(refuse(format!(
            "{name} has dtype {}, which simak does not take: it takes float32, float16 and ml_dtypes.bfloat16 (or uint16 with dtype=\"bf16\" or \"f16\")",
            repr(descr.as_any())
        ))),
    }
}

/// A multiplier: a Python float is rounded once to binary32, nearest-even; a
/// `numpy.float32` is taken exactly, by its bits. Neither conversion uses the FP unit, so
/// the calling thread's rounding mode and flush-to-zero settings cannot change the value
/// (SPEC §3: the result does not depend on the FP environment). A `bool` is refused.
fn multiplier_bits(m: &Bound<'_, PyAny>) -> PyResult<u32> {
    let refuse = || {
        PyTypeError::new_err(format!(
            "multiplier must be a real number (a float or numpy.float32), not {}",
            repr(m)
        ))
    };
    if m.is_instance_of::<PyBool>() {
        return Err(refuse());
    }
    if m.is_instance(float32_type(m.py())?)? {
        // The scalar's own 4 bytes, reinterpreted (`float(np.float32)` would widen it on
        // the FP unit, where denormals-are-zero flushes a subnormal).
        return m.call_method1("view", ("<u4",))?.extract::<u32>();
    }
    let v: f64 = m.extract().map_err(|_| refuse())?;
    Ok(simak::arith::cast::f64_to_f32_bits(v))
}

/// A zero point: an integer in [-128, 127] (any other integer is the admission error 15,
/// values beyond `i32` included).
fn zero_point(py: Python<'_>, zp: &Bound<'_, PyAny>) -> PyResult<i32> {
    let out_of_range = || {
        let code = AdmissionError::ZeroPointOutOfRange { zero_point: 0 }.code();
        simak_error(
            py,
            code,
            format!(
                "zero point {} is outside [-128, 127] (simak error code {code})",
                repr(zp)
            ),
        )
    };
    match zp.extract::<i64>() {
        Ok(v) => i32::try_from(v).map_err(|_| out_of_range()),
        Err(_) if zp.call_method0("__index__").is_ok() => Err(out_of_range()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "zero_point must be an integer, not {}",
            repr(zp)
        ))),
    }
}

const ROUNDING_CHOICES: &str =
    "\"nearest-even\", \"toward-zero\", \"toward-positive\", \"toward-negative\"";

fn parse_rounding(py: Python<'_>, s: &str) -> PyResult<Rounding> {
    Rounding::ALL
        .into_iter()
        .find(|r| r.name() == s)
        .ok_or_else(|| {
            let code = simak::error::BINDING_INVALID_ENUM;
            simak_error(
                py,
                code,
                format!("rounding={s:?} is none of {ROUNDING_CHOICES} (simak error code {code})"),
            )
        })
}

fn parse_channels(py: Python<'_>, s: &str) -> PyResult<Channels> {
    match s {
        "compact" => Ok(Channels::Compact),
        "pad16" => Ok(Channels::PadTo16),
        other => {
            let code = simak::error::BINDING_INVALID_ENUM;
            Err(simak_error(
                py,
                code,
                format!(
                    "channels={other:?} is none of \"compact\", \"pad16\" (simak error code {code})"
                ),
            ))
        }
    }
}

/// `axes`: four items, D, H, W, C, each `None` (absent) or a nonnegative axis index.
fn parse_axes(py: Python<'_>, axes: &Bound<'_, PyAny>) -> PyResult<[Option<u8>; 4]> {
    let items: Vec<Bound<'_, PyAny>> = axes
        .try_iter()
        .map_err(|_| {
            PyTypeError::new_err("axes must be a sequence of 4 items (D, H, W, C): None or an axis")
        })?
        .collect::<PyResult<_>>()?;
    if items.len() != 4 {
        return Err(PyValueError::new_err(format!(
            "axes has {} items; it needs 4, for the roles D, H, W, C (None for an absent role)",
            items.len()
        )));
    }
    let mut out = [None; 4];
    for (k, (slot, item)) in out.iter_mut().zip(&items).enumerate() {
        if item.is_none() {
            continue;
        }
        let v: i64 = item.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "axes[{k}] must be None or an integer, not {}",
                repr(item)
            ))
        })?;
        let code = 43; // AdmissionError::TileAxisOutOfRange, the twin of AxisOutOfRange.
        if v < 0 {
            return Err(simak_error(
                py,
                code,
                format!(
                    "axes[{k}] is {v}: a negative axis is refused (in NumPy -1 means the last axis, in the CLI and C it means absent); use None for an absent role or a nonnegative axis index (simak error code {code})"
                ),
            ));
        }
        *slot = Some(u8::try_from(v).unwrap_or(u8::MAX));
    }
    Ok(out)
}

/// `tile`: four tile extents in elements, D, H, W, C.
fn parse_tile(py: Python<'_>, tile: &Bound<'_, PyAny>) -> PyResult<[u32; 4]> {
    let items: Vec<i64> = tile.extract().map_err(|_| {
        PyTypeError::new_err("tile must be a sequence of 4 integers (D, H, W, C tile extents)")
    })?;
    if items.len() != 4 {
        return Err(PyValueError::new_err(format!(
            "tile has {} items; it needs 4, the tile extents of D, H, W, C",
            items.len()
        )));
    }
    let mut out = [0u32; 4];
    for (k, (slot, &v)) in out.iter_mut().zip(&items).enumerate() {
        *slot = u32::try_from(v).map_err(|_| {
            let code = 47; // AdmissionError::TileExtent
            simak_error(
                py,
                code,
                format!(
                    "tile[{k}] is {v}: a tile extent is an integer in 1..=extent (simak error code {code})"
                ),
            )
        })?;
    }
    Ok(out)
}

/// A shape or strides argument: nonnegative integers.
fn parse_u64s(x: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u64>> {
    let items: Vec<i128> = x
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a sequence of integers")))?;
    items
        .iter()
        .map(|&v| {
            u64::try_from(v).map_err(|_| {
                PyValueError::new_err(format!(
                    "{what} item {v} is not an integer in 0..2**64 (strides are in bytes and never negative)"
                ))
            })
        })
        .collect()
}

/// Most native threads one call may use (as `simak bench --threads`).
const MAX_THREADS: usize = 256;

/// `threads` checked: at least 1 (a negative count is the same `ValueError` as 0) and at
/// most [`MAX_THREADS`].
fn check_threads(threads: i64) -> PyResult<usize> {
    if threads < 1 {
        return Err(PyValueError::new_err(format!(
            "threads={threads}: threads must be at least 1"
        )));
    }
    match usize::try_from(threads) {
        Ok(n) if n <= MAX_THREADS => Ok(n),
        _ => Err(PyValueError::new_err(format!(
            "threads={threads} is above {MAX_THREADS}; use at most one per core"
        ))),
    }
}

/// A new uninitialized C-order array of `shape`; every byte must be written before it is
/// returned to Python. An impossible size is NumPy's own `MemoryError` or `ValueError`.
fn new_array<'py, T: numpy::Element>(
    py: Python<'py>,
    shape: &[u64],
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let mut dims = [0 as npyffi::npy_intp; MAX_RANK];
    for (slot, &e) in dims.iter_mut().zip(shape) {
        *slot = npyffi::npy_intp::try_from(e).map_err(|_| {
            pyo3::exceptions::PyMemoryError::new_err(format!(
                "cannot allocate an array of shape {shape:?}"
            ))
        })?;
    }
    // SAFETY: the array API is initialized by `numpy`; `dims` holds `shape.len()` (≤ 6)
    // extents; a null strides, data and object pointer ask NumPy for a new C-order buffer;
    // `into_dtype_ptr` gives the new reference the call steals. Every caller writes each
    // element before Python sees the array.
    let ptr = unsafe {
        npyffi::PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            T::get_dtype(py).into_dtype_ptr(),
            shape.len() as c_int,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        )
    };
    // SAFETY: `ptr` is a new reference to an ndarray, or null with a Python error set.
    let any = unsafe { Bound::from_owned_ptr_or_err(py, ptr)? };
    Ok(any.cast_into::<PyUntypedArray>()?)
}

/// A new 1-D `uint8` array of `capacity` bytes whose data is 16-byte aligned (the `MlaTiled`
/// output rule), uninitialized: the tiled ops write all of it.
fn new_tiled<'py>(py: Python<'py>, capacity: u64) -> PyResult<Bound<'py, PyUntypedArray>> {
    let a = new_array::<u8>(py, &[capacity])?;
    let address = data_address(&a);
    if address.is_multiple_of(16) {
        return Ok(a);
    }
    let padded = new_array::<u8>(py, &[capacity.saturating_add(15)])?;
    let address = data_address(&padded);
    let skip = (16 - address % 16) % 16;
    let slice = pyo3::types::PySlice::new(py, skip as isize, skip as isize + capacity as isize, 1);
    Ok(padded.get_item(slice)?.cast_into::<PyUntypedArray>()?)
}

/// A Quant request's parameters from Python arguments.
fn quant_params(
    py: Python<'_>,
    multiplier: &Bound<'_, PyAny>,
    zp: &Bound<'_, PyAny>,
    rounding: &str,
) -> PyResult<Params> {
    Ok(Params::from_bits(multiplier_bits(multiplier)?)
        .with_zero_point(zero_point(py, zp)?)
        .with_rounding(parse_rounding(py, rounding)?))
}

/// Runs a prepared Quant call over admitted arrays, split over `threads`.
fn run_quant(
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
    let result = run_detached(py, elements, || -> Result<(), ExecuteError> {
        if threads <= 1 {
            return a65::quant::execute(prepared, inp, outp);
        }
        run_pieces(prepared.split(threads, inp, outp)?, a65::quant::Piece::run)
    });
    result.map_err(|e| lib_error(py, e, names))
}

/// Runs the pieces of a split call (`Prepared::split` of any op), one scoped native thread
/// each, and reports the first error in piece order.
fn run_pieces<P: Send>(
    pieces: Vec<P>,
    run: impl Fn(&mut P) -> Result<(), ExecuteError> + Sync,
) -> Result<(), ExecuteError> {
    let run = &run;
    std::thread::scope(|s| {
        let handles: Vec<_> = pieces
            .into_iter()
            .map(|mut p| s.spawn(move || run(&mut p)))
            .collect();
        // A piece cannot panic (a panic would be a simak bug); report the first error.
        let mut first = Ok(());
        for h in handles {
            let r = h.join().unwrap_or(Ok(()));
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
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
fn quantize<'py>(
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
        let zero = 0i32.into_pyobject(py)?.into_any();
        let params = quant_params(py, multiplier, zero_point.unwrap_or(&zero), rounding)?;
        let given = dtype.map(|d| parse_dtype(py, d)).transpose()?;
        let xa = as_array(x)?;
        let dt = input_dtype(py, &xa, "x", given)?;
        let gin = Geometry::read(py, &xa, "x", 0)?;
        let (oa, gout) = match out {
            Some(o) => {
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
                            "out= has dtype {}; quantize writes int8 (simak error code {code})",
                            repr(oa.dtype().as_any())
                        ),
                    ));
                }
                let g = Geometry::read(py, &oa, "out", 0)?;
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
///     SimakError: the admission rules, as :func:`quantize`.
#[pyclass(frozen, module = "simak")]
struct QuantPlan {
    prepared: a65::quant::Prepared,
    exact: bool,
    output_strided: bool,
}

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
            let zero = 0i32.into_pyobject(py)?.into_any();
            let params = quant_params(py, multiplier, zero_point.unwrap_or(&zero), rounding)?;
            let si = input_strides
                .map(|s| parse_u64s(s, "input_strides"))
                .transpose()?;
            let so = output_strides
                .map(|s| parse_u64s(s, "output_strides"))
                .transpose()?;
            fn spec<'a>(extents: &'a [u64], s: &'a Option<Vec<u64>>, d: DType) -> DynSpec<'a> {
                match s {
                    Some(s) => DynSpec::strided(extents, s, d),
                    None => DynSpec::contiguous(extents, d),
                }
            }
            let plan = quant::check_inference_dyn(&quant::DynRequest {
                input: spec(&extents, &si, dt),
                output: spec(&extents, &so, DType::I8),
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
            let xa = as_array(x)?;
            let dt = input_dtype(py, &xa, "x", Some(plan.input().dtype()))?;
            let gin = Geometry::read(py, &xa, "x", 0)?;
            if !gin.matches(plan.input()) {
                let vin = gin
                    .spec(dt)
                    .admit(Port::Input)
                    .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
                same_geometry(py, &vin, plan.input(), "x", "input")?;
            }
            let (oa, gout) = match out {
                Some(o) => {
                    let oa = as_out_array(py, o, "out")?;
                    if oa.dtype().num() != num(NPY_TYPES::NPY_BYTE) {
                        let code = 0x201;
                        return Err(simak_error(
                            py,
                            code,
                            format!(
                                "out= has dtype {}; quantize writes int8 (simak error code {code})",
                                repr(oa.dtype().as_any())
                            ),
                        ));
                    }
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

/// A new `int8` array viewing a zeroed buffer of `view.span()` bytes with `view`'s strides.
fn strided_int8<'py>(py: Python<'py>, view: &View) -> PyResult<Bound<'py, PyUntypedArray>> {
    let np = py.import("numpy")?;
    let buffer = np.call_method1("zeros", (view.span().max(1), np.getattr("uint8")?))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", np.getattr("int8")?)?;
    kwargs.set_item("buffer", buffer)?;
    kwargs.set_item("strides", PyTuple::new(py, &view.strides()[..view.rank()])?)?;
    let shape = PyTuple::new(py, &view.extents()[..view.rank()])?;
    Ok(np
        .getattr("ndarray")?
        .call((shape,), Some(&kwargs))?
        .cast_into::<PyUntypedArray>()?)
}

/// Checks that an array's admitted view is the plan's.
fn same_geometry(py: Python<'_>, got: &View, want: &View, name: &str, port: &str) -> PyResult<()> {
    if got == want {
        return Ok(());
    }
    let shape = |v: &View| v.extents()[..v.rank()].to_vec();
    let strides = |v: &View| v.strides()[..v.rank()].to_vec();
    if shape(got) != shape(want) {
        let code = 0x202;
        return Err(simak_error(
            py,
            code,
            format!(
                "{name} has shape {:?} but the plan's {port} has shape {:?} (simak error code {code})",
                shape(got),
                shape(want)
            ),
        ));
    }
    let code = simak::error::BINDING_PLAN_STRIDES;
    Err(simak_error(
        py,
        code,
        format!(
            "{name} has byte strides {:?} but the plan's {port} strides are {:?} (axes of extent 0 or 1 count as 0): make a plan for this layout (simak error code {code})",
            strides(got),
            strides(want)
        ),
    ))
}

/// A tiled layout argument set, admitted.
fn admit_layout(
    py: Python<'_>,
    extents: &[u64],
    axes: &Bound<'_, PyAny>,
    tile: &Bound<'_, PyAny>,
    channels: &str,
    planes: u8,
) -> PyResult<TiledView> {
    let layout = MlaTiled::new(
        parse_axes(py, axes)?,
        parse_tile(py, tile)?,
        parse_channels(py, channels)?,
    );
    layout
        .admit(extents, planes)
        .map_err(|e| lib_error(py, e, TILED_NAMES))
}

const TILED_NAMES: Names = Names {
    input: "x",
    output: "out",
};

/// The tiled output buffer: the caller's `out=` (a writeable C-contiguous `uint8` array
/// of at least the capacity, 16-byte aligned: the library checks both) or a new one.
fn tiled_out<'py>(
    py: Python<'py>,
    out: Option<&Bound<'py, PyAny>>,
    capacity: u64,
) -> PyResult<(Bound<'py, PyUntypedArray>, usize, u64)> {
    let a = match out {
        Some(o) => {
            let a = as_out_array(py, o, "out")?;
            if a.dtype().num() != num(NPY_TYPES::NPY_UBYTE) {
                let code = 0x201;
                return Err(simak_error(
                    py,
                    code,
                    format!(
                        "out= has dtype {}; the tiled ops write bytes into a uint8 buffer (simak error code {code})",
                        repr(a.dtype().as_any())
                    ),
                ));
            }
            a
        }
        None => new_tiled(py, capacity)?,
    };
    let len = contiguous_bytes(&a, "out")?;
    let address = data_address(&a);
    Ok((a, address, len))
}

/// Runs a tiled call through `exec` over the input and output byte ranges.
fn run_tiled(
    py: Python<'_>,
    gin: &Geometry,
    in_span: u64,
    out: (usize, u64),
    elements: u64,
    exec: impl FnOnce(&[u8], &mut [u8]) -> Result<(), ExecuteError> + Send,
) -> PyResult<()> {
    let (address, len) = out;
    if ranges_overlap(gin.address, in_span, address, len) {
        return Err(lib_error(py, ExecuteError::Overlap, TILED_NAMES));
    }
    // SAFETY: the input span is admission's for the array's own geometry; the output is the
    // whole of a live, writeable, C-contiguous array of `len` bytes; both arrays are kept
    // alive by the caller's references; the ranges were just checked disjoint.
    let (inp, outp) = unsafe {
        (
            input_slice(gin.address, in_span),
            output_slice(address, len),
        )
    };
    run_detached(py, elements, || exec(inp, outp)).map_err(|e| lib_error(py, e, TILED_NAMES))
}

/// Converts ``x`` to BF16 in the accelerator's ``MlaTiled`` layout (SPEC §4, §5).
///
/// FP32 is rounded to nearest-even BF16 on its bits (subnormals rounded, never flushed;
/// NaNs not canonicalized: the rounding carries into the exponent, so a NaN with a small
/// payload such as ``0x7f800001`` becomes the infinity ``0x7f80``, and ``0x7fffffff``
/// becomes ``0x8000``), FP16 exactly then rounded once, BF16 copied. The layout: the
/// roles D, H, W, C name logical axes (``axes``), tiles of ``tile`` elements, pixels in
/// d, h, w order, each pixel storing its channels as a low-byte plane then a high-byte
/// plane, tiles padded to 16 bytes with zeros.
///
/// Args:
///     x: ``float32``, ``float16`` or ``ml_dtypes.bfloat16`` array of rank 1 to 6, read in
///         place as for :func:`quantize`.
///     axes: the logical axis of each role D, H, W, C: ``None`` (absent) or a
///         nonnegative axis index (a negative index is an error: -1 means "last" in
///         NumPy but "absent" in the CLI and C).
///     tile: tile extents in elements for D, H, W, C (1 for an absent role).
///     channels: ``"compact"`` or ``"pad16"`` (channels padded to a multiple of 16).
///     dtype: the input's format, as for :func:`quantize`.
///     out: optional writeable C-contiguous ``uint8`` array of at least ``capacity`` bytes,
///         16-byte aligned (for example a view of a memory-mapped device buffer): exactly
///         ``capacity`` bytes are written, padding included; bytes past it are untouched.
///     threads: native threads to split the call over (``Prepared::split``: pieces of
///         whole tiles, one per thread, the GIL released); same bytes for every count.
///
/// Returns:
///     ``out``, or a new 1-D ``uint8`` array of ``capacity`` bytes, 16-byte aligned.
///
/// Raises:
///     SimakError: dtype (5), rank (6), layout (43, 44, 47), a view that cannot be read in
///         place (19, 20, 28, 0x604), ``out`` too small (0x402) or misaligned (0x404),
///         overlap (0x407), read-only ``out`` (0x605), a bad option string (0x601).
#[pyfunction]
#[pyo3(signature = (x, axes=None, tile=None, channels="compact", dtype=None, out=None, threads=1))]
#[pyo3(
    text_signature = "(x, axes=(None, 0, 1, 2), tile=(1, 16, 64, 3), channels='compact', dtype=None, out=None, threads=1)"
)]
#[allow(clippy::too_many_arguments)]
fn casttess<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    axes: Option<&Bound<'py, PyAny>>,
    tile: Option<&Bound<'py, PyAny>>,
    channels: &str,
    dtype: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let threads = check_threads(threads)?;
        let (axes, tile) = default_layout(py, axes, tile)?;
        let given = dtype.map(|d| parse_dtype(py, d)).transpose()?;
        let xa = as_array(x)?;
        let dt = input_dtype(py, &xa, "x", given)?;
        let gin = Geometry::read(py, &xa, "x", 1)?;
        let layout = MlaTiled::new(
            parse_axes(py, &axes)?,
            parse_tile(py, &tile)?,
            parse_channels(py, channels)?,
        );
        let plan = ct::check_inference_dyn(&ct::DynRequest {
            input: gin.spec(dt),
            output: ct::TiledSpec {
                extents: gin.extents(),
                dtype: DType::BF16,
                layout,
            },
        })
        .map_err(|e| lib_error(py, e, TILED_NAMES))?;
        let prepared = a65::casttess::prepare(&plan);
        let (oa, address, len) = tiled_out(py, out, plan.output().capacity())?;
        run_tiled(
            py,
            &gin,
            plan.input().span(),
            (address, len),
            plan.elements(),
            |i, o| match threads {
                1 => a65::casttess::execute(&prepared, i, o),
                _ => run_pieces(prepared.split(threads, i, o)?, a65::casttess::Piece::run),
            },
        )?;
        Ok(oa.into_any())
    })
}

/// The default `axes` and `tile`: an HWC image, tiles of 16 rows × 64 columns × 3
/// channels.
fn default_layout<'py>(
    py: Python<'py>,
    axes: Option<&Bound<'py, PyAny>>,
    tile: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let axes = match axes {
        Some(a) => a.clone(),
        None => PyTuple::new(py, [None, Some(0u8), Some(1), Some(2)])?.into_any(),
    };
    let tile = match tile {
        Some(t) => t.clone(),
        None => PyTuple::new(py, [1u32, 16, 64, 3])?.into_any(),
    };
    Ok((axes, tile))
}

/// Quantizes ``x`` to INT8 in the ``MlaTiled`` layout: :func:`quantize`'s arithmetic,
/// :func:`casttess`'s layout with one byte plane (padding bytes are 0x00, not the zero
/// point).
///
/// Args:
///     x, axes, tile, channels, dtype, out, threads: as for :func:`casttess`.
///     multiplier, zero_point, rounding, exact: as for :func:`quantize`.
///
/// Returns:
///     ``out``, or a new 1-D ``uint8`` array of ``capacity`` bytes, 16-byte aligned.
///
/// Raises:
///     SimakError: the errors of :func:`casttess` and the parameter and FP-environment
///         errors of :func:`quantize`.
#[pyfunction]
#[pyo3(signature = (x, multiplier, axes=None, tile=None, channels="compact", zero_point=None, rounding="nearest-even", dtype=None, out=None, threads=1, exact=false))]
#[pyo3(
    text_signature = "(x, multiplier, axes=(None, 0, 1, 2), tile=(1, 16, 64, 3), channels='compact', zero_point=0, rounding='nearest-even', dtype=None, out=None, threads=1, exact=False)"
)]
#[allow(clippy::too_many_arguments)]
fn quanttess<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    multiplier: &Bound<'py, PyAny>,
    axes: Option<&Bound<'py, PyAny>>,
    tile: Option<&Bound<'py, PyAny>>,
    channels: &str,
    zero_point: Option<&Bound<'py, PyAny>>,
    rounding: &str,
    dtype: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
    exact: bool,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let threads = check_threads(threads)?;
        let (axes, tile) = default_layout(py, axes, tile)?;
        let zero = 0i32.into_pyobject(py)?.into_any();
        let params = quant_params(py, multiplier, zero_point.unwrap_or(&zero), rounding)?;
        let given = dtype.map(|d| parse_dtype(py, d)).transpose()?;
        let xa = as_array(x)?;
        let dt = input_dtype(py, &xa, "x", given)?;
        let gin = Geometry::read(py, &xa, "x", 1)?;
        let layout = MlaTiled::new(
            parse_axes(py, &axes)?,
            parse_tile(py, &tile)?,
            parse_channels(py, channels)?,
        );
        let plan = qt::check_inference_dyn(&qt::DynRequest {
            input: gin.spec(dt),
            output: ct::TiledSpec {
                extents: gin.extents(),
                dtype: DType::I8,
                layout,
            },
            params,
        })
        .map_err(|e| lib_error(py, e, TILED_NAMES))?;
        let prepared = if exact {
            a65::quanttess::prepare_exact(&plan)
        } else {
            a65::quanttess::prepare(&plan)
        };
        let (oa, address, len) = tiled_out(py, out, plan.output().capacity())?;
        run_tiled(
            py,
            &gin,
            plan.input().span(),
            (address, len),
            plan.elements(),
            |i, o| match threads {
                1 => a65::quanttess::execute(&prepared, i, o),
                _ => run_pieces(prepared.split(threads, i, o)?, a65::quanttess::Piece::run),
            },
        )?;
        Ok(oa.into_any())
    })
}

/// The ``MlaTiled`` layout of a logical shape (SPEC §5): sizes and offsets, for reading
/// tiled buffers back (:func:`untile`) or sizing device buffers.
///
/// Args:
///     shape: logical extents in elements (rank 1 to 6).
///     axes, tile, channels: as for :func:`casttess`.
///     dtype: the tiled dtype: ``"bf16"`` (CastTess, 2 byte planes) or ``"i8"``
///         (QuantTess, 1 plane).
///
/// Raises:
///     SimakError: the layout rules (43, 44, 47), capacity overflow (25), a bad option
///         string (0x601).
#[pyclass(frozen, module = "simak", eq)]
#[derive(PartialEq)]
struct Layout {
    view: TiledView,
}

#[pymethods]
impl Layout {
    #[new]
    #[pyo3(signature = (shape, axes, tile, channels="compact", dtype=None))]
    #[pyo3(text_signature = "(shape, axes, tile, channels='compact', dtype='bf16')")]
    fn new(
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        axes: &Bound<'_, PyAny>,
        tile: &Bound<'_, PyAny>,
        channels: &str,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Layout> {
        guarded(py, || {
            let extents = parse_u64s(shape, "shape")?;
            let planes = match dtype {
                Some(d) => tiled_planes(py, d)?,
                None => 2,
            };
            if extents.is_empty() || extents.len() > MAX_RANK {
                let e = AdmissionError::Rank {
                    rank: extents.len(),
                    min: 1,
                    max: MAX_RANK,
                };
                return Err(lib_error(py, e, TILED_NAMES));
            }
            let view = admit_layout(py, &extents, axes, tile, channels, planes)?;
            Ok(Layout { view })
        })
    }

    /// Bytes of the tiled buffer: every tile with its padding, over every outer index.
    #[getter]
    fn capacity(&self) -> u64 {
        self.view.capacity()
    }

    /// Tiles per role D, H, W, C (``ceil(extent / tile)``; 1 for an absent role, all 0
    /// for an empty tensor).
    #[getter]
    fn tile_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.view.tile_counts())
    }

    /// Logical extents in elements.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.view.extents()[..self.view.rank()])
    }

    /// The logical axis of each role D, H, W, C (``None``: absent).
    #[getter]
    fn axes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.view.layout().axes)
    }

    /// Tile extents in elements, D, H, W, C.
    #[getter]
    fn tile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.view.tile())
    }

    /// ``"compact"`` or ``"pad16"``.
    #[getter]
    fn channels(&self) -> &'static str {
        self.view.channels().name()
    }

    /// The tiled dtype: ``"bf16"`` or ``"i8"``.
    #[getter]
    fn dtype(&self) -> &'static str {
        if self.view.planes() == 2 {
            "bf16"
        } else {
            "i8"
        }
    }

    /// Byte planes per element: 2 (BF16) or 1 (INT8).
    #[getter]
    fn planes(&self) -> usize {
        self.view.planes()
    }

    /// Number of logical elements.
    #[getter]
    fn elements(&self) -> u64 {
        self.view.elements()
    }

    /// Product of the outer (unnamed) axes' extents.
    #[getter]
    fn outer_count(&self) -> u64 {
        self.view.outer_count()
    }

    /// Bytes per outer index (all tiles of one outer index, padding included).
    #[getter]
    fn bytes_per_outer(&self) -> u64 {
        self.view.bytes_per_outer()
    }

    /// Tiles per outer index.
    #[getter]
    fn tiles_per_outer(&self) -> u64 {
        self.view.tiles_per_outer()
    }

    /// The byte offset of byte plane ``plane`` (0 low, 1 high for BF16) of the element at
    /// logical ``index`` (one coordinate per axis).
    ///
    /// Raises:
    ///     ValueError: ``index`` or ``plane`` outside the layout.
    #[pyo3(signature = (index, plane=0))]
    fn offset_of(&self, index: Vec<u64>, plane: usize) -> PyResult<u64> {
        let rank = self.view.rank();
        let extents = &self.view.extents()[..rank];
        if index.len() != rank || index.iter().zip(extents).any(|(i, e)| i >= e) {
            return Err(PyValueError::new_err(format!(
                "index {index:?} is not inside shape {extents:?}"
            )));
        }
        let mut full = [0u64; MAX_RANK];
        full[..rank].copy_from_slice(&index);
        self.view.offset_of(&full, plane).ok_or_else(|| {
            PyValueError::new_err(format!("plane {plane} is not below {}", self.view.planes()))
        })
    }

    fn __repr__(&self) -> String {
        let axes: Vec<String> = self
            .view
            .layout()
            .axes
            .iter()
            .map(|a| a.map_or_else(|| "None".to_owned(), |a| a.to_string()))
            .collect();
        format!(
            "Layout(shape={:?}, axes=({}), tile={:?}, channels={:?}, dtype={:?}, capacity={})",
            &self.view.extents()[..self.view.rank()],
            axes.join(", "),
            self.view.tile(),
            self.view.channels().name(),
            self.dtype(),
            self.view.capacity()
        )
    }
}

/// The planes of a tiled dtype argument: `"bf16"` 2, `"i8"` 1 (or the NumPy dtypes).
fn tiled_planes(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<u8> {
    let bad = |what: String| {
        let code = simak::error::BINDING_INVALID_ENUM;
        simak_error(
            py,
            code,
            format!(
                "dtype={what} is neither \"bf16\" (CastTess) nor \"i8\" (QuantTess) (simak error code {code})"
            ),
        )
    };
    if let Ok(s) = dtype.extract::<pyo3::pybacked::PyBackedStr>() {
        return match &*s {
            "bf16" | "bfloat16" => Ok(2),
            "i8" | "int8" => Ok(1),
            other => Err(bad(format!("{other:?}"))),
        };
    }
    let descr = PyArrayDescr::new(py, dtype).map_err(|_| bad(repr(dtype)))?;
    if descr.num() == num(NPY_TYPES::NPY_BYTE) {
        Ok(1)
    } else if bfloat16(py).is_some_and(|(b, _)| b == descr.num()) {
        Ok(2)
    } else {
        Err(bad(repr(dtype)))
    }
}

/// Reads a tiled buffer back into its logical tensor (SPEC §5), never reading padding.
///
/// Args:
///     t: C-contiguous ``uint8`` array of at least ``layout.capacity`` bytes (as
///         :func:`casttess` or :func:`quanttess` returns).
///     layout: the :class:`Layout` it was written with.
///
/// Returns:
///     A new C-order array of ``layout.shape``: ``ml_dtypes.bfloat16`` for a ``"bf16"``
///     layout, ``int8`` for ``"i8"``.
///
/// Raises:
///     SimakError: ``t`` shorter than the capacity (0x411).
#[pyfunction]
fn untile<'py>(
    py: Python<'py>,
    t: &Bound<'py, PyAny>,
    layout: &Bound<'py, Layout>,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let view = layout.get().view;
        let ta = as_array(t)?;
        if ta.dtype().num() != num(NPY_TYPES::NPY_UBYTE)
            && ta.dtype().num() != num(NPY_TYPES::NPY_BYTE)
        {
            let code = 5;
            return Err(simak_error(
                py,
                code,
                format!(
                    "t has dtype {}; untile reads the bytes of a uint8 buffer (simak error code {code})",
                    repr(ta.dtype().as_any())
                ),
            ));
        }
        if !ta.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "t must be a C-contiguous buffer of bytes; pass np.ascontiguousarray(t)",
            ));
        }
        let len = ta.len() as u64;
        if len < view.capacity() {
            // Refused before the logical tensor is allocated.
            let e = simak::layout::UntileError::Tiled {
                required: view.capacity(),
                found: len,
            };
            return Err(lib_error(
                py,
                e,
                Names {
                    input: "t",
                    output: "out",
                },
            ));
        }
        let shape = &view.extents()[..view.rank()];
        let bf16 = view.planes() == 2;
        let out = if bf16 {
            new_array::<u16>(py, shape)?
        } else {
            new_array::<i8>(py, shape)?
        };
        let logical_len = view.elements() * view.planes() as u64;
        let (t_address, o_address) = (data_address(&ta), data_address(&out));
        // SAFETY: `t` is a live C-contiguous array of `len` bytes; `out` is the new array of
        // `logical_len` bytes, which nothing else references; they cannot overlap.
        let (tiled, logical) = unsafe {
            (
                input_slice(t_address, len),
                output_slice(o_address, logical_len),
            )
        };
        run_detached(py, view.elements(), || view.untile(tiled, logical)).map_err(|e| {
            lib_error(
                py,
                e,
                Names {
                    input: "t",
                    output: "out",
                },
            )
        })?;
        if bf16 {
            let (_, descr) = bfloat16(py).ok_or_else(|| {
                PyValueError::new_err(
                    "ml_dtypes is not importable: it is needed for bfloat16 results",
                )
            })?;
            return out.call_method1("view", (descr,));
        }
        Ok(out.into_any())
    })
}

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
fn dequantize<'py>(
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

/// A CastTess plan: input geometry and layout admitted once, the kernel level chosen once.
///
/// Args:
///     shape: logical extents (rank 1 to 6).
///     dtype: the input's format, as for :func:`quantize`.
///     axes, tile, channels: as for :func:`casttess`.
///     input_strides: byte strides per axis (``None``: C order).
#[pyclass(frozen, module = "simak")]
struct CastTessPlan {
    prepared: a65::casttess::Prepared,
}

#[pymethods]
impl CastTessPlan {
    #[new]
    #[pyo3(signature = (shape, dtype, axes, tile, channels="compact", input_strides=None))]
    fn new(
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: &Bound<'_, PyAny>,
        axes: &Bound<'_, PyAny>,
        tile: &Bound<'_, PyAny>,
        channels: &str,
        input_strides: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<CastTessPlan> {
        guarded(py, || {
            let extents = parse_u64s(shape, "shape")?;
            let dt = parse_dtype(py, dtype)?;
            let strides = input_strides
                .map(|s| parse_u64s(s, "input_strides"))
                .transpose()?;
            let input = match &strides {
                Some(s) => DynSpec::strided(&extents, s, dt),
                None => DynSpec::contiguous(&extents, dt),
            };
            let layout = MlaTiled::new(
                parse_axes(py, axes)?,
                parse_tile(py, tile)?,
                parse_channels(py, channels)?,
            );
            let plan = ct::check_inference_dyn(&ct::DynRequest {
                input,
                output: ct::TiledSpec {
                    extents: &extents,
                    dtype: DType::BF16,
                    layout,
                },
            })
            .map_err(|e| lib_error(py, e, TILED_NAMES))?;
            Ok(CastTessPlan {
                prepared: a65::casttess::prepare(&plan),
            })
        })
    }

    /// Runs the plan on ``x`` (exactly the plan's shape, dtype and strides) into ``out``
    /// (as for :func:`casttess`) or a new aligned buffer, split over ``threads`` native
    /// threads as for :func:`casttess`.
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
            let xa = as_array(x)?;
            let dt = input_dtype(py, &xa, "x", Some(plan.input().dtype()))?;
            let gin = Geometry::read(py, &xa, "x", 1)?;
            let vin = gin
                .spec(dt)
                .admit(Port::Input)
                .map_err(|e| lib_error(py, e, TILED_NAMES))?;
            same_geometry(py, &vin, plan.input(), "x", "input")?;
            let (oa, address, len) = tiled_out(py, out, plan.output().capacity())?;
            let prepared = self.prepared;
            run_tiled(
                py,
                &gin,
                plan.input().span(),
                (address, len),
                plan.elements(),
                |i, o| match threads {
                    1 => a65::casttess::execute(&prepared, i, o),
                    _ => run_pieces(prepared.split(threads, i, o)?, a65::casttess::Piece::run),
                },
            )?;
            Ok(oa.into_any())
        })
    }

    /// The output layout.
    #[getter]
    fn layout(&self) -> Layout {
        Layout {
            view: *self.prepared.plan().output(),
        }
    }

    /// Bytes of the tiled output.
    #[getter]
    fn capacity(&self) -> u64 {
        self.prepared.plan().output().capacity()
    }

    /// The CastTess kernel level chosen once (a diagnostic name).
    #[getter]
    fn implementation(&self) -> &'static str {
        self.prepared.implementation()
    }

    /// The input dtype name.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.prepared.plan().input().dtype().name()
    }

    fn __repr__(&self) -> String {
        let v = self.prepared.plan().input();
        format!(
            "CastTessPlan(shape={:?}, dtype={:?}, capacity={}, implementation={:?})",
            &v.extents()[..v.rank()],
            v.dtype().name(),
            self.capacity(),
            self.prepared.implementation()
        )
    }
}

/// The relocatable EV74 Quant v1 descriptor of `plan` (224 bytes, address slots 0).
#[pyfunction]
fn ev74_quant_encode_relocatable<'py>(
    py: Python<'py>,
    plan: &Bound<'py, QuantPlan>,
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        let device = ev74::check_inference::<Quant>(plan.get().prepared.plan())
            .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
        let packet = ev74::encode_relocatable(&device);
        Ok(PyBytes::new(py, packet.as_bytes().as_ref()))
    })
}

/// The relocatable EV74 CastTess v1 descriptor of `plan` (216 bytes, address slots 0).
#[pyfunction]
fn ev74_casttess_encode_relocatable<'py>(
    py: Python<'py>,
    plan: &Bound<'py, CastTessPlan>,
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        let device = ev74::check_inference::<CastTess>(plan.get().prepared.plan())
            .map_err(|e| lib_error(py, e, TILED_NAMES))?;
        let packet = ev74::encode_relocatable(&device);
        Ok(PyBytes::new(py, packet.as_bytes().as_ref()))
    })
}

/// The entry a packet most likely is: by magic, else by length, else Quant v1.
fn is_casttess(bytes: &[u8]) -> bool {
    match bytes.get(..4) {
        Some(m) if m == CastTess::MAGIC => true,
        Some(m) if m == Quant::MAGIC => false,
        _ => bytes.len() == CastTess::DESCRIPTOR_SIZE,
    }
}

fn decode_error(py: Python<'_>, title: &str, e: DecodeError) -> PyErr {
    let code = e.code();
    simak_error(
        py,
        code,
        format!(
            "invalid {title} packet: {e} (rule {:?}, simak error code {code})",
            e.rule()
        ),
    )
}

/// The fields of entry `E`'s descriptor `bytes` as a dict (wire order).
fn fields_dict<'py, E: NativeEntry>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let Some(fields) = E::fields(bytes) else {
        let code = 1;
        return Err(simak_error(
            py,
            code,
            format!(
                "a {} descriptor is {} bytes, not {} (simak error code {code})",
                E::TITLE,
                E::DESCRIPTOR_SIZE,
                bytes.len()
            ),
        ));
    };
    for f in &fields {
        match f.value {
            FieldValue::Magic(m) => dict.set_item(f.name, PyBytes::new(py, &m))?,
            other => dict.set_item(f.name, other.as_i128())?,
        }
    }
    Ok(dict)
}

fn decode_entry<'py, E: NativeEntry>(
    py: Python<'py>,
    bytes: &[u8],
    validate: bool,
) -> PyResult<Bound<'py, PyDict>> {
    if validate {
        let repr = E::parse(bytes).map_err(|e| decode_error(py, E::TITLE, e))?;
        let prefix = E::prefix(&repr);
        if prefix.input_address != 0 || prefix.output_address != 0 {
            ev74::decode::<E>(bytes).map_err(|e| decode_error(py, E::TITLE, e))?;
        }
    }
    fields_dict::<E>(py, bytes)
}

/// Decodes an EV74 descriptor (Quant v1 or CastTess v1, told by its magic).
#[pyfunction]
#[pyo3(signature = (packet, validate=true))]
fn ev74_decode<'py>(
    py: Python<'py>,
    packet: &Bound<'py, PyBytes>,
    validate: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(py, || {
        let bytes = packet.as_bytes();
        if is_casttess(bytes) {
            decode_entry::<CastTess>(py, bytes, validate)
        } else {
            decode_entry::<Quant>(py, bytes, validate)
        }
    })
}

/// The test seam of SPEC §10: Quant with the FP control word supplied instead of read from
/// the register (the register is never changed). Not public API.
#[pyfunction]
#[pyo3(signature = (x, multiplier, control, exact=false))]
fn _quantize_with_fp_control<'py>(
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
        a65::quant::execute_with_fp_control(&prepared, inp, outp, Some(control))
            .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
        Ok(out.into_any())
    })
}

/// The `simak._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SimakError", py.get_type::<SimakError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SIMD_ROUTES", !a65::SCALAR_ONLY)?;
    m.add_function(wrap_pyfunction!(quantize, m)?)?;
    m.add_function(wrap_pyfunction!(casttess, m)?)?;
    m.add_function(wrap_pyfunction!(quanttess, m)?)?;
    m.add_function(wrap_pyfunction!(untile, m)?)?;
    m.add_function(wrap_pyfunction!(dequantize, m)?)?;
    m.add_function(wrap_pyfunction!(ev74_quant_encode_relocatable, m)?)?;
    m.add_function(wrap_pyfunction!(ev74_casttess_encode_relocatable, m)?)?;
    m.add_function(wrap_pyfunction!(ev74_decode, m)?)?;
    m.add_function(wrap_pyfunction!(_quantize_with_fp_control, m)?)?;
    m.add_class::<QuantPlan>()?;
    m.add_class::<CastTessPlan>()?;
    m.add_class::<Layout>()?;
    Ok(())
}
