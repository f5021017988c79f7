//! Strided layouts (SPEC §2) through the A65 Quant path.
//!
//! Fixed-seed random shapes (rank 0–6, empty and singleton axes) per input dtype, with
//! independent input and output strides: random physical axis orders, row padding (gaps),
//! singleton axes with arbitrary strides, sometimes plain contiguous ports. The output
//! buffer starts at a random (unaligned) offset inside a guard-filled allocation with extra
//! capacity past the span. Every element is checked against the oracle at an offset this
//! file computes itself (plain index × stride sums over a row-major odometer, not the
//! library's walker), and every byte no element maps to must still hold the guard. The same
//! prepared plan is then executed again on the dirty output, and on a scribbled output;
//! every other route this CPU offers and `Prepared::split` pieces must give the same bytes.

use simak::a65;
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::bytes::{self, Aligned};
use simak_tests::rng::Rng;
use simak_tests::{lib_run, oracle, profiles};

const CASES_PER_DTYPE: usize = 1000;
const GUARD: u8 = 0xa5;
const MAX_ELEMENTS: u64 = 3000;

#[derive(Debug, Default)]
struct Stats {
    cases: usize,
    elements: u64,
    by_rank: [usize; 7],
    empty: usize,
    with_singleton: usize,
    with_gap: usize,
    permuted: usize,
    contiguous_port: usize,
    same_order: usize,
    interior_outputs: u64,
    specials: u64,
    route_runs: usize,
    split_runs: usize,
}

/// How one port is laid out: per-axis byte strides as given to the library, and what the
/// generator did.
#[derive(Debug, Clone)]
struct PortLayout {
    /// Byte strides passed as `Layout::Strided`, or `None` for `Layout::Contiguous`.
    given: Option<Vec<u64>>,
    /// Byte strides used for offsets (row-major packed strides for a contiguous port).
    strides: Vec<u64>,
    gap: bool,
    permuted: bool,
}

fn packed_strides(ext: &[u64], elem: u64) -> Vec<u64> {
    let mut s = vec![0u64; ext.len()];
    let mut acc = elem;
    for a in (0..ext.len()).rev() {
        s[a] = acc;
        acc *= ext[a].max(1);
    }
    s
}

fn gen_layout(rng: &mut Rng, ext: &[u64], elem: u64, order: Option<&[usize]>) -> PortLayout {
    let r = ext.len();
    if order.is_none() && rng.chance(1, 6) {
        return PortLayout {
            given: None,
            strides: packed_strides(ext, elem),
            gap: false,
            permuted: false,
        };
    }
    // Physical order, innermost first.
    let perm: Vec<usize> = match order {
        Some(o) => o.to_vec(),
        None => {
            let mut p: Vec<usize> = (0..r).rev().collect();
            if rng.chance(2, 3) {
                rng.shuffle(&mut p);
            }
            p
        }
    };
    let permuted = perm.iter().copied().ne((0..r).rev());
    let mut strides = vec![0u64; r];
    let mut gap = false;
    let mut cur = if rng.chance(1, 6) {
        gap = true;
        elem * rng.range_i64(2, 3) as u64
    } else {
        elem
    };
    for &a in &perm {
        match ext[a] {
            1 => {
                // Any stride is admitted for an extent-1 axis (normalized to 0).
                strides[a] = match rng.below(7) {
                    0 => 0,
                    1 => 1,
                    2 => 3,
                    3 => cur,
                    4 => rng.below(1 << 40),
                    5 => u64::MAX,
                    _ => elem * 7,
                };
            }
            0 => {
                // Strides of an empty tensor are still validated: multiples of elem.
                strides[a] = elem * rng.below(5);
            }
            e => {
                strides[a] = cur;
                cur *= e;
                if rng.chance(1, 4) {
                    gap = true;
                    cur += elem * rng.range_i64(1, 3) as u64;
                }
            }
        }
    }
    PortLayout {
        given: Some(strides.clone()),
        strides,
        gap,
        permuted,
    }
}

/// `elem + Σ stride·(extent − 1)` over axes of extent > 1; 0 when empty.
fn span(ext: &[u64], strides: &[u64], elem: u64) -> u64 {
    if ext.contains(&0) {
        return 0;
    }
    elem + ext
        .iter()
        .zip(strides)
        .filter(|(e, _)| **e > 1)
        .map(|(e, s)| s * (e - 1))
        .sum::<u64>()
}

/// Logical indices in row-major order (one index for rank 0, none when empty).
fn for_each_index(ext: &[u64], mut f: impl FnMut(&[u64])) {
    if ext.contains(&0) {
        return;
    }
    let mut idx = vec![0u64; ext.len()];
    loop {
        f(&idx);
        let mut a = ext.len();
        loop {
            if a == 0 {
                return;
            }
            a -= 1;
            idx[a] += 1;
            if idx[a] < ext[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

fn offset(idx: &[u64], ext: &[u64], strides: &[u64]) -> usize {
    idx.iter()
        .zip(ext)
        .zip(strides)
        .filter(|((_, e), _)| **e > 1)
        .map(|((i, _), s)| (i * s) as usize)
        .sum()
}

fn specials(dtype: DType) -> &'static [u32] {
    match dtype {
        DType::F32 => &[
            0x7fc0_0000,
            0xffc0_0000,
            0x7f80_0001,
            0xffff_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x0000_0000,
            0x8000_0000,
            0x0000_0001,
            0x8000_0001,
            0x007f_ffff,
            0x0080_0000,
            0x7f7f_ffff,
            0xff7f_ffff,
        ],
        DType::BF16 => &[
            0x7fc0, 0xffc0, 0x7f81, 0xffff, 0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x8001, 0x007f,
            0x0080, 0x7f7f, 0xff7f,
        ],
        DType::F16 => &[
            0x7e00, 0xfe00, 0x7c01, 0xffff, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x0001, 0x8001, 0x03ff,
            0x0400, 0x7bff, 0xfbff,
        ],
        DType::I8 | DType::I16 | DType::I32 => unreachable!(),
    }
}

/// Random input element bits: specials, random bit patterns, and values whose product
/// lands on or near integers and ties in the INT8 range.
fn element(rng: &mut Rng, dtype: DType, m: u32, stats: &mut Stats) -> u32 {
    let roll = rng.below(100);
    if roll < 15 {
        stats.specials += 1;
        return *rng.pick(specials(dtype));
    }
    if roll < 40 {
        let b = rng.next_u32();
        return if dtype == DType::F32 { b } else { b & 0xffff };
    }
    let k = rng.range_i64(-200, 200) as f64;
    let frac = *rng.pick(&[0.0, 0.5, 0.25, 0.75, 0.499_999, 0.500_001, -0.5]);
    let v = (k + frac) / f32::from_bits(m) as f64;
    match dtype {
        DType::F32 => (v as f32).to_bits(),
        DType::BF16 => (v as f32).to_bits() >> 16,
        DType::F16 => half::f16::from_f64(v).to_bits() as u32,
        DType::I8 | DType::I16 | DType::I32 => unreachable!(),
    }
}

fn multiplier(rng: &mut Rng, all: &[u32]) -> u32 {
    if rng.chance(1, 2) {
        *rng.pick(all)
    } else {
        // Moderate multipliers keep most outputs inside the INT8 range.
        match rng.below(3) {
            0 => profiles::power_of_two(rng.range_i64(-8, 8) as i32),
            1 => profiles::POINT_THREE,
            _ => *rng.pick(&profiles::random_normal(16)),
        }
    }
}

fn to_array<const R: usize>(v: &[u64]) -> [u64; R] {
    v.try_into().expect("rank")
}

fn spec<const R: usize>(ext: &[u64], layout: &PortLayout, dtype: DType) -> TensorSpec<R> {
    match &layout.given {
        None => TensorSpec::contiguous(to_array(ext), dtype),
        Some(s) => TensorSpec::strided(to_array(ext), to_array(s), dtype),
    }
}

#[allow(clippy::too_many_arguments)]
fn run_case<const R: usize>(
    rng: &mut Rng,
    case: usize,
    dtype: DType,
    ext: &[u64],
    lin: &PortLayout,
    lout: &PortLayout,
    params: Params,
    stats: &mut Stats,
) {
    let ctx = format!(
        "case {case} {dtype} ext {ext:?} in {:?} out {:?} {params:?}",
        lin.given, lout.given
    );
    let plan = check_inference(&Request {
        input: spec::<R>(ext, lin, dtype),
        output: spec::<R>(ext, lout, DType::I8),
        params,
    })
    .unwrap_or_else(|e| panic!("{ctx}: rejected: {e:?}"));
    let elem = dtype.size_u64();
    let in_span = span(ext, &lin.strides, elem);
    let out_span = span(ext, &lout.strides, 1);
    assert_eq!(plan.input().span(), in_span, "{ctx}: input span");
    assert_eq!(plan.output().span(), out_span, "{ctx}: output span");
    let elements: u64 = ext.iter().product();
    assert_eq!(plan.elements(), elements, "{ctx}: element count");

    // Input: random junk everywhere (gaps included), then the elements.
    // The input starts at a random element-aligned offset (not only 64-byte aligned).
    let in_pre = rng.below(16) as usize * dtype.size();
    let in_extra = rng.below(9) as usize * dtype.size();
    let mut input = Aligned::new(in_pre + in_span as usize + in_extra, 0);
    for b in input.as_mut_slice() {
        *b = rng.next_u32() as u8;
    }
    let mut in_bits = Vec::new();
    for_each_index(ext, |idx| {
        let at = offset(idx, ext, &lin.strides);
        let b = element(rng, dtype, params.multiplier_bits, stats);
        bytes::write(dtype, input.as_mut_slice(), in_pre + at, b);
        in_bits.push(b);
    });
    let input_storage = input;
    let input = &input_storage.as_slice()[in_pre..];

    // Output: guard before (random start offset: any alignment), span, guard after.
    let pre = rng.below(16) as usize;
    let post = rng.below(24) as usize;
    let total = pre + out_span as usize + post;
    let mut out = vec![GUARD; total];
    let prepared = a65::quant::prepare(&plan);
    a65::quant::execute(&prepared, input, &mut out[pre..])
        .unwrap_or_else(|e| panic!("{ctx}: execute: {e:?}"));

    // Independent check of every element and of every unmapped byte.
    let mut mapped = vec![false; total];
    let mut expected = vec![0u8; total];
    let mut n = 0usize;
    let Params {
        multiplier_bits: m,
        zero_point: zp,
        rounding,
    } = params;
    for_each_index(ext, |idx| {
        let at_in = offset(idx, ext, &lin.strides);
        let at_out = pre + offset(idx, ext, &lout.strides);
        let bits = bytes::read(dtype, input, at_in);
        assert_eq!(
            bits, in_bits[n],
            "{ctx}: generator input aliasing at {idx:?}"
        );
        let want = oracle::quant(dtype, bits, m, zp, rounding);
        assert!(
            !mapped[at_out],
            "{ctx}: generator output aliasing at {idx:?}"
        );
        mapped[at_out] = true;
        expected[at_out] = want as u8;
        if want != -128 && want != 127 && want as i32 != zp {
            stats.interior_outputs += 1;
        }
        assert_eq!(
            out[at_out] as i8,
            want,
            "{ctx}: element {idx:?} input 0x{bits:x} (input offset {at_in}, output offset {})",
            at_out - pre
        );
        n += 1;
    });
    assert_eq!(n as u64, elements, "{ctx}: visited elements");
    for (i, (&o, &mp)) in out.iter().zip(&mapped).enumerate() {
        if !mp {
            assert_eq!(
                o,
                GUARD,
                "{ctx}: unmapped output byte {i} (buffer offset {}) was written",
                i as i64 - pre as i64
            );
        }
    }
    let first = out.clone();

    // Same plan, same dirty output: same bytes.
    a65::quant::execute(&prepared, input, &mut out[pre..])
        .unwrap_or_else(|e| panic!("{ctx}: second execute: {e:?}"));
    assert_eq!(
        out, first,
        "{ctx}: second execute on the dirty output differs"
    );

    // Same plan, scribbled output: mapped bytes as before, the scribble elsewhere kept.
    let scribble: Vec<u8> = (0..total).map(|_| rng.next_u32() as u8).collect();
    out.copy_from_slice(&scribble);
    a65::quant::execute(&prepared, input, &mut out[pre..])
        .unwrap_or_else(|e| panic!("{ctx}: third execute: {e:?}"));
    for i in 0..total {
        let want = if mapped[i] { expected[i] } else { scribble[i] };
        assert_eq!(out[i], want, "{ctx}: scribbled run, byte {i}");
    }

    // Every other route this CPU offers gives the same bytes (guard included).
    for other in lib_run::variants(&plan).into_iter().skip(1) {
        let mut o = vec![GUARD; total];
        a65::quant::execute(&other, input, &mut o[pre..])
            .unwrap_or_else(|e| panic!("{ctx}: execute [{}]: {e:?}", other.implementation()));
        assert_eq!(o, first, "{ctx}: route {} differs", other.implementation());
        stats.route_runs += 1;
    }

    // A split call, its pieces run in reverse order (and on threads for some cases), gives
    // the same bytes.
    for parts in [1, 2, 3, 7] {
        let mut o = vec![GUARD; total];
        let pieces = prepared
            .split(parts, input, &mut o[pre..])
            .unwrap_or_else(|e| panic!("{ctx}: split({parts}): {e:?}"));
        assert!(
            pieces.len() <= parts,
            "{ctx}: split({parts}) gave {}",
            pieces.len()
        );
        if elements > 0 {
            assert!(!pieces.is_empty(), "{ctx}: split({parts}) gave no piece");
        }
        if case.is_multiple_of(4) {
            std::thread::scope(|sc| {
                for piece in pieces {
                    sc.spawn(move || {
                        let mut piece = piece;
                        piece.run().unwrap()
                    });
                }
            });
        } else {
            for mut piece in pieces.into_iter().rev() {
                piece.run().unwrap();
            }
        }
        assert_eq!(o, first, "{ctx}: split into {parts} differs");
        stats.split_runs += 1;
    }

    stats.cases += 1;
    stats.elements += elements;
}

fn gen_extents(rng: &mut Rng) -> Vec<u64> {
    let r = rng.below(7) as usize;
    let mut ext: Vec<u64> = (0..r)
        .map(|_| match rng.below(100) {
            0..4 => 0,
            4..26 => 1,
            _ => rng.range_i64(2, 7) as u64,
        })
        .collect();
    if r > 0 && rng.chance(1, 5) {
        // A long axis (≥ 16 elements) for vector and panel routes.
        let a = rng.below(r as u64) as usize;
        ext[a] = rng.range_i64(16, 300) as u64;
    }
    while ext.iter().product::<u64>() > MAX_ELEMENTS {
        let (a, _) = ext
            .iter()
            .enumerate()
            .max_by_key(|(_, e)| **e)
            .expect("nonempty");
        ext[a] /= 2;
    }
    ext
}

fn sweep(dtype: DType, seed: u64) -> Stats {
    let mut rng = Rng::new(seed);
    let all = profiles::all(16);
    let mut stats = Stats::default();
    for case in 0..CASES_PER_DTYPE {
        let ext = gen_extents(&mut rng);
        let lin = gen_layout(&mut rng, &ext, dtype.size_u64(), None);
        // Sometimes the output shares the input's physical order (coalescible views).
        let lout = if rng.chance(1, 4) {
            stats.same_order += 1;
            let order: Vec<usize> = {
                let mut o: Vec<usize> = (0..ext.len()).collect();
                o.sort_by_key(|&a| (lin.strides[a], usize::MAX - a));
                o
            };
            gen_layout(&mut rng, &ext, 1, Some(&order))
        } else {
            gen_layout(&mut rng, &ext, 1, None)
        };
        let m = multiplier(&mut rng, &all);
        let params = Params::from_bits(m)
            .with_zero_point(rng.range_i64(-128, 127) as i32)
            .with_rounding(*rng.pick(&Rounding::ALL));
        stats.by_rank[ext.len()] += 1;
        stats.empty += ext.contains(&0) as usize;
        stats.with_singleton += ext.contains(&1) as usize;
        stats.with_gap += (lin.gap || lout.gap) as usize;
        stats.permuted += (lin.permuted || lout.permuted) as usize;
        stats.contiguous_port += (lin.given.is_none() || lout.given.is_none()) as usize;
        let r = &mut rng;
        let s = &mut stats;
        match ext.len() {
            0 => run_case::<0>(r, case, dtype, &ext, &lin, &lout, params, s),
            1 => run_case::<1>(r, case, dtype, &ext, &lin, &lout, params, s),
            2 => run_case::<2>(r, case, dtype, &ext, &lin, &lout, params, s),
            3 => run_case::<3>(r, case, dtype, &ext, &lin, &lout, params, s),
            4 => run_case::<4>(r, case, dtype, &ext, &lin, &lout, params, s),
            5 => run_case::<5>(r, case, dtype, &ext, &lin, &lout, params, s),
            6 => run_case::<6>(r, case, dtype, &ext, &lin, &lout, params, s),
            _ => unreachable!(),
        }
    }
    println!("{dtype}: {stats:?}");
    assert_eq!(stats.cases, CASES_PER_DTYPE);
    assert!(
        stats.by_rank.iter().all(|&n| n > 0),
        "every rank 0..=6 used"
    );
    for (what, n) in [
        ("empty", stats.empty),
        ("singleton", stats.with_singleton),
        ("gap", stats.with_gap),
        ("permuted", stats.permuted),
        ("contiguous port", stats.contiguous_port),
        ("same order", stats.same_order),
    ] {
        assert!(n >= 10, "{dtype}: too few cases with {what}: {n}");
    }
    assert!(stats.elements > 50_000, "{dtype}: too few elements");
    assert!(
        stats.interior_outputs > stats.elements / 6,
        "{dtype}: outputs mostly saturated"
    );
    assert!(stats.specials > 5_000, "{dtype}: too few special inputs");
    assert!(
        stats.route_runs >= stats.cases,
        "{dtype}: other routes not exercised"
    );
    assert_eq!(stats.split_runs, 4 * stats.cases);
    stats
}

#[test]
fn random_strided_layouts_f32() {
    sweep(DType::F32, 0x1a70_0000_0000_00f3);
}

#[test]
fn random_strided_layouts_bf16() {
    sweep(DType::BF16, 0x1a70_0000_0000_0b16);
}

#[test]
fn random_strided_layouts_f16() {
    sweep(DType::F16, 0x1a70_0000_0000_0f16);
}

/// A hand-made case whose answer is known without the generator: a transposed input with
/// column padding into a padded column-major output.
#[test]
fn transposed_padded_golden() {
    // Logical [2, 3]: x[i][j] = 10·i + j − 12 (f32), multiplier 0.5, toward-negative, zp 1.
    // Input: column-major with a 1-element gap after each column: strides (4, 12).
    // Output: strides (1, 3): column-major with a 1-byte gap after each column.
    let xs = [[-12.0f32, -11.0, -10.0], [-2.0, -1.0, 0.0]];
    let mut input = Aligned::new(4 * 9, 0xee);
    for (i, row) in xs.iter().enumerate() {
        for (j, &x) in row.iter().enumerate() {
            let at = 4 * i + 12 * j;
            input.as_mut_slice()[at..at + 4].copy_from_slice(&x.to_le_bytes());
        }
    }
    let plan = check_inference(&Request {
        input: TensorSpec::strided([2, 3], [4, 12], DType::F32),
        output: TensorSpec::strided([2, 3], [1, 3], DType::I8),
        params: Params::new(0.5)
            .with_zero_point(1)
            .with_rounding(Rounding::TowardNegative),
    })
    .unwrap();
    assert_eq!(plan.input().span(), 4 + 4 + 2 * 12);
    assert_eq!(plan.output().span(), 1 + 1 + 2 * 3);
    let mut out = [GUARD; 10];
    a65::quant::execute(&a65::quant::prepare(&plan), input.as_slice(), &mut out).unwrap();
    // x/2: -6, -5.5, -5 | -1, -0.5, 0 → floor: -6, -6, -5 | -1, -1, 0 → +1: -5, -5, -4 | 0, 0, 1.
    // Output offsets: (0,0) 0, (1,0) 1, (0,1) 3, (1,1) 4, (0,2) 6, (1,2) 7; 2, 5, 8, 9 untouched.
    let g = GUARD as i8;
    assert_eq!(out.map(|b| b as i8), [-5, 0, g, -5, 0, g, -4, 1, g, g]);
}

/// Contiguous runs of every length 0 … 300 (and a few long ones) at random element-aligned
/// input offsets and arbitrary output offsets, through every route: vector bodies and
/// scalar tails of each length, against the oracle, guard bytes untouched.
#[test]
fn contiguous_run_lengths_and_offsets() {
    let mut rng = Rng::new(0x7a11_0000_0000_0001);
    let all = profiles::all(16);
    let mut stats = Stats::default();
    let mut runs = 0usize;
    let lengths: Vec<usize> = (0..=300).chain([511, 512, 513, 1023, 4097]).collect();
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        for &n in &lengths {
            let m = multiplier(&mut rng, &all);
            let params = Params::from_bits(m)
                .with_zero_point(rng.range_i64(-128, 127) as i32)
                .with_rounding(*rng.pick(&Rounding::ALL));
            let bits: Vec<u32> = (0..n)
                .map(|_| element(&mut rng, dtype, m, &mut stats))
                .collect();
            let in_pre = rng.below(16) as usize * dtype.size();
            let mut storage = Aligned::new(in_pre + n * dtype.size() + 8, 0x5a);
            for (k, &b) in bits.iter().enumerate() {
                bytes::write(dtype, storage.as_mut_slice(), in_pre + k * dtype.size(), b);
            }
            let input = &storage.as_slice()[in_pre..];
            let want: Vec<i8> = bits
                .iter()
                .map(|&b| oracle::quant(dtype, b, m, params.zero_point, params.rounding))
                .collect();
            let plan = check_inference(&Request {
                input: TensorSpec::contiguous([n as u64], dtype),
                output: TensorSpec::contiguous([n as u64], DType::I8),
                params,
            })
            .unwrap();
            for prepared in lib_run::variants(&plan) {
                let pre = rng.below(64) as usize;
                let mut out = vec![GUARD; pre + n + 16];
                a65::quant::execute(&prepared, input, &mut out[pre..]).unwrap();
                let route = prepared.implementation();
                for (k, &w) in want.iter().enumerate() {
                    assert_eq!(
                        out[pre + k] as i8,
                        w,
                        "{dtype} [{route}] n={n} in_pre={in_pre} out_pre={pre} element {k} \
                         input 0x{:x} {params:?}",
                        bits[k]
                    );
                }
                assert!(
                    out[..pre].iter().all(|&b| b == GUARD),
                    "{dtype} [{route}] n={n}"
                );
                assert!(
                    out[pre + n..].iter().all(|&b| b == GUARD),
                    "{dtype} [{route}] n={n}"
                );
                runs += 1;
            }
        }
    }
    println!("contiguous runs: {runs} (lengths 0..=300 and long ones × 3 dtypes × routes)");
    assert!(runs >= 2 * 3 * lengths.len());
}
