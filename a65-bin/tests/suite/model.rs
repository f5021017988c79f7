//! `simak model` end to end (SPEC §14, issue 30): `inspect` prints the stages the fixtures'
//! hand-written sidecars list; `preprocess` of a PNG and of a `.npy` frame and
//! `postprocess` into `.npz` and `.safetensors` give the bytes of the library's `Model`
//! (itself tested against single-op calls in `std-adapter/tests/suite/model.rs`); refusals
//! exit 2 with the rule's code and write nothing.

use crate::common::*;

use std::fs;
use std::io::Read;

use serde_json::Value;
use simak::model::Model;
use simak_tests::rng::Rng;

fn mpk(name: &str) -> std::path::PathBuf {
    data(&format!("mpk/{name}.mpk.json"))
}

fn random(seed: u64, n: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.next_u32() as u8).collect()
}

/// Writes `pixels` as the YOLO fixture's frame: a uint8 `.npy` of shape [1, 480, 640, 3].
fn write_frame_npy(path: &std::path::Path, pixels: &[u8]) {
    write_npy(path, "|u1", &[1, 480, 640, 3], npyz::Order::C, pixels);
}

/// The IFM bytes `simak model preprocess MPK --input INPUT` writes (into `dir`).
fn preprocess_cli(
    dir: &std::path::Path,
    mpk: &std::path::Path,
    input: &std::path::Path,
) -> Vec<u8> {
    let ifm = dir.join("ifm.bin");
    let _ = fs::remove_file(&ifm);
    let out = simak(&[
        "model",
        "preprocess",
        path_str(mpk),
        "--input",
        path_str(input),
        "--output",
        path_str(&ifm),
    ]);
    assert_success(&out);
    fs::read(&ifm).unwrap()
}

#[test]
fn inspect_prints_the_stages_of_each_fixture() {
    for name in ["yolo", "bf16", "classifier"] {
        let want: Value = serde_json::from_str(
            &fs::read_to_string(data(&format!("mpk/{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let got = json_run(&["--json", "model", "inspect", path_str(&mpk(name))]);
        assert_eq!(got["ifm_bytes"], want["ifm_size"], "{name}");
        assert_eq!(got["ofm_bytes"], want["ofm_size"], "{name}");
        let stages = got["stages"].as_array().unwrap();
        let wanted: Vec<&Value> = want["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .chain(want["outputs"].as_array().unwrap())
            .collect();
        assert_eq!(stages.len(), wanted.len(), "{name}");
        for (s, w) in stages.iter().zip(wanted) {
            for key in [
                "name", "op", "plugins", "shape", "dtype", "size", "offset", "backends",
            ] {
                assert_eq!(s[key], w[key], "{name} {key}");
            }
        }
        // The text table names every stage, its op and its plugins.
        let out = simak(&["model", "inspect", path_str(&mpk(name))]);
        assert_success(&out);
        let text = stdout_of(&out);
        for w in want["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .chain(want["outputs"].as_array().unwrap())
        {
            assert!(text.contains(w["name"].as_str().unwrap()), "{text}");
            assert!(text.contains(w["op"].as_str().unwrap()), "{text}");
        }
    }
}

#[test]
fn preprocess_of_a_png_and_a_npy_frame_gives_the_models_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let pixels = random(300, 480 * 640 * 3);
    let png = dir.path().join("frame.png");
    image::RgbImage::from_raw(640, 480, pixels.clone())
        .unwrap()
        .save(&png)
        .unwrap();
    let npy = dir.path().join("frame.npy");
    write_frame_npy(&npy, &pixels);
    let want = Model::from_mpk(mpk("yolo"))
        .unwrap()
        .preprocess(0, &pixels, 1)
        .unwrap();
    for (input, threads) in [(&png, "1"), (&npy, "2")] {
        let ifm = dir.path().join("ifm.bin");
        let out = simak(&[
            "model",
            "preprocess",
            path_str(&mpk("yolo")),
            "--input",
            path_str(input),
            "--output",
            path_str(&ifm),
            "--threads",
            threads,
        ]);
        assert_success(&out);
        assert!(
            fs::read(&ifm).unwrap() == want.as_slice(),
            "{}",
            input.display()
        );
    }
}

#[test]
fn postprocess_writes_npz_and_safetensors() {
    let dir = tempfile::tempdir().unwrap();
    let ofm_bytes = random(301, 2_150_400);
    let ofm = dir.path().join("ofm.bin");
    fs::write(&ofm, &ofm_bytes).unwrap();
    let want = Model::from_mpk(mpk("yolo"))
        .unwrap()
        .postprocess(&ofm_bytes, 1)
        .unwrap();

    let st = dir.path().join("out.safetensors");
    assert_success(&simak(&[
        "model",
        "postprocess",
        path_str(&mpk("yolo")),
        "--input",
        path_str(&ofm),
        "--output",
        path_str(&st),
    ]));
    let bytes = fs::read(&st).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    for t in &want {
        let v = file.tensor(&t.name).unwrap();
        assert_eq!(v.dtype(), safetensors::Dtype::F32);
        assert_eq!(
            v.shape(),
            t.shape.iter().map(|&e| e as usize).collect::<Vec<_>>()
        );
        assert!(v.data() == t.data.as_slice(), "{}", t.name);
    }

    let npz = dir.path().join("out.npz");
    assert_success(&simak(&[
        "model",
        "postprocess",
        path_str(&mpk("yolo")),
        "--input",
        path_str(&ofm),
        "--output",
        path_str(&npz),
        "--threads",
        "2",
    ]));
    let mut zip = zip::ZipArchive::new(fs::File::open(&npz).unwrap()).unwrap();
    assert_eq!(zip.len(), 3);
    for t in &want {
        let mut member = Vec::new();
        zip.by_name(&format!("{}.npy", t.name))
            .unwrap()
            .read_to_end(&mut member)
            .unwrap();
        let npy = npyz::NpyFile::new(&member[..]).unwrap();
        assert_eq!(npy.shape(), t.shape.as_slice());
        let values: Vec<f32> = npy.into_vec().unwrap();
        assert_eq!(values, t.f32_values().unwrap(), "{}", t.name);
    }
}

#[test]
fn refusals_exit_2_with_the_code_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.safetensors");
    let ofm = dir.path().join("ofm.bin");
    fs::write(&ofm, random(302, 20)).unwrap();
    let post = |manifest: &std::path::Path, out: &std::path::Path| -> Vec<String> {
        [
            "postprocess",
            path_str(manifest),
            "--input",
            path_str(&ofm),
            "--output",
            path_str(out),
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let mut index = post(&mpk("classifier"), &dir.path().join("ifm.bin"));
    index[0] = "preprocess".into();
    index.extend(["--input-index".into(), "1".into()]);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            post(&data("mpk/errors/conflicting_aliases.mpk.json"), &out_path),
            "code 0x704",
        ),
        (
            post(&mpk("yolo"), &out_path),
            "20 bytes, but the model's OFM is 2150400 bytes",
        ),
        (
            post(&mpk("classifier"), &dir.path().join("out.npy")),
            "give an .npz or a .safetensors file",
        ),
        (index, "--input-index 1: the model has 1 input(s)"),
    ];
    for (args, needle) in cases {
        let mut full = vec!["model".to_owned()];
        full.extend(args);
        let out = simak(&full);
        assert_eq!(out.status.code(), Some(2), "{full:?}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains(needle), "{}", stderr_of(&out));
        let written: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(written.len(), 1, "{full:?} wrote a file");
    }
}

#[test]
fn ev74_sim_gives_the_a65_bytes_or_refuses_with_0x501() {
    // The classifier's stages (Quant, DetessDequant) and YOLO's Preproc have EV74 entries.
    let dir = tempfile::tempdir().unwrap();
    let ofm = dir.path().join("ofm.bin");
    fs::write(&ofm, random(303, 20)).unwrap();
    let classifier = mpk("classifier");
    let run = |backend: &[&str], out: &std::path::Path| {
        let mut args = vec![
            "model",
            "postprocess",
            path_str(&classifier),
            "--input",
            path_str(&ofm),
            "--output",
            path_str(out),
        ];
        args.extend_from_slice(backend);
        assert_success(&simak(&args));
        fs::read(out).unwrap()
    };
    let a65 = run(&[], &dir.path().join("a.safetensors"));
    let ev74 = run(
        &["--backend", "ev74-sim", "--workers", "3"],
        &dir.path().join("e.safetensors"),
    );
    assert_eq!(a65, ev74);
    // The YOLO fixture's Preproc runs on the EV74 (Preproc v1): the A65's bytes.
    let frame = dir.path().join("frame.npy");
    write_frame_npy(&frame, &random(304, 480 * 640 * 3));
    let yolo = mpk("yolo");
    let preprocess = |backend: &[&str], name: &str| {
        let ifm = dir.path().join(name);
        let mut args = vec![
            "model",
            "preprocess",
            path_str(&yolo),
            "--input",
            path_str(&frame),
            "--output",
            path_str(&ifm),
        ];
        args.extend_from_slice(backend);
        assert_success(&simak(&args));
        fs::read(&ifm).unwrap()
    };
    let a65 = preprocess(&[], "ifm_a65.bin");
    let ev74 = preprocess(&["--backend", "ev74-sim", "--workers", "2"], "ifm_ev74.bin");
    assert!(a65 == ev74, "yolo preprocess on the ev74-sim");
    // A bare Dequant output stage has no EV74 entry: refused with 0x501, nothing written.
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&classifier).unwrap()).unwrap();
    let plugins = v["plugins"].as_array_mut().unwrap();
    plugins.retain(|p| p["name"] != "detessdequant_0");
    let dq = plugins
        .iter_mut()
        .find(|p| p["name"] == "dequant_0")
        .unwrap();
    dq["input_nodes"] = serde_json::json!([{"name": "ofm"}]);
    dq["params"]["in_dtype"] = serde_json::json!("int8");
    dq["params"]["output_shape"] = serde_json::json!([2, 1, 1, 10]);
    let manifest = dir.path().join("dequant.mpk.json");
    fs::write(&manifest, v.to_string()).unwrap();
    let out_path = dir.path().join("dq.safetensors");
    let out = simak(&[
        "model",
        "postprocess",
        path_str(&manifest),
        "--input",
        path_str(&ofm),
        "--output",
        path_str(&out_path),
        "--backend",
        "ev74-sim",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("dequant_0") && stderr_of(&out).contains("code 0x501"));
    assert!(!out_path.exists());
}

/// A big-endian float `.npy` gives the bytes of its little-endian twin (the CLI reads the
/// byte order), and a batch-1 frame may leave out its leading 1, as in Python.
#[test]
fn preprocess_reads_byte_order_and_an_omitted_batch_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(301);
    let x: Vec<f32> = (0..2 * 8 * 8 * 3)
        .map(|_| (rng.next_u32() as i32) as f32 / 1e7)
        .collect();
    let le: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let want = Model::from_mpk(mpk("classifier"))
        .unwrap()
        .preprocess(0, &le, 1)
        .unwrap();
    let big = dir.path().join("big.npy");
    let be: Vec<u8> = x.iter().flat_map(|v| v.to_be_bytes()).collect();
    write_npy(&big, ">f4", &[2, 8, 8, 3], npyz::Order::C, &be);
    let got = preprocess_cli(dir.path(), &mpk("classifier"), &big);
    assert!(got == want.as_slice(), "big-endian .npy");

    let pixels = random(302, 480 * 640 * 3);
    let frame = dir.path().join("frame3.npy");
    write_npy(&frame, "|u1", &[480, 640, 3], npyz::Order::C, &pixels);
    let want = Model::from_mpk(mpk("yolo"))
        .unwrap()
        .preprocess(0, &pixels, 1)
        .unwrap();
    let got = preprocess_cli(dir.path(), &mpk("yolo"), &frame);
    assert!(got == want.as_slice(), "[480, 640, 3] frame");
}
