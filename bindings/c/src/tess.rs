//! CastTess (FP32 / FP16 / BF16 → BF16 `MlaTiled`, SPEC §4, §5) and QuantTess (→ INT8
//! `MlaTiled`, SPEC §3, §5), admitted once into a plan and executed on the A65 over the
//! caller's buffers.

use std::ffi::{CString, c_char, c_void};

use simak::a65;
use simak::ops::casttess::TiledSpec;
use simak::ops::{casttess, quanttess};

use crate::{
    Failure, Tensor, borrow, c_name, clone_handle, free_handle, guard, into_handle, put, read,
    simak_error, simak_mla_tiled, simak_quant_params, simak_tensor,
};

/// A checked CastTess plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_casttess_plan {
    pub(crate) plan: casttess::Plan,
    prepared: a65::casttess::Prepared,
    implementation: CString,
}

/// A checked QuantTess plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_quanttess_plan {
    plan: quanttess::Plan,
    prepared: a65::quanttess::Prepared,
    implementation: CString,
}

/// Reads the ports and layout of a tiled request.
///
/// # Safety
///
/// As the `*_plan_new` functions: each pointer null or valid.
unsafe fn tiled_request(
    input: *const simak_tensor,
    output: *const simak_tensor,
    layout: *const simak_mla_tiled,
) -> Result<(Tensor, Tensor, simak::layout::MlaTiled), Failure> {
    // SAFETY: the caller's contract.
    let input = unsafe { Tensor::read(input, "input", 1) }?;
    // SAFETY: the caller's contract.
    let output = unsafe { Tensor::read(output, "output", 1) }?.tiled_output()?;
    // SAFETY: the caller's contract.
    let layout = crate::layout(&unsafe { read(layout, "layout") }?)?;
    Ok((input, output, layout))
}

/// Admits a CastTess request and prepares it for the A65 (SPEC §4, §5, §6): `input` (F32,
/// F16 or BF16, contiguous or strided, rank 1 to 6), `output` (BF16, the input's extents,
/// `strides` NULL) in the `layout`. On success `*plan` is a new handle (free it with
/// `simak_casttess_plan_free`); on failure it is NULL.
///
/// Returns 0, or the admission code of docs/errors.md (for the layout: 43 axis out of
/// range, 44 repeated, 47 tile extent), 0x601 for an unknown dtype or `pad_to_16` value,
/// 0x603 when `input`, `output`, `layout` or `plan` is NULL.
///
/// # Safety
///
/// Each pointer is NULL or valid for its type (`strides` for `rank` values); `error` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_casttess_plan_new(
    input: *const simak_tensor,
    output: *const simak_tensor,
    layout: *const simak_mla_tiled,
    plan: *mut *mut simak_casttess_plan,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: `plan` is null or writable by this function's contract.
    unsafe { put(plan, std::ptr::null_mut()) };
    let body = || {
        // SAFETY: this function's contract.
        let (input, output, layout) = unsafe { tiled_request(input, output, layout) }?;
        if plan.is_null() {
            return Err(Failure::null("plan"));
        }
        let checked = casttess::check_inference_dyn(&casttess::DynRequest {
            input: input.spec(),
            output: TiledSpec {
                extents: output.extents(),
                dtype: output.dtype(),
                layout,
            },
        })?;
        let prepared = a65::casttess::prepare(&checked);
        let handle = into_handle(simak_casttess_plan {
            plan: checked,
            prepared,
            implementation: c_name(prepared.implementation()),
        });
        // SAFETY: `plan` is not null (checked) and writable.
        unsafe { put(plan, handle) };
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// Bytes of the tiled output (the `MlaTiled` capacity, padding included; in general not
/// elements x 2). 0 for an empty plan or a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_casttess_plan_output_capacity(
    plan: *const simak_casttess_plan,
) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { borrow(plan, "plan") }.map_or(0, |p| p.plan.output().capacity())
}

/// Bytes of input storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_casttess_plan_input_span(plan: *const simak_casttess_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { borrow(plan, "plan") }.map_or(0, |p| p.plan.input().span())
}

/// Converts `input` into the tiled BF16 `output` (SPEC §4, §5, §6), synchronously, without
/// allocating and independent of the FP environment.
///
/// `input` as for `simak_quant_execute`; `output` holds at least
/// `simak_casttess_plan_output_capacity` bytes starting 16-byte aligned. Exactly the
/// capacity is written, padding included (zeros), whatever it held; bytes past it are never
/// touched. An empty plan needs no storage and writes nothing.
///
/// Checked before anything is written: a NULL plan (0x603), NULL pointers (0x409, 0x40a),
/// capacity (0x401, 0x402), alignment (0x403, 0x404: the output 16 bytes), address
/// overflow (0x405, 0x406), overlap (0x407).
///
/// # Safety
///
/// As `simak_quant_execute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_casttess_execute(
    plan: *const simak_casttess_plan,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        // SAFETY: `plan` is null or live by this function's contract.
        let plan = unsafe { borrow(plan, "plan") }?;
        // SAFETY: this function's contract is `execute_raw`'s for the plan's spans.
        unsafe {
            a65::casttess::execute_raw(
                &plan.prepared,
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

/// The diagnostic name of the selected A65 kernel level, e.g. "x86_64-avx512vbmi" (not an
/// API contract); owned by the plan. NULL for a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_casttess_plan_implementation(
    plan: *const simak_casttess_plan,
) -> *const c_char {
    // SAFETY: `plan` is null or live by this function's contract.
    match unsafe { borrow(plan, "plan") } {
        Ok(plan) => plan.implementation.as_ptr(),
        Err(_) => std::ptr::null(),
    }
}

/// Shares `plan` (one more reference; free each handle once). NULL for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_casttess_plan_clone(
    plan: *const simak_casttess_plan,
) -> *mut simak_casttess_plan {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { clone_handle(plan) }
}

/// Releases one reference to `plan`. Nothing for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_casttess_plan_free(plan: *mut simak_casttess_plan) {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { free_handle(plan) }
}

/// Admits a QuantTess request and prepares it for the A65 (SPEC §3, §5, §6): as
/// `simak_casttess_plan_new` with an I8 `output` and the Quant `params`
/// (`SIMAK_PLAN_EXACT` selects the exact path, independent of the FP environment).
///
/// # Safety
///
/// As `simak_casttess_plan_new`; `params` NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quanttess_plan_new(
    input: *const simak_tensor,
    output: *const simak_tensor,
    layout: *const simak_mla_tiled,
    params: *const simak_quant_params,
    plan: *mut *mut simak_quanttess_plan,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: `plan` is null or writable by this function's contract.
    unsafe { put(plan, std::ptr::null_mut()) };
    let body = || {
        // SAFETY: this function's contract.
        let (input, output, layout) = unsafe { tiled_request(input, output, layout) }?;
        // SAFETY: this function's contract.
        let p = unsafe { read(params, "params") }?;
        if plan.is_null() {
            return Err(Failure::null("plan"));
        }
        let (params, exact) = crate::params(&p)?;
        let checked = quanttess::check_inference_dyn(&quanttess::DynRequest {
            input: input.spec(),
            output: TiledSpec {
                extents: output.extents(),
                dtype: output.dtype(),
                layout,
            },
            params,
        })?;
        let prepared = if exact {
            a65::quanttess::prepare_exact(&checked)
        } else {
            a65::quanttess::prepare(&checked)
        };
        let handle = into_handle(simak_quanttess_plan {
            plan: checked,
            prepared,
            implementation: c_name(prepared.implementation()),
        });
        // SAFETY: `plan` is not null (checked) and writable.
        unsafe { put(plan, handle) };
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// Bytes of the tiled INT8 output (the `MlaTiled` capacity). 0 for an empty or NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quanttess_plan_output_capacity(
    plan: *const simak_quanttess_plan,
) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { borrow(plan, "plan") }.map_or(0, |p| p.plan.output().capacity())
}

/// Bytes of input storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quanttess_plan_input_span(plan: *const simak_quanttess_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { borrow(plan, "plan") }.map_or(0, |p| p.plan.input().span())
}

/// Quantizes `input` into the tiled INT8 `output` (SPEC §3, §5, §6): buffers and checks as
/// `simak_casttess_execute`, then for a SIMD route the FP environment (0x408) as
/// `simak_quant_execute`. Padding bytes are 0x00 whatever the zero point.
///
/// # Safety
///
/// As `simak_quant_execute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quanttess_execute(
    plan: *const simak_quanttess_plan,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        // SAFETY: `plan` is null or live by this function's contract.
        let plan = unsafe { borrow(plan, "plan") }?;
        // SAFETY: this function's contract is `execute_raw`'s for the plan's spans.
        unsafe {
            a65::quanttess::execute_raw(
                &plan.prepared,
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

/// The diagnostic name of the selected Quant route; owned by the plan. NULL for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quanttess_plan_implementation(
    plan: *const simak_quanttess_plan,
) -> *const c_char {
    // SAFETY: `plan` is null or live by this function's contract.
    match unsafe { borrow(plan, "plan") } {
        Ok(plan) => plan.implementation.as_ptr(),
        Err(_) => std::ptr::null(),
    }
}

/// Shares `plan` (one more reference; free each handle once). NULL for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quanttess_plan_clone(
    plan: *const simak_quanttess_plan,
) -> *mut simak_quanttess_plan {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { clone_handle(plan) }
}

/// Releases one reference to `plan`. Nothing for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quanttess_plan_free(plan: *mut simak_quanttess_plan) {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { free_handle(plan) }
}
