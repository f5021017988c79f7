//! EV74 execution from the host: the simulated device and the Runtime (SPEC §8, §9), written
//! once for every native entry ([`NativeEntry`]).
//!
//! - [`quant`], [`casttess`]: the core codec for each entry (`check_inference`,
//!   `encode_relocatable`, `bind`, `encode`, `decode`) plus `run_sim`, one call that runs a
//!   plan on a fresh simulated device and reports its traffic (the generic [`run_sim`],
//!   [`run_sim_with`] and [`run_sim_to_vec`] of [`run`], which infer the entry from the
//!   plan's op);
//! - [`detess`]: the core codec of the Detess-family entries (Detess v1, DetessCast v1,
//!   DetessDequant v1) plus `run_sim`;
//! - [`ENTRIES`]: the one table of native entries, with [`entry_of`] and [`verdict`];
//! - [`sim`]: the host simulator — mapped regions in a 32-bit address space with guard
//!   bands, a lazily completing DMA engine with traffic counters, 1–4 workers with 48 KiB of
//!   local memory each — implementing the `simak-ev74-fw` device traits;
//! - [`cost`]: the simulator's cost model ([`cost::CostModel`], assumptions written in one
//!   place) and the simulated cycles, DMA commands and bytes of a run, per worker;
//! - [`runtime`]: [`runtime::Executor`] over a [`runtime::Transport`] (a real driver, or
//!   [`runtime::SimTransport`] running the firmware on a device thread), device buffers with
//!   32-bit bus addresses, asynchronous submission with completion handles.
//!
//! Nothing here falls back to the A65: a missing capability or a device error is reported.

pub mod casttess;
pub mod cost;
pub mod detess;
pub mod preproc;
pub mod quant;
pub mod run;
pub mod runtime;
pub mod sim;

pub use cost::{Cost, CostModel, EntryCost, WorkerCost};
pub use run::{SimError, SimOptions, SimRun, run_sim, run_sim_to_vec, run_sim_with};
pub use simak_core::ev74::{
    BindError, CastTess, Detess, DetessCast, DetessDequant, DevicePlan, DeviceRegion, ENTRIES,
    Entry, MAX_DESCRIPTOR_SIZE, MAX_SPAN, NativeEntry, Packet, Preproc, Quant, Relocation,
    RepresentError, Verdict, address_slot, bind, check_inference, decode, encode,
    encode_relocatable, entry_by_route, entry_of, entry_or_first, relocate, route_index, slot_port,
    verdict, verdict_of,
};
pub use simak_core::wire::{DecodeCode, DecodeError, Field, FieldValue, Fields};
pub use simak_ev74_fw as firmware;
pub use simak_ev74_fw::FirmwareEntry;
