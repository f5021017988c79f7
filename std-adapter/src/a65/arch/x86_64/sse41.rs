//! SSE4.1 Quant kernel for FP32 and BF16 input: 16 elements per iteration.

use core::arch::x86_64::*;

use super::CLAMP_HI;

super::level_select!(body, 16, usize::MAX);

/// Loads 4 input elements at `ptr` as binary32 lanes.
///
/// # Safety
///
/// SSE4.1 must be available and `ptr` valid for reading 4 elements of format `IN`
/// (0 = FP32, 1 = BF16).
#[target_feature(enable = "sse4.1")]
#[inline]
unsafe fn load4<const IN: u8>(ptr: *const u8) -> __m128 {
    match IN {
        0 => {
            // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
            unsafe { _mm_loadu_ps(ptr.cast()) }
        }
        1 => {
            // SAFETY: the caller guarantees 8 readable bytes at `ptr`.
            let raw = unsafe { _mm_loadl_epi64(ptr.cast()) };
            _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), raw))
        }
        // FP16 never reaches this level (see `run_fn`).
        _ => _mm_setzero_ps(),
    }
}

/// Product, NaN → 0, upper clamp and conversion with rounding mode `MODE` (wire code).
#[target_feature(enable = "sse4.1")]
#[inline]
fn convert<const MODE: u32>(x: __m128, m: __m128) -> __m128i {
    let p = _mm_mul_ps(x, m);
    let p = _mm_and_ps(p, _mm_cmpord_ps(p, p));
    let p = _mm_min_ps(p, _mm_set1_ps(CLAMP_HI));
    match MODE {
        0 => _mm_cvttps_epi32(p),
        1 => _mm_cvtps_epi32(p),
        2 => _mm_cvttps_epi32(_mm_round_ps::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(p)),
        _ => _mm_cvttps_epi32(_mm_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(p)),
    }
}

/// Quantizes `n` elements (a multiple of 16).
///
/// # Safety
///
/// SSE4.1 must be available; `input` must be valid for reading `n`
/// elements of format `IN` and `output` for writing `n` bytes.
#[target_feature(enable = "sse4.1")]
unsafe fn body<const IN: u8, const MODE: u32, const STREAM: bool>(
    m: f32,
    zero_point: i16,
    input: *const u8,
    output: *mut u8,
    n: usize,
) {
    let size = if IN == 0 { 4 } else { 2 };
    let mv = _mm_set1_ps(m);
    let zp = _mm_set1_epi16(zero_point);
    let mut i = 0;
    while i < n {
        let at = input.wrapping_add(i * size);
        // SAFETY: (all four loads) i + 16 ≤ n, so elements i..i + 16 are readable.
        let a = unsafe { load4::<IN>(at) };
        // SAFETY: as above.
        let b = unsafe { load4::<IN>(at.wrapping_add(4 * size)) };
        // SAFETY: as above.
        let c = unsafe { load4::<IN>(at.wrapping_add(8 * size)) };
        // SAFETY: as above.
        let d = unsafe { load4::<IN>(at.wrapping_add(12 * size)) };
        let ab = _mm_adds_epi16(
            _mm_packs_epi32(convert::<MODE>(a, mv), convert::<MODE>(b, mv)),
            zp,
        );
        let cd = _mm_adds_epi16(
            _mm_packs_epi32(convert::<MODE>(c, mv), convert::<MODE>(d, mv)),
            zp,
        );
        let bytes = _mm_packs_epi16(ab, cd);
        // SAFETY: i + 16 ≤ n, so the 16-byte store stays inside the `n` writable bytes.
        unsafe { _mm_storeu_si128(output.wrapping_add(i).cast(), bytes) };
        i += 16;
    }
}
