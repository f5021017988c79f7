//! Exact integer arithmetic shared by every backend.
//!
//! Everything here is integer code: results do not depend on the host FP environment
//! (rounding mode, flush-to-zero, denormals-are-zero), so it serves as the scalar tail,
//! the fallback and the reference of every SIMD or device route.

pub mod cast;
pub mod dequant;
pub mod preproc;
pub mod quant;
