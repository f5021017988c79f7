//! Every A65 route against the exact scalar path (itself checked against the f64 oracle by
//! `simak-tests`): all 16-bit patterns, FP32 classes and random patterns, every length
//! 0..=70 and around each vector width with misaligned starts, the FP-environment seam.

use simak::a65::execute_with_fp_control;
use simak::a65::quant::{execute, prepare, prepare_at};
use simak::a65::{ExecuteError, Level};
use simak::ops::quant::{Params, Plan, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};

fn plan(dtype: DType, n: u64, m: u32, zp: i32, rounding: Rounding) -> Plan {
    check_inference(&Request {
        input: TensorSpec::contiguous([n], dtype),
        output: TensorSpec::contiguous([n], DType::I8),
        params: Params::from_bits(m)
            .with_zero_point(zp)
            .with_rounding(rounding),
    })
    .unwrap()
}

fn vector_routes() -> Vec<Level> {
    Level::ALL
        .into_iter()
        .rev()
        .filter(|&r| r != Level::Scalar)
        .collect()
}

/// Runs `bytes` (little-endian elements of `dtype`) through the exact route and `route`.
fn compare(route: Level, dtype: DType, bytes: &[u8], m: u32, zp: i32, rounding: Rounding) -> usize {
    let n = (bytes.len() / dtype.size()) as u64;
    let plan = plan(dtype, n, m, zp, rounding);
    let exact = prepare_at(&plan, Level::Scalar).unwrap();
    let Ok(vector) = prepare_at(&plan, route) else {
        return 0;
    };
    assert_eq!(vector.level(), route);
    let mut want = vec![0u8; n as usize];
    let mut got = vec![0x5au8; n as usize];
    execute(&exact, bytes, &mut want).unwrap();
    execute(&vector, bytes, &mut got).unwrap();
    if want != got {
        let i = want.iter().zip(&got).position(|(a, b)| a != b).unwrap();
        let e = dtype.size();
        panic!(
            "{route:?} {dtype} m=0x{m:08x} zp={zp} {rounding}: element {i} bits {:02x?} exact {} got {}",
            &bytes[i * e..(i + 1) * e],
            want[i] as i8,
            got[i] as i8
        );
    }
    n as usize
}

fn multipliers() -> Vec<u32> {
    let mut ms = vec![
        0x3f80_0000,
        0x3e99_999a,
        0x0000_0001,
        0x0000_0003,
        0x007f_ffff,
        0x3f80_0800,
    ];
    // Powers of two 2^-149 ..= 2^127, every eighth exponent plus both ends.
    ms.extend((1..=254u32).step_by(8).map(|e| e << 23));
    ms.push(254 << 23);
    let mut x = 0x1234_5678u32;
    for _ in 0..6 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        ms.push((x & 0x7f_ffff) | ((100 + x % 60) << 23));
    }
    ms
}

#[test]
fn all_16_bit_patterns_every_route() {
    let patterns: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
    let mut checked = 0usize;
    for route in vector_routes() {
        for dtype in [DType::BF16, DType::F16] {
            for &m in &multipliers() {
                for rounding in Rounding::ALL {
                    for zp in [-128, 0, 127] {
                        checked += compare(route, dtype, &patterns, m, zp, rounding);
                    }
                }
            }
        }
    }
    println!("16-bit route comparisons: {checked} elements");
    #[cfg(target_arch = "x86_64")]
    assert!(checked > 0, "no vector route available on this CPU");
}

#[test]
fn fp32_classes_and_random_patterns_every_route() {
    let mut bits: Vec<u32> = Vec::new();
    for exp in 0..=255u32 {
        for mant in [
            0, 1, 2, 0x3f_ffff, 0x40_0000, 0x40_0001, 0x7f_fffe, 0x7f_ffff,
        ] {
            for sign in [0, 1u32 << 31] {
                bits.push(sign | exp << 23 | mant);
            }
        }
    }
    let mut x = 0x9e37_79b9u64;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bits.push(x as u32);
    }
    let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let mut checked = 0usize;
    for route in vector_routes() {
        for &m in &multipliers() {
            for rounding in Rounding::ALL {
                checked += compare(route, DType::F32, &bytes, m, 3, rounding);
            }
        }
    }
    println!("fp32 route comparisons: {checked} elements");
}

#[test]
fn every_length_and_misaligned_start() {
    let mut lengths: Vec<usize> = (0..=70).collect();
    for w in [16usize, 32, 64, 128, 256] {
        lengths.extend([w - 1, w, w + 1, 2 * w - 1, 2 * w + 1, 3 * w + 7]);
    }
    for route in vector_routes() {
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            let e = dtype.size();
            for &n in &lengths {
                // Start at an element-aligned but vector-misaligned offset.
                let mut storage = vec![0u8; (n + 3) * e];
                for (i, b) in storage.iter_mut().enumerate() {
                    *b = (i as u8).wrapping_mul(37) ^ 0x41;
                }
                let bytes = &storage[e..e + n * e];
                compare(route, dtype, bytes, 0x3e99_999a, -5, Rounding::NearestEven);
            }
        }
    }
}

#[test]
fn strided_panels_match_the_exact_path() {
    // [40, 9] FP32 input with row padding, transposed output: inner runs are strided.
    let (rows, cols) = (40u64, 9u64);
    let request = Request {
        input: TensorSpec::strided([rows, cols], [4 * 12, 4], DType::F32),
        output: TensorSpec::strided([rows, cols], [1, rows], DType::I8),
        params: Params::new(0.75).with_zero_point(2),
    };
    let plan = check_inference(&request).unwrap();
    let input: Vec<u8> = (0..rows * 12)
        .flat_map(|i| ((i as f32 - 200.0) * 1.37).to_le_bytes())
        .collect();
    let exact = prepare_at(&plan, Level::Scalar).unwrap();
    let mut want = vec![0xa5u8; (rows * cols + 5) as usize];
    execute(&exact, &input, &mut want).unwrap();
    for route in vector_routes() {
        let Ok(p) = prepare_at(&plan, route) else {
            continue;
        };
        assert!(
            p.implementation().ends_with("+panels"),
            "{}",
            p.implementation()
        );
        let mut got = vec![0xa5u8; want.len()];
        execute(&p, &input, &mut got).unwrap();
        assert_eq!(want, got, "{route:?}");
    }
}

#[test]
fn non_default_fp_environment_is_refused_before_writing() {
    let plan = plan(DType::F32, 64, 0x3f80_0000, 0, Rounding::NearestEven);
    let p = prepare(&plan);
    if p.level() == Level::Scalar {
        return;
    }
    let input = vec![0u8; 256];
    #[cfg(target_arch = "x86_64")]
    let bad = [
        0x1f80 | 0x8000,  // FTZ
        0x1f80 | 0x0040,  // DAZ
        0x1f80 | 0x2000,  // round down
        0x1f80 | 0x6000,  // round toward zero
        0x1f80 & !0x0080, // invalid-operation trap unmasked
    ];
    #[cfg(target_arch = "aarch64")]
    // (FPCR.FZ16 is not refused by this FP32 route: see `fp_routes`.)
    let bad = [1u64 << 24, 1 << 22, 3 << 22, 1 << 8, 1];
    for control in bad {
        let mut out = vec![0x77u8; 64];
        assert_eq!(
            execute_with_fp_control(&p, &input, &mut out, Some(control)),
            Err(ExecuteError::FpEnvironment { control })
        );
        assert!(
            out.iter().all(|&b| b == 0x77),
            "written despite the refusal"
        );
    }
    // The exact route is exempt, and so is an empty call.
    let exact = prepare_at(&plan, Level::Scalar).unwrap();
    let mut out = vec![0x77u8; 64];
    execute_with_fp_control(&exact, &input, &mut out, Some(bad[0])).unwrap();
    let empty = prepare(
        &check_inference(&Request {
            input: TensorSpec::contiguous([0u64, 5], DType::F32),
            output: TensorSpec::contiguous([0u64, 5], DType::I8),
            params: Params::new(1.0),
        })
        .unwrap(),
    );
    execute_with_fp_control(&empty, &[], &mut [], Some(bad[0])).unwrap();
}

#[test]
fn split_pieces_cover_the_call_once() {
    for (rows, cols, parts) in [(1u64, 1000u64, 2usize), (7, 33, 3), (3, 5, 8), (64, 64, 2)] {
        let request = Request {
            input: TensorSpec::contiguous([rows, cols], DType::BF16),
            output: TensorSpec::strided([rows, cols], [cols + 3, 1], DType::I8),
            params: Params::new(0.5).with_zero_point(3),
        };
        let plan = check_inference(&request).unwrap();
        let input: Vec<u8> = (0..rows * cols)
            .flat_map(|i| ((i as u16).wrapping_mul(2654) >> 1).to_le_bytes())
            .collect();
        let p = prepare(&plan);
        let mut want = vec![0xeeu8; plan.output().span() as usize + 4];
        execute(&p, &input, &mut want).unwrap();
        let mut got = vec![0xeeu8; want.len()];
        let pieces = p.split(parts, &input, &mut got).unwrap();
        assert!(!pieces.is_empty() && pieces.len() <= parts);
        std::thread::scope(|s| {
            for piece in pieces {
                s.spawn(move || {
                    let mut piece = piece;
                    piece.run().unwrap()
                });
            }
        });
        assert_eq!(want, got, "{rows}x{cols} in {parts}");
    }
}

#[test]
fn long_runs_with_streaming_stores_match_the_exact_path() {
    // Above the 4 Mi-element streaming threshold, with an output that starts off any
    // 64-byte boundary, and a tail that is not a whole vector block.
    let n = (4 << 20) + 77;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let input: Vec<u8> = (0..n)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly values near the INT8 range, some raw bit patterns.
            let v = if x.is_multiple_of(5) {
                x as u32
            } else {
                ((x as i32 >> 20) as f32 * 0.37).to_bits()
            };
            v.to_le_bytes()
        })
        .collect();
    let plan = plan(DType::F32, n as u64, 0x3f40_0000, -7, Rounding::NearestEven);
    let mut want = vec![0u8; n + 3];
    execute(
        &prepare_at(&plan, Level::Scalar).unwrap(),
        &input,
        &mut want[3..],
    )
    .unwrap();
    for route in vector_routes() {
        let Ok(p) = prepare_at(&plan, route) else {
            continue;
        };
        let mut got = vec![0u8; n + 3];
        execute(&p, &input, &mut got[3..]).unwrap();
        assert!(want == got, "{route:?} differs on a long run");
    }
}

/// The native FP16 route's name (`implementation()`).
const NEON_FP16: &str = "aarch64-neon-fp16";
/// The BF16-through-FP16 route's name (`implementation()`).
const NEON_BF16_FP16: &str = "aarch64-neon-bf16-via-fp16";

#[test]
fn half_routes_follow_the_source_predicates() {
    // A route is named by its implementation: both half-precision routes are at the
    // `aarch64-neon-fp16` level, FP16 input taking one and BF16 input the other.
    let eligible = |dtype: DType, m: u32, rounding: Rounding, route: &str| {
        prepare_at(&plan(dtype, 64, m, 0, rounding), Level::NeonFp16)
            .is_ok_and(|p| p.implementation() == route)
    };
    let fp16 = eligible(DType::F16, 0x3f80_0000, Rounding::NearestEven, NEON_FP16);
    if !fp16 {
        // Not AArch64 with asimdhp: the half routes never exist.
        assert!(!eligible(
            DType::BF16,
            0x3f80_0000,
            Rounding::NearestEven,
            NEON_BF16_FP16
        ));
        return;
    }
    let pow2 = |k: i32| ((k + 127) as u32) << 23;
    // Native FP16: 2^k with −24 ≤ k ≤ 15; negative k only for nearest-even / toward-zero.
    assert!(eligible(
        DType::F16,
        pow2(15),
        Rounding::TowardPositive,
        NEON_FP16
    ));
    assert!(!eligible(
        DType::F16,
        pow2(16),
        Rounding::NearestEven,
        NEON_FP16
    ));
    assert!(eligible(
        DType::F16,
        pow2(-24),
        Rounding::TowardZero,
        NEON_FP16
    ));
    assert!(!eligible(
        DType::F16,
        pow2(-25),
        Rounding::TowardZero,
        NEON_FP16
    ));
    assert!(!eligible(
        DType::F16,
        pow2(-1),
        Rounding::TowardNegative,
        NEON_FP16
    ));
    assert!(!eligible(
        DType::F16,
        0x3e99_999a,
        Rounding::NearestEven,
        NEON_FP16
    ));
    assert!(!eligible(
        DType::BF16,
        pow2(0),
        Rounding::NearestEven,
        NEON_FP16
    ));
    // BF16 through FP16: 2^k with −110 ≤ k ≤ 110, any mode.
    for k in [-110, 0, 110] {
        assert!(eligible(
            DType::BF16,
            pow2(k),
            Rounding::TowardNegative,
            NEON_BF16_FP16
        ));
    }
    assert!(!eligible(
        DType::BF16,
        pow2(111),
        Rounding::NearestEven,
        NEON_BF16_FP16
    ));
    assert!(!eligible(
        DType::BF16,
        pow2(-111),
        Rounding::NearestEven,
        NEON_BF16_FP16
    ));
    assert!(!eligible(
        DType::BF16,
        0x3fc0_0000,
        Rounding::NearestEven,
        NEON_BF16_FP16
    ));
    // Automatic selection prefers them when eligible (the exact path only, when built with
    // the `scalar-only` feature).
    let auto = |dtype: DType, m: u32| {
        prepare(&plan(dtype, 64, m, 0, Rounding::NearestEven)).implementation()
    };
    if simak::a65::SCALAR_ONLY {
        assert_eq!(auto(DType::F16, pow2(-3)), "exact-scalar");
        return;
    }
    assert_eq!(auto(DType::F16, pow2(-3)), NEON_FP16);
    assert_eq!(auto(DType::BF16, pow2(7)), NEON_BF16_FP16);
    assert_eq!(auto(DType::BF16, 0x3fc0_0000), "aarch64-neon");
}

#[test]
fn long_strided_runs_match_the_exact_path() {
    // Runs of ≥ 64 elements that are strided on the input, the output or both: panels inside
    // each run (gather, scatter, or both).
    let cases: [([u64; 2], [u64; 2], [u64; 2]); 3] = [
        // CHW view of HWC data: input strided along the run, output contiguous.
        ([3, 200], [4, 12], [200, 1]),
        // Contiguous input, output written with a stride along the run.
        ([3, 200], [800, 4], [1, 3]),
        // Both strided along the run.
        ([2, 150], [4, 8], [1, 2]),
    ];
    for (extents, in_strides, out_strides) in cases {
        let plan = check_inference(&Request {
            input: TensorSpec::strided(extents, in_strides, DType::F32),
            output: TensorSpec::strided(extents, out_strides, DType::I8),
            params: Params::new(0.37).with_zero_point(-4),
        })
        .unwrap();
        let input: Vec<u8> = (0..plan.input().span() / 4)
            .flat_map(|i| ((i as f32 - 300.0) * 1.7).to_le_bytes())
            .collect();
        let mut want = vec![0xa5u8; plan.output().span() as usize + 7];
        execute(
            &prepare_at(&plan, Level::Scalar).unwrap(),
            &input,
            &mut want,
        )
        .unwrap();
        for route in vector_routes() {
            let Ok(p) = prepare_at(&plan, route) else {
                continue;
            };
            let mut got = vec![0xa5u8; want.len()];
            execute(&p, &input, &mut got).unwrap();
            assert_eq!(
                want, got,
                "{route:?} {extents:?} {in_strides:?} {out_strides:?}"
            );
        }
    }
}

#[test]
fn short_runs_strided_on_both_ports_match_the_exact_path() {
    // Runs of 40 elements, strided on the input (rows of 12) and on the output (every other
    // byte): they share panels across runs, each element with its own output offset. Gap
    // bytes of the output keep their guard value.
    let plan = check_inference(&Request {
        input: TensorSpec::strided([40, 9], [48, 4], DType::BF16),
        output: TensorSpec::strided([40, 9], [2, 80], DType::I8),
        params: Params::new(3.0).with_zero_point(1),
    })
    .unwrap();
    let input: Vec<u8> = (0..plan.input().span() / 2)
        .flat_map(|i| (0x3f00u16 + (i as u16 % 700)).to_le_bytes())
        .collect();
    let mut want = vec![0xa5u8; plan.output().span() as usize + 3];
    execute(
        &prepare_at(&plan, Level::Scalar).unwrap(),
        &input,
        &mut want,
    )
    .unwrap();
    assert!(
        want.iter()
            .skip(1)
            .step_by(2)
            .take(40 * 9 - 1)
            .all(|&b| b == 0xa5)
    );
    for route in vector_routes() {
        let Ok(p) = prepare_at(&plan, route) else {
            continue;
        };
        let mut got = vec![0xa5u8; want.len()];
        execute(&p, &input, &mut got).unwrap();
        assert_eq!(want, got, "{route:?}");
    }
}
