//! The EV74 CastTess source gathers of SPEC §8 for short rows: the BF16 exact-width 2D
//! gathers (`TessStats::exact_width_rows`) and the rectangle choice before the small-work
//! cutoff (`TessStats::rectangle_runs`). Each case states how many rows each path moves
//! in one call (any worker count) and is asserted from the firmware's report, then checked
//! by `ev74_casttess::check_case`: byte-identical to the A65 backend and to the independent
//! oracle with 1 to 4 workers, dirty output, guard bands around both ports, every output
//! byte written exactly once, every logical input byte read exactly once; and here also
//! that the bytes read never exceed the admitted input span.
//!
//! - Eligibility boundaries: 15 vs 16 and 63 vs 64 pixels per strided BF16 row, bands of
//!   63 vs 64 pixels, row pitches of 65,534 (the largest admissible BF16 pitch ≤ 65,535)
//!   vs 65,536 bytes, FP16 and FP32 on the exact-width shapes (never exact-width),
//!   rectangles of 126 vs 128 bytes (the element sizes allow no 127) for strided pixels
//!   and for whole short rows, rows grouped across D only at a regular pitch.
//! - The four strided BF16 tail cases shared in `simak_tests::bf16_tails` (also run by
//!   `cargo xtask qualify correctness` as `correct/casttess/bf16-tail/<name>`).

use crate::ev74_casttess::{Tally, check_case};
use crate::tess_common::*;

use simak::DType;
use simak::ev74::casttess::run_sim;
use simak::layout::{Channels, MlaTiled};
use simak_tests::bf16_tails;
use simak_tests::rng::Rng;

/// Rows each path moves in one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Expect {
    exact_width: u64,
    rectangles: u64,
    direct: u64,
}

const fn expect(exact_width: u64, rectangles: u64, direct: u64) -> Expect {
    Expect {
        exact_width,
        rectangles,
        direct,
    }
}

const HWC: [Option<u8>; 4] = [None, Some(0), Some(1), Some(2)];
const HW: [Option<u8>; 4] = [None, Some(0), Some(1), None];
const DHW: [Option<u8>; 4] = [Some(0), Some(1), Some(2), None];

fn case(
    dtype: DType,
    shape: &[u64],
    strides: &[u64],
    axes: [Option<u8>; 4],
    tile: [u32; 4],
    channels: Channels,
) -> Case {
    Case::strided(
        dtype,
        shape.to_vec(),
        strides.to_vec(),
        MlaTiled::new(axes, tile, channels),
    )
}

/// Runs `case` through `check_case`, checks the bytes read against the admitted span with
/// 4 workers, and asserts that every run moved the expected rows on each path.
fn check_paths(name: &str, case: &Case, want: Expect, rng: &mut Rng, tally: &mut Tally) {
    let input = fill_input(rng, case);
    let reports = check_case(case, &input, tally);
    assert_eq!(reports.len(), 4, "{name}");
    for r in &reports {
        let t = r.tess;
        let got = expect(t.exact_width_rows, t.rectangle_runs, t.source_direct_rows);
        assert_eq!(got, want, "{name}: {t:?}");
        assert_eq!((t.hcontig_tasks, t.block_tasks), (0, 0), "{name}: {t:?}");
    }
    let plan = cast_plan(case);
    let capacity = plan.output().capacity() as usize;
    let mut out = vec![DIRTY; capacity];
    let run = run_sim(&plan, input.as_slice(), &mut out, 4).unwrap();
    let logical = (case.elements() * case.dtype.size()) as u64;
    assert_eq!(run.input_bytes_read, logical, "{name}");
    assert!(run.input_bytes_read <= plan.input().span(), "{name}");
    assert_eq!(run.stats.faults, 0, "{name}");
}

/// The eligibility boundaries of both rules, each case asserting which path its rows took.
#[test]
fn gather_boundary_cases_take_each_path_exactly_where_eligible() {
    use Channels::{Compact, PadTo16};
    use DType::{BF16, F16, F32};
    let cases: Vec<(&str, Case, Expect)> = vec![
        // BF16, one channel per task (tile C = 1), pixels 4 bytes apart: rows of 16..=63
        // pixels in bands of at least 64 take one exact-width command per row.
        (
            "bf16-16px-rows",
            case(BF16, &[4, 16, 2], &[128, 4, 2], HWC, [1, 4, 16, 1], Compact),
            expect(2 * 4, 0, 0),
        ),
        (
            "bf16-15px-rows",
            case(BF16, &[5, 15, 1], &[120, 4, 2], HWC, [1, 5, 15, 1], Compact),
            expect(0, 0, 75),
        ),
        (
            "bf16-63px-rows",
            case(BF16, &[2, 63, 2], &[252, 4, 2], HWC, [1, 2, 63, 1], Compact),
            expect(2 * 2, 0, 0),
        ),
        // 64 pixels are 128 bytes: a rectangle of the normal threshold instead.
        (
            "bf16-64px-rows-rectangle",
            case(BF16, &[2, 64, 2], &[256, 4, 2], HWC, [1, 2, 64, 1], Compact),
            expect(0, 2 * 2, 0),
        ),
        // Pad16 bands of 256 pixels: the tile's second band has 63 pixels (rows of 5,
        // 29 and 29 pixels: direct) or 64 (two rows of 32: exact-width). The first band's
        // 24-pixel tail row is exact-width.
        (
            "bf16-band-63",
            case(
                BF16,
                &[11, 29, 1],
                &[116, 4, 2],
                HWC,
                [1, 11, 29, 1],
                PadTo16,
            ),
            expect(8 + 1, 0, 63),
        ),
        (
            "bf16-band-64",
            case(
                BF16,
                &[10, 32, 1],
                &[128, 4, 2],
                HWC,
                [1, 10, 32, 1],
                PadTo16,
            ),
            expect(8 + 2, 0, 0),
        ),
        // Rows along W with a W pitch at the 16-bit DMA limit (H stride 4: not
        // H-contiguous).
        (
            "bf16-pitch-65534",
            case(
                BF16,
                &[4, 16, 1],
                &[4, 65534, 2],
                HWC,
                [1, 4, 16, 1],
                Compact,
            ),
            expect(4, 0, 0),
        ),
        (
            "bf16-pitch-65536",
            case(
                BF16,
                &[4, 16, 1],
                &[4, 65536, 2],
                HWC,
                [1, 4, 16, 1],
                Compact,
            ),
            expect(0, 0, 64),
        ),
        // FP16 and FP32 never take the exact-width gather. (The cases whose rows stay
        // direct have one source channel, pixels strided with holes: with more channels
        // their tiles would stage complete pixels instead, `ev74_tess_paths`.)
        (
            "f16-16px-rows",
            case(F16, &[4, 16, 1], &[128, 4, 2], HWC, [1, 4, 16, 1], Compact),
            expect(0, 0, 64),
        ),
        (
            "f32-16px-rows",
            case(F32, &[4, 16, 1], &[256, 8, 4], HWC, [1, 4, 16, 1], Compact),
            expect(0, 0, 64),
        ),
        // Strided pixels as rectangles: 63 FP16 pixels (126 bytes) vs 64 (128); 32 FP32
        // pixels (128).
        (
            "f16-63px-rows-126-bytes",
            case(F16, &[2, 63, 1], &[252, 4, 2], HWC, [1, 2, 63, 1], Compact),
            expect(0, 0, 126),
        ),
        (
            "f16-64px-rows-rectangle",
            case(F16, &[2, 64, 2], &[256, 4, 2], HWC, [1, 2, 64, 1], Compact),
            expect(0, 2 * 2, 0),
        ),
        (
            "f32-32px-rows-rectangle",
            case(F32, &[2, 32, 2], &[256, 8, 4], HWC, [1, 2, 32, 1], Compact),
            expect(0, 2 * 2, 0),
        ),
        // Several whole short contiguous rows (a W segment under 16 bytes) grouped along H:
        // 21 rows of 6 bytes (126) stay direct, 16 rows of 8 bytes (128) are one rectangle
        // per tile.
        (
            "f16-rows-126-bytes",
            case(F16, &[21, 6], &[12, 2], HW, [1, 21, 3, 1], Compact),
            expect(0, 0, 2 * 21),
        ),
        (
            "f16-rows-128-bytes",
            case(F16, &[16, 8], &[16, 2], HW, [1, 16, 4, 1], Compact),
            expect(0, 2, 0),
        ),
        // Across D: 2 x 8 rows of 8 bytes form one rectangle when D's stride is 8 H
        // strides (a regular pitch), else each D slice (64 bytes) stays direct.
        (
            "f16-rows-across-d",
            case(F16, &[2, 8, 8], &[128, 16, 2], DHW, [2, 8, 4, 1], Compact),
            expect(0, 2, 0),
        ),
        (
            "f16-rows-d-gap",
            case(F16, &[2, 8, 8], &[160, 16, 2], DHW, [2, 8, 4, 1], Compact),
            expect(0, 0, 2 * 16),
        ),
        // BF16 short rows over two Pad16 bands (256 pixels) of an 80 x 6 tile: the first
        // band's 42 whole rows of 12 bytes are one rectangle, its 4-pixel tail is direct;
        // the second band starts mid-row (2 pixels, direct: a partial row is never
        // grouped), then its 37 whole rows are one rectangle.
        (
            "bf16-rows-two-bands",
            case(BF16, &[80, 6], &[12, 2], HW, [1, 80, 6, 1], PadTo16),
            expect(0, 2, 1 + 1),
        ),
    ];
    assert_eq!(cases.len(), 18);
    let mut rng = Rng::new(0x9a7e_45e5);
    let mut tally = Tally::default();
    for (name, case, want) in &cases {
        check_paths(name, case, *want, &mut rng, &mut tally);
    }
}

/// The four strided BF16 tail cases: each mixes direct rows with exact-width rows, in
/// the counts the table states, byte-identical to the A65 backend and the oracle.
#[test]
fn four_strided_bf16_tail_cases_mix_direct_and_exact_width_rows() {
    let cases = bf16_tails::cases();
    assert_eq!(cases.len(), 4);
    let mut rng = Rng::new(0xbf16_7a11);
    let mut tally = Tally::default();
    let mut pad16 = 0;
    for c in &cases {
        assert!(c.exact_width_rows > 0 && c.direct_rows > 0, "{}", c.name);
        if c.layout.channels == Channels::PadTo16 {
            pad16 += 1;
        }
        let case = case(
            DType::BF16,
            &c.shape,
            &c.strides,
            c.layout.axes,
            c.layout.tile,
            c.layout.channels,
        );
        let want = expect(c.exact_width_rows, 0, c.direct_rows);
        check_paths(c.name, &case, want, &mut rng, &mut tally);
    }
    assert_eq!(pad16, 2);
}
