//! EV74 execution from the host: the simulated device and the Runtime (SPEC §8, §9), written
//! once for every native entry ([`NativeEntry`]).
//!
//! - [`quant`], [`casttess`]: the core codec for each entry (`check_inference`,
//!   `encode_relocatable`, `bind`, `encode`, `decode`) plus `run_sim`, one call that runs a
//!   plan on a fresh simulated device and reports its traffic ([`run`] has the generic
//!   `run_sim::<E>`);
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
pub mod quant;
pub mod run;
pub mod runtime;
pub mod sim;

pub use cost::{Cost, CostModel, EntryCost, WorkerCost};
pub use run::{SimError, SimOptions, SimRun};
pub use simak_core::ev74::{
    BindError, CastTess, DevicePlan, DeviceRegion, MAX_SPAN, NativeEntry, Packet, Quant,
    RepresentError, bind, check_inference, decode, encode, encode_relocatable,
};
pub use simak_core::wire::{DecodeCode, DecodeError, Field, FieldValue, Fields};
pub use simak_ev74_fw as firmware;
pub use simak_ev74_fw::FirmwareEntry;

/// The per-entry names of the simulated run, for `ev74::<op>`: `run_sim`, `run_sim_with`
/// and `run_sim_to_vec`, each [`run`]'s generic function at entry `$entry`, plus the
/// shared run types.
macro_rules! sim_names {
    ($entry:ty, $plan:ty) => {
        pub use $crate::ev74::{SimError, SimOptions, SimRun};

        /// [`crate::ev74::run::run_sim`] for this entry with `workers` workers (1 to 4) and
        /// default options.
        ///
        /// # Errors
        ///
        /// As [`crate::ev74::run::run_sim`].
        pub fn run_sim(
            plan: &$plan,
            input: &[u8],
            output: &mut [u8],
            workers: usize,
        ) -> Result<SimRun, SimError> {
            $crate::ev74::run::run_sim::<$entry>(plan, input, output, &SimOptions::new(workers))
        }

        /// [`crate::ev74::run::run_sim`] for this entry with explicit options.
        ///
        /// # Errors
        ///
        /// As [`crate::ev74::run::run_sim`].
        pub fn run_sim_with(
            plan: &$plan,
            input: &[u8],
            output: &mut [u8],
            options: &SimOptions,
        ) -> Result<SimRun, SimError> {
            $crate::ev74::run::run_sim::<$entry>(plan, input, output, options)
        }

        /// [`crate::ev74::run::run_sim_to_vec`] for this entry.
        ///
        /// # Errors
        ///
        /// As [`crate::ev74::run::run_sim_to_vec`].
        pub fn run_sim_to_vec(
            plan: &$plan,
            input: &[u8],
            output_len: usize,
            options: &SimOptions,
        ) -> Result<(SimRun, Vec<u8>), SimError> {
            $crate::ev74::run::run_sim_to_vec::<$entry>(plan, input, output_len, options)
        }
    };
}

pub(crate) use sim_names;
