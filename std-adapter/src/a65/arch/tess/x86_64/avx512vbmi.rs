//! AVX-512 VBMI fused CastTess rows: conversion and byte-plane split in registers for
//! compact pixels of 2..=8 channels, straight from the input rows into the tiled output.
//!
//! One step covers `⌊64 / 2tc⌋` whole pixels (at most 64 output bytes): the step's input
//! elements are loaded with byte masks (FP32: two 512-bit loads; FP16 and BF16: one),
//! converted in 32- or 16-bit lanes with the integer code of the AVX-512 level (SPEC §4),
//! and a single `vpermt2b` / `vpermb` picks every output byte of the step (for FP32 the
//! BF16 value is bytes 2 and 3 of the rounded 32-bit lane, so no narrowing is needed).
//! Whole steps use whole-vector loads and stores (a store's bytes past its step are
//! rewritten by the next step); the last steps of a row use byte-masked loads and stores,
//! so row tails need no scalar code, nothing past a row's output is written, and
//! masked-off load bytes are never accessed.
//!
//! The safe wrappers here are handed out only by `super::kernels` after runtime detection
//! of AVX-512F, AVX-512BW and AVX-512VBMI, so their calls into `#[target_feature]` code are
//! sound by construction.

use core::arch::x86_64::*;

use simak_core::DType;

use super::super::{Band, BandFn, Rows, RowsFn};
use super::avx512;

/// Largest channel count of the fused path.
const MAX_TC: usize = 8;

/// Whole pixels per 64-byte output step for `tc` channels.
const fn per_step(tc: usize) -> usize {
    64 / (2 * tc)
}

/// Byte permutation of one step: output byte `j` (pixel `j / 2tc`, plane `(j % 2tc) / tc`,
/// channel `j % tc`) comes from element `e = pixel · tc + channel`, at byte
/// `lane · e + first + plane` of the step's source bytes. Bytes past the step's pixels
/// select byte 0 (they are never stored).
const fn index(tc: usize, lane: usize, first: usize) -> [u8; 64] {
    let mut p = [0u8; 64];
    if tc == 0 {
        return p;
    }
    let pb = 2 * tc;
    let n = per_step(tc) * pb;
    let mut j = 0;
    while j < n {
        let px = j / pb;
        let r = j % pb;
        let e = px * tc + r % tc;
        p[j] = (lane * e + first + r / tc) as u8;
        j += 1;
    }
    p
}

/// Indexes of `f(tc)` for `tc` in 0..=MAX_TC (0 and 1 unused).
const fn table(lane: usize, first: usize) -> [[u8; 64]; MAX_TC + 1] {
    let mut t = [[0u8; 64]; MAX_TC + 1];
    let mut tc = 2;
    while tc <= MAX_TC {
        t[tc] = index(tc, lane, first);
        tc += 1;
    }
    t
}

/// FP32 steps: bytes 2 and 3 of each rounded 32-bit lane, over 128 source bytes.
static F32_INDEX: [[u8; 64]; MAX_TC + 1] = table(4, 2);
/// FP16 and BF16 steps: the BF16 pair of each 16-bit lane, over 64 source bytes.
static B16_INDEX: [[u8; 64]; MAX_TC + 1] = table(2, 0);

/// The fused rows of a float `dtype`.
pub(super) fn rows_fn(dtype: DType) -> RowsFn {
    match dtype {
        DType::F32 => rows_f32,
        DType::F16 => rows_f16,
        _ => rows_bf16,
    }
}

/// Bounds of [`RowsFn`]: input and output bytes per row, or `None` when `tc` is not a
/// fused channel count. Panics when a row lies past `input` or `out`.
fn geometry(a: &Rows<'_>, tc: usize, elem: usize) -> Option<(usize, usize)> {
    if !(2..=MAX_TC).contains(&tc) {
        return None;
    }
    let row_in = a.row_px * tc * elem;
    let row_out = a.row_px * tc * 2;
    if a.rows > 0 && a.row_px > 0 {
        let end = |stride: usize, len: usize| {
            (a.rows - 1)
                .checked_mul(stride)
                .and_then(|s| s.checked_add(len))
        };
        assert!(
            end(a.in_stride, row_in).is_some_and(|n| n <= a.input.len()),
            "rows past the input"
        );
        assert!(
            end(a.out_stride, row_out).is_some_and(|n| n <= a.out.len()),
            "rows past the output"
        );
    }
    Some((row_in, row_out))
}

macro_rules! rows_fn {
    ($name:ident, $elem:literal, $body:expr) => {
        fn $name(a: Rows<'_>, tc: usize) -> bool {
            let Some((row_in, _)) = geometry(&a, tc, $elem) else {
                return false;
            };
            if a.row_px == 0 {
                return true;
            }
            for r in 0..a.rows {
                // SAFETY: AVX-512F/BW/VBMI detected (module doc); `geometry` proved row
                // `r`'s input bytes at `r · in_stride` lie in `input` and its output bytes
                // at `r · out_stride` lie in `out`.
                unsafe {
                    $body(
                        a.input.as_ptr().wrapping_add(r * a.in_stride),
                        a.out.as_mut_ptr().wrapping_add(r * a.out_stride),
                        tc,
                        row_in,
                    )
                };
            }
            true
        }
    };
}

rows_fn!(rows_f32, 4, row_f32_body);
rows_fn!(rows_f16, 2, row_b16_body::<true>);
rows_fn!(rows_bf16, 2, row_b16_body::<false>);

/// Byte mask of the first `n` bytes of a 64-byte vector (`n` clamped to 64).
#[inline(always)]
fn mask(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// One row of FP32 pixels: `row_in` input bytes (a whole number of pixels of `tc` channels)
/// to `row_in / 2` output bytes.
///
/// # Safety
///
/// AVX-512F/BW/VBMI available; `2 ≤ tc ≤ 8`; `src` valid for reading `row_in` bytes, `dst`
/// for writing `row_in / 2` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn row_f32_body(src: *const u8, dst: *mut u8, tc: usize, row_in: usize) {
    // SAFETY: a table entry is 64 readable bytes.
    let idx = unsafe { _mm512_loadu_si512(F32_INDEX[tc].as_ptr().cast()) };
    let in_step = per_step(tc) * tc * 4;
    let one = _mm512_set1_epi32(1);
    let bias = _mm512_set1_epi32(0x7fff);
    let mut at = 0;
    let round = |x: __m512i| {
        _mm512_add_epi32(
            _mm512_add_epi32(x, bias),
            _mm512_and_si512(_mm512_srli_epi32::<16>(x), one),
        )
    };
    // Whole steps with whole vectors: the store's bytes past the step are rewritten by the
    // next step or by the tail.
    while at + 128 <= row_in {
        let from = src.wrapping_add(at);
        // SAFETY: at + 128 ≤ row_in: 128 readable bytes.
        let a = unsafe { _mm512_loadu_si512(from.cast()) };
        // SAFETY: as above.
        let b = unsafe { _mm512_loadu_si512(from.wrapping_add(64).cast()) };
        let v = _mm512_permutex2var_epi8(round(a), idx, round(b));
        // SAFETY: at / 2 + 64 ≤ row_in / 2: 64 writable bytes.
        unsafe { _mm512_storeu_si512(dst.wrapping_add(at / 2).cast(), v) };
        at += in_step;
    }
    while at < row_in {
        let left = row_in - at;
        let (m0, m1) = (mask(left), mask(left.saturating_sub(64)));
        let from = src.wrapping_add(at);
        // SAFETY: the mask selects bytes below `row_in - at`, all inside `src`'s row;
        // masked-off bytes are not accessed.
        let a = unsafe { _mm512_maskz_loadu_epi8(m0, from.cast()) };
        // SAFETY: as above, for bytes 64.. of the step.
        let b = unsafe { _mm512_maskz_loadu_epi8(m1, from.wrapping_add(64).cast()) };
        let v = _mm512_permutex2var_epi8(round(a), idx, round(b));
        let n = in_step.min(left);
        // SAFETY: the mask selects the step's `n / 2` output bytes, inside `dst`'s row.
        unsafe { _mm512_mask_storeu_epi8(dst.wrapping_add(at / 2).cast(), mask(n / 2), v) };
        at += in_step;
    }
}

/// One row of 16-bit pixels (FP16 when `F16`, else BF16): `row_in` input bytes to as many
/// output bytes.
///
/// # Safety
///
/// AVX-512F/BW/VBMI available; `2 ≤ tc ≤ 8`; `src` valid for reading `row_in` bytes, `dst`
/// for writing `row_in` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn row_b16_body<const F16: bool>(src: *const u8, dst: *mut u8, tc: usize, row_in: usize) {
    // SAFETY: a table entry is 64 readable bytes.
    let idx = unsafe { _mm512_loadu_si512(B16_INDEX[tc].as_ptr().cast()) };
    let step = per_step(tc) * tc * 2;
    let convert = |h: __m512i| if F16 { avx512::f16_lanes(h) } else { h };
    let mut at = 0;
    // Whole steps with whole vectors: the store's bytes past the step are rewritten by the
    // next step or by the tail.
    while at + 64 <= row_in {
        // SAFETY: at + 64 ≤ row_in: 64 readable bytes.
        let h = unsafe { _mm512_loadu_si512(src.wrapping_add(at).cast()) };
        let v = _mm512_permutexvar_epi8(idx, convert(h));
        // SAFETY: at + 64 ≤ row_in: 64 writable bytes.
        unsafe { _mm512_storeu_si512(dst.wrapping_add(at).cast(), v) };
        at += step;
    }
    let full = mask(step);
    while at < row_in {
        let m = if row_in - at >= step {
            full
        } else {
            mask(row_in - at)
        };
        // SAFETY: the mask selects bytes below `row_in - at`, inside `src`'s row.
        let h = unsafe { _mm512_maskz_loadu_epi8(m, src.wrapping_add(at).cast()) };
        let v = _mm512_permutexvar_epi8(idx, convert(h));
        // SAFETY: the same bytes of `dst`'s row.
        unsafe { _mm512_mask_storeu_epi8(dst.wrapping_add(at).cast(), m, v) };
        at += step;
    }
}

// ---------------------------------------------------------------------------------------
// Bands of 3-channel pixels (camera frames): 32-pixel blocks, aligned and streaming stores.
//
// A block of 32 pixels (96 elements) becomes 192 output bytes: three whole vectors. Its 96
// BF16 values are first packed into three vectors `p0..p2` (FP32: the high halves of the
// rounded lanes, one `vpermt2w` per two input vectors; FP16/BF16: the loads themselves),
// the stream of pixel-major values. Output byte `j` (pixel `j / 6`, plane `j % 6 / 3`,
// channel `j % 3`) comes from stream byte `6·(j / 6) + 2·(j % 3) + j % 6 / 3`, at most 5
// bytes before and 4 after `j`; so output vector `k` takes one `vpermt2b` over the two
// vectors that start 8 bytes before it (`valignq` of neighbours) — or at 0 for `k = 0`.
//
// With `stream`, the output is written with 64-byte non-temporal stores on whole cache
// lines. A row that does not start on a line boundary shifts its vectors with `valignd`;
// the line it shares with the tile's next row is completed in a register (the carry) when
// that row is written, so only a tile's first and last lines take masked ordinary stores.
// ---------------------------------------------------------------------------------------

/// Pixels per block.
const BLOCK_PX: usize = 32;
/// Output bytes per block.
const BLOCK_OUT: usize = BLOCK_PX * 6;
/// W tiles of a band that keep a carry; further tiles store their shared lines masked.
const MAX_CARRY: usize = 64;

/// `vpermt2b` indexes of output vector `k` (0..3) of a block, relative to its window.
const fn block_index(k: usize) -> [u8; 64] {
    let window = if k == 0 { 0 } else { 64 * k - 8 };
    let mut p = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        let j = 64 * k + i;
        let r = j % 6;
        p[i] = (6 * (j / 6) + 2 * (r % 3) + r / 3 - window) as u8;
        i += 1;
    }
    p
}

static BLOCK_INDEX: [[u8; 64]; 3] = [block_index(0), block_index(1), block_index(2)];

/// `vpermt2w` indexes of the high 16 bits of the 32 lanes of two vectors.
static HIGH_WORDS: [u16; 32] = {
    let mut p = [0u16; 32];
    let mut i = 0;
    while i < 32 {
        p[i] = (2 * i + 1) as u16;
        i += 1;
    }
    p
};

/// The three output vectors of a block from its packed BF16 stream `p0..p2`.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
fn split_block(p0: __m512i, p1: __m512i, p2: __m512i) -> [__m512i; 3] {
    // SAFETY: each table entry is 64 readable bytes.
    let idx = |k: usize| unsafe { _mm512_loadu_si512(BLOCK_INDEX[k].as_ptr().cast()) };
    let a1 = _mm512_alignr_epi64::<7>(p1, p0);
    let a2 = _mm512_alignr_epi64::<7>(p2, p1);
    let a3 = _mm512_alignr_epi64::<7>(p2, p2);
    [
        _mm512_permutex2var_epi8(p0, idx(0), p1),
        _mm512_permutex2var_epi8(a1, idx(1), a2),
        _mm512_permutex2var_epi8(a2, idx(2), a3),
    ]
}

/// The input of a block: FP32 (`E = 4`), FP16 or BF16 (`E = 2`).
trait BlockInput {
    /// Bytes per element.
    const E: usize;
    /// The three output vectors of the block at `src`.
    ///
    /// # Safety
    ///
    /// AVX-512F/BW/VBMI available; `src` valid for reading `96 · E` bytes.
    unsafe fn block(src: *const u8) -> [__m512i; 3];
    /// A row tail of `bytes` input bytes (fewer than a block) with the step kernels.
    ///
    /// # Safety
    ///
    /// As the row bodies: `src` readable for `bytes`, `dst` writable for the output.
    unsafe fn tail(src: *const u8, dst: *mut u8, bytes: usize);
}

/// FP32 blocks.
struct F32Block;
/// 16-bit blocks: FP16 when `F16`, else BF16.
struct B16Block<const F16: bool>;

impl BlockInput for F32Block {
    const E: usize = 4;
    #[inline(always)]
    unsafe fn block(src: *const u8) -> [__m512i; 3] {
        // SAFETY: the caller's contract (features detected, 384 readable bytes).
        unsafe { block_f32(src) }
    }
    #[inline(always)]
    unsafe fn tail(src: *const u8, dst: *mut u8, bytes: usize) {
        // SAFETY: the caller's contract.
        unsafe { row_f32_body(src, dst, 3, bytes) }
    }
}

impl<const F16: bool> BlockInput for B16Block<F16> {
    const E: usize = 2;
    #[inline(always)]
    unsafe fn block(src: *const u8) -> [__m512i; 3] {
        // SAFETY: the caller's contract (features detected, 192 readable bytes).
        unsafe { block_b16::<F16>(src) }
    }
    #[inline(always)]
    unsafe fn tail(src: *const u8, dst: *mut u8, bytes: usize) {
        // SAFETY: the caller's contract.
        unsafe { row_b16_body::<F16>(src, dst, 3, bytes) }
    }
}

/// A block of 96 FP32 elements: rounded (SPEC §4), packed to BF16, split.
///
/// # Safety
///
/// AVX-512F/BW/VBMI available; `src` valid for reading 384 bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
unsafe fn block_f32(src: *const u8) -> [__m512i; 3] {
    let one = _mm512_set1_epi32(1);
    let bias = _mm512_set1_epi32(0x7fff);
    // SAFETY: the table is 64 readable bytes.
    let high = unsafe { _mm512_loadu_si512(HIGH_WORDS.as_ptr().cast()) };
    let rounded = |i: usize| {
        // SAFETY: i < 6: bytes 64i..64i + 64 of the block's 384.
        let x = unsafe { _mm512_loadu_si512(src.wrapping_add(64 * i).cast()) };
        _mm512_add_epi32(
            _mm512_add_epi32(x, bias),
            _mm512_and_si512(_mm512_srli_epi32::<16>(x), one),
        )
    };
    let p0 = _mm512_permutex2var_epi16(rounded(0), high, rounded(1));
    let p1 = _mm512_permutex2var_epi16(rounded(2), high, rounded(3));
    let p2 = _mm512_permutex2var_epi16(rounded(4), high, rounded(5));
    split_block(p0, p1, p2)
}

/// A block of 96 16-bit elements (FP16 when `F16`, else BF16): converted, split.
///
/// # Safety
///
/// AVX-512F/BW/VBMI available; `src` valid for reading 192 bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
unsafe fn block_b16<const F16: bool>(src: *const u8) -> [__m512i; 3] {
    let load = |i: usize| {
        // SAFETY: i < 3: bytes 64i..64i + 64 of the block's 192.
        let h = unsafe { _mm512_loadu_si512(src.wrapping_add(64 * i).cast()) };
        if F16 { avx512::f16_lanes(h) } else { h }
    };
    split_block(load(0), load(1), load(2))
}

/// The band kernel of a float `dtype`.
pub(super) fn band_fn(dtype: DType) -> BandFn {
    match dtype {
        DType::F32 => band::<F32Block>,
        DType::F16 => band::<B16Block<true>>,
        _ => band::<B16Block<false>>,
    }
}

/// [`BandFn`] for 3-channel pixels (other channel counts: `false`).
fn band<B: BlockInput>(mut b: Band<'_>, tc: usize, stream: bool) -> bool {
    if tc != 3 || b.tiles == 0 || !(1..=b.tile_px).contains(&b.last_px) {
        return false;
    }
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
            x.checked_add(px.checked_mul(3 * B::E)?)
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
    // SAFETY: AVX-512F/BW/VBMI detected (module doc); every row read and written lies
    // inside `input` and `out` (asserted above with checked arithmetic).
    unsafe { band_body::<B>(&mut b, stream) };
    true
}

/// Writes every row of the band (bounds proved by [`band`]).
///
/// # Safety
///
/// AVX-512F/BW/VBMI available; the band's rows lie inside its `input` and `out`.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn band_body<B: BlockInput>(b: &mut Band<'_>, stream: bool) {
    let rows = b.td * b.th;
    let mut carry = [_mm512_setzero_si512(); MAX_CARRY];
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
            let src = src0.wrapping_add(row + iw * b.tile_px * 3 * B::E);
            let dst = dst0.wrapping_add(iw * b.tile_stride + k * 6 * px);
            // A tile's rows share lines only when each row is whole blocks (then every row
            // of the tile has the same offset in its first line).
            let slot = carry.get_mut(iw).filter(|_| px % BLOCK_PX == 0);
            let edges = Edges {
                first: k == 0,
                last: k + 1 == rows,
            };
            if !stream {
                // SAFETY: the caller's contract: this row's input and output lie in the band.
                unsafe { segment_stored::<B>(src, dst, px, slot, edges) };
                continue;
            }
            let kernel: Segment = match dst as usize % 64 {
                0 => segment_streamed::<B, 16>,
                16 => segment_streamed::<B, 12>,
                32 => segment_streamed::<B, 8>,
                48 => segment_streamed::<B, 4>,
                // Rows off the 16-byte grid (tiles whose pixel count is not a multiple of
                // 8): ordinary stores.
                _ => segment_stored::<B>,
            };
            // SAFETY: the caller's contract: this row's input and output lie in the band;
            // a streaming kernel is picked for the row's offset in its first line; the
            // carry of tile `iw` goes only to the rows of tile `iw`, in order.
            unsafe { kernel(src, dst, px, slot, edges) };
        }
    }
    if stream {
        // Non-temporal stores are weakly ordered: order them before the caller's next
        // stores (a completion flag, another thread's reads).
        _mm_sfence();
    }
}

/// A row kernel: input, output, pixels, the tile's carry, the row's place in its tile.
type Segment = unsafe fn(*const u8, *mut u8, usize, Option<&mut __m512i>, Edges);

/// Whether a row is its tile's first and last.
#[derive(Clone, Copy)]
struct Edges {
    first: bool,
    last: bool,
}

/// One row of `px` pixels with ordinary unaligned stores (no carry needed).
///
/// # Safety
///
/// AVX-512F/BW/VBMI available; `src` readable for `3 · E · px` bytes, `dst` writable for
/// `6 · px`.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
unsafe fn segment_stored<B: BlockInput>(
    src: *const u8,
    dst: *mut u8,
    px: usize,
    _carry: Option<&mut __m512i>,
    _edges: Edges,
) {
    let blocks = px / BLOCK_PX;
    for i in 0..blocks {
        // SAFETY: block i's input lies in the row.
        let o = unsafe { B::block(src.wrapping_add(i * BLOCK_PX * 3 * B::E)) };
        // SAFETY: block i's 192 output bytes lie in the row.
        unsafe { store3::<false>(dst.wrapping_add(i * BLOCK_OUT), o) };
    }
    // SAFETY: the row's `px` pixels lie at `src` and `dst` (this function's contract).
    unsafe { row_rest::<B>(src, dst, px) };
}

/// One row of `px` pixels with streaming stores on whole lines; `dst % 64 = 64 − 4·IMM`
/// (`IMM = 16`: aligned). `carry` holds the tile's line shared with the previous row (on
/// entry, unless `first`) and receives the one shared with the next (unless `last`); without
/// a carry, shared lines take masked ordinary stores.
///
/// # Safety
///
/// AVX-512F/BW/VBMI available; `src` readable for `3 · E · px` bytes, `dst` writable for
/// `6 · px`; with a carry and not `first`, the `64 − 4·IMM` bytes before `dst` belong to the
/// tile's previous row, written by the previous call with the same carry.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn segment_streamed<B: BlockInput, const IMM: i32>(
    src: *const u8,
    dst: *mut u8,
    px: usize,
    carry: Option<&mut __m512i>,
    edges: Edges,
) {
    let blocks = px / BLOCK_PX;
    if IMM == 16 {
        for i in 0..blocks {
            // SAFETY: block i's input lies in the row.
            let o = unsafe { B::block(src.wrapping_add(i * BLOCK_PX * 3 * B::E)) };
            // SAFETY: block i's 192 output bytes lie in the row; they are three whole
            // lines (`dst` is 64-byte aligned, IMM = 16).
            unsafe { store3::<true>(dst.wrapping_add(i * BLOCK_OUT), o) };
        }
    } else if blocks > 0 {
        // `head` bytes of the row fill the rest of its first line; line L of the row (from
        // the second) holds output bytes 64L − m.. (m = 64 − head).
        let head = 4 * IMM as usize;
        let m = 64 - head;
        let line = dst.wrapping_add(head);
        let tail = rest_of(px) > 0;
        // SAFETY: block 0's input lies in the row.
        let o = unsafe { B::block(src) };
        match (&carry, edges.first) {
            (Some(c), false) => {
                let first = _mm512_alignr_epi32::<IMM>(o[0], **c);
                // SAFETY: the line before `line` starts m bytes before `dst`: its first m
                // bytes are the previous row's (the carry's top m bytes, contract), so the
                // whole aligned line is this tile's.
                unsafe { _mm512_stream_si512(dst.wrapping_sub(m).cast(), first) };
            }
            // SAFETY: the first `head` bytes at `dst` are the row's.
            _ => unsafe { _mm512_mask_storeu_epi8(dst.cast(), mask(head), o[0]) },
        }
        let (one, two) = (
            _mm512_alignr_epi32::<IMM>(o[1], o[0]),
            _mm512_alignr_epi32::<IMM>(o[2], o[1]),
        );
        // SAFETY: lines 1 and 2 of the row (output bytes head .. head + 128) lie in block
        // 0's 192 bytes; `line` is 64-byte aligned.
        unsafe { stream2(line, one, two) };
        let mut prev = o[2];
        for i in 1..blocks {
            // SAFETY: block i's input lies in the row.
            let o = unsafe { B::block(src.wrapping_add(i * BLOCK_PX * 3 * B::E)) };
            let lines = [
                _mm512_alignr_epi32::<IMM>(o[0], prev),
                _mm512_alignr_epi32::<IMM>(o[1], o[0]),
                _mm512_alignr_epi32::<IMM>(o[2], o[1]),
            ];
            // SAFETY: the three aligned lines from output byte 192i − m (up to 192i + 192
            // − m) lie in the row.
            unsafe { store3::<true>(line.wrapping_add(i * BLOCK_OUT - 64), lines) };
            prev = o[2];
        }
        match carry {
            Some(c) if !edges.last && !tail => *c = prev,
            _ => {
                let end = dst.wrapping_add(blocks * BLOCK_OUT - m);
                let v = _mm512_alignr_epi32::<IMM>(_mm512_setzero_si512(), prev);
                // SAFETY: the last m bytes of the blocks' output.
                unsafe { _mm512_mask_storeu_epi8(end.cast(), mask(m), v) };
            }
        }
    }
    // SAFETY: the row's `px` pixels lie at `src` and `dst` (this function's contract).
    unsafe { row_rest::<B>(src, dst, px) };
}

/// Stores three vectors at `d`, `d + 64` and `d + 128`; non-temporal when `NT`.
///
/// # Safety
///
/// AVX-512F available; `d` writable for 192 bytes, and 64-byte aligned when `NT`.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn store3<const NT: bool>(d: *mut u8, v: [__m512i; 3]) {
    for (k, x) in v.into_iter().enumerate() {
        let at = d.wrapping_add(64 * k).cast();
        if NT {
            // SAFETY: the caller's contract: 64 writable, aligned bytes at `at`.
            unsafe { _mm512_stream_si512(at, x) };
        } else {
            // SAFETY: the caller's contract: 64 writable bytes at `at`.
            unsafe { _mm512_storeu_si512(at, x) };
        }
    }
}

/// Streams two vectors to the lines at `d` and `d + 64`.
///
/// # Safety
///
/// AVX-512F available; `d` 64-byte aligned and writable for 128 bytes.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn stream2(d: *mut u8, a: __m512i, b: __m512i) {
    // SAFETY: the caller's contract: the first line.
    unsafe { _mm512_stream_si512(d.cast(), a) };
    // SAFETY: the caller's contract: the second line.
    unsafe { _mm512_stream_si512(d.wrapping_add(64).cast(), b) };
}

/// Pixels of a row past its whole blocks.
const fn rest_of(px: usize) -> usize {
    px % BLOCK_PX
}

/// The pixels of a row of `px` past its whole blocks, with the step kernels (nothing when
/// `px` is a multiple of [`BLOCK_PX`]).
///
/// # Safety
///
/// AVX-512F/BW/VBMI available; `src` readable for `3 · E · px` bytes and `dst` writable
/// for `6 · px` (the whole row).
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
#[inline]
unsafe fn row_rest<B: BlockInput>(src: *const u8, dst: *mut u8, px: usize) {
    let rest = rest_of(px);
    if rest > 0 {
        let at = px - rest;
        // SAFETY: pixels `at..px` of the row: their input and output lie in it.
        unsafe {
            B::tail(
                src.wrapping_add(at * 3 * B::E),
                dst.wrapping_add(at * 6),
                rest * 3 * B::E,
            )
        };
    }
}

#[cfg(test)]
mod test {
    use super::{B16_INDEX, BLOCK_INDEX, F32_INDEX};

    #[test]
    fn block_indexes_stay_in_their_windows() {
        // Pixel 0: [l0 l1 l2 h0 h1 h2] from stream bytes [0 2 4 1 3 5].
        assert_eq!(BLOCK_INDEX[0][..6], [0, 2, 4, 1, 3, 5]);
        // Output byte 64 is pixel 10's h1: stream byte 60 + 3 = 63, window from 56.
        assert_eq!(BLOCK_INDEX[1][0], 63 - 56);
        // Output byte 191 is pixel 31's h2: stream byte 191, window from 120.
        assert_eq!(BLOCK_INDEX[2][63], 191 - 120);
        assert!(BLOCK_INDEX.iter().flatten().all(|&i| i < 128));
    }

    #[test]
    fn indexes_follow_the_pixel_layout() {
        // tc = 3: pixel [l0 l1 l2 h0 h1 h2]; FP32 lane e's BF16 is bytes 4e + 2, 4e + 3.
        assert_eq!(
            F32_INDEX[3][..12],
            [2, 6, 10, 3, 7, 11, 14, 18, 22, 15, 19, 23]
        );
        assert_eq!(B16_INDEX[3][..12], [0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11]);
        // 10 pixels of 3 channels per step: the last FP32 source byte is lane 29's byte 3.
        assert_eq!(F32_INDEX[3][59], 4 * 29 + 3);
        assert_eq!(F32_INDEX[3][60..], [0; 4]);
        assert_eq!(
            B16_INDEX[8][..16],
            [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
        );
    }
}
