//! The entries against the exact path, on an IEEE unit and on a flushing (DAZ + FTZ) unit.

extern crate std;

use std::vec::Vec;

use super::*;
use simak_core::arith::quant::{Decoded, F16, Kernels};

/// Multipliers that stress the fast path: 1.0, ≈0.3, large and tiny normals (products near
/// the subnormal range and overflow), and subnormal multipliers (always exact).
const MULTIPLIERS: [u32; 12] = [
    0x3f80_0000,
    0x3e99_999a,
    0x4b00_0001,
    0x7f00_0000,
    0x0080_0000,
    0x0c00_0001,
    0x2000_0000,
    0x3380_0000,
    0x0000_0001,
    0x007f_ffff,
    0x0040_0001,
    0x1a80_0003,
];
const ZERO_POINTS: [i32; 3] = [-128, 0, 127];

fn le_bytes(dtype: DType, bits: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bits.len() * dtype.size());
    for &b in bits {
        out.extend_from_slice(&b.to_le_bytes()[..dtype.size()]);
    }
    out
}

/// Runs `bits` through the entry on both FP units and checks every byte against the exact
/// path. Returns the summed stats of the IEEE and flushing runs.
fn check(dtype: DType, bits: &[u32]) -> (BlockStats, BlockStats) {
    let input = le_bytes(dtype, bits);
    let mut ieee_total = BlockStats::default();
    let mut ftz_total = BlockStats::default();
    let mut ieee = std::vec![0u8; bits.len()];
    let mut ftz = std::vec![0u8; bits.len()];
    for rounding in Rounding::ALL {
        let e_ieee = select::<Ieee>(dtype, rounding).unwrap();
        let e_ftz = select::<FlushToZero>(dtype, rounding).unwrap();
        let kernels = Kernels::select(dtype, rounding).unwrap();
        for m in MULTIPLIERS {
            for zp in ZERO_POINTS {
                let p = EntryParams {
                    multiplier: Multiplier::from_bits(m).unwrap(),
                    zero_point: zp,
                };
                ieee.fill(0x5a);
                ftz.fill(0xa5);
                ieee_total.add((e_ieee.run)(&p, &input, &mut ieee));
                ftz_total.add((e_ftz.run)(&p, &input, &mut ftz));
                for (k, &b) in bits.iter().enumerate() {
                    let want = (kernels.element)(&p.multiplier, zp, b) as u8;
                    assert_eq!(
                        (ieee[k], ftz[k]),
                        (want, want),
                        "{dtype} {rounding} m 0x{m:08x} zp {zp} bits 0x{b:08x}"
                    );
                }
            }
        }
    }
    (ieee_total, ftz_total)
}

#[test]
fn f16_widening_is_exact_for_every_pattern() {
    for h in 0u32..=0xffff {
        let w = F16::to_f32_bits(h);
        match F16::decode(h) {
            Decoded::Zero => assert_eq!(w & 0x7fff_ffff, 0, "{h:04x}"),
            Decoded::Nan => assert!(f32::from_bits(w).is_nan(), "{h:04x}"),
            Decoded::Inf(neg) => {
                assert_eq!(w, if neg { 0xff80_0000 } else { 0x7f80_0000 }, "{h:04x}")
            }
            Decoded::Finite {
                negative,
                significand,
                exponent,
            } => {
                let v = significand as f64 * 2f64.powi(exponent);
                let v = if negative { -v } else { v };
                assert_eq!(f32::from_bits(w) as f64, v, "{h:04x}");
                assert_ne!(w & 0x7f80_0000, 0, "{h:04x} widened to a subnormal");
            }
        }
        // Signs are kept for every pattern, NaNs included.
        assert_eq!(w >> 31, h >> 15, "{h:04x}");
    }
}

#[test]
fn every_bf16_pattern_ieee_and_ftz_match_exact() {
    let bits: Vec<u32> = (0..=0xffff).collect();
    let (ieee, ftz) = check(DType::BF16, &bits);
    // Both paths were exercised, and the flushing unit sent more blocks to the exact path.
    assert!(ieee.fast > 0 && ieee.exact > 0);
    assert!(ftz.exact >= ieee.exact);
}

#[test]
fn every_f16_pattern_ieee_and_ftz_match_exact() {
    let bits: Vec<u32> = (0..=0xffff).collect();
    let (ieee, ftz) = check(DType::F16, &bits);
    assert!(ieee.fast > 0 && ieee.exact > 0);
    assert!(ftz.exact >= ieee.exact);
}

#[test]
fn fp32_exponent_classes_ieee_and_ftz_match_exact() {
    // Every exponent with edge and random mantissas, both signs, plus NaNs and infinities;
    // shuffled so blocks mix classes, and a length that leaves a 7-element tail.
    let mut bits = Vec::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    for exp in 0u32..=255 {
        for man in [0u32, 1, 2, 0x40_0000, 0x7f_ffff, 0x7f_fffe] {
            for sign in [0u32, 0x8000_0000] {
                bits.push(sign | exp << 23 | man);
            }
        }
        for _ in 0..8 {
            bits.push((next() & 0x8000_0000) | exp << 23 | (next() & 0x7f_ffff));
        }
    }
    for k in (1..bits.len()).rev() {
        let j = next() as usize % (k + 1);
        bits.swap(k, j);
    }
    let keep = (bits.len() - BLOCK) / BLOCK * BLOCK + 7;
    bits.truncate(keep);
    let (ieee, ftz) = check(DType::F32, &bits);
    assert!(ieee.fast > 0 && ftz.exact > 0);
    assert!(ieee.tail > 0);
}

#[test]
fn one_exceptional_lane_sends_its_block_to_the_exact_path() {
    // 15 normal lanes and one FP32 subnormal (or an underflowing product) in each position.
    let m = Multiplier::from_bits(0x3f80_0000).unwrap();
    let p = EntryParams {
        multiplier: m,
        zero_point: 3,
    };
    let e = select::<FlushToZero>(DType::F32, Rounding::NearestEven).unwrap();
    for lane in 0..BLOCK {
        for odd in [0x0000_0001u32, 0x8040_0000] {
            let mut bits = [1.5f32.to_bits(); BLOCK];
            bits[lane] = odd;
            let input = le_bytes(DType::F32, &bits);
            let mut out = [0u8; BLOCK];
            let stats = (e.run)(&p, &input, &mut out);
            assert_eq!((stats.fast, stats.exact), (0, 1), "lane {lane}");
            assert_eq!(out[lane] as i8, 3);
            assert!(
                out.iter()
                    .enumerate()
                    .all(|(k, &o)| k == lane || o as i8 == 5)
            );
        }
    }
    // A normal input whose product underflows: flushed to zero by FTZ, caught by the
    // zero-exponent test and recomputed exactly. Multiplier 1.5 · 2^-126 times 0.5 is the
    // subnormal 0.75 · 2^-126; with toward-positive it must round to 1.
    let p = EntryParams {
        multiplier: Multiplier::from_bits(0x00c0_0000).unwrap(),
        zero_point: 0,
    };
    let e = select::<FlushToZero>(DType::F32, Rounding::TowardPositive).unwrap();
    let bits = [0.5f32.to_bits(); BLOCK];
    let mut out = [0u8; BLOCK];
    let stats = (e.run)(&p, &le_bytes(DType::F32, &bits), &mut out);
    assert_eq!(stats.exact, 1);
    assert_eq!(out, [1u8; BLOCK]);
}

#[test]
fn short_output_or_input_leaves_the_rest_untouched() {
    let e = select::<Ieee>(DType::BF16, Rounding::TowardZero).unwrap();
    let p = EntryParams {
        multiplier: Multiplier::from_bits(0x3f80_0000).unwrap(),
        zero_point: 0,
    };
    let input = le_bytes(DType::BF16, &[0x4000; 20]);
    let mut out = [0xeeu8; 40];
    let stats = (e.run)(&p, &input, &mut out);
    assert_eq!((stats.fast, stats.tail), (1, 4));
    assert!(out[..20].iter().all(|&b| b == 2));
    assert!(out[20..].iter().all(|&b| b == 0xee));
}

#[test]
fn twelve_distinct_entries() {
    let mut seen = Vec::new();
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        for rounding in Rounding::ALL {
            let e = select::<Ieee>(dtype, rounding).unwrap();
            assert_eq!((e.dtype, e.rounding, e.fp_unit), (dtype, rounding, "ieee"));
            seen.push(e.run as usize);
        }
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 12);
    assert!(select::<Ieee>(DType::I8, Rounding::NearestEven).is_none());
}

/// What a meter is told per tally: recomputed blocks count their deciding products as fast
/// elements unless the multiplier is subnormal; tails are fallback elements.
#[test]
fn block_stats_elements_split_fast_and_fallback() {
    let stats = BlockStats {
        fast: 3,
        exact: 2,
        tail: 5,
    };
    assert_eq!(stats.elements(false), (5 * 16, 2 * 16 + 5));
    assert_eq!(stats.elements(true), (3 * 16, 2 * 16 + 5));
    assert_eq!(BlockStats::default().elements(false), (0, 0));
}
