//! The C ABI of simak (`libsimak.so`, `libsimak.a`; header `include/simak/simak.h`,
//! generated from this crate by cbindgen and committed; C++17 wrapper
//! `include/simak/simak.hpp`).
//!
//! The ABI only wraps the Rust library: every rule keeps its single implementation there,
//! every failure reports the library's stable code of `docs/errors.md`, and only the
//! binding layer's own failures have codes of their own (0x601 an enum value or flag bit
//! outside its set, 0x602 a caught panic, 0x603 a null argument other than a port's data).
//!
//! Conventions of every function:
//!
//! - A function that can fail returns its status code (0 on success) and, when `error` is
//!   not null, fills it: the code and a NUL-terminated message (empty on success).
//! - Enumerations and flags are `uint32_t` fields, so an unknown value from C is an error
//!   (0x601), never undefined behaviour.
//! - No panic crosses the boundary: one is caught and reported as 0x602.
//! - Plans are immutable, reference counted (`*_plan_clone` shares a handle, `*_plan_free`
//!   releases one reference) and may be used from several threads at once.
//! - Buffers belong to the caller and are passed as pointer and byte length; `execute`
//!   checks them (null pointers, capacities, alignment, address overflow, overlap) before
//!   anything is read or written (SPEC §6).

use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use simak::ev74::{BindError, DecodeError, RepresentError};
use simak::layout::{Channels, MlaTiled, TileAlign, TileAxis};
use simak::ops::quant::{Params, Rounding};
use simak::{AdmissionError, DType, DynSpec, MAX_RANK, Port};

// In header order (cbindgen emits the functions module by module).
mod quant;
// CastTess and QuantTess.
mod tess;
// Detess, DetessCast, DetessDequant and Dequant: the output side (SPEC §12).
mod detess;
// Preproc: 8-bit camera frames (SPEC §13).
mod preproc;
// A model's boundary from its manifest (SPEC §14).
mod model;
// The EV74 codec.
mod ev74;
// The plan handles' generic bodies (no exported items).
mod plan;

pub use detess::*;
pub use ev74::*;
pub use model::*;
pub use preproc::*;
pub use quant::*;
pub use tess::*;

const _: () = assert!(MAX_RANK == 6, "simak_tensor holds six extents");

/// Input element type or output element type of a tensor (`simak_tensor::dtype`). The codes
/// of the float types are the EV74 wire codes; the integer codes (5 to 8) are API codes
/// only. Codes are never renumbered: new ones are appended.
#[repr(u32)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub enum simak_dtype {
    /// bfloat16: the upper half of a binary32, 2 bytes, little-endian.
    SIMAK_DTYPE_BF16 = 1,
    /// IEEE binary32, 4 bytes, little-endian.
    SIMAK_DTYPE_F32 = 3,
    /// IEEE binary16, 2 bytes, little-endian.
    SIMAK_DTYPE_F16 = 4,
    /// Signed 8-bit integer (Quant and QuantTess outputs; the inputs of Detess,
    /// DetessDequant and Dequant).
    SIMAK_DTYPE_I8 = 5,
    /// Signed 16-bit integer, little-endian (the output side only: Detess, DetessDequant
    /// and Dequant inputs, SPEC §12).
    SIMAK_DTYPE_I16 = 6,
    /// Signed 32-bit integer, little-endian (the output side only, as `SIMAK_DTYPE_I16`).
    SIMAK_DTYPE_I32 = 7,
    /// Unsigned 8-bit: camera frames, as a model's input stages report them
    /// (`simak_model_stage::dtype`). Not a tensor port's dtype (0x601 there).
    SIMAK_DTYPE_U8 = 8,
}

/// Channel encoding of an MLA tiled layout (`simak_mla_tiled_v2::channels`, SPEC §12.1).
/// The first two codes are the values of `simak_mla_tiled::pad_to_16`.
#[repr(u32)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub enum simak_channels {
    /// `sc = tc'`: exactly the tile's channels (a model archive's flags (false, false)).
    SIMAK_CHANNELS_COMPACT = 0,
    /// `sc = roundup(tc', 16)`, zero channels padding each plane ((true, false), SiMa's
    /// "padded HWC C16").
    SIMAK_CHANNELS_PAD_TO_16 = 1,
    /// `sc = roundup(tc', 16)` stored as 16-channel blocks, for each block each pixel's
    /// `E` planes of 16 bytes ((true, true)). Output side only (the Detess ops' inputs).
    SIMAK_CHANNELS_CBLOCK16 = 2,
}

/// Integer rounding of the binary32 product (`simak_quant_params::rounding`, SPEC §3).
#[repr(u32)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub enum simak_rounding {
    /// Truncation. A zero-filled `simak_quant_params` means this mode.
    SIMAK_ROUNDING_TOWARD_ZERO = 0,
    /// Nearest, ties to even (the default of `simak_quant_params_default`).
    SIMAK_ROUNDING_NEAREST_EVEN = 1,
    /// Ceiling.
    SIMAK_ROUNDING_TOWARD_POSITIVE = 2,
    /// Floor.
    SIMAK_ROUNDING_TOWARD_NEGATIVE = 3,
}

/// `simak_quant_params::flags` bit: prepare the exact integer path of SPEC §3 for every
/// element instead of the fastest SIMD route. Same bytes, slower, and independent of the
/// calling thread's FP environment: a program built with `-ffast-math` sets flush-to-zero
/// at start-up, and every SIMD route then fails with 0x408 (the FP-environment error)
/// unless the plan was made with this flag.
pub const SIMAK_PLAN_EXACT: u32 = 1;
/// The most axes a tensor has.
pub const SIMAK_MAX_RANK: u32 = 6;
/// Bytes of `simak_error::message`, its terminating NUL included.
pub const SIMAK_ERROR_MESSAGE_SIZE: u32 = 256;
/// Status of success.
pub const SIMAK_OK: u32 = 0;
/// 0x601: an enum value or flag bit outside its set (docs/errors.md
/// `BINDING_INVALID_ENUM`).
pub const SIMAK_ERROR_INVALID_ENUM: u32 = 0x601;
/// 0x602: a panic caught at the boundary, a simak bug (`BINDING_INTERNAL`).
pub const SIMAK_ERROR_INTERNAL: u32 = 0x602;
/// 0x603: a null argument other than a port's data pointer (`BINDING_NULL_ARGUMENT`).
pub const SIMAK_ERROR_NULL_ARGUMENT: u32 = 0x603;
/// 0x609: a caller's output buffer given with its length is shorter than what would be
/// written; nothing is written (`BINDING_CAPACITY`).
pub const SIMAK_ERROR_CAPACITY: u32 = 0x609;

/// A tensor port: `rank` (0 to 6) logical `extents` in elements (slots from `rank` on are
/// ignored), optional byte `strides` and the `dtype` (a `simak_dtype` code).
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_tensor {
    /// Number of axes, 0 (a scalar) to 6; above 6 is the rank error (code 6).
    pub rank: u32,
    /// Extents in elements of axes 0 to `rank - 1`.
    pub extents: [u64; 6],
    /// `rank` byte strides, or NULL for row-major contiguous. Must be NULL for a tiled
    /// (CastTess, QuantTess) output, whose placement the layout gives.
    pub strides: *const u64,
    /// A `simak_dtype` code.
    pub dtype: u32,
}

/// Quant parameters (SPEC §3): `output = saturate(round(binary32(x * multiplier)) +
/// zero_point)`.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_quant_params {
    /// The binary32 bits of the multiplier (finite, > 0). The input is multiplied by it.
    pub multiplier_bits: u32,
    /// Zero point in [-128, 127].
    pub zero_point: i32,
    /// A `simak_rounding` code.
    pub rounding: u32,
    /// Plan flags: 0 or `SIMAK_PLAN_EXACT`.
    pub flags: u32,
}

/// The `MlaTiled` output layout (SPEC §5).
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_mla_tiled {
    /// The logical axis playing each role, in the order D, H, W, C; -1 absent.
    pub axes: [i32; 4],
    /// Tile extents of D, H, W, C in elements (1 for an absent role).
    pub tile: [u32; 4],
    /// 0: compact channels; 1: channels padded with zeros to a multiple of 16.
    pub pad_to_16: u32,
}

/// The MLA tiled layout with the output side's fields (SPEC §12.1): `simak_mla_tiled` plus
/// the channel encoding (CBlock16 included) and the tile alignment. The layout of the
/// Detess ops' tiled inputs; `simak_mla_tiled` stays as it is for CastTess and QuantTess.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_mla_tiled_v2 {
    /// The logical axis playing each role, in the order D, H, W, C; -1 absent.
    pub axes: [i32; 4],
    /// Tile extents of D, H, W, C in elements (1 for an absent role).
    pub tile: [u32; 4],
    /// A `simak_channels` code.
    pub channels: u32,
    /// Each tile's size in bytes is rounded up to this: 16 (SPEC §5) or 1 (no per-tile
    /// padding: MLA outputs in Compact encoding, e.g. SiMa's BF16 `[2,3,33]` tile of 396
    /// bytes).
    pub tile_align: u32,
}

/// Dequantization parameters of one head (SPEC §12.2): `y = (q - zero_point) / multiplier`,
/// each step rounded once to binary32, then to the output dtype.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_dequant_params {
    /// The binary32 bits of the multiplier `s` of SPEC §3 (finite, > 0, subnormals allowed:
    /// the number Quant multiplies by; dequantization divides by it).
    pub multiplier_bits: u32,
    /// Zero point: INT8 [-128, 127], INT16 [-32768, 32767], INT32 any.
    pub zero_point: i32,
}

/// What a failing call reports: the stable code of docs/errors.md (0: success) and a
/// NUL-terminated message in English (truncated to fit).
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_error {
    /// The status code; 0 on success.
    pub code: u32,
    /// The message, NUL-terminated; empty on success.
    pub message: [c_char; 256],
}

/// The library version, e.g. "0.1.0" (a static string).
#[unsafe(no_mangle)]
pub extern "C" fn simak_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// `simak_quant_params` for `multiplier`: zero point 0, nearest-even rounding, no flags.
/// (A zero-filled struct instead means rounding toward zero.)
#[unsafe(no_mangle)]
pub extern "C" fn simak_quant_params_default(multiplier: f32) -> simak_quant_params {
    simak_quant_params {
        multiplier_bits: multiplier.to_bits(),
        zero_point: 0,
        rounding: Rounding::NearestEven.code(),
        flags: 0,
    }
}

/// The default layout: every role absent (-1), tiles 1, compact channels.
#[unsafe(no_mangle)]
pub extern "C" fn simak_mla_tiled_default() -> simak_mla_tiled {
    simak_mla_tiled {
        axes: [-1; 4],
        tile: [1; 4],
        pad_to_16: 0,
    }
}

/// The default output-side layout: every role absent (-1), tiles 1, compact channels,
/// tile alignment 16.
#[unsafe(no_mangle)]
pub extern "C" fn simak_mla_tiled_v2_default() -> simak_mla_tiled_v2 {
    simak_mla_tiled_v2 {
        axes: [-1; 4],
        tile: [1; 4],
        channels: simak_channels::SIMAK_CHANNELS_COMPACT as u32,
        tile_align: 16,
    }
}

/// `simak_dequant_params` for `multiplier` and zero point 0.
#[unsafe(no_mangle)]
pub extern "C" fn simak_dequant_params_default(multiplier: f32) -> simak_dequant_params {
    simak_dequant_params {
        multiplier_bits: multiplier.to_bits(),
        zero_point: 0,
    }
}

/// A failure on its way to the caller: the stable code and the message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    code: u32,
    message: String,
}

impl Failure {
    pub(crate) fn new(code: u32, message: String) -> Failure {
        Failure { code, message }
    }

    /// A required pointer argument named `what` is null.
    pub(crate) fn null(what: &str) -> Failure {
        Failure::new(
            SIMAK_ERROR_NULL_ARGUMENT,
            format!("the argument `{what}` is null"),
        )
    }

    /// An enum value or flag outside its set.
    pub(crate) fn invalid_enum(message: String) -> Failure {
        Failure::new(SIMAK_ERROR_INVALID_ENUM, message)
    }

    /// A caught panic.
    fn panic(payload: &(dyn std::any::Any + Send)) -> Failure {
        let what = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("a panic without a message");
        Failure::new(
            SIMAK_ERROR_INTERNAL,
            format!("internal error (a simak bug, please report it): {what}"),
        )
    }
}

/// `From` each library error: its stable code and its message.
macro_rules! failure_from {
    ($($ty:ty),* $(,)?) => {
        $(
            impl From<$ty> for Failure {
                fn from(e: $ty) -> Failure {
                    let e = simak::Error::from(e);
                    Failure::new(e.code(), e.to_string())
                }
            }
        )*
    };
}

failure_from!(
    AdmissionError,
    simak::a65::ExecuteError,
    RepresentError,
    BindError,
    DecodeError,
);

/// Runs `body`, catching a panic as [`SIMAK_ERROR_INTERNAL`], fills `error` (when not null)
/// with the outcome and returns its code.
///
/// # Safety
///
/// `error` is null or points to writable memory for one `simak_error`.
pub(crate) unsafe fn guard(
    error: *mut simak_error,
    body: impl FnOnce() -> Result<(), Failure>,
) -> u32 {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| Err(Failure::panic(&*p)));
    let (code, message) = match &outcome {
        Ok(()) => (SIMAK_OK, ""),
        Err(f) => (f.code, f.message.as_str()),
    };
    if !error.is_null() {
        let report = error_report(code, message);
        // SAFETY: `error` is not null and, by the caller's contract, writable for one
        // `simak_error`; an unaligned write needs no alignment of the caller's struct.
        unsafe { error.write_unaligned(report) };
    }
    code
}

/// A `simak_error` holding `code` and `message`, cut at a character boundary to fit with
/// its NUL; the rest of the array is zero.
fn error_report(code: u32, message: &str) -> simak_error {
    let mut report = simak_error {
        code,
        message: [0; 256],
    };
    let mut end = message.len().min(report.message.len() - 1);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    for (slot, &byte) in report.message.iter_mut().zip(&message.as_bytes()[..end]) {
        *slot = byte as c_char;
    }
    report
}

/// A copy of `*ptr`, or [`Failure::null`] naming `what`.
///
/// # Safety
///
/// `ptr` is null or points to readable memory for one `T`.
pub(crate) unsafe fn read<T: Copy>(ptr: *const T, what: &str) -> Result<T, Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: not null and readable by the caller's contract; unaligned reads need no
    // alignment of the caller's struct.
    Ok(unsafe { ptr.read_unaligned() })
}

/// A new handle owning one reference to `value`.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Arc::into_raw(Arc::new(value)).cast_mut()
}

/// The plan behind a handle, or [`Failure::null`].
///
/// # Safety
///
/// `handle` is null or a live handle of type `T` made by [`into_handle`] (not yet freed
/// as often as it was made and cloned).
pub(crate) unsafe fn borrow<'a, T>(handle: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: a live handle points to the `T` of its `Arc`, alive while the handle is.
    unsafe { handle.as_ref() }.ok_or_else(|| Failure::null(what))
}

/// Shares a handle: one more reference; NULL for NULL.
///
/// # Safety
///
/// As [`borrow`].
pub(crate) unsafe fn clone_handle<T>(handle: *const T) -> *mut T {
    if !handle.is_null() {
        // SAFETY: a live handle came from `Arc::into_raw` of an `Arc<T>`.
        unsafe { Arc::increment_strong_count(handle) };
    }
    handle.cast_mut()
}

/// Releases one reference; nothing for NULL.
///
/// # Safety
///
/// As [`borrow`]; the caller's reference is gone afterwards.
pub(crate) unsafe fn free_handle<T>(handle: *mut T) {
    if !handle.is_null() {
        // SAFETY: a live handle owns one strong count of its `Arc`, given back here.
        let arc = unsafe { Arc::from_raw(handle.cast_const()) };
        // A drop that panicked must not unwind into C.
        let _ = catch_unwind(AssertUnwindSafe(move || drop(arc)));
    }
}

/// Writes `value` to the out-pointer `out` when it is not null.
///
/// # Safety
///
/// `out` is null or writable for one `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: not null and writable by the caller's contract.
        unsafe { out.write_unaligned(value) };
    }
}

/// The name for C of a [`DType`].
pub(crate) fn dtype_code(dtype: DType) -> u32 {
    match dtype {
        DType::BF16 => simak_dtype::SIMAK_DTYPE_BF16 as u32,
        DType::F32 => simak_dtype::SIMAK_DTYPE_F32 as u32,
        DType::F16 => simak_dtype::SIMAK_DTYPE_F16 as u32,
        DType::I8 => simak_dtype::SIMAK_DTYPE_I8 as u32,
        DType::I16 => simak_dtype::SIMAK_DTYPE_I16 as u32,
        DType::I32 => simak_dtype::SIMAK_DTYPE_I32 as u32,
    }
}

/// The [`DType`] of a C code.
fn dtype(code: u32, what: &str) -> Result<DType, Failure> {
    Ok(match code {
        1 => DType::BF16,
        3 => DType::F32,
        4 => DType::F16,
        5 => DType::I8,
        6 => DType::I16,
        7 => DType::I32,
        _ => {
            return Err(Failure::invalid_enum(format!(
                "`{what}` dtype code {code} is not one of SIMAK_DTYPE_BF16 (1), \
                 SIMAK_DTYPE_F32 (3), SIMAK_DTYPE_F16 (4), SIMAK_DTYPE_I8 (5), \
                 SIMAK_DTYPE_I16 (6), SIMAK_DTYPE_I32 (7)"
            )));
        }
    })
}

/// A tensor copied out of the caller's struct.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tensor {
    rank: usize,
    extents: [u64; 6],
    strides: Option<[u64; 6]>,
    dtype: DType,
}

impl Tensor {
    /// Reads the caller's tensor `what`: the dtype code, the rank (at most 6; the op's
    /// smallest rank is `min_rank`, for the error) and `rank` strides when given.
    ///
    /// # Safety
    ///
    /// `tensor` is null or readable, and its `strides` null or readable for `rank` values.
    pub(crate) unsafe fn read(
        tensor: *const simak_tensor,
        what: &str,
        min_rank: usize,
    ) -> Result<Tensor, Failure> {
        // SAFETY: the caller's contract.
        let t = unsafe { read(tensor, what) }?;
        let dtype = dtype(t.dtype, what)?;
        let rank = t.rank as usize;
        if rank > MAX_RANK {
            return Err(AdmissionError::Rank {
                rank,
                min: min_rank,
                max: MAX_RANK,
            }
            .into());
        }
        let strides = (!t.strides.is_null()).then(|| {
            let mut strides = [0u64; 6];
            for (axis, slot) in strides.iter_mut().enumerate().take(rank) {
                // SAFETY: `strides` is not null and readable for `rank` values by the
                // caller's contract; `axis < rank`.
                *slot = unsafe { t.strides.wrapping_add(axis).read_unaligned() };
            }
            strides
        });
        Ok(Tensor {
            rank,
            extents: t.extents,
            strides,
            dtype,
        })
    }

    /// The library's run-time-rank spec.
    pub(crate) fn spec(&self) -> DynSpec<'_> {
        let extents = &self.extents[..self.rank];
        match &self.strides {
            Some(strides) => DynSpec::strided(extents, &strides[..self.rank], self.dtype),
            None => DynSpec::contiguous(extents, self.dtype),
        }
    }

    /// The logical extents.
    pub(crate) fn extents(&self) -> &[u64] {
        &self.extents[..self.rank]
    }

    /// The dtype.
    pub(crate) fn dtype(&self) -> DType {
        self.dtype
    }

    /// A tiled port takes no strides: the layout places its bytes (0x205 for the input,
    /// 0x206 for the output).
    pub(crate) fn tiled(self, port: Port) -> Result<Tensor, Failure> {
        match self.strides {
            None => Ok(self),
            Some(_) => Err(Failure::new(
                AdmissionError::StridesRank {
                    port,
                    extents: self.rank,
                    strides: self.rank,
                }
                .code(),
                format!(
                    "the tiled {} takes no strides (its `strides` must be NULL): the \
                     layout places its bytes",
                    match port {
                        Port::Input => "input",
                        Port::Output => "output",
                    }
                ),
            )),
        }
    }
}

/// The library's parameters of the caller's, and whether the exact path is asked for.
pub(crate) fn params(p: &simak_quant_params) -> Result<(Params, bool), Failure> {
    let rounding = Rounding::ALL
        .get(p.rounding as usize)
        .copied()
        .ok_or_else(|| {
            Failure::invalid_enum(format!(
                "rounding code {} is not one of SIMAK_ROUNDING_TOWARD_ZERO (0), \
                 SIMAK_ROUNDING_NEAREST_EVEN (1), SIMAK_ROUNDING_TOWARD_POSITIVE (2), \
                 SIMAK_ROUNDING_TOWARD_NEGATIVE (3)",
                p.rounding
            ))
        })?;
    if p.flags & !SIMAK_PLAN_EXACT != 0 {
        return Err(Failure::invalid_enum(format!(
            "plan flags 0x{:x} have bits other than SIMAK_PLAN_EXACT (0x1)",
            p.flags
        )));
    }
    let params = Params::from_bits(p.multiplier_bits)
        .with_zero_point(p.zero_point)
        .with_rounding(rounding);
    Ok((params, p.flags & SIMAK_PLAN_EXACT != 0))
}

/// The library's role axes of the caller's (-1 absent).
fn role_axes(roles: &[i32; 4]) -> Result<[Option<u8>; 4], Failure> {
    let mut axes = [None; 4];
    for ((slot, &axis), role) in axes.iter_mut().zip(roles).zip(TileAxis::ALL) {
        *slot = match axis {
            -1 => None,
            0..=255 => Some(axis as u8),
            _ => {
                return Err(Failure::new(
                    43,
                    format!(
                        "the {} role's axis {axis} is neither -1 (absent) nor a logical axis",
                        role.name()
                    ),
                ));
            }
        };
    }
    Ok(axes)
}

/// The library's layout of the caller's.
pub(crate) fn layout(l: &simak_mla_tiled) -> Result<MlaTiled, Failure> {
    let axes = role_axes(&l.axes)?;
    let channels = match l.pad_to_16 {
        0 => Channels::Compact,
        1 => Channels::PadTo16,
        other => {
            return Err(Failure::invalid_enum(format!(
                "pad_to_16 is {other}, not 0 (compact) or 1 (padded to 16)"
            )));
        }
    };
    Ok(MlaTiled::new(axes, l.tile, channels))
}

/// The library's layout of the caller's output-side layout.
pub(crate) fn layout_v2(l: &simak_mla_tiled_v2) -> Result<MlaTiled, Failure> {
    let axes = role_axes(&l.axes)?;
    let channels = match l.channels {
        0 => Channels::Compact,
        1 => Channels::PadTo16,
        2 => Channels::CBlock16,
        other => {
            return Err(Failure::invalid_enum(format!(
                "channels code {other} is not one of SIMAK_CHANNELS_COMPACT (0), \
                 SIMAK_CHANNELS_PAD_TO_16 (1), SIMAK_CHANNELS_CBLOCK16 (2)"
            )));
        }
    };
    let tile_align = match l.tile_align {
        16 => TileAlign::Bytes16,
        1 => TileAlign::Bytes1,
        other => {
            return Err(Failure::invalid_enum(format!(
                "tile_align is {other}, not 16 or 1 (bytes)"
            )));
        }
    };
    Ok(MlaTiled::new(axes, l.tile, channels).with_tile_align(tile_align))
}

/// The route name as a C string owned by the plan.
pub(crate) fn c_name(name: &str) -> CString {
    CString::new(name).unwrap_or_default()
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn binding_codes_are_the_library_s() {
        assert_eq!(SIMAK_ERROR_INVALID_ENUM, simak::error::BINDING_INVALID_ENUM);
        assert_eq!(SIMAK_ERROR_INTERNAL, simak::error::BINDING_INTERNAL);
        assert_eq!(
            SIMAK_ERROR_NULL_ARGUMENT,
            simak::error::BINDING_NULL_ARGUMENT
        );
        assert_eq!(SIMAK_ERROR_CAPACITY, simak::error::BINDING_CAPACITY);
        assert_eq!(SIMAK_MAX_RANK as usize, MAX_RANK);
        assert_eq!(
            simak_dtype::SIMAK_DTYPE_F32 as u32,
            DType::F32.wire_code().unwrap()
        );
        assert_eq!(
            simak_dtype::SIMAK_DTYPE_BF16 as u32,
            DType::BF16.wire_code().unwrap()
        );
        assert_eq!(
            simak_dtype::SIMAK_DTYPE_F16 as u32,
            DType::F16.wire_code().unwrap()
        );
    }

    #[test]
    fn output_side_codes_extend_the_old_ones() {
        // Appended dtype codes; the encodings' first codes are `pad_to_16`'s values.
        assert_eq!(dtype_code(DType::I16), 6);
        assert_eq!(dtype_code(DType::I32), 7);
        for code in 1..=7 {
            if code != 2 {
                assert_eq!(dtype_code(dtype(code, "t").unwrap()), code);
            }
        }
        assert_eq!(dtype(8, "t").unwrap_err().code, SIMAK_ERROR_INVALID_ENUM);
        assert_eq!(simak_channels::SIMAK_CHANNELS_COMPACT as u32, 0);
        assert_eq!(simak_channels::SIMAK_CHANNELS_PAD_TO_16 as u32, 1);
        let mut l = simak_mla_tiled_v2_default();
        l.channels = 2;
        l.tile_align = 1;
        let layout = layout_v2(&l).unwrap();
        assert_eq!(layout.channels, Channels::CBlock16);
        assert_eq!(layout.tile_align, TileAlign::Bytes1);
        l.tile_align = 8;
        assert_eq!(layout_v2(&l).unwrap_err().code, SIMAK_ERROR_INVALID_ENUM);
    }

    #[test]
    fn a_panic_becomes_the_internal_code_with_its_message() {
        let mut report = error_report(0, "");
        // SAFETY: `report` is a live, writable simak_error.
        let code = unsafe { guard(&mut report, || panic!("boom")) };
        assert_eq!(code, SIMAK_ERROR_INTERNAL);
        assert_eq!(report.code, SIMAK_ERROR_INTERNAL);
        let text: Vec<u8> = report
            .message
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "internal error (a simak bug, please report it): boom"
        );
        // SAFETY: a null `error` is allowed.
        let code = unsafe { guard(std::ptr::null_mut(), || panic!("{}", 7)) };
        assert_eq!(code, SIMAK_ERROR_INTERNAL);
    }

    #[test]
    fn messages_are_cut_at_a_character_boundary_with_their_nul() {
        let long = "é".repeat(200); // 400 bytes
        let report = error_report(5, &long);
        assert_eq!(report.message[255], 0);
        assert_eq!(report.message[254], 0, "the cut does not split 'é'");
        assert_eq!(report.message[253] as u8, 0xa9);
    }
}
