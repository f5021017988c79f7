//! The hardware seams: a 32-bit bus address space, a DMA engine with per-worker local memory,
//! a compute meter, and the platform that hands out workers (SPEC §8).
//!
//! The firmware is written only against these traits, so the same code runs on the host
//! simulator (`simak::ev74::sim`) and could run on hardware.

use core::fmt;

/// Why a memory access or DMA command failed on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Fault {
    /// A global access touched bus addresses outside every mapped region.
    Unmapped {
        /// First bus address of the access.
        address: u64,
        /// Length of the access in bytes.
        len: u64,
    },
    /// A DMA command named local memory outside the worker's local memory.
    Local {
        /// First local byte offset.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
    /// `wait` was given an event that was never started on this worker.
    Event {
        /// The event.
        event: u32,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fault::Unmapped { address, len } => {
                write!(f, "unmapped access of {len} bytes at 0x{address:x}")
            }
            Fault::Local { offset, len } => {
                write!(
                    f,
                    "local access of {len} bytes at offset {offset} is out of range"
                )
            }
            Fault::Event { event } => write!(f, "unknown dma event {event}"),
        }
    }
}

impl core::error::Error for Fault {}

/// A 32-bit bus address space. Reads and writes of unmapped addresses are faults.
pub trait DeviceMemory {
    /// Reads `out.len()` bytes starting at bus `address` (direct global load).
    ///
    /// # Errors
    ///
    /// [`Fault::Unmapped`] when any byte is not mapped; nothing is read then.
    fn read(&mut self, address: u32, out: &mut [u8]) -> Result<(), Fault>;

    /// Writes `data` starting at bus `address` (direct global store).
    ///
    /// # Errors
    ///
    /// [`Fault::Unmapped`] when any byte is not mapped; nothing is written then.
    fn write(&mut self, address: u32, data: &[u8]) -> Result<(), Fault>;
}

/// Direction of a DMA transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Direction {
    /// Global (bus) memory into the worker's local memory.
    ToLocal,
    /// The worker's local memory out to global memory.
    ToGlobal,
}

/// A 1D or 2D DMA transfer: `rows` rows of `row_bytes` bytes, rows `global_pitch` bytes apart
/// in global memory and `local_pitch` bytes apart in local memory. A 1D transfer has one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Transfer {
    /// Direction.
    pub direction: Direction,
    /// Bus address of the first global byte.
    pub global: u32,
    /// Global bytes between row starts.
    pub global_pitch: u32,
    /// Local byte offset of the first byte.
    pub local: u32,
    /// Local bytes between row starts.
    pub local_pitch: u32,
    /// Bytes per row.
    pub row_bytes: u32,
    /// Number of rows (≥ 1).
    pub rows: u32,
}

impl Transfer {
    /// Total bytes moved.
    pub const fn bytes(&self) -> u64 {
        // Two u32 factors: the product fits u64.
        (self.row_bytes as u64).wrapping_mul(self.rows as u64)
    }
}

/// A DMA completion event, returned by [`Dma::start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Event(pub u32);

/// One worker's DMA engine and local memory.
///
/// Transfers complete asynchronously: a transfer's data is only guaranteed to have moved
/// after [`Dma::wait`] on its event returned; local bytes it reads or writes must not be
/// touched before then.
pub trait Dma {
    /// The worker's local memory (its whole budget; SPEC §8 caps it at 48 KiB).
    fn local(&mut self) -> &mut [u8];

    /// Starts a transfer.
    ///
    /// # Errors
    ///
    /// [`Fault::Local`] when the local range is outside local memory; a global fault may be
    /// reported here or by `wait`.
    fn start(&mut self, transfer: &Transfer) -> Result<Event, Fault>;

    /// Waits until the transfer of `event` has completed. Events imply no ordering between
    /// transfers: wait for each transfer whose data you depend on.
    ///
    /// # Errors
    ///
    /// [`Fault::Unmapped`] for a global access outside mapped memory, [`Fault::Event`] for
    /// an event never started.
    fn wait(&mut self, event: Event) -> Result<(), Fault>;
}

/// The arithmetic path a worker's elements took, as told to [`Meter::compute`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ComputePath {
    /// The fast path. Quant: an element of a 16-element block multiplied on the FP unit
    /// (also when the block is then recomputed exactly). CastTess: an element converted by
    /// a band or panel task.
    Fast,
    /// The fallback. Quant: an element computed on the exact integer path (a recomputed
    /// block, a tail, a scattered element). CastTess: a conversion by a 4 KiB
    /// physical-block task (an element may be converted once per byte plane).
    Fallback,
    /// A value moved by a local transpose (its arithmetic is counted on its own path as
    /// well). Quant: a quantized byte of a transpose panel moved from input order to
    /// output order. CastTess: an element moved from the staged C, D, W, H order into the
    /// final byte planes (the whole-panel H-contiguous path).
    Transpose,
}

/// Cost accounting: the firmware tells the platform how much arithmetic a worker did, at
/// the point in its program where it did it, so that a simulator can charge compute time
/// (`simak::ev74::cost`). Hardware has nothing to count: the default does nothing.
pub trait Meter {
    /// This worker computed `elements` elements on `path` just now.
    fn compute(&mut self, path: ComputePath, elements: u64) {
        let _ = (path, elements);
    }
}

/// The device: a configured ring of workers (1 to 4) sharing one bus address space.
pub trait Platform {
    /// A worker's view: the shared global memory plus its own DMA engine, local memory and
    /// compute meter.
    type Worker<'a>: DeviceMemory + Dma + Meter
    where
        Self: 'a;

    /// Number of configured workers (the ring size).
    fn workers(&self) -> usize;

    /// Worker `id` (`0..workers()`); IDs equal physical IDs.
    fn worker(&mut self, id: usize) -> Self::Worker<'_>;
}
