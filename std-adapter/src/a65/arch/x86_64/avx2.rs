//! AVX2 + F16C lanes: the Quant loop (32 elements per step), the BF16 conversions, the
//! plane split (SSSE3 lanes) and the band kernel.

use core::arch::x86_64::*;

use simak_core::arith::quant::{InputFormat, RoundingMode};
use simak_core::ops::quant::Rounding;

use super::super::super::untess::Scale;
use super::super::affine::{Affine3, AffineLanes, PERIOD};
use super::super::band::{BandLanes, Lines, window_pattern};
use super::super::bf16map::{Bf16Lanes, Bf16Map3, MASKS, Steps};
use super::super::convert::ConvertLanes;
use super::super::dequant::DequantLanes;
use super::super::isa::{Avx2, lanes, ops};
use super::super::quant::{Load, QuantLanes};
use super::super::split::SplitLanes;
use super::super::yuv::{YuvLanes, nv12_blocks, pixel_blocks};
use super::CLAMP_HI;
use super::sse41::store_interleaved3;

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
            match const { Load::of::<I>() } {
                // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
                Load::F32 => unsafe { _mm256_loadu_ps(ptr.cast()) },
                // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
                Load::F16 => _mm256_cvtph_ps(unsafe { _mm_loadu_si128(ptr.cast()) }),
                Load::Bf16 => {
                    // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
                    let raw = unsafe { _mm_loadu_si128(ptr.cast()) };
                    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(raw)))
                }
            }
        }

        unsafe fn store(self, ptr: *mut u8, bytes: __m256i, _stream: bool) {
            // SAFETY: the caller guarantees 32 writable bytes at `ptr`.
            unsafe { _mm256_storeu_si256(ptr.cast(), bytes) }
        }

        unsafe fn load_step_partial<I: InputFormat>(self, ptr: *const u8, n: usize) -> [__m256; 4] {
            if n >= 8 {
                // Overlapping whole vectors: vector j holds elements o_j..o_j + 8 with
                // o_j = min(8j, n − 8) (`store_partial` stores them back at o_j), so every
                // load is a plain one of bytes of the run.
                let mut v = [_mm256_setzero_ps(); 4];
                for (j, v) in v.iter_mut().enumerate() {
                    let at = ptr.wrapping_add((8 * j).min(n - 8) * I::SIZE);
                    // SAFETY: the vector's 8 elements end at or before element n (caller).
                    *v = unsafe { <Self as QuantLanes>::load::<I>(self, at) };
                }
                return v;
            }
            // Fewer than 8 elements: vector 0 holds them (the other lanes and vectors zeros),
            // read by a masked load (FP32: the narrowest width holding the n elements, since
            // a masked load waits for every earlier store overlapping its whole width, such
            // as the previous call's output just past the input) or, for the 16-bit formats,
            // the n / 2 whole dwords by a masked load and an odd last element by a 2-byte
            // load blended into its lane (no branch on the byte count).
            let first = match const { Load::of::<I>() } {
                Load::F32 if n <= 4 => {
                    let index = _mm_setr_epi32(0, 1, 2, 3);
                    let mask = _mm_cmpgt_epi32(_mm_set1_epi32(n as i32), index);
                    // SAFETY: masked-off elements are not accessed; the others are below n
                    // (caller).
                    _mm256_zextps128_ps256(unsafe { _mm_maskload_ps(ptr.cast(), mask) })
                }
                Load::F32 => {
                    let index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
                    let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), index);
                    // SAFETY: as above.
                    unsafe { _mm256_maskload_ps(ptr.cast(), mask) }
                }
                Load::F16 | Load::Bf16 => {
                    let index = _mm_setr_epi32(0, 1, 2, 3);
                    let dwords = _mm_set1_epi32((n / 2) as i32);
                    let mask = _mm_cmpgt_epi32(dwords, index);
                    // SAFETY: masked-off dwords are not accessed; the others hold elements
                    // below n (caller).
                    let mut raw = unsafe { _mm_maskload_epi32(ptr.cast(), mask) };
                    if n % 2 == 1 {
                        // SAFETY: element n − 1, below n (caller).
                        let last = unsafe {
                            core::ptr::read_unaligned(ptr.wrapping_add(2 * (n - 1)).cast::<u16>())
                        };
                        let lane = _mm_cmpeq_epi32(dwords, index);
                        raw = _mm_or_si128(raw, _mm_and_si128(lane, _mm_set1_epi32(i32::from(last))));
                    }
                    match const { Load::of::<I>() } {
                        Load::F16 => _mm256_cvtph_ps(raw),
                        _ => _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(raw))),
                    }
                }
            };
            [first, _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()]
        }

        unsafe fn store_partial(self, ptr: *mut u8, bytes: __m256i, n: usize) {
            // `load_step_partial`'s arrangement: 8-byte group j at o_j = min(8j, n − 8) for
            // n ≥ 8 (overlapping groups rewrite the same bytes), else group 0's n bytes.
            let lo = _mm256_castsi256_si128(bytes);
            let hi = _mm256_extracti128_si256::<1>(bytes);
            let groups = [
                _mm_cvtsi128_si64(lo) as u64,
                _mm_extract_epi64::<1>(lo) as u64,
                _mm_cvtsi128_si64(hi) as u64,
                _mm_extract_epi64::<1>(hi) as u64,
            ];
            if n >= 8 {
                for (j, g) in groups.into_iter().enumerate() {
                    // SAFETY: the group's 8 bytes end at or before byte n, writable (caller).
                    unsafe {
                        core::ptr::write_unaligned(ptr.wrapping_add((8 * j).min(n - 8)).cast::<u64>(), g)
                    };
                }
                return;
            }
            // n < 8: two overlapping stores of the widest size that fits n.
            let g = groups[0];
            if n >= 4 {
                // SAFETY: bytes 0..4, below n, writable (caller).
                unsafe { core::ptr::write_unaligned(ptr.cast::<u32>(), g as u32) };
                let last = (g >> (8 * (n - 4))) as u32;
                // SAFETY: bytes n − 4..n, writable (caller).
                unsafe { core::ptr::write_unaligned(ptr.wrapping_add(n - 4).cast::<u32>(), last) };
            } else if n >= 2 {
                // SAFETY: bytes 0..2, below n, writable (caller).
                unsafe { core::ptr::write_unaligned(ptr.cast::<u16>(), g as u16) };
                let last = (g >> (8 * (n - 2))) as u16;
                // SAFETY: bytes n − 2..n, writable (caller).
                unsafe { core::ptr::write_unaligned(ptr.wrapping_add(n - 2).cast::<u16>(), last) };
            } else if n == 1 {
                // SAFETY: one writable byte at `ptr` (caller).
                unsafe { *ptr = g as u8 };
            }
        }
    }
}

lanes! {
    impl ConvertLanes for Avx2 with "avx2,f16c" {
        type U32 = __m256i;
        type U16 = __m256i;
        type Mask = __m256i;
        const LANES: usize = 8;

        fn high_halves(self, a: __m256i, b: __m256i) -> __m256i {
            // packus works in 128-bit halves: [a0..3 b0..3 a4..7 b4..7] → reorder the qwords.
            let (a, b) = (_mm256_srli_epi32::<16>(a), _mm256_srli_epi32::<16>(b));
            _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(a, b))
        }

        fn select(self, m: __m256i, yes: __m256i, no: __m256i) -> __m256i {
            _mm256_blendv_epi8(no, yes, m)
        }

        fn any(self, m: __m256i) -> bool {
            _mm256_movemask_epi8(m) != 0
        }

        unsafe fn load32(self, ptr: *const u8) -> __m256i {
            // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
            unsafe { _mm256_loadu_si256(ptr.cast()) }
        }

        unsafe fn load16(self, ptr: *const u8) -> __m256i {
            // SAFETY: the caller guarantees 32 readable bytes at `ptr`.
            unsafe { _mm256_loadu_si256(ptr.cast()) }
        }

        unsafe fn store16(self, ptr: *mut u8, v: __m256i) {
            // SAFETY: the caller guarantees 32 writable bytes at `ptr`.
            unsafe { _mm256_storeu_si256(ptr.cast(), v) }
        }

        inline {
            ops! {
                splat splat32(u32 as i32) -> __m256i = _mm256_set1_epi32;
                splat splat16(u16 as i16) -> __m256i = _mm256_set1_epi16;
                binary add32(__m256i) -> __m256i = _mm256_add_epi32;
                binary and32(__m256i) -> __m256i = _mm256_and_si256;
                unary shr32_16(__m256i) -> __m256i = _mm256_srli_epi32::<16>;
                binary add16(__m256i) -> __m256i = _mm256_add_epi16;
                binary sub16(__m256i) -> __m256i = _mm256_sub_epi16;
                binary and16(__m256i) -> __m256i = _mm256_and_si256;
                binary or16(__m256i) -> __m256i = _mm256_or_si256;
                shift shl16(__m256i) = _mm256_slli_epi16;
                shift shr16(__m256i) = _mm256_srli_epi16;
                shift sra16(__m256i) = _mm256_srai_epi16;
                // Signed compares: every compared lane is below 0x8000.
                binary gt16(__m256i) -> __m256i = _mm256_cmpgt_epi16;
                binary eq16(__m256i) -> __m256i = _mm256_cmpeq_epi16;
            }
        }
    }
}

lanes! {
    impl SplitLanes for Avx2 with "avx2,f16c" {
        type V = __m128i;

        fn zero(self) -> __m128i {
            _mm_setzero_si128()
        }

        fn shuffle(self, v: __m128i, pattern: __m128i) -> __m128i {
            _mm_shuffle_epi8(v, pattern)
        }

        fn split16(self, a: __m128i, b: __m128i, k: usize) -> (__m128i, __m128i) {
            // Zero the u16 lanes ≥ k of a:b, then pack their low and high bytes.
            let kk = _mm_set1_epi16(k.min(16) as i16);
            let a = _mm_and_si128(a, _mm_cmpgt_epi16(kk, _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7)));
            let b = _mm_and_si128(
                b,
                _mm_cmpgt_epi16(kk, _mm_setr_epi16(8, 9, 10, 11, 12, 13, 14, 15)),
            );
            let low = _mm_set1_epi16(0x00ff);
            let lo = _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low));
            (lo, _mm_packus_epi16(_mm_srli_epi16::<8>(a), _mm_srli_epi16::<8>(b)))
        }

        unsafe fn load(self, ptr: *const u8) -> __m128i {
            // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
            unsafe { _mm_loadu_si128(ptr.cast()) }
        }

        unsafe fn store(self, ptr: *mut u8, v: __m128i) {
            // SAFETY: the caller guarantees 16 writable bytes at `ptr`.
            unsafe { _mm_storeu_si128(ptr.cast(), v) }
        }
    }
}

lanes! {
    impl Lines for Avx2 with "avx2,f16c" {
        type Line = [__m256i; 2];

        unsafe fn load_line(self, ptr: *const u8) -> [__m256i; 2] {
            // SAFETY: (both loads) the caller guarantees 64 readable bytes at `ptr`.
            let a = unsafe { _mm256_loadu_si256(ptr.cast()) };
            // SAFETY: as above.
            [a, unsafe { _mm256_loadu_si256(ptr.wrapping_add(32).cast()) }]
        }

        unsafe fn store_line(self, ptr: *mut u8, v: [__m256i; 2], nt: bool) {
            let (a, b) = (ptr.cast::<__m256i>(), ptr.wrapping_add(32).cast::<__m256i>());
            if nt {
                // SAFETY: (both stores) the caller guarantees 64 writable, 64-byte aligned
                // bytes at `ptr`.
                unsafe { _mm256_stream_si256(a, v[0]) };
                // SAFETY: as above.
                unsafe { _mm256_stream_si256(b, v[1]) };
            } else {
                // SAFETY: (both stores) the caller guarantees 64 writable bytes at `ptr`.
                unsafe { _mm256_storeu_si256(a, v[0]) };
                // SAFETY: as above.
                unsafe { _mm256_storeu_si256(b, v[1]) };
            }
        }

        unsafe fn store_head(self, ptr: *mut u8, v: [__m256i; 2], n: usize) {
            if n >= 32 {
                // SAFETY: the caller guarantees `n` ≥ 32 writable bytes at `ptr`.
                unsafe { _mm256_storeu_si256(ptr.cast(), v[0]) };
            }
            let (at, half) = if n >= 32 { (32, v[1]) } else { (0, v[0]) };
            if n % 32 == 16 {
                let low = _mm256_castsi256_si128(half);
                // SAFETY: bytes `at .. at + 16` lie in the caller's `n`.
                unsafe { _mm_storeu_si128(ptr.wrapping_add(at).cast(), low) };
            }
        }

        inline {
            #[inline(always)]
            fn align<const IMM: i32>(self, hi: [__m256i; 2], lo: [__m256i; 2]) -> [__m256i; 2] {
                // Whole 16-byte lanes: IMM 4 (16 bytes), 8 (32) or 12 (48).
                match IMM {
                    8 => [lo[1], hi[0]],
                    4 => [
                        // SAFETY: (both) `self` proves AVX2.
                        unsafe { _mm256_permute2x128_si256::<0x21>(lo[0], lo[1]) },
                        // SAFETY: as above.
                        unsafe { _mm256_permute2x128_si256::<0x21>(lo[1], hi[0]) },
                    ],
                    _ => [
                        // SAFETY: (both) `self` proves AVX2.
                        unsafe { _mm256_permute2x128_si256::<0x21>(lo[1], hi[0]) },
                        // SAFETY: as above.
                        unsafe { _mm256_permute2x128_si256::<0x21>(hi[0], hi[1]) },
                    ],
                }
            }
        }
    }
}

/// The band split's shuffles (`vpshufb`) of output vector `r` (32 bytes) from the windows
/// 4 bytes before and after each lane: `[first window, second window]`.
static SPLIT: [[[u8; 32]; 2]; 6] = {
    let mut t = [[[0u8; 32]; 2]; 6];
    let mut r = 0;
    while r < 6 {
        let (a, b) = (
            window_pattern(32 * r, 4, false),
            window_pattern(32 * r, 4, true),
        );
        let mut i = 0;
        while i < 32 {
            t[r][0][i] = a[i];
            t[r][1][i] = b[i];
            i += 1;
        }
        r += 1;
    }
    t
};

lanes! {
    impl BandLanes for Avx2 with "avx2,f16c" {
        type Convert = Avx2;
        type Lines = Avx2;
        const PARTS: usize = 2;
        const STREAMS: bool = true;

        fn line(self, parts: [__m256i; 4]) -> [__m256i; 2] {
            [parts[0], parts[1]]
        }

        fn split3(self, p: [[__m256i; 2]; 3]) -> [[__m256i; 2]; 3] {
            // Vector r (lanes j = 2r, 2r + 1): two in-lane shuffles of the stream windows
            // from 16j − 4 (`vpalignr` by 12 of [x_{j-1}, x_j]) and from 16j + 4 (by 4 of
            // [x_{j+1}, x_{j+2}] and x_j), `x` the 16-byte lanes of the stream.
            let v = [p[0][0], p[0][1], p[1][0], p[1][1], p[2][0], p[2][1]];
            let mut out = v;
            // `shifted[r]` = [x_{2r-1}, x_{2r}] (r = 0: x_0 twice; x_{-1} is never picked).
            let mut prev = _mm256_permute2x128_si256::<0x00>(v[0], v[0]);
            let mut r = 0;
            while r < 6 {
                let next = if r == 5 {
                    // x_12 lies past the block and is never picked.
                    _mm256_permute2x128_si256::<0x11>(v[5], v[5])
                } else {
                    _mm256_permute2x128_si256::<0x21>(v[r], v[r + 1])
                };
                let w1 = _mm256_alignr_epi8::<12>(v[r], prev);
                let w2 = _mm256_alignr_epi8::<4>(next, v[r]);
                // SAFETY: (both loads) each table entry is 32 readable bytes.
                let a = unsafe { _mm256_loadu_si256(SPLIT[r][0].as_ptr().cast()) };
                // SAFETY: as above.
                let b = unsafe { _mm256_loadu_si256(SPLIT[r][1].as_ptr().cast()) };
                out[r] = _mm256_or_si256(_mm256_shuffle_epi8(w1, a), _mm256_shuffle_epi8(w2, b));
                prev = next;
                r += 1;
            }
            [[out[0], out[1]], [out[2], out[3]], [out[4], out[5]]]
        }

        inline {
            #[inline(always)]
            fn convert(self) -> Avx2 {
                self
            }

            #[inline(always)]
            fn lines(self) -> Avx2 {
                self
            }
        }
    }
}

/// The common end of the [`DequantLanes`] blocks: each vector of INT32 codes `$q` to
/// binary32 (exact), minus the zero point `$zp`, then `$scale`'s computation, stored into
/// `$out` in order. A macro, so that it expands inside the level's `#[target_feature]` body.
macro_rules! dequant_store {
    ($q:expr, $out:expr, $zp:expr, $scale:expr) => {{
        let z = _mm256_set1_ps($zp);
        for (o, q) in $out.chunks_exact_mut(32).zip($q) {
            let x = _mm256_sub_ps(_mm256_cvtepi32_ps(q), z);
            let y = match $scale {
                Scale::Mul32(r) => _mm256_mul_ps(x, _mm256_set1_ps(r)),
                Scale::Div(s) => _mm256_div_ps(x, _mm256_set1_ps(s)),
            };
            // SAFETY: `o` is 32 writable bytes of the output; an unaligned store.
            unsafe { _mm256_storeu_ps(o.as_mut_ptr().cast(), y) };
        }
    }};
}

lanes! {
    impl DequantLanes for Avx2 with "avx2,f16c" {
        fn i8x16(self, src: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale) {
            // SAFETY: `src` is 16 readable bytes; an unaligned load.
            let v = unsafe { _mm_loadu_si128(src.as_ptr().cast()) };
            let q = [_mm256_cvtepi8_epi32(v), _mm256_cvtepi8_epi32(_mm_srli_si128::<8>(v))];
            dequant_store!(q, out, zp, scale);
        }

        fn i16x16(self, lo: &[u8; 16], hi: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale) {
            // SAFETY: `lo` is 16 readable bytes; an unaligned load.
            let l = unsafe { _mm_loadu_si128(lo.as_ptr().cast()) };
            // SAFETY: `hi` is 16 readable bytes; an unaligned load.
            let h = unsafe { _mm_loadu_si128(hi.as_ptr().cast()) };
            // Interleaved, the planes give each code's 16 bits.
            let q = [
                _mm256_cvtepi16_epi32(_mm_unpacklo_epi8(l, h)),
                _mm256_cvtepi16_epi32(_mm_unpackhi_epi8(l, h)),
            ];
            dequant_store!(q, out, zp, scale);
        }
    }
}

lanes! {
    impl AffineLanes for Avx2 with "avx2,f16c" {
        fn affine3(self, k: &Affine3, src: &[u8], dst: &mut [u8]) -> usize {
            let n = src.len().min(dst.len()) / PERIOD * PERIOD;
            // Group `g` of 8 bytes starts at channel phase `8g % 3`: the vectors at bytes
            // 0, 8 and 16 (phases 0, 2, 1) cover every group.
            // SAFETY: `8g + 8 ≤ 24 ≤ PERIOD`: 8 readable `i32`.
            let at = |v: &[i32; PERIOD], g: usize| unsafe { _mm256_loadu_si256(v.as_ptr().wrapping_add(8 * g).cast()) };
            let (a, b) = ([0, 1, 2].map(|g| at(&k.a, g)), [0, 1, 2].map(|g| at(&k.b, g)));
            // The packs work per 128-bit half: they leave the 4-byte groups of a 32-byte
            // chunk in the order 0, 2, 4, 6, 1, 3, 5, 7.
            let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
            for i in (0..n).step_by(PERIOD) {
                for c in 0..3 {
                    let y: [__m256i; 4] = core::array::from_fn(|q| {
                        let g = 4 * c + q;
                        // SAFETY: `i + 8g + 8 ≤ n ≤ src.len()`: 8 readable bytes.
                        let x = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(src.as_ptr().wrapping_add(i + 8 * g).cast()) });
                        _mm256_srai_epi32::<16>(_mm256_add_epi32(_mm256_mullo_epi32(x, a[g % 3]), b[g % 3]))
                    });
                    let v = _mm256_packs_epi16(_mm256_packs_epi32(y[0], y[1]), _mm256_packs_epi32(y[2], y[3]));
                    let v = _mm256_permutevar8x32_epi32(v, order);
                    // SAFETY: `i + 32c + 32 ≤ n ≤ dst.len()`; an unaligned store.
                    unsafe { _mm256_storeu_si256(dst.as_mut_ptr().wrapping_add(i + 32 * c).cast(), v) };
                }
            }
            n
        }
    }
}

lanes! {
    impl YuvLanes for Avx2 with "avx2,f16c" {
        fn yuv16(self, y: &[u8; 16], u: &[u8; 8], v: &[u8; 8], out: &mut [u8; 48]) {
            // SAFETY: `u` is 8 readable bytes.
            let u = unsafe { _mm_loadl_epi64(u.as_ptr().cast()) };
            // SAFETY: `v` is 8 readable bytes.
            let v = unsafe { _mm_loadl_epi64(v.as_ptr().cast()) };
            yuv16_avx2(y, u, v, out);
        }

        fn yuv16_nv12(self, y: &[u8; 16], uv: &[u8; 16], out: &mut [u8; 48]) {
            yuv16_avx2_nv12(y, uv, out);
        }

        fn yuv_nv12_blocks(self, y: &[u8], uv: &[u8], out: &mut [u8]) -> usize {
            let mut n = 0;
            // A loop, not an iterator adaptor: a closure would not be inlined into this body.
            for (y, uv, o) in nv12_blocks(y, uv, out) {
                yuv16_avx2_nv12(y, uv, o);
                n += 1;
            }
            n
        }

        fn yuv_nv12_pair_blocks(
            self,
            y0: &[u8],
            y1: &[u8],
            uv: &[u8],
            out0: &mut [u8],
            out1: &mut [u8],
        ) -> usize {
            let mut n = 0;
            for ((y0, uv, o0), (y1, o1)) in nv12_blocks(y0, uv, out0).zip(pixel_blocks(y1, out1)) {
                // One chroma block for the two rows.
                let (u, v) = split_nv12_avx2(uv);
                let terms = chroma16_avx2(u, v);
                luma16_avx2(y0, &terms, o0);
                luma16_avx2(y1, &terms, o1);
                n += 1;
            }
            n
        }
    }
}

/// The 8 pairs of an NV12 chroma block as U (low 8 bytes of the first vector) and V (of
/// the second), split by one shuffle.
#[target_feature(enable = "avx2")]
#[inline]
fn split_nv12_avx2(uv: &[u8; 16]) -> (__m128i, __m128i) {
    // SAFETY: `uv` is 16 readable bytes; an unaligned load.
    let pairs = unsafe { _mm_loadu_si128(uv.as_ptr().cast()) };
    // The U (even) bytes, then the V (odd) bytes.
    let split = _mm_shuffle_epi8(
        pairs,
        _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15),
    );
    (split, _mm_srli_si128::<8>(split))
}

/// The block of 16 NV12 pixels.
#[target_feature(enable = "avx2")]
#[inline]
fn yuv16_avx2_nv12(y: &[u8; 16], uv: &[u8; 16], out: &mut [u8; 48]) {
    let (u, v) = split_nv12_avx2(uv);
    yuv16_avx2(y, u, v, out);
}

/// The AVX2 YUV block (SSE4.1's in 8 lanes): luma `y`, the 8 pairs' U and V in the low 8
/// bytes of `u` and `v`.
#[target_feature(enable = "avx2")]
#[inline]
fn yuv16_avx2(y: &[u8; 16], u: __m128i, v: __m128i, out: &mut [u8; 48]) {
    luma16_avx2(y, &chroma16_avx2(u, v), out);
}

/// The chroma terms of 8 pairs (U and V in the low 8 bytes of `u` and `v`), each pair's
/// computed once and spread to its two pixels: `[channel][half]`, pixels `8·half..` of
/// the block, R, G, B.
#[target_feature(enable = "avx2")]
#[inline]
fn chroma16_avx2(u: __m128i, v: __m128i) -> [[__m256i; 2]; 3] {
    let c128 = _mm256_set1_epi32(128);
    let (u, v) = (
        _mm256_sub_epi32(_mm256_cvtepu8_epi32(u), c128),
        _mm256_sub_epi32(_mm256_cvtepu8_epi32(v), c128),
    );
    let terms = [
        _mm256_mullo_epi32(v, _mm256_set1_epi32(1_673_527)),
        _mm256_add_epi32(
            _mm256_mullo_epi32(v, _mm256_set1_epi32(-852_492)),
            _mm256_mullo_epi32(u, _mm256_set1_epi32(-409_993)),
        ),
        _mm256_mullo_epi32(u, _mm256_set1_epi32(2_116_026)),
    ];
    let (lo, hi) = (
        _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3),
        _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7),
    );
    // Without closures, which would not be inlined into this body.
    [
        [
            _mm256_permutevar8x32_epi32(terms[0], lo),
            _mm256_permutevar8x32_epi32(terms[0], hi),
        ],
        [
            _mm256_permutevar8x32_epi32(terms[1], lo),
            _mm256_permutevar8x32_epi32(terms[1], hi),
        ],
        [
            _mm256_permutevar8x32_epi32(terms[2], lo),
            _mm256_permutevar8x32_epi32(terms[2], hi),
        ],
    ]
}

/// 16 pixels of luma `y` with their chroma terms ([`chroma16_avx2`]) into `out` as R, G,
/// B bytes per pixel.
#[target_feature(enable = "avx2")]
#[inline]
fn luma16_avx2(y: &[u8; 16], terms: &[[__m256i; 2]; 3], out: &mut [u8; 48]) {
    let (c16, zero) = (_mm256_set1_epi32(16), _mm256_setzero_si256());
    let mut rgb = [[zero; 2]; 3];
    for h in 0..2 {
        // SAFETY: `8h + 8 ≤ 16`: 8 readable bytes of `y`.
        let yh =
            _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(y.as_ptr().wrapping_add(8 * h).cast()) });
        let luma = _mm256_max_epi32(_mm256_sub_epi32(yh, c16), zero);
        let base = _mm256_add_epi32(
            _mm256_mullo_epi32(luma, _mm256_set1_epi32(1_220_542)),
            _mm256_set1_epi32(1 << 19),
        );
        for (c, t) in terms.iter().enumerate() {
            rgb[c][h] = _mm256_srai_epi32::<20>(_mm256_add_epi32(base, t[h]));
        }
    }
    // Signed then unsigned saturation: exactly the clamp to [0, 255]. The 32 → 16 pack
    // works per 128-bit half; the 64-bit permute restores pixel order.
    macro_rules! plane {
        ($c:expr) => {{
            let w = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(
                rgb[$c][0], rgb[$c][1],
            ));
            _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w))
        }};
    }
    store_interleaved3([plane!(0), plane!(1), plane!(2)], out);
}

lanes! {
    impl Bf16Lanes for Avx2 with "avx2,f16c" {
        fn bf16x3(self, k: &Bf16Map3, src: &[u8], dst: &mut [u8]) -> usize {
            let n = (src.len() / 24).min(dst.len() / 48);
            // Written without closures, which would not be inlined into this level's body.
            // Group `g` of 8 values starts at channel phase `8g % 3`: the vectors at
            // values 0, 8 and 16 (phases 0, 2, 1) are groups 0, 1 and 2 of a block.
            macro_rules! consts {
                ($v:expr) => {
                    [
                        // SAFETY: `16 + 8 ≤ 24 = bf16map::PERIOD`: 8 readable `f32` here and below.
                        unsafe { _mm256_loadu_ps($v.as_ptr()) },
                        // SAFETY: as above.
                        unsafe { _mm256_loadu_ps($v.as_ptr().wrapping_add(8)) },
                        // SAFETY: as above.
                        unsafe { _mm256_loadu_ps($v.as_ptr().wrapping_add(16)) },
                    ]
                };
            }
            let (a, b, c) = (consts!(k.a), consts!(k.b), consts!(k.k));
            let mul = k.steps == Steps::Mul;
            macro_rules! mask {
                ($j:literal, $h:literal) => {
                    // SAFETY: a `MASKS` entry is 16 readable bytes; an unaligned load.
                    unsafe { _mm_loadu_si128(MASKS[$j][$h].as_ptr().cast()) }
                };
            }
            let m = [
                [mask!(0, 0), mask!(0, 1), mask!(0, 2)],
                [mask!(1, 0), mask!(1, 1), mask!(1, 2)],
                [mask!(2, 0), mask!(2, 1), mask!(2, 2)],
            ];
            let (half, one) = (_mm256_set1_epi32(0x7fff), _mm256_set1_epi32(1));
            for off in (0..24 * n).step_by(64) {
                // The next tile's same row (tiles along W are adjacent in the frame): a hint.
                _mm_prefetch::<_MM_HINT_T0>(src.as_ptr().wrapping_add(24 * n + off).cast());
            }
            for i in 0..n {
                let (s, d) = (src.as_ptr().wrapping_add(24 * i), dst.as_mut_ptr().wrapping_add(48 * i));
                macro_rules! group {
                    ($g:literal) => {{
                        // SAFETY: `24i + 8g + 8 ≤ 24n ≤ src.len()`: 8 readable bytes.
                        let p = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(s.wrapping_add(8 * $g).cast()) });
                        let x = _mm256_cvtepi32_ps(p);
                        let v = if mul {
                            _mm256_mul_ps(_mm256_add_ps(_mm256_mul_ps(x, a[$g]), b[$g]), c[$g])
                        } else {
                            _mm256_div_ps(_mm256_add_ps(_mm256_div_ps(x, a[$g]), b[$g]), c[$g])
                        };
                        let bits = _mm256_castps_si256(v);
                        let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(bits), one);
                        let y = _mm256_srli_epi32::<16>(_mm256_add_epi32(_mm256_add_epi32(bits, half), lsb));
                        _mm_packus_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256::<1>(y))
                    }};
                }
                let w = [group!(0), group!(1), group!(2)];
                macro_rules! chunk {
                    ($j:literal) => {{
                        let v = _mm_or_si128(
                            _mm_or_si128(_mm_shuffle_epi8(w[0], m[$j][0]), _mm_shuffle_epi8(w[1], m[$j][1])),
                            _mm_shuffle_epi8(w[2], m[$j][2]),
                        );
                        // SAFETY: `48i + 16j + 16 ≤ 48n ≤ dst.len()`; an unaligned store.
                        unsafe { _mm_storeu_si128(d.wrapping_add(16 * $j).cast(), v) };
                    }};
                }
                chunk!(0);
                chunk!(1);
                chunk!(2);
            }
            8 * n
        }
    }
}
