//! The plan handles of every A65 op, written once: the [`PlanHandle`] trait that maps each
//! opaque C plan type (`simak_quant_plan`, `simak_casttess_plan`, `simak_quanttess_plan`,
//! `simak_detess_plan`, `simak_detesscast_plan`, `simak_detessdequant_plan`,
//! `simak_dequant_plan`) to its op marker and its [`Planned`] state, and the generic bodies of the `*_plan_new`,
//! `*_execute`, `*_plan_implementation`, `*_plan_input_span` and output-size functions,
//! which the op modules' thin `extern "C"` functions call.

use std::ffi::{CString, c_char, c_void};

use simak::a65::{self, HostOp};
use simak::ops::{CastTess, Dequant, Detess, DetessCast, DetessDequant, Preproc, Quant, QuantTess};

use crate::{
    Failure, borrow, c_name, guard, into_handle, put, simak_casttess_plan, simak_dequant_plan,
    simak_detess_plan, simak_detesscast_plan, simak_detessdequant_plan, simak_error,
    simak_preproc_plan, simak_quant_plan, simak_quanttess_plan,
};

/// What a plan handle of op `O` holds: the plan prepared for the A65 and the selected
/// route's name as a C string owned by the plan.
#[derive(Debug)]
pub(crate) struct Planned<O: HostOp> {
    prepared: a65::Prepared<O>,
    implementation: CString,
}

impl<O: HostOp> Planned<O> {
    /// The state of a handle over `prepared`.
    fn new(prepared: a65::Prepared<O>) -> Planned<O> {
        let implementation = c_name(prepared.implementation());
        Planned {
            prepared,
            implementation,
        }
    }

    /// The checked plan.
    pub(crate) fn plan(&self) -> &O::Plan {
        self.prepared.plan()
    }
}

/// An opaque C plan type: the handle of op [`PlanHandle::Op`], wrapping its [`Planned`].
pub(crate) trait PlanHandle: Sized {
    /// The op the plan is a plan of.
    type Op: HostOp;
    /// The handle's value over `planned`.
    fn wrap(planned: Planned<Self::Op>) -> Self;
    /// The state the handle holds.
    fn planned(&self) -> &Planned<Self::Op>;
}

/// Implements [`PlanHandle`] for each opaque C plan type (a one-field tuple struct).
macro_rules! plan_handles {
    ($($handle:ident: $op:ty),* $(,)?) => {
        $(
            impl PlanHandle for $handle {
                type Op = $op;
                fn wrap(planned: Planned<$op>) -> Self {
                    $handle(planned)
                }
                fn planned(&self) -> &Planned<$op> {
                    &self.0
                }
            }
        )*
    };
}

plan_handles!(
    simak_quant_plan: Quant,
    simak_casttess_plan: CastTess,
    simak_quanttess_plan: QuantTess,
    simak_detess_plan: Detess,
    simak_detesscast_plan: DetessCast,
    simak_detessdequant_plan: DetessDequant,
    simak_dequant_plan: Dequant,
    simak_preproc_plan: Preproc,
);

/// The body of every `*_plan_new`: sets `*plan` to NULL, then `read` copies the caller's
/// request (its failures first, so a NULL request argument is named before a NULL `plan`),
/// then a NULL `plan` is refused, then `prepare` admits and prepares the request; on
/// success `*plan` is a new handle. Fills `error` and returns the code.
///
/// # Safety
///
/// `plan` is NULL or writable; `error` NULL or writable; `read` is sound to call.
pub(crate) unsafe fn plan_new<H: PlanHandle, R>(
    plan: *mut *mut H,
    error: *mut simak_error,
    read: impl FnOnce() -> Result<R, Failure>,
    prepare: impl FnOnce(R) -> Result<a65::Prepared<H::Op>, Failure>,
) -> u32 {
    // SAFETY: `plan` is null or writable by this function's contract.
    unsafe { put(plan, std::ptr::null_mut()) };
    let body = || {
        let request = read()?;
        if plan.is_null() {
            return Err(Failure::null("plan"));
        }
        let handle = into_handle(H::wrap(Planned::new(prepare(request)?)));
        // SAFETY: `plan` is not null (checked) and writable.
        unsafe { put(plan, handle) };
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// The prepared plan of `checked`: the exact integer path (`exact_path`) when `exact`,
/// else the fastest this CPU offers.
pub(crate) fn prepare<O: HostOp>(
    checked: &O::Plan,
    exact: bool,
    exact_path: fn(&O::Plan) -> a65::Prepared<O>,
) -> a65::Prepared<O> {
    if exact {
        exact_path(checked)
    } else {
        a65::Prepared::new(checked)
    }
}

/// The body of every `*_execute`: the plan's call over the caller's buffers through
/// `a65::execute_raw` (every check before anything is read or written).
///
/// # Safety
///
/// As the `*_execute` functions: `plan` NULL or a live handle; when every check passes,
/// `input` readable for `input_bytes` and `output` readable and writable for
/// `output_bytes`, neither touched by another thread meanwhile; `error` NULL or writable.
pub(crate) unsafe fn execute<H: PlanHandle>(
    plan: *const H,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        // SAFETY: `plan` is null or live by this function's contract.
        let plan = unsafe { borrow(plan, "plan") }?;
        let prepared = &plan.planned().prepared;
        // SAFETY: this function's contract is `execute_raw`'s for the plan's spans.
        unsafe {
            a65::execute_raw(
                prepared,
                input.cast(),
                input_bytes,
                output.cast(),
                output_bytes,
            )
        }?;
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// The diagnostic name of the plan's route or kernel level, owned by the plan; NULL for
/// a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
pub(crate) unsafe fn implementation<H: PlanHandle>(plan: *const H) -> *const c_char {
    // SAFETY: `plan` is null or live by this function's contract.
    match unsafe { borrow(plan, "plan") } {
        Ok(plan) => plan.planned().implementation.as_ptr(),
        Err(_) => std::ptr::null(),
    }
}

/// Bytes of input storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
pub(crate) unsafe fn input_span<H: PlanHandle>(plan: *const H) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { borrow(plan, "plan") }.map_or(0, |p| H::Op::needs(p.planned().plan()).0.span)
}

/// Bytes of output storage the plan accesses: the strided span or the tiled capacity (0
/// for an empty plan or a NULL plan). (`input_span` of a tiled input is its capacity.)
///
/// # Safety
///
/// `plan` is NULL or a live handle.
pub(crate) unsafe fn output_span<H: PlanHandle>(plan: *const H) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { borrow(plan, "plan") }.map_or(0, |p| H::Op::needs(p.planned().plan()).1.span)
}
