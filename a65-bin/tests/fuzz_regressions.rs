//! Regressions found by the fuzz targets of the file readers (`fuzz/fuzz_targets/read_*.rs`),
//! each replayed from its committed input under `fuzz/corpus/<target>/`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use simak::DType;
use simak_cli::read::read_npy;

fn corpus(target: &str, name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, bytes)
}

/// `read_npy`, seed `regress_nested_braces`: a header opening 13 `{` kept npyz's
/// backtracking parser busy for seconds (minutes at 50 deep, exponential in the depth).
/// The reader now refuses headers nested deeper than `NPY_MAX_DEPTH` before npyz sees them.
#[test]
fn deeply_nested_npy_header_is_refused_at_once() {
    let (path, bytes) = corpus("read_npy", "regress_nested_braces");
    let start = Instant::now();
    let err = read_npy(&path, &bytes, &[DType::F32], "test").unwrap_err();
    let message = err.to_string();
    assert!(message.contains("nests brackets 14 deep"), "{message}");
    eprintln!("refused in {:?}", start.elapsed());
}
