//! The EV74 Quant v1 entry (route 0x2F): its [`NativeEntry`] impl and the generic codec's
//! names for it.
//!
//! ```
//! use simak_core::ev74::quant::{self, DevicePlan};
//! use simak_core::ev74::DeviceRegion;
//! use simak_core::ops::quant::{check_inference, Params, Request};
//! use simak_core::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     output: TensorSpec::contiguous([2, 3], DType::I8),
//!     params: Params::new(1.0),
//! })?;
//! let plan: DevicePlan = quant::check_inference(&plan)?;
//! let encoded = quant::encode_relocatable(&plan);
//! let bound = quant::bind(
//!     &plan,
//!     &encoded,
//!     DeviceRegion::new(0x1000, 24),
//!     DeviceRegion::new(0x2000, 6),
//! )?;
//! // The encoded packet stays usable: bind it again elsewhere.
//! let again = quant::bind(&plan, &encoded, DeviceRegion::new(0x3000, 24), DeviceRegion::new(0x4000, 8))?;
//! let call = quant::decode(bound.as_bytes())?;
//! assert_eq!((call.prefix.input_address, call.prefix.elements), (0x1000, 6));
//! assert_eq!(quant::decode(again.as_bytes())?.prefix.output_address, 0x4000);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! A bound packet cannot be bound again, and an encoded packet is not a bound one:
//!
//! ```compile_fail
//! use simak_core::ev74::quant::{self, DevicePlan};
//! use simak_core::ev74::DeviceRegion;
//! fn rebind(plan: &DevicePlan, r: DeviceRegion) {
//!     let encoded = quant::encode_relocatable(plan);
//!     let bound = quant::bind(plan, &encoded, r, r).unwrap();
//!     let _ = quant::bind(plan, &bound, r, r); // Packet<Bound> is not Packet<Encoded>
//! }
//! ```
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::dtype::DType;
use crate::ops::quant::Plan;
use crate::wire::prefix::PrefixRepr;
use crate::wire::quant::{self as wire, QuantDescriptorV1, QuantFlags, QuantRepr};

pub use super::{BindError, DeviceRegion, MAX_SPAN, NativeEntry, RepresentError};
pub use crate::wire::{DecodeCode, DecodeError};

/// The Quant v1 entry is the op's marker, [`crate::ops::Quant`].
pub use crate::ops::Quant;

impl super::Sealed for Quant {}

impl NativeEntry for Quant {
    const ENTRY_NAME: &'static str = "simaai_kernels_ev74_quant_v1";
    const VERSION: u16 = 1;
    const ROUTE: u8 = 0x2f;
    const ENTRY_TITLE: &'static str = "Quant v1";
    type Descriptor = QuantDescriptorV1;
    type Repr = QuantRepr;
    type Bytes = [u8; QuantDescriptorV1::SIZE];

    fn dtype(plan: &Plan) -> DType {
        plan.input().dtype()
    }

    fn input_span(plan: &Plan) -> u64 {
        plan.input().span()
    }

    fn output_span(plan: &Plan) -> u64 {
        plan.output().span()
    }

    /// Scalars become rank 1, extent 1.
    fn lower(plan: &Plan) -> QuantRepr {
        let input = plan.input();
        let output = plan.output();
        let dtype = input.dtype();
        let mut extents = *input.extents();
        let rank = if input.rank() == 0 {
            if let Some(e) = extents.first_mut() {
                *e = 1;
            }
            1
        } else {
            input.rank()
        };
        let mut flags = QuantFlags::empty();
        if wire::is_contiguous(rank, &extents, input.strides(), dtype.size_u64()) {
            flags |= QuantFlags::INPUT_CONTIGUOUS;
        }
        if wire::is_contiguous(rank, &extents, output.strides(), 1) {
            flags |= QuantFlags::OUTPUT_CONTIGUOUS;
        }
        QuantRepr {
            prefix: PrefixRepr {
                dtype,
                rank: u8::try_from(rank).unwrap_or(1),
                input_address: 0,
                output_address: 0,
                elements: plan.elements(),
                input_span: input.span(),
                output_span: output.span(),
                extents,
                input_strides: *input.strides(),
            },
            flags,
            output_strides: *output.strides(),
            multiplier: *plan.multiplier(),
            zero_point: plan.zero_point(),
            rounding: plan.rounding(),
        }
    }
}

pub use super::{
    Relocation, address_slot, bind, check_inference, encode, encode_relocatable, relocate,
    slot_port,
};

/// The EV74 plan of this entry ([`super::DevicePlan`]).
pub type DevicePlan = super::DevicePlan<Quant>;
/// A descriptor of this entry in lifecycle state `S` ([`super::Packet`]).
pub type Packet<S> = super::Packet<Quant, S>;
/// Native entry name (SPEC §7).
pub const ENTRY: &str = <Quant as NativeEntry>::ENTRY_NAME;
/// Native entry version.
pub const ENTRY_VERSION: u16 = <Quant as NativeEntry>::VERSION;
/// Route number.
pub const ROUTE: u8 = <Quant as NativeEntry>::ROUTE;

/// [`super::decode`] for this entry.
///
/// # Errors
///
/// As [`super::decode`].
pub fn decode(bytes: &[u8]) -> Result<QuantRepr, DecodeError> {
    super::decode::<Quant>(bytes)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test;
