//! SSE4.1 lanes: the Quant loop for FP32 and BF16 input, 16 elements per step.

use core::arch::x86_64::*;

use simak_core::arith::quant::{InputFormat, RoundingMode};
use simak_core::ops::quant::Rounding;

use super::super::super::untess::Scale;
use super::super::affine::{Affine3, AffineLanes, PERIOD};
use super::super::bf16map::{Bf16Lanes, Bf16Map3, MASKS, Steps};
use super::super::dequant::DequantLanes;
use super::super::isa::{Sse41, lanes};
use super::super::quant::{Load, QuantLanes};
use super::super::yuv::{INTERLEAVE3, YuvLanes, nv12_blocks, pixel_blocks};
use super::{CLAMP_HI, load_partial_128, store_partial_128};

lanes! {
    impl QuantLanes for Sse41 with "sse4.1" {
        type F = __m128;
        type I = __m128i;
        type Zp = __m128i;
        type Bytes = __m128i;
        const LANES: usize = 4;
        const TAKES_F16: bool = false;

        fn splat(self, m: f32) -> __m128 {
            _mm_set1_ps(m)
        }

        fn zero_point(self, zp: i16) -> __m128i {
            _mm_set1_epi16(zp)
        }

        fn convert<M: RoundingMode>(self, x: __m128, m: __m128) -> __m128i {
            let p = _mm_mul_ps(x, m);
            let p = _mm_min_ps(_mm_and_ps(p, _mm_cmpord_ps(p, p)), _mm_set1_ps(CLAMP_HI));
            match M::MODE {
                Rounding::TowardZero => _mm_cvttps_epi32(p),
                Rounding::NearestEven => _mm_cvtps_epi32(p),
                Rounding::TowardPositive => {
                    _mm_cvttps_epi32(_mm_round_ps::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(p))
                }
                Rounding::TowardNegative => {
                    _mm_cvttps_epi32(_mm_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(p))
                }
            }
        }

        fn narrow(self, v: [__m128i; 4], zp: __m128i) -> __m128i {
            let ab = _mm_adds_epi16(_mm_packs_epi32(v[0], v[1]), zp);
            _mm_packs_epi16(ab, _mm_adds_epi16(_mm_packs_epi32(v[2], v[3]), zp))
        }

        unsafe fn load<I: InputFormat>(self, ptr: *const u8) -> __m128 {
            match const { Load::of::<I>() } {
                // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
                Load::F32 => unsafe { _mm_loadu_ps(ptr.cast()) },
                Load::Bf16 => {
                    // SAFETY: the caller guarantees 8 readable bytes at `ptr`.
                    let raw = unsafe { _mm_loadl_epi64(ptr.cast()) };
                    _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), raw))
                }
                Load::F16 => unreachable!("FP16 never reaches the SSE4.1 level (`TAKES_F16`)"),
            }
        }

        unsafe fn store(self, ptr: *mut u8, bytes: __m128i, _stream: bool) {
            // SAFETY: the caller guarantees 16 writable bytes at `ptr`.
            unsafe { _mm_storeu_si128(ptr.cast(), bytes) }
        }

        unsafe fn load_step_partial<I: InputFormat>(self, ptr: *const u8, n: usize) -> [__m128; 4] {
            // `load_four`'s order; each vector's elements below n read by loads of exactly
            // their bytes (no masked loads before AVX).
            let mut v = [_mm_setzero_ps(); 4];
            for (j, v) in v.iter_mut().enumerate() {
                let k = n.saturating_sub(4 * j).min(4);
                let at = ptr.wrapping_add(4 * j * I::SIZE);
                // SAFETY: the k elements' bytes of this vector, among the first n (caller).
                let raw = unsafe { load_partial_128!(at, k * I::SIZE) };
                *v = match const { Load::of::<I>() } {
                    Load::F32 => _mm_castsi128_ps(raw),
                    Load::Bf16 => _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), raw)),
                    Load::F16 => unreachable!("FP16 never reaches the SSE4.1 level (`TAKES_F16`)"),
                };
            }
            v
        }

        unsafe fn store_partial(self, ptr: *mut u8, bytes: __m128i, n: usize) {
            // SAFETY: n < 16 bytes writable at `ptr` (caller).
            unsafe { store_partial_128!(ptr, bytes, n) }
        }
    }
}

/// The common end of the [`DequantLanes`] blocks: each vector of INT32 codes `$q` to
/// binary32 (exact), minus the zero point `$zp`, then `$scale`'s computation, stored into
/// `$out` in order. A macro, so that it expands inside the level's `#[target_feature]` body.
macro_rules! dequant_store {
    ($q:expr, $out:expr, $zp:expr, $scale:expr) => {{
        let z = _mm_set1_ps($zp);
        for (o, q) in $out.chunks_exact_mut(16).zip($q) {
            let x = _mm_sub_ps(_mm_cvtepi32_ps(q), z);
            let y = match $scale {
                Scale::Mul32(r) => _mm_mul_ps(x, _mm_set1_ps(r)),
                Scale::Div(s) => _mm_div_ps(x, _mm_set1_ps(s)),
            };
            // SAFETY: `o` is 16 writable bytes of the output; an unaligned store.
            unsafe { _mm_storeu_ps(o.as_mut_ptr().cast(), y) };
        }
    }};
}

lanes! {
    impl DequantLanes for Sse41 with "sse4.1" {
        fn i8x16(self, src: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale) {
            // SAFETY: `src` is 16 readable bytes; an unaligned load.
            let v = unsafe { _mm_loadu_si128(src.as_ptr().cast()) };
            let q = [
                _mm_cvtepi8_epi32(v),
                _mm_cvtepi8_epi32(_mm_srli_si128::<4>(v)),
                _mm_cvtepi8_epi32(_mm_srli_si128::<8>(v)),
                _mm_cvtepi8_epi32(_mm_srli_si128::<12>(v)),
            ];
            dequant_store!(q, out, zp, scale);
        }

        fn i16x16(self, lo: &[u8; 16], hi: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale) {
            // SAFETY: `lo` is 16 readable bytes; an unaligned load.
            let l = unsafe { _mm_loadu_si128(lo.as_ptr().cast()) };
            // SAFETY: `hi` is 16 readable bytes; an unaligned load.
            let h = unsafe { _mm_loadu_si128(hi.as_ptr().cast()) };
            // Interleaved, the planes give each code's 16 bits.
            let (w0, w1) = (_mm_unpacklo_epi8(l, h), _mm_unpackhi_epi8(l, h));
            let q = [
                _mm_cvtepi16_epi32(w0),
                _mm_cvtepi16_epi32(_mm_srli_si128::<8>(w0)),
                _mm_cvtepi16_epi32(w1),
                _mm_cvtepi16_epi32(_mm_srli_si128::<8>(w1)),
            ];
            dequant_store!(q, out, zp, scale);
        }
    }
}

lanes! {
    impl YuvLanes for Sse41 with "sse4.1" {
        fn yuv16(self, y: &[u8; 16], u: &[u8; 8], v: &[u8; 8], out: &mut [u8; 48]) {
            // SAFETY: `u` is 8 readable bytes.
            let uv = unsafe { _mm_loadl_epi64(u.as_ptr().cast()) };
            // SAFETY: `v` is 8 readable bytes.
            let vv = unsafe { _mm_loadl_epi64(v.as_ptr().cast()) };
            // Each chroma byte twice: pixel k's pair is k / 2.
            yuv16_sse41(y, _mm_unpacklo_epi8(uv, uv), _mm_unpacklo_epi8(vv, vv), out);
        }

        fn yuv16_nv12(self, y: &[u8; 16], uv: &[u8; 16], out: &mut [u8; 48]) {
            yuv16_sse41_nv12(y, uv, out);
        }

        fn yuv_nv12_blocks(self, y: &[u8], uv: &[u8], out: &mut [u8]) -> usize {
            let mut n = 0;
            // A loop, not an iterator adaptor: a closure would not be inlined into this body.
            for (y, uv, o) in nv12_blocks(y, uv, out) {
                yuv16_sse41_nv12(y, uv, o);
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
                let (ud, vd) = spread_nv12_sse41(uv);
                let terms = chroma16_sse41(ud, vd);
                luma16_sse41(y0, &terms, o0);
                luma16_sse41(y1, &terms, o1);
                n += 1;
            }
            n
        }
    }
}

/// Each pixel's U and V of an NV12 chroma block (8 interleaved pairs): each U (even
/// bytes) and each V (odd bytes) twice, by one shuffle each.
#[target_feature(enable = "sse4.1")]
#[inline]
fn spread_nv12_sse41(uv: &[u8; 16]) -> (__m128i, __m128i) {
    // SAFETY: `uv` is 16 readable bytes; an unaligned load.
    let pairs = unsafe { _mm_loadu_si128(uv.as_ptr().cast()) };
    let ud = _mm_shuffle_epi8(
        pairs,
        _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14),
    );
    let vd = _mm_shuffle_epi8(
        pairs,
        _mm_setr_epi8(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15),
    );
    (ud, vd)
}

/// The block of 16 NV12 pixels.
#[target_feature(enable = "sse4.1")]
#[inline]
fn yuv16_sse41_nv12(y: &[u8; 16], uv: &[u8; 16], out: &mut [u8; 48]) {
    let (ud, vd) = spread_nv12_sse41(uv);
    yuv16_sse41(y, ud, vd, out);
}

/// The SSE4.1 YUV block: luma `y`, and each pixel's U and V (`ud`, `vd`: 16 bytes).
#[target_feature(enable = "sse4.1")]
#[inline]
fn yuv16_sse41(y: &[u8; 16], ud: __m128i, vd: __m128i, out: &mut [u8; 48]) {
    luma16_sse41(y, &chroma16_sse41(ud, vd), out);
}

/// The 16 bytes of `x` as four vectors of 32-bit lanes.
#[target_feature(enable = "sse4.1")]
#[inline]
fn quarters_sse41(x: __m128i) -> [__m128i; 4] {
    [
        _mm_cvtepu8_epi32(x),
        _mm_cvtepu8_epi32(_mm_srli_si128::<4>(x)),
        _mm_cvtepu8_epi32(_mm_srli_si128::<8>(x)),
        _mm_cvtepu8_epi32(_mm_srli_si128::<12>(x)),
    ]
}

/// The chroma terms of 16 pixels (each pixel's U and V in `ud`, `vd`): `[channel][quarter]`,
/// R, G, B, pixels `4·quarter..`.
#[target_feature(enable = "sse4.1")]
#[inline]
fn chroma16_sse41(ud: __m128i, vd: __m128i) -> [[__m128i; 4]; 3] {
    let (us, vs) = (quarters_sse41(ud), quarters_sse41(vd));
    let (c128, zero) = (_mm_set1_epi32(128), _mm_setzero_si128());
    let mut terms = [[zero; 4]; 3];
    for q in 0..4 {
        let (u, v) = (_mm_sub_epi32(us[q], c128), _mm_sub_epi32(vs[q], c128));
        terms[0][q] = _mm_mullo_epi32(v, _mm_set1_epi32(1_673_527));
        terms[1][q] = _mm_add_epi32(
            _mm_mullo_epi32(v, _mm_set1_epi32(-852_492)),
            _mm_mullo_epi32(u, _mm_set1_epi32(-409_993)),
        );
        terms[2][q] = _mm_mullo_epi32(u, _mm_set1_epi32(2_116_026));
    }
    terms
}

/// 16 pixels of luma `y` with their chroma terms ([`chroma16_sse41`]) into `out` as R, G,
/// B bytes per pixel.
#[target_feature(enable = "sse4.1")]
#[inline]
fn luma16_sse41(y: &[u8; 16], terms: &[[__m128i; 4]; 3], out: &mut [u8; 48]) {
    // SAFETY: `y` is 16 readable bytes; an unaligned load.
    let ys = quarters_sse41(unsafe { _mm_loadu_si128(y.as_ptr().cast()) });
    let (c16, zero) = (_mm_set1_epi32(16), _mm_setzero_si128());
    let mut rgb = [[zero; 4]; 3];
    for q in 0..4 {
        let luma = _mm_max_epi32(_mm_sub_epi32(ys[q], c16), zero);
        let base = _mm_add_epi32(
            _mm_mullo_epi32(luma, _mm_set1_epi32(1_220_542)),
            _mm_set1_epi32(1 << 19),
        );
        for c in 0..3 {
            rgb[c][q] = _mm_srai_epi32::<20>(_mm_add_epi32(base, terms[c][q]));
        }
    }
    // Signed then unsigned saturation: exactly the clamp to [0, 255].
    macro_rules! plane {
        ($c:expr) => {
            _mm_packus_epi16(
                _mm_packs_epi32(rgb[$c][0], rgb[$c][1]),
                _mm_packs_epi32(rgb[$c][2], rgb[$c][3]),
            )
        };
    }
    store_interleaved3([plane!(0), plane!(1), plane!(2)], out);
}

/// Interleaves three 16-byte planes (R, G, B) into 48 bytes of pixels.
#[target_feature(enable = "sse4.1")]
#[inline]
pub(super) fn store_interleaved3(planes: [__m128i; 3], out: &mut [u8; 48]) {
    let zero = _mm_setzero_si128();
    for (chunk, o) in out.chunks_exact_mut(16).enumerate() {
        let mut acc = zero;
        for (plane, mask) in planes.iter().zip(&INTERLEAVE3[chunk]) {
            // SAFETY: `mask` is 16 readable bytes; an unaligned load.
            let m = unsafe { _mm_loadu_si128(mask.as_ptr().cast()) };
            acc = _mm_or_si128(acc, _mm_shuffle_epi8(*plane, m));
        }
        // SAFETY: `o` is 16 writable bytes of `out`; an unaligned store.
        unsafe { _mm_storeu_si128(o.as_mut_ptr().cast(), acc) };
    }
}

lanes! {
    impl AffineLanes for Sse41 with "sse4.1" {
        fn affine3(self, k: &Affine3, src: &[u8], dst: &mut [u8]) -> usize {
            let n = src.len().min(dst.len()) / 48 * 48;
            // Group `g` of 4 bytes starts at channel phase `4g % 3 = g % 3`: three vectors
            // of each constant cover every group.
            // SAFETY: `4g + 4 ≤ 12 ≤ PERIOD`: 4 readable `i32`.
            let at = |v: &[i32; PERIOD], g: usize| unsafe { _mm_loadu_si128(v.as_ptr().wrapping_add(4 * g).cast()) };
            let (a, b) = ([0, 1, 2].map(|g| at(&k.a, g)), [0, 1, 2].map(|g| at(&k.b, g)));
            for i in (0..n).step_by(48) {
                let y: [__m128i; 12] = core::array::from_fn(|g| {
                    // SAFETY: `i + 4g + 4 ≤ n ≤ src.len()`: 4 readable bytes.
                    let x = _mm_cvtepu8_epi32(unsafe { _mm_loadu_si32(src.as_ptr().wrapping_add(i + 4 * g).cast()) });
                    _mm_srai_epi32::<16>(_mm_add_epi32(_mm_mullo_epi32(x, a[g % 3]), b[g % 3]))
                });
                for c in 0..3 {
                    let lo = _mm_packs_epi32(y[4 * c], y[4 * c + 1]);
                    let v = _mm_packs_epi16(lo, _mm_packs_epi32(y[4 * c + 2], y[4 * c + 3]));
                    // SAFETY: `i + 16c + 16 ≤ n ≤ dst.len()`; an unaligned store.
                    unsafe { _mm_storeu_si128(dst.as_mut_ptr().wrapping_add(i + 16 * c).cast(), v) };
                }
            }
            n
        }
    }
}

lanes! {
    impl Bf16Lanes for Sse41 with "sse4.1" {
        fn bf16x3(self, k: &Bf16Map3, src: &[u8], dst: &mut [u8]) -> usize {
            let n = (src.len() / 24).min(dst.len() / 48);
            // Written without closures, which would not be inlined into this level's body.
            // Group `g` of 4 values starts at channel phase `4g % 3 = g % 3`: three
            // vectors of each constant cover every group.
            macro_rules! consts {
                ($v:expr) => {
                    [
                        // SAFETY: `8 + 4 ≤ 24 = bf16map::PERIOD`: 4 readable `f32` here and below.
                        unsafe { _mm_loadu_ps($v.as_ptr()) },
                        // SAFETY: as above.
                        unsafe { _mm_loadu_ps($v.as_ptr().wrapping_add(4)) },
                        // SAFETY: as above.
                        unsafe { _mm_loadu_ps($v.as_ptr().wrapping_add(8)) },
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
            let (half, one) = (_mm_set1_epi32(0x7fff), _mm_set1_epi32(1));
            for off in (0..24 * n).step_by(64) {
                // The next tile's same row (tiles along W are adjacent in the frame): a hint.
                _mm_prefetch::<_MM_HINT_T0>(src.as_ptr().wrapping_add(24 * n + off).cast());
            }
            for i in 0..n {
                let (s, d) = (src.as_ptr().wrapping_add(24 * i), dst.as_mut_ptr().wrapping_add(48 * i));
                macro_rules! group {
                    ($g:literal) => {{
                        // SAFETY: `24i + 4g + 4 ≤ 24n ≤ src.len()`: 4 readable bytes.
                        let p = _mm_cvtepu8_epi32(unsafe { _mm_loadu_si32(s.wrapping_add(4 * $g).cast()) });
                        let x = _mm_cvtepi32_ps(p);
                        let v = if mul {
                            _mm_mul_ps(_mm_add_ps(_mm_mul_ps(x, a[$g % 3]), b[$g % 3]), c[$g % 3])
                        } else {
                            _mm_div_ps(_mm_add_ps(_mm_div_ps(x, a[$g % 3]), b[$g % 3]), c[$g % 3])
                        };
                        let bits = _mm_castps_si128(v);
                        let lsb = _mm_and_si128(_mm_srli_epi32::<16>(bits), one);
                        _mm_srli_epi32::<16>(_mm_add_epi32(_mm_add_epi32(bits, half), lsb))
                    }};
                }
                let w = [
                    _mm_packus_epi32(group!(0), group!(1)),
                    _mm_packus_epi32(group!(2), group!(3)),
                    _mm_packus_epi32(group!(4), group!(5)),
                ];
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
