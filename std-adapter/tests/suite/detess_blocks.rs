//! The output-side walker's whole-block paths (issue 25 scope 6): heads whose channel
//! tiles each store 16 channels (CBlock16 and PadTo16 tiles of 16 channels, a partial last
//! tile), written NHWC so that the channel tiles of a pixel are taken together, against an
//! oracle written here from SPEC §12.1's byte formula, at every level this CPU has and with
//! 1–3 threads; FP32 values against SPEC §12.2 computed in binary64 (one division of exact
//! operands rounded to binary64, then to binary32: innocuous double rounding for a quotient,
//! 53 ≥ 2·24 + 2). Also a head whose channel range a threaded part does not cover whole
//! (an NCHW-ordered output splits C) and a Compact head with channel tiles of 8 (not the
//! path).

use simak::a65::{self, Level};
use simak::layout::{Channels, MlaTiled};
use simak::ops::dequant::Params;
use simak::ops::{detess, detesscast, detessdequant};
use simak::{DType, TensorSpec};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;

/// A head [H, W, C], tiles (1, th, tw, tc), as SPEC §12.1 lays it out (roles H, W, C).
struct Head {
    hwc: [usize; 3],
    tile: [usize; 3],
    enc: Channels,
    e: usize,
}

impl Head {
    /// The byte of plane `p` of element (h, w, c), and the OFM size.
    fn layout(&self) -> (Vec<[usize; 3]>, usize) {
        let [hh, ww, cc] = self.hwc;
        let [th, tw, tc] = self.tile;
        let n = |x: usize, t: usize| x.div_ceil(t);
        // Tile byte offsets in storage order: C tiles, then H, then W.
        let mut offsets = Vec::new();
        let mut at = 0;
        for ic in 0..n(cc, tc) {
            for ih in 0..n(hh, th) {
                for iw in 0..n(ww, tw) {
                    let (eh, ew, ec) = (
                        th.min(hh - ih * th),
                        tw.min(ww - iw * tw),
                        tc.min(cc - ic * tc),
                    );
                    let sc = if self.enc == Channels::Compact {
                        ec
                    } else {
                        ec.next_multiple_of(16)
                    };
                    offsets.push([ic, ih, iw, at, eh, ew, sc]);
                    at += (eh * ew * sc * self.e).next_multiple_of(16);
                }
            }
        }
        let mut bytes = Vec::new();
        for h in 0..hh {
            for w in 0..ww {
                for c in 0..cc {
                    let t = offsets
                        .iter()
                        .find(|t| t[0] == c / tc && t[1] == h / th && t[2] == w / tw)
                        .unwrap();
                    let (base, ew, sc) = (t[3], t[5], t[6]);
                    let npix = t[4] * ew;
                    let k = (h % th) * ew + w % tw;
                    let cl = c % tc;
                    let at = |p: usize| match self.enc {
                        Channels::CBlock16 => {
                            base + (cl / 16) * npix * 16 * self.e
                                + k * 16 * self.e
                                + p * 16
                                + cl % 16
                        }
                        _ => base + k * sc * self.e + p * sc + cl,
                    };
                    bytes.push([at(0), at(1.min(self.e - 1)), 0]);
                }
            }
        }
        (bytes, at)
    }

    fn layout_spec(&self) -> MlaTiled {
        let [th, tw, tc] = self.tile.map(|t| t as u32);
        MlaTiled::new([None, Some(0), Some(1), Some(2)], [1, th, tw, tc], self.enc)
    }
}

/// One prepared level: runs the op on `threads` threads, `true` on success.
type Run = Box<dyn Fn(usize, &[u8], &mut [u8]) -> bool>;

fn f32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// Output byte strides of an [H, W, C] tensor of `size`-byte elements: NHWC or CHW.
fn strides(hwc: [usize; 3], size: usize, chw: bool) -> [u64; 3] {
    let [h, w, c] = hwc.map(|x| x as u64);
    let s = size as u64;
    if chw {
        [w * s, s, h * w * s]
    } else {
        [w * c * s, c * s, s]
    }
}

#[test]
fn whole_block_heads_match_the_byte_formula() {
    let mut rng = Rng::new(0x2512_0b16);
    let heads = [
        Head {
            hwc: [5, 7, 40],
            tile: [3, 4, 16],
            enc: Channels::CBlock16,
            e: 1,
        },
        Head {
            hwc: [4, 6, 48],
            tile: [4, 6, 16],
            enc: Channels::CBlock16,
            e: 1,
        },
        Head {
            hwc: [3, 5, 37],
            tile: [2, 5, 16],
            enc: Channels::PadTo16,
            e: 1,
        },
        Head {
            hwc: [6, 3, 24],
            tile: [6, 2, 8],
            enc: Channels::Compact,
            e: 1,
        },
        Head {
            hwc: [5, 7, 40],
            tile: [3, 4, 16],
            enc: Channels::CBlock16,
            e: 2,
        },
        Head {
            hwc: [3, 5, 37],
            tile: [2, 5, 16],
            enc: Channels::PadTo16,
            e: 2,
        },
    ];
    let mut checked = 0;
    for head in &heads {
        let (at, len) = head.layout();
        let mut ofm = Aligned::new(len, 0);
        for b in ofm.as_mut_slice() {
            *b = rng.next_u32() as u8;
        }
        let ofm = ofm.as_slice();
        let n = at.len();
        let shape = head.hwc.map(|x| x as u64);
        for chw in [false, true] {
            let out_strides = strides(head.hwc, 4, chw);
            let order = |i: usize| -> usize {
                let (h, w, c) = (
                    i / (head.hwc[1] * head.hwc[2]),
                    i / head.hwc[2] % head.hwc[1],
                    i % head.hwc[2],
                );
                ((h as u64 * out_strides[0]
                    + w as u64 * out_strides[1]
                    + c as u64 * out_strides[2])
                    / 4) as usize
            };
            let output = TensorSpec::strided(shape, out_strides, DType::F32);
            let mut want = vec![0u32; n];
            let prepared: Vec<(String, Run)> = if head.e == 1 {
                let (m, zp) = (21.5f32, -7i32);
                for (i, a) in at.iter().enumerate() {
                    let q = f64::from(ofm[a[0]] as i8) - f64::from(zp);
                    want[order(i)] = ((q / f64::from(m)) as f32).to_bits();
                }
                let plan = detessdequant::check_inference(&detessdequant::Request {
                    dtype: DType::I8,
                    layout: head.layout_spec(),
                    output,
                    params: Params::new(m).with_zero_point(zp),
                })
                .expect("admits");
                Level::detected()
                    .into_iter()
                    .filter_map(|l| a65::detessdequant::prepare_at(&plan, l).ok())
                    .map(|p| {
                        let name = p.implementation().to_owned();
                        let f: Run =
                            Box::new(move |t, i, o| a65::execute_threaded(&p, t, i, o).is_ok());
                        (name, f)
                    })
                    .collect()
            } else {
                for (i, a) in at.iter().enumerate() {
                    want[order(i)] = (u32::from(ofm[a[0]]) | u32::from(ofm[a[1]]) << 8) << 16;
                }
                let plan = detesscast::check_inference(&detess::Request {
                    dtype: DType::BF16,
                    layout: head.layout_spec(),
                    output,
                })
                .expect("admits");
                Level::detected()
                    .into_iter()
                    .filter_map(|l| a65::detesscast::prepare_at(&plan, l).ok())
                    .map(|p| {
                        let name = p.implementation().to_owned();
                        let f: Run =
                            Box::new(move |t, i, o| a65::execute_threaded(&p, t, i, o).is_ok());
                        (name, f)
                    })
                    .collect()
            };
            assert!(!prepared.is_empty());
            for (name, run) in &prepared {
                for threads in 1..=3 {
                    let mut got = vec![0xa5u8; 4 * n];
                    assert!(run(threads, ofm, &mut got), "{name}");
                    let got = f32s(&got);
                    assert!(
                        got == want,
                        "{:?} {:?} e {} chw {chw} {name} threads {threads}: first difference at {:?}",
                        head.hwc,
                        head.enc,
                        head.e,
                        got.iter().zip(&want).position(|(g, w)| g != w)
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= heads.len() * 2 * 3);
}
