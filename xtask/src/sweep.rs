//! `cargo xtask sweep …`: the exhaustive FP32 Quant sweep.
//!
//! The work is done by the `sweep` binary of the `simak-tests` package (xtask has no
//! dependency on the workspace crates, so that it compiles in seconds); this builds it in
//! release mode and passes the arguments through unchanged.

use std::path::Path;
use std::process::{Command, ExitCode};

/// The command that runs the sweep binary with `args`.
pub(crate) fn command(root: &Path, args: &[String]) -> Command {
    let mut command = Command::new(crate::cargo());
    command
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "simak-tests",
            "--bin",
            "sweep",
            "--",
        ])
        .args(args)
        .current_dir(root);
    command
}

/// Runs the sweep binary and forwards its exit status.
pub(crate) fn run(root: &Path, args: &[String]) -> ExitCode {
    match command(root, args).status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| c.clamp(1, 255) as u8)),
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn runs_the_tests_package_binary_in_release() {
        let command = super::command(Path::new("."), &["--fp32".to_owned()]);
        let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
        assert_eq!(
            args.join(" "),
            "run --quiet --release -p simak-tests --bin sweep -- --fp32"
        );
    }
}
