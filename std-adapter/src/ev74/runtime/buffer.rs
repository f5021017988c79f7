//! Device buffers: 32-bit bus addresses (never 0), host access through a mapping, and the
//! in-flight count that keeps a buffer retained by a submission from being mapped.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{RuntimeError, Transport, TransportError, lock};
use crate::ev74::DeviceRegion;
use crate::ev74::sim::MemoryError;

#[derive(Debug, Default)]
pub(super) struct BufferState {
    in_flight: usize,
    mapped: bool,
}

pub(super) struct BufferInner {
    pub(super) address: u32,
    pub(super) len: u64,
    pub(super) transport: Arc<dyn Transport>,
    pub(super) state: Mutex<BufferState>,
}

impl Drop for BufferInner {
    fn drop(&mut self) {
        self.transport.free(self.address);
    }
}

/// A device buffer: `len` bytes at a 32-bit bus address (never 0). Cloning shares it; the
/// memory is freed when the last clone — including a submission's — is gone.
#[derive(Clone)]
pub struct DeviceBuffer {
    pub(super) inner: Arc<BufferInner>,
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

    /// The `len` bytes at byte `offset` of this buffer as a device region for `bind`: a
    /// port placed inside a retained allocation (an address phase). A packet bound to it
    /// is submitted with this buffer (`Executor::submit` checks that each port lies inside
    /// the buffer given for it). The region's alignment is checked by `bind`.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Range`] when `offset + len` exceeds the capacity.
    pub fn region_at(&self, offset: u64, len: u64) -> Result<DeviceRegion, RuntimeError> {
        let address = self.check_range(offset, len)?;
        Ok(DeviceRegion::new(address, len))
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
        let mut bytes = crate::ev74::sim::try_zeroed(len).map_err(TransportError::Memory)?;
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
pub(super) struct Hold(DeviceBuffer);

impl Hold {
    pub(super) fn new(buffer: &DeviceBuffer) -> Result<Hold, RuntimeError> {
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
