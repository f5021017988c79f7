//! The device side of the Runtime: the [`Transport`] a driver implements, its errors, and the
//! [`Retire`] callback that confirms a command's completion.

use std::fmt;
use std::time::Duration;

use simak_ev74_fw::{Capability, Command, FwError, Report};

use crate::ev74::sim::MemoryError;

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

impl TransportError {
    /// The stable numeric code (`docs/errors.md`, 0x500..=0x5ff): the memory error's own
    /// code for [`TransportError::Memory`].
    pub const fn code(&self) -> u32 {
        match self {
            TransportError::Memory(e) => e.code(),
            TransportError::Closed => 0x520,
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
/// confirmed: the submission keeps its buffers until [`super::Executor::reset`].
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
/// [`super::SimTransport`]; a real driver implements it over DMA-BUF allocations and its mailbox.
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
