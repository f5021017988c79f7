//! EV74 host codec and device-side decoder.
//!
//! Contract between layers (SPEC §6, §7): a backend-neutral checked `Plan` goes through
//! `ev74::<op>::check_inference`, which adds device representability (addresses and spans in
//! the 32-bit domain) → `encode_relocatable` gives an immutable `Packet<Encoded>` with zero
//! address slots → `bind` with resolved [`DeviceRegion`]s gives a new `Packet<Bound>` (the
//! encoded packet stays reusable) → the Runtime submits it. On the device, `decode` rechecks
//! every byte before a numerical entry is chosen. The packet states are the sealed markers of
//! [`crate::state`]; a bound packet cannot be re-bound and an encoded one cannot be
//! submitted.

pub mod casttess;
pub mod quant;

/// A resolved region of device memory: a 32-bit bus address and a capacity in **bytes**.
///
/// A region names memory; it does not prove it is mapped (the transport keeps allocations
/// mapped). Address 0 means "unbound" and is never a valid region for a nonempty port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceRegion {
    /// Bus address of the first byte.
    pub address: u32,
    /// Capacity in bytes.
    pub len: u64,
}

impl DeviceRegion {
    /// A region of `len` bytes at bus `address`.
    pub const fn new(address: u32, len: u64) -> DeviceRegion {
        DeviceRegion { address, len }
    }
}

/// Checks one port's region for `bind` (SPEC §6): nonzero address, capacity ≥ `span` bytes,
/// address aligned to `align` bytes, address + span ≤ 2^32. Returns the accessed bus range
/// `[start, end)`.
pub(crate) fn check_region(
    port: crate::error::Port,
    span: u64,
    region: DeviceRegion,
    align: u64,
) -> Result<(u64, u64), quant::BindError> {
    use quant::BindError;
    let address = region.address;
    if address == 0 {
        return Err(BindError::Unbound { port });
    }
    if region.len < span {
        return Err(BindError::Capacity {
            port,
            required: span,
            found: region.len,
        });
    }
    if u64::from(address).checked_rem(align) != Some(0) {
        return Err(BindError::Misaligned {
            port,
            address,
            align,
        });
    }
    let start = u64::from(address);
    match start.checked_add(span) {
        Some(end) if end <= crate::wire::quant::ADDRESS_LIMIT => Ok((start, end)),
        _ => Err(BindError::Range {
            port,
            address,
            span,
        }),
    }
}
