//! EV74 Quant transpose/gather panels and granule-owned short rows (SPEC §8), checked
//! against the A65 backend and the independent f64 oracle (`simak_tests::oracle`).
//!
//! - Every permutation of ranks 2 to 4 (fixed-seed extents, several not multiples of 16):
//!   the output holds `numpy.transpose(x, axes)` in C order; 1 to 4 workers, dirty output
//!   with spare capacity, both address phases; the span kind is `Transpose` exactly when
//!   the last input axis moves; every output byte written once; bytes read = input span;
//!   two DMA commands per panel.
//! - Short rows of 2 to 15 packed elements with padded input rows: `ShortRows` when the
//!   output is 16-byte aligned (not otherwise); no 16-byte output granule is shared by two
//!   workers (checked by brute force over the firmware's own units).
//! - All three dtypes and four roundings; subnormal, NaN and infinite inputs take the exact
//!   fallback inside panels.

use simak::a65;
use simak::ev74::quant::{SimOptions, run_sim_with};
use simak::ops::quant::{Params, Plan, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_ev74_fw::SpanKind;
use simak_ev74_fw::work::{Geometry, Walker, range};
use simak_tests::axes::permutations;
use simak_tests::bytes::Aligned;
use simak_tests::oracle;
use simak_tests::profiles;
use simak_tests::rng::Rng;

/// Output strides (bytes) of `numpy.transpose(x, axes)` stored in C order, per input axis.
fn permuted_strides(ext: &[u64], axes: &[usize]) -> Vec<u64> {
    let mut s = vec![0u64; ext.len()];
    let mut acc = 1u64;
    for &a in axes.iter().rev() {
        s[a] = acc;
        acc *= ext[a];
    }
    s
}

fn c_strides(ext: &[u64], elem: u64) -> Vec<u64> {
    let mut s = vec![0u64; ext.len()];
    let mut acc = elem;
    for a in (0..ext.len()).rev() {
        s[a] = acc;
        acc *= ext[a];
    }
    s
}

fn plan_of(ext: &[u64], si: &[u64], so: &[u64], dtype: DType, params: Params) -> Plan {
    fn spec<const R: usize>(ext: &[u64], s: &[u64], d: DType) -> TensorSpec<R> {
        TensorSpec::strided(ext.try_into().unwrap(), s.try_into().unwrap(), d)
    }
    macro_rules! req {
        ($r:literal) => {
            check_inference(&Request {
                input: spec::<$r>(ext, si, dtype),
                output: spec::<$r>(ext, so, DType::I8),
                params,
            })
        };
    }
    match ext.len() {
        2 => req!(2),
        3 => req!(3),
        4 => req!(4),
        r => panic!("rank {r}"),
    }
    .expect("request admitted")
}

/// Quant input bits: random, one in four a special (±0, subnormals, NaN, ±∞, ties).
fn bits(rng: &mut Rng, dtype: DType) -> u32 {
    const F32: [u32; 8] = [
        0x0000_0001,
        0x8040_0000,
        0x7fc0_0000,
        0xff80_0000,
        0x7f80_0000,
        0x0000_0000,
        0x3f00_0000,
        0x007f_ffff,
    ];
    const H16: [u32; 8] = [
        0x0001, 0x8040, 0x7fc0, 0xff80, 0x7c00, 0x7e01, 0x3c00, 0x03ff,
    ];
    let special = rng.chance(1, 4);
    match dtype {
        DType::F32 if special => *rng.pick(&F32),
        DType::F32 => rng.next_u32(),
        _ if special => *rng.pick(&H16),
        _ => rng.next_u32() & 0xffff,
    }
}

/// Output byte offsets some element maps to, from the admitted output strides.
fn mapped_mask(plan: &Plan, len: usize) -> Vec<bool> {
    let v = plan.output();
    let mut mask = vec![false; len];
    let mut idx = vec![0u64; v.rank()];
    'all: loop {
        let o: u64 = idx.iter().zip(v.strides()).map(|(i, s)| i * s).sum();
        mask[o as usize] = true;
        for a in (0..v.rank()).rev() {
            idx[a] += 1;
            if idx[a] < v.extents()[a] {
                continue 'all;
            }
            idx[a] = 0;
        }
        return mask;
    }
}

/// Dirty output of `len` bytes; the expectation from the f64 oracle over every index;
/// checks A65 (default route) gives the same; returns (input, dirty, want).
fn expectation(
    plan: &Plan,
    ext: &[u64],
    si: &[u64],
    so: &[u64],
    rng: &mut Rng,
    out_len: usize,
) -> (Aligned, Vec<u8>, Vec<u8>) {
    let dtype = plan.input().dtype();
    let elem = dtype.size();
    let in_len = plan.input().span() as usize;
    let mut input = Aligned::new(in_len, 0);
    let mut raw = Vec::with_capacity(in_len / elem);
    for chunk in input.as_mut_slice().chunks_exact_mut(elem) {
        let b = bits(rng, dtype);
        raw.push(b);
        chunk.copy_from_slice(&b.to_le_bytes()[..elem]);
    }
    let dirty: Vec<u8> = (0..out_len).map(|_| rng.next_u32() as u8).collect();
    let mut want = dirty.clone();
    let p = plan.params();
    let mut idx = vec![0u64; ext.len()];
    'all: loop {
        let i: u64 = idx.iter().zip(si).map(|(i, s)| i * s).sum();
        let o: u64 = idx.iter().zip(so).map(|(i, s)| i * s).sum();
        let b = raw[i as usize / elem];
        want[o as usize] =
            oracle::quant(dtype, b, p.multiplier_bits, p.zero_point, p.rounding) as u8;
        for a in (0..ext.len()).rev() {
            idx[a] += 1;
            if idx[a] < ext[a] {
                continue 'all;
            }
            idx[a] = 0;
        }
        break;
    }
    let prepared = a65::quant::prepare(plan);
    let mut a65_out = dirty.clone();
    a65::quant::execute(&prepared, input.as_slice(), &mut a65_out).unwrap();
    assert_eq!(
        a65_out, want,
        "A65 against the oracle, ext {ext:?} so {so:?}"
    );
    (input, dirty, want)
}

/// Runs `plan` with 1 to 4 workers and both address phases: output equals `want`, mapped
/// bytes written once (the rest never), bytes read equal the input span.
fn run_all(plan: &Plan, input: &Aligned, dirty: &[u8], want: &[u8], kind: SpanKind) -> u64 {
    let mapped = plan.elements();
    let mask = mapped_mask(plan, dirty.len());
    let mask = mask.as_slice();
    let mut commands = 0;
    for workers in 1..=4 {
        for (phase, ftz) in [(0u32, false), (3, true)] {
            let mut options = SimOptions::new(workers);
            options.output_phase = phase;
            options.flush_to_zero = ftz;
            let mut got = dirty.to_vec();
            let run = run_sim_with(plan, input.as_slice(), &mut got, &options).unwrap();
            assert_eq!(got, want, "workers {workers} phase {phase}");
            let report = run.report.unwrap();
            assert_eq!(report.kind, kind, "workers {workers} phase {phase}");
            assert_eq!(run.input_bytes_read, plan.input().span());
            assert_eq!(run.output_bytes_written, mapped);
            for (k, (&c, &m)) in run.output_write_counts.iter().zip(mask).enumerate() {
                assert_eq!(c, u16::from(m), "byte {k} written {c} times");
            }
            assert_eq!(run.stats.faults, 0);
            assert_eq!(run.stats.unfinished, 0);
            if kind == SpanKind::Transpose {
                assert_eq!(run.stats.commands, 2 * report.units, "two DMAs per panel");
            }
            commands = run.cost.dma_commands;
        }
    }
    commands
}

#[test]
fn every_permutation_of_ranks_2_to_4_matches_a65_and_the_oracle() {
    let mut rng = Rng::new(0x7a05_e001);
    let dtypes = [DType::F32, DType::BF16, DType::F16];
    let mut transposed = 0;
    let mut case = 0usize;
    for rank in 2..=4usize {
        for axes in permutations(rank) {
            // Extents: 17–40 for rank 2, 3–20 for rank 3, 2–9 for rank 4 (fixed seed).
            let hi = [0, 0, 40, 20, 9][rank];
            let lo = [0, 0, 17, 3, 2][rank];
            let ext: Vec<u64> = (0..rank).map(|_| lo + rng.below(hi - lo + 1)).collect();
            let dtype = dtypes[case % 3];
            let rounding = Rounding::ALL[case % 4];
            case += 1;
            let si = c_strides(&ext, dtype.size() as u64);
            let so = permuted_strides(&ext, &axes);
            let params = Params::from_bits(profiles::POINT_THREE)
                .with_zero_point(rng.range_i64(-20, 20) as i32)
                .with_rounding(rounding);
            let plan = plan_of(&ext, &si, &so, dtype, params);
            let out_len = plan.output().span() as usize + 19;
            let (input, dirty, want) = expectation(&plan, &ext, &si, &so, &mut rng, out_len);
            let moved = axes[rank - 1] != rank - 1;
            if moved {
                transposed += 1;
                run_all(&plan, &input, &dirty, &want, SpanKind::Transpose);
            } else {
                // The last axis stays last: a packed suffix, today's paths.
                let mut got = dirty.clone();
                let run =
                    run_sim_with(&plan, input.as_slice(), &mut got, &SimOptions::new(4)).unwrap();
                assert_eq!(got, want, "ext {ext:?} axes {axes:?}");
                assert_ne!(run.report.unwrap().kind, SpanKind::Transpose);
            }
        }
    }
    // 2 + 6 + 24 permutations, of which 1 + 4 + 18 move the last axis.
    assert_eq!(case, 32);
    assert_eq!(transposed, 23);
}

#[test]
fn nchw_to_nhwc_uses_a_few_panels_not_one_access_per_element() {
    let mut rng = Rng::new(0x7a05_e002);
    for (ext, dtype) in [
        (vec![1u64, 3, 224, 224], DType::F32),
        (vec![2, 5, 37, 19], DType::BF16),
        (vec![1, 70, 9, 13], DType::F16),
    ] {
        let si = c_strides(&ext, dtype.size() as u64);
        let so = permuted_strides(&ext, &[0, 2, 3, 1]);
        let plan = plan_of(&ext, &si, &so, dtype, Params::new(0.02).with_zero_point(3));
        let out_len = plan.output().span() as usize;
        let (input, dirty, want) = expectation(&plan, &ext, &si, &so, &mut rng, out_len);
        let commands = run_all(&plan, &input, &dirty, &want, SpanKind::Transpose);
        let elements = plan.elements();
        eprintln!("NCHW->NHWC {ext:?} {dtype}: {elements} elements, {commands} DMA commands");
        assert!(
            commands * 64 < elements,
            "{commands} commands for {elements}"
        );
    }
}

#[test]
fn short_rows_are_grouped_into_granule_owned_blocks() {
    let mut rng = Rng::new(0x7a05_e003);
    let dtypes = [DType::F32, DType::BF16, DType::F16];
    for (case, (rows, row, pad)) in [
        (1000u64, 5u64, 3u64),
        (64, 2, 1),
        (333, 15, 1),
        (17, 3, 5),
        (4, 7, 2),
        (250, 12, 4),
    ]
    .into_iter()
    .enumerate()
    {
        let dtype = dtypes[case % 3];
        let elem = dtype.size() as u64;
        let ext = [rows, row];
        let si = [(row + pad) * elem, elem];
        let so = [row, 1];
        let params = Params::from_bits(profiles::POINT_THREE)
            .with_zero_point(-7)
            .with_rounding(Rounding::ALL[case % 4]);
        let plan = plan_of(&ext, &si, &so, dtype, params);
        let out_len = plan.output().span() as usize + 5;
        let (input, dirty, want) = expectation(&plan, &ext, &si, &so, &mut rng, out_len);
        for workers in 1..=4 {
            let mut got = dirty.clone();
            let run =
                run_sim_with(&plan, input.as_slice(), &mut got, &SimOptions::new(workers)).unwrap();
            assert_eq!(got, want, "rows {rows} x {row} workers {workers}");
            assert_eq!(run.report.unwrap().kind, SpanKind::ShortRows);
            assert_eq!(run.input_bytes_read, rows * row * elem, "live bytes only");
            assert!(
                run.output_write_counts[..(rows * row) as usize]
                    .iter()
                    .all(|&c| c == 1)
            );
            assert!(
                run.output_write_counts[(rows * row) as usize..]
                    .iter()
                    .all(|&c| c == 0)
            );
            assert!(
                run.cost.dma_commands < rows,
                "grouped: {}",
                run.cost.dma_commands
            );
            // An unaligned output address is not eligible: scatter, same bytes.
            let mut options = SimOptions::new(workers);
            options.output_phase = 4;
            let mut got = dirty.clone();
            let run = run_sim_with(&plan, input.as_slice(), &mut got, &options).unwrap();
            assert_eq!(got, want);
            assert_eq!(run.report.unwrap().kind, SpanKind::Scatter);
        }
        granules_have_one_owner(&plan);
    }
}

#[test]
fn short_rows_with_a_padded_output_and_an_outer_axis() {
    // [6, 40, 3] FP32: rows of 3, input pitch 5 elements, output pitch 4 bytes and an
    // outer output stride of 160 (a multiple of 16): eligible. Output pitch 4 with outer
    // stride 168 is not (no granule proof): scatter.
    let mut rng = Rng::new(0x7a05_e004);
    for (outer, kind) in [(160u64, SpanKind::ShortRows), (168, SpanKind::Scatter)] {
        let ext = [6u64, 40, 3];
        let si = [4 * 5 * 40, 4 * 5, 4];
        let so = [outer, 4, 1];
        let plan = plan_of(&ext, &si, &so, DType::F32, Params::new(3.5));
        let out_len = plan.output().span() as usize + 7;
        let (input, dirty, want) = expectation(&plan, &ext, &si, &so, &mut rng, out_len);
        for workers in 1..=4 {
            let mut got = dirty.clone();
            let run =
                run_sim_with(&plan, input.as_slice(), &mut got, &SimOptions::new(workers)).unwrap();
            assert_eq!(got, want);
            assert_eq!(run.report.unwrap().kind, kind, "outer {outer}");
            assert_eq!(run.input_bytes_read, 6 * 40 * 3 * 4);
            assert!(run.output_write_counts.iter().all(|&c| c <= 1));
        }
        if kind == SpanKind::ShortRows {
            granules_have_one_owner(&plan);
        }
    }
}

/// Brute force over the firmware's units: for 2 to 4 workers, every 16-byte output granule
/// (of the bound address, 64-byte aligned in the simulator) touched by a worker's units is
/// touched by no other worker's.
fn granules_have_one_owner(plan: &Plan) {
    use simak::ev74::{self, DeviceRegion};
    let device = ev74::quant::check_inference(plan).unwrap();
    let out = 0x10_0000u32;
    let packet = ev74::encode(
        &device,
        DeviceRegion::new(0x1000, plan.input().span()),
        DeviceRegion::new(out, plan.output().span()),
    )
    .unwrap();
    let repr = simak_core::ev74::decode::<simak_core::ev74::Quant>(packet.as_bytes()).unwrap();
    let g = Geometry::new(&repr);
    assert_eq!(g.kind, SpanKind::ShortRows);
    for workers in 2..=4 {
        let mut owner = std::collections::HashMap::new();
        for id in 0..workers {
            let (start, end) = range(g.units, id, workers);
            let mut w = Walker::new(&g, start);
            for _ in start..end {
                let done = w.last_index() * g.rows_per_unit;
                let rows = g.rows_per_unit.min(g.grouped_rows - done);
                for r in 0..rows {
                    let first = u64::from(out) + w.output + r * g.row_pitch.output;
                    for byte in first..first + g.row {
                        let prev = owner.insert(byte / 16, id);
                        assert!(
                            prev.is_none() || prev == Some(id),
                            "granule {} shared",
                            byte / 16
                        );
                    }
                }
                w.advance();
            }
        }
    }
}
