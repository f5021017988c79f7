//! Work geometry: coalescing, span kinds, work units and their partition (SPEC §8).
//!
//! Active axes (extent > 1) are ordered by decreasing input stride and merged wherever both
//! ports are packed across the pair. The innermost merged axis is the **common contiguous
//! suffix** when it is packed on both ports (input stride = element size, output stride 1):
//!
//! - a suffix of ≥ [`DMA_MIN_RUN`] elements → [`SpanKind::Dma`]: work units are DMA blocks
//!   (FP32 4096, BF16/FP16 8192 elements; shorter rows are grouped into 2D blocks);
//! - 16–127 → [`SpanKind::Direct`]: a unit is one row, loaded and stored directly;
//! - shorter or not packed → [`SpanKind::Scatter`]: a unit is one element, visited by a
//!   carry walker.
//!
//! Units form a row-major grid; a worker's contiguous range of units is located once by
//! division at worker start, then advanced with carries.

use simak_core::DType;
use simak_core::tensor::MAX_RANK;
use simak_core::wire::quant::QuantRepr;

use crate::FwError;
use crate::device::{Dma, Event, Platform};

/// Transfers one slot keeps in flight before waiting for them early.
const MAX_EVENTS: usize = 32;

/// The DMA transfers in flight for one local slot (CastTess, the Detess-family entries):
/// pushed as they start, all waited for before the slot's bytes are used or reused.
pub(crate) struct Events {
    list: [Option<Event>; MAX_EVENTS],
    n: usize,
}

impl Events {
    /// No transfer in flight.
    pub(crate) const fn new() -> Events {
        Events {
            list: [None; MAX_EVENTS],
            n: 0,
        }
    }

    /// Records `event`; with [`MAX_EVENTS`] in flight, waits for them all first.
    pub(crate) fn push<W: Dma>(&mut self, worker: &mut W, event: Event) -> Result<(), FwError> {
        if self.n == MAX_EVENTS {
            self.wait_all(worker)?;
        }
        *self.list.get_mut(self.n).ok_or(FwError::Internal)? = Some(event);
        // Below MAX_EVENTS here: no wrap.
        self.n = self.n.wrapping_add(1);
        Ok(())
    }

    /// Waits for every transfer in flight.
    pub(crate) fn wait_all<W: Dma>(&mut self, worker: &mut W) -> Result<(), FwError> {
        for e in self.list.iter_mut().take(self.n) {
            if let Some(e) = e.take() {
                worker.wait(e)?;
            }
        }
        self.n = 0;
        Ok(())
    }
}

/// Checks that `worker` has at least `required` bytes of local memory.
///
/// # Errors
///
/// [`FwError::LocalMemory`] with both sizes.
pub(crate) fn require_local<W: Dma>(worker: &mut W, required: usize) -> Result<(), FwError> {
    let available = worker.local().len();
    if available < required {
        return Err(FwError::LocalMemory {
            required: required as u32,
            available: available as u32,
        });
    }
    Ok(())
}

/// At most this many workers (SPEC §8).
pub const MAX_WORKERS: usize = 4;

/// The worker ring size of `platform`.
///
/// # Errors
///
/// [`FwError::Workers`] unless it is 1..=[`MAX_WORKERS`].
pub(crate) fn ring<P: Platform>(platform: &P) -> Result<usize, FwError> {
    match platform.workers() {
        configured @ 1..=MAX_WORKERS => Ok(configured),
        configured => Err(FwError::Workers { configured }),
    }
}

/// How many workers to launch for `units` units of work with a ring of `configured`
/// (SPEC §8): one unit runs on worker 0 alone; otherwise the full ring.
pub fn launched(units: u64, configured: usize) -> usize {
    if units <= 1 { 1 } else { configured }
}

/// The units of worker `id` out of `launched` workers: contiguous and balanced, worker `id`
/// owning `⌈units · id / n⌉ .. ⌈units · (id + 1) / n⌉` (SPEC §8). Rounding the boundaries
/// up gives worker 0 the first `⌈units / n⌉ ≥ 1` units, so unit 0 always runs on worker 0
/// (last), and a worker whose range is empty is never started.
pub fn range(units: u64, id: usize, launched: usize) -> (u64, u64) {
    // In u128 so that `units · (id + 1) + n − 1` cannot overflow; the quotients are ≤ units.
    let n = launched.max(1) as u128;
    let id = id as u128;
    let at = |k: u128| {
        u128::from(units)
            .wrapping_mul(k)
            .wrapping_add(n.wrapping_sub(1))
            .checked_div(n)
            .unwrap_or(0) as u64
    };
    (at(id), at(id.wrapping_add(1)))
}

/// Runs `body(worker, start, end)` for every launched worker with a nonempty range of the
/// `units`: physical IDs 1..N−1 first, worker 0 last (SPEC §8). Stops at the first error.
pub(crate) fn for_each_worker<P: Platform>(
    platform: &mut P,
    units: u64,
    launched: usize,
    mut body: impl FnMut(&mut P::Worker<'_>, u64, u64) -> Result<(), FwError>,
) -> Result<(), FwError> {
    fw_log!(
        debug,
        "partition: {=u64} units on {=usize} of {=usize} workers",
        units,
        launched,
        platform.workers()
    );
    for id in (1..launched).chain(core::iter::once(0)) {
        let (start, end) = range(units, id, launched);
        if start == end {
            continue;
        }
        fw_log!(
            debug,
            "worker {=usize}: units {=u64}..{=u64}",
            id,
            start,
            end
        );
        body(&mut platform.worker(id), start, end)?;
    }
    Ok(())
}

/// Bus address `base + offset`; decode proved `base + span ≤ 2^32` and offsets stay inside
/// the span, so a failure is an internal error.
pub(crate) fn bus(base: u32, offset: u64) -> Result<u32, FwError> {
    u64::from(base)
        .checked_add(offset)
        .and_then(|a| u32::try_from(a).ok())
        .ok_or(FwError::Internal)
}

/// `x` as a 32-bit device quantity; larger is an internal error.
pub(crate) fn small(x: u64) -> Result<u32, FwError> {
    u32::try_from(x).map_err(|_| FwError::Internal)
}
/// `a · b`, or [`FwError::Internal`] on overflow (never for a decoded descriptor).
pub(crate) fn mul<T: CheckedArith>(a: T, b: T) -> Result<T, FwError> {
    a.checked_mul_(b).ok_or(FwError::Internal)
}

/// `a + b`, or [`FwError::Internal`] on overflow (never for a decoded descriptor).
pub(crate) fn add<T: CheckedArith>(a: T, b: T) -> Result<T, FwError> {
    a.checked_add_(b).ok_or(FwError::Internal)
}

/// `a − b`, or [`FwError::Internal`] below zero (never for a decoded descriptor).
pub(crate) fn sub<T: CheckedArith>(a: T, b: T) -> Result<T, FwError> {
    a.checked_sub_(b).ok_or(FwError::Internal)
}

/// `a / b`, or [`FwError::Internal`] for `b = 0` (never for a decoded descriptor).
pub(crate) fn div<T: CheckedArith>(a: T, b: T) -> Result<T, FwError> {
    a.checked_div_(b).ok_or(FwError::Internal)
}

/// `a mod b`, or [`FwError::Internal`] for `b = 0` (never for a decoded descriptor).
pub(crate) fn rem<T: CheckedArith>(a: T, b: T) -> Result<T, FwError> {
    a.checked_rem_(b).ok_or(FwError::Internal)
}

/// The checked operations of `u64` and `usize`, for [`mul`], [`add`], [`sub`], [`div`]
/// and [`rem`].
pub(crate) trait CheckedArith: Sized {
    fn checked_mul_(self, b: Self) -> Option<Self>;
    fn checked_add_(self, b: Self) -> Option<Self>;
    fn checked_sub_(self, b: Self) -> Option<Self>;
    fn checked_div_(self, b: Self) -> Option<Self>;
    fn checked_rem_(self, b: Self) -> Option<Self>;
}

macro_rules! checked_arith {
    ($($t:ty),*) => {$(
        impl CheckedArith for $t {
            fn checked_mul_(self, b: Self) -> Option<Self> {
                self.checked_mul(b)
            }
            fn checked_add_(self, b: Self) -> Option<Self> {
                self.checked_add(b)
            }
            fn checked_sub_(self, b: Self) -> Option<Self> {
                self.checked_sub(b)
            }
            fn checked_div_(self, b: Self) -> Option<Self> {
                self.checked_div(b)
            }
            fn checked_rem_(self, b: Self) -> Option<Self> {
                self.checked_rem(b)
            }
        }
    )*};
}
checked_arith!(u64, usize);

/// Contiguous suffixes of at least this many elements use DMA blocks.
pub const DMA_MIN_RUN: u64 = 128;
/// Contiguous suffixes of at least this many elements (and < [`DMA_MIN_RUN`]) use direct
/// vector loads and stores.
pub const DIRECT_MIN_RUN: u64 = 16;
/// Input bytes per DMA block slot (16 KiB).
pub const IN_SLOT_BYTES: usize = 16 * 1024;
/// Local memory budget per worker: two ping-pong slots (48 KiB).
pub const LOCAL_MEMORY_BYTES: usize = 48 * 1024;

/// Elements per DMA block: FP32 4096, BF16 and FP16 8192 (16 KiB of input either way).
pub const fn block_elements(dtype: DType) -> usize {
    match dtype {
        DType::F32 => 4096,
        _ => 8192,
    }
}

/// Local bytes of one ping-pong slot: 16 KiB input plus one output byte per element.
pub const fn slot_bytes(dtype: DType) -> usize {
    // 16 KiB plus at most 16 Ki elements.
    IN_SLOT_BYTES.wrapping_add(block_elements(dtype))
}

/// How a call moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SpanKind {
    /// DMA blocks through two ping-pong local slots.
    Dma,
    /// Direct global loads and stores of short rows.
    Direct,
    /// One element at a time with the carry walker.
    Scatter,
    /// Transpose/gather panels: the input's fastest axis differs from the output's; a
    /// bounded 2D panel is staged by DMA, quantized along the input axis, transposed in
    /// local memory and written out by DMA along the output axis.
    Transpose,
    /// Short regular rows (2 to 15 elements packed on both ports) grouped by 2D DMA into
    /// local output blocks that own whole 16-byte output granules.
    ShortRows,
}

impl SpanKind {
    /// A short stable name: `dma`, `direct`, `scatter`, `transpose`, `short-rows` (as the
    /// CLI's `--json` reports it).
    pub const fn name(self) -> &'static str {
        match self {
            SpanKind::Dma => "dma",
            SpanKind::Direct => "direct",
            SpanKind::Scatter => "scatter",
            SpanKind::Transpose => "transpose",
            SpanKind::ShortRows => "short-rows",
        }
    }
}

/// One grid axis: extent in units, byte strides on each port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Axis {
    /// Extent.
    pub extent: u64,
    /// Input byte stride.
    pub input: u64,
    /// Output byte stride.
    pub output: u64,
}

/// The geometry of one call: span kind, unit grid and unit shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Span kind.
    pub kind: SpanKind,
    /// Grid axes (slowest first) whose points are the work units.
    pub grid: [Axis; MAX_RANK],
    /// Number of grid axes used.
    pub n_grid: usize,
    /// Elements per row of a unit (the contiguous suffix; 1 for scatter).
    pub row: u64,
    /// DMA: elements per block (row chunk) when rows are split, else the row length.
    pub chunk: u64,
    /// DMA: rows per unit when short rows are grouped (1 otherwise).
    pub rows_per_unit: u64,
    /// DMA: total rows along the grouped axis (its extent), for the boundary unit.
    pub grouped_rows: u64,
    /// DMA: byte pitch between grouped rows on each port.
    pub row_pitch: Axis,
    /// Whether the last grid axis chunks rows (`true`) or groups rows (`false`).
    pub splits_rows: bool,
    /// Total number of units.
    pub units: u64,
    /// Transpose: the panel axes and extents ([`Panel::default`] otherwise).
    pub panel: Panel,
}

/// Elements of one transpose panel at most (16 KiB of FP32 input, 4 KiB of output: it fits
/// the DMA slots of every dtype).
pub const PANEL_ELEMENTS: u64 = 4096;
/// Output granule in bytes: a short-row unit owns whole granules (SPEC §8).
pub const GRANULE: u64 = 16;

/// The two axes of a transpose panel (SPEC §8): `across` is the input's contiguous axis
/// (input stride = element size), `along` the output's (output stride 1). A panel is
/// `along_len` input rows of `across_len` elements; the last two grid axes are the panel
/// indices along `along`, then `across`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Panel {
    /// The input-contiguous axis (full extent and strides).
    pub across: Axis,
    /// The output-contiguous axis (full extent and strides).
    pub along: Axis,
    /// Elements of a panel along `across` (the boundary panel may have fewer).
    pub across_len: u64,
    /// Elements of a panel along `along` (the boundary panel may have fewer).
    pub along_len: u64,
}

impl Geometry {
    /// Builds the geometry of a validated, nonempty descriptor.
    pub fn new(repr: &QuantRepr) -> Geometry {
        let elem = repr.prefix.dtype.size_u64();
        // Active axes, slowest input stride first.
        let mut axes = [Axis::default(); MAX_RANK];
        let mut n = 0usize;
        for ((&extent, &input), &output) in repr
            .prefix
            .extents
            .iter()
            .zip(repr.prefix.input_strides.iter())
            .zip(repr.output_strides.iter())
            .take(usize::from(repr.prefix.rank))
        {
            if extent > 1
                && let Some(slot) = axes.get_mut(n)
            {
                *slot = Axis {
                    extent,
                    input,
                    output,
                };
                // At most MAX_RANK.
                n = n.wrapping_add(1);
            }
        }
        if let Some(active) = axes.get_mut(..n) {
            active.sort_unstable_by_key(|a| core::cmp::Reverse(a.input));
        }
        // Merge a slower axis into the next faster one when both ports are packed across.
        let mut merged = [Axis::default(); MAX_RANK];
        let mut m = 0usize;
        for a in axes.iter().take(n) {
            // The products are below the validated spans (SPEC §2: they fit u64); `checked`
            // keeps a never-seen overflow from merging axes.
            if let Some(prev) = m.checked_sub(1).and_then(|p| merged.get_mut(p))
                && Some(prev.input) == a.input.checked_mul(a.extent)
                && Some(prev.output) == a.output.checked_mul(a.extent)
            {
                *prev = Axis {
                    extent: prev.extent.wrapping_mul(a.extent),
                    input: a.input,
                    output: a.output,
                };
                continue;
            }
            if let Some(slot) = merged.get_mut(m) {
                *slot = *a;
                m = m.wrapping_add(1);
            }
        }
        let inner = m.checked_sub(1).and_then(|i| merged.get(i).copied());
        let packed_run = match inner {
            Some(a) if a.input == elem && a.output == 1 => a.extent,
            _ => 1,
        };
        let kind = if packed_run >= DMA_MIN_RUN {
            SpanKind::Dma
        } else if packed_run >= DIRECT_MIN_RUN {
            SpanKind::Direct
        } else if let Some(g) = transpose(&merged, m, elem) {
            return g;
        } else if let Some(g) = short_rows(repr, &merged, m, packed_run) {
            return g;
        } else {
            SpanKind::Scatter
        };
        let mut g = Geometry {
            kind,
            grid: [Axis::default(); MAX_RANK],
            n_grid: 0,
            row: 1,
            chunk: 1,
            rows_per_unit: 1,
            grouped_rows: 1,
            row_pitch: Axis::default(),
            splits_rows: true,
            units: 1,
            panel: Panel::default(),
        };
        match kind {
            SpanKind::Scatter | SpanKind::Transpose | SpanKind::ShortRows => {
                g.grid = merged;
                g.n_grid = m;
            }
            SpanKind::Direct => {
                g.grid = merged;
                // Direct needs a packed run, hence an active axis: m ≥ 1.
                g.n_grid = m.saturating_sub(1);
                g.row = packed_run;
                g.chunk = packed_run;
            }
            SpanKind::Dma => {
                let block = block_elements(repr.prefix.dtype) as u64;
                g.grid = merged;
                g.row = packed_run;
                // A DMA run is an active axis: m ≥ 1.
                let outer = m.saturating_sub(1);
                if packed_run >= block || outer == 0 {
                    // Split each row into blocks: grid = outer axes + block index.
                    g.chunk = block.min(packed_run);
                    if let Some(slot) = g.grid.get_mut(outer) {
                        *slot = Axis {
                            extent: packed_run.div_ceil(block),
                            input: block.wrapping_mul(elem),
                            output: block,
                        };
                    }
                    g.n_grid = outer.wrapping_add(1);
                    g.splits_rows = true;
                } else {
                    // Group short rows of the fastest outer axis into 2D blocks.
                    // Here outer ≥ 1 and packed_run ≥ 1 (an active axis).
                    let fastest = g
                        .grid
                        .get(outer.wrapping_sub(1))
                        .copied()
                        .unwrap_or_default();
                    let k = block
                        .checked_div(packed_run)
                        .unwrap_or(0)
                        .min(fastest.extent);
                    g.chunk = packed_run;
                    g.rows_per_unit = k;
                    g.grouped_rows = fastest.extent;
                    g.row_pitch = fastest;
                    if let Some(slot) = g.grid.get_mut(outer.wrapping_sub(1)) {
                        *slot = Axis {
                            extent: fastest.extent.div_ceil(k),
                            input: fastest.input.wrapping_mul(k),
                            output: fastest.output.wrapping_mul(k),
                        };
                    }
                    if let Some(slot) = g.grid.get_mut(outer) {
                        *slot = Axis::default();
                    }
                    g.n_grid = outer;
                    g.splits_rows = false;
                }
            }
        }
        g.units = g.grid.iter().take(g.n_grid).map(|a| a.extent).product();
        g
    }
}

/// The transpose/gather panel geometry (SPEC §8), when eligible: the innermost merged axis
/// (by input stride) is input-contiguous (stride = element size) and another merged axis
/// is output-contiguous (stride 1). `None` otherwise.
fn transpose(merged: &[Axis; MAX_RANK], m: usize, elem: u64) -> Option<Geometry> {
    let inner = m.checked_sub(1)?;
    let across = *merged.get(inner)?;
    if across.input != elem {
        return None;
    }
    let along_at = merged.iter().take(inner).position(|a| a.output == 1)?;
    let along = *merged.get(along_at)?;
    // A panel of at most PANEL_ELEMENTS: a whole short output axis (rows of ≥ 16 input
    // elements), else 64 × 64; a whole short input axis lengthens the output rows.
    let mut along_len = if along.extent.checked_mul(DIRECT_MIN_RUN)? <= PANEL_ELEMENTS {
        along.extent
    } else {
        64
    };
    let mut across_len = across.extent.min(PANEL_ELEMENTS.checked_div(along_len)?);
    if across_len < across.extent {
        across_len = across_len.checked_sub(across_len.checked_rem(DIRECT_MIN_RUN)?)?;
    } else {
        along_len = along.extent.min(PANEL_ELEMENTS.checked_div(across_len)?);
    }
    let mut grid = [Axis::default(); MAX_RANK];
    let mut n = 0usize;
    let others = merged
        .iter()
        .take(inner)
        .enumerate()
        .filter(|&(k, _)| k != along_at)
        .map(|(_, a)| *a);
    let tiles = [
        Axis {
            extent: along.extent.div_ceil(along_len),
            input: along.input.checked_mul(along_len)?,
            output: along_len,
        },
        Axis {
            extent: across.extent.div_ceil(across_len),
            input: across_len.checked_mul(elem)?,
            output: across.output.checked_mul(across_len)?,
        },
    ];
    for a in others.chain(tiles) {
        *grid.get_mut(n)? = a;
        n = n.checked_add(1)?;
    }
    Some(Geometry {
        kind: SpanKind::Transpose,
        grid,
        n_grid: n,
        row: across_len,
        chunk: across_len,
        rows_per_unit: along_len,
        grouped_rows: along.extent,
        row_pitch: along,
        splits_rows: false,
        units: grid.iter().take(n).map(|a| a.extent).product(),
        panel: Panel {
            across,
            along,
            across_len,
            along_len,
        },
    })
}

/// The short-row geometry (SPEC §8), when eligible: a common contiguous suffix of 2 to 15
/// elements, an outer axis to group rows along, a 16-byte aligned output address, and
/// units of `k` rows whose output hulls start on 16-byte granules and nest (each grid
/// axis's output stride is a multiple of 16 and at least the hull of everything faster),
/// so no two units, hence no two workers, write into one granule. `None` otherwise.
fn short_rows(repr: &QuantRepr, merged: &[Axis; MAX_RANK], m: usize, row: u64) -> Option<Geometry> {
    if !(2..DIRECT_MIN_RUN).contains(&row)
        || m < 2
        || u64::from(repr.prefix.output_address) % GRANULE != 0
    {
        return None;
    }
    let at = m.checked_sub(2)?;
    let grouped = *merged.get(at)?;
    let outer: u64 = merged.iter().take(at).map(|a| a.extent).product();
    // k·pitch is a multiple of the granule; k·row ≤ PANEL_ELEMENTS; and while possible,
    // at least MAX_WORKERS units (four useful owners).
    let step = GRANULE.checked_div(gcd(grouped.output, GRANULE))?;
    let most = PANEL_ELEMENTS
        .checked_div(row)?
        .checked_div(step)?
        .checked_mul(step)?;
    if most == 0 {
        return None;
    }
    let need = (MAX_WORKERS as u64).div_ceil(outer).max(1);
    let useful = grouped
        .extent
        .div_ceil(need)
        .div_ceil(step)
        .checked_mul(step)?;
    let k = useful.min(most).max(step);
    let mut grid = [Axis::default(); MAX_RANK];
    for (slot, a) in grid.iter_mut().zip(merged.iter().take(at)) {
        *slot = *a;
    }
    *grid.get_mut(at)? = Axis {
        extent: grouped.extent.div_ceil(k),
        input: grouped.input.checked_mul(k)?,
        output: grouped.output.checked_mul(k)?,
    };
    let n = at.checked_add(1)?;
    // Granule proof: walk the grid axes by increasing output stride.
    let rows = k.min(grouped.extent);
    let mut hull = rows
        .checked_sub(1)?
        .checked_mul(grouped.output)?
        .checked_add(row)?;
    let mut axes = grid;
    if let Some(active) = axes.get_mut(..n) {
        active.sort_unstable_by_key(|a| a.output);
    }
    for a in axes.iter().take(n).filter(|a| a.extent > 1) {
        if !a.output.is_multiple_of(GRANULE) || a.output < hull {
            return None;
        }
        hull = hull.checked_add(a.output.checked_mul(a.extent.checked_sub(1)?)?)?;
    }
    Some(Geometry {
        kind: SpanKind::ShortRows,
        grid,
        n_grid: n,
        row,
        chunk: row,
        rows_per_unit: k,
        grouped_rows: grouped.extent,
        row_pitch: grouped,
        splits_rows: false,
        units: grid.iter().take(n).map(|a| a.extent).product(),
        panel: Panel::default(),
    })
}

const fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        // b ≠ 0 here.
        let t = match a.checked_rem(b) {
            Some(t) => t,
            None => 0,
        };
        a = b;
        b = t;
    }
    a
}

/// A carry walker over a unit grid: the current unit's grid coordinates and byte offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walker {
    grid: [Axis; MAX_RANK],
    n: usize,
    index: [u64; MAX_RANK],
    /// Input byte offset of the current unit.
    pub input: u64,
    /// Output byte offset of the current unit.
    pub output: u64,
}

impl Walker {
    /// A walker positioned at unit `start` (row-major over the grid). The only division.
    pub fn new(g: &Geometry, start: u64) -> Walker {
        let mut w = Walker {
            grid: g.grid,
            n: g.n_grid,
            index: [0; MAX_RANK],
            input: 0,
            output: 0,
        };
        let mut rest = start;
        for k in (0..w.n).rev() {
            let (Some(axis), Some(i)) = (w.grid.get(k), w.index.get_mut(k)) else {
                continue;
            };
            // Grid extents are ≥ 1 and the offsets stay below the spans (wrapping cannot
            // happen; it would be the release build's arithmetic anyway).
            *i = rest.checked_rem(axis.extent).unwrap_or(0);
            rest = rest.checked_div(axis.extent).unwrap_or(0);
            w.input = w.input.wrapping_add(i.wrapping_mul(axis.input));
            w.output = w.output.wrapping_add(i.wrapping_mul(axis.output));
        }
        w
    }

    /// Index along grid axis `k` (0 = slowest; 0 for an axis beyond the grid).
    pub fn index(&self, k: usize) -> u64 {
        self.index.get(k).copied().unwrap_or(0)
    }

    /// Index along the last (fastest) grid axis.
    pub fn last_index(&self) -> u64 {
        match self.n {
            0 => 0,
            n => self.index.get(n.wrapping_sub(1)).copied().unwrap_or(0),
        }
    }

    /// Moves to the next unit with carries.
    pub fn advance(&mut self) {
        for k in (0..self.n).rev() {
            let (Some(axis), Some(i)) = (self.grid.get(k), self.index.get_mut(k)) else {
                continue;
            };
            // A carry walk as `View::offsets`: the index stays in range and the offsets
            // below the spans, so wrapping never happens.
            *i = i.wrapping_add(1);
            self.input = self.input.wrapping_add(axis.input);
            self.output = self.output.wrapping_add(axis.output);
            if *i < axis.extent {
                return;
            }
            self.input = self.input.wrapping_sub(i.wrapping_mul(axis.input));
            self.output = self.output.wrapping_sub(i.wrapping_mul(axis.output));
            *i = 0;
        }
    }
}
