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

// Not yet converted to the crate's checked arithmetic and `.get()` indexing (issue 22
// scope 8): this module keeps unchecked operations on decoded, validated geometry.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use simak_core::DType;
use simak_core::arith::cast;
use simak_core::wire::casttess::CastTessRepr;

use crate::device::{ComputePath, DeviceMemory, Direction, Dma, Event, Meter, Platform, Transfer};
use crate::tess::{
    CLASSES, Cursor, LOCAL_BYTES, Mode, OUTPUT_SLOT_BYTES, SLOT_BYTES, SOURCE_SLOT_BYTES, TaskSpan,
    TessGeometry, TileClass,
};
use crate::work::{bus, small};
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
/// Source transfers one slot keeps in flight before waiting for them early.
const MAX_EVENTS: usize = 32;

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
        let available = worker.local().len();
        if available < LOCAL_BYTES {
            return Err(FwError::LocalMemory {
                required: LOCAL_BYTES as u32,
                available: available as u32,
            });
        }
        ctx.run(worker, start, end, &mut tess)
    })?;
    Ok(Report {
        kind: crate::SpanKind::Dma,
        units: geometry.tasks,
        run: geometry.band,
        launched,
        stats: crate::BlockStats::default(),
        transfers: tess.source_dma + tess.output_dma,
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
        && class.pixels * tc * elem >= HCONTIG_MIN_BYTES
}

/// Whether a source run of rows under [`DMA_MIN_ROW_BYTES`] is a rectangle that moves by
/// one 2D DMA command (SPEC §8 "rectangle choice"): it has more than one row, its rows
/// hold at least [`RECT_MIN_BYTES`] bytes in all (`rows · row_bytes`) and its pitch fits a
/// signed 32-bit value. Any row width; only the run's logical bytes are read.
fn rectangle_eligible(run: &Run) -> bool {
    run.rows > 1 && run.rows * run.row_bytes >= RECT_MIN_BYTES && run.pitch <= i32::MAX as u64
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
    if row_bytes >= u64::from(DMA_MIN_ROW_BYTES) || coord[row_axis] != 0 {
        return None;
    }
    let [td, th, _] = *ext;
    let [sd, sh, _] = *strides;
    let (regular, pitch) = match row_axis {
        2 if th > 1 => {
            let across = if td > 1 && sd == th * sh {
                (td - 1 - coord[0]) * th
            } else {
                0
            };
            (th - coord[1] + across, sh)
        }
        1 | 2 if td > 1 => (td - coord[0], sd),
        _ => return None,
    };
    Some((regular.min(left / ext[row_axis]), pitch))
}

/// Advances `coord` by `rows` whole rows: the axes slower than `row_axis` move with carry
/// (the row-axis coordinate stays 0). Wraps past the tile's last row (the band ends there).
fn advance_rows(coord: &mut [u64; 3], ext: &[u64; 3], row_axis: usize, rows: u64) {
    let mut carry = rows;
    for a in (0..row_axis).rev() {
        let v = coord[a] + carry;
        coord[a] = v % ext[a];
        carry = v / ext[a];
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
        && g.classes
            .iter()
            .filter(|c| c.count != 0)
            .all(|c| c.mode == Mode::Bands && c.panels == 1 && c.staged && c.stored % 16 == 0)
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
    let row_bytes = kc * dtype.size() as u64;
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

/// Source transfers in flight for one slot.
struct Events {
    list: [Option<Event>; MAX_EVENTS],
    n: usize,
}

impl Events {
    const fn new() -> Events {
        Events {
            list: [None; MAX_EVENTS],
            n: 0,
        }
    }

    fn push<W: Dma>(&mut self, worker: &mut W, event: Event) -> Result<(), FwError> {
        if self.n == MAX_EVENTS {
            self.wait_all(worker)?;
        }
        self.list[self.n] = Some(event);
        self.n += 1;
        Ok(())
    }

    fn wait_all<W: Dma>(&mut self, worker: &mut W) -> Result<(), FwError> {
        for e in self.list[..self.n].iter_mut() {
            if let Some(e) = e.take() {
                worker.wait(e)?;
            }
        }
        self.n = 0;
        Ok(())
    }
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

impl Ctx<'_> {
    fn run<W: DeviceMemory + Dma + Meter>(
        &self,
        worker: &mut W,
        start: u64,
        end: u64,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let mut cursor = self.g.locate(start);
        let mut sources = [Events::new(), Events::new()];
        let mut outputs: [[Option<Event>; 2]; 2] = [[None; 2]; 2];
        let mut slot = 0usize;
        let mut task = self.prepare(worker, &cursor, slot, &mut sources[slot], tess)?;
        let mut k = start;
        loop {
            k += 1;
            let next = if k < end {
                cursor.advance(self.g);
                let other = 1 - slot;
                Some(self.prepare(worker, &cursor, other, &mut sources[other], tess)?)
            } else {
                None
            };
            sources[slot].wait_all(worker)?;
            for e in outputs[slot].iter_mut() {
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
            outputs[slot] = self.store(worker, &task, slot, tess)?;
            match next {
                Some(t) => {
                    task = t;
                    slot = 1 - slot;
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
            tess.rectangle_runs += 1;
            return self.fetch_dma(worker, run, events, tess);
        }
        let mut buf = [0u8; DMA_MIN_ROW_BYTES as usize];
        let n = row_bytes as usize;
        for r in 0..run.rows {
            let row = buf.get_mut(..n).ok_or(FwError::Internal)?;
            worker.read(
                bus(self.repr.prefix.input_address, run.global + r * run.pitch)?,
                row,
            )?;
            let at = run.local + index(r * run.local_pitch)?;
            worker
                .local()
                .get_mut(at..at + n)
                .ok_or(FwError::Internal)?
                .copy_from_slice(row);
            tess.source_direct_rows += 1;
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
        tess.source_dma += 1;
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
        let row_bytes = th * elem;
        let base = slot * SLOT_BYTES;
        for c in 0..tc {
            for d in 0..td {
                let run = Run {
                    global: task.tile_input + c * self.channel_stride + d * sd,
                    rows: tw,
                    row_bytes,
                    // One row: the pitch is never applied.
                    pitch: if tw > 1 { sw } else { row_bytes },
                    local: base + index((c * td + d) * tw * row_bytes)?,
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
    fn pixel_input(&self, class: &TileClass, tile_input: u64, p: u64) -> u64 {
        let [_, th, tw, _] = class.extents;
        let [sd, sh, sw] = self.pixel_strides();
        tile_input + (p / (th * tw)) * sd + ((p / tw) % th) * sh + (p % tw) * sw
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
            channel0: cursor.index[3] * self.g.tile[3],
        };
        match class.mode {
            Mode::Bands if class.staged => {
                tess.band_tasks += 1;
                tess.staged_tasks += 1;
                if self.bf16_pixels {
                    tess.bf16_pixel_tasks += 1;
                }
                task.layout = SourceLayout::Staged;
                self.gather_staged(worker, &task, slot, events, tess)?;
            }
            Mode::Bands if self.hcontig[cursor.class] => {
                tess.band_tasks += 1;
                tess.hcontig_tasks += 1;
                task.layout = SourceLayout::HContig;
                self.gather_hcontig(worker, &task, slot, events, tess)?;
            }
            Mode::Bands => {
                tess.band_tasks += 1;
                self.gather_band(worker, &mut task, slot, events, tess)?;
            }
            Mode::Panels => {
                tess.panel_tasks += 1;
                self.gather_band(worker, &mut task, slot, events, tess)?;
            }
            Mode::Blocks => {
                tess.block_tasks += 1;
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
        let [sd, sh, sw] = self.pixel_strides();
        let elem = self.elem as u64;
        let pixel_bytes = self.c_src * elem;
        let base = slot * SLOT_BYTES;
        let (p0, np) = (task.span.first, task.span.count);
        let (mut d, mut h, mut w) = (p0 / (th * tw), (p0 / tw) % th, p0 % tw);
        // The tile's first pixel at source channel 0.
        let origin = task.tile_input - task.channel0 * self.channel_stride;
        let mut i = 0u64;
        while i < np {
            let n = (np - i).min(tw - w);
            let global = origin + d * sd + h * sh + w * sw;
            let local = base + index(i * pixel_bytes)?;
            let run = if n == 1 || sw == pixel_bytes {
                Run {
                    global,
                    rows: 1,
                    row_bytes: n * pixel_bytes,
                    pitch: n * pixel_bytes,
                    local,
                    local_pitch: n * pixel_bytes,
                }
            } else {
                Run {
                    global,
                    rows: n,
                    row_bytes: pixel_bytes,
                    pitch: sw,
                    local,
                    local_pitch: pixel_bytes,
                }
            };
            self.fetch(worker, run, events, tess)?;
            i += n;
            w += n;
            if w == tw {
                w = 0;
                h += 1;
                if h == th {
                    h = 0;
                    d += 1;
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
        let row_stride = strides[row_axis];
        let elem = self.elem as u64;
        let (np, kc) = (task.span.count, task.span.kc);
        if kc > 1 && self.channel_stride != elem && row_stride == elem && ext[row_axis] > 1 {
            task.layout = SourceLayout::ChannelMajor;
        }
        if kc == 0 {
            return Ok(());
        }
        let base = slot * SLOT_BYTES;
        let p0 = task.span.first;
        let mut coord = [p0 / (th * tw), (p0 / tw) % th, p0 % tw];
        let channel_offset = task.span.c0 * self.channel_stride;
        let contiguous_channels = kc == 1 || self.channel_stride == elem;
        let pixel_bytes = kc * elem;
        let mut i = 0u64;
        while i < np {
            let n = (np - i).min(ext[row_axis] - coord[row_axis]);
            let pixel = task.tile_input
                + coord[0] * strides[0]
                + coord[1] * strides[1]
                + coord[2] * strides[2]
                + channel_offset;
            match task.layout {
                SourceLayout::ChannelMajor => {
                    let run = Run {
                        global: pixel,
                        rows: kc,
                        row_bytes: n * elem,
                        pitch: self.channel_stride,
                        local: base + index(i * elem)?,
                        local_pitch: np * elem,
                    };
                    self.fetch(worker, run, events, tess)?;
                }
                SourceLayout::PixelMajor if contiguous_channels => {
                    let local = base + index(i * pixel_bytes)?;
                    if n == 1 || row_stride == pixel_bytes {
                        let row_bytes = n * pixel_bytes;
                        let single = Run {
                            global: pixel,
                            rows: 1,
                            row_bytes,
                            pitch: row_bytes,
                            local,
                            local_pitch: row_bytes,
                        };
                        // Whole short rows grouped into one rectangle (SPEC §8).
                        let grouped = (row_stride == pixel_bytes)
                            .then(|| {
                                short_rows(&ext, &strides, &coord, row_axis, row_bytes, np - i)
                            })
                            .flatten()
                            .map(|(rows, pitch)| Run {
                                rows,
                                pitch,
                                ..single
                            })
                            .filter(rectangle_eligible);
                        if let Some(run) = grouped {
                            self.fetch(worker, run, events, tess)?;
                            i += run.rows * n;
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
                            global: pixel + q * row_stride,
                            rows: kc,
                            row_bytes: elem,
                            pitch: self.channel_stride,
                            local: base + index((i + q) * pixel_bytes)?,
                            local_pitch: elem,
                        };
                        self.fetch(worker, run, events, tess)?;
                    }
                }
            }
            i += n;
            coord[row_axis] += n;
            if coord[row_axis] == ext[row_axis] {
                coord[row_axis] = 0;
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
        tess.exact_width_rows += 1;
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
        let base = slot * SLOT_BYTES;
        let mut pos = 0u64;
        for seg in BlockWalk::new(class, task.span.first, task.span.count) {
            if seg.channel >= tc {
                continue;
            }
            let actual = seg.len.min(tc - seg.channel);
            let global = self.pixel_input(class, task.tile_input, seg.pixel)
                + seg.channel * self.channel_stride;
            let local = base + index(pos * elem)?;
            let run = if actual == 1 || self.channel_stride == elem {
                Run {
                    global,
                    rows: 1,
                    row_bytes: actual * elem,
                    pitch: actual * elem,
                    local,
                    local_pitch: actual * elem,
                }
            } else {
                Run {
                    global,
                    rows: actual,
                    row_bytes: elem,
                    pitch: self.channel_stride,
                    local,
                    local_pitch: elem,
                }
            };
            self.fetch(worker, run, events, tess)?;
            pos += actual;
        }
        Ok(())
    }

    /// Converts and packs the task in slot `slot` into its output area; returns the
    /// conversions made (padding written as zero is not a conversion).
    fn pack(&self, local: &mut [u8], task: &Task, slot: usize) -> Result<u64, FwError> {
        let base = slot * SLOT_BYTES;
        let (head, tail) = local
            .split_at_mut_checked(base + SOURCE_SLOT_BYTES)
            .ok_or(FwError::Internal)?;
        let src = head.get_mut(base..).ok_or(FwError::Internal)?;
        let out = tail.get_mut(..OUTPUT_SLOT_BYTES).ok_or(FwError::Internal)?;
        let load: fn(&[u8], usize) -> u32 = match self.elem {
            4 => load32,
            _ => load16,
        };
        let convert = self.convert;
        let class = &task.class;
        let converted = match class.mode {
            Mode::Bands if task.layout == SourceLayout::HContig => {
                self.pack_hcontig(src, out, task, load)?
            }
            Mode::Bands if task.layout == SourceLayout::Staged && self.bf16_pixels => {
                self.pack_bf16_pixels(src, out, task)?
            }
            Mode::Bands | Mode::Panels => {
                let span = &task.span;
                let (np, k, kc) = (index(span.count)?, index(span.k)?, index(span.kc)?);
                let sc = index(class.stored)?;
                let (c_src, c0) = (index(self.c_src)?, index(task.channel0)?);
                let (pitch, hi) = if class.mode == Mode::Bands {
                    (2 * sc, sc)
                } else {
                    (k, np * k)
                };
                // Bands: np pixels of 2·sc bytes; panels: two planes of np·k bytes.
                let out = out.get_mut(..2 * np * k).ok_or(FwError::Internal)?;
                for i in 0..np {
                    let row = i * pitch;
                    for j in 0..k {
                        let v = if j < kc {
                            let at = match task.layout {
                                SourceLayout::PixelMajor => i * kc + j,
                                SourceLayout::ChannelMajor => j * np + i,
                                SourceLayout::Staged => i * c_src + c0 + j,
                                // Packed by `pack_hcontig`.
                                SourceLayout::HContig => return Err(FwError::Internal),
                            };
                            convert(load(src, at))
                        } else {
                            0
                        };
                        out[row + j] = v as u8;
                        out[hi + row + j] = (v >> 8) as u8;
                    }
                }
                span.count * span.kc
            }
            Mode::Blocks => {
                let tc = class.extents[3];
                let mut pos = 0usize;
                let mut end = 0usize;
                for seg in BlockWalk::new(class, task.span.first, task.span.count) {
                    let at = index(seg.offset - task.span.first)?;
                    for c in 0..seg.len {
                        let v = if seg.channel + c < tc {
                            pos += 1;
                            convert(load(src, pos - 1))
                        } else {
                            0
                        };
                        out[at + index(c)?] = if seg.plane == 0 {
                            v as u8
                        } else {
                            (v >> 8) as u8
                        };
                    }
                    end = at + index(seg.len)?;
                }
                // Trailing tile padding in this block.
                out.get_mut(end..index(task.span.count)?)
                    .ok_or(FwError::Internal)?
                    .fill(0);
                pos as u64
            }
        };
        if class.mode == Mode::Bands {
            // The last band carries the tile's trailing padding.
            let used = index(task.span.count * 2 * class.stored)?;
            let len = index(task.span.band_bytes(class))?;
            out.get_mut(used..len).ok_or(FwError::Internal)?.fill(0);
        }
        Ok(converted)
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
        let n = td * th * tw * tc;
        for i in 0..n {
            let v = (self.convert)(load(src, i));
            src.get_mut(2 * i..2 * i + 2)
                .ok_or(FwError::Internal)?
                .copy_from_slice(&v.to_le_bytes());
        }
        let out = out
            .get_mut(..2 * sc * td * th * tw)
            .ok_or(FwError::Internal)?;
        let mut at = 0usize;
        for c in 0..tc {
            for d in 0..td {
                for w in 0..tw {
                    for h in 0..th {
                        let v = load16(src, at);
                        at += 1;
                        let pixel = ((d * th + h) * tw + w) * 2 * sc;
                        out[pixel + c] = v as u8;
                        out[pixel + sc + c] = (v >> 8) as u8;
                    }
                }
            }
        }
        if sc > tc {
            for pixel in out.chunks_exact_mut(2 * sc) {
                pixel[tc..sc].fill(0);
                pixel[sc + tc..].fill(0);
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
        if sc % LANES != 0 || kc > sc {
            return Err(FwError::Internal);
        }
        let out = out.get_mut(..2 * np * sc).ok_or(FwError::Internal)?;
        let (full, tail) = (kc / LANES, kc % LANES);
        for (i, pixel) in out.chunks_exact_mut(2 * sc).enumerate() {
            let first = 2 * (i * c_src + c0);
            let values = src.get(first..first + 2 * kc).ok_or(FwError::Internal)?;
            let (lo, hi) = pixel.split_at_mut(sc);
            let blocks = lo.chunks_exact_mut(LANES).zip(hi.chunks_exact_mut(LANES));
            for (b, (lo, hi)) in blocks.enumerate() {
                let lanes = if b < full {
                    LANES
                } else if b == full {
                    tail
                } else {
                    0
                };
                let group = values.get(2 * b * LANES..).unwrap_or(&[]);
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
                for (j, v) in group.chunks_exact(2).take(lanes).enumerate() {
                    lo[j] = v[0];
                    hi[j] = v[1];
                }
            }
        }
        Ok((np * kc) as u64)
    }

    /// Starts the output transfers of the task in slot `slot`.
    fn store<W: Dma>(
        &self,
        worker: &mut W,
        task: &Task,
        slot: usize,
        tess: &mut TessStats,
    ) -> Result<[Option<Event>; 2], FwError> {
        let mut local = small((slot * SLOT_BYTES + SOURCE_SLOT_BYTES) as u64)?;
        let mut events = [None, None];
        let rows = task.span.output_rows(&task.class, task.tile_output);
        for (run, event) in rows.into_iter().zip(events.iter_mut()) {
            let Some(run) = run else { continue };
            let transfer = Transfer {
                direction: Direction::ToGlobal,
                global: bus(self.repr.prefix.output_address, run.start)?,
                global_pitch: small(run.pitch)?,
                local,
                local_pitch: small(run.row_bytes)?,
                row_bytes: small(run.row_bytes)?,
                rows: small(run.rows)?,
            };
            *event = Some(worker.start(&transfer)?);
            tess.output_dma += 1;
            // A panel's high plane follows its low plane locally.
            local += small(run.rows * run.row_bytes)?;
        }
        Ok(events)
    }
}

fn load32(src: &[u8], at: usize) -> u32 {
    match src.get(at * 4..at * 4 + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

fn load16(src: &[u8], at: usize) -> u32 {
    match src.get(at * 2..at * 2 + 2) {
        Some(&[a, b]) => u32::from(u16::from_le_bytes([a, b])),
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
        BlockWalk {
            x: first,
            end: (first + count).min(class.pixels * 2 * class.stored),
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
        let sc = self.stored;
        let within = self.x % (2 * sc);
        let channel = within % sc;
        let len = (sc - channel).min(self.end - self.x);
        let seg = Segment {
            offset: self.x,
            pixel: self.x / (2 * sc),
            plane: within / sc,
            channel,
            len,
        };
        self.x += len;
        Some(seg)
    }
}
