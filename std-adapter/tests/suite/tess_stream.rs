//! A65 CastTess on outputs large enough for streaming stores (≥ 4 MiB): three-channel
//! frames through every kernel level this CPU offers, against the independent plain-loop
//! oracle of SPEC §5, with the output starting at each 16-byte offset of a 64-byte line
//! (0, 16, 32, 48), so the band kernel's line-aligned stores, its masked first and last
//! lines and the line it carries from one tile row to the next are all exercised.
//! The bytes before the output and the guard bytes after the required span must stay
//! untouched; the output starts dirty.
//!
//! x86-64 only: the streaming band kernels are the x86-64 levels' (AVX2, AVX-512, AVX-512
//! VBMI; NEON's band kernel has no non-temporal stores), and under qemu these frames would
//! cost minutes while exercising nothing the other suites do not.
#![cfg(target_arch = "x86_64")]

use crate::tess_common;

use simak::DType;
use simak::a65;
use simak::layout::Channels;
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;
use tess_common::*;

/// `[D, H, W, 3]` frames (D = 1 drops the axis) with their tiles: whole W tiles of one
/// and of several 32-pixel blocks, a last W tile with a partial block, a tile of the whole
/// row (no shared lines between rows), and two-deep tiles.
fn frames(dtype: DType) -> Vec<Case> {
    let e = dtype.size() as u64;
    let hwc = |d: u64, h: u64, w: u64, tile: [u32; 4]| {
        let (shape, strides, axes) = if d == 1 {
            (
                vec![h, w, 3],
                vec![w * 3 * e, 3 * e, e],
                [None, Some(0), Some(1), Some(2)],
            )
        } else {
            (
                vec![d, h, w, 3],
                vec![h * w * 3 * e, w * 3 * e, 3 * e, e],
                [Some(0), Some(1), Some(2), Some(3)],
            )
        };
        Case {
            dtype,
            input_len: (d * h * w * 3 * e) as usize,
            shape,
            strides,
            axes,
            tile,
            channels: Channels::Compact,
        }
    };
    vec![
        hwc(1, 720, 1000, [1, 16, 64, 3]),
        hwc(1, 700, 1024, [1, 7, 32, 3]),
        hwc(1, 730, 1000, [1, 5, 1000, 3]),
        hwc(2, 350, 1030, [2, 3, 96, 3]),
    ]
}

#[test]
fn streamed_frames_at_every_line_offset() {
    let mut rng = Rng::new(0x57e4_0000_0000_0004);
    let mut runs = 0;
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for case in frames(dtype) {
            let input = fill_input(&mut rng, &case);
            let plan = cast_plan(&case);
            let expected = expected_cast(&case, input.as_slice());
            assert!(
                expected.len() >= 4 << 20,
                "{case:?} is below the streaming size"
            );
            for p in levels(&plan) {
                for offset in [0usize, 16, 32, 48] {
                    let what = format!("{} offset {offset} {case:?}", p.implementation());
                    let mut buf = Aligned::new(offset + expected.len() + GUARD, DIRTY);
                    let out = &mut buf.as_mut_slice()[offset..];
                    a65::casttess::execute(&p, input.as_slice(), out)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let (span, guard) = out.split_at(expected.len());
                    if let Some(k) = span.iter().zip(&expected).position(|(a, b)| a != b) {
                        panic!(
                            "{what}: byte {k} of {} is {:#04x}, expected {:#04x}",
                            expected.len(),
                            span[k],
                            expected[k]
                        );
                    }
                    assert!(guard.iter().all(|&b| b == DIRTY), "{what}: guard touched");
                    let before = &buf.as_slice()[..offset];
                    assert!(
                        before.iter().all(|&b| b == DIRTY),
                        "{what}: bytes before touched"
                    );
                    runs += 1;
                }
            }
        }
    }
    assert!(runs >= 48, "{runs} runs");
}
