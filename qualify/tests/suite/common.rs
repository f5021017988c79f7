//! Helpers shared by the integration tests of the `simak-qualify` binary (the generic ones
//! are `simak_tests::cli`'s, shared with the `simak` binary's suite).

use std::process::Output;

use serde_json::Value;
pub use simak_tests::cli::{assert_success, path_str, stderr_of, stdout_of};

pub const BIN: &str = env!("CARGO_BIN_EXE_simak-qualify");

/// Runs the binary.
pub fn qualify<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    simak_tests::cli::run(BIN, args)
}

/// Runs the binary, expects success, returns stdout parsed as JSON (`--json` must be given).
pub fn json_run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Value {
    simak_tests::cli::json_run(BIN, args)
}
