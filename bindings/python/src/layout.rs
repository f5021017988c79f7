//! The `MlaTiled` layout (SPEC §5, §12.1) in Python: the `Layout` class, its stored dtype
//! and the tiled buffer argument shared by `untile` and the Detess ops (`detess.rs`).

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyTuple, PyType};
use simak::layout::{TileAlign, TiledView};
use simak::{AdmissionError, DType, MAX_RANK};

use crate::args::{parse_layout, parse_u64s, repr};
use crate::arrays::{as_array, bfloat16, num, numpy_fn};
use crate::errors::{TILED_NAMES, guarded, lib_error, simak_error};

/// A tiled layout argument set, admitted for the stored dtype `dtype` (`E` byte planes).
pub(crate) fn admit_layout(
    py: Python<'_>,
    extents: &[u64],
    axes: &Bound<'_, PyAny>,
    tile: &Bound<'_, PyAny>,
    channels: &str,
    tile_align: TileAlign,
    dtype: DType,
) -> PyResult<TiledView> {
    let layout = parse_layout(py, axes, tile, channels)?.with_tile_align(tile_align);
    let planes = match dtype.size() {
        1 => 1,
        2 => 2,
        _ => 4,
    };
    layout
        .admit(extents, planes)
        .map_err(|e| lib_error(py, e, TILED_NAMES))
}

/// The ``MlaTiled`` layout of a logical shape (SPEC §5, §12.1): sizes and offsets, for
/// reading tiled buffers and the MLA's outputs back (:func:`detess`, :func:`untile`) or
/// sizing device buffers.
///
/// Args:
///     shape: logical extents in elements (rank 1 to 6). A batch of frames is the leading
///         outer axis (``[N, H, W, C]`` with ``axes=(None, 1, 2, 3)``), frames back to back.
///     axes, tile: as for :func:`casttess`: the logical axis of each role D, H, W, C
///         (``None``: absent) and the tile extents in elements.
///     channels: ``"compact"`` (``sc = tc'``), ``"pad16"`` (channels padded to a multiple
///         of 16 per pixel) or ``"cblock16"`` (16-channel blocks, SPEC §12.1; MLA outputs
///         only, the input-side ops refuse it).
///     dtype: the stored dtype: ``"bf16"`` (CastTess, 2 byte planes), ``"i8"``
///         (QuantTess, 1), ``"i16"`` (2) or ``"i32"`` (4), or the NumPy dtypes
///         (``ml_dtypes.bfloat16``, ``int8``, ``int16``, ``int32``).
///     tile_align: 16 (tiles rounded up to 16 bytes, SPEC §5) or 1 (tiles back to back,
///         as the MLA writes Compact outputs; the input-side ops refuse it).
///
/// Raises:
///     SimakError: the layout rules (43, 44, 47), capacity overflow (25), a bad option
///         string or ``tile_align`` (0x601), a negative extent (0x608).
#[pyclass(frozen, module = "simak", eq)]
#[derive(PartialEq)]
pub(crate) struct Layout {
    pub(crate) view: TiledView,
    /// The stored dtype (`I8`, `I16`, `I32` or `BF16`).
    pub(crate) dtype: DType,
}

/// A layout's constructor arguments, for pickling: shape, axes, tile, channels, dtype,
/// tile alignment.
type LayoutArgs = (
    Vec<u64>,
    Vec<Option<u8>>,
    Vec<u32>,
    &'static str,
    &'static str,
    u64,
);

#[pymethods]
impl Layout {
    #[new]
    #[pyo3(signature = (shape, axes, tile, channels="compact", dtype=None, tile_align=16))]
    #[pyo3(text_signature = "(shape, axes, tile, channels='compact', dtype='bf16', tile_align=16)")]
    fn new(
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        axes: &Bound<'_, PyAny>,
        tile: &Bound<'_, PyAny>,
        channels: &str,
        dtype: Option<&Bound<'_, PyAny>>,
        tile_align: i64,
    ) -> PyResult<Layout> {
        guarded(py, || {
            let extents = parse_u64s(shape, "shape")?;
            let dtype = match dtype {
                Some(d) => tiled_dtype(py, d)?,
                None => DType::BF16,
            };
            let align = u64::try_from(tile_align)
                .ok()
                .and_then(TileAlign::from_bytes)
                .ok_or_else(|| {
                    let code = simak::error::BINDING_INVALID_ENUM;
                    simak_error(
                        py,
                        code,
                        format!("tile_align={tile_align} is neither 16 nor 1 (bytes)"),
                    )
                })?;
            if extents.is_empty() || extents.len() > MAX_RANK {
                let e = AdmissionError::Rank {
                    rank: extents.len(),
                    min: 1,
                    max: MAX_RANK,
                };
                return Err(lib_error(py, e, TILED_NAMES));
            }
            let view = admit_layout(py, &extents, axes, tile, channels, align, dtype)?;
            Ok(Layout { view, dtype })
        })
    }

    /// Bytes of the tiled buffer: every tile with its padding, over every outer index
    /// (one head's span in an OFM buffer).
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

    /// ``"compact"``, ``"pad16"`` or ``"cblock16"``.
    #[getter]
    fn channels(&self) -> &'static str {
        self.view.channels().name()
    }

    /// The stored dtype: ``"bf16"``, ``"i8"``, ``"i16"`` or ``"i32"``.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    /// Tile alignment in bytes: 16 or 1.
    #[getter]
    fn tile_align(&self) -> u64 {
        self.view.tile_align().bytes()
    }

    /// Byte planes per element: 1 (INT8), 2 (BF16, INT16) or 4 (INT32).
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

    /// The byte offset of byte plane ``plane`` (0 the least significant byte) of the
    /// element at logical ``index`` (one nonnegative coordinate per axis).
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
                    "index {index:?} is not inside shape {extents:?}: one coordinate per axis, each in 0..extent (a negative coordinate is refused, not counted from the end)"
                ),
            ));
        }
        let planes = self.view.planes();
        let plane = usize::try_from(plane)
            .ok()
            .filter(|&p| p < planes)
            .ok_or_else(|| simak_error(py, code, format!("plane {plane} is not in 0..{planes}")))?;
        let mut full = [0u64; MAX_RANK];
        for (slot, &i) in full.iter_mut().zip(&index) {
            // Checked above: 0 <= i < extent <= u64::MAX.
            *slot = i as u64;
        }
        self.view.offset_of(&full, plane).ok_or_else(|| {
            simak_error(
                py,
                code,
                format!("index {index:?}, plane {plane} is outside the layout"),
            )
        })
    }

    /// Pickling: the layout's arguments (shape, axes, tile, channels, dtype, tile_align),
    /// admitted again by the constructor when loaded, so a pickle whose arguments break a
    /// rule raises :class:`SimakError`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, LayoutArgs)> {
        let this = slf.get();
        let view = &this.view;
        let args = (
            view.extents()[..view.rank()].to_vec(),
            view.layout().axes.to_vec(),
            view.tile().to_vec(),
            view.channels().name(),
            this.dtype(),
            view.tile_align().bytes(),
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
            "Layout(shape={:?}, axes=({}), tile={:?}, channels={:?}, dtype={:?}, tile_align={}, capacity={})",
            &self.view.extents()[..self.view.rank()],
            axes.join(", "),
            self.view.tile(),
            self.view.channels().name(),
            self.dtype(),
            self.view.tile_align().bytes(),
            self.view.capacity()
        )
    }
}

/// A tiled (stored) dtype argument: `"bf16"`, `"i8"`, `"i16"`, `"i32"` (or the long
/// names, or the NumPy dtypes `ml_dtypes.bfloat16`, `int8`, `int16`, `int32`).
pub(crate) fn tiled_dtype(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<DType> {
    let bad = |what: String| {
        let code = simak::error::BINDING_INVALID_ENUM;
        simak_error(
            py,
            code,
            format!(
                "dtype={what} is none of \"bf16\", \"i8\", \"i16\", \"i32\" (or ml_dtypes.bfloat16, numpy.int8, numpy.int16, numpy.int32)"
            ),
        )
    };
    if let Ok(s) = dtype.extract::<pyo3::pybacked::PyBackedStr>() {
        return match &*s {
            "bf16" | "bfloat16" => Ok(DType::BF16),
            "i8" | "int8" => Ok(DType::I8),
            "i16" | "int16" => Ok(DType::I16),
            "i32" | "int32" => Ok(DType::I32),
            other => Err(bad(format!("{other:?}"))),
        };
    }
    let descr = PyArrayDescr::new(py, dtype).map_err(|_| bad(repr(dtype)))?;
    let n = descr.num();
    if n == num(NPY_TYPES::NPY_BYTE) {
        Ok(DType::I8)
    } else if n == num(NPY_TYPES::NPY_SHORT) {
        Ok(DType::I16)
    } else if n == num(NPY_TYPES::NPY_INT) {
        Ok(DType::I32)
    } else if bfloat16(py).is_some_and(|(b, _)| b == n) {
        Ok(DType::BF16)
    } else {
        Err(bad(repr(dtype)))
    }
}

/// A tiled buffer argument named `name` in messages (the Detess ops' and the model's
/// `ofm`): an ndarray as is; a `bytes`, `bytearray` or `memoryview` as its bytes
/// (`np.frombuffer(t, np.uint8)`, read in place; a non-contiguous `memoryview` is
/// `BINDING_NOT_CONTIGUOUS`); anything else as `as_array`.
pub(crate) fn tiled_input<'py>(
    py: Python<'py>,
    t: &Bound<'py, PyAny>,
    name: &str,
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
                    "{name} is a memoryview that is not C-contiguous; pass bytes({name}) or \
                     np.ascontiguousarray({name})"
                ),
            ));
        }
        let u8_type = py.import("numpy")?.getattr("uint8")?;
        let a = numpy_fn(py, "frombuffer")?.call1((t, u8_type))?;
        return Ok(a.cast_into::<PyUntypedArray>()?);
    }
    as_array(t)
}
