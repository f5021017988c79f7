//! The `simak` command-line tool over real tensor files: Quant to INT8 (SPEC §3) on the A65
//! or the simulated EV74, CastTess / QuantTess into the `MlaTiled` layout (SPEC §4, §5) and
//! back, EV74 Quant descriptors (SPEC §7), layout diagrams.
//!
//! This file holds the top-level parser, the global flags and the dispatch; each command's
//! flags and work are in its module of the `simak_cli` library, and every command ends in
//! [`report::finish`] (publish the staged outputs, print the summary).
//!
//! Exit codes: 0 success; 2 bad input or usage (one line on stderr, no output written);
//! 1 internal failure.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use simak_cli::error::CliError;
use simak_cli::packet::{EncodeCommand, PacketCommand};
use simak_cli::report::{self, Context, finish};
use simak_cli::{
    bench, bench_detess, bench_preproc, bench_tess, demo, detess, layout, model, packet, preproc,
    qualify, quant, tess, untile,
};

/// Quantize FP32 / BF16 / FP16 tensors to INT8 exactly as the simak accelerator
/// library does.
#[derive(Debug, Parser)]
#[command(
    name = "simak",
    version,
    about,
    long_about = "Quantize FP32 / BF16 / FP16 tensors to INT8 exactly as the simak accelerator \
                  library does (q = saturate(round(binary32(x * m)) + zero_point)), on the A65 \
                  host or the simulated EV74; convert tensors and images into the accelerator's \
                  MlaTiled layout (casttess, quanttess) and back (untile, dequant); show \
                  layouts and EV74 descriptors.\n\n\
                  Exit status: 0 on success, 2 for bad input or usage (one line on stderr, no \
                  output file written), 1 for internal failures, 3 when `simak qualify` (now \
                  `simak-qualify`) finds a regression or a mismatch.\n\n\
                  Outputs: only files named on the command line are replaced (a derived \
                  default name that exists is refused), atomically, keeping their mode; a \
                  symbolic link is written through. \"SPEC §N\" in these texts refers to \
                  section N of docs/contract.md in the simak repository."
)]
struct Cli {
    /// Quiet: no progress bar and no summary table; only errors and any --json output are
    /// printed (`demo -q` still prints its checksum line, `model inspect -q` its stages).
    #[arg(short, long, global = true, display_order = 100)]
    quiet: bool,
    /// Print the summary as JSON on stdout instead of the text table.
    #[arg(long, global = true, display_order = 101)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

// The commands; each one's flags, help text and work live in its module.
#[derive(Debug, Subcommand)]
enum Command {
    Quant(quant::QuantArgs),
    Casttess(tess::CastTessArgs),
    Quanttess(tess::QuantTessArgs),
    Untile(untile::UntileArgs),
    Dequant(untile::DequantArgs),
    Detess(detess::DetessArgs),
    Preproc(preproc::PreprocArgs),
    Layout(layout::LayoutArgs),
    /// Read a compiled model's manifest (`*_mpk.json`, SPEC §14): inspect its stages, turn
    /// frames into its IFM bytes, its OFM into named tensors.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// Encode and decode EV74 descriptors (SPEC §7).
    #[command(subcommand)]
    Packet(PacketCommand),
    Demo(demo::DemoArgs),
    /// Measure throughput in-process (median ns per call, elements/s) against same-run
    /// references.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    Qualify(qualify::QualifyArgs),
}

/// Runs the command: its module does the work and stages the outputs, then
/// [`report::finish`] publishes them and prints the summary.
fn run(cli: Cli) -> Result<(), CliError> {
    let ctx = Context {
        quiet: cli.quiet,
        json: cli.json,
    };
    let ctx = &ctx;
    match cli.command {
        Command::Quant(args) => finish(ctx, quant::run(args, ctx)?),
        Command::Casttess(args) => finish(ctx, tess::run_casttess(args, ctx)?),
        Command::Quanttess(args) => finish(ctx, tess::run_quanttess(args, ctx)?),
        Command::Untile(args) => finish(ctx, untile::run_untile(args, ctx)?),
        Command::Dequant(args) => finish(ctx, untile::run_dequant(args, ctx)?),
        Command::Detess(args) => finish(ctx, detess::run(args, ctx)?),
        Command::Preproc(args) => finish(ctx, preproc::run(args, ctx)?),
        Command::Layout(args) => finish(ctx, layout::run(args, ctx)?),
        Command::Model(model::ModelCommand::Inspect(args)) => {
            finish(ctx, model::run_inspect(args, ctx)?)
        }
        Command::Model(model::ModelCommand::Preprocess(args)) => {
            finish(ctx, model::run_preprocess(args, ctx)?)
        }
        Command::Model(model::ModelCommand::Postprocess(args)) => {
            finish(ctx, model::run_postprocess(args, ctx)?)
        }
        Command::Packet(PacketCommand::Decode(args)) => finish(ctx, packet::run_decode(args, ctx)?),
        Command::Packet(PacketCommand::Encode(EncodeCommand::Quant(args))) => {
            finish(ctx, packet::run_encode(args, ctx)?)
        }
        Command::Packet(PacketCommand::Encode(EncodeCommand::Casttess(args))) => {
            finish(ctx, packet::run_encode(args, ctx)?)
        }
        Command::Bench(bench::BenchCommand::Quant(args)) => finish(ctx, bench::run(args, ctx)?),
        Command::Bench(bench::BenchCommand::Casttess(args)) => finish(
            ctx,
            bench_tess::run(bench_tess::TessBench::Cast, args, ctx)?,
        ),
        Command::Bench(bench::BenchCommand::Quanttess(args)) => finish(
            ctx,
            bench_tess::run(bench_tess::TessBench::Quant, args, ctx)?,
        ),
        Command::Bench(bench::BenchCommand::Detess(args)) => {
            finish(ctx, bench_detess::run(args, ctx)?)
        }
        Command::Bench(bench::BenchCommand::Preproc(args)) => {
            finish(ctx, bench_preproc::run(args, ctx)?)
        }
        Command::Demo(args) => finish(ctx, demo::run(args, ctx)?),
        Command::Qualify(args) => qualify::run(args, ctx),
    }
}

fn main() -> ExitCode {
    report::main_with(run)
}

#[cfg(test)]
mod test {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn multiplier_and_calibrate_are_exclusive_and_one_is_required() {
        let base = ["simak", "quant", "--input", "a.npy", "--output", "b.npy"];
        assert!(Cli::try_parse_from(base).is_err());
        let both = [&base[..], &["--multiplier", "1", "--calibrate", "absmax"]].concat();
        assert!(Cli::try_parse_from(both).is_err());
        let zp = [&base[..], &["--calibrate", "absmax", "--zero-point", "3"]].concat();
        assert!(Cli::try_parse_from(zp).is_err());
    }
}
