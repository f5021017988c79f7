//! The `scalar-only` feature: with it, automatic selection picks the exact / scalar paths
//! for Quant, QuantTess and CastTess and `implementation()` says so; without it, the
//! fastest route this CPU has. Either way `prepare_at` still reaches every level.

use simak::a65::{self, Level};
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::TiledTensorSpec;
use simak::ops::quant::{Params, Request, check_inference};
use simak::{DType, TensorSpec};

fn quant_plan(dtype: DType) -> simak::ops::quant::Plan {
    check_inference(&Request {
        input: TensorSpec::contiguous([4096], dtype),
        output: TensorSpec::contiguous([4096], DType::I8),
        params: Params::new(0.25),
    })
    .unwrap()
}

/// The fastest level this CPU has for `plan` (the last of [`Level::ALL`] with a kernel).
fn fastest(plan: &simak::ops::quant::Plan) -> Level {
    Level::ALL
        .into_iter()
        .rev()
        .find(|&r| a65::quant::prepare_at(plan, r).is_ok())
        .unwrap()
}

#[test]
fn the_constant_follows_the_feature() {
    // The automatic-selection tables themselves are private: `arch::test` checks them.
    assert_eq!(a65::SCALAR_ONLY, cfg!(feature = "scalar-only"));
}

#[test]
fn quant_selection_follows_the_feature() {
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let plan = quant_plan(dtype);
        let prepared = a65::quant::prepare(&plan);
        if a65::SCALAR_ONLY {
            assert_eq!(prepared.level(), Level::Scalar, "{dtype}");
            assert_eq!(prepared.implementation(), "exact-scalar", "{dtype}");
        } else {
            assert_eq!(prepared.level(), fastest(&plan), "{dtype}");
        }
        // `prepare_at` still forces any level the CPU has, SIMD ones included.
        for route in Level::ALL {
            if let Ok(p) = a65::quant::prepare_at(&plan, route) {
                assert_eq!(p.level(), route, "{dtype}");
            }
        }
        let tiled = simak::ops::quanttess::check_inference(&simak::ops::quanttess::Request {
            input: TensorSpec::contiguous([64, 64], dtype),
            output: TiledTensorSpec::new(
                [64, 64],
                DType::I8,
                MlaTiled::new(
                    [None, None, Some(0), Some(1)],
                    [1, 1, 8, 64],
                    Channels::Compact,
                ),
            ),
            params: Params::new(0.25),
        })
        .unwrap();
        let prepared = a65::quanttess::prepare(&tiled);
        if a65::SCALAR_ONLY {
            assert_eq!(prepared.level(), Level::Scalar, "{dtype}");
            assert_eq!(prepared.implementation(), "exact-scalar", "{dtype}");
        } else {
            // QuantTess selects among the routes without multiplier predicates (on AArch64
            // the BF16-through-FP16 route is Quant-only), so compare with its own levels.
            let fastest_tiled = Level::ALL
                .into_iter()
                .rev()
                .find(|&r| a65::quanttess::prepare_at(&tiled, r).is_ok())
                .unwrap();
            assert_eq!(prepared.level(), fastest_tiled, "{dtype}");
        }
    }
}

#[test]
fn casttess_selection_follows_the_feature() {
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let plan = simak::ops::casttess::check_inference(&simak::ops::casttess::Request {
            input: TensorSpec::contiguous([64, 64], dtype),
            output: TiledTensorSpec::new(
                [64, 64],
                DType::BF16,
                MlaTiled::new(
                    [None, None, Some(0), Some(1)],
                    [1, 1, 8, 64],
                    Channels::Compact,
                ),
            ),
        })
        .unwrap();
        let prepared = a65::casttess::prepare(&plan);
        let fastest = Level::ALL
            .into_iter()
            .rev()
            .find(|&l| a65::casttess::prepare_at(&plan, l).is_ok())
            .unwrap();
        if a65::SCALAR_ONLY {
            assert_eq!(prepared.level(), Level::Scalar, "{dtype}");
            assert_eq!(prepared.implementation(), "scalar", "{dtype}");
        } else {
            assert_eq!(prepared.level(), fastest, "{dtype}");
        }
    }
}
