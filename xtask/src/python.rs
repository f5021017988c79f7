//! `cargo xtask python`: the Python package (`bindings/python`) built, installed into a
//! virtual environment under `target/python/venv` and tested with pytest;
//! `cargo xtask python --aarch64-wheel` builds (does not run) the AArch64 abi3 wheel.
//!
//! The extension is compiled with `CARGO_TARGET_DIR=target/python`, so repeated runs reuse
//! that build and the main workspace's `target/` stays untouched by PyO3. The environment's
//! tools come from PyPI through pip (maturin as the PEP 517 backend, pytest and the test
//! dependencies); the package is installed from the working tree with
//! `pip install --no-build-isolation ./bindings/python`, as a user would install it.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// What the environment needs besides the package: the build backend, the declared
/// runtime dependencies and the test dependencies (`[project.optional-dependencies] test`;
/// mypy for the stub check).
pub(crate) const VENV_PACKAGES: &[&str] = &[
    "maturin>=1.5,<2",
    "numpy>=2",
    "ml_dtypes>=0.2",
    "pytest",
    "safetensors",
    "pillow",
    "mypy",
];

/// The AArch64 target of the cross-built wheel (the A65 is an AArch64 core).
pub(crate) const WHEEL_TARGET: &str = "aarch64-unknown-linux-gnu";

/// Paths of one run, relative to the repository root.
pub(crate) struct Layout {
    /// `target/python`: the cargo target directory of the extension.
    pub(crate) target: PathBuf,
    /// `target/python/venv`.
    pub(crate) venv: PathBuf,
    /// `bindings/python`.
    pub(crate) package: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: &Path) -> Layout {
        let target = root.join("target").join("python");
        Layout {
            venv: target.join("venv"),
            target,
            package: root.join("bindings").join("python"),
        }
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.venv.join("bin").join(name)
    }
}

/// The commands of a run, in order (built, not started, so that tests can read them).
pub(crate) fn commands(root: &Path, aarch64_wheel: bool) -> Vec<Command> {
    let l = Layout::new(root);
    let python = l.bin("python");
    let mut out = Vec::new();
    if !python.exists() {
        let mut venv = Command::new("python3");
        venv.arg("-m").arg("venv").arg(&l.venv);
        out.push(venv);
    }
    let mut tools = Command::new(&python);
    tools.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]);
    tools.args(VENV_PACKAGES);
    out.push(tools);
    if aarch64_wheel {
        let mut wheel = Command::new(l.bin("maturin"));
        wheel
            .args(["build", "--release", "--target", WHEEL_TARGET, "--out"])
            .arg(l.target.join("wheels"))
            .arg("--manifest-path")
            .arg(l.package.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &l.target)
            .env(
                "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
                "aarch64-linux-gnu-gcc",
            )
            .current_dir(root);
        out.push(wheel);
        return out;
    }
    let mut install = Command::new(&python);
    install
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-build-isolation",
            "--no-deps",
            "--force-reinstall",
        ])
        .arg(&l.package)
        .env("CARGO_TARGET_DIR", &l.target)
        .current_dir(root);
    out.push(install);
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q"])
        .arg(l.package.join("tests"))
        .current_dir(root);
    out.push(pytest);
    out
}

fn shown(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    words.join(" ")
}

/// Runs the commands in order, stopping at the first failure.
pub(crate) fn run(root: &Path, aarch64_wheel: bool) -> ExitCode {
    for mut command in commands(root, aarch64_wheel) {
        println!("==> {}", shown(&command));
        match command.status() {
            Ok(status) if status.success() => {}
            Ok(status) => {
                println!("<== python FAILED ({status}): {}", shown(&command));
                return ExitCode::FAILURE;
            }
            Err(e) => {
                println!("<== python FAILED: cannot run {}: {e}", shown(&command));
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_under_target_python_and_runs_pytest() {
        let root = Path::new("/repo");
        let commands = commands(root, false);
        let lines: Vec<String> = commands.iter().map(shown).collect();
        // The venv exists only after a first run; the other commands are always there.
        let tail = &lines[lines.len() - 3..];
        assert!(tail[0].starts_with("/repo/target/python/venv/bin/python -m pip install"));
        assert!(tail[0].contains("maturin>=1.5,<2") && tail[0].contains("pytest"));
        assert!(
            tail[1].ends_with(
                "--no-build-isolation --no-deps --force-reinstall /repo/bindings/python"
            )
        );
        assert_eq!(
            tail[2],
            "/repo/target/python/venv/bin/python -m pytest -p no:cacheprovider -q /repo/bindings/python/tests"
        );
        let install = &commands[commands.len() - 2];
        let env: Vec<_> = install.get_envs().collect();
        assert!(env.iter().any(|(k, v)| *k == "CARGO_TARGET_DIR"
            && v.is_some_and(|v| v == Path::new("/repo/target/python"))));
    }

    #[test]
    fn the_wheel_is_cross_built_not_run() {
        let commands = commands(Path::new("/repo"), true);
        let last = shown(commands.last().expect("a command"));
        assert_eq!(
            last,
            "/repo/target/python/venv/bin/maturin build --release --target aarch64-unknown-linux-gnu \
             --out /repo/target/python/wheels --manifest-path /repo/bindings/python/Cargo.toml"
        );
        assert!(!commands.iter().any(|c| shown(c).contains("pytest -p")));
    }
}
