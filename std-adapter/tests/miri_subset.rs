//! The Miri subset (`cargo xtask miri`): small tests that run under `cargo +nightly miri
//! test` as well as natively.
//!
//! - A65 Quant on the exact route (the portable path: no SIMD intrinsics, which Miri cannot
//!   run reliably) over contiguous, strided (transposed, with output gaps) and split
//!   inputs, against the independent f64 oracle; gaps in the output stay untouched. The
//!   default route's on-stack panels (gather, kernel, scatter) run too: under Miri no SIMD
//!   feature is detected, so they run with the exact kernel.
//! - The Runtime's retention and completion logic over the simulated transport (a device
//!   thread): a completed submission releases its buffers; a lost completion keeps them
//!   retained (not mappable, not freed) until `reset` saw the device quiescent.
//!
//! - The output side (SPEC §12) at the scalar level: Detess, DetessCast and DetessDequant
//!   of small random heads (DetessDequant from INT8 and INT32) against the SPEC §12.1 byte
//!   oracle and the exact §12.2 reference (`simak_tests::detess`, `simak_tests::dequant`).
//! - Preproc (SPEC §13) at the scalar level: the committed NV12 and I420 frames
//!   (`tests/data/yuv/`, made with OpenCV) with divisor 1 give OpenCV's RGB bytes as FP32.
//!
//! Under Miri the FP control word is passed explicitly (`execute_with_fp_control`): reading
//! MXCSR is inline assembly, which Miri does not execute. The exact route never needs it.

#[path = "suite/support.rs"]
mod support;

use support::{SubmitEncoded, forward};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use simak::DynSpec;
use simak::a65::{self, Level};
use simak::ev74::quant;
use simak::ev74::runtime::{
    Executor, Retire, RuntimeError, SimConfig, SimTransport, Transport, TransportError,
};
use simak::ops::casttess::TiledSpec;
use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output};
use simak::ops::quant::{Params, Plan, Request, Rounding, check_inference};
use simak::ops::{Detess, DetessCast, DetessDequant, Preproc, dequant};
use simak::ops::{detess, detesscast, detessdequant};
use simak::{DType, TensorSpec};
use simak_ev74_fw::Command;
use simak_tests::bytes::Aligned;
use simak_tests::detess::{Head, output_spec, random_head};
use simak_tests::oracle;
use simak_tests::rng::Rng;

/// Elements per side: small under Miri, larger natively.
const SIDE: u64 = if cfg!(miri) { 10 } else { 24 };
const LONG: Duration = Duration::from_secs(60);

/// Patterns that exercise every branch of the exact path: zeros, subnormals, normals near
/// the rounding boundaries, saturating values, infinities and NaNs.
fn pattern(k: u64) -> u32 {
    const SPECIAL: [u32; 12] = [
        0x0000_0000,
        0x8000_0000,
        0x0000_0001,
        0x807f_ffff,
        0x3f00_0000,
        0xbfc0_0000,
        0x4020_0000,
        0x42fe_0000,
        0xc300_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0001,
    ];
    SPECIAL
        .get(k as usize)
        .copied()
        .unwrap_or_else(|| (k as u32).wrapping_mul(0x9e37_79b9))
}

fn params(rounding: Rounding) -> Params {
    Params::from_bits(0x3e99_999a)
        .with_zero_point(-3)
        .with_rounding(rounding)
}

fn exact(plan: &Plan) -> a65::quant::Prepared {
    let prepared = a65::quant::prepare_at(plan, Level::Scalar).expect("exact route");
    assert_eq!(prepared.level(), Level::Scalar);
    prepared
}

#[test]
fn exact_route_on_contiguous_input() {
    let n = SIDE * SIDE;
    let bits: Vec<u32> = (0..n).map(pattern).collect();
    let input = Aligned::from_slice(&simak_tests::bytes::encode(DType::F32, &bits));
    for rounding in Rounding::ALL {
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous([n], DType::F32),
            output: TensorSpec::contiguous([n], DType::I8),
            params: params(rounding),
        })
        .unwrap();
        for prepared in [exact(&plan), a65::quant::prepare_exact(&plan)] {
            let mut output = vec![0x77u8; n as usize];
            a65::execute_with_fp_control(&prepared, input.as_slice(), &mut output, None).unwrap();
            for (k, (&b, &got)) in bits.iter().zip(&output).enumerate() {
                let want = oracle::quant(DType::F32, b, 0x3e99_999a, -3, rounding);
                assert_eq!(got as i8, want, "element {k} bits 0x{b:08x} {rounding}");
            }
        }
    }
}

#[test]
fn exact_route_on_strided_input_leaves_gaps_untouched() {
    // A [SIDE, SIDE] BF16 view read transposed, written with a row pitch of SIDE + 3.
    let s = SIDE;
    let pitch = s + 3;
    let bits: Vec<u32> = (0..s * s).map(|k| pattern(k) >> 16).collect();
    let input = Aligned::from_slice(&simak_tests::bytes::encode(DType::BF16, &bits));
    let plan = check_inference(&Request {
        input: TensorSpec::strided([s, s], [2, 2 * s], DType::BF16),
        output: TensorSpec::strided([s, s], [pitch, 1], DType::I8),
        params: params(Rounding::NearestEven),
    })
    .unwrap();
    let mut output = vec![0x77u8; plan.output().span() as usize];
    a65::execute_with_fp_control(&exact(&plan), input.as_slice(), &mut output, None).unwrap();
    for (at, &got) in output.iter().enumerate() {
        let (i, j) = (at as u64 / pitch, at as u64 % pitch);
        if j >= s {
            assert_eq!(got, 0x77, "gap byte {at} written");
            continue;
        }
        let b = bits[(j * s + i) as usize];
        let want = oracle::quant(DType::BF16, b, 0x3e99_999a, -3, Rounding::NearestEven);
        assert_eq!(got as i8, want, "[{i}, {j}] bits 0x{b:04x}");
    }
}

#[test]
fn exact_route_split_pieces_cover_every_element_once() {
    let (rows, cols) = (SIDE + 1, SIDE);
    let n = rows * cols;
    let bits: Vec<u32> = (0..n).map(|k| pattern(k) >> 16).collect();
    let input = Aligned::from_slice(&simak_tests::bytes::encode(DType::F16, &bits));
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([rows, cols], DType::F16),
        output: TensorSpec::strided([rows, cols], [cols + 1, 1], DType::I8),
        params: params(Rounding::TowardNegative),
    })
    .unwrap();
    let prepared = a65::quant::prepare_exact(&plan);
    let mut output = vec![0x77u8; plan.output().span() as usize];
    let mut pieces = prepared.split(3, input.as_slice(), &mut output).unwrap();
    assert_eq!(pieces.len(), 3);
    std::thread::scope(|scope| {
        for piece in &mut pieces {
            scope.spawn(move || piece.run().unwrap());
        }
    });
    drop(pieces);
    for i in 0..rows {
        for j in 0..cols {
            let b = bits[(i * cols + j) as usize];
            let got = output[(i * (cols + 1) + j) as usize];
            let want = oracle::quant(DType::F16, b, 0x3e99_999a, -3, Rounding::TowardNegative);
            assert_eq!(got as i8, want, "[{i}, {j}] bits 0x{b:04x}");
        }
    }
    assert!(
        output
            .iter()
            .skip(cols as usize)
            .step_by(cols as usize + 1)
            .all(|&b| b == 0x77),
        "gap bytes untouched"
    );
}

#[test]
fn default_route_panels_on_short_and_strided_runs() {
    // Under Miri no SIMD feature is detected, so `prepare` picks the exact kernel and runs
    // the panel gather/scatter with it; natively the fastest route runs the same traversal.
    // [12, 16] read transposed: runs of 12 share panels. [2, 80] with an input stride of
    // two elements: runs of 80 are panelled one by one.
    let cases: [([u64; 2], [u64; 2], [u64; 2]); 2] =
        [([12, 16], [4, 48], [16, 1]), ([2, 80], [640, 8], [80, 1])];
    for (shape, in_strides, out_strides) in cases {
        let span = (shape[0] - 1) * in_strides[0] + (shape[1] - 1) * in_strides[1] + 4;
        let words = span.div_ceil(4);
        let bits: Vec<u32> = (0..words).map(pattern).collect();
        let input = Aligned::from_slice(&simak_tests::bytes::encode(DType::F32, &bits));
        let plan = check_inference(&Request {
            input: TensorSpec::strided(shape, in_strides, DType::F32),
            output: TensorSpec::strided(shape, out_strides, DType::I8),
            params: params(Rounding::TowardPositive),
        })
        .unwrap();
        let prepared = a65::quant::prepare(&plan);
        if cfg!(miri) {
            assert_eq!(prepared.level(), Level::Scalar);
        } else if prepared.level() != Level::Scalar {
            assert!(
                prepared.implementation().ends_with("+panels"),
                "{}",
                prepared.implementation()
            );
        }
        let mut output = vec![0x77u8; plan.output().span() as usize];
        a65::execute_with_fp_control(&prepared, input.as_slice(), &mut output, None).unwrap();
        for i in 0..shape[0] {
            for j in 0..shape[1] {
                let b = bits[((i * in_strides[0] + j * in_strides[1]) / 4) as usize];
                let got = output[(i * out_strides[0] + j * out_strides[1]) as usize];
                let want = oracle::quant(DType::F32, b, 0x3e99_999a, -3, Rounding::TowardPositive);
                assert_eq!(got as i8, want, "{shape:?} [{i}, {j}] bits 0x{b:08x}");
            }
        }
    }
}

/// Forwards to a [`SimTransport`], optionally losing every completion.
struct Lossy {
    inner: SimTransport,
    lose: AtomicBool,
}

impl Transport for Lossy {
    forward!(inner: capabilities, allocate, free, read, write, abort, wait_idle);
    fn submit(&self, command: Command, retire: Retire) -> Result<(), TransportError> {
        let lose = self.lose.load(Ordering::SeqCst);
        self.inner.submit(
            command,
            Retire::new(move |status| {
                if lose {
                    drop(retire);
                } else {
                    retire.complete(status);
                }
            }),
        )
    }
}

/// Elements of the runtime jobs.
const JOB: u64 = if cfg!(miri) { 64 } else { 300 };

fn job_plan() -> quant::DevicePlan {
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([JOB], DType::F32),
        output: TensorSpec::contiguous([JOB], DType::I8),
        params: Params::new(2.0),
    })
    .unwrap();
    quant::check_inference(&plan).unwrap()
}

fn job_input() -> Vec<u8> {
    (0..JOB).flat_map(|k| (k as f32).to_le_bytes()).collect()
}

#[test]
fn a_completed_submission_releases_its_buffers() {
    let transport = Arc::new(Lossy {
        inner: SimTransport::new(SimConfig::new(2)),
        lose: AtomicBool::new(false),
    });
    let executor = Executor::connect(transport.clone()).unwrap();
    let plan = job_plan();
    let packet = quant::encode_relocatable(&plan);
    let input = executor.allocate(JOB * 4).unwrap();
    let output = executor.allocate(JOB).unwrap();
    input.write(0, &job_input()).unwrap();
    let completion = executor
        .submit_encoded(&plan, &packet, &input, &output)
        .unwrap();
    let report = completion.wait(LONG).unwrap().expect("a report");
    assert!(report.units >= 1);
    assert!(completion.is_complete());
    assert_eq!(executor.in_flight(), 0);
    assert!(!input.in_flight() && !output.in_flight());
    let mut out = vec![0u8; JOB as usize];
    output.read(0, &mut out).unwrap();
    for (k, &b) in out.iter().enumerate() {
        assert_eq!(b as i8, (2 * k).min(127) as i8, "element {k}");
    }
    // Mappable again once complete; the handles free everything when dropped.
    drop(output.map().unwrap());
    drop((input, output, completion));
    drop(executor);
    assert_eq!(transport.inner.with_device(|d| d.memory.regions()), 0);
}

#[test]
fn a_lost_completion_keeps_the_buffers_until_reset() {
    let transport = Arc::new(Lossy {
        inner: SimTransport::new(SimConfig::new(1)),
        lose: AtomicBool::new(true),
    });
    let executor = Executor::connect(transport.clone()).unwrap();
    let plan = job_plan();
    let packet = quant::encode_relocatable(&plan);
    let input = executor.allocate(JOB * 4).unwrap();
    let output = executor.allocate(JOB).unwrap();
    input.write(0, &job_input()).unwrap();
    let completion = executor
        .submit_encoded(&plan, &packet, &input, &output)
        .unwrap();
    assert_eq!(
        completion.wait(Duration::from_millis(20)),
        Err(RuntimeError::Timeout)
    );
    assert_eq!(executor.in_flight(), 1);
    assert!(input.in_flight() && output.in_flight());
    assert_eq!(
        output.map().unwrap_err(),
        RuntimeError::Busy {
            address: output.address()
        }
    );
    // The caller's handles go; the submission still retains the regions.
    let output_handle = output.clone();
    drop((input, output));
    assert_eq!(transport.inner.with_device(|d| d.memory.regions()), 3);
    assert_eq!(executor.reset(LONG), Ok(1));
    assert_eq!(completion.wait(LONG), Err(RuntimeError::Aborted));
    assert_eq!(executor.in_flight(), 0);
    assert!(!output_handle.in_flight());
    drop(output_handle);
    assert_eq!(transport.inner.with_device(|d| d.memory.regions()), 0);
}

/// The elements of `head`'s dense output `dense` (strides `head.out_strides`) placed at
/// `strides` for elements of `out` bytes, each converted by `f`, in a buffer of `len`
/// bytes filled with `fill`.
fn converted(
    head: &Head,
    dense: &[u8],
    strides: &[u64],
    out: usize,
    len: usize,
    fill: u8,
    f: impl Fn(u32) -> u32,
) -> Vec<u8> {
    let e = head.e();
    let mut want = vec![fill; len];
    head.for_each(|index| {
        let i: usize = index
            .iter()
            .zip(&head.out_strides)
            .map(|(i, s)| i * s)
            .sum();
        let mut bits = [0u8; 4];
        bits[..e].copy_from_slice(&dense[i..i + e]);
        let o: usize = index
            .iter()
            .zip(strides)
            .map(|(&i, &s)| i * s as usize)
            .sum();
        want[o..o + out].copy_from_slice(&f(u32::from_le_bytes(bits)).to_le_bytes()[..out]);
    });
    want
}

#[test]
fn output_side_at_the_scalar_level() {
    const FILL: u8 = 0x77;
    const GUARD: usize = 8;
    let mut rng = Rng::new(0x5c12_0001);
    for dtype in [DType::I8, DType::I16, DType::I32, DType::BF16] {
        let head = random_head(&mut rng, 1, dtype);
        let shape: Vec<u64> = head.shape.iter().map(|&e| e as u64).collect();
        let raw: Vec<u8> = (0..head.span()).map(|_| rng.next_u32() as u8).collect();
        let ofm = Aligned::from_slice(&raw);
        let tiled = TiledSpec {
            extents: &shape,
            dtype,
            layout: head.layout(),
        };
        // Detess against the byte oracle.
        let strides = output_spec(&head, dtype);
        let plan = detess::check_inference_dyn(&detess::DynRequest {
            input: tiled,
            output: DynSpec::strided(&shape, &strides, dtype),
        })
        .unwrap();
        let want = simak_tests::detess::expected(&head, ofm.as_slice(), FILL, GUARD);
        let span = want.len() - GUARD;
        let mut got = Aligned::new(want.len(), FILL);
        let prepared = a65::Prepared::<Detess>::at(&plan, Level::Scalar).unwrap();
        a65::execute_with_fp_control(
            &prepared,
            ofm.as_slice(),
            &mut got.as_mut_slice()[..span],
            None,
        )
        .unwrap();
        assert_eq!(got.as_slice(), want.as_slice(), "detess {head:?}");
        // The conversion: DetessCast for BF16 (`bits << 16`), DetessDequant into FP32 for
        // the integers (the exact reference).
        let out = DType::F32;
        let out_strides = output_spec(&head, out);
        let output = DynSpec::strided(&shape, &out_strides, out);
        let mut got: Aligned;
        if dtype == DType::I16 {
            // DetessDequant's INT16 table has 65,536 entries: too slow under Miri (the
            // native suites cover it).
            continue;
        }
        let expect = if dtype == DType::BF16 {
            let plan = detesscast::check_inference_dyn(&detess::DynRequest {
                input: tiled,
                output,
            })
            .unwrap();
            let port = plan.output().span() as usize;
            got = Aligned::new(port + GUARD, FILL);
            let prepared = a65::Prepared::<DetessCast>::at(&plan, Level::Scalar).unwrap();
            a65::execute_with_fp_control(
                &prepared,
                ofm.as_slice(),
                &mut got.as_mut_slice()[..port],
                None,
            )
            .unwrap();
            converted(&head, &want, &out_strides, 4, port + GUARD, FILL, |b| {
                b << 16
            })
        } else {
            let params = dequant::Params::new(0.37).with_zero_point(-3);
            let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
                input: tiled,
                output,
                params,
            })
            .unwrap();
            let port = plan.output().span() as usize;
            got = Aligned::new(port + GUARD, FILL);
            let prepared = a65::Prepared::<DetessDequant>::at(&plan, Level::Scalar).unwrap();
            a65::execute_with_fp_control(
                &prepared,
                ofm.as_slice(),
                &mut got.as_mut_slice()[..port],
                None,
            )
            .unwrap();
            let shift = 32 - 8 * dtype.size() as u32;
            converted(&head, &want, &out_strides, 4, port + GUARD, FILL, |b| {
                let q = i64::from(((b << shift) as i32) >> shift);
                simak_tests::dequant::reference(q, -3, 0.37f32.to_bits(), DType::F32)
            })
        };
        assert_eq!(got.as_slice(), expect.as_slice(), "conversion {head:?}");
    }
}

#[test]
fn preproc_yuv_frames_at_the_scalar_level_give_opencv_bytes() {
    // 10 × 16 frames and their RGB as decoded by OpenCV (tests/data/yuv/README.md).
    let frames: [(Format, &[u8], &[u8]); 2] = [
        (
            Format::NV12,
            include_bytes!("../../tests/data/yuv/nv12.yuv"),
            include_bytes!("../../tests/data/yuv/nv12.rgb"),
        ),
        (
            Format::I420,
            include_bytes!("../../tests/data/yuv/i420.yuv"),
            include_bytes!("../../tests/data/yuv/i420.rgb"),
        ),
    ];
    for (format, frame, rgb) in frames {
        let plan = preproc::check_inference(&preproc::Request {
            frame: Frame::packed(format, 10, 16),
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
        let prepared = a65::Prepared::<Preproc>::at(&plan, Level::Scalar).unwrap();
        let mut out = Aligned::new(rgb.len() * 4, 0);
        a65::execute_with_fp_control(&prepared, frame, out.as_mut_slice(), None).unwrap();
        for (k, v) in out.as_slice().chunks_exact(4).enumerate() {
            let got = f32::from_le_bytes(v.try_into().unwrap());
            assert_eq!(got, f32::from(rgb[k]), "{format:?} value {k}");
        }
    }
}
