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
//! Under Miri the FP control word is passed explicitly (`execute_with_fp_control`): reading
//! MXCSR is inline assembly, which Miri does not execute. The exact route never needs it.

#[path = "suite/support.rs"]
mod support;

use support::{SubmitEncoded, forward};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use simak::a65::{self, Level};
use simak::ev74::quant;
use simak::ev74::runtime::{
    Executor, Retire, RuntimeError, SimConfig, SimTransport, Transport, TransportError,
};
use simak::ops::quant::{Params, Plan, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_ev74_fw::Command;
use simak_tests::bytes::Aligned;
use simak_tests::oracle;

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
