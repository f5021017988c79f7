//! The EV74 Detess-family entries (SPEC §7, §12): Detess v1 (route 0x31), DetessCast v1
//! (0x32) and DetessDequant v1 (0x33), their [`NativeEntry`] impls on the op markers and
//! the generic codec's names for them. One descriptor layout
//! ([`crate::wire::detess`]) whose magic word names the op; one head per descriptor (a
//! multi-head OFM is one packet per head over one buffer, each bound at its head's
//! address).
//!
//! ```
//! use simak_core::ev74::detess;
//! use simak_core::ev74::DeviceRegion;
//! use simak_core::layout::{Channels, MlaTiled, TileAlign};
//! use simak_core::ops::dequant::Params;
//! use simak_core::ops::detessdequant::{check_inference, Request};
//! use simak_core::{DType, TensorSpec};
//!
//! // An INT8 [4, 4, 20] head in PadTo16 (32 stored channels), one 4×4 tile: 512 bytes.
//! let plan = check_inference(&Request {
//!     dtype: DType::I8,
//!     layout: MlaTiled::new([None, Some(0), Some(1), Some(2)], [1, 4, 4, 20], Channels::PadTo16),
//!     output: TensorSpec::contiguous([4, 4, 20], DType::F32),
//!     params: Params::new(0.5).with_zero_point(-3),
//! })?;
//! let plan = detess::check_inference(&plan)?;
//! let encoded = detess::encode_relocatable(&plan);
//! let bound = detess::bind(
//!     &plan,
//!     &encoded,
//!     DeviceRegion::new(0x1000, 512),
//!     DeviceRegion::new(0x2000, 1280),
//! )?;
//! let call = detess::decode(bound.as_bytes())?;
//! assert_eq!((call.prefix.input_span, call.prefix.output_span), (512, 1280));
//! assert_eq!(call.dequant_params(), Some(Params::new(0.5).with_zero_point(-3)));
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::dtype::DType;
use crate::layout::{TileAlign, TiledView};
use crate::ops::{detess, detesscast, detessdequant};
use crate::tensor::View;
use crate::wire::detess::{self as wire, Conversion, DetessDescriptorV1, DetessRepr};
use crate::wire::prefix::PrefixRepr;

pub use super::{BindError, DeviceRegion, MAX_SPAN, NativeEntry, RepresentError};
pub use crate::ops::{Detess, DetessCast, DetessDequant};
pub use crate::wire::{DecodeCode, DecodeError};

/// The ports of a Detess-family plan as the codec needs them.
struct Ports<'a> {
    input: &'a TiledView,
    input_dtype: DType,
    output: &'a View,
}

/// The relocatable representation of a Detess-family plan (address slots zero). Tile
/// counts fit the wire's `u32`: the capacity fits 32 bits on the device and every tile
/// takes at least one byte.
fn lower(conversion: Conversion, ports: &Ports<'_>, dequant: (u32, i32)) -> DetessRepr {
    let tiled = ports.input;
    let output = ports.output;
    let mut tile_counts = [1u32; 4];
    for (o, c) in tile_counts
        .iter_mut()
        .zip(crate::wire::casttess::tile_counts(tiled))
    {
        *o = c.and_then(|c| u32::try_from(c).ok()).unwrap_or(u32::MAX);
    }
    DetessRepr {
        prefix: PrefixRepr {
            dtype: output.dtype(),
            rank: u8::try_from(output.rank()).unwrap_or(0),
            input_address: 0,
            output_address: 0,
            elements: output.elements(),
            input_span: tiled.capacity(),
            output_span: output.span(),
            extents: *output.extents(),
            input_strides: *output.strides(),
        },
        conversion,
        input_dtype: ports.input_dtype,
        layout: *tiled.layout(),
        bytes_per_outer: tiled.bytes_per_outer(),
        tile_counts,
        multiplier_bits: dequant.0,
        zero_point: dequant.1,
    }
}

/// The alignment of a tiled input's address (SPEC §12.1): 16 bytes at tile alignment 16,
/// else the element size.
fn tiled_align(input: &TiledView, dtype: DType) -> u64 {
    match input.layout().tile_align {
        TileAlign::Bytes16 => TileAlign::Bytes16.bytes(),
        TileAlign::Bytes1 => dtype.size_u64(),
    }
}

/// One Detess-family entry's [`NativeEntry`] impl on its op marker.
macro_rules! detess_entry {
    ($marker:ident, $module:ident, $k:literal, $name:literal, $route:literal, $title:literal,
     |$plan:ident| $dequant:expr) => {
        impl super::Sealed for $marker {}

        impl NativeEntry for $marker {
            const ENTRY_NAME: &'static str = $name;
            const VERSION: u16 = 1;
            const ROUTE: u8 = $route;
            const ENTRY_TITLE: &'static str = $title;
            type Descriptor = DetessDescriptorV1<$k>;
            type Repr = DetessRepr;
            type Bytes = [u8; wire::SIZE];

            /// The output's dtype: the prefix describes the output.
            fn dtype(plan: &$module::Plan) -> DType {
                plan.output().dtype()
            }

            /// The physical span: the tiled input's capacity (SPEC §12.1).
            fn input_span(plan: &$module::Plan) -> u64 {
                plan.input().capacity()
            }

            fn output_span(plan: &$module::Plan) -> u64 {
                plan.output().span()
            }

            fn input_align(plan: &$module::Plan) -> u64 {
                tiled_align(plan.input(), plan.input_dtype())
            }

            fn lower($plan: &$module::Plan) -> DetessRepr {
                let ports = Ports {
                    input: $plan.input(),
                    input_dtype: $plan.input_dtype(),
                    output: $plan.output(),
                };
                lower(Conversion::from_code($k), &ports, $dequant)
            }
        }
    };
}

detess_entry!(
    Detess,
    detess,
    0,
    "simaai_kernels_ev74_detess_v1",
    0x31,
    "Detess v1",
    |plan| (0, 0)
);
detess_entry!(
    DetessCast,
    detesscast,
    1,
    "simaai_kernels_ev74_detesscast_v1",
    0x32,
    "DetessCast v1",
    |plan| (0, 0)
);
detess_entry!(
    DetessDequant,
    detessdequant,
    2,
    "simaai_kernels_ev74_detessdequant_v1",
    0x33,
    "DetessDequant v1",
    |plan| (plan.params().multiplier_bits(), plan.params().zero_point())
);

pub use super::{
    Relocation, address_slot, bind, check_inference, encode, encode_relocatable, relocate,
    slot_port,
};

/// The EV74 plan of entry `E` ([`super::DevicePlan`]).
pub type DevicePlan<E> = super::DevicePlan<E>;
/// A descriptor of entry `E` in lifecycle state `S` ([`super::Packet`]).
pub type Packet<E, S> = super::Packet<E, S>;

/// [`super::decode`] for whichever Detess-family entry `bytes` are, told by the magic word
/// (the firmware is told by the command's route instead).
///
/// # Errors
///
/// As [`super::decode`]; [`DecodeError::Magic`] for a magic word of no Detess-family entry
/// (the Detess v1 rules then name it).
pub fn decode(bytes: &[u8]) -> Result<DetessRepr, DecodeError> {
    match bytes.first_chunk::<4>() {
        Some(m) if *m == Conversion::Cast.magic() => super::decode::<DetessCast>(bytes),
        Some(m) if *m == Conversion::Dequant.magic() => super::decode::<DetessDequant>(bytes),
        _ => super::decode::<Detess>(bytes),
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test;
