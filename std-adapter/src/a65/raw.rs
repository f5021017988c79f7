//! The raw-pointer entries of SPEC §6, for callers that hold pointers and byte lengths
//! rather than slices (the C ABI in `bindings/c`): the generic [`execute_raw`], re-exported
//! under each op's module as `a65::quant::execute_raw`, `a65::casttess::execute_raw` and
//! `a65::quanttess::execute_raw` (the op is inferred from the `Prepared` argument).
//!
//! Every check of the slice entry runs on the addresses and lengths first, and a null
//! pointer is refused, before a slice is formed or a byte is read or written. Only then are
//! the two ports viewed as slices of exactly their accessed spans (so that a caller's
//! generous lengths never make the shared and the mutable view overlap), and the safe
//! `execute` runs on them. Besides `arch/`, this is the only module of the crate with
//! `unsafe` code.
#![allow(unsafe_code)]

use simak_core::Port;

use simak_core::ops::OpPlan;

use super::{ExecuteError, HostOp, PortNeed, Prepared, check_ports_at};

/// Checks raw port buffers and views them as slices of exactly their spans.
///
/// Order: a null input, a null output (each [`ExecuteError::NullPointer`]), then
/// [`check_ports_at`] (capacity, alignment, address overflow of the input, then of the
/// output; overlap). A span above `isize::MAX` bytes is [`ExecuteError::AddressOverflow`]
/// (no allocation is that large).
///
/// # Safety
///
/// The pointers are used only when every check passes. Then `input` must be valid for
/// reads of `need_in.span` bytes and `output` valid for reads and writes of
/// `need_out.span` bytes for `'a`, and nothing else may write the input range or access
/// the output range during `'a`.
unsafe fn ports<'a>(
    input: *const u8,
    input_len: usize,
    output: *mut u8,
    output_len: usize,
    need_in: PortNeed,
    need_out: PortNeed,
) -> Result<(&'a [u8], &'a mut [u8]), ExecuteError> {
    if input.is_null() {
        return Err(ExecuteError::NullPointer { port: Port::Input });
    }
    if output.is_null() {
        return Err(ExecuteError::NullPointer { port: Port::Output });
    }
    check_ports_at(
        (input as usize, input_len),
        (output as usize, output_len),
        need_in,
        need_out,
    )?;
    let fits = |span: u64, port| {
        usize::try_from(span)
            .ok()
            .filter(|&s| isize::try_from(s).is_ok())
            .ok_or(ExecuteError::AddressOverflow { port })
    };
    let in_len = fits(need_in.span, Port::Input)?;
    let out_len = fits(need_out.span, Port::Output)?;
    // SAFETY: `input` is not null, `in_len` ≤ `input_len` (capacity check) and ≤ isize::MAX,
    // the range does not wrap (address-overflow check), u8 needs no alignment, and the
    // caller guarantees these bytes are readable and not written during 'a.
    let input = unsafe { core::slice::from_raw_parts(input, in_len) };
    // SAFETY: as above for writes; the output range is disjoint from the input range
    // (overlap check), so this mutable view aliases neither `input` nor anything else the
    // caller lets be accessed during 'a.
    let output = unsafe { core::slice::from_raw_parts_mut(output, out_len) };
    Ok((input, output))
}

/// [`execute`](super::execute) over raw pointers (SPEC §6), for any op: the C ABI's
/// entry.
///
/// An empty plan returns at once without looking at the pointers. Otherwise, before
/// anything is read or written: a null `input`, a null `output`
/// ([`ExecuteError::NullPointer`]), then the checks of `execute` on the addresses and
/// lengths (capacity, alignment, address overflow, overlap, then the FP environment for
/// FP routes). Only the ports' accessed spans ([`HostOp::needs`]) are touched.
///
/// # Safety
///
/// The pointers are dereferenced only when every check passed. Then `input` must be valid
/// for reads of the input port's span and `output` valid for reads and writes of the
/// output port's span ([`HostOp::needs`]) until the call returns, and no other thread may
/// write the input bytes or access the output bytes meanwhile.
///
/// # Errors
///
/// [`ExecuteError::NullPointer`], then as `execute`; nothing was written.
pub unsafe fn execute_raw<O: HostOp>(
    prepared: &Prepared<O>,
    input: *const u8,
    input_len: usize,
    output: *mut u8,
    output_len: usize,
) -> Result<(), ExecuteError> {
    let plan = prepared.plan();
    if plan.is_empty() {
        return Ok(());
    }
    let (need_in, need_out) = O::needs(plan);
    // SAFETY: this function's contract is `ports`' contract for the plan's spans.
    let (i, o) = unsafe { ports(input, input_len, output, output_len, need_in, need_out) }?;
    super::execute(prepared, i, o)
}
