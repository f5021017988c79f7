//! The `MlaTiled` layout (SPEC §5) in Python: the `Layout` class and `untile`, which reads a
//! tiled buffer back into its logical tensor.

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyTuple, PyType};
use simak::layout::TiledView;
use simak::{AdmissionError, MAX_RANK};

use crate::args::{parse_layout, parse_u64s, repr};
use crate::arrays::{
    as_array, bfloat16, data_address, input_slice, new_array, num, numpy_fn, output_slice,
};
use crate::errors::{Names, TILED_NAMES, guarded, lib_error, simak_error};
use crate::run::run_detached;

/// A tiled layout argument set, admitted.
pub(crate) fn admit_layout(
    py: Python<'_>,
    extents: &[u64],
    axes: &Bound<'_, PyAny>,
    tile: &Bound<'_, PyAny>,
    channels: &str,
    planes: u8,
) -> PyResult<TiledView> {
    let layout = parse_layout(py, axes, tile, channels)?;
    layout
        .admit(extents, planes)
        .map_err(|e| lib_error(py, e, TILED_NAMES))
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
///         string (0x601), a negative extent (0x608).
#[pyclass(frozen, module = "simak", eq)]
#[derive(PartialEq)]
pub(crate) struct Layout {
    pub(crate) view: TiledView,
}

/// A layout's constructor arguments, for pickling: shape, axes, tile, channels, dtype.
type LayoutArgs = (
    Vec<u64>,
    Vec<Option<u8>>,
    Vec<u32>,
    &'static str,
    &'static str,
);

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
    /// logical ``index`` (one nonnegative coordinate per axis).
    ///
    /// Raises:
    ///     SimakError: ``index`` (a negative coordinate included) or ``plane`` outside the
    ///         layout (0x608).
    #[pyo3(signature = (index, plane=0))]
    fn offset_of(&self, py: Python<'_>, index: Vec<i128>, plane: i128) -> PyResult<u64> {
        let code = simak::error::BINDING_OUT_OF_RANGE;
        let rank = self.view.rank();
        let extents = &self.view.extents()[..rank];
        let inside = index.len() == rank
            && index
                .iter()
                .zip(extents)
                .all(|(&i, &e)| i >= 0 && i < i128::from(e));
        if !inside {
            return Err(simak_error(
                py,
                code,
                format!(
                    "index {index:?} is not inside shape {extents:?}: one coordinate per axis, each in 0..extent (a negative coordinate is refused, not counted from the end) (simak error code {code})"
                ),
            ));
        }
        let planes = self.view.planes();
        let plane = usize::try_from(plane)
            .ok()
            .filter(|&p| p < planes)
            .ok_or_else(|| {
                simak_error(
                    py,
                    code,
                    format!("plane {plane} is not in 0..{planes} (simak error code {code})"),
                )
            })?;
        let mut full = [0u64; MAX_RANK];
        for (slot, &i) in full.iter_mut().zip(&index) {
            // Checked above: 0 <= i < extent <= u64::MAX.
            *slot = i as u64;
        }
        self.view.offset_of(&full, plane).ok_or_else(|| {
            simak_error(
                py,
                code,
                format!(
                    "index {index:?}, plane {plane} is outside the layout (simak error code {code})"
                ),
            )
        })
    }

    /// Pickling: the layout's arguments (shape, axes, tile, channels, dtype), admitted
    /// again by the constructor when loaded, so a pickle whose arguments break a rule
    /// raises :class:`SimakError`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, LayoutArgs)> {
        let this = slf.get();
        let view = &this.view;
        let args = (
            view.extents()[..view.rank()].to_vec(),
            view.layout().axes.to_vec(),
            view.tile().to_vec(),
            view.channels().name(),
            this.dtype(),
        );
        Ok((slf.get_type(), args))
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
pub(crate) fn tiled_planes(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<u8> {
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

/// The tiled buffer argument of `untile`: an ndarray as is; a `bytes`, `bytearray` or
/// `memoryview` as its bytes (`np.frombuffer(t, np.uint8)`, read in place; a
/// non-contiguous `memoryview` is `BINDING_NOT_CONTIGUOUS`); anything else as `as_array`.
fn tiled_input<'py>(
    py: Python<'py>,
    t: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    if t.is_instance_of::<PyBytes>()
        || t.is_instance_of::<PyByteArray>()
        || t.is_instance_of::<PyMemoryView>()
    {
        if t.is_instance_of::<PyMemoryView>() && !t.getattr("c_contiguous")?.is_truthy()? {
            let code = simak::error::BINDING_NOT_CONTIGUOUS;
            return Err(simak_error(
                py,
                code,
                format!(
                    "t is a memoryview that is not C-contiguous; pass bytes(t) or np.ascontiguousarray(t) (simak error code {code})"
                ),
            ));
        }
        let u8_type = py.import("numpy")?.getattr("uint8")?;
        let a = numpy_fn(py, "frombuffer")?.call1((t, u8_type))?;
        return Ok(a.cast_into::<PyUntypedArray>()?);
    }
    as_array(t)
}

/// Reads a tiled buffer back into its logical tensor (SPEC §5), never reading padding.
///
/// Args:
///     t: C-contiguous ``uint8`` (or ``int8``) array of at least ``layout.capacity``
///         bytes (as :func:`casttess` or :func:`quanttess` returns), or a ``bytes``,
///         ``bytearray`` or C-contiguous ``memoryview`` of them, read in place.
///     layout: the :class:`Layout` it was written with.
///
/// Returns:
///     A new C-order array of ``layout.shape``: ``ml_dtypes.bfloat16`` for a ``"bf16"``
///     layout, ``int8`` for ``"i8"``.
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
        let view = layout.get().view;
        let ta = tiled_input(py, t)?;
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
            let code = simak::error::BINDING_NOT_CONTIGUOUS;
            return Err(simak_error(
                py,
                code,
                format!(
                    "t must be a C-contiguous buffer of bytes; pass np.ascontiguousarray(t) (simak error code {code})"
                ),
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
