//! x86-64 lanes, one file per level of the ISA table (`super::isa`): SSE4.1, AVX2 + F16C,
//! AVX-512 F/BW/VL and AVX-512 VBMI; and MXCSR.

pub(crate) mod avx2;
pub(crate) mod avx512;
pub(crate) mod avx512vbmi;
pub(crate) mod sse41;

/// Upper clamp of the Quant product before conversion to INT32 (NaN-free by then).
pub(crate) const CLAMP_HI: f32 = 1024.0;

/// Loads the `$bytes` (even, ≤ 16) bytes at `$at` into the low end of an `__m128i`, zeros
/// above, with loads of exactly those bytes: the partial vectors of a Quant run shorter
/// than one step (issue 24). A macro, so that it expands inside the level's
/// `#[target_feature]` body (VEX-encoded on AVX levels: no SSE/AVX transitions).
///
/// Safety (of the caller's `unsafe` block): `$at` is valid for reading `$bytes` bytes.
macro_rules! load_partial_128 {
    ($at:expr, $bytes:expr) => {{
        let (at, bytes): (*const u8, usize) = ($at, $bytes);
        // (No closure: it would be compiled without the entry's features.)
        macro_rules! low {
            ($a:expr, $b:expr) => {{
                let (at, bytes): (*const u8, usize) = ($a, $b);
                match bytes {
                    0 => _mm_setzero_si128(),
                    2 => _mm_cvtsi32_si128(core::ptr::read_unaligned(at.cast::<u16>()) as i32),
                    4 => _mm_cvtsi32_si128(core::ptr::read_unaligned(at.cast::<i32>())),
                    6 => _mm_insert_epi16::<2>(
                        _mm_cvtsi32_si128(core::ptr::read_unaligned(at.cast::<i32>())),
                        core::ptr::read_unaligned(at.wrapping_add(4).cast::<u16>()) as i32,
                    ),
                    _ => _mm_loadl_epi64(at.cast()),
                }
            }};
        }
        if bytes >= 8 {
            _mm_unpacklo_epi64(low!(at, 8), low!(at.wrapping_add(8), bytes - 8))
        } else {
            low!(at, bytes)
        }
    }};
}
pub(crate) use load_partial_128;

/// Stores the low `$n < 16` bytes of the `__m128i` `$v` at `$ptr`, no other byte (a macro
/// for the reason of [`load_partial_128`]).
///
/// Safety (of the caller's `unsafe` block): `$ptr` is valid for writing `$n` bytes.
macro_rules! store_partial_128 {
    ($ptr:expr, $v:expr, $n:expr) => {{
        let (ptr, mut v, n): (*mut u8, __m128i, usize) = ($ptr, $v, $n);
        let mut at = 0;
        if n & 8 != 0 {
            _mm_storel_epi64(ptr.cast(), v);
            v = _mm_srli_si128::<8>(v);
            at += 8;
        }
        if n & 4 != 0 {
            core::ptr::write_unaligned(ptr.wrapping_add(at).cast::<i32>(), _mm_cvtsi128_si32(v));
            v = _mm_srli_si128::<4>(v);
            at += 4;
        }
        if n & 2 != 0 {
            let w = _mm_cvtsi128_si32(v) as u16;
            core::ptr::write_unaligned(ptr.wrapping_add(at).cast::<u16>(), w);
            v = _mm_srli_si128::<2>(v);
            at += 2;
        }
        if n & 1 != 0 {
            *ptr.wrapping_add(at) = _mm_cvtsi128_si32(v) as u8;
        }
    }};
}
pub(crate) use store_partial_128;

/// Reads MXCSR.
#[inline]
pub(crate) fn read_mxcsr() -> u32 {
    let mut value: u32 = 0;
    // SAFETY: `stmxcsr` stores the 32-bit MXCSR to the given address; it points to a live,
    // writable, aligned local `u32`. SSE is part of the x86-64 baseline.
    unsafe {
        core::arch::asm!(
            "stmxcsr [{ptr}]",
            ptr = in(reg) &mut value as *mut u32,
            options(nostack, preserves_flags)
        );
    }
    value
}

/// The MXCSR bits of the FP rule: DAZ (bit 6), the six exception masks (bits 7–12), RC
/// (bits 13–14), FTZ (bit 15). Status flags (bits 0–5) are ignored.
pub(crate) const MXCSR_RULE: u64 = 0xffc0;
/// Their default: every exception masked, RC nearest, FTZ and DAZ clear.
pub(crate) const MXCSR_DEFAULT: u64 = 0x1f80;
