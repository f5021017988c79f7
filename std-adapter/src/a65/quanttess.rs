//! A65 QuantTess: FP32 / BF16 / FP16 → INT8 `MlaTiled` over borrowed host buffers (SPEC §3,
//! §5, §6, §10).
//!
//! The numerics are the Quant routes' run functions (the same SIMD kernels and exact tails,
//! chosen once in `prepare`), applied per bounded batch straight into the tiled output
//! (compact channels) or through an on-stack panel (PadTo16). Padding bytes are 0x00
//! whatever the zero point. No intermediate tensor, no heap allocation.
//!
//! ```
//! use simak::a65;
//! use simak::layout::{Channels, MlaTiled};
//! use simak::ops::quant::Params;
//! use simak::ops::quanttess::{check_inference, Request, TiledTensorSpec};
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 2], DType::F32),
//!     output: TiledTensorSpec::new(
//!         [2, 2],
//!         DType::I8,
//!         MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 2], Channels::PadTo16),
//!     ),
//!     params: Params::new(0.5).with_zero_point(3),
//! })?;
//! let prepared = a65::quanttess::prepare(&plan);
//! let input: Vec<u8> = [1.0f32, -7.0, 300.0, f32::NAN]
//!     .iter()
//!     .flat_map(|x| x.to_le_bytes())
//!     .collect();
//! #[repr(align(16))]
//! struct Out([u8; 32]);
//! let mut out = Out([0xee; 32]);
//! a65::quanttess::execute(&prepared, &input, &mut out.0)?;
//! // Pixel 0: [3, -1, 0 × 14]; pixel 1: [127, 3, 0 × 14].
//! assert_eq!(&out.0[..2], &[3, (-1i8) as u8]);
//! assert_eq!(&out.0[16..18], &[127, 3]);
//! assert!(out.0[2..16].iter().chain(&out.0[18..]).all(|&b| b == 0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use simak_core::arith::quant::{Multiplier, RunFn};
use simak_core::ops::QuantTess as QuantTessOp;
use simak_core::ops::quanttess::Plan;

use super::{ExecuteError, HostOp, Level, LevelError, PortNeed};

use super::arch::{self, Route};
/// [`execute`] over raw pointers, for the C ABI: the generic
/// [`execute_raw`](super::execute_raw) (SPEC §6), the op inferred from the `Prepared`.
pub use super::raw::execute_raw;
use super::tess::{self, Geometry, Packer};

/// The prepared state of a QuantTess plan ([`HostOp::State`]): Quant route and geometry
/// selected once. Opaque; held by [`Prepared`].
#[derive(Debug, Clone, Copy)]
pub struct State {
    plan: Plan,
    route: Route,
    /// The route's FP control bits to check per call ([`Route::fp_reject`]).
    fp_reject: u64,
    run: RunFn,
    geometry: Geometry,
}

/// A QuantTess plan prepared for the A65: Quant route and geometry selected once.
pub type Prepared = super::Prepared<QuantTessOp>;

/// One piece of a split QuantTess call ([`Prepared::split`](super::Prepared::split)): whole
/// tiles, one disjoint range of the call's output, so pieces can run concurrently on any
/// threads (they are `Send`). A piece may be run again; each run rewrites the same bytes.
pub type Piece<'a> = super::Piece<'a, QuantTessOp>;

one_call!(quanttess);

/// Prepares `plan` with the fastest Quant route this CPU offers (the exact path when built
/// with the `scalar-only` feature, see [`SCALAR_ONLY`](super::SCALAR_ONLY)). Reads no
/// tensor data and allocates nothing.
pub fn prepare(plan: &Plan) -> Prepared {
    Prepared::new(plan)
}

/// Prepares `plan` for the exact integer path of SPEC §3 on every element, whatever the
/// CPU offers: independent of the FP environment (no FP check at execution), so it also
/// runs where the caller keeps flush-to-zero or a directed FP rounding mode (a C program
/// built with `-ffast-math`). Results are identical to [`prepare`]'s.
pub fn prepare_exact(plan: &Plan) -> Prepared {
    Prepared {
        state: with_route(plan, Route::Exact)
            .unwrap_or_else(|| unreachable!("the exact route is always available")),
    }
}

/// The state of a forced Quant `route`, or `None` when this CPU lacks it.
fn with_route(plan: &Plan, route: Route) -> Option<State> {
    let run = arch::run_fn(route, plan.input().dtype(), plan.rounding())?;
    Some(State {
        plan: *plan,
        route,
        fp_reject: route.fp_reject(),
        run,
        geometry: Geometry::new(plan.input(), plan.output()),
    })
}

/// Prepares `plan` at a forced [`Level`] (SPEC §10: the same bytes as [`prepare`], at that
/// level's speed), with the Quant kernel of that level; `scalar` is the exact integer
/// path ([`prepare_exact`]). Reads no tensor data and allocates nothing.
///
/// # Errors
///
/// [`LevelError::NotDetected`] when this CPU lacks the level's features;
/// [`LevelError::NoKernel`] for the levels QuantTess has no kernel at
/// (`x86_64-avx512vbmi`, `aarch64-neon-fp16`).
pub fn prepare_at(plan: &Plan, level: Level) -> Result<Prepared, LevelError> {
    Prepared::at(plan, level)
}

/// QuantTess on the A65: FP32 / BF16 / FP16 in, INT8 `MlaTiled` out (SPEC §3, §5, §6,
/// §10), with the Quant routes' run functions. Parts as CastTess's: whole tiles,
/// consecutive in storage order, balanced by tile count, each one range of whole 16-byte
/// blocks (padding 0x00 included) that no other part writes.
impl HostOp for QuantTessOp {
    type State = State;
    type Part<'a> = tess::Part<'a>;

    fn prepare(plan: &Plan) -> State {
        Route::AUTO
            .iter()
            .copied()
            .find_map(|route| with_route(plan, route))
            .unwrap_or_else(|| unreachable!("the exact route is always available"))
    }

    fn prepare_at(plan: &Plan, level: Level) -> Result<State, LevelError> {
        level.check_detected()?;
        let dtype = plan.input().dtype();
        level
            .quant_route(dtype)
            .and_then(|route| with_route(plan, route))
            .ok_or(LevelError::NoKernel {
                level,
                op: "quanttess",
                dtype,
            })
    }

    #[inline]
    fn plan(state: &State) -> &Plan {
        &state.plan
    }

    fn implementation(state: &State) -> &'static str {
        state.route.name()
    }

    fn level(state: &State) -> Level {
        state.route.level()
    }

    /// The input's accessed span aligned to its element size, the output's capacity
    /// 16-byte aligned.
    #[inline]
    fn needs(plan: &Plan) -> (PortNeed, PortNeed) {
        tess::needs(plan.input(), plan.output())
    }

    #[inline]
    fn uses_fp(state: &State) -> bool {
        state.route.uses_fp()
    }

    #[inline]
    fn fp_reject(state: &State) -> u64 {
        state.fp_reject
    }

    #[inline]
    fn run(state: &State, input: &[u8], output: &mut [u8]) {
        tess::run(&state.geometry, &packer(state), input, output);
    }

    fn partition<'a>(
        state: &State,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Vec<tess::Part<'a>> {
        tess::parts(&state.geometry, parts, input, output)
    }

    fn run_part(state: &State, part: &mut tess::Part<'_>) {
        part.run(&state.geometry, &packer(state));
    }
}

/// The QuantTess packer: the Quant run function into one INT8 plane.
struct Quant<'a> {
    run: RunFn,
    multiplier: &'a Multiplier,
    zero_point: i32,
    elem: usize,
}

impl Packer for Quant<'_> {
    fn pixels(&self, raw: &[u8], tc: usize, sc: usize, out: &mut [u8], scratch: &mut [u8]) {
        if tc == sc {
            (self.run)(self.multiplier, self.zero_point, raw, out);
            return;
        }
        let n = raw.len() / self.elem;
        let q = &mut scratch[..n];
        (self.run)(self.multiplier, self.zero_point, raw, q);
        for (pixel, values) in out.chunks_exact_mut(sc).zip(q.chunks_exact(tc)) {
            pixel[..tc].copy_from_slice(values);
            pixel[tc..].fill(0);
        }
    }

    fn channels(&self, raw: &[u8], ca: usize, pixel: &mut [u8], _scratch: &mut [u8]) {
        let n = raw.len() / self.elem;
        (self.run)(
            self.multiplier,
            self.zero_point,
            raw,
            &mut pixel[ca..ca + n],
        );
    }
}

/// Quantizes `input` into the tiled INT8 `output` as `prepared` describes (the generic
/// [`a65::execute`](super::execute) for QuantTess).
///
/// Buffers as for [`crate::a65::casttess::execute`]: `input` from its first element, at
/// least `plan.input().span()` bytes, element-aligned; `output` at least
/// `plan.output().capacity()` bytes, 16-byte aligned. Exactly the first `capacity` bytes
/// are written (padding 0x00); an empty plan writes nothing. Allocates nothing.
///
/// # Errors
///
/// Checked before any write, in this order: [`ExecuteError::Capacity`],
/// [`ExecuteError::Misaligned`], [`ExecuteError::AddressOverflow`] (input, then output),
/// [`ExecuteError::Overlap`], then, for FP routes, [`ExecuteError::FpEnvironment`] when the
/// calling thread's FP control register is not the default (SPEC §10). On error nothing
/// was written; the caller's FP mode is never changed.
#[inline]
pub fn execute(prepared: &Prepared, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
    super::execute(prepared, input, output)
}

/// The packer of a state's route.
fn packer(state: &State) -> Quant<'_> {
    Quant {
        run: state.run,
        multiplier: state.plan.multiplier(),
        zero_point: state.plan.zero_point(),
        elem: state.plan.input().dtype().size(),
    }
}
