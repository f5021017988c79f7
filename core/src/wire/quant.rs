//! Quant descriptor v1: 224 bytes, little-endian (SPEC §7).
//!
//! Native entry `simaai_kernels_ev74_quant_v1`, route 47 (0x2F).
//!
//! | offset | field |
//! | --- | --- |
//! | 0 | u32 magic `b"SKQT"` · 4 u16 version = 1 · 6 u16 byte length = 224 |
//! | 8 | u32 input dtype code (BF16 = 1, FP32 = 3, FP16 = 4) · 12 u32 wire rank 1..=6 |
//! | 16 | u32 flags (bit 0 input contiguous, bit 1 output contiguous) · 20 u32 reserved = 0 |
//! | 24, 32 | u64 input / output address slots (values < 2^32; zero when relocatable) |
//! | 40, 48, 56 | u64 element count, input accessed span, output accessed span (bytes) |
//! | 64, 112, 160 | `[u64; 6]` extents, input byte strides, output byte strides |
//! | 208, 212, 216 | u32 multiplier bits, i32 zero point, u32 rounding code |
//! | 220 | u32 reserved = 0 |
//!
//! [`QuantDescriptorV1`] is the raw view (any bytes); [`QuantRepr`] is the validated
//! representation: [`QuantRepr::parse`] checks every rule of SPEC §7 (each rejection is its
//! own [`DecodeError`] variant with a stable [`DecodeCode`]) and [`QuantRepr::emit`] cannot
//! fail. Address slots of zero are accepted by `parse` (relocatable packets); the device-side
//! `crate::ev74::quant::decode` additionally rejects unbound nonempty packets.
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use core::fmt;

use static_assertions::const_assert_eq;
use zerocopy::little_endian::{I32, U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::arith::quant::{Multiplier, Rounding};
use crate::dtype::DType;
use crate::error::AdmissionError;
use crate::tensor::MAX_RANK;

/// The magic word at offset 0.
pub const MAGIC: [u8; 4] = *b"SKQT";
/// The only descriptor version this codec speaks.
pub const VERSION: u16 = 1;
/// Size of the descriptor in bytes.
pub const SIZE: usize = 224;
/// The 32-bit device address domain: `address + span` must not exceed this (bytes).
pub const ADDRESS_LIMIT: u64 = 1 << 32;

/// Byte offsets of every field (SPEC §7), pinned against the struct below.
pub mod field {
    /// `u32` magic `b"SKQT"`.
    pub const MAGIC: usize = 0;
    /// `u16` version.
    pub const VERSION: usize = 4;
    /// `u16` byte length.
    pub const BYTE_LENGTH: usize = 6;
    /// `u32` input dtype code.
    pub const DTYPE: usize = 8;
    /// `u32` wire rank.
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
    /// `u64` output accessed span in bytes.
    pub const OUTPUT_SPAN: usize = 56;
    /// `[u64; 6]` extents in elements.
    pub const EXTENTS: usize = 64;
    /// `[u64; 6]` input byte strides.
    pub const INPUT_STRIDES: usize = 112;
    /// `[u64; 6]` output byte strides.
    pub const OUTPUT_STRIDES: usize = 160;
    /// `u32` multiplier binary32 bits.
    pub const MULTIPLIER: usize = 208;
    /// `i32` zero point.
    pub const ZERO_POINT: usize = 212;
    /// `u32` rounding code.
    pub const ROUNDING: usize = 216;
    /// `u32` trailing reserved word.
    pub const RESERVED_220: usize = 220;
}

/// The raw Quant v1 descriptor: 224 little-endian bytes, alignment 1, no padding.
///
/// Fields hold whatever the bytes say; nothing is validated here (see [`QuantRepr::parse`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct QuantDescriptorV1 {
    /// Magic, `b"SKQT"`.
    pub magic: [u8; 4],
    /// Version, 1.
    pub version: U16,
    /// Byte length, 224.
    pub byte_length: U16,
    /// Input dtype wire code (BF16 = 1, FP32 = 3, FP16 = 4).
    pub dtype: U32,
    /// Wire rank, 1..=6 (scalars lower to rank 1).
    pub rank: U32,
    /// Flag word, see [`QuantFlags`].
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
    /// Output accessed span in bytes.
    pub output_span: U64,
    /// Extents in elements, unused axes 0.
    pub extents: [U64; MAX_RANK],
    /// Input strides in bytes, unused and extent-0/1 axes 0.
    pub input_strides: [U64; MAX_RANK],
    /// Output strides in bytes, unused and extent-0/1 axes 0.
    pub output_strides: [U64; MAX_RANK],
    /// Multiplier binary32 bits.
    pub multiplier: U32,
    /// Zero point, in [-128, 127].
    pub zero_point: I32,
    /// Rounding code (TowardZero = 0, NearestEven = 1, TowardPositive = 2, TowardNegative = 3).
    pub rounding: U32,
    /// Reserved, 0.
    pub reserved_220: U32,
}

const_assert_eq!(core::mem::size_of::<QuantDescriptorV1>(), SIZE);
const_assert_eq!(core::mem::align_of::<QuantDescriptorV1>(), 1);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, magic),
    field::MAGIC
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, version),
    field::VERSION
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, byte_length),
    field::BYTE_LENGTH
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, dtype),
    field::DTYPE
);
const_assert_eq!(core::mem::offset_of!(QuantDescriptorV1, rank), field::RANK);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, flags),
    field::FLAGS
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, reserved_20),
    field::RESERVED_20
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, input_address),
    field::INPUT_ADDRESS
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, output_address),
    field::OUTPUT_ADDRESS
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, elements),
    field::ELEMENTS
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, input_span),
    field::INPUT_SPAN
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, output_span),
    field::OUTPUT_SPAN
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, extents),
    field::EXTENTS
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, input_strides),
    field::INPUT_STRIDES
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, output_strides),
    field::OUTPUT_STRIDES
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, multiplier),
    field::MULTIPLIER
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, zero_point),
    field::ZERO_POINT
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, rounding),
    field::ROUNDING
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, reserved_220),
    field::RESERVED_220
);

/// The Quant v1 flag word (SPEC §7). Bits other than these two must be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct QuantFlags(u32);

bitflags::bitflags! {
    impl QuantFlags: u32 {
        /// Bit 0: every input axis of extent > 1 has the row-major packed stride.
        const INPUT_CONTIGUOUS = 1 << 0;
        /// Bit 1: every output axis of extent > 1 has the row-major packed stride.
        const OUTPUT_CONTIGUOUS = 1 << 1;
    }
}

/// Stable numeric codes of [`DecodeError`], as reported across the firmware boundary.
///
/// 0 is reserved for success; codes are never reused or renumbered.
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
    /// [`DecodeError::Reserved220`].
    Reserved220 = 9,
    /// [`DecodeError::UnusedExtent`].
    UnusedExtent = 10,
    /// [`DecodeError::UnusedInputStride`].
    UnusedInputStride = 11,
    /// [`DecodeError::UnusedOutputStride`].
    UnusedOutputStride = 12,
    /// [`DecodeError::MultiplierNotFinite`].
    MultiplierNotFinite = 13,
    /// [`DecodeError::MultiplierNotPositive`].
    MultiplierNotPositive = 14,
    /// [`DecodeError::ZeroPoint`].
    ZeroPoint = 15,
    /// [`DecodeError::Rounding`].
    Rounding = 16,
    /// [`DecodeError::ElementsOverflow`].
    ElementsOverflow = 17,
    /// [`DecodeError::ElementCount`].
    ElementCount = 18,
    /// [`DecodeError::InputStrideNotMultiple`].
    InputStrideNotMultiple = 19,
    /// [`DecodeError::InputZeroStride`].
    InputZeroStride = 20,
    /// [`DecodeError::OutputZeroStride`].
    OutputZeroStride = 21,
    /// [`DecodeError::InputSingletonStride`].
    InputSingletonStride = 22,
    /// [`DecodeError::OutputSingletonStride`].
    OutputSingletonStride = 23,
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
    /// [`DecodeError::OutputOverlap`].
    OutputOverlap = 29,
    /// [`DecodeError::InputContiguousFlag`].
    InputContiguousFlag = 30,
    /// [`DecodeError::OutputContiguousFlag`].
    OutputContiguousFlag = 31,
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
        DecodeCode::Reserved220,
        DecodeCode::UnusedExtent,
        DecodeCode::UnusedInputStride,
        DecodeCode::UnusedOutputStride,
        DecodeCode::MultiplierNotFinite,
        DecodeCode::MultiplierNotPositive,
        DecodeCode::ZeroPoint,
        DecodeCode::Rounding,
        DecodeCode::ElementsOverflow,
        DecodeCode::ElementCount,
        DecodeCode::InputStrideNotMultiple,
        DecodeCode::InputZeroStride,
        DecodeCode::OutputZeroStride,
        DecodeCode::InputSingletonStride,
        DecodeCode::OutputSingletonStride,
        DecodeCode::InputSpanOverflow,
        DecodeCode::OutputSpanOverflow,
        DecodeCode::InputSpan,
        DecodeCode::OutputSpan,
        DecodeCode::InputOverlap,
        DecodeCode::OutputOverlap,
        DecodeCode::InputContiguousFlag,
        DecodeCode::OutputContiguousFlag,
        DecodeCode::InputAddress,
        DecodeCode::OutputAddress,
        DecodeCode::InputRange,
        DecodeCode::OutputRange,
        DecodeCode::InputMisaligned,
        DecodeCode::PortsOverlap,
        DecodeCode::InputUnbound,
        DecodeCode::OutputUnbound,
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

/// Why a Quant v1 descriptor was rejected (SPEC §7). Each rule has its own variant; the
/// variants carry the offending values. Nothing was executed or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DecodeError {
    /// The buffer is not exactly [`SIZE`] bytes long.
    Length {
        /// Buffer length in bytes.
        found: usize,
    },
    /// The magic word is not `b"SKQT"`.
    Magic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The version is not 1.
    Version {
        /// Version found.
        found: u16,
    },
    /// The byte-length field is not 224.
    ByteLength {
        /// Byte length found.
        found: u16,
    },
    /// The input dtype code is not 1, 3 or 4.
    DType {
        /// Code found.
        code: u32,
    },
    /// The wire rank is outside 1..=6.
    Rank {
        /// Rank found.
        rank: u32,
    },
    /// The flag word has bits other than bits 0 and 1.
    UnknownFlags {
        /// The whole flag word.
        bits: u32,
    },
    /// The reserved word at offset 20 is not zero.
    Reserved20 {
        /// Value found.
        value: u32,
    },
    /// The reserved word at offset 220 is not zero.
    Reserved220 {
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
    /// An output stride slot at or past the rank is not zero.
    UnusedOutputStride {
        /// Axis slot.
        axis: u8,
        /// Value found.
        value: u64,
    },
    /// The multiplier is NaN or infinite.
    MultiplierNotFinite {
        /// binary32 bits.
        bits: u32,
    },
    /// The multiplier is zero or negative.
    MultiplierNotPositive {
        /// binary32 bits.
        bits: u32,
    },
    /// The zero point is outside [-128, 127].
    ZeroPoint {
        /// Value found.
        value: i32,
    },
    /// The rounding code is not 0..=3.
    Rounding {
        /// Code found.
        code: u32,
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
    /// An input axis of extent > 1 has stride 0 in a nonempty packet.
    InputZeroStride {
        /// Axis.
        axis: u8,
    },
    /// An output axis of extent > 1 has stride 0 in a nonempty packet.
    OutputZeroStride {
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
    /// An output axis of extent 0 or 1 has a nonzero stride.
    OutputSingletonStride {
        /// Axis.
        axis: u8,
        /// Stride in bytes.
        stride: u64,
    },
    /// The recomputed input span overflows `u64`.
    InputSpanOverflow,
    /// The recomputed output span overflows `u64`.
    OutputSpanOverflow,
    /// The input span differs from its recomputation.
    InputSpan {
        /// Recomputed span in bytes.
        expected: u64,
        /// Span in the descriptor.
        found: u64,
    },
    /// The output span differs from its recomputation.
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
    /// The output strides fail the conservative nonoverlap proof (SPEC §2).
    OutputOverlap {
        /// Axis whose stride is too small.
        axis: u8,
    },
    /// The input-contiguous flag disagrees with the strides.
    InputContiguousFlag {
        /// What the strides say.
        expected: bool,
    },
    /// The output-contiguous flag disagrees with the strides.
    OutputContiguousFlag {
        /// What the strides say.
        expected: bool,
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
    /// Output address + span exceeds 2^32.
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
    /// The input and output accessed ranges overlap.
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
            DecodeError::Reserved220 { .. } => DecodeCode::Reserved220,
            DecodeError::UnusedExtent { .. } => DecodeCode::UnusedExtent,
            DecodeError::UnusedInputStride { .. } => DecodeCode::UnusedInputStride,
            DecodeError::UnusedOutputStride { .. } => DecodeCode::UnusedOutputStride,
            DecodeError::MultiplierNotFinite { .. } => DecodeCode::MultiplierNotFinite,
            DecodeError::MultiplierNotPositive { .. } => DecodeCode::MultiplierNotPositive,
            DecodeError::ZeroPoint { .. } => DecodeCode::ZeroPoint,
            DecodeError::Rounding { .. } => DecodeCode::Rounding,
            DecodeError::ElementsOverflow => DecodeCode::ElementsOverflow,
            DecodeError::ElementCount { .. } => DecodeCode::ElementCount,
            DecodeError::InputStrideNotMultiple { .. } => DecodeCode::InputStrideNotMultiple,
            DecodeError::InputZeroStride { .. } => DecodeCode::InputZeroStride,
            DecodeError::OutputZeroStride { .. } => DecodeCode::OutputZeroStride,
            DecodeError::InputSingletonStride { .. } => DecodeCode::InputSingletonStride,
            DecodeError::OutputSingletonStride { .. } => DecodeCode::OutputSingletonStride,
            DecodeError::InputSpanOverflow => DecodeCode::InputSpanOverflow,
            DecodeError::OutputSpanOverflow => DecodeCode::OutputSpanOverflow,
            DecodeError::InputSpan { .. } => DecodeCode::InputSpan,
            DecodeError::OutputSpan { .. } => DecodeCode::OutputSpan,
            DecodeError::InputOverlap { .. } => DecodeCode::InputOverlap,
            DecodeError::OutputOverlap { .. } => DecodeCode::OutputOverlap,
            DecodeError::InputContiguousFlag { .. } => DecodeCode::InputContiguousFlag,
            DecodeError::OutputContiguousFlag { .. } => DecodeCode::OutputContiguousFlag,
            DecodeError::InputAddress { .. } => DecodeCode::InputAddress,
            DecodeError::OutputAddress { .. } => DecodeCode::OutputAddress,
            DecodeError::InputRange { .. } => DecodeCode::InputRange,
            DecodeError::OutputRange { .. } => DecodeCode::OutputRange,
            DecodeError::InputMisaligned { .. } => DecodeCode::InputMisaligned,
            DecodeError::PortsOverlap { .. } => DecodeCode::PortsOverlap,
            DecodeError::InputUnbound => DecodeCode::InputUnbound,
            DecodeError::OutputUnbound => DecodeCode::OutputUnbound,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Length { found } => write!(f, "descriptor is {found} bytes, not 224"),
            DecodeError::Magic { found } => write!(f, "bad magic {:02x?}", found),
            DecodeError::Version { found } => write!(f, "unsupported version {found}"),
            DecodeError::ByteLength { found } => write!(f, "byte length field {found} is not 224"),
            DecodeError::DType { code } => write!(f, "invalid input dtype code {code}"),
            DecodeError::Rank { rank } => write!(f, "wire rank {rank} is outside 1..=6"),
            DecodeError::UnknownFlags { bits } => write!(f, "unknown flag bits in 0x{bits:08x}"),
            DecodeError::Reserved20 { value } => {
                write!(f, "reserved word at offset 20 is 0x{value:08x}")
            }
            DecodeError::Reserved220 { value } => {
                write!(f, "reserved word at offset 220 is 0x{value:08x}")
            }
            DecodeError::UnusedExtent { axis, value } => {
                write!(f, "unused extent slot {axis} holds {value}")
            }
            DecodeError::UnusedInputStride { axis, value } => {
                write!(f, "unused input stride slot {axis} holds {value}")
            }
            DecodeError::UnusedOutputStride { axis, value } => {
                write!(f, "unused output stride slot {axis} holds {value}")
            }
            DecodeError::MultiplierNotFinite { bits } => {
                write!(f, "multiplier 0x{bits:08x} is not finite")
            }
            DecodeError::MultiplierNotPositive { bits } => {
                write!(f, "multiplier 0x{bits:08x} is not > 0")
            }
            DecodeError::ZeroPoint { value } => {
                write!(f, "zero point {value} is outside [-128, 127]")
            }
            DecodeError::Rounding { code } => write!(f, "invalid rounding code {code}"),
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
            DecodeError::OutputZeroStride { axis } => {
                write!(f, "output axis {axis} has extent > 1 but stride 0")
            }
            DecodeError::InputSingletonStride { axis, stride } => {
                write!(
                    f,
                    "input axis {axis} of extent <= 1 has stride {stride}, not 0"
                )
            }
            DecodeError::OutputSingletonStride { axis, stride } => {
                write!(
                    f,
                    "output axis {axis} of extent <= 1 has stride {stride}, not 0"
                )
            }
            DecodeError::InputSpanOverflow => f.write_str("input span overflows u64"),
            DecodeError::OutputSpanOverflow => f.write_str("output span overflows u64"),
            DecodeError::InputSpan { expected, found } => {
                write!(f, "input span {found} bytes should be {expected}")
            }
            DecodeError::OutputSpan { expected, found } => {
                write!(f, "output span {found} bytes should be {expected}")
            }
            DecodeError::InputOverlap { axis } => {
                write!(f, "input strides overlap at axis {axis}")
            }
            DecodeError::OutputOverlap { axis } => {
                write!(f, "output strides overlap at axis {axis}")
            }
            DecodeError::InputContiguousFlag { expected } => {
                write!(f, "input contiguous flag should be {expected}")
            }
            DecodeError::OutputContiguousFlag { expected } => {
                write!(f, "output contiguous flag should be {expected}")
            }
            DecodeError::InputAddress { address } => {
                write!(
                    f,
                    "input address 0x{address:x} is outside the 32-bit domain"
                )
            }
            DecodeError::OutputAddress { address } => {
                write!(
                    f,
                    "output address 0x{address:x} is outside the 32-bit domain"
                )
            }
            DecodeError::InputRange { address, span } => write!(
                f,
                "input address 0x{address:x} plus span {span} exceeds the 32-bit domain"
            ),
            DecodeError::OutputRange { address, span } => write!(
                f,
                "output address 0x{address:x} plus span {span} exceeds the 32-bit domain"
            ),
            DecodeError::InputMisaligned { address, align } => {
                write!(
                    f,
                    "input address 0x{address:x} is not aligned to {align} bytes"
                )
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

/// A validated Quant v1 descriptor (SPEC §7): real enums and flags, decoded multiplier,
/// and every derived field consistent with its recomputation.
///
/// Fields are public so a codec can build one; [`QuantRepr::emit`] writes whatever it holds
/// and [`QuantRepr::parse`] is the only way to know a descriptor is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantRepr {
    /// Input dtype (`F32`, `BF16` or `F16`).
    pub dtype: DType,
    /// Wire rank, 1..=6.
    pub rank: u8,
    /// Contiguity flags.
    pub flags: QuantFlags,
    /// Input bus address (0 when relocatable).
    pub input_address: u32,
    /// Output bus address (0 when relocatable).
    pub output_address: u32,
    /// Element count (0 when empty).
    pub elements: u64,
    /// Input accessed span in bytes (0 when empty).
    pub input_span: u64,
    /// Output accessed span in bytes (0 when empty).
    pub output_span: u64,
    /// Extents in elements, unused axes 0.
    pub extents: [u64; MAX_RANK],
    /// Input byte strides, unused and extent-0/1 axes 0.
    pub input_strides: [u64; MAX_RANK],
    /// Output byte strides, unused and extent-0/1 axes 0.
    pub output_strides: [u64; MAX_RANK],
    /// The multiplier, decoded.
    pub multiplier: Multiplier,
    /// Zero point, in [-128, 127].
    pub zero_point: i32,
    /// Integer rounding mode.
    pub rounding: Rounding,
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

/// Axis index as `u8` for error values (axes are < 6).
fn axis_u8(axis: usize) -> u8 {
    u8::try_from(axis).unwrap_or(u8::MAX)
}

/// The Quant wire contiguity rule (SPEC §7): every axis of extent > 1 among the first
/// `rank` has stride = `elem` × product of the later extents.
pub fn is_contiguous(
    rank: usize,
    extents: &[u64; MAX_RANK],
    strides: &[u64; MAX_RANK],
    elem: u64,
) -> bool {
    let mut expected = Some(elem);
    for (e, s) in extents.iter().zip(strides.iter()).take(rank).rev() {
        if *e > 1 && Some(*s) != expected {
            return false;
        }
        expected = expected.and_then(|x| x.checked_mul(*e));
    }
    true
}

/// `elem + Σ stride·(extent − 1)` over axes of extent > 1, checked.
fn span_of(extents: &[u64; MAX_RANK], strides: &[u64; MAX_RANK], elem: u64) -> Option<u64> {
    let mut span = elem;
    for (e, s) in extents.iter().zip(strides.iter()) {
        if *e > 1 {
            span = span.checked_add(s.checked_mul(e.checked_sub(1)?)?)?;
        }
    }
    Some(span)
}

/// The conservative nonoverlap proof; `Err(axis)` names the first axis that fails.
fn nonoverlap(extents: &[u64; MAX_RANK], strides: &[u64; MAX_RANK], elem: u64) -> Result<(), u8> {
    let mut order: heapless::Vec<(u64, u64, usize), MAX_RANK> = heapless::Vec::new();
    for (axis, (e, s)) in extents.iter().zip(strides.iter()).enumerate() {
        if *e > 1 {
            // At most MAX_RANK axes exist, so the push cannot fail.
            let _ = order.push((*s, *e, axis));
        }
    }
    order.sort_unstable_by_key(|&(s, _, axis)| (s, axis));
    let mut covered = elem;
    for &(stride, extent, axis) in order.iter() {
        if stride < covered {
            return Err(axis_u8(axis));
        }
        covered = stride
            .checked_mul(extent.saturating_sub(1))
            .and_then(|x| x.checked_add(covered))
            .ok_or(axis_u8(axis))?;
    }
    Ok(())
}

/// Checks one port's strides for a packet; `input` selects the input-side error variants.
fn check_strides(
    rank: usize,
    extents: &[u64; MAX_RANK],
    strides: &[u64; MAX_RANK],
    elem: u64,
    empty: bool,
    input: bool,
) -> Result<(), DecodeError> {
    for (axis, (e, s)) in extents.iter().zip(strides.iter()).enumerate().take(rank) {
        let (e, s, axis) = (*e, *s, axis_u8(axis));
        if e <= 1 {
            if s != 0 {
                return Err(if input {
                    DecodeError::InputSingletonStride { axis, stride: s }
                } else {
                    DecodeError::OutputSingletonStride { axis, stride: s }
                });
            }
            continue;
        }
        if s.checked_rem(elem) != Some(0) {
            // Only the input can fail this: output elements are one byte.
            return Err(DecodeError::InputStrideNotMultiple { axis, stride: s });
        }
        if s == 0 && !empty {
            return Err(if input {
                DecodeError::InputZeroStride { axis }
            } else {
                DecodeError::OutputZeroStride { axis }
            });
        }
    }
    Ok(())
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

impl QuantRepr {
    /// Checks every rule of SPEC §7 on a raw descriptor, recomputing each derived field.
    ///
    /// Zero address slots are accepted (relocatable packets); nonzero slots are checked for
    /// the 32-bit domain, range, alignment and port overlap. Order of checks: header (magic,
    /// version, byte length, dtype, rank, flag bits, reserved words), unused axes,
    /// parameters, element count, strides and spans per port, nonoverlap, contiguity flags,
    /// addresses.
    ///
    /// # Errors
    ///
    /// The first failing rule, as a [`DecodeError`] variant (see [`DecodeCode`]).
    pub fn parse(raw: &QuantDescriptorV1) -> Result<QuantRepr, DecodeError> {
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
        let flags = QuantFlags::from_bits(bits).ok_or(DecodeError::UnknownFlags { bits })?;
        if raw.reserved_20.get() != 0 {
            return Err(DecodeError::Reserved20 {
                value: raw.reserved_20.get(),
            });
        }
        if raw.reserved_220.get() != 0 {
            return Err(DecodeError::Reserved220 {
                value: raw.reserved_220.get(),
            });
        }
        let extents = load_u64s(&raw.extents);
        let input_strides = load_u64s(&raw.input_strides);
        let output_strides = load_u64s(&raw.output_strides);
        let rank_usize = usize::from(rank);
        for (axis, ((e, si), so)) in extents
            .iter()
            .zip(input_strides.iter())
            .zip(output_strides.iter())
            .enumerate()
            .skip(rank_usize)
        {
            let axis = axis_u8(axis);
            if *e != 0 {
                return Err(DecodeError::UnusedExtent { axis, value: *e });
            }
            if *si != 0 {
                return Err(DecodeError::UnusedInputStride { axis, value: *si });
            }
            if *so != 0 {
                return Err(DecodeError::UnusedOutputStride { axis, value: *so });
            }
        }
        let multiplier = Multiplier::from_bits(raw.multiplier.get()).map_err(|e| match e {
            AdmissionError::MultiplierNotFinite { bits } => {
                DecodeError::MultiplierNotFinite { bits }
            }
            _ => DecodeError::MultiplierNotPositive {
                bits: raw.multiplier.get(),
            },
        })?;
        let zero_point = raw.zero_point.get();
        if !(-128..=127).contains(&zero_point) {
            return Err(DecodeError::ZeroPoint { value: zero_point });
        }
        let rounding =
            Rounding::try_from(raw.rounding.get()).map_err(|_| DecodeError::Rounding {
                code: raw.rounding.get(),
            })?;

        let active = || extents.iter().take(rank_usize);
        let empty = active().any(|&e| e == 0);
        let expected_elements = if empty {
            0
        } else {
            active()
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

        let elem = dtype.size_u64();
        check_strides(rank_usize, &extents, &input_strides, elem, empty, true)?;
        check_strides(rank_usize, &extents, &output_strides, 1, empty, false)?;
        let (expected_in, expected_out) = if empty {
            (0, 0)
        } else {
            (
                span_of(&extents, &input_strides, elem).ok_or(DecodeError::InputSpanOverflow)?,
                span_of(&extents, &output_strides, 1).ok_or(DecodeError::OutputSpanOverflow)?,
            )
        };
        let input_span = raw.input_span.get();
        if input_span != expected_in {
            return Err(DecodeError::InputSpan {
                expected: expected_in,
                found: input_span,
            });
        }
        let output_span = raw.output_span.get();
        if output_span != expected_out {
            return Err(DecodeError::OutputSpan {
                expected: expected_out,
                found: output_span,
            });
        }
        if !empty {
            nonoverlap(&extents, &input_strides, elem)
                .map_err(|axis| DecodeError::InputOverlap { axis })?;
            nonoverlap(&extents, &output_strides, 1)
                .map_err(|axis| DecodeError::OutputOverlap { axis })?;
        }
        let in_contiguous = is_contiguous(rank_usize, &extents, &input_strides, elem);
        if flags.contains(QuantFlags::INPUT_CONTIGUOUS) != in_contiguous {
            return Err(DecodeError::InputContiguousFlag {
                expected: in_contiguous,
            });
        }
        let out_contiguous = is_contiguous(rank_usize, &extents, &output_strides, 1);
        if flags.contains(QuantFlags::OUTPUT_CONTIGUOUS) != out_contiguous {
            return Err(DecodeError::OutputContiguousFlag {
                expected: out_contiguous,
            });
        }

        let in_slot = raw.input_address.get();
        let out_slot = raw.output_address.get();
        let input_address = check_address(in_slot, input_span, true)?;
        let output_address = check_address(out_slot, output_span, false)?;
        if in_slot != 0 && !empty && in_slot.checked_rem(elem) != Some(0) {
            return Err(DecodeError::InputMisaligned {
                address: in_slot,
                align: elem,
            });
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
        Ok(QuantRepr {
            dtype,
            rank,
            flags,
            input_address,
            output_address,
            elements,
            input_span,
            output_span,
            extents,
            input_strides,
            output_strides,
            multiplier,
            zero_point,
            rounding,
        })
    }

    /// Casts `bytes` (exactly [`SIZE`] long) and parses them; see [`QuantRepr::parse`].
    ///
    /// # Errors
    ///
    /// [`DecodeError::Length`] when `bytes` is not 224 bytes long, else as `parse`.
    pub fn parse_bytes(bytes: &[u8]) -> Result<QuantRepr, DecodeError> {
        QuantRepr::parse(QuantDescriptorV1::new_checked(bytes)?)
    }

    /// Writes this representation into a raw descriptor (every byte is written).
    pub fn emit(&self, raw: &mut QuantDescriptorV1) {
        *raw = QuantDescriptorV1 {
            magic: MAGIC,
            version: U16::new(VERSION),
            // SIZE is 224 (statically asserted), which fits u16.
            byte_length: U16::new(SIZE as u16),
            dtype: U32::new(self.dtype.wire_code().unwrap_or(0)),
            rank: U32::new(u32::from(self.rank)),
            flags: U32::new(self.flags.bits()),
            reserved_20: U32::ZERO,
            input_address: U64::new(u64::from(self.input_address)),
            output_address: U64::new(u64::from(self.output_address)),
            elements: U64::new(self.elements),
            input_span: U64::new(self.input_span),
            output_span: U64::new(self.output_span),
            extents: store_u64s(&self.extents),
            input_strides: store_u64s(&self.input_strides),
            output_strides: store_u64s(&self.output_strides),
            multiplier: U32::new(self.multiplier.bits()),
            zero_point: I32::new(self.zero_point),
            rounding: U32::new(self.rounding.code()),
            reserved_220: U32::ZERO,
        };
    }

    /// The descriptor bytes of this representation.
    pub fn to_bytes(&self) -> [u8; SIZE] {
        let mut raw = QuantDescriptorV1::new_zeroed();
        self.emit(&mut raw);
        let mut out = [0u8; SIZE];
        out.copy_from_slice(raw.as_bytes());
        out
    }

    /// Buffer length needed by [`QuantRepr::emit`]: [`SIZE`] bytes.
    pub const fn buffer_len(&self) -> usize {
        SIZE
    }

    /// Whether the packet is a no-op (element count 0).
    pub const fn is_empty(&self) -> bool {
        self.elements == 0
    }
}

impl QuantDescriptorV1 {
    /// Size in bytes.
    pub const SIZE: usize = SIZE;

    /// Views `bytes` as a descriptor without any semantic check.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Length`] unless `bytes` is exactly [`SIZE`] bytes long.
    pub fn new_checked(bytes: &[u8]) -> Result<&QuantDescriptorV1, DecodeError> {
        QuantDescriptorV1::ref_from_bytes(bytes)
            .map_err(|_| DecodeError::Length { found: bytes.len() })
    }

    /// Every field with its byte offset, in wire order (34 entries; array slots separately),
    /// for listings such as `simak packet decode`. Values are shown raw, whatever they are.
    pub fn fields(&self) -> [Field; FIELD_COUNT] {
        let u64s = |name: [&'static str; MAX_RANK], base: usize, values: &[U64; MAX_RANK]| {
            let mut out = [Field {
                offset: 0,
                name: "",
                value: FieldValue::U64(0),
            }; MAX_RANK];
            for (k, ((o, n), v)) in out.iter_mut().zip(name).zip(values.iter()).enumerate() {
                *o = Field {
                    offset: base.saturating_add(k.saturating_mul(8)),
                    name: n,
                    value: FieldValue::U64(v.get()),
                };
            }
            out
        };
        let f = |offset, name, value| Field {
            offset,
            name,
            value,
        };
        let [e0, e1, e2, e3, e4, e5] = u64s(EXTENT_NAMES, field::EXTENTS, &self.extents);
        let [i0, i1, i2, i3, i4, i5] = u64s(
            INPUT_STRIDE_NAMES,
            field::INPUT_STRIDES,
            &self.input_strides,
        );
        let [o0, o1, o2, o3, o4, o5] = u64s(
            OUTPUT_STRIDE_NAMES,
            field::OUTPUT_STRIDES,
            &self.output_strides,
        );
        [
            f(field::MAGIC, "magic", FieldValue::Magic(self.magic)),
            f(
                field::VERSION,
                "version",
                FieldValue::U16(self.version.get()),
            ),
            f(
                field::BYTE_LENGTH,
                "byte_length",
                FieldValue::U16(self.byte_length.get()),
            ),
            f(field::DTYPE, "dtype", FieldValue::U32(self.dtype.get())),
            f(field::RANK, "rank", FieldValue::U32(self.rank.get())),
            f(field::FLAGS, "flags", FieldValue::Hex32(self.flags.get())),
            f(
                field::RESERVED_20,
                "reserved_20",
                FieldValue::Hex32(self.reserved_20.get()),
            ),
            f(
                field::INPUT_ADDRESS,
                "input_address",
                FieldValue::Hex64(self.input_address.get()),
            ),
            f(
                field::OUTPUT_ADDRESS,
                "output_address",
                FieldValue::Hex64(self.output_address.get()),
            ),
            f(
                field::ELEMENTS,
                "elements",
                FieldValue::U64(self.elements.get()),
            ),
            f(
                field::INPUT_SPAN,
                "input_span",
                FieldValue::U64(self.input_span.get()),
            ),
            f(
                field::OUTPUT_SPAN,
                "output_span",
                FieldValue::U64(self.output_span.get()),
            ),
            e0,
            e1,
            e2,
            e3,
            e4,
            e5,
            i0,
            i1,
            i2,
            i3,
            i4,
            i5,
            o0,
            o1,
            o2,
            o3,
            o4,
            o5,
            f(
                field::MULTIPLIER,
                "multiplier",
                FieldValue::Hex32(self.multiplier.get()),
            ),
            f(
                field::ZERO_POINT,
                "zero_point",
                FieldValue::I32(self.zero_point.get()),
            ),
            f(
                field::ROUNDING,
                "rounding",
                FieldValue::U32(self.rounding.get()),
            ),
            f(
                field::RESERVED_220,
                "reserved_220",
                FieldValue::Hex32(self.reserved_220.get()),
            ),
        ]
    }
}

/// Number of entries returned by [`QuantDescriptorV1::fields`].
pub const FIELD_COUNT: usize = 34;

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
const OUTPUT_STRIDE_NAMES: [&str; MAX_RANK] = [
    "output_strides[0]",
    "output_strides[1]",
    "output_strides[2]",
    "output_strides[3]",
    "output_strides[4]",
    "output_strides[5]",
];

/// One descriptor field for listings: byte offset, name and raw value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the descriptor.
    pub offset: usize,
    /// Field name (`extents[2]` for array slots).
    pub name: &'static str,
    /// Raw value.
    pub value: FieldValue,
}

/// A raw field value, with how it is best shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue {
    /// Four magic bytes.
    Magic([u8; 4]),
    /// `u16`, decimal.
    U16(u16),
    /// `u32`, decimal.
    U32(u32),
    /// `u32`, hexadecimal (flags, reserved words, multiplier bits).
    Hex32(u32),
    /// `i32`, decimal.
    I32(i32),
    /// `u64`, decimal.
    U64(u64),
    /// `u64`, hexadecimal (address slots).
    Hex64(u64),
}

impl FieldValue {
    /// The value widened to `i128` (magic bytes read little-endian), for JSON output.
    pub fn as_i128(&self) -> i128 {
        match *self {
            FieldValue::Magic(m) => i128::from(u32::from_le_bytes(m)),
            FieldValue::U16(v) => i128::from(v),
            FieldValue::U32(v) | FieldValue::Hex32(v) => i128::from(v),
            FieldValue::I32(v) => i128::from(v),
            FieldValue::U64(v) | FieldValue::Hex64(v) => i128::from(v),
        }
    }
}

impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FieldValue::Magic(m) => {
                f.write_str("\"")?;
                for b in m {
                    if b.is_ascii_graphic() {
                        write!(f, "{}", char::from(b))?;
                    } else {
                        write!(f, "\\x{b:02x}")?;
                    }
                }
                f.write_str("\"")
            }
            FieldValue::U16(v) => write!(f, "{v}"),
            FieldValue::U32(v) => write!(f, "{v}"),
            FieldValue::Hex32(v) => write!(f, "0x{v:08x}"),
            FieldValue::I32(v) => write!(f, "{v}"),
            FieldValue::U64(v) => write!(f, "{v}"),
            FieldValue::Hex64(v) => write!(f, "0x{v:x}"),
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>3}  {:<18} {}", self.offset, self.name, self.value)
    }
}

/// Lists every field, one per line: offset, name, raw value.
impl fmt::Display for QuantDescriptorV1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for field in self.fields() {
            writeln!(f, "{field}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test {
    use super::*;

    /// FP32 [2, 3] contiguous, multiplier 1.0, zero point -3, toward-zero, bound at
    /// input 0x1000 and output 0x2000. Written by hand from the SPEC §7 table.
    #[rustfmt::skip]
    const GOLDEN_F32_2X3: [u8; SIZE] = [
        // 0: magic "SKQT", version 1, byte length 224 (0xe0)
        b'S', b'K', b'Q', b'T', 0x01, 0x00, 0xe0, 0x00,
        // 8: dtype FP32 = 3, rank 2
        0x03, 0, 0, 0, 0x02, 0, 0, 0,
        // 16: flags = input|output contiguous = 3, reserved 0
        0x03, 0, 0, 0, 0, 0, 0, 0,
        // 24: input address 0x1000
        0x00, 0x10, 0, 0, 0, 0, 0, 0,
        // 32: output address 0x2000
        0x00, 0x20, 0, 0, 0, 0, 0, 0,
        // 40: elements 6
        0x06, 0, 0, 0, 0, 0, 0, 0,
        // 48: input span 24
        0x18, 0, 0, 0, 0, 0, 0, 0,
        // 56: output span 6
        0x06, 0, 0, 0, 0, 0, 0, 0,
        // 64: extents 2, 3, 0, 0, 0, 0
        0x02, 0, 0, 0, 0, 0, 0, 0,  0x03, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        // 112: input strides 12, 4
        0x0c, 0, 0, 0, 0, 0, 0, 0,  0x04, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        // 160: output strides 3, 1
        0x03, 0, 0, 0, 0, 0, 0, 0,  0x01, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        // 208: multiplier 1.0 = 0x3f800000, zero point -3, rounding toward-zero 0
        0x00, 0x00, 0x80, 0x3f,  0xfd, 0xff, 0xff, 0xff,  0, 0, 0, 0,
        // 220: reserved
        0, 0, 0, 0,
    ];

    fn repr_f32_2x3() -> QuantRepr {
        QuantRepr {
            dtype: DType::F32,
            rank: 2,
            flags: QuantFlags::INPUT_CONTIGUOUS | QuantFlags::OUTPUT_CONTIGUOUS,
            input_address: 0x1000,
            output_address: 0x2000,
            elements: 6,
            input_span: 24,
            output_span: 6,
            extents: [2, 3, 0, 0, 0, 0],
            input_strides: [12, 4, 0, 0, 0, 0],
            output_strides: [3, 1, 0, 0, 0, 0],
            multiplier: Multiplier::from_bits(0x3f80_0000).unwrap(),
            zero_point: -3,
            rounding: Rounding::TowardZero,
        }
    }

    #[test]
    fn field_reads() {
        let raw = QuantDescriptorV1::new_checked(&GOLDEN_F32_2X3).unwrap();
        assert_eq!(raw.magic, *b"SKQT");
        assert_eq!(raw.version.get(), 1);
        assert_eq!(raw.byte_length.get(), 224);
        assert_eq!(raw.dtype.get(), 3);
        assert_eq!(raw.rank.get(), 2);
        assert_eq!(raw.flags.get(), 3);
        assert_eq!(raw.input_address.get(), 0x1000);
        assert_eq!(raw.output_address.get(), 0x2000);
        assert_eq!(raw.elements.get(), 6);
        assert_eq!(raw.input_span.get(), 24);
        assert_eq!(raw.output_span.get(), 6);
        assert_eq!(raw.extents[1].get(), 3);
        assert_eq!(raw.input_strides[0].get(), 12);
        assert_eq!(raw.output_strides[1].get(), 1);
        assert_eq!(raw.multiplier.get(), 0x3f80_0000);
        assert_eq!(raw.zero_point.get(), -3);
        assert_eq!(raw.rounding.get(), 0);
    }

    #[test]
    fn field_writes_land_at_their_offsets() {
        let mut raw = QuantDescriptorV1::new_zeroed();
        raw.zero_point = I32::new(-2);
        raw.output_strides[5] = U64::new(0x0102_0304_0506_0708);
        let bytes = raw.as_bytes();
        assert_eq!(
            &bytes[field::ZERO_POINT..field::ZERO_POINT + 4],
            &[0xfe, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            &bytes[field::OUTPUT_STRIDES + 40..field::OUTPUT_STRIDES + 48],
            &[8, 7, 6, 5, 4, 3, 2, 1]
        );
        assert_eq!(bytes.iter().filter(|&&b| b != 0).count(), 12);
    }

    #[test]
    fn parse_golden() {
        assert_eq!(QuantRepr::parse_bytes(&GOLDEN_F32_2X3), Ok(repr_f32_2x3()));
    }

    #[test]
    fn emit_golden() {
        assert_eq!(repr_f32_2x3().to_bytes(), GOLDEN_F32_2X3);
    }

    #[test]
    fn every_wrong_length_is_rejected() {
        let mut long = [0u8; SIZE + 1];
        long[..SIZE].copy_from_slice(&GOLDEN_F32_2X3);
        for len in 0..=SIZE + 1 {
            let r = QuantRepr::parse_bytes(&long[..len]);
            if len == SIZE {
                assert!(r.is_ok());
            } else {
                assert_eq!(r, Err(DecodeError::Length { found: len }));
            }
        }
    }

    #[test]
    fn codes_are_unique_nonzero_and_round_trip() {
        for (k, c) in DecodeCode::ALL.iter().enumerate() {
            assert_eq!(c.get() as usize, k + 1);
            assert_eq!(DecodeCode::from_u16(c.get()), Some(*c));
        }
        assert_eq!(DecodeCode::from_u16(0), None);
        assert_eq!(DecodeCode::from_u16(40), None);
    }

    #[test]
    fn listing_names_offsets() {
        let raw = QuantDescriptorV1::new_checked(&GOLDEN_F32_2X3).unwrap();
        let fields = raw.fields();
        let offsets: std::vec::Vec<usize> = fields.iter().map(|f| f.offset).collect();
        let mut sorted = offsets.clone();
        sorted.sort_unstable();
        assert_eq!(offsets, sorted);
        assert_eq!(fields[13].name, "extents[1]");
        assert_eq!(fields[13].offset, 72);
        assert_eq!(fields[13].value, FieldValue::U64(3));
        let text = std::format!("{raw}");
        assert!(
            text.starts_with("  0  magic              \"SKQT\"\n"),
            "{text}"
        );
        assert!(text.contains("212  zero_point         -3\n"), "{text}");
    }

    extern crate std;
}
