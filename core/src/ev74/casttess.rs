//! EV74 CastTess: device representability, relocatable encoding, binding, device decoding
//! (SPEC §5, §6, §7).
//!
//! ```
//! use simak_core::ev74::casttess::{self, DevicePlan};
//! use simak_core::ev74::DeviceRegion;
//! use simak_core::layout::{Channels, MlaTiled};
//! use simak_core::ops::casttess::{check_inference, Request};
//! use simak_core::{DType, TensorSpec};
//!
//! // SPEC §5 example: [W=2, C=3] FP32 → one 16-byte tile.
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     layout: MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact),
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
//! assert_eq!((call.input_address, call.output_span), (0x1000, 16));
//! assert_eq!(casttess::decode(again.as_bytes())?.output_address, 0x4000);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! A bound packet cannot be bound again, and an encoded packet is not a bound one:
//!
//! ```compile_fail
//! use simak_core::ev74::casttess::{self, DevicePlan};
//! use simak_core::ev74::DeviceRegion;
//! fn rebind(plan: &DevicePlan, r: DeviceRegion) {
//!     let encoded = casttess::encode_relocatable(plan);
//!     let bound = casttess::bind(plan, &encoded, r, r).unwrap();
//!     let _ = casttess::bind(plan, &bound, r, r); // Packet<Bound> is not Packet<Encoded>
//! }
//! ```
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::error::Port;
use crate::layout::TILE_ALIGN;
use crate::ops::casttess::Plan;
use crate::state::{Bound, Encoded};
use crate::wire::casttess::{self as wire, CastTessRepr, SIZE};

pub use crate::ev74::quant::{BindError, MAX_SPAN, RepresentError};
pub use crate::wire::casttess::{DecodeCode, DecodeError};

use super::{DeviceRegion, check_region};

/// Native entry name of CastTess v1 (SPEC §7).
pub const ENTRY: &str = "simaai_kernels_ev74_casttess_v1";
/// Native entry version.
pub const ENTRY_VERSION: u16 = 1;
/// Route number (48 = 0x30).
pub const ROUTE: u8 = 0x30;

/// A CastTess plan checked for the EV74 (SPEC §6): the input span and the output physical
/// span fit the 32-bit domain. Holds the backend-neutral plan and its relocatable wire
/// representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePlan {
    plan: Plan,
    repr: CastTessRepr,
}

impl DevicePlan {
    /// The backend-neutral plan.
    pub const fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The relocatable wire representation (address slots zero).
    pub const fn repr(&self) -> &CastTessRepr {
        &self.repr
    }

    /// Whether the call is a no-op (never submitted).
    pub const fn is_empty(&self) -> bool {
        self.plan.is_empty()
    }

    /// Input accessed span in bytes (0 when empty).
    pub const fn input_span(&self) -> u64 {
        self.plan.input().span()
    }

    /// Output physical span in bytes: the `MlaTiled` capacity (0 when empty).
    pub const fn output_span(&self) -> u64 {
        self.plan.output().capacity()
    }
}

/// Checks that `plan` is representable on the EV74: the input accessed span and the output
/// physical span (capacity) are each ≤ [`MAX_SPAN`] bytes (SPEC §6). Tile counts then fit
/// the wire's `u32` (every tile takes ≥ 16 bytes). Reads no tensor data.
///
/// # Errors
///
/// [`RepresentError::Span`] naming the first port whose span is too large.
pub fn check_inference(plan: &Plan) -> Result<DevicePlan, RepresentError> {
    for (port, span) in [
        (Port::Input, plan.input().span()),
        (Port::Output, plan.output().capacity()),
    ] {
        if span > MAX_SPAN {
            return Err(RepresentError::Span { port, span });
        }
    }
    Ok(DevicePlan {
        plan: *plan,
        repr: lower(plan),
    })
}

/// Lowers a plan to its relocatable wire representation.
fn lower(plan: &Plan) -> CastTessRepr {
    let input = plan.input();
    let tiled = plan.output();
    let mut tile_counts = [1u32; 4];
    for (o, c) in tile_counts.iter_mut().zip(wire::tile_counts(tiled)) {
        // Admitted tiles are ≥ 1 and the capacity fits 32 bits, so every count fits u32.
        *o = c.and_then(|c| u32::try_from(c).ok()).unwrap_or(u32::MAX);
    }
    CastTessRepr {
        dtype: input.dtype(),
        rank: u8::try_from(input.rank()).unwrap_or(0),
        channels: tiled.channels(),
        input_address: 0,
        output_address: 0,
        elements: plan.elements(),
        input_span: input.span(),
        output_span: tiled.capacity(),
        extents: *input.extents(),
        input_strides: *input.strides(),
        axes: tiled.layout().axes,
        tile: *tiled.tile(),
        bytes_per_outer: tiled.bytes_per_outer(),
        tile_counts,
    }
}

/// A 216-byte CastTess v1 descriptor in lifecycle state `S` ([`Encoded`] or [`Bound`]).
///
/// Immutable: binding makes a new packet.
pub type Packet<S> = super::Packet<wire::CastTessDescriptorV1, S>;

impl super::sealed::Sealed for wire::CastTessDescriptorV1 {}
impl super::Descriptor for wire::CastTessDescriptorV1 {
    type Bytes = [u8; SIZE];

    fn view(bytes: &[u8; SIZE]) -> &Self {
        zerocopy::transmute_ref!(bytes)
    }

    fn addresses(&self) -> (u64, u64) {
        (self.input_address.get(), self.output_address.get())
    }
}

/// Encodes `plan` as a relocatable packet: every field set, address slots zero. Infallible
/// once the plan passed [`check_inference`].
pub fn encode_relocatable(plan: &DevicePlan) -> Packet<Encoded> {
    Packet::new(plan.repr.to_bytes())
}

/// Binds an encoded packet to device regions, giving a new bound packet (SPEC §6). The
/// encoded packet is untouched and can be bound again.
///
/// Checks, in order: the packet was encoded from `plan`; for a nonempty plan, the input
/// region (nonzero address, capacity ≥ the accessed span in bytes, address aligned to the
/// element size, address + span ≤ 2^32), then the output region (the same with the
/// physical span — the capacity of SPEC §5 — and 16-byte alignment); then the two accessed
/// ranges do not overlap. An empty plan binds any regions (nothing is accessed).
///
/// # Errors
///
/// [`BindError::PacketMismatch`], [`BindError::Unbound`], [`BindError::Capacity`],
/// [`BindError::Misaligned`], [`BindError::Range`], [`BindError::Overlap`].
pub fn bind(
    plan: &DevicePlan,
    encoded: &Packet<Encoded>,
    input: DeviceRegion,
    output: DeviceRegion,
) -> Result<Packet<Bound>, BindError> {
    if *encoded.as_bytes() != plan.repr.to_bytes() {
        return Err(BindError::PacketMismatch);
    }
    if !plan.is_empty() {
        let elem = plan.plan.input().dtype().size_u64();
        let (in_lo, in_hi) = check_region(Port::Input, plan.input_span(), input, elem)?;
        let (out_lo, out_hi) = check_region(Port::Output, plan.output_span(), output, TILE_ALIGN)?;
        if in_lo < out_hi && out_lo < in_hi {
            return Err(BindError::Overlap);
        }
    }
    let mut repr = plan.repr;
    repr.input_address = input.address;
    repr.output_address = output.address;
    Ok(Packet::new(repr.to_bytes()))
}

/// [`encode_relocatable`] then [`bind`].
///
/// # Errors
///
/// As [`bind`] (never [`BindError::PacketMismatch`]).
pub fn encode(
    plan: &DevicePlan,
    input: DeviceRegion,
    output: DeviceRegion,
) -> Result<Packet<Bound>, BindError> {
    bind(plan, &encode_relocatable(plan), input, output)
}

/// Device-side decoding of a submitted packet (SPEC §7): every rule of
/// [`CastTessRepr::parse`] (magic, version, length, codes, reserved words, rank, unused
/// axes, axis map, tiles, tile counts, tile alignment, element count, strides, nonoverlap,
/// spans, bytes per outer index, address ranges, alignment, port overlap), then both
/// address slots bound for a nonempty packet. Runs before any numerical entry is chosen; a
/// rejected packet touches no memory.
///
/// # Errors
///
/// The first failing rule as a [`DecodeError`]: [`DecodeError::Length`] unless `bytes` is
/// exactly 216 bytes, the rules of `parse`, then [`DecodeError::InputUnbound`] and
/// [`DecodeError::OutputUnbound`].
pub fn decode(bytes: &[u8]) -> Result<CastTessRepr, DecodeError> {
    let repr = CastTessRepr::parse_bytes(bytes)?;
    if !repr.is_empty() {
        if repr.input_address == 0 {
            return Err(DecodeError::InputUnbound);
        }
        if repr.output_address == 0 {
            return Err(DecodeError::OutputUnbound);
        }
    }
    Ok(repr)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test;
