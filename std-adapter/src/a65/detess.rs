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

use simak_core::layout::TiledView;
use simak_core::{DType, View};

use super::untess::{Copy, TiledCall, TiledOp, TiledState};

/// The prepared state of a Detess plan ([`HostOp::State`](super::HostOp::State)): level
/// and geometry.
pub type State = TiledState<DetessOp>;

output_side_api!(
    DetessOp,
    "Detess",
    /// Detess over checked buffers (the generic [`a65::execute`](super::execute)): `input`
    /// the head's bytes (at least `plan.input().capacity()`, aligned to 16 for tile alignment
    /// 16, to the element size otherwise), `output` the strided output's storage (at least
    /// `plan.output().span()` bytes).
    ///
    /// # Errors
    ///
    /// As [`a65::execute`](super::execute): capacity, alignment, address overflow, overlap,
    /// checked before any write.
);

one_call!(detess);

/// Detess on the A65 (SPEC §12): tiled in, strided out, the bytes of each element
/// unchanged, by the copy of the plan's element size.
impl TiledOp for DetessOp {
    type Conv = ();

    fn ports(plan: &Plan) -> (&TiledView, DType, &View) {
        (plan.input(), plan.input_dtype(), plan.output())
    }

    fn conv(_plan: &Plan) {}

    fn walk(s: &State, call: TiledCall<'_>) {
        match s.plan.input_dtype().size() {
            1 => s.lanes.run(call.by(&Copy::<1>)),
            2 => s.lanes.run(call.by(&Copy::<2>)),
            _ => s.lanes.run(call.by(&Copy::<4>)),
        }
    }
}
