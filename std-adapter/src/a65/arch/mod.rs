//! The SIMD kernels and FP-environment reads: the only place `unsafe` is allowed.
//!
//! Layout: the ISA table ([`isa`]: one capability token per instruction-set level), the
//! kernels written once over lane traits ([`quant`] for Quant, `convert`, `split` and
//! `band` for CastTess), and one folder per architecture with one file per level holding
//! only that level's lane-trait implementations. Every kernel processes whole vectors and
//! leaves the remainder to the exact scalar paths of `simak_core::arith`, so results are
//! bit-identical to them.
//!
//! A kernel reaches its `#[target_feature]` code only through `Isa::vectorize`, which takes
//! the level's token, and tokens come only from runtime detection: every safe wrapper is
//! sound because it holds a token.
#![allow(unsafe_code)]

#[cfg(target_arch = "aarch64")]
pub(crate) mod aarch64;
pub(crate) mod affine;
pub(crate) mod band;
pub(crate) mod bf16map;
pub(crate) mod blocks;
pub(crate) mod convert;
pub(crate) mod dequant;
pub(crate) mod isa;
pub(crate) mod quant;
pub mod reference;
pub(crate) mod split;
pub(crate) mod tess;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_64;
pub(crate) mod yuv;

use isa::Isa;

use simak_core::arith::quant::{Multiplier, RunFn};
use simak_core::{DType, ops::quant::Rounding};

/// Whether the crate was built with the `scalar-only` feature: automatic selection
/// (`prepare` of Quant, QuantTess and CastTess) then picks only the exact / scalar paths
/// (the `scalar` level of Quant, QuantTess and CastTess), so that every test exercises
/// them. `prepare_at` still reaches every level, whose SIMD kernels stay compiled and are
/// compared with the scalar default.
pub const SCALAR_ONLY: bool = cfg!(feature = "scalar-only");

/// A numerical route for contiguous runs: Quant's private table of kernels, keyed by
/// [`Level`](super::Level) (`Level::quant_route`, [`Route::level`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Route {
    /// The exact integer path (any CPU, independent of the FP environment).
    Exact,
    /// x86-64 SSE4.1 (FP32 and BF16 input).
    Sse41,
    /// x86-64 AVX2 with F16C.
    Avx2,
    /// x86-64 AVX-512 F/BW/VL (with AVX2 and F16C).
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
            Route::Sse41 => isa::Sse41::NAME,
            Route::Avx2 => isa::Avx2::NAME,
            Route::Avx512 => isa::Avx512::NAME,
            Route::Neon => isa::Neon::NAME,
            Route::NeonFp16 => isa::NeonFp16::NAME,
            Route::NeonBf16Fp16 => "aarch64-neon-bf16-via-fp16",
        }
    }

    /// Elements per vector step of the route's kernel (1 for the exact path).
    pub const fn block(self) -> usize {
        match self {
            Route::Exact => 1,
            Route::Sse41 | Route::Neon | Route::NeonFp16 | Route::NeonBf16Fp16 => 16,
            Route::Avx2 => 32,
            Route::Avx512 => 64,
        }
    }

    /// The FP control bits the route cannot run with (issue 23 scope 3): none for the
    /// exact path; on AArch64 every bit of the rule but FPCR.FZ16 for `Neon` (FP32
    /// arithmetic only: its FP16 input is widened with integer operations and an FP32
    /// multiply), every bit for the half routes (FP16 arithmetic); on x86-64 every bit.
    pub const fn fp_reject(self) -> u64 {
        match self {
            Route::Exact => 0,
            #[cfg(target_arch = "aarch64")]
            Route::Neon => FP_REJECT_ALL & !aarch64::FPCR_FZ16,
            _ => FP_REJECT_ALL,
        }
    }

    /// Whether the route is one of the half-precision routes (`NeonFp16`, `NeonBf16Fp16`).
    pub const fn uses_half(self) -> bool {
        matches!(self, Route::NeonFp16 | Route::NeonBf16Fp16)
    }

    /// Whether the route uses FP arithmetic and so needs the default FP environment.
    #[inline]
    pub const fn uses_fp(self) -> bool {
        !matches!(self, Route::Exact)
    }

    /// The level the route belongs to (both half-precision routes are
    /// `aarch64-neon-fp16`'s: FP16 input takes one, BF16 input the other).
    pub const fn level(self) -> super::Level {
        use super::Level;
        match self {
            Route::Exact => Level::Scalar,
            Route::Sse41 => Level::Sse41,
            Route::Avx2 => Level::Avx2,
            Route::Avx512 => Level::Avx512,
            Route::Neon => Level::Neon,
            Route::NeonFp16 | Route::NeonBf16Fp16 => Level::NeonFp16,
        }
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
        Route::Sse41 => quant::run_fn::<isa::Sse41>(dtype, rounding),
        #[cfg(target_arch = "x86_64")]
        Route::Avx2 => quant::run_fn::<isa::Avx2>(dtype, rounding),
        #[cfg(target_arch = "x86_64")]
        Route::Avx512 => quant::run_fn::<isa::Avx512>(dtype, rounding),
        #[cfg(target_arch = "aarch64")]
        Route::Neon => quant::run_fn::<isa::Neon>(dtype, rounding),
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

/// Prefetch hints for the cache lines of `bytes` (x86-64: `PREFETCHT0` per 64 bytes; a
/// no-op elsewhere): never a read, never a fault.
#[inline]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    for off in (0..bytes.len()).step_by(64) {
        // SAFETY: SSE is part of the x86-64 baseline; a prefetch is a hint that never reads
        // or faults, and the address is inside `bytes`.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                bytes.as_ptr().wrapping_add(off).cast(),
            )
        };
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = bytes;
}

/// Reads the calling thread's FP control word: MXCSR on x86-64, FPCR on AArch64; `None`
/// where there is no FP route, and under Miri, which runs no inline assembly and models
/// only the default FP environment (so that the output side's preparation, which asks
/// whether its FP path may be used, runs in the Miri subset).
#[inline]
pub(crate) fn read_fp_control() -> Option<u64> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        Some(x86_64::read_mxcsr() as u64)
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        Some(aarch64::read_fpcr())
    }
    #[cfg(any(miri, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        None
    }
}

/// Every bit of the FP-environment rule (SPEC §10): on x86-64 MXCSR bits 6–15 (DAZ, the
/// six exception masks, RC, FTZ); on AArch64 FPCR RMode, FZ, FZ16, FIZ, AH and the trap
/// enables IOE–IXE and IDE. Routes with FP arithmetic reject a register that differs from
/// the default in the bits of [`Route::fp_reject`].
#[cfg(target_arch = "x86_64")]
pub(crate) const FP_REJECT_ALL: u64 = x86_64::MXCSR_RULE;
/// See the x86-64 definition.
#[cfg(target_arch = "aarch64")]
pub(crate) const FP_REJECT_ALL: u64 = aarch64::FPCR_RULE;
/// No FP control register: nothing to check.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) const FP_REJECT_ALL: u64 = 0;

/// Whether `control` (as read by [`read_fp_control`]) equals the default environment in
/// the bits `reject` (a route's [`Route::fp_reject`]).
#[inline]
pub(crate) fn fp_control_ok(control: u64, reject: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (control ^ x86_64::MXCSR_DEFAULT) & reject == 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        control & reject == 0
    }
}

#[cfg(test)]
mod test {
    use super::Route;
    use super::tess::TessLevel;

    /// Automatic selection follows the `scalar-only` feature.
    #[test]
    fn auto_follows_the_feature() {
        if super::SCALAR_ONLY {
            assert_eq!(Route::AUTO, &[Route::Exact]);
            assert_eq!(TessLevel::AUTO, &[TessLevel::Scalar]);
        } else {
            assert_eq!(Route::AUTO, &Route::ALL);
            assert_eq!(TessLevel::AUTO, &TessLevel::ALL);
        }
    }
}
