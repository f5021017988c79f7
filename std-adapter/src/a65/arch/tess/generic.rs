//! The plane split written once over a 16-byte vector trait.
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

/// 16 bytes of SIMD lanes for one instruction set.
///
/// Every method is `unsafe`: the caller guarantees the level's target features are
/// enabled (the functions are inlined into a `#[target_feature]` entry point).
pub(crate) trait Lanes: Copy {
    /// Loads 16 bytes.
    ///
    /// # Safety
    ///
    /// Features enabled; `ptr` valid for reading 16 bytes (no alignment needed).
    unsafe fn load(ptr: *const u8) -> Self;

    /// Stores 16 bytes.
    ///
    /// # Safety
    ///
    /// Features enabled; `ptr` valid for writing 16 bytes (no alignment needed).
    unsafe fn store(self, ptr: *mut u8);

    /// All-zero lanes.
    ///
    /// # Safety
    ///
    /// Features enabled.
    unsafe fn zero() -> Self;

    /// `out[i] = self[pattern[i]]` for `pattern[i] < 16`, else 0.
    ///
    /// # Safety
    ///
    /// Features enabled.
    unsafe fn shuffle(self, pattern: Self) -> Self;

    /// `a` and `b` hold 16 little-endian `u16` lanes (8 each); lanes `≥ k` are treated as
    /// zero. Returns (low bytes, high bytes) of the 16 lanes.
    ///
    /// # Safety
    ///
    /// Features enabled.
    unsafe fn split16(a: Self, b: Self, k: usize) -> (Self, Self);
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

/// The split of [`super::SplitFn`].
///
/// # Safety
///
/// The target features of `V` must be enabled.
#[inline(always)]
pub(crate) unsafe fn split<V: Lanes>(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    if sc == 0 || tc == 0 {
        return;
    }
    if tc == sc && tc <= 8 {
        // Source and destination advance by the same 2·tc bytes per pixel: no division.
        let n = out.len().min(bf.len());
        if tc == 1 {
            out[..n].copy_from_slice(&bf[..n]);
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { small::<V>(&bf[..n], tc, &mut out[..n]) }
        }
        return;
    }
    let npx = (out.len() / (2 * sc)).min(bf.len() / (2 * tc));
    // SAFETY: forwarded from the caller.
    unsafe { per_pixel::<V>(&bf[..npx * 2 * tc], tc, sc, &mut out[..npx * 2 * sc]) }
}

/// Compact pixels of 2..=8 channels, several per shuffle.
///
/// # Safety
///
/// The target features of `V` must be enabled.
#[inline(always)]
unsafe fn small<V: Lanes>(bf: &[u8], tc: usize, out: &mut [u8]) {
    let pb = 2 * tc;
    let step = STEPS[tc];
    let total = out.len();
    let scratch = PATTERNS[tc];
    // SAFETY: `scratch` is 16 readable bytes; features enabled by the caller.
    let pat = unsafe { V::load(scratch.as_ptr()) };
    let mut off = 0;
    // bf and out have the same length here (tc = sc), so one bound covers both.
    while off + 16 <= total {
        // SAFETY: off + 16 ≤ total = bf.len().
        let v = unsafe { V::load(bf.as_ptr().wrapping_add(off)) };
        // SAFETY: features enabled by the caller.
        let v = unsafe { v.shuffle(pat) };
        // SAFETY: off + 16 ≤ total = out.len(); bytes past `off + step` are rewritten by
        // the next store or by the scalar tail, which starts at the final `off`.
        unsafe { v.store(out.as_mut_ptr().wrapping_add(off)) };
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
///
/// # Safety
///
/// The target features of `V` must be enabled.
#[inline(always)]
unsafe fn store_bounded<V: Lanes>(v: V, out: &mut [u8], pos: usize) {
    if pos + 16 <= out.len() {
        // SAFETY: pos + 16 ≤ out.len().
        unsafe { v.store(out.as_mut_ptr().wrapping_add(pos)) };
    } else if pos < out.len() {
        let mut tmp = [0u8; 16];
        // SAFETY: `tmp` is 16 writable bytes.
        unsafe { v.store(tmp.as_mut_ptr()) };
        let n = out.len() - pos;
        out[pos..].copy_from_slice(&tmp[..n]);
    }
}

/// Pixel by pixel, 16 channels per group.
///
/// # Safety
///
/// The target features of `V` must be enabled.
#[inline(always)]
unsafe fn per_pixel<V: Lanes>(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    let groups = sc.div_ceil(16);
    let npx = out.len() / (2 * sc);
    let mut tmp = [0u8; 32];
    for p in 0..npx {
        let src = p * 2 * tc;
        let dst = p * 2 * sc;
        for g in (0..groups).rev() {
            let k = tc.saturating_sub(16 * g).min(16);
            let (lo, hi) = if k == 0 {
                // SAFETY: features enabled by the caller.
                let z = unsafe { V::zero() };
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
                let a = unsafe { V::load(ptr) };
                // SAFETY: as above, second half.
                let b = unsafe { V::load(ptr.wrapping_add(16)) };
                // SAFETY: features enabled by the caller.
                unsafe { V::split16(a, b, k) }
            };
            // SAFETY: features enabled by the caller; the store is bounded.
            unsafe { store_bounded(lo, out, dst + 16 * g) };
            // SAFETY: as above.
            unsafe { store_bounded(hi, out, dst + sc + 16 * g) };
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
