//! `a65::Level` and the `prepare_at` entries of Quant, QuantTess and CastTess: names parse
//! back, detection agrees with the CPU's own feature flags, and every level either gives
//! the independent oracles' bytes (the f64 Quant oracle of `simak-tests`, the plain-loop
//! layout and conversion oracles of `simak_tests::tiled`) with the level's kernels, or the
//! precise error (the CPU lacks it; the op has no kernel there).

use crate::tess_common::*;

use simak::a65::{self, Level, LevelError};
use simak::layout::Channels;
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::bytes::{Aligned, encode};
use simak_tests::oracle;
use simak_tests::rng::Rng;

#[test]
fn level_names_parse_back_and_unknown_names_list_every_level() {
    let names: Vec<&str> = Level::ALL.iter().map(|l| l.name()).collect();
    assert_eq!(names, simak_tests::cpu::NAMES);
    for level in Level::ALL {
        assert_eq!(level.name().parse::<Level>(), Ok(level));
        assert_eq!(level.to_string(), level.name());
    }
    for bad in ["avx2", "", "SCALAR", "x86_64-avx512 ", "exact-scalar"] {
        let e = bad.parse::<Level>().unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("unknown level {bad:?} (levels: ")),
            "{text}"
        );
        for name in &names {
            assert!(text.contains(name), "{text} lacks {name}");
        }
    }
}

/// What the CPU reports, asked directly (not through the ISA table).
fn cpu_has(level: Level) -> bool {
    simak_tests::cpu::has(level.name())
}

#[test]
fn detection_agrees_with_the_cpu_feature_flags() {
    let expected: Vec<Level> = Level::ALL.into_iter().filter(|&l| cpu_has(l)).collect();
    assert_eq!(Level::detected(), expected);
    for level in Level::ALL {
        assert_eq!(level.is_detected(), cpu_has(level), "{level}");
    }
}

/// Checks one `prepare_at` outcome: a level this CPU lacks is `NotDetected` (its message
/// names the level and its features); a level `op` has no kernel at is `NoKernel`;
/// otherwise the prepared plan.
fn outcome<P>(
    op: &str,
    level: Level,
    dtype: DType,
    has_kernel: bool,
    got: Result<P, LevelError>,
) -> Option<P> {
    if !cpu_has(level) {
        let e = got.err().expect("a level this CPU lacks is refused");
        assert_eq!(e, LevelError::NotDetected { level });
        let text = e.to_string();
        assert!(
            text.contains(&format!("this CPU lacks level {level}"))
                && text.contains(level.features()),
            "{text}"
        );
        return None;
    }
    if !has_kernel {
        let e = got.err().expect("no kernel at this level");
        assert!(
            matches!(e, LevelError::NoKernel { level: l, op: o, dtype: d } if l == level && o == op && d == dtype),
            "{op} {level}: {e:?}"
        );
        assert!(
            e.to_string()
                .starts_with(&format!("{op} has no kernel at level {level}"))
        );
        return None;
    }
    Some(got.unwrap_or_else(|e| panic!("{op} {level} {dtype}: {e}")))
}

const DTYPES: [DType; 3] = [DType::F32, DType::BF16, DType::F16];

/// The levels with Quant kernels for a non-power-of-two multiplier (0.3).
fn quant_has(level: Level, dtype: DType) -> bool {
    match level {
        Level::Avx512Vbmi | Level::NeonFp16 => false,
        Level::Sse41 => dtype != DType::F16,
        _ => true,
    }
}

#[test]
fn quant_at_every_level_gives_the_oracle_bytes() {
    let mut rng = Rng::new(0x1e7e_1000_0000_0001);
    let params = Params::new(0.3)
        .with_zero_point(3)
        .with_rounding(Rounding::NearestEven);
    for dtype in DTYPES {
        let n = 1000usize;
        let bits: Vec<u32> = (0..n).map(|_| random_bits(&mut rng, dtype)).collect();
        let expected: Vec<u8> = bits
            .iter()
            .map(|&b| {
                oracle::quant(
                    dtype,
                    b,
                    params.multiplier_bits,
                    params.zero_point,
                    params.rounding,
                ) as u8
            })
            .collect();
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous([n as u64], dtype),
            output: TensorSpec::contiguous([n as u64], DType::I8),
            params,
        })
        .unwrap();
        let input = Aligned::from_slice(&encode(dtype, &bits));
        for level in Level::ALL {
            let got = a65::quant::prepare_at(&plan, level);
            let Some(p) = outcome("quant", level, dtype, quant_has(level, dtype), got) else {
                continue;
            };
            let want = if level == Level::Scalar {
                "exact-scalar"
            } else {
                level.name()
            };
            assert_eq!(p.implementation(), want, "{dtype}");
            let what = format!("quant {level} {dtype}");
            check_dirty(&what, &expected, |out| {
                a65::quant::execute(&p, input.as_slice(), out)
                    .unwrap_or_else(|e| panic!("{what}: {e}"))
            });
        }
    }
}

/// `aarch64-neon-fp16` takes FP16 and BF16 input with a power-of-two multiplier, not FP32.
#[test]
fn quant_neon_fp16_level_takes_half_inputs_with_powers_of_two() {
    for dtype in DTYPES {
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous([64u64], dtype),
            output: TensorSpec::contiguous([64u64], DType::I8),
            params: Params::new(0.5),
        })
        .unwrap();
        let got = a65::quant::prepare_at(&plan, Level::NeonFp16);
        if let Some(p) = outcome("quant", Level::NeonFp16, dtype, dtype != DType::F32, got) {
            assert!(
                p.implementation().starts_with("aarch64-neon-"),
                "{}",
                p.implementation()
            );
        }
    }
}

/// A 37 × 70 × 3 HWC frame, tile (1, 16, 64, 3): partial tiles in H and W.
fn frame_case(dtype: DType, channels: Channels) -> Case {
    let shape = vec![37u64, 70, 3];
    let e = dtype.size() as u64;
    Case {
        dtype,
        strides: vec![70 * 3 * e, 3 * e, e],
        input_len: (37 * 70 * 3 * e) as usize,
        shape,
        axes: [None, Some(0), Some(1), Some(2)],
        tile: [1, 16, 64, 3],
        channels,
    }
}

#[test]
fn casttess_at_every_level_gives_the_oracle_bytes() {
    let mut rng = Rng::new(0x1e7e_1000_0000_0002);
    for dtype in DTYPES {
        for channels in [Channels::Compact, Channels::PadTo16] {
            let case = frame_case(dtype, channels);
            let input = fill_input(&mut rng, &case);
            let expected = expected_cast(&case, input.as_slice());
            let plan = cast_plan(&case);
            for level in Level::ALL {
                let has = !matches!(level, Level::Sse41 | Level::NeonFp16);
                let got = a65::casttess::prepare_at(&plan, level);
                let Some(p) = outcome("casttess", level, dtype, has, got) else {
                    continue;
                };
                assert_eq!(p.implementation(), level.name());
                let what = format!("casttess {level} {dtype} {channels:?}");
                check_dirty(&what, &expected, |out| {
                    a65::casttess::execute(&p, input.as_slice(), out)
                        .unwrap_or_else(|e| panic!("{what}: {e}"))
                });
            }
        }
    }
}

#[test]
fn quanttess_at_every_level_gives_the_oracle_bytes() {
    let mut rng = Rng::new(0x1e7e_1000_0000_0003);
    let params = Params::new(0.3)
        .with_zero_point(-5)
        .with_rounding(Rounding::TowardNegative);
    for dtype in DTYPES {
        for channels in [Channels::Compact, Channels::PadTo16] {
            let case = frame_case(dtype, channels);
            let input = fill_input(&mut rng, &case);
            let expected = oracle_tiled(&case.shape, case.axes, case.tile, case.channels, 1, |i| {
                let q = oracle::quant(
                    dtype,
                    read_raw(&case, input.as_slice(), i),
                    params.multiplier_bits,
                    params.zero_point,
                    params.rounding,
                );
                [q as u8, 0]
            });
            let plan = quant_plan(&case, params);
            for level in Level::ALL {
                let got = a65::quanttess::prepare_at(&plan, level);
                let Some(p) = outcome("quanttess", level, dtype, quant_has(level, dtype), got)
                else {
                    continue;
                };
                let want = if level == Level::Scalar {
                    "exact-scalar"
                } else {
                    level.name()
                };
                assert_eq!(p.implementation(), want);
                let what = format!("quanttess {level} {dtype} {channels:?}");
                check_dirty(&what, &expected, |out| {
                    a65::quanttess::execute(&p, input.as_slice(), out)
                        .unwrap_or_else(|e| panic!("{what}: {e}"))
                });
            }
        }
    }
}
