//! Fuzz target: Preproc frame-geometry and parameter admission (SPEC §13), checked against
//! brute force written here.
//!
//! From a fuzzed frame — format, height and width (small, or any `u64` in wide mode),
//! three planes' offsets and row strides, batch and frame stride, border — and fuzzed
//! normalization (raw binary32 bits for divisor, means and stds, 0 to 3 of each) and pad
//! values, with an FP32 contiguous output. Properties:
//!
//! - nothing panics;
//! - admission succeeds exactly when the rules restated here hold, and a refusal has the
//!   code of the first rule broken in the documented order (divisor finite, divisor > 0,
//!   mean count and finiteness, std count, finiteness and nonzero, pad count, even YUV
//!   size, row strides, plane disjointness, frame stride), or a span overflow (the
//!   output's alone where the frame is small);
//! - an admitted plan's input span is one past the last byte any frame pixel reads
//!   (computed here pixel by pixel when there are at most 4096 pixels); Preproc then runs
//!   on an input of exactly that span and refuses one byte less, writing nothing.
//!
//! Input layout (little-endian; reads past the end give zeros):
//!
//! | bytes | meaning |
//! | --- | --- |
//! | 1 | format `% 7` (RGB8, BGR8, RGBX8, BGRX8, GRAY8, NV12, I420) |
//! | 1 | flags: bit 0 batch, bits 1–2 frames, bit 3 bgr, bit 4 wide |
//! | 2 or 16 | height, width: `u8 % 24` each, or `u64` each when wide |
//! | 3 × (4 or 16) | plane offset, row stride: `u16` each, or `u64` each when wide |
//! | 2 | frame stride |
//! | 4 | border top, bottom, left, right (`% 4`) |
//! | 1 | counts: mean `% 4`, std `(>> 2) % 4`, pad `(>> 4) % 4` |
//! | 28 | divisor, mean × 3, std × 3 (binary32 bits) |
//! | 3 | pad values |
#![no_main]

#[allow(dead_code)]
mod common;

use common::Input;
use libfuzzer_sys::fuzz_target;
use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output, Plane, Request};
use simak::{AdmissionError, Port};

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let format = Format::ALL[usize::from(input.u8() % 7)];
    let flags = input.u8();
    let wide = flags & 0x10 != 0;
    let (height, width) = if wide {
        (input.u64(), input.u64())
    } else {
        (u64::from(input.u8() % 24), u64::from(input.u8() % 24))
    };
    let mut planes = [Plane::default(); 3];
    for p in planes.iter_mut() {
        *p = if wide {
            Plane {
                offset: input.u64(),
                row_stride: input.u64(),
            }
        } else {
            Plane {
                offset: u64::from(input.u16()),
                row_stride: u64::from(input.u16()),
            }
        };
    }
    let frame_stride = u64::from(input.u16());
    let batch = (flags & 1 != 0).then_some(u64::from((flags >> 1) & 3));
    let border = Border {
        top: u64::from(input.u8() % 4),
        bottom: u64::from(input.u8() % 4),
        left: u64::from(input.u8() % 4),
        right: u64::from(input.u8() % 4),
    };
    let counts = input.u8();
    let divisor = f32::from_bits(input.u32());
    let means: [f32; 3] = core::array::from_fn(|_| f32::from_bits(input.u32()));
    let stds: [f32; 3] = core::array::from_fn(|_| f32::from_bits(input.u32()));
    let pads: [u8; 3] = core::array::from_fn(|_| input.u8());
    let mean = &means[..usize::from(counts % 4)];
    let std = &stds[..usize::from((counts >> 2) % 4)];
    let pad = &pads[..usize::from((counts >> 4) % 4)];
    let frame = Frame {
        format,
        height,
        width,
        planes,
        batch,
        frame_stride,
    };
    let got = preproc::check_inference(&Request {
        frame,
        normalize: Normalize { divisor, mean, std },
        bgr: flags & 8 != 0,
        border,
        pad_value: pad,
        output: Output::F32 { strides: None },
    });
    let want = brute_force(&frame, divisor, mean, std, pad);
    let plan = match (got, want) {
        (Ok(plan), Ok(span)) => {
            assert_eq!(plan.input_span(), span.unwrap_or(plan.input_span()));
            plan
        }
        (Err(e), Err(Some(code))) => {
            assert_eq!(e.code(), code, "{e}");
            return;
        }
        // The output's own span (its extents with the border, packed) may overflow where
        // the frame is fine.
        (Err(e), Ok(Some(_))) => {
            assert_eq!(e, AdmissionError::SpanOverflow { port: Port::Output });
            return;
        }
        // Overflow: only span overflows may refuse what the rules restated here admit.
        (Err(e), Ok(None)) | (Err(e), Err(None)) => {
            assert!(matches!(e, AdmissionError::SpanOverflow { .. }), "{e}");
            return;
        }
        (got, want) => panic!("{frame:?}: admission {got:?}, brute force {want:?}"),
    };
    let _ = format!("{plan:?}");
    // Run small plans on exactly the input span, and refuse one byte less.
    if plan.elements() > 4096 * 3 || plan.input_span() > 1 << 20 {
        return;
    }
    let prepared = simak::a65::preproc::prepare(&plan);
    let frame_bytes = vec![0x5au8; plan.input_span() as usize];
    let mut out = vec![0u8; plan.output_span() as usize + 4];
    let at = (4 - out.as_ptr() as usize % 4) % 4;
    let span = plan.output_span() as usize;
    if let Some(short) = frame_bytes
        .len()
        .checked_sub(1)
        .filter(|_| !plan.is_empty())
    {
        let e =
            simak::a65::preproc::execute(&prepared, &frame_bytes[..short], &mut out[at..at + span]);
        assert!(e.is_err());
        assert!(out.iter().all(|&b| b == 0), "nothing written");
    }
    simak::a65::preproc::execute(&prepared, &frame_bytes, &mut out[at..at + span]).expect("fits");
});

/// The rules of SPEC §13 restated: `Ok(Some(span))` admitted with that input span (computed
/// by visiting every read byte, when small), `Ok(None)` admitted (too large to visit),
/// `Err(Some(code))` refused with that code, `Err(None)` refused by an overflow.
fn brute_force(
    frame: &Frame,
    divisor: f32,
    mean: &[f32],
    std: &[f32],
    pad: &[u8],
) -> Result<Option<u64>, Option<u32>> {
    let c = if frame.format == Format::GRAY8 { 1 } else { 3 };
    let count_ok = |n: usize| n == 1 || n == c;
    if !divisor.is_finite() {
        return Err(Some(0x244));
    }
    if divisor.to_bits() & 0x8000_0000 != 0 || divisor.to_bits() == 0 {
        return Err(Some(0x245));
    }
    if !count_ok(mean.len()) {
        return Err(Some(0x247));
    }
    if mean.iter().any(|m| !m.is_finite()) {
        return Err(Some(0x244));
    }
    if !count_ok(std.len()) {
        return Err(Some(0x247));
    }
    for s in std {
        if !s.is_finite() {
            return Err(Some(0x244));
        }
        if s.to_bits() & 0x7fff_ffff == 0 {
            return Err(Some(0x246));
        }
    }
    if !count_ok(pad.len()) {
        return Err(Some(0x247));
    }
    let yuv = matches!(frame.format, Format::NV12 | Format::I420);
    let (h, w) = (frame.height, frame.width);
    if yuv && (h % 2 == 1 || w % 2 == 1) {
        return Err(Some(0x240));
    }
    let bpp: u128 = match frame.format {
        Format::RGB8 | Format::BGR8 => 3,
        Format::RGBX8 | Format::BGRX8 => 4,
        _ => 1,
    };
    let shapes: Vec<(u128, u128)> = match frame.format {
        Format::NV12 => vec![(h.into(), w.into()), ((h / 2).into(), w.into())],
        Format::I420 => vec![
            (h.into(), w.into()),
            ((h / 2).into(), (w / 2).into()),
            ((h / 2).into(), (w / 2).into()),
        ],
        _ => vec![(h.into(), u128::from(w) * bpp)],
    };
    // Wide arithmetic (u128 cannot overflow here); anything past u64 is an overflow.
    let mut ranges: Vec<(u128, u128)> = Vec::new();
    for (p, &(rows, bytes)) in shapes.iter().enumerate() {
        let plane = frame.planes[p];
        let stride = u128::from(plane.row_stride);
        if bytes > u128::from(u64::MAX) {
            return Err(None);
        }
        if rows > 1 && bytes > 0 && stride < bytes {
            return Err(Some(0x241));
        }
        let len = if rows == 0 || bytes == 0 {
            0
        } else {
            (rows - 1) * stride + bytes
        };
        let lo = u128::from(plane.offset);
        if lo + len > u128::from(u64::MAX) {
            return Err(None);
        }
        for &(a, b) in &ranges {
            if len > 0 && a < b && a < lo + len && lo < b {
                return Err(Some(0x242));
            }
        }
        ranges.push((lo, lo + len));
    }
    let span = ranges
        .iter()
        .filter(|(a, b)| a < b)
        .map(|&(_, b)| b)
        .max()
        .unwrap_or(0);
    let frames = u128::from(frame.batch.unwrap_or(1));
    if frames >= 2 && span > 0 && u128::from(frame.frame_stride) < span {
        return Err(Some(0x243));
    }
    let stride = if frames >= 2 {
        u128::from(frame.frame_stride)
    } else {
        0
    };
    let total = if frames == 0 || span == 0 {
        0
    } else {
        (frames - 1) * stride + span
    };
    if total > u128::from(u64::MAX) {
        return Err(None);
    }
    // Visit every read byte of small frames: the span is one past the last of them.
    let pixels = u128::from(h) * u128::from(w) * frames;
    if pixels > 4096 || pixels == 0 {
        return Ok(if pixels == 0 { Some(0) } else { None });
    }
    let mut last = 0u128;
    for n in 0..frames {
        for y in 0..u128::from(h) {
            for x in 0..u128::from(w) {
                let at = |p: usize, row: u128, col: u128| {
                    n * stride
                        + u128::from(frame.planes[p].offset)
                        + row * u128::from(frame.planes[p].row_stride)
                        + col
                };
                let reads: Vec<u128> = match frame.format {
                    Format::NV12 => vec![at(0, y, x), at(1, y / 2, x / 2 * 2 + 1)],
                    Format::I420 => vec![at(0, y, x), at(1, y / 2, x / 2), at(2, y / 2, x / 2)],
                    _ => vec![at(0, y, x * bpp + bpp - 1)],
                };
                last = reads.into_iter().fold(last, u128::max);
            }
        }
    }
    Ok(Some(last as u64 + 1))
}
