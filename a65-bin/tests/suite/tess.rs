//! `simak casttess`, `quanttess`, `untile`, `dequant` and `layout` end to end.
//!
//! Expectations are computed here, independently of the library: the SPEC §4 FP32 → BF16
//! integer formula, the f64 Quant oracle of `simak-tests`, images decoded with the `image`
//! crate and normalized with the SPEC formula, and a plain nested-loop placement of SPEC §5
//! ([`tile_oracle`]), compared with every byte of the physical buffers (padding included).

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use safetensors::SafeTensors;
use serde_json::Value;
use simak::DType;
use simak::ops::quant::Rounding;
use simak_tests::oracle;

/// SPEC §4: FP32 → BF16 on the bits.
fn bf16_of_f32(bits: u32) -> u16 {
    (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// An `MlaTiled` layout as the tests write it: axes (-1 absent), tile, channel mode.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub(crate) axes: [i64; 4],
    pub(crate) tile: [u64; 4],
    pub(crate) pad16: bool,
}

impl Layout {
    fn axes_arg(&self) -> String {
        self.axes.map(|a| a.to_string()).join(",")
    }
    fn tile_arg(&self) -> String {
        self.tile.map(|t| t.to_string()).join(",")
    }
    fn channels_arg(&self) -> &'static str {
        if self.pad16 { "pad16" } else { "compact" }
    }
}

/// SPEC §5 by plain nested loops: outer indices (row-major over the unnamed axes), then
/// C, D, H, W tiles (W fastest); inside a tile, pixels d, h, w; per pixel `sc` channels as
/// `planes` byte planes; every tile zero-padded to a multiple of 16 bytes. `value(i)` gives
/// the byte planes of the element with row-major linear index `i`.
pub(crate) fn tile_oracle(
    shape: &[u64],
    l: &Layout,
    planes: usize,
    value: impl Fn(usize) -> [u8; 2],
) -> Vec<u8> {
    let rank = shape.len();
    let mut lstride = vec![1u64; rank];
    for a in (0..rank.saturating_sub(1)).rev() {
        lstride[a] = lstride[a + 1] * shape[a + 1];
    }
    let role_ext: Vec<u64> = l
        .axes
        .iter()
        .map(|&a| if a < 0 { 1 } else { shape[a as usize] })
        .collect();
    let outer: Vec<usize> = (0..rank)
        .filter(|&a| !l.axes.contains(&(a as i64)))
        .collect();
    let outer_count: u64 = outer.iter().map(|&a| shape[a]).product();
    let counts: Vec<u64> = (0..4).map(|r| role_ext[r].div_ceil(l.tile[r])).collect();
    let ext = |r: usize, i: u64| l.tile[r].min(role_ext[r] - i * l.tile[r]);
    let mut out = Vec::new();
    for o in 0..outer_count {
        let mut rem = o;
        let mut base = 0u64;
        for &a in outer.iter().rev() {
            base += (rem % shape[a]) * lstride[a];
            rem /= shape[a];
        }
        for ic in 0..counts[3] {
            for id in 0..counts[0] {
                for ih in 0..counts[1] {
                    for iw in 0..counts[2] {
                        let (td, th, tw, tc) = (ext(0, id), ext(1, ih), ext(2, iw), ext(3, ic));
                        let sc = if l.pad16 { tc.div_ceil(16) * 16 } else { tc };
                        let size = (td * th * tw * sc * planes as u64).div_ceil(16) * 16;
                        let mut t = vec![0u8; size as usize];
                        for d in 0..td {
                            for h in 0..th {
                                for w in 0..tw {
                                    for c in 0..tc {
                                        let coord = [
                                            id * l.tile[0] + d,
                                            ih * l.tile[1] + h,
                                            iw * l.tile[2] + w,
                                            ic * l.tile[3] + c,
                                        ];
                                        let mut lin = base;
                                        for r in 0..4 {
                                            if l.axes[r] >= 0 {
                                                lin += coord[r] * lstride[l.axes[r] as usize];
                                            }
                                        }
                                        let pixel = (d * th + h) * tw + w;
                                        let v = value(lin as usize);
                                        for (p, &byte) in v.iter().enumerate().take(planes) {
                                            let at = pixel * sc * planes as u64 + p as u64 * sc + c;
                                            t[at as usize] = byte;
                                        }
                                    }
                                }
                            }
                        }
                        out.extend_from_slice(&t);
                    }
                }
            }
        }
    }
    out
}

/// The expected CastTess buffer of FP32 values.
fn cast_expect(shape: &[u64], l: &Layout, values: &[f32]) -> Vec<u8> {
    tile_oracle(shape, l, 2, |i| {
        bf16_of_f32(values[i].to_bits()).to_le_bytes()
    })
}

/// chelsea.png decoded here with the `image` crate, normalized as SPEC'd by the brief.
fn chelsea_png_values(mean: [f32; 3], std: [f32; 3]) -> (Vec<u64>, Vec<f32>) {
    let img = image::open(data("chelsea.png")).unwrap().to_rgb8();
    let (w, h) = img.dimensions();
    let values = img
        .as_raw()
        .iter()
        .enumerate()
        .map(|(k, &p)| (p as f32 / 255.0 - mean[k % 3]) / std[k % 3])
        .collect();
    (vec![u64::from(h), u64::from(w), 3], values)
}

fn chelsea_npy_values() -> (Vec<u64>, Vec<f32>) {
    let (shape, bytes, descr, fortran) = read_npy(&chelsea_npy());
    assert_eq!((descr.as_str(), fortran), ("<f4", false));
    (shape, f32s(&bytes))
}

fn sidecar(out: &Path) -> Value {
    let mut p = out.as_os_str().to_owned();
    p.push(".json");
    serde_json::from_slice(&fs::read(PathBuf::from(p)).unwrap()).unwrap()
}

/// Runs `simak <op> --input … --output … --axes … --tile … --channels … <extra>` and
/// returns the JSON summary.
fn tess(op: &str, input: &Path, out: &Path, l: &Layout, extra: &[&str]) -> Value {
    let axes = l.axes_arg();
    let tile = l.tile_arg();
    let mut args = vec![
        op,
        "--input",
        path_str(input),
        "--output",
        path_str(out),
        "--axes",
        &axes,
        "--tile",
        &tile,
        "--channels",
        l.channels_arg(),
        "--json",
    ];
    args.extend_from_slice(extra);
    json_run(&args)
}

const HWC: Layout = Layout {
    axes: [-1, 0, 1, 2],
    tile: [1, 16, 64, 3],
    pad16: false,
};

/// CRC-32 (IEEE 802.3, reflected polynomial 0xedb88320, as zlib's `crc32`), bit by bit:
/// the independent oracle of the sidecar's `buffer_crc32`.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Checks the sidecar keys of a tiled output against the brief; `buffer` is the tiled
/// buffer written with it.
fn check_sidecar(s: &Value, op: &str, shape: &[u64], input_dtype: &str, l: &Layout, buffer: &[u8]) {
    let len = buffer.len();
    assert_eq!(crc32(b"123456789"), 0xcbf4_3926, "the CRC-32 check value");
    assert_eq!(s["buffer_crc32"], format!("0x{:08x}", crc32(buffer)));
    // The sidecar's own CRC: its other keys, sorted, as compact JSON.
    let mut fields: Vec<(String, Value)> = s
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "sidecar_crc32")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    let compact: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), v))
        .collect();
    let text = format!("{{{}}}", compact.join(","));
    assert_eq!(
        s["sidecar_crc32"],
        format!("0x{:08x}", crc32(text.as_bytes())),
        "{text}"
    );
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expect = vec![
        "op",
        "shape",
        "input_dtype",
        "output_dtype",
        "axes",
        "tile",
        "channels",
        "capacity_bytes",
        "tiles_per_outer",
        "outer_count",
        "buffer_crc32",
        "sidecar_crc32",
    ];
    if op == "quanttess" {
        expect.extend(["multiplier_bits", "zero_point", "rounding"]);
    }
    let mut k = keys.clone();
    k.sort_unstable();
    expect.sort_unstable();
    assert_eq!(k, expect);
    assert_eq!(s["op"], op);
    assert_eq!(s["shape"], serde_json::json!(shape));
    assert_eq!(s["input_dtype"], input_dtype);
    assert_eq!(
        s["output_dtype"],
        if op == "casttess" { "bf16" } else { "i8" }
    );
    assert_eq!(s["axes"], serde_json::json!(l.axes));
    assert_eq!(s["tile"], serde_json::json!(l.tile));
    assert_eq!(s["channels"], l.channels_arg());
    assert_eq!(s["capacity_bytes"], len as u64);
    let counts: u64 = (0..4)
        .map(|r| {
            let e = if l.axes[r] < 0 {
                1
            } else {
                shape[l.axes[r] as usize]
            };
            e.div_ceil(l.tile[r])
        })
        .product();
    assert_eq!(s["tiles_per_outer"], counts);
    let outer: u64 = (0..shape.len())
        .filter(|a| !l.axes.contains(&(*a as i64)))
        .map(|a| shape[a])
        .product();
    assert_eq!(s["outer_count"], outer);
}

#[test]
fn casttess_chelsea_png_matches_the_formula_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let input = data("chelsea.png");
    for (mean, std) in [
        ([0.0f32; 3], [1.0f32; 3]),
        ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ] {
        let (shape, values) = chelsea_png_values(mean, std);
        assert_eq!(shape, [300, 451, 3]);
        let expect = cast_expect(&shape, &HWC, &values);
        let mean_arg = mean.map(|v| v.to_string()).join(",");
        let std_arg = std.map(|v| v.to_string()).join(",");
        let norm = ["--mean", mean_arg.as_str(), "--std", std_arg.as_str()];
        let mut reference: Option<Vec<u8>> = None;
        for backend in [
            &["--backend", "a65"][..],
            &["--backend", "ev74-sim", "--workers", "1"],
            &["--backend", "ev74-sim"],
        ] {
            let out = dir.path().join("png.bin");
            let extra: Vec<&str> = norm.iter().chain(backend.iter()).copied().collect();
            let summary = tess("casttess", &input, &out, &HWC, &extra);
            assert_eq!(summary["format"], "png");
            let got = fs::read(&out).unwrap();
            assert!(got == expect, "{backend:?} {mean:?}: bytes differ");
            check_sidecar(&sidecar(&out), "casttess", &shape, "f32", &HWC, &got);
            match &reference {
                None => reference = Some(got),
                Some(r) => assert!(*r == got, "backends differ"),
            }
        }
    }
}

#[test]
fn casttess_chelsea_npy_matches_the_formula_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let input = chelsea_npy();
    let (shape, values) = chelsea_npy_values();
    // The brief's tile, and PadTo16 with H as an outer axis and a partial W tile.
    let outer = Layout {
        axes: [-1, -1, 1, 2],
        tile: [1, 1, 100, 3],
        pad16: true,
    };
    for l in [HWC, outer] {
        let expect = cast_expect(&shape, &l, &values);
        for backend in [
            &["--backend", "a65"][..],
            &["--backend", "ev74-sim", "--workers", "1"],
            &["--backend", "ev74-sim", "--workers", "4"],
        ] {
            let out = dir.path().join("npy.bin");
            let summary = tess("casttess", &input, &out, &l, backend);
            let got = fs::read(&out).unwrap();
            assert!(got == expect, "{l:?} {backend:?}: bytes differ");
            check_sidecar(&sidecar(&out), "casttess", &shape, "f32", &l, &got);
            if backend[1] == "ev74-sim" {
                let w = backend[3];
                assert!(
                    summary["route"]
                        .as_str()
                        .unwrap()
                        .starts_with(&format!("ev74-sim ({w} worker")),
                    "{summary}"
                );
            }
        }
    }
}

#[test]
fn casttess_fp16_safetensors_tensor_and_16_bit_and_jpeg_images() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // FP16 → BF16 of a real weight matrix (exact value rounded once: f16 → f32 is exact).
    let st_path = data(MINILM_F16);
    let bytes = fs::read(&st_path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let name = "embeddings.position_embeddings.weight[:64]";
    let v = st.tensor(name).unwrap();
    let values: Vec<f32> = v
        .data()
        .chunks_exact(2)
        .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect();
    assert!(values.iter().all(|x| !x.is_nan()));
    let l = Layout {
        axes: [-1, -1, 0, 1],
        tile: [1, 1, 24, 64],
        pad16: false,
    };
    let out = d.join("pos.bin");
    for backend in ["a65", "ev74-sim"] {
        tess(
            "casttess",
            &st_path,
            &out,
            &l,
            &["--tensor", name, "--backend", backend],
        );
        assert!(fs::read(&out).unwrap() == cast_expect(&[64, 384], &l, &values));
        check_sidecar(
            &sidecar(&out),
            "casttess",
            &[64, 384],
            "f16",
            &l,
            &fs::read(&out).unwrap(),
        );
    }

    // A 16-bit RGBA PNG: alpha dropped, samples / 65535.
    let (w, h) = (37u32, 5u32);
    let raw: Vec<u16> = (0..w * h * 4)
        .map(|k| (k.wrapping_mul(2_654_435_761) >> 16) as u16)
        .collect();
    let img = image::ImageBuffer::<image::Rgba<u16>, _>::from_raw(w, h, raw.clone()).unwrap();
    let png16 = d.join("deep.png");
    img.save(&png16).unwrap();
    let values: Vec<f32> = raw
        .chunks_exact(4)
        .flat_map(|px| px[..3].to_vec())
        .map(|p| p as f32 / 65535.0)
        .collect();
    let l = Layout {
        axes: [-1, 0, 1, 2],
        tile: [1, 2, 16, 3],
        pad16: true,
    };
    let out = d.join("deep.bin");
    tess("casttess", &png16, &out, &l, &[]);
    assert!(fs::read(&out).unwrap() == cast_expect(&[5, 37, 3], &l, &values));

    // A JPEG: the pixels PIL decodes from it (tests/data/jpeg), then the formula.
    let jpg = data("jpeg/chelsea-420.jpg");
    let (shape, values) = {
        let (shape, pixels, _, _) = read_npy(&data("jpeg/chelsea-420.rgb.npy"));
        let v: Vec<f32> = pixels.iter().map(|&p| p as f32 / 255.0).collect();
        (shape, v)
    };
    let out = d.join("jpg.bin");
    let summary = tess("casttess", &jpg, &out, &HWC, &[]);
    assert_eq!(summary["format"], "jpeg");
    assert!(fs::read(&out).unwrap() == cast_expect(&shape, &HWC, &values));
}

/// The expected QuantTess buffer of FP32 values.
fn quant_expect(
    shape: &[u64],
    l: &Layout,
    values: &[f32],
    m: u32,
    zp: i32,
    r: Rounding,
) -> Vec<u8> {
    tile_oracle(shape, l, 1, |i| {
        [
            oracle::quant(DType::F32, values[i].to_bits(), m, zp, r) as u8,
            0,
        ]
    })
}

#[test]
fn quanttess_chelsea_matches_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let input = chelsea_npy();
    let (shape, values) = chelsea_npy_values();
    // Fixed multiplier, nonzero zero point, directed rounding; compact and PadTo16 (whose
    // padding is 0x00 whatever the zero point).
    for (l, m_text, m_bits, zp, rounding) in [
        (HWC, "100", 100f32.to_bits(), -7, "toward-positive"),
        (
            Layout { pad16: true, ..HWC },
            "0x43000000",
            0x4300_0000,
            5,
            "nearest-even",
        ),
    ] {
        let out = dir.path().join("q.bin");
        let zp_text = zp.to_string();
        let summary = tess(
            "quanttess",
            &input,
            &out,
            &l,
            &[
                "--multiplier",
                m_text,
                "--zero-point",
                &zp_text,
                "--rounding",
                rounding,
            ],
        );
        let r = Rounding::ALL
            .into_iter()
            .find(|x| x.name() == rounding)
            .unwrap();
        let expect = quant_expect(&shape, &l, &values, m_bits, zp, r);
        let got = fs::read(&out).unwrap();
        assert!(got == expect, "{l:?} {m_text}: bytes differ");
        let s = sidecar(&out);
        check_sidecar(&s, "quanttess", &shape, "f32", &l, &got);
        assert_eq!(s["multiplier_bits"], format!("0x{m_bits:08x}"));
        assert_eq!(s["zero_point"], zp);
        assert_eq!(s["rounding"], rounding);
        let saturated = values
            .iter()
            .filter(|x| oracle::saturates(DType::F32, x.to_bits(), m_bits, zp, r))
            .count();
        assert_eq!(summary["saturated"], saturated as u64);
    }
    // absmax calibration: m = 127 / max|x| in binary32.
    let out = dir.path().join("cal.bin");
    tess("quanttess", &input, &out, &HWC, &["--calibrate", "absmax"]);
    let max = values.iter().fold(0f32, |a, x| a.max(x.abs()));
    let m = (127f32 / max).to_bits();
    assert_eq!(sidecar(&out)["multiplier_bits"], format!("0x{m:08x}"));
    assert!(
        fs::read(&out).unwrap() == quant_expect(&shape, &HWC, &values, m, 0, Rounding::NearestEven)
    );
}

/// `--threads T` runs each piece as T pieces of whole tiles: the bytes equal the
/// independent oracle's and those of `--threads 1`, for CastTess (compact and PadTo16,
/// FP32 from a PNG) and QuantTess; the summary echoes T.
#[test]
fn threads_give_the_bytes_of_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let png = data("chelsea.png");
    let (shape, values) = chelsea_png_values([0.0; 3], [1.0; 3]);
    for l in [HWC, Layout { pad16: true, ..HWC }] {
        let expect = cast_expect(&shape, &l, &values);
        for threads in ["1", "2", "3", "8"] {
            let out = dir.path().join(format!("t{threads}.bin"));
            let summary = tess("casttess", &png, &out, &l, &["--threads", threads]);
            assert_eq!(summary["threads"], threads.parse::<u64>().unwrap());
            let got = fs::read(&out).unwrap();
            assert!(
                got == expect,
                "casttess {l:?} --threads {threads}: bytes differ"
            );
            check_sidecar(&sidecar(&out), "casttess", &shape, "f32", &l, &got);
        }
    }
    let npy = chelsea_npy();
    let (shape, values) = chelsea_npy_values();
    let expect = quant_expect(
        &shape,
        &HWC,
        &values,
        100f32.to_bits(),
        -7,
        Rounding::NearestEven,
    );
    let mut one: Option<Vec<u8>> = None;
    for threads in ["1", "2", "5"] {
        let out = dir.path().join(format!("q{threads}.bin"));
        let extra = [
            "--multiplier",
            "100",
            "--zero-point",
            "-7",
            "--threads",
            threads,
        ];
        tess("quanttess", &npy, &out, &HWC, &extra);
        let got = fs::read(&out).unwrap();
        assert!(got == expect, "quanttess --threads {threads}: bytes differ");
        match &one {
            None => one = Some(got),
            Some(r) => assert!(*r == got, "quanttess --threads {threads} differs from 1"),
        }
    }
}

#[test]
fn untile_round_trips_casttess_and_quanttess() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = chelsea_npy();
    let (shape, values) = chelsea_npy_values();
    let l = Layout {
        axes: [-1, 0, 1, 2],
        tile: [1, 7, 50, 2],
        pad16: true,
    };
    // CastTess → untile (default output path) → float32 equal to the BF16 of each value.
    let out = d.join("cast.bin");
    tess("casttess", &input, &out, &l, &[]);
    let summary = json_run(&["untile", path_str(&out), "--json"]);
    assert_eq!(summary["npy_dtype"], "float32");
    let npy = d.join("cast.npy");
    assert_eq!(summary["output"], path_str(&npy));
    let (s, bytes, descr, fortran) = read_npy(&npy);
    assert_eq!(
        (s.as_slice(), descr.as_str(), fortran),
        (shape.as_slice(), "<f4", false)
    );
    let got = u32s(&bytes);
    assert_eq!(got.len(), values.len());
    for (k, (g, x)) in got.iter().zip(values.iter()).enumerate() {
        assert_eq!(*g, u32::from(bf16_of_f32(x.to_bits())) << 16, "element {k}");
    }
    // QuantTess → untile --output → int8 equal to the oracle.
    let qout = d.join("quant.bin");
    tess(
        "quanttess",
        &input,
        &qout,
        &l,
        &["--multiplier", "200", "--zero-point", "-100"],
    );
    let qnpy = d.join("logical-q.npy");
    let run = simak(&["untile", path_str(&qout), "--output", path_str(&qnpy)]);
    assert_success(&run);
    assert!(stdout_of(&run).contains("int8"), "{}", stdout_of(&run));
    let (s, bytes, descr, _) = read_npy(&qnpy);
    assert_eq!((s.as_slice(), descr.as_str()), (shape.as_slice(), "|i1"));
    for (k, (&q, x)) in bytes.iter().zip(values.iter()).enumerate() {
        let e = oracle::quant(
            DType::F32,
            x.to_bits(),
            200f32.to_bits(),
            -100,
            Rounding::NearestEven,
        );
        assert_eq!(q as i8, e, "element {k}");
    }
    // Dequant of the untiled QuantTess output: (q - zp) / m in binary32.
    let deq = d.join("deq.npy");
    assert_success(&simak(&[
        "dequant",
        path_str(&qnpy),
        "--multiplier",
        "200",
        "--zero-point",
        "-100",
        "--output",
        path_str(&deq),
    ]));
    let (_, dbytes, descr, _) = read_npy(&deq);
    assert_eq!(descr, "<f4");
    for (&q, x) in bytes.iter().zip(f32s(&dbytes)) {
        assert_eq!(x, (i32::from(q as i8) + 100) as f32 / 200f32);
    }
}

#[test]
fn dequant_of_quant_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // .npy: quant, then dequant with the same parameters.
    let q = d.join("q.npy");
    assert_success(&simak(&[
        "quant",
        "--input",
        path_str(&chelsea_npy()),
        "--output",
        path_str(&q),
        "--multiplier",
        "0x42fe0000",
        "--zero-point",
        "-3",
    ]));
    let x = d.join("x.npy");
    let summary = json_run(&[
        "dequant",
        path_str(&q),
        "--multiplier",
        "0x42fe0000",
        "--zero-point",
        "-3",
        "--output",
        path_str(&x),
        "--json",
    ]);
    assert_eq!(summary["tensors"][0]["multiplier_bits"], "0x42fe0000");
    let (qs, qb, _, _) = read_npy(&q);
    let (xs, xb, descr, _) = read_npy(&x);
    assert_eq!((qs, descr.as_str()), (xs, "<f4"));
    for (&q, v) in qb.iter().zip(f32s(&xb)) {
        assert_eq!(v, (i32::from(q as i8) + 3) as f32 / 127f32);
    }

    // .safetensors: parameters from the simak.<t>.* metadata, per tensor (absmax).
    let qs = d.join("q.safetensors");
    assert_success(&simak(&[
        "quant",
        "--input",
        path_str(&data(MINILM_BF16)),
        "--output",
        path_str(&qs),
        "--calibrate",
        "absmax",
        "--tensor",
        "embeddings.LayerNorm.weight",
        "--tensor",
        "encoder.layer.0.attention.self.query.weight[:64]",
    ]));
    let xs = d.join("x.safetensors");
    let summary = json_run(&[
        "dequant",
        path_str(&qs),
        "--output",
        path_str(&xs),
        "--json",
    ]);
    assert_eq!(summary["tensors"].as_array().unwrap().len(), 2);
    let qbytes = fs::read(&qs).unwrap();
    let xbytes = fs::read(&xs).unwrap();
    let qst = SafeTensors::deserialize(&qbytes).unwrap();
    let xst = SafeTensors::deserialize(&xbytes).unwrap();
    let (_, qmeta) = SafeTensors::read_metadata(&qbytes).unwrap();
    let (_, xmeta) = SafeTensors::read_metadata(&xbytes).unwrap();
    let qmeta = qmeta.metadata().clone().unwrap();
    let xmeta = xmeta.metadata().clone().unwrap_or_default();
    for name in [
        "embeddings.LayerNorm.weight",
        "encoder.layer.0.attention.self.query.weight[:64]",
    ] {
        let bits = u32::from_str_radix(
            qmeta[&format!("simak.{name}.multiplier_bits")].trim_start_matches("0x"),
            16,
        )
        .unwrap();
        let zp: i32 = qmeta[&format!("simak.{name}.zero_point")].parse().unwrap();
        let qv = qst.tensor(name).unwrap();
        let xv = xst.tensor(name).unwrap();
        assert_eq!(xv.dtype(), safetensors::Dtype::F32);
        assert_eq!(xv.shape(), qv.shape());
        for (&q, v) in qv.data().iter().zip(f32s(xv.data())) {
            assert_eq!(v, (i32::from(q as i8) - zp) as f32 / f32::from_bits(bits));
        }
        assert!(!xmeta.contains_key(&format!("simak.{name}.multiplier_bits")));
    }
    // Unselected tensors pass through unchanged, and the other metadata stays.
    let other = "encoder.layer.0.attention.self.key.weight[:64]";
    assert_eq!(
        xst.tensor(other).unwrap().data(),
        qst.tensor(other).unwrap().data()
    );
    assert_eq!(xst.tensor(other).unwrap().dtype(), safetensors::Dtype::BF16);
    assert!(xmeta.contains_key("source"), "{xmeta:?}");
}

#[test]
fn layout_of_the_spec_example() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("l.svg");
    let args = [
        "layout",
        "--shape",
        "2,3",
        "--axes",
        "-1,-1,0,1",
        "--tile",
        "1,1,2,3",
    ];
    let mut json_args = args.to_vec();
    json_args.extend(["--json", "--svg", path_str(&svg)]);
    let r = json_run(&json_args);
    assert_eq!(r["capacity_bytes"], 16);
    assert_eq!(r["logical_bytes"], 12);
    assert_eq!(r["tile_counts"], serde_json::json!([1, 1, 1, 1]));
    assert_eq!(
        r["classes"],
        serde_json::json!([{"count_per_outer": 1, "extents": [1, 1, 2, 3],
            "stored_channels": 3, "payload_bytes": 12, "bytes": 16}])
    );
    assert_eq!(
        r["first_tiles"],
        serde_json::json!([{"outer": 0, "index": [0, 0, 0, 0], "extents": [1, 1, 2, 3],
            "offset": 0, "bytes": 16}])
    );
    // The SVG maps every byte: pixel p channel c plane k at p*6 + k*3 + c, 4 padding bytes.
    let text = fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    assert_eq!(text.matches("zero padding</title>").count(), 4);
    for w in 0..2 {
        for c in 0..3 {
            for (k, plane) in ["low", "high"].iter().enumerate() {
                let needle = format!(
                    "byte {}: element (w={w}, c={c}) {plane} byte</title>",
                    w * 6 + k * 3 + c
                );
                assert!(text.contains(&needle), "{needle}");
            }
        }
    }
    let out = simak(&args);
    assert_success(&out);
    let text = stdout_of(&out);
    assert!(text.contains("capacity 16 bytes"), "{text}");
    assert!(
        text.contains("W: logical axis 0, extent 2, tile 2"),
        "{text}"
    );
    // INT8 planes with PadTo16: [W=3, C=1], tile W 2 → tiles of 32 and 16 bytes.
    let r = json_run(&[
        "layout",
        "--shape",
        "3,1",
        "--axes",
        "-1,-1,0,1",
        "--tile",
        "1,1,2,1",
        "--channels",
        "pad16",
        "--dtype",
        "i8",
        "--json",
    ]);
    assert_eq!(r["capacity_bytes"], 48);
    assert_eq!(r["first_tiles"][1]["offset"], 32);
}

#[test]
fn bad_inputs_exit_2_with_one_line_and_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let npy = chelsea_npy();
    let png = data("chelsea.png");
    let out = d.join("o.bin");
    let outs = path_str(&out);
    let run =
        |op: &str, input: &Path, axes: &str, tile: &str, extra: &[&str], mentions: &[&str]| {
            let mut args: Vec<String> = [
                op,
                "--input",
                path_str(input),
                "--output",
                outs,
                "--axes",
                axes,
                "--tile",
                tile,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.extend(extra.iter().map(|s| s.to_string()));
            expect_bad(&args, d, mentions)
        };
    let inp = path_str(&npy);
    // --threads: a65 only, 1 to 256.
    run(
        "casttess",
        &npy,
        "-1,0,1,2",
        "1,16,64,3",
        &["--threads", "2", "--backend", "ev74-sim"],
        &[inp, "--threads", "--backend a65"],
    );
    for bad in ["0", "257"] {
        run(
            "quanttess",
            &npy,
            "-1,0,1,2",
            "1,16,64,3",
            &["--multiplier", "1", "--threads", bad],
            &["--threads", bad],
        );
    }
    // Bad axes: out of range for the rank, out of the syntax, repeated.
    run(
        "casttess",
        &npy,
        "-1,0,1,3",
        "1,16,64,3",
        &[],
        &[inp, "--axes", "c axis 3", "rank 3"],
    );
    run(
        "casttess",
        &npy,
        "-1,0,1",
        "1,16,64,3",
        &[],
        &["--axes", "4"],
    );
    run(
        "casttess",
        &npy,
        "-1,0,7,2",
        "1,16,64,3",
        &[],
        &["--axes", "7"],
    );
    run(
        "casttess",
        &npy,
        "-1,0,1,1",
        "1,16,64,1",
        &[],
        &[inp, "axis 1 is named twice"],
    );
    // Tile larger than its extent, and 0.
    run(
        "casttess",
        &npy,
        "-1,0,1,2",
        "1,16,452,3",
        &[],
        &[inp, "--tile", "452", "1..=451"],
    );
    run(
        "quanttess",
        &npy,
        "-1,0,1,2",
        "1,0,64,3",
        &["--multiplier", "1"],
        &[inp, "--tile"],
    );
    // Unknown channels value.
    run(
        "casttess",
        &npy,
        "-1,0,1,2",
        "1,16,64,3",
        &["--channels", "pad8"],
        &["pad8", "compact", "pad16"],
    );
    // QuantTess has no EV74 entry.
    run(
        "quanttess",
        &npy,
        "-1,0,1,2",
        "1,16,64,3",
        &["--multiplier", "1", "--backend", "ev74-sim"],
        &[inp, "QuantTess has no EV74 entry"],
    );
    // --workers without ev74-sim; options for the wrong input kind.
    run(
        "casttess",
        &npy,
        "-1,0,1,2",
        "1,16,64,3",
        &["--workers", "2"],
        &["--workers", "ev74-sim"],
    );
    run(
        "casttess",
        &npy,
        "-1,0,1,2",
        "1,16,64,3",
        &["--mean", "0,0,0"],
        &[inp, "--mean"],
    );
    run(
        "casttess",
        &npy,
        "-1,0,1,2",
        "1,16,64,3",
        &["--tensor", "x"],
        &[inp, "--tensor"],
    );
    run(
        "casttess",
        &png,
        "-1,0,1,2",
        "1,16,64,3",
        &["--std", "1,0,1"],
        &["--std", "not > 0"],
    );
    // An image past the decoder limits (16385 pixels wide), written by the test.
    let wide = d.join("wide.png");
    image::RgbImage::new(16385, 1).save(&wide).unwrap();
    run(
        "casttess",
        &wide,
        "-1,0,1,2",
        "1,1,64,3",
        &[],
        &[path_str(&wide), "limits"],
    );
    // A truncated PNG, and a file that is not an image.
    let full = fs::read(&png).unwrap();
    let trunc = d.join("trunc.png");
    fs::write(&trunc, &full[..full.len() / 2]).unwrap();
    run(
        "casttess",
        &trunc,
        "-1,0,1,2",
        "1,16,64,3",
        &[],
        &[path_str(&trunc), "malformed png"],
    );
    let fake = d.join("fake.jpg");
    fs::write(&fake, b"not a jpeg at all").unwrap();
    run(
        "casttess",
        &fake,
        "-1,0,1,2",
        "1,16,64,3",
        &[],
        &[path_str(&fake), "PNG or JPEG"],
    );
    // A safetensors file with several tensors and no --tensor; a non-float tensor.
    let st = data(MINILM_F32);
    run(
        "casttess",
        &st,
        "-1,-1,0,-1",
        "1,1,16,1",
        &[],
        &[path_str(&st), "--tensor"],
    );
    // Rank 0 input.
    let scalar = d.join("scalar.npy");
    {
        let mut bytes = Vec::new();
        use npyz::WriterBuilder;
        let mut w = npyz::WriteOptions::<f32>::new()
            .default_dtype()
            .shape(&[])
            .writer(&mut bytes)
            .begin_nd()
            .unwrap();
        w.push(&1.0).unwrap();
        w.finish().unwrap();
        fs::write(&scalar, bytes).unwrap();
    }
    run(
        "casttess",
        &scalar,
        "-1,-1,-1,-1",
        "1,1,1,1",
        &[],
        &[path_str(&scalar), "rank 0"],
    );
    fs::remove_file(&scalar).unwrap();
    fs::remove_file(&wide).unwrap();
    fs::remove_file(&trunc).unwrap();
    fs::remove_file(&fake).unwrap();

    // untile: missing sidecar, inconsistent sidecar, wrong buffer size.
    let good = d.join("good.bin");
    tess("casttess", &npy, &good, &HWC, &[]);
    let sidecar_path = d.join("good.bin.json");
    let side = fs::read_to_string(&sidecar_path).unwrap();
    let lone = d.join("lone.bin");
    fs::write(&lone, b"0123456789abcdef").unwrap();
    expect_bad(
        &["untile", path_str(&lone)],
        d,
        &["lone.bin.json", "sidecar"],
    );
    let mut v: Value = serde_json::from_str(&side).unwrap();
    v["capacity_bytes"] = serde_json::json!(12345);
    fs::write(&sidecar_path, v.to_string()).unwrap();
    expect_bad(
        &["untile", path_str(&good)],
        d,
        &["capacity_bytes is 12345"],
    );
    let mut v: Value = serde_json::from_str(&side).unwrap();
    v["axes"] = serde_json::json!([-1, 0, 0, 2]);
    fs::write(&sidecar_path, v.to_string()).unwrap();
    expect_bad(&["untile", path_str(&good)], d, &["named twice"]);
    let mut v: Value = serde_json::from_str(&side).unwrap();
    v["input_dtype"] = serde_json::json!("f64");
    fs::write(&sidecar_path, v.to_string()).unwrap();
    expect_bad(&["untile", path_str(&good)], d, &["input_dtype \"f64\""]);
    let mut v: Value = serde_json::from_str(&side).unwrap();
    v["tiles"] = serde_json::json!(3);
    fs::write(&sidecar_path, v.to_string()).unwrap();
    expect_bad(&["untile", path_str(&good)], d, &["unknown field `tiles`"]);
    fs::write(&sidecar_path, &side).unwrap();
    let bytes = fs::read(&good).unwrap();
    fs::write(&good, &bytes[..bytes.len() - 16]).unwrap();
    expect_bad(
        &["untile", path_str(&good)],
        d,
        &[path_str(&good), "capacity"],
    );
    // dequant: float input, missing multiplier, parameters given for a safetensors file.
    expect_bad(
        &[
            "dequant",
            inp,
            "--multiplier",
            "2",
            "--output",
            path_str(&d.join("y.npy")),
        ],
        d,
        &[inp, "<f4", "int8"],
    );
    let i8npy = d.join("i8.npy");
    assert_success(&simak(&[
        "quant",
        "--input",
        inp,
        "--output",
        path_str(&i8npy),
        "--multiplier",
        "2",
    ]));
    expect_bad(
        &[
            "dequant",
            path_str(&i8npy),
            "--output",
            path_str(&d.join("y.npy")),
        ],
        d,
        &["--multiplier is required"],
    );
    // A safetensors tensor with its multiplier but not its zero point: refused, not decoded
    // with an assumed zero point 0.
    let half_meta = d.join("half-meta.safetensors");
    let q = safetensors::tensor::TensorView::new(safetensors::Dtype::I8, vec![4], &[1, 2, 3, 4])
        .unwrap();
    let meta = std::collections::HashMap::from([(
        "simak.q.multiplier_bits".to_owned(),
        "0x40000000".to_owned(),
    )]);
    safetensors::serialize_to_file([("q", q)], Some(meta), &half_meta).unwrap();
    expect_bad(
        &[
            "dequant",
            path_str(&half_meta),
            "--output",
            path_str(&d.join("y.safetensors")),
        ],
        d,
        &["simak.q.zero_point is missing"],
    );
    // layout: a repeated axis, and an SVG above the size limit.
    expect_bad(
        &[
            "layout",
            "--shape",
            "4,4",
            "--axes",
            "-1,-1,0,0",
            "--tile",
            "1,1,1,1",
        ],
        d,
        &["--axes", "named twice"],
    );
    expect_bad(
        &[
            "layout",
            "--shape",
            "300,451,3",
            "--axes",
            "-1,0,1,2",
            "--tile",
            "1,16,64,3",
            "--svg",
            path_str(&d.join("big.svg")),
        ],
        d,
        &["--svg", "16384 bytes"],
    );
}

/// The default image limit admits a 48-megapixel RGB photo (8000 × 6000 × 3 FP32, 576 MB,
/// above the old 512 MiB limit); a smaller `--image-limit` refuses it from the header,
/// naming the option.
#[test]
fn a_48_megapixel_photo_fits_the_default_image_limit() {
    let (width, height) = (8000u32, 6000u32);
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 17])
    });
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png).unwrap();
    let png = png.into_inner();
    drop(img);
    let path = Path::new("photo.png");
    let decoded = simak_cli::read::decode_image(
        path,
        &png,
        &Default::default(),
        simak_cli::read::IMAGE_DEFAULT_LIMIT,
    )
    .unwrap();
    assert_eq!(decoded.shape, [6000, 8000, 3]);
    let data = decoded.data.as_slice();
    assert_eq!(data.len(), 8000 * 6000 * 12);
    // Pixel (x = 300, y = 7): (300 % 256, 7, 17) / 255.
    let at = ((7 * 8000 + 300) * 3) * 4;
    let px: Vec<f32> = data[at..at + 12]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(px, [44.0 / 255.0, 7.0 / 255.0, 17.0 / 255.0]);
    drop(decoded);
    let err = simak_cli::read::decode_image(path, &png, &Default::default(), 512 << 20)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--image-limit") && err.contains("550 MiB"),
        "{err}"
    );
}

#[test]
fn casttess_json_reports_the_simulated_cost() {
    let dir = tempfile::tempdir().unwrap();
    let input = chelsea_npy();
    let out = dir.path().join("c.bin");
    let summary = tess("casttess", &input, &out, &HWC, &["--backend", "a65"]);
    assert!(summary.get("simulated_cycles").is_none(), "{summary}");
    for workers in ["1", "3"] {
        let summary = tess(
            "casttess",
            &input,
            &out,
            &HWC,
            &["--backend", "ev74-sim", "--workers", workers],
        );
        crate::ev74::check_sim_cost(&summary, workers.parse().unwrap());
        // Every byte of the tiled buffer leaves the device once, by DMA.
        let capacity = fs::metadata(&out).unwrap().len();
        assert_eq!(summary["bytes_written"], capacity);
        assert!(summary["dma_commands"].as_u64().unwrap() > 0);
    }
}
