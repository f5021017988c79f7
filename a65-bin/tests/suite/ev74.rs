//! `simak quant --backend ev74-sim` against `--backend a65` on real files, and `simak packet
//! encode quant` / `simak packet decode` (round trip, hand-checked bytes, corrupted packets).

use crate::common;

use std::fs;

use common::*;

/// Quantizes `input` with both backends (ev74-sim with 1 and 4 workers) and requires
/// byte-identical output files and the route column `ev74-sim (N workers)`.
fn same_bytes_on_both_backends(input: &std::path::Path, out_ext: &str, scale: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let a65 = dir.path().join(format!("a65.{out_ext}"));
    let mut args = vec![
        "quant",
        "--input",
        path_str(input),
        "--output",
        path_str(&a65),
        "--json",
    ];
    args.extend_from_slice(scale);
    let summary = json_run(&args);
    assert_eq!(summary["backend"], "a65");
    let reference = fs::read(&a65).unwrap();
    for workers in ["1", "4"] {
        let out = dir.path().join(format!("ev74-{workers}.{out_ext}"));
        let mut args = vec![
            "quant",
            "--input",
            path_str(input),
            "--output",
            path_str(&out),
            "--backend",
            "ev74-sim",
            "--workers",
            workers,
            "--json",
        ];
        args.extend_from_slice(scale);
        let summary = json_run(&args);
        assert_eq!(summary["backend"], "ev74-sim");
        assert_eq!(summary["workers"], workers.parse::<u64>().unwrap());
        let route = if workers == "1" {
            "ev74-sim (1 worker)".to_owned()
        } else {
            format!("ev74-sim ({workers} workers)")
        };
        for row in summary["tensors"].as_array().unwrap() {
            assert_eq!(row["route"], route.as_str(), "{row}");
        }
        assert!(
            fs::read(&out).unwrap() == reference,
            "{} with {workers} workers differs from a65",
            input.display()
        );
    }
}

#[test]
fn ev74_sim_quant_equals_a65_on_minilm_f32() {
    same_bytes_on_both_backends(
        &data(MINILM_F32),
        "safetensors",
        &["--multiplier", "37.5", "--zero-point", "-3"],
    );
}

#[test]
fn ev74_sim_quant_equals_a65_on_minilm_bf16() {
    same_bytes_on_both_backends(
        &data(MINILM_BF16),
        "safetensors",
        &["--calibrate", "absmax", "--rounding", "toward-negative"],
    );
}

#[test]
fn ev74_sim_quant_equals_a65_on_minilm_f16() {
    same_bytes_on_both_backends(
        &data(MINILM_F16),
        "safetensors",
        &["--multiplier", "0x42fe0000", "--rounding", "toward-zero"],
    );
}

#[test]
fn ev74_sim_quant_equals_a65_on_chelsea_npy() {
    same_bytes_on_both_backends(
        &chelsea_npy(),
        "npy",
        &["--multiplier", "255", "--zero-point", "-128"],
    );
}

#[test]
fn ev74_sim_text_summary_names_the_route_and_default_workers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.npy");
    let run = simak(&[
        "quant",
        "--input",
        path_str(&chelsea_npy()),
        "--output",
        path_str(&out),
        "--multiplier",
        "100",
        "--backend",
        "ev74-sim",
    ]);
    assert_success(&run);
    let text = stdout_of(&run);
    assert!(text.contains("backend ev74-sim"), "{text}");
    // The default ring is the full one: 4 workers.
    assert!(text.contains("ev74-sim (4 workers)"), "{text}");
}

#[test]
fn workers_need_the_ev74_backend_and_a_valid_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("o.npy");
    let input = chelsea_npy();
    let base = [
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&out),
        "--multiplier",
        "2",
    ];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    expect_bad(&with(&["--workers", "2"]), d, &["--workers", "ev74-sim"]);
    expect_bad(
        &with(&["--backend", "a65", "--workers", "1"]),
        d,
        &["--workers", "ev74-sim"],
    );
    for bad in ["0", "5"] {
        expect_bad(
            &with(&["--backend", "ev74-sim", "--workers", bad]),
            d,
            &["--workers", bad],
        );
    }
}

/// Field `name` of a `packet decode --json` listing: (offset, value).
fn field(listing: &serde_json::Value, name: &str) -> (u64, i128) {
    let f = listing["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no field {name}"));
    (
        f["offset"].as_u64().unwrap(),
        f["value"]
            .as_i64()
            .map(i128::from)
            .unwrap_or_else(|| i128::from(f["value"].as_u64().expect("integer field value"))),
    )
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

#[test]
fn packet_encode_relocatable_f32_2x3_matches_spec_offsets_and_decodes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.bin");
    let enc = json_run(&[
        "packet",
        "encode",
        "quant",
        "--shape",
        "2,3",
        "--dtype",
        "f32",
        "--multiplier",
        "1",
        "--zero-point",
        "-3",
        "--rounding",
        "toward-zero",
        "--output",
        path_str(&p),
        "--json",
    ]);
    assert_eq!(enc["verdict"]["text"], "valid (relocatable)");
    let bytes = fs::read(&p).unwrap();
    // Hand-checked against the SPEC §7 table, not through the decoder.
    assert_eq!(bytes.len(), 224);
    assert_eq!(&bytes[0..4], b"SKQT");
    assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), 1);
    assert_eq!(u16::from_le_bytes([bytes[6], bytes[7]]), 224);
    assert_eq!(le_u32(&bytes, 8), 3, "FP32 code");
    assert_eq!(le_u32(&bytes, 12), 2, "rank");
    assert_eq!(le_u32(&bytes, 16), 3, "both contiguous");
    assert_eq!(le_u32(&bytes, 20), 0);
    assert_eq!((le_u64(&bytes, 24), le_u64(&bytes, 32)), (0, 0));
    assert_eq!(
        (le_u64(&bytes, 40), le_u64(&bytes, 48), le_u64(&bytes, 56)),
        (6, 24, 6)
    );
    assert_eq!((le_u64(&bytes, 64), le_u64(&bytes, 72)), (2, 3));
    assert_eq!((le_u64(&bytes, 112), le_u64(&bytes, 120)), (12, 4));
    assert_eq!((le_u64(&bytes, 160), le_u64(&bytes, 168)), (3, 1));
    for slot in 2..6 {
        for base in [64, 112, 160] {
            assert_eq!(le_u64(&bytes, base + 8 * slot), 0);
        }
    }
    assert_eq!(le_u32(&bytes, 208), 0x3f80_0000);
    assert_eq!(le_u32(&bytes, 212) as i32, -3);
    assert_eq!(le_u32(&bytes, 216), 0, "toward-zero code");
    assert_eq!(le_u32(&bytes, 220), 0);

    let dec = json_run(&["packet", "decode", path_str(&p), "--json"]);
    assert_eq!(dec["verdict"]["text"], "valid (relocatable)");
    assert_eq!(dec["verdict"]["valid"], true);
    assert_eq!(dec["fields"].as_array().unwrap().len(), 34);
    let expect: [(&str, u64, i128); 12] = [
        ("magic", 0, i128::from(u32::from_le_bytes(*b"SKQT"))),
        ("version", 4, 1),
        ("byte_length", 6, 224),
        ("dtype", 8, 3),
        ("rank", 12, 2),
        ("flags", 16, 3),
        ("elements", 40, 6),
        ("input_span", 48, 24),
        ("extents[1]", 72, 3),
        ("output_strides[0]", 160, 3),
        ("multiplier", 208, 0x3f80_0000),
        ("zero_point", 212, -3),
    ];
    for (name, offset, value) in expect {
        assert_eq!(field(&dec, name), (offset, value), "{name}");
    }
    // The text listing shows every field with its offset and the verdict last.
    let text = simak(&["packet", "decode", path_str(&p)]);
    assert_success(&text);
    let text = stdout_of(&text);
    assert!(text.contains("multiplier"), "{text}");
    assert!(text.contains("toward-zero"), "{text}");
    assert!(text.contains("  160  output_strides[0]"), "{text}");
    assert_eq!(text.lines().last().unwrap(), "verdict: valid (relocatable)");
}

#[test]
fn packet_bound_scalar_and_strided_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bound.bin");
    json_run(&[
        "packet",
        "encode",
        "quant",
        "--shape",
        "scalar",
        "--dtype",
        "f16",
        "--multiplier",
        "0x3e99999a",
        "--input-address",
        "0x1000",
        "--output-address",
        "8192",
        "--output",
        path_str(&p),
        "--json",
    ]);
    let dec = json_run(&["packet", "decode", path_str(&p), "--json"]);
    assert_eq!(dec["verdict"]["text"], "valid (bound)");
    assert_eq!(field(&dec, "rank"), (12, 1));
    assert_eq!(field(&dec, "extents[0]"), (64, 1));
    assert_eq!(field(&dec, "elements"), (40, 1));
    assert_eq!(field(&dec, "input_address"), (24, 0x1000));
    assert_eq!(field(&dec, "output_address"), (32, 0x2000));
    assert_eq!(field(&dec, "dtype"), (8, 4));

    // BF16 [2, 3] with a padded row stride: input not contiguous, output contiguous.
    let s = dir.path().join("strided.bin");
    json_run(&[
        "packet",
        "encode",
        "quant",
        "--shape",
        "2,3",
        "--dtype",
        "bf16",
        "--multiplier",
        "2",
        "--input-strides",
        "16,2",
        "--output",
        path_str(&s),
        "--json",
    ]);
    let dec = json_run(&["packet", "decode", path_str(&s), "--json"]);
    assert_eq!(dec["verdict"]["text"], "valid (relocatable)");
    assert_eq!(field(&dec, "flags"), (16, 2));
    assert_eq!(field(&dec, "input_span"), (48, 16 + 4 + 2));
    assert_eq!(field(&dec, "input_strides[0]"), (112, 16));
}

#[test]
fn corrupted_packets_exit_2_with_the_error_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.bin");
    json_run(&[
        "packet",
        "encode",
        "quant",
        "--shape",
        "4,5",
        "--dtype",
        "f32",
        "--multiplier",
        "3",
        "--input-address",
        "0x10000",
        "--output-address",
        "0x20000",
        "--output",
        path_str(&p),
        "--json",
    ]);
    let good = fs::read(&p).unwrap();
    // (corruption, numeric code, words of the error)
    type Corrupt = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Corrupt, u16, &str)> = vec![
        (
            "reserved20",
            Box::new(|b: &mut Vec<u8>| b[20] = 1),
            8,
            "offset 20",
        ),
        (
            "span",
            Box::new(|b: &mut Vec<u8>| b[48] += 1),
            26,
            "input span",
        ),
        ("magic", Box::new(|b: &mut Vec<u8>| b[0] = b'X'), 2, "magic"),
        (
            "truncated",
            Box::new(|b: &mut Vec<u8>| b.truncate(100)),
            1,
            "100 bytes",
        ),
        (
            "unbound",
            Box::new(|b: &mut Vec<u8>| b[32..40].fill(0)),
            39,
            "unbound",
        ),
        (
            "rounding",
            Box::new(|b: &mut Vec<u8>| b[216] = 9),
            16,
            "rounding",
        ),
    ];
    for (name, corrupt, code, words) in cases {
        let mut bytes = good.clone();
        corrupt(&mut bytes);
        let bad = dir.path().join(format!("{name}.bin"));
        fs::write(&bad, &bytes).unwrap();
        let out = simak(&["packet", "decode", path_str(&bad)]);
        let code_text = format!("error code {code}");
        assert_bad(&out, &[path_str(&bad), &code_text, words]);
        let text = stdout_of(&out);
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("verdict: invalid") && last.contains(&code_text),
            "{name}: {last}"
        );
        let json = simak(&["packet", "decode", path_str(&bad), "--json"]);
        assert_eq!(json.status.code(), Some(2));
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(v["verdict"]["valid"], false);
        assert_eq!(v["verdict"]["code"], code, "{name}");
    }
}

#[test]
fn packet_encode_refusals_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = d.join("p.bin");
    let ps = path_str(&p);
    let base = [
        "packet",
        "encode",
        "quant",
        "--dtype",
        "f32",
        "--multiplier",
        "1",
        "--output",
        ps,
    ];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    // Overlapping ports.
    expect_bad(
        &with(&[
            "--shape",
            "8",
            "--input-address",
            "0x1000",
            "--output-address",
            "0x1010",
        ]),
        d,
        &["overlap"],
    );
    // Misaligned input address.
    expect_bad(
        &with(&[
            "--shape",
            "8",
            "--input-address",
            "0x1001",
            "--output-address",
            "0x2000",
        ]),
        d,
        &["aligned"],
    );
    // Strides that overlap (nonoverlap proof), and the wrong count of strides.
    expect_bad(
        &with(&["--shape", "2,3", "--input-strides", "4,4"]),
        d,
        &["nonoverlap"],
    );
    expect_bad(
        &with(&["--shape", "2,3", "--input-strides", "12"]),
        d,
        &["--input-strides", "rank 2"],
    );
    // One address alone, an empty shape, a bad zero point.
    expect_bad(
        &with(&["--shape", "8", "--input-address", "0x1000"]),
        d,
        &["--output-address"],
    );
    expect_bad(&with(&["--shape", ""]), d, &["scalar"]);
    expect_bad(
        &with(&["--shape", "8", "--zero-point", "200"]),
        d,
        &["zero point 200"],
    );
}

#[test]
fn casttess_packets_encode_decode_and_reject_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // SPEC §5 example, relocatable.
    let p = d.join("ct.bin");
    json_run(&[
        "packet",
        "encode",
        "casttess",
        "--shape",
        "2,3",
        "--dtype",
        "f32",
        "--axes",
        "-1,-1,0,1",
        "--tile",
        "1,1,2,3",
        "--output",
        path_str(&p),
        "--json",
    ]);
    let bytes = fs::read(&p).unwrap();
    // Hand-checked against the SPEC §7 CastTess table.
    assert_eq!(bytes.len(), 216);
    assert_eq!(&bytes[0..4], b"SKCT");
    assert_eq!(u16::from_le_bytes([bytes[6], bytes[7]]), 216);
    assert_eq!((le_u32(&bytes, 8), le_u32(&bytes, 12)), (3, 2));
    assert_eq!(le_u32(&bytes, 16), 0, "compact");
    assert_eq!(
        (le_u64(&bytes, 40), le_u64(&bytes, 48), le_u64(&bytes, 56)),
        (6, 24, 16)
    );
    assert_eq!(&bytes[160..164], &[0xff, 0xff, 0, 1]);
    assert_eq!(
        (0..4)
            .map(|k| le_u32(&bytes, 168 + 4 * k))
            .collect::<Vec<_>>(),
        [1, 1, 2, 3]
    );
    assert_eq!(le_u64(&bytes, 184), 16, "bytes per outer index");
    assert_eq!(
        (0..4)
            .map(|k| le_u32(&bytes, 192 + 4 * k))
            .collect::<Vec<_>>(),
        [1, 1, 1, 1]
    );
    assert_eq!(le_u32(&bytes, 208), 16, "tile alignment");
    let dec = json_run(&["packet", "decode", path_str(&p), "--json"]);
    assert_eq!(dec["descriptor"], "casttess-v1");
    assert_eq!(dec["verdict"]["text"], "valid (relocatable)");
    assert_eq!(field(&dec, "axes[w]"), (162, 0));
    assert_eq!(field(&dec, "axes[d]"), (160, -1));
    assert_eq!(field(&dec, "bytes_per_outer"), (184, 16));

    // Bound, PadTo16 with an outer axis.
    let b = d.join("bound.bin");
    json_run(&[
        "packet",
        "encode",
        "casttess",
        "--shape",
        "2,5,7,17",
        "--dtype",
        "bf16",
        "--axes",
        "-1,1,2,3",
        "--tile",
        "1,2,3,16",
        "--channels",
        "pad16",
        "--input-address",
        "0x100000",
        "--output-address",
        "0x200000",
        "--output",
        path_str(&b),
        "--json",
    ]);
    let dec = json_run(&["packet", "decode", path_str(&b), "--json"]);
    assert_eq!(dec["verdict"]["text"], "valid (bound)");
    assert_eq!(field(&dec, "flags"), (16, 1));
    assert_eq!(field(&dec, "tile_counts[c]"), (204, 2));
    let good = fs::read(&b).unwrap();
    for (name, at, code) in [("reserved164", 164usize, 40u16), ("tilealign", 208, 0)] {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        let f = d.join(format!("{name}.bin"));
        fs::write(&f, &bad).unwrap();
        let out = simak(&["packet", "decode", path_str(&f)]);
        let err = assert_bad(&out, &[path_str(&f), "CastTess v1", "error code"]);
        if code != 0 {
            assert!(err.contains(&format!("error code {code},")), "{err}");
        }
    }
    // A misaligned output address is refused at binding: nothing written.
    expect_bad(
        &[
            "packet",
            "encode",
            "casttess",
            "--shape",
            "2,3",
            "--dtype",
            "f32",
            "--axes",
            "-1,-1,0,1",
            "--tile",
            "1,1,2,3",
            "--input-address",
            "0x1000",
            "--output-address",
            "0x2008",
            "--output",
            path_str(&d.join("x.bin")),
        ],
        d,
        &["aligned"],
    );
}

/// The simulated-cost keys of one tensor's `--json` figures (`docs/cost-model.md`): the
/// totals, and per-worker figures that add up to them. Returns `simulated_cycles`.
pub(crate) fn check_sim_cost(v: &serde_json::Value, workers: usize) -> u64 {
    for key in [
        "simulated_cycles",
        "dispatch_cycles",
        "dma_commands",
        "bytes_read",
        "bytes_written",
        "device_calls",
    ] {
        assert!(v[key].is_u64(), "{key} in {v}");
    }
    let per = v["per_worker"].as_array().unwrap();
    assert_eq!(per.len(), workers, "{v}");
    let sum = |key: &str| per.iter().map(|w| w[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("dma_commands"), v["dma_commands"].as_u64().unwrap());
    assert_eq!(sum("bytes_written"), v["bytes_written"].as_u64().unwrap());
    assert!(
        sum("bytes_read") < v["bytes_read"].as_u64().unwrap(),
        "descriptor bytes"
    );
    let slowest = per
        .iter()
        .map(|w| w["simulated_cycles"].as_u64().unwrap())
        .max()
        .unwrap();
    let cycles = v["simulated_cycles"].as_u64().unwrap();
    let calls = v["device_calls"].as_u64().unwrap();
    if calls == 1 {
        assert_eq!(cycles, v["dispatch_cycles"].as_u64().unwrap() + slowest);
    }
    for (id, w) in per.iter().enumerate() {
        assert_eq!(w["worker"], id as u64);
    }
    cycles
}

#[test]
fn quant_json_reports_the_simulated_cost_per_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let input = chelsea_npy(); // contiguous FP32 [300, 451, 3]
    let elements = 300 * 451 * 3u64;
    let out = dir.path().join("q.npy");
    let args = |backend: &[&'static str]| {
        let mut a = vec![
            "quant".to_owned(),
            "--input".to_owned(),
            path_str(&input).to_owned(),
            "--output".to_owned(),
            path_str(&out).to_owned(),
            "--multiplier".to_owned(),
            "37.5".to_owned(),
        ];
        a.extend(backend.iter().map(|s| (*s).to_owned()));
        a
    };
    let mut a65 = args(&["--backend", "a65"]);
    a65.push("--json".to_owned());
    let summary = json_run(&a65);
    let row = &summary["tensors"][0];
    assert!(row.get("simulated_cycles").is_none(), "{row}");
    assert!(row.get("per_worker").is_none(), "{row}");
    let mut cycles = Vec::new();
    for workers in ["1", "4"] {
        let mut a = args(&["--backend", "ev74-sim", "--workers", workers]);
        a.push("--json".to_owned());
        let summary = json_run(&a);
        let row = &summary["tensors"][0];
        cycles.push(check_sim_cost(row, workers.parse().unwrap()));
        // One call; one DMA block of 4096 elements in and out per unit.
        assert_eq!(row["device_calls"], 1);
        assert_eq!(row["dma_commands"], 2 * elements.div_ceil(4096));
        assert_eq!(row["bytes_read"], 4 * elements + 224);
        assert_eq!(row["bytes_written"], elements);
        let per = row["per_worker"].as_array().unwrap();
        let sum = |key: &str| per.iter().map(|w| w[key].as_u64().unwrap()).sum::<u64>();
        // Every element once, on the fast block path but for the exact 12-element tail.
        assert_eq!(sum("fast_elements"), elements - 12);
        assert_eq!(sum("fallback_elements"), 12);
        // The text summary has one short line per tensor.
        let text = stdout_of(&simak(&args(&[
            "--backend",
            "ev74-sim",
            "--workers",
            workers,
        ])));
        let line = format!(
            "simulated {} cycles",
            row["simulated_cycles"].as_u64().unwrap()
        );
        assert!(
            text.contains("ev74-sim: ") && text.contains(&line),
            "{text}"
        );
    }
    // Four workers share the blocks: fewer simulated cycles than one.
    assert!(cycles[1] * 3 < cycles[0], "{cycles:?}");
}

/// A DetessDequant v1 packet (issue 28's descriptor): the CLI's
/// listing names the tail's fields with their offsets and meanings, and the verdict is the
/// device decoder's; a corrupted zero point is refused with its code.
#[test]
fn packet_decode_lists_a_detess_dequant_descriptor() {
    use simak::layout::{Channels, MlaTiled};
    use simak::ops::dequant::Params;
    use simak::ops::detessdequant::{Request, check_inference};
    use simak::{DType, TensorSpec};

    let plan = check_inference(&Request {
        dtype: DType::I16,
        layout: MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 16],
            Channels::CBlock16,
        ),
        output: TensorSpec::contiguous([3, 17], DType::F32),
        params: Params::new(0.5).with_zero_point(-3),
    })
    .unwrap();
    let plan = simak::ev74::detess::check_inference(&plan).unwrap();
    let packet = simak::ev74::detess::encode_relocatable(&plan);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dq.bin");
    fs::write(&p, packet.as_bytes()).unwrap();

    let dec = json_run(&["packet", "decode", path_str(&p), "--json"]);
    assert_eq!(dec["verdict"]["text"], "valid (relocatable)");
    assert_eq!(dec["fields"].as_array().unwrap().len(), 42);
    // Hand-computed: 3 W pixels in tiles of 2, 17 channels stored as 32 (two 16-channel
    // blocks), 2-byte elements: 2·32·2 + 1·32·2 = 192 bytes; the FP32 output 51 × 4.
    let expect: [(&str, u64, i128); 10] = [
        ("magic", 0, i128::from(u32::from_le_bytes(*b"SKDQ"))),
        ("byte_length", 6, 224),
        ("dtype", 8, 3),
        ("flags", 16, 3),
        ("input_span", 48, 192),
        ("output_span", 56, 204),
        ("input_dtype", 164, 6),
        ("tile_align", 208, 16),
        ("multiplier", 216, 0x3f00_0000),
        ("zero_point", 220, -3),
    ];
    for (name, offset, value) in expect {
        assert_eq!(field(&dec, name), (offset, value), "{name}");
    }
    let text = simak(&["packet", "decode", path_str(&p)]);
    assert_success(&text);
    let text = stdout_of(&text);
    assert!(text.contains("align_c16 | cblock"), "{text}");
    assert!(text.contains("i16"), "{text}");

    // INT16's zero points end at -32768: code 57.
    let mut bad = packet.as_bytes().to_vec();
    bad[220..224].copy_from_slice(&(-40_000i32).to_le_bytes());
    fs::write(&p, &bad).unwrap();
    let out = simak(&["packet", "decode", path_str(&p), "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let dec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(dec["verdict"]["valid"], false);
    assert_eq!(dec["verdict"]["code"], 57, "{dec}");
    assert_eq!(dec["verdict"]["code_name"], "DequantZeroPoint", "{dec}");
}

/// `simak packet decode` on a Preproc v1 descriptor (issue 29): the entry is told by its
/// magic, the listing has the contract's offsets (`docs/contract.md` §7) and values, a
/// relocatable packet is valid, and a corrupted one exits 2 with the rule's code.
#[test]
fn preproc_packets_decode_by_the_contract_offsets() {
    use simak::ops::preproc::{Border, Format, Frame, Normalize, Output, Request};
    let dir = tempfile::tempdir().unwrap();
    let plan = simak::ops::preproc::check_inference(&Request {
        frame: Frame::packed(Format::I420, 4, 6),
        normalize: Normalize {
            divisor: 1.0,
            mean: &[0.5],
            std: &[2.0],
        },
        bgr: true,
        border: Border {
            top: 0,
            bottom: 0,
            left: 3,
            right: 1,
        },
        pad_value: &[9, 8, 7],
        output: Output::F32 { strides: None },
    })
    .unwrap();
    let device = simak::ev74::check_inference(&plan).unwrap();
    let packet = simak::ev74::encode_relocatable(&device);
    let p = dir.path().join("preproc.bin");
    fs::write(&p, packet.as_bytes()).unwrap();
    let dec = json_run(&["packet", "decode", path_str(&p), "--json"]);
    assert_eq!(dec["entry"], "simaai_kernels_ev74_preproc_v1", "{dec}");
    // I420 4×6: Y 24 bytes, U and V 2 rows of 3 bytes at 24 and 30; output [4, 10, 3].
    for (name, offset, value) in [
        ("byte_length", 6, 368),
        ("dtype", 8, 3),
        ("rank", 12, 3),
        ("flags", 16, 1),
        ("input_span", 48, 36),
        ("output_span", 56, 4 * 10 * 3 * 4),
        ("extents[1]", 72, 10),
        ("pixel_format", 164, 7),
        ("output_kind", 212, 1),
        ("plane_offsets[2]", 248, 30),
        ("row_strides[1]", 264, 3),
        ("border_left", 304, 3),
        ("pad_value[0]", 320, 9),
        ("pad_value[2]", 322, 7),
        ("divisor", 324, 0x3f80_0000),
        ("std[1]", 344, 0x4000_0000),
    ] {
        assert_eq!(field(&dec, name), (offset, value), "{name}");
    }
    let mut bad = packet.as_bytes().to_vec();
    bad[224] = 7; // an odd width under a 10-pixel output row
    let b = dir.path().join("bad.bin");
    fs::write(&b, &bad).unwrap();
    let json = simak(&["packet", "decode", path_str(&b), "--json"]);
    assert_eq!(json.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["verdict"]["code"], 89, "{v}");
}
