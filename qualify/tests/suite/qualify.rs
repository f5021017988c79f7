//! `simak-qualify`: the catalogue's counts and golden ID list (`list`), the results file of
//! a measuring run (`measure`, and its default place under `target/`), the gate on recorded
//! timing files (`compare`), `merge`, and `correctness` (the whole correctness catalogue,
//! and a planted mismatch found).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::{BIN, assert_success, json_run, path_str, qualify, stderr_of, stdout_of};

/// A file of `qualify/tests/data/`.
fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[test]
fn the_catalogue_is_the_golden_list_with_the_documented_counts() {
    let out = qualify(&["list"]);
    assert_success(&out);
    let listed = stdout_of(&out);
    let golden = std::fs::read_to_string(fixture("ids.txt")).expect("golden ID list");
    let listed: Vec<&str> = listed.lines().collect();
    let golden: Vec<&str> = golden.lines().collect();
    if let Some(k) = (0..listed.len().max(golden.len())).find(|&k| listed.get(k) != golden.get(k)) {
        panic!(
            "ID {k} differs from the golden list: {:?} (golden {:?}); IDs are stable, so \
             new workloads get new IDs and the list changes only on purpose",
            listed.get(k),
            golden.get(k)
        );
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for id in &listed {
        let family: Vec<&str> = id.split('/').take(2).collect();
        *counts.entry(family.join("/")).or_default() += 1;
    }
    let expect: BTreeMap<String, usize> = [
        ("quant/dense", 432),
        ("quant/strided", 216),
        ("casttess/ordinary", 18),
        ("casttess/address-phase", 48),
        ("quanttess/ordinary", 18),
        ("quanttess/address-phase", 48),
        ("quant/address-phase", 96),
        ("detess/ordinary", 9),
        ("detessdequant/ordinary", 7),
        ("detesscast/ordinary", 2),
        ("dequant/dense", 6),
        ("preproc/ordinary", 16),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(counts, expect);
}

/// FNV-1a (64 bits) of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn the_first_780_ids_are_those_before_the_quant_address_phases() {
    // FNV-1a of `qualify/tests/data/ids.txt` as committed before the Quant address-phase
    // IDs were added (780 lines, each ending in a newline): the older IDs keep their
    // places and spelling, whatever the golden list becomes.
    let out = qualify(&["list"]);
    assert_success(&out);
    let listed = stdout_of(&out);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 916);
    let first: String = lines[..780].iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(fnv1a(first.as_bytes()), 0xe191_c4ff_00fa_82e7);
    assert!(
        lines[780..876]
            .iter()
            .all(|id| id.starts_with("quant/address-phase/"))
    );
    assert!(
        lines[..780]
            .iter()
            .all(|id| !id.starts_with("quant/address-phase/"))
    );
}

#[test]
fn the_first_876_ids_are_those_before_the_output_side_ops() {
    // FNV-1a of `qualify/tests/data/ids.txt` as committed before the output-side IDs of
    // issue 25 were appended (876 lines): they keep their places and spelling.
    let out = qualify(&["list"]);
    assert_success(&out);
    let listed = stdout_of(&out);
    let lines: Vec<&str> = listed.lines().collect();
    let first: String = lines[..876].iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(fnv1a(first.as_bytes()), 0xa6a4_4ad4_50d3_841b);
    let ops = ["detess/", "detesscast/", "detessdequant/", "dequant/"];
    assert!(
        lines[876..900]
            .iter()
            .all(|id| ops.iter().any(|op| id.starts_with(op)))
    );
    assert!(
        lines[..876]
            .iter()
            .all(|id| !ops.iter().any(|op| id.starts_with(op)))
    );
}

#[test]
fn the_first_900_ids_are_those_before_preproc() {
    // FNV-1a of `qualify/tests/data/ids.txt` as committed before the Preproc IDs of issue
    // 26 were appended (900 lines): they keep their places and spelling.
    let out = qualify(&["list"]);
    assert_success(&out);
    let listed = stdout_of(&out);
    let lines: Vec<&str> = listed.lines().collect();
    let first: String = lines[..900].iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(fnv1a(first.as_bytes()), 0x4537_5708_4619_f8b9);
    assert!(
        lines[900..]
            .iter()
            .all(|id| id.starts_with("preproc/ordinary/"))
    );
}

#[test]
fn list_json_gives_id_op_and_kind() {
    let v = json_run(&["list", "--json"]);
    let items = v.as_array().expect("a list");
    assert_eq!(items.len(), 916);
    for item in items {
        let id = item["id"].as_str().expect("id");
        let op = item["op"].as_str().expect("op");
        let kind = item["kind"].as_str().expect("kind");
        assert!(id.starts_with(&format!("{op}/{kind}/")), "{id}");
        let output_side = ["detess", "detesscast", "detessdequant", "dequant"].contains(&op);
        let a65_only = output_side || op == "preproc" || op == "quanttess";
        assert!(["quant", "casttess", "quanttess", "preproc"].contains(&op) || output_side);
        assert!(["dense", "strided", "ordinary", "address-phase"].contains(&kind));
        let ev74 = item["backends"]
            .as_array()
            .unwrap()
            .contains(&Value::from("ev74-sim"));
        assert_eq!(ev74, !a65_only, "{id}");
        if output_side {
            assert!(item["output_dtype"].is_string(), "{id}");
        }
        if op == "preproc" {
            assert!(
                item["frame_format"].is_string() && item["to"].is_string(),
                "{id}"
            );
        }
    }
    let glob = json_run(&[
        "list",
        "--json",
        "--filter",
        "quant/strided/f16/*/short-rows-*",
    ]);
    assert_eq!(glob.as_array().unwrap().len(), 4 * 2 * 2);
}

#[test]
fn the_correctness_catalogue_has_the_documented_counts() {
    let v = json_run(&["correctness", "--list", "--json"]);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for item in v.as_array().unwrap() {
        *counts
            .entry(item["kind"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    let expect: BTreeMap<String, usize> = [
        ("quant", 900),
        ("casttess-random", 900),
        ("quanttess-random", 300),
        ("casttess-large", 99),
        ("casttess-hcontig", 30),
        ("casttess-bf16-tail", 4),
        ("casttess-empty", 3),
        ("casttess-sweep", 4),
        ("detess-random", 60),
        ("detesscast-random", 15),
        ("detessdequant-random", 45),
        ("dequant-random", 90),
        ("preproc-random", 84),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(counts, expect);
}

/// The whole correctness catalogue on both backends (this is where `cargo xtask test`, and
/// so CI, runs `simak-qualify correctness`).
#[test]
fn the_correctness_catalogue_passes_on_both_backends() {
    let out = qualify(&["correctness", "-q"]);
    assert_success(&out);
    let text = stdout_of(&out);
    assert!(
        text.starts_with("correctness: 2534 cases on a65 (1940 also on ev74-sim)"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("PASSED"), "{text}");
    // Preproc has no EV74 entry: its cases name only the A65.
    let out = qualify(&["correctness", "-q", "--filter", "correct/preproc/*"]);
    assert_success(&out);
    let text = stdout_of(&out);
    assert!(text.starts_with("correctness: 84 cases on a65, "), "{text}");
    // A corrupted byte is found at every A65 level (the portable route's name has no
    // `scalar` in it, so not in the loop of `a_planted_mismatch_is_found`).
    let id = "correct/preproc/random/nv12/03";
    let out = qualify(&["correctness", "--filter", id, "--plant-mismatch", id]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    let mismatches = text
        .lines()
        .filter(|l| l.starts_with(&format!("MISMATCH {id} on a65 (preproc-")))
        .count();
    assert!(
        mismatches >= 1 && text.contains("preproc-portable"),
        "{text}"
    );
    // QuantTess has no EV74 entry: its cases name only the A65.
    let out = qualify(&["correctness", "-q", "--filter", "quanttess"]);
    assert_success(&out);
    let text = stdout_of(&out);
    assert!(
        text.starts_with("correctness: 300 cases on a65, "),
        "{text}"
    );
    let out = qualify(&["correctness", "-q", "--filter", "hcontig"]);
    assert!(
        stdout_of(&out).starts_with("correctness: 32 cases on a65 and ev74-sim, "),
        "{}",
        stdout_of(&out)
    );
    // The four strided BF16 tail cases (`simak_tests::bf16_tails`), their EV74 short-row
    // paths checked beside the bytes.
    let out = qualify(&["correctness", "--filter", "correct/casttess/bf16-tail/*"]);
    assert_success(&out);
    let text = stdout_of(&out);
    assert!(text.contains("casttess-bf16-tail     4 cases"), "{text}");
    assert!(
        text.contains("correctness: 4 cases on a65 and ev74-sim, "),
        "{text}"
    );
}

#[test]
fn a_planted_mismatch_is_found() {
    for (id, on_ev74) in [
        ("correct/quant/bf16/007", 1),
        ("correct/casttess/sweep/f16/hcontig", 1),
        ("correct/casttess/bf16-tail/outer-pad16", 1),
        ("correct/quanttess/random/f32/011", 0),
        ("correct/detess/random/i32/004", 0),
        ("correct/detessdequant/random/i16/001", 0),
        ("correct/dequant/random/i8/005", 0),
    ] {
        let out = qualify(&["correctness", "--filter", id, "--plant-mismatch", id]);
        assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
        let text = stdout_of(&out);
        // Once per A65 route or level this CPU has (the exact / scalar one at least), and
        // once on the EV74 unless the op has no EV74 entry.
        let on_a65 = text
            .lines()
            .filter(|l| l.starts_with(&format!("MISMATCH {id} on a65 (")) && l.contains("): byte"))
            .count();
        assert!(on_a65 >= 1, "{text}");
        assert!(
            text.contains("exact-scalar") || text.contains("scalar"),
            "{text}"
        );
        assert_eq!(
            text.matches(&format!("MISMATCH {id} on ev74-sim")).count(),
            on_ev74,
            "{text}"
        );
        let n = on_a65 + on_ev74;
        assert!(text.contains(&format!("FAILED ({n} mismatches)")), "{text}");
        assert!(stderr_of(&out).contains(&format!("{n} mismatches")));
        // The same selection without the hook passes.
        let clean = qualify(&["correctness", "--filter", id]);
        assert_success(&clean);
    }
}

#[test]
fn a_run_writes_every_sample_and_the_machine_facts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    let out = qualify(&[
        "measure",
        "--filter",
        "quant/dense/f32/nearest-even/?/special",
        "--reps",
        "5",
        "--output",
        path_str(&file),
    ]);
    assert_success(&out);
    assert!(
        stdout_of(&out).contains("2 IDs on a65 (a65-execute)"),
        "{}",
        stdout_of(&out)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v["format"], "simak-qualify-results/1");
    assert_eq!(v["backend"], "a65");
    assert!(v["machine"]["logical_cpus"].as_u64().unwrap() >= 1);
    assert!(v["machine"]["cpu_features"].is_array());
    let results = v["results"].as_array().unwrap();
    let ids: Vec<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "quant/dense/f32/nearest-even/1/special",
            "quant/dense/f32/nearest-even/7/special",
        ]
    );
    for r in results {
        let samples: Vec<f64> = r["samples_ns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_f64().unwrap())
            .collect();
        assert_eq!(samples.len(), 5);
        let max = samples.iter().copied().fold(0.0, f64::max);
        let (median, p95) = (
            r["median_ns"].as_f64().unwrap(),
            r["p95_ns"].as_f64().unwrap(),
        );
        assert!(median > 0.0 && median <= p95 && p95 <= max, "{r}");
        assert_eq!(r["max_ns"].as_f64().unwrap(), max);
        assert!(r["cpu_ns_per_call"].as_f64().unwrap() > 0.0);
        assert!(r.get("entry_to_return_simulated_cycles").is_none());
    }
}

#[test]
fn the_default_results_file_goes_under_target_qualify() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "measure",
            "--filter",
            "quant/dense/bf16/toward-zero/7/",
            "--reps",
            "2",
        ])
        .output()
        .unwrap();
    assert_success(&out);
    let folder = dir.path().join("target/qualify");
    let files: Vec<_> = std::fs::read_dir(&folder).unwrap().collect();
    assert_eq!(files.len(), 1, "one results file in {}", folder.display());
    let top: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(top.len(), 1, "nothing but target/ is written");
}

#[test]
fn the_ev74_backend_reports_runtime_latency() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("e.json");
    let out = qualify(&[
        "measure",
        "--backend",
        "ev74-sim",
        "--workers",
        "2",
        "--filter",
        "*/bf16/*/4096/normal",
        "--reps",
        "2",
        "--output",
        path_str(&file),
    ]);
    assert_success(&out);
    let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v["backend"], "ev74-sim");
    assert_eq!(v["workers"], 2);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        assert_eq!(r["measure"], "ev74-runtime");
        assert_eq!(r["route"], "ev74-sim (2 workers)");
        // The cost model's figure: at least its dispatch cycles (docs/cost-model.md).
        let cycles = r["entry_to_return_simulated_cycles"].as_u64().unwrap();
        assert!(cycles > 2000, "{}: {cycles}", r["id"]);
    }
    // Subnormal inputs take the exact fallback, which the cost model charges more for.
    let sub = dir.path().join("s.json");
    assert_success(&qualify(&[
        "measure",
        "--backend",
        "ev74-sim",
        "--filter",
        "quant/dense/f32/nearest-even/4096/*normal",
        "--reps",
        "2",
        "--output",
        path_str(&sub),
    ]));
    let v: Value = serde_json::from_slice(&std::fs::read(&sub).unwrap()).unwrap();
    let cycles_of = |suffix: &str| {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"].as_str().unwrap().ends_with(suffix))
            .unwrap_or_else(|| panic!("no ID ending {suffix}"))["entry_to_return_simulated_cycles"]
            .as_u64()
            .unwrap()
    };
    assert!(cycles_of("/subnormal") > cycles_of("/normal"));
    // QuantTess has no EV74 entry: its IDs are skipped.
    let none = qualify(&[
        "measure",
        "--backend",
        "ev74-sim",
        "--filter",
        "quanttess/",
        "--output",
        path_str(&dir.path().join("q.json")),
    ]);
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr_of(&none).contains("no ID that runs on ev74-sim"));
    // A filter that matches nothing says so, not that nothing runs on the backend.
    let nothing = qualify(&[
        "measure",
        "--filter",
        "no-such-id",
        "--output",
        path_str(&dir.path().join("n.json")),
    ]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(
        stderr_of(&nothing).contains("--filter selects no ID"),
        "{}",
        stderr_of(&nothing)
    );
    assert!(!dir.path().join("n.json").exists());
}

/// Runs the gate on two recorded files; returns (exit code, stdout, the failed IDs).
fn gate(base: &str, cand: &str, threshold: Option<&str>) -> (Option<i32>, String, Vec<String>) {
    let (b, c) = (fixture(base), fixture(cand));
    let mut args = vec!["compare", path_str(&b), path_str(&c)];
    if let Some(t) = threshold {
        args.extend(["--threshold", t]);
    }
    let text = qualify(&args);
    args.push("--json");
    let json = qualify(&args);
    let v: Value = serde_json::from_slice(&json.stdout).expect("JSON report");
    let failed = v["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text.status.code(), json.status.code());
    (text.status.code(), stdout_of(&text), failed)
}

/// `base.json` is a recorded run; `slower.json` is `base.json` with every sample of two IDs
/// made 5% and 20% slower (and a little jitter); `README.md` beside them says how they were
/// made.
const FIVE: &str = "quant/dense/f32/nearest-even/65536/normal";
const TWENTY: &str = "quant/dense/f32/nearest-even/1048576/normal";

#[test]
fn the_gate_passes_identical_runs() {
    let (code, text, failed) = gate("base.json", "base.json", None);
    assert_eq!(code, Some(0), "{text}");
    assert!(failed.is_empty());
    assert!(
        text.contains("0 slower, 0 faster beyond the noise"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("PASSED"), "{text}");
}

#[test]
fn the_gate_fails_exactly_the_ids_above_the_threshold() {
    let (code, text, failed) = gate("base.json", "slower.json", None);
    assert_eq!(code, Some(3), "{text}");
    assert_eq!(failed, [TWENTY]);
    assert!(text.contains("FAILED on 1 ID"), "{text}");
    // Both moved beyond the noise; p95 and max are printed beside the median.
    for id in [FIVE, TWENTY] {
        let line = text.lines().find(|l| l.starts_with(id)).expect(id);
        assert!(line.contains("slower"), "{line}");
    }
    let (code, text, failed) = gate("base.json", "slower.json", Some("1.03"));
    assert_eq!(code, Some(3), "{text}");
    assert_eq!(failed, [FIVE, TWENTY]);
    let (code, _, failed) = gate("base.json", "slower.json", Some("1.25"));
    assert_eq!(code, Some(0));
    assert!(failed.is_empty());
}

#[test]
fn the_gate_refuses_files_it_cannot_compare() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"format\": 1}").unwrap();
    let base = fixture("base.json");
    let out = qualify(&["compare", path_str(&base), path_str(&junk)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("not a simak qualify results file"));
    let out = qualify(&[
        "compare",
        path_str(&base),
        path_str(&base),
        "--threshold",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn merged_chunks_are_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    for i in 1..=2 {
        let part = dir.path().join(format!("p{i}.json"));
        let chunk = format!("{i}/2");
        let out = qualify(&[
            "measure",
            "--filter",
            "quant/dense/f16/toward-zero/[17]/*",
            "--reps",
            "2",
            "--chunk",
            &chunk,
            "--output",
            path_str(&part),
        ]);
        assert_success(&out);
        parts.push(part);
    }
    let merged = dir.path().join("m.json");
    let out = qualify(&[
        "merge",
        path_str(&parts[0]),
        path_str(&parts[1]),
        "--output",
        path_str(&merged),
    ]);
    assert_success(&out);
    let v: Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let ids: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 8);
    assert!(
        ids.iter()
            .all(|id| id.starts_with("quant/dense/f16/toward-zero/"))
    );
}

/// `correctness --list --json` names each case's op as its ID does (it once labelled the
/// QuantTess cases `casttess`).
#[test]
fn correctness_list_names_each_case_op() {
    let v = json_run(&["correctness", "--list", "--json"]);
    let mut ops: BTreeMap<String, usize> = BTreeMap::new();
    for item in v.as_array().unwrap() {
        let id = item["id"].as_str().unwrap();
        let op = item["op"].as_str().unwrap();
        assert_eq!(Some(op), id.split('/').nth(1), "{id}");
        *ops.entry(op.to_owned()).or_default() += 1;
    }
    let expect: BTreeMap<String, usize> = [
        ("quant", 900),
        ("casttess", 1040),
        ("quanttess", 300),
        ("detess", 60),
        ("detesscast", 15),
        ("detessdequant", 45),
        ("dequant", 90),
        ("preproc", 84),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(ops, expect);
}
