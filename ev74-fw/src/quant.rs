//! The Quant v1 native entry: partition, data movement and numerics of one decoded call.
//!
//! Called by [`crate::Firmware::dispatch`] after `simak_core::ev74::quant::decode` accepted
//! the descriptor. Workers 1..N−1 run first, then worker 0 (SPEC §8). Per worker:
//!
//! - DMA: blocks stream through two ping-pong slots. The next block's input transfer is
//!   started before the current block is computed; an output slot is reused only after its
//!   previous transfer completed; every output transfer completes before the worker returns.
//! - Direct: each row is loaded with one global read, computed (16-element blocks, exact
//!   tail) and stored with one global write.
//! - Scatter: one element read and one byte written per unit, exact path.

use simak_core::wire::quant::QuantRepr;

use crate::device::{
    ComputePath, DeviceMemory, Direction, Dma, Event, Fault, Meter, Platform, Transfer,
};
use crate::numerics::{BlockStats, Entry, EntryParams};
use crate::work::{
    Geometry, IN_SLOT_BYTES, SpanKind, Walker, add, bus, mul, slot_bytes, small, sub,
};
use crate::{FwError, Report};

/// Longest direct row in elements (exclusive bound of the direct kind).
const DIRECT_MAX: usize = crate::work::DMA_MIN_RUN as usize;
/// Elements a transpose panel row is quantized in at a time (a multiple of 16).
const TRANSPOSE_CHUNK: usize = 64;

/// Runs a decoded, nonempty call with `entry` on `platform`.
pub(crate) fn execute<P: Platform>(
    platform: &mut P,
    repr: &QuantRepr,
    entry: &Entry,
) -> Result<Report, FwError> {
    let configured = crate::work::ring(platform)?;
    let geometry = Geometry::new(repr);
    let launched = crate::work::launched(geometry.units, configured);
    fw_log!(
        debug,
        "quant: {} path, {=u64} units, run {=u64}, {=u64} rows per unit",
        geometry.kind,
        geometry.units,
        geometry.row,
        geometry.rows_per_unit
    );
    let params = EntryParams {
        multiplier: repr.multiplier,
        zero_point: repr.zero_point,
    };
    let mut report = Report {
        kind: geometry.kind,
        units: geometry.units,
        run: geometry.row,
        launched,
        stats: BlockStats::default(),
        transfers: 0,
        tess: crate::TessStats::default(),
    };
    let ctx = Ctx {
        repr,
        entry,
        params: &params,
        geometry: &geometry,
    };
    crate::work::for_each_worker(platform, geometry.units, launched, |worker, start, end| {
        match geometry.kind {
            SpanKind::Scatter => ctx.scatter(worker, start, end, &mut report),
            SpanKind::Direct => ctx.direct(worker, start, end, &mut report),
            SpanKind::Dma | SpanKind::ShortRows | SpanKind::Transpose => {
                ctx.dma(worker, start, end, &mut report)
            }
        }
    })?;
    Ok(report)
}

struct Ctx<'a> {
    repr: &'a QuantRepr,
    entry: &'a Entry,
    params: &'a EntryParams,
    geometry: &'a Geometry,
}

impl Ctx<'_> {
    /// Tallies what the entry's contiguous-run function computed and tells the meter.
    fn meter<W: Meter>(&self, worker: &mut W, stats: BlockStats, report: &mut Report) {
        let (fast, fallback) = stats.elements(self.params.multiplier_subnormal());
        if fast > 0 {
            worker.compute(ComputePath::Fast, fast);
        }
        if fallback > 0 {
            worker.compute(ComputePath::Fallback, fallback);
        }
        report.stats.add(stats);
    }

    fn scatter<W: DeviceMemory + Meter>(
        &self,
        worker: &mut W,
        start: u64,
        end: u64,
        report: &mut Report,
    ) -> Result<(), FwError> {
        let elem = self.repr.prefix.dtype.size();
        let mut walker = Walker::new(self.geometry, start);
        let mut buf = [0u8; 4];
        let element = self.entry.element;
        for _ in start..end {
            let src = buf.get_mut(..elem).ok_or(FwError::Internal)?;
            worker.read(bus(self.repr.prefix.input_address, walker.input)?, src)?;
            let bits = match *src {
                [a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
                [a, b] => u32::from(u16::from_le_bytes([a, b])),
                _ => 0,
            };
            let q = element(&self.params.multiplier, self.params.zero_point, bits) as u8;
            worker.compute(ComputePath::Fallback, 1);
            worker.write(bus(self.repr.prefix.output_address, walker.output)?, &[q])?;
            report.stats.tail = report.stats.tail.saturating_add(1);
            walker.advance();
        }
        Ok(())
    }

    fn direct<W: DeviceMemory + Meter>(
        &self,
        worker: &mut W,
        start: u64,
        end: u64,
        report: &mut Report,
    ) -> Result<(), FwError> {
        let elem = self.repr.prefix.dtype.size();
        let row = usize::try_from(self.geometry.row).map_err(|_| FwError::Internal)?;
        if row >= DIRECT_MAX {
            return Err(FwError::Internal);
        }
        let mut inp = [0u8; DIRECT_MAX * 4];
        let mut out = [0u8; DIRECT_MAX];
        let src = inp.get_mut(..mul(row, elem)?).ok_or(FwError::Internal)?;
        let dst = out.get_mut(..row).ok_or(FwError::Internal)?;
        let mut walker = Walker::new(self.geometry, start);
        for _ in start..end {
            worker.read(bus(self.repr.prefix.input_address, walker.input)?, src)?;
            let stats = (self.entry.run)(self.params, src, dst);
            self.meter(worker, stats, report);
            worker.write(bus(self.repr.prefix.output_address, walker.output)?, dst)?;
            walker.advance();
        }
        Ok(())
    }

    /// The input and output transfers of the unit at `walker`, into slot `slot`.
    fn unit(&self, walker: &Walker, slot: usize) -> Result<(Transfer, Transfer, usize), FwError> {
        let g = self.geometry;
        if g.kind == SpanKind::Transpose {
            // `along` input rows of `across` elements (pitch: the along axis's input
            // stride) staged compactly; `across` output rows of `along` bytes (pitch: the
            // across axis's output stride) from the transposed local output.
            let (across, along) = self.panel_extents(walker);
            let p = &g.panel;
            return self.transfers(
                walker,
                slot,
                (across, along, p.along.input),
                (along, across, p.across.output),
            );
        }
        let (row_elems, rows) = if g.splits_rows {
            let done = mul(walker.last_index(), g.chunk)?;
            (g.chunk.min(sub(g.row, done)?), 1)
        } else {
            let done = mul(walker.last_index(), g.rows_per_unit)?;
            (g.row, g.rows_per_unit.min(sub(g.grouped_rows, done)?))
        };
        self.transfers(
            walker,
            slot,
            (row_elems, rows, g.row_pitch.input),
            (row_elems, rows, g.row_pitch.output),
        )
    }

    /// The 2D transfers of the unit at `walker` into slot `slot`: `input` = (elements per
    /// row, rows, global pitch in bytes) staged compactly at the slot's start, `output` =
    /// (bytes per row, rows, global pitch) sent from the slot's output area; and the unit's
    /// element count.
    fn transfers(
        &self,
        walker: &Walker,
        slot: usize,
        (in_row, in_rows, in_pitch): (u64, u64, u64),
        (out_row, out_rows, out_pitch): (u64, u64, u64),
    ) -> Result<(Transfer, Transfer, usize), FwError> {
        let elem = self.repr.prefix.dtype.size() as u64;
        let slot_base = mul(slot, slot_bytes(self.repr.prefix.dtype))?;
        let input = Transfer {
            direction: Direction::ToLocal,
            global: bus(self.repr.prefix.input_address, walker.input)?,
            global_pitch: small(in_pitch)?,
            local: small(slot_base as u64)?,
            local_pitch: small(mul(in_row, elem)?)?,
            row_bytes: small(mul(in_row, elem)?)?,
            rows: small(in_rows)?,
        };
        let output = Transfer {
            direction: Direction::ToGlobal,
            global: bus(self.repr.prefix.output_address, walker.output)?,
            global_pitch: small(out_pitch)?,
            local: small(add(slot_base, IN_SLOT_BYTES)? as u64)?,
            local_pitch: small(out_row)?,
            row_bytes: small(out_row)?,
            rows: small(out_rows)?,
        };
        Ok((
            input,
            output,
            usize::try_from(mul(in_row, in_rows)?).map_err(|_| FwError::Internal)?,
        ))
    }

    /// The extents `(across, along)` of the panel at `walker` (smaller at the boundary).
    fn panel_extents(&self, walker: &Walker) -> (u64, u64) {
        let g = self.geometry;
        let p = &g.panel;
        // A transpose grid has at least two axes and the walker stays inside the panels,
        // so these neither overflow nor go below zero.
        let along_done = walker
            .index(g.n_grid.saturating_sub(2))
            .saturating_mul(p.along_len);
        let across_done = walker.last_index().saturating_mul(p.across_len);
        (
            p.across_len
                .min(p.across.extent.saturating_sub(across_done)),
            p.along_len.min(p.along.extent.saturating_sub(along_done)),
        )
    }

    /// Quantizes a staged panel of `along` input rows of `across` elements from `src` and
    /// stores it transposed into `dst` (`across` rows of `along` bytes): each input row in
    /// chunks of [`TRANSPOSE_CHUNK`] elements (a multiple of 16, so the blocks and the exact
    /// tail are those of the whole row), each chunk's bytes scattered down a column.
    fn panel_compute(
        &self,
        src: &[u8],
        dst: &mut [u8],
        (across, along): (usize, usize),
    ) -> Result<BlockStats, FwError> {
        let elem = self.repr.prefix.dtype.size();
        let mut chunk = [0u8; TRANSPOSE_CHUNK];
        let mut stats = BlockStats::default();
        for (o, row) in src.chunks_exact(mul(across, elem)?).take(along).enumerate() {
            for (c, part) in row.chunks(mul(TRANSPOSE_CHUNK, elem)?).enumerate() {
                let n = part.len().checked_div(elem).ok_or(FwError::Internal)?;
                let q = chunk.get_mut(..n).ok_or(FwError::Internal)?;
                stats.add((self.entry.run)(self.params, part, q));
                let first = mul(c, TRANSPOSE_CHUNK)?;
                for (j, &b) in q.iter().enumerate() {
                    *dst.get_mut(add(mul(add(first, j)?, along)?, o)?)
                        .ok_or(FwError::Internal)? = b;
                }
            }
        }
        Ok(stats)
    }

    fn dma<W: Dma + Meter>(
        &self,
        worker: &mut W,
        start: u64,
        end: u64,
        report: &mut Report,
    ) -> Result<(), FwError> {
        let dtype = self.repr.prefix.dtype;
        let elem = dtype.size();
        let required = mul(2, slot_bytes(dtype))?;
        let available = worker.local().len();
        if available < required {
            return Err(FwError::LocalMemory {
                required: required as u32,
                available: available as u32,
            });
        }
        let mut walker = Walker::new(self.geometry, start);
        let mut pending_out: [Option<Event>; 2] = [None, None];
        let (first_in, mut cur_out, mut cur_n) = self.unit(&walker, 0)?;
        let mut in_event = [Some(worker.start(&first_in)?), None];
        report.transfers = report.transfers.saturating_add(1);
        let mut slot = 0usize;
        let mut k = start;
        loop {
            k = add(k, 1)?;
            let has_next = k < end;
            let mut next = None;
            if has_next {
                walker.advance();
                let other = slot ^ 1;
                let (next_in, next_out, next_n) = self.unit(&walker, other)?;
                // Prefetch: the other slot's input was consumed by the previous compute.
                *in_event.get_mut(other).ok_or(FwError::Internal)? = Some(worker.start(&next_in)?);
                report.transfers = report.transfers.saturating_add(1);
                next = Some((next_out, next_n));
            }
            if let Some(e) = in_event.get_mut(slot).and_then(Option::take) {
                worker.wait(e)?;
            }
            if let Some(e) = pending_out.get_mut(slot).and_then(Option::take) {
                worker.wait(e)?;
            }
            let base = mul(slot, slot_bytes(dtype))?;
            let local = worker.local();
            let (lo, hi) = local.split_at_mut(add(base, IN_SLOT_BYTES)?);
            let src = lo
                .get(base..add(base, mul(cur_n, elem)?)?)
                .ok_or(FwError::Fault(Fault::Local {
                    offset: base as u64,
                    len: cur_n.saturating_mul(elem) as u64,
                }))?;
            let dst = hi.get_mut(..cur_n).ok_or(FwError::Internal)?;
            if self.geometry.kind == SpanKind::Transpose {
                let shape = (cur_out.rows as usize, cur_out.row_bytes as usize);
                let stats = self.panel_compute(src, dst, shape)?;
                self.meter(worker, stats, report);
                worker.compute(ComputePath::Transpose, cur_n as u64);
            } else {
                let stats = (self.entry.run)(self.params, src, dst);
                self.meter(worker, stats, report);
            }
            *pending_out.get_mut(slot).ok_or(FwError::Internal)? = Some(worker.start(&cur_out)?);
            report.transfers = report.transfers.saturating_add(1);
            match next {
                Some((o, n)) => {
                    cur_out = o;
                    cur_n = n;
                    slot ^= 1;
                }
                None => break,
            }
        }
        for e in pending_out.into_iter().flatten() {
            worker.wait(e)?;
        }
        Ok(())
    }
}
