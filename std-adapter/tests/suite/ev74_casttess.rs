//! A65 CastTess vs EV74-sim CastTess: byte-identical physical buffers (SPEC §5, §8).
//!
//! Per input dtype, 320 fixed-seed combinations (ranks 1–6, tiles, axis maps, both channel
//! modes, strided and gapped inputs, empty tensors), plus large-panel cases that reach the
//! channel-panel and 4 KiB physical-block work modes. Each case runs on the simulator with
//! 1, 2, 3 and 4 workers into a dirty output buffer longer than the capacity (garbage
//! before the call, so padding must be written), and is compared with `a65::casttess` on
//! an identical dirty buffer and with the plain-loop oracle of `tess_common`. Per run:
//! guard bytes past the capacity untouched, every byte of the capacity written exactly
//! once (the simulator's per-byte write counts), input bytes read equal to the logical
//! bytes (elements × element size, ≤ the input span) except in the physical-block
//! fallback and in channel tiles that stage complete pixels (there exactly the bytes
//! [`predict_staging`] derives from the SPEC §8 rule), output bytes written equal to the
//! capacity.

use crate::tess_common;

use simak::DType;
use simak::Port;
use simak::a65;
use simak::ev74::casttess::{BindError, SimError, SimOptions, SimRun, run_sim, run_sim_with};
use simak::layout::Channels;
use simak_ev74_fw::Report;
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;
use tess_common::*;

const DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];
const CASES_PER_DTYPE: usize = 320;

#[derive(Debug, Default)]
pub(crate) struct Tally {
    cases: usize,
    runs: usize,
    empty: usize,
    by_rank: [usize; 7],
    band_tasks: u64,
    panel_tasks: u64,
    block_tasks: u64,
    source_dma: u64,
    direct_rows: u64,
    bytes_read: u64,
    logical_bytes: u64,
    span_bytes: u64,
}

/// Runs `case` on the simulator with 1–4 workers and checks it against A65 and the oracle;
/// returns the firmware's report of each run (none for an empty plan).
pub(crate) fn check_case(case: &Case, input: &Aligned, tally: &mut Tally) -> Vec<Report> {
    let plan = cast_plan(case);
    let expected = expected_cast(case, input.as_slice());
    let capacity = plan.output().capacity() as usize;
    assert_eq!(capacity, expected.len(), "capacity of {case:?}");
    // The A65 result on a dirty buffer must be the oracle's.
    let prepared = a65::casttess::prepare(&plan);
    let mut a65_out = Aligned::new(capacity + GUARD, DIRTY);
    a65::casttess::execute(&prepared, input.as_slice(), a65_out.as_mut_slice()).unwrap();
    assert_eq!(
        &a65_out.as_slice()[..capacity],
        &expected[..],
        "a65 {case:?}"
    );
    tally.cases += 1;
    tally.by_rank[case.shape.len()] += 1;
    if plan.is_empty() {
        tally.empty += 1;
    }
    let mut reports = Vec::new();
    for workers in 1..=4 {
        let mut out = vec![DIRTY; capacity + GUARD];
        // Garbage in the required span: every padding byte must be rewritten.
        for (k, b) in out[..capacity].iter_mut().enumerate() {
            *b = (k as u8).wrapping_mul(37) ^ 0xc3;
        }
        let run = run_sim(&plan, input.as_slice(), &mut out, workers)
            .unwrap_or_else(|e| panic!("{workers} workers {case:?}: {e}"));
        let what = format!("{workers} workers {case:?}");
        if let Some(k) = out[..capacity]
            .iter()
            .zip(&a65_out.as_slice()[..capacity])
            .position(|(a, b)| a != b)
        {
            panic!(
                "{what}: byte {k} of {capacity} is {:#04x}, a65 has {:#04x}",
                out[k],
                a65_out.as_slice()[k]
            );
        }
        assert!(
            out[capacity..].iter().all(|&b| b == DIRTY),
            "{what}: guard touched"
        );
        check_traffic(case, &plan, &run, capacity, &what, tally);
        tally.runs += 1;
        reports.extend(run.report);
    }
    reports
}

fn check_traffic(
    case: &Case,
    plan: &simak::ops::casttess::Plan,
    run: &SimRun,
    capacity: usize,
    what: &str,
    tally: &mut Tally,
) {
    let logical = (case.elements() * case.dtype.size()) as u64;
    if plan.is_empty() {
        assert!(run.report.is_none(), "{what}: empty plan ran");
        assert_eq!(run.output_bytes_written, 0);
        assert!(run.output_write_counts.iter().all(|&c| c == 0));
        return;
    }
    let report = run.report.expect("nonempty plan reports");
    let counts = &run.output_write_counts;
    if let Some(k) = counts[..capacity].iter().position(|&c| c != 1) {
        panic!("{what}: output byte {k} written {} times", counts[k]);
    }
    assert!(counts[capacity..].iter().all(|&c| c == 0), "{what}: guard");
    assert_eq!(run.output_bytes_written, capacity as u64, "{what}");
    // Nothing else is written: not the input (holes included), not the descriptor.
    assert_eq!(run.stats.bytes_written(), capacity as u64, "{what}");
    assert_eq!(run.stats.unfinished, 0, "{what}");
    assert_eq!(run.stats.faults, 0, "{what}");
    let t = report.tess;
    let staging = predict_staging(case);
    assert_eq!(t.staged_tasks, staging.tasks, "{what}: {report:?}");
    let packer = if staging.bf16_packer {
        t.staged_tasks
    } else {
        0
    };
    assert_eq!(t.bf16_pixel_tasks, packer, "{what}: {report:?}");
    if t.block_tasks == 0 {
        // Each logical element is read exactly once, or once per channel tile in the
        // tiles that stage complete pixels; gaps and pixel padding are never read.
        assert_eq!(run.input_bytes_read, staging.reads, "{what}: {report:?}");
    } else {
        // The physical-block fallback may convert an element once per byte plane.
        assert!(run.input_bytes_read >= logical && run.input_bytes_read <= 2 * logical);
    }
    if t.staged_tasks == 0 {
        assert!(run.input_bytes_read <= 2 * plan.input().span());
    }
    tally.band_tasks += t.band_tasks;
    tally.panel_tasks += t.panel_tasks;
    tally.block_tasks += t.block_tasks;
    tally.source_dma += t.source_dma;
    tally.direct_rows += t.source_direct_rows;
    tally.bytes_read += run.input_bytes_read;
    tally.logical_bytes += logical;
    tally.span_bytes += plan.input().span();
}

/// What the staged complete-pixel bands of SPEC §8 do to a case, derived here from the
/// contract's rule and the layout alone (not from the firmware's geometry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Staging {
    /// Staged band tasks of the whole call.
    pub tasks: u64,
    /// Input bytes the call reads when no tile falls back to physical blocks: every
    /// logical element once, except that a staged tile reads all source channels of
    /// each of its pixels.
    pub reads: u64,
    /// Whether the BF16 pixel packer packs the call: BF16, and every tile staged with a
    /// stored channel count divisible by 16.
    pub bf16_packer: bool,
}

/// Whether a tile of `tc` channels, `pixels` pixels and `tw` pixels along W stages
/// complete pixels (the rule of contract §8, restated): channel-subtiled with at most 64
/// source channels, a one-element C stride, a subtile row under 16 bytes, pixels adjacent
/// along W (FP32, FP16, BF16) or padded BF16 pixels (2·C ≤ stride_W ≤ 2^31 − 1), staged
/// rows of at least 16 bytes, and a whole W segment of the subtile that the general gather
/// would read with direct loads: not a rectangle (more than one pixel, at least 128 bytes,
/// pitch ≤ 2^31 − 1) and not a BF16 exact-width row (one channel, 16 to 63 pixels, the
/// general band of at least 64 pixels, pitch ≤ 65,535 bytes).
pub(crate) fn stages(case: &Case, tc: u64, pixels: u64, tw: u64) -> bool {
    let e = case.dtype.size() as u64;
    let role = |r: usize| {
        case.axes[r]
            .map(|a| (case.shape[a as usize], case.strides[a as usize]))
            .filter(|&(n, _)| n > 1)
            .unwrap_or((1, 0))
    };
    let (c_src, sc) = role(3);
    let (_, sw) = role(2);
    let adjacent = sw == c_src * e;
    let padded = case.dtype == DType::BF16 && 2 * c_src <= sw && sw <= i32::MAX as u64;
    let row = if adjacent { tw * c_src * e } else { c_src * e };
    let stored = match case.channels {
        Channels::Compact => tc,
        Channels::PadTo16 => tc.next_multiple_of(16),
        Channels::CBlock16 => unreachable!("casttess refuses cblock16"),
    };
    let quantum = 8 / gcd(stored, 8);
    let general_band = (4096 / stored / quantum * quantum).min(pixels);
    let rectangle = tw > 1 && tw * tc * e >= 128 && sw <= i32::MAX as u64;
    let exact_width = case.dtype == DType::BF16
        && tc == 1
        && (16..=63).contains(&tw)
        && general_band >= 64
        && sw <= 65_535;
    tc < c_src
        && c_src <= 64
        && sc == e
        && tc * e < 16
        && !rectangle
        && !exact_width
        && (adjacent || padded)
        && row >= 16
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// [`Staging`] of `case`: its tile classes enumerated from the layout (full and boundary
/// tile along each role, times the outer elements), each staged or not by [`stages`],
/// a staged tile split into power-of-two bands of at most 4096 source elements and 4096
/// stored values.
pub(crate) fn predict_staging(case: &Case) -> Staging {
    let e = case.dtype.size() as u64;
    let mut named = 1u64;
    // Per role: (tile extent, how many tiles have it).
    let mut sizes: Vec<Vec<(u64, u64)>> = Vec::new();
    for r in 0..4 {
        let (n, t) = match case.axes[r] {
            Some(a) => (case.shape[a as usize], u64::from(case.tile[r])),
            None => (1, 1),
        };
        named *= n;
        let mut v = vec![(t, n / t)];
        if n % t != 0 {
            v.push((n % t, 1));
        }
        sizes.push(v);
    }
    let elements = case.elements() as u64;
    let outer = elements.checked_div(named).unwrap_or(0);
    let c_src = case.axes[3].map_or(1, |a| case.shape[a as usize]);
    let mut p = Staging {
        tasks: 0,
        reads: 0,
        bf16_packer: case.dtype == DType::BF16 && elements > 0,
    };
    for &(td, nd) in &sizes[0] {
        for &(th, nh) in &sizes[1] {
            for &(tw, nw) in &sizes[2] {
                for &(tc, nc) in &sizes[3] {
                    let tiles = outer * nd * nh * nw * nc;
                    if tiles == 0 {
                        continue;
                    }
                    let pixels = td * th * tw;
                    let sc = match case.channels {
                        Channels::Compact => tc,
                        Channels::PadTo16 => tc.next_multiple_of(16),
                        Channels::CBlock16 => unreachable!("casttess refuses cblock16"),
                    };
                    if stages(case, tc, pixels, tw) {
                        let band = 1u64 << (4096 / c_src.max(sc)).ilog2();
                        p.tasks += tiles * pixels.div_ceil(band);
                        p.reads += tiles * pixels * c_src * e;
                        p.bf16_packer &= sc % 16 == 0;
                    } else {
                        p.reads += tiles * pixels * tc * e;
                        p.bf16_packer = false;
                    }
                }
            }
        }
    }
    p
}

fn random_shape(rng: &mut Rng, rank: usize, max_elements: u64) -> Vec<u64> {
    loop {
        let shape: Vec<u64> = (0..rank)
            .map(|_| match rng.below(12) {
                0 => 1,
                1 => 0,
                2..=7 => 1 + rng.below(6),
                _ => 1 + rng.below(24),
            })
            .collect();
        // Mostly nonempty: an empty axis only one time in four.
        if shape.contains(&0) && !rng.chance(1, 4) {
            continue;
        }
        if shape.iter().product::<u64>() <= max_elements {
            return shape;
        }
    }
}

fn random_case(rng: &mut Rng, dtype: DType) -> Case {
    let rank = 1 + rng.below(6) as usize;
    let shape = random_shape(rng, rank, 3000);
    Case::random(rng, dtype, shape)
}

#[test]
fn differential_random_combinations() {
    let mut rng = Rng::new(0xe774_ca57_0000_0320);
    let mut tally = Tally::default();
    for dtype in DTYPES {
        for _ in 0..CASES_PER_DTYPE {
            let case = random_case(&mut rng, dtype);
            let input = fill_input(&mut rng, &case);
            check_case(&case, &input, &mut tally);
        }
    }
    eprintln!("{tally:?}");
    assert_eq!(tally.cases, 3 * CASES_PER_DTYPE);
    assert_eq!(tally.runs, 4 * tally.cases);
    assert!(tally.empty >= 20, "{tally:?}");
    assert!(tally.by_rank[1..].iter().all(|&n| n >= 50), "{tally:?}");
    assert!(tally.source_dma > 0 && tally.direct_rows > 0, "{tally:?}");
}

/// Wide channel tiles: panels (PadTo16 or compact multiples of 16 above 4096 channels)
/// and the 4 KiB physical-block fallback (compact planes that are not).
fn large_channel_cases(rng: &mut Rng, dtype: DType) -> Vec<Case> {
    let e = dtype.size() as u64;
    let mut out = Vec::new();
    let channel_counts = [4097u64, 4112, 5000, 8192, 1001, 600, 4095, 520];
    for (k, &c) in channel_counts.iter().enumerate() {
        let w = 1 + rng.below(4);
        let h = 1 + rng.below(3);
        let channels = if k % 2 == 0 {
            Channels::Compact
        } else {
            Channels::PadTo16
        };
        // HWC contiguous, or planar CHW (strided channels).
        let planar = rng.chance(1, 3);
        let (shape, strides) = if planar {
            (vec![h, w, c], vec![w * e, e, h * w * e])
        } else {
            (vec![h, w, c], vec![w * c * e, c * e, e])
        };
        let input_len = (h * w * c * e) as usize;
        let tc = if rng.chance(1, 2) {
            c as u32
        } else {
            1 + rng.below(c) as u32
        };
        out.push(Case {
            dtype,
            shape,
            strides,
            input_len,
            axes: [None, Some(0), Some(1), Some(2)],
            tile: [1, 1 + rng.below(h) as u32, 1 + rng.below(w) as u32, tc],
            channels,
        });
    }
    out
}

#[test]
fn differential_large_channel_planes() {
    let mut rng = Rng::new(0xe774_ca57_0000_4096);
    let mut tally = Tally::default();
    for dtype in DTYPES {
        for case in large_channel_cases(&mut rng, dtype) {
            let input = fill_input(&mut rng, &case);
            check_case(&case, &input, &mut tally);
        }
    }
    eprintln!("{tally:?}");
    assert!(tally.panel_tasks > 0, "{tally:?}");
    assert!(tally.block_tasks > 0, "{tally:?}");
}

#[test]
fn output_phase_and_small_local_memory() {
    let case = Case {
        dtype: DType::F32,
        shape: vec![5, 7, 3],
        strides: vec![7 * 3 * 4, 3 * 4, 4],
        input_len: 5 * 7 * 3 * 4,
        axes: [None, Some(0), Some(1), Some(2)],
        tile: [1, 2, 4, 3],
        channels: Channels::PadTo16,
    };
    let mut rng = Rng::new(5);
    let input = fill_input(&mut rng, &case);
    let plan = cast_plan(&case);
    let expected = expected_cast(&case, input.as_slice());
    let mut out = vec![0u8; expected.len()];
    let mut options = SimOptions::new(3);
    options.output_phase = 48;
    options.input_phase = 4;
    run_sim_with(&plan, input.as_slice(), &mut out, &options).unwrap();
    assert_eq!(out, expected);
    // A misaligned output address is refused by bind, before anything is written.
    options.output_phase = 8;
    let err = run_sim_with(&plan, input.as_slice(), &mut out, &options).unwrap_err();
    assert!(
        matches!(
            err,
            SimError::Bind(BindError::Misaligned {
                port: Port::Output,
                align: 16,
                ..
            })
        ),
        "{err:?}"
    );
    options.output_phase = 0;
    options.local_bytes = 40 * 1024;
    let err = run_sim_with(&plan, input.as_slice(), &mut out, &options).unwrap_err();
    assert_eq!(
        err.to_string(),
        "local memory of 40960 bytes is below the 49152-byte budget"
    );
}
