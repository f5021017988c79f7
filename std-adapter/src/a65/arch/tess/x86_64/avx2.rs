//! AVX2 CastTess kernels: FP32 and FP16 → BF16 in 256-bit integer lanes (16 elements per
//! step), and the plane split in 128-bit SSSE3 lanes.
//!
//! The safe wrappers here are handed out only by `super::kernels` after runtime detection
//! of AVX2, so their calls into `#[target_feature]` code are sound by construction.

use core::arch::x86_64::*;

use simak_core::DType;

use super::super::ConvertFn;
use super::super::generic::{self, Lanes};

/// 16 SSE bytes; the shuffle needs SSSE3 (implied by AVX2).
#[derive(Clone, Copy)]
pub(super) struct Sse(__m128i);

impl Lanes for Sse {
    #[inline(always)]
    unsafe fn load(ptr: *const u8) -> Self {
        // SAFETY: the caller guarantees 16 readable bytes at `ptr`; loadu has no alignment
        // requirement.
        Sse(unsafe { _mm_loadu_si128(ptr.cast()) })
    }

    #[inline(always)]
    unsafe fn store(self, ptr: *mut u8) {
        // SAFETY: the caller guarantees 16 writable bytes at `ptr`; storeu has no
        // alignment requirement.
        unsafe { _mm_storeu_si128(ptr.cast(), self.0) }
    }

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: the caller enabled AVX2.
        Sse(unsafe { zero_avx2() })
    }

    #[inline(always)]
    unsafe fn shuffle(self, pattern: Self) -> Self {
        // SAFETY: the caller enabled AVX2, which implies SSSE3.
        Sse(unsafe { _mm_shuffle_epi8(self.0, pattern.0) })
    }

    #[inline(always)]
    unsafe fn split16(a: Self, b: Self, k: usize) -> (Self, Self) {
        // SAFETY: the caller enabled AVX2.
        let (lo, hi) = unsafe { split16_avx2(a.0, b.0, k) };
        (Sse(lo), Sse(hi))
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn zero_avx2() -> __m128i {
    _mm_setzero_si128()
}

/// Zeroes `u16` lanes `≥ k` of `a:b`, then packs their low and high bytes.
#[target_feature(enable = "avx2")]
#[inline]
fn split16_avx2(a: __m128i, b: __m128i, k: usize) -> (__m128i, __m128i) {
    let kk = _mm_set1_epi16(k.min(16) as i16);
    let a = _mm_and_si128(
        a,
        _mm_cmpgt_epi16(kk, _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7)),
    );
    let b = _mm_and_si128(
        b,
        _mm_cmpgt_epi16(kk, _mm_setr_epi16(8, 9, 10, 11, 12, 13, 14, 15)),
    );
    let low = _mm_set1_epi16(0x00ff);
    let lo = _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low));
    let hi = _mm_packus_epi16(_mm_srli_epi16::<8>(a), _mm_srli_epi16::<8>(b));
    (lo, hi)
}

/// The split of [`super::super::SplitFn`] in SSSE3 lanes.
pub(super) fn split(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    // SAFETY: handed out only after AVX2 was detected (module doc).
    unsafe { split_avx2(bf, tc, sc, out) }
}

/// # Safety
///
/// AVX2 must be available.
#[target_feature(enable = "avx2")]
unsafe fn split_avx2(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    // SAFETY: this function is compiled with AVX2 (⇒ SSSE3), the features of `Sse`.
    unsafe { generic::split::<Sse>(bf, tc, sc, out) }
}

/// This level's conversion of a float `dtype` (BF16 is a copy).
pub(super) fn convert_fn(dtype: DType) -> ConvertFn {
    super::super::convert_by_dtype(dtype, convert_f32, convert_f16)
}

fn convert_f32(input: &[u8], output: &mut [u8]) {
    // SAFETY: handed out only after AVX2 was detected (module doc).
    unsafe { super::super::convert_blocks(DType::F32, 16, f32_body, input, output) }
}

fn convert_f16(input: &[u8], output: &mut [u8]) {
    // SAFETY: as in `convert_f32`.
    unsafe { super::super::convert_blocks(DType::F16, 16, f16_body, input, output) }
}

/// `(x + 0x7fff + ((x >> 16) & 1)) >> 16` per 32-bit lane (SPEC §4).
#[target_feature(enable = "avx2")]
#[inline]
fn round_f32(x: __m256i) -> __m256i {
    let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(x), _mm256_set1_epi32(1));
    let sum = _mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    _mm256_srli_epi32::<16>(sum)
}

/// Converts `n` FP32 elements (a multiple of 16).
///
/// # Safety
///
/// AVX2 available; `input` valid for reading `4n` bytes, `output` for writing `2n` bytes.
#[target_feature(enable = "avx2")]
unsafe fn f32_body(input: *const u8, output: *mut u8, n: usize) {
    let mut i = 0;
    while i < n {
        let at = input.wrapping_add(4 * i);
        // SAFETY: i + 16 ≤ n, so bytes 4i..4i + 64 are readable.
        let a = unsafe { _mm256_loadu_si256(at.cast()) };
        // SAFETY: as above.
        let b = unsafe { _mm256_loadu_si256(at.wrapping_add(32).cast()) };
        // packus works in 128-bit halves: [a0..3 b0..3 a4..7 b4..7] → reorder the qwords.
        let packed = _mm256_packus_epi32(round_f32(a), round_f32(b));
        let ordered = _mm256_permute4x64_epi64::<0b11_01_10_00>(packed);
        // SAFETY: i + 16 ≤ n, so bytes 2i..2i + 32 of the output are writable.
        unsafe { _mm256_storeu_si256(output.wrapping_add(2 * i).cast(), ordered) };
        i += 16;
    }
}

/// FP16 → BF16 per 16-bit lane (SPEC §4), integer code: subnormals normalized by four
/// compare/shift/blend steps, one nearest-even rounding of the 10-bit significand to 7
/// bits, infinities and NaNs (quieted, high payload kept) rebuilt, sign ORed back.
#[target_feature(enable = "avx2")]
#[inline]
fn f16_lanes(h: __m256i) -> __m256i {
    let zero = _mm256_setzero_si256();
    let t = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
    let sign = _mm256_and_si256(h, _mm256_set1_epi16(0x8000u16 as i16));
    let below_normal = _mm256_cmpgt_epi16(_mm256_set1_epi16(0x400), t);
    let (m, s) = if _mm256_movemask_epi8(below_normal) == 0 {
        (t, zero)
    } else {
        let mut m = t;
        let mut s = zero;
        macro_rules! step {
            ($k:literal) => {
                let lt = _mm256_cmpgt_epi16(_mm256_set1_epi16(1 << (11 - $k)), m);
                m = _mm256_blendv_epi8(m, _mm256_slli_epi16::<$k>(m), lt);
                s = _mm256_add_epi16(s, _mm256_and_si256(lt, _mm256_set1_epi16($k)));
            };
        }
        step!(8);
        step!(4);
        step!(2);
        step!(1);
        (m, s)
    };
    // Normal lanes: t + (10 << 10); subnormal lanes: the normalized significand with the
    // exponent field 11 − s. Either way the BF16 bias is then 102 << 7.
    let tn = _mm256_add_epi16(
        m,
        _mm256_slli_epi16::<10>(_mm256_sub_epi16(_mm256_set1_epi16(10), s)),
    );
    let lsb = _mm256_and_si256(_mm256_srli_epi16::<3>(tn), _mm256_set1_epi16(1));
    let rounded = _mm256_srli_epi16::<3>(_mm256_add_epi16(
        _mm256_add_epi16(tn, _mm256_set1_epi16(3)),
        lsb,
    ));
    let r = _mm256_add_epi16(rounded, _mm256_set1_epi16(102 << 7));
    let r = _mm256_andnot_si256(_mm256_cmpeq_epi16(t, zero), r);
    let special = _mm256_cmpgt_epi16(t, _mm256_set1_epi16(0x7bff));
    let nan = _mm256_cmpgt_epi16(t, _mm256_set1_epi16(0x7c00));
    let payload = _mm256_srli_epi16::<3>(_mm256_and_si256(t, _mm256_set1_epi16(0x3ff)));
    let sv = _mm256_or_si256(
        _mm256_set1_epi16(0x7f80),
        _mm256_or_si256(_mm256_and_si256(nan, _mm256_set1_epi16(0x40)), payload),
    );
    _mm256_or_si256(_mm256_blendv_epi8(r, sv, special), sign)
}

/// Converts `n` FP16 elements (a multiple of 16).
///
/// # Safety
///
/// AVX2 available; `input` valid for reading `2n` bytes, `output` for writing `2n` bytes.
#[target_feature(enable = "avx2")]
unsafe fn f16_body(input: *const u8, output: *mut u8, n: usize) {
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 ≤ n, so bytes 2i..2i + 32 are readable.
        let h = unsafe { _mm256_loadu_si256(input.wrapping_add(2 * i).cast()) };
        let r = f16_lanes(h);
        // SAFETY: i + 16 ≤ n, so bytes 2i..2i + 32 of the output are writable.
        unsafe { _mm256_storeu_si256(output.wrapping_add(2 * i).cast(), r) };
        i += 16;
    }
}
