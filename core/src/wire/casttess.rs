//! CastTess descriptor v1: 216 bytes, little-endian (SPEC §7): the shared prefix, then the
//! `MlaTiled` layout of the output.
//!
//! Native entry `simaai_kernels_ev74_casttess_v1`, route 48 (0x30).
//!
//! | offset | field |
//! | --- | --- |
//! | 0..160 | the prefix ([`crate::wire::prefix`]): magic `b"SKCT"`, byte length 216, flags (bit 0 PadTo16), the span at 56 is the output's physical span (the capacity) |
//! | 160 | `[i8; 4]` axis of D, H, W, C (−1 absent) · 164 u32 reserved = 0 |
//! | 168 | `[u32; 4]` tile extents D, H, W, C |
//! | 184 | u64 output bytes per outer index |
//! | 192 | `[u32; 4]` tile counts D, H, W, C |
//! | 208 | u32 tile alignment = 16 · 212 u32 reserved = 0 |
//!
//! [`CastTessDescriptorV1`] is the raw view (any bytes); [`CastTessRepr`] is the validated
//! representation: [`CastTessRepr::parse`] checks every rule of SPEC §5 and §7, recomputing
//! each derived field (each rejection is a [`DecodeError`] with a stable code) and
//! [`CastTessRepr::emit`] cannot fail.
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
//! Validation reuses the admission code of the host: `View::new` for the input port and
//! [`MlaTiled::admit`] for the tiled output, so the device accepts exactly what admission
//! produces.
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use static_assertions::const_assert_eq;
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::dtype::DType;
use crate::error::{AdmissionError, Port};
use crate::layout::{Channels, MlaTiled, TILE_ALIGN, TileAxis, TiledView};
use crate::wire::fields::{self, FieldValue, Fields};
use crate::wire::prefix::{
    self, FlagName, FlagNames, Format, PortAlign, PortFormat, PortLayout, Prefix, PrefixRepr,
    SpanKind, Tail,
};
use crate::wire::rules::{DecodeCode, DecodeError, axis_i8, merge_codes};

pub use crate::wire::prefix::{ADDRESS_LIMIT, VERSION};

/// The magic word at offset 0.
pub const MAGIC: [u8; 4] = *b"SKCT";
/// Size of the descriptor in bytes.
pub const SIZE: usize = 216;
/// The tile alignment field's only valid value, in bytes (SPEC §5).
pub const TILE_ALIGNMENT: u32 = 16;
/// Wire value of an absent D/H/W/C role.
pub const ABSENT_AXIS: i8 = -1;

/// The prefix facts of CastTess v1.
pub const FORMAT: Format = Format {
    magic: MAGIC,
    // SIZE is 216 (statically asserted), which fits u16.
    size: SIZE as u16,
    flag_mask: CastTessFlags::all().bits(),
    flag_names: FlagNames {
        bits: &[FlagName {
            bit: CastTessFlags::PAD_TO_16.bits(),
            set: "pad16",
            clear: Some("compact"),
        }],
        none: "compact",
    },
    input: prefix::FLOAT_INPUT,
    output: PortFormat {
        layout: PortLayout::Tiled,
        dtypes: &[DType::BF16],
        span: SpanKind::Physical,
        align: PortAlign::Bytes(TILE_ALIGN),
    },
    prefix_port: Port::Input,
};

/// The codes a CastTess v1 descriptor can be rejected with (`docs/errors.md`): the prefix's
/// and the tail's, in numeric order.
pub const CODES: [DecodeCode; 40] = merge_codes(prefix::CODES, TAIL_CODES);

/// The codes of the CastTess v1 tail's own rules (its fields, and its output port where the
/// prefix does not check it).
pub const TAIL_CODES: [DecodeCode; 11] = [
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

/// Byte offsets of every field (SPEC §7): the prefix's, then the tail's, pinned against
/// the struct below.
pub mod field {
    pub use crate::wire::prefix::field::*;
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
    /// The shared prefix (bytes 0..160).
    pub prefix: Prefix,
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
const_assert_eq!(core::mem::offset_of!(CastTessDescriptorV1, prefix), 0);
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
            // CBlock16 never reaches an input-side plan (admission refuses it, SPEC §12.1).
            Channels::PadTo16 | Channels::CBlock16 => CastTessFlags::PAD_TO_16,
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

/// A validated CastTess v1 descriptor (SPEC §5, §7): the validated prefix, real enums, the
/// admitted layout, and every derived field consistent with its recomputation.
///
/// Fields are public so a codec can build one; [`CastTessRepr::emit`] writes whatever it
/// holds and [`CastTessRepr::parse`] is the only way to know a descriptor is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CastTessRepr {
    /// The shared fields (dtype, rank, addresses, element count, spans, extents, input
    /// strides; `prefix.output_span` is the physical span, the `MlaTiled` capacity).
    pub prefix: PrefixRepr,
    /// Channel mode (flag bit 0).
    pub channels: Channels,
    /// Logical axis playing D, H, W, C (`None` = absent).
    pub axes: [Option<u8>; 4],
    /// Tile extents of D, H, W, C in elements.
    pub tile: [u32; 4],
    /// Output bytes per outer index (0 when empty).
    pub bytes_per_outer: u64,
    /// Tiles along D, H, W, C (1 for an absent role).
    pub tile_counts: [u32; 4],
}

pub(crate) fn load_u32s(raw: &[U32; 4]) -> [u32; 4] {
    let mut out = [0u32; 4];
    for (o, r) in out.iter_mut().zip(raw.iter()) {
        *o = r.get();
    }
    out
}

pub(crate) fn store_u32s(values: &[u32; 4]) -> [U32; 4] {
    let mut out = [U32::ZERO; 4];
    for (o, v) in out.iter_mut().zip(values.iter()) {
        *o = U32::new(*v);
    }
    out
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

/// The axis map and tiles (step 3 of the shared parse).
pub(crate) struct Params {
    pub(crate) axes: [Option<u8>; 4],
    pub(crate) tile: [u32; 4],
    pub(crate) wire_counts: [u32; 4],
}

impl Tail for CastTessDescriptorV1 {
    type Params = Params;
    type Output = (Channels, u64);
    type Repr = CastTessRepr;
    const FORMAT: Format = FORMAT;
    const RESERVED: &'static [u16] = &[164, 212];

    fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    fn check_header(&self) -> Result<(), DecodeError> {
        match self.tile_align.get() {
            TILE_ALIGNMENT => Ok(()),
            value => Err(DecodeError::TileAlign { value }),
        }
    }

    fn check_params(&self, rank: u8) -> Result<Params, DecodeError> {
        check_tile_params(&self.axes, &self.tile, &self.tile_counts, rank)
    }

    fn check_output(
        &self,
        p: &PrefixRepr,
        flags: u32,
        params: &Params,
    ) -> Result<(Channels, u64), DecodeError> {
        let channels = CastTessFlags::from_bits_retain(flags).channels();
        let tiled =
            MlaTiled::new(params.axes, params.tile, channels).admit(p.active_extents(), 2)?;
        check_tile_counts(&tiled, params, self.bytes_per_outer.get())?;
        prefix::check_span(Port::Output, tiled.capacity(), p.output_span)?;
        Ok((channels, tiled.bytes_per_outer()))
    }

    fn finish(
        prefix: PrefixRepr,
        _flags: u32,
        params: Params,
        (channels, bytes_per_outer): (Channels, u64),
    ) -> CastTessRepr {
        CastTessRepr {
            prefix,
            channels,
            axes: params.axes,
            tile: params.tile,
            bytes_per_outer,
            tile_counts: params.wire_counts,
        }
    }
}

/// The axis map and tiles of a tiled port's tail (`[i8; 4]` axes at 160, tile extents at
/// 168, tile counts at 192): absent roles have tile 1 and count 1, present ones an axis
/// below `rank`. Shared by CastTess v1 and the Detess entries.
pub(crate) fn check_tile_params(
    raw_axes: &[i8; 4],
    raw_tile: &[U32; 4],
    raw_counts: &[U32; 4],
    rank: u8,
) -> Result<Params, DecodeError> {
    let tile = load_u32s(raw_tile);
    let wire_counts = load_u32s(raw_counts);
    let mut axes = [None; 4];
    for (((slot, &value), role), (&t, &count)) in axes
        .iter_mut()
        .zip(raw_axes.iter())
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
    Ok(Params {
        axes,
        tile,
        wire_counts,
    })
}

/// The tile counts and bytes per outer index of a tail against the admitted layout.
pub(crate) fn check_tile_counts(
    tiled: &TiledView,
    params: &Params,
    bytes_per_outer: u64,
) -> Result<(), DecodeError> {
    for ((role, expected), &found) in TileAxis::ALL
        .into_iter()
        .zip(tile_counts(tiled))
        .zip(params.wire_counts.iter())
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
    if bytes_per_outer != tiled.bytes_per_outer() {
        return Err(DecodeError::BytesPerOuter {
            expected: tiled.bytes_per_outer(),
            found: bytes_per_outer,
        });
    }
    Ok(())
}

prefix::descriptor_items!(CastTessDescriptorV1, CastTessRepr);

impl CastTessRepr {
    /// Checks every rule of SPEC §5 and §7 on a raw descriptor, recomputing each derived
    /// field, in the shared order of [`crate::wire::prefix`]: header (then the reserved
    /// words at 164 and 212 and the tile alignment), unused slots, the axis map (absent
    /// roles: tile 1, count 1; values below the rank), the element count, the input port,
    /// the output layout (repeated axes, tile extents, capacity), tile counts, bytes per
    /// outer index, output physical span, addresses (output aligned to 16 bytes).
    ///
    /// # Errors
    ///
    /// The first failing rule, as a [`DecodeError`].
    pub fn parse(raw: &CastTessDescriptorV1) -> Result<CastTessRepr, DecodeError> {
        prefix::parse::<CastTessDescriptorV1>(raw)
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
            prefix: self
                .prefix
                .emit(&FORMAT, CastTessFlags::from_channels(self.channels).bits()),
            axes,
            reserved_164: U32::ZERO,
            tile: store_u32s(&self.tile),
            bytes_per_outer: U64::new(self.bytes_per_outer),
            tile_counts: store_u32s(&self.tile_counts),
            tile_align: U32::new(TILE_ALIGNMENT),
            reserved_212: U32::ZERO,
        };
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
        self.layout().admit(self.prefix.active_extents(), 2)
    }
}

impl CastTessDescriptorV1 {
    /// Every field with its byte offset, in wire order ([`FIELD_COUNT`] entries; array
    /// slots separately), for listings such as `simak packet decode`. Values are shown raw,
    /// whatever they are.
    pub fn fields(&self) -> Fields {
        let mut out = Fields::new();
        self.prefix.fields(&mut out);
        push_tiled_tail(
            &mut out,
            TiledTail {
                axes: &self.axes,
                word_164: ("reserved_164", FieldValue::Hex32(self.reserved_164.get())),
                tile: &self.tile,
                bytes_per_outer: self.bytes_per_outer.get(),
                tile_counts: &self.tile_counts,
                tile_align: self.tile_align.get(),
                word_212: ("reserved_212", FieldValue::Hex32(self.reserved_212.get())),
            },
        );
        out
    }
}

/// The fields of a tiled port's tail from offset 160 to 216 (CastTess v1 and the Detess
/// entries share them, and Preproc v1 for its tiled outputs; only the words at 164 and 212
/// differ).
pub(crate) struct TiledTail<'a> {
    pub(crate) axes: &'a [i8; 4],
    pub(crate) word_164: (&'static str, FieldValue),
    pub(crate) tile: &'a [U32; 4],
    pub(crate) bytes_per_outer: u64,
    pub(crate) tile_counts: &'a [U32; 4],
    pub(crate) tile_align: u32,
    pub(crate) word_212: (&'static str, FieldValue),
}

/// Lists the fields of `t` with their offsets into `out`, in wire order.
pub(crate) fn push_tiled_tail(out: &mut Fields, t: TiledTail<'_>) {
    for (k, (name, &v)) in AXIS_NAMES.iter().zip(t.axes.iter()).enumerate() {
        fields::push(
            out,
            field::AXES.saturating_add(k),
            name,
            FieldValue::I32(i32::from(v)),
        );
    }
    fields::push(out, field::RESERVED_164, t.word_164.0, t.word_164.1);
    fields::push_u32s(out, field::TILE, &TILE_NAMES, t.tile);
    fields::push(
        out,
        field::BYTES_PER_OUTER,
        "bytes_per_outer",
        FieldValue::U64(t.bytes_per_outer),
    );
    fields::push_u32s(out, field::TILE_COUNTS, &COUNT_NAMES, t.tile_counts);
    fields::push(
        out,
        field::TILE_ALIGN,
        "tile_align",
        FieldValue::U32(t.tile_align),
    );
    fields::push(out, field::RESERVED_212, t.word_212.0, t.word_212.1);
}

/// Number of entries returned by [`CastTessDescriptorV1::fields`].
pub const FIELD_COUNT: usize = 40;

const AXIS_NAMES: [&str; 4] = ["axes[d]", "axes[h]", "axes[w]", "axes[c]"];
const TILE_NAMES: [&str; 4] = ["tile[d]", "tile[h]", "tile[w]", "tile[c]"];
const COUNT_NAMES: [&str; 4] = [
    "tile_counts[d]",
    "tile_counts[h]",
    "tile_counts[w]",
    "tile_counts[c]",
];

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
pub(crate) mod test;
