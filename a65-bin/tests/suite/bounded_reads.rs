//! Readers check before they read: a 4 GiB file (sparse, made with `File::set_len`) whose
//! header does not declare its size is refused from its header and its size, under an
//! address-space limit of 1 GB (`ulimit -v`) that reading it whole could not fit: one line
//! naming the real reason (not "out of memory"), exit 2, no output file. And the bounded
//! reading itself: a valid `.npy` whose header is longer than the first bytes read is read
//! whole and converted.
#![cfg(target_os = "linux")]

use crate::common;

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// The sparse file's size: 4 GiB.
const BIG: u64 = 4 << 30;

/// Runs the binary under `ulimit -v` of 1,000,000 KiB.
fn simak_limited(args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 1000000 && exec "$@""#)
        .arg("sh")
        .arg(BIN)
        .args(args)
        .output()
        .expect("sh runs")
}

/// Writes `head` and extends the file to [`BIG`] bytes (a hole: no disk used).
fn sparse(path: &Path, head: &[u8]) {
    let mut f = File::create(path).unwrap();
    f.write_all(head).unwrap();
    f.set_len(BIG).unwrap();
}

/// Runs `args` limited and checks the refusal: exit 2, one line mentioning `mentions`,
/// no "memory" in it, and `dir` unchanged.
fn refused(dir: &Path, args: &[&str], mentions: &[&str]) {
    let before = listing(dir);
    let out = simak_limited(args);
    let err = assert_bad(&out, mentions);
    assert!(!err.contains("memory"), "{err}");
    assert_eq!(listing(dir), before, "folder changed for {args:?}");
}

/// An `.npy` header (version 1) of `dict`, padded to 64 bytes.
fn npy_head(dict: &str) -> Vec<u8> {
    let mut header = dict.as_bytes().to_vec();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&header);
    bytes
}

#[test]
fn a_4_gib_npy_with_a_small_shape_is_refused_from_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.npy");
    let head = npy_head("{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }");
    sparse(&input, &head);
    let output = dir.path().join("out.npy");
    let tiled = dir.path().join("out.bin");
    let data = (BIG - head.len() as u64).to_string();
    for (command, output) in [
        (&["quant", "--multiplier", "1"][..], &output),
        (
            &["casttess", "--axes", "-1,-1,0,-1", "--tile", "1,1,64,1"][..],
            &tiled,
        ),
    ] {
        let mut args = vec![
            command[0],
            "--input",
            path_str(&input),
            "--output",
            path_str(output),
        ];
        args.extend_from_slice(&command[1..]);
        refused(
            dir.path(),
            &args,
            &["big.npy", "malformed .npy file", &data, "needs 40"],
        );
    }
    // A header length past the end, and a header longer than simak reads.
    for (length, says) in [
        (2_000_000u32, "the header takes 2000012 bytes"),
        (u32::MAX, "the header length 4294967295 runs past the end"),
    ] {
        let input = dir.path().join("long.npy");
        let mut head = b"\x93NUMPY\x02\x00".to_vec();
        head.extend_from_slice(&length.to_le_bytes());
        sparse(&input, &head);
        refused(
            dir.path(),
            &[
                "quant",
                "--input",
                path_str(&input),
                "--output",
                path_str(&output),
                "--multiplier",
                "1",
            ],
            &["long.npy", says],
        );
    }
}

#[test]
fn a_4_gib_safetensors_file_with_a_small_header_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.safetensors");
    let json = br#"{"t":{"dtype":"F32","shape":[10],"data_offsets":[0,40]}}"#;
    let mut head = (json.len() as u64).to_le_bytes().to_vec();
    head.extend_from_slice(json);
    sparse(&input, &head);
    let output = dir.path().join("out.safetensors");
    let rest = (BIG - head.len() as u64).to_string();
    refused(
        dir.path(),
        &[
            "quant",
            "--input",
            path_str(&input),
            "--output",
            path_str(&output),
            "--multiplier",
            "1",
        ],
        &["big.safetensors", "describes 40 bytes of data", &rest],
    );
    // A header length past the end of the file.
    let input = dir.path().join("past.safetensors");
    sparse(&input, &(BIG * 2).to_le_bytes());
    refused(
        dir.path(),
        &[
            "quant",
            "--input",
            path_str(&input),
            "--output",
            path_str(&output),
            "--multiplier",
            "1",
        ],
        &["past.safetensors", "malformed safetensors file"],
    );
}

#[test]
fn a_4_gib_image_or_packet_is_refused_from_its_size_or_magic() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.bin");
    let tess = |input: &Path| {
        vec![
            "casttess".to_owned(),
            "--input".to_owned(),
            path_str(input).to_owned(),
            "--output".to_owned(),
            path_str(&output).to_owned(),
            "--axes".to_owned(),
            "-1,-1,0,-1".to_owned(),
            "--tile".to_owned(),
            "1,1,64,1".to_owned(),
        ]
    };
    let png = dir.path().join("big.png");
    sparse(&png, b"\x89PNG\r\n\x1a\n");
    let args = tess(&png);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    refused(
        dir.path(),
        &args,
        &[
            "big.png",
            "4294967296 bytes exceeds the image limit of 1024 MiB",
        ],
    );
    let jpeg = dir.path().join("big.jpg");
    sparse(&jpeg, b"GIF89a");
    let args = tess(&jpeg);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    refused(dir.path(), &args, &["big.jpg", "not a PNG or JPEG image"]);
    let packet = dir.path().join("big.bin");
    sparse(&packet, b"");
    let sizes: Vec<String> = simak::ev74::ENTRIES
        .iter()
        .map(|e| format!("{} bytes", e.size))
        .collect();
    let mut mentions = vec!["big.bin", "holds 4294967296 bytes"];
    mentions.extend(sizes.iter().map(String::as_str));
    refused(
        dir.path(),
        &["packet", "decode", path_str(&packet)],
        &mentions,
    );
}

#[test]
fn a_4_gib_tiled_buffer_or_sidecar_is_refused_from_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("x.npy");
    let data: Vec<u8> = (0..64u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    write_npy(&input, "<f4", &[64], npyz::Order::C, &data);
    let tiled = dir.path().join("x.bin");
    assert_success(&simak(&[
        "casttess",
        "-q",
        "--input",
        path_str(&input),
        "--output",
        path_str(&tiled),
        "--axes",
        "-1,-1,0,-1",
        "--tile",
        "1,1,64,1",
    ]));
    let capacity = fs::metadata(&tiled).unwrap().len().to_string();
    File::options()
        .write(true)
        .open(&tiled)
        .unwrap()
        .set_len(BIG)
        .unwrap();
    let back = dir.path().join("back.npy");
    refused(
        dir.path(),
        &["untile", path_str(&tiled), "--output", path_str(&back)],
        &["x.bin", "holds 4294967296 bytes", &capacity],
    );
    // The sidecar itself 4 GiB long.
    let sidecar = dir.path().join("x.bin.json");
    File::options()
        .write(true)
        .open(&sidecar)
        .unwrap()
        .set_len(BIG)
        .unwrap();
    refused(
        dir.path(),
        &["untile", path_str(&tiled), "--output", path_str(&back)],
        &[
            "x.bin.json",
            "holds 4294967296 bytes, more than the 1048576",
        ],
    );
}

#[test]
fn an_npy_header_longer_than_the_first_read_is_read_whole() {
    // A version-2 header of 100,000 bytes (past the 64 KiB read first), then 3 floats.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("long.npy");
    let mut header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }".to_vec();
    while !(12 + header.len() + 1).is_multiple_of(64) || header.len() < 100_000 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&header);
    for x in [1.0f32, -2.5, 300.0] {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    fs::write(&input, &bytes).unwrap();
    let output = dir.path().join("q.npy");
    assert_success(&simak(&[
        "quant",
        "-q",
        "--input",
        path_str(&input),
        "--output",
        path_str(&output),
        "--multiplier",
        "1",
    ]));
    let (shape, data, descr, _) = read_npy(&output);
    assert_eq!((shape, descr.as_str()), (vec![3], "|i1"));
    // q = saturate(round_half_even(x · 1)): 1, -2 (ties to even), 127.
    assert_eq!(data, [1u8, (-2i8) as u8, 127]);
}
