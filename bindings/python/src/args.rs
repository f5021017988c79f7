//! Python arguments into library values: dtypes, multipliers, zero points, rounding and
//! channel modes, tiled-layout axes and tiles, shapes and strides, thread counts.

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyTuple};
use simak::layout::{Channels, MlaTiled};
use simak::ops::quant::{Params, Rounding};
use simak::{AdmissionError, DType, DynSpec, Port};

use crate::arrays::{bfloat16, float32_type, num};
use crate::errors::simak_error;

/// The names of the dtype choices, for messages.
pub(crate) const DTYPE_CHOICES: &str = "\"f32\", \"bf16\", \"f16\" or a NumPy dtype (numpy.float32, numpy.float16, ml_dtypes.bfloat16)";

/// A `dtype=` argument: `"f32"`, `"bf16"`, `"f16"` or a NumPy dtype.
pub(crate) fn parse_dtype(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<DType> {
    let bad = |what: String| {
        let code = simak::error::BINDING_INVALID_ENUM;
        simak_error(py, code, format!("dtype={what} is none of {DTYPE_CHOICES}"))
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
pub(crate) fn type_name(x: &Bound<'_, PyAny>) -> String {
    x.get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

pub(crate) fn repr(x: &Bound<'_, PyAny>) -> String {
    const MAX: usize = 200;
    let r = x
        .repr()
        .map_or_else(|_| "?".to_owned(), |r| r.to_string_lossy().into_owned());
    if r.len() <= MAX {
        return r;
    }
    // A large array or buffer: its first characters, then how much was left out.
    let mut end = MAX;
    while !r.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} characters)", &r[..end], r.chars().count())
}

/// The float dtype of input array `a` (`name` in messages), with an optional `dtype=`
/// override for `uint16` storage.
pub(crate) fn input_dtype(
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
        simak_error(py, code, why)
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
pub(crate) fn multiplier_bits(m: &Bound<'_, PyAny>) -> PyResult<u32> {
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
    let bits = simak::arith::cast::f64_to_f32_bits(v);
    // A positive finite value that binary32 cannot hold: say so, with the rule's code
    // (14 not > 0, 13 not finite), as the CLI does, rather than show the rounded bits.
    let rounded_to = match bits {
        0 if v.to_bits() != 0 && v.is_sign_positive() => Some(("zero", 14)),
        0x7f80_0000 if v.is_finite() => Some(("infinity", 13)),
        _ => None,
    };
    if let Some((to, code)) = rounded_to {
        return Err(simak_error(
            m.py(),
            code,
            format!(
                "multiplier {} rounds to {to} in binary32 (finite, nonzero binary32 values lie between about 1.4e-45 and 3.4e38)",
                repr(m)
            ),
        ));
    }
    Ok(bits)
}

/// A zero point: an integer in [-128, 127] (any other integer is the admission error 15,
/// values beyond `i32` included).
pub(crate) fn zero_point(py: Python<'_>, zp: &Bound<'_, PyAny>) -> PyResult<i32> {
    let out_of_range = || {
        let code = AdmissionError::ZeroPointOutOfRange { zero_point: 0 }.code();
        simak_error(
            py,
            code,
            format!("zero point {} is outside [-128, 127]", repr(zp)),
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

pub(crate) const ROUNDING_CHOICES: &str =
    "\"nearest-even\", \"toward-zero\", \"toward-positive\", \"toward-negative\"";

pub(crate) fn parse_rounding(py: Python<'_>, s: &str) -> PyResult<Rounding> {
    Rounding::ALL
        .into_iter()
        .find(|r| r.name() == s)
        .ok_or_else(|| {
            let code = simak::error::BINDING_INVALID_ENUM;
            simak_error(
                py,
                code,
                format!("rounding={s:?} is none of {ROUNDING_CHOICES}"),
            )
        })
}

pub(crate) fn parse_channels(py: Python<'_>, s: &str) -> PyResult<Channels> {
    match s {
        "compact" => Ok(Channels::Compact),
        "pad16" => Ok(Channels::PadTo16),
        "cblock16" => Ok(Channels::CBlock16),
        other => {
            let code = simak::error::BINDING_INVALID_ENUM;
            Err(simak_error(
                py,
                code,
                format!("channels={other:?} is none of \"compact\", \"pad16\", \"cblock16\""),
            ))
        }
    }
}

/// `axes`: four items, D, H, W, C, each `None` (absent) or a nonnegative axis index.
/// The `MlaTiled` layout of Python's ``axes``, ``tile`` and ``channels`` arguments
/// (unchecked: admission against a shape comes with the op's plan, SPEC §5).
pub(crate) fn parse_layout(
    py: Python<'_>,
    axes: &Bound<'_, PyAny>,
    tile: &Bound<'_, PyAny>,
    channels: &str,
) -> PyResult<MlaTiled> {
    Ok(MlaTiled::new(
        parse_axes(py, axes)?,
        parse_tile(py, tile)?,
        parse_channels(py, channels)?,
    ))
}

pub(crate) fn parse_axes(py: Python<'_>, axes: &Bound<'_, PyAny>) -> PyResult<[Option<u8>; 4]> {
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
                    "axes[{k}] is {v}: a negative axis is refused (in NumPy -1 means the last axis, in the CLI and C it means absent); use None for an absent role or a nonnegative axis index"
                ),
            ));
        }
        *slot = Some(u8::try_from(v).unwrap_or(u8::MAX));
    }
    Ok(out)
}

/// `tile`: four tile extents in elements, D, H, W, C.
pub(crate) fn parse_tile(py: Python<'_>, tile: &Bound<'_, PyAny>) -> PyResult<[u32; 4]> {
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
                format!("tile[{k}] is {v}: a tile extent is an integer in 1..=extent"),
            )
        })?;
    }
    Ok(out)
}

/// A shape or strides argument (`what`: `"shape"` or a strides argument's name):
/// nonnegative integers; one outside `0..2**64` is `BINDING_OUT_OF_RANGE`.
pub(crate) fn parse_u64s(x: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u64>> {
    let items: Vec<i128> = x
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a sequence of integers")))?;
    let rule = if what == "shape" {
        "extents are element counts, integers in 0..2**64"
    } else {
        "strides are in bytes and never negative, integers in 0..2**64"
    };
    items
        .iter()
        .enumerate()
        .map(|(axis, &v)| {
            u64::try_from(v).map_err(|_| {
                let code = simak::error::BINDING_OUT_OF_RANGE;
                simak_error(x.py(), code, format!("{what}[{axis}] is {v}: {rule}"))
            })
        })
        .collect()
}

/// A plan's optional strides argument `name` (`None`: C order), as [`parse_u64s`].
pub(crate) fn parse_strides(
    strides: Option<&Bound<'_, PyAny>>,
    name: &str,
) -> PyResult<Option<Vec<u64>>> {
    strides.map(|s| parse_u64s(s, name)).transpose()
}

/// A plan's port: `extents` with byte `strides` (`None`: C order) and `dtype`.
pub(crate) fn port_spec<'a>(
    extents: &'a [u64],
    strides: Option<&'a [u64]>,
    dtype: DType,
) -> DynSpec<'a> {
    match strides {
        Some(s) => DynSpec::strided(extents, s, dtype),
        None => DynSpec::contiguous(extents, dtype),
    }
}

/// Most native threads one call may use (as `simak bench --threads`).
pub(crate) const MAX_THREADS: usize = 256;

/// `threads` checked: at least 1 (a negative count is the same `ValueError` as 0) and at
/// most [`MAX_THREADS`].
pub(crate) fn check_threads(threads: i64) -> PyResult<usize> {
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

/// A Quant request's parameters from Python arguments (`zero_point=None` is 0), for every
/// front-end that takes them (`quantize`, `QuantPlan`, `quanttess`).
pub(crate) fn quant_params(
    py: Python<'_>,
    multiplier: &Bound<'_, PyAny>,
    zp: Option<&Bound<'_, PyAny>>,
    rounding: &str,
) -> PyResult<Params> {
    let multiplier = multiplier_bits(multiplier)?;
    let zero_point = match zp {
        Some(zp) => zero_point(py, zp)?,
        None => 0,
    };
    Ok(Params::from_bits(multiplier)
        .with_zero_point(zero_point)
        .with_rounding(parse_rounding(py, rounding)?))
}

/// The default `axes` and `tile`: an HWC image, tiles of 16 rows × 64 columns × 3
/// channels.
pub(crate) fn default_layout<'py>(
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
