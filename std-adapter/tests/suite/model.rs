//! `simak::model` (SPEC §14, issue 30): the fixtures of `tests/data/mpk/` read into the
//! stages their sidecars list by hand; random frames and OFMs through the model equal the
//! single ops called with parameters written here by hand (and, for the classifier, an
//! oracle from SPEC §12.2's formula); aliases, dtype spellings and plugin order change
//! nothing; each error fixture is refused with its code, naming its plugin and key.

use std::path::PathBuf;

use serde_json::Value;
use simak::a65;
use simak::layout::{Channels, MlaTiled};
use simak::model::{Model, ModelError};
use simak::ops::casttess::TiledSpec;
use simak::ops::preproc::{Border, Format, Frame, Normalize, Output};
use simak::ops::quant::Rounding;
use simak::ops::{casttess, dequant, detess, detesscast, detessdequant, preproc, quant};
use simak::{DType, DynSpec};
use simak_tests::rng::Rng;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/mpk")
}

fn text(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap()
}

fn model(name: &str) -> Model {
    Model::from_mpk(dir().join(format!("{name}.mpk.json"))).unwrap()
}

fn bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u32() as u8).collect()
}

fn f32s(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|_| ((rng.next_u32() % 2001) as f32 / 100.0 - 10.0).to_le_bytes())
        .collect()
}

/// An aligned copy of `data` (16 bytes).
fn aligned(data: &[u8]) -> simak::model::AlignedBytes {
    let mut a = simak::model::AlignedBytes::zeroed(data.len(), 16);
    a.as_mut_slice().copy_from_slice(data);
    a
}

/// Every fixture's stages equal its sidecar, written by hand.
#[test]
fn fixtures_give_the_stages_their_sidecars_list() {
    for name in ["yolo", "bf16", "classifier"] {
        let m = model(name);
        let want: Value = serde_json::from_str(&text(&format!("{name}.expected.json"))).unwrap();
        assert_eq!(m.batch(), want["batch"].as_u64().unwrap(), "{name}");
        assert_eq!(m.ifm_size(), want["ifm_size"].as_u64().unwrap(), "{name}");
        assert_eq!(m.ofm_size(), want["ofm_size"].as_u64().unwrap(), "{name}");
        for (side, stages) in [("inputs", m.inputs()), ("outputs", m.outputs())] {
            let list = want[side].as_array().unwrap();
            assert_eq!(stages.len(), list.len(), "{name} {side}");
            for (s, w) in stages.iter().zip(list) {
                let at = format!("{name} {side} {}", s.name);
                assert_eq!(s.name, w["name"].as_str().unwrap(), "{at}");
                assert_eq!(s.op.name(), w["op"].as_str().unwrap(), "{at}");
                let plugins: Vec<&str> = w["plugins"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap())
                    .collect();
                assert_eq!(s.plugins, plugins, "{at}");
                let shape: Vec<u64> = w["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect();
                assert_eq!(s.shape, shape, "{at}");
                assert_eq!(s.dtype.numpy_name(), w["dtype"].as_str().unwrap(), "{at}");
                assert_eq!(s.size, w["size"].as_u64().unwrap(), "{at}");
                assert_eq!(s.offset, w["offset"].as_u64().unwrap(), "{at}");
                if let Some(b) = w.get("input_bytes") {
                    assert_eq!(s.input_bytes, b.as_u64().unwrap(), "{at}");
                }
                if let Some(b) = w.get("output_bytes") {
                    assert_eq!(s.output_bytes, b.as_u64().unwrap(), "{at}");
                }
                let backends: Vec<&str> = w["backends"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap())
                    .collect();
                assert_eq!(s.op.backends(), backends, "{at}");
            }
        }
    }
}

/// The YOLO fixture: a random 640×480 RGB frame through `preprocess` equals one Preproc
/// call with the parameters written here; a random OFM through `postprocess` equals three
/// DetessDequant calls at the heads' offsets written here.
#[test]
fn yolo_equals_single_op_calls() {
    let m = model("yolo");
    let mut rng = Rng::new(30);
    let frame = bytes(&mut rng, 480 * 640 * 3);
    let ifm = m.preprocess(0, &frame, 2).unwrap();

    let plan = preproc::check_inference(&preproc::Request {
        frame: Frame::packed(Format::RGB8, 480, 640).with_batch(1),
        normalize: Normalize {
            divisor: 255.0,
            mean: &[0.0],
            std: &[1.0],
        },
        bgr: false,
        border: Border {
            top: 80,
            bottom: 80,
            left: 0,
            right: 0,
        },
        pad_value: &[114],
        output: Output::QuantTess {
            layout: MlaTiled::new(
                [None, Some(1), Some(2), Some(3)],
                [1, 32, 32, 3],
                Channels::PadTo16,
            ),
            params: quant::Params::new(127.0)
                .with_zero_point(-128)
                .with_rounding(Rounding::NearestEven),
        },
    })
    .unwrap();
    let mut want = simak::model::AlignedBytes::zeroed(6_553_600, 16);
    a65::execute(&a65::preproc::prepare(&plan), &frame, want.as_mut_slice()).unwrap();
    assert!(
        ifm.as_slice() == want.as_slice(),
        "the IFM differs from one Preproc call"
    );

    let ofm = aligned(&bytes(&mut rng, 2_150_400));
    let outs = m.postprocess(ofm.as_slice(), 2).unwrap();
    let heads = [
        (
            0usize,
            1_638_400usize,
            [80u64, 80, 255],
            [16u32, 16, 255],
            21.5f32,
            -3,
        ),
        (1_638_400, 409_600, [40, 40, 255], [8, 8, 255], 33.25, 0),
        (2_048_000, 102_400, [20, 20, 255], [4, 4, 255], 40.0, 7),
    ];
    assert_eq!(outs.len(), 3);
    for ((offset, span, [h, w, c], [th, tw, tc], scale, zp), out) in heads.into_iter().zip(&outs) {
        let shape = [1, h, w, c];
        let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
            input: TiledSpec {
                extents: &shape,
                dtype: DType::I8,
                layout: MlaTiled::new(
                    [None, Some(1), Some(2), Some(3)],
                    [1, th, tw, tc],
                    Channels::CBlock16,
                ),
            },
            output: DynSpec::contiguous(&shape, DType::F32),
            params: dequant::Params::new(scale).with_zero_point(zp),
        })
        .unwrap();
        let mut want = simak::model::AlignedBytes::zeroed((h * w * c * 4) as usize, 16);
        a65::execute(
            &a65::detessdequant::prepare(&plan),
            &ofm.as_slice()[offset..offset + span],
            want.as_mut_slice(),
        )
        .unwrap();
        assert_eq!(out.shape, shape);
        assert!(
            out.data.as_slice() == want.as_slice(),
            "head {} differs",
            out.name
        );
    }
    assert_eq!(
        outs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        ["p3", "p4", "p5"]
    );
}

/// The BF16 fixture: CastTess in, DetessCast out, against single calls.
#[test]
fn bf16_equals_single_op_calls() {
    let m = model("bf16");
    let mut rng = Rng::new(31);
    let x = f32s(&mut rng, 24 * 24 * 20);
    let ifm = m.preprocess(0, &x, 1).unwrap();
    let shape = [1u64, 24, 24, 20];
    let plan = casttess::check_inference_dyn(&casttess::DynRequest {
        input: DynSpec::contiguous(&shape, DType::F32),
        output: TiledSpec {
            extents: &shape,
            dtype: DType::BF16,
            layout: MlaTiled::new(
                [None, Some(1), Some(2), Some(3)],
                [1, 8, 8, 20],
                Channels::Compact,
            ),
        },
    })
    .unwrap();
    let xa = aligned(&x);
    let mut want = simak::model::AlignedBytes::zeroed(23_040, 16);
    a65::execute(
        &a65::casttess::prepare(&plan),
        xa.as_slice(),
        want.as_mut_slice(),
    )
    .unwrap();
    assert!(ifm.as_slice() == want.as_slice());

    let ofm = aligned(&bytes(&mut rng, 13_824));
    let outs = m.postprocess(ofm.as_slice(), 3).unwrap();
    let shape = [1u64, 12, 12, 40];
    let plan = detesscast::check_inference_dyn(&detess::DynRequest {
        input: TiledSpec {
            extents: &shape,
            dtype: DType::BF16,
            layout: MlaTiled::new(
                [None, Some(1), Some(2), Some(3)],
                [1, 4, 12, 40],
                Channels::PadTo16,
            ),
        },
        output: DynSpec::contiguous(&shape, DType::F32),
    })
    .unwrap();
    let mut want = simak::model::AlignedBytes::zeroed(23_040, 16);
    a65::execute(
        &a65::detesscast::prepare(&plan),
        ofm.as_slice(),
        want.as_mut_slice(),
    )
    .unwrap();
    assert!(outs[0].data.as_slice() == want.as_slice());
}

/// The classifier (batch 2): Quant in, against one call; DetessDequant of a Compact INT8
/// head with tile alignment 1 out, against SPEC §12.2's formula on the bytes `n·10 + c`.
#[test]
fn classifier_equals_single_op_and_the_formula() {
    let m = model("classifier");
    let mut rng = Rng::new(32);
    let x = f32s(&mut rng, 2 * 8 * 8 * 3);
    let ifm = m.preprocess(0, &x, 1).unwrap();
    let shape = [2u64, 8, 8, 3];
    let plan = quant::check_inference_dyn(&quant::DynRequest {
        input: DynSpec::contiguous(&shape, DType::F32),
        output: DynSpec::contiguous(&shape, DType::I8),
        params: quant::Params::new(0.5)
            .with_zero_point(3)
            .with_rounding(Rounding::NearestEven),
    })
    .unwrap();
    let xa = aligned(&x);
    let mut want = vec![0u8; 384];
    a65::execute(&a65::quant::prepare(&plan), xa.as_slice(), &mut want).unwrap();
    assert_eq!(ifm.as_slice(), want);

    let ofm = bytes(&mut rng, 20);
    let outs = m.postprocess(&ofm, 1).unwrap();
    let got = outs[0].f32_values().unwrap();
    let want: Vec<f32> = ofm
        .iter()
        .map(|&q| (f32::from(q as i8) + 5.0) / 12.75)
        .collect();
    assert_eq!(got.len(), 20);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.to_bits(), w.to_bits());
    }
}

/// Replaces every `"from"` key (quoted) in `text` by `"to"`.
fn rename(text: &str, from: &str, to: &str) -> String {
    text.replace(&format!("\"{from}\":"), &format!("\"{to}\":"))
}

fn same_model(a: &Model, b: &Model, what: &str) {
    assert_eq!(a.inputs(), b.inputs(), "{what}");
    assert_eq!(a.outputs(), b.outputs(), "{what}");
    assert_eq!(a.batch(), b.batch(), "{what}");
    assert_eq!(
        (a.ifm_size(), a.ofm_size()),
        (b.ifm_size(), b.ofm_size()),
        "{what}"
    );
}

/// Every alias of every key, every dtype spelling and every rounding spelling gives the same
/// model; plugins listed out of `sequence` order give the same model.
#[test]
fn aliases_spellings_and_plugin_order_change_nothing() {
    let groups: &[&[&str]] = &[
        &["q_scale", "quant_scale", "dq_scale"],
        &["q_zp", "zero_point", "dq_zp"],
        &["rounding", "round_off"],
        &["input_shapes", "in_shapes", "input_shape"],
        &[
            "output_shapes",
            "tensor_shapes",
            "out_shapes",
            "output_shape",
        ],
        &["in_dtype", "input_dtype", "input_data_type"],
        &["out_dtype", "output_dtype", "output_data_type", "data_type"],
        &["batch_size", "desired_batch_size"],
        &["actual_batch_size", "batch_sz_model", "batch_size_model"],
    ];
    let spellings: &[&[&str]] = &[
        &["\"INT8\"", "\"int8\"", "\"EVXX_INT8\"", "\"evxx_int8\""],
        &["\"EVXX_INT8\"", "\"INT8\"", "\"Int8\""],
        &["\"FP32\"", "\"FLOAT32\"", "\"EVXX_FLOAT32\"", "\"fp32\""],
        &["\"FLOAT32\"", "\"FP32\"", "\"float32\""],
        &[
            "\"bfloat16\"",
            "\"BF16\"",
            "\"BFLOAT16\"",
            "\"EVXX_BFLOAT16\"",
        ],
        &["\"EVXX_BFLOAT16\"", "\"bf16\""],
        &["\"RT_EVEN\"", "\"TONEAREST\""],
        &["\"TONEAREST\"", "\"RT_EVEN\""],
    ];
    let mut variants = 0;
    for name in ["yolo", "bf16", "classifier"] {
        let base_text = text(&format!("{name}.mpk.json"));
        let base = Model::from_mpk_json(&base_text).unwrap();
        for group in groups {
            for &from in *group {
                if !base_text.contains(&format!("\"{from}\":")) {
                    continue;
                }
                for &to in *group {
                    let t = rename(&base_text, from, to);
                    // A plugin may already hold `to` (two aliases, same value); only a
                    // renaming that leaves each key once in each object is a variant.
                    match Model::from_mpk_json(&t) {
                        Ok(m) => {
                            same_model(&base, &m, &format!("{name}: {from} → {to}"));
                            variants += 1;
                        }
                        Err(e) => assert_eq!(e.code(), 0x70f, "{name}: {from} → {to}: {e}"),
                    }
                }
            }
        }
        for list in spellings {
            if !base_text.contains(list[0]) {
                continue;
            }
            for to in &list[1..] {
                let m = Model::from_mpk_json(&base_text.replace(list[0], to)).unwrap();
                same_model(&base, &m, &format!("{name}: {} → {to}", list[0]));
                variants += 1;
            }
        }
        let mut v: Value = serde_json::from_str(&base_text).unwrap();
        v["plugins"].as_array_mut().unwrap().reverse();
        let m = Model::from_mpk_json(&v.to_string()).unwrap();
        same_model(&base, &m, &format!("{name}: plugins reversed"));
    }
    assert!(variants >= 40, "{variants} variants");
}

/// Two aliases of one key with different values in one plugin are refused, naming both.
#[test]
fn conflicting_aliases_are_refused() {
    let t = text("yolo.mpk.json").replace(
        "\"dq_zp\": [-3, 0, 7]",
        "\"dq_zp\": [-3, 0, 7], \"zero_point\": [-3, 0, 8]",
    );
    let e = Model::from_mpk_json(&t).unwrap_err();
    assert_eq!(e.code(), 0x704, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("detessdequant_0") && msg.contains("dq_zp") && msg.contains("zero_point"),
        "{msg}"
    );
    // The same values under two aliases are one parameter.
    let t = text("yolo.mpk.json").replace(
        "\"dq_zp\": [-3, 0, 7]",
        "\"dq_zp\": [-3, 0, 7], \"zero_point\": [-3, 0, 7]",
    );
    same_model(
        &model("yolo"),
        &Model::from_mpk_json(&t).unwrap(),
        "equal aliases",
    );
}

/// Each error fixture is refused with its code; the message names its plugin and key.
#[test]
fn every_error_fixture_is_refused_naming_its_plugin_and_key() {
    let want: Value = serde_json::from_str(&text("errors/expected.json")).unwrap();
    let cases = want.as_object().unwrap();
    assert!(cases.len() >= 15);
    for (name, w) in cases {
        let e: ModelError =
            Model::from_mpk(dir().join(format!("errors/{name}.mpk.json"))).unwrap_err();
        let msg = e.to_string();
        if let Some(code) = w["code"].as_u64() {
            assert_eq!(u64::from(e.code()), code, "{name}: {msg}");
        }
        if let Some(p) = w["plugin"].as_str() {
            assert_eq!(e.plugin.as_deref(), Some(p), "{name}: {msg}");
            assert!(msg.contains(p), "{name}: {msg}");
        }
        if let Some(k) = w["key"].as_str() {
            assert!(msg.contains(k), "{name}: {msg}");
        }
    }
}

/// Buffers of the wrong length are refused before anything is written.
#[test]
fn nothing_is_written_when_a_buffer_is_refused() {
    let m = model("yolo");
    let ofm = simak::model::AlignedBytes::zeroed(2_150_400, 16);
    let mut a = vec![0xabu8; 6_528_000];
    let mut b = vec![0xabu8; 1_632_000];
    let mut c = vec![0xabu8; 407_999];
    let e = m
        .read_outputs(ofm.as_slice(), &mut [&mut a, &mut b, &mut c], 1)
        .unwrap_err();
    assert_eq!(e.code(), 0x70d, "{e}");
    assert!(a.iter().chain(&b).all(|&x| x == 0xab));
    let mut ifm = vec![0xabu8; 6_553_600];
    let e = m
        .prepare_input(0, &[0u8; 921_599], &mut ifm, 1)
        .unwrap_err();
    assert_eq!(e.code(), 0x70d, "{e}");
    let e = m
        .prepare_input(1, &[0u8; 921_600], &mut ifm, 1)
        .unwrap_err();
    assert_eq!(e.code(), 0x70e, "{e}");
    assert!(ifm.iter().all(|&x| x == 0xab));
}

/// `input_range` (SPEC §14): [0, 255] is no normalization; [-1, 1] gives std 0.5, mean 0.5
/// computed in binary64 and rounded once; a range giving std > 1 is refused.
#[test]
fn input_range_sets_the_normalization() {
    let base: Value = serde_json::from_str(&text("errors/input_range.mpk.json")).unwrap();
    let frame: Vec<u8> = (0..16).map(|i| (i * 17) as u8).collect();
    for (range, f) in [
        ([0.0, 255.0], (|p: u8| f32::from(p)) as fn(u8) -> f32),
        ([-1.0, 1.0], |p: u8| (f32::from(p) / 255.0 - 0.5) / 0.5),
        ([0.0, 1.0], |p: u8| f32::from(p) / 255.0),
    ] {
        let mut v = base.clone();
        v["input_nodes"][0]["input_range"] = serde_json::json!(range);
        v["plugins"][0]["params"]["output_dtype"] = "FP32".into();
        v["plugins"][1]["input_nodes"][0]["size"] = 64.into();
        let t = v.to_string();
        let m = match Model::from_mpk_json(&t) {
            Ok(m) => m,
            Err(e) => panic!("{range:?}: {e}\n{t}"),
        };
        let got = m.preprocess(0, &frame, 1).unwrap();
        let want: Vec<u8> = frame.iter().flat_map(|&p| f(p).to_le_bytes()).collect();
        assert_eq!(got.as_slice(), want, "{range:?}");
    }
}

/// The EV74 backend (the simulator) gives the A65's bytes for every stage whose op has an
/// EV74 entry (YOLO's Preproc included), at 1 and 4 workers; a stage without one (a bare
/// Dequant) is refused with the Runtime's missing-capability error (0x501) naming its
/// plugin, nothing written and no fallback.
#[test]
fn ev74_gives_the_a65_bytes_or_refuses_the_stage() {
    use simak::model::Backend;
    let mut rng = Rng::new(33);
    for name in ["bf16", "classifier"] {
        let m = model(name);
        let x = f32s(&mut rng, (m.inputs()[0].input_bytes / 4) as usize);
        let ofm = aligned(&bytes(&mut rng, m.ofm_size() as usize));
        let a65_in = m.preprocess(0, &x, 1).unwrap();
        let a65_out = m.postprocess(ofm.as_slice(), 1).unwrap();
        for workers in [1, 4] {
            let b = Backend::Ev74Sim { workers };
            m.check_backend(b).unwrap();
            let ev_in = m.preprocess_on(0, &x, b).unwrap();
            assert!(ev_in.as_slice() == a65_in.as_slice(), "{name} {workers}");
            let ev_out = m.postprocess_on(ofm.as_slice(), b).unwrap();
            for (e, a) in ev_out.iter().zip(&a65_out) {
                assert!(e.data.as_slice() == a.data.as_slice(), "{name} {workers}");
            }
        }
    }
    // YOLO: its Preproc (Preproc v1) and its DetessDequant heads run on the EV74.
    let m = model("yolo");
    let b = Backend::Ev74Sim { workers: 2 };
    m.check_backend(b).unwrap();
    let frame = bytes(&mut rng, 921_600);
    let ev_in = m.preprocess_on(0, &frame, b).unwrap();
    let a65_in = m.preprocess(0, &frame, 1).unwrap();
    assert!(ev_in.as_slice() == a65_in.as_slice(), "yolo preprocess");
    // A bare Dequant output stage has no EV74 entry: refused with 0x501 naming its plugin,
    // nothing written, no fallback.
    let mut v: Value = serde_json::from_str(&text("classifier.mpk.json")).unwrap();
    let plugins = v["plugins"].as_array_mut().unwrap();
    plugins.retain(|p| p["name"] != "detessdequant_0");
    let dq = plugins
        .iter_mut()
        .find(|p| p["name"] == "dequant_0")
        .unwrap();
    dq["input_nodes"] = serde_json::json!([{"name": "ofm"}]);
    dq["params"]["in_dtype"] = serde_json::json!("int8");
    dq["params"]["output_shape"] = serde_json::json!([2, 1, 1, 10]);
    let dequant = Model::from_mpk_json(&v.to_string()).unwrap();
    let e = dequant.check_backend(b).unwrap_err();
    assert_eq!(e.code(), 0x501, "{e}");
    assert_eq!(e.plugin.as_deref(), Some("dequant_0"));
    let mut out = vec![0xabu8; 80];
    let e = dequant
        .read_outputs_on(&[0u8; 20], &mut [out.as_mut_slice()], b)
        .unwrap_err();
    assert_eq!(e.code(), 0x501, "{e}");
    assert!(out.iter().all(|&v| v == 0xab));
    let ofm = aligned(&bytes(&mut rng, 2_150_400));
    let ev = m.postprocess_on(ofm.as_slice(), b).unwrap();
    let a = m.postprocess(ofm.as_slice(), 1).unwrap();
    for (e, a) in ev.iter().zip(&a) {
        assert!(
            e.data.as_slice() == a.data.as_slice(),
            "yolo head {}",
            a.name
        );
    }
}

/// Extreme numbers in a manifest are refused with their rule, never an overflow: padding
/// and unpack shapes near 2^64, a tensor of rank 300 with a slice.
#[test]
fn extreme_numbers_are_refused_not_overflowed() {
    let yolo: Value = serde_json::from_str(&text("yolo.mpk.json")).unwrap();
    let big = u64::MAX / 2;
    let mut cases: Vec<(Value, u32)> = Vec::new();
    let mut v = yolo.clone();
    v["plugins"][1]["params"]["padding"] = serde_json::json!([big, big, 0, 0]);
    cases.push((v, 0x70b));
    let mut v = yolo.clone();
    v["plugins"][2]["params"]["input_shapes"] = serde_json::json!([[big, big]]);
    cases.push((v, 0x709));
    let mut v = yolo.clone();
    v["plugins"][3]["params"]["output_shapes"] = serde_json::json!([vec![1u64; 300]]);
    cases.push((v, 0x70b));
    for (v, code) in cases {
        let e = Model::from_mpk_json(&v.to_string()).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
    }
}

/// Scales that are no binary32 multiplier (0, negative, beyond binary32's range) are
/// refused as bad values of their key, in the plugin that holds it.
#[test]
fn scales_are_finite_binary32_multipliers() {
    let classifier: Value = serde_json::from_str(&text("classifier.mpk.json")).unwrap();
    for bad in [0.0, -1.0, 1e39, 1e-50] {
        let mut v = classifier.clone();
        v["plugins"][4]["params"]["dq_scale"] = serde_json::json!(bad);
        let e = Model::from_mpk_json(&v.to_string()).unwrap_err();
        assert_eq!(e.code(), 0x703, "dq_scale {bad}: {e}");
        assert_eq!(e.plugin.as_deref(), Some("dequant_0"), "{e}");
        assert_eq!(e.key.as_deref(), Some("dq_scale"), "{e}");
        let mut v = classifier.clone();
        v["plugins"][0]["params"]["channel_params"] = serde_json::json!([[bad, 3]]);
        let e = Model::from_mpk_json(&v.to_string()).unwrap_err();
        assert_eq!(e.code(), 0x703, "channel_params {bad}: {e}");
        assert_eq!(e.plugin.as_deref(), Some("quant_0"), "{e}");
    }
}

/// `from_mpk` reads at most 16 MiB whatever the file (a device has no length to check
/// first), and bytes that are not UTF-8 are the JSON error, as in `from_mpk_json`.
#[test]
fn from_mpk_bounds_what_it_reads() {
    let e = Model::from_mpk("/dev/zero").unwrap_err();
    assert_eq!(e.code(), 0x700, "{e}");
    assert!(e.to_string().contains("more than"), "{e}");
    let path = std::env::temp_dir().join(format!("simak-not-utf8-{}.json", std::process::id()));
    std::fs::write(&path, b"{\"name\": \"\xff\"}").unwrap();
    let e = Model::from_mpk(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(e.code(), 0x701, "{e}");
    let with_bom = format!("\u{feff}{}", text("classifier.mpk.json"));
    same_model(
        &Model::from_mpk_json(&with_bom).unwrap(),
        &model("classifier"),
        "a byte-order mark",
    );
    let e = Model::from_mpk("").unwrap_err();
    assert_eq!(e.code(), 0x700, "{e}");
    assert!(
        e.to_string().contains("\"\""),
        "the empty path is quoted: {e}"
    );
}

/// `with_exact_paths` gives the same IFM bytes; an input index past the inputs and a count
/// of output buffers other than the outputs' say what they are.
#[test]
fn exact_paths_and_call_errors() {
    let m = model("classifier");
    let mut rng = Rng::new(33);
    let x = f32s(&mut rng, 2 * 8 * 8 * 3);
    let fast = m.preprocess(0, &x, 1).unwrap();
    let m = m.with_exact_paths();
    assert_eq!(m.preprocess(0, &x, 2).unwrap().as_slice(), fast.as_slice());
    let e = m.preprocess(1, &x, 1).unwrap_err();
    assert_eq!(e.code(), 0x70e);
    assert_eq!(
        e.to_string(),
        "input index 1 is past the model's inputs (it has 1)"
    );
    let ofm = aligned(&bytes(&mut rng, 20));
    let e = m.read_outputs(ofm.as_slice(), &mut [], 1).unwrap_err();
    assert_eq!(e.code(), 0x710);
    assert_eq!(
        e.to_string(),
        "0 output buffers given, but the model has 1 outputs (one buffer each)"
    );
}
