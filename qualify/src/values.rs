//! Input values of the qualification workloads: raw element bits per value profile, from a
//! fixed seed (SplitMix64, `simak_tests::rng`), so every run of an ID times the same bytes.

use simak::DType;
use simak_tests::rng::Rng;

use super::catalogue::Profile;

/// Raw bits (zero-extended) of `x` in `dtype`, nearest-even for the 16-bit types.
pub fn bits_of(dtype: DType, x: f32) -> u32 {
    match dtype {
        DType::BF16 => u32::from(half::bf16::from_f32(x).to_bits()),
        DType::F16 => u32::from(half::f16::from_f32(x).to_bits()),
        _ => x.to_bits(),
    }
}

/// A nonzero subnormal of `dtype` with a random significand and sign.
fn subnormal(rng: &mut Rng, dtype: DType) -> u32 {
    let r = rng.next_u32();
    match dtype {
        DType::F32 => (r & 0x8000_0000) | ((r & 0x7f_ffff) | 1),
        DType::BF16 => ((r >> 16) & 0x8000) | ((r & 0x7f) | 1),
        _ => ((r >> 16) & 0x8000) | ((r & 0x3ff) | 1),
    }
}

/// One N(0, 100) sample (Box–Muller).
fn gaussian(rng: &mut Rng) -> f32 {
    let u = ((rng.next_u32() >> 8) as f64 / 16_777_216.0).max(1.0 / 16_777_216.0);
    let v = (rng.next_u32() >> 8) as f64 / 16_777_216.0;
    (100.0 * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
}

/// A special value: NaN (quiet or signalling, either sign), ±∞ or ±0.
fn special(rng: &mut Rng, dtype: DType) -> u32 {
    let f32s = [
        0x7fc0_0000u32,
        0xffc0_0001,
        0x7f80_0001,
        0x7f80_0000,
        0xff80_0000,
        0,
        0x8000_0000,
    ];
    let f16s = [0x7e00u32, 0xfe01, 0x7c01, 0x7c00, 0xfc00, 0, 0x8000];
    let bf16s = [0x7fc0u32, 0xffc1, 0x7f81, 0x7f80, 0xff80, 0, 0x8000];
    match dtype {
        DType::F32 => *rng.pick(&f32s),
        DType::F16 => *rng.pick(&f16s),
        _ => *rng.pick(&bf16s),
    }
}

/// An exact tie for the multiplier 1/2: `x · 0.5 = k + 0.5` (an odd integer x), also a
/// BF16 rounding tie in FP32 when its low half is 0x8000.
fn tie(rng: &mut Rng, dtype: DType) -> u32 {
    let k = rng.range_i64(-60, 60) as f32;
    bits_of(dtype, 2.0 * k + 1.0)
}

/// A normal value in [2^-14, 1) (normal in every dtype), either sign: with the
/// multiplier 2^-140 the product underflows.
fn underflowing(rng: &mut Rng, dtype: DType) -> u32 {
    let e = rng.range_i64(-14, -1) as i32;
    let m = 1.0 + (rng.next_u32() >> 9) as f32 / 8_388_608.0;
    let x = m * 2f32.powi(e);
    bits_of(dtype, if rng.chance(1, 2) { x } else { -x })
}

/// `n` raw input elements of `profile` in `dtype` from `seed`.
pub fn generate(profile: Profile, dtype: DType, n: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| match profile {
            Profile::Normal => {
                if i % 16 == 0 {
                    tie(&mut rng, dtype)
                } else {
                    bits_of(dtype, gaussian(&mut rng))
                }
            }
            Profile::Subnormal => subnormal(&mut rng, dtype),
            Profile::Special => match i % 4 {
                0 => special(&mut rng, dtype),
                1 => tie(&mut rng, dtype),
                _ => bits_of(dtype, gaussian(&mut rng)),
            },
            Profile::Underflow => underflowing(&mut rng, dtype),
            Profile::Mixed => match rng.below(5) {
                0 => special(&mut rng, dtype),
                1 => tie(&mut rng, dtype),
                2 => subnormal(&mut rng, dtype),
                3 => underflowing(&mut rng, dtype),
                _ => bits_of(dtype, gaussian(&mut rng)),
            },
            Profile::Pixels => {
                let p = rng.below(256) as f32 / 255.0;
                if i % 16 == 0 && dtype == DType::F32 {
                    // 1 + 2^-8: an exact FP32 → BF16 tie.
                    0x3f80_8000
                } else {
                    bits_of(dtype, p)
                }
            }
            // Uniform bits: the output-side ops take them as raw bytes.
            Profile::Codes | Profile::Frame => rng.next_u32(),
        })
        .collect()
}

/// A seed for an ID: FNV-1a of its bytes, so that each ID has its own values.
pub fn seed_of(id: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod test {
    use super::*;

    fn class(dtype: DType, bits: u32) -> (u32, u32) {
        match dtype {
            DType::F32 => ((bits >> 23) & 0xff, bits & 0x7f_ffff),
            DType::BF16 => ((bits >> 7) & 0xff, bits & 0x7f),
            _ => ((bits >> 10) & 0x1f, bits & 0x3ff),
        }
    }

    #[test]
    fn profiles_hold_their_classes() {
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            for b in generate(Profile::Subnormal, dtype, 1000, 1) {
                let (e, m) = class(dtype, b);
                assert!(e == 0 && m != 0, "{dtype} {b:#x}");
            }
            let max_exp = match dtype {
                DType::F16 => 0x1f,
                _ => 0xff,
            };
            let specials = generate(Profile::Special, dtype, 1000, 2)
                .into_iter()
                .step_by(4)
                .filter(|&b| {
                    let (e, m) = class(dtype, b);
                    e == max_exp || (e == 0 && m == 0)
                })
                .count();
            assert_eq!(specials, 250, "{dtype}");
            // Underflow: |x| < 1, and x · 2^-140 < 2^-140 underflows binary32's normals.
            for b in generate(Profile::Underflow, dtype, 1000, 3) {
                let x = simak_tests::oracle::decode(dtype, b);
                assert!(x.abs() < 1.0 && x != 0.0, "{dtype} {x}");
                assert!(
                    simak_tests::oracle::product(x, 1 << 9).abs() < f32::MIN_POSITIVE,
                    "{dtype} {x}"
                );
            }
        }
    }

    #[test]
    fn normal_profile_has_ties_every_16th() {
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            for b in generate(Profile::Normal, dtype, 160, 4)
                .into_iter()
                .step_by(16)
            {
                let p = simak_tests::oracle::decode(dtype, b) * 0.5;
                assert_eq!(p - p.floor(), 0.5, "{dtype}");
            }
        }
    }
}
