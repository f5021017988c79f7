//! QuantTess: `quanttess`, Quant's arithmetic written in the `MlaTiled` layout.

use pyo3::prelude::*;
use simak::DType;
use simak::a65;
use simak::ops::casttess as ct;
use simak::ops::quanttess as qt;

use crate::args::{check_threads, default_layout, parse_layout, quant_params};
use crate::arrays::read_input;
use crate::errors::{TILED_NAMES, guarded, lib_error};
use crate::run::run_tiled;

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
pub(crate) fn quanttess<'py>(
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
        let params = quant_params(py, multiplier, zero_point, rounding)?;
        let (dt, gin) = read_input(py, x, dtype, 1)?;
        let layout = parse_layout(py, &axes, &tile, channels)?;
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
        run_tiled(py, &gin, &prepared, out, threads)
    })
}
