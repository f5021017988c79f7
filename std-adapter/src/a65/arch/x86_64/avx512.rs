//! AVX-512 F/BW/VL lanes: the Quant loop (64 elements per step, streaming stores for long
//! runs), the BF16 conversions and the band kernel.

use core::arch::x86_64::*;

use simak_core::DType;
use simak_core::arith::quant::{InputFormat, RoundingMode};
use simak_core::ops::quant::Rounding;

use super::super::super::untess::Scale;
use super::super::band::{BandLanes, Lines, window_pattern};
use super::super::convert::ConvertLanes;
use super::super::dequant::DequantLanes;
use super::super::isa::{Avx512, lanes, ops};
use super::super::quant::{Load, QuantLanes, load_four};
use super::super::yuv::YuvLanes;
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

        fn narrow_step<I: InputFormat>(self, v: [__m512i; 4], zp: __m512i) -> __m512i {
            // (`narrow` cannot be called here: the body is compiled as a separate function
            // without `self`; see `lanes!`.)
            let ab = _mm512_adds_epi16(_mm512_packs_epi32(v[0], v[1]), zp);
            let cd = _mm512_adds_epi16(_mm512_packs_epi32(v[2], v[3]), zp);
            let bytes = _mm512_packs_epi16(ab, cd);
            if matches!(I::DTYPE, DType::BF16) {
                // `load_step`'s order: 16-byte lane l holds elements 8l + (0, 2, 4, 6),
                // 8l + (1, 3, 5, 7), 32 + 8l + (0, 2, 4, 6), 32 + 8l + (1, 3, 5, 7). An
                // in-lane shuffle puts 8l..8l + 8 in its low and 32 + 8l.. in its high qword,
                // then the qwords go to their places.
                let pairs = _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
                let inlane = _mm512_shuffle_epi8(bytes, _mm512_broadcast_i32x4(pairs));
                let qwords = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
                return _mm512_permutexvar_epi64(qwords, inlane);
            }
            // After the two in-lane packs, dword 4·l + j holds vector j's elements 4·l..4·l+4.
            let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
            _mm512_permutexvar_epi32(order, bytes)
        }

        fn fence(self) {
            _mm_sfence();
        }

        unsafe fn load_step<I: InputFormat>(self, ptr: *const u8) -> [__m512; 4] {
            if matches!(I::DTYPE, DType::BF16) {
                // Two vectors of 32 BF16 values: a 32-bit lane's low half (shifted up) is an
                // even element, its high half (low half cleared) the next, odd one; two
                // operations per 32 elements instead of a widening and a shift per 16.
                // `narrow_step` restores the element order.
                // SAFETY: (both loads) the caller guarantees 128 readable bytes at `ptr`.
                let x = unsafe { _mm512_loadu_si512(ptr.cast()) };
                // SAFETY: as above.
                let y = unsafe { _mm512_loadu_si512(ptr.wrapping_add(64).cast()) };
                let high = _mm512_set1_epi32(0xffff_0000u32 as i32);
                return [
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(x)),
                    _mm512_castsi512_ps(_mm512_and_si512(x, high)),
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(y)),
                    _mm512_castsi512_ps(_mm512_and_si512(y, high)),
                ];
            }
            // SAFETY: the caller guarantees 64 · I::SIZE readable bytes at `ptr`, what
            // `load_four` needs.
            unsafe { load_four::<Self, I>(self, ptr) }
        }

        unsafe fn load<I: InputFormat>(self, ptr: *const u8) -> __m512 {
            match const { Load::of::<I>() } {
                // SAFETY: the caller guarantees 64 readable bytes at `ptr`.
                Load::F32 => unsafe { _mm512_loadu_ps(ptr.cast()) },
                // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
                Load::F16 => _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(ptr.cast()) }),
                Load::Bf16 => {
                    // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
                    let raw = unsafe { _mm256_loadu_si256(ptr.cast()) };
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(raw)))
                }
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

        unsafe fn load_step_partial<I: InputFormat>(self, ptr: *const u8, n: usize) -> [__m512; 4] {
            // Masked loads: masked-off elements are not accessed (no fault, no read), and
            // their lanes are zero. The same decodings as `load_step`, in its order. Each
            // vector is loaded at the narrowest width (16, 32 or 64 bytes) that holds its
            // elements below n: a masked load waits for every earlier store that overlaps its
            // whole width, masked-off lanes included, so a wider one would wait for the
            // previous call's output stores when the output lies just past the input (issue
            // 24: short runs of adjacent small buffers).
            // One mask of the first n lanes (n < 64, the caller's step), shifted per
            // vector; a vector wholly below n is loaded unmasked, one wholly above is zero.
            let all = (1u64 << n) - 1;
            match const { Load::of::<I>() } {
                Load::Bf16 => {
                    let mut xy = [_mm512_setzero_si512(); 2];
                    for (j, v) in xy.iter_mut().enumerate() {
                        let (base, at) = (32 * j, ptr.wrapping_add(64 * j));
                        let m = all >> base;
                        *v = if n <= base {
                            _mm512_setzero_si512()
                        } else if n <= base + 8 {
                            // SAFETY: the unmasked 16-bit elements are this vector's elements
                            // below n, among the first n at `ptr`, readable (caller).
                            let r = unsafe { _mm_maskz_loadu_epi16(m as u8, at.cast()) };
                            _mm512_zextsi128_si512(r)
                        } else if n <= base + 16 {
                            // SAFETY: as above.
                            let r = unsafe { _mm256_maskz_loadu_epi16(m as u16, at.cast()) };
                            _mm512_zextsi256_si512(r)
                        } else {
                            // SAFETY: as above.
                            unsafe { _mm512_maskz_loadu_epi16(m as u32, at.cast()) }
                        };
                    }
                    let [x, y] = xy;
                    let high = _mm512_set1_epi32(0xffff_0000u32 as i32);
                    [
                        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(x)),
                        _mm512_castsi512_ps(_mm512_and_si512(x, high)),
                        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(y)),
                        _mm512_castsi512_ps(_mm512_and_si512(y, high)),
                    ]
                }
                Load::F32 => {
                    let mut v = [_mm512_setzero_ps(); 4];
                    for (j, v) in v.iter_mut().enumerate() {
                        let (base, at) = (16 * j, ptr.wrapping_add(64 * j));
                        let m = all >> base;
                        *v = if n <= base {
                            _mm512_setzero_ps()
                        } else if n <= base + 4 {
                            // SAFETY: the unmasked elements are this vector's elements below
                            // n, among the first n at `ptr` (caller).
                            let r = unsafe { _mm_maskz_loadu_ps(m as u8, at.cast()) };
                            _mm512_zextps128_ps512(r)
                        } else if n <= base + 8 {
                            // SAFETY: as above.
                            let r = unsafe { _mm256_maskz_loadu_ps(m as u8, at.cast()) };
                            _mm512_zextps256_ps512(r)
                        } else if n < base + 16 {
                            // SAFETY: as above.
                            unsafe { _mm512_maskz_loadu_ps(m as u16, at.cast()) }
                        } else {
                            // SAFETY: the vector's 16 elements are among the first n.
                            unsafe { _mm512_loadu_ps(at.cast()) }
                        };
                    }
                    v
                }
                Load::F16 => {
                    let mut v = [_mm512_setzero_ps(); 4];
                    for (j, v) in v.iter_mut().enumerate() {
                        let (base, at) = (16 * j, ptr.wrapping_add(32 * j));
                        let m = all >> base;
                        *v = if n <= base {
                            _mm512_setzero_ps()
                        } else if n <= base + 8 {
                            // SAFETY: the unmasked elements are this vector's elements below
                            // n, among the first n at `ptr` (caller).
                            let r = unsafe { _mm_maskz_loadu_epi16(m as u8, at.cast()) };
                            _mm512_cvtph_ps(_mm256_zextsi128_si256(r))
                        } else if n < base + 16 {
                            // SAFETY: as above.
                            let r = unsafe { _mm256_maskz_loadu_epi16(m as u16, at.cast()) };
                            _mm512_cvtph_ps(r)
                        } else {
                            // SAFETY: the vector's 16 elements are among the first n.
                            _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(at.cast()) })
                        };
                    }
                    v
                }
            }
        }

        unsafe fn store_partial(self, ptr: *mut u8, bytes: __m512i, n: usize) {
            // At the narrowest width holding the n bytes (see `load_step_partial`: a later
            // masked load overlapping the store's whole width waits for it).
            // n < 64: the caller's step.
            let mask = (1u64 << n) - 1;
            if n <= 16 {
                let low = _mm512_castsi512_si128(bytes);
                // SAFETY: only the first n bytes (writable, caller) are stored.
                unsafe { _mm_mask_storeu_epi8(ptr.cast(), mask as u16, low) }
            } else if n <= 32 {
                let low = _mm512_castsi512_si256(bytes);
                // SAFETY: as above.
                unsafe { _mm256_mask_storeu_epi8(ptr.cast(), mask as u32, low) }
            } else {
                // SAFETY: as above.
                unsafe { _mm512_mask_storeu_epi8(ptr.cast(), mask, bytes) }
            }
        }
    }
}

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

lanes! {
    impl ConvertLanes for Avx512 with "avx2,f16c,avx512f,avx512bw,avx512vl" {
        type U32 = __m512i;
        type U16 = __m512i;
        type Mask = __mmask32;
        const LANES: usize = 16;

        fn high_halves(self, a: __m512i, b: __m512i) -> __m512i {
            // SAFETY: the table is 64 readable bytes.
            let high = unsafe { _mm512_loadu_si512(HIGH_WORDS.as_ptr().cast()) };
            _mm512_permutex2var_epi16(a, high, b)
        }

        fn select(self, m: __mmask32, yes: __m512i, no: __m512i) -> __m512i {
            _mm512_mask_blend_epi16(m, no, yes)
        }

        fn any(self, m: __mmask32) -> bool {
            m != 0
        }

        unsafe fn load32(self, ptr: *const u8) -> __m512i {
            // SAFETY: the caller guarantees 64 readable bytes at `ptr`.
            unsafe { _mm512_loadu_si512(ptr.cast()) }
        }

        unsafe fn load16(self, ptr: *const u8) -> __m512i {
            // SAFETY: the caller guarantees 64 readable bytes at `ptr`.
            unsafe { _mm512_loadu_si512(ptr.cast()) }
        }

        unsafe fn store16(self, ptr: *mut u8, v: __m512i) {
            // SAFETY: the caller guarantees 64 writable bytes at `ptr`.
            unsafe { _mm512_storeu_si512(ptr.cast(), v) }
        }

        inline {
            ops! {
                splat splat32(u32 as i32) -> __m512i = _mm512_set1_epi32;
                splat splat16(u16 as i16) -> __m512i = _mm512_set1_epi16;
                binary add32(__m512i) -> __m512i = _mm512_add_epi32;
                binary and32(__m512i) -> __m512i = _mm512_and_si512;
                unary shr32_16(__m512i) -> __m512i = _mm512_srli_epi32::<16>;
                binary add16(__m512i) -> __m512i = _mm512_add_epi16;
                binary sub16(__m512i) -> __m512i = _mm512_sub_epi16;
                binary and16(__m512i) -> __m512i = _mm512_and_si512;
                binary or16(__m512i) -> __m512i = _mm512_or_si512;
                binary gt16(__m512i) -> __mmask32 = _mm512_cmpgt_epu16_mask;
                binary eq16(__m512i) -> __mmask32 = _mm512_cmpeq_epi16_mask;
            }
            // The immediate forms take a `u32` count here: shift by a constant vector count,
            // which compiles to the immediate form.
            #[inline(always)]
            fn shl16<const K: i32>(self, a: __m512i) -> __m512i {
                // SAFETY: SSE2 is part of the x86-64 baseline.
                let count = unsafe { _mm_cvtsi32_si128(K) };
                // SAFETY: `self` proves AVX-512BW.
                unsafe { _mm512_sll_epi16(a, count) }
            }
            #[inline(always)]
            fn shr16<const K: i32>(self, a: __m512i) -> __m512i {
                // SAFETY: SSE2 is part of the x86-64 baseline.
                let count = unsafe { _mm_cvtsi32_si128(K) };
                // SAFETY: `self` proves AVX-512BW.
                unsafe { _mm512_srl_epi16(a, count) }
            }
            #[inline(always)]
            fn sra16<const K: i32>(self, a: __m512i) -> __m512i {
                // SAFETY: SSE2 is part of the x86-64 baseline.
                let count = unsafe { _mm_cvtsi32_si128(K) };
                // SAFETY: `self` proves AVX-512BW.
                unsafe { _mm512_sra_epi16(a, count) }
            }
        }
    }
}

/// Byte mask of the first `n` bytes of a 64-byte vector (`n` < 64).
#[inline(always)]
fn head_mask(n: usize) -> u64 {
    (1u64 << n) - 1
}

lanes! {
    impl Lines for Avx512 with "avx2,f16c,avx512f,avx512bw,avx512vl" {
        type Line = __m512i;

        fn fence(self) {
            _mm_sfence();
        }

        unsafe fn load_line(self, ptr: *const u8) -> __m512i {
            // SAFETY: the caller guarantees 64 readable bytes at `ptr`.
            unsafe { _mm512_loadu_si512(ptr.cast()) }
        }

        unsafe fn store_line(self, ptr: *mut u8, v: __m512i, nt: bool) {
            if nt {
                // SAFETY: the caller guarantees 64 writable, 64-byte aligned bytes at `ptr`.
                unsafe { _mm512_stream_si512(ptr.cast(), v) }
            } else {
                // SAFETY: the caller guarantees 64 writable bytes at `ptr`.
                unsafe { _mm512_storeu_si512(ptr.cast(), v) }
            }
        }

        unsafe fn store_head(self, ptr: *mut u8, v: __m512i, n: usize) {
            // SAFETY: the mask selects the first `n` bytes, which the caller guarantees.
            unsafe { _mm512_mask_storeu_epi8(ptr.cast(), head_mask(n), v) }
        }

        inline {
            #[inline(always)]
            fn align<const IMM: i32>(self, hi: __m512i, lo: __m512i) -> __m512i {
                // SAFETY: `self` proves AVX-512F.
                unsafe { _mm512_alignr_epi32::<IMM>(hi, lo) }
            }
        }
    }
}

/// The band split's shuffles (`vpshufb`) of output line `k` from the windows 4 bytes before
/// and after each lane: `[first window, second window]`.
static SPLIT: [[[u8; 64]; 2]; 3] = {
    let mut t = [[[0u8; 64]; 2]; 3];
    let mut k = 0;
    while k < 3 {
        t[k] = [
            window_pattern(64 * k, 4, false),
            window_pattern(64 * k, 4, true),
        ];
        k += 1;
    }
    t
};

lanes! {
    impl BandLanes for Avx512 with "avx2,f16c,avx512f,avx512bw,avx512vl" {
        type Convert = Avx512;
        type Lines = Avx512;
        const PARTS: usize = 1;
        const STREAMS: bool = true;

        fn line(self, parts: [__m512i; 4]) -> __m512i {
            parts[0]
        }

        fn split3(self, p: [__m512i; 3]) -> [__m512i; 3] {
            // Line k: per 16-byte lane j, two in-lane shuffles of the stream windows from
            // 16j − 4 (`valignd` by −1 dword) and from 16j + 4 (+1 dword).
            let mut out = p;
            let mut k = 0;
            while k < 3 {
                let before = if k == 0 { p[0] } else { p[k - 1] };
                let after = if k == 2 { p[2] } else { p[k + 1] };
                let w1 = _mm512_alignr_epi32::<15>(p[k], before);
                let w2 = _mm512_alignr_epi32::<1>(after, p[k]);
                // SAFETY: (both loads) each table entry is 64 readable bytes.
                let a = unsafe { _mm512_loadu_si512(SPLIT[k][0].as_ptr().cast()) };
                // SAFETY: as above.
                let b = unsafe { _mm512_loadu_si512(SPLIT[k][1].as_ptr().cast()) };
                out[k] = _mm512_or_si512(_mm512_shuffle_epi8(w1, a), _mm512_shuffle_epi8(w2, b));
                k += 1;
            }
            out
        }

        inline {
            #[inline(always)]
            fn convert(self) -> Avx512 {
                self
            }

            #[inline(always)]
            fn lines(self) -> Avx512 {
                self
            }
        }
    }
}

/// The AVX2 blocks (256-bit), inlined into the AVX-512 entry: no 512-bit body is written
/// until it can be measured and tested on an AVX-512 machine.
impl DequantLanes for Avx512 {
    #[inline(always)]
    fn i8x16(self, src: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale) {
        self.avx2().i8x16(src, out, zp, scale);
    }

    #[inline(always)]
    fn i16x16(self, lo: &[u8; 16], hi: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale) {
        self.avx2().i16x16(lo, hi, out, zp, scale);
    }
}

/// The SSE4.1 block, inlined into the AVX-512 entry.
impl YuvLanes for Avx512 {
    #[inline(always)]
    fn yuv16(self, y: &[u8; 16], u: &[u8; 8], v: &[u8; 8], out: &mut [u8; 48]) {
        self.avx2().sse41().yuv16(y, u, v, out);
    }
}
