//! Quant v1 codec tests: hand-written goldens (SPEC §7), binding, and the rejection matrix.

extern crate std;

use std::vec::Vec;

use zerocopy::FromBytes;
use zerocopy::little_endian::{I32, U16, U32, U64};

use core::ops::Range;

use super::*;
use crate::arith::quant::Rounding;
use crate::dtype::DType;
use crate::error::Port;
use crate::ev74::suite::{Cases, Fixture, Golden, codec_suite};
use crate::ops::quant::{Params, Request, check_inference as admit};
use crate::tensor::TensorSpec;
use crate::wire::quant::QuantDescriptorV1;

/// Rank-0 FP16 scalar, multiplier 0.5, zero point 5, nearest-even, relocatable. Written by
/// hand from the SPEC §7 table: a scalar lowers to rank 1, extent 1, strides 0, count 1.
#[rustfmt::skip]
const GOLDEN_SCALAR: [u8; 224] = [
    b'S', b'K', b'Q', b'T', 1, 0, 224, 0,        // magic, version 1, length 224
    4, 0, 0, 0, 1, 0, 0, 0,                      // dtype FP16 = 4, rank 1
    3, 0, 0, 0, 0, 0, 0, 0,                      // flags: both contiguous; reserved
    0, 0, 0, 0, 0, 0, 0, 0,                      // input slot (relocatable)
    0, 0, 0, 0, 0, 0, 0, 0,                      // output slot (relocatable)
    1, 0, 0, 0, 0, 0, 0, 0,                      // elements 1
    2, 0, 0, 0, 0, 0, 0, 0,                      // input span 2
    1, 0, 0, 0, 0, 0, 0, 0,                      // output span 1
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // extents [1, 0, ...]
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // input strides, all 0
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // output strides, all 0
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0x3f, 5, 0, 0, 0, 1, 0, 0, 0,       // multiplier 0x3f000000, zp 5, nearest-even
    0, 0, 0, 0,                                  // reserved
];

/// FP32 [2, 3] contiguous, multiplier 1.0, zero point 0, nearest-even, bound at input
/// 0x1000 and output 0x2000.
#[rustfmt::skip]
const GOLDEN_F32_2X3: [u8; 224] = [
    b'S', b'K', b'Q', b'T', 1, 0, 224, 0,
    3, 0, 0, 0, 2, 0, 0, 0,                      // FP32, rank 2
    3, 0, 0, 0, 0, 0, 0, 0,
    0x00, 0x10, 0, 0, 0, 0, 0, 0,                // input 0x1000
    0x00, 0x20, 0, 0, 0, 0, 0, 0,                // output 0x2000
    6, 0, 0, 0, 0, 0, 0, 0,                      // elements 6
    24, 0, 0, 0, 0, 0, 0, 0,                     // input span 24
    6, 0, 0, 0, 0, 0, 0, 0,                      // output span 6
    2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, // extents 2, 3
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    12, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, // input strides 12, 4
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // output strides 3, 1
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0x80, 0x3f, 0, 0, 0, 0, 1, 0, 0, 0,    // 1.0, zp 0, nearest-even
    0, 0, 0, 0,
];

/// BF16 rank 6, extents [2, 1, 3, 1, 2, 2]; input strides (bytes) [64, -, 16, -, 8, 2]
/// (gaps), output strides [1, -, 8, -, 4, 2] (permuted); extent-1 axes carry stride 0.
/// Input span 2 + 64 + 2·16 + 8 + 2 = 108; output span 1 + 1 + 2·8 + 4 + 2 = 24.
/// Multiplier 0x3e99999a, zero point -128, toward-negative; input 0x10000, output 0xffffff00.
#[rustfmt::skip]
const GOLDEN_BF16_RANK6: [u8; 224] = [
    b'S', b'K', b'Q', b'T', 1, 0, 224, 0,
    1, 0, 0, 0, 6, 0, 0, 0,                      // BF16 = 1, rank 6
    0, 0, 0, 0, 0, 0, 0, 0,                      // flags 0 (neither contiguous)
    0, 0, 1, 0, 0, 0, 0, 0,                      // input 0x0001_0000
    0x00, 0xff, 0xff, 0xff, 0, 0, 0, 0,          // output 0xffff_ff00
    24, 0, 0, 0, 0, 0, 0, 0,                     // elements 2·3·2·2 = 24
    108, 0, 0, 0, 0, 0, 0, 0,                    // input span 108
    24, 0, 0, 0, 0, 0, 0, 0,                     // output span 24
    2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // extents
    3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
    64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // input strides
    16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    8, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // output strides
    8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
    0x9a, 0x99, 0x99, 0x3e, 0x80, 0xff, 0xff, 0xff, 3, 0, 0, 0, // m, zp -128, toward-negative
    0, 0, 0, 0,
];

fn device<const R: usize>(request: Request<R>) -> DevicePlan {
    check_inference(&admit(&request).unwrap()).unwrap()
}

fn scalar_plan() -> DevicePlan {
    device(Request {
        input: TensorSpec::<0>::contiguous([], DType::F16),
        output: TensorSpec::<0>::contiguous([], DType::I8),
        params: Params::new(0.5).with_zero_point(5),
    })
}

fn f32_plan() -> DevicePlan {
    device(Request {
        input: TensorSpec::contiguous([2, 3], DType::F32),
        output: TensorSpec::contiguous([2, 3], DType::I8),
        params: Params::new(1.0),
    })
}

fn bf16_plan() -> DevicePlan {
    device(Request {
        // Extent-1 axes get arbitrary strides; admission normalizes them to 0.
        input: TensorSpec::strided([2, 1, 3, 1, 2, 2], [64, 12345, 16, 3, 8, 2], DType::BF16),
        output: TensorSpec::strided([2, 1, 3, 1, 2, 2], [1, 5, 8, 77, 4, 2], DType::I8),
        params: Params::from_bits(0x3e99_999a)
            .with_zero_point(-128)
            .with_rounding(Rounding::TowardNegative),
    })
}

#[test]
fn goldens_decode() {
    let s = QuantRepr::parse_bytes(&GOLDEN_SCALAR).unwrap();
    assert_eq!(
        (
            s.prefix.rank,
            s.prefix.elements,
            s.prefix.input_span,
            s.prefix.output_span
        ),
        (1, 1, 2, 1)
    );
    let f = decode(&GOLDEN_F32_2X3).unwrap();
    assert_eq!(
        (f.prefix.input_address, f.prefix.output_address),
        (0x1000, 0x2000)
    );
    let b = decode(&GOLDEN_BF16_RANK6).unwrap();
    assert_eq!(b.prefix.dtype, DType::BF16);
    assert_eq!(b.prefix.extents, [2, 1, 3, 1, 2, 2]);
    assert_eq!(b.prefix.input_strides, [64, 0, 16, 0, 8, 2]);
    assert_eq!(b.output_strides, [1, 0, 8, 0, 4, 2]);
    assert_eq!(b.rounding, Rounding::TowardNegative);
    assert_eq!(b.zero_point, -128);
    assert_eq!(b.multiplier.bits(), 0x3e99_999a);
    assert_eq!(b.flags, QuantFlags::empty());
}

/// The Quant rows of the bind rules (the shared ones are in the codec suite): the output
/// port needs only byte alignment, its range may end exactly at 2^32, and overlap is
/// decided on the accessed spans, not the capacities.
#[test]
fn bind_rejections_of_the_quant_ports() {
    let plan = f32_plan();
    let enc = encode_relocatable(&plan);
    let r = DeviceRegion::new;
    let ok_in = r(0x1000, 24);
    assert!(bind(&plan, &enc, ok_in, r(0x2001, 6)).is_ok());
    // Address + span = 2^32 + 1 (output); exactly 2^32 is fine.
    assert_eq!(
        bind(&plan, &enc, ok_in, r(0xffff_fffb, 6)),
        Err(BindError::Range {
            port: Port::Output,
            address: 0xffff_fffb,
            span: 6
        })
    );
    assert!(bind(&plan, &enc, ok_in, r(0xffff_fffa, 6)).is_ok());
    assert_eq!(
        bind(&plan, &enc, ok_in, r(0x0ffb, 6)),
        Err(BindError::Overlap)
    );
    assert!(bind(&plan, &enc, r(0x1000, 24), r(0x0ff9, 7)).is_ok());
}

#[test]
fn device_representability() {
    let plan = admit(&Request {
        input: TensorSpec::strided([2], [1 << 32], DType::F32),
        output: TensorSpec::contiguous([2], DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    assert_eq!(
        check_inference(&plan),
        Err(RepresentError::Span {
            port: Port::Input,
            span: (1 << 32) + 4
        })
    );
    let plan = admit(&Request {
        input: TensorSpec::contiguous([2], DType::F32),
        output: TensorSpec::strided([2], [u32::MAX as u64], DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    assert_eq!(
        check_inference(&plan),
        Err(RepresentError::Span {
            port: Port::Output,
            span: 1 << 32
        })
    );
}

#[test]
fn empty_plans_encode_valid_no_op_packets() {
    let plan = device(Request {
        input: TensorSpec::strided([3, 0, 2], [40, 8, 4], DType::F32),
        output: TensorSpec::contiguous([3, 0, 2], DType::I8),
        params: Params::new(3.0),
    });
    let packet = encode(&plan, DeviceRegion::new(0, 0), DeviceRegion::new(0, 0)).unwrap();
    let repr = decode(packet.as_bytes()).unwrap();
    assert_eq!(
        (
            repr.prefix.elements,
            repr.prefix.input_span,
            repr.prefix.output_span
        ),
        (0, 0, 0)
    );
    // Zero strides on zero/one-extent axes (SPEC §7); other axes keep admitted strides.
    assert_eq!(repr.prefix.input_strides[1], 0);
    assert_eq!(repr.output_strides[1], 0);
    assert!(repr.is_empty());
}

/// The empty-packet rule (SPEC §2: an empty tensor needs no storage, but descriptors are
/// still validated): an empty Quant packet is held to the zero-stride and nonoverlap rules
/// of both ports, as host admission holds an empty spec (the decoder used to skip them).
#[test]
fn empty_packets_are_still_validated() {
    let plan = device(Request {
        input: TensorSpec::strided([3, 0, 2], [40, 8, 4], DType::F32),
        output: TensorSpec::contiguous([3, 0, 2], DType::I8),
        params: Params::new(3.0),
    });
    let packet = encode(&plan, DeviceRegion::new(0, 0), DeviceRegion::new(0, 0)).unwrap();
    let bytes = packet.as_bytes();
    assert!(decode(bytes).is_ok());
    let cases = [
        (
            corrupt(bytes, |d| d.prefix.input_strides[2] = U64::new(0)),
            DecodeError::ZeroStride {
                port: Port::Input,
                axis: 2,
            },
        ),
        (
            corrupt(bytes, |d| d.output_strides[0] = U64::new(0)),
            DecodeError::ZeroStride {
                port: Port::Output,
                axis: 0,
            },
        ),
        (
            // Axis 0 (extent 3) at stride 4 lands inside axis 2's rows (extent 2, stride 4).
            corrupt(bytes, |d| d.prefix.input_strides[0] = U64::new(4)),
            DecodeError::Overlap {
                port: Port::Input,
                axis: 2,
            },
        ),
        (
            corrupt(bytes, |d| d.output_strides[0] = U64::new(1)),
            DecodeError::Overlap {
                port: Port::Output,
                axis: 2,
            },
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, Err(want));
    }
}

/// Applies `f` to a copy of `bytes` viewed as a descriptor and decodes the result.
fn corrupt(
    bytes: &[u8; 224],
    f: impl FnOnce(&mut QuantDescriptorV1),
) -> Result<QuantRepr, DecodeError> {
    let mut copy = *bytes;
    f(QuantDescriptorV1::mut_from_bytes(&mut copy).unwrap());
    decode(&copy)
}

impl Fixture for Quant {
    fn plan() -> DevicePlan {
        f32_plan()
    }

    fn other() -> DevicePlan {
        bf16_plan()
    }

    const INPUT: DeviceRegion = DeviceRegion::new(0x1000, 24);
    const OUTPUT: DeviceRegion = DeviceRegion::new(0x2000, 6);
    const INPUT_ALIGN: u64 = 4;
    const OUTPUT_GRANULE: u32 = 1;
    const FLAG_BITS: u32 = 0b11;
    const ROW: (u8, &'static str, usize) = (0x2f, "Quant v1", 224);

    fn goldens() -> Vec<Golden<Quant>> {
        let r = DeviceRegion::new;
        std::vec![
            (scalar_plan(), None, &GOLDEN_SCALAR),
            (
                f32_plan(),
                Some((r(0x1000, 24), r(0x2000, 6))),
                &GOLDEN_F32_2X3
            ),
            (
                bf16_plan(),
                Some((r(0x1_0000, 108), r(0xffff_ff00, 24))),
                &GOLDEN_BF16_RANK6
            ),
        ]
    }

    fn matrix_golden() -> &'static [u8] {
        &GOLDEN_F32_2X3
    }

    // The address slots, and the multiplier, zero point and rounding words.
    const FREE_BYTES: &'static [Range<usize>] = &[24..40, 208..220];

    /// The Quant rows: its flags, tail words and output port, and prefix rows on values of
    /// this golden.
    fn tail_cases() -> Cases<Quant> {
        use DecodeCode as C;
        let g = &GOLDEN_F32_2X3;
        std::vec![
            (C::Magic, corrupt(g, |d| d.prefix.magic = *b"SKCT")),
            (
                C::ByteLength,
                corrupt(g, |d| d.prefix.byte_length = U16::new(216))
            ),
            (
                C::InputContiguousFlag,
                corrupt(g, |d| d.prefix.flags = U32::new(2))
            ),
            (
                C::OutputContiguousFlag,
                corrupt(g, |d| d.prefix.flags = U32::new(1))
            ),
            (
                C::Reserved220,
                corrupt(g, |d| d.reserved_220 = U32::new(0x8000_0000))
            ),
            (
                C::UnusedExtent,
                corrupt(g, |d| d.prefix.extents[2] = U64::new(1))
            ),
            (
                C::UnusedInputStride,
                corrupt(g, |d| d.prefix.input_strides[3] = U64::new(4))
            ),
            (
                C::UnusedOutputStride,
                corrupt(g, |d| d.output_strides[5] = U64::new(1))
            ),
            (
                C::MultiplierNotFinite,
                corrupt(g, |d| d.multiplier = U32::new(0x7fc0_0000))
            ),
            (
                C::MultiplierNotFinite,
                corrupt(g, |d| d.multiplier = U32::new(0x7f80_0000))
            ),
            (
                C::MultiplierNotPositive,
                corrupt(g, |d| d.multiplier = U32::new(0))
            ),
            (
                C::MultiplierNotPositive,
                corrupt(g, |d| d.multiplier = U32::new(0x8000_0000))
            ),
            (
                C::MultiplierNotPositive,
                corrupt(g, |d| d.multiplier = U32::new(0xbf80_0000))
            ),
            (C::ZeroPoint, corrupt(g, |d| d.zero_point = I32::new(128))),
            (C::ZeroPoint, corrupt(g, |d| d.zero_point = I32::new(-129))),
            (C::Rounding, corrupt(g, |d| d.rounding = U32::new(4))),
            (
                C::InputStrideNotMultiple,
                corrupt(g, |d| d.prefix.input_strides[1] = U64::new(5))
            ),
            (
                C::InputZeroStride,
                corrupt(g, |d| d.prefix.input_strides[1] = U64::new(0))
            ),
            (
                C::OutputZeroStride,
                corrupt(g, |d| d.output_strides[0] = U64::new(0))
            ),
            (
                C::InputSpanOverflow,
                corrupt(g, |d| d.prefix.input_strides[0] = U64::new(u64::MAX - 3))
            ),
            (
                C::OutputSpanOverflow,
                corrupt(g, |d| d.output_strides[0] = U64::new(u64::MAX))
            ),
            (
                C::InputOverlap,
                corrupt(g, |d| {
                    // Strides (4, 4) over extents (2, 3): span 16, rows interleave.
                    d.prefix.input_strides[0] = U64::new(4);
                    d.prefix.input_span = U64::new(16);
                })
            ),
            (
                C::OutputOverlap,
                corrupt(g, |d| {
                    d.output_strides[0] = U64::new(2);
                    d.prefix.output_span = U64::new(5);
                })
            ),
            (
                C::OutputAddress,
                corrupt(g, |d| d.prefix.output_address = U64::new(u64::MAX))
            ),
            (
                C::InputMisaligned,
                corrupt(g, |d| d.prefix.input_address = U64::new(0x1002))
            ),
            (
                C::PortsOverlap,
                corrupt(g, |d| d.prefix.output_address = U64::new(0x1017))
            ),
            (
                C::PortsOverlap,
                corrupt(g, |d| d.prefix.input_address = U64::new(0x1ff0))
            ),
            (
                C::InputSingletonStride,
                corrupt(&GOLDEN_BF16_RANK6, |d| d.prefix.input_strides[1] =
                    U64::new(2))
            ),
            (
                C::OutputSingletonStride,
                corrupt(&GOLDEN_BF16_RANK6, |d| d.output_strides[3] = U64::new(1))
            ),
        ]
    }
}

codec_suite!(Quant);
