//! AVX-512 F/BW/VL lanes: the Quant loop (64 elements per step, streaming stores for long
//! runs), the BF16 conversions and the band kernel.

use core::arch::x86_64::*;

use simak_core::DType;
use simak_core::arith::quant::{InputFormat, RoundingMode};
use simak_core::ops::quant::Rounding;

use super::super::isa::{Avx512, lanes};
use super::super::quant::QuantLanes;
use super::CLAMP_HI;

/// Runs of at least this many elements store their output with non-temporal stores: the
/// output then bypasses the caches (no read-for-ownership, no eviction of the input).
pub(crate) const STREAM_MIN_AVX512: usize = 1 << 22;

lanes! {
    impl QuantLanes for Avx512 with "avx2,f16c,avx512f,avx512bw,avx512vl" {
        type F = __m512;
        type I = __m512i;
        type Zp = __m512i;
        type Bytes = __m512i;
        const LANES: usize = 16;
        const STREAM_MIN: usize = STREAM_MIN_AVX512;

        fn splat(self, m: f32) -> __m512 {
            _mm512_set1_ps(m)
        }

        fn zero_point(self, zp: i16) -> __m512i {
            _mm512_set1_epi16(zp)
        }

        fn convert<M: RoundingMode>(self, x: __m512, m: __m512) -> __m512i {
            const NEAR: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
            const ZERO: i32 = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
            const UP: i32 = _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC;
            const DOWN: i32 = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
            let p = _mm512_mul_round_ps::<NEAR>(x, m);
            let ordered = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(p, p);
            let p = _mm512_min_ps(p, _mm512_set1_ps(CLAMP_HI));
            match M::MODE {
                Rounding::TowardZero => _mm512_maskz_cvt_roundps_epi32::<ZERO>(ordered, p),
                Rounding::NearestEven => _mm512_maskz_cvt_roundps_epi32::<NEAR>(ordered, p),
                Rounding::TowardPositive => _mm512_maskz_cvt_roundps_epi32::<UP>(ordered, p),
                Rounding::TowardNegative => _mm512_maskz_cvt_roundps_epi32::<DOWN>(ordered, p),
            }
        }

        fn narrow(self, v: [__m512i; 4], zp: __m512i) -> __m512i {
            // After the two in-lane packs, dword 4·l + j holds vector j's elements 4·l..4·l+4.
            let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
            let ab = _mm512_adds_epi16(_mm512_packs_epi32(v[0], v[1]), zp);
            let cd = _mm512_adds_epi16(_mm512_packs_epi32(v[2], v[3]), zp);
            _mm512_permutexvar_epi32(order, _mm512_packs_epi16(ab, cd))
        }

        fn fence(self) {
            _mm_sfence();
        }

        unsafe fn load<I: InputFormat>(self, ptr: *const u8) -> __m512 {
            if matches!(I::DTYPE, DType::F32) {
                // SAFETY: the caller guarantees 64 readable bytes at `ptr`.
                return unsafe { _mm512_loadu_ps(ptr.cast()) };
            }
            // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
            let raw = unsafe { _mm256_loadu_si256(ptr.cast()) };
            match I::DTYPE {
                DType::F16 => _mm512_cvtph_ps(raw),
                _ => _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(raw))),
            }
        }

        unsafe fn store(self, ptr: *mut u8, bytes: __m512i, stream: bool) {
            if stream {
                // SAFETY: the caller guarantees 64 writable, 64-byte aligned bytes at `ptr`.
                unsafe { _mm512_stream_si512(ptr.cast(), bytes) }
            } else {
                // SAFETY: the caller guarantees 64 writable bytes at `ptr`.
                unsafe { _mm512_storeu_si512(ptr.cast(), bytes) }
            }
        }
    }
}
