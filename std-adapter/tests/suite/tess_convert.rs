//! CastTess conversions (SPEC §4) through every A65 kernel level and every packing path:
//! all 65 536 FP16 and BF16 patterns, FP32 rounding boundaries and NaN wraparound, the
//! literal vectors that broke other libraries, the agreeing `cast_bf16` peer vectors, and
//! all 2^32 FP32 patterns through the SIMD conversion.

use crate::tess_common;
use simak::ops::casttess::TiledTensorSpec;

use std::sync::atomic::{AtomicU64, Ordering};

use simak::a65;
use simak::a65::Level;
use simak::layout::{Channels, MlaTiled};
use simak::{DType, TensorSpec};
use simak_tests::bytes::{Aligned, encode};
use tess_common::*;

/// The packing paths: (name, case builder for `n` elements).
fn paths(dtype: DType, n: u64) -> Vec<(&'static str, Case)> {
    let e = dtype.size() as u64;
    let flat = |axes, tile, channels| Case {
        dtype,
        shape: vec![n],
        strides: vec![e],
        input_len: (n * e) as usize,
        axes,
        tile,
        channels,
    };
    let c4 = n.div_ceil(4);
    let c3 = n.div_ceil(3);
    let c17 = n.div_ceil(17);
    let side = (n as f64).sqrt().ceil() as u64;
    vec![
        // One channel per pixel: the BF16 pairs are the layout.
        (
            "one-channel",
            flat(
                [None, None, Some(0), None],
                [1, 1, 4096.min(n as u32), 1],
                Channels::Compact,
            ),
        ),
        // Compact pixels of 3 and 4 channels: the byte-shuffle path.
        (
            "compact-3",
            Case {
                dtype,
                shape: vec![c3, 3],
                strides: vec![3 * e, e],
                input_len: (c3 * 3 * e) as usize,
                axes: [None, None, Some(0), Some(1)],
                tile: [1, 1, 64.min(c3 as u32), 3],
                channels: Channels::Compact,
            },
        ),
        (
            "compact-4",
            Case {
                dtype,
                shape: vec![c4, 4],
                strides: vec![4 * e, e],
                input_len: (c4 * 4 * e) as usize,
                axes: [None, None, Some(0), Some(1)],
                tile: [1, 1, 100.min(c4 as u32), 4],
                channels: Channels::Compact,
            },
        ),
        // 17 channels padded to 32: the per-pixel group path.
        (
            "pad16-17",
            Case {
                dtype,
                shape: vec![c17, 17],
                strides: vec![17 * e, e],
                input_len: (c17 * 17 * e) as usize,
                axes: [None, None, Some(0), Some(1)],
                tile: [1, 1, 8.min(c17 as u32), 17],
                channels: Channels::PadTo16,
            },
        ),
        // H-contiguous (transposed) input: the gathered panel path.
        (
            "h-contiguous",
            Case {
                dtype,
                shape: vec![side, side],
                strides: vec![e, side * e],
                input_len: (side * side * e) as usize,
                axes: [None, Some(0), Some(1), None],
                tile: [1, 16.min(side as u32), 32.min(side as u32), 1],
                channels: Channels::Compact,
            },
        ),
        // All elements as channels of one pixel: channel chunks larger than one panel.
        (
            "channel-chunks",
            flat(
                [None, None, None, Some(0)],
                [1, 1, 1, n as u32],
                Channels::Compact,
            ),
        ),
    ]
}

/// Runs `bits` (cycled over each path's elements) through every path and level; checks
/// the whole buffer against the layout oracle and each element's conversion against
/// `want`. Returns the number of element conversions checked.
fn sweep(dtype: DType, bits: &[u32], want: impl Fn(u32) -> u16) -> usize {
    let mut checked = 0;
    for (name, case) in paths(dtype, bits.len() as u64) {
        let mut input = Aligned::new(case.input_len, 0);
        let shape: Vec<usize> = case.shape.iter().map(|&e| e as usize).collect();
        let size = dtype.size();
        let mut k = 0usize;
        for_each_index(&shape, |i| {
            let at = case.input_offset(i);
            let b = bits[k % bits.len()];
            input.as_mut_slice()[at..at + size].copy_from_slice(&b.to_le_bytes()[..size]);
            k += 1;
        });
        let plan = cast_plan(&case);
        let expected = expected_cast(&case, input.as_slice());
        let mut logical = vec![0u8; 2 * case.elements()];
        for p in levels(&plan) {
            let what = format!("{dtype} {name} {}", p.implementation());
            let mut got = Aligned::new(expected.len(), DIRTY);
            a65::casttess::execute(&p, input.as_slice(), got.as_mut_slice()).unwrap();
            assert!(
                got.as_slice() == expected,
                "{what}: differs from the layout oracle"
            );
            plan.output().untile(got.as_slice(), &mut logical).unwrap();
            let mut k = 0usize;
            for_each_index(&shape, |i| {
                let raw = read_raw(&case, input.as_slice(), i);
                let got = u16::from_le_bytes([logical[2 * k], logical[2 * k + 1]]);
                assert_eq!(got, want(raw), "{what}: input 0x{raw:08x}");
                k += 1;
            });
            checked += k;
        }
    }
    checked
}

#[test]
fn all_fp16_patterns_every_path() {
    let bits: Vec<u32> = (0..=u16::MAX as u32).collect();
    let checked = sweep(DType::F16, &bits, |b| oracle_f16(b as u16));
    assert!(checked >= 6 * 65536);
}

#[test]
fn all_bf16_patterns_every_path() {
    let bits: Vec<u32> = (0..=u16::MAX as u32).collect();
    let checked = sweep(DType::BF16, &bits, |b| b as u16);
    assert!(checked >= 6 * 65536);
}

#[test]
fn fp16_oracle_agrees_with_the_quieting_rule_and_rne() {
    // The test oracle itself, on values worked out by hand.
    assert_eq!(oracle_f16(0x3c00), 0x3f80);
    assert_eq!(oracle_f16(0x3c04), 0x3f80); // 1 + 2^-8: tie to even
    assert_eq!(oracle_f16(0x3c0c), 0x3f82); // 1 + 3·2^-8: tie to even, upward
    assert_eq!(oracle_f16(0x7e01), 0x7fc0);
    assert_eq!(oracle_f16(0xfc00), 0xff80);
}

#[test]
fn fp32_boundaries_and_nan_wraparound() {
    let highs = [
        0x0000u32, 0x0001, 0x007f, 0x0080, 0x3f80, 0x3f81, 0x7f7f, 0x7f80, 0x7f81, 0x7fbf, 0x7fc0,
        0x7ffe, 0x7fff, 0x8000, 0x8001, 0x807f, 0xbf80, 0xff7f, 0xff80, 0xffc0, 0xfffe, 0xffff,
    ];
    let lows = [
        0x0000u32, 0x0001, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0xc000, 0xfffe, 0xffff,
    ];
    let bits: Vec<u32> = highs
        .iter()
        .flat_map(|h| lows.iter().map(move |l| (h << 16) | l))
        .collect();
    let checked = sweep(DType::F32, &bits, oracle_f32);
    assert!(checked >= 6 * bits.len());
    // NaN wraparound, spelled out.
    for (x, w) in [
        (0x7f80_0001u32, 0x7f80u16),
        (0x7f80_8000, 0x7f80),
        (0x7f80_8001, 0x7f81),
        (0x7fff_7fff, 0x7fff),
        (0x7fff_8000, 0x8000),
        (0xffff_8000, 0x0000),
        (0xffff_ffff, 0x0000),
    ] {
        assert_eq!(oracle_f32(x), w);
    }
}

/// Runs literal vectors through every path and level.
fn literal(dtype: DType, input: &[u32], want: &[u16]) {
    let table: Vec<(u32, u16)> = input.iter().copied().zip(want.iter().copied()).collect();
    sweep(dtype, input, |b| {
        table
            .iter()
            .find(|(x, _)| *x == b)
            .map(|(_, w)| *w)
            .unwrap()
    });
}

#[test]
fn literal_vectors_that_broke_others() {
    literal(
        DType::F16,
        &[0xfc01, 0x7c01, 0x7d00, 0x7fff, 0xfe00, 0xfdff],
        &[0xffc0, 0x7fc0, 0x7fe0, 0x7fff, 0xffc0, 0xffff],
    );
    literal(
        DType::F16,
        &[0x0001, 0x8001, 0x03ff, 0x0201, 0x0202, 0x0203, 0x0003],
        &[0x3380, 0xb380, 0x3880, 0x3800, 0x3800, 0x3801, 0x3440],
    );
    literal(
        DType::F32,
        &[
            0x7f80_0001,
            0xff80_0001,
            0x7f80_ffff,
            0x7fa0_0000,
            0x7fff_ffff,
            0xffff_ffff,
            0xffff_8000,
        ],
        &[0x7f80, 0xff80, 0x7f81, 0x7fa0, 0x8000, 0x0000, 0x0000],
    );
}

#[test]
fn agreeing_peer_cast_vectors() {
    let mut entries = 0;
    let mut values = 0;
    for file in simak_tests::peer::files() {
        for entry in simak_tests::peer::agreeing(&file) {
            if entry.op != "cast_bf16" || !entry.agrees {
                continue;
            }
            let Some(expected) = &entry.expected_bits else {
                continue;
            };
            let n = entry.in_bits.len() as u64;
            let input = Aligned::from_slice(&encode(entry.dtype, &entry.in_bits));
            let plan = cast_plan(&Case {
                dtype: entry.dtype,
                shape: vec![n],
                strides: vec![entry.dtype.size() as u64],
                input_len: input.as_slice().len(),
                axes: [None, None, Some(0), None],
                tile: [1, 1, n as u32, 1],
                channels: Channels::Compact,
            });
            for p in levels(&plan) {
                let mut out = Aligned::new(plan.output().capacity() as usize, DIRTY);
                a65::casttess::execute(&p, input.as_slice(), out.as_mut_slice()).unwrap();
                for (k, &want) in expected.iter().enumerate() {
                    let got =
                        u16::from_le_bytes([out.as_slice()[2 * k], out.as_slice()[2 * k + 1]]);
                    assert_eq!(
                        got as u32,
                        want,
                        "{} {} {}: element {k} (input 0x{:x})",
                        entry.file,
                        entry.name,
                        p.implementation(),
                        entry.in_bits[k]
                    );
                }
                values += expected.len();
            }
            entries += 1;
        }
    }
    // onnx (3 entries), pytorch (5 + property entries), ml_dtypes (the 63 490 non-NaN FP16).
    assert!(entries >= 5, "{entries} peer entries");
    assert!(values >= 63_490, "{values} peer values");
}

/// All 2^32 FP32 patterns through `level`'s conversion (as a one-channel CastTess, whose
/// output is the BF16 stream), every `stride`-th chunk of 2^20 patterns, on all cores.
fn fp32_sweep(level: Level, stride: u64) -> Option<u64> {
    const CHUNK: u64 = 1 << 20;
    let plan = simak::ops::casttess::check_inference(&simak::ops::casttess::Request {
        input: TensorSpec::contiguous([CHUNK], DType::F32),
        output: TiledTensorSpec::new(
            [CHUNK],
            DType::BF16,
            MlaTiled::new(
                [None, None, Some(0), None],
                [1, 1, CHUNK as u32, 1],
                Channels::Compact,
            ),
        ),
    })
    .unwrap();
    let prepared = a65::casttess::prepare_at(&plan, level).ok()?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let next = AtomicU64::new(0);
    let checked = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut input = Aligned::new(4 * CHUNK as usize, 0);
                let mut output = Aligned::new(2 * CHUNK as usize, 0);
                loop {
                    let chunk = next.fetch_add(stride, Ordering::Relaxed);
                    if chunk >= (1 << 32) / CHUNK {
                        break;
                    }
                    let base = (chunk * CHUNK) as u32;
                    for (k, b) in input.as_mut_slice().chunks_exact_mut(4).enumerate() {
                        b.copy_from_slice(&(base + k as u32).to_le_bytes());
                    }
                    a65::casttess::execute(&prepared, input.as_slice(), output.as_mut_slice())
                        .unwrap();
                    for (k, o) in output.as_slice().chunks_exact(2).enumerate() {
                        let x = base + k as u32;
                        let got = u16::from_le_bytes([o[0], o[1]]);
                        assert_eq!(got, oracle_f32(x), "{}: 0x{x:08x}", level.name());
                    }
                    checked.fetch_add(CHUNK, Ordering::Relaxed);
                }
            });
        }
    });
    Some(checked.into_inner())
}

#[test]
fn all_fp32_patterns_through_the_simd_conversion() {
    // Every pattern through the level `prepare` picks (every 4th chunk of 2^20 when sweeps
    // are sampled); a strided subset (every 8th chunk) through the other SIMD levels.
    let plan_level = {
        let plan = simak::ops::casttess::check_inference(&simak::ops::casttess::Request {
            input: TensorSpec::contiguous([1], DType::F32),
            output: TiledTensorSpec::new(
                [1],
                DType::BF16,
                MlaTiled::new([None, None, Some(0), None], [1; 4], Channels::Compact),
            ),
        })
        .unwrap();
        a65::casttess::prepare(&plan).level()
    };
    let stride = if simak_tests::sweeps::full() { 1 } else { 4 };
    assert_eq!(fp32_sweep(plan_level, stride), Some((1 << 32) / stride));
    for level in Level::ALL.into_iter().rev() {
        if level != plan_level
            && level != Level::Scalar
            && let Some(n) = fp32_sweep(level, 8)
        {
            assert_eq!(n, 1 << 29);
        }
    }
}
