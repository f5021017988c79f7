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

use simak_core::layout::TiledView;
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

    /// Writes whole rows of compact pixels (`tc = sc`) in one pass when the packer has a
    /// fused kernel for `tc`: row `r` holds `row_px` contiguous pixels from byte
    /// `r · stride` of `input`, and the rows' pixels fill `out` in order. Returns `false`,
    /// writing nothing, otherwise.
    fn rows(&self, input: &[u8], stride: usize, tc: usize, row_px: usize, out: &mut [u8]) -> bool {
        let _ = (input, stride, tc, row_px, out);
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
    let mut panel = [0u8; PANEL * 4];
    let mut scratch = [0u8; PANEL * 2];
    let mut outer_index = [0usize; MAX_RANK];
    let mut outer_in = 0usize;
    let mut pos = 0usize;
    let [cd, ch, cw, cc] = g.counts;
    let [sd, sh, sw, scs] = g.role_stride;
    let [t_d, t_h, t_w, t_c] = g.tile;
    for _ in 0..g.outer_count {
        for ic in 0..cc {
            let tc = g.extent(3, ic);
            let sc = g.stored(tc);
            for id in 0..cd {
                let td = g.extent(0, id);
                for ih in 0..ch {
                    let th = g.extent(1, ih);
                    for iw in 0..cw {
                        let tw = g.extent(2, iw);
                        let base = outer_in
                            + id * t_d * sd
                            + ih * t_h * sh
                            + iw * t_w * sw
                            + ic * t_c * scs;
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
            }
        }
        // Carry over the outer axes, fastest (last) first.
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
                let end = (px + th * tw) * pb;
                if packer.rows(&input[first..], sh, tc, tw, &mut out[px * pb..end]) {
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

/// Checks both ports before any write (SPEC §6): input capacity, element alignment and
/// address range; output capacity, 16-byte alignment and address range; then overlap.
pub(crate) fn check_ports(
    input_view: &View,
    output_view: &TiledView,
    input: &[u8],
    output: &[u8],
) -> Result<(), super::ExecuteError> {
    use simak_core::Port;
    let (in_lo, in_hi) = super::check_buffer(
        Port::Input,
        input.as_ptr() as usize,
        input.len(),
        input_view.span(),
        input_view.dtype().size(),
    )?;
    let (out_lo, out_hi) = super::check_buffer(
        Port::Output,
        output.as_ptr() as usize,
        output.len(),
        output_view.capacity(),
        simak_core::layout::TILE_ALIGN as usize,
    )?;
    if in_lo < out_hi && out_lo < in_hi {
        return Err(super::ExecuteError::Overlap);
    }
    Ok(())
}
