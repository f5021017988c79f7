//! Hand-written goldens from SPEC §5 through every A65 kernel level, on dirty output
//! buffers with guard bytes: the [W=2, C=3] example, PadTo16 with 1 and with 17 channels,
//! a partial boundary tile on every axis, outer axes, and QuantTess padding with a nonzero
//! zero point.

use crate::tess_common;
use simak::ops::casttess::TiledTensorSpec;

use simak::a65;
use simak::layout::{Channels, MlaTiled};
use simak::ops::quant::Params;
use simak::ops::{casttess, quanttess};
use simak::{DType, TensorSpec};
use simak_tests::bytes::{Aligned, encode};
use tess_common::{check_dirty, levels};

/// Runs a CastTess request through every level and compares with `golden`.
fn cast<const R: usize>(input: TensorSpec<R>, layout: MlaTiled, bits: &[u32], golden: &[u8]) {
    let plan = casttess::check_inference(&casttess::Request {
        input,
        output: TiledTensorSpec::new(*input.extents(), DType::BF16, layout),
    })
    .unwrap();
    assert_eq!(plan.output().capacity() as usize, golden.len());
    let data = Aligned::from_slice(&encode(input.dtype(), bits));
    let prepared = levels(&plan);
    assert!(!prepared.is_empty());
    for p in prepared {
        check_dirty(p.implementation(), golden, |out| {
            a65::casttess::execute(&p, data.as_slice(), out).unwrap()
        });
    }
}

#[test]
fn spec_example_w2_c3() {
    // Pixel p: [c0.lo c1.lo c2.lo c0.hi c1.hi c2.hi]; 12 bytes, then 4 zero bytes.
    // 1.0 → 0x3f80, 2.0 → 0x4000, 3.0 → 0x4040, and negatives with the sign bit.
    let bits: Vec<u32> = [1.0f32, 2.0, 3.0, -1.0, -2.0, -3.0]
        .iter()
        .map(|x| x.to_bits())
        .collect();
    cast(
        TensorSpec::contiguous([2, 3], DType::F32),
        MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 3],
            Channels::Compact,
        ),
        &bits,
        &[
            0x80, 0x00, 0x40, 0x3f, 0x40, 0x40, // pixel 0
            0x80, 0x00, 0x40, 0xbf, 0xc0, 0xc0, // pixel 1
            0, 0, 0, 0, // tile padding
        ],
    );
}

/// A PadTo16 pixel of one channel: the low byte, 15 zeros, the high byte, 15 zeros.
fn pad_one(bits: u16) -> Vec<u8> {
    let mut p = vec![0u8; 32];
    p[0] = bits as u8;
    p[16] = (bits >> 8) as u8;
    p
}

#[test]
fn pad16_one_channel() {
    // [W=3, C=1], tile W 2: tiles of 2 and 1 pixels, 32 bytes per pixel.
    let golden = [pad_one(0x1234), pad_one(0x5678), pad_one(0x9abc)].concat();
    cast(
        TensorSpec::contiguous([3, 1], DType::BF16),
        MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 1],
            Channels::PadTo16,
        ),
        &[0x1234, 0x5678, 0x9abc],
        &golden,
    );
    // The same with C absent (one channel per pixel, tile 1).
    cast(
        TensorSpec::contiguous([3], DType::BF16),
        MlaTiled::new([None, None, Some(0), None], [1, 1, 2, 1], Channels::PadTo16),
        &[0x1234, 0x5678, 0x9abc],
        &golden,
    );
}

#[test]
fn pad16_seventeen_channels() {
    // FP16 integers 0..=16 → BF16 0x0000, 0x3f80, 0x4000, 0x4040, ..., 0x4180.
    let bits: Vec<u32> = (0..17u32)
        .map(|c| half::f16::from_f32(c as f32).to_bits() as u32)
        .collect();
    let lo = [
        0x00, 0x80, 0x00, 0x40, 0x80, 0xa0, 0xc0, 0xe0, 0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60,
        0x70, 0x80,
    ];
    let hi = [
        0x00, 0x3f, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
        0x41, 0x41,
    ];
    // One tile of 17 channels: stored 32, lo plane then hi plane, 64 bytes.
    let mut golden = Vec::new();
    golden.extend(lo);
    golden.extend([0; 15]);
    golden.extend(hi);
    golden.extend([0; 15]);
    cast(
        TensorSpec::contiguous([17], DType::F16),
        MlaTiled::new(
            [None, None, None, Some(0)],
            [1, 1, 1, 17],
            Channels::PadTo16,
        ),
        &bits,
        &golden,
    );
    // Channel tiles of 16 and 1: 32 bytes each.
    let mut golden = Vec::new();
    golden.extend(&lo[..16]);
    golden.extend(&hi[..16]);
    golden.extend([lo[16]]);
    golden.extend([0; 15]);
    golden.extend([hi[16]]);
    golden.extend([0; 15]);
    cast(
        TensorSpec::contiguous([17], DType::F16),
        MlaTiled::new(
            [None, None, None, Some(0)],
            [1, 1, 1, 16],
            Channels::PadTo16,
        ),
        &bits,
        &golden,
    );
}

#[test]
fn partial_boundary_tile_on_every_axis() {
    // Shape [D=3, H=3, W=3, C=3], tile 2 on every axis, Compact. Element
    // ((d·3 + h)·3 + w)·3 + c holds BF16 bits 0xc100 | index, so its low byte is its index
    // and its high byte H = 0xc1. Tiles: C slowest, then D, H, W.
    const H: u8 = 0xc1;
    #[rustfmt::skip]
    let golden: Vec<u8> = vec![
        // c 0..2, d 0..2, h 0..2, w 0..2: 32 data + 0 padding bytes
        0, 1, H, H, 3, 4, H, H, 9, 10, H, H, 12, 13, H, H, 27, 28, H, H, 30, 31, H, H, 36, 37, H, H, 39, 40, H, H,
        // c 0..2, d 0..2, h 0..2, w 2..3: 16 data + 0 padding bytes
        6, 7, H, H, 15, 16, H, H, 33, 34, H, H, 42, 43, H, H,
        // c 0..2, d 0..2, h 2..3, w 0..2: 16 data + 0 padding bytes
        18, 19, H, H, 21, 22, H, H, 45, 46, H, H, 48, 49, H, H,
        // c 0..2, d 0..2, h 2..3, w 2..3: 8 data + 8 padding bytes
        24, 25, H, H, 51, 52, H, H, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 0..2, d 2..3, h 0..2, w 0..2: 16 data + 0 padding bytes
        54, 55, H, H, 57, 58, H, H, 63, 64, H, H, 66, 67, H, H,
        // c 0..2, d 2..3, h 0..2, w 2..3: 8 data + 8 padding bytes
        60, 61, H, H, 69, 70, H, H, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 0..2, d 2..3, h 2..3, w 0..2: 8 data + 8 padding bytes
        72, 73, H, H, 75, 76, H, H, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 0..2, d 2..3, h 2..3, w 2..3: 4 data + 12 padding bytes
        78, 79, H, H, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 2..3, d 0..2, h 0..2, w 0..2: 16 data + 0 padding bytes
        2, H, 5, H, 11, H, 14, H, 29, H, 32, H, 38, H, 41, H,
        // c 2..3, d 0..2, h 0..2, w 2..3: 8 data + 8 padding bytes
        8, H, 17, H, 35, H, 44, H, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 2..3, d 0..2, h 2..3, w 0..2: 8 data + 8 padding bytes
        20, H, 23, H, 47, H, 50, H, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 2..3, d 0..2, h 2..3, w 2..3: 4 data + 12 padding bytes
        26, H, 53, H, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 2..3, d 2..3, h 0..2, w 0..2: 8 data + 8 padding bytes
        56, H, 59, H, 65, H, 68, H, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 2..3, d 2..3, h 0..2, w 2..3: 4 data + 12 padding bytes
        62, H, 71, H, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 2..3, d 2..3, h 2..3, w 0..2: 4 data + 12 padding bytes
        74, H, 77, H, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        // c 2..3, d 2..3, h 2..3, w 2..3: 2 data + 14 padding bytes
        80, H, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,

    ];
    assert_eq!(golden.len(), 272);
    let bits: Vec<u32> = (0..81u32).map(|i| 0xc100 | i).collect();
    cast(
        TensorSpec::contiguous([3, 3, 3, 3], DType::BF16),
        MlaTiled::new(
            [Some(0), Some(1), Some(2), Some(3)],
            [2, 2, 2, 2],
            Channels::Compact,
        ),
        &bits,
        &golden,
    );
}

#[test]
fn outer_axes() {
    // Shape [W=2, N=2, C=2]: W = axis 0, C = axis 2, N (axis 1) is outer and slowest.
    // Element (w·2 + n)·2 + c holds 0x4000 | index.
    let bits: Vec<u32> = (0..8u32).map(|i| 0x4000 | i).collect();
    let golden = [
        0, 1, 0x40, 0x40, 4, 5, 0x40, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, // n = 0
        2, 3, 0x40, 0x40, 6, 7, 0x40, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, // n = 1
    ];
    cast(
        TensorSpec::contiguous([2, 2, 2], DType::BF16),
        MlaTiled::new(
            [None, None, Some(0), Some(2)],
            [1, 1, 2, 2],
            Channels::Compact,
        ),
        &bits,
        &golden,
    );
    // Two outer axes around a named one: shape [N=2, C=1, M=2] with only C named; outer
    // order N, M (ascending logical axis): one 2-byte pixel per outer index, padded to 16.
    let bits: Vec<u32> = (0..4u32).map(|i| 0x3f00 | i).collect();
    let mut golden = Vec::new();
    for i in 0..4u8 {
        golden.extend([i, 0x3f]);
        golden.extend([0; 14]);
    }
    cast(
        TensorSpec::contiguous([2, 1, 2], DType::BF16),
        MlaTiled::new([None, None, None, Some(1)], [1, 1, 1, 1], Channels::Compact),
        &bits,
        &golden,
    );
}

#[test]
fn quanttess_padding_is_zero_whatever_the_zero_point() {
    let bits: Vec<u32> = [1.0f32, 2.0, 3.0, -1.0, -2.0, -3.0]
        .iter()
        .map(|x| x.to_bits())
        .collect();
    let data = Aligned::from_slice(&encode(DType::F32, &bits));
    let q = [6u8, 7, 8, 4, 3, 2]; // x + 5
    let compact = [q.as_slice(), &[0; 10]].concat();
    let pad16 = [&q[..3], &[0; 13], &q[3..], &[0; 13]].concat();
    for (channels, golden) in [(Channels::Compact, compact), (Channels::PadTo16, pad16)] {
        let plan = quanttess::check_inference(&quanttess::Request {
            input: TensorSpec::contiguous([2, 3], DType::F32),
            output: TiledTensorSpec::new(
                [2, 3],
                DType::I8,
                MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], channels),
            ),
            params: Params::new(1.0).with_zero_point(5),
        })
        .unwrap();
        assert_eq!(plan.output().capacity() as usize, golden.len());
        let p = a65::quanttess::prepare(&plan);
        check_dirty(p.implementation(), &golden, |out| {
            a65::quanttess::execute(&p, data.as_slice(), out).unwrap()
        });
    }
}

#[test]
fn buffers_are_checked_before_any_write() {
    use simak::a65::ExecuteError;
    let plan = casttess::check_inference(&casttess::Request {
        input: TensorSpec::contiguous([2, 3], DType::F32),
        output: TiledTensorSpec::new(
            [2, 3],
            DType::BF16,
            MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 2, 3],
                Channels::Compact,
            ),
        ),
    })
    .unwrap();
    let input = Aligned::new(25, 0);
    for p in levels(&plan) {
        let mut out = Aligned::new(40, 0xa5);
        let o = out.as_mut_slice();
        assert!(matches!(
            a65::casttess::execute(&p, input.as_slice(), &mut o[..15]),
            Err(ExecuteError::Capacity {
                required: 16,
                found: 15,
                ..
            })
        ));
        assert!(matches!(
            a65::casttess::execute(&p, input.as_slice(), &mut o[8..24]),
            Err(ExecuteError::Misaligned { align: 16, .. })
        ));
        assert!(matches!(
            a65::casttess::execute(&p, &input.as_slice()[..23], &mut o[..16]),
            Err(ExecuteError::Capacity {
                required: 24,
                found: 23,
                ..
            })
        ));
        assert!(matches!(
            a65::casttess::execute(&p, &input.as_slice()[1..], &mut o[..16]),
            Err(ExecuteError::Misaligned { align: 4, .. })
        ));
        assert!(o.iter().all(|&b| b == 0xa5), "written before an error");
    }
}
