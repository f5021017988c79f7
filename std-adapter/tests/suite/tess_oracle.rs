//! A65 CastTess against the independent plain-loop oracle of SPEC §5: 900 fixed-seed
//! combinations (300 per input dtype) over ranks 1–6, tiles, axis maps, both channel
//! modes and strided inputs; 99 large-panel and spatial-tile cases (images, planar and
//! H-contiguous inputs, padded rows, tiles with more than one panel of pixels or
//! channels); empty tensors. Every case runs through every kernel level this CPU offers,
//! on dirty output buffers (twice), with guard bytes after the required span; the result
//! is also read back with `untile` and located with `offset_of`.

use crate::tess_common;
use simak::ops::casttess::TiledTensorSpec;

use simak::a65;
use simak::layout::Channels;
use simak::{DType, TensorSpec};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;
use tess_common::*;

const DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// Runs one case through every level; returns the number of levels run.
fn check_case(case: &Case, input: &Aligned, with_offsets: bool) -> usize {
    let plan = cast_plan(case);
    let expected = expected_cast(case, input.as_slice());
    assert_eq!(
        plan.output().capacity() as usize,
        expected.len(),
        "capacity of {case:?}"
    );
    let prepared = levels(&plan);
    for p in &prepared {
        let what = format!("{} {case:?}", p.implementation());
        check_dirty(&what, &expected, |out| {
            a65::casttess::execute(p, input.as_slice(), out)
                .unwrap_or_else(|e| panic!("{what}: {e}"))
        });
    }
    // untile gives back the logical BF16 tensor.
    let n = case.elements();
    let mut logical = vec![0u8; 2 * n];
    plan.output().untile(&expected, &mut logical).unwrap();
    let shape: Vec<usize> = case.shape.iter().map(|&e| e as usize).collect();
    let mut k = 0;
    for_each_index(&shape, |i| {
        let want = oracle_bf16(case.dtype, read_raw(case, input.as_slice(), i)).to_le_bytes();
        assert_eq!(logical[2 * k..2 * k + 2], want, "untile {case:?} at {i:?}");
        if with_offsets {
            let mut index = [0u64; 6];
            for (slot, &x) in index.iter_mut().zip(i) {
                *slot = x as u64;
            }
            for (plane, &byte) in want.iter().enumerate() {
                let o = plan.output().offset_of(&index, plane).unwrap() as usize;
                assert_eq!(expected[o], byte, "offset_of {case:?} at {i:?}");
            }
        }
        k += 1;
    });
    prepared.len()
}

fn random_shape(rng: &mut Rng, rank: usize, max_elements: u64) -> Vec<u64> {
    loop {
        let shape: Vec<u64> = (0..rank)
            .map(|_| match rng.below(10) {
                0 => 1,
                1..=6 => 1 + rng.below(6),
                _ => 1 + rng.below(24),
            })
            .collect();
        if shape.iter().product::<u64>() <= max_elements {
            return shape;
        }
    }
}

fn random_case(rng: &mut Rng, dtype: DType) -> Case {
    let rank = 1 + rng.below(6) as usize;
    let shape = random_shape(rng, rank, 2500);
    Case::random(rng, dtype, shape)
}

#[test]
fn oracle_900_random_combinations() {
    let mut rng = Rng::new(0x7e55_0000_0000_0900);
    let mut cases = 0;
    let mut runs = 0;
    for dtype in DTYPES {
        for k in 0..300 {
            let case = random_case(&mut rng, dtype);
            let input = fill_input(&mut rng, &case);
            runs += check_case(&case, &input, k % 3 == 0);
            cases += 1;
        }
    }
    assert_eq!(cases, 900);
    assert!(runs >= 900);
}

/// Image-like and large-panel cases: HWC, CHW (planar) and H-contiguous inputs, padded
/// rows, spatial tiles, tiles holding several panels of pixels, and channel tiles larger
/// than one panel.
fn large_cases(rng: &mut Rng, dtype: DType) -> Vec<Case> {
    let e = dtype.size() as u64;
    let mut out = Vec::new();
    let channel_counts = [1u64, 3, 4, 16, 17, 33, 64];
    for k in 0..30 {
        let h = 9 + rng.below(60);
        let w = 20 + rng.below(300);
        let c = channel_counts[k % channel_counts.len()];
        let th = *rng.pick(&[1u64, 2, 4, 16, h]);
        let tw = *rng.pick(&[1u64, 7, 16, 64, w]);
        let tc = *rng.pick(&[1u64, 3, 16, c]);
        let channels = if k % 2 == 0 {
            Channels::Compact
        } else {
            Channels::PadTo16
        };
        // Logical shape [H, W, C]; physical order by variant.
        let (strides, len) = match k % 5 {
            // Packed HWC.
            0 | 1 => (vec![w * c * e, c * e, e], h * w * c * e),
            // Padded rows and pixels.
            2 => {
                let px = (c + 1) * e;
                let row = w * px + 8 * e;
                (vec![row, px, e], h * row)
            }
            // Planar CHW.
            3 => (vec![w * e, e, h * w * e], h * w * c * e),
            // H-contiguous: C slowest, then W, then H.
            _ => (vec![e, h * e, h * w * e], h * w * c * e),
        };
        out.push(Case {
            dtype,
            shape: vec![h, w, c],
            strides,
            input_len: len as usize,
            axes: [None, Some(0), Some(1), Some(2)],
            tile: [1, th.min(h) as u32, tw.min(w) as u32, tc.min(c) as u32],
            channels,
        });
    }
    // Tiles of more than one panel of pixels: 64 × 64 pixels × 3 channels.
    out.push(Case {
        dtype,
        shape: vec![2, 70, 130, 3],
        strides: vec![70 * 130 * 3 * e, 130 * 3 * e, 3 * e, e],
        input_len: (2 * 70 * 130 * 3 * e) as usize,
        axes: [Some(0), Some(1), Some(2), Some(3)],
        tile: [2, 64, 64, 3],
        channels: Channels::Compact,
    });
    // Channel tiles larger than one panel (packed and strided channels).
    for (c_stride, pad) in [(e, Channels::Compact), (2 * e, Channels::PadTo16)] {
        out.push(Case {
            dtype,
            shape: vec![3, 5000],
            strides: vec![5000 * c_stride, c_stride],
            input_len: (3 * 5000 * c_stride) as usize,
            axes: [None, None, Some(0), Some(1)],
            tile: [1, 1, 2, 4500],
            channels: pad,
        });
    }
    out
}

#[test]
fn large_panel_and_spatial_tile_cases() {
    let mut rng = Rng::new(0x7e55_0000_0000_0099);
    // Every one of the 99 cases (33 per dtype; every third when sweeps are sampled) passes
    // on every level this CPU offers: `check_case` panics on the first wrong byte and
    // returns how many prepared levels (and general paths beside fused ones) it ran.
    let mut passed = 0;
    let mut expected = 0;
    for dtype in DTYPES {
        let cases = large_cases(&mut rng, dtype);
        assert_eq!(cases.len(), 33, "{dtype}");
        let cases = simak_tests::sweeps::pick(&cases, 3);
        expected += cases.len();
        for case in cases {
            let input = fill_input(&mut rng, &case);
            assert!(check_case(&case, &input, false) >= 1, "{case:?}");
            passed += 1;
        }
    }
    assert!(expected == 99 || !simak_tests::sweeps::full());
    assert_eq!(
        passed, expected,
        "{passed} of {expected} large cases passed"
    );
}

#[test]
fn empty_tensors_write_nothing() {
    let layouts = [
        ([None, None, Some(0), Some(1)], [1, 1, 3, 1]),
        ([None, Some(2), None, Some(0)], [1, 1, 1, 2]),
    ];
    for dtype in DTYPES {
        for (axes, tile) in layouts {
            for shape in [[0u64, 2, 3], [4, 0, 3], [4, 2, 0]] {
                let case = Case {
                    dtype,
                    shape: shape.to_vec(),
                    strides: vec![0, 0, 0],
                    input_len: 0,
                    axes,
                    tile,
                    channels: Channels::PadTo16,
                };
                // Strides of extent > 1 must be valid even when empty.
                let e = dtype.size() as u64;
                let case = Case {
                    strides: vec![6 * e, 3 * e, e],
                    ..case
                };
                let plan = cast_plan(&case);
                assert_eq!(plan.output().capacity(), 0);
                assert!(plan.is_empty());
                for p in levels(&plan) {
                    a65::casttess::execute(&p, &[], &mut []).unwrap();
                    // A dirty, even misaligned, buffer is left as it was.
                    let mut dirty = [DIRTY; 33];
                    a65::casttess::execute(&p, &[1, 2, 3], &mut dirty[1..]).unwrap();
                    assert!(dirty.iter().all(|&b| b == DIRTY));
                }
            }
        }
    }
    // Empty admission still checks strides.
    let r = simak::ops::casttess::Request {
        input: TensorSpec::strided([0, 3], [4, 3], DType::F32),
        output: TiledTensorSpec::new(
            [0, 3],
            DType::BF16,
            simak::layout::MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 1, 1],
                Channels::Compact,
            ),
        ),
    };
    assert!(simak::ops::casttess::check_inference(&r).is_err());
}
