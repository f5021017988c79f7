//! The EV74 CastTess data-movement paths of SPEC §8 beyond the general band gather: each is
//! taken where its rule admits the call and not where it does not (asserted from the
//! firmware's report), and stays byte-identical to the A65 backend and to the independent
//! oracle with 1 to 4 workers, dirty output buffers, unmapped guard bands around both
//! ports, every output byte written exactly once and every logical input byte read exactly
//! once (never a hole, never past the admitted span): `ev74_casttess::check_case`.
//!
//! - The whole-panel H-contiguous path on the 30 eligibility-boundary cases shared with
//!   `simak qualify --correctness-only` (`simak_tests::hcontig`), and every FP16 and BF16
//!   bit pattern through it.

use crate::ev74_casttess::{Tally, check_case};
use crate::tess_common::*;

use simak::DType;
use simak::ev74::casttess::run_sim;
use simak_tests::bytes::Aligned;
use simak_tests::hcontig;
use simak_tests::rng::Rng;

fn case_of(dtype: DType, c: &hcontig::Case) -> Case {
    let e = dtype.size() as u64;
    let input_len = (e + c
        .shape
        .iter()
        .zip(&c.strides)
        .map(|(&n, &s)| (n - 1) * s)
        .sum::<u64>()) as usize;
    Case {
        dtype,
        shape: c.shape.clone(),
        strides: c.strides.clone(),
        input_len,
        axes: c.layout.axes,
        tile: c.layout.tile,
        channels: c.layout.channels,
    }
}

#[test]
fn hcontig_boundary_cases_take_the_path_exactly_where_eligible() {
    let mut rng = Rng::new(0x4c07_7e55);
    let mut tally = Tally::default();
    let (mut taken, mut refused) = (0, 0);
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let cases = hcontig::cases(dtype);
        assert_eq!(cases.len(), 10);
        for c in &cases {
            let case = case_of(dtype, c);
            let input = fill_input(&mut rng, &case);
            let reports = check_case(&case, &input, &mut tally);
            assert_eq!(reports.len(), 4, "{}", c.name);
            for r in reports {
                let t = r.tess;
                let what = format!("{dtype:?} {}: {t:?}", c.name);
                if c.eligible {
                    // One tile, one band, staged by one 2D DMA command per channel.
                    assert_eq!((t.hcontig_tasks, t.band_tasks), (1, 1), "{what}");
                    assert_eq!(t.source_dma, case.shape[2], "{what}");
                    assert_eq!(t.source_direct_rows, 0, "{what}");
                } else {
                    assert_eq!(t.hcontig_tasks, 0, "{what}");
                }
            }
            if c.eligible {
                taken += 1;
            } else {
                refused += 1;
            }
        }
    }
    assert_eq!((taken, refused), (18, 12));
}

/// Every 16-bit pattern of `dtype` in order through the sweep layout shared with the
/// qualification catalogue (`simak_tests::hcontig::sweep`: 16 tiles, each one band of 4096
/// values on the H-contiguous path).
#[test]
fn every_16_bit_pattern_through_the_hcontig_path() {
    for dtype in [DType::F16, DType::BF16] {
        let (shape, strides, layout) = hcontig::sweep();
        let case = Case {
            dtype,
            shape,
            strides,
            input_len: 65536 * 2,
            axes: layout.axes,
            tile: layout.tile,
            channels: layout.channels,
        };
        let mut input = Aligned::new(case.input_len, 0);
        let mut k = 0u32;
        for_each_index(&[16, 64, 64], |i| {
            let at = case.input_offset(i);
            input.as_mut_slice()[at..at + 2].copy_from_slice(&(k as u16).to_le_bytes());
            k += 1;
        });
        assert_eq!(k, 65536);
        let mut tally = Tally::default();
        let reports = check_case(&case, &input, &mut tally);
        assert_eq!(reports.len(), 4);
        for r in reports {
            assert_eq!(r.tess.hcontig_tasks, 16, "{dtype:?} {:?}", r.tess);
            assert_eq!(r.tess.band_tasks, 16, "{dtype:?} {:?}", r.tess);
            assert_eq!(r.tess.source_direct_rows, 0);
        }
        // The same input through a layout the path refuses (tiles of 16 × 8 pixels: two
        // bands per tile) gives the oracle's bytes on the general gather.
        let general = Case {
            tile: [1, 16, 8, 64],
            ..case.clone()
        };
        let plan = cast_plan(&general);
        let mut out = vec![DIRTY; plan.output().capacity() as usize];
        let run = run_sim(&plan, input.as_slice(), &mut out, 4).unwrap();
        assert_eq!(run.report.unwrap().tess.hcontig_tasks, 0);
        assert_eq!(out, expected_cast(&general, input.as_slice()));
    }
}
