//! End-to-end tests of the `simak` binary: real files from `tests/data`, files built here
//! (Fortran order, big-endian, malformed), every bad-input class, atomic overwrite, demo.
//!
//! Every output byte is compared with the independent f64 oracle of `simak-tests`.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use npyz::Order;
use safetensors::SafeTensors;
use safetensors::tensor::{Dtype, TensorView};
use serde_json::Value;
use simak::DType;
use simak::ops::quant::Rounding;
use simak_tests::oracle;

const BIN: &str = env!("CARGO_BIN_EXE_simak");

use crate::common;

use common::{
    MINILM_BF16, MINILM_F16, MINILM_F32, assert_success, chelsea_npy, data, expect_bad, listing,
    path_str, simak, stdout_of, write_npy,
};

fn rounding_of(name: &str) -> Rounding {
    Rounding::ALL
        .into_iter()
        .find(|r| r.name() == name)
        .unwrap_or_else(|| panic!("unknown rounding {name}"))
}

fn dtype_of(st: Dtype) -> Option<DType> {
    match st {
        Dtype::F32 => Some(DType::F32),
        Dtype::BF16 => Some(DType::BF16),
        Dtype::F16 => Some(DType::F16),
        _ => None,
    }
}

/// Raw element bits of little-endian storage.
fn element_bits(dtype: DType, bytes: &[u8]) -> Vec<u32> {
    match dtype.size() {
        4 => bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        2 => bytes
            .chunks_exact(2)
            .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
        _ => panic!("not a float dtype"),
    }
}

/// binary32 `127 / max|x|` over finite x, computed from the oracle's exact decoding.
fn absmax_bits(dtype: DType, bits: &[u32]) -> u32 {
    let max = bits
        .iter()
        .map(|&b| oracle::decode(dtype, b).abs())
        .filter(|x| x.is_finite())
        .fold(0f64, f64::max);
    assert!(max > 0.0);
    // Every FP32/BF16/FP16 magnitude is exact in f32.
    (127f32 / max as f32).to_bits()
}

fn parse_bits(text: &str) -> u32 {
    let hex = text.strip_prefix("0x").expect("0x prefix");
    assert_eq!(hex.len(), 8, "{text}");
    u32::from_str_radix(hex, 16).expect("hex bits")
}

/// Parameters of one quantized tensor as the test expects them.
#[derive(Debug, Clone, Copy)]
struct Expect {
    m_bits: u32,
    zp: i32,
    rounding: Rounding,
}

/// Checks every tensor of `output` against `input`: quantized ones byte for byte with the
/// oracle, copied ones identical; metadata keys; and the JSON summary's saturated counts.
/// `expect` gives the parameters of a quantized tensor (`None`: copied unchanged).
fn check_safetensors(
    input: &Path,
    output: &Path,
    summary: &Value,
    expect: impl Fn(&str, DType, &[u32]) -> Option<Expect>,
) -> usize {
    let in_bytes = fs::read(input).unwrap();
    let out_bytes = fs::read(output).unwrap();
    let src = SafeTensors::deserialize(&in_bytes).unwrap();
    let dst = SafeTensors::deserialize(&out_bytes).unwrap();
    let (_, in_meta) = SafeTensors::read_metadata(&in_bytes).unwrap();
    let (_, out_meta) = SafeTensors::read_metadata(&out_bytes).unwrap();
    let out_meta = out_meta.metadata().clone().expect("output has metadata");
    // Input metadata is kept.
    for (k, v) in in_meta.metadata().clone().unwrap_or_default() {
        assert_eq!(out_meta.get(&k), Some(&v), "metadata {k}");
    }
    assert_eq!(
        src.names().into_iter().collect::<BTreeSet<_>>(),
        dst.names().into_iter().collect::<BTreeSet<_>>()
    );
    let rows: HashMap<String, &Value> = summary["tensors"]
        .as_array()
        .expect("tensors array")
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_owned(), r))
        .collect();
    let mut quantized = 0;
    for (name, view) in src.iter() {
        let out = dst.tensor(name).unwrap();
        assert_eq!(out.shape(), view.shape(), "{name}");
        let parameters = dtype_of(view.dtype()).and_then(|dtype| {
            let bits = element_bits(dtype, view.data());
            expect(name, dtype, &bits).map(|e| (dtype, bits, e))
        });
        let Some((dtype, bits, e)) = parameters else {
            assert_eq!(out.dtype(), view.dtype(), "{name} copied");
            assert_eq!(out.data(), view.data(), "{name} copied");
            assert!(!rows.contains_key(name), "{name} is not in the summary");
            assert!(!out_meta.contains_key(&format!("simak.{name}.multiplier_bits")));
            continue;
        };
        quantized += 1;
        assert_eq!(out.dtype(), Dtype::I8, "{name}");
        let want: Vec<u8> = bits
            .iter()
            .map(|&b| oracle::quant(dtype, b, e.m_bits, e.zp, e.rounding) as u8)
            .collect();
        assert_eq!(out.data().len(), want.len(), "{name}");
        if let Some(i) = (0..want.len()).find(|&i| out.data()[i] != want[i]) {
            panic!(
                "{name}[{i}]: input bits 0x{:08x}, got {}, oracle {}",
                bits[i],
                out.data()[i] as i8,
                want[i] as i8
            );
        }
        // Metadata records the parameters.
        assert_eq!(
            out_meta[&format!("simak.{name}.multiplier_bits")],
            format!("0x{:08x}", e.m_bits)
        );
        assert_eq!(
            out_meta[&format!("simak.{name}.zero_point")],
            e.zp.to_string()
        );
        assert_eq!(
            out_meta[&format!("simak.{name}.rounding")],
            e.rounding.name()
        );
        // The summary's saturated count matches the oracle.
        let saturated = bits
            .iter()
            .filter(|&&b| oracle::saturates(dtype, b, e.m_bits, e.zp, e.rounding))
            .count() as u64;
        let row = rows[name];
        assert_eq!(row["saturated"].as_u64(), Some(saturated), "{name}");
        assert_eq!(row["elements"].as_u64(), Some(bits.len() as u64), "{name}");
        assert_eq!(
            parse_bits(row["multiplier_bits"].as_str().unwrap()),
            e.m_bits
        );
        assert_eq!(row["zero_point"].as_i64(), Some(i64::from(e.zp)));
        assert_eq!(row["rounding"].as_str(), Some(e.rounding.name()));
        assert_eq!(row["dtype"].as_str(), Some(dtype.name()));
    }
    assert_eq!(rows.len(), quantized);
    quantized
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is JSON ({e}):\n{}", stdout_of(out)))
}

const MINILM: [(&str, DType); 3] = [
    (MINILM_F32, DType::F32),
    (MINILM_BF16, DType::BF16),
    (MINILM_F16, DType::F16),
];

#[test]
fn minilm_fixed_multiplier_matches_the_oracle_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (file, dtype) in MINILM {
        let input = data(file);
        let output = dir.path().join(format!("{file}.q.safetensors"));
        let out = simak(&[
            "quant",
            "--input",
            path_str(&input),
            "--output",
            path_str(&output),
            "--multiplier",
            "300",
            "--zero-point",
            "-7",
            "--json",
        ]);
        assert_success(&out);
        let summary = json_of(&out);
        assert_eq!(summary["multiplier"]["bits"], "0x43960000");
        let total_saturated = summary["total"]["saturated"].as_u64().unwrap();
        assert!(total_saturated > 0, "the test should exercise saturation");
        let n = check_safetensors(&input, &output, &summary, |_, d, _| {
            assert_eq!(d, dtype);
            Some(Expect {
                m_bits: 300f32.to_bits(),
                zp: -7,
                rounding: Rounding::NearestEven,
            })
        });
        assert_eq!(n, 19, "{file}");
    }
    assert_eq!(listing(dir.path()).len(), 3, "no temporary files left");
}

#[test]
fn minilm_absmax_calibration_with_directed_rounding_matches_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let modes = ["toward-negative", "toward-positive", "toward-zero"];
    for ((file, dtype), mode) in MINILM.into_iter().zip(modes) {
        let input = data(file);
        let output = dir.path().join(format!("{file}.cal.safetensors"));
        let out = simak(&[
            "quant",
            "--input",
            path_str(&input),
            "--output",
            path_str(&output),
            "--calibrate",
            "absmax",
            "--rounding",
            mode,
            "--json",
        ]);
        assert_success(&out);
        let summary = json_of(&out);
        assert_eq!(summary["calibration"], "absmax");
        let rows = summary["tensors"].as_array().unwrap().clone();
        let n = check_safetensors(&input, &output, &summary, |name, d, bits| {
            assert_eq!(d, dtype);
            let m_bits = absmax_bits(d, bits);
            let row = rows.iter().find(|r| r["name"] == name).unwrap();
            assert_eq!(row["calibration"], "absmax");
            Some(Expect {
                m_bits,
                zp: 0,
                rounding: rounding_of(mode),
            })
        });
        assert_eq!(n, 19);
        let meta = SafeTensors::read_metadata(&fs::read(&output).unwrap())
            .unwrap()
            .1
            .metadata()
            .clone()
            .unwrap();
        assert_eq!(
            meta["simak.embeddings.LayerNorm.bias.calibration"],
            "absmax"
        );
    }
}

/// A small safetensors file with an I64 tensor, an all-zero F32 tensor, a rank-7 tensor and
/// ordinary float tensors, plus metadata.
fn mixed_safetensors(dir: &Path) -> PathBuf {
    let w: Vec<u8> = [0.5f32, -1.25, 3.0, f32::NAN, -0.0, 1e-40]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let h: Vec<u8> = [0x3c00u16, 0xfc00, 0x7e00, 0x0001]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let ids: Vec<u8> = [1i64, 2, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
    let zeros = vec![0u8; 16];
    let deep = 2f32.to_le_bytes().to_vec();
    let tensors = vec![
        ("w", TensorView::new(Dtype::F32, vec![2, 3], &w).unwrap()),
        ("h", TensorView::new(Dtype::F16, vec![4], &h).unwrap()),
        ("ids", TensorView::new(Dtype::I64, vec![3], &ids).unwrap()),
        (
            "zeros",
            TensorView::new(Dtype::F32, vec![4], &zeros).unwrap(),
        ),
        (
            "deep",
            TensorView::new(Dtype::F32, vec![1; 7], &deep).unwrap(),
        ),
    ];
    let meta = HashMap::from([("origin".to_owned(), "test".to_owned())]);
    let bytes = safetensors::serialize(tensors, Some(meta)).unwrap();
    let path = dir.join("mixed.safetensors");
    fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn tensor_selection_copies_the_rest_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let input = mixed_safetensors(dir.path());
    let output = dir.path().join("out.safetensors");
    let out = simak(&[
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--tensor",
        "w",
        "--tensor",
        "h",
        "--multiplier",
        "0x3f800001",
        "--zero-point",
        "3",
        "--rounding",
        "toward-positive",
        "--json",
    ]);
    assert_success(&out);
    let summary = json_of(&out);
    let n = check_safetensors(&input, &output, &summary, |name, _, _| {
        ["w", "h"].contains(&name).then_some(Expect {
            m_bits: 0x3f80_0001,
            zp: 3,
            rounding: Rounding::TowardPositive,
        })
    });
    assert_eq!(n, 2);
    let copied: BTreeSet<&str> = summary["copied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(copied, BTreeSet::from(["ids", "zeros", "deep"]));
}

#[test]
fn misaligned_tensor_data_is_quantized_exactly() {
    // A BF16 tensor of one element first puts the F32 tensor at data offset 2: its bytes
    // are not 4-byte aligned in memory, so the CLI must copy them to an aligned buffer.
    let dir = tempfile::tempdir().unwrap();
    let mut header = r#"{"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"F32","shape":[3],"data_offsets":[2,14]},"c":{"dtype":"F16","shape":[1],"data_offsets":[14,16]}}"#.to_owned();
    while !header.len().is_multiple_of(8) {
        header.push(' ');
    }
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&0x4049u16.to_le_bytes());
    for x in [1.5f32, -2.5, 1e30] {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes.extend_from_slice(&0xc0c0u16.to_le_bytes());
    let input = dir.path().join("odd.safetensors");
    fs::write(&input, bytes).unwrap();
    let output = dir.path().join("odd-i8.safetensors");
    let out = simak(&[
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--multiplier",
        "3",
        "--zero-point",
        "1",
        "--json",
    ]);
    assert_success(&out);
    let n = check_safetensors(&input, &output, &json_of(&out), |_, _, _| {
        Some(Expect {
            m_bits: 3f32.to_bits(),
            zp: 1,
            rounding: Rounding::NearestEven,
        })
    });
    assert_eq!(n, 3);
    let b = SafeTensors::deserialize(&fs::read(&output).unwrap())
        .unwrap()
        .tensor("b")
        .unwrap()
        .data()
        .to_vec();
    // 4.5 ties to 4, −7.5 ties to −8; plus the zero point; 3e30 saturates.
    assert_eq!(b, [5u8, (-7i8) as u8, 127]);
}

#[test]
fn decimal_multiplier_is_rounded_once_and_echoed_with_its_bits() {
    let dir = tempfile::tempdir().unwrap();
    let input = mixed_safetensors(dir.path());
    let output = dir.path().join("out.safetensors");
    // Just above the midpoint between 1 and its successor: parsing through f64 would round
    // to the midpoint first and then tie to 1.0 (0x3f800000).
    let out = simak(&[
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--tensor",
        "w",
        "--multiplier",
        "1.00000005960464477550",
    ]);
    assert_success(&out);
    let text = stdout_of(&out);
    assert!(text.contains("0x3f800001"), "{text}");
    assert!(text.contains("1.00000011920928955078125"), "{text}");
    let meta = SafeTensors::read_metadata(&fs::read(&output).unwrap())
        .unwrap()
        .1
        .metadata()
        .clone()
        .unwrap();
    assert_eq!(meta["simak.w.multiplier_bits"], "0x3f800001");
}

/// Storage index of logical `index` in `order`.
fn storage_index(shape: &[u64], order: Order, index: &[u64]) -> usize {
    let axes: Vec<usize> = match order {
        Order::C => (0..shape.len()).collect(),
        Order::Fortran => (0..shape.len()).rev().collect(),
    };
    axes.iter().fold(0u64, |acc, &a| acc * shape[a] + index[a]) as usize
}

/// All logical indices in row-major order.
fn indices(shape: &[u64]) -> Vec<Vec<u64>> {
    let mut all = vec![vec![]];
    for &e in shape {
        all = all
            .into_iter()
            .flat_map(|p| {
                (0..e).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    all
}

/// Checks an int8 `.npy` output against the oracle over the input's element bits (in the
/// input's storage order); returns the summary row's saturated count check.
fn check_npy(
    output: &Path,
    shape: &[u64],
    in_order: Order,
    dtype: DType,
    in_bits: &[u32],
    e: Expect,
) {
    let bytes = fs::read(output).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(npy.header().shape(), shape);
    assert_eq!(npy.dtype().descr(), "'|i1'");
    let out_order = npy.header().order();
    let values: Vec<i8> = npy.into_vec().unwrap();
    assert_eq!(values.len(), in_bits.len());
    for index in indices(shape) {
        let bits = in_bits[storage_index(shape, in_order, &index)];
        let got = values[storage_index(shape, out_order, &index)];
        let want = oracle::quant(dtype, bits, e.m_bits, e.zp, e.rounding);
        assert_eq!(got, want, "{index:?}: input 0x{bits:08x}");
    }
}

fn saturated(dtype: DType, bits: &[u32], e: Expect) -> u64 {
    bits.iter()
        .filter(|&&b| oracle::saturates(dtype, b, e.m_bits, e.zp, e.rounding))
        .count() as u64
}

#[test]
fn chelsea_npy_matches_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let input = chelsea_npy();
    let output = dir.path().join("chelsea-i8.npy");
    let out = simak(&[
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--multiplier",
        "300",
        "--zero-point",
        "-128",
        "--json",
    ]);
    assert_success(&out);
    let bytes = fs::read(&input).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape = npy.header().shape().to_vec();
    assert_eq!(shape, [300, 451, 3]);
    let bits: Vec<u32> = npy
        .into_vec::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect();
    let e = Expect {
        m_bits: 300f32.to_bits(),
        zp: -128,
        rounding: Rounding::NearestEven,
    };
    check_npy(&output, &shape, Order::C, DType::F32, &bits, e);
    let summary = json_of(&out);
    let sat = saturated(DType::F32, &bits, e);
    assert!(sat > 0);
    assert_eq!(summary["tensors"][0]["saturated"].as_u64(), Some(sat));
    assert_eq!(
        listing(dir.path()),
        BTreeSet::from(["chelsea-i8.npy".into()])
    );
}

/// Element bits covering specials, subnormals, ties and ordinary values.
fn interesting_f32(n: usize) -> Vec<u32> {
    let specials = [
        0x0000_0000,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0001,
        0xffff_ffff,
        0x0000_0001,
        0x3f00_0000,
        0xbf00_0000,
        0x3fc0_0000,
        0x4020_0000,
        0x4316_0000,
        0xc316_0000,
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|i| {
            specials.get(i).copied().unwrap_or_else(|| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Mostly moderate magnitudes, some extreme.
                let r = (state >> 32) as u32;
                if i % 5 == 0 {
                    r
                } else {
                    (r & 0x807f_ffff) | ((0x7c + (r >> 27) % 10) << 23)
                }
            })
        })
        .collect()
}

fn interesting_f16(n: usize) -> Vec<u32> {
    let specials = [
        0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0x0001, 0x3800, 0x3e00,
    ];
    (0..n)
        .map(|i| {
            specials
                .get(i)
                .copied()
                .unwrap_or((i as u32).wrapping_mul(0x9e37) & 0xffff)
        })
        .collect()
}

#[test]
fn fortran_and_big_endian_npy_match_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [5u64, 7, 3];
    let n = 105;
    let cases = [
        ("f32-fortran.npy", "<f4", Order::Fortran, DType::F32),
        ("f32-big.npy", ">f4", Order::C, DType::F32),
        ("f16-fortran.npy", "<f2", Order::Fortran, DType::F16),
        ("f16-big-fortran.npy", ">f2", Order::Fortran, DType::F16),
        ("f32-big-fortran.npy", ">f4", Order::Fortran, DType::F32),
    ];
    for (i, (name, descr, order, dtype)) in cases.into_iter().enumerate() {
        let bits = match dtype {
            DType::F32 => interesting_f32(n),
            _ => interesting_f16(n),
        };
        let big = descr.starts_with('>');
        let raw: Vec<u8> = bits
            .iter()
            .flat_map(|&b| match (dtype, big) {
                (DType::F32, false) => b.to_le_bytes().to_vec(),
                (DType::F32, true) => b.to_be_bytes().to_vec(),
                (_, false) => (b as u16).to_le_bytes().to_vec(),
                (_, true) => (b as u16).to_be_bytes().to_vec(),
            })
            .collect();
        let input = dir.path().join(name);
        write_npy(&input, descr, &shape, order, &raw);
        let output = dir.path().join(format!("out-{name}"));
        let rounding = Rounding::ALL[i % 4];
        let e = Expect {
            m_bits: 0x3e99_999a,
            zp: 5 - 20 * i as i32,
            rounding,
        };
        let out = simak(&[
            "quant",
            "--input",
            path_str(&input),
            "--output",
            path_str(&output),
            "--multiplier",
            "0x3e99999a",
            "--zero-point",
            &e.zp.to_string(),
            "--rounding",
            rounding.name(),
            "--json",
        ]);
        assert_success(&out);
        check_npy(&output, &shape, order, dtype, &bits, e);
        let summary = json_of(&out);
        assert_eq!(
            summary["tensors"][0]["saturated"].as_u64(),
            Some(saturated(dtype, &bits, e)),
            "{name}"
        );
    }
}

#[test]
fn npy_calibration_uses_the_finite_absmax() {
    let dir = tempfile::tempdir().unwrap();
    let bits = interesting_f32(64);
    let raw: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let input = dir.path().join("x.npy");
    write_npy(&input, "<f4", &[8, 8], Order::Fortran, &raw);
    let output = dir.path().join("y.npy");
    let out = simak(&[
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--calibrate",
        "absmax",
        "--json",
    ]);
    assert_success(&out);
    let e = Expect {
        m_bits: absmax_bits(DType::F32, &bits),
        zp: 0,
        rounding: Rounding::NearestEven,
    };
    check_npy(&output, &[8, 8], Order::Fortran, DType::F32, &bits, e);
    let summary = json_of(&out);
    assert_eq!(
        parse_bits(summary["tensors"][0]["multiplier_bits"].as_str().unwrap()),
        e.m_bits
    );
}

#[test]
fn missing_and_malformed_files_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out.safetensors");
    let out_s = path_str(&out);
    let quant = |input: &Path| {
        vec![
            "quant".to_owned(),
            "--input".to_owned(),
            path_str(input).to_owned(),
            "--output".to_owned(),
            out_s.to_owned(),
            "--multiplier".to_owned(),
            "2".to_owned(),
        ]
    };
    let run = |input: &Path, mentions: &[&str]| {
        let args = quant(input);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        expect_bad(&args, d, mentions)
    };

    // Missing file.
    let missing = d.join("missing.safetensors");
    run(&missing, &[path_str(&missing), "cannot read"]);

    // Truncated safetensors: inside the header, and inside the data.
    let full = fs::read(data(MINILM_F32)).unwrap();
    for (name, len) in [
        ("trunc-header.safetensors", 100),
        ("trunc-data.safetensors", 5000),
    ] {
        let p = d.join(name);
        fs::write(&p, &full[..len]).unwrap();
        run(&p, &[path_str(&p), "malformed safetensors"]);
    }

    // Lying headers: offsets past the data, and a size that disagrees with shape × dtype.
    let lies = [
        r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,1600]}}"#,
        r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,32]}}"#,
        r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[8,24]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"c":{"dtype":"F32","shape":[1],"data_offsets":[30,34]}}"#,
    ];
    for (i, header) in lies.into_iter().enumerate() {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&[0u8; 32]);
        let p = d.join(format!("lie{i}.safetensors"));
        fs::write(&p, bytes).unwrap();
        run(&p, &[path_str(&p), "malformed safetensors"]);
    }

    // Malformed and lying .npy files (output must be .npy too).
    let out_npy = d.join("out.npy");
    let run_npy = |p: &Path, mentions: &[&str]| {
        expect_bad(
            &[
                "quant",
                "--input",
                path_str(p),
                "--output",
                path_str(&out_npy),
                "--multiplier",
                "2",
            ],
            d,
            mentions,
        )
    };
    let garbage = d.join("garbage.npy");
    fs::write(&garbage, b"this is not a numpy file at all").unwrap();
    run_npy(&garbage, &[path_str(&garbage), "malformed .npy"]);
    let short = d.join("short.npy");
    write_npy(&short, "<f4", &[4, 4], Order::C, &[0u8; 60]);
    run_npy(&short, &[path_str(&short), "needs 64"]);
    // A shape whose element count overflows u64 (npyz's writer cannot produce it: built
    // by hand as a version 1.0 header).
    let huge = d.join("huge.npy");
    let dict =
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }";
    let mut text = dict.to_owned();
    while !(10 + text.len() + 1).is_multiple_of(64) {
        text.push(' ');
    }
    text.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
    bytes.extend_from_slice(text.as_bytes());
    bytes.extend_from_slice(&[0u8; 16]);
    fs::write(&huge, bytes).unwrap();
    run_npy(&huge, &[path_str(&huge), "malformed .npy"]);
    let f64_npy = d.join("double.npy");
    write_npy(&f64_npy, "<f8", &[2], Order::C, &[0u8; 16]);
    run_npy(&f64_npy, &[path_str(&f64_npy), "<f8", "not supported"]);

    // Unsupported file type.
    let txt = d.join("weights.txt");
    fs::write(&txt, b"1 2 3").unwrap();
    run(&txt, &[path_str(&txt), "unsupported input file type"]);
}

/// `--calibrate absmax` on tensors with no finite nonzero element (all zero; only NaN, ±inf
/// and -0; empty) uses multiplier 1.0, says so per tensor, and quantizes the rest of the file
/// as usual (it used to refuse the whole file).
#[test]
fn absmax_without_a_finite_nonzero_element_uses_multiplier_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let w: Vec<u8> = [0.5f32, -2.0, 3.0, 1.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let zeros = vec![0u8; 16];
    let specials: Vec<u8> = [0x7e00u16, 0x7c00, 0xfc00, 0x8000]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let tensors = vec![
        ("w", TensorView::new(Dtype::F32, vec![4], &w).unwrap()),
        (
            "zeros",
            TensorView::new(Dtype::F32, vec![2, 2], &zeros).unwrap(),
        ),
        (
            "specials",
            TensorView::new(Dtype::F16, vec![4], &specials).unwrap(),
        ),
        (
            "empty",
            TensorView::new(Dtype::BF16, vec![0, 3], &[]).unwrap(),
        ),
    ];
    let input = d.join("in.safetensors");
    fs::write(&input, safetensors::serialize(tensors, None).unwrap()).unwrap();
    let output = d.join("out.safetensors");
    let out = simak(&[
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--calibrate",
        "absmax",
        "--json",
    ]);
    assert_success(&out);
    let summary = json_of(&out);
    let bytes = fs::read(&output).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let meta = SafeTensors::read_metadata(&bytes)
        .unwrap()
        .1
        .metadata()
        .clone()
        .unwrap();
    let rows = summary["tensors"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for (name, want) in [
        ("zeros", vec![0i8; 4]),
        // NaN gives the zero point, +inf 127, -inf -128, -0 zero (SPEC §3).
        ("specials", vec![0, 127, -128, 0]),
        ("empty", vec![]),
    ] {
        let row = rows.iter().find(|r| r["name"] == name).unwrap();
        assert_eq!(row["multiplier_bits"], "0x3f800000", "{name}");
        assert!(
            row["note"].as_str().unwrap().contains("multiplier 1.0"),
            "{row}"
        );
        assert_eq!(meta[&format!("simak.{name}.multiplier_bits")], "0x3f800000");
        let t = st.tensor(name).unwrap();
        assert_eq!(t.dtype(), Dtype::I8);
        let got: Vec<i8> = t.data().iter().map(|&b| b as i8).collect();
        assert_eq!(got, want, "{name}");
    }
    assert_eq!(st.tensor("empty").unwrap().shape(), [0, 3]);
    let w_row = rows.iter().find(|r| r["name"] == "w").unwrap();
    assert_eq!(
        parse_bits(w_row["multiplier_bits"].as_str().unwrap()),
        (127f32 / 3f32).to_bits()
    );
    assert!(w_row.get("note").is_none(), "{w_row}");
    // The text summary says so too.
    let out = simak(&[
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--calibrate",
        "absmax",
    ]);
    assert_success(&out);
    let text = stdout_of(&out);
    assert!(
        text.contains("note: zeros: no finite nonzero element: absmax used multiplier 1.0"),
        "{text}"
    );
}

#[test]
fn bad_tensor_selection_and_calibration_name_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = mixed_safetensors(d);
    let inp = path_str(&input);
    let out = d.join("out.safetensors");
    let outp = path_str(&out);
    let err = expect_bad(
        &[
            "quant",
            "--input",
            inp,
            "--output",
            outp,
            "--tensor",
            "ids",
            "--multiplier",
            "1",
        ],
        d,
        &[inp, "tensor \"ids\"", "I64", "not supported"],
    );
    assert!(err.contains("F32, BF16, F16"), "{err}");
    expect_bad(
        &[
            "quant",
            "--input",
            inp,
            "--output",
            outp,
            "--tensor",
            "nope",
            "--multiplier",
            "1",
        ],
        d,
        &[inp, "tensor \"nope\"", "no such tensor"],
    );
    // Rank 7 is above what the library admits.
    expect_bad(
        &[
            "quant",
            "--input",
            inp,
            "--output",
            outp,
            "--tensor",
            "deep",
            "--multiplier",
            "1",
        ],
        d,
        &[inp, "tensor \"deep\"", "rank 7"],
    );
    // An all-zero .npy calibrates to multiplier 1.0 (a file of its own, so the folder
    // checks of the refusals below are unaffected).
    let zeros = d.join("zeros.npy");
    write_npy(&zeros, "<f2", &[3, 2], Order::C, &[0u8; 12]);
    let out_npy = d.join("z.npy");
    {
        let side = tempfile::tempdir().unwrap();
        let z_out = side.path().join("z.npy");
        let summary = json_of(&simak(&[
            "quant",
            "--input",
            path_str(&zeros),
            "--output",
            path_str(&z_out),
            "--calibrate",
            "absmax",
            "--json",
        ]));
        assert_eq!(summary["tensors"][0]["multiplier_bits"], "0x3f800000");
        assert!(summary["tensors"][0]["note"].is_string(), "{summary}");
    }
    // --tensor does not apply to .npy.
    expect_bad(
        &[
            "quant",
            "--input",
            path_str(&zeros),
            "--output",
            path_str(&out_npy),
            "--tensor",
            "x",
            "--multiplier",
            "1",
        ],
        d,
        &[path_str(&zeros), "--tensor"],
    );
}

#[test]
fn bad_parameters_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = data(MINILM_BF16);
    let inp = path_str(&input);
    let out = d.join("out.safetensors");
    let outp = path_str(&out);
    let cases: [(&[&str], &[&str]); 8] = [
        (&["--multiplier", "nan"], &["not finite"]),
        (&["--multiplier", "inf"], &["not finite"]),
        (&["--multiplier", "0"], &["not > 0"]),
        (&["--multiplier", "-1"], &["not > 0", "0xbf800000"]),
        (
            &["--multiplier", "0x7f800000"],
            &["0x7f800000", "not finite"],
        ),
        (
            &["--multiplier", "0x123"],
            &["0x123", "exactly 8 hex digits"],
        ),
        (
            &["--multiplier", "1", "--zero-point", "128"],
            &["zero point 128", "[-128, 127]"],
        ),
        (
            &["--multiplier", "1", "--zero-point", "-129"],
            &["zero point -129", "[-128, 127]"],
        ),
    ];
    for (extra, mentions) in cases {
        let mut args = vec!["quant", "--input", inp, "--output", outp];
        args.extend_from_slice(extra);
        let mut all = vec![inp];
        all.extend_from_slice(mentions);
        expect_bad(&args, d, &all);
    }
    // An existing output is left untouched by a refused run.
    fs::write(&out, b"previous").unwrap();
    let mut args = vec!["quant", "--input", inp, "--output", outp];
    args.extend_from_slice(&["--multiplier", "nan"]);
    expect_bad(&args, d, &[inp]);
    assert_eq!(fs::read(&out).unwrap(), b"previous");
}

#[test]
fn output_equal_to_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("chelsea.npy");
    fs::copy(chelsea_npy(), &input).unwrap();
    let original = fs::read(&input).unwrap();
    let link = d.join("link.npy");
    fs::hard_link(&input, &link).unwrap();
    let spellings = [
        input.clone(),
        d.join(".").join("chelsea.npy"),
        d.join("sub").join("..").join("chelsea.npy"),
        link.clone(),
    ];
    fs::create_dir(d.join("sub")).unwrap();
    for output in spellings {
        expect_bad(
            &[
                "quant",
                "--input",
                path_str(&input),
                "--output",
                path_str(&output),
                "--multiplier",
                "2",
            ],
            d,
            &[path_str(&input), "is the input file itself"],
        );
    }
    assert_eq!(fs::read(&input).unwrap(), original);
}

#[test]
fn overwrite_replaces_the_old_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let output = d.join("out.safetensors");
    fs::write(&output, b"old contents, not a safetensors file").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&output, fs::Permissions::from_mode(0o640)).unwrap();
    }
    let input = data(MINILM_F16);
    let out = simak(&[
        "-q",
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--tensor",
        "embeddings.LayerNorm.weight",
        "--multiplier",
        "64",
    ]);
    assert_success(&out);
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "-q is quiet"
    );
    assert_eq!(listing(d), BTreeSet::from(["out.safetensors".into()]));
    let bytes = fs::read(&output).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(
        st.tensor("embeddings.LayerNorm.weight").unwrap().dtype(),
        Dtype::I8
    );
    assert_eq!(
        st.tensor("embeddings.LayerNorm.bias").unwrap().dtype(),
        Dtype::F16
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&output).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640, "an overwritten file keeps its mode");
    }
}

#[test]
fn text_summary_lists_every_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let input = data(MINILM_F32);
    let output = dir.path().join("o.safetensors");
    let out = simak(&[
        "quant",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--multiplier",
        "0.0078125",
    ]);
    assert_success(&out);
    let text = stdout_of(&out);
    assert!(
        text.contains("\"0.0078125\" = binary32 0x3c000000"),
        "{text}"
    );
    for header in [
        "tensor",
        "shape",
        "dtype",
        "multiplier",
        "saturated",
        "elements/s",
    ] {
        assert!(text.contains(header), "{header}: {text}");
    }
    assert!(text.contains("encoder.layer.0.output.dense.weight[:128]"));
    assert!(text.contains("[128, 1536]"));
    assert!(
        text.contains("total: 19 tensors, 349824 elements"),
        "{text}"
    );
}

fn checksum(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("checksum fnv1a64 "))
        .unwrap_or_else(|| panic!("no checksum line in {text}"))
        .to_owned()
}

#[test]
fn demo_is_deterministic() {
    let first = simak(&["demo"]);
    assert_success(&first);
    let second = simak(&["demo"]);
    assert_success(&second);
    let a = checksum(&stdout_of(&first));
    assert_eq!(a, checksum(&stdout_of(&second)));
    assert_eq!(a.len(), 18, "{a}");
    // The generator and the arithmetic are exact: the checksum is the same everywhere.
    assert_eq!(a, "0xa2755015dee5a9ac");
    let quiet = simak(&["demo", "-q"]);
    assert_success(&quiet);
    assert_eq!(stdout_of(&quiet), format!("checksum fnv1a64 {a}\n"));
    let json = simak(&["--json", "demo"]);
    assert_success(&json);
    let v = json_of(&json);
    assert_eq!(v["checksum"].as_str(), Some(a.as_str()));
    assert!(v["jobs"].as_array().unwrap().len() >= 10);
    let other = simak(&["demo", "--seed", "7"]);
    assert_success(&other);
    assert_ne!(checksum(&stdout_of(&other)), a);
}

#[test]
fn version_and_help() {
    let v = simak(&["--version"]);
    assert_success(&v);
    assert_eq!(
        stdout_of(&v),
        format!("simak {}\n", env!("CARGO_PKG_VERSION"))
    );
    let help = simak(&["--help"]);
    assert_success(&help);
    let text = stdout_of(&help);
    for word in ["quant", "demo", "--quiet", "--json", "--version"] {
        assert!(text.contains(word), "{word}: {text}");
    }
    let help = simak(&["quant", "--help"]);
    assert_success(&help);
    let text = stdout_of(&help);
    for flag in [
        "--input",
        "--tensor",
        "--output",
        "--multiplier",
        "--calibrate",
        "--zero-point",
        "--rounding",
        "--backend",
        "nearest-even",
        "toward-zero",
        "toward-positive",
        "toward-negative",
        "a65",
        "absmax",
    ] {
        assert!(text.contains(flag), "{flag}: {text}");
    }
    // Usage errors are clap's: exit 2.
    let usage = simak(&["quant", "--input", "a.npy", "--output", "b.npy"]);
    assert_eq!(usage.status.code(), Some(2));
    let backend = simak(&[
        "quant",
        "--input",
        "a.npy",
        "--output",
        "b.npy",
        "--multiplier",
        "1",
        "--backend",
        "ev74",
    ]);
    assert_eq!(backend.status.code(), Some(2));
}

/// A full standard output is a write failure (exit 1, one line naming standard output), not
/// an internal error.
#[test]
fn a_full_stdout_is_a_write_error() {
    let Ok(full) = fs::OpenOptions::new().write(true).open("/dev/full") else {
        panic!("/dev/full is missing: this test needs Linux");
    };
    let out = Command::new(BIN)
        .args(["demo", "--json"])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("simak: error: standard output: cannot write the summary"),
        "{stderr}"
    );
}

/// Inputs are read only when they are regular files: `/dev/zero` (directly or through a
/// symlink named like a tensor file) would stream until memory runs out, a FIFO would block.
#[test]
fn special_inputs_are_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let zero = d.join("zero.npy");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let out = d.join("q.npy");
    expect_bad(
        &[
            "quant",
            "--input",
            path_str(&zero),
            "--output",
            path_str(&out),
            "--multiplier",
            "1",
        ],
        d,
        &[path_str(&zero), "special file"],
    );
    expect_bad(
        &["packet", "decode", "/dev/zero"],
        d,
        &["/dev/zero", "special file"],
    );
    assert!(!out.exists());
}

#[test]
fn special_outputs_are_refused_and_left_alone() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = chelsea_npy();
    let quant = |output: &str| {
        vec![
            "quant".to_owned(),
            "--input".to_owned(),
            path_str(&input).to_owned(),
            "--output".to_owned(),
            output.to_owned(),
            "--multiplier".to_owned(),
            "64".to_owned(),
        ]
    };
    let args = quant("-");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    expect_bad(&args, d, &["--output -", "standard output"]);
    // A FIFO stands for any special file (a device node needs privileges to create): a
    // rename would replace the node itself, so it is refused before anything is written.
    let fifo = d.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let args = quant(path_str(&fifo));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        expect_bad(&args, d, &[path_str(&fifo), "special file"]);
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
    // The same for the sidecar of casttess (`--output` with `.json` appended): a FIFO there,
    // or a symlink to /dev/null, is refused and neither output is written.
    let casttess = |output: &Path| -> Vec<String> {
        [
            "casttess",
            "--input",
            path_str(&input),
            "--output",
            path_str(output),
            "--axes",
            "-1,0,1,2",
            "--tile",
            "1,16,64,3",
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let side_fifo = d.join("tiled.bin.json");
    let made = Command::new("mkfifo").arg(&side_fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let args = casttess(&d.join("tiled.bin"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        expect_bad(&args, d, &[path_str(&side_fifo), "sidecar", "special file"]);
        assert!(
            fs::symlink_metadata(&side_fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert!(!d.join("tiled.bin").exists());
    }
    let side_null = d.join("null.bin.json");
    std::os::unix::fs::symlink("/dev/null", &side_null).unwrap();
    let args = casttess(&d.join("null.bin"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    expect_bad(&args, d, &[path_str(&side_null), "sidecar", "special file"]);
    assert!(
        fs::symlink_metadata(&side_null)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!d.join("null.bin").exists());
    let svg = d.join("missing").join("x.svg");
    expect_bad(
        &[
            "layout",
            "--shape",
            "4,4,3",
            "--axes",
            "-1,0,1,2",
            "--tile",
            "1,2,2,3",
            "--svg",
            path_str(&svg),
        ],
        d,
        &["--svg folder"],
    );
    let nope = d.join("nope.bin");
    expect_bad(
        &["untile", path_str(&nope)],
        d,
        &[path_str(&nope), "cannot read"],
    );
    let out = d.join("c.bin");
    expect_bad(
        &[
            "casttess",
            "--input",
            path_str(&data("chelsea.png")),
            "--output",
            path_str(&out),
            "--axes",
            "-1,0,1,2",
            "--tile",
            "1,16,64,3",
            "--std",
            "-1,1,1",
        ],
        d,
        &["standard deviation -1 is not > 0"],
    );
}

/// A run interrupted (SIGINT: exit 130) or killed (SIGKILL) while it stages its output
/// leaves neither the output nor a temporary file: the staging file has no name until it is
/// complete (a named temporary file would survive `kill -9`).
#[test]
fn an_interrupted_run_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("big.npy");
    // 32 Mi FP32 elements (128 MB): the 32 MB output takes long enough to write that the
    // staging file is seen by polling.
    let n = 32usize << 20;
    let data: Vec<u8> = (0..n)
        .flat_map(|i| ((i % 1000) as f32).to_le_bytes())
        .collect();
    write_npy(&input, "<f4", &[n as u64], Order::C, &data);
    drop(data);
    let output = d.join("out.npy");
    // Whether the run holds a file of `d` open for writing: an unnamed staging file shows in
    // /proc as `d/#INODE (deleted)`, a named one as `d/.simak-….tmp`; the input is only read
    // (and closed) before the output is staged.
    let staging = |pid: u32| {
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.filter_map(|e| fs::read_link(e.ok()?.path()).ok())
            .any(|target| target.starts_with(d) && target != input)
    };
    for signal in ["-INT", "-KILL"] {
        let mut caught = false;
        for _attempt in 0..5 {
            let _ = fs::remove_file(&output);
            let mut child = Command::new(BIN)
                .args(["quant", "-q", "--input", path_str(&input), "--output"])
                .arg(&output)
                .args(["--multiplier", "2"])
                .spawn()
                .unwrap();
            let mut seen = false;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
                if staging(child.id()) {
                    seen = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            if !seen {
                child.wait().unwrap();
                continue;
            }
            let killed = Command::new("kill")
                .args([signal, &child.id().to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
            let status = child.wait().unwrap();
            if status.success() {
                // It finished between the poll and the signal: try again.
                continue;
            }
            if signal == "-INT" {
                assert_eq!(status.code(), Some(130), "{status:?}");
            }
            assert_eq!(
                listing(d),
                BTreeSet::from(["big.npy".to_owned()]),
                "kill {signal} left a file behind"
            );
            caught = true;
            break;
        }
        assert!(
            caught,
            "never caught the run while it staged its output ({signal})"
        );
    }
}
