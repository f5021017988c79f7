//! FP-environment checks per route (issue 23 scope 3): each route rejects exactly the FP
//! control bits of its row in `docs/contract.md` §10 (the table below is written from the
//! contract, not read from the code), through the FP-control seam
//! (`execute_with_fp_control`), for Quant and QuantTess; and on AArch64 the one relaxed bit
//! (FPCR.FZ16 for the FP32-arithmetic `aarch64-neon` route) is shown harmless by running
//! that route with the bit really set in FPCR (under qemu in the `cross` step) and getting
//! the exact path's bytes, while the half routes refuse it.

use simak::a65::{self, ExecuteError, Level, execute_with_fp_control};
use simak::ops::quant::{Params, Plan, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};

fn plan(dtype: DType, n: u64, params: Params) -> Plan {
    check_inference(&Request {
        input: TensorSpec::contiguous([n], dtype),
        output: TensorSpec::contiguous([n], DType::I8),
        params,
    })
    .unwrap()
}

/// The control bits of the rule, one value each (set, or cleared for a default-set bit),
/// with whether the FP32-arithmetic routes may run with it; the FP16-arithmetic routes
/// may run with none. Written from `docs/contract.md` §10.
#[cfg(target_arch = "x86_64")]
fn bits() -> Vec<(&'static str, u64, bool)> {
    let d = 0x1f80u64;
    let mut v = vec![
        ("DAZ", d | 0x40, false),
        ("RC down", d | 0x2000, false),
        ("RC up", d | 0x4000, false),
        ("RC zero", d | 0x6000, false),
        ("FTZ", d | 0x8000, false),
    ];
    for (k, name) in ["IM", "DM", "ZM", "OM", "UM", "PM"].into_iter().enumerate() {
        v.push((name, d & !(0x80 << k), false));
    }
    // Status flags are not part of the rule.
    v.push(("status flags", d | 0x3f, true));
    v
}

#[cfg(target_arch = "aarch64")]
fn bits() -> Vec<(&'static str, u64, bool)> {
    vec![
        ("FIZ", 1, false),
        ("AH", 2, false),
        ("IOE", 1 << 8, false),
        ("DZE", 1 << 9, false),
        ("OFE", 1 << 10, false),
        ("UFE", 1 << 11, false),
        ("IXE", 1 << 12, false),
        ("IDE", 1 << 15, false),
        ("FZ16", 1 << 19, true),
        ("RMode up", 1 << 22, false),
        ("RMode down", 2 << 22, false),
        ("RMode zero", 3 << 22, false),
        ("FZ", 1 << 24, false),
    ]
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn bits() -> Vec<(&'static str, u64, bool)> {
    Vec::new()
}

/// Whether `implementation` names a route with FP16 arithmetic (the AArch64 half routes).
fn half_route(implementation: &str) -> bool {
    implementation.starts_with("aarch64-neon-fp16") || implementation.contains("bf16-via-fp16")
}

#[test]
fn each_quant_route_rejects_exactly_its_bits() {
    let mut routes_seen = 0;
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        // 0.5: every route, the half routes included; 0.3: the FP32-arithmetic routes.
        for params in [
            Params::new(0.5).with_rounding(Rounding::NearestEven),
            Params::new(0.3),
        ] {
            let plan = plan(dtype, 40, params);
            let input: Vec<u8> = (0..40 * dtype.size()).map(|i| (i * 37) as u8).collect();
            let mut want = vec![0u8; 40];
            a65::quant::execute(&a65::quant::prepare_exact(&plan), &input, &mut want).unwrap();
            for level in Level::ALL {
                let Ok(p) = a65::quant::prepare_at(&plan, level) else {
                    continue;
                };
                routes_seen += 1;
                let name = p.implementation();
                for (bit, control, fp32_ok) in bits() {
                    let mut out = vec![0x77u8; 40];
                    let got = execute_with_fp_control(&p, &input, &mut out, Some(control));
                    let runs = level == Level::Scalar || (fp32_ok && !half_route(name));
                    if runs {
                        assert_eq!(got, Ok(()), "{name} {dtype} {bit}");
                        assert_eq!(out, want, "{name} {dtype} {bit}");
                    } else {
                        assert_eq!(
                            got,
                            Err(ExecuteError::FpEnvironment { control }),
                            "{name} {dtype} {bit}"
                        );
                        assert!(out.iter().all(|&b| b == 0x77), "{name} {bit}: written");
                    }
                }
            }
        }
    }
    assert!(routes_seen > 0);
}

#[test]
fn quanttess_rejects_the_bits_of_its_route() {
    use simak::layout::{Channels, MlaTiled};
    use simak::ops::quanttess;
    let shape = [4u64, 8, 3];
    let plan = quanttess::check_inference_dyn(&quanttess::DynRequest {
        input: simak::DynSpec::strided(&shape, &[96, 12, 4], DType::F32),
        output: simak::ops::casttess::TiledSpec {
            extents: &shape,
            dtype: DType::I8,
            layout: MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 4, 8, 3],
                Channels::Compact,
            ),
        },
        params: Params::new(0.3),
    })
    .unwrap();
    let input: Vec<u8> = (0..96 * 4).map(|i| (i * 13) as u8).collect();
    let cap = plan.output().capacity() as usize;
    let mut want = vec![0u8; cap];
    a65::quanttess::execute(&a65::quanttess::prepare_exact(&plan), &input, &mut want).unwrap();
    for level in Level::ALL {
        let Ok(p) = a65::quanttess::prepare_at(&plan, level) else {
            continue;
        };
        for (bit, control, fp32_ok) in bits() {
            let mut out = vec![0u8; cap];
            let got = execute_with_fp_control(&p, &input, &mut out, Some(control));
            if level == Level::Scalar || fp32_ok {
                assert_eq!(got, Ok(()), "{level} {bit}");
                assert_eq!(out, want, "{level} {bit}");
            } else {
                assert_eq!(
                    got,
                    Err(ExecuteError::FpEnvironment { control }),
                    "{level} {bit}"
                );
            }
        }
    }
}

/// Runs `f` with FPCR.FZ16 set on this thread, restoring FPCR afterwards.
#[cfg(target_arch = "aarch64")]
fn with_fz16<R>(f: impl FnOnce() -> R) -> R {
    let old: u64;
    // SAFETY: `mrs` reads this thread's FPCR into a register; no memory is touched.
    unsafe { core::arch::asm!("mrs {v}, fpcr", v = out(reg) old, options(nomem, nostack)) };
    // SAFETY: `msr` sets this thread's FPCR (FZ16 added); restored below before returning.
    unsafe {
        core::arch::asm!("msr fpcr, {v}", v = in(reg) old | (1 << 19), options(nomem, nostack))
    };
    let r = f();
    // SAFETY: restores the value read above.
    unsafe { core::arch::asm!("msr fpcr, {v}", v = in(reg) old, options(nomem, nostack)) };
    r
}

/// The proof of the one relaxed bit: the `aarch64-neon` route, run with FPCR.FZ16 really
/// set, gives the exact path's bytes for every FP16 and BF16 pattern and FP32 classes,
/// under several multipliers (products in the FP16 subnormal range included); the half
/// routes refuse the same register.
#[cfg(target_arch = "aarch64")]
#[test]
fn neon_route_with_fz16_set_gives_the_exact_bytes() {
    let multipliers = [1.0f32, 0.5, 0.3, 2f32.powi(-20), 2f32.powi(-24), 64.0];
    for dtype in [DType::F16, DType::BF16, DType::F32] {
        let n = 65536usize;
        let input: Vec<u8> = match dtype {
            DType::F32 => (0..n as u32)
                .flat_map(|k| (k.wrapping_mul(0x9e37_79b9) ^ (k << 16)).to_le_bytes())
                .collect(),
            _ => (0..n as u32)
                .flat_map(|k| (k as u16).to_le_bytes())
                .collect(),
        };
        for m in multipliers {
            for rounding in [Rounding::NearestEven, Rounding::TowardNegative] {
                let plan = plan(dtype, n as u64, Params::new(m).with_rounding(rounding));
                let mut want = vec![0u8; n];
                a65::quant::execute(&a65::quant::prepare_exact(&plan), &input, &mut want).unwrap();
                let neon = a65::quant::prepare_at(&plan, Level::Neon).unwrap();
                let mut got = vec![0u8; n];
                with_fz16(|| a65::quant::execute(&neon, &input, &mut got)).unwrap();
                assert!(
                    got == want,
                    "{dtype} m={m} {rounding:?}: bytes differ under FZ16"
                );
                if let Ok(half) = a65::quant::prepare_at(&plan, Level::NeonFp16) {
                    let mut out = vec![0u8; n];
                    let r = with_fz16(|| a65::quant::execute(&half, &input, &mut out));
                    assert!(
                        matches!(r, Err(ExecuteError::FpEnvironment { .. })),
                        "{}: {r:?}",
                        half.implementation()
                    );
                }
            }
        }
    }
}
