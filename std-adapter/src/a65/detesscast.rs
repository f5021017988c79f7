//! A65 DetessCast: a BF16 MLA output layout (SPEC §12.1) → FP32, strided: `bits << 16`
//! for every pattern, NaN payloads kept (SPEC §12). Integer operations only.
//!
//! ```
//! use simak::a65;
//! use simak::layout::{Channels, MlaTiled};
//! use simak::ops::detess::Request;
//! use simak::ops::detesscast::check_inference;
//! use simak::{DType, TensorSpec};
//!
//! // One BF16 channel in a c16 pixel: the value is (b[16] << 8) | b[0].
//! let plan = check_inference(&Request {
//!     dtype: DType::BF16,
//!     layout: MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 1, 1], Channels::PadTo16),
//!     output: TensorSpec::contiguous([1, 1], DType::F32),
//! })?;
//! let prepared = a65::detesscast::prepare(&plan);
//! #[repr(align(16))]
//! struct Ofm([u8; 32]);
//! let mut ofm = Ofm([0; 32]);
//! ofm.0[0] = 0x80; // low byte
//! ofm.0[16] = 0x3f; // high byte
//! let mut out = [0u8; 4];
//! a65::detesscast::execute(&prepared, &ofm.0, &mut out)?;
//! assert_eq!(f32::from_le_bytes(out), 1.0); // BF16 0x3f80
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use simak_core::ops::DetessCast as DetessCastOp;
use simak_core::ops::detesscast::Plan;

use super::untess::{self, Cast, Geometry, Lanes, TiledPart, TiledWalk};
use super::{ExecuteError, HostOp, Level, LevelError, PortNeed};

/// The prepared state of a DetessCast plan ([`HostOp::State`]): level and geometry.
#[derive(Debug, Clone, Copy)]
pub struct State {
    plan: Plan,
    lanes: Lanes,
    geometry: Geometry,
}

/// A DetessCast plan prepared for the A65.
pub type Prepared = super::Prepared<DetessCastOp>;

/// One piece of a split DetessCast call: a range of the output's slowest axis.
pub type Piece<'a> = super::Piece<'a, DetessCastOp>;

/// Prepares `plan` at the fastest level this CPU offers. Reads no tensor data.
pub fn prepare(plan: &Plan) -> Prepared {
    Prepared::new(plan)
}

/// Prepares `plan` at a forced [`Level`] (the same bytes at every level).
///
/// # Errors
///
/// [`LevelError::NotDetected`]; [`LevelError::NoKernel`] at `x86_64-avx512vbmi` and
/// `aarch64-neon-fp16`.
pub fn prepare_at(plan: &Plan, level: Level) -> Result<Prepared, LevelError> {
    Prepared::at(plan, level)
}

/// DetessCast over checked buffers (the generic [`a65::execute`](super::execute)); buffers
/// as for [`a65::detess::execute`](super::detess::execute).
///
/// # Errors
///
/// As [`a65::execute`](super::execute), checked before any write.
#[inline]
pub fn execute(prepared: &Prepared, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
    super::execute(prepared, input, output)
}

fn state(plan: &Plan, lanes: Lanes) -> State {
    State {
        plan: *plan,
        lanes,
        geometry: Geometry::new(plan.input(), plan.output()),
    }
}

fn walk(s: &State, input: &[u8], output: &mut [u8], out_base: usize, ranges: untess::Ranges) {
    s.lanes.run(TiledWalk {
        g: &s.geometry,
        conv: &Cast,
        input,
        output,
        out_base,
        ranges,
    });
}

/// DetessCast on the A65 (SPEC §12). Parts split the output's slowest axis.
impl HostOp for DetessCastOp {
    type State = State;
    type Part<'a> = TiledPart<'a>;

    fn prepare(plan: &Plan) -> State {
        state(plan, Lanes::auto())
    }

    fn prepare_at(plan: &Plan, level: Level) -> Result<State, LevelError> {
        Ok(state(
            plan,
            Lanes::at(level, "detess_cast", plan.input_dtype())?,
        ))
    }

    #[inline]
    fn plan(state: &State) -> &Plan {
        &state.plan
    }

    fn implementation(state: &State) -> &'static str {
        state.lanes.level().name()
    }

    fn level(state: &State) -> Level {
        state.lanes.level()
    }

    #[inline]
    fn needs(plan: &Plan) -> (PortNeed, PortNeed) {
        untess::needs(plan.input(), plan.output())
    }

    #[inline]
    fn uses_fp(_state: &State) -> bool {
        false
    }

    fn run(state: &State, input: &[u8], output: &mut [u8]) {
        walk(state, input, output, 0, state.geometry.full());
    }

    fn partition<'a>(
        state: &State,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Vec<TiledPart<'a>> {
        untess::tiled_parts(&state.geometry, parts, input, output)
    }

    fn run_part(state: &State, part: &mut TiledPart<'_>) {
        walk(state, part.input, part.output, part.out_base, part.ranges);
    }
}
