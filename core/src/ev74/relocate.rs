//! Relocations: the second way to bind an encoded packet (SPEC §6, `docs/contract.md` §6).
//!
//! The source documents let the Runtime either call [`bind`](super::bind) with resolved regions or
//! supply DMA-BUF relocations to an encoded packet: a table of (address slot, buffer)
//! pairs that the driver resolves at submission. Here a [`Relocation`] names the slot by
//! its byte offset in the descriptor, as the wire format defines it (24 for the input, 32
//! for the output, [`crate::wire::prefix::field`]; the same for every entry, whose
//! descriptors share the prefix) and the region it resolves to. [`relocate`] runs bind's
//! own checks (the same functions, in bind's order) with the table read between the packet
//! check and the region rules — every slot known, each named at most once — so a relocated
//! packet passes exactly bind's rules and is a `Packet<E, Bound>` like any other: nothing
//! outside the codec writes an address slot.

use super::{BindError, DevicePlan, DeviceRegion, NativeEntry, Packet, bind_regions, check_packet};
use crate::error::Port;
use crate::state::{Bound, Encoded};
use crate::wire::prefix::field;

/// The byte offset of `port`'s address slot in every descriptor: 24 for the input, 32 for
/// the output (SPEC §7, a `u64` little-endian slot holding a 32-bit bus address).
pub const fn address_slot(port: Port) -> usize {
    match port {
        Port::Input => field::INPUT_ADDRESS,
        Port::Output => field::OUTPUT_ADDRESS,
    }
}

/// The port whose address slot starts at byte `slot` of a descriptor, `None` for any other
/// offset (the inverse of [`address_slot`]).
pub const fn slot_port(slot: usize) -> Option<Port> {
    match slot {
        field::INPUT_ADDRESS => Some(Port::Input),
        field::OUTPUT_ADDRESS => Some(Port::Output),
        _ => None,
    }
}

/// One relocation of an encoded packet: the address slot at byte `slot` of the descriptor
/// is to name `region` (a resolved bus address and its capacity in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Relocation {
    /// Byte offset of the address slot in the descriptor: 24 (input) or 32 (output).
    pub slot: usize,
    /// The region the slot resolves to.
    pub region: DeviceRegion,
}

impl Relocation {
    /// The relocation of `port`'s slot ([`address_slot`]) to `region`.
    pub const fn new(port: Port, region: DeviceRegion) -> Relocation {
        Relocation {
            slot: address_slot(port),
            region,
        }
    }

    /// The relocation of the slot at byte `slot`, as a driver's relocation list states it;
    /// [`relocate`] refuses an offset that is not an address slot.
    pub const fn at_slot(slot: usize, region: DeviceRegion) -> Relocation {
        Relocation { slot, region }
    }

    /// The port of the slot, `None` when `slot` is not an address slot.
    pub const fn port(&self) -> Option<Port> {
        slot_port(self.slot)
    }
}

/// Applies a relocation table to an encoded packet, giving a new bound packet; the encoded
/// packet is untouched and can be relocated or bound again.
///
/// Checks, in order, with [`bind`](super::bind)'s own functions: the packet was encoded from `plan`
/// ([`BindError::PacketMismatch`]); then the table, in its order: each relocation's slot
/// is an address slot ([`BindError::UnknownSlot`]) not named before
/// ([`BindError::DuplicateRelocation`]); a slot the table does not name stays 0 (unbound).
/// Then bind's region rules on the named regions (address 0, capacity 0 for an unnamed
/// slot), unchanged and in their order: for a nonempty plan, each port (input, then output)
/// bound ([`BindError::Unbound`]: a missing relocation), capacity, alignment, range; then
/// nonaliasing. An empty plan takes any table that passes the slot checks. The result is
/// the packet [`bind`](super::bind) gives for the same regions.
///
/// # Errors
///
/// [`BindError::PacketMismatch`], [`BindError::UnknownSlot`],
/// [`BindError::DuplicateRelocation`], then bind's region errors.
pub fn relocate<E: NativeEntry>(
    plan: &DevicePlan<E>,
    encoded: &Packet<E, Encoded>,
    relocations: &[Relocation],
) -> Result<Packet<E, Bound>, BindError> {
    check_packet(plan, encoded)?;
    let unbound = DeviceRegion::new(0, 0);
    let (mut input, mut output) = (None, None);
    for r in relocations {
        let port = r.port().ok_or(BindError::UnknownSlot { slot: r.slot })?;
        let named = match port {
            Port::Input => &mut input,
            Port::Output => &mut output,
        };
        if named.replace(r.region).is_some() {
            return Err(BindError::DuplicateRelocation { port });
        }
    }
    bind_regions(plan, input.unwrap_or(unbound), output.unwrap_or(unbound))
}
