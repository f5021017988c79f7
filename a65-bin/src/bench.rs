//! `simak bench quant`: in-process throughput of A65 Quant on the peers' workload (the
//! tiled benchmarks, `simak bench casttess` and `simak bench quanttess`, are in
//! [`crate::bench_tess`] and share this module's timing, figures and references).
//!
//! Workload (as `bench/peers/peers.py`): multiplier 0.5, zero point 3, nearest-even,
//! inputs drawn from N(0, 100) with a fixed seed, every 16th element replaced by an exact
//! tie (`x · 0.5 = k + 0.5`). Each figure is the median over repetitions after warm-up of
//! the time per call; two same-process references give the machine's ceiling: a plain read
//! of the input, and a trivial kernel with the same traffic (read each input element,
//! store its low byte), both vectorized (AVX-512 where the CPU has it, with the Quant
//! route's streaming-store policy) so that they measure memory, not instructions
//! (`simak::a65::reference`).

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde::Serialize;
use simak::a65::quant::{execute, prepare, prepare_at, prepare_exact};
use simak::a65::{Level, reference};
use simak::ops::quant::{Params, Request, check_inference};
use simak::{DType, TensorSpec};

use crate::demo::{Pcg32, unit};
use crate::engine;
use crate::error::CliError;
use crate::params::DTypeArg;
use crate::report::{self, Context, Done};

/// `simak bench`: one subcommand per benchmark.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Quant of a 1-D tensor (or row-padded 2-D, see --layout) on the peers' workload
    /// (multiplier 0.5, zero point 3, nearest-even, inputs from N(0, 100) with a fixed seed
    /// and an exact tie every 16th element), with the auto-selected A65 route; plus a plain
    /// read of the input and a trivial kernel with the same traffic (read each element,
    /// store its low byte).
    Quant(BenchQuantArgs),
    /// CastTess of an HWC frame into the MlaTiled BF16 layout (default: 1080 x 1920 x 3,
    /// tile 1,16,64,3, compact), inputs from N(0, 100) with a fixed seed, at the
    /// auto-selected or a forced level; plus a plain read of the input and a memcpy of the
    /// output's bytes.
    Casttess(crate::bench_tess::BenchTessArgs),
    /// QuantTess of an HWC frame into the MlaTiled INT8 layout on the peers' Quant
    /// workload (multiplier 0.5, zero point 3, nearest-even), frame and flags as for
    /// `bench casttess`; plus a plain read of the input and a memcpy of the output's bytes.
    Quanttess(crate::bench_tess::BenchTessArgs),
    /// The output-side ops (SPEC §12) on issue 25's MLA output workloads (YOLO three-head
    /// INT8 CBlock16, SSD 19x19x273 CBlock16, BF16 60x80x256 PadTo16, a 1x1000 INT8
    /// classifier head), one thread, at every level this CPU runs (or --level), each beside
    /// a same-traffic kernel at that level, samples interleaved.
    Detess(crate::bench_detess::BenchDetessArgs),
    /// Preproc (SPEC §13) of a camera frame (default 1080 x 1920, PCG32 bytes) as RGB8 and
    /// NV12 to INT8 strided, QuantTess (1,16,64,3) compact and CastTess (1,16,64,3)
    /// compact, one thread, each beside a same-traffic kernel (read the frame's bytes,
    /// write the output's), samples interleaved.
    Preproc(crate::bench_preproc::BenchPreprocArgs),
}

/// Parses `--level NAME`: a name of the ISA table or `scalar` (`simak::a65::Level`).
///
/// # Errors
///
/// An unknown name; the message lists the level names.
pub fn parse_level(text: &str) -> Result<Level, String> {
    text.parse::<Level>().map_err(|e| e.to_string())
}

/// The names of the levels in `levels` as the JSON `levels` list and the text report give
/// them: every level at which `prepare_at` accepts the plan on this CPU.
pub(crate) fn level_names(levels: impl Iterator<Item = Level>) -> Vec<String> {
    levels.map(|l| l.name().to_owned()).collect()
}

/// The flags of `simak bench quant`.
#[derive(Debug, Args)]
pub struct BenchQuantArgs {
    /// Input dtype.
    #[arg(long, value_enum, default_value_t = DTypeArg::F32)]
    dtype: DTypeArg,
    /// Elements per call: one count, or a sweep — a list of counts and inclusive ranges
    /// (`1..=300`, `7,63,64`, `1..=16,63`). A sweep prints, for each N, the median time per
    /// call beside that of the next multiple of the route's vector block, measured
    /// interleaved, and their ratio (contiguous layout, one thread).
    #[arg(long, value_name = "N", default_value = "1048576", value_parser = parse_elements)]
    elements: Elements,
    /// Threads, each running one piece of every call through the partition API
    /// (`Prepared::split`); the waiting threads spin, so use at most one per core. The
    /// references are always measured on one thread.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = crate::params::threads_parser())]
    threads: u64,
    /// Repetitions; the median is reported.
    #[arg(long, value_name = "R", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=1000))]
    reps: u64,
    /// Also measure the exact integer path (slow).
    #[arg(long)]
    exact: bool,
    /// Force a kernel level instead of the one auto-selection picks: scalar (the exact
    /// path), x86_64-sse4.1, x86_64-avx2, x86_64-avx512, aarch64-neon or aarch64-neon-fp16
    /// (the names of `simak::a65::Level`); a level this CPU lacks, or one Quant has no
    /// kernel at for this dtype, is refused (exit 2). The JSON `levels` list names the
    /// levels that run here.
    #[arg(long, value_name = "NAME", value_parser = parse_level)]
    level: Option<Level>,
    /// Input layout: a contiguous 1-D tensor, or a 2-D tensor of 1024-element rows whose
    /// input rows are padded by 16 elements (strided input, contiguous output; --elements
    /// rounds up to whole rows).
    #[arg(long, value_enum, default_value_t = BenchLayout::Contiguous)]
    layout: BenchLayout,
    /// Input values: the peers' N(0, 100) workload, or a hostile class (every element a
    /// nonzero subnormal, a NaN, or a value that saturates).
    #[arg(long, value_enum, default_value_t = BenchValues::Normal)]
    values: BenchValues,
}

/// The `--elements` of `simak bench quant`: one count or a sweep of counts, each in
/// 1..=2^31.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elements(Vec<u64>);

/// The largest `--elements` count.
const ELEMENTS_MAX: u64 = 1 << 31;
/// The most counts a sweep takes.
const SWEEP_MAX: usize = 4096;

/// Parses `--elements`: comma-separated items, each a count `N` or an inclusive range
/// `A..=B` (`A ≤ B`), every count in 1..=2^31, at most 4096 counts in all.
///
/// # Errors
///
/// A malformed item, a count outside 1..=2^31, an empty or reversed range, too many counts.
pub fn parse_elements(text: &str) -> Result<Elements, String> {
    let count = |t: &str| -> Result<u64, String> {
        let n: u64 = t
            .trim()
            .parse()
            .map_err(|_| format!("{t:?} is not a count (N, A..=B, or a comma list of them)"))?;
        if (1..=ELEMENTS_MAX).contains(&n) {
            Ok(n)
        } else {
            Err(format!("{n} is not in 1..={ELEMENTS_MAX}"))
        }
    };
    let mut all = Vec::new();
    for item in text.split(',') {
        match item.split_once("..=") {
            Some((a, b)) => {
                let (a, b) = (count(a)?, count(b)?);
                if a > b {
                    return Err(format!("range {a}..={b} is empty"));
                }
                if (b - a) as usize >= SWEEP_MAX {
                    return Err(format!("a sweep takes at most {SWEEP_MAX} counts"));
                }
                all.extend(a..=b);
            }
            None => all.push(count(item)?),
        }
        if all.len() > SWEEP_MAX {
            return Err(format!("a sweep takes at most {SWEEP_MAX} counts"));
        }
    }
    Ok(Elements(all))
}

/// Input layout of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BenchLayout {
    /// A contiguous 1-D tensor.
    Contiguous,
    /// Rows of 1024 elements, input rows padded by 16 elements; contiguous output.
    RowPadded,
}

/// Input value class of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BenchValues {
    /// The peers' workload: N(0, 100) with an exact tie every 16th element.
    Normal,
    /// Every element a nonzero subnormal of the input dtype (alternating signs).
    Subnormal,
    /// Every element a NaN.
    Nan,
    /// Every element a finite value whose product saturates (±1000, alternating).
    Saturating,
}

/// Row length of the row-padded layout, and the padding per input row, in elements.
const ROW: usize = 1024;
const ROW_PAD: usize = 16;

/// One measured kernel.
#[derive(Debug, Serialize)]
pub(crate) struct Figure {
    name: String,
    median_ns_per_call: f64,
    min_ns_per_call: f64,
    elements_per_s: f64,
    input_gb_per_s: f64,
}

/// What `simak bench quant` measured.
#[derive(Debug, Serialize)]
pub struct BenchSummary {
    dtype: String,
    layout: BenchLayout,
    values: BenchValues,
    elements: usize,
    threads: usize,
    reps: usize,
    route: String,
    /// The levels `--level` accepts for this workload on this CPU.
    levels: Vec<String>,
    figures: Vec<Figure>,
    /// The sweep's rows, when `--elements` named more than one count.
    #[serde(skip_serializing_if = "Option::is_none")]
    sweep: Option<Sweep>,
}

/// One row of a sweep: N, the next multiple of the block, and their median times.
#[derive(Debug, Serialize)]
pub(crate) struct SweepRow {
    elements: usize,
    next_multiple: usize,
    median_ns: f64,
    next_multiple_median_ns: f64,
    ratio: f64,
}

/// A sweep over counts (`--elements` with several values).
#[derive(Debug, Serialize)]
pub(crate) struct Sweep {
    /// Elements per vector step of the route (the block).
    block: usize,
    rows: Vec<SweepRow>,
    /// The largest ratio, and its N.
    worst_ratio: f64,
    worst_elements: usize,
}

/// The peers' input: N(0, 100) by Box–Muller from PCG32, with exact ties every 16th.
pub(crate) fn workload(n: usize) -> impl Iterator<Item = f32> {
    let mut rng = Pcg32::new(0x00b3_4c4d_2026_1129, 7);
    (0..n).map(move |i| {
        let u = (unit(&mut rng) as f64).max(1.0 / 16_777_216.0);
        let v = unit(&mut rng) as f64;
        let x = (100.0 * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32;
        if i % 16 == 0 {
            2.0 * (x.floor() + 0.5)
        } else {
            x
        }
    })
}

/// `n` input values of class `class`, as f32 (converted to `dtype` by [`encode`]; the
/// subnormal and NaN classes are built so they stay subnormal / NaN in `dtype`).
fn values(class: BenchValues, dtype: DType, n: usize) -> Box<dyn Iterator<Item = f32>> {
    match class {
        BenchValues::Normal => Box::new(workload(n)),
        BenchValues::Nan => Box::new(std::iter::repeat_n(f32::NAN, n)),
        BenchValues::Saturating => {
            Box::new((0..n).map(|i| if i % 2 == 0 { 1000.0 } else { -1000.0 }))
        }
        BenchValues::Subnormal => {
            // Subnormal in the input dtype: FP16 below 2^-14, BF16 and FP32 below 2^-126
            // (multiples of each format's smallest subnormal, so the conversion is exact).
            let tiny = match dtype {
                DType::F16 => f32::from_bits(0x3380_0000), // 2^-24
                DType::BF16 => f32::from_bits(0x0001_0000),
                _ => f32::from_bits(1),
            };
            Box::new((0..n).map(move |i| {
                let v = tiny * (1 + i % 100) as f32;
                if i % 2 == 0 { v } else { -v }
            }))
        }
    }
}

/// A fallible buffer of `len` bytes (capacity only, or zeroed): out of memory is one line
/// naming `what` and the bytes (exit 2, like an input that cannot be read) instead of an
/// abort.
pub(crate) fn allocate(what: &'static str, len: u64, zeroed: bool) -> Result<Vec<u8>, CliError> {
    let oom = || {
        let e = engine::EngineError::OutOfMemory { what, bytes: len };
        CliError::Input(format!("bench: {e}"))
    };
    let len = usize::try_from(len).map_err(|_| oom())?;
    if zeroed {
        return engine::try_zeroed(what, len).map_err(|_| oom());
    }
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| oom())?;
    Ok(v)
}

/// Little-endian bytes of `xs` in `dtype` (nearest-even for the 16-bit types), in one
/// fallibly allocated buffer of exactly `len` bytes (`xs` yields `len / size` values).
/// A `Vec<u8>` from the allocator is at least 8-byte aligned in practice (the CLI has no
/// `unsafe`), and `execute` rechecks alignment anyway.
pub(crate) fn encode(
    dtype: DType,
    xs: impl Iterator<Item = f32>,
    len: u64,
) -> Result<Vec<u8>, CliError> {
    let mut out = allocate("the input buffer", len, false)?;
    match dtype {
        DType::BF16 => {
            xs.for_each(|x| out.extend_from_slice(&half::bf16::from_f32(x).to_bits().to_le_bytes()))
        }
        DType::F16 => {
            xs.for_each(|x| out.extend_from_slice(&half::f16::from_f32(x).to_bits().to_le_bytes()))
        }
        _ => xs.for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
    }
    Ok(out)
}

/// Times `f` (one call per invocation): warm-up, then `reps` repetitions of `inner` calls,
/// `inner` chosen so a repetition lasts at least 20 ms. Returns (median, min) per call.
pub(crate) fn time(reps: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let start = Instant::now();
    let mut calls = 0u32;
    while start.elapsed() < Duration::from_millis(200) || calls < 3 {
        f();
        calls += 1;
    }
    let per_call = start.elapsed() / calls;
    let inner = (Duration::from_millis(20).as_nanos() / per_call.as_nanos().max(1)).max(1) as u32;
    let mut samples: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..inner {
                f();
            }
            t.elapsed() / inner
        })
        .collect();
    samples.sort();
    (samples[samples.len() / 2], samples[0])
}

pub(crate) fn figure(
    name: &str,
    n: usize,
    in_bytes: usize,
    (median, min): (Duration, Duration),
) -> Figure {
    let s = median.as_secs_f64();
    Figure {
        name: name.to_string(),
        median_ns_per_call: s * 1e9,
        min_ns_per_call: min.as_secs_f64() * 1e9,
        elements_per_s: n as f64 / s,
        input_gb_per_s: in_bytes as f64 / s / 1e9,
    }
}

/// Times the pieces of one call split by a partition API (`Prepared::split`), each piece
/// a closure that runs it: each piece lives on a persistent scoped worker (the first on
/// this thread), and every timed call releases the workers through a shared generation
/// counter and waits for their completion count, both spun on (no sleeping, no channel),
/// so neither thread start-up nor wake-up latency is timed.
///
/// The benchmark deliberately does not call `simak::a65::execute_threaded`: that function
/// spawns and joins its scoped threads on every call, and that cost would be timed with
/// the kernel. The pieces come from the same `Prepared::split` as `execute_threaded`'s,
/// so the partition and the bytes are the same.
pub(crate) fn threaded<P>(
    pieces: impl IntoIterator<Item = P>,
    reps: usize,
) -> Result<(Duration, Duration), CliError>
where
    P: FnMut() -> Result<(), simak::a65::ExecuteError> + Send,
{
    let internal = |e: simak::a65::ExecuteError| CliError::Internal(anyhow::anyhow!("{e}"));
    let mut pieces = pieces.into_iter();
    let Some(mut mine) = pieces.next() else {
        return Ok((Duration::ZERO, Duration::ZERO));
    };
    let generation = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failed = Mutex::new(None::<simak::a65::ExecuteError>);
    let result = std::thread::scope(|scope| {
        let mut workers = 0;
        for mut piece in pieces {
            workers += 1;
            let (generation, done, stop, failed) = (&generation, &done, &stop, &failed);
            scope.spawn(move || {
                let mut seen = 0;
                let mut spins = 0u32;
                loop {
                    let g = generation.load(Ordering::Acquire);
                    if g == seen {
                        if stop.load(Ordering::Acquire) {
                            return;
                        }
                        wait_a_little(&mut spins);
                        continue;
                    }
                    spins = 0;
                    seen = g;
                    if let Err(e) = piece() {
                        *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    }
                    done.fetch_add(1, Ordering::AcqRel);
                }
            });
        }
        let mut calls = 0;
        let result = time(reps, || {
            calls += 1;
            generation.fetch_add(1, Ordering::AcqRel);
            if let Err(e) = mine() {
                *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            }
            let mut spins = 0u32;
            while done.load(Ordering::Acquire) < calls * workers {
                wait_a_little(&mut spins);
            }
        });
        stop.store(true, Ordering::Release);
        result
    });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(internal(e)),
        None => Ok(result),
    }
}

/// One step of a busy wait: spin first (no wake-up latency when every thread has a core),
/// then yield the core, so that more threads than cores still make progress.
fn wait_a_little(spins: &mut u32) {
    if *spins < 1 << 14 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Runs `simak bench quant`: the figures of the Quant route and the references.
///
/// # Errors
///
/// Bad input (exit 2) when a buffer cannot be allocated or the library refuses the
/// request; internal when `execute` fails.
pub fn run(args: BenchQuantArgs, ctx: &Context) -> Result<Done<BenchSummary>, CliError> {
    if args.elements.0.len() > 1 {
        return sweep(&args);
    }
    let dtype = DType::from(args.dtype);
    let elements = args.elements.0[0] as usize;
    let threads = args.threads as usize;
    let reps = args.reps as usize;
    let (n, rows, in_row) = match args.layout {
        BenchLayout::Contiguous => (elements, 1, elements),
        BenchLayout::RowPadded => {
            let rows = elements.div_ceil(ROW);
            (rows.saturating_mul(ROW), rows, ROW + ROW_PAD)
        }
    };
    let in_bytes = n.saturating_mul(dtype.size());
    let in_len = (rows as u64)
        .saturating_mul(in_row as u64)
        .saturating_mul(dtype.size() as u64);
    // Allocated (fallibly) before any value is generated: an impossible size fails at once.
    let mut output = allocate("the output buffer", n as u64, true)?;
    let count = rows.saturating_mul(in_row);
    let input = encode(dtype, values(args.values, dtype, count), in_len)?;
    let request = Request {
        input: TensorSpec::strided(
            [rows as u64, ROW.min(n) as u64],
            [(in_row * dtype.size()) as u64, dtype.size() as u64],
            dtype,
        ),
        output: TensorSpec::contiguous([rows as u64, ROW.min(n) as u64], DType::I8),
        params: Params::new(0.5).with_zero_point(3),
    };
    let contiguous = Request {
        input: TensorSpec::contiguous([1, n as u64], dtype),
        output: TensorSpec::contiguous([1, n as u64], DType::I8),
        params: request.params,
    };
    let request = match args.layout {
        BenchLayout::Contiguous => contiguous,
        BenchLayout::RowPadded => request,
    };
    let plan = check_inference(&request).map_err(|e| CliError::Input(format!("bench: {e}")))?;
    let prepared = match args.level {
        None => prepare(&plan),
        Some(level) => {
            prepare_at(&plan, level).map_err(|e| CliError::Input(format!("bench: --level: {e}")))?
        }
    };
    let levels = level_names(
        Level::ALL
            .into_iter()
            .filter(|&l| prepare_at(&plan, l).is_ok()),
    );
    let internal = |e: simak::a65::ExecuteError| CliError::Internal(anyhow::anyhow!("{e}"));
    execute(&prepared, &input, &mut output).map_err(internal)?;

    warn_threads(threads, ctx);
    let mut figures = Vec::new();
    let quant = if threads > 1 {
        let pieces = prepared
            .split(threads, &input, &mut output)
            .map_err(internal)?;
        threaded(pieces.into_iter().map(|mut p| move || p.run()), reps)?
    } else {
        time(reps, || {
            let _ = execute(&prepared, black_box(&input), black_box(&mut output));
        })
    };
    figures.push(figure(
        &format!("quant {}", prepared.implementation()),
        n,
        in_bytes,
        quant,
    ));
    if args.exact {
        let exact = prepare_exact(&plan);
        let t = time(reps.min(7), || {
            let _ = execute(&exact, black_box(&input), black_box(&mut output));
        });
        figures.push(figure("quant exact-scalar", n, in_bytes, t));
    }
    // Reference: a plain read of the input (sum of its 8-byte words).
    let read = time(reps, || {
        black_box(reference::read(black_box(&input)));
    });
    figures.push(figure("reference: plain read", n, in_bytes, read));
    // Reference: the same traffic as Quant, trivial arithmetic (low byte of each element).
    let trivial = time(reps, || {
        reference::low_bytes(dtype.size(), black_box(&input), black_box(&mut output))
    });
    figures.push(figure("reference: trivial kernel", n, in_bytes, trivial));

    let summary = BenchSummary {
        dtype: dtype.name().to_string(),
        layout: args.layout,
        values: args.values,
        elements: n,
        threads,
        reps,
        route: prepared.implementation().to_string(),
        levels,
        figures,
        sweep: None,
    };
    Ok(Done::summary(summary))
}

/// A contiguous Quant of `n` elements of `dtype` on the peers' parameters, at `level` or
/// the automatic route; with its input (class `class`) and a zeroed output.
fn contiguous_case(
    dtype: DType,
    class: BenchValues,
    n: usize,
    level: Option<Level>,
) -> Result<(simak::a65::quant::Prepared, Vec<u8>, Vec<u8>), CliError> {
    let request = Request {
        input: TensorSpec::contiguous([n as u64], dtype),
        output: TensorSpec::contiguous([n as u64], DType::I8),
        params: Params::new(0.5).with_zero_point(3),
    };
    let plan = check_inference(&request).map_err(|e| CliError::Input(format!("bench: {e}")))?;
    let prepared = match level {
        None => prepare(&plan),
        Some(level) => {
            prepare_at(&plan, level).map_err(|e| CliError::Input(format!("bench: --level: {e}")))?
        }
    };
    let input = encode(dtype, values(class, dtype, n), (n * dtype.size()) as u64)?;
    let output = allocate("the output buffer", n as u64, true)?;
    Ok((prepared, input, output))
}

/// Calls per timed sample of a sweep.
const SWEEP_INNER: u32 = 1000;
/// Elements of the workload whose route and vector block a sweep reports (whole blocks at
/// every level).
const SWEEP_PROBE: usize = 1024;

/// `simak bench quant` with several `--elements`: per N, the median time per call of N
/// elements and of the next multiple of the route's block, samples of the two taken
/// alternately (so drifts of the machine hit both).
fn sweep(args: &BenchQuantArgs) -> Result<Done<BenchSummary>, CliError> {
    if args.layout != BenchLayout::Contiguous || args.threads != 1 {
        return Err(CliError::Input(
            "bench: a sweep of --elements runs the contiguous layout on one thread".into(),
        ));
    }
    let dtype = DType::from(args.dtype);
    let reps = args.reps as usize;
    let internal = |e: simak::a65::ExecuteError| CliError::Internal(anyhow::anyhow!("{e}"));
    let mut rows = Vec::new();
    // The route and block of a workload of whole blocks: a one-element call may take the
    // exact path (automatic selection on x86-64), and is still compared with one block.
    let probe = contiguous_case(dtype, args.values, SWEEP_PROBE, args.level)?.0;
    let block = probe.block_elements();
    let (mut route, mut levels) = (String::new(), Vec::new());
    for &n in &args.elements.0 {
        let n = n as usize;
        let (p, input, mut output) = contiguous_case(dtype, args.values, n, args.level)?;
        let m = n.div_ceil(block) * block;
        let (q, input_m, mut output_m) = contiguous_case(dtype, args.values, m, args.level)?;
        if route.is_empty() {
            route = probe.implementation().to_string();
            levels = level_names(Level::ALL.into_iter().filter(|&l| {
                let plan = check_inference(&Request {
                    input: TensorSpec::contiguous([n as u64], dtype),
                    output: TensorSpec::contiguous([n as u64], DType::I8),
                    params: Params::new(0.5).with_zero_point(3),
                });
                plan.is_ok_and(|plan| prepare_at(&plan, l).is_ok())
            }));
        }
        execute(&p, &input, &mut output).map_err(internal)?;
        execute(&q, &input_m, &mut output_m).map_err(internal)?;
        let sample = |p: &simak::a65::quant::Prepared, i: &[u8], o: &mut [u8]| {
            let t = Instant::now();
            for _ in 0..SWEEP_INNER {
                let _ = execute(p, black_box(i), black_box(&mut *o));
            }
            t.elapsed().as_secs_f64() * 1e9 / SWEEP_INNER as f64
        };
        // Warm-up of both, then alternating samples.
        sample(&p, &input, &mut output);
        sample(&q, &input_m, &mut output_m);
        let (mut a, mut b) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
        for _ in 0..reps {
            a.push(sample(&p, &input, &mut output));
            b.push(sample(&q, &input_m, &mut output_m));
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (ta, tb) = (median(&mut a), median(&mut b));
        rows.push(SweepRow {
            elements: n,
            next_multiple: m,
            median_ns: ta,
            next_multiple_median_ns: tb,
            ratio: ta / tb,
        });
    }
    let worst = rows
        .iter()
        .max_by(|x, y| x.ratio.total_cmp(&y.ratio))
        .map_or((0.0, 0), |r| (r.ratio, r.elements));
    let summary = BenchSummary {
        dtype: dtype.name().to_string(),
        layout: args.layout,
        values: args.values,
        elements: args.elements.0.iter().copied().max().unwrap_or(0) as usize,
        threads: 1,
        reps,
        route,
        levels,
        figures: Vec::new(),
        sweep: Some(Sweep {
            block,
            rows,
            worst_ratio: worst.0,
            worst_elements: worst.1,
        }),
    };
    Ok(Done::summary(summary))
}

/// Warns (text mode) when `threads` exceeds the cores: the figures then measure
/// time-sharing, not the kernel.
pub(crate) fn warn_threads(threads: usize, ctx: &Context) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads > cores && !ctx.json {
        crate::report::emit_stderr(&format!(
            "simak: warning: {threads} threads on {cores} cores: the workers time-share, so the figures do not measure the kernel"
        ));
    }
}

/// The figures as the text report's table (one line per kernel).
pub(crate) fn figure_table(figures: &[Figure]) -> String {
    use std::fmt::Write as _;
    let mut text = format!(
        "{:<32} {:>14} {:>14} {:>10} {:>10}\n",
        "kernel", "median ns/call", "min ns/call", "Gelem/s", "in GB/s"
    );
    for f in figures {
        let _ = writeln!(
            text,
            "{:<32} {:>14.0} {:>14.0} {:>10.3} {:>10.2}",
            f.name,
            f.median_ns_per_call,
            f.min_ns_per_call,
            f.elements_per_s / 1e9,
            f.input_gb_per_s
        );
    }
    text
}

impl report::Summary for BenchSummary {
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut text = format!(
            "quant {} -> i8, {} ({} layout, {} values), {}, median of {}\n",
            self.dtype,
            crate::report::count(self.elements as u64, "element", "elements"),
            clap::ValueEnum::to_possible_value(&self.layout)
                .map_or_else(String::new, |v| v.get_name().to_owned()),
            clap::ValueEnum::to_possible_value(&self.values)
                .map_or_else(String::new, |v| v.get_name().to_owned()),
            crate::report::count(self.threads as u64, "thread", "threads"),
            crate::report::count(self.reps as u64, "repetition", "repetitions"),
        );
        let _ = writeln!(text, "levels on this CPU: {}", self.levels.join(", "));
        if let Some(sweep) = &self.sweep {
            let _ = writeln!(
                text,
                "sweep, route {}, block {} elements, {} calls per sample, samples interleaved",
                self.route, sweep.block, SWEEP_INNER
            );
            let _ = writeln!(
                text,
                "{:>8} {:>10} {:>12} {:>12} {:>7}",
                "N", "next mult", "median ns", "next ns", "ratio"
            );
            for r in &sweep.rows {
                let _ = writeln!(
                    text,
                    "{:>8} {:>10} {:>12.1} {:>12.1} {:>7.3}",
                    r.elements, r.next_multiple, r.median_ns, r.next_multiple_median_ns, r.ratio
                );
            }
            let _ = writeln!(
                text,
                "worst ratio {:.3} at N = {}",
                sweep.worst_ratio, sweep.worst_elements
            );
            return text;
        }
        text.push_str(&figure_table(&self.figures));
        text
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn elements_take_counts_ranges_and_lists() {
        assert_eq!(parse_elements("64"), Ok(Elements(vec![64])));
        assert_eq!(parse_elements("1..=3,7"), Ok(Elements(vec![1, 2, 3, 7])));
        assert_eq!(parse_elements("7,63,64"), Ok(Elements(vec![7, 63, 64])));
        assert_eq!(parse_elements("1..=300").map(|e| e.0.len()), Ok(300));
        for bad in ["0", "", "5..=3", "1..=5000", "x", "1..3", "2147483649"] {
            assert!(parse_elements(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn hostile_values_stay_in_their_class() {
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            let size = dtype.size();
            let bytes = encode(
                dtype,
                values(BenchValues::Subnormal, dtype, 300),
                300 * size as u64,
            )
            .unwrap();
            assert_eq!(bytes.len(), 300 * size);
            for c in bytes.chunks_exact(size) {
                let bits = c.iter().rev().fold(0u32, |a, &b| (a << 8) | b as u32);
                let (exp, mant) = match dtype {
                    DType::F32 => ((bits >> 23) & 0xff, bits & 0x7f_ffff),
                    DType::BF16 => ((bits >> 7) & 0xff, bits & 0x7f),
                    _ => ((bits >> 10) & 0x1f, bits & 0x3ff),
                };
                assert!(
                    exp == 0 && mant != 0,
                    "{dtype}: 0x{bits:x} is not subnormal"
                );
            }
        }
    }

    /// The input bytes as the buffered generator built them before generation streamed
    /// into one fallible buffer (whole `Vec<f32>`, ties patched afterwards, words, bytes).
    fn buffered_reference(class: BenchValues, dtype: DType, n: usize) -> Vec<u8> {
        let mut xs: Vec<f32> = match class {
            BenchValues::Normal => {
                let mut rng = Pcg32::new(0x00b3_4c4d_2026_1129, 7);
                (0..n)
                    .map(|_| {
                        let u = (unit(&mut rng) as f64).max(1.0 / 16_777_216.0);
                        let v = unit(&mut rng) as f64;
                        (100.0 * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
                    })
                    .collect()
            }
            other => values(other, dtype, n).collect(),
        };
        if class == BenchValues::Normal {
            for x in xs.iter_mut().step_by(16) {
                *x = 2.0 * (x.floor() + 0.5);
            }
        }
        xs.iter()
            .flat_map(|x| match dtype {
                DType::BF16 => half::bf16::from_f32(*x).to_bits().to_le_bytes().to_vec(),
                DType::F16 => half::f16::from_f32(*x).to_bits().to_le_bytes().to_vec(),
                _ => x.to_le_bytes().to_vec(),
            })
            .collect()
    }

    #[test]
    fn streamed_inputs_are_the_buffered_bytes() {
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            for class in [
                BenchValues::Normal,
                BenchValues::Subnormal,
                BenchValues::Nan,
                BenchValues::Saturating,
            ] {
                let n = 4099;
                let len = (n * dtype.size()) as u64;
                let streamed = encode(dtype, values(class, dtype, n), len).unwrap();
                assert_eq!(
                    streamed,
                    buffered_reference(class, dtype, n),
                    "{dtype} {class:?}"
                );
            }
        }
    }

    #[test]
    fn impossible_buffers_are_errors_not_aborts() {
        let e = allocate("the input buffer", u64::MAX / 2, false).unwrap_err();
        assert_eq!(
            e.line(),
            format!(
                "simak: error: bench: cannot allocate the input buffer ({} bytes): out of memory",
                u64::MAX / 2
            )
        );
        assert_eq!(e.exit_code(), std::process::ExitCode::from(2));
        assert!(allocate("the output buffer", (isize::MAX as u64) - 8, true).is_err());
    }

    #[test]
    fn workload_is_the_peers_distribution_with_ties() {
        let xs: Vec<f32> = workload(1 << 16).collect();
        // Elements other than every 16th are plain N(0, 100) samples.
        let plain: Vec<f64> = (0..xs.len())
            .filter(|i| i % 16 != 0)
            .map(|i| xs[i] as f64)
            .collect();
        let mean = plain.iter().sum::<f64>() / plain.len() as f64;
        let var = plain.iter().map(|&x| (x - mean).powi(2)).sum::<f64>() / plain.len() as f64;
        assert!(mean.abs() < 2.0, "mean {mean}");
        assert!((var.sqrt() - 100.0).abs() < 3.0, "std {}", var.sqrt());
        for x in xs.iter().step_by(16) {
            let p = x * 0.5;
            assert_eq!(p - p.floor(), 0.5, "{x} is not a tie");
        }
    }
}
