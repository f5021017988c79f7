//! Vectors that broke other implementations: exact expected values, checked through the
//! library and against the oracle (both must agree with the literal).
//!
//! Values are raw bit patterns; `m` is the multiplier's binary32 bits. Zero point 0 and
//! nearest-even unless stated.

use simak::DType;
use simak::ops::quant::{Params, Rounding};
use simak_tests::{lib_run, oracle};

fn check(dtype: DType, input: &[u32], m: u32, zp: i32, rounding: Rounding, expected: &[i8]) {
    assert_eq!(input.len(), expected.len());
    let oracle_out: Vec<i8> = input
        .iter()
        .map(|&b| oracle::quant(dtype, b, m, zp, rounding))
        .collect();
    assert_eq!(
        oracle_out, expected,
        "oracle disagrees with the literal: {dtype} m=0x{m:08x} zp={zp} {rounding}"
    );
    let params = Params::from_bits(m)
        .with_zero_point(zp)
        .with_rounding(rounding);
    let got = lib_run::contiguous(dtype, input, params);
    assert_eq!(
        got, expected,
        "library: {dtype} {input:08x?} m=0x{m:08x} zp={zp} {rounding}"
    );
    // Each element alone (a length-1 run) as well.
    for (&b, &want) in input.iter().zip(expected) {
        assert_eq!(
            lib_run::contiguous(dtype, &[b], params),
            vec![want],
            "library, single element 0x{b:08x}: {dtype} m=0x{m:08x} zp={zp} {rounding}"
        );
    }
}

const NE: Rounding = Rounding::NearestEven;

/// ±0.25, ±0.75, ±1.25, ±1.75 × 2: ties ±0.5, ±1.5, ±2.5, ±3.5 go to even.
#[test]
fn f32_ties_to_even_times_two() {
    check(
        DType::F32,
        &[
            0x3E80_0000,
            0x3F40_0000,
            0x3FA0_0000,
            0x3FE0_0000,
            0xBE80_0000,
            0xBF40_0000,
            0xBFA0_0000,
            0xBFE0_0000,
        ],
        0x4000_0000,
        0,
        NE,
        &[0, 2, 2, 4, 0, -2, -2, -4],
    );
}

/// A multiplier just above 1 pushes FP16 ties above one half.
#[test]
fn f16_multiplier_just_above_one() {
    check(
        DType::F16,
        &[0x4100, 0x4480, 0xC100, 0x3E00],
        0x3F80_0800,
        0,
        NE,
        &[3, 5, -3, 2],
    );
}

/// The zero point is added before saturation, not after.
#[test]
fn f32_zero_point_before_saturation() {
    check(
        DType::F32,
        &[0x4348_0000, 0x4363_0000, 0xC248_0000],
        0x3F80_0000,
        -100,
        NE,
        &[100, 127, -128],
    );
}

/// NaNs of any sign and payload give the zero point; infinities saturate.
#[test]
fn f32_nan_and_infinity() {
    check(
        DType::F32,
        &[
            0x7FC0_0000,
            0xFFC0_0000,
            0x7F80_0001,
            0xFFFF_FFFF,
            0x7F80_0000,
            0xFF80_0000,
        ],
        0x4000_0000,
        5,
        NE,
        &[5, 5, 5, 5, 127, -128],
    );
}

/// Subnormal inputs times 2^127 come back into the integer range.
#[test]
fn f32_subnormal_inputs_times_2_pow_127() {
    check(
        DType::F32,
        &[0x0060_0000, 0x8040_0000, 0x0050_0000],
        0x7F00_0000,
        0,
        NE,
        &[2, -1, 1],
    );
}

/// The smallest multiplier: the product rounds to 0 or ±2^-149 (nearest-even, not
/// flushed); toward-positive then sees the sign and the nonzero fraction.
#[test]
fn f32_smallest_multiplier_toward_positive() {
    check(
        DType::F32,
        &[0x3F40_0000, 0x3F00_0000, 0x3FC0_0000, 0xBF40_0000],
        0x0000_0001,
        0,
        Rounding::TowardPositive,
        &[1, 0, 1, 0],
    );
}

/// FP16 subnormals times 2^24 are exact integers.
#[test]
fn f16_subnormals_times_2_pow_24() {
    check(
        DType::F16,
        &[0x0001, 0x0003, 0x8005, 0x007F],
        0x4B80_0000,
        0,
        NE,
        &[1, 3, -5, 127],
    );
}
