//! The EV74 Runtime (SPEC §9): executor, transports, device buffers, completions.
//!
//! - [`Executor::connect`] probes the transport's capabilities; a missing Quant v1 entry is
//!   an error (never an A65 fallback). CastTess v1 is checked when a CastTess packet is
//!   submitted ([`Executor::submit_casttess`]): a device without it fails closed.
//! - [`Executor::allocate`] hands out [`DeviceBuffer`]s: 32-bit bus addresses (never 0),
//!   host access through [`DeviceBuffer::map`] / [`Mapping::unmap`] (copy in, write back).
//! - [`Executor::submit`] binds the packet to the buffers, writes the descriptor into device
//!   memory, hands the command to the transport and returns a [`Completion`] at once. The
//!   submission **retains** the input, output and descriptor buffers and the bound packet
//!   until the transport confirms completion (device retirement plus coherency) — also
//!   after a [`Completion::wait`] timed out. Retained buffers cannot be mapped.
//! - [`Executor::reset`] aborts, waits for device quiescence, and only then releases what
//!   unfinished submissions retained.
//! - A refused submission ([`Transport::submit`] returned an error) is released at once
//!   only if the transport dropped its callback; a transport that kept it may still run the
//!   command, so the buffers stay retained until it confirms completion or `reset`.
//! - Dropping the last [`Executor`] clone does not release what unconfirmed submissions
//!   retain: each pending retire callback keeps it until the transport confirms completion
//!   (or drops the callback uncalled).
//! - [`Executor::run`] is submit + wait. Empty plans are never submitted.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use simak::ev74::quant;
//! use simak::ev74::runtime::{Executor, SimConfig, SimTransport};
//! use simak::ops::quant::{check_inference, Params, Request};
//! use simak::{DType, TensorSpec};
//!
//! let executor = Executor::connect(Arc::new(SimTransport::new(SimConfig::new(2))))?;
//! let plan = quant::check_inference(&check_inference(&Request {
//!     input: TensorSpec::contiguous([3], DType::BF16),
//!     output: TensorSpec::contiguous([3], DType::I8),
//!     params: Params::new(2.0),
//! })?)?;
//! let packet = quant::encode_relocatable(&plan);
//! let input = executor.allocate(6)?;
//! let output = executor.allocate(3)?;
//! input.write(0, &[0x80, 0x3f, 0x00, 0xc0, 0xc0, 0x7f])?; // 1.0, -2.0, NaN
//! executor.run(&plan, &packet, &input, &output, Duration::from_secs(10))?;
//! let mut out = [0u8; 3];
//! output.read(0, &mut out)?;
//! assert_eq!(out.map(|b| b as i8), [2, -4, 0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use simak_core::ev74::casttess;
use simak_core::ev74::quant::{self as codec, BindError, DevicePlan, Packet};
use simak_core::state::{Bound, Encoded};
use simak_ev74_fw::{
    CASTTESS_V1, Capabilities, Capability, Command, Firmware, FlushToZero, FwError, Ieee, QUANT_V1,
    Report,
};

use super::DeviceRegion;
use super::sim::{MemoryError, SimDevice};

/// Why a Runtime operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeError {
    /// The transport does not advertise a required native entry.
    MissingCapability {
        /// Entry name.
        entry: &'static str,
        /// Entry version.
        version: u16,
    },
    /// Binding refused the buffers.
    Bind(BindError),
    /// The device rejected or failed the command (status code and error).
    Device(FwError),
    /// A buffer is mapped on the host, or retained by an unfinished submission.
    Busy {
        /// Bus address.
        address: u32,
    },
    /// A host access is outside the buffer.
    Range {
        /// Byte offset.
        offset: u64,
        /// Length in bytes.
        len: u64,
        /// Buffer length in bytes.
        capacity: u64,
    },
    /// Waiting for completion timed out; the submission still retains its buffers.
    Timeout,
    /// The submission was aborted by [`Executor::reset`] after device quiescence.
    Aborted,
    /// The device did not become quiescent in time; retained buffers were not released.
    NotQuiescent,
    /// The transport failed.
    Transport(TransportError),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::MissingCapability { entry, version } => {
                write!(f, "device does not advertise {entry} v{version}")
            }
            RuntimeError::Bind(e) => write!(f, "{e}"),
            RuntimeError::Device(e) => write!(f, "device status 0x{:03x}: {e}", e.code()),
            RuntimeError::Busy { address } => {
                write!(f, "buffer at 0x{address:x} is mapped or in flight")
            }
            RuntimeError::Range {
                offset,
                len,
                capacity,
            } => write!(
                f,
                "{len} bytes at offset {offset} exceed the {capacity}-byte buffer"
            ),
            RuntimeError::Timeout => f.write_str("timed out waiting for completion"),
            RuntimeError::Aborted => f.write_str("submission aborted"),
            RuntimeError::NotQuiescent => f.write_str("device did not become quiescent"),
            RuntimeError::Transport(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RuntimeError {}

impl From<BindError> for RuntimeError {
    fn from(e: BindError) -> Self {
        RuntimeError::Bind(e)
    }
}
impl From<TransportError> for RuntimeError {
    fn from(e: TransportError) -> Self {
        RuntimeError::Transport(e)
    }
}

/// Why a transport operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// Device memory management failed.
    Memory(MemoryError),
    /// The device side has shut down.
    Closed,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Memory(e) => write!(f, "{e}"),
            TransportError::Closed => f.write_str("device transport is closed"),
        }
    }
}

impl std::error::Error for TransportError {}

impl From<MemoryError> for TransportError {
    fn from(e: MemoryError) -> Self {
        TransportError::Memory(e)
    }
}

/// The device's answer for one command.
pub type Status = Result<Report, FwError>;

/// The callback a transport calls exactly once when a command retired **and** its results
/// are coherent for the host. Dropping it without calling means the completion is never
/// confirmed: the submission keeps its buffers until [`Executor::reset`].
pub struct Retire(Box<dyn FnOnce(Status) + Send>);

impl Retire {
    /// Wraps a callback (for transports that forward to another transport).
    pub fn new(f: impl FnOnce(Status) + Send + 'static) -> Retire {
        Retire(Box::new(f))
    }

    /// Confirms completion with the device status.
    pub fn complete(self, status: Status) {
        (self.0)(status)
    }
}

impl fmt::Debug for Retire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Retire")
    }
}

/// A driver for an EV74: device memory, host access, command submission. Implemented by
/// [`SimTransport`]; a real driver implements it over DMA-BUF allocations and its mailbox.
pub trait Transport: Send + Sync {
    /// The native entries the device advertises (probed once after connecting).
    ///
    /// # Errors
    ///
    /// [`TransportError`] when the probe fails.
    fn capabilities(&self) -> Result<Vec<Capability>, TransportError>;
    /// Allocates `len` bytes of device memory; returns a bus address, never 0.
    ///
    /// # Errors
    ///
    /// [`TransportError::Memory`] when no memory is left.
    fn allocate(&self, len: u64) -> Result<u32, TransportError>;
    /// Frees an allocation (called once no one retains it).
    fn free(&self, address: u32);
    /// Host read of device memory (after cache maintenance).
    ///
    /// # Errors
    ///
    /// [`TransportError`] on an unmapped range.
    fn read(&self, address: u32, out: &mut [u8]) -> Result<(), TransportError>;
    /// Host write of device memory (followed by cache maintenance).
    ///
    /// # Errors
    ///
    /// [`TransportError`] on an unmapped range.
    fn write(&self, address: u32, data: &[u8]) -> Result<(), TransportError>;
    /// Queues a command; `retire` is called once it retired and its results are coherent.
    ///
    /// # Errors
    ///
    /// [`TransportError::Closed`]; `retire` is then dropped uncalled.
    fn submit(&self, command: Command, retire: Retire) -> Result<(), TransportError>;
    /// Asks the device to abandon queued commands (running ones finish).
    fn abort(&self);
    /// Waits until no command is queued or running; `false` on timeout.
    fn wait_idle(&self, timeout: Duration) -> bool;
}

#[derive(Debug, Default)]
struct BufferState {
    in_flight: usize,
    mapped: bool,
}

struct BufferInner {
    address: u32,
    len: u64,
    transport: Arc<dyn Transport>,
    state: Mutex<BufferState>,
}

impl Drop for BufferInner {
    fn drop(&mut self) {
        self.transport.free(self.address);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A device buffer: `len` bytes at a 32-bit bus address (never 0). Cloning shares it; the
/// memory is freed when the last clone — including a submission's — is gone.
#[derive(Clone)]
pub struct DeviceBuffer {
    inner: Arc<BufferInner>,
}

impl fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("address", &format_args!("0x{:x}", self.inner.address))
            .field("len", &self.inner.len)
            .finish()
    }
}

impl DeviceBuffer {
    /// Bus address of the first byte.
    pub fn address(&self) -> u32 {
        self.inner.address
    }

    /// Capacity in bytes.
    pub fn len(&self) -> u64 {
        self.inner.len
    }

    /// Whether the capacity is zero.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// The whole buffer as a device region for `bind`.
    pub fn region(&self) -> DeviceRegion {
        DeviceRegion::new(self.inner.address, self.inner.len)
    }

    /// Whether an unfinished submission retains this buffer.
    pub fn in_flight(&self) -> bool {
        lock(&self.inner.state).in_flight > 0
    }

    /// Number of handles (yours and submissions') sharing this buffer.
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<u32, RuntimeError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.inner.len => Ok(self.inner.address + offset as u32),
            _ => Err(RuntimeError::Range {
                offset,
                len,
                capacity: self.inner.len,
            }),
        }
    }

    fn idle_state(&self) -> Result<MutexGuard<'_, BufferState>, RuntimeError> {
        let state = lock(&self.inner.state);
        if state.in_flight > 0 || state.mapped {
            return Err(RuntimeError::Busy {
                address: self.inner.address,
            });
        }
        Ok(state)
    }

    /// Maps the buffer for host access: a coherent copy that [`Mapping::unmap`] (or drop)
    /// writes back.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Busy`] while mapped or retained by a submission;
    /// [`RuntimeError::Transport`] (with [`MemoryError::HostAllocation`] when the host
    /// cannot hold the copy).
    pub fn map(&self) -> Result<Mapping<'_>, RuntimeError> {
        let mut state = self.idle_state()?;
        let len = usize::try_from(self.inner.len).map_err(|_| {
            TransportError::Memory(MemoryError::HostAllocation {
                bytes: self.inner.len,
            })
        })?;
        let mut bytes = super::sim::try_zeroed(len).map_err(TransportError::Memory)?;
        self.inner.transport.read(self.inner.address, &mut bytes)?;
        state.mapped = true;
        Ok(Mapping {
            buffer: self,
            bytes,
            unmapped: false,
        })
    }

    /// Copies `data` into the buffer at byte `offset`.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Range`], [`RuntimeError::Busy`], [`RuntimeError::Transport`].
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), RuntimeError> {
        let address = self.check_range(offset, data.len() as u64)?;
        let _state = self.idle_state()?;
        Ok(self.inner.transport.write(address, data)?)
    }

    /// Copies bytes from byte `offset` into `out`.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Range`], [`RuntimeError::Busy`], [`RuntimeError::Transport`].
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), RuntimeError> {
        let address = self.check_range(offset, out.len() as u64)?;
        let _state = self.idle_state()?;
        Ok(self.inner.transport.read(address, out)?)
    }
}

/// A host mapping of a [`DeviceBuffer`]; dereferences to its bytes.
pub struct Mapping<'a> {
    buffer: &'a DeviceBuffer,
    bytes: Vec<u8>,
    unmapped: bool,
}

impl Mapping<'_> {
    /// Writes the bytes back and unmaps.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Transport`] (the buffer is unmapped anyway).
    pub fn unmap(mut self) -> Result<(), RuntimeError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), RuntimeError> {
        if self.unmapped {
            return Ok(());
        }
        self.unmapped = true;
        let result = self
            .buffer
            .inner
            .transport
            .write(self.buffer.inner.address, &self.bytes);
        lock(&self.buffer.inner.state).mapped = false;
        Ok(result?)
    }
}

impl std::ops::Deref for Mapping<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::ops::DerefMut for Mapping<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

impl fmt::Debug for Mapping<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mapping")
            .field("buffer", self.buffer)
            .finish_non_exhaustive()
    }
}

/// Marks a buffer in flight for as long as it lives.
struct Hold(DeviceBuffer);

impl Hold {
    fn new(buffer: &DeviceBuffer) -> Result<Hold, RuntimeError> {
        // Several submissions may share a buffer, but not while it is mapped.
        let mut state = lock(&buffer.inner.state);
        if state.mapped {
            return Err(RuntimeError::Busy {
                address: buffer.inner.address,
            });
        }
        state.in_flight += 1;
        drop(state);
        Ok(Hold(buffer.clone()))
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut state = lock(&self.0.inner.state);
        state.in_flight = state.in_flight.saturating_sub(1);
    }
}

/// What a submission retains until confirmed completion.
struct Retained {
    _input: Hold,
    _output: Hold,
    _descriptor: Hold,
    _packet: BoundPacket,
    completion: Arc<Slot>,
}

/// A bound packet of any entry, retained with its submission.
enum BoundPacket {
    Quant(Packet<Bound>),
    CastTess(casttess::Packet<Bound>),
}

impl BoundPacket {
    fn as_bytes(&self) -> &[u8] {
        match self {
            BoundPacket::Quant(p) => p.as_bytes(),
            BoundPacket::CastTess(p) => p.as_bytes(),
        }
    }
}

#[derive(Default)]
struct Slot {
    result: Mutex<Option<Result<Report, RuntimeError>>>,
    done: Condvar,
}

impl Slot {
    fn finish(&self, result: Result<Report, RuntimeError>) {
        let mut r = lock(&self.result);
        if r.is_none() {
            *r = Some(result);
        }
        self.done.notify_all();
    }
}

/// A handle on one submission.
#[derive(Clone)]
pub struct Completion {
    slot: Arc<Slot>,
}

impl fmt::Debug for Completion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl Completion {
    fn done(result: Result<Report, RuntimeError>) -> Completion {
        let slot = Arc::new(Slot::default());
        slot.finish(result);
        Completion { slot }
    }

    /// Whether completion was confirmed (or the submission aborted).
    pub fn is_complete(&self) -> bool {
        lock(&self.slot.result).is_some()
    }

    /// Waits up to `timeout` for confirmed completion. `Ok(None)` for a plan that was never
    /// submitted because it is empty.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Timeout`] (the submission still retains its buffers; wait again or
    /// [`Executor::reset`]), [`RuntimeError::Device`], [`RuntimeError::Aborted`].
    pub fn wait(&self, timeout: Duration) -> Result<Option<Report>, RuntimeError> {
        let deadline = Instant::now() + timeout;
        let mut r = lock(&self.slot.result);
        loop {
            if let Some(result) = r.as_ref() {
                return result.clone().map(|rep| (rep.units > 0).then_some(rep));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RuntimeError::Timeout);
            }
            r = self
                .slot
                .done
                .wait_timeout(r, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Unconfirmed submissions by id. Shared with every pending retire callback, so what a
/// submission retains outlives the [`Executor`]: dropping the executor while the device may
/// still run a command frees nothing until that command's completion is confirmed.
type InFlight = Arc<Mutex<HashMap<u64, Retained>>>;

struct Shared {
    transport: Arc<dyn Transport>,
    capabilities: Vec<Capability>,
    in_flight: InFlight,
    next_id: AtomicU64,
}

/// Submits EV74 work through a [`Transport`] (SPEC §9).
#[derive(Clone)]
pub struct Executor {
    shared: Arc<Shared>,
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl Executor {
    /// Connects to `transport` and probes its capabilities: Quant v1 (entry name, version
    /// and route) must be advertised.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::MissingCapability`] (never a fallback), [`RuntimeError::Transport`].
    pub fn connect(transport: Arc<dyn Transport>) -> Result<Executor, RuntimeError> {
        let capabilities = transport.capabilities()?;
        require(&capabilities, &QUANT_V1)?;
        Ok(Executor {
            shared: Arc::new(Shared {
                transport,
                capabilities,
                in_flight: Arc::new(Mutex::new(HashMap::new())),
                next_id: AtomicU64::new(0),
            }),
        })
    }

    /// Allocates a zero-filled device buffer of `len` bytes.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Transport`] when device memory is exhausted.
    pub fn allocate(&self, len: u64) -> Result<DeviceBuffer, RuntimeError> {
        let address = self.shared.transport.allocate(len)?;
        Ok(DeviceBuffer {
            inner: Arc::new(BufferInner {
                address,
                len,
                transport: self.shared.transport.clone(),
                state: Mutex::new(BufferState::default()),
            }),
        })
    }

    /// Number of submissions not yet confirmed complete.
    pub fn in_flight(&self) -> usize {
        lock(&self.shared.in_flight).len()
    }

    /// Binds `packet` to `input` and `output`, writes the descriptor into a device buffer and
    /// queues the command; returns at once. The submission retains the three buffers and the
    /// bound packet until the transport confirms completion. An empty plan is not submitted
    /// (its completion is already done).
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Bind`] (capacity, alignment, range, overlap, packet/plan mismatch),
    /// [`RuntimeError::Busy`] when a buffer is mapped, [`RuntimeError::Transport`].
    pub fn submit(
        &self,
        plan: &DevicePlan,
        packet: &Packet<Encoded>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
    ) -> Result<Completion, RuntimeError> {
        let bound = codec::bind(plan, packet, input.region(), output.region())?;
        if plan.is_empty() {
            return Ok(Completion::done(Ok(EMPTY_REPORT)));
        }
        self.submit_bound(BoundPacket::Quant(bound), Command::quant_v1, input, output)
    }

    /// Submits a CastTess packet (SPEC §9), like [`Executor::submit`]: checks that the
    /// device advertised CastTess v1 (entry name, version and route), binds `packet` to
    /// `input` and `output` (capacity ≥ the input span and ≥ the physical output span,
    /// 16-byte aligned output), writes the descriptor and queues the command; returns at
    /// once. The submission retains the buffers and the bound packet until confirmed
    /// completion. An empty plan is not submitted.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::MissingCapability`] (never a fallback), [`RuntimeError::Bind`],
    /// [`RuntimeError::Busy`], [`RuntimeError::Transport`].
    pub fn submit_casttess(
        &self,
        plan: &casttess::DevicePlan,
        packet: &casttess::Packet<Encoded>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
    ) -> Result<Completion, RuntimeError> {
        require(&self.shared.capabilities, &CASTTESS_V1)?;
        let bound = casttess::bind(plan, packet, input.region(), output.region())?;
        if plan.is_empty() {
            return Ok(Completion::done(Ok(EMPTY_REPORT)));
        }
        self.submit_bound(
            BoundPacket::CastTess(bound),
            Command::casttess_v1,
            input,
            output,
        )
    }

    /// [`Executor::submit_casttess`] then [`Completion::wait`] with `timeout`.
    ///
    /// # Errors
    ///
    /// As `submit_casttess` and `wait`; on [`RuntimeError::Timeout`] the buffers stay
    /// retained.
    pub fn run_casttess(
        &self,
        plan: &casttess::DevicePlan,
        packet: &casttess::Packet<Encoded>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
        timeout: Duration,
    ) -> Result<Option<Report>, RuntimeError> {
        self.submit_casttess(plan, packet, input, output)?
            .wait(timeout)
    }

    /// Writes a bound packet into a fresh descriptor buffer and queues `command(descriptor)`,
    /// retaining the buffers and the packet until the transport confirms completion.
    fn submit_bound(
        &self,
        bound: BoundPacket,
        command: fn(u32) -> Command,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
    ) -> Result<Completion, RuntimeError> {
        let descriptor = self.allocate(bound.as_bytes().len() as u64)?;
        descriptor.write(0, bound.as_bytes())?;
        let slot = Arc::new(Slot::default());
        let retained = Retained {
            _input: Hold::new(input)?,
            _output: Hold::new(output)?,
            _descriptor: Hold::new(&descriptor)?,
            _packet: bound,
            completion: slot.clone(),
        };
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.shared.in_flight).insert(id, retained);
        let in_flight = self.shared.in_flight.clone();
        // Alive for as long as the transport holds the callback (uncalled).
        let callback = Arc::new(());
        let held_by_transport = callback.clone();
        let retire = Retire(Box::new(move |status: Status| {
            let _held = &held_by_transport;
            let retained = lock(&in_flight).remove(&id);
            let result = status.map_err(RuntimeError::Device);
            if let Some(r) = retained {
                let slot = r.completion.clone();
                // Release the buffers before waking waiters.
                drop(r);
                slot.finish(result);
            }
        }));
        let command = command(descriptor.address());
        drop(descriptor);
        if let Err(e) = self.shared.transport.submit(command, retire) {
            // A refused command was not queued and its callback was dropped: release. A
            // transport that still holds the callback may yet run the command, so the
            // submission stays retained until it confirms completion or `reset`.
            if Arc::strong_count(&callback) == 1 {
                lock(&self.shared.in_flight).remove(&id);
            }
            return Err(e.into());
        }
        Ok(Completion { slot })
    }

    /// [`Executor::submit`] then [`Completion::wait`] with `timeout`.
    ///
    /// # Errors
    ///
    /// As `submit` and `wait`; on [`RuntimeError::Timeout`] the buffers stay retained.
    pub fn run(
        &self,
        plan: &DevicePlan,
        packet: &Packet<Encoded>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
        timeout: Duration,
    ) -> Result<Option<Report>, RuntimeError> {
        self.submit(plan, packet, input, output)?.wait(timeout)
    }

    /// Aborts queued work, waits up to `timeout` for device quiescence, then releases what
    /// every unfinished submission retained (their completions report
    /// [`RuntimeError::Aborted`]). Returns how many were released.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NotQuiescent`]: nothing was released.
    pub fn reset(&self, timeout: Duration) -> Result<usize, RuntimeError> {
        self.shared.transport.abort();
        if !self.shared.transport.wait_idle(timeout) {
            return Err(RuntimeError::NotQuiescent);
        }
        let drained: Vec<Retained> = lock(&self.shared.in_flight)
            .drain()
            .map(|(_, r)| r)
            .collect();
        let n = drained.len();
        for r in drained {
            let slot = r.completion.clone();
            drop(r);
            slot.finish(Err(RuntimeError::Aborted));
        }
        Ok(n)
    }
}

/// Fails closed unless `entry` (name, version and route) is among `capabilities`.
fn require(capabilities: &[Capability], entry: &Capability) -> Result<(), RuntimeError> {
    let has = capabilities
        .iter()
        .any(|c| c.name == entry.name && c.version == entry.version && c.route == entry.route);
    if has {
        Ok(())
    } else {
        Err(RuntimeError::MissingCapability {
            entry: entry.name,
            version: entry.version,
        })
    }
}

const EMPTY_REPORT: Report = Report {
    kind: simak_ev74_fw::SpanKind::Scatter,
    units: 0,
    run: 0,
    launched: 0,
    stats: simak_ev74_fw::BlockStats {
        fast: 0,
        exact: 0,
        tail: 0,
    },
    transfers: 0,
    tess: simak_ev74_fw::TessStats {
        classes: 0,
        band_tasks: 0,
        panel_tasks: 0,
        block_tasks: 0,
        source_dma: 0,
        source_direct_rows: 0,
        output_dma: 0,
    },
};

/// Configuration of a [`SimTransport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimConfig {
    /// Worker ring size, 1 to 4; outside that range every command fails with
    /// `FwError::Workers` (as `run_sim`).
    pub workers: usize,
    /// Entries the simulated firmware advertises.
    pub advertised: Capabilities,
    /// Use the flushing FP-unit model.
    pub flush_to_zero: bool,
}

impl SimConfig {
    /// `workers` workers, every entry advertised, IEEE unit.
    pub const fn new(workers: usize) -> SimConfig {
        SimConfig {
            workers,
            advertised: Capabilities::all(),
            flush_to_zero: false,
        }
    }
}

struct Job {
    command: Command,
    retire: Retire,
}

#[derive(Default)]
struct Queue {
    pending: usize,
    abort: bool,
}

struct SimShared {
    device: Mutex<SimDevice>,
    config: SimConfig,
    queue: Mutex<Queue>,
    idle: Condvar,
}

/// A [`Transport`] that runs `simak-ev74-fw` on a simulated device in its own thread.
/// Commands execute in submission order; completion is signalled after the firmware
/// returned and device memory is coherent for the host.
pub struct SimTransport {
    shared: Arc<SimShared>,
    sender: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for SimTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimTransport")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl SimTransport {
    /// Starts the device thread (named `ev74-sim`). If the thread cannot be started, every
    /// submission fails with [`TransportError::Closed`].
    pub fn new(config: SimConfig) -> SimTransport {
        let shared = Arc::new(SimShared {
            device: Mutex::new(SimDevice::new(config.workers)),
            config,
            queue: Mutex::new(Queue::default()),
            idle: Condvar::new(),
        });
        let (sender, receiver) = mpsc::channel::<Job>();
        let device_side = shared.clone();
        let thread = std::thread::Builder::new()
            .name("ev74-sim".into())
            .spawn(move || device_loop(&device_side, &receiver))
            .ok();
        SimTransport {
            shared,
            sender: Mutex::new(Some(sender)),
            thread: Mutex::new(thread),
        }
    }

    /// Runs `f` on the simulated device (memory inspection in tests); blocks while a command
    /// executes.
    pub fn with_device<R>(&self, f: impl FnOnce(&mut SimDevice) -> R) -> R {
        f(&mut lock(&self.shared.device))
    }
}

fn device_loop(shared: &SimShared, receiver: &mpsc::Receiver<Job>) {
    while let Ok(job) = receiver.recv() {
        let aborted = lock(&shared.queue).abort;
        let status = if aborted {
            None
        } else {
            let mut device = lock(&shared.device);
            let fw_advertised = shared.config.advertised;
            let workers = shared.config.workers;
            Some(
                if workers == 0 || workers > simak_ev74_fw::work::MAX_WORKERS {
                    // As `run_sim`: a ring outside 1..=4 runs nothing.
                    Err(FwError::Workers {
                        configured: workers,
                    })
                } else if shared.config.flush_to_zero {
                    Firmware::<FlushToZero>::new(fw_advertised).dispatch(&mut *device, &job.command)
                } else {
                    Firmware::<Ieee>::new(fw_advertised).dispatch(&mut *device, &job.command)
                },
            )
            // Releasing the device lock publishes every write to the host (coherency).
        };
        if let Some(status) = status {
            job.retire.complete(status);
        }
        let mut q = lock(&shared.queue);
        q.pending = q.pending.saturating_sub(1);
        if q.pending == 0 {
            q.abort = false;
        }
        shared.idle.notify_all();
    }
}

impl Transport for SimTransport {
    fn capabilities(&self) -> Result<Vec<Capability>, TransportError> {
        Ok(
            simak_ev74_fw::capability::advertised(self.shared.config.advertised)
                .copied()
                .collect(),
        )
    }

    fn allocate(&self, len: u64) -> Result<u32, TransportError> {
        Ok(lock(&self.shared.device).memory.allocate(len)?)
    }

    fn free(&self, address: u32) {
        let _ = lock(&self.shared.device).memory.free(address);
    }

    fn read(&self, address: u32, out: &mut [u8]) -> Result<(), TransportError> {
        Ok(lock(&self.shared.device).memory.host_read(address, out)?)
    }

    fn write(&self, address: u32, data: &[u8]) -> Result<(), TransportError> {
        Ok(lock(&self.shared.device).memory.host_write(address, data)?)
    }

    fn submit(&self, command: Command, retire: Retire) -> Result<(), TransportError> {
        let sender = lock(&self.sender);
        let sender = sender.as_ref().ok_or(TransportError::Closed)?;
        lock(&self.shared.queue).pending += 1;
        if sender.send(Job { command, retire }).is_err() {
            let mut q = lock(&self.shared.queue);
            q.pending = q.pending.saturating_sub(1);
            return Err(TransportError::Closed);
        }
        Ok(())
    }

    fn abort(&self) {
        let mut q = lock(&self.shared.queue);
        if q.pending > 0 {
            q.abort = true;
        }
    }

    fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut q = lock(&self.shared.queue);
        while q.pending > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            q = self
                .shared
                .idle
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

impl Drop for SimTransport {
    fn drop(&mut self) {
        lock(&self.sender).take();
        if let Some(t) = lock(&self.thread).take() {
            // The last reference can go on the device thread itself: a completion callback
            // that releases the last buffers of a dropped executor drops the transport
            // there. That thread cannot join itself; with the sender gone its loop ends once
            // the callback returns.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
