//! EV74 Quant: device representability, relocatable encoding, binding, device decoding.
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
//! assert_eq!((call.input_address, call.elements), (0x1000, 6));
//! assert_eq!(quant::decode(again.as_bytes())?.output_address, 0x4000);
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

use core::fmt;

use crate::error::Port;
use crate::ops::quant::Plan;
use crate::state::{Bound, Encoded};
use crate::wire::quant::{self as wire, QuantFlags, QuantRepr, SIZE};

pub use crate::wire::quant::{DecodeCode, DecodeError};

use super::{DeviceRegion, check_region};

/// Native entry name of Quant v1 (SPEC §7).
pub const ENTRY: &str = "simaai_kernels_ev74_quant_v1";
/// Native entry version.
pub const ENTRY_VERSION: u16 = 1;
/// Route number (47 = 0x2F).
pub const ROUTE: u8 = 0x2f;
/// Largest accessed span of a port on the device, in bytes (the 32-bit domain less address
/// 0, which means unbound).
pub const MAX_SPAN: u64 = u32::MAX as u64;

/// Why a plan cannot run on the EV74 (SPEC §6: a backend limit, not a change to the
/// mathematical contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RepresentError {
    /// A port's accessed span does not fit the 32-bit device domain.
    Span {
        /// Port.
        port: Port,
        /// Span in bytes.
        span: u64,
    },
}

impl fmt::Display for RepresentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RepresentError::Span { port, span } => write!(
                f,
                "{port} span of {span} bytes does not fit the 32-bit device domain"
            ),
        }
    }
}

impl core::error::Error for RepresentError {}

/// Why `bind` refused device regions. No packet was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BindError {
    /// The encoded packet was not produced from this plan.
    PacketMismatch,
    /// A nonempty port was given address 0 (which means unbound).
    Unbound {
        /// Port.
        port: Port,
    },
    /// A region is smaller than the port's accessed span.
    Capacity {
        /// Port.
        port: Port,
        /// Accessed span in bytes.
        required: u64,
        /// Region capacity in bytes.
        found: u64,
    },
    /// The input address is not aligned to the element size.
    Misaligned {
        /// Port.
        port: Port,
        /// Bus address.
        address: u32,
        /// Required alignment in bytes.
        align: u64,
    },
    /// Address + span exceeds 2^32.
    Range {
        /// Port.
        port: Port,
        /// Bus address.
        address: u32,
        /// Span in bytes.
        span: u64,
    },
    /// The input and output accessed ranges overlap (aliasing ports).
    Overlap,
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BindError::PacketMismatch => f.write_str("packet was not encoded from this plan"),
            BindError::Unbound { port } => write!(f, "{port} region has address 0"),
            BindError::Capacity {
                port,
                required,
                found,
            } => write!(
                f,
                "{port} region holds {found} bytes but the accessed span is {required} bytes"
            ),
            BindError::Misaligned {
                port,
                address,
                align,
            } => write!(
                f,
                "{port} address 0x{address:x} is not aligned to {align} bytes"
            ),
            BindError::Range {
                port,
                address,
                span,
            } => write!(
                f,
                "{port} address 0x{address:x} plus span {span} exceeds the 32-bit domain"
            ),
            BindError::Overlap => f.write_str("input and output regions overlap"),
        }
    }
}

impl core::error::Error for BindError {}

/// A Quant plan checked for the EV74 (SPEC §6): spans fit the 32-bit domain. Holds the
/// backend-neutral plan and its relocatable wire representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePlan {
    plan: Plan,
    repr: QuantRepr,
}

impl DevicePlan {
    /// The backend-neutral plan.
    pub const fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The relocatable wire representation (address slots zero).
    pub const fn repr(&self) -> &QuantRepr {
        &self.repr
    }

    /// Whether the call is a no-op (never submitted).
    pub const fn is_empty(&self) -> bool {
        self.plan.is_empty()
    }
}

/// Checks that `plan` is representable on the EV74: both accessed spans ≤ [`MAX_SPAN`]
/// bytes (SPEC §6). Reads no tensor data.
///
/// # Errors
///
/// [`RepresentError::Span`] naming the first port whose span is too large.
pub fn check_inference(plan: &Plan) -> Result<DevicePlan, RepresentError> {
    for (port, view) in [(Port::Input, plan.input()), (Port::Output, plan.output())] {
        if view.span() > MAX_SPAN {
            return Err(RepresentError::Span {
                port,
                span: view.span(),
            });
        }
    }
    Ok(DevicePlan {
        plan: *plan,
        repr: lower(plan),
    })
}

/// Lowers a plan to its relocatable wire representation (scalars become rank 1, extent 1).
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
    let rank_u8 = u8::try_from(rank).unwrap_or(1);
    let mut flags = QuantFlags::empty();
    if wire::is_contiguous(rank, &extents, input.strides(), dtype.size_u64()) {
        flags |= QuantFlags::INPUT_CONTIGUOUS;
    }
    if wire::is_contiguous(rank, &extents, output.strides(), 1) {
        flags |= QuantFlags::OUTPUT_CONTIGUOUS;
    }
    QuantRepr {
        dtype,
        rank: rank_u8,
        flags,
        input_address: 0,
        output_address: 0,
        elements: plan.elements(),
        input_span: input.span(),
        output_span: output.span(),
        extents,
        input_strides: *input.strides(),
        output_strides: *output.strides(),
        multiplier: *plan.multiplier(),
        zero_point: plan.zero_point(),
        rounding: plan.rounding(),
    }
}

/// A 224-byte Quant v1 descriptor in lifecycle state `S` ([`Encoded`] or [`Bound`]).
///
/// Immutable: binding makes a new packet.
pub type Packet<S> = super::Packet<wire::QuantDescriptorV1, S>;

impl super::sealed::Sealed for wire::QuantDescriptorV1 {}
impl super::Descriptor for wire::QuantDescriptorV1 {
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
/// Checks, in order: the packet was encoded from `plan`; for a nonempty plan, each port
/// (input, then output) has a nonzero address, capacity ≥ its accessed span (bytes), the
/// input address is aligned to the element size, address + span ≤ 2^32; then the two
/// accessed ranges do not overlap. An empty plan binds any regions (nothing is accessed).
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
        let p = &plan.plan;
        let (in_lo, in_hi) = check_region(
            Port::Input,
            p.input().span(),
            input,
            p.input().dtype().size_u64(),
        )?;
        let (out_lo, out_hi) = check_region(Port::Output, p.output().span(), output, 1)?;
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
/// [`QuantRepr::parse`], then both address slots bound for a nonempty packet. Runs before
/// any numerical entry is chosen; a rejected packet touches no memory.
///
/// # Errors
///
/// The first failing rule as a [`DecodeError`]: [`DecodeError::Length`] unless `bytes` is
/// exactly 224 bytes, the rules of `parse`, then [`DecodeError::InputUnbound`] and
/// [`DecodeError::OutputUnbound`].
pub fn decode(bytes: &[u8]) -> Result<QuantRepr, DecodeError> {
    let repr = QuantRepr::parse_bytes(bytes)?;
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
