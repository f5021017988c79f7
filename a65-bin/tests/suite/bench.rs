//! `simak bench casttess`, `simak bench quanttess` and `simak bench quant --level`: the JSON
//! keys and figures list, the `levels` list against the CPU's own feature flags, forced
//! levels, and the usage errors (unknown level, a level this CPU lacks, bad frames and
//! tiles, `--threads 0`): exit 2, one line, nothing on stdout; `--threads` above 1 runs
//! the tiled benchmarks through the partition API. No timing assertions: figures are only checked to be positive numbers.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::*;

/// Every level name of `simak::a65::Level`.
const ALL_LEVELS: [&str; 7] = simak_tests::cpu::NAMES;

/// The levels this CPU has, asked of the CPU directly (not through the library).
fn cpu_levels() -> Vec<&'static str> {
    simak_tests::cpu::levels()
}

/// A level this CPU does not have (one of the other architecture's).
fn foreign_level() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "x86_64-avx2"
    } else {
        "aarch64-neon"
    }
}

/// The levels each benchmark has kernels at for FP32 input (multiplier 0.5), among those
/// of this CPU.
fn expected_levels(bench: &str) -> Vec<&'static str> {
    expected_levels_for(bench, "f32")
}

/// As [`expected_levels`] for `dtype` input: the SSE4.1 Quant kernels take no FP16; the
/// NEON FP16 Quant route takes FP16 and BF16 with a power-of-two multiplier (0.5 is one).
fn expected_levels_for(bench: &str, dtype: &str) -> Vec<&'static str> {
    let mut without = match bench {
        "casttess" => vec!["x86_64-sse4.1", "aarch64-neon-fp16"],
        "quanttess" => vec!["x86_64-avx512vbmi", "aarch64-neon-fp16"],
        _ => vec!["x86_64-avx512vbmi"],
    };
    if bench != "casttess" && dtype == "f16" {
        without.push("x86_64-sse4.1");
    }
    if bench == "quant" && dtype == "f32" {
        without.push("aarch64-neon-fp16");
    }
    cpu_levels()
        .into_iter()
        .filter(|l| !without.contains(l))
        .collect()
}

/// A small frame with whole and partial tiles, one repetition.
const SMALL: [&str; 4] = ["--frame", "37,70,3", "--reps", "1"];

fn bench_json(bench: &str, extra: &[&str]) -> Value {
    let mut args = vec!["bench", bench, "--json"];
    args.extend(extra);
    json_run(&args)
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .expect("a JSON object")
        .keys()
        .cloned()
        .collect()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("a JSON array")
        .iter()
        .map(|x| x.as_str().expect("a string").to_owned())
        .collect()
}

#[test]
fn tess_benches_report_the_quant_figures_and_the_levels() {
    let quant = bench_json("quant", &["--elements", "4096", "--reps", "1"]);
    let figure_keys = keys(&quant["figures"][0]);
    for (bench, out_size) in [("casttess", 2u64), ("quanttess", 1)] {
        for (dtype, channels) in [("f32", "compact"), ("bf16", "pad16"), ("f16", "compact")] {
            let mut args = SMALL.to_vec();
            args.extend(["--dtype", dtype, "--channels", channels]);
            let json = bench_json(bench, &args);
            let expected_keys: BTreeSet<String> = [
                "op",
                "dtype",
                "output_dtype",
                "frame",
                "tile",
                "channels",
                "elements",
                "output_bytes",
                "threads",
                "reps",
                "level",
                "levels",
                "figures",
            ]
            .iter()
            .map(|k| k.to_string())
            .collect();
            assert_eq!(keys(&json), expected_keys, "{json}");
            assert_eq!(json["op"], bench);
            assert_eq!(json["dtype"], dtype);
            assert_eq!(json["frame"], serde_json::json!([37, 70, 3]));
            // The default tile, clamped to the frame: (1, 16, 64, C).
            assert_eq!(json["tile"], serde_json::json!([1, 16, 64, 3]));
            assert_eq!(json["channels"], channels);
            assert_eq!(json["elements"], 37 * 70 * 3);
            // Tiles of 16 x 64 pixels over 37 x 70: 3 x 2 tiles, each row of pixels of 3
            // (compact) or 16 (pad16) stored channels, each tile padded to 16 bytes.
            let sc = if channels == "compact" { 3 } else { 16 };
            let mut capacity = 0;
            for th in [16u64, 16, 5] {
                for tw in [64u64, 6] {
                    capacity += (th * tw * sc * out_size).div_ceil(16) * 16;
                }
            }
            assert_eq!(json["output_bytes"], capacity, "{bench} {channels}");
            assert_eq!(json["threads"], 1);
            assert_eq!(json["reps"], 1);
            assert_eq!(
                names(&json["levels"]),
                expected_levels_for(bench, dtype),
                "{bench} {dtype}"
            );
            let level = json["level"].as_str().unwrap();
            let figures = json["figures"].as_array().unwrap();
            let figure_names: Vec<&str> = figures
                .iter()
                .map(|f| f["name"].as_str().unwrap())
                .collect();
            assert_eq!(
                figure_names,
                [
                    format!("{bench} {level}").as_str(),
                    "reference: plain read",
                    "reference: memcpy of the output"
                ]
            );
            for f in figures {
                assert_eq!(keys(f), figure_keys, "the figures of bench quant: {f}");
                for k in ["median_ns_per_call", "min_ns_per_call", "elements_per_s"] {
                    assert!(f[k].as_f64().unwrap() > 0.0, "{f}");
                }
            }
        }
    }
}

#[test]
fn tess_benches_run_at_every_listed_level() {
    for bench in ["casttess", "quanttess"] {
        for level in expected_levels(bench) {
            let mut args = SMALL.to_vec();
            args.extend(["--level", level]);
            let json = bench_json(bench, &args);
            // QuantTess's scalar level is the exact integer path of SPEC §3.
            let shown = if bench == "quanttess" && level == "scalar" {
                "exact-scalar"
            } else {
                level
            };
            assert_eq!(json["level"], shown, "{bench} {level}");
            assert_eq!(json["figures"][0]["name"], format!("{bench} {shown}"));
        }
    }
}

#[test]
fn tess_bench_text_names_the_workload_and_levels() {
    let out = simak(&[
        "bench", "casttess", "--frame", "16,64,2", "--reps", "1", "--level", "scalar",
    ]);
    assert_success(&out);
    let text = stdout_of(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "casttess f32 -> bf16, frame 16x64x2 (2048 elements), tile 1,16,64,2 compact, output 4096 bytes, 1 thread, median of 1 repetition"
    );
    assert_eq!(
        lines[1],
        format!(
            "levels on this CPU: {}",
            expected_levels("casttess").join(", ")
        )
    );
    assert!(lines[2].starts_with("kernel "), "{text}");
    assert!(lines[3].starts_with("casttess scalar "), "{text}");
    assert!(lines[4].starts_with("reference: plain read "), "{text}");
    assert!(
        lines[5].starts_with("reference: memcpy of the output "),
        "{text}"
    );
    assert_eq!(lines.len(), 6, "{text}");
}

/// Runs a bad invocation: exit 2, one line naming `mentions`, nothing on stdout.
fn refused(args: &[&str], mentions: &[&str]) -> String {
    let out = simak(args);
    let err = assert_bad(&out, mentions);
    assert!(
        out.stdout.is_empty(),
        "{args:?}: stdout {}",
        stdout_of(&out)
    );
    err
}

#[test]
fn an_unknown_level_lists_the_level_names() {
    for bench in ["quant", "casttess", "quanttess"] {
        for bad in ["avx2", "exact-scalar", "x86_64-avx512vbmi2"] {
            let mut mentions = vec!["--level", bad];
            mentions.extend(ALL_LEVELS);
            refused(&["bench", bench, "--level", bad, "--json"], &mentions);
        }
    }
}

#[test]
fn a_level_this_cpu_lacks_is_refused() {
    let foreign = foreign_level();
    for bench in ["quant", "casttess", "quanttess"] {
        refused(
            &["bench", bench, "--level", foreign],
            &[
                &format!("bench {bench}: --level: this CPU lacks level {foreign}")
                    .replace("bench quant:", "bench:"),
                "this CPU has: scalar",
            ],
        );
    }
}

#[test]
fn a_level_without_a_kernel_for_the_op_is_refused() {
    let cpu = cpu_levels();
    for (bench, level) in [
        ("casttess", "x86_64-sse4.1"),
        ("quanttess", "x86_64-avx512vbmi"),
        ("quant", "x86_64-avx512vbmi"),
    ] {
        if !cpu.contains(&level) {
            continue;
        }
        refused(
            &["bench", bench, "--level", level, "--frame", "16,64,3"]
                [..if bench == "quant" { 4 } else { 6 }],
            &[&format!(
                "{bench} has no kernel at level {level} for this plan (f32 input)"
            )],
        );
    }
}

#[test]
fn bad_frames_and_tiles_are_refused_before_any_output() {
    for bench in ["casttess", "quanttess"] {
        for (args, mentions) in [
            (
                vec!["--frame", "8,8"],
                vec!["--frame", "expected 3 comma-separated extents"],
            ),
            (vec!["--frame", "8,0,3"], vec!["--frame", "W extent is 0"]),
            (vec!["--frame", "8,x,3"], vec!["--frame", "\"x\""]),
            (
                vec!["--frame", "16,64,3", "--tile", "1,16,64"],
                vec!["--tile", "expected 4"],
            ),
            (
                vec!["--frame", "16,64,3", "--tile", "1,16,128,3"],
                vec!["--tile", "w tile extent 128 is outside 1..=64"],
            ),
            (
                vec!["--frame", "16,64,3", "--tile", "1,0,64,3"],
                vec!["--tile", "outside 1..=16"],
            ),
            (
                vec!["--frame", "16,64,3", "--dtype", "i8"],
                vec!["--dtype", "i8"],
            ),
            (vec!["--frame", "16,64,3", "--reps", "0"], vec!["--reps"]),
        ] {
            let mut all = vec!["bench", bench, "--json"];
            all.extend(&args);
            refused(&all, &mentions);
        }
    }
}

#[test]
fn tess_threads_run_the_pieces_of_the_partition_api() {
    for bench in ["casttess", "quanttess"] {
        for threads in ["1", "2", "3"] {
            let json = bench_json(
                bench,
                &["--frame", "16,192,3", "--reps", "1", "--threads", threads],
            );
            assert_eq!(json["threads"].to_string(), threads, "{json}");
            let figures = json["figures"].as_array().unwrap();
            assert!(
                figures[0]["median_ns_per_call"].as_f64().unwrap() > 0.0,
                "{json}"
            );
        }
        refused(
            &["bench", bench, "--threads", "0", "--json"],
            &["--threads"],
        );
    }
}

#[test]
fn bench_quant_level_forces_the_route_and_lists_the_levels() {
    let base = ["--elements", "4096", "--reps", "1"];
    let json = bench_json("quant", &base);
    let expected: BTreeSet<String> = [
        "dtype", "layout", "values", "elements", "threads", "reps", "route", "levels", "figures",
    ]
    .iter()
    .map(|k| k.to_string())
    .collect();
    assert_eq!(keys(&json), expected, "{json}");
    assert_eq!(names(&json["levels"]), expected_levels("quant"));
    for level in expected_levels("quant") {
        let mut args = base.to_vec();
        args.extend(["--level", level]);
        let json = bench_json("quant", &args);
        let route = if level == "scalar" {
            "exact-scalar"
        } else {
            level
        };
        assert_eq!(json["route"], route);
        assert_eq!(json["figures"][0]["name"], format!("quant {route}"));
    }
    // FP16 input at SSE4.1: the route has no FP16 kernel.
    if cpu_levels().contains(&"x86_64-sse4.1") {
        refused(
            &[
                "bench",
                "quant",
                "--dtype",
                "f16",
                "--level",
                "x86_64-sse4.1",
            ],
            &["quant has no kernel at level x86_64-sse4.1 for this plan (f16 input)"],
        );
    }
}

#[test]
fn detess_bench_runs_every_workload_beside_its_reference() {
    let out = simak(&[
        "bench", "detess", "--level", "scalar", "--reps", "1", "--json",
    ]);
    assert_success(&out);
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&out)).expect("JSON");
    assert_eq!(json["levels"], serde_json::json!(["scalar"]), "{json}");
    let workloads = json["workloads"].as_array().expect("workloads");
    let names: Vec<&str> = workloads
        .iter()
        .map(|w| w["workload"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["yolo", "ssd", "bf16", "classifier"]);
    // Elements and OFM bytes of issue 25's workloads (SPEC §12.1's sizes).
    let sizes: Vec<(u64, u64)> = workloads
        .iter()
        .map(|w| {
            (
                w["elements"].as_u64().unwrap(),
                w["ofm_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sizes,
        [
            (80 * 80 * 144 + 40 * 40 * 144 + 20 * 20 * 144, 1_209_600),
            (19 * 19 * 273, 103_968),
            (60 * 80 * 256, 60 * 80 * 256 * 2),
            (1000, 1000),
        ]
    );
    for w in workloads {
        let row = &w["rows"][0];
        assert_eq!(row["level"], "scalar", "{w}");
        for key in ["median_ns", "reference_median_ns", "ratio_to_reference"] {
            assert!(row[key].as_f64().unwrap() > 0.0, "{key}: {w}");
        }
        assert_eq!(row["ratio_to_best_level"].as_f64(), Some(1.0), "{w}");
    }
}

#[test]
fn detess_bench_refuses_levels_it_cannot_run() {
    let foreign = foreign_level();
    refused(
        &["bench", "detess", "--level", foreign, "--json"],
        &["bench detess: --level: this CPU lacks level", foreign],
    );
    refused(
        &["bench", "detess", "--workload", "resnet", "--json"],
        &["--workload", "resnet"],
    );
}

/// `simak bench preproc` at a tiny frame: the six workloads (RGB8, NV12 × i8, quanttess,
/// casttess) with their byte counts (SPEC §13: NV12 is 1.5 bytes a pixel; the tiled
/// capacities of tile 1,4,6,3 over [4, 6, 3]), positive figures beside the reference.
#[test]
fn preproc_bench_runs_every_workload_beside_its_reference() {
    let json = bench_json("preproc", &["--frame", "4,6", "--reps", "1"]);
    assert_eq!(json["threads"], 1);
    assert_eq!(json["frame"], serde_json::json!([4, 6]));
    let rows = json["rows"].as_array().expect("rows");
    let got: Vec<(String, String, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["input"].as_str().unwrap().to_owned(),
                r["output"].as_str().unwrap().to_owned(),
                r["frame_bytes"].as_u64().unwrap(),
                r["output_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, String, u64, u64)> = [
        ("rgb", "i8", 72, 72),
        ("rgb", "quanttess", 72, 80),
        ("rgb", "casttess", 72, 144),
        ("nv12", "i8", 36, 72),
        ("nv12", "quanttess", 36, 80),
        ("nv12", "casttess", 36, 144),
    ]
    .iter()
    .map(|&(i, o, f, b)| (i.to_owned(), o.to_owned(), f, b))
    .collect();
    assert_eq!(got, want);
    for r in rows {
        for key in ["median_ns", "reference_median_ns", "ratio_to_reference"] {
            assert!(r[key].as_f64().unwrap() > 0.0, "{key}: {r}");
        }
    }
    refused(
        &["bench", "preproc", "--frame", "5,6", "--json"],
        &["--frame", "even"],
    );
    // A forced level: its name and its route (the INT8 blocks at SIMD levels).
    for name in cpu_levels() {
        let json = bench_json(
            "preproc",
            &[
                "--frame", "4,6", "--reps", "1", "--input", "rgb", "--output", "i8", "--level",
                name,
            ],
        );
        let row = &json["rows"][0];
        assert_eq!(row["level"], name, "{row}");
        let route = row["route"].as_str().unwrap();
        match name {
            "scalar" => assert_eq!(route, "preproc-portable"),
            "x86_64-sse4.1" => assert_eq!(route, "preproc-sse4.1-i8"),
            "aarch64-neon" | "aarch64-neon-fp16" => assert_eq!(route, "preproc-neon-i8"),
            _ => assert_eq!(route, "preproc-avx2-i8"),
        }
    }
    refused(
        &["bench", "preproc", "--level", foreign_level(), "--json"],
        &["lacks level", foreign_level()],
    );
}
