//! EV74 CastTess on the simulator: exhaustive 16-bit conversions through the firmware
//! entry, DMA accounting on image-like tensors, and device-side rejection with zero bytes
//! written (SPEC §4, §7, §8).

use crate::ev74_casttess::predict_staging;
use crate::support::{PATTERN, Staged, put, rejected, stage};
use crate::tess_common;
use simak::ops::casttess::TiledTensorSpec;

use simak::ev74::CastTess;
use simak::ev74::casttess::{self, DecodeCode, SimOptions, run_sim, run_sim_with};
use simak::ev74::sim::GUARD_BYTES;
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::{Plan, Request, check_inference};
use simak::{DType, TensorSpec};
use simak_core::wire::casttess::field;
use simak_ev74_fw::{Capabilities, Command, Firmware, FwError, Ieee};
use simak_tests::rng::Rng;
use tess_common::*;

fn patterns_case(dtype: DType, shape: Vec<u64>, strides: Vec<u64>, layout: MlaTiled) -> Case {
    Case {
        dtype,
        input_len: 1 << 17,
        shape,
        strides,
        axes: layout.axes,
        tile: layout.tile,
        channels: layout.channels,
    }
}

/// Every FP16 and BF16 bit pattern once, in several layouts (channel-last bands,
/// padded channels on staged complete-pixel bands, planar channels gathered per channel
/// row, single-channel rows), with
/// 1 and 4 workers, against the oracle of SPEC §4 (`half` for FP16, identity for BF16).
#[test]
fn every_16_bit_pattern_through_the_firmware() {
    let input: Vec<u8> = (0..=0xffffu16).flat_map(|b| b.to_le_bytes()).collect();
    let layouts = [
        // [W=4096, C=16] channel-last, tiles of 64 pixels.
        (
            vec![4096u64, 16],
            vec![32u64, 2],
            MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 64, 16],
                Channels::Compact,
            ),
        ),
        // [H=64, W=64, C=16], 5 channels per tile padded to 16, boundary tiles everywhere.
        (
            vec![64, 64, 16],
            vec![2048, 32, 2],
            MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 7, 9, 5],
                Channels::PadTo16,
            ),
        ),
        // Planar [C=16, W=4096]: channels strided, pixels contiguous.
        (
            vec![16, 4096],
            vec![8192, 2],
            MlaTiled::new(
                [None, None, Some(1), Some(0)],
                [1, 1, 100, 16],
                Channels::Compact,
            ),
        ),
        // One channel: [65536] as W.
        (
            vec![65536],
            vec![2],
            MlaTiled::new(
                [None, None, Some(0), None],
                [1, 1, 1000, 1],
                Channels::PadTo16,
            ),
        ),
    ];
    let mut runs = 0;
    for dtype in [DType::F16, DType::BF16] {
        for (shape, strides, layout) in &layouts {
            let case = patterns_case(dtype, shape.clone(), strides.clone(), *layout);
            let plan = cast_plan(&case);
            let expected = expected_cast(&case, &input);
            for workers in [1, 4] {
                let mut out = vec![0x5au8; expected.len() + 32];
                let run = run_sim(&plan, &input, &mut out, workers).unwrap();
                assert!(out[..expected.len()] == expected[..], "{dtype} {case:?}");
                assert!(out[expected.len()..].iter().all(|&b| b == 0x5a));
                // Each element once; the 5-channel tiles of 16 channels stage complete
                // pixels (SPEC §8), so there every element once per channel tile.
                let reads = predict_staging(&case).reads;
                assert_eq!(run.input_bytes_read, reads);
                assert!(reads == 1 << 17 || reads == 4 << 17);
                runs += 1;
            }
        }
    }
    // The oracle itself, on literal vectors of the issue (inputs that broke other
    // libraries), through the firmware.
    let f16_in = [
        0xfc01u16, 0x7c01, 0x7d00, 0x7fff, 0xfe00, 0xfdff, 0x0001, 0x8001, 0x03ff,
    ];
    let want = [
        0xffc0u16, 0x7fc0, 0x7fe0, 0x7fff, 0xffc0, 0xffff, 0x3380, 0xb380, 0x3880,
    ];
    assert_eq!(
        convert_through_firmware(DType::F16, &f16_in.map(u32::from)),
        want
    );
    let f32_in = [
        0x7f80_0001u32,
        0xff80_0001,
        0x7f80_ffff,
        0x7fa0_0000,
        0x7fff_ffff,
        0xffff_ffff,
        0xffff_8000,
    ];
    let want = [0x7f80u16, 0xff80, 0x7f81, 0x7fa0, 0x8000, 0x0000, 0x0000];
    assert_eq!(convert_through_firmware(DType::F32, &f32_in), want);
    assert_eq!(runs, 16);
}

/// Converts `bits` as a [W=n] single-channel tensor and reads the BF16 values back.
fn convert_through_firmware(dtype: DType, bits: &[u32]) -> Vec<u16> {
    let n = bits.len();
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([n as u64], dtype),
        output: TiledTensorSpec::new(
            [n as u64],
            DType::BF16,
            MlaTiled::new(
                [None, None, Some(0), None],
                [1, 1, n as u32, 1],
                Channels::Compact,
            ),
        ),
    })
    .unwrap();
    let input = simak_tests::bytes::encode(dtype, bits);
    let mut out = vec![0u8; plan.output().capacity() as usize];
    run_sim(&plan, &input, &mut out, 1).unwrap();
    // One compact channel: each pixel stores its low byte, then its high byte.
    (0..n)
        .map(|i| u16::from_le_bytes([out[2 * i], out[2 * i + 1]]))
        .collect()
}

fn image_plan(dtype: DType, shape: [u64; 3], strides: [u64; 3], layout: MlaTiled) -> Plan {
    check_inference(&Request {
        input: TensorSpec::strided(shape, strides, dtype),
        output: TiledTensorSpec::new(shape, DType::BF16, layout),
    })
    .unwrap()
}

/// DMA accounting on image-like tensors: every logical input byte is read once (the
/// whole span when the input has no gaps), nothing is gathered element by element when
/// rows are long, every output byte is written once, and the figures are reported.
#[test]
fn dma_reads_each_input_byte_once_and_writes_each_output_byte_once() {
    let (h, w) = (120u64, 200u64);
    let hwc = MlaTiled::new(
        [None, Some(0), Some(1), Some(2)],
        [1, 16, 64, 3],
        Channels::Compact,
    );
    let chw = MlaTiled::new(
        [None, Some(1), Some(2), Some(0)],
        [1, 16, 64, 3],
        Channels::PadTo16,
    );
    let cases = [
        (
            "fp32 hwc 120x200x3 tile (1,16,64,3) compact",
            image_plan(DType::F32, [h, w, 3], [w * 12, 12, 4], hwc),
            false,
        ),
        (
            "fp16 chw 3x120x200 tile (1,16,64,3) pad16",
            image_plan(DType::F16, [3, h, w], [h * w * 2, w * 2, 2], chw),
            false,
        ),
        (
            "bf16 hwc 120x200x3 rows padded to 256 pixels",
            image_plan(DType::BF16, [h, w, 3], [256 * 6, 6, 2], hwc),
            true,
        ),
    ];
    let mut rng = Rng::new(0xd3a);
    for (name, plan, gaps) in cases {
        let span = plan.input().span() as usize;
        let input: Vec<u8> = (0..span).map(|_| rng.next_u32() as u8).collect();
        let capacity = plan.output().capacity() as usize;
        let logical = plan.elements() * plan.input().dtype().size_u64();
        let mut reference = vec![0u8; capacity];
        run_sim(&plan, &input, &mut reference, 1).unwrap();
        for workers in 1..=4 {
            let mut out = vec![0xeeu8; capacity + 64];
            let run = run_sim(&plan, &input, &mut out, workers).unwrap();
            assert_eq!(out[..capacity], reference[..], "{name}");
            let report = run.report.unwrap();
            let t = report.tess;
            assert_eq!(run.input_bytes_read, logical, "{name}");
            if !gaps {
                assert_eq!(run.input_bytes_read, span as u64, "{name}");
            } else {
                assert!(run.input_bytes_read < span as u64, "{name}");
            }
            assert_eq!(t.source_direct_rows, 0, "{name}: {t:?}");
            assert_eq!(run.output_bytes_written, capacity as u64);
            assert!(run.output_write_counts[..capacity].iter().all(|&c| c == 1));
            assert!(run.output_write_counts[capacity..].iter().all(|&c| c == 0));
            assert_eq!(run.stats.unfinished, 0);
            assert_eq!(report.launched, workers);
            eprintln!(
                "{name}, {workers} workers: read {} of {} span bytes ({:.3}), wrote {} = capacity {} once; {} tasks, {} classes, {} source + {} output DMA commands",
                run.input_bytes_read,
                span,
                run.input_bytes_read as f64 / span as f64,
                run.output_bytes_written,
                capacity,
                report.units,
                t.classes,
                t.source_dma,
                t.output_dma,
            );
        }
    }
}

type Setup = Staged<CastTess>;

fn setup() -> Setup {
    let plan = check_inference(&Request {
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
    .unwrap();
    let plan = casttess::check_inference(&plan).unwrap();
    stage(&plan, &[0x3c; 350], 384)
}

/// Dispatches `packet` with a command edited by `command`; checks that nothing was
/// written or moved and returns the error.
fn dispatch(packet: &[u8; 216], command: impl FnOnce(&mut Command), fw: Firmware<Ieee>) -> FwError {
    rejected(setup(), packet, command, fw)
}

#[test]
fn the_valid_packet_runs_and_writes_only_the_capacity() {
    let mut s = setup();
    s.device.memory.host_write(s.descriptor, &s.packet).unwrap();
    let report = Firmware::<Ieee>::full()
        .dispatch(&mut s.device, &Command::casttess_v1(s.descriptor))
        .unwrap();
    assert_eq!(report.tess.classes, 8);
    let mut out = [0u8; 384];
    s.device.memory.host_read(s.output, &mut out).unwrap();
    // FP16 0x3c3c = 0x3f878000 as FP32 → BF16 0x3f88 (tie to even): bytes 0x88, 0x3f; padding 0.
    assert!(out[..352].iter().all(|&b| matches!(b, 0x88 | 0x3f | 0)));
    assert!(out[352..].iter().all(|&b| b == PATTERN));
}

#[test]
fn each_corrupted_field_has_its_code_and_writes_nothing() {
    use DecodeCode as C;
    let s = setup();
    let (input, output) = (u64::from(s.input), u64::from(s.output));
    let le16 = |v: u16| v.to_le_bytes().to_vec();
    let le32 = |v: u32| v.to_le_bytes().to_vec();
    let le64 = |v: u64| v.to_le_bytes().to_vec();
    let cases: Vec<(C, usize, Vec<u8>)> = vec![
        (C::Magic, field::MAGIC, b"SKCt".to_vec()),
        (C::Version, field::VERSION, le16(2)),
        (C::ByteLength, field::BYTE_LENGTH, le16(224)),
        (C::DType, field::DTYPE, le32(2)),
        (C::DType, field::DTYPE, le32(0)),
        (C::Rank, field::RANK, le32(0)),
        (C::Rank, field::RANK, le32(7)),
        (C::UnusedExtent, field::RANK, le32(3)),
        (C::UnknownFlags, field::FLAGS, le32(1 << 5)),
        (C::Reserved20, field::RESERVED_20, le32(1)),
        (C::Reserved164, field::RESERVED_164, le32(1)),
        (C::Reserved212, field::RESERVED_212, le32(1)),
        (C::TileAlign, field::TILE_ALIGN, le32(8)),
        (C::UnusedExtent, field::EXTENTS + 40, le64(1)),
        (C::UnusedInputStride, field::INPUT_STRIDES + 32, le64(2)),
        (C::AxisOutOfRange, field::AXES, vec![9]),
        (C::AxisRepeated, field::AXES + 3, vec![1]),
        (C::AbsentTile, field::TILE, le32(2)),
        (C::AbsentTileCount, field::TILE_COUNTS, le32(0)),
        (C::TileExtent, field::TILE + 8, le32(5)),
        (C::TileCount, field::TILE_COUNTS + 8, le32(3)),
        (C::ElementCount, field::ELEMENTS, le64(121)),
        (C::InputSingletonStride, field::EXTENTS, le64(1)),
        (
            C::InputStrideNotMultiple,
            field::INPUT_STRIDES + 24,
            le64(3),
        ),
        (C::InputZeroStride, field::INPUT_STRIDES + 16, le64(0)),
        (C::InputOverlap, field::INPUT_STRIDES + 16, le64(8)),
        (C::InputSpan, field::INPUT_SPAN, le64(348)),
        (C::BytesPerOuter, field::BYTES_PER_OUTER, le64(192)),
        (C::OutputSpan, field::OUTPUT_SPAN, le64(384)),
        (C::InputAddress, field::INPUT_ADDRESS, le64(1 << 32)),
        (C::OutputAddress, field::OUTPUT_ADDRESS, le64(1 << 40)),
        (C::InputRange, field::INPUT_ADDRESS, le64(0xffff_ff00)),
        (C::OutputRange, field::OUTPUT_ADDRESS, le64(0xffff_ff00)),
        (C::InputMisaligned, field::INPUT_ADDRESS, le64(input + 1)),
        (C::OutputMisaligned, field::OUTPUT_ADDRESS, le64(output + 8)),
        (C::PortsOverlap, field::OUTPUT_ADDRESS, le64(input + 16)),
        (C::InputUnbound, field::INPUT_ADDRESS, le64(0)),
        (C::OutputUnbound, field::OUTPUT_ADDRESS, le64(0)),
    ];
    let n = cases.len();
    for (want, offset, bytes) in cases {
        let mut p = s.packet;
        put(&mut p, offset, &bytes);
        let err = dispatch(&p, |_| {}, Firmware::full());
        assert_eq!(err.code(), u32::from(want.get()), "{want:?}: {err}");
        assert!(matches!(err, FwError::Decode(_)), "{err:?}");
    }
    // A valid packet pointing at a guard band faults before anything is decoded.
    let err = dispatch(
        &s.packet,
        |c| c.descriptor -= GUARD_BYTES as u32,
        Firmware::full(),
    );
    assert_eq!(err.code(), 0x107);
    eprintln!("{n} corrupted CastTess packets rejected with their codes, zero bytes written");
}

#[test]
fn command_level_rejections_write_nothing() {
    let s = setup();
    let p = s.packet;
    assert_eq!(
        dispatch(&p, |c| c.version = 2, Firmware::full()),
        FwError::Version {
            route: 0x30,
            found: 2
        }
    );
    // The Quant route never reinterprets a CastTess packet.
    assert_eq!(
        dispatch(&p, |c| c.route = 0x2f, Firmware::full()),
        FwError::DescriptorLength { found: 216 }
    );
    assert_eq!(
        dispatch(&p, |c| c.length = 224, Firmware::full()),
        FwError::DescriptorLength { found: 224 }
    );
    // Firmware without the CastTess capability refuses the route.
    assert_eq!(
        dispatch(&p, |_| {}, Firmware::new(Capabilities::QUANT_V1)),
        FwError::NotAdvertised { route: 0x30 }
    );
    assert_eq!(
        dispatch(&p, |_| {}, Firmware::new(Capabilities::QUANT_V1)).code(),
        0x102
    );
}

#[test]
fn empty_plans_are_never_run() {
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([4, 0, 3], DType::F32),
        output: TiledTensorSpec::new(
            [4, 0, 3],
            DType::BF16,
            MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 2, 1, 3],
                Channels::PadTo16,
            ),
        ),
    })
    .unwrap();
    let mut out = [0x11u8; 32];
    let run = run_sim(&plan, &[], &mut out, 4).unwrap();
    assert!(run.report.is_none());
    assert_eq!(out, [0x11; 32]);
    let mut options = SimOptions::new(0);
    options.output_phase = 16;
    // Empty plans are valid whatever the device.
    assert!(run_sim_with(&plan, &[], &mut out, &options).is_ok());
}
