//! An independent oracle of SPEC §12.1 (the MLA output layouts read back): a head's tiles,
//! encodings and alignments written from the byte formula in plain loops. It shares no
//! code with the library's walker or with `TiledView::offset_of`. Used by the Detess tests
//! of `std-adapter` and by the `simak-qualify` correctness catalogue.
#![allow(clippy::needless_range_loop)] // the oracle indexes as SPEC §12.1 writes it

use std::collections::HashMap;

use simak::DType;
use simak::layout::{Channels, MlaTiled, TileAlign};

use crate::rng::Rng;

/// One head as the test draws it: logical shape (axis 0 = frames), roles, tiles,
/// encoding, alignment, dtype, output strides.
#[derive(Debug, Clone)]
pub struct Head {
    /// Logical extents; axis 0 is the frame axis.
    pub shape: Vec<usize>,
    /// The logical axis of each role D, H, W, C (`None`: the role is absent).
    pub axes: [Option<usize>; 4],
    /// Tile extents per role (1 for an absent role).
    pub tile: [usize; 4],
    /// The channel encoding.
    pub enc: Channels,
    /// Tile alignment in bytes: 16 or 1.
    pub align: usize,
    /// The element dtype of the OFM.
    pub dtype: DType,
    /// Byte strides of the dense output (elements of the head's own dtype).
    pub out_strides: Vec<usize>,
}

impl Head {
    /// Element size in bytes.
    pub fn e(&self) -> usize {
        self.dtype.size()
    }

    /// Extent of role `r` (0 D, 1 H, 2 W, 3 C), 1 when absent.
    pub fn role_extent(&self, r: usize) -> usize {
        self.axes[r].map_or(1, |a| self.shape[a])
    }

    /// Stored channels of a tile with `tc` channels (SPEC §5: PadTo16 and CBlock16 round up to 16).
    pub fn stored(&self, tc: usize) -> usize {
        match self.enc {
            Channels::Compact => tc,
            _ => tc.div_ceil(16) * 16,
        }
    }

    /// Bytes of a tile with the actual extents `ext`, rounded up to the alignment.
    pub fn tile_size(&self, ext: [usize; 4]) -> usize {
        (ext[0] * ext[1] * ext[2] * self.stored(ext[3]) * self.e()).div_ceil(self.align)
            * self.align
    }

    /// Actual extent of role `r` in its tile `i` (boundary tiles are smaller).
    pub fn actual(&self, r: usize, i: usize) -> usize {
        self.tile[r].min(self.role_extent(r) - i * self.tile[r])
    }

    /// Tile offsets within one outer index by storage order (C, D, H, W tiles), and the
    /// bytes per outer index.
    pub fn tile_offsets(&self) -> (HashMap<[usize; 4], usize>, usize) {
        let n: Vec<usize> = (0..4)
            .map(|r| self.role_extent(r).div_ceil(self.tile[r]))
            .collect();
        let mut map = HashMap::new();
        let mut pos = 0;
        for ic in 0..n[3] {
            for id in 0..n[0] {
                for ih in 0..n[1] {
                    for iw in 0..n[2] {
                        let idx = [id, ih, iw, ic];
                        map.insert(idx, pos);
                        let ext = [
                            self.actual(0, id),
                            self.actual(1, ih),
                            self.actual(2, iw),
                            self.actual(3, ic),
                        ];
                        pos += self.tile_size(ext);
                    }
                }
            }
        }
        (map, pos)
    }

    /// Product of the extents of the axes that name no role.
    pub fn outer_count(&self) -> usize {
        (0..self.shape.len())
            .filter(|a| !self.axes.contains(&Some(*a)))
            .map(|a| self.shape[a])
            .product()
    }

    /// Bytes of the whole head.
    pub fn span(&self) -> usize {
        self.tile_offsets().1 * self.outer_count()
    }

    /// SPEC §12.1: the byte of plane `p` of the element at `index`.
    pub fn byte_of(
        &self,
        offsets: &HashMap<[usize; 4], usize>,
        per_outer: usize,
        index: &[usize],
        p: usize,
    ) -> usize {
        let mut outer = 0;
        for a in 0..self.shape.len() {
            if !self.axes.contains(&Some(a)) {
                outer = outer * self.shape[a] + index[a];
            }
        }
        let mut ti = [0; 4];
        let mut wi = [0; 4];
        let mut te = [0; 4];
        for r in 0..4 {
            let i = self.axes[r].map_or(0, |a| index[a]);
            ti[r] = i / self.tile[r];
            wi[r] = i % self.tile[r];
            te[r] = self.actual(r, ti[r]);
        }
        let npix = te[0] * te[1] * te[2];
        let k = (wi[0] * te[1] + wi[1]) * te[2] + wi[2];
        let c = wi[3];
        let e = self.e();
        let in_tile = match self.enc {
            Channels::CBlock16 => (c / 16) * (npix * 16 * e) + k * 16 * e + p * 16 + c % 16,
            _ => {
                let sc = self.stored(te[3]);
                k * sc * e + p * sc + c
            }
        };
        outer * per_outer + offsets[&ti] + in_tile
    }

    /// The library's `MlaTiled` of this head.
    pub fn layout(&self) -> MlaTiled {
        let axes = self.axes.map(|a| a.map(|a| a as u8));
        let tile = self.tile.map(|t| t as u32);
        let align = if self.align == 16 {
            TileAlign::Bytes16
        } else {
            TileAlign::Bytes1
        };
        MlaTiled::new(axes, tile, self.enc).with_tile_align(align)
    }

    /// Span in bytes of the dense output with elements of `elem` bytes.
    pub fn out_span(&self, elem: usize) -> usize {
        elem + self
            .shape
            .iter()
            .zip(&self.out_strides)
            .map(|(&e, &s)| (e - 1) * s)
            .sum::<usize>()
    }

    /// Calls `f` with every logical index in row-major order.
    pub fn for_each(&self, mut f: impl FnMut(&[usize])) {
        let mut index = vec![0; self.shape.len()];
        if self.shape.contains(&0) {
            return;
        }
        loop {
            f(&index);
            let mut a = self.shape.len();
            loop {
                if a == 0 {
                    return;
                }
                a -= 1;
                index[a] += 1;
                if index[a] < self.shape[a] {
                    break;
                }
                index[a] = 0;
            }
        }
    }
}

/// Byte strides for `shape` in a random physical order, each axis with a gap of 0–2
/// elements, for elements of `elem` bytes.
pub fn random_strides(rng: &mut Rng, shape: &[usize], elem: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..shape.len()).collect();
    rng.shuffle(&mut order);
    let mut strides = vec![0; shape.len()];
    let mut s = elem;
    // `order` is fastest first.
    for &a in &order {
        strides[a] = s;
        s *= shape[a] + rng.below(3) as usize;
    }
    strides
}

/// A random head of `frames` frames: 1 to 3 more axes in random roles, a random
/// encoding, tiles (C tiles obeying the c16 rule), alignment and output strides.
pub fn random_head(rng: &mut Rng, frames: usize, dtype: DType) -> Head {
    // Axis 0: frames; then 1 to 3 more logical axes, each a random role (or outer).
    let extra = 1 + rng.below(3) as usize;
    let mut shape = vec![frames];
    let mut roles: Vec<usize> = vec![0, 1, 2, 3];
    rng.shuffle(&mut roles);
    let mut axes = [None; 4];
    for k in 0..extra {
        let r = roles[k];
        let e = if r == 3 {
            1 + rng.below(40) as usize
        } else {
            1 + rng.below(6) as usize
        };
        shape.push(e);
        axes[r] = Some(k + 1);
    }
    // Make sure C is named half the time even with few axes.
    let enc = *rng.pick(&[Channels::Compact, Channels::PadTo16, Channels::CBlock16]);
    let mut tile = [1usize; 4];
    for r in 0..4 {
        if let Some(a) = axes[r] {
            let e = shape[a];
            tile[r] = 1 + rng.below(e as u64) as usize;
            if r == 3 && enc != Channels::Compact && tile[r] != e {
                // The c16 tile-channel rule: C itself or a multiple of 16.
                tile[r] = if e >= 16 && rng.chance(2, 3) {
                    16 * (1 + rng.below(e as u64 / 16) as usize)
                } else {
                    e
                };
            }
        }
    }
    let align = if rng.chance(1, 2) { 16 } else { 1 };
    let out_strides = random_strides(rng, &shape, dtype.size());
    Head {
        shape,
        axes,
        tile,
        enc,
        align,
        dtype,
        out_strides,
    }
}

/// The head's output strides rescaled to elements of `dtype` (same element order and gaps).
pub fn output_spec(h: &Head, dtype: DType) -> Vec<u64> {
    let elem = dtype.size();
    h.out_strides
        .iter()
        .map(|&s| (s / h.dtype.size() * elem) as u64)
        .collect()
}

/// The expected Detess output of head `h` read from `ofm` (the head's bytes): `dirty`
/// everywhere but the elements, `guard` bytes past the span.
pub fn expected(h: &Head, ofm: &[u8], dirty: u8, guard: usize) -> Vec<u8> {
    let (offsets, per_outer) = h.tile_offsets();
    let e = h.e();
    let mut out = vec![dirty; h.out_span(e) + guard];
    h.for_each(|index| {
        let o: usize = index.iter().zip(&h.out_strides).map(|(i, s)| i * s).sum();
        for p in 0..e {
            out[o + p] = ofm[h.byte_of(&offsets, per_outer, index, p)];
        }
    });
    out
}
