//! simak: FP32 / BF16 / FP16 tensors into exactly what the ML accelerator consumes.
//!
//! This is the crate host users depend on. It re-exports the backend-neutral
//! [`simak_core`] (dtypes, tensor specs, admission, plans) and adds the A65 host-CPU
//! execution in [`a65`].
//!
//! ```
//! use simak::ops::quant::{check_inference, Params, Request};
//! use simak::{a65, DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([4], DType::F32),
//!     output: TensorSpec::contiguous([4], DType::I8),
//!     params: Params::new(0.5).with_zero_point(3),
//! })?;
//! let prepared = a65::quant::prepare(&plan);
//! let input: Vec<u8> = [1.0f32, -7.0, 300.0, f32::NAN]
//!     .iter()
//!     .flat_map(|x| x.to_le_bytes())
//!     .collect();
//! let mut output = [0u8; 4];
//! a65::quant::execute(&prepared, &input, &mut output)?;
//! // 0.5 → 0 (ties to even) + 3; −3.5 → −4 + 3; 150 + 3 saturates; NaN → zero point.
//! assert_eq!(output.map(|b| b as i8), [3, -1, 127, 3]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # CPU support
//!
//! `a65::quant::prepare` picks the first route the CPU has, once per plan (SPEC §10):
//!
//! | target | routes, fastest first | notes |
//! | --- | --- | --- |
//! | x86-64 | AVX-512 F/BW/VL, AVX2 + F16C, SSE4.1 (FP32, BF16) | FP16 needs F16C |
//! | AArch64 | NEON (FP32 arithmetic; BF16 and FP16 widened in registers) | |
//! | any | exact integer path (`exact-scalar`) | small workloads, tails, other targets |
//!
//! The vector routes need the default FP environment (round-to-nearest, no flush-to-zero,
//! no denormals-are-zero, masked traps); `execute` checks it and fails before writing
//! otherwise. The exact path is independent of the FP environment.
//!
//! # Features
//!
//! - `scalar-only` (off by default; for testing): automatic selection
//!   (`a65::quant::prepare`, `a65::quanttess::prepare`, `a65::casttess::prepare`) picks
//!   only the exact integer path (`exact-scalar`) and the scalar CastTess kernels, and
//!   `implementation()` reports them. The SIMD routes stay compiled and reachable through
//!   the hidden forced-route test hooks, so the route tests still compare every route with
//!   the (now default) exact path. [`a65::SCALAR_ONLY`] tells whether it is on;
//!   `cargo xtask test` runs the tests once with it (step `nosimd`).
#![deny(missing_docs)]
// `unsafe` is allowed only in `a65::arch` (SIMD intrinsics and FP control-register reads)
// and `a65::raw` (the raw-pointer entries, which view checked pointers as slices).
#![deny(unsafe_code)]

pub mod a65;
pub mod calibrate;
pub mod dequant;
pub mod error;
pub mod ev74;
#[cfg(feature = "model")]
pub mod model;

pub use error::Error;

pub use simak_core::{AdmissionError, DType, DynSpec, Layout, MAX_RANK, Port, TensorSpec, View};
pub use simak_core::{arith, dtype, layout, ops, state, tensor};
