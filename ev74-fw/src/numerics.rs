//! The 12 numerical entries (3 input dtypes × 4 rounding modes) and the FP-unit model.
//!
//! SPEC §8: 16-element blocks use one binary32 multiply per lane through an [`FpUnit`]; a
//! block takes the exact integer path of `simak_core::arith::quant` instead if the multiplier
//! is subnormal, any decoded input is a nonzero FP32 subnormal, or any nonzero input produced
//! a zero-exponent product (subnormal or flushed). Integer code then rounds the product to
//! an integer, adds the zero point and saturates. Shorter tails use the exact path. Results
//! are identical on an IEEE unit and on one that flushes subnormal inputs and results.

use simak_core::DType;
use simak_core::arith::quant::{
    self as exact, InputFormat, Lift, Multiplier, Rounding, RoundingMode,
};

/// Lanes per fast-path block.
pub const BLOCK: usize = 16;

/// A binary32 multiply unit, as the firmware's FP hardware behaves.
pub trait FpUnit {
    /// Name for logs and reports.
    const NAME: &'static str;
    /// `a · b` on binary32 bits, round-to-nearest-even.
    fn mul(a: u32, b: u32) -> u32;
}

/// An IEEE 754 unit: gradual underflow (the target's `f32` multiply).
#[derive(Debug)]
pub enum Ieee {}

impl FpUnit for Ieee {
    const NAME: &'static str = "ieee";
    #[inline(always)]
    fn mul(a: u32, b: u32) -> u32 {
        (f32::from_bits(a) * f32::from_bits(b)).to_bits()
    }
}

/// A software model of a unit with denormals-are-zero and flush-to-zero: subnormal inputs
/// are read as signed zeros and subnormal results are replaced by signed zeros.
#[derive(Debug)]
pub enum FlushToZero {}

#[inline(always)]
fn flush(x: u32) -> u32 {
    if x & 0x7f80_0000 == 0 {
        x & 0x8000_0000
    } else {
        x
    }
}

impl FpUnit for FlushToZero {
    const NAME: &'static str = "daz+ftz";
    #[inline(always)]
    fn mul(a: u32, b: u32) -> u32 {
        flush((f32::from_bits(flush(a)) * f32::from_bits(flush(b))).to_bits())
    }
}

/// Per-call parameters of an entry, decoded once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryParams {
    /// The multiplier, decoded (exact path).
    pub multiplier: Multiplier,
    /// Zero point, in [-128, 127].
    pub zero_point: i32,
}

impl EntryParams {
    /// Whether the multiplier is subnormal (every block takes the exact path).
    pub const fn multiplier_subnormal(&self) -> bool {
        self.multiplier.bits() & 0x7f80_0000 == 0
    }
}

/// Blocks processed by each path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BlockStats {
    /// 16-element blocks finished from the FP product.
    pub fast: u64,
    /// 16-element blocks recomputed on the exact path.
    pub exact: u64,
    /// Tail elements on the exact path.
    pub tail: u64,
}

impl BlockStats {
    /// The elements of this tally on each path, `(fast, fallback)`, as a
    /// [`crate::Meter`] is told: a fast block is 16 fast elements; a recomputed block is
    /// 16 fast elements (the products that decided it, unless the multiplier is subnormal,
    /// `multiplier_subnormal`, when no product is computed) plus 16 fallback elements;
    /// every tail element is a fallback element.
    pub fn elements(&self, multiplier_subnormal: bool) -> (u64, u64) {
        let block = BLOCK as u64;
        let tried = if multiplier_subnormal {
            self.fast
        } else {
            self.fast.saturating_add(self.exact)
        };
        (
            tried.saturating_mul(block),
            self.exact.saturating_mul(block).saturating_add(self.tail),
        )
    }

    /// Adds another tally.
    pub fn add(&mut self, other: BlockStats) {
        self.fast = self.fast.saturating_add(other.fast);
        self.exact = self.exact.saturating_add(other.exact);
        self.tail = self.tail.saturating_add(other.tail);
    }
}

/// Quantizes a contiguous run: `input` holds little-endian elements, one per byte of
/// `output` (extra input ignored; a short input leaves the rest of `output` untouched).
pub type RunFn = fn(&EntryParams, &[u8], &mut [u8]) -> BlockStats;
/// Quantizes one element's raw bits on the exact path.
pub type ElementFn = fn(&Multiplier, i32, u32) -> i8;

/// One of the 12 numerical entries, chosen once per call.
#[derive(Clone, Copy)]
pub struct Entry {
    /// Input dtype.
    pub dtype: DType,
    /// Rounding mode.
    pub rounding: Rounding,
    /// FP-unit model name.
    pub fp_unit: &'static str,
    /// Contiguous runs: 16-element blocks, exact tail.
    pub run: RunFn,
    /// Single elements (scatter), exact path.
    pub element: ElementFn,
}

impl core::fmt::Debug for Entry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Entry")
            .field("dtype", &self.dtype)
            .field("rounding", &self.rounding)
            .field("fp_unit", &self.fp_unit)
            .finish_non_exhaustive()
    }
}

/// Rounds a binary32 product to an integer with mode `M`, adds the zero point, saturates.
#[inline(always)]
fn finish<M: RoundingMode>(product: u32, zero_point: i32) -> u8 {
    exact::saturate(exact::wide_binary32::<M>(product), zero_point) as u8
}

/// One 16-element block; returns whether it took the exact path.
///
/// The lanes are independent and free of branches up to the block's decision (products and
/// flags as plain array operations, which a compiler may vectorize); then the block is
/// finished from the products or recomputed on the exact path.
#[inline(always)]
fn block<I: InputFormat, M: RoundingMode, U: FpUnit>(
    p: &EntryParams,
    input: &[u8],
    output: &mut [u8],
) -> bool {
    let mut raw = [0u32; BLOCK];
    for (r, chunk) in raw.iter_mut().zip(input.chunks_exact(I::SIZE)) {
        *r = I::load(chunk);
    }
    let mut product = [0u32; BLOCK];
    let m_bits = p.multiplier.bits();
    // (A subnormal multiplier never gets here: `run` sends its blocks to the exact path.)
    let mut needs_exact = 0u32;
    for (pr, &r) in product.iter_mut().zip(&raw) {
        let x = I::to_f32_bits(r);
        let magnitude = x & 0x7fff_ffff;
        *pr = U::mul(x, m_bits);
        // A nonzero FP32 subnormal input: magnitude in [1, 2^23).
        let subnormal_input = I::MAY_BE_SUBNORMAL & (magnitude.wrapping_sub(1) < 0x7f_ffff);
        // A nonzero input whose product has a zero exponent (subnormal or flushed).
        let zero_exponent = (magnitude != 0) & (*pr & 0x7f80_0000 == 0);
        needs_exact |= (subnormal_input | zero_exponent) as u32;
    }
    if needs_exact != 0 {
        exact_elements::<I, M>(p, input, output);
    } else {
        for (o, pr) in output.iter_mut().zip(product) {
            *o = finish::<M>(pr, p.zero_point);
        }
    }
    needs_exact != 0
}

/// The exact path over `min(output.len(), input.len() / I::SIZE)` elements; returns that
/// count.
#[inline(always)]
fn exact_elements<I: InputFormat, M: RoundingMode>(
    p: &EntryParams,
    input: &[u8],
    output: &mut [u8],
) -> usize {
    let mut n = 0usize;
    for (o, chunk) in output.iter_mut().zip(input.chunks_exact(I::SIZE)) {
        *o = exact::element::<I, M>(&p.multiplier, p.zero_point, I::load(chunk)) as u8;
        // At most output.len(): no overflow.
        n = n.wrapping_add(1);
    }
    n
}

fn run<I: InputFormat, M: RoundingMode, U: FpUnit>(
    p: &EntryParams,
    input: &[u8],
    output: &mut [u8],
) -> BlockStats {
    let mut stats = BlockStats::default();
    // I::SIZE and BLOCK are nonzero constants; the products are at most input.len().
    let n = output
        .len()
        .min(input.len().checked_div(I::SIZE).unwrap_or(0));
    let blocks = n.checked_div(BLOCK).unwrap_or(0);
    let (in_blocks, in_tail) = input.split_at(blocks.wrapping_mul(BLOCK).wrapping_mul(I::SIZE));
    let (out_blocks, out_tail) = output.split_at_mut(blocks.wrapping_mul(BLOCK));
    let blocks = in_blocks
        .chunks_exact(BLOCK.wrapping_mul(I::SIZE))
        .zip(out_blocks.chunks_exact_mut(BLOCK));
    if p.multiplier_subnormal() {
        // Every block takes the exact path: no products needed to decide.
        for (ib, ob) in blocks {
            exact_elements::<I, M>(p, ib, ob);
            stats.exact = stats.exact.saturating_add(1);
        }
    } else {
        for (ib, ob) in blocks {
            if block::<I, M, U>(p, ib, ob) {
                stats.exact = stats.exact.saturating_add(1);
            } else {
                stats.fast = stats.fast.saturating_add(1);
            }
        }
    }
    stats.tail = stats
        .tail
        .saturating_add(exact_elements::<I, M>(p, in_tail, out_tail) as u64);
    stats
}

fn entry_for<I: InputFormat, M: RoundingMode, U: FpUnit>() -> Entry {
    Entry {
        dtype: I::DTYPE,
        rounding: M::MODE,
        fp_unit: U::NAME,
        run: run::<I, M, U>,
        element: exact::element::<I, M>,
    }
}

/// The entry for `dtype` × `rounding` on FP unit `U`; `None` for `I8` input.
pub fn select<U: FpUnit>(dtype: DType, rounding: Rounding) -> Option<Entry> {
    struct Select<U>(core::marker::PhantomData<U>);
    impl<U: FpUnit> Lift for Select<U> {
        type Output = Entry;
        fn lift<I: InputFormat, M: RoundingMode>(self) -> Entry {
            entry_for::<I, M, U>()
        }
    }
    exact::lift(dtype, rounding, Select::<U>(core::marker::PhantomData))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test;
