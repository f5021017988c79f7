//! Helpers shared by the integration tests of the `simak` binary.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
pub use simak_tests::cli::{assert_success, path_str, stderr_of, stdout_of};

pub const BIN: &str = env!("CARGO_BIN_EXE_simak");

/// A file of the repository's `tests/data/` (panics naming the path when it is missing).
pub fn data(name: &str) -> PathBuf {
    simak_tests::data::path(name)
}

/// The MiniLM subset in FP32 (`tests/data/README.md`): 19 tensors, matrices cut to leading
/// row slices named `name[:rows]`.
pub const MINILM_F32: &str = "minilm-l6-layer0-f32-subset.safetensors";
/// The same tensors in BF16.
pub const MINILM_BF16: &str = "minilm-l6-layer0-bf16-subset.safetensors";
/// The same tensors in FP16.
pub const MINILM_F16: &str = "minilm-l6-layer0-f16-subset.safetensors";

/// `chelsea.png` as a float32 `.npy` in [0, 1], HWC `[300, 451, 3]`, C order: each 8-bit
/// sample `p` becomes `p as f32 / 255.0` (one binary32 division). Built from the PNG once
/// per test process into cargo's target tmp folder and shared by the tests.
///
/// # Panics
///
/// When the PNG is missing or the file cannot be written.
pub fn chelsea_npy() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let rgb = image::open(data("chelsea.png"))
                .expect("chelsea.png decodes")
                .to_rgb8();
            let (w, h) = rgb.dimensions();
            let values: Vec<f32> = rgb.as_raw().iter().map(|&p| f32::from(p) / 255.0).collect();
            let mut bytes = Vec::new();
            {
                use npyz::WriterBuilder;
                let mut writer = npyz::WriteOptions::<f32>::new()
                    .default_dtype()
                    .shape(&[u64::from(h), u64::from(w), 3])
                    .writer(&mut bytes)
                    .begin_nd()
                    .expect("npy header");
                writer.extend(values).expect("npy data");
                writer.finish().expect("npy end");
            }
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
            let path = dir.join("chelsea-f32-hwc.npy");
            // Another test process may build it at the same time: write a file of our own,
            // then rename it into place (both write the same bytes).
            let own = dir.join(format!("chelsea-f32-hwc.{}.tmp", std::process::id()));
            fs::write(&own, &bytes).unwrap_or_else(|e| panic!("{}: {e}", own.display()));
            fs::rename(&own, &path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            path
        })
        .clone()
}

/// Runs the binary.
pub fn simak<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    simak_tests::cli::run(BIN, args)
}

/// Runs the binary, expects success, returns stdout parsed as JSON (`--json` must be given).
pub fn json_run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Value {
    simak_tests::cli::json_run(BIN, args)
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

/// Writes a `.npy` whose header comes from npyz (`descr`, shape, order) and whose data is
/// `data` verbatim.
pub fn write_npy(path: &Path, descr: &str, shape: &[u64], order: npyz::Order, data: &[u8]) {
    use npyz::WriterBuilder;
    let mut buf = Vec::new();
    npyz::WriteOptions::<f32>::new()
        .dtype(npyz::DType::Plain(descr.parse().unwrap()))
        .shape(shape)
        .order(order)
        .writer(&mut buf)
        .write_header_only()
        .unwrap();
    buf.extend_from_slice(data);
    fs::write(path, buf).unwrap();
}
