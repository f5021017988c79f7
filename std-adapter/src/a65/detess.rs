//! A65 Detess: an MLA output layout (INT8 / INT16 / INT32 / BF16, SPEC §12.1) → the same
//! dtype, strided (SPEC §12, §6, §10).
//!
//! One head per plan: `input` is the head's bytes (`&ofm[offset..]`, see
//! [`simak_core::ops::detess::place_heads`]). Padding bytes are never read; output bytes
//! no element maps to are never written. No allocation during `execute`.
//!
//! ```
//! use simak::a65;
//! use simak::layout::{Channels, MlaTiled, TileAlign};
//! use simak::ops::detess::{check_inference, Request};
//! use simak::{DType, TensorSpec};
//!
//! // INT8 [W=2, C=3], one Compact tile, tile alignment 1: 6 bytes, pixel-major.
//! let plan = check_inference(&Request {
//!     dtype: DType::I8,
//!     layout: MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact)
//!         .with_tile_align(TileAlign::Bytes1),
//!     // Channels-first output: strides (1, 2) bytes.
//!     output: TensorSpec::strided([2, 3], [1, 2], DType::I8),
//! })?;
//! let prepared = a65::detess::prepare(&plan);
//! let mut out = [0u8; 6];
//! a65::detess::execute(&prepared, &[1, 2, 3, 4, 5, 6], &mut out)?;
//! assert_eq!(out, [1, 4, 2, 5, 3, 6]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use simak_core::ops::Detess as DetessOp;
use simak_core::ops::detess::Plan;

use super::untess::{self, Copy, Geometry, Lanes, TiledPart, TiledWalk};
use super::{ExecuteError, HostOp, Level, LevelError, PortNeed};

/// The prepared state of a Detess plan ([`HostOp::State`]): level and geometry.
#[derive(Debug, Clone, Copy)]
pub struct State {
    plan: Plan,
    lanes: Lanes,
    geometry: Geometry,
}

/// A Detess plan prepared for the A65.
pub type Prepared = super::Prepared<DetessOp>;

/// One piece of a split Detess call: a range of the output's slowest axis.
pub type Piece<'a> = super::Piece<'a, DetessOp>;

one_call!(detess);

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

/// Detess over checked buffers (the generic [`a65::execute`](super::execute)): `input`
/// the head's bytes (at least `plan.input().capacity()`, aligned to 16 for tile alignment
/// 16, to the element size otherwise), `output` the strided output's storage (at least
/// `plan.output().span()` bytes).
///
/// # Errors
///
/// As [`a65::execute`](super::execute): capacity, alignment, address overflow, overlap,
/// checked before any write.
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

/// Runs the walk over `ranges` with the copy of the plan's element size.
fn walk(s: &State, input: &[u8], output: &mut [u8], out_base: usize, ranges: untess::Ranges) {
    let g = &s.geometry;
    macro_rules! go {
        ($e:literal) => {
            s.lanes.run(TiledWalk {
                g,
                conv: &Copy::<$e>,
                input,
                output,
                out_base,
                ranges,
            })
        };
    }
    match s.plan.input_dtype().size() {
        1 => go!(1),
        2 => go!(2),
        _ => go!(4),
    }
}

/// Detess on the A65 (SPEC §12): tiled in, strided out, the bytes of each element
/// unchanged. Parts split the output's slowest axis.
impl HostOp for DetessOp {
    type State = State;
    type Part<'a> = TiledPart<'a>;

    fn prepare(plan: &Plan) -> State {
        state(plan, Lanes::auto())
    }

    fn prepare_at(plan: &Plan, level: Level) -> Result<State, LevelError> {
        Ok(state(plan, Lanes::at(level, "detess", plan.input_dtype())?))
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
