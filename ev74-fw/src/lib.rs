//! simak-ev74-fw: the EV74 firmware side of simak.
//!
//! `#![no_std]` without `alloc`, no `unsafe`; builds for 32-bit bare-metal targets such as
//! `thumbv7em-none-eabihf`. It reuses `simak-core` verbatim: the wire structs, the
//! device-side decoder and the exact Quant arithmetic.
//!
//! - [`capability`](mod@capability): the native entries (name, version, route) and which are advertised;
//! - [`device`]: the seams to hardware — [`DeviceMemory`] (a 32-bit bus address space),
//!   [`Dma`] (1D/2D transfers with completion events, per-worker local memory), [`Meter`]
//!   (the arithmetic each worker did, for a simulator's cost model) and [`Platform`] (the
//!   worker ring);
//! - [`work`]: coalescing, span kinds, work units and their partition (SPEC §8);
//! - [`tess`]: the CastTess work model — at most 16 tile classes, bands, channel panels and
//!   4 KiB physical blocks, weighted suffix tables and the carry cursor (SPEC §8);
//! - [`numerics`]: the 12 numerical entries with the 16-element fast path through an
//!   [`FpUnit`] model and the exact fallback;
//! - [`Firmware::dispatch`]: one command — route check, descriptor read and decode (every
//!   rule checked before a numerical entry is chosen), then execution: Quant v1 (route
//!   0x2F), CastTess v1 (route 0x30), the Detess-family entries (0x31..=0x33) or Preproc
//!   v1 (0x34).
//!
//! # Cargo features
//!
//! | feature | effect |
//! | --- | --- |
//! | `defmt` | derives `defmt::Format` on errors and reports, and turns on the log points |
//!
//! # Log points
//!
//! With the `defmt` feature the firmware logs its decisions through `defmt` (the platform
//! links a global logger): a refused or failed command with its route and status code
//! (`warn`), the chosen entry (name, version, route; `info`), the chosen path (Quant: span
//! kind, units, run, numerical entry and FP unit; CastTess: tasks, classes, band, the BF16
//! pixel packer; `debug`) and the work partition (workers launched, then each started
//! worker's unit range; `debug`). Without the feature every log point is compiled out:
//! no code, no strings, nothing evaluated.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

/// A `defmt` log point, compiled out without the `defmt` feature: `fw_log!(level, "format",
/// args…)` is `defmt::level!("format", args…)` when the feature is on and nothing
/// otherwise (the arguments are not evaluated).
macro_rules! fw_log {
    ($level:ident, $($arg:tt)+) => {
        #[cfg(feature = "defmt")]
        {
            ::defmt::$level!($($arg)+);
        }
    };
}

pub mod capability;
mod casttess;
pub mod detess;
pub mod device;
pub mod numerics;
pub mod preproc;
mod quant;
pub mod tess;
pub mod work;

use core::fmt;
use core::marker::PhantomData;

use simak_core::ev74::{
    self as codec, CastTess, Detess, DetessCast, DetessDequant, NativeEntry, Preproc, Quant,
};
use simak_core::wire::detess::DetessRepr;
use simak_core::wire::preproc::PreprocRepr;
use simak_core::wire::{CastTessRepr, DecodeError, QuantRepr};

pub use capability::{
    CAPABILITIES, CASTTESS_V1, Capabilities, Capability, DETESS_V1, DETESSCAST_V1,
    DETESSDEQUANT_V1, PREPROC_V1, QUANT_V1, capability,
};
pub use casttess::{
    DMA_MIN_ROW_BYTES, EXACT_WIDTH_MAX_PITCH, EXACT_WIDTH_MAX_PIXELS, EXACT_WIDTH_MIN_BAND,
    EXACT_WIDTH_MIN_PIXELS, RECT_MIN_BYTES,
};
pub use device::{
    ComputePath, DeviceMemory, Direction, Dma, Event, Fault, Meter, Platform, Transfer,
};
pub use numerics::{BlockStats, FlushToZero, FpUnit, Ieee};
pub use work::SpanKind;

/// A command as the dispatcher receives it: the native entry's route and version and where
/// its descriptor lives in device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Command {
    /// Route number (0x2F for Quant v1, 0x30 for CastTess v1).
    pub route: u8,
    /// Entry version the host encoded for.
    pub version: u16,
    /// Bus address of the descriptor.
    pub descriptor: u32,
    /// Descriptor length in bytes.
    pub length: u32,
}

impl Command {
    /// A command of native entry `E` for a descriptor at bus address `descriptor`.
    pub const fn of<E: NativeEntry>(descriptor: u32) -> Command {
        Command {
            route: E::ROUTE,
            version: E::VERSION,
            descriptor,
            // Descriptors are a few hundred bytes.
            length: E::DESCRIPTOR_SIZE as u32,
        }
    }

    /// A Quant v1 command ([`Command::of`]).
    pub const fn quant_v1(descriptor: u32) -> Command {
        Command::of::<Quant>(descriptor)
    }

    /// A CastTess v1 command ([`Command::of`]).
    pub const fn casttess_v1(descriptor: u32) -> Command {
        Command::of::<CastTess>(descriptor)
    }
}

/// Why the firmware refused or aborted a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FwError {
    /// The descriptor was rejected; nothing was written.
    Decode(DecodeError),
    /// No implemented entry has this route.
    UnknownRoute {
        /// Route.
        route: u8,
    },
    /// The entry exists but this firmware build does not advertise it.
    NotAdvertised {
        /// Route.
        route: u8,
    },
    /// The command's version is not the entry's.
    Version {
        /// Route.
        route: u8,
        /// Version in the command.
        found: u16,
    },
    /// The command's descriptor length is not the entry's descriptor size.
    DescriptorLength {
        /// Length in the command.
        found: u32,
    },
    /// The platform's ring is not 1 to 4 workers.
    Workers {
        /// Configured ring size.
        configured: usize,
    },
    /// A worker's local memory is below the two-slot budget.
    LocalMemory {
        /// Bytes required.
        required: u32,
        /// Bytes available.
        available: u32,
    },
    /// A memory access or DMA command faulted.
    Fault(Fault),
    /// An internal invariant failed (a firmware bug, not bad input).
    Internal,
}

impl FwError {
    /// The numeric status reported across the firmware boundary (`docs/errors.md`): a
    /// decode rejection keeps its rule's code (1..=255, one number space for every entry);
    /// firmware errors are 0x100 and up. 0 is success.
    pub const fn code(&self) -> u32 {
        match self {
            FwError::Decode(e) => e.code(),
            FwError::UnknownRoute { .. } => 0x101,
            FwError::NotAdvertised { .. } => 0x102,
            FwError::Version { .. } => 0x103,
            FwError::DescriptorLength { .. } => 0x104,
            FwError::Workers { .. } => 0x105,
            FwError::LocalMemory { .. } => 0x106,
            FwError::Fault(_) => 0x107,
            FwError::Internal => 0x1ff,
        }
    }
}

impl From<Fault> for FwError {
    fn from(f: Fault) -> Self {
        FwError::Fault(f)
    }
}

impl From<DecodeError> for FwError {
    fn from(e: DecodeError) -> Self {
        FwError::Decode(e)
    }
}

impl fmt::Display for FwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FwError::Decode(e) => write!(f, "descriptor rejected: {e}"),
            FwError::UnknownRoute { route } => write!(f, "no entry has route 0x{route:02x}"),
            FwError::NotAdvertised { route } => {
                write!(f, "entry of route 0x{route:02x} is not advertised")
            }
            FwError::Version { route, found } => {
                write!(f, "route 0x{route:02x} has no version {found}")
            }
            FwError::DescriptorLength { found } => {
                write!(f, "descriptor length {found} does not match the entry")
            }
            FwError::Workers { configured } => {
                write!(f, "worker ring of {configured} is outside 1..=4")
            }
            FwError::LocalMemory {
                required,
                available,
            } => write!(
                f,
                "local memory of {available} bytes is below the {required}-byte budget"
            ),
            FwError::Fault(fault) => write!(f, "device fault: {fault}"),
            FwError::Internal => f.write_str("internal firmware error"),
        }
    }
}

impl core::error::Error for FwError {}

/// What a CastTess command did (all zero for Quant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TessStats {
    /// Tile classes that occur (at most 16).
    pub classes: u8,
    /// Pixel-band tasks run.
    pub band_tasks: u64,
    /// Channel-panel tasks run.
    pub panel_tasks: u64,
    /// 4 KiB physical-block fallback tasks run.
    pub block_tasks: u64,
    /// Source DMA transfers started.
    pub source_dma: u64,
    /// Source rows read with direct loads (rows under [`DMA_MIN_ROW_BYTES`] that neither
    /// form an eligible rectangle nor take the BF16 exact-width gather).
    pub source_direct_rows: u64,
    /// Output DMA transfers started.
    pub output_dma: u64,
    /// Band tasks that took the whole-panel H-contiguous path (counted in
    /// [`TessStats::band_tasks`] too; SPEC §8 "H-contiguous panels").
    pub hcontig_tasks: u64,
    /// Source runs of rows under [`DMA_MIN_ROW_BYTES`] moved by one 2D DMA command because
    /// they form a rectangle of at least 128 bytes (counted in [`TessStats::source_dma`]
    /// too; SPEC §8 "rectangle choice"): strided pixels of one row, several whole short
    /// rows of a band, or a run of strided channels.
    pub rectangle_runs: u64,
    /// Strided BF16 single-channel rows of 16 to 63 pixels moved by one exact-width 2D DMA
    /// command each (counted in [`TessStats::source_dma`] too; SPEC §8 "BF16 exact-width
    /// gathers").
    pub exact_width_rows: u64,
    /// Band tasks that staged complete source pixels and picked their channels locally
    /// (counted in [`TessStats::band_tasks`] too; SPEC §8 "Staged complete-pixel bands").
    pub staged_tasks: u64,
    /// Staged band tasks packed by the metadata-selected BF16 pixel packer (counted in
    /// [`TessStats::staged_tasks`] too; SPEC §8).
    pub bf16_pixel_tasks: u64,
    /// The Detess-family entries: output rows written with direct stores (rows under 16
    /// bytes that form no 128-byte rectangle).
    pub output_direct: u64,
}

/// What one command did.
///
/// For CastTess: `kind` is [`SpanKind::Dma`] (outputs always leave through the local
/// slots), `units` counts tasks, `run` is the largest regular band or panel in stored
/// values, `stats` is zero and [`Report::tess`] has the details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Report {
    /// Span kind chosen.
    pub kind: SpanKind,
    /// Work units (CastTess: tasks).
    pub units: u64,
    /// Elements per contiguous row (1 for scatter; CastTess: stored values per band).
    pub run: u64,
    /// Workers launched (1, or the whole ring).
    pub launched: usize,
    /// Fast/exact block and tail tallies.
    pub stats: BlockStats,
    /// DMA transfers started.
    pub transfers: u64,
    /// CastTess tasks and data movement (zero for Quant).
    pub tess: TessStats,
}

impl Report {
    /// The report of an empty (no-op) packet.
    const fn empty() -> Report {
        Report {
            kind: SpanKind::Scatter,
            units: 0,
            run: 0,
            launched: 0,
            stats: BlockStats {
                fast: 0,
                exact: 0,
                tail: 0,
            },
            transfers: 0,
            tess: TessStats {
                classes: 0,
                band_tasks: 0,
                panel_tasks: 0,
                block_tasks: 0,
                source_dma: 0,
                source_direct_rows: 0,
                output_dma: 0,
                hcontig_tasks: 0,
                rectangle_runs: 0,
                exact_width_rows: 0,
                staged_tasks: 0,
                bf16_pixel_tasks: 0,
                output_direct: 0,
            },
        }
    }
}

/// A firmware build: which entries it advertises and which FP unit its entries multiply on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Firmware<U: FpUnit = Ieee> {
    advertised: Capabilities,
    unit: PhantomData<fn() -> U>,
}

impl<U: FpUnit> Firmware<U> {
    /// A build advertising `advertised` (a subset of [`capability::TABLE`]).
    pub const fn new(advertised: Capabilities) -> Firmware<U> {
        Firmware {
            advertised,
            unit: PhantomData,
        }
    }

    /// A build advertising every implemented entry.
    pub const fn full() -> Firmware<U> {
        Firmware::new(Capabilities::all())
    }

    /// The advertised entries, for the Runtime's capability probe.
    pub fn capabilities(&self) -> impl Iterator<Item = &'static Capability> {
        capability::advertised(self.advertised)
    }

    /// Runs one command on `platform`.
    ///
    /// Order: route advertised and version and length matching; descriptor read from
    /// device memory and decoded ([`codec::decode`]: every rule, before anything else is
    /// touched); an empty packet returns at once; the entry runs (Quant selects its
    /// numerical entry once; workers run 1..N−1 then 0).
    ///
    /// # Errors
    ///
    /// [`FwError::UnknownRoute`], [`FwError::NotAdvertised`], [`FwError::Version`],
    /// [`FwError::DescriptorLength`], [`FwError::Decode`] (nothing written), then
    /// [`FwError::Workers`], [`FwError::LocalMemory`] and [`FwError::Fault`] during
    /// execution.
    pub fn dispatch<P: Platform>(
        &self,
        platform: &mut P,
        command: &Command,
    ) -> Result<Report, FwError> {
        let result = self.dispatch_checked(platform, command);
        #[cfg(feature = "defmt")]
        if let Err(e) = &result {
            fw_log!(
                warn,
                "route {=u8:#x}: status {=u32:#x} ({})",
                command.route,
                e.code(),
                e
            );
        }
        result
    }

    /// [`Firmware::dispatch`] without its log point.
    fn dispatch_checked<P: Platform>(
        &self,
        platform: &mut P,
        command: &Command,
    ) -> Result<Report, FwError> {
        let entry = capability::capability(command.route).ok_or(FwError::UnknownRoute {
            route: command.route,
        })?;
        if !self.advertised.contains(entry.flag) {
            return Err(FwError::NotAdvertised {
                route: command.route,
            });
        }
        if command.version != entry.version {
            return Err(FwError::Version {
                route: command.route,
                found: command.version,
            });
        }
        fw_log!(
            info,
            "entry {=str} v{=u16} (route {=u8:#x})",
            entry.name,
            entry.version,
            command.route
        );
        // One arm per row of the entry table (asserted below `MAX_DESCRIPTOR`).
        match command.route {
            Quant::ROUTE => self.run_command::<Quant, P>(platform, command),
            CastTess::ROUTE => self.run_command::<CastTess, P>(platform, command),
            Detess::ROUTE => self.run_command::<Detess, P>(platform, command),
            DetessCast::ROUTE => self.run_command::<DetessCast, P>(platform, command),
            DetessDequant::ROUTE => self.run_command::<DetessDequant, P>(platform, command),
            Preproc::ROUTE => self.run_command::<Preproc, P>(platform, command),
            route => Err(FwError::UnknownRoute { route }),
        }
    }

    /// The part of [`Firmware::dispatch`] after the route checks: the descriptor read and
    /// decoded for entry `E`, then run.
    fn run_command<E: FirmwareEntry, P: Platform>(
        &self,
        platform: &mut P,
        command: &Command,
    ) -> Result<Report, FwError> {
        if command.length as usize != E::DESCRIPTOR_SIZE {
            return Err(FwError::DescriptorLength {
                found: command.length,
            });
        }
        let mut buffer = [0u8; MAX_DESCRIPTOR];
        let bytes = buffer
            .get_mut(..E::DESCRIPTOR_SIZE)
            .ok_or(FwError::Internal)?;
        platform.worker(0).read(command.descriptor, bytes)?;
        let repr = codec::decode::<E>(bytes)?;
        self.run_decoded::<E, P>(platform, &repr)
    }

    /// Runs an already decoded call of entry `E` (the part of [`Firmware::dispatch`] after
    /// decode): an empty packet returns at once; otherwise the entry's execution.
    ///
    /// # Errors
    ///
    /// [`FwError::Workers`], [`FwError::LocalMemory`], [`FwError::Fault`].
    pub fn run_decoded<E: FirmwareEntry, P: Platform>(
        &self,
        platform: &mut P,
        repr: &E::Repr,
    ) -> Result<Report, FwError> {
        if E::prefix(repr).is_empty() {
            return Ok(Report::empty());
        }
        E::execute::<P, U>(platform, repr)
    }
}

/// Bytes of the largest descriptor of any entry ([`codec::MAX_DESCRIPTOR_SIZE`]).
const MAX_DESCRIPTOR: usize = codec::MAX_DESCRIPTOR_SIZE;

// `Firmware::dispatch` has an arm for every implemented route: a route added to
// `capability::IMPLEMENTED` fails here until its arm (and its `FirmwareEntry` impl) is
// written.
#[allow(clippy::indexing_slicing)]
const _: () = assert!(
    capability::IMPLEMENTED.len() == 6
        && capability::IMPLEMENTED[0] == Quant::ROUTE
        && capability::IMPLEMENTED[1] == CastTess::ROUTE
        && capability::IMPLEMENTED[2] == Detess::ROUTE
        && capability::IMPLEMENTED[3] == DetessCast::ROUTE
        && capability::IMPLEMENTED[4] == DetessDequant::ROUTE
        && capability::IMPLEMENTED[5] == Preproc::ROUTE
);

/// A native entry this firmware runs: the codec's [`NativeEntry`] plus its execution on the
/// device. Sealed with the entries.
pub trait FirmwareEntry: NativeEntry {
    /// Executes a decoded, nonempty call on `platform`, multiplying on FP unit `U`.
    ///
    /// # Errors
    ///
    /// [`FwError::Workers`], [`FwError::LocalMemory`], [`FwError::Fault`].
    fn execute<P: Platform, U: FpUnit>(
        platform: &mut P,
        repr: &Self::Repr,
    ) -> Result<Report, FwError>;
}

impl FirmwareEntry for Quant {
    fn execute<P: Platform, U: FpUnit>(
        platform: &mut P,
        repr: &QuantRepr,
    ) -> Result<Report, FwError> {
        let entry =
            numerics::select::<U>(repr.prefix.dtype, repr.rounding).ok_or(FwError::Internal)?;
        fw_log!(
            debug,
            "quant: numerical entry {} {}, fp unit {=str}",
            entry.dtype,
            entry.rounding,
            entry.fp_unit
        );
        quant::execute(platform, repr, &entry)
    }
}

/// The Detess-family entries: one kernel, the conversion told by the descriptor.
macro_rules! detess_firmware_entry {
    ($($entry:ident),*) => {$(
        impl FirmwareEntry for $entry {
            fn execute<P: Platform, U: FpUnit>(
                platform: &mut P,
                repr: &DetessRepr,
            ) -> Result<Report, FwError> {
                detess::execute(platform, repr)
            }
        }
    )*};
}

detess_firmware_entry!(Detess, DetessCast, DetessDequant);

impl FirmwareEntry for Preproc {
    fn execute<P: Platform, U: FpUnit>(
        platform: &mut P,
        repr: &PreprocRepr,
    ) -> Result<Report, FwError> {
        preproc::execute(platform, repr)
    }
}

impl FirmwareEntry for CastTess {
    fn execute<P: Platform, U: FpUnit>(
        platform: &mut P,
        repr: &CastTessRepr,
    ) -> Result<Report, FwError> {
        casttess::execute(platform, repr)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn entries_are_advertised_with_their_routes() {
        assert_eq!(capability(0x2f), Some(&QUANT_V1));
        assert_eq!(QUANT_V1.name, "simaai_kernels_ev74_quant_v1");
        assert_eq!(QUANT_V1.version, 1);
        assert_eq!(capability(0x30), Some(&CASTTESS_V1));
        assert_eq!(CASTTESS_V1.name, "simaai_kernels_ev74_casttess_v1");
        assert_eq!(CASTTESS_V1.version, 1);
        let fw = Firmware::<Ieee>::full();
        assert_eq!(fw.capabilities().count(), 6);
        let quant_only = Firmware::<Ieee>::new(Capabilities::QUANT_V1);
        assert_eq!(quant_only.capabilities().count(), 1);
        let none = Firmware::<Ieee>::new(Capabilities::empty());
        assert_eq!(none.capabilities().count(), 0);
        assert_eq!(capability(0x31), Some(&DETESS_V1));
        assert_eq!(capability(0x32), Some(&DETESSCAST_V1));
        assert_eq!(capability(0x33), Some(&DETESSDEQUANT_V1));
        assert_eq!(
            DETESSDEQUANT_V1.name,
            "simaai_kernels_ev74_detessdequant_v1"
        );
        assert_eq!(capability(0xf0), None);
    }
}
