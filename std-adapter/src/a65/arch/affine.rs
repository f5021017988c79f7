//! Preproc's INT8 outputs (Quant strided, QuantTess) in integer SIMD: each channel's 256
//! results as an integer affine map of the raw byte, found and checked at `prepare`.
//!
//! For a plan whose per-channel tables `t[c][p]` (SPEC §13's equivalence: Quant's exact
//! element function of the normalized value of raw byte `p`) are monotone, [`fit`] computes
//! per channel an integer slope `a` (|a| ≤ 2^22) and intercept `b` (|b| ≤ 2^30) such that,
//! for every `p` in `0..=255`,
//!
//! ```text
//! model(a, b, p) = sat_i8((p · a + b) >> 16) == t[c][p]        (>> arithmetic)
//! ```
//!
//! These are exactly the lane operations of the blocks: raw bytes widened to 32-bit lanes,
//! a multiply and an add (no overflow within those bounds), an arithmetic shift by 16 and
//! the signed saturating packs to 16 then 8 bits. The search is exact: with the bounds
//! `v·2^16 ≤ p·a + b < (v + 1)·2^16` of each value `v` (one-sided at −128 and 127, where the
//! packs saturate), a slope is feasible exactly when it lies between every pair's bounds
//! (a two-variable linear feasibility problem, solved over the 32,640 pairs). A plan whose
//! tables admit no such map keeps the tables ([`fit`] returns `None`). The result is checked
//! against the tables for all 256 values of every channel before it is used, so the blocks
//! give the table's bytes by construction.

use super::isa::Isa;

/// Bytes of one period of the constants: three interleaved channels in 32-byte vectors
/// (the least common multiple of 3 and 32).
pub(crate) const PERIOD: usize = 96;

/// The constants of three interleaved channels: byte `j` of a packed three-channel run
/// belongs to channel `j % 3`, whose `a` and `b` are `a[j]` and `b[j]`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Affine3 {
    /// `a` of byte `j`'s channel.
    pub(crate) a: [i32; PERIOD],
    /// `b` of byte `j`'s channel.
    pub(crate) b: [i32; PERIOD],
}

impl core::fmt::Debug for Affine3 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Affine3")
            .field("a", &&self.a[..3])
            .field("b", &&self.b[..3])
            .finish()
    }
}

/// One level's blocks of the affine map.
pub(crate) trait AffineLanes: Isa {
    /// Writes `dst[i] = model(a[i % 96], b[i % 96], src[i])` for the `i` below the largest
    /// multiple of the level's step (48 or 96 bytes) that `src` and `dst` both hold;
    /// returns that count (a multiple of 48, so of 3).
    fn affine3(self, k: &Affine3, src: &[u8], dst: &mut [u8]) -> usize;
}

/// Largest slope magnitude: `255 · 2^22 + 2^30 < 2^31`, so no lane overflows.
const A_MAX: i64 = 1 << 22;
/// Largest intercept magnitude.
const B_MAX: i64 = 1 << 30;

/// What one lane computes for raw byte `p` (the scalar model of the blocks).
#[inline]
pub(crate) fn model(a: i32, b: i32, p: u8) -> i8 {
    ((i32::from(p) * a + b) >> 16).clamp(-128, 127) as i8
}

/// The affine map of three channels' tables, if one exists (module docs); `None` keeps
/// the tables. About 65,000 integer steps per channel.
pub(crate) fn fit(t: &[[i8; 256]; 3]) -> Option<Affine3> {
    let mut ab = [(0i32, 0i32); 3];
    for (slot, t) in ab.iter_mut().zip(t) {
        *slot = fit_channel(t)?;
    }
    // The check the module promises, independent of the search.
    for (c, &(a, b)) in ab.iter().enumerate() {
        if (0..=255u8).any(|p| model(a, b, p) != t[c][usize::from(p)]) {
            return None;
        }
    }
    let mut k = Affine3 {
        a: [0; PERIOD],
        b: [0; PERIOD],
    };
    for j in 0..PERIOD {
        (k.a[j], k.b[j]) = ab[j % 3];
    }
    Some(k)
}

/// The bounds on `p · a + b` that give value `v`: `None` where the packs saturate.
fn bounds(v: i8) -> (Option<i64>, Option<i64>) {
    let v = i64::from(v);
    (
        (v > -128).then_some(v << 16),
        (v < 127).then_some(((v + 1) << 16) - 1),
    )
}

/// One channel: a feasible slope and intercept, if any.
fn fit_channel(t: &[i8; 256]) -> Option<(i32, i32)> {
    let (mut lo, mut hi) = (-A_MAX, A_MAX);
    for (p, &tp) in t.iter().enumerate() {
        let (lp, up) = bounds(tp);
        for (q, &tq) in t.iter().enumerate().skip(p + 1) {
            let (lq, uq) = bounds(tq);
            let d = (q - p) as i64;
            // p·a + b ≤ up and q·a + b ≥ lq: a ≥ (lq − up) / d.
            if let (Some(lq), Some(up)) = (lq, up) {
                lo = lo.max((lq - up).div_euclid(d) + i64::from((lq - up).rem_euclid(d) != 0));
            }
            // p·a + b ≥ lp and q·a + b ≤ uq: a ≤ (uq − lp) / d.
            if let (Some(lp), Some(uq)) = (lp, uq) {
                hi = hi.min((uq - lp).div_euclid(d));
            }
        }
        if lo > hi {
            return None;
        }
    }
    // The feasible slope nearest 0 (a saturated channel: 0), and below the intercept
    // nearest 0: the lanes' sums stay small.
    let a = 0i64.clamp(lo, hi);
    let (mut b_lo, mut b_hi) = (-B_MAX, B_MAX);
    for (p, &v) in t.iter().enumerate() {
        let (l, u) = bounds(v);
        let pa = p as i64 * a;
        if let Some(l) = l {
            b_lo = b_lo.max(l - pa);
        }
        if let Some(u) = u {
            b_hi = b_hi.min(u - pa);
        }
    }
    (b_lo <= b_hi).then(|| (a as i32, 0i64.clamp(b_lo, b_hi) as i32))
}

#[cfg(test)]
mod test {
    use super::*;

    /// `round_half_even(x · m) + zp` saturated, with `x = (p / d − mean) / std` in f64: a
    /// stand-in for Quant's element function of the normalized value.
    fn table(d: f64, mean: f64, std: f64, m: f64, zp: i32) -> [i8; 256] {
        core::array::from_fn(|p| {
            let x = (p as f64 / d - mean) / std;
            let q = (x * m).round_ties_even() as i64 + i64::from(zp);
            q.clamp(-128, 127) as i8
        })
    }

    fn check(t: &[[i8; 256]; 3]) -> Option<Affine3> {
        let k = fit(t)?;
        for j in 0..PERIOD {
            for p in 0..=255u8 {
                assert_eq!(
                    model(k.a[j], k.b[j], p),
                    t[j % 3][usize::from(p)],
                    "byte {j}, raw {p}"
                );
            }
        }
        Some(k)
    }

    #[test]
    fn usual_normalizations_fit_exactly() {
        // ImageNet mean / std over 255, multipliers around the value range.
        let imagenet = [
            table(255.0, 0.485, 0.229, 48.0, 0),
            table(255.0, 0.456, 0.224, 48.0, 0),
            table(255.0, 0.406, 0.225, 48.0, 0),
        ];
        assert!(check(&imagenet).is_some());
        for m in [1.0, 100.0, 127.0, 254.0, 255.0, 1.0 / 3.0] {
            let t = table(255.0, 0.0, 1.0, m, -128);
            assert!(check(&[t; 3]).is_some(), "multiplier {m}");
        }
        // Identity and negative slope (std < 0), constant channel.
        let id = table(1.0, 0.0, 1.0, 1.0, -128);
        let neg = table(255.0, 0.5, -0.25, 60.0, 3);
        let flat = [5i8; 256];
        assert!(check(&[id, neg, flat]).is_some());
    }

    #[test]
    fn a_table_that_is_no_affine_map_is_refused() {
        let mut t = table(255.0, 0.0, 1.0, 127.0, 0);
        t[100] = t[100].wrapping_add(3);
        assert_eq!(fit(&[t; 3]), None);
        // A step of 255 codes in one raw step: steeper than any slope of the lanes.
        let step: [i8; 256] = core::array::from_fn(|p| if p < 100 { -128 } else { 127 });
        let k = fit(&[step; 3]);
        if let Some(k) = k {
            assert!((0..=255u8).all(|p| model(k.a[0], k.b[0], p) == step[p as usize]));
        }
    }

    #[test]
    fn random_normalizations_fit_exactly_up_to_the_lanes_slope() {
        // A PCG-style generator: many parameter sets, each accepted map checked everywhere;
        // every one whose slope is at most 32 codes per raw step (the lanes take 64) fits.
        let mut s = 0x853c_49e6_748f_ea9bu64;
        let mut next = || {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((s >> 33) as f64) / f64::from(1u32 << 31)
        };
        let mut gentle = 0;
        for _ in 0..400 {
            let mut slope = 0f64;
            let t = [0; 3].map(|_| {
                let (d, std, m) = (1.0 + 300.0 * next(), 0.05 + next(), 200.0 * next());
                let std = if next() < 0.2 { -std } else { std };
                slope = slope.max((m / (d * std)).abs());
                table(d, next() - 0.5, std, m, (next() * 256.0) as i32 - 128)
            });
            let fitted = check(&t).is_some();
            if slope <= 32.0 {
                gentle += 1;
                assert!(fitted, "slope {slope}: {:?}", t.map(|t| fit_channel(&t)));
            }
        }
        assert!(gentle > 300, "{gentle}");
    }
}
