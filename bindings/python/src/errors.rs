//! `simak.SimakError` and the conversion of library errors into it: the stable code of
//! `docs/errors.md` on `.code`, a hint naming the argument at fault, and panics turned into
//! `BINDING_INTERNAL` rather than unwinding into Python.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    simak,
    SimakError,
    PyValueError,
    "An error of the simak library: a rule of the contract (docs/contract.md) was broken.\n\n\
     ``code`` is the stable numeric code of docs/errors.md (for example 14 for a multiplier\n\
     that is not > 0, 0x408 for an FP environment with flush-to-zero). A subclass of\n\
     ValueError."
);

/// The OFM buffer holds fewer bytes from the head's offset than the head's layout spans
/// (`layout.capacity`): the Detess ops (docs/errors.md).
pub(crate) const PY_OFM_SHORT: u32 = 0x610;
/// A head's byte offset is negative or past the end of the OFM buffer (at the end: only an
/// empty head).
pub(crate) const PY_OFM_OFFSET: u32 = 0x611;
/// An `out=` array has another dtype than the call writes (the Detess ops, `dequantize`).
pub(crate) const PY_OUT_DTYPE: u32 = 0x612;
/// An `out=` array has another shape than the call's logical shape.
pub(crate) const PY_OUT_SHAPE: u32 = 0x613;
/// A Preproc frame or plane array is not `uint8` (a float frame included).
pub(crate) const PY_FRAME_DTYPE: u32 = 0x618;
/// A Preproc frame's shape is not its format's (rank, channel count, the rows of a YUV
/// array, a tuple's plane count or plane shapes), or not the plan's size or batch.
pub(crate) const PY_FRAME_SHAPE: u32 = 0x619;
/// An I420 frame in one array whose rows are not exactly W contiguous bytes.
pub(crate) const PY_FRAME_ROWS: u32 = 0x61a;
/// A Preproc `to=` without the arguments it needs (INT8 without `multiplier=`) or with
/// arguments of another output (`multiplier=` for FP32/BF16, `axes=`, `tile=`,
/// `channels=` for the strided outputs).
pub(crate) const PY_PREPROC_ARGS: u32 = 0x61b;

/// `SimakError(message)` with `.code`.
pub(crate) fn simak_error(py: Python<'_>, code: u32, message: impl Into<String>) -> PyErr {
    let err = SimakError::new_err(format!(
        "{} (simak error code {})",
        message.into(),
        code_text(code)
    ));
    // Setting an attribute on a fresh exception instance cannot fail short of memory
    // exhaustion, which Python then reports on its own.
    let _ = err.value(py).setattr("code", code);
    err
}

/// A code as `docs/errors.md` writes it (and the CLI prints it): decimal for the
/// descriptor rules (1 to 255), `0x` and three or more hex digits above.
pub(crate) fn code_text(code: u32) -> String {
    if code <= 255 {
        code.to_string()
    } else {
        format!("0x{code:03x}")
    }
}

/// Which arguments an error is about, for the hints.
#[derive(Clone, Copy)]
pub(crate) struct Names {
    pub(crate) input: &'static str,
    pub(crate) output: &'static str,
}

pub(crate) const QUANT_NAMES: Names = Names {
    input: "x",
    output: "out",
};

pub(crate) const TILED_NAMES: Names = Names {
    input: "x",
    output: "out",
};

/// Converts a library error into `SimakError`, adding the way out where the rule is about
/// a view NumPy made (strides) or the FP environment.
pub(crate) fn lib_error(py: Python<'_>, e: impl Into<simak::Error>, names: Names) -> PyErr {
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
    simak_error(py, code, message)
}

/// Runs `f`, turning a panic into `SimakError` with code `BINDING_INTERNAL`: nothing
/// panics into Python.
pub(crate) fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
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
                format!("internal error (a simak bug, please report it): {what}",),
            ))
        }
    }
}
