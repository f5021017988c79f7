//! Helpers shared by the integration tests of the `simak` binary.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_simak");

/// A file of `shared/data`.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/")).join(name)
}

/// Runs the binary.
pub fn simak<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the simak binary runs")
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
    let out = simak(args);
    assert_success(&out);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", stdout_of(&out)))
}

pub fn listing(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .expect("test folder is readable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

/// Checks a bad-input exit: status 2, exactly one stderr line `simak: error: …` mentioning
/// everything in `mentions`.
pub fn assert_bad(out: &Output, mentions: &[&str]) -> String {
    let err = stderr_of(out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stderr:\n{err}\nstdout:\n{}",
        stdout_of(out)
    );
    assert_eq!(err.lines().count(), 1, "exactly one line: {err:?}");
    assert!(err.ends_with('\n'));
    assert!(err.starts_with("simak: error: "), "{err}");
    for m in mentions {
        assert!(err.contains(m), "{err:?} should mention {m:?}");
    }
    err
}

/// Runs simak expecting bad input: exit 2, one stderr line naming everything in `mentions`,
/// nothing on stdout, and the folder `dir` unchanged (no output, no temporary file).
pub fn expect_bad<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    args: &[S],
    dir: &Path,
    mentions: &[&str],
) -> String {
    let before = listing(dir);
    let out = simak(args);
    let err = assert_bad(&out, mentions);
    assert!(out.stdout.is_empty(), "stdout: {}", stdout_of(&out));
    assert_eq!(listing(dir), before, "folder changed for {args:?}");
    err
}

/// Reads a little-endian `.npy` written by simak (or numpy) as (shape, raw data bytes,
/// descr, fortran).
pub fn read_npy(path: &Path) -> (Vec<u64>, Vec<u8>, String, bool) {
    let bytes = fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape = npy.shape().to_vec();
    let descr = npy.header().dtype().descr().trim_matches('\'').to_owned();
    let fortran = npy.header().order() == npyz::Order::Fortran;
    let header_len = bytes.len()
        - npy.header().dtype().num_bytes().unwrap() * shape.iter().product::<u64>() as usize;
    (shape, bytes[header_len..].to_vec(), descr, fortran)
}

pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
