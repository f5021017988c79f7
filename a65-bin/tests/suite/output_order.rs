//! `simak quant --output-order AXES`: the output file holds `numpy.transpose(x, AXES)` in C
//! order, computed here independently (f64 oracle per element, placed by the test's own
//! index arithmetic), byte-identical on `--backend a65` and `--backend ev74-sim`; bad AXES
//! and a selected tensor of another rank are bad input (exit 2, nothing written).

use crate::common;

use std::fs;
use std::path::Path;

use common::*;
use npyz::Order;
use safetensors::SafeTensors;
use simak::DType;
use simak::ops::quant::Rounding;
use simak_tests::axes::permutations;
use simak_tests::oracle;
use simak_tests::rng::Rng;

const MULTIPLIER: &str = "0x41200000"; // 10.0
const ZERO_POINT: i32 = -3;

/// The INT8 bytes of `numpy.transpose(q(x), axes)` in C order, where `x` (FP32 `bits`) is
/// stored in `order` with logical `shape`.
fn expected(bits: &[u32], shape: &[u64], order: Order, axes: &[usize]) -> Vec<u8> {
    let n = shape.len();
    let storage: Vec<usize> = match order {
        Order::C => (0..n).collect(),
        Order::Fortran => (0..n).rev().collect(),
    };
    let out_shape: Vec<u64> = axes.iter().map(|&a| shape[a]).collect();
    let total: u64 = shape.iter().product();
    let mut out = vec![0u8; total as usize];
    // Walk the output in C order: output index j (over out_shape) is input index i with
    // i[axes[k]] = j[k].
    for flat in 0..total {
        let mut rest = flat;
        let mut j = vec![0u64; n];
        for k in (0..n).rev() {
            j[k] = rest % out_shape[k];
            rest /= out_shape[k];
        }
        let mut i = vec![0u64; n];
        for k in 0..n {
            i[axes[k]] = j[k];
        }
        let at = storage.iter().fold(0u64, |acc, &a| acc * shape[a] + i[a]) as usize;
        out[flat as usize] = oracle::quant(
            DType::F32,
            bits[at],
            0x4120_0000,
            ZERO_POINT,
            Rounding::NearestEven,
        ) as u8;
    }
    out
}

fn axes_text(axes: &[usize]) -> String {
    axes.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs `simak quant` on `input` with `--output-order axes` on `backend`; returns the output
/// path and the JSON summary.
fn quant(
    dir: &Path,
    input: &Path,
    axes: &str,
    backend: &str,
    extra: &[&str],
) -> (std::path::PathBuf, serde_json::Value) {
    let ext = input.extension().unwrap().to_str().unwrap();
    let out = dir.join(format!("{}-{backend}.{ext}", axes.replace(',', "")));
    let zp = ZERO_POINT.to_string();
    let mut args = vec![
        "quant",
        "--input",
        path_str(input),
        "--output",
        path_str(&out),
        "--multiplier",
        MULTIPLIER,
        "--zero-point",
        &zp,
        "--output-order",
        axes,
        "--backend",
        backend,
        "--json",
    ];
    args.extend_from_slice(extra);
    let summary = json_run(&args);
    (out, summary)
}

#[test]
fn npy_outputs_hold_numpy_transpose_for_every_permutation_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(0x0de7_0001);
    for (shape, order) in [
        (vec![2u64, 3, 5, 7], Order::C),
        (vec![3, 17, 4, 2], Order::Fortran),
        (vec![19, 21], Order::C),
        (vec![4, 9, 33], Order::Fortran),
    ] {
        let total: u64 = shape.iter().product();
        // Values of a few units around the multiplier 10 (both signs, some saturating),
        // with NaN, infinities and subnormals.
        let bits: Vec<u32> = (0..total)
            .map(|k| match k % 23 {
                0 => 0x7fc0_0000,
                1 => 0xff80_0000,
                2 => 0x0000_0005,
                _ => ((rng.next_u32() % 4000) as f32 / 100.0 - 20.0).to_bits(),
            })
            .collect();
        let input = dir.path().join(format!("x{}.npy", shape.len()));
        let data: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        write_npy(&input, "<f4", &shape, order, &data);
        for axes in permutations(shape.len()) {
            let text = axes_text(&axes);
            let want = expected(&bits, &shape, order, &axes);
            let (a65, _) = quant(dir.path(), &input, &text, "a65", &[]);
            let (ev74, summary) = quant(dir.path(), &input, &text, "ev74-sim", &[]);
            assert_eq!(summary["output_order"], serde_json::json!(axes));
            let row = &summary["tensors"][0];
            assert!(row["simulated_cycles"].as_u64().unwrap() > 0);
            assert!(row["dma_commands"].is_u64());
            // The firmware path: transpose panels whenever the input's contiguous axis is
            // not the output's.
            let input_fast = match order {
                Order::C => shape.len() - 1,
                Order::Fortran => 0,
            };
            let moved = axes[shape.len() - 1] != input_fast;
            let path = row["ev74_path"].as_str().unwrap();
            assert_eq!(
                path.contains("transpose"),
                moved,
                "{shape:?} {order:?} {text}: {path}"
            );
            let (out_shape, bytes, descr, fortran) = read_npy(&a65);
            assert_eq!(descr, "|i1");
            assert!(!fortran, "C order");
            assert_eq!(
                out_shape,
                axes.iter().map(|&a| shape[a]).collect::<Vec<_>>()
            );
            assert!(bytes == want, "{shape:?} {order:?} axes {text}");
            assert!(
                fs::read(&a65).unwrap() == fs::read(&ev74).unwrap(),
                "backends differ: {text}"
            );
        }
    }
}

#[test]
fn safetensors_outputs_are_transposed_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let input = data(MINILM_F32);
    let name = "encoder.layer.0.attention.self.key.weight[:64]";
    let bytes = fs::read(&input).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let view = st.tensor(name).unwrap();
    let shape: Vec<u64> = view.shape().iter().map(|&e| e as u64).collect();
    let bits = u32s(view.data());
    let want = expected(&bits, &shape, Order::C, &[1, 0]);
    let mut files = Vec::new();
    for backend in ["a65", "ev74-sim"] {
        let (out, summary) = quant(dir.path(), &input, "1,0", backend, &["--tensor", name]);
        assert_eq!(summary["output_order"], serde_json::json!([1, 0]));
        let written = fs::read(&out).unwrap();
        let got = SafeTensors::deserialize(&written).unwrap();
        let t = got.tensor(name).unwrap();
        assert_eq!(t.shape(), &[shape[1] as usize, shape[0] as usize]);
        assert!(t.data() == want.as_slice(), "{backend}");
        let meta = SafeTensors::read_metadata(&written)
            .unwrap()
            .1
            .metadata()
            .clone()
            .unwrap();
        assert_eq!(meta[&format!("simak.{name}.output_order")], "1,0");
        files.push(written);
    }
    assert!(files[0] == files[1], "backends differ");
}

#[test]
fn bad_axes_and_a_selected_tensor_of_another_rank_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("x.npy");
    write_npy(&input, "<f4", &[1, 3, 4, 5], Order::C, &[0u8; 240]);
    let out = d.join("y.npy");
    for (axes, mention) in [
        ("0,2,2,1", "appears twice"),
        ("0,1,x,2", "not an axis number"),
        ("0,1,2,4", "out of range"),
        (
            "0,2,1",
            "rank 4 does not match --output-order 0,2,1 (3 axes)",
        ),
    ] {
        expect_bad(
            &[
                "quant",
                "--input",
                path_str(&input),
                "--output",
                path_str(&out),
                "--multiplier",
                "1",
                "--output-order",
                axes,
            ],
            d,
            &["x.npy", mention],
        );
    }
    // Every float tensor of the MiniLM subset is selected; the first of rank 1 (in the
    // file's order) is named.
    let st = data(MINILM_F32);
    expect_bad(
        &[
            "quant",
            "--input",
            path_str(&st),
            "--output",
            path_str(&d.join("y.safetensors")),
            "--multiplier",
            "1",
            "--output-order",
            "1,0",
            "--backend",
            "ev74-sim",
        ],
        d,
        &[
            "embeddings.LayerNorm.bias",
            "rank 1 does not match --output-order 1,0",
        ],
    );
}

/// An empty tensor of any rank takes any order: the output is the empty INT8 array of the
/// permuted shape, on both backends (it was refused: a zero stride on an axis of extent 2).
#[test]
fn empty_tensors_take_any_order() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, order) in [
        (vec![2u64, 0, 3], Order::C),
        (vec![0u64, 4], Order::Fortran),
        (vec![3u64, 2, 0, 5], Order::C),
    ] {
        let input = dir.path().join(format!("e{}.npy", shape.len()));
        write_npy(&input, "<f4", &shape, order, &[]);
        for axes in permutations(shape.len()) {
            let text = axes_text(&axes);
            let (a65, _) = quant(dir.path(), &input, &text, "a65", &[]);
            let (ev74, _) = quant(dir.path(), &input, &text, "ev74-sim", &[]);
            let (out_shape, bytes, descr, fortran) = read_npy(&a65);
            assert_eq!(descr, "|i1");
            assert!(!fortran);
            assert_eq!(
                out_shape,
                axes.iter().map(|&a| shape[a]).collect::<Vec<_>>(),
                "{shape:?} {text}"
            );
            assert!(bytes.is_empty());
            assert_eq!(fs::read(&a65).unwrap(), fs::read(&ev74).unwrap());
        }
    }
}
