//! An independent oracle of SPEC §13 (Preproc), written from the contract's formulas: the
//! raw 8-bit values of an output pixel (the formats' planes, the border, the channel order,
//! OpenCV's BT.601 integer formula restated in `i64`) and the normalization in native
//! binary32 (each operation rounded once). The FP32 tensor it builds is what the existing
//! ops convert (the equivalence rule).

use simak::ops::preproc::{Border, Format, Frame, Plane};

use crate::rng::Rng;

/// OpenCV's BT.601 integer YUV → RGB (SPEC §13), restated: Y below 16 counts as 16; each
/// channel `(1220542·(Y − 16) + 2^19 + chroma term) >> 20` clamped to [0, 255].
pub fn yuv(y: u8, u: u8, v: u8) -> [u8; 3] {
    let luma = (i64::from(y) - 16).max(0) * 1_220_542;
    let (u, v) = (i64::from(u) - 128, i64::from(v) - 128);
    let sat = |x: i64| x.div_euclid(1 << 20).clamp(0, 255) as u8;
    [
        sat(luma + 524_288 + 1_673_527 * v),
        sat(luma + 524_288 - 852_492 * v - 409_993 * u),
        sat(luma + 524_288 + 2_116_026 * u),
    ]
}

/// One Preproc call's frame and parameters.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The frame geometry.
    pub frame: Frame,
    /// Divisor.
    pub divisor: f32,
    /// Mean, once or per output channel.
    pub mean: Vec<f32>,
    /// Standard deviation, once or per output channel.
    pub std: Vec<f32>,
    /// Output channels in BGR order.
    pub bgr: bool,
    /// Border in pixels.
    pub border: Border,
    /// Raw pad value, once or per output channel.
    pub pad: Vec<u8>,
}

impl Setup {
    /// Output channels: 1 for GRAY8, else 3.
    pub fn channels(&self) -> usize {
        if self.frame.format == Format::GRAY8 {
            1
        } else {
            3
        }
    }

    /// Output extents `[H', W', C]` or `[N, H', W', C]`.
    pub fn extents(&self) -> Vec<u64> {
        let b = &self.border;
        let h = b.top + self.frame.height + b.bottom;
        let w = b.left + self.frame.width + b.right;
        let c = self.channels() as u64;
        match self.frame.batch {
            Some(n) => vec![n, h, w, c],
            None => vec![h, w, c],
        }
    }

    /// The raw 8-bit values of output pixel (n, y, x), in output channel order.
    pub fn raw(&self, input: &[u8], n: u64, y: u64, x: u64) -> Vec<u8> {
        let c = self.channels();
        let b = &self.border;
        let f = &self.frame;
        let inside = y >= b.top && y < b.top + f.height && x >= b.left && x < b.left + f.width;
        if !inside {
            return (0..c)
                .map(|k| self.pad[if self.pad.len() == 1 { 0 } else { k }])
                .collect();
        }
        let (fy, fx) = (y - b.top, x - b.left);
        let base = n * f.frame_stride;
        let byte = |plane: usize, row: u64, col: u64| {
            let p = f.planes[plane];
            input[(base + p.offset + row * p.row_stride + col) as usize]
        };
        let rgb = match f.format {
            Format::GRAY8 => return vec![byte(0, fy, fx)],
            Format::RGB8 => [0, 1, 2].map(|k| byte(0, fy, 3 * fx + k)),
            Format::BGR8 => [2, 1, 0].map(|k| byte(0, fy, 3 * fx + k)),
            Format::RGBX8 => [0, 1, 2].map(|k| byte(0, fy, 4 * fx + k)),
            Format::BGRX8 => [2, 1, 0].map(|k| byte(0, fy, 4 * fx + k)),
            Format::NV12 => yuv(
                byte(0, fy, fx),
                byte(1, fy / 2, fx / 2 * 2),
                byte(1, fy / 2, fx / 2 * 2 + 1),
            ),
            Format::I420 => yuv(
                byte(0, fy, fx),
                byte(1, fy / 2, fx / 2),
                byte(2, fy / 2, fx / 2),
            ),
        };
        if self.bgr {
            vec![rgb[2], rgb[1], rgb[0]]
        } else {
            rgb.to_vec()
        }
    }

    /// SPEC §13's normalization in native binary32 (each operation rounded once).
    pub fn value(&self, c: usize, p: u8) -> f32 {
        let pick = |v: &[f32]| v[if v.len() == 1 { 0 } else { c }];
        (f32::from(p) / self.divisor - pick(&self.mean)) / pick(&self.std)
    }

    /// The FP32 tensor of SPEC §13, contiguous over [`extents`](Setup::extents).
    pub fn tensor(&self, input: &[u8]) -> Vec<f32> {
        let e = self.extents();
        let (n, h, w) = match e.len() {
            4 => (e[0], e[1], e[2]),
            _ => (1, e[0], e[1]),
        };
        let mut out = Vec::new();
        for i in 0..n {
            for y in 0..h {
                for x in 0..w {
                    for (c, &p) in self.raw(input, i, y, x).iter().enumerate() {
                        out.push(self.value(c, p));
                    }
                }
            }
        }
        out
    }
}

/// A random frame of `format` with gaps: odd row strides, planes in random order with
/// gaps between them, a frame stride with slack. Returns the frame and its buffer.
pub fn random_frame(
    rng: &mut Rng,
    format: Format,
    h: u64,
    w: u64,
    batch: Option<u64>,
) -> (Frame, Vec<u8>) {
    let mut frame = Frame::packed(format, h, w);
    let mut order: Vec<usize> = (0..format.planes()).collect();
    rng.shuffle(&mut order);
    let mut at = rng.below(5);
    for p in order {
        let (rows, bytes) = format.plane_shape(p, h, w);
        let stride = bytes + rng.below(4);
        frame.planes[p] = Plane {
            offset: at,
            row_stride: stride,
        };
        at += rows.saturating_sub(1) * stride + bytes + rng.below(3);
    }
    frame.frame_stride = at + rng.below(7);
    frame.batch = batch;
    let frames = batch.unwrap_or(1);
    let len = (frames.max(1) * frame.frame_stride) as usize;
    let bytes = (0..len).map(|_| rng.next_u32() as u8).collect();
    (frame, bytes)
}
