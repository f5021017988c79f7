//! CastTess (SPEC §4, §5): `casttess` and the reusable `CastTessPlan`.

use pyo3::prelude::*;
use simak::DType;
use simak::a65;
use simak::ops::casttess as ct;

use crate::args::{
    check_threads, default_layout, parse_dtype, parse_layout, parse_strides, parse_u64s, port_spec,
};
use crate::arrays::{read_input, read_plan_input};
use crate::errors::{TILED_NAMES, guarded, lib_error};
use crate::layout::Layout;
use crate::run::run_tiled;

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
pub(crate) fn casttess<'py>(
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
        let (dt, gin) = read_input(py, x, dtype, 1)?;
        let layout = parse_layout(py, &axes, &tile, channels)?;
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
        run_tiled(py, &gin, &prepared, out, threads)
    })
}

/// A CastTess plan: input geometry and layout admitted once, the kernel level chosen once.
///
/// Args:
///     shape: logical extents (rank 1 to 6).
///     dtype: the input's format, as for :func:`quantize`.
///     axes, tile, channels: as for :func:`casttess`.
///     input_strides: byte strides per axis (``None``: C order).
///
/// Raises:
///     SimakError: the admission rules, as :func:`casttess`; a negative extent or stride
///         (0x608).
#[pyclass(frozen, module = "simak")]
pub(crate) struct CastTessPlan {
    pub(crate) prepared: a65::casttess::Prepared,
    input_strided: bool,
}

/// A plan's constructor arguments, for pickling: shape, dtype, axes, tile, channels and
/// input strides (`None`: C order).
type CastTessPlanArgs = (
    Vec<u64>,
    &'static str,
    Vec<Option<u8>>,
    Vec<u32>,
    &'static str,
    Option<Vec<u64>>,
);

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
            let strides = parse_strides(input_strides, "input_strides")?;
            let input = port_spec(&extents, strides.as_deref(), dt);
            let layout = parse_layout(py, axes, tile, channels)?;
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
                input_strided: strides.is_some(),
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
            let gin = read_plan_input(py, x, plan.input(), 1, TILED_NAMES)?;
            run_tiled(py, &gin, &self.prepared, out, threads)
        })
    }

    /// The output layout.
    #[getter]
    fn layout(&self) -> Layout {
        Layout {
            view: *self.prepared.plan().output(),
            dtype: simak::DType::BF16,
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

    /// Pickling: the plan's request (shape, dtype, axes, tile, channels, input strides),
    /// admitted again by the constructor when loaded, so a pickle whose arguments break a
    /// rule raises :class:`SimakError`.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, pyo3::types::PyType>, CastTessPlanArgs)> {
        let this = slf.get();
        let plan = this.prepared.plan();
        let (vi, out) = (plan.input(), plan.output());
        let args = (
            vi.extents()[..vi.rank()].to_vec(),
            vi.dtype().name(),
            out.layout().axes.to_vec(),
            out.tile().to_vec(),
            out.channels().name(),
            this.input_strided
                .then(|| vi.strides()[..vi.rank()].to_vec()),
        );
        Ok((slf.get_type(), args))
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
