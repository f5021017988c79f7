//! The host simulator of the EV74 (SPEC §8): a 32-bit bus address space of mapped regions,
//! per-worker local memory capped at the SPEC budget, a DMA engine that completes transfers
//! lazily and counts commands and bytes, and 1 to 4 workers.
//!
//! - Any access outside a mapped region is a [`Fault`]; every allocation is surrounded by at
//!   least [`GUARD_BYTES`] of unmapped guard space, so an overrun faults instead of
//!   corrupting a neighbour. Address 0 is never mapped.
//! - DMA transfers move their data only when `wait` is called on their own event (events
//!   imply no ordering), so firmware that computes before waiting, or reuses a slot too
//!   early, reads or publishes stale bytes, and the differential tests see it. Transfers a worker never
//!   waited for are discarded and counted in [`DmaStats::unfinished`].
//! - Every global byte read or written — DMA or direct — is counted, per region and in total;
//!   a region can also count reads and writes per byte.
//! - Each call is costed in simulated cycles per worker by a [`CostModel`]
//!   ([`super::cost`]): [`SimDevice::cost`].

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use simak_ev74_fw::device::{
    ComputePath, DeviceMemory, Direction, Dma, Event, Fault, Meter, Platform, Transfer,
};
use simak_ev74_fw::work::{LOCAL_MEMORY_BYTES, MAX_WORKERS};
use simak_ev74_fw::{Capabilities, Command, Firmware, FlushToZero, FwError, Ieee, Report};

use super::cost::{CallMeter, Cost, CostModel, WorkerMeter};

/// Unmapped bytes kept on each side of every allocation.
pub const GUARD_BYTES: u64 = 64;
/// Lowest address handed out by [`SimMemory::allocate`] (address 0 is never mapped).
pub const FIRST_ADDRESS: u64 = 0x1000;
/// Alignment of allocations in bytes.
pub const ALLOCATION_ALIGN: u64 = 64;
const ADDRESS_END: u64 = 1 << 32;
/// Fill byte of fresh local memory (stale-data detector).
const LOCAL_FILL: u8 = 0xcd;

/// Why the simulator's memory manager refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryError {
    /// No free range of this many bytes (plus guards) is left below 2^32.
    OutOfMemory {
        /// Requested bytes.
        len: u64,
    },
    /// A requested placement overlaps a mapped region or its guard bands, or leaves the
    /// 32-bit domain, or starts at 0.
    Placement {
        /// Requested address.
        address: u64,
        /// Requested bytes.
        len: u64,
    },
    /// No region starts at this address.
    NotMapped {
        /// Address.
        address: u32,
    },
    /// A host access is outside the region.
    HostRange {
        /// Address.
        address: u32,
        /// Length in bytes.
        len: u64,
    },
    /// The host could not allocate the backing store of a simulated buffer (device memory,
    /// a host copy or per-byte write counts): the machine, not the device, ran out of
    /// memory.
    HostAllocation {
        /// Host bytes requested by the failed allocation.
        bytes: u64,
    },
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MemoryError::OutOfMemory { len } => write!(f, "no free device range of {len} bytes"),
            MemoryError::Placement { address, len } => {
                write!(f, "cannot map {len} bytes at 0x{address:x}")
            }
            MemoryError::NotMapped { address } => write!(f, "no region at 0x{address:x}"),
            MemoryError::HostRange { address, len } => {
                write!(
                    f,
                    "host access of {len} bytes at 0x{address:x} is not mapped"
                )
            }
            MemoryError::HostAllocation { bytes } => {
                write!(f, "cannot allocate {bytes} bytes of host memory")
            }
        }
    }
}

impl MemoryError {
    /// The stable numeric code (`docs/errors.md`, 0x540..=0x54f).
    pub const fn code(&self) -> u32 {
        match self {
            MemoryError::OutOfMemory { .. } => 0x541,
            MemoryError::Placement { .. } => 0x542,
            MemoryError::NotMapped { .. } => 0x543,
            MemoryError::HostRange { .. } => 0x544,
            MemoryError::HostAllocation { .. } => 0x545,
        }
    }
}

impl std::error::Error for MemoryError {}

/// A vector of `len` copies of `T::default()` (zero for the integer types), allocated
/// fallibly: when the host cannot provide `len · size_of::<T>()` bytes this returns
/// [`MemoryError::HostAllocation`] instead of aborting the process.
///
/// # Errors
///
/// [`MemoryError::HostAllocation`] with the bytes requested (saturated at `u64::MAX`).
pub fn try_zeroed<T: Clone + Default>(len: usize) -> Result<Vec<T>, MemoryError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| MemoryError::HostAllocation {
            bytes: (len as u64).saturating_mul(size_of::<T>() as u64),
        })?;
    v.resize(len, T::default());
    Ok(v)
}

/// A fallible copy of `data` (see [`try_zeroed`]).
///
/// # Errors
///
/// [`MemoryError::HostAllocation`] with the bytes requested.
pub fn try_copy<T: Clone>(data: &[T]) -> Result<Vec<T>, MemoryError> {
    let mut v = Vec::new();
    v.try_reserve_exact(data.len())
        .map_err(|_| MemoryError::HostAllocation {
            bytes: (data.len() as u64).saturating_mul(size_of::<T>() as u64),
        })?;
    v.extend_from_slice(data);
    Ok(v)
}

/// Global traffic counters (bytes are bus bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DmaStats {
    /// DMA commands started.
    pub commands: u64,
    /// Bytes moved by DMA from global into local memory.
    pub dma_bytes_in: u64,
    /// Bytes moved by DMA from local out to global memory.
    pub dma_bytes_out: u64,
    /// Bytes read by direct global loads.
    pub direct_bytes_read: u64,
    /// Bytes written by direct global stores.
    pub direct_bytes_written: u64,
    /// Faults raised.
    pub faults: u64,
    /// DMA transfers discarded because their worker never waited for them.
    pub unfinished: u64,
}

impl DmaStats {
    /// Every global byte read (DMA and direct).
    pub const fn bytes_read(&self) -> u64 {
        self.dma_bytes_in + self.direct_bytes_read
    }

    /// Every global byte written (DMA and direct).
    pub const fn bytes_written(&self) -> u64 {
        self.dma_bytes_out + self.direct_bytes_written
    }
}

#[derive(Debug)]
struct Region {
    data: Vec<u8>,
    reads: u64,
    writes: u64,
    write_counts: Option<Vec<u16>>,
    read_counts: Option<Vec<u16>>,
}

/// The bus address space: mapped regions and traffic counters.
#[derive(Debug, Default)]
pub struct SimMemory {
    regions: BTreeMap<u64, Region>,
    stats: DmaStats,
}

impl SimMemory {
    /// An empty address space.
    pub fn new() -> SimMemory {
        SimMemory::default()
    }

    /// Whether `[start, start + len)` keeps [`GUARD_BYTES`] of unmapped space from every
    /// mapped region and stays inside `1..2^32`.
    fn fits(&self, start: u64, len: u64) -> bool {
        if start == 0 || start + len > ADDRESS_END {
            return false;
        }
        match self.regions.range(..start + len + GUARD_BYTES).next_back() {
            Some((&base, r)) => base + r.data.len() as u64 + GUARD_BYTES <= start,
            None => true,
        }
    }

    /// Maps `len` bytes (at least 1) at the lowest free [`ALLOCATION_ALIGN`]-aligned address
    /// ≥ [`FIRST_ADDRESS`] with guard bands on both sides; the bytes are zero. Returns the bus
    /// address (never 0).
    ///
    /// # Errors
    ///
    /// [`MemoryError::OutOfMemory`]; [`MemoryError::HostAllocation`] when the host cannot
    /// back the region.
    pub fn allocate(&mut self, len: u64) -> Result<u32, MemoryError> {
        let len = len.max(1);
        let mut candidate = FIRST_ADDRESS;
        let mut found = None;
        for (&base, r) in self.regions.iter() {
            if candidate + len + GUARD_BYTES <= base {
                found = Some(candidate);
                break;
            }
            candidate =
                (base + r.data.len() as u64 + GUARD_BYTES).next_multiple_of(ALLOCATION_ALIGN);
        }
        let start = match found {
            Some(s) => s,
            None if candidate + len + GUARD_BYTES <= ADDRESS_END => candidate,
            None => return Err(MemoryError::OutOfMemory { len }),
        };
        self.map_at(start as u32, len)?;
        Ok(start as u32)
    }

    /// Maps `len` bytes (at least 1) at exactly `address` (zeroed).
    ///
    /// # Errors
    ///
    /// [`MemoryError::Placement`] when the range (with guard bands) overlaps another region,
    /// starts at 0 or leaves the 32-bit domain; [`MemoryError::HostAllocation`] when the host
    /// cannot back the region.
    pub fn map_at(&mut self, address: u32, len: u64) -> Result<(), MemoryError> {
        let len = len.max(1);
        let start = u64::from(address);
        if !self.fits(start, len) {
            return Err(MemoryError::Placement {
                address: start,
                len,
            });
        }
        let bytes = usize::try_from(len).map_err(|_| MemoryError::HostAllocation { bytes: len })?;
        let data = try_zeroed(bytes)?;
        self.regions.insert(
            start,
            Region {
                data,
                reads: 0,
                writes: 0,
                write_counts: None,
                read_counts: None,
            },
        );
        Ok(())
    }

    /// Unmaps the region starting at `address`.
    ///
    /// # Errors
    ///
    /// [`MemoryError::NotMapped`].
    pub fn free(&mut self, address: u32) -> Result<(), MemoryError> {
        self.regions
            .remove(&u64::from(address))
            .map(|_| ())
            .ok_or(MemoryError::NotMapped { address })
    }

    /// Unmaps the region starting at `address` and hands its bytes to the host (no copy):
    /// a buffer the device filled can become the host's result directly.
    ///
    /// # Errors
    ///
    /// [`MemoryError::NotMapped`].
    pub fn take(&mut self, address: u32) -> Result<Vec<u8>, MemoryError> {
        self.regions
            .remove(&u64::from(address))
            .map(|r| r.data)
            .ok_or(MemoryError::NotMapped { address })
    }

    /// Number of mapped regions.
    pub fn regions(&self) -> usize {
        self.regions.len()
    }

    fn locate(&self, address: u64, len: u64) -> Option<(u64, usize)> {
        let (&base, r) = self.regions.range(..=address).next_back()?;
        let offset = address - base;
        (offset + len <= r.data.len() as u64).then_some((base, offset as usize))
    }

    fn region_mut(&mut self, address: u64, len: u64) -> Result<(&mut Region, usize), Fault> {
        match self.locate(address, len) {
            Some((base, offset)) => match self.regions.get_mut(&base) {
                Some(r) => Ok((r, offset)),
                None => Err(Fault::Unmapped { address, len }),
            },
            None => {
                self.stats.faults += 1;
                Err(Fault::Unmapped { address, len })
            }
        }
    }

    fn device_read(&mut self, address: u64, out: &mut [u8]) -> Result<(), Fault> {
        let len = out.len() as u64;
        let (r, offset) = self.region_mut(address, len)?;
        out.copy_from_slice(&r.data[offset..offset + out.len()]);
        r.reads += len;
        if let Some(counts) = r.read_counts.as_mut() {
            for c in &mut counts[offset..offset + out.len()] {
                *c = c.saturating_add(1);
            }
        }
        Ok(())
    }

    fn device_write(&mut self, address: u64, data: &[u8]) -> Result<(), Fault> {
        let len = data.len() as u64;
        let (r, offset) = self.region_mut(address, len)?;
        r.data[offset..offset + data.len()].copy_from_slice(data);
        r.writes += len;
        if let Some(counts) = r.write_counts.as_mut() {
            for c in &mut counts[offset..offset + data.len()] {
                *c = c.saturating_add(1);
            }
        }
        Ok(())
    }

    /// Host (CPU) read of device memory, not counted as device traffic.
    ///
    /// # Errors
    ///
    /// [`MemoryError::HostRange`] when any byte is unmapped.
    pub fn host_read(&self, address: u32, out: &mut [u8]) -> Result<(), MemoryError> {
        let len = out.len() as u64;
        let (base, offset) = self
            .locate(u64::from(address), len)
            .ok_or(MemoryError::HostRange { address, len })?;
        let r = &self.regions[&base];
        out.copy_from_slice(&r.data[offset..offset + out.len()]);
        Ok(())
    }

    /// Host (CPU) write of device memory, not counted as device traffic.
    ///
    /// # Errors
    ///
    /// [`MemoryError::HostRange`] when any byte is unmapped.
    pub fn host_write(&mut self, address: u32, data: &[u8]) -> Result<(), MemoryError> {
        let len = data.len() as u64;
        let (base, offset) = self
            .locate(u64::from(address), len)
            .ok_or(MemoryError::HostRange { address, len })?;
        let r = self
            .regions
            .get_mut(&base)
            .ok_or(MemoryError::NotMapped { address })?;
        r.data[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Starts (or stops) counting device writes per byte of the region at `address`,
    /// resetting the counts (two host bytes per region byte while enabled).
    ///
    /// # Errors
    ///
    /// [`MemoryError::NotMapped`]; [`MemoryError::HostAllocation`] when the host cannot
    /// hold the counts.
    pub fn track_writes(&mut self, address: u32, enabled: bool) -> Result<(), MemoryError> {
        let r = self
            .regions
            .get_mut(&u64::from(address))
            .ok_or(MemoryError::NotMapped { address })?;
        r.write_counts = None;
        if enabled {
            r.write_counts = Some(try_zeroed(r.data.len())?);
        }
        Ok(())
    }

    /// Stops counting writes on the region at `address` and hands the counts to the host
    /// (no copy); `None` when the region is not mapped or not tracked.
    pub fn take_write_counts(&mut self, address: u32) -> Option<Vec<u16>> {
        self.regions
            .get_mut(&u64::from(address))?
            .write_counts
            .take()
    }

    /// Starts (or stops) counting device reads per byte of the region at `address`,
    /// resetting the counts (two host bytes per region byte while enabled).
    ///
    /// # Errors
    ///
    /// [`MemoryError::NotMapped`]; [`MemoryError::HostAllocation`] when the host cannot
    /// hold the counts.
    pub fn track_reads(&mut self, address: u32, enabled: bool) -> Result<(), MemoryError> {
        let r = self
            .regions
            .get_mut(&u64::from(address))
            .ok_or(MemoryError::NotMapped { address })?;
        r.read_counts = None;
        if enabled {
            r.read_counts = Some(try_zeroed(r.data.len())?);
        }
        Ok(())
    }

    /// Stops counting reads on the region at `address` and hands the counts to the host
    /// (no copy); `None` when the region is not mapped or not tracked.
    pub fn take_read_counts(&mut self, address: u32) -> Option<Vec<u16>> {
        self.regions
            .get_mut(&u64::from(address))?
            .read_counts
            .take()
    }

    /// Device writes per byte of the region at `address`, if tracked.
    pub fn write_counts(&self, address: u32) -> Option<&[u16]> {
        self.regions
            .get(&u64::from(address))?
            .write_counts
            .as_deref()
    }

    /// Device bytes read from and written to the region at `address` since the last
    /// [`SimMemory::reset_stats`].
    pub fn region_traffic(&self, address: u32) -> Option<(u64, u64)> {
        let r = self.regions.get(&u64::from(address))?;
        Some((r.reads, r.writes))
    }

    /// The traffic counters.
    pub fn stats(&self) -> DmaStats {
        self.stats
    }

    /// Clears every counter (totals and per region).
    pub fn reset_stats(&mut self) {
        self.stats = DmaStats::default();
        for r in self.regions.values_mut() {
            r.reads = 0;
            r.writes = 0;
        }
    }
}

/// Runs one command on `device` as a firmware build advertising `advertised`, multiplying
/// on the flushing (DAZ + FTZ) unit model or on IEEE. A ring configured outside 1..=4
/// (`workers`; the device itself clamps its ring) runs nothing: `FwError::Workers`. The
/// one dispatch of the simulated device, for `run_sim` and the simulated transport.
///
/// # Errors
///
/// The firmware's refusal or fault.
pub(crate) fn dispatch(
    device: &mut SimDevice,
    workers: usize,
    advertised: Capabilities,
    flush_to_zero: bool,
    command: &Command,
) -> Result<Report, FwError> {
    device.begin_call(command);
    if workers == 0 || workers > MAX_WORKERS {
        Err(FwError::Workers {
            configured: workers,
        })
    } else if flush_to_zero {
        Firmware::<FlushToZero>::new(advertised).dispatch(device, command)
    } else {
        Firmware::<Ieee>::new(advertised).dispatch(device, command)
    }
}

/// The simulated device: memory plus a ring of 1 to 4 workers with their local memories,
/// costed by a [`CostModel`].
#[derive(Debug)]
pub struct SimDevice {
    /// The bus address space.
    pub memory: SimMemory,
    locals: Vec<Vec<u8>>,
    model: CostModel,
    meters: Vec<WorkerMeter>,
    call: CallMeter,
}

impl SimDevice {
    /// A device with `workers` workers (clamped to 1..=4) of [`LOCAL_MEMORY_BYTES`] each.
    pub fn new(workers: usize) -> SimDevice {
        SimDevice::with_local_bytes(workers, LOCAL_MEMORY_BYTES)
    }

    /// A device whose workers have `local_bytes` of local memory each (capped at the SPEC
    /// budget of [`LOCAL_MEMORY_BYTES`]).
    pub fn with_local_bytes(workers: usize, local_bytes: usize) -> SimDevice {
        let n = workers.clamp(1, MAX_WORKERS);
        SimDevice {
            memory: SimMemory::new(),
            locals: (0..n)
                .map(|_| vec![LOCAL_FILL; local_bytes.min(LOCAL_MEMORY_BYTES)])
                .collect(),
            model: CostModel::DEFAULT,
            meters: vec![WorkerMeter::default(); n],
            call: CallMeter::default(),
        }
    }

    /// Costs later calls with `model` (the default is [`CostModel::DEFAULT`]).
    pub fn set_cost_model(&mut self, model: CostModel) {
        self.model = model;
    }

    /// The cost model in use.
    pub fn cost_model(&self) -> &CostModel {
        &self.model
    }

    /// Starts costing `command`: every worker's clocks and counters restart at zero, and
    /// loads of its descriptor count as its dispatch. The simulator's own runs
    /// (`run_sim`, the simulated transport) call it before each dispatch; a caller that
    /// runs `Firmware::dispatch` on this device itself calls it first (otherwise the
    /// figures of [`SimDevice::cost`] run on from the previous call, with no compute cost
    /// charged before the first).
    pub fn begin_call(&mut self, command: &Command) {
        let start = u64::from(command.descriptor);
        self.call = CallMeter {
            entry: self.model.entry(command.route),
            descriptor: (start, start + u64::from(command.length)),
            dispatch_cycles: self.model.dispatch_cycles,
            dispatch_bytes_read: 0,
        };
        self.meters.fill(WorkerMeter::default());
    }

    /// The simulated cost of the command since [`SimDevice::begin_call`] (all zero before
    /// any command).
    pub fn cost(&self) -> Cost {
        let workers: Vec<_> = self.meters.iter().map(WorkerMeter::finish).collect();
        Cost::of_call(
            self.call.dispatch_cycles,
            self.call.dispatch_bytes_read,
            &workers,
        )
    }
}

impl Platform for SimDevice {
    type Worker<'a> = SimWorker<'a>;

    fn workers(&self) -> usize {
        self.locals.len()
    }

    fn worker(&mut self, id: usize) -> SimWorker<'_> {
        let n = self.locals.len();
        SimWorker {
            memory: &mut self.memory,
            local: &mut self.locals[id % n],
            queue: VecDeque::new(),
            next_event: 0,
            model: self.model,
            meter: &mut self.meters[id % n],
            call: &mut self.call,
        }
    }
}

/// One worker's view of the simulated device.
#[derive(Debug)]
pub struct SimWorker<'a> {
    memory: &'a mut SimMemory,
    local: &'a mut Vec<u8>,
    /// Started transfers not yet waited for: event, transfer, completion cycle.
    queue: VecDeque<(u32, Transfer, u64)>,
    next_event: u32,
    model: CostModel,
    meter: &'a mut WorkerMeter,
    call: &'a mut CallMeter,
}

impl DeviceMemory for SimWorker<'_> {
    fn read(&mut self, address: u32, out: &mut [u8]) -> Result<(), Fault> {
        self.memory.device_read(u64::from(address), out)?;
        let len = out.len() as u64;
        self.memory.stats.direct_bytes_read += len;
        if self.call.is_descriptor(u64::from(address), len) {
            self.call.dispatch_cycles = self
                .call
                .dispatch_cycles
                .saturating_add(self.model.load_cycles(len));
            self.call.dispatch_bytes_read += len;
        } else {
            self.meter.load(&self.model, len);
        }
        Ok(())
    }

    fn write(&mut self, address: u32, data: &[u8]) -> Result<(), Fault> {
        self.memory.device_write(u64::from(address), data)?;
        self.memory.stats.direct_bytes_written += data.len() as u64;
        self.meter.store(&self.model, data.len() as u64);
        Ok(())
    }
}

impl Meter for SimWorker<'_> {
    fn compute(&mut self, path: ComputePath, elements: u64) {
        self.meter.compute(&self.call.entry, path, elements);
    }
}

impl SimWorker<'_> {
    fn rows(t: &Transfer) -> impl Iterator<Item = (u64, usize)> + '_ {
        (0..u64::from(t.rows)).map(|r| {
            (
                u64::from(t.global) + r * u64::from(t.global_pitch),
                (u64::from(t.local) + r * u64::from(t.local_pitch)) as usize,
            )
        })
    }

    fn perform(&mut self, t: &Transfer) -> Result<(), Fault> {
        let n = t.row_bytes as usize;
        for (global, local) in Self::rows(t) {
            let slice = &mut self.local[local..local + n];
            match t.direction {
                Direction::ToLocal => {
                    self.memory.device_read(global, slice)?;
                    self.memory.stats.dma_bytes_in += n as u64;
                }
                Direction::ToGlobal => {
                    self.memory.device_write(global, slice)?;
                    self.memory.stats.dma_bytes_out += n as u64;
                }
            }
        }
        Ok(())
    }
}

impl Dma for SimWorker<'_> {
    fn local(&mut self) -> &mut [u8] {
        self.local
    }

    fn start(&mut self, t: &Transfer) -> Result<Event, Fault> {
        let rows = u64::from(t.rows);
        let span =
            |pitch: u32| (rows.saturating_sub(1)) * u64::from(pitch) + u64::from(t.row_bytes);
        let local_end = u64::from(t.local) + span(t.local_pitch);
        if rows == 0 || local_end > self.local.len() as u64 {
            self.memory.stats.faults += 1;
            return Err(Fault::Local {
                offset: u64::from(t.local),
                len: span(t.local_pitch),
            });
        }
        // Check every global row up front: a faulting command moves nothing.
        for (global, _) in Self::rows(t) {
            if self.memory.locate(global, u64::from(t.row_bytes)).is_none() {
                self.memory.stats.faults += 1;
                return Err(Fault::Unmapped {
                    address: global,
                    len: u64::from(t.row_bytes),
                });
            }
        }
        self.memory.stats.commands += 1;
        let done = self
            .meter
            .dma(&self.model, t.bytes(), t.direction == Direction::ToLocal);
        let event = self.next_event;
        self.next_event += 1;
        self.queue.push_back((event, *t, done));
        Ok(Event(event))
    }

    fn wait(&mut self, event: Event) -> Result<(), Fault> {
        if event.0 >= self.next_event {
            self.memory.stats.faults += 1;
            return Err(Fault::Event { event: event.0 });
        }
        // Only this transfer completes: events carry no ordering, so firmware must wait
        // for every transfer whose data it depends on.
        if let Some(pos) = self.queue.iter().position(|&(id, _, _)| id == event.0)
            && let Some((_, t, done)) = self.queue.remove(pos)
        {
            self.meter.wait(done);
            self.perform(&t)?;
        }
        Ok(())
    }
}

impl Drop for SimWorker<'_> {
    fn drop(&mut self) {
        self.memory.stats.unfinished += self.queue.len() as u64;
    }
}
