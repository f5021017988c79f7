//! Helpers shared by the integration tests of the `simak-qualify` binary.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_simak-qualify");

/// Runs the binary.
pub fn qualify<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the simak-qualify binary runs")
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

pub fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout_of(out),
        stderr_of(out)
    );
}

/// Runs the binary, expects success, returns stdout parsed as JSON (`--json` must be given).
pub fn json_run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Value {
    let out = qualify(args);
    assert_success(&out);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", stdout_of(&out)))
}
