//! The EV74 CastTess v1 entry (route 0x30): its [`NativeEntry`] impl and the generic
//! codec's names for it (SPEC §5, §6, §7).
//!
//! ```
//! use simak_core::ev74::casttess::{self, DevicePlan};
//! use simak_core::ev74::DeviceRegion;
//! use simak_core::layout::{Channels, MlaTiled};
//! use simak_core::ops::casttess::{check_inference, Request, TiledTensorSpec};
//! use simak_core::{DType, TensorSpec};
//!
//! // SPEC §5 example: [W=2, C=3] FP32 → one 16-byte tile.
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     output: TiledTensorSpec::new(
//!         [2, 3],
//!         DType::BF16,
//!         MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact),
//!     ),
//! })?;
//! let plan: DevicePlan = casttess::check_inference(&plan)?;
//! let encoded = casttess::encode_relocatable(&plan);
//! let bound = casttess::bind(
//!     &plan,
//!     &encoded,
//!     DeviceRegion::new(0x1000, 24),
//!     DeviceRegion::new(0x2000, 16),
//! )?;
//! // The encoded packet stays usable: bind it again elsewhere.
//! let again = casttess::bind(&plan, &encoded, DeviceRegion::new(0x3000, 24), DeviceRegion::new(0x4000, 32))?;
//! let call = casttess::decode(bound.as_bytes())?;
//! assert_eq!((call.prefix.input_address, call.prefix.output_span), (0x1000, 16));
//! assert_eq!(casttess::decode(again.as_bytes())?.prefix.output_address, 0x4000);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::dtype::DType;
use crate::ops::casttess::Plan;
use crate::wire::casttess::{self as wire, CastTessDescriptorV1, CastTessRepr};
use crate::wire::prefix::PrefixRepr;

pub use super::{BindError, DeviceRegion, MAX_SPAN, NativeEntry, RepresentError};
pub use crate::wire::{DecodeCode, DecodeError};

/// The CastTess v1 entry is the op's marker, [`crate::ops::CastTess`].
pub use crate::ops::CastTess;

impl super::Sealed for CastTess {}

impl NativeEntry for CastTess {
    const ENTRY_NAME: &'static str = "simaai_kernels_ev74_casttess_v1";
    const VERSION: u16 = 1;
    const ROUTE: u8 = 0x30;
    const ENTRY_TITLE: &'static str = "CastTess v1";
    type Descriptor = CastTessDescriptorV1;
    type Repr = CastTessRepr;
    type Bytes = [u8; CastTessDescriptorV1::SIZE];

    fn dtype(plan: &Plan) -> DType {
        plan.input().dtype()
    }

    fn input_span(plan: &Plan) -> u64 {
        plan.input().span()
    }

    /// The physical span: the `MlaTiled` capacity (SPEC §5).
    fn output_span(plan: &Plan) -> u64 {
        plan.output().capacity()
    }

    /// Tile counts fit the wire's `u32`: the capacity fits 32 bits and every tile takes ≥
    /// 16 bytes.
    fn lower(plan: &Plan) -> CastTessRepr {
        let input = plan.input();
        let tiled = plan.output();
        let mut tile_counts = [1u32; 4];
        for (o, c) in tile_counts.iter_mut().zip(wire::tile_counts(tiled)) {
            *o = c.and_then(|c| u32::try_from(c).ok()).unwrap_or(u32::MAX);
        }
        CastTessRepr {
            prefix: PrefixRepr {
                dtype: input.dtype(),
                rank: u8::try_from(input.rank()).unwrap_or(0),
                input_address: 0,
                output_address: 0,
                elements: plan.elements(),
                input_span: input.span(),
                output_span: tiled.capacity(),
                extents: *input.extents(),
                input_strides: *input.strides(),
            },
            channels: tiled.channels(),
            axes: tiled.layout().axes,
            tile: *tiled.tile(),
            bytes_per_outer: tiled.bytes_per_outer(),
            tile_counts,
        }
    }
}

pub use super::{
    Relocation, address_slot, bind, check_inference, encode, encode_relocatable, relocate,
    slot_port,
};

/// The EV74 plan of this entry ([`super::DevicePlan`]).
pub type DevicePlan = super::DevicePlan<CastTess>;
/// A descriptor of this entry in lifecycle state `S` ([`super::Packet`]).
pub type Packet<S> = super::Packet<CastTess, S>;
/// Native entry name (SPEC §7).
pub const ENTRY: &str = <CastTess as NativeEntry>::ENTRY_NAME;
/// Native entry version.
pub const ENTRY_VERSION: u16 = <CastTess as NativeEntry>::VERSION;
/// Route number.
pub const ROUTE: u8 = <CastTess as NativeEntry>::ROUTE;

/// [`super::decode`] for this entry.
///
/// # Errors
///
/// As [`super::decode`].
pub fn decode(bytes: &[u8]) -> Result<CastTessRepr, DecodeError> {
    super::decode::<CastTess>(bytes)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test;
