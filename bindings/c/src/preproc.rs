//! Preproc: 8-bit camera frames (RGB8, BGR8, RGBX8, BGRX8, GRAY8, NV12, I420) → the
//! normalized tensor of SPEC §13 as FP32 or INT8 (strided), or INT8 / BF16 `MlaTiled`,
//! admitted once into a plan and executed on the A65 over the caller's buffers.
//!
//! The frame's planes live in one input buffer (one pointer and its byte length at
//! `execute`), each at a byte offset with its own row stride (`simak_preproc_frame`).

use std::ffi::{c_char, c_void};

use simak::ops::Preproc;
use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output, Plane, Request};
use simak::{DType, a65};

use crate::plan::{self, Planned};
use crate::{
    Failure, clone_handle, free_handle, put, read, simak_error, simak_mla_tiled, simak_quant_params,
};

/// A frame's pixel format (`simak_preproc_frame::format`, SPEC §13). Codes are never
/// renumbered.
#[repr(u32)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub enum simak_preproc_format {
    /// Interleaved R, G, B bytes (3 a pixel).
    SIMAK_PREPROC_RGB8 = 0,
    /// Interleaved B, G, R bytes (3 a pixel).
    SIMAK_PREPROC_BGR8 = 1,
    /// Interleaved R, G, B, X bytes (4 a pixel; X ignored).
    SIMAK_PREPROC_RGBX8 = 2,
    /// Interleaved B, G, R, X bytes (4 a pixel; X ignored).
    SIMAK_PREPROC_BGRX8 = 3,
    /// One luma byte a pixel; one output channel.
    SIMAK_PREPROC_GRAY8 = 4,
    /// Plane 0: Y (H rows of W bytes); plane 1: interleaved U, V (H/2 rows of W bytes).
    /// Even H and W.
    SIMAK_PREPROC_NV12 = 5,
    /// Planes Y (H rows of W bytes), U and V (H/2 rows of W/2 bytes each). Even H and W.
    SIMAK_PREPROC_I420 = 6,
}

/// What a Preproc plan writes (`simak_preproc_output::kind`, SPEC §13).
#[repr(u32)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub enum simak_preproc_to {
    /// FP32, strided (the normalized values).
    SIMAK_PREPROC_TO_F32 = 0,
    /// INT8, strided: Quant (SPEC §3) of the normalized values.
    SIMAK_PREPROC_TO_I8 = 1,
    /// INT8 `MlaTiled`: QuantTess (SPEC §3, §5) of the normalized values.
    SIMAK_PREPROC_TO_QUANTTESS = 2,
    /// BF16 `MlaTiled`: CastTess (SPEC §4, §5) of the normalized values.
    SIMAK_PREPROC_TO_CASTTESS = 3,
}

/// One plane of a frame: byte offset from the frame's start and row stride in bytes.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_preproc_plane {
    /// Byte offset of the plane's first row from the frame's start.
    pub offset: u64,
    /// Bytes from one row to the next (at least the row's bytes when the plane has more
    /// than one row).
    pub row_stride: u64,
}

/// A frame (or batch of frames) in one input buffer (SPEC §13). `simak_preproc_frame_packed`
/// fills one in OpenCV's single-array layout.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_preproc_frame {
    /// A `simak_preproc_format` code.
    pub format: u32,
    /// 0: one frame, output `[H', W', C]`; 1: a batch of `batch` frames, output
    /// `[batch, H', W', C]`.
    pub has_batch: u32,
    /// Height in pixels.
    pub height: u64,
    /// Width in pixels.
    pub width: u64,
    /// Y (or the interleaved plane), then UV (NV12) or U, V (I420); entries past the
    /// format's plane count are ignored.
    pub planes: [simak_preproc_plane; 3],
    /// Frames in a batch (`has_batch` 1).
    pub batch: u64,
    /// Bytes from one frame of a batch to the next (ignored for fewer than two frames).
    pub frame_stride: u64,
}

/// The normalization, channel order and border of a Preproc request (SPEC §13):
/// `n = f32(f32(f32(p) / divisor) − mean_c) / std_c` per output channel c.
/// `simak_preproc_params_default` gives divisor 255, mean 0, std 1, RGB order, no border,
/// pad value 0.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_preproc_params {
    /// Finite, > 0.
    pub divisor: f32,
    /// Means: 1 value (every channel) or one per output channel (3, or 1 for GRAY8), in
    /// output channel order. Finite.
    pub mean: [f32; 3],
    /// Values of `mean` given: 1 or the output channel count (others: 0x247).
    pub mean_count: u32,
    /// Standard deviations, as `mean`. Finite, ≠ 0.
    pub std: [f32; 3],
    /// Values of `std` given.
    pub std_count: u32,
    /// The raw 8-bit border value, as `mean`.
    pub pad_value: [u8; 3],
    /// Values of `pad_value` given.
    pub pad_count: u32,
    /// 1: output channels B, G, R; 0: R, G, B (no effect on GRAY8).
    pub bgr: u32,
    /// Border rows above the frame.
    pub border_top: u64,
    /// Border rows below the frame.
    pub border_bottom: u64,
    /// Border columns left of the frame.
    pub border_left: u64,
    /// Border columns right of the frame.
    pub border_right: u64,
}

/// The output of a Preproc request (SPEC §13), over the logical tensor `[H', W', C]` or
/// `[N, H', W', C]`.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_preproc_output {
    /// A `simak_preproc_to` code.
    pub kind: u32,
    /// Strided outputs (F32, I8): `strides_count` byte strides, one per output axis, or
    /// NULL for row-major contiguous. Must be NULL for the tiled outputs.
    pub strides: *const u64,
    /// Values at `strides` (the output's rank, 3 or 4; another count is 0x206).
    pub strides_count: u32,
    /// The Quant parameters (I8, QuantTess; ignored otherwise). `flags` must be 0 or
    /// `SIMAK_PLAN_EXACT` (Preproc is integer code either way).
    pub params: simak_quant_params,
    /// The tiled layout (QuantTess, CastTess; ignored otherwise), taken as given: SPEC
    /// §13's default roles (axes {-1, 0, 1, 2}, or {-1, 1, 2, 3} for a batch) come from
    /// `simak_preproc_layout_default`, not from `simak_mla_tiled_default` (every role
    /// absent).
    pub layout: simak_mla_tiled,
}

/// A checked Preproc plan, prepared for the A65 (opaque; immutable; shareable between
/// threads).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_preproc_plan(pub(crate) Planned<Preproc>);

/// The defaults of SPEC §13: divisor 255, mean {0} and std {1} (one value each), pad value
/// {0}, RGB order, no border.
#[unsafe(no_mangle)]
pub extern "C" fn simak_preproc_params_default() -> simak_preproc_params {
    simak_preproc_params {
        divisor: 255.0,
        mean: [0.0; 3],
        mean_count: 1,
        std: [1.0; 3],
        std_count: 1,
        pad_value: [0; 3],
        pad_count: 1,
        bgr: 0,
        border_top: 0,
        border_bottom: 0,
        border_left: 0,
        border_right: 0,
    }
}

/// A frame of `format` (a `simak_preproc_format` code) whose planes are packed back to back
/// with rows of exactly their bytes (OpenCV's single-array layout for NV12 and I420), no
/// batch; the frame stride is the frame's bytes. An unknown format gives a frame with no
/// planes that `simak_preproc_plan_new` refuses (0x601).
#[unsafe(no_mangle)]
pub extern "C" fn simak_preproc_frame_packed(
    format: u32,
    height: u64,
    width: u64,
) -> simak_preproc_frame {
    let zero = simak_preproc_plane {
        offset: 0,
        row_stride: 0,
    };
    let mut out = simak_preproc_frame {
        format,
        has_batch: 0,
        height,
        width,
        planes: [zero; 3],
        batch: 0,
        frame_stride: 0,
    };
    if let Ok(f) = format_of(format) {
        let frame = Frame::packed(f, height, width);
        for (slot, p) in out.planes.iter_mut().zip(frame.planes) {
            *slot = simak_preproc_plane {
                offset: p.offset,
                row_stride: p.row_stride,
            };
        }
        out.frame_stride = frame.frame_stride;
    }
    out
}

/// The tiled layout with SPEC §13's default roles for Preproc's output `[H', W', C]` (axes
/// {-1, 0, 1, 2}) or, when `batch` is nonzero, `[N, H', W', C]` ({-1, 1, 2, 3}); tiles 1
/// and Compact channels, for the caller to set.
#[unsafe(no_mangle)]
pub extern "C" fn simak_preproc_layout_default(batch: u32) -> simak_mla_tiled {
    let axes = if batch != 0 {
        [-1, 1, 2, 3]
    } else {
        [-1, 0, 1, 2]
    };
    simak_mla_tiled {
        axes,
        tile: [1; 4],
        pad_to_16: 0,
    }
}

/// The `simak_preproc_format` code of a format (its index in [`Format::ALL`]).
pub(crate) fn format_code(format: Format) -> u32 {
    Format::ALL
        .iter()
        .position(|f| *f == format)
        .map_or(u32::MAX, |i| i as u32)
}

fn format_of(code: u32) -> Result<Format, Failure> {
    Format::ALL.get(code as usize).copied().ok_or_else(|| {
        Failure::invalid_enum(format!(
            "preproc format code {code} is not one of SIMAK_PREPROC_RGB8 (0) .. SIMAK_PREPROC_I420 (6)"
        ))
    })
}

fn flag(value: u32, what: &str) -> Result<bool, Failure> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(Failure::invalid_enum(format!(
            "{what} is {other}, not 0 or 1"
        ))),
    }
}

/// The first `count` of `v`: 1 or the output channel count `channels` (0x247 otherwise,
/// the library's rule, with the count given).
fn values<T: Copy>(
    v: &[T; 3],
    count: u32,
    param: preproc::Param,
    channels: usize,
) -> Result<Vec<T>, Failure> {
    match v.get(..count as usize) {
        Some(given) => Ok(given.to_vec()),
        None => Err(Failure::from(simak::AdmissionError::Preproc(
            preproc::PreprocError::ChannelCount {
                param,
                given: count as usize,
                channels: channels as u8,
            },
        ))),
    }
}

/// Admits a Preproc request and prepares it for the A65 (SPEC §13, §6): the `frame`
/// geometry, the `params` (normalization, channel order, border) and the `output`. On
/// success `*plan` is a new handle (free it with `simak_preproc_plan_free`); on failure it
/// is NULL. Reads no frame data.
///
/// Returns 0, or the admission code of docs/errors.md: 0x240..=0x247 for the frame and
/// normalization rules (odd YUV size, short row or frame stride, overlapping planes, a NaN,
/// infinite, zero or negative parameter, a count other than 1 or the channels), the Quant
/// parameter codes (13 to 16) for INT8 outputs, the layout codes (43, 44, 47, 0x205, 0x206)
/// and span overflows; 0x601 for an unknown format, output kind, rounding, channel mode or
/// a 0/1 flag out of range; 0x603 when `frame`, `params`, `output` or `plan` is NULL.
/// `output->strides` NULL means row-major contiguous (`strides_count` is then ignored); a
/// tiled output with strides is 0x206.
///
/// # Safety
///
/// Each pointer is NULL or valid for its type; `output->strides` is NULL or readable for
/// `strides_count` values; `error` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_preproc_plan_new(
    frame: *const simak_preproc_frame,
    params: *const simak_preproc_params,
    output: *const simak_preproc_output,
    plan: *mut *mut simak_preproc_plan,
    error: *mut simak_error,
) -> u32 {
    let request = || {
        // SAFETY: the pointers are null or valid by this function's contract.
        let frame = unsafe { read(frame, "frame") }?;
        // SAFETY: as above.
        let params = unsafe { read(params, "params") }?;
        // SAFETY: as above.
        let output = unsafe { read(output, "output") }?;
        let strides = if output.strides.is_null() {
            None
        } else {
            // An output has rank 3 or 4: a longer list is refused by its count (0x206)
            // without reading past the rank's values.
            let n = output.strides_count as usize;
            if n > 4 {
                return Err(Failure::from(simak::AdmissionError::StridesRank {
                    port: simak::Port::Output,
                    extents: if frame.has_batch == 1 { 4 } else { 3 },
                    strides: n,
                }));
            }
            let mut s = Vec::with_capacity(n);
            for k in 0..n {
                // SAFETY: `strides` is not null and readable for `strides_count` values by
                // this function's contract (k < strides_count); unaligned reads need no
                // alignment of the caller's array.
                s.push(unsafe { output.strides.wrapping_add(k).read_unaligned() });
            }
            Some(s)
        };
        Ok((frame, params, output, strides))
    };
    let prepare = |(f, p, o, strides): (
        simak_preproc_frame,
        simak_preproc_params,
        simak_preproc_output,
        Option<Vec<u64>>,
    )|
     -> Result<_, Failure> {
        let format = format_of(f.format)?;
        let batched = flag(f.has_batch, "frame has_batch")?;
        let bgr = flag(p.bgr, "params bgr")?;
        let mut planes = [Plane::default(); 3];
        for (slot, q) in planes.iter_mut().zip(f.planes) {
            *slot = Plane {
                offset: q.offset,
                row_stride: q.row_stride,
            };
        }
        let frame = Frame {
            format,
            height: f.height,
            width: f.width,
            planes,
            batch: batched.then_some(f.batch),
            frame_stride: f.frame_stride,
        };
        let c = format.channels();
        let mean = values(&p.mean, p.mean_count, preproc::Param::Mean, c)?;
        let std = values(&p.std, p.std_count, preproc::Param::Std, c)?;
        let pad = values(&p.pad_value, p.pad_count, preproc::Param::PadValue, c)?;
        let tiled = || -> Result<_, Failure> {
            if strides.is_some() {
                return Err(Failure::from(simak::AdmissionError::StridesRank {
                    port: simak::Port::Output,
                    extents: if batched { 4 } else { 3 },
                    strides: o.strides_count as usize,
                }));
            }
            crate::layout(&o.layout)
        };
        let output = match o.kind {
            0 => Output::F32 {
                strides: strides.as_deref(),
            },
            1 => Output::I8 {
                strides: strides.as_deref(),
                params: crate::params(&o.params)?.0,
            },
            2 => Output::QuantTess {
                layout: tiled()?,
                params: crate::params(&o.params)?.0,
            },
            3 => Output::CastTess { layout: tiled()? },
            other => {
                return Err(Failure::invalid_enum(format!(
                    "preproc output kind {other} is not one of SIMAK_PREPROC_TO_F32 (0), \
                     SIMAK_PREPROC_TO_I8 (1), SIMAK_PREPROC_TO_QUANTTESS (2), \
                     SIMAK_PREPROC_TO_CASTTESS (3)"
                )));
            }
        };
        let checked = preproc::check_inference(&Request {
            frame,
            normalize: Normalize {
                divisor: p.divisor,
                mean: &mean,
                std: &std,
            },
            bgr,
            border: Border {
                top: p.border_top,
                bottom: p.border_bottom,
                left: p.border_left,
                right: p.border_right,
            },
            pad_value: &pad,
            output,
        })?;
        Ok(a65::preproc::prepare(&checked))
    };
    // SAFETY: `plan` and `error` are null or writable by this function's contract, and
    // `request` reads only arguments that contract makes valid.
    unsafe { plan::plan_new(plan, error, request, prepare) }
}

/// Preprocesses the frame(s) at `input` into `output` as `plan` describes (SPEC §13, §6),
/// synchronously on the calling thread, without allocating.
///
/// `input` is the one buffer holding every plane at its offset (at least
/// `simak_preproc_plan_input_span` bytes, any alignment); `output` holds at least
/// `simak_preproc_plan_output_span` bytes (4-byte aligned for FP32, 16-byte aligned for the
/// tiled outputs). Strided outputs write only the bytes elements map to; tiled outputs
/// write exactly the capacity, padding 0x00 included. An empty plan needs no storage (any
/// pointers, even NULL) and writes nothing.
///
/// Checked before anything is read or written, in this order: a NULL plan (0x603), a NULL
/// `input` (0x409), a NULL `output` (0x40a), then input capacity (0x401), the output's
/// capacity (0x402) and alignment (0x404), address overflow (0x405, 0x406), overlapping
/// buffers (0x407).
///
/// # Safety
///
/// `plan` is NULL or a live handle. When every check passes, `input` must be readable for
/// `input_bytes` bytes and `output` readable and writable for `output_bytes` bytes, and no
/// other thread may write the input or access the output until the call returns. `error`
/// is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_preproc_execute(
    plan: *const simak_preproc_plan,
    input: *const c_void,
    input_bytes: usize,
    output: *mut c_void,
    output_bytes: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `plan::execute`'s.
    unsafe { plan::execute(plan, input, input_bytes, output, output_bytes, error) }
}

/// The output's logical extents: writes the rank (3 or 4) to `*rank` and the extents
/// `[H', W', C]` or `[N, H', W', C]` to `extents`, which holds `extents_count` values.
/// Nothing is written on failure.
///
/// Returns 0, 0x603 for a NULL `plan`, `extents` or `rank`, 0x609 when `extents_count` is
/// below the rank.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `extents` NULL or writable for `extents_count` values;
/// `rank` NULL or writable; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_preproc_plan_output_extents(
    plan: *const simak_preproc_plan,
    extents: *mut u64,
    extents_count: usize,
    rank: *mut u32,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        // SAFETY: `plan` is null or live by this function's contract.
        let plan = unsafe { crate::borrow(plan, "plan") }?;
        if extents.is_null() {
            return Err(Failure::null("extents"));
        }
        if rank.is_null() {
            return Err(Failure::null("rank"));
        }
        let e = plan.0.plan().output_extents();
        if extents_count < e.len() {
            return Err(Failure::new(
                crate::SIMAK_ERROR_CAPACITY,
                format!(
                    "extents holds {extents_count} values but the output has rank {}",
                    e.len()
                ),
            ));
        }
        for (k, &x) in e.iter().enumerate() {
            // SAFETY: `extents` is not null and writable for `extents_count` ≥ rank values
            // by this function's contract; unaligned writes need no alignment.
            unsafe { extents.wrapping_add(k).write_unaligned(x) };
        }
        // SAFETY: `rank` is not null and writable by this function's contract.
        unsafe { put(rank, e.len() as u32) };
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { crate::guard(error, body) }
}

/// The output's element type (a `simak_dtype` code: F32, I8, I8 or BF16 by the output
/// kind); 0 for a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_preproc_plan_output_dtype(plan: *const simak_preproc_plan) -> u32 {
    // SAFETY: `plan` is null or live by this function's contract.
    match unsafe { crate::borrow(plan, "plan") } {
        Ok(p) => crate::dtype_code(match p.0.plan().output() {
            preproc::PlanOutput::F32(_) => DType::F32,
            preproc::PlanOutput::I8(..) | preproc::PlanOutput::QuantTess(..) => DType::I8,
            preproc::PlanOutput::CastTess(_) => DType::BF16,
        }),
        Err(_) => 0,
    }
}

/// The diagnostic name of the selected A65 route, e.g. "preproc-portable" (not an API
/// contract); owned by the plan. NULL for a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_preproc_plan_implementation(
    plan: *const simak_preproc_plan,
) -> *const c_char {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::implementation(plan) }
}

/// Bytes of the input buffer the plan reads, from its start (0 for an empty plan or a NULL
/// plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_preproc_plan_input_span(plan: *const simak_preproc_plan) -> u64 {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { plan::input_span(plan) }
}

/// Bytes of output storage the plan accesses: the strided span or the tiled capacity (0 for
/// an empty plan or a NULL plan).
///
/// # Safety
///
/// `plan` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_preproc_plan_output_span(plan: *const simak_preproc_plan) -> u64 {
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
pub unsafe extern "C" fn simak_preproc_plan_clone(
    plan: *const simak_preproc_plan,
) -> *mut simak_preproc_plan {
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
pub unsafe extern "C" fn simak_preproc_plan_free(plan: *mut simak_preproc_plan) {
    // SAFETY: `plan` is null or live by this function's contract.
    unsafe { free_handle(plan) }
}
