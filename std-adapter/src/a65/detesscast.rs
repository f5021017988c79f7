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

use simak_core::layout::TiledView;
use simak_core::{DType, View};

use super::untess::{Cast, TiledCall, TiledOp, TiledState};

/// The prepared state of a DetessCast plan ([`HostOp::State`](super::HostOp::State)):
/// level and geometry.
pub type State = TiledState<DetessCastOp>;

output_side_api!(
    DetessCastOp,
    "DetessCast",
    /// DetessCast over checked buffers (the generic [`a65::execute`](super::execute)); buffers
    /// as for [`a65::detess::execute`](super::detess::execute).
    ///
    /// # Errors
    ///
    /// As [`a65::execute`](super::execute), checked before any write.
);

/// DetessCast on the A65 (SPEC §12): `bits << 16` per element.
impl TiledOp for DetessCastOp {
    type Conv = ();

    fn ports(plan: &Plan) -> (&TiledView, DType, &View) {
        (plan.input(), plan.input_dtype(), plan.output())
    }

    fn conv(_plan: &Plan) {}

    fn walk(s: &State, call: TiledCall<'_>) {
        s.lanes.run(call.by(&Cast));
    }
}
