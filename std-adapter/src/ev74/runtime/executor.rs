//! The [`Executor`]: capability probing, buffer allocation, submission with retention until
//! confirmed completion, and reset.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use simak_core::error::Port;
use simak_core::ev74::{self, BindError, CastTess, DevicePlan, NativeEntry, Packet, Relocation};
use simak_core::state::{Bound, Encoded};
use simak_ev74_fw::{Capability, Command, Report};

use super::buffer::{BufferInner, BufferState, Hold};
use super::completion::{Completion, Outcome, Slot};
use super::{BufferRelocation, DeviceBuffer, Retire, RuntimeError, Status, Transport, lock};

/// Options of [`Executor::connect_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExecutorOptions {
    /// Probe the CastTess v1 entry (SPEC §9): off by default, as in the CastTess seed, where
    /// the transport adapter enables it only for firmware that has the entry. Without it,
    /// submitting CastTess is [`RuntimeError::NotProbed`]; with it, a device that does not
    /// advertise the entry fails each CastTess submission with
    /// [`RuntimeError::MissingCapability`].
    pub probe_casttess: bool,
}

impl ExecutorOptions {
    /// Whether entry `E` is probed: every entry but CastTess always, CastTess when
    /// [`ExecutorOptions::probe_casttess`] is set.
    fn probes<E: NativeEntry>(&self) -> bool {
        E::ROUTE != CastTess::ROUTE || self.probe_casttess
    }
}

/// What a submission retains until confirmed completion.
struct Retained {
    _input: Hold,
    _output: Hold,
    _descriptor: Hold,
    /// The bound packet's bytes.
    _packet: Box<[u8]>,
    completion: Arc<Slot>,
}

/// Unconfirmed submissions by id. Shared with every pending retire callback, so what a
/// submission retains outlives the [`Executor`]: dropping the executor while the device may
/// still run a command frees nothing until that command's completion is confirmed.
type InFlight = Arc<Mutex<HashMap<u64, Retained>>>;

struct Shared {
    transport: Arc<dyn Transport>,
    capabilities: Vec<Capability>,
    options: ExecutorOptions,
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
            .field("options", &self.shared.options)
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl Executor {
    /// Connects to `transport` with the default [`ExecutorOptions`] (CastTess not probed).
    ///
    /// # Errors
    ///
    /// As [`Executor::connect_with`].
    pub fn connect(transport: Arc<dyn Transport>) -> Result<Executor, RuntimeError> {
        Executor::connect_with(transport, ExecutorOptions::default())
    }

    /// Connects to `transport` and probes its capabilities once. No entry is required here:
    /// a firmware with only some entries is usable for those, and each submission checks
    /// its own entry (fail closed, never a fallback).
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Transport`] when the probe fails.
    pub fn connect_with(
        transport: Arc<dyn Transport>,
        options: ExecutorOptions,
    ) -> Result<Executor, RuntimeError> {
        let capabilities = transport.capabilities()?;
        Ok(Executor {
            shared: Arc::new(Shared {
                transport,
                capabilities,
                options,
                in_flight: Arc::new(Mutex::new(HashMap::new())),
                next_id: AtomicU64::new(0),
            }),
        })
    }

    /// The options this executor was connected with.
    pub fn options(&self) -> ExecutorOptions {
        self.shared.options
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

    /// Submits a bound packet of entry `E` over `input` and `output`; returns at once.
    ///
    /// Checks, in order: the device advertised `E` (name, version and route; CastTess only
    /// when probed, [`ExecutorOptions::probe_casttess`]); the packet is bound to these two
    /// buffers (each address slot lies inside its buffer: the buffer's address, or an
    /// offset into it from [`DeviceBuffer::region_at`]) and each buffer holds its port's
    /// span from that address on; then
    /// writes the descriptor into a device buffer and queues the command. The submission
    /// retains the three buffers and the packet until the transport confirms completion.
    /// An empty packet is not submitted (its completion is already done, with no report).
    ///
    /// An encoded packet cannot be submitted; bind it to the buffers' regions first:
    ///
    /// ```compile_fail
    /// # use simak::ev74::runtime::{DeviceBuffer, Executor};
    /// # use simak::ev74::quant;
    /// fn submit(e: &Executor, plan: &quant::DevicePlan, i: &DeviceBuffer, o: &DeviceBuffer) {
    ///     let encoded = quant::encode_relocatable(plan);
    ///     let _ = e.submit(&encoded, i, o); // Packet<E, Encoded> is not Packet<E, Bound>
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NotProbed`], [`RuntimeError::MissingCapability`] (never a fallback),
    /// [`RuntimeError::NotBoundTo`] (a port's address is not inside the buffer given for
    /// it), [`RuntimeError::Bind`] (the buffer holds less than the port's span from the
    /// port's address on),
    /// [`RuntimeError::Busy`] when a buffer is mapped, [`RuntimeError::Transport`].
    pub fn submit<E: NativeEntry>(
        &self,
        packet: &Packet<E, Bound>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
    ) -> Result<Completion, RuntimeError> {
        self.require::<E>()?;
        for (port, bound, buffer, span) in [
            (
                Port::Input,
                packet.input_address(),
                input,
                packet.input_span(),
            ),
            (
                Port::Output,
                packet.output_address(),
                output,
                packet.output_span(),
            ),
        ] {
            if packet.is_empty() {
                break;
            }
            // The port starts inside the buffer (at its address, or at an offset given by
            // `DeviceBuffer::region_at`) and its span ends inside it.
            let offset = u64::from(bound).wrapping_sub(u64::from(buffer.address()));
            if bound < buffer.address() || offset >= buffer.len().max(1) {
                return Err(RuntimeError::NotBoundTo {
                    port,
                    packet: bound,
                    buffer: buffer.address(),
                });
            }
            if buffer.len() - offset < span {
                return Err(RuntimeError::Bind(BindError::Capacity {
                    port,
                    required: span,
                    found: buffer.len() - offset,
                }));
            }
        }
        if packet.is_empty() {
            return Ok(Completion::done(Ok(None)));
        }
        self.submit_bytes(packet.as_bytes().as_ref(), Command::of::<E>, input, output)
    }

    /// Submits the encoded packet of `plan` with a table of DMA-BUF relocations instead of
    /// a bound packet; returns at once. The second way the source documents give the
    /// Runtime to bind (SPEC §6): the table is resolved here, at submission, and applied by
    /// the codec, never by patching the packet's bytes.
    ///
    /// Checks, in order, and fails closed before anything is written to the device or
    /// queued: the device advertised `E` (as [`Executor::submit`]); each relocation
    /// resolves (its offset is inside its buffer, [`RuntimeError::Range`]) to the region
    /// from its offset to its buffer's end; then `ev74::relocate`, which is `ev74::bind`'s
    /// own checks with the table read after the first: the packet was encoded from `plan`;
    /// every slot an address slot (24 or 32), none named twice; then bind's region rules on
    /// the resolved regions (for a nonempty plan each port bound — a missing relocation is
    /// an unbound port —, capacity, alignment, range; the ports do not alias). The bound packet is then submitted as by [`Executor::submit`] over the
    /// relocations' buffers, which the submission retains until confirmed completion. An
    /// empty plan is not submitted (any table passing the slot checks is accepted, as
    /// `bind` accepts any regions).
    ///
    /// The result is the bound packet `ev74::bind` gives for the same regions, byte for
    /// byte.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NotProbed`], [`RuntimeError::MissingCapability`],
    /// [`RuntimeError::Range`], [`RuntimeError::Bind`] with [`BindError::UnknownSlot`]
    /// (0x313), [`BindError::DuplicateRelocation`] (0x314, 0x315) or any error of
    /// `ev74::bind`, then as [`Executor::submit`].
    pub fn submit_relocated<E: NativeEntry>(
        &self,
        plan: &DevicePlan<E>,
        encoded: &Packet<E, Encoded>,
        relocations: &[BufferRelocation],
    ) -> Result<Completion, RuntimeError> {
        self.require::<E>()?;
        let resolved = relocations
            .iter()
            .map(BufferRelocation::resolve)
            .collect::<Result<Vec<Relocation>, _>>()?;
        let bound = ev74::relocate(plan, encoded, &resolved)?;
        let buffer = |port| {
            relocations
                .iter()
                .find(|r| r.port() == Some(port))
                .map(BufferRelocation::buffer)
        };
        match (buffer(Port::Input), buffer(Port::Output)) {
            (Some(input), Some(output)) => self.submit(&bound, input, output),
            // `relocate` leaves a port unbound only for an empty plan, never submitted.
            _ if bound.is_empty() => Ok(Completion::done(Ok(None))),
            (None, _) => Err(BindError::Unbound { port: Port::Input }.into()),
            (_, None) => Err(BindError::Unbound { port: Port::Output }.into()),
        }
    }

    /// [`Executor::submit_relocated`] then [`Completion::wait`] with `timeout`.
    ///
    /// # Errors
    ///
    /// As `submit_relocated` and `wait`; on [`RuntimeError::Timeout`] the buffers stay
    /// retained.
    pub fn run_relocated<E: NativeEntry>(
        &self,
        plan: &DevicePlan<E>,
        encoded: &Packet<E, Encoded>,
        relocations: &[BufferRelocation],
        timeout: Duration,
    ) -> Result<Option<Report>, RuntimeError> {
        self.submit_relocated(plan, encoded, relocations)?
            .wait(timeout)
    }

    /// [`Executor::submit`] then [`Completion::wait`] with `timeout`.
    ///
    /// # Errors
    ///
    /// As `submit` and `wait`; on [`RuntimeError::Timeout`] the buffers stay retained.
    pub fn run<E: NativeEntry>(
        &self,
        packet: &Packet<E, Bound>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
        timeout: Duration,
    ) -> Result<Option<Report>, RuntimeError> {
        self.submit(packet, input, output)?.wait(timeout)
    }

    /// Fails closed unless the device advertised `E` (name, version and route) and the
    /// executor probes it.
    fn require<E: NativeEntry>(&self) -> Result<(), RuntimeError> {
        if !self.shared.options.probes::<E>() {
            return Err(RuntimeError::NotProbed {
                entry: E::ENTRY_NAME,
            });
        }
        if self.shared.capabilities.iter().any(|c| c.is::<E>()) {
            Ok(())
        } else {
            Err(RuntimeError::MissingCapability {
                entry: E::ENTRY_NAME,
                version: E::VERSION,
            })
        }
    }

    /// Writes descriptor bytes into a fresh descriptor buffer and queues
    /// `command(descriptor)`, retaining the buffers and the bytes until the transport
    /// confirms completion.
    fn submit_bytes(
        &self,
        bytes: &[u8],
        command: fn(u32) -> Command,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
    ) -> Result<Completion, RuntimeError> {
        let descriptor = self.allocate(bytes.len() as u64)?;
        descriptor.write(0, bytes)?;
        let slot = Arc::new(Slot::default());
        let retained = Retained {
            _input: Hold::new(input)?,
            _output: Hold::new(output)?,
            _descriptor: Hold::new(&descriptor)?,
            _packet: bytes.into(),
            completion: slot.clone(),
        };
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.shared.in_flight).insert(id, retained);
        let in_flight = self.shared.in_flight.clone();
        // Alive for as long as the transport holds the callback (uncalled).
        let callback = Arc::new(());
        let held_by_transport = callback.clone();
        let retire = Retire::new(move |status: Status| {
            let _held = &held_by_transport;
            let retained = lock(&in_flight).remove(&id);
            let result: Outcome = status.map(Some).map_err(RuntimeError::Device);
            if let Some(r) = retained {
                let slot = r.completion.clone();
                // Release the buffers before waking waiters.
                drop(r);
                slot.finish(result);
            }
        });
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
