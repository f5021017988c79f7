//! The EV74 Runtime (SPEC §9): executor, transports, device buffers, completions.
//!
//! One file an idea: [`executor`](Executor) (probing, submission, reset), the
//! [`Transport`] a driver implements, device [`DeviceBuffer`]s, [`Completion`] handles and
//! the simulated transport ([`SimTransport`]).
//!
//! - [`Executor::connect`] probes the transport's capabilities once; no entry is required
//!   there. Each submission checks its own entry, so a firmware with only some entries is
//!   usable for those; a missing entry fails closed (never an A65 fallback). The CastTess
//!   probe is opt-in ([`ExecutorOptions::probe_casttess`]).
//! - [`Executor::allocate`] hands out [`DeviceBuffer`]s: 32-bit bus addresses (never 0),
//!   host access through [`DeviceBuffer::map`] / [`Mapping::unmap`] (copy in, write back).
//! - [`Executor::submit`] takes a packet bound to the two buffers' regions
//!   (`ev74::bind(plan, &encoded, input.region(), output.region())`), writes the descriptor
//!   into device memory, hands the command to the transport and returns a [`Completion`] at
//!   once. The submission **retains** the input, output and descriptor buffers and the
//!   bound packet until the transport confirms completion (device retirement plus
//!   coherency) — also after a [`Completion::wait`] timed out. Retained buffers cannot be
//!   mapped.
//! - [`Executor::submit_relocated`] is the other way to bind (SPEC §6): the encoded packet
//!   with a table of DMA-BUF relocations ([`BufferRelocation`]: address slot 24 or 32, a
//!   [`DeviceBuffer`], a byte offset), resolved at submission and applied by the codec's
//!   `ev74::relocate` — `bind`'s rules, the same bound bytes — before anything reaches the
//!   transport; a driver never writes an address slot.
//! - [`Executor::reset`] aborts, waits for device quiescence, and only then releases what
//!   unfinished submissions retained.
//! - A refused submission ([`Transport::submit`] returned an error) is released at once
//!   only if the transport dropped its callback; a transport that kept it may still run the
//!   command, so the buffers stay retained until it confirms completion or `reset`.
//! - Dropping the last [`Executor`] clone does not release what unconfirmed submissions
//!   retain: each pending retire callback keeps it until the transport confirms completion
//!   (or drops the callback uncalled).
//! - [`Executor::run`] is submit + wait. Empty packets are never submitted.
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
//! let bound = quant::bind(&plan, &packet, input.region(), output.region())?;
//! executor.run(&bound, &input, &output, Duration::from_secs(10))?;
//! let mut out = [0u8; 3];
//! output.read(0, &mut out)?;
//! assert_eq!(out.map(|b| b as i8), [2, -4, 0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::sync::{Mutex, MutexGuard};

use simak_core::ev74::BindError;
use simak_ev74_fw::FwError;

mod buffer;
mod completion;
mod executor;
mod relocation;
mod sim_transport;
mod transport;

pub use buffer::{DeviceBuffer, Mapping};
pub use completion::Completion;
pub use executor::{Executor, ExecutorOptions};
pub use relocation::BufferRelocation;
pub use sim_transport::{SimConfig, SimTransport};
pub use transport::{Retire, Status, Transport, TransportError};

/// Locks a mutex, recovering the data of a poisoned one (a panicking callback must not
/// wedge the Runtime).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a Runtime operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeError {
    /// The transport does not advertise the submission's native entry.
    MissingCapability {
        /// Entry name.
        entry: &'static str,
        /// Entry version.
        version: u16,
    },
    /// The submission's entry is not probed by this executor: CastTess needs
    /// [`ExecutorOptions::probe_casttess`].
    NotProbed {
        /// Entry name.
        entry: &'static str,
    },
    /// The bound packet's address slot for a port is not inside the buffer given for it
    /// (neither its address nor an offset into it, as [`DeviceBuffer::region_at`] gives).
    NotBoundTo {
        /// Port.
        port: simak_core::error::Port,
        /// The packet's bus address.
        packet: u32,
        /// The buffer's bus address.
        buffer: u32,
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
            RuntimeError::NotProbed { entry } => write!(
                f,
                "{entry} is not probed by this executor: connect with ExecutorOptions {{ probe_casttess: true, .. }} for firmware that has it"
            ),
            RuntimeError::NotBoundTo {
                port,
                packet,
                buffer,
            } => write!(
                f,
                "the packet's {port} is bound to 0x{packet:x}, outside the buffer at 0x{buffer:x}"
            ),
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

impl RuntimeError {
    /// The stable numeric code (`docs/errors.md`): the inner error's own code for
    /// [`RuntimeError::Bind`], [`RuntimeError::Device`] and [`RuntimeError::Transport`],
    /// else 0x500..=0x51f.
    pub const fn code(&self) -> u32 {
        match self {
            RuntimeError::MissingCapability { .. } => 0x501,
            RuntimeError::NotProbed { .. } => 0x502,
            RuntimeError::NotBoundTo {
                port: simak_core::error::Port::Input,
                ..
            } => 0x503,
            RuntimeError::NotBoundTo {
                port: simak_core::error::Port::Output,
                ..
            } => 0x509,
            RuntimeError::Bind(e) => e.code(),
            RuntimeError::Device(e) => e.code(),
            RuntimeError::Busy { .. } => 0x504,
            RuntimeError::Range { .. } => 0x505,
            RuntimeError::Timeout => 0x506,
            RuntimeError::Aborted => 0x507,
            RuntimeError::NotQuiescent => 0x508,
            RuntimeError::Transport(e) => e.code(),
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
