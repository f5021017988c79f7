//! The CastTess v1 native entry: partition, data movement and packing of one decoded call
//! (SPEC §4, §5, §8).
//!
//! Called by [`crate::Firmware::dispatch`] after `simak_core::ev74::casttess::decode`
//! accepted the descriptor. The tasks of [`crate::tess`] are split into contiguous ranges,
//! one per worker; workers 1..N−1 run first, then worker 0. Per worker, tasks stream
//! through two local slots (16 KiB source + 8 KiB output each, 48 KiB in all):
//!
//! - the next task's source is requested before the current task is packed: 2D DMA per
//!   pixel row or per channel; direct loads for rows under [`DMA_MIN_ROW_BYTES`] unless
//!   they form an eligible rectangle of at least [`RECT_MIN_BYTES`] or a BF16 exact-width
//!   row (see [`Ctx::fetch`] and [`Ctx::exact_width`]); a whole H-contiguous tile; or, for
//!   classes that stage complete pixels, every source channel of the band's pixels, one
//!   transfer per W segment;
//! - packing waits for every source transfer of its slot, and for the slot's previous
//!   output transfers before overwriting the output area;
//! - packing converts with `simak_core::arith::cast` (integer code, chosen once per call)
//!   straight into the final low/high byte planes, writing padding channels and the
//!   tile's trailing padding with zero (a BF16 call whose every class stages complete
//!   pixels into planes of a multiple of 16 channels packs with the separate 16-lane
//!   BF16 pixel packer instead); the task's output bytes leave by DMA;
//! - every output transfer completes before the worker returns.
//!
//! Each task writes only its own whole 16-byte output blocks, so every output byte is
//! written exactly once and no clearing pass exists.

//
// Arithmetic is checked (`crate::work::{add, mul, sub, div, rem}`, an overflow being
// [`FwError::Internal`]) where a value is set up; the per-element loops use slice
// iterators, and wrapping operations only where a comment states the bound.

use simak_core::DType;
use simak_core::arith::cast;
use simak_core::wire::casttess::CastTessRepr;

use crate::device::{ComputePath, DeviceMemory, Direction, Dma, Event, Meter, Platform, Transfer};
use crate::tess::{
    CLASSES, Cursor, LOCAL_BYTES, Mode, OUTPUT_SLOT_BYTES, SLOT_BYTES, SOURCE_SLOT_BYTES, TaskSpan,
    TessGeometry, TileClass,
};
use crate::work::{Events, add, bus, div, mul, rem, small, sub};
use crate::{FwError, Report, TessStats};

/// Source rows shorter than this many bytes are gathered with direct loads unless their
/// run forms an eligible rectangle ([`RECT_MIN_BYTES`]) or a BF16 exact-width row; longer
/// rows (and whole contiguous runs) move by DMA.
pub const DMA_MIN_ROW_BYTES: u32 = 16;
/// The normal DMA threshold of a 2D source rectangle (SPEC §8): a run of rows under
/// [`DMA_MIN_ROW_BYTES`] moves by one 2D DMA command when its rows hold at least this
/// many bytes in all.
pub const RECT_MIN_BYTES: u64 = 128;
/// Input bytes a tile needs at least for the whole-panel H-contiguous path (SPEC §8): the
/// normal rectangle threshold.
pub const HCONTIG_MIN_BYTES: u64 = RECT_MIN_BYTES;
/// BF16 exact-width gathers (SPEC §8): fewest pixels of a strided row segment.
pub const EXACT_WIDTH_MIN_PIXELS: u64 = 16;
/// BF16 exact-width gathers: most pixels of a strided row segment (64 pixels are 128
/// bytes, a rectangle of the normal threshold).
pub const EXACT_WIDTH_MAX_PIXELS: u64 = RECT_MIN_BYTES / 2 - 1;
/// BF16 exact-width gathers: fewest pixels of the task's band.
pub const EXACT_WIDTH_MIN_BAND: u64 = 64;
/// BF16 exact-width gathers: largest row pitch in bytes (the 16-bit DMA pitch range).
pub const EXACT_WIDTH_MAX_PITCH: u64 = u16::MAX as u64;

/// An element's raw little-endian bits (zero-extended) to BF16 bits.
type ConvertFn = fn(u32) -> u16;

fn convert_f32(bits: u32) -> u16 {
    cast::f32_to_bf16(bits)
}

fn convert_f16(bits: u32) -> u16 {
    cast::f16_to_bf16(bits as u16)
}

fn convert_bf16(bits: u32) -> u16 {
    cast::bf16_to_bf16(bits as u16)
}

/// The dtype-specific conversion, chosen once per call.
fn convert_fn(dtype: DType) -> Option<ConvertFn> {
    match dtype {
        DType::F32 => Some(convert_f32),
        DType::F16 => Some(convert_f16),
        DType::BF16 => Some(convert_bf16),
        DType::I8 | DType::I16 | DType::I32 => None,
    }
}

/// Runs a decoded, nonempty call on `platform`.
pub(crate) fn execute<P: Platform>(
    platform: &mut P,
    repr: &CastTessRepr,
) -> Result<Report, FwError> {
    let configured = crate::work::ring(platform)?;
    let geometry = TessGeometry::new(repr).ok_or(FwError::Internal)?;
    let convert = convert_fn(repr.prefix.dtype).ok_or(FwError::Internal)?;
    let launched = crate::work::launched(geometry.tasks, configured);
    let elem = repr.prefix.dtype.size();
    let mut hcontig = [false; CLASSES];
    for (h, class) in hcontig.iter_mut().zip(geometry.classes.iter()) {
        *h = class.count != 0
            && !class.staged
            && hcontig_eligible(class, &geometry.role_strides, elem as u64);
    }
    let bf16_pixels = bf16_pixel_packer(&geometry, repr.prefix.dtype);
    fw_log!(
        debug,
        "casttess: {} input, {=u64} tasks, {=usize} classes, band {=u64}, bf16 pixel packer {=bool}",
        repr.prefix.dtype,
        geometry.tasks,
        geometry.n_classes(),
        geometry.band,
        bf16_pixels
    );
    let ctx = Ctx {
        repr,
        g: &geometry,
        convert,
        bf16: repr.prefix.dtype == DType::BF16,
        elem,
        channel_stride: geometry.role_strides[3],
        hcontig,
        c_src: geometry.source_channels(),
        bf16_pixels,
    };
    let mut tess = TessStats {
        classes: geometry.n_classes() as u8,
        ..TessStats::default()
    };
    crate::work::for_each_worker(platform, geometry.tasks, launched, |worker, start, end| {
        crate::work::require_local(worker, LOCAL_BYTES)?;
        ctx.run(worker, start, end, &mut tess)
    })?;
    Ok(Report {
        kind: crate::SpanKind::Dma,
        units: geometry.tasks,
        run: geometry.band,
        launched,
        stats: crate::BlockStats::default(),
        transfers: tess.source_dma.saturating_add(tess.output_dma),
        tess,
    })
}

/// Whether tiles of `class` take the whole-panel H-contiguous path (SPEC §8): one regular
/// band holds the whole tile with every stored channel (a single panel), the tile's H
/// extent is above 1, the H stride is one element (`elem` bytes), the W pitch fits a
/// signed 32-bit value, and the tile holds at least [`HCONTIG_MIN_BYTES`] input bytes.
/// `role_strides` are the input byte strides of D, H, W, C.
pub(crate) fn hcontig_eligible(class: &TileClass, role_strides: &[u64; 4], elem: u64) -> bool {
    let [_, th, _, tc] = class.extents;
    class.mode == Mode::Bands
        && class.tasks == 1
        && th > 1
        && role_strides[1] == elem
        && role_strides[2] <= i32::MAX as u64
        && class
            .pixels
            .checked_mul(tc)
            .and_then(|n| n.checked_mul(elem))
            .is_some_and(|bytes| bytes >= HCONTIG_MIN_BYTES)
}

/// Whether a source run of rows under [`DMA_MIN_ROW_BYTES`] is a rectangle that moves by
/// one 2D DMA command (SPEC §8 "rectangle choice"): it has more than one row, its rows
/// hold at least [`RECT_MIN_BYTES`] bytes in all (`rows · row_bytes`) and its pitch fits a
/// signed 32-bit value. Any row width; only the run's logical bytes are read.
fn rectangle_eligible(run: &Run) -> bool {
    run.rows > 1
        && run
            .rows
            .checked_mul(run.row_bytes)
            .is_some_and(|bytes| bytes >= RECT_MIN_BYTES)
        && run.pitch <= i32::MAX as u64
}

/// The whole short rows of a band that can form one rectangle from the row starting at
/// `coord`: `(rows, pitch)`, or `None`. The band's row segment there must be a whole tile
/// row (row-axis coordinate 0; the row axis is packed, so the row is contiguous) of
/// `row_bytes` under [`DMA_MIN_ROW_BYTES`]. Rows step along the next slower pixel axis of
/// the tile with extent > 1 (H after W; D after H, or after W when the tile's H extent is
/// 1), `pitch` = that axis's stride, and continue across D when the row axis is W and D's
/// stride is the tile's H extent times H's stride (H and D then form one regular axis).
/// `rows` = min(such rows from here, whole rows in the band's `left` pixels).
fn short_rows(
    ext: &[u64; 3],
    strides: &[u64; 3],
    coord: &[u64; 3],
    row_axis: usize,
    row_bytes: u64,
    left: u64,
) -> Option<(u64, u64)> {
    if row_bytes >= u64::from(DMA_MIN_ROW_BYTES) || *coord.get(row_axis)? != 0 {
        return None;
    }
    let [td, th, _] = *ext;
    let [sd, sh, _] = *strides;
    let [d, h, _] = *coord;
    let (regular, pitch) = match row_axis {
        2 if th > 1 => {
            let across = if td > 1 && Some(sd) == th.checked_mul(sh) {
                td.checked_sub(1)?.checked_sub(d)?.checked_mul(th)?
            } else {
                0
            };
            (th.checked_sub(h)?.checked_add(across)?, sh)
        }
        1 | 2 if td > 1 => (td.checked_sub(d)?, sd),
        _ => return None,
    };
    Some((regular.min(left.checked_div(*ext.get(row_axis)?)?), pitch))
}

/// Advances `coord` by `rows` whole rows: the axes slower than `row_axis` move with carry
/// (the row-axis coordinate stays 0). Wraps past the tile's last row (the band ends there).
fn advance_rows(coord: &mut [u64; 3], ext: &[u64; 3], row_axis: usize, rows: u64) {
    let mut carry = rows;
    for (c, &e) in coord.iter_mut().zip(ext).take(row_axis).rev() {
        // `c < e` and `carry ≤ rows`, both tile extents: no wrap. Extents are ≥ 1.
        let v = c.wrapping_add(carry);
        *c = v.checked_rem(e).unwrap_or(0);
        carry = v.checked_div(e).unwrap_or(0);
        if carry == 0 {
            break;
        }
    }
}

/// Whether the call packs with the metadata-selected BF16 pixel packer (SPEC §8), chosen
/// once per call: the input is BF16 and every tile class that occurs is split into regular
/// bands (not the physical-block fallback), has one channel panel, stages complete source
/// pixels ([`crate::tess::staged_band`]) and stores a multiple of 16 channels per plane.
/// Other calls keep the general packer.
pub(crate) fn bf16_pixel_packer(g: &TessGeometry, dtype: DType) -> bool {
    dtype == DType::BF16
        && g.classes.iter().filter(|c| c.count != 0).all(|c| {
            c.mode == Mode::Bands && c.panels == 1 && c.staged && c.stored.is_multiple_of(16)
        })
}

/// The BF16 exact-width rule of [`Ctx::exact_width`] for a strided pixel row `run` of a
/// task that gathers `kc` channels per pixel in a band of `band` pixels.
fn exact_width_eligible(bf16: bool, kc: u64, band: u64, run: &Run) -> bool {
    bf16 && kc == 1
        && run.row_bytes == 2
        && run.pitch != 2
        && (EXACT_WIDTH_MIN_PIXELS..=EXACT_WIDTH_MAX_PIXELS).contains(&run.rows)
        && band >= EXACT_WIDTH_MIN_BAND
        && run.pitch <= EXACT_WIDTH_MAX_PITCH
}

/// Whether the general band gather moves a whole W segment of a tile by DMA: `tw` strided
/// pixels of `kc` channels (`kc · elem` bytes each, under [`DMA_MIN_ROW_BYTES`]), `pitch`
/// bytes apart, in bands of `band` pixels, form a rectangle ([`rectangle_eligible`]) or a
/// BF16 exact-width row. Staging complete pixels ([`crate::tess::staged_band`]) is chosen
/// only where this is false: the rectangle or the exact-width row reads only the logical
/// bytes in as few commands as staging would.
pub(crate) fn w_segment_by_dma(dtype: DType, kc: u64, tw: u64, pitch: u64, band: u64) -> bool {
    // `kc` is a tile's channel extent: no wrap.
    let row_bytes = kc.wrapping_mul(dtype.size() as u64);
    let run = Run {
        global: 0,
        rows: tw,
        row_bytes,
        pitch,
        local: 0,
        local_pitch: row_bytes,
    };
    row_bytes >= u64::from(DMA_MIN_ROW_BYTES)
        || rectangle_eligible(&run)
        || exact_width_eligible(dtype == DType::BF16, kc, band, &run)
}

fn index(x: u64) -> Result<usize, FwError> {
    usize::try_from(x).map_err(|_| FwError::Internal)
}

/// The coordinates (D, H, W) of pixel `p` of a tile of `th · tw` pixels per D index.
fn pixel_coord(p: u64, th: u64, tw: u64) -> Result<[u64; 3], FwError> {
    let (row, w) = (div(p, tw)?, rem(p, tw)?);
    Ok([div(row, th)?, rem(row, th)?, w])
}

/// How a band's source values sit in the local source area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SourceLayout {
    /// `(pixel, channel)` at `pixel · kc + channel` elements.
    PixelMajor,
    /// `(pixel, channel)` at `channel · np + pixel` elements.
    ChannelMajor,
    /// The whole tile staged in C, D, W, H order (H fastest): `(d, h, w, c)` at
    /// `((c · td + d) · tw + w) · th + h` elements (the H-contiguous path).
    HContig,
    /// Complete source pixels of a staged band: `(pixel, source channel)` at
    /// `pixel · c_src + channel` elements; the tile's channel `j` is source channel
    /// `channel0 + j`.
    Staged,
}

/// One task as prepared into a slot: what packing and the output transfers need.
#[derive(Debug, Clone, Copy)]
struct Task {
    class: TileClass,
    tile_input: u64,
    tile_output: u64,
    layout: SourceLayout,
    span: TaskSpan,
    /// The tile's first source channel (its C tile index times the tile's C extent).
    channel0: u64,
}

struct Ctx<'a> {
    repr: &'a CastTessRepr,
    g: &'a TessGeometry,
    convert: ConvertFn,
    /// The input is BF16 (the only dtype with exact-width gathers).
    bf16: bool,
    elem: usize,
    channel_stride: u64,
    /// Per class: whether its tiles take the whole-panel H-contiguous path.
    hcontig: [bool; CLASSES],
    /// Source channels of a pixel (the tensor's C extent).
    c_src: u64,
    /// Whether staged bands are packed by the BF16 pixel packer ([`bf16_pixel_packer`]).
    bf16_pixels: bool,
}

/// A global source run to move into local memory: `rows` rows of `row_bytes`, `pitch`
/// bytes apart in the input and `local_pitch` apart locally.
#[derive(Debug, Clone, Copy)]
struct Run {
    global: u64,
    rows: u64,
    row_bytes: u64,
    pitch: u64,
    local: usize,
    local_pitch: u64,
}

impl Run {
    /// `n` items of `size` bytes at `global`, `pitch` bytes apart in the input, staged
    /// compactly at `local`: one row of `n · size` bytes when `n` is 1 or the items are
    /// adjacent (`pitch = size`), else `n` rows of `size` bytes.
    fn items(global: u64, n: u64, size: u64, pitch: u64, local: usize) -> Result<Run, FwError> {
        Ok(if n == 1 || pitch == size {
            let bytes = mul(n, size)?;
            Run {
                global,
                rows: 1,
                row_bytes: bytes,
                pitch: bytes,
                local,
                local_pitch: bytes,
            }
        } else {
            Run {
                global,
                rows: n,
                row_bytes: size,
                pitch,
                local,
                local_pitch: size,
            }
        })
    }
}

impl Ctx<'_> {
    fn run<W: DeviceMemory + Dma + Meter>(
        &self,
        worker: &mut W,
        start: u64,
        end: u64,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let mut cursor = self.g.locate(start);
        // Per slot (0 or 1): the source transfers in flight and the output transfers.
        let mut sources = [Events::new(), Events::new()];
        let mut outputs: [[Option<Event>; 2]; 2] = [[None; 2]; 2];
        let mut slot = 0usize;
        let [first, _] = &mut sources;
        let mut task = self.prepare(worker, &cursor, slot, first, tess)?;
        let mut k = start;
        loop {
            k = add(k, 1)?;
            let other = slot ^ 1;
            let next = if k < end {
                cursor.advance(self.g);
                let events = sources.get_mut(other).ok_or(FwError::Internal)?;
                Some(self.prepare(worker, &cursor, other, events, tess)?)
            } else {
                None
            };
            sources
                .get_mut(slot)
                .ok_or(FwError::Internal)?
                .wait_all(worker)?;
            let pending = outputs.get_mut(slot).ok_or(FwError::Internal)?;
            for e in pending.iter_mut() {
                if let Some(e) = e.take() {
                    worker.wait(e)?;
                }
            }
            let converted = self.pack(worker.local(), &task, slot)?;
            if converted > 0 {
                let path = match task.class.mode {
                    Mode::Blocks => ComputePath::Fallback,
                    Mode::Bands | Mode::Panels => ComputePath::Fast,
                };
                worker.compute(path, converted);
                if task.layout == SourceLayout::HContig {
                    worker.compute(ComputePath::Transpose, converted);
                }
            }
            *pending = self.store(worker, &task, slot, tess)?;
            match next {
                Some(t) => {
                    task = t;
                    slot = other;
                }
                None => break,
            }
        }
        for e in outputs.into_iter().flatten().flatten() {
            worker.wait(e)?;
        }
        Ok(())
    }

    /// Moves one source run into local memory: DMA for rows of at least
    /// [`DMA_MIN_ROW_BYTES`]; for shorter rows one 2D DMA command when the run is an
    /// eligible rectangle ([`rectangle_eligible`], counted in
    /// [`TessStats::rectangle_runs`]), direct loads otherwise.
    fn fetch<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        run: Run,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let row_bytes = small(run.row_bytes)?;
        if row_bytes >= DMA_MIN_ROW_BYTES {
            return self.fetch_dma(worker, run, events, tess);
        }
        if rectangle_eligible(&run) {
            tess.rectangle_runs = tess.rectangle_runs.saturating_add(1);
            return self.fetch_dma(worker, run, events, tess);
        }
        let mut buf = [0u8; DMA_MIN_ROW_BYTES as usize];
        let n = row_bytes as usize;
        for r in 0..run.rows {
            let row = buf.get_mut(..n).ok_or(FwError::Internal)?;
            let global = add(run.global, mul(r, run.pitch)?)?;
            worker.read(bus(self.repr.prefix.input_address, global)?, row)?;
            let at = add(run.local, index(mul(r, run.local_pitch)?)?)?;
            worker
                .local()
                .get_mut(at..add(at, n)?)
                .ok_or(FwError::Internal)?
                .copy_from_slice(row);
            tess.source_direct_rows = tess.source_direct_rows.saturating_add(1);
        }
        Ok(())
    }

    /// Moves one source run into local memory with one (2D) DMA command, whatever its row
    /// width.
    fn fetch_dma<W: Dma>(
        &self,
        worker: &mut W,
        run: Run,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let transfer = Transfer {
            direction: Direction::ToLocal,
            global: bus(self.repr.prefix.input_address, run.global)?,
            global_pitch: small(run.pitch)?,
            local: small(run.local as u64)?,
            local_pitch: small(run.local_pitch)?,
            row_bytes: small(run.row_bytes)?,
            rows: small(run.rows)?,
        };
        let event = worker.start(&transfer)?;
        tess.source_dma = tess.source_dma.saturating_add(1);
        events.push(worker, event)
    }

    /// Stages a whole H-contiguous tile in C, D, W, H order: per channel and D index, one
    /// 2D DMA command of `tw` rows of `th` elements, the input's W pitch apart. Reads
    /// exactly the tile's logical elements.
    fn gather_hcontig<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        task: &Task,
        slot: usize,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let [td, th, tw, tc] = task.class.extents;
        let [sd, _, sw] = self.pixel_strides();
        let elem = self.elem as u64;
        let row_bytes = mul(th, elem)?;
        let base = mul(slot, SLOT_BYTES)?;
        for c in 0..tc {
            let channel = add(task.tile_input, mul(c, self.channel_stride)?)?;
            for d in 0..td {
                let staged = mul(mul(add(mul(c, td)?, d)?, tw)?, row_bytes)?;
                let run = Run {
                    global: add(channel, mul(d, sd)?)?,
                    rows: tw,
                    row_bytes,
                    // One row: the pitch is never applied.
                    pitch: if tw > 1 { sw } else { row_bytes },
                    local: add(base, index(staged)?)?,
                    local_pitch: row_bytes,
                };
                self.fetch_dma(worker, run, events, tess)?;
            }
        }
        Ok(())
    }

    /// Role strides of the pixel axes D, H, W.
    fn pixel_strides(&self) -> [u64; 3] {
        let s = self.g.role_strides;
        [s[0], s[1], s[2]]
    }

    /// Input offset of pixel `p` (D, H, W order) of a tile at `tile_input`.
    fn pixel_input(&self, class: &TileClass, tile_input: u64, p: u64) -> Result<u64, FwError> {
        let [_, th, tw, _] = class.extents;
        self.offset(tile_input, &pixel_coord(p, th, tw)?)
    }

    /// `base` plus the input offset of the tile pixel at `coord` (D, H, W).
    fn offset(&self, base: u64, coord: &[u64; 3]) -> Result<u64, FwError> {
        let mut at = base;
        for (&c, s) in coord.iter().zip(self.pixel_strides()) {
            at = add(at, mul(c, s)?)?;
        }
        Ok(at)
    }

    /// Requests the source of the task at `cursor` into slot `slot`.
    fn prepare<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        cursor: &Cursor,
        slot: usize,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<Task, FwError> {
        let class = *cursor.class(self.g);
        let mut task = Task {
            class,
            tile_input: cursor.tile_input(self.g),
            tile_output: cursor.tile_output,
            layout: SourceLayout::PixelMajor,
            span: cursor.span(self.g),
            channel0: mul(cursor.index[3], self.g.tile[3])?,
        };
        match class.mode {
            Mode::Bands if class.staged => {
                tess.band_tasks = tess.band_tasks.saturating_add(1);
                tess.staged_tasks = tess.staged_tasks.saturating_add(1);
                if self.bf16_pixels {
                    tess.bf16_pixel_tasks = tess.bf16_pixel_tasks.saturating_add(1);
                }
                task.layout = SourceLayout::Staged;
                self.gather_staged(worker, &task, slot, events, tess)?;
            }
            Mode::Bands if self.hcontig.get(cursor.class) == Some(&true) => {
                tess.band_tasks = tess.band_tasks.saturating_add(1);
                tess.hcontig_tasks = tess.hcontig_tasks.saturating_add(1);
                task.layout = SourceLayout::HContig;
                self.gather_hcontig(worker, &task, slot, events, tess)?;
            }
            Mode::Bands => {
                tess.band_tasks = tess.band_tasks.saturating_add(1);
                self.gather_band(worker, &mut task, slot, events, tess)?;
            }
            Mode::Panels => {
                tess.panel_tasks = tess.panel_tasks.saturating_add(1);
                self.gather_band(worker, &mut task, slot, events, tess)?;
            }
            Mode::Blocks => {
                tess.block_tasks = tess.block_tasks.saturating_add(1);
                self.gather_block(worker, &task, slot, events, tess)?;
            }
        }
        Ok(task)
    }

    /// Stages a band's complete source pixels (all `c_src` channels, SPEC §8 "Staged
    /// complete-pixel bands"), one transfer per W segment of the band: one contiguous run
    /// when the pixels are adjacent (or the segment is one pixel), else a 2D run of
    /// `c_src · elem` bytes per pixel at the input's W pitch (padded BF16 pixels). Reads
    /// only logical elements: pixel padding is never in a row, and a pixel is read through
    /// its last source channel and no further.
    fn gather_staged<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        task: &Task,
        slot: usize,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let [_, th, tw, _] = task.class.extents;
        let [_, _, sw] = self.pixel_strides();
        let elem = self.elem as u64;
        let pixel_bytes = mul(self.c_src, elem)?;
        let base = mul(slot, SLOT_BYTES)?;
        let (p0, np) = (task.span.first, task.span.count);
        let [mut d, mut h, mut w] = pixel_coord(p0, th, tw)?;
        // The tile's first pixel at source channel 0.
        let origin = sub(task.tile_input, mul(task.channel0, self.channel_stride)?)?;
        let mut i = 0u64;
        while i < np {
            let n = sub(np, i)?.min(sub(tw, w)?);
            let global = self.offset(origin, &[d, h, w])?;
            let local = add(base, index(mul(i, pixel_bytes)?)?)?;
            let run = Run::items(global, n, pixel_bytes, sw, local)?;
            self.fetch(worker, run, events, tess)?;
            i = add(i, n)?;
            w = add(w, n)?;
            if w == tw {
                w = 0;
                h = add(h, 1)?;
                if h == th {
                    h = 0;
                    d = add(d, 1)?;
                }
            }
        }
        Ok(())
    }

    fn gather_band<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        task: &mut Task,
        slot: usize,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let [td, th, tw, _] = task.class.extents;
        let ext = [td, th, tw];
        let strides = self.pixel_strides();
        // The row axis: the fastest pixel axis with more than one pixel.
        let row_axis = if tw > 1 {
            2
        } else if th > 1 {
            1
        } else {
            0
        };
        let row_stride = *strides.get(row_axis).ok_or(FwError::Internal)?;
        let row_extent = *ext.get(row_axis).ok_or(FwError::Internal)?;
        let elem = self.elem as u64;
        let (np, kc) = (task.span.count, task.span.kc);
        if kc > 1 && self.channel_stride != elem && row_stride == elem && row_extent > 1 {
            task.layout = SourceLayout::ChannelMajor;
        }
        if kc == 0 {
            return Ok(());
        }
        let base = mul(slot, SLOT_BYTES)?;
        let mut coord = pixel_coord(task.span.first, th, tw)?;
        let channel_offset = mul(task.span.c0, self.channel_stride)?;
        let contiguous_channels = kc == 1 || self.channel_stride == elem;
        let pixel_bytes = mul(kc, elem)?;
        let mut i = 0u64;
        while i < np {
            let at = *coord.get(row_axis).ok_or(FwError::Internal)?;
            let n = sub(np, i)?.min(sub(row_extent, at)?);
            let pixel = add(self.offset(task.tile_input, &coord)?, channel_offset)?;
            match task.layout {
                SourceLayout::ChannelMajor => {
                    let run = Run {
                        global: pixel,
                        rows: kc,
                        row_bytes: mul(n, elem)?,
                        pitch: self.channel_stride,
                        local: add(base, index(mul(i, elem)?)?)?,
                        local_pitch: mul(np, elem)?,
                    };
                    self.fetch(worker, run, events, tess)?;
                }
                SourceLayout::PixelMajor if contiguous_channels => {
                    let local = add(base, index(mul(i, pixel_bytes)?)?)?;
                    if n == 1 || row_stride == pixel_bytes {
                        let row_bytes = mul(n, pixel_bytes)?;
                        let single = Run {
                            global: pixel,
                            rows: 1,
                            row_bytes,
                            pitch: row_bytes,
                            local,
                            local_pitch: row_bytes,
                        };
                        // Whole short rows grouped into one rectangle (SPEC §8).
                        let left = sub(np, i)?;
                        let grouped = (row_stride == pixel_bytes)
                            .then(|| short_rows(&ext, &strides, &coord, row_axis, row_bytes, left))
                            .flatten()
                            .map(|(rows, pitch)| Run {
                                rows,
                                pitch,
                                ..single
                            })
                            .filter(rectangle_eligible);
                        if let Some(run) = grouped {
                            self.fetch(worker, run, events, tess)?;
                            i = add(i, mul(run.rows, n)?)?;
                            advance_rows(&mut coord, &ext, row_axis, run.rows);
                            continue;
                        }
                        self.fetch(worker, single, events, tess)?;
                    } else {
                        let run = Run {
                            global: pixel,
                            rows: n,
                            row_bytes: pixel_bytes,
                            pitch: row_stride,
                            local,
                            local_pitch: pixel_bytes,
                        };
                        if self.exact_width(&task.span, &run) {
                            self.fetch_exact_width(worker, run, events, tess)?;
                        } else {
                            self.fetch(worker, run, events, tess)?;
                        }
                    }
                }
                // Staged by `gather_hcontig` and `gather_staged`.
                SourceLayout::HContig | SourceLayout::Staged => return Err(FwError::Internal),
                SourceLayout::PixelMajor => {
                    // Strided channels: one gather per pixel.
                    for q in 0..n {
                        let run = Run {
                            global: add(pixel, mul(q, row_stride)?)?,
                            rows: kc,
                            row_bytes: elem,
                            pitch: self.channel_stride,
                            local: add(base, index(mul(add(i, q)?, pixel_bytes)?)?)?,
                            local_pitch: elem,
                        };
                        self.fetch(worker, run, events, tess)?;
                    }
                }
            }
            i = add(i, n)?;
            let at = coord.get_mut(row_axis).ok_or(FwError::Internal)?;
            *at = add(*at, n)?;
            if *at == row_extent {
                *at = 0;
                advance_rows(&mut coord, &ext, row_axis, 1);
            }
        }
        Ok(())
    }

    /// Whether a strided pixel row `run` of the band `span` takes the BF16 exact-width
    /// gather (SPEC §8): the input is BF16, the task gathers one channel per pixel
    /// (`kc = 1`, so a pixel is 2 bytes and `run` is `rows` pixels of 2 bytes, `pitch` =
    /// the row stride, which is not 2), the row has [`EXACT_WIDTH_MIN_PIXELS`] to
    /// [`EXACT_WIDTH_MAX_PIXELS`] pixels, the band has at least [`EXACT_WIDTH_MIN_BAND`]
    /// pixels and the pitch is at most [`EXACT_WIDTH_MAX_PITCH`] bytes. Shorter rows and
    /// bands keep direct loads; rows of 64 pixels or more are rectangles of the normal
    /// threshold ([`rectangle_eligible`]). FP32 and FP16 never take it.
    fn exact_width(&self, span: &TaskSpan, run: &Run) -> bool {
        exact_width_eligible(self.bf16, span.kc, span.count, run)
    }

    /// Moves one BF16 exact-width row by one 2D DMA command: `rows` pixels of exactly two
    /// bytes, `pitch` apart in the input, compact (local pitch 2) in the source slot.
    /// Counted in [`TessStats::exact_width_rows`].
    fn fetch_exact_width<W: Dma>(
        &self,
        worker: &mut W,
        run: Run,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        if run.row_bytes != 2 || run.local_pitch != 2 {
            return Err(FwError::Internal);
        }
        tess.exact_width_rows = tess.exact_width_rows.saturating_add(1);
        self.fetch_dma(worker, run, events, tess)
    }

    fn gather_block<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        task: &Task,
        slot: usize,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let class = &task.class;
        let tc = class.extents[3];
        let elem = self.elem as u64;
        let base = mul(slot, SLOT_BYTES)?;
        let mut pos = 0u64;
        for seg in BlockWalk::new(class, task.span.first, task.span.count) {
            let Some(left) = tc.checked_sub(seg.channel).filter(|&left| left > 0) else {
                continue;
            };
            let actual = seg.len.min(left);
            let global = add(
                self.pixel_input(class, task.tile_input, seg.pixel)?,
                mul(seg.channel, self.channel_stride)?,
            )?;
            let local = add(base, index(mul(pos, elem)?)?)?;
            let run = Run::items(global, actual, elem, self.channel_stride, local)?;
            self.fetch(worker, run, events, tess)?;
            pos = add(pos, actual)?;
        }
        Ok(())
    }

    /// Converts and packs the task in slot `slot` into its output area; returns the
    /// conversions made (padding written as zero is not a conversion).
    fn pack(&self, local: &mut [u8], task: &Task, slot: usize) -> Result<u64, FwError> {
        let base = mul(slot, SLOT_BYTES)?;
        let (head, tail) = local
            .split_at_mut_checked(add(base, SOURCE_SLOT_BYTES)?)
            .ok_or(FwError::Internal)?;
        let src = head.get_mut(base..).ok_or(FwError::Internal)?;
        let out = tail.get_mut(..OUTPUT_SLOT_BYTES).ok_or(FwError::Internal)?;
        let load: fn(&[u8], usize) -> u32 = match self.elem {
            4 => load32,
            _ => load16,
        };
        let class = &task.class;
        let converted = match class.mode {
            Mode::Bands if task.layout == SourceLayout::HContig => {
                self.pack_hcontig(src, out, task, load)?
            }
            Mode::Bands if task.layout == SourceLayout::Staged && self.bf16_pixels => {
                self.pack_bf16_pixels(src, out, task)?
            }
            Mode::Bands | Mode::Panels => self.pack_pixels(src, out, task, load)?,
            Mode::Blocks => self.pack_block(src, out, task, load)?,
        };
        if class.mode == Mode::Bands {
            // The last band carries the tile's trailing padding.
            let used = index(mul(mul(task.span.count, 2)?, class.stored)?)?;
            let len = index(task.span.band_bytes(class))?;
            out.get_mut(used..len).ok_or(FwError::Internal)?.fill(0);
        }
        Ok(converted)
    }

    /// The general packing of a band or panel task: pixel `i`'s stored channel `j` (of
    /// the task's `k`) takes the converted source value of channel `j` below `kc`, zero
    /// above; bands are `np` pixels of `2 · sc` bytes (low bytes, then high bytes), panels
    /// two planes of `np · k` bytes. Returns the conversions made.
    fn pack_pixels(
        &self,
        src: &[u8],
        out: &mut [u8],
        task: &Task,
        load: fn(&[u8], usize) -> u32,
    ) -> Result<u64, FwError> {
        let span = &task.span;
        let (np, k, kc) = (index(span.count)?, index(span.k)?, index(span.kc)?);
        let (c_src, c0) = (index(self.c_src)?, index(task.channel0)?);
        // Source element of (pixel i, channel j): i · row_step + j · channel_step + first.
        let (row_step, channel_step, first) = match task.layout {
            SourceLayout::PixelMajor => (kc, 1, 0),
            SourceLayout::ChannelMajor => (1, np, 0),
            SourceLayout::Staged => (c_src, 1, c0),
            // Packed by `pack_hcontig`.
            SourceLayout::HContig => return Err(FwError::Internal),
        };
        // The largest source index, checked once: the loop's indices are below it.
        let last_row = mul(np.saturating_sub(1), row_step)?;
        add(
            add(last_row, mul(kc.saturating_sub(1), channel_step)?)?,
            first,
        )?;
        let plane = mul(np, k)?;
        let out = out.get_mut(..mul(2, plane)?).ok_or(FwError::Internal)?;
        let convert = self.convert;
        let put = |i: usize, lo: &mut [u8], hi: &mut [u8]| {
            // i < np and j < kc: at most the largest index checked above, no wrap.
            let row = i.wrapping_mul(row_step).wrapping_add(first);
            for (j, (l, h)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let v = if j < kc {
                    convert(load(src, row.wrapping_add(j.wrapping_mul(channel_step))))
                } else {
                    0
                };
                *l = v as u8;
                *h = (v >> 8) as u8;
            }
        };
        if task.class.mode == Mode::Bands {
            // A band's k is the tile's stored channels: np pixels of 2·k bytes.
            if span.k != task.class.stored {
                return Err(FwError::Internal);
            }
            for (i, pixel) in out.chunks_exact_mut(mul(2, k)?.max(1)).enumerate() {
                let (lo, hi) = pixel.split_at_mut(k);
                put(i, lo, hi);
            }
        } else {
            let (lo, hi) = out.split_at_mut(plane);
            let k = k.max(1);
            for (i, (lo, hi)) in lo
                .chunks_exact_mut(k)
                .zip(hi.chunks_exact_mut(k))
                .enumerate()
            {
                put(i, lo, hi);
            }
        }
        mul(span.count, span.kc)
    }

    /// The packing of a physical-block task: the block's pixel/plane runs take the low or
    /// high bytes of the converted source values (staged in order), padding channels and
    /// the tile's trailing padding zero. Returns the conversions made.
    fn pack_block(
        &self,
        src: &[u8],
        out: &mut [u8],
        task: &Task,
        load: fn(&[u8], usize) -> u32,
    ) -> Result<u64, FwError> {
        let class = &task.class;
        let tc = class.extents[3];
        let mut pos = 0usize;
        let mut end = 0usize;
        for seg in BlockWalk::new(class, task.span.first, task.span.count) {
            let at = index(sub(seg.offset, task.span.first)?)?;
            let len = index(seg.len)?;
            end = add(at, len)?;
            let bytes = out.get_mut(at..end).ok_or(FwError::Internal)?;
            // The run's stored channels below the tile's C extent carry values.
            let real = index(tc.saturating_sub(seg.channel))?.min(len);
            let (values, padding) = bytes.split_at_mut(real);
            let shift = if seg.plane == 0 { 0 } else { 8 };
            for (b, x) in values.iter_mut().zip(pos..) {
                *b = ((self.convert)(load(src, x)) >> shift) as u8;
            }
            padding.fill(0);
            pos = add(pos, real)?;
        }
        // Trailing tile padding in this block.
        out.get_mut(end..index(task.span.count)?)
            .ok_or(FwError::Internal)?
            .fill(0);
        Ok(pos as u64)
    }

    /// The H-contiguous path's packing: converts the staged values to BF16 in place in the
    /// source slot (sequentially: value `i` moves to halfword `i`, which never overtakes an
    /// unread value), then transposes them from C, D, W, H order into the band's pixels,
    /// low plane then high plane, padding channels zero. Returns the conversions made.
    fn pack_hcontig(
        &self,
        src: &mut [u8],
        out: &mut [u8],
        task: &Task,
        load: fn(&[u8], usize) -> u32,
    ) -> Result<u64, FwError> {
        let class = &task.class;
        let [td, th, tw, tc] = class.extents;
        let (td, th, tw, tc) = (index(td)?, index(th)?, index(tw)?, index(tc)?);
        let sc = index(class.stored)?;
        let pixels = mul(mul(td, th)?, tw)?;
        let n = mul(pixels, tc)?;
        let staged_bytes = mul(n, 2)?;
        for i in 0..n {
            let v = (self.convert)(load(src, i));
            // i < n and 2 · n did not overflow: no wrap.
            let at = i.wrapping_mul(2);
            src.get_mut(at..at.wrapping_add(2))
                .ok_or(FwError::Internal)?
                .copy_from_slice(&v.to_le_bytes());
        }
        let staged = src.get(..staged_bytes).ok_or(FwError::Internal)?;
        let pixel_bytes = mul(2, sc)?;
        let out = out
            .get_mut(..mul(pixel_bytes, pixels)?)
            .ok_or(FwError::Internal)?;
        if tc > sc {
            return Err(FwError::Internal);
        }
        let mut values = staged.chunks_exact(2);
        for c in 0..tc {
            for d in 0..td {
                for w in 0..tw {
                    for h in 0..th {
                        let Some(&[low, high]) = values.next() else {
                            return Err(FwError::Internal);
                        };
                        // d < td, h < th, w < tw and c < tc ≤ sc: below the output's
                        // checked length, no wrap.
                        let pixel = d
                            .wrapping_mul(th)
                            .wrapping_add(h)
                            .wrapping_mul(tw)
                            .wrapping_add(w)
                            .wrapping_mul(pixel_bytes);
                        let at = pixel.wrapping_add(c);
                        *out.get_mut(at).ok_or(FwError::Internal)? = low;
                        *out.get_mut(at.wrapping_add(sc)).ok_or(FwError::Internal)? = high;
                    }
                }
            }
        }
        if sc > tc {
            for pixel in out.chunks_exact_mut(pixel_bytes) {
                let (lo, hi) = pixel.split_at_mut(sc);
                lo.get_mut(tc..).ok_or(FwError::Internal)?.fill(0);
                hi.get_mut(tc..).ok_or(FwError::Internal)?.fill(0);
            }
        }
        Ok(n as u64)
    }

    /// The metadata-selected BF16 pixel packer ([`bf16_pixel_packer`], SPEC §8): packs a
    /// staged band's byte planes straight from its complete source pixels, 16-byte block
    /// by 16-byte block (`sc` is a multiple of 16). Whole 16-channel groups take their 16
    /// low and 16 high bytes from the task's channels `channel0 + j`; a one-channel tail
    /// inserts its payload into lane 0 of two zero blocks; another partial tail clears its
    /// final owned block, then writes the valid lanes; blocks past the tile's channels
    /// are zero. BF16 payload bits are copied unchanged. Returns the conversions made.
    fn pack_bf16_pixels(&self, src: &[u8], out: &mut [u8], task: &Task) -> Result<u64, FwError> {
        const LANES: usize = 16;
        let (np, kc) = (index(task.span.count)?, index(task.span.kc)?);
        let sc = index(task.class.stored)?;
        let (c_src, c0) = (index(self.c_src)?, index(task.channel0)?);
        if !sc.is_multiple_of(LANES) || kc > sc || sc == 0 {
            return Err(FwError::Internal);
        }
        let pixel_bytes = mul(2, sc)?;
        let out = out
            .get_mut(..mul(np, pixel_bytes)?)
            .ok_or(FwError::Internal)?;
        let (full, tail) = (div(kc, LANES)?, rem(kc, LANES)?);
        let (source_pixel, value_bytes) = (mul(2, c_src)?, mul(2, kc)?);
        let mut first = mul(2, c0)?;
        for pixel in out.chunks_exact_mut(pixel_bytes) {
            let values = src
                .get(first..add(first, value_bytes)?)
                .ok_or(FwError::Internal)?;
            first = add(first, source_pixel)?;
            let (lo, hi) = pixel.split_at_mut(sc);
            let blocks = lo.chunks_exact_mut(LANES).zip(hi.chunks_exact_mut(LANES));
            let groups = values.chunks(2 * LANES).chain(core::iter::repeat(&[][..]));
            for (b, ((lo, hi), group)) in blocks.zip(groups).enumerate() {
                let lanes = match b.cmp(&full) {
                    core::cmp::Ordering::Less => LANES,
                    core::cmp::Ordering::Equal => tail,
                    core::cmp::Ordering::Greater => 0,
                };
                if lanes == 1 {
                    let &[low, high, ..] = group else {
                        return Err(FwError::Internal);
                    };
                    let (mut l, mut h) = ([0u8; LANES], [0u8; LANES]);
                    l[0] = low;
                    h[0] = high;
                    lo.copy_from_slice(&l);
                    hi.copy_from_slice(&h);
                    continue;
                }
                if lanes < LANES {
                    lo.fill(0);
                    hi.fill(0);
                }
                let lanes_out = lo.iter_mut().zip(hi.iter_mut());
                for ((l, h), v) in lanes_out.zip(group.chunks_exact(2)).take(lanes) {
                    if let &[low, high] = v {
                        *l = low;
                        *h = high;
                    }
                }
            }
        }
        Ok(mul(np, kc)? as u64)
    }

    /// Starts the output transfers of the task in slot `slot`.
    fn store<W: Dma>(
        &self,
        worker: &mut W,
        task: &Task,
        slot: usize,
        tess: &mut TessStats,
    ) -> Result<[Option<Event>; 2], FwError> {
        let mut local = add(mul(slot, SLOT_BYTES)?, SOURCE_SLOT_BYTES)? as u64;
        let mut events = [None, None];
        let rows = task.span.output_rows(&task.class, task.tile_output);
        for (run, event) in rows.into_iter().zip(events.iter_mut()) {
            let Some(run) = run else { continue };
            let transfer = Transfer {
                direction: Direction::ToGlobal,
                global: bus(self.repr.prefix.output_address, run.start)?,
                global_pitch: small(run.pitch)?,
                local: small(local)?,
                local_pitch: small(run.row_bytes)?,
                row_bytes: small(run.row_bytes)?,
                rows: small(run.rows)?,
            };
            *event = Some(worker.start(&transfer)?);
            tess.output_dma = tess.output_dma.saturating_add(1);
            // A panel's high plane follows its low plane locally.
            local = add(local, mul(run.rows, run.row_bytes)?)?;
        }
        Ok(events)
    }
}

/// The element `at` of 4-byte values in `src` (little-endian), 0 past the end.
fn load32(src: &[u8], at: usize) -> u32 {
    match at.checked_mul(4).and_then(|i| src.get(i..)) {
        Some(&[a, b, c, d, ..]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// The element `at` of 2-byte values in `src` (little-endian, zero-extended), 0 past the
/// end.
fn load16(src: &[u8], at: usize) -> u32 {
    match at.checked_mul(2).and_then(|i| src.get(i..)) {
        Some(&[a, b, ..]) => u32::from(u16::from_le_bytes([a, b])),
        _ => 0,
    }
}

/// One piece of a physical block: a run of one pixel's channels in one byte plane.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// Tile byte offset of the run.
    offset: u64,
    /// Pixel in the tile.
    pixel: u64,
    /// Byte plane (0 low, 1 high).
    plane: u64,
    /// First stored channel.
    channel: u64,
    /// Stored channels in the run.
    len: u64,
}

/// The pixel/plane runs of tile bytes `[first, first + count)`, stopping at the end of the
/// pixel bytes (what follows is trailing padding).
struct BlockWalk {
    x: u64,
    end: u64,
    stored: u64,
}

impl BlockWalk {
    fn new(class: &TileClass, first: u64, count: u64) -> BlockWalk {
        // Offsets inside one tile, whose padded size fits u64: saturation never applies.
        let pixel_bytes = class.pixels.saturating_mul(2).saturating_mul(class.stored);
        BlockWalk {
            x: first,
            end: first.saturating_add(count).min(pixel_bytes),
            stored: class.stored,
        }
    }
}

impl Iterator for BlockWalk {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        if self.x >= self.end {
            return None;
        }
        // A decoded tile stores at least one channel, so the divisions are defined; a
        // zero would end the walk.
        let sc = self.stored;
        let pixel_bytes = sc.checked_mul(2)?;
        let within = self.x.checked_rem(pixel_bytes)?;
        let channel = within.checked_rem(sc)?;
        // channel < sc and x < end: no wrap.
        let len = sc.wrapping_sub(channel).min(self.end.wrapping_sub(self.x));
        let seg = Segment {
            offset: self.x,
            pixel: self.x.checked_div(pixel_bytes)?,
            plane: within.checked_div(sc)?,
            channel,
            len,
        };
        self.x = self.x.checked_add(len)?;
        Some(seg)
    }
}
