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
//! Also the level's band-kernel lanes (`super::super::band`): one `vpermt2b` per output
//! line, and row rests through the masked steps above.
//!
//! Every safe wrapper here holds the level's token ([`Avx512Vbmi`]), so its calls into
//! `#[target_feature]` code are sound.

use core::arch::x86_64::*;

use simak_core::DType;
use simak_core::arith::quant::{FormatLift, InputFormat, lift_format};

use super::super::band::BandLanes;
use super::super::convert::f16_lanes;
use super::super::isa::{Avx512, Avx512Vbmi, Isa, lanes};
use super::super::tess::{Rows, RowsFn};

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

/// The fused rows of a float `dtype`, or `None` when this CPU lacks the level.
pub(crate) fn rows_fn(dtype: DType) -> Option<RowsFn> {
    struct Select;
    impl FormatLift for Select {
        type Output = RowsFn;
        fn lift<I: InputFormat>(self) -> RowsFn {
            rows::<I>
        }
    }
    Avx512Vbmi::detect()?;
    lift_format(dtype, Select)
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

/// [`RowsFn`] for elements of `I`.
fn rows<I: InputFormat>(a: Rows<'_>, tc: usize) -> bool {
    let Some(t) = Avx512Vbmi::detect() else {
        return false;
    };
    let Some((row_in, _)) = geometry(&a, tc, I::SIZE) else {
        return false;
    };
    if a.row_px == 0 {
        return true;
    }
    for r in 0..a.rows {
        let (src, dst) = (
            a.input.as_ptr().wrapping_add(r * a.in_stride),
            a.out.as_mut_ptr().wrapping_add(r * a.out_stride),
        );
        // SAFETY: `t` proves the features; `geometry` proved row `r`'s input bytes at
        // `r · in_stride` lie in `input` and its output bytes at `r · out_stride` in `out`.
        unsafe { row::<I>(t, src, dst, tc, row_in) };
    }
    true
}

/// One row of `I` elements: `row_in` input bytes.
///
/// # Safety
///
/// As [`row_f32_body`] and [`row_b16_body`].
#[inline(always)]
unsafe fn row<I: InputFormat>(t: Avx512Vbmi, src: *const u8, dst: *mut u8, tc: usize, n: usize) {
    match I::DTYPE {
        // SAFETY: the caller's contract.
        DType::F32 => unsafe { row_f32_body(src, dst, tc, n) },
        // SAFETY: the caller's contract.
        DType::F16 => unsafe { row_b16_body::<true>(t, src, dst, tc, n) },
        // SAFETY: the caller's contract.
        _ => unsafe { row_b16_body::<false>(t, src, dst, tc, n) },
    }
}

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
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl,avx512vbmi")]
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
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl,avx512vbmi")]
unsafe fn row_b16_body<const F16: bool>(
    t: Avx512Vbmi,
    src: *const u8,
    dst: *mut u8,
    tc: usize,
    row_in: usize,
) {
    // SAFETY: a table entry is 64 readable bytes.
    let idx = unsafe { _mm512_loadu_si512(B16_INDEX[tc].as_ptr().cast()) };
    let step = per_step(tc) * tc * 2;
    let convert = |h: __m512i| if F16 { f16_lanes(t.avx512(), h) } else { h };
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

/// `vpermt2b` indexes of output line `k` (0..3) of a band block, relative to its window
/// (from byte 0 for `k = 0`, else from 8 bytes before the line).
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

lanes! {
    impl BandLanes for Avx512Vbmi with "avx2,f16c,avx512f,avx512bw,avx512vl,avx512vbmi" {
        type Convert = Avx512;
        type Lines = Avx512;
        const PARTS: usize = 1;
        const STREAMS: bool = true;

        fn line(self, parts: [__m512i; 4]) -> __m512i {
            parts[0]
        }

        fn split3(self, p: [__m512i; 3]) -> [__m512i; 3] {
            // One `vpermt2b` per line over the two stream lines from 8 bytes before it.
            // SAFETY: each table entry is 64 readable bytes.
            let idx = |k: usize| unsafe { _mm512_loadu_si512(BLOCK_INDEX[k].as_ptr().cast()) };
            let a1 = _mm512_alignr_epi64::<7>(p[1], p[0]);
            let a2 = _mm512_alignr_epi64::<7>(p[2], p[1]);
            let a3 = _mm512_alignr_epi64::<7>(p[2], p[2]);
            [
                _mm512_permutex2var_epi8(p[0], idx(0), p[1]),
                _mm512_permutex2var_epi8(a1, idx(1), a2),
                _mm512_permutex2var_epi8(a2, idx(2), a3),
            ]
        }

        inline {
            #[inline(always)]
            fn convert(self) -> Avx512 {
                self.avx512()
            }

            #[inline(always)]
            fn lines(self) -> Avx512 {
                self.avx512()
            }

            /// The masked steps of the rows kernel, for `tc = 3`.
            #[inline(always)]
            fn rest<I: InputFormat>(self, src: &[u8], dst: &mut [u8], px: usize) {
                let (n_in, n_out) = (3 * px * I::SIZE, 6 * px);
                let (src, dst) = (&src[..n_in], &mut dst[..n_out]);
                // SAFETY: `self` proves the features; `src` holds the `n_in` input bytes of
                // `px` 3-channel pixels and `dst` their `n_out` output bytes.
                unsafe { row::<I>(self, src.as_ptr(), dst.as_mut_ptr(), 3, n_in) };
            }
        }
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
