//! Hostile input files: a catalogue of malformed `.npy`, `.safetensors`, PNG and JPEG files,
//! every one generated here from code (no binary fixtures).
//!
//! Each case must give exit 2, exactly one stderr line `simak: error: …` naming the file,
//! nothing on stdout and no output or temporary file. Cases whose header claims gigabytes
//! also run with a bounded address space (`prlimit --as`), so an allocation driven by the
//! header's claim fails loudly (abort, not exit 2), and their peak resident set is read from
//! `/usr/bin/time -v`. When `prlimit` or `/usr/bin/time` is missing, those cases fall back to
//! the plain exit-2 check (noted on stderr of the test).
//!
//! Zero-dimensional and zero-size tensors are valid (SPEC §2): the catalogue ends with
//! `simak quant` succeeding on them, with the expected outputs.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use safetensors::SafeTensors;

/// Address-space limit for the "claims gigabytes" runs: far below any claim they make.
const AS_LIMIT: u64 = 1 << 30;
/// Peak resident set allowed for those runs (KiB).
const MAX_RSS_KIB: u64 = 200 * 1024;

/// The command a case runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cmd {
    Quant,
    CastTess,
}

struct Case {
    /// File name (its extension selects the reader).
    file: String,
    bytes: Vec<u8>,
    /// Words the error line must contain besides the file's path.
    mentions: Vec<&'static str>,
    /// The header claims far more data than the file holds: check bounded memory.
    huge_claim: bool,
    cmd: Cmd,
}

fn case(file: &str, bytes: Vec<u8>, mentions: &[&'static str]) -> Case {
    let cmd = if file.ends_with(".png") || file.ends_with(".jpg") {
        Cmd::CastTess
    } else {
        Cmd::Quant
    };
    Case {
        file: file.to_owned(),
        bytes,
        mentions: mentions.to_vec(),
        huge_claim: false,
        cmd,
    }
}

fn huge(mut c: Case) -> Case {
    c.huge_claim = true;
    c
}

// ---------------------------------------------------------------------------------------
// .npy builders

/// A version `major.minor` `.npy` file with the header dict `dict` (padded to 64 bytes and
/// ended by a newline), followed by `data`.
fn npy_v(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let len_size = if major == 1 { 2 } else { 4 };
    let mut text = dict.to_owned();
    while !(8 + len_size + text.len() + 1).is_multiple_of(64) {
        text.push(' ');
    }
    text.push('\n');
    let mut bytes = b"\x93NUMPY".to_vec();
    bytes.extend_from_slice(&[major, 0]);
    if major == 1 {
        bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
    } else {
        bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
    }
    bytes.extend_from_slice(text.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    npy_v(
        1,
        &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"),
        data,
    )
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn npy_cases() -> Vec<Case> {
    let good = npy("<f4", "(2, 2)", &f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
    let m = "malformed .npy";
    let mut v = vec![
        case("empty.npy", Vec::new(), &[m]),
        case("truncated-magic.npy", b"\x93NUM".to_vec(), &[m]),
        case("truncated-header.npy", good[..40].to_vec(), &[m]),
        case("truncated-length.npy", good[..9].to_vec(), &[m]),
    ];
    // Header length beyond the file: version 1 (u16) and version 2 (u32, 4 GiB claimed).
    let mut beyond = good.clone();
    beyond[8..10].copy_from_slice(&0xfff0u16.to_le_bytes());
    v.push(case("header-len-beyond-file.npy", beyond, &[m]));
    let mut beyond2 = npy_v(
        2,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
        &[0; 4],
    );
    beyond2[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    v.push(huge(case("header-len-4gib.npy", beyond2, &[m])));
    let mut bad_magic = good.clone();
    bad_magic[1] = b'X';
    v.push(case("bad-magic.npy", bad_magic, &[m]));
    let mut bad_version = good.clone();
    bad_version[6] = 9;
    v.push(case("bad-version.npy", bad_version, &[m]));
    v.extend([
        case(
            "unparsable-dict.npy",
            npy_v(
                1,
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,",
                &[0; 8],
            ),
            &[m],
        ),
        case("dict-is-a-list.npy", npy_v(1, "[1, 2, 3]", &[0; 8]), &[m]),
        case(
            "missing-shape.npy",
            npy_v(1, "{'descr': '<f4', 'fortran_order': False, }", &[0; 8]),
            &[m],
        ),
        case("negative-extent.npy", npy("<f4", "(-1, 2)", &[0; 8]), &[m]),
        case(
            "non-utf8-header.npy",
            npy_v(
                1,
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), '~~': 1}",
                &[0; 8],
            )
            .into_iter()
            .map(|b| if b == b'~' { 0xff } else { b })
            .collect(),
            &[m],
        ),
        case(
            "data-short.npy",
            npy("<f4", "(4, 4)", &[0; 60]),
            &[m, "needs 64"],
        ),
        case(
            "extra-bytes.npy",
            npy("<f4", "(2,)", &[0; 12]),
            &[m, "needs 8"],
        ),
        case(
            "shape-overflow.npy",
            npy("<f4", "(1099511627776, 1099511627776)", &[0; 16]),
            &[m],
        ),
        case(
            "size-overflow.npy",
            npy("<f4", "(4611686018427387904,)", &[0; 16]),
            &[m],
        ),
        huge(case(
            "claims-4gib.npy",
            npy("<f4", "(1073741824,)", &[0; 16]),
            &[m, "needs 4294967296"],
        )),
        huge(case(
            "claims-16gib-2d.npy",
            npy("<f2", "(65536, 131072)", &[0; 16]),
            &[m],
        )),
        case(
            "float64.npy",
            npy("<f8", "(2,)", &[0; 16]),
            &["<f8", "not supported"],
        ),
        case("int32.npy", npy("<i4", "(2,)", &[0; 8]), &["not supported"]),
        case("bogus-dtype.npy", npy("<z9", "(2,)", &[0; 8]), &[m]),
        case(
            "structured-dtype.npy",
            npy_v(
                1,
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                &[0; 8],
            ),
            &["not supported"],
        ),
        case(
            "fortran-garbage.npy",
            npy_v(
                1,
                "{'descr': '<f4', 'fortran_order': 'maybe', 'shape': (2,), }",
                &[0; 8],
            ),
            &[m],
        ),
    ]);
    v
}

// ---------------------------------------------------------------------------------------
// .safetensors builders

fn st_with_len(len: u64, header: &str, data: &[u8]) -> Vec<u8> {
    let mut bytes = len.to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

fn st(header: &str, data: &[u8]) -> Vec<u8> {
    st_with_len(header.len() as u64, header, data)
}

fn st_cases() -> Vec<Case> {
    let m = "malformed safetensors";
    let one = r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
    let good = st(one, &[0; 16]);
    vec![
        case("empty.safetensors", Vec::new(), &[m]),
        case("truncated-length.safetensors", good[..5].to_vec(), &[m]),
        case("truncated-header.safetensors", good[..30].to_vec(), &[m]),
        case(
            "truncated-data.safetensors",
            good[..good.len() - 3].to_vec(),
            &[m],
        ),
        case(
            "header-len-beyond-file.safetensors",
            st_with_len(1000, one, &[0; 16]),
            &[m],
        ),
        huge(case(
            "header-len-2pow63.safetensors",
            st_with_len(1 << 63, one, &[0; 16]),
            &[m],
        )),
        huge(case(
            "header-len-u64max.safetensors",
            st_with_len(u64::MAX, one, &[0; 16]),
            &[m],
        )),
        case("non-json.safetensors", st("this is not json", &[]), &[m]),
        case("header-is-a-list.safetensors", st("[1, 2, 3]", &[]), &[m]),
        case(
            "overlapping.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}"#,
                &[0; 24],
            ),
            &[m],
        ),
        case(
            "beyond-data.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[400],"data_offsets":[0,1600]}}"#,
                &[0; 32],
            ),
            &[m],
        ),
        case(
            "end-before-begin.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}}"#,
                &[0; 16],
            ),
            &[m],
        ),
        case(
            "gap.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}"#,
                &[0; 24],
            ),
            &[m],
        ),
        case("trailing-data.safetensors", st(one, &[0; 32]), &[m]),
        case(
            "shape-bytes-mismatch.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}}"#,
                &[0; 12],
            ),
            &[m],
        ),
        case(
            "shape-overflow.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[1099511627776,1099511627776,1099511627776],"data_offsets":[0,16]}}"#,
                &[0; 16],
            ),
            &[m],
        ),
        huge(case(
            "claims-4gib.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[1073741824],"data_offsets":[0,4294967296]}}"#,
                &[0; 16],
            ),
            &[m],
        )),
        case(
            "unknown-dtype.safetensors",
            st(
                r#"{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}"#,
                &[0; 16],
            ),
            &[m],
        ),
        case(
            "unsupported-dtype.safetensors",
            st(
                r#"{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}"#,
                &[0; 16],
            ),
            &["no F32, BF16 or F16 tensor"],
        ),
        case(
            "duplicate-names.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}"#,
                &[0; 16],
            ),
            &[m],
        ),
        // Duplicated names whose last description is self-consistent: serde's map keeps
        // the last one, so only an explicit check refuses them.
        case(
            "duplicate-identical.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                &[0; 8],
            ),
            &[m, "`a` twice"],
        ),
        case(
            "duplicate-decoy.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                &[0; 8],
            ),
            &[m, "`a` twice"],
        ),
        case(
            "metadata-not-strings.safetensors",
            st(
                r#"{"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
                &[0; 16],
            ),
            &[m],
        ),
        case(
            "missing-offsets.safetensors",
            st(r#"{"a":{"dtype":"F32","shape":[4]}}"#, &[0; 16]),
            &[m],
        ),
        case(
            "negative-extent.safetensors",
            st(
                r#"{"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}}"#,
                &[0; 16],
            ),
            &[m],
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Images

/// CRC-32 (IEEE) as PNG chunks use it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn small_rgb() -> image::RgbImage {
    image::RgbImage::from_fn(32, 24, |x, y| image::Rgb([x as u8 * 7, y as u8 * 9, 77]))
}

fn png_bytes() -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    small_rgb()
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

fn jpeg_bytes() -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    small_rgb()
        .write_to(&mut out, image::ImageFormat::Jpeg)
        .unwrap();
    out.into_inner()
}

/// A 128 × 96 JPEG of pseudo-random pixels: most of its bytes are the scan.
fn noisy_jpeg_bytes() -> Vec<u8> {
    let mut state = 0x2545_f491_u32;
    let img = image::RgbImage::from_fn(128, 96, |_, _| {
        let mut px = [0u8; 3];
        for p in &mut px {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            *p = state as u8;
        }
        image::Rgb(px)
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
    out.into_inner()
}

/// The PNG with its IHDR width and height replaced (CRC recomputed).
fn png_with_size(width: u32, height: u32) -> Vec<u8> {
    let mut png = png_bytes();
    assert_eq!(&png[12..16], b"IHDR");
    png[16..20].copy_from_slice(&width.to_be_bytes());
    png[20..24].copy_from_slice(&height.to_be_bytes());
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    png
}

/// The JPEG with its SOF0 height and width replaced.
fn jpeg_with_size(width: u16, height: u16) -> Vec<u8> {
    let mut jpg = jpeg_bytes();
    let sof = jpg
        .windows(2)
        .position(|w| w == [0xff, 0xc0])
        .expect("a baseline JPEG has SOF0");
    jpg[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    jpg[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    jpg
}

fn image_cases() -> Vec<Case> {
    let png = png_bytes();
    let jpg = jpeg_bytes();
    let mut bad_crc = png.clone();
    // The first byte of IDAT's data (its chunk header follows IHDR and any other chunk).
    let idat = bad_crc.windows(4).position(|w| w == b"IDAT").expect("IDAT");
    bad_crc[idat + 6] ^= 0x55;
    let mut ihdr_crc = png.clone();
    ihdr_crc[30] ^= 1;
    let mut corrupt_jpeg = jpg.clone();
    let n = corrupt_jpeg.len();
    for b in &mut corrupt_jpeg[n / 3..n - 2] {
        *b = 0xff;
    }
    vec![
        case("truncated.png", png[..png.len() / 2].to_vec(), &["png"]),
        case("signature-only.png", png[..8].to_vec(), &["png"]),
        case("bad-idat-crc.png", bad_crc, &["png"]),
        case("bad-ihdr-crc.png", ihdr_crc, &["png"]),
        huge(case(
            "huge-dimensions.png",
            png_with_size(1 << 20, 1 << 20),
            &["png", "limits"],
        )),
        huge(case(
            "just-past-the-limit.png",
            png_with_size(16385, 16385),
            &["png", "limits"],
        )),
        // Within the decoder's side limit, but 16384² pixels make a 3 GiB FP32 tensor: refused
        // from the header (a blank PNG of this size is a ~260 KB file).
        huge(case(
            "huge-tensor.png",
            png_with_size(16384, 16384),
            &["png", "16384 x 16384", "FP32 tensor", "limit"],
        )),
        case("zero-size.png", png_with_size(0, 0), &["png"]),
        case("zero-width.png", png_with_size(0, 24), &["png"]),
        case("corrupt.jpg", corrupt_jpeg, &["jpeg"]),
        case("truncated.jpg", jpg[..jpg.len() / 2].to_vec(), &["jpeg"]),
        // Cut inside the entropy-coded scan of a larger image: a lenient decoder fills the
        // rest with grey and succeeds (the `image` crate's default did).
        case(
            "truncated-scan.jpg",
            {
                let noisy = noisy_jpeg_bytes();
                noisy[..noisy.len() * 3 / 4].to_vec()
            },
            &["jpeg", "malformed"],
        ),
        case("soi-only.jpg", vec![0xff, 0xd8, 0xff], &[]),
        huge(case(
            "huge-dimensions.jpg",
            jpeg_with_size(65000, 65000),
            &["jpeg"],
        )),
        case("zero-size.jpg", jpeg_with_size(0, 0), &["jpeg"]),
        case("text.png", b"not an image at all".to_vec(), &[]),
    ]
}

// ---------------------------------------------------------------------------------------
// Running

fn args_of(c: &Case, input: &Path, out_dir: &Path) -> Vec<String> {
    let s = |x: &str| x.to_owned();
    match c.cmd {
        Cmd::Quant => {
            let ext = if c.file.ends_with(".npy") {
                "npy"
            } else {
                "safetensors"
            };
            vec![
                s("quant"),
                s("--input"),
                s(path_str(input)),
                s("--output"),
                s(path_str(&out_dir.join(format!("out.{ext}")))),
                s("--multiplier"),
                s("2"),
            ]
        }
        Cmd::CastTess => vec![
            s("casttess"),
            s("--input"),
            s(path_str(input)),
            s("--output"),
            s(path_str(&out_dir.join("out.bin"))),
            s("--axes"),
            s("-1,0,1,2"),
            s("--tile"),
            s("1,8,8,3"),
        ],
    }
}

fn have(tool: &str) -> bool {
    Path::new(tool).exists()
}

/// Runs simak under `prlimit --as` and `/usr/bin/time -v` when they exist; returns the output
/// and the peak resident set (KiB) when measured.
fn run_bounded(args: &[String], report: &Path) -> (Output, Option<u64>) {
    let prlimit = ["/usr/bin/prlimit", "/bin/prlimit"]
        .into_iter()
        .find(|p| have(p));
    let time = have("/usr/bin/time");
    let mut argv: Vec<String> = Vec::new();
    if let Some(p) = prlimit {
        argv.extend([p.to_owned(), format!("--as={AS_LIMIT}"), "--".to_owned()]);
    }
    if time {
        argv.extend([
            "/usr/bin/time".to_owned(),
            "-v".to_owned(),
            "-o".to_owned(),
            path_str(report).to_owned(),
        ]);
    }
    if prlimit.is_none() || !time {
        eprintln!(
            "note: prlimit or /usr/bin/time missing: memory bound only partly checked (exit 2 still is)"
        );
    }
    argv.push(BIN.to_owned());
    argv.extend(args.iter().cloned());
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .expect("the wrapped simak runs");
    let rss = time
        .then(|| fs::read_to_string(report).ok())
        .flatten()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
                .and_then(|v| v.trim().parse().ok())
        });
    (out, rss)
}

#[test]
fn hostile_files_are_bad_input_with_bounded_memory() {
    let cases: Vec<Case> = npy_cases()
        .into_iter()
        .chain(st_cases())
        .chain(image_cases())
        .collect();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let inputs = tempfile::tempdir().unwrap();
    let outs = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for c in &cases {
        let input = inputs.path().join(&c.file);
        fs::write(&input, &c.bytes).unwrap();
        let args = args_of(c, &input, outs.path());
        let before = listing(outs.path());
        let (out, rss) = if c.huge_claim {
            run_bounded(&args, &scratch.path().join("time.txt"))
        } else {
            (simak(&args), None)
        };
        let err = stderr_of(&out);
        let mut problems = Vec::new();
        if out.status.code() != Some(2) {
            problems.push(format!("exit {:?}", out.status.code()));
        }
        if err.lines().count() != 1 || !err.starts_with("simak: error: ") {
            problems.push("not exactly one `simak: error:` line".to_owned());
        }
        for m in std::iter::once(path_str(&input)).chain(c.mentions.iter().copied()) {
            if !err.contains(m) {
                problems.push(format!("does not mention {m:?}"));
            }
        }
        if !out.stdout.is_empty() {
            problems.push(format!("stdout: {}", stdout_of(&out)));
        }
        if listing(outs.path()) != before {
            problems.push(format!("output folder changed: {:?}", listing(outs.path())));
        }
        if let Some(kib) = rss
            && kib > MAX_RSS_KIB
        {
            problems.push(format!("peak RSS {kib} KiB"));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {} — stderr {err:?}",
                c.file,
                problems.join("; ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(listing(outs.path()).is_empty());
}

// ---------------------------------------------------------------------------------------
// Zero-dimensional and zero-size tensors are valid (SPEC §2).

fn quant_ok(input: &Path, output: &Path) {
    let (out, _) = run_bounded(
        &[
            "quant".to_owned(),
            "--input".to_owned(),
            path_str(input).to_owned(),
            "--output".to_owned(),
            path_str(output).to_owned(),
            "--multiplier".to_owned(),
            "2".to_owned(),
        ],
        &output.with_extension("time.txt"),
    );
    assert_success(&out);
}

#[test]
fn zero_dimensional_and_zero_size_tensors_quantize() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // A 0-d scalar: 3.0 × 2 = 6.
    let scalar = d.join("scalar.npy");
    fs::write(&scalar, npy("<f4", "()", &f32_bytes(&[3.0]))).unwrap();
    let out = d.join("scalar-q.npy");
    quant_ok(&scalar, &out);
    let (shape, data, descr, _) = read_npy(&out);
    assert!(shape.is_empty(), "{shape:?}");
    assert_eq!(data, [6u8]);
    assert_eq!(descr, "|i1");

    // A (0, 5) array.
    let empty = d.join("empty.npy");
    fs::write(&empty, npy("<f4", "(0, 5)", &[])).unwrap();
    let out = d.join("empty-q.npy");
    quant_ok(&empty, &out);
    let (shape, data, descr, _) = read_npy(&out);
    assert_eq!(shape, [0, 5]);
    assert!(data.is_empty());
    assert_eq!(descr, "|i1");

    // A safetensors file with a zero extent tensor next to a normal one.
    let st_in = d.join("zero.safetensors");
    fs::write(
        &st_in,
        st(
            r#"{"a":{"dtype":"F32","shape":[2,0,3],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}"#,
            &f32_bytes(&[1.0, -2.5, 3.0]),
        ),
    )
    .unwrap();
    let out = d.join("zero-q.safetensors");
    quant_ok(&st_in, &out);
    let bytes = fs::read(&out).unwrap();
    let q = SafeTensors::deserialize(&bytes).unwrap();
    let a = q.tensor("a").unwrap();
    assert_eq!(a.dtype(), safetensors::Dtype::I8);
    assert_eq!(a.shape(), [2, 0, 3]);
    assert!(a.data().is_empty());
    let b = q.tensor("b").unwrap();
    assert_eq!(b.dtype(), safetensors::Dtype::I8);
    assert_eq!(b.shape(), [3]);
    assert_eq!(b.data(), [2u8, (-5i8) as u8, 6]);

    let names: Vec<PathBuf> = fs::read_dir(d)
        .unwrap()
        .map(|e| PathBuf::from(e.unwrap().file_name()))
        .filter(|p| p.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
}
