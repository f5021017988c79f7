//! A65 QuantTess against the oracle composition: the independent f64 Quant oracle of
//! `simak-tests`, then INT8 tiling by the plain-loop layout oracle of SPEC §5. Every Quant
//! route this CPU offers, random multipliers, zero points and rounding modes, strided
//! inputs, both channel modes, dirty buffers and guard bytes; empty tensors; the
//! FP-environment seam.

use crate::tess_common;
use simak::ops::casttess::TiledTensorSpec;

use simak::a65;
use simak::a65::{ExecuteError, Level};
use simak::layout::{Channels, MlaTiled};
use simak::ops::quant::{Params, Rounding};
use simak::ops::quanttess::{self, Plan};
use simak::{DType, TensorSpec};
use simak_tests::bytes::Aligned;
use simak_tests::profiles;
use simak_tests::rng::Rng;
use tess_common::*;

fn plan(case: &Case, params: Params) -> Plan {
    quant_plan(case, params)
}

fn routes(plan: &Plan) -> Vec<a65::quanttess::Prepared> {
    Level::ALL
        .into_iter()
        .rev()
        .filter_map(|r| a65::quanttess::prepare_at(plan, r).ok())
        .collect()
}

fn check(case: &Case, params: Params, input: &Aligned) -> usize {
    let plan = plan(case, params);
    let expected = expected_quant(case, input.as_slice(), params);
    assert_eq!(
        plan.output().capacity() as usize,
        expected.len(),
        "{case:?}"
    );
    let prepared = routes(&plan);
    for p in &prepared {
        let what = format!("{} {params:?} {case:?}", p.implementation());
        check_dirty(&what, &expected, |out| {
            a65::quanttess::execute(p, input.as_slice(), out)
                .unwrap_or_else(|e| panic!("{what}: {e}"))
        });
    }
    prepared.len()
}

fn random_params(rng: &mut Rng, multipliers: &[u32]) -> Params {
    Params::from_bits(*rng.pick(multipliers))
        .with_zero_point(rng.range_i64(-128, 127) as i32)
        .with_rounding(*rng.pick(&Rounding::ALL))
}

#[test]
fn oracle_composition_random_cases() {
    let mut rng = Rng::new(0x7e55_0000_0000_0a01);
    let multipliers = profiles::all(24);
    let mut cases = 0;
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        for _ in 0..150 {
            let rank = 1 + rng.below(6) as usize;
            let shape: Vec<u64> = loop {
                let s: Vec<u64> = (0..rank).map(|_| 1 + rng.below(9)).collect();
                if s.iter().product::<u64>() <= 3000 {
                    break s;
                }
            };
            let case = Case::random(&mut rng, dtype, shape);
            let input = fill_input(&mut rng, &case);
            let params = random_params(&mut rng, &multipliers);
            assert!(check(&case, params, &input) >= 1);
            cases += 1;
        }
    }
    assert_eq!(cases, 450);
}

#[test]
fn images_and_large_channel_tiles() {
    let mut rng = Rng::new(0x7e55_0000_0000_0a02);
    let multipliers = [
        profiles::ONE,
        profiles::POINT_THREE,
        0x4300_0000,
        0x3c00_0000,
    ];
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let e = dtype.size() as u64;
        for (k, &(h, w, c)) in [(37u64, 150u64, 3u64), (20, 70, 17), (5, 9, 5000)]
            .iter()
            .enumerate()
        {
            for channels in [Channels::Compact, Channels::PadTo16] {
                // Packed HWC, then planar CHW.
                for planar in [false, true] {
                    let strides = if planar {
                        vec![w * e, e, h * w * e]
                    } else {
                        vec![w * c * e, c * e, e]
                    };
                    let case = Case {
                        dtype,
                        shape: vec![h, w, c],
                        strides,
                        input_len: (h * w * c * e) as usize,
                        axes: [None, Some(0), Some(1), Some(2)],
                        tile: [
                            1,
                            16.min(h) as u32,
                            64.min(w) as u32,
                            if k == 2 { 4200 } else { c as u32 },
                        ],
                        channels,
                    };
                    let input = fill_input(&mut rng, &case);
                    check(&case, random_params(&mut rng, &multipliers), &input);
                }
            }
        }
    }
}

#[test]
fn empty_tensors_write_nothing() {
    let plan = quanttess::check_inference(&quanttess::Request {
        input: TensorSpec::contiguous([4, 0, 3], DType::F32),
        output: TiledTensorSpec::new(
            [4, 0, 3],
            DType::I8,
            MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 2, 5, 3],
                Channels::PadTo16,
            ),
        ),
        params: Params::new(1.0).with_zero_point(7),
    })
    .unwrap();
    assert_eq!(plan.output().capacity(), 0);
    for p in routes(&plan) {
        let mut dirty = [DIRTY; 17];
        a65::quanttess::execute(&p, &[], &mut dirty[1..]).unwrap();
        assert!(dirty.iter().all(|&b| b == DIRTY));
    }
}

#[test]
fn fp_environment_seam_and_buffer_checks() {
    let plan = quanttess::check_inference(&quanttess::Request {
        input: TensorSpec::contiguous([4, 3], DType::F32),
        output: TiledTensorSpec::new(
            [4, 3],
            DType::I8,
            MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 2, 3],
                Channels::Compact,
            ),
        ),
        params: Params::new(1.0),
    })
    .unwrap();
    let input = Aligned::new(48, 0);
    // A control word with flush-to-zero set (bit 15 of MXCSR; FZ, bit 24, of FPCR).
    let bad: u64 = if cfg!(target_arch = "aarch64") {
        1 << 24
    } else {
        0x1f80 | 0x8000
    };
    for p in routes(&plan) {
        let mut out = Aligned::new(32, DIRTY);
        let r = a65::execute_with_fp_control(&p, input.as_slice(), out.as_mut_slice(), Some(bad));
        if p.level() == Level::Scalar {
            assert_eq!(r, Ok(()));
        } else {
            assert_eq!(r, Err(ExecuteError::FpEnvironment { control: bad }));
            assert!(
                out.as_slice().iter().all(|&b| b == DIRTY),
                "written before the error"
            );
        }
        // Misaligned and short outputs are refused before any write.
        let mut out = Aligned::new(64, DIRTY);
        let r = a65::quanttess::execute(&p, input.as_slice(), &mut out.as_mut_slice()[1..33]);
        assert!(matches!(r, Err(ExecuteError::Misaligned { align: 16, .. })));
        let r = a65::quanttess::execute(&p, input.as_slice(), &mut out.as_mut_slice()[..31]);
        assert!(matches!(
            r,
            Err(ExecuteError::Capacity {
                required: 32,
                found: 31,
                ..
            })
        ));
        let r = a65::quanttess::execute(&p, &input.as_slice()[..47], &mut out.as_mut_slice()[..32]);
        assert!(matches!(
            r,
            Err(ExecuteError::Capacity {
                required: 48,
                found: 47,
                ..
            })
        ));
        assert!(out.as_slice().iter().all(|&b| b == DIRTY));
    }
}
