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

use simak_core::layout::TiledView;
use simak_core::{DType, View};

use super::untess::{Dequant, TiledCall, TiledOp, TiledState, with_dequant};

/// The prepared state of a DetessDequant plan ([`HostOp::State`](super::HostOp::State)):
/// level, geometry and the per-plan table (INT8: 256 entries, INT16: 65,536).
pub type State = TiledState<DetessDequantOp>;

output_side_api!(
    DetessDequantOp,
    "DetessDequant",
    /// DetessDequant over checked buffers (the generic [`a65::execute`](super::execute));
    /// buffers as for [`a65::detess::execute`](super::detess::execute).
    ///
    /// # Errors
    ///
    /// As [`a65::execute`](super::execute), checked before any write (never
    /// [`ExecuteError::FpEnvironment`](super::ExecuteError::FpEnvironment)).
);

one_call!(detessdequant);

/// DetessDequant on the A65 (SPEC §12.2): the dequantization of the plan's parameters,
/// by its table (INT8, INT16) or per element (INT32).
impl TiledOp for DetessDequantOp {
    type Conv = Dequant;

    fn ports(plan: &Plan) -> (&TiledView, DType, &View) {
        (plan.input(), plan.input_dtype(), plan.output())
    }

    fn conv(plan: &Plan) -> Dequant {
        Dequant::new(plan.params())
    }

    fn walk(s: &State, call: TiledCall<'_>) {
        with_dequant!(s.lanes, &s.conv, s.plan.output().dtype(), |c| call.by(c));
    }
}
