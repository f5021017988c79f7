//! The capability table: native entries this firmware implements and advertises (SPEC §8).
//!
//! A Runtime probes the table after connecting; a missing entry is an error, never a reason
//! to reinterpret a packet for another entry or to fall back to the A65.

use simak_core::ev74::{CastTess, NativeEntry, Quant};

/// Advertised-entry flag word: one bit per native entry of [`TABLE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Capabilities(u32);

bitflags::bitflags! {
    impl Capabilities: u32 {
        /// `simaai_kernels_ev74_quant_v1`, route 0x2F.
        const QUANT_V1 = 1 << 0;
        /// `simaai_kernels_ev74_casttess_v1`, route 0x30.
        const CASTTESS_V1 = 1 << 1;
    }
}

/// A native entry the firmware can advertise (SPEC §7–§8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Capability {
    /// Native entry name.
    pub name: &'static str,
    /// Entry version.
    pub version: u16,
    /// Route number.
    pub route: u8,
    /// The entry's bit in [`Capabilities`].
    pub flag: Capabilities,
}

impl Capability {
    /// The capability of native entry `E` with bit `flag`.
    pub const fn of<E: NativeEntry>(flag: Capabilities) -> Capability {
        Capability {
            name: E::NAME,
            version: E::VERSION,
            route: E::ROUTE,
            flag,
        }
    }

    /// Whether this is entry `E` (name, version and route).
    pub fn is<E: NativeEntry>(&self) -> bool {
        self.name == E::NAME && self.version == E::VERSION && self.route == E::ROUTE
    }
}

/// The Quant v1 native entry (SPEC §7: route 47 = 0x2F).
pub const QUANT_V1: Capability = Capability::of::<Quant>(Capabilities::QUANT_V1);

/// The CastTess v1 native entry (SPEC §7: route 48 = 0x30).
pub const CASTTESS_V1: Capability = Capability::of::<CastTess>(Capabilities::CASTTESS_V1);

/// Every native entry this firmware build implements.
pub const TABLE: &[Capability] = &[QUANT_V1, CASTTESS_V1];

/// The native entries advertised by a default build (all of [`TABLE`]).
pub const CAPABILITIES: &[Capability] = TABLE;

/// Looks up an implemented entry by route.
pub fn capability(route: u8) -> Option<&'static Capability> {
    TABLE.iter().find(|c| c.route == route)
}

/// The entries of [`TABLE`] whose flag is in `advertised`.
pub fn advertised(advertised: Capabilities) -> impl Iterator<Item = &'static Capability> {
    TABLE.iter().filter(move |c| advertised.contains(c.flag))
}
