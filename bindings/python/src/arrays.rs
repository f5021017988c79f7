//! NumPy arrays and buffers: turning Python objects into ndarrays without copies, reading
//! an array's geometry (address, extents, byte strides), forming byte slices from admitted
//! spans, and allocating output arrays (aligned for the tiled layout).

use std::ffi::c_int;

use numpy::npyffi::{self, NPY_TYPES};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use simak::{AdmissionError, DType, DynSpec, MAX_RANK, Port, View};

use crate::args::{input_dtype, parse_dtype, repr, type_name};
use crate::errors::{Names, lib_error, simak_error};

/// `numpy.asarray`, cached.
pub(crate) fn asarray_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ASARRAY
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("asarray")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// `numpy.<name>` (looked up per call: only on the foreign-object path).
pub(crate) fn numpy_fn<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("numpy")?.getattr(name)
}

/// `numpy.float32`, cached.
pub(crate) fn float32_type(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static FLOAT32: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    FLOAT32
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("float32")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// `numpy.generic`, the type of NumPy scalars, cached.
pub(crate) fn generic_type(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static GENERIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    GENERIC
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.getattr("generic")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// The `ml_dtypes.bfloat16` dtype and its type number, if `ml_dtypes` imports.
pub(crate) fn bfloat16(py: Python<'_>) -> Option<(c_int, &Bound<'_, PyArrayDescr>)> {
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
pub(crate) fn as_array<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
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
pub(crate) fn as_out_array<'py>(
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
            format!("{name}= is a read-only array"),
        ));
    }
    Ok(a.clone())
}

/// An array's geometry: data address, extents in elements and byte strides (non-negative;
/// axes of extent 0 or 1 carry 0), its dtype's type number, byte order and item size.
pub(crate) struct Geometry {
    pub(crate) address: usize,
    pub(crate) rank: usize,
    pub(crate) extents: [u64; MAX_RANK],
    pub(crate) strides: [u64; MAX_RANK],
}

impl Geometry {
    /// Reads `a`. `min_rank` is the operation's lowest rank, for the rank error.
    pub(crate) fn read(
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
                format!("{name} has {rank} dimensions: {e}",),
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
                        "{name} has stride {s} bytes on axis {axis}: a negative stride (a reversed view such as x[::-1]) is not admitted, strides in bytes are unsigned in the contract; pass np.ascontiguousarray({name}) to copy it"
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

    pub(crate) fn extents(&self) -> &[u64] {
        &self.extents[..self.rank]
    }

    /// Whether this nonempty array has exactly the admitted geometry `view` (whose axes of
    /// extent 0 or 1 carry stride 0, as here): then admitting it again would give `view`.
    pub(crate) fn matches(&self, view: &View) -> bool {
        self.rank == view.rank()
            && self.extents == *view.extents()
            && self.strides == *view.strides()
            && !self.extents().contains(&0)
    }

    /// The port spec. An empty array has no storage and NumPy gives its axes arbitrary
    /// strides (often 0), so it is described as row-major contiguous: nothing is read or
    /// written either way.
    pub(crate) fn spec(&self, dtype: DType) -> DynSpec<'_> {
        let extents = &self.extents[..self.rank];
        if extents.contains(&0) {
            DynSpec::contiguous(extents, dtype)
        } else {
            DynSpec::strided(extents, &self.strides[..self.rank], dtype)
        }
    }
}

/// The address of an array's first element.
pub(crate) fn data_address(a: &Bound<'_, PyUntypedArray>) -> usize {
    // SAFETY: `a` is a live ndarray, so its object pointer is valid for reading the data
    // pointer field while we hold the GIL (the `Bound` proves it).
    unsafe { (*a.as_array_ptr()).fields.data as usize }
}

/// Whether the byte ranges `[a, a + la)` and `[b, b + lb)` (nonempty) overlap.
pub(crate) fn ranges_overlap(a: usize, la: u64, b: usize, lb: u64) -> bool {
    let (a, b) = (a as u128, b as u128);
    la > 0 && lb > 0 && a < b + u128::from(lb) && b < a + u128::from(la)
}

/// The input slice of `span` bytes at `address`.
///
/// # Safety
///
/// `address..address + span` must be readable memory of a live array for the slice's
/// lifetime (the array's elements, as admission computed the span from its geometry).
pub(crate) unsafe fn input_slice<'a>(address: usize, span: u64) -> &'a [u8] {
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
pub(crate) unsafe fn output_slice<'a>(address: usize, span: u64) -> &'a mut [u8] {
    if span == 0 {
        return &mut [];
    }
    // SAFETY: the caller guarantees the range is the live, writeable array's storage and
    // that no other slice aliases it.
    unsafe { std::slice::from_raw_parts_mut(address as *mut u8, span as usize) }
}

/// The byte length of a C-contiguous array, or a `ValueError` naming it.
pub(crate) fn contiguous_bytes(a: &Bound<'_, PyUntypedArray>, name: &str) -> PyResult<u64> {
    if !a.is_c_contiguous() {
        let code = simak::error::BINDING_NOT_CONTIGUOUS;
        return Err(simak_error(
            a.py(),
            code,
            format!(
                "{name}= must be a C-contiguous array (a buffer of bytes); pass np.ascontiguousarray({name})"
            ),
        ));
    }
    let itemsize = a.dtype().itemsize() as u64;
    Ok(a.len() as u64 * itemsize)
}

pub(crate) fn num(t: NPY_TYPES) -> c_int {
    t as c_int
}

/// A new uninitialized C-order array of `shape`; every byte must be written before it is
/// returned to Python. An impossible size is NumPy's own `MemoryError` or `ValueError`.
pub(crate) fn new_array<'py, T: numpy::Element>(
    py: Python<'py>,
    shape: &[u64],
) -> PyResult<Bound<'py, PyUntypedArray>> {
    new_array_of(py, T::get_dtype(py), shape)
}

/// As [`new_array`], of the NumPy dtype `descr` (for `float16` and `ml_dtypes.bfloat16`,
/// which have no Rust element type here).
pub(crate) fn new_array_of<'py>(
    py: Python<'py>,
    descr: Bound<'py, PyArrayDescr>,
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
            descr.into_dtype_ptr(),
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
pub(crate) fn new_tiled<'py>(
    py: Python<'py>,
    capacity: u64,
) -> PyResult<Bound<'py, PyUntypedArray>> {
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

/// The tiled output buffer: the caller's `out=` (a writeable C-contiguous `uint8` array
/// of at least the capacity, 16-byte aligned: the library checks both) or a new one.
pub(crate) fn tiled_out<'py>(
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
                        "out= has dtype {}; the tiled ops write bytes into a uint8 buffer",
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

/// A new `int8` array viewing a zeroed buffer of `view.span()` bytes with `view`'s strides.
pub(crate) fn strided_int8<'py>(
    py: Python<'py>,
    view: &View,
) -> PyResult<Bound<'py, PyUntypedArray>> {
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
pub(crate) fn same_geometry(
    py: Python<'_>,
    got: &View,
    want: &View,
    name: &str,
    port: &str,
) -> PyResult<()> {
    if got == want {
        return Ok(());
    }
    let shape = |v: &View| v.extents()[..v.rank()].to_vec();
    let strides = |v: &View| v.strides()[..v.rank()].to_vec();
    if got.rank() != want.rank() {
        let code = 0x202;
        return Err(simak_error(
            py,
            code,
            format!(
                "{name} has rank {} (shape {:?}) but the plan's {port} has rank {} (shape {:?})",
                got.rank(),
                shape(got),
                want.rank(),
                shape(want)
            ),
        ));
    }
    if shape(got) != shape(want) {
        let code = 0x202;
        return Err(simak_error(
            py,
            code,
            format!(
                "{name} has shape {:?} but the plan's {port} has shape {:?}",
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
            "{name} has byte strides {:?} but the plan's {port} strides are {:?} (axes of extent 0 or 1 count as 0): make a plan for this layout",
            strides(got),
            strides(want)
        ),
    ))
}

/// Reads a call's input array `x`: its dtype (`dtype=` given or not, [`input_dtype`]) and
/// geometry (an op of lowest rank `min_rank`), in the order every op's function reports
/// their errors.
pub(crate) fn read_input(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    min_rank: usize,
) -> PyResult<(DType, Geometry)> {
    let given = dtype.map(|d| parse_dtype(py, d)).transpose()?;
    let xa = as_array(x)?;
    let dt = input_dtype(py, &xa, "x", given)?;
    Ok((dt, Geometry::read(py, &xa, "x", min_rank)?))
}

/// Reads the input array `x` of a plan's `execute`: it must have exactly the plan's input
/// `view` (dtype, shape and byte strides), else the error of admitting it (`names` for the
/// messages) or of comparing the two geometries ([`same_geometry`]).
pub(crate) fn read_plan_input(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    view: &View,
    min_rank: usize,
    names: Names,
) -> PyResult<Geometry> {
    let xa = as_array(x)?;
    let dt = input_dtype(py, &xa, "x", Some(view.dtype()))?;
    let g = Geometry::read(py, &xa, "x", min_rank)?;
    if !g.matches(view) {
        let v = g
            .spec(dt)
            .admit(Port::Input)
            .map_err(|e| lib_error(py, e, names))?;
        same_geometry(py, &v, view, "x", "input")?;
    }
    Ok(g)
}
