//! The `MlaTiled` output layout of CastTess and QuantTess (SPEC §5).
//!
//! Contract between layers: [`MlaTiled`] is the metadata as the caller writes it (which
//! logical axes play D, H, W, C; tile extents; channel mode). [`MlaTiled::admit`] checks it
//! against a logical shape and element plane count and gives a [`TiledView`]: the admitted
//! layout with every derived quantity (tile counts, outer axes, bytes per outer index,
//! capacity) computed once by checked arithmetic. Backends and tools take a `TiledView`;
//! [`TiledView::offset_of`] and [`TiledView::untile`] describe where each logical element
//! lands.
//!
//! Layout summary (SPEC §5): tiles are ordered outer axes (row-major, ascending logical
//! axis, slowest), then channel-tile, depth-tile, height-tile, width-tile (fastest), packed
//! back to back. Inside a tile, pixels go in d, h, w order; each pixel stores `sc` channels
//! (`sc = tc'`, or `roundup(tc', 16)` for [`Channels::PadTo16`]) as `E` byte planes (BF16:
//! the low bytes of the `sc` channels, then their high bytes; INT8: one plane). A tile
//! occupies `roundup(td'·th'·tw'·sc·E, 16)` bytes; padding is zero.
//!
//! ```
//! use simak_core::layout::{Channels, MlaTiled};
//!
//! // SPEC §5 example: shape [W=2, C=3], axes (-, -, 0, 1), tile (1, 1, 2, 3), BF16 planes.
//! let layout = MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact);
//! let tiled = layout.admit(&[2, 3], 2)?;
//! assert_eq!(tiled.capacity(), 16);
//! // Element (w = 1, c = 2): pixel 1 starts at byte 6; c2.lo at 6 + 2, c2.hi at 6 + 3 + 2.
//! assert_eq!(tiled.offset_of(&[1, 2, 0, 0, 0, 0], 0), Some(8));
//! assert_eq!(tiled.offset_of(&[1, 2, 0, 0, 0, 0], 1), Some(11));
//! # Ok::<(), simak_core::AdmissionError>(())
//! ```
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

mod untile;

use core::fmt;

use crate::error::{AdmissionError, Port};
use crate::tensor::MAX_RANK;

pub use untile::UntileError;

/// Tile alignment and channel padding quantum, in bytes and channels (SPEC §5).
pub const TILE_ALIGN: u64 = 16;

/// Which role a logical axis plays in the tiled layout: depth, height, width or channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TileAxis {
    /// Depth (slot 0).
    D,
    /// Height (slot 1).
    H,
    /// Width (slot 2).
    W,
    /// Channels (slot 3).
    C,
}

impl TileAxis {
    /// The four roles in slot order D, H, W, C.
    pub const ALL: [TileAxis; 4] = [TileAxis::D, TileAxis::H, TileAxis::W, TileAxis::C];

    /// Slot index: D = 0, H = 1, W = 2, C = 3.
    pub const fn slot(self) -> usize {
        self as usize
    }

    /// Lowercase one-letter name (`d`, `h`, `w`, `c`).
    pub const fn name(self) -> &'static str {
        match self {
            TileAxis::D => "d",
            TileAxis::H => "h",
            TileAxis::W => "w",
            TileAxis::C => "c",
        }
    }
}

impl fmt::Display for TileAxis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many channels each pixel stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Channels {
    /// `sc = tc'`: exactly the tile's actual channels (wire flag bit 0 clear).
    #[default]
    Compact,
    /// `sc = roundup(tc', 16)`: zero channels pad each plane to a multiple of 16 (wire flag
    /// bit 0 set).
    PadTo16,
    /// `sc = roundup(tc', 16)` stored as 16-channel blocks (SPEC §12.1): for each block, for
    /// each pixel, `E` planes of 16 bytes. Output side only (the Detess ops' inputs); the
    /// input-side ops refuse it.
    CBlock16,
}

impl Channels {
    /// Stored channels for a tile of `tc` actual channels; `None` on overflow.
    pub const fn stored(self, tc: u64) -> Option<u64> {
        match self {
            Channels::Compact => Some(tc),
            Channels::PadTo16 | Channels::CBlock16 => match tc.checked_next_multiple_of(TILE_ALIGN)
            {
                Some(sc) => Some(sc),
                None => None,
            },
        }
    }

    /// CLI and Python name: `compact`, `pad16` or `cblock16`.
    pub const fn name(self) -> &'static str {
        match self {
            Channels::Compact => "compact",
            Channels::PadTo16 => "pad16",
            Channels::CBlock16 => "cblock16",
        }
    }

    /// The encoding a model archive names by its two flags (SPEC §12.1): (`align_c16`,
    /// `cblock`) = (false, false) → Compact, (true, false) → PadTo16, (true, true) →
    /// CBlock16.
    ///
    /// # Errors
    ///
    /// [`AdmissionError::ChannelFlags`] for (false, true).
    pub const fn from_flags(align_c16: bool, cblock: bool) -> Result<Channels, AdmissionError> {
        match (align_c16, cblock) {
            (false, false) => Ok(Channels::Compact),
            (true, false) => Ok(Channels::PadTo16),
            (true, true) => Ok(Channels::CBlock16),
            (false, true) => Err(AdmissionError::ChannelFlags),
        }
    }
}

/// Tile alignment: what each tile's size is rounded up to (SPEC §5, §12.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TileAlign {
    /// Tiles rounded up to 16 bytes, zero padded (SPEC §5): the only alignment the
    /// input-side ops (CastTess, QuantTess) accept.
    #[default]
    Bytes16,
    /// No per-tile padding: tiles follow each other with no gap (SPEC §12.1, MLA outputs in
    /// Compact encoding). Output side only.
    Bytes1,
}

impl TileAlign {
    /// The alignment in bytes: 16 or 1.
    pub const fn bytes(self) -> u64 {
        match self {
            TileAlign::Bytes16 => TILE_ALIGN,
            TileAlign::Bytes1 => 1,
        }
    }

    /// The alignment for a byte count: 16 or 1; `None` for any other value.
    pub const fn from_bytes(bytes: u64) -> Option<TileAlign> {
        match bytes {
            16 => Some(TileAlign::Bytes16),
            1 => Some(TileAlign::Bytes1),
            _ => None,
        }
    }
}

impl fmt::Display for Channels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `MlaTiled` metadata as the caller writes it (SPEC §5). Checked by [`MlaTiled::admit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MlaTiled {
    /// Logical axis playing D, H, W, C (slots 0..4); `None` = absent (extent 1, tile 1).
    /// Present axes are distinct and below the rank.
    pub axes: [Option<u8>; 4],
    /// Tile extents for D, H, W, C in elements: each ≥ 1 and ≤ the axis extent when that
    /// extent is nonzero (1 for an absent axis).
    pub tile: [u32; 4],
    /// Channel encoding.
    pub channels: Channels,
    /// Tile alignment (16 bytes unless set with [`MlaTiled::with_tile_align`]).
    pub tile_align: TileAlign,
}

impl MlaTiled {
    /// Metadata from its parts, tile alignment 16 bytes (nothing checked here).
    pub const fn new(axes: [Option<u8>; 4], tile: [u32; 4], channels: Channels) -> MlaTiled {
        MlaTiled {
            axes,
            tile,
            channels,
            tile_align: TileAlign::Bytes16,
        }
    }

    /// The same metadata with tile alignment `tile_align` (SPEC §12.1).
    pub const fn with_tile_align(self, tile_align: TileAlign) -> MlaTiled {
        MlaTiled { tile_align, ..self }
    }

    /// Whether the input-side ops (CastTess, QuantTess) accept this metadata's encoding
    /// and alignment (SPEC §12.1: not CBlock16, not tile alignment 1).
    ///
    /// # Errors
    ///
    /// [`AdmissionError::InputSideEncoding`] for CBlock16,
    /// [`AdmissionError::InputSideTileAlign`] for tile alignment 1.
    pub const fn check_input_side(&self) -> Result<(), AdmissionError> {
        if matches!(self.channels, Channels::CBlock16) {
            return Err(AdmissionError::InputSideEncoding);
        }
        if matches!(self.tile_align, TileAlign::Bytes1) {
            return Err(AdmissionError::InputSideTileAlign);
        }
        Ok(())
    }

    /// Admits this layout for a logical shape `extents` (in elements, rank = its length,
    /// 1..=6) stored as `planes` byte planes per element (`E`: 1 for INT8, 2 for BF16 and
    /// INT16, 4 for INT32).
    ///
    /// # Errors
    ///
    /// - [`AdmissionError::Rank`] for a rank outside 1..=6;
    /// - [`AdmissionError::TileAxisOutOfRange`] for a named axis ≥ the rank;
    /// - [`AdmissionError::TileAxisRepeated`] when two roles name the same axis;
    /// - [`AdmissionError::TileExtent`] for a tile extent of 0, or above a nonzero axis
    ///   extent (1 for an absent axis);
    /// - [`AdmissionError::SpanOverflow`] on the output port when the capacity overflows
    ///   `u64`;
    /// - [`AdmissionError::Planes`] when `planes` is not 1, 2 or 4.
    pub fn admit(&self, extents: &[u64], planes: u8) -> Result<TiledView, AdmissionError> {
        let rank = extents.len();
        if rank == 0 || rank > MAX_RANK {
            return Err(AdmissionError::Rank {
                rank,
                min: 1,
                max: MAX_RANK,
            });
        }
        if !matches!(planes, 1 | 2 | 4) {
            return Err(AdmissionError::Planes { planes });
        }
        let mut ext = [0u64; MAX_RANK];
        for (slot, &e) in ext.iter_mut().zip(extents.iter()) {
            *slot = e;
        }
        let mut named = [false; MAX_RANK];
        let mut role_extents = [1u64; 4];
        for (role, (&axis, extent)) in TileAxis::ALL
            .iter()
            .zip(self.axes.iter().zip(role_extents.iter_mut()))
        {
            let Some(axis) = axis else { continue };
            let Some(flag) = named
                .get_mut(usize::from(axis))
                .filter(|_| usize::from(axis) < rank)
            else {
                return Err(AdmissionError::TileAxisOutOfRange {
                    role: *role,
                    axis,
                    rank,
                });
            };
            if *flag {
                return Err(AdmissionError::TileAxisRepeated { role: *role, axis });
            }
            *flag = true;
            *extent = *ext.get(usize::from(axis)).unwrap_or(&0);
        }
        for (role, (&tile, &extent)) in TileAxis::ALL
            .iter()
            .zip(self.tile.iter().zip(role_extents.iter()))
        {
            if tile == 0 || (extent != 0 && u64::from(tile) > extent) {
                return Err(AdmissionError::TileExtent {
                    role: *role,
                    tile,
                    extent,
                });
            }
        }
        let mut outer_axes = [0u8; MAX_RANK];
        let mut n_outer = 0usize;
        let mut outer_count: u64 = 1;
        let overflow = AdmissionError::SpanOverflow { port: Port::Output };
        for (axis, (&is_named, &e)) in named.iter().zip(ext.iter()).take(rank).enumerate() {
            if !is_named {
                if let Some(slot) = outer_axes.get_mut(n_outer) {
                    *slot = axis as u8;
                }
                n_outer = n_outer.saturating_add(1);
                // An empty axis makes the product 0 whatever else overflows.
                outer_count = outer_count.saturating_mul(e);
            }
        }
        let mut counts = [0u64; 4];
        for (count, (&e, &t)) in counts
            .iter_mut()
            .zip(role_extents.iter().zip(self.tile.iter()))
        {
            *count = e.div_ceil(u64::from(t));
        }
        let mut view = TiledView {
            rank: rank as u8,
            extents: ext,
            layout: *self,
            planes,
            role_extents,
            tile_counts: counts,
            outer_axes,
            n_outer: n_outer as u8,
            outer_count: 0,
            bytes_per_outer: 0,
            capacity: 0,
        };
        let empty = ext.iter().take(rank).any(|&e| e == 0);
        if empty {
            view.tile_counts = [0; 4];
            return Ok(view);
        }
        if outer_count == u64::MAX {
            // Saturated: either a genuine u64::MAX or an overflow; the capacity overflows
            // either way, since every tile takes at least one byte per outer index and the
            // grid has at least one tile.
            return Err(overflow);
        }
        let all = [Range::All; 4];
        let bytes_per_outer = view.grid_sum(all).ok_or(overflow)?;
        view.outer_count = outer_count;
        view.bytes_per_outer = bytes_per_outer;
        view.capacity = outer_count.checked_mul(bytes_per_outer).ok_or(overflow)?;
        Ok(view)
    }
}

/// Most tile classes a layout has: full or boundary tile along each of the four roles
/// (SPEC §5).
pub const TILE_CLASSES: usize = 16;

/// One class of tiles of a [`TiledView`] ([`TiledView::tile_class`]): tiles with the same
/// actual extents, hence the same stored channels and padded size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TileClass {
    /// The class mask: bit r (D = 0, H = 1, W = 2, C = 3) set = boundary tile along role r.
    pub mask: u8,
    /// Actual tile extents `[td', th', tw', tc']` in elements (the tile extent, or
    /// `extent mod tile` for a boundary role; 1 for an absent role).
    pub extents: [u64; 4],
    /// Tiles of this class per outer index (0 when the class does not occur).
    pub count: u64,
}

/// One tile of [`TiledView::tiles`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Tile {
    /// Outer index (row-major over the outer axes).
    pub outer: u64,
    /// Tile index along D, H, W, C.
    pub index: [u64; 4],
    /// The tile's class mask ([`TiledView::class_of`]).
    pub class: usize,
    /// Actual tile extents `[td', th', tw', tc']` in elements.
    pub extents: [u64; 4],
    /// Byte offset of the tile from the start of the tiled buffer.
    pub offset: u64,
    /// Padded size of the tile in bytes ([`TiledView::tile_bytes`]).
    pub bytes: u64,
}

/// The iterator of [`TiledView::tiles`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiles {
    counts: [u64; 4],
    full: [u64; 4],
    extents: [[u64; 4]; TILE_CLASSES],
    bytes: [u64; TILE_CLASSES],
    outer: u64,
    index: [u64; 4],
    offset: u64,
    remaining: u64,
}

/// Role slots in tile storage order, slowest first: C, D, H, W (SPEC §5).
const TILE_ORDER: [usize; 4] = [3, 0, 1, 2];

impl Tiles {
    /// The class mask of the current tile.
    fn class(&self) -> usize {
        class_mask(&self.index, &self.full)
    }
}

/// The class mask of tile `index` given the full tiles per role: bit r set where
/// `index[r] == full[r]` (the boundary tile).
fn class_mask(index: &[u64; 4], full: &[u64; 4]) -> usize {
    index
        .iter()
        .zip(full.iter())
        .enumerate()
        .filter(|(_, (i, f))| i == f)
        .fold(0, |m, (r, _)| m | (1 << r))
}

impl Iterator for Tiles {
    type Item = Tile;

    fn next(&mut self) -> Option<Tile> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining = self.remaining.saturating_sub(1);
        let class = self.class();
        let tile = Tile {
            outer: self.outer,
            index: self.index,
            class,
            extents: *self.extents.get(class)?,
            offset: self.offset,
            bytes: *self.bytes.get(class)?,
        };
        // The offsets stay below the capacity, which fits u64.
        self.offset = self.offset.saturating_add(tile.bytes);
        // Carry: W fastest, then H, D, C, then the outer index.
        for &r in TILE_ORDER.iter().rev() {
            let (Some(i), Some(&n)) = (self.index.get_mut(r), self.counts.get(r)) else {
                return Some(tile);
            };
            *i = i.saturating_add(1);
            if *i < n {
                return Some(tile);
            }
            *i = 0;
        }
        self.outer = self.outer.saturating_add(1);
        Some(tile)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match usize::try_from(self.remaining) {
            Ok(n) => (n, Some(n)),
            Err(_) => (usize::MAX, None),
        }
    }
}

impl core::iter::FusedIterator for Tiles {}

/// A set of tile indices along one role, for sums over sub-grids.
#[derive(Debug, Clone, Copy)]
enum Range {
    /// Every tile.
    All,
    /// Tiles with index below `i`.
    Below(u64),
    /// Only tile `i`.
    At(u64),
}

/// An admitted `MlaTiled` port: the logical shape, the metadata and everything derived from
/// it (SPEC §5), computed once by checked arithmetic.
///
/// Invariants: rank 1..=6; named axes distinct and in range; tile extents admitted;
/// `capacity = outer_count · bytes_per_outer` fits `u64` (0 when empty), so every offset
/// below it does too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TiledView {
    rank: u8,
    extents: [u64; MAX_RANK],
    layout: MlaTiled,
    planes: u8,
    role_extents: [u64; 4],
    tile_counts: [u64; 4],
    outer_axes: [u8; MAX_RANK],
    n_outer: u8,
    outer_count: u64,
    bytes_per_outer: u64,
    capacity: u64,
}

impl TiledView {
    /// Rank of the logical shape (1 to 6).
    pub const fn rank(&self) -> usize {
        self.rank as usize
    }

    /// Logical extents in elements, six slots, unused axes zero.
    pub const fn extents(&self) -> &[u64; MAX_RANK] {
        &self.extents
    }

    /// The metadata this view was admitted from.
    pub const fn layout(&self) -> &MlaTiled {
        &self.layout
    }

    /// Byte planes per element `E` (1 for INT8, 2 for BF16 and INT16, 4 for INT32).
    pub const fn planes(&self) -> usize {
        self.planes as usize
    }

    /// Extents of the D, H, W, C roles in elements (1 for an absent role).
    pub const fn role_extents(&self) -> &[u64; 4] {
        &self.role_extents
    }

    /// Tile extents for D, H, W, C in elements.
    pub const fn tile(&self) -> &[u32; 4] {
        &self.layout.tile
    }

    /// Tiles along D, H, W, C: `ceil(extent / tile)` (1 for an absent role; all 0 when the
    /// tensor is empty).
    pub const fn tile_counts(&self) -> &[u64; 4] {
        &self.tile_counts
    }

    /// Tiles per outer index (product of [`TiledView::tile_counts`]; 0 when empty).
    pub fn tiles_per_outer(&self) -> u64 {
        self.tile_counts
            .iter()
            .try_fold(1u64, |acc, &c| acc.checked_mul(c))
            // Each tile takes ≥ 16 bytes of an admitted capacity, so this cannot overflow
            // unless the tensor is empty (all counts 0).
            .unwrap_or(0)
    }

    /// The outer axes (logical axes not named in `axes`), ascending.
    pub fn outer_axes(&self) -> &[u8] {
        self.outer_axes
            .get(..usize::from(self.n_outer))
            .unwrap_or(&[])
    }

    /// Number of outer indices (product of the outer extents; 1 without outer axes; 0 when
    /// empty).
    pub const fn outer_count(&self) -> u64 {
        self.outer_count
    }

    /// Bytes of tiled output per outer index: the sum of every tile's padded size (0 when
    /// empty).
    pub const fn bytes_per_outer(&self) -> u64 {
        self.bytes_per_outer
    }

    /// Required output capacity in bytes: the sum of every tile's padded size over the grid
    /// and all outer indices (SPEC §5). Not `elements · E` in general; 0 when empty.
    pub const fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Whether any extent is zero (no storage needed, nothing written).
    pub const fn is_empty(&self) -> bool {
        self.capacity == 0
    }

    /// The channel mode.
    pub const fn channels(&self) -> Channels {
        self.layout.channels
    }

    /// Number of logical elements (0 when empty).
    pub fn elements(&self) -> u64 {
        if self.is_empty() {
            return 0;
        }
        // Bounded by the capacity, which fits in u64.
        self.extents
            .iter()
            .take(self.rank())
            .fold(1u64, |acc, &e| acc.saturating_mul(e))
    }

    /// Actual extent of tile `index` along `role` (the last tile may be partial), or `None`
    /// if `index` is past the grid.
    pub fn tile_extent(&self, role: TileAxis, index: u64) -> Option<u64> {
        let s = role.slot();
        let e = *self.role_extents.get(s)?;
        let t = u64::from(*self.layout.tile.get(s)?);
        let start = index.checked_mul(t)?;
        if start >= e {
            return None;
        }
        Some(t.min(e.checked_sub(start)?))
    }

    /// Stored channels `sc` for a tile of `tc` actual channels, as this layout stores them.
    pub fn stored_channels(&self, tc: u64) -> Option<u64> {
        self.layout.channels.stored(tc)
    }

    /// Padded size in bytes of a tile with actual extents `[td', th', tw', tc']`:
    /// `td'·th'·tw'·sc·E` rounded up to the tile alignment (16 or 1, SPEC §12.1); `None`
    /// on overflow.
    pub fn tile_bytes(&self, extents: [u64; 4]) -> Option<u64> {
        let [d, h, w, c] = extents;
        let sc = self.stored_channels(c)?;
        d.checked_mul(h)?
            .checked_mul(w)?
            .checked_mul(sc)?
            .checked_mul(u64::from(self.planes))?
            .checked_next_multiple_of(self.layout.tile_align.bytes())
    }

    /// The tile alignment.
    pub const fn tile_align(&self) -> TileAlign {
        self.layout.tile_align
    }

    /// Per role (D, H, W, C): `(full tiles, tile extent, boundary tiles (0 or 1),
    /// boundary extent)`, all in elements; `None` only for a zero tile extent (never after
    /// admission).
    fn role_parts(&self) -> Option<[(u64, u64, u64, u64); 4]> {
        let mut parts = [(0u64, 0u64, 0u64, 0u64); 4];
        for (part, (&e, &t)) in parts
            .iter_mut()
            .zip(self.role_extents.iter().zip(self.layout.tile.iter()))
        {
            let t = u64::from(t);
            let rem = e.checked_rem(t)?;
            *part = (e.checked_div(t)?, t, u64::from(rem != 0), rem);
        }
        Some(parts)
    }

    /// Full tiles along D, H, W, C: `⌊extent / tile⌋` (the index of the boundary tile
    /// along a role, when it has one).
    pub fn full_tiles(&self) -> [u64; 4] {
        self.role_parts().unwrap_or_default().map(|p| p.0)
    }

    /// The tile class `mask` (SPEC §5): along each role r (D = 0, H = 1, W = 2, C = 3) a
    /// tile is full (bit r clear: extent = the tile extent) or the one boundary tile (bit r
    /// set: extent = `extent mod tile`), so a layout has at most [`TILE_CLASSES`] classes.
    /// The count is the class's tiles per outer index (product over the roles of the full
    /// tiles or of the 0 or 1 boundary tile): 0 when the class does not occur, for a mask
    /// of 16 or more, and for every class of an empty view.
    pub fn tile_class(&self, mask: usize) -> TileClass {
        let mut class = TileClass {
            mask: (mask & 0xf) as u8,
            extents: [0; 4],
            count: 0,
        };
        let Some(parts) = self.role_parts() else {
            return class;
        };
        let mut count: u64 = 1;
        for (bit, (part, slot)) in parts.iter().zip(class.extents.iter_mut()).enumerate() {
            let (n, e) = if mask & (1 << bit) == 0 {
                (part.0, part.1)
            } else {
                (part.2, part.3)
            };
            // Exact whenever the true product fits (it does: every tile takes ≥ 16 bytes of
            // the capacity), and 0 when a factor is 0.
            count = count.saturating_mul(n);
            *slot = e;
        }
        if mask < TILE_CLASSES && !self.is_empty() {
            class.count = count;
        }
        class
    }

    /// The [`TILE_CLASSES`] tile classes indexed by mask ([`TiledView::tile_class`]);
    /// absent classes have count 0. Their counts sum to
    /// [`TiledView::tiles_per_outer`], and `Σ count · tile_bytes(extents)` is
    /// [`TiledView::bytes_per_outer`].
    pub fn tile_classes(&self) -> [TileClass; TILE_CLASSES] {
        let mut classes = [TileClass::default(); TILE_CLASSES];
        for (mask, class) in classes.iter_mut().enumerate() {
            *class = self.tile_class(mask);
        }
        classes
    }

    /// The class mask of the tile at tile index `[id, ih, iw, ic]`: bit r set when the
    /// index along role r is the boundary tile (index = [`TiledView::full_tiles`]`[r]`).
    /// Indices past the grid are not checked.
    pub fn class_of(&self, index: [u64; 4]) -> usize {
        class_mask(&index, &self.full_tiles())
    }

    /// Every tile in storage order (outer index, then C, D, H, W tile indices, W fastest;
    /// SPEC §5), with its extents and its byte offset from the buffer start. Tiles are
    /// packed back to back, so each offset is the previous one plus its padded size; the
    /// last tile ends at [`TiledView::capacity`]. No allocation, no division per tile. An
    /// empty view yields nothing.
    pub fn tiles(&self) -> Tiles {
        let classes = self.tile_classes();
        let mut bytes = [0u64; TILE_CLASSES];
        for (b, c) in bytes.iter_mut().zip(classes.iter()) {
            if c.count != 0 {
                *b = self.tile_bytes(c.extents).unwrap_or(0);
            }
        }
        let remaining = if self.is_empty() {
            0
        } else {
            // Each tile takes ≥ 16 bytes of the capacity, so this fits.
            self.outer_count.saturating_mul(self.tiles_per_outer())
        };
        Tiles {
            counts: self.tile_counts,
            full: self.full_tiles(),
            extents: classes.map(|c| c.extents),
            bytes,
            outer: 0,
            index: [0; 4],
            offset: 0,
            remaining,
        }
    }

    /// Sum of tile sizes over the sub-grid `ranges` (per role), using the ≤ 16 classes of
    /// full and boundary tiles.
    fn grid_sum(&self, ranges: [Range; 4]) -> Option<u64> {
        // Per role: (count of full tiles, full extent, count of partial tiles, partial extent).
        let mut parts = self.role_parts()?;
        for (part, range) in parts.iter_mut().zip(ranges.iter()) {
            let (n_full, n_partial) = (part.0, part.2);
            let (full, partial) = match *range {
                Range::All => (n_full, n_partial),
                Range::Below(i) => (i.min(n_full), u64::from(i > n_full && n_partial == 1)),
                Range::At(i) if i < n_full => (1, 0),
                Range::At(i) if i == n_full && n_partial == 1 => (0, 1),
                Range::At(_) => return None,
            };
            part.0 = full;
            part.2 = partial;
        }
        let mut sum: u64 = 0;
        for class in 0u32..16 {
            let mut count: u64 = 1;
            let mut ext = [0u64; 4];
            for (bit, (part, slot)) in parts.iter().zip(ext.iter_mut()).enumerate() {
                let (n, e) = if class & (1 << bit) == 0 {
                    (part.0, part.1)
                } else {
                    (part.2, part.3)
                };
                count = count.checked_mul(n)?;
                *slot = e;
            }
            if count != 0 {
                sum = sum.checked_add(count.checked_mul(self.tile_bytes(ext)?)?)?;
            }
        }
        Some(sum)
    }

    /// Byte offset of tile `[id, ih, iw, ic]` (tile indices along D, H, W, C) from the
    /// start of its outer index; `None` if an index is past the grid.
    pub fn tile_offset(&self, index: [u64; 4]) -> Option<u64> {
        let [id, ih, iw, ic] = index;
        use Range::{All, At, Below};
        // Storage order: C slowest, then D, H, W fastest (SPEC §5).
        let parts = [
            [All, All, All, Below(ic)],
            [Below(id), All, All, At(ic)],
            [At(id), Below(ih), All, At(ic)],
            [At(id), At(ih), Below(iw), At(ic)],
        ];
        // Validate the indices themselves.
        for (role, &i) in TileAxis::ALL.iter().zip(index.iter()) {
            self.tile_extent(*role, i)?;
        }
        parts
            .iter()
            .try_fold(0u64, |acc, &ranges| acc.checked_add(self.grid_sum(ranges)?))
    }

    /// Byte offset in the tiled buffer of byte plane `plane` (0 = low byte, 1 = high byte
    /// for BF16; INT8 has plane 0 only) of the logical element at `index` (six slots, those
    /// past the rank ignored). `None` when the index or plane is out of range.
    pub fn offset_of(&self, index: &[u64; MAX_RANK], plane: usize) -> Option<u64> {
        if plane >= self.planes() || self.is_empty() {
            return None;
        }
        for (&i, &e) in index.iter().zip(self.extents.iter()).take(self.rank()) {
            if i >= e {
                return None;
            }
        }
        // Outer index, row-major over the outer axes.
        let mut outer: u64 = 0;
        for &axis in self.outer_axes() {
            let a = usize::from(axis);
            outer = outer
                .checked_mul(*self.extents.get(a)?)?
                .checked_add(*index.get(a)?)?;
        }
        let mut tile_index = [0u64; 4];
        let mut within = [0u64; 4];
        let mut extent = [0u64; 4];
        for (s, &axis) in self.layout.axes.iter().enumerate() {
            let i = match axis {
                Some(a) => *index.get(usize::from(a))?,
                None => 0,
            };
            let t = u64::from(*self.layout.tile.get(s)?);
            *tile_index.get_mut(s)? = i.checked_div(t)?;
            *within.get_mut(s)? = i.checked_rem(t)?;
            *extent.get_mut(s)? = self.tile_extent(*TileAxis::ALL.get(s)?, i.checked_div(t)?)?;
        }
        let [wd, wh, ww, wc] = within;
        let [ed, eh, ew, ec] = extent;
        let sc = self.stored_channels(ec)?;
        let pixel = wd
            .checked_mul(eh)?
            .checked_add(wh)?
            .checked_mul(ew)?
            .checked_add(ww)?;
        let e = u64::from(self.planes);
        let in_tile = if self.layout.channels == Channels::CBlock16 {
            // (c / 16)·(npix·16·E) + k·16·E + p·16 + c mod 16 (SPEC §12.1).
            let npix = ed.checked_mul(eh)?.checked_mul(ew)?;
            wc.checked_div(TILE_ALIGN)?
                .checked_mul(npix.checked_mul(TILE_ALIGN)?.checked_mul(e)?)?
                .checked_add(pixel.checked_mul(TILE_ALIGN)?.checked_mul(e)?)?
                .checked_add((plane as u64).checked_mul(TILE_ALIGN)?)?
                .checked_add(wc.checked_rem(TILE_ALIGN)?)?
        } else {
            pixel
                .checked_mul(sc)?
                .checked_mul(e)?
                .checked_add((plane as u64).checked_mul(sc)?)?
                .checked_add(wc)?
        };
        outer
            .checked_mul(self.bytes_per_outer)?
            .checked_add(self.tile_offset(tile_index)?)?
            .checked_add(in_tile)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test {
    extern crate std;

    use super::*;

    fn admit(
        extents: &[u64],
        axes: [Option<u8>; 4],
        tile: [u32; 4],
        channels: Channels,
        planes: u8,
    ) -> Result<TiledView, AdmissionError> {
        MlaTiled::new(axes, tile, channels).admit(extents, planes)
    }

    #[test]
    fn spec_example_capacity_and_offsets() {
        let v = admit(
            &[2, 3],
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 3],
            Channels::Compact,
            2,
        )
        .unwrap();
        assert_eq!(v.capacity(), 16);
        assert_eq!(v.tiles_per_outer(), 1);
        assert_eq!(v.outer_count(), 1);
        assert!(v.outer_axes().is_empty());
        let mut seen = [false; 16];
        for w in 0..2 {
            for c in 0..3 {
                for p in 0..2 {
                    let o = v.offset_of(&[w, c, 0, 0, 0, 0], p).unwrap();
                    assert_eq!(o, w * 6 + p as u64 * 3 + c);
                    seen[o as usize] = true;
                }
            }
        }
        assert_eq!(seen.iter().filter(|&&s| s).count(), 12);
        assert_eq!(v.offset_of(&[2, 0, 0, 0, 0, 0], 0), None);
        assert_eq!(v.offset_of(&[0, 0, 0, 0, 0, 0], 2), None);
    }

    #[test]
    fn boundary_tiles_and_outer_axes() {
        // Shape [N=2, H=5, W=7, C=17], tiles (1, 2, 3, 16), PadTo16, BF16.
        let v = admit(
            &[2, 5, 7, 17],
            [None, Some(1), Some(2), Some(3)],
            [1, 2, 3, 16],
            Channels::PadTo16,
            2,
        )
        .unwrap();
        assert_eq!(v.tile_counts(), &[1, 3, 3, 2]);
        assert_eq!(v.outer_axes(), &[0]);
        // Brute-force sum of tile sizes.
        let mut sum = 0;
        for ic in 0..2u64 {
            for ih in 0..3u64 {
                for iw in 0..3u64 {
                    let th = v.tile_extent(TileAxis::H, ih).unwrap();
                    let tw = v.tile_extent(TileAxis::W, iw).unwrap();
                    let tc = v.tile_extent(TileAxis::C, ic).unwrap();
                    assert_eq!(v.tile_offset([0, ih, iw, ic]), Some(sum));
                    sum += (th * tw * tc.div_ceil(16) * 16 * 2).div_ceil(16) * 16;
                }
            }
        }
        assert_eq!(v.bytes_per_outer(), sum);
        assert_eq!(v.capacity(), 2 * sum);
        assert_eq!(v.tile_offset([0, 3, 0, 0]), None);
        // Every element lands on a distinct byte.
        let mut seen = std::collections::BTreeSet::new();
        for n in 0..2 {
            for h in 0..5 {
                for w in 0..7 {
                    for c in 0..17 {
                        for p in 0..2 {
                            let o = v.offset_of(&[n, h, w, c, 0, 0], p).unwrap();
                            assert!(o < v.capacity());
                            assert!(seen.insert(o));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn admission_rules() {
        let t = [1, 1, 1, 1];
        let c = Channels::Compact;
        assert_eq!(
            admit(&[], [None; 4], t, c, 2),
            Err(AdmissionError::Rank {
                rank: 0,
                min: 1,
                max: 6
            })
        );
        assert_eq!(
            admit(&[2, 3], [None, None, Some(2), None], t, c, 2),
            Err(AdmissionError::TileAxisOutOfRange {
                role: TileAxis::W,
                axis: 2,
                rank: 2
            })
        );
        assert_eq!(
            admit(&[2, 3], [None, Some(1), Some(0), Some(1)], t, c, 2),
            Err(AdmissionError::TileAxisRepeated {
                role: TileAxis::C,
                axis: 1
            })
        );
        assert_eq!(
            admit(&[2, 3], [None, None, Some(0), Some(1)], [1, 1, 3, 1], c, 2),
            Err(AdmissionError::TileExtent {
                role: TileAxis::W,
                tile: 3,
                extent: 2
            })
        );
        assert_eq!(
            admit(&[2, 3], [None, None, Some(0), Some(1)], [1, 1, 0, 1], c, 2),
            Err(AdmissionError::TileExtent {
                role: TileAxis::W,
                tile: 0,
                extent: 2
            })
        );
        // An absent role takes tile 1 only.
        assert_eq!(
            admit(&[2, 3], [None, None, Some(0), Some(1)], [2, 1, 1, 1], c, 2),
            Err(AdmissionError::TileExtent {
                role: TileAxis::D,
                tile: 2,
                extent: 1
            })
        );
        assert_eq!(
            admit(&[2], [None; 4], t, c, 3),
            Err(AdmissionError::Planes { planes: 3 })
        );
        // Empty: any tile ≥ 1 on the empty axis, capacity 0.
        let v = admit(&[0, 3], [None, None, Some(0), Some(1)], [9, 1, 5, 2], c, 2);
        assert_eq!(
            v,
            Err(AdmissionError::TileExtent {
                role: TileAxis::D,
                tile: 9,
                extent: 1
            })
        );
        let v = admit(&[0, 3], [None, None, Some(0), Some(1)], [1, 1, 5, 2], c, 2).unwrap();
        assert_eq!((v.capacity(), v.elements(), v.tiles_per_outer()), (0, 0, 0));
        assert!(v.is_empty());
        // Capacity overflow.
        assert_eq!(
            admit(&[u64::MAX, 1 << 40], [None; 4], t, c, 2),
            Err(AdmissionError::SpanOverflow { port: Port::Output })
        );
        assert_eq!(
            admit(&[1 << 62], [None, None, Some(0), None], [1, 1, 1, 1], c, 2),
            Err(AdmissionError::SpanOverflow { port: Port::Output })
        );
    }

    #[test]
    fn int8_pad16_one_channel() {
        let v = admit(
            &[3, 1],
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 1],
            Channels::PadTo16,
            1,
        )
        .unwrap();
        // Tiles: 2 pixels × 16 = 32, then 1 pixel × 16 = 16.
        assert_eq!(v.capacity(), 48);
        assert_eq!(v.offset_of(&[2, 0, 0, 0, 0, 0], 0), Some(32));
        assert_eq!(v.offset_of(&[1, 0, 0, 0, 0, 0], 0), Some(16));
    }

    /// Layouts for the tile class and tile walk tests: boundary tiles along every role,
    /// outer axes, absent roles, both channel modes and both plane counts.
    fn class_cases() -> std::vec::Vec<TiledView> {
        type Case = (&'static [u64], [Option<u8>; 4], [u32; 4], Channels, u8);
        let cases: [Case; 7] = [
            (
                &[2, 3],
                [None, None, Some(0), Some(1)],
                [1, 1, 2, 3],
                Channels::Compact,
                2,
            ),
            (
                &[2, 5, 7, 17],
                [None, Some(1), Some(2), Some(3)],
                [1, 2, 3, 16],
                Channels::PadTo16,
                2,
            ),
            (
                &[3, 5, 7, 9],
                [Some(0), Some(1), Some(2), Some(3)],
                [2, 2, 4, 4],
                Channels::Compact,
                1,
            ),
            (
                &[4, 6, 8],
                [None, Some(0), Some(1), Some(2)],
                [1, 3, 4, 8],
                Channels::Compact,
                2,
            ),
            (
                &[2, 3, 1, 5, 33],
                [Some(1), None, Some(3), Some(4)],
                [2, 1, 2, 32],
                Channels::PadTo16,
                1,
            ),
            (
                &[7],
                [None, None, Some(0), None],
                [1, 1, 3, 1],
                Channels::Compact,
                2,
            ),
            (
                &[2, 2, 2, 3, 10, 3],
                [Some(2), Some(3), Some(4), Some(5)],
                [1, 2, 4, 3],
                Channels::Compact,
                2,
            ),
        ];
        cases
            .iter()
            .map(|&(shape, axes, tile, channels, planes)| {
                admit(shape, axes, tile, channels, planes).unwrap()
            })
            .collect()
    }

    /// The extent of each role and the padded size of a tile, computed here from the
    /// metadata (SPEC §5), not through the view.
    fn role_extent(v: &TiledView, r: usize) -> u64 {
        v.layout().axes[r].map_or(1, |a| v.extents()[usize::from(a)])
    }

    fn padded(v: &TiledView, e: [u64; 4]) -> u64 {
        let sc = match v.channels() {
            Channels::Compact => e[3],
            Channels::PadTo16 | Channels::CBlock16 => e[3].div_ceil(16) * 16,
        };
        (e[0] * e[1] * e[2] * sc * v.planes() as u64).div_ceil(16) * 16
    }

    /// Every tile of the grid by nested loops in storage order (outer, C, D, H, W):
    /// `(outer, index, extents)`.
    fn grid(v: &TiledView) -> std::vec::Vec<(u64, [u64; 4], [u64; 4])> {
        let n: [u64; 4] =
            core::array::from_fn(|r| role_extent(v, r).div_ceil(u64::from(v.tile()[r])));
        let outer: u64 = v
            .outer_axes()
            .iter()
            .map(|&a| v.extents()[usize::from(a)])
            .product();
        let ext = |r: usize, i: u64| {
            let t = u64::from(v.tile()[r]);
            t.min(role_extent(v, r) - i * t)
        };
        let mut out = std::vec::Vec::new();
        for o in 0..outer {
            for ic in 0..n[3] {
                for id in 0..n[0] {
                    for ih in 0..n[1] {
                        for iw in 0..n[2] {
                            let index = [id, ih, iw, ic];
                            let e = [ext(0, id), ext(1, ih), ext(2, iw), ext(3, ic)];
                            out.push((o, index, e));
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn tile_classes_count_the_grid() {
        for v in class_cases() {
            let classes = v.tile_classes();
            let mut counts = [0u64; TILE_CLASSES];
            let mut extents = [None; TILE_CLASSES];
            for (o, index, e) in grid(&v) {
                if o != 0 {
                    continue;
                }
                // Boundary along r: the tile is shorter than the tile extent.
                let mask = (0..4)
                    .filter(|&r| e[r] < u64::from(v.tile()[r]))
                    .fold(0, |m, r| m | 1 << r);
                counts[mask] += 1;
                assert!(extents[mask].is_none_or(|x| x == e), "one extent per class");
                extents[mask] = Some(e);
                assert_eq!(v.class_of(index), mask, "{index:?}");
            }
            for (mask, c) in classes.iter().enumerate() {
                assert_eq!(c.mask as usize, mask);
                assert_eq!(c.count, counts[mask], "mask {mask}: {v:?}");
                if let Some(e) = extents[mask] {
                    assert_eq!(c.extents, e);
                }
                assert_eq!(v.tile_class(mask), *c);
            }
            let bytes: u64 = classes
                .iter()
                .map(|c| c.count * padded(&v, c.extents))
                .sum();
            assert_eq!(bytes, v.bytes_per_outer());
            assert_eq!(
                classes.iter().map(|c| c.count).sum::<u64>(),
                v.tiles_per_outer()
            );
        }
        assert_eq!(
            v_empty()
                .tile_classes()
                .iter()
                .map(|c| c.count)
                .sum::<u64>(),
            0
        );
        assert_eq!(v_empty().tiles().next(), None);
    }

    fn v_empty() -> TiledView {
        admit(
            &[0, 3],
            [None, None, None, Some(1)],
            [1, 1, 1, 2],
            Channels::Compact,
            2,
        )
        .unwrap()
    }

    #[test]
    fn tiles_walk_the_grid_back_to_back() {
        for v in class_cases() {
            let expected = grid(&v);
            let tiles: std::vec::Vec<Tile> = v.tiles().collect();
            assert_eq!(tiles.len(), expected.len());
            let mut offset = 0;
            for (t, &(o, index, e)) in tiles.iter().zip(expected.iter()) {
                assert_eq!((t.outer, t.index, t.extents), (o, index, e));
                assert_eq!(t.bytes, padded(&v, e));
                assert_eq!(t.offset, offset);
                assert_eq!(
                    t.offset,
                    o * v.bytes_per_outer() + v.tile_offset(index).unwrap()
                );
                assert_eq!(t.class, v.class_of(index));
                offset += t.bytes;
            }
            assert_eq!(offset, v.capacity());
        }
    }
}
