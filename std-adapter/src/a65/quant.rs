//! A65 Quant: prepare a route once, execute over borrowed host buffers (SPEC §6, §10).
//!
//! The route here is the exact integer path of SPEC §3 (`simak_core::arith::quant`), run
//! over a coalesced carry walker. It is independent of the FP environment and serves as the
//! reference and tail of the SIMD routes.

use simak_core::Port;
use simak_core::ops::quant::{Kernels, Plan};

use super::walk::Traversal;
use super::{ExecuteError, check_buffer};

/// A Quant plan prepared for the A65: the route is selected once here (SPEC §10).
#[derive(Debug, Clone, Copy)]
pub struct Prepared {
    plan: Plan,
    kernels: Kernels,
    traversal: Traversal,
}

/// Prepares `plan` for A65 execution: picks the exact dtype × rounding specialization and
/// coalesces the traversal. Reads no tensor data, allocates nothing.
pub fn prepare(plan: &Plan) -> Prepared {
    Prepared {
        plan: *plan,
        kernels: plan.kernels(),
        traversal: Traversal::new(plan.input(), plan.output()),
    }
}

impl Prepared {
    /// The checked plan this was prepared from.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Diagnostic name of the selected route (not an API contract, SPEC §10).
    pub fn implementation(&self) -> &'static str {
        "exact-scalar"
    }

    /// Elements per innermost contiguous run after coalescing (the whole tensor for packed,
    /// compatible layouts; 0 when empty).
    pub fn run_len(&self) -> usize {
        self.traversal.inner_len
    }
}

/// Quantizes `input` into `output` as `prepared` describes.
///
/// `input` holds the input port's storage starting at its first element (little-endian,
/// at least `plan.input().span()` bytes, aligned to the element size); `output` holds the
/// output port's storage (at least `plan.output().span()` bytes). Output bytes no element
/// maps to are never written. An empty plan needs no storage and writes nothing.
///
/// # Errors
///
/// Checked before any write, in this order: [`ExecuteError::Capacity`],
/// [`ExecuteError::Misaligned`], [`ExecuteError::AddressOverflow`] (input, then output),
/// [`ExecuteError::Overlap`]. On error nothing was written.
pub fn execute(prepared: &Prepared, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
    let plan = &prepared.plan;
    if plan.is_empty() {
        return Ok(());
    }
    let elem = plan.input().dtype().size();
    let (in_lo, in_hi) = check_buffer(
        Port::Input,
        input.as_ptr() as usize,
        input.len(),
        plan.input().span(),
        elem,
    )?;
    let (out_lo, out_hi) = check_buffer(
        Port::Output,
        output.as_ptr() as usize,
        output.len(),
        plan.output().span(),
        1,
    )?;
    if in_lo < out_hi && out_lo < in_hi {
        return Err(ExecuteError::Overlap);
    }
    run_checked(prepared, input, output);
    Ok(())
}

/// Runs the traversal over buffers already checked against the plan.
fn run_checked(prepared: &Prepared, input: &[u8], output: &mut [u8]) {
    let k = &prepared.kernels;
    let m = prepared.plan.multiplier();
    let zp = prepared.plan.zero_point();
    let t = &prepared.traversal;
    let elem = prepared.plan.input().dtype().size();
    let len = t.inner_len;
    if t.inner_in_stride == elem && t.inner_out_stride == 1 || len == 1 {
        t.for_each_run(|i, o| {
            (k.run)(m, zp, &input[i..i + len * elem], &mut output[o..o + len]);
        });
    } else {
        let (si, so) = (t.inner_in_stride, t.inner_out_stride);
        t.for_each_run(|i, o| {
            for j in 0..len {
                let at = i + j * si;
                let bits = load(&input[at..at + elem]);
                output[o + j * so] = (k.element)(m, zp, bits) as u8;
            }
        });
    }
}

#[inline(always)]
fn load(bytes: &[u8]) -> u32 {
    match *bytes {
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
        [a, b] => u16::from_le_bytes([a, b]) as u32,
        _ => 0,
    }
}
