//! `a65::execute_threaded` (issue 22 scope 2) for every op (Quant, CastTess, QuantTess) at
//! 1, 2, 3 and 7 threads against one single-threaded `execute` of the same prepared plan,
//! byte for byte over the whole buffer (the required span and a guard after it), both
//! starting from the same dirty (non-zero, position-dependent) contents:
//! - Quant with strided outputs that leave gaps: every gap byte keeps its dirty value (the
//!   map of written bytes is computed here from the output strides, not by the library);
//! - CastTess and QuantTess: the first `capacity` bytes are fully rewritten (two different
//!   dirty patterns give the same bytes) and the guard after them is untouched.

use crate::tess_common::{self, Case, GUARD};

use simak::a65::{self, HostOp};
use simak::layout::{Channels, MlaTiled};
use simak::ops::quant::{self, Params, Rounding};
use simak::{DType, DynSpec};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;

/// The thread counts of the issue.
const THREADS: [usize; 4] = [1, 2, 3, 7];

/// A dirty buffer of `len` bytes (16-byte aligned): byte `k` is a function of `k` and
/// `seed`, never one fill value.
fn dirty(len: usize, seed: u8) -> Aligned {
    let mut buf = Aligned::new(len, 0);
    for (k, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (k as u8).wrapping_mul(31) ^ seed ^ ((k >> 8) as u8);
    }
    buf
}

/// Runs `prepared` once with `execute` and with `execute_threaded` at every count of
/// [`THREADS`] over dirty buffers of `out_len` + [`GUARD`] bytes; checks the whole
/// buffers are equal and returns the single-threaded result (seeded with `seed`).
fn check_threads<O: HostOp>(
    what: &str,
    prepared: &a65::Prepared<O>,
    input: &[u8],
    out_len: usize,
    seed: u8,
) -> Aligned {
    let mut expected = dirty(out_len + GUARD, seed);
    a65::execute(prepared, input, expected.as_mut_slice())
        .unwrap_or_else(|e| panic!("{what}: execute: {e}"));
    for threads in THREADS {
        let mut got = dirty(out_len + GUARD, seed);
        a65::execute_threaded(prepared, threads, input, got.as_mut_slice())
            .unwrap_or_else(|e| panic!("{what}: {threads} threads: {e}"));
        if let Some(k) = got
            .as_slice()
            .iter()
            .zip(expected.as_slice())
            .position(|(a, b)| a != b)
        {
            panic!(
                "{what}: {threads} threads: byte {k} of {} is {:#04x}, execute wrote {:#04x}",
                out_len + GUARD,
                got.as_slice()[k],
                expected.as_slice()[k]
            );
        }
    }
    expected
}

/// Byte offsets of the output that a strided INT8 output of `shape` with byte `strides`
/// maps elements to.
fn written(shape: &[u64], strides: &[u64], len: usize) -> Vec<bool> {
    let mut map = vec![false; len];
    let dims: Vec<usize> = shape.iter().map(|&n| n as usize).collect();
    tess_common::for_each_index(&dims, |i| {
        let at: usize = i.iter().zip(strides).map(|(&i, &s)| i * s as usize).sum();
        map[at] = true;
    });
    map
}

/// Random input bytes of `len` (16-byte aligned).
fn random_input(rng: &mut Rng, len: usize) -> Aligned {
    let mut buf = Aligned::new(len, 0);
    for b in buf.as_mut_slice().iter_mut() {
        *b = rng.next_u32() as u8;
    }
    buf
}

/// A Quant case: input dtype, shape, input byte strides (`None`: contiguous), output byte
/// strides.
type QuantCase = (DType, Vec<u64>, Option<Vec<u64>>, Vec<u64>);

#[test]
fn quant_threaded_equals_execute() {
    let mut rng = Rng::new(0x7e4d_0022);
    let cases: [QuantCase; 5] = [
        // Contiguous, many rows.
        (DType::F32, vec![64, 1000], None, vec![1000, 1]),
        // Output rows with gaps (row pitch 1003 for 1000 bytes).
        (DType::BF16, vec![37, 1000], None, vec![1003, 1]),
        // Every other output byte a gap, and gaps between rows.
        (DType::F16, vec![29, 300], None, vec![640, 2]),
        // Transposed output with gaps, strided input.
        (
            DType::F32,
            vec![300, 23],
            Some(vec![4 * 25, 4]),
            vec![1, 320],
        ),
        // Three axes, a gap after each row and each plane.
        (DType::BF16, vec![9, 13, 70], None, vec![13 * 75 + 5, 75, 1]),
    ];
    for (dtype, shape, in_strides, out_strides) in cases {
        let elem = dtype.size() as u64;
        let in_strides = in_strides.unwrap_or_else(|| {
            let mut s = vec![elem; shape.len()];
            for a in (0..shape.len() - 1).rev() {
                s[a] = s[a + 1] * shape[a + 1];
            }
            s
        });
        for rounding in [Rounding::NearestEven, Rounding::TowardZero] {
            let plan = quant::check_inference_dyn(&quant::DynRequest {
                input: DynSpec::strided(&shape, &in_strides, dtype),
                output: DynSpec::strided(&shape, &out_strides, DType::I8),
                params: Params::new(0.37)
                    .with_zero_point(-3)
                    .with_rounding(rounding),
            })
            .unwrap_or_else(|e| panic!("{shape:?}: {e}"));
            let input = random_input(&mut rng, plan.input().span() as usize);
            let out_len = plan.output().span() as usize;
            let map = written(&shape, &out_strides, out_len);
            assert!(
                map.iter().any(|&w| !w) || out_strides.last() == Some(&1),
                "a gap case has gaps"
            );
            for prepared in [a65::quant::prepare(&plan), a65::quant::prepare_exact(&plan)] {
                let what = format!(
                    "quant {dtype} {shape:?} out {out_strides:?} {rounding:?} {}",
                    prepared.implementation()
                );
                let seed = 0x3c;
                let out = check_threads(&what, &prepared, input.as_slice(), out_len, seed);
                // Gap bytes and the guard keep their dirty values.
                let before = dirty(out_len + GUARD, seed);
                for (k, (&b, &d)) in out.as_slice().iter().zip(before.as_slice()).enumerate() {
                    if k >= out_len || !map[k] {
                        assert_eq!(b, d, "{what}: gap byte {k} written");
                    }
                }
            }
        }
    }
}

/// Tiled cases: an image with boundary tiles (many tiles), a short one (fewer tiles than
/// threads), a strided input, both channel modes; plus random cases.
fn tiled_cases(rng: &mut Rng) -> Vec<Case> {
    let hwc = [None, Some(0), Some(1), Some(2)];
    let mut cases = Vec::new();
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let e = dtype.size() as u64;
        for channels in [Channels::Compact, Channels::PadTo16] {
            let layout = MlaTiled::new(hwc, [1, 16, 64, 3], channels);
            cases.push(Case::strided(
                dtype,
                vec![70, 200, 3],
                vec![200 * 3 * e, 3 * e, e],
                layout,
            ));
            cases.push(Case::strided(
                dtype,
                vec![16, 130, 3],
                vec![130 * 3 * e, 3 * e, e],
                layout,
            ));
            // Strided input: a gap of 2 elements after each row.
            cases.push(Case::strided(
                dtype,
                vec![40, 100, 3],
                vec![(100 * 3 + 2) * e, 3 * e, e],
                MlaTiled::new(hwc, [1, 8, 16, 3], channels),
            ));
        }
        for _ in 0..3 {
            let shape = vec![
                1 + (rng.next_u32() % 40) as u64,
                1 + (rng.next_u32() % 90) as u64,
                1 + (rng.next_u32() % 7) as u64,
            ];
            cases.push(Case::random(rng, dtype, shape));
        }
    }
    cases
}

/// The tiled checks: `check_threads`, then the capacity fully rewritten (a second dirty
/// pattern gives the same bytes) and the guard untouched.
fn check_tiled<O: HostOp>(what: &str, prepared: &a65::Prepared<O>, input: &[u8], cap: usize) {
    let first = check_threads(what, prepared, input, cap, 0x5a);
    let second = check_threads(what, prepared, input, cap, 0xc3);
    assert_eq!(
        first.as_slice()[..cap],
        second.as_slice()[..cap],
        "{what}: capacity not fully rewritten"
    );
    let before = dirty(cap + GUARD, 0x5a);
    assert_eq!(
        first.as_slice()[cap..],
        before.as_slice()[cap..],
        "{what}: guard touched"
    );
}

#[test]
fn casttess_threaded_equals_execute() {
    let mut rng = Rng::new(0x7e4d_0023);
    for case in tiled_cases(&mut rng) {
        let plan = tess_common::cast_plan(&case);
        let input = tess_common::fill_input(&mut rng, &case);
        let cap = plan.output().capacity() as usize;
        // Independent of the library: the tiling oracle of SPEC §5.
        let expected = tess_common::expected_cast(&case, input.as_slice());
        let prepared = a65::casttess::prepare(&plan);
        let what = format!("casttess {case:?} {}", prepared.implementation());
        check_tiled(&what, &prepared, input.as_slice(), cap);
        let mut out = dirty(cap + GUARD, 1);
        a65::execute_threaded(&prepared, 3, input.as_slice(), out.as_mut_slice()).unwrap();
        assert_eq!(out.as_slice()[..cap], expected[..], "{what}: oracle");
    }
}

#[test]
fn quanttess_threaded_equals_execute() {
    let mut rng = Rng::new(0x7e4d_0024);
    let params = Params::new(0.25).with_zero_point(5);
    for case in tiled_cases(&mut rng) {
        let plan = tess_common::quant_plan(&case, params);
        let input = tess_common::fill_input(&mut rng, &case);
        let cap = plan.output().capacity() as usize;
        let expected = tess_common::expected_quant(&case, input.as_slice(), params);
        for prepared in [
            a65::quanttess::prepare(&plan),
            a65::quanttess::prepare_exact(&plan),
        ] {
            let what = format!("quanttess {case:?} {}", prepared.implementation());
            check_tiled(&what, &prepared, input.as_slice(), cap);
            let mut out = dirty(cap + GUARD, 2);
            a65::execute_threaded(&prepared, 7, input.as_slice(), out.as_mut_slice()).unwrap();
            assert_eq!(out.as_slice()[..cap], expected[..], "{what}: oracle");
        }
    }
}

#[test]
fn threaded_checks_buffers_before_writing() {
    let plan = quant::check_inference(&quant::Request {
        input: simak::TensorSpec::contiguous([64, 64], DType::F32),
        output: simak::TensorSpec::contiguous([64, 64], DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    let prepared = a65::quant::prepare(&plan);
    let input = Aligned::new(64 * 64 * 4, 0);
    let mut out = dirty(64 * 64 - 1, 9);
    let before = out.as_slice().to_vec();
    for threads in THREADS {
        let e = a65::execute_threaded(&prepared, threads, input.as_slice(), out.as_mut_slice())
            .unwrap_err();
        assert_eq!(e.code(), 0x402, "{threads} threads: {e}");
        assert_eq!(
            out.as_slice(),
            &before[..],
            "{threads} threads: nothing written"
        );
    }
}
