//! Out of memory is a clean failure, not an abort: `simak quant --backend ev74-sim` and
//! `simak bench quant` run under a small address-space limit (`ulimit -v` through `sh -c`)
//! print one line naming the buffer and its bytes, exit 2, and leave no output file.
//!
//! The limit is calibrated on the machine: the smallest limit (to 8 MiB) under which
//! `--backend a65` succeeds on the test file. The simulated device needs about one more
//! copy of the input than that (its device memory), so a little above the calibrated
//! limit it must fail cleanly, and with room for that one copy it must succeed with the
//! same bytes as the A65.
#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
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

fn quant_args<'a>(input: &'a Path, output: &'a Path, backend: &'a str) -> Vec<&'a str> {
    vec![
        "quant",
        "--input",
        path_str(input),
        "--output",
        path_str(output),
        "--multiplier",
        "1",
        "--backend",
        backend,
        "-q",
    ]
}

/// The smallest limit (to 8 MiB) under which the A65 quantizes `input` (into `output`).
fn a65_limit(input: &Path, output: &Path) -> u64 {
    let ok = |limit: u64| {
        let _ = fs::remove_file(output);
        simak_limited(limit, &quant_args(input, output, "a65"))
            .status
            .success()
    };
    let mut high = 64 * MIB;
    while !ok(high) {
        high += 64 * MIB;
        assert!(high <= 8192 * MIB, "the A65 never succeeds under ulimit -v");
    }
    let mut low = high - 64 * MIB;
    while high - low > 8 * MIB {
        let mid = (low + high) / 2;
        if ok(mid) { high = mid } else { low = mid }
    }
    assert!(ok(high), "the calibrated limit is reproducible");
    high
}

/// Expects the clean out-of-memory failure: exit 2, one line naming what and how many bytes.
fn assert_oom(out: &Output, what: &str) {
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
        line.contains(&format!("cannot allocate {what} ("))
            && line.ends_with(" bytes): out of memory"),
        "{line}"
    );
}

#[test]
fn ev74_sim_quant_fails_cleanly_when_memory_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.npy");
    write_npy(&input);
    let a65_out = dir.path().join("a65.npy");
    let limit = a65_limit(&input, &a65_out);
    assert!(a65_out.exists());

    // Short of one input copy: the device memory cannot be allocated.
    let ev74_out = dir.path().join("ev74.npy");
    let out = simak_limited(limit + 24 * MIB, &quant_args(&input, &ev74_out, "ev74-sim"));
    assert_oom(&out, "the simulated EV74 memory");
    assert!(
        stderr_of(&out).contains(&format!("({} bytes)", ELEMENTS * 4)),
        "the input region's bytes: {}",
        stderr_of(&out)
    );
    assert!(!ev74_out.exists(), "no output file on failure");
    assert_eq!(
        listing(dir.path()),
        BTreeSet::from(["a65.npy", "in.npy"].map(String::from))
    );

    // An existing output is left untouched by the failure.
    fs::write(&ev74_out, b"keep").unwrap();
    let out = simak_limited(limit + 24 * MIB, &quant_args(&input, &ev74_out, "ev74-sim"));
    assert_oom(&out, "the simulated EV74 memory");
    assert_eq!(fs::read(&ev74_out).unwrap(), b"keep");

    // With room for the device's copy of the input (and nothing more: no host copy of the
    // output, no per-byte write counts) the simulator succeeds with the A65's bytes.
    let out = simak_limited(
        limit + 112 * MIB,
        &quant_args(&input, &ev74_out, "ev74-sim"),
    );
    assert_success(&out);
    assert_eq!(fs::read(&ev74_out).unwrap(), fs::read(&a65_out).unwrap());
}

#[test]
fn bench_fails_cleanly_when_memory_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.npy");
    write_npy(&input);
    let limit = a65_limit(&input, &dir.path().join("a65.npy"));
    // 128 MiB of generated input do not fit where the 64 MiB file barely did.
    let out = simak_limited(limit, &["bench", "quant", "--elements", "33554432"]);
    assert_oom(&out, "the input buffer");
    assert!(
        stderr_of(&out).contains("(134217728 bytes)"),
        "{}",
        stderr_of(&out)
    );
}
