//! `simak-qualify`: the qualification programme of simak (docs/qualification.md), one
//! subcommand per mode. This file holds the top-level parser, the global flags and the
//! dispatch; the work is in the `simak_qualify` library, and every subcommand ends in
//! `simak_cli::report::finish` (publish the staged outputs, print the summary).
//!
//! Exit codes: 0 success; 2 bad input or usage (one line on stderr, no output written);
//! 1 internal failure; 3 when the gate fails or the correctness catalogue finds a mismatch.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use simak_cli::error::CliError;
use simak_cli::report::{self, Context, finish};
use simak_qualify::{
    CompareArgs, CorrectnessArgs, ListArgs, MeasureArgs, MergeArgs, run_compare, run_correctness,
    run_list, run_measure, run_merge,
};

/// Qualify simak's kernels: time the latency catalogue into a results file, compare two
/// results files with the paired-median gate, or run the correctness catalogue against the
/// independent oracles (docs/qualification.md).
#[derive(Debug, Parser)]
#[command(
    name = "simak-qualify",
    version,
    about,
    after_help = "Exit status: 0 on success, 2 for bad input or usage (one line on stderr, no \
                  output file written), 1 for internal failures, 3 when the gate fails or the \
                  correctness catalogue finds a mismatch. `cargo xtask qualify ARGS` builds \
                  this binary in release mode and runs it with ARGS; `cargo xtask qualify \
                  --baseline REV` runs the live gate against the commit REV."
)]
struct Cli {
    /// Quiet: no progress bar and no summary table; only errors, the verdict line of
    /// `compare` and `correctness`, and any --json output are printed.
    #[arg(short, long, global = true, display_order = 100)]
    quiet: bool,
    /// Print the summary as JSON on stdout instead of the text table.
    #[arg(long, global = true, display_order = 101)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

// The subcommands; each one's flags and help text live in the library.
#[derive(Debug, Subcommand)]
enum Command {
    Measure(MeasureArgs),
    List(ListArgs),
    Compare(CompareArgs),
    Merge(MergeArgs),
    Correctness(CorrectnessArgs),
}

/// Runs the subcommand, then [`finish`] publishes its outputs and prints the summary.
fn run(cli: Cli) -> Result<(), CliError> {
    let ctx = Context {
        quiet: cli.quiet,
        json: cli.json,
    };
    let ctx = &ctx;
    match cli.command {
        Command::Measure(args) => finish(ctx, run_measure(args, ctx)?),
        Command::List(args) => finish(ctx, run_list(args)?),
        Command::Compare(args) => finish(ctx, run_compare(args)?),
        Command::Merge(args) => finish(ctx, run_merge(args)?),
        Command::Correctness(args) => finish(ctx, run_correctness(args, ctx)?),
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
}
