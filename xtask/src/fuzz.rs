//! `cargo xtask fuzz [--seconds N]`: runs every cargo-fuzz target for N seconds each, two
//! at a time after one build of them all.
//!
//! Targets are the files of `fuzz/fuzz_targets/`. Each run reads the committed seed corpus
//! `fuzz/corpus/<target>/` but writes new inputs to a scratch corpus under `fuzz/target/`
//! (ignored by git), so a run never dirties the tree. A crash fails the run; libFuzzer
//! leaves the input under `fuzz/artifacts/<target>/`, to become a regression test.
//!
//! Every target runs with `-timeout=10`: one input taking 10 s is a bug (libFuzzer's
//! default of 20 minutes would stall the run instead). The file-reader targets (`read_*`)
//! also run under a libFuzzer malloc limit (`extra_flags`): inputs are at most 4 KiB
//! (libFuzzer's default `-max_len`), so for npy and safetensors an allocation of hundreds
//! of MiB is out of proportion to the input and fails the run; images may allocate up to
//! the CLI's decoder and tensor limits (512 MiB each), and no more.

use std::path::Path;
use std::process::{Command, ExitCode};

use crate::flags::FuzzOptions;

/// Fuzz targets run at once.
const PARALLEL: usize = 2;

/// Builds the fuzz targets, then runs each for `options.seconds`, [`PARALLEL`] at a time.
pub(crate) fn run(root: &Path, options: &FuzzOptions) -> ExitCode {
    let targets = match targets(&root.join("fuzz/fuzz_targets")) {
        Ok(t) if !t.is_empty() => t,
        Ok(_) => {
            eprintln!("error: no fuzz targets in fuzz/fuzz_targets");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("error: cannot list fuzz/fuzz_targets: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Build every target once, then run them two at a time (CI's machine has two cores;
    // each run is one libFuzzer process, so a pair keeps both busy).
    println!("==> fuzz build ({} targets)", targets.len());
    let built = Command::new("rustup")
        .args(["run", "nightly", "cargo", "fuzz", "build"])
        .current_dir(root)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("error: cargo fuzz build failed");
        return ExitCode::FAILURE;
    }
    let mut failed = Vec::new();
    for pair in targets.chunks(PARALLEL) {
        let mut running = Vec::new();
        for target in pair {
            let scratch = root.join("fuzz/target/xtask-corpus").join(target);
            if let Err(e) = std::fs::create_dir_all(&scratch) {
                eprintln!("error: cannot create {}: {e}", scratch.display());
                return ExitCode::FAILURE;
            }
            let seeds = root.join("fuzz/corpus").join(target);
            println!("==> fuzz {target} for {} s", options.seconds);
            let child = Command::new("rustup")
                .args(["run", "nightly", "cargo", "fuzz", "run", target])
                .arg(&scratch)
                .arg(&seeds)
                .args(extra_corpora(target).iter().map(|d| root.join(d)))
                .arg("--")
                .arg(format!("-max_total_time={}", options.seconds))
                .arg("-timeout=10")
                .args(extra_flags(target))
                .current_dir(root)
                .spawn();
            running.push((target, child));
        }
        for (target, child) in running {
            match child.and_then(|mut c| c.wait()) {
                Ok(s) if s.success() => println!("<== fuzz {target}: no crash"),
                Ok(s) => {
                    println!("<== fuzz {target} FAILED ({s})");
                    failed.push(target.clone());
                }
                Err(e) => {
                    println!("<== fuzz {target}: could not run cargo fuzz: {e}");
                    failed.push(target.clone());
                }
            }
        }
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("fuzz targets that failed: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}

/// libFuzzer flags of `target` beyond the run time: a malloc limit for the file readers
/// (a single allocation above it is reported as a crash, with the input kept). npy and
/// safetensors allocate no more than the file's size; an image may legitimately allocate
/// up to the decoder limit and the FP32 tensor limit of the CLI (512 MiB each).
pub(crate) fn extra_flags(target: &str) -> &'static [&'static str] {
    match target {
        "read_npy" | "read_safetensors" | "model_mpk" => &["-malloc_limit_mb=256"],
        "read_image" => &["-malloc_limit_mb=600"],
        _ => &[],
    }
}

/// Seed folders of `target` beyond `fuzz/corpus/<target>/`, from the repository root: the
/// test data a target reads (read only; libFuzzer writes only to the first corpus).
pub(crate) fn extra_corpora(target: &str) -> &'static [&'static str] {
    match target {
        "model_mpk" => &["tests/data/mpk", "tests/data/mpk/errors"],
        _ => &[],
    }
}

/// The target names: `.rs` file stems of `dir`, sorted.
fn targets(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "rs")
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            names.push(stem.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_the_committed_targets() {
        let root = crate::project_root();
        let names = super::targets(&root.join("fuzz/fuzz_targets")).unwrap();
        for target in [
            "admission",
            "bind",
            "casttess_decode",
            "detess_decode",
            "model_mpk",
            "preproc_decode",
            "quant_decode",
            "read_image",
            "read_npy",
            "read_safetensors",
            "relocate",
        ] {
            assert!(names.contains(&target.to_owned()), "{target}: {names:?}");
        }
    }

    #[test]
    fn readers_run_under_a_malloc_limit() {
        assert_eq!(super::extra_flags("read_npy"), ["-malloc_limit_mb=256"]);
        assert_eq!(super::extra_flags("read_image"), ["-malloc_limit_mb=600"]);
        assert!(super::extra_flags("bind").is_empty());
    }

    #[test]
    fn model_mpk_reads_the_manifests_as_seeds() {
        let root = crate::project_root();
        for dir in super::extra_corpora("model_mpk") {
            let n = std::fs::read_dir(root.join(dir))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".mpk.json"))
                })
                .count();
            assert!(n >= 3, "{dir}: {n} manifests");
        }
    }
}
