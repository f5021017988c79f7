//! The CastTess band kernel for 3-channel pixels (camera frames), written once over
//! [`BandLanes`]: a whole band of tiles in input order, 32-pixel blocks into whole output
//! lines, with non-temporal stores on whole cache lines for large outputs where the level
//! has them.
//!
//! A block of 32 pixels (96 elements) becomes 192 output bytes: three 64-byte lines. Its 96
//! BF16 values are first packed into three lines of the pixel-major stream
//! (`pack_line`: the conversions of `super::convert`), then split: output byte `j` (pixel
//! `j / 6`, plane `j % 6 / 3`, channel `j % 3`) comes from stream byte
//! `6·(j / 6) + 2·(j % 3) + j % 6 / 3`, at most 4 bytes before and 4 after `j`. Each level
//! does that split its own way ([`BandLanes::split3`]): one `vpermt2b` per line (AVX-512
//! VBMI), two in-lane byte shuffles of windows 4 bytes before and after each 16-byte lane
//! (AVX-512 BW, AVX2), or one three-register `TBL` per 16-byte register (NEON).
//!
//! With `stream`, the output is written with 64-byte non-temporal stores on whole cache
//! lines. A row that does not start on a line boundary shifts its lines
//! ([`Lines::align`]); the line it shares with the tile's next row is completed in a
//! carry when that row is written, so only a tile's first and last lines take partial
//! ordinary stores. The whole band is one call into the level's `#[target_feature]` entry.

use core::marker::PhantomData;

use simak_core::DType;
use simak_core::arith::quant::{FormatLift, InputFormat, lift_format};

use super::convert::{ConvertLanes, f16_lanes, f16_normal, f16_not_normal, round_pack};
use super::isa::{Isa, Kernel};
use super::tess::{Band, BandFn};

/// Pixels per block.
pub(crate) const BLOCK_PX: usize = 32;
/// Output bytes per block.
const BLOCK_OUT: usize = BLOCK_PX * 6;
/// W tiles of a band that keep a carry; further tiles store their shared lines partially.
const MAX_CARRY: usize = 64;

/// The stream byte of output byte `g` of a block: pixel `g / 6`, plane `g % 6 / 3`,
/// channel `g % 3`.
const fn source(g: usize) -> usize {
    6 * (g / 6) + 2 * (g % 3) + g % 6 / 3
}

/// In-lane byte-shuffle indexes for output bytes `g0 .. g0 + 64` of a block, each 16-byte
/// lane `j` (output bytes `16j ..`) picking from a window of the stream that starts at byte
/// `16j − back`: `source(g) − (16j − back)` when it lies in the window's 16 bytes, else
/// 0x80 (zero). With `second`, the window is the other one of the pair (from
/// `16j − back + 8`) and takes exactly the bytes the first one cannot. Every source byte
/// lies within 4 bytes of its output lane, so windows from `16j − 4` and `16j + 4` cover
/// every byte (the levels with 16-byte shuffles use `back = 4`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const fn window_pattern(g0: usize, back: usize, second: bool) -> [u8; 64] {
    let mut p = [0x80u8; 64];
    let mut i = 0;
    while i < 64 {
        let g = g0 + i;
        let first = source(g) + back - (g / 16 * 16);
        if first < 16 {
            if !second {
                p[i] = first as u8;
            }
        } else if second {
            p[i] = (first - 8) as u8;
        }
        i += 1;
    }
    p
}

/// Three-register table indexes (TBL) for output bytes `g0 .. g0 + 64`: each 16-byte lane
/// `j` picks from the stream's 48 bytes from `16j − 16`.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) const fn table_pattern(g0: usize) -> [u8; 64] {
    let mut p = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        let g = g0 + i;
        p[i] = (source(g) + 16 - g / 16 * 16) as u8;
        i += 1;
    }
    p
}

/// 64-byte lines in registers, on one level.
pub(crate) trait Lines: Copy {
    /// 64 bytes.
    type Line: Copy;

    /// Bytes `4·IMM .. 4·IMM + 64` of `lo` followed by `hi` (`IMM` in 4, 8, 12).
    fn align<const IMM: i32>(self, hi: Self::Line, lo: Self::Line) -> Self::Line;

    /// Loads a line.
    ///
    /// # Safety
    ///
    /// `ptr` valid for reading 64 bytes.
    unsafe fn load_line(self, ptr: *const u8) -> Self::Line;

    /// Stores a line, non-temporally when `nt`.
    ///
    /// # Safety
    ///
    /// `ptr` valid for writing 64 bytes, and 64-byte aligned when `nt`.
    unsafe fn store_line(self, ptr: *mut u8, v: Self::Line, nt: bool);

    /// Stores the first `n` bytes of a line (`n` in 16, 32, 48), ordinary stores.
    ///
    /// # Safety
    ///
    /// `ptr` valid for writing `n` bytes.
    unsafe fn store_head(self, ptr: *mut u8, v: Self::Line, n: usize);

    /// Orders earlier non-temporal stores before later stores.
    fn fence(self) {}
}

/// The line type of level `L`.
pub(crate) type LineOf<L> = <<L as BandLanes>::Lines as Lines>::Line;
/// The 16-bit lanes of level `L`'s conversions.
pub(crate) type U16Of<L> = <<L as BandLanes>::Convert as ConvertLanes>::U16;

/// One level's lanes for the band kernel: its conversions, its lines and its split.
pub(crate) trait BandLanes: Isa {
    /// The conversions' lanes (a level this one implies).
    type Convert: ConvertLanes;
    /// The lines' operations (a level this one implies).
    type Lines: Lines;
    /// `U16` vectors per line.
    const PARTS: usize;
    /// Whether the level writes streamed bands with non-temporal stores.
    const STREAMS: bool;

    /// The conversions' token.
    fn convert(self) -> Self::Convert;

    /// The lines' token.
    fn lines(self) -> Self::Lines;

    /// The line of `parts[..PARTS]`, in order.
    fn line(self, parts: [U16Of<Self>; 4]) -> LineOf<Self>;

    /// The three output lines of a block from its three stream lines.
    fn split3(self, p: [LineOf<Self>; 3]) -> [LineOf<Self>; 3];

    /// Converts and splits one block of `I` at `src` into its 192 bytes at `dst`, ordinary
    /// stores.
    ///
    /// # Safety
    ///
    /// `src` valid for reading `96 · I::SIZE` bytes, `dst` for writing 192 bytes.
    #[inline(always)]
    unsafe fn store_block<I: InputFormat>(self, src: *const u8, dst: *mut u8) {
        // SAFETY: the caller's contract.
        let o = unsafe { block::<Self, I>(self, src) };
        for (k, v) in o.into_iter().enumerate() {
            // SAFETY: line k of the block's 192 bytes.
            unsafe { self.lines().store_line(dst.wrapping_add(64 * k), v, false) };
        }
    }

    /// The last `px` pixels of a row (`px < 32`), nothing written past them: through a
    /// block on the stack.
    #[inline(always)]
    fn rest<I: InputFormat>(self, src: &[u8], dst: &mut [u8], px: usize) {
        let mut input = [0u8; 96 * 4];
        let mut out = [0u8; BLOCK_OUT];
        let (n_in, n_out) = (3 * px * I::SIZE, 6 * px);
        input[..n_in].copy_from_slice(&src[..n_in]);
        // SAFETY: the stack buffers hold a whole block's input and output.
        unsafe { self.store_block::<I>(input.as_ptr(), out.as_mut_ptr()) };
        dst[..n_out].copy_from_slice(&out[..n_out]);
    }
}

/// 32 elements of `I` at `src` as one line of BF16 values.
///
/// # Safety
///
/// `src` valid for reading `32 · I::SIZE` bytes.
#[inline(always)]
unsafe fn pack_line<L: BandLanes, I: InputFormat>(l: L, src: *const u8) -> LineOf<L> {
    let c = l.convert();
    let mut parts = [c.splat16(0); 4];
    let lanes = <L::Convert as ConvertLanes>::LANES;
    let step = 2 * lanes * I::SIZE;
    for (k, part) in parts.iter_mut().enumerate().take(L::PARTS) {
        let at = src.wrapping_add(k * step);
        *part = match I::DTYPE {
            DType::F32 => {
                // SAFETY: (both loads) part k of the line's 32 elements: `step` bytes from
                // `at`, inside the caller's 128.
                let a = unsafe { c.load32(at) };
                // SAFETY: as above.
                let b = unsafe { c.load32(at.wrapping_add(4 * lanes)) };
                round_pack(c, a, b)
            }
            // SAFETY: part k of the line's 32 elements, inside the caller's 64 bytes.
            DType::F16 => f16_lanes(c, unsafe { c.load16(at) }),
            // SAFETY: as above.
            _ => unsafe { c.load16(at) },
        };
    }
    l.line(parts)
}

/// The three output lines of the block of `I` at `src`.
///
/// # Safety
///
/// `src` valid for reading `96 · I::SIZE` bytes.
#[inline(always)]
pub(crate) unsafe fn block<L: BandLanes, I: InputFormat>(l: L, src: *const u8) -> [LineOf<L>; 3] {
    if matches!(I::DTYPE, DType::F16) {
        // SAFETY: the caller's contract (96 FP16 elements).
        return l.split3(unsafe { f16_lines(l, src) });
    }
    let third = 32 * I::SIZE;
    // SAFETY: the three thirds of the block's input.
    let p0 = unsafe { pack_line::<L, I>(l, src) };
    // SAFETY: as above.
    let p1 = unsafe { pack_line::<L, I>(l, src.wrapping_add(third)) };
    // SAFETY: as above.
    let p2 = unsafe { pack_line::<L, I>(l, src.wrapping_add(2 * third)) };
    l.split3([p0, p1, p2])
}

/// The three stream lines of the 96 FP16 elements at `src`: one check of every lane of the
/// block, then the all-normal conversion ([`f16_normal`]) of every vector without further
/// branches, or (some lane zero, subnormal, infinite or NaN) [`f16_lanes`] per vector.
///
/// # Safety
///
/// `src` valid for reading 192 bytes.
#[inline(always)]
unsafe fn f16_lines<L: BandLanes>(l: L, src: *const u8) -> [LineOf<L>; 3] {
    let c = l.convert();
    // Bytes per `U16` vector; `PARTS` of them make a 64-byte line.
    let step = 4 * <L::Convert as ConvertLanes>::LANES;
    let mut h = [[c.splat16(0); 4]; 3];
    let mut odd = false;
    // (Fixed-length loops over slices: fully unrolled, the vectors stay in registers.)
    for (k, line) in h.iter_mut().enumerate() {
        for (j, part) in line[..L::PARTS].iter_mut().enumerate() {
            // SAFETY: part j of line k: `step` bytes from 64k + j · step, inside the
            // caller's 192.
            *part = unsafe { c.load16(src.wrapping_add(64 * k + step * j)) };
            odd |= c.any(f16_not_normal(c, *part));
        }
    }
    if odd {
        for line in &mut h {
            for part in &mut line[..L::PARTS] {
                *part = f16_lanes(c, *part);
            }
        }
    } else {
        for line in &mut h {
            for part in &mut line[..L::PARTS] {
                *part = f16_normal(c, *part);
            }
        }
    }
    [l.line(h[0]), l.line(h[1]), l.line(h[2])]
}

/// Level `L`'s band kernel of a float `dtype`, or `None` when this CPU lacks the level.
pub(crate) fn band_fn<L: BandLanes>(dtype: DType) -> Option<BandFn> {
    struct Select<L>(PhantomData<L>);
    impl<L: BandLanes> FormatLift for Select<L> {
        type Output = BandFn;
        fn lift<I: InputFormat>(self) -> BandFn {
            band::<L, I>
        }
    }
    L::detect()?;
    lift_format(dtype, Select::<L>(PhantomData))
}

/// [`BandFn`] for 3-channel pixels (other channel counts: `false`).
fn band<L: BandLanes, I: InputFormat>(b: Band<'_>, tc: usize, stream: bool) -> bool {
    if tc != 3 || b.tiles == 0 || !(1..=b.tile_px).contains(&b.last_px) {
        return false;
    }
    let Some(l) = L::detect() else {
        return false;
    };
    let rows = b.td * b.th;
    if rows == 0 {
        return true;
    }
    // Last input byte: the last row's last pixel; last output byte: the last row of the
    // full tiles and of the last tile.
    let in_end = (b.td - 1)
        .checked_mul(b.sd)
        .and_then(|x| x.checked_add((b.th - 1).checked_mul(b.sh)?))
        .and_then(|x| {
            let px = (b.tiles - 1)
                .checked_mul(b.tile_px)?
                .checked_add(b.last_px)?;
            x.checked_add(px.checked_mul(3 * I::SIZE)?)
        });
    assert!(
        in_end.is_some_and(|n| n <= b.input.len()),
        "band past the input"
    );
    let row_end = |tile: usize, px: usize| {
        tile.checked_mul(b.tile_stride)
            .and_then(|x| x.checked_add(rows.checked_mul(6 * px)?))
    };
    let out_end = row_end(b.tiles - 1, b.last_px)
        .zip(if b.tiles > 1 {
            row_end(b.tiles - 2, b.tile_px)
        } else {
            Some(0)
        })
        .map(|(a, c)| a.max(c));
    assert!(
        out_end.is_some_and(|n| n <= b.out.len()),
        "band past the output"
    );
    l.vectorize(Rows::<I> {
        b,
        stream: stream && L::STREAMS,
        format: PhantomData,
    });
    true
}

/// Every row of a band (bounds proved by [`band`]), in one call into the level's
/// `#[target_feature]` entry: each row with the row kernel for its first line's offset.
struct Rows<'a, I> {
    b: Band<'a>,
    stream: bool,
    format: PhantomData<I>,
}

impl<L: BandLanes, I: InputFormat> Kernel<L> for Rows<'_, I> {
    type Output = ();

    #[inline(always)]
    fn run(self, l: L) {
        let (b, stream) = (self.b, self.stream);
        let rows = b.td * b.th;
        let mut carry = [[0u8; 64]; MAX_CARRY];
        let src0 = b.input.as_ptr();
        let dst0 = b.out.as_mut_ptr();
        for k in 0..rows {
            let row = (k / b.th) * b.sd + (k % b.th) * b.sh;
            for iw in 0..b.tiles {
                let px = if iw + 1 == b.tiles {
                    b.last_px
                } else {
                    b.tile_px
                };
                let src = src0.wrapping_add(row + iw * b.tile_px * 3 * I::SIZE);
                let dst = dst0.wrapping_add(iw * b.tile_stride + k * 6 * px);
                // A tile's rows share lines only when each row is whole blocks (then every
                // row of the tile has the same offset in its first line).
                let slot = carry.get_mut(iw).filter(|_| px % BLOCK_PX == 0);
                let edges = Edges {
                    first: k == 0,
                    last: k + 1 == rows,
                };
                macro_rules! row {
                    ($mode:literal) => {
                        Kernel::<L>::run(
                            Row::<I, $mode> {
                                src,
                                dst,
                                px,
                                carry: slot,
                                edges,
                                format: PhantomData,
                            },
                            l,
                        )
                    };
                }
                match (stream, dst as usize % 64) {
                    (true, 0) => row!(16),
                    (true, 16) => row!(12),
                    (true, 32) => row!(8),
                    (true, 48) => row!(4),
                    // Rows off the 16-byte grid (tiles whose pixel count is not a multiple
                    // of 8), or not streamed: ordinary stores.
                    _ => row!(0),
                }
            }
        }
        if stream {
            // Non-temporal stores are weakly ordered: order them before the caller's next
            // stores (a completion flag, another thread's reads).
            l.lines().fence();
        }
    }
}

/// Whether a row is its tile's first and last.
#[derive(Clone, Copy)]
struct Edges {
    first: bool,
    last: bool,
}

/// One row of `px` pixels: `src` readable for `3 · px · I::SIZE` bytes and `dst` writable
/// for `6 · px` (proved by [`band`] for every row [`Rows`] makes).
///
/// `MODE` 0: ordinary stores. Otherwise non-temporal stores on whole lines with
/// `dst % 64 = 64 − 4·MODE` (`MODE = 16`: aligned); `carry` holds the tile's line shared
/// with the previous row (on entry, unless `first`) and receives the one shared with the
/// next (unless `last`); without a carry, shared lines take partial ordinary stores. With
/// a carry and not `first`, the `64 − 4·MODE` bytes before `dst` belong to the tile's
/// previous row, written by the previous row with the same carry.
struct Row<'a, I, const MODE: i32> {
    src: *const u8,
    dst: *mut u8,
    px: usize,
    carry: Option<&'a mut [u8; 64]>,
    edges: Edges,
    format: PhantomData<I>,
}

impl<L: BandLanes, I: InputFormat, const MODE: i32> Kernel<L> for Row<'_, I, MODE> {
    type Output = ();

    #[inline(always)]
    fn run(self, l: L) {
        let w = l.lines();
        let (src, dst, px) = (self.src, self.dst, self.px);
        let blocks = px / BLOCK_PX;
        let block_in = BLOCK_PX * 3 * I::SIZE;
        if MODE == 0 {
            for i in 0..blocks {
                // SAFETY: block i's input and 192 output bytes lie in the row.
                unsafe {
                    l.store_block::<I>(
                        src.wrapping_add(i * block_in),
                        dst.wrapping_add(i * BLOCK_OUT),
                    )
                };
            }
        } else if MODE == 16 {
            for i in 0..blocks {
                // SAFETY: block i's input lies in the row.
                let o = unsafe { block::<L, I>(l, src.wrapping_add(i * block_in)) };
                for (k, v) in o.into_iter().enumerate() {
                    // SAFETY: block i's 192 output bytes lie in the row; they are three
                    // whole lines (`dst` is 64-byte aligned, MODE = 16).
                    unsafe { w.store_line(dst.wrapping_add(i * BLOCK_OUT + 64 * k), v, true) };
                }
            }
        } else if blocks > 0 {
            // `head` bytes of the row fill the rest of its first line; line L of the row
            // (from the second) holds output bytes 64L − m.. (m = 64 − head).
            let head = 4 * MODE as usize;
            let m = 64 - head;
            let line = dst.wrapping_add(head);
            let tail = px % BLOCK_PX > 0;
            // SAFETY: block 0's input lies in the row.
            let o = unsafe { block::<L, I>(l, src) };
            match (&self.carry, self.edges.first) {
                (Some(c), false) => {
                    // SAFETY: the carry is 64 readable bytes.
                    let c = unsafe { w.load_line(c.as_ptr()) };
                    let first = w.align::<MODE>(o[0], c);
                    // SAFETY: the line before `line` starts m bytes before `dst`: its first
                    // m bytes are the previous row's (the carry's top m bytes, contract), so
                    // the whole aligned line is this tile's.
                    unsafe { w.store_line(dst.wrapping_sub(m), first, true) };
                }
                // SAFETY: the first `head` bytes at `dst` are the row's.
                _ => unsafe { w.store_head(dst, o[0], head) },
            }
            let (one, two) = (w.align::<MODE>(o[1], o[0]), w.align::<MODE>(o[2], o[1]));
            // SAFETY: lines 1 and 2 of the row (output bytes head .. head + 128) lie in
            // block 0's 192 bytes; `line` is 64-byte aligned.
            unsafe { w.store_line(line, one, true) };
            // SAFETY: as above.
            unsafe { w.store_line(line.wrapping_add(64), two, true) };
            let mut prev = o[2];
            for i in 1..blocks {
                // SAFETY: block i's input lies in the row.
                let o = unsafe { block::<L, I>(l, src.wrapping_add(i * block_in)) };
                let lines = [
                    w.align::<MODE>(o[0], prev),
                    w.align::<MODE>(o[1], o[0]),
                    w.align::<MODE>(o[2], o[1]),
                ];
                for (k, v) in lines.into_iter().enumerate() {
                    let at = line.wrapping_add(i * BLOCK_OUT - 64 + 64 * k);
                    // SAFETY: the three aligned lines from output byte 192i − m (up to
                    // 192i + 192 − m) lie in the row; `at` is 64-byte aligned.
                    unsafe { w.store_line(at, v, true) };
                }
                prev = o[2];
            }
            match self.carry {
                // SAFETY: the carry is 64 writable bytes.
                Some(c) if !self.edges.last && !tail => unsafe {
                    w.store_line(c.as_mut_ptr(), prev, false)
                },
                _ => {
                    // The last m bytes of the blocks' output: the top of `prev` shifted down.
                    let end = dst.wrapping_add(blocks * BLOCK_OUT - m);
                    let v = w.align::<MODE>(prev, prev);
                    // SAFETY: the m bytes from `end` are the row's.
                    unsafe { w.store_head(end, v, m) };
                }
            }
        }
        let rest = px % BLOCK_PX;
        if rest > 0 {
            let at = px - rest;
            let (n_in, n_out) = (3 * rest * I::SIZE, 6 * rest);
            // SAFETY: pixels `at..px` of the row: their input lies in it.
            let rest_in =
                unsafe { core::slice::from_raw_parts(src.wrapping_add(at * 3 * I::SIZE), n_in) };
            // SAFETY: their output lies in the row, and no other reference to it is live.
            let rest_out =
                unsafe { core::slice::from_raw_parts_mut(dst.wrapping_add(at * 6), n_out) };
            l.rest::<I>(rest_in, rest_out, rest);
        }
    }
}
