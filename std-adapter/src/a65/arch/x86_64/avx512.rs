//! AVX-512 (F/BW/VL) Quant kernel: 64 elements per iteration.

use core::arch::x86_64::*;

use super::CLAMP_HI;

super::level_select!(body, 64, STREAM_MIN_AVX512);

/// Runs of at least this many elements store their output with non-temporal stores: the
/// output then bypasses the caches (no read-for-ownership, no eviction of the input).
pub(crate) const STREAM_MIN_AVX512: usize = 1 << 22;

/// Loads 16 input elements at `ptr` as binary32 lanes.
///
/// # Safety
///
/// AVX-512F must be available and `ptr` must be valid for reading 16 elements of the
/// input format `IN` (0 = FP32, 1 = BF16, 2 = FP16).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn load16<const IN: u8>(ptr: *const u8) -> __m512 {
    match IN {
        0 => {
            // SAFETY: the caller guarantees 64 readable bytes at `ptr`; loadu has no
            // alignment requirement.
            unsafe { _mm512_loadu_ps(ptr.cast()) }
        }
        1 => {
            // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
            let raw = unsafe { _mm256_loadu_si256(ptr.cast()) };
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(raw)))
        }
        _ => {
            // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
            let raw = unsafe { _mm256_loadu_si256(ptr.cast()) };
            _mm512_cvtph_ps(raw)
        }
    }
}

/// Product, NaN → 0, upper clamp and conversion with rounding mode `MODE` (wire code).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
fn convert<const MODE: u32>(x: __m512, m: __m512) -> __m512i {
    let p = _mm512_mul_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x, m);
    let ordered = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(p, p);
    let p = _mm512_min_ps(p, _mm512_set1_ps(CLAMP_HI));
    match MODE {
        0 => {
            _mm512_maskz_cvt_roundps_epi32::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(ordered, p)
        }
        1 => _mm512_maskz_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            ordered, p,
        ),
        2 => _mm512_maskz_cvt_roundps_epi32::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(
            ordered, p,
        ),
        _ => _mm512_maskz_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(
            ordered, p,
        ),
    }
}

/// Quantizes `n` elements (a multiple of 64).
///
/// # Safety
///
/// AVX-512F and AVX-512BW must be available; `input` must be valid for reading `n`
/// elements of format `IN` and `output` for writing `n` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn body<const IN: u8, const MODE: u32, const STREAM: bool>(
    m: f32,
    zero_point: i16,
    input: *const u8,
    output: *mut u8,
    n: usize,
) {
    let size = if IN == 0 { 4 } else { 2 };
    let mv = _mm512_set1_ps(m);
    let zp = _mm512_set1_epi16(zero_point);
    // After the two in-lane packs, dword 4·l + j of the result holds group j's elements
    // 4·l..4·l+4; this gathers each group's dwords back in order.
    let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    let mut i = 0;
    while i < n {
        let at = input.wrapping_add(i * size);
        // SAFETY: (all four loads) i + 64 ≤ n, so elements i..i + 64 are readable.
        let a = unsafe { load16::<IN>(at) };
        // SAFETY: as above.
        let b = unsafe { load16::<IN>(at.wrapping_add(16 * size)) };
        // SAFETY: as above.
        let c = unsafe { load16::<IN>(at.wrapping_add(32 * size)) };
        // SAFETY: as above.
        let d = unsafe { load16::<IN>(at.wrapping_add(48 * size)) };
        let ab = _mm512_adds_epi16(
            _mm512_packs_epi32(convert::<MODE>(a, mv), convert::<MODE>(b, mv)),
            zp,
        );
        let cd = _mm512_adds_epi16(
            _mm512_packs_epi32(convert::<MODE>(c, mv), convert::<MODE>(d, mv)),
            zp,
        );
        let bytes = _mm512_permutexvar_epi32(order, _mm512_packs_epi16(ab, cd));
        let to = output.wrapping_add(i);
        if STREAM && (to as usize).is_multiple_of(64) {
            // SAFETY: i + 64 ≤ n, so the 64-byte store stays inside the `n` writable bytes,
            // and `to` is 64-byte aligned as the streaming store requires.
            unsafe { _mm512_stream_si512(to.cast(), bytes) };
        } else {
            // SAFETY: i + 64 ≤ n, so the 64-byte store stays inside the `n` writable bytes.
            unsafe { _mm512_storeu_si512(to.cast(), bytes) };
        }
        i += 64;
    }
    if STREAM {
        // Order the non-temporal stores before anything that follows the call.
        _mm_sfence();
    }
}
