//! Admission errors: one variant per rejected rule, carrying the offending values.
//!
//! Display text is short and lowercase with no trailing period (STYLE §4). The CLI adds
//! file and tensor context.

use core::fmt;

use crate::dtype::DType;
use crate::layout::TileAxis;

/// Which port of an operation a rule was checked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Port {
    /// The (only) input port.
    Input,
    /// The (only) output port.
    Output,
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Port::Input => "input",
            Port::Output => "output",
        })
    }
}

/// Why `check_inference` rejected a request (SPEC §2, §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AdmissionError {
    /// The port's dtype is not one the operation admits on that port.
    DType {
        /// Port checked.
        port: Port,
        /// The dtype found.
        found: DType,
    },
    /// The rank is outside what the operation admits (CastTess and QuantTess need 1..=6).
    Rank {
        /// Rank found.
        rank: usize,
        /// Smallest admitted rank.
        min: usize,
        /// Largest admitted rank.
        max: usize,
    },
    /// Input and output logical extents differ on an axis.
    ShapeMismatch {
        /// Logical axis index.
        axis: usize,
        /// Input extent on that axis.
        input: u64,
        /// Output extent on that axis.
        output: u64,
    },
    /// A byte stride is not a multiple of the element size.
    StrideNotMultiple {
        /// Port checked.
        port: Port,
        /// Logical axis index.
        axis: usize,
        /// The stride in bytes.
        stride: u64,
        /// Element size in bytes.
        elem_size: u64,
    },
    /// An axis of extent > 1 has stride 0.
    ZeroStride {
        /// Port checked.
        port: Port,
        /// Logical axis index.
        axis: usize,
        /// Extent of that axis.
        extent: u64,
    },
    /// The element count or the accessed span overflows `u64`.
    SpanOverflow {
        /// Port checked.
        port: Port,
    },
    /// The conservative nonoverlap proof failed: sorted by stride, this axis's stride is
    /// smaller than the span of all smaller-stride axes together.
    Overlap {
        /// Port checked.
        port: Port,
        /// Logical axis whose stride is too small.
        axis: usize,
        /// Its stride in bytes.
        stride: u64,
        /// The span in bytes it had to reach.
        required: u64,
    },
    /// The multiplier is NaN or infinite (its binary32 bits).
    MultiplierNotFinite {
        /// binary32 bits of the multiplier.
        bits: u32,
    },
    /// The multiplier is zero or negative (its binary32 bits).
    MultiplierNotPositive {
        /// binary32 bits of the multiplier.
        bits: u32,
    },
    /// The zero point is outside [-128, 127].
    ZeroPointOutOfRange {
        /// The zero point given.
        zero_point: i32,
    },
    /// A rounding code is not one of the four of SPEC §7.
    RoundingCode {
        /// The raw code.
        code: u32,
    },
    /// An `MlaTiled` role names a logical axis at or past the rank (SPEC §5).
    TileAxisOutOfRange {
        /// The role (D, H, W or C).
        role: TileAxis,
        /// The logical axis it names.
        axis: u8,
        /// The rank.
        rank: usize,
    },
    /// Two `MlaTiled` roles name the same logical axis (SPEC §5).
    TileAxisRepeated {
        /// The later role naming it.
        role: TileAxis,
        /// The logical axis.
        axis: u8,
    },
    /// An `MlaTiled` tile extent is 0, or above its nonzero axis extent (1 for an absent
    /// role) (SPEC §5).
    TileExtent {
        /// The role (D, H, W or C).
        role: TileAxis,
        /// The tile extent given.
        tile: u32,
        /// The extent of the axis playing that role.
        extent: u64,
    },
    /// A tiled layout was asked for a plane count other than 1 (INT8) or 2 (BF16).
    Planes {
        /// The plane count given.
        planes: u8,
    },
    /// A spec given as slices has a stride list whose length is not the rank (the number of
    /// extents).
    StridesRank {
        /// Port checked.
        port: Port,
        /// Extents given (the rank).
        extents: usize,
        /// Strides given.
        strides: usize,
    },
    /// An input-side op (CastTess, QuantTess) was given the CBlock16 channel encoding,
    /// which only the MLA's outputs use (SPEC §12.1).
    InputSideEncoding,
    /// An input-side op (CastTess, QuantTess) was given tile alignment 1, which only the
    /// MLA's outputs use (SPEC §12.1).
    InputSideTileAlign,
    /// A model archive's channel flags (`align_c16`, `cblock`) are (false, true), which
    /// name no encoding (SPEC §12.1).
    ChannelFlags,
    /// A dequantization zero point is outside its input dtype's range (INT8 [-128, 127],
    /// INT16 [-32768, 32767]; SPEC §12.2).
    DequantZeroPoint {
        /// The integer input dtype.
        dtype: DType,
        /// The zero point given.
        zero_point: i32,
    },
    /// A Detess op's input in PadTo16 or CBlock16 has a C tile extent that is neither the
    /// C extent nor a multiple of 16 (SPEC §12.1).
    C16TileChannels {
        /// The C tile extent.
        tile: u32,
        /// The C extent.
        extent: u64,
    },
    /// An OFM buffer was given no heads or more than 32 (SPEC §12.1).
    HeadCount {
        /// Heads given.
        count: usize,
    },
    /// A head's byte offset is at or past the end of the OFM buffer (SPEC §12.1).
    HeadOffset {
        /// The head's index.
        head: usize,
        /// Its byte offset.
        offset: u64,
        /// The buffer's length in bytes.
        buffer: u64,
    },
    /// A head's span runs past the end of the OFM buffer (SPEC §12.1).
    HeadSpan {
        /// The head's index.
        head: usize,
        /// Its byte offset.
        offset: u64,
        /// Its span in bytes.
        span: u64,
        /// The buffer's length in bytes.
        buffer: u64,
    },
    /// Two heads' byte ranges overlap in the OFM buffer (SPEC §12.1).
    HeadOverlap {
        /// The later head's index.
        head: usize,
        /// The earlier head it overlaps.
        other: usize,
    },
    /// A Preproc frame or parameter rule (SPEC §13; codes 0x240..=0x25f).
    Preproc(crate::ops::preproc::PreprocError),
}

impl AdmissionError {
    /// The stable numeric code of this rejection (`docs/errors.md`): a rule with a
    /// descriptor twin has the twin's number (SPEC §7, 1..=255), the others are in
    /// 0x200..=0x2ff.
    pub const fn code(&self) -> u32 {
        match *self {
            AdmissionError::DType {
                port: Port::Input, ..
            } => 5,
            AdmissionError::DType {
                port: Port::Output, ..
            } => 0x201,
            AdmissionError::Rank { .. } => 6,
            AdmissionError::ShapeMismatch { .. } => 0x202,
            AdmissionError::StrideNotMultiple {
                port: Port::Input, ..
            } => 19,
            AdmissionError::StrideNotMultiple {
                port: Port::Output, ..
            } => 0x203,
            AdmissionError::ZeroStride {
                port: Port::Input, ..
            } => 20,
            AdmissionError::ZeroStride {
                port: Port::Output, ..
            } => 21,
            AdmissionError::SpanOverflow { port: Port::Input } => 24,
            AdmissionError::SpanOverflow { port: Port::Output } => 25,
            AdmissionError::Overlap {
                port: Port::Input, ..
            } => 28,
            AdmissionError::Overlap {
                port: Port::Output, ..
            } => 29,
            AdmissionError::MultiplierNotFinite { .. } => 13,
            AdmissionError::MultiplierNotPositive { .. } => 14,
            AdmissionError::ZeroPointOutOfRange { .. } => 15,
            AdmissionError::RoundingCode { .. } => 16,
            AdmissionError::TileAxisOutOfRange { .. } => 43,
            AdmissionError::TileAxisRepeated { .. } => 44,
            AdmissionError::TileExtent { .. } => 47,
            AdmissionError::Planes { .. } => 0x204,
            AdmissionError::StridesRank {
                port: Port::Input, ..
            } => 0x205,
            AdmissionError::StridesRank {
                port: Port::Output, ..
            } => 0x206,
            AdmissionError::InputSideEncoding => 0x220,
            AdmissionError::InputSideTileAlign => 0x221,
            AdmissionError::ChannelFlags => 0x222,
            AdmissionError::DequantZeroPoint { .. } => 0x223,
            AdmissionError::C16TileChannels { .. } => 0x224,
            AdmissionError::HeadCount { .. } => 0x225,
            AdmissionError::HeadOffset { .. } => 0x226,
            AdmissionError::HeadSpan { .. } => 0x227,
            AdmissionError::HeadOverlap { .. } => 0x228,
            AdmissionError::Preproc(e) => e.code(),
        }
    }
}

impl fmt::Display for AdmissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AdmissionError::DType { port, found } => {
                write!(f, "{port} dtype {found} is not admitted by this operation")
            }
            AdmissionError::Rank { rank, min, max } => {
                write!(f, "rank {rank} is outside {min}..={max}")
            }
            AdmissionError::ShapeMismatch {
                axis,
                input,
                output,
            } => write!(
                f,
                "input extent {input} and output extent {output} differ on axis {axis}"
            ),
            AdmissionError::StrideNotMultiple {
                port,
                axis,
                stride,
                elem_size,
            } => write!(
                f,
                "{port} stride {stride} bytes on axis {axis} is not a multiple of the element size {elem_size}"
            ),
            AdmissionError::ZeroStride { port, axis, extent } => {
                write!(f, "{port} axis {axis} has extent {extent} but stride 0")
            }
            AdmissionError::SpanOverflow { port } => {
                write!(f, "{port} element count or accessed span overflows u64")
            }
            AdmissionError::Overlap {
                port,
                axis,
                stride,
                required,
            } => write!(
                f,
                "{port} axis {axis} stride {stride} bytes is below the {required}-byte span of the faster axes (nonoverlap proof failed)"
            ),
            AdmissionError::MultiplierNotFinite { bits } => {
                write!(f, "multiplier 0x{bits:08x} is not finite")
            }
            AdmissionError::MultiplierNotPositive { bits } => {
                write!(f, "multiplier 0x{bits:08x} is not > 0")
            }
            AdmissionError::ZeroPointOutOfRange { zero_point } => {
                write!(f, "zero point {zero_point} is outside [-128, 127]")
            }
            AdmissionError::RoundingCode { code } => {
                write!(f, "rounding code {code} is not one of 0..=3")
            }
            AdmissionError::TileAxisOutOfRange { role, axis, rank } => {
                write!(f, "{role} axis {axis} is outside rank {rank}")
            }
            AdmissionError::TileAxisRepeated { role, axis } => {
                write!(f, "axis {axis} is named twice (again as {role})")
            }
            AdmissionError::TileExtent { role, tile, extent } => {
                write!(f, "{role} tile extent {tile} is outside 1..={extent}")
            }
            AdmissionError::Planes { planes } => {
                write!(f, "{planes} byte planes per element is not 1, 2 or 4")
            }
            AdmissionError::StridesRank {
                port,
                extents,
                strides,
            } => write!(
                f,
                "{port} has {strides} strides for {extents} extents (one stride per axis)"
            ),
            AdmissionError::InputSideEncoding => f.write_str(
                "the cblock16 encoding is admitted only on the output side (detess ops)",
            ),
            AdmissionError::InputSideTileAlign => {
                f.write_str("tile alignment 1 is admitted only on the output side (detess ops)")
            }
            AdmissionError::ChannelFlags => {
                f.write_str("channel flags (align_c16 = false, cblock = true) name no encoding")
            }
            AdmissionError::DequantZeroPoint { dtype, zero_point } => {
                write!(f, "zero point {zero_point} is outside the range of {dtype}")
            }
            AdmissionError::C16TileChannels { tile, extent } => write!(
                f,
                "c tile extent {tile} is neither the c extent {extent} nor a multiple of 16"
            ),
            AdmissionError::HeadCount { count } => {
                write!(f, "{count} heads is outside 1..=32")
            }
            AdmissionError::HeadOffset {
                head,
                offset,
                buffer,
            } => write!(
                f,
                "head {head} offset {offset} is at or past the end of the {buffer}-byte buffer"
            ),
            AdmissionError::HeadSpan {
                head,
                offset,
                span,
                buffer,
            } => write!(
                f,
                "head {head} ({span} bytes at offset {offset}) runs past the end of the {buffer}-byte buffer"
            ),
            AdmissionError::HeadOverlap { head, other } => {
                write!(f, "head {head} overlaps head {other}")
            }
            AdmissionError::Preproc(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for AdmissionError {}
