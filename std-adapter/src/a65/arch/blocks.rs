//! Fixed-size block bodies of the output-side walker (`a65::untess`) that the compiler does
//! not vectorize from portable code. Each is `#[inline(always)]`, so it compiles inside the
//! level's entry (VEX-encoded at the AVX levels); the x86-64 bodies use SSE2 only, the
//! x86-64 baseline, and the AArch64 ones NEON, so every level (the scalar one included)
//! runs them.

/// One 16-channel BF16 block stored as a plane of low bytes `lo` and one of high bytes `hi`
/// into 16 packed FP32 values (little-endian): channel `i` becomes
/// `lo[i] << 16 | hi[i] << 24` (DetessCast, SPEC §12).
#[inline(always)]
pub(crate) fn bf16_planes_to_f32(lo: &[u8; 16], hi: &[u8; 16], out: &mut [u8; 64]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::*;
        // SAFETY: `lo` is 16 readable bytes; an unaligned load.
        let l = unsafe { _mm_loadu_si128(lo.as_ptr().cast()) };
        // SAFETY: as above, `hi`.
        let h = unsafe { _mm_loadu_si128(hi.as_ptr().cast()) };
        // The plane pair interleaved gives each channel's 16-bit pattern; a zero low half
        // makes it the FP32 bits. (Each SAFETY below: SSE2 is part of the x86-64
        // baseline, so the intrinsic's feature is always there; register operands only.)
        // SAFETY: see above.
        let zero = unsafe { _mm_setzero_si128() };
        // SAFETY: see above.
        let w0 = unsafe { _mm_unpacklo_epi8(l, h) };
        // SAFETY: see above.
        let w1 = unsafe { _mm_unpackhi_epi8(l, h) };
        let y = [
            // SAFETY: see above.
            unsafe { _mm_unpacklo_epi16(zero, w0) },
            // SAFETY: see above.
            unsafe { _mm_unpackhi_epi16(zero, w0) },
            // SAFETY: see above.
            unsafe { _mm_unpacklo_epi16(zero, w1) },
            // SAFETY: see above.
            unsafe { _mm_unpackhi_epi16(zero, w1) },
        ];
        for (o, y) in out.chunks_exact_mut(16).zip(y) {
            // SAFETY: `o` is 16 writable bytes of `out`; an unaligned store.
            unsafe { _mm_storeu_si128(o.as_mut_ptr().cast(), y) };
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        use core::arch::aarch64::*;
        // SAFETY: `lo` is 16 readable bytes. (Each SAFETY below: NEON is part of the
        // AArch64 baseline, so the intrinsic's feature is always there.)
        let l = unsafe { vld1q_u8(lo.as_ptr()) };
        // SAFETY: as above, `hi`.
        let h = unsafe { vld1q_u8(hi.as_ptr()) };
        // The plane pair interleaved gives each channel's 16-bit pattern; a zero low half
        // makes it the FP32 bits.
        // SAFETY: see above.
        let zero = unsafe { vdupq_n_u16(0) };
        // SAFETY: see above.
        let w0 = unsafe { vzip1q_u8(l, h) };
        // SAFETY: see above.
        let w0 = unsafe { vreinterpretq_u16_u8(w0) };
        // SAFETY: see above.
        let w1 = unsafe { vzip2q_u8(l, h) };
        // SAFETY: see above.
        let w1 = unsafe { vreinterpretq_u16_u8(w1) };
        let y = [
            // SAFETY: see above.
            unsafe { vzip1q_u16(zero, w0) },
            // SAFETY: see above.
            unsafe { vzip2q_u16(zero, w0) },
            // SAFETY: see above.
            unsafe { vzip1q_u16(zero, w1) },
            // SAFETY: see above.
            unsafe { vzip2q_u16(zero, w1) },
        ];
        for (o, y) in out.chunks_exact_mut(16).zip(y) {
            // SAFETY: see above.
            let y = unsafe { vreinterpretq_u8_u16(y) };
            // SAFETY: `o` is 16 writable bytes of `out`.
            unsafe { vst1q_u8(o.as_mut_ptr(), y) };
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        for ((o, &l), &h) in out.chunks_exact_mut(4).zip(lo).zip(hi) {
            o.copy_from_slice(&[0, 0, l, h]);
        }
    }
}
