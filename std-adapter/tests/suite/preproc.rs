//! Preproc (SPEC §13, issue 26) against independent references written here.
//!
//! The oracle never calls the code under test: the YUV formula, the plane addressing, the
//! channel order, the border and the normalization `((p / divisor) − mean) / std` (native
//! binary32 arithmetic, each step rounded once) are restated below; the FP32 tensor they
//! build then goes through the *existing* ops (Quant, QuantTess, CastTess) or is laid out
//! at the output strides, and Preproc's bytes must equal those, over the whole output
//! buffer and a guard after it (the equivalence rule). OpenCV's own decoding of two YUV
//! frames is committed under `tests/data/yuv/`.
//!
//! How these fail: a wrong table entry, channel swap, plane offset or stride, border
//! position, pad value, YUV coefficient or rounding, tile byte, partition boundary (threads)
//! or level shows up as a differing byte; an admission rule that is missing or has another
//! code fails its `assert_eq!`; a write on a refused call changes the dirty buffer.

use simak::a65::{self, Level};
use simak::arith::preproc::yuv_to_rgb;
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::{self, TiledSpec};
use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output, PreprocError, Request};
use simak::ops::quant::{self, Params, Rounding};
use simak::ops::quanttess;
use simak::{AdmissionError, DType, DynSpec, Port};
use simak_tests::bytes::Aligned;
use simak_tests::preproc::{Setup, random_frame, yuv as oracle_yuv};
use simak_tests::rng::Rng;

use crate::tess_common::random_layout;

/// Bytes after the output span that must stay untouched.
const GUARD: usize = 32;
/// The dirty fill of output buffers.
const DIRTY: u8 = 0xa5;

/// Builds the request of `setup` with `output`.
trait Requested {
    fn request<'a>(&'a self, output: Output<'a>) -> Request<'a>;
}

impl Requested for Setup {
    fn request<'a>(&'a self, output: Output<'a>) -> Request<'a> {
        Request {
            frame: self.frame,
            normalize: Normalize {
                divisor: self.divisor,
                mean: &self.mean,
                std: &self.std,
            },
            bgr: self.bgr,
            border: self.border,
            pad_value: &self.pad,
            output,
        }
    }
}

/// The output kinds of a case.
#[derive(Debug, Clone)]
enum Out {
    F32(Option<Vec<u64>>),
    I8(Option<Vec<u64>>, Params),
    QuantTess(MlaTiled, Params),
    CastTess(MlaTiled),
}

impl Out {
    fn as_output(&self) -> Output<'_> {
        match self {
            Out::F32(s) => Output::F32 {
                strides: s.as_deref(),
            },
            Out::I8(s, params) => Output::I8 {
                strides: s.as_deref(),
                params: *params,
            },
            Out::QuantTess(layout, params) => Output::QuantTess {
                layout: *layout,
                params: *params,
            },
            Out::CastTess(layout) => Output::CastTess { layout: *layout },
        }
    }
}

/// The expected output buffer (span + guard, dirty outside what the existing op writes):
/// the existing op run on the oracle's FP32 tensor, or that tensor at the FP32 strides.
fn expected(setup: &Setup, out: &Out, input: &[u8], span: usize) -> Aligned {
    let extents = setup.extents();
    let tensor = setup.tensor(input);
    let bytes: Vec<u8> = tensor.iter().flat_map(|v| v.to_le_bytes()).collect();
    let source = DynSpec::contiguous(&extents, DType::F32);
    let mut buf = Aligned::new(span + GUARD, DIRTY);
    match out {
        Out::F32(strides) => {
            let strides = strides.clone().unwrap_or_else(|| packed(&extents, 4));
            let mut index = vec![0u64; extents.len()];
            for v in &tensor {
                let at: u64 = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
                buf.as_mut_slice()[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
                for a in (0..extents.len()).rev() {
                    index[a] += 1;
                    if index[a] < extents[a] {
                        break;
                    }
                    index[a] = 0;
                }
            }
        }
        Out::I8(strides, params) => {
            let p = a65::quant::check_inference_dyn(&quant::DynRequest {
                input: source,
                output: DynSpec {
                    extents: &extents,
                    strides: strides.as_deref(),
                    dtype: DType::I8,
                },
                params: *params,
            })
            .unwrap();
            a65::execute(&p, &bytes, buf.as_mut_slice()).unwrap();
        }
        Out::QuantTess(layout, params) => {
            let p = a65::quanttess::check_inference_dyn(&quanttess::DynRequest {
                input: source,
                output: TiledSpec {
                    extents: &extents,
                    dtype: DType::I8,
                    layout: *layout,
                },
                params: *params,
            })
            .unwrap();
            a65::execute(&p, &bytes, buf.as_mut_slice()).unwrap();
        }
        Out::CastTess(layout) => {
            let p = a65::casttess::check_inference_dyn(&casttess::DynRequest {
                input: source,
                output: TiledSpec {
                    extents: &extents,
                    dtype: DType::BF16,
                    layout: *layout,
                },
            })
            .unwrap();
            a65::execute(&p, &bytes, buf.as_mut_slice()).unwrap();
        }
    }
    buf
}

/// Row-major packed byte strides of `extents` for `elem`-byte elements.
fn packed(extents: &[u64], elem: u64) -> Vec<u64> {
    let mut s = vec![0u64; extents.len()];
    let mut acc = elem;
    for a in (0..extents.len()).rev() {
        s[a] = acc;
        acc *= extents[a].max(1);
    }
    s
}

/// Runs the case at every detected level and the given thread counts; every run's whole
/// buffer (span + guard, dirty before) must equal the oracle's. Returns the runs checked.
fn check(what: &str, setup: &Setup, out: &Out, input: &[u8], threads: &[usize]) -> usize {
    let plan = preproc::check_inference(&setup.request(out.as_output()))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let span = plan.output_span() as usize;
    let want = expected(setup, out, input, span);
    let mut runs = 0;
    for level in Level::detected() {
        let prepared = a65::preproc::prepare_at(&plan, level).unwrap();
        for &t in threads {
            let mut got = Aligned::new(span + GUARD, DIRTY);
            a65::execute_threaded(&prepared, t, input, got.as_mut_slice())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            if let Some(k) = (0..span + GUARD).find(|&k| got.as_slice()[k] != want.as_slice()[k]) {
                panic!(
                    "{what} at {} with {t} threads: byte {k} of {span} is {:#04x}, expected {:#04x}\n{setup:?}\n{out:?}",
                    level.name(),
                    got.as_slice()[k],
                    want.as_slice()[k]
                );
            }
            runs += 1;
        }
    }
    runs
}

/// A frame in which each channel of pixel `x` takes a distinct permutation of 0..=255.
fn ramp(format: Format) -> (Frame, Vec<u8>) {
    let bpp = match format {
        Format::GRAY8 => 1,
        Format::RGBX8 | Format::BGRX8 => 4,
        _ => 3,
    };
    let frame = Frame::packed(format, 1, 256);
    let bytes = (0..256u32)
        .flat_map(|x| {
            let px = [x, 255 - x, x ^ 0x5a, 0x33].map(|b| b as u8);
            px.into_iter().take(bpp)
        })
        .collect();
    (frame, bytes)
}

/// Normalizations that reach the corners: defaults, divisor 1 (`n = p`), ImageNet
/// mean/std, a negative std, a subnormal divisor (overflow to ∞), huge and tiny std
/// (underflow, gradual), mean that cancels exactly.
fn normalizations() -> Vec<(f32, Vec<f32>, Vec<f32>)> {
    vec![
        (255.0, vec![0.0], vec![1.0]),
        (1.0, vec![0.0], vec![1.0]),
        (255.0, vec![0.485, 0.456, 0.406], vec![0.229, 0.224, 0.225]),
        (127.5, vec![1.0], vec![-1.0]),
        (1.0e-45, vec![0.0], vec![1.0]),
        (1.0, vec![128.0, -3.5, 1.0e30], vec![3.0e38, 1.0e-39, -7.0]),
        (3.0, vec![-0.0], vec![1.0e-3]),
    ]
}

/// Exhaustive over the 256 values × every channel of every RGB / gray format, every
/// normalization, every output, every rounding mode, both channel orders.
#[test]
fn every_value_of_every_channel_matches_the_existing_ops() {
    let mut runs = 0;
    for format in [
        Format::RGB8,
        Format::BGR8,
        Format::RGBX8,
        Format::BGRX8,
        Format::GRAY8,
    ] {
        let (frame, bytes) = ramp(format);
        for (divisor, mean, std) in normalizations() {
            let c = if format == Format::GRAY8 { 1 } else { 3 };
            let take = |v: &Vec<f32>| {
                if v.len() == 3 {
                    v[..c].to_vec()
                } else {
                    v.clone()
                }
            };
            for bgr in [false, true] {
                let setup = Setup {
                    frame,
                    divisor,
                    mean: take(&mean),
                    std: take(&std),
                    bgr,
                    border: Border::default(),
                    pad: vec![0],
                };
                let compact =
                    Output::default_layout(false, [1, 1, 256, c as u32], Channels::Compact);
                let pad16 = Output::default_layout(false, [1, 1, 5, c as u32], Channels::PadTo16);
                let mut outs = vec![Out::F32(None), Out::CastTess(compact), Out::CastTess(pad16)];
                for rounding in [
                    Rounding::NearestEven,
                    Rounding::TowardZero,
                    Rounding::TowardPositive,
                    Rounding::TowardNegative,
                ] {
                    for (m, zp) in [(1.0f32, 0), (64.0, -3), (0.37, 17)] {
                        let params = Params::new(m).with_zero_point(zp).with_rounding(rounding);
                        outs.push(Out::I8(None, params));
                        outs.push(Out::QuantTess(compact, params));
                        outs.push(Out::QuantTess(pad16, params));
                    }
                }
                for out in &outs {
                    runs += check(&format!("{format} ramp"), &setup, out, &bytes, &[1]);
                }
            }
        }
    }
    assert!(runs >= 5 * 7 * 2 * 39);
}

/// The INT8 outputs' SIMD affine blocks (`preproc-<level>-i8`): rows of every width from
/// 1 to 100 pixels (whole blocks and every tail), strided and Compact tiles along W of
/// 64 and 37 pixels, usual and random normalizations, from RGB8 and NV12, at every level,
/// each against the existing ops on the oracle's tensor; the blocks are the route of the
/// usual normalizations at every SIMD level.
#[test]
fn int8_affine_blocks_match_the_existing_ops() {
    let mut rng = Rng::new(0x26_a1f1);
    let mut runs = 0;
    let mut norms = vec![
        (
            255.0f32,
            vec![0.485f32, 0.456, 0.406],
            vec![0.229f32, 0.224, 0.225],
        ),
        (255.0, vec![0.0], vec![1.0]),
        (127.5, vec![1.0], vec![-1.0]),
    ];
    for _ in 0..3 {
        let v = |rng: &mut Rng| (rng.below(1000) as f32 - 500.0) / 1000.0;
        norms.push((
            1.0 + rng.below(300) as f32,
            (0..3).map(|_| v(&mut rng)).collect(),
            (0..3).map(|_| v(&mut rng) + 0.6).collect(),
        ));
    }
    for (i, (divisor, mean, std)) in norms.into_iter().enumerate() {
        let format = if i % 2 == 0 {
            Format::RGB8
        } else {
            Format::NV12
        };
        let params = random_params(&mut rng);
        // Every width to 100 in the `test` step, the block edges elsewhere.
        let widths: Vec<u64> = if i >= 2 {
            vec![2, 30, 64, 98]
        } else if simak_tests::sweeps::full() {
            (1..=100).collect()
        } else {
            vec![
                1, 2, 5, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 95, 96, 97, 100,
            ]
        };
        for w in widths {
            let w = if format.is_yuv() {
                w.next_multiple_of(2)
            } else {
                w
            };
            let (frame, bytes) = random_frame(&mut rng, format, 2, w, None);
            let setup = Setup {
                frame,
                divisor,
                mean: mean.clone(),
                std: std.clone(),
                bgr: rng.chance(1, 2),
                border: Border::default(),
                pad: vec![0],
            };
            let mut outs = vec![Out::I8(None, params)];
            for tw in [64, 37] {
                let tw = tw.min(w as u32);
                let layout = Output::default_layout(false, [1, 1, tw, 3], Channels::Compact);
                outs.push(Out::QuantTess(layout, params));
            }
            for out in &outs {
                let threads: &[usize] = if w % 32 == 2 { &[1, 3] } else { &[1] };
                runs += check(&format!("{format} {w} wide"), &setup, out, &bytes, threads);
            }
        }
    }
    assert!(runs >= 2 * 19 * 3);
    // The route: the blocks at every SIMD level for the usual normalization.
    usual_route_at_every_level(Out::I8(None, Params::new(48.0)), "i8");
}

/// Asserts that an RGB8 frame with ImageNet's normalization to `out` (tiles up to
/// (1, 16, 64, 3)) takes route `preproc-<level>-<blocks>` at every SIMD level this CPU has
/// and the tables at `scalar`.
fn usual_route_at_every_level(out: Out, blocks: &str) {
    let setup = Setup {
        frame: Frame::packed(Format::RGB8, 16, 64),
        divisor: 255.0,
        mean: vec![0.485, 0.456, 0.406],
        std: vec![0.229, 0.224, 0.225],
        bgr: false,
        border: Border::default(),
        pad: vec![0],
    };
    let plan = preproc::check_inference(&setup.request(out.as_output())).unwrap();
    for level in Level::detected() {
        let route = a65::preproc::prepare_at(&plan, level)
            .unwrap()
            .implementation();
        let want = match level {
            Level::Scalar => "preproc-portable".to_owned(),
            Level::Sse41 => format!("preproc-sse4.1-{blocks}"),
            Level::Avx2 | Level::Avx512 | Level::Avx512Vbmi => format!("preproc-avx2-{blocks}"),
            _ => format!("preproc-neon-{blocks}"),
        };
        assert_eq!(route, want, "{level:?}");
    }
}

/// The BF16 output's SIMD blocks (`preproc-<level>-bf16`, `-bf16-div`): rows of every
/// width from 1 to 100 pixels (whole blocks and every tail), Compact tiles along W of 64
/// and 37 pixels (and a PadTo16 one, which keeps the tables), usual and random
/// normalizations, from RGB8, BGR8 and NV12, at every level and 1 or 3 threads, each against
/// CastTess on the oracle's tensor; the products are the route of the usual normalization
/// and some random ones need the divisions (both lanes' steps are covered).
#[test]
fn bf16_blocks_match_the_existing_ops() {
    let mut rng = Rng::new(0x26_bf16);
    let mut runs = 0;
    let mut norms = vec![
        (
            255.0f32,
            vec![0.485f32, 0.456, 0.406],
            vec![0.229f32, 0.224, 0.225],
        ),
        (255.0, vec![0.0], vec![1.0]),
        (127.5, vec![1.0], vec![-1.0]),
        // n = p + 256: every odd p is a BF16 tie (nine significant bits).
        (1.0, vec![-256.0], vec![1.0]),
    ];
    // Random normalizations until one needs the divisions (a few in a hundred do).
    let mut routes = std::collections::BTreeSet::new();
    let probe = |divisor: f32, mean: &[f32], std: &[f32]| {
        let setup = Setup {
            frame: Frame::packed(Format::RGB8, 1, 8),
            divisor,
            mean: mean.to_vec(),
            std: std.to_vec(),
            bgr: false,
            border: Border::default(),
            pad: vec![0],
        };
        let layout = Output::default_layout(false, [1, 1, 8, 3], Channels::Compact);
        let plan =
            preproc::check_inference(&setup.request(Out::CastTess(layout).as_output())).unwrap();
        a65::preproc::prepare(&plan).implementation()
    };
    for _ in 0..400 {
        let v = |rng: &mut Rng| (rng.below(100_000) as f32 - 50_000.0) / 100_000.0;
        let divisor = 1.0 + rng.below(300) as f32;
        let mean: Vec<f32> = (0..3).map(|_| v(&mut rng)).collect();
        let std: Vec<f32> = (0..3).map(|_| v(&mut rng) + 0.6).collect();
        let route = probe(divisor, &mean, &std);
        if routes.insert(route) || norms.len() < 6 {
            norms.push((divisor, mean, std));
        }
        if route.ends_with("-div") && norms.len() >= 6 {
            break;
        }
    }
    // (With `scalar-only`, `prepare` keeps the tables: no route to cover.)
    if routes.iter().any(|r| r.contains("-bf16")) {
        assert!(
            routes.iter().any(|r| r.ends_with("-bf16-div"))
                && routes.iter().any(|r| r.ends_with("-bf16")),
            "both steps covered: {routes:?}"
        );
    }
    for (i, (divisor, mean, std)) in norms.into_iter().enumerate() {
        let format = [Format::RGB8, Format::NV12, Format::BGR8][i % 3];
        // Every width to 100 in the `test` step, the block edges elsewhere.
        let widths: Vec<u64> = if i >= 2 {
            vec![2, 8, 30, 64, 98]
        } else if simak_tests::sweeps::full() {
            (1..=100).collect()
        } else {
            vec![
                1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 63, 64, 65, 95, 96, 97, 100,
            ]
        };
        for w in widths {
            let w = if format.is_yuv() {
                w.next_multiple_of(2)
            } else {
                w
            };
            let (frame, bytes) = random_frame(&mut rng, format, 2, w, None);
            let setup = Setup {
                frame,
                divisor,
                mean: mean.clone(),
                std: std.clone(),
                bgr: rng.chance(1, 2),
                border: Border::default(),
                pad: vec![0],
            };
            let mut outs = Vec::new();
            for tw in [64, 37] {
                let tw = tw.min(w as u32);
                let layout = Output::default_layout(false, [1, 1, tw, 3], Channels::Compact);
                outs.push(Out::CastTess(layout));
            }
            let pad16 = [1, 2, 16.min(w as u32), 3];
            outs.push(Out::CastTess(Output::default_layout(
                false,
                pad16,
                Channels::PadTo16,
            )));
            for out in &outs {
                let threads: &[usize] = if w % 32 == 2 { &[1, 3] } else { &[1] };
                runs += check(&format!("{format} {w} wide"), &setup, out, &bytes, threads);
            }
        }
    }
    assert!(runs >= 2 * 18 * 3);
    // The route: the products at every SIMD level for the usual normalization.
    let layout = Output::default_layout(false, [1, 16, 64, 3], Channels::Compact);
    usual_route_at_every_level(Out::CastTess(layout), "bf16");
}

/// NV12 rows written in pairs (two luma rows with their shared chroma row, each chroma
/// block converted once) to tiles (CastTess and QuantTess, Compact and PadTo16) and to
/// strided FP32 and INT8 outputs (packed and random strides): tile heights 1–4 and 16 (odd ones leave a
/// row unpaired), frame heights 2–10, widths 2–98 (whole 16-pixel blocks and tails), a
/// border of 0 or 1 row on top (pairs start on odd tile rows) and 0 or 1 column on the
/// left (odd frame columns, no pairs), batches, at every level and 1 or 3 threads, each
/// against the existing op on the oracle's tensor.
#[test]
fn nv12_row_pairs_match_the_existing_ops() {
    let mut rng = Rng::new(0x26_0212);
    let mut runs = 0;
    let widths: &[u64] = if simak_tests::sweeps::full() {
        &[2, 6, 16, 18, 30, 32, 34, 48, 62, 64, 66, 98]
    } else {
        &[2, 18, 32, 64, 66]
    };
    for (i, &w) in widths.iter().enumerate() {
        for (j, th) in [1u32, 2, 3, 4, 16].into_iter().enumerate() {
            let h = 2 + 2 * rng.below(5);
            let batch = [None, Some(2)][(i + j) % 2];
            let (frame, bytes) = random_frame(&mut rng, Format::NV12, h, w, batch);
            let setup = Setup {
                frame,
                divisor: 255.0,
                mean: vec![0.485, 0.456, 0.406],
                std: vec![0.229, 0.224, 0.225],
                bgr: rng.chance(1, 2),
                border: Border {
                    top: ((i + j) % 3 == 1).into(),
                    bottom: (j % 2).try_into().unwrap(),
                    left: ((i + j) % 4 == 3).into(),
                    right: 0,
                },
                pad: vec![7],
            };
            let b = setup.border;
            let (tw, th) = ((w as u32).min(64), th.min((h + b.top + b.bottom) as u32));
            let layout =
                |channels| Output::default_layout(batch.is_some(), [1, th, tw, 3], channels);
            let outs = [
                Out::CastTess(layout(Channels::Compact)),
                Out::QuantTess(layout(Channels::Compact), random_params(&mut rng)),
                [
                    Out::CastTess(layout(Channels::PadTo16)),
                    Out::QuantTess(layout(Channels::PadTo16), random_params(&mut rng)),
                ][j % 2]
                    .clone(),
                // Strided: rows in pairs too, packed or at random strides.
                Out::F32((j % 2 == 1).then(|| random_strides(&mut rng, &setup.extents(), 4))),
                Out::I8(
                    (j % 2 == 0).then(|| random_strides(&mut rng, &setup.extents(), 1)),
                    random_params(&mut rng),
                ),
            ];
            let threads: &[usize] = if j == 4 { &[1, 3] } else { &[1] };
            for out in &outs {
                runs += check(
                    &format!("NV12 {h}x{w} tile height {th}"),
                    &setup,
                    out,
                    &bytes,
                    threads,
                );
            }
        }
    }
    assert!(runs >= widths.len() * 5 * 5);
}

/// The integer formula on all 2^24 (Y, U, V) triples against the restatement above.
#[test]
fn yuv_formula_on_every_triple() {
    // Every Y outside the `test` step is every 7th (simak_tests::sweeps), U and V whole.
    let all: Vec<u8> = (0..=255).collect();
    for y in simak_tests::sweeps::pick(&all, 7) {
        for u in 0..=255u8 {
            for v in 0..=255u8 {
                let got = yuv_to_rgb(y, u, v);
                let want = oracle_yuv(y, u, v);
                assert!(got == want, "({y}, {u}, {v}): {got:?} != {want:?}");
            }
        }
    }
}

/// The YUV step at every level (the SIMD blocks of 16 pixels included) on every
/// (Y, U, V) triple: I420 frames of 2 × 131,072 pixels whose chroma planes hold every
/// (U, V) pair once, the four luma values of each pair distinct and rotating over the
/// calls, divisor 1 (so the FP32 output is the raw value), against the restated formula.
/// Every Y rotation outside the `test` step is every 32nd (simak_tests::sweeps).
#[test]
fn yuv_step_at_every_level_on_every_triple() {
    // I420 (U and V planes) and NV12 (interleaved pairs): each level's two chroma loads.
    // Sampled (nosimd, qemu): 9 rotations of I420, 3 of NV12 (only its chroma load differs).
    for (format, k) in [(Format::I420, 32), (Format::NV12, 128)] {
        yuv_step_on_every_triple(format, k);
    }
}

fn yuv_step_on_every_triple(format: Format, k: usize) {
    let (h, w) = (2u64, 131_072u64);
    let pairs = (w / 2) as usize;
    let mut frame = vec![0u8; (h * w) as usize + 2 * pairs];
    for c in 0..pairs {
        let (u, v) = if format == Format::NV12 {
            (2 * c, 2 * c + 1)
        } else {
            (c, pairs + c)
        };
        frame[(h * w) as usize + u] = (c >> 8) as u8;
        frame[(h * w) as usize + v] = c as u8;
    }
    let plan = preproc::check_inference(&Request {
        frame: Frame::packed(format, h, w),
        normalize: Normalize {
            divisor: 1.0,
            ..Normalize::DEFAULT
        },
        bgr: false,
        border: Border::default(),
        pad_value: &[0],
        output: Output::F32 { strides: None },
    })
    .unwrap();
    let rotations: Vec<usize> = (0..256).collect();
    let mut out = Aligned::new(plan.output_span() as usize, DIRTY);
    let mut checked = 0usize;
    for level in Level::detected() {
        let prepared = a65::preproc::prepare_at(&plan, level).unwrap();
        for &r in &simak_tests::sweeps::pick(&rotations, k) {
            // Pixel (row, x) of pair x / 2 has Y = r + 64·row + 128·(x mod 2).
            let luma = |row: usize, x: usize| (r + 64 * row + 128 * (x % 2)) as u8;
            for row in 0..h as usize {
                for x in 0..w as usize {
                    frame[row * w as usize + x] = luma(row, x);
                }
            }
            a65::preproc::execute(&prepared, &frame, out.as_mut_slice()).unwrap();
            let got = out.as_slice();
            for row in 0..h as usize {
                for x in 0..w as usize {
                    let c = x / 2;
                    let want = oracle_yuv(luma(row, x), (c >> 8) as u8, c as u8);
                    let at = (row * w as usize + x) * 12;
                    for (k, &want) in want.iter().enumerate() {
                        let bits =
                            u32::from_le_bytes(got[at + 4 * k..at + 4 * k + 4].try_into().unwrap());
                        assert!(
                            f32::from_bits(bits) == f32::from(want),
                            "{} row {row} x {x} channel {k}: {} != {want} ({})",
                            level.name(),
                            f32::from_bits(bits),
                            prepared.implementation()
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 2 * 3 * 262_144);
}

/// The committed frames decode to OpenCV's bytes (`tests/data/yuv/README.md`): divisor 1
/// gives `n = p` exactly, in RGB and BGR order, and the op's byte results too.
#[test]
fn yuv_frames_decode_as_opencv() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/yuv");
    let (h, w) = (10u64, 16u64);
    for (name, format) in [("nv12", Format::NV12), ("i420", Format::I420)] {
        let frame = std::fs::read(dir.join(format!("{name}.yuv"))).unwrap();
        let rgb = std::fs::read(dir.join(format!("{name}.rgb"))).unwrap();
        assert_eq!((frame.len(), rgb.len()), (240, 480));
        for bgr in [false, true] {
            let plan = preproc::check_inference(&Request {
                frame: Frame::packed(format, h, w),
                normalize: Normalize {
                    divisor: 1.0,
                    ..Normalize::DEFAULT
                },
                bgr,
                border: Border::default(),
                pad_value: &[0],
                output: Output::F32 { strides: None },
            })
            .unwrap();
            let prepared = a65::preproc::prepare(&plan);
            let mut out = Aligned::new(480 * 4, 0);
            a65::preproc::execute(&prepared, &frame, out.as_mut_slice()).unwrap();
            for (k, v) in out.as_slice().chunks_exact(4).enumerate() {
                let got = f32::from_le_bytes(v.try_into().unwrap());
                let (px, c) = (k / 3, k % 3);
                let want = rgb[px * 3 + if bgr { 2 - c } else { c }];
                assert_eq!(
                    got,
                    f32::from(want),
                    "{name} bgr={bgr} pixel {px} channel {c}"
                );
            }
        }
        // And through the oracle path: the restated formula agrees with OpenCV here too.
        let setup = Setup {
            frame: Frame::packed(format, h, w),
            divisor: 1.0,
            mean: vec![0.0],
            std: vec![1.0],
            bgr: false,
            border: Border::default(),
            pad: vec![0],
        };
        let t = setup.tensor(&frame);
        assert!(
            t.iter().zip(&rgb).all(|(a, &b)| *a == f32::from(b)),
            "{name} oracle"
        );
    }
}

/// Random strides over `extents` for `elem`-byte elements: a random axis order with gaps.
pub(crate) fn random_strides(rng: &mut Rng, extents: &[u64], elem: u64) -> Vec<u64> {
    let mut order: Vec<usize> = (0..extents.len()).collect();
    rng.shuffle(&mut order);
    let mut s = vec![0u64; extents.len()];
    let mut acc = elem;
    for &a in order.iter().rev() {
        s[a] = acc;
        acc = acc * extents[a].max(1) + elem * rng.below(3);
    }
    s
}

pub(crate) fn random_params(rng: &mut Rng) -> Params {
    let rounding = *rng.pick(&[
        Rounding::NearestEven,
        Rounding::TowardZero,
        Rounding::TowardPositive,
        Rounding::TowardNegative,
    ]);
    Params::new(*rng.pick(&[1.0f32, 40.0, 127.0, 0.8]))
        .with_zero_point(rng.range_i64(-20, 20) as i32)
        .with_rounding(rounding)
}

/// Random frames of every format: odd strides, plane gaps, batches of 1–3 (and none),
/// borders, per-channel parameters and pad values, random strided and tiled outputs
/// (partial tiles, every role order), at every level and 1–7 threads.
#[test]
fn random_frames_match_the_existing_ops() {
    let mut rng = Rng::new(0x26_0026);
    let mut runs = 0;
    // 28 cases outside the `test` step (every format four times; simak_tests::sweeps).
    let cases = if simak_tests::sweeps::full() { 140 } else { 28 };
    for case in 0..cases {
        let format = Format::ALL[case % Format::ALL.len()];
        let even = format.is_yuv();
        let dim = |rng: &mut Rng, max: u64| {
            let v = 1 + rng.below(max);
            if even { v.next_multiple_of(2) } else { v }
        };
        let (h, w) = (dim(&mut rng, 9), dim(&mut rng, 21));
        let batch = *rng.pick(&[None, Some(1), Some(2), Some(3)]);
        let (frame, bytes) = random_frame(&mut rng, format, h, w, batch);
        let c = format.channels();
        let per = |rng: &mut Rng, vals: &[f32]| -> Vec<f32> {
            if rng.chance(1, 2) {
                vec![*rng.pick(vals)]
            } else {
                (0..c).map(|_| *rng.pick(vals)).collect()
            }
        };
        let border = if rng.chance(1, 2) {
            Border::default()
        } else {
            Border {
                top: rng.below(3),
                bottom: rng.below(3),
                left: rng.below(4),
                right: rng.below(4),
            }
        };
        let setup = Setup {
            frame,
            divisor: *rng.pick(&[255.0, 1.0, 127.5, 58.395]),
            mean: per(&mut rng, &[0.0, 0.5, 0.485, 123.675, -1.0]),
            std: per(&mut rng, &[1.0, 0.229, -0.5, 58.395]),
            bgr: rng.chance(1, 2),
            border,
            pad: if rng.chance(1, 2) {
                vec![rng.next_u32() as u8]
            } else {
                (0..c).map(|_| rng.next_u32() as u8).collect()
            },
        };
        let extents = setup.extents();
        let (axes, tile, channels) = random_layout(&mut rng, &extents);
        let default_roles = Output::default_layout(batch.is_some(), tile, channels).axes;
        let layout = MlaTiled::new(
            if rng.chance(1, 2) {
                default_roles
            } else {
                axes
            },
            tile,
            channels,
        );
        // Tiles must fit the roles chosen: redraw over the default roles if needed.
        let layout = if layout.admit(&extents, 1).is_ok() {
            layout
        } else {
            MlaTiled::new(axes, tile, channels)
        };
        let out = match case / Format::ALL.len() % 4 {
            0 => Out::F32(
                rng.chance(2, 3)
                    .then(|| random_strides(&mut rng, &extents, 4)),
            ),
            1 => Out::I8(
                rng.chance(2, 3)
                    .then(|| random_strides(&mut rng, &extents, 1)),
                random_params(&mut rng),
            ),
            2 => Out::QuantTess(layout, random_params(&mut rng)),
            _ => Out::CastTess(layout),
        };
        let threads = [1, 1 + rng.below(7) as usize, 7];
        runs += check(
            &format!("case {case} {format}"),
            &setup,
            &out,
            &bytes,
            &threads,
        );
    }
    assert!(runs >= cases * 3);
}

/// The frame, parameter and output-port rules, each with its code (the execute checks,
/// with nothing written, are in the next test).
#[test]
fn every_admission_rule_has_its_code() {
    let base = Setup {
        frame: Frame::packed(Format::NV12, 4, 6),
        divisor: 255.0,
        mean: vec![0.0],
        std: vec![1.0],
        bgr: false,
        border: Border::default(),
        pad: vec![0],
    };
    let f32_out = Out::F32(None);
    let admit = |s: &Setup, o: &Out| preproc::check_inference(&s.request(o.as_output()));
    assert!(admit(&base, &f32_out).is_ok());
    let code = |s: &Setup, o: &Out| admit(s, o).map(|_| ()).unwrap_err().code();
    let with = |f: &dyn Fn(&mut Setup)| {
        let mut s = base.clone();
        f(&mut s);
        s
    };
    // Odd sizes for YUV (0x240), both formats, both axes; RGB allows them.
    for (format, h, w) in [
        (Format::NV12, 3, 6),
        (Format::NV12, 4, 5),
        (Format::I420, 5, 4),
    ] {
        let s = with(&|s| s.frame = Frame::packed(format, h, w));
        assert_eq!(
            admit(&s, &f32_out).unwrap_err(),
            AdmissionError::Preproc(PreprocError::OddSize {
                format,
                height: h,
                width: w
            })
        );
        assert_eq!(code(&s, &f32_out), 0x240);
    }
    assert!(
        admit(
            &with(&|s| s.frame = Frame::packed(Format::RGB8, 3, 5)),
            &f32_out
        )
        .is_ok()
    );
    // Row strides (0x241): Y, NV12's UV plane, I420's V plane; exactly the row is fine.
    assert_eq!(
        code(&with(&|s| s.frame.planes[0].row_stride = 5), &f32_out),
        0x241
    );
    assert_eq!(
        code(&with(&|s| s.frame.planes[1].row_stride = 5), &f32_out),
        0x241
    );
    let i420 = |s: &mut Setup| s.frame = Frame::packed(Format::I420, 4, 6);
    assert!(admit(&with(&i420), &f32_out).is_ok());
    assert_eq!(
        admit(
            &with(&|s| {
                i420(s);
                s.frame.planes[2].row_stride = 2;
            }),
            &f32_out
        )
        .unwrap_err(),
        AdmissionError::Preproc(PreprocError::RowStride {
            plane: 2,
            stride: 2,
            required: 3
        })
    );
    // Overlapping planes (0x242): UV inside Y; touching planes are fine.
    assert_eq!(
        admit(&with(&|s| s.frame.planes[1].offset = 23), &f32_out).unwrap_err(),
        AdmissionError::Preproc(PreprocError::PlaneOverlap { plane: 1, other: 0 })
    );
    assert!(admit(&with(&|s| s.frame.planes[1].offset = 24), &f32_out).is_ok());
    assert_eq!(
        code(
            &with(&|s| {
                i420(s);
                s.frame.planes[2].offset = s.frame.planes[1].offset + 5;
            }),
            &f32_out
        ),
        0x242
    );
    // Frame stride of a batch (0x243): one frame is 36 bytes.
    let batch = |stride| {
        with(&move |s: &mut Setup| {
            s.frame.batch = Some(2);
            s.frame.frame_stride = stride;
        })
    };
    assert_eq!(
        admit(&batch(35), &f32_out).unwrap_err(),
        AdmissionError::Preproc(PreprocError::FrameStride {
            stride: 35,
            required: 36
        })
    );
    assert!(admit(&batch(36), &f32_out).is_ok());
    // A single-frame batch ignores the stride.
    assert!(
        admit(
            &with(&|s| {
                s.frame.batch = Some(1);
                s.frame.frame_stride = 0;
            }),
            &f32_out
        )
        .is_ok()
    );
    // Parameters: not finite (0x244), divisor ≤ 0 (0x245), std 0 (0x246), counts (0x247).
    assert_eq!(
        admit(&with(&|s| s.mean = vec![0.0, f32::NAN, 0.0]), &f32_out).unwrap_err(),
        AdmissionError::Preproc(PreprocError::NotFinite {
            param: preproc::Param::Mean,
            index: 1,
            bits: f32::NAN.to_bits()
        })
    );
    assert_eq!(code(&with(&|s| s.divisor = f32::INFINITY), &f32_out), 0x244);
    assert_eq!(
        code(&with(&|s| s.std = vec![f32::NEG_INFINITY]), &f32_out),
        0x244
    );
    for d in [0.0f32, -0.0, -1.0] {
        assert_eq!(
            admit(&with(&|s| s.divisor = d), &f32_out).unwrap_err(),
            AdmissionError::Preproc(PreprocError::DivisorNotPositive { bits: d.to_bits() })
        );
    }
    assert_eq!(code(&with(&|s| s.divisor = f32::NAN), &f32_out), 0x244);
    for z in [0.0f32, -0.0] {
        assert_eq!(
            admit(&with(&|s| s.std = vec![1.0, 1.0, z]), &f32_out).unwrap_err(),
            AdmissionError::Preproc(PreprocError::StdZero { index: 2 })
        );
    }
    assert!(admit(&with(&|s| s.std = vec![1.0e-45]), &f32_out).is_ok());
    assert_eq!(
        admit(&with(&|s| s.mean = vec![0.0, 0.0]), &f32_out).unwrap_err(),
        AdmissionError::Preproc(PreprocError::ChannelCount {
            param: preproc::Param::Mean,
            given: 2,
            channels: 3
        })
    );
    assert_eq!(code(&with(&|s| s.std = vec![]), &f32_out), 0x247);
    assert_eq!(code(&with(&|s| s.pad = vec![1, 2]), &f32_out), 0x247);
    let gray = |s: &mut Setup| s.frame = Frame::packed(Format::GRAY8, 4, 6);
    assert_eq!(
        code(
            &with(&|s| {
                gray(s);
                s.mean = vec![0.0; 3];
            }),
            &f32_out
        ),
        0x247
    );
    // Spans that overflow u64: the input (24) and the output with its border (25).
    assert_eq!(
        admit(
            &with(&|s| s.frame = Frame::packed(Format::RGB8, 2, u64::MAX / 2)),
            &f32_out
        )
        .unwrap_err(),
        AdmissionError::SpanOverflow { port: Port::Input }
    );
    assert_eq!(
        admit(&with(&|s| s.border.right = u64::MAX), &f32_out).unwrap_err(),
        AdmissionError::SpanOverflow { port: Port::Output }
    );
    // Output port rules: the existing codes.
    assert_eq!(code(&base, &Out::F32(Some(vec![4, 4]))), 0x206);
    assert_eq!(code(&base, &Out::F32(Some(vec![72, 12, 2]))), 0x203);
    assert_eq!(code(&base, &Out::F32(Some(vec![72, 4, 4]))), 29);
    assert_eq!(code(&base, &Out::I8(None, Params::new(0.0))), 14);
    assert_eq!(
        code(&base, &Out::I8(None, Params::new(1.0).with_zero_point(200))),
        15
    );
    let tiled = Output::default_layout(false, [1, 2, 3, 3], Channels::CBlock16);
    assert_eq!(code(&base, &Out::CastTess(tiled)), 0x220);
    let tiled = Output::default_layout(false, [1, 5, 3, 3], Channels::Compact);
    assert_eq!(code(&base, &Out::QuantTess(tiled, Params::new(1.0))), 47);
}

/// Execute refuses a short input or output and an unaligned FP32 or tiled output before
/// writing anything.
#[test]
fn execute_checks_come_before_any_write() {
    let layout = Output::default_layout(false, [1, 2, 2, 3], Channels::PadTo16);
    for (out, align) in [
        (Output::F32 { strides: None }, 4),
        (Output::CastTess { layout }, 16),
    ] {
        let plan = preproc::check_inference(&Request {
            frame: Frame::packed(Format::I420, 4, 6),
            normalize: Normalize::DEFAULT,
            bgr: false,
            border: Border::default(),
            pad_value: &[0],
            output: out,
        })
        .unwrap();
        let prepared = a65::preproc::prepare(&plan);
        let span = plan.output_span() as usize;
        let frame = vec![77u8; 36];
        let mut buf = Aligned::new(span + 16, DIRTY);
        let e = a65::preproc::execute(&prepared, &frame[..35], &mut buf.as_mut_slice()[..span])
            .unwrap_err();
        assert_eq!(e.code(), 0x401);
        let e = a65::preproc::execute(&prepared, &frame, &mut buf.as_mut_slice()[..span - 1])
            .unwrap_err();
        assert_eq!(e.code(), 0x402);
        let e = a65::preproc::execute(&prepared, &frame, &mut buf.as_mut_slice()[align / 2..])
            .unwrap_err();
        assert_eq!(e.code(), 0x404);
        let e = a65::execute_threaded(&prepared, 3, &frame, &mut buf.as_mut_slice()[..span - 1])
            .unwrap_err();
        assert_eq!(e.code(), 0x402);
        assert!(
            buf.as_slice().iter().all(|&b| b == DIRTY),
            "nothing written"
        );
        a65::preproc::execute(&prepared, &frame, &mut buf.as_mut_slice()[..span]).unwrap();
        assert!(buf.as_slice()[span..].iter().all(|&b| b == DIRTY));
    }
}

/// A border around an empty frame is all pad, and a frame read needs no input.
#[test]
fn empty_frames_and_empty_outputs() {
    let setup = Setup {
        frame: Frame::packed(Format::RGB8, 0, 3),
        divisor: 1.0,
        mean: vec![0.0],
        std: vec![1.0],
        bgr: false,
        border: Border {
            top: 2,
            ..Border::default()
        },
        pad: vec![9, 8, 7],
    };
    let plan = preproc::check_inference(&setup.request(Output::F32 { strides: None })).unwrap();
    assert_eq!(plan.input_span(), 0);
    assert_eq!(
        check("empty frame", &setup, &Out::F32(None), &[], &[1, 3]),
        2 * Level::detected().len()
    );
    let empty = Setup {
        frame: Frame::packed(Format::NV12, 4, 6).with_batch(0),
        ..setup
    };
    let plan = preproc::check_inference(&empty.request(Output::F32 { strides: None })).unwrap();
    assert!(plan.is_empty());
    assert_eq!((plan.input_span(), plan.output_span()), (0, 0));
    let prepared = a65::preproc::prepare(&plan);
    a65::preproc::execute(&prepared, &[], &mut []).unwrap();
}
