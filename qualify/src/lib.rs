//! `simak-qualify`: the qualification programme (docs/qualification.md), one subcommand per
//! mode:
//!
//! - `measure`: the latency catalogue ([`catalogue`]) on one backend, each ID timed by
//!   [`measure`], written to a results file ([`results`]) outside the source tree (by
//!   default under `target/qualify/`);
//! - `list`: the IDs (`--json`: their definitions);
//! - `compare BASE CAND`: the paired-median gate on two results files ([`gate`]);
//! - `merge PART...`: one results file from the chunks of an interleaved run;
//! - `correctness`: the correctness catalogue on both backends against the independent
//!   oracles ([`correctness`]), no timing (`--list`: the cases).
//!
//! It was `simak qualify` (flags instead of subcommands) until it moved out of the CLI, which
//! no longer links the test fixtures of `simak-tests`; `simak qualify` remains for one
//! release as a shim that runs this binary. The binary (`src/main.rs`) is the top-level
//! parser; this library is an internal seam with no stable API (`doc = false`).

pub mod catalogue;
pub mod correctness;
pub mod gate;
pub mod measure;
pub mod results;
pub mod values;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use simak_cli::error::CliError;
use simak_cli::output::{Format, Target};
use simak_cli::params::BackendArg;
use simak_cli::report::{self, Context, Done};

use catalogue::Workload;
use measure::Backend;
use results::ResultsFile;

/// Time the latency catalogue (median, p95 and max wall time per call, process CPU time per
/// call) on one backend into a results file.
#[derive(Debug, Args)]
#[command(
    after_help = "The selected IDs are measured and the results written to --output (default: \
                  target/qualify/<backend>-<commit>-<unix time>.json under the current \
                  folder, never replacing a file). `cargo xtask qualify --baseline REV` builds \
                  REV, runs both builds interleaved and applies the gate (`compare`)."
)]
pub struct MeasureArgs {
    /// Select IDs: a glob over the whole ID when it has `*`, `?` or `[`, else a substring.
    #[arg(long, value_name = "PATTERN")]
    filter: Option<String>,
    /// Where the measured workloads run: `a65`, or `ev74-sim` (Runtime latency through the
    /// simulated transport; QuantTess IDs are skipped, it has no EV74 entry).
    #[arg(long, value_enum, default_value_t = BackendArg::A65)]
    backend: BackendArg,
    /// EV74 workers (1 to 4; default 4); --backend ev74-sim only.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4))]
    workers: Option<u64>,
    /// Samples per ID (each sample at least 0.5 ms of calls on the A65).
    #[arg(long, value_name = "R", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=1000))]
    reps: u64,
    /// Measure only chunk I of N equal parts of the selection (1-based), for interleaved
    /// runs of two builds; with more chunks than IDs some chunks are empty.
    #[arg(long, value_name = "I/N")]
    chunk: Option<Chunk>,
    /// The results file to write (.json).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Print the IDs of the latency catalogue (with --json: a list of objects with `id`, `op`,
/// `kind` and the workload's definition).
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Select IDs: a glob over the whole ID when it has `*`, `?` or `[`, else a substring.
    #[arg(long, value_name = "PATTERN")]
    filter: Option<String>,
}

/// Compare two results files with the paired-median gate; exit 3 when it fails.
#[derive(Debug, Args)]
#[command(
    after_help = "The gate fails (exit 3) when the median of any ID's paired sample ratios \
                  candidate/baseline exceeds --threshold."
)]
pub struct CompareArgs {
    /// The baseline's results file.
    #[arg(value_name = "BASE")]
    base: PathBuf,
    /// The candidate's results file.
    #[arg(value_name = "CAND")]
    cand: PathBuf,
    /// The gate's threshold on each ID's median ratio candidate/baseline.
    #[arg(long, value_name = "RATIO", default_value_t = gate::DEFAULT_THRESHOLD)]
    threshold: f64,
}

/// Merge the results files of the chunks of one run into one.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The parts, in order.
    #[arg(required = true, num_args = 1.., value_name = "PART")]
    parts: Vec<PathBuf>,
    /// The merged file to write (.json).
    #[arg(long, short = 'o', value_name = "FILE", required = true)]
    output: PathBuf,
    /// The parts are rounds of the same selection (`cargo xtask qualify --rounds`): an ID
    /// in several parts gets their samples concatenated in part order (each part's pairs
    /// stay aligned when every part took the same --reps), its median, p95 and max
    /// recomputed and its CPU time per call averaged. Without it an ID in two parts is an
    /// error.
    #[arg(long)]
    concat: bool,
}

/// Run the correctness catalogue on both backends against the independent oracles, without
/// timing; exit 3 on any mismatch.
#[derive(Debug, Args)]
pub struct CorrectnessArgs {
    /// Print the cases instead of running them (with --json: `id`, `op` and `kind`).
    #[arg(long)]
    list: bool,
    /// Select cases: a glob over the whole ID when it has `*`, `?` or `[`, else a substring.
    #[arg(long, value_name = "PATTERN")]
    filter: Option<String>,
    /// Test hook: corrupt one output byte of this correctness case on both backends.
    #[arg(long, value_name = "ID", hide = true, conflicts_with = "list")]
    plant_mismatch: Option<String>,
}

/// `--chunk I/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// 1-based index.
    pub index: usize,
    /// Number of chunks.
    pub count: usize,
}

impl FromStr for Chunk {
    type Err = String;

    fn from_str(s: &str) -> Result<Chunk, String> {
        let bad = || format!("{s:?} is not I/N with 1 <= I <= N");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Chunk { index, count })
    }
}

impl Chunk {
    /// This chunk's part of `items`.
    pub fn of<T>(self, items: &[T]) -> &[T] {
        let len = items.len();
        &items[(self.index - 1) * len / self.count..self.index * len / self.count]
    }
}

/// What `simak-qualify` reports.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum QualifySummary {
    /// `list`.
    List(Vec<Workload>),
    /// `correctness --list`.
    ListCorrect(Vec<CaseRow>),
    /// `measure`.
    Run(RunSummary),
    /// `compare`.
    Gate(gate::Report),
    /// `merge`.
    Merge(MergeSummary),
    /// `correctness`.
    Correct(correctness::Outcome),
}

/// A correctness case in `correctness --list --json`.
#[derive(Debug, Serialize)]
pub struct CaseRow {
    /// The case ID.
    pub id: String,
    /// `quant`, `casttess` or `quanttess`.
    pub op: &'static str,
    /// The group.
    pub kind: &'static str,
}

/// One measured ID, as printed.
#[derive(Debug, Serialize)]
pub struct RunRow {
    /// The ID.
    pub id: String,
    /// Median wall ns per call.
    pub median_ns: f64,
    /// p95 wall ns per call.
    pub p95_ns: f64,
    /// Max wall ns per call.
    pub max_ns: f64,
    /// Process CPU ns per call.
    pub cpu_ns_per_call: f64,
    /// Route or kernel level.
    pub route: String,
    /// EV74 only: simulated cycles of the firmware entry (the cost model's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_to_return_simulated_cycles: Option<u64>,
}

/// What a measuring run reports (the results file has every sample).
#[derive(Debug, Serialize)]
pub struct RunSummary {
    /// The results file written.
    pub results_file: PathBuf,
    /// `a65` or `ev74-sim`.
    pub backend: String,
    /// What a sample times, e.g. `a65-execute`.
    pub measures: Vec<String>,
    /// IDs measured.
    pub ids: usize,
    /// Wall seconds of the run.
    pub seconds: f64,
    /// Machine facts.
    pub machine: results::Machine,
    /// Per ID.
    pub rows: Vec<RunRow>,
}

/// What `merge` reports.
#[derive(Debug, Serialize)]
pub struct MergeSummary {
    /// The merged file.
    pub output: PathBuf,
    /// Parts read.
    pub parts: usize,
    /// IDs in the merged file.
    pub ids: usize,
}

fn ns_text(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

impl report::Summary for QualifySummary {
    fn text(&self) -> String {
        let mut t = String::new();
        match self {
            QualifySummary::List(ws) => {
                for w in ws {
                    let _ = writeln!(t, "{}", w.id);
                }
            }
            QualifySummary::ListCorrect(cs) => {
                for c in cs {
                    let _ = writeln!(t, "{}", c.id);
                }
            }
            QualifySummary::Run(r) => {
                let _ = writeln!(
                    t,
                    "{:<72} {:>12} {:>12} {:>12} {:>12}  route",
                    "id", "median", "p95", "max", "cpu/call"
                );
                for row in &r.rows {
                    let _ = writeln!(
                        t,
                        "{:<72} {:>12} {:>12} {:>12} {:>12}  {}",
                        row.id,
                        ns_text(row.median_ns),
                        ns_text(row.p95_ns),
                        ns_text(row.max_ns),
                        ns_text(row.cpu_ns_per_call),
                        match row.entry_to_return_simulated_cycles {
                            Some(c) => format!("{} ({c} simulated cycles)", row.route),
                            None => row.route.clone(),
                        }
                    );
                }
                let _ = writeln!(
                    t,
                    "{} on {} ({}) in {:.1} s; machine: {}, {} CPUs, commit {}{}\nresults: {}",
                    report::count(r.ids as u64, "ID", "IDs"),
                    r.backend,
                    r.measures.join(", "),
                    r.seconds,
                    r.machine.cpu_model.as_deref().unwrap_or("unknown CPU"),
                    r.machine.logical_cpus,
                    r.machine.commit.as_deref().unwrap_or("unknown"),
                    if r.machine.dirty == Some(true) {
                        " (modified)"
                    } else {
                        ""
                    },
                    r.results_file.display()
                );
            }
            QualifySummary::Gate(g) => {
                for w in &g.warnings {
                    let _ = writeln!(t, "warning: {w}");
                }
                let shown: Vec<&gate::Row> = g
                    .rows
                    .iter()
                    .filter(|r| r.fails || r.moved != "same")
                    .collect();
                if !shown.is_empty() {
                    let _ = writeln!(
                        t,
                        "{:<72} {:>8} {:>8} {:>8}  verdict",
                        "id (moved beyond the noise or failed)", "median", "p95", "max"
                    );
                    for r in &shown {
                        let _ = writeln!(
                            t,
                            "{:<72} {:>7.3}x {:>7.3}x {:>7.3}x  {}{}",
                            r.id,
                            r.median_ratio,
                            r.p95_ratio,
                            r.max_ratio,
                            r.moved,
                            if r.fails { ", FAILS" } else { "" }
                        );
                    }
                }
                let count = |m: &str| g.rows.iter().filter(|r| r.moved == m).count();
                let medians: Vec<f64> = g.rows.iter().map(|r| r.median_ratio).collect();
                let _ = writeln!(
                    t,
                    "{} compared ({} backend): {} slower, {} faster beyond the noise; median of the medians {:.3}x",
                    report::count(g.rows.len() as u64, "ID", "IDs"),
                    g.backend,
                    count("slower"),
                    count("faster"),
                    measure::median(&medians)
                );
                if !g.only_in_baseline.is_empty() || !g.only_in_candidate.is_empty() {
                    let _ = writeln!(
                        t,
                        "not compared: {} only in the baseline, {} only in the candidate",
                        g.only_in_baseline.len(),
                        g.only_in_candidate.len()
                    );
                }
                let _ = writeln!(
                    t,
                    "gate (median ratio <= {}): {}",
                    g.threshold,
                    if g.passed() {
                        "PASSED".to_owned()
                    } else {
                        format!(
                            "FAILED on {}",
                            report::count(g.failed.len() as u64, "ID", "IDs")
                        )
                    }
                );
            }
            QualifySummary::Merge(m) => {
                let _ = writeln!(
                    t,
                    "merged {} into {} ({})",
                    report::count(m.parts as u64, "part", "parts"),
                    m.output.display(),
                    report::count(m.ids as u64, "ID", "IDs")
                );
            }
            QualifySummary::Correct(o) => {
                for (group, n) in &o.cases {
                    let _ = writeln!(t, "{group:<18} {n:>5} cases");
                }
                for m in o.mismatches.iter().take(20) {
                    let _ = writeln!(t, "MISMATCH {} on {}: {}", m.id, m.backend, m.detail);
                }
                if o.mismatches.len() > 20 {
                    let _ = writeln!(t, "… and {} more", o.mismatches.len() - 20);
                }
                let backends = match o.ev74_cases {
                    0 => "a65".to_owned(),
                    n if n == o.total => "a65 and ev74-sim".to_owned(),
                    n => format!("a65 ({n} also on ev74-sim)"),
                };
                let _ = writeln!(
                    t,
                    "correctness: {} on {backends}, {} bytes compared: {}",
                    report::count(o.total as u64, "case", "cases"),
                    o.bytes_compared,
                    if o.mismatches.is_empty() {
                        "PASSED".to_owned()
                    } else {
                        format!("FAILED ({} mismatches)", o.mismatches.len())
                    }
                );
            }
        }
        t
    }

    fn quiet_text(&self) -> Option<String> {
        match self {
            QualifySummary::Gate(_) | QualifySummary::Correct(_) => {
                self.text().lines().last().map(|l| format!("{l}\n"))
            }
            _ => None,
        }
    }

    fn status(&self) -> Result<(), CliError> {
        match self {
            QualifySummary::Gate(g) if !g.passed() => Err(CliError::Failed(format!(
                "qualify: the gate failed on {}: {}",
                report::count(g.failed.len() as u64, "ID", "IDs"),
                g.failed.join(", ")
            ))),
            QualifySummary::Correct(o) if !o.mismatches.is_empty() => {
                Err(CliError::Failed(format!(
                    "qualify: {} in the correctness catalogue (first: {} on {})",
                    report::count(o.mismatches.len() as u64, "mismatch", "mismatches"),
                    o.mismatches[0].id,
                    o.mismatches[0].backend
                )))
            }
            _ => Ok(()),
        }
    }
}

/// A progress bar over `len` items on stderr (hidden under `-q`, and by indicatif when
/// stderr is not a terminal).
fn bar(ctx: &Context, len: usize, what: &'static str) -> ProgressBar {
    if ctx.quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{prefix} [{wide_bar}] {pos}/{len} {msg}, {elapsed}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("qualify");
    bar.set_message(what);
    bar
}

fn input(e: impl std::fmt::Display) -> CliError {
    CliError::Input(format!("qualify: {e}"))
}

fn json_output(
    ctx_flag: &str,
    path: &Path,
    value: &impl Serialize,
    derived: bool,
) -> Result<simak_cli::output::Staged, CliError> {
    let target = if derived {
        Target::derived("the default results file", ctx_flag, path, Format::Json)?
    } else {
        Target::new(ctx_flag, path, Format::Json)?
    };
    target.stage(|w| {
        serde_json::to_writer_pretty(&mut *w, value).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })
}

/// The op a correctness case runs, from what it converts into.
fn case_op(case: &correctness::Case) -> &'static str {
    match case.target {
        correctness::Target::Quant { .. } => "quant",
        correctness::Target::Tiled(_) => "casttess",
        correctness::Target::QuantTiled { .. } => "quanttess",
        correctness::Target::Detess { convert, .. } => match convert {
            correctness::Convert::None => "detess",
            correctness::Convert::Cast => "detesscast",
            correctness::Convert::Dequant { .. } => "detessdequant",
        },
        correctness::Target::Dequant { .. } => "dequant",
        correctness::Target::Preproc { .. } => "preproc",
    }
}

/// Runs `simak-qualify list`.
///
/// # Errors
///
/// Bad input (exit 2) for an invalid filter.
pub fn run_list(args: ListArgs) -> Result<Done<QualifySummary>, CliError> {
    let keep = catalogue::matcher(args.filter.as_deref()).map_err(input)?;
    let selected: Vec<Workload> = catalogue::catalogue()
        .into_iter()
        .filter(|w| keep(&w.id))
        .collect();
    Ok(Done::summary(QualifySummary::List(selected)))
}

/// Runs `simak-qualify compare`.
///
/// # Errors
///
/// Bad input (exit 2) for a threshold that is not a positive ratio or an unreadable or
/// mismatched results file. The gate's verdict is reported by the summary's status (exit 3).
pub fn run_compare(args: CompareArgs) -> Result<Done<QualifySummary>, CliError> {
    if !(args.threshold.is_finite() && args.threshold > 0.0) {
        return Err(input(format!(
            "--threshold {} is not a positive ratio",
            args.threshold
        )));
    }
    let base = ResultsFile::read(&args.base).map_err(input)?;
    let cand = ResultsFile::read(&args.cand).map_err(input)?;
    let report = gate::compare(&base, &cand, args.threshold).map_err(input)?;
    Ok(Done::summary(QualifySummary::Gate(report)))
}

/// Runs `simak-qualify merge`.
///
/// # Errors
///
/// Bad input (exit 2) for an unreadable part, parts of another backend or commit, an ID in
/// two parts, or an output the tool refuses.
pub fn run_merge(args: MergeArgs) -> Result<Done<QualifySummary>, CliError> {
    merge(&args.parts, &args.output, args.concat)
}

/// Runs `simak-qualify correctness`.
///
/// # Errors
///
/// Bad input (exit 2) for an invalid filter, an empty selection or a planted mismatch
/// outside it. The catalogue's verdict is reported by the summary's status (exit 3).
pub fn run_correctness(
    args: CorrectnessArgs,
    ctx: &Context,
) -> Result<Done<QualifySummary>, CliError> {
    let keep = catalogue::matcher(args.filter.as_deref()).map_err(input)?;
    let cases: Vec<correctness::Case> = correctness::catalogue()
        .into_iter()
        .filter(|c| keep(&c.id))
        .collect();
    if args.list {
        return Ok(Done::summary(QualifySummary::ListCorrect(
            cases
                .iter()
                .map(|c| CaseRow {
                    id: c.id.clone(),
                    op: case_op(c),
                    kind: c.group,
                })
                .collect(),
        )));
    }
    if cases.is_empty() {
        return Err(input("--filter selects no correctness case"));
    }
    if let Some(id) = &args.plant_mismatch
        && !cases.iter().any(|c| &c.id == id)
    {
        return Err(input(format!(
            "--plant-mismatch {id}: no such selected case"
        )));
    }
    let bar = bar(ctx, cases.len(), "cases");
    let outcome = correctness::run(&cases, args.plant_mismatch.as_deref(), &|| bar.inc(1));
    bar.finish_and_clear();
    Ok(Done::summary(QualifySummary::Correct(outcome)))
}

/// Runs `simak-qualify measure`.
///
/// # Errors
///
/// Bad input (exit 2) for an invalid filter, an empty selection or an output the tool
/// refuses; internal (exit 1) when a measured call fails.
pub fn run_measure(args: MeasureArgs, ctx: &Context) -> Result<Done<QualifySummary>, CliError> {
    let keep = catalogue::matcher(args.filter.as_deref()).map_err(input)?;
    let backend = match args.backend.with_workers(args.workers)? {
        simak_cli::engine::Backend::A65 => Backend::A65,
        simak_cli::engine::Backend::Ev74Sim { workers } => Backend::Ev74Sim(workers),
    };
    let selected: Vec<Workload> = catalogue::catalogue()
        .into_iter()
        .filter(|w| keep(&w.id))
        .collect();
    if selected.is_empty() {
        return Err(input(
            "--filter selects no ID (simak-qualify list prints them)".to_owned(),
        ));
    }
    let selected: Vec<Workload> = selected
        .into_iter()
        .filter(|w| w.runs_on(backend.name()))
        .collect();
    if selected.is_empty() {
        return Err(input(format!(
            "the selection has no ID that runs on {}",
            backend.name()
        )));
    }
    // A chunk may be empty (more chunks than IDs): its results file has no results.
    let selected = match args.chunk {
        Some(c) => c.of(&selected).to_vec(),
        None => selected,
    };
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let machine = results::machine();
    // The output is checked before any work.
    let (path, derived) = match &args.output {
        Some(p) => (p.clone(), false),
        None => {
            let dir = PathBuf::from("target").join("qualify");
            std::fs::create_dir_all(&dir).map_err(|e| {
                CliError::Input(format!("{}: cannot create the folder: {e}", dir.display()))
            })?;
            let commit = machine
                .commit
                .as_deref()
                .map_or("nogit", |c| &c[..c.len().min(12)]);
            (
                dir.join(format!("{}-{commit}-{started_unix}.json", backend.name())),
                true,
            )
        }
    };
    if derived {
        Target::derived("the default results file", "--output", &path, Format::Json)?;
    } else {
        Target::new("--output", &path, Format::Json)?;
    }
    let device = match backend {
        Backend::Ev74Sim(workers) => Some(measure::Device::connect(workers).map_err(input)?),
        Backend::A65 => None,
    };
    let start = Instant::now();
    let bar = bar(ctx, selected.len(), "IDs");
    let mut measured = Vec::with_capacity(selected.len());
    for w in &selected {
        let r = measure::measure(w, backend, device.as_ref(), args.reps as usize)
            .map_err(|e| CliError::Internal(anyhow::anyhow!("qualify: {e}")))?;
        measured.push(r);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let mut measures: Vec<String> = Vec::new();
    for r in &measured {
        if !measures.contains(&r.measure) {
            measures.push(r.measure.clone());
        }
    }
    let file = ResultsFile {
        format: results::FORMAT.to_owned(),
        backend: backend.name().to_owned(),
        workers: match backend {
            Backend::Ev74Sim(w) => Some(w),
            Backend::A65 => None,
        },
        reps: args.reps as usize,
        filter: args.filter.clone(),
        chunk: args.chunk.map(|c| format!("{}/{}", c.index, c.count)),
        started_unix,
        seconds,
        machine: machine.clone(),
        results: measured,
    };
    let staged = json_output("--output", &path, &file, derived)?;
    let summary = RunSummary {
        results_file: path,
        backend: file.backend.clone(),
        measures,
        ids: file.results.len(),
        seconds,
        machine,
        rows: file
            .results
            .iter()
            .map(|r| RunRow {
                id: r.id.clone(),
                median_ns: r.median_ns,
                p95_ns: r.p95_ns,
                max_ns: r.max_ns,
                cpu_ns_per_call: r.cpu_ns_per_call,
                route: r.route.clone(),
                entry_to_return_simulated_cycles: r.entry_to_return_simulated_cycles,
            })
            .collect(),
    };
    Ok(Done::new(QualifySummary::Run(summary), vec![staged]))
}

/// `merge PART... --output FILE`: the parts' results in the order given.
fn merge(parts: &[PathBuf], output: &Path, concat: bool) -> Result<Done<QualifySummary>, CliError> {
    let mut merged: Option<ResultsFile> = None;
    for p in parts {
        let part = ResultsFile::read(p).map_err(input)?;
        match &mut merged {
            None => {
                merged = Some(ResultsFile {
                    chunk: None,
                    ..part
                })
            }
            Some(m) => {
                if m.backend != part.backend || m.machine.commit != part.machine.commit {
                    return Err(input(format!(
                        "{}: another backend or commit than {}",
                        p.display(),
                        parts[0].display()
                    )));
                }
                for r in part.results {
                    match m.results.iter_mut().find(|x| x.id == r.id) {
                        Some(x) if concat => concat_samples(x, &r),
                        Some(_) => {
                            return Err(input(format!(
                                "{}: ID {} is in two parts",
                                p.display(),
                                r.id
                            )));
                        }
                        None => m.results.push(r),
                    }
                }
                m.seconds += part.seconds;
                m.started_unix = m.started_unix.min(part.started_unix);
            }
        }
    }
    let merged = merged.ok_or_else(|| input("merge needs at least one part"))?;
    let staged = json_output("--output", output, &merged, false)?;
    Ok(Done::new(
        QualifySummary::Merge(MergeSummary {
            output: output.to_owned(),
            parts: parts.len(),
            ids: merged.results.len(),
        }),
        vec![staged],
    ))
}

/// Appends the samples of `more` (a later round of the same ID) to `into` and recomputes
/// its figures: median, p95 (nearest rank) and max of all samples, CPU time per call
/// weighted by each side's sample count.
fn concat_samples(into: &mut measure::IdResult, more: &measure::IdResult) {
    let (a, b) = (into.samples_ns.len() as f64, more.samples_ns.len() as f64);
    if a + b > 0.0 {
        into.cpu_ns_per_call = (into.cpu_ns_per_call * a + more.cpu_ns_per_call * b) / (a + b);
    }
    into.samples_ns.extend_from_slice(&more.samples_ns);
    let mut sorted = into.samples_ns.clone();
    sorted.sort_by(f64::total_cmp);
    into.median_ns = measure::median(&sorted);
    into.p95_ns = measure::quantile(&sorted, 0.95);
    into.max_ns = sorted.last().copied().unwrap_or(f64::NAN);
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn concatenated_rounds_pool_the_samples() {
        let one = |samples: &[f64], cpu: f64| measure::IdResult {
            id: "quant/x".into(),
            op: "quant".into(),
            kind: "dense".into(),
            measure: "a65-execute".into(),
            route: "r".into(),
            elements: 1,
            calls_per_sample: 10,
            samples_ns: samples.to_vec(),
            median_ns: 0.0,
            p95_ns: 0.0,
            max_ns: 0.0,
            cpu_ns_per_call: cpu,
            entry_to_return_simulated_cycles: None,
        };
        let mut a = one(&[5.0, 1.0, 3.0], 2.0);
        concat_samples(&mut a, &one(&[2.0, 4.0, 9.0], 4.0));
        // Samples in order taken: the first round's, then the second's (pairs stay aligned).
        assert_eq!(a.samples_ns, [5.0, 1.0, 3.0, 2.0, 4.0, 9.0]);
        // Sorted 1 2 3 4 5 9: median (3 + 4) / 2, p95 the 6th of 6, max 9.
        assert_eq!((a.median_ns, a.p95_ns, a.max_ns), (3.5, 9.0, 9.0));
        assert_eq!(a.cpu_ns_per_call, 3.0);
    }

    #[test]
    fn chunks_partition_the_selection() {
        let items: Vec<usize> = (0..10).collect();
        let mut all = Vec::new();
        for i in 1..=3 {
            all.extend_from_slice(Chunk { index: i, count: 3 }.of(&items));
        }
        assert_eq!(all, items);
        assert!("0/3".parse::<Chunk>().is_err());
        assert!("4/3".parse::<Chunk>().is_err());
        assert_eq!("2/3".parse::<Chunk>(), Ok(Chunk { index: 2, count: 3 }));
    }
}
