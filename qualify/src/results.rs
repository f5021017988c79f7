//! The results file of a qualification run, and the machine facts it records.

use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::measure::IdResult;

/// The `format` value of a results file.
pub const FORMAT: &str = "simak-qualify-results/1";

/// Facts about the machine and the build that measured a results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// `model name` from `/proc/cpuinfo` (`null` when unknown).
    pub cpu_model: Option<String>,
    /// The CPU features the kernels select on, as detected at run time.
    pub cpu_features: Vec<String>,
    /// Logical CPUs available to the process.
    pub logical_cpus: usize,
    /// `std::env::consts::OS` and `ARCH`.
    pub os: String,
    /// CPU architecture.
    pub arch: String,
    /// The load average when the run started (`/proc/loadavg`, 1, 5 and 15 minutes).
    pub load_average: Option<[f64; 3]>,
    /// `git rev-parse HEAD` in the current folder (`null` outside a repository).
    pub commit: Option<String>,
    /// Whether tracked files differ from that commit (`git status --porcelain`).
    pub dirty: Option<bool>,
    /// The version of the `simak` tool.
    pub simak_version: String,
}

/// A results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    /// [`FORMAT`].
    pub format: String,
    /// `a65` or `ev74-sim`.
    pub backend: String,
    /// EV74 workers (`null` for the A65).
    pub workers: Option<usize>,
    /// Samples per ID.
    pub reps: usize,
    /// The `--filter` of the run.
    pub filter: Option<String>,
    /// The `--chunk` of the run (`I/N`), `null` for the whole selection.
    pub chunk: Option<String>,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    /// Wall seconds of the whole run.
    pub seconds: f64,
    /// Machine and build.
    pub machine: Machine,
    /// One entry per ID, in catalogue order.
    pub results: Vec<IdResult>,
}

impl ResultsFile {
    /// Reads a results file.
    ///
    /// # Errors
    ///
    /// A message naming the file when it cannot be read, is not JSON of this format.
    pub fn read(path: &Path) -> Result<ResultsFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let file: ResultsFile = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a simak qualify results file: {e}", path.display()))?;
        if file.format != FORMAT {
            return Err(format!(
                "{}: format {:?}, expected {FORMAT:?}",
                path.display(),
                file.format
            ));
        }
        Ok(file)
    }
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The CPU features the A65 routes and kernel levels select on (SPEC §10).
fn cpu_features() -> Vec<String> {
    #[allow(unused_mut)]
    let mut out: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => {
                $(if std::arch::is_x86_feature_detected!($f) { out.push($f); })*
            };
        }
        probe!(
            "sse4.1",
            "avx2",
            "f16c",
            "fma",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512vbmi",
            "avx512bf16",
            "avx512fp16"
        );
    }
    #[cfg(target_arch = "aarch64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => {
                $(if std::arch::is_aarch64_feature_detected!($f) { out.push($f); })*
            };
        }
        probe!("neon", "fp16", "bf16");
    }
    out.into_iter().map(str::to_owned).collect()
}

/// The machine facts, gathered now.
pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned());
    let load_average = std::fs::read_to_string("/proc/loadavg").ok().and_then(|t| {
        let v: Vec<f64> = t
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        (v.len() == 3).then(|| [v[0], v[1], v[2]])
    });
    let commit = git(&["rev-parse", "HEAD"]);
    let dirty = commit
        .as_ref()
        .and_then(|_| git(&["status", "--porcelain", "--untracked-files=no"]))
        .map(|s| !s.is_empty());
    Machine {
        cpu_model,
        cpu_features: cpu_features(),
        logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        load_average,
        commit,
        dirty,
        simak_version: env!("CARGO_PKG_VERSION").to_owned(),
    }
}
