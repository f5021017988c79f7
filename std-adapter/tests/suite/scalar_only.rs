//! The `scalar-only` feature: with it, automatic selection picks the exact / scalar paths
//! for Quant, QuantTess and CastTess and `implementation()` says so; without it, the
//! fastest route this CPU has. Either way the forced-route hooks still reach every route.

use simak::a65::{self, Route, TessLevel};
use simak::layout::{Channels, MlaTiled};
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

/// The first route of [`Route::ALL`] this CPU has for `plan`.
fn fastest(plan: &simak::ops::quant::Plan) -> Route {
    Route::ALL
        .into_iter()
        .find(|&r| a65::quant::prepare_with_route(plan, r).is_some())
        .unwrap()
}

#[test]
fn the_constant_follows_the_feature() {
    assert_eq!(a65::SCALAR_ONLY, cfg!(feature = "scalar-only"));
    if a65::SCALAR_ONLY {
        assert_eq!(Route::AUTO, &[Route::Exact]);
        assert_eq!(TessLevel::AUTO, &[TessLevel::Scalar]);
    } else {
        assert_eq!(Route::AUTO, &Route::ALL);
        assert_eq!(TessLevel::AUTO, &TessLevel::ALL);
    }
}

#[test]
fn quant_selection_follows_the_feature() {
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let plan = quant_plan(dtype);
        let prepared = a65::quant::prepare(&plan);
        if a65::SCALAR_ONLY {
            assert_eq!(prepared.route(), Route::Exact, "{dtype}");
            assert_eq!(prepared.implementation(), "exact-scalar", "{dtype}");
        } else {
            assert_eq!(prepared.route(), fastest(&plan), "{dtype}");
        }
        // The hooks still force any route the CPU has, SIMD ones included.
        for route in Route::ALL {
            if let Some(p) = a65::quant::prepare_with_route(&plan, route) {
                assert_eq!(p.route(), route, "{dtype}");
            }
        }
        let tiled = simak::ops::quanttess::check_inference(&simak::ops::quanttess::Request {
            input: TensorSpec::contiguous([64, 64], dtype),
            layout: MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 8, 64],
                Channels::Compact,
            ),
            params: Params::new(0.25),
        })
        .unwrap();
        let prepared = a65::quanttess::prepare(&tiled);
        if a65::SCALAR_ONLY {
            assert_eq!(prepared.route(), Route::Exact, "{dtype}");
            assert_eq!(prepared.implementation(), "exact-scalar", "{dtype}");
        } else {
            // QuantTess selects among the routes without multiplier predicates (on AArch64
            // the BF16-through-FP16 route is Quant-only), so compare with its own hook.
            let fastest_tiled = Route::ALL
                .into_iter()
                .find(|&r| a65::quanttess::prepare_with_route(&tiled, r).is_some())
                .unwrap();
            assert_eq!(prepared.route(), fastest_tiled, "{dtype}");
        }
    }
}

#[test]
fn casttess_selection_follows_the_feature() {
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let plan = simak::ops::casttess::check_inference(&simak::ops::casttess::Request {
            input: TensorSpec::contiguous([64, 64], dtype),
            layout: MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 8, 64],
                Channels::Compact,
            ),
        })
        .unwrap();
        let prepared = a65::casttess::prepare(&plan);
        let fastest = TessLevel::ALL
            .into_iter()
            .find(|&l| a65::casttess::prepare_with_level(&plan, l).is_some())
            .unwrap();
        if a65::SCALAR_ONLY {
            assert_eq!(prepared.level(), TessLevel::Scalar, "{dtype}");
            assert_eq!(prepared.implementation(), "scalar", "{dtype}");
        } else {
            assert_eq!(prepared.level(), fastest, "{dtype}");
        }
    }
}
