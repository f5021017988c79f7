//! A65 DetessDequant: an INT8 / INT16 / INT32 MLA output layout (SPEC §12.1) → FP32 /
//! FP16 / BF16, strided, dequantized per SPEC §12.2; exactly `Dequant(Detess(x))`.
//!
//! INT8 and INT16 codes go through a table of every value built once by `prepare` (exact
//! integer arithmetic); INT32 codes use FP instructions when the calling thread's FP
//! environment is the default and the integer path otherwise (the same bits; a call never
//! fails because of the FP environment).
//!
//! ```
//! use simak::a65;
//! use simak::layout::{Channels, MlaTiled};
//! use simak::ops::dequant::Params;
//! use simak::ops::detessdequant::{check_inference, Request};
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     dtype: DType::I8,
//!     layout: MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 2], Channels::CBlock16),
//!     output: TensorSpec::contiguous([2, 2], DType::F32),
//!     params: Params::new(0.5).with_zero_point(1),
//! })?;
//! let prepared = a65::detessdequant::prepare(&plan);
//! #[repr(align(16))]
//! struct Ofm([u8; 32]);
//! let mut ofm = Ofm([0; 32]);
//! ofm.0[..2].copy_from_slice(&[3, 5]); // pixel 0, channels 0 and 1
//! ofm.0[16..18].copy_from_slice(&[(-1i8) as u8, 1]); // pixel 1
//! let mut out = [0u8; 16];
//! a65::detessdequant::execute(&prepared, &ofm.0, &mut out)?;
//! let y: Vec<f32> = out.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
//! assert_eq!(y, [4.0, 8.0, -4.0, 0.0]); // (q − 1) / 0.5
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use simak_core::ops::DetessDequant as DetessDequantOp;
use simak_core::ops::detessdequant::Plan;

use super::untess::{self, Dequant, Geometry, Lanes, TiledPart, TiledWalk, with_dequant};
use super::{ExecuteError, HostOp, Level, LevelError, PortNeed};

/// The prepared state of a DetessDequant plan ([`HostOp::State`]): level, geometry and
/// the per-plan table (INT8: 256 entries, INT16: 65,536).
#[derive(Debug, Clone)]
pub struct State {
    plan: Plan,
    lanes: Lanes,
    geometry: Geometry,
    dequant: Dequant,
}

/// A DetessDequant plan prepared for the A65.
pub type Prepared = super::Prepared<DetessDequantOp>;

/// One piece of a split DetessDequant call: a range of the output's slowest axis.
pub type Piece<'a> = super::Piece<'a, DetessDequantOp>;

one_call!(detessdequant);

/// Prepares `plan` at the fastest level this CPU offers, building its table. Reads no
/// tensor data.
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

/// DetessDequant over checked buffers (the generic [`a65::execute`](super::execute));
/// buffers as for [`a65::detess::execute`](super::detess::execute).
///
/// # Errors
///
/// As [`a65::execute`](super::execute), checked before any write (never
/// [`ExecuteError::FpEnvironment`]).
#[inline]
pub fn execute(prepared: &Prepared, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
    super::execute(prepared, input, output)
}

fn state(plan: &Plan, lanes: Lanes) -> State {
    State {
        plan: *plan,
        lanes,
        geometry: Geometry::new(plan.input(), plan.output()),
        dequant: Dequant::new(plan.params()),
    }
}

fn walk(s: &State, input: &[u8], output: &mut [u8], out_base: usize, ranges: untess::Ranges) {
    let g = &s.geometry;
    with_dequant!(s.lanes, &s.dequant, s.plan.output().dtype(), |c| {
        TiledWalk {
            g,
            conv: c,
            input,
            output,
            out_base,
            ranges,
        }
    });
}

/// DetessDequant on the A65 (SPEC §12.2). Parts split the output's slowest axis.
impl HostOp for DetessDequantOp {
    type State = State;
    type Part<'a> = TiledPart<'a>;

    fn prepare(plan: &Plan) -> State {
        state(plan, Lanes::auto())
    }

    fn prepare_at(plan: &Plan, level: Level) -> Result<State, LevelError> {
        Ok(state(
            plan,
            Lanes::at(level, "detess_dequant", plan.input_dtype())?,
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
