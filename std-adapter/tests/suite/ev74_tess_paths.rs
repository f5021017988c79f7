//! The EV74 CastTess data-movement paths of SPEC §8 beyond the general band gather: each is
//! taken where its rule admits the call and not where it does not (asserted from the
//! firmware's report), and stays byte-identical to the A65 backend and to the independent
//! oracle with 1 to 4 workers, dirty output buffers, unmapped guard bands around both
//! ports, every output byte written exactly once and every logical input byte read exactly
//! once, or once per channel tile where complete pixels are staged (never a hole, never
//! past the admitted span): `ev74_casttess::check_case`.
//!
//! - The whole-panel H-contiguous path on the 30 eligibility-boundary cases shared with
//!   `cargo xtask qualify correctness` (`simak_tests::hcontig`), and every FP16 and BF16
//!   bit pattern through it.
//! - Staged complete-pixel bands and the metadata-selected BF16 pixel packer on both sides
//!   of each condition of their rules, and every BF16 bit pattern through the packer. A
//!   staged tile reads all source channels of its pixels, so a call reads each logical
//!   element once per channel tile that stages, exactly as `predict_staging` derives from
//!   the contract's rule, and never a byte of pixel padding or a row hole: the input buffer
//!   ends at the span's last byte, beyond it the simulator's guard band faults.

use crate::ev74_casttess::{Tally, check_case, predict_staging, stages};
use crate::tess_common::*;

use simak::DType;
use simak::ev74::casttess::{SimOptions, run_sim, run_sim_with};
use simak::layout::{Channels, MlaTiled};
use simak_tests::hcontig;
use simak_tests::rng::Rng;

fn case_of(dtype: DType, c: &hcontig::Case) -> Case {
    Case::strided(dtype, c.shape.clone(), c.strides.clone(), c.layout)
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
        let input = case.every_16_bit_pattern(0);
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

/// A rank-5 image `[outer 2, D 3, H 5, W, C]` (axes 1..=4 play D, H, W, C; axis 0 is an
/// outer axis) with tiles `(2, 3, 8, tc)`, so there are boundary tiles along D, H and W
/// (and C when `tc` does not divide `c`). `pixel` is the W stride and `c_stride` the C
/// stride in elements; each H row ends with a hole of `hole` elements.
#[allow(clippy::too_many_arguments)]
fn image_case(
    dtype: DType,
    w: u64,
    c: u64,
    tc: u32,
    pixel: u64,
    c_stride: u64,
    hole: u64,
    channels: Channels,
) -> Case {
    let e = dtype.size() as u64;
    let shape = vec![2, 3, 5, w, c];
    let sw = pixel * e;
    let sh = w * sw + hole * e;
    let sd = 5 * sh;
    let strides = vec![3 * sd, sd, sh, sw, c_stride * e];
    let axes = [Some(1), Some(2), Some(3), Some(4)];
    Case::strided(
        dtype,
        shape,
        strides,
        MlaTiled::new(axes, [2, 3, 8, tc], channels),
    )
}

/// `[outer 2, H 300 / w, W w, C]` with whole-image tiles `(1, 300 / w, w, tc)` of 300
/// pixels: a staged tile splits into several power-of-two bands, cut inside W segments
/// (`w` does not divide the band). `w` keeps a W segment of the subtile under 128 bytes,
/// so the general gather would read it with direct loads. `pixel` is the W stride in
/// elements, C contiguous.
fn long_tile_case(dtype: DType, c: u64, tc: u32, w: u64, pixel: u64, channels: Channels) -> Case {
    let e = dtype.size() as u64;
    let h = 300 / w;
    let shape = vec![2, h, w, c];
    let strides = vec![300 * pixel * e, w * pixel * e, pixel * e, e];
    let tile = [1, h as u32, w as u32, tc];
    Case::strided(
        dtype,
        shape,
        strides,
        MlaTiled::new([None, Some(1), Some(2), Some(3)], tile, channels),
    )
}

/// One eligibility case: its name, the case, whether some tiles stage complete pixels,
/// whether every tile does, whether the BF16 pixel packer packs the call.
struct StagedCase {
    name: &'static str,
    case: Case,
    staged: bool,
    all: bool,
    packer: bool,
}

fn staged_cases() -> Vec<StagedCase> {
    use Channels::{Compact, PadTo16};
    use DType::{BF16, F16, F32};
    let c = |name, case, staged, all, packer| StagedCase {
        name,
        case,
        staged,
        all,
        packer,
    };
    vec![
        // At most 64 source channels: 64 stage (tiles of 5 channels and a boundary of 4),
        // 65 do not.
        c(
            "bf16-c64-pad16",
            image_case(BF16, 21, 64, 5, 64, 1, 0, PadTo16),
            true,
            true,
            true,
        ),
        c(
            "bf16-c65-pad16",
            image_case(BF16, 21, 65, 5, 65, 1, 0, PadTo16),
            false,
            false,
            false,
        ),
        c(
            "f32-c64-compact",
            image_case(F32, 21, 64, 3, 64, 1, 2, Compact),
            true,
            true,
            false,
        ),
        c(
            "f32-c65-compact",
            image_case(F32, 21, 65, 3, 65, 1, 2, Compact),
            false,
            false,
            false,
        ),
        // Contiguous C: a C stride of two elements does not stage.
        c(
            "f32-c12-cstride1",
            image_case(F32, 21, 12, 3, 12, 1, 0, Compact),
            true,
            true,
            false,
        ),
        c(
            "f32-c12-cstride2",
            image_case(F32, 21, 12, 3, 24, 2, 0, Compact),
            false,
            false,
            false,
        ),
        c(
            "bf16-c12-cstride2",
            image_case(BF16, 21, 12, 4, 24, 2, 0, PadTo16),
            false,
            false,
            false,
        ),
        // FP32/FP16 need adjacent pixels; BF16 also admits padded pixels.
        c(
            "f32-c12-padded-pixels",
            image_case(F32, 21, 12, 3, 13, 1, 0, Compact),
            false,
            false,
            false,
        ),
        c(
            "f16-c12-adjacent",
            image_case(F16, 21, 12, 5, 12, 1, 1, PadTo16),
            true,
            true,
            false,
        ),
        c(
            "f16-c12-padded-pixels",
            image_case(F16, 21, 12, 5, 13, 1, 1, PadTo16),
            false,
            false,
            false,
        ),
        c(
            "bf16-c12-adjacent",
            image_case(BF16, 21, 12, 4, 12, 1, 0, PadTo16),
            true,
            true,
            true,
        ),
        c(
            "bf16-c12-padded-1",
            image_case(BF16, 21, 12, 4, 13, 1, 3, PadTo16),
            true,
            true,
            true,
        ),
        c(
            "bf16-c12-padded-20",
            image_case(BF16, 21, 12, 5, 32, 1, 1, PadTo16),
            true,
            true,
            true,
        ),
        // Padded BF16 pixels stage only when a pixel is a DMA row (2 · C ≥ 16 bytes).
        c(
            "bf16-c7-padded",
            image_case(BF16, 21, 7, 3, 8, 1, 0, PadTo16),
            false,
            false,
            false,
        ),
        c(
            "bf16-c8-padded",
            image_case(BF16, 21, 8, 3, 9, 1, 0, PadTo16),
            true,
            true,
            true,
        ),
        // Not channel-subtiled (tile C = C): the general gather.
        c(
            "bf16-c6-whole-tile",
            image_case(BF16, 21, 6, 6, 6, 1, 0, PadTo16),
            false,
            false,
            false,
        ),
        c(
            "f32-c3-whole-tile",
            image_case(F32, 21, 3, 3, 3, 1, 0, Compact),
            false,
            false,
            false,
        ),
        // A subtile row of 16 bytes or more already moves by DMA: tile C 8 (16 bytes) does
        // not stage, its 4-channel boundary tile does; tile C 7 (14 bytes) stages.
        c(
            "bf16-c12-tile8",
            image_case(BF16, 21, 12, 8, 12, 1, 0, PadTo16),
            true,
            false,
            false,
        ),
        c(
            "bf16-c24-tile7",
            image_case(BF16, 21, 24, 7, 24, 1, 0, PadTo16),
            true,
            true,
            true,
        ),
        c(
            "f32-c12-tile4",
            image_case(F32, 21, 12, 4, 12, 1, 0, Compact),
            false,
            false,
            false,
        ),
        // A W boundary tile of one pixel of 3 FP16 channels (6 bytes) does not stage.
        c(
            "f16-c3-w-boundary-1",
            image_case(F16, 17, 3, 1, 3, 1, 0, Compact),
            true,
            false,
            false,
        ),
        // Compact BF16 stages with the general packer (4 stored channels per plane).
        c(
            "bf16-c12-compact",
            image_case(BF16, 21, 12, 4, 12, 1, 0, Compact),
            true,
            true,
            false,
        ),
        c(
            "bf16-c20-tile6-pad16",
            image_case(BF16, 21, 20, 6, 20, 1, 0, PadTo16),
            true,
            true,
            true,
        ),
        c(
            "bf16-c9-tile1-pad16",
            image_case(BF16, 21, 9, 1, 9, 1, 0, PadTo16),
            true,
            true,
            true,
        ),
        // Tiles of 300 pixels (W 20, 10, 15): bands of 256 (BF16, 16 stored channels bound
        // the band, not the 8 source channels), 64 (FP32, 64 source channels) and 256 (12
        // channels), each cut inside a W segment.
        c(
            "bf16-c8-padded-long",
            long_tile_case(BF16, 8, 3, 20, 9, PadTo16),
            true,
            true,
            true,
        ),
        c(
            "f32-c64-long",
            long_tile_case(F32, 64, 3, 10, 64, Compact),
            true,
            true,
            false,
        ),
        c(
            "bf16-c12-long-compact",
            long_tile_case(BF16, 12, 4, 15, 12, Compact),
            true,
            true,
            false,
        ),
    ]
}

/// Staged complete-pixel bands and the BF16 pixel packer are taken exactly where the
/// contract's rules admit them (asserted from the firmware's report and from
/// `predict_staging`), and each case is byte-for-byte the A65's and the oracle's with 1 to
/// 4 workers (`check_case`: dirty output, guard bands, every output byte written once,
/// input bytes read exactly as predicted, inside the span).
#[test]
fn staged_bands_and_bf16_packer_boundary_cases() {
    let mut rng = Rng::new(0x57a6_ed00);
    let mut tally = Tally::default();
    let cases = staged_cases();
    assert_eq!(cases.len(), 27);
    for c in &cases {
        let case = &c.case;
        let plan = cast_plan(case);
        // The input buffer ends at the span's last byte: a read past it faults.
        assert_eq!(case.input_len as u64, plan.input().span(), "{}", c.name);
        let prediction = predict_staging(case);
        let input = fill_input(&mut rng, case);
        let reports = check_case(case, &input, &mut tally);
        assert_eq!(reports.len(), 4, "{}", c.name);
        let logical = case.elements() as u64 * case.dtype.size() as u64;
        for r in reports {
            let t = r.tess;
            let what = format!("{}: {t:?} {prediction:?}", c.name);
            assert_eq!(t.block_tasks + t.panel_tasks + t.hcontig_tasks, 0, "{what}");
            assert_eq!(t.staged_tasks > 0, c.staged, "{what}");
            assert_eq!(t.staged_tasks == t.band_tasks, c.all, "{what}");
            assert_eq!(prediction.tasks, t.staged_tasks, "{what}");
            let packed = if c.packer { t.staged_tasks } else { 0 };
            assert_eq!(t.bf16_pixel_tasks, packed, "{what}");
            if c.staged {
                // Repeated logical bytes across channel tiles, never more than one full
                // read of every source pixel per channel tile.
                let c_tiles =
                    case.shape[case.axes[3].unwrap() as usize].div_ceil(u64::from(case.tile[3]));
                assert!(prediction.reads > logical, "{what}");
                assert!(prediction.reads <= c_tiles * logical, "{what}");
            } else {
                assert_eq!(prediction.reads, logical, "{what}");
                // What the general gather always did: no staged transfer.
            }
        }
    }
}

/// Every BF16 bit pattern in order through the BF16 pixel packer: `[H 64, W 64, C 16]`
/// with tiles of 8 × 8 pixels (a W segment of 5 channels is 80 bytes: no rectangle) and 5 channels (three full 5-channel tiles, a one-channel boundary tile:
/// partial Pad16 planes and the one-channel tail), with adjacent and with padded pixels,
/// 1 to 4 workers; the same input on compact channels takes the general packer.
#[test]
fn every_bf16_pattern_through_the_bf16_pixel_packer() {
    for (pixel, channels, packer) in [
        (16u64, Channels::PadTo16, true),
        (19, Channels::PadTo16, true),
        (16, Channels::Compact, false),
    ] {
        let shape = vec![64u64, 64, 16];
        let strides = vec![64 * pixel * 2 + 6, pixel * 2, 2];
        let input_len = (2 + 63 * strides[0] + 63 * strides[1] + 15 * 2) as usize;
        let case = Case {
            dtype: DType::BF16,
            shape,
            strides,
            input_len,
            axes: [None, Some(0), Some(1), Some(2)],
            tile: [1, 8, 8, 5],
            channels,
        };
        let input = case.every_16_bit_pattern(0x77);
        let mut tally = Tally::default();
        let reports = check_case(&case, &input, &mut tally);
        assert_eq!(reports.len(), 4);
        for r in reports {
            let t = r.tess;
            assert_eq!(t.staged_tasks, t.band_tasks, "{t:?}");
            // 4 channel tiles × 64 tiles of 64 pixels, one band of 64 each.
            assert_eq!(t.staged_tasks, 256, "{t:?}");
            let packed = if packer { 256 } else { 0 };
            assert_eq!(t.bf16_pixel_tasks, packed, "{t:?}");
        }
    }
}

/// How many times the staged paths read each input byte of `case`: for the element at a
/// logical index, one read per channel tile that stages its pixel's tile (all source
/// channels), plus one from its own channel tile when that tile does not stage; 0 for a
/// byte of no element (pixel padding, row holes). Written from the layout and `stages`.
fn expected_read_counts(case: &Case) -> Vec<u16> {
    let mut counts = vec![0u16; case.input_len];
    let c_axis = case.axes[3].unwrap() as usize;
    let w_axis = case.axes[2].unwrap() as usize;
    let (c_src, tc) = (case.shape[c_axis], u64::from(case.tile[3]));
    let (w_n, tw) = (case.shape[w_axis], u64::from(case.tile[2]));
    let c_tiles: Vec<u64> = (0..c_src.div_ceil(tc))
        .map(|k| tc.min(c_src - k * tc))
        .collect();
    let shape: Vec<usize> = case.shape.iter().map(|&n| n as usize).collect();
    let size = case.dtype.size();
    // The tile extent along role `r` of the tile holding index `x` (1 without the role).
    let role_tile = |r: usize, i: &[usize]| {
        case.axes[r].map_or(1, |a| {
            let (n, t) = (case.shape[a as usize], u64::from(case.tile[r]));
            let x = i[a as usize] as u64;
            t.min(n - x / t * t)
        })
    };
    for_each_index(&shape, |i| {
        let (w, c) = (i[w_axis] as u64, i[c_axis] as u64);
        let w_tile = tw.min(w_n - w / tw * tw);
        let pixels = role_tile(0, i) * role_tile(1, i) * w_tile;
        let staged = c_tiles
            .iter()
            .filter(|&&t| stages(case, t, pixels, w_tile))
            .count();
        let own = c_tiles[(c / tc) as usize];
        let n = staged + usize::from(!stages(case, own, pixels, w_tile));
        let at = case.input_offset(i);
        for b in &mut counts[at..at + size] {
            *b = n as u16;
        }
    });
    counts
}

/// Per input byte, the staged paths read exactly what the rule predicts: each element once
/// per channel tile that stages its pixel (plus once from its own tile if that one does
/// not), and never a byte of pixel padding or a row hole; the input ends at the span's
/// last byte (the final pixel's last channel), beyond it an unmapped guard band.
#[test]
fn staged_reads_touch_only_logical_bytes_each_as_predicted() {
    let mut rng = Rng::new(0x5ea7_ed02);
    let mut checked = 0;
    for c in staged_cases() {
        let case = &c.case;
        let plan = cast_plan(case);
        let input = fill_input(&mut rng, case);
        let expected = expected_read_counts(case);
        let total: u64 = expected.iter().map(|&n| u64::from(n)).sum();
        assert_eq!(total, predict_staging(case).reads, "{}", c.name);
        let holes = expected.iter().filter(|&&n| n == 0).count();
        for workers in [1, 3] {
            let mut out = vec![DIRTY; plan.output().capacity() as usize];
            let options = SimOptions {
                track_reads: true,
                ..SimOptions::new(workers)
            };
            let run = run_sim_with(&plan, input.as_slice(), &mut out, &options).unwrap();
            assert_eq!(run.input_read_counts.len(), case.input_len);
            if let Some(k) = (0..case.input_len).find(|&k| run.input_read_counts[k] != expected[k])
            {
                panic!(
                    "{} ({workers} workers): input byte {k} read {} times, expected {} ({holes} hole bytes)",
                    c.name, run.input_read_counts[k], expected[k]
                );
            }
            assert_eq!(run.input_bytes_read, total, "{}", c.name);
            assert_eq!(out, expected_cast(case, input.as_slice()), "{}", c.name);
            checked += 1;
        }
        // The last input byte belongs to the final pixel's last channel.
        assert!(*expected.last().unwrap() > 0, "{}", c.name);
    }
    assert_eq!(checked, 54);
}
