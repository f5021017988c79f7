//! The EV74 Detess-family entries against the A65 (SPEC §8, §12): byte for byte on random
//! heads (every encoding, tile alignment, dtype and conversion; boundary tiles; outer
//! axes; NHWC, NCHW and padded output strides) with 1 to 4 workers over dirty output
//! buffers whose gaps must stay untouched; every input byte of the tiles read once; the
//! hand-computed DMA commands of small layouts; the speed-up of 4 workers.

use simak::DType;
use simak::a65;
use simak::ev74::{SimOptions, SimRun, run_sim_with};
use simak::layout::{Channels, MlaTiled, TileAlign};
use simak::ops::casttess::TiledSpec;
use simak::ops::dequant::Params;
use simak::ops::{detess, detesscast, detessdequant};
use simak::tensor::DynSpec;
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;

/// Which op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Detess,
    Cast,
    Dequant,
}

/// One head: its op, input dtype and layout, logical shape, output dtype and strides.
#[derive(Debug, Clone)]
struct Case {
    op: Op,
    dtype: DType,
    out_dtype: DType,
    shape: Vec<u64>,
    layout: MlaTiled,
    out_strides: Vec<u64>,
    params: Params,
}

/// A marker for untouched output bytes.
const MARK: u8 = 0xee;

/// The output span of `case` in bytes.
fn out_span(case: &Case) -> usize {
    let e = case.out_dtype.size() as u64;
    (case
        .shape
        .iter()
        .zip(&case.out_strides)
        .map(|(&n, &s)| (n - 1) * s)
        .sum::<u64>()
        + e) as usize
}

/// Runs `case` on the A65 and on the simulated EV74 with `workers` over the same dirty
/// output, and returns the simulated run after checking the bytes are equal.
fn check(case: &Case, ofm: &Aligned, workers: usize, options: impl Fn(&mut SimOptions)) -> SimRun {
    let input = TiledSpec {
        extents: &case.shape,
        dtype: case.dtype,
        layout: case.layout,
    };
    let output = DynSpec::strided(&case.shape, &case.out_strides, case.out_dtype);
    let span = out_span(case);
    let mut host = Aligned::new(span, MARK);
    let mut device = Aligned::new(span, MARK);
    let mut opts = SimOptions::new(workers);
    opts.track_reads = true;
    options(&mut opts);
    let run = match case.op {
        Op::Detess => {
            let plan = detess::check_inference_dyn(&detess::DynRequest { input, output }).unwrap();
            a65::detess::execute(
                &a65::detess::prepare(&plan),
                ofm.as_slice(),
                host.as_mut_slice(),
            )
            .unwrap();
            run_sim_with(&plan, ofm.as_slice(), device.as_mut_slice(), &opts)
        }
        Op::Cast => {
            let plan =
                detesscast::check_inference_dyn(&detess::DynRequest { input, output }).unwrap();
            a65::detesscast::execute(
                &a65::detesscast::prepare(&plan),
                ofm.as_slice(),
                host.as_mut_slice(),
            )
            .unwrap();
            run_sim_with(&plan, ofm.as_slice(), device.as_mut_slice(), &opts)
        }
        Op::Dequant => {
            let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
                input,
                output,
                params: case.params,
            })
            .unwrap();
            a65::detessdequant::execute(
                &a65::detessdequant::prepare(&plan),
                ofm.as_slice(),
                host.as_mut_slice(),
            )
            .unwrap();
            run_sim_with(&plan, ofm.as_slice(), device.as_mut_slice(), &opts)
        }
    }
    .unwrap_or_else(|e| panic!("{case:?} workers {workers}: {e}"));
    assert!(
        host.as_slice() == device.as_slice(),
        "{case:?} workers {workers}: the EV74 bytes differ from the A65's"
    );
    run
}

/// Contiguous strides (bytes) of `shape` in axis order `order` (slowest first).
fn strides_in_order(shape: &[u64], order: &[usize], elem: u64, pad: u64) -> Vec<u64> {
    let mut strides = vec![0u64; shape.len()];
    let mut s = elem;
    for &a in order.iter().rev() {
        strides[a] = s;
        s = s * shape[a] + pad * elem;
    }
    strides
}

fn random_case(rng: &mut Rng) -> Case {
    let op = [Op::Detess, Op::Cast, Op::Dequant][rng.below(3) as usize];
    let dtype = match op {
        Op::Detess => [DType::I8, DType::I16, DType::I32, DType::BF16][rng.below(4) as usize],
        Op::Cast => DType::BF16,
        Op::Dequant => [DType::I8, DType::I16, DType::I32][rng.below(3) as usize],
    };
    let out_dtype = match op {
        Op::Detess => dtype,
        Op::Cast => DType::F32,
        Op::Dequant => [DType::F32, DType::F16, DType::BF16][rng.below(3) as usize],
    };
    let batch = rng.below(2) == 1;
    let (h, w, c) = (1 + rng.below(9), 1 + rng.below(13), 1 + rng.below(40));
    let shape: Vec<u64> = if batch {
        vec![1 + rng.below(3), h, w, c]
    } else {
        vec![h, w, c]
    };
    let base = usize::from(batch) as u8;
    let channels =
        [Channels::Compact, Channels::PadTo16, Channels::CBlock16][rng.below(3) as usize];
    let tc = if channels == Channels::Compact || rng.below(2) == 0 {
        if channels == Channels::Compact {
            1 + rng.below(c)
        } else {
            c
        }
    } else {
        (16 * (1 + rng.below(3))).min(c.next_multiple_of(16))
    };
    // The c16 rule: C or a multiple of 16 (a multiple above C means one tile: C).
    let tc = if channels != Channels::Compact && tc > c {
        c
    } else {
        tc
    };
    let align = if rng.below(2) == 0 {
        TileAlign::Bytes16
    } else {
        TileAlign::Bytes1
    };
    let layout = MlaTiled::new(
        [None, Some(base), Some(base + 1), Some(base + 2)],
        [
            1,
            1 + rng.below(h) as u32,
            1 + rng.below(w) as u32,
            tc as u32,
        ],
        channels,
    )
    .with_tile_align(align);
    let elem = out_dtype.size() as u64;
    let rank = shape.len();
    let order: Vec<usize> = match rng.below(3) {
        // NHWC.
        0 => (0..rank).collect(),
        // NCHW: C before H and W.
        1 => {
            let mut o: Vec<usize> = (0..rank).collect();
            let cpos = rank - 1;
            o.remove(cpos);
            o.insert(usize::from(batch), cpos);
            o
        }
        // W slowest: neither C nor W contiguous when C > 1 and W > 1.
        _ => {
            let mut o: Vec<usize> = (0..rank).collect();
            let wpos = rank - 2;
            o.remove(wpos);
            o.insert(0, wpos);
            o
        }
    };
    let pad = rng.below(3);
    Case {
        op,
        dtype,
        out_dtype,
        out_strides: strides_in_order(&shape, &order, elem, pad),
        shape,
        layout,
        params: Params::from_bits(
            [0x3f00_0000, 0x3daa_aaab, 0x0000_0001, 0x7f00_0000][rng.below(4) as usize],
        )
        .with_zero_point(match dtype {
            DType::I8 => rng.below(256) as i32 - 128,
            DType::I16 => rng.below(65536) as i32 - 32768,
            _ => rng.next_u32() as i32,
        }),
    }
}

fn random_ofm(rng: &mut Rng, len: usize) -> Aligned {
    let mut a = Aligned::new(len, 0);
    for b in a.as_mut_slice() {
        *b = rng.next_u32() as u8;
    }
    a
}

fn capacity(case: &Case) -> usize {
    let planes = match case.dtype.size() {
        1 => 1,
        2 => 2,
        _ => 4,
    };
    case.layout.admit(&case.shape, planes).unwrap().capacity() as usize
}

#[test]
fn random_heads_match_the_a65_on_1_to_4_workers() {
    let mut rng = Rng::new(0x2812_0001);
    for _ in 0..60 {
        let case = random_case(&mut rng);
        let ofm = random_ofm(&mut rng, capacity(&case));
        for workers in 1..=4 {
            // Even ring sizes on an FP unit that flushes subnormals: the same bytes (the
            // arithmetic is integer or a table of it).
            let run = check(&case, &ofm, workers, |o| o.flush_to_zero = workers % 2 == 0);
            // Every input byte of the tiles (padding channels included) is read once,
            // and nothing else: the trailing alignment padding of a tile is not read.
            assert!(
                run.input_read_counts.iter().all(|&n| n <= 1),
                "{case:?}: an input byte read twice"
            );
        }
    }
}

fn case(
    op: Op,
    dtype: DType,
    out_dtype: DType,
    shape: &[u64],
    layout: MlaTiled,
    out_strides: &[u64],
) -> Case {
    Case {
        op,
        dtype,
        out_dtype,
        shape: shape.to_vec(),
        layout,
        out_strides: out_strides.to_vec(),
        params: Params::new(0.25).with_zero_point(-5),
    }
}

fn hwc(tile: [u32; 4], channels: Channels, align: TileAlign) -> MlaTiled {
    MlaTiled::new([None, Some(0), Some(1), Some(2)], tile, channels).with_tile_align(align)
}

/// Pixels wider than a slot split into channel panels (multiples of 16 channels), in every
/// encoding; the panels of one pixel read its bytes once.
#[test]
fn wide_pixels_split_into_channel_panels() {
    let mut rng = Rng::new(0x2812_0002);
    let mut ran = 0;
    for (dtype, c, channels) in [
        (DType::I32, 3000u64, Channels::Compact),
        (DType::I16, 5000, Channels::PadTo16),
        (DType::I16, 5000, Channels::CBlock16),
        (DType::BF16, 4100, Channels::CBlock16),
    ] {
        let shape = [2u64, 3, c];
        for (op, out) in [
            (Op::Detess, dtype),
            (Op::Dequant, DType::F32),
            (Op::Cast, DType::F32),
        ] {
            let admitted = match op {
                Op::Detess => true,
                Op::Dequant => dtype != DType::BF16,
                Op::Cast => dtype == DType::BF16,
            };
            if !admitted {
                continue;
            }
            ran += 1;
            let e = out.size() as u64;
            let layout = hwc([1, 2, 2, c as u32], channels, TileAlign::Bytes16);
            let k = case(op, dtype, out, &shape, layout, &[3 * c * e, c * e, e]);
            let ofm = random_ofm(&mut rng, capacity(&k));
            for workers in [1, 3] {
                let run = check(&k, &ofm, workers, |_| {});
                let report = run.report.unwrap();
                assert!(report.tess.panel_tasks > 0, "{k:?}: no panels");
                assert!(run.input_read_counts.iter().all(|&n| n <= 1), "{k:?}");
            }
        }
    }
    assert_eq!(ran, 8, "cases run");
}

/// The DMA commands of small layouts, computed by hand from the kernel's rules.
#[test]
fn dma_commands_of_hand_computed_layouts() {
    let mut rng = Rng::new(0x2812_0003);
    // INT8 [4, 8, 16] Compact in one tile of 512 bytes: one band (512 ≤ 8 KiB), one input
    // DMA; the NHWC output's four W segments of 128 bytes are contiguous: one output DMA.
    let k = case(
        Op::Detess,
        DType::I8,
        DType::I8,
        &[4, 8, 16],
        hwc([1, 4, 8, 16], Channels::Compact, TileAlign::Bytes16),
        &[128, 16, 1],
    );
    let ofm = random_ofm(&mut rng, capacity(&k));
    let run = check(&k, &ofm, 1, |_| {});
    let r = run.report.unwrap();
    assert_eq!((r.units, r.tess.source_dma, r.tess.output_dma), (1, 1, 1));
    assert_eq!(r.tess.output_direct, 0);
    let w = &run.cost.workers[0];
    assert_eq!((w.bytes_read, w.bytes_written), (512, 512));
    // BF16 [2, 8, 3] to an NCHW output (C stride 32, H 16, W 2): the input's 96 bytes in
    // one DMA; each of the two W segments leaves as one 2D DMA of 3 channel rows of 16
    // bytes.
    let k = case(
        Op::Detess,
        DType::BF16,
        DType::BF16,
        &[2, 8, 3],
        hwc([1, 2, 8, 3], Channels::Compact, TileAlign::Bytes1),
        &[16, 2, 32],
    );
    let ofm = random_ofm(&mut rng, capacity(&k));
    let r = check(&k, &ofm, 1, |_| {}).report.unwrap();
    assert_eq!((r.units, r.tess.source_dma, r.tess.output_dma), (1, 1, 2));
    // INT8 [4, 4, 40] CBlock16, tiles of 2 × 2 pixels: 4 tiles, one band each; a band's
    // input is one 2D DMA of 3 block rows (4 pixels × 16 bytes); the FP32 NHWC output of a
    // tile's two W segments (2 pixels × 160 bytes each) is not contiguous across the
    // segments: two output DMAs per tile. Two workers take two tiles each.
    let k = case(
        Op::Dequant,
        DType::I8,
        DType::F32,
        &[4, 4, 40],
        hwc([1, 2, 2, 40], Channels::CBlock16, TileAlign::Bytes16),
        &[640, 160, 4],
    );
    let ofm = random_ofm(&mut rng, capacity(&k));
    let run = check(&k, &ofm, 2, |_| {});
    let r = run.report.unwrap();
    assert_eq!(
        (r.units, r.launched, r.tess.source_dma, r.tess.output_dma),
        (4, 2, 4, 8)
    );
    let per_worker: Vec<u64> = run.cost.workers.iter().map(|w| w.dma_commands).collect();
    assert_eq!(per_worker, [6, 6], "DMA commands per worker");
    // Bytes per worker: two tiles of 4 pixels × 48 stored bytes read, two tiles of 4 pixels
    // × 40 channels × 4 bytes written.
    let bytes: Vec<(u64, u64)> = run
        .cost
        .workers
        .iter()
        .map(|w| (w.bytes_read, w.bytes_written))
        .collect();
    assert_eq!(
        bytes,
        [(384, 1280), (384, 1280)],
        "bytes read and written per worker"
    );
    // Every input byte read exactly once (the capacity has no alignment padding here:
    // tiles of 4 pixels × 48 stored bytes = 192).
    assert!(run.input_read_counts.iter().all(|&n| n == 1));
}

/// Four workers take at most a third of one worker's simulated cycles on a large head.
#[test]
fn four_workers_speed_up_a_large_head() {
    let mut rng = Rng::new(0x2812_0004);
    let k = case(
        Op::Dequant,
        DType::I8,
        DType::F32,
        &[64, 64, 96],
        hwc([1, 16, 16, 96], Channels::PadTo16, TileAlign::Bytes16),
        &[64 * 96 * 4, 96 * 4, 4],
    );
    let ofm = random_ofm(&mut rng, capacity(&k));
    let one = check(&k, &ofm, 1, |_| {}).cost.simulated_cycles;
    let four = check(&k, &ofm, 4, |_| {}).cost.simulated_cycles;
    assert!(four * 3 <= one, "4 workers {four} cycles, 1 worker {one}");
}

/// Through the Runtime (SPEC §9): a DetessDequant head submitted on the simulated transport
/// gives the A65's bytes and leaves the rest of the output buffer alone; a firmware that
/// does not advertise the entry fails closed (never an A65 fallback).
#[test]
fn the_runtime_runs_a_head_and_fails_closed_without_the_entry() {
    use crate::support::SubmitEncoded;
    use simak::ev74::detess as codec;
    use simak::ev74::runtime::{Executor, ExecutorOptions, RuntimeError, SimConfig, SimTransport};
    use simak_ev74_fw::Capabilities;
    use std::sync::Arc;
    use std::time::Duration;

    let mut rng = Rng::new(0x2812_0005);
    let k = case(
        Op::Dequant,
        DType::I16,
        DType::BF16,
        &[5, 7, 33],
        hwc([1, 2, 4, 32], Channels::CBlock16, TileAlign::Bytes16),
        &[7 * 33 * 2, 33 * 2, 2],
    );
    let ofm = random_ofm(&mut rng, capacity(&k));
    let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
        input: TiledSpec {
            extents: &k.shape,
            dtype: k.dtype,
            layout: k.layout,
        },
        output: DynSpec::strided(&k.shape, &k.out_strides, k.out_dtype),
        params: k.params,
    })
    .unwrap();
    let span = out_span(&k);
    let mut want = vec![MARK; span];
    a65::detessdequant::execute(
        &a65::detessdequant::prepare(&plan),
        ofm.as_slice(),
        &mut want,
    )
    .unwrap();
    let device = codec::check_inference(&plan).unwrap();
    let packet = codec::encode_relocatable(&device);
    let options = ExecutorOptions {
        probe_casttess: false,
    };
    let executor =
        Executor::connect_with(Arc::new(SimTransport::new(SimConfig::new(4))), options).unwrap();
    let input = executor.allocate(ofm.as_slice().len() as u64).unwrap();
    let output = executor.allocate(span as u64 + 16).unwrap();
    input.write(0, ofm.as_slice()).unwrap();
    output.write(0, &vec![MARK; span + 16]).unwrap();
    let report = executor
        .run_encoded(&device, &packet, &input, &output, Duration::from_secs(30))
        .unwrap()
        .unwrap();
    assert_eq!(report.launched, 4);
    let mut got = vec![0u8; span + 16];
    output.read(0, &mut got).unwrap();
    assert!(
        got[..span] == want[..],
        "the Runtime's bytes differ from the A65's"
    );
    assert!(got[span..].iter().all(|&b| b == MARK));

    let mut config = SimConfig::new(2);
    config.advertised = Capabilities::QUANT_V1 | Capabilities::CASTTESS_V1;
    let without = Executor::connect_with(Arc::new(SimTransport::new(config)), options).unwrap();
    let input = without.allocate(ofm.as_slice().len() as u64).unwrap();
    let output = without.allocate(span as u64).unwrap();
    let err = without
        .submit_encoded(&device, &packet, &input, &output)
        .unwrap_err();
    assert_eq!(
        err,
        RuntimeError::MissingCapability {
            entry: "simaai_kernels_ev74_detessdequant_v1",
            version: 1
        }
    );
}
