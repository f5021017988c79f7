//! The capability table: native entries this firmware implements and advertises (SPEC §8).
//!
//! A Runtime probes the table after connecting; a missing entry is an error, never a reason
//! to reinterpret a packet for another entry or to fall back to the A65.

use simak_core::ev74::{
    CastTess, Detess, DetessCast, DetessDequant, ENTRIES, Entry, NativeEntry, Preproc, Quant,
};

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
        /// `simaai_kernels_ev74_detess_v1`, route 0x31.
        const DETESS_V1 = 1 << 2;
        /// `simaai_kernels_ev74_detesscast_v1`, route 0x32.
        const DETESSCAST_V1 = 1 << 3;
        /// `simaai_kernels_ev74_detessdequant_v1`, route 0x33.
        const DETESSDEQUANT_V1 = 1 << 4;
        /// Preproc v1 (route 0x34).
        const PREPROC_V1 = 1 << 5;
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
    /// The capability of the table's entry `entry` with bit `flag`.
    pub const fn from_entry(entry: &Entry, flag: Capabilities) -> Capability {
        Capability {
            name: entry.name,
            version: entry.version,
            route: entry.route,
            flag,
        }
    }

    /// The capability of native entry `E` with bit `flag`.
    pub const fn of<E: NativeEntry>(flag: Capabilities) -> Capability {
        Capability::from_entry(&Entry::of::<E>(), flag)
    }

    /// Whether this is entry `E` (name, version and route).
    pub fn is<E: NativeEntry>(&self) -> bool {
        self.name == E::ENTRY_NAME && self.version == E::VERSION && self.route == E::ROUTE
    }
}

/// The routes this firmware build implements: each has a `FirmwareEntry` impl and a
/// dispatch arm. A row of the library's [`ENTRIES`] whose route is not here would be
/// neither in [`TABLE`] nor advertised: a Runtime that needs it fails closed at its
/// capability probe, and a command for it is an unknown route.
pub const IMPLEMENTED: [u8; 6] = [
    Quant::ROUTE,
    CastTess::ROUTE,
    Detess::ROUTE,
    DetessCast::ROUTE,
    DetessDequant::ROUTE,
    Preproc::ROUTE,
];

/// Number of implemented entries.
const COUNT: usize = IMPLEMENTED.len();

/// Whether `route` is in [`IMPLEMENTED`].
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn implemented(route: u8) -> bool {
    let mut i = 0;
    while i < IMPLEMENTED.len() {
        if IMPLEMENTED[i] == route {
            return true;
        }
        i += 1;
    }
    false
}

/// One capability per implemented row of the library's entry table, in its order; row `i`
/// of [`ENTRIES`] has bit `i` (so a bit never changes meaning when an entry is implemented).
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn table() -> [Capability; COUNT] {
    let mut out = [Capability {
        name: "",
        version: 0,
        route: 0,
        flag: Capabilities::empty(),
    }; COUNT];
    let (mut i, mut k) = (0, 0);
    while i < ENTRIES.len() {
        if implemented(ENTRIES[i].route) {
            out[k] = Capability::from_entry(&ENTRIES[i], Capabilities::from_bits_retain(1 << i));
            k += 1;
        }
        i += 1;
    }
    assert!(k == COUNT, "every implemented route is a row of ENTRIES");
    out
}

const TABLE_ROWS: [Capability; COUNT] = table();

/// Every native entry this firmware build implements: the rows of the library's
/// [`ENTRIES`] whose route is in [`IMPLEMENTED`], row `i` of [`ENTRIES`] with bit `i` of
/// [`Capabilities`].
pub const TABLE: &[Capability] = &TABLE_ROWS;

/// The Quant v1 native entry (SPEC §7: route 47 = 0x2F).
pub const QUANT_V1: Capability = Capability::of::<Quant>(Capabilities::QUANT_V1);

/// The CastTess v1 native entry (SPEC §7: route 48 = 0x30).
pub const CASTTESS_V1: Capability = Capability::of::<CastTess>(Capabilities::CASTTESS_V1);

/// The Detess v1 native entry (route 49 = 0x31).
pub const DETESS_V1: Capability = Capability::of::<Detess>(Capabilities::DETESS_V1);

/// The DetessCast v1 native entry (route 50 = 0x32).
pub const DETESSCAST_V1: Capability = Capability::of::<DetessCast>(Capabilities::DETESSCAST_V1);

/// The DetessDequant v1 native entry (route 51 = 0x33).
pub const DETESSDEQUANT_V1: Capability =
    Capability::of::<DetessDequant>(Capabilities::DETESSDEQUANT_V1);

/// The Preproc v1 native entry (route 52 = 0x34).
pub const PREPROC_V1: Capability = Capability::of::<Preproc>(Capabilities::PREPROC_V1);

/// The named bits are the table's.
#[allow(clippy::indexing_slicing)]
const _: () = assert!(
    TABLE_ROWS[0].route == QUANT_V1.route
        && TABLE_ROWS[0].flag.bits() == QUANT_V1.flag.bits()
        && TABLE_ROWS[1].route == CASTTESS_V1.route
        && TABLE_ROWS[1].flag.bits() == CASTTESS_V1.flag.bits()
        && TABLE_ROWS[2].route == DETESS_V1.route
        && TABLE_ROWS[2].flag.bits() == DETESS_V1.flag.bits()
        && TABLE_ROWS[3].route == DETESSCAST_V1.route
        && TABLE_ROWS[3].flag.bits() == DETESSCAST_V1.flag.bits()
        && TABLE_ROWS[4].route == DETESSDEQUANT_V1.route
        && TABLE_ROWS[4].flag.bits() == DETESSDEQUANT_V1.flag.bits()
        && TABLE_ROWS[5].route == PREPROC_V1.route
        && TABLE_ROWS[5].flag.bits() == PREPROC_V1.flag.bits()
        && ENTRIES.len() <= 32
);

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
