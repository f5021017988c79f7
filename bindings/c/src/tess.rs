//! CastTess (FP32 / FP16 / BF16 → BF16 `MlaTiled`, SPEC §4, §5) and QuantTess (→ INT8
//! `MlaTiled`, SPEC §3, §5), admitted once into a plan and executed on the A65 over the
//! caller's buffers.

use std::ffi::{c_char, c_void};

use simak::Port;
use simak::a65;
use simak::layout::MlaTiled;
use simak::ops::casttess::TiledSpec;
use simak::ops::{CastTess, QuantTess, casttess, quanttess};

use crate::plan::{self, Planned};
use crate::{
    Failure, Tensor, clone_handle, free_handle, read, simak_error, simak_mla_tiled,
    simak_quant_params, simak_tensor,
};

/// A checked CastTess plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_casttess_plan(pub(crate) Planned<CastTess>);

/// A checked QuantTess plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_quanttess_plan(pub(crate) Planned<QuantTess>);

/// The ports and layout of a tiled request, copied out of the caller's structs.
#[derive(Debug, Clone, Copy)]
struct Tiled {
    input: Tensor,
    output: Tensor,
    layout: MlaTiled,
}

impl Tiled {
    /// Reads the ports and layout of a tiled request.
    ///
    /// # Safety
    ///
    /// As the `*_plan_new` functions: each pointer null or valid.
    unsafe fn read(
        input: *const simak_tensor,
        output: *const simak_tensor,
        layout: *const simak_mla_tiled,
    ) -> Result<Tiled, Failure> {
        // SAFETY: the caller's contract.
        let input = unsafe { Tensor::read(input, "input", 1) }?;
        // SAFETY: the caller's contract.
        let output = unsafe { Tensor::read(output, "output", 1) }?.tiled(Port::Output)?;
        // SAFETY: the caller's contract.
        let layout = crate::layout(&unsafe { read(layout, "layout") }?)?;
        Ok(Tiled {
            input,
            output,
            layout,
        })
    }

    /// The library's tiled output spec.
    fn output_spec(&self) -> TiledSpec<'_> {
        TiledSpec {
            extents: self.output.extents(),
            dtype: self.output.dtype(),
            layout: self.layout,
        }
    }
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
    // SAFETY: this function's contract.
    let request = || unsafe { Tiled::read(input, output, layout) };
    let prepare = |r: Tiled| -> Result<_, Failure> {
        let checked = casttess::check_inference_dyn(&casttess::DynRequest {
            input: r.input.spec(),
            output: r.output_spec(),
        })?;
        Ok(a65::casttess::prepare(&checked))
    };
    // SAFETY: `plan` and `error` are null or writable by this function's contract, and
    // `request` reads only arguments that contract makes valid.
    unsafe { plan::plan_new(plan, error, request, prepare) }
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
    unsafe { plan::output_span(plan) }
}

/// Bytes of input storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_casttess_plan_input_span(plan: *const simak_casttess_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::input_span(plan) }
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
    // SAFETY: this function's contract is `plan::execute`'s.
    unsafe { plan::execute(plan, input, input_bytes, output, output_bytes, error) }
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
    unsafe { plan::implementation(plan) }
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
    let request = || {
        // SAFETY: this function's contract.
        let tiled = unsafe { Tiled::read(input, output, layout) }?;
        // SAFETY: this function's contract.
        let params = unsafe { read(params, "params") }?;
        Ok((tiled, params))
    };
    let prepare = |(r, p): (Tiled, simak_quant_params)| -> Result<_, Failure> {
        let (params, exact) = crate::params(&p)?;
        let checked = quanttess::check_inference_dyn(&quanttess::DynRequest {
            input: r.input.spec(),
            output: r.output_spec(),
            params,
        })?;
        Ok(plan::prepare(
            &checked,
            exact,
            a65::quanttess::prepare_exact,
        ))
    };
    // SAFETY: `plan` and `error` are null or writable by this function's contract, and
    // `request` reads only arguments that contract makes valid.
    unsafe { plan::plan_new(plan, error, request, prepare) }
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
    unsafe { plan::output_span(plan) }
}

/// Bytes of input storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_quanttess_plan_input_span(plan: *const simak_quanttess_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::input_span(plan) }
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
    // SAFETY: this function's contract is `plan::execute`'s.
    unsafe { plan::execute(plan, input, input_bytes, output, output_bytes, error) }
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
    unsafe { plan::implementation(plan) }
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
