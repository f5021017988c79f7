//! The partition API of CastTess and QuantTess (`Prepared::split`, issue 14 scope 4)
//! against the independent oracles of `simak_tests` (plain-loop tiling of SPEC §5, BF16
//! conversion, f64 Quant): for every split count 1..=8, on fixed shapes (boundary tiles,
//! C tiles, an outer axis, compact and PadTo16, FP32/BF16/FP16, strided input, a single
//! tile) and random cases, at every kernel level or Quant route this CPU offers:
//! - the pieces, run concurrently, give the oracle's bytes and leave the guard after the
//!   required span untouched;
//! - their output ranges are whole 16-byte blocks, in order, and cover `0..capacity`
//!   exactly once; their tiles cover every tile once; as many pieces as `parts` allows;
//! - each piece run alone into a guard-filled (0xA5) buffer writes its range with the
//!   oracle's bytes and no byte outside it.

use crate::tess_common;

use std::ops::Range;

use simak::DType;
use simak::a65::{self, ExecuteError, Level};
use simak::layout::Channels;
use simak::ops::quant::{Params, Rounding};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;
use tess_common::*;

/// What one split call reports: each piece's (output byte range, tiles).
type Ranges = Vec<(Range<usize>, Range<usize>)>;

/// Checks one prepared plan's split for every count 1..=8. `split` splits a call into
/// `parts` over `out`, runs every piece (concurrently) or only piece `only`, and returns
/// the pieces' ranges. Returns the number of pieces checked.
fn check_split(
    what: &str,
    expected: &[u8],
    tiles: usize,
    split: impl Fn(usize, &mut [u8], Option<usize>) -> Ranges,
) -> usize {
    let cap = expected.len();
    let mut checked = 0;
    // Parts 1 to 8; 1, 4, 7 and 8 when sweeps are sampled.
    let all: Vec<usize> = (1..=8).collect();
    for parts in simak_tests::sweeps::pick(&all, 3) {
        let what = format!("{what} parts {parts}");
        // All pieces, concurrently.
        let mut buf = Aligned::new(cap + GUARD, DIRTY);
        let ranges = split(parts, buf.as_mut_slice(), None);
        let (span, guard) = buf.as_slice().split_at(cap);
        if let Some(k) = span.iter().zip(expected).position(|(a, b)| a != b) {
            panic!(
                "{what}: byte {k} of {cap} is {:#04x}, expected {:#04x}",
                span[k], expected[k]
            );
        }
        assert!(guard.iter().all(|&b| b == DIRTY), "{what}: guard touched");
        // The pieces' ranges: whole blocks, in order, exactly 0..cap; tiles likewise.
        assert_eq!(ranges.len(), parts.min(tiles), "{what}: piece count");
        let (mut at, mut tile) = (0, 0);
        for (bytes, t) in &ranges {
            assert_eq!(bytes.start, at, "{what}: ranges adjacent");
            assert!(
                bytes.start % 16 == 0 && bytes.len() % 16 == 0 && !bytes.is_empty(),
                "{what}: {bytes:?} whole blocks"
            );
            assert_eq!(t.start, tile, "{what}: tiles adjacent");
            assert!(!t.is_empty(), "{what}: tiles of {bytes:?}");
            at = bytes.end;
            tile = t.end;
        }
        assert_eq!((at, tile), (cap, tiles), "{what}: cover");
        // Balanced: tile counts differ by at most one.
        let counts: Vec<usize> = ranges.iter().map(|r| r.1.len()).collect();
        assert!(
            counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
            "{what}: {counts:?}"
        );
        // Each piece alone writes exactly its range.
        for (k, (bytes, _)) in ranges.iter().enumerate() {
            let mut buf = Aligned::new(cap + GUARD, DIRTY);
            split(parts, buf.as_mut_slice(), Some(k));
            for (i, &b) in buf.as_slice().iter().enumerate() {
                if bytes.contains(&i) {
                    assert_eq!(b, expected[i], "{what}: piece {k} {bytes:?} byte {i}");
                } else {
                    assert_eq!(b, DIRTY, "{what}: piece {k} {bytes:?} wrote byte {i}");
                }
            }
            checked += 1;
        }
    }
    checked
}

/// Runs `pieces` on scoped threads (all), or only piece `only` on this thread.
fn run_pieces<P: Send>(pieces: Vec<P>, only: Option<usize>, run: impl Fn(&mut P) + Sync) {
    match only {
        Some(k) => pieces
            .into_iter()
            .skip(k)
            .take(1)
            .for_each(|mut p| run(&mut p)),
        None => std::thread::scope(|s| {
            for mut p in pieces {
                let run = &run;
                s.spawn(move || run(&mut p));
            }
        }),
    }
}

fn tiles_of(view: &simak::layout::TiledView) -> usize {
    (view.tiles_per_outer() * view.outer_count()) as usize
}

fn check_cast(case: &Case, input: &Aligned) -> usize {
    let plan = cast_plan(case);
    let expected = expected_cast(case, input.as_slice());
    let tiles = tiles_of(plan.output());
    let mut checked = 0;
    for p in levels(&plan) {
        let what = format!("casttess {} {case:?}", p.implementation());
        checked += check_split(&what, &expected, tiles, |parts, out, only| {
            let pieces = p.split(parts, input.as_slice(), out).unwrap();
            let ranges = pieces
                .iter()
                .map(|q| (q.output_range(), q.tiles()))
                .collect();
            run_pieces(pieces, only, |q| q.run().unwrap());
            ranges
        });
    }
    checked
}

fn check_quant(case: &Case, params: Params, input: &Aligned) -> usize {
    let plan = quant_plan(case, params);
    let expected = expected_quant(case, input.as_slice(), params);
    let tiles = tiles_of(plan.output());
    let mut checked = 0;
    for route in Level::ALL.into_iter().rev() {
        let Ok(p) = a65::quanttess::prepare_at(&plan, route) else {
            continue;
        };
        let what = format!("quanttess {} {case:?}", p.implementation());
        checked += check_split(&what, &expected, tiles, |parts, out, only| {
            let pieces = p.split(parts, input.as_slice(), out).unwrap();
            let ranges = pieces
                .iter()
                .map(|q| (q.output_range(), q.tiles()))
                .collect();
            run_pieces(pieces, only, |q| q.run().unwrap());
            ranges
        });
    }
    checked
}

/// A case over `shape` with contiguous input (or strided, with `gap` elements after each
/// row of the fastest axis).
fn fixed(
    dtype: DType,
    shape: &[u64],
    axes: [Option<u8>; 4],
    tile: [u32; 4],
    channels: Channels,
    gap: u64,
) -> Case {
    let elem = dtype.size() as u64;
    let mut strides = vec![0u64; shape.len()];
    let mut span = elem;
    for a in (0..shape.len()).rev() {
        strides[a] = span;
        span = strides[a] * shape[a] + if a == shape.len() - 1 { gap * elem } else { 0 };
    }
    let input_len = (span as usize).max(elem as usize);
    Case {
        dtype,
        shape: shape.to_vec(),
        strides,
        input_len,
        axes,
        tile,
        channels,
    }
}

/// The fixed shapes: an image with boundary H and W tiles (the frame's tile), C tiles, an
/// outer axis, planar input, a single tile, a strided input; both channel modes.
fn fixed_cases(dtype: DType) -> Vec<Case> {
    let hwc = [None, Some(0), Some(1), Some(2)];
    let mut cases = Vec::new();
    for channels in [Channels::Compact, Channels::PadTo16] {
        cases.push(fixed(
            dtype,
            &[40, 200, 3],
            hwc,
            [1, 16, 64, 3],
            channels,
            0,
        ));
        cases.push(fixed(
            dtype,
            &[40, 200, 3],
            hwc,
            [1, 16, 64, 3],
            channels,
            5,
        ));
        cases.push(fixed(dtype, &[9, 30, 20], hwc, [1, 4, 8, 6], channels, 0));
        cases.push(fixed(
            dtype,
            &[3, 5, 17, 4],
            [Some(1), Some(2), Some(3), None],
            [2, 4, 3, 1],
            channels,
            1,
        ));
        cases.push(fixed(
            dtype,
            &[2, 7, 33, 3],
            hwc.map(|a| a.map(|x| x + 1)),
            [1, 3, 16, 3],
            channels,
            0,
        ));
        cases.push(fixed(
            dtype,
            &[3, 12, 10],
            [None, Some(1), Some(2), Some(0)],
            [1, 4, 4, 3],
            channels,
            0,
        ));
        cases.push(fixed(dtype, &[5, 6, 3], hwc, [1, 5, 6, 3], channels, 0));
        cases.push(fixed(dtype, &[1, 70, 1], hwc, [1, 1, 7, 1], channels, 0));
    }
    cases
}

#[test]
fn casttess_split_gives_the_bytes_of_one_call() {
    let mut rng = Rng::new(0x5b11_7000);
    let mut checked = 0;
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        for case in fixed_cases(dtype) {
            let input = fill_input(&mut rng, &case);
            checked += check_cast(&case, &input);
        }
        for _ in 0..20 {
            let rank = 1 + rng.below(4) as usize;
            let shape: Vec<u64> = (0..rank).map(|_| 1 + rng.below(9)).collect();
            let case = Case::random(&mut rng, dtype, shape);
            let input = fill_input(&mut rng, &case);
            checked += check_cast(&case, &input);
        }
    }
    assert!(checked > 3000, "{checked}");
}

#[test]
fn quanttess_split_gives_the_bytes_of_one_call() {
    let mut rng = Rng::new(0x5b11_7001);
    let mut checked = 0;
    for (k, dtype) in [DType::F32, DType::BF16, DType::F16]
        .into_iter()
        .enumerate()
    {
        let params = Params::new([0.37f32, 2.5, 0.0625][k])
            .with_zero_point([-3, 0, 11][k])
            .with_rounding(
                [
                    Rounding::NearestEven,
                    Rounding::TowardZero,
                    Rounding::TowardNegative,
                ][k],
            );
        for case in fixed_cases(dtype) {
            let input = fill_input(&mut rng, &case);
            checked += check_quant(&case, params, &input);
        }
        for _ in 0..20 {
            let rank = 1 + rng.below(4) as usize;
            let shape: Vec<u64> = (0..rank).map(|_| 1 + rng.below(9)).collect();
            let case = Case::random(&mut rng, dtype, shape);
            let input = fill_input(&mut rng, &case);
            checked += check_quant(&case, params, &input);
        }
    }
    assert!(checked > 1000, "{checked}");
}

/// Bad buffers are refused by `split` before anything is written; an empty plan gives no
/// pieces; `parts` 0 counts as 1.
#[test]
fn split_checks_buffers_first() {
    let case = fixed(
        DType::F32,
        &[40, 200, 3],
        [None, Some(0), Some(1), Some(2)],
        [1, 16, 64, 3],
        Channels::Compact,
        0,
    );
    let input = Aligned::new(case.input_len, 0x3f);
    let cap = cast_plan(&case).output().capacity() as usize;
    let cast = a65::casttess::prepare(&cast_plan(&case));
    let quant = a65::quanttess::prepare(&quant_plan(&case, Params::new(1.0)));
    let mut buf = Aligned::new(cap + 16, DIRTY);
    let short = &mut buf.as_mut_slice()[..cap - 16];
    assert!(matches!(
        cast.split(2, input.as_slice(), short),
        Err(ExecuteError::Capacity { .. })
    ));
    let qcap = quant.plan().output().capacity() as usize;
    let short = &mut buf.as_mut_slice()[..qcap - 16];
    assert!(matches!(
        quant.split(2, input.as_slice(), short),
        Err(ExecuteError::Capacity { .. })
    ));
    let misaligned = &mut buf.as_mut_slice()[1..cap + 1];
    assert!(matches!(
        cast.split(2, input.as_slice(), misaligned),
        Err(ExecuteError::Misaligned { .. })
    ));
    let misaligned = &mut buf.as_mut_slice()[1..qcap + 1];
    assert!(matches!(
        quant.split(2, input.as_slice(), misaligned),
        Err(ExecuteError::Misaligned { .. })
    ));
    assert!(buf.as_slice().iter().all(|&b| b == DIRTY));
    assert_eq!(
        cast.split(0, input.as_slice(), &mut buf.as_mut_slice()[..cap])
            .unwrap()
            .len(),
        1
    );
    let empty = fixed(
        DType::F32,
        &[0, 200, 3],
        [None, Some(0), Some(1), Some(2)],
        [1, 16, 64, 3],
        Channels::Compact,
        0,
    );
    let prepared = a65::casttess::prepare(&cast_plan(&empty));
    assert!(prepared.split(4, &[], &mut []).unwrap().is_empty());
    let prepared = a65::quanttess::prepare(&quant_plan(&empty, Params::new(1.0)));
    assert!(prepared.split(4, &[], &mut []).unwrap().is_empty());
}
