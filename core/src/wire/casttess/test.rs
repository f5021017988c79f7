//! CastTess v1 wire tests: hand-written goldens (SPEC §5, §7), field reads and writes,
//! parse, emit, every rejected length, codes and the field listing.
//!
//! The golden byte arrays are written by hand from the SPEC §7 table, not produced by the
//! encoder; `crate::ev74::casttess` tests check the encoder against them.

extern crate std;

use zerocopy::FromBytes;

use super::*;
use crate::dtype::DType;
use crate::error::Port;
use crate::layout::TileAxis;
use crate::wire::prefix::PrefixRepr;
use zerocopy::FromZeros;

/// SPEC §5 example: FP32 `[W=2, C=3]`, axes (D -, H -, W 0, C 1), tile (1, 1, 2, 3),
/// Compact; one tile of 2 pixels × 3 channels × 2 planes = 12 bytes, padded to 16. Bound
/// at input 0x1000, output 0x2000.
#[rustfmt::skip]
pub(crate) const GOLDEN_SPEC_EXAMPLE: [u8; SIZE] = [
    // 0: magic "SKCT", version 1, byte length 216 (0xd8)
    b'S', b'K', b'C', b'T', 0x01, 0x00, 0xd8, 0x00,
    // 8: dtype FP32 = 3, rank 2
    0x03, 0, 0, 0, 0x02, 0, 0, 0,
    // 16: flags 0 (Compact), reserved 0
    0, 0, 0, 0, 0, 0, 0, 0,
    // 24: input address 0x1000
    0x00, 0x10, 0, 0, 0, 0, 0, 0,
    // 32: output address 0x2000
    0x00, 0x20, 0, 0, 0, 0, 0, 0,
    // 40: elements 6
    0x06, 0, 0, 0, 0, 0, 0, 0,
    // 48: input span 24
    0x18, 0, 0, 0, 0, 0, 0, 0,
    // 56: output physical span 16
    0x10, 0, 0, 0, 0, 0, 0, 0,
    // 64: extents 2, 3, 0, 0, 0, 0
    0x02, 0, 0, 0, 0, 0, 0, 0,  0x03, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    // 112: input strides 12, 4
    0x0c, 0, 0, 0, 0, 0, 0, 0,  0x04, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
    // 160: axes D -1, H -1, W 0, C 1; 164: reserved
    0xff, 0xff, 0x00, 0x01,  0, 0, 0, 0,
    // 168: tile D 1, H 1, W 2, C 3
    0x01, 0, 0, 0,  0x01, 0, 0, 0,  0x02, 0, 0, 0,  0x03, 0, 0, 0,
    // 184: bytes per outer index 16
    0x10, 0, 0, 0, 0, 0, 0, 0,
    // 192: tile counts 1, 1, 1, 1
    0x01, 0, 0, 0,  0x01, 0, 0, 0,  0x01, 0, 0, 0,  0x01, 0, 0, 0,
    // 208: tile alignment 16; 212: reserved
    0x10, 0, 0, 0,  0, 0, 0, 0,
];

/// BF16 `[W=3, C=17]` contiguous, axes (-, -, W 0, C 1), tile (1, 1, 2, 16), PadTo16,
/// relocatable. Tiles (w, c): (2, 16) → 2·16·2 = 64 bytes; (1, 16) → 32; (2, 1) stores 16
/// channels → 64; (1, 1) → 32. Bytes per outer = capacity = 192.
#[rustfmt::skip]
pub(crate) const GOLDEN_PAD16_17: [u8; SIZE] = [
    b'S', b'K', b'C', b'T', 1, 0, 216, 0,
    1, 0, 0, 0, 2, 0, 0, 0,                         // BF16 = 1, rank 2
    1, 0, 0, 0, 0, 0, 0, 0,                         // flags: PadTo16; reserved
    0, 0, 0, 0, 0, 0, 0, 0,                         // input slot (relocatable)
    0, 0, 0, 0, 0, 0, 0, 0,                         // output slot (relocatable)
    51, 0, 0, 0, 0, 0, 0, 0,                        // elements 3·17
    102, 0, 0, 0, 0, 0, 0, 0,                       // input span 2 + 34·2 + 2·16
    192, 0, 0, 0, 0, 0, 0, 0,                       // output span 192
    3, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0, // extents 3, 17
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    34, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, // strides 34, 2
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0xff, 0, 1, 0, 0, 0, 0,                   // axes -1, -1, 0, 1; reserved
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0, // tile 1, 1, 2, 16
    192, 0, 0, 0, 0, 0, 0, 0,                       // bytes per outer 192
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, // tile counts 1, 1, 2, 2
    16, 0, 0, 0, 0, 0, 0, 0,                        // alignment 16; reserved
];

/// FP16 `[N=2, H=3, W=4, C=5]`, strides (bytes) [200, 52, 12, 2] (padded pixels, rows and
/// images), axes (D -, H 1, W 2, C 3): axis 0 is an outer axis. Tile (1, 2, 3, 4), Compact.
/// Input span 2 + 200 + 2·52 + 3·12 + 4·2 = 350. Tile sizes (h, w, c): (2,3,4) 48,
/// (2,1,4) 16, (1,3,4) 24 → 32, (1,1,4) 16, and every c = 1 tile ≤ 12 → 16: bytes per
/// outer 112 + 64 = 176, capacity 2·176 = 352. Bound at input 0x10_0000, output
/// 0xffff_0000.
#[rustfmt::skip]
pub(crate) const GOLDEN_RANK4_OUTER: [u8; SIZE] = [
    b'S', b'K', b'C', b'T', 1, 0, 216, 0,
    4, 0, 0, 0, 4, 0, 0, 0,                         // FP16 = 4, rank 4
    0, 0, 0, 0, 0, 0, 0, 0,                         // Compact; reserved
    0, 0, 0x10, 0, 0, 0, 0, 0,                      // input 0x0010_0000
    0, 0, 0xff, 0xff, 0, 0, 0, 0,                   // output 0xffff_0000
    120, 0, 0, 0, 0, 0, 0, 0,                       // elements 2·3·4·5
    0x5e, 0x01, 0, 0, 0, 0, 0, 0,                   // input span 350
    0x60, 0x01, 0, 0, 0, 0, 0, 0,                   // output span 352
    2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, // extents 2, 3, 4, 5
    4, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    200, 0, 0, 0, 0, 0, 0, 0, 52, 0, 0, 0, 0, 0, 0, 0, // strides 200, 52, 12, 2
    12, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 1, 2, 3, 0, 0, 0, 0,                      // axes -1, 1, 2, 3; reserved
    1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, // tile 1, 2, 3, 4
    176, 0, 0, 0, 0, 0, 0, 0,                       // bytes per outer 176
    1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, // tile counts 1, 2, 2, 2
    16, 0, 0, 0, 0, 0, 0, 0,                        // alignment 16; reserved
];

pub(crate) fn repr_spec_example() -> CastTessRepr {
    CastTessRepr {
        prefix: PrefixRepr {
            dtype: DType::F32,
            rank: 2,
            input_address: 0x1000,
            output_address: 0x2000,
            elements: 6,
            input_span: 24,
            output_span: 16,
            extents: [2, 3, 0, 0, 0, 0],
            input_strides: [12, 4, 0, 0, 0, 0],
        },
        channels: Channels::Compact,
        axes: [None, None, Some(0), Some(1)],
        tile: [1, 1, 2, 3],
        bytes_per_outer: 16,
        tile_counts: [1, 1, 1, 1],
    }
}

#[test]
fn field_reads() {
    let raw = CastTessDescriptorV1::new_checked(&GOLDEN_RANK4_OUTER).unwrap();
    assert_eq!(raw.prefix.magic, *b"SKCT");
    assert_eq!(raw.prefix.version.get(), 1);
    assert_eq!(raw.prefix.byte_length.get(), 216);
    assert_eq!(raw.prefix.dtype.get(), 4);
    assert_eq!(raw.prefix.rank.get(), 4);
    assert_eq!(raw.prefix.flags.get(), 0);
    assert_eq!(raw.prefix.input_address.get(), 0x10_0000);
    assert_eq!(raw.prefix.output_address.get(), 0xffff_0000);
    assert_eq!(raw.prefix.elements.get(), 120);
    assert_eq!(raw.prefix.input_span.get(), 350);
    assert_eq!(raw.prefix.output_span.get(), 352);
    assert_eq!(raw.prefix.extents[3].get(), 5);
    assert_eq!(raw.prefix.input_strides[0].get(), 200);
    assert_eq!(raw.axes, [-1, 1, 2, 3]);
    assert_eq!(raw.tile[3].get(), 4);
    assert_eq!(raw.bytes_per_outer.get(), 176);
    assert_eq!(raw.tile_counts[1].get(), 2);
    assert_eq!(raw.tile_align.get(), 16);
    assert_eq!(raw.reserved_212.get(), 0);
}

#[test]
fn field_writes_land_at_their_offsets() {
    let mut raw = CastTessDescriptorV1::new_zeroed();
    raw.axes[2] = -1;
    raw.tile_counts[3] = U32::new(0x0102_0304);
    raw.bytes_per_outer = U64::new(0x0a0b_0c0d_0e0f_1011);
    let bytes = raw.as_bytes();
    assert_eq!(bytes[field::AXES + 2], 0xff);
    assert_eq!(
        &bytes[field::TILE_COUNTS + 12..field::TILE_COUNTS + 16],
        &[4, 3, 2, 1]
    );
    assert_eq!(
        &bytes[field::BYTES_PER_OUTER..field::BYTES_PER_OUTER + 8],
        &[0x11, 0x10, 0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a]
    );
    assert_eq!(bytes.iter().filter(|&&b| b != 0).count(), 13);
}

#[test]
fn parse_goldens() {
    assert_eq!(
        CastTessRepr::parse_bytes(&GOLDEN_SPEC_EXAMPLE),
        Ok(repr_spec_example())
    );
    let p = CastTessRepr::parse_bytes(&GOLDEN_PAD16_17).unwrap();
    assert_eq!(p.channels, Channels::PadTo16);
    assert_eq!((p.prefix.output_span, p.bytes_per_outer), (192, 192));
    assert_eq!(p.tile_counts, [1, 1, 2, 2]);
    assert_eq!((p.prefix.input_address, p.prefix.output_address), (0, 0));
    let r = CastTessRepr::parse_bytes(&GOLDEN_RANK4_OUTER).unwrap();
    assert_eq!(r.prefix.dtype, DType::F16);
    assert_eq!(r.axes, [None, Some(1), Some(2), Some(3)]);
    assert_eq!(r.tiled().unwrap().outer_axes(), &[0]);
    assert_eq!(r.tiled().unwrap().capacity(), 352);
}

#[test]
fn emit_goldens() {
    assert_eq!(repr_spec_example().to_bytes(), GOLDEN_SPEC_EXAMPLE);
    for golden in [GOLDEN_PAD16_17, GOLDEN_RANK4_OUTER] {
        let repr = CastTessRepr::parse_bytes(&golden).unwrap();
        assert_eq!(repr.to_bytes(), golden);
        assert_eq!(repr.buffer_len(), SIZE);
    }
}

#[test]
fn flags_reject_unknown_bits() {
    for bit in 1..32 {
        let mut g = GOLDEN_SPEC_EXAMPLE;
        let raw = CastTessDescriptorV1::mut_from_bytes(&mut g).unwrap();
        raw.prefix.flags = U32::new(1 << bit);
        assert_eq!(
            CastTessRepr::parse(raw),
            Err(DecodeError::UnknownFlags { bits: 1 << bit })
        );
    }
    assert_eq!(
        CastTessFlags::from_channels(Channels::PadTo16).channels(),
        Channels::PadTo16
    );
    assert_eq!(CastTessFlags::empty().channels(), Channels::Compact);
}

#[test]
fn codes_keep_their_numbers() {
    // CastTess v1's codes: the rules it shares with Quant v1 keep Quant's numbers, its own
    // start at 40; 51 is the host-rule conversion.
    let numbers: std::vec::Vec<u16> = CODES.iter().map(|c| c.get()).collect();
    let mut expected: std::vec::Vec<u16> =
        std::vec![1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 17, 18, 19, 20, 22];
    expected.extend([24, 25, 26, 27, 28, 32, 33, 34, 35, 36, 37, 38, 39]);
    expected.extend(40..=51);
    assert_eq!(numbers, expected);
}

#[test]
fn listing_names_offsets() {
    let raw = CastTessDescriptorV1::new_checked(&GOLDEN_RANK4_OUTER).unwrap();
    let fields = raw.fields();
    let offsets: std::vec::Vec<usize> = fields.iter().map(|f| f.offset).collect();
    let mut sorted = offsets.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(offsets, sorted);
    assert!(fields.iter().all(|f| !f.name.is_empty()));
    assert_eq!(fields[24].name, "axes[d]");
    assert_eq!(fields[24].offset, 160);
    assert_eq!(fields[24].value, FieldValue::I32(-1));
    assert_eq!(fields[FIELD_COUNT - 1].offset, field::RESERVED_212);
    let text = std::format!("{raw}");
    assert!(
        text.starts_with("  0  magic              \"SKCT\"\n"),
        "{text}"
    );
    assert!(text.contains("184  bytes_per_outer    176\n"), "{text}");
    assert!(text.contains("163  axes[c]            3\n"), "{text}");
}

#[test]
fn display_is_short_and_lowercase() {
    let e = DecodeError::TileCount {
        role: TileAxis::W,
        expected: 3,
        found: 2,
    };
    assert_eq!(std::format!("{e}"), "w tile count 2 should be 3");
    let e = DecodeError::Misaligned {
        port: Port::Output,
        address: 0x1008,
        align: 16,
    };
    assert_eq!(
        std::format!("{e}"),
        "output address 0x1008 is not aligned to 16 bytes"
    );
}
