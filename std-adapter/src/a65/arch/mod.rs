//! Per-ISA Quant kernels and FP-environment reads: the only place `unsafe` is allowed.
//!
//! Layout (after memchr): one folder per instruction set, one file per level, and one
//! dispatch table per architecture ([`routes`]). Every kernel processes whole vectors of a
//! contiguous run and leaves the remainder (fewer elements than one block) to the exact
//! scalar path of `simak_core::arith::quant`, so results are bit-identical to it.
//!
//! Each SIMD kernel is an `unsafe fn` with `#[target_feature]`; it is reached only through a
//! safe wrapper stored in a route table that is built after runtime feature detection, so
//! the wrapper's `unsafe` call is sound by construction.
#![allow(unsafe_code)]

#[cfg(target_arch = "aarch64")]
pub(crate) mod aarch64;
pub mod reference;
pub(crate) mod tess;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_64;

use simak_core::arith::quant::{Multiplier, RunFn};
use simak_core::{DType, ops::quant::Rounding};

/// Whether the crate was built with the `scalar-only` feature: automatic selection
/// (`prepare` of Quant, QuantTess and CastTess) then picks only the exact / scalar paths
/// ([`Route::Exact`], [`TessLevel::Scalar`](tess::TessLevel::Scalar)), so that every test
/// exercises them. The forced-route test hooks (`prepare_with_route`, `prepare_with_level`)
/// still reach the SIMD routes, which stay compiled and are compared with the scalar
/// default.
pub const SCALAR_ONLY: bool = cfg!(feature = "scalar-only");

/// A numerical route for contiguous runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// The exact integer path (any CPU, independent of the FP environment).
    Exact,
    /// x86-64 SSE4.1 (F16C for FP16 input).
    Sse41,
    /// x86-64 AVX2 (F16C for FP16 input).
    Avx2,
    /// x86-64 AVX-512 F/BW/VL.
    Avx512,
    /// AArch64 NEON with FP32 arithmetic (BF16 fused widen, FP16 widened in registers).
    Neon,
    /// AArch64 native FP16 arithmetic for FP16 input and power-of-two multipliers 2^k,
    /// −24 ≤ k ≤ 15, with k ≥ 0 or rounding nearest-even / toward-zero (needs asimdhp).
    NeonFp16,
    /// AArch64 BF16 input mapped to bounded FP16 encodings with integer operations, for
    /// power-of-two multipliers 2^k, −110 ≤ k ≤ 110 (needs asimdhp).
    NeonBf16Fp16,
}

impl Route {
    /// Every route, fastest first within each architecture.
    pub const ALL: [Route; 7] = [
        Route::Avx512,
        Route::Avx2,
        Route::Sse41,
        Route::NeonFp16,
        Route::NeonBf16Fp16,
        Route::Neon,
        Route::Exact,
    ];

    /// The routes automatic selection tries, in order: [`Route::ALL`], or only
    /// [`Route::Exact`] when built with the `scalar-only` feature ([`SCALAR_ONLY`]).
    pub const AUTO: &'static [Route] = if SCALAR_ONLY {
        &[Route::Exact]
    } else {
        &Route::ALL
    };

    /// Diagnostic name.
    pub const fn name(self) -> &'static str {
        match self {
            Route::Exact => "exact-scalar",
            Route::Sse41 => "x86_64-sse4.1",
            Route::Avx2 => "x86_64-avx2",
            Route::Avx512 => "x86_64-avx512",
            Route::Neon => "aarch64-neon",
            Route::NeonFp16 => "aarch64-neon-fp16",
            Route::NeonBf16Fp16 => "aarch64-neon-bf16-via-fp16",
        }
    }

    /// Whether the route uses FP arithmetic and so needs the default FP environment.
    pub const fn uses_fp(self) -> bool {
        !matches!(self, Route::Exact)
    }
}

/// The contiguous-run function of `route` for `dtype` × `rounding` among the routes that
/// take any multiplier, or `None` when this CPU lacks the route's features.
pub(crate) fn run_fn(route: Route, dtype: DType, rounding: Rounding) -> Option<RunFn> {
    match route {
        Route::NeonFp16 | Route::NeonBf16Fp16 => None,
        _ => run_fn_for(route, dtype, &Multiplier::ONE, rounding),
    }
}

/// The contiguous-run function of `route` for `dtype` × `multiplier` × `rounding`, or `None`
/// when this CPU lacks the route's features, or the route does not handle that dtype or
/// multiplier (the predicates of SPEC §10).
#[cfg_attr(not(target_arch = "aarch64"), allow(unused_variables))]
pub(crate) fn run_fn_for(
    route: Route,
    dtype: DType,
    multiplier: &Multiplier,
    rounding: Rounding,
) -> Option<RunFn> {
    match route {
        Route::Exact => simak_core::arith::quant::Kernels::select(dtype, rounding).map(|k| k.run),
        #[cfg(target_arch = "x86_64")]
        Route::Sse41 | Route::Avx2 | Route::Avx512 => x86_64::run_fn(route, dtype, rounding),
        #[cfg(target_arch = "aarch64")]
        Route::Neon => aarch64::run_fn(dtype, rounding),
        #[cfg(target_arch = "aarch64")]
        Route::NeonFp16 if dtype == DType::F16 => aarch64::half::fp16_run_fn(multiplier, rounding),
        #[cfg(target_arch = "aarch64")]
        Route::NeonBf16Fp16 if dtype == DType::BF16 => {
            aarch64::half::bf16_run_fn(multiplier, rounding)
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// Reads the calling thread's FP control word: MXCSR on x86-64, FPCR on AArch64; `None`
/// where there is no FP route.
pub(crate) fn read_fp_control() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(x86_64::read_mxcsr() as u64)
    }
    #[cfg(target_arch = "aarch64")]
    {
        Some(aarch64::read_fpcr())
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        None
    }
}

/// Whether `control` (as read by [`read_fp_control`]) is the default environment the FP
/// routes need: round-to-nearest, no flush-to-zero, no denormals-are-zero, traps masked.
pub(crate) fn fp_control_ok(control: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        x86_64::mxcsr_ok(control)
    }
    #[cfg(target_arch = "aarch64")]
    {
        aarch64::fpcr_ok(control)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = control;
        true
    }
}
