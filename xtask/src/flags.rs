//! Command-line parsing: the arguments become one [`Command`].
//!
//! Hand-written on purpose: xtask has no dependencies so that it compiles in seconds.

/// The usage message printed by `cargo xtask help` and after a parse error.
pub(crate) const USAGE: &str = "\
Usage: cargo xtask <subcommand> [options]

Subcommands:
  test [--require-all]  run the repository checks: fmt, clippy, test, nosimd (the
                        tests again with SIMD routes off), doc, no_std,
                        cross (AArch64 under qemu), armv7, fw_release, capi (the
                        C ABI and C++ wrapper), fuzz, sweep (strided), python
                        (the x86-64 wheel under pytest), wheels (both wheels,
                        auditwheel, the AArch64 import under qemu), miri (`cargo xtask test --help` lists each
                        step's command and the tools it needs).
                        A step whose tools are missing (rustup targets or components,
                        binaries on PATH) is SKIPPED with every missing piece and its
                        install hint; --require-all turns every skip into a failure
                        (used by CI).
  fresh-clone           clone the committed repository into target/fresh/simak with
                        nothing beside it, run `cargo test --workspace` there, and
                        print the time and the disk use
  fuzz [--seconds N]    run every cargo-fuzz target (fuzz/fuzz_targets) for N
                        seconds each (default 20) on nightly; new inputs go to
                        fuzz/target/xtask-corpus, the committed corpus is only read
  sweep --fp32 [...]    every FP32 bit pattern through every Quant route of this CPU
                        and the EV74 entries against the exact path, in release mode
                        (`cargo run --release -p simak-tests --bin sweep -- ...`);
                        options: [--multiplier BITS]... [--modes all|MODE,...]
                        [--stride N] [--zero-point Z] [--json FILE]; see `sweep --help`
  wheels                the abi3 wheels of bindings/python for x86-64 and AArch64
                        Linux (maturin --zig, glibc 2.17: manylinux_2_17) into
                        target/python/wheels, each checked by `auditwheel show`; the
                        AArch64 one installed for Debian's arm64 CPython (packages
                        fetched with apt-get into target/python/aarch64-python, the
                        machine's APT state untouched) and imported under qemu-aarch64
  python                the x86-64 wheel as `wheels` builds it, installed into a fresh
                        virtual environment target/python/test-venv with no Rust on
                        PATH, and the pytest suite of bindings/python run against it
  miri                  run the Miri subset (std-adapter/tests/miri_subset.rs: the
                        exact A65 Quant paths and the Runtime's retention and
                        completion) with `cargo +nightly miri test`
  dist [--target T]     build the C ABI (bindings/c) in release mode and install
                        it under target/dist/ (target/dist/T/ for --target T):
                        include/simak/{simak.h,simak.hpp}, lib/libsimak.so.0.1.0
                        (SONAME libsimak.so.0) with its links, lib/libsimak.a,
                        lib/pkgconfig/simak.pc, lib/cmake/simak/simakConfig.cmake
  capi                  the `capi` step: dist for the host and AArch64, then the
                        header, symbol, C (native, ASan/UBSan, valgrind, qemu-aarch64),
                        C++ and CMake-consumer checks of bindings/c/tests
  qualify ARGS          build the qualification programme simak-qualify (qualify/)
                        in release mode and run it with ARGS in the current folder:
                        measure, list, compare BASE CAND, merge PART..., correctness
                        (`cargo xtask qualify --help` lists their options)
  qualify --baseline REV [--threshold X] [--chunks N] [--rounds K] [-- ARGS]
                        the live gate: build REV in a git worktree under
                        target/qualify/baseline/ and the working tree, both in
                        release mode, measure the latency catalogue with the two
                        builds alternating per chunk (N chunks, default one per ID;
                        ARGS go to every measuring run, e.g. --filter, --reps,
                        --backend), K rounds of that (default 1; each ID's samples
                        of every round pooled, the order flipped per round), then
                        `simak-qualify compare` the merged results
                        (default threshold 1.05); exit status 3 when the gate fails
                        (docs/qualification.md). A baseline from before
                        simak-qualify existed runs as `simak qualify` with its flags
  neon-cost [--json] [--filter TEXT]
                        per-element cost estimates of the A65's NEON routes (no
                        AArch64 hardware needed): builds the AArch64 driver
                        std-adapter/examples/neon_cost.rs (release, into
                        target/neon-cost), counts instructions per element under
                        `qemu-aarch64 -singlestep -d nochain,exec` (runs at two sizes,
                        subtracted) and estimates the hot loops' cycles per element
                        with `llvm-mca -mcpu=cortex-a65` (LLVM's in-order Cortex-A53
                        model: a relative comparison only); prints a Markdown table
                        (--json: JSON) of every Quant route and CastTess level
                        (band kernel and general path); --filter keeps the workloads
                        whose name contains TEXT. Needs rustup target
                        aarch64-unknown-linux-gnu, aarch64-linux-gnu-gcc, qemu-aarch64,
                        llvm-mca and llvm-objdump, and names every missing one
  help                  print this message
";

/// One xtask invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// `cargo xtask help`, `-h` or `--help`.
    Help,
    /// `cargo xtask test [--require-all]`.
    Test(TestOptions),
    /// `cargo xtask test --help`: the steps and options.
    TestHelp,
    /// `cargo xtask fresh-clone`.
    FreshClone,
    /// `cargo xtask fuzz [--seconds N]`.
    Fuzz(FuzzOptions),
    /// `cargo xtask sweep <args>`: the arguments go to the sweep binary unchanged.
    Sweep(Vec<String>),
    /// `cargo xtask miri`.
    Miri,
    /// `cargo xtask dist [--target T]`.
    Dist {
        /// The target triple; `None`: the host.
        target: Option<String>,
    },
    /// `cargo xtask capi`.
    Capi,
    /// `cargo xtask python`.
    Python,
    /// `cargo xtask wheels`.
    Wheels,
    /// `cargo xtask qualify --baseline REV …`: the live gate.
    Qualify(QualifyOptions),
    /// `cargo xtask qualify ARGS` (no `--baseline`): the arguments go to `simak-qualify`
    /// unchanged.
    QualifyRun(Vec<String>),
    /// `cargo xtask neon-cost [--json] [--filter TEXT]`.
    NeonCost(crate::neon_cost::NeonCostOptions),
}

/// Options of `cargo xtask qualify`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QualifyOptions {
    /// The baseline revision (anything `git rev-parse` takes).
    pub(crate) baseline: String,
    /// The gate threshold, passed to `simak-qualify compare --threshold` unchanged.
    pub(crate) threshold: Option<String>,
    /// Chunks of the selection; the builds alternate per chunk. `None`: one per ID.
    pub(crate) chunks: Option<u32>,
    /// Rounds of the whole chunk loop (at least 1); each ID's samples of every round are
    /// pooled, so a noisy phase of the machine weighs on one round's pairs only.
    pub(crate) rounds: u32,
    /// Arguments for every measuring run.
    pub(crate) passthrough: Vec<String>,
}

/// Options of `cargo xtask fuzz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FuzzOptions {
    /// Seconds per target.
    pub(crate) seconds: u64,
}

/// Options of `cargo xtask test`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TestOptions {
    /// Count a step skipped for a missing tool as a failure.
    pub(crate) require_all: bool,
}

/// Parses the arguments after `cargo xtask`.
///
/// # Errors
///
/// A message naming the missing or unknown subcommand or option.
pub(crate) fn parse(args: &[String]) -> Result<Command, String> {
    let Some((subcommand, rest)) = args.split_first() else {
        return Err("no subcommand given".to_owned());
    };
    match subcommand.as_str() {
        "help" | "-h" | "--help" => Ok(Command::Help),
        "test" => {
            let mut options = TestOptions::default();
            for arg in rest {
                match arg.as_str() {
                    "--require-all" => options.require_all = true,
                    "-h" | "--help" => return Ok(Command::TestHelp),
                    other => return Err(format!("unknown option `{other}` for `test`")),
                }
            }
            Ok(Command::Test(options))
        }
        "fuzz" => {
            let mut options = FuzzOptions { seconds: 20 };
            let mut rest = rest.iter();
            while let Some(arg) = rest.next() {
                match arg.as_str() {
                    "--seconds" => {
                        let value = rest.next().ok_or("`--seconds` needs a value")?;
                        options.seconds = value
                            .parse()
                            .ok()
                            .filter(|&s| s > 0)
                            .ok_or(format!("`--seconds {value}` is not a positive integer"))?;
                    }
                    other => return Err(format!("unknown option `{other}` for `fuzz`")),
                }
            }
            Ok(Command::Fuzz(options))
        }
        "sweep" => Ok(Command::Sweep(rest.to_vec())),
        "fresh-clone" => match rest.first() {
            None => Ok(Command::FreshClone),
            Some(other) => Err(format!("unknown option `{other}` for `fresh-clone`")),
        },
        "dist" => match rest {
            [] => Ok(Command::Dist { target: None }),
            [flag, target] if flag == "--target" => Ok(Command::Dist {
                target: Some(target.clone()),
            }),
            [flag] if flag == "--target" => Err("`--target` needs a value".to_owned()),
            [other, ..] => Err(format!("unknown option `{other}` for `dist`")),
        },
        "capi" => match rest.first() {
            None => Ok(Command::Capi),
            Some(other) => Err(format!("unknown option `{other}` for `capi`")),
        },
        "miri" => match rest.first() {
            None => Ok(Command::Miri),
            Some(other) => Err(format!("unknown option `{other}` for `miri`")),
        },
        "python" => match rest.first() {
            None => Ok(Command::Python),
            Some(other) => Err(format!("unknown option `{other}` for `python`")),
        },
        "wheels" => match rest.first() {
            None => Ok(Command::Wheels),
            Some(other) => Err(format!("unknown option `{other}` for `wheels`")),
        },
        "neon-cost" => {
            let mut options = crate::neon_cost::NeonCostOptions::default();
            let mut rest = rest.iter();
            while let Some(arg) = rest.next() {
                match arg.as_str() {
                    "--json" => options.json = true,
                    "--filter" => {
                        let value = rest.next().ok_or("`--filter` needs a value")?;
                        options.filter = Some(value.clone());
                    }
                    other => return Err(format!("unknown option `{other}` for `neon-cost`")),
                }
            }
            Ok(Command::NeonCost(options))
        }
        "qualify"
            if !rest
                .iter()
                .take_while(|a| *a != "--")
                .any(|a| a == "--baseline") =>
        {
            if rest.is_empty() {
                return Err(
                    "`qualify` needs a subcommand of simak-qualify (measure, list, \
                            compare, merge, correctness) or `--baseline REV`"
                        .to_owned(),
                );
            }
            Ok(Command::QualifyRun(rest.to_vec()))
        }
        "qualify" => {
            let mut baseline = None;
            let mut options = QualifyOptions {
                baseline: String::new(),
                threshold: None,
                chunks: None,
                rounds: 1,
                passthrough: Vec::new(),
            };
            let mut rest = rest.iter();
            while let Some(arg) = rest.next() {
                match arg.as_str() {
                    "--baseline" => {
                        baseline =
                            Some(rest.next().ok_or("`--baseline` needs a revision")?.clone());
                    }
                    "--threshold" => {
                        let value = rest.next().ok_or("`--threshold` needs a value")?;
                        value
                            .parse::<f64>()
                            .ok()
                            .filter(|t| t.is_finite() && *t > 0.0)
                            .ok_or(format!("`--threshold {value}` is not a positive ratio"))?;
                        options.threshold = Some(value.clone());
                    }
                    "--chunks" => {
                        let value = rest.next().ok_or("`--chunks` needs a value")?;
                        options.chunks =
                            Some(
                                value.parse().ok().filter(|&n| n > 0).ok_or(format!(
                                    "`--chunks {value}` is not a positive integer"
                                ))?,
                            );
                    }
                    "--rounds" => {
                        let value = rest.next().ok_or("`--rounds` needs a value")?;
                        options.rounds = value
                            .parse()
                            .ok()
                            .filter(|&n| n > 0)
                            .ok_or(format!("`--rounds {value}` is not a positive integer"))?;
                    }
                    "--" => {
                        options.passthrough = rest.by_ref().cloned().collect();
                    }
                    other => return Err(format!("unknown option `{other}` for `qualify`")),
                }
            }
            options.baseline = baseline.ok_or("`qualify` needs `--baseline REV`")?;
            Ok(Command::Qualify(options))
        }
        other => Err(format!("unknown subcommand `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Command, String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        parse(&args)
    }

    #[test]
    fn parses_subcommands() {
        assert_eq!(parse_strs(&["help"]), Ok(Command::Help));
        assert_eq!(parse_strs(&["--help"]), Ok(Command::Help));
        assert_eq!(
            parse_strs(&["test"]),
            Ok(Command::Test(TestOptions { require_all: false }))
        );
        assert_eq!(
            parse_strs(&["test", "--require-all"]),
            Ok(Command::Test(TestOptions { require_all: true }))
        );
        assert_eq!(parse_strs(&["test", "--help"]), Ok(Command::TestHelp));
        assert_eq!(parse_strs(&["test", "-h"]), Ok(Command::TestHelp));
        assert_eq!(parse_strs(&["fresh-clone"]), Ok(Command::FreshClone));
        assert!(parse_strs(&["fresh-clone", "--x"]).is_err());
    }

    #[test]
    fn parses_fuzz_seconds() {
        assert_eq!(
            parse_strs(&["fuzz"]),
            Ok(Command::Fuzz(FuzzOptions { seconds: 20 }))
        );
        assert_eq!(
            parse_strs(&["fuzz", "--seconds", "3"]),
            Ok(Command::Fuzz(FuzzOptions { seconds: 3 }))
        );
        assert!(parse_strs(&["fuzz", "--seconds", "0"]).is_err());
        assert!(parse_strs(&["fuzz", "--seconds"]).is_err());
    }

    #[test]
    fn parses_sweep_and_miri() {
        assert_eq!(
            parse_strs(&["sweep", "--fp32", "--stride", "4099"]),
            Ok(Command::Sweep(vec![
                "--fp32".to_owned(),
                "--stride".to_owned(),
                "4099".to_owned()
            ]))
        );
        assert_eq!(parse_strs(&["miri"]), Ok(Command::Miri));
        assert_eq!(parse_strs(&["dist"]), Ok(Command::Dist { target: None }));
        assert_eq!(
            parse_strs(&["dist", "--target", "aarch64-unknown-linux-gnu"]),
            Ok(Command::Dist {
                target: Some("aarch64-unknown-linux-gnu".to_owned())
            })
        );
        assert!(parse_strs(&["dist", "--target"]).is_err());
        assert!(parse_strs(&["dist", "--x"]).is_err());
        assert_eq!(parse_strs(&["capi"]), Ok(Command::Capi));
        assert!(parse_strs(&["capi", "--x"]).is_err());
        assert!(parse_strs(&["miri", "--x"]).is_err());
        assert_eq!(parse_strs(&["python"]), Ok(Command::Python));
        assert!(parse_strs(&["python", "--aarch64-wheel"]).is_err());
        assert_eq!(parse_strs(&["wheels"]), Ok(Command::Wheels));
        assert!(parse_strs(&["wheels", "--x"]).is_err());
    }

    #[test]
    fn parses_neon_cost() {
        use crate::neon_cost::NeonCostOptions;
        assert_eq!(
            parse_strs(&["neon-cost"]),
            Ok(Command::NeonCost(NeonCostOptions::default()))
        );
        assert_eq!(
            parse_strs(&["neon-cost", "--json", "--filter", "casttess"]),
            Ok(Command::NeonCost(NeonCostOptions {
                json: true,
                filter: Some("casttess".to_owned()),
            }))
        );
        assert!(parse_strs(&["neon-cost", "--filter"]).is_err());
        assert!(parse_strs(&["neon-cost", "--x"]).is_err());
    }

    #[test]
    fn parses_qualify() {
        assert_eq!(
            parse_strs(&["qualify", "--baseline", "main"]),
            Ok(Command::Qualify(QualifyOptions {
                baseline: "main".to_owned(),
                threshold: None,
                chunks: None,
                rounds: 1,
                passthrough: vec![],
            }))
        );
        assert_eq!(
            parse_strs(&[
                "qualify",
                "--baseline",
                "HEAD~1",
                "--threshold",
                "1.1",
                "--chunks",
                "4",
                "--rounds",
                "3",
                "--",
                "--filter",
                "quant/"
            ]),
            Ok(Command::Qualify(QualifyOptions {
                baseline: "HEAD~1".to_owned(),
                threshold: Some("1.1".to_owned()),
                chunks: Some(4),
                rounds: 3,
                passthrough: vec!["--filter".to_owned(), "quant/".to_owned()],
            }))
        );
        assert!(parse_strs(&["qualify"]).is_err());
        assert_eq!(
            parse_strs(&["qualify", "compare", "a", "b", "--threshold", "1.1"]),
            Ok(Command::QualifyRun(
                ["compare", "a", "b", "--threshold", "1.1"]
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect()
            ))
        );
        assert_eq!(
            parse_strs(&["qualify", "--help"]),
            Ok(Command::QualifyRun(vec!["--help".to_owned()]))
        );
        assert!(parse_strs(&["qualify", "--baseline", "x", "--threshold", "-1"]).is_err());
        assert!(parse_strs(&["qualify", "--baseline", "x", "--chunks", "0"]).is_err());
        assert!(parse_strs(&["qualify", "--baseline", "x", "--rounds", "0"]).is_err());
        assert!(parse_strs(&["qualify", "--baseline", "x", "--reps"]).is_err());
    }

    #[test]
    fn rejects_unknown_input() {
        assert_eq!(parse_strs(&[]), Err("no subcommand given".to_owned()));
        assert_eq!(
            parse_strs(&["bench"]),
            Err("unknown subcommand `bench`".to_owned())
        );
        assert_eq!(
            parse_strs(&["test", "--all"]),
            Err("unknown option `--all` for `test`".to_owned())
        );
    }
}
