//! `simak preproc`: an 8-bit camera frame (a PNG or JPEG photo, a raw `.yuv` / `.nv12` /
//! `.rgb` file, or a `uint8` `.npy` array) → the normalized tensor of SPEC §13 in one pass
//! (the library's Preproc op on the A65), written as FP32 or INT8 `.npy`, or as the
//! `MlaTiled` buffer of QuantTess (INT8) or CastTess (BF16) with the sidecar that
//! `simak casttess` / `simak quanttess` write (so `simak untile` reads it back).
//!
//! Every flag and the input's geometry are checked, and the output paths too, before the
//! frame is read past its header; the library admits the request before the output buffer is
//! allocated; the outputs are staged in full and published only at the end
//! ([`crate::report::finish`]). Library refusals carry their stable code (`docs/errors.md`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde::Serialize;
use simak::DType;
use simak::a65;
use simak::ev74;
use simak::layout::MlaTiled;
use simak::ops::preproc::{
    self as op, Border, Format, Frame, Normalize, Output, PlanOutput, Request,
};
use simak::ops::quant::Params;

use crate::detess::coded;
use crate::engine::{AlignedBuf, Backend};
use crate::error::{CliError, bad_file};
use crate::output::{self, Target};
use crate::params::{
    AxesArg, BackendArg, ChannelsArg, RoundingArg, exact_decimal, parse_axes, parse_multiplier,
    parse_tile, parse_zero_point,
};
use crate::read::{self, Expect};
use crate::report::{self, Context, Done, rate_text, shape_text};
use crate::tess::{Sidecar, sidecar_path};

/// The pixel format of the input frame (SPEC §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Interleaved R, G, B bytes.
    Rgb,
    /// Interleaved B, G, R bytes.
    Bgr,
    /// Interleaved R, G, B, X bytes (X ignored).
    Rgbx,
    /// Interleaved B, G, R, X bytes (X ignored).
    Bgrx,
    /// One luma byte a pixel (one output channel).
    Gray,
    /// Y plane, then the interleaved U, V plane (even height and width).
    Nv12,
    /// Y, U and V planes (even height and width).
    I420,
}

impl FormatArg {
    /// The library's format.
    pub fn format(self) -> Format {
        match self {
            FormatArg::Rgb => Format::RGB8,
            FormatArg::Bgr => Format::BGR8,
            FormatArg::Rgbx => Format::RGBX8,
            FormatArg::Bgrx => Format::BGRX8,
            FormatArg::Gray => Format::GRAY8,
            FormatArg::Nv12 => Format::NV12,
            FormatArg::I420 => Format::I420,
        }
    }
}

/// What `simak preproc` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToArg {
    /// FP32 `.npy` (the normalized values).
    F32,
    /// INT8 `.npy` (Quant of the normalized values).
    I8,
    /// INT8 `MlaTiled` buffer + sidecar (QuantTess of the normalized values).
    Quanttess,
    /// BF16 `MlaTiled` buffer + sidecar (CastTess of the normalized values).
    Casttess,
}

impl ToArg {
    fn name(self) -> &'static str {
        match self {
            ToArg::F32 => "f32",
            ToArg::I8 => "i8",
            ToArg::Quanttess => "quanttess",
            ToArg::Casttess => "casttess",
        }
    }

    fn quantizes(self) -> bool {
        matches!(self, ToArg::I8 | ToArg::Quanttess)
    }

    fn tiled(self) -> bool {
        matches!(self, ToArg::Quanttess | ToArg::Casttess)
    }
}

/// One to three binary32 values `a[,b,c]` (each decimal rounded once to binary32). NaN and
/// infinities parse: the library refuses them with their code (0x244).
#[derive(Debug, Clone, PartialEq)]
pub struct F32List(pub Vec<f32>);

/// Parses `--mean`, `--std`: one to three comma-separated numbers.
///
/// # Errors
///
/// No item, more than three, or an item that is not a number.
pub fn parse_f32_list(text: &str) -> Result<F32List, String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.is_empty() || items.len() > 3 {
        return Err(format!(
            "{text:?}: give one value or one per output channel (at most 3)"
        ));
    }
    items
        .iter()
        .map(|item| {
            item.parse::<f32>()
                .map_err(|_| format!("{item:?} is not a number"))
        })
        .collect::<Result<Vec<f32>, String>>()
        .map(F32List)
}

/// Parses `--divisor D`: one number (the library checks it is finite and > 0).
///
/// # Errors
///
/// Not a number.
pub fn parse_divisor(text: &str) -> Result<f32, String> {
    text.trim()
        .parse::<f32>()
        .map_err(|_| format!("{text:?} is not a number"))
}

/// One to three raw 8-bit pad values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct U8List(pub Vec<u8>);

/// Parses `--pad-value v[,v,v]`: one to three integers in 0..=255.
///
/// # Errors
///
/// No item, more than three, or an item outside 0..=255.
pub fn parse_pad_value(text: &str) -> Result<U8List, String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.is_empty() || items.len() > 3 {
        return Err(format!(
            "{text:?}: give one value or one per output channel (at most 3)"
        ));
    }
    items
        .iter()
        .map(|item| {
            item.parse::<u8>()
                .map_err(|_| format!("{item:?} is not an 8-bit value (0 to 255)"))
        })
        .collect::<Result<Vec<u8>, String>>()
        .map(U8List)
}

/// Parses `--size H,W` (pixels).
///
/// # Errors
///
/// Not exactly two non-negative integers.
pub fn parse_size(text: &str) -> Result<[u64; 2], String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    let [h, w] = items[..] else {
        return Err(format!("{text:?}: give H,W (two integers, pixels)"));
    };
    let n = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("{s:?} is not a non-negative integer"))
    };
    Ok([n(h)?, n(w)?])
}

/// Parses `--border top,bottom,left,right` (output pixels).
///
/// # Errors
///
/// Not exactly four non-negative integers.
pub fn parse_border(text: &str) -> Result<[u64; 4], String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.len() != 4 {
        return Err(format!(
            "{text:?}: give top,bottom,left,right (four integers, pixels)"
        ));
    }
    let mut out = [0u64; 4];
    for (slot, s) in out.iter_mut().zip(items) {
        *slot = s
            .parse::<u64>()
            .map_err(|_| format!("{s:?} is not a non-negative integer"))?;
    }
    Ok(out)
}

/// Preprocess an 8-bit camera frame: normalize, and quantize or tile, in one pass (SPEC §13).
#[derive(Debug, Args)]
#[command(
    long_about = "Preprocess an 8-bit camera frame in one pass, as the library's Preproc op \
    does on the A65 (SPEC §13): YUV -> RGB by OpenCV's BT.601 integer formula (NV12, I420), \
    channel order (--bgr), letterbox border (--border, --pad-value), then per output channel \
    n = ((p / divisor) - mean) / std in binary32 (defaults 255, 0, 1), written as FP32 or \
    INT8 .npy [H', W', C] (or [N, H', W', C] for several frames), or as the MlaTiled buffer \
    of QuantTess (INT8) or CastTess (BF16) plus the sidecar OUTPUT.json that `simak untile` \
    reads. The bytes equal `simak quant`, `quanttess` or `casttess` run on the FP32 \
    tensor.\n\n\
    Inputs: PNG and JPEG photos (8-bit; --format rgb, or gray for a grayscale photo; alpha \
    dropped; a grayscale photo read as rgb is replicated), raw frames (.yuv, .nv12, .i420, \
    .rgb, .bgr, .rgbx, .bgrx, .gray, .raw) with --size H,W: the planes back to back with \
    rows of exactly their bytes (OpenCV's single-array layout), one frame or several of the \
    same size (a batch), and uint8 .npy arrays in OpenCV's shapes (C order): (H, W, 3) or \
    (H, W, 4) for rgb/bgr/rgbx/bgrx, (H, W) or (H, W, 1) for gray, (H * 3 / 2, W) for nv12 \
    and i420, with a leading N for a batch (three axes ending in 1 are one gray frame).\n\n\
    --mean, --std and --pad-value take one value or one per output channel (3, or 1 for \
    gray), in output channel order. --to i8 and quanttess need --multiplier (and take \
    --zero-point, --rounding as `simak quant`); --to quanttess and casttess need --tile \
    and take --axes (default -1,0,1,2, or -1,1,2,3 for a batch) and --channels (compact, \
    pad16). Library refusals name their code (docs/errors.md)."
)]
pub struct PreprocArgs {
    /// The frame: .png, .jpg, .jpeg, .npy (uint8), or a raw frame file (with --size).
    #[arg(long, value_name = "PHOTO|RAW|NPY")]
    input: PathBuf,
    /// The frame's pixel format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: FormatArg,
    /// Raw inputs: the frame's height and width in pixels.
    #[arg(long, value_name = "H,W", value_parser = parse_size)]
    size: Option<[u64; 2]>,
    /// Mean subtracted after the division, one or per output channel [default: 0].
    #[arg(long, value_name = "A[,B,C]", value_parser = parse_f32_list, allow_hyphen_values = true)]
    mean: Option<F32List>,
    /// Standard deviation divided by (≠ 0), one or per output channel [default: 1].
    #[arg(long, value_name = "A[,B,C]", value_parser = parse_f32_list, allow_hyphen_values = true)]
    std: Option<F32List>,
    /// The divisor applied to each 8-bit value first (> 0) [default: 255].
    #[arg(long, value_name = "D", value_parser = parse_divisor, allow_hyphen_values = true)]
    divisor: Option<f32>,
    /// Write the output channels as B, G, R (no effect on gray).
    #[arg(long)]
    bgr: bool,
    /// Letterbox border in output pixels.
    #[arg(long, value_name = "TOP,BOTTOM,LEFT,RIGHT", value_parser = parse_border)]
    border: Option<[u64; 4]>,
    /// The border's raw 8-bit value, one or per output channel (normalized as any pixel)
    /// [default: 0].
    #[arg(long, value_name = "V[,V,V]", value_parser = parse_pad_value, requires = "border")]
    pad_value: Option<U8List>,
    /// The output: f32 or i8 (.npy), quanttess or casttess (tiled buffer + sidecar).
    #[arg(long, value_enum, value_name = "OUTPUT")]
    to: ToArg,
    /// The file to write (.npy for f32 and i8; the tiled buffer, with the sidecar at
    /// PATH.json, for quanttess and casttess).
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
    /// --to i8 / quanttess: the multiplier M, as for `simak quant`.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    multiplier: Option<String>,
    /// --to i8 / quanttess: zero point in [-128, 127] [default: 0].
    #[arg(long, value_name = "Z", allow_hyphen_values = true)]
    zero_point: Option<String>,
    /// --to i8 / quanttess: integer rounding of the binary32 product [default: nearest-even].
    #[arg(long, value_enum, value_name = "MODE")]
    rounding: Option<RoundingArg>,
    /// --to quanttess / casttess: the logical axis playing D, H, W, C (-1 absent)
    /// [default: -1,0,1,2; -1,1,2,3 for a batch].
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_axes, allow_hyphen_values = true)]
    axes: Option<AxesArg>,
    /// --to quanttess / casttess: tile extents D, H, W, C (e.g. 1,16,64,3).
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_tile)]
    tile: Option<[u32; 4]>,
    /// --to quanttess / casttess: channel mode [default: compact].
    #[arg(long, value_enum, value_name = "MODE")]
    channels: Option<ChannelsArg>,
    /// A65 threads (the bytes do not depend on T). 1 to 256; above 1 with --backend a65
    /// only.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = crate::params::threads_parser())]
    threads: u64,
    /// Execution backend: a65 (host cores) or ev74-sim (the EV74 firmware's Preproc entry
    /// on the host simulator: the same bytes).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BackendArg::A65)]
    backend: BackendArg,
    /// EV74 worker ring size, 1 to 4 (with --backend ev74-sim only; 4 when not given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4))]
    workers: Option<u64>,
}

/// What kind of file the input is, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Photo,
    Raw,
    Npy,
}

impl Source {
    fn of(path: &Path) -> Option<Source> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "png" | "jpg" | "jpeg" => Some(Source::Photo),
            "npy" => Some(Source::Npy),
            "yuv" | "nv12" | "i420" | "rgb" | "bgr" | "rgbx" | "bgrx" | "gray" | "raw" => {
                Some(Source::Raw)
            }
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Source::Photo => "photo",
            Source::Raw => "raw",
            Source::Npy => "npy",
        }
    }
}

/// The checked flags, before the input is read.
struct Checked {
    source: Source,
    format: Format,
    params: Option<Params>,
    multiplier_text: Option<String>,
    layout: Option<(Option<AxesArg>, [u32; 4], ChannelsArg)>,
}

/// Refuses flags that do not apply to the output or the input kind.
fn check_flags(args: &PreprocArgs) -> Result<Checked, CliError> {
    let input = args.input.as_path();
    let bad = |rule: &str| Err(bad_file(input, rule));
    let Some(source) = Source::of(input) else {
        return bad(
            "unsupported input file type (preproc reads .png, .jpg, .jpeg, .npy and raw .yuv, .nv12, .i420, .rgb, .bgr, .rgbx, .bgrx, .gray, .raw frames)",
        );
    };
    let format = args.format.format();
    match (source, args.size) {
        (Source::Raw, None) => return bad("a raw frame file needs --size H,W"),
        (Source::Photo | Source::Npy, Some(_)) => {
            return bad(
                "--size applies to raw frame files only (photos and .npy arrays carry their size)",
            );
        }
        _ => {}
    }
    if source == Source::Photo && !matches!(format, Format::RGB8 | Format::GRAY8) {
        return Err(bad_file(
            input,
            format!(
                "--format {}: a photo decodes to RGB (--format rgb) or grayscale (--format gray)",
                format.name()
            ),
        ));
    }
    let to = args.to.name();
    if !args.to.quantizes()
        && (args.multiplier.is_some() || args.zero_point.is_some() || args.rounding.is_some())
    {
        return Err(bad_file(
            input,
            format!(
                "--multiplier, --zero-point and --rounding apply to --to i8 and quanttess only, not --to {to}"
            ),
        ));
    }
    if !args.to.tiled() && (args.axes.is_some() || args.tile.is_some() || args.channels.is_some()) {
        return Err(bad_file(
            input,
            format!(
                "--axes, --tile and --channels apply to --to quanttess and casttess only, not --to {to}"
            ),
        ));
    }
    let params = if args.to.quantizes() {
        let Some(text) = &args.multiplier else {
            return Err(bad_file(
                input,
                format!("--to {to} needs --multiplier (the INT8 output's Quant multiplier)"),
            ));
        };
        let m =
            parse_multiplier(text).map_err(|e| bad_file(input, crate::detess::param_text(&e)))?;
        let z = match &args.zero_point {
            Some(t) => {
                parse_zero_point(t).map_err(|e| bad_file(input, crate::detess::param_text(&e)))?
            }
            None => 0,
        };
        Some(
            Params::from_bits(m.bits)
                .with_zero_point(z)
                .with_rounding(args.rounding.unwrap_or(RoundingArg::NearestEven).into()),
        )
    } else {
        None
    };
    let layout = if args.to.tiled() {
        let Some(tile) = args.tile else {
            return Err(bad_file(
                input,
                format!("--to {to} needs --tile D,H,W,C (e.g. 1,16,64,3)"),
            ));
        };
        Some((
            args.axes,
            tile,
            args.channels.unwrap_or(ChannelsArg::Compact),
        ))
    } else {
        None
    };
    Ok(Checked {
        source,
        format,
        params,
        multiplier_text: args.multiplier.clone(),
        layout,
    })
}

/// The frame's pixels as read: the bytes and their frame geometry.
struct Pixels {
    bytes: Vec<u8>,
    /// Where the frame starts in `bytes` (the `.npy` header's end).
    start: usize,
    frame: Frame,
    /// How the photo was decoded (photos only).
    source: Option<String>,
}

/// Bytes of one packed frame of `format` at `height × width` (None on overflow).
fn frame_bytes(format: Format, height: u64, width: u64) -> Option<u64> {
    (0..format.planes()).try_fold(0u64, |acc, p| {
        let (rows, bytes) = format.plane_shape(p, height, width);
        acc.checked_add(rows.checked_mul(bytes)?)
    })
}

/// A packed frame (or batch) of `frames` frames.
fn packed(format: Format, height: u64, width: u64, frames: Option<u64>) -> Frame {
    let frame = Frame::packed(format, height, width);
    match frames {
        Some(n) => frame.with_batch(n),
        None => frame,
    }
}

/// A raw frame file: checked against `--size` from its length before it is read.
fn read_raw(path: &Path, format: Format, [h, w]: [u64; 2]) -> Result<Pixels, CliError> {
    let size = read::file_size(path, "")?;
    let one = frame_bytes(format, h, w)
        .ok_or_else(|| bad_file(path, format!("--size {h},{w}: the frame size overflows")))?;
    if format.is_yuv() && (h % 2 != 0 || w % 2 != 0) {
        // The library's rule, with its code, before anything is read.
        let e = simak::AdmissionError::from(op::PreprocError::OddSize {
            format,
            height: h,
            width: w,
        });
        return Err(bad_file(path, coded(&e)));
    }
    if one == 0 || size == 0 || size % one != 0 {
        return Err(bad_file(
            path,
            format!(
                "holds {size} bytes, not a whole number of {} frames of {h} x {w} ({one} bytes each)",
                format.name()
            ),
        ));
    }
    let frames = size / one;
    let bytes = read::read_input(path, "", Expect::AtMost(size))?;
    Ok(Pixels {
        bytes,
        start: 0,
        frame: packed(format, h, w, (frames > 1).then_some(frames)),
        source: None,
    })
}

/// A `uint8` `.npy` array in OpenCV's shapes for `format` (C order).
fn read_npy_frame(path: &Path, format: Format) -> Result<Pixels, CliError> {
    let bytes = read::read_input(path, "", Expect::Npy)?;
    let (header, offset) = read::npy_header(&bytes)
        .map_err(|e| bad_file(path, format!("malformed .npy file: {e}")))?;
    let descr = header.dtype().descr();
    let is_u8 = matches!(header.dtype(), npyz::DType::Plain(ts)
        if ts.type_char() == npyz::TypeChar::Uint && ts.size_field() == 1);
    if !is_u8 {
        return Err(bad_file(
            path,
            format!("dtype {descr} is not supported (preproc takes uint8 frames, |u1)"),
        ));
    }
    let shape = header.shape().to_vec();
    if header.order() == npyz::Order::Fortran && shape.len() > 1 {
        return Err(bad_file(
            path,
            "a Fortran-order array is not a frame: save it in C order (np.ascontiguousarray)",
        ));
    }
    let name = format.name();
    let wrong = || {
        let want = match format {
            Format::RGB8 | Format::BGR8 => "(H, W, 3)",
            Format::RGBX8 | Format::BGRX8 => "(H, W, 4)",
            Format::GRAY8 => "(H, W) or (H, W, 1)",
            Format::NV12 | Format::I420 => "(H * 3 / 2, W)",
        };
        bad_file(
            path,
            format!(
                "shape {} is not a {name} frame: {want}, with a leading N for a batch",
                shape_text(&shape)
            ),
        )
    };
    let channels = match format {
        Format::RGB8 | Format::BGR8 => Some(3),
        Format::RGBX8 | Format::BGRX8 => Some(4),
        _ => None,
    };
    // (batch, rows, width)
    let (batch, rows, width) = match (format, &shape[..]) {
        (_, &[h, w, c]) if channels == Some(c) => (None, h, w),
        (_, &[n, h, w, c]) if channels == Some(c) => (Some(n), h, w),
        (Format::GRAY8, &[h, w]) | (Format::GRAY8, &[h, w, 1]) => (None, h, w),
        (Format::GRAY8, &[n, h, w, 1]) => (Some(n), h, w),
        // Three axes whose last is not 1: a batch of (H, W) frames, as in Python.
        (Format::GRAY8, &[n, h, w]) => (Some(n), h, w),
        (Format::NV12 | Format::I420, &[r, w]) => (None, r, w),
        (Format::NV12 | Format::I420, &[n, r, w]) => (Some(n), r, w),
        _ => return Err(wrong()),
    };
    let height = if format.is_yuv() {
        if rows % 3 != 0 {
            return Err(bad_file(
                path,
                format!(
                    "shape {}: {name} rows {rows} are not H * 3 / 2 for an even H",
                    shape_text(&shape)
                ),
            ));
        }
        rows / 3 * 2
    } else {
        rows
    };
    Ok(Pixels {
        bytes,
        start: offset,
        frame: packed(format, height, width, batch),
        source: None,
    })
}

/// A PNG or JPEG photo as RGB8 or GRAY8.
fn read_photo(path: &Path, format: Format) -> Result<Pixels, CliError> {
    let limit = read::IMAGE_DEFAULT_LIMIT;
    let bytes = read::read_input(path, "", Expect::Image { limit })?;
    let img = read::decode_image_u8(path, &bytes, format == Format::GRAY8, limit)?;
    let source = format!(
        "{} {} {} x {} -> {}",
        img.format,
        img.color,
        img.width,
        img.height,
        if format == Format::GRAY8 {
            "GRAY8"
        } else {
            "RGB8"
        }
    );
    Ok(Pixels {
        frame: packed(format, img.height, img.width, None),
        bytes: img.pixels,
        start: 0,
        source: Some(source),
    })
}

#[derive(Debug, Serialize)]
struct MultiplierEcho {
    text: String,
    bits: String,
    exact: String,
}

/// What `simak preproc` did.
#[derive(Debug, Serialize)]
pub struct PreprocSummary {
    command: &'static str,
    input: String,
    /// `photo`, `raw` or `npy`.
    input_kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<String>,
    /// The frame's format name (`rgb`, …).
    format: &'static str,
    /// `[H, W]` of a frame.
    frame: [u64; 2],
    /// Frames in a batch, `null` for one frame.
    batch: Option<u64>,
    divisor: f32,
    mean: Vec<f32>,
    std: Vec<f32>,
    bgr: bool,
    /// top, bottom, left, right.
    border: [u64; 4],
    pad_value: Vec<u8>,
    to: &'static str,
    output: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sidecar_path: Option<String>,
    /// Logical output shape `[H', W', C]` or `[N, H', W', C]`.
    shape: Vec<u64>,
    /// Bytes written to the output buffer (the strided span or the tiled capacity).
    output_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    multiplier: Option<MultiplierEcho>,
    #[serde(skip_serializing_if = "Option::is_none")]
    zero_point: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rounding: Option<&'static str>,
    threads: usize,
    /// `a65` or `ev74-sim`.
    backend: &'static str,
    /// `--backend ev74-sim`: the simulated run.
    #[serde(skip_serializing_if = "Option::is_none")]
    ev74: Option<SimCost>,
    route: String,
    elements: u64,
    execute_seconds: f64,
    elements_per_second: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sidecar: Option<Sidecar>,
}

/// Runs `simak preproc`: checks everything, preprocesses on the A65 and stages the outputs.
///
/// # Errors
///
/// [`CliError::Input`] for bad input (exit 2, nothing written; library refusals name their
/// code), [`CliError::Internal`] otherwise.
pub fn run(args: PreprocArgs, ctx: &Context) -> Result<Done<PreprocSummary>, CliError> {
    let input = args.input.as_path();
    let backend = args.backend.with_workers(args.workers)?;
    if args.threads > 1 && backend != Backend::A65 {
        return Err(CliError::Input(
            "--threads applies to --backend a65 only".to_owned(),
        ));
    }
    let checked = check_flags(&args)?;
    let (targets, side_out) = if args.to.tiled() {
        let side = sidecar_path(&args.output);
        let buffer = Target::new("--output", &args.output, output::Format::Raw)?;
        let sidecar = Target::new(
            "the sidecar (--output with .json appended)",
            &side,
            output::Format::Json,
        )?;
        buffer.not_input("--output", input)?;
        sidecar.not_input("the sidecar", input)?;
        (vec![buffer, sidecar], Some(side))
    } else {
        let t = Target::new("--output", &args.output, output::Format::Npy)?;
        t.not_input("--output", input)?;
        (vec![t], None)
    };
    let format = checked.format;
    let pixels = match checked.source {
        Source::Raw => read_raw(input, format, args.size.unwrap_or_default())?,
        Source::Npy => read_npy_frame(input, format)?,
        Source::Photo => read_photo(input, format)?,
    };
    let frame = pixels.frame;
    let batch = frame.batch.is_some();
    let mean = args.mean.as_ref().map_or(vec![0.0], |m| m.0.clone());
    let std = args.std.as_ref().map_or(vec![1.0], |s| s.0.clone());
    let divisor = args.divisor.unwrap_or(255.0);
    let pad = args.pad_value.as_ref().map_or(vec![0], |p| p.0.clone());
    let [top, bottom, left, right] = args.border.unwrap_or_default();
    let layout = checked.layout.map(|(axes, tile, channels)| {
        let layout = Output::default_layout(batch, tile, channels.into());
        match axes {
            Some(a) => MlaTiled::new(a, tile, channels.into()),
            None => layout,
        }
    });
    let output = match (args.to, checked.params, layout) {
        (ToArg::F32, _, _) => Output::F32 { strides: None },
        (ToArg::I8, Some(params), _) => Output::I8 {
            strides: None,
            params,
        },
        (ToArg::Quanttess, Some(params), Some(layout)) => Output::QuantTess { layout, params },
        (ToArg::Casttess, _, Some(layout)) => Output::CastTess { layout },
        _ => {
            return Err(CliError::Internal(anyhow::anyhow!(
                "the checked flags lack the output's parameters"
            )));
        }
    };
    let request = Request {
        frame,
        normalize: Normalize {
            divisor,
            mean: &mean,
            std: &std,
        },
        bgr: args.bgr,
        border: Border {
            top,
            bottom,
            left,
            right,
        },
        pad_value: &pad,
        output,
    };
    let plan = op::check_inference(&request).map_err(|e| {
        let rule = match e {
            simak::AdmissionError::TileAxisOutOfRange { .. }
            | simak::AdmissionError::TileAxisRepeated { .. } => format!("--axes: {}", coded(&e)),
            simak::AdmissionError::TileExtent { .. } => format!("--tile: {}", coded(&e)),
            _ => coded(&e),
        };
        bad_file(input, rule)
    })?;
    let data = pixels.bytes.get(pixels.start..).unwrap_or(&[]);
    if (data.len() as u64) < plan.input_span() {
        return Err(bad_file(
            input,
            format!(
                "the frame holds {} bytes but needs {}",
                data.len(),
                plan.input_span()
            ),
        ));
    }
    let out_len = usize::try_from(plan.output_span()).map_err(|_| {
        bad_file(
            input,
            format!(
                "the output of {} bytes is too large for this machine",
                plan.output_span()
            ),
        )
    })?;
    let align = match plan.output() {
        PlanOutput::F32(_) => 4,
        PlanOutput::I8(..) => 1,
        _ => simak::layout::TILE_ALIGN as usize,
    };
    let mut out =
        AlignedBuf::zeroed("the output buffer", out_len, align).map_err(|e| bad_file(input, e))?;
    let threads = args.threads as usize;
    let prepared = a65::preproc::prepare(&plan);
    let bar = ctx.progress("preproc", 1, plan.elements());
    let start = Instant::now();
    let mut ev74_cost = None;
    match backend {
        Backend::A65 => {
            a65::execute_threaded(&prepared, threads, data, out.as_mut_slice()).map_err(|e| {
                CliError::Internal(anyhow::anyhow!(
                    "{}: execute refused the buffers: {e}",
                    input.display()
                ))
            })?;
        }
        Backend::Ev74Sim { workers } => {
            let mut options = ev74::SimOptions::new(workers);
            options.track_writes = false;
            let run = ev74::run_sim_with(&plan, data, out.as_mut_slice(), &options)
                .map_err(|e| CliError::Internal(anyhow::anyhow!("preproc on the ev74-sim: {e}")))?;
            ev74_cost = Some(SimCost {
                workers,
                simulated_cycles: run.cost.simulated_cycles,
                dma_commands: run.cost.dma_commands,
                bytes_read: run.cost.bytes_read,
                bytes_written: run.cost.bytes_written,
            });
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.inc(plan.elements());
    bar.finish_and_clear();
    let shape = plan.output_extents().to_vec();
    let (staged, sidecar) = match plan.output() {
        PlanOutput::F32(_) => {
            let s = targets[0]
                .stage_npy::<f32>(&shape, npyz::Order::C, |w| w.write_all(out.as_slice()))?;
            (vec![s], None)
        }
        PlanOutput::I8(..) => {
            let s = targets[0]
                .stage_npy::<i8>(&shape, npyz::Order::C, |w| w.write_all(out.as_slice()))?;
            (vec![s], None)
        }
        PlanOutput::QuantTess(view, _) | PlanOutput::CastTess(view) => {
            let (name, params) = match plan.output() {
                PlanOutput::QuantTess(_, q) => ("quanttess", checked.params.map(|_| q.params())),
                _ => ("casttess", None),
            };
            // The tiled tensor is the FP32 tensor of SPEC §13.
            let mut sidecar = Sidecar::new(name, DType::F32, view, params);
            sidecar.seal(out.as_slice());
            let mut json = serde_json::to_string_pretty(&sidecar).map_err(anyhow::Error::from)?;
            json.push('\n');
            let buffer = targets[0].stage(|w| w.write_all(out.as_slice()))?;
            let side = targets[1].stage(|w| w.write_all(json.as_bytes()))?;
            (vec![buffer, side], Some(sidecar))
        }
    };
    let summary = PreprocSummary {
        command: "preproc",
        input: input.display().to_string(),
        input_kind: checked.source.name(),
        image: pixels.source,
        format: format.name(),
        frame: [frame.height, frame.width],
        batch: frame.batch,
        divisor,
        mean,
        std,
        bgr: args.bgr,
        border: [top, bottom, left, right],
        pad_value: pad,
        to: args.to.name(),
        output: args.output.display().to_string(),
        sidecar_path: side_out.map(|p| p.display().to_string()),
        shape,
        output_bytes: plan.output_span(),
        multiplier: checked.params.map(|p| MultiplierEcho {
            text: checked.multiplier_text.clone().unwrap_or_default(),
            bits: format!("0x{:08x}", p.multiplier_bits),
            exact: exact_decimal(p.multiplier_bits),
        }),
        zero_point: checked.params.map(|p| p.zero_point),
        rounding: checked.params.map(|p| p.rounding.name()),
        threads,
        backend: backend.name(),
        ev74: ev74_cost,
        route: match backend {
            Backend::A65 => prepared.implementation().to_owned(),
            Backend::Ev74Sim { .. } => simak::ev74::preproc::ENTRY.to_owned(),
        },
        elements: plan.elements(),
        execute_seconds: seconds,
        elements_per_second: (seconds > 0.0).then(|| plan.elements() as f64 / seconds),
        sidecar,
    };
    Ok(Done::new(summary, staged))
}

impl report::Summary for PreprocSummary {
    fn text(&self) -> String {
        let mut out = format!(
            "simak preproc: {} ({} {}, {} x {}{}) -> {}{} ({})\n",
            self.input,
            self.input_kind,
            self.format,
            self.frame[0],
            self.frame[1],
            self.batch
                .map_or(String::new(), |n| format!(", {n} frames")),
            self.output,
            self.sidecar_path
                .as_ref()
                .map_or(String::new(), |s| format!(" + {s}")),
            self.to
        );
        if let Some(image) = &self.image {
            out.push_str(&format!("image: {image}\n"));
        }
        out.push_str(&format!(
            "n = ((p / {}) - mean {:?}) / std {:?}; bgr {}; border {:?} pad {:?}\n",
            self.divisor, self.mean, self.std, self.bgr, self.border, self.pad_value
        ));
        if let Some(m) = &self.multiplier {
            out.push_str(&format!(
                "multiplier {} = {} exactly; zero point {}; rounding {}\n",
                m.bits,
                m.exact,
                self.zero_point.unwrap_or(0),
                self.rounding.unwrap_or("")
            ));
        }
        out.push_str(&format!(
            "shape {} -> {} bytes; {} elements; execute {:.3} ms, {} elements/s; route {}\n",
            shape_text(&self.shape),
            self.output_bytes,
            self.elements,
            self.execute_seconds * 1e3,
            rate_text(self.elements_per_second),
            self.route
        ));
        if let Some(c) = &self.ev74 {
            out.push_str(&format!(
                "ev74-sim: {} worker{}, {} simulated cycles, {} DMA commands, {} bytes read (the descriptor's included), {} written\n",
                c.workers,
                if c.workers == 1 { "" } else { "s" },
                c.simulated_cycles,
                c.dma_commands,
                c.bytes_read,
                c.bytes_written
            ));
        }
        out
    }
}

/// The simulated EV74 run of `--backend ev74-sim` (`docs/cost-model.md`).
#[derive(Debug, Clone, Copy, Serialize)]
struct SimCost {
    workers: usize,
    simulated_cycles: u64,
    dma_commands: u64,
    bytes_read: u64,
    bytes_written: u64,
}
