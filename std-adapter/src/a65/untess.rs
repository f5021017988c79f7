//! The A65 walker shared by the output-side ops (SPEC §12): Detess, DetessCast,
//! DetessDequant read an MLA output layout (SPEC §12.1) and write a strided tensor;
//! Dequant reads and writes strided tensors. The element conversion is a [`Convert`]; the
//! walker is written once and compiled at each level ([`Lanes`]) with the level's target
//! features, so the runs it hands to the conversion are vectorized for that level.
//!
//! Tiled walk: tiles in storage order (outer index, C, D, H, W tiles), then pixels in d, h,
//! w order; each run is either the channels of one pixel (when the output's C stride is
//! the smaller) or the pixels of one tile row (when W's is), read from the tile's bytes
//! with §12.1's byte formula. Padding is never read. Parts of a threaded call restrict one
//! logical axis (the output's slowest) to a range, so each part owns one contiguous range
//! of output bytes.
//!
//! The tiled ops implement [`TiledOp`] (their ports, per-plan conversion data and walk);
//! their [`HostOp`] is written once over it, with the state [`TiledState`].

use core::fmt;

use simak_core::layout::{Channels, TileAlign, TiledView};
use simak_core::ops::Op;
use simak_core::{DType, MAX_RANK, View};

use super::arch::dequant::DequantLanes;
#[cfg(target_arch = "aarch64")]
use super::arch::isa::Neon;
#[cfg(target_arch = "x86_64")]
use super::arch::isa::{Avx2, Avx512, Sse41};
use super::arch::isa::{Isa, Kernel};
use super::level::{Level, LevelError};
use super::walk::Traversal;
use super::walk::carve;
use super::{HostOp, PortNeed};

/// Converts runs of elements: element `i` of a run has byte plane `p` (least significant
/// first) at `src[i · in_stride + p · plane_stride]` and is written at
/// `out[i · out_stride..][..OUT]` little-endian.
pub(crate) trait Convert: Sync {
    /// Input element size in bytes (1, 2 or 4).
    const IN: usize;
    /// Output element size in bytes (1, 2 or 4).
    const OUT: usize;

    /// Whether the conversion copies the bytes unchanged (`IN == OUT`, `one` the identity).
    const IDENTITY: bool = false;

    /// The output bits (little-endian, `OUT` low bytes used) of one input code (its `IN`
    /// bytes, little-endian, zero-extended).
    fn one(&self, code: u32) -> u32;

    /// Converts a run of `n` elements. `#[inline(always)]` in every implementation, so
    /// that it compiles inside the level's entry.
    #[inline(always)]
    fn run(
        &self,
        src: &[u8],
        in_stride: usize,
        plane_stride: usize,
        n: usize,
        out: &mut [u8],
        out_stride: usize,
    ) {
        run_generic(self, src, in_stride, plane_stride, n, out, out_stride);
    }

    /// Converts one whole 16-channel block of one pixel into packed output elements:
    /// element `i` (< 16) has plane `p` at `src[p · plane_stride + i]` and is written at
    /// `out[i · OUT..][..OUT]`. [`Convert::run`] unless a conversion has a fixed-size body.
    #[inline(always)]
    fn block16(&self, src: &[u8], plane_stride: usize, out: &mut [u8]) {
        self.run(src, 1, plane_stride, 16, out, Self::OUT);
    }
}

/// The portable body of [`Convert::run`]: packed fast paths, then the general gather.
#[inline(always)]
pub(crate) fn run_generic<C: Convert + ?Sized>(
    c: &C,
    src: &[u8],
    in_stride: usize,
    plane_stride: usize,
    n: usize,
    out: &mut [u8],
    out_stride: usize,
) {
    if n == 0 {
        return;
    }
    let (e, o) = (C::IN, C::OUT);
    if out_stride == o {
        let out = &mut out[..n * o];
        if C::IDENTITY && plane_stride == 1 && in_stride == e {
            out.copy_from_slice(&src[..n * e]);
            return;
        }
        if e == 1 && in_stride == 1 {
            for (y, &b) in out.chunks_exact_mut(o).zip(&src[..n]) {
                y.copy_from_slice(&c.one(u32::from(b)).to_le_bytes()[..o]);
            }
            return;
        }
        if plane_stride == 1 && in_stride == e {
            for (y, x) in out.chunks_exact_mut(o).zip(src[..n * e].chunks_exact(e)) {
                y.copy_from_slice(&c.one(load(x)).to_le_bytes()[..o]);
            }
            return;
        }
        if in_stride == 1 && e == 2 {
            let (lo, hi) = (&src[..n], &src[plane_stride..plane_stride + n]);
            for ((y, &l), &h) in out.chunks_exact_mut(o).zip(lo).zip(hi) {
                y.copy_from_slice(&c.one(u32::from(l) | u32::from(h) << 8).to_le_bytes()[..o]);
            }
            return;
        }
    }
    for i in 0..n {
        let at = i * in_stride;
        let mut code = 0u32;
        for p in 0..e {
            code |= u32::from(src[at + p * plane_stride]) << (8 * p);
        }
        let y = i * out_stride;
        out[y..y + o].copy_from_slice(&c.one(code).to_le_bytes()[..o]);
    }
}

/// Little-endian bytes (1, 2 or 4) as a zero-extended code.
#[inline(always)]
fn load(x: &[u8]) -> u32 {
    match *x {
        [a] => u32::from(a),
        [a, b] => u32::from(u16::from_le_bytes([a, b])),
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// The level a prepared state runs its walker at: a capability token (SPEC §10).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lanes {
    /// Portable code, no target features.
    Scalar,
    /// x86-64 SSE4.1.
    #[cfg(target_arch = "x86_64")]
    Sse41(Sse41),
    /// x86-64 AVX2 with F16C.
    #[cfg(target_arch = "x86_64")]
    Avx2(Avx2),
    /// x86-64 AVX-512 F, BW, VL.
    #[cfg(target_arch = "x86_64")]
    Avx512(Avx512),
    /// AArch64 NEON.
    #[cfg(target_arch = "aarch64")]
    Neon(Neon),
}

impl Lanes {
    /// The fastest level this CPU has (scalar with the `scalar-only` feature).
    pub fn auto() -> Lanes {
        if super::SCALAR_ONLY {
            return Lanes::Scalar;
        }
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(t) = Avx512::detect() {
                return Lanes::Avx512(t);
            }
            if let Some(t) = Avx2::detect() {
                return Lanes::Avx2(t);
            }
            if let Some(t) = Sse41::detect() {
                return Lanes::Sse41(t);
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if let Some(t) = Neon::detect() {
                return Lanes::Neon(t);
            }
        }
        Lanes::Scalar
    }

    /// The forced `level` for op `op` (reported in errors with `dtype`).
    ///
    /// # Errors
    ///
    /// [`LevelError::NotDetected`] when this CPU lacks it; [`LevelError::NoKernel`] for
    /// `x86_64-avx512vbmi` and `aarch64-neon-fp16`, which these ops have no kernel at.
    pub fn at(level: Level, op: &'static str, dtype: DType) -> Result<Lanes, LevelError> {
        level.check_detected()?;
        let no = LevelError::NoKernel { level, op, dtype };
        match level {
            Level::Scalar => Ok(Lanes::Scalar),
            #[cfg(target_arch = "x86_64")]
            Level::Sse41 => Sse41::detect().map(Lanes::Sse41).ok_or(no),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => Avx2::detect().map(Lanes::Avx2).ok_or(no),
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => Avx512::detect().map(Lanes::Avx512).ok_or(no),
            #[cfg(target_arch = "aarch64")]
            Level::Neon => Neon::detect().map(Lanes::Neon).ok_or(no),
            _ => Err(no),
        }
    }

    /// The level.
    pub fn level(self) -> Level {
        match self {
            Lanes::Scalar => Level::Scalar,
            #[cfg(target_arch = "x86_64")]
            Lanes::Sse41(_) => Level::Sse41,
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx2(_) => Level::Avx2,
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx512(_) => Level::Avx512,
            #[cfg(target_arch = "aarch64")]
            Lanes::Neon(_) => Level::Neon,
        }
    }

    /// Whether INT8 / INT16 → FP32 dequantization may run as FP division ([`DivF32`]):
    /// at a SIMD level (the scalar level keeps the exact table path, the reference) and
    /// only when the calling thread's FP environment is the default (SPEC §12.2).
    #[inline]
    pub fn fp_division(self) -> bool {
        !matches!(self, Lanes::Scalar) && fp_ok()
    }

    /// Runs `body` compiled with this level's features.
    #[inline]
    pub fn run<B: Body>(self, body: B) {
        match self {
            Lanes::Scalar => body.body(),
            #[cfg(target_arch = "x86_64")]
            Lanes::Sse41(t) => t.vectorize(AtLevel(body)),
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx2(t) => t.vectorize(AtLevel(body)),
            #[cfg(target_arch = "x86_64")]
            Lanes::Avx512(t) => t.vectorize(AtLevel(body)),
            #[cfg(target_arch = "aarch64")]
            Lanes::Neon(t) => t.vectorize(AtLevel(body)),
        }
    }
}

/// Runs `body` compiled with the features of the level whose token is `token` (a
/// [`Lanes`] variant's, so the CPU has them).
#[inline]
pub(crate) fn run_at<T: Isa, B: Body>(token: T, body: B) {
    token.vectorize(AtLevel(body));
}

/// A walk to run at a level: its `body` is `#[inline(always)]`.
pub(crate) trait Body {
    /// The walk.
    fn body(self);
}

/// A [`Body`] as a [`Kernel`] of any level.
struct AtLevel<B>(B);

impl<L, B: Body> Kernel<L> for AtLevel<B> {
    type Output = ();

    #[inline(always)]
    fn run(self, _lanes: L) {
        self.0.body();
    }
}

/// The geometry of a tiled input and a strided output of the same logical shape, in
/// `usize`, prepared once. Used only after `execute` proved both buffers hold the spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    rank: usize,
    extents: [usize; MAX_RANK],
    out_strides: [usize; MAX_RANK],
    e: usize,
    padded: bool,
    cblock: bool,
    align: usize,
    tile: [usize; 4],
    counts: [usize; 4],
    role_extent: [usize; 4],
    role_axis: [Option<usize>; 4],
    role_stride: [usize; 4],
    outer: [usize; MAX_RANK],
    n_outer: usize,
    bytes_per_outer: usize,
    /// Runs go along W (the output's W stride is below its C stride).
    w_runs: bool,
    /// Channel runs with more than one channel tile: the walk takes the tiles of one
    /// spatial position together, pixel by pixel (the output is then written in pixel
    /// order, not once per channel tile).
    c_inner: bool,
}

/// Per logical axis, the index range a walk covers.
pub(crate) type Ranges = [(usize, usize); MAX_RANK];

impl Geometry {
    /// The geometry of an admitted tiled input and strided output.
    pub fn new(input: &TiledView, output: &View) -> Geometry {
        let rank = output.rank();
        let extents = output.extents().map(|e| e as usize);
        let out_strides = output.strides().map(|s| s as usize);
        let layout = input.layout();
        let role_axis = layout.axes.map(|a| a.map(usize::from));
        let role_stride = role_axis.map(|a| a.map_or(0, |a| out_strides[a]));
        let mut outer = [0usize; MAX_RANK];
        for (slot, &a) in outer.iter_mut().zip(input.outer_axes()) {
            *slot = usize::from(a);
        }
        let tile = input.tile().map(|t| t as usize);
        let w_runs = tile[2] > 1 && role_stride[2] < role_stride[3] || tile[3] == 1;
        let counts = input.tile_counts().map(|c| c as usize);
        Geometry {
            rank,
            extents,
            out_strides,
            e: input.planes(),
            padded: input.channels() != Channels::Compact,
            cblock: input.channels() == Channels::CBlock16,
            align: if input.tile_align() == TileAlign::Bytes16 {
                16
            } else {
                1
            },
            tile,
            counts,
            role_extent: input.role_extents().map(|e| e as usize),
            role_axis,
            role_stride,
            outer,
            n_outer: input.outer_axes().len(),
            bytes_per_outer: input.bytes_per_outer() as usize,
            w_runs,
            c_inner: !w_runs && counts[3] > 1,
        }
    }

    /// Every axis at its full range.
    pub fn full(&self) -> Ranges {
        let mut r = [(0, 1); MAX_RANK];
        for (slot, &e) in r.iter_mut().zip(self.extents.iter()).take(self.rank) {
            *slot = (0, e);
        }
        r
    }

    /// Splits the call into at most `parts` ranges of the axis with the largest output
    /// stride (among axes of extent > 1): `(ranges, first output byte)`, in output order.
    pub fn split(&self, parts: usize) -> Vec<(Ranges, usize)> {
        let axis = (0..self.rank)
            .filter(|&a| self.extents[a] > 1)
            .max_by_key(|&a| self.out_strides[a]);
        let Some(axis) = axis else {
            return vec![(self.full(), 0)];
        };
        let extent = self.extents[axis];
        let parts = parts.clamp(1, extent);
        let (base, extra) = (extent / parts, extent % parts);
        (0..parts)
            .map(|k| {
                let lo = k * base + k.min(extra);
                let hi = lo + base + usize::from(k < extra);
                let mut r = self.full();
                r[axis] = (lo, hi);
                (r, lo * self.out_strides[axis])
            })
            .collect()
    }

    /// Stored channels for `tc` actual channels.
    #[inline(always)]
    fn stored(&self, tc: usize) -> usize {
        if self.padded {
            tc.next_multiple_of(16)
        } else {
            tc
        }
    }
}

/// A tiled call's geometry, buffers and covered ranges (all of a call, or one part's):
/// `output` starts at output byte `out_base`.
pub struct TiledCall<'a> {
    pub(crate) g: &'a Geometry,
    pub(crate) input: &'a [u8],
    pub(crate) output: &'a mut [u8],
    pub(crate) out_base: usize,
    pub(crate) ranges: Ranges,
}

impl<'a> TiledCall<'a> {
    /// The walk of this call with the conversion `conv`, to run at a level.
    #[inline(always)]
    pub(crate) fn by<C: Convert>(self, conv: &'a C) -> TiledWalk<'a, C> {
        TiledWalk { call: self, conv }
    }
}

/// A tiled call with its conversion: a [`Body`].
pub(crate) struct TiledWalk<'a, C> {
    call: TiledCall<'a>,
    conv: &'a C,
}

impl<C: Convert> Body for TiledWalk<'_, C> {
    #[inline(always)]
    fn body(self) {
        walk_tiles(self);
    }
}

/// The tiled walk (see the module docs).
#[inline(always)]
fn walk_tiles<C: Convert>(w: TiledWalk<'_, C>) {
    let TiledWalk {
        call:
            TiledCall {
                g,
                input,
                output,
                out_base,
                ranges,
            },
        conv,
    } = w;
    let e = g.e;
    // Per role: the covered range of its axis (absent role: [0, 1)).
    let role_range: [(usize, usize); 4] =
        core::array::from_fn(|r| g.role_axis[r].map_or((0, 1), |a| ranges[a]));
    // Outer odometer over the outer axes' ranges.
    let n_outer = g.n_outer;
    let mut index = [0usize; MAX_RANK];
    for k in 0..n_outer {
        index[k] = ranges[g.outer[k]].0;
        if ranges[g.outer[k]].0 >= ranges[g.outer[k]].1 {
            return;
        }
    }
    loop {
        let mut lin = 0usize;
        let mut out_outer = 0usize;
        for (&a, &i) in g.outer.iter().zip(&index).take(n_outer) {
            lin = lin * g.extents[a] + i;
            out_outer += i * g.out_strides[a];
        }
        let mut pos = lin * g.bytes_per_outer;
        if g.c_inner {
            channel_tiles_together(
                g,
                conv,
                &input[pos..pos + g.bytes_per_outer],
                output,
                out_outer.wrapping_sub(out_base),
                &role_range,
            );
        }
        for ic in 0..if g.c_inner { 0 } else { g.counts[3] } {
            let tc = g.tile[3].min(g.role_extent[3] - ic * g.tile[3]);
            let sc = g.stored(tc);
            for id in 0..g.counts[0] {
                let td = g.tile[0].min(g.role_extent[0] - id * g.tile[0]);
                for ih in 0..g.counts[1] {
                    let th = g.tile[1].min(g.role_extent[1] - ih * g.tile[1]);
                    for iw in 0..g.counts[2] {
                        let tw = g.tile[2].min(g.role_extent[2] - iw * g.tile[2]);
                        let size = (td * th * tw * sc * e).next_multiple_of(g.align);
                        let origin = [
                            id * g.tile[0],
                            ih * g.tile[1],
                            iw * g.tile[2],
                            ic * g.tile[3],
                        ];
                        let ext = [td, th, tw, tc];
                        let mut lo = [0usize; 4];
                        let mut hi = [0usize; 4];
                        let mut empty = false;
                        for r in 0..4 {
                            let (a, b) = role_range[r];
                            lo[r] = a.saturating_sub(origin[r]);
                            hi[r] = b.saturating_sub(origin[r]).min(ext[r]);
                            empty |= lo[r] >= hi[r];
                        }
                        if !empty {
                            // The tile's origin may precede a part's first output byte
                            // (the part covers only `lo..hi`): wrapping offsets, every
                            // covered element's is in range.
                            let out_tile = (out_outer
                                + (0..4).map(|r| origin[r] * g.role_stride[r]).sum::<usize>())
                            .wrapping_sub(out_base);
                            tile(
                                g,
                                conv,
                                &input[pos..pos + size],
                                output,
                                out_tile,
                                [td, th, tw],
                                sc,
                                lo,
                                hi,
                            );
                        }
                        pos += size;
                    }
                }
            }
        }
        // Carry over the outer axes, fastest last.
        let mut k = n_outer;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            let (a, b) = ranges[g.outer[k]];
            index[k] += 1;
            if index[k] < b {
                break;
            }
            index[k] = a;
        }
    }
}

/// The bytes of the spatial tiles of one channel-tile slab whose tiles store `sc`
/// channels: per spatial role, `counts − 1` full tiles and one boundary tile (or only full
/// tiles), each tile's size rounded up to the tile alignment.
#[inline(always)]
fn slab_bytes(g: &Geometry, sc: usize) -> usize {
    // Per spatial role: (number of tiles, extent) of the full and of the boundary tiles.
    let kinds: [[(usize, usize); 2]; 3] = core::array::from_fn(|r| {
        let (n, t, x) = (g.counts[r], g.tile[r], g.role_extent[r]);
        let last = x - (n.max(1) - 1) * t;
        if n == 0 {
            [(0, t), (0, t)]
        } else if last == t {
            [(n, t), (0, t)]
        } else {
            [(n - 1, t), (1, last)]
        }
    });
    let mut total = 0;
    for &(nd, td) in &kinds[0] {
        for &(nh, th) in &kinds[1] {
            for &(nw, tw) in &kinds[2] {
                total += nd * nh * nw * (td * th * tw * sc * g.e).next_multiple_of(g.align);
            }
        }
    }
    total
}

/// One outer index's tiles when [`Geometry::c_inner`]: per spatial tile position (storage
/// order), per covered pixel, the covered channels of every channel tile at that position
/// in channel order, so each pixel's output is written at once. `src` is the outer
/// index's bytes, `out_outer` the output byte of its origin (relative to `output`).
#[inline(always)]
fn channel_tiles_together<C: Convert>(
    g: &Geometry,
    conv: &C,
    src: &[u8],
    output: &mut [u8],
    out_outer: usize,
    role_range: &[(usize, usize); 4],
) {
    let e = g.e;
    let nc = g.counts[3];
    let tile_c = g.tile[3];
    let (c_lo, c_hi) = role_range[3];
    if c_lo >= c_hi {
        return;
    }
    let (ic_lo, ic_hi) = (c_lo / tile_c, c_hi.div_ceil(tile_c).min(nc));
    let tc_of = |ic: usize| tile_c.min(g.role_extent[3] - ic * tile_c);
    // Full channel tiles store `sc_full` channels, the last `sc_last`.
    let sc_full = g.stored(tile_c);
    let sc_last = g.stored(tc_of(nc - 1));
    let slab = slab_bytes(g, sc_full);
    // Tiles of 16 channels stored as 16 (the last may hold fewer), every channel covered,
    // packed output channels: one fixed pattern per pixel.
    let blocks16 = tile_c == 16
        && sc_full == 16
        && sc_last == 16
        && scs_packed::<C>(g)
        && c_lo == 0
        && c_hi == g.role_extent[3];
    // Offsets of the current spatial tile inside a full slab and inside the last one.
    let (mut off_full, mut off_last) = (0usize, 0usize);
    let [sd, sh, sw, scs] = g.role_stride;
    for id in 0..g.counts[0] {
        let td = g.tile[0].min(g.role_extent[0] - id * g.tile[0]);
        for ih in 0..g.counts[1] {
            let th = g.tile[1].min(g.role_extent[1] - ih * g.tile[1]);
            for iw in 0..g.counts[2] {
                let tw = g.tile[2].min(g.role_extent[2] - iw * g.tile[2]);
                let npix = td * th * tw;
                let size_full = (npix * sc_full * e).next_multiple_of(g.align);
                let size_last = (npix * sc_last * e).next_multiple_of(g.align);
                let origin = [id * g.tile[0], ih * g.tile[1], iw * g.tile[2]];
                let ext = [td, th, tw];
                let mut lo = [0usize; 3];
                let mut hi = [0usize; 3];
                let mut empty = false;
                for r in 0..3 {
                    let (a, b) = role_range[r];
                    lo[r] = a.saturating_sub(origin[r]);
                    hi[r] = b.saturating_sub(origin[r]).min(ext[r]);
                    empty |= lo[r] >= hi[r];
                }
                if !empty {
                    let out_tile = out_outer
                        .wrapping_add((0..3).map(|r| origin[r] * g.role_stride[r]).sum::<usize>());
                    for d in lo[0]..hi[0] {
                        for h in lo[1]..hi[1] {
                            for w in lo[2]..hi[2] {
                                let k = (d * th + h) * tw + w;
                                let to_pix = out_tile.wrapping_add(d * sd + h * sh + w * sw);
                                if blocks16 {
                                    // Every channel tile: 16 stored channels at byte
                                    // k·16·E of its tile (PadTo16, CBlock16 alike), all
                                    // channels covered, packed output channels.
                                    let base = off_full + k * 16 * e;
                                    let out_pix =
                                        &mut output[to_pix..][..g.role_extent[3] * C::OUT];
                                    for (ic, y) in out_pix.chunks_mut(16 * C::OUT).enumerate() {
                                        let from = &src[ic * slab + base..];
                                        if y.len() == 16 * C::OUT {
                                            conv.block16(from, 16, y);
                                        } else {
                                            conv.run(from, 1, 16, y.len() / C::OUT, y, C::OUT);
                                        }
                                    }
                                    continue;
                                }
                                for ic in ic_lo..ic_hi {
                                    let last = ic == nc - 1;
                                    let (at, size, sc) = if last {
                                        (ic * slab + off_last, size_last, sc_last)
                                    } else {
                                        (ic * slab + off_full, size_full, sc_full)
                                    };
                                    let c0 = ic * tile_c;
                                    pixel(
                                        g,
                                        conv,
                                        &src[at..at + size],
                                        npix,
                                        sc,
                                        k,
                                        c_lo.saturating_sub(c0),
                                        (c_hi - c0).min(tc_of(ic)),
                                        output,
                                        to_pix.wrapping_add(c0 * scs),
                                    );
                                }
                            }
                        }
                    }
                }
                off_full += size_full;
                off_last += size_last;
            }
        }
    }
}

/// Whether the output's channel stride is one output element.
#[inline(always)]
fn scs_packed<C: Convert>(g: &Geometry) -> bool {
    g.role_stride[3] == C::OUT
}

/// Channels `lo..hi` of pixel `k` of one tile (`src` its bytes, `npix` pixels, `sc`
/// stored channels), channel 0 of the tile written at output byte `to` (relative to
/// `output`): one run per 16-channel block for CBlock16, else one run.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pixel<C: Convert>(
    g: &Geometry,
    conv: &C,
    src: &[u8],
    npix: usize,
    sc: usize,
    k: usize,
    lo: usize,
    hi: usize,
    output: &mut [u8],
    to: usize,
) {
    let e = g.e;
    let scs = g.role_stride[3];
    if g.cblock {
        let block = npix * 16 * e;
        let mut c = lo;
        if scs == C::OUT {
            // Whole blocks first (packed output channels): one fixed-size body each.
            let (first, last) = (lo.div_ceil(16), hi / 16);
            if first < last {
                if lo < first * 16 {
                    let from = (lo / 16) * block + k * 16 * e + lo % 16;
                    conv.run(
                        &src[from..],
                        1,
                        16,
                        first * 16 - lo,
                        &mut output[to.wrapping_add(lo * scs)..],
                        scs,
                    );
                }
                let out = &mut output[to.wrapping_add(first * 16 * scs)..];
                for (b, y) in (first..last).zip(out.chunks_exact_mut(16 * C::OUT)) {
                    conv.block16(&src[b * block + k * 16 * e..], 16, y);
                }
                c = last * 16;
            }
        }
        while c < hi {
            let end = hi.min((c / 16 + 1) * 16);
            let from = (c / 16) * block + k * 16 * e + c % 16;
            conv.run(
                &src[from..],
                1,
                16,
                end - c,
                &mut output[to.wrapping_add(c * scs)..],
                scs,
            );
            c = end;
        }
    } else {
        conv.run(
            &src[k * sc * e + lo..],
            1,
            sc,
            hi - lo,
            &mut output[to.wrapping_add(lo * scs)..],
            scs,
        );
    }
}

/// One tile's covered part: `src` is the tile's bytes, `out_tile` the output byte of the
/// tile's origin (relative to `output`); `lo..hi` the covered in-tile range per role.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn tile<C: Convert>(
    g: &Geometry,
    conv: &C,
    src: &[u8],
    output: &mut [u8],
    out_tile: usize,
    [td, th, tw]: [usize; 3],
    sc: usize,
    lo: [usize; 4],
    hi: [usize; 4],
) {
    let e = g.e;
    let [sd, sh, sw, scs] = g.role_stride;
    // Pixel stride and channel addressing within the tile (SPEC §5, §12.1).
    let (pix_stride, plane_stride) = if g.cblock { (16 * e, 16) } else { (sc * e, sc) };
    // CBlock16: npix · 16 · E bytes per 16-channel block.
    let block = td * th * tw * 16 * e;
    let chan_at = |c: usize| -> usize {
        if g.cblock {
            (c / 16) * block + c % 16
        } else {
            c
        }
    };
    if g.w_runs {
        let n = hi[2] - lo[2];
        for c in lo[3]..hi[3] {
            for d in lo[0]..hi[0] {
                for h in lo[1]..hi[1] {
                    let k = (d * th + h) * tw + lo[2];
                    let from = k * pix_stride + chan_at(c);
                    let to = out_tile.wrapping_add(d * sd + h * sh + lo[2] * sw + c * scs);
                    conv.run(
                        &src[from..],
                        pix_stride,
                        plane_stride,
                        n,
                        &mut output[to..],
                        sw,
                    );
                }
            }
        }
    } else {
        for d in lo[0]..hi[0] {
            for h in lo[1]..hi[1] {
                for w in lo[2]..hi[2] {
                    let k = (d * th + h) * tw + w;
                    let to_pix = out_tile.wrapping_add(d * sd + h * sh + w * sw);
                    pixel(
                        g,
                        conv,
                        src,
                        td * th * tw,
                        sc,
                        k,
                        lo[3],
                        hi[3],
                        output,
                        to_pix,
                    );
                }
            }
        }
    }
}

/// What a tiled input and strided output need (SPEC §6, §12.1): the input its capacity,
/// aligned to 16 bytes for tile alignment 16 and to the element size otherwise; the output
/// its span, unaligned.
fn needs(input: &TiledView, output: &View) -> (PortNeed, PortNeed) {
    (
        PortNeed {
            span: input.capacity(),
            align: if input.tile_align() == TileAlign::Bytes16 {
                16
            } else {
                input.planes()
            },
        },
        PortNeed {
            span: output.span(),
            align: 1,
        },
    )
}

/// A strided walk (Dequant): the traversal's runs.
pub(crate) struct StridedWalk<'a, C> {
    pub t: &'a Traversal,
    pub conv: &'a C,
    pub input: &'a [u8],
    pub output: &'a mut [u8],
}

impl<C: Convert> Body for StridedWalk<'_, C> {
    #[inline(always)]
    fn body(self) {
        let StridedWalk {
            t,
            conv,
            input,
            output,
        } = self;
        let (n, si, so) = (t.inner_len, t.inner_in_stride, t.inner_out_stride);
        t.for_each_run(|i, o| conv.run(&input[i..], si, 1, n, &mut output[o..], so));
    }
}

/// Detess's conversion: the `E` bytes unchanged.
pub(crate) struct Copy<const E: usize>;

impl<const E: usize> Convert for Copy<E> {
    const IN: usize = E;
    const OUT: usize = E;
    const IDENTITY: bool = true;

    #[inline(always)]
    fn one(&self, code: u32) -> u32 {
        code
    }
}

/// DetessCast's conversion: BF16 bits to FP32 bits, `bits << 16` (SPEC §12).
pub(crate) struct Cast;

impl Convert for Cast {
    const IN: usize = 2;
    const OUT: usize = 4;

    #[inline(always)]
    fn one(&self, code: u32) -> u32 {
        code << 16
    }

    #[inline(always)]
    fn block16(&self, src: &[u8], plane_stride: usize, out: &mut [u8]) {
        let out: &mut [u8; 64] = (&mut out[..64])
            .try_into()
            .unwrap_or_else(|_| unreachable!("64 bytes"));
        let lo: &[u8; 16] = (&src[..16])
            .try_into()
            .unwrap_or_else(|_| unreachable!("16 bytes"));
        let hi: &[u8; 16] = (&src[plane_stride..plane_stride + 16])
            .try_into()
            .unwrap_or_else(|_| unreachable!("16 bytes"));
        super::arch::blocks::bf16_planes_to_f32(lo, hi, out);
    }

    #[inline(always)]
    fn run(
        &self,
        src: &[u8],
        in_stride: usize,
        plane_stride: usize,
        n: usize,
        out: &mut [u8],
        out_stride: usize,
    ) {
        // A pixel's channels (PadTo16, CBlock16: a plane of low bytes, one of high bytes)
        // into packed FP32: one loop the level vectorizes.
        if in_stride == 1 && out_stride == 4 && plane_stride >= n {
            let (lo, hi) = (&src[..n], &src[plane_stride..plane_stride + n]);
            for ((y, &l), &h) in out[..4 * n].chunks_exact_mut(4).zip(lo).zip(hi) {
                y.copy_from_slice(&[0, 0, l, h]);
            }
            return;
        }
        run_generic(self, src, in_stride, plane_stride, n, out, out_stride);
    }
}

/// How [`DivF32`] computes `(q − zp) / s` from the exact binary32 difference `x = q − zp`
/// (|x| < 2^17): chosen by [`Dequant::new`], which checked the products against the table
/// for every code.
#[derive(Debug, Clone, core::marker::Copy, PartialEq)]
pub enum Scale {
    /// `x · r` in binary32, `r` the binary32 reciprocal of `s`: taken when it equals the
    /// table for every code (every power-of-two `s`, and some others; for most `s` about
    /// a quarter of the INT8 codes differ).
    Mul32(f32),
    /// The binary32 division `x / s` itself (SPEC §12.2 step 3, rounded to nearest-even with
    /// gradual underflow).
    Div(f32),
}

/// One of [`Scale`]'s computations as a type, so that each is compiled into its own loop.
trait ScaleOp: core::marker::Copy {
    /// The FP32 result of the exact difference `x`.
    fn apply(self, x: f32) -> f32;
}

#[derive(Clone, core::marker::Copy)]
struct Mul32(f32);
#[derive(Clone, core::marker::Copy)]
struct Div(f32);

impl ScaleOp for Mul32 {
    #[inline(always)]
    fn apply(self, x: f32) -> f32 {
        x * self.0
    }
}

impl ScaleOp for Div {
    #[inline(always)]
    fn apply(self, x: f32) -> f32 {
        x / self.0
    }
}

/// Runs `$body` (an expression using the [`ScaleOp`] `$op`) with `$scale`'s computation.
macro_rules! with_scale {
    ($scale:expr, |$op:ident| $body:expr) => {
        match $scale {
            Scale::Mul32(r) => {
                let $op = Mul32(r);
                $body
            }
            Scale::Div(s) => {
                let $op = Div(s);
                $body
            }
        }
    };
}

/// INT8 (`IN` = 1) or INT16 (`IN` = 2, `N` = 65,536) codes to FP32 in FP arithmetic,
/// used only when the calling thread's FP environment is the default
/// ([`Lanes::fp_division`]): `q − zp` exact in binary32, then the plan's [`Scale`] (each
/// gives the table's bits for every code). 16-code blocks (16-channel blocks and runs of
/// packed codes) run the level's [`DequantLanes`] body (`L` the level's token); packed
/// INT16 runs a loop the level vectorizes; other runs and the last codes of a run read the
/// plan's table (the same bits).
pub(crate) struct DivF32<'a, const IN: usize, const N: usize, L> {
    pub table: &'a [u32; N],
    pub zero_point: f32,
    pub scale: Scale,
    pub lanes: L,
}

impl<const IN: usize, const N: usize, L: DequantLanes> DivF32<'_, IN, N, L> {
    /// One 16-code block: `src` its INT8 codes, or the INT16 codes' plane of low bytes
    /// (the high bytes `plane_stride` further).
    #[inline(always)]
    fn block(&self, src: &[u8], plane_stride: usize, out: &mut [u8; 64]) {
        let lo: &[u8; 16] = src[..16]
            .try_into()
            .unwrap_or_else(|_| unreachable!("16 bytes"));
        if IN == 1 {
            self.lanes.i8x16(lo, out, self.zero_point, self.scale);
        } else {
            let hi: &[u8; 16] = src[plane_stride..plane_stride + 16]
                .try_into()
                .unwrap_or_else(|_| unreachable!("16 bytes"));
            self.lanes.i16x16(lo, hi, out, self.zero_point, self.scale);
        }
    }

    /// `n` codes (INT8 packed, or INT16 as two planes `plane_stride` apart) into packed
    /// FP32: whole 16-code blocks, then the last `n mod 16` codes by the table.
    #[inline(always)]
    fn blocks(&self, src: &[u8], plane_stride: usize, n: usize, out: &mut [u8]) {
        let whole = n / 16;
        for (b, y) in out[..64 * whole].chunks_exact_mut(64).enumerate() {
            let y: &mut [u8; 64] = y.try_into().unwrap_or_else(|_| unreachable!("64 bytes"));
            self.block(&src[16 * b..], plane_stride, y);
        }
        let at = 16 * whole;
        run_generic(
            self,
            &src[at..],
            1,
            plane_stride,
            n - at,
            &mut out[4 * at..],
            4,
        );
    }

    /// `n` packed little-endian INT16 codes into packed FP32.
    #[inline(always)]
    fn packed16<S: ScaleOp>(src: &[u8], out: &mut [u8], zp: f32, op: S) {
        for (y, x) in out.chunks_exact_mut(4).zip(src.chunks_exact(2)) {
            let q = f32::from(i16::from_le_bytes([x[0], x[1]]));
            y.copy_from_slice(&op.apply(q - zp).to_le_bytes());
        }
    }
}

impl<const IN: usize, const N: usize, L: DequantLanes> Convert for DivF32<'_, IN, N, L> {
    const IN: usize = IN;
    const OUT: usize = 4;

    #[inline(always)]
    fn block16(&self, src: &[u8], plane_stride: usize, out: &mut [u8]) {
        let out: &mut [u8; 64] = (&mut out[..64])
            .try_into()
            .unwrap_or_else(|_| unreachable!("64 bytes"));
        self.block(src, plane_stride, out);
    }

    #[inline(always)]
    fn one(&self, code: u32) -> u32 {
        self.table[code as usize & (N - 1)]
    }

    #[inline(always)]
    fn run(
        &self,
        src: &[u8],
        in_stride: usize,
        plane_stride: usize,
        n: usize,
        out: &mut [u8],
        out_stride: usize,
    ) {
        if in_stride == 1 && out_stride == 4 && (IN == 1 || plane_stride >= n) {
            // Packed INT8 codes, or INT16 as two planes (PadTo16, CBlock16).
            self.blocks(src, plane_stride, n, out);
            return;
        }
        if IN == 2 && plane_stride == 1 && in_stride == 2 && out_stride == 4 {
            let (src, out) = (&src[..2 * n], &mut out[..4 * n]);
            let zp = self.zero_point;
            with_scale!(self.scale, |op| Self::packed16(src, out, zp, op));
            return;
        }
        run_generic(self, src, in_stride, plane_stride, n, out, out_stride);
    }
}

/// Dequantization of INT8 (`IN` = 1) or INT16 (`IN` = 2) codes by a table of every value
/// (SPEC §12.2), built once per plan: `N` = 256 or 65,536 entries, so every code indexes
/// it without a bounds check; `OUT` 4 for FP32, 2 for FP16 and BF16.
pub(crate) struct Table<'a, const IN: usize, const OUT: usize, const N: usize>(pub &'a [u32; N]);

impl<const IN: usize, const OUT: usize, const N: usize> Convert for Table<'_, IN, OUT, N> {
    const IN: usize = IN;
    const OUT: usize = OUT;

    #[inline(always)]
    fn one(&self, code: u32) -> u32 {
        // `code` has IN bytes: below N.
        self.0[code as usize & (N - 1)]
    }
}

/// The table of `t` as an array of `N` entries (the length `Dequant::new` built).
#[inline]
pub(crate) fn table<const N: usize>(t: &[u32]) -> &[u32; N] {
    t.try_into()
        .unwrap_or_else(|_| unreachable!("a table of {N} entries"))
}

/// Dequantization of INT32 codes (SPEC §12.2): with FP instructions when the calling
/// thread's FP environment is the default (`fp`), else the integer path; the same bits.
pub(crate) struct Int32<const OUT: usize> {
    pub zero_point: i32,
    pub multiplier_bits: u32,
    pub output: DType,
    pub fp: bool,
}

impl<const OUT: usize> Convert for Int32<OUT> {
    const IN: usize = 4;
    const OUT: usize = OUT;

    #[inline(always)]
    fn one(&self, code: u32) -> u32 {
        use simak_core::arith::{cast, dequant};
        let y = if self.fp {
            // q − zp is exact in binary64 (|d| < 2^33); `as f32` rounds it once to
            // nearest-even and the binary32 division rounds once (default environment).
            let x = (f64::from(code as i32) - f64::from(self.zero_point)) as f32;
            (x / f32::from_bits(self.multiplier_bits)).to_bits()
        } else {
            let x = dequant::i64_to_f32_bits(i64::from(code as i32) - i64::from(self.zero_point));
            dequant::div_f32_bits(x, self.multiplier_bits)
        };
        match self.output {
            DType::F16 => u32::from(dequant::f32_to_f16_bits(y)),
            DType::BF16 => u32::from(cast::f32_to_bf16(y)),
            _ => y,
        }
    }
}

/// The dequantization of a plan, prepared once: a table for INT8 and INT16 codes, the
/// parameters for INT32.
#[derive(Debug, Clone)]
pub enum Dequant {
    /// 256 (INT8) or 65,536 (INT16) output bit patterns, indexed by the code's bytes;
    /// with the parameters, for [`DivF32`].
    Table {
        table: Box<[u32]>,
        zero_point: i32,
        multiplier_bits: u32,
        /// How the FP path computes the table's values (checked here against the table
        /// for every code, in the default FP environment; [`Scale::Div`] needs no check).
        scale: Scale,
    },
    /// INT32: computed per element.
    Int32 {
        zero_point: i32,
        multiplier_bits: u32,
    },
}

impl Dequant {
    /// Builds the table for `params` (SPEC §12.2, exact integer arithmetic).
    pub fn new(params: &simak_core::ops::dequant::CheckedParams) -> Dequant {
        let (zero_point, multiplier_bits) = (params.zero_point(), params.multiplier_bits());
        let build = |codes: Box<[i32]>| {
            let table: Box<[u32]> = codes.iter().map(|&q| params.value(q)).collect();
            let s = f32::from_bits(multiplier_bits);
            // `x` of every code: q − zp, exact in binary32 (|x| < 2^17).
            let x = |q: i32| (q - zero_point) as f32;
            // Checked only in the default FP environment (the one the FP path runs in).
            let fp = fp_ok();
            let r32 = 1.0 / s;
            let scale = if fp
                && r32.is_finite()
                && r32 != 0.0
                && codes
                    .iter()
                    .zip(table.iter())
                    .all(|(&q, &bits)| (x(q) * r32).to_bits() == bits)
            {
                Scale::Mul32(r32)
            } else {
                Scale::Div(s)
            };
            (table, scale)
        };
        match params.input_dtype() {
            simak_core::DType::I8 => {
                let (table, scale) = build((0..=255u8).map(|b| i32::from(b as i8)).collect());
                Dequant::Table {
                    table,
                    zero_point,
                    multiplier_bits,
                    scale,
                }
            }
            simak_core::DType::I16 => {
                let (table, scale) = build((0..=u16::MAX).map(|b| i32::from(b as i16)).collect());
                Dequant::Table {
                    table,
                    zero_point,
                    multiplier_bits,
                    scale,
                }
            }
            _ => Dequant::Int32 {
                zero_point: params.zero_point(),
                multiplier_bits: params.multiplier_bits(),
            },
        }
    }
}

/// Runs `$walk` (a walk constructor taking a conversion) with the conversion of
/// `$deq` for output dtype `$out` at `$lanes`.
macro_rules! with_dequant {
    ($lanes:expr, $deq:expr, $out:expr, |$c:ident| $walk:expr) => {{
        let out_dtype: simak_core::DType = $out;
        let lanes: $crate::a65::untess::Lanes = $lanes;
        let wide = out_dtype == simak_core::DType::F32;
        let division = wide && lanes.fp_division();
        match $deq {
            $crate::a65::untess::Dequant::Table {
                table: t,
                zero_point,
                scale,
                ..
            } if division => {
                // INT8 and INT16 → FP32 at a SIMD level in the default FP environment:
                // the plan's FP computation (the table's bits, SPEC §12.2), with the level's
                // token for its blocks.
                let zero_point = *zero_point as f32;
                macro_rules! at_level {
                    ($token:expr) => {{
                        let token = $token;
                        if t.len() == 256 {
                            let $c = &$crate::a65::untess::DivF32::<1, 256, _> {
                                table: $crate::a65::untess::table(t),
                                zero_point,
                                scale: *scale,
                                lanes: token,
                            };
                            $crate::a65::untess::run_at(token, $walk)
                        } else {
                            let $c = &$crate::a65::untess::DivF32::<2, 65536, _> {
                                table: $crate::a65::untess::table(t),
                                zero_point,
                                scale: *scale,
                                lanes: token,
                            };
                            $crate::a65::untess::run_at(token, $walk)
                        }
                    }};
                }
                match lanes {
                    #[cfg(target_arch = "x86_64")]
                    $crate::a65::untess::Lanes::Sse41(token) => at_level!(token),
                    #[cfg(target_arch = "x86_64")]
                    $crate::a65::untess::Lanes::Avx2(token) => at_level!(token),
                    #[cfg(target_arch = "x86_64")]
                    $crate::a65::untess::Lanes::Avx512(token) => at_level!(token),
                    #[cfg(target_arch = "aarch64")]
                    $crate::a65::untess::Lanes::Neon(token) => at_level!(token),
                    // `fp_division` is false at the scalar level.
                    $crate::a65::untess::Lanes::Scalar => {
                        unreachable!("FP dequantization at the scalar level")
                    }
                }
            }
            $crate::a65::untess::Dequant::Table { table: t, .. } if t.len() == 256 && wide => {
                let $c = &$crate::a65::untess::Table::<1, 4, 256>($crate::a65::untess::table(t));
                lanes.run($walk)
            }
            $crate::a65::untess::Dequant::Table { table: t, .. } if t.len() == 256 => {
                let $c = &$crate::a65::untess::Table::<1, 2, 256>($crate::a65::untess::table(t));
                lanes.run($walk)
            }
            $crate::a65::untess::Dequant::Table { table: t, .. } if wide => {
                let $c = &$crate::a65::untess::Table::<2, 4, 65536>($crate::a65::untess::table(t));
                lanes.run($walk)
            }
            $crate::a65::untess::Dequant::Table { table: t, .. } => {
                let $c = &$crate::a65::untess::Table::<2, 2, 65536>($crate::a65::untess::table(t));
                lanes.run($walk)
            }
            &$crate::a65::untess::Dequant::Int32 {
                zero_point,
                multiplier_bits,
            } => {
                let fp = $crate::a65::untess::fp_ok();
                if wide {
                    let $c = &$crate::a65::untess::Int32::<4> {
                        zero_point,
                        multiplier_bits,
                        output: out_dtype,
                        fp,
                    };
                    lanes.run($walk)
                } else {
                    let $c = &$crate::a65::untess::Int32::<2> {
                        zero_point,
                        multiplier_bits,
                        output: out_dtype,
                        fp,
                    };
                    lanes.run($walk)
                }
            }
        }
    }};
}
pub(crate) use with_dequant;

/// Whether the calling thread's FP environment is the default (SPEC §10), so INT32
/// dequantization may use FP instructions; never an error (SPEC §12.2).
#[inline]
pub(crate) fn fp_ok() -> bool {
    super::arch::read_fp_control()
        .is_none_or(|control| super::arch::fp_control_ok(control, super::arch::FP_REJECT_ALL))
}

/// One part of a split tiled call: a range of the output's slowest axis, its output bytes.
#[derive(Debug)]
pub struct TiledPart<'a> {
    ranges: Ranges,
    out_base: usize,
    input: &'a [u8],
    output: &'a mut [u8],
}

/// A tiled output-side op (Detess, DetessCast, DetessDequant): what differs between them.
/// Their [`HostOp`] (prepared state, forced levels, spans, parts) is written once over it.
pub trait TiledOp: Op {
    /// Per-plan conversion data that `prepare` builds: none, or DetessDequant's table.
    type Conv: Clone + fmt::Debug + Send + Sync;

    /// The plan's tiled input, its dtype and the strided output.
    fn ports(plan: &Self::Plan) -> (&TiledView, DType, &View);

    /// Builds the conversion data of `plan`.
    fn conv(plan: &Self::Plan) -> Self::Conv;

    /// Runs `call` at the state's level with the plan's conversion.
    fn walk(state: &TiledState<Self>, call: TiledCall<'_>);
}

/// The prepared state of a tiled output-side op ([`HostOp::State`]): the plan, the level,
/// the geometry and the op's conversion data ([`TiledOp::Conv`]).
pub struct TiledState<O: TiledOp> {
    pub(crate) plan: O::Plan,
    pub(crate) lanes: Lanes,
    pub(crate) geometry: Geometry,
    pub(crate) conv: O::Conv,
}

impl<O: TiledOp> Clone for TiledState<O> {
    fn clone(&self) -> Self {
        TiledState {
            conv: self.conv.clone(),
            ..*self
        }
    }
}

impl<O: TiledOp> core::marker::Copy for TiledState<O> where O::Conv: core::marker::Copy {}

impl<O: TiledOp> fmt::Debug for TiledState<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TiledState")
            .field("plan", &self.plan)
            .field("lanes", &self.lanes)
            .field("geometry", &self.geometry)
            .field("conv", &self.conv)
            .finish()
    }
}

impl<O: TiledOp> TiledState<O> {
    fn new(plan: &O::Plan, lanes: Lanes) -> Self {
        let (input, _, output) = O::ports(plan);
        TiledState {
            plan: *plan,
            lanes,
            geometry: Geometry::new(input, output),
            conv: O::conv(plan),
        }
    }

    /// Runs the walk over `ranges` of the call's buffers.
    #[inline]
    fn walk(&self, input: &[u8], output: &mut [u8], out_base: usize, ranges: Ranges) {
        O::walk(
            self,
            TiledCall {
                g: &self.geometry,
                input,
                output,
                out_base,
                ranges,
            },
        );
    }
}

/// A tiled output-side op on the A65 (SPEC §12): tiled in, strided out, integer code only
/// (never an FP-environment check). Parts split the output's slowest axis; each owns one
/// contiguous range of output bytes.
impl<O: TiledOp> HostOp for O {
    type State = TiledState<O>;
    type Part<'a> = TiledPart<'a>;

    fn prepare(plan: &O::Plan) -> TiledState<O> {
        TiledState::new(plan, Lanes::auto())
    }

    fn prepare_at(plan: &O::Plan, level: Level) -> Result<TiledState<O>, LevelError> {
        let lanes = Lanes::at(level, O::NAME, O::ports(plan).1)?;
        Ok(TiledState::new(plan, lanes))
    }

    #[inline]
    fn plan(state: &TiledState<O>) -> &O::Plan {
        &state.plan
    }

    fn implementation(state: &TiledState<O>) -> &'static str {
        state.lanes.level().name()
    }

    fn level(state: &TiledState<O>) -> Level {
        state.lanes.level()
    }

    #[inline]
    fn needs(plan: &O::Plan) -> (PortNeed, PortNeed) {
        let (input, _, output) = O::ports(plan);
        needs(input, output)
    }

    #[inline]
    fn uses_fp(_state: &TiledState<O>) -> bool {
        false
    }

    fn run(state: &TiledState<O>, input: &[u8], output: &mut [u8]) {
        state.walk(input, output, 0, state.geometry.full());
    }

    fn partition<'a>(
        state: &TiledState<O>,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Vec<TiledPart<'a>> {
        let splits = state.geometry.split(parts);
        let starts: Vec<usize> = splits.iter().map(|s| s.1).collect();
        splits
            .into_iter()
            .zip(carve(output, &starts))
            .map(|((ranges, out_base), output)| TiledPart {
                ranges,
                out_base,
                input,
                output,
            })
            .collect()
    }

    fn run_part(state: &TiledState<O>, part: &mut TiledPart<'_>) {
        state.walk(part.input, part.output, part.out_base, part.ranges);
    }
}
