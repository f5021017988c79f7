//! Detess, DetessCast and DetessDequant against an independent oracle written here from
//! SPEC §12.1's byte formula (it shares no code with the library's walker or with
//! `TiledView::offset_of`): all three encodings × the four dtypes (element sizes 1, 2, 4)
//! × boundary tiles × 1–3 heads in one OFM buffer × 1–3 frames, strided outputs in random
//! axis orders with gaps, at every level this CPU has and with 1–7 threads. Dirty output
//! buffers and guard bytes check that exactly the elements' bytes are written. The fusion
//! identities of SPEC §12 are checked on the same cases: `DetessCast(x)` is `bits << 16` of
//! `Detess(x)` and `DetessDequant(x)` is `Dequant(Detess(x))`, bit for bit.
#![allow(clippy::needless_range_loop)] // the oracle indexes as SPEC §12.1 writes it

use std::collections::HashMap;

use simak::DType;
use simak::a65::{self, Level};
use simak::layout::{Channels, MlaTiled, TileAlign};
use simak::ops::dequant::{self, Params};
use simak::ops::detess::{self, HeadSpec, place_heads};
use simak::ops::{detesscast, detessdequant};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;

const GUARD: usize = 40;
const DIRTY: u8 = 0xa5;

/// One head as the test draws it: logical shape (axis 0 = frames), roles, tiles,
/// encoding, alignment, dtype, output strides.
#[derive(Debug, Clone)]
struct Head {
    shape: Vec<usize>,
    axes: [Option<usize>; 4],
    tile: [usize; 4],
    enc: Channels,
    align: usize,
    dtype: DType,
    out_strides: Vec<usize>,
}

impl Head {
    fn e(&self) -> usize {
        self.dtype.size()
    }

    fn role_extent(&self, r: usize) -> usize {
        self.axes[r].map_or(1, |a| self.shape[a])
    }

    fn stored(&self, tc: usize) -> usize {
        match self.enc {
            Channels::Compact => tc,
            _ => tc.div_ceil(16) * 16,
        }
    }

    fn tile_size(&self, ext: [usize; 4]) -> usize {
        (ext[0] * ext[1] * ext[2] * self.stored(ext[3]) * self.e()).div_ceil(self.align)
            * self.align
    }

    fn actual(&self, r: usize, i: usize) -> usize {
        self.tile[r].min(self.role_extent(r) - i * self.tile[r])
    }

    /// Tile offsets within one outer index by storage order (C, D, H, W tiles), and the
    /// bytes per outer index.
    fn tile_offsets(&self) -> (HashMap<[usize; 4], usize>, usize) {
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

    fn outer_count(&self) -> usize {
        (0..self.shape.len())
            .filter(|a| !self.axes.contains(&Some(*a)))
            .map(|a| self.shape[a])
            .product()
    }

    fn span(&self) -> usize {
        self.tile_offsets().1 * self.outer_count()
    }

    /// SPEC §12.1: the byte of plane `p` of the element at `index`.
    fn byte_of(
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

    fn layout(&self) -> MlaTiled {
        let axes = self.axes.map(|a| a.map(|a| a as u8));
        let tile = self.tile.map(|t| t as u32);
        let align = if self.align == 16 {
            TileAlign::Bytes16
        } else {
            TileAlign::Bytes1
        };
        MlaTiled::new(axes, tile, self.enc).with_tile_align(align)
    }

    fn out_span(&self, elem: usize) -> usize {
        elem + self
            .shape
            .iter()
            .zip(&self.out_strides)
            .map(|(&e, &s)| (e - 1) * s)
            .sum::<usize>()
    }

    fn for_each(&self, mut f: impl FnMut(&[usize])) {
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
fn random_strides(rng: &mut Rng, shape: &[usize], elem: usize) -> Vec<usize> {
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

fn random_head(rng: &mut Rng, frames: usize, dtype: DType) -> Head {
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

fn output_spec(h: &Head, dtype: DType) -> Vec<u64> {
    let elem = dtype.size();
    h.out_strides
        .iter()
        .map(|&s| (s / h.dtype.size() * elem) as u64)
        .collect()
}

/// The expected Detess output of head `h` read from `ofm` (the head's bytes).
fn expected(h: &Head, ofm: &[u8]) -> Vec<u8> {
    let (offsets, per_outer) = h.tile_offsets();
    let e = h.e();
    let mut out = vec![DIRTY; h.out_span(e) + GUARD];
    h.for_each(|index| {
        let o: usize = index.iter().zip(&h.out_strides).map(|(i, s)| i * s).sum();
        for p in 0..e {
            out[o + p] = ofm[h.byte_of(&offsets, per_outer, index, p)];
        }
    });
    out
}

fn levels() -> Vec<Level> {
    Level::detected()
}

#[test]
fn detess_matches_the_byte_formula_oracle() {
    let mut rng = Rng::new(0x2512_0001);
    let dtypes = [DType::I8, DType::I16, DType::BF16, DType::I32];
    // 24 cases still cover every frame count × head count × dtype (simak_tests::sweeps).
    let cases = if cfg!(miri) {
        4
    } else if simak_tests::sweeps::full() {
        240
    } else {
        24
    };
    let mut checked = 0usize;
    for case in 0..cases {
        let frames = 1 + case % 3;
        let n_heads = 1 + (case / 3) % 3;
        let heads: Vec<Head> = (0..n_heads)
            .map(|k| random_head(&mut rng, frames, dtypes[(case + k) % 4]))
            .collect();
        // Heads at running offsets rounded up to 16 bytes (aligned for every head).
        let mut specs = Vec::new();
        let mut at = 0;
        for h in &heads {
            specs.push(HeadSpec {
                span: h.span() as u64,
                offset: Some(at as u64),
            });
            at = (at + h.span()).next_multiple_of(16);
        }
        let mut ofm = Aligned::new(at.max(1), 0);
        for b in ofm.as_mut_slice() {
            *b = rng.next_u32() as u8;
        }
        let mut offsets = [0u64; 3];
        place_heads(ofm.as_slice().len() as u64, &specs, &mut offsets).expect("placed");
        for (k, h) in heads.iter().enumerate() {
            let bytes = &ofm.as_slice()[offsets[k] as usize..];
            let plan = detess::check_inference_dyn(&detess::DynRequest {
                input: simak::ops::casttess::TiledSpec {
                    extents: &h.shape.iter().map(|&e| e as u64).collect::<Vec<_>>(),
                    dtype: h.dtype,
                    layout: h.layout(),
                },
                output: simak::DynSpec::strided(
                    &h.shape.iter().map(|&e| e as u64).collect::<Vec<_>>(),
                    &output_spec(h, h.dtype),
                    h.dtype,
                ),
            })
            .unwrap_or_else(|e| panic!("{h:?}: {e}"));
            assert_eq!(plan.input().capacity() as usize, h.span(), "{h:?}");
            let want = expected(h, bytes);
            for (li, level) in levels().into_iter().enumerate() {
                let Ok(prepared) = a65::detess::prepare_at(&plan, level) else {
                    continue;
                };
                let threads = 1 + (case + li) % 7;
                let mut got = vec![DIRTY; want.len()];
                a65::execute_threaded(&prepared, threads, bytes, &mut got).expect("runs");
                assert!(
                    got == want,
                    "case {case} head {k} {level} threads {threads}: {h:?}"
                );
                checked += 1;
            }
            fusion(&mut rng, h, bytes, &want);
        }
    }
    assert!(checked >= cases);
}

/// The fusion identities on one head: DetessCast = `bits << 16` of Detess (BF16 heads),
/// DetessDequant = Dequant(Detess) (integer heads), with FP32, FP16 and BF16 outputs.
fn fusion(rng: &mut Rng, h: &Head, bytes: &[u8], detessed: &[u8]) {
    let shape: Vec<u64> = h.shape.iter().map(|&e| e as u64).collect();
    let tiled = simak::ops::casttess::TiledSpec {
        extents: &shape,
        dtype: h.dtype,
        layout: h.layout(),
    };
    let e = h.e();
    if h.dtype == DType::BF16 {
        let strides = output_spec(h, DType::F32);
        let plan = detesscast::check_inference_dyn(&detess::DynRequest {
            input: tiled,
            output: simak::DynSpec::strided(&shape, &strides, DType::F32),
        })
        .expect("admits");
        let span = plan.output().span() as usize;
        let mut want = vec![DIRTY; span + GUARD];
        h.for_each(|index| {
            let i: usize = index.iter().zip(&h.out_strides).map(|(i, s)| i * s).sum();
            let o: usize = index
                .iter()
                .zip(&strides)
                .map(|(&i, &s)| i * s as usize)
                .sum();
            let bits = u32::from(u16::from_le_bytes([detessed[i], detessed[i + 1]])) << 16;
            want[o..o + 4].copy_from_slice(&bits.to_le_bytes());
        });
        let mut got = vec![DIRTY; want.len()];
        a65::execute_threaded(&a65::detesscast::prepare(&plan), 3, bytes, &mut got).expect("runs");
        assert!(got == want, "detess_cast {h:?}");
        return;
    }
    let (lo, hi) = h.dtype.int_range().expect("integer");
    let zp = rng.range_i64(lo.max(-100_000), hi.min(100_000)) as i32;
    let m = f32::from_bits(0x3c00_0000 + (rng.next_u32() & 0x03ff_ffff));
    let params = Params::new(m).with_zero_point(zp);
    for out in [DType::F32, DType::F16, DType::BF16] {
        let strides = output_spec(h, out);
        let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
            input: tiled,
            output: simak::DynSpec::strided(&shape, &strides, out),
            params,
        })
        .expect("admits");
        let span = plan.output().span() as usize;
        let mut got = vec![DIRTY; span + GUARD];
        a65::execute_threaded(&a65::detessdequant::prepare(&plan), 2, bytes, &mut got)
            .expect("runs");
        // Dequant over the Detess output's strided view.
        let in_strides: Vec<u64> = h.out_strides.iter().map(|&s| s as u64).collect();
        let dq = dequant::check_inference_dyn(&dequant::DynRequest {
            input: simak::DynSpec::strided(&shape, &in_strides, h.dtype),
            output: simak::DynSpec::strided(&shape, &strides, out),
            params,
        })
        .expect("admits");
        let mut want = vec![DIRTY; span + GUARD];
        a65::dequant::execute(
            &a65::dequant::prepare(&dq),
            &detessed[..h.out_span(e)],
            &mut want,
        )
        .expect("runs");
        assert!(got == want, "detess_dequant {out} {h:?}");
    }
}
