//! Preproc's BF16 output (CastTess, Compact three-channel tiles) in FP SIMD: each raw
//! byte's normalized value computed in binary32 lanes, rounded to BF16 in integer lanes and
//! placed as the tile's pixels, checked against the plan's tables at `prepare`.
//!
//! The lanes compute, for raw byte `p` of channel `c` (constants `a`, `b`, `k` per channel),
//!
//! ```text
//! Mul: y = ((f32(p) · a) + b) · k          a = 1 / divisor, b = −mean, k = 1 / std
//! Div: y = ((f32(p) / a) + b) / k          a = divisor,     b = −mean, k = std
//! model(p) = (bits(y) + 0x7fff + ((bits(y) >> 16) & 1)) >> 16   (BF16, nearest-even)
//! ```
//!
//! each step rounded once to binary32 (no fused operation). `Div` is SPEC §13's formula
//! itself (`x − mean` is `x + (−mean)`); `Mul` replaces its two divisions by products with
//! the reciprocals, which differ from them by an ulp for some values and so, rarely, by an
//! ulp of BF16 after the rounding. [`fit`] takes `Mul` when its model equals the plan's
//! table (SPEC §13's equivalence: §4's FP32 → BF16 of the normalized value) for all 256
//! values of every channel, else `Div` when that one does (it always does in the default
//! FP environment, but it is checked the same way), else nothing (the tables stay). The
//! check runs in the default FP environment only, and a call uses the lanes only in it
//! (`untess::fp_ok`), so the blocks give the table's bytes by construction.
//!
//! Placement: a Compact three-channel BF16 pixel is six bytes, the low bytes of its
//! channels then their high bytes (SPEC §5); eight pixels (24 values, 48 bytes) are three
//! 16-byte chunks, each gathered by byte shuffles ([`MASKS`]) from the three vectors of
//! eight packed 16-bit results.

use super::isa::Isa;

/// Values of one period of the constants: three interleaved channels in eight-lane vectors
/// (the least common multiple of 3 and 8).
pub(crate) const PERIOD: usize = 24;

/// The lanes' FP steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Steps {
    /// Products by the reciprocals.
    Mul,
    /// SPEC §13's divisions.
    Div,
}

/// The constants of three interleaved channels: value `j` of a packed three-channel run
/// belongs to channel `j % 3`, whose constants are `a[j]`, `b[j]` and `k[j]`.
#[derive(Clone, Copy, PartialEq)]
pub(crate) struct Bf16Map3 {
    /// Which FP steps the lanes run.
    pub(crate) steps: Steps,
    /// First operand of value `j`'s channel (reciprocal of the divisor, or the divisor).
    pub(crate) a: [f32; PERIOD],
    /// Negated mean of value `j`'s channel.
    pub(crate) b: [f32; PERIOD],
    /// Last operand of value `j`'s channel (reciprocal of the std, or the std).
    pub(crate) k: [f32; PERIOD],
}

impl core::fmt::Debug for Bf16Map3 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Bf16Map3")
            .field("steps", &self.steps)
            .field("a", &&self.a[..3])
            .field("b", &&self.b[..3])
            .field("k", &&self.k[..3])
            .finish()
    }
}

/// One level's blocks of the BF16 map.
pub(crate) trait Bf16Lanes: Isa {
    /// Writes the Compact BF16 pixels of the packed three-channel raw bytes `src` into
    /// `dst`: pixel `i`'s six bytes at `dst[6i..]` are the low bytes of
    /// `model(src[3i..3i + 3])`, then their high bytes; for the pixels of whole blocks of 8
    /// that `src` (3 bytes a pixel) and `dst` (6 bytes a pixel) both hold. Returns that
    /// pixel count (a multiple of 8). Only in the default FP environment. The x86-64 levels
    /// also prefetch as many bytes past `src` (the next tile's row, when `src` is a tile row
    /// of a packed frame): a hint, never a read.
    fn bf16x3(self, k: &Bf16Map3, src: &[u8], dst: &mut [u8]) -> usize;
}

/// The BF16 of binary32 bits `bits`, nearest-even, as the lanes compute it (no NaN case:
/// a NaN fails [`fit`]'s check).
#[inline]
pub(crate) const fn round_bf16(bits: u32) -> u16 {
    (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// What one lane computes for raw byte `p` with constants `(a, b, k)` (the scalar model of
/// the blocks).
#[inline]
pub(crate) fn model(steps: Steps, a: f32, b: f32, k: f32, p: u8) -> u16 {
    let x = f32::from(p);
    let y = match steps {
        Steps::Mul => (x * a + b) * k,
        Steps::Div => (x / a + b) / k,
    };
    round_bf16(y.to_bits())
}

/// The map of a three-channel plan with normalization `(divisor, mean, std)` (binary32
/// bits, SPEC §13) and BF16 tables `t` (in their low 16 bits), if one of the steps gives
/// every table entry (module docs); `None` keeps the tables. Call only in the default FP
/// environment.
pub(crate) fn fit(
    divisor: u32,
    mean: [u32; 3],
    std: [u32; 3],
    t: &[[u32; 256]; 3],
) -> Option<Bf16Map3> {
    let d = f32::from_bits(divisor);
    for steps in [Steps::Mul, Steps::Div] {
        let consts: [(f32, f32, f32); 3] = core::array::from_fn(|c| {
            let (m, s) = (f32::from_bits(mean[c]), f32::from_bits(std[c]));
            match steps {
                Steps::Mul => (1.0 / d, -m, 1.0 / s),
                Steps::Div => (d, -m, s),
            }
        });
        let exact = consts.iter().zip(t).all(|(&(a, b, k), t)| {
            (0..=255u8).all(|p| u32::from(model(steps, a, b, k, p)) == t[usize::from(p)])
        });
        if exact {
            let mut map = Bf16Map3 {
                steps,
                a: [0.0; PERIOD],
                b: [0.0; PERIOD],
                k: [0.0; PERIOD],
            };
            for j in 0..PERIOD {
                (map.a[j], map.b[j], map.k[j]) = consts[j % 3];
            }
            return Some(map);
        }
    }
    None
}

/// Byte-shuffle controls of one block: chunk `j` (output bytes `16j..16j + 16`) is the OR
/// over `h` of the shuffle of vector `h` (values `8h..8h + 8`, value `v`'s low byte at
/// `2v`, its high byte at `2v + 1`) by `MASKS[j][h]` (`0x80`: a zero byte).
pub(crate) const MASKS: [[[u8; 16]; 3]; 3] = masks();

const fn masks() -> [[[u8; 16]; 3]; 3] {
    let mut m = [[[0x80u8; 16]; 3]; 3];
    let mut o = 0;
    while o < 48 {
        // Output byte `o`: pixel `o / 6`, its byte `r`: plane `r / 3` of channel `r % 3`.
        let r = o % 6;
        let v = 3 * (o / 6) + r % 3;
        m[o / 16][v / 8][o % 16] = (2 * (v % 8) + r / 3) as u8;
        o += 1;
    }
    m
}

/// [`MASKS`] as indices into the 48 bytes of the three vectors (`16h + byte`; a table
/// lookup over three registers, NEON's `TBL`).
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
pub(crate) const TABLE_INDEX: [[u8; 16]; 3] = table_index();

const fn table_index() -> [[u8; 16]; 3] {
    let mut t = [[0u8; 16]; 3];
    let mut j = 0;
    while j < 3 {
        let mut i = 0;
        while i < 16 {
            let mut h = 0;
            while h < 3 {
                if MASKS[j][h][i] != 0x80 {
                    t[j][i] = 16 * h as u8 + MASKS[j][h][i];
                }
                h += 1;
            }
            i += 1;
        }
        j += 1;
    }
    t
}

#[cfg(test)]
mod test {
    use super::*;
    use simak_core::arith::cast::f32_to_bf16;
    use simak_core::arith::preproc::normalize;

    /// The plan's tables as `tables` builds them: §4's BF16 of §13's normalized value.
    fn tables(d: f32, mean: [f32; 3], std: [f32; 3]) -> [[u32; 256]; 3] {
        core::array::from_fn(|c| {
            core::array::from_fn(|p| {
                let bits = normalize(p as u8, d.to_bits(), mean[c].to_bits(), std[c].to_bits());
                u32::from(f32_to_bf16(bits))
            })
        })
    }

    fn bits(v: [f32; 3]) -> [u32; 3] {
        v.map(f32::to_bits)
    }

    fn check(d: f32, mean: [f32; 3], std: [f32; 3]) -> Bf16Map3 {
        let t = tables(d, mean, std);
        let k = fit(d.to_bits(), bits(mean), bits(std), &t).expect("Div always fits");
        for j in 0..PERIOD {
            for p in 0..=255u8 {
                assert_eq!(
                    u32::from(model(k.steps, k.a[j], k.b[j], k.k[j], p)),
                    t[j % 3][usize::from(p)],
                    "value {j}, raw {p}"
                );
            }
        }
        k
    }

    #[test]
    fn usual_normalizations_take_the_products() {
        let imagenet = check(255.0, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]);
        assert_eq!(imagenet.steps, Steps::Mul);
        assert_eq!(check(255.0, [0.0; 3], [1.0; 3]).steps, Steps::Mul);
        assert_eq!(check(1.0, [0.0; 3], [1.0; 3]).steps, Steps::Mul);
    }

    #[test]
    fn every_normalization_fits_with_the_divisions() {
        // A PCG-style generator over divisors, means and stds (negative and tiny ones too):
        // whatever steps `fit` takes, its model equals the tables everywhere (`check`), and
        // some plans need the divisions.
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) as u32) as f32 / 4_294_967_296.0
        };
        let mut div = 0;
        for _ in 0..300 {
            let d = 1.0 + 400.0 * next();
            let mean = [next() * 2.0 - 1.0, next(), next() * 100.0];
            let std = [0.01 + next(), -(0.5 + next()), 1e-3 + next() * 7.0];
            div += usize::from(check(d, mean, std).steps == Steps::Div);
        }
        assert!(
            div > 0,
            "no plan needed the divisions: the check would be vacuous"
        );
    }

    #[test]
    fn masks_place_each_pixel_low_bytes_then_high_bytes() {
        // Values v = 0..24 with low byte v and high byte 0x80 | v: output byte o of pixel
        // o / 6 must be channel (o % 6) % 3's low byte, then its high byte.
        let vectors: [[u8; 16]; 3] = core::array::from_fn(|h| {
            core::array::from_fn(|i| (8 * h + i / 2) as u8 | if i % 2 == 1 { 0x80 } else { 0 })
        });
        for o in 0..48 {
            let (j, i) = (o / 16, o % 16);
            let got = (0..3)
                .map(|h| match MASKS[j][h][i] {
                    0x80 => 0,
                    s => vectors[h][usize::from(s)],
                })
                .fold(0, |a, b| a | b);
            let v = 3 * (o / 6) + (o % 6) % 3;
            let want = v as u8 | if o % 6 >= 3 { 0x80 } else { 0 };
            assert_eq!(got, want, "output byte {o}");
        }
    }
}
