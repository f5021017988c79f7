//! The plane split (SPEC §5) written once over a 16-byte vector trait, [`SplitLanes`].
//!
//! Paths, chosen per call from `(tc, sc)`:
//!
//! - `tc = sc = 1`: the BF16 pairs are already the pixel layout (a copy);
//! - `tc = sc` in 2..=8 (compact small pixels): `⌊16 / 2tc⌋` whole pixels per byte shuffle,
//!   source and destination advancing together; the bytes past those pixels in each 16-byte
//!   store are rewritten by the next store, and the last pixels go through the scalar
//!   tail loop so nothing is written past the slice;
//! - otherwise per pixel, 16 channels per group, groups from last to first: each group's
//!   low and high bytes are stored as whole vectors. A compact partial group spills into
//!   the start of the high plane (rewritten by group 0's high store) and past the pixel
//!   (rewritten by the next pixel); stores that would cross the end of `out` are bounded.

use super::isa::{Isa, Kernel};
use super::tess::SplitFn;

/// 16 bytes of SIMD lanes for the split, on one level.
pub(crate) trait SplitLanes: Isa {
    /// 16 bytes.
    type V: Copy;

    /// Loads 16 bytes.
    ///
    /// # Safety
    ///
    /// `ptr` valid for reading 16 bytes (no alignment needed).
    unsafe fn load(self, ptr: *const u8) -> Self::V;

    /// Stores 16 bytes.
    ///
    /// # Safety
    ///
    /// `ptr` valid for writing 16 bytes (no alignment needed).
    unsafe fn store(self, ptr: *mut u8, v: Self::V);

    /// All-zero lanes.
    fn zero(self) -> Self::V;

    /// `out[i] = v[pattern[i]]` for `pattern[i] < 16`, else 0.
    fn shuffle(self, v: Self::V, pattern: Self::V) -> Self::V;

    /// `a` and `b` hold 16 little-endian `u16` lanes (8 each); lanes `≥ k` are treated as
    /// zero. Returns (low bytes, high bytes) of the 16 lanes.
    fn split16(self, a: Self::V, b: Self::V, k: usize) -> (Self::V, Self::V);
}

/// The split of [`SplitFn`] on level `L`, or `None` when this CPU lacks it.
pub(crate) fn split_fn<L: SplitLanes>() -> Option<SplitFn> {
    L::detect()?;
    Some(split_on::<L>)
}

/// [`SplitFn`] on level `L` (the scalar split if this CPU lacks it, which the table above
/// rules out).
fn split_on<L: SplitLanes>(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    match L::detect() {
        Some(l) => l.vectorize(Split { bf, tc, sc, out }),
        None => super::tess::fallback::split(bf, tc, sc, out),
    }
}

/// One split call.
struct Split<'a> {
    bf: &'a [u8],
    tc: usize,
    sc: usize,
    out: &'a mut [u8],
}

impl<L: SplitLanes> Kernel<L> for Split<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self, l: L) {
        split(l, self.bf, self.tc, self.sc, self.out)
    }
}

/// The byte shuffle of the compact small-pixel path for `tc` channels (2..=8).
const fn pattern(tc: usize) -> [u8; 16] {
    let mut p = [0x80u8; 16];
    if tc == 0 {
        return p;
    }
    let pb = 2 * tc;
    let per = 16 / pb;
    let mut j = 0;
    while j < per * pb {
        let px = j / pb;
        let r = j % pb;
        let plane = r / tc;
        let ch = r % tc;
        p[j] = (2 * (px * tc + ch) + plane) as u8;
        j += 1;
    }
    p
}

/// Shuffle patterns indexed by `tc` (entries 0 and 1 unused).
const PATTERNS: [[u8; 16]; 9] = [
    pattern(0),
    pattern(1),
    pattern(2),
    pattern(3),
    pattern(4),
    pattern(5),
    pattern(6),
    pattern(7),
    pattern(8),
];

/// Bytes of whole pixels per shuffle, indexed by `tc` (entries 0 and 1 unused).
const STEPS: [usize; 9] = [16, 16, 16, 12, 16, 10, 12, 14, 16];

/// The split of [`SplitFn`].
#[inline(always)]
fn split<L: SplitLanes>(l: L, bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    if sc == 0 || tc == 0 {
        return;
    }
    if tc == sc && tc <= 8 {
        // Source and destination advance by the same 2·tc bytes per pixel: no division.
        let n = out.len().min(bf.len());
        if tc == 1 {
            out[..n].copy_from_slice(&bf[..n]);
        } else {
            small(l, &bf[..n], tc, &mut out[..n])
        }
        return;
    }
    let npx = (out.len() / (2 * sc)).min(bf.len() / (2 * tc));
    per_pixel(l, &bf[..npx * 2 * tc], tc, sc, &mut out[..npx * 2 * sc])
}

/// Compact pixels of 2..=8 channels, several per shuffle.
#[inline(always)]
fn small<L: SplitLanes>(l: L, bf: &[u8], tc: usize, out: &mut [u8]) {
    let pb = 2 * tc;
    let step = STEPS[tc];
    let total = out.len();
    let scratch = PATTERNS[tc];
    // SAFETY: `scratch` is 16 readable bytes.
    let pat = unsafe { l.load(scratch.as_ptr()) };
    let mut off = 0;
    // bf and out have the same length here (tc = sc), so one bound covers both.
    while off + 16 <= total {
        // SAFETY: off + 16 ≤ total = bf.len().
        let v = unsafe { l.load(bf.as_ptr().wrapping_add(off)) };
        let v = l.shuffle(v, pat);
        // SAFETY: off + 16 ≤ total = out.len(); bytes past `off + step` are rewritten by
        // the next store or by the scalar tail, which starts at the final `off`.
        unsafe { l.store(out.as_mut_ptr().wrapping_add(off), v) };
        off += step;
    }
    // Fewer than 16 bytes (whole pixels) remain.
    while off + pb <= total {
        for c in 0..tc {
            out[off + c] = bf[off + 2 * c];
            out[off + tc + c] = bf[off + 2 * c + 1];
        }
        off += pb;
    }
}

/// One 16-byte store at `pos`, bounded by the end of `out`.
#[inline(always)]
fn store_bounded<L: SplitLanes>(l: L, v: L::V, out: &mut [u8], pos: usize) {
    if pos + 16 <= out.len() {
        // SAFETY: pos + 16 ≤ out.len().
        unsafe { l.store(out.as_mut_ptr().wrapping_add(pos), v) };
    } else if pos < out.len() {
        let mut tmp = [0u8; 16];
        // SAFETY: `tmp` is 16 writable bytes.
        unsafe { l.store(tmp.as_mut_ptr(), v) };
        let n = out.len() - pos;
        out[pos..].copy_from_slice(&tmp[..n]);
    }
}

/// Pixel by pixel, 16 channels per group.
#[inline(always)]
fn per_pixel<L: SplitLanes>(l: L, bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    let groups = sc.div_ceil(16);
    let npx = out.len() / (2 * sc);
    let mut tmp = [0u8; 32];
    for p in 0..npx {
        let src = p * 2 * tc;
        let dst = p * 2 * sc;
        for g in (0..groups).rev() {
            let k = tc.saturating_sub(16 * g).min(16);
            let (lo, hi) = if k == 0 {
                let z = l.zero();
                (z, z)
            } else {
                let at = src + 32 * g;
                let ptr = if at + 32 <= bf.len() {
                    bf.as_ptr().wrapping_add(at)
                } else {
                    let n = bf.len() - at;
                    tmp[..n].copy_from_slice(&bf[at..]);
                    tmp[n..].fill(0);
                    tmp.as_ptr()
                };
                // SAFETY: `ptr` addresses 32 readable bytes: either `bf[at..at + 32]` or
                // `tmp`.
                let a = unsafe { l.load(ptr) };
                // SAFETY: as above, second half.
                let b = unsafe { l.load(ptr.wrapping_add(16)) };
                l.split16(a, b, k)
            };
            store_bounded(l, lo, out, dst + 16 * g);
            store_bounded(l, hi, out, dst + sc + 16 * g);
        }
    }
}

#[cfg(test)]
mod test {
    use super::{PATTERNS, STEPS};

    #[test]
    fn small_patterns_follow_the_pixel_layout() {
        // tc = 3: two pixels [l0 l1 l2 h0 h1 h2] from pairs (l, h) at bytes 2c, 2c + 1.
        assert_eq!(
            PATTERNS[3],
            [0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11, 0x80, 0x80, 0x80, 0x80]
        );
        assert_eq!(
            PATTERNS[8][..16],
            [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
        );
        for (tc, &step) in STEPS.iter().enumerate().skip(2) {
            assert_eq!(step, 16 / (2 * tc) * 2 * tc);
        }
    }
}
