//! `simak preproc` end to end (SPEC §13).
//!
//! Expectations are built here, independently of the library: the RGB of the YUV frames as
//! OpenCV decoded them (`tests/data/yuv`), the JPEG's RGB as PIL decoded it
//! (`tests/data/jpeg`), the PNG decoded with the `image` crate, then the §13 normalization
//! `n = f32(f32(f32(p) / divisor) − mean_c) / std_c` written in this file, the f64 Quant
//! oracle of `simak-tests`, the SPEC §4 BF16 rule and the nested-loop SPEC §5 placement of
//! the tess tests. Bad inputs: exit 2, one line naming the rule and its code, nothing
//! written.

use crate::common;
use crate::tess::{Layout, tile_oracle};

use std::fs;
use std::path::Path;

use common::*;
use simak::DType;
use simak::ops::quant::Rounding;
use simak_tests::oracle;

/// SPEC §13's normalization of one 8-bit value, each step rounded once to binary32.
fn norm(p: u8, divisor: f32, mean: f32, std: f32) -> f32 {
    (f32::from(p) / divisor - mean) / std
}

/// SPEC §4: FP32 → BF16 on the bits.
fn bf16_of_f32(bits: u32) -> u16 {
    (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// The raw `[N, H', W', C]` output values of frames given as output-channel-order pixels
/// `rgb` (`[N, H, W, C]` row-major), with a border of `pad` (per channel).
fn bordered(
    rgb: &[u8],
    [n, h, w, c]: [usize; 4],
    [top, bottom, left, right]: [usize; 4],
    pad: &[u8],
) -> Vec<u8> {
    let (oh, ow) = (top + h + bottom, left + w + right);
    let mut out = Vec::with_capacity(n * oh * ow * c);
    for f in 0..n {
        for y in 0..oh {
            for x in 0..ow {
                for ch in 0..c {
                    let inside = y >= top && y < top + h && x >= left && x < left + w;
                    out.push(if inside {
                        rgb[((f * h + y - top) * w + x - left) * c + ch]
                    } else {
                        pad[ch.min(pad.len() - 1)]
                    });
                }
            }
        }
    }
    out
}

/// Normalizes raw output-order values (channel `k % c`).
fn normalized(raw: &[u8], c: usize, divisor: f32, mean: &[f32], std: &[f32]) -> Vec<f32> {
    let pick = |v: &[f32], ch: usize| v[ch.min(v.len() - 1)];
    raw.iter()
        .enumerate()
        .map(|(k, &p)| norm(p, divisor, pick(mean, k % c), pick(std, k % c)))
        .collect()
}

fn run_ok(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["preproc"];
    a.extend_from_slice(args);
    a.push("--json");
    json_run(&a)
}

fn npy_f32(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let (shape, bytes, descr, fortran) = read_npy(path);
    assert_eq!((descr.as_str(), fortran), ("<f4", false));
    (shape, f32s(&bytes))
}

fn npy_i8(path: &Path) -> (Vec<u64>, Vec<i8>) {
    let (shape, bytes, descr, fortran) = read_npy(path);
    assert_eq!((descr.as_str(), fortran), ("|i1", false));
    (shape, bytes.iter().map(|&b| b as i8).collect())
}

/// NV12 and I420 frames decode to OpenCV's RGB bytes exactly (divisor 1: `n = p`), and with
/// --bgr and per-channel mean/std to the §13 formula on those bytes.
#[test]
fn yuv_frames_match_opencv() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["nv12", "i420"] {
        let rgb = fs::read(data(&format!("yuv/{name}.rgb"))).unwrap();
        let input = data(&format!("yuv/{name}.yuv"));
        let out = dir.path().join(format!("{name}.npy"));
        let s = run_ok(&[
            "--input",
            path_str(&input),
            "--format",
            name,
            "--size",
            "10,16",
            "--divisor",
            "1",
            "--to",
            "f32",
            "--output",
            path_str(&out),
        ]);
        assert_eq!(s["shape"], serde_json::json!([10, 16, 3]));
        let (shape, values) = npy_f32(&out);
        assert_eq!(shape, [10, 16, 3]);
        let expect: Vec<f32> = rgb.iter().map(|&p| f32::from(p)).collect();
        assert_eq!(values, expect, "{name}");

        let (mean, std) = ([0.406f32, 0.456, 0.485], [0.225f32, 0.224, 0.229]);
        let bgr: Vec<u8> = rgb
            .chunks_exact(3)
            .flat_map(|p| [p[2], p[1], p[0]])
            .collect();
        let out2 = dir.path().join(format!("{name}-bgr.npy"));
        run_ok(&[
            "--input",
            path_str(&input),
            "--format",
            name,
            "--size",
            "10,16",
            "--bgr",
            "--mean",
            "0.406,0.456,0.485",
            "--std",
            "0.225,0.224,0.229",
            "--to",
            "f32",
            "--output",
            path_str(&out2),
        ]);
        let (_, values) = npy_f32(&out2);
        let expect = normalized(&bgr, 3, 255.0, &mean, &std);
        let same = values
            .iter()
            .zip(&expect)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name} --bgr");
    }
}

/// Two NV12 frames back to back in one raw file are a batch `[2, H, W, 3]`.
#[test]
fn raw_file_of_two_frames_is_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let one = fs::read(data("yuv/nv12.yuv")).unwrap();
    let rgb = fs::read(data("yuv/nv12.rgb")).unwrap();
    let input = dir.path().join("two.nv12");
    fs::write(&input, [one.clone(), one].concat()).unwrap();
    let out = dir.path().join("two.npy");
    let s = run_ok(&[
        "--input",
        path_str(&input),
        "--format",
        "nv12",
        "--size",
        "10,16",
        "--divisor",
        "1",
        "--to",
        "f32",
        "--output",
        path_str(&out),
    ]);
    assert_eq!(s["batch"], 2);
    let (shape, values) = npy_f32(&out);
    assert_eq!(shape, [2, 10, 16, 3]);
    let expect: Vec<f32> = [rgb.clone(), rgb]
        .concat()
        .iter()
        .map(|&p| f32::from(p))
        .collect();
    assert_eq!(values, expect);
}

/// A uint8 BGRX batch in `.npy` to strided INT8 with a border, every rounding mode: each
/// byte equals the f64 Quant oracle on the §13 tensor built here.
#[test]
fn npy_batch_to_i8_with_border() {
    let dir = tempfile::tempdir().unwrap();
    let (n, h, w) = (2usize, 5usize, 7usize);
    let frames: Vec<u8> = (0..n * h * w * 4)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect();
    let input = dir.path().join("frames.npy");
    write_npy(
        &input,
        "|u1",
        &[n as u64, h as u64, w as u64, 4],
        npyz::Order::C,
        &frames,
    );
    // Output channel order R, G, B from B, G, R, X pixels.
    let rgb: Vec<u8> = frames
        .chunks_exact(4)
        .flat_map(|p| [p[2], p[1], p[0]])
        .collect();
    let border = [1usize, 2, 3, 0];
    let pad = [114u8, 0, 255];
    let raw = bordered(&rgb, [n, h, w, 3], border, &pad);
    let (mean, std) = ([0.5f32, 0.25, -0.125], [0.3f32, 0.7, 1.5]);
    let values = normalized(&raw, 3, 255.0, &mean, &std);
    let m_bits = 50.0f32.to_bits();
    for (mode, rounding) in [
        ("nearest-even", Rounding::NearestEven),
        ("toward-zero", Rounding::TowardZero),
        ("toward-positive", Rounding::TowardPositive),
        ("toward-negative", Rounding::TowardNegative),
    ] {
        let out = dir.path().join(format!("{mode}.npy"));
        run_ok(&[
            "--input",
            path_str(&input),
            "--format",
            "bgrx",
            "--mean",
            "0.5,0.25,-0.125",
            "--std",
            "0.3,0.7,1.5",
            "--border",
            "1,2,3,0",
            "--pad-value",
            "114,0,255",
            "--to",
            "i8",
            "--multiplier",
            "50",
            "--zero-point",
            "-3",
            "--rounding",
            mode,
            "--output",
            path_str(&out),
        ]);
        let (shape, q) = npy_i8(&out);
        assert_eq!(shape, [2, 8, 10, 3]);
        let expect: Vec<i8> = values
            .iter()
            .map(|v| oracle::quant(DType::F32, v.to_bits(), m_bits, -3, rounding))
            .collect();
        assert_eq!(q, expect, "{mode}");
    }
}

/// chelsea.png with per-channel mean/std to CastTess and QuantTess (`[300, 451, 3]`, tiles
/// 1,16,64,3): every byte of the buffers, padding included; `simak untile` reads them back.
#[test]
fn png_to_tiled_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let img = image::open(data("chelsea.png")).unwrap().to_rgb8();
    let (w, h) = img.dimensions();
    let shape = [u64::from(h), u64::from(w), 3];
    let (mean, std) = ([0.485f32, 0.456, 0.406], [0.229f32, 0.224, 0.225]);
    let values = normalized(img.as_raw(), 3, 255.0, &mean, &std);
    let layout = Layout {
        axes: [-1, 0, 1, 2],
        tile: [1, 16, 64, 3],
        pad16: false,
    };
    let png = data("chelsea.png");
    let common = [
        "--input",
        path_str(&png),
        "--format",
        "rgb",
        "--mean",
        "0.485,0.456,0.406",
        "--std",
        "0.229,0.224,0.225",
        "--tile",
        "1,16,64,3",
    ];
    let cast = dir.path().join("cast.bin");
    let mut args = common.to_vec();
    args.extend(["--to", "casttess", "--output", path_str(&cast)]);
    let s = run_ok(&args);
    assert_eq!(s["sidecar"]["op"], "casttess");
    assert_eq!(s["sidecar"]["input_dtype"], "f32");
    let expect = tile_oracle(&shape, &layout, 2, |i| {
        bf16_of_f32(values[i].to_bits()).to_le_bytes()
    });
    assert!(fs::read(&cast).unwrap() == expect, "casttess bytes");
    // Three threads (pieces of whole tiles): the same bytes.
    let cast3 = dir.path().join("cast3.bin");
    let mut args = common.to_vec();
    args.extend([
        "--to",
        "casttess",
        "--threads",
        "3",
        "--output",
        path_str(&cast3),
    ]);
    let s3 = run_ok(&args);
    assert_eq!(s3["threads"], 3);
    assert!(
        fs::read(&cast3).unwrap() == expect,
        "casttess bytes, 3 threads"
    );
    // The simulated EV74 (its Preproc entry, 3 workers): the same bytes.
    let cast_ev74 = dir.path().join("cast_ev74.bin");
    let mut args = common.to_vec();
    args.extend([
        "--to",
        "casttess",
        "--backend",
        "ev74-sim",
        "--workers",
        "3",
        "--output",
        path_str(&cast_ev74),
    ]);
    let s = run_ok(&args);
    assert_eq!(s["backend"], "ev74-sim");
    assert_eq!(s["ev74"]["workers"], 3);
    assert!(s["ev74"]["dma_commands"].as_u64().unwrap() > 0);
    assert!(
        fs::read(&cast_ev74).unwrap() == expect,
        "casttess bytes, ev74-sim"
    );

    let quant = dir.path().join("quant.bin");
    let mut args = common.to_vec();
    args.extend([
        "--to",
        "quanttess",
        "--multiplier",
        "40",
        "--zero-point",
        "5",
        "--output",
        path_str(&quant),
    ]);
    run_ok(&args);
    let m = 40.0f32.to_bits();
    let expect = tile_oracle(&shape, &layout, 1, |i| {
        let q = oracle::quant(DType::F32, values[i].to_bits(), m, 5, Rounding::NearestEven);
        [q as u8, 0]
    });
    assert!(fs::read(&quant).unwrap() == expect, "quanttess bytes");
    let quant_ev74 = dir.path().join("quant_ev74.bin");
    let mut args = common.to_vec();
    args.extend([
        "--to",
        "quanttess",
        "--multiplier",
        "40",
        "--zero-point",
        "5",
        "--backend",
        "ev74-sim",
        "--output",
        path_str(&quant_ev74),
    ]);
    run_ok(&args);
    assert!(
        fs::read(&quant_ev74).unwrap() == expect,
        "quanttess bytes, ev74-sim"
    );

    // The sidecars are those `simak untile` reads.
    let back = dir.path().join("quant.npy");
    json_run(&[
        "untile",
        path_str(&quant),
        "--output",
        path_str(&back),
        "--json",
    ]);
    let (shape_back, q) = npy_i8(&back);
    assert_eq!(shape_back, shape);
    let expect: Vec<i8> = values
        .iter()
        .map(|v| oracle::quant(DType::F32, v.to_bits(), m, 5, Rounding::NearestEven))
        .collect();
    assert_eq!(q, expect);
}

/// A JPEG decodes to PIL's RGB bytes (`tests/data/jpeg`), then `n = p / 255`.
#[test]
fn jpeg_matches_pil() {
    let dir = tempfile::tempdir().unwrap();
    let (shape, rgb, descr, _) = read_npy(&data("jpeg/chelsea-420.rgb.npy"));
    assert_eq!(descr, "|u1");
    let out = dir.path().join("jpeg.npy");
    let jpg = data("jpeg/chelsea-420.jpg");
    run_ok(&[
        "--input",
        path_str(&jpg),
        "--format",
        "rgb",
        "--to",
        "f32",
        "--output",
        path_str(&out),
    ]);
    let (s, values) = npy_f32(&out);
    assert_eq!(s, shape);
    let expect = normalized(&rgb, 3, 255.0, &[0.0], &[1.0]);
    assert_eq!(values, expect);
}

/// A GRAY8 `.npy` `(H, W)` to QuantTess with pad16 channels and one mean/std.
#[test]
fn gray_npy_to_quanttess_pad16() {
    let dir = tempfile::tempdir().unwrap();
    let (h, w) = (9usize, 13usize);
    let frame: Vec<u8> = (0..h * w).map(|i| (i * 37 % 256) as u8).collect();
    let input = dir.path().join("gray.npy");
    write_npy(&input, "|u1", &[h as u64, w as u64], npyz::Order::C, &frame);
    let out = dir.path().join("gray.bin");
    run_ok(&[
        "--input",
        path_str(&input),
        "--format",
        "gray",
        "--divisor",
        "1",
        "--mean",
        "128",
        "--std",
        "64",
        "--border",
        "0,0,2,2",
        "--pad-value",
        "7",
        "--to",
        "quanttess",
        "--multiplier",
        "0x42fe0000",
        "--rounding",
        "toward-negative",
        "--tile",
        "1,4,8,1",
        "--channels",
        "pad16",
        "--output",
        path_str(&out),
    ]);
    let raw = bordered(&frame, [1, h, w, 1], [0, 0, 2, 2], &[7]);
    let values = normalized(&raw, 1, 1.0, &[128.0], &[64.0]);
    let layout = Layout {
        axes: [-1, 0, 1, 2],
        tile: [1, 4, 8, 1],
        pad16: true,
    };
    let m = 127.0f32.to_bits();
    let expect = tile_oracle(&[h as u64, w as u64 + 4, 1], &layout, 1, |i| {
        let q = oracle::quant(
            DType::F32,
            values[i].to_bits(),
            m,
            0,
            Rounding::TowardNegative,
        );
        [q as u8, 0]
    });
    assert!(fs::read(&out).unwrap() == expect);

    // Three axes: (N, H, W) is a batch of gray frames unless the last extent is 1 (then
    // (H, W, 1), one frame), as in Python: n = p / 255 per pixel either way.
    for (shape, want) in [
        ([2u64, 3, 5], vec![2u64, 3, 5, 1]),
        ([2, 3, 1], vec![2, 3, 1]),
    ] {
        let n: u64 = shape.iter().product();
        let pixels: Vec<u8> = (0..n).map(|i| (i * 29 % 256) as u8).collect();
        let input = dir.path().join("gray3.npy");
        write_npy(&input, "|u1", &shape, npyz::Order::C, &pixels);
        let out = dir.path().join("gray3.npy.out.npy");
        run_ok(&[
            "--input",
            path_str(&input),
            "--format",
            "gray",
            "--to",
            "f32",
            "--output",
            path_str(&out),
        ]);
        let (got_shape, got) = npy_f32(&out);
        assert_eq!(got_shape, want);
        let expect: Vec<f32> = pixels.iter().map(|&p| norm(p, 255.0, 0.0, 1.0)).collect();
        assert_eq!(got, expect, "{shape:?}");
        fs::remove_file(&out).unwrap();
    }
}

/// Bad inputs: exit 2, one line with the rule (and the library code where it has one),
/// nothing written.
#[test]
fn bad_inputs_name_their_code_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let yuv = data("yuv/nv12.yuv");
    let png = data("chelsea.png");
    let out = d.join("out.npy");
    let bin = d.join("out.bin");
    let f32_npy = d.join("float.npy");
    write_npy(&f32_npy, "<f4", &[2, 2, 3], npyz::Order::C, &[0u8; 48]);
    let odd_npy = d.join("odd.npy");
    write_npy(&odd_npy, "|u1", &[4, 6], npyz::Order::C, &[0u8; 24]);
    let odd_w_npy = d.join("oddw.npy");
    write_npy(&odd_w_npy, "|u1", &[6, 5], npyz::Order::C, &[0u8; 30]);
    let y = path_str(&yuv);
    let p = path_str(&png);
    let o = path_str(&out);
    let b = path_str(&bin);
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // Odd NV12 height: the library's rule, before the file is read.
        (
            vec![
                "--input", y, "--format", "nv12", "--size", "9,16", "--to", "f32", "--output", o,
            ],
            vec!["even size", "code 0x240"],
        ),
        // A (H * 3 / 2, W) array of 4 rows: not H * 3 / 2.
        (
            vec![
                "--input",
                path_str(&odd_npy),
                "--format",
                "i420",
                "--to",
                "f32",
                "--output",
                o,
            ],
            vec!["not H * 3 / 2"],
        ),
        // (6, 5): H = 4, but an odd width.
        (
            vec![
                "--input",
                path_str(&odd_w_npy),
                "--format",
                "nv12",
                "--to",
                "f32",
                "--output",
                o,
            ],
            vec!["even size", "code 0x240"],
        ),
        (
            vec![
                "--input", p, "--format", "rgb", "--std", "1,0,1", "--to", "f32", "--output", o,
            ],
            vec!["std 1 is zero", "code 0x246"],
        ),
        (
            vec![
                "--input", p, "--format", "rgb", "--mean", "NaN", "--to", "f32", "--output", o,
            ],
            vec!["mean", "code 0x244"],
        ),
        (
            vec![
                "--input",
                p,
                "--format",
                "rgb",
                "--divisor",
                "0",
                "--to",
                "f32",
                "--output",
                o,
            ],
            vec!["divisor", "code 0x245"],
        ),
        (
            vec![
                "--input", p, "--format", "rgb", "--mean", "1,2", "--to", "f32", "--output", o,
            ],
            vec!["2 mean values", "code 0x247"],
        ),
        (
            vec![
                "--input", y, "--format", "nv12", "--size", "10,16", "--to", "i8", "--output", o,
            ],
            vec!["--to i8 needs --multiplier"],
        ),
        (
            vec![
                "--input",
                y,
                "--format",
                "nv12",
                "--size",
                "10,16",
                "--to",
                "i8",
                "--multiplier",
                "0",
                "--output",
                o,
            ],
            vec!["--multiplier", "code 14"],
        ),
        (
            vec![
                "--input", y, "--format", "nv12", "--size", "10,10", "--to", "f32", "--output", o,
            ],
            vec!["holds 240 bytes", "150 bytes each"],
        ),
        (
            vec![
                "--input", y, "--format", "nv12", "--to", "f32", "--output", o,
            ],
            vec!["needs --size"],
        ),
        (
            vec![
                "--input",
                path_str(&f32_npy),
                "--format",
                "rgb",
                "--to",
                "f32",
                "--output",
                o,
            ],
            vec!["uint8"],
        ),
        (
            vec![
                "--input", p, "--format", "gray", "--to", "f32", "--output", o,
            ],
            vec!["grayscale photo"],
        ),
        (
            vec![
                "--input", p, "--format", "nv12", "--to", "f32", "--output", o,
            ],
            vec!["--format nv12"],
        ),
        (
            vec![
                "--input",
                p,
                "--format",
                "rgb",
                "--to",
                "quanttess",
                "--multiplier",
                "1",
                "--output",
                b,
            ],
            vec!["needs --tile"],
        ),
        (
            vec![
                "--input",
                p,
                "--format",
                "rgb",
                "--to",
                "f32",
                "--tile",
                "1,16,64,3",
                "--output",
                o,
            ],
            vec!["--tile"],
        ),
        (
            vec![
                "--input",
                p,
                "--format",
                "rgb",
                "--to",
                "casttess",
                "--tile",
                "1,16,64,4",
                "--output",
                b,
            ],
            vec!["--tile", "code 47"],
        ),
        (
            vec![
                "--input", p, "--format", "rgb", "--to", "f32", "--output", b,
            ],
            vec!["--output"],
        ),
    ];
    for (args, mentions) in cases {
        let mut a = vec!["preproc"];
        a.extend(args);
        expect_bad(&a, d, &mentions);
    }
}
