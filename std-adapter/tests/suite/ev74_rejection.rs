//! Device-side rejection on the simulator: each corrupted field gives its exact status code
//! and not one byte of device memory is written (SPEC §7).
//!
//! A valid bound packet for a strided BF16 request is written into simulated device memory
//! next to guard-banded input and output buffers; each case corrupts one field (at its SPEC
//! §7 offset), dispatches, and checks the status code, zero bytes written, no fault, and the
//! output buffer (pre-filled with a pattern) unchanged.

use simak::ev74::Quant;
use simak::ev74::quant::{self, DecodeCode};
use simak::ev74::sim::GUARD_BYTES;
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_core::wire::quant::field;
use simak_ev74_fw::{Capabilities, Command, Firmware, FwError, Ieee};

use crate::support::{PATTERN, Staged, put, rejected, stage};

/// One corruption of a packet.
type Edit = Box<dyn Fn(&mut [u8; 224], &Setup)>;

type Setup = Staged<Quant>;

fn setup() -> Setup {
    // [3, 5] BF16 with padded rows (stride 12 elements), output transposed.
    let plan = check_inference(&Request {
        input: TensorSpec::strided([3, 5], [24, 2], DType::BF16),
        output: TensorSpec::strided([3, 5], [1, 3], DType::I8),
        params: Params::new(0.5)
            .with_zero_point(7)
            .with_rounding(Rounding::TowardPositive),
    })
    .unwrap();
    let plan = quant::check_inference(&plan).unwrap();
    stage(&plan, &[0x3f; 64], 32)
}

/// Dispatches `packet` (with `command` adjustments) and checks that nothing was written.
fn dispatch(packet: &[u8; 224], command: impl FnOnce(&mut Command), fw: Firmware<Ieee>) -> FwError {
    rejected(setup(), packet, command, fw)
}

fn code_after(edit: impl FnOnce(&mut [u8; 224], &Setup)) -> u32 {
    let s = setup();
    let mut p = s.packet;
    edit(&mut p, &s);
    dispatch(&p, |_| {}, Firmware::full()).code()
}

#[test]
fn the_valid_packet_runs() {
    let mut s = setup();
    s.device.memory.host_write(s.descriptor, &s.packet).unwrap();
    let report = Firmware::<Ieee>::full()
        .dispatch(&mut s.device, &Command::quant_v1(s.descriptor))
        .unwrap();
    // One transpose panel: 3 input rows of 5 staged, written as 5 output rows of 3.
    assert_eq!(report.kind, simak_ev74_fw::SpanKind::Transpose);
    assert_eq!(report.units, 1);
    let mut out = [0u8; 32];
    s.device.memory.host_read(s.output, &mut out).unwrap();
    // bf16 0x3f3f ≈ 0.746 · 0.5 → toward-positive 1, + 7.
    assert!(out[..15].iter().all(|&b| b == 8));
    assert!(out[15..].iter().all(|&b| b == PATTERN));
}

#[test]
fn each_corrupted_field_has_its_code_and_writes_nothing() {
    use DecodeCode as C;
    let le32 = |v: u32| v.to_le_bytes();
    let le64 = |v: u64| v.to_le_bytes();
    let cases: Vec<(C, Edit)> = vec![
        (C::Magic, Box::new(|p, _| put(p, field::MAGIC, b"SKQt"))),
        (
            C::Version,
            Box::new(|p, _| put(p, field::VERSION, &2u16.to_le_bytes())),
        ),
        (
            C::ByteLength,
            Box::new(|p, _| put(p, field::BYTE_LENGTH, &225u16.to_le_bytes())),
        ),
        (
            C::DType,
            Box::new(move |p, _| put(p, field::DTYPE, &le32(2))),
        ),
        (
            C::DType,
            Box::new(move |p, _| put(p, field::DTYPE, &le32(0))),
        ),
        (C::Rank, Box::new(move |p, _| put(p, field::RANK, &le32(0)))),
        (C::Rank, Box::new(move |p, _| put(p, field::RANK, &le32(7)))),
        (
            C::UnknownFlags,
            Box::new(move |p, _| put(p, field::FLAGS, &le32(4))),
        ),
        (
            C::UnknownFlags,
            Box::new(move |p, _| put(p, field::FLAGS, &le32(1 << 31))),
        ),
        (
            C::InputContiguousFlag,
            Box::new(move |p, _| put(p, field::FLAGS, &le32(1))),
        ),
        (
            C::OutputContiguousFlag,
            Box::new(move |p, _| put(p, field::FLAGS, &le32(2))),
        ),
        (
            C::Reserved20,
            Box::new(move |p, _| put(p, field::RESERVED_20, &le32(1))),
        ),
        (
            C::Reserved220,
            Box::new(move |p, _| put(p, field::RESERVED_220, &le32(1))),
        ),
        (
            C::UnusedExtent,
            Box::new(move |p, _| put(p, field::EXTENTS + 16, &le64(1))),
        ),
        (
            C::UnusedInputStride,
            Box::new(move |p, _| put(p, field::INPUT_STRIDES + 40, &le64(2))),
        ),
        (
            C::UnusedOutputStride,
            Box::new(move |p, _| put(p, field::OUTPUT_STRIDES + 24, &le64(1))),
        ),
        (
            C::MultiplierNotFinite,
            Box::new(move |p, _| put(p, field::MULTIPLIER, &le32(0x7fc0_0000))),
        ),
        (
            C::MultiplierNotPositive,
            Box::new(move |p, _| put(p, field::MULTIPLIER, &le32(0x8000_0001))),
        ),
        (
            C::ZeroPoint,
            Box::new(move |p, _| put(p, field::ZERO_POINT, &(-129i32).to_le_bytes())),
        ),
        (
            C::Rounding,
            Box::new(move |p, _| put(p, field::ROUNDING, &le32(4))),
        ),
        (
            C::ElementCount,
            Box::new(move |p, _| put(p, field::ELEMENTS, &le64(16))),
        ),
        (
            C::ElementCount,
            Box::new(move |p, _| put(p, field::ELEMENTS, &le64(14))),
        ),
        (
            C::InputStrideNotMultiple,
            Box::new(move |p, _| put(p, field::INPUT_STRIDES, &le64(25))),
        ),
        (
            C::InputZeroStride,
            Box::new(move |p, _| put(p, field::INPUT_STRIDES + 8, &le64(0))),
        ),
        (
            C::OutputZeroStride,
            Box::new(move |p, _| put(p, field::OUTPUT_STRIDES, &le64(0))),
        ),
        // Input span 2 + 2·24 + 4·2 = 58; output 1 + 2 + 4·3 = 15: each ±1.
        (
            C::InputSpan,
            Box::new(move |p, _| put(p, field::INPUT_SPAN, &le64(57))),
        ),
        (
            C::InputSpan,
            Box::new(move |p, _| put(p, field::INPUT_SPAN, &le64(59))),
        ),
        (
            C::OutputSpan,
            Box::new(move |p, _| put(p, field::OUTPUT_SPAN, &le64(14))),
        ),
        (
            C::OutputSpan,
            Box::new(move |p, _| put(p, field::OUTPUT_SPAN, &le64(16))),
        ),
        (
            C::InputOverlap,
            Box::new(move |p, _| {
                // Rows 4 bytes apart overlap rows 10 bytes long.
                put(p, field::INPUT_STRIDES, &le64(4));
                put(p, field::INPUT_SPAN, &le64(2 + 8 + 8));
            }),
        ),
        (
            C::OutputOverlap,
            Box::new(move |p, _| {
                put(p, field::OUTPUT_STRIDES + 8, &le64(1));
                put(p, field::OUTPUT_SPAN, &le64(1 + 2 + 4));
            }),
        ),
        (
            C::InputAddress,
            Box::new(move |p, _| put(p, field::INPUT_ADDRESS, &le64(1 << 32))),
        ),
        (
            C::OutputAddress,
            Box::new(move |p, _| put(p, field::OUTPUT_ADDRESS, &le64(1 << 40))),
        ),
        // Address + span = 2^32 + 1.
        (
            C::InputRange,
            Box::new(move |p, _| put(p, field::INPUT_ADDRESS, &le64((1 << 32) - 57))),
        ),
        (
            C::OutputRange,
            Box::new(move |p, _| put(p, field::OUTPUT_ADDRESS, &le64((1 << 32) - 14))),
        ),
        (
            C::InputMisaligned,
            Box::new(move |p, s| put(p, field::INPUT_ADDRESS, &le64(u64::from(s.input) + 1))),
        ),
        (
            C::PortsOverlap,
            Box::new(move |p, s| put(p, field::OUTPUT_ADDRESS, &le64(u64::from(s.input) + 40))),
        ),
        (
            C::PortsOverlap,
            Box::new(move |p, s| put(p, field::INPUT_ADDRESS, &le64(u64::from(s.output) - 56))),
        ),
        (
            C::InputUnbound,
            Box::new(move |p, _| put(p, field::INPUT_ADDRESS, &le64(0))),
        ),
        (
            C::OutputUnbound,
            Box::new(move |p, _| put(p, field::OUTPUT_ADDRESS, &le64(0))),
        ),
    ];
    let n = cases.len();
    for (k, (expected, edit)) in cases.into_iter().enumerate() {
        assert_eq!(
            code_after(|p, s| edit(p, s)),
            u32::from(expected.get()),
            "case {k}: {expected:?}"
        );
    }
    eprintln!("{n} corrupted packets rejected with their codes, zero bytes written");
}

#[test]
fn every_unknown_flag_bit() {
    for bit in 2..32 {
        assert_eq!(
            code_after(|p, _| {
                let flags = u32::from_le_bytes(p[16..20].try_into().unwrap());
                put(p, field::FLAGS, &(flags | 1 << bit).to_le_bytes());
            }),
            u32::from(DecodeCode::UnknownFlags.get())
        );
    }
}

#[test]
fn command_level_rejections_write_nothing() {
    let s = setup();
    let p = s.packet;
    let fw = Firmware::full;
    assert_eq!(
        dispatch(&p, |c| c.route = 0x35, fw()),
        FwError::UnknownRoute { route: 0x35 }
    );
    // Route 0x34 is Preproc v1, 368 bytes: a 224-byte command is refused by its length.
    assert_eq!(
        dispatch(&p, |c| c.route = 0x34, fw()),
        FwError::DescriptorLength { found: 224 }
    );
    // Route 0x31 is Detess v1, whose descriptor has Quant's size: the Quant packet is
    // judged by Detess's rules and refused by its magic word, never run as Detess.
    assert_eq!(
        dispatch(&p, |c| c.route = 0x31, fw()),
        FwError::Decode(simak::ev74::DecodeError::Magic { found: *b"SKQT" })
    );
    // Route 0x30 is CastTess v1: a Quant packet is never reinterpreted for it.
    assert_eq!(
        dispatch(&p, |c| c.route = 0x30, fw()),
        FwError::DescriptorLength { found: 224 }
    );
    let err = dispatch(
        &p,
        |c| {
            c.route = 0x30;
            c.length = 216;
        },
        fw(),
    );
    assert_eq!(err.code(), 2, "{err:?}");
    assert_eq!(
        dispatch(&p, |c| c.version = 2, fw()),
        FwError::Version {
            route: 0x2f,
            found: 2
        }
    );
    assert_eq!(
        dispatch(&p, |c| c.length = 216, fw()),
        FwError::DescriptorLength { found: 216 }
    );
    assert_eq!(
        dispatch(&p, |_| {}, Firmware::new(Capabilities::empty())),
        FwError::NotAdvertised { route: 0x2f }
    );
    // A descriptor address inside a guard band faults before anything is decoded.
    let err = dispatch(&p, |c| c.descriptor -= GUARD_BYTES as u32, fw());
    assert!(matches!(err, FwError::Fault(_)), "{err:?}");
    assert_eq!(err.code(), 0x107);
}

#[test]
fn a_bound_packet_naming_a_guard_band_faults_without_writing() {
    // The packet is valid, but its output names the guard band after the output buffer:
    // the device faults on the first access. Input is read first, nothing is written.
    let s = setup();
    let mut p = s.packet;
    put(
        &mut p,
        field::OUTPUT_ADDRESS,
        &(u64::from(s.output) + 32 + 4).to_le_bytes(),
    );
    let mut s2 = setup();
    s2.device.memory.host_write(s2.descriptor, &p).unwrap();
    s2.device.memory.reset_stats();
    let err = Firmware::<Ieee>::full()
        .dispatch(&mut s2.device, &Command::quant_v1(s2.descriptor))
        .unwrap_err();
    assert!(matches!(err, FwError::Fault(_)), "{err:?}");
    let stats = s2.device.memory.stats();
    assert_eq!((stats.bytes_written(), stats.faults), (0, 1));
    let mut out = [0u8; 32];
    s2.device.memory.host_read(s2.output, &mut out).unwrap();
    assert!(out.iter().all(|&b| b == PATTERN));
}
