//! Same-traffic reference kernels for `simak bench` (Issue 3): the machine's ceiling for a
//! Quant call, measured in the same process.
//!
//! - [`read`]: reads every byte of the input once (a sum of its 64-bit words).
//! - [`low_bytes`]: reads each `elem`-byte element and stores its low byte: exactly the
//!   traffic of a Quant call, with trivial arithmetic.
//! - [`widen`]: reads each 1- or 2-byte element and stores a 4-byte one (INT8 → FP32
//!   value, BF16 → FP32 bits): the traffic of an output-side op (SPEC §12) that reads its
//!   tiled bytes once and writes its output once, as a plain loop compiled at a chosen
//!   level (through the level's capability token, as the output-side walker is).
//!
//! At the `x86_64-avx512` level of the ISA table (detected through its capability token,
//! `super::isa::Avx512`, as the Quant routes are) both use 64-byte vectors, and
//! `low_bytes` writes long outputs with the same streaming-store policy as the AVX-512
//! Quant route (outputs of at least 4 Mi elements: exact-path head up to a cache line,
//! then non-temporal stores), so the ceiling is not compute-bound. Elsewhere they are
//! portable loops.

#[cfg(target_arch = "x86_64")]
use super::isa::{Avx512, Isa};

/// Elements from which `low_bytes` streams its output: the AVX-512 Quant route's threshold.
#[cfg(target_arch = "x86_64")]
const STREAM_MIN: usize = super::x86_64::avx512::STREAM_MIN_AVX512;

/// Wrapping sum of the little-endian 64-bit words of `input` (a trailing partial word is
/// ignored): a plain read of every byte.
pub fn read(input: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = Avx512::detect() {
        let whole = input.len() / 64 * 64;
        // SAFETY: `token` proves AVX-512F (and BW, VL); the body reads `whole` bytes of
        // `input`.
        let head = unsafe { x86::read_body(token, input.as_ptr(), whole) };
        return head.wrapping_add(read_portable(&input[whole..]));
    }
    read_portable(input)
}

fn read_portable(input: &[u8]) -> u64 {
    input
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .fold(0u64, u64::wrapping_add)
}

/// Stores the low byte of each little-endian `elem`-byte element of `input` (`elem` is 2 or
/// 4) into `output`, for `min(output.len(), input.len() / elem)` elements.
///
/// # Panics
///
/// When `elem` is neither 2 nor 4.
pub fn low_bytes(elem: usize, input: &[u8], output: &mut [u8]) {
    assert!(elem == 2 || elem == 4, "element size {elem}");
    let n = output.len().min(input.len() / elem);
    let (input, output) = (&input[..n * elem], &mut output[..n]);
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = Avx512::detect() {
        let stream = n >= STREAM_MIN;
        let head = if stream {
            ((64 - output.as_ptr() as usize % 64) % 64).min(n)
        } else {
            0
        };
        low_bytes_portable(elem, &input[..head * elem], &mut output[..head]);
        let (input, output) = (&input[head * elem..], &mut output[head..]);
        let blocks = output.len() / 64 * 64;
        // SAFETY: `token` proves AVX-512F/BW; the body reads `blocks · elem` bytes of
        // `input` and writes `blocks` bytes of `output`, which start 64-byte aligned when
        // `stream` (the head above brought them there).
        unsafe {
            x86::low_bytes_body(
                token,
                elem,
                input.as_ptr(),
                output.as_mut_ptr(),
                blocks,
                stream,
            )
        };
        low_bytes_portable(elem, &input[blocks * elem..], &mut output[blocks..]);
        return;
    }
    low_bytes_portable(elem, input, output);
}

/// Converts `n = min(input.len() / in_size, output.len() / 4)` elements at `level`, a
/// plain loop compiled with the level's target features (auto-vectorized): `in_size` 1
/// reads INT8 codes and stores their value as FP32 (`q as f32`), `in_size` 2 reads BF16
/// bits and stores the FP32 bits `b << 16`. Reads `n · in_size` bytes, writes `4 · n`.
///
/// # Errors
///
/// The level's [`LevelError`](crate::a65::LevelError) when this CPU lacks it, or for a
/// level the output-side walker has no kernel at.
///
/// # Panics
///
/// When `in_size` is neither 1 nor 2.
pub fn widen(
    level: crate::a65::Level,
    in_size: usize,
    input: &[u8],
    output: &mut [u8],
) -> Result<(), crate::a65::LevelError> {
    assert!(in_size == 1 || in_size == 2, "element size {in_size}");
    let dtype = if in_size == 1 {
        simak_core::DType::I8
    } else {
        simak_core::DType::BF16
    };
    let lanes = crate::a65::untess::Lanes::at(level, "reference widen", dtype)?;
    lanes.run(Widen {
        in_size,
        input,
        output,
    });
    Ok(())
}

/// [`widen`]'s loop as a walker body.
struct Widen<'a> {
    in_size: usize,
    input: &'a [u8],
    output: &'a mut [u8],
}

impl crate::a65::untess::Body for Widen<'_> {
    #[inline(always)]
    fn body(self) {
        let Widen {
            in_size,
            input,
            output,
        } = self;
        if in_size == 1 {
            for (y, &q) in output.chunks_exact_mut(4).zip(input) {
                y.copy_from_slice(&f32::from(q as i8).to_le_bytes());
            }
        } else {
            for (y, b) in output.chunks_exact_mut(4).zip(input.chunks_exact(2)) {
                y.copy_from_slice(
                    &(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16).to_le_bytes(),
                );
            }
        }
    }
}

fn low_bytes_portable(elem: usize, input: &[u8], output: &mut [u8]) {
    for (o, c) in output.iter_mut().zip(input.chunks_exact(elem)) {
        *o = c[0];
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use super::Avx512;

    /// Sum of the 64-bit words of `len` bytes (a multiple of 64) from `at`.
    ///
    /// # Safety
    ///
    /// `at` readable for `len` bytes (the token proves AVX-512F).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn read_body(_: Avx512, at: *const u8, len: usize) -> u64 {
        let mut acc = [_mm512_setzero_si512(); 4];
        let mut i = 0;
        while i + 256 <= len {
            for (k, a) in acc.iter_mut().enumerate() {
                // SAFETY: i + 256 ≤ len: bytes i + 64k .. i + 64k + 64 are readable.
                let v = unsafe { _mm512_loadu_si512(at.wrapping_add(i + 64 * k).cast()) };
                *a = _mm512_add_epi64(*a, v);
            }
            i += 256;
        }
        while i < len {
            // SAFETY: i + 64 ≤ len (len is a multiple of 64).
            let v = unsafe { _mm512_loadu_si512(at.wrapping_add(i).cast()) };
            acc[0] = _mm512_add_epi64(acc[0], v);
            i += 64;
        }
        let s = _mm512_add_epi64(
            _mm512_add_epi64(acc[0], acc[1]),
            _mm512_add_epi64(acc[2], acc[3]),
        );
        _mm512_reduce_add_epi64(s) as u64
    }

    /// Low bytes of `n` elements (a multiple of 64) of `elem` bytes each.
    ///
    /// # Safety
    ///
    /// `input` readable for `n · elem` bytes, `output` writable for `n` bytes and 64-byte
    /// aligned when `stream` (the token proves AVX-512F/BW).
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn low_bytes_body(
        _: Avx512,
        elem: usize,
        input: *const u8,
        output: *mut u8,
        n: usize,
        stream: bool,
    ) {
        let mut i = 0;
        while i < n {
            let at = input.wrapping_add(i * elem);
            let load = |k: usize| {
                // SAFETY: i + 64 ≤ n: the 64 elements from i are readable, `k < 64 · elem
                // / 64`.
                unsafe { _mm512_loadu_si512(at.wrapping_add(64 * k).cast()) }
            };
            let bytes = if elem == 4 {
                let q = |k: usize| _mm512_cvtepi32_epi8(load(k));
                let lo = _mm256_set_m128i(q(1), q(0));
                let hi = _mm256_set_m128i(q(3), q(2));
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
            } else {
                let lo = _mm512_cvtepi16_epi8(load(0));
                let hi = _mm512_cvtepi16_epi8(load(1));
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
            };
            let to = output.wrapping_add(i);
            if stream {
                // SAFETY: i + 64 ≤ n bytes writable; `to` is 64-byte aligned (contract).
                unsafe { _mm512_stream_si512(to.cast(), bytes) };
            } else {
                // SAFETY: i + 64 ≤ n bytes writable.
                unsafe { _mm512_storeu_si512(to.cast(), bytes) };
            }
            i += 64;
        }
        if stream {
            _mm_sfence();
        }
    }
}

#[cfg(test)]
mod test {
    #[test]
    fn references_match_portable_loops() {
        let input: Vec<u8> = (0..4 * 1000 + 7).map(|i| (i * 37 % 251) as u8).collect();
        let want_sum = input
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .fold(0u64, u64::wrapping_add);
        assert_eq!(super::read(&input), want_sum);
        for elem in [2usize, 4] {
            let n = input.len() / elem;
            let mut out = vec![0u8; n + 3];
            super::low_bytes(elem, &input, &mut out[3..]);
            for (k, &b) in out[3..].iter().enumerate() {
                assert_eq!(b, input[k * elem], "elem {elem} element {k}");
            }
        }
    }

    #[test]
    fn widen_converts_at_every_level_here() {
        let input: Vec<u8> = (0..1000 + 5).map(|i| (i * 37 % 251) as u8).collect();
        for level in crate::a65::Level::ALL {
            for size in [1usize, 2] {
                let n = input.len() / size - 3;
                let mut out = vec![0xeeu8; 4 * n + 5];
                if super::widen(level, size, &input, &mut out[1..=4 * n]).is_err() {
                    continue;
                }
                assert_eq!((out[0], out[4 * n + 1]), (0xee, 0xee), "{level:?}");
                for k in 0..n {
                    let y = u32::from_le_bytes(out[1 + 4 * k..5 + 4 * k].try_into().unwrap());
                    let want = if size == 1 {
                        (input[k] as i8 as f32).to_bits()
                    } else {
                        (u32::from(input[2 * k]) | u32::from(input[2 * k + 1]) << 8) << 16
                    };
                    assert_eq!(y, want, "{level:?} size {size} element {k}");
                }
            }
        }
    }

    #[test]
    fn streamed_low_bytes_at_an_odd_output_address() {
        let n = (1 << 22) + 77;
        let input: Vec<u8> = (0..4 * n).map(|i| (i % 253) as u8).collect();
        let mut out = vec![0xeeu8; n + 2];
        super::low_bytes(4, &input, &mut out[1..=n]);
        assert_eq!(out[0], 0xee);
        assert_eq!(out[n + 1], 0xee);
        assert!((0..n).all(|k| out[1 + k] == input[4 * k]));
    }
}
