//! The BF16 conversions of SPEC §4, written once over [`ConvertLanes`]: integer code only
//! (AVX-512's `VCVTNEPS2BF16` flushes subnormals and quiets NaNs, which SPEC §4 forbids).
//!
//! - FP32 → BF16: `(x + 0x7fff + ((x >> 16) & 1)) >> 16` per 32-bit lane, wrapping, NaNs
//!   included ([`round_pack`]).
//! - FP16 → BF16 ([`f16_lanes`]): one nearest-even rounding of the 10-bit significand to
//!   7 bits and the exponent rebias on the signed bits when every lane of the vector is
//!   normal ([`f16_normal`]; the band kernel checks a whole block at once); otherwise
//!   subnormals normalized by four compare / shift / select steps (skipped when no lane is
//!   zero or subnormal), the rounding, zeros, infinities and NaNs (quieted, high payload
//!   kept) rebuilt, sign ORed back.
//!
//! Whole vectors only: the remainder of a run is one more vector step (overlapping the last
//! whole one, or on a zero-padded stack copy of a run shorter than a step), and every lane
//! computes the exact conversion, so every level gives the bytes of `simak_core::arith::cast`.

use simak_core::DType;
use simak_core::arith::cast;
use simak_core::arith::quant::{FormatLift, InputFormat};

use super::isa::{Isa, Kernel};

/// One level's integer lanes for the conversions.
pub(crate) trait ConvertLanes: Isa {
    /// `LANES` 32-bit lanes.
    type U32: Copy;
    /// `2 · LANES` 16-bit lanes.
    type U16: Copy;
    /// A per-lane condition on `U16` lanes.
    type Mask: Copy;

    /// 32-bit lanes per [`ConvertLanes::U32`].
    const LANES: usize;

    /// Loads `LANES` 32-bit lanes.
    ///
    /// # Safety
    ///
    /// `ptr` valid for reading `4 · LANES` bytes (no alignment needed).
    unsafe fn load32(self, ptr: *const u8) -> Self::U32;

    /// Loads `2 · LANES` 16-bit lanes.
    ///
    /// # Safety
    ///
    /// `ptr` valid for reading `4 · LANES` bytes (no alignment needed).
    unsafe fn load16(self, ptr: *const u8) -> Self::U16;

    /// Stores `2 · LANES` 16-bit lanes.
    ///
    /// # Safety
    ///
    /// `ptr` valid for writing `4 · LANES` bytes (no alignment needed).
    unsafe fn store16(self, ptr: *mut u8, v: Self::U16);

    /// `x` in every 32-bit lane.
    fn splat32(self, x: u32) -> Self::U32;
    /// Lane-wise wrapping sum.
    fn add32(self, a: Self::U32, b: Self::U32) -> Self::U32;
    /// Lane-wise AND.
    fn and32(self, a: Self::U32, b: Self::U32) -> Self::U32;
    /// Lane-wise logical right shift by 16.
    fn shr32_16(self, a: Self::U32) -> Self::U32;
    /// The high 16 bits of every lane of `a`, then of `b`, in lane order.
    fn high_halves(self, a: Self::U32, b: Self::U32) -> Self::U16;

    /// `x` in every 16-bit lane.
    fn splat16(self, x: u16) -> Self::U16;
    /// Lane-wise wrapping sum.
    fn add16(self, a: Self::U16, b: Self::U16) -> Self::U16;
    /// Lane-wise wrapping difference.
    fn sub16(self, a: Self::U16, b: Self::U16) -> Self::U16;
    /// Lane-wise AND.
    fn and16(self, a: Self::U16, b: Self::U16) -> Self::U16;
    /// Lane-wise OR.
    fn or16(self, a: Self::U16, b: Self::U16) -> Self::U16;
    /// Lane-wise left shift by `K`.
    fn shl16<const K: i32>(self, a: Self::U16) -> Self::U16;
    /// Lane-wise logical right shift by `K`.
    fn shr16<const K: i32>(self, a: Self::U16) -> Self::U16;
    /// Lane-wise arithmetic right shift by `K` (the top bit replicated).
    fn sra16<const K: i32>(self, a: Self::U16) -> Self::U16;
    /// `a > b` per lane, for lanes below 0x8000.
    fn gt16(self, a: Self::U16, b: Self::U16) -> Self::Mask;
    /// `a == b` per lane.
    fn eq16(self, a: Self::U16, b: Self::U16) -> Self::Mask;
    /// `yes` where `m` holds, else `no`.
    fn select(self, m: Self::Mask, yes: Self::U16, no: Self::U16) -> Self::U16;
    /// Whether `m` holds in any lane.
    fn any(self, m: Self::Mask) -> bool;
}

/// FP32 → BF16 of two vectors of FP32 bits: `2 · LANES` BF16 values in order.
///
/// (No closures in the kernels: a closure is compiled without the entry's features, so the
/// intrinsics in it would not inline.)
#[inline(always)]
pub(crate) fn round_pack<L: ConvertLanes>(l: L, a: L::U32, b: L::U32) -> L::U16 {
    l.high_halves(round32(l, a), round32(l, b))
}

/// `x + 0x7fff + ((x >> 16) & 1)` per 32-bit lane: the BF16 value is the high half.
#[inline(always)]
pub(crate) fn round32<L: ConvertLanes>(l: L, x: L::U32) -> L::U32 {
    let lsb = l.and32(l.shr32_16(x), l.splat32(1));
    l.add32(x, l.add32(lsb, l.splat32(0x7fff)))
}

/// FP16 → BF16 per 16-bit lane: [`f16_normal`] when every lane is normal, else the
/// general formulation.
#[inline(always)]
pub(crate) fn f16_lanes<L: ConvertLanes>(l: L, h: L::U16) -> L::U16 {
    if !l.any(f16_not_normal(l, h)) {
        return f16_normal(l, h);
    }
    let t = l.and16(h, l.splat16(0x7fff));
    let sign = l.and16(h, l.splat16(0x8000));
    let below_normal = l.gt16(l.splat16(0x400), t);
    let special = l.gt16(t, l.splat16(0x7bff));
    f16_general(l, t, sign, below_normal, special)
}

/// The FP16 lanes that are zero, subnormal, infinite or NaN (exponent field 0 or 31): adding
/// 1 to the exponent field leaves bits 11..=14 all zero exactly for those (31 + 1 carries
/// out of the field, into the sign or out of the lane).
#[inline(always)]
pub(crate) fn f16_not_normal<L: ConvertLanes>(l: L, h: L::U16) -> L::Mask {
    let bumped = l.and16(l.add16(h, l.splat16(0x400)), l.splat16(0x7800));
    l.eq16(bumped, l.splat16(0))
}

/// FP16 → BF16 of lanes that are all normal: the 10-bit significand rounded to 7 bits
/// (nearest-even; a carry goes into the exponent) on the signed bits, which cannot carry
/// into the sign (magnitude at most 0x7bff + 4); the arithmetic shift keeps the sign in bit
/// 15 (the mask clears its copies in bits 12..=14) and the exponent is rebiased
/// (127 − 15 = 112, i.e. 0x3800).
#[inline(always)]
pub(crate) fn f16_normal<L: ConvertLanes>(l: L, h: L::U16) -> L::U16 {
    let lsb = l.and16(l.shr16::<3>(h), l.splat16(1));
    let rounded = l.add16(h, l.add16(lsb, l.splat16(3)));
    let shifted = l.and16(l.sra16::<3>(rounded), l.splat16(0x8fff));
    l.add16(shifted, l.splat16(0x3800))
}

/// FP16 → BF16 of the magnitudes `t` (signs `sign`) when some lane is zero, subnormal
/// (`below_normal`), infinite or NaN (`special`).
#[inline(always)]
fn f16_general<L: ConvertLanes>(
    l: L,
    t: L::U16,
    sign: L::U16,
    below_normal: L::Mask,
    special: L::Mask,
) -> L::U16 {
    let zero = l.splat16(0);
    let (mut m, mut s) = (t, zero);
    if l.any(below_normal) {
        let lt = l.gt16(l.splat16(1 << 3), m);
        (m, s) = (
            l.select(lt, l.shl16::<8>(m), m),
            l.select(lt, l.splat16(8), s),
        );
        let lt = l.gt16(l.splat16(1 << 7), m);
        (m, s) = (
            l.select(lt, l.shl16::<4>(m), m),
            l.select(lt, l.add16(s, l.splat16(4)), s),
        );
        let lt = l.gt16(l.splat16(1 << 9), m);
        (m, s) = (
            l.select(lt, l.shl16::<2>(m), m),
            l.select(lt, l.add16(s, l.splat16(2)), s),
        );
        let lt = l.gt16(l.splat16(1 << 10), m);
        (m, s) = (
            l.select(lt, l.shl16::<1>(m), m),
            l.select(lt, l.add16(s, l.splat16(1)), s),
        );
    }
    // Normal lanes: t + (10 << 10); subnormal lanes: the normalized significand with the
    // exponent field 11 − s. Either way the BF16 bias is then 102 << 7.
    let tn = l.add16(m, l.shl16::<10>(l.sub16(l.splat16(10), s)));
    let lsb = l.and16(l.shr16::<3>(tn), l.splat16(1));
    let rounded = l.shr16::<3>(l.add16(l.add16(tn, l.splat16(3)), lsb));
    let r = l.add16(rounded, l.splat16(102 << 7));
    let r = l.select(l.eq16(t, zero), zero, r);
    let nan = l.gt16(t, l.splat16(0x7c00));
    let payload = l.shr16::<3>(l.and16(t, l.splat16(0x3ff)));
    let quiet = l.select(nan, l.splat16(0x40), zero);
    let sv = l.or16(l.splat16(0x7f80), l.or16(quiet, payload));
    l.or16(l.select(special, sv, r), sign)
}

/// Input bytes of one step on the widest level (32 FP32 elements).
const STEP_IN_MAX: usize = 128;
/// Output bytes of one step on the widest level.
const STEP_OUT_MAX: usize = 64;

/// The conversion loop over `n` elements of `I` (any count): whole steps of `2 · LANES`,
/// then the remainder as one more step — overlapping the last whole step when `n` holds
/// one (the same bytes are recomputed from the unchanged input), else through a
/// zero-padded stack copy of the run. Only `input[..n · I::SIZE]` is read and only
/// `output[..2n]` written.
struct Body<'a, I> {
    input: &'a [u8],
    output: &'a mut [u8],
    n: usize,
    format: core::marker::PhantomData<I>,
}

/// One step: `2 · LANES` elements of `I` at `at` → `4 · LANES` bytes at `dst`.
///
/// # Safety
///
/// `at` readable for `2 · LANES · I::SIZE` bytes, `dst` writable for `4 · LANES` bytes.
#[inline(always)]
unsafe fn step<L: ConvertLanes, I: InputFormat>(l: L, at: *const u8, dst: *mut u8) {
    let v = if matches!(I::DTYPE, DType::F32) {
        // SAFETY: (both loads) the step's 8 · LANES bytes from `at` are readable.
        let a = unsafe { l.load32(at) };
        // SAFETY: as above.
        let b = unsafe { l.load32(at.wrapping_add(4 * L::LANES)) };
        round_pack(l, a, b)
    } else {
        // SAFETY: the step's 4 · LANES bytes from `at` are readable.
        f16_lanes(l, unsafe { l.load16(at) })
    };
    // SAFETY: 4 · LANES bytes writable at `dst`.
    unsafe { l.store16(dst, v) };
}

impl<L: ConvertLanes, I: InputFormat> Kernel<L> for Body<'_, I> {
    type Output = ();

    #[inline(always)]
    fn run(self, l: L) {
        let step_n = 2 * L::LANES;
        let n = self.n;
        assert!(
            self.input.len() >= n * I::SIZE
                && self.output.len() >= 2 * n
                && step_n * I::SIZE <= STEP_IN_MAX
                && 2 * step_n <= STEP_OUT_MAX
        );
        let (src, dst) = (self.input.as_ptr(), self.output.as_mut_ptr());
        let blocks = n / step_n * step_n;
        let mut i = 0;
        while i < blocks {
            // SAFETY: i + step ≤ n, asserted above to fit `input` and `output`.
            unsafe { step::<L, I>(l, src.wrapping_add(i * I::SIZE), dst.wrapping_add(2 * i)) };
            i += step_n;
        }
        if blocks == n {
            return;
        }
        if n >= step_n {
            let at = n - step_n;
            // SAFETY: at + step = n fits both slices (asserted above).
            unsafe { step::<L, I>(l, src.wrapping_add(at * I::SIZE), dst.wrapping_add(2 * at)) };
        } else {
            let mut buf_in = [0u8; STEP_IN_MAX];
            let mut buf_out = [0u8; STEP_OUT_MAX];
            buf_in[..n * I::SIZE].copy_from_slice(&self.input[..n * I::SIZE]);
            // SAFETY: both buffers hold a whole step (asserted above).
            unsafe { step::<L, I>(l, buf_in.as_ptr(), buf_out.as_mut_ptr()) };
            self.output[..2 * n].copy_from_slice(&buf_out[..2 * n]);
        }
    }
}

/// A conversion of `min(output.len() / 2, input.len() / I::SIZE)` elements of `I` into BF16
/// pairs, every element on level `L` (see [`Body`]). BF16 input is a copy (SPEC §4).
fn convert<L: ConvertLanes, I: InputFormat>(input: &[u8], output: &mut [u8]) {
    let n = (output.len() / 2).min(input.len() / I::SIZE);
    match L::detect() {
        Some(l) if !matches!(I::DTYPE, DType::BF16) => l.vectorize(Body::<I> {
            input,
            output: &mut *output,
            n,
            format: core::marker::PhantomData,
        }),
        // BF16, or (not reached: handed out after detection) no token.
        _ => cast::run(I::DTYPE, &input[..n * I::SIZE], &mut output[..n * 2]),
    }
}

/// Level `L`'s conversion of a float `dtype`, or `None` when this CPU lacks the level.
pub(crate) fn convert_fn<L: ConvertLanes>(dtype: DType) -> Option<super::tess::ConvertFn> {
    struct Select<L>(core::marker::PhantomData<L>);
    impl<L: ConvertLanes> FormatLift for Select<L> {
        type Output = super::tess::ConvertFn;
        fn lift<I: InputFormat>(self) -> super::tess::ConvertFn {
            convert::<L, I>
        }
    }
    L::detect()?;
    simak_core::arith::quant::lift_format(dtype, Select::<L>(core::marker::PhantomData))
}
