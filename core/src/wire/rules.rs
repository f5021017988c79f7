//! The descriptor rules (SPEC §7): one [`DecodeError`] for every native entry, one variant a
//! rule, each with its stable [`DecodeCode`].
//!
//! A rule two ports share is one variant with a [`Port`] (`ZeroStride { port, .. }`), and
//! the port picks its number: the numbers 1..=50 were fixed when each port had a variant of
//! its own and are never reused or renumbered. Which entry can report which code is listed
//! with the entry (`quant::CODES`, `casttess::CODES`).
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use core::fmt;

use crate::error::{AdmissionError, Port};
use crate::layout::TileAxis;

/// Declares [`DecodeCode`] and [`DecodeCode::ALL`] from one list, in numeric order, so a
/// new code is one line and `ALL` cannot miss it.
macro_rules! decode_codes {
    ($($(#[$doc:meta])* $name:ident = $n:literal,)*) => {
        /// Stable numeric codes of [`DecodeError`], as reported across the firmware boundary.
        ///
        /// 0 is reserved for success; codes are never reused or renumbered.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[repr(u16)]
        pub enum DecodeCode {
            $($(#[$doc])* $name = $n,)*
        }

        impl DecodeCode {
            /// Every code, in numeric order (the order of the one list that declares
            /// them); each entry's own list is `CODES` beside its decoder.
            pub const ALL: [DecodeCode; [$($n),*].len()] = [$(DecodeCode::$name),*];
        }
    };
}

decode_codes! {
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
    /// [`DecodeError::Reserved`] at offset 20.
    Reserved20 = 8,
    /// [`DecodeError::Reserved`] at offset 220.
    Reserved220 = 9,
    /// [`DecodeError::UnusedExtent`].
    UnusedExtent = 10,
    /// [`DecodeError::UnusedStride`] on the input.
    UnusedInputStride = 11,
    /// [`DecodeError::UnusedStride`] on the output.
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
    /// [`DecodeError::ZeroStride`] on the input.
    InputZeroStride = 20,
    /// [`DecodeError::ZeroStride`] on the output.
    OutputZeroStride = 21,
    /// [`DecodeError::SingletonStride`] on the input.
    InputSingletonStride = 22,
    /// [`DecodeError::SingletonStride`] on the output.
    OutputSingletonStride = 23,
    /// [`DecodeError::SpanOverflow`] on the input.
    InputSpanOverflow = 24,
    /// [`DecodeError::SpanOverflow`] on the output.
    OutputSpanOverflow = 25,
    /// [`DecodeError::Span`] on the input.
    InputSpan = 26,
    /// [`DecodeError::Span`] on the output.
    OutputSpan = 27,
    /// [`DecodeError::Overlap`] on the input.
    InputOverlap = 28,
    /// [`DecodeError::Overlap`] on the output.
    OutputOverlap = 29,
    /// [`DecodeError::ContiguousFlag`] on the input.
    InputContiguousFlag = 30,
    /// [`DecodeError::ContiguousFlag`] on the output.
    OutputContiguousFlag = 31,
    /// [`DecodeError::Address`] on the input.
    InputAddress = 32,
    /// [`DecodeError::Address`] on the output.
    OutputAddress = 33,
    /// [`DecodeError::Range`] on the input.
    InputRange = 34,
    /// [`DecodeError::Range`] on the output.
    OutputRange = 35,
    /// [`DecodeError::Misaligned`] on the input.
    InputMisaligned = 36,
    /// [`DecodeError::PortsOverlap`].
    PortsOverlap = 37,
    /// [`DecodeError::Unbound`] on the input.
    InputUnbound = 38,
    /// [`DecodeError::Unbound`] on the output.
    OutputUnbound = 39,
    /// [`DecodeError::Reserved`] at offset 164.
    Reserved164 = 40,
    /// [`DecodeError::Reserved`] at offset 212.
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
    /// [`DecodeError::Misaligned`] on the output.
    OutputMisaligned = 50,
    /// [`DecodeError::Inadmissible`].
    Inadmissible = 51,
    /// [`DecodeError::Reserved`] at offset 216 (Detess v1 and DetessCast v1).
    Reserved216 = 52,
    /// [`DecodeError::InputDType`].
    InputDType = 53,
    /// [`DecodeError::DTypeMismatch`].
    DTypeMismatch = 54,
    /// [`DecodeError::ChannelFlags`].
    ChannelFlags = 55,
    /// [`DecodeError::C16TileChannels`].
    C16TileChannels = 56,
    /// [`DecodeError::DequantZeroPoint`].
    DequantZeroPoint = 57,
    /// [`DecodeError::OutputStrideNotMultiple`].
    OutputStrideNotMultiple = 58,
    /// [`DecodeError::PreprocRank`].
    PreprocRank = 80,
    /// [`DecodeError::Reserved`] at offset 364.
    Reserved364 = 81,
    /// [`DecodeError::PixelFormat`].
    PixelFormat = 82,
    /// [`DecodeError::OutputKind`].
    OutputKind = 83,
    /// [`DecodeError::UnusedTiledFields`].
    UnusedTiledFields = 84,
    /// [`DecodeError::UnusedQuantParams`].
    UnusedQuantParams = 85,
    /// [`DecodeError::UnusedChannel`].
    UnusedChannel = 86,
    /// [`DecodeError::UnusedPlane`].
    UnusedPlane = 87,
    /// [`DecodeError::TiledOutputStride`].
    TiledOutputStride = 88,
    /// [`DecodeError::OutputExtents`].
    OutputExtents = 89,
    /// [`DecodeError::Frame`] with `PreprocError::OddSize`.
    OddFrameSize = 90,
    /// [`DecodeError::Frame`] with `PreprocError::RowStride`.
    RowStride = 91,
    /// [`DecodeError::Frame`] with `PreprocError::PlaneOverlap`.
    PlaneOverlap = 92,
    /// [`DecodeError::Frame`] with `PreprocError::FrameStride`.
    FrameStride = 93,
    /// [`DecodeError::Frame`] with `PreprocError::NotFinite`.
    NormalizationNotFinite = 94,
    /// [`DecodeError::Frame`] with `PreprocError::DivisorNotPositive`.
    DivisorNotPositive = 95,
    /// [`DecodeError::Frame`] with `PreprocError::StdZero`.
    StdZero = 96,
    /// [`DecodeError::UnusedFrameStride`].
    UnusedFrameStride = 97,
}

impl DecodeCode {
    /// The numeric code (never 0).
    pub const fn get(self) -> u16 {
        self as u16
    }

    /// The code with numeric value `code`, if any.
    pub fn from_u16(code: u16) -> Option<DecodeCode> {
        DecodeCode::ALL.into_iter().find(|c| c.get() == code)
    }
}

/// The codes `a` and `b` hold together, in numeric order: an entry's code list, from the
/// shared prefix's ([`crate::wire::prefix::CODES`]) and its tail's own.
///
/// # Panics
///
/// At compile time (the lists are constants) when `N` is not `A + B`.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
pub const fn merge_codes<const A: usize, const B: usize, const N: usize>(
    a: [DecodeCode; A],
    b: [DecodeCode; B],
) -> [DecodeCode; N] {
    assert!(
        N == A + B,
        "an entry's code list has the prefix's and the tail's codes"
    );
    let mut out = [DecodeCode::Inadmissible; N];
    let (mut i, mut j, mut k) = (0, 0, 0);
    while k < N {
        let take_a = j == B || (i < A && a[i].get() < b[j].get());
        out[k] = if take_a { a[i] } else { b[j] };
        if take_a {
            i += 1;
        } else {
            j += 1;
        }
        k += 1;
    }
    out
}

/// Why a descriptor was rejected (SPEC §5, §7). Each rule has its own variant (a rule both
/// ports share names its [`Port`]); the variants carry the offending values. Nothing was
/// executed or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DecodeError {
    /// The buffer is not exactly the descriptor's size.
    Length {
        /// Buffer length in bytes.
        found: usize,
        /// The descriptor's size in bytes.
        expected: usize,
    },
    /// The magic word is not the entry's.
    Magic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The version is not 1.
    Version {
        /// Version found.
        found: u16,
    },
    /// The byte-length field is not the descriptor's size.
    ByteLength {
        /// Byte length found.
        found: u16,
        /// The descriptor's size in bytes.
        expected: u16,
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
    /// The flag word has bits the entry does not define.
    UnknownFlags {
        /// The whole flag word.
        bits: u32,
    },
    /// A reserved word is not zero.
    Reserved {
        /// Its byte offset (20 and 220 in Quant v1; 20, 164 and 212 in CastTess v1; 20, 212,
        /// 216 and 220 in Detess v1 and DetessCast v1; 20 and 212 in DetessDequant v1).
        offset: u16,
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
    /// A stride slot at or past the rank is not zero.
    UnusedStride {
        /// Port of the stride array.
        port: Port,
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
    /// An input stride of an axis of extent > 1 is not a multiple of the element size (the
    /// strided outputs of the Detess entries have [`DecodeError::OutputStrideNotMultiple`];
    /// Quant's output elements are one byte).
    InputStrideNotMultiple {
        /// Axis.
        axis: u8,
        /// Stride in bytes.
        stride: u64,
    },
    /// An axis of extent > 1 has stride 0 (also in an empty packet, SPEC §2).
    ZeroStride {
        /// Port.
        port: Port,
        /// Axis.
        axis: u8,
    },
    /// An axis of extent 0 or 1 has a nonzero stride (the wire normalizes it to 0).
    SingletonStride {
        /// Port.
        port: Port,
        /// Axis.
        axis: u8,
        /// Stride in bytes.
        stride: u64,
    },
    /// The recomputed span of a port overflows `u64`.
    SpanOverflow {
        /// Port.
        port: Port,
    },
    /// A port's span differs from its recomputation (for a tiled output, the physical span:
    /// the layout's capacity).
    Span {
        /// Port.
        port: Port,
        /// Recomputed span in bytes.
        expected: u64,
        /// Span in the descriptor.
        found: u64,
    },
    /// A port's strides fail the conservative nonoverlap proof (SPEC §2; also in an empty
    /// packet).
    Overlap {
        /// Port.
        port: Port,
        /// Axis whose stride is too small.
        axis: u8,
    },
    /// A contiguous flag disagrees with the port's strides.
    ContiguousFlag {
        /// Port.
        port: Port,
        /// What the strides say.
        expected: bool,
    },
    /// An address slot is not below 2^32.
    Address {
        /// Port.
        port: Port,
        /// Slot value.
        address: u64,
    },
    /// Address + span exceeds 2^32.
    Range {
        /// Port.
        port: Port,
        /// Address.
        address: u64,
        /// Span in bytes.
        span: u64,
    },
    /// An address is not aligned as the port requires (a strided port: its element size; a
    /// tiled port: 16 bytes, or the element size at tile alignment 1).
    Misaligned {
        /// Port.
        port: Port,
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
    /// A nonempty packet has a zero address slot (unbound).
    Unbound {
        /// Port.
        port: Port,
    },
    /// The tile alignment field is not 16.
    TileAlign {
        /// Value found.
        value: u32,
    },
    /// A role's axis is neither −1 (absent) nor below the rank.
    AxisOutOfRange {
        /// Role.
        role: TileAxis,
        /// Axis value found.
        axis: i8,
    },
    /// Two roles name the same logical axis.
    AxisRepeated {
        /// The later role naming it.
        role: TileAxis,
        /// The axis.
        axis: i8,
    },
    /// An absent role has a tile extent other than 1.
    AbsentTile {
        /// Role.
        role: TileAxis,
        /// Tile extent found.
        tile: u32,
    },
    /// An absent role has a tile count other than 1.
    AbsentTileCount {
        /// Role.
        role: TileAxis,
        /// Count found.
        count: u32,
    },
    /// A tile extent is 0 or above its nonzero axis extent.
    TileExtent {
        /// Role.
        role: TileAxis,
        /// Tile extent found.
        tile: u32,
        /// The axis extent.
        extent: u64,
    },
    /// A tile count differs from `ceil(extent / tile)`.
    TileCount {
        /// Role.
        role: TileAxis,
        /// Recomputed count.
        expected: u64,
        /// Count found.
        found: u32,
    },
    /// The bytes per outer index differ from the layout's.
    BytesPerOuter {
        /// Recomputed bytes.
        expected: u64,
        /// Bytes found.
        found: u64,
    },
    /// The tiled input's dtype code (offset 164 of the Detess entries) is not one the entry
    /// admits (Detess: INT8 5, INT16 6, INT32 7, BF16 1; DetessCast: BF16; DetessDequant:
    /// INT8, INT16, INT32).
    InputDType {
        /// Code found.
        code: u32,
    },
    /// Detess v1: the output's dtype (offset 8) is not the tiled input's (offset 164).
    DTypeMismatch {
        /// The input's dtype.
        input: crate::dtype::DType,
        /// The output's dtype.
        output: crate::dtype::DType,
    },
    /// The flag word sets CBlock16 (bit 1) without PadTo16 (bit 0): the channel flags
    /// (`align_c16`, `cblock`) = (false, true) name no encoding (SPEC §12.1).
    ChannelFlags,
    /// A tiled input in PadTo16 or CBlock16 has a C tile extent that is neither the C
    /// extent nor a multiple of 16 (SPEC §12.1).
    C16TileChannels {
        /// The C tile extent.
        tile: u32,
        /// The C extent.
        extent: u64,
    },
    /// The dequantization zero point is outside its input dtype's range (SPEC §12.2).
    DequantZeroPoint {
        /// The integer input dtype.
        dtype: crate::dtype::DType,
        /// Value found.
        value: i32,
    },
    /// An output stride of an axis of extent > 1 is not a multiple of the output's element
    /// size (the Detess entries, whose strided output has elements of 1, 2 or 4 bytes).
    OutputStrideNotMultiple {
        /// Axis.
        axis: u8,
        /// Stride in bytes.
        stride: u64,
    },
    /// Preproc v1: the rank is not 3 (`[H', W', C]`) or 4 (`[N, H', W', C]`) (SPEC §13).
    PreprocRank {
        /// Rank found (1..=6).
        rank: u8,
    },
    /// Preproc v1: the pixel format code at offset 164 is not 1..=7 (RGB8, BGR8, RGBX8,
    /// BGRX8, GRAY8, NV12, I420).
    PixelFormat {
        /// Code found.
        code: u32,
    },
    /// Preproc v1: the output kind at offset 212 is not 1..=4 (FP32, INT8, QuantTess,
    /// CastTess) or is not a kind of the output dtype at offset 8 (FP32: 1; INT8: 2 or 3;
    /// BF16: 4).
    OutputKind {
        /// Code found.
        code: u32,
        /// The output dtype (offset 8).
        dtype: crate::dtype::DType,
    },
    /// Preproc v1: a strided output (FP32, INT8) has a nonzero tiled-layout field (bytes
    /// 160..212 but the pixel format at 164) or flag bit 1 (`pad16`).
    UnusedTiledFields {
        /// Byte offset of the field (16 for the flag word).
        offset: u16,
    },
    /// Preproc v1: an output that is not INT8 has a nonzero multiplier, zero point or
    /// rounding word (offsets 328, 332, 336).
    UnusedQuantParams {
        /// Byte offset of the word.
        offset: u16,
    },
    /// Preproc v1: a pad value, mean or std slot past the output's channels (or the pad
    /// word's byte 3) is not zero.
    UnusedChannel {
        /// Byte offset of the slot.
        offset: u16,
    },
    /// Preproc v1: a plane slot past the format's planes has a nonzero offset or row
    /// stride.
    UnusedPlane {
        /// Plane slot (1 or 2).
        plane: u8,
    },
    /// Preproc v1: the frame stride of fewer than two frames is not zero.
    UnusedFrameStride {
        /// The frame stride found, in bytes.
        stride: u64,
    },
    /// Preproc v1: a tiled output (QuantTess, CastTess) has a nonzero byte stride in the
    /// prefix (the tail describes its layout).
    TiledOutputStride {
        /// Axis slot.
        axis: u8,
        /// Stride found, in bytes.
        stride: u64,
    },
    /// Preproc v1: an output extent is not the frame's with its border (`[N,] top + H +
    /// bottom, left + W + right, C`).
    OutputExtents {
        /// Axis.
        axis: u8,
        /// Recomputed extent (saturating).
        expected: u64,
        /// Extent found.
        found: u64,
    },
    /// Preproc v1: the frame or its normalization breaks a rule of SPEC §13 (the host's
    /// admission rule, 0x240..=0x246, has this descriptor twin: codes 90..=96).
    Frame(crate::ops::preproc::PreprocError),
    /// The device's admission refused the packet for a host rule that has no descriptor
    /// twin (its host code, `docs/errors.md`). A decoder built on the shared admission never
    /// reports it for the current entries; it exists so that the conversion from host rules
    /// is exhaustive.
    Inadmissible {
        /// The host admission code.
        code: u32,
    },
}

/// The code of a nonzero reserved word, by its byte offset: the one table of them (the
/// prefix's word at 20 and each entry tail's). The shared parse asserts at compile time that
/// every reserved offset a tail lists is here (`reserved_words_known`), so a new entry's
/// reserved word cannot be reported under another word's code.
pub const RESERVED_WORDS: [(u16, DecodeCode); 6] = [
    (20, DecodeCode::Reserved20),
    (364, DecodeCode::Reserved364),
    (220, DecodeCode::Reserved220),
    (164, DecodeCode::Reserved164),
    (212, DecodeCode::Reserved212),
    (216, DecodeCode::Reserved216),
];

/// The code of a nonzero reserved word at `offset` ([`RESERVED_WORDS`]); an offset outside
/// the table (no parse reports one: [`reserved_words_known`]) is the prefix's word.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn reserved_code(offset: u16) -> DecodeCode {
    let mut i = 0;
    while i < RESERVED_WORDS.len() {
        let (at, code) = RESERVED_WORDS[i];
        if at == offset {
            return code;
        }
        i += 1;
    }
    DecodeCode::Reserved20
}

/// Whether every offset of `offsets` has its code in [`RESERVED_WORDS`].
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
pub(crate) const fn reserved_words_known(offsets: &[u16]) -> bool {
    let mut i = 0;
    while i < offsets.len() {
        let mut found = false;
        let mut j = 0;
        while j < RESERVED_WORDS.len() {
            if RESERVED_WORDS[j].0 == offsets[i] {
                found = true;
            }
            j += 1;
        }
        if !found {
            return false;
        }
        i += 1;
    }
    true
}

/// The number of a rule both ports share.
const fn by_port(port: Port, input: DecodeCode, output: DecodeCode) -> DecodeCode {
    match port {
        Port::Input => input,
        Port::Output => output,
    }
}

impl DecodeError {
    /// The rule this rejection is, as its typed code.
    pub const fn rule(&self) -> DecodeCode {
        use DecodeCode as C;
        match *self {
            DecodeError::Length { .. } => C::Length,
            DecodeError::Magic { .. } => C::Magic,
            DecodeError::Version { .. } => C::Version,
            DecodeError::ByteLength { .. } => C::ByteLength,
            DecodeError::DType { .. } => C::DType,
            DecodeError::Rank { .. } => C::Rank,
            DecodeError::UnknownFlags { .. } => C::UnknownFlags,
            DecodeError::Reserved { offset, .. } => reserved_code(offset),
            DecodeError::UnusedExtent { .. } => C::UnusedExtent,
            DecodeError::UnusedStride { port, .. } => {
                by_port(port, C::UnusedInputStride, C::UnusedOutputStride)
            }
            DecodeError::MultiplierNotFinite { .. } => C::MultiplierNotFinite,
            DecodeError::MultiplierNotPositive { .. } => C::MultiplierNotPositive,
            DecodeError::ZeroPoint { .. } => C::ZeroPoint,
            DecodeError::Rounding { .. } => C::Rounding,
            DecodeError::ElementsOverflow => C::ElementsOverflow,
            DecodeError::ElementCount { .. } => C::ElementCount,
            DecodeError::InputStrideNotMultiple { .. } => C::InputStrideNotMultiple,
            DecodeError::ZeroStride { port, .. } => {
                by_port(port, C::InputZeroStride, C::OutputZeroStride)
            }
            DecodeError::SingletonStride { port, .. } => {
                by_port(port, C::InputSingletonStride, C::OutputSingletonStride)
            }
            DecodeError::SpanOverflow { port } => {
                by_port(port, C::InputSpanOverflow, C::OutputSpanOverflow)
            }
            DecodeError::Span { port, .. } => by_port(port, C::InputSpan, C::OutputSpan),
            DecodeError::Overlap { port, .. } => by_port(port, C::InputOverlap, C::OutputOverlap),
            DecodeError::ContiguousFlag { port, .. } => {
                by_port(port, C::InputContiguousFlag, C::OutputContiguousFlag)
            }
            DecodeError::Address { port, .. } => by_port(port, C::InputAddress, C::OutputAddress),
            DecodeError::Range { port, .. } => by_port(port, C::InputRange, C::OutputRange),
            DecodeError::Misaligned { port, .. } => {
                by_port(port, C::InputMisaligned, C::OutputMisaligned)
            }
            DecodeError::PortsOverlap { .. } => C::PortsOverlap,
            DecodeError::Unbound { port } => by_port(port, C::InputUnbound, C::OutputUnbound),
            DecodeError::TileAlign { .. } => C::TileAlign,
            DecodeError::AxisOutOfRange { .. } => C::AxisOutOfRange,
            DecodeError::AxisRepeated { .. } => C::AxisRepeated,
            DecodeError::AbsentTile { .. } => C::AbsentTile,
            DecodeError::AbsentTileCount { .. } => C::AbsentTileCount,
            DecodeError::TileExtent { .. } => C::TileExtent,
            DecodeError::TileCount { .. } => C::TileCount,
            DecodeError::BytesPerOuter { .. } => C::BytesPerOuter,
            DecodeError::InputDType { .. } => C::InputDType,
            DecodeError::DTypeMismatch { .. } => C::DTypeMismatch,
            DecodeError::ChannelFlags => C::ChannelFlags,
            DecodeError::C16TileChannels { .. } => C::C16TileChannels,
            DecodeError::DequantZeroPoint { .. } => C::DequantZeroPoint,
            DecodeError::OutputStrideNotMultiple { .. } => C::OutputStrideNotMultiple,
            DecodeError::PreprocRank { .. } => C::PreprocRank,
            DecodeError::PixelFormat { .. } => C::PixelFormat,
            DecodeError::OutputKind { .. } => C::OutputKind,
            DecodeError::UnusedTiledFields { .. } => C::UnusedTiledFields,
            DecodeError::UnusedQuantParams { .. } => C::UnusedQuantParams,
            DecodeError::UnusedChannel { .. } => C::UnusedChannel,
            DecodeError::UnusedPlane { .. } => C::UnusedPlane,
            DecodeError::UnusedFrameStride { .. } => C::UnusedFrameStride,
            DecodeError::TiledOutputStride { .. } => C::TiledOutputStride,
            DecodeError::OutputExtents { .. } => C::OutputExtents,
            DecodeError::Frame(e) => {
                use crate::ops::preproc::PreprocError as P;
                match e {
                    P::OddSize { .. } => C::OddFrameSize,
                    P::RowStride { .. } => C::RowStride,
                    P::PlaneOverlap { .. } => C::PlaneOverlap,
                    P::FrameStride { .. } => C::FrameStride,
                    P::NotFinite { .. } => C::NormalizationNotFinite,
                    P::DivisorNotPositive { .. } => C::DivisorNotPositive,
                    P::StdZero { .. } => C::StdZero,
                    // The wire gives one value per channel: never a count mismatch.
                    P::ChannelCount { .. } => C::Inadmissible,
                }
            }
            DecodeError::Inadmissible { .. } => C::Inadmissible,
        }
    }

    /// The stable numeric code of this rejection (1..=255, `docs/errors.md`).
    pub const fn code(&self) -> u32 {
        self.rule().get() as u32
    }
}

/// Axis index as `u8` for error values (axes are < 6).
pub(crate) fn axis_u8(axis: usize) -> u8 {
    u8::try_from(axis).unwrap_or(u8::MAX)
}

/// Axis as `i8` for error values (axes are < 6).
pub(crate) fn axis_i8(axis: u8) -> i8 {
    i8::try_from(axis).unwrap_or(i8::MAX)
}

/// The device decodes with the host's own admission ([`crate::View::new`],
/// [`crate::layout::MlaTiled::admit`], [`crate::arith::quant::Multiplier::from_bits`]): each
/// host rule becomes its descriptor twin. Rules without a twin (they cannot arise from a
/// decoded descriptor) become [`DecodeError::Inadmissible`] with their host code.
impl From<AdmissionError> for DecodeError {
    fn from(e: AdmissionError) -> Self {
        match e {
            AdmissionError::StrideNotMultiple {
                port: Port::Input,
                axis,
                stride,
                ..
            } => DecodeError::InputStrideNotMultiple {
                axis: axis_u8(axis),
                stride,
            },
            AdmissionError::ZeroStride { port, axis, .. } => DecodeError::ZeroStride {
                port,
                axis: axis_u8(axis),
            },
            AdmissionError::SpanOverflow { port } => DecodeError::SpanOverflow { port },
            AdmissionError::Overlap { port, axis, .. } => DecodeError::Overlap {
                port,
                axis: axis_u8(axis),
            },
            AdmissionError::Rank { rank, .. } => DecodeError::Rank {
                rank: u32::try_from(rank).unwrap_or(u32::MAX),
            },
            AdmissionError::MultiplierNotFinite { bits } => {
                DecodeError::MultiplierNotFinite { bits }
            }
            AdmissionError::MultiplierNotPositive { bits } => {
                DecodeError::MultiplierNotPositive { bits }
            }
            AdmissionError::ZeroPointOutOfRange { zero_point } => {
                DecodeError::ZeroPoint { value: zero_point }
            }
            AdmissionError::RoundingCode { code } => DecodeError::Rounding { code },
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
            AdmissionError::StrideNotMultiple {
                port: Port::Output,
                axis,
                stride,
                ..
            } => DecodeError::OutputStrideNotMultiple {
                axis: axis_u8(axis),
                stride,
            },
            AdmissionError::ChannelFlags => DecodeError::ChannelFlags,
            AdmissionError::C16TileChannels { tile, extent } => {
                DecodeError::C16TileChannels { tile, extent }
            }
            AdmissionError::DequantZeroPoint { dtype, zero_point } => {
                DecodeError::DequantZeroPoint {
                    dtype,
                    value: zero_point,
                }
            }
            other @ (AdmissionError::DType { .. }
            | AdmissionError::ShapeMismatch { .. }
            | AdmissionError::Planes { .. }
            | AdmissionError::StridesRank { .. }
            | AdmissionError::InputSideEncoding
            | AdmissionError::InputSideTileAlign
            | AdmissionError::HeadCount { .. }
            | AdmissionError::HeadOffset { .. }
            | AdmissionError::HeadSpan { .. }
            | AdmissionError::HeadOverlap { .. }
            | AdmissionError::Preproc(crate::ops::preproc::PreprocError::ChannelCount {
                ..
            })) => DecodeError::Inadmissible { code: other.code() },
            AdmissionError::Preproc(e) => DecodeError::Frame(e),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Length { found, expected } => {
                write!(f, "descriptor is {found} bytes, not {expected}")
            }
            DecodeError::Magic { found } => write!(f, "bad magic {found:02x?}"),
            DecodeError::Version { found } => write!(f, "unsupported version {found}"),
            DecodeError::ByteLength { found, expected } => {
                write!(f, "byte length field {found} is not {expected}")
            }
            DecodeError::DType { code } => {
                write!(
                    f,
                    "dtype code {code} at offset 8 is not one the entry admits"
                )
            }
            DecodeError::Rank { rank } => write!(f, "rank {rank} is outside 1..=6"),
            DecodeError::UnknownFlags { bits } => write!(f, "unknown flag bits in 0x{bits:08x}"),
            DecodeError::Reserved { offset, value } => {
                write!(f, "reserved word at offset {offset} is 0x{value:08x}")
            }
            DecodeError::UnusedExtent { axis, value } => {
                write!(f, "unused extent slot {axis} holds {value}")
            }
            DecodeError::UnusedStride { port, axis, value } => {
                write!(f, "unused {port} stride slot {axis} holds {value}")
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
            DecodeError::ZeroStride { port, axis } => {
                write!(f, "{port} axis {axis} has extent > 1 but stride 0")
            }
            DecodeError::SingletonStride { port, axis, stride } => write!(
                f,
                "{port} axis {axis} of extent <= 1 has stride {stride}, not 0"
            ),
            DecodeError::SpanOverflow { port } => write!(f, "{port} span overflows u64"),
            DecodeError::Span {
                port,
                expected,
                found,
            } => write!(f, "{port} span {found} bytes should be {expected}"),
            DecodeError::Overlap { port, axis } => {
                write!(f, "{port} strides overlap at axis {axis}")
            }
            DecodeError::ContiguousFlag { port, expected } => {
                write!(f, "{port} contiguous flag should be {expected}")
            }
            DecodeError::Address { port, address } => write!(
                f,
                "{port} address 0x{address:x} is outside the 32-bit domain"
            ),
            DecodeError::Range {
                port,
                address,
                span,
            } => write!(
                f,
                "{port} address 0x{address:x} plus span {span} exceeds the 32-bit domain"
            ),
            DecodeError::Misaligned {
                port,
                address,
                align,
            } => write!(
                f,
                "{port} address 0x{address:x} is not aligned to {align} bytes"
            ),
            DecodeError::PortsOverlap { input, output } => {
                write!(f, "input at 0x{input:x} and output at 0x{output:x} overlap")
            }
            DecodeError::Unbound { port } => write!(f, "{port} address slot is unbound"),
            DecodeError::TileAlign { value } => write!(
                f,
                "tile alignment {value} is not one the entry admits (16; 1 for an MLA output)"
            ),
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
            DecodeError::TileCount {
                role,
                expected,
                found,
            } => write!(f, "{role} tile count {found} should be {expected}"),
            DecodeError::BytesPerOuter { expected, found } => {
                write!(f, "bytes per outer index {found} should be {expected}")
            }
            DecodeError::InputDType { code } => write!(
                f,
                "tiled input dtype code {code} at offset 164 is not one the entry admits"
            ),
            DecodeError::DTypeMismatch { input, output } => {
                write!(f, "output dtype {output} is not the input's, {input}")
            }
            DecodeError::ChannelFlags => {
                f.write_str("flag bit 1 (cblock16) is set without bit 0 (pad16)")
            }
            DecodeError::C16TileChannels { tile, extent } => write!(
                f,
                "c tile extent {tile} is neither the c extent {extent} nor a multiple of 16"
            ),
            DecodeError::DequantZeroPoint { dtype, value } => {
                write!(f, "zero point {value} is outside the range of {dtype}")
            }
            DecodeError::OutputStrideNotMultiple { axis, stride } => write!(
                f,
                "output stride {stride} on axis {axis} is not a multiple of the element size"
            ),
            DecodeError::PreprocRank { rank } => {
                write!(
                    f,
                    "rank {rank} is not 3 ([H', W', C]) or 4 ([N, H', W', C])"
                )
            }
            DecodeError::PixelFormat { code } => {
                write!(f, "pixel format code {code} at offset 164 is not 1..=7")
            }
            DecodeError::OutputKind { code, dtype } => write!(
                f,
                "output kind {code} at offset 212 is not one of output dtype {dtype} \
                 (f32: 1; i8: 2 strided, 3 QuantTess; bf16: 4 CastTess)"
            ),
            DecodeError::UnusedTiledFields { offset } => write!(
                f,
                "a strided output has a nonzero tiled-layout field at offset {offset}"
            ),
            DecodeError::UnusedQuantParams { offset } => write!(
                f,
                "an output that is not INT8 has a nonzero quant word at offset {offset}"
            ),
            DecodeError::UnusedChannel { offset } => write!(
                f,
                "the slot at offset {offset} is past the output's channels but not zero"
            ),
            DecodeError::UnusedPlane { plane } => write!(
                f,
                "plane slot {plane} is past the format's planes but not zero"
            ),
            DecodeError::UnusedFrameStride { stride } => write!(
                f,
                "frame stride {stride} bytes is given for fewer than two frames, not 0"
            ),
            DecodeError::TiledOutputStride { axis, stride } => write!(
                f,
                "a tiled output has stride {stride} on axis {axis} in the prefix, not 0"
            ),
            DecodeError::OutputExtents {
                axis,
                expected,
                found,
            } => write!(
                f,
                "output extent {found} on axis {axis} should be {expected} (frame and border)"
            ),
            DecodeError::Frame(e) => write!(f, "frame: {e}"),
            DecodeError::Inadmissible { code } => write!(
                f,
                "the device's admission refused the packet (host rule 0x{code:03x})"
            ),
        }
    }
}

impl core::error::Error for DecodeError {}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test {
    use super::*;

    #[test]
    fn codes_are_dense_nonzero_and_round_trip() {
        // Dense within each range: 1..=58 (the Quant, CastTess and Detess entries), then
        // from 80 (Preproc v1's range, 80..=99).
        for (k, c) in DecodeCode::ALL.iter().enumerate() {
            let expected = if k < 58 { k + 1 } else { k - 58 + 80 };
            assert_eq!(c.get() as usize, expected, "{c:?}");
            assert_eq!(DecodeCode::from_u16(c.get()), Some(*c));
        }
        assert_eq!(DecodeCode::ALL.last().map(|c| c.get()), Some(97));
        for unused in [0, 59, 79, 98] {
            assert_eq!(DecodeCode::from_u16(unused), None);
        }
    }

    #[test]
    fn every_code_is_reported_by_some_entry() {
        // `ALL` comes from the enum's list; each entry lists its own codes beside its
        // decoder: a code no entry can report is a stale or unwired one.
        for c in DecodeCode::ALL {
            let reported = crate::ev74::ENTRIES.iter().any(|e| e.codes.contains(&c));
            assert!(reported, "{c:?}");
        }
    }

    #[test]
    fn shared_rules_take_their_port_number() {
        let cases = [
            (
                DecodeError::ZeroStride {
                    port: Port::Input,
                    axis: 0,
                },
                20,
            ),
            (
                DecodeError::ZeroStride {
                    port: Port::Output,
                    axis: 0,
                },
                21,
            ),
            (
                DecodeError::Misaligned {
                    port: Port::Input,
                    address: 2,
                    align: 4,
                },
                36,
            ),
            (
                DecodeError::Misaligned {
                    port: Port::Output,
                    address: 2,
                    align: 16,
                },
                50,
            ),
            (DecodeError::Unbound { port: Port::Output }, 39),
            (
                DecodeError::Reserved {
                    offset: 20,
                    value: 1,
                },
                8,
            ),
            (
                DecodeError::Reserved {
                    offset: 220,
                    value: 1,
                },
                9,
            ),
            (
                DecodeError::Reserved {
                    offset: 164,
                    value: 1,
                },
                40,
            ),
            (
                DecodeError::Reserved {
                    offset: 212,
                    value: 1,
                },
                41,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.code(), code, "{e:?}");
        }
    }
}
