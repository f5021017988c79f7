//! Dequant (SPEC §12.2) against an exact rational reference (`simak_tests::dequant`): every INT8 and
//! every INT16 code × multipliers (subnormal, powers of two, 1/3, huge) × zero points at
//! the ends of their ranges; INT32 at ±2^31, ±2^24 ± 1 and random codes; FP32, FP16 and
//! BF16 outputs; at every level this CPU has. The reference rounds by exact comparison of
//! scaled integers (no floating-point arithmetic): step 2 rounds `q − zp` to binary32,
//! step 3 rounds `x / s` to binary32; FP16 by the same exact rounding to binary16; BF16 by
//! §4's integer rule.

use simak::a65::{self, Level};
use simak::ops::dequant::{Params, Request, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::dequant::{reference, reference_f16, reference_f32};
use simak_tests::rng::Rng;

/// Multipliers: subnormal, powers of two, 1/3, huge, and a few ordinary ones.
fn multipliers() -> Vec<u32> {
    vec![
        1,           // smallest subnormal
        0x0000_0003, // subnormal
        0x0040_0000, // 2^-127
        0x0080_0000, // smallest normal
        2f32.powi(-24).to_bits(),
        0.5f32.to_bits(),
        1f32.to_bits(),
        2f32.powi(12).to_bits(),
        (1f32 / 3f32).to_bits(),
        3f32.to_bits(),
        0x3e99_999a, // 0.3
        0x7f7f_ffff, // largest finite
        2f32.powi(100).to_bits(),
    ]
}

/// Runs Dequant over `codes` (little-endian `dtype` bytes) at `level` and returns the
/// output bits per element.
fn run(dtype: DType, codes: &[u8], params: Params, out: DType, level: Level) -> Option<Vec<u32>> {
    let n = (codes.len() / dtype.size()) as u64;
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([n], dtype),
        output: TensorSpec::contiguous([n], out),
        params,
    })
    .expect("admits");
    let prepared = a65::dequant::prepare_at(&plan, level).ok()?;
    let mut y = vec![0u8; n as usize * out.size()];
    a65::execute_threaded(&prepared, 2, codes, &mut y).expect("runs");
    Some(
        y.chunks_exact(out.size())
            .map(|b| {
                let mut w = [0u8; 4];
                w[..b.len()].copy_from_slice(b);
                u32::from_le_bytes(w)
            })
            .collect(),
    )
}

fn sweep(dtype: DType, codes: Vec<i64>, zps: &[i64], levels: &[Level]) -> usize {
    let bytes: Vec<u8> = codes
        .iter()
        .flat_map(|&q| (q as i32).to_le_bytes()[..dtype.size()].to_vec())
        .collect();
    let mut checked = 0;
    for &s in &multipliers() {
        for &zp in zps {
            let params = Params::from_bits(s).with_zero_point(zp as i32);
            for out in [DType::F32, DType::F16, DType::BF16] {
                let want: Vec<u32> = codes.iter().map(|&q| reference(q, zp, s, out)).collect();
                for &level in levels {
                    let Some(got) = run(dtype, &bytes, params, out, level) else {
                        continue;
                    };
                    for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g, w,
                            "{dtype} q {} zp {zp} s 0x{s:08x} {out} {level}",
                            codes[k]
                        );
                    }
                    checked += got.len();
                }
            }
        }
    }
    checked
}

#[test]
fn reference_agrees_with_known_values() {
    // (13 − 3) / 0.5 = 20; 1 / 3; 1 / 0.3 (0x3e99999a) is 3.3333333 rounded once.
    assert_eq!(reference_f32(13, 3, 0.5f32.to_bits()), 20f32.to_bits());
    assert_eq!(reference_f32(1, 0, 3f32.to_bits()), 0x3eaa_aaab);
    assert_eq!(reference_f32(-1, 0, 1), 0xff80_0000);
    assert_eq!(reference_f32(1, 0, 0x7f7f_ffff), 0x0020_0000);
    // 2^24 + 1 rounds to 2^24 in step 2.
    assert_eq!(
        reference_f32((1 << 24) + 1, 0, 1f32.to_bits()),
        16_777_216f32.to_bits()
    );
    assert_eq!(reference_f16(65520f32.to_bits()), 0x7c00);
    assert_eq!(reference_f16(1f32.to_bits()), 0x3c00);
    assert_eq!(reference_f16(2f32.powi(-25).to_bits()), 0);
    assert_eq!(reference_f16((3.0 * 2f32.powi(-26)).to_bits()), 1);
}

#[test]
fn every_int8_code() {
    let levels = Level::detected();
    let codes: Vec<i64> = (-128..=127).collect();
    let n = sweep(DType::I8, codes, &[-128, -1, 0, 127], &levels);
    assert!(n >= 256 * 13 * 4 * 3);
}

#[test]
fn every_int16_code() {
    // Every code at the automatic level and the scalar one (the table is built once per
    // plan, the same way at every level; the walk differs).
    // Sampled (every 61st code and both ends) outside the `test` step.
    let levels = [Level::Scalar, *Level::detected().last().expect("one")];
    let all: Vec<i64> = (-32768..=32767).collect();
    let codes = simak_tests::sweeps::pick(&all, 61);
    let len = codes.len();
    assert!(len == 65_536 || !simak_tests::sweeps::full());
    let n = sweep(DType::I16, codes, &[-32768, 0, 32767], &levels);
    assert!(n >= len * 13 * 3 * 3);
}

#[test]
fn int32_edges_and_random_codes() {
    let mut codes: Vec<i64> = vec![
        i64::from(i32::MIN),
        i64::from(i32::MAX),
        1 << 24,
        (1 << 24) + 1,
        (1 << 24) - 1,
        -(1 << 24),
        -(1 << 24) - 1,
        -(1 << 24) + 1,
        (1 << 25) + 3,
        0,
        1,
        -1,
    ];
    let mut rng = Rng::new(0x2512_0032);
    let random = if simak_tests::sweeps::full() {
        2000
    } else {
        200
    };
    for _ in 0..random {
        codes.push(i64::from(rng.next_u32() as i32 >> (rng.below(31) as u32)));
    }
    let zps = [i64::from(i32::MIN), -1, 0, i64::from(i32::MAX)];
    // The integer path (what runs when the FP environment is not the default, and what
    // the firmware computes) against the reference too.
    for &s in &multipliers() {
        for &zp in &zps {
            for out in [DType::F32, DType::F16, DType::BF16] {
                for &q in &codes {
                    assert_eq!(
                        simak::arith::dequant::dequantize(q, zp, s, out),
                        reference(q, zp, s, out),
                        "integer path q {q} zp {zp} s 0x{s:08x} {out}"
                    );
                }
            }
        }
    }
    let n = sweep(DType::I32, codes, &zps, &Level::detected());
    assert!(n > 0);
}

#[test]
fn int32_never_fails_for_the_fp_environment() {
    // The seam feeds a flush-to-zero, denormals-are-zero control word to the generic
    // check: Dequant is not an FP route for it (INT32 reads the register itself and falls
    // back to the integer path), so the call succeeds with the reference's bits.
    let codes: Vec<u8> = [i32::MIN, 7, -(1 << 24) - 1]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([3], DType::I32),
        output: TensorSpec::contiguous([3], DType::F32),
        params: Params::from_bits(3).with_zero_point(5),
    })
    .expect("admits");
    let prepared = a65::dequant::prepare(&plan);
    let mut y = [0u8; 12];
    a65::execute_with_fp_control(&prepared, &codes, &mut y, Some(0x9fc0)).expect("never fails");
    for (k, q) in [i32::MIN, 7, -(1 << 24) - 1].into_iter().enumerate() {
        let got = u32::from_le_bytes(y[k * 4..k * 4 + 4].try_into().expect("4"));
        assert_eq!(got, reference_f32(i64::from(q), 5, 3));
    }
}

#[test]
fn scalar_strided_and_empty_tensors() {
    // Rank 0: one element.
    let plan = check_inference(&Request {
        input: TensorSpec::<0>::contiguous([], DType::I16),
        output: TensorSpec::<0>::contiguous([], DType::BF16),
        params: Params::new(0.5).with_zero_point(-2),
    })
    .expect("admits");
    let mut y = [0u8; 2];
    a65::dequant::execute(&a65::dequant::prepare(&plan), &7i16.to_le_bytes(), &mut y)
        .expect("runs");
    assert_eq!(
        u32::from(u16::from_le_bytes(y)),
        reference(7, -2, 0.5f32.to_bits(), DType::BF16)
    );
    // A transposed INT8 [3, 5] read into a padded FP16 output; gap bytes untouched.
    let q: Vec<u8> = (0..15u8).map(|k| k.wrapping_mul(37)).collect();
    let plan = check_inference(&Request {
        input: TensorSpec::strided([3, 5], [1, 3], DType::I8),
        output: TensorSpec::strided([3, 5], [14, 2], DType::F16),
        params: Params::new(3.0).with_zero_point(1),
    })
    .expect("admits");
    let mut y = vec![0xeeu8; 3 * 14];
    a65::execute_threaded(&a65::dequant::prepare(&plan), 3, &q, &mut y).expect("runs");
    for i in 0..3 {
        for j in 0..5 {
            let code = i64::from(q[i + 3 * j] as i8);
            let got = u16::from_le_bytes([y[i * 14 + j * 2], y[i * 14 + j * 2 + 1]]);
            assert_eq!(
                u32::from(got),
                reference(code, 1, 3f32.to_bits(), DType::F16)
            );
        }
        assert_eq!(&y[i * 14 + 10..i * 14 + 14], &[0xee; 4]);
    }
    // Empty: nothing written, no storage needed.
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([4, 0], DType::I32),
        output: TensorSpec::contiguous([4, 0], DType::F32),
        params: Params::new(1.0),
    })
    .expect("admits");
    a65::dequant::execute(&a65::dequant::prepare(&plan), &[], &mut []).expect("no-op");
}
