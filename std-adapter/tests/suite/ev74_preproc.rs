//! The EV74 Preproc entry against the A65 (SPEC §8, §13): byte for byte on random frames of
//! every format (odd strides, plane gaps, batches, borders, per-channel parameters) to every
//! output (random strides, tiled layouts with every role order and partial tiles) with 1 to
//! 4 workers over dirty output buffers whose gaps must stay untouched; the hand-computed
//! DMA commands and per-byte reads of small frames; local memory; the speed-up of 4 workers
//! on a 1080p frame.
//!
//! The A65 is itself checked against an independent restatement of §13 and the existing ops
//! (`preproc.rs`), so equality here is equality with the contract.

use simak::a65;
use simak::ev74::{SimOptions, SimRun, run_sim_with};
use simak::layout::{Channels, MlaTiled};
use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output, Plan, Request};
use simak::ops::quant::Params;
use simak_tests::bytes::Aligned;
use simak_tests::preproc::random_frame;
use simak_tests::rng::Rng;

use crate::preproc::{random_params, random_strides};
use crate::tess_common::random_layout;

/// A marker for untouched output bytes.
const MARK: u8 = 0xee;

/// Runs `plan` on the A65 and on the simulated EV74 with `workers` over the same dirty
/// output, checks the bytes are equal, and returns the simulated run.
fn check(what: &str, plan: &Plan, input: &[u8], workers: usize) -> SimRun {
    let span = plan.output_span() as usize;
    let mut host = Aligned::new(span, MARK);
    let mut device = Aligned::new(span, MARK);
    a65::execute(&a65::preproc::prepare(plan), input, host.as_mut_slice())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut opts = SimOptions::new(workers);
    opts.track_reads = true;
    let run = run_sim_with(plan, input, device.as_mut_slice(), &opts)
        .unwrap_or_else(|e| panic!("{what} workers {workers}: {e}\n{plan:?}"));
    if let Some(k) = (0..span).find(|&k| host.as_slice()[k] != device.as_slice()[k]) {
        panic!(
            "{what} workers {workers}: byte {k} of {span} is {:#04x} on the EV74, {:#04x} on the A65\n{plan:?}",
            device.as_slice()[k],
            host.as_slice()[k]
        );
    }
    run
}

/// Random frames of every format to every output, 1 to 4 workers.
#[test]
fn random_frames_match_the_a65() {
    let mut rng = Rng::new(0x29_0029);
    let cases = if simak_tests::sweeps::full() { 168 } else { 56 };
    for case in 0..cases {
        let format = Format::ALL[case % Format::ALL.len()];
        let even = format.is_yuv();
        let dim = |rng: &mut Rng, max: u64| {
            let v = 1 + rng.below(max);
            if even { v.next_multiple_of(2) } else { v }
        };
        let (h, w) = (dim(&mut rng, 9), dim(&mut rng, 21));
        let batch = *rng.pick(&[None, Some(1), Some(2), Some(3)]);
        let (frame, bytes) = random_frame(&mut rng, format, h, w, batch);
        let c = format.channels();
        let per = |rng: &mut Rng, vals: &[f32]| -> Vec<f32> {
            if rng.chance(1, 2) {
                vec![*rng.pick(vals)]
            } else {
                (0..c).map(|_| *rng.pick(vals)).collect()
            }
        };
        let border = if rng.chance(1, 2) {
            Border::default()
        } else {
            Border {
                top: rng.below(3),
                bottom: rng.below(3),
                left: rng.below(4),
                right: rng.below(4),
            }
        };
        let mean = per(&mut rng, &[0.0, 0.5, 0.485, 123.675, -1.0]);
        let std = per(&mut rng, &[1.0, 0.229, -0.5, 58.395]);
        let pad: Vec<u8> = if rng.chance(1, 2) {
            vec![rng.next_u32() as u8]
        } else {
            (0..c).map(|_| rng.next_u32() as u8).collect()
        };
        let divisor = *rng.pick(&[255.0, 1.0, 127.5, 58.395]);
        let bgr = rng.chance(1, 2);
        let n = batch.map(|b| vec![b]).unwrap_or_default();
        let extents: Vec<u64> = n
            .into_iter()
            .chain([
                border.top + h + border.bottom,
                border.left + w + border.right,
                c as u64,
            ])
            .collect();
        let (axes, tile, channels) = random_layout(&mut rng, &extents);
        let default_roles = Output::default_layout(batch.is_some(), tile, channels).axes;
        let layout = MlaTiled::new(
            if rng.chance(1, 2) {
                default_roles
            } else {
                axes
            },
            tile,
            channels,
        );
        let layout = if layout.admit(&extents, 1).is_ok() {
            layout
        } else {
            MlaTiled::new(axes, tile, channels)
        };
        let strides_f32 = rng
            .chance(2, 3)
            .then(|| random_strides(&mut rng, &extents, 4));
        let strides_i8 = rng
            .chance(2, 3)
            .then(|| random_strides(&mut rng, &extents, 1));
        let output = match case / Format::ALL.len() % 4 {
            0 => Output::F32 {
                strides: strides_f32.as_deref(),
            },
            1 => Output::I8 {
                strides: strides_i8.as_deref(),
                params: random_params(&mut rng),
            },
            2 => Output::QuantTess {
                layout,
                params: random_params(&mut rng),
            },
            _ => Output::CastTess { layout },
        };
        let plan = preproc::check_inference(&Request {
            frame,
            normalize: Normalize {
                divisor,
                mean: &mean,
                std: &std,
            },
            bgr,
            border,
            pad_value: &pad,
            output,
        })
        .unwrap_or_else(|e| panic!("case {case}: {e}"));
        for workers in 1..=4 {
            check(&format!("case {case} {format}"), &plan, &bytes, workers);
        }
    }
}

fn plan_of(frame: Frame, output: Output<'_>) -> Plan {
    preproc::check_inference(&Request {
        frame,
        normalize: Normalize::DEFAULT,
        bgr: false,
        border: Border::default(),
        pad_value: &[0],
        output,
    })
    .unwrap()
}

fn frame_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.next_u32() as u8).collect()
}

/// Hand-computed data movement of small frames (the module doc of `simak_ev74_fw::preproc`).
#[test]
fn data_movement_is_as_planned() {
    // RGB8 4×6 (rows of 18 bytes) to FP32 [4, 6, 3] contiguous: one task a row (6 pixels
    // fit a slot), one 18-byte DMA in and one 72-byte DMA out each; every frame byte read
    // once.
    let plan = plan_of(
        Frame::packed(Format::RGB8, 4, 6),
        Output::F32 { strides: None },
    );
    let input = frame_bytes(72, 1);
    for workers in 1..=4 {
        let run = check("rgb f32", &plan, &input, workers);
        let report = run.report.unwrap();
        assert_eq!(report.units, 4);
        assert_eq!((report.tess.source_dma, report.tess.output_dma), (4, 4));
        assert_eq!(run.cost.dma_commands, 8);
        assert!(run.input_read_counts.iter().all(|&c| c == 1), "{workers}");
        // Per worker, its balanced range of the 4 rows (worker 0 first): 18 bytes read,
        // 72 written and 2 DMA commands a row.
        let rows: &[u64] = match workers {
            1 => &[4],
            2 => &[2, 2],
            3 => &[2, 1, 1],
            _ => &[1, 1, 1, 1],
        };
        for (w, &t) in run.cost.workers.iter().zip(rows) {
            assert_eq!(
                (w.bytes_read, w.bytes_written, w.dma_commands),
                (18 * t, 72 * t, 2 * t),
                "{workers} workers"
            );
        }
    }

    // NV12 4×6 (Y 24 bytes, UV 12) to INT8 [4, 6, 3]: each row reads its 6 luma bytes (under
    // 16 bytes, no rectangle: direct loads) and its 6-byte chroma row (direct too): luma
    // bytes once, chroma bytes twice (two output rows share a chroma row); one 18-byte DMA
    // out per row.
    let plan = plan_of(
        Frame::packed(Format::NV12, 4, 6),
        Output::I8 {
            strides: None,
            params: Params::new(20.0),
        },
    );
    let input = frame_bytes(36, 2);
    let run = check("nv12 i8", &plan, &input, 2);
    let report = run.report.unwrap();
    assert_eq!(
        (report.tess.source_dma, report.tess.source_direct_rows),
        (0, 8)
    );
    assert_eq!(report.tess.output_dma, 4);
    assert!(run.input_read_counts[..24].iter().all(|&c| c == 1));
    assert!(run.input_read_counts[24..].iter().all(|&c| c == 2));

    // RGB8 8×16 to CastTess [8, 16, 3], tiles (1, 4, 8, 3) Compact: 4 tiles of 4·8·3·2 =
    // 192 bytes, one chunk each; each tile's window is 4 rows of 24 bytes (one 2D DMA);
    // every frame byte is read by exactly the one tile that needs it; every output byte
    // written once.
    let layout = Output::default_layout(false, [1, 4, 8, 3], Channels::Compact);
    let plan = plan_of(
        Frame::packed(Format::RGB8, 8, 16),
        Output::CastTess { layout },
    );
    assert_eq!(plan.output_span(), 768);
    let input = frame_bytes(8 * 16 * 3, 3);
    for workers in 1..=4 {
        let run = check("rgb casttess", &plan, &input, workers);
        let report = run.report.unwrap();
        assert_eq!(report.units, 4);
        assert_eq!((report.tess.source_dma, report.tess.output_dma), (4, 4));
        assert!(run.input_read_counts.iter().all(|&c| c == 1));
        assert!(run.output_write_counts.iter().all(|&c| c == 1));
        assert_eq!(run.cost.bytes_written, 768);
    }
}

/// A worker's local memory: the entry's two slots and tables fit the 48 KiB budget, and a
/// worker with less is refused before anything is written.
#[test]
fn local_memory_is_bounded() {
    const { assert!(simak::ev74::firmware::preproc::LOCAL_BYTES <= 48 * 1024) };
    let plan = plan_of(
        Frame::packed(Format::GRAY8, 2, 2),
        Output::F32 { strides: None },
    );
    let mut opts = SimOptions::new(1);
    opts.local_bytes = simak::ev74::firmware::preproc::LOCAL_BYTES - 1;
    let mut out = vec![MARK; 16];
    let err = run_sim_with(&plan, &[1, 2, 3, 4], &mut out, &opts).unwrap_err();
    assert!(err.to_string().contains("local memory"), "{err}");
    assert!(out.iter().all(|&b| b == MARK));
}

/// Frames large enough that rows split into several segments and tiles into several
/// chunks (with windows of many rows), at 1 and 4 workers.
#[test]
fn large_frames_split_into_segments_and_chunks() {
    let nchw = |h: u64, w: u64, elem: u64| vec![w * elem, elem, h * w * elem];
    let cases: Vec<(&str, Plan)> = vec![
        (
            "rgb casttess pad16 (1,60,80,3)",
            plan_of(
                Frame::packed(Format::RGB8, 120, 1000),
                Output::CastTess {
                    layout: Output::default_layout(false, [1, 60, 80, 3], Channels::PadTo16),
                },
            ),
        ),
        (
            "nv12 f32 2000 wide",
            plan_of(
                Frame::packed(Format::NV12, 64, 2000),
                Output::F32 { strides: None },
            ),
        ),
        (
            "i420 batch quanttess (1,8,256,3)",
            plan_of(
                Frame::packed(Format::I420, 32, 600).with_batch(2),
                Output::QuantTess {
                    layout: Output::default_layout(true, [1, 8, 256, 3], Channels::Compact),
                    params: Params::new(100.0).with_zero_point(-7),
                },
            ),
        ),
        (
            "bgrx i8 nchw",
            preproc::check_inference(&Request {
                frame: Frame::packed(Format::BGRX8, 20, 1500),
                normalize: Normalize::DEFAULT,
                bgr: true,
                border: Border {
                    top: 1,
                    bottom: 2,
                    left: 3,
                    right: 4,
                },
                pad_value: &[1, 2, 3],
                output: Output::I8 {
                    strides: Some(&nchw(23, 1507, 1)),
                    params: Params::new(50.0),
                },
            })
            .unwrap(),
        ),
        (
            "gray quanttess, H role x and W role y",
            plan_of(
                Frame::packed(Format::GRAY8, 100, 90),
                Output::QuantTess {
                    layout: MlaTiled::new(
                        [None, Some(1), Some(0), Some(2)],
                        [1, 40, 30, 1],
                        Channels::PadTo16,
                    ),
                    params: Params::new(0.5),
                },
            ),
        ),
    ];
    for (name, plan) in &cases {
        let input = frame_bytes(plan.input_span() as usize, 7);
        for workers in [1, 4] {
            let run = check(name, plan, &input, workers);
            assert!(run.report.unwrap().units > 4, "{name}");
        }
    }
}

/// The benchmark workloads of the host half (SPEC §13; `simak bench preproc`): a 1080×1920
/// RGB8 or NV12 frame to INT8 `[1080, 1920, 3]` strided, QuantTess and CastTess in tiles of
/// (1, 16, 64, 3). At 1 and 4 workers: simulated cycles, DMA commands, and the cost
/// model's bound (the slowest worker's larger of compute and DMA-engine cycles, plus the
/// dispatch) over the simulated cycles. Four workers take at most a third of one's cycles
/// and the kernel keeps within 1.25× of the bound (ratio ≥ 0.8).
#[test]
fn benchmark_workloads_against_the_cost_model() {
    let layout = Output::default_layout(false, [1, 16, 64, 3], Channels::Compact);
    let q = Params::new(127.0);
    let i8 = Output::I8 {
        strides: None,
        params: q,
    };
    let workloads = [
        (Format::RGB8, "i8", i8),
        (
            Format::RGB8,
            "quanttess",
            Output::QuantTess { layout, params: q },
        ),
        (Format::RGB8, "casttess", Output::CastTess { layout }),
        (Format::NV12, "i8", i8),
        (
            Format::NV12,
            "quanttess",
            Output::QuantTess { layout, params: q },
        ),
        (Format::NV12, "casttess", Output::CastTess { layout }),
    ];
    // Two of them outside the `test` step (simak_tests::sweeps: qemu, scalar-only).
    for (format, to, output) in simak_tests::sweeps::pick(&workloads, 5) {
        let plan = plan_of(Frame::packed(format, 1080, 1920), output);
        let input = frame_bytes(plan.input_span() as usize, 5);
        let mut by_workers = Vec::new();
        for workers in [1, 4] {
            let mut opts = SimOptions::new(workers);
            opts.track_writes = false;
            let (run, _) =
                simak::ev74::run_sim_to_vec(&plan, &input, plan.output_span() as usize, &opts)
                    .unwrap();
            let m = &opts.cost;
            let slowest = run
                .cost
                .workers
                .iter()
                .map(|w| {
                    let dma = (w.bytes_read + w.bytes_written).div_ceil(m.dma_bytes_per_cycle);
                    w.compute_cycles.max(dma)
                })
                .max()
                .unwrap();
            let bound = run.cost.dispatch_cycles + slowest;
            let ratio = bound as f64 / run.cost.simulated_cycles as f64;
            println!(
                "{format} -> {to}, {workers} worker(s): {} cycles, {} DMA commands, bound {bound}, ratio {ratio:.2}",
                run.cost.simulated_cycles, run.cost.dma_commands
            );
            assert!(ratio >= 0.8, "{format} {to} {workers}: ratio {ratio:.2}");
            by_workers.push(run.cost.simulated_cycles);
        }
        assert!(
            by_workers[1] * 3 <= by_workers[0],
            "{format} {to}: {by_workers:?}"
        );
    }
}

/// Through the Runtime (SPEC §9): an NV12 frame with a border to CastTess, submitted on the
/// simulated transport, gives the A65's bytes and leaves the rest of the output buffer
/// alone; a firmware that does not advertise Preproc v1 fails closed (never an A65
/// fallback).
#[test]
fn the_runtime_runs_a_frame_and_fails_closed_without_the_entry() {
    use crate::support::SubmitEncoded;
    use simak::ev74::preproc as codec;
    use simak::ev74::runtime::{Executor, ExecutorOptions, RuntimeError, SimConfig, SimTransport};
    use simak_ev74_fw::Capabilities;
    use std::sync::Arc;
    use std::time::Duration;

    let plan = preproc::check_inference(&Request {
        frame: Frame::packed(Format::NV12, 24, 40),
        normalize: Normalize {
            divisor: 255.0,
            mean: &[0.485, 0.456, 0.406],
            std: &[0.229, 0.224, 0.225],
        },
        bgr: false,
        border: Border {
            top: 4,
            bottom: 4,
            left: 0,
            right: 0,
        },
        pad_value: &[114],
        output: Output::CastTess {
            layout: Output::default_layout(false, [1, 8, 16, 3], Channels::PadTo16),
        },
    })
    .unwrap();
    let frame = frame_bytes(plan.input_span() as usize, 9);
    let span = plan.output_span() as usize;
    let mut want = Aligned::new(span, MARK);
    a65::execute(&a65::preproc::prepare(&plan), &frame, want.as_mut_slice()).unwrap();
    let device = codec::check_inference(&plan).unwrap();
    let packet = codec::encode_relocatable(&device);
    let options = ExecutorOptions {
        probe_casttess: false,
    };
    let executor =
        Executor::connect_with(Arc::new(SimTransport::new(SimConfig::new(4))), options).unwrap();
    let input = executor.allocate(frame.len() as u64).unwrap();
    let output = executor.allocate(span as u64 + 16).unwrap();
    input.write(0, &frame).unwrap();
    output.write(0, &vec![MARK; span + 16]).unwrap();
    let report = executor
        .run_encoded(&device, &packet, &input, &output, Duration::from_secs(30))
        .unwrap()
        .unwrap();
    assert_eq!(report.launched, 4);
    let mut got = vec![0u8; span + 16];
    output.read(0, &mut got).unwrap();
    assert!(
        got[..span] == *want.as_slice(),
        "the Runtime's bytes differ from the A65's"
    );
    assert!(got[span..].iter().all(|&b| b == MARK));

    let mut config = SimConfig::new(2);
    config.advertised = Capabilities::all().difference(Capabilities::PREPROC_V1);
    let without = Executor::connect_with(Arc::new(SimTransport::new(config)), options).unwrap();
    let input = without.allocate(frame.len() as u64).unwrap();
    let output = without.allocate(span as u64).unwrap();
    let err = without
        .submit_encoded(&device, &packet, &input, &output)
        .unwrap_err();
    assert_eq!(
        err,
        RuntimeError::MissingCapability {
            entry: "simaai_kernels_ev74_preproc_v1",
            version: 1
        }
    );
}
