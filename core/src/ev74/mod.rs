//! EV74 host codec and device-side decoder, written once for every native entry.
//!
//! Contract between layers (SPEC §6, §7): a backend-neutral checked plan goes through
//! [`check_inference`], which adds device representability (spans in the 32-bit domain) and
//! gives a [`DevicePlan`] → [`encode_relocatable`] gives an immutable
//! `Packet<E, Encoded>` with zero address slots → [`bind`] with resolved [`DeviceRegion`]s
//! gives a new `Packet<E, Bound>` (the encoded packet stays reusable), or [`relocate`] with
//! a table of [`Relocation`]s (address slot 24/32 → region) that then calls `bind` → the
//! Runtime submits it. On the device, [`decode`] rechecks every byte before a numerical entry is chosen.
//!
//! What differs between entries is one [`NativeEntry`] impl on the op's marker (name,
//! version, route, descriptor and representation types, both ports by role, spans,
//! lowering, parsing): [`Quant`], [`CastTess`], [`Detess`], [`DetessCast`] and
//! [`DetessDequant`], the markers of [`crate::ops`]. The plan
//! names its op, so [`check_inference`] infers the entry from the plan it is given. Each
//! entry's module ([`quant`], [`casttess`], [`detess`] for the three Detess-family entries)
//! names the items for its entry
//! (`quant::check_inference`, `quant::Packet<S>`, ...). [`ENTRIES`] is the one table of
//! entries as data, with [`entry_of`] (which entry a descriptor is) and [`verdict`] (the
//! device decoder's answer).
//!
//! A bound packet cannot be bound again, and an encoded packet is not a bound one:
//!
//! ```compile_fail
//! use simak_core::ev74::{self, DeviceRegion, Quant};
//! fn rebind(plan: &ev74::DevicePlan<Quant>, r: DeviceRegion) {
//!     let encoded = ev74::encode_relocatable(plan);
//!     let bound = ev74::bind(plan, &encoded, r, r).unwrap();
//!     let _ = ev74::bind(plan, &bound, r, r); // Packet<E, Bound> is not Packet<E, Encoded>
//! }
//! ```
//!
//! A bound packet's address is read only from a bound packet:
//!
//! ```compile_fail
//! use simak_core::ev74::{self, CastTess};
//! fn address(plan: &ev74::DevicePlan<CastTess>) -> u32 {
//!     ev74::encode_relocatable(plan).input_address() // only Packet<E, Bound> has addresses
//! }
//! ```

use core::fmt;
use core::marker::PhantomData;

use crate::dtype::DType;
use crate::error::Port;
use crate::ops::{Op, OpPlan};
use crate::state::{Bound, Encoded, State};
use crate::wire::fields::Fields;
use crate::wire::prefix::{Format, Prefix, PrefixRepr, RawDescriptor};
use crate::wire::rules::{DecodeCode, DecodeError};

pub mod casttess;
pub mod detess;
mod error;
pub mod preproc;
pub mod quant;
mod relocate;
#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod suite;
mod table;

pub use casttess::CastTess;
pub use detess::{Detess, DetessCast, DetessDequant};
pub use error::{BindError, RepresentError};
pub use preproc::Preproc;
pub use quant::Quant;
pub use relocate::{Relocation, address_slot, relocate, slot_port};
pub use table::{
    ENTRIES, Entry, MAX_DESCRIPTOR_SIZE, Verdict, entry_by_route, entry_of, entry_or_first,
    route_index, verdict, verdict_of,
};

use error::check_region;

/// Largest span of a port on the device, in bytes (the 32-bit domain less address 0,
/// which means unbound).
pub const MAX_SPAN: u64 = u32::MAX as u64;

mod sealed {
    pub trait Sealed {}
}

pub(crate) use sealed::Sealed;

/// A native EV74 entry: everything the codec, the simulator, the Runtime and the firmware
/// need to know about one operation's descriptor. Implemented by the operation's marker
/// ([`crate::ops::Quant`], [`crate::ops::CastTess`], the three Detess-family ops): the
/// entry's plan is the op's plan
/// (`<E as Op>::Plan`), so a generic function given a plan infers the entry. Sealed.
///
/// A new entry is one impl of this trait (plus its wire tail in `crate::wire`, one row of
/// [`ENTRIES`] and its kernels); every function of this module, the simulator's `run_sim`,
/// the Runtime's `submit` and the firmware's dispatch are generic over it. Each port is
/// described by its role in [`NativeEntry::FORMAT`] (`docs/contract.md` §7): neither the
/// codec nor the prefix assumes which one is strided.
pub trait NativeEntry: Op + Sealed {
    /// Native entry name, e.g. `simaai_kernels_ev74_quant_v1` (SPEC §7).
    const ENTRY_NAME: &'static str;
    /// Native entry version.
    const VERSION: u16;
    /// Route number.
    const ROUTE: u8;
    /// A short title, e.g. `Quant v1`.
    const ENTRY_TITLE: &'static str;
    /// The raw descriptor (`wire::<op>::…DescriptorV1`), which gives the wire items below.
    type Descriptor: RawDescriptor<Repr = Self::Repr, Bytes = Self::Bytes>;
    /// The validated descriptor (`wire::<op>::…Repr`).
    type Repr: Copy + PartialEq + fmt::Debug;
    /// The descriptor's bytes, `[u8; DESCRIPTOR_SIZE]`.
    type Bytes: Copy + Eq + AsRef<[u8]> + fmt::Debug;
    /// Size of the descriptor in bytes.
    const DESCRIPTOR_SIZE: usize = <Self::Descriptor as RawDescriptor>::SIZE;
    /// The descriptor's format: magic, size, flag bits and both ports by role.
    const FORMAT: Format = <Self::Descriptor as RawDescriptor>::FORMAT;
    /// The descriptor's magic word (offset 0).
    const MAGIC: [u8; 4] = Self::FORMAT.magic;
    /// The codes a descriptor of this entry can be rejected with.
    const CODES: &'static [DecodeCode] = <Self::Descriptor as RawDescriptor>::CODES;

    /// The dtype of the plan's prefix port ([`Format::prefix_port`]), the code at offset 8.
    fn dtype(plan: &Self::Plan) -> DType;
    /// Input span in bytes (0 when empty): accessed (strided) or physical (tiled), as
    /// [`Format::input`] says.
    fn input_span(plan: &Self::Plan) -> u64;
    /// Output span in bytes (0 when empty): accessed (strided) or physical (tiled), as
    /// [`Format::output`] says.
    fn output_span(plan: &Self::Plan) -> u64;
    /// Alignment of the input address in bytes ([`Format::input`]).
    fn input_align(plan: &Self::Plan) -> u64 {
        Self::FORMAT.input.align_for(Self::dtype(plan))
    }
    /// Alignment of the output address in bytes ([`Format::output`]).
    fn output_align(plan: &Self::Plan) -> u64 {
        Self::FORMAT.output.align_for(Self::dtype(plan))
    }
    /// Whether the plan is a no-op (never submitted): no elements.
    fn is_empty(plan: &Self::Plan) -> bool {
        OpPlan::is_empty(plan)
    }
    /// The plan's relocatable wire representation (address slots zero).
    fn lower(plan: &Self::Plan) -> Self::Repr;
    /// The shared fields of a representation.
    fn prefix(repr: &Self::Repr) -> &PrefixRepr {
        Self::Descriptor::repr_prefix(repr)
    }
    /// The shared fields of a representation, to set its address slots.
    fn prefix_mut(repr: &mut Self::Repr) -> &mut PrefixRepr {
        Self::Descriptor::repr_prefix_mut(repr)
    }
    /// The descriptor bytes of a representation.
    fn to_bytes(repr: &Self::Repr) -> Self::Bytes {
        Self::Descriptor::repr_bytes(repr)
    }
    /// Casts exactly [`NativeEntry::DESCRIPTOR_SIZE`] bytes and checks every rule.
    ///
    /// # Errors
    ///
    /// The first failing rule.
    fn parse(bytes: &[u8]) -> Result<Self::Repr, DecodeError> {
        Self::Descriptor::parse_exact(bytes)
    }
    /// Views bytes as the raw descriptor (infallible: the array is its size, alignment 1).
    fn view(bytes: &Self::Bytes) -> &Self::Descriptor {
        Self::Descriptor::view(bytes)
    }
    /// The raw prefix of a raw descriptor.
    fn raw_prefix(raw: &Self::Descriptor) -> &Prefix {
        raw.raw_prefix()
    }
    /// Every field of `bytes` viewed as the raw descriptor, with its offset; `None` unless
    /// `bytes` is exactly [`NativeEntry::DESCRIPTOR_SIZE`] long.
    fn fields(bytes: &[u8]) -> Option<Fields> {
        Self::Descriptor::listing(bytes)
    }
}

/// A plan of entry `E` checked for the EV74 (SPEC §6): its spans fit the 32-bit domain.
/// Holds the backend-neutral plan and its relocatable wire representation.
pub struct DevicePlan<E: NativeEntry> {
    plan: E::Plan,
    repr: E::Repr,
}

// Manual impls: derives would demand the (never built) entry markers implement them too.
impl<E: NativeEntry> Clone for DevicePlan<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E: NativeEntry> Copy for DevicePlan<E> {}
impl<E: NativeEntry> PartialEq for DevicePlan<E> {
    fn eq(&self, other: &Self) -> bool {
        self.plan == other.plan && self.repr == other.repr
    }
}
impl<E: NativeEntry> Eq for DevicePlan<E> where E::Plan: Eq {}
impl<E: NativeEntry> fmt::Debug for DevicePlan<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DevicePlan")
            .field("entry", &E::ENTRY_NAME)
            .field("plan", &self.plan)
            .finish()
    }
}

impl<E: NativeEntry> DevicePlan<E> {
    /// The backend-neutral plan.
    pub const fn plan(&self) -> &E::Plan {
        &self.plan
    }

    /// The relocatable wire representation (address slots zero).
    pub const fn repr(&self) -> &E::Repr {
        &self.repr
    }

    /// Whether the call is a no-op (never submitted).
    pub fn is_empty(&self) -> bool {
        E::is_empty(&self.plan)
    }

    /// Input accessed span in bytes (0 when empty).
    pub fn input_span(&self) -> u64 {
        E::input_span(&self.plan)
    }

    /// Output span in bytes (0 when empty): accessed, or physical (the `MlaTiled` capacity)
    /// for a tiled output.
    pub fn output_span(&self) -> u64 {
        E::output_span(&self.plan)
    }
}

/// Checks that `plan` is representable on the EV74: both spans (accessed, or physical for
/// a tiled port) ≤ [`MAX_SPAN`] bytes (SPEC §6). Reads no tensor data. The entry is the
/// plan's op ([`OpPlan::Op`]).
///
/// # Errors
///
/// [`RepresentError::Span`] naming the first port whose span is too large.
pub fn check_inference<P>(plan: &P) -> Result<DevicePlan<P::Op>, RepresentError>
where
    P: OpPlan,
    P::Op: NativeEntry,
{
    check_entry::<P::Op>(plan)
}

/// [`check_inference`] at entry `E`.
fn check_entry<E: NativeEntry>(plan: &E::Plan) -> Result<DevicePlan<E>, RepresentError> {
    for (port, span) in [
        (Port::Input, E::input_span(plan)),
        (Port::Output, E::output_span(plan)),
    ] {
        if span > MAX_SPAN {
            return Err(RepresentError::Span { port, span });
        }
    }
    Ok(DevicePlan {
        plan: *plan,
        repr: E::lower(plan),
    })
}

/// A descriptor of entry `E` in lifecycle state `S` ([`Encoded`] or [`Bound`]).
///
/// Immutable: binding makes a new packet. Only this module's codec makes packets.
pub struct Packet<E: NativeEntry, S: State> {
    bytes: E::Bytes,
    state: PhantomData<fn() -> S>,
}

// Manual impls: derives would demand the (never built) markers implement them too.
impl<E: NativeEntry, S: State> Clone for Packet<E, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E: NativeEntry, S: State> Copy for Packet<E, S> {}
impl<E: NativeEntry, S: State> PartialEq for Packet<E, S> {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}
impl<E: NativeEntry, S: State> Eq for Packet<E, S> {}

impl<E: NativeEntry, S: State> Packet<E, S> {
    /// A packet of `bytes`; only the codec of this module makes packets.
    const fn new(bytes: E::Bytes) -> Self {
        Packet {
            bytes,
            state: PhantomData,
        }
    }

    /// The descriptor bytes (little-endian; 224 for Quant and the Detess-family entries,
    /// 216 for CastTess).
    pub const fn as_bytes(&self) -> &E::Bytes {
        &self.bytes
    }

    /// The raw view of the descriptor.
    pub fn descriptor(&self) -> &E::Descriptor {
        E::view(&self.bytes)
    }

    /// The lifecycle state name (`encoded` or `bound`).
    pub const fn state(&self) -> &'static str {
        S::NAME
    }

    /// Whether the packet is a no-op (element count 0): an empty packet is never submitted.
    pub fn is_empty(&self) -> bool {
        E::raw_prefix(self.descriptor()).elements.get() == 0
    }

    /// Input accessed span in bytes, as the descriptor states it.
    pub fn input_span(&self) -> u64 {
        E::raw_prefix(self.descriptor()).input_span.get()
    }

    /// Output span in bytes, as the descriptor states it.
    pub fn output_span(&self) -> u64 {
        E::raw_prefix(self.descriptor()).output_span.get()
    }
}

impl<E: NativeEntry, S: State> fmt::Debug for Packet<E, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packet")
            .field("entry", &E::ENTRY_NAME)
            .field("state", &S::NAME)
            .field("descriptor", self.descriptor())
            .finish()
    }
}

impl<E: NativeEntry> Packet<E, Bound> {
    /// Input bus address.
    pub fn input_address(&self) -> u32 {
        u32::try_from(E::raw_prefix(self.descriptor()).input_address.get()).unwrap_or(0)
    }

    /// Output bus address.
    pub fn output_address(&self) -> u32 {
        u32::try_from(E::raw_prefix(self.descriptor()).output_address.get()).unwrap_or(0)
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

/// Encodes `plan` as a relocatable packet: every field set, address slots zero. Infallible
/// once the plan passed [`check_inference`].
pub fn encode_relocatable<E: NativeEntry>(plan: &DevicePlan<E>) -> Packet<E, Encoded> {
    Packet::new(E::to_bytes(&plan.repr))
}

/// Binds an encoded packet to device regions, giving a new bound packet (SPEC §6). The
/// encoded packet is untouched and can be bound again.
///
/// Checks, in order: the packet was encoded from `plan`; for a nonempty plan, each port
/// (input, then output) has a nonzero address, capacity ≥ its span in bytes (the output's
/// accessed or physical span), an address aligned as the port requires
/// ([`NativeEntry::input_align`], [`NativeEntry::output_align`]: the element size; 16 for
/// CastTess's tiled output), address + span ≤ 2^32; then the two
/// accessed ranges do not overlap. An empty plan binds any regions (nothing is accessed).
///
/// # Errors
///
/// [`BindError::PacketMismatch`], [`BindError::Unbound`], [`BindError::Capacity`],
/// [`BindError::Misaligned`], [`BindError::Range`], [`BindError::Overlap`].
pub fn bind<E: NativeEntry>(
    plan: &DevicePlan<E>,
    encoded: &Packet<E, Encoded>,
    input: DeviceRegion,
    output: DeviceRegion,
) -> Result<Packet<E, Bound>, BindError> {
    check_packet(plan, encoded)?;
    bind_regions(plan, input, output)
}

/// `bind`'s first rule: `encoded` is the relocatable encoding of `plan`.
fn check_packet<E: NativeEntry>(
    plan: &DevicePlan<E>,
    encoded: &Packet<E, Encoded>,
) -> Result<(), BindError> {
    if *encoded.as_bytes() == E::to_bytes(&plan.repr) {
        Ok(())
    } else {
        Err(BindError::PacketMismatch)
    }
}

/// `bind`'s region rules, then the bound packet: for a nonempty plan, each port (input,
/// then output) bound, capacity, alignment, range; then nonaliasing.
fn bind_regions<E: NativeEntry>(
    plan: &DevicePlan<E>,
    input: DeviceRegion,
    output: DeviceRegion,
) -> Result<Packet<E, Bound>, BindError> {
    if !plan.is_empty() {
        let p = &plan.plan;
        let (in_lo, in_hi) = check_region(Port::Input, E::input_span(p), input, E::input_align(p))?;
        let (out_lo, out_hi) =
            check_region(Port::Output, E::output_span(p), output, E::output_align(p))?;
        // An empty range (Preproc's frame when the output is all border) overlaps nothing.
        if in_lo < in_hi && out_lo < out_hi && in_lo < out_hi && out_lo < in_hi {
            return Err(BindError::Overlap);
        }
    }
    let mut repr = plan.repr;
    let prefix = E::prefix_mut(&mut repr);
    prefix.input_address = input.address;
    prefix.output_address = output.address;
    Ok(Packet::new(E::to_bytes(&repr)))
}

/// [`encode_relocatable`] then [`bind`].
///
/// # Errors
///
/// As [`bind`] (never [`BindError::PacketMismatch`]).
pub fn encode<E: NativeEntry>(
    plan: &DevicePlan<E>,
    input: DeviceRegion,
    output: DeviceRegion,
) -> Result<Packet<E, Bound>, BindError> {
    bind(plan, &encode_relocatable(plan), input, output)
}

/// Device-side decoding of a submitted packet (SPEC §7): every rule of the entry's parse
/// (`wire::prefix` gives the order), then both address slots bound for a nonempty packet.
/// Runs before any numerical entry is chosen; a rejected packet touches no memory.
///
/// # Errors
///
/// The first failing rule as a [`DecodeError`]: [`DecodeError::Length`] unless `bytes` is
/// exactly the descriptor's size, the rules of the parse, then [`DecodeError::Unbound`]
/// (input, then output).
pub fn decode<E: NativeEntry>(bytes: &[u8]) -> Result<E::Repr, DecodeError> {
    let repr = E::parse(bytes)?;
    let prefix = E::prefix(&repr);
    if !prefix.is_empty() {
        for (port, address) in [
            (Port::Input, prefix.input_address),
            (Port::Output, prefix.output_address),
        ] {
            if address == 0 {
                return Err(DecodeError::Unbound { port });
            }
        }
    }
    Ok(repr)
}
