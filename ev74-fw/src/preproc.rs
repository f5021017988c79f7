//! The Preproc native entry (Preproc v1, SPEC §8, §13): partition, data movement and
//! conversion of one decoded call.
//!
//! Called by [`crate::Firmware::dispatch`] after `simak_core::ev74::decode` accepted the
//! descriptor (whose representation holds the host's admitted plan).
//!
//! - **Tables.** Each worker builds, once per call, the 256 results of every output channel
//!   in its local memory (the FP32 bits of SPEC §13's normalization, or their INT8 by §3, or
//!   their BF16 by §4): the equivalence rule of §13 makes a lookup exact.
//! - **Tasks.** A strided output (FP32, INT8) is cut into row segments: output row `y` of
//!   frame `n`, pixels `x0..x0 + count`, at most [`OUT_SLOT_BYTES`] of values and
//!   [`IN_SLOT_BYTES`] of frame bytes. A tiled output (QuantTess, CastTess) is cut into
//!   chunks of whole 16-byte blocks of one tile, in storage order (a tile that fits a slot
//!   is one chunk; the last chunk of a tile writes its trailing padding), so every worker
//!   owns whole 16-byte output blocks and writes every byte of them, padding included.
//!   Tasks are split into contiguous ranges, one per worker; workers 1..N−1 run first, then
//!   worker 0.
//! - **Input.** A task's frame bytes are one window: per frame and plane, the rows and
//!   columns its pixels read (the bounding box; chroma rows and pairs for NV12 and I420),
//!   each moved by one 2D DMA (rows under 16 bytes that form no 128-byte rectangle by direct
//!   loads) into the task's input slot. The next task's window is requested before the
//!   current one is converted (two slots per worker, ping-pong).
//! - **Conversion.** Pixels are read from the window by the host's own row code
//!   (`Plan::pixel_row_from`: the border's pad value, channel order, the YUV step of §13),
//!   then looked up in the tables. A tiled chunk whose W role is the frame's x axis and whose
//!   C role its channel axis converts runs of pixels (fast path); any other role order
//!   converts element by element (fallback).
//! - **Output.** A row segment leaves as one DMA when its values are contiguous, else one 2D
//!   DMA (per channel when channels are strided); a chunk as one DMA. Only the output's
//!   elements are written (gaps untouched); a slot's output area is reused only after its
//!   transfers completed, and every output transfer completes before the worker returns.
//
// Arithmetic is checked (`crate::work::{add, mul, sub, div, rem}`, an overflow being
// [`FwError::Internal`]) where a value is set up; decode proved both spans fit the 32-bit
// device domain, so every offset below does too.

use simak_core::DType;
use simak_core::arith::cast::f32_to_bf16;
use simak_core::layout::{TILE_CLASSES, Tile, TiledView};
use simak_core::ops::preproc::{Format, FrameRows, Plan, PlanOutput, PortableYuv};
use simak_core::tensor::View;
use simak_core::wire::preproc::PreprocRepr;

use crate::detess::{Run, fetch_run, index, store_run};
use crate::device::{ComputePath, DeviceMemory, Dma, Meter, Platform};
use crate::work::{Events, add, div, mul, rem, sub};
use crate::{FwError, Report, TessStats};

/// Frame bytes per local slot.
pub const IN_SLOT_BYTES: usize = 8 * 1024;
/// Output bytes per local slot (the staged values).
pub const OUT_SLOT_BYTES: usize = 14 * 1024;
/// One local slot: input then output.
pub const SLOT_BYTES: usize = IN_SLOT_BYTES + OUT_SLOT_BYTES;
/// The tables: 256 results of 4 bytes for each of 3 channels.
pub const TABLE_BYTES: usize = 3 * 256 * 4;
/// Local memory a worker needs: two slots and the tables (47 KiB of the 48 KiB budget).
pub const LOCAL_BYTES: usize = 2 * SLOT_BYTES + TABLE_BYTES;
/// Pixels converted per call of the row code.
const RUN: usize = 256;

const _: () = assert!(LOCAL_BYTES <= crate::work::LOCAL_MEMORY_BYTES);

/// One plane of a window: frame rows `row0..row0 + rows`, bytes `col0..col0 + bytes` of
/// each, packed from `base` within a frame's part of the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PlaneWindow {
    row0: u64,
    rows: u64,
    col0: u64,
    bytes: u64,
    base: u64,
}

/// The frame bytes a task reads: frames `n0..n0 + frames`, each with its planes' pieces,
/// `frame_bytes` apart in the input slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    n0: u64,
    frames: u64,
    frame_bytes: u64,
    planes: [PlaneWindow; 3],
}

impl Window {
    /// The window of frame pixels `n0..=n1`, rows `fy0..=fy1`, columns `fx0..=fx1` (all
    /// inside the frame) of a frame in `format`.
    fn new(
        format: Format,
        n: (u64, u64),
        fy: (u64, u64),
        fx: (u64, u64),
    ) -> Result<Window, FwError> {
        let (fy0, fy1) = fy;
        let (fx0, fx1) = fx;
        let bpp = format.pixel_bytes();
        let mut planes = [PlaneWindow::default(); 3];
        let rows = add(sub(fy1, fy0)?, 1)?;
        let chroma_rows = add(sub(fy1 / 2, fy0 / 2)?, 1)?;
        let pieces = [
            (
                0usize,
                fy0,
                rows,
                mul(fx0, bpp)?,
                mul(add(sub(fx1, fx0)?, 1)?, bpp)?,
            ),
            (
                1,
                fy0 / 2,
                chroma_rows,
                mul(fx0 / 2, 2)?,
                mul(add(sub(fx1 / 2, fx0 / 2)?, 1)?, 2)?,
            ),
            (
                1,
                fy0 / 2,
                chroma_rows,
                fx0 / 2,
                add(sub(fx1 / 2, fx0 / 2)?, 1)?,
            ),
            (
                2,
                fy0 / 2,
                chroma_rows,
                fx0 / 2,
                add(sub(fx1 / 2, fx0 / 2)?, 1)?,
            ),
        ];
        let used: &[usize] = match format {
            Format::NV12 => &[0, 1],
            Format::I420 => &[0, 2, 3],
            _ => &[0],
        };
        let mut base = 0u64;
        for &k in used {
            let (plane, row0, rows, col0, bytes) = *pieces.get(k).ok_or(FwError::Internal)?;
            *planes.get_mut(plane).ok_or(FwError::Internal)? = PlaneWindow {
                row0,
                rows,
                col0,
                bytes,
                base,
            };
            base = add(base, mul(rows, bytes)?)?;
        }
        Ok(Window {
            n0: n.0,
            frames: add(sub(n.1, n.0)?, 1)?,
            frame_bytes: base,
            planes,
        })
    }

    /// Bytes of the window in the input slot.
    pub fn bytes(&self) -> u64 {
        self.frames.saturating_mul(self.frame_bytes)
    }
}

/// A window in local memory, read by the host's row code.
struct LocalRows<'a> {
    window: &'a Window,
    local: &'a [u8],
}

impl FrameRows for LocalRows<'_> {
    fn row(&self, plane: usize, n: u64, row: u64, from: u64, bytes: u64) -> Option<&[u8]> {
        let w = self.window;
        let p = w.planes.get(plane)?;
        let k = n.checked_sub(w.n0).filter(|k| *k < w.frames)?;
        let r = row.checked_sub(p.row0).filter(|r| *r < p.rows)?;
        let c = from.checked_sub(p.col0)?;
        if c.checked_add(bytes)? > p.bytes {
            return None;
        }
        let at = k
            .checked_mul(w.frame_bytes)?
            .checked_add(p.base)?
            .checked_add(r.checked_mul(p.bytes)?)?
            .checked_add(c)?;
        let at = usize::try_from(at).ok()?;
        self.local
            .get(at..at.checked_add(usize::try_from(bytes).ok()?)?)
    }
}

/// The tiled output's facts: where each role sits among the logical axes `(n, y, x, c)`.
#[derive(Debug, Clone, Copy)]
struct Tiled {
    view: TiledView,
    /// Bytes per stored element (1 INT8, 2 BF16).
    e: u64,
    /// Logical slot (0 n, 1 y, 2 x, 3 c) of each role D, H, W, C; `None` absent.
    roles: [Option<usize>; 4],
    /// Chunk bytes per tile class (a multiple of 16).
    chunk: [u64; TILE_CLASSES],
    /// The fast path: W role the x axis, C role the channel axis.
    runs: bool,
}

/// A strided output's facts per logical slot `(n, y, x, c)`.
#[derive(Debug, Clone, Copy)]
struct Strided {
    strides: [u64; 4],
    elem: u64,
    /// Pixels per row segment.
    seg: u64,
    /// Segments per output row.
    segs: u64,
}

#[derive(Debug, Clone, Copy)]
#[allow(clippy::large_enum_variant, reason = "one per call, on the stack")]
enum Out {
    Strided(Strided),
    Tiled(Tiled),
}

/// One task: a strided row segment or a tiled chunk, with the window it reads.
#[derive(Debug, Clone, Copy)]
enum Task {
    Row {
        n: u64,
        y: u64,
        x0: u64,
        count: u64,
        window: Option<Window>,
    },
    Chunk {
        tile: Tile,
        b0: u64,
        b1: u64,
        window: Option<Window>,
    },
}

struct Ctx<'a> {
    repr: &'a PreprocRepr,
    plan: &'a Plan,
    /// Output extents per logical slot `(n, y, x, c)` (n = 1 without a batch).
    extents: [u64; 4],
    /// Logical slot of each output axis.
    slot_base: usize,
    out: Out,
    tasks: u64,
}

/// Runs a decoded, nonempty call on `platform`.
pub(crate) fn execute<P: Platform>(
    platform: &mut P,
    repr: &PreprocRepr,
) -> Result<Report, FwError> {
    let configured = crate::work::ring(platform)?;
    let ctx = Ctx::new(repr)?;
    let launched = crate::work::launched(ctx.tasks, configured);
    fw_log!(debug, "preproc: {=u64} tasks", ctx.tasks);
    let mut tess = TessStats::default();
    crate::work::for_each_worker(platform, ctx.tasks, launched, |worker, start, end| {
        crate::work::require_local(worker, LOCAL_BYTES)?;
        ctx.run(worker, start, end, &mut tess)
    })?;
    let run = match ctx.out {
        Out::Strided(s) => s.seg,
        Out::Tiled(t) => t.chunk.iter().copied().max().unwrap_or(0),
    };
    tess.band_tasks = ctx.tasks;
    Ok(Report {
        kind: crate::SpanKind::Dma,
        units: ctx.tasks,
        run,
        launched,
        stats: crate::BlockStats::default(),
        transfers: tess.source_dma.saturating_add(tess.output_dma),
        tess,
    })
}

/// The largest multiple of `step` at most `x` (0 when `x < step`).
fn floor_to(x: u64, step: u64) -> u64 {
    x.checked_div(step).map_or(0, |q| q.saturating_mul(step))
}

impl<'a> Ctx<'a> {
    fn new(repr: &'a PreprocRepr) -> Result<Ctx<'a>, FwError> {
        let plan = &repr.plan;
        let ext = plan.output_extents();
        let slot_base = sub(4, ext.len())?;
        let mut extents = [1u64; 4];
        for (k, &e) in ext.iter().enumerate() {
            *extents
                .get_mut(add(slot_base, k)?)
                .ok_or(FwError::Internal)? = e;
        }
        let [frames, height, _, channels] = extents;
        let format = plan.frame().format;
        let (out, tasks) = match plan.output() {
            PlanOutput::F32(view) | PlanOutput::I8(view, _) => {
                let s = strided(view, slot_base, channels, format)?;
                let tasks = mul(mul(frames, height)?, s.segs)?;
                (Out::Strided(s), tasks)
            }
            PlanOutput::QuantTess(view, _) | PlanOutput::CastTess(view) => {
                let t = tiled(plan, view, slot_base)?;
                let tasks = view.tiles().try_fold(0u64, |n, tile| {
                    let chunk = *t.chunk.get(tile.class).ok_or(FwError::Internal)?;
                    add(n, tile.bytes.div_ceil(chunk.max(16)))
                })?;
                (Out::Tiled(t), tasks)
            }
        };
        Ok(Ctx {
            repr,
            plan,
            extents,
            slot_base,
            out,
            tasks,
        })
    }

    fn run<W: DeviceMemory + Dma + Meter>(
        &self,
        worker: &mut W,
        start: u64,
        end: u64,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        self.build_tables(worker)?;
        let mut cursor = Cursor::new(self, start)?;
        let mut inputs = [Events::new(), Events::new()];
        let mut outputs = [Events::new(), Events::new()];
        let mut slot = 0usize;
        let [first, _] = &mut inputs;
        let mut task = cursor.next(self)?;
        self.fetch(worker, &task, slot, first, tess)?;
        let mut k = start;
        loop {
            k = add(k, 1)?;
            let other = slot ^ 1;
            let next = if k < end {
                let t = cursor.next(self)?;
                let events = inputs.get_mut(other).ok_or(FwError::Internal)?;
                self.fetch(worker, &t, other, events, tess)?;
                Some(t)
            } else {
                None
            };
            inputs
                .get_mut(slot)
                .ok_or(FwError::Internal)?
                .wait_all(worker)?;
            let pending = outputs.get_mut(slot).ok_or(FwError::Internal)?;
            pending.wait_all(worker)?;
            self.convert_and_store(worker, &task, slot, pending, tess)?;
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

    /// The 256 results of each output channel as 4-byte little-endian words in the table
    /// area of local memory.
    fn build_tables<W: Dma + Meter>(&self, worker: &mut W) -> Result<(), FwError> {
        let plan = self.plan;
        let channels = plan.channels();
        let table = worker
            .local()
            .get_mut(2 * SLOT_BYTES..LOCAL_BYTES)
            .ok_or(FwError::Internal)?;
        for (c, part) in table.chunks_exact_mut(256 * 4).enumerate().take(channels) {
            for (p, word) in part.chunks_exact_mut(4).enumerate() {
                let bits = plan.value_bits(c, p as u8);
                let value = match plan.output() {
                    PlanOutput::F32(_) => bits,
                    PlanOutput::I8(_, q) | PlanOutput::QuantTess(_, q) => {
                        let k = q.kernels(DType::F32);
                        u32::from((k.element)(q.multiplier(), q.zero_point(), bits) as u8)
                    }
                    PlanOutput::CastTess(_) => u32::from(f32_to_bf16(bits)),
                };
                word.copy_from_slice(&value.to_le_bytes());
            }
        }
        worker.compute(ComputePath::Fast, mul(256, channels as u64)?);
        Ok(())
    }

    /// Requests `task`'s window into the input area of slot `slot`.
    fn fetch<W: DeviceMemory + Dma>(
        &self,
        worker: &mut W,
        task: &Task,
        slot: usize,
        events: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let window = match task {
            Task::Row { window, .. } | Task::Chunk { window, .. } => window,
        };
        let Some(w) = window else {
            return Ok(());
        };
        if w.bytes() > IN_SLOT_BYTES as u64 {
            return Err(FwError::Internal);
        }
        let frame = self.plan.frame();
        let local0 = mul(slot, SLOT_BYTES)?;
        for k in 0..w.frames {
            let n = add(w.n0, k)?;
            for (p, pw) in w.planes.iter().enumerate() {
                if pw.rows == 0 || pw.bytes == 0 {
                    continue;
                }
                let plane = frame.planes.get(p).ok_or(FwError::Internal)?;
                let global = add(
                    add(mul(n, frame.frame_stride)?, plane.offset)?,
                    add(mul(pw.row0, plane.row_stride)?, pw.col0)?,
                )?;
                let local = add(local0, index(add(mul(k, w.frame_bytes)?, pw.base)?)?)?;
                let run = Run {
                    global,
                    rows: pw.rows,
                    row_bytes: pw.bytes,
                    pitch: if pw.rows > 1 {
                        plane.row_stride
                    } else {
                        pw.bytes
                    },
                    local,
                    local_pitch: pw.bytes,
                };
                fetch_run(worker, self.repr.prefix.input_address, run, events, tess)?;
            }
        }
        Ok(())
    }

    /// Converts `task` from slot `slot`'s window into its output area and starts its
    /// output transfers.
    fn convert_and_store<W: DeviceMemory + Dma + Meter>(
        &self,
        worker: &mut W,
        task: &Task,
        slot: usize,
        pending: &mut Events,
        tess: &mut TessStats,
    ) -> Result<(), FwError> {
        let base = mul(slot, SLOT_BYTES)?;
        let (values, path) = {
            let local = worker.local();
            let (head, tables) = local.split_at_mut(2 * SLOT_BYTES);
            let slot_mem = head
                .get_mut(base..add(base, SLOT_BYTES)?)
                .ok_or(FwError::Internal)?;
            let (input, output) = slot_mem.split_at_mut(IN_SLOT_BYTES);
            let tables = &*tables;
            match (task, &self.out) {
                (
                    Task::Row {
                        n,
                        y,
                        x0,
                        count,
                        window,
                    },
                    Out::Strided(s),
                ) => (
                    self.convert_row(input, output, tables, window, (*n, *y, *x0, *count), s)?,
                    ComputePath::Fast,
                ),
                (
                    Task::Chunk {
                        tile,
                        b0,
                        b1,
                        window,
                    },
                    Out::Tiled(t),
                ) => self.convert_chunk(input, output, tables, window, tile, (*b0, *b1), t)?,
                _ => return Err(FwError::Internal),
            }
        };
        worker.compute(path, values);
        let out_local = add(index(base as u64)?, IN_SLOT_BYTES)?;
        match (task, &self.out) {
            (
                Task::Row {
                    n, y, x0, count, ..
                },
                Out::Strided(s),
            ) => {
                let [sn, sy, sx, sc] = s.strides;
                let at = add(add(mul(*n, sn)?, mul(*y, sy)?)?, mul(*x0, sx)?)?;
                let channels = self.extents[3];
                if sc == s.elem || channels == 1 {
                    let pixel = mul(channels, s.elem)?;
                    let run = if sx == pixel || *count == 1 {
                        Run {
                            global: at,
                            rows: 1,
                            row_bytes: mul(*count, pixel)?,
                            pitch: 0,
                            local: out_local,
                            local_pitch: 0,
                        }
                    } else {
                        Run {
                            global: at,
                            rows: *count,
                            row_bytes: pixel,
                            pitch: sx,
                            local: out_local,
                            local_pitch: pixel,
                        }
                    };
                    store_run(worker, self.repr.prefix.output_address, run, pending, tess)?;
                } else {
                    let row = mul(*count, s.elem)?;
                    for c in 0..channels {
                        let local = add(out_local, index(mul(c, row)?)?)?;
                        let run = if sx == s.elem || *count == 1 {
                            Run {
                                global: add(at, mul(c, sc)?)?,
                                rows: 1,
                                row_bytes: row,
                                pitch: 0,
                                local,
                                local_pitch: 0,
                            }
                        } else {
                            Run {
                                global: add(at, mul(c, sc)?)?,
                                rows: *count,
                                row_bytes: s.elem,
                                pitch: sx,
                                local,
                                local_pitch: s.elem,
                            }
                        };
                        store_run(worker, self.repr.prefix.output_address, run, pending, tess)?;
                    }
                }
            }
            (Task::Chunk { tile, b0, b1, .. }, Out::Tiled(_)) => {
                let run = Run {
                    global: add(tile.offset, *b0)?,
                    rows: 1,
                    row_bytes: sub(*b1, *b0)?,
                    pitch: 0,
                    local: out_local,
                    local_pitch: 0,
                };
                store_run(worker, self.repr.prefix.output_address, run, pending, tess)?;
            }
            _ => return Err(FwError::Internal),
        }
        Ok(())
    }

    /// The table word of raw value `p` on output channel `c`.
    fn lookup(tables: &[u8], c: u64, p: u8) -> Result<[u8; 4], FwError> {
        let at = index(add(mul(c, 1024)?, mul(u64::from(p), 4)?)?)?;
        tables
            .get(at..add(at, 4)?)
            .and_then(|w| w.first_chunk::<4>())
            .copied()
            .ok_or(FwError::Internal)
    }

    /// Converts one strided row segment into `output`, staged pixel-major (channels
    /// contiguous in the output) or channel-major; returns the values written.
    fn convert_row(
        &self,
        input: &[u8],
        output: &mut [u8],
        tables: &[u8],
        window: &Option<Window>,
        (n, y, x0, count): (u64, u64, u64, u64),
        s: &Strided,
    ) -> Result<u64, FwError> {
        let channels = self.extents[3];
        let pixel_major = s.strides[3] == s.elem || channels == 1;
        let elem = index(s.elem)?;
        let empty = Window::default();
        let rows = LocalRows {
            window: window.as_ref().unwrap_or(&empty),
            local: input,
        };
        let mut raw = [[0u8; 3]; RUN];
        let mut k = 0u64;
        while k < count {
            let piece = sub(count, k)?.min(RUN as u64);
            let run = raw.get_mut(..index(piece)?).ok_or(FwError::Internal)?;
            self.plan
                .pixel_row_from(&PortableYuv, &rows, n, y, add(x0, k)?, run)
                .ok_or(FwError::Internal)?;
            for (j, px) in run.iter().enumerate() {
                let x = add(k, j as u64)?;
                for c in 0..channels {
                    let v = *px.get(index(c)?).ok_or(FwError::Internal)?;
                    let word = Self::lookup(tables, c, v)?;
                    let at = if pixel_major {
                        add(mul(x, channels)?, c)?
                    } else {
                        add(mul(c, count)?, x)?
                    };
                    let at = mul(index(at)?, elem)?;
                    output
                        .get_mut(at..add(at, elem)?)
                        .ok_or(FwError::Internal)?
                        .copy_from_slice(word.get(..elem).ok_or(FwError::Internal)?);
                }
            }
            k = add(k, piece)?;
        }
        mul(count, channels)
    }

    /// The logical slots `(n, y, x, c)` of the element at pixel `p` (in the tile's d, h, w
    /// order) and stored channel `k` of `tile`.
    fn coords(&self, t: &Tiled, tile: &Tile, p: u64, k: u64) -> Result<[u64; 4], FwError> {
        let [_, th, tw, _] = tile.extents;
        let w = rem(p, tw)?;
        let h = rem(div(p, tw)?, th)?;
        let d = div(p, mul(tw, th)?)?;
        let mut at = [0u64; 4];
        // The outer index, row-major over the outer axes.
        let mut rest = tile.outer;
        let view = &t.view;
        for &axis in view.outer_axes().iter().rev() {
            let e = *view
                .extents()
                .get(usize::from(axis))
                .ok_or(FwError::Internal)?;
            let slot = add(self.slot_base, usize::from(axis))?;
            *at.get_mut(slot).ok_or(FwError::Internal)? = rem(rest, e)?;
            rest = div(rest, e)?;
        }
        let tile_ext = view.tile();
        for (r, (role, within)) in t.roles.iter().zip([d, h, w, k]).enumerate() {
            if let Some(slot) = role {
                let origin = mul(
                    *tile.index.get(r).ok_or(FwError::Internal)?,
                    u64::from(*tile_ext.get(r).ok_or(FwError::Internal)?),
                )?;
                *at.get_mut(*slot).ok_or(FwError::Internal)? = add(origin, within)?;
            }
        }
        Ok(at)
    }

    /// Converts bytes `b0..b1` of `tile` into `output`; returns the values converted and
    /// the path.
    #[allow(clippy::too_many_arguments)]
    fn convert_chunk(
        &self,
        input: &[u8],
        output: &mut [u8],
        tables: &[u8],
        window: &Option<Window>,
        tile: &Tile,
        (b0, b1): (u64, u64),
        t: &Tiled,
    ) -> Result<(u64, ComputePath), FwError> {
        let [td, th, tw, tc] = tile.extents;
        let sc = t.view.stored_channels(tc).ok_or(FwError::Internal)?;
        let pixel_bytes = mul(sc, t.e)?;
        let data = mul(mul(mul(td, th)?, tw)?, pixel_bytes)?;
        let empty = Window::default();
        let rows = LocalRows {
            window: window.as_ref().unwrap_or(&empty),
            local: input,
        };
        let chunk = output
            .get_mut(..index(sub(b1, b0)?)?)
            .ok_or(FwError::Internal)?;
        chunk.fill(0);
        let end = b1.min(data);
        if b0 >= end {
            return Ok((0, ComputePath::Fast));
        }
        let p_first = div(b0, pixel_bytes)?;
        let p_last = div(sub(end, 1)?, pixel_bytes)?;
        let mut values = 0u64;
        let mut raw = [[0u8; 3]; RUN];
        let mut p = p_first;
        while p <= p_last {
            // A run of pixels along the tile's W role (the fast path's row code), or one.
            let piece = if t.runs {
                let row_end = add(sub(p, rem(p, tw)?)?, tw)?;
                sub(row_end.min(add(p_last, 1)?), p)?.min(RUN as u64)
            } else {
                1
            };
            let run = raw.get_mut(..index(piece)?).ok_or(FwError::Internal)?;
            if t.runs {
                let [n, y, x, _] = self.coords(t, tile, p, 0)?;
                self.plan
                    .pixel_row_from(&PortableYuv, &rows, n, y, x, run)
                    .ok_or(FwError::Internal)?;
            }
            for (j, px) in run.iter().enumerate() {
                let q = add(p, j as u64)?;
                for kk in 0..tc {
                    let [n, y, x, c] = self.coords(t, tile, q, kk)?;
                    let raw_px = if t.runs {
                        *px
                    } else {
                        let mut one = [[0u8; 3]; 1];
                        self.plan
                            .pixel_row_from(&PortableYuv, &rows, n, y, x, &mut one)
                            .ok_or(FwError::Internal)?;
                        one[0]
                    };
                    let v = *raw_px.get(index(c)?).ok_or(FwError::Internal)?;
                    let word = Self::lookup(tables, c, v)?;
                    for e in 0..t.e {
                        // BF16: the low bytes of the pixel's stored channels, then the
                        // high bytes; INT8: one plane.
                        let byte = add(mul(q, pixel_bytes)?, add(mul(e, sc)?, kk)?)?;
                        if byte < b0 || byte >= b1 {
                            continue;
                        }
                        let at = index(sub(byte, b0)?)?;
                        *chunk.get_mut(at).ok_or(FwError::Internal)? =
                            *word.get(index(e)?).ok_or(FwError::Internal)?;
                    }
                    values = add(values, 1)?;
                }
            }
            p = add(p, piece)?;
        }
        Ok((
            values,
            if t.runs {
                ComputePath::Fast
            } else {
                ComputePath::Fallback
            },
        ))
    }

    /// The window a set of output pixels reads: the bounding box of `(n, y, x)` over
    /// `pixels` (a box whose corners are among them covers every pixel between), clipped
    /// to the frame; `None` when it holds no frame pixel.
    fn window_of(
        &self,
        pixels: impl Iterator<Item = Result<[u64; 4], FwError>>,
    ) -> Result<Option<Window>, FwError> {
        let b = self.plan.border();
        let frame = self.plan.frame();
        let (mut lo, mut hi) = ([u64::MAX; 3], [0u64; 3]);
        let mut any = false;
        for at in pixels {
            let [n, y, x, _] = at?;
            any = true;
            for (k, v) in [n, y, x].into_iter().enumerate() {
                let l = lo.get_mut(k).ok_or(FwError::Internal)?;
                *l = (*l).min(v);
                let h = hi.get_mut(k).ok_or(FwError::Internal)?;
                *h = (*h).max(v);
            }
        }
        if !any || frame.height == 0 || frame.width == 0 {
            return Ok(None);
        }
        // Output rows and columns to frame rows and columns, clipped.
        let clip = |lo: u64, hi: u64, margin: u64, size: u64| -> Option<(u64, u64)> {
            let last = margin.checked_add(size)?.checked_sub(1)?;
            let (a, b) = (lo.max(margin), hi.min(last));
            if a > b {
                return None;
            }
            Some((a.checked_sub(margin)?, b.checked_sub(margin)?))
        };
        let (Some(fy), Some(fx)) = (
            clip(lo[1], hi[1], b.top, frame.height),
            clip(lo[2], hi[2], b.left, frame.width),
        ) else {
            return Ok(None);
        };
        Window::new(frame.format, (lo[0], hi[0]), fy, fx).map(Some)
    }
}

/// The strided output's facts: strides per logical slot and the row segment.
fn strided(
    view: &View,
    slot_base: usize,
    channels: u64,
    format: Format,
) -> Result<Strided, FwError> {
    let mut strides = [0u64; 4];
    for (axis, &s) in view.strides().iter().enumerate().take(view.rank()) {
        *strides
            .get_mut(add(slot_base, axis)?)
            .ok_or(FwError::Internal)? = s;
    }
    let elem = view.dtype().size_u64();
    let width = *view
        .extents()
        .get(add(sub(view.rank(), 2)?, 0)?)
        .ok_or(FwError::Internal)?;
    // Frame bytes per pixel, chroma included (at most one more byte a pixel), and two
    // pairs of slack for a segment starting at an odd column.
    let per_pixel = add(format.pixel_bytes(), 1)?;
    let by_in = div(sub(IN_SLOT_BYTES as u64, 8)?, per_pixel)?;
    let by_out = div(OUT_SLOT_BYTES as u64, mul(channels, elem)?)?;
    let seg = by_in.min(by_out).min(width).max(1);
    Ok(Strided {
        strides,
        elem,
        seg,
        segs: width.div_ceil(seg),
    })
}

/// The tiled output's facts: roles as logical slots, the fast path, chunk sizes.
fn tiled(plan: &Plan, view: &TiledView, slot_base: usize) -> Result<Tiled, FwError> {
    let e = view.planes() as u64;
    let mut roles = [None; 4];
    for (r, a) in roles.iter_mut().zip(view.layout().axes) {
        if let Some(a) = a {
            *r = Some(add(slot_base, usize::from(a))?);
        }
    }
    let runs = roles[2] == Some(2) && roles[3] == Some(3);
    let mut t = Tiled {
        view: *view,
        e,
        roles,
        chunk: [0; TILE_CLASSES],
        runs,
    };
    let frame = plan.frame();
    let bpp = frame.format.pixel_bytes();
    for (slot, class) in view.tile_classes().iter().enumerate() {
        if class.count == 0 {
            continue;
        }
        let bytes = view.tile_bytes(class.extents).ok_or(FwError::Internal)?;
        let [td, th, tw, tc] = class.extents;
        let sc = view.stored_channels(tc).ok_or(FwError::Internal)?;
        let pixel_bytes = mul(sc, e)?;
        // The most pixels a chunk covers, then the box they may read: rows of the tile
        // along each role (a chunk of whole W rows, plus one partial row at each end).
        let mut chunk = floor_to((OUT_SLOT_BYTES as u64).min(bytes.next_multiple_of(16)), 16);
        loop {
            let pixels = div(chunk, pixel_bytes)?.max(1);
            let w_rows = add(pixels.div_ceil(tw), 1)?;
            let span = [td.min(add(w_rows.div_ceil(th), 1)?), th.min(w_rows), tw, tc];
            // The box per logical slot: a role's span, 1 for the others.
            let mut box4 = [1u64; 4];
            for (r, role) in roles.iter().enumerate() {
                if let Some(s) = role {
                    let b = box4.get_mut(*s).ok_or(FwError::Internal)?;
                    *b = mul(*b, *span.get(r).ok_or(FwError::Internal)?)?;
                }
            }
            let [bn, by, bx, _] = box4;
            let rows_y = by.min(frame.height.max(1));
            let cols = bx.min(frame.width.max(1));
            let per_frame = add(
                mul(rows_y, mul(add(cols, 2)?, bpp)?)?,
                mul(add(rows_y / 2, 2)?, add(cols, 4)?)?,
            )?;
            let window = mul(bn.min(plan.frames().max(1)), per_frame)?;
            if window <= IN_SLOT_BYTES as u64 || chunk <= 16 {
                break;
            }
            chunk = floor_to(chunk / 2, 16).max(16);
        }
        *t.chunk.get_mut(slot).ok_or(FwError::Internal)? = chunk;
    }
    Ok(t)
}

/// Where a worker is in the task order.
struct Cursor {
    /// Strided: the next task index.
    task: u64,
    /// Tiled: the tiles in storage order, the current one and the next byte in it.
    tiles: Option<simak_core::layout::Tiles>,
    tile: Option<Tile>,
    byte: u64,
}

impl Cursor {
    /// A cursor at task `start` (the tiles walked once per worker).
    fn new(ctx: &Ctx<'_>, start: u64) -> Result<Cursor, FwError> {
        match &ctx.out {
            Out::Strided(_) => Ok(Cursor {
                task: start,
                tiles: None,
                tile: None,
                byte: 0,
            }),
            Out::Tiled(t) => {
                let mut tiles = t.view.tiles();
                let mut skip = start;
                loop {
                    let tile = tiles.next().ok_or(FwError::Internal)?;
                    let chunk = *t.chunk.get(tile.class).ok_or(FwError::Internal)?;
                    let chunks = tile.bytes.div_ceil(chunk);
                    if skip < chunks {
                        return Ok(Cursor {
                            task: start,
                            tiles: Some(tiles),
                            tile: Some(tile),
                            byte: mul(skip, chunk)?,
                        });
                    }
                    skip = sub(skip, chunks)?;
                }
            }
        }
    }

    /// The task at the cursor, which then advances.
    fn next(&mut self, ctx: &Ctx<'_>) -> Result<Task, FwError> {
        match &ctx.out {
            Out::Strided(s) => {
                let [_, height, width, _] = ctx.extents;
                let seg = rem(self.task, s.segs)?;
                let row = div(self.task, s.segs)?;
                let (n, y) = (div(row, height)?, rem(row, height)?);
                let x0 = mul(seg, s.seg)?;
                let count = s.seg.min(sub(width, x0)?);
                self.task = add(self.task, 1)?;
                let window = ctx.window_of((0..count).map(|k| Ok([n, y, add(x0, k)?, 0])))?;
                Ok(Task::Row {
                    n,
                    y,
                    x0,
                    count,
                    window,
                })
            }
            Out::Tiled(t) => {
                let tile = self.tile.ok_or(FwError::Internal)?;
                let chunk = *t.chunk.get(tile.class).ok_or(FwError::Internal)?;
                let b0 = self.byte;
                let b1 = add(b0, chunk)?.min(tile.bytes);
                let [td, th, tw, tc] = tile.extents;
                let sc = t.view.stored_channels(tc).ok_or(FwError::Internal)?;
                let pixel_bytes = mul(sc, t.e)?;
                let data = mul(mul(mul(td, th)?, tw)?, pixel_bytes)?;
                let window =
                    if b0 < data {
                        let p0 = div(b0, pixel_bytes)?;
                        let p1 = div(sub(b1.min(data), 1)?, pixel_bytes)?;
                        let last = sub(tc, 1)?;
                        ctx.window_of((p0..=p1).flat_map(|p| {
                            [ctx.coords(t, &tile, p, 0), ctx.coords(t, &tile, p, last)]
                        }))?
                    } else {
                        None
                    };
                if b1 >= tile.bytes {
                    self.tile = self.tiles.as_mut().and_then(Iterator::next);
                    self.byte = 0;
                } else {
                    self.byte = b1;
                }
                Ok(Task::Chunk {
                    tile,
                    b0,
                    b1,
                    window,
                })
            }
        }
    }
}
