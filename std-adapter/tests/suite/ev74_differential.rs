//! A65 vs EV74-sim: byte-identical outputs on fixed-seed shapes (SPEC §8).
//!
//! Per input dtype, 320 fixed-seed requests: rank 0–6, empty tensors, contiguous ports,
//! permuted and padded (gapped) strides, scatter layouts (inner stride > element), long
//! contiguous runs that cross DMA block boundaries and short rows grouped into 2D blocks.
//! Each runs on the simulator with 1, 2, 3 and 4 workers into a dirty output buffer with
//! extra capacity, then again on the same (now written) buffer. The expectation is the A65
//! exact integer path (`prepare_at(.., Level::Scalar)`) on an identical dirty buffer;
//! additionally every byte no element maps to must still hold its dirty value (computed
//! here from index × stride sums, not by the library).

use simak::a65::{self, Level};
use simak::ev74::quant::{SimOptions, run_sim_with};
use simak::ops::quant::{Params, Plan, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_ev74_fw::SpanKind;
use simak_tests::bytes::Aligned;
use simak_tests::profiles;
use simak_tests::rng::Rng;

const CASES_PER_DTYPE: usize = 320;

#[derive(Debug, Default)]
struct Stats {
    cases: usize,
    runs: usize,
    by_rank: [usize; 7],
    empty: usize,
    kinds: [usize; 5],
    elements: u64,
    exact_blocks: u64,
    fast_blocks: u64,
}

fn packed(ext: &[u64], elem: u64, order: &[usize], pad: &[u64]) -> Vec<u64> {
    // `order` lists axes innermost first; `pad[k]` extra elements after axis order[k].
    let mut s = vec![0u64; ext.len()];
    let mut acc = elem;
    for (k, &a) in order.iter().enumerate() {
        s[a] = acc;
        acc = acc * ext[a].max(1) + pad[k] * elem;
    }
    s
}

/// Builds one port's strides: `None` = contiguous layout.
fn port(rng: &mut Rng, ext: &[u64], elem: u64, scatter: bool) -> Option<Vec<u64>> {
    let r = ext.len();
    if r == 0 || (!scatter && rng.chance(1, 3)) {
        return None;
    }
    let mut order: Vec<usize> = (0..r).rev().collect();
    if rng.chance(1, 2) {
        rng.shuffle(&mut order);
    }
    let mut pad: Vec<u64> = (0..r)
        .map(|_| if rng.chance(1, 3) { rng.below(5) } else { 0 })
        .collect();
    let mut s = packed(ext, elem, &order, &pad);
    if scatter {
        // Inner stride of 2–3 elements: no contiguous suffix.
        let inner = order[0];
        let k = 2 + rng.below(2);
        pad[0] = 0;
        let mut acc = elem * k;
        for &a in &order {
            s[a] = acc;
            acc = acc * ext[a].max(1) + elem;
            if a == inner {
                acc = s[a] * ext[a].max(1);
            }
        }
    }
    // Singleton axes get arbitrary strides (normalized by admission).
    for a in 0..r {
        if ext[a] == 1 && rng.chance(1, 2) {
            s[a] = rng.below(1000) * elem;
        }
    }
    Some(s)
}

fn gen_extents(rng: &mut Rng, rank: usize, profile: u64) -> Vec<u64> {
    let mut ext: Vec<u64> = (0..rank).map(|_| 1 + rng.below(6)).collect();
    if rank == 0 {
        return ext;
    }
    match profile {
        0 => {
            let a = rng.below(rank as u64) as usize;
            ext[a] = 0;
        }
        1 => {
            // Long contiguous inner run: crosses DMA blocks.
            for e in ext.iter_mut() {
                *e = 1;
            }
            ext[rank - 1] = 4000 + rng.below(30_000);
            if rank > 1 {
                ext[rank - 2] = 1 + rng.below(3);
            }
        }
        2 => {
            // Rows of 128–700 elements: DMA with 2D grouping.
            ext[rank - 1] = 128 + rng.below(600);
            if rank > 1 {
                ext[rank - 2] = 2 + rng.below(40);
            }
            for e in ext.iter_mut().take(rank.saturating_sub(2)) {
                *e = 1 + rng.below(2);
            }
        }
        3 => {
            // Direct rows of 16–127 elements.
            ext[rank - 1] = 16 + rng.below(112);
        }
        4 => {
            // One element in a big shape (a single work unit).
            for e in ext.iter_mut() {
                *e = 1;
            }
        }
        _ => {}
    }
    let total: u64 = ext.iter().product();
    if total > 40_000 {
        // Keep small shapes small.
        for e in ext.iter_mut().take(rank.saturating_sub(1)) {
            *e = (*e).min(2);
        }
    }
    ext
}

fn random_bits(rng: &mut Rng, dtype: DType) -> u32 {
    let specials32 = [
        0u32,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0001,
        1,
        0x807f_ffff,
    ];
    let raw = if rng.chance(1, 16) {
        *rng.pick(&specials32)
    } else {
        rng.next_u32()
    };
    match dtype {
        DType::F32 => raw,
        _ => raw >> 16,
    }
}

fn plan_for<const R: usize>(
    ext: &[u64],
    dtype: DType,
    si: &Option<Vec<u64>>,
    so: &Option<Vec<u64>>,
    params: Params,
) -> Plan {
    let e: [u64; R] = ext.try_into().unwrap();
    let spec = |s: &Option<Vec<u64>>, d| match s {
        None => TensorSpec::contiguous(e, d),
        Some(v) => TensorSpec::strided(e, v.as_slice().try_into().unwrap(), d),
    };
    check_inference(&Request {
        input: spec(si, dtype),
        output: spec(so, DType::I8),
        params,
    })
    .expect("generated request admitted")
}

fn plan_of(
    ext: &[u64],
    dtype: DType,
    si: &Option<Vec<u64>>,
    so: &Option<Vec<u64>>,
    params: Params,
) -> Plan {
    match ext.len() {
        0 => plan_for::<0>(ext, dtype, si, so, params),
        1 => plan_for::<1>(ext, dtype, si, so, params),
        2 => plan_for::<2>(ext, dtype, si, so, params),
        3 => plan_for::<3>(ext, dtype, si, so, params),
        4 => plan_for::<4>(ext, dtype, si, so, params),
        5 => plan_for::<5>(ext, dtype, si, so, params),
        _ => plan_for::<6>(ext, dtype, si, so, params),
    }
}

/// Output byte offsets some element maps to, from the plan's admitted strides.
fn mapped_outputs(plan: &Plan, len: usize) -> Vec<bool> {
    let v = plan.output();
    let mut mask = vec![false; len];
    if v.is_empty() {
        return mask;
    }
    let rank = v.rank();
    let mut idx = [0u64; 6];
    loop {
        let off: u64 = (0..rank).map(|a| idx[a] * v.strides()[a]).sum();
        mask[off as usize] = true;
        let mut a = rank;
        loop {
            if a == 0 {
                return mask;
            }
            a -= 1;
            idx[a] += 1;
            if idx[a] < v.extents()[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

fn run_dtype(dtype: DType, seed: u64) -> Stats {
    let mut rng = Rng::new(seed);
    let multipliers = profiles::all(16);
    let mut stats = Stats::default();
    for case in 0..CASES_PER_DTYPE {
        let rank = rng.below(7) as usize;
        let profile = rng.below(10);
        let ext = gen_extents(&mut rng, rank, profile);
        let elem = dtype.size() as u64;
        let scatter = profile == 5;
        let si = port(&mut rng, &ext, elem, scatter);
        let out_scatter = scatter && rng.chance(1, 2);
        let so = port(&mut rng, &ext, 1, out_scatter);
        let params = Params::from_bits(*rng.pick(&multipliers))
            .with_zero_point(rng.range_i64(-128, 127) as i32)
            .with_rounding(*rng.pick(&Rounding::ALL));
        let plan = plan_of(&ext, dtype, &si, &so, params);
        stats.cases += 1;
        stats.by_rank[rank] += 1;
        stats.empty += plan.is_empty() as usize;
        stats.elements += plan.elements();

        let in_len = plan.input().span() as usize + rng.below(9) as usize * elem as usize;
        let out_len = plan.output().span() as usize + rng.below(9) as usize;
        let mut input = Aligned::new(in_len, 0);
        for chunk in input.as_mut_slice().chunks_exact_mut(elem as usize) {
            let bits = random_bits(&mut rng, dtype);
            chunk.copy_from_slice(&bits.to_le_bytes()[..elem as usize]);
        }
        let dirty: Vec<u8> = (0..out_len).map(|_| rng.next_u32() as u8).collect();

        let exact = a65::quant::prepare_at(&plan, Level::Scalar).expect("exact route");
        let mut want = dirty.clone();
        a65::quant::execute(&exact, input.as_slice(), &mut want).expect("a65 execute");
        let mask = mapped_outputs(&plan, out_len);
        for (k, (&w, &d)) in want.iter().zip(&dirty).enumerate() {
            if !mask[k] {
                assert_eq!(w, d, "a65 wrote gap byte {k}");
            }
        }

        for workers in 1..=4 {
            let mut options = SimOptions::new(workers);
            options.flush_to_zero = case % 3 == 0;
            options.output_phase = rng.below(16) as u32;
            options.input_phase = rng.below(4) as u32 * elem as u32;
            let mut got = dirty.clone();
            for repeat in 0..2 {
                let run = run_sim_with(&plan, input.as_slice(), &mut got, &options)
                    .unwrap_or_else(|e| panic!("case {case} {dtype} w{workers}: {e}"));
                stats.runs += 1;
                assert_eq!(
                    got, want,
                    "case {case} {dtype} ext {ext:?} si {si:?} so {so:?} workers {workers} repeat {repeat} ftz {}",
                    options.flush_to_zero
                );
                assert_eq!(run.stats.unfinished, 0);
                assert_eq!(run.stats.faults, 0);
                if let Some(report) = run.report {
                    if repeat == 0 && workers == 4 {
                        stats.kinds[report.kind as usize] += 1;
                        stats.exact_blocks += report.stats.exact;
                        stats.fast_blocks += report.stats.fast;
                    }
                    let expected_launch = if report.units <= 1 { 1 } else { workers };
                    assert_eq!(report.launched, expected_launch);
                    // Each mapped output byte written exactly once per call; gaps never.
                    for (k, &c) in run.output_write_counts.iter().enumerate() {
                        assert_eq!(c, mask[k] as u16, "case {case} byte {k} written {c} times");
                    }
                } else {
                    assert!(plan.is_empty());
                    assert_eq!(run.stats.bytes_written(), 0);
                }
            }
        }
    }
    stats
}

fn report(dtype: DType, s: &Stats) {
    eprintln!(
        "{dtype}: {} cases, {} sim runs, ranks {:?}, {} empty, kinds dma/direct/scatter/transpose/short-rows {:?}, {} elements, blocks fast {} exact {}",
        s.cases, s.runs, s.by_rank, s.empty, s.kinds, s.elements, s.fast_blocks, s.exact_blocks
    );
    assert!(s.cases >= 300);
    assert!(s.by_rank.iter().all(|&n| n > 0), "every rank 0..=6 covered");
    assert!(s.empty > 0);
    assert!(s.kinds[..4].iter().all(|&n| n > 0), "span kinds covered");
    assert!(s.fast_blocks > 0 && s.exact_blocks > 0);
}

#[test]
fn f32_matches_a65() {
    let s = run_dtype(DType::F32, 0xe774_0001);
    report(DType::F32, &s);
}

#[test]
fn bf16_matches_a65() {
    let s = run_dtype(DType::BF16, 0xe774_0002);
    report(DType::BF16, &s);
}

#[test]
fn f16_matches_a65() {
    let s = run_dtype(DType::F16, 0xe774_0003);
    report(DType::F16, &s);
}

#[test]
fn span_kind_indices_are_stable() {
    assert_eq!(SpanKind::Dma as usize, 0);
    assert_eq!(SpanKind::Direct as usize, 1);
    assert_eq!(SpanKind::Scatter as usize, 2);
    assert_eq!(SpanKind::Transpose as usize, 3);
    assert_eq!(SpanKind::ShortRows as usize, 4);
}
