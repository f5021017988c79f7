//! NEON lanes: the Quant loop (16 elements per step), the BF16 conversions, the plane split
//! (`UZP1`/`UZP2` deinterleave, `TBL` shuffle) and the band kernel. NEON is part of the
//! AArch64 baseline.

use core::arch::aarch64::*;

use simak_core::arith::quant::{InputFormat, RoundingMode};
use simak_core::ops::quant::Rounding;

use super::super::super::untess::Scale;
use super::super::affine::{Affine3, AffineLanes, PERIOD};
use super::super::band::{BandLanes, Lines, table_pattern};
use super::super::bf16map::{Bf16Lanes, Bf16Map3, Steps, TABLE_INDEX};
use super::super::convert::ConvertLanes;
use super::super::dequant::DequantLanes;
use super::super::isa::{Neon, lanes, ops};
use super::super::quant::{Load, QuantLanes};
use super::super::split::SplitLanes;
use super::super::yuv::{YuvLanes, nv12_blocks, pixel_blocks};

lanes! {
    impl QuantLanes for Neon with "neon" {
        type F = float32x4_t;
        type I = int32x4_t;
        type Zp = int16x8_t;
        type Bytes = int8x16_t;
        const LANES: usize = 4;

        fn splat(self, m: f32) -> float32x4_t {
            vdupq_n_f32(m)
        }

        fn zero_point(self, zp: i16) -> int16x8_t {
            vdupq_n_s16(zp)
        }

        fn convert<M: RoundingMode>(self, x: float32x4_t, m: float32x4_t) -> int32x4_t {
            // FCVT*S: NaN → 0, out-of-range values saturate.
            let p = vmulq_f32(x, m);
            match M::MODE {
                Rounding::TowardZero => vcvtq_s32_f32(p),
                Rounding::NearestEven => vcvtnq_s32_f32(p),
                Rounding::TowardPositive => vcvtpq_s32_f32(p),
                Rounding::TowardNegative => vcvtmq_s32_f32(p),
            }
        }

        fn narrow(self, v: [int32x4_t; 4], zp: int16x8_t) -> int8x16_t {
            let ab = vcombine_s16(vqmovn_s32(v[0]), vqmovn_s32(v[1]));
            let cd = vcombine_s16(vqmovn_s32(v[2]), vqmovn_s32(v[3]));
            vcombine_s8(vqmovn_s16(vqaddq_s16(ab, zp)), vqmovn_s16(vqaddq_s16(cd, zp)))
        }

        unsafe fn load<I: InputFormat>(self, ptr: *const u8) -> float32x4_t {
            match const { Load::of::<I>() } {
                // SAFETY: the caller guarantees 16 readable bytes at `ptr`; the A65 execute
                // checks the input's element alignment.
                Load::F32 => unsafe { vld1q_f32(ptr.cast()) },
                // SAFETY: the caller guarantees 8 readable bytes at `ptr`.
                Load::F16 => widen_f16(unsafe { vld1_u16(ptr.cast()) }),
                Load::Bf16 => {
                    // SAFETY: the caller guarantees 8 readable bytes at `ptr`.
                    let h = unsafe { vld1_u16(ptr.cast()) };
                    vreinterpretq_f32_u32(vshll_n_u16::<16>(h))
                }
            }
        }

        unsafe fn store(self, ptr: *mut u8, bytes: int8x16_t, _stream: bool) {
            // SAFETY: the caller guarantees 16 writable bytes at `ptr`.
            unsafe { vst1q_s8(ptr.cast(), bytes) }
        }
    }
}

/// Exact FP16 → FP32: magnitude bits shifted into place and scaled by 2^112 (exact for
/// normals and subnormals), infinities and NaNs rebuilt with integer selects, sign ORed in.
#[target_feature(enable = "neon")]
#[inline]
fn widen_f16(h: uint16x4_t) -> float32x4_t {
    let w = vmovl_u16(h);
    let sign = vshlq_n_u32::<16>(vandq_u32(w, vdupq_n_u32(0x8000)));
    let magnitude = vandq_u32(w, vdupq_n_u32(0x7fff));
    let shifted = vshlq_n_u32::<13>(magnitude);
    let scaled = vmulq_f32(
        vreinterpretq_f32_u32(shifted),
        vdupq_n_f32(f32::from_bits(0x7780_0000)),
    );
    let special = vcgeq_u32(magnitude, vdupq_n_u32(0x7c00));
    let nonfinite = vorrq_u32(shifted, vdupq_n_u32(0x7f80_0000));
    let bits = vbslq_u32(special, nonfinite, vreinterpretq_u32_f32(scaled));
    vreinterpretq_f32_u32(vorrq_u32(bits, sign))
}

lanes! {
    impl ConvertLanes for Neon with "neon" {
        type U32 = uint32x4_t;
        type U16 = uint16x8_t;
        type Mask = uint16x8_t;
        const LANES: usize = 4;

        fn high_halves(self, a: uint32x4_t, b: uint32x4_t) -> uint16x8_t {
            vuzp2q_u16(vreinterpretq_u16_u32(a), vreinterpretq_u16_u32(b))
        }

        fn any(self, m: uint16x8_t) -> bool {
            vmaxvq_u16(m) != 0
        }

        unsafe fn load32(self, ptr: *const u8) -> uint32x4_t {
            // SAFETY: the caller guarantees 16 readable bytes at `ptr`; byte loads need no
            // alignment.
            vreinterpretq_u32_u8(unsafe { vld1q_u8(ptr) })
        }

        unsafe fn load16(self, ptr: *const u8) -> uint16x8_t {
            // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
            vreinterpretq_u16_u8(unsafe { vld1q_u8(ptr) })
        }

        unsafe fn store16(self, ptr: *mut u8, v: uint16x8_t) {
            let bytes = vreinterpretq_u8_u16(v);
            // SAFETY: the caller guarantees 16 writable bytes at `ptr`.
            unsafe { vst1q_u8(ptr, bytes) }
        }

        inline {
            ops! {
                unary splat32(u32) -> uint32x4_t = vdupq_n_u32;
                unary splat16(u16) -> uint16x8_t = vdupq_n_u16;
                binary add32(uint32x4_t) -> uint32x4_t = vaddq_u32;
                binary and32(uint32x4_t) -> uint32x4_t = vandq_u32;
                unary shr32_16(uint32x4_t) -> uint32x4_t = vshrq_n_u32::<16>;
                binary add16(uint16x8_t) -> uint16x8_t = vaddq_u16;
                binary sub16(uint16x8_t) -> uint16x8_t = vsubq_u16;
                binary and16(uint16x8_t) -> uint16x8_t = vandq_u16;
                binary or16(uint16x8_t) -> uint16x8_t = vorrq_u16;
                shift shl16(uint16x8_t) = vshlq_n_u16;
                shift shr16(uint16x8_t) = vshrq_n_u16;
                binary gt16(uint16x8_t) -> uint16x8_t = vcgtq_u16;
                binary eq16(uint16x8_t) -> uint16x8_t = vceqq_u16;
            }
            #[inline(always)]
            fn sra16<const K: i32>(self, a: uint16x8_t) -> uint16x8_t {
                // SAFETY: NEON is part of the AArch64 baseline (`self` is its token).
                let s = unsafe { vreinterpretq_s16_u16(a) };
                // SAFETY: as above.
                let s = unsafe { vshrq_n_s16::<K>(s) };
                // SAFETY: as above.
                unsafe { vreinterpretq_u16_s16(s) }
            }
            #[inline(always)]
            fn select(self, m: uint16x8_t, yes: uint16x8_t, no: uint16x8_t) -> uint16x8_t {
                // SAFETY: NEON is part of the AArch64 baseline (`self` is its token).
                unsafe { vbslq_u16(m, yes, no) }
            }
        }
    }
}

lanes! {
    impl SplitLanes for Neon with "neon" {
        type V = uint8x16_t;

        fn zero(self) -> uint8x16_t {
            vdupq_n_u8(0)
        }

        fn shuffle(self, v: uint8x16_t, pattern: uint8x16_t) -> uint8x16_t {
            // TBL gives 0 for indices ≥ 16.
            vqtbl1q_u8(v, pattern)
        }

        fn split16(self, a: uint8x16_t, b: uint8x16_t, k: usize) -> (uint8x16_t, uint8x16_t) {
            let kk = vdupq_n_u16(k.min(16) as u16);
            let idx_a = vcombine_u16(
                vcreate_u16(0x0003_0002_0001_0000),
                vcreate_u16(0x0007_0006_0005_0004),
            );
            let idx_b = vaddq_u16(idx_a, vdupq_n_u16(8));
            let a = vandq_u16(vreinterpretq_u16_u8(a), vcltq_u16(idx_a, kk));
            let b = vandq_u16(vreinterpretq_u16_u8(b), vcltq_u16(idx_b, kk));
            let (a, b) = (vreinterpretq_u8_u16(a), vreinterpretq_u8_u16(b));
            (vuzp1q_u8(a, b), vuzp2q_u8(a, b))
        }

        unsafe fn load(self, ptr: *const u8) -> uint8x16_t {
            // SAFETY: the caller guarantees 16 readable bytes at `ptr`.
            unsafe { vld1q_u8(ptr) }
        }

        unsafe fn store(self, ptr: *mut u8, v: uint8x16_t) {
            // SAFETY: the caller guarantees 16 writable bytes at `ptr`.
            unsafe { vst1q_u8(ptr, v) }
        }
    }
}

lanes! {
    impl Lines for Neon with "neon" {
        type Line = [uint8x16_t; 4];

        unsafe fn load_line(self, ptr: *const u8) -> [uint8x16_t; 4] {
            // SAFETY: the caller guarantees 64 readable bytes at `ptr`.
            let v = unsafe { vld1q_u8_x4(ptr) };
            [v.0, v.1, v.2, v.3]
        }

        unsafe fn store_line(self, ptr: *mut u8, v: [uint8x16_t; 4], _nt: bool) {
            // SAFETY: the caller guarantees 64 writable bytes at `ptr`.
            unsafe { vst1q_u8_x4(ptr, uint8x16x4_t(v[0], v[1], v[2], v[3])) }
        }

        unsafe fn store_head(self, ptr: *mut u8, v: [uint8x16_t; 4], n: usize) {
            for (k, q) in v.into_iter().enumerate().take(n / 16) {
                // SAFETY: bytes 16k .. 16k + 16 lie in the caller's `n`.
                unsafe { vst1q_u8(ptr.wrapping_add(16 * k), q) };
            }
        }

        inline {
            #[inline(always)]
            fn align<const IMM: i32>(self, hi: [uint8x16_t; 4], lo: [uint8x16_t; 4]) -> [uint8x16_t; 4] {
                // Whole registers: IMM 4, 8 or 12 is 1, 2 or 3 of them.
                let all = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                let s = IMM as usize / 4;
                [all[s], all[s + 1], all[s + 2], all[s + 3]]
            }
        }
    }
}

/// The band split's three-register table lookups (`TBL`), per 16-byte output register
/// `j mod 3` of a block (the pattern repeats every 48 bytes).
static SPLIT: [u8; 48] = {
    let p = table_pattern(0);
    let mut t = [0u8; 48];
    let mut i = 0;
    while i < 48 {
        t[i] = p[i];
        i += 1;
    }
    t
};

lanes! {
    impl BandLanes for Neon with "neon" {
        type Convert = Neon;
        type Lines = Neon;
        const PARTS: usize = 4;
        const STREAMS: bool = false;

        fn line(self, parts: [uint16x8_t; 4]) -> [uint8x16_t; 4] {
            let [a, b, c, d] = parts;
            [
                vreinterpretq_u8_u16(a),
                vreinterpretq_u8_u16(b),
                vreinterpretq_u8_u16(c),
                vreinterpretq_u8_u16(d),
            ]
        }

        fn split3(self, p: [[uint8x16_t; 4]; 3]) -> [[uint8x16_t; 4]; 3] {
            // Register j of the output from the stream's registers j − 1, j, j + 1.
            let x = [
                p[0][0], p[0][1], p[0][2], p[0][3], p[1][0], p[1][1], p[1][2], p[1][3],
                p[2][0], p[2][1], p[2][2], p[2][3],
            ];
            let t = SPLIT.as_ptr();
            // SAFETY: (all three loads) the table is 48 readable bytes.
            let i0 = unsafe { vld1q_u8(t) };
            // SAFETY: as above.
            let i1 = unsafe { vld1q_u8(t.wrapping_add(16)) };
            // SAFETY: as above.
            let idx = [i0, i1, unsafe { vld1q_u8(t.wrapping_add(32)) }];
            let mut out = x;
            let mut j = 0;
            while j < 12 {
                let before = if j == 0 { x[0] } else { x[j - 1] };
                let after = if j == 11 { x[11] } else { x[j + 1] };
                out[j] = vqtbl3q_u8(uint8x16x3_t(before, x[j], after), idx[j % 3]);
                j += 1;
            }
            [
                [out[0], out[1], out[2], out[3]],
                [out[4], out[5], out[6], out[7]],
                [out[8], out[9], out[10], out[11]],
            ]
        }

        inline {
            #[inline(always)]
            fn convert(self) -> Neon {
                self
            }

            #[inline(always)]
            fn lines(self) -> Neon {
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
        let z = vdupq_n_f32($zp);
        for (o, q) in $out.chunks_exact_mut(16).zip($q) {
            let x = vsubq_f32(vcvtq_f32_s32(q), z);
            let y = match $scale {
                Scale::Mul32(r) => vmulq_f32(x, vdupq_n_f32(r)),
                Scale::Div(s) => vdivq_f32(x, vdupq_n_f32(s)),
            };
            // SAFETY: `o` is 16 writable bytes of the output.
            unsafe { vst1q_f32(o.as_mut_ptr().cast(), y) };
        }
    }};
}

lanes! {
    impl DequantLanes for Neon with "neon" {
        fn i8x16(self, src: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale) {
            // SAFETY: `src` is 16 readable bytes.
            let v = unsafe { vld1q_s8(src.as_ptr().cast()) };
            let (a, b) = (vmovl_s8(vget_low_s8(v)), vmovl_high_s8(v));
            let q = [
                vmovl_s16(vget_low_s16(a)),
                vmovl_high_s16(a),
                vmovl_s16(vget_low_s16(b)),
                vmovl_high_s16(b),
            ];
            dequant_store!(q, out, zp, scale);
        }

        fn i16x16(self, lo: &[u8; 16], hi: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale) {
            // SAFETY: `lo` is 16 readable bytes; an unaligned load.
            let l = unsafe { vld1q_u8(lo.as_ptr()) };
            // SAFETY: `hi` is 16 readable bytes; an unaligned load.
            let h = unsafe { vld1q_u8(hi.as_ptr()) };
            // Interleaved, the planes give each code's 16 bits (little-endian lanes).
            let (w0, w1) = (
                vreinterpretq_s16_u8(vzip1q_u8(l, h)),
                vreinterpretq_s16_u8(vzip2q_u8(l, h)),
            );
            let q = [
                vmovl_s16(vget_low_s16(w0)),
                vmovl_high_s16(w0),
                vmovl_s16(vget_low_s16(w1)),
                vmovl_high_s16(w1),
            ];
            dequant_store!(q, out, zp, scale);
        }
    }
}

lanes! {
    impl YuvLanes for Neon with "neon" {
        fn yuv16(self, y: &[u8; 16], u: &[u8; 8], v: &[u8; 8], out: &mut [u8; 48]) {
            // SAFETY: `u` is 8 readable bytes.
            let u = unsafe { vld1_u8(u.as_ptr()) };
            // SAFETY: `v` is 8 readable bytes.
            let v = unsafe { vld1_u8(v.as_ptr()) };
            luma16_neon(y, &chroma16_neon(u, v), out);
        }

        fn yuv16_nv12(self, y: &[u8; 16], uv: &[u8; 16], out: &mut [u8; 48]) {
            yuv16_neon_nv12(y, uv, out);
        }

        fn yuv_nv12_blocks(self, y: &[u8], uv: &[u8], out: &mut [u8]) -> usize {
            let mut n = 0;
            // A loop, not an iterator adaptor: a closure would not be inlined into this body.
            for (y, uv, o) in nv12_blocks(y, uv, out) {
                yuv16_neon_nv12(y, uv, o);
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
                // SAFETY: `uv` is 16 readable bytes: 8 (U, V) pairs, split by the load.
                let pairs = unsafe { vld2_u8(uv.as_ptr()) };
                let terms = chroma16_neon(pairs.0, pairs.1);
                luma16_neon(y0, &terms, o0);
                luma16_neon(y1, &terms, o1);
                n += 1;
            }
            n
        }
    }
}

/// The block of 16 NV12 pixels: the 8 interleaved (U, V) pairs split by the load.
#[target_feature(enable = "neon")]
#[inline]
fn yuv16_neon_nv12(y: &[u8; 16], uv: &[u8; 16], out: &mut [u8; 48]) {
    // SAFETY: `uv` is 16 readable bytes: 8 (U, V) pairs, split by the load.
    let pairs = unsafe { vld2_u8(uv.as_ptr()) };
    luma16_neon(y, &chroma16_neon(pairs.0, pairs.1), out);
}

/// The chroma terms of 8 pairs (U and V in `u`, `v`), each pair's computed once and spread
/// to its two pixels: `[channel][quarter]`, R, G, B, pixels `4·quarter..` of the block.
#[target_feature(enable = "neon")]
#[inline]
fn chroma16_neon(u: uint8x8_t, v: uint8x8_t) -> [[int32x4_t; 4]; 3] {
    let c128 = vdupq_n_s32(128);
    let (u16, v16) = (vmovl_u8(u), vmovl_u8(v));
    let u = [
        vsubq_s32(vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(u16))), c128),
        vsubq_s32(vreinterpretq_s32_u32(vmovl_high_u16(u16)), c128),
    ];
    let v = [
        vsubq_s32(vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(v16))), c128),
        vsubq_s32(vreinterpretq_s32_u32(vmovl_high_u16(v16)), c128),
    ];
    let mut terms = [[vdupq_n_s32(0); 4]; 3];
    for h in 0..2 {
        let t = [
            vmulq_n_s32(v[h], 1_673_527),
            vaddq_s32(vmulq_n_s32(v[h], -852_492), vmulq_n_s32(u[h], -409_993)),
            vmulq_n_s32(u[h], 2_116_026),
        ];
        // Pairs 4h..4h + 4 are pixels 8h..8h + 8: quarters 2h and 2h + 1.
        for c in 0..3 {
            terms[c][2 * h] = vzip1q_s32(t[c], t[c]);
            terms[c][2 * h + 1] = vzip2q_s32(t[c], t[c]);
        }
    }
    terms
}

/// 16 pixels of luma `y` with their chroma terms ([`chroma16_neon`]) into `out` as R, G, B
/// bytes per pixel.
#[target_feature(enable = "neon")]
#[inline]
fn luma16_neon(y: &[u8; 16], terms: &[[int32x4_t; 4]; 3], out: &mut [u8; 48]) {
    // SAFETY: `y` is 16 readable bytes.
    let yv = unsafe { vld1q_u8(y.as_ptr()) };
    let (lo, hi) = (vmovl_u8(vget_low_u8(yv)), vmovl_high_u8(yv));
    let ys = [
        vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo))),
        vreinterpretq_s32_u32(vmovl_high_u16(lo)),
        vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi))),
        vreinterpretq_s32_u32(vmovl_high_u16(hi)),
    ];
    let zero = vdupq_n_s32(0);
    let mut rgb = [[zero; 4]; 3];
    for q in 0..4 {
        let luma = vmaxq_s32(vsubq_s32(ys[q], vdupq_n_s32(16)), zero);
        let base = vaddq_s32(vmulq_n_s32(luma, 1_220_542), vdupq_n_s32(1 << 19));
        for c in 0..3 {
            rgb[c][q] = vshrq_n_s32::<20>(vaddq_s32(base, terms[c][q]));
        }
    }
    // Signed then unsigned saturation: exactly the clamp to [0, 255].
    macro_rules! plane {
        ($c:expr) => {{
            let lo = vcombine_s16(vqmovn_s32(rgb[$c][0]), vqmovn_s32(rgb[$c][1]));
            let hi = vcombine_s16(vqmovn_s32(rgb[$c][2]), vqmovn_s32(rgb[$c][3]));
            vcombine_u8(vqmovun_s16(lo), vqmovun_s16(hi))
        }};
    }
    let planes = uint8x16x3_t(plane!(0), plane!(1), plane!(2));
    // SAFETY: `out` is 48 writable bytes: three planes interleaved per pixel.
    unsafe { vst3q_u8(out.as_mut_ptr(), planes) };
}

lanes! {
    impl AffineLanes for Neon with "neon" {
        fn affine3(self, k: &Affine3, src: &[u8], dst: &mut [u8]) -> usize {
            let n = src.len().min(dst.len()) / 48 * 48;
            // Group `g` of 4 bytes starts at channel phase `4g % 3 = g % 3`: three vectors
            // of each constant cover every group.
            // SAFETY: `4g + 4 ≤ 12 ≤ PERIOD`: 4 readable `i32`.
            let at = |v: &[i32; PERIOD], g: usize| unsafe { vld1q_s32(v.as_ptr().wrapping_add(4 * g)) };
            let (a, b) = ([0, 1, 2].map(|g| at(&k.a, g)), [0, 1, 2].map(|g| at(&k.b, g)));
            for i in (0..n).step_by(48) {
                for c in 0..3 {
                    let j = 16 * c;
                    // SAFETY: `i + j + 16 ≤ n ≤ src.len()`.
                    let x = unsafe { vld1q_u8(src.as_ptr().wrapping_add(i + j)) };
                    let (lo, hi) = (vmovl_u8(vget_low_u8(x)), vmovl_high_u8(x));
                    let words = [
                        vmovl_u16(vget_low_u16(lo)),
                        vmovl_high_u16(lo),
                        vmovl_u16(vget_low_u16(hi)),
                        vmovl_high_u16(hi),
                    ];
                    let y: [int16x4_t; 4] = core::array::from_fn(|q| {
                        let g = 4 * c + q;
                        let w = vreinterpretq_s32_u32(words[q]);
                        vqmovn_s32(vshrq_n_s32::<16>(vmlaq_s32(b[g % 3], w, a[g % 3])))
                    });
                    let v = vcombine_s8(
                        vqmovn_s16(vcombine_s16(y[0], y[1])),
                        vqmovn_s16(vcombine_s16(y[2], y[3])),
                    );
                    // SAFETY: `i + j + 16 ≤ n ≤ dst.len()`.
                    unsafe { vst1q_s8(dst.as_mut_ptr().wrapping_add(i + j).cast(), v) };
                }
            }
            n
        }
    }
}

lanes! {
    impl Bf16Lanes for Neon with "neon" {
        fn bf16x3(self, k: &Bf16Map3, src: &[u8], dst: &mut [u8]) -> usize {
            let n = (src.len() / 24).min(dst.len() / 48);
            // Written without closures, which would not be inlined into this level's body.
            // Group `g` of 4 values starts at channel phase `4g % 3 = g % 3`: three
            // vectors of each constant cover every group.
            macro_rules! consts {
                ($v:expr) => {
                    [
                        // SAFETY: `8 + 4 ≤ 24 = bf16map::PERIOD`: 4 readable `f32` here and below.
                        unsafe { vld1q_f32($v.as_ptr()) },
                        // SAFETY: as above.
                        unsafe { vld1q_f32($v.as_ptr().wrapping_add(4)) },
                        // SAFETY: as above.
                        unsafe { vld1q_f32($v.as_ptr().wrapping_add(8)) },
                    ]
                };
            }
            let (a, b, c) = (consts!(k.a), consts!(k.b), consts!(k.k));
            let mul = k.steps == Steps::Mul;
            let index = [
                // SAFETY: each `TABLE_INDEX` entry is 16 readable bytes (here and below).
                unsafe { vld1q_u8(TABLE_INDEX[0].as_ptr()) },
                // SAFETY: as above.
                unsafe { vld1q_u8(TABLE_INDEX[1].as_ptr()) },
                // SAFETY: as above.
                unsafe { vld1q_u8(TABLE_INDEX[2].as_ptr()) },
            ];
            let (half, one) = (vdupq_n_u32(0x7fff), vdupq_n_u32(1));
            for i in 0..n {
                let (s, d) = (src.as_ptr().wrapping_add(24 * i), dst.as_mut_ptr().wrapping_add(48 * i));
                macro_rules! group {
                    ($words:expr, $g:expr) => {{
                        let x = vcvtq_f32_u32($words);
                        let v = if mul {
                            vmulq_f32(vaddq_f32(vmulq_f32(x, a[$g % 3]), b[$g % 3]), c[$g % 3])
                        } else {
                            vdivq_f32(vaddq_f32(vdivq_f32(x, a[$g % 3]), b[$g % 3]), c[$g % 3])
                        };
                        let bits = vreinterpretq_u32_f32(v);
                        let lsb = vandq_u32(vshrq_n_u32::<16>(bits), one);
                        vmovn_u32(vshrq_n_u32::<16>(vaddq_u32(vaddq_u32(bits, half), lsb)))
                    }};
                }
                macro_rules! vector {
                    ($h:literal) => {{
                        // SAFETY: `24i + 8h + 8 ≤ 24n ≤ src.len()`: 8 readable bytes.
                        let x = vmovl_u8(unsafe { vld1_u8(s.wrapping_add(8 * $h)) });
                        let lo = group!(vmovl_u16(vget_low_u16(x)), 2 * $h);
                        let hi = group!(vmovl_high_u16(x), 2 * $h + 1);
                        vreinterpretq_u8_u16(vcombine_u16(lo, hi))
                    }};
                }
                let table = uint8x16x3_t(vector!(0), vector!(1), vector!(2));
                let chunks = [
                    vqtbl3q_u8(table, index[0]),
                    vqtbl3q_u8(table, index[1]),
                    vqtbl3q_u8(table, index[2]),
                ];
                // SAFETY: `48i + 16 ≤ 48n ≤ dst.len()`.
                unsafe { vst1q_u8(d, chunks[0]) };
                // SAFETY: `48i + 32 ≤ 48n ≤ dst.len()`.
                unsafe { vst1q_u8(d.wrapping_add(16), chunks[1]) };
                // SAFETY: `48i + 48 ≤ 48n ≤ dst.len()`.
                unsafe { vst1q_u8(d.wrapping_add(32), chunks[2]) };
            }
            8 * n
        }
    }
}
