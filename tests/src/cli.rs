//! Helpers of the integration tests that run a built programme (`simak` in
//! `a65-bin/tests/suite`, `simak-qualify` in `qualify/tests/suite`): run it, read and check
//! its output, and the `sh` blocks of a Markdown file that the README tests run.
//!
//! Behind the `cli` feature, which only those test suites enable (the `simak-qualify`
//! binary links this crate without it).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs the programme `bin` (a path, `env!("CARGO_BIN_EXE_…")`) with `args`.
///
/// # Panics
///
/// When the programme cannot be started.
pub fn run<S: AsRef<OsStr>>(bin: &str, args: &[S]) -> Output {
    Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{bin} runs: {e}"))
}

/// `p` as UTF-8 (test paths are).
///
/// # Panics
///
/// When `p` is not UTF-8.
pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// The standard output of a run, lossily as UTF-8.
pub fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The standard error of a run, lossily as UTF-8.
pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that the run exited 0.
///
/// # Panics
///
/// Otherwise, with the exit code and both streams.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout_of(out),
        stderr_of(out)
    );
}

/// Runs `bin` with `args` (which must ask for JSON), expects success, and returns its
/// standard output parsed as JSON.
///
/// # Panics
///
/// When the run fails or its output is not JSON.
pub fn json_run<S: AsRef<OsStr>>(bin: &str, args: &[S]) -> Value {
    let out = run(bin, args);
    assert_success(&out);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", stdout_of(&out)))
}

/// Runs `script` with `sh -e -c` in `dir` and asserts that it succeeds.
///
/// # Panics
///
/// When `sh` cannot start or the script fails: with `what` (which block of which file),
/// the exit status and both streams.
pub fn run_sh(script: &str, dir: &Path, what: &str) {
    let out = Command::new("sh")
        .args(["-e", "-c", script])
        .current_dir(dir)
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout_of(&out),
        stderr_of(&out)
    );
}

/// The fenced code blocks of `markdown` whose info string is `sh`, in order.
pub fn sh_blocks(markdown: &str) -> Vec<String> {
    use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) if &*info == "sh" => {
                current = Some(String::new());
            }
            Event::Text(text) => {
                if let Some(block) = current.as_mut() {
                    block.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(current.take()),
            _ => {}
        }
    }
    blocks
}
