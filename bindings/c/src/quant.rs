//! Quant: FP32 / BF16 / FP16 → INT8 (SPEC §3), admitted once into a plan and executed on
//! the A65 over the caller's buffers.

use std::ffi::{c_char, c_void};

use simak::a65;
use simak::ops::{Quant, quant};

use crate::plan::{self, Planned};
use crate::{
    Failure, Tensor, clone_handle, free_handle, read, simak_error, simak_quant_params, simak_tensor,
};

/// A checked Quant plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_quant_plan(pub(crate) Planned<Quant>);

/// Admits a Quant request and prepares it for the A65 (SPEC §2, §3, §6): `input` (F32, BF16
/// or F16, contiguous or strided), `output` (I8, contiguous or strided, same logical shape),
/// `params`. With `SIMAK_PLAN_EXACT` in `params->flags` the plan runs the exact integer
/// path, independent of the FP environment. On success `*plan` is a new handle (free it
/// with `simak_quant_plan_free`); on failure it is NULL.
///
/// Returns 0, or the admission code of docs/errors.md (0x200 range and the descriptor twins
/// such as 14 for a non-positive multiplier), 0x601 for an unknown dtype, rounding or flag,
/// 0x603 when `input`, `output`, `params` or `plan` is NULL.
///
/// # Safety
///
/// Each pointer is NULL or valid for its type (`strides` for `rank` values); `error` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quant_plan_new(
    input: *const simak_tensor,
    output: *const simak_tensor,
    params: *const simak_quant_params,
    plan: *mut *mut simak_quant_plan,
    error: *mut simak_error,
) -> u32 {
    let request = || {
        // SAFETY: the pointers are null or valid by this function's contract.
        let input = unsafe { Tensor::read(input, "input", 0) }?;
        // SAFETY: as above.
        let output = unsafe { Tensor::read(output, "output", 0) }?;
        // SAFETY: as above.
        let params = unsafe { read(params, "params") }?;
        Ok((input, output, params))
    };
    let prepare = |(input, output, p): (Tensor, Tensor, simak_quant_params)| -> Result<_, Failure> {
        let (params, exact) = crate::params(&p)?;
        let checked = quant::check_inference_dyn(&quant::DynRequest {
            input: input.spec(),
            output: output.spec(),
            params,
        })?;
        Ok(plan::prepare(&checked, exact, a65::quant::prepare_exact))
    };
    // SAFETY: `plan` and `error` are null or writable by this function's contract, and
    // `request` reads only arguments that contract makes valid.
    unsafe { plan::plan_new(plan, error, request, prepare) }
}

/// Quantizes `input` into `output` as `plan` describes (SPEC §3, §6), synchronously on the
/// calling thread, without allocating.
///
/// `input` holds the input port from its first element (little-endian, at least the
/// plan's input span, `simak_quant_plan_input_span`, aligned to the element size);
/// `output` holds at least the output span (`simak_quant_plan_output_span`). Only the bytes
/// elements map to are written: gaps keep their values. An empty plan needs no storage
/// (any pointers, even NULL) and writes nothing.
///
/// Checked before anything is read or written, in this order: a NULL plan (0x603), a NULL
/// `input` (0x409), a NULL `output` (0x40a), then input capacity (0x401), alignment (0x403),
/// address overflow (0x405), the same for the output (0x402, 0x404, 0x406), overlapping
/// ports (0x407), and for a SIMD route the calling thread's FP environment (0x408:
/// flush-to-zero, denormals-are-zero, a directed FP rounding mode or unmasked traps; a
/// plan made with `SIMAK_PLAN_EXACT` never fails it).
///
/// # Safety
///
/// `plan` is NULL or a live handle. When every check passes, `input` must be readable for
/// `input_bytes` bytes and `output` readable and writable for `output_bytes` bytes, and no
/// other thread may write the input or access the output until the call returns. `error`
/// is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quant_execute(
    plan: *const simak_quant_plan,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `plan::execute`'s.
    unsafe { plan::execute(plan, input, input_bytes, output, output_bytes, error) }
}

/// The diagnostic name of the selected A65 route, e.g. "x86_64-avx512" or "exact-scalar"
/// (not an API contract); owned by the plan. NULL for a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quant_plan_implementation(
    plan: *const simak_quant_plan,
) -> *const c_char {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::implementation(plan) }
}

/// Bytes of input storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quant_plan_input_span(plan: *const simak_quant_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::input_span(plan) }
}

/// Bytes of output storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quant_plan_output_span(plan: *const simak_quant_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::output_span(plan) }
}

/// Shares `plan`: returns a handle to the same immutable plan (one more reference; free
/// each handle once). NULL for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quant_plan_clone(
    plan: *const simak_quant_plan,
) -> *mut simak_quant_plan {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { clone_handle(plan) }
}

/// Releases one reference to `plan`; the plan is freed with its last handle. Nothing for
/// NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quant_plan_free(plan: *mut simak_quant_plan) {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { free_handle(plan) }
}
