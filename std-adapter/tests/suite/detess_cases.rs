//! Detess ops: SiMa's public fixture sizes and byte positions (SPEC §12.1), the round
//! trips `Detess(CastTess(x))` and `Detess(QuantTess(x))` over the input-side layouts,
//! and every rejection rule with its code, nothing written.

use simak::a65;
use simak::layout::{Channels, MlaTiled, TileAlign};
use simak::ops::dequant::Params as DqParams;
use simak::ops::detess::{self, HeadSpec, Request, place_heads};
use simak::ops::quant::Params;
use simak::ops::{casttess, detesscast, detessdequant, quant, quanttess};
use simak::{DType, TensorSpec};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;
use simak_tests::tiled::oracle_f32;

fn hwc(tile: [u32; 4], ch: Channels, align: TileAlign) -> MlaTiled {
    MlaTiled::new([None, Some(0), Some(1), Some(2)], tile, ch).with_tile_align(align)
}

/// Runs Detess of `layout` over `ofm` into a contiguous `[H, W, C]` output.
fn detess3(shape: [u64; 3], dtype: DType, layout: MlaTiled, ofm: &[u8]) -> Vec<u8> {
    let plan = detess::check_inference(&Request {
        dtype,
        layout,
        output: TensorSpec::contiguous(shape, dtype),
    })
    .expect("admits");
    let mut out = vec![0u8; plan.output().span() as usize];
    a65::detess::execute(&a65::detess::prepare(&plan), ofm, &mut out).expect("runs");
    out
}

fn random_ofm(rng: &mut Rng, len: usize) -> Aligned {
    let mut a = Aligned::new(len, 0);
    for b in a.as_mut_slice() {
        *b = rng.next_u32() as u8;
    }
    a
}

#[test]
fn sima_fixture_sizes_and_bytes() {
    let mut rng = Rng::new(0x2512_0002);
    // BF16 [2, 3, 33] in one tile: Compact alignment 1 → 396 bytes; PadTo16 → 576.
    for (ch, align, size, sc) in [
        (Channels::Compact, TileAlign::Bytes1, 396usize, 33usize),
        (Channels::PadTo16, TileAlign::Bytes16, 576, 48),
    ] {
        let layout = hwc([1, 2, 3, 33], ch, align);
        let ofm = random_ofm(&mut rng, size);
        let out = detess3([2, 3, 33], DType::BF16, layout, ofm.as_slice());
        let b = ofm.as_slice();
        for k in 0..6 {
            for c in 0..33 {
                // Pixel k: sc low bytes, then sc high bytes.
                let want = [b[k * sc * 2 + c], b[k * sc * 2 + sc + c]];
                assert_eq!(&out[(k * 33 + c) * 2..][..2], &want, "{ch} pixel {k} c {c}");
            }
        }
    }
    // INT8 19×19×273 CBlock16 in one tile → 103,968 bytes: 18 blocks of 361 pixels × 16.
    let ofm = random_ofm(&mut rng, 103_968);
    let out = detess3(
        [19, 19, 273],
        DType::I8,
        hwc([1, 19, 19, 273], Channels::CBlock16, TileAlign::Bytes16),
        ofm.as_slice(),
    );
    for k in 0..361 {
        for c in 0..273 {
            assert_eq!(
                out[k * 273 + c],
                ofm.as_slice()[(c / 16) * 361 * 16 + k * 16 + c % 16]
            );
        }
    }
    // INT8 [16, 16, 16] Compact → 4,096 bytes (the identity order for one tile).
    let ofm = random_ofm(&mut rng, 4096);
    let out = detess3(
        [16, 16, 16],
        DType::I8,
        hwc([1, 16, 16, 16], Channels::Compact, TileAlign::Bytes1),
        ofm.as_slice(),
    );
    assert_eq!(out, ofm.as_slice());
    // INT8 60×80×65 PadTo16 → 384,000 bytes: 80 stored channels per pixel.
    let ofm = random_ofm(&mut rng, 384_000);
    let out = detess3(
        [60, 80, 65],
        DType::I8,
        hwc([1, 60, 80, 65], Channels::PadTo16, TileAlign::Bytes16),
        ofm.as_slice(),
    );
    for k in 0..4800 {
        assert_eq!(&out[k * 65..][..65], &ofm.as_slice()[k * 80..][..65]);
    }
}

#[test]
fn bf16_single_channel_c16_pixel() {
    // A BF16 C = 1 c16 pixel reads (b[16] << 8) | b[0], in PadTo16 and CBlock16 alike.
    let mut rng = Rng::new(0x2512_0003);
    for ch in [Channels::PadTo16, Channels::CBlock16] {
        let ofm = random_ofm(&mut rng, 6 * 32);
        let layout = hwc([1, 2, 3, 1], ch, TileAlign::Bytes16);
        let plan = detesscast::check_inference(&Request {
            dtype: DType::BF16,
            layout,
            output: TensorSpec::contiguous([2, 3, 1], DType::F32),
        })
        .expect("admits");
        assert_eq!(plan.input().capacity(), 192);
        let mut out = [0u8; 24];
        a65::detesscast::execute(&a65::detesscast::prepare(&plan), ofm.as_slice(), &mut out)
            .expect("runs");
        let b = ofm.as_slice();
        for k in 0..6 {
            let bf16 = u32::from(b[k * 32 + 16]) << 8 | u32::from(b[k * 32]);
            assert_eq!(
                &out[k * 4..k * 4 + 4],
                &(bf16 << 16).to_le_bytes(),
                "{ch} {k}"
            );
        }
    }
}

/// Random input-side layouts: shape [N, A, B, C'] with random roles and tiles.
fn input_side_layout(rng: &mut Rng) -> (Vec<u64>, MlaTiled) {
    let shape = vec![
        1 + rng.below(3),
        1 + rng.below(5),
        1 + rng.below(7),
        1 + rng.below(37),
    ];
    let mut axes = [None, Some(1u8), Some(2), Some(3)];
    if rng.chance(1, 3) {
        axes = [Some(1), None, Some(2), Some(3)];
    }
    if rng.chance(1, 4) {
        axes[1] = None;
    }
    let mut tile = [1u32; 4];
    for r in 0..4 {
        if let Some(a) = axes[r] {
            tile[r] = 1 + rng.below(shape[a as usize]) as u32;
        }
    }
    let ch = if rng.chance(1, 2) {
        Channels::Compact
    } else {
        Channels::PadTo16
    };
    if ch == Channels::PadTo16 && tile[3] != shape[3] as u32 {
        // The c16 tile-channel rule of the Detess ops' inputs (SPEC §12.1): a PadTo16
        // layout the input side may write with another C tile cannot be read back.
        tile[3] = if shape[3] >= 16 && rng.chance(1, 2) {
            16
        } else {
            shape[3] as u32
        };
    }
    (shape, MlaTiled::new(axes, tile, ch))
}

#[test]
fn round_trips_through_casttess_and_quanttess() {
    let mut rng = Rng::new(0x2512_0004);
    for case in 0..120 {
        let (shape, layout) = input_side_layout(&mut rng);
        let n: u64 = shape.iter().product();
        let x: Vec<u8> = (0..n)
            .flat_map(|_| {
                let bits = simak_tests::tiled::random_bits(&mut rng, DType::F32);
                bits.to_le_bytes()
            })
            .collect();
        // CastTess then Detess gives back the BF16 of every element (SPEC §4).
        let c = casttess::check_inference_dyn(&casttess::DynRequest {
            input: simak::DynSpec::contiguous(&shape, DType::F32),
            output: casttess::TiledSpec {
                extents: &shape,
                dtype: DType::BF16,
                layout,
            },
        })
        .expect("admits");
        let mut tiled = Aligned::new(c.output().capacity() as usize, 0x5a);
        a65::casttess::execute(&a65::casttess::prepare(&c), &x, tiled.as_mut_slice())
            .expect("runs");
        let d = detess::check_inference_dyn(&detess::DynRequest {
            input: casttess::TiledSpec {
                extents: &shape,
                dtype: DType::BF16,
                layout,
            },
            output: simak::DynSpec::contiguous(&shape, DType::BF16),
        })
        .expect("admits");
        let mut back = vec![0u8; n as usize * 2];
        a65::execute_threaded(
            &a65::detess::prepare(&d),
            1 + case % 4,
            tiled.as_slice(),
            &mut back,
        )
        .expect("runs");
        for (k, xb) in x.chunks_exact(4).enumerate() {
            let want = oracle_f32(u32::from_le_bytes(xb.try_into().expect("4")));
            assert_eq!(
                &back[k * 2..k * 2 + 2],
                &want.to_le_bytes(),
                "case {case} element {k}"
            );
        }
        // QuantTess then Detess gives back Quant's INT8 values.
        let params = Params::new(0.37).with_zero_point(rng.range_i64(-128, 127) as i32);
        let qt = quanttess::check_inference_dyn(&quanttess::DynRequest {
            input: simak::DynSpec::contiguous(&shape, DType::F32),
            output: casttess::TiledSpec {
                extents: &shape,
                dtype: DType::I8,
                layout,
            },
            params,
        })
        .expect("admits");
        let mut tiled = Aligned::new(qt.output().capacity() as usize, 0x5a);
        a65::quanttess::execute(&a65::quanttess::prepare(&qt), &x, tiled.as_mut_slice())
            .expect("runs");
        let d = detess::check_inference_dyn(&detess::DynRequest {
            input: casttess::TiledSpec {
                extents: &shape,
                dtype: DType::I8,
                layout,
            },
            output: simak::DynSpec::contiguous(&shape, DType::I8),
        })
        .expect("admits");
        let mut back = vec![0u8; n as usize];
        a65::execute_threaded(
            &a65::detess::prepare(&d),
            1 + case % 3,
            tiled.as_slice(),
            &mut back,
        )
        .expect("runs");
        let q = quant::check_inference_dyn(&quant::DynRequest {
            input: simak::DynSpec::contiguous(&shape, DType::F32),
            output: simak::DynSpec::contiguous(&shape, DType::I8),
            params,
        })
        .expect("admits");
        let mut want = vec![0u8; n as usize];
        a65::quant::execute(&a65::quant::prepare(&q), &x, &mut want).expect("runs");
        assert_eq!(back, want, "case {case}");
    }
}

fn code<T>(r: Result<T, simak::AdmissionError>) -> u32 {
    r.map(|_| 0).unwrap_or_else(|e| e.code())
}

#[test]
fn admission_rules_have_their_codes() {
    let l = hwc([1, 2, 2, 16], Channels::CBlock16, TileAlign::Bytes16);
    // (align_c16, cblock) = (false, true) names no encoding.
    assert_eq!(code(Channels::from_flags(false, true)), 0x222);
    assert_eq!(Channels::from_flags(true, true), Ok(Channels::CBlock16));
    assert_eq!(Channels::from_flags(true, false), Ok(Channels::PadTo16));
    assert_eq!(Channels::from_flags(false, false), Ok(Channels::Compact));
    // The input-side ops refuse CBlock16 and tile alignment 1.
    let cast = |layout| {
        code(casttess::check_inference(&casttess::Request {
            input: TensorSpec::contiguous([2, 2, 16], DType::F32),
            output: casttess::TiledTensorSpec::new([2, 2, 16], DType::BF16, layout),
        }))
    };
    assert_eq!(cast(l), 0x220);
    assert_eq!(
        cast(hwc([1, 2, 2, 16], Channels::Compact, TileAlign::Bytes1)),
        0x221
    );
    assert_eq!(
        cast(hwc([1, 2, 2, 16], Channels::PadTo16, TileAlign::Bytes16)),
        0
    );
    let qt = code(quanttess::check_inference(&quanttess::Request {
        input: TensorSpec::contiguous([2, 2, 16], DType::F32),
        output: quanttess::TiledTensorSpec::new([2, 2, 16], DType::I8, l),
        params: Params::new(1.0),
    }));
    assert_eq!(qt, 0x220);
    // The c16 tile-channel rule (Detess inputs only): C = 40, tile 20 in CBlock16.
    let detess_req = |dtype, tile, ch, out| Request {
        dtype,
        layout: hwc([1, 2, 2, tile], ch, TileAlign::Bytes16),
        output: TensorSpec::contiguous([2, 2, 40], out),
    };
    assert_eq!(
        code(detess::check_inference(&detess_req(
            DType::I8,
            20,
            Channels::CBlock16,
            DType::I8
        ))),
        0x224
    );
    assert_eq!(
        code(detess::check_inference(&detess_req(
            DType::I8,
            20,
            Channels::PadTo16,
            DType::I8
        ))),
        0x224
    );
    assert_eq!(
        code(detess::check_inference(&detess_req(
            DType::I8,
            20,
            Channels::Compact,
            DType::I8
        ))),
        0
    );
    assert_eq!(
        code(detess::check_inference(&detess_req(
            DType::I8,
            32,
            Channels::CBlock16,
            DType::I8
        ))),
        0
    );
    // Dtypes: Detess takes no float but BF16; its output is the input's dtype.
    assert_eq!(
        code(detess::check_inference(&detess_req(
            DType::F32,
            40,
            Channels::Compact,
            DType::F32
        ))),
        5
    );
    assert_eq!(
        code(detess::check_inference(&detess_req(
            DType::I8,
            40,
            Channels::Compact,
            DType::I16
        ))),
        0x201
    );
    assert_eq!(
        code(detesscast::check_inference(&detess_req(
            DType::I8,
            40,
            Channels::Compact,
            DType::F32
        ))),
        5
    );
    assert_eq!(
        code(detesscast::check_inference(&detess_req(
            DType::BF16,
            40,
            Channels::Compact,
            DType::F16
        ))),
        0x201
    );
    // DetessDequant parameters: zero or NaN multiplier, zero point out of range.
    let dd = |dtype, out, m: u32, zp| {
        code(detessdequant::check_inference(&detessdequant::Request {
            dtype,
            layout: hwc([1, 2, 2, 40], Channels::Compact, TileAlign::Bytes1),
            output: TensorSpec::contiguous([2, 2, 40], out),
            params: DqParams::from_bits(m).with_zero_point(zp),
        }))
    };
    let one = 1f32.to_bits();
    assert_eq!(dd(DType::I8, DType::F32, 0, 0), 14);
    assert_eq!(dd(DType::I8, DType::F32, f32::NAN.to_bits(), 0), 13);
    assert_eq!(dd(DType::I8, DType::F32, (-1f32).to_bits(), 0), 14);
    assert_eq!(dd(DType::I8, DType::F32, one, 128), 0x223);
    assert_eq!(dd(DType::I8, DType::F32, one, -129), 0x223);
    assert_eq!(dd(DType::I16, DType::F16, one, 32_768), 0x223);
    assert_eq!(dd(DType::I16, DType::BF16, one, -32_768), 0);
    assert_eq!(dd(DType::I32, DType::F32, one, i32::MAX), 0);
    assert_eq!(dd(DType::BF16, DType::F32, one, 0), 5);
    assert_eq!(dd(DType::I8, DType::I8, one, 0), 0x201);
    // Shape mismatch and rank: through the dynamic request.
    let r = detess::check_inference_dyn(&detess::DynRequest {
        input: casttess::TiledSpec {
            extents: &[2, 2, 40],
            dtype: DType::I8,
            layout: hwc([1, 2, 2, 40], Channels::Compact, TileAlign::Bytes1),
        },
        output: simak::DynSpec::contiguous(&[2, 2, 41], DType::I8),
    });
    assert_eq!(code(r), 0x202);
}

#[test]
fn heads_against_the_buffer() {
    let h = |span, offset| HeadSpec { span, offset };
    let mut off = [0u64; 32];
    // Defaults are running sums.
    place_heads(30, &[h(10, None), h(20, None)], &mut off).expect("fits");
    assert_eq!(&off[..2], &[0, 10]);
    assert_eq!(
        code(place_heads(30, &[h(10, None), h(21, None)], &mut off)),
        0x227
    );
    assert_eq!(code(place_heads(30, &[h(1, Some(30))], &mut off)), 0x226);
    assert_eq!(code(place_heads(30, &[h(1, Some(31))], &mut off)), 0x226);
    assert_eq!(
        code(place_heads(
            30,
            &[h(10, Some(20)), h(5, Some(25))],
            &mut off
        )),
        0x228
    );
    assert_eq!(code(place_heads(30, &[], &mut off)), 0x225);
    assert_eq!(
        code(place_heads(300, &[h(1, None); 33], &mut [0; 33])),
        0x225
    );
    place_heads(300, &[h(1, None); 32], &mut off).expect("32 heads");
    assert_eq!(off[31], 31);
}

#[test]
fn bad_buffers_write_nothing() {
    let layout = hwc([1, 3, 3, 20], Channels::CBlock16, TileAlign::Bytes16);
    let plan = detessdequant::check_inference(&detessdequant::Request {
        dtype: DType::I16,
        layout,
        output: TensorSpec::contiguous([3, 3, 20], DType::F32),
        params: DqParams::new(0.25),
    })
    .expect("admits");
    let prepared = a65::detessdequant::prepare(&plan);
    let cap = plan.input().capacity() as usize;
    assert_eq!(cap, 2 * 9 * 16 * 2);
    let ofm = Aligned::new(cap + 16, 1);
    let mut out = vec![0x77u8; 9 * 20 * 4];
    // One byte short.
    let e = a65::detessdequant::execute(&prepared, &ofm.as_slice()[..cap - 1], &mut out);
    assert_eq!(e.map_err(|e| e.code()), Err(0x401));
    // Output one byte short.
    let e = a65::detessdequant::execute(&prepared, ofm.as_slice(), &mut out[..9 * 20 * 4 - 1]);
    assert_eq!(e.map_err(|e| e.code()), Err(0x402));
    // A head at an offset that is not 16-byte aligned (tile alignment 16).
    let e = a65::detessdequant::execute(&prepared, &ofm.as_slice()[8..], &mut out);
    assert_eq!(e.map_err(|e| e.code()), Err(0x403));
    let e = a65::execute_threaded(&prepared, 3, &ofm.as_slice()[..cap - 1], &mut out);
    assert_eq!(e.map_err(|e| e.code()), Err(0x401));
    assert!(out.iter().all(|&b| b == 0x77), "nothing written");
    a65::detessdequant::execute(&prepared, ofm.as_slice(), &mut out).expect("runs");
    // Every code is 0x0101 = 257: 257 / 0.25.
    assert!(out.chunks_exact(4).all(|b| b == 1028f32.to_le_bytes()));
}
