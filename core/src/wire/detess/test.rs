//! Detess-family wire tests: hand-written goldens (SPEC §7, §12.1), parse, emit, the
//! field listing and the flag word.
//!
//! The golden byte arrays are written by hand from the table of `crate::wire::detess`, not
//! produced by the encoder; `crate::ev74::detess` tests check the encoder against them.

extern crate std;

use super::*;

/// Detess v1: INT16 `[W=3, C=17]`, axes (-, -, W 0, C 1), tile (1, 1, 2, 16), PadTo16, tile
/// alignment 16; the output INT16 contiguous (strides 34, 2; span 2 + 68 + 32 = 102).
/// Tiles (w, c): (2, 16) → 2·16·2 = 64 bytes; (2, 1) stores 16 channels → 64; (1, 16) →
/// 32; (1, 1) → 32: capacity 192. Bound at input 0x1000, output 0x2000.
#[rustfmt::skip]
pub(crate) const GOLDEN_DETESS_I16: [u8; SIZE] = [
    b'S', b'K', b'D', b'T', 1, 0, 224, 0,            // magic, version 1, byte length 224
    6, 0, 0, 0, 2, 0, 0, 0,                          // output dtype INT16 = 6, rank 2
    1, 0, 0, 0, 0, 0, 0, 0,                          // flags: align_c16 (PadTo16); reserved
    0x00, 0x10, 0, 0, 0, 0, 0, 0,                    // input address 0x1000
    0x00, 0x20, 0, 0, 0, 0, 0, 0,                    // output address 0x2000
    51, 0, 0, 0, 0, 0, 0, 0,                         // elements 3·17
    192, 0, 0, 0, 0, 0, 0, 0,                        // input physical span 192
    102, 0, 0, 0, 0, 0, 0, 0,                        // output accessed span 102
    3, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0, // extents 3, 17
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    34, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, // output strides 34, 2
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0xff, 0, 1, 6, 0, 0, 0,                    // axes -1, -1, 0, 1; input INT16 = 6
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0, // tile 1, 1, 2, 16
    192, 0, 0, 0, 0, 0, 0, 0,                        // input bytes per outer 192
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0,  // tile counts 1, 1, 2, 2
    16, 0, 0, 0, 0, 0, 0, 0,                         // tile alignment 16; reserved
    0, 0, 0, 0, 0, 0, 0, 0,                          // reserved 216, 220
];

/// DetessCast v1: the same layout over BF16, the output FP32 contiguous (strides 68, 4;
/// span 4 + 136 + 64 = 204). Bound at input 0x1000, output 0x2000.
#[rustfmt::skip]
pub(crate) const GOLDEN_CAST_BF16: [u8; SIZE] = [
    b'S', b'K', b'D', b'C', 1, 0, 224, 0,
    3, 0, 0, 0, 2, 0, 0, 0,                          // output FP32 = 3, rank 2
    1, 0, 0, 0, 0, 0, 0, 0,                          // PadTo16
    0x00, 0x10, 0, 0, 0, 0, 0, 0,
    0x00, 0x20, 0, 0, 0, 0, 0, 0,
    51, 0, 0, 0, 0, 0, 0, 0,
    192, 0, 0, 0, 0, 0, 0, 0,                        // input physical span 192
    204, 0, 0, 0, 0, 0, 0, 0,                        // output accessed span 204
    3, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    68, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, // output strides 68, 4
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0xff, 0, 1, 1, 0, 0, 0,                    // axes; input BF16 = 1
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0,
    192, 0, 0, 0, 0, 0, 0, 0,
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0,
    16, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
];

/// DetessDequant v1: the same layout over INT16, the output FP32 contiguous (span 204),
/// multiplier 0.5 (0x3f000000), zero point -3. Bound at input 0x1000, output 0x2000.
#[rustfmt::skip]
pub(crate) const GOLDEN_DEQUANT_I16: [u8; SIZE] = [
    b'S', b'K', b'D', b'Q', 1, 0, 224, 0,
    3, 0, 0, 0, 2, 0, 0, 0,                          // output FP32, rank 2
    1, 0, 0, 0, 0, 0, 0, 0,
    0x00, 0x10, 0, 0, 0, 0, 0, 0,
    0x00, 0x20, 0, 0, 0, 0, 0, 0,
    51, 0, 0, 0, 0, 0, 0, 0,
    192, 0, 0, 0, 0, 0, 0, 0,
    204, 0, 0, 0, 0, 0, 0, 0,
    3, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    68, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0xff, 0, 1, 6, 0, 0, 0,                    // axes; input INT16 = 6
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0,
    192, 0, 0, 0, 0, 0, 0, 0,
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0,
    16, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0x3f, 0xfd, 0xff, 0xff, 0xff,           // multiplier 0.5; zero point -3
];

/// DetessCast v1, relocatable: BF16 `[H=2, W=3, C=5]`, axes (-, H 0, W 1, C 2), tile
/// (1, 2, 2, 5), Compact, tile alignment 1 (an MLA output: no per-tile padding); the
/// output FP32 in C, H, W order (strides 12, 4, 24: span 4 + 12 + 8 + 96 = 120). Tiles
/// along W: (h 2, w 2) → 2·2·5·2 = 40 bytes, (2, 1) → 20: capacity 60.
#[rustfmt::skip]
pub(crate) const GOLDEN_CAST_NCHW_ALIGN1: [u8; SIZE] = [
    b'S', b'K', b'D', b'C', 1, 0, 224, 0,
    3, 0, 0, 0, 3, 0, 0, 0,                          // FP32, rank 3
    0, 0, 0, 0, 0, 0, 0, 0,                          // Compact
    0, 0, 0, 0, 0, 0, 0, 0,                          // relocatable
    0, 0, 0, 0, 0, 0, 0, 0,
    30, 0, 0, 0, 0, 0, 0, 0,                         // elements 2·3·5
    60, 0, 0, 0, 0, 0, 0, 0,                         // input physical span 60
    120, 0, 0, 0, 0, 0, 0, 0,                        // output accessed span 120
    2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,  // extents 2, 3, 5
    5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    12, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, // output strides 12, 4, 24
    24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0, 1, 2, 1, 0, 0, 0,                       // axes -1, 0, 1, 2; input BF16
    1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0,  // tile 1, 2, 2, 5
    60, 0, 0, 0, 0, 0, 0, 0,                         // bytes per outer 60
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,  // tile counts 1, 1, 2, 1
    1, 0, 0, 0, 0, 0, 0, 0,                          // tile alignment 1; reserved
    0, 0, 0, 0, 0, 0, 0, 0,
];

/// DetessDequant v1, relocatable: INT8 `[N=2, H=2, W=2, C=20]` (N outer), axes (-, 1, 2, 3),
/// tile (1, 2, 2, 20), CBlock16 (flags 3), tile alignment 16; 4 pixels × 32 stored
/// channels = 128 bytes a frame, capacity 256. The output BF16 contiguous (strides 160,
/// 80, 40, 2: span 320); multiplier 0.125 (0x3e000000), zero point 127.
#[rustfmt::skip]
pub(crate) const GOLDEN_DEQUANT_CBLOCK: [u8; SIZE] = [
    b'S', b'K', b'D', b'Q', 1, 0, 224, 0,
    1, 0, 0, 0, 4, 0, 0, 0,                          // output BF16 = 1, rank 4
    3, 0, 0, 0, 0, 0, 0, 0,                          // align_c16 | cblock: CBlock16
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    160, 0, 0, 0, 0, 0, 0, 0,                        // elements 2·2·2·20
    0, 1, 0, 0, 0, 0, 0, 0,                          // input physical span 256
    64, 1, 0, 0, 0, 0, 0, 0,                         // output accessed span 320
    2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,  // extents 2, 2, 2, 20
    2, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    160, 0, 0, 0, 0, 0, 0, 0, 80, 0, 0, 0, 0, 0, 0, 0, // strides 160, 80, 40, 2
    40, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 1, 2, 3, 5, 0, 0, 0,                       // axes -1, 1, 2, 3; input INT8 = 5
    1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 20, 0, 0, 0, // tile 1, 2, 2, 20
    128, 0, 0, 0, 0, 0, 0, 0,                        // bytes per outer 128
    1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,  // tile counts 1, 1, 1, 1
    16, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0x3e, 127, 0, 0, 0,                     // multiplier 0.125; zero point 127
];

#[test]
fn goldens_parse_to_their_fields() {
    let d = DetessRepr::parse_bytes::<0>(&GOLDEN_DETESS_I16).unwrap();
    assert_eq!(d.conversion, Conversion::Detess);
    assert_eq!((d.input_dtype, d.prefix.dtype), (DType::I16, DType::I16));
    assert_eq!(d.layout.channels, Channels::PadTo16);
    assert_eq!(d.layout.tile_align, TileAlign::Bytes16);
    assert_eq!((d.prefix.input_span, d.prefix.output_span), (192, 102));
    assert_eq!(d.output_strides()[..2], [34, 2]);
    assert_eq!(d.dequant_params(), None);

    let c = DetessRepr::parse_bytes::<1>(&GOLDEN_CAST_NCHW_ALIGN1).unwrap();
    assert_eq!(c.conversion, Conversion::Cast);
    assert_eq!(c.layout.tile_align, TileAlign::Bytes1);
    assert_eq!(c.layout.axes, [None, Some(0), Some(1), Some(2)]);
    assert_eq!(c.tile_counts, [1, 1, 2, 1]);

    let q = DetessRepr::parse_bytes::<2>(&GOLDEN_DEQUANT_CBLOCK).unwrap();
    assert_eq!(q.layout.channels, Channels::CBlock16);
    assert_eq!(q.bytes_per_outer, 128);
    assert_eq!(
        q.dequant_params(),
        Some(DequantParams::new(0.125).with_zero_point(127))
    );
    assert_eq!((q.input_dtype, q.prefix.dtype), (DType::I8, DType::BF16));
}

#[test]
fn parse_then_emit_gives_the_same_bytes() {
    for g in [&GOLDEN_DETESS_I16, &GOLDEN_CAST_BF16, &GOLDEN_DEQUANT_I16] {
        let k = Conversion::ALL
            .into_iter()
            .find(|c| c.magic() == g[..4])
            .unwrap();
        let repr = match k {
            Conversion::Detess => DetessRepr::parse_bytes::<0>(g),
            Conversion::Cast => DetessRepr::parse_bytes::<1>(g),
            Conversion::Dequant => DetessRepr::parse_bytes::<2>(g),
        }
        .unwrap();
        assert_eq!(&repr.to_bytes(), g);
    }
    let q = DetessRepr::parse_bytes::<2>(&GOLDEN_DEQUANT_CBLOCK).unwrap();
    assert_eq!(q.to_bytes(), GOLDEN_DEQUANT_CBLOCK);
}

#[test]
fn a_descriptor_of_one_entry_is_not_another_entrys() {
    // Each entry's parse wants its own magic word.
    assert_eq!(
        DetessRepr::parse_bytes::<1>(&GOLDEN_DETESS_I16),
        Err(DecodeError::Magic { found: *b"SKDT" })
    );
    assert_eq!(
        DetessRepr::parse_bytes::<0>(&GOLDEN_DEQUANT_I16),
        Err(DecodeError::Magic { found: *b"SKDQ" })
    );
}

#[test]
fn flags_name_the_three_encodings() {
    for ch in [Channels::Compact, Channels::PadTo16, Channels::CBlock16] {
        assert_eq!(DetessFlags::from_channels(ch).channels(), Ok(ch));
    }
    assert_eq!(DetessFlags::from_channels(Channels::CBlock16).bits(), 0b11);
    assert_eq!(
        DetessFlags::CBLOCK.channels(),
        Err(DecodeError::ChannelFlags)
    );
}

#[test]
fn the_listing_names_every_field() {
    let raw = DetessDequantRaw::new_checked(&GOLDEN_DEQUANT_I16).unwrap();
    let fields = raw.fields();
    assert_eq!(fields.len(), FIELD_COUNT);
    let find = |name: &str| fields.iter().find(|f| f.name == name).unwrap();
    assert_eq!(find("input_dtype").value, FieldValue::U32(6));
    assert_eq!(find("input_dtype").offset, 164);
    assert_eq!(find("multiplier").value, FieldValue::Hex32(0x3f00_0000));
    assert_eq!(find("zero_point").value, FieldValue::I32(-3));
    assert_eq!(find("tile_counts[c]").offset, 204);
    // The prefix describes the output: its stride slots are the output's.
    assert_eq!(find("output_strides[0]").offset, 112);
    assert_eq!(find("output_strides[0]").value, FieldValue::U64(68));
    assert!(!fields.iter().any(|f| f.name.starts_with("input_strides")));
    // The other entries name the words at 216 and 220 reserved.
    let raw = DetessRaw::new_checked(&GOLDEN_DETESS_I16).unwrap();
    assert!(raw.fields().iter().any(|f| f.name == "reserved_220"));
    // Offsets strictly increase.
    let offsets: std::vec::Vec<usize> = fields.iter().map(|f| f.offset).collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]));
}
