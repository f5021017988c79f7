//! Running a kernel over NumPy memory: without the GIL for calls large enough to be worth
//! it (split over scoped native threads by `a65::execute_threaded`), and the tiled ops'
//! shared runner.

use pyo3::prelude::*;
use simak::a65::{self, ExecuteError, HostOp};
use simak::ops::OpPlan;

use crate::arrays::{Geometry, input_slice, output_slice, ranges_overlap, tiled_out};
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

/// Runs a prepared tiled op (CastTess, QuantTess) on the array read as `gin` into `out=`
/// (checked by `tiled_out` against the capacity) or a new aligned buffer, split over
/// `threads` native threads by `a65::execute_threaded`; returns the output array. The
/// spans come from the op's port needs (`HostOp::needs`: the input's accessed span, the
/// output's capacity), so any tiled op runs through here.
pub(crate) fn run_tiled<'py, O: HostOp>(
    py: Python<'py>,
    gin: &Geometry,
    prepared: &a65::Prepared<O>,
    out: Option<&Bound<'py, PyAny>>,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let plan = prepared.plan();
    let (need_in, need_out) = O::needs(plan);
    let (oa, address, len) = tiled_out(py, out, need_out.span)?;
    if ranges_overlap(gin.address, need_in.span, address, len) {
        return Err(lib_error(py, ExecuteError::Overlap, TILED_NAMES));
    }
    // SAFETY: the input span is admission's for the array's own geometry; the output is the
    // whole of a live, writeable, C-contiguous array of `len` bytes; both arrays are kept
    // alive by the caller's references; the ranges were just checked disjoint.
    let (inp, outp) = unsafe {
        (
            input_slice(gin.address, need_in.span),
            output_slice(address, len),
        )
    };
    run_detached(py, plan.elements(), || {
        a65::execute_threaded(prepared, threads, inp, outp)
    })
    .map_err(|e| lib_error(py, e, TILED_NAMES))?;
    Ok(oa.into_any())
}
