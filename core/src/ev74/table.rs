//! The one table of native EV74 entries ([`ENTRIES`]), which entry a descriptor's bytes are
//! ([`entry_of`]) and the device decoder's verdict on them ([`verdict`]) (SPEC §7, §8).
//!
//! Every place that needs the set of entries as data reads this table: the CLI's
//! `packet decode`, the Python and C bindings' decoders, the firmware's capability table and
//! the simulator's cost model. A new entry is one row here.

use core::fmt;

use super::{CastTess, Detess, DetessCast, DetessDequant, NativeEntry, Preproc, Quant, decode};
use crate::ops::Op;
use crate::wire::fields::Fields;
use crate::wire::prefix::Format;
use crate::wire::rules::{DecodeCode, DecodeError};

/// The device's verdict on a descriptor's bytes (SPEC §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Verdict {
    /// Valid, both address slots zero: a relocatable packet (the device's `decode` would
    /// still refuse a nonempty one as unbound).
    Relocatable,
    /// Valid and bound: the device's `decode` accepts it.
    Bound,
    /// Rejected: the first failing rule.
    Invalid(DecodeError),
}

impl Verdict {
    /// The rejection, if any.
    pub const fn error(&self) -> Option<DecodeError> {
        match *self {
            Verdict::Invalid(e) => Some(e),
            Verdict::Relocatable | Verdict::Bound => None,
        }
    }
}

/// The verdict of entry `E`'s rules on `bytes`: every rule of the entry's parse; a packet
/// with both address slots zero is a valid relocatable packet, any other must pass the
/// device's [`decode`] (both slots bound for a nonempty packet).
pub fn verdict_of<E: NativeEntry>(bytes: &[u8]) -> Verdict {
    match E::parse(bytes) {
        Err(e) => Verdict::Invalid(e),
        Ok(r) if E::prefix(&r).input_address == 0 && E::prefix(&r).output_address == 0 => {
            Verdict::Relocatable
        }
        Ok(_) => match decode::<E>(bytes) {
            Ok(_) => Verdict::Bound,
            Err(e) => Verdict::Invalid(e),
        },
    }
}

/// One native entry as data: its facts and its listing and verdict functions (the generic
/// ones at that entry).
#[derive(Clone, Copy)]
pub struct Entry {
    /// Native entry name, e.g. `simaai_kernels_ev74_quant_v1`.
    pub name: &'static str,
    /// The op's name as the front-ends spell it, e.g. `quant` ([`Op::NAME`]).
    pub op: &'static str,
    /// A short title, e.g. `Quant v1`.
    pub title: &'static str,
    /// Entry version.
    pub version: u16,
    /// Route number.
    pub route: u8,
    /// The magic word at offset 0.
    pub magic: [u8; 4],
    /// Descriptor size in bytes.
    pub size: usize,
    /// The codes a descriptor of this entry can be rejected with.
    pub codes: &'static [DecodeCode],
    /// The descriptor's format: flag bits and both ports by role.
    pub format: Format,
    /// Every field of exactly `size` bytes, with its offset ([`NativeEntry::fields`]).
    pub fields: fn(&[u8]) -> Option<Fields>,
    /// The entry's verdict on any bytes ([`verdict_of`]).
    pub verdict: fn(&[u8]) -> Verdict,
}

impl Entry {
    /// The row of entry `E`.
    pub const fn of<E: NativeEntry>() -> Entry {
        Entry {
            name: E::ENTRY_NAME,
            op: <E as Op>::NAME,
            title: E::ENTRY_TITLE,
            version: E::VERSION,
            route: E::ROUTE,
            magic: E::MAGIC,
            size: E::DESCRIPTOR_SIZE,
            codes: E::CODES,
            format: E::FORMAT,
            fields: E::fields,
            verdict: verdict_of::<E>,
        }
    }

    /// Whether this is entry `E` (by route, which is unique in [`ENTRIES`]).
    pub const fn is<E: NativeEntry>(&self) -> bool {
        self.route == E::ROUTE
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.route == other.route
    }
}

impl Eq for Entry {}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("route", &self.route)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// Every native entry, in route order: the one list of them.
pub const ENTRIES: [Entry; 6] = [
    Entry::of::<Quant>(),
    Entry::of::<CastTess>(),
    Entry::of::<Detess>(),
    Entry::of::<DetessCast>(),
    Entry::of::<DetessDequant>(),
    Entry::of::<Preproc>(),
];

/// Bytes of the largest descriptor of any entry.
pub const MAX_DESCRIPTOR_SIZE: usize = {
    let mut max = 0;
    let mut i = 0;
    while i < ENTRIES.len() {
        #[allow(clippy::indexing_slicing)]
        let size = ENTRIES[i].size;
        if size > max {
            max = size;
        }
        #[allow(clippy::arithmetic_side_effects)]
        {
            i += 1;
        }
    }
    max
};

/// Routes and magic words identify an entry: no two rows share one. (Sizes may repeat: the
/// Detess-family entries share one layout; [`entry_of`] tells an entry by its size only
/// when no other row has that size.)
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn rows_are_distinct() -> bool {
    let mut i = 0;
    while i < ENTRIES.len() {
        let mut j = i + 1;
        while j < ENTRIES.len() {
            let (a, b) = (&ENTRIES[i], &ENTRIES[j]);
            let same_magic = a.magic[0] == b.magic[0]
                && a.magic[1] == b.magic[1]
                && a.magic[2] == b.magic[2]
                && a.magic[3] == b.magic[3];
            if a.route == b.route || same_magic {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

const _: () = assert!(rows_are_distinct(), "entries differ in route and magic");

/// The entry of route `route`, if any.
pub fn entry_by_route(route: u8) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.route == route)
}

/// The position of route `route` in [`ENTRIES`], if any.
pub const fn route_index(route: u8) -> Option<usize> {
    let mut i = 0;
    while i < ENTRIES.len() {
        #[allow(clippy::indexing_slicing)]
        if ENTRIES[i].route == route {
            return Some(i);
        }
        #[allow(clippy::arithmetic_side_effects)]
        {
            i += 1;
        }
    }
    None
}

/// Which entry a descriptor's bytes are: the entry whose magic word they start with, else
/// the one entry whose size they have (when exactly one row has it); `None` when neither
/// tells.
///
/// ```
/// use simak_core::ev74::{self, Verdict};
///
/// assert_eq!(ev74::ENTRIES.map(|e| e.route), [0x2f, 0x30, 0x31, 0x32, 0x33, 0x34]);
/// let entry = ev74::entry_of(b"SKCT").unwrap(); // by its magic, even truncated
/// assert_eq!((entry.title, entry.size), ("CastTess v1", 216));
/// assert_eq!(ev74::entry_of(&[0u8; 216]).unwrap().title, "CastTess v1"); // by its size
/// assert!(ev74::entry_of(&[0u8; 224]).is_none()); // Quant and the Detess entries share it
/// assert!(ev74::entry_of(b"XXXX").is_none());
/// assert!(matches!(ev74::verdict(&[0u8; 10]), Verdict::Invalid(_)));
/// ```
pub fn entry_of(bytes: &[u8]) -> Option<&'static Entry> {
    let magic = bytes.first_chunk::<4>();
    ENTRIES
        .iter()
        .find(|e| magic == Some(&e.magic))
        .or_else(|| {
            let mut sized = ENTRIES.iter().filter(|e| bytes.len() == e.size);
            match (sized.next(), sized.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        })
}

/// The entry to judge `bytes` by: [`entry_of`], else the first entry (Quant v1), whose
/// rules then name what is wrong.
pub fn entry_or_first(bytes: &[u8]) -> &'static Entry {
    let [first, ..] = &ENTRIES;
    entry_of(bytes).unwrap_or(first)
}

/// The device decoder's verdict on a descriptor's bytes: that of the entry
/// [`entry_or_first`] picks.
pub fn verdict(bytes: &[u8]) -> Verdict {
    (entry_or_first(bytes).verdict)(bytes)
}
