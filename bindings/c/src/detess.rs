//! The output side (SPEC §12): Detess (an MLA tiled layout, INT8 / INT16 / INT32 / BF16 →
//! the same dtype, strided), DetessCast (BF16 tiled → FP32), DetessDequant (INT8 / INT16 /
//! INT32 tiled → FP32 / FP16 / BF16, SPEC §12.2) and Dequant (strided INT8 / INT16 / INT32
//! → FP32 / FP16 / BF16), admitted once into a plan and executed on the A65 over the
//! caller's buffers; and the placement of a multi-head OFM's heads.
//!
//! One head is one plan: its `execute` is given the head's bytes (`ofm + offset`, 16-byte
//! aligned for tile alignment 16). `simak_place_heads` gives each head's offset and checks
//! the heads against the OFM buffer.

use std::ffi::{c_char, c_void};

use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::TiledSpec;
use simak::ops::detess::HeadSpec;
use simak::ops::{
    Dequant, Detess, DetessCast, DetessDequant, dequant, detess, detesscast, detessdequant,
};
use simak::{Port, a65};

use crate::plan::{self, Planned};
use crate::{
    Failure, SIMAK_ERROR_CAPACITY, Tensor, clone_handle, free_handle, guard, put, read,
    simak_channels, simak_dequant_params, simak_error, simak_mla_tiled_v2, simak_tensor,
};

/// A checked Detess plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_detess_plan(pub(crate) Planned<Detess>);

/// A checked DetessCast plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_detesscast_plan(pub(crate) Planned<DetessCast>);

/// A checked DetessDequant plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_detessdequant_plan(pub(crate) Planned<DetessDequant>);

/// A checked Dequant plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_dequant_plan(pub(crate) Planned<Dequant>);

/// The ports and layout of a request with a tiled input, copied out of the caller's
/// structs.
#[derive(Debug, Clone, Copy)]
struct Untiled {
    input: Tensor,
    output: Tensor,
    layout: MlaTiled,
}

impl Untiled {
    /// Reads the tiled input (its `strides` must be NULL), the strided output and the
    /// layout.
    ///
    /// # Safety
    ///
    /// As the `*_plan_new` functions: each pointer null or valid.
    unsafe fn read(
        input: *const simak_tensor,
        output: *const simak_tensor,
        layout: *const simak_mla_tiled_v2,
    ) -> Result<Untiled, Failure> {
        // SAFETY: the caller's contract.
        let input = unsafe { Tensor::read(input, "input", 1) }?.tiled(Port::Input)?;
        // SAFETY: the caller's contract.
        let output = unsafe { Tensor::read(output, "output", 1) }?;
        // SAFETY: the caller's contract.
        let layout = crate::layout_v2(&unsafe { read(layout, "layout") }?)?;
        Ok(Untiled {
            input,
            output,
            layout,
        })
    }

    /// The library's tiled input spec.
    fn input_spec(&self) -> TiledSpec<'_> {
        TiledSpec {
            extents: self.input.extents(),
            dtype: self.input.dtype(),
            layout: self.layout,
        }
    }

    /// The library's run-time-rank request of the Detess family.
    fn request(&self) -> detess::DynRequest<'_> {
        detess::DynRequest {
            input: self.input_spec(),
            output: self.output.spec(),
        }
    }
}

/// The library's dequantization parameters of the caller's.
fn dequant_params(p: &simak_dequant_params) -> dequant::Params {
    dequant::Params::from_bits(p.multiplier_bits).with_zero_point(p.zero_point)
}

// ---- Detess ----------------------------------------------------------------------------

/// Admits a Detess request and prepares it for the A65 (SPEC §12, §12.1, §6): the tiled
/// `input` (I8, I16, I32 or BF16; rank 1 to 6; the logical extents; `strides` NULL) in the
/// `layout`, the `output` (the input's dtype and extents, contiguous or strided: NHWC,
/// NCHW or any order is a choice of byte strides). On success `*plan` is a new handle
/// (free it with `simak_detess_plan_free`); on failure it is NULL.
///
/// Returns 0, or the admission code of docs/errors.md: 5 / 0x201 a dtype, 0x202 extents
/// that differ, 0x205 strides on the tiled input, 43 / 44 / 47 the layout's axes and tile
/// extents, 0x224 a PadTo16 or CBlock16 C tile extent that is neither C nor a multiple of
/// 16; 0x601 for an unknown dtype, `channels` or `tile_align` value; 0x603 when `input`,
/// `output`, `layout` or `plan` is NULL.
///
/// # Safety
///
/// Each pointer is NULL or valid for its type (`strides` for `rank` values); `error` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detess_plan_new(
    input: *const simak_tensor,
    output: *const simak_tensor,
    layout: *const simak_mla_tiled_v2,
    plan: *mut *mut simak_detess_plan,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract.
    let request = || unsafe { Untiled::read(input, output, layout) };
    let prepare = |r: Untiled| -> Result<_, Failure> {
        Ok(a65::detess::prepare(&detess::check_inference_dyn(
            &r.request(),
        )?))
    };
    // SAFETY: `plan` and `error` are null or writable by this function's contract, and
    // `request` reads only arguments that contract makes valid.
    unsafe { plan::plan_new(plan, error, request, prepare) }
}

/// Bytes of the tiled input: the head's span in the OFM (the layout's capacity, padding
/// included). 0 for an empty plan or a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detess_plan_input_capacity(plan: *const simak_detess_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::input_span(plan) }
}

/// Bytes of output storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detess_plan_output_span(plan: *const simak_detess_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::output_span(plan) }
}

/// Reads the tiled head `input` into the strided `output` (SPEC §12.1, §6), synchronously
/// on the calling thread, without allocating and independent of the FP environment.
///
/// `input` holds the head's bytes from its first tile (at least
/// `simak_detess_plan_input_capacity`, aligned to 16 bytes for tile alignment 16, to the
/// element size for 1); padding bytes are never read. `output` holds at least
/// `simak_detess_plan_output_span` bytes; only the bytes elements map to are written. An
/// empty plan needs no storage (any pointers, even NULL) and writes nothing.
///
/// Checked before anything is read or written, in this order: a NULL plan (0x603), a NULL
/// `input` (0x409), a NULL `output` (0x40a), then input capacity (0x401), alignment
/// (0x403), address overflow (0x405), the same for the output (0x402, 0x404, 0x406),
/// overlapping ports (0x407).
///
/// # Safety
///
/// `plan` is NULL or a live handle. When every check passes, `input` must be readable for
/// `input_bytes` bytes and `output` readable and writable for `output_bytes` bytes, and no
/// other thread may write the input or access the output until the call returns. `error`
/// is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detess_execute(
    plan: *const simak_detess_plan,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `plan::execute`'s.
    unsafe { plan::execute(plan, input, input_bytes, output, output_bytes, error) }
}

/// The diagnostic name of the selected A65 level, e.g. "x86_64-avx2" (not an API
/// contract); owned by the plan. NULL for a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detess_plan_implementation(
    plan: *const simak_detess_plan,
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
pub unsafe extern "C" fn simak_detess_plan_clone(
    plan: *const simak_detess_plan,
) -> *mut simak_detess_plan {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { clone_handle(plan) }
}

/// Releases one reference to `plan`. Nothing for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detess_plan_free(plan: *mut simak_detess_plan) {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { free_handle(plan) }
}

// ---- DetessCast ------------------------------------------------------------------------

/// Admits a DetessCast request and prepares it for the A65 (SPEC §12): as
/// `simak_detess_plan_new` with a BF16 `input` and an F32 `output`; each value is `bits <<
/// 16` of its BF16 pattern (every pattern, NaN payloads kept).
///
/// # Safety
///
/// As `simak_detess_plan_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detesscast_plan_new(
    input: *const simak_tensor,
    output: *const simak_tensor,
    layout: *const simak_mla_tiled_v2,
    plan: *mut *mut simak_detesscast_plan,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract.
    let request = || unsafe { Untiled::read(input, output, layout) };
    let prepare = |r: Untiled| -> Result<_, Failure> {
        Ok(a65::detesscast::prepare(&detesscast::check_inference_dyn(
            &r.request(),
        )?))
    };
    // SAFETY: `plan` and `error` are null or writable by this function's contract, and
    // `request` reads only arguments that contract makes valid.
    unsafe { plan::plan_new(plan, error, request, prepare) }
}

/// Bytes of the tiled input (the head's span). 0 for an empty or NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detesscast_plan_input_capacity(
    plan: *const simak_detesscast_plan,
) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::input_span(plan) }
}

/// Bytes of output storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detesscast_plan_output_span(
    plan: *const simak_detesscast_plan,
) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::output_span(plan) }
}

/// Reads the tiled BF16 head into the strided FP32 `output` (SPEC §12): buffers and checks
/// as `simak_detess_execute`.
///
/// # Safety
///
/// As `simak_detess_execute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detesscast_execute(
    plan: *const simak_detesscast_plan,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `plan::execute`'s.
    unsafe { plan::execute(plan, input, input_bytes, output, output_bytes, error) }
}

/// The diagnostic name of the selected A65 level; owned by the plan. NULL for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detesscast_plan_implementation(
    plan: *const simak_detesscast_plan,
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
pub unsafe extern "C" fn simak_detesscast_plan_clone(
    plan: *const simak_detesscast_plan,
) -> *mut simak_detesscast_plan {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { clone_handle(plan) }
}

/// Releases one reference to `plan`. Nothing for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detesscast_plan_free(plan: *mut simak_detesscast_plan) {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { free_handle(plan) }
}

// ---- DetessDequant ---------------------------------------------------------------------

/// Admits a DetessDequant request and prepares it for the A65 (SPEC §12, §12.2): as
/// `simak_detess_plan_new` with an I8, I16 or I32 `input`, an F32, F16 or BF16 `output`
/// and the dequantization `params`; exactly Dequant of Detess. The A65 builds the table of
/// every value here for I8 (256 entries) and I16 (65,536).
///
/// Returns as `simak_detess_plan_new`, and 13 / 14 for a multiplier that is not finite or
/// not > 0, 0x223 for a zero point outside the input dtype's range; 0x603 also for a NULL
/// `params`.
///
/// # Safety
///
/// As `simak_detess_plan_new`; `params` NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detessdequant_plan_new(
    input: *const simak_tensor,
    output: *const simak_tensor,
    layout: *const simak_mla_tiled_v2,
    params: *const simak_dequant_params,
    plan: *mut *mut simak_detessdequant_plan,
    error: *mut simak_error,
) -> u32 {
    let request = || {
        // SAFETY: this function's contract.
        let untiled = unsafe { Untiled::read(input, output, layout) }?;
        // SAFETY: this function's contract.
        let params = unsafe { read(params, "params") }?;
        Ok((untiled, params))
    };
    let prepare = |(r, p): (Untiled, simak_dequant_params)| -> Result<_, Failure> {
        let checked = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
            input: r.input_spec(),
            output: r.output.spec(),
            params: dequant_params(&p),
        })?;
        Ok(a65::detessdequant::prepare(&checked))
    };
    // SAFETY: `plan` and `error` are null or writable by this function's contract, and
    // `request` reads only arguments that contract makes valid.
    unsafe { plan::plan_new(plan, error, request, prepare) }
}

/// Bytes of the tiled input (the head's span). 0 for an empty or NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detessdequant_plan_input_capacity(
    plan: *const simak_detessdequant_plan,
) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::input_span(plan) }
}

/// Bytes of output storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detessdequant_plan_output_span(
    plan: *const simak_detessdequant_plan,
) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::output_span(plan) }
}

/// Reads and dequantizes the tiled head into the strided float `output` (SPEC §12.2):
/// buffers and checks as `simak_detess_execute`; never fails because of the FP
/// environment.
///
/// # Safety
///
/// As `simak_detess_execute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detessdequant_execute(
    plan: *const simak_detessdequant_plan,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `plan::execute`'s.
    unsafe { plan::execute(plan, input, input_bytes, output, output_bytes, error) }
}

/// The diagnostic name of the selected A65 level; owned by the plan. NULL for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detessdequant_plan_implementation(
    plan: *const simak_detessdequant_plan,
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
pub unsafe extern "C" fn simak_detessdequant_plan_clone(
    plan: *const simak_detessdequant_plan,
) -> *mut simak_detessdequant_plan {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { clone_handle(plan) }
}

/// Releases one reference to `plan`. Nothing for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_detessdequant_plan_free(plan: *mut simak_detessdequant_plan) {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { free_handle(plan) }
}

// ---- Dequant ---------------------------------------------------------------------------

/// Admits a Dequant request and prepares it for the A65 (SPEC §2, §12.2, §6): `input` (I8,
/// I16 or I32, contiguous or strided, rank 0 to 6), `output` (F32, F16 or BF16, contiguous
/// or strided, the same extents), `params`. On success `*plan` is a new handle (free it
/// with `simak_dequant_plan_free`); on failure it is NULL.
///
/// Returns 0, or the admission code of docs/errors.md (5 / 0x201 a dtype, 13 / 14 the
/// multiplier, 0x223 the zero point, 0x202 the extents, the stride codes); 0x601 for an
/// unknown dtype; 0x603 when `input`, `output`, `params` or `plan` is NULL.
///
/// # Safety
///
/// Each pointer is NULL or valid for its type (`strides` for `rank` values); `error` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_dequant_plan_new(
    input: *const simak_tensor,
    output: *const simak_tensor,
    params: *const simak_dequant_params,
    plan: *mut *mut simak_dequant_plan,
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
    let prepare =
        |(input, output, p): (Tensor, Tensor, simak_dequant_params)| -> Result<_, Failure> {
            let checked = dequant::check_inference_dyn(&dequant::DynRequest {
                input: input.spec(),
                output: output.spec(),
                params: dequant_params(&p),
            })?;
            Ok(a65::dequant::prepare(&checked))
        };
    // SAFETY: `plan` and `error` are null or writable by this function's contract, and
    // `request` reads only arguments that contract makes valid.
    unsafe { plan::plan_new(plan, error, request, prepare) }
}

/// Bytes of input storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_dequant_plan_input_span(plan: *const simak_dequant_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::input_span(plan) }
}

/// Bytes of output storage the plan accesses (0 for an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_dequant_plan_output_span(plan: *const simak_dequant_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::output_span(plan) }
}

/// Dequantizes `input` into `output` (SPEC §12.2, §6), synchronously on the calling thread,
/// without allocating; never fails because of the FP environment. Buffers and checks as
/// `simak_quant_execute` (the input aligned to its element size), without 0x408.
///
/// # Safety
///
/// As `simak_quant_execute`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_dequant_execute(
    plan: *const simak_dequant_plan,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `plan::execute`'s.
    unsafe { plan::execute(plan, input, input_bytes, output, output_bytes, error) }
}

/// The diagnostic name of the selected A65 level; owned by the plan. NULL for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_dequant_plan_implementation(
    plan: *const simak_dequant_plan,
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
pub unsafe extern "C" fn simak_dequant_plan_clone(
    plan: *const simak_dequant_plan,
) -> *mut simak_dequant_plan {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { clone_handle(plan) }
}

/// Releases one reference to `plan`. Nothing for NULL.
///
/// # Safety
///
/// `plan` is NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_dequant_plan_free(plan: *mut simak_dequant_plan) {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { free_handle(plan) }
}

// ---- Heads -----------------------------------------------------------------------------

/// One head of a multi-head OFM buffer (SPEC §12.1): its span in bytes (its plan's
/// `*_plan_input_capacity`) and, when `has_offset` is 1, an explicit byte offset.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_ofm_head {
    /// The head's span in bytes.
    pub span: u64,
    /// The explicit byte offset (read only when `has_offset` is 1).
    pub offset: u64,
    /// 1: `offset` is the head's offset; 0: the sum of the spans of the heads before it.
    pub has_offset: u32,
}

/// Places `heads_len` (1 to 32) heads in an OFM buffer of `buffer_bytes` bytes (SPEC
/// §12.1): writes each head's byte offset to `offsets[k]` (explicit, or by default the sum
/// of the spans of the heads before it) after checking every head against the buffer and
/// the others. An empty head (span 0) may sit at the end and overlaps nothing. Nothing is
/// written to `offsets` on failure.
///
/// Returns 0, or 0x225 for no heads or more than 32, 0x226 an offset at or past the end,
/// 0x227 a head that runs past the end, 0x228 two heads that overlap; 0x609 when
/// `offsets_len` is below `heads_len`; 0x601 for a `has_offset` other than 0 or 1; 0x603
/// when `heads` (with `heads_len` > 0) or `offsets` is NULL.
///
/// # Safety
///
/// `heads` is NULL or readable for `heads_len` values; `offsets` NULL or writable for
/// `offsets_len` values; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_place_heads(
    buffer_bytes: u64,
    heads: *const simak_ofm_head,
    heads_len: usize,
    offsets: *mut u64,
    offsets_len: usize,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        let mut specs = [HeadSpec {
            span: 0,
            offset: None,
        }; detess::MAX_HEADS];
        if heads_len > 0 && heads.is_null() {
            return Err(Failure::null("heads"));
        }
        if heads_len > detess::MAX_HEADS {
            return Err(simak::AdmissionError::HeadCount { count: heads_len }.into());
        }
        let count = heads_len;
        for (k, slot) in specs.iter_mut().enumerate().take(count) {
            // SAFETY: `heads` is not null (checked) and readable for `heads_len` values;
            // `k < heads_len`.
            let head = unsafe { heads.wrapping_add(k).read_unaligned() };
            let offset = match head.has_offset {
                0 => None,
                1 => Some(head.offset),
                other => {
                    return Err(Failure::invalid_enum(format!(
                        "head {k}: has_offset is {other}, not 0 or 1"
                    )));
                }
            };
            *slot = HeadSpec {
                span: head.span,
                offset,
            };
        }
        if offsets.is_null() {
            return Err(Failure::null("offsets"));
        }
        if offsets_len < count {
            return Err(Failure::new(
                SIMAK_ERROR_CAPACITY,
                format!("`offsets` holds {offsets_len} values, but there are {count} heads"),
            ));
        }
        let mut placed = [0u64; detess::MAX_HEADS];
        detess::place_heads(buffer_bytes, &specs[..count], &mut placed)?;
        for (k, &offset) in placed.iter().enumerate().take(count) {
            // SAFETY: `offsets` is not null (checked) and writable for `offsets_len` ≥
            // `count` values; `k < count`.
            unsafe { offsets.wrapping_add(k).write_unaligned(offset) };
        }
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// The channel encoding a model archive names with its two flags (SPEC §12.1):
/// (`align_c16`, `cblock`) = (0, 0) Compact, (1, 0) PadTo16, (1, 1) CBlock16; writes the
/// `simak_channels` code to `*channels`.
///
/// Returns 0, or 0x222 for (0, 1), which names no encoding; 0x601 for a flag other than 0
/// or 1; 0x603 for a NULL `channels`. Nothing is written on failure.
///
/// # Safety
///
/// `channels` is NULL or writable; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_channels_from_flags(
    align_c16: u32,
    cblock: u32,
    channels: *mut u32,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        let flag = |v: u32, name: &str| match v {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(Failure::invalid_enum(format!(
                "`{name}` is {other}, not 0 or 1"
            ))),
        };
        let encoding =
            Channels::from_flags(flag(align_c16, "align_c16")?, flag(cblock, "cblock")?)?;
        if channels.is_null() {
            return Err(Failure::null("channels"));
        }
        let code = match encoding {
            Channels::Compact => simak_channels::SIMAK_CHANNELS_COMPACT,
            Channels::PadTo16 => simak_channels::SIMAK_CHANNELS_PAD_TO_16,
            Channels::CBlock16 => simak_channels::SIMAK_CHANNELS_CBLOCK16,
        };
        // SAFETY: `channels` is not null (checked) and writable by this function's contract.
        unsafe { put(channels, code as u32) };
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}
