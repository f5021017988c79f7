//! CastTess v1 codec tests: the encoder against the hand-written goldens of
//! `crate::wire::casttess` (SPEC §5, §7), binding, representability, empty packets and the
//! device-side rejection matrix.

extern crate std;

use std::vec::Vec;

use zerocopy::FromBytes;
use zerocopy::little_endian::{U16, U32, U64};

use core::ops::Range;

use super::*;
use crate::dtype::DType;
use crate::error::Port;
use crate::ev74::suite::{Cases, Fixture, Golden, codec_suite};
use crate::layout::{Channels, MlaTiled, TileAxis};
use crate::ops::casttess::{Request, TiledTensorSpec, check_inference as admit};
use crate::tensor::TensorSpec;
use crate::wire::casttess::CastTessDescriptorV1;
use crate::wire::casttess::test::{GOLDEN_PAD16_17, GOLDEN_RANK4_OUTER, GOLDEN_SPEC_EXAMPLE};

fn device<const R: usize>(request: Request<R>) -> DevicePlan {
    check_inference(&admit(&request).unwrap()).unwrap()
}

fn spec_plan() -> DevicePlan {
    device(Request {
        input: TensorSpec::contiguous([2, 3], DType::F32),
        output: TiledTensorSpec::new(
            [2, 3],
            DType::BF16,
            MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 2, 3],
                Channels::Compact,
            ),
        ),
    })
}

fn pad16_plan() -> DevicePlan {
    device(Request {
        input: TensorSpec::contiguous([3, 17], DType::BF16),
        output: TiledTensorSpec::new(
            [3, 17],
            DType::BF16,
            MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 2, 16],
                Channels::PadTo16,
            ),
        ),
    })
}

fn rank4_plan() -> DevicePlan {
    device(Request {
        input: TensorSpec::strided([2, 3, 4, 5], [200, 52, 12, 2], DType::F16),
        output: TiledTensorSpec::new(
            [2, 3, 4, 5],
            DType::BF16,
            MlaTiled::new(
                [None, Some(1), Some(2), Some(3)],
                [1, 2, 3, 4],
                Channels::Compact,
            ),
        ),
    })
}

fn r(address: u32, len: u64) -> DeviceRegion {
    DeviceRegion::new(address, len)
}

#[test]
fn goldens_decode() {
    let s = decode(&GOLDEN_SPEC_EXAMPLE).unwrap();
    assert_eq!(
        (s.prefix.elements, s.prefix.input_span, s.prefix.output_span),
        (6, 24, 16)
    );
    let p = decode(&GOLDEN_RANK4_OUTER).unwrap();
    let mut want = *rank4_plan().repr();
    want.prefix.input_address = 0x10_0000;
    want.prefix.output_address = 0xffff_0000;
    assert_eq!(p, want);
}

/// The CastTess rows of the bind rules (the shared ones are in the codec suite): the
/// output capacity is the physical span, the output needs 16-byte alignment and may end
/// exactly at 2^32.
#[test]
fn bind_rejections_of_the_casttess_ports() {
    let plan = spec_plan();
    let enc = encode_relocatable(&plan);
    let ok_in = r(0x1000, 24);
    let ok_out = r(0x2000, 16);
    // Capacity is the physical span (16), not elements × 2 (12).
    assert_eq!(
        bind(&plan, &enc, ok_in, r(0x2000, 12)),
        Err(BindError::Capacity {
            port: Port::Output,
            required: 16,
            found: 12
        })
    );
    assert_eq!(
        bind(&plan, &enc, ok_in, r(0x2008, 16)),
        Err(BindError::Misaligned {
            port: Port::Output,
            address: 0x2008,
            align: 16
        })
    );
    assert_eq!(
        bind(&plan, &enc, r(0xffff_fff0, 24), ok_out),
        Err(BindError::Range {
            port: Port::Input,
            address: 0xffff_fff0,
            span: 24
        })
    );
    // The output may end exactly at 2^32, not past it.
    assert!(bind(&plan, &enc, ok_in, r(0xffff_fff0, 16)).is_ok());
    let rank4 = rank4_plan();
    assert_eq!(
        bind(
            &rank4,
            &encode_relocatable(&rank4),
            r(0x1000, 350),
            r(0xffff_ff00, 352)
        ),
        Err(BindError::Range {
            port: Port::Output,
            address: 0xffff_ff00,
            span: 352
        })
    );
    assert_eq!(
        bind(&plan, &enc, r(0x2008, 24), r(0x2000, 32)),
        Err(BindError::Overlap)
    );
    // Adjacent ranges do not overlap.
    assert!(bind(&plan, &enc, r(0x2010, 24), r(0x2000, 16)).is_ok());
}

#[test]
fn device_representability() {
    // Input span 2^33 bytes.
    let big_in = admit(&Request {
        input: TensorSpec::contiguous([1 << 31], DType::F32),
        output: TiledTensorSpec::new(
            [1 << 31],
            DType::BF16,
            MlaTiled::new(
                [None, None, Some(0), None],
                [1, 1, 64, 1],
                Channels::Compact,
            ),
        ),
    })
    .unwrap();
    assert_eq!(
        check_inference(&big_in),
        Err(RepresentError::Span {
            port: Port::Input,
            span: 1 << 33
        })
    );
    // Input span 2^29 bytes, but 2^28 one-pixel tiles of 16 bytes: capacity 2^32.
    let big_out = admit(&Request {
        input: TensorSpec::contiguous([1 << 28], DType::BF16),
        output: TiledTensorSpec::new(
            [1 << 28],
            DType::BF16,
            MlaTiled::new([None, None, Some(0), None], [1, 1, 1, 1], Channels::Compact),
        ),
    })
    .unwrap();
    assert_eq!(
        check_inference(&big_out),
        Err(RepresentError::Span {
            port: Port::Output,
            span: 1 << 32
        })
    );
    // One tile less fits.
    let fits = admit(&Request {
        input: TensorSpec::contiguous([(1 << 28) - 1], DType::BF16),
        output: TiledTensorSpec::new(
            [(1 << 28) - 1],
            DType::BF16,
            MlaTiled::new([None, None, Some(0), None], [1, 1, 1, 1], Channels::Compact),
        ),
    })
    .unwrap();
    let plan = check_inference(&fits).unwrap();
    assert_eq!(plan.output_span(), (1 << 32) - 16);
    assert_eq!(plan.repr().tile_counts, [1, 1, (1 << 28) - 1, 1]);
}

#[test]
fn empty_plans_encode_valid_no_op_packets() {
    let plan = device(Request {
        input: TensorSpec::strided([5, 0, 3], [4, 96, 40], DType::F32),
        output: TiledTensorSpec::new(
            [5, 0, 3],
            DType::BF16,
            MlaTiled::new(
                [None, Some(1), Some(2), Some(0)],
                [1, 4, 2, 5],
                Channels::PadTo16,
            ),
        ),
    });
    assert!(plan.is_empty());
    let packet = encode(&plan, r(0, 0), r(0, 0)).unwrap();
    let repr = decode(packet.as_bytes()).unwrap();
    assert_eq!(
        (
            repr.prefix.elements,
            repr.prefix.input_span,
            repr.prefix.output_span,
            repr.bytes_per_outer
        ),
        (0, 0, 0, 0)
    );
    // Zero strides on zero/one-extent axes; the others keep their admitted strides.
    assert_eq!(repr.prefix.input_strides, [4, 0, 40, 0, 0, 0]);
    // ceil(extent / tile): the empty H axis has 0 tiles, W 2, C 1, absent D 1.
    assert_eq!(repr.tile_counts, [1, 0, 2, 1]);
    assert!(repr.is_empty());
}

/// The empty-packet rule (SPEC §2: an empty tensor needs no storage, but descriptors are
/// still validated): an empty CastTess packet is held to the input's zero-stride and
/// nonoverlap rules, as host admission holds an empty spec.
#[test]
fn empty_packets_are_still_validated() {
    let plan = device(Request {
        input: TensorSpec::strided([5, 0, 3], [4, 96, 40], DType::F32),
        output: TiledTensorSpec::new(
            [5, 0, 3],
            DType::BF16,
            MlaTiled::new(
                [None, Some(1), Some(2), Some(0)],
                [1, 4, 2, 5],
                Channels::PadTo16,
            ),
        ),
    });
    let packet = encode(&plan, r(0, 0), r(0, 0)).unwrap();
    let bytes = packet.as_bytes();
    assert!(decode(bytes).is_ok());
    assert_eq!(
        corrupt(bytes, |d| d.prefix.input_strides[2] = U64::new(0)),
        Err(DecodeError::ZeroStride {
            port: Port::Input,
            axis: 2
        })
    );
    // Axis 2 (extent 3) at stride 8 lands inside axis 0's pixels (extent 5, stride 4).
    assert_eq!(
        corrupt(bytes, |d| d.prefix.input_strides[2] = U64::new(8)),
        Err(DecodeError::Overlap {
            port: Port::Input,
            axis: 2
        })
    );
}

/// Applies `f` to a copy of `bytes` viewed as a descriptor and decodes the result.
fn corrupt(
    bytes: &[u8; 216],
    f: impl FnOnce(&mut CastTessDescriptorV1),
) -> Result<CastTessRepr, DecodeError> {
    let mut copy = *bytes;
    f(CastTessDescriptorV1::mut_from_bytes(&mut copy).unwrap());
    decode(&copy)
}

impl Fixture for CastTess {
    fn plan() -> DevicePlan {
        spec_plan()
    }

    fn other() -> DevicePlan {
        pad16_plan()
    }

    const INPUT: DeviceRegion = DeviceRegion::new(0x1000, 24);
    const OUTPUT: DeviceRegion = DeviceRegion::new(0x2000, 16);
    const INPUT_ALIGN: u64 = 4;
    const OUTPUT_GRANULE: u32 = 16;
    const FLAG_BITS: u32 = 0b1;
    const ROW: (u8, &'static str, usize) = (0x30, "CastTess v1", 216);

    fn goldens() -> Vec<Golden<CastTess>> {
        std::vec![
            (
                spec_plan(),
                Some((r(0x1000, 24), r(0x2000, 16))),
                &GOLDEN_SPEC_EXAMPLE
            ),
            (pad16_plan(), None, &GOLDEN_PAD16_17),
            (
                rank4_plan(),
                Some((r(0x10_0000, 350), r(0xffff_0000, 352))),
                &GOLDEN_RANK4_OUTER
            ),
        ]
    }

    fn matrix_golden() -> &'static [u8] {
        &GOLDEN_RANK4_OUTER
    }

    // The address slots.
    #[allow(clippy::single_range_in_vec_init)]
    const FREE_BYTES: &'static [Range<usize>] = &[24..40];

    /// The CastTess rows: its tail words, axis map, tiles and output port, and prefix rows
    /// on values of this golden.
    fn tail_cases() -> Cases<CastTess> {
        use DecodeCode as C;
        let g = &GOLDEN_RANK4_OUTER;
        // Outer extent e with stride 160: every input quantity fits u64, 176·e does not.
        let e: u64 = u64::MAX / 170;
        std::vec![
            (C::Length, decode(&[0u8; 224])),
            (C::Magic, corrupt(g, |d| d.prefix.magic = *b"SKQT")),
            (
                C::ByteLength,
                corrupt(g, |d| d.prefix.byte_length = U16::new(224))
            ),
            (C::UnusedExtent, corrupt(g, |d| d.prefix.rank = U32::new(3))),
            (
                C::UnknownFlags,
                corrupt(g, |d| d.prefix.flags = U32::new(0x8000_0001))
            ),
            (
                C::Reserved164,
                corrupt(g, |d| d.reserved_164 = U32::new(1 << 24))
            ),
            (C::Reserved212, corrupt(g, |d| d.reserved_212 = U32::new(7))),
            (C::TileAlign, corrupt(g, |d| d.tile_align = U32::new(0))),
            (C::TileAlign, corrupt(g, |d| d.tile_align = U32::new(32))),
            (
                C::UnusedExtent,
                corrupt(g, |d| d.prefix.extents[4] = U64::new(1))
            ),
            (
                C::UnusedInputStride,
                corrupt(g, |d| d.prefix.input_strides[5] = U64::new(2))
            ),
            (C::AxisOutOfRange, corrupt(g, |d| d.axes[0] = 4)),
            (C::AxisOutOfRange, corrupt(g, |d| d.axes[3] = 6)),
            (C::AxisOutOfRange, corrupt(g, |d| d.axes[0] = -2)),
            (C::AxisOutOfRange, corrupt(g, |d| d.axes[2] = i8::MIN)),
            (C::AxisRepeated, corrupt(g, |d| d.axes[0] = 1)),
            (C::AxisRepeated, corrupt(g, |d| d.axes[3] = 2)),
            (C::AbsentTile, corrupt(g, |d| d.tile[0] = U32::new(2))),
            (C::AbsentTile, corrupt(g, |d| d.tile[0] = U32::new(0))),
            (
                C::AbsentTileCount,
                corrupt(g, |d| d.tile_counts[0] = U32::new(2))
            ),
            (
                C::AbsentTileCount,
                corrupt(g, |d| d.tile_counts[0] = U32::new(0))
            ),
            (C::TileExtent, corrupt(g, |d| d.tile[1] = U32::new(0))),
            (C::TileExtent, corrupt(g, |d| d.tile[1] = U32::new(4))),
            (C::TileExtent, corrupt(g, |d| d.tile[3] = U32::new(6))),
            (C::TileCount, corrupt(g, |d| d.tile_counts[1] = U32::new(3))),
            (C::TileCount, corrupt(g, |d| d.tile_counts[3] = U32::new(1))),
            (C::TileCount, corrupt(g, |d| d.tile_counts[2] = U32::new(0))),
            (
                C::ElementCount,
                corrupt(g, |d| d.prefix.elements = U64::new(0))
            ),
            (
                C::ElementCount,
                corrupt(g, |d| d.prefix.extents[0] = U64::new(3))
            ),
            (
                C::InputSingletonStride,
                corrupt(g, |d| d.prefix.extents[0] = U64::new(1))
            ),
            (
                C::InputStrideNotMultiple,
                corrupt(g, |d| d.prefix.input_strides[3] = U64::new(3))
            ),
            (
                C::InputZeroStride,
                corrupt(g, |d| d.prefix.input_strides[2] = U64::new(0))
            ),
            (
                C::InputOverlap,
                corrupt(g, |d| d.prefix.input_strides[2] = U64::new(8))
            ),
            (
                C::InputSpanOverflow,
                corrupt(g, |d| d.prefix.input_strides[0] = U64::new(u64::MAX - 1))
            ),
            (
                C::InputSpan,
                corrupt(g, |d| d.prefix.input_span = U64::new(240))
            ),
            (
                C::BytesPerOuter,
                corrupt(g, |d| d.bytes_per_outer = U64::new(160))
            ),
            (
                C::OutputSpan,
                corrupt(g, |d| d.prefix.output_span = U64::new(368))
            ),
            (
                C::OutputSpan,
                corrupt(g, |d| d.prefix.output_span = U64::new(240))
            ),
            (
                C::OutputSpanOverflow,
                corrupt(g, |d| {
                    d.prefix.extents[0] = U64::new(e);
                    d.prefix.input_strides[0] = U64::new(160);
                    d.prefix.elements = U64::new(60 * e);
                    d.prefix.input_span = U64::new(2 + 160 * (e - 1) + 104 + 36 + 8);
                })
            ),
            (
                C::OutputAddress,
                corrupt(g, |d| d.prefix.output_address = U64::new(1 << 33))
            ),
            (
                C::InputRange,
                corrupt(g, |d| d.prefix.input_address = U64::new(0xffff_ff00))
            ),
            (
                C::OutputRange,
                corrupt(g, |d| d.prefix.output_address = U64::new(0xffff_ff00))
            ),
            (
                C::OutputMisaligned,
                corrupt(g, |d| d.prefix.output_address = U64::new(0xffff_0008))
            ),
            (
                C::PortsOverlap,
                corrupt(g, |d| d.prefix.input_address = U64::new(0xffff_0000 - 2))
            ),
            (
                C::PortsOverlap,
                corrupt(g, |d| d.prefix.output_address = U64::new(0x10_0150))
            ),
        ]
    }
}

codec_suite!(CastTess);

#[test]
fn rejections_carry_the_offending_values() {
    let g = &GOLDEN_RANK4_OUTER;
    assert_eq!(
        corrupt(g, |d| d.tile_counts[1] = U32::new(3)),
        Err(DecodeError::TileCount {
            role: TileAxis::H,
            expected: 2,
            found: 3
        })
    );
    assert_eq!(
        corrupt(g, |d| d.axes[3] = 2),
        Err(DecodeError::AxisRepeated {
            role: TileAxis::C,
            axis: 2
        })
    );
    assert_eq!(
        corrupt(g, |d| d.tile[1] = U32::new(4)),
        Err(DecodeError::TileExtent {
            role: TileAxis::H,
            tile: 4,
            extent: 3
        })
    );
    assert_eq!(
        corrupt(g, |d| d.prefix.output_span = U64::new(368)),
        Err(DecodeError::Span {
            port: Port::Output,
            expected: 352,
            found: 368
        })
    );
    assert_eq!(
        corrupt(g, |d| d.prefix.input_strides[2] = U64::new(8)),
        Err(DecodeError::Overlap {
            port: Port::Input,
            axis: 2
        })
    );
}
