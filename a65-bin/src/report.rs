//! The end of every command, in one place: a command returns its summary and the files it
//! staged ([`Done`]); [`finish`] publishes the files together, then prints the summary as
//! JSON (`--json`), as text, or not at all (`-q`). Also the shared pieces of the summaries:
//! the quantization table ([`Row`], [`Total`], [`table`]), progress bars and number words.

use std::fmt::Write as _;
use std::io::{self, Write as _};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use serde::Serialize;
use simak::DType;
use simak::ops::quant::Params;

use crate::engine::Quantized;
use crate::error::CliError;
use crate::output::{Staged, commit_all};
use crate::params::exact_decimal;

/// The global flags every command sees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Context {
    /// `-q`: no progress bar and no text summary.
    pub quiet: bool,
    /// `--json`: the summary as JSON on stdout.
    pub json: bool,
}

impl Context {
    /// A progress bar for `prefix` over `elements` in `tensors` tensors ([`progress`]);
    /// hidden under `-q`.
    pub fn progress(&self, prefix: &'static str, tensors: usize, elements: u64) -> ProgressBar {
        progress(prefix, self.quiet, tensors, elements)
    }
}

/// What a command reports once it has succeeded: serialized for `--json`, else its text.
pub trait Summary: Serialize {
    /// The text printed without `--json` and without `-q`.
    fn text(&self) -> String;

    /// The text printed under `-q` without `--json`; nothing by default.
    fn quiet_text(&self) -> Option<String> {
        None
    }

    /// The command's outcome once the summary is printed: a summary may describe a
    /// refusal (a descriptor the device rejects), reported after it.
    ///
    /// # Errors
    ///
    /// The refusal the summary describes.
    fn status(&self) -> Result<(), CliError> {
        Ok(())
    }
}

/// A command's result before anything is published or printed: its summary and the files it
/// staged in full ([`crate::output::Target::stage`]).
#[derive(Debug)]
#[must_use = "a command's result is published and printed by `report::finish`"]
pub struct Done<S> {
    /// The summary to print.
    pub summary: S,
    /// The staged outputs, published in this order.
    pub staged: Vec<Staged>,
}

impl<S> Done<S> {
    /// A result with the outputs `staged`, published in this order.
    pub fn new(summary: S, staged: Vec<Staged>) -> Done<S> {
        Done { summary, staged }
    }

    /// A result that wrote no file.
    pub fn summary(summary: S) -> Done<S> {
        Done {
            summary,
            staged: Vec::new(),
        }
    }
}

/// The common end of every command: publishes the staged outputs together
/// ([`commit_all`]), then prints the summary: pretty JSON with `--json`, nothing (or
/// [`Summary::quiet_text`]) with `-q`, else [`Summary::text`]; then returns
/// [`Summary::status`].
///
/// # Errors
///
/// As [`commit_all`] and [`emit`]; a refusal from [`Summary::status`].
pub fn finish<S: Summary>(ctx: &Context, done: Done<S>) -> Result<(), CliError> {
    let Done { summary, staged } = done;
    commit_all(staged)?;
    let text = if ctx.json {
        let mut s = serde_json::to_string_pretty(&summary).map_err(anyhow::Error::from)?;
        s.push('\n');
        Some(s)
    } else if ctx.quiet {
        summary.quiet_text()
    } else {
        Some(summary.text())
    };
    if let Some(text) = text {
        emit(&text)?;
    }
    summary.status()
}

/// One quantized tensor.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Tensor name (safetensors), file name (npy) or job name (demo).
    pub name: String,
    /// Logical shape in elements.
    pub shape: Vec<u64>,
    /// Input dtype: `f32`, `bf16` or `f16`.
    pub dtype: &'static str,
    /// Multiplier bits as `0x%08x`.
    pub multiplier_bits: String,
    /// The multiplier's exact decimal value.
    pub multiplier: String,
    /// `absmax` when the multiplier was calibrated, else `null`.
    pub calibration: Option<String>,
    /// The largest finite magnitude found by calibration, else `null` (also when the tensor
    /// has no finite nonzero element: see `note`).
    pub abs_max: Option<f32>,
    /// Anything the summary must say about this tensor's parameters (absmax on a tensor
    /// with no finite nonzero element).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
    /// Zero point.
    pub zero_point: i32,
    /// Rounding mode name.
    pub rounding: &'static str,
    /// Number of elements.
    pub elements: u64,
    /// Elements whose `r + zero_point` fell outside [-128, 127].
    pub saturated: u64,
    /// Wall time of the `execute` call, in seconds.
    pub execute_seconds: f64,
    /// Elements per second of the `execute` call (`null` when unmeasurably fast).
    pub elements_per_second: Option<f64>,
    /// Route: the A65 route (diagnostic name) or `ev74-sim (N workers)`.
    pub route: String,
    /// `--backend ev74-sim`: the simulated cost, flattened into the row (absent on the A65).
    #[serde(flatten)]
    pub sim_cost: Option<SimCost>,
    /// `--backend ev74-sim`: the firmware's Quant span kinds, joined by `+` (`dma`,
    /// `direct`, `scatter`, `transpose`, `short-rows`; docs/contract.md §8); absent on the
    /// A65.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ev74_path: Option<String>,
}

/// One worker's share of a [`SimCost`].
#[derive(Debug, Clone, Serialize)]
pub struct WorkerSimCost {
    /// Physical worker ID.
    pub worker: usize,
    /// Simulated cycles of the worker, from its launch to its end, summed over the calls.
    pub simulated_cycles: u64,
    /// Of which the core spent computing (cycles).
    pub compute_cycles: u64,
    /// DMA commands the worker started.
    pub dma_commands: u64,
    /// Global bytes the worker read.
    pub bytes_read: u64,
    /// Global bytes the worker wrote.
    pub bytes_written: u64,
    /// Elements computed on the fast path.
    pub fast_elements: u64,
    /// Elements computed on the fallback (Quant: exact path; CastTess: physical blocks).
    pub fallback_elements: u64,
}

/// The simulated EV74 cost of one tensor under the simulator's cost model
/// (`docs/cost-model.md`; assumptions, not device figures), summed over the device calls
/// the tensor ran in.
#[derive(Debug, Clone, Serialize)]
pub struct SimCost {
    /// Simulated cycles: per call, dispatch plus the slowest worker; summed over calls.
    pub simulated_cycles: u64,
    /// Of which dispatch (cycles before the workers start, descriptor load included).
    pub dispatch_cycles: u64,
    /// DMA commands started.
    pub dma_commands: u64,
    /// Global bytes read by the device (descriptors included).
    pub bytes_read: u64,
    /// Global bytes written by the device.
    pub bytes_written: u64,
    /// Device calls (a large tensor runs in pieces, one call each).
    pub device_calls: u64,
    /// The figures of each configured worker.
    pub per_worker: Vec<WorkerSimCost>,
}

impl SimCost {
    /// The JSON form of `cost`, summed over `calls` device calls.
    pub fn new(cost: &simak::ev74::Cost, calls: u64) -> SimCost {
        SimCost {
            simulated_cycles: cost.simulated_cycles,
            dispatch_cycles: cost.dispatch_cycles,
            dma_commands: cost.dma_commands,
            bytes_read: cost.bytes_read,
            bytes_written: cost.bytes_written,
            device_calls: calls,
            per_worker: cost
                .workers
                .iter()
                .enumerate()
                .map(|(worker, w)| WorkerSimCost {
                    worker,
                    simulated_cycles: w.simulated_cycles,
                    compute_cycles: w.compute_cycles,
                    dma_commands: w.dma_commands,
                    bytes_read: w.bytes_read,
                    bytes_written: w.bytes_written,
                    fast_elements: w.fast_elements,
                    fallback_elements: w.fallback_elements,
                })
                .collect(),
        }
    }

    /// One line of text: `simulated N cycles (M dispatch), D DMA commands, R bytes read,
    /// W bytes written`.
    pub fn text(&self) -> String {
        format!(
            "simulated {} cycles ({} dispatch), {}, {} read, {} written",
            self.simulated_cycles,
            self.dispatch_cycles,
            count(self.dma_commands, "DMA command", "DMA commands"),
            count(self.bytes_read, "byte", "bytes"),
            count(self.bytes_written, "byte", "bytes"),
        )
    }
}

impl Row {
    /// A row for `name` from a quantization result; `calibration` names the method and
    /// the largest finite magnitude it found (`None`: no finite nonzero element).
    pub fn new(
        name: String,
        shape: &[u64],
        dtype: DType,
        result: &Quantized,
        calibration: Option<(&str, Option<f32>)>,
    ) -> Row {
        let Params {
            multiplier_bits,
            zero_point,
            rounding,
        } = result.params;
        Row {
            name,
            shape: shape.to_vec(),
            dtype: dtype.name(),
            multiplier_bits: format!("0x{multiplier_bits:08x}"),
            multiplier: exact_decimal(multiplier_bits),
            calibration: calibration.map(|(c, _)| c.to_owned()),
            abs_max: calibration.and_then(|(_, a)| a),
            note: calibration
                .is_some_and(|(_, a)| a.is_none())
                .then_some(crate::params::ZERO_RANGE_NOTE),
            zero_point,
            rounding: rounding.name(),
            elements: result.elements,
            saturated: result.saturated,
            execute_seconds: result.seconds,
            elements_per_second: result.elements_per_second(),
            route: result.route.clone(),
            sim_cost: result
                .sim_cost
                .as_ref()
                .map(|(cost, calls)| SimCost::new(cost, *calls)),
            ev74_path: (!result.sim_paths.is_empty()).then(|| result.sim_paths.join("+")),
        }
    }
}

/// Totals over all rows.
#[derive(Debug, Clone, Serialize)]
pub struct Total {
    /// Quantized tensors.
    pub tensors: usize,
    /// Elements over all quantized tensors.
    pub elements: u64,
    /// Saturated elements over all quantized tensors.
    pub saturated: u64,
    /// Sum of the `execute` wall times, in seconds.
    pub execute_seconds: f64,
    /// `elements / execute_seconds` (`null` when unmeasurably fast).
    pub elements_per_second: Option<f64>,
}

impl Total {
    /// Totals of `rows`.
    pub fn of(rows: &[Row]) -> Total {
        let elements = rows.iter().map(|r| r.elements).sum();
        let execute_seconds: f64 = rows.iter().map(|r| r.execute_seconds).sum();
        Total {
            tensors: rows.len(),
            elements,
            saturated: rows.iter().map(|r| r.saturated).sum(),
            execute_seconds,
            elements_per_second: (execute_seconds > 0.0).then(|| elements as f64 / execute_seconds),
        }
    }
}

/// Prints `text` on stdout; a closed stdout (e.g. `| head`) is not a failure.
///
/// # Errors
///
/// [`CliError::Write`] (exit 1) when stdout fails otherwise (e.g. a full disk behind it).
pub fn emit(text: &str) -> Result<(), CliError> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .or_else(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(e)
            }
        })
        .map_err(|e| CliError::Write(format!("standard output: cannot write the summary: {e}")))
}

/// Prints one line on stderr (errors and warnings). A failing stderr is ignored: there is
/// nowhere left to report it, and the exit status still tells.
pub fn emit_stderr(line: &str) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "{line}").and_then(|()| stderr.flush());
}

/// Prints a command-line parsing error as one line (`simak: error: usage: …`) and gives exit
/// code 2; help and version requests print as clap prints them (and exit). Shared by the
/// `simak` and `simak-qualify` binaries.
pub fn usage_error(e: clap::Error) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            let text = e.render().to_string();
            let kept: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("Usage:")
                        && !l.starts_with("For more information")
                })
                .collect();
            let line = kept.join(" ");
            let line = line.strip_prefix("error: ").unwrap_or(&line);
            emit_stderr(&CliError::Input(format!("usage: {line}")).line());
            std::process::ExitCode::from(2)
        }
    }
}

/// The whole `main` of the `simak` and `simak-qualify` binaries: installs the interrupt
/// cleanup (best effort: without the handler an interrupt may leave a temporary file, never a
/// partial output), parses the command line as `C` (a usage error is one line and exit code
/// 2, see [`usage_error`]), runs it with `run`, and turns an error into its line on stderr
/// and its exit code.
pub fn main_with<C: clap::Parser>(
    run: impl FnOnce(C) -> Result<(), CliError>,
) -> std::process::ExitCode {
    let _ = crate::output::install_interrupt_cleanup();
    let cli = match C::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            emit_stderr(&e.line());
            e.exit_code()
        }
    }
}

/// A progress bar over `elements` on stderr, drawn only for `tensors ≥ 4` or `elements ≥
/// 2^20`, never under `-q`, and (indicatif's rule) only when stderr is a terminal.
pub fn progress(prefix: &'static str, quiet: bool, tensors: usize, elements: u64) -> ProgressBar {
    if quiet || (tensors < 4 && elements < (1 << 20)) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(elements), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix} [{wide_bar}] {human_pos}/{human_len} elements, {elapsed}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(prefix);
    bar
}

/// `n` with the noun in its number: `1 tensor`, `2 tensors`.
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Shape as `[a, b, c]` (`[]` for a scalar).
pub fn shape_text(shape: &[u64]) -> String {
    let parts: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// Elements per second with an SI prefix, e.g. `312.4M`.
pub fn rate_text(rate: Option<f64>) -> String {
    match rate {
        None => "-".to_owned(),
        Some(r) if r >= 1e9 => format!("{:.2}G", r / 1e9),
        Some(r) if r >= 1e6 => format!("{:.1}M", r / 1e6),
        Some(r) if r >= 1e3 => format!("{:.1}k", r / 1e3),
        Some(r) => format!("{r:.0}"),
    }
}

/// Renders rows as an aligned text table followed by a totals line.
pub fn table(rows: &[Row]) -> String {
    let header = [
        "tensor",
        "shape",
        "dtype",
        "multiplier",
        "zp",
        "rounding",
        "saturated",
        "elements",
        "elements/s",
        "route",
    ];
    let cells: Vec<[String; 10]> = rows
        .iter()
        .map(|r| {
            [
                r.name.clone(),
                shape_text(&r.shape),
                r.dtype.to_owned(),
                match &r.calibration {
                    Some(c) => format!("{} ({c})", r.multiplier_bits),
                    None => r.multiplier_bits.clone(),
                },
                r.zero_point.to_string(),
                r.rounding.to_owned(),
                r.saturated.to_string(),
                r.elements.to_string(),
                rate_text(r.elements_per_second),
                r.route.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    // Numbers are right-aligned.
    let right = [
        false, false, false, false, true, false, true, true, true, false,
    ];
    let mut out = String::new();
    let mut line = |cols: &[String]| {
        let mut text = String::new();
        for (i, c) in cols.iter().enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let pad = widths[i].saturating_sub(c.chars().count());
            if right[i] {
                text.push_str(&" ".repeat(pad));
                text.push_str(c);
            } else {
                text.push_str(c);
                if i + 1 < cols.len() {
                    text.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&header.map(str::to_owned));
    for row in &cells {
        line(row);
    }
    for r in rows {
        if let Some(note) = r.note {
            let _ = writeln!(out, "note: {}: {note}", r.name);
        }
    }
    for r in rows {
        if let Some(cost) = &r.sim_cost {
            let _ = writeln!(out, "ev74-sim: {}: {}", r.name, cost.text());
        }
    }
    let t = Total::of(rows);
    let _ = writeln!(
        out,
        "total: {}, {}, {} saturated, execute {:.3} ms, {} elements/s",
        count(t.tensors as u64, "tensor", "tensors"),
        count(t.elements, "element", "elements"),
        t.saturated,
        t.execute_seconds * 1e3,
        rate_text(t.elements_per_second)
    );
    out
}
