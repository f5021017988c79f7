//! AArch64 half-precision Quant routes (FEAT_FP16 / asimdhp), for power-of-two multipliers.
//!
//! Both routes follow the predicates of the A65 source document (SPEC §10):
//!
//! - **Native FP16** (FP16 input, `m = 2^k`, −24 ≤ k ≤ 15, and k ≥ 0 or rounding
//!   nearest-even / toward-zero): `p = x · 2^k` in FP16 arithmetic (omitted at k = 0), then
//!   `FCVT{Z,N,P,M}S` to INT16 (saturating, NaN → 0), saturating zero-point add, saturating
//!   narrow. For k ≥ 0 the product is exact or overflows to ±∞, which saturates like the
//!   binary32 product does; for k < 0 an FP16 underflow only happens below 2^-14, where
//!   nearest-even and truncation give 0 either way (directed modes are excluded).
//! - **BF16 through FP16** (BF16 input, `m = 2^k`, −110 ≤ k ≤ 110): no FP arithmetic; each
//!   BF16 magnitude is mapped with integer operations to an FP16 encoding that has the same
//!   INT8 result in every mode: `±256` from the saturation threshold up (every zero point
//!   then saturates), the exact value `x · 2^k` in [0.5, 256) (an FP16 normal: the encoding is
//!   the BF16 bits shifted left by 3 plus a per-plan exponent offset), the smallest FP16
//!   subnormal as a sentinel for nonzero binary32 products below 0.5, and zero for products
//!   that round to zero in binary32 (|x · 2^k| ≤ 2^-150) and for NaN. Magnitude thresholds are
//!   raw BF16 bit comparisons computed once per plan.

use core::arch::aarch64::*;
use core::arch::asm;
use core::marker::PhantomData;

use simak_core::DType;
use simak_core::arith::quant::{
    self as exact, InputFormat, Lift, Multiplier, Rounding, RoundingMode, RunFn,
};

use super::super::isa::{Isa, Kernel, NeonFp16};

/// The native FP16 route's predicate on the multiplier and mode.
pub(crate) fn fp16_eligible(m: &Multiplier, rounding: Rounding) -> bool {
    match m.power_of_two() {
        Some(k) if (-24..=15).contains(&k) => {
            k >= 0 || matches!(rounding, Rounding::NearestEven | Rounding::TowardZero)
        }
        _ => false,
    }
}

/// The BF16-through-FP16 route's predicate on the multiplier.
pub(crate) fn bf16_eligible(m: &Multiplier) -> bool {
    matches!(m.power_of_two(), Some(k) if (-110..=110).contains(&k))
}

/// FP16 bits of `2^k` for −24 ≤ k ≤ 15.
fn fp16_power_of_two(k: i32) -> u16 {
    if k >= -14 {
        ((k + 15) as u16) << 10
    } else {
        1u16 << (k + 24)
    }
}

/// Compares `|x| · 2^k` with `2^e` for a finite BF16 magnitude `a` (bits without sign):
/// −1, 0 or 1 for less, equal or greater. A `const fn`, so the per-multiplier thresholds
/// are a table built at compile time.
const fn bf16_scaled_cmp(a: u16, k: i32, e: i32) -> i8 {
    let exp_field = (a >> 7) as i32;
    let mant = (a & 0x7f) as u64;
    let (sig, exp) = if exp_field == 0 {
        (mant, -133)
    } else {
        (mant | 0x80, exp_field - 134)
    };
    if sig == 0 {
        return -1;
    }
    // sig · 2^(exp + k) vs 2^e  ⇔  sig vs 2^(e − exp − k); sig < 2^8.
    let shift = e - exp - k;
    if shift < 0 {
        1
    } else if shift >= 9 {
        -1
    } else {
        let target = 1u64 << shift;
        if sig < target {
            -1
        } else if sig == target {
            0
        } else {
            1
        }
    }
}

/// Smallest finite BF16 magnitude `a` with `|x| · 2^k ≥ 2^e` (or above: `>` when `strict`).
const fn bf16_threshold(k: i32, e: i32, strict: bool) -> u16 {
    let (mut lo, mut hi) = (0u16, 0x7f80u16);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let c = bf16_scaled_cmp(mid, k, e);
        let reached = if strict { c > 0 } else { c >= 0 };
        if reached {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Constants of the BF16 route for one multiplier 2^k (raw magnitude thresholds and
/// exponent offset).
#[derive(Debug, Clone, Copy)]
struct Bf16Consts {
    /// Magnitudes ≥ this map to ±256.
    saturate: u16,
    /// Magnitudes ≥ this (and below `saturate`) are exact FP16 normals.
    exact: u16,
    /// Magnitudes ≥ this (and below `exact`) are nonzero binary32 products: the sentinel.
    nonzero: u16,
    /// Added (wrapping) to `magnitude << 3` to rebias the exponent.
    offset: u16,
}

const fn bf16_consts_of(k: i32) -> Bf16Consts {
    Bf16Consts {
        saturate: bf16_threshold(k, 8, false),
        exact: bf16_threshold(k, -1, false),
        // Binary32 products round to zero up to and including 2^-150 (a tie to even 0).
        nonzero: bf16_threshold(k, -150, true),
        offset: ((k - 112) as u16) << 10,
    }
}

/// The constants for every eligible k (−110 ≤ k ≤ 110), computed at compile time, so a
/// call only indexes this table.
const BF16_CONSTS: [Bf16Consts; 221] = {
    let mut table = [Bf16Consts {
        saturate: 0,
        exact: 0,
        nonzero: 0,
        offset: 0,
    }; 221];
    let mut i = 0;
    while i < 221 {
        table[i] = bf16_consts_of(i as i32 - 110);
        i += 1;
    }
    table
};

/// The constants for 2^k; `k` outside −110..=110 (never eligible) clamps to the range.
fn bf16_consts(k: i32) -> Bf16Consts {
    BF16_CONSTS[(k.clamp(-110, 110) + 110) as usize]
}

/// Generates one 16-element step: FP16 lanes in v0/v1 → INT8 bytes stored at `dst`.
macro_rules! convert_store {
    ($cvt:literal, $v0:expr, $v1:expr, $zp:expr, $dst:expr) => {
        // SAFETY: the caller guarantees 16 writable bytes at `$dst`; the instructions need
        // FEAT_FP16, which the enclosing function enables and the route table checked.
        unsafe {
            asm!(
                concat!($cvt, " {a:v}.8h, {a:v}.8h"),
                concat!($cvt, " {b:v}.8h, {b:v}.8h"),
                "sqadd {a:v}.8h, {a:v}.8h, {zp:v}.8h",
                "sqadd {b:v}.8h, {b:v}.8h, {zp:v}.8h",
                "sqxtn {a:v}.8b, {a:v}.8h",
                "sqxtn2 {a:v}.16b, {b:v}.8h",
                "st1 {{{a:v}.16b}}, [{dst}]",
                a = inout(vreg) $v0 => _,
                b = inout(vreg) $v1 => _,
                zp = in(vreg) $zp,
                dst = in(reg) $dst,
                options(nostack, preserves_flags)
            );
        }
    };
}

/// Converts 16 FP16 lanes with mode `M` and stores 16 INT8 bytes.
///
/// # Safety
///
/// FEAT_FP16 must be available and `dst` valid for writing 16 bytes.
#[target_feature(enable = "neon,fp16")]
#[inline]
unsafe fn finish<M: RoundingMode>(a: uint16x8_t, b: uint16x8_t, zp: int16x8_t, dst: *mut u8) {
    match M::MODE {
        Rounding::TowardZero => convert_store!("fcvtzs", a, b, zp, dst),
        Rounding::NearestEven => convert_store!("fcvtns", a, b, zp, dst),
        Rounding::TowardPositive => convert_store!("fcvtps", a, b, zp, dst),
        Rounding::TowardNegative => convert_store!("fcvtms", a, b, zp, dst),
    }
}

/// BF16 lanes as FP16 encodings with the same INT8 result in every mode (module doc).
#[target_feature(enable = "neon")]
#[inline]
fn bf16_to_fp16(v: uint16x8_t, c: &Bf16Consts) -> uint16x8_t {
    let magnitude = vandq_u16(v, vdupq_n_u16(0x7fff));
    let sign = vandq_u16(v, vdupq_n_u16(0x8000));
    let exact = vaddq_u16(vshlq_n_u16::<3>(magnitude), vdupq_n_u16(c.offset));
    let tiny = vandq_u16(
        vcgeq_u16(magnitude, vdupq_n_u16(c.nonzero)),
        vdupq_n_u16(0x0001),
    );
    let r = vbslq_u16(vcgeq_u16(magnitude, vdupq_n_u16(c.exact)), exact, tiny);
    let r = vbslq_u16(
        vcgeq_u16(magnitude, vdupq_n_u16(c.saturate)),
        vdupq_n_u16(0x5c00),
        r,
    );
    // NaN magnitudes (above 0x7f80) give zero, so the zero point.
    let r = vbicq_u16(r, vcgtq_u16(magnitude, vdupq_n_u16(0x7f80)));
    vorrq_u16(r, sign)
}

/// How a half route turns 8 input lanes into FP16 lanes.
trait HalfInput: Copy {
    /// The FP16 lanes of `v`.
    ///
    /// # Safety
    ///
    /// FEAT_FP16 available.
    unsafe fn to_fp16(self, v: uint16x8_t) -> uint16x8_t;
}

/// Native FP16: `x · 2^k` in FP16 arithmetic (nothing at k = 0); `m` holds 2^k.
#[derive(Clone, Copy)]
struct Fp16 {
    k: i32,
    m: uint16x8_t,
}

impl HalfInput for Fp16 {
    #[inline(always)]
    unsafe fn to_fp16(self, mut v: uint16x8_t) -> uint16x8_t {
        if self.k != 0 {
            // SAFETY: a register-only FP16 multiply; FEAT_FP16 is available (the caller's
            // contract).
            unsafe {
                asm!(
                    "fmul {v:v}.8h, {v:v}.8h, {m:v}.8h",
                    v = inout(vreg) v,
                    m = in(vreg) self.m,
                    options(pure, nomem, nostack, preserves_flags)
                );
            }
        }
        v
    }
}

/// BF16 mapped to FP16 encodings with the same INT8 result ([`bf16_to_fp16`]).
#[derive(Clone, Copy)]
struct Bf16ViaFp16(Bf16Consts);

impl HalfInput for Bf16ViaFp16 {
    #[inline(always)]
    unsafe fn to_fp16(self, v: uint16x8_t) -> uint16x8_t {
        // SAFETY: NEON is part of the baseline.
        unsafe { bf16_to_fp16(v, &self.0) }
    }
}

/// The half routes' loop: `n` (a multiple of 16) 16-bit elements.
struct HalfBody<'a, H, M> {
    how: H,
    zero_point: i16,
    input: &'a [u8],
    output: &'a mut [u8],
    n: usize,
    mode: PhantomData<M>,
}

impl<H: HalfInput, M: RoundingMode> Kernel<NeonFp16> for HalfBody<'_, H, M> {
    type Output = ();

    #[inline(always)]
    fn run(self, _: NeonFp16) {
        let n = self.n;
        assert!(self.input.len() >= 2 * n && self.output.len() >= n);
        // SAFETY: NEON is part of the AArch64 baseline.
        let zp = unsafe { vdupq_n_s16(self.zero_point) };
        let (input, output) = (self.input.as_ptr(), self.output.as_mut_ptr());
        let blocks = n / 16 * 16;
        let mut i = 0;
        while i < blocks {
            // SAFETY: i + 16 ≤ n, so 32 bytes are readable at `input + 2i` and 16 writable at
            // `output + i` (asserted above); FEAT_FP16 is enabled inside `vectorize`.
            unsafe { self.block(input.wrapping_add(2 * i), output.wrapping_add(i), zp) };
            i += 16;
        }
        if blocks == n {
            return;
        }
        if n >= 16 {
            // The last whole block ending at n, overlapping: the same bytes are recomputed.
            // SAFETY: n − 16 + 16 = n fits both slices; FEAT_FP16 as above.
            unsafe {
                self.block(
                    input.wrapping_add(2 * (n - 16)),
                    output.wrapping_add(n - 16),
                    zp,
                )
            };
        } else {
            // Shorter than one block: a zero-padded stack copy of the run's bytes.
            let mut buf_in = [0u8; 32];
            let mut buf_out = [0u8; 16];
            buf_in[..2 * n].copy_from_slice(&self.input[..2 * n]);
            // SAFETY: both buffers hold a whole block; FEAT_FP16 as above.
            unsafe { self.block(buf_in.as_ptr(), buf_out.as_mut_ptr(), zp) };
            self.output[..n].copy_from_slice(&buf_out[..n]);
        }
    }
}

impl<H: HalfInput, M: RoundingMode> HalfBody<'_, H, M> {
    /// One 16-element block: 32 input bytes at `src` → 16 INT8 bytes at `dst`.
    ///
    /// # Safety
    ///
    /// `src` readable for 32 bytes, `dst` writable for 16; FEAT_FP16 enabled (called only
    /// from [`HalfBody::run`] inside the token's `vectorize`).
    #[inline(always)]
    unsafe fn block(&self, src: *const u8, dst: *mut u8, zp: int16x8_t) {
        // SAFETY: the caller's contract: 32 readable bytes.
        let v = unsafe { vld1q_u16_x2(src.cast::<u16>()) };
        // SAFETY: FEAT_FP16 is enabled (caller's contract).
        let a = unsafe { self.how.to_fp16(v.0) };
        // SAFETY: as above.
        let b = unsafe { self.how.to_fp16(v.1) };
        // SAFETY: FEAT_FP16 enabled; 16 writable bytes at `dst` (caller's contract).
        unsafe { finish::<M>(a, b, zp, dst) };
    }
}

/// A half route's run function: every element through [`HalfBody`] (16-element blocks,
/// the remainder as one overlapping or stack-copied block). `route` maps the multiplier to
/// the route's input mapping.
fn half_run<I: InputFormat, M: RoundingMode, H: HalfInput>(
    route: fn(&Multiplier) -> H,
    m: &Multiplier,
    zero_point: i32,
    input: &[u8],
    output: &mut [u8],
) {
    let n = output.len().min(input.len() / 2);
    match NeonFp16::detect() {
        Some(t) => t.vectorize(HalfBody {
            how: route(m),
            zero_point: zero_point as i16,
            input,
            output: &mut *output,
            n,
            mode: PhantomData::<M>,
        }),
        // Not reached: the run functions are handed out only after detection.
        None => exact::run::<I, M>(m, zero_point, &input[..2 * n], &mut output[..n]),
    }
}

fn fp16_of(m: &Multiplier) -> Fp16 {
    let k = m.power_of_two().unwrap_or(0);
    // SAFETY: NEON is part of the AArch64 baseline.
    let m = unsafe { vdupq_n_u16(fp16_power_of_two(k)) };
    Fp16 { k, m }
}

fn bf16_of(m: &Multiplier) -> Bf16ViaFp16 {
    // The run function's signature carries only the multiplier: look its constants up.
    Bf16ViaFp16(bf16_consts(m.power_of_two().unwrap_or(0)))
}

fn fp16_run<I: InputFormat, M: RoundingMode>(m: &Multiplier, zp: i32, i: &[u8], o: &mut [u8]) {
    half_run::<I, M, Fp16>(fp16_of, m, zp, i, o)
}

fn bf16_run<I: InputFormat, M: RoundingMode>(m: &Multiplier, zp: i32, i: &[u8], o: &mut [u8]) {
    half_run::<I, M, Bf16ViaFp16>(bf16_of, m, zp, i, o)
}

/// Lifts one of the two run functions above to (dtype, rounding).
struct Select(bool);

impl Lift for Select {
    type Output = RunFn;
    fn lift<I: InputFormat, M: RoundingMode>(self) -> RunFn {
        if self.0 {
            bf16_run::<I, M>
        } else {
            fp16_run::<I, M>
        }
    }
}

/// The native FP16 run function, when the CPU and the predicate allow it.
pub(crate) fn fp16_run_fn(m: &Multiplier, rounding: Rounding) -> Option<RunFn> {
    NeonFp16::detect()?;
    if !fp16_eligible(m, rounding) {
        return None;
    }
    exact::lift(DType::F16, rounding, Select(false))
}

/// The BF16-through-FP16 run function, when the CPU and the predicate allow it.
pub(crate) fn bf16_run_fn(m: &Multiplier, rounding: Rounding) -> Option<RunFn> {
    NeonFp16::detect()?;
    if !bf16_eligible(m) {
        return None;
    }
    exact::lift(DType::BF16, rounding, Select(true))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_table_holds_each_k() {
        for k in -110..=110 {
            let (t, c) = (bf16_consts(k), bf16_consts_of(k));
            assert_eq!(
                (t.saturate, t.exact, t.nonzero, t.offset),
                (c.saturate, c.exact, c.nonzero, c.offset)
            );
        }
    }

    #[test]
    fn thresholds_are_exact() {
        // k = 0: 0.5 is BF16 0x3f00, 256 is 0x4380; the largest value rounding to zero in
        // binary32 (≤ 2^-150) is below the smallest BF16 subnormal, so every nonzero counts.
        let c = bf16_consts(0);
        assert_eq!((c.exact, c.saturate, c.nonzero), (0x3f00, 0x4380, 0x0001));
        // k = −110: x · 2^-110 ≤ 2^-150 ⇔ x ≤ 2^-40 (BF16 0x2b80); 2^-40 itself is a tie.
        let c = bf16_consts(-110);
        assert_eq!(c.nonzero, 0x2b81);
        assert_eq!(c.exact, 0x3f00 + (110 << 7));
        assert_eq!(fp16_power_of_two(0), 0x3c00);
        assert_eq!(fp16_power_of_two(-24), 0x0001);
        assert_eq!(fp16_power_of_two(15), 0x7800);
    }
}
