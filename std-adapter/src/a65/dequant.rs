//! A65 Dequant: strided INT8 / INT16 / INT32 → FP32 / FP16 / BF16, strided (SPEC §12.2).
//!
//! INT8 and INT16 codes go through a table of every value built once by `prepare` (exact
//! integer arithmetic); INT32 codes use FP instructions when the calling thread's FP
//! environment is the default and the integer path otherwise (the same bits; a call never
//! fails because of the FP environment).
//!
//! ```
//! use simak::a65;
//! use simak::ops::dequant::{check_inference, Params, Request};
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([3], DType::I16),
//!     output: TensorSpec::contiguous([3], DType::F32),
//!     params: Params::new(3.0),
//! })?;
//! let prepared = a65::dequant::prepare(&plan);
//! let q: Vec<u8> = [1i16, -300, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let mut out = [0u8; 12];
//! a65::dequant::execute(&prepared, &q, &mut out)?;
//! assert_eq!(&out[..4], &(1f32 / 3f32).to_le_bytes()); // a division, rounded once
//! assert_eq!(&out[4..8], &(-100f32).to_le_bytes());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use simak_core::ops::Dequant as DequantOp;
use simak_core::ops::dequant::Plan;

use super::untess::{Dequant, Lanes, StridedWalk, with_dequant};
use super::walk::{StridedPart, Traversal, strided_needs, strided_parts};
use super::{HostOp, Level, LevelError, PortNeed};

/// The prepared state of a Dequant plan ([`HostOp::State`]): level, traversal and the
/// per-plan table (INT8: 256 entries, INT16: 65,536).
#[derive(Debug, Clone)]
pub struct State {
    plan: Plan,
    lanes: Lanes,
    traversal: Traversal,
    dequant: Dequant,
}

output_side_api!(
    DequantOp,
    "Dequant",
    /// Dequant over checked buffers (the generic [`a65::execute`](super::execute)): `input`
    /// from its first element (at least `plan.input().span()` bytes, aligned to the element
    /// size), `output` at least `plan.output().span()` bytes. Output bytes no element maps to
    /// are never written.
    ///
    /// # Errors
    ///
    /// As [`a65::execute`](super::execute), checked before any write (never
    /// [`ExecuteError::FpEnvironment`](super::ExecuteError::FpEnvironment)).
);

one_call!(dequant);

fn state(plan: &Plan, lanes: Lanes) -> State {
    State {
        plan: *plan,
        lanes,
        traversal: Traversal::new(plan.input(), plan.output()),
        dequant: Dequant::new(plan.params()),
    }
}

fn walk(s: &State, t: &Traversal, input: &[u8], output: &mut [u8]) {
    with_dequant!(s.lanes, &s.dequant, s.plan.output().dtype(), |c| {
        StridedWalk {
            t,
            conv: c,
            input,
            output,
        }
    });
}

/// The part of a split Dequant call: its traversal and its share of the buffers.
pub type Part<'a> = StridedPart<'a>;

/// Dequant on the A65 (SPEC §12.2). Pieces split the axis with the largest output stride;
/// their output byte ranges are disjoint.
impl HostOp for DequantOp {
    type State = State;
    type Part<'a> = Part<'a>;

    fn prepare(plan: &Plan) -> State {
        state(plan, Lanes::auto())
    }

    fn prepare_at(plan: &Plan, level: Level) -> Result<State, LevelError> {
        Ok(state(
            plan,
            Lanes::at(level, "dequant", plan.input().dtype())?,
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

    /// The accessed spans, the input aligned to its element size, the output unaligned.
    #[inline]
    fn needs(plan: &Plan) -> (PortNeed, PortNeed) {
        strided_needs(plan.input(), plan.output())
    }

    #[inline]
    fn uses_fp(_state: &State) -> bool {
        false
    }

    fn run(state: &State, input: &[u8], output: &mut [u8]) {
        walk(state, &state.traversal, input, output);
    }

    fn partition<'a>(
        state: &State,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Vec<Part<'a>> {
        strided_parts(&state.traversal, parts, input, output)
    }

    fn run_part(state: &State, part: &mut Part<'_>) {
        walk(state, &part.traversal, part.input, part.output);
    }
}
