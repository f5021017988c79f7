//! The cost model of the simulated EV74 (`docs/cost-model.md`): simulated cycles, DMA
//! commands and global bytes per worker and per call.
//!
//! Every constant is an **assumption** written here, in [`CostModel::DEFAULT`], and nowhere
//! else; none is a measurement of or a claim about the device. The model exists so that the
//! firmware's data-movement and arithmetic choices can be compared on one scale; a test or
//! a study can override it through [`crate::ev74::SimOptions::cost`].
//!
//! Each worker has a core clock and a DMA engine, both counted in cycles from the moment
//! the workers are launched; workers run concurrently in simulated time (the simulator
//! itself runs them one after another):
//!
//! - a direct global load of `n` bytes advances the core by
//!   `direct_access_cycles + ⌈n / load_bytes_per_cycle⌉`, a direct store by
//!   `direct_access_cycles + ⌈n / store_bytes_per_cycle⌉`;
//! - a DMA command of `n` bytes (all rows) occupies the worker's engine for
//!   `dma_command_cycles + ⌈n / dma_bytes_per_cycle⌉`, starting when the core issues it or
//!   when the engine finishes its previous command, whichever is later (issuing costs the
//!   core nothing); waiting for its event advances the core to its completion;
//! - computing `n` elements advances the core by `n` times the entry's cycles per element
//!   on the path taken ([`EntryCost`], [`ComputePath`]); a local transpose (Quant's
//!   transpose panels, CastTess's H-contiguous path) is such a path, charged per element
//!   moved;
//! - a worker's time is the later of its core clock and its engine's last completion.
//!
//! A call costs `dispatch_cycles`, plus the load of its descriptor (a direct load, made
//! before any worker starts), plus its slowest worker. Bus contention between workers,
//! local-memory access, the per-row cost of 2D transfers and address arithmetic are not
//! modelled.

use simak_core::ev74::{CastTess, ENTRIES, Quant, route_index};
use simak_ev74_fw::ComputePath;

/// Compute cost of one native entry, in cycles per element on each path (see
/// [`ComputePath`] for what each path counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EntryCost {
    /// Cycles per element on the fast path.
    pub fast_cycles_per_element: u64,
    /// Cycles per element on the fallback.
    pub fallback_cycles_per_element: u64,
    /// Cycles per element of a local transpose, on top of the element's compute cost
    /// (Quant transpose panels: a quantized byte moved from input order to output order;
    /// CastTess's whole-panel H-contiguous path: a staged C, D, W, H value moved into the
    /// byte planes).
    pub transpose_cycles_per_element: u64,
}

impl EntryCost {
    /// No cost: an entry that never runs.
    pub const NONE: EntryCost = EntryCost {
        fast_cycles_per_element: 0,
        fallback_cycles_per_element: 0,
        transpose_cycles_per_element: 0,
    };

    /// Cycles for `elements` elements on `path`.
    pub const fn cycles(&self, path: ComputePath, elements: u64) -> u64 {
        let per = match path {
            ComputePath::Fast => self.fast_cycles_per_element,
            ComputePath::Fallback => self.fallback_cycles_per_element,
            ComputePath::Transpose => self.transpose_cycles_per_element,
        };
        elements.saturating_mul(per)
    }
}

/// The parameters of the simulated EV74's cost: assumptions, not device figures. A
/// bytes-per-cycle rate of 0 is read as 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostModel {
    /// Cycles of one call before its workers start (route checks, decode, launch), not
    /// counting the descriptor load, which is charged as a direct load.
    pub dispatch_cycles: u64,
    /// Cycles a worker's DMA engine spends on a command before moving its bytes.
    pub dma_command_cycles: u64,
    /// Bytes a worker's DMA engine moves per cycle (either direction).
    pub dma_bytes_per_cycle: u64,
    /// Cycles of latency of one direct global load or store, before its bytes.
    pub direct_access_cycles: u64,
    /// Bytes per cycle of a direct global load.
    pub load_bytes_per_cycle: u64,
    /// Bytes per cycle of a direct global store.
    pub store_bytes_per_cycle: u64,
    /// Quant v1: the 16-element FP block path (fast) and the exact integer path (fallback).
    pub quant: EntryCost,
    /// CastTess v1: conversions by band and panel tasks (fast) and by 4 KiB
    /// physical-block tasks (fallback).
    pub casttess: EntryCost,
    /// The Detess-family entries (Detess v1, DetessCast v1, DetessDequant v1): an element
    /// untiled, copied, widened or dequantized by table (fast; INT8 and every Detess and
    /// DetessCast element), or dequantized on the exact integer path (fallback; INT16 and
    /// INT32).
    pub detess: EntryCost,
    /// Preproc v1: an output value converted from a pixel run by the table lookup (fast),
    /// or element by element for a tiled layout whose W role is not the frame's x axis or
    /// whose C role is not its channel axis (fallback).
    pub preproc: EntryCost,
}

impl CostModel {
    /// The default assumptions (`docs/cost-model.md` gives the reasoning of each).
    pub const DEFAULT: CostModel = CostModel {
        dispatch_cycles: 2_000,
        dma_command_cycles: 100,
        dma_bytes_per_cycle: 16,
        direct_access_cycles: 50,
        load_bytes_per_cycle: 8,
        store_bytes_per_cycle: 8,
        quant: EntryCost {
            fast_cycles_per_element: 1,
            fallback_cycles_per_element: 8,
            transpose_cycles_per_element: 1,
        },
        casttess: EntryCost {
            fast_cycles_per_element: 1,
            fallback_cycles_per_element: 2,
            transpose_cycles_per_element: 1,
        },
        detess: EntryCost {
            fast_cycles_per_element: 1,
            fallback_cycles_per_element: 8,
            transpose_cycles_per_element: 0,
        },
        preproc: EntryCost {
            fast_cycles_per_element: 1,
            fallback_cycles_per_element: 4,
            transpose_cycles_per_element: 0,
        },
    };

    /// Engine cycles of a DMA command moving `bytes` bytes.
    pub const fn dma_cycles(&self, bytes: u64) -> u64 {
        self.dma_command_cycles
            .saturating_add(bytes.div_ceil(nonzero(self.dma_bytes_per_cycle)))
    }

    /// Core cycles of a direct global load of `bytes` bytes.
    pub const fn load_cycles(&self, bytes: u64) -> u64 {
        self.direct_access_cycles
            .saturating_add(bytes.div_ceil(nonzero(self.load_bytes_per_cycle)))
    }

    /// Core cycles of a direct global store of `bytes` bytes.
    pub const fn store_cycles(&self, bytes: u64) -> u64 {
        self.direct_access_cycles
            .saturating_add(bytes.div_ceil(nonzero(self.store_bytes_per_cycle)))
    }

    /// Each entry's compute cost, row for row with the library's entry table
    /// ([`ENTRIES`]: Quant v1, CastTess v1, then the three Detess-family entries, which
    /// share one kernel and one cost, then Preproc v1).
    pub const fn entry_costs(&self) -> [EntryCost; ENTRIES.len()] {
        [
            self.quant,
            self.casttess,
            self.detess,
            self.detess,
            self.detess,
            self.preproc,
        ]
    }

    /// The compute cost of the entry of `route`, looked up in [`ENTRIES`] (zero for an
    /// unknown route, which never runs).
    #[allow(
        clippy::indexing_slicing,
        reason = "the index is checked against the length"
    )]
    pub const fn entry(&self, route: u8) -> EntryCost {
        let costs = self.entry_costs();
        match route_index(route) {
            Some(i) if i < costs.len() => costs[i],
            _ => EntryCost::NONE,
        }
    }
}

// `entry_costs` lists the fields in the table's order.
const _: () = assert!(ENTRIES[0].is::<Quant>() && ENTRIES[1].is::<CastTess>());

impl Default for CostModel {
    /// [`CostModel::DEFAULT`].
    fn default() -> CostModel {
        CostModel::DEFAULT
    }
}

const fn nonzero(rate: u64) -> u64 {
    if rate == 0 { 1 } else { rate }
}

/// What one worker did in a call, in simulated time from the launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkerCost {
    /// Simulated cycles until the worker finished: the later of its core clock and its
    /// DMA engine's last completion (0 for a worker that had no work).
    pub simulated_cycles: u64,
    /// Cycles the core spent computing.
    pub compute_cycles: u64,
    /// Cycles the core spent in direct global loads and stores.
    pub direct_cycles: u64,
    /// Cycles the DMA engine was busy.
    pub dma_cycles: u64,
    /// DMA commands started.
    pub dma_commands: u64,
    /// Direct global loads and stores made.
    pub direct_accesses: u64,
    /// Global bytes read (DMA into local memory plus direct loads).
    pub bytes_read: u64,
    /// Global bytes written (DMA out of local memory plus direct stores).
    pub bytes_written: u64,
    /// Elements computed on the fast path.
    pub fast_elements: u64,
    /// Elements computed on the fallback.
    pub fallback_elements: u64,
}

impl WorkerCost {
    fn add(&mut self, o: &WorkerCost) {
        self.simulated_cycles = self.simulated_cycles.saturating_add(o.simulated_cycles);
        self.compute_cycles = self.compute_cycles.saturating_add(o.compute_cycles);
        self.direct_cycles = self.direct_cycles.saturating_add(o.direct_cycles);
        self.dma_cycles = self.dma_cycles.saturating_add(o.dma_cycles);
        self.dma_commands = self.dma_commands.saturating_add(o.dma_commands);
        self.direct_accesses = self.direct_accesses.saturating_add(o.direct_accesses);
        self.bytes_read = self.bytes_read.saturating_add(o.bytes_read);
        self.bytes_written = self.bytes_written.saturating_add(o.bytes_written);
        self.fast_elements = self.fast_elements.saturating_add(o.fast_elements);
        self.fallback_elements = self.fallback_elements.saturating_add(o.fallback_elements);
    }
}

/// The simulated cost of a call ([`crate::ev74::SimRun::cost`]), or the sum of several
/// ([`Cost::add`]). All zero for an empty plan, which is never submitted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cost {
    /// Simulated cycles: [`Cost::dispatch_cycles`] plus the slowest worker's cycles.
    pub simulated_cycles: u64,
    /// Cycles before the workers start: the model's dispatch cycles plus the descriptor
    /// load.
    pub dispatch_cycles: u64,
    /// Global bytes the dispatch read (the descriptor).
    pub dispatch_bytes_read: u64,
    /// DMA commands started (all workers).
    pub dma_commands: u64,
    /// Global bytes read: the descriptor plus every worker's.
    pub bytes_read: u64,
    /// Global bytes written (all workers).
    pub bytes_written: u64,
    /// One entry per configured worker, by physical ID.
    pub workers: Vec<WorkerCost>,
}

impl Cost {
    /// The cost of a call from its dispatch and its workers.
    pub(crate) fn of_call(
        dispatch_cycles: u64,
        dispatch_bytes_read: u64,
        workers: &[WorkerCost],
    ) -> Cost {
        let slowest = workers
            .iter()
            .map(|w| w.simulated_cycles)
            .max()
            .unwrap_or(0);
        let sum = |f: fn(&WorkerCost) -> u64| workers.iter().map(f).fold(0u64, u64::saturating_add);
        Cost {
            simulated_cycles: dispatch_cycles.saturating_add(slowest),
            dispatch_cycles,
            dispatch_bytes_read,
            dma_commands: sum(|w| w.dma_commands),
            bytes_read: dispatch_bytes_read.saturating_add(sum(|w| w.bytes_read)),
            bytes_written: sum(|w| w.bytes_written),
            workers: workers.to_vec(),
        }
    }

    /// Adds the cost of a later call run after this one (calls do not overlap): every
    /// figure is summed, per worker by physical ID.
    pub fn add(&mut self, other: &Cost) {
        self.simulated_cycles = self.simulated_cycles.saturating_add(other.simulated_cycles);
        self.dispatch_cycles = self.dispatch_cycles.saturating_add(other.dispatch_cycles);
        self.dispatch_bytes_read = self
            .dispatch_bytes_read
            .saturating_add(other.dispatch_bytes_read);
        self.dma_commands = self.dma_commands.saturating_add(other.dma_commands);
        self.bytes_read = self.bytes_read.saturating_add(other.bytes_read);
        self.bytes_written = self.bytes_written.saturating_add(other.bytes_written);
        if self.workers.len() < other.workers.len() {
            self.workers
                .resize(other.workers.len(), WorkerCost::default());
        }
        for (w, o) in self.workers.iter_mut().zip(other.workers.iter()) {
            w.add(o);
        }
    }
}

/// The dispatch of the call being run: its entry's compute cost, where its descriptor
/// lies, and what loading it cost.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallMeter {
    /// The compute cost of the command's entry.
    pub entry: EntryCost,
    /// Bus bytes `[start, end)` of the descriptor: loads inside are the dispatch's.
    pub descriptor: (u64, u64),
    /// Cycles so far before the workers start.
    pub dispatch_cycles: u64,
    /// Descriptor bytes loaded.
    pub dispatch_bytes_read: u64,
}

impl CallMeter {
    /// Whether a load of `len` bytes at `address` reads the descriptor.
    pub fn is_descriptor(&self, address: u64, len: u64) -> bool {
        let (start, end) = self.descriptor;
        start < end && address >= start && address.saturating_add(len) <= end
    }
}

/// A worker's clocks and counters while a call runs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WorkerMeter {
    /// The core's clock in cycles.
    pub clock: u64,
    /// When the DMA engine finishes its last command.
    pub dma_free: u64,
    /// The counters ([`WorkerCost::simulated_cycles`] is set by [`WorkerMeter::finish`]).
    pub cost: WorkerCost,
}

impl WorkerMeter {
    /// A direct load of `bytes`.
    pub fn load(&mut self, model: &CostModel, bytes: u64) {
        let c = model.load_cycles(bytes);
        self.clock = self.clock.saturating_add(c);
        self.cost.direct_cycles = self.cost.direct_cycles.saturating_add(c);
        self.cost.direct_accesses += 1;
        self.cost.bytes_read = self.cost.bytes_read.saturating_add(bytes);
    }

    /// A direct store of `bytes`.
    pub fn store(&mut self, model: &CostModel, bytes: u64) {
        let c = model.store_cycles(bytes);
        self.clock = self.clock.saturating_add(c);
        self.cost.direct_cycles = self.cost.direct_cycles.saturating_add(c);
        self.cost.direct_accesses += 1;
        self.cost.bytes_written = self.cost.bytes_written.saturating_add(bytes);
    }

    /// A DMA command of `bytes` issued now; returns its completion time.
    pub fn dma(&mut self, model: &CostModel, bytes: u64, to_local: bool) -> u64 {
        let c = model.dma_cycles(bytes);
        let done = self.clock.max(self.dma_free).saturating_add(c);
        self.dma_free = done;
        self.cost.dma_cycles = self.cost.dma_cycles.saturating_add(c);
        self.cost.dma_commands += 1;
        if to_local {
            self.cost.bytes_read = self.cost.bytes_read.saturating_add(bytes);
        } else {
            self.cost.bytes_written = self.cost.bytes_written.saturating_add(bytes);
        }
        done
    }

    /// Waiting for a transfer that completes at `done`.
    pub fn wait(&mut self, done: u64) {
        self.clock = self.clock.max(done);
    }

    /// `elements` computed on `path` at `entry`'s cost.
    pub fn compute(&mut self, entry: &EntryCost, path: ComputePath, elements: u64) {
        let c = entry.cycles(path, elements);
        self.clock = self.clock.saturating_add(c);
        self.cost.compute_cycles = self.cost.compute_cycles.saturating_add(c);
        match path {
            ComputePath::Fast => {
                self.cost.fast_elements = self.cost.fast_elements.saturating_add(elements)
            }
            ComputePath::Fallback => {
                self.cost.fallback_elements = self.cost.fallback_elements.saturating_add(elements)
            }
            ComputePath::Transpose => {}
        }
    }

    /// The worker's cost at the end of the call.
    pub fn finish(&self) -> WorkerCost {
        WorkerCost {
            simulated_cycles: self.clock.max(self.dma_free),
            ..self.cost
        }
    }
}
