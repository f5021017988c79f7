//! The Detess-family native entries (Detess v1, DetessCast v1, DetessDequant v1): partition,
//! data movement and conversion of one decoded call (SPEC §8, §12).
//!
//! Called by [`crate::Firmware::dispatch`] after `simak_core::ev74::decode` accepted the
//! descriptor. The CastTess entry's data movement in reverse:
//!
//! - **Tasks.** Tiles follow the input (outer index, then tiles in C, D, H, W order, W
//!   fastest); a tile of class `c` (at most 16 classes) is split into bands of consecutive
//!   pixels with all its stored channels, each band's input bytes at most
//!   [`IN_SLOT_BYTES`] and its output values at most [`OUT_SLOT_BYTES`]; a pixel too wide
//!   for that is split into channel panels (multiples of 16 channels). Tasks are split into
//!   contiguous ranges, one per worker (worker 0 owns task 0); workers 1..N−1 run first,
//!   then worker 0.
//! - **Input.** A band's bytes are read once: one DMA of `band · sc · E` bytes in Compact
//!   and PadTo16 (a pixel's planes are adjacent), one 2D DMA of one row per 16-channel
//!   block in CBlock16; a run under 16 bytes that forms no 128-byte rectangle is read with
//!   direct loads. The next task's input is requested before the current one is converted
//!   (two slots per worker, ping-pong).
//! - **Conversion.** Detess copies the element's bytes, DetessCast widens BF16 to FP32
//!   (`bits << 16`), DetessDequant applies `simak_core::arith::dequant` (SPEC §12.2): INT8
//!   by a table of the 256 results built once per call in each worker's local memory,
//!   INT16 and INT32 by the exact integer path.
//! - **Output.** Values are staged in the order of the output's fastest axis: channels
//!   (the output's C stride is the element size), else W (NCHW-like orders), else element
//!   by element. Each W segment of a band leaves as one DMA (a 2D one when its rows are
//!   apart), consecutive contiguous segments merged; rows under 16 bytes that form no
//!   128-byte rectangle are stored directly. Only the output's elements are written (gaps
//!   untouched); a slot's output area is reused only after its transfers completed, and
//!   every output transfer completes before the worker returns.

//
// Arithmetic is checked (`crate::work::{add, mul, sub, div, rem}`, an overflow being
// [`FwError::Internal`]) where a value is set up; decode proved both spans fit the 32-bit
// device domain, so every offset below does too.

use simak_core::DType;
use simak_core::arith::dequant;
use simak_core::layout::{Channels, TILE_CLASSES, TiledView};
use simak_core::tensor::MAX_RANK;
use simak_core::wire::detess::{Conversion, DetessRepr};

use crate::device::{ComputePath, DeviceMemory, Direction, Dma, Meter, Platform, Transfer};
use crate::work::{Events, add, bus, div, mul, rem, small, sub};
use crate::{FwError, Report, TessStats};

/// Input bytes per local slot.
pub const IN_SLOT_BYTES: usize = 8 * 1024;
/// Output bytes per local slot (the staged, converted values).
pub const OUT_SLOT_BYTES: usize = 15 * 1024;
/// One local slot: input then output.
pub const SLOT_BYTES: usize = IN_SLOT_BYTES + OUT_SLOT_BYTES;
/// The INT8 dequantization table: 256 results of 4 bytes.
pub const TABLE_BYTES: usize = 256 * 4;
/// Local memory a worker needs: two slots and the table (47 KiB of the 48 KiB budget).
pub const LOCAL_BYTES: usize = 2 * SLOT_BYTES + TABLE_BYTES;
/// Runs shorter than this many bytes are moved with direct loads or stores unless they form
/// a rectangle of at least [`RECT_MIN_BYTES`].
pub const DMA_MIN_ROW_BYTES: u64 = 16;
/// A run of short rows moves by one 2D DMA command when its rows hold this many bytes.
pub const RECT_MIN_BYTES: u64 = 128;
/// Channels per 16-channel block (CBlock16) and the panel granule.
const BLOCK: u64 = 16;

const _: () = assert!(LOCAL_BYTES <= crate::work::LOCAL_MEMORY_BYTES);

/// How a tile class is split into tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Class {
    /// Tiles of this class per outer index (0 when the class does not occur).
    pub count: u64,
    /// Actual tile extents `td', th', tw', tc'`.
    pub extents: [u64; 4],
    /// Pixels per tile.
    pub pixels: u64,
    /// Stored channels `sc`.
    pub stored: u64,
    /// Pixels per band (1 with panels).
    pub band: u64,
    /// Channels per panel (`tc'` without panels).
    pub panel: u64,
    /// Panels per pixel (1 without panels).
    pub panels: u64,
    /// Tasks per tile.
    pub tasks: u64,
}

/// Which axis of the output the staged values follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputOrder {
    /// The output's C stride is the element size: a pixel's channels are one run.
    Channels,
    /// The output's W stride is the element size: a channel's pixels of a W segment are
    /// one run.
    Width,
    /// Neither: element by element.
    Elements,
}

/// The geometry of one call: classes, strides and counts.
#[derive(Debug, Clone, Copy)]
pub struct Geometry {
    /// Tile classes by mask (bit r set = boundary tile along role r).
    pub classes: [Class; TILE_CLASSES],
    /// Tiles per role.
    pub counts: [u64; 4],
    /// Tile extents per role.
    pub tile: [u64; 4],
    /// The output's byte stride of each role (0 when absent).
    pub out_strides: [u64; 4],
    /// Tasks per outer index.
    pub tasks_per_outer: u64,
    /// Tasks of the call.
    pub tasks: u64,
    /// Input element size `E` in bytes.
    pub elem: u64,
    /// Output element size in bytes.
    pub out_elem: u64,
    /// The staged order of output values.
    pub order: OutputOrder,
    outer: [(u64, u64); MAX_RANK],
    n_outer: usize,
    tiled: TiledView,
}

impl Geometry {
    /// The geometry of a validated, nonempty descriptor; `None` when the layout does not
    /// admit (never after decode) or the tensor is empty.
    pub fn new(repr: &DetessRepr) -> Option<Geometry> {
        let tiled = repr.tiled().ok()?;
        if tiled.is_empty() {
            return None;
        }
        let elem = repr.input_dtype.size_u64();
        let out_elem = repr.prefix.dtype.size_u64();
        let strides = repr.output_strides();
        let mut out_strides = [0u64; 4];
        for (s, axis) in out_strides.iter_mut().zip(repr.layout.axes) {
            if let Some(a) = axis {
                *s = *strides.get(usize::from(a))?;
            }
        }
        let role_extents = *tiled.role_extents();
        let channels_one = role_extents[3] <= 1;
        let order = if channels_one || out_strides[3] == out_elem {
            OutputOrder::Channels
        } else if role_extents[2] > 1 && out_strides[2] == out_elem {
            OutputOrder::Width
        } else {
            OutputOrder::Elements
        };
        let mut classes = [Class::default(); TILE_CLASSES];
        for (class, shape) in classes.iter_mut().zip(tiled.tile_classes()) {
            if shape.count == 0 {
                continue;
            }
            let [td, th, tw, tc] = shape.extents;
            let pixels = td.checked_mul(th)?.checked_mul(tw)?;
            let stored = tiled.stored_channels(tc)?;
            let in_pixel = stored.checked_mul(elem)?;
            let out_pixel = tc.checked_mul(out_elem)?;
            let by_in = (IN_SLOT_BYTES as u64).checked_div(in_pixel)?;
            let by_out = (OUT_SLOT_BYTES as u64).checked_div(out_pixel)?;
            let band = by_in.min(by_out).min(pixels);
            let (band, panel, panels, tasks) = if band >= 1 {
                (band, tc, 1, pixels.div_ceil(band))
            } else {
                // A pixel wider than a slot: panels of a multiple of 16 channels.
                let by_in = (IN_SLOT_BYTES as u64).checked_div(elem)?;
                let by_out = (OUT_SLOT_BYTES as u64).checked_div(out_elem)?;
                let panel = by_in.min(by_out).checked_div(BLOCK)?.checked_mul(BLOCK)?;
                let panels = tc.div_ceil(panel);
                (1, panel, panels, pixels.checked_mul(panels)?)
            };
            *class = Class {
                count: shape.count,
                extents: shape.extents,
                pixels,
                stored,
                band,
                panel,
                panels,
                tasks,
            };
        }
        let tasks_per_outer = classes.iter().try_fold(0u64, |sum, c| {
            sum.checked_add(c.count.checked_mul(c.tasks)?)
        })?;
        let mut outer = [(0u64, 0u64); MAX_RANK];
        let mut n_outer = 0usize;
        for (slot, &a) in outer.iter_mut().zip(tiled.outer_axes()) {
            let a = usize::from(a);
            *slot = (*repr.prefix.extents.get(a)?, *strides.get(a)?);
            n_outer = n_outer.checked_add(1)?;
        }
        Some(Geometry {
            classes,
            counts: *tiled.tile_counts(),
            tile: tiled.tile().map(u64::from),
            out_strides,
            tasks_per_outer,
            tasks: tasks_per_outer.checked_mul(tiled.outer_count())?,
            elem,
            out_elem,
            order,
            outer,
            n_outer,
            tiled,
        })
    }

    /// Number of classes that occur.
    pub fn n_classes(&self) -> usize {
        self.classes.iter().filter(|c| c.count != 0).count()
    }

    /// The output byte offset of outer index `outer` (one division per outer axis).
    fn outer_output(&self, outer: u64) -> u64 {
        let mut rest = outer;
        let mut offset = 0u64;
        // Outer extents are ≥ 1 and the offsets below the output span.
        for &(extent, stride) in self.outer.iter().take(self.n_outer).rev() {
            offset =
                offset.wrapping_add(rest.checked_rem(extent).unwrap_or(0).wrapping_mul(stride));
            rest = rest.checked_div(extent).unwrap_or(0);
        }
        offset
    }

    /// The class of the tile at `index`.
    fn class(&self, index: &[u64; 4]) -> Result<&Class, FwError> {
        self.classes
            .get(self.tiled.class_of(*index))
            .ok_or(FwError::Internal)
    }

    /// A cursor at task `task`: the outer index by one division, the tile by a walk over
    /// the tiles of one outer index (once per worker).
    pub fn locate(&self, task: u64) -> Result<Cursor, FwError> {
        let outer = div(task, self.tasks_per_outer)?;
        let mut rest = rem(task, self.tasks_per_outer)?;
        let mut cursor = Cursor {
            outer,
            index: [0; 4],
            task: 0,
            tile_input: 0,
            tile_output: 0,
        };
        loop {
            let tasks = self.class(&cursor.index)?.tasks;
            if rest < tasks {
                cursor.task = rest;
                break;
            }
            rest = sub(rest, tasks)?;
            if !cursor.next_tile(self) {
                return Err(FwError::Internal);
            }
        }
        self.place(&mut cursor)?;
        Ok(cursor)
    }

    /// Sets the cursor's tile offsets: input (outer slice, then the tile) and output (the
    /// outer slice, then the tile's origin).
    fn place(&self, cursor: &mut Cursor) -> Result<(), FwError> {
        let tile = self
            .tiled
            .tile_offset(cursor.index)
            .ok_or(FwError::Internal)?;
        cursor.tile_input = add(mul(cursor.outer, self.tiled.bytes_per_outer())?, tile)?;
        let mut out = self.outer_output(cursor.outer);
        for ((&i, &t), &s) in cursor
            .index
            .iter()
            .zip(self.tile.iter())
            .zip(self.out_strides.iter())
        {
            out = add(out, mul(mul(i, t)?, s)?)?;
        }
        cursor.tile_output = out;
        Ok(())
    }
}

/// A position in the task order: outer index, tile, task within the tile, and the tile's
/// byte offsets in the input and the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Outer index.
    pub outer: u64,
    /// Tile index per role (D, H, W, C).
    pub index: [u64; 4],
    /// Task within the tile.
    pub task: u64,
    /// Input byte offset of the tile.
    pub tile_input: u64,
    /// Output byte offset of the tile's first element.
    pub tile_output: u64,
}

impl Cursor {
    /// The next tile of the same outer index in C, D, H, W order; `false` past the last.
    fn next_tile(&mut self, g: &Geometry) -> bool {
        // W fastest, then H, D, C: role slots 2, 1, 0, 3.
        for r in [2usize, 1, 0, 3] {
            let (Some(i), Some(&n)) = (self.index.get_mut(r), g.counts.get(r)) else {
                return false;
            };
            // i < n ≤ the tile count: no wrap.
            *i = i.wrapping_add(1);
            if *i < n {
                return true;
            }
            *i = 0;
        }
        false
    }

    /// Advances to the next task (carry over the tiles, then the outer index).
    fn advance(&mut self, g: &Geometry) -> Result<(), FwError> {
        let tasks = g.class(&self.index)?.tasks;
        self.task = add(self.task, 1)?;
        if self.task < tasks {
            return Ok(());
        }
        self.task = 0;
        if !self.next_tile(g) {
            self.outer = add(self.outer, 1)?;
        }
        g.place(self)
    }
}

/// One task: the tile, its class, and the pixels and channels it covers.
#[derive(Debug, Clone, Copy)]
struct Task {
    class: Class,
    tile_input: u64,
    tile_output: u64,
    /// First pixel and pixel count.
    k0: u64,
    nb: u64,
    /// First channel and channel count.
    c0: u64,
    nc: u64,
    /// First staged 16-channel block (CBlock16 panels).
    b0: u64,
}

/// How a converted value is made from an element's raw bits (zero-extended little-endian
/// planes): the output bits, the low `out_elem` bytes written.
#[derive(Debug, Clone, Copy)]
enum Convert {
    /// Detess: the element itself.
    Copy,
    /// DetessCast: BF16 bits widened to FP32.
    Cast,
    /// DetessDequant of INT8: the table in local memory.
    Table,
    /// DetessDequant of INT16 or INT32: the exact integer path.
    Exact {
        dtype: DType,
        zero_point: i64,
        multiplier_bits: u32,
        out: DType,
    },
}

struct Ctx<'a> {
    repr: &'a DetessRepr,
    g: &'a Geometry,
    convert: Convert,
    cblock: bool,
}

/// A run of rows between global memory and local memory: `rows` rows of `row_bytes`,
/// `pitch` bytes apart in global memory and `local_pitch` apart locally.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    pub(crate) global: u64,
    pub(crate) rows: u64,
    pub(crate) row_bytes: u64,
    pub(crate) pitch: u64,
    pub(crate) local: usize,
    pub(crate) local_pitch: u64,
}

/// Whether a run moves by DMA: rows of at least [`DMA_MIN_ROW_BYTES`], or several short
/// rows holding at least [`RECT_MIN_BYTES`] in all (a 2D rectangle).
pub(crate) fn by_dma(run: &Run) -> bool {
    run.row_bytes >= DMA_MIN_ROW_BYTES
        || (run.rows > 1
            && run
                .rows
                .checked_mul(run.row_bytes)
                .is_some_and(|b| b >= RECT_MIN_BYTES))
}

/// Runs a decoded, nonempty call on `platform`.
pub(crate) fn execute<P: Platform>(platform: &mut P, repr: &DetessRepr) -> Result<Report, FwError> {
    let configured = crate::work::ring(platform)?;
    let g = Geometry::new(repr).ok_or(FwError::Internal)?;
    let launched = crate::work::launched(g.tasks, configured);
    let convert = match (repr.conversion, repr.input_dtype) {
        (Conversion::Detess, _) => Convert::Copy,
        (Conversion::Cast, _) => Convert::Cast,
        (Conversion::Dequant, DType::I8) => Convert::Table,
        (Conversion::Dequant, dtype) => Convert::Exact {
            dtype,
            zero_point: i64::from(repr.zero_point),
            multiplier_bits: repr.multiplier_bits,
            out: repr.prefix.dtype,
        },
    };
    fw_log!(
        debug,
        "detess: {=u64} tasks, {=usize} classes",
        g.tasks,
        g.n_classes()
    );
    let ctx = Ctx {
        repr,
        g: &g,
        convert,
        cblock: repr.layout.channels == Channels::CBlock16,
    };
    let mut tess = TessStats {
        classes: g.n_classes() as u8,
        ..TessStats::default()
    };
    crate::work::for_each_worker(platform, g.tasks, launched, |worker, start, end| {
        crate::work::require_local(worker, LOCAL_BYTES)?;
        ctx.run(worker, start, end, &mut tess)
    })?;
    let band = g
        .classes
        .iter()
        .filter(|c| c.count != 0)
        .map(|c| c.band.saturating_mul(c.panel))
        .max()
        .unwrap_or(0);
    Ok(Report {
        kind: crate::SpanKind::Dma,
        units: g.tasks,
        run: band,
        launched,
        stats: crate::BlockStats::default(),
        transfers: tess.source_dma.saturating_add(tess.output_dma),
        tess,
    })
}

impl Ctx<'_> {
    fn run<W: DeviceMemory + Dma + Meter>(
        &self,
        worker: &mut W,
        start: u64,
        end: u64,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        if let Convert::Table = self.convert {
            self.build_table(worker)?;
        }
        let mut cursor = self.g.locate(start)?;
        let mut inputs = [Events::new(), Events::new()];
        let mut outputs = [Events::new(), Events::new()];
        let mut slot = 0usize;
        let [first, _] = &mut inputs;
        let mut task = self.prepare(worker, &cursor, slot, first, tess)?;
        let mut k = start;
        loop {
            k = add(k, 1)?;
            let other = slot ^ 1;
            let next = if k < end {
                cursor.advance(self.g)?;
                let events = inputs.get_mut(other).ok_or(FwError::Internal)?;
                Some(self.prepare(worker, &cursor, other, events, tess)?)
            } else {
                None
            };
            inputs
                .get_mut(slot)
                .ok_or(FwError::Internal)?
                .wait_all(worker)?;
            let pending = outputs.get_mut(slot).ok_or(FwError::Internal)?;
            pending.wait_all(worker)?;
            let converted = self.unpack_and_store(worker, &task, slot, pending, tess)?;
            let path = match self.convert {
                Convert::Exact { .. } => ComputePath::Fallback,
                Convert::Copy | Convert::Cast | Convert::Table => ComputePath::Fast,
            };
            worker.compute(path, converted);
            match next {
                Some(t) => {
                    task = t;
                    slot = other;
                }
                None => break,
            }
        }
        for events in &mut outputs {
            events.wait_all(worker)?;
        }
        Ok(())
    }

    /// The 256 dequantized INT8 results, as 4-byte little-endian words, into the table area
    /// of local memory.
    fn build_table<W: Dma + Meter>(&self, worker: &mut W) -> Result<(), FwError> {
        let zero_point = i64::from(self.repr.zero_point);
        let out = self.repr.prefix.dtype;
        let table = worker
            .local()
            .get_mut(2 * SLOT_BYTES..LOCAL_BYTES)
            .ok_or(FwError::Internal)?;
        for (q, word) in (-128i64..=127).zip(table.chunks_exact_mut(4)) {
            // Code q at entry q + 128.
            let bits = dequant::dequantize(q, zero_point, self.repr.multiplier_bits, out);
            word.copy_from_slice(&bits.to_le_bytes());
        }
        worker.compute(ComputePath::Fast, 256);
        Ok(())
    }

    /// The task at `cursor`, its input requested into slot `slot`.
    fn prepare<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        cursor: &Cursor,
        slot: usize,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<Task, FwError> {
        let class = *self.g.class(&cursor.index)?;
        let task = if class.panels == 1 {
            let k0 = mul(cursor.task, class.band)?;
            Task {
                class,
                tile_input: cursor.tile_input,
                tile_output: cursor.tile_output,
                k0,
                nb: class.band.min(sub(class.pixels, k0)?),
                c0: 0,
                nc: class.extents[3],
                b0: 0,
            }
        } else {
            let (k, p) = (
                div(cursor.task, class.panels)?,
                rem(cursor.task, class.panels)?,
            );
            let c0 = mul(p, class.panel)?;
            Task {
                class,
                tile_input: cursor.tile_input,
                tile_output: cursor.tile_output,
                k0: k,
                nb: 1,
                c0,
                nc: class.panel.min(sub(class.extents[3], c0)?),
                b0: div(c0, BLOCK)?,
            }
        };
        if class.panels == 1 {
            tess.band_tasks = tess.band_tasks.saturating_add(1);
        } else {
            tess.panel_tasks = tess.panel_tasks.saturating_add(1);
        }
        let run = self.input_run(&task, slot)?;
        self.fetch(worker, run, events, tess)?;
        Ok(task)
    }

    /// The input run of `task` into slot `slot`'s input area.
    fn input_run(&self, t: &Task, slot: usize) -> Result<Run, FwError> {
        let e = self.g.elem;
        let sc = t.class.stored;
        let local = mul(slot, SLOT_BYTES)?;
        Ok(match (self.cblock, t.class.panels == 1) {
            (false, true) => {
                let bytes = mul(mul(t.nb, sc)?, e)?;
                Run {
                    global: add(t.tile_input, mul(mul(t.k0, sc)?, e)?)?,
                    rows: 1,
                    row_bytes: bytes,
                    pitch: bytes,
                    local,
                    local_pitch: bytes,
                }
            }
            (false, false) => Run {
                // E planes of the panel's channels: [plane][channel].
                global: add(t.tile_input, add(mul(mul(t.k0, sc)?, e)?, t.c0)?)?,
                rows: e,
                row_bytes: t.nc,
                pitch: sc,
                local,
                local_pitch: t.nc,
            },
            (true, bands) => {
                // One row per 16-channel block: [block][pixel][plane][16].
                let block_bytes = mul(t.class.pixels, mul(BLOCK, e)?)?;
                let (first, blocks) = if bands {
                    (0, div(sc, BLOCK)?)
                } else {
                    (t.b0, t.nc.div_ceil(BLOCK))
                };
                let row = mul(mul(t.nb, BLOCK)?, e)?;
                Run {
                    global: add(
                        t.tile_input,
                        add(mul(first, block_bytes)?, mul(mul(t.k0, BLOCK)?, e)?)?,
                    )?,
                    rows: blocks,
                    row_bytes: row,
                    pitch: block_bytes,
                    local,
                    local_pitch: row,
                }
            }
        })
    }

    /// Moves one input run into local memory ([`fetch_run`]).
    fn fetch<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        run: Run,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        fetch_run(worker, self.repr.prefix.input_address, run, events, tess)
    }

    /// The local input byte of plane `p` of channel `c` of the task's pixel `j`.
    fn input_at(&self, t: &Task, j: u64, c: u64, p: u64) -> Result<u64, FwError> {
        let e = self.g.elem;
        let sc = t.class.stored;
        Ok(match (self.cblock, t.class.panels == 1) {
            (false, true) => add(add(mul(mul(j, sc)?, e)?, mul(p, sc)?)?, c)?,
            (false, false) => add(mul(p, t.nc)?, sub(c, t.c0)?)?,
            (true, true) => {
                let row = mul(mul(t.nb, BLOCK)?, e)?;
                add(
                    add(mul(div(c, BLOCK)?, row)?, mul(mul(j, BLOCK)?, e)?)?,
                    add(mul(p, BLOCK)?, rem(c, BLOCK)?)?,
                )?
            }
            (true, false) => add(
                mul(sub(div(c, BLOCK)?, t.b0)?, mul(BLOCK, e)?)?,
                add(mul(p, BLOCK)?, rem(c, BLOCK)?)?,
            )?,
        })
    }

    /// The converted bits of the element whose raw little-endian planes are `raw`.
    fn convert(&self, raw: u32, table: &[u8]) -> Result<u32, FwError> {
        Ok(match self.convert {
            Convert::Copy => raw,
            Convert::Cast => raw << 16,
            Convert::Table => {
                // The table holds codes -128..=127 in order: INT8 code `raw as i8` at
                // `(raw as i8 + 128) · 4`.
                let at = usize::from((raw as u8) ^ 0x80).wrapping_mul(4);
                let word = table
                    .get(at..at.wrapping_add(4))
                    .and_then(|w| <[u8; 4]>::try_from(w).ok())
                    .ok_or(FwError::Internal)?;
                u32::from_le_bytes(word)
            }
            Convert::Exact {
                dtype,
                zero_point,
                multiplier_bits,
                out,
            } => {
                let q = match dtype {
                    DType::I16 => i64::from(raw as u16 as i16),
                    _ => i64::from(raw as i32),
                };
                dequant::dequantize(q, zero_point, multiplier_bits, out)
            }
        })
    }

    /// Converts the task's elements into slot `slot`'s output area, W segment by W
    /// segment in the staged order, and writes each segment out. Returns the elements
    /// converted.
    fn unpack_and_store<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        t: &Task,
        slot: usize,
        pending: &mut Events,
        tess: &mut TessStats,
    ) -> Result<u64, FwError> {
        let [_, th, tw, _] = t.class.extents;
        let o = self.g.out_elem;
        let [sd, sh, sw, scs] = self.g.out_strides;
        let in_base = mul(slot, SLOT_BYTES)?;
        let out_base = add(in_base, IN_SLOT_BYTES)?;
        let mut staged = 0u64;
        let mut merged: Option<Run> = None;
        let mut j = 0u64;
        while j < t.nb {
            let k = add(t.k0, j)?;
            let (row, w0) = (div(k, tw)?, rem(k, tw)?);
            let (d, h) = (div(row, th)?, rem(row, th)?);
            let nw = sub(tw, w0)?.min(sub(t.nb, j)?);
            let global = add(
                t.tile_output,
                add(
                    add(mul(d, sd)?, mul(h, sh)?)?,
                    add(mul(w0, sw)?, mul(t.c0, scs)?)?,
                )?,
            )?;
            let local = add(out_base, index(staged)?)?;
            // Convert the segment into its staged order.
            {
                let mem = worker.local();
                let (head, table) = mem.split_at_mut(2 * SLOT_BYTES);
                for w in 0..nw {
                    for c in 0..t.nc {
                        let mut raw = 0u32;
                        for p in (0..self.g.elem).rev() {
                            let at = add(
                                in_base,
                                index(self.input_at(t, add(j, w)?, add(t.c0, c)?, p)?)?,
                            )?;
                            raw = raw << 8 | u32::from(*head.get(at).ok_or(FwError::Internal)?);
                        }
                        let bits = self.convert(raw, table)?;
                        let pos = match self.g.order {
                            OutputOrder::Width => add(mul(c, nw)?, w)?,
                            OutputOrder::Channels | OutputOrder::Elements => add(mul(w, t.nc)?, c)?,
                        };
                        let at = add(local, index(mul(pos, o)?)?)?;
                        let n = index(o)?;
                        head.get_mut(at..add(at, n)?)
                            .ok_or(FwError::Internal)?
                            .copy_from_slice(bits.to_le_bytes().get(..n).ok_or(FwError::Internal)?);
                    }
                }
            }
            let count = mul(nw, t.nc)?;
            let bytes = mul(count, o)?;
            staged = add(staged, bytes)?;
            match self.g.order {
                OutputOrder::Channels => {
                    let row = mul(t.nc, o)?;
                    let run = if nw == 1 || sw == row {
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
                            rows: nw,
                            row_bytes: row,
                            pitch: sw,
                            local,
                            local_pitch: row,
                        }
                    };
                    // Merge a one-row run into the pending one when both continue it.
                    merged = match merged {
                        Some(m)
                            if run.rows == 1
                                && m.rows == 1
                                && m.global.checked_add(m.row_bytes) == Some(run.global)
                                && m.local.checked_add(index(m.row_bytes)?) == Some(run.local) =>
                        {
                            let b = add(m.row_bytes, run.row_bytes)?;
                            Some(Run {
                                row_bytes: b,
                                pitch: b,
                                local_pitch: b,
                                ..m
                            })
                        }
                        Some(m) => {
                            self.store(worker, m, pending, tess)?;
                            Some(run)
                        }
                        None => Some(run),
                    };
                }
                OutputOrder::Width => {
                    let run = Run {
                        global,
                        rows: t.nc,
                        row_bytes: mul(nw, o)?,
                        pitch: scs,
                        local,
                        local_pitch: mul(nw, o)?,
                    };
                    self.store(worker, run, pending, tess)?;
                }
                OutputOrder::Elements => {
                    for w in 0..nw {
                        for c in 0..t.nc {
                            let g = add(global, add(mul(w, sw)?, mul(c, scs)?)?)?;
                            let l = add(local, index(mul(add(mul(w, t.nc)?, c)?, o)?)?)?;
                            let run = Run {
                                global: g,
                                rows: 1,
                                row_bytes: o,
                                pitch: o,
                                local: l,
                                local_pitch: o,
                            };
                            self.store(worker, run, pending, tess)?;
                        }
                    }
                }
            }
            j = add(j, nw)?;
        }
        if let Some(m) = merged {
            self.store(worker, m, pending, tess)?;
        }
        mul(t.nb, t.nc)
    }

    /// Writes one staged output run ([`store_run`]).
    fn store<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        run: Run,
        pending: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        store_run(worker, self.repr.prefix.output_address, run, pending, tess)
    }
}

/// Moves one input run at `base + run.global` into local memory: DMA ([`by_dma`]) or
/// direct loads.
pub(crate) fn fetch_run<W: DeviceMemory + Dma>(
    worker: &mut W,
    base: u32,
    run: Run,
    events: &mut Events,
    tess: &mut TessStats,
) -> Result<(), FwError> {
    if by_dma(&run) {
        let transfer = Transfer {
            direction: Direction::ToLocal,
            global: bus(base, run.global)?,
            global_pitch: small(run.pitch)?,
            local: small(run.local as u64)?,
            local_pitch: small(run.local_pitch)?,
            row_bytes: small(run.row_bytes)?,
            rows: small(run.rows)?,
        };
        let event = worker.start(&transfer)?;
        events.push(worker, event)?;
        tess.source_dma = tess.source_dma.saturating_add(1);
        return Ok(());
    }
    let n = usize::try_from(run.row_bytes).map_err(|_| FwError::Internal)?;
    let mut buf = [0u8; DMA_MIN_ROW_BYTES as usize];
    for r in 0..run.rows {
        let row = buf.get_mut(..n).ok_or(FwError::Internal)?;
        worker.read(bus(base, add(run.global, mul(r, run.pitch)?)?)?, row)?;
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

/// Writes one staged output run to `base + run.global`: DMA ([`by_dma`]) or direct stores.
pub(crate) fn store_run<W: DeviceMemory + Dma>(
    worker: &mut W,
    base: u32,
    run: Run,
    pending: &mut Events,
    tess: &mut TessStats,
) -> Result<(), FwError> {
    if by_dma(&run) {
        let transfer = Transfer {
            direction: Direction::ToGlobal,
            global: bus(base, run.global)?,
            global_pitch: small(run.pitch)?,
            local: small(run.local as u64)?,
            local_pitch: small(run.local_pitch)?,
            row_bytes: small(run.row_bytes)?,
            rows: small(run.rows)?,
        };
        let event = worker.start(&transfer)?;
        pending.push(worker, event)?;
        tess.output_dma = tess.output_dma.saturating_add(1);
        return Ok(());
    }
    let n = index(run.row_bytes)?;
    let mut buf = [0u8; DMA_MIN_ROW_BYTES as usize];
    for r in 0..run.rows {
        let at = add(run.local, index(mul(r, run.local_pitch)?)?)?;
        let row = buf.get_mut(..n).ok_or(FwError::Internal)?;
        row.copy_from_slice(
            worker
                .local()
                .get(at..add(at, n)?)
                .ok_or(FwError::Internal)?,
        );
        worker.write(bus(base, add(run.global, mul(r, run.pitch)?)?)?, row)?;
        tess.output_direct = tess.output_direct.saturating_add(1);
    }
    Ok(())
}

pub(crate) fn index(x: u64) -> Result<usize, FwError> {
    usize::try_from(x).map_err(|_| FwError::Internal)
}
