//! `sweep`: every FP32 bit pattern (or every N-th) through every Quant route of this CPU and
//! the EV74 numerical entries, against the exact scalar path (Issue 6, SPEC §3, §8, §10).
//!
//! Run through `cargo xtask sweep --fp32 …` (which builds this binary in release mode).
//! The 2^32 patterns (or `⌈2^32 / stride⌉` of them) are cut into chunks; each chunk is one
//! contiguous rank-1 FP32 tensor that goes, for every multiplier × rounding mode, through
//!
//! - the exact integer path of SPEC §3 (`Level::Scalar`, the reference), itself checked
//!   against the independent f64 oracle (`simak_tests::oracle`) on every `--oracle-every`-th
//!   pattern;
//! - every other A65 route this CPU has, forced with `prepare_at`;
//! - the EV74 firmware's numerical entries, called directly on the chunk (the IEEE unit and
//!   the flushing DAZ + FTZ model).
//!
//! Chunks are shared by `--threads` workers (default 2). Progress and an ETA go to stderr;
//! a summary (patterns, mismatches per route, seconds) to stdout as JSON and, with `--json
//! FILE`, to FILE. Exit status 0 when nothing mismatched, 1 on a mismatch, 2 on bad usage.

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use simak::a65::{self, Level};
use simak::arith::quant::Multiplier;
use simak::ev74::firmware::numerics::{self, EntryParams, FlushToZero, Ieee};
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::bytes::Aligned;
use simak_tests::oracle;

const USAGE: &str = "\
Usage: sweep --fp32 [--multiplier BITS]... [--modes all|MODE[,MODE...]] [--stride N]
             [--zero-point Z] [--chunk N] [--threads N] [--oracle-every N] [--json FILE]

Every FP32 bit pattern (every N-th with --stride) through every A65 route of this CPU and
the EV74 numerical entries, compared with the exact scalar path, itself checked against
the f64 oracle on a sample.

  --fp32              the input dtype (the only one; 16-bit dtypes are swept by the tests)
  --multiplier BITS   binary32 bits of a multiplier, hex (0x3f000000); repeatable.
                      Default: 0x3f000000 0x3e99999a 0x00000001 0x7f000000
  --modes LIST        all (default) or a comma list of nearest-even, toward-zero,
                      toward-positive, toward-negative
  --stride N          check patterns 0, N, 2N, ... (default 1: all 2^32)
  --zero-point Z      zero point in [-128, 127] (default 0)
  --chunk N           patterns per chunk (default 1048576)
  --threads N         worker threads (default 2)
  --oracle-every N    check the exact path against the f64 oracle on every N-th pattern
                      (default 4096)
  --json FILE         also write the JSON summary to FILE
";

const DEFAULT_MULTIPLIERS: [u32; 4] = [0x3f00_0000, 0x3e99_999a, 0x0000_0001, 0x7f00_0000];
const MAX_EXAMPLES: usize = 20;

#[derive(Debug, Clone)]
struct Options {
    multipliers: Vec<u32>,
    modes: Vec<Rounding>,
    stride: u64,
    zero_point: i32,
    chunk: u64,
    threads: usize,
    oracle_every: u64,
    json: Option<String>,
}

fn parse_u64(flag: &str, value: &str) -> Result<u64, String> {
    let parsed = match value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => value.replace('_', "").parse(),
    };
    parsed
        .ok()
        .filter(|&v| v > 0)
        .ok_or(format!("`{flag} {value}` is not a positive integer"))
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        multipliers: Vec::new(),
        modes: Rounding::ALL.to_vec(),
        stride: 1,
        zero_point: 0,
        chunk: 1 << 20,
        threads: 2,
        oracle_every: 4096,
        json: None,
    };
    let mut fp32 = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = || {
            rest.next()
                .map(String::as_str)
                .ok_or(format!("`{arg}` needs a value"))
        };
        match arg.as_str() {
            "--fp32" => fp32 = true,
            "--multiplier" => {
                let v = value()?;
                let hex = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X"));
                let bits = u32::from_str_radix(&hex.unwrap_or(v).replace('_', ""), 16)
                    .map_err(|_| format!("`--multiplier {v}` is not hex binary32 bits"))?;
                Multiplier::from_bits(bits)
                    .map_err(|e| format!("`--multiplier {v}` is not a valid multiplier: {e}"))?;
                options.multipliers.push(bits);
            }
            "--modes" => {
                let v = value()?;
                options.modes = if v == "all" {
                    Rounding::ALL.to_vec()
                } else {
                    v.split(',')
                        .map(|name| {
                            Rounding::ALL
                                .into_iter()
                                .find(|r| r.name() == name)
                                .ok_or(format!("unknown rounding mode `{name}`"))
                        })
                        .collect::<Result<_, _>>()?
                };
            }
            "--stride" => options.stride = parse_u64(arg, value()?)?,
            "--chunk" => options.chunk = parse_u64(arg, value()?)?,
            "--threads" => options.threads = parse_u64(arg, value()?)? as usize,
            "--oracle-every" => options.oracle_every = parse_u64(arg, value()?)?,
            "--zero-point" => {
                let v = value()?;
                options.zero_point = v
                    .parse()
                    .ok()
                    .filter(|z| (-128..=127).contains(z))
                    .ok_or(format!("`--zero-point {v}` is not in [-128, 127]"))?;
            }
            "--json" => options.json = Some(value()?.to_owned()),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    if !fp32 {
        return Err("`--fp32` is required (the sweep covers FP32 inputs)".to_owned());
    }
    if options.multipliers.is_empty() {
        options.multipliers = DEFAULT_MULTIPLIERS.to_vec();
    }
    Ok(options)
}

/// One implementation compared with the exact path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// An A65 route forced with `prepare_at`.
    A65(Level),
    /// The firmware entry on the IEEE unit.
    Ev74Ieee,
    /// The firmware entry on the flushing (DAZ + FTZ) unit model.
    Ev74Ftz,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::A65(route) => route.name(),
            Target::Ev74Ieee => "ev74-entry-ieee",
            Target::Ev74Ftz => "ev74-entry-daz-ftz",
        }
    }
}

/// The targets this machine can run: every non-exact A65 route it has (probed on a
/// one-element plan for each mode), then the EV74 entries.
fn targets(modes: &[Rounding]) -> Vec<Target> {
    let mut out = Vec::new();
    for route in Level::ALL.into_iter().rev() {
        if route == Level::Scalar {
            continue;
        }
        let available = modes.iter().all(|&rounding| {
            let plan = contiguous_plan(16, DEFAULT_MULTIPLIERS[0], 0, rounding);
            a65::quant::prepare_at(&plan, route).is_ok()
        });
        if available {
            out.push(Target::A65(route));
        }
    }
    out.push(Target::Ev74Ieee);
    out.push(Target::Ev74Ftz);
    out
}

fn contiguous_plan(
    n: u64,
    multiplier: u32,
    zero_point: i32,
    rounding: Rounding,
) -> simak::ops::quant::Plan {
    check_inference(&Request {
        input: TensorSpec::contiguous([n], DType::F32),
        output: TensorSpec::contiguous([n], DType::I8),
        params: Params::from_bits(multiplier)
            .with_zero_point(zero_point)
            .with_rounding(rounding),
    })
    .expect("a contiguous FP32 request is admitted")
}

/// One mismatch, for the report.
#[derive(Debug, Clone)]
struct Example {
    target: &'static str,
    bits: u32,
    multiplier: u32,
    rounding: Rounding,
    got: i8,
    want: i8,
}

/// Per-worker tallies, merged at the end.
#[derive(Debug, Clone, Default)]
struct Tally {
    /// Per target: (elements compared, mismatches).
    targets: Vec<(u64, u64)>,
    /// Per target, then the exact path last: thread-seconds spent running it.
    seconds: Vec<f64>,
    oracle_checked: u64,
    oracle_mismatches: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        if self.targets.len() < other.targets.len() {
            self.targets.resize(other.targets.len(), (0, 0));
        }
        for (a, b) in self.targets.iter_mut().zip(&other.targets) {
            a.0 += b.0;
            a.1 += b.1;
        }
        if self.seconds.len() < other.seconds.len() {
            self.seconds.resize(other.seconds.len(), 0.0);
        }
        for (a, b) in self.seconds.iter_mut().zip(&other.seconds) {
            *a += b;
        }
        self.oracle_checked += other.oracle_checked;
        self.oracle_mismatches += other.oracle_mismatches;
    }
}

struct Shared<'a> {
    options: &'a Options,
    targets: &'a [Target],
    patterns: u64,
    chunks: u64,
    next_chunk: AtomicU64,
    done_patterns: AtomicU64,
    examples: Mutex<Vec<Example>>,
}

impl Shared<'_> {
    fn record(&self, example: Example) {
        let mut examples = self.examples.lock().unwrap_or_else(|e| e.into_inner());
        if examples.len() < MAX_EXAMPLES {
            examples.push(example);
        }
    }
}

/// Takes chunks until none is left.
fn worker(shared: &Shared<'_>) -> Tally {
    let options = shared.options;
    let chunk = options.chunk as usize;
    let mut tally = Tally {
        targets: vec![(0, 0); shared.targets.len()],
        seconds: vec![0.0; shared.targets.len() + 1],
        ..Tally::default()
    };
    let mut input = Aligned::new(chunk * 4, 0);
    let mut bits = vec![0u32; chunk];
    let mut want = vec![0u8; chunk];
    let mut got = vec![0u8; chunk];
    loop {
        let index = shared.next_chunk.fetch_add(1, Ordering::Relaxed);
        if index >= shared.chunks {
            return tally;
        }
        let first = index * options.chunk;
        let n = options.chunk.min(shared.patterns - first) as usize;
        for (k, (b, dst)) in bits[..n]
            .iter_mut()
            .zip(input.as_mut_slice().chunks_exact_mut(4))
            .enumerate()
        {
            *b = ((first + k as u64) * options.stride) as u32;
            dst.copy_from_slice(&b.to_le_bytes());
        }
        let input = &input.as_slice()[..n * 4];
        let (want, got) = (&mut want[..n], &mut got[..n]);
        for &m in &options.multipliers {
            for &rounding in &options.modes {
                let zp = options.zero_point;
                let plan = contiguous_plan(n as u64, m, zp, rounding);
                let exact = a65::quant::prepare_at(&plan, Level::Scalar)
                    .expect("the exact route exists everywhere");
                let clock = Instant::now();
                a65::quant::execute(&exact, input, want).expect("exact execute");
                tally.seconds[shared.targets.len()] += clock.elapsed().as_secs_f64();
                // The exact path against the independent oracle, on a sample.
                let every = options.oracle_every;
                let mut k = (every - first % every) % every;
                while (k as usize) < n {
                    let b = bits[k as usize];
                    let o = oracle::quant(DType::F32, b, m, zp, rounding);
                    tally.oracle_checked += 1;
                    if want[k as usize] as i8 != o {
                        tally.oracle_mismatches += 1;
                        shared.record(Example {
                            target: "exact-vs-oracle",
                            bits: b,
                            multiplier: m,
                            rounding,
                            got: want[k as usize] as i8,
                            want: o,
                        });
                    }
                    k += every;
                }
                let params = EntryParams {
                    multiplier: Multiplier::from_bits(m).expect("checked when parsed"),
                    zero_point: zp,
                };
                for (t, &target) in shared.targets.iter().enumerate() {
                    got.fill(0x5a);
                    let clock = Instant::now();
                    match target {
                        Target::A65(route) => {
                            let prepared = a65::quant::prepare_at(&plan, route)
                                .expect("route probed at start");
                            a65::quant::execute(&prepared, input, got).expect("route execute");
                        }
                        Target::Ev74Ieee | Target::Ev74Ftz => {
                            let entry = if target == Target::Ev74Ieee {
                                numerics::select::<Ieee>(DType::F32, rounding)
                            } else {
                                numerics::select::<FlushToZero>(DType::F32, rounding)
                            }
                            .expect("FP32 has entries");
                            (entry.run)(&params, input, got);
                        }
                    }
                    tally.seconds[t] += clock.elapsed().as_secs_f64();
                    tally.targets[t].0 += n as u64;
                    if got != want {
                        for (k, (&g, &w)) in got.iter().zip(want.iter()).enumerate() {
                            if g != w {
                                tally.targets[t].1 += 1;
                                shared.record(Example {
                                    target: target.name(),
                                    bits: bits[k],
                                    multiplier: m,
                                    rounding,
                                    got: g as i8,
                                    want: w as i8,
                                });
                            }
                        }
                    }
                }
            }
        }
        shared.done_patterns.fetch_add(n as u64, Ordering::Relaxed);
    }
}

fn progress_line(done: u64, total: u64, elapsed: Duration) -> String {
    let fraction = done as f64 / total.max(1) as f64;
    let secs = elapsed.as_secs_f64();
    let eta = if done > 0 {
        format!("{:.0} s", secs / fraction - secs)
    } else {
        "?".to_owned()
    };
    format!(
        "sweep: {done}/{total} patterns ({:.1}%), {:.0} s elapsed, ETA {eta}",
        100.0 * fraction,
        secs
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = match parse(&args) {
        Ok(o) => o,
        Err(message) if message.is_empty() => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let patterns = (1u64 << 32).div_ceil(options.stride);
    // A strided sweep may fit one chunk: cut it finer so that every thread has work.
    let parts = options.threads as u64 * 4;
    if patterns.div_ceil(options.chunk) < parts {
        options.chunk = patterns.div_ceil(parts).max(4096).min(options.chunk);
    }
    let chunks = patterns.div_ceil(options.chunk);
    let targets = targets(&options.modes);
    let names: Vec<&str> = targets.iter().map(|t| t.name()).collect();
    eprintln!(
        "sweep: {patterns} FP32 patterns (stride {}) x {} multipliers x {} modes, zero point {}, \
         against exact-scalar: {}; {} threads",
        options.stride,
        options.multipliers.len(),
        options.modes.len(),
        options.zero_point,
        names.join(", "),
        options.threads
    );
    let shared = Shared {
        options: &options,
        targets: &targets,
        patterns,
        chunks,
        next_chunk: AtomicU64::new(0),
        done_patterns: AtomicU64::new(0),
        examples: Mutex::new(Vec::new()),
    };
    let started = Instant::now();
    let finished = AtomicBool::new(false);
    let terminal = std::io::stderr().is_terminal();
    let mut total = Tally::default();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..options.threads)
            .map(|_| scope.spawn(|| worker(&shared)))
            .collect();
        scope.spawn(|| {
            let mut last_line = Instant::now();
            while !finished.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let done = shared.done_patterns.load(Ordering::Relaxed);
                let line = progress_line(done, patterns, started.elapsed());
                if terminal {
                    eprint!("\r{line}   ");
                } else if last_line.elapsed() >= Duration::from_secs(15) {
                    eprintln!("{line}");
                    last_line = Instant::now();
                }
            }
        });
        for w in workers {
            total.add(&w.join().expect("sweep worker panicked"));
        }
        finished.store(true, Ordering::Relaxed);
    });
    let seconds = started.elapsed().as_secs_f64();
    if terminal {
        eprintln!();
    }
    let configs = (options.multipliers.len() * options.modes.len()) as u64;
    let mismatches: u64 = total.targets.iter().map(|t| t.1).sum::<u64>() + total.oracle_mismatches;
    let routes: serde_json::Map<String, serde_json::Value> = targets
        .iter()
        .zip(&total.targets)
        .zip(&total.seconds)
        .map(|((t, &(checked, bad)), &secs)| {
            (
                t.name().to_owned(),
                json!({
                    "checked": checked,
                    "mismatches": bad,
                    "thread_seconds": (secs * 10.0).round() / 10.0,
                }),
            )
        })
        .collect();
    let exact_seconds = total.seconds.last().copied().unwrap_or(0.0);
    let examples: Vec<serde_json::Value> = shared
        .examples
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|e| {
            json!({
                "target": e.target,
                "input_bits": format!("0x{:08x}", e.bits),
                "multiplier": format!("0x{:08x}", e.multiplier),
                "rounding": e.rounding.name(),
                "got": e.got,
                "want": e.want,
            })
        })
        .collect();
    let summary = json!({
        "dtype": "f32",
        "stride": options.stride,
        "patterns": patterns,
        "multipliers": options.multipliers.iter().map(|m| format!("0x{m:08x}")).collect::<Vec<_>>(),
        "modes": options.modes.iter().map(|r| r.name()).collect::<Vec<_>>(),
        "zero_point": options.zero_point,
        "patterns_checked": patterns * configs,
        "reference": "exact-scalar",
        "reference_thread_seconds": (exact_seconds * 10.0).round() / 10.0,
        "routes": routes,
        "oracle": {
            "every": options.oracle_every,
            "checked": total.oracle_checked,
            "mismatches": total.oracle_mismatches,
        },
        "mismatches": mismatches,
        "examples": examples,
        "threads": options.threads,
        "chunk": options.chunk,
        "seconds": (seconds * 10.0).round() / 10.0,
    });
    let text = serde_json::to_string_pretty(&summary).expect("JSON of plain values");
    println!("{text}");
    let _ = std::io::stdout().flush();
    if let Some(path) = &options.json
        && let Err(e) = std::fs::write(path, format!("{text}\n"))
    {
        eprintln!("error: cannot write {path}: {e}");
        return ExitCode::from(2);
    }
    eprintln!(
        "sweep: {} pattern x config checks, {mismatches} mismatches, {seconds:.1} s",
        patterns * configs
    );
    if mismatches == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
