//! The 160-byte prefix every descriptor shares (SPEC §7), and the parse that checks it.
//!
//! | offset | field |
//! | --- | --- |
//! | 0 | u32 magic · 4 u16 version = 1 · 6 u16 byte length |
//! | 8 | u32 dtype code of the prefix port (BF16 = 1, FP32 = 3, FP16 = 4) · 12 u32 rank 1..=6 |
//! | 16 | u32 flags (bits per entry) · 20 u32 reserved = 0 |
//! | 24, 32 | u64 input / output address slots (values < 2^32; zero when relocatable) |
//! | 40, 48, 56 | u64 element count, input accessed span, output span (bytes; per entry: the accessed span of a strided output, the physical span of a tiled one) |
//! | 64, 112 | `[u64; 6]` extents, byte strides of the prefix port |
//!
//! The magic word, the byte length, the flag bits and the ports are the entry's
//! ([`Format`]). Each port is described by its role ([`PortFormat`]): strided or tiled, the
//! dtypes it admits, what its span field holds (accessed or physical) and its alignment.
//! The prefix describes one strided port, [`Format::prefix_port`] (the input for Quant v1
//! and CastTess v1, whose fields keep the names `dtype` and `input_strides`); the tail
//! describes the other. An entry whose input is tiled and whose output strided names the
//! output as its prefix port: one more [`Format`], no change here. A descriptor is this
//! prefix followed by its entry's tail.
//! The shared parse runs the rules in one order for every entry, calling the entry's tail for
//! its own fields at fixed points:
//!
//! 1. header: magic, version, byte length, dtype, rank, flag bits, the reserved word at 20;
//!    then the tail's header words;
//! 2. unused slots, axis by axis: extent, input stride, then the tail's arrays;
//! 3. the tail's parameters, then the input's singleton strides (an axis of extent 0 or 1
//!    has stride 0 on the wire);
//! 4. the element count;
//! 5. the prefix port, admitted by [`View::new`] like a host spec (stride multiples, zero
//!    strides, overflow, the nonoverlap proof — also when the packet is empty: SPEC §2,
//!    "descriptors are still validated"), then its span;
//! 6. the tail's port (for Quant the output, with the same `View` admission);
//! 7. the address slots: 32-bit domain and range per port, alignment (each port's
//!    [`PortAlign`]), and the two ranges apart.
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use core::fmt;

use static_assertions::const_assert_eq;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::dtype::DType;
use crate::error::Port;
use crate::tensor::{MAX_RANK, View};
use crate::wire::fields::{FieldValue, Fields};
use crate::wire::rules::{DecodeCode, DecodeError, axis_u8};

/// Size of the shared prefix in bytes.
pub const PREFIX_SIZE: usize = 160;
/// The only descriptor version the codecs speak.
pub const VERSION: u16 = 1;
/// The 32-bit device address domain: `address + span` must not exceed this (bytes).
pub const ADDRESS_LIMIT: u64 = 1 << 32;

/// The codes the shared parse can reject any entry's descriptor with (`docs/errors.md`);
/// each entry's `CODES` adds its tail's own ([`crate::wire::rules::merge_codes`]).
pub const CODES: [DecodeCode; 29] = [
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
    DecodeCode::Inadmissible,
];

/// The codes the shared parse can reject a descriptor with when its prefix port is the
/// output ([`Format::prefix_port`], the Detess entries): [`CODES`] with the strided port's
/// rules named for the output, and the output's own alignment and stride-multiple rules
/// (its elements are 1, 2 or 4 bytes). The tiled input's span rules are the tail's.
pub const OUTPUT_PREFIX_CODES: [DecodeCode; 28] = [
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
    DecodeCode::ElementsOverflow,
    DecodeCode::ElementCount,
    DecodeCode::OutputZeroStride,
    DecodeCode::OutputSingletonStride,
    DecodeCode::OutputSpanOverflow,
    DecodeCode::OutputSpan,
    DecodeCode::OutputOverlap,
    DecodeCode::InputAddress,
    DecodeCode::OutputAddress,
    DecodeCode::InputRange,
    DecodeCode::OutputRange,
    DecodeCode::InputMisaligned,
    DecodeCode::PortsOverlap,
    DecodeCode::InputUnbound,
    DecodeCode::OutputUnbound,
    DecodeCode::OutputMisaligned,
    DecodeCode::Inadmissible,
    DecodeCode::OutputStrideNotMultiple,
];

/// Byte offsets of the prefix fields (SPEC §7), pinned against [`Prefix`].
pub mod field {
    /// `u32` magic.
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
    /// `u64` output span in bytes (accessed or physical, per entry).
    pub const OUTPUT_SPAN: usize = 56;
    /// `[u64; 6]` extents in elements.
    pub const EXTENTS: usize = 64;
    /// `[u64; 6]` input byte strides.
    pub const INPUT_STRIDES: usize = 112;
}

/// The raw prefix: 160 little-endian bytes, alignment 1, no padding. Fields hold whatever
/// the bytes say; nothing is validated here (an entry's `…Repr::parse` validates).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Prefix {
    /// Magic, the entry's four bytes.
    pub magic: [u8; 4],
    /// Version, 1.
    pub version: U16,
    /// Byte length of the whole descriptor.
    pub byte_length: U16,
    /// Input dtype wire code (BF16 = 1, FP32 = 3, FP16 = 4).
    pub dtype: U32,
    /// Rank, 1..=6 (Quant lowers scalars to rank 1).
    pub rank: U32,
    /// Flag word (bits per entry).
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
    /// Output span in bytes (accessed or physical, per entry).
    pub output_span: U64,
    /// Extents in elements, unused axes 0.
    pub extents: [U64; MAX_RANK],
    /// Input strides in bytes, unused and extent-0/1 axes 0.
    pub input_strides: [U64; MAX_RANK],
}

const_assert_eq!(core::mem::size_of::<Prefix>(), PREFIX_SIZE);
const_assert_eq!(core::mem::align_of::<Prefix>(), 1);
const_assert_eq!(core::mem::offset_of!(Prefix, magic), field::MAGIC);
const_assert_eq!(core::mem::offset_of!(Prefix, version), field::VERSION);
const_assert_eq!(
    core::mem::offset_of!(Prefix, byte_length),
    field::BYTE_LENGTH
);
const_assert_eq!(core::mem::offset_of!(Prefix, dtype), field::DTYPE);
const_assert_eq!(core::mem::offset_of!(Prefix, rank), field::RANK);
const_assert_eq!(core::mem::offset_of!(Prefix, flags), field::FLAGS);
const_assert_eq!(
    core::mem::offset_of!(Prefix, reserved_20),
    field::RESERVED_20
);
const_assert_eq!(
    core::mem::offset_of!(Prefix, input_address),
    field::INPUT_ADDRESS
);
const_assert_eq!(
    core::mem::offset_of!(Prefix, output_address),
    field::OUTPUT_ADDRESS
);
const_assert_eq!(core::mem::offset_of!(Prefix, elements), field::ELEMENTS);
const_assert_eq!(core::mem::offset_of!(Prefix, input_span), field::INPUT_SPAN);
const_assert_eq!(
    core::mem::offset_of!(Prefix, output_span),
    field::OUTPUT_SPAN
);
const_assert_eq!(core::mem::offset_of!(Prefix, extents), field::EXTENTS);
const_assert_eq!(
    core::mem::offset_of!(Prefix, input_strides),
    field::INPUT_STRIDES
);

/// How a port lays out its elements (SPEC §2, §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortLayout {
    /// A strided tensor (SPEC §2): extents and byte strides.
    Strided,
    /// The `MlaTiled` layout (SPEC §5), described by the entry's tail.
    Tiled,
}

/// Which span of a port the prefix's span field holds (SPEC §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// The accessed span in bytes (SPEC §2): a strided port.
    Accessed,
    /// The physical span in bytes (the `MlaTiled` capacity, SPEC §5): a tiled port.
    Physical,
}

/// The alignment a bound port's address needs (SPEC §6, §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortAlign {
    /// The port's element size in bytes: its one admitted dtype's, or the prefix dtype's
    /// (offset 8) when it admits several.
    Element,
    /// A fixed number of bytes (a power of two).
    Bytes(u64),
    /// A tiled port whose tile alignment is a field of the tail (SPEC §12.1): 16 bytes when
    /// the tile alignment is 16, the element size when it is 1. The tail reports it
    /// (`Tail::align`); [`PortFormat::align_for`] gives its lower bound, 1.
    TileAlign,
}

/// One port of a descriptor format, described by its role: layout, admitted dtypes, span
/// and alignment (`docs/contract.md` §7). Neither port is assumed to be the strided one:
/// [`Format::prefix_port`] names the port the prefix describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortFormat {
    /// Strided or tiled.
    pub layout: PortLayout,
    /// The dtypes the port admits. For the prefix port these are the codes at offset 8
    /// that decode (any other is [`DecodeError::DType`]).
    pub dtypes: &'static [DType],
    /// What the port's span field (offset 48 for the input, 56 for the output) holds.
    pub span: SpanKind,
    /// Alignment of a bound address.
    pub align: PortAlign,
}

/// The strided floating-point input of Quant v1 and CastTess v1: FP32, BF16 or FP16, its
/// accessed span, aligned to its element size (SPEC §2, §7).
pub const FLOAT_INPUT: PortFormat = PortFormat {
    layout: PortLayout::Strided,
    dtypes: &[DType::BF16, DType::F32, DType::F16],
    span: SpanKind::Accessed,
    align: PortAlign::Element,
};

impl PortFormat {
    /// The alignment in bytes of this port's address, for a descriptor whose prefix dtype
    /// (offset 8) is `prefix_dtype`.
    pub const fn align_for(&self, prefix_dtype: DType) -> u64 {
        match self.align {
            PortAlign::Bytes(n) => n,
            PortAlign::TileAlign => 1,
            PortAlign::Element => match self.dtypes {
                [only] => only.size_u64(),
                _ => prefix_dtype.size_u64(),
            },
        }
    }

    /// Whether the port admits `dtype`.
    pub fn admits(&self, dtype: DType) -> bool {
        self.dtypes.contains(&dtype)
    }
}

/// How one flag bit of a descriptor reads in a field listing (`simak packet decode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagName {
    /// The bit's mask.
    pub bit: u32,
    /// Its meaning when set.
    pub set: &'static str,
    /// Its meaning when clear, if it has one (e.g. CastTess's `compact`).
    pub clear: Option<&'static str>,
}

/// How a descriptor's flag word reads: the meaning of each defined bit, and the text of a
/// word with no meaning at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagNames {
    /// The defined bits, in listing order.
    pub bits: &'static [FlagName],
    /// The meaning of a word that sets no named bit, clears none with a name and has no
    /// unknown bit (Quant: `strided`).
    pub none: &'static str,
}

impl FlagNames {
    /// Calls `part` with each meaning of `word`, in order: every defined bit's set or
    /// clear meaning, then `None` for the unknown bits if any (their mask is
    /// `word & !mask`); the `none` text when nothing else was given.
    pub fn describe(&self, word: u32, mask: u32, mut part: impl FnMut(Option<&'static str>)) {
        let mut any = false;
        for b in self.bits {
            let text = if word & b.bit != 0 {
                Some(b.set)
            } else {
                b.clear
            };
            if let Some(t) = text {
                part(Some(t));
                any = true;
            }
        }
        if word & !mask != 0 {
            part(None);
            any = true;
        }
        if !any {
            part(Some(self.none));
        }
    }
}

/// What a descriptor format fixes about its prefix and ports (`docs/contract.md` §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// The magic word.
    pub magic: [u8; 4],
    /// The descriptor's size in bytes (the byte-length field).
    pub size: u16,
    /// The flag bits the entry defines; any other bit is [`DecodeError::UnknownFlags`].
    pub flag_mask: u32,
    /// How the flag bits read in a listing.
    pub flag_names: FlagNames,
    /// The input port (address slot 24, span 48).
    pub input: PortFormat,
    /// The output port (address slot 32, span 56).
    pub output: PortFormat,
    /// The strided port whose dtype (offset 8) and byte strides (offset 112) the prefix
    /// holds, admitted by the shared parse in step 5; the entry's tail describes the other
    /// port (step 6). The input for Quant and CastTess.
    pub prefix_port: Port,
}

impl Format {
    /// The format of `port`.
    pub const fn port(&self, port: Port) -> &PortFormat {
        match port {
            Port::Input => &self.input,
            Port::Output => &self.output,
        }
    }

    /// Whether the format is well formed: the prefix port is strided. Asserted at compile
    /// time for every entry.
    pub const fn is_valid(&self) -> bool {
        matches!(self.port(self.prefix_port).layout, PortLayout::Strided)
    }
}

/// The validated prefix: real dtype and rank, narrowed address slots, and the derived
/// fields consistent with their recomputation (the output span as the tail checked it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PrefixRepr {
    /// Input dtype (`F32`, `BF16` or `F16`).
    pub dtype: DType,
    /// Rank, 1..=6.
    pub rank: u8,
    /// Input bus address (0 when relocatable).
    pub input_address: u32,
    /// Output bus address (0 when relocatable).
    pub output_address: u32,
    /// Element count (0 when empty).
    pub elements: u64,
    /// Input accessed span in bytes (0 when empty).
    pub input_span: u64,
    /// Output span in bytes (0 when empty): accessed (Quant) or physical (CastTess).
    pub output_span: u64,
    /// Extents in elements, unused axes 0.
    pub extents: [u64; MAX_RANK],
    /// Input byte strides, unused and extent-0/1 axes 0.
    pub input_strides: [u64; MAX_RANK],
}

impl PrefixRepr {
    /// Whether the packet is a no-op (element count 0).
    pub const fn is_empty(&self) -> bool {
        self.elements == 0
    }

    /// The extents of the first `rank` axes.
    pub fn active_extents(&self) -> &[u64] {
        self.extents
            .get(..usize::from(self.rank))
            .unwrap_or(&self.extents)
    }

    /// Writes the prefix of a descriptor of `format` with flag word `flags`.
    pub fn emit(&self, format: &Format, flags: u32) -> Prefix {
        Prefix {
            magic: format.magic,
            version: U16::new(VERSION),
            byte_length: U16::new(format.size),
            dtype: U32::new(self.dtype.wire_code().unwrap_or(0)),
            rank: U32::new(u32::from(self.rank)),
            flags: U32::new(flags),
            reserved_20: U32::ZERO,
            input_address: U64::new(u64::from(self.input_address)),
            output_address: U64::new(u64::from(self.output_address)),
            elements: U64::new(self.elements),
            input_span: U64::new(self.input_span),
            output_span: U64::new(self.output_span),
            extents: store_u64s(&self.extents),
            input_strides: store_u64s(&self.input_strides),
        }
    }
}

/// Reads six little-endian slots.
pub(crate) fn load_u64s(raw: &[U64; MAX_RANK]) -> [u64; MAX_RANK] {
    let mut out = [0u64; MAX_RANK];
    for (o, r) in out.iter_mut().zip(raw.iter()) {
        *o = r.get();
    }
    out
}

/// Writes six little-endian slots.
pub(crate) fn store_u64s(values: &[u64; MAX_RANK]) -> [U64; MAX_RANK] {
    let mut out = [U64::ZERO; MAX_RANK];
    for (o, v) in out.iter_mut().zip(values.iter()) {
        *o = U64::new(*v);
    }
    out
}

/// One entry's tail: the fields after the prefix and the rules on them, called by
/// [`parse`] at its fixed points. Implemented by the entry's raw descriptor struct.
pub(crate) trait Tail: IntoBytes + Immutable + Sized {
    /// The tail's parameters, checked in step 3.
    type Params;
    /// The checked output port, from step 6.
    type Output;
    /// The validated descriptor.
    type Repr;
    /// The entry's format.
    const FORMAT: Format;
    /// Byte offsets of the tail's reserved `u32` words, which must be 0; checked in step 1
    /// in this order, before [`Tail::check_header`].
    const RESERVED: &'static [u16];

    /// The prefix (bytes 0..160).
    fn prefix(&self) -> &Prefix;
    /// Step 1, after the prefix header and the reserved words: the tail's fixed words.
    fn check_header(&self) -> Result<(), DecodeError> {
        Ok(())
    }
    /// Step 2: the tail's slots of `axis`, an axis at or past the rank.
    fn check_unused(&self, _axis: usize) -> Result<(), DecodeError> {
        Ok(())
    }
    /// Step 3: the tail's parameters.
    fn check_params(&self, rank: u8) -> Result<Self::Params, DecodeError>;
    /// Step 6: the port the tail describes (the one that is not [`Format::prefix_port`]:
    /// the output for Quant and CastTess), given the checked prefix (its output span as the raw field
    /// holds it) and the flag word.
    fn check_output(
        &self,
        prefix: &PrefixRepr,
        flags: u32,
        params: &Self::Params,
    ) -> Result<Self::Output, DecodeError>;
    /// The alignment in bytes the checked port `port` needs when it depends on the tail's
    /// fields ([`PortAlign::TileAlign`]); `None`: its [`PortFormat::align_for`].
    fn align(_output: &Self::Output, _port: Port) -> Option<u64> {
        None
    }
    /// The validated descriptor.
    fn finish(
        prefix: PrefixRepr,
        flags: u32,
        params: Self::Params,
        output: Self::Output,
    ) -> Self::Repr;
}

/// The little-endian `u32` at byte `offset` of `bytes` (0 past the end, which the
/// per-entry offset assertions rule out).
fn word_at(bytes: &[u8], offset: usize) -> u32 {
    bytes
        .get(offset..)
        .and_then(|b| b.first_chunk::<4>())
        .map_or(0, |w| u32::from_le_bytes(*w))
}

/// Checks every rule of SPEC §7 on a raw descriptor of tail `T`, in the order of the
/// module doc, recomputing each derived field. Zero address slots are accepted
/// (relocatable packets).
///
/// # Errors
///
/// The first failing rule, as a [`DecodeError`].
pub(crate) fn parse<T: Tail>(raw: &T) -> Result<T::Repr, DecodeError> {
    const {
        assert!(T::FORMAT.is_valid(), "the prefix port is strided");
        assert!(
            crate::wire::rules::reserved_words_known(T::RESERVED),
            "every reserved word of the tail has its code in rules::RESERVED_WORDS"
        );
    }
    let p = raw.prefix();
    let format = T::FORMAT;
    let strided_port = format.prefix_port;
    let (dtype, rank, flags) = check_header(p, raw.as_bytes(), &format, T::RESERVED)?;
    raw.check_header()?;

    let extents = load_u64s(&p.extents);
    let input_strides = load_u64s(&p.input_strides);
    let rank_usize = usize::from(rank);
    for (axis, (e, s)) in extents
        .iter()
        .zip(input_strides.iter())
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
                port: strided_port,
                axis: axis_u8(axis),
                value: *s,
            });
        }
        raw.check_unused(axis)?;
    }

    let params = raw.check_params(rank)?;
    check_singletons(rank_usize, &extents, &input_strides, strided_port)?;

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
    let elements = p.elements.get();
    if elements != expected_elements {
        return Err(DecodeError::ElementCount {
            expected: expected_elements,
            found: elements,
        });
    }

    let strided = admit_port(rank_usize, &extents, &input_strides, dtype, strided_port)?;
    let (input_span, output_span) = match strided_port {
        Port::Input => {
            check_span(Port::Input, strided.span(), p.input_span.get())?;
            (strided.span(), p.output_span.get())
        }
        Port::Output => {
            check_span(Port::Output, strided.span(), p.output_span.get())?;
            (p.input_span.get(), strided.span())
        }
    };

    let prefix = PrefixRepr {
        dtype,
        rank,
        input_address: 0,
        output_address: 0,
        elements,
        input_span,
        output_span,
        extents,
        input_strides,
    };
    let output = raw.check_output(&prefix, flags, &params)?;

    let align = |port: Port| T::align(&output, port).unwrap_or(format.port(port).align_for(dtype));
    let (input_address, output_address) =
        check_addresses(p, &prefix, align(Port::Input), align(Port::Output))?;
    let prefix = PrefixRepr {
        input_address,
        output_address,
        ..prefix
    };
    Ok(T::finish(prefix, flags, params, output))
}

/// Step 1 of the shared parse, the prefix's part: magic, version, byte length, the dtype
/// of the prefix port, the rank (1..=6), the flag bits, the reserved word at 20, then the
/// tail's reserved words at `reserved` (offsets into `bytes`, the whole descriptor).
///
/// # Errors
///
/// The first failing rule, in that order.
pub(crate) fn check_header(
    p: &Prefix,
    bytes: &[u8],
    format: &Format,
    reserved: &[u16],
) -> Result<(DType, u8, u32), DecodeError> {
    let strided_format = format.port(format.prefix_port);
    if p.magic != format.magic {
        return Err(DecodeError::Magic { found: p.magic });
    }
    if p.version.get() != VERSION {
        return Err(DecodeError::Version {
            found: p.version.get(),
        });
    }
    if p.byte_length.get() != format.size {
        return Err(DecodeError::ByteLength {
            found: p.byte_length.get(),
            expected: format.size,
        });
    }
    let code = p.dtype.get();
    let dtype = DType::from_wire_code(code)
        .filter(|d| strided_format.admits(*d))
        .ok_or(DecodeError::DType { code })?;
    let rank_raw = p.rank.get();
    let rank = match u8::try_from(rank_raw) {
        Ok(r @ 1..=6) => r,
        _ => return Err(DecodeError::Rank { rank: rank_raw }),
    };
    let flags = p.flags.get();
    if flags & !format.flag_mask != 0 {
        return Err(DecodeError::UnknownFlags { bits: flags });
    }
    if p.reserved_20.get() != 0 {
        return Err(DecodeError::Reserved {
            offset: 20,
            value: p.reserved_20.get(),
        });
    }
    for &offset in reserved {
        match word_at(bytes, usize::from(offset)) {
            0 => {}
            value => return Err(DecodeError::Reserved { offset, value }),
        }
    }
    Ok((dtype, rank, flags))
}

/// Admits one strided port of `rank` axes the way host admission does ([`View::new`]),
/// after the wire's own rule that an axis of extent 0 or 1 has stride 0.
///
/// # Errors
///
/// [`DecodeError::SingletonStride`], then the twins of [`View::new`]'s rules.
pub(crate) fn admit_port(
    rank: usize,
    extents: &[u64; MAX_RANK],
    strides: &[u64; MAX_RANK],
    dtype: DType,
    port: Port,
) -> Result<View, DecodeError> {
    check_singletons(rank, extents, strides, port)?;
    Ok(View::new(rank, *extents, *strides, dtype, port)?)
}

/// The wire's rule that an axis of extent 0 or 1 has stride 0 (host admission accepts any
/// stride there and normalizes it).
///
/// # Errors
///
/// [`DecodeError::SingletonStride`] naming the first such axis.
pub(crate) fn check_singletons(
    rank: usize,
    extents: &[u64; MAX_RANK],
    strides: &[u64; MAX_RANK],
    port: Port,
) -> Result<(), DecodeError> {
    for (axis, (e, s)) in extents.iter().zip(strides.iter()).enumerate().take(rank) {
        if *e <= 1 && *s != 0 {
            return Err(DecodeError::SingletonStride {
                port,
                axis: axis_u8(axis),
                stride: *s,
            });
        }
    }
    Ok(())
}

/// A port's span field against its recomputation.
///
/// # Errors
///
/// [`DecodeError::Span`].
pub(crate) fn check_span(port: Port, expected: u64, found: u64) -> Result<(), DecodeError> {
    if expected == found {
        Ok(())
    } else {
        Err(DecodeError::Span {
            port,
            expected,
            found,
        })
    }
}

/// Step 7: both address slots against their spans, their alignment and each other.
pub(crate) fn check_addresses(
    p: &Prefix,
    repr: &PrefixRepr,
    input_align: u64,
    output_align: u64,
) -> Result<(u32, u32), DecodeError> {
    let empty = repr.is_empty();
    let slot = |port: Port, address: u64, span: u64| -> Result<u32, DecodeError> {
        let narrow = u32::try_from(address).map_err(|_| DecodeError::Address { port, address })?;
        if address
            .checked_add(span)
            .is_none_or(|end| end > ADDRESS_LIMIT)
        {
            return Err(DecodeError::Range {
                port,
                address,
                span,
            });
        }
        Ok(narrow)
    };
    let in_slot = p.input_address.get();
    let out_slot = p.output_address.get();
    let input_address = slot(Port::Input, in_slot, repr.input_span)?;
    let output_address = slot(Port::Output, out_slot, repr.output_span)?;
    for (port, address, align) in [
        (Port::Input, in_slot, input_align),
        (Port::Output, out_slot, output_align),
    ] {
        if address != 0 && !empty && address.checked_rem(align) != Some(0) {
            return Err(DecodeError::Misaligned {
                port,
                address,
                align,
            });
        }
    }
    if in_slot != 0 && out_slot != 0 && !empty {
        // Both ends fit in 2^32 (checked above), so the sums cannot overflow.
        let in_end = in_slot.saturating_add(repr.input_span);
        let out_end = out_slot.saturating_add(repr.output_span);
        // An empty range (Preproc's frame when the output is all border) overlaps nothing.
        if in_slot < in_end && out_slot < out_end && in_slot < out_end && out_slot < in_end {
            return Err(DecodeError::PortsOverlap {
                input: in_slot,
                output: out_slot,
            });
        }
    }
    Ok((input_address, output_address))
}

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

impl Prefix {
    /// Lists the 24 prefix fields with their offsets into `out`, in wire order, the stride
    /// slots named for the input (Quant v1, CastTess v1).
    pub fn fields(&self, out: &mut Fields) {
        self.fields_for(out, Port::Input);
    }

    /// Lists the 24 prefix fields as [`Prefix::fields`], the stride slots at 112 named for
    /// `port`, the prefix's port (`output_strides[k]` for the Detess entries).
    pub fn fields_for(&self, out: &mut Fields, port: Port) {
        let mut push = |offset, name, value| crate::wire::fields::push(out, offset, name, value);
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
        crate::wire::fields::push_u64s(out, field::EXTENTS, &EXTENT_NAMES, &self.extents);
        let names = match port {
            Port::Input => &INPUT_STRIDE_NAMES,
            Port::Output => &OUTPUT_STRIDE_NAMES,
        };
        crate::wire::fields::push_u64s(out, field::INPUT_STRIDES, names, &self.input_strides);
    }
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// An entry's raw descriptor struct seen from the codec: its size, format, rejection codes,
/// validated representation and byte image, and the functions on them (SPEC §7).
/// Implemented once per descriptor by the wire file ([`descriptor_items`](self)), so an
/// EV74 entry (`crate::ev74::NativeEntry`) only names its descriptor type. Sealed.
pub trait RawDescriptor: sealed::Sealed + fmt::Debug + fmt::Display + Sized {
    /// Size in bytes.
    const SIZE: usize;
    /// The descriptor's format: magic, size, flag bits and both ports by role.
    const FORMAT: Format;
    /// The codes a descriptor can be rejected with, in numeric order.
    const CODES: &'static [DecodeCode];
    /// The validated representation.
    type Repr: Copy + PartialEq + fmt::Debug;
    /// The byte image, `[u8; SIZE]`.
    type Bytes: Copy + Eq + AsRef<[u8]> + fmt::Debug;

    /// The shared fields of a representation.
    fn repr_prefix(repr: &Self::Repr) -> &PrefixRepr;
    /// The shared fields of a representation, to set its address slots.
    fn repr_prefix_mut(repr: &mut Self::Repr) -> &mut PrefixRepr;
    /// The descriptor bytes of a representation.
    fn repr_bytes(repr: &Self::Repr) -> Self::Bytes;
    /// Casts exactly [`RawDescriptor::SIZE`] bytes and checks every rule.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Length`], then the first failing rule.
    fn parse_exact(bytes: &[u8]) -> Result<Self::Repr, DecodeError>;
    /// Views a byte image as the raw descriptor (infallible: alignment 1, exact size).
    fn view(bytes: &Self::Bytes) -> &Self;
    /// The raw prefix.
    fn raw_prefix(&self) -> &Prefix;
    /// Every field of `bytes` with its offset; `None` unless exactly
    /// [`RawDescriptor::SIZE`] long.
    fn listing(bytes: &[u8]) -> Option<Fields>;
}

/// The inherent items every entry's raw descriptor `$raw` (of [`SIZE`](self) bytes, the
/// entry module's `SIZE`) and validated representation `$repr` share: the size, the
/// length-checked view, the listing, the byte image and the empty test. The entry writes
/// its own `parse` (with its rule list), `emit` and `fields`.
macro_rules! descriptor_items {
    ($raw:ident, $repr:ident) => {
        impl $raw {
            /// Size in bytes.
            pub const SIZE: usize = SIZE;

            /// Views `bytes` as a descriptor without any semantic check.
            ///
            /// # Errors
            ///
            /// [`DecodeError::Length`] unless `bytes` is exactly [`SIZE`] bytes long.
            pub fn new_checked(bytes: &[u8]) -> Result<&$raw, DecodeError> {
                <$raw as zerocopy::FromBytes>::ref_from_bytes(bytes).map_err(|_| {
                    DecodeError::Length {
                        found: bytes.len(),
                        expected: SIZE,
                    }
                })
            }
        }

        /// Lists every field, one per line: offset, name, raw value.
        impl core::fmt::Display for $raw {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                $crate::wire::fields::write_listing(f, &self.fields())
            }
        }

        impl $crate::wire::prefix::sealed::Sealed for $raw {}

        impl $crate::wire::prefix::RawDescriptor for $raw {
            const SIZE: usize = SIZE;
            const FORMAT: $crate::wire::prefix::Format = FORMAT;
            const CODES: &'static [DecodeCode] = &CODES;
            type Repr = $repr;
            type Bytes = [u8; SIZE];

            fn repr_prefix(repr: &$repr) -> &$crate::wire::prefix::PrefixRepr {
                &repr.prefix
            }

            fn repr_prefix_mut(repr: &mut $repr) -> &mut $crate::wire::prefix::PrefixRepr {
                &mut repr.prefix
            }

            fn repr_bytes(repr: &$repr) -> [u8; SIZE] {
                repr.to_bytes()
            }

            fn parse_exact(bytes: &[u8]) -> Result<$repr, DecodeError> {
                <$repr>::parse_bytes(bytes)
            }

            fn view(bytes: &[u8; SIZE]) -> &$raw {
                zerocopy::transmute_ref!(bytes)
            }

            fn raw_prefix(&self) -> &$crate::wire::prefix::Prefix {
                &self.prefix
            }

            fn listing(bytes: &[u8]) -> Option<$crate::wire::fields::Fields> {
                <$raw>::new_checked(bytes).ok().map(|raw| raw.fields())
            }
        }

        impl $repr {
            /// Casts `bytes` (exactly [`SIZE`] long) and parses them (see `parse`).
            ///
            /// # Errors
            ///
            /// [`DecodeError::Length`] when `bytes` is not [`SIZE`] bytes long, else as
            /// `parse`.
            pub fn parse_bytes(bytes: &[u8]) -> Result<$repr, DecodeError> {
                <$repr>::parse(<$raw>::new_checked(bytes)?)
            }

            /// The descriptor bytes of this representation.
            pub fn to_bytes(&self) -> [u8; SIZE] {
                let mut raw = <$raw as zerocopy::FromZeros>::new_zeroed();
                self.emit(&mut raw);
                let mut out = [0u8; SIZE];
                out.copy_from_slice(zerocopy::IntoBytes::as_bytes(&raw));
                out
            }

            /// Buffer length needed by `emit`: [`SIZE`] bytes.
            pub const fn buffer_len(&self) -> usize {
                SIZE
            }

            /// Whether the packet is a no-op (element count 0).
            pub const fn is_empty(&self) -> bool {
                self.prefix.is_empty()
            }
        }
    };
}

pub(crate) use descriptor_items;

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test {
    //! The shared parse with the ports swapped: a made-up format whose input is tiled (its
    //! tail would describe it) and whose output is the strided prefix port (SPEC §12's
    //! Detess shape). Nothing in the prefix changes for it; the rules name the output port.

    use zerocopy::FromZeros;

    use super::*;

    /// A descriptor of the prefix and one reserved word: the tail's port is not checked.
    #[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
    #[repr(C)]
    struct Swapped {
        prefix: Prefix,
        reserved: U32,
    }

    const SWAPPED: Format = Format {
        magic: *b"SKTT",
        size: 164,
        flag_mask: 0,
        flag_names: FlagNames {
            bits: &[],
            none: "",
        },
        input: PortFormat {
            layout: PortLayout::Tiled,
            dtypes: &[DType::BF16],
            span: SpanKind::Physical,
            align: PortAlign::Bytes(16),
        },
        output: PortFormat {
            layout: PortLayout::Strided,
            dtypes: &[DType::F32],
            span: SpanKind::Accessed,
            align: PortAlign::Element,
        },
        prefix_port: Port::Output,
    };

    impl Tail for Swapped {
        type Params = ();
        type Output = ();
        type Repr = PrefixRepr;
        const FORMAT: Format = SWAPPED;
        const RESERVED: &'static [u16] = &[];

        fn prefix(&self) -> &Prefix {
            &self.prefix
        }
        fn check_params(&self, _rank: u8) -> Result<(), DecodeError> {
            Ok(())
        }
        fn check_output(&self, _: &PrefixRepr, _: u32, _: &()) -> Result<(), DecodeError> {
            Ok(())
        }
        fn finish(prefix: PrefixRepr, _: u32, _: (), _: ()) -> PrefixRepr {
            prefix
        }
    }

    /// `[2, 3]` FP32 output with row-major strides 12, 4 (span 24 bytes); a 32-byte tiled
    /// input at 0x1000, the output at 0x2000.
    fn packet(edit: impl FnOnce(&mut Prefix)) -> Result<PrefixRepr, DecodeError> {
        let mut raw = Swapped::new_zeroed();
        let mut extents = [0u64; MAX_RANK];
        extents[..2].copy_from_slice(&[2, 3]);
        let mut strides = [0u64; MAX_RANK];
        strides[..2].copy_from_slice(&[12, 4]);
        raw.prefix = PrefixRepr {
            dtype: DType::F32,
            rank: 2,
            input_address: 0x1000,
            output_address: 0x2000,
            elements: 6,
            input_span: 32,
            output_span: 24,
            extents,
            input_strides: strides,
        }
        .emit(&SWAPPED, 0);
        edit(&mut raw.prefix);
        parse(&raw)
    }

    #[test]
    fn a_tiled_input_and_a_strided_output_parse_with_the_output_named() {
        let ok = packet(|_| {}).unwrap();
        assert_eq!((ok.input_span, ok.output_span), (32, 24));
        // The output's dtype is the prefix's, and only FP32 is admitted.
        assert_eq!(
            packet(|p| p.dtype = U32::new(1)),
            Err(DecodeError::DType { code: 1 })
        );
        // The strided port is the output: its span and its strides' rules name it.
        assert_eq!(
            packet(|p| p.output_span = U64::new(20)),
            Err(DecodeError::Span {
                port: Port::Output,
                expected: 24,
                found: 20
            })
        );
        assert_eq!(
            packet(|p| p.input_strides[1] = U64::new(0)).map_err(|e| e.rule()),
            Err(DecodeCode::OutputZeroStride)
        );
        // Each port's alignment is its own: 16 bytes for the tiled input, the element size
        // (4) for the output.
        assert_eq!(
            packet(|p| p.input_address = U64::new(0x1008)),
            Err(DecodeError::Misaligned {
                port: Port::Input,
                address: 0x1008,
                align: 16
            })
        );
        assert!(packet(|p| p.output_address = U64::new(0x2004)).is_ok());
        assert_eq!(
            packet(|p| p.output_address = U64::new(0x2002)),
            Err(DecodeError::Misaligned {
                port: Port::Output,
                address: 0x2002,
                align: 4
            })
        );
    }
}
