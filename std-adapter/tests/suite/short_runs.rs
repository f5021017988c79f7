//! Short runs and tails (issue 24 scope 1): every length 0..=300 at every level this CPU
//! offers, for Quant (contiguous, strided input, strided output, short rows), CastTess and
//! QuantTess rows. The kernels run a run's remainder as one more vector step (overlapping
//! the last whole step; a run shorter than one step by the level's partial step: masked
//! loads, overlapping vectors, or a stack copy), so these tests
//! pin that each length gives the independent oracles' bytes (the f64 Quant oracle of
//! `simak_tests`, the plain-loop layout and BF16 oracles of `simak_tests::tiled`), that
//! the exact path agrees, and that no byte past the tensor's output is written (dirty
//! buffers, guard bytes).

use crate::tess_common::*;

use simak::a65::{self, Level};
use simak::layout::{Channels, MlaTiled};
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::bytes::{Aligned, encode};
use simak_tests::oracle;
use simak_tests::rng::Rng;

const DTYPES: [DType; 3] = [DType::F32, DType::BF16, DType::F16];
const MAX_N: usize = 300;

/// A general multiplier (every vector level) and a power of two with nearest-even (also
/// the `aarch64-neon-fp16` half routes).
fn params() -> [Params; 2] {
    [
        Params::new(0.3)
            .with_zero_point(3)
            .with_rounding(Rounding::NearestEven),
        Params::new(0.5)
            .with_zero_point(-5)
            .with_rounding(Rounding::NearestEven),
    ]
}

/// An element: half the time one of `random_bits` (specials, NaNs, subnormals, huge), else
/// a value of magnitude below 600 (on the rounding steps of the products), in `dtype`.
fn element(rng: &mut Rng, dtype: DType) -> u32 {
    if rng.chance(1, 2) {
        return random_bits(rng, dtype);
    }
    let x = (rng.next_u32() as i32 as f64 / (1u64 << 31) as f64 * 600.0) as f32;
    // Some exact ties of the products (k + 0.5) / m.
    let x = if rng.chance(1, 4) { x.round() + 0.5 } else { x };
    match dtype {
        DType::F32 => x.to_bits(),
        DType::BF16 => x.to_bits() >> 16,
        _ => half::f16::from_f32(x).to_bits() as u32,
    }
}

/// The Quant plans to prepare: `prepare` and every level `prepare_at` accepts.
fn quant_prepared(plan: &simak::ops::quant::Plan) -> Vec<(String, a65::quant::Prepared)> {
    let mut all = vec![("auto".to_owned(), a65::quant::prepare(plan))];
    for level in Level::ALL {
        if let Ok(p) = a65::quant::prepare_at(plan, level) {
            all.push((level.name().to_owned(), p));
        }
    }
    all.push(("exact".to_owned(), a65::quant::prepare_exact(plan)));
    all
}

/// Quant of `n` elements with input element stride `si` and output stride `so` (in
/// elements), every length 0..=300 at every level.
fn quant_lengths(si: usize, so: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut levels_seen = std::collections::BTreeSet::new();
    for dtype in DTYPES {
        let e = dtype.size();
        for params in params() {
            for n in 0..=MAX_N {
                let bits: Vec<u32> = (0..n * si).map(|_| element(&mut rng, dtype)).collect();
                let input = Aligned::from_slice(&encode(dtype, &bits));
                let out_len = if n == 0 { 0 } else { (n - 1) * so + 1 };
                // Output bytes between elements stay as they were (dirty).
                let mut expected = vec![DIRTY; out_len];
                for j in 0..n {
                    expected[j * so] = oracle::quant(
                        dtype,
                        bits[j * si],
                        params.multiplier_bits,
                        params.zero_point,
                        params.rounding,
                    ) as u8;
                }
                let plan = check_inference(&Request {
                    input: TensorSpec::strided([n as u64], [(si * e) as u64], dtype),
                    output: TensorSpec::strided([n as u64], [so as u64], DType::I8),
                    params,
                })
                .unwrap_or_else(|err| panic!("{dtype} n={n}: {err}"));
                for (name, p) in quant_prepared(&plan) {
                    levels_seen.insert(name.clone());
                    let what = format!(
                        "quant {name} ({}) {dtype} m={} n={n} si={si} so={so}",
                        p.implementation(),
                        f32::from_bits(params.multiplier_bits)
                    );
                    check_kept(&what, &expected, so, |out| {
                        a65::quant::execute(&p, &input.as_slice()[..n * si * e], out)
                            .unwrap_or_else(|err| panic!("{what}: {err}"))
                    });
                }
            }
        }
    }
    // Every level this CPU has with a Quant kernel ran.
    for level in Level::detected() {
        if !matches!(level, Level::Avx512Vbmi | Level::NeonFp16) {
            assert!(levels_seen.contains(level.name()), "{level} not run");
        }
    }
}

/// As `check_dirty`, but the output's holes (bytes between strided elements) must keep the
/// dirty byte: the second pass refills the buffer with [`DIRTY`] only.
fn check_kept(what: &str, expected: &[u8], so: usize, mut run: impl FnMut(&mut [u8])) {
    if so == 1 {
        check_dirty(what, expected, run);
        return;
    }
    let mut buf = Aligned::new(expected.len() + GUARD, DIRTY);
    for pass in 0..2 {
        let out = buf.as_mut_slice();
        out.fill(DIRTY);
        run(out);
        let (span, guard) = out.split_at(expected.len());
        assert_eq!(span, expected, "{what} pass {pass}");
        assert!(
            guard.iter().all(|&b| b == DIRTY),
            "{what}: guard bytes touched"
        );
    }
}

#[test]
fn quant_contiguous_every_length_at_every_level() {
    quant_lengths(1, 1, 0x5407_0000_0000_0001);
}

#[test]
fn quant_strided_input_every_length_at_every_level() {
    quant_lengths(3, 1, 0x5407_0000_0000_0002);
}

#[test]
fn quant_strided_output_every_length_at_every_level() {
    quant_lengths(1, 2, 0x5407_0000_0000_0003);
}

/// Two rows of `n` elements, the input rows padded by 5 elements: short contiguous runs.
#[test]
fn quant_short_rows_every_length_at_every_level() {
    let mut rng = Rng::new(0x5407_0000_0000_0004);
    for dtype in DTYPES {
        let e = dtype.size();
        let params = params()[0];
        for n in 1..=MAX_N {
            let row = n + 5;
            let bits: Vec<u32> = (0..2 * row).map(|_| element(&mut rng, dtype)).collect();
            let input = Aligned::from_slice(&encode(dtype, &bits));
            let expected: Vec<u8> = (0..2)
                .flat_map(|r| (0..n).map(move |j| r * row + j))
                .map(|k| {
                    oracle::quant(
                        dtype,
                        bits[k],
                        params.multiplier_bits,
                        params.zero_point,
                        params.rounding,
                    ) as u8
                })
                .collect();
            let plan = check_inference(&Request {
                input: TensorSpec::strided([2, n as u64], [(row * e) as u64, e as u64], dtype),
                output: TensorSpec::contiguous([2, n as u64], DType::I8),
                params,
            })
            .unwrap();
            for (name, p) in quant_prepared(&plan) {
                let what = format!("quant rows {name} {dtype} n={n}");
                check_dirty(&what, &expected, |out| {
                    a65::quant::execute(&p, &input.as_slice()[..(row + n) * e], out)
                        .unwrap_or_else(|err| panic!("{what}: {err}"))
                });
            }
        }
    }
}

/// A `1 × n × c` HWC frame in tiles of (1, 1, min(n, 64), c): one row of `n` pixels.
fn row_case(dtype: DType, n: usize, c: usize, channels: Channels) -> Case {
    let e = dtype.size() as u64;
    let (n, c) = (n as u64, c as u64);
    Case::strided(
        dtype,
        vec![1, n, c],
        vec![n * c * e, c * e, e],
        MlaTiled::new(
            [None, Some(0), Some(1), Some(2)],
            [1, 1, n.min(64) as u32, c as u32],
            channels,
        ),
    )
}

#[test]
fn casttess_rows_every_length_at_every_level() {
    let mut rng = Rng::new(0x5407_0000_0000_0005);
    for dtype in DTYPES {
        for (c, channels) in [
            (1, Channels::Compact),
            (3, Channels::Compact),
            (4, Channels::Compact),
            (3, Channels::PadTo16),
        ] {
            for n in 1..=MAX_N {
                let case = row_case(dtype, n, c, channels);
                let input = fill_input(&mut rng, &case);
                let expected = expected_cast(&case, input.as_slice());
                let plan = cast_plan(&case);
                let prepared = levels(&plan);
                assert!(prepared.len() >= Level::detected().len().min(2));
                for p in prepared {
                    let what = format!(
                        "casttess {} {dtype} n={n} c={c} {channels:?}",
                        p.implementation()
                    );
                    check_dirty(&what, &expected, |out| {
                        a65::casttess::execute(&p, input.as_slice(), out)
                            .unwrap_or_else(|err| panic!("{what}: {err}"))
                    });
                }
            }
        }
    }
}

#[test]
fn quanttess_rows_every_length_at_every_level() {
    let mut rng = Rng::new(0x5407_0000_0000_0006);
    for dtype in DTYPES {
        for params in params() {
            for (c, channels) in [(1, Channels::Compact), (3, Channels::Compact)] {
                for n in 1..=MAX_N {
                    let case = row_case(dtype, n, c, channels);
                    let input = fill_input(&mut rng, &case);
                    let expected = expected_quant(&case, input.as_slice(), params);
                    let plan = quant_plan(&case, params);
                    let mut all = vec![a65::quanttess::prepare(&plan)];
                    all.extend(
                        Level::ALL
                            .into_iter()
                            .filter_map(|l| a65::quanttess::prepare_at(&plan, l).ok()),
                    );
                    for p in all {
                        let what = format!(
                            "quanttess {} {dtype} n={n} c={c} {channels:?}",
                            p.implementation()
                        );
                        check_dirty(&what, &expected, |out| {
                            a65::quanttess::execute(&p, input.as_slice(), out)
                                .unwrap_or_else(|err| panic!("{what}: {err}"))
                        });
                    }
                }
            }
        }
    }
}
