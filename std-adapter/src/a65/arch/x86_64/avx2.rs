//! AVX2 Quant kernel (F16C for FP16 input): 32 elements per iteration.

use core::arch::x86_64::*;

use super::CLAMP_HI;

super::level_select!(body, 32, usize::MAX);

/// Loads 8 input elements at `ptr` as binary32 lanes.
///
/// # Safety
///
/// AVX2 (and F16C for `IN` = 2) must be available and `ptr` valid for reading 8 elements
/// of format `IN` (0 = FP32, 1 = BF16, 2 = FP16).
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn load8<const IN: u8>(ptr: *const u8) -> __m256 {
    match IN {
        0 => {
            // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
            unsafe { _mm256_loadu_ps(ptr.cast()) }
        }
        1 => {
            // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
            let raw = unsafe { _mm_loadu_si128(ptr.cast()) };
            _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(raw)))
        }
        _ => {
            // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
            let raw = unsafe { _mm_loadu_si128(ptr.cast()) };
            _mm256_cvtph_ps(raw)
        }
    }
}

/// Product, NaN → 0, upper clamp and conversion with rounding mode `MODE` (wire code).
/// Nearest-even converts with MXCSR's rounding, checked to be nearest before execution.
#[target_feature(enable = "avx2,f16c")]
#[inline]
fn convert<const MODE: u32>(x: __m256, m: __m256) -> __m256i {
    let p = _mm256_mul_ps(x, m);
    let p = _mm256_and_ps(p, _mm256_cmp_ps::<_CMP_ORD_Q>(p, p));
    let p = _mm256_min_ps(p, _mm256_set1_ps(CLAMP_HI));
    match MODE {
        0 => _mm256_cvttps_epi32(p),
        1 => _mm256_cvtps_epi32(p),
        2 => _mm256_cvttps_epi32(_mm256_round_ps::<
            { _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC },
        >(p)),
        _ => _mm256_cvttps_epi32(_mm256_round_ps::<
            { _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC },
        >(p)),
    }
}

/// Quantizes `n` elements (a multiple of 32).
///
/// # Safety
///
/// AVX2 (and F16C for FP16) must be available; `input` must be valid for reading `n`
/// elements of format `IN` and `output` for writing `n` bytes.
#[target_feature(enable = "avx2,f16c")]
unsafe fn body<const IN: u8, const MODE: u32, const STREAM: bool>(
    m: f32,
    zero_point: i16,
    input: *const u8,
    output: *mut u8,
    n: usize,
) {
    let size = if IN == 0 { 4 } else { 2 };
    let mv = _mm256_set1_ps(m);
    let zp = _mm256_set1_epi16(zero_point);
    // After the two in-lane packs, dword 4·l + j holds group j's elements 4·l..4·l+4.
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let mut i = 0;
    while i < n {
        let at = input.wrapping_add(i * size);
        // SAFETY: (all four loads) i + 32 ≤ n, so elements i..i + 32 are readable.
        let a = unsafe { load8::<IN>(at) };
        // SAFETY: as above.
        let b = unsafe { load8::<IN>(at.wrapping_add(8 * size)) };
        // SAFETY: as above.
        let c = unsafe { load8::<IN>(at.wrapping_add(16 * size)) };
        // SAFETY: as above.
        let d = unsafe { load8::<IN>(at.wrapping_add(24 * size)) };
        let ab = _mm256_adds_epi16(
            _mm256_packs_epi32(convert::<MODE>(a, mv), convert::<MODE>(b, mv)),
            zp,
        );
        let cd = _mm256_adds_epi16(
            _mm256_packs_epi32(convert::<MODE>(c, mv), convert::<MODE>(d, mv)),
            zp,
        );
        let bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), order);
        // SAFETY: i + 32 ≤ n, so the 32-byte store stays inside the `n` writable bytes.
        unsafe { _mm256_storeu_si256(output.wrapping_add(i).cast(), bytes) };
        i += 32;
    }
}
