//! The Preproc descriptor v1 (SPEC §7, §13): entry `simaai_kernels_ev74_preproc_v1`,
//! magic `b"SKPP"`, route 52 (0x34), 368 bytes. The input is a frame (its planes in one
//! buffer, no dtype); the output, the prefix's port, is the logical tensor `[H', W', C]`
//! (rank 3) or `[N, H', W', C]` (rank 4) as FP32 or INT8 (strided) or as INT8 (QuantTess)
//! or BF16 (CastTess) in `MlaTiled`. The per-channel tables are the firmware's business:
//! only the normalization's parameters travel.
//!
//! | offset | field |
//! | --- | --- |
//! | 0..160 | the prefix ([`crate::wire::prefix`]) with the output as its port: dtype code at 8 (BF16 1, FP32 3, INT8 5), rank 3 or 4, flags at 16 (bit 0 `bgr`, bit 1 `pad16`: a tiled output's PadTo16), the frame's accessed span at 48, the output's span at 56 (accessed when strided, the layout's capacity when tiled), the output's byte strides at 112 (zero for a tiled output) |
//! | 160 | `[i8; 4]` axis of D, H, W, C (−1 absent) · 164 u32 pixel format (RGB8 1, BGR8 2, RGBX8 3, BGRX8 4, GRAY8 5, NV12 6, I420 7) |
//! | 168 | `[u32; 4]` tile extents D, H, W, C |
//! | 184 | u64 output bytes per outer index |
//! | 192 | `[u32; 4]` tile counts D, H, W, C |
//! | 208 | u32 tile alignment = 16 · 212 u32 output kind (FP32 1, INT8 2, QuantTess 3, CastTess 4) |
//! | 216, 224 | u64 frame height, width in pixels |
//! | 232, 256 | `[u64; 3]` plane byte offsets, plane row strides (Y or the interleaved plane; UV or U; V) |
//! | 280 | u64 frame stride in bytes (0 unless two or more frames) |
//! | 288 | `[u64; 4]` border top, bottom, left, right in pixels |
//! | 320 | `[u8; 4]` raw pad value per output channel (byte 3 zero) · 324 u32 divisor bits |
//! | 328, 340 | `[u32; 3]` mean bits, std bits per output channel |
//! | 352 | u32 multiplier bits · 356 i32 zero point · 360 u32 rounding (INT8 outputs; zero otherwise) |
//! | 364 | u32 reserved = 0 |
//!
//! The tiled fields (160..212 but the pixel format) are zero for a strided output, and the
//! slots past the output's channels, past the format's planes and the frame stride of a
//! single frame are zero, so that every valid descriptor is the one encoding of one plan.
//!
//! [`PreprocRepr::parse`] rebuilds the host request from the fields and runs the host's
//! admission ([`crate::ops::preproc::check_inference`]), so the device accepts exactly the
//! plans admission produces, then compares every derived field; [`PreprocRepr::emit`]
//! cannot fail.
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use static_assertions::const_assert_eq;
use zerocopy::little_endian::{I32, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::arith::quant::{Multiplier, Rounding};
use crate::dtype::DType;
use crate::error::Port;
use crate::layout::{Channels, MlaTiled};
use crate::ops::preproc::{
    self, Border, Format as PixelFormat, Frame, Normalize, Output, Plan, PlanOutput, Plane, Request,
};
use crate::ops::quant::Params as QuantParams;
use crate::tensor::MAX_RANK;
use crate::wire::casttess::{
    ABSENT_AXIS, TiledTail, check_tile_counts, check_tile_params, push_tiled_tail, store_u32s,
    tile_counts,
};
use crate::wire::fields::{self, FieldValue, Fields};
use crate::wire::prefix::{
    self, FlagName, FlagNames, Format, PortAlign, PortFormat, PortLayout, Prefix, PrefixRepr,
    RawDescriptor, SpanKind,
};
use crate::wire::rules::{DecodeCode, DecodeError, axis_i8, axis_u8};

/// Size of the Preproc v1 descriptor in bytes.
pub const SIZE: usize = 368;
/// The magic word.
pub const MAGIC: [u8; 4] = *b"SKPP";
/// The tile alignment of a tiled output in bytes (SPEC §5: input-side layouts).
pub const TILE_ALIGNMENT: u32 = 16;

/// The output a descriptor asks for (offset 212), with its wire code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OutputKind {
    /// FP32, strided (code 1).
    F32,
    /// INT8 by Quant, strided (code 2).
    I8,
    /// INT8 by QuantTess, `MlaTiled` (code 3).
    QuantTess,
    /// BF16 by CastTess, `MlaTiled` (code 4).
    CastTess,
}

impl OutputKind {
    /// The wire code: 1..=4.
    pub const fn code(self) -> u32 {
        match self {
            OutputKind::F32 => 1,
            OutputKind::I8 => 2,
            OutputKind::QuantTess => 3,
            OutputKind::CastTess => 4,
        }
    }

    /// The kind of wire code `code`, if any.
    pub const fn from_code(code: u32) -> Option<OutputKind> {
        match code {
            1 => Some(OutputKind::F32),
            2 => Some(OutputKind::I8),
            3 => Some(OutputKind::QuantTess),
            4 => Some(OutputKind::CastTess),
            _ => None,
        }
    }

    /// The output's dtype (offset 8).
    pub const fn dtype(self) -> DType {
        match self {
            OutputKind::F32 => DType::F32,
            OutputKind::I8 | OutputKind::QuantTess => DType::I8,
            OutputKind::CastTess => DType::BF16,
        }
    }

    /// Whether the output is `MlaTiled`.
    pub const fn is_tiled(self) -> bool {
        matches!(self, OutputKind::QuantTess | OutputKind::CastTess)
    }

    /// Whether the output is INT8 (the words at 352..364 hold Quant parameters).
    pub const fn has_quant(self) -> bool {
        matches!(self, OutputKind::I8 | OutputKind::QuantTess)
    }

    /// The kind of an admitted plan output.
    pub const fn of(output: &PlanOutput) -> OutputKind {
        match output {
            PlanOutput::F32(_) => OutputKind::F32,
            PlanOutput::I8(..) => OutputKind::I8,
            PlanOutput::QuantTess(..) => OutputKind::QuantTess,
            PlanOutput::CastTess(_) => OutputKind::CastTess,
        }
    }
}

/// The wire code of a pixel format (offset 164): 1..=7 in [`PixelFormat::ALL`] order.
pub const fn format_code(format: PixelFormat) -> u32 {
    match format {
        PixelFormat::RGB8 => 1,
        PixelFormat::BGR8 => 2,
        PixelFormat::RGBX8 => 3,
        PixelFormat::BGRX8 => 4,
        PixelFormat::GRAY8 => 5,
        PixelFormat::NV12 => 6,
        PixelFormat::I420 => 7,
    }
}

/// The pixel format of wire code `code`, if any.
pub const fn format_from_code(code: u32) -> Option<PixelFormat> {
    match code {
        1 => Some(PixelFormat::RGB8),
        2 => Some(PixelFormat::BGR8),
        3 => Some(PixelFormat::RGBX8),
        4 => Some(PixelFormat::BGRX8),
        5 => Some(PixelFormat::GRAY8),
        6 => Some(PixelFormat::NV12),
        7 => Some(PixelFormat::I420),
        _ => None,
    }
}

/// The Preproc v1 flag word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct PreprocFlags(u32);

bitflags::bitflags! {
    impl PreprocFlags: u32 {
        /// Bit 0, `bgr`: output channels B, G, R (three-channel formats only).
        const BGR = 1 << 0;
        /// Bit 1, `pad16`: a tiled output's channels padded to 16 (PadTo16).
        const PAD_TO_16 = 1 << 1;
    }
}

/// The descriptor format of Preproc v1: the output is the prefix's port. Its layout is
/// strided for FP32 and INT8 outputs and tiled for QuantTess and CastTess (the output kind
/// at 212 says which; this format names the strided case, and [`PreprocRepr::parse`]
/// checks a tiled output's span and 16-byte alignment itself). The frame has no dtype and
/// any byte alignment.
pub const FORMAT: Format = Format {
    magic: MAGIC,
    // SIZE is 368 (statically asserted), which fits u16.
    size: SIZE as u16,
    flag_mask: PreprocFlags::all().bits(),
    flag_names: FlagNames {
        bits: &[
            FlagName {
                bit: PreprocFlags::BGR.bits(),
                set: "bgr",
                clear: Some("rgb"),
            },
            FlagName {
                bit: PreprocFlags::PAD_TO_16.bits(),
                set: "pad16",
                clear: None,
            },
        ],
        none: "rgb",
    },
    input: PortFormat {
        layout: PortLayout::Strided,
        dtypes: &[],
        span: SpanKind::Accessed,
        align: PortAlign::Bytes(1),
    },
    output: PortFormat {
        layout: PortLayout::Strided,
        dtypes: &[DType::BF16, DType::F32, DType::I8],
        span: SpanKind::Accessed,
        align: PortAlign::Element,
    },
    prefix_port: Port::Output,
};

/// The codes a Preproc v1 descriptor can be rejected with (`docs/errors.md`), in numeric
/// order.
pub const CODES: [DecodeCode; 58] = [
    DecodeCode::Length,
    DecodeCode::Magic,
    DecodeCode::Version,
    DecodeCode::ByteLength,
    DecodeCode::DType,
    DecodeCode::Rank,
    DecodeCode::UnknownFlags,
    DecodeCode::Reserved20,
    DecodeCode::UnusedExtent,
    DecodeCode::UnusedOutputStride,
    DecodeCode::MultiplierNotFinite,
    DecodeCode::MultiplierNotPositive,
    DecodeCode::ZeroPoint,
    DecodeCode::Rounding,
    DecodeCode::ElementsOverflow,
    DecodeCode::ElementCount,
    DecodeCode::OutputZeroStride,
    DecodeCode::OutputSingletonStride,
    DecodeCode::InputSpanOverflow,
    DecodeCode::OutputSpanOverflow,
    DecodeCode::InputSpan,
    DecodeCode::OutputSpan,
    DecodeCode::OutputOverlap,
    DecodeCode::InputAddress,
    DecodeCode::OutputAddress,
    DecodeCode::InputRange,
    DecodeCode::OutputRange,
    DecodeCode::PortsOverlap,
    DecodeCode::InputUnbound,
    DecodeCode::OutputUnbound,
    DecodeCode::TileAlign,
    DecodeCode::AxisOutOfRange,
    DecodeCode::AxisRepeated,
    DecodeCode::AbsentTile,
    DecodeCode::AbsentTileCount,
    DecodeCode::TileExtent,
    DecodeCode::TileCount,
    DecodeCode::BytesPerOuter,
    DecodeCode::OutputMisaligned,
    DecodeCode::OutputStrideNotMultiple,
    DecodeCode::PreprocRank,
    DecodeCode::Reserved364,
    DecodeCode::PixelFormat,
    DecodeCode::OutputKind,
    DecodeCode::UnusedTiledFields,
    DecodeCode::UnusedQuantParams,
    DecodeCode::UnusedChannel,
    DecodeCode::UnusedPlane,
    DecodeCode::TiledOutputStride,
    DecodeCode::OutputExtents,
    DecodeCode::OddFrameSize,
    DecodeCode::RowStride,
    DecodeCode::PlaneOverlap,
    DecodeCode::FrameStride,
    DecodeCode::NormalizationNotFinite,
    DecodeCode::DivisorNotPositive,
    DecodeCode::StdZero,
    DecodeCode::UnusedFrameStride,
];

/// Byte offsets of every field (SPEC §7), pinned against the struct below.
pub mod field {
    pub use crate::wire::prefix::field::*;
    /// `[i8; 4]` logical axis of D, H, W, C (−1 absent).
    pub const AXES: usize = 160;
    /// `u32` pixel format code.
    pub const PIXEL_FORMAT: usize = 164;
    /// `[u32; 4]` tile extents of D, H, W, C.
    pub const TILE: usize = 168;
    /// `u64` output bytes per outer index.
    pub const BYTES_PER_OUTER: usize = 184;
    /// `[u32; 4]` tile counts of D, H, W, C.
    pub const TILE_COUNTS: usize = 192;
    /// `u32` tile alignment in bytes.
    pub const TILE_ALIGN: usize = 208;
    /// `u32` output kind code.
    pub const OUTPUT_KIND: usize = 212;
    /// `u64` frame height in pixels.
    pub const HEIGHT: usize = 216;
    /// `u64` frame width in pixels.
    pub const WIDTH: usize = 224;
    /// `[u64; 3]` plane byte offsets.
    pub const PLANE_OFFSETS: usize = 232;
    /// `[u64; 3]` plane row strides in bytes.
    pub const ROW_STRIDES: usize = 256;
    /// `u64` frame stride in bytes.
    pub const FRAME_STRIDE: usize = 280;
    /// `[u64; 4]` border top, bottom, left, right in pixels.
    pub const BORDER: usize = 288;
    /// `[u8; 4]` raw pad value per output channel.
    pub const PAD_VALUE: usize = 320;
    /// `u32` divisor binary32 bits.
    pub const DIVISOR: usize = 324;
    /// `[u32; 3]` mean binary32 bits per output channel.
    pub const MEAN: usize = 328;
    /// `[u32; 3]` std binary32 bits per output channel.
    pub const STD: usize = 340;
    /// `u32` multiplier binary32 bits (INT8 outputs).
    pub const MULTIPLIER: usize = 352;
    /// `i32` zero point (INT8 outputs).
    pub const ZERO_POINT: usize = 356;
    /// `u32` rounding code (INT8 outputs).
    pub const ROUNDING: usize = 360;
    /// `u32` reserved word.
    pub const RESERVED_364: usize = 364;
}

/// The raw Preproc v1 descriptor: 368 little-endian bytes, alignment 1, no padding. Fields
/// hold whatever the bytes say; nothing is validated here (see [`PreprocRepr::parse`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct PreprocDescriptorV1 {
    /// The shared prefix (bytes 0..160), the output as its port.
    pub prefix: Prefix,
    /// Logical axis playing D, H, W, C; −1 when absent (tiled outputs; zero otherwise).
    pub axes: [i8; 4],
    /// Pixel format code.
    pub pixel_format: U32,
    /// Tile extents of D, H, W, C (tiled outputs).
    pub tile: [U32; 4],
    /// Output bytes per outer index (tiled outputs).
    pub bytes_per_outer: U64,
    /// Tiles along D, H, W, C (tiled outputs).
    pub tile_counts: [U32; 4],
    /// Tile alignment in bytes, 16 (tiled outputs).
    pub tile_align: U32,
    /// Output kind code.
    pub output_kind: U32,
    /// Frame height in pixels.
    pub height: U64,
    /// Frame width in pixels.
    pub width: U64,
    /// Byte offset of each plane from the frame's start.
    pub plane_offsets: [U64; 3],
    /// Row stride of each plane in bytes.
    pub row_strides: [U64; 3],
    /// Bytes from one frame of a batch to the next (0 for a single frame).
    pub frame_stride: U64,
    /// Border top, bottom, left, right in pixels.
    pub border: [U64; 4],
    /// Raw 8-bit pad value per output channel; byte 3 zero.
    pub pad_value: [u8; 4],
    /// Divisor binary32 bits.
    pub divisor: U32,
    /// Mean binary32 bits per output channel.
    pub mean: [U32; 3],
    /// Std binary32 bits per output channel.
    pub std: [U32; 3],
    /// Multiplier binary32 bits (INT8 outputs; else 0).
    pub multiplier: U32,
    /// Zero point (INT8 outputs; else 0).
    pub zero_point: I32,
    /// Rounding code (INT8 outputs; else 0).
    pub rounding: U32,
    /// Reserved, 0.
    pub reserved_364: U32,
}

const_assert_eq!(core::mem::size_of::<PreprocDescriptorV1>(), SIZE);
const_assert_eq!(core::mem::align_of::<PreprocDescriptorV1>(), 1);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, axes),
    field::AXES
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, pixel_format),
    field::PIXEL_FORMAT
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, tile),
    field::TILE
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, bytes_per_outer),
    field::BYTES_PER_OUTER
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, tile_counts),
    field::TILE_COUNTS
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, tile_align),
    field::TILE_ALIGN
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, output_kind),
    field::OUTPUT_KIND
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, height),
    field::HEIGHT
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, width),
    field::WIDTH
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, plane_offsets),
    field::PLANE_OFFSETS
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, row_strides),
    field::ROW_STRIDES
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, frame_stride),
    field::FRAME_STRIDE
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, border),
    field::BORDER
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, pad_value),
    field::PAD_VALUE
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, divisor),
    field::DIVISOR
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, mean),
    field::MEAN
);
const_assert_eq!(core::mem::offset_of!(PreprocDescriptorV1, std), field::STD);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, multiplier),
    field::MULTIPLIER
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, zero_point),
    field::ZERO_POINT
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, rounding),
    field::ROUNDING
);
const_assert_eq!(
    core::mem::offset_of!(PreprocDescriptorV1, reserved_364),
    field::RESERVED_364
);

/// A validated Preproc v1 descriptor: the validated prefix (its `dtype` the output's, its
/// `input_span` the frame's accessed span, its `input_strides` the **output's** byte
/// strides, zero for a tiled output) and the host plan the fields describe, as the host's
/// admission built it.
///
/// [`PreprocRepr::emit`] writes whatever it holds; [`PreprocRepr::parse`] is the only way
/// to know a descriptor is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreprocRepr {
    /// The shared fields, the output as the prefix port.
    pub prefix: PrefixRepr,
    /// The admitted plan: frame, normalization, border, output.
    pub plan: Plan,
}

/// Reads `N` little-endian `u64` slots.
fn load<const N: usize>(raw: &[U64; N]) -> [u64; N] {
    let mut out = [0u64; N];
    for (o, r) in out.iter_mut().zip(raw.iter()) {
        *o = r.get();
    }
    out
}

/// Writes `N` little-endian `u64` slots.
fn store<const N: usize>(values: &[u64; N]) -> [U64; N] {
    let mut out = [U64::ZERO; N];
    for (o, v) in out.iter_mut().zip(values.iter()) {
        *o = U64::new(*v);
    }
    out
}

/// `base + size · index` as a field offset (offsets are below [`SIZE`]).
fn at(base: usize, size: usize, index: usize) -> u16 {
    u16::try_from(base.saturating_add(size.saturating_mul(index))).unwrap_or(u16::MAX)
}

impl PreprocDescriptorV1 {
    /// Size in bytes.
    pub const SIZE: usize = SIZE;

    /// Views `bytes` as a descriptor without any semantic check.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Length`] unless `bytes` is exactly [`SIZE`] bytes long.
    pub fn new_checked(bytes: &[u8]) -> Result<&Self, DecodeError> {
        Self::ref_from_bytes(bytes).map_err(|_| DecodeError::Length {
            found: bytes.len(),
            expected: SIZE,
        })
    }

    /// Every field with its byte offset, in wire order ([`FIELD_COUNT`] entries; array
    /// slots separately), for listings such as `simak packet decode`. Values are shown raw.
    pub fn fields(&self) -> Fields {
        let mut out = Fields::new();
        self.prefix.fields_for(&mut out, Port::Output);
        push_tiled_tail(
            &mut out,
            TiledTail {
                axes: &self.axes,
                word_164: ("pixel_format", FieldValue::U32(self.pixel_format.get())),
                tile: &self.tile,
                bytes_per_outer: self.bytes_per_outer.get(),
                tile_counts: &self.tile_counts,
                tile_align: self.tile_align.get(),
                word_212: ("output_kind", FieldValue::U32(self.output_kind.get())),
            },
        );
        let u64s: [(usize, &'static str, u64); 2] = [
            (field::HEIGHT, "height", self.height.get()),
            (field::WIDTH, "width", self.width.get()),
        ];
        for (offset, name, v) in u64s {
            fields::push(&mut out, offset, name, FieldValue::U64(v));
        }
        for (base, names, slots) in [
            (
                field::PLANE_OFFSETS,
                ["plane_offsets[0]", "plane_offsets[1]", "plane_offsets[2]"],
                &self.plane_offsets,
            ),
            (
                field::ROW_STRIDES,
                ["row_strides[0]", "row_strides[1]", "row_strides[2]"],
                &self.row_strides,
            ),
        ] {
            for (k, (name, v)) in names.iter().zip(slots.iter()).enumerate() {
                fields::push(
                    &mut out,
                    usize::from(at(base, 8, k)),
                    name,
                    FieldValue::U64(v.get()),
                );
            }
        }
        fields::push(
            &mut out,
            field::FRAME_STRIDE,
            "frame_stride",
            FieldValue::U64(self.frame_stride.get()),
        );
        for (k, (name, v)) in ["border_top", "border_bottom", "border_left", "border_right"]
            .iter()
            .zip(self.border.iter())
            .enumerate()
        {
            fields::push(
                &mut out,
                usize::from(at(field::BORDER, 8, k)),
                name,
                FieldValue::U64(v.get()),
            );
        }
        for (k, (name, v)) in [
            "pad_value[0]",
            "pad_value[1]",
            "pad_value[2]",
            "pad_value[3]",
        ]
        .iter()
        .zip(self.pad_value.iter())
        .enumerate()
        {
            fields::push(
                &mut out,
                usize::from(at(field::PAD_VALUE, 1, k)),
                name,
                FieldValue::U32(u32::from(*v)),
            );
        }
        fields::push(
            &mut out,
            field::DIVISOR,
            "divisor",
            FieldValue::Hex32(self.divisor.get()),
        );
        for (base, names, slots) in [
            (field::MEAN, ["mean[0]", "mean[1]", "mean[2]"], &self.mean),
            (field::STD, ["std[0]", "std[1]", "std[2]"], &self.std),
        ] {
            for (k, (name, v)) in names.iter().zip(slots.iter()).enumerate() {
                fields::push(
                    &mut out,
                    usize::from(at(base, 4, k)),
                    name,
                    FieldValue::Hex32(v.get()),
                );
            }
        }
        fields::push(
            &mut out,
            field::MULTIPLIER,
            "multiplier",
            FieldValue::Hex32(self.multiplier.get()),
        );
        fields::push(
            &mut out,
            field::ZERO_POINT,
            "zero_point",
            FieldValue::I32(self.zero_point.get()),
        );
        fields::push(
            &mut out,
            field::ROUNDING,
            "rounding",
            FieldValue::U32(self.rounding.get()),
        );
        fields::push(
            &mut out,
            field::RESERVED_364,
            "reserved_364",
            FieldValue::Hex32(self.reserved_364.get()),
        );
        out
    }

    /// The header words of the tail: the pixel format and the output kind (which must be a
    /// kind of the output dtype).
    fn header(&self, dtype: DType) -> Result<(PixelFormat, OutputKind), DecodeError> {
        let code = self.pixel_format.get();
        let format = format_from_code(code).ok_or(DecodeError::PixelFormat { code })?;
        let code = self.output_kind.get();
        let kind = OutputKind::from_code(code)
            .filter(|k| k.dtype() == dtype)
            .ok_or(DecodeError::OutputKind { code, dtype })?;
        Ok((format, kind))
    }

    /// A strided output's tiled fields and `pad16` flag are zero.
    fn check_untiled(&self, flags: PreprocFlags) -> Result<(), DecodeError> {
        if flags.contains(PreprocFlags::PAD_TO_16) {
            return Err(DecodeError::UnusedTiledFields {
                offset: field::FLAGS as u16,
            });
        }
        let bytes = self.as_bytes();
        let tiled = bytes.get(field::AXES..field::OUTPUT_KIND).unwrap_or(&[]);
        for (k, b) in tiled.iter().enumerate() {
            let offset = field::AXES.saturating_add(k);
            let is_format = (field::PIXEL_FORMAT..field::TILE).contains(&offset);
            if *b != 0 && !is_format {
                // The offset of the field holding the byte.
                let field_at = match offset {
                    o if o < field::PIXEL_FORMAT => field::AXES.saturating_add(o & 3),
                    o if o < field::BYTES_PER_OUTER => o & !3,
                    o if o < field::TILE_COUNTS => field::BYTES_PER_OUTER,
                    o => o & !3,
                };
                return Err(DecodeError::UnusedTiledFields {
                    offset: u16::try_from(field_at).unwrap_or(u16::MAX),
                });
            }
        }
        Ok(())
    }

    /// The Quant parameters of an INT8 output, or the zero words of any other.
    fn quant_params(&self, kind: OutputKind) -> Result<Option<QuantParams>, DecodeError> {
        let words = [
            (field::MULTIPLIER, self.multiplier.get()),
            // The zero point's bits: any nonzero value is refused.
            (field::ZERO_POINT, self.zero_point.get() as u32),
            (field::ROUNDING, self.rounding.get()),
        ];
        if !kind.has_quant() {
            return match words.iter().find(|(_, w)| *w != 0) {
                Some((offset, _)) => Err(DecodeError::UnusedQuantParams {
                    offset: u16::try_from(*offset).unwrap_or(u16::MAX),
                }),
                None => Ok(None),
            };
        }
        let multiplier = Multiplier::from_bits(self.multiplier.get())?;
        let zero_point = self.zero_point.get();
        if !(-128..=127).contains(&zero_point) {
            return Err(DecodeError::ZeroPoint { value: zero_point });
        }
        let code = self.rounding.get();
        let rounding = Rounding::try_from(code).map_err(|_| DecodeError::Rounding { code })?;
        Ok(Some(
            QuantParams::from_bits(multiplier.bits())
                .with_zero_point(zero_point)
                .with_rounding(rounding),
        ))
    }

    /// Slots past the output's `channels` (mean, std, pad value and its byte 3) are zero.
    fn check_channels(&self, channels: usize) -> Result<(), DecodeError> {
        for (base, slots) in [(field::MEAN, &self.mean), (field::STD, &self.std)] {
            for (k, v) in slots.iter().enumerate().skip(channels) {
                if v.get() != 0 {
                    return Err(DecodeError::UnusedChannel {
                        offset: at(base, 4, k),
                    });
                }
            }
        }
        for (k, v) in self.pad_value.iter().enumerate().skip(channels) {
            if *v != 0 {
                return Err(DecodeError::UnusedChannel {
                    offset: at(field::PAD_VALUE, 1, k),
                });
            }
        }
        Ok(())
    }

    /// Plane slots past the format's planes are zero.
    fn check_planes(&self, format: PixelFormat) -> Result<(), DecodeError> {
        for (p, (o, s)) in self
            .plane_offsets
            .iter()
            .zip(self.row_strides.iter())
            .enumerate()
            .skip(format.planes())
        {
            if o.get() != 0 || s.get() != 0 {
                return Err(DecodeError::UnusedPlane {
                    plane: u8::try_from(p).unwrap_or(u8::MAX),
                });
            }
        }
        Ok(())
    }
}

/// The output extents a frame and border give: `[N,] top + H + bottom, left + W + right,
/// C` (saturating; admission reports an overflow).
fn frame_extents(raw: &PreprocDescriptorV1, rank: u8, n: u64, channels: u64) -> [u64; 4] {
    let b = load(&raw.border);
    let [top, bottom, left, right] = b;
    let h = top.saturating_add(raw.height.get()).saturating_add(bottom);
    let w = left.saturating_add(raw.width.get()).saturating_add(right);
    if rank == 4 {
        [n, h, w, channels]
    } else {
        [h, w, channels, 0]
    }
}

impl PreprocRepr {
    /// Checks every rule of SPEC §7 and §13 on a raw descriptor, recomputing each derived
    /// field, in the order of the shared parse ([`crate::wire::prefix`]):
    ///
    /// 1. header: the prefix's (magic, version, byte length, the output dtype, rank
    ///    1..=6, flag bits, the reserved words at 20 and 364), the rank 3 or 4, the pixel
    ///    format, the output kind;
    /// 2. unused extent and stride slots past the rank;
    /// 3. the tail's parameters: a tiled output's tile alignment and axis map (a strided
    ///    output's tiled fields zero); the Quant parameters of an INT8 output (else zero);
    ///    channel slots past the output's channels zero, the `bgr` flag clear for GRAY8,
    ///    plane slots past the format's planes zero; a single frame's frame stride zero;
    ///    the output strides: zero on extent-0/1 axes, zero everywhere for a tiled output;
    /// 4. the element count;
    /// 5. the output extents against the frame and border, then the host's admission of
    ///    the rebuilt request (frame rules, normalization, the output's strides or layout),
    ///    then a tiled output's tile counts and bytes per outer index, the output's span
    ///    and the frame's accessed span;
    /// 6. the address slots (the frame at any byte, a strided output at its element size,
    ///    a tiled output at 16 bytes).
    ///
    /// # Errors
    ///
    /// The first failing rule, as a [`DecodeError`].
    pub fn parse(raw: &PreprocDescriptorV1) -> Result<PreprocRepr, DecodeError> {
        let p = &raw.prefix;
        let (dtype, rank, flags) =
            prefix::check_header(p, raw.as_bytes(), &FORMAT, &[field::RESERVED_364 as u16])?;
        if rank != 3 && rank != 4 {
            return Err(DecodeError::PreprocRank { rank });
        }
        let (format, kind) = raw.header(dtype)?;
        let flags = PreprocFlags::from_bits_retain(flags);

        let extents = prefix::load_u64s(&p.extents);
        let strides = prefix::load_u64s(&p.input_strides);
        let rank_usize = usize::from(rank);
        for (axis, (e, s)) in extents
            .iter()
            .zip(strides.iter())
            .enumerate()
            .skip(rank_usize)
        {
            if *e != 0 {
                return Err(DecodeError::UnusedExtent {
                    axis: axis_u8(axis),
                    value: *e,
                });
            }
            if *s != 0 {
                return Err(DecodeError::UnusedStride {
                    port: Port::Output,
                    axis: axis_u8(axis),
                    value: *s,
                });
            }
        }

        let tiles = if kind.is_tiled() {
            match raw.tile_align.get() {
                TILE_ALIGNMENT => {}
                value => return Err(DecodeError::TileAlign { value }),
            }
            Some(check_tile_params(
                &raw.axes,
                &raw.tile,
                &raw.tile_counts,
                rank,
            )?)
        } else {
            raw.check_untiled(flags)?;
            None
        };
        let quant = raw.quant_params(kind)?;
        let channels = format.channels();
        raw.check_channels(channels)?;
        if channels == 1 && flags.contains(PreprocFlags::BGR) {
            return Err(DecodeError::UnusedChannel {
                offset: field::FLAGS as u16,
            });
        }
        raw.check_planes(format)?;
        let frames = if rank == 4 {
            extents.first().copied().unwrap_or(0)
        } else {
            1
        };
        if frames < 2 && raw.frame_stride.get() != 0 {
            return Err(DecodeError::UnusedFrameStride {
                stride: raw.frame_stride.get(),
            });
        }
        if kind.is_tiled() {
            for (axis, s) in strides.iter().enumerate().take(rank_usize) {
                if *s != 0 {
                    return Err(DecodeError::TiledOutputStride {
                        axis: axis_u8(axis),
                        stride: *s,
                    });
                }
            }
        } else {
            prefix::check_singletons(rank_usize, &extents, &strides, Port::Output)?;
        }

        let active = extents.get(..rank_usize).unwrap_or(&[]);
        let expected_elements = if active.contains(&0) {
            0
        } else {
            active
                .iter()
                .try_fold(1u64, |acc, &e| acc.checked_mul(e))
                .ok_or(DecodeError::ElementsOverflow)?
        };
        if p.elements.get() != expected_elements {
            return Err(DecodeError::ElementCount {
                expected: expected_elements,
                found: p.elements.get(),
            });
        }

        let want = frame_extents(raw, rank, frames, channels as u64);
        for (axis, (e, w)) in active.iter().zip(want.iter()).enumerate() {
            if e != w {
                return Err(DecodeError::OutputExtents {
                    axis: axis_u8(axis),
                    expected: *w,
                    found: *e,
                });
            }
        }

        let offsets = load(&raw.plane_offsets);
        let row_strides = load(&raw.row_strides);
        let mut planes = [Plane::default(); 3];
        for (pl, (o, s)) in planes
            .iter_mut()
            .zip(offsets.iter().zip(row_strides.iter()))
        {
            *pl = Plane {
                offset: *o,
                row_stride: *s,
            };
        }
        let [top, bottom, left, right] = load(&raw.border);
        let mean = raw.mean.map(|v| f32::from_bits(v.get()));
        let std = raw.std.map(|v| f32::from_bits(v.get()));
        let pad = raw.pad_value;
        let c = channels.min(3);
        let layout = |channels| {
            tiles
                .as_ref()
                .map(|t| MlaTiled::new(t.axes, t.tile, channels))
        };
        let channels_enc = if flags.contains(PreprocFlags::PAD_TO_16) {
            Channels::PadTo16
        } else {
            Channels::Compact
        };
        let quant = quant.unwrap_or(QuantParams::from_bits(0));
        let strides_active = strides.get(..rank_usize);
        let output = match (kind, layout(channels_enc)) {
            (OutputKind::F32, _) => Output::F32 {
                strides: strides_active,
            },
            (OutputKind::I8, _) => Output::I8 {
                strides: strides_active,
                params: quant,
            },
            (OutputKind::QuantTess, Some(layout)) => Output::QuantTess {
                layout,
                params: quant,
            },
            (OutputKind::CastTess, Some(layout)) => Output::CastTess { layout },
            // A tiled kind always has its tiles (checked above).
            (OutputKind::QuantTess | OutputKind::CastTess, None) => {
                return Err(DecodeError::Inadmissible { code: 0 });
            }
        };
        let request = Request {
            frame: Frame {
                format,
                height: raw.height.get(),
                width: raw.width.get(),
                planes,
                batch: (rank == 4).then_some(frames),
                frame_stride: raw.frame_stride.get(),
            },
            normalize: Normalize {
                divisor: f32::from_bits(raw.divisor.get()),
                mean: mean.get(..c).unwrap_or(&[]),
                std: std.get(..c).unwrap_or(&[]),
            },
            bgr: flags.contains(PreprocFlags::BGR),
            border: Border {
                top,
                bottom,
                left,
                right,
            },
            pad_value: pad.get(..c).unwrap_or(&[]),
            output,
        };
        let plan = preproc::check_inference(&request)?;
        if let (Some(t), PlanOutput::QuantTess(tiled, _) | PlanOutput::CastTess(tiled)) =
            (&tiles, plan.output())
        {
            check_tile_counts(tiled, t, raw.bytes_per_outer.get())?;
        }
        prefix::check_span(Port::Output, plan.output_span(), p.output_span.get())?;
        prefix::check_span(Port::Input, plan.input_span(), p.input_span.get())?;

        let prefix_repr = PrefixRepr {
            dtype,
            rank,
            input_address: 0,
            output_address: 0,
            elements: expected_elements,
            input_span: plan.input_span(),
            output_span: plan.output_span(),
            extents,
            input_strides: strides,
        };
        let (input_address, output_address) =
            prefix::check_addresses(p, &prefix_repr, 1, output_align(&plan))?;
        Ok(PreprocRepr {
            prefix: PrefixRepr {
                input_address,
                output_address,
                ..prefix_repr
            },
            plan,
        })
    }

    /// Casts `bytes` (exactly [`SIZE`] long) as a descriptor and parses them.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Length`] when `bytes` is not [`SIZE`] bytes long, else as
    /// [`PreprocRepr::parse`].
    pub fn parse_bytes(bytes: &[u8]) -> Result<PreprocRepr, DecodeError> {
        PreprocRepr::parse(PreprocDescriptorV1::new_checked(bytes)?)
    }

    /// Writes this representation into a raw descriptor (every byte is written).
    pub fn emit(&self, raw: &mut PreprocDescriptorV1) {
        let plan = &self.plan;
        let frame = plan.frame();
        let format = frame.format;
        let channels = plan.channels().min(3);
        let kind = OutputKind::of(plan.output());
        let mut flags = PreprocFlags::empty();
        flags.set(PreprocFlags::BGR, plan.bgr());
        let mut axes = [0i8; 4];
        let mut tile = [0u32; 4];
        let mut counts = [0u32; 4];
        let mut bytes_per_outer = 0;
        let mut tile_align = 0;
        if let PlanOutput::QuantTess(tiled, _) | PlanOutput::CastTess(tiled) = plan.output() {
            let layout = tiled.layout();
            flags.set(
                PreprocFlags::PAD_TO_16,
                layout.channels == Channels::PadTo16,
            );
            axes = [ABSENT_AXIS; 4];
            for (w, a) in axes.iter_mut().zip(layout.axes.iter()) {
                if let Some(a) = a {
                    *w = axis_i8(*a);
                }
            }
            tile = layout.tile;
            for (o, c) in counts.iter_mut().zip(tile_counts(tiled)) {
                *o = c.and_then(|c| u32::try_from(c).ok()).unwrap_or(u32::MAX);
            }
            bytes_per_outer = tiled.bytes_per_outer();
            tile_align = TILE_ALIGNMENT;
        }
        let quant = match plan.output() {
            PlanOutput::I8(_, q) | PlanOutput::QuantTess(_, q) => Some(q.params()),
            PlanOutput::F32(_) | PlanOutput::CastTess(_) => None,
        };
        let (divisor, mean, std) = plan.normalization_bits();
        let mut pad = [0u8; 4];
        let mut mean_w = [U32::ZERO; 3];
        let mut std_w = [U32::ZERO; 3];
        for c in 0..channels {
            if let (Some(p), Some(m), Some(s), Some(pv), Some(mv), Some(sv)) = (
                pad.get_mut(c),
                mean_w.get_mut(c),
                std_w.get_mut(c),
                plan.pad_value().get(c),
                mean.get(c),
                std.get(c),
            ) {
                *p = *pv;
                *m = U32::new(*mv);
                *s = U32::new(*sv);
            }
        }
        let b = plan.border();
        *raw = PreprocDescriptorV1 {
            prefix: self.prefix.emit(&FORMAT, flags.bits()),
            axes,
            pixel_format: U32::new(format_code(format)),
            tile: store_u32s(&tile),
            bytes_per_outer: U64::new(bytes_per_outer),
            tile_counts: store_u32s(&counts),
            tile_align: U32::new(tile_align),
            output_kind: U32::new(kind.code()),
            height: U64::new(frame.height),
            width: U64::new(frame.width),
            plane_offsets: store(&frame.planes.map(|p| p.offset)),
            row_strides: store(&frame.planes.map(|p| p.row_stride)),
            frame_stride: U64::new(frame.frame_stride),
            border: store(&[b.top, b.bottom, b.left, b.right]),
            pad_value: pad,
            divisor: U32::new(divisor),
            mean: mean_w,
            std: std_w,
            multiplier: U32::new(quant.map_or(0, |q| q.multiplier_bits)),
            zero_point: I32::new(quant.map_or(0, |q| q.zero_point)),
            rounding: U32::new(quant.map_or(0, |q| q.rounding.code())),
            reserved_364: U32::ZERO,
        };
    }

    /// The descriptor bytes of this representation.
    pub fn to_bytes(&self) -> [u8; SIZE] {
        let mut raw = <PreprocDescriptorV1 as zerocopy::FromZeros>::new_zeroed();
        self.emit(&mut raw);
        let mut out = [0u8; SIZE];
        out.copy_from_slice(raw.as_bytes());
        out
    }

    /// Whether the packet is a no-op (element count 0).
    pub const fn is_empty(&self) -> bool {
        self.prefix.is_empty()
    }

    /// The output kind.
    pub const fn kind(&self) -> OutputKind {
        OutputKind::of(self.plan.output())
    }
}

/// The alignment of a plan's output address in bytes: 16 for a tiled output (SPEC §5),
/// else its element size.
pub fn output_align(plan: &Plan) -> u64 {
    match plan.output() {
        PlanOutput::F32(_) => DType::F32.size_u64(),
        PlanOutput::I8(..) => DType::I8.size_u64(),
        PlanOutput::QuantTess(..) | PlanOutput::CastTess(_) => u64::from(TILE_ALIGNMENT),
    }
}

impl core::fmt::Display for PreprocDescriptorV1 {
    /// Lists every field, one per line: offset, name, raw value.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        fields::write_listing(f, &self.fields())
    }
}

impl prefix::sealed::Sealed for PreprocDescriptorV1 {}

impl RawDescriptor for PreprocDescriptorV1 {
    const SIZE: usize = SIZE;
    const FORMAT: Format = FORMAT;
    const CODES: &'static [DecodeCode] = &CODES;
    type Repr = PreprocRepr;
    type Bytes = [u8; SIZE];

    fn repr_prefix(repr: &PreprocRepr) -> &PrefixRepr {
        &repr.prefix
    }

    fn repr_prefix_mut(repr: &mut PreprocRepr) -> &mut PrefixRepr {
        &mut repr.prefix
    }

    fn repr_bytes(repr: &PreprocRepr) -> [u8; SIZE] {
        repr.to_bytes()
    }

    fn parse_exact(bytes: &[u8]) -> Result<PreprocRepr, DecodeError> {
        PreprocRepr::parse_bytes(bytes)
    }

    fn view(bytes: &[u8; SIZE]) -> &Self {
        zerocopy::transmute_ref!(bytes)
    }

    fn raw_prefix(&self) -> &Prefix {
        &self.prefix
    }

    fn listing(bytes: &[u8]) -> Option<Fields> {
        Self::new_checked(bytes).ok().map(|raw| raw.fields())
    }
}

/// Number of entries returned by [`PreprocDescriptorV1::fields`].
pub const FIELD_COUNT: usize = 68;

/// The output strides in the prefix are the output's (unused axes 0).
const _: () = assert!(MAX_RANK == 6);

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
pub(crate) mod test;
