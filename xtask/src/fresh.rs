//! `cargo xtask fresh-clone`: the repository as a new user gets it.
//!
//! Clones the committed state (`HEAD`, no uncommitted change) into `target/fresh/simak`,
//! where nothing else is beside the clone, runs `cargo test --workspace` there, and prints
//! the time each part took and the disk use of the clone and of its build folder. This is
//! what CI does on every stop; run it before calling a change done.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Where the clone goes, below the workspace root.
const FRESH_DIR: &str = "target/fresh";

/// Runs the fresh-clone check from the workspace `root`.
pub(crate) fn run(root: &Path) -> ExitCode {
    let parent = root.join(FRESH_DIR);
    let clone = parent.join("simak");
    if parent.exists()
        && let Err(e) = std::fs::remove_dir_all(&parent)
    {
        eprintln!("error: cannot remove {}: {e}", parent.display());
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::create_dir_all(&parent) {
        eprintln!("error: cannot create {}: {e}", parent.display());
        return ExitCode::FAILURE;
    }
    let started = Instant::now();
    let cloned = Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks"])
        .arg(root)
        .arg(&clone)
        .status();
    match cloned {
        Ok(status) if status.success() => {}
        Ok(status) => {
            eprintln!("error: git clone exited with {status}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("error: cannot run git: {e}");
            return ExitCode::FAILURE;
        }
    }
    let clone_bytes = disk_use(&clone);
    println!(
        "fresh-clone: cloned HEAD into {} ({:.1} MiB, {:.1} s); nothing else is in {}",
        clone.display(),
        clone_bytes as f64 / f64::from(1 << 20),
        started.elapsed().as_secs_f64(),
        parent.display()
    );
    let tests = Instant::now();
    // The clone builds into its own target folder, as a new user's would.
    let status = Command::new(crate::cargo())
        .args(["test", "--workspace", "--no-fail-fast"])
        .current_dir(&clone)
        .env_remove("CARGO_TARGET_DIR")
        .status();
    let seconds = tests.elapsed().as_secs_f64();
    let target_bytes = disk_use(&clone.join("target"));
    println!(
        "fresh-clone: cargo test --workspace took {seconds:.1} s; disk use: clone {:.1} MiB, \
         its target folder {:.1} MiB",
        clone_bytes as f64 / f64::from(1 << 20),
        target_bytes as f64 / f64::from(1 << 20)
    );
    match status {
        Ok(s) if s.success() => {
            println!(
                "fresh-clone: PASSED in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Ok(s) => {
            println!("fresh-clone: FAILED: cargo test exited with {s}");
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("fresh-clone: FAILED: cannot run cargo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Bytes of the regular files under `dir` (0 when it does not exist; symbolic links are
/// not followed).
fn disk_use(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                pending.push(entry.path());
            } else if file_type.is_file() {
                total += entry.metadata().map_or(0, |m| m.len());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    #[test]
    fn disk_use_sums_the_files() {
        let dir = std::env::temp_dir().join(format!("xtask-disk-use-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("x"), [0u8; 10]).unwrap();
        std::fs::write(dir.join("a/b/y"), [0u8; 32]).unwrap();
        assert_eq!(super::disk_use(&dir), 42);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(super::disk_use(&dir), 0);
    }
}
