//! `simak bench detess`: in-process throughput of the output-side ops (SPEC §12) on the
//! MLA output workloads of issue 25, one thread, at every level this CPU runs (or one
//! forced `--level`), beside a same-traffic kernel measured in the same run.
//!
//! Workloads (each head a logical HWC tensor, axes D,H,W,C = -1,0,1,2, written as one
//! contiguous NHWC FP32 tensor; heads of one OFM at offsets that are running sums):
//!
//! | name | heads | tile | channels | op |
//! | --- | --- | --- | --- | --- |
//! | `yolo` | 80×80×144, 40×40×144, 20×20×144 INT8 | (1, H, W, 16) | CBlock16 | DetessDequant → FP32 |
//! | `ssd` | 19×19×273 INT8 | one tile | CBlock16 | DetessDequant → FP32 |
//! | `bf16` | 60×80×256 BF16 | (1, 60, 80, 16) | PadTo16 | DetessCast → FP32 |
//! | `classifier` | 1×1000 INT8 | one tile | Compact, tile alignment 1 | DetessDequant → FP32 |
//!
//! DetessDequant runs with multiplier 21.5 (not a power of two, so `1/s` is inexact) and
//! zero point 3 on codes from PCG32; the BF16 head holds the peers' N(0, 100) values.
//!
//! The same-traffic kernel ([`simak::a65::reference::widen`]) reads the OFM's element
//! bytes once in order and writes the output bytes once (INT8 → FP32 value, BF16 → FP32
//! bits), a plain loop compiled at the same level, into the op's own output buffer (the
//! same working set). Per workload every kernel (the op and
//! the reference at each level) is first calibrated to about [`SAMPLE`] per sample, then
//! the samples are taken interleaved (rep 1 of every kernel, rep 2 of every kernel, …), so
//! that drifts of a shared machine hit all of them; the median per call is reported.

use std::hint::black_box;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use rand_core::RngCore;
use serde::Serialize;
use simak::a65::{self, Level, reference};
use simak::layout::{Channels, MlaTiled, TileAlign};
use simak::ops::dequant::Params;
use simak::ops::{detesscast, detessdequant};
use simak::{DType, TensorSpec};

use crate::bench::{encode, level_names, parse_level, workload};
use crate::demo::Pcg32;
use crate::engine::AlignedBuf;
use crate::error::CliError;
use crate::report::{self, Context, Done};

/// Target duration of one timed sample (calls per sample are calibrated to it).
pub const SAMPLE: Duration = Duration::from_millis(1);

/// The flags of `simak bench detess`.
#[derive(Debug, Args)]
pub struct BenchDetessArgs {
    /// One workload instead of all four.
    #[arg(long, value_enum, value_name = "NAME")]
    workload: Option<DetessWorkload>,
    /// Measure one level instead of every level this CPU runs: scalar, x86_64-sse4.1,
    /// x86_64-avx2, x86_64-avx512, aarch64-neon (the names of `simak::a65::Level`); a
    /// level this CPU lacks, or one the ops have no kernel at, is refused (exit 2).
    #[arg(long, value_name = "NAME", value_parser = parse_level)]
    level: Option<Level>,
    /// Samples per kernel (interleaved); the median is reported.
    #[arg(long, value_name = "R", default_value_t = 21, value_parser = clap::value_parser!(u64).range(1..=1000))]
    reps: u64,
}

/// A workload of `simak bench detess`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DetessWorkload {
    /// YOLO-style three-head INT8 OFM: 80×80×144, 40×40×144, 20×20×144, tiles
    /// (1, H, W, 16), CBlock16; DetessDequant → FP32.
    Yolo,
    /// SSD head 19×19×273 INT8 CBlock16 in one tile; DetessDequant → FP32.
    Ssd,
    /// BF16 60×80×256 PadTo16 head in tiles of (1, 60, 80, 16); DetessCast → FP32.
    Bf16,
    /// 1×1000 INT8 classifier head, Compact, tile alignment 1; DetessDequant → FP32.
    Classifier,
}

impl DetessWorkload {
    const ALL: [DetessWorkload; 4] = [
        DetessWorkload::Yolo,
        DetessWorkload::Ssd,
        DetessWorkload::Bf16,
        DetessWorkload::Classifier,
    ];

    fn name(self) -> &'static str {
        match self {
            DetessWorkload::Yolo => "yolo",
            DetessWorkload::Ssd => "ssd",
            DetessWorkload::Bf16 => "bf16",
            DetessWorkload::Classifier => "classifier",
        }
    }

    /// The heads: extents H, W, C and tile D, H, W, C.
    fn heads(self) -> Vec<([u64; 3], [u32; 4])> {
        match self {
            DetessWorkload::Yolo => [80u32, 40, 20]
                .into_iter()
                .map(|s| ([s.into(), s.into(), 144], [1, s, s, 16]))
                .collect(),
            DetessWorkload::Ssd => vec![([19, 19, 273], [1, 19, 19, 273])],
            DetessWorkload::Bf16 => vec![([60, 80, 256], [1, 60, 80, 16])],
            DetessWorkload::Classifier => vec![([1, 1, 1000], [1, 1, 1, 1000])],
        }
    }

    fn channels(self) -> Channels {
        match self {
            DetessWorkload::Yolo | DetessWorkload::Ssd => Channels::CBlock16,
            DetessWorkload::Bf16 => Channels::PadTo16,
            DetessWorkload::Classifier => Channels::Compact,
        }
    }

    fn tile_align(self) -> TileAlign {
        match self {
            DetessWorkload::Classifier => TileAlign::Bytes1,
            _ => TileAlign::Bytes16,
        }
    }

    fn dtype(self) -> DType {
        match self {
            DetessWorkload::Bf16 => DType::BF16,
            _ => DType::I8,
        }
    }
}

/// One head's plan.
#[derive(Debug, Clone, Copy)]
enum HeadPlan {
    Dequant(detessdequant::Plan),
    Cast(detesscast::Plan),
}

/// One head prepared at one level.
#[derive(Debug, Clone)]
enum HeadPrepared {
    Dequant(a65::detessdequant::Prepared),
    Cast(a65::detesscast::Prepared),
}

impl HeadPlan {
    fn prepare_at(&self, level: Level) -> Result<HeadPrepared, a65::LevelError> {
        Ok(match self {
            HeadPlan::Dequant(p) => {
                HeadPrepared::Dequant(a65::detessdequant::prepare_at(p, level)?)
            }
            HeadPlan::Cast(p) => HeadPrepared::Cast(a65::detesscast::prepare_at(p, level)?),
        })
    }

    fn capacity(&self) -> u64 {
        match self {
            HeadPlan::Dequant(p) => p.input().capacity(),
            HeadPlan::Cast(p) => p.input().capacity(),
        }
    }
}

impl HeadPrepared {
    fn execute(&self, input: &[u8], output: &mut [u8]) -> Result<(), a65::ExecuteError> {
        match self {
            HeadPrepared::Dequant(p) => a65::detessdequant::execute(p, input, output),
            HeadPrepared::Cast(p) => a65::detesscast::execute(p, input, output),
        }
    }
}

/// One level's figures on one workload.
#[derive(Debug, Serialize)]
pub struct LevelRow {
    level: String,
    /// The op (all heads of the OFM, one call each): median per OFM.
    median_ns: f64,
    /// The fastest sample's time per OFM.
    min_ns: f64,
    /// Output elements per second at the median.
    elements_per_s: f64,
    /// The same-traffic kernel at this level: median per OFM.
    reference_median_ns: f64,
    /// Its fastest sample.
    reference_min_ns: f64,
    reference_elements_per_s: f64,
    /// Op throughput over the same-traffic kernel's at this level.
    ratio_to_reference: f64,
    /// Op throughput over that of the op's fastest level on this workload.
    ratio_to_best_level: f64,
}

/// One workload's figures.
#[derive(Debug, Serialize)]
pub struct WorkloadFigures {
    workload: DetessWorkload,
    op: &'static str,
    dtype: String,
    channels: &'static str,
    tile_align: u64,
    /// Per head: H, W, C.
    heads: Vec<[u64; 3]>,
    /// Output elements per OFM (all heads).
    elements: u64,
    /// OFM bytes (all heads, tile padding included).
    ofm_bytes: u64,
    /// Output bytes per OFM.
    output_bytes: u64,
    rows: Vec<LevelRow>,
}

/// What `simak bench detess` measured.
#[derive(Debug, Serialize)]
pub struct BenchDetessSummary {
    threads: usize,
    reps: usize,
    /// The levels measured.
    levels: Vec<String>,
    workloads: Vec<WorkloadFigures>,
}

/// A timed kernel: one call per invocation.
pub(crate) type Kernel<'a> = Box<dyn FnMut() + 'a>;

/// Medians per call of `kernels`, samples interleaved (see the module docs).
pub(crate) fn interleaved(kernels: &mut [Kernel<'_>], reps: usize) -> Vec<(Duration, Duration)> {
    let inner: Vec<u32> = kernels
        .iter_mut()
        .map(|k| {
            let start = Instant::now();
            let mut calls = 0u32;
            while start.elapsed() < SAMPLE || calls < 3 {
                k();
                calls += 1;
            }
            let per_call = start.elapsed() / calls;
            (SAMPLE.as_nanos() / per_call.as_nanos().max(1)).clamp(1, u32::MAX.into()) as u32
        })
        .collect();
    let mut samples = vec![Vec::with_capacity(reps); kernels.len()];
    for _ in 0..reps {
        for ((k, &n), s) in kernels.iter_mut().zip(&inner).zip(&mut samples) {
            let t = Instant::now();
            for _ in 0..n {
                k();
            }
            s.push(t.elapsed() / n);
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort();
            (s[s.len() / 2], s[0])
        })
        .collect()
}

/// The OFM bytes of a workload: INT8 codes from PCG32, or the peers' BF16 values.
fn ofm(dtype: DType, len: usize) -> Result<AlignedBuf, CliError> {
    let mut buf = AlignedBuf::zeroed("the OFM buffer", len, 64)
        .map_err(|e| CliError::Input(format!("bench detess: {e}")))?;
    if dtype == DType::BF16 {
        let bytes = encode(DType::BF16, workload(len / 2), (len / 2 * 2) as u64)?;
        buf.as_mut_slice()[..bytes.len()].copy_from_slice(&bytes);
    } else {
        let mut rng = Pcg32::new(0x00b3_4c4d_2026_1203, 25);
        rng.fill_bytes(buf.as_mut_slice());
    }
    Ok(buf)
}

/// Measures one workload at `levels`.
fn measure(w: DetessWorkload, levels: &[Level], reps: usize) -> Result<WorkloadFigures, CliError> {
    let bad = |what: String| CliError::Input(format!("bench detess: {what}"));
    let internal = |e: a65::ExecuteError| CliError::Internal(anyhow::anyhow!("{e}"));
    let dtype = w.dtype();
    let layout_of = |tile: [u32; 4]| {
        MlaTiled::new([None, Some(0), Some(1), Some(2)], tile, w.channels())
            .with_tile_align(w.tile_align())
    };
    let mut plans = Vec::new();
    for (extents, tile) in w.heads() {
        let output = TensorSpec::contiguous(extents, DType::F32);
        let plan = if dtype == DType::BF16 {
            detesscast::check_inference(&simak::ops::detess::Request {
                dtype,
                layout: layout_of(tile),
                output,
            })
            .map(HeadPlan::Cast)
        } else {
            detessdequant::check_inference(&detessdequant::Request {
                dtype,
                layout: layout_of(tile),
                output,
                params: Params::new(21.5).with_zero_point(3),
            })
            .map(HeadPlan::Dequant)
        }
        .map_err(|e| bad(format!("{}: {e}", w.name())))?;
        plans.push((extents, plan));
    }
    // Heads at running-sum offsets; outputs back to back.
    let mut spans = Vec::new();
    let (mut at_in, mut at_out) = (0usize, 0usize);
    for (extents, plan) in &plans {
        let cap = plan.capacity() as usize;
        let out = extents.iter().product::<u64>() as usize * 4;
        spans.push((at_in..at_in + cap, at_out..at_out + out));
        at_in += cap;
        at_out += out;
    }
    let (ofm_bytes, output_bytes) = (at_in, at_out);
    let elements = (output_bytes / 4) as u64;
    let input = ofm(dtype, ofm_bytes)?;
    let input = input.as_slice();
    // One output buffer per level, written by the op and its reference alike (the same
    // working set).
    let outputs = (0..levels.len())
        .map(|_| {
            AlignedBuf::zeroed("the output buffer", output_bytes, 64)
                .map(std::cell::RefCell::new)
                .map_err(|e| CliError::Input(format!("bench detess: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut prepared = Vec::new();
    for &level in levels {
        let heads = plans
            .iter()
            .map(|(_, p)| p.prepare_at(level))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("--level: {e}")))?;
        prepared.push(heads);
    }
    let in_size = dtype.size();
    let ref_in = &input[..(output_bytes / 4) * in_size];
    let mut kernels: Vec<Kernel<'_>> = Vec::new();
    for ((heads, &level), out) in prepared.iter().zip(levels).zip(&outputs) {
        let spans = &spans;
        // One checked call of each before timing (the timed calls ignore the result).
        {
            let mut out = out.borrow_mut();
            let out = out.as_mut_slice();
            for (h, (i, o)) in heads.iter().zip(spans) {
                h.execute(&input[i.clone()], &mut out[o.clone()])
                    .map_err(internal)?;
            }
            reference::widen(level, in_size, ref_in, out).map_err(|e| bad(format!("{e}")))?;
        }
        kernels.push(Box::new(move || {
            let mut out = out.borrow_mut();
            let out = out.as_mut_slice();
            for (h, (i, o)) in heads.iter().zip(spans) {
                let _ = h.execute(black_box(&input[i.clone()]), black_box(&mut out[o.clone()]));
            }
        }));
        kernels.push(Box::new(move || {
            let mut out = out.borrow_mut();
            let _ = reference::widen(
                level,
                in_size,
                black_box(ref_in),
                black_box(out.as_mut_slice()),
            );
        }));
    }
    let medians = interleaved(&mut kernels, reps);
    let per_s = |d: Duration| elements as f64 / d.as_secs_f64();
    let best = medians
        .iter()
        .step_by(2)
        .map(|m| m.0)
        .min()
        .unwrap_or(Duration::ZERO);
    let rows = levels
        .iter()
        .zip(medians.chunks_exact(2))
        .map(|(level, m)| LevelRow {
            level: level.name().to_owned(),
            median_ns: m[0].0.as_secs_f64() * 1e9,
            min_ns: m[0].1.as_secs_f64() * 1e9,
            elements_per_s: per_s(m[0].0),
            reference_median_ns: m[1].0.as_secs_f64() * 1e9,
            reference_min_ns: m[1].1.as_secs_f64() * 1e9,
            reference_elements_per_s: per_s(m[1].0),
            ratio_to_reference: m[1].0.as_secs_f64() / m[0].0.as_secs_f64(),
            ratio_to_best_level: best.as_secs_f64() / m[0].0.as_secs_f64(),
        })
        .collect();
    Ok(WorkloadFigures {
        workload: w,
        op: if dtype == DType::BF16 {
            "detess_cast"
        } else {
            "detess_dequant"
        },
        dtype: dtype.name().to_owned(),
        channels: w.channels().name(),
        tile_align: w.tile_align().bytes(),
        heads: plans.iter().map(|(e, _)| *e).collect(),
        elements,
        ofm_bytes: ofm_bytes as u64,
        output_bytes: output_bytes as u64,
        rows,
    })
}

/// Runs `simak bench detess`.
///
/// # Errors
///
/// Bad input (exit 2): a `--level` this CPU lacks or the ops have no kernel at, a buffer
/// that cannot be allocated; internal when `execute` fails.
pub fn run(args: BenchDetessArgs, _ctx: &Context) -> Result<Done<BenchDetessSummary>, CliError> {
    let reps = args.reps as usize;
    let levels: Vec<Level> = match args.level {
        Some(level) => {
            // Refused here (exit 2) with the level's own message.
            reference::widen(level, 1, &[], &mut [])
                .map_err(|e| CliError::Input(format!("bench detess: --level: {e}")))?;
            vec![level]
        }
        None => Level::ALL
            .into_iter()
            .filter(|&l| reference::widen(l, 1, &[], &mut []).is_ok())
            .collect(),
    };
    let workloads = match args.workload {
        Some(w) => vec![w],
        None => DetessWorkload::ALL.to_vec(),
    };
    let figures = workloads
        .into_iter()
        .map(|w| measure(w, &levels, reps))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Done::summary(BenchDetessSummary {
        threads: 1,
        reps,
        levels: level_names(levels.into_iter()),
        workloads: figures,
    }))
}

impl report::Summary for BenchDetessSummary {
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut text = format!(
            "output side, 1 thread, median of {} interleaved samples; ref = same-traffic kernel at the level\n",
            self.reps
        );
        for w in &self.workloads {
            let heads: Vec<String> = w
                .heads
                .iter()
                .map(|[h, x, c]| format!("{h}x{x}x{c}"))
                .collect();
            let _ = writeln!(
                text,
                "\n{} ({} {} -> f32, {}, tile alignment {}): {} ({} elements, OFM {} bytes)",
                w.workload.name(),
                w.op,
                w.dtype,
                w.channels,
                w.tile_align,
                heads.join(" + "),
                w.elements,
                w.ofm_bytes,
            );
            let _ = writeln!(
                text,
                "{:<16} {:>11} {:>11} {:>9} {:>11} {:>11} {:>9} {:>6} {:>6}",
                "level",
                "op med ns",
                "op min ns",
                "Gelem/s",
                "ref med ns",
                "ref min ns",
                "Gelem/s",
                "x ref",
                "x best"
            );
            for r in &w.rows {
                let _ = writeln!(
                    text,
                    "{:<16} {:>11.0} {:>11.0} {:>9.3} {:>11.0} {:>11.0} {:>9.3} {:>6.2} {:>6.2}",
                    r.level,
                    r.median_ns,
                    r.min_ns,
                    r.elements_per_s / 1e9,
                    r.reference_median_ns,
                    r.reference_min_ns,
                    r.reference_elements_per_s / 1e9,
                    r.ratio_to_reference,
                    r.ratio_to_best_level,
                );
            }
        }
        text
    }
}
