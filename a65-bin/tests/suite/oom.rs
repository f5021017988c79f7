//! Out of memory is a clean failure, not an abort: `simak quant`, `casttess` and
//! `quanttess` (both backends) and `simak bench quant` run under a small address-space
//! limit (`ulimit -v` through `sh -c`) print one line naming the buffer and its bytes, exit
//! 2, and leave no output file and no temporary file.
//!
//! The limits are calibrated on the machine: for each command, the smallest limit (to 8
//! MiB) under which it succeeds on the test file, and the largest under which it fails;
//! there it must fail cleanly (an abort would be exit 134).
#![cfg(target_os = "linux")]

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use common::*;

const MIB: u64 = 1 << 20;
/// Elements of the test tensor: 64 MiB of FP32 input, 16 MiB of INT8 output.
const ELEMENTS: u64 = 16 << 20;

/// Runs the binary under `ulimit -v` of `limit` bytes, with one malloc arena (a thread's
/// own arena reserves 64 MiB of address space or not depending on timing, which would make
/// the limits flaky).
fn simak_limited(limit: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .env("MALLOC_ARENA_MAX", "1")
        .arg("-c")
        .arg(r#"ulimit -v "$1" && shift && exec "$@""#)
        .arg("sh")
        .arg((limit / 1024).to_string())
        .arg(BIN)
        .args(args)
        .output()
        .expect("sh runs")
}

/// A `.npy` file of `ELEMENTS` FP32 values (a ramp, so the output is not all zeros).
fn write_npy(path: &Path) {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({ELEMENTS},), }}");
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&header);
    bytes.reserve(ELEMENTS as usize * 4);
    for i in 0..ELEMENTS {
        bytes.extend_from_slice(&((i % 251) as f32 - 125.0).to_le_bytes());
    }
    fs::write(path, bytes).unwrap();
}

/// The arguments of one command over `input` into `output`.
fn command_args<'a>(command: &str, input: &'a Path, output: &'a Path) -> Vec<&'a str> {
    let io = ["--input", path_str(input), "--output", path_str(output)];
    let tiled = ["--axes", "-1,-1,0,-1", "--tile", "1,1,64,1"];
    let rest: &[&str] = match command {
        "quant-a65" => &["quant", "--multiplier", "1", "--backend", "a65"],
        "quant-ev74" => &["quant", "--multiplier", "1", "--backend", "ev74-sim"],
        "casttess-a65" => &["casttess", "--backend", "a65"],
        "casttess-ev74" => &["casttess", "--backend", "ev74-sim"],
        "quanttess" => &["quanttess", "--multiplier", "1"],
        other => panic!("no command {other}"),
    };
    let mut args = vec![rest[0], "-q"];
    args.extend_from_slice(&io);
    args.extend_from_slice(&rest[1..]);
    if command.contains("tess") {
        args.extend_from_slice(&tiled);
    }
    args
}

/// The limits (to 8 MiB) around the smallest under which `args` succeeds: `(fails,
/// succeeds)`. `output` is removed before each run.
fn limits(args: &[&str], output: &Path) -> (u64, u64) {
    let ok = |limit: u64| {
        let _ = fs::remove_file(output);
        simak_limited(limit, args).status.success()
    };
    let mut high = 64 * MIB;
    while !ok(high) {
        high += 64 * MIB;
        assert!(
            high <= 8192 * MIB,
            "{args:?} never succeeds under ulimit -v"
        );
    }
    let mut low = high - 64 * MIB;
    while high - low > 8 * MIB {
        let mid = (low + high) / 2;
        if ok(mid) { high = mid } else { low = mid }
    }
    assert!(ok(high), "the calibrated limit is reproducible");
    (low, high)
}

/// Expects the clean out-of-memory failure: exit 2, one line naming what and how many
/// bytes (`cannot allocate WHAT (N bytes): out of memory`, or `cannot read: out of memory`
/// when the input itself does not fit).
fn assert_oom(out: &Output) {
    let err = stderr_of(out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected a clean failure (exit 2), got {:?}\nstderr:\n{err}",
        out.status
    );
    assert_eq!(err.lines().count(), 1, "one line on stderr:\n{err}");
    let line = err.trim_end();
    assert!(line.starts_with("simak: error: "), "{line}");
    assert!(
        (line.contains("cannot allocate ") && line.ends_with(" bytes): out of memory"))
            || line.ends_with("cannot read: out of memory"),
        "{line}"
    );
}

/// Every converting command, on either backend, run just below the memory it needs fails
/// cleanly (exit 2, one line), writes no output and leaves no temporary file, and leaves an
/// existing output untouched; just above, it succeeds, with the same bytes on both backends.
#[test]
fn converting_commands_fail_cleanly_when_memory_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.npy");
    write_npy(&input);
    let mut results: Vec<(&str, Vec<u8>)> = Vec::new();
    for command in [
        "quant-a65",
        "quant-ev74",
        "casttess-a65",
        "casttess-ev74",
        "quanttess",
    ] {
        let output = d.join(format!("{command}.out"));
        let output = if command.starts_with("quant-") {
            output.with_extension("npy")
        } else {
            output.with_extension("bin")
        };
        let args = command_args(command, &input, &output);
        let (fails, succeeds) = limits(&args, &output);
        let _ = fs::remove_file(&output);
        let _ = fs::remove_file(d.join(format!("{}.json", output.display())));
        let before = listing(d);
        let out = simak_limited(fails, &args);
        assert_oom(&out);
        assert_eq!(
            listing(d),
            before,
            "{command}: no output and no temporary file"
        );
        // An existing output (and sidecar) is left untouched by the failure.
        fs::write(&output, b"keep").unwrap();
        let out = simak_limited(fails, &args);
        assert_oom(&out);
        assert_eq!(fs::read(&output).unwrap(), b"keep", "{command}");
        fs::remove_file(&output).unwrap();
        assert_success(&simak_limited(succeeds, &args));
        results.push((command, fs::read(&output).unwrap()));
        eprintln!(
            "{command}: fails at {} MiB, succeeds at {} MiB",
            fails / MIB,
            succeeds / MIB
        );
    }
    assert!(
        results[0].1 == results[1].1,
        "quant: ev74-sim bytes differ from a65"
    );
    assert!(
        results[2].1 == results[3].1,
        "casttess: ev74-sim bytes differ from a65"
    );
}

#[test]
fn bench_fails_cleanly_when_memory_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.npy");
    write_npy(&input);
    let output = dir.path().join("a65.npy");
    let (_, limit) = limits(&command_args("quant-a65", &input, &output), &output);
    // 128 MiB of generated input do not fit where the 64 MiB file barely did.
    let out = simak_limited(limit, &["bench", "quant", "--elements", "33554432"]);
    assert_oom(&out);
    assert!(stderr_of(&out).contains("cannot allocate the input buffer ("));
    assert!(
        stderr_of(&out).contains("(134217728 bytes)"),
        "{}",
        stderr_of(&out)
    );
}
