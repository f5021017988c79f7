//! The gate of `simak-qualify compare BASE CAND`: a paired-median comparison of two
//! recorded results files.
//!
//! For every ID in both files, sample `i` of the candidate is paired with sample `i` of the
//! baseline (the files hold every sample in the order taken; `cargo xtask qualify` takes
//! them interleaved, chunk by chunk), and the ratio `cand_i / base_i` is formed. The ID's
//! figure is the **median of the per-pair ratios**; the gate fails when any ID's median
//! ratio exceeds the threshold (default 1.05). The ratios of the p95 and max latencies are
//! printed as diagnostics, never gated. An ID **moved beyond the noise** when its median
//! ratio is more than [`NOISE`] away from 1 and at least three quarters of its pairs agree
//! on the direction (the lower quartile of the ratios above 1, or the upper quartile below
//! 1).

use serde::Serialize;

use super::measure::{median, quantile};
use super::results::ResultsFile;

/// How far from 1 a median ratio must be to count as a move (1%).
pub const NOISE: f64 = 0.01;
/// The default gate threshold.
pub const DEFAULT_THRESHOLD: f64 = 1.05;

/// The comparison of one ID.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The workload ID.
    pub id: String,
    /// Pairs formed (the shorter sample list).
    pub pairs: usize,
    /// Median of the per-pair ratios candidate / baseline (gated).
    pub median_ratio: f64,
    /// Lower and upper quartiles of the per-pair ratios.
    pub quartiles: [f64; 2],
    /// Candidate p95 / baseline p95 (diagnostic).
    pub p95_ratio: f64,
    /// Candidate max / baseline max (diagnostic).
    pub max_ratio: f64,
    /// `slower` or `faster` when the ID moved beyond the noise, else `same`.
    pub moved: &'static str,
    /// Whether the median ratio exceeds the threshold.
    pub fails: bool,
}

/// The result of the gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The threshold applied to each median ratio.
    pub threshold: f64,
    /// The backend of both files.
    pub backend: String,
    /// One row per ID present in both files, in the baseline's order.
    pub rows: Vec<Row>,
    /// IDs that fail the gate.
    pub failed: Vec<String>,
    /// IDs in the baseline only.
    pub only_in_baseline: Vec<String>,
    /// IDs in the candidate only.
    pub only_in_candidate: Vec<String>,
    /// Differences between the two files' machine facts (CPU model, features).
    pub warnings: Vec<String>,
}

impl Report {
    /// Whether no ID fails.
    pub fn passed(&self) -> bool {
        self.failed.is_empty()
    }
}

/// The comparison of one ID from its two sample lists.
pub fn row(id: &str, base: &[f64], cand: &[f64], threshold: f64) -> Row {
    let pairs = base.len().min(cand.len());
    let mut ratios: Vec<f64> = base
        .iter()
        .zip(cand)
        .map(|(&b, &c)| if b > 0.0 { c / b } else { f64::NAN })
        .filter(|r| r.is_finite())
        .collect();
    ratios.sort_by(f64::total_cmp);
    let m = median(&ratios);
    let q = [quantile(&ratios, 0.25), quantile(&ratios, 0.75)];
    let stat = |v: &[f64], f: fn(&[f64]) -> f64| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        f(&s)
    };
    let p95 = |s: &[f64]| quantile(s, 0.95);
    let max = |s: &[f64]| s.last().copied().unwrap_or(f64::NAN);
    let moved = if m > 1.0 + NOISE && q[0] > 1.0 {
        "slower"
    } else if m < 1.0 - NOISE && q[1] < 1.0 {
        "faster"
    } else {
        "same"
    };
    Row {
        id: id.to_owned(),
        pairs,
        median_ratio: m,
        quartiles: q,
        p95_ratio: stat(cand, p95) / stat(base, p95),
        max_ratio: stat(cand, max) / stat(base, max),
        moved,
        // A NaN median (no pairs) fails: nothing was compared.
        fails: m.is_nan() || m > threshold,
    }
}

/// Compares `candidate` against `baseline` at `threshold`.
///
/// # Errors
///
/// A message when the two files were measured on different backends.
pub fn compare(
    baseline: &ResultsFile,
    candidate: &ResultsFile,
    threshold: f64,
) -> Result<Report, String> {
    if baseline.backend != candidate.backend {
        return Err(format!(
            "the files were measured on different backends ({} and {})",
            baseline.backend, candidate.backend
        ));
    }
    let mut warnings = Vec::new();
    if baseline.machine.cpu_model != candidate.machine.cpu_model {
        warnings.push(format!(
            "different CPUs: {:?} and {:?}",
            baseline.machine.cpu_model, candidate.machine.cpu_model
        ));
    }
    if baseline.machine.cpu_features != candidate.machine.cpu_features {
        warnings.push("different CPU feature lists".to_owned());
    }
    let mut rows = Vec::new();
    let mut only_in_baseline = Vec::new();
    for b in &baseline.results {
        match candidate.results.iter().find(|c| c.id == b.id) {
            Some(c) => rows.push(row(&b.id, &b.samples_ns, &c.samples_ns, threshold)),
            None => only_in_baseline.push(b.id.clone()),
        }
    }
    let only_in_candidate = candidate
        .results
        .iter()
        .filter(|c| !baseline.results.iter().any(|b| b.id == c.id))
        .map(|c| c.id.clone())
        .collect();
    let failed = rows
        .iter()
        .filter(|r| r.fails)
        .map(|r| r.id.clone())
        .collect();
    Ok(Report {
        threshold,
        backend: baseline.backend.clone(),
        rows,
        failed,
        only_in_baseline,
        only_in_candidate,
        warnings,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    fn samples(scale: f64) -> Vec<f64> {
        (0..15)
            .map(|i| 1000.0 * (1.0 + 0.01 * f64::from(i % 5)) * scale)
            .collect()
    }

    #[test]
    fn identical_samples_pass_and_do_not_move() {
        let r = row("a", &samples(1.0), &samples(1.0), DEFAULT_THRESHOLD);
        assert_eq!(r.median_ratio, 1.0);
        assert_eq!(r.moved, "same");
        assert!(!r.fails);
    }

    #[test]
    fn the_median_of_pair_ratios_is_gated() {
        let slow = row("a", &samples(1.0), &samples(1.2), DEFAULT_THRESHOLD);
        assert!((slow.median_ratio - 1.2).abs() < 1e-12);
        assert!(slow.fails);
        assert_eq!(slow.moved, "slower");
        let fast = row("a", &samples(1.0), &samples(0.9), DEFAULT_THRESHOLD);
        assert!(!fast.fails);
        assert_eq!(fast.moved, "faster");
        // One huge outlier pair moves p95 and max, not the median.
        let mut cand = samples(1.0);
        cand[3] *= 10.0;
        let outlier = row("a", &samples(1.0), &cand, DEFAULT_THRESHOLD);
        assert_eq!(outlier.median_ratio, 1.0);
        assert!(!outlier.fails);
        assert!(outlier.max_ratio > 5.0);
    }

    #[test]
    fn no_pairs_fail() {
        assert!(row("a", &[], &[1.0], DEFAULT_THRESHOLD).fails);
    }
}
