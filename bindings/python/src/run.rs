//! Running a kernel over NumPy memory: without the GIL for calls large enough to be worth
//! it (split over scoped native threads by `a65::execute_threaded`), and the tiled ops'
//! shared runner.

use pyo3::prelude::*;
use simak::a65::ExecuteError;

use crate::arrays::{Geometry, input_slice, output_slice, ranges_overlap};
use crate::errors::{TILED_NAMES, lib_error};

/// Calls on at least this many elements release the GIL; smaller ones run in well under a
/// microsecond, less than releasing and taking back the GIL costs.
pub(crate) const DETACH_MIN_ELEMENTS: u64 = 4096;

/// Runs `f` without the GIL when the call is large enough to be worth it.
pub(crate) fn run_detached<T: Send>(
    py: Python<'_>,
    elements: u64,
    f: impl FnOnce() -> T + Send,
) -> T {
    if elements >= DETACH_MIN_ELEMENTS {
        py.detach(f)
    } else {
        f()
    }
}

/// Runs a tiled call through `exec` over the input and output byte ranges.
pub(crate) fn run_tiled(
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
