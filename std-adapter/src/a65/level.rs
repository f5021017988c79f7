//! Named instruction-set levels: prepare a plan at a forced level instead of the one
//! `prepare` picks (SPEC §10: results are identical at every level; only speed differs).
//!
//! [`Level`] is generated with the capability tokens from the ISA table
//! (`std-adapter/src/a65/arch/isa.rs`: names, feature lists, detection). One set of names
//! for Quant, QuantTess and CastTess: those of the ISA table
//! (`x86_64-sse4.1`, `x86_64-avx2`, `x86_64-avx512`, `x86_64-avx512vbmi`, `aarch64-neon`,
//! `aarch64-neon-fp16`), plus `scalar` for the portable paths (the exact integer path of
//! Quant, SPEC §3, and the scalar CastTess kernels). A level names a set of CPU features;
//! each op has kernels at some of the levels only ("Detess ops": Detess, DetessCast,
//! DetessDequant and Dequant, whose one walker is compiled at each of their levels):
//!
//! | level | features | Quant | QuantTess | CastTess | Detess ops |
//! | --- | --- | --- | --- | --- | --- |
//! | `scalar` | none | exact path | exact path | scalar kernels | ✔ |
//! | `x86_64-sse4.1` | SSE4.1 | FP32, BF16 | FP32, BF16 | — | ✔ |
//! | `x86_64-avx2` | AVX2, F16C | ✔ | ✔ | ✔ | ✔ |
//! | `x86_64-avx512` | AVX2, F16C, AVX-512 F, BW, VL | ✔ | ✔ | ✔ | ✔ |
//! | `x86_64-avx512vbmi` | as `x86_64-avx512`, plus AVX-512 VBMI | — | — | ✔ | — |
//! | `aarch64-neon` | NEON | ✔ | ✔ | ✔ | ✔ |
//! | `aarch64-neon-fp16` | NEON, FEAT_FP16 | FP16 and BF16 input, power-of-two multipliers (SPEC §10) | — | — | — |
//!
//! ```
//! use simak::a65::{self, Level};
//! use simak::ops::quant::{check_inference, Params, Request};
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([1024], DType::F32),
//!     output: TensorSpec::contiguous([1024], DType::I8),
//!     params: Params::new(0.5),
//! })?;
//! let level: Level = "scalar".parse()?;
//! let prepared = a65::quant::prepare_at(&plan, level)?;
//! assert_eq!(prepared.implementation(), "exact-scalar");
//! // Every level this CPU has, `scalar` included.
//! assert!(Level::detected().contains(&Level::Scalar));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use core::str::FromStr;

use simak_core::DType;

use super::arch::Route;
use super::arch::tess::TessLevel;

pub use super::arch::isa::Level;

impl Level {
    /// Every level this CPU has, in [`Level::ALL`]'s order (`scalar` always included).
    pub fn detected() -> Vec<Level> {
        Level::ALL.into_iter().filter(|l| l.is_detected()).collect()
    }

    /// Checks that this CPU has the level.
    pub(crate) fn check_detected(self) -> Result<(), LevelError> {
        if self.is_detected() {
            Ok(())
        } else {
            Err(LevelError::NotDetected { level: self })
        }
    }

    /// The Quant route of the level for `dtype` input, if Quant has one (whether it takes
    /// the plan's multiplier is the route's own predicate).
    pub(crate) fn quant_route(self, dtype: DType) -> Option<Route> {
        match (self, dtype) {
            (Level::Scalar, _) => Some(Route::Exact),
            (Level::Sse41, _) => Some(Route::Sse41),
            (Level::Avx2, _) => Some(Route::Avx2),
            (Level::Avx512, _) => Some(Route::Avx512),
            (Level::Neon, _) => Some(Route::Neon),
            (Level::NeonFp16, DType::F16) => Some(Route::NeonFp16),
            (Level::NeonFp16, DType::BF16) => Some(Route::NeonBf16Fp16),
            _ => None,
        }
    }

    /// The CastTess kernel level of the level, if CastTess has one.
    pub(crate) fn tess_level(self) -> Option<TessLevel> {
        match self {
            Level::Scalar => Some(TessLevel::Scalar),
            Level::Avx2 => Some(TessLevel::Avx2),
            Level::Avx512 => Some(TessLevel::Avx512),
            Level::Avx512Vbmi => Some(TessLevel::Avx512Vbmi),
            Level::Neon => Some(TessLevel::Neon),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The names of every level, comma-separated.
fn all_names() -> String {
    Level::ALL.map(Level::name).join(", ")
}

impl FromStr for Level {
    type Err = UnknownLevel;

    /// Parses a level name exactly as [`Level::name`] writes it.
    ///
    /// # Errors
    ///
    /// [`UnknownLevel`] for any other text (its message lists the names).
    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        Level::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| UnknownLevel(s.to_owned()))
    }
}

/// A text that names no [`Level`]; its message lists the level names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLevel(pub String);

impl fmt::Display for UnknownLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown level {:?} (levels: {})", self.0, all_names())
    }
}

impl std::error::Error for UnknownLevel {}

/// Why a plan could not be prepared at a forced [`Level`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelError {
    /// This CPU lacks some feature of the level.
    NotDetected {
        /// The level asked for.
        level: Level,
    },
    /// The op has no kernel at the level for this plan (see the table of the
    /// [`level`](crate::a65::level) module: e.g. CastTess at `x86_64-sse4.1`, Quant at
    /// `x86_64-avx512vbmi`, or `aarch64-neon-fp16` for FP32 input or a multiplier that is
    /// not a power of two in its range).
    NoKernel {
        /// The level asked for.
        level: Level,
        /// The op: `quant`, `quanttess`, `casttess`, `detess`, `detess_cast`,
        /// `detess_dequant` or `dequant`.
        op: &'static str,
        /// The plan's input dtype.
        dtype: DType,
    },
}

impl fmt::Display for LevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LevelError::NotDetected { level } => write!(
                f,
                "this CPU lacks level {level} (it needs {}; this CPU has: {})",
                level.features(),
                Level::detected()
                    .into_iter()
                    .map(Level::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            LevelError::NoKernel { level, op, dtype } => write!(
                f,
                "{op} has no kernel at level {level} for this plan ({dtype} input)"
            ),
        }
    }
}

impl std::error::Error for LevelError {}
