//! Detess-family codec tests: the encoder against the hand-written goldens of
//! `crate::wire::detess` (SPEC §7, §12.1), the generic codec suite for each of the three
//! entries, binding of a tiled input, representability and the rejection matrices.

extern crate std;

use std::vec::Vec;

use core::ops::Range;

use zerocopy::FromBytes;
use zerocopy::little_endian::{I32, U32, U64};

use super::*;
use crate::error::Port;
use crate::ev74::suite::{Cases, Fixture, Golden, codec_suite};
use crate::layout::{Channels, MlaTiled};
use crate::ops::dequant::Params;
use crate::tensor::TensorSpec;
use crate::wire::detess::test::{
    GOLDEN_CAST_BF16, GOLDEN_CAST_NCHW_ALIGN1, GOLDEN_DEQUANT_CBLOCK, GOLDEN_DEQUANT_I16,
    GOLDEN_DETESS_I16,
};
use crate::wire::detess::{DetessDescriptorV1, SIZE};

fn r(address: u32, len: u64) -> DeviceRegion {
    DeviceRegion::new(address, len)
}

/// The layout of the three matrix goldens: `[W=3, C=17]`, tile (1, 1, 2, 16), PadTo16.
fn pad16_w3c17() -> MlaTiled {
    MlaTiled::new(
        [None, None, Some(0), Some(1)],
        [1, 1, 2, 16],
        Channels::PadTo16,
    )
}

fn detess_i16() -> DevicePlan<Detess> {
    let plan = crate::ops::detess::check_inference(&crate::ops::detess::Request {
        dtype: DType::I16,
        layout: pad16_w3c17(),
        output: TensorSpec::contiguous([3, 17], DType::I16),
    })
    .unwrap();
    check_inference(&plan).unwrap()
}

/// SiMa's fixture: an INT8 `[2, 3, 33]` frame in one Compact tile, tile alignment 1.
fn detess_sima_fixture() -> DevicePlan<Detess> {
    let plan = crate::ops::detess::check_inference(&crate::ops::detess::Request {
        dtype: DType::I8,
        layout: MlaTiled::new(
            [None, Some(0), Some(1), Some(2)],
            [1, 2, 3, 33],
            Channels::Compact,
        )
        .with_tile_align(crate::layout::TileAlign::Bytes1),
        output: TensorSpec::contiguous([2, 3, 33], DType::I8),
    })
    .unwrap();
    check_inference(&plan).unwrap()
}

fn cast_bf16() -> DevicePlan<DetessCast> {
    let plan = crate::ops::detesscast::check_inference(&crate::ops::detess::Request {
        dtype: DType::BF16,
        layout: pad16_w3c17(),
        output: TensorSpec::contiguous([3, 17], DType::F32),
    })
    .unwrap();
    check_inference(&plan).unwrap()
}

fn cast_nchw_align1() -> DevicePlan<DetessCast> {
    let plan = crate::ops::detesscast::check_inference(&crate::ops::detess::Request {
        dtype: DType::BF16,
        layout: MlaTiled::new(
            [None, Some(0), Some(1), Some(2)],
            [1, 2, 2, 5],
            Channels::Compact,
        )
        .with_tile_align(crate::layout::TileAlign::Bytes1),
        output: TensorSpec::strided([2, 3, 5], [12, 4, 24], DType::F32),
    })
    .unwrap();
    check_inference(&plan).unwrap()
}

fn dequant_i16() -> DevicePlan<DetessDequant> {
    let plan = crate::ops::detessdequant::check_inference(&crate::ops::detessdequant::Request {
        dtype: DType::I16,
        layout: pad16_w3c17(),
        output: TensorSpec::contiguous([3, 17], DType::F32),
        params: Params::new(0.5).with_zero_point(-3),
    })
    .unwrap();
    check_inference(&plan).unwrap()
}

fn dequant_cblock() -> DevicePlan<DetessDequant> {
    let plan = crate::ops::detessdequant::check_inference(&crate::ops::detessdequant::Request {
        dtype: DType::I8,
        layout: MlaTiled::new(
            [None, Some(1), Some(2), Some(3)],
            [1, 2, 2, 20],
            Channels::CBlock16,
        ),
        output: TensorSpec::contiguous([2, 2, 2, 20], DType::BF16),
        params: Params::new(0.125).with_zero_point(127),
    })
    .unwrap();
    check_inference(&plan).unwrap()
}

/// Applies `f` to a copy of `bytes` viewed as entry `K`'s descriptor and decodes the result
/// (the entry told by the magic word).
fn corrupt<const K: u8>(
    bytes: &[u8; SIZE],
    f: impl FnOnce(&mut DetessDescriptorV1<K>),
) -> Result<DetessRepr, DecodeError> {
    let mut copy = *bytes;
    f(DetessDescriptorV1::<K>::mut_from_bytes(&mut copy).unwrap());
    decode(&copy)
}

/// The rows every Detess-family matrix golden shares: its layout is [`pad16_w3c17`] over a
/// 2-byte input (capacity 192, bound at 0x1000), its output contiguous with elements of
/// `o` bytes (strides 17·o, o) at 0x2000.
fn family_cases<const K: u8>(
    g: &[u8; SIZE],
    o: u64,
) -> Vec<(DecodeCode, Result<DetessRepr, DecodeError>)> {
    use DecodeCode as C;
    let c = |f: &dyn Fn(&mut DetessDescriptorV1<K>)| corrupt::<K>(g, f);
    std::vec![
        (C::Length, decode(&[0u8; 216])),
        (C::Reserved212, c(&|d| d.reserved_212 = U32::new(7))),
        (C::TileAlign, c(&|d| d.tile_align = U32::new(0))),
        (C::TileAlign, c(&|d| d.tile_align = U32::new(8))),
        (C::TileAlign, c(&|d| d.tile_align = U32::new(32))),
        (C::InputDType, c(&|d| d.input_dtype = U32::new(0))),
        (C::InputDType, c(&|d| d.input_dtype = U32::new(2))),
        (C::InputDType, c(&|d| d.input_dtype = U32::new(8))),
        (C::AxisOutOfRange, c(&|d| d.axes[0] = 2)),
        (C::AxisOutOfRange, c(&|d| d.axes[3] = 6)),
        (C::AxisOutOfRange, c(&|d| d.axes[1] = -2)),
        (C::AxisRepeated, c(&|d| d.axes[3] = 0)),
        (C::AbsentTile, c(&|d| d.tile[0] = U32::new(2))),
        (C::AbsentTileCount, c(&|d| d.tile_counts[1] = U32::new(2))),
        (C::TileExtent, c(&|d| d.tile[2] = U32::new(0))),
        (C::TileExtent, c(&|d| d.tile[2] = U32::new(4))),
        (C::TileCount, c(&|d| d.tile_counts[2] = U32::new(1))),
        (C::TileCount, c(&|d| d.tile_counts[3] = U32::new(1))),
        (C::BytesPerOuter, c(&|d| d.bytes_per_outer = U64::new(191))),
        (C::InputSpan, c(&|d| d.prefix.input_span = U64::new(176))),
        (C::ChannelFlags, c(&|d| d.prefix.flags = U32::new(2))),
        // A C tile of 8 of 17 channels: neither C nor a multiple of 16.
        (C::C16TileChannels, c(&|d| d.tile[3] = U32::new(8))),
        // One channel stored as 16: 32 bytes a pixel, 2^60 pixels overflow the capacity
        // while the output (o bytes a pixel) still fits.
        (
            C::InputSpanOverflow,
            c(&|d| {
                d.prefix.extents[0] = U64::new(1 << 60);
                d.prefix.extents[1] = U64::new(1);
                d.prefix.input_strides[0] = U64::new(o);
                d.prefix.input_strides[1] = U64::new(0);
                d.prefix.elements = U64::new(1 << 60);
                d.prefix.output_span = U64::new(o << 60);
                d.tile[3] = U32::new(1);
            })
        ),
        (
            C::OutputZeroStride,
            c(&|d| d.prefix.input_strides[1] = U64::new(0))
        ),
        (
            C::OutputSingletonStride,
            c(&|d| d.prefix.extents[0] = U64::new(1))
        ),
        (
            C::OutputStrideNotMultiple,
            c(&|d| d.prefix.input_strides[1] = U64::new(o + 1))
        ),
        (
            C::OutputOverlap,
            c(&|d| d.prefix.input_strides[0] = U64::new(8 * o))
        ),
        (
            C::OutputSpanOverflow,
            c(&|d| d.prefix.input_strides[0] = U64::new(0u64.wrapping_sub(o)))
        ),
        (
            C::OutputMisaligned,
            c(&|d| d.prefix.output_address = U64::new(0x2001))
        ),
        (
            C::PortsOverlap,
            c(&|d| d.prefix.input_address = U64::new(0x1ff0))
        ),
        (
            C::PortsOverlap,
            c(&|d| d.prefix.output_address = U64::new(0x10bc))
        ),
    ]
}

/// The rows of the words at 216 and 220 when they are reserved (Detess, DetessCast).
fn reserved_param_cases<const K: u8>(g: &[u8; SIZE]) -> Cases<Detess> {
    use DecodeCode as C;
    std::vec![
        (
            C::Reserved216,
            corrupt::<K>(g, |d| d.multiplier = U32::new(0x3f80_0000))
        ),
        (
            C::Reserved220,
            corrupt::<K>(g, |d| d.zero_point = I32::new(-1))
        ),
    ]
}

impl Fixture for Detess {
    fn plan() -> DevicePlan<Detess> {
        detess_i16()
    }

    fn other() -> DevicePlan<Detess> {
        detess_sima_fixture()
    }

    const INPUT: DeviceRegion = DeviceRegion::new(0x1000, 192);
    const OUTPUT: DeviceRegion = DeviceRegion::new(0x2000, 102);
    const INPUT_ALIGN: u64 = 16;
    const OUTPUT_GRANULE: u32 = 2;
    const FLAG_BITS: u32 = 0b11;
    const ROW: (u8, &'static str, usize) = (0x31, "Detess v1", 224);

    fn goldens() -> Vec<Golden<Detess>> {
        std::vec![(
            detess_i16(),
            Some((r(0x1000, 192), r(0x2000, 102))),
            &GOLDEN_DETESS_I16
        )]
    }

    fn matrix_golden() -> &'static [u8] {
        &GOLDEN_DETESS_I16
    }

    // The flag word's bit 1 (PadTo16 and CBlock16 take the same bytes for this layout)
    // and the address slots.
    const FREE_BYTES: &'static [Range<usize>] = &[16..17, 24..40];

    fn tail_cases() -> Cases<Detess> {
        use DecodeCode as C;
        let g = &GOLDEN_DETESS_I16;
        let mut cases = family_cases::<0>(g, 2);
        cases.extend(reserved_param_cases::<0>(g));
        cases.extend([
            (
                C::InputDType,
                corrupt::<0>(g, |d| d.input_dtype = U32::new(3)),
            ),
            // An INT8 output of the INT16 input (its span recomputed for 1-byte elements).
            (
                C::DTypeMismatch,
                corrupt::<0>(g, |d| {
                    d.prefix.dtype = U32::new(5);
                    d.prefix.output_span = U64::new(101);
                }),
            ),
            (C::DType, corrupt::<0>(g, |d| d.prefix.dtype = U32::new(3))),
        ]);
        cases
    }
}

impl Fixture for DetessCast {
    fn plan() -> DevicePlan<DetessCast> {
        cast_bf16()
    }

    fn other() -> DevicePlan<DetessCast> {
        cast_nchw_align1()
    }

    const INPUT: DeviceRegion = DeviceRegion::new(0x1000, 192);
    const OUTPUT: DeviceRegion = DeviceRegion::new(0x2000, 204);
    const INPUT_ALIGN: u64 = 16;
    const OUTPUT_GRANULE: u32 = 4;
    const FLAG_BITS: u32 = 0b11;
    const ROW: (u8, &'static str, usize) = (0x32, "DetessCast v1", 224);

    fn goldens() -> Vec<Golden<DetessCast>> {
        std::vec![
            (
                cast_bf16(),
                Some((r(0x1000, 192), r(0x2000, 204))),
                &GOLDEN_CAST_BF16
            ),
            (cast_nchw_align1(), None, &GOLDEN_CAST_NCHW_ALIGN1),
        ]
    }

    fn matrix_golden() -> &'static [u8] {
        &GOLDEN_CAST_BF16
    }

    const FREE_BYTES: &'static [Range<usize>] = &[16..17, 24..40];

    fn tail_cases() -> Cases<DetessCast> {
        use DecodeCode as C;
        let g = &GOLDEN_CAST_BF16;
        let mut cases = family_cases::<1>(g, 4);
        cases.extend(reserved_param_cases::<1>(g));
        cases.extend([
            // INT16 is Detess's input, not DetessCast's.
            (
                C::InputDType,
                corrupt::<1>(g, |d| d.input_dtype = U32::new(6)),
            ),
            (C::DType, corrupt::<1>(g, |d| d.prefix.dtype = U32::new(1))),
        ]);
        cases
    }
}

impl Fixture for DetessDequant {
    fn plan() -> DevicePlan<DetessDequant> {
        dequant_i16()
    }

    fn other() -> DevicePlan<DetessDequant> {
        dequant_cblock()
    }

    const INPUT: DeviceRegion = DeviceRegion::new(0x1000, 192);
    const OUTPUT: DeviceRegion = DeviceRegion::new(0x2000, 204);
    const INPUT_ALIGN: u64 = 16;
    const OUTPUT_GRANULE: u32 = 4;
    const FLAG_BITS: u32 = 0b11;
    const ROW: (u8, &'static str, usize) = (0x33, "DetessDequant v1", 224);

    fn goldens() -> Vec<Golden<DetessDequant>> {
        std::vec![
            (
                dequant_i16(),
                Some((r(0x1000, 192), r(0x2000, 204))),
                &GOLDEN_DEQUANT_I16
            ),
            (dequant_cblock(), None, &GOLDEN_DEQUANT_CBLOCK),
        ]
    }

    fn matrix_golden() -> &'static [u8] {
        &GOLDEN_DEQUANT_I16
    }

    // The flag word's bit 1, the address slots, the multiplier and the zero point.
    const FREE_BYTES: &'static [Range<usize>] = &[16..17, 24..40, 216..224];

    fn tail_cases() -> Cases<DetessDequant> {
        use DecodeCode as C;
        let g = &GOLDEN_DEQUANT_I16;
        let mut cases = family_cases::<2>(g, 4);
        let m = |bits: u32| corrupt::<2>(g, move |d| d.multiplier = U32::new(bits));
        let z = |v: i32| corrupt::<2>(g, move |d| d.zero_point = I32::new(v));
        cases.extend([
            (
                C::InputDType,
                corrupt::<2>(g, |d| d.input_dtype = U32::new(1)),
            ),
            (C::DType, corrupt::<2>(g, |d| d.prefix.dtype = U32::new(5))),
            (C::MultiplierNotFinite, m(0x7f80_0000)),
            (C::MultiplierNotFinite, m(0x7fc0_0000)),
            (C::MultiplierNotPositive, m(0)),
            (C::MultiplierNotPositive, m(0xbf80_0000)),
            // INT16's range is [-32768, 32767].
            (C::DequantZeroPoint, z(32_768)),
            (C::DequantZeroPoint, z(-32_769)),
        ]);
        cases
    }
}

mod detess_suite {
    use super::*;
    codec_suite!(Detess);
}

mod cast_suite {
    use super::*;
    codec_suite!(DetessCast);
}

mod dequant_suite {
    use super::*;
    codec_suite!(DetessDequant);
}

#[test]
fn a_tiled_input_binds_at_its_tile_alignment() {
    // Tile alignment 16: the input needs 16 bytes.
    let plan = detess_i16();
    let enc = encode_relocatable(&plan);
    assert_eq!(
        bind(&plan, &enc, r(0x1008, 192), r(0x2000, 102)),
        Err(BindError::Misaligned {
            port: Port::Input,
            address: 0x1008,
            align: 16
        })
    );
    // Tile alignment 1: the input's element size (BF16, 2 bytes).
    let plan = cast_nchw_align1();
    let enc = encode_relocatable(&plan);
    let bound = bind(&plan, &enc, r(0x1002, 60), r(0x2000, 120)).unwrap();
    assert_eq!(
        decode(bound.as_bytes()).unwrap().prefix.input_address,
        0x1002
    );
    assert_eq!(
        bind(&plan, &enc, r(0x1001, 60), r(0x2000, 120)),
        Err(BindError::Misaligned {
            port: Port::Input,
            address: 0x1001,
            align: 2
        })
    );
    // The input's capacity is its physical span (60 bytes, not 30 elements × 2 = 60 by
    // chance here; SiMa's INT8 fixture: 198 bytes of 198 elements, tile alignment 1).
    let sima = detess_sima_fixture();
    assert_eq!(sima.input_span(), 198);
}

#[test]
fn the_three_entries_decode_their_own_packets() {
    let d = decode(&GOLDEN_DETESS_I16).unwrap();
    let c = decode(&GOLDEN_CAST_BF16).unwrap();
    let q = decode(&GOLDEN_DEQUANT_I16).unwrap();
    assert_eq!(
        [d.conversion, c.conversion, q.conversion],
        [
            crate::wire::detess::Conversion::Detess,
            crate::wire::detess::Conversion::Cast,
            crate::wire::detess::Conversion::Dequant
        ]
    );
    assert_eq!(
        q.dequant_params(),
        Some(Params::new(0.5).with_zero_point(-3))
    );
    // Through the entry table, by magic.
    for (g, route) in [
        (&GOLDEN_DETESS_I16, 0x31),
        (&GOLDEN_CAST_BF16, 0x32),
        (&GOLDEN_DEQUANT_I16, 0x33),
    ] {
        assert_eq!(crate::ev74::entry_of(g).unwrap().route, route);
        assert_eq!(crate::ev74::verdict(g), crate::ev74::Verdict::Bound);
    }
}

#[test]
fn device_representability_counts_the_physical_span() {
    // INT8 [2^28, 1] PadTo16: 16 bytes a pixel, a capacity of 2^32 bytes.
    let plan = crate::ops::detess::check_inference(&crate::ops::detess::Request {
        dtype: DType::I8,
        layout: MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 1, 1],
            Channels::PadTo16,
        ),
        output: TensorSpec::contiguous([1 << 28, 1], DType::I8),
    })
    .unwrap();
    assert_eq!(
        check_inference(&plan),
        Err(RepresentError::Span {
            port: Port::Input,
            span: 1 << 32
        })
    );
}
