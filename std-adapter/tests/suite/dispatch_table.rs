//! The A65 document's dispatch table (issue 23 scope 2), on AArch64 with FEAT_FP16 (qemu
//! `-cpu max` in the `cross` step): the half-precision routes take FP16 and BF16 input
//! only for a coalesced span `n ≥ 8` and a power-of-two multiplier 2^k within their
//! bounds (FP16: −24 ≤ k ≤ 15, and k ≥ 0 or nearest-even / toward-zero; BF16:
//! −110 ≤ k ≤ 110); shorter spans and other multipliers take the FP32 route
//! (`aarch64-neon`); strided short-span workloads run panels with the FP32 route, never a
//! half route. Every case also gives the exact path's bytes. The expected names are
//! written from the document's table, not read from the code.
#![cfg(target_arch = "aarch64")]

use simak::a65::{self, Level, LevelError};
use simak::ops::quant::{Params, Plan, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};

fn has_fp16() -> bool {
    Level::NeonFp16.is_detected()
}

/// Every 16-bit pattern from `seed` on, `n` of them, little-endian.
fn patterns(n: usize, seed: u16) -> Vec<u8> {
    (0..n)
        .flat_map(|k| {
            seed.wrapping_add((k as u16).wrapping_mul(2617))
                .to_le_bytes()
        })
        .collect()
}

fn plan(input: TensorSpec<1>, n: u64, m: f32, rounding: Rounding) -> Plan {
    check_inference(&Request {
        input,
        output: TensorSpec::contiguous([n], DType::I8),
        params: Params::new(m).with_zero_point(-3).with_rounding(rounding),
    })
    .unwrap()
}

/// Runs `plan` automatically; checks the route name and the exact path's bytes.
fn check(plan: &Plan, input: &[u8], n: usize, want_route: &str, what: &str) {
    let p = a65::quant::prepare(plan);
    assert_eq!(p.implementation(), want_route, "{what}");
    let mut want = vec![0u8; n];
    a65::quant::execute(&a65::quant::prepare_exact(plan), input, &mut want).unwrap();
    let mut got = vec![0xa5u8; n];
    a65::quant::execute(&p, input, &mut got).unwrap();
    assert_eq!(got, want, "{what}");
}

#[test]
fn half_routes_start_at_eight_elements() {
    if !has_fp16() {
        return;
    }
    for (dtype, half) in [
        (DType::F16, "aarch64-neon-fp16"),
        (DType::BF16, "aarch64-neon-bf16-via-fp16"),
    ] {
        for n in [1usize, 7, 8, 15, 16, 17, 300] {
            let input = patterns(n, 0x1234);
            let p = plan(
                TensorSpec::contiguous([n as u64], dtype),
                n as u64,
                0.5,
                Rounding::NearestEven,
            );
            let want = if n >= 8 { half } else { "aarch64-neon" };
            check(&p, &input, n, want, &format!("{dtype} n={n}"));
            // Forcing the half level below 8 elements is refused: no kernel for the plan.
            let forced = a65::quant::prepare_at(&p, Level::NeonFp16);
            if n < 8 {
                assert!(
                    matches!(forced, Err(LevelError::NoKernel { .. })),
                    "{dtype} n={n}"
                );
            } else {
                assert_eq!(forced.unwrap().implementation(), half);
            }
        }
    }
}

#[test]
fn half_routes_take_k_within_its_bounds() {
    if !has_fp16() {
        return;
    }
    let n = 64usize;
    let cases = [
        // (dtype, k, rounding, half route expected)
        (DType::F16, -24, Rounding::NearestEven, true),
        (DType::F16, -24, Rounding::TowardZero, true),
        (DType::F16, -25, Rounding::NearestEven, false),
        (DType::F16, 15, Rounding::NearestEven, true),
        (DType::F16, 16, Rounding::NearestEven, false),
        (DType::F16, -1, Rounding::TowardPositive, false),
        (DType::F16, -1, Rounding::TowardNegative, false),
        (DType::F16, 0, Rounding::TowardPositive, true),
        (DType::F16, 15, Rounding::TowardNegative, true),
        (DType::BF16, -110, Rounding::NearestEven, true),
        (DType::BF16, -111, Rounding::NearestEven, false),
        (DType::BF16, 110, Rounding::TowardPositive, true),
        (DType::BF16, 111, Rounding::NearestEven, false),
    ];
    for (dtype, k, rounding, half) in cases {
        let input = patterns(n, 0x0101);
        let p = plan(
            TensorSpec::contiguous([n as u64], dtype),
            n as u64,
            2f32.powi(k),
            rounding,
        );
        let want = match (half, dtype) {
            (false, _) => "aarch64-neon",
            (true, DType::F16) => "aarch64-neon-fp16",
            (true, _) => "aarch64-neon-bf16-via-fp16",
        };
        check(&p, &input, n, want, &format!("{dtype} k={k} {rounding:?}"));
    }
}

#[test]
fn strided_short_spans_run_fp32_panels_never_a_half_route() {
    if !has_fp16() {
        return;
    }
    for dtype in [DType::F16, DType::BF16] {
        // 200 elements, input stride 3 elements: panels (workload ≥ 128), and 40
        // elements (a small strided workload: panels too).
        for n in [200usize, 40] {
            let input = patterns(3 * n, 0x3c00);
            let p = plan(
                TensorSpec::strided([n as u64], [6], dtype),
                n as u64,
                0.5,
                Rounding::NearestEven,
            );
            check(
                &p,
                &input,
                n,
                "aarch64-neon+panels",
                &format!("{dtype} n={n}"),
            );
            assert!(matches!(
                a65::quant::prepare_at(&p, Level::NeonFp16),
                Err(LevelError::NoKernel { .. })
            ));
        }
    }
}
