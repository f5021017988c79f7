//! Preproc v1 wire tests: hand-written goldens (SPEC §7, §13), parse, emit and the field
//! listing.
//!
//! The golden byte arrays are written by hand from the table of `crate::wire::preproc`,
//! not produced by the encoder; `crate::ev74::preproc` tests check the encoder against
//! them.

extern crate std;

use super::*;

/// An NV12 4×6 frame packed (Y: 4 rows of 6 bytes at 0; UV: 2 rows of 6 bytes at 24; 36
/// bytes), border top 1 and right 2, output channels B, G, R, divisor 255, mean (0.5,
/// 0.25, 0.125), std (0.5, 1, 2), pad value (114, 115, 116); INT8 [5, 8, 3] contiguous
/// (strides 24, 3, 1; 120 bytes) by multiplier 2^-7, zero point −3, nearest-even. Bound at
/// input 0x1000, output 0x2000.
#[rustfmt::skip]
pub(crate) const GOLDEN_NV12_I8: [u8; SIZE] = [
    b'S', b'K', b'P', b'P', 1, 0, 0x70, 0x01,        // magic, version 1, byte length 368
    5, 0, 0, 0, 3, 0, 0, 0,                          // output dtype INT8 = 5, rank 3
    1, 0, 0, 0, 0, 0, 0, 0,                          // flags: bgr; reserved
    0x00, 0x10, 0, 0, 0, 0, 0, 0,                    // input address 0x1000
    0x00, 0x20, 0, 0, 0, 0, 0, 0,                    // output address 0x2000
    120, 0, 0, 0, 0, 0, 0, 0,                        // elements 5·8·3
    36, 0, 0, 0, 0, 0, 0, 0,                         // frame span 36
    120, 0, 0, 0, 0, 0, 0, 0,                        // output accessed span 120
    5, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0,  // extents 5, 8,
    3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 3
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    24, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, // output strides 24, 3,
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 1
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 6, 0, 0, 0,                          // no axes (strided); NV12 = 6
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // no tile
    0, 0, 0, 0, 0, 0, 0, 0,                          // no bytes per outer
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // no tile counts
    0, 0, 0, 0, 2, 0, 0, 0,                          // no tile alignment; INT8 = 2
    4, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0,  // height 4, width 6
    0, 0, 0, 0, 0, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, // plane offsets 0, 24,
    0, 0, 0, 0, 0, 0, 0, 0,                          // 0
    6, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0,  // row strides 6, 6,
    0, 0, 0, 0, 0, 0, 0, 0,                          // 0
    0, 0, 0, 0, 0, 0, 0, 0,                          // frame stride 0 (one frame)
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // border top 1, bottom 0,
    0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,  // left 0, right 2
    114, 115, 116, 0, 0x00, 0x00, 0x7f, 0x43,        // pad values; divisor 255
    0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0x3e,  // mean 0.5, 0.25,
    0x00, 0x00, 0x00, 0x3e,                          // 0.125
    0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0x3f,  // std 0.5, 1,
    0x00, 0x00, 0x00, 0x40,                          // 2
    0x00, 0x00, 0x00, 0x3c, 0xfd, 0xff, 0xff, 0xff,  // multiplier 2^-7; zero point -3
    1, 0, 0, 0, 0, 0, 0, 0,                          // nearest-even = 1; reserved
];

/// A batch of two RGBX8 2×3 frames, rows of 12 bytes at a row stride of 16, frame stride
/// 40 (input span 40 + 16 + 12 = 68); the defaults (divisor 255, mean 0, std 1, pad 0);
/// CastTess of `[2, 2, 3, 3]`, axes (−, 1, 2, 3), tile (1, 2, 2, 3), Compact: tiles (h, w)
/// (2, 2) → 2·2·3·2 = 24 → 32 bytes and (2, 1) → 12 → 16 bytes, 48 bytes per frame, capacity
/// 96. Relocatable.
#[rustfmt::skip]
pub(crate) const GOLDEN_RGBX_CASTTESS: [u8; SIZE] = [
    b'S', b'K', b'P', b'P', 1, 0, 0x70, 0x01,
    1, 0, 0, 0, 4, 0, 0, 0,                          // output BF16 = 1, rank 4
    0, 0, 0, 0, 0, 0, 0, 0,                          // flags: rgb, compact
    0, 0, 0, 0, 0, 0, 0, 0,                          // input unbound
    0, 0, 0, 0, 0, 0, 0, 0,                          // output unbound
    36, 0, 0, 0, 0, 0, 0, 0,                         // elements 2·2·3·3
    68, 0, 0, 0, 0, 0, 0, 0,                         // frame span 68
    96, 0, 0, 0, 0, 0, 0, 0,                         // output physical span 96
    2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,  // extents 2, 2,
    3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,  // 3, 3
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // no strides (tiled)
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 1, 2, 3, 3, 0, 0, 0,                       // axes -1, 1, 2, 3; RGBX8 = 3
    1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0,  // tile 1, 2, 2, 3
    48, 0, 0, 0, 0, 0, 0, 0,                         // bytes per outer 48
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,  // tile counts 1, 1, 2, 1
    16, 0, 0, 0, 4, 0, 0, 0,                         // tile alignment 16; CastTess = 4
    2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,  // height 2, width 3
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // plane offsets 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,                          // 0
    16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // row strides 16, 0,
    0, 0, 0, 0, 0, 0, 0, 0,                          // 0
    40, 0, 0, 0, 0, 0, 0, 0,                         // frame stride 40
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // no border
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0x00, 0x00, 0x7f, 0x43,              // pad 0; divisor 255
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,              // mean 0, 0, 0
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f,  // std 1, 1,
    0x00, 0x00, 0x80, 0x3f,                          // 1
    0, 0, 0, 0, 0, 0, 0, 0,                          // no multiplier, zero point
    0, 0, 0, 0, 0, 0, 0, 0,                          // no rounding; reserved
];

/// A GRAY8 3×4 frame (rows of 4 bytes, stride 4: 12 bytes), divisor 1 (`n = p`), QuantTess
/// of `[3, 4, 1]`, axes (−, 0, 1, 2), tile (1, 3, 2, 1), PadTo16: two tiles of 3·2 pixels ×
/// 16 stored channels = 96 bytes, capacity 192; multiplier 1, zero point 0, toward zero.
/// Relocatable.
#[rustfmt::skip]
pub(crate) const GOLDEN_GRAY_QUANTTESS: [u8; SIZE] = [
    b'S', b'K', b'P', b'P', 1, 0, 0x70, 0x01,
    5, 0, 0, 0, 3, 0, 0, 0,                          // output INT8 = 5, rank 3
    2, 0, 0, 0, 0, 0, 0, 0,                          // flags: pad16
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    12, 0, 0, 0, 0, 0, 0, 0,                         // elements 3·4·1
    12, 0, 0, 0, 0, 0, 0, 0,                         // frame span 12
    192, 0, 0, 0, 0, 0, 0, 0,                        // output physical span 192
    3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,  // extents 3, 4,
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 1
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0, 1, 2, 5, 0, 0, 0,                       // axes -1, 0, 1, 2; GRAY8 = 5
    1, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,  // tile 1, 3, 2, 1
    192, 0, 0, 0, 0, 0, 0, 0,                        // bytes per outer 192
    1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,  // tile counts 1, 1, 2, 1
    16, 0, 0, 0, 3, 0, 0, 0,                         // tile alignment 16; QuantTess = 3
    3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,  // height 3, width 4
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // plane offsets 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,                          // 0
    4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // row strides 4, 0,
    0, 0, 0, 0, 0, 0, 0, 0,                          // 0
    0, 0, 0, 0, 0, 0, 0, 0,                          // frame stride 0
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // no border
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0x00, 0x00, 0x80, 0x3f,              // pad 0; divisor 1
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,              // mean 0 (one channel)
    0x00, 0x00, 0x80, 0x3f, 0, 0, 0, 0,              // std 1 (one channel)
    0, 0, 0, 0,
    0x00, 0x00, 0x80, 0x3f, 0, 0, 0, 0,              // multiplier 1; zero point 0
    0, 0, 0, 0, 0, 0, 0, 0,                          // toward zero = 0; reserved
];

#[test]
fn goldens_parse_and_emit_back_to_their_bytes() {
    for g in [
        &GOLDEN_NV12_I8,
        &GOLDEN_RGBX_CASTTESS,
        &GOLDEN_GRAY_QUANTTESS,
    ] {
        let repr = PreprocRepr::parse_bytes(g).unwrap();
        assert_eq!(&repr.to_bytes(), g);
    }
    let nv12 = PreprocRepr::parse_bytes(&GOLDEN_NV12_I8).unwrap();
    assert_eq!(nv12.kind(), OutputKind::I8);
    assert_eq!(nv12.plan.frame().format, PixelFormat::NV12);
    assert_eq!(nv12.plan.output_extents(), &[5, 8, 3]);
    assert_eq!(nv12.plan.pad_value(), [114, 115, 116]);
    assert!(nv12.plan.bgr());
    assert_eq!(
        (nv12.prefix.input_address, nv12.prefix.output_address),
        (0x1000, 0x2000)
    );
    let rgbx = PreprocRepr::parse_bytes(&GOLDEN_RGBX_CASTTESS).unwrap();
    assert_eq!(rgbx.kind(), OutputKind::CastTess);
    assert_eq!(rgbx.plan.frames(), 2);
    assert_eq!(rgbx.plan.input_span(), 68);
    let gray = PreprocRepr::parse_bytes(&GOLDEN_GRAY_QUANTTESS).unwrap();
    assert_eq!(gray.kind(), OutputKind::QuantTess);
    assert_eq!(gray.plan.output_span(), 192);
    // divisor 1, mean 0, std 1: n = p.
    assert_eq!(gray.plan.value_bits(0, 200), 200f32.to_bits());
}

#[test]
fn the_listing_names_every_field_at_its_offset() {
    let raw = PreprocDescriptorV1::new_checked(&GOLDEN_NV12_I8).unwrap();
    let fields = raw.fields();
    assert_eq!(fields.len(), FIELD_COUNT);
    let find = |name: &str| fields.iter().find(|f| f.name == name).unwrap();
    for (name, offset, value) in [
        ("pixel_format", 164, 6),
        ("output_kind", 212, 2),
        ("height", 216, 4),
        ("width", 224, 6),
        ("plane_offsets[1]", 240, 24),
        ("row_strides[0]", 256, 6),
        ("border_top", 288, 1),
        ("border_right", 312, 2),
        ("pad_value[0]", 320, 114),
        ("pad_value[2]", 322, 116),
        ("pad_value[3]", 323, 0),
        ("divisor", 324, 0x437f_0000),
        ("mean[2]", 336, 0x3e00_0000),
        ("std[2]", 348, 0x4000_0000),
        ("multiplier", 352, 0x3c00_0000),
        ("zero_point", 356, -3),
        ("rounding", 360, 1),
        ("reserved_364", 364, 0),
    ] {
        let f = find(name);
        assert_eq!((f.offset, f.value.as_i128()), (offset, value), "{name}");
    }
    // Offsets increase through the listing.
    assert!(fields.windows(2).all(|w| w[0].offset < w[1].offset));
}

#[test]
fn codes_are_in_numeric_order() {
    assert!(CODES.windows(2).all(|w| w[0].get() < w[1].get()));
}
