//! `cargo xtask miri`: the curated Miri subset, `cargo +nightly miri test`.
//!
//! Miri runs one test file, `std-adapter/tests/miri_subset.rs`: the portable (exact,
//! intrinsic-free) paths of the A65 Quant execution on contiguous, strided and split
//! inputs, and the Runtime's retention and completion logic over the simulated transport
//! (threads included). SIMD routes are not run: Miri cannot execute AVX-512 reliably.

use std::path::Path;
use std::process::{Command, ExitCode};

/// The Miri flags: none needed beyond the defaults (isolation stays on).
pub(crate) const MIRIFLAGS: &str = "";

/// The command that runs the subset.
pub(crate) fn command(root: &Path) -> Command {
    let mut command = Command::new("rustup");
    command
        .args([
            "run",
            "nightly",
            "cargo",
            "miri",
            "test",
            "-p",
            "simak",
            "--test",
            "miri_subset",
        ])
        .env("MIRIFLAGS", MIRIFLAGS)
        .current_dir(root);
    command
}

/// Runs the subset and forwards its exit status.
pub(crate) fn run(root: &Path) -> ExitCode {
    println!("==> cargo +nightly miri test -p simak --test miri_subset");
    match command(root).status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            println!("<== miri FAILED ({status})");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: cannot run rustup: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn runs_the_subset_on_nightly() {
        let command = super::command(Path::new("."));
        let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
        assert_eq!(
            args.join(" "),
            "run nightly cargo miri test -p simak --test miri_subset"
        );
    }
}
