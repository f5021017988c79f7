//! Preproc: 8-bit camera frames (RGB8, BGR8, RGBX8, BGRX8, GRAY8, NV12, I420) → the
//! normalized FP32 tensor of SPEC §13, written as FP32 (strided), INT8 (Quant: strided;
//! QuantTess: `MlaTiled`) or BF16 (CastTess: `MlaTiled`) in one pass.
//!
//! The input is a frame, not a tensor of the output's shape: its planes live in one input
//! buffer, each at a byte offset with its own row stride, and a batch of N frames has a
//! frame stride. The output is the logical tensor `[H', W', C]` (`[N, H', W', C]` for a
//! batch) with `H' = top + H + bottom`, `W' = left + W + right`, `C` = 3 (1 for GRAY8),
//! laid out exactly as the existing op lays out an FP32 tensor of that shape.
//!
//! Equivalence (SPEC §13): the result is byte-identical to building the FP32 tensor `n`
//! (YUV → RGB by [`yuv_to_rgb`], channel order, border, [`normalize`]) and running Quant,
//! QuantTess or CastTess on it. [`Plan::value_bits`] gives the FP32 value of every 8-bit input of a
//! channel, so a table of 256 results per channel is exact.
//!
//! ```
//! use simak_core::ops::preproc::{check_inference, Border, Format, Frame, Normalize, Output, Request};
//!
//! // A 2×4 NV12 frame, mean/std per channel, a one-pixel border left and right, FP32 out.
//! let plan = check_inference(&Request {
//!     frame: Frame::packed(Format::NV12, 2, 4),
//!     normalize: Normalize { divisor: 255.0, mean: &[0.485, 0.456, 0.406], std: &[0.229, 0.224, 0.225] },
//!     bgr: false,
//!     border: Border { top: 0, bottom: 0, left: 1, right: 1 },
//!     pad_value: &[114],
//!     output: Output::F32 { strides: None },
//! })?;
//! assert_eq!(plan.input_span(), 12); // 8 luma bytes + 4 interleaved chroma bytes
//! assert_eq!(plan.output_extents(), &[2, 6, 3][..]);
//! assert_eq!(plan.output_span(), 2 * 6 * 3 * 4);
//! # Ok::<(), simak_core::AdmissionError>(())
//! ```

use core::fmt;

use crate::arith::preproc::{chroma_terms, normalize, yuv_to_rgb, yuv_with_chroma};
use crate::dtype::DType;
use crate::error::{AdmissionError, Port};
use crate::layout::{MlaTiled, TiledView};
use crate::ops::quant::{CheckedParams, Params};
use crate::tensor::{DynSpec, View};

/// A frame's pixel format (SPEC §13).
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Format {
    /// Interleaved R, G, B bytes (3 bytes a pixel).
    RGB8,
    /// Interleaved B, G, R bytes (3 bytes a pixel).
    BGR8,
    /// Interleaved R, G, B, X bytes (4 bytes a pixel; X ignored).
    RGBX8,
    /// Interleaved B, G, R, X bytes (4 bytes a pixel; X ignored).
    BGRX8,
    /// One luma byte a pixel; one output channel.
    GRAY8,
    /// Planar: a Y plane (H rows of W bytes), then an interleaved U, V plane (H/2 rows of
    /// W bytes: W/2 (U, V) pairs). Even H and W.
    NV12,
    /// Planar: Y (H rows of W bytes), U and V (H/2 rows of W/2 bytes each). Even H and W.
    I420,
}

impl Format {
    /// Every format, in declaration order.
    pub const ALL: [Format; 7] = [
        Format::RGB8,
        Format::BGR8,
        Format::RGBX8,
        Format::BGRX8,
        Format::GRAY8,
        Format::NV12,
        Format::I420,
    ];

    /// The name the front-ends spell (`rgb`, `bgr`, `rgbx`, `bgrx`, `gray`, `nv12`,
    /// `i420`).
    pub const fn name(self) -> &'static str {
        match self {
            Format::RGB8 => "rgb",
            Format::BGR8 => "bgr",
            Format::RGBX8 => "rgbx",
            Format::BGRX8 => "bgrx",
            Format::GRAY8 => "gray",
            Format::NV12 => "nv12",
            Format::I420 => "i420",
        }
    }

    /// Number of planes: 1 (interleaved and GRAY8), 2 (NV12), 3 (I420).
    pub const fn planes(self) -> usize {
        match self {
            Format::NV12 => 2,
            Format::I420 => 3,
            _ => 1,
        }
    }

    /// Output channels: 1 for GRAY8, 3 otherwise.
    pub const fn channels(self) -> usize {
        match self {
            Format::GRAY8 => 1,
            _ => 3,
        }
    }

    /// Whether the format is YUV (NV12, I420): even height and width, the BT.601 step.
    pub const fn is_yuv(self) -> bool {
        matches!(self, Format::NV12 | Format::I420)
    }

    /// Bytes a pixel of an interleaved format (1 for GRAY8; 1 for the Y plane of YUV).
    pub const fn pixel_bytes(self) -> u64 {
        match self {
            Format::RGB8 | Format::BGR8 => 3,
            Format::RGBX8 | Format::BGRX8 => 4,
            _ => 1,
        }
    }

    /// Rows and bytes a row of plane `plane` of a `height × width` frame (saturating).
    pub const fn plane_shape(self, plane: usize, height: u64, width: u64) -> (u64, u64) {
        match (self, plane) {
            (_, 0) => (height, width.saturating_mul(self.pixel_bytes())),
            (Format::NV12, 1) => (height / 2, width),
            (Format::I420, 1 | 2) => (height / 2, width / 2),
            _ => (0, 0),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One plane of a frame: byte offset from the frame's start and row stride in bytes (at
/// least the plane's row bytes when it has more than one row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Plane {
    /// Byte offset of the plane's first row from the frame's start.
    pub offset: u64,
    /// Bytes from one row of the plane to the next.
    pub row_stride: u64,
}

/// A frame (or batch of frames) in one input buffer (SPEC §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Frame {
    /// Pixel format.
    pub format: Format,
    /// Height in pixels (even for NV12 and I420).
    pub height: u64,
    /// Width in pixels (even for NV12 and I420).
    pub width: u64,
    /// The planes: Y, then UV (NV12) or U, V (I420); interleaved formats use plane 0
    /// only. Entries past [`Format::planes`] are ignored.
    pub planes: [Plane; 3],
    /// `None`: one frame, output `[H', W', C]`; `Some(n)`: a batch of `n` frames, output
    /// `[n, H', W', C]`.
    pub batch: Option<u64>,
    /// Bytes from one frame of a batch to the next (ignored for fewer than two frames).
    pub frame_stride: u64,
}

impl Frame {
    /// A frame whose planes are packed back to back in plane order with rows of exactly
    /// their bytes (OpenCV's single-array layout for NV12 and I420), no batch; the frame
    /// stride is the frame's bytes. Sizes saturate (admission then reports the overflow).
    pub const fn packed(format: Format, height: u64, width: u64) -> Frame {
        let mut planes = [Plane {
            offset: 0,
            row_stride: 0,
        }; 3];
        let mut at = 0u64;
        let mut p = 0;
        while p < format.planes() {
            let (rows, bytes) = format.plane_shape(p, height, width);
            planes[p] = Plane {
                offset: at,
                row_stride: bytes,
            };
            at = at.saturating_add(rows.saturating_mul(bytes));
            p += 1;
        }
        Frame {
            format,
            height,
            width,
            planes,
            batch: None,
            frame_stride: at,
        }
    }

    /// The same frame as a batch of `n` frames (output `[n, H', W', C]`), keeping the
    /// frame stride.
    pub const fn with_batch(mut self, n: u64) -> Frame {
        self.batch = Some(n);
        self
    }
}

/// Letterbox margins in output pixels (SPEC §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Border {
    /// Rows above the frame.
    pub top: u64,
    /// Rows below the frame.
    pub bottom: u64,
    /// Columns left of the frame.
    pub left: u64,
    /// Columns right of the frame.
    pub right: u64,
}

/// The normalization parameters (SPEC §13): `n = f32(f32(f32(p) / divisor) − mean_c) /
/// std_c`. `mean` and `std` hold one value (every channel) or one per output channel, in
/// output channel order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalize<'a> {
    /// Finite, > 0. Default 255.
    pub divisor: f32,
    /// Finite. Default `[0.0]`.
    pub mean: &'a [f32],
    /// Finite, ≠ 0. Default `[1.0]`.
    pub std: &'a [f32],
}

impl Normalize<'static> {
    /// The defaults: divisor 255, mean 0, std 1 (`n = f32(p / 255)`).
    pub const DEFAULT: Normalize<'static> = Normalize {
        divisor: 255.0,
        mean: &[0.0],
        std: &[1.0],
    };
}

impl Default for Normalize<'static> {
    fn default() -> Self {
        Normalize::DEFAULT
    }
}

/// The output a request asks for (SPEC §13), over the logical tensor `[H', W', C]` or
/// `[N, H', W', C]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output<'a> {
    /// FP32, strided: byte strides per logical axis, `None` for row-major contiguous.
    F32 {
        /// Byte strides (one per axis of the output), or `None`.
        strides: Option<&'a [u64]>,
    },
    /// INT8 by Quant (SPEC §3) on `n`, strided.
    I8 {
        /// Byte strides (one per axis of the output), or `None`.
        strides: Option<&'a [u64]>,
        /// Quant parameters.
        params: Params,
    },
    /// INT8 by QuantTess (SPEC §3, §5) on `n`, `MlaTiled`.
    QuantTess {
        /// The tiled layout over the output's logical axes.
        layout: MlaTiled,
        /// Quant parameters.
        params: Params,
    },
    /// BF16 by CastTess (SPEC §4, §5) on `n`, `MlaTiled`.
    CastTess {
        /// The tiled layout over the output's logical axes.
        layout: MlaTiled,
    },
}

impl Output<'_> {
    /// The MlaTiled layout with the default roles of SPEC §13 — `(None, 0, 1, 2)`, or
    /// `(None, 1, 2, 3)` for a batch — and the given tile and channel encoding.
    pub const fn default_layout(
        batch: bool,
        tile: [u32; 4],
        channels: crate::layout::Channels,
    ) -> MlaTiled {
        let axes = if batch {
            [None, Some(1), Some(2), Some(3)]
        } else {
            [None, Some(0), Some(1), Some(2)]
        };
        MlaTiled::new(axes, tile, channels)
    }
}

/// An unchecked Preproc request (SPEC §13).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request<'a> {
    /// The frame (or batch) in the input buffer.
    pub frame: Frame,
    /// Normalization parameters.
    pub normalize: Normalize<'a>,
    /// `true`: output channels B, G, R; `false`: R, G, B (no effect on GRAY8).
    pub bgr: bool,
    /// Letterbox margins.
    pub border: Border,
    /// The raw 8-bit border value: one, or one per output channel (output channel order,
    /// RGB/gray domain also for YUV input). Normalized as any pixel.
    pub pad_value: &'a [u8],
    /// The output.
    pub output: Output<'a>,
}

/// Which normalization parameter a [`PreprocError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Param {
    /// The divisor.
    Divisor,
    /// A mean.
    Mean,
    /// A standard deviation.
    Std,
    /// The border's pad value.
    PadValue,
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Param::Divisor => "divisor",
            Param::Mean => "mean",
            Param::Std => "std",
            Param::PadValue => "pad value",
        })
    }
}

/// Why Preproc admission rejected a frame or its parameters (SPEC §13); carried by
/// [`AdmissionError::Preproc`]. Codes 0x240..=0x25f (`docs/errors.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PreprocError {
    /// NV12 and I420 need even height and width.
    OddSize {
        /// The format.
        format: Format,
        /// Height in pixels.
        height: u64,
        /// Width in pixels.
        width: u64,
    },
    /// A plane with more than one row has a row stride below its row's bytes.
    RowStride {
        /// Plane index (0 = Y or the interleaved plane).
        plane: u8,
        /// The row stride given, in bytes.
        stride: u64,
        /// The row's bytes.
        required: u64,
    },
    /// Two planes' accessed byte ranges overlap.
    PlaneOverlap {
        /// The later plane.
        plane: u8,
        /// The earlier plane it overlaps.
        other: u8,
    },
    /// A batch of two or more frames has a frame stride below one frame's accessed span.
    FrameStride {
        /// The frame stride given, in bytes.
        stride: u64,
        /// One frame's accessed span in bytes.
        required: u64,
    },
    /// A normalization parameter is NaN or infinite.
    NotFinite {
        /// Which parameter.
        param: Param,
        /// Its index in the values given.
        index: u8,
        /// Its binary32 bits.
        bits: u32,
    },
    /// The divisor is zero or negative.
    DivisorNotPositive {
        /// Its binary32 bits.
        bits: u32,
    },
    /// A standard deviation is zero (of either sign).
    StdZero {
        /// Its index in the values given.
        index: u8,
    },
    /// Mean, std or pad value given neither once nor once per output channel.
    ChannelCount {
        /// Which parameter.
        param: Param,
        /// Values given.
        given: usize,
        /// Output channels.
        channels: u8,
    },
}

impl PreprocError {
    /// The stable numeric code (`docs/errors.md`, 0x240..=0x25f).
    pub const fn code(&self) -> u32 {
        match self {
            PreprocError::OddSize { .. } => 0x240,
            PreprocError::RowStride { .. } => 0x241,
            PreprocError::PlaneOverlap { .. } => 0x242,
            PreprocError::FrameStride { .. } => 0x243,
            PreprocError::NotFinite { .. } => 0x244,
            PreprocError::DivisorNotPositive { .. } => 0x245,
            PreprocError::StdZero { .. } => 0x246,
            PreprocError::ChannelCount { .. } => 0x247,
        }
    }
}

impl fmt::Display for PreprocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PreprocError::OddSize {
                format,
                height,
                width,
            } => write!(f, "{format} needs an even size, not {height}x{width}"),
            PreprocError::RowStride {
                plane,
                stride,
                required,
            } => write!(
                f,
                "plane {plane} row stride {stride} bytes is below its {required}-byte rows"
            ),
            PreprocError::PlaneOverlap { plane, other } => {
                write!(f, "plane {plane} overlaps plane {other}")
            }
            PreprocError::FrameStride { stride, required } => write!(
                f,
                "frame stride {stride} bytes is below the {required}-byte span of a frame"
            ),
            PreprocError::NotFinite { param, index, bits } => {
                write!(f, "{param} {index} (0x{bits:08x}) is not finite")
            }
            PreprocError::DivisorNotPositive { bits } => {
                write!(f, "divisor 0x{bits:08x} is not > 0")
            }
            PreprocError::StdZero { index } => write!(f, "std {index} is zero"),
            PreprocError::ChannelCount {
                param,
                given,
                channels: 1,
            } => write!(
                f,
                "{given} {param} values given; give 1 (the output has one channel)"
            ),
            PreprocError::ChannelCount {
                param,
                given,
                channels,
            } => write!(
                f,
                "{given} {param} values given; give 1 or {channels} (one per output channel)"
            ),
        }
    }
}

impl From<PreprocError> for AdmissionError {
    fn from(e: PreprocError) -> Self {
        AdmissionError::Preproc(e)
    }
}

/// The admitted output of a [`Plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanOutput {
    /// FP32, strided.
    F32(View),
    /// INT8 (Quant), strided.
    I8(View, CheckedParams),
    /// INT8 (QuantTess), `MlaTiled`.
    QuantTess(TiledView, CheckedParams),
    /// BF16 (CastTess), `MlaTiled`.
    CastTess(TiledView),
}

/// A checked Preproc plan: owning, immutable, backend-neutral (SPEC §6, §13). `Copy`,
/// `Send` and `Sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    frame: Frame,
    frames: u64,
    input_span: u64,
    border: Border,
    bgr: bool,
    pad: [u8; 3],
    divisor: u32,
    mean: [u32; 3],
    std: [u32; 3],
    rank: u8,
    extents: [u64; 4],
    output: PlanOutput,
}

impl Plan {
    /// The frame as admitted (plane entries past the format's count zeroed).
    pub const fn frame(&self) -> &Frame {
        &self.frame
    }

    /// Frames in the call (1 without a batch).
    pub const fn frames(&self) -> u64 {
        self.frames
    }

    /// Bytes of the input buffer the call reads, from its start: `(N − 1)·frame_stride +`
    /// one frame's span (the end of its furthest plane); 0 when no frame pixel is read.
    pub const fn input_span(&self) -> u64 {
        self.input_span
    }

    /// The border.
    pub const fn border(&self) -> &Border {
        &self.border
    }

    /// Whether the output channels are B, G, R.
    pub const fn bgr(&self) -> bool {
        self.bgr
    }

    /// The raw pad value per output channel.
    pub const fn pad_value(&self) -> [u8; 3] {
        self.pad
    }

    /// Output channels C (3, or 1 for GRAY8).
    pub const fn channels(&self) -> usize {
        self.frame.format.channels()
    }

    /// The logical output extents: `[H', W', C]` or `[N, H', W', C]`.
    pub fn output_extents(&self) -> &[u64] {
        &self.extents[4 - self.rank as usize..]
    }

    /// The admitted output.
    pub const fn output(&self) -> &PlanOutput {
        &self.output
    }

    /// Bytes the output buffer must hold: the strided span or the tiled capacity.
    pub const fn output_span(&self) -> u64 {
        match &self.output {
            PlanOutput::F32(v) | PlanOutput::I8(v, _) => v.span(),
            PlanOutput::QuantTess(t, _) | PlanOutput::CastTess(t) => t.capacity(),
        }
    }

    /// Number of logical output elements (0 when empty).
    pub fn elements(&self) -> u64 {
        self.extents.iter().product()
    }

    /// Whether the call writes nothing (some output extent is zero).
    pub fn is_empty(&self) -> bool {
        self.extents.contains(&0)
    }

    /// The normalized FP32 value (binary32 bits) of the raw 8-bit value `p` on output
    /// channel `c` (< [`channels`](Plan::channels)): [`normalize`] with this plan's
    /// parameters (SPEC §13).
    pub const fn value_bits(&self, c: usize, p: u8) -> u32 {
        normalize(p, self.divisor, self.mean[c], self.std[c])
    }

    /// The normalization's parameters as binary32 bits (SPEC §13): the divisor, then the
    /// mean and the std per output channel (entries past [`channels`](Plan::channels)
    /// unused). For kernels that compute [`value_bits`](Plan::value_bits) in FP lanes.
    pub const fn normalization_bits(&self) -> (u32, [u32; 3], [u32; 3]) {
        (self.divisor, self.mean, self.std)
    }

    /// The raw 8-bit values of output pixel `(n, y, x)` in output channel order (border
    /// pixels give the pad value; GRAY8 uses entry 0 only), read from `input`, which holds
    /// the call's input from its start (at least [`input_span`](Plan::input_span) bytes;
    /// bytes past its end read as 0).
    pub fn pixel(&self, input: &[u8], n: u64, y: u64, x: u64) -> [u8; 3] {
        let b = &self.border;
        let (h, w) = (self.frame.height, self.frame.width);
        if y < b.top || x < b.left || y - b.top >= h || x - b.left >= w {
            return self.pad;
        }
        let (y, x) = (y - b.top, x - b.left);
        let base = n * self.frame.frame_stride;
        let at = |plane: usize, row: u64, byte: u64| {
            let p = &self.frame.planes[plane];
            let i = base + p.offset + row * p.row_stride + byte;
            usize::try_from(i)
                .ok()
                .and_then(|i| input.get(i))
                .copied()
                .unwrap_or(0)
        };
        let format = self.frame.format;
        let rgb = match format {
            Format::GRAY8 => return [at(0, y, x); 3],
            Format::RGB8 | Format::RGBX8 => {
                let k = x * format.pixel_bytes();
                [at(0, y, k), at(0, y, k + 1), at(0, y, k + 2)]
            }
            Format::BGR8 | Format::BGRX8 => {
                let k = x * format.pixel_bytes();
                [at(0, y, k + 2), at(0, y, k + 1), at(0, y, k)]
            }
            Format::NV12 => {
                let (cy, cx) = (y / 2, x / 2 * 2);
                yuv_to_rgb(at(0, y, x), at(1, cy, cx), at(1, cy, cx + 1))
            }
            Format::I420 => {
                let (cy, cx) = (y / 2, x / 2);
                yuv_to_rgb(at(0, y, x), at(1, cy, cx), at(2, cy, cx))
            }
        };
        if self.bgr {
            [rgb[2], rgb[1], rgb[0]]
        } else {
            rgb
        }
    }

    /// The raw 8-bit values of output pixels `(n, y, x0 + k)` for `k < out.len()`, as
    /// [`pixel`](Plan::pixel) gives them one by one (border pixels the pad value), with
    /// each plane's row sliced once: the row loop of the A65 and of the EV74 kernels.
    pub fn pixel_row(&self, input: &[u8], n: u64, y: u64, x0: u64, out: &mut [[u8; 3]]) {
        self.pixel_row_by(&PortableYuv, input, n, y, x0, out);
    }

    /// The frame bytes of output pixels `(n, y, x0 + k)` for `k < count`, when they are
    /// those pixels' raw values as they are: a packed three-byte format whose byte order is
    /// the output's channel order (`RGB8`, or `BGR8` with `bgr`), every pixel inside the
    /// frame (no border) and the `3 · count` bytes inside `input`. `None` otherwise (then
    /// [`pixel_row`](Plan::pixel_row) gives them). Lets a row be converted straight from the
    /// frame.
    pub fn packed_row<'a>(
        &self,
        input: &'a [u8],
        n: u64,
        y: u64,
        x0: u64,
        count: u64,
    ) -> Option<&'a [u8]> {
        let format = self.frame.format;
        let identity = match format {
            Format::RGB8 => !self.bgr,
            Format::BGR8 => self.bgr,
            _ => false,
        };
        let b = &self.border;
        let (fy, fx) = (y.checked_sub(b.top)?, x0.checked_sub(b.left)?);
        if !identity || fy >= self.frame.height || fx.checked_add(count)? > self.frame.width {
            return None;
        }
        let p = &self.frame.planes[0];
        let start = n
            .checked_mul(self.frame.frame_stride)?
            .checked_add(p.offset)?
            .checked_add(fy.checked_mul(p.row_stride)?)?
            .checked_add(3 * fx)?;
        let start = usize::try_from(start).ok()?;
        input.get(start..start.checked_add(usize::try_from(3 * count).ok()?)?)
    }

    /// The NV12 bytes of output pixels `(n, y, x0 + k)` and `(n, y + 1, x0 + k)`,
    /// `k < count`, when both rows lie inside an NV12 frame (no border) and share one
    /// chroma row (frame row `y − top` even) from an even frame column: (the luma bytes of
    /// the two rows, `count` each; the chroma pairs that cover them, `2·⌈count / 2⌉`
    /// bytes), or `None`. For a YUV step that computes each chroma pair once for both
    /// rows (SPEC §13's formula, [`yuv_to_rgb`]).
    #[inline]
    pub fn nv12_pair<'a>(
        &self,
        input: &'a [u8],
        n: u64,
        y: u64,
        x0: u64,
        count: u64,
    ) -> Option<(&'a [u8], &'a [u8], &'a [u8])> {
        let b = &self.border;
        let (fy, fx) = (y.checked_sub(b.top)?, x0.checked_sub(b.left)?);
        if self.frame.format != Format::NV12
            || fy % 2 != 0
            || fx % 2 != 0
            || fy.checked_add(1)? >= self.frame.height
            || fx.checked_add(count)? > self.frame.width
        {
            return None;
        }
        let base = n.checked_mul(self.frame.frame_stride)?;
        let slice = |plane: usize, row: u64, bytes: u64| -> Option<&'a [u8]> {
            let p = &self.frame.planes[plane];
            let start = base
                .checked_add(p.offset)?
                .checked_add(row.checked_mul(p.row_stride)?)?
                .checked_add(fx)?;
            let start = usize::try_from(start).ok()?;
            input.get(start..start.checked_add(usize::try_from(bytes).ok()?)?)
        };
        Some((
            slice(0, fy, count)?,
            slice(0, fy + 1, count)?,
            slice(1, fy / 2, count.div_ceil(2) * 2)?,
        ))
    }

    /// [`pixel_row`](Plan::pixel_row) with the YUV pixels (NV12, I420) converted by
    /// `yuv` (the same values: [`yuv_to_rgb`]'s formula).
    pub fn pixel_row_by(
        &self,
        yuv: &impl YuvRows,
        input: &[u8],
        n: u64,
        y: u64,
        x0: u64,
        out: &mut [[u8; 3]],
    ) {
        let rows = InputRows {
            frame: &self.frame,
            input,
        };
        if self.pixel_row_from(yuv, &rows, n, y, x0, out).is_none() {
            // A row that leaves `input` (not after `execute`'s span checks): pixel by pixel,
            // bytes past the end reading as 0.
            for (k, o) in out.iter_mut().enumerate() {
                *o = self.pixel(input, n, y, x0.saturating_add(k as u64));
            }
        }
    }

    /// [`pixel_row_by`](Plan::pixel_row_by) reading the frame's rows from `rows` (the
    /// call's input, or a window of it in a device's local memory: the EV74 kernel).
    /// `None`, with `out` partly written, when `rows` lacks a row piece the pixels need.
    pub fn pixel_row_from(
        &self,
        yuv: &impl YuvRows,
        rows: &impl FrameRows,
        n: u64,
        y: u64,
        x0: u64,
        out: &mut [[u8; 3]],
    ) -> Option<()> {
        let b = &self.border;
        let (h, w) = (self.frame.height, self.frame.width);
        let len = out.len() as u64;
        let end = x0.saturating_add(len);
        if y < b.top || y - b.top >= h {
            out.fill(self.pad);
            return Some(());
        }
        // The covered columns inside the frame: [lo, hi) of the output row.
        let lo = x0.max(b.left).min(end);
        let hi = end.min(b.left.saturating_add(w)).max(lo);
        let (head, rest) = out.split_at_mut((lo - x0) as usize);
        let (inner, tail) = rest.split_at_mut((hi - lo) as usize);
        head.fill(self.pad);
        tail.fill(self.pad);
        if inner.is_empty() {
            return Some(());
        }
        let (fy, fx) = (y - b.top, lo - b.left);
        let format = self.frame.format;
        let count = inner.len() as u64;
        match format {
            Format::GRAY8 => {
                let r = rows.row(0, n, fy, fx, count)?;
                for (o, &v) in inner.iter_mut().zip(r) {
                    *o = [v; 3];
                }
            }
            Format::RGB8 | Format::RGBX8 | Format::BGR8 | Format::BGRX8 => {
                let bpp = format.pixel_bytes();
                // The bytes of output channels 0 and 2 within a pixel, the channel order
                // folded in.
                let (r, bl) = if matches!(format, Format::RGB8 | Format::RGBX8) != self.bgr {
                    (0, 2)
                } else {
                    (2, 0)
                };
                let row = rows.row(0, n, fy, fx * bpp, count * bpp)?;
                if bpp == 3 && r == 0 {
                    // The pixels as they are: one copy.
                    let bytes = row.get(..inner.len() * 3)?;
                    inner.as_flattened_mut().copy_from_slice(bytes);
                } else {
                    for (o, px) in inner.iter_mut().zip(row.chunks_exact(bpp as usize)) {
                        *o = [px[r], px[1], px[bl]];
                    }
                }
            }
            Format::NV12 => {
                // Chroma pairs (U, V) of columns fx / 2 ..= (fx + count − 1) / 2.
                let (c0, c1) = (fx / 2, (fx + count - 1) / 2);
                let luma = rows.row(0, n, fy, fx, count)?;
                let uv = rows.row(1, n, fy / 2, 2 * c0, 2 * (c1 - c0 + 1))?;
                yuv.yuv_row(inner, luma, uv, uv.get(1..)?, 2, fx % 2 == 1);
            }
            Format::I420 => {
                let (c0, c1) = (fx / 2, (fx + count - 1) / 2);
                let luma = rows.row(0, n, fy, fx, count)?;
                let u = rows.row(1, n, fy / 2, c0, c1 - c0 + 1)?;
                let v = rows.row(2, n, fy / 2, c0, c1 - c0 + 1)?;
                yuv.yuv_row(inner, luma, u, v, 1, fx % 2 == 1);
            }
        }
        if self.bgr && format.is_yuv() {
            for o in inner.iter_mut() {
                o.swap(0, 2);
            }
        }
        Some(())
    }
}

/// Where [`Plan::pixel_row_from`] reads a frame's rows.
pub trait FrameRows {
    /// Bytes `from..from + bytes` of frame row `row` of plane `plane` (0 = Y or the
    /// interleaved plane; 1 = UV or U; 2 = V) of frame `n`; `None` when not held.
    fn row(&self, plane: usize, n: u64, row: u64, from: u64, bytes: u64) -> Option<&[u8]>;
}

/// The call's input from its start: planes at their offsets, frames at the frame stride.
#[derive(Debug, Clone, Copy)]
pub struct InputRows<'a> {
    /// The admitted frame ([`Plan::frame`]).
    pub frame: &'a Frame,
    /// The input buffer.
    pub input: &'a [u8],
}

impl FrameRows for InputRows<'_> {
    fn row(&self, plane: usize, n: u64, row: u64, from: u64, bytes: u64) -> Option<&[u8]> {
        let p = self.frame.planes.get(plane)?;
        let start = n
            .checked_mul(self.frame.frame_stride)?
            .checked_add(p.offset)?
            .checked_add(row.checked_mul(p.row_stride)?)?
            .checked_add(from)?;
        let start = usize::try_from(start).ok()?;
        self.input
            .get(start..start.checked_add(usize::try_from(bytes).ok()?)?)
    }
}

/// How [`Plan::pixel_row_by`] converts the YUV pixels of a row piece (SPEC §13's
/// [`yuv_to_rgb`], bit for bit).
pub trait YuvRows {
    /// `out[k]` from luma `luma[k]` and chroma pair `c = (k + odd) / 2`, whose U and V are
    /// `u[c · step]` and `v[c · step]` (`step` 2 for NV12's interleaved plane, 1 for I420);
    /// `odd`: the piece starts at an odd frame column. `luma` holds at least `out.len()`
    /// bytes and the chroma slices every pair the piece uses.
    fn yuv_row(&self, out: &mut [[u8; 3]], luma: &[u8], u: &[u8], v: &[u8], step: usize, odd: bool);
}

/// The portable [`YuvRows`]: [`yuv_to_rgb`]'s formula, each pair's chroma terms once.
#[derive(Debug, Clone, Copy, Default)]
pub struct PortableYuv;

impl YuvRows for PortableYuv {
    fn yuv_row(
        &self,
        out: &mut [[u8; 3]],
        luma: &[u8],
        u: &[u8],
        v: &[u8],
        step: usize,
        odd: bool,
    ) {
        yuv_row(out, luma, odd, |c| chroma_terms(u[c * step], v[c * step]));
    }
}

/// One row piece of YUV pixels: `out[k]` from luma `luma[k]` and the chroma terms of
/// pair `(k + odd) / 2` (`chroma(c)`; `odd`: the piece starts at an odd frame column, so
/// its first pixel is the second of its pair). Each pair's terms are computed once.
#[inline(always)]
fn yuv_row(out: &mut [[u8; 3]], luma: &[u8], odd: bool, chroma: impl Fn(usize) -> [i32; 3]) {
    let n = out.len().min(luma.len());
    let first = usize::from(odd).min(n);
    if first == 1 {
        out[0] = yuv_with_chroma(luma[0], chroma(0));
    }
    // Pixel `first + k` uses pair `first + k / 2`.
    let (out, luma) = (&mut out[first..n], &luma[first..n]);
    let whole = out.len() / 2 * 2;
    for (j, (o, l)) in out[..whole]
        .chunks_exact_mut(2)
        .zip(luma[..whole].chunks_exact(2))
        .enumerate()
    {
        let t = chroma(first + j);
        o[0] = yuv_with_chroma(l[0], t);
        o[1] = yuv_with_chroma(l[1], t);
    }
    if whole < out.len() {
        out[whole] = yuv_with_chroma(luma[whole], chroma(first + whole / 2));
    }
}

/// Admits a Preproc request (SPEC §13). Reads no frame data.
///
/// Checks, in this order: the normalization parameters (divisor, then each mean, then each
/// std), the pad value's count, the frame geometry (even size for YUV; per plane the row
/// stride and span; planes pairwise disjoint; the frame stride of a batch; the input span),
/// the output extents, then the output port (Quant parameters first for INT8 outputs).
///
/// # Errors
///
/// - [`AdmissionError::Preproc`] with a [`PreprocError`] for the frame and parameter rules;
/// - [`AdmissionError::SpanOverflow`] on the input (a plane, frame or batch span) or the
///   output (an extent with its border) when it overflows `u64`;
/// - the Quant parameter errors ([`Params::check`]) for INT8 outputs;
/// - for strided outputs, [`AdmissionError::StridesRank`] and the layout errors of
///   [`DynSpec::admit`] on the output port; for tiled outputs, those of
///   [`MlaTiled::check_input_side`] and [`MlaTiled::admit`].
pub fn check_inference(request: &Request<'_>) -> Result<Plan, AdmissionError> {
    let format = request.frame.format;
    let channels = format.channels();
    let norm = &request.normalize;
    let divisor = norm.divisor.to_bits();
    check_finite(Param::Divisor, 0, divisor)?;
    if divisor & 0x8000_0000 != 0 || divisor == 0 {
        return Err(PreprocError::DivisorNotPositive { bits: divisor }.into());
    }
    let mean = per_channel(Param::Mean, norm.mean, channels, |i, v: &f32| {
        check_finite(Param::Mean, i, v.to_bits()).map(|()| v.to_bits())
    })?;
    let std = per_channel(Param::Std, norm.std, channels, |i, v: &f32| {
        let bits = v.to_bits();
        check_finite(Param::Std, i, bits)?;
        if bits & 0x7fff_ffff == 0 {
            return Err(PreprocError::StdZero { index: i });
        }
        Ok(bits)
    })?;
    let pad = per_channel(Param::PadValue, request.pad_value, channels, |_, &v| {
        Ok::<u8, PreprocError>(v)
    })?;
    let (frame, frames, input_span) = check_frame(&request.frame)?;
    let border = request.border;
    let overflow = AdmissionError::SpanOverflow { port: Port::Output };
    let height = border
        .top
        .checked_add(frame.height)
        .and_then(|h| h.checked_add(border.bottom))
        .ok_or(overflow)?;
    let width = border
        .left
        .checked_add(frame.width)
        .and_then(|w| w.checked_add(border.right))
        .ok_or(overflow)?;
    let (rank, extents) = match frame.batch {
        Some(n) => (4u8, [n, height, width, channels as u64]),
        None => (3u8, [1, height, width, channels as u64]),
    };
    let logical = &extents[4 - rank as usize..];
    let output = match request.output {
        Output::F32 { strides } => PlanOutput::F32(strided(logical, strides, DType::F32)?),
        Output::I8 { strides, params } => {
            let quant = params.check()?;
            PlanOutput::I8(strided(logical, strides, DType::I8)?, quant)
        }
        Output::QuantTess { layout, params } => {
            let quant = params.check()?;
            layout.check_input_side()?;
            PlanOutput::QuantTess(layout.admit(logical, 1)?, quant)
        }
        Output::CastTess { layout } => {
            layout.check_input_side()?;
            PlanOutput::CastTess(layout.admit(logical, 2)?)
        }
    };
    // An empty output reads nothing.
    let input_span = if extents.contains(&0) { 0 } else { input_span };
    Ok(Plan {
        frame,
        frames,
        input_span,
        border,
        bgr: request.bgr && channels == 3,
        pad,
        divisor,
        mean,
        std,
        rank,
        extents,
        output,
    })
}

/// A strided output port over `extents`.
fn strided(extents: &[u64], strides: Option<&[u64]>, dtype: DType) -> Result<View, AdmissionError> {
    DynSpec {
        extents,
        strides,
        dtype,
    }
    .admit(Port::Output)
}

/// NaN and infinities are refused.
fn check_finite(param: Param, index: u8, bits: u32) -> Result<(), PreprocError> {
    if bits & 0x7f80_0000 == 0x7f80_0000 {
        return Err(PreprocError::NotFinite { param, index, bits });
    }
    Ok(())
}

/// One value for every channel, or one per channel, each checked by `check`; expanded to
/// three entries (GRAY8 uses the first).
fn per_channel<T: Copy + Default, U: Copy + Default>(
    param: Param,
    given: &[T],
    channels: usize,
    check: impl Fn(u8, &T) -> Result<U, PreprocError>,
) -> Result<[U; 3], PreprocError> {
    if given.len() != 1 && given.len() != channels {
        return Err(PreprocError::ChannelCount {
            param,
            given: given.len(),
            channels: channels as u8,
        });
    }
    let mut out = [U::default(); 3];
    for (i, v) in given.iter().enumerate() {
        out[i] = check(i as u8, v)?;
    }
    if given.len() == 1 {
        out = [out[0]; 3];
    }
    Ok(out)
}

/// The frame rules: even YUV sizes, row strides, plane spans and disjointness, the batch's
/// frame stride. Returns the frame with unused planes zeroed, the frame count and the
/// input span in bytes.
fn check_frame(frame: &Frame) -> Result<(Frame, u64, u64), AdmissionError> {
    let format = frame.format;
    let (height, width) = (frame.height, frame.width);
    if format.is_yuv() && (height % 2 != 0 || width % 2 != 0) {
        return Err(PreprocError::OddSize {
            format,
            height,
            width,
        }
        .into());
    }
    let overflow = AdmissionError::SpanOverflow { port: Port::Input };
    if width.checked_mul(format.pixel_bytes()).is_none() {
        return Err(overflow);
    }
    let mut out = *frame;
    let mut ranges = [(0u64, 0u64); 3];
    let mut span = 0u64;
    for (p, plane) in out.planes.iter_mut().enumerate() {
        if p >= format.planes() {
            *plane = Plane::default();
            continue;
        }
        let (rows, bytes) = format.plane_shape(p, height, width);
        if rows > 1 && bytes > 0 && plane.row_stride < bytes {
            return Err(PreprocError::RowStride {
                plane: p as u8,
                stride: plane.row_stride,
                required: bytes,
            }
            .into());
        }
        let len = if rows == 0 || bytes == 0 {
            0
        } else {
            (rows - 1)
                .checked_mul(plane.row_stride)
                .and_then(|s| s.checked_add(bytes))
                .ok_or(overflow)?
        };
        let end = plane.offset.checked_add(len).ok_or(overflow)?;
        ranges[p] = (plane.offset, end);
        for (q, &(lo, hi)) in ranges[..p].iter().enumerate() {
            if len > 0 && lo < hi && lo < end && plane.offset < hi {
                return Err(PreprocError::PlaneOverlap {
                    plane: p as u8,
                    other: q as u8,
                }
                .into());
            }
        }
        if len > 0 {
            span = span.max(end);
        }
    }
    let frames = frame.batch.unwrap_or(1);
    if frames < 2 {
        out.frame_stride = 0;
    } else if span > 0 && frame.frame_stride < span {
        return Err(PreprocError::FrameStride {
            stride: frame.frame_stride,
            required: span,
        }
        .into());
    }
    let total = if frames == 0 || span == 0 {
        0
    } else {
        (frames - 1)
            .checked_mul(out.frame_stride)
            .and_then(|s| s.checked_add(span))
            .ok_or(overflow)?
    };
    Ok((out, frames, total))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::layout::Channels;

    fn request(frame: Frame) -> Request<'static> {
        Request {
            frame,
            normalize: Normalize::DEFAULT,
            bgr: false,
            border: Border::default(),
            pad_value: &[0],
            output: Output::F32 { strides: None },
        }
    }

    #[test]
    fn packed_frames_have_opencv_spans() {
        for (format, span) in [
            (Format::RGB8, 4 * 6 * 3),
            (Format::BGRX8, 4 * 6 * 4),
            (Format::GRAY8, 4 * 6),
            (Format::NV12, 4 * 6 * 3 / 2),
            (Format::I420, 4 * 6 * 3 / 2),
        ] {
            let plan = check_inference(&request(Frame::packed(format, 4, 6))).unwrap();
            assert_eq!(plan.input_span(), span, "{format}");
        }
    }

    #[test]
    fn rejects_odd_yuv_and_short_strides() {
        let e = check_inference(&request(Frame::packed(Format::NV12, 3, 4))).unwrap_err();
        assert_eq!(e.code(), 0x240);
        let mut f = Frame::packed(Format::RGB8, 2, 4);
        f.planes[0].row_stride = 11;
        let e = check_inference(&request(f)).unwrap_err();
        assert_eq!(
            e,
            AdmissionError::Preproc(PreprocError::RowStride {
                plane: 0,
                stride: 11,
                required: 12
            })
        );
    }

    #[test]
    fn tiled_outputs_admit_with_default_roles() {
        let mut r = request(Frame::packed(Format::RGB8, 2, 4).with_batch(2));
        r.output = Output::CastTess {
            layout: Output::default_layout(true, [1, 2, 4, 3], Channels::Compact),
        };
        let plan = check_inference(&r).unwrap();
        assert_eq!(plan.output_extents(), &[2, 2, 4, 3][..]);
        // Two frames, one tile each: 8 pixels × 3 channels × 2 planes = 48 bytes.
        assert_eq!(plan.output_span(), 96);
    }
}
