//! The EV74 Preproc entry (SPEC §7, §13): Preproc v1, route 0x34, its [`NativeEntry`] impl
//! on the op's marker and the generic codec's names for it. One descriptor
//! ([`crate::wire::preproc`]) per call: a frame or a batch of frames in one input buffer,
//! the output FP32 or INT8 (strided), INT8 (QuantTess) or BF16 (CastTess).
//!
//! ```
//! use simak_core::ev74::preproc;
//! use simak_core::ev74::DeviceRegion;
//! use simak_core::ops::preproc::{check_inference, Border, Format, Frame, Normalize, Output, Request};
//!
//! // A 4×6 NV12 frame (36 bytes) → FP32 [4, 6, 3] (288 bytes).
//! let plan = check_inference(&Request {
//!     frame: Frame::packed(Format::NV12, 4, 6),
//!     normalize: Normalize::DEFAULT,
//!     bgr: false,
//!     border: Border::default(),
//!     pad_value: &[0],
//!     output: Output::F32 { strides: None },
//! })?;
//! let plan = preproc::check_inference(&plan)?;
//! let encoded = preproc::encode_relocatable(&plan);
//! let bound = preproc::bind(
//!     &plan,
//!     &encoded,
//!     DeviceRegion::new(0x1000, 36),
//!     DeviceRegion::new(0x2000, 288),
//! )?;
//! let call = preproc::decode(bound.as_bytes())?;
//! assert_eq!((call.prefix.input_span, call.prefix.output_span), (36, 288));
//! assert_eq!(&call.plan, plan.plan());
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::dtype::DType;
use crate::ops::preproc::{Plan, PlanOutput};
use crate::wire::prefix::PrefixRepr;
use crate::wire::preproc::{self as wire, PreprocDescriptorV1, PreprocRepr};

pub use super::{BindError, DeviceRegion, MAX_SPAN, NativeEntry, RepresentError};
pub use crate::wire::{DecodeCode, DecodeError};

/// The Preproc v1 entry is the op's marker, [`crate::ops::Preproc`].
pub use crate::ops::Preproc;

impl super::Sealed for Preproc {}

impl NativeEntry for Preproc {
    const ENTRY_NAME: &'static str = "simaai_kernels_ev74_preproc_v1";
    const VERSION: u16 = 1;
    const ROUTE: u8 = 0x34;
    const ENTRY_TITLE: &'static str = "Preproc v1";
    type Descriptor = PreprocDescriptorV1;
    type Repr = PreprocRepr;
    type Bytes = [u8; wire::SIZE];

    /// The output's dtype: the prefix describes the output.
    fn dtype(plan: &Plan) -> DType {
        wire::OutputKind::of(plan.output()).dtype()
    }

    /// The frame's accessed span (SPEC §13).
    fn input_span(plan: &Plan) -> u64 {
        plan.input_span()
    }

    /// Accessed for a strided output, the layout's capacity for a tiled one.
    fn output_span(plan: &Plan) -> u64 {
        plan.output_span()
    }

    /// The frame is read at any byte address.
    fn input_align(_plan: &Plan) -> u64 {
        1
    }

    /// The element size of a strided output, 16 bytes for a tiled one (SPEC §5).
    fn output_align(plan: &Plan) -> u64 {
        wire::output_align(plan)
    }

    fn lower(plan: &Plan) -> PreprocRepr {
        let (rank, extents, strides) = match plan.output() {
            PlanOutput::F32(v) | PlanOutput::I8(v, _) => (v.rank(), *v.extents(), *v.strides()),
            PlanOutput::QuantTess(t, _) | PlanOutput::CastTess(t) => {
                let mut extents = [0u64; crate::tensor::MAX_RANK];
                for (e, x) in extents.iter_mut().zip(plan.output_extents()) {
                    *e = *x;
                }
                (t.rank(), extents, [0u64; crate::tensor::MAX_RANK])
            }
        };
        PreprocRepr {
            prefix: PrefixRepr {
                dtype: <Preproc as NativeEntry>::dtype(plan),
                rank: u8::try_from(rank).unwrap_or(0),
                input_address: 0,
                output_address: 0,
                elements: plan.elements(),
                input_span: plan.input_span(),
                output_span: plan.output_span(),
                extents,
                input_strides: strides,
            },
            plan: *plan,
        }
    }
}

pub use super::{
    Relocation, address_slot, bind, check_inference, encode, encode_relocatable, relocate,
    slot_port,
};

/// The EV74 plan of this entry ([`super::DevicePlan`]).
pub type DevicePlan = super::DevicePlan<Preproc>;
/// A descriptor of this entry in lifecycle state `S` ([`super::Packet`]).
pub type Packet<S> = super::Packet<Preproc, S>;
/// Native entry name (SPEC §7).
pub const ENTRY: &str = <Preproc as NativeEntry>::ENTRY_NAME;
/// Native entry version.
pub const ENTRY_VERSION: u16 = <Preproc as NativeEntry>::VERSION;
/// Route number.
pub const ROUTE: u8 = <Preproc as NativeEntry>::ROUTE;

/// [`super::decode`] for this entry.
///
/// # Errors
///
/// As [`super::decode`].
pub fn decode(bytes: &[u8]) -> Result<PreprocRepr, DecodeError> {
    super::decode::<Preproc>(bytes)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test;
