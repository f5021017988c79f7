//! The CastTess work model (SPEC §8): tile classes, tasks, weighted suffix tables and the
//! carry cursor that walks a worker's tasks.
//!
//! - **Tile classes.** Along each role (D, H, W, C) a tile is either full or the one
//!   boundary tile, so a call has at most [`CLASSES`] = 16 classes of tile extents. Each
//!   class fixes its stored channels, padded size and how it is split into tasks; nothing
//!   here grows with the tensor.
//! - **Tasks.** A task owns whole 16-byte output blocks:
//!   - [`Mode::Bands`]: a band of consecutive pixels (D, H, W order) of one tile with all
//!     its stored channels; the pixel count is a multiple of `8 / gcd(sc, 8)`, so the band
//!     occupies a multiple of 16 bytes, and holds at most [`PANEL_VALUES`] stored values.
//!     The last band of a tile also writes the tile's trailing padding. A class that
//!     stages complete source pixels ([`staged_band`]) uses a power-of-two band of at most
//!     [`STAGED_MAX_ELEMENTS`] source elements instead.
//!   - [`Mode::Panels`]: planes of more than [`PANEL_VALUES`] channels that are a multiple
//!     of 16 split into channel panels of [`PANEL_VALUES`] channels (one pixel each); a
//!     panel writes its 16-aligned slice of the low and of the high plane.
//!   - [`Mode::Blocks`]: the physical-block fallback for channel counts whose aligned band
//!     cannot fit a slot (giant compact planes not divisible by 16, or
//!     `sc · 8 / gcd(sc, 8) > 4096`): aligned 4 KiB blocks of the tile's bytes. An element
//!     may be converted twice there, once per byte plane.
//! - **Order.** Tasks follow the output: outer index, then tiles in C, D, H, W order (W
//!   fastest), then the tasks of a tile. The weighted suffix tables give how many tasks
//!   lie under one index of each level for each prefix of full/boundary choices; a
//!   worker's first task is decoded from them once ([`TessGeometry::locate`]), later ones
//!   advance with carry over W, H, D, C ([`Cursor::advance`]); crossing an outer slice uses
//!   the general decoder of the outer index again.
//!
//! Control arithmetic is 64-bit; decode proved both spans fit the 32-bit device domain,
//! so every offset below fits too.

use simak_core::DType;
use simak_core::layout::TiledView;
use simak_core::tensor::MAX_RANK;
use simak_core::wire::casttess::CastTessRepr;

use crate::casttess::{DMA_MIN_ROW_BYTES, w_segment_by_dma};

/// Stored BF16 values per band or panel (and per 4 KiB block at most).
pub const PANEL_VALUES: u64 = 4096;
/// Source bytes per local slot (16 KiB: 4096 FP32 values).
pub const SOURCE_SLOT_BYTES: usize = 16 * 1024;
/// Output bytes per local slot (8 KiB: 4096 BF16 values in two byte planes).
pub const OUTPUT_SLOT_BYTES: usize = 8 * 1024;
/// One local slot: source then output.
pub const SLOT_BYTES: usize = SOURCE_SLOT_BYTES + OUTPUT_SLOT_BYTES;
/// Local memory a worker needs: two slots (48 KiB, the SPEC §8 budget).
pub const LOCAL_BYTES: usize = 2 * SLOT_BYTES;
/// Bytes per physical output block of the fallback.
pub const BLOCK_BYTES: u64 = 4096;
/// Most tile classes a call can have (full or boundary along each of four roles): the
/// layout's [`simak_core::layout::TILE_CLASSES`].
pub const CLASSES: usize = simak_core::layout::TILE_CLASSES;
/// Most source channels (the tensor's C extent) a staged complete-pixel band holds per
/// pixel (SPEC §8 "Staged complete-pixel bands").
pub const STAGED_MAX_CHANNELS: u64 = 64;
/// Most source elements (pixels × source channels) of one staged complete-pixel band.
pub const STAGED_MAX_ELEMENTS: u64 = 4096;
/// Role slots (D = 0, H = 1, W = 2, C = 3) in tile order, slowest first.
pub const LEVELS: [usize; 4] = [3, 0, 1, 2];

const _: () = assert!(LOCAL_BYTES == crate::work::LOCAL_MEMORY_BYTES);

/// How a tile class is split into tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mode {
    /// Pixel bands with every stored channel.
    #[default]
    Bands,
    /// One-pixel channel panels of a plane wider than [`PANEL_VALUES`].
    Panels,
    /// Aligned 4 KiB blocks of the tile's bytes.
    Blocks,
}

/// One class of tiles: extents, sizes and task split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TileClass {
    /// Tiles of this class per outer index (0 when the class does not occur).
    pub count: u64,
    /// Actual tile extents `td', th', tw', tc'`.
    pub extents: [u64; 4],
    /// Pixels per tile (`td'·th'·tw'`).
    pub pixels: u64,
    /// Stored channels `sc`.
    pub stored: u64,
    /// Padded tile size in bytes.
    pub bytes: u64,
    /// Task split.
    pub mode: Mode,
    /// Pixels per band (bands and panels).
    pub band: u64,
    /// Channels per panel (`sc` for bands).
    pub panel: u64,
    /// Panels per band (1 for bands).
    pub panels: u64,
    /// Tasks per tile.
    pub tasks: u64,
    /// Whether the class's bands stage complete source pixels (every source channel) and
    /// pick the tile's channels locally ([`staged_band`]); its `band` is then that
    /// power-of-two band.
    pub staged: bool,
}

/// The class of an index outside the 16 (never: a mask has 4 bits).
const EMPTY_CLASS: TileClass = TileClass {
    count: 0,
    extents: [0; 4],
    pixels: 0,
    stored: 0,
    bytes: 0,
    mode: Mode::Bands,
    band: 0,
    panel: 0,
    panels: 1,
    tasks: 1,
    staged: false,
};

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        // b ≠ 0 here.
        (a, b) = (b, a.checked_rem(b).unwrap_or(0));
    }
    a
}

/// The staged complete-pixel band of `class` (SPEC §8), or `None` when its tiles keep the
/// general band gather. `c_src` is the tensor's C extent (the source channels of a
/// pixel), `role_strides` the input byte strides of D, H, W, C, `dtype` the input dtype.
///
/// A class stages when all of these hold:
/// - it is split into regular bands ([`Mode::Bands`]);
/// - it is channel-subtiled with few source channels: `tc' < c_src ≤ 64`
///   ([`STAGED_MAX_CHANNELS`]);
/// - the input C stride is one element;
/// - the general gather would read its channel subtile pixel by pixel with direct loads:
///   `tc' · elem < 16` ([`DMA_MIN_ROW_BYTES`]), and a whole W segment of the subtile (`tw'`
///   pixels of `tc' · elem` bytes at the W pitch) is neither a rectangle of at least
///   [`crate::RECT_MIN_BYTES`] nor a BF16 exact-width row
///   (`casttess::w_segment_by_dma`; those already move one 2D DMA command per W
///   segment and read only the logical bytes, so staging would only add bytes);
/// - pixels are adjacent along W (`stride_W = c_src · elem`), or, for BF16 only, padded
///   with `2 · c_src ≤ stride_W ≤ 2^31 − 1`;
/// - the staged rows move by DMA: a W segment of adjacent pixels (`tw' · c_src · elem`
///   bytes) or, with padded pixels, one pixel (`2 · c_src` bytes) is at least 16 bytes.
///
/// The band is the largest power of two of pixels with `band · max(c_src, sc) ≤ 4096`
/// ([`STAGED_MAX_ELEMENTS`]): at most 4096 source elements (16 KiB of FP32) and 4096
/// stored values (8 KiB of output), and a multiple of `8 / gcd(sc, 8)` (it is at least
/// 64), so a task still owns whole 16-byte output blocks.
pub fn staged_band(
    class: &TileClass,
    c_src: u64,
    role_strides: &[u64; 4],
    dtype: DType,
) -> Option<u64> {
    let elem = dtype.size() as u64;
    let [_, _, tw, tc] = class.extents;
    let [_, _, sw, sc] = *role_strides;
    // Extents and strides of a decoded descriptor: the products fit u64 (a pixel row and a
    // W segment lie inside the input span); an overflow cannot stage.
    let pixel = c_src.checked_mul(elem)?;
    let adjacent = sw == pixel;
    let padded = dtype == DType::BF16 && c_src.checked_mul(2)? <= sw && sw <= i32::MAX as u64;
    let row_bytes = if adjacent {
        tw.checked_mul(pixel)?
    } else {
        pixel
    };
    let eligible = class.mode == Mode::Bands
        && tc < c_src
        && c_src <= STAGED_MAX_CHANNELS
        && sc == elem
        && tc.checked_mul(elem)? < u64::from(DMA_MIN_ROW_BYTES)
        && !w_segment_by_dma(dtype, tc, tw, sw, class.band.min(class.pixels))
        && (adjacent || padded)
        && row_bytes >= u64::from(DMA_MIN_ROW_BYTES);
    if !eligible {
        return None;
    }
    let limit = STAGED_MAX_ELEMENTS.checked_div(c_src.max(class.stored))?;
    Some(1 << limit.ilog2())
}

impl TileClass {
    fn new(extents: [u64; 4], count: u64, tiled: &TiledView) -> Option<TileClass> {
        let [d, h, w, c] = extents;
        let pixels = d.checked_mul(h)?.checked_mul(w)?;
        let stored = tiled.stored_channels(c)?;
        let bytes = tiled.tile_bytes(extents)?;
        let mut class = TileClass {
            count,
            extents,
            pixels,
            stored,
            bytes,
            mode: Mode::Bands,
            band: 0,
            panel: stored,
            panels: 1,
            tasks: 0,
            staged: false,
        };
        let quantum = 8u64.checked_div(gcd(stored, 8))?;
        if stored.checked_mul(quantum)? <= PANEL_VALUES {
            class.band = PANEL_VALUES
                .checked_div(stored)?
                .checked_div(quantum)?
                .checked_mul(quantum)?;
            class.tasks = pixels.div_ceil(class.band);
        } else if stored > PANEL_VALUES && stored.is_multiple_of(16) {
            class.mode = Mode::Panels;
            class.band = 1;
            class.panel = PANEL_VALUES;
            class.panels = stored.div_ceil(PANEL_VALUES);
            class.tasks = pixels.checked_mul(class.panels)?;
        } else {
            class.mode = Mode::Blocks;
            class.tasks = bytes.div_ceil(BLOCK_BYTES);
        }
        Some(class)
    }
}

/// The geometry of one CastTess call: classes, suffix tables, strides and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TessGeometry {
    /// Tile classes indexed by a 4-bit mask: bit `r` set = boundary tile along role `r`.
    pub classes: [TileClass; CLASSES],
    /// Tile extents per role.
    pub tile: [u64; 4],
    /// Full tiles per role (≥ 1).
    pub full: [u64; 4],
    /// Tiles per role (full plus an optional boundary tile).
    pub counts: [u64; 4],
    /// Input byte stride of each role (0 when absent or of extent 1).
    pub role_strides: [u64; 4],
    /// Tasks per outer index.
    pub tasks_per_outer: u64,
    /// Outer indices.
    pub outer_count: u64,
    /// Tasks of the whole call.
    pub tasks: u64,
    /// Output bytes per outer index.
    pub bytes_per_outer: u64,
    /// Stored-value count of the largest regular band (for reports).
    pub band: u64,
    weights: [[u64; CLASSES]; 4],
    outer: [(u64, u64); MAX_RANK],
    n_outer: usize,
    tiled: TiledView,
}

/// Bits of the roles at levels `0..=level`.
const fn prefix_mask(level: usize) -> usize {
    let mut mask = 0;
    let mut l = 0;
    while l <= level && l < 4 {
        let [r0, r1, r2, r3] = LEVELS;
        let r = match l {
            0 => r0,
            1 => r1,
            2 => r2,
            _ => r3,
        };
        mask |= 1 << r;
        l = l.wrapping_add(1);
    }
    mask
}

impl TessGeometry {
    /// The geometry of a validated, nonempty descriptor; `None` if the layout does not
    /// admit (never after decode) or the tensor is empty.
    pub fn new(repr: &CastTessRepr) -> Option<TessGeometry> {
        let tiled = repr.tiled().ok()?;
        if tiled.is_empty() {
            return None;
        }
        let role_extents = *tiled.role_extents();
        let tile = tiled.tile().map(u64::from);
        // Full tiles and tiles per role (full plus an optional boundary tile): the
        // layout's own split (SPEC §5).
        let full = tiled.full_tiles();
        let counts = *tiled.tile_counts();
        let mut role_strides = [0u64; 4];
        for (s, axis) in role_strides.iter_mut().zip(repr.axes) {
            if let Some(a) = axis {
                *s = *repr.prefix.input_strides.get(usize::from(a))?;
            }
        }
        // Tiles along role r of a class: the full tiles, or the 0 or 1 boundary tile.
        let tiles = |bit: bool, r: usize| {
            let (n, f) = (counts.get(r).copied()?, full.get(r).copied()?);
            if bit { n.checked_sub(f) } else { Some(f) }
        };
        let mut classes = [TileClass::default(); CLASSES];
        // A role of extent 1 has no stride (a W of one pixel never has adjacent pixels).
        let mut staging_strides = role_strides;
        for (s, &n) in staging_strides.iter_mut().zip(role_extents.iter()) {
            if n <= 1 {
                *s = 0;
            }
        }
        for (class, shape) in classes.iter_mut().zip(tiled.tile_classes()) {
            if shape.count != 0 {
                let mut c = TileClass::new(shape.extents, shape.count, &tiled)?;
                if let Some(band) =
                    staged_band(&c, role_extents[3], &staging_strides, repr.prefix.dtype)
                {
                    c.staged = true;
                    c.band = band;
                    c.tasks = c.pixels.div_ceil(band);
                }
                *class = c;
            }
        }
        let mut weights = [[0u64; CLASSES]; 4];
        for (level, table) in weights.iter_mut().enumerate() {
            let prefix = prefix_mask(level);
            for (mask, class) in classes.iter().enumerate() {
                if class.count == 0 {
                    continue;
                }
                // Counts and tasks of an admitted layout: the sums fit (each task owns
                // bytes of the capacity).
                let mut below = 1u64;
                for r in 0..4 {
                    if prefix & (1 << r) == 0 {
                        below = below.checked_mul(tiles(mask & (1 << r) != 0, r)?)?;
                    }
                }
                let slot = table.get_mut(mask & prefix)?;
                *slot = slot.checked_add(below.checked_mul(class.tasks)?)?;
            }
        }
        let tasks_per_outer = classes.iter().try_fold(0u64, |sum, c| {
            sum.checked_add(c.count.checked_mul(c.tasks)?)
        })?;
        let mut outer = [(0u64, 0u64); MAX_RANK];
        let mut n_outer = 0usize;
        for (slot, &a) in outer.iter_mut().zip(tiled.outer_axes()) {
            let a = usize::from(a);
            *slot = (
                *repr.prefix.extents.get(a)?,
                *repr.prefix.input_strides.get(a)?,
            );
            n_outer = n_outer.wrapping_add(1);
        }
        let band = classes
            .iter()
            .filter(|c| c.count != 0 && c.mode != Mode::Blocks)
            .map(|c| c.band.saturating_mul(c.panel.min(c.stored)))
            .max()
            .unwrap_or(0);
        Some(TessGeometry {
            classes,
            tile,
            full,
            counts,
            role_strides,
            tasks_per_outer,
            outer_count: tiled.outer_count(),
            tasks: tasks_per_outer.checked_mul(tiled.outer_count())?,
            bytes_per_outer: tiled.bytes_per_outer(),
            band,
            weights,
            outer,
            n_outer,
            tiled,
        })
    }

    /// Source channels of a pixel: the tensor's C extent (1 without a C role).
    pub fn source_channels(&self) -> u64 {
        self.tiled.role_extents()[3]
    }

    /// Number of classes that occur.
    pub fn n_classes(&self) -> usize {
        self.classes.iter().filter(|c| c.count != 0).count()
    }

    /// Input byte offset of outer index `outer` (the general decoder: one division per
    /// outer axis).
    pub fn outer_input(&self, outer: u64) -> u64 {
        let mut rest = outer;
        let mut offset = 0u64;
        // Outer extents are ≥ 1 and the offsets below the input span.
        for &(extent, stride) in self.outer.iter().take(self.n_outer).rev() {
            offset =
                offset.wrapping_add(rest.checked_rem(extent).unwrap_or(0).wrapping_mul(stride));
            rest = rest.checked_div(extent).unwrap_or(0);
        }
        offset
    }

    /// The class mask of the tile at per-role `index`.
    fn class_of(&self, index: &[u64; 4]) -> usize {
        self.tiled.class_of(*index)
    }

    /// A cursor at task `task` (the general decoder, used once per worker).
    pub fn locate(&self, task: u64) -> Cursor {
        // A nonempty geometry has tasks_per_outer ≥ 1; every weight met on the way to a
        // task below `tasks` is ≥ 1, and the products are at most `tasks`.
        let outer = task.checked_div(self.tasks_per_outer).unwrap_or(0);
        let mut rest = task.checked_rem(self.tasks_per_outer).unwrap_or(0);
        let mut index = [0u64; 4];
        let mut mask = 0usize;
        for ((table, &r), &full) in self
            .weights
            .iter()
            .zip(LEVELS.iter())
            .zip(LEVELS.iter().map(|&r| self.full.get(r).unwrap_or(&0)))
        {
            // Weight of one full-tile index at this level, given the prefix so far.
            let weight = table.get(mask).copied().unwrap_or(0);
            let span = full.wrapping_mul(weight);
            let Some(i) = index.get_mut(r) else { continue };
            if rest < span {
                *i = rest.checked_div(weight).unwrap_or(0);
                rest = rest.checked_rem(weight).unwrap_or(0);
            } else {
                rest = rest.wrapping_sub(span);
                *i = full;
                mask |= 1 << r;
            }
        }
        let offset = self
            .tiled
            .tile_offset([index[0], index[1], index[2], index[3]])
            .unwrap_or(0);
        Cursor {
            outer,
            index,
            class: mask,
            task: rest,
            tile_output: outer
                .wrapping_mul(self.bytes_per_outer)
                .wrapping_add(offset),
            outer_input: self.outer_input(outer),
        }
    }
}

/// A position in the task order: outer index, tile, task within the tile, and the tile's
/// byte offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Outer index.
    pub outer: u64,
    /// Tile index per role (D, H, W, C).
    pub index: [u64; 4],
    /// Class mask of the tile.
    pub class: usize,
    /// Task within the tile.
    pub task: u64,
    /// Output byte offset of the tile from the output base.
    pub tile_output: u64,
    /// Input byte offset of the outer index from the input base.
    pub outer_input: u64,
}

impl Cursor {
    /// Input byte offset of the tile's first element.
    pub fn tile_input(&self, g: &TessGeometry) -> u64 {
        // Inside the input span: no wrap.
        self.index
            .iter()
            .zip(g.tile.iter().zip(g.role_strides.iter()))
            .fold(self.outer_input, |acc, (i, (t, s))| {
                acc.wrapping_add(i.wrapping_mul(*t).wrapping_mul(*s))
            })
    }

    /// The tile's class.
    pub fn class<'g>(&self, g: &'g TessGeometry) -> &'g TileClass {
        // The mask is 4 bits: always inside the 16 classes.
        g.classes.get(self.class).unwrap_or(&EMPTY_CLASS)
    }

    /// Moves to the next task: within the tile, else the next tile with carry over W, H,
    /// D, C, else the next outer index.
    pub fn advance(&mut self, g: &TessGeometry) {
        // Counters below `tasks` and offsets below the capacity: no wrap.
        let class = *self.class(g);
        self.task = self.task.wrapping_add(1);
        if self.task < class.tasks {
            return;
        }
        self.task = 0;
        self.tile_output = self.tile_output.wrapping_add(class.bytes);
        for &r in LEVELS.iter().rev() {
            let (Some(i), Some(&n)) = (self.index.get_mut(r), g.counts.get(r)) else {
                continue;
            };
            *i = i.wrapping_add(1);
            if *i < n {
                self.class = g.class_of(&self.index);
                return;
            }
            *i = 0;
        }
        self.outer = self.outer.wrapping_add(1);
        self.outer_input = g.outer_input(self.outer);
        self.class = g.class_of(&self.index);
    }
}

/// What one task covers: pixels and channels of a band or panel, or bytes of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TaskSpan {
    /// Bands and panels: first pixel of the tile; blocks: first byte of the tile.
    pub first: u64,
    /// Bands and panels: pixels; blocks: bytes.
    pub count: u64,
    /// First stored channel (0 for bands and blocks).
    pub c0: u64,
    /// Stored channels per pixel (`sc` for bands, the panel width for panels).
    pub k: u64,
    /// Actual (non-padding) channels among them.
    pub kc: u64,
}

/// A run of output rows a task writes: `rows` rows of `row_bytes`, `pitch` bytes apart,
/// the first at byte `start` of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OutputRows {
    /// Output byte offset of the first row.
    pub start: u64,
    /// Bytes per row.
    pub row_bytes: u64,
    /// Bytes between row starts.
    pub pitch: u64,
    /// Rows (≥ 1).
    pub rows: u64,
}

impl Cursor {
    /// What the current task covers.
    pub fn span(&self, g: &TessGeometry) -> TaskSpan {
        let class = self.class(g);
        match class.mode {
            Mode::Bands | Mode::Panels => {
                // panels ≥ 1; the task is inside its tile, so first < pixels and
                // c0 < stored.
                let band = self.task.checked_div(class.panels).unwrap_or(0);
                let panel = self.task.checked_rem(class.panels).unwrap_or(0);
                let first = band.wrapping_mul(class.band);
                let c0 = panel.wrapping_mul(class.panel);
                let k = class.panel.min(class.stored.saturating_sub(c0));
                TaskSpan {
                    first,
                    count: class.band.min(class.pixels.saturating_sub(first)),
                    c0,
                    k,
                    kc: k.min(class.extents[3].saturating_sub(c0)),
                }
            }
            Mode::Blocks => {
                // The block is inside its tile: first < bytes.
                let first = self.task.wrapping_mul(BLOCK_BYTES);
                TaskSpan {
                    first,
                    count: BLOCK_BYTES.min(class.bytes.saturating_sub(first)),
                    c0: 0,
                    k: class.stored,
                    kc: class.extents[3],
                }
            }
        }
    }
}

impl TaskSpan {
    /// Output bytes of a band: its pixels, plus the tile's trailing padding for the last
    /// band of the tile.
    pub fn band_bytes(&self, class: &TileClass) -> u64 {
        // Pixels of one tile, whose padded size fits u64: no wrap.
        let pixel_bytes = class.stored.wrapping_mul(2);
        if self.first.wrapping_add(self.count) == class.pixels {
            class
                .bytes
                .wrapping_sub(self.first.wrapping_mul(pixel_bytes))
        } else {
            self.count.wrapping_mul(pixel_bytes)
        }
    }

    /// The output rows this task writes, per transfer: one run for bands and blocks, the
    /// low-plane and high-plane runs for panels. Every row starts and ends on a 16-byte
    /// boundary of a 16-byte aligned output.
    pub fn output_rows(&self, class: &TileClass, tile_output: u64) -> [Option<OutputRows>; 2] {
        let one = |start: u64, len: u64| OutputRows {
            start,
            row_bytes: len,
            pitch: len,
            rows: 1,
        };
        // Offsets inside the tiled output (below the capacity): no wrap.
        let pixel_bytes = class.stored.wrapping_mul(2);
        let band_start = tile_output.wrapping_add(self.first.wrapping_mul(pixel_bytes));
        match class.mode {
            Mode::Bands => [Some(one(band_start, self.band_bytes(class))), None],
            Mode::Blocks => [
                Some(one(tile_output.wrapping_add(self.first), self.count)),
                None,
            ],
            Mode::Panels => {
                let row = band_start.wrapping_add(self.c0);
                let plane = |p: u64| OutputRows {
                    start: row.wrapping_add(p.wrapping_mul(class.stored)),
                    row_bytes: self.k,
                    pitch: pixel_bytes,
                    rows: self.count,
                };
                [Some(plane(0)), Some(plane(1))]
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test {
    extern crate std;

    use std::vec;
    use std::vec::Vec;

    use simak_core::DType;
    use simak_core::layout::{Channels, MlaTiled};
    use simak_core::ops::casttess::{Request, TiledTensorSpec, check_inference};
    use simak_core::tensor::TensorSpec;

    use super::*;

    fn geometry<const R: usize>(
        shape: [u64; R],
        axes: [Option<u8>; 4],
        tile: [u32; 4],
        channels: Channels,
    ) -> TessGeometry {
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous(shape, DType::F32),
            output: TiledTensorSpec::new(shape, DType::BF16, MlaTiled::new(axes, tile, channels)),
        })
        .unwrap();
        let device = simak_core::ev74::casttess::check_inference(&plan).unwrap();
        TessGeometry::new(device.repr()).unwrap()
    }

    /// Walks every task with the carry cursor and checks the work-model invariants:
    /// the general decoder agrees with the carry at every task, every task stays within
    /// its budgets, and the tasks' output rows are whole 16-byte blocks covering the
    /// capacity exactly once.
    fn check_tasks(g: &TessGeometry) -> [u64; 3] {
        let capacity = g.outer_count * g.bytes_per_outer;
        let mut written = vec![0u8; capacity as usize];
        let mut modes = [0u64; 3];
        let mut cursor = g.locate(0);
        assert!(g.n_classes() <= CLASSES);
        for t in 0..g.tasks {
            assert_eq!(g.locate(t), cursor, "task {t}");
            let class = cursor.class(g);
            let span = cursor.span(g);
            match class.mode {
                Mode::Bands | Mode::Panels => {
                    assert!(span.count * span.k <= PANEL_VALUES, "{span:?}");
                    assert!(span.count * span.kc * 4 <= SOURCE_SLOT_BYTES as u64);
                }
                Mode::Blocks => assert!(span.count <= BLOCK_BYTES),
            }
            modes[class.mode as usize] += 1;
            let mut local = 0;
            for run in span
                .output_rows(class, cursor.tile_output)
                .into_iter()
                .flatten()
            {
                assert_eq!(run.start % 16, 0, "{run:?}");
                assert_eq!(run.row_bytes % 16, 0, "{run:?}");
                local += run.rows * run.row_bytes;
                for r in 0..run.rows {
                    let at = (run.start + r * run.pitch) as usize;
                    for b in &mut written[at..at + run.row_bytes as usize] {
                        *b += 1;
                    }
                }
            }
            assert!(local <= OUTPUT_SLOT_BYTES as u64);
            cursor.advance(g);
        }
        assert!(written.iter().all(|&w| w == 1), "coverage");
        modes
    }

    #[test]
    fn tasks_cover_the_output_once_in_whole_blocks() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut cases = 0;
        for _ in 0..400 {
            let shape = [1 + next(3), 1 + next(9), 1 + next(12), 1 + next(40)];
            let mut tile = [1u32; 4];
            for r in 0..4 {
                tile[r] = 1 + next(shape[r]) as u32;
            }
            tile[0] = 1;
            let channels = if next(2) == 0 {
                Channels::Compact
            } else {
                Channels::PadTo16
            };
            let g = geometry(shape, [None, Some(1), Some(2), Some(3)], tile, channels);
            check_tasks(&g);
            cases += 1;
        }
        // Rank 6 with two outer axes and a named axis in the middle.
        let g = geometry(
            [2, 3, 5, 2, 7, 3],
            [Some(1), Some(2), Some(4), Some(5)],
            [2, 2, 3, 2],
            Channels::Compact,
        );
        assert_eq!(g.outer_count, 4);
        check_tasks(&g);
        assert_eq!(cases, 400);
    }

    #[test]
    fn modes_follow_the_stored_channels() {
        let cases: [(u64, Channels, Mode, u64); 9] = [
            (1, Channels::Compact, Mode::Bands, 4096),
            (3, Channels::Compact, Mode::Bands, 1360),
            (17, Channels::PadTo16, Mode::Bands, 128),
            (511, Channels::Compact, Mode::Bands, 8),
            (513, Channels::Compact, Mode::Blocks, 0),
            (1000, Channels::Compact, Mode::Bands, 4),
            (4096, Channels::Compact, Mode::Bands, 1),
            (4097, Channels::Compact, Mode::Blocks, 0),
            (4097, Channels::PadTo16, Mode::Panels, 1),
        ];
        for (c, channels, mode, band) in cases {
            let g = geometry(
                [3, c],
                [None, None, Some(0), Some(1)],
                [1, 1, 2, c as u32],
                channels,
            );
            let class = &g.classes[0];
            assert_eq!((class.mode, class.band), (mode, band), "{c} {channels:?}");
            let modes = check_tasks(&g);
            assert_eq!(modes[mode as usize], g.tasks);
        }
        // A 4112-channel PadTo16 plane splits into panels of 4096 and 16 channels.
        let g = geometry(
            [2, 4097],
            [None, None, Some(0), Some(1)],
            [1, 1, 1, 4097],
            Channels::PadTo16,
        );
        assert_eq!((g.classes[0].panels, g.tasks), (2, 4));
        let spans: Vec<TaskSpan> = (0..4).map(|t| g.locate(t).span(&g)).collect();
        assert_eq!(
            spans.iter().map(|s| (s.c0, s.k, s.kc)).collect::<Vec<_>>(),
            vec![
                (0, 4096, 4096),
                (4096, 16, 1),
                (0, 4096, 4096),
                (4096, 16, 1)
            ]
        );
    }

    #[test]
    fn staged_classes_take_power_of_two_bands_and_still_cover_the_output_once() {
        // FP32 [H=55, W=25, C=12], tile (50, 10, 3): subtile rows of 12 bytes, adjacent
        // pixels, W segments of at most 120 bytes (no rectangle): every class (full and
        // boundary along H and W) stages, bands of 256 pixels (4096 / 12 → 341 → 256).
        let g = geometry(
            [55, 25, 12],
            [None, Some(0), Some(1), Some(2)],
            [1, 50, 10, 3],
            Channels::Compact,
        );
        assert_eq!(g.n_classes(), 4);
        for class in g.classes.iter().filter(|c| c.count != 0) {
            assert!(class.staged, "{class:?}");
            assert_eq!(class.band, 256);
            assert_eq!(class.tasks, class.pixels.div_ceil(256));
        }
        assert_eq!(g.source_channels(), 12);
        check_tasks(&g);
        // Tile C = 4: 16-byte subtile rows already move by DMA; nothing stages.
        let g = geometry(
            [55, 25, 12],
            [None, Some(0), Some(1), Some(2)],
            [1, 50, 10, 4],
            Channels::PadTo16,
        );
        assert!(g.classes.iter().all(|c| !c.staged));
        check_tasks(&g);
        // W segments of 32 pixels of a 3-channel subtile (384 bytes) are rectangles of the
        // general gather: nothing stages.
        let g = geometry(
            [55, 32, 12],
            [None, Some(0), Some(1), Some(2)],
            [1, 50, 32, 3],
            Channels::Compact,
        );
        assert!(g.classes.iter().all(|c| !c.staged));
        check_tasks(&g);
        // 64 source channels in PadTo16 tiles of one channel, W segments of 120 bytes:
        // bands of 64 pixels.
        let g = geometry(
            [10, 30, 64],
            [None, Some(0), Some(1), Some(2)],
            [1, 10, 30, 1],
            Channels::PadTo16,
        );
        assert!(g.classes[0].staged);
        assert_eq!((g.classes[0].band, g.classes[0].tasks), (64, 5));
        check_tasks(&g);
    }

    #[test]
    fn classes_and_suffix_tables() {
        // [H=5, W=7, C=20], tile (2, 3, 16): boundary tiles on H, W and C → 8 classes.
        let g = geometry(
            [5, 7, 20],
            [None, Some(0), Some(1), Some(2)],
            [1, 2, 3, 16],
            Channels::Compact,
        );
        assert_eq!(g.n_classes(), 8);
        assert_eq!(g.counts, [1, 3, 3, 2]);
        assert_eq!(g.tasks, 18);
        // The last C tile starts after every tile of the first C tile.
        let c = g.locate(9);
        assert_eq!((c.index, c.class), ([0, 0, 0, 1], 1 << 3));
        assert_eq!(
            c.tile_output,
            g.locate(8).tile_output + g.locate(8).class(&g).bytes
        );
    }
}
