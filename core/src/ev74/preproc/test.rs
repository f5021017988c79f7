//! Preproc codec tests: the encoder against the hand-written goldens of
//! `crate::wire::preproc` (SPEC §7, §13), the generic codec suite, binding a frame at any
//! byte, and the rejection matrix over every rule of the entry.

extern crate std;

use std::vec::Vec;

use core::ops::Range;

use zerocopy::FromBytes;
use zerocopy::little_endian::{I32, U32, U64};

use super::*;
use crate::arith::quant::Rounding;
use crate::error::Port;
use crate::ev74::suite::{Cases, Fixture, Golden, codec_suite};
use crate::layout::{Channels, MlaTiled};
use crate::ops::preproc::{Border, Format, Frame, Normalize, Output, Plane, Request};
use crate::ops::quant::Params;
use crate::wire::preproc::test::{GOLDEN_GRAY_QUANTTESS, GOLDEN_NV12_I8, GOLDEN_RGBX_CASTTESS};
use crate::wire::preproc::{PreprocDescriptorV1, SIZE};

fn r(address: u32, len: u64) -> DeviceRegion {
    DeviceRegion::new(address, len)
}

fn device(request: &Request<'_>) -> DevicePlan {
    check_inference(&crate::ops::preproc::check_inference(request).unwrap()).unwrap()
}

/// The plan of [`GOLDEN_NV12_I8`].
fn nv12_i8() -> DevicePlan {
    device(&Request {
        frame: Frame::packed(Format::NV12, 4, 6),
        normalize: Normalize {
            divisor: 255.0,
            mean: &[0.5, 0.25, 0.125],
            std: &[0.5, 1.0, 2.0],
        },
        bgr: true,
        border: Border {
            top: 1,
            bottom: 0,
            left: 0,
            right: 2,
        },
        pad_value: &[114, 115, 116],
        output: Output::I8 {
            strides: None,
            params: Params::new(0.0078125).with_zero_point(-3),
        },
    })
}

/// The plan of [`GOLDEN_RGBX_CASTTESS`].
fn rgbx_casttess() -> DevicePlan {
    device(&Request {
        frame: Frame {
            format: Format::RGBX8,
            height: 2,
            width: 3,
            planes: [
                Plane {
                    offset: 0,
                    row_stride: 16,
                },
                Plane::default(),
                Plane::default(),
            ],
            batch: Some(2),
            frame_stride: 40,
        },
        normalize: Normalize::DEFAULT,
        bgr: false,
        border: Border::default(),
        pad_value: &[0],
        output: Output::CastTess {
            layout: Output::default_layout(true, [1, 2, 2, 3], Channels::Compact),
        },
    })
}

/// The plan of [`GOLDEN_GRAY_QUANTTESS`].
fn gray_quanttess() -> DevicePlan {
    device(&Request {
        frame: Frame::packed(Format::GRAY8, 3, 4),
        normalize: Normalize {
            divisor: 1.0,
            mean: &[0.0],
            std: &[1.0],
        },
        bgr: false,
        border: Border::default(),
        pad_value: &[0],
        output: Output::QuantTess {
            layout: MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 3, 2, 1],
                Channels::PadTo16,
            ),
            params: Params::new(1.0).with_rounding(Rounding::TowardZero),
        },
    })
}

/// An RGB8 1×2 frame to FP32 `[1, 2, 3]` (strides 0, 12, 4 on the wire; 24 bytes), bound
/// at input 0x1000 (6 bytes) and output 0x2000: by the encoder, which the goldens check.
fn rgb_f32_bound() -> [u8; SIZE] {
    let plan = device(&Request {
        frame: Frame::packed(Format::RGB8, 1, 2),
        normalize: Normalize::DEFAULT,
        bgr: false,
        border: Border::default(),
        pad_value: &[0],
        output: Output::F32 { strides: None },
    });
    let packet = encode_relocatable(&plan);
    *bind(&plan, &packet, r(0x1000, 6), r(0x2000, 24))
        .unwrap()
        .as_bytes()
}

/// Applies `f` to a copy of `bytes` and runs the device's decoder on the result.
fn corrupt(
    bytes: &[u8; SIZE],
    f: impl FnOnce(&mut PreprocDescriptorV1),
) -> Result<PreprocRepr, DecodeError> {
    let mut copy = *bytes;
    f(PreprocDescriptorV1::mut_from_bytes(&mut copy).unwrap());
    decode(&copy)
}

/// Applies `f` to a copy of a relocatable golden and runs the rules (both slots may stay
/// zero).
fn corrupt_relocatable(
    bytes: &[u8; SIZE],
    f: impl FnOnce(&mut PreprocDescriptorV1),
) -> Result<PreprocRepr, DecodeError> {
    let mut copy = *bytes;
    f(PreprocDescriptorV1::mut_from_bytes(&mut copy).unwrap());
    crate::wire::preproc::PreprocRepr::parse_bytes(&copy)
}

impl Fixture for Preproc {
    fn plan() -> DevicePlan {
        nv12_i8()
    }

    fn other() -> DevicePlan {
        rgbx_casttess()
    }

    const INPUT: DeviceRegion = DeviceRegion::new(0x1000, 36);
    const OUTPUT: DeviceRegion = DeviceRegion::new(0x2000, 120);
    const INPUT_ALIGN: u64 = 1;
    const OUTPUT_GRANULE: u32 = 1;
    const FLAG_BITS: u32 = 0b11;
    const ROW: (u8, &'static str, usize) = (0x34, "Preproc v1", 368);

    fn goldens() -> Vec<Golden<Preproc>> {
        std::vec![
            (
                nv12_i8(),
                Some((r(0x1000, 36), r(0x2000, 120))),
                &GOLDEN_NV12_I8
            ),
            (rgbx_casttess(), None, &GOLDEN_RGBX_CASTTESS),
            (gray_quanttess(), None, &GOLDEN_GRAY_QUANTTESS),
        ]
    }

    fn matrix_golden() -> &'static [u8] {
        &GOLDEN_NV12_I8
    }

    // The flag word's bit 0 (`bgr`), the address slots, the pad values, the divisor, mean
    // and std, the multiplier, the zero point and the rounding code.
    const FREE_BYTES: &'static [Range<usize>] = &[16..17, 24..40, 320..323, 324..361];

    #[allow(clippy::too_many_lines)]
    fn tail_cases() -> Cases<Preproc> {
        use DecodeCode as C;
        let g = &GOLDEN_NV12_I8;
        let c = |f: &dyn Fn(&mut PreprocDescriptorV1)| corrupt(g, f);
        let gray =
            |f: &dyn Fn(&mut PreprocDescriptorV1)| corrupt_relocatable(&GOLDEN_GRAY_QUANTTESS, f);
        let rgbx =
            |f: &dyn Fn(&mut PreprocDescriptorV1)| corrupt_relocatable(&GOLDEN_RGBX_CASTTESS, f);
        let f32 = rgb_f32_bound();
        let m = |bits: u32| corrupt(g, move |d| d.multiplier = U32::new(bits));
        std::vec![
            // Header.
            (C::PreprocRank, c(&|d| d.prefix.rank = U32::new(2))),
            (C::PreprocRank, c(&|d| d.prefix.rank = U32::new(5))),
            (C::Reserved364, c(&|d| d.reserved_364 = U32::new(1))),
            (C::PixelFormat, c(&|d| d.pixel_format = U32::new(0))),
            (C::PixelFormat, c(&|d| d.pixel_format = U32::new(8))),
            (C::OutputKind, c(&|d| d.output_kind = U32::new(0))),
            (C::OutputKind, c(&|d| d.output_kind = U32::new(5))),
            // FP32 and CastTess are not kinds of an INT8 output.
            (C::OutputKind, c(&|d| d.output_kind = U32::new(1))),
            (C::OutputKind, c(&|d| d.output_kind = U32::new(4))),
            (C::DType, c(&|d| d.prefix.dtype = U32::new(4))),
            // Parameters.
            (C::TileAlign, gray(&|d| d.tile_align = U32::new(0))),
            (C::TileAlign, gray(&|d| d.tile_align = U32::new(1))),
            (C::AxisOutOfRange, gray(&|d| d.axes[1] = 3)),
            (C::AxisRepeated, gray(&|d| d.axes[2] = 0)),
            (C::AbsentTile, gray(&|d| d.tile[0] = U32::new(2))),
            (
                C::AbsentTileCount,
                gray(&|d| d.tile_counts[0] = U32::new(2))
            ),
            (C::TileExtent, gray(&|d| d.tile[1] = U32::new(4))),
            (C::TileCount, gray(&|d| d.tile_counts[2] = U32::new(1))),
            (
                C::BytesPerOuter,
                gray(&|d| d.bytes_per_outer = U64::new(96))
            ),
            (C::UnusedTiledFields, c(&|d| d.tile_align = U32::new(16))),
            (C::UnusedTiledFields, c(&|d| d.axes[0] = -1)),
            (
                C::UnusedTiledFields,
                c(&|d| d.bytes_per_outer = U64::new(1))
            ),
            (C::UnusedTiledFields, c(&|d| d.prefix.flags = U32::new(3))),
            (C::MultiplierNotFinite, m(0x7f80_0000)),
            (C::MultiplierNotFinite, m(0x7fc0_0000)),
            (C::MultiplierNotPositive, m(0)),
            (C::MultiplierNotPositive, m(0xbf80_0000)),
            (C::ZeroPoint, c(&|d| d.zero_point = I32::new(128))),
            (C::ZeroPoint, c(&|d| d.zero_point = I32::new(-129))),
            (C::Rounding, c(&|d| d.rounding = U32::new(4))),
            (
                C::UnusedQuantParams,
                rgbx(&|d| d.multiplier = U32::new(0x3f80_0000))
            ),
            (C::UnusedQuantParams, rgbx(&|d| d.zero_point = I32::new(-1))),
            (C::UnusedQuantParams, rgbx(&|d| d.rounding = U32::new(1))),
            (
                C::UnusedChannel,
                gray(&|d| d.mean[1] = U32::new(0x3f80_0000))
            ),
            (
                C::UnusedChannel,
                gray(&|d| d.std[2] = U32::new(0x3f80_0000))
            ),
            (C::UnusedChannel, gray(&|d| d.pad_value[1] = 1)),
            (C::UnusedChannel, c(&|d| d.pad_value[3] = 1)),
            // A channel order for one channel.
            (C::UnusedChannel, gray(&|d| d.prefix.flags = U32::new(3))),
            (C::UnusedPlane, c(&|d| d.plane_offsets[2] = U64::new(64))),
            (C::UnusedPlane, c(&|d| d.row_strides[2] = U64::new(3))),
            (C::UnusedPlane, gray(&|d| d.row_strides[1] = U64::new(4))),
            (C::UnusedFrameStride, c(&|d| d.frame_stride = U64::new(36))),
            (
                C::TiledOutputStride,
                gray(&|d| d.prefix.input_strides[0] = U64::new(4))
            ),
            (
                C::OutputSingletonStride,
                corrupt(&f32, |d| d.prefix.input_strides[0] = U64::new(24))
            ),
            // The frame and its border.
            (C::OutputExtents, c(&|d| d.border[0] = U64::new(2))),
            (C::OutputExtents, c(&|d| d.border[3] = U64::new(1))),
            (C::OutputExtents, c(&|d| d.height = U64::new(6))),
            (
                C::OutputExtents,
                c(&|d| {
                    d.prefix.extents[0] = U64::new(6);
                    d.prefix.elements = U64::new(144);
                })
            ),
            (
                C::OutputExtents,
                gray(&|d| {
                    d.prefix.extents[2] = U64::new(3);
                    d.prefix.elements = U64::new(36);
                })
            ),
            // An odd height with the border that keeps the extents.
            (
                C::OddFrameSize,
                c(&|d| {
                    d.height = U64::new(5);
                    d.border[0] = U64::new(0);
                })
            ),
            (C::RowStride, c(&|d| d.row_strides[0] = U64::new(5))),
            (C::PlaneOverlap, c(&|d| d.plane_offsets[1] = U64::new(20))),
            (C::FrameStride, rgbx(&|d| d.frame_stride = U64::new(27))),
            (
                C::NormalizationNotFinite,
                c(&|d| d.mean[0] = U32::new(0x7fc0_0000))
            ),
            (
                C::NormalizationNotFinite,
                c(&|d| d.std[2] = U32::new(0xff80_0000))
            ),
            (
                C::NormalizationNotFinite,
                c(&|d| d.divisor = U32::new(0x7f80_0000))
            ),
            (C::DivisorNotPositive, c(&|d| d.divisor = U32::new(0))),
            (
                C::DivisorNotPositive,
                c(&|d| d.divisor = U32::new(0x8000_0000))
            ),
            (
                C::DivisorNotPositive,
                c(&|d| d.divisor = U32::new(0xc37f_0000))
            ),
            (C::StdZero, c(&|d| d.std[1] = U32::new(0))),
            (C::StdZero, c(&|d| d.std[0] = U32::new(0x8000_0000))),
            (
                C::InputSpanOverflow,
                c(&|d| d.plane_offsets[1] = U64::new(u64::MAX - 4))
            ),
            // The output port.
            (
                C::OutputZeroStride,
                c(&|d| d.prefix.input_strides[1] = U64::new(0))
            ),
            (
                C::OutputOverlap,
                c(&|d| d.prefix.input_strides[0] = U64::new(8))
            ),
            (
                C::OutputSpanOverflow,
                c(&|d| d.prefix.input_strides[0] = U64::new(u64::MAX))
            ),
            (
                C::OutputStrideNotMultiple,
                corrupt(&f32, |d| d.prefix.input_strides[1] = U64::new(13))
            ),
            (
                C::OutputSpan,
                gray(&|d| d.prefix.output_span = U64::new(176))
            ),
            (C::InputSpan, rgbx(&|d| d.prefix.input_span = U64::new(40))),
            // A tiled output binds at 16 bytes.
            (
                C::OutputMisaligned,
                gray(&|d| {
                    d.prefix.input_address = U64::new(0x1000);
                    d.prefix.output_address = U64::new(0x2008);
                })
            ),
            (
                C::PortsOverlap,
                c(&|d| d.prefix.output_address = U64::new(0x1023))
            ),
        ]
    }
}

mod preproc_suite {
    use super::*;
    codec_suite!(Preproc);
}

#[test]
fn the_decoded_plan_is_the_host_plan() {
    for (plan, golden) in [
        (nv12_i8(), &GOLDEN_NV12_I8),
        (rgbx_casttess(), &GOLDEN_RGBX_CASTTESS),
        (gray_quanttess(), &GOLDEN_GRAY_QUANTTESS),
    ] {
        let repr = crate::wire::preproc::PreprocRepr::parse_bytes(golden).unwrap();
        assert_eq!(&repr.plan, plan.plan());
    }
    // Through the entry table, by magic.
    assert_eq!(crate::ev74::entry_of(&GOLDEN_NV12_I8).unwrap().route, 0x34);
    assert_eq!(
        crate::ev74::verdict(&GOLDEN_NV12_I8),
        crate::ev74::Verdict::Bound
    );
}

#[test]
fn a_frame_binds_at_any_byte_and_a_tiled_output_at_16() {
    let plan = nv12_i8();
    let enc = encode_relocatable(&plan);
    let bound = bind(&plan, &enc, r(0x1003, 36), r(0x2001, 120)).unwrap();
    let call = decode(bound.as_bytes()).unwrap();
    assert_eq!(
        (call.prefix.input_address, call.prefix.output_address),
        (0x1003, 0x2001)
    );
    let plan = gray_quanttess();
    let enc = encode_relocatable(&plan);
    assert_eq!(
        bind(&plan, &enc, r(0x1001, 12), r(0x2008, 192)),
        Err(BindError::Misaligned {
            port: Port::Output,
            address: 0x2008,
            align: 16
        })
    );
    assert!(bind(&plan, &enc, r(0x1001, 12), r(0x2010, 192)).is_ok());
}

#[test]
fn an_empty_frame_is_a_valid_no_op_packet() {
    let plan = device(&Request {
        frame: Frame::packed(Format::I420, 0, 4),
        normalize: Normalize::DEFAULT,
        bgr: false,
        border: Border::default(),
        pad_value: &[0],
        output: Output::F32 { strides: None },
    });
    assert!(plan.is_empty());
    let packet = encode_relocatable(&plan);
    let repr = crate::wire::preproc::PreprocRepr::parse_bytes(packet.as_bytes()).unwrap();
    assert_eq!((repr.prefix.elements, repr.prefix.input_span), (0, 0));
    // No addresses needed for a no-op.
    assert!(decode(packet.as_bytes()).is_ok());
}

#[test]
fn an_output_of_border_only_reads_no_frame_byte() {
    // An NV12 frame of height 0 with a one-row border: [1, 6, 3] FP32 of the pad value,
    // 72 bytes; the frame's span is 0, so its (still required) address overlaps nothing.
    let plan = device(&Request {
        frame: Frame::packed(Format::NV12, 0, 4),
        normalize: Normalize::DEFAULT,
        bgr: false,
        border: Border {
            top: 1,
            bottom: 0,
            left: 1,
            right: 1,
        },
        pad_value: &[7],
        output: Output::F32 { strides: None },
    });
    assert!(!plan.is_empty());
    assert_eq!((plan.input_span(), plan.output_span()), (0, 72));
    let enc = encode_relocatable(&plan);
    for input in [0x2000, 0x2001, 0x2010, 0x2047, 0x2048] {
        let bound = bind(&plan, &enc, r(input, 0), r(0x2000, 72)).unwrap();
        assert!(decode(bound.as_bytes()).is_ok(), "{input:#x}");
    }
    assert_eq!(
        bind(&plan, &enc, r(0, 0), r(0x2000, 72)),
        Err(BindError::Unbound { port: Port::Input })
    );
}
