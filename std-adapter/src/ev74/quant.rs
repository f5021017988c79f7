//! EV74 Quant from the host: the codec of `simak-core` and a one-call simulated run.
//!
//! ```
//! use simak::ev74::quant::run_sim;
//! use simak::ops::quant::{check_inference, Params, Request};
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([4], DType::F32),
//!     output: TensorSpec::contiguous([4], DType::I8),
//!     params: Params::new(0.5).with_zero_point(3),
//! })?;
//! let input: Vec<u8> = [1.0f32, -7.0, 300.0, f32::NAN]
//!     .iter()
//!     .flat_map(|x| x.to_le_bytes())
//!     .collect();
//! let mut output = [0u8; 4];
//! let run = run_sim(&plan, &input, &mut output, 2)?;
//! assert_eq!(output.map(|b| b as i8), [3, -1, 127, 3]);
//! assert_eq!(run.input_bytes_read, 16);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use simak_core::ops::quant::Plan;
use simak_ev74_fw::{Command, Firmware, FlushToZero, FwError, Ieee, Report};

pub use simak_core::ev74::quant::{
    BindError, DecodeCode, DecodeError, DevicePlan, ENTRY, ENTRY_VERSION, MAX_SPAN, Packet, ROUTE,
    RepresentError, bind, check_inference, decode, encode, encode_relocatable,
};
pub use simak_core::wire::quant::{Field, FieldValue, QuantDescriptorV1, QuantRepr};

use super::DeviceRegion;
use super::sim::{DmaStats, MemoryError, SimDevice, try_zeroed};

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
}

impl SimOptions {
    /// `workers` workers, IEEE unit, no phase offsets, full local memory.
    pub const fn new(workers: usize) -> SimOptions {
        SimOptions {
            workers,
            flush_to_zero: false,
            input_phase: 0,
            output_phase: 0,
            local_bytes: simak_ev74_fw::work::LOCAL_MEMORY_BYTES,
            track_writes: true,
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

/// Runs `plan` on a fresh simulated EV74 with `workers` workers (1 to 4), the way the
/// Runtime would: `check_inference` → `encode` against device regions holding copies of
/// `input` and `output` → descriptor in device memory → firmware dispatch → `output` copied
/// back. Output bytes no element maps to keep their values.
///
/// `input` holds the input port's storage from its first element (little-endian, at least
/// the accessed span); `output` the output port's storage.
///
/// # Errors
///
/// [`SimError::Represent`], [`SimError::Bind`] (e.g. a slice shorter than its span),
/// [`SimError::Memory`] (with [`MemoryError::HostAllocation`] when the host cannot hold
/// the simulated memory), [`SimError::Firmware`].
pub fn run_sim(
    plan: &Plan,
    input: &[u8],
    output: &mut [u8],
    workers: usize,
) -> Result<SimRun, SimError> {
    run_sim_with(plan, input, output, &SimOptions::new(workers))
}

/// [`run_sim`] with explicit [`SimOptions`].
///
/// # Errors
///
/// As [`run_sim`].
pub fn run_sim_with(
    plan: &Plan,
    input: &[u8],
    output: &mut [u8],
    options: &SimOptions,
) -> Result<SimRun, SimError> {
    let device_plan = check_inference(plan)?;
    if device_plan.is_empty() {
        return SimRun::nothing(output.len(), options.track_writes);
    }
    let (run, _) = run_packet(
        options,
        input,
        Output::Host(output),
        QuantDescriptorV1::SIZE,
        Command::quant_v1,
        |input, output| Ok(encode(&device_plan, input, output)?.as_bytes().to_vec()),
    )?;
    Ok(run)
}

/// [`run_sim_with`] into a fresh zeroed output of `output_len` bytes that is returned: the
/// simulated device's output region itself becomes the result, so the host holds no second
/// copy of the output while the device runs (the way to run large tensors).
///
/// # Errors
///
/// As [`run_sim`]; [`SimError::Memory`] with [`MemoryError::HostAllocation`] also when the
/// host cannot hold the output.
pub fn run_sim_to_vec(
    plan: &Plan,
    input: &[u8],
    output_len: usize,
    options: &SimOptions,
) -> Result<(SimRun, Vec<u8>), SimError> {
    let device_plan = check_inference(plan)?;
    if device_plan.is_empty() {
        let run = SimRun::nothing(output_len, options.track_writes)?;
        return Ok((run, try_zeroed(output_len)?));
    }
    let (run, output) = run_packet(
        options,
        input,
        Output::Device(output_len),
        QuantDescriptorV1::SIZE,
        Command::quant_v1,
        |input, output| Ok(encode(&device_plan, input, output)?.as_bytes().to_vec()),
    )?;
    Ok((run, output.unwrap_or_default()))
}

/// The output of a simulated run: a host slice copied in and back, or a zeroed region of
/// this many bytes handed to the host after the run.
pub(crate) enum Output<'a> {
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

/// Runs one packet on a fresh simulated device (shared by every entry's `run_sim`):
/// `input` and `output` placed in guard-banded regions at the option's phases, the
/// packet bound by `bind` to those regions and written as a `descriptor_len`-byte
/// descriptor, the firmware dispatched with `command(descriptor)`, the output copied back
/// ([`Output::Host`]) or moved out of the device and returned ([`Output::Device`]).
///
/// Every host allocation is fallible ([`MemoryError::HostAllocation`]).
pub(crate) fn run_packet(
    options: &SimOptions,
    input: &[u8],
    mut output: Output<'_>,
    descriptor_len: usize,
    command: fn(u32) -> Command,
    bind: impl FnOnce(DeviceRegion, DeviceRegion) -> Result<Vec<u8>, SimError>,
) -> Result<(SimRun, Option<Vec<u8>>), SimError> {
    let out_len = output.len();
    let mut device = SimDevice::with_local_bytes(options.workers, options.local_bytes);
    let mem = &mut device.memory;
    let in_base = mem.allocate(input.len() as u64 + u64::from(options.input_phase))?;
    let in_addr = in_base + options.input_phase;
    mem.host_write(in_addr, input)?;
    let out_base = mem.allocate(out_len as u64 + u64::from(options.output_phase))?;
    let out_addr = out_base + options.output_phase;
    if let Output::Host(output) = &output {
        mem.host_write(out_addr, output)?;
    }
    let descriptor = mem.allocate(descriptor_len as u64)?;
    let packet = bind(
        DeviceRegion::new(in_addr, input.len() as u64),
        DeviceRegion::new(out_addr, out_len as u64),
    )?;
    mem.host_write(descriptor, &packet)?;
    if options.track_writes {
        mem.track_writes(out_base, true)?;
    }
    mem.reset_stats();
    let command = command(descriptor);
    let result = if options.workers == 0 || options.workers > simak_ev74_fw::work::MAX_WORKERS {
        Err(FwError::Workers {
            configured: options.workers,
        })
    } else if options.flush_to_zero {
        Firmware::<FlushToZero>::full().dispatch(&mut device, &command)
    } else {
        Firmware::<Ieee>::full().dispatch(&mut device, &command)
    };
    let report = result?;
    let mem = &mut device.memory;
    let stats = mem.stats();
    let input_bytes_read = mem.region_traffic(in_base).map_or(0, |t| t.0);
    let output_bytes_written = mem.region_traffic(out_base).map_or(0, |t| t.1);
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
    };
    Ok((run, moved))
}
