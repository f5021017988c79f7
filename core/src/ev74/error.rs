//! The EV74 codec's own refusals, shared by every entry: a plan the device cannot
//! represent ([`RepresentError`]) and device regions `bind` refuses ([`BindError`]).

use core::fmt;

use crate::error::Port;
use crate::ev74::DeviceRegion;
use crate::wire::prefix::ADDRESS_LIMIT;

/// Why a plan cannot run on the EV74 (SPEC §6: a backend limit, not a change to the
/// mathematical contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RepresentError {
    /// A port's span (accessed, or physical for a tiled output) does not fit the 32-bit
    /// device domain.
    Span {
        /// Port.
        port: Port,
        /// Span in bytes.
        span: u64,
    },
}

impl RepresentError {
    /// The stable numeric code (`docs/errors.md`, 0x300..=0x30f).
    pub const fn code(&self) -> u32 {
        match *self {
            RepresentError::Span {
                port: Port::Input, ..
            } => 0x301,
            RepresentError::Span {
                port: Port::Output, ..
            } => 0x302,
        }
    }
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

/// Why `bind` refused device regions, or `relocate` its relocation table. No packet was
/// produced.
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
    /// A region is smaller than the port's accessed (or physical) span.
    Capacity {
        /// Port.
        port: Port,
        /// Accessed span in bytes.
        required: u64,
        /// Region capacity in bytes.
        found: u64,
    },
    /// An address is not aligned as the port requires.
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
    /// A relocation names a byte offset of the descriptor that is not an address slot (24
    /// for the input, 32 for the output).
    UnknownSlot {
        /// Byte offset in the descriptor.
        slot: usize,
    },
    /// A relocation table names a port's address slot twice.
    DuplicateRelocation {
        /// Port.
        port: Port,
    },
}

impl BindError {
    /// The stable numeric code (`docs/errors.md`): a rule with a descriptor twin has the
    /// twin's number, the others are in 0x310..=0x31f.
    pub const fn code(&self) -> u32 {
        match *self {
            BindError::PacketMismatch => 0x310,
            BindError::Unbound { port: Port::Input } => 38,
            BindError::Unbound { port: Port::Output } => 39,
            BindError::Capacity {
                port: Port::Input, ..
            } => 0x311,
            BindError::Capacity {
                port: Port::Output, ..
            } => 0x312,
            BindError::Misaligned {
                port: Port::Input, ..
            } => 36,
            BindError::Misaligned {
                port: Port::Output, ..
            } => 50,
            BindError::Range {
                port: Port::Input, ..
            } => 34,
            BindError::Range {
                port: Port::Output, ..
            } => 35,
            BindError::Overlap => 37,
            BindError::UnknownSlot { .. } => 0x313,
            BindError::DuplicateRelocation { port: Port::Input } => 0x314,
            BindError::DuplicateRelocation { port: Port::Output } => 0x315,
        }
    }
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
            BindError::UnknownSlot { slot } => write!(
                f,
                "relocation at byte {slot} of the descriptor is not an address slot (24 input, 32 output)"
            ),
            BindError::DuplicateRelocation { port } => {
                write!(f, "the relocation table names the {port} slot twice")
            }
        }
    }
}

impl core::error::Error for BindError {}

/// Checks one port's region for `bind` (SPEC §6): nonzero address, capacity ≥ `span` bytes,
/// address aligned to `align` bytes, address + span ≤ 2^32. Returns the accessed bus range
/// `[start, end)`.
pub(crate) fn check_region(
    port: Port,
    span: u64,
    region: DeviceRegion,
    align: u64,
) -> Result<(u64, u64), BindError> {
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
        Some(end) if end <= ADDRESS_LIMIT => Ok((start, end)),
        _ => Err(BindError::Range {
            port,
            address,
            span,
        }),
    }
}
