//! The `simak` command-line tool: quantize the float tensors of real files to INT8 with the
//! simak library's exact Quant (SPEC §3), on the A65 host backend.
//!
//! Exit codes: 0 success; 2 bad input or usage (one line on stderr, no output written);
//! 1 internal failure.
#![forbid(unsafe_code)]

mod bench;
mod demo;
mod engine;
mod error;
mod output;
mod params;
mod quant;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

use crate::error::{CliError, bad_file};
use crate::params::{Calibration, RoundingArg, parse_multiplier, parse_zero_point};
use crate::quant::{QuantJob, Scale};

/// Quantize FP32 / BF16 / FP16 tensors to INT8 exactly as the simak accelerator
/// library does.
#[derive(Debug, Parser)]
#[command(
    name = "simak",
    version,
    about,
    long_about = "Quantize FP32 / BF16 / FP16 tensors to INT8 exactly as the simak accelerator \
                  library does (q = saturate(round(binary32(x * m)) + zero_point)).\n\n\
                  Exit status: 0 on success, 2 for bad input or usage (one line on stderr, no \
                  output file written), 1 for internal failures."
)]
struct Cli {
    /// Quiet: no progress bar and no summary table; only errors (and --json output, or
    /// the demo checksum) are printed.
    #[arg(short, long, global = true, display_order = 100)]
    quiet: bool,
    /// Print the summary as JSON on stdout instead of the text table.
    #[arg(long, global = true, display_order = 101)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Quantize the float tensors of a .safetensors or .npy file to INT8.
    #[command(
        long_about = "Quantize the float tensors of a .safetensors or .npy file to INT8.\n\n\
        Each element x becomes saturate(round(binary32(x * M)) + Z) in [-128, 127]: the product \
        is rounded once to binary32 (nearest-even, subnormals kept), then to an integer with \
        --rounding; NaN gives Z, +inf 127, -inf -128.\n\n\
        .safetensors: every F32, BF16 and F16 tensor (or only those named with --tensor) \
        becomes an I8 tensor of the same name and shape; other tensors are copied unchanged; \
        the input's metadata is kept and each quantized tensor's parameters are recorded as \
        simak.<tensor>.multiplier_bits (0x%08x), simak.<tensor>.zero_point, \
        simak.<tensor>.rounding, simak.<tensor>.input_dtype and simak.<tensor>.calibration.\n\n\
        .npy: a float32 or float16 array (little- or big-endian, C or Fortran order) becomes \
        an int8 .npy of the same shape and order.\n\n\
        The output is written to a temporary file in the output's folder and renamed over \
        --output on success (an existing file is replaced atomically); on any error nothing \
        is written. A summary table (tensor, shape, dtype, multiplier bits, zero point, \
        rounding, saturated count, elements, elements/s of the execute call) is printed on \
        stdout. \"Saturated\" counts elements whose rounded value plus zero point fell \
        outside [-128, 127]."
    )]
    Quant(QuantArgs),
    /// Run the quant pipeline on embedded generated tensors (no files needed) and print a
    /// checksum of all outputs.
    #[command(
        long_about = "Run the quant pipeline on embedded generated tensors: an image-like \
        [224, 224, 3] HWC tensor in [0, 1] and a weight-like [384, 384] matrix (about N(0, \
        0.05), with outliers, infinities, a NaN and subnormals), each as FP32, BF16 and FP16, \
        quantized with fixed multipliers, absmax calibration and all four rounding modes. \
        Prints the jobs and an FNV-1a 64 checksum over all outputs (the same on every run \
        and platform for a given seed)."
    )]
    Demo(DemoArgs),
    /// Measure throughput in-process (median ns per call, elements/s) against same-run
    /// references.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Quant of a contiguous 1-D tensor on the peers' workload (multiplier 0.5, zero point 3,
    /// nearest-even, inputs from N(0, 100) with a fixed seed and an exact tie every 16th
    /// element), with the auto-selected A65 route; plus a plain read of the input and a
    /// trivial kernel with the same traffic (read each element, store its low byte).
    Quant(BenchQuantArgs),
}

#[derive(Debug, Args)]
struct BenchQuantArgs {
    /// Input dtype.
    #[arg(long, value_enum, default_value_t = DTypeArg::F32)]
    dtype: DTypeArg,
    /// Elements per call.
    #[arg(long, value_name = "N", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 31))]
    elements: u64,
    /// Threads, each running one piece of every call through the partition API
    /// (`Prepared::split`).
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: u64,
    /// Repetitions; the median is reported.
    #[arg(long, value_name = "R", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=1000))]
    reps: u64,
    /// Also measure the exact integer path (slow).
    #[arg(long)]
    exact: bool,
}

/// Input dtype of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DTypeArg {
    /// IEEE binary32.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE binary16.
    F16,
}

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("scale").required(true).args(["multiplier", "calibrate"])
))]
struct QuantArgs {
    /// Input file: .safetensors (F32, BF16, F16 tensors) or .npy (float32, float16).
    #[arg(long, value_name = "PATH")]
    input: PathBuf,
    /// Quantize only this tensor (safetensors; repeatable). Default: every F32, BF16 and
    /// F16 tensor. Unselected tensors are copied unchanged.
    #[arg(long = "tensor", value_name = "NAME")]
    tensors: Vec<String>,
    /// Output file; its format follows the input (.safetensors with I8 tensors, or int8
    /// .npy). Replaced atomically if it exists; must not be the input.
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
    /// The multiplier M (it multiplies: q = x * M). A decimal such as 0.0078125, rounded
    /// once to the nearest binary32, or exact bits as 0x followed by 8 hex digits
    /// (0x3e99999a). Must be finite and > 0 (subnormals allowed).
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    multiplier: Option<String>,
    /// Pick the multiplier per tensor from its data instead of --multiplier. absmax:
    /// m = 127f32 / max|x| over the finite elements, computed as one binary32 division
    /// (nearest-even) of 127 by the exact f32 value of max|x|; zero point 0. A tensor with
    /// no finite nonzero element, or whose m is not finite, is an error.
    #[arg(long, value_enum, value_name = "METHOD")]
    calibrate: Option<Calibration>,
    /// Zero point Z added after rounding, in [-128, 127]. Default 0. Not with --calibrate.
    #[arg(
        long,
        value_name = "Z",
        allow_hyphen_values = true,
        conflicts_with = "calibrate"
    )]
    zero_point: Option<String>,
    /// Integer rounding of the binary32 product.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = RoundingArg::NearestEven)]
    rounding: RoundingArg,
    /// Execution backend. a65 runs on the host CPU cores (the fastest route the CPU offers;
    /// every route gives bit-identical results).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = Backend::A65)]
    backend: Backend,
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Seed of the tensor generator, decimal or 0x hex [default: 0x5eed5a3a20240001].
    #[arg(long, value_name = "SEED", value_parser = parse_seed)]
    seed: Option<u64>,
}

/// Execution backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// The A65 host CPU cores.
    A65,
}

fn parse_seed(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|e| format!("{text:?} is not a 64-bit seed: {e}"))
}

fn quant_job(args: QuantArgs, quiet: bool, json: bool) -> Result<QuantJob, CliError> {
    let input = args.input;
    let Backend::A65 = args.backend;
    let scale = match (&args.multiplier, args.calibrate) {
        (Some(text), _) => Scale::Fixed(parse_multiplier(text).map_err(|e| bad_file(&input, e))?),
        (None, Some(c)) => Scale::Calibrate(c),
        // clap's required group makes this unreachable; report it as usage anyway.
        (None, None) => {
            return Err(bad_file(
                &input,
                "one of --multiplier or --calibrate is required",
            ));
        }
    };
    let zero_point = match &args.zero_point {
        Some(text) => parse_zero_point(text).map_err(|e| bad_file(&input, e))?,
        None => 0,
    };
    let mut tensors: Vec<String> = Vec::with_capacity(args.tensors.len());
    for t in args.tensors {
        if !tensors.contains(&t) {
            tensors.push(t);
        }
    }
    Ok(QuantJob {
        input,
        output: args.output,
        tensors,
        scale,
        zero_point,
        rounding: args.rounding.into(),
        quiet,
        json,
    })
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Quant(args) => quant::run(&quant_job(args, cli.quiet, cli.json)?),
        Command::Bench(BenchCommand::Quant(args)) => bench::run(&bench::BenchJob {
            dtype: match args.dtype {
                DTypeArg::F32 => simak::DType::F32,
                DTypeArg::Bf16 => simak::DType::BF16,
                DTypeArg::F16 => simak::DType::F16,
            },
            elements: args.elements as usize,
            threads: args.threads as usize,
            reps: args.reps as usize,
            exact: args.exact,
            json: cli.json,
        }),
        Command::Demo(args) => {
            demo::run(args.seed.unwrap_or(demo::DEFAULT_SEED), cli.quiet, cli.json)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", e.line());
            e.exit_code()
        }
    }
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
    fn default_seed_is_the_documented_one() {
        let cli = Cli::try_parse_from(["simak", "demo"]).unwrap();
        let Command::Demo(args) = cli.command else {
            panic!("not demo")
        };
        assert_eq!(args.seed, None);
        assert_eq!(parse_seed("0x5eed5a3a20240001"), Ok(demo::DEFAULT_SEED));
        assert_eq!(parse_seed("12"), Ok(12));
        assert!(parse_seed("0xzz").is_err());
    }

    #[test]
    fn negative_values_parse_as_values() {
        let cli = Cli::try_parse_from([
            "simak",
            "quant",
            "--input",
            "a.npy",
            "--output",
            "b.npy",
            "--multiplier",
            "-1",
            "--zero-point",
            "-129",
        ])
        .unwrap();
        let Command::Quant(args) = cli.command else {
            panic!("not quant")
        };
        assert_eq!(args.multiplier.as_deref(), Some("-1"));
        assert_eq!(args.zero_point.as_deref(), Some("-129"));
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
