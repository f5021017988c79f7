//! AVX2 + F16C lanes: the Quant loop (32 elements per step), the BF16 conversions, the
//! plane split (SSSE3 lanes) and the band kernel.

use core::arch::x86_64::*;

use simak_core::DType;
use simak_core::arith::quant::{InputFormat, RoundingMode};
use simak_core::ops::quant::Rounding;

use super::super::isa::{Avx2, lanes};
use super::super::quant::QuantLanes;
use super::CLAMP_HI;

lanes! {
    impl QuantLanes for Avx2 with "avx2,f16c" {
        type F = __m256;
        type I = __m256i;
        type Zp = __m256i;
        type Bytes = __m256i;
        const LANES: usize = 8;

        fn splat(self, m: f32) -> __m256 {
            _mm256_set1_ps(m)
        }

        fn zero_point(self, zp: i16) -> __m256i {
            _mm256_set1_epi16(zp)
        }

        fn convert<M: RoundingMode>(self, x: __m256, m: __m256) -> __m256i {
            let p = _mm256_mul_ps(x, m);
            let p = _mm256_and_ps(p, _mm256_cmp_ps::<_CMP_ORD_Q>(p, p));
            let p = _mm256_min_ps(p, _mm256_set1_ps(CLAMP_HI));
            const UP: i32 = _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC;
            const DOWN: i32 = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
            match M::MODE {
                Rounding::TowardZero => _mm256_cvttps_epi32(p),
                Rounding::NearestEven => _mm256_cvtps_epi32(p),
                Rounding::TowardPositive => _mm256_cvttps_epi32(_mm256_round_ps::<UP>(p)),
                Rounding::TowardNegative => _mm256_cvttps_epi32(_mm256_round_ps::<DOWN>(p)),
            }
        }

        fn narrow(self, v: [__m256i; 4], zp: __m256i) -> __m256i {
            // After the two in-lane packs, dword 4·l + j holds vector j's elements 4·l..4·l+4.
            let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
            let ab = _mm256_adds_epi16(_mm256_packs_epi32(v[0], v[1]), zp);
            let cd = _mm256_adds_epi16(_mm256_packs_epi32(v[2], v[3]), zp);
            _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), order)
        }

        unsafe fn load<I: InputFormat>(self, ptr: *const u8) -> __m256 {
            if matches!(I::DTYPE, DType::F32) {
                // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
                return unsafe { _mm256_loadu_ps(ptr.cast()) };
            }
            // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
            let raw = unsafe { _mm_loadu_si128(ptr.cast()) };
            match I::DTYPE {
                DType::F16 => _mm256_cvtph_ps(raw),
                _ => _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(raw))),
            }
        }

        unsafe fn store(self, ptr: *mut u8, bytes: __m256i, _stream: bool) {
            // SAFETY: the caller guarantees 32 writable bytes at `ptr`.
            unsafe { _mm256_storeu_si256(ptr.cast(), bytes) }
        }
    }
}
