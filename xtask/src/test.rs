//! `cargo xtask test`: the repository checks, kept as a table of steps.
//!
//! Each [`Step`] names a command and the tools it needs ([`Requirement`]). Before a step runs
//! its requirements are checked; a missing tool skips the step with an install hint, and
//! `--require-all` turns that skip into a failure. A failing step does not stop the run: every
//! step runs so that the summary is complete, and the exit status is 1 if any step failed.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use crate::flags::TestOptions;

/// The bare-metal target the no_std crates must build for.
const NO_STD_TARGET: &str = "thumbv7em-none-eabihf";
/// The AArch64 target whose tests run under `qemu-aarch64 -cpu max` (SPEC §10 routes).
pub(crate) const CROSS_TARGET: &str = "aarch64-unknown-linux-gnu";
/// A 32-bit target for the firmware's tests, run under `qemu-arm` (SPEC §8).
const ARMV7_TARGET: &str = "armv7-unknown-linux-gnueabihf";

/// The checks, in order. Adding a check is one entry: a name, the command, its environment
/// and the tools it needs (`cross`, the AArch64 pass under qemu, is the fullest example).
pub(crate) const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        program: Program::Cargo,
        args: &["fmt", "--all", "--", "--check"],
        env: &[],
        requires: &[Requirement::RustupComponent("rustfmt")],
    },
    Step {
        name: "clippy",
        program: Program::Cargo,
        args: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        env: &[],
        requires: &[Requirement::RustupComponent("clippy")],
    },
    Step {
        name: "test",
        program: Program::Cargo,
        args: &["test", "--workspace", "--no-fail-fast"],
        env: &[],
        requires: &[],
    },
    // The tests of the packages that select A65 routes, again with SIMD routes disabled in
    // automatic selection (`simak`'s `scalar-only` feature): the exact and scalar paths then
    // carry everything `prepare` normally hands to a vector route. `simak-core` and
    // `simak-ev74-fw` do not depend on `simak`, so their tests would only repeat.
    Step {
        name: "nosimd",
        program: Program::Cargo,
        args: &[
            "test",
            "--no-fail-fast",
            "-p",
            "simak",
            "-p",
            "simak-cli",
            "-p",
            "simak-tests",
            "-p",
            "simak-qualify",
            "--features",
            "simak/scalar-only",
        ],
        // Full sweeps run in the `test` step only (simak_tests::sweeps).
        env: &[("SIMAK_SWEEPS", "sampled")],
        requires: &[],
    },
    Step {
        name: "doc",
        program: Program::Cargo,
        args: &["doc", "--workspace", "--no-deps"],
        env: &[("RUSTDOCFLAGS", "-D warnings")],
        requires: &[],
    },
    Step {
        name: "no_std",
        program: Program::Cargo,
        args: &[
            "build",
            "-p",
            "simak-core",
            "-p",
            "simak-ev74-fw",
            "--target",
            NO_STD_TARGET,
        ],
        env: &[],
        requires: &[Requirement::RustupTarget(NO_STD_TARGET)],
    },
    Step {
        name: "cross",
        program: Program::Cargo,
        args: &[
            "test",
            "--no-fail-fast",
            "--target",
            CROSS_TARGET,
            "-p",
            "simak-core",
            "-p",
            "simak",
            "-p",
            "simak-tests",
        ],
        env: &[
            // Full sweeps run in the `test` step only (simak_tests::sweeps).
            ("SIMAK_SWEEPS", "sampled"),
            (
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
                "aarch64-linux-gnu-gcc",
            ),
            (
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER",
                "qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu",
            ),
        ],
        requires: &[
            Requirement::RustupTarget(CROSS_TARGET),
            Requirement::Binary {
                name: "qemu-aarch64",
                apt_package: "qemu-user",
            },
            Requirement::Binary {
                name: "aarch64-linux-gnu-gcc",
                apt_package: "gcc-aarch64-linux-gnu",
            },
        ],
    },
    Step {
        name: "armv7",
        program: Program::Cargo,
        args: &[
            "test",
            "--no-fail-fast",
            "--target",
            ARMV7_TARGET,
            "-p",
            "simak-core",
            "-p",
            "simak-ev74-fw",
        ],
        env: &[
            (
                "CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_LINKER",
                "arm-linux-gnueabihf-gcc",
            ),
            (
                "CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_RUNNER",
                "qemu-arm -L /usr/arm-linux-gnueabihf",
            ),
        ],
        requires: &[
            Requirement::RustupTarget(ARMV7_TARGET),
            Requirement::Binary {
                name: "qemu-arm",
                apt_package: "qemu-user",
            },
            Requirement::Binary {
                name: "arm-linux-gnueabihf-gcc",
                apt_package: "gcc-arm-linux-gnueabihf",
            },
        ],
    },
    Step {
        name: "fw_release",
        program: Program::Cargo,
        args: &[
            "build",
            "--release",
            "-p",
            "simak-ev74-fw",
            "--features",
            "defmt",
            "--target",
            NO_STD_TARGET,
        ],
        env: &[],
        requires: &[Requirement::RustupTarget(NO_STD_TARGET)],
    },
    // The C ABI (`bindings/c`) as a C or C++ user meets it: `cargo xtask dist`, then the
    // header, symbol, C, C++ and CMake checks (xtask/src/dist.rs, `run_capi`).
    Step {
        name: "capi",
        program: Program::Cargo,
        args: &["xtask", "capi"],
        env: &[],
        requires: &[
            Requirement::Binary {
                name: "cc",
                apt_package: "gcc",
            },
            Requirement::Binary {
                name: "c++",
                apt_package: "g++",
            },
            Requirement::Binary {
                name: "cmake",
                apt_package: "cmake",
            },
            Requirement::Binary {
                name: "valgrind",
                apt_package: "valgrind",
            },
            Requirement::RustupTarget(CROSS_TARGET),
            Requirement::Binary {
                name: "aarch64-linux-gnu-gcc",
                apt_package: "gcc-aarch64-linux-gnu",
            },
            Requirement::Binary {
                name: "qemu-aarch64",
                apt_package: "qemu-user",
            },
        ],
    },
    Step {
        name: "fuzz",
        program: Program::Cargo,
        args: &["xtask", "fuzz", "--seconds", "20"],
        env: &[],
        requires: &[
            Requirement::NightlyComponent("rustc"),
            Requirement::CargoTool {
                name: "cargo-fuzz",
                krate: "cargo-fuzz",
            },
        ],
    },
    Step {
        name: "sweep",
        program: Program::Cargo,
        args: &["xtask", "sweep", "--fp32", "--stride", "4099"],
        env: &[],
        requires: &[],
    },
    // The Python package (bindings/python, its own workspace) as its users get it: the
    // x86-64 abi3 wheel (maturin --zig, manylinux_2_17) installed into a fresh virtual
    // environment without Rust on PATH, and the pytest suite against it (xtask/src/python.rs).
    Step {
        name: "python",
        program: Program::Cargo,
        args: &["xtask", "python"],
        env: &[],
        requires: PYTHON_REQUIRES,
    },
    // Both wheels, each checked by `auditwheel show`; the AArch64 one installed for
    // Debian's arm64 CPython (fetched with apt-get into target/python) and imported under
    // qemu: the A65 is where users run it.
    Step {
        name: "wheels",
        program: Program::Cargo,
        args: &["xtask", "wheels"],
        env: &[],
        requires: &[
            PYTHON3,
            PYTHON_VENV,
            Requirement::RustupTarget(CROSS_TARGET),
            Requirement::Binary {
                name: "qemu-aarch64",
                apt_package: "qemu-user",
            },
            // Brings libc6-arm64-cross, the C library qemu loads the interpreter with.
            Requirement::Binary {
                name: "aarch64-linux-gnu-gcc",
                apt_package: "gcc-aarch64-linux-gnu",
            },
            Requirement::Binary {
                name: "apt-get",
                apt_package: "apt",
            },
            Requirement::Binary {
                name: "dpkg-deb",
                apt_package: "dpkg",
            },
        ],
    },
    Step {
        name: "miri",
        program: Program::Cargo,
        args: &["xtask", "miri"],
        env: &[],
        requires: &[
            Requirement::NightlyComponent("miri"),
            Requirement::NightlyComponent("rust-src"),
        ],
    },
];

/// `python3` on `PATH`.
const PYTHON3: Requirement = Requirement::Binary {
    name: "python3",
    apt_package: "python3",
};
/// `python3 -m venv` with pip (Debian ships `ensurepip` in python3-venv).
const PYTHON_VENV: Requirement = Requirement::PythonModule {
    module: "ensurepip",
    apt_package: "python3-venv",
};
/// What the `python` step needs.
const PYTHON_REQUIRES: &[Requirement] = &[PYTHON3, PYTHON_VENV];

/// One check: a command run from the workspace root, and the tools it needs.
#[derive(Debug)]
pub(crate) struct Step {
    /// Short name shown in the log and the summary.
    pub(crate) name: &'static str,
    /// What to run.
    pub(crate) program: Program,
    /// Arguments after the program (after `cargo` for the cargo programs).
    pub(crate) args: &'static [&'static str],
    /// Extra environment variables for the command.
    pub(crate) env: &'static [(&'static str, &'static str)],
    /// Tools that must be installed, or the step is skipped.
    pub(crate) requires: &'static [Requirement],
}

/// The program a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Program {
    /// The cargo running xtask (`$CARGO`, else `cargo`).
    Cargo,
    /// `rustup run <toolchain> cargo`, for steps that need another toolchain (nightly).
    #[allow(dead_code, reason = "for planned steps such as Miri on nightly")]
    CargoOn(&'static str),
}

/// A tool a step needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Requirement {
    /// A rustup target installed for the active toolchain, e.g. `thumbv7em-none-eabihf`.
    RustupTarget(&'static str),
    /// A rustup component installed for the active toolchain, e.g. `clippy`.
    RustupComponent(&'static str),
    /// A component of the nightly toolchain, e.g. `miri`.
    NightlyComponent(&'static str),
    /// An executable on `PATH`, installed by a Debian package.
    Binary {
        /// File name looked up on `PATH`.
        name: &'static str,
        /// The Debian package that provides it.
        apt_package: &'static str,
    },
    /// A module `python3` can import, installed by a Debian package (for example
    /// `ensurepip`, which `python3 -m venv` needs).
    PythonModule {
        /// The module name.
        module: &'static str,
        /// The Debian package that provides it.
        apt_package: &'static str,
    },
    /// An executable on `PATH` installed with `cargo install` (for example `cargo-fuzz`).
    CargoTool {
        /// File name looked up on `PATH`.
        name: &'static str,
        /// The crate that provides it.
        krate: &'static str,
    },
}

/// Why a requirement is not met, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Missing {
    /// What is missing, as a sentence fragment.
    pub(crate) why: String,
    /// A command that installs it.
    pub(crate) install: String,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SKIPPED: {}; install with: {}", self.why, self.install)
    }
}

/// What is installed on this machine. The real one asks rustup and `PATH`; tests use a fake.
pub(crate) trait Probe {
    /// Rustup targets installed for the active toolchain, or why they are unknown (rustup is
    /// missing or failed).
    fn installed_targets(&self) -> Result<Vec<String>, String>;
    /// Rustup components installed for a toolchain (`None`: the active one), as rustup prints
    /// them (`clippy-x86_64-unknown-linux-gnu`), or why they are unknown.
    fn installed_components(&self, toolchain: Option<&str>) -> Result<Vec<String>, String>;
    /// Whether an executable with this file name is on `PATH`.
    fn on_path(&self, binary: &str) -> bool;
    /// Whether `python3` on `PATH` imports this module.
    fn python_module(&self, module: &str) -> bool;
}

/// Checks one requirement.
///
/// # Errors
///
/// [`Missing`] with the reason and an install command.
pub(crate) fn check(requirement: &Requirement, probe: &dyn Probe) -> Result<(), Missing> {
    match *requirement {
        Requirement::RustupTarget(target) => {
            let install = format!("rustup target add {target}");
            match probe.installed_targets() {
                Ok(targets) if targets.iter().any(|t| t == target) => Ok(()),
                Ok(_) => Err(Missing {
                    why: format!("rustup target {target} is not installed"),
                    install,
                }),
                Err(reason) => Err(Missing {
                    why: format!("cannot list rustup targets to find {target} ({reason})"),
                    install,
                }),
            }
        }
        Requirement::RustupComponent(component) => {
            let install = format!("rustup component add {component}");
            match probe.installed_components(None) {
                Ok(components) if has_component(&components, component) => Ok(()),
                Ok(_) => Err(Missing {
                    why: format!("rustup component {component} is not installed"),
                    install,
                }),
                Err(reason) => Err(Missing {
                    why: format!("cannot list rustup components to find {component} ({reason})"),
                    install,
                }),
            }
        }
        Requirement::NightlyComponent(component) => {
            let install = format!("rustup toolchain install nightly --component {component}");
            match probe.installed_components(Some("nightly")) {
                Ok(components) if has_component(&components, component) => Ok(()),
                Ok(_) => Err(Missing {
                    why: format!("nightly component {component} is not installed"),
                    install,
                }),
                Err(reason) => Err(Missing {
                    why: format!("cannot list nightly components to find {component} ({reason})"),
                    install,
                }),
            }
        }
        Requirement::Binary { name, apt_package } => {
            if probe.on_path(name) {
                Ok(())
            } else {
                Err(Missing {
                    why: format!("`{name}` is not on PATH"),
                    install: format!("apt-get install {apt_package}"),
                })
            }
        }
        Requirement::PythonModule {
            module,
            apt_package,
        } => {
            if probe.python_module(module) {
                Ok(())
            } else {
                Err(Missing {
                    why: format!("`python3 -c 'import {module}'` fails"),
                    install: format!("apt-get install {apt_package}"),
                })
            }
        }
        Requirement::CargoTool { name, krate } => {
            if probe.on_path(name) {
                Ok(())
            } else {
                Err(Missing {
                    why: format!("`{name}` is not on PATH"),
                    install: format!("cargo install {krate} --locked"),
                })
            }
        }
    }
}

/// Whether rustup's component list holds `component`.
///
/// Rustup prints a target-specific component with its target triple appended
/// (`clippy-x86_64-unknown-linux-gnu`) and others bare (`rust-src`). A triple has two or three
/// hyphens, so the suffix after `rust-` in `rust-std-x86_64-unknown-linux-gnu` (four) is not
/// one, and `rust` does not match `rust-std`.
fn has_component(components: &[String], component: &str) -> bool {
    components.iter().any(|installed| {
        installed == component
            || installed
                .strip_prefix(component)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|triple| (2..=3).contains(&triple.matches('-').count()))
    })
}

/// What to do with a step before running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Every requirement is met.
    Run,
    /// Requirements are missing (all of them listed) and skips are allowed.
    Skip(Vec<Missing>),
    /// Requirements are missing (all of them listed) and `--require-all` is set.
    FailMissing(Vec<Missing>),
}

/// Decides whether a step runs, from every requirement it has (so that a skipped step
/// names everything missing at once, not only the first).
pub(crate) fn decide(step: &Step, probe: &dyn Probe, require_all: bool) -> Decision {
    let missing: Vec<Missing> = step
        .requires
        .iter()
        .filter_map(|r| check(r, probe).err())
        .collect();
    match missing.is_empty() {
        true => Decision::Run,
        false if require_all => Decision::FailMissing(missing),
        false => Decision::Skip(missing),
    }
}

/// The text of `cargo xtask test --help`: the options, then each step with its command and
/// the tools it needs.
pub(crate) fn help() -> String {
    let mut text = String::from(
        "Usage: cargo xtask test [--require-all]\n\n\
         Runs the repository checks below in order, from the workspace root. Every step runs\n\
         (a failure does not stop the others); the summary table lists each step as PASSED,\n\
         FAILED or SKIPPED with its seconds, and the exit status is 1 if any step failed.\n\n\
         Options:\n\
         \x20 --require-all  a step whose tools are missing fails instead of being skipped\n\
         \x20                (CI runs this through .ci/run, which installs the tools first)\n\
         \x20 -h, --help     print this message\n\n\
         Steps:\n",
    );
    for step in STEPS {
        text.push_str(&format!("  {:<10} {}\n", step.name, describe(step)));
        for requirement in step.requires {
            text.push_str(&format!("  {:<10}   needs {}\n", "", needs(requirement)));
        }
    }
    text
}

/// A requirement as a phrase for the help text.
fn needs(requirement: &Requirement) -> String {
    match *requirement {
        Requirement::RustupTarget(t) => format!("rustup target {t} (rustup target add {t})"),
        Requirement::RustupComponent(c) => {
            format!("rustup component {c} (rustup component add {c})")
        }
        Requirement::NightlyComponent(c) => {
            format!("nightly component {c} (rustup toolchain install nightly --component {c})")
        }
        Requirement::Binary { name, apt_package } => {
            format!("`{name}` on PATH (apt-get install {apt_package})")
        }
        Requirement::PythonModule {
            module,
            apt_package,
        } => format!("python3 module {module} (apt-get install {apt_package})"),
        Requirement::CargoTool { name, krate } => {
            format!("`{name}` on PATH (cargo install {krate} --locked)")
        }
    }
}

/// The result of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// The command succeeded.
    Passed,
    /// The command failed, could not start, or a required tool is missing.
    Failed,
    /// A tool is missing and skips are allowed.
    Skipped,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Passed => "PASSED",
            Status::Failed => "FAILED",
            Status::Skipped => "SKIPPED",
        }
    }
}

/// One row of the summary.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// The step's name.
    pub(crate) name: &'static str,
    /// How it ended.
    pub(crate) status: Status,
    /// Wall-clock duration in seconds (0 for a step that did not run).
    pub(crate) seconds: f64,
}

/// Runs every step from `root` and prints the summary; exit status 1 if any step failed.
pub(crate) fn run(root: &Path, options: &TestOptions) -> ExitCode {
    let probe = SystemProbe;
    let total = Instant::now();
    let mut outcomes = Vec::with_capacity(STEPS.len());
    for (index, step) in STEPS.iter().enumerate() {
        println!(
            "\n==> [{}/{}] {} ({}) started {}",
            index + 1,
            STEPS.len(),
            step.name,
            describe(step),
            crate::time::now_utc()
        );
        let started = Instant::now();
        let status = match decide(step, &probe, options.require_all) {
            Decision::Run => run_step(root, step),
            Decision::Skip(missing) => {
                for m in &missing {
                    println!("{m}");
                }
                Status::Skipped
            }
            Decision::FailMissing(missing) => {
                for m in &missing {
                    println!("{m}");
                }
                println!(
                    "FAILED: --require-all does not allow skipping `{}`",
                    step.name
                );
                Status::Failed
            }
        };
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "<== {} {} in {seconds:.1} s at {}",
            step.name,
            status.label(),
            crate::time::now_utc()
        );
        outcomes.push(Outcome {
            name: step.name,
            status,
            seconds,
        });
    }
    print!("\n{}", summary(&outcomes));
    println!("total: {:.1} s", total.elapsed().as_secs_f64());
    let _ = std::io::stdout().flush();
    if outcomes.iter().any(|o| o.status == Status::Failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The command line of a step as a user would type it.
fn describe(step: &Step) -> String {
    let mut words: Vec<String> = step.env.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    match step.program {
        Program::Cargo => words.push("cargo".to_owned()),
        Program::CargoOn(toolchain) => words.push(format!("cargo +{toolchain}")),
    }
    words.extend(step.args.iter().map(|a| (*a).to_owned()));
    words.join(" ")
}

/// Runs one step's command and maps its exit status.
fn run_step(root: &Path, step: &Step) -> Status {
    let mut command = match step.program {
        Program::Cargo => Command::new(crate::cargo()),
        Program::CargoOn(toolchain) => {
            let mut command = Command::new("rustup");
            command.args(["run", toolchain, "cargo"]);
            command
        }
    };
    command.args(step.args).current_dir(root);
    for (key, value) in step.env {
        command.env(key, value);
    }
    let _ = std::io::stdout().flush();
    match command.status() {
        Ok(status) if status.success() => Status::Passed,
        Ok(status) => {
            println!("FAILED: `{}` exited with {status}", describe(step));
            Status::Failed
        }
        Err(error) => {
            println!("FAILED: could not start `{}`: {error}", describe(step));
            Status::Failed
        }
    }
}

/// The summary table: one row per step with its status and seconds.
pub(crate) fn summary(outcomes: &[Outcome]) -> String {
    let width = outcomes
        .iter()
        .map(|o| o.name.len())
        .chain(std::iter::once("step".len()))
        .max()
        .unwrap_or(4);
    let mut table = format!("{:<width$}  {:<7}  {:>8}\n", "step", "status", "seconds");
    for outcome in outcomes {
        table.push_str(&format!(
            "{:<width$}  {:<7}  {:>8.1}\n",
            outcome.name,
            outcome.status.label(),
            outcome.seconds
        ));
    }
    table
}

/// Asks rustup and searches `PATH`.
pub(crate) struct SystemProbe;

impl SystemProbe {
    /// Runs `rustup <args>` and returns its stdout lines, or why it could not.
    fn rustup_lines(args: &[&str]) -> Result<Vec<String>, String> {
        let output = Command::new("rustup")
            .args(args)
            .output()
            .map_err(|error| match error.kind() {
                std::io::ErrorKind::NotFound => {
                    "rustup is not on PATH; get it from https://rustup.rs".to_owned()
                }
                _ => format!("cannot run rustup: {error}"),
            })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!(
                "`rustup {}` failed: {}",
                args.join(" "),
                stderr.trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| line.trim().to_owned())
            .filter(|line| !line.is_empty())
            .collect())
    }
}

impl Probe for SystemProbe {
    fn installed_targets(&self) -> Result<Vec<String>, String> {
        Self::rustup_lines(&["target", "list", "--installed"])
    }

    fn installed_components(&self, toolchain: Option<&str>) -> Result<Vec<String>, String> {
        match toolchain {
            None => Self::rustup_lines(&["component", "list", "--installed"]),
            Some(toolchain) => {
                Self::rustup_lines(&["component", "list", "--installed", "--toolchain", toolchain])
            }
        }
    }

    fn on_path(&self, binary: &str) -> bool {
        std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| is_executable(&dir.join(binary)))
        })
    }

    fn python_module(&self, module: &str) -> bool {
        Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// Whether `path` is a file that may be executed.
fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = path.metadata() else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine described by lists; `None` means rustup (or the toolchain) is missing.
    struct FakeProbe {
        targets: Option<Vec<&'static str>>,
        components: Option<Vec<&'static str>>,
        nightly_components: Option<Vec<&'static str>>,
        path: Vec<&'static str>,
        python_modules: Vec<&'static str>,
    }

    impl FakeProbe {
        /// Everything the current steps need.
        fn complete() -> Self {
            FakeProbe {
                targets: Some(vec![
                    "x86_64-unknown-linux-gnu",
                    NO_STD_TARGET,
                    CROSS_TARGET,
                    ARMV7_TARGET,
                ]),
                components: Some(vec![
                    "cargo-x86_64-unknown-linux-gnu",
                    "clippy-x86_64-unknown-linux-gnu",
                    "rustfmt-x86_64-unknown-linux-gnu",
                ]),
                nightly_components: Some(vec![
                    "miri-x86_64-unknown-linux-gnu",
                    "rust-src",
                    "rustc-x86_64-unknown-linux-gnu",
                ]),
                path: vec![
                    "qemu-aarch64",
                    "aarch64-linux-gnu-gcc",
                    "cc",
                    "c++",
                    "cmake",
                    "valgrind",
                    "qemu-arm",
                    "arm-linux-gnueabihf-gcc",
                    "cargo-fuzz",
                    "python3",
                    "apt-get",
                    "dpkg-deb",
                ],
                python_modules: vec!["ensurepip"],
            }
        }
    }

    fn owned(list: &Option<Vec<&'static str>>, what: &str) -> Result<Vec<String>, String> {
        list.as_ref()
            .map(|l| l.iter().map(|s| (*s).to_owned()).collect())
            .ok_or_else(|| format!("no {what}"))
    }

    impl Probe for FakeProbe {
        fn installed_targets(&self) -> Result<Vec<String>, String> {
            owned(&self.targets, "rustup")
        }

        fn installed_components(&self, toolchain: Option<&str>) -> Result<Vec<String>, String> {
            match toolchain {
                None => owned(&self.components, "rustup"),
                Some(_) => owned(&self.nightly_components, "nightly toolchain"),
            }
        }

        fn on_path(&self, binary: &str) -> bool {
            self.path.contains(&binary)
        }

        fn python_module(&self, module: &str) -> bool {
            self.path.contains(&"python3") && self.python_modules.contains(&module)
        }
    }

    fn step(name: &str) -> &'static Step {
        STEPS.iter().find(|s| s.name == name).expect("step exists")
    }

    #[test]
    fn step_table_is_the_documented_one() {
        let names: Vec<&str> = STEPS.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "fmt",
                "clippy",
                "test",
                "nosimd",
                "doc",
                "no_std",
                "cross",
                "armv7",
                "fw_release",
                "capi",
                "fuzz",
                "sweep",
                "python",
                "wheels",
                "miri"
            ]
        );
        assert_eq!(
            describe(step("nosimd")),
            "SIMAK_SWEEPS=\"sampled\" cargo test --no-fail-fast -p simak -p simak-cli \
             -p simak-tests -p simak-qualify --features simak/scalar-only"
        );
        assert_eq!(
            describe(step("sweep")),
            "cargo xtask sweep --fp32 --stride 4099"
        );
        assert_eq!(describe(step("capi")), "cargo xtask capi");
        assert_eq!(
            describe(step("doc")),
            "RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps"
        );
        assert_eq!(
            describe(step("no_std")),
            "cargo build -p simak-core -p simak-ev74-fw --target thumbv7em-none-eabihf"
        );
    }

    #[test]
    fn all_steps_run_when_everything_is_installed() {
        let probe = FakeProbe::complete();
        for step in STEPS {
            assert_eq!(decide(step, &probe, true), Decision::Run, "{}", step.name);
        }
    }

    #[test]
    fn missing_target_skips_no_std_with_install_hint() {
        let probe = FakeProbe {
            targets: Some(vec!["x86_64-unknown-linux-gnu"]),
            ..FakeProbe::complete()
        };
        let missing = Missing {
            why: "rustup target thumbv7em-none-eabihf is not installed".to_owned(),
            install: "rustup target add thumbv7em-none-eabihf".to_owned(),
        };
        assert_eq!(
            missing.to_string(),
            "SKIPPED: rustup target thumbv7em-none-eabihf is not installed; \
             install with: rustup target add thumbv7em-none-eabihf"
        );
        assert_eq!(
            decide(step("no_std"), &probe, false),
            Decision::Skip(vec![missing.clone()])
        );
        assert_eq!(
            decide(step("no_std"), &probe, true),
            Decision::FailMissing(vec![missing])
        );
        assert_eq!(decide(step("test"), &probe, true), Decision::Run);
    }

    #[test]
    fn missing_rustup_skips_every_step_that_asks_it() {
        let probe = FakeProbe {
            targets: None,
            components: None,
            ..FakeProbe::complete()
        };
        let Decision::Skip(missing) = decide(step("fmt"), &probe, false) else {
            panic!("fmt must be skipped without rustup");
        };
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].install, "rustup component add rustfmt");
        assert!(missing[0].why.contains("no rustup"), "{}", missing[0].why);
        assert!(matches!(
            decide(step("no_std"), &probe, false),
            Decision::Skip(_)
        ));
        assert_eq!(decide(step("test"), &probe, false), Decision::Run);
    }

    #[test]
    fn a_skipped_step_lists_every_missing_piece() {
        let probe = FakeProbe {
            targets: Some(vec!["x86_64-unknown-linux-gnu"]),
            path: vec![],
            ..FakeProbe::complete()
        };
        let Decision::Skip(missing) = decide(step("cross"), &probe, false) else {
            panic!("cross must be skipped");
        };
        let installs: Vec<&str> = missing.iter().map(|m| m.install.as_str()).collect();
        assert_eq!(
            installs,
            [
                "rustup target add aarch64-unknown-linux-gnu",
                "apt-get install qemu-user",
                "apt-get install gcc-aarch64-linux-gnu",
            ]
        );
    }

    #[test]
    fn python_step_skips_without_python_or_venv_and_fails_under_require_all() {
        let no_venv = FakeProbe {
            python_modules: vec![],
            ..FakeProbe::complete()
        };
        let venv_missing = Missing {
            why: "`python3 -c 'import ensurepip'` fails".to_owned(),
            install: "apt-get install python3-venv".to_owned(),
        };
        assert_eq!(
            decide(step("python"), &no_venv, false),
            Decision::Skip(vec![venv_missing.clone()])
        );
        assert_eq!(
            decide(step("python"), &no_venv, true),
            Decision::FailMissing(vec![venv_missing])
        );
        let no_python = FakeProbe {
            path: vec![],
            ..FakeProbe::complete()
        };
        let Decision::Skip(missing) = decide(step("python"), &no_python, false) else {
            panic!("python must be skipped without python3");
        };
        let installs: Vec<&str> = missing.iter().map(|m| m.install.as_str()).collect();
        assert_eq!(
            installs,
            ["apt-get install python3", "apt-get install python3-venv"]
        );
        assert_eq!(describe(step("python")), "cargo xtask python");
        assert_eq!(describe(step("wheels")), "cargo xtask wheels");
    }

    #[test]
    fn help_lists_every_step_with_its_command_and_tools() {
        let text = help();
        for step in STEPS {
            assert!(text.contains(&describe(step)), "{}", step.name);
        }
        assert!(text.contains("--require-all"));
        assert!(text.contains("needs `qemu-aarch64` on PATH (apt-get install qemu-user)"));
        assert!(text.contains("needs nightly component miri"));
    }

    #[test]
    fn components_match_by_name_not_by_prefix() {
        let installed = [
            "clippy-x86_64-unknown-linux-gnu".to_owned(),
            "miri-aarch64-apple-darwin".to_owned(),
            "rust-src".to_owned(),
            "rust-std-x86_64-unknown-linux-gnu".to_owned(),
        ];
        assert!(has_component(&installed, "clippy"));
        assert!(has_component(&installed, "miri"));
        assert!(has_component(&installed, "rust-src"));
        assert!(has_component(&installed, "rust-std"));
        assert!(!has_component(&installed, "rust"));
        assert!(!has_component(&installed, "rustfmt"));
        assert!(!has_component(&installed, "clip"));
    }

    #[test]
    fn nightly_component_and_binary_requirements() {
        let present = FakeProbe::complete();
        let absent = FakeProbe {
            nightly_components: None,
            path: vec![],
            ..FakeProbe::complete()
        };
        let miri = Requirement::NightlyComponent("miri");
        let qemu = Requirement::Binary {
            name: "qemu-aarch64",
            apt_package: "qemu-user",
        };
        assert_eq!(check(&miri, &present), Ok(()));
        assert_eq!(check(&qemu, &present), Ok(()));
        assert_eq!(
            check(&miri, &absent).map_err(|m| m.install),
            Err("rustup toolchain install nightly --component miri".to_owned())
        );
        assert_eq!(
            check(&qemu, &absent),
            Err(Missing {
                why: "`qemu-aarch64` is not on PATH".to_owned(),
                install: "apt-get install qemu-user".to_owned(),
            })
        );
    }

    #[test]
    fn summary_lists_every_step() {
        let table = summary(&[
            Outcome {
                name: "fmt",
                status: Status::Passed,
                seconds: 0.42,
            },
            Outcome {
                name: "no_std",
                status: Status::Skipped,
                seconds: 0.0,
            },
            Outcome {
                name: "clippy",
                status: Status::Failed,
                seconds: 12.0,
            },
        ]);
        assert_eq!(
            table,
            "step    status    seconds\n\
             fmt     PASSED        0.4\n\
             no_std  SKIPPED       0.0\n\
             clippy  FAILED       12.0\n"
        );
    }

    #[test]
    fn system_probe_finds_sh_on_path() {
        assert!(SystemProbe.on_path("sh"));
        assert!(!SystemProbe.on_path("simak-no-such-binary"));
    }
}
