//! CastTess v1 codec tests: the encoder against the hand-written goldens of
//! `crate::wire::casttess` (SPEC §5, §7), binding, representability, empty packets and the
//! device-side rejection matrix.

extern crate std;

use std::vec::Vec;

use zerocopy::FromBytes;
use zerocopy::little_endian::{U16, U32, U64};

use super::*;
use crate::dtype::DType;
use crate::error::Port;
use crate::layout::{Channels, MlaTiled, TileAxis};
use crate::ops::casttess::{Request, check_inference as admit};
use crate::tensor::TensorSpec;
use crate::wire::casttess::CastTessDescriptorV1;
use crate::wire::casttess::test::{GOLDEN_PAD16_17, GOLDEN_RANK4_OUTER, GOLDEN_SPEC_EXAMPLE};

fn device<const R: usize>(request: Request<R>) -> DevicePlan {
    check_inference(&admit(&request).unwrap()).unwrap()
}

fn spec_plan() -> DevicePlan {
    device(Request {
        input: TensorSpec::contiguous([2, 3], DType::F32),
        layout: MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 3],
            Channels::Compact,
        ),
    })
}

fn pad16_plan() -> DevicePlan {
    device(Request {
        input: TensorSpec::contiguous([3, 17], DType::BF16),
        layout: MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 16],
            Channels::PadTo16,
        ),
    })
}

fn rank4_plan() -> DevicePlan {
    device(Request {
        input: TensorSpec::strided([2, 3, 4, 5], [200, 52, 12, 2], DType::F16),
        layout: MlaTiled::new(
            [None, Some(1), Some(2), Some(3)],
            [1, 2, 3, 4],
            Channels::Compact,
        ),
    })
}

fn r(address: u32, len: u64) -> DeviceRegion {
    DeviceRegion::new(address, len)
}

#[test]
fn encoder_matches_hand_written_goldens() {
    let spec = encode(&spec_plan(), r(0x1000, 24), r(0x2000, 16)).unwrap();
    assert_eq!(spec.as_bytes(), &GOLDEN_SPEC_EXAMPLE);
    assert_eq!(
        encode_relocatable(&pad16_plan()).as_bytes(),
        &GOLDEN_PAD16_17
    );
    let rank4 = encode(&rank4_plan(), r(0x10_0000, 350), r(0xffff_0000, 352)).unwrap();
    assert_eq!(rank4.as_bytes(), &GOLDEN_RANK4_OUTER);
    assert_eq!(
        (rank4.input_address(), rank4.output_address()),
        (0x10_0000, 0xffff_0000)
    );
}

#[test]
fn goldens_decode() {
    let s = decode(&GOLDEN_SPEC_EXAMPLE).unwrap();
    assert_eq!(
        (s.prefix.elements, s.prefix.input_span, s.prefix.output_span),
        (6, 24, 16)
    );
    // A relocatable packet is unbound: the device refuses it.
    assert_eq!(
        decode(&GOLDEN_PAD16_17),
        Err(DecodeError::Unbound { port: Port::Input })
    );
    let p = decode(&GOLDEN_RANK4_OUTER).unwrap();
    let mut want = *rank4_plan().repr();
    want.prefix.input_address = 0x10_0000;
    want.prefix.output_address = 0xffff_0000;
    assert_eq!(p, want);
}

#[test]
fn rebinding_leaves_the_encoded_packet_intact() {
    let plan = spec_plan();
    let encoded = encode_relocatable(&plan);
    let before = *encoded.as_bytes();
    let a = bind(&plan, &encoded, r(0x1000, 24), r(0x2000, 16)).unwrap();
    let b = bind(&plan, &encoded, r(0x8000, 64), r(0x40, 4096)).unwrap();
    assert_eq!(encoded.as_bytes(), &before);
    assert_eq!(a.input_address(), 0x1000);
    assert_eq!((b.input_address(), b.output_address()), (0x8000, 0x40));
    assert_eq!(encoded.state(), "encoded");
    assert_eq!(b.state(), "bound");
    assert_eq!(a.descriptor().prefix.output_span.get(), 16);
}

#[test]
fn bind_rejections() {
    let plan = spec_plan();
    let enc = encode_relocatable(&plan);
    let ok_in = r(0x1000, 24);
    let ok_out = r(0x2000, 16);
    assert_eq!(
        bind(&plan, &encode_relocatable(&pad16_plan()), ok_in, ok_out),
        Err(BindError::PacketMismatch)
    );
    assert_eq!(
        bind(&plan, &enc, r(0, 24), ok_out),
        Err(BindError::Unbound { port: Port::Input })
    );
    assert_eq!(
        bind(&plan, &enc, ok_in, r(0, 16)),
        Err(BindError::Unbound { port: Port::Output })
    );
    assert_eq!(
        bind(&plan, &enc, r(0x1000, 23), ok_out),
        Err(BindError::Capacity {
            port: Port::Input,
            required: 24,
            found: 23
        })
    );
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
        bind(&plan, &enc, r(0x1002, 24), ok_out),
        Err(BindError::Misaligned {
            port: Port::Input,
            address: 0x1002,
            align: 4
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
        layout: MlaTiled::new(
            [None, None, Some(0), None],
            [1, 1, 64, 1],
            Channels::Compact,
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
        layout: MlaTiled::new([None, None, Some(0), None], [1, 1, 1, 1], Channels::Compact),
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
        layout: MlaTiled::new([None, None, Some(0), None], [1, 1, 1, 1], Channels::Compact),
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
        layout: MlaTiled::new(
            [None, Some(1), Some(2), Some(0)],
            [1, 4, 2, 5],
            Channels::PadTo16,
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
        layout: MlaTiled::new(
            [None, Some(1), Some(2), Some(0)],
            [1, 4, 2, 5],
            Channels::PadTo16,
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

fn code_of(r: Result<CastTessRepr, DecodeError>) -> Option<DecodeCode> {
    r.err().map(|e| e.rule())
}

#[test]
fn rejection_matrix() {
    use DecodeCode as C;
    let g = &GOLDEN_RANK4_OUTER;
    assert!(decode(g).is_ok());
    // Outer extent e with stride 160: every input quantity fits u64, 176·e does not.
    let e: u64 = u64::MAX / 170;
    let cases: Vec<(C, Result<CastTessRepr, DecodeError>)> = std::vec![
        (C::Length, decode(&g[..215])),
        (C::Length, decode(&[0u8; 224])),
        (C::Magic, corrupt(g, |d| d.prefix.magic = *b"SKQT")),
        (C::Version, corrupt(g, |d| d.prefix.version = U16::new(2))),
        (C::Version, corrupt(g, |d| d.prefix.version = U16::new(0))),
        (
            C::ByteLength,
            corrupt(g, |d| d.prefix.byte_length = U16::new(224))
        ),
        (C::DType, corrupt(g, |d| d.prefix.dtype = U32::new(0))),
        (C::DType, corrupt(g, |d| d.prefix.dtype = U32::new(2))),
        (C::DType, corrupt(g, |d| d.prefix.dtype = U32::new(5))),
        (C::Rank, corrupt(g, |d| d.prefix.rank = U32::new(0))),
        (C::Rank, corrupt(g, |d| d.prefix.rank = U32::new(7))),
        (
            C::Rank,
            corrupt(g, |d| d.prefix.rank = U32::new(1 << 8 | 4))
        ),
        (C::UnusedExtent, corrupt(g, |d| d.prefix.rank = U32::new(3))),
        (
            C::UnknownFlags,
            corrupt(g, |d| d.prefix.flags = U32::new(2))
        ),
        (
            C::UnknownFlags,
            corrupt(g, |d| d.prefix.flags = U32::new(0x8000_0001))
        ),
        (
            C::Reserved20,
            corrupt(g, |d| d.prefix.reserved_20 = U32::new(1))
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
            C::UnusedExtent,
            corrupt(g, |d| d.prefix.extents[5] = U64::new(1 << 40))
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
            corrupt(g, |d| d.prefix.elements = U64::new(119))
        ),
        (
            C::ElementCount,
            corrupt(g, |d| d.prefix.elements = U64::new(0))
        ),
        (
            C::ElementCount,
            corrupt(g, |d| d.prefix.extents[0] = U64::new(3))
        ),
        (
            C::ElementsOverflow,
            corrupt(g, |d| {
                d.prefix.extents[0] = U64::new(1 << 32);
                d.prefix.extents[1] = U64::new(1 << 32);
            })
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
            corrupt(g, |d| d.prefix.input_span = U64::new(349))
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
            C::InputAddress,
            corrupt(g, |d| d.prefix.input_address = U64::new(1 << 32))
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
            C::InputMisaligned,
            corrupt(g, |d| d.prefix.input_address = U64::new(0x10_0001))
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
        (
            C::InputUnbound,
            corrupt(g, |d| d.prefix.input_address = U64::ZERO)
        ),
        (
            C::OutputUnbound,
            corrupt(g, |d| d.prefix.output_address = U64::ZERO)
        ),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (k, (want, got)) in cases.into_iter().enumerate() {
        assert_eq!(code_of(got), Some(want), "case {k}: {got:?}");
        seen.insert(want.get());
    }
    // Every code of the CastTess decoder is reachable and exercised (but the conversion of
    // host rules without a twin, which the shared admission never reports here).
    for c in crate::wire::casttess::CODES
        .into_iter()
        .filter(|&c| c != DecodeCode::Inadmissible)
    {
        assert!(seen.contains(&c.get()), "{c:?} not exercised");
    }
}

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
