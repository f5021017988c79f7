//! The Detess-family descriptors v1 (SPEC §7, §12): Detess, DetessCast and DetessDequant,
//! one 224-byte layout, one entry per op. The input is the tiled MLA output (the tail
//! describes it); the output is the strided prefix port.
//!
//! | entry | magic | route | input (offset 164) | output (offset 8) |
//! | --- | --- | --- | --- | --- |
//! | `simaai_kernels_ev74_detess_v1` | `b"SKDT"` | 49 (0x31) | INT8, INT16, INT32, BF16 | the input's dtype |
//! | `simaai_kernels_ev74_detesscast_v1` | `b"SKDC"` | 50 (0x32) | BF16 | FP32 |
//! | `simaai_kernels_ev74_detessdequant_v1` | `b"SKDQ"` | 51 (0x33) | INT8, INT16, INT32 | FP32, FP16, BF16 |
//!
//! | offset | field |
//! | --- | --- |
//! | 0..160 | the prefix ([`crate::wire::prefix`]) with the output as its port: dtype code of the output at 8 (BF16 1, FP32 3, FP16 4, INT8 5, INT16 6, INT32 7), flags at 16 (bit 0 `align_c16`, bit 1 `cblock`: Compact, PadTo16, CBlock16), the input's physical span at 48, the output's accessed span at 56, the output's byte strides at 112 |
//! | 160 | `[i8; 4]` axis of D, H, W, C (−1 absent) · 164 u32 dtype code of the tiled input |
//! | 168 | `[u32; 4]` tile extents D, H, W, C |
//! | 184 | u64 input bytes per outer index |
//! | 192 | `[u32; 4]` tile counts D, H, W, C |
//! | 208 | u32 tile alignment, 16 or 1 · 212 u32 reserved = 0 |
//! | 216 | u32 multiplier bits · 220 i32 zero point (DetessDequant; reserved = 0 in the others) |
//!
//! [`DetessDescriptorV1`] is the raw view (any bytes), one type per entry through its const
//! parameter ([`Conversion::code`]); [`DetessRepr`] is the validated representation of all
//! three. [`DetessRepr::parse`] checks every rule of SPEC §7, §12 and §12.1, recomputing each
//! derived field, and [`DetessRepr::emit`] cannot fail.
//!
//! Derived fields, as the codec writes them and the device recomputes them: the element
//! count, the output's accessed span, the input's physical span (the layout's capacity, 0
//! when empty), the bytes per outer index and the tile counts, as for CastTess v1
//! ([`crate::wire::casttess`]). Validation reuses host admission: `View::new` for the
//! output and the Detess ops' tiled-input admission (the layout, then the c16 tile-channel
//! rule) for the input, and the dequantization parameters' check, so the device accepts
//! exactly what admission produces.
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use static_assertions::const_assert_eq;
use zerocopy::little_endian::{I32, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::dtype::DType;
use crate::error::{AdmissionError, Port};
use crate::layout::{Channels, MlaTiled, TileAlign, TiledView};
use crate::ops::dequant::Params as DequantParams;
use crate::ops::detess::admit_tiled_input;
use crate::wire::casttess::{
    ABSENT_AXIS, Params, TiledTail, check_tile_counts, check_tile_params, push_tiled_tail,
    store_u32s,
};
use crate::wire::fields::{self, FieldValue, Fields};
use crate::wire::prefix::{
    self, FlagName, FlagNames, Format, PortAlign, PortFormat, PortLayout, Prefix, PrefixRepr,
    RawDescriptor, SpanKind, Tail,
};
use crate::wire::rules::{DecodeCode, DecodeError, axis_i8, merge_codes};

/// Size of each Detess-family descriptor in bytes.
pub const SIZE: usize = 224;

/// Which op a Detess-family descriptor runs: the const parameter of [`DetessDescriptorV1`]
/// is its [`Conversion::code`], and its magic word tells it on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Conversion {
    /// Detess: the input's dtype, untiled (magic `SKDT`).
    Detess,
    /// DetessCast: BF16 → FP32, `bits << 16` (magic `SKDC`).
    Cast,
    /// DetessDequant: INT8 / INT16 / INT32 → FP32 / FP16 / BF16 (SPEC §12.2; magic `SKDQ`).
    Dequant,
}

impl Conversion {
    /// Every conversion, by code.
    pub const ALL: [Conversion; 3] = [Conversion::Detess, Conversion::Cast, Conversion::Dequant];

    /// The code (the raw descriptor's const parameter): 0, 1, 2.
    pub const fn code(self) -> u8 {
        match self {
            Conversion::Detess => 0,
            Conversion::Cast => 1,
            Conversion::Dequant => 2,
        }
    }

    /// The conversion of code `code` (any code above 1 is DetessDequant).
    pub const fn from_code(code: u8) -> Conversion {
        match code {
            0 => Conversion::Detess,
            1 => Conversion::Cast,
            _ => Conversion::Dequant,
        }
    }

    /// The magic word at offset 0.
    pub const fn magic(self) -> [u8; 4] {
        match self {
            Conversion::Detess => *b"SKDT",
            Conversion::Cast => *b"SKDC",
            Conversion::Dequant => *b"SKDQ",
        }
    }

    /// The dtypes the tiled input (offset 164) admits.
    pub const fn input_dtypes(self) -> &'static [DType] {
        match self {
            Conversion::Detess => &[DType::I8, DType::I16, DType::I32, DType::BF16],
            Conversion::Cast => &[DType::BF16],
            Conversion::Dequant => &[DType::I8, DType::I16, DType::I32],
        }
    }

    /// The dtypes the strided output (offset 8) admits.
    pub const fn output_dtypes(self) -> &'static [DType] {
        match self {
            Conversion::Detess => &[DType::I8, DType::I16, DType::I32, DType::BF16],
            Conversion::Cast => &[DType::F32],
            Conversion::Dequant => &[DType::F32, DType::F16, DType::BF16],
        }
    }

    /// Whether the words at 216 and 220 hold the dequantization parameters (else they are
    /// reserved words).
    pub const fn has_params(self) -> bool {
        matches!(self, Conversion::Dequant)
    }

    /// The descriptor format of this conversion's entry.
    pub const fn format(self) -> Format {
        Format {
            magic: self.magic(),
            // SIZE is 224 (statically asserted), which fits u16.
            size: SIZE as u16,
            flag_mask: DetessFlags::all().bits(),
            flag_names: FLAG_NAMES,
            input: PortFormat {
                layout: PortLayout::Tiled,
                dtypes: self.input_dtypes(),
                span: SpanKind::Physical,
                align: PortAlign::TileAlign,
            },
            output: PortFormat {
                layout: PortLayout::Strided,
                dtypes: self.output_dtypes(),
                span: SpanKind::Accessed,
                align: PortAlign::Element,
            },
            prefix_port: Port::Output,
        }
    }

    /// The codes a descriptor of this conversion's entry can be rejected with, in numeric
    /// order.
    pub const fn codes(self) -> &'static [DecodeCode] {
        match self {
            Conversion::Detess => &DETESS_CODES,
            Conversion::Cast => &CAST_CODES,
            Conversion::Dequant => &DEQUANT_CODES,
        }
    }
}

/// How the flag word reads in a listing.
const FLAG_NAMES: FlagNames = FlagNames {
    bits: &[
        FlagName {
            bit: DetessFlags::ALIGN_C16.bits(),
            set: "align_c16",
            clear: Some("compact"),
        },
        FlagName {
            bit: DetessFlags::CBLOCK.bits(),
            set: "cblock",
            clear: None,
        },
    ],
    none: "compact",
};

/// The tail codes every Detess-family entry has, in numeric order.
const TAIL_CODES: [DecodeCode; 14] = [
    DecodeCode::InputSpanOverflow,
    DecodeCode::InputSpan,
    DecodeCode::Reserved212,
    DecodeCode::TileAlign,
    DecodeCode::AxisOutOfRange,
    DecodeCode::AxisRepeated,
    DecodeCode::AbsentTile,
    DecodeCode::AbsentTileCount,
    DecodeCode::TileExtent,
    DecodeCode::TileCount,
    DecodeCode::BytesPerOuter,
    DecodeCode::InputDType,
    DecodeCode::ChannelFlags,
    DecodeCode::C16TileChannels,
];

/// The prefix's codes, the shared tail's and the conversion's own `extra` (in numeric
/// order), in numeric order.
const fn codes_with<const N: usize, const T: usize, const M: usize>(
    extra: [DecodeCode; N],
) -> [DecodeCode; M] {
    merge_codes(
        prefix::OUTPUT_PREFIX_CODES,
        merge_codes::<14, N, T>(TAIL_CODES, extra),
    )
}

/// The codes of a Detess v1 descriptor (`docs/errors.md`), in numeric order: the words at
/// 216 and 220 are reserved, and the output's dtype is the input's.
pub const DETESS_CODES: [DecodeCode; 45] = codes_with::<3, 17, 45>([
    DecodeCode::Reserved220,
    DecodeCode::Reserved216,
    DecodeCode::DTypeMismatch,
]);

/// The codes of a DetessCast v1 descriptor, in numeric order: the words at 216 and 220 are
/// reserved.
pub const CAST_CODES: [DecodeCode; 44] =
    codes_with::<2, 16, 44>([DecodeCode::Reserved220, DecodeCode::Reserved216]);

/// The codes of a DetessDequant v1 descriptor, in numeric order: the multiplier and the
/// zero point (SPEC §12.2).
pub const DEQUANT_CODES: [DecodeCode; 45] = codes_with::<3, 17, 45>([
    DecodeCode::MultiplierNotFinite,
    DecodeCode::MultiplierNotPositive,
    DecodeCode::DequantZeroPoint,
]);

/// Byte offsets of every field (SPEC §7): the prefix's, then the tail's, pinned against
/// the struct below.
pub mod field {
    pub use crate::wire::prefix::field::*;
    /// `[i8; 4]` logical axis of D, H, W, C (−1 absent).
    pub const AXES: usize = 160;
    /// `u32` dtype code of the tiled input.
    pub const INPUT_DTYPE: usize = 164;
    /// `[u32; 4]` tile extents of D, H, W, C.
    pub const TILE: usize = 168;
    /// `u64` input bytes per outer index.
    pub const BYTES_PER_OUTER: usize = 184;
    /// `[u32; 4]` tile counts of D, H, W, C.
    pub const TILE_COUNTS: usize = 192;
    /// `u32` tile alignment in bytes (16 or 1).
    pub const TILE_ALIGN: usize = 208;
    /// `u32` reserved word.
    pub const RESERVED_212: usize = 212;
    /// `u32` multiplier binary32 bits (DetessDequant; else reserved).
    pub const MULTIPLIER: usize = 216;
    /// `i32` zero point (DetessDequant; else reserved).
    pub const ZERO_POINT: usize = 220;
}

/// A raw Detess-family descriptor: 224 little-endian bytes, alignment 1, no padding. `K` is
/// the entry's [`Conversion::code`]: `DetessDescriptorV1<0>` is Detess v1, `<1>`
/// DetessCast v1, `<2>` DetessDequant v1 (the aliases [`DetessRaw`], [`DetessCastRaw`],
/// [`DetessDequantRaw`]).
///
/// Fields hold whatever the bytes say; nothing is validated here (see
/// [`DetessRepr::parse`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct DetessDescriptorV1<const K: u8> {
    /// The shared prefix (bytes 0..160), the output as its port.
    pub prefix: Prefix,
    /// Logical axis playing D, H, W, C; −1 when absent.
    pub axes: [i8; 4],
    /// Dtype code of the tiled input.
    pub input_dtype: U32,
    /// Tile extents of D, H, W, C in elements (1 for an absent role).
    pub tile: [U32; 4],
    /// Input bytes per outer index.
    pub bytes_per_outer: U64,
    /// Tiles along D, H, W, C (1 for an absent role).
    pub tile_counts: [U32; 4],
    /// Tile alignment in bytes, 16 or 1.
    pub tile_align: U32,
    /// Reserved, 0.
    pub reserved_212: U32,
    /// Multiplier binary32 bits (DetessDequant; else reserved, 0).
    pub multiplier: U32,
    /// Zero point (DetessDequant; else reserved, 0).
    pub zero_point: I32,
}

/// The raw Detess v1 descriptor.
pub type DetessRaw = DetessDescriptorV1<0>;
/// The raw DetessCast v1 descriptor.
pub type DetessCastRaw = DetessDescriptorV1<1>;
/// The raw DetessDequant v1 descriptor.
pub type DetessDequantRaw = DetessDescriptorV1<2>;

const_assert_eq!(core::mem::size_of::<DetessRaw>(), SIZE);
const_assert_eq!(core::mem::align_of::<DetessRaw>(), 1);
const_assert_eq!(core::mem::offset_of!(DetessRaw, prefix), 0);
const_assert_eq!(core::mem::offset_of!(DetessRaw, axes), field::AXES);
const_assert_eq!(
    core::mem::offset_of!(DetessRaw, input_dtype),
    field::INPUT_DTYPE
);
const_assert_eq!(core::mem::offset_of!(DetessRaw, tile), field::TILE);
const_assert_eq!(
    core::mem::offset_of!(DetessRaw, bytes_per_outer),
    field::BYTES_PER_OUTER
);
const_assert_eq!(
    core::mem::offset_of!(DetessRaw, tile_counts),
    field::TILE_COUNTS
);
const_assert_eq!(
    core::mem::offset_of!(DetessRaw, tile_align),
    field::TILE_ALIGN
);
const_assert_eq!(
    core::mem::offset_of!(DetessRaw, reserved_212),
    field::RESERVED_212
);
const_assert_eq!(
    core::mem::offset_of!(DetessRaw, multiplier),
    field::MULTIPLIER
);
const_assert_eq!(
    core::mem::offset_of!(DetessRaw, zero_point),
    field::ZERO_POINT
);

/// The Detess-family flag word (SPEC §12.1): a model archive's two channel flags. Bits
/// other than 0 and 1 must be zero; bit 1 without bit 0 is [`DecodeError::ChannelFlags`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct DetessFlags(u32);

bitflags::bitflags! {
    impl DetessFlags: u32 {
        /// Bit 0, `align_c16`: channels stored padded to a multiple of 16 (PadTo16, or
        /// CBlock16 with bit 1).
        const ALIGN_C16 = 1 << 0;
        /// Bit 1, `cblock`: 16-channel blocks (CBlock16; needs bit 0).
        const CBLOCK = 1 << 1;
    }
}

impl DetessFlags {
    /// The flag word of a channel encoding.
    pub const fn from_channels(channels: Channels) -> DetessFlags {
        match channels {
            Channels::Compact => DetessFlags::empty(),
            Channels::PadTo16 => DetessFlags::ALIGN_C16,
            Channels::CBlock16 => DetessFlags::ALIGN_C16.union(DetessFlags::CBLOCK),
        }
    }

    /// The channel encoding these flags select.
    ///
    /// # Errors
    ///
    /// [`DecodeError::ChannelFlags`] for bit 1 without bit 0.
    pub fn channels(self) -> Result<Channels, DecodeError> {
        Channels::from_flags(
            self.contains(DetessFlags::ALIGN_C16),
            self.contains(DetessFlags::CBLOCK),
        )
        .map_err(|_| DecodeError::ChannelFlags)
    }
}

/// A validated Detess-family descriptor (SPEC §7, §12, §12.1): the validated prefix (whose
/// `dtype` is the output's, `input_span` the input's physical span and `input_strides` the
/// **output's** byte strides: the prefix describes the output), the conversion, the tiled
/// input's dtype and layout, and every derived field consistent with its recomputation.
///
/// Fields are public so a codec can build one; [`DetessRepr::emit`] writes whatever it
/// holds and [`DetessRepr::parse`] is the only way to know a descriptor is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DetessRepr {
    /// The shared fields, the output as the prefix port.
    pub prefix: PrefixRepr,
    /// Which op (the magic word).
    pub conversion: Conversion,
    /// The tiled input's dtype.
    pub input_dtype: DType,
    /// The tiled input's layout: axes, tile extents, channel encoding, tile alignment.
    pub layout: MlaTiled,
    /// Input bytes per outer index (0 when empty).
    pub bytes_per_outer: u64,
    /// Tiles along D, H, W, C (1 for an absent role).
    pub tile_counts: [u32; 4],
    /// Multiplier binary32 bits (DetessDequant; 0 otherwise).
    pub multiplier_bits: u32,
    /// Zero point (DetessDequant; 0 otherwise).
    pub zero_point: i32,
}

/// The header words of step 1: the input dtype and the tile alignment.
pub(crate) struct Header {
    input_dtype: DType,
    tile_align: TileAlign,
}

/// What step 6 checked: the channel encoding, the input's alignment in bytes, the bytes
/// per outer index.
pub(crate) struct Checked {
    channels: Channels,
    input_align: u64,
    bytes_per_outer: u64,
    multiplier_bits: u32,
    zero_point: i32,
}

impl<const K: u8> DetessDescriptorV1<K> {
    /// This descriptor's conversion.
    pub const CONVERSION: Conversion = Conversion::from_code(K);

    /// Size in bytes.
    pub const SIZE: usize = SIZE;

    /// The step-1 header words.
    fn header(&self) -> Result<Header, DecodeError> {
        let code = self.input_dtype.get();
        let input_dtype = DType::from_wire_code(code)
            .filter(|d| Self::CONVERSION.format().input.admits(*d))
            .ok_or(DecodeError::InputDType { code })?;
        let value = self.tile_align.get();
        let tile_align =
            TileAlign::from_bytes(u64::from(value)).ok_or(DecodeError::TileAlign { value })?;
        Ok(Header {
            input_dtype,
            tile_align,
        })
    }

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
    /// slots separately), for listings such as `simak packet decode`. Values are shown raw,
    /// whatever they are.
    pub fn fields(&self) -> Fields {
        let mut out = Fields::new();
        self.prefix.fields_for(&mut out, Port::Output);
        push_tiled_tail(
            &mut out,
            TiledTail {
                axes: &self.axes,
                word_164: ("input_dtype", FieldValue::U32(self.input_dtype.get())),
                tile: &self.tile,
                bytes_per_outer: self.bytes_per_outer.get(),
                tile_counts: &self.tile_counts,
                tile_align: self.tile_align.get(),
                word_212: ("reserved_212", FieldValue::Hex32(self.reserved_212.get())),
            },
        );
        let (multiplier, zero_point) = if Self::CONVERSION.has_params() {
            ("multiplier", "zero_point")
        } else {
            ("reserved_216", "reserved_220")
        };
        fields::push(
            &mut out,
            field::MULTIPLIER,
            multiplier,
            FieldValue::Hex32(self.multiplier.get()),
        );
        fields::push(
            &mut out,
            field::ZERO_POINT,
            zero_point,
            FieldValue::I32(self.zero_point.get()),
        );
        out
    }
}

impl<const K: u8> Tail for DetessDescriptorV1<K> {
    type Params = (Header, Params);
    type Output = Checked;
    type Repr = DetessRepr;
    const FORMAT: Format = Conversion::from_code(K).format();
    const RESERVED: &'static [u16] = if Conversion::from_code(K).has_params() {
        &[212]
    } else {
        &[212, 216, 220]
    };

    fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    fn check_header(&self) -> Result<(), DecodeError> {
        self.header().map(|_| ())
    }

    fn check_params(&self, rank: u8) -> Result<(Header, Params), DecodeError> {
        let header = self.header()?;
        let params = check_tile_params(&self.axes, &self.tile, &self.tile_counts, rank)?;
        Ok((header, params))
    }

    fn check_output(
        &self,
        p: &PrefixRepr,
        flags: u32,
        (header, params): &(Header, Params),
    ) -> Result<Checked, DecodeError> {
        let channels = DetessFlags::from_bits_retain(flags).channels()?;
        if Self::CONVERSION == Conversion::Detess && p.dtype != header.input_dtype {
            return Err(DecodeError::DTypeMismatch {
                input: header.input_dtype,
                output: p.dtype,
            });
        }
        let layout =
            MlaTiled::new(params.axes, params.tile, channels).with_tile_align(header.tile_align);
        let tiled = admit_tiled_input(header.input_dtype, &layout, p.active_extents())
            .map_err(input_port)?;
        check_tile_counts(&tiled, params, self.bytes_per_outer.get())?;
        prefix::check_span(Port::Input, tiled.capacity(), p.input_span)?;
        let (multiplier_bits, zero_point) = if Self::CONVERSION.has_params() {
            let params = DequantParams::from_bits(self.multiplier.get())
                .with_zero_point(self.zero_point.get());
            params.check(header.input_dtype, p.dtype)?;
            (params.multiplier_bits, params.zero_point)
        } else {
            (0, 0)
        };
        let input_align = match header.tile_align {
            TileAlign::Bytes16 => header.tile_align.bytes(),
            TileAlign::Bytes1 => header.input_dtype.size_u64(),
        };
        Ok(Checked {
            channels,
            input_align,
            bytes_per_outer: tiled.bytes_per_outer(),
            multiplier_bits,
            zero_point,
        })
    }

    fn align(checked: &Checked, port: Port) -> Option<u64> {
        match port {
            Port::Input => Some(checked.input_align),
            Port::Output => None,
        }
    }

    fn finish(
        prefix: PrefixRepr,
        _flags: u32,
        (header, params): (Header, Params),
        checked: Checked,
    ) -> DetessRepr {
        DetessRepr {
            prefix,
            conversion: Self::CONVERSION,
            input_dtype: header.input_dtype,
            layout: MlaTiled::new(params.axes, params.tile, checked.channels)
                .with_tile_align(header.tile_align),
            bytes_per_outer: checked.bytes_per_outer,
            tile_counts: params.wire_counts,
            multiplier_bits: checked.multiplier_bits,
            zero_point: checked.zero_point,
        }
    }
}

/// The tiled layout's admission errors name the output port (its rules were written for
/// the input-side ops); here the tiled port is the input.
fn input_port(e: AdmissionError) -> DecodeError {
    match e {
        AdmissionError::SpanOverflow { .. } => DecodeError::SpanOverflow { port: Port::Input },
        other => DecodeError::from(other),
    }
}

impl<const K: u8> core::fmt::Display for DetessDescriptorV1<K> {
    /// Lists every field, one per line: offset, name, raw value.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        fields::write_listing(f, &self.fields())
    }
}

impl<const K: u8> prefix::sealed::Sealed for DetessDescriptorV1<K> {}

impl<const K: u8> RawDescriptor for DetessDescriptorV1<K> {
    const SIZE: usize = SIZE;
    const FORMAT: Format = Conversion::from_code(K).format();
    const CODES: &'static [DecodeCode] = Conversion::from_code(K).codes();
    type Repr = DetessRepr;
    type Bytes = [u8; SIZE];

    fn repr_prefix(repr: &DetessRepr) -> &PrefixRepr {
        &repr.prefix
    }

    fn repr_prefix_mut(repr: &mut DetessRepr) -> &mut PrefixRepr {
        &mut repr.prefix
    }

    fn repr_bytes(repr: &DetessRepr) -> [u8; SIZE] {
        repr.to_bytes()
    }

    fn parse_exact(bytes: &[u8]) -> Result<DetessRepr, DecodeError> {
        DetessRepr::parse(Self::new_checked(bytes)?)
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

impl DetessRepr {
    /// Checks every rule of SPEC §7, §12 and §12.1 on a raw descriptor of entry `K`,
    /// recomputing each derived field, in the shared order of [`crate::wire::prefix`]:
    /// header (then the reserved words at 212, and at 216 and 220 but for DetessDequant;
    /// the input dtype code; the tile alignment), unused slots, the axis map, the element
    /// count, the output port, the tiled input (channel flags, Detess's same dtype, the
    /// layout, the c16 tile-channel rule, tile counts, bytes per outer index, the physical
    /// span; DetessDequant's multiplier and zero point), addresses (the input aligned to
    /// 16 bytes at tile alignment 16, else to its element size; the output to its element
    /// size).
    ///
    /// # Errors
    ///
    /// The first failing rule, as a [`DecodeError`].
    pub fn parse<const K: u8>(raw: &DetessDescriptorV1<K>) -> Result<DetessRepr, DecodeError> {
        const { assert!(K <= 2, "K is a Conversion code: 0, 1 or 2") };
        prefix::parse::<DetessDescriptorV1<K>>(raw)
    }

    /// Casts `bytes` (exactly [`SIZE`] long) as entry `K`'s descriptor and parses them.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Length`] when `bytes` is not [`SIZE`] bytes long, else as
    /// [`DetessRepr::parse`].
    pub fn parse_bytes<const K: u8>(bytes: &[u8]) -> Result<DetessRepr, DecodeError> {
        DetessRepr::parse(DetessDescriptorV1::<K>::new_checked(bytes)?)
    }

    /// Writes this representation into a raw descriptor (every byte is written; the magic
    /// word is this representation's conversion's, whatever `K` is).
    pub fn emit<const K: u8>(&self, raw: &mut DetessDescriptorV1<K>) {
        let mut axes = [ABSENT_AXIS; 4];
        for (w, a) in axes.iter_mut().zip(self.layout.axes.iter()) {
            if let Some(a) = a {
                *w = axis_i8(*a);
            }
        }
        let format = self.conversion.format();
        *raw = DetessDescriptorV1 {
            prefix: self.prefix.emit(
                &format,
                DetessFlags::from_channels(self.layout.channels).bits(),
            ),
            axes,
            input_dtype: U32::new(self.input_dtype.wire_code().unwrap_or(0)),
            tile: store_u32s(&self.layout.tile),
            bytes_per_outer: U64::new(self.bytes_per_outer),
            tile_counts: store_u32s(&self.tile_counts),
            // The alignment is 16 or 1, which fits u32.
            tile_align: U32::new(self.layout.tile_align.bytes() as u32),
            reserved_212: U32::ZERO,
            multiplier: U32::new(self.multiplier_bits),
            zero_point: I32::new(self.zero_point),
        };
    }

    /// The descriptor bytes of this representation.
    pub fn to_bytes(&self) -> [u8; SIZE] {
        let mut raw = <DetessRaw as zerocopy::FromZeros>::new_zeroed();
        self.emit(&mut raw);
        let mut out = [0u8; SIZE];
        out.copy_from_slice(raw.as_bytes());
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

    /// The output's byte strides (the prefix's stride slots, unused axes 0).
    pub const fn output_strides(&self) -> &[u64; crate::tensor::MAX_RANK] {
        &self.prefix.input_strides
    }

    /// The dequantization parameters (DetessDequant; `None` for the other conversions).
    pub const fn dequant_params(&self) -> Option<DequantParams> {
        if self.conversion.has_params() {
            Some(DequantParams::from_bits(self.multiplier_bits).with_zero_point(self.zero_point))
        } else {
            None
        }
    }

    /// The admitted tiled input (capacity, tile offsets, tile extents), recomputed from the
    /// validated fields.
    ///
    /// # Errors
    ///
    /// The admission errors of the Detess ops' tiled input; never for a representation
    /// returned by [`DetessRepr::parse`].
    pub fn tiled(&self) -> Result<TiledView, AdmissionError> {
        admit_tiled_input(self.input_dtype, &self.layout, self.prefix.active_extents())
    }
}

/// Number of entries returned by [`DetessDescriptorV1::fields`].
pub const FIELD_COUNT: usize = 42;

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
pub(crate) mod test;
