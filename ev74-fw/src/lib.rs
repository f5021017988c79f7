//! simak-ev74-fw: the EV74 firmware side of simak.
//!
//! `#![no_std]` without `alloc`; builds for 32-bit bare-metal targets such as
//! `thumbv7em-none-eabihf`. This crate is a skeleton until the EV74 Quant work lands: it
//! holds the capability table of the native entries the firmware is meant to advertise
//! (SPEC §7–§8) and reuses the numerics of `simak-core` verbatim.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// A native entry the firmware can advertise (SPEC §7–§8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capability {
    /// Native entry name.
    pub name: &'static str,
    /// Entry version.
    pub version: u16,
    /// Route number.
    pub route: u8,
}

/// The Quant v1 native entry (SPEC §7: route 47 = 0x2F).
pub const QUANT_V1: Capability = Capability {
    name: "simaai_kernels_ev74_quant_v1",
    version: 1,
    route: 0x2f,
};

/// The native entries this firmware build implements. Empty until the EV74 entries land:
/// a Runtime probing it must fail closed (SPEC §8).
pub const CAPABILITIES: &[Capability] = &[];

/// Looks up an advertised entry by route.
pub fn capability(route: u8) -> Option<&'static Capability> {
    CAPABILITIES.iter().find(|c| c.route == route)
}

#[cfg(test)]
mod test {
    #[test]
    fn nothing_is_advertised_before_the_entries_exist() {
        assert_eq!(super::capability(super::QUANT_V1.route), None);
    }
}
