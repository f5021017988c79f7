//! The A65 tiling walker shared by CastTess and QuantTess (SPEC §5).
//!
//! The walk follows the storage order: outer indices (carry over the outer axes), then C,
//! D, H, W tiles, then pixels in d, h, w order. Each tile's bytes are written exactly once,
//! front to back: its pixels through a [`Packer`] (conversion and byte-plane split in one
//! pass per batch), then its trailing padding with zero. Nothing past the required span is
//! touched, and there is no clearing pass.
//!
//! Pixels reach the packer in batches of at most [`PANEL`] elements: rows whose pixels are
//! contiguous in the input (and long enough) directly from the input slice; every other
//! row (strided channels, padded pixels, H-contiguous or planar inputs) gathered into a
//! bounded on-stack panel first. A tile with more than [`PANEL`] channels goes pixel by
//! pixel in channel chunks.

use core::ops::Range;

use simak_core::layout::TiledView;

use super::arch::tess::{Band, Rows};
use super::{HostOp, Piece, PortNeed};
use simak_core::{MAX_RANK, View};

/// Elements per batch: the bound of every on-stack panel.
pub(crate) const PANEL: usize = 4096;

/// Contiguous rows of at least this many elements skip the gather.
const DIRECT_MIN: usize = 64;

/// Converts batches of pixels into the tiled output.
pub(crate) trait Packer {
    /// Writes `out.len() / (sc · E)` whole pixels (padding channels zero) from `raw`, which
    /// holds their `tc` input elements each, pixel-major and contiguous. `scratch` is a
    /// [`PANEL`]-element work area (2 bytes per element).
    fn pixels(&self, raw: &[u8], tc: usize, sc: usize, out: &mut [u8], scratch: &mut [u8]);

    /// Writes channels `ca..ca + n` of one pixel into `pixel` (the pixel's `sc · E` bytes)
    /// from `raw`, which holds those `n` input elements. Padding is the walker's job.
    fn channels(&self, raw: &[u8], ca: usize, pixel: &mut [u8], scratch: &mut [u8]);

    /// Writes `rows` of compact pixels (`tc = sc`) in one pass when the packer has a fused
    /// kernel for `tc` (see [`Rows`]). Returns `false`, writing nothing, otherwise
    /// (whatever the rows, so an empty `rows` probes).
    fn rows(&self, rows: Rows<'_>, tc: usize) -> bool {
        let _ = (rows, tc);
        false
    }

    /// Writes a whole [`Band`] of compact pixels (`tc = sc`) in one pass when the packer has
    /// a band kernel for its shape. Returns `false`, writing nothing, otherwise.
    fn band(&self, band: Band<'_>, tc: usize) -> bool {
        let _ = (band, tc);
        false
    }
}

/// The plan's geometry in `usize`, prepared once. Values derive from admitted views; they
/// are used only after `execute` proved both buffers hold the spans (so they fit `usize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    elem: usize,
    planes: usize,
    pad16: bool,
    tile: [usize; 4],
    counts: [usize; 4],
    role_extent: [usize; 4],
    role_stride: [usize; 4],
    n_outer: usize,
    outer_extent: [usize; MAX_RANK],
    outer_stride: [usize; MAX_RANK],
    outer_count: usize,
    bytes_per_outer: usize,
}

impl Geometry {
    /// Geometry of an admitted input view and tiled output of the same shape.
    pub fn new(input: &View, output: &TiledView) -> Geometry {
        let mut role_stride = [0usize; 4];
        for (slot, axis) in output.layout().axes.iter().enumerate() {
            if let Some(a) = axis {
                role_stride[slot] = input.strides()[*a as usize] as usize;
            }
        }
        let mut outer_extent = [0usize; MAX_RANK];
        let mut outer_stride = [0usize; MAX_RANK];
        let outer = output.outer_axes();
        for (k, &a) in outer.iter().enumerate() {
            outer_extent[k] = input.extents()[a as usize] as usize;
            outer_stride[k] = input.strides()[a as usize] as usize;
        }
        Geometry {
            elem: input.dtype().size(),
            planes: output.planes(),
            pad16: output.channels() == simak_core::layout::Channels::PadTo16,
            tile: output.tile().map(|t| t as usize),
            counts: output.tile_counts().map(|c| c as usize),
            role_extent: output.role_extents().map(|e| e as usize),
            role_stride,
            n_outer: outer.len(),
            outer_extent,
            outer_stride,
            outer_count: output.outer_count() as usize,
            bytes_per_outer: output.bytes_per_outer() as usize,
        }
    }

    /// Actual extent of tile `i` along role `slot`.
    fn extent(&self, slot: usize, i: usize) -> usize {
        self.tile[slot].min(self.role_extent[slot] - i * self.tile[slot])
    }

    /// Stored channels for `tc` actual channels.
    fn stored(&self, tc: usize) -> usize {
        if self.pad16 {
            tc.next_multiple_of(16)
        } else {
            tc
        }
    }
}

/// Tiles `input` into `output` (both already checked against the plan's spans).
pub(crate) fn run<P: Packer>(g: &Geometry, packer: &P, input: &[u8], output: &mut [u8]) {
    run_tiles(g, packer, input, output, 0..g.tiles());
}

impl Geometry {
    /// Tiles of the whole call: `outer_count · ∏ tile_counts` (0 when empty).
    pub fn tiles(&self) -> usize {
        self.rows() * self.counts[2]
    }

    /// Rows of tiles (every W tile of one outer index and C, D, H tile) of the whole call.
    fn rows(&self) -> usize {
        let [cd, ch, _, cc] = self.counts;
        self.outer_count * cc * cd * ch
    }

    /// Padded bytes of a `td × th × tw` tile of `tc` actual channels.
    fn tile_size(&self, [td, th, tw, tc]: [usize; 4]) -> usize {
        (td * th * tw * self.stored(tc) * self.planes).next_multiple_of(16)
    }

    /// Output byte offset of tile `t` (storage order, SPEC §5; `t ≤ tiles()`, where
    /// `tiles()` gives the capacity). Walks the rows of one outer index: call it rarely.
    pub fn tile_offset(&self, t: usize) -> usize {
        let [cd, ch, cw, cc] = self.counts;
        let per_outer = cc * cd * ch * cw;
        if per_outer == 0 {
            return 0;
        }
        let (outer, mut rest) = (t / per_outer, t % per_outer);
        let mut at = outer * self.bytes_per_outer;
        for ic in 0..cc {
            for id in 0..cd {
                for ih in 0..ch {
                    let [td, th, tc] = [self.extent(0, id), self.extent(1, ih), self.extent(3, ic)];
                    let full = self.tile_size([td, th, self.tile[2], tc]);
                    if rest < cw {
                        return at + rest * full;
                    }
                    let last = self.tile_size([td, th, self.extent(2, cw - 1), tc]);
                    at += (cw - 1) * full + last;
                    rest -= cw;
                }
            }
        }
        at
    }

    /// Splits the call's tiles (storage order) into at most `parts` consecutive ranges of
    /// balanced tile counts (`parts` 0 counts as 1; fewer come back when there are fewer
    /// tiles; none for an empty call). Each range comes with its output byte range: whole
    /// padded tiles, so 16-byte aligned and disjoint, and together exactly `0..capacity`.
    pub fn split(&self, parts: usize) -> Vec<(Range<usize>, Range<usize>)> {
        let tiles = self.tiles();
        let parts = parts.clamp(1, tiles.max(1));
        let (base, extra) = (tiles / parts, tiles % parts);
        let mut pieces = Vec::with_capacity(parts);
        let (mut t, mut at) = (0usize, 0usize);
        for k in 0..parts {
            let len = base + usize::from(k < extra);
            if len == 0 {
                continue;
            }
            let end = self.tile_offset(t + len);
            pieces.push((t..t + len, at..end));
            t += len;
            at = end;
        }
        pieces
    }
}

/// The buffers and tiles of one piece of a split tiled call: the [`HostOp::Part`] of the
/// tiled ops (the op's `Piece` adds its prepared state).
#[derive(Debug)]
pub struct Part<'a> {
    input: &'a [u8],
    output: &'a mut [u8],
    tiles: Range<usize>,
    offset: usize,
}

impl Part<'_> {
    /// Writes this part's tiles (padding included) and nothing else.
    pub(crate) fn run<P: Packer>(&mut self, g: &Geometry, packer: &P) {
        run_tiles(g, packer, self.input, self.output, self.tiles.clone());
    }

    /// The bytes of the call's output this part writes.
    pub(crate) fn output_range(&self) -> Range<usize> {
        self.offset..self.offset + self.output.len()
    }

    /// Its tiles, as indices in storage order.
    pub(crate) fn tiles(&self) -> Range<usize> {
        self.tiles.clone()
    }
}

impl<'a, O: HostOp<Part<'a> = Part<'a>>> Piece<'a, O> {
    /// The bytes of the call's output this piece writes (offsets from the output's start,
    /// a multiple of 16 apart).
    pub fn output_range(&self) -> Range<usize> {
        self.part().output_range()
    }

    /// The tiles this piece owns, as indices in storage order (SPEC §5).
    pub fn tiles(&self) -> Range<usize> {
        self.part().tiles()
    }
}

/// [`Geometry::split`] into [`Part`]s over the call's buffers (`output` at least
/// `capacity` bytes; both already checked).
pub(crate) fn parts<'a>(
    g: &Geometry,
    parts: usize,
    input: &'a [u8],
    output: &'a mut [u8],
) -> Vec<Part<'a>> {
    let mut rest = output;
    g.split(parts)
        .into_iter()
        .map(|(tiles, bytes)| {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(bytes.len());
            rest = tail;
            Part {
                input,
                output: head,
                tiles,
                offset: bytes.start,
            }
        })
        .collect()
}

/// Tiles the storage-order tile range `tiles` of the call: `output` starts at the first
/// tile of the range and holds at least its bytes; nothing else is touched.
pub(crate) fn run_tiles<P: Packer>(
    g: &Geometry,
    packer: &P,
    input: &[u8],
    output: &mut [u8],
    tiles: Range<usize>,
) {
    if tiles.is_empty() {
        return;
    }
    let mut panel = [0u8; PANEL * 4];
    let mut scratch = [0u8; PANEL * 2];
    let [cd, ch, cw, cc] = g.counts;
    let [sd, sh, sw, scs] = g.role_stride;
    let [t_d, t_h, t_w, t_c] = g.tile;
    // The first row's position, by division once; then a carry per row.
    let (mut row, mut iw0) = (tiles.start / cw, tiles.start % cw);
    let last_row = (tiles.end - 1) / cw;
    let mut ih = row % ch;
    let mut id = row / ch % cd;
    let mut ic = row / ch / cd % cc;
    let mut outer = row / ch / cd / cc;
    let mut outer_index = [0usize; MAX_RANK];
    let mut outer_in = 0usize;
    for k in (0..g.n_outer).rev() {
        outer_index[k] = outer % g.outer_extent[k];
        outer /= g.outer_extent[k];
        outer_in += outer_index[k] * g.outer_stride[k];
    }
    let mut pos = 0usize;
    loop {
        let iw1 = if row == last_row {
            (tiles.end - 1) % cw + 1
        } else {
            cw
        };
        let tc = g.extent(3, ic);
        let sc = g.stored(tc);
        let td = g.extent(0, id);
        let th = g.extent(1, ih);
        let row_base = outer_in + id * t_d * sd + ih * t_h * sh + ic * t_c * scs;
        let written = tile_row(
            g,
            packer,
            input,
            &mut output[pos..],
            row_base,
            [td, th, tc],
            iw0..iw1,
        );
        if let Some(n) = written {
            pos += n;
        } else {
            for iw in iw0..iw1 {
                let tw = g.extent(2, iw);
                let base = row_base + iw * t_w * sw;
                let data = td * th * tw * sc * g.planes;
                let size = data.next_multiple_of(16);
                let out = &mut output[pos..pos + size];
                let (pixels, padding) = out.split_at_mut(data);
                let tile = Tile {
                    base,
                    extents: [td, th, tw, tc],
                    sc,
                };
                tile.write(g, packer, input, pixels, &mut panel, &mut scratch);
                padding.fill(0);
                pos += size;
            }
        }
        if row == last_row {
            return;
        }
        row += 1;
        iw0 = 0;
        // Carry: H, D, C tiles, then the outer axes, fastest (last) first.
        ih += 1;
        if ih < ch {
            continue;
        }
        ih = 0;
        id += 1;
        if id < cd {
            continue;
        }
        id = 0;
        ic += 1;
        if ic < cc {
            continue;
        }
        ic = 0;
        for k in (0..g.n_outer).rev() {
            outer_index[k] += 1;
            outer_in += g.outer_stride[k];
            if outer_index[k] < g.outer_extent[k] {
                break;
            }
            outer_in -= g.outer_stride[k] * outer_index[k];
            outer_index[k] = 0;
        }
    }
}

/// Writes W tiles `iws` of one row of tiles (one outer index and C, D, H tile) in input
/// order when its rows are contiguous in the input and the packer has a band kernel or
/// fused rows for compact `tc`-channel pixels: each input row goes out as one segment per
/// W tile, so the input streams front to back (tile order would interleave `td · th` input
/// rows). `base` is the input offset of the row's first W tile, `output` starts at tile
/// `iws.start`. Returns the bytes written (the tiles' padding included), or `None`,
/// writing nothing.
fn tile_row<P: Packer>(
    g: &Geometry,
    packer: &P,
    input: &[u8],
    output: &mut [u8],
    base: usize,
    [td, th, tc]: [usize; 3],
    iws: Range<usize>,
) -> Option<usize> {
    let elem = g.elem;
    let [sd, sh, sw, scs] = g.role_stride;
    let t_w = g.tile[2];
    let row_bytes = tc * elem;
    let channels_packed = tc == 1 || scs == elem;
    let sc = g.stored(tc);
    let cw = iws.len();
    if sc != tc || g.planes != 2 || !channels_packed || (cw > 1 || t_w > 1) && sw != row_bytes {
        return None;
    }
    let base = base + iws.start * t_w * sw;
    let probe = Rows {
        input: &[],
        in_stride: 0,
        row_px: 0,
        rows: 0,
        out: &mut [],
        out_stride: 0,
    };
    // Without fused rows, only a band kernel can take the row of tiles (it may refuse it).
    let has_rows = packer.rows(probe, tc);
    let pb = 2 * tc;
    let full = td * th * t_w * pb;
    let full_size = full.next_multiple_of(16);
    let last_tw = g.extent(2, iws.end - 1);
    let last = td * th * last_tw * pb;
    let last_at = (cw - 1) * full_size;
    let total = last_at + last.next_multiple_of(16);
    let out = &mut output[..total];
    let band = Band {
        input: &input[base..],
        td,
        th,
        sd,
        sh,
        tile_px: t_w,
        last_px: last_tw,
        tiles: cw,
        out: &mut out[..],
        tile_stride: full_size,
    };
    // A band kernel writes every row at once; otherwise one rows call per input row.
    if !packer.band(band, tc) {
        if !has_rows {
            return None;
        }
        for d in 0..td {
            for h in 0..th {
                let row = base + d * sd + h * sh;
                let k = d * th + h;
                if cw > 1 {
                    let rows = Rows {
                        input: &input[row..],
                        in_stride: t_w * row_bytes,
                        row_px: t_w,
                        rows: cw - 1,
                        out: &mut out[k * t_w * pb..],
                        out_stride: full_size,
                    };
                    packer.rows(rows, tc);
                }
                let rows = Rows {
                    input: &input[row + (cw - 1) * t_w * row_bytes..],
                    in_stride: 0,
                    row_px: last_tw,
                    rows: 1,
                    out: &mut out[last_at + k * last_tw * pb..],
                    out_stride: 0,
                };
                packer.rows(rows, tc);
            }
        }
    }
    for iw in 0..cw - 1 {
        out[iw * full_size + full..(iw + 1) * full_size].fill(0);
    }
    out[last_at + last..].fill(0);
    Some(total)
}

/// One tile: input byte offset of its first element, actual extents, stored channels.
struct Tile {
    base: usize,
    extents: [usize; 4],
    sc: usize,
}

impl Tile {
    fn write<P: Packer>(
        &self,
        g: &Geometry,
        packer: &P,
        input: &[u8],
        out: &mut [u8],
        panel: &mut [u8; PANEL * 4],
        scratch: &mut [u8],
    ) {
        let elem = g.elem;
        let [td, th, tw, tc] = self.extents;
        let sc = self.sc;
        let pb = sc * g.planes;
        let [sd, sh, sw, scs] = g.role_stride;
        let channels_packed = tc == 1 || scs == elem;
        if tc > PANEL {
            let mut px = 0;
            for d in 0..td {
                for h in 0..th {
                    for w in 0..tw {
                        let at = self.base + d * sd + h * sh + w * sw;
                        let pixel = &mut out[px * pb..(px + 1) * pb];
                        let mut ca = 0;
                        while ca < tc {
                            let n = PANEL.min(tc - ca);
                            let raw: &[u8] = if channels_packed {
                                &input[at + ca * elem..at + (ca + n) * elem]
                            } else {
                                for c in 0..n {
                                    let from = at + (ca + c) * scs;
                                    panel[c * elem..(c + 1) * elem]
                                        .copy_from_slice(&input[from..from + elem]);
                                }
                                &panel[..n * elem]
                            };
                            packer.channels(raw, ca, pixel, scratch);
                            ca += n;
                        }
                        for plane in 0..g.planes {
                            pixel[plane * sc + tc..(plane + 1) * sc].fill(0);
                        }
                        px += 1;
                    }
                }
            }
            return;
        }
        let batch = PANEL / tc;
        let row_packed = channels_packed && (tw == 1 || sw == tc * elem);
        let direct = row_packed && tw * tc >= DIRECT_MIN;
        let row_bytes = tc * elem;
        let mut filled = 0usize;
        let mut px = 0usize;
        macro_rules! emit {
            () => {
                if filled > 0 {
                    let first = px - filled;
                    packer.pixels(
                        &panel[..filled * row_bytes],
                        tc,
                        sc,
                        &mut out[first * pb..px * pb],
                        scratch,
                    );
                }
            };
        }
        macro_rules! flush {
            () => {
                emit!();
                filled = 0;
            };
        }
        for d in 0..td {
            if direct && tc == sc {
                let first = self.base + d * sd;
                for h in 0..th {
                    // Tile order interleaves many input rows: ask now for the same row of
                    // the next W tile, which follows this one in the input.
                    let next = first + h * sh + tw * row_bytes;
                    if let Some(ahead) = input.get(next..next + tw * row_bytes) {
                        super::arch::tess::prefetch(ahead);
                    }
                }
                let rows = Rows {
                    input: &input[first..],
                    in_stride: sh,
                    row_px: tw,
                    rows: th,
                    out: &mut out[px * pb..(px + th * tw) * pb],
                    out_stride: tw * pb,
                };
                if packer.rows(rows, tc) {
                    px += th * tw;
                    continue;
                }
            }
            for h in 0..th {
                let row = self.base + d * sd + h * sh;
                if direct {
                    flush!();
                    // The same row of the next W tile follows this one in the input:
                    // ask for it now, since tile order interleaves many input rows.
                    let next = row + tw * row_bytes;
                    if let Some(ahead) = input.get(next..next + tw * row_bytes) {
                        super::arch::tess::prefetch(ahead);
                    }
                    let mut w0 = 0;
                    while w0 < tw {
                        let n = batch.min(tw - w0);
                        let a = row + w0 * row_bytes;
                        packer.pixels(
                            &input[a..a + n * row_bytes],
                            tc,
                            sc,
                            &mut out[(px + w0) * pb..(px + w0 + n) * pb],
                            scratch,
                        );
                        w0 += n;
                    }
                    px += tw;
                    continue;
                }
                for w in 0..tw {
                    if filled == batch {
                        flush!();
                    }
                    let a = row + w * sw;
                    let dst = &mut panel[filled * row_bytes..(filled + 1) * row_bytes];
                    if channels_packed {
                        dst.copy_from_slice(&input[a..a + row_bytes]);
                    } else {
                        for (c, chunk) in dst.chunks_exact_mut(elem).enumerate() {
                            let from = a + c * scs;
                            chunk.copy_from_slice(&input[from..from + elem]);
                        }
                    }
                    filled += 1;
                    px += 1;
                }
            }
        }
        emit!();
    }
}

/// What a tiled plan's ports need of their buffers: the input's accessed span aligned to
/// its element size, the output's capacity 16-byte aligned.
pub(crate) fn needs(input_view: &View, output_view: &TiledView) -> (PortNeed, PortNeed) {
    (
        PortNeed {
            span: input_view.span(),
            align: input_view.dtype().size(),
        },
        PortNeed {
            span: output_view.capacity(),
            align: simak_core::layout::TILE_ALIGN as usize,
        },
    )
}

#[cfg(test)]
mod test {
    use simak_core::layout::{Channels, MlaTiled};
    use simak_core::ops::casttess::{Request, TiledTensorSpec, check_inference};
    use simak_core::{DType, TensorSpec};

    use crate::a65::Level;
    use crate::a65::casttess::{execute, prepare_at};

    /// Every level against the scalar one on rows of tiles (the input-order walk of
    /// `tile_row`): several W tiles with padded full tiles, a partial last W tile, D and H
    /// tiles of several rows, an outer axis, every fused channel count; dirty output with a
    /// guard past the required span.
    #[test]
    fn tile_rows_match_the_scalar_level() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut cases = 0;
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            for tc in 1..=9u64 {
                for (shape, tile) in [
                    ([2, 3, 5, 37, tc], [2, 2, 5, tc as u32]),
                    ([1, 1, 3, 130, tc], [1, 2, 64, tc as u32]),
                    ([1, 2, 1, 11, tc], [1, 1, 3, tc as u32]),
                ] {
                    let plan = check_inference(&Request {
                        input: TensorSpec::contiguous(shape, dtype),
                        output: TiledTensorSpec::new(
                            shape,
                            DType::BF16,
                            MlaTiled::new(
                                [Some(1), Some(2), Some(3), Some(4)],
                                tile,
                                Channels::Compact,
                            ),
                        ),
                    })
                    .unwrap();
                    let n = shape.iter().product::<u64>() as usize * dtype.size();
                    let input: Vec<u8> = (0..n)
                        .map(|_| {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            seed as u8
                        })
                        .collect();
                    let cap = plan.output().capacity() as usize;
                    let run = |level| {
                        let prepared = prepare_at(&plan, level).ok()?;
                        let mut buf = vec![0xa5u8; cap + 64 + 16];
                        let start = (16 - buf.as_ptr() as usize % 16) % 16;
                        execute(&prepared, &input, &mut buf[start..start + cap + 64]).unwrap();
                        assert!(buf[start + cap..].iter().all(|&b| b == 0xa5));
                        Some(buf[start..start + cap].to_vec())
                    };
                    let want = run(Level::Scalar).unwrap();
                    for level in Level::ALL {
                        if let Some(got) = run(level) {
                            assert!(got == want, "{dtype} {shape:?} {tile:?} {}", level.name());
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert!(cases >= 81);
    }
}
