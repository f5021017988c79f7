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

use core::fmt;
use core::marker::PhantomData;

use crate::state::{Bound, State};

pub mod casttess;
pub mod quant;

mod sealed {
    pub trait Sealed {}
}

/// A descriptor format a [`Packet`] carries: the raw little-endian view of one entry's
/// descriptor (SPEC §7), `wire::quant::QuantDescriptorV1` (224 bytes) or
/// `wire::casttess::CastTessDescriptorV1` (216 bytes). Sealed: only those implement it.
pub trait Descriptor: fmt::Debug + sealed::Sealed + 'static {
    /// The descriptor's bytes: `[u8; SIZE]` of its format.
    type Bytes: Copy + Eq + AsRef<[u8]>;

    /// Views `bytes` as the descriptor. Infallible: the array is exactly the descriptor's
    /// size and both have alignment 1.
    fn view(bytes: &Self::Bytes) -> &Self;

    /// The input and output address slots (bus addresses; 0 = unbound).
    fn addresses(&self) -> (u64, u64);
}

/// A descriptor of format `D` in lifecycle state `S` ([`crate::state::Encoded`] or
/// [`Bound`]); each entry names its own as `ev74::<op>::Packet<S>`.
///
/// Immutable: binding makes a new packet.
pub struct Packet<D: Descriptor, S: State> {
    bytes: D::Bytes,
    state: PhantomData<S>,
}

// Manual impls: derives would demand the (never built) state markers implement them too.
impl<D: Descriptor, S: State> Clone for Packet<D, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<D: Descriptor, S: State> Copy for Packet<D, S> {}
impl<D: Descriptor, S: State> PartialEq for Packet<D, S> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}
impl<D: Descriptor, S: State> Eq for Packet<D, S> {}

impl<D: Descriptor, S: State> Packet<D, S> {
    /// A packet of `bytes`; only the codecs of this module make packets.
    const fn new(bytes: D::Bytes) -> Self {
        Packet {
            bytes,
            state: PhantomData,
        }
    }

    /// The descriptor bytes (little-endian; 224 for Quant, 216 for CastTess).
    pub const fn as_bytes(&self) -> &D::Bytes {
        &self.bytes
    }

    /// The raw view of the descriptor.
    pub fn descriptor(&self) -> &D {
        D::view(&self.bytes)
    }

    /// The lifecycle state name (`encoded` or `bound`).
    pub const fn state(&self) -> &'static str {
        S::NAME
    }
}

impl<D: Descriptor, S: State> fmt::Debug for Packet<D, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packet")
            .field("state", &S::NAME)
            .field("descriptor", self.descriptor())
            .finish()
    }
}

impl<D: Descriptor> Packet<D, Bound> {
    /// Input bus address.
    pub fn input_address(&self) -> u32 {
        u32::try_from(self.descriptor().addresses().0).unwrap_or(0)
    }

    /// Output bus address.
    pub fn output_address(&self) -> u32 {
        u32::try_from(self.descriptor().addresses().1).unwrap_or(0)
    }
}

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
