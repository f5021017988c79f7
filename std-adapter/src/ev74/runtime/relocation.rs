//! DMA-BUF relocations (SPEC §6, `docs/contract.md` §9): a table of (address slot, device
//! buffer, byte offset) that [`super::Executor::submit_relocated`] resolves at submission
//! into regions and applies through the codec's `relocate` (which is `bind`), so no driver
//! writes an address slot of a packet.

use simak_core::error::Port;
use simak_core::ev74::{Relocation, address_slot, slot_port};

use super::{DeviceBuffer, RuntimeError};

/// One DMA-BUF relocation of an encoded packet: the address slot at byte `slot` of the
/// descriptor (24 for the input, 32 for the output, the wire format's offsets, the same for
/// every entry) is to name the device buffer `buffer` from byte `offset` on.
///
/// A relocation holds a handle on the buffer; a submission retains the buffers of its
/// relocations until confirmed completion, as with a bound packet.
#[derive(Debug, Clone)]
pub struct BufferRelocation {
    slot: usize,
    buffer: DeviceBuffer,
    offset: u64,
}

impl BufferRelocation {
    /// The relocation of `port`'s address slot to the start of `buffer`.
    pub fn new(port: Port, buffer: &DeviceBuffer) -> BufferRelocation {
        BufferRelocation::at_slot(address_slot(port), buffer)
    }

    /// The relocation of the slot at byte `slot` of the descriptor to the start of
    /// `buffer`, as a driver's relocation list states it. A `slot` that is not an address
    /// slot is refused at submission (`BindError::UnknownSlot`, 0x313).
    pub fn at_slot(slot: usize, buffer: &DeviceBuffer) -> BufferRelocation {
        BufferRelocation {
            slot,
            buffer: buffer.clone(),
            offset: 0,
        }
    }

    /// The same relocation to byte `offset` of the buffer (a port placed inside a retained
    /// allocation, an address phase). The alignment is checked at submission, by `bind`.
    #[must_use]
    pub fn at_offset(mut self, offset: u64) -> BufferRelocation {
        self.offset = offset;
        self
    }

    /// Byte offset of the address slot in the descriptor.
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// The port of the slot, `None` when the slot is not an address slot.
    pub fn port(&self) -> Option<Port> {
        slot_port(self.slot)
    }

    /// The buffer the slot names.
    pub fn buffer(&self) -> &DeviceBuffer {
        &self.buffer
    }

    /// Byte offset into the buffer.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Resolves the buffer handle to a region: its bus address plus the offset, with the
    /// capacity left from there to the buffer's end (in bytes).
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Range`] when the offset is past the buffer's end.
    pub fn resolve(&self) -> Result<Relocation, RuntimeError> {
        let left = self.buffer.len().saturating_sub(self.offset);
        let region = self.buffer.region_at(self.offset, left)?;
        Ok(Relocation::at_slot(self.slot, region))
    }
}
