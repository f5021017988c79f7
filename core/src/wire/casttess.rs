//! CastTess descriptor v1: 216 bytes, little-endian (SPEC §7).
//!
//! Native entry `simaai_kernels_ev74_casttess_v1`, route 48 (0x30).
//!
//! | offset | field |
//! | --- | --- |
//! | 0 | u32 magic `b"SKCT"` · 4 u16 version = 1 · 6 u16 byte length = 216 |
//! | 8 | u32 input dtype code (BF16 = 1, FP32 = 3, FP16 = 4) · 12 u32 rank 1..=6 · 16 u32 flags (bit 0 PadTo16) · 20 u32 reserved = 0 |
//! | 24, 32 | u64 input / output address slots (values < 2^32; zero when relocatable) |
//! | 40, 48, 56 | u64 element count, input accessed span, output physical span (bytes) |
//! | 64, 112 | `[u64; 6]` extents, input byte strides |
//! | 160 | `[i8; 4]` axis of D, H, W, C (−1 absent) · 164 u32 reserved = 0 |
//! | 168 | `[u32; 4]` tile extents D, H, W, C |
//! | 184 | u64 output bytes per outer index |
//! | 192 | `[u32; 4]` tile counts D, H, W, C |
//! | 208 | u32 tile alignment = 16 · 212 u32 reserved = 0 |
//!
//! [`CastTessDescriptorV1`] is the raw view (any bytes); [`CastTessRepr`] is the validated
//! representation: [`CastTessRepr::parse`] checks every rule of SPEC §5 and §7, recomputing
//! each derived field (each rejection is its own [`DecodeError`] variant with a stable
//! [`DecodeCode`]) and [`CastTessRepr::emit`] cannot fail.
//!
//! Derived fields, as the codec writes them and the device recomputes them:
//!
//! - element count: product of the extents (0 when any extent is 0);
//! - input span: `elem + Σ stride·(extent − 1)` (0 when empty);
//! - output physical span: the `MlaTiled` capacity, Σ padded tile sizes (0 when empty);
//! - bytes per outer index: the sum of one outer index's padded tile sizes (0 when empty);
//! - tile counts: `ceil(extent / tile)` per role, 1 for an absent role (whatever the other
//!   extents, so an empty tensor has a zero count only on an empty named axis).
//!
//! Validation reuses the admission code of the host: [`View::new`] for the input port and
//! [`MlaTiled::admit`] for the tiled output, so the device accepts exactly what admission
//! produces.
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use core::fmt;

use static_assertions::const_assert_eq;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::dtype::DType;
use crate::error::{AdmissionError, Port};
use crate::layout::{Channels, MlaTiled, TILE_ALIGN, TileAxis, TiledView};
use crate::tensor::{MAX_RANK, View};
use crate::wire::quant::{ADDRESS_LIMIT, Field, FieldValue};

/// The magic word at offset 0.
pub const MAGIC: [u8; 4] = *b"SKCT";
/// The only descriptor version this codec speaks.
pub const VERSION: u16 = 1;
/// Size of the descriptor in bytes.
pub const SIZE: usize = 216;
/// The tile alignment field's only valid value, in bytes (SPEC §5).
pub const TILE_ALIGNMENT: u32 = 16;
/// Wire value of an absent D/H/W/C role.
pub const ABSENT_AXIS: i8 = -1;

/// Byte offsets of every field (SPEC §7), pinned against the struct below.
pub mod field {
    /// `u32` magic `b"SKCT"`.
    pub const MAGIC: usize = 0;
    /// `u16` version.
    pub const VERSION: usize = 4;
    /// `u16` byte length.
    pub const BYTE_LENGTH: usize = 6;
    /// `u32` input dtype code.
    pub const DTYPE: usize = 8;
    /// `u32` rank.
    pub const RANK: usize = 12;
    /// `u32` flags.
    pub const FLAGS: usize = 16;
    /// `u32` reserved word after the flags.
    pub const RESERVED_20: usize = 20;
    /// `u64` input address slot.
    pub const INPUT_ADDRESS: usize = 24;
    /// `u64` output address slot.
    pub const OUTPUT_ADDRESS: usize = 32;
    /// `u64` element count.
    pub const ELEMENTS: usize = 40;
    /// `u64` input accessed span in bytes.
    pub const INPUT_SPAN: usize = 48;
    /// `u64` output physical span in bytes.
    pub const OUTPUT_SPAN: usize = 56;
    /// `[u64; 6]` extents in elements.
    pub const EXTENTS: usize = 64;
    /// `[u64; 6]` input byte strides.
    pub const INPUT_STRIDES: usize = 112;
    /// `[i8; 4]` logical axis of D, H, W, C (−1 absent).
    pub const AXES: usize = 160;
    /// `u32` reserved word after the axes.
    pub const RESERVED_164: usize = 164;
    /// `[u32; 4]` tile extents of D, H, W, C.
    pub const TILE: usize = 168;
    /// `u64` output bytes per outer index.
    pub const BYTES_PER_OUTER: usize = 184;
    /// `[u32; 4]` tile counts of D, H, W, C.
    pub const TILE_COUNTS: usize = 192;
    /// `u32` tile alignment in bytes.
    pub const TILE_ALIGN: usize = 208;
    /// `u32` trailing reserved word.
    pub const RESERVED_212: usize = 212;
}

/// The raw CastTess v1 descriptor: 216 little-endian bytes, alignment 1, no padding.
///
/// Fields hold whatever the bytes say; nothing is validated here (see
/// [`CastTessRepr::parse`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct CastTessDescriptorV1 {
    /// Magic, `b"SKCT"`.
    pub magic: [u8; 4],
    /// Version, 1.
    pub version: U16,
    /// Byte length, 216.
    pub byte_length: U16,
    /// Input dtype wire code (BF16 = 1, FP32 = 3, FP16 = 4).
    pub dtype: U32,
    /// Rank, 1..=6.
    pub rank: U32,
    /// Flag word, see [`CastTessFlags`].
    pub flags: U32,
    /// Reserved, 0.
    pub reserved_20: U32,
    /// Input bus address slot (< 2^32; 0 when relocatable).
    pub input_address: U64,
    /// Output bus address slot (< 2^32; 0 when relocatable).
    pub output_address: U64,
    /// Element count (0 when empty).
    pub elements: U64,
    /// Input accessed span in bytes.
    pub input_span: U64,
    /// Output physical span in bytes (the `MlaTiled` capacity).
    pub output_span: U64,
    /// Extents in elements, unused axes 0.
    pub extents: [U64; MAX_RANK],
    /// Input strides in bytes, unused and extent-0/1 axes 0.
    pub input_strides: [U64; MAX_RANK],
    /// Logical axis playing D, H, W, C; −1 when absent.
    pub axes: [i8; 4],
    /// Reserved, 0.
    pub reserved_164: U32,
    /// Tile extents of D, H, W, C in elements (1 for an absent role).
    pub tile: [U32; 4],
    /// Output bytes per outer index.
    pub bytes_per_outer: U64,
    /// Tiles along D, H, W, C (1 for an absent role).
    pub tile_counts: [U32; 4],
    /// Tile alignment in bytes, 16.
    pub tile_align: U32,
    /// Reserved, 0.
    pub reserved_212: U32,
}

const_assert_eq!(core::mem::size_of::<CastTessDescriptorV1>(), SIZE);
const_assert_eq!(core::mem::align_of::<CastTessDescriptorV1>(), 1);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, magic),
    field::MAGIC
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, version),
    field::VERSION
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, byte_length),
    field::BYTE_LENGTH
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, dtype),
    field::DTYPE
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, rank),
    field::RANK
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, flags),
    field::FLAGS
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, reserved_20),
    field::RESERVED_20
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, input_address),
    field::INPUT_ADDRESS
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, output_address),
    field::OUTPUT_ADDRESS
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, elements),
    field::ELEMENTS
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, input_span),
    field::INPUT_SPAN
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, output_span),
    field::OUTPUT_SPAN
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, extents),
    field::EXTENTS
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, input_strides),
    field::INPUT_STRIDES
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, axes),
    field::AXES
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, reserved_164),
    field::RESERVED_164
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, tile),
    field::TILE
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, bytes_per_outer),
    field::BYTES_PER_OUTER
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, tile_counts),
    field::TILE_COUNTS
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, tile_align),
    field::TILE_ALIGN
);
const_assert_eq!(
    core::mem::offset_of!(CastTessDescriptorV1, reserved_212),
    field::RESERVED_212
);

/// The CastTess v1 flag word (SPEC §7). Bits other than bit 0 must be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct CastTessFlags(u32);

bitflags::bitflags! {
    impl CastTessFlags: u32 {
        /// Bit 0: channels are stored padded to a multiple of 16 ([`Channels::PadTo16`]).
        const PAD_TO_16 = 1 << 0;
    }
}

impl CastTessFlags {
    /// The flag word of a channel mode.
    pub const fn from_channels(channels: Channels) -> CastTessFlags {
        match channels {
            Channels::Compact => CastTessFlags::empty(),
            Channels::PadTo16 => CastTessFlags::PAD_TO_16,
        }
    }

    /// The channel mode these flags select.
    pub const fn channels(self) -> Channels {
        if self.contains(CastTessFlags::PAD_TO_16) {
            Channels::PadTo16
        } else {
            Channels::Compact
        }
    }
}

/// Stable numeric codes of [`DecodeError`], as reported across the firmware boundary.
///
/// 0 is reserved for success; codes are never reused or renumbered. A rule CastTess shares
/// with Quant v1 has the same number as `crate::wire::quant::DecodeCode` (1..=39, with
/// Quant-only numbers unused here); CastTess-only rules are numbered from 40.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u16)]
pub enum DecodeCode {
    /// [`DecodeError::Length`].
    Length = 1,
    /// [`DecodeError::Magic`].
    Magic = 2,
    /// [`DecodeError::Version`].
    Version = 3,
    /// [`DecodeError::ByteLength`].
    ByteLength = 4,
    /// [`DecodeError::DType`].
    DType = 5,
    /// [`DecodeError::Rank`].
    Rank = 6,
    /// [`DecodeError::UnknownFlags`].
    UnknownFlags = 7,
    /// [`DecodeError::Reserved20`].
    Reserved20 = 8,
    /// [`DecodeError::UnusedExtent`].
    UnusedExtent = 10,
    /// [`DecodeError::UnusedInputStride`].
    UnusedInputStride = 11,
    /// [`DecodeError::ElementsOverflow`].
    ElementsOverflow = 17,
    /// [`DecodeError::ElementCount`].
    ElementCount = 18,
    /// [`DecodeError::InputStrideNotMultiple`].
    InputStrideNotMultiple = 19,
    /// [`DecodeError::InputZeroStride`].
    InputZeroStride = 20,
    /// [`DecodeError::InputSingletonStride`].
    InputSingletonStride = 22,
    /// [`DecodeError::InputSpanOverflow`].
    InputSpanOverflow = 24,
    /// [`DecodeError::OutputSpanOverflow`].
    OutputSpanOverflow = 25,
    /// [`DecodeError::InputSpan`].
    InputSpan = 26,
    /// [`DecodeError::OutputSpan`].
    OutputSpan = 27,
    /// [`DecodeError::InputOverlap`].
    InputOverlap = 28,
    /// [`DecodeError::InputAddress`].
    InputAddress = 32,
    /// [`DecodeError::OutputAddress`].
    OutputAddress = 33,
    /// [`DecodeError::InputRange`].
    InputRange = 34,
    /// [`DecodeError::OutputRange`].
    OutputRange = 35,
    /// [`DecodeError::InputMisaligned`].
    InputMisaligned = 36,
    /// [`DecodeError::PortsOverlap`].
    PortsOverlap = 37,
    /// [`DecodeError::InputUnbound`].
    InputUnbound = 38,
    /// [`DecodeError::OutputUnbound`].
    OutputUnbound = 39,
    /// [`DecodeError::Reserved164`].
    Reserved164 = 40,
    /// [`DecodeError::Reserved212`].
    Reserved212 = 41,
    /// [`DecodeError::TileAlign`].
    TileAlign = 42,
    /// [`DecodeError::AxisOutOfRange`].
    AxisOutOfRange = 43,
    /// [`DecodeError::AxisRepeated`].
    AxisRepeated = 44,
    /// [`DecodeError::AbsentTile`].
    AbsentTile = 45,
    /// [`DecodeError::AbsentTileCount`].
    AbsentTileCount = 46,
    /// [`DecodeError::TileExtent`].
    TileExtent = 47,
    /// [`DecodeError::TileCount`].
    TileCount = 48,
    /// [`DecodeError::BytesPerOuter`].
    BytesPerOuter = 49,
    /// [`DecodeError::OutputMisaligned`].
    OutputMisaligned = 50,
}

impl DecodeCode {
    /// Every code, in numeric order.
    pub const ALL: [DecodeCode; 39] = [
        DecodeCode::Length,
        DecodeCode::Magic,
        DecodeCode::Version,
        DecodeCode::ByteLength,
        DecodeCode::DType,
        DecodeCode::Rank,
        DecodeCode::UnknownFlags,
        DecodeCode::Reserved20,
        DecodeCode::UnusedExtent,
        DecodeCode::UnusedInputStride,
        DecodeCode::ElementsOverflow,
        DecodeCode::ElementCount,
        DecodeCode::InputStrideNotMultiple,
        DecodeCode::InputZeroStride,
        DecodeCode::InputSingletonStride,
        DecodeCode::InputSpanOverflow,
        DecodeCode::OutputSpanOverflow,
        DecodeCode::InputSpan,
        DecodeCode::OutputSpan,
        DecodeCode::InputOverlap,
        DecodeCode::InputAddress,
        DecodeCode::OutputAddress,
        DecodeCode::InputRange,
        DecodeCode::OutputRange,
        DecodeCode::InputMisaligned,
        DecodeCode::PortsOverlap,
        DecodeCode::InputUnbound,
        DecodeCode::OutputUnbound,
        DecodeCode::Reserved164,
        DecodeCode::Reserved212,
        DecodeCode::TileAlign,
        DecodeCode::AxisOutOfRange,
        DecodeCode::AxisRepeated,
        DecodeCode::AbsentTile,
        DecodeCode::AbsentTileCount,
        DecodeCode::TileExtent,
        DecodeCode::TileCount,
        DecodeCode::BytesPerOuter,
        DecodeCode::OutputMisaligned,
    ];

    /// The numeric code (never 0).
    pub const fn get(self) -> u16 {
        self as u16
    }

    /// The code with numeric value `code`, if any.
    pub fn from_u16(code: u16) -> Option<DecodeCode> {
        DecodeCode::ALL.into_iter().find(|c| c.get() == code)
    }
}

/// Why a CastTess v1 descriptor was rejected (SPEC §5, §7). Each rule has its own variant;
/// the variants carry the offending values. Nothing was executed or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DecodeError {
    /// The buffer is not exactly [`SIZE`] bytes long.
    Length {
        /// Buffer length in bytes.
        found: usize,
    },
    /// The magic word is not `b"SKCT"`.
    Magic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The version is not 1.
    Version {
        /// Version found.
        found: u16,
    },
    /// The byte-length field is not 216.
    ByteLength {
        /// Byte length found.
        found: u16,
    },
    /// The input dtype code is not 1, 3 or 4.
    DType {
        /// Code found.
        code: u32,
    },
    /// The rank is outside 1..=6.
    Rank {
        /// Rank found.
        rank: u32,
    },
    /// The flag word has bits other than bit 0.
    UnknownFlags {
        /// The whole flag word.
        bits: u32,
    },
    /// The reserved word at offset 20 is not zero.
    Reserved20 {
        /// Value found.
        value: u32,
    },
    /// The reserved word at offset 164 is not zero.
    Reserved164 {
        /// Value found.
        value: u32,
    },
    /// The reserved word at offset 212 is not zero.
    Reserved212 {
        /// Value found.
        value: u32,
    },
    /// The tile alignment field is not 16.
    TileAlign {
        /// Value found.
        value: u32,
    },
    /// An extent slot at or past the rank is not zero.
    UnusedExtent {
        /// Axis slot.
        axis: u8,
        /// Value found.
        value: u64,
    },
    /// An input stride slot at or past the rank is not zero.
    UnusedInputStride {
        /// Axis slot.
        axis: u8,
        /// Value found.
        value: u64,
    },
    /// A role's axis is neither −1 nor a logical axis below the rank.
    AxisOutOfRange {
        /// The role.
        role: TileAxis,
        /// The axis value found.
        axis: i8,
    },
    /// Two roles name the same logical axis.
    AxisRepeated {
        /// The later role naming it.
        role: TileAxis,
        /// The logical axis.
        axis: i8,
    },
    /// An absent role has a tile extent other than 1.
    AbsentTile {
        /// The role.
        role: TileAxis,
        /// Tile extent found.
        tile: u32,
    },
    /// An absent role has a tile count other than 1.
    AbsentTileCount {
        /// The role.
        role: TileAxis,
        /// Tile count found.
        count: u32,
    },
    /// A present role's tile extent is 0 or above its nonzero axis extent.
    TileExtent {
        /// The role.
        role: TileAxis,
        /// Tile extent found.
        tile: u32,
        /// Extent of the axis playing the role.
        extent: u64,
    },
    /// The product of the extents overflows `u64`.
    ElementsOverflow,
    /// The element count differs from the product of the extents.
    ElementCount {
        /// Recomputed count.
        expected: u64,
        /// Count in the descriptor.
        found: u64,
    },
    /// An input stride of an axis of extent > 1 is not a multiple of the element size.
    InputStrideNotMultiple {
        /// Axis.
        axis: u8,
        /// Stride in bytes.
        stride: u64,
    },
    /// An input axis of extent > 1 has stride 0.
    InputZeroStride {
        /// Axis.
        axis: u8,
    },
    /// An input axis of extent 0 or 1 has a nonzero stride (the wire normalizes it to 0).
    InputSingletonStride {
        /// Axis.
        axis: u8,
        /// Stride in bytes.
        stride: u64,
    },
    /// The recomputed input span overflows `u64`.
    InputSpanOverflow,
    /// The recomputed output physical span overflows `u64`.
    OutputSpanOverflow,
    /// The input span differs from its recomputation.
    InputSpan {
        /// Recomputed span in bytes.
        expected: u64,
        /// Span in the descriptor.
        found: u64,
    },
    /// The output physical span differs from the recomputed `MlaTiled` capacity.
    OutputSpan {
        /// Recomputed span in bytes.
        expected: u64,
        /// Span in the descriptor.
        found: u64,
    },
    /// The input strides fail the conservative nonoverlap proof (SPEC §2).
    InputOverlap {
        /// Axis whose stride is too small.
        axis: u8,
    },
    /// A tile count differs from `ceil(extent / tile)`.
    TileCount {
        /// The role.
        role: TileAxis,
        /// Recomputed count.
        expected: u64,
        /// Count in the descriptor.
        found: u32,
    },
    /// The output bytes per outer index differ from their recomputation.
    BytesPerOuter {
        /// Recomputed bytes.
        expected: u64,
        /// Bytes in the descriptor.
        found: u64,
    },
    /// The input address slot is not below 2^32.
    InputAddress {
        /// Slot value.
        address: u64,
    },
    /// The output address slot is not below 2^32.
    OutputAddress {
        /// Slot value.
        address: u64,
    },
    /// Input address + span exceeds 2^32.
    InputRange {
        /// Address.
        address: u64,
        /// Span in bytes.
        span: u64,
    },
    /// Output address + physical span exceeds 2^32.
    OutputRange {
        /// Address.
        address: u64,
        /// Span in bytes.
        span: u64,
    },
    /// The input address is not aligned to the element size.
    InputMisaligned {
        /// Address.
        address: u64,
        /// Required alignment in bytes.
        align: u64,
    },
    /// The output address is not aligned to 16 bytes.
    OutputMisaligned {
        /// Address.
        address: u64,
    },
    /// The input accessed range and the output physical range overlap.
    PortsOverlap {
        /// Input address.
        input: u64,
        /// Output address.
        output: u64,
    },
    /// A nonempty packet has a zero input slot (unbound).
    InputUnbound,
    /// A nonempty packet has a zero output slot (unbound).
    OutputUnbound,
}

impl DecodeError {
    /// The stable numeric code of this rejection.
    pub const fn code(&self) -> DecodeCode {
        match self {
            DecodeError::Length { .. } => DecodeCode::Length,
            DecodeError::Magic { .. } => DecodeCode::Magic,
            DecodeError::Version { .. } => DecodeCode::Version,
            DecodeError::ByteLength { .. } => DecodeCode::ByteLength,
            DecodeError::DType { .. } => DecodeCode::DType,
            DecodeError::Rank { .. } => DecodeCode::Rank,
            DecodeError::UnknownFlags { .. } => DecodeCode::UnknownFlags,
            DecodeError::Reserved20 { .. } => DecodeCode::Reserved20,
            DecodeError::Reserved164 { .. } => DecodeCode::Reserved164,
            DecodeError::Reserved212 { .. } => DecodeCode::Reserved212,
            DecodeError::TileAlign { .. } => DecodeCode::TileAlign,
            DecodeError::UnusedExtent { .. } => DecodeCode::UnusedExtent,
            DecodeError::UnusedInputStride { .. } => DecodeCode::UnusedInputStride,
            DecodeError::AxisOutOfRange { .. } => DecodeCode::AxisOutOfRange,
            DecodeError::AxisRepeated { .. } => DecodeCode::AxisRepeated,
            DecodeError::AbsentTile { .. } => DecodeCode::AbsentTile,
            DecodeError::AbsentTileCount { .. } => DecodeCode::AbsentTileCount,
            DecodeError::TileExtent { .. } => DecodeCode::TileExtent,
            DecodeError::ElementsOverflow => DecodeCode::ElementsOverflow,
            DecodeError::ElementCount { .. } => DecodeCode::ElementCount,
            DecodeError::InputStrideNotMultiple { .. } => DecodeCode::InputStrideNotMultiple,
            DecodeError::InputZeroStride { .. } => DecodeCode::InputZeroStride,
            DecodeError::InputSingletonStride { .. } => DecodeCode::InputSingletonStride,
            DecodeError::InputSpanOverflow => DecodeCode::InputSpanOverflow,
            DecodeError::OutputSpanOverflow => DecodeCode::OutputSpanOverflow,
            DecodeError::InputSpan { .. } => DecodeCode::InputSpan,
            DecodeError::OutputSpan { .. } => DecodeCode::OutputSpan,
            DecodeError::InputOverlap { .. } => DecodeCode::InputOverlap,
            DecodeError::TileCount { .. } => DecodeCode::TileCount,
            DecodeError::BytesPerOuter { .. } => DecodeCode::BytesPerOuter,
            DecodeError::InputAddress { .. } => DecodeCode::InputAddress,
            DecodeError::OutputAddress { .. } => DecodeCode::OutputAddress,
            DecodeError::InputRange { .. } => DecodeCode::InputRange,
            DecodeError::OutputRange { .. } => DecodeCode::OutputRange,
            DecodeError::InputMisaligned { .. } => DecodeCode::InputMisaligned,
            DecodeError::OutputMisaligned { .. } => DecodeCode::OutputMisaligned,
            DecodeError::PortsOverlap { .. } => DecodeCode::PortsOverlap,
            DecodeError::InputUnbound => DecodeCode::InputUnbound,
            DecodeError::OutputUnbound => DecodeCode::OutputUnbound,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Length { found } => write!(f, "descriptor is {found} bytes, not 216"),
            DecodeError::Magic { found } => write!(f, "bad magic {found:02x?}"),
            DecodeError::Version { found } => write!(f, "unsupported version {found}"),
            DecodeError::ByteLength { found } => write!(f, "byte length field {found} is not 216"),
            DecodeError::DType { code } => write!(f, "invalid input dtype code {code}"),
            DecodeError::Rank { rank } => write!(f, "rank {rank} is outside 1..=6"),
            DecodeError::UnknownFlags { bits } => write!(f, "unknown flag bits in 0x{bits:08x}"),
            DecodeError::Reserved20 { value } => {
                write!(f, "reserved word at offset 20 is 0x{value:08x}")
            }
            DecodeError::Reserved164 { value } => {
                write!(f, "reserved word at offset 164 is 0x{value:08x}")
            }
            DecodeError::Reserved212 { value } => {
                write!(f, "reserved word at offset 212 is 0x{value:08x}")
            }
            DecodeError::TileAlign { value } => write!(f, "tile alignment {value} is not 16"),
            DecodeError::UnusedExtent { axis, value } => {
                write!(f, "unused extent slot {axis} holds {value}")
            }
            DecodeError::UnusedInputStride { axis, value } => {
                write!(f, "unused input stride slot {axis} holds {value}")
            }
            DecodeError::AxisOutOfRange { role, axis } => {
                write!(f, "{role} axis {axis} is neither -1 nor below the rank")
            }
            DecodeError::AxisRepeated { role, axis } => {
                write!(f, "axis {axis} is named twice (again as {role})")
            }
            DecodeError::AbsentTile { role, tile } => {
                write!(f, "absent {role} axis has tile extent {tile}, not 1")
            }
            DecodeError::AbsentTileCount { role, count } => {
                write!(f, "absent {role} axis has tile count {count}, not 1")
            }
            DecodeError::TileExtent { role, tile, extent } => {
                write!(f, "{role} tile extent {tile} is outside 1..={extent}")
            }
            DecodeError::ElementsOverflow => f.write_str("element count overflows u64"),
            DecodeError::ElementCount { expected, found } => {
                write!(f, "element count {found} should be {expected}")
            }
            DecodeError::InputStrideNotMultiple { axis, stride } => write!(
                f,
                "input stride {stride} on axis {axis} is not a multiple of the element size"
            ),
            DecodeError::InputZeroStride { axis } => {
                write!(f, "input axis {axis} has extent > 1 but stride 0")
            }
            DecodeError::InputSingletonStride { axis, stride } => write!(
                f,
                "input axis {axis} of extent <= 1 has stride {stride}, not 0"
            ),
            DecodeError::InputSpanOverflow => f.write_str("input span overflows u64"),
            DecodeError::OutputSpanOverflow => f.write_str("output physical span overflows u64"),
            DecodeError::InputSpan { expected, found } => {
                write!(f, "input span {found} bytes should be {expected}")
            }
            DecodeError::OutputSpan { expected, found } => {
                write!(f, "output physical span {found} bytes should be {expected}")
            }
            DecodeError::InputOverlap { axis } => {
                write!(f, "input strides overlap at axis {axis}")
            }
            DecodeError::TileCount {
                role,
                expected,
                found,
            } => write!(f, "{role} tile count {found} should be {expected}"),
            DecodeError::BytesPerOuter { expected, found } => {
                write!(f, "bytes per outer index {found} should be {expected}")
            }
            DecodeError::InputAddress { address } => write!(
                f,
                "input address 0x{address:x} is outside the 32-bit domain"
            ),
            DecodeError::OutputAddress { address } => write!(
                f,
                "output address 0x{address:x} is outside the 32-bit domain"
            ),
            DecodeError::InputRange { address, span } => write!(
                f,
                "input address 0x{address:x} plus span {span} exceeds the 32-bit domain"
            ),
            DecodeError::OutputRange { address, span } => write!(
                f,
                "output address 0x{address:x} plus span {span} exceeds the 32-bit domain"
            ),
            DecodeError::InputMisaligned { address, align } => write!(
                f,
                "input address 0x{address:x} is not aligned to {align} bytes"
            ),
            DecodeError::OutputMisaligned { address } => {
                write!(f, "output address 0x{address:x} is not aligned to 16 bytes")
            }
            DecodeError::PortsOverlap { input, output } => {
                write!(f, "input at 0x{input:x} and output at 0x{output:x} overlap")
            }
            DecodeError::InputUnbound => f.write_str("input address slot is unbound"),
            DecodeError::OutputUnbound => f.write_str("output address slot is unbound"),
        }
    }
}

impl core::error::Error for DecodeError {}

/// A validated CastTess v1 descriptor (SPEC §5, §7): real enums, the admitted layout, and
/// every derived field consistent with its recomputation.
///
/// Fields are public so a codec can build one; [`CastTessRepr::emit`] writes whatever it
/// holds and [`CastTessRepr::parse`] is the only way to know a descriptor is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CastTessRepr {
    /// Input dtype (`F32`, `BF16` or `F16`).
    pub dtype: DType,
    /// Rank, 1..=6.
    pub rank: u8,
    /// Channel mode (flag bit 0).
    pub channels: Channels,
    /// Input bus address (0 when relocatable).
    pub input_address: u32,
    /// Output bus address (0 when relocatable).
    pub output_address: u32,
    /// Element count (0 when empty).
    pub elements: u64,
    /// Input accessed span in bytes (0 when empty).
    pub input_span: u64,
    /// Output physical span in bytes: the `MlaTiled` capacity (0 when empty).
    pub output_span: u64,
    /// Extents in elements, unused axes 0.
    pub extents: [u64; MAX_RANK],
    /// Input byte strides, unused and extent-0/1 axes 0.
    pub input_strides: [u64; MAX_RANK],
    /// Logical axis playing D, H, W, C (`None` = absent).
    pub axes: [Option<u8>; 4],
    /// Tile extents of D, H, W, C in elements.
    pub tile: [u32; 4],
    /// Output bytes per outer index (0 when empty).
    pub bytes_per_outer: u64,
    /// Tiles along D, H, W, C (1 for an absent role).
    pub tile_counts: [u32; 4],
}

fn load_u64s(raw: &[U64; MAX_RANK]) -> [u64; MAX_RANK] {
    let mut out = [0u64; MAX_RANK];
    for (o, r) in out.iter_mut().zip(raw.iter()) {
        *o = r.get();
    }
    out
}

fn store_u64s(values: &[u64; MAX_RANK]) -> [U64; MAX_RANK] {
    let mut out = [U64::ZERO; MAX_RANK];
    for (o, v) in out.iter_mut().zip(values.iter()) {
        *o = U64::new(*v);
    }
    out
}

fn load_u32s(raw: &[U32; 4]) -> [u32; 4] {
    let mut out = [0u32; 4];
    for (o, r) in out.iter_mut().zip(raw.iter()) {
        *o = r.get();
    }
    out
}

fn store_u32s(values: &[u32; 4]) -> [U32; 4] {
    let mut out = [U32::ZERO; 4];
    for (o, v) in out.iter_mut().zip(values.iter()) {
        *o = U32::new(*v);
    }
    out
}

/// Axis index as `u8` for error values (axes are < 6).
fn axis_u8(axis: usize) -> u8 {
    u8::try_from(axis).unwrap_or(u8::MAX)
}

/// Axis as `i8` for error values (axes are < 6).
fn axis_i8(axis: u8) -> i8 {
    i8::try_from(axis).unwrap_or(i8::MAX)
}

/// The wire tile counts of a layout: `ceil(extent / tile)` per role, 1 for an absent role;
/// `None` when a tile extent is 0.
pub fn tile_counts(tiled: &TiledView) -> [Option<u64>; 4] {
    let mut out = [None; 4];
    for ((o, &e), &t) in out
        .iter_mut()
        .zip(tiled.role_extents().iter())
        .zip(tiled.tile().iter())
    {
        *o = e
            .checked_div(u64::from(t))
            .map(|_| e.div_ceil(u64::from(t)));
    }
    out
}

/// Checks one port's address slot against its span (SPEC §7: < 2^32, address + span ≤ 2^32).
fn check_address(address: u64, span: u64, input: bool) -> Result<u32, DecodeError> {
    let Ok(narrow) = u32::try_from(address) else {
        return Err(if input {
            DecodeError::InputAddress { address }
        } else {
            DecodeError::OutputAddress { address }
        });
    };
    if address
        .checked_add(span)
        .is_none_or(|end| end > ADDRESS_LIMIT)
    {
        return Err(if input {
            DecodeError::InputRange { address, span }
        } else {
            DecodeError::OutputRange { address, span }
        });
    }
    Ok(narrow)
}

/// Maps an input-port admission error of [`View::new`] to its decode rule.
fn input_error(e: AdmissionError) -> DecodeError {
    match e {
        AdmissionError::StrideNotMultiple { axis, stride, .. } => {
            DecodeError::InputStrideNotMultiple {
                axis: axis_u8(axis),
                stride,
            }
        }
        AdmissionError::ZeroStride { axis, .. } => DecodeError::InputZeroStride {
            axis: axis_u8(axis),
        },
        AdmissionError::Overlap { axis, .. } => DecodeError::InputOverlap {
            axis: axis_u8(axis),
        },
        // The rank was checked before; what is left is an overflow.
        _ => DecodeError::InputSpanOverflow,
    }
}

/// Maps an output-layout admission error of [`MlaTiled::admit`] to its decode rule.
fn layout_error(e: AdmissionError) -> DecodeError {
    match e {
        AdmissionError::TileAxisOutOfRange { role, axis, .. } => DecodeError::AxisOutOfRange {
            role,
            axis: axis_i8(axis),
        },
        AdmissionError::TileAxisRepeated { role, axis } => DecodeError::AxisRepeated {
            role,
            axis: axis_i8(axis),
        },
        AdmissionError::TileExtent { role, tile, extent } => {
            DecodeError::TileExtent { role, tile, extent }
        }
        // Rank and plane count were checked before; what is left is an overflow.
        _ => DecodeError::OutputSpanOverflow,
    }
}

impl CastTessRepr {
    /// Checks every rule of SPEC §5 and §7 on a raw descriptor, recomputing each derived
    /// field.
    ///
    /// Zero address slots are accepted (relocatable packets); nonzero slots are checked for
    /// the 32-bit domain, range, alignment (input: element size; output: 16 bytes) and port
    /// overlap. Order of checks: header (magic, version, byte length, dtype, rank, flag
    /// bits, reserved words, tile alignment), unused axis slots, axis values, absent roles
    /// (tile 1, count 1), extent-0/1 strides, element count, input strides and span
    /// (stride multiples, zero strides, nonoverlap), layout (repeated axes, tile extents,
    /// capacity), tile counts, bytes per outer index, output physical span, addresses.
    ///
    /// # Errors
    ///
    /// The first failing rule, as a [`DecodeError`] variant (see [`DecodeCode`]).
    pub fn parse(raw: &CastTessDescriptorV1) -> Result<CastTessRepr, DecodeError> {
        if raw.magic != MAGIC {
            return Err(DecodeError::Magic { found: raw.magic });
        }
        if raw.version.get() != VERSION {
            return Err(DecodeError::Version {
                found: raw.version.get(),
            });
        }
        if usize::from(raw.byte_length.get()) != SIZE {
            return Err(DecodeError::ByteLength {
                found: raw.byte_length.get(),
            });
        }
        let code = raw.dtype.get();
        let dtype = DType::from_wire_code(code).ok_or(DecodeError::DType { code })?;
        let rank_raw = raw.rank.get();
        let rank = match u8::try_from(rank_raw) {
            Ok(r @ 1..=6) => r,
            _ => return Err(DecodeError::Rank { rank: rank_raw }),
        };
        let bits = raw.flags.get();
        let flags = CastTessFlags::from_bits(bits).ok_or(DecodeError::UnknownFlags { bits })?;
        if raw.reserved_20.get() != 0 {
            return Err(DecodeError::Reserved20 {
                value: raw.reserved_20.get(),
            });
        }
        if raw.reserved_164.get() != 0 {
            return Err(DecodeError::Reserved164 {
                value: raw.reserved_164.get(),
            });
        }
        if raw.reserved_212.get() != 0 {
            return Err(DecodeError::Reserved212 {
                value: raw.reserved_212.get(),
            });
        }
        if raw.tile_align.get() != TILE_ALIGNMENT {
            return Err(DecodeError::TileAlign {
                value: raw.tile_align.get(),
            });
        }
        let extents = load_u64s(&raw.extents);
        let input_strides = load_u64s(&raw.input_strides);
        let rank_usize = usize::from(rank);
        for (axis, (e, s)) in extents
            .iter()
            .zip(input_strides.iter())
            .enumerate()
            .skip(rank_usize)
        {
            let axis = axis_u8(axis);
            if *e != 0 {
                return Err(DecodeError::UnusedExtent { axis, value: *e });
            }
            if *s != 0 {
                return Err(DecodeError::UnusedInputStride { axis, value: *s });
            }
        }
        let tile = load_u32s(&raw.tile);
        let wire_counts = load_u32s(&raw.tile_counts);
        let mut axes = [None; 4];
        for (((slot, &value), role), (&t, &count)) in axes
            .iter_mut()
            .zip(raw.axes.iter())
            .zip(TileAxis::ALL)
            .zip(tile.iter().zip(wire_counts.iter()))
        {
            match value {
                ABSENT_AXIS => {
                    if t != 1 {
                        return Err(DecodeError::AbsentTile { role, tile: t });
                    }
                    if count != 1 {
                        return Err(DecodeError::AbsentTileCount { role, count });
                    }
                }
                a if a >= 0 && (a as u8) < rank => *slot = Some(a as u8),
                axis => return Err(DecodeError::AxisOutOfRange { role, axis }),
            }
        }
        for (axis, (e, s)) in extents
            .iter()
            .zip(input_strides.iter())
            .enumerate()
            .take(rank_usize)
        {
            if *e <= 1 && *s != 0 {
                return Err(DecodeError::InputSingletonStride {
                    axis: axis_u8(axis),
                    stride: *s,
                });
            }
        }
        let active = extents.get(..rank_usize).unwrap_or(&[]);
        let empty = active.contains(&0);
        let expected_elements = if empty {
            0
        } else {
            active
                .iter()
                .try_fold(1u64, |acc, &e| acc.checked_mul(e))
                .ok_or(DecodeError::ElementsOverflow)?
        };
        let elements = raw.elements.get();
        if elements != expected_elements {
            return Err(DecodeError::ElementCount {
                expected: expected_elements,
                found: elements,
            });
        }
        let view = View::new(rank_usize, extents, input_strides, dtype, Port::Input)
            .map_err(input_error)?;
        let input_span = raw.input_span.get();
        if input_span != view.span() {
            return Err(DecodeError::InputSpan {
                expected: view.span(),
                found: input_span,
            });
        }
        let channels = flags.channels();
        let tiled = MlaTiled::new(axes, tile, channels)
            .admit(active, 2)
            .map_err(layout_error)?;
        for ((role, expected), &found) in TileAxis::ALL
            .into_iter()
            .zip(tile_counts(&tiled))
            .zip(wire_counts.iter())
        {
            // Tile extents are ≥ 1 after admission, so every count is `Some`.
            let expected = expected.unwrap_or(0);
            if expected != u64::from(found) {
                return Err(DecodeError::TileCount {
                    role,
                    expected,
                    found,
                });
            }
        }
        let bytes_per_outer = raw.bytes_per_outer.get();
        if bytes_per_outer != tiled.bytes_per_outer() {
            return Err(DecodeError::BytesPerOuter {
                expected: tiled.bytes_per_outer(),
                found: bytes_per_outer,
            });
        }
        let output_span = raw.output_span.get();
        if output_span != tiled.capacity() {
            return Err(DecodeError::OutputSpan {
                expected: tiled.capacity(),
                found: output_span,
            });
        }

        let in_slot = raw.input_address.get();
        let out_slot = raw.output_address.get();
        let input_address = check_address(in_slot, input_span, true)?;
        let output_address = check_address(out_slot, output_span, false)?;
        let elem = dtype.size_u64();
        if in_slot != 0 && !empty && in_slot.checked_rem(elem) != Some(0) {
            return Err(DecodeError::InputMisaligned {
                address: in_slot,
                align: elem,
            });
        }
        if out_slot != 0 && !empty && out_slot.checked_rem(TILE_ALIGN) != Some(0) {
            return Err(DecodeError::OutputMisaligned { address: out_slot });
        }
        if in_slot != 0 && out_slot != 0 && !empty {
            // Both ends fit in 2^32 (checked above), so the sums cannot overflow.
            let in_end = in_slot.saturating_add(input_span);
            let out_end = out_slot.saturating_add(output_span);
            if in_slot < out_end && out_slot < in_end {
                return Err(DecodeError::PortsOverlap {
                    input: in_slot,
                    output: out_slot,
                });
            }
        }
        Ok(CastTessRepr {
            dtype,
            rank,
            channels,
            input_address,
            output_address,
            elements,
            input_span,
            output_span,
            extents,
            input_strides,
            axes,
            tile,
            bytes_per_outer,
            tile_counts: wire_counts,
        })
    }

    /// Casts `bytes` (exactly [`SIZE`] long) and parses them; see [`CastTessRepr::parse`].
    ///
    /// # Errors
    ///
    /// [`DecodeError::Length`] when `bytes` is not 216 bytes long, else as `parse`.
    pub fn parse_bytes(bytes: &[u8]) -> Result<CastTessRepr, DecodeError> {
        CastTessRepr::parse(CastTessDescriptorV1::new_checked(bytes)?)
    }

    /// Writes this representation into a raw descriptor (every byte is written).
    pub fn emit(&self, raw: &mut CastTessDescriptorV1) {
        let mut axes = [ABSENT_AXIS; 4];
        for (w, a) in axes.iter_mut().zip(self.axes.iter()) {
            if let Some(a) = a {
                *w = axis_i8(*a);
            }
        }
        *raw = CastTessDescriptorV1 {
            magic: MAGIC,
            version: U16::new(VERSION),
            // SIZE is 216 (statically asserted), which fits u16.
            byte_length: U16::new(SIZE as u16),
            dtype: U32::new(self.dtype.wire_code().unwrap_or(0)),
            rank: U32::new(u32::from(self.rank)),
            flags: U32::new(CastTessFlags::from_channels(self.channels).bits()),
            reserved_20: U32::ZERO,
            input_address: U64::new(u64::from(self.input_address)),
            output_address: U64::new(u64::from(self.output_address)),
            elements: U64::new(self.elements),
            input_span: U64::new(self.input_span),
            output_span: U64::new(self.output_span),
            extents: store_u64s(&self.extents),
            input_strides: store_u64s(&self.input_strides),
            axes,
            reserved_164: U32::ZERO,
            tile: store_u32s(&self.tile),
            bytes_per_outer: U64::new(self.bytes_per_outer),
            tile_counts: store_u32s(&self.tile_counts),
            tile_align: U32::new(TILE_ALIGNMENT),
            reserved_212: U32::ZERO,
        };
    }

    /// The descriptor bytes of this representation.
    pub fn to_bytes(&self) -> [u8; SIZE] {
        let mut raw = CastTessDescriptorV1::new_zeroed();
        self.emit(&mut raw);
        let mut out = [0u8; SIZE];
        out.copy_from_slice(raw.as_bytes());
        out
    }

    /// Buffer length needed by [`CastTessRepr::emit`]: [`SIZE`] bytes.
    pub const fn buffer_len(&self) -> usize {
        SIZE
    }

    /// Whether the packet is a no-op (element count 0).
    pub const fn is_empty(&self) -> bool {
        self.elements == 0
    }

    /// The `MlaTiled` metadata of the output.
    pub const fn layout(&self) -> MlaTiled {
        MlaTiled::new(self.axes, self.tile, self.channels)
    }

    /// The admitted output layout (capacity, tile offsets, tile extents), recomputed from
    /// the validated fields.
    ///
    /// # Errors
    ///
    /// The admission error of [`MlaTiled::admit`]; never for a representation returned by
    /// [`CastTessRepr::parse`].
    pub fn tiled(&self) -> Result<TiledView, AdmissionError> {
        let rank = usize::from(self.rank).min(MAX_RANK);
        self.layout()
            .admit(self.extents.get(..rank).unwrap_or(&[]), 2)
    }
}

impl CastTessDescriptorV1 {
    /// Size in bytes.
    pub const SIZE: usize = SIZE;

    /// Views `bytes` as a descriptor without any semantic check.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Length`] unless `bytes` is exactly [`SIZE`] bytes long.
    pub fn new_checked(bytes: &[u8]) -> Result<&CastTessDescriptorV1, DecodeError> {
        CastTessDescriptorV1::ref_from_bytes(bytes)
            .map_err(|_| DecodeError::Length { found: bytes.len() })
    }

    /// Every field with its byte offset, in wire order ([`FIELD_COUNT`] entries; array
    /// slots separately), for listings such as `simak packet decode`. Values are shown raw,
    /// whatever they are.
    pub fn fields(&self) -> [Field; FIELD_COUNT] {
        let blank = Field {
            offset: 0,
            name: "",
            value: FieldValue::U64(0),
        };
        let mut out = [blank; FIELD_COUNT];
        let mut k = 0usize;
        let mut push = |offset: usize, name: &'static str, value: FieldValue| {
            if let Some(slot) = out.get_mut(k) {
                *slot = Field {
                    offset,
                    name,
                    value,
                };
            }
            k = k.saturating_add(1);
        };
        push(field::MAGIC, "magic", FieldValue::Magic(self.magic));
        push(
            field::VERSION,
            "version",
            FieldValue::U16(self.version.get()),
        );
        push(
            field::BYTE_LENGTH,
            "byte_length",
            FieldValue::U16(self.byte_length.get()),
        );
        push(field::DTYPE, "dtype", FieldValue::U32(self.dtype.get()));
        push(field::RANK, "rank", FieldValue::U32(self.rank.get()));
        push(field::FLAGS, "flags", FieldValue::Hex32(self.flags.get()));
        push(
            field::RESERVED_20,
            "reserved_20",
            FieldValue::Hex32(self.reserved_20.get()),
        );
        push(
            field::INPUT_ADDRESS,
            "input_address",
            FieldValue::Hex64(self.input_address.get()),
        );
        push(
            field::OUTPUT_ADDRESS,
            "output_address",
            FieldValue::Hex64(self.output_address.get()),
        );
        push(
            field::ELEMENTS,
            "elements",
            FieldValue::U64(self.elements.get()),
        );
        push(
            field::INPUT_SPAN,
            "input_span",
            FieldValue::U64(self.input_span.get()),
        );
        push(
            field::OUTPUT_SPAN,
            "output_span",
            FieldValue::U64(self.output_span.get()),
        );
        for ((name, v), i) in EXTENT_NAMES.iter().zip(self.extents.iter()).zip(0usize..) {
            push(
                field::EXTENTS.saturating_add(i.saturating_mul(8)),
                name,
                FieldValue::U64(v.get()),
            );
        }
        for ((name, v), i) in INPUT_STRIDE_NAMES
            .iter()
            .zip(self.input_strides.iter())
            .zip(0usize..)
        {
            push(
                field::INPUT_STRIDES.saturating_add(i.saturating_mul(8)),
                name,
                FieldValue::U64(v.get()),
            );
        }
        for ((name, &v), i) in AXIS_NAMES.iter().zip(self.axes.iter()).zip(0usize..) {
            push(
                field::AXES.saturating_add(i),
                name,
                FieldValue::I32(i32::from(v)),
            );
        }
        push(
            field::RESERVED_164,
            "reserved_164",
            FieldValue::Hex32(self.reserved_164.get()),
        );
        for ((name, v), i) in TILE_NAMES.iter().zip(self.tile.iter()).zip(0usize..) {
            push(
                field::TILE.saturating_add(i.saturating_mul(4)),
                name,
                FieldValue::U32(v.get()),
            );
        }
        push(
            field::BYTES_PER_OUTER,
            "bytes_per_outer",
            FieldValue::U64(self.bytes_per_outer.get()),
        );
        for ((name, v), i) in COUNT_NAMES
            .iter()
            .zip(self.tile_counts.iter())
            .zip(0usize..)
        {
            push(
                field::TILE_COUNTS.saturating_add(i.saturating_mul(4)),
                name,
                FieldValue::U32(v.get()),
            );
        }
        push(
            field::TILE_ALIGN,
            "tile_align",
            FieldValue::U32(self.tile_align.get()),
        );
        push(
            field::RESERVED_212,
            "reserved_212",
            FieldValue::Hex32(self.reserved_212.get()),
        );
        out
    }
}

/// Number of entries returned by [`CastTessDescriptorV1::fields`].
pub const FIELD_COUNT: usize = 40;

const EXTENT_NAMES: [&str; MAX_RANK] = [
    "extents[0]",
    "extents[1]",
    "extents[2]",
    "extents[3]",
    "extents[4]",
    "extents[5]",
];
const INPUT_STRIDE_NAMES: [&str; MAX_RANK] = [
    "input_strides[0]",
    "input_strides[1]",
    "input_strides[2]",
    "input_strides[3]",
    "input_strides[4]",
    "input_strides[5]",
];
const AXIS_NAMES: [&str; 4] = ["axes[d]", "axes[h]", "axes[w]", "axes[c]"];
const TILE_NAMES: [&str; 4] = ["tile[d]", "tile[h]", "tile[w]", "tile[c]"];
const COUNT_NAMES: [&str; 4] = [
    "tile_counts[d]",
    "tile_counts[h]",
    "tile_counts[w]",
    "tile_counts[c]",
];

/// Lists every field, one per line: offset, name, raw value.
impl fmt::Display for CastTessDescriptorV1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for field in self.fields() {
            writeln!(f, "{field}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
pub(crate) mod test;
