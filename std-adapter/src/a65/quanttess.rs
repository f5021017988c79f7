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
//! use simak::ops::quanttess::{check_inference, Request};
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 2], DType::F32),
//!     layout: MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 2], Channels::PadTo16),
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
use simak_core::ops::quanttess::Plan;

use super::{ExecuteError, Level, LevelError};

use super::arch::{self, Route};
pub use super::raw::quanttess as execute_raw;
use super::tess::{self, Geometry, Packer};

/// A QuantTess plan prepared for the A65: Quant route and geometry selected once.
#[derive(Debug, Clone, Copy)]
pub struct Prepared {
    plan: Plan,
    route: Route,
    run: RunFn,
    geometry: Geometry,
}

one_call!(quanttess);

/// Prepares `plan` with the fastest Quant route this CPU offers (the exact path when built
/// with the `scalar-only` feature, see [`Route::AUTO`]). Reads no tensor data and
/// allocates nothing.
pub fn prepare(plan: &Plan) -> Prepared {
    Route::AUTO
        .iter()
        .copied()
        .find_map(|route| prepare_with_route(plan, route))
        .unwrap_or_else(|| unreachable!("the exact route is always available"))
}

/// Prepares `plan` for the exact integer path of SPEC §3 on every element, whatever the
/// CPU offers: independent of the FP environment (no FP check at execution), so it also
/// runs where the caller keeps flush-to-zero or a directed FP rounding mode (a C program
/// built with `-ffast-math`). Results are identical to [`prepare`]'s.
pub fn prepare_exact(plan: &Plan) -> Prepared {
    prepare_with_route(plan, Route::Exact)
        .unwrap_or_else(|| unreachable!("the exact route is always available"))
}

/// Prepares `plan` with a forced Quant `route`, or `None` when this CPU lacks it. A test
/// hook, not public API: routes are an implementation detail (SPEC §10).
#[doc(hidden)]
pub fn prepare_with_route(plan: &Plan, route: Route) -> Option<Prepared> {
    let run = arch::run_fn(route, plan.input().dtype(), plan.rounding())?;
    Some(Prepared {
        plan: *plan,
        route,
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
    level.check_detected()?;
    let dtype = plan.input().dtype();
    level
        .quant_route(dtype)
        .and_then(|route| prepare_with_route(plan, route))
        .ok_or(LevelError::NoKernel {
            level,
            op: "quanttess",
            dtype,
        })
}

impl Prepared {
    /// The checked plan this was prepared from.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Diagnostic name of the selected Quant route, e.g. `x86_64-avx512` (not an API
    /// contract, SPEC §10).
    pub fn implementation(&self) -> &'static str {
        self.route.name()
    }

    /// The selected route.
    #[doc(hidden)]
    pub fn route(&self) -> Route {
        self.route
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

/// Quantizes `input` into the tiled INT8 `output` as `prepared` describes.
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
pub fn execute(prepared: &Prepared, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
    execute_with_fp_control(prepared, input, output, arch::read_fp_control())
}

/// [`execute`] with the FP control word supplied by the caller: the test seam of SPEC §10.
/// Not public API.
#[doc(hidden)]
pub fn execute_with_fp_control(
    prepared: &Prepared,
    input: &[u8],
    output: &mut [u8],
    control: Option<u64>,
) -> Result<(), ExecuteError> {
    let plan = &prepared.plan;
    if plan.is_empty() {
        return Ok(());
    }
    tess::check_ports(plan.input(), plan.output(), input, output)?;
    if prepared.route.uses_fp()
        && let Some(c) = control
        && !arch::fp_control_ok(c)
    {
        return Err(ExecuteError::FpEnvironment { control: c });
    }
    tess::run(&prepared.geometry, &prepared.packer(), input, output);
    Ok(())
}

impl Prepared {
    /// The packer of this plan's route.
    fn packer(&self) -> Quant<'_> {
        Quant {
            run: self.run,
            multiplier: self.plan.multiplier(),
            zero_point: self.plan.zero_point(),
            elem: self.plan.input().dtype().size(),
        }
    }

    /// Splits the call into at most `parts` pieces that callers may run on their own
    /// threads, as [`crate::a65::casttess::Prepared::split`] does (see its example): whole
    /// tiles, consecutive in storage order, balanced by tile count; each piece's output is
    /// one range of whole 16-byte blocks that no other piece writes (padding included,
    /// SPEC §5), the ranges in order cover the first `capacity` bytes exactly once, and
    /// running every piece gives the bytes of one [`execute`]. Fewer than `parts` come back
    /// when the call has fewer tiles; `parts` 0 counts as 1; an empty plan gives no pieces.
    ///
    /// `input` and `output` are the whole call's buffers (bytes), as for [`execute`]; they
    /// are checked once here, before anything is written. The FP environment is checked
    /// by each [`Piece::run`], on its own thread.
    ///
    /// # Errors
    ///
    /// The buffer checks of [`execute`] ([`ExecuteError::Capacity`],
    /// [`ExecuteError::Misaligned`], [`ExecuteError::AddressOverflow`],
    /// [`ExecuteError::Overlap`]): nothing is returned (and nothing written) unless every
    /// check passed.
    pub fn split<'a>(
        &self,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Result<Vec<Piece<'a>>, ExecuteError> {
        if self.plan.is_empty() {
            return Ok(Vec::new());
        }
        tess::check_ports(self.plan.input(), self.plan.output(), input, output)?;
        let parts = tess::parts(&self.geometry, parts, input, output);
        let prepared = *self;
        Ok(parts
            .into_iter()
            .map(|part| Piece { prepared, part })
            .collect())
    }
}

/// One piece of a split QuantTess call: whole tiles, one disjoint range of the call's
/// output, so pieces can run concurrently on any threads (they are `Send`). A piece may be
/// run again; each run rewrites the same bytes.
#[derive(Debug)]
pub struct Piece<'a> {
    prepared: Prepared,
    part: tess::Part<'a>,
}

impl Piece<'_> {
    /// Runs this piece: writes its tiles, padding included (0x00), and nothing else. The
    /// buffers were checked by [`Prepared::split`]; the FP environment is checked here, on
    /// the calling thread, since it is per thread (SPEC §10).
    ///
    /// # Errors
    ///
    /// [`ExecuteError::FpEnvironment`] for an FP route when the calling thread's FP control
    /// register is not the default; nothing was written.
    pub fn run(&mut self) -> Result<(), ExecuteError> {
        if self.prepared.route.uses_fp()
            && let Some(c) = arch::read_fp_control()
            && !arch::fp_control_ok(c)
        {
            return Err(ExecuteError::FpEnvironment { control: c });
        }
        self.part
            .run(&self.prepared.geometry, &self.prepared.packer());
        Ok(())
    }

    /// The bytes of the call's output this piece writes (offsets from the output's start,
    /// a multiple of 16 apart).
    pub fn output_range(&self) -> core::ops::Range<usize> {
        self.part.output_range()
    }

    /// The tiles this piece owns, as indices in storage order (SPEC §5).
    pub fn tiles(&self) -> core::ops::Range<usize> {
        self.part.tiles()
    }
}
