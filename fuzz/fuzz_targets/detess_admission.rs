//! Fuzz target: admission of the MLA output layouts (SPEC §12.1) and of the heads of an
//! OFM buffer, checked against brute force written here.
//!
//! From fuzzed layouts — rank 1 to 6, extents, roles, tiles, encoding (Compact, PadTo16,
//! CBlock16), tile alignment (16 or 1), dtype (I8, I16, BF16, I32, and the refused F32) —
//! and fuzzed head lists (up to 34 heads, spans and optional offsets, a buffer length).
//! Properties:
//!
//! - nothing panics;
//! - an admitted Detess plan's input capacity equals the sum over the tile grid of
//!   `td'·th'·tw'·sc·E` rounded up to the alignment, computed here; PadTo16 and CBlock16
//!   inputs obey the c16 tile-channel rule; with at most 4096 elements, every element's
//!   byte in every plane (the §12.1 formula, computed here) lies below the capacity, all
//!   distinct, and `TiledView::offset_of` agrees; Detess then runs on a buffer of exactly
//!   the capacity and refuses one byte less;
//! - `place_heads` succeeds exactly when brute force says the heads fit and do not
//!   overlap, and gives the explicit offsets or the running sums.
//!
//! Input layout (little-endian; reads past the end give zeros):
//!
//! | bytes | meaning |
//! | --- | --- |
//! | 1 | rank `% 6 + 1` |
//! | 1 | dtype `% 5`: I8, I16, BF16, I32, F32; bits 3–4 encoding `% 3`; bit 5 alignment 1 |
//! | rank | extents (`b % 24`) |
//! | 4 | roles D, H, W, C (`b ≥ 0x80` absent, else axis `b % 8`) |
//! | 4 | tiles (`b % 40`) |
//! | 1 | heads `% 35` |
//! | 8 | buffer length |
//! | heads × 5 | span (u16), offset flag (u8, bit 0: explicit), offset (u16) |
#![no_main]

#[allow(dead_code)]
mod common;

use common::Input;
use libfuzzer_sys::fuzz_target;
use simak::layout::{Channels, MlaTiled, TileAlign};
use simak::ops::casttess::TiledSpec;
use simak::ops::detess::{self, HeadSpec, place_heads};
use simak::{DType, DynSpec};

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    layout(&mut input);
    heads(&mut input);
});

fn layout(input: &mut Input<'_>) {
    let rank = usize::from(input.u8() % 6) + 1;
    let flags = input.u8();
    let dtype =
        [DType::I8, DType::I16, DType::BF16, DType::I32, DType::F32][usize::from(flags % 5)];
    let enc = [Channels::Compact, Channels::PadTo16, Channels::CBlock16]
        [usize::from((flags >> 3) % 3 % 3)];
    let align = if flags & 0x20 != 0 {
        TileAlign::Bytes1
    } else {
        TileAlign::Bytes16
    };
    let extents: Vec<u64> = (0..rank).map(|_| u64::from(input.u8() % 24)).collect();
    let axes: [Option<u8>; 4] = core::array::from_fn(|_| {
        let b = input.u8();
        (b < 0x80).then_some(b % 8)
    });
    let tile: [u32; 4] = core::array::from_fn(|_| u32::from(input.u8() % 40));
    let layout = MlaTiled::new(axes, tile, enc).with_tile_align(align);
    let result = detess::check_inference_dyn(&detess::DynRequest {
        input: TiledSpec {
            extents: &extents,
            dtype,
            layout,
        },
        output: DynSpec::contiguous(&extents, dtype),
    });
    let Ok(plan) = result else {
        return;
    };
    assert_ne!(dtype, DType::F32);
    let e = dtype.size() as u64;
    let role = |r: usize| axes[r].map_or(1, |a| extents[usize::from(a)]);
    if enc != Channels::Compact {
        let (t, c) = (u64::from(tile[3]), role(3));
        assert!(t == c || t % 16 == 0, "c16 rule");
    }
    let empty = extents.contains(&0);
    let a = if align == TileAlign::Bytes16 { 16 } else { 1 };
    let stored = |tc: u64| {
        if enc == Channels::Compact {
            tc
        } else {
            tc.div_ceil(16) * 16
        }
    };
    // Grid sum by brute force (the grid is at most 24^4 tiles).
    let mut per_outer = 0u64;
    let n: Vec<u64> = (0..4)
        .map(|r| role(r).div_ceil(u64::from(tile[r])))
        .collect();
    let actual = |r: usize, i: u64| u64::from(tile[r]).min(role(r) - i * u64::from(tile[r]));
    if !empty {
        for ic in 0..n[3] {
            for id in 0..n[0] {
                for ih in 0..n[1] {
                    for iw in 0..n[2] {
                        let bytes = actual(0, id)
                            * actual(1, ih)
                            * actual(2, iw)
                            * stored(actual(3, ic))
                            * e;
                        per_outer += bytes.div_ceil(a) * a;
                    }
                }
            }
        }
    }
    let outer: u64 = (0..rank)
        .filter(|&x| !axes.contains(&Some(x as u8)))
        .map(|x| extents[x])
        .product();
    let capacity = if empty { 0 } else { per_outer * outer };
    assert_eq!(plan.input().capacity(), capacity);
    let elements: u64 = extents.iter().product();
    if empty || elements > 4096 {
        return;
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut index = [0u64; 6];
    for _ in 0..elements {
        for p in 0..e as usize {
            let o = plan.input().offset_of(&index, p).expect("in range");
            assert!(o < capacity);
            assert!(seen.insert(o), "distinct bytes");
        }
        for x in (0..rank).rev() {
            index[x] += 1;
            if index[x] < extents[x] {
                break;
            }
            index[x] = 0;
        }
    }
    // Detess runs on exactly the capacity and refuses one byte less.
    let prepared = simak::a65::detess::prepare(&plan);
    let storage = vec![7u8; capacity as usize + 16];
    let at = (16 - storage.as_ptr() as usize % 16) % 16;
    let ofm = &storage[at..at + capacity as usize];
    let mut out = vec![0u8; (elements * e) as usize];
    simak::a65::detess::execute(&prepared, ofm, &mut out).expect("fits");
    assert!(out.iter().all(|&b| b == 7));
    let mut out = vec![0u8; (elements * e) as usize];
    assert!(simak::a65::detess::execute(&prepared, &ofm[..ofm.len() - 1], &mut out).is_err());
    assert!(out.iter().all(|&b| b == 0), "nothing written");
}

fn heads(input: &mut Input<'_>) {
    let count = usize::from(input.u8() % 35);
    let buffer = input.u64() % 200_000;
    let specs: Vec<HeadSpec> = (0..count)
        .map(|_| {
            let span = u64::from(input.u16());
            let explicit = input.u8() & 1 == 1;
            let offset = u64::from(input.u16());
            HeadSpec {
                span,
                offset: explicit.then_some(offset),
            }
        })
        .collect();
    let mut offsets = vec![0u64; count];
    let got = place_heads(buffer, &specs, &mut offsets);
    // Brute force.
    let mut placed = Vec::new();
    let mut running = 0u64;
    let mut ok = (1..=32).contains(&count);
    for s in &specs {
        let off = s.offset.unwrap_or(running);
        let end = off + s.span;
        if end > buffer || (off >= buffer && s.span != 0) {
            ok = false;
        }
        placed.push((off, end));
        running = end;
    }
    for i in 0..placed.len() {
        for j in 0..i {
            let (a0, a1) = placed[i];
            let (b0, b1) = placed[j];
            if a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1 {
                ok = false;
            }
        }
    }
    assert_eq!(got.is_ok(), ok, "{specs:?} in {buffer}");
    if ok {
        for (o, p) in offsets.iter().zip(&placed) {
            assert_eq!(*o, p.0);
        }
    }
}
