//! One-call simulated runs of any native entry (SPEC §8): a fresh simulated device, the
//! plan encoded and bound against guard-banded regions holding the input and output, the
//! descriptor in device memory, the firmware dispatched, the output copied back; with the
//! traffic it caused. Written once, generic over the entry; `ev74::quant::run_sim` and
//! `ev74::casttess::run_sim` name it for each.

use std::fmt;

use simak_core::ev74::{self as codec, BindError, RepresentError};
use simak_core::ops::OpPlan;
use simak_ev74_fw::{Capabilities, Command, FirmwareEntry, FwError, Report};

use super::DeviceRegion;
use super::cost::{Cost, CostModel};
use super::sim::{DmaStats, MemoryError, SimDevice, dispatch, try_zeroed};

/// Options of a simulated run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Worker ring size, 1 to 4.
    pub workers: usize,
    /// Run the entries on the flushing (DAZ + FTZ) FP-unit model instead of IEEE.
    pub flush_to_zero: bool,
    /// Bytes between the input allocation's start and the bound input address (for address
    /// phase tests; must keep the element alignment to bind).
    pub input_phase: u32,
    /// Bytes between the output allocation's start and the bound output address.
    pub output_phase: u32,
    /// Worker local memory in bytes (capped at the SPEC budget of 48 KiB). A command whose
    /// two-slot panel budget does not fit fails with `FwError::LocalMemory` (a small command
    /// may need far less than a large one, so the check depends on the plan).
    pub local_bytes: usize,
    /// Count device writes per output byte into [`SimRun::output_write_counts`] (two host
    /// bytes per output byte while the device runs); off, the counts are empty.
    pub track_writes: bool,
    /// Count device reads per input byte into [`SimRun::input_read_counts`] (two host
    /// bytes per input byte while the device runs); off (the default), the counts are
    /// empty.
    pub track_reads: bool,
    /// The cost model of [`SimRun::cost`] (assumptions, `docs/cost-model.md`).
    pub cost: CostModel,
}

impl SimOptions {
    /// `workers` workers, IEEE unit, no phase offsets, full local memory, per-byte write
    /// counts, the default cost model ([`CostModel::DEFAULT`]).
    pub const fn new(workers: usize) -> SimOptions {
        SimOptions {
            workers,
            flush_to_zero: false,
            input_phase: 0,
            output_phase: 0,
            local_bytes: simak_ev74_fw::work::LOCAL_MEMORY_BYTES,
            track_writes: true,
            track_reads: false,
            cost: CostModel::DEFAULT,
        }
    }
}

/// What a simulated run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimRun {
    /// The firmware's report (span kind, units, workers, fast/exact blocks, transfers);
    /// `None` for an empty plan, which is never submitted.
    pub report: Option<Report>,
    /// Global traffic during the command (descriptor read included).
    pub stats: DmaStats,
    /// Device bytes read from the input region.
    pub input_bytes_read: u64,
    /// Device bytes written to the output region.
    pub output_bytes_written: u64,
    /// Device writes per byte of the `output` slice; empty when
    /// [`SimOptions::track_writes`] is off.
    pub output_write_counts: Vec<u16>,
    /// Device reads per byte of the `input` slice; empty unless
    /// [`SimOptions::track_reads`] is on and the plan ran.
    pub input_read_counts: Vec<u16>,
    /// The simulated cost under [`SimOptions::cost`]: cycles, DMA commands and global bytes
    /// read and written, in total and per worker (all zero for an empty plan).
    pub cost: Cost,
}

impl SimRun {
    /// The run of an empty plan, which is never submitted: no report, no traffic, no write
    /// to any of the `output_len` output bytes (counted only with `track_writes`).
    pub(crate) fn nothing(output_len: usize, track_writes: bool) -> Result<SimRun, SimError> {
        Ok(SimRun {
            report: None,
            stats: DmaStats::default(),
            input_bytes_read: 0,
            output_bytes_written: 0,
            output_write_counts: if track_writes {
                try_zeroed(output_len)?
            } else {
                Vec::new()
            },
            input_read_counts: Vec::new(),
            cost: Cost::default(),
        })
    }
}

/// Why a simulated run failed. On [`SimError::Firmware`] with a decode rejection nothing
/// was written to device memory; `output` is untouched unless the firmware ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimError {
    /// The plan does not fit the device domain.
    Represent(RepresentError),
    /// Binding refused the buffers (capacity, alignment, range, overlap).
    Bind(BindError),
    /// The simulator's memory refused an allocation.
    Memory(MemoryError),
    /// The firmware rejected the command or faulted.
    Firmware(FwError),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Represent(e) => write!(f, "{e}"),
            SimError::Bind(e) => write!(f, "{e}"),
            SimError::Memory(e) => write!(f, "{e}"),
            SimError::Firmware(e) => write!(f, "{e}"),
        }
    }
}

impl SimError {
    /// The stable numeric code: the inner error's own (`docs/errors.md`).
    pub const fn code(&self) -> u32 {
        match self {
            SimError::Represent(e) => e.code(),
            SimError::Bind(e) => e.code(),
            SimError::Memory(e) => e.code(),
            SimError::Firmware(e) => e.code(),
        }
    }
}

impl std::error::Error for SimError {}

impl From<RepresentError> for SimError {
    fn from(e: RepresentError) -> Self {
        SimError::Represent(e)
    }
}
impl From<BindError> for SimError {
    fn from(e: BindError) -> Self {
        SimError::Bind(e)
    }
}
impl From<MemoryError> for SimError {
    fn from(e: MemoryError) -> Self {
        SimError::Memory(e)
    }
}
impl From<FwError> for SimError {
    fn from(e: FwError) -> Self {
        SimError::Firmware(e)
    }
}

/// [`run_sim_with`] with `workers` workers (1 to 4) and default options.
///
/// # Errors
///
/// As [`run_sim_with`].
pub fn run_sim<P>(
    plan: &P,
    input: &[u8],
    output: &mut [u8],
    workers: usize,
) -> Result<SimRun, SimError>
where
    P: OpPlan,
    P::Op: FirmwareEntry,
{
    run_sim_with(plan, input, output, &SimOptions::new(workers))
}

/// Runs `plan` on a fresh simulated EV74 at the entry of its op, the way the Runtime would:
/// `check_inference` → `encode` against device regions holding copies of `input` and
/// `output` → descriptor in device memory → firmware dispatch → `output` copied back.
/// Output bytes the entry does not write keep their values (for a tiled output every byte
/// of the capacity is written, padding included). An empty plan runs nothing and writes
/// nothing.
///
/// `input` holds the input port's storage from its first element (little-endian, at least
/// the accessed span in bytes); `output` the output port's storage (at least its span; a
/// tiled output is placed at a 16-byte aligned device address, so its phase must keep that
/// alignment).
///
/// # Errors
///
/// [`SimError::Represent`] (a span beyond the 32-bit domain), [`SimError::Bind`] (e.g. a
/// slice shorter than its span), [`SimError::Memory`] (with
/// [`MemoryError::HostAllocation`] when the host cannot hold the simulated memory),
/// [`SimError::Firmware`].
pub fn run_sim_with<P>(
    plan: &P,
    input: &[u8],
    output: &mut [u8],
    options: &SimOptions,
) -> Result<SimRun, SimError>
where
    P: OpPlan,
    P::Op: FirmwareEntry,
{
    let device_plan = codec::check_inference(plan)?;
    if device_plan.is_empty() {
        return SimRun::nothing(output.len(), options.track_writes);
    }
    let (run, _) = run_packet(options, input, Output::Host(output), &device_plan)?;
    Ok(run)
}

/// [`run_sim_with`] into a fresh zeroed output of `output_len` bytes that is returned: the
/// simulated device's output region itself becomes the result, so the host holds no second
/// copy of the output while the device runs (the way to run large tensors).
///
/// # Errors
///
/// As [`run_sim_with`]; [`SimError::Memory`] with [`MemoryError::HostAllocation`] also when the
/// host cannot hold the output.
pub fn run_sim_to_vec<P>(
    plan: &P,
    input: &[u8],
    output_len: usize,
    options: &SimOptions,
) -> Result<(SimRun, Vec<u8>), SimError>
where
    P: OpPlan,
    P::Op: FirmwareEntry,
{
    let device_plan = codec::check_inference(plan)?;
    if device_plan.is_empty() {
        let run = SimRun::nothing(output_len, options.track_writes)?;
        return Ok((run, try_zeroed(output_len)?));
    }
    let (run, output) = run_packet(options, input, Output::Device(output_len), &device_plan)?;
    Ok((run, output.unwrap_or_default()))
}

/// The output of a simulated run: a host slice copied in and back, or a zeroed region of
/// this many bytes handed to the host after the run.
enum Output<'a> {
    /// Copied into the device region before the run and back after it.
    Host(&'a mut [u8]),
    /// A zeroed device region of this many bytes, moved out after the run.
    Device(usize),
}

impl Output<'_> {
    fn len(&self) -> usize {
        match self {
            Output::Host(o) => o.len(),
            Output::Device(len) => *len,
        }
    }
}

/// Runs one plan on a fresh simulated device: `input` and `output` placed in
/// guard-banded regions at the option's phases, the plan encoded and bound to those regions
/// and written as a descriptor, the firmware dispatched with the entry's command, the
/// output copied back ([`Output::Host`]) or moved out of the device and returned
/// ([`Output::Device`]).
///
/// Every host allocation is fallible ([`MemoryError::HostAllocation`]).
fn run_packet<E: FirmwareEntry>(
    options: &SimOptions,
    input: &[u8],
    mut output: Output<'_>,
    plan: &codec::DevicePlan<E>,
) -> Result<(SimRun, Option<Vec<u8>>), SimError> {
    let out_len = output.len();
    let mut device = SimDevice::with_local_bytes(options.workers, options.local_bytes);
    device.set_cost_model(options.cost);
    let mem = &mut device.memory;
    let in_base = mem.allocate(input.len() as u64 + u64::from(options.input_phase))?;
    let in_addr = in_base + options.input_phase;
    mem.host_write(in_addr, input)?;
    let out_base = mem.allocate(out_len as u64 + u64::from(options.output_phase))?;
    let out_addr = out_base + options.output_phase;
    if let Output::Host(output) = &output {
        mem.host_write(out_addr, output)?;
    }
    let descriptor = mem.allocate(E::DESCRIPTOR_SIZE as u64)?;
    let packet = codec::encode(
        plan,
        DeviceRegion::new(in_addr, input.len() as u64),
        DeviceRegion::new(out_addr, out_len as u64),
    )?;
    mem.host_write(descriptor, packet.as_bytes().as_ref())?;
    if options.track_writes {
        mem.track_writes(out_base, true)?;
    }
    if options.track_reads {
        mem.track_reads(in_base, true)?;
    }
    mem.reset_stats();
    let report = dispatch(
        &mut device,
        options.workers,
        Capabilities::all(),
        options.flush_to_zero,
        &Command::of::<E>(descriptor),
    )?;
    let cost = device.cost();
    let mem = &mut device.memory;
    let stats = mem.stats();
    let input_bytes_read = mem.region_traffic(in_base).map_or(0, |t| t.0);
    let output_bytes_written = mem.region_traffic(out_base).map_or(0, |t| t.1);
    let input_read_counts = match mem.take_read_counts(in_base) {
        Some(mut c) => {
            let phase = options.input_phase as usize;
            c.truncate(phase + input.len());
            c.drain(..phase);
            c
        }
        None => Vec::new(),
    };
    // The input copy is no longer needed: release it before the output leaves the device.
    mem.free(in_base)?;
    let phase = options.output_phase as usize;
    let counts = match mem.take_write_counts(out_base) {
        Some(mut c) => {
            c.truncate(phase + out_len);
            c.drain(..phase);
            c
        }
        None => Vec::new(),
    };
    let moved = match &mut output {
        Output::Host(output) => {
            mem.host_read(out_addr, output)?;
            None
        }
        Output::Device(_) => {
            let mut data = mem.take(out_base)?;
            data.truncate(phase + out_len);
            data.drain(..phase);
            Some(data)
        }
    };
    let run = SimRun {
        report: Some(report),
        stats,
        input_bytes_read,
        output_bytes_written,
        output_write_counts: counts,
        input_read_counts,
        cost,
    };
    Ok((run, moved))
}
