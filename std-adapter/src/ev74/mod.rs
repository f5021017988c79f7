//! EV74 execution from the host: the simulated device and the Runtime (SPEC §8, §9).
//!
//! - [`quant`]: the core codec re-exported (`check_inference`, `encode_relocatable`, `bind`,
//!   `encode`, `decode`) plus [`quant::run_sim`], one call that runs a plan on a fresh
//!   simulated device and reports its traffic;
//! - [`casttess`]: the same for CastTess (route 0x30), with [`casttess::run_sim`];
//! - [`sim`]: the host simulator — mapped regions in a 32-bit address space with guard
//!   bands, a lazily completing DMA engine with traffic counters, 1–4 workers with 48 KiB of
//!   local memory each — implementing the `simak-ev74-fw` device traits;
//! - [`runtime`]: [`runtime::Executor`] over a [`runtime::Transport`] (a real driver, or
//!   [`runtime::SimTransport`] running the firmware on a device thread), device buffers with
//!   32-bit bus addresses, asynchronous submission with completion handles.
//!
//! Nothing here falls back to the A65: a missing capability or a device error is reported.

pub mod casttess;
pub mod quant;
pub mod runtime;
pub mod sim;

pub use simak_core::ev74::DeviceRegion;
pub use simak_ev74_fw as firmware;
