//! `simak detess` and `simak dequant` of the MLA's outputs (SPEC §12): OFM buffers built
//! here by an independent oracle of §12.1's byte formula (padding filled with garbage that
//! must never be read), read back with npyz and safetensors and compared with the logical
//! values; the dequantized values against §12.2 written out in the test; every bad input
//! with its code and no file written.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{assert_success, json_run, path_str, simak, stderr_of};

/// Encoding of a head, as the oracle knows it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Enc {
    Compact,
    Pad16,
    CBlock16,
}

/// One head: logical shape, roles (logical axis of D, H, W, C), tile, encoding, tile
/// alignment, element size E, and its values as little-endian codes (row-major).
struct Head {
    shape: Vec<u64>,
    axes: [Option<usize>; 4],
    tile: [u64; 4],
    enc: Enc,
    align: u64,
    e: usize,
}

/// A head of `shape` (row-major) with the roles `axes`, `tile`, encoding, tile alignment
/// and element size.
fn head(
    shape: Vec<u64>,
    axes: [Option<usize>; 4],
    tile: [u64; 4],
    enc: Enc,
    align: u64,
    e: usize,
) -> Head {
    Head {
        shape,
        axes,
        tile,
        enc,
        align,
        e,
    }
}

impl Head {
    fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// The tiled bytes of `codes` (row-major, each `e` bytes little-endian) by SPEC §12.1,
    /// padding bytes `0xa5`.
    fn encode(&self, codes: &[u32]) -> Vec<u8> {
        let rank = self.shape.len();
        let ext: [u64; 4] = std::array::from_fn(|r| self.axes[r].map_or(1, |a| self.shape[a]));
        let cnt: [u64; 4] = std::array::from_fn(|r| ext[r].div_ceil(self.tile[r]));
        let outer: Vec<usize> = (0..rank)
            .filter(|a| !self.axes.contains(&Some(*a)))
            .collect();
        let n_outer: u64 = outer.iter().map(|&a| self.shape[a]).product();
        let e = self.e as u64;
        let mut out = Vec::new();
        let row_major = |idx: &[u64]| -> usize {
            let mut lin = 0u64;
            for (&e, &i) in self.shape.iter().zip(idx) {
                lin = lin * e + i;
            }
            lin as usize
        };
        for o in 0..n_outer {
            // The outer index's coordinates, row-major over the outer axes.
            let mut oidx = vec![0u64; rank];
            let mut rest = o;
            for &a in outer.iter().rev() {
                oidx[a] = rest % self.shape[a];
                rest /= self.shape[a];
            }
            for ic in 0..cnt[3] {
                for id in 0..cnt[0] {
                    for ih in 0..cnt[1] {
                        for iw in 0..cnt[2] {
                            let i = [id, ih, iw, ic];
                            let t: [u64; 4] = std::array::from_fn(|r| {
                                self.tile[r].min(ext[r] - i[r] * self.tile[r])
                            });
                            let sc = match self.enc {
                                Enc::Compact => t[3],
                                _ => t[3].div_ceil(16) * 16,
                            };
                            let npix = t[0] * t[1] * t[2];
                            let size = (npix * sc * e).div_ceil(self.align) * self.align;
                            let base = out.len();
                            out.resize(base + size as usize, 0xa5);
                            for d in 0..t[0] {
                                for h in 0..t[1] {
                                    for w in 0..t[2] {
                                        let k = (d * t[1] + h) * t[2] + w;
                                        for c in 0..t[3] {
                                            let mut idx = oidx.clone();
                                            let local = [d, h, w, c];
                                            for r in 0..4 {
                                                if let Some(a) = self.axes[r] {
                                                    idx[a] = i[r] * self.tile[r] + local[r];
                                                }
                                            }
                                            let code = codes[row_major(&idx)];
                                            for p in 0..e {
                                                let at = match self.enc {
                                                    Enc::CBlock16 => {
                                                        (c / 16) * (npix * 16 * e)
                                                            + k * 16 * e
                                                            + p * 16
                                                            + c % 16
                                                    }
                                                    _ => k * sc * e + p * sc + c,
                                                };
                                                out[base + at as usize] = (code >> (8 * p)) as u8;
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The `--head` spec of this head (dtype given).
    fn spec(&self, dtype: &str, extra: &str) -> String {
        let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let axes: Vec<String> = self
            .axes
            .iter()
            .map(|a| a.map_or("-1".to_owned(), |a| a.to_string()))
            .collect();
        format!(
            "shape={}:axes={}:tile={}:channels={}:tile-align={}:dtype={dtype}{extra}",
            list(&self.shape),
            axes.join(","),
            list(&self.tile),
            match self.enc {
                Enc::Compact => "compact",
                Enc::Pad16 => "pad16",
                Enc::CBlock16 => "cblock16",
            },
            self.align
        )
    }
}

/// Deterministic codes (an LCG), `e` bytes each.
fn codes(n: u64, e: usize, seed: u32) -> Vec<u32> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let v = x ^ (x >> 13);
            match e {
                1 => v & 0xff,
                2 => v & 0xffff,
                _ => v,
            }
        })
        .collect()
}

/// A temporary folder of the test.
fn dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary folder")
}

fn heads() -> Vec<Head> {
    vec![
        // INT8 CBlock16 with boundary tiles on H, W and C (20 = 16 + 4), frames first.
        head(
            vec![2, 5, 7, 20],
            [None, Some(1), Some(2), Some(3)],
            [1, 3, 4, 16],
            Enc::CBlock16,
            16,
            1,
        ),
        // INT16 PadTo16, C = 18 in one C tile (stored 32), channels before space.
        head(
            vec![18, 3, 5],
            [None, Some(1), Some(2), Some(0)],
            [1, 2, 5, 18],
            Enc::Pad16,
            16,
            2,
        ),
        // INT32 Compact, tile alignment 1, boundary tiles on W and C.
        head(
            vec![3, 7, 5],
            [None, Some(0), Some(1), Some(2)],
            [1, 2, 3, 2],
            Enc::Compact,
            1,
            4,
        ),
    ]
}

fn npy_bytes(path: &Path) -> (Vec<u64>, String, Vec<u8>) {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).expect("npy");
    let shape = npy.shape().to_vec();
    let descr = npy.dtype().descr().trim_matches('\'').to_owned();
    let elem: usize = descr[2..].parse().expect("descr size");
    let n: u64 = shape.iter().product();
    let header_len = bytes.len() - n as usize * elem;
    (shape, descr, bytes[header_len..].to_vec())
}

/// The little-endian bytes of the row-major codes, `e` bytes each.
fn le(codes: &[u32], e: usize) -> Vec<u8> {
    codes
        .iter()
        .flat_map(|c| c.to_le_bytes()[..e].to_vec())
        .collect()
}

/// Writes the heads' tiled bytes back to back (running offsets) into `ofm`.
fn write_ofm(ofm: &Path, heads: &[Head], values: &[Vec<u32>]) -> Vec<u64> {
    let mut all = Vec::new();
    let mut offsets = Vec::new();
    for (h, v) in heads.iter().zip(values) {
        offsets.push(all.len() as u64);
        all.extend(h.encode(v));
    }
    fs::write(ofm, &all).expect("write ofm");
    offsets
}

#[test]
fn oracle_sizes_match_simas_fixtures() {
    // The oracle itself against SiMa's public sizes (SPEC §12.1), so that it can fail.
    let size = |shape: Vec<u64>, tile: [u64; 4], enc, align, e| {
        let n: u64 = shape.iter().product();
        head(
            shape,
            [None, Some(0), Some(1), Some(2)],
            tile,
            enc,
            align,
            e,
        )
        .encode(&vec![0; n as usize])
        .len()
    };
    assert_eq!(size(vec![2, 3, 33], [1, 2, 3, 33], Enc::Compact, 1, 2), 396);
    assert_eq!(size(vec![2, 3, 33], [1, 2, 3, 33], Enc::Pad16, 16, 2), 576);
    assert_eq!(
        size(vec![19, 19, 273], [1, 19, 19, 273], Enc::CBlock16, 16, 1),
        103_968
    );
    assert_eq!(
        size(vec![60, 80, 65], [1, 60, 80, 65], Enc::Pad16, 16, 1),
        384_000
    );
}

#[test]
fn multi_head_ofm_to_npy_per_head_matches_the_oracle() {
    let tmp = dir();
    let heads = heads();
    let values: Vec<Vec<u32>> = heads
        .iter()
        .enumerate()
        .map(|(k, h)| codes(h.elements(), h.e, k as u32))
        .collect();
    let ofm = tmp.path().join("ofm.bin");
    write_ofm(&ofm, &heads, &values);
    let outs: Vec<PathBuf> = (0..3)
        .map(|k| tmp.path().join(format!("h{k}.npy")))
        .collect();
    let mut args = vec!["detess".to_owned(), path_str(&ofm).to_owned(), "-q".into()];
    for (h, dt) in heads.iter().zip(["i8", "i16", "i32"]) {
        args.push("--head".into());
        args.push(h.spec(dt, ""));
    }
    for o in &outs {
        args.push("-o".into());
        args.push(path_str(o).to_owned());
    }
    assert_success(&simak(&args));
    for ((h, v), (o, descr)) in heads
        .iter()
        .zip(&values)
        .zip(outs.iter().zip(["|i1", "<i2", "<i4"]))
    {
        let (shape, d, data) = npy_bytes(o);
        assert_eq!(shape, h.shape);
        assert_eq!(d, descr);
        assert!(
            data == le(v, h.e),
            "{} differs from the oracle",
            o.display()
        );
    }
}

#[test]
fn multi_head_ofm_to_safetensors_with_bf16_and_output_order() {
    let tmp = dir();
    // A BF16 Compact head of SiMa's fixture shape (396 bytes), then an INT8 CBlock16 head
    // at an explicit, later offset (a gap the CLI must skip), both stored as NCHW-like
    // permutations of HWC: numpy.transpose(x, (2, 0, 1)).
    let bf = head(
        vec![2, 3, 33],
        [None, Some(0), Some(1), Some(2)],
        [1, 2, 3, 33],
        Enc::Compact,
        1,
        2,
    );
    let q = head(
        vec![4, 3, 17],
        [None, Some(0), Some(1), Some(2)],
        [1, 4, 2, 16],
        Enc::CBlock16,
        16,
        1,
    );
    let vb = codes(bf.elements(), 2, 7);
    let vq = codes(q.elements(), 1, 8);
    let mut ofm_bytes = bf.encode(&vb);
    assert_eq!(ofm_bytes.len(), 396);
    ofm_bytes.resize(400, 0x5a);
    ofm_bytes.extend(q.encode(&vq));
    let ofm = tmp.path().join("ofm.bin");
    fs::write(&ofm, &ofm_bytes).unwrap();
    let st = tmp.path().join("heads.safetensors");
    let out = simak(&[
        "detess",
        path_str(&ofm),
        "-q",
        "--head",
        &bf.spec("bf16", ":name=scores"),
        "--head",
        &q.spec("i8", ":name=boxes:offset=400"),
        "--output-order",
        "2,0,1",
        "-o",
        path_str(&st),
    ]);
    assert_success(&out);
    let bytes = fs::read(&st).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).expect("safetensors");
    for (name, h, v, dtype) in [
        ("scores", &bf, &vb, safetensors::Dtype::BF16),
        ("boxes", &q, &vq, safetensors::Dtype::I8),
    ] {
        let t = file.tensor(name).expect(name);
        assert_eq!(t.dtype(), dtype);
        let [a, b, c] = [
            h.shape[0] as usize,
            h.shape[1] as usize,
            h.shape[2] as usize,
        ];
        assert_eq!(t.shape(), [c, a, b]);
        // The transposed oracle: element (k, i, j) of the output is x[i, j, k].
        let mut want = Vec::new();
        for k in 0..c {
            for i in 0..a {
                for j in 0..b {
                    want.extend_from_slice(&v[(i * b + j) * c + k].to_le_bytes()[..h.e]);
                }
            }
        }
        assert!(
            t.data() == want.as_slice(),
            "{name} differs from the oracle"
        );
    }
}

/// SPEC §12.2 written out: d = q - zp exact, x = d rounded once to binary32, y = x / s
/// (one binary32 division in the test's default FP environment).
fn dequant_ref(q: i64, zp: i64, s: f32) -> f32 {
    ((q - zp) as f32) / s
}

#[test]
fn detess_dequant_and_cast_match_the_formula() {
    let tmp = dir();
    let heads = heads();
    let values: Vec<Vec<u32>> = heads
        .iter()
        .enumerate()
        .map(|(k, h)| codes(h.elements(), h.e, 20 + k as u32))
        .collect();
    let ofm = tmp.path().join("ofm.bin");
    write_ofm(&ofm, &heads, &values);
    let m = 1.0f32 / 3.0;
    for (out_dtype, descr) in [("f32", "<f4"), ("f16", "<f2")] {
        let outs: Vec<PathBuf> = (0..3)
            .map(|k| tmp.path().join(format!("{out_dtype}-{k}.npy")))
            .collect();
        let zps = [-128i64, 32767, -7];
        let mut args: Vec<String> = vec!["detess".into(), path_str(&ofm).into(), "-q".into()];
        for ((h, dt), zp) in heads.iter().zip(["i8", "i16", "i32"]).zip(zps) {
            args.push("--head".into());
            args.push(h.spec(dt, &format!(":zero-point={zp}")));
        }
        args.extend(["--multiplier".into(), "0x3eaaaaab".into()]);
        args.extend(["--out-dtype".into(), out_dtype.into()]);
        for o in &outs {
            args.extend(["-o".into(), path_str(o).into()]);
        }
        assert_success(&simak(&args));
        for (((h, v), o), zp) in heads.iter().zip(&values).zip(&outs).zip(zps) {
            let (_, d, data) = npy_bytes(o);
            assert_eq!(d, descr);
            let want: Vec<u8> = v
                .iter()
                .flat_map(|&c| {
                    let q = match h.e {
                        1 => i64::from(c as u8 as i8),
                        2 => i64::from(c as u16 as i16),
                        _ => i64::from(c as i32),
                    };
                    let y = dequant_ref(q, zp, m);
                    if out_dtype == "f32" {
                        y.to_le_bytes().to_vec()
                    } else {
                        half::f16::from_f32(y).to_le_bytes().to_vec()
                    }
                })
                .collect();
            assert!(data == want, "{} ({out_dtype}) differs", o.display());
        }
    }
    // --cast: a BF16 PadTo16 head as float32, every pattern's bits shifted left by 16.
    let h = head(
        vec![3, 4, 21],
        [None, Some(0), Some(1), Some(2)],
        [1, 2, 4, 21],
        Enc::Pad16,
        16,
        2,
    );
    let v = codes(h.elements(), 2, 99);
    fs::write(&ofm, h.encode(&v)).unwrap();
    let o = tmp.path().join("cast.npy");
    let out = simak(&[
        "detess",
        path_str(&ofm),
        "-q",
        "--shape",
        "3,4,21",
        "--tile",
        "1,2,4,21",
        "--channels",
        "pad16",
        "--dtype",
        "bf16",
        "--cast",
        "-o",
        path_str(&o),
    ]);
    assert_success(&out);
    let (shape, d, data) = npy_bytes(&o);
    assert_eq!((shape, d.as_str()), (vec![3, 4, 21], "<f4"));
    let want: Vec<u8> = v.iter().flat_map(|&c| (c << 16).to_le_bytes()).collect();
    assert!(data == want);
}

/// Runs `simak detess` with `args`, expecting exit 2, a message carrying `code` (when
/// given) and no file at `out`.
fn refused(args: &[&str], code: Option<&str>, out: &Path) {
    let o = simak(args);
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    if let Some(code) = code {
        assert!(
            err.contains(&format!("({code})")),
            "{args:?}: want {code}: {err}"
        );
    }
    assert!(!out.exists(), "{args:?} wrote {}", out.display());
}

#[test]
fn bad_inputs_are_refused_with_their_codes_and_write_nothing() {
    let tmp = dir();
    // INT8 [4, 4, 20] CBlock16 in tiles (1, 4, 4, 16): two C tiles of 16 * 16 bytes each.
    let h = head(
        vec![4, 4, 20],
        [None, Some(0), Some(1), Some(2)],
        [1, 4, 4, 16],
        Enc::CBlock16,
        16,
        1,
    );
    let bytes = h.encode(&codes(h.elements(), 1, 3));
    assert_eq!(bytes.len(), 512);
    let ofm = tmp.path().join("ofm.bin");
    fs::write(&ofm, &bytes).unwrap();
    let short = tmp.path().join("short.bin");
    fs::write(&short, &bytes[..511]).unwrap();
    let out = tmp.path().join("out.npy");
    let o = path_str(&out);
    let f = path_str(&ofm);
    let base = [
        "--shape",
        "4,4,20",
        "--tile",
        "1,4,4,16",
        "--channels",
        "cblock16",
        "--dtype",
        "i8",
    ];
    let with = |file: &str, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["detess".into(), file.into()];
        v.extend(base.iter().map(|s| s.to_string()));
        v.extend(extra.iter().map(|s| s.to_string()));
        v.extend(["-o".into(), o.into()]);
        v
    };
    let run = |args: Vec<String>, code: Option<&str>| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&a, code, &out);
    };
    // The buffer one byte short: the head runs past its end.
    run(with(path_str(&short), &[]), Some("code 0x227"));
    // An offset at the end of the buffer.
    run(with(f, &["--offset", "512"]), Some("code 0x226"));
    // The c16 tile-channel rule: PadTo16 with a C tile of 8 for C = 20.
    let mut a = with(f, &[]);
    a[5] = "1,4,4,8".into();
    a[7] = "pad16".into();
    run(a, Some("code 0x224"));
    // Dequantization parameters: zero, NaN, zero point outside INT8.
    run(with(f, &["--multiplier", "0"]), Some("code 14"));
    run(with(f, &["--multiplier", "NaN"]), Some("code 13"));
    run(
        with(f, &["--multiplier", "0.5", "--zero-point", "128"]),
        Some("code 0x223"),
    );
    // --cast of an INT8 head: the input dtype is not BF16.
    run(with(f, &["--cast"]), Some("code 5"));
    // Overlapping heads, and 33 heads.
    let spec = "shape=4,4,20:tile=1,4,4,16:channels=cblock16:dtype=i8";
    let xst = tmp.path().join("x.safetensors");
    let args = [
        "detess",
        f,
        "--head",
        &format!("{spec}:offset=0"),
        "--head",
        "shape=4,4,4:tile=1,4,4,4:channels=cblock16:dtype=i8:offset=256",
        "-o",
        path_str(&xst),
    ];
    refused(&args, Some("code 0x228"), &xst);
    let mut many: Vec<String> = vec!["detess".into(), f.into()];
    for _ in 0..33 {
        many.extend(["--head".into(), spec.into()]);
    }
    many.extend(["-o".into(), o.into()]);
    run(many, Some("code 0x225"));
    // CLI rules without a library code: outputs that do not match the heads, a BF16 .npy,
    // --out-dtype without a conversion, a malformed --head.
    run(
        vec![
            "detess".into(),
            f.into(),
            "--head".into(),
            spec.into(),
            "--head".into(),
            format!("{spec}:offset=0:name=b"),
            "-o".into(),
            o.into(),
        ],
        None,
    );
    run(with(f, &["--out-dtype", "f16"]), None);
    run(
        vec![
            "detess".into(),
            f.into(),
            "--head".into(),
            format!("{spec}:colour=red"),
            "-o".into(),
            o.into(),
        ],
        None,
    );
    run(with(f, &["--multiplier", "2", "--out-dtype", "bf16"]), None);
    // A head named as the safetensors header's own key.
    refused(
        &[
            "detess",
            f,
            "--head",
            &format!("{spec}:name=__metadata__"),
            "-o",
            path_str(&xst),
        ],
        None,
        &xst,
    );
    // The output is the input.
    let same = vec![
        "detess".to_owned(),
        f.into(),
        "--shape".into(),
        "4,4,20".into(),
        "--tile".into(),
        "1,4,4,16".into(),
        "--channels".into(),
        "cblock16".into(),
        "--dtype".into(),
        "i8".into(),
        "-o".into(),
        f.into(),
    ];
    let o2 = simak(&same);
    assert_eq!(o2.status.code(), Some(2), "{}", stderr_of(&o2));
    assert_eq!(fs::read(&ofm).unwrap(), bytes, "the input was not touched");
}

/// Writes a C-order `.npy` of `T`.
fn write_npy<T: npyz::AutoSerialize + Clone>(path: &Path, shape: &[u64], data: &[T]) {
    use npyz::WriterBuilder;
    let mut bytes = Vec::new();
    {
        let mut w = npyz::WriteOptions::<T>::new()
            .default_dtype()
            .shape(shape)
            .writer(&mut bytes)
            .begin_nd()
            .expect("npy header");
        w.extend(data.iter().cloned()).expect("npy data");
        w.finish().expect("npy end");
    }
    fs::write(path, bytes).expect("write npy");
}

#[test]
fn dequant_reads_int16_and_int32_and_writes_out_dtype() {
    let tmp = dir();
    let m = 0.1f32;
    let i16s: Vec<i16> = vec![i16::MIN, -1, 0, 1, 12345, i16::MAX];
    let i32s: Vec<i32> = vec![
        i32::MIN,
        i32::MAX,
        (1 << 24) + 1,
        -(1 << 24) - 1,
        1 << 24,
        -7,
    ];
    let a = tmp.path().join("a16.npy");
    let b = tmp.path().join("a32.npy");
    write_npy(&a, &[2, 3], &i16s);
    write_npy(&b, &[3, 2], &i32s);
    let q16: Vec<i64> = i16s.iter().map(|&v| i64::from(v)).collect();
    let q32: Vec<i64> = i32s.iter().map(|&v| i64::from(v)).collect();
    for (input, q, zp) in [(&a, &q16, -32768i64), (&b, &q32, 5)] {
        for (out_dtype, descr) in [("f32", "<f4"), ("f16", "<f2")] {
            let out = tmp.path().join(format!("y-{out_dtype}.npy"));
            let run = simak(&[
                "dequant",
                path_str(input),
                "--output",
                path_str(&out),
                "--multiplier",
                "0.1",
                "--zero-point",
                &zp.to_string(),
                "--out-dtype",
                out_dtype,
                "-q",
            ]);
            assert_success(&run);
            let (_, d, data) = npy_bytes(&out);
            assert_eq!(d, descr);
            let want: Vec<u8> = q
                .iter()
                .flat_map(|&q| {
                    let y = dequant_ref(q, zp, m);
                    if out_dtype == "f32" {
                        y.to_le_bytes().to_vec()
                    } else {
                        half::f16::from_f32(y).to_le_bytes().to_vec()
                    }
                })
                .collect();
            assert!(data == want, "{} {out_dtype}", input.display());
        }
    }
    // A safetensors I16 tensor with its parameters in metadata, to BF16.
    let st_in = tmp.path().join("in.safetensors");
    let raw: Vec<u8> = i16s.iter().flat_map(|v| v.to_le_bytes()).collect();
    let view =
        safetensors::tensor::TensorView::new(safetensors::Dtype::I16, vec![6], &raw).expect("view");
    let meta = std::collections::HashMap::from([
        (
            "simak.t.multiplier_bits".to_owned(),
            format!("0x{:08x}", m.to_bits()),
        ),
        ("simak.t.zero_point".to_owned(), "3".to_owned()),
    ]);
    let bytes = safetensors::serialize([("t", view)], Some(meta)).expect("serialize");
    fs::write(&st_in, bytes).unwrap();
    let st_out = tmp.path().join("out.safetensors");
    assert_success(&simak(&[
        "dequant",
        path_str(&st_in),
        "--output",
        path_str(&st_out),
        "--tensor",
        "t",
        "--out-dtype",
        "bf16",
        "-q",
    ]));
    let bytes = fs::read(&st_out).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let t = file.tensor("t").unwrap();
    assert_eq!(t.dtype(), safetensors::Dtype::BF16);
    let want: Vec<u8> = q16
        .iter()
        .flat_map(|&q| half::bf16::from_f32(dequant_ref(q, 3, m)).to_le_bytes())
        .collect();
    assert!(t.data() == want.as_slice());
    // A zero point outside INT16: the library's rule and code, nothing written.
    let out = tmp.path().join("bad.npy");
    let run = simak(&[
        "dequant",
        path_str(&a),
        "--output",
        path_str(&out),
        "--multiplier",
        "0.1",
        "--zero-point",
        "40000",
    ]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr_of(&run).contains("(code 0x223)"),
        "{}",
        stderr_of(&run)
    );
    assert!(!out.exists());
    // bfloat16 into a .npy: refused before any work.
    let run = simak(&[
        "dequant",
        path_str(&a),
        "--output",
        path_str(&out),
        "--multiplier",
        "0.1",
        "--out-dtype",
        "bf16",
    ]);
    assert_eq!(run.status.code(), Some(2));
    assert!(!out.exists());
}

#[test]
fn untile_reads_simaks_own_buffers_through_detess_and_the_c16_exception() {
    // BF16-exact values through casttess and back through untile: the layout with C tile 5
    // = C goes through DetessCast; PadTo16 with a C tile of 2 for C = 5 breaks the Detess
    // ops' c16 rule (SPEC §12.1) and is read by the layout's own untile. Both give x back.
    let tmp = dir();
    let x: Vec<f32> = (0..4 * 6 * 5).map(|i| (i as f32) - 50.0).collect();
    let input = tmp.path().join("x.npy");
    write_npy(&input, &[4, 6, 5], &x);
    for (k, (tile, channels)) in [
        ("1,3,4,5", "pad16"),
        ("1,3,4,2", "pad16"),
        ("1,3,4,2", "compact"),
    ]
    .into_iter()
    .enumerate()
    {
        let buf = tmp.path().join(format!("t{k}.bin"));
        assert_success(&simak(&[
            "casttess",
            "--input",
            path_str(&input),
            "--output",
            path_str(&buf),
            "--axes",
            "-1,0,1,2",
            "--tile",
            tile,
            "--channels",
            channels,
            "-q",
        ]));
        let back = tmp.path().join(format!("t{k}.npy"));
        assert_success(&simak(&[
            "untile",
            path_str(&buf),
            "--output",
            path_str(&back),
            "-q",
        ]));
        let (shape, descr, data) = npy_bytes(&back);
        assert_eq!((shape, descr.as_str()), (vec![4, 6, 5], "<f4"));
        let want: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(data == want, "{tile} {channels}");
    }
}

/// A last head placed by default must end at the buffer's end: simak's own CastTess buffer
/// (Compact tiles of 120, 60, 40 and 20 bytes, aligned to 16) read with the default tile
/// alignment 1 is refused with the alignment hint, read with `--tile-align 16` gives `x`
/// back; a buffer with bytes after its one head is refused, and read with `--offset 0`
/// given; two heads of which only the first gives an offset are still checked.
#[test]
fn a_last_head_placed_by_default_must_end_at_the_buffer_end() {
    let tmp = dir();
    let x: Vec<f32> = (0..4 * 6 * 5).map(|i| (i as f32) - 50.0).collect();
    let input = tmp.path().join("x.npy");
    write_npy(&input, &[4, 6, 5], &x);
    let buf = tmp.path().join("t.bin");
    assert_success(&simak(&[
        "casttess",
        "--input",
        path_str(&input),
        "--output",
        path_str(&buf),
        "--axes",
        "-1,0,1,2",
        "--tile",
        "1,3,4,5",
        "--channels",
        "compact",
        "-q",
    ]));
    // Tiles of 3×4, 3×2, 1×4 and 1×2 pixels of 5 BF16 values: 120, 60, 40 and 20 bytes,
    // each padded to a multiple of 16.
    assert_eq!(fs::metadata(&buf).unwrap().len(), 128 + 64 + 48 + 32);
    let out = tmp.path().join("back.npy");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "detess",
            path_str(&buf),
            "--shape",
            "4,6,5",
            "--tile",
            "1,3,4,5",
            "--channels",
            "compact",
            "--dtype",
            "bf16",
            "--cast",
            "-o",
            path_str(&out),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let a = args(&[]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let o = simak(&a);
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ends at byte 240 of the 272-byte buffer")
            && err.contains("with 16-byte tile alignment they would cover it exactly")
            && err.contains("--tile-align 16"),
        "{err}"
    );
    assert!(!out.exists());
    let a = args(&["--tile-align", "16", "-q"]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    assert_success(&simak(&a));
    let (shape, descr, data) = npy_bytes(&out);
    assert_eq!((shape, descr.as_str()), (vec![4, 6, 5], "<f4"));
    let want: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert!(data == want);
    fs::remove_file(&out).unwrap();
    // One byte more than the head: refused with the offset defaulted, read with it given.
    let mut longer = fs::read(&buf).unwrap();
    longer.push(0);
    fs::write(&buf, &longer).unwrap();
    let a = args(&["--tile-align", "16"]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let o = simak(&a);
    assert_eq!(o.status.code(), Some(2), "{}", stderr_of(&o));
    let err = stderr_of(&o);
    assert!(
        err.contains("ends at byte 272 of the 273-byte buffer"),
        "{err}"
    );
    assert!(err.contains("give the last head's offset"), "{err}");
    assert!(!out.exists());
    let a = args(&["--tile-align", "16", "--offset", "0", "-q"]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    assert_success(&simak(&a));
    assert!(npy_bytes(&out).2 == want);
    fs::remove_file(&out).unwrap();
    // Two heads, the first placed by hand and the last by default: still checked.
    let two = tmp.path().join("two.bin");
    let mut both = longer[..272].to_vec();
    both.extend_from_slice(&longer[..272]);
    fs::write(&two, &both).unwrap();
    let spec = "shape=4,6,5:tile=1,3,4,5:channels=compact:dtype=bf16";
    let st = tmp.path().join("two.safetensors");
    let head0 = format!("--head={spec}:offset=0");
    let head1 = format!("--head={spec}");
    let run = |h0: &str, h1: &str| {
        simak(&[
            "detess",
            path_str(&two),
            h0,
            h1,
            "--cast",
            "-o",
            path_str(&st),
            "-q",
        ])
    };
    let o = run(&head0, &head1);
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ends at byte 480 of the 544-byte buffer"),
        "{err}"
    );
    assert!(!st.exists());
    let o = run(
        &format!("--head={spec}:tile-align=16"),
        &format!("--head={spec}:tile-align=16"),
    );
    assert_success(&o);
    assert!(st.exists());
}

/// `--backend ev74-sim`: the three heads of a multi-head OFM dequantized by the EV74
/// firmware's DetessDequant entry on the simulator, one descriptor per head, give the A65's
/// bytes; the summary names the backend and each head's simulated run.
#[test]
fn the_ev74_backend_gives_the_a65_bytes() {
    let tmp = dir();
    let heads = heads();
    let values: Vec<Vec<u32>> = heads
        .iter()
        .enumerate()
        .map(|(k, h)| codes(h.elements(), h.e, 40 + k as u32))
        .collect();
    let ofm = tmp.path().join("ofm.bin");
    write_ofm(&ofm, &heads, &values);
    let run = |backend: &[&str], tag: &str| {
        let outs: Vec<PathBuf> = (0..3)
            .map(|k| tmp.path().join(format!("{tag}-{k}.npy")))
            .collect();
        let mut args: Vec<String> = vec!["detess".into(), path_str(&ofm).into(), "--json".into()];
        for (h, dt) in heads.iter().zip(["i8", "i16", "i32"]) {
            args.push("--head".into());
            args.push(h.spec(dt, ":zero-point=-3"));
        }
        args.extend(["--multiplier".into(), "0x3eaaaaab".into()]);
        args.extend(backend.iter().map(|s| (*s).to_owned()));
        for o in &outs {
            args.extend(["-o".into(), path_str(o).into()]);
        }
        let json = json_run(&args);
        let data: Vec<Vec<u8>> = outs.iter().map(|o| npy_bytes(o).2).collect();
        (json, data)
    };
    let (host_json, host) = run(&[], "a65");
    assert_eq!(host_json["backend"], "a65");
    let (sim_json, sim) = run(&["--backend", "ev74-sim", "--workers", "3"], "sim");
    assert_eq!(sim, host, "the EV74's bytes differ from the A65's");
    assert_eq!(sim_json["backend"], "ev74-sim");
    for h in sim_json["heads"].as_array().unwrap() {
        assert_eq!(h["ev74"]["workers"], 3, "{h}");
        assert!(h["ev74"]["dma_commands"].as_u64().unwrap() > 0, "{h}");
        assert!(h["ev74"]["simulated_cycles"].as_u64().unwrap() > 0, "{h}");
    }
    // --workers needs the EV74 backend, --threads the A65.
    let out = simak(&["detess", path_str(&ofm), "--workers", "2", "-o", "x.npy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--workers applies to --backend ev74-sim")
    );
}
