//! AVX-512 (F/BW) CastTess conversions: FP32 and FP16 → BF16 in 512-bit integer lanes
//! (32 elements per step). `VCVTNEPS2BF16` is deliberately not used: it flushes subnormals
//! and quiets NaNs, which SPEC §4 forbids.
//!
//! The safe wrappers here are handed out only by `super::kernels` after runtime detection
//! of AVX-512F and AVX-512BW, so their calls into `#[target_feature]` code are sound.

use core::arch::x86_64::*;

use simak_core::DType;

use super::super::ConvertFn;

/// This level's conversion of a float `dtype` (BF16 is a copy).
pub(super) fn convert_fn(dtype: DType) -> ConvertFn {
    super::super::convert_by_dtype(dtype, convert_f32, convert_f16)
}

fn convert_f32(input: &[u8], output: &mut [u8]) {
    // SAFETY: handed out only after AVX-512F/BW were detected (module doc).
    unsafe { super::super::convert_blocks(DType::F32, 32, f32_body, input, output) }
}

fn convert_f16(input: &[u8], output: &mut [u8]) {
    // SAFETY: as in `convert_f32`.
    unsafe { super::super::convert_blocks(DType::F16, 32, f16_body, input, output) }
}

/// `(x + 0x7fff + ((x >> 16) & 1)) >> 16` per 32-bit lane, narrowed to 16 bits.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
fn round_f32(x: __m512i) -> __m256i {
    let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(x), _mm512_set1_epi32(1));
    let sum = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(sum))
}

/// Converts `n` FP32 elements (a multiple of 32).
///
/// # Safety
///
/// AVX-512F/BW available; `input` valid for reading `4n` bytes, `output` for writing `2n`.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn f32_body(input: *const u8, output: *mut u8, n: usize) {
    let mut i = 0;
    while i < n {
        let at = input.wrapping_add(4 * i);
        // SAFETY: i + 32 ≤ n, so bytes 4i..4i + 128 are readable.
        let a = unsafe { _mm512_loadu_si512(at.cast()) };
        // SAFETY: as above.
        let b = unsafe { _mm512_loadu_si512(at.wrapping_add(64).cast()) };
        let to = output.wrapping_add(2 * i);
        let (ra, rb) = (round_f32(a), round_f32(b));
        // SAFETY: i + 32 ≤ n, so bytes 2i..2i + 64 of the output are writable.
        unsafe { _mm256_storeu_si256(to.cast(), ra) };
        // SAFETY: as above.
        unsafe { _mm256_storeu_si256(to.wrapping_add(32).cast(), rb) };
        i += 32;
    }
}

/// FP16 → BF16 per 16-bit lane; the algorithm of the AVX2 level with mask registers.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
pub(super) fn f16_lanes(h: __m512i) -> __m512i {
    let zero = _mm512_setzero_si512();
    let t = _mm512_and_si512(h, _mm512_set1_epi16(0x7fff));
    let sign = _mm512_and_si512(h, _mm512_set1_epi16(0x8000u16 as i16));
    let below_normal = _mm512_cmplt_epu16_mask(t, _mm512_set1_epi16(0x400));
    let (m, s) = if below_normal == 0 {
        (t, zero)
    } else {
        let mut m = t;
        let mut s = zero;
        macro_rules! step {
            ($k:literal) => {
                let lt = _mm512_cmplt_epu16_mask(m, _mm512_set1_epi16(1 << (11 - $k)));
                m = _mm512_mask_slli_epi16::<$k>(m, lt, m);
                s = _mm512_mask_add_epi16(s, lt, s, _mm512_set1_epi16($k));
            };
        }
        step!(8);
        step!(4);
        step!(2);
        step!(1);
        (m, s)
    };
    let tn = _mm512_add_epi16(
        m,
        _mm512_slli_epi16::<10>(_mm512_sub_epi16(_mm512_set1_epi16(10), s)),
    );
    let lsb = _mm512_and_si512(_mm512_srli_epi16::<3>(tn), _mm512_set1_epi16(1));
    let rounded = _mm512_srli_epi16::<3>(_mm512_add_epi16(
        _mm512_add_epi16(tn, _mm512_set1_epi16(3)),
        lsb,
    ));
    let r = _mm512_add_epi16(rounded, _mm512_set1_epi16(102 << 7));
    let nonzero = !_mm512_cmpeq_epi16_mask(t, zero);
    let r = _mm512_maskz_mov_epi16(nonzero, r);
    let special = _mm512_cmpgt_epu16_mask(t, _mm512_set1_epi16(0x7bff));
    let nan = _mm512_cmpgt_epu16_mask(t, _mm512_set1_epi16(0x7c00));
    let payload = _mm512_srli_epi16::<3>(_mm512_and_si512(t, _mm512_set1_epi16(0x3ff)));
    let sv = _mm512_or_si512(
        _mm512_set1_epi16(0x7f80),
        _mm512_or_si512(
            _mm512_maskz_mov_epi16(nan, _mm512_set1_epi16(0x40)),
            payload,
        ),
    );
    _mm512_or_si512(_mm512_mask_blend_epi16(special, r, sv), sign)
}

/// Converts `n` FP16 elements (a multiple of 32).
///
/// # Safety
///
/// AVX-512F/BW available; `input` valid for reading `2n` bytes, `output` for writing `2n`.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn f16_body(input: *const u8, output: *mut u8, n: usize) {
    let mut i = 0;
    while i < n {
        // SAFETY: i + 32 ≤ n, so bytes 2i..2i + 64 are readable.
        let h = unsafe { _mm512_loadu_si512(input.wrapping_add(2 * i).cast()) };
        let r = f16_lanes(h);
        // SAFETY: i + 32 ≤ n, so bytes 2i..2i + 64 of the output are writable.
        unsafe { _mm512_storeu_si512(output.wrapping_add(2 * i).cast(), r) };
        i += 32;
    }
}
