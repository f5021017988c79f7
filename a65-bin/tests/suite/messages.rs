//! Messages a new user meets: Ctrl-C says that nothing was written, an `.npy` header that
//! does not parse is one plain sentence (not the parser's caret diagnostic), a repeated
//! `--tensor` is refused, and ml_dtypes' bfloat16 `.npy` files (descr `<V2`) are read with
//! `--dtype bf16`.

use crate::common;

use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

/// An `.npy` file (version 1) of header dictionary `dict` then `data`, the header padded as
/// numpy pads it.
fn npy_bytes(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut header = dict.as_bytes().to_vec();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(data);
    bytes
}

/// Whether process `pid` has `path` open (a link of `/proc/PID/fd`).
#[cfg(target_os = "linux")]
fn has_open(pid: u32, path: &Path) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target == path))
}

/// SIGINT while `simak quant` reads its input (seen open in `/proc`, so the handler is
/// installed: it is, before the command line is parsed): exit 130, the one line
/// `simak: interrupted, nothing written`, and no output or temporary file.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_says_nothing_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.npy");
    // 64 Mi FP32 zeros (a sparse file): the read alone takes a while.
    let elements: u64 = 64 << 20;
    let head = npy_bytes(
        &format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({elements},), }}"),
        &[],
    );
    fs::write(&input, &head).unwrap();
    File::options()
        .write(true)
        .open(&input)
        .unwrap()
        .set_len(head.len() as u64 + elements * 4)
        .unwrap();
    let input = input.canonicalize().unwrap();
    let output = dir.path().join("q.npy");
    let before = listing(dir.path());
    let child = Command::new(BIN)
        .args([
            "quant",
            "-q",
            "--input",
            path_str(&input),
            "--output",
            path_str(&output),
            "--multiplier",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut seen = false;
    loop {
        if has_open(pid, &input) {
            seen = true;
            break;
        }
        // Ended (a zombie has no fd links) or never got there.
        let state = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if state.contains(") Z") || state.is_empty() {
            break;
        }
        std::thread::yield_now();
    }
    assert!(seen, "the child never opened its input");
    let kill = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(130), "stderr: {err}");
    assert_eq!(err, "simak: interrupted, nothing written\n");
    assert_eq!(listing(dir.path()), before, "an output or temporary file");
}

#[test]
fn an_npy_header_that_does_not_parse_is_one_plain_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.npy");
    // A missing comma before 'x'.
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) 'x' }";
    fs::write(&input, npy_bytes(dict, &[0u8; 8])).unwrap();
    let err = expect_bad(
        &[
            "quant",
            "--input",
            path_str(&input),
            "--output",
            path_str(&dir.path().join("q.npy")),
            "--multiplier",
            "1",
        ],
        dir.path(),
        &[
            "bad.npy: malformed .npy file",
            "could not parse Python expression: syntax error at column ",
            " of the header: expected value",
        ],
    );
    // The column is a number within the header's dictionary.
    let column: usize = err
        .split("at column ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no column in {err:?}"));
    assert!((1..=dict.len()).contains(&column), "{err}");
    for art in ["-->", " | ", "^", "  "] {
        assert!(!err.contains(art), "{err:?} holds {art:?}");
    }
}

#[test]
fn a_repeated_tensor_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = data(MINILM_F32);
    let output = dir.path().join("q.safetensors");
    for command in ["quant", "dequant"] {
        let input_flag = if command == "quant" { "--input" } else { "--" };
        let mut args = vec![
            command,
            "--output",
            path_str(&output),
            "--tensor",
            "a.weight",
            "--tensor",
            "b",
            "--tensor",
            "a.weight",
            input_flag,
            path_str(&input),
        ];
        if command == "quant" {
            args.extend(["--multiplier", "1"]);
        }
        expect_bad(&args, dir.path(), &["--tensor a.weight is given twice"]);
    }
}

/// The header ml_dtypes writes for a `bfloat16` array (`np.save` of
/// `np.array(..., dtype=ml_dtypes.bfloat16)`, checked with ml_dtypes 0.7 and numpy 2.4).
fn bf16_npy(shape: &str, bits: &[u16]) -> Vec<u8> {
    let data: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    npy_bytes(
        &format!("{{'descr': '<V2', 'fortran_order': False, 'shape': {shape}, }}"),
        &data,
    )
}

#[test]
fn ml_dtypes_bfloat16_npy_files_are_read_with_dtype_bf16() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // bfloat16 bits of 1.0, -2.5, 300.0, 0.3984375, -0.0, 96.5: each exact in FP32 as
    // bits << 16.
    let bits: [u16; 6] = [0x3f80, 0xc020, 0x4396, 0x3ecc, 0x8000, 0x42c1];
    let values: Vec<f32> = bits
        .iter()
        .map(|&b| f32::from_bits(u32::from(b) << 16))
        .collect();
    assert_eq!(values, [1.0, -2.5, 300.0, 0.3984375, -0.0, 96.5]);
    let bf16 = d.join("x-bf16.npy");
    fs::write(&bf16, bf16_npy("(2, 3)", &bits)).unwrap();
    let f32_file = d.join("x-f32.npy");
    let f32_data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_npy(&f32_file, "<f4", &[2, 3], npyz::Order::C, &f32_data);
    let quant = |input: &Path, output: &Path, extra: &[&str]| {
        let mut args = vec![
            "quant",
            "-q",
            "--input",
            path_str(input),
            "--output",
            path_str(output),
            "--multiplier",
            "2",
        ];
        args.extend_from_slice(extra);
        simak(&args)
    };
    // Without --dtype: refused, with the hint.
    let out = quant(&bf16, &d.join("no.npy"), &[]);
    assert_bad(
        &out,
        &["x-bf16.npy", "dtype '<V2' is not supported", "--dtype bf16"],
    );
    // --dtype bf16 on a float32 file: refused.
    let out = quant(&f32_file, &d.join("no.npy"), &["--dtype", "bf16"]);
    assert_bad(&out, &["x-f32.npy", "--dtype bf16 reads bfloat16", "'<f4'"]);
    // Read: q = saturate(round_half_even(x · 2)) from the formula, and the same bytes as the
    // float32 file of the same values.
    let q_bf16 = d.join("q-bf16.npy");
    assert_success(&quant(&bf16, &q_bf16, &["--dtype", "bf16"]));
    let q_f32 = d.join("q-f32.npy");
    assert_success(&quant(&f32_file, &q_f32, &[]));
    let (shape, got, descr, _) = read_npy(&q_bf16);
    assert_eq!((shape, descr.as_str()), (vec![2, 3], "|i1"));
    let expected: Vec<u8> = values
        .iter()
        .map(|&x| ((x * 2.0).round_ties_even().clamp(-128.0, 127.0) as i8) as u8)
        .collect();
    assert_eq!(got, expected);
    assert_eq!(got, read_npy(&q_f32).1);
    // casttess: a BF16 input is copied bit for bit, as the float32 file's values round to
    // the same BF16 bits.
    let tess = |input: &Path, output: &Path, extra: &[&str]| {
        let mut args = vec![
            "casttess",
            "-q",
            "--input",
            path_str(input),
            "--output",
            path_str(output),
            "--axes",
            "-1,-1,0,1",
            "--tile",
            "1,1,2,3",
        ];
        args.extend_from_slice(extra);
        simak(&args)
    };
    let t_bf16 = d.join("t-bf16.bin");
    assert_success(&tess(&bf16, &t_bf16, &["--dtype", "bf16"]));
    let t_f32 = d.join("t-f32.bin");
    assert_success(&tess(&f32_file, &t_f32, &[]));
    assert_eq!(fs::read(&t_bf16).unwrap(), fs::read(&t_f32).unwrap());
    // Read back: the values themselves (BF16 → FP32 is exact).
    let back = d.join("back.npy");
    assert_success(&simak(&[
        "untile",
        "-q",
        path_str(&t_bf16),
        "--output",
        path_str(&back),
    ]));
    let (shape, raw, descr, _) = read_npy(&back);
    assert_eq!((shape, descr.as_str()), (vec![2, 3], "<f4"));
    let got: Vec<u32> = f32s(&raw).iter().map(|v| v.to_bits()).collect();
    let want: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, want);
}

#[test]
fn per_tensor_only_quantization_is_stated_in_help_and_readme() {
    let out = simak(&["quant", "--help"]);
    assert_success(&out);
    let help = stdout_of(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("Quantization is per tensor only"), "{help}");
    assert!(help.contains("no per-channel or per-block scale"), "{help}");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(readme.contains("Quantization is per tensor only"));
    assert!(readme.contains("no per-channel or per-block scale"));
}
