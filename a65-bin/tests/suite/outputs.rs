//! What the `simak` binary does to the files it writes: only files named on the command
//! line are replaced, extensions match the format written, symbolic links are written
//! through, a tiled buffer and its sidecar are one unit, modes follow the umask or the
//! replaced file, unwritable paths are refused before any work, and a closed or full
//! standard output is not a crash.

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

/// A C-order float32 `.npy` of `values` with `shape`.
fn write_f32_npy(path: &Path, shape: &[u64], values: &[f32]) {
    use npyz::WriterBuilder;
    let mut bytes = Vec::new();
    let mut w = npyz::WriteOptions::<f32>::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut bytes)
        .begin_nd()
        .unwrap();
    w.extend(values.iter().copied()).unwrap();
    w.finish().unwrap();
    fs::write(path, bytes).unwrap();
}

/// The element values of a float32 `.npy` written by `simak untile`.
fn read_f32_npy(path: &Path) -> Vec<f32> {
    let bytes = fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    npy.into_vec::<f32>().unwrap()
}

fn casttess_args<'a>(input: &'a Path, output: &'a Path) -> Vec<&'a str> {
    vec![
        "casttess",
        "-q",
        "--input",
        path_str(input),
        "--output",
        path_str(output),
        "--axes",
        "-1,0,1,-1",
        "--tile",
        "1,4,8,1",
    ]
}

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// `casttess --input x.npy --output x.bin` then `untile x.bin` used to replace the FP32
/// `x.npy` with its BF16-rounded values: the derived default name is refused when it exists,
/// naming it, and the input is left as it was; `--output` names it explicitly.
#[test]
fn untile_never_replaces_a_file_it_was_not_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = d.join("x.npy");
    let values: Vec<f32> = (0..64).map(|i| i as f32 * 1.001).collect();
    write_f32_npy(&x, &[8, 8], &values);
    let original = fs::read(&x).unwrap();
    let tiled = d.join("x.bin");
    assert_success(&simak(&casttess_args(&x, &tiled)));
    let before = listing(d);
    let out = simak(&["untile", path_str(&tiled)]);
    assert_bad(&out, &[path_str(&x), "exists", "--output PATH"]);
    assert_eq!(fs::read(&x).unwrap(), original, "x.npy is untouched");
    assert_eq!(listing(d), before);
    // A default name that does not exist is fine.
    fs::remove_file(&x).unwrap();
    assert_success(&simak(&["untile", "-q", path_str(&tiled)]));
    assert!(x.exists());
    // Named with --output, it may be replaced.
    fs::write(&x, b"old").unwrap();
    assert_success(&simak(&[
        "untile",
        "-q",
        path_str(&tiled),
        "--output",
        path_str(&x),
    ]));
    let bf16: Vec<f32> = values
        .iter()
        .map(|v| f32::from_bits(((v.to_bits() + 0x7fff + ((v.to_bits() >> 16) & 1)) >> 16) << 16))
        .collect();
    assert_eq!(read_f32_npy(&x), bf16);
}

/// The output's extension must match the format written.
#[test]
fn output_extensions_must_match_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = d.join("x.npy");
    write_f32_npy(&x, &[8, 8], &[0.5; 64]);
    let tiled = d.join("t.bin");
    assert_success(&simak(&casttess_args(&x, &tiled)));
    let before = listing(d);
    let cases: Vec<(Vec<String>, PathBuf)> = vec![
        (
            vec![
                "untile".into(),
                tiled.display().to_string(),
                "--output".into(),
            ],
            d.join("out.safetensors"),
        ),
        (
            vec![
                "quant".into(),
                "--input".into(),
                x.display().to_string(),
                "--multiplier".into(),
                "2".into(),
                "--output".into(),
            ],
            d.join("q.bin"),
        ),
        (
            {
                let mut a: Vec<String> = casttess_args(&x, Path::new("unused"))
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect();
                let at = a.iter().position(|s| s == "--output").unwrap();
                a.remove(at + 1);
                a.remove(at);
                a.push("--output".into());
                a
            },
            d.join("t.npy"),
        ),
        (
            vec![
                "layout".into(),
                "--shape".into(),
                "2,3".into(),
                "--axes".into(),
                "-1,-1,0,1".into(),
                "--tile".into(),
                "1,1,2,3".into(),
                "--svg".into(),
            ],
            d.join("l.png"),
        ),
    ];
    for (mut args, output) in cases {
        args.push(output.display().to_string());
        let out = simak(&args);
        assert_bad(&out, &[path_str(&output)]);
        assert_eq!(listing(d), before, "{args:?}");
    }
}

/// An output that is a symbolic link is written through to its target (also a dangling
/// link's), never replaced by a regular file.
#[test]
fn symbolic_link_outputs_are_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = d.join("x.npy");
    write_f32_npy(&x, &[4], &[1.0, 2.0, -3.0, 0.25]);
    fs::create_dir(d.join("real")).unwrap();
    let target = d.join("real").join("q.npy");
    fs::write(&target, b"old").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
    let link = d.join("link.npy");
    std::os::unix::fs::symlink("real/q.npy", &link).unwrap();
    let quant = |output: &Path| {
        simak(&[
            "quant",
            "-q",
            "--input",
            path_str(&x),
            "--output",
            path_str(output),
            "--multiplier",
            "4",
        ])
    };
    assert_success(&quant(&link));
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let bytes = fs::read(&target).unwrap();
    assert_eq!(&bytes[bytes.len() - 4..], &[4u8, 8, (-12i8) as u8, 1]);
    assert_eq!(mode_of(&target), 0o640, "the target keeps its mode");
    // A dangling link: its target is created.
    let dangling = d.join("dangling.npy");
    std::os::unix::fs::symlink("real/new.npy", &dangling).unwrap();
    assert_success(&quant(&dangling));
    assert!(
        fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read(d.join("real/new.npy")).unwrap(), bytes);
}

/// Concurrent casttess runs writing the same buffer and sidecar: `untile` either reads a
/// pair from one run (its bytes exactly) or refuses the mixed pair, naming both files. A
/// sidecar without a checksum is refused with a hint.
#[test]
fn a_tiled_buffer_and_its_sidecar_are_one_unit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    const RUNS: usize = 6;
    let n = 256 * 256;
    let mut inputs = Vec::new();
    let mut expected = Vec::new();
    for k in 0..RUNS {
        // Different values and shapes (the same capacity), so every run's pair differs.
        let values: Vec<f32> = (0..n).map(|i| (i * (k + 1)) as f32 + 0.5).collect();
        let input = d.join(format!("in{k}.npy"));
        let shape: [u64; 2] = if k % 2 == 0 { [256, 256] } else { [128, 512] };
        write_f32_npy(&input, &shape, &values);
        expected.push(values);
        inputs.push(input);
    }
    let pair = d.join("pair.bin");
    let logical = d.join("logical.npy");
    let (mut accepted, mut refused) = (0, 0);
    for _trial in 0..12 {
        let children: Vec<_> = inputs
            .iter()
            .map(|input| {
                Command::new(BIN)
                    .args(casttess_args(input, &pair))
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let _ = fs::remove_file(&logical);
        let out = simak(&[
            "untile",
            "-q",
            path_str(&pair),
            "--output",
            path_str(&logical),
        ]);
        if out.status.success() {
            let got = read_f32_npy(&logical);
            let bf16 = |v: &f32| {
                let b = v.to_bits();
                f32::from_bits(((b + 0x7fff + ((b >> 16) & 1)) >> 16) << 16)
            };
            assert!(
                expected
                    .iter()
                    .any(|e| e.iter().map(bf16).collect::<Vec<_>>() == got),
                "untile accepted a pair whose values are no run's"
            );
            accepted += 1;
        } else {
            assert_bad(&out, &[path_str(&pair), "pair.bin.json", "different runs"]);
            refused += 1;
        }
    }
    eprintln!("{accepted} pairs accepted, {refused} mixed pairs refused");
    assert!(accepted > 0, "{refused} refused, none accepted");
    // The mixed pair, made on purpose: run 1's buffer (same capacity, other shape) with run
    // 0's sidecar.
    let a = d.join("a.bin");
    let b = d.join("b.bin");
    assert_success(&simak(&casttess_args(&inputs[0], &a)));
    assert_success(&simak(&casttess_args(&inputs[1], &b)));
    fs::copy(&b, &a).unwrap();
    let out = simak(&["untile", path_str(&a), "--output", path_str(&logical)]);
    assert_bad(&out, &[path_str(&a), "a.bin.json", "different runs"]);
    // A sidecar without the checksum (an older simak's) is refused with a hint.
    let side = d.join("pair.bin.json");
    let mut json: serde_json::Value = serde_json::from_slice(&fs::read(&side).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("buffer_crc32");
    fs::write(&side, serde_json::to_vec(&json).unwrap()).unwrap();
    let out = simak(&["untile", path_str(&pair), "--output", path_str(&logical)]);
    assert_bad(&out, &["buffer_crc32", "re-run"]);
}

/// Under a 022 umask, a new output is 0644 however many writers race to create it (one
/// used to leave it 0666), and a replaced output keeps its mode.
#[test]
fn new_outputs_follow_the_umask_even_with_concurrent_writers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = d.join("x.npy");
    write_f32_npy(&x, &[1024], &[0.5; 1024]);
    for trial in 0..10 {
        let output = d.join(format!("q{trial}.npy"));
        let children: Vec<_> = (0..8)
            .map(|_| {
                Command::new("sh")
                    .arg("-c")
                    .arg(r#"umask 022 && exec "$@""#)
                    .arg("sh")
                    .arg(BIN)
                    .args(["quant", "-q", "--input", path_str(&x), "--output"])
                    .arg(&output)
                    .args(["--multiplier", "2"])
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        assert_eq!(mode_of(&output), 0o644, "trial {trial}");
    }
    let kept = d.join("q0.npy");
    fs::set_permissions(&kept, fs::Permissions::from_mode(0o600)).unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 077 && exec "$@""#)
        .arg("sh")
        .arg(BIN)
        .args(["quant", "-q", "--input", path_str(&x), "--output"])
        .arg(&kept)
        .args(["--multiplier", "3"])
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(mode_of(&kept), 0o600);
}

/// Output paths that cannot be written are refused before any work (exit 2, naming the
/// path): a trailing slash, a file name too long for the filesystem, a missing folder, a
/// folder where no file can be created. They used to be found after all the work, as an
/// internal error (exit 1).
#[test]
fn unwritable_output_paths_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = d.join("x.npy");
    write_f32_npy(&x, &[16], &[0.5; 16]);
    let long = d.join(format!("{}.npy", "n".repeat(300)));
    let mut paths: Vec<(String, &str)> = vec![
        (format!("{}/", d.join("out.npy").display()), "separator"),
        (long.display().to_string(), "limit"),
        (
            d.join("missing").join("q.npy").display().to_string(),
            "does not exist",
        ),
        // Not even root can create files in /proc.
        (
            "/proc/simak-test-output.npy".to_owned(),
            "cannot create a file",
        ),
    ];
    let read_only = d.join("read-only");
    fs::create_dir(&read_only).unwrap();
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o555)).unwrap();
    let probe = read_only.join(".probe");
    let root = fs::write(&probe, b"").is_ok();
    let _ = fs::remove_file(&probe);
    if !root {
        paths.push((
            read_only.join("q.npy").display().to_string(),
            "cannot create a file",
        ));
    }
    for (npy_path, why) in &paths {
        for command in ["quant", "casttess", "untile"] {
            // casttess writes raw bytes: the same paths with .bin.
            let bin_path = npy_path.replacen(".npy", ".bin", 1);
            let path = if command == "casttess" {
                &bin_path
            } else {
                npy_path
            };
            let args: Vec<&str> = match command {
                "quant" => vec![
                    "quant",
                    "--input",
                    path_str(&x),
                    "--multiplier",
                    "1",
                    "--output",
                    path,
                ],
                "casttess" => {
                    let mut a = casttess_args(&x, Path::new(path));
                    a.retain(|s| *s != "-q");
                    a
                }
                _ => vec!["untile", "nonexistent.bin", "--output", path],
            };
            let out = simak(&args);
            if command == "untile" {
                // The buffer is named first when it is missing.
                assert_eq!(out.status.code(), Some(2));
                continue;
            }
            let shown = path.trim_end_matches('/');
            assert_bad(&out, &[shown, why]);
        }
    }
    assert_eq!(
        listing(d),
        BTreeSet::from(["x.npy".to_owned(), "read-only".to_owned()])
    );
}

/// `bench` prints through the same fallible path as every command: a closed pipe (`| head
/// -1`) is not an error and a full disk behind stdout is exit 1 with one line; neither
/// panics.
#[test]
fn bench_survives_a_closed_or_full_stdout() {
    let args = ["bench", "quant", "--elements", "4096", "--reps", "3"];
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out: Output = child.wait_with_output().unwrap();
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{:?} {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(BIN).args(args).stdout(full).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("standard output: cannot write"), "{stderr}");
}

/// A sidecar whose fields were edited into another valid layout (a tile extent, the shape,
/// the axes) is refused by its own checksum instead of being read as that layout.
#[test]
fn an_edited_sidecar_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x = d.join("x.npy");
    let values: Vec<f32> = (0..20 * 30).map(|i| i as f32).collect();
    write_f32_npy(&x, &[20, 30], &values);
    let tiled = d.join("t.bin");
    assert_success(&simak(&casttess_args(&x, &tiled)));
    let side = d.join("t.bin.json");
    let original: serde_json::Value = serde_json::from_slice(&fs::read(&side).unwrap()).unwrap();
    let logical = d.join("y.npy");
    // A transposed shape with swapped H and W axes: the same tile grid, capacity and tile
    // counts (every structural check passes), but another reading of the bytes.
    let mut swapped = original.clone();
    swapped["shape"] = serde_json::json!([30, 20]);
    swapped["axes"] = serde_json::json!([-1, 1, 0, -1]);
    // A tile change: caught by the layout rules already.
    let mut retiled = original.clone();
    retiled["tile"] = serde_json::json!([1, 4, 4, 1]);
    for (edited, mention) in [(swapped, "edited"), (retiled, "tiles_per_outer")] {
        fs::write(&side, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
        let out = simak(&["untile", path_str(&tiled), "--output", path_str(&logical)]);
        assert_bad(&out, &["t.bin.json", mention]);
        assert!(!logical.exists(), "{mention}");
    }
    // Whitespace is not an edit.
    fs::write(&side, serde_json::to_vec(&original).unwrap()).unwrap();
    assert_success(&simak(&[
        "untile",
        "-q",
        path_str(&tiled),
        "--output",
        path_str(&logical),
    ]));
}

/// Interrupted while it replaces an existing buffer and sidecar, a run either exits 130
/// with the old pair intact or completes (exit 0) with the new pair: never a half-replaced
/// pair or a temporary file.
#[test]
fn an_interrupt_never_leaves_a_half_replaced_pair() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = d.join("small.npy");
    write_f32_npy(&small, &[64, 64], &vec![0.25; 64 * 64]);
    let big = d.join("big.npy");
    let n = 2048usize * 4096;
    let values: Vec<f32> = (0..n).map(|i| (i % 977) as f32).collect();
    write_f32_npy(&big, &[2048, 4096], &values);
    drop(values);
    let pair = d.join("pair.bin");
    let side = d.join("pair.bin.json");
    let (mut interrupted, mut completed) = (0, 0);
    for attempt in 0..16u64 {
        assert_success(&simak(&casttess_args(&small, &pair)));
        let (old_bin, old_json) = (fs::read(&pair).unwrap(), fs::read(&side).unwrap());
        let mut child = Command::new(BIN)
            .args(casttess_args(&big, &pair))
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20 + 25 * attempt));
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let status = child.wait().unwrap();
        let names = listing(d);
        assert!(
            names.iter().all(|n| !n.starts_with(".simak-")),
            "attempt {attempt}: a temporary file was left: {names:?}"
        );
        if status.success() {
            completed += 1;
            let out = simak(&[
                "untile",
                "-q",
                path_str(&pair),
                "--output",
                path_str(&d.join("y.npy")),
            ]);
            assert_success(&out);
        } else {
            assert_eq!(status.code(), Some(130), "attempt {attempt}: {status:?}");
            assert!(
                fs::read(&pair).unwrap() == old_bin,
                "attempt {attempt}: buffer replaced"
            );
            assert_eq!(
                fs::read(&side).unwrap(),
                old_json,
                "attempt {attempt}: sidecar replaced"
            );
            interrupted += 1;
        }
    }
    eprintln!("{interrupted} interrupted, {completed} completed");
    assert!(interrupted > 0, "no attempt was interrupted");
}

/// `-q` silences `bench` as every command (its `--json` still prints).
#[test]
fn bench_is_quiet_under_q() {
    let out = simak(&["-q", "bench", "quant", "--elements", "1024", "--reps", "1"]);
    assert_success(&out);
    assert!(out.stdout.is_empty(), "{}", stdout_of(&out));
    let out = simak(&[
        "-q",
        "bench",
        "quant",
        "--elements",
        "1024",
        "--reps",
        "1",
        "--json",
    ]);
    assert_success(&out);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["figures"].is_array());
}

/// An existing output that belongs to another user in a sticky folder (as in `/tmp`) is
/// refused before any work, naming the reason; the kernel would refuse the final rename.
/// Runs the tool as `nobody` (through `setpriv`), so it needs root.
#[test]
fn a_foreign_file_in_a_sticky_folder_is_refused_before_any_work() {
    if effective_uid() != 0 {
        eprintln!("not root: cannot make a file of another user; nothing to check");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
    let sticky = d.join("st");
    fs::create_dir(&sticky).unwrap();
    fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
    let x = sticky.join("x.npy");
    write_f32_npy(&x, &[4], &[1.0; 4]);
    fs::set_permissions(&x, fs::Permissions::from_mode(0o644)).unwrap();
    let foreign = sticky.join("root.npy");
    fs::write(&foreign, b"root's").unwrap();
    fs::set_permissions(&foreign, fs::Permissions::from_mode(0o666)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args([
            "quant",
            "--input",
            path_str(&x),
            "--multiplier",
            "1",
            "--output",
        ])
        .arg(&foreign)
        .output()
        .expect("setpriv runs");
    assert_bad(&out, &[path_str(&foreign), "sticky", "another user"]);
    assert_eq!(fs::read(&foreign).unwrap(), b"root's");
}

/// The effective user id, from `/proc/self/status` (no `unsafe`, no libc).
fn effective_uid() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|uid| uid.parse().ok())
        .unwrap()
}
