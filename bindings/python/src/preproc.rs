//! Preproc (SPEC §13): `preprocess` and the reusable `PreprocPlan`: 8-bit camera frames
//! (NumPy `uint8` arrays in OpenCV's conventions, or a tuple of plane arrays) into FP32,
//! INT8 (strided or `MlaTiled`) or BF16 (`MlaTiled`) in one pass.
//!
//! The library's frame is one input buffer holding every plane at a byte offset with its
//! own row stride, and a frame stride for a batch (`ops::preproc::Frame`). A NumPy frame
//! maps onto it in place when it can: one array (OpenCV's `(H * 3 // 2, W)` for NV12 and
//! I420, `(H, W, 3)`...) whose rows are contiguous bytes, or a tuple of planes that are
//! views into one contiguous NumPy allocation (for example slices of one decoder buffer)
//! with one frame stride; the buffer is then the span from the lowest plane to the end of
//! the highest, which lies inside that allocation. Otherwise (planes in separate
//! allocations, pixels not contiguous within a row such as `frame[:, ::2]`, planes of a
//! batch with different frame strides) the planes are first gathered into one packed
//! buffer (`Frame::packed`): one extra pass over the frame's bytes, never wrong, and the
//! only copy this module makes.

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyString, PyTuple};
use simak::a65::{self, ExecuteError};
use simak::layout::{Channels, MlaTiled};
use simak::ops::preproc::{
    Border, Format, Frame, Normalize, Output, Plan, PlanOutput, Plane, PreprocError, Request,
    check_inference,
};
use simak::ops::quant::Params;
use simak::{AdmissionError, DType, Port};

use crate::args::{check_threads, parse_axes, parse_channels, parse_tile, quant_params, repr};
use crate::arrays::{
    Geometry, as_array, as_out_array, data_address, float32_type, input_slice, new_array, num,
    output_slice, ranges_overlap, tiled_out,
};
use crate::errors::{
    Names, PY_FRAME_DTYPE, PY_FRAME_ROWS, PY_FRAME_SHAPE, PY_PREPROC_ARGS, guarded, lib_error,
    simak_error,
};
use crate::layout::Layout;
use crate::run::run_detached;

const NAMES: Names = Names {
    input: "frame",
    output: "out",
};

/// What `to=` asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum To {
    F32,
    I8,
    QuantTess,
    CastTess,
}

impl To {
    fn parse(py: Python<'_>, s: &str) -> PyResult<To> {
        match s {
            "f32" => Ok(To::F32),
            "i8" => Ok(To::I8),
            "quanttess" => Ok(To::QuantTess),
            "casttess" => Ok(To::CastTess),
            other => {
                let code = simak::error::BINDING_INVALID_ENUM;
                Err(simak_error(
                    py,
                    code,
                    format!("to={other:?} is none of \"f32\", \"i8\", \"quanttess\", \"casttess\""),
                ))
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            To::F32 => "f32",
            To::I8 => "i8",
            To::QuantTess => "quanttess",
            To::CastTess => "casttess",
        }
    }

    fn tiled(self) -> bool {
        matches!(self, To::QuantTess | To::CastTess)
    }
}

fn parse_format(py: Python<'_>, s: &str) -> PyResult<Format> {
    Format::ALL
        .into_iter()
        .find(|f| f.name() == s)
        .ok_or_else(|| {
            let code = simak::error::BINDING_INVALID_ENUM;
            simak_error(
                py,
                code,
                format!(
                    "format={s:?} is none of \"rgb\", \"bgr\", \"rgbx\", \"bgrx\", \"gray\", \"nv12\", \"i420\""
                ),
            )
        })
}

/// One real number as binary32 bits: a Python number rounded once to binary32
/// (nearest-even, no FP unit), a `numpy.float32` by its bits. NaN and infinities pass (the
/// library refuses them with their index); a `bool` is a `TypeError`.
fn f32_bits(x: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    let refuse = || {
        PyTypeError::new_err(format!(
            "{name} must be a real number or one per output channel, not {}",
            repr(x)
        ))
    };
    if x.is_instance_of::<PyBool>() {
        return Err(refuse());
    }
    if x.is_instance(float32_type(x.py())?)? {
        return x.call_method1("view", ("<u4",))?.extract::<u32>();
    }
    let v: f64 = x.extract().map_err(|_| refuse())?;
    Ok(simak::arith::cast::f64_to_f32_bits(v))
}

/// The items of `x` when it is a sequence (list, tuple, 1-D array), else `x` alone.
fn items<'py>(x: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let sequence = x.is_instance_of::<PyList>()
        || x.is_instance_of::<PyTuple>()
        || x.cast::<PyUntypedArray>().is_ok_and(|a| a.ndim() > 0);
    if sequence {
        x.try_iter()?.collect()
    } else {
        Ok(vec![x.clone()])
    }
}

/// `mean=` or `std=`: one number or one per output channel (the count is the library's
/// rule, 0x247).
fn floats(x: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f32>> {
    items(x)?
        .iter()
        .map(|v| f32_bits(v, name).map(f32::from_bits))
        .collect()
}

/// An integer argument in `0..=max`, else `BINDING_OUT_OF_RANGE` (a non-integer is a
/// `TypeError`).
fn uint(py: Python<'_>, x: &Bound<'_, PyAny>, what: &str, max: u64) -> PyResult<u64> {
    if x.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an integer, not {}",
            repr(x)
        )));
    }
    let v: i128 = x
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be an integer, not {}", repr(x))))?;
    u64::try_from(v).ok().filter(|&v| v <= max).ok_or_else(|| {
        let code = simak::error::BINDING_OUT_OF_RANGE;
        simak_error(
            py,
            code,
            format!("{what} is {v}: it must be an integer in 0..={max}"),
        )
    })
}

/// `pad_value=`: one raw 8-bit value or one per output channel.
fn pad_values(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    items(x)?
        .iter()
        .enumerate()
        .map(|(i, v)| uint(py, v, &format!("pad_value[{i}]"), 255).map(|v| v as u8))
        .collect()
}

/// `border=`: (top, bottom, left, right) in output pixels.
fn parse_border(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Border> {
    let v = items(x)?;
    if v.len() != 4 {
        return Err(PyTypeError::new_err(format!(
            "border must be 4 integers (top, bottom, left, right), not {}",
            repr(x)
        )));
    }
    let names = [
        "border[0] (top)",
        "border[1] (bottom)",
        "border[2] (left)",
        "border[3] (right)",
    ];
    let mut m = [0u64; 4];
    for (k, (slot, item)) in m.iter_mut().zip(&v).enumerate() {
        *slot = uint(py, item, names[k], u64::MAX)?;
    }
    Ok(Border {
        top: m[0],
        bottom: m[1],
        left: m[2],
        right: m[3],
    })
}

/// The tiled layout arguments as given (axes and tile resolved per call: their defaults
/// depend on the batch and the output size).
#[derive(Clone)]
struct TiledArgs {
    axes: Option<[Option<u8>; 4]>,
    tile: Option<[u32; 4]>,
    channels: Channels,
}

/// A call's parameters: everything but the frame's memory geometry.
#[derive(Clone)]
struct Settings {
    format: Format,
    divisor: f32,
    mean: Vec<f32>,
    std: Vec<f32>,
    bgr: bool,
    border: Border,
    pad: Vec<u8>,
    to: To,
    quant: Option<Params>,
    tiled: TiledArgs,
}

impl Settings {
    /// Parses the keywords shared by `preprocess` and `PreprocPlan`, in signature order.
    #[allow(clippy::too_many_arguments)]
    fn parse(
        py: Python<'_>,
        format: &str,
        mean: &Bound<'_, PyAny>,
        std: &Bound<'_, PyAny>,
        divisor: &Bound<'_, PyAny>,
        bgr: bool,
        border: &Bound<'_, PyAny>,
        pad_value: &Bound<'_, PyAny>,
        to: &str,
        multiplier: Option<&Bound<'_, PyAny>>,
        zero_point: &Bound<'_, PyAny>,
        rounding: &str,
        axes: Option<&Bound<'_, PyAny>>,
        tile: Option<&Bound<'_, PyAny>>,
        channels: &str,
    ) -> PyResult<Settings> {
        let format = parse_format(py, format)?;
        let to = To::parse(py, to)?;
        let misplaced = |what: &str| {
            let code = PY_PREPROC_ARGS;
            simak_error(
                py,
                code,
                format!(
                    "{what} does not apply to to={:?}: {}",
                    to.name(),
                    if what == "multiplier=" {
                        "only the INT8 outputs \"i8\" and \"quanttess\" take a multiplier"
                    } else {
                        "only the tiled outputs \"quanttess\" and \"casttess\" take axes, tile and channels"
                    }
                ),
            )
        };
        let quant = match (to, multiplier) {
            (To::I8 | To::QuantTess, Some(m)) => {
                Some(quant_params(py, m, Some(zero_point), rounding)?)
            }
            (To::I8 | To::QuantTess, None) => {
                let code = PY_PREPROC_ARGS;
                return Err(simak_error(
                    py,
                    code,
                    format!(
                        "to={:?} writes INT8 and needs multiplier= (the factor of Quant, SPEC §3: q = saturate(round(n * multiplier) + zero_point))",
                        to.name()
                    ),
                ));
            }
            (_, Some(m)) if !m.is_none() => return Err(misplaced("multiplier=")),
            _ => None,
        };
        if quant.is_none() {
            // Checked all the same, so a typo is not silently ignored.
            crate::args::parse_rounding(py, rounding)?;
            crate::args::zero_point(py, zero_point)?;
        }
        let channels = parse_channels(py, channels)?;
        if !to.tiled() {
            if axes.is_some_and(|a| !a.is_none()) {
                return Err(misplaced("axes="));
            }
            if tile.is_some_and(|t| !t.is_none()) {
                return Err(misplaced("tile="));
            }
            if channels != Channels::Compact {
                return Err(misplaced("channels="));
            }
        }
        let tiled = TiledArgs {
            axes: axes
                .filter(|a| !a.is_none())
                .map(|a| parse_axes(py, a))
                .transpose()?,
            tile: tile
                .filter(|t| !t.is_none())
                .map(|t| parse_tile(py, t))
                .transpose()?,
            channels,
        };
        Ok(Settings {
            format,
            divisor: f32::from_bits(f32_bits(divisor, "divisor")?),
            mean: floats(mean, "mean")?,
            std: floats(std, "std")?,
            bgr,
            border: parse_border(py, border)?,
            pad: pad_values(py, pad_value)?,
            to,
            quant,
            tiled,
        })
    }

    /// The output extents `[H', W', C]` or `[N, H', W', C]` of a frame, `None` on overflow
    /// (admission reports it).
    fn output_extents(&self, frame: &Frame) -> Option<Vec<u64>> {
        let b = &self.border;
        let h = b.top.checked_add(frame.height)?.checked_add(b.bottom)?;
        let w = b.left.checked_add(frame.width)?.checked_add(b.right)?;
        let c = self.format.channels() as u64;
        Some(match frame.batch {
            Some(n) => vec![n, h, w, c],
            None => vec![h, w, c],
        })
    }

    /// Admits the call: `frame` with this module's parameters, `strides` for a strided
    /// `out=` (`None`: C order).
    fn admit(&self, py: Python<'_>, frame: &Frame, strides: Option<&[u64]>) -> PyResult<Plan> {
        let params = self
            .quant
            .unwrap_or_else(|| Params::from_bits(1.0f32.to_bits()));
        let output = match self.to {
            To::F32 => Output::F32 { strides },
            To::I8 => Output::I8 { strides, params },
            To::QuantTess | To::CastTess => {
                let layout = self.layout(frame);
                if self.to == To::QuantTess {
                    Output::QuantTess { layout, params }
                } else {
                    Output::CastTess { layout }
                }
            }
        };
        check_inference(&Request {
            frame: *frame,
            normalize: Normalize {
                divisor: self.divisor,
                mean: &self.mean,
                std: &self.std,
            },
            bgr: self.bgr,
            border: self.border,
            pad_value: &self.pad,
            output,
        })
        .map_err(|e| lib_error(py, e, NAMES))
    }

    /// The `MlaTiled` layout: the given axes or the default roles of SPEC §13, the given
    /// tile or `(1, min(16, H'), min(64, W'), C)`.
    fn layout(&self, frame: &Frame) -> MlaTiled {
        let batch = frame.batch.is_some();
        let axes = self.tiled.axes.unwrap_or(if batch {
            [None, Some(1), Some(2), Some(3)]
        } else {
            [None, Some(0), Some(1), Some(2)]
        });
        let tile = self.tiled.tile.unwrap_or_else(|| {
            let e = self.output_extents(frame).unwrap_or_default();
            let at = |k: usize| e.get(e.len().wrapping_sub(3) + k).copied().unwrap_or(1);
            let clamp = |v: u64, max: u32| v.clamp(1, u64::from(max)) as u32;
            [
                1,
                clamp(at(0), 16),
                clamp(at(1), 64),
                self.format.channels() as u32,
            ]
        });
        MlaTiled::new(axes, tile, self.tiled.channels)
    }
}

/// One plane of a NumPy frame as four axes (frames, rows, pixels, bytes of a pixel) with
/// byte strides (0 on axes of extent 0 or 1).
#[derive(Clone, Copy)]
struct PlaneArr {
    address: usize,
    extents: [u64; 4],
    strides: [u64; 4],
    /// Identity of the contiguous NumPy region holding the plane, and that region.
    root: (usize, usize, u64),
}

impl PlaneArr {
    /// Bytes from the plane's first byte to one past its last (0 when empty).
    fn span(&self) -> u64 {
        if self.extents.contains(&0) {
            return 0;
        }
        self.extents
            .iter()
            .zip(&self.strides)
            .map(|(&e, &s)| (e - 1) * s)
            .sum::<u64>()
            + 1
    }

    /// Whether each row is contiguous bytes (the library's row model).
    fn rows_contiguous(&self) -> bool {
        let [_, _, px, ch] = self.extents;
        (ch <= 1 || self.strides[3] == 1) && (px <= 1 || self.strides[2] == ch)
    }
}

/// A frame read from NumPy: the library's `Frame`, where its bytes are, and the planes
/// (for the overlap check and the gather).
struct FrameIn {
    frame: Frame,
    planes: Vec<PlaneArr>,
    /// `Some((base, limit))`: read in place from `base`, `limit` bytes readable there;
    /// `None`: gathered into a packed buffer.
    in_place: Option<(usize, u64)>,
}

fn frame_error(py: Python<'_>, code: u32, message: String) -> PyErr {
    simak_error(py, code, message)
}

/// A frame or plane array: `uint8` (else 0x618) with its geometry (negative strides:
/// 0x604).
fn u8_array<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<(Bound<'py, PyUntypedArray>, Geometry)> {
    let a = as_array(x)?;
    let n = a.dtype().num();
    if n != num(NPY_TYPES::NPY_UBYTE) {
        let kind: String = a.dtype().getattr("kind")?.extract()?;
        let floating = kind == "f";
        let hint = if floating {
            ": a float array is refused, since Preproc normalizes 8-bit pixels itself; pass the uint8 frame, or run quantize/quanttess/casttess on an already normalized float tensor"
        } else {
            ": pass the 8-bit pixels as uint8 (for example frame.astype(np.uint8) after checking the range)"
        };
        return Err(frame_error(
            py,
            PY_FRAME_DTYPE,
            format!(
                "{name} has dtype {}; Preproc reads uint8 frames{hint}",
                repr(a.dtype().as_any())
            ),
        ));
    }
    let g = Geometry::read(py, &a, name, 2)?;
    Ok((a, g))
}

/// The contiguous NumPy region holding `a`'s data: the root of its `.base` chain when that
/// array is contiguous (its whole buffer), else `a`'s own element span.
fn root_region(a: &Bound<'_, PyUntypedArray>, own: (usize, u64)) -> PyResult<(usize, usize, u64)> {
    let mut root = a.clone();
    loop {
        let base = root.getattr("base")?;
        match base.cast_into::<PyUntypedArray>() {
            Ok(b) => root = b,
            Err(_) => break,
        }
    }
    if root.is_c_contiguous() || root.is_fortran_contiguous() {
        let len = root.len() as u64 * root.dtype().itemsize() as u64;
        return Ok((root.as_ptr() as usize, data_address(&root), len));
    }
    Ok((a.as_ptr() as usize, own.0, own.1))
}

/// A plane of `g` from axis extents and strides, region `root`.
fn plane(
    address: usize,
    extents: [u64; 4],
    strides: [u64; 4],
    root: (usize, usize, u64),
) -> PlaneArr {
    let mut s = strides;
    for (k, &e) in extents.iter().enumerate() {
        if e <= 1 {
            s[k] = 0;
        }
    }
    PlaneArr {
        address,
        extents,
        strides: s,
        root,
    }
}

/// Reads a frame argument of `format`. `batch_hint` (a plan's batch) settles a rank-3
/// GRAY frame: `(N, H, W)` for a batch plan, else `(H, W, 1)` when its last extent is 1.
fn read_frame(
    py: Python<'_>,
    format: Format,
    x: &Bound<'_, PyAny>,
    batch_hint: Option<bool>,
) -> PyResult<FrameIn> {
    let shape_err = |m: String| frame_error(py, PY_FRAME_SHAPE, m);
    let is_tuple = x.is_instance_of::<PyTuple>() || x.is_instance_of::<PyList>();
    let (height, width, batch, planes) = if is_tuple {
        let parts: Vec<Bound<'_, PyAny>> = x.try_iter()?.collect::<PyResult<_>>()?;
        if !format.is_yuv() || parts.len() != format.planes() {
            return Err(shape_err(format!(
                "a tuple of {} plane arrays was given for format {:?}; planes are given separately only for nv12 (Y, UV) and i420 (Y, U, V), other formats take one array",
                parts.len(),
                format.name()
            )));
        }
        read_planes(py, format, &parts)?
    } else {
        read_single(py, format, x, batch_hint)?
    };
    // Each plane as the library's Plane: read in place when every row is contiguous, all
    // planes lie in one contiguous region and share one frame stride.
    let frames = batch.unwrap_or(1);
    let region = planes[0].root;
    let frame_stride = planes[0].strides[0];
    let in_place = planes.iter().all(|p| {
        p.rows_contiguous()
            && p.root.0 == region.0
            && (frames < 2 || p.strides[0] == frame_stride)
            && p.address >= region.1
            && (p.address - region.1) as u64 + p.span() <= region.2
    });
    let mut frame = Frame::packed(format, height, width);
    frame.batch = batch;
    let in_place = if in_place {
        let base = planes.iter().map(|p| p.address).min().unwrap_or(region.1);
        for (slot, p) in frame.planes.iter_mut().zip(&planes) {
            *slot = Plane {
                offset: (p.address - base) as u64,
                row_stride: p.strides[1],
            };
        }
        frame.frame_stride = if frames < 2 { 0 } else { frame_stride };
        Some((base, region.2 - (base - region.1) as u64))
    } else {
        if frames < 2 {
            frame.frame_stride = 0;
        }
        None
    };
    Ok(FrameIn {
        frame,
        planes,
        in_place,
    })
}

type Planes = (u64, u64, Option<u64>, Vec<PlaneArr>);

/// One array: OpenCV's conventions, a leading N for a batch.
fn read_single(
    py: Python<'_>,
    format: Format,
    x: &Bound<'_, PyAny>,
    batch_hint: Option<bool>,
) -> PyResult<Planes> {
    let (a, g) = u8_array(py, x, "frame")?;
    let e = g.extents();
    let s = &g.strides[..g.rank];
    // The frame's own element span is its region: every plane lies inside it.
    let root = (a.as_ptr() as usize, g.address, element_span(e, s));
    let shape_err = |want: &str| {
        frame_error(
            py,
            PY_FRAME_SHAPE,
            format!(
                "frame has shape {e:?}, which is not a {:?} frame: it takes {want} (uint8), a leading N for a batch",
                format.name()
            ),
        )
    };
    let pb = format.pixel_bytes();
    match format {
        Format::RGB8 | Format::BGR8 | Format::RGBX8 | Format::BGRX8 => {
            let want = if pb == 3 { "(H, W, 3)" } else { "(H, W, 4)" };
            let (n, h, w, c, sn, sh, sw, sc) = match *e {
                [h, w, c] => (None, h, w, c, 0, s[0], s[1], s[2]),
                [n, h, w, c] => (Some(n), h, w, c, s[0], s[1], s[2], s[3]),
                _ => return Err(shape_err(want)),
            };
            if c != pb {
                let mut m = format!(
                    "frame has shape {e:?}: {c} channels, but format {:?} has {pb} bytes a pixel, so it takes {want} (uint8), a leading N for a batch",
                    format.name()
                );
                if c == 2 {
                    m.push_str("; a 2-channel array is no image format Preproc reads");
                } else if c == 1 {
                    m.push_str("; use format=\"gray\" for one channel");
                } else if c == 3 || c == 4 {
                    m.push_str(&format!(
                        "; use format=\"{}\"",
                        if c == 3 {
                            "rgb\" or \"bgr"
                        } else {
                            "rgbx\" or \"bgrx"
                        }
                    ));
                }
                return Err(frame_error(py, PY_FRAME_SHAPE, m));
            }
            let p = plane(g.address, [n.unwrap_or(1), h, w, c], [sn, sh, sw, sc], root);
            Ok((h, w, n, vec![p]))
        }
        Format::GRAY8 => {
            let batch = match (e.len(), batch_hint) {
                (3, Some(b)) => b,
                (3, None) => {
                    // (H, W, 1), or (N, H, W); a last extent of 2 to 4 is an image's
                    // channels, not a width (a batch of such narrow frames takes
                    // (N, H, W, 1)).
                    if (2..=4).contains(&e[2]) {
                        return Err(frame_error(
                            py,
                            PY_FRAME_SHAPE,
                            format!(
                                "frame has shape {e:?}: {} channels, but format \"gray\" has one{}",
                                e[2],
                                if e[2] == 2 {
                                    " (a 2-channel array is no image format Preproc reads)"
                                } else {
                                    "; use format=\"rgb\", \"bgr\", \"rgbx\" or \"bgrx\" for color"
                                }
                            ),
                        ));
                    }
                    e[2] != 1
                }
                (4, _) => true,
                _ => false,
            };
            let (n, h, w, sn, sh, sw) = match (e, batch) {
                (&[h, w], false) | (&[h, w, 1], false) => (None, h, w, 0, s[0], s[1]),
                (&[n, h, w], true) | (&[n, h, w, 1], true) => (Some(n), h, w, s[0], s[1], s[2]),
                _ => {
                    let mut err = shape_err("(H, W) or (H, W, 1)");
                    if e.len() >= 3 && e[e.len() - 1] != 1 && e.len() == 4 {
                        err = frame_error(
                            py,
                            PY_FRAME_SHAPE,
                            format!(
                                "frame has shape {e:?}: {} channels, but format \"gray\" has one (a 2-channel array is no image format Preproc reads)",
                                e[3]
                            ),
                        );
                    }
                    return Err(err);
                }
            };
            let p = plane(g.address, [n.unwrap_or(1), h, w, 1], [sn, sh, sw, 0], root);
            Ok((h, w, n, vec![p]))
        }
        Format::NV12 | Format::I420 => {
            let (n, r, w, sn, sr, sc) = match *e {
                [r, w] => (None, r, w, 0, s[0], s[1]),
                [n, r, w] => (Some(n), r, w, s[0], s[1], s[2]),
                _ => return Err(shape_err("(H * 3 // 2, W)")),
            };
            // H * 3 // 2 rows: H = 2R/3 (even), or (2R + 1)/3 for an odd H, which
            // admission refuses by its own rule (0x240).
            let h = match r % 3 {
                0 => r / 3 * 2,
                1 => (2 * r + 1) / 3,
                _ => {
                    return Err(frame_error(
                        py,
                        PY_FRAME_SHAPE,
                        format!(
                            "frame has shape {e:?}: {r} rows is not H * 3 // 2 for any height H, as a {:?} frame in one array has",
                            format.name()
                        ),
                    ));
                }
            };
            if h % 2 != 0 || w % 2 != 0 {
                // Admission refuses it (0x240) before any byte is read.
                let p = plane(g.address, [n.unwrap_or(1), h, w, 1], [sn, sr, sc, 0], root);
                return Ok((h, w, n, vec![p; format.planes()]));
            }
            let frames = n.unwrap_or(1);
            let y = plane(g.address, [frames, h, w, 1], [sn, sr, sc, 0], root);
            if format == Format::NV12 {
                let uv = plane(
                    g.address + (h * sr) as usize,
                    [frames, h / 2, w, 1],
                    [sn, sr, sc, 0],
                    root,
                );
                return Ok((h, w, n, vec![y, uv]));
            }
            // I420 in one array: U and V rows are W / 2 bytes, two to an array row, which
            // only works with rows of exactly W contiguous bytes.
            if (w > 1 && sc != 1) || (r > 1 && sr != w) {
                return Err(frame_error(
                    py,
                    PY_FRAME_ROWS,
                    format!(
                        "an i420 frame in one array needs rows of exactly W = {w} contiguous bytes (its U and V rows are W / 2 bytes, two to a row), but its byte strides are {s:?}; pass np.ascontiguousarray(frame) or the planes as a tuple (Y, U, V)"
                    ),
                ));
            }
            let (hw, q) = (h * w, (h / 2) * (w / 2));
            let u = plane(
                g.address + hw as usize,
                [frames, h / 2, w / 2, 1],
                [sn, w / 2, 1, 0],
                root,
            );
            let v = plane(
                g.address + (hw + q) as usize,
                [frames, h / 2, w / 2, 1],
                [sn, w / 2, 1, 0],
                root,
            );
            Ok((h, w, n, vec![y, u, v]))
        }
    }
}

/// A tuple of plane arrays: NV12 `(Y, UV)` with UV `(H/2, W)` or `(H/2, W/2, 2)`, I420
/// `(Y, U, V)` with U and V `(H/2, W/2)`; a leading N on every plane for a batch.
fn read_planes(py: Python<'_>, format: Format, parts: &[Bound<'_, PyAny>]) -> PyResult<Planes> {
    let names: &[&str] = if format == Format::NV12 {
        &["Y", "UV"]
    } else {
        &["Y", "U", "V"]
    };
    let mut arrays = Vec::new();
    for (part, name) in parts.iter().zip(names) {
        let (a, g) = u8_array(py, part, &format!("plane {name}"))?;
        arrays.push((a, g));
    }
    let err = |m: String| frame_error(py, PY_FRAME_SHAPE, m);
    let gy = &arrays[0].1;
    let (n, h, w) = match *gy.extents() {
        [h, w] => (None, h, w),
        [n, h, w] => (Some(n), h, w),
        _ => {
            return Err(err(format!(
                "plane Y has shape {:?}; it takes (H, W), or (N, H, W) for a batch",
                gy.extents()
            )));
        }
    };
    let lead = usize::from(n.is_some());
    let mut planes = Vec::new();
    for (k, ((a, g), name)) in arrays.iter().zip(names).enumerate() {
        let e = g.extents();
        let s = &g.strides[..g.rank];
        if n.is_some() && e.first() != n.as_ref() || n.is_none() && e.len() > 3 {
            return Err(err(format!(
                "plane {name} has shape {e:?} but plane Y {:?}: every plane of a batch has the same leading N",
                gy.extents()
            )));
        }
        let root = root_region(a, (g.address, element_span(e, s)))?;
        let sn = if lead == 1 { s[0] } else { 0 };
        let inner = &e[lead..];
        let si = &s[lead..];
        let (extents, strides) = if k == 0 {
            ([n.unwrap_or(1), h, w, 1], [sn, si[0], si[1], 0])
        } else {
            let (ch, cw) = (h / 2, w / 2);
            let even = h % 2 == 0 && w % 2 == 0;
            match (format, inner) {
                (Format::NV12, &[r, c]) if !even || (r == ch && c == w) => {
                    ([n.unwrap_or(1), r, c, 1], [sn, si[0], si[1], 0])
                }
                (Format::NV12, &[r, c, 2]) if !even || (r == ch && c == cw) => {
                    ([n.unwrap_or(1), r, c, 2], [sn, si[0], si[1], si[2]])
                }
                (Format::I420, &[r, c]) if !even || (r == ch && c == cw) => {
                    ([n.unwrap_or(1), r, c, 1], [sn, si[0], si[1], 0])
                }
                _ => {
                    let want = if format == Format::NV12 {
                        format!("({ch}, {w}) or ({ch}, {cw}, 2)")
                    } else {
                        format!("({ch}, {cw})")
                    };
                    return Err(err(format!(
                        "plane {name} has shape {e:?}; for a {h}x{w} {:?} frame it takes {want}{}",
                        format.name(),
                        if n.is_some() {
                            " after the leading N"
                        } else {
                            ""
                        }
                    )));
                }
            }
        };
        planes.push(plane(g.address, extents, strides, root));
    }
    Ok((h, w, n, planes))
}

/// Copies the planes into the packed layout of `frame` (`Frame::packed`, frames back to
/// back): the gather for frames the library cannot read in place.
fn gather(frame: &Frame, planes: &[PlaneArr], sources: &[&[u8]], len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let frames = frame.batch.unwrap_or(1) as usize;
    for (p, (pl, src)) in planes.iter().zip(sources).enumerate() {
        let dst = frame.planes[p];
        let [_, rows, px, ch] = pl.extents.map(|v| v as usize);
        let [sn, sr, sp, sc] = pl.strides.map(|v| v as usize);
        for n in 0..frames {
            for r in 0..rows {
                let d = n * frame.frame_stride as usize
                    + dst.offset as usize
                    + r * dst.row_stride as usize;
                let row = &mut buf[d..d + px * ch];
                for x in 0..px {
                    for c in 0..ch {
                        row[x * ch + c] = src[n * sn + r * sr + x * sp + c * sc];
                    }
                }
            }
        }
    }
    buf
}

/// The strided `out=` of a call: dtype (0x201) and shape (0x202) checked against the
/// call's output; its geometry.
fn strided_out<'py>(
    py: Python<'py>,
    o: &Bound<'py, PyAny>,
    to: To,
    extents: Option<&[u64]>,
) -> PyResult<(Bound<'py, PyUntypedArray>, Geometry)> {
    let oa = as_out_array(py, o, "out")?;
    let (want, name) = if to == To::F32 {
        (NPY_TYPES::NPY_FLOAT, "float32")
    } else {
        (NPY_TYPES::NPY_BYTE, "int8")
    };
    if oa.dtype().num() != num(want) || oa.dtype().is_native_byteorder() == Some(false) {
        let code = AdmissionError::DType {
            port: Port::Output,
            found: DType::I8,
        }
        .code();
        return Err(simak_error(
            py,
            code,
            format!(
                "out= has dtype {}; to={:?} writes native {name}",
                repr(oa.dtype().as_any()),
                to.name()
            ),
        ));
    }
    let g = Geometry::read(py, &oa, "out", 3)?;
    if let Some(e) = extents
        && g.extents() != e
    {
        let code = AdmissionError::ShapeMismatch {
            axis: 0,
            input: 0,
            output: 0,
        }
        .code();
        return Err(simak_error(
            py,
            code,
            format!(
                "out= has shape {:?} but the call writes {e:?} ([H', W', C] or [N, H', W', C] with the border)",
                g.extents()
            ),
        ));
    }
    Ok((oa, g))
}

/// One call: the frame read, admitted (or the plan's `cached` preparation reused when the
/// admission gives the same plan), executed without the GIL over `threads` native threads.
fn run_call<'py>(
    py: Python<'py>,
    settings: &Settings,
    x: &Bound<'py, PyAny>,
    expect: Option<(u64, u64, Option<u64>)>,
    out: Option<&Bound<'py, PyAny>>,
    threads: usize,
    cached: Option<&a65::preproc::Prepared>,
) -> PyResult<Bound<'py, PyAny>> {
    let fin = read_frame(py, settings.format, x, expect.map(|e| e.2.is_some()))?;
    let frame = fin.frame;
    if let Some((h, w, n)) = expect
        && (frame.height, frame.width, frame.batch) != (h, w, n)
    {
        let show = |h: u64, w: u64, n: Option<u64>| match n {
            Some(n) => format!("a batch of {n} frames of {h}x{w}"),
            None => format!("one {h}x{w} frame"),
        };
        return Err(frame_error(
            py,
            PY_FRAME_SHAPE,
            format!(
                "frame is {} but the plan takes {}",
                show(frame.height, frame.width, frame.batch),
                show(h, w, n)
            ),
        ));
    }
    let extents = settings.output_extents(&frame);
    // The strided out=, if any, and the strides to admit it with.
    let strided = match out {
        Some(o) if !settings.to.tiled() => {
            Some(strided_out(py, o, settings.to, extents.as_deref())?)
        }
        _ => None,
    };
    let cached_view = cached.and_then(|c| match c.plan().output() {
        PlanOutput::F32(v) | PlanOutput::I8(v, _) => Some(*v),
        _ => None,
    });
    let strides = strided.as_ref().and_then(|(_, g)| {
        if cached_view.is_some_and(|v| g.matches(&v)) {
            None
        } else {
            Some(g.strides[..g.rank].to_vec())
        }
    });
    let plan = settings.admit(py, &frame, strides.as_deref())?;
    let fresh;
    let prepared = match cached {
        Some(c) if c.plan() == &plan => c,
        _ => {
            fresh = a65::preproc::prepare(&plan);
            &fresh
        }
    };
    if fin.in_place.is_none() {
        // Admission checked the planes of the packed copy; the arrays themselves must be
        // disjoint too, as planes of one buffer are (the same rule, 0x242).
        for (p, a) in fin.planes.iter().enumerate() {
            for (q, b) in fin.planes[..p].iter().enumerate() {
                if ranges_overlap(a.address, a.span(), b.address, b.span()) {
                    let e = AdmissionError::Preproc(PreprocError::PlaneOverlap {
                        plane: p as u8,
                        other: q as u8,
                    });
                    return Err(lib_error(py, e, NAMES));
                }
            }
        }
    }
    // The output buffer.
    let (oa, address, len) = if settings.to.tiled() {
        tiled_out(py, out, plan.output_span())?
    } else {
        let (a, g) = match strided {
            Some(ag) => ag,
            None => {
                let shape = plan.output_extents().to_vec();
                let a = if settings.to == To::F32 {
                    new_array::<f32>(py, &shape)?
                } else {
                    new_array::<i8>(py, &shape)?
                };
                let g = Geometry::read(py, &a, "out", 3)?;
                (a, g)
            }
        };
        (a, g.address, plan.output_span())
    };
    for p in &fin.planes {
        if ranges_overlap(p.address, p.span(), address, len) && plan.input_span() > 0 {
            return Err(lib_error(py, ExecuteError::Overlap, NAMES));
        }
    }
    // SAFETY: the output is the whole admitted span of a live, writeable array (strided:
    // admission's span for its own geometry or a new C-order array; tiled: the whole of a
    // C-contiguous array of `len` bytes), kept alive by `oa`; it was just checked disjoint
    // from every plane the call reads.
    let outp = unsafe { output_slice(address, len) };
    let elements = plan.elements();
    // In place, the input slice is the bounding span of the planes: an output between
    // planes (or in a row's padding) would alias it, so such a call gathers instead (the
    // planes themselves were just checked disjoint from the output).
    let in_place = fin
        .in_place
        .filter(|&(base, _)| !ranges_overlap(base, plan.input_span(), address, len));
    let result = match in_place {
        Some((base, limit)) => {
            let span = plan.input_span();
            if span > limit {
                return Err(simak_error(
                    py,
                    simak::error::BINDING_INTERNAL,
                    format!(
                        "internal error (a simak bug, please report it): frame span {span} beyond its {limit}-byte region",
                    ),
                ));
            }
            // SAFETY: `base..base + span` lies inside one contiguous NumPy region (the
            // frame array's own elements, or the contiguous root array every plane views),
            // checked just above; the arrays are kept alive by the caller's references.
            let inp = unsafe { input_slice(base, span) };
            run_detached(py, elements, || {
                a65::execute_threaded(prepared, threads, inp, outp)
            })
        }
        None => {
            let sources: Vec<&[u8]> = fin
                .planes
                .iter()
                // SAFETY: each plane's span is its own array's element span (nonnegative
                // strides), readable while the caller's references keep the arrays alive.
                .map(|p| unsafe { input_slice(p.address, p.span()) })
                .collect();
            let len = plan.input_span() as usize;
            let planes = &fin.planes;
            run_detached(py, elements, || {
                let buf = if len == 0 {
                    Vec::new()
                } else {
                    gather(&frame, planes, &sources, len)
                };
                a65::execute_threaded(prepared, threads, &buf, outp)
            })
        }
    };
    result.map_err(|e| lib_error(py, e, NAMES))?;
    Ok(oa.into_any())
}

/// Turns 8-bit camera frames into the accelerator's input in one pass (SPEC §13): the
/// YUV step (OpenCV's BT.601 integer formula, as ``cv2.cvtColor(..., COLOR_YUV2RGB_NV12 /
/// _I420)``), the channel order, the border and the normalization
/// ``n = f32(f32(f32(p) / divisor) - mean_c) / std_c``, then written as FP32, INT8 (Quant)
/// or the ``MlaTiled`` layout (QuantTess, CastTess). The bytes equal the existing op run on
/// the FP32 tensor ``n`` (the equivalence rule).
///
/// Args:
///     frame: ``uint8`` array in OpenCV's conventions: ``(H, W, 3)`` for ``"rgb"`` and
///         ``"bgr"``, ``(H, W, 4)`` for ``"rgbx"`` and ``"bgrx"``, ``(H, W)`` or
///         ``(H, W, 1)`` for ``"gray"``, ``(H * 3 // 2, W)`` for ``"nv12"`` and
///         ``"i420"`` (I420 rows exactly W bytes); a leading N for a batch (for gray,
///         a rank-3 array is ``(H, W, 1)`` when its last extent is 1, refused when it is 2 to 4, else ``(N, H, W)``). Any
///         nonnegative strides; or a tuple of planes ``(Y, UV)`` (UV ``(H/2, W)`` or
///         ``(H/2, W/2, 2)``) or ``(Y, U, V)``. Read in place when the rows are contiguous
///         and the planes lie in one contiguous array, else gathered once into a packed
///         buffer.
///     format: ``"rgb"``, ``"bgr"``, ``"rgbx"``, ``"bgrx"``, ``"gray"``, ``"nv12"``,
///         ``"i420"``.
///     mean, std: one number or one per output channel (output channel order); std ≠ 0.
///         A float is rounded once to binary32; ``numpy.float32`` is exact.
///     divisor: > 0 (255: ``n = p / 255``; 1: ``n = p``).
///     bgr: output channels B, G, R instead of R, G, B (no effect on gray).
///     border: ``(top, bottom, left, right)`` output pixels of letterbox.
///     pad_value: the border's raw 8-bit value, one or one per output channel (normalized
///         as any pixel).
///     to: ``"f32"`` (strided), ``"i8"`` (Quant, strided), ``"quanttess"`` or
///         ``"casttess"`` (``MlaTiled``).
///     multiplier, zero_point, rounding: Quant's parameters (``"i8"`` and
///         ``"quanttess"`` need ``multiplier``), as for :func:`quantize`.
///     axes, tile, channels: the tiled layout, as for :func:`casttess`; defaults
///         ``(None, 0, 1, 2)`` (``(None, 1, 2, 3)`` for a batch) and
///         ``(1, min(16, H'), min(64, W'), C)``.
///     out: ``float32``/``int8`` array of the output shape (any strides) for the strided
///         outputs, a 16-byte aligned C-contiguous ``uint8`` buffer of at least the
///         capacity for the tiled ones.
///     threads: native threads (the GIL released); same bytes for every count.
///
/// Returns:
///     ``out``, or a new ``float32``/``int8`` array ``[H', W', C]`` (``[N, H', W', C]``),
///     or for the tiled outputs a new 1-D 16-byte aligned ``uint8`` buffer of the layout's
///     capacity, as :func:`quanttess` and :func:`casttess` return (``PreprocPlan.layout``
///     describes it).
///
/// Raises:
///     SimakError: the library's rules (0x240-0x247 for the frame and normalization,
///         Quant's parameters, the layout rules, 0x402/0x404/0x407 for ``out``), a frame
///         that is not ``uint8`` (0x618), a frame whose shape is not the format's (0x619),
///         an I420 array whose rows are not W contiguous bytes (0x61a), a ``to=`` without
///         its arguments or with others' (0x61b), a negative stride (0x604), a bad option
///         string (0x601), a value out of range (0x608).
#[pyfunction]
#[pyo3(signature = (frame, format="rgb", mean=None, std=None, divisor=None, bgr=false, border=None, pad_value=None, to="f32", multiplier=None, zero_point=None, rounding="nearest-even", axes=None, tile=None, channels="compact", out=None, threads=1))]
#[pyo3(
    text_signature = "(frame, format='rgb', mean=0.0, std=1.0, divisor=255.0, bgr=False, border=(0, 0, 0, 0), pad_value=0, to='f32', multiplier=None, zero_point=0, rounding='nearest-even', axes=None, tile=None, channels='compact', out=None, threads=1)"
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn preprocess<'py>(
    py: Python<'py>,
    frame: &Bound<'py, PyAny>,
    format: &str,
    mean: Option<&Bound<'py, PyAny>>,
    std: Option<&Bound<'py, PyAny>>,
    divisor: Option<&Bound<'py, PyAny>>,
    bgr: bool,
    border: Option<&Bound<'py, PyAny>>,
    pad_value: Option<&Bound<'py, PyAny>>,
    to: &str,
    multiplier: Option<&Bound<'py, PyAny>>,
    zero_point: Option<&Bound<'py, PyAny>>,
    rounding: &str,
    axes: Option<&Bound<'py, PyAny>>,
    tile: Option<&Bound<'py, PyAny>>,
    channels: &str,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
) -> PyResult<Bound<'py, PyAny>> {
    guarded(py, || {
        let threads = check_threads(threads)?;
        let d = Defaults::new(py)?;
        let settings = Settings::parse(
            py,
            format,
            mean.unwrap_or(&d.zero),
            std.unwrap_or(&d.one),
            divisor.unwrap_or(&d.divisor),
            bgr,
            border.unwrap_or(&d.border),
            pad_value.unwrap_or(&d.pad),
            to,
            multiplier,
            zero_point.unwrap_or(&d.pad),
            rounding,
            axes,
            tile,
            channels,
        )?;
        run_call(py, &settings, frame, None, out, threads, None)
    })
}

/// The default argument objects.
struct Defaults<'py> {
    zero: Bound<'py, PyAny>,
    one: Bound<'py, PyAny>,
    divisor: Bound<'py, PyAny>,
    border: Bound<'py, PyAny>,
    pad: Bound<'py, PyAny>,
}

impl<'py> Defaults<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(Defaults {
            zero: 0.0f64.into_pyobject(py)?.into_any(),
            one: 1.0f64.into_pyobject(py)?.into_any(),
            divisor: 255.0f64.into_pyobject(py)?.into_any(),
            border: PyTuple::new(py, [0u64; 4])?.into_any(),
            pad: 0u64.into_pyobject(py)?.into_any(),
        })
    }
}

/// A Preproc plan: format, frame size, batch and every parameter admitted once and the
/// per-channel tables of 256 results built once; ``execute`` then runs frames of that size.
///
/// Args:
///     height, width: the frame's size in pixels (even for NV12 and I420).
///     format, mean, std, divisor, bgr, border, pad_value, to, multiplier, zero_point,
///         rounding, axes, tile, channels: as for :func:`preprocess`.
///     batch: ``None`` (one frame, output ``[H', W', C]``) or N (a batch, ``[N, H', W',
///         C]``).
///     row_strides: the frames' row stride in bytes, one per plane (``None``: rows of
///         exactly their bytes, OpenCV's single array), planes packed as in one OpenCV
///         array. A frame whose memory geometry differs (strides, separate plane arrays,
///         a batch's frame stride) still runs: that call admits its own geometry and builds
///         its tables again (about 0.1 ms).
///
/// Raises:
///     SimakError: the admission rules, as :func:`preprocess`; a negative size, stride or
///         batch (0x608).
#[pyclass(frozen, module = "simak")]
pub(crate) struct PreprocPlan {
    prepared: a65::preproc::Prepared,
    settings: Settings,
    row_strides: Option<Vec<u64>>,
}

impl PreprocPlan {
    /// The admitted plan of the constructor's frame geometry (for the EV74 codec).
    pub(crate) fn core_plan(&self) -> &Plan {
        self.prepared.plan()
    }
}

#[pymethods]
impl PreprocPlan {
    #[new]
    #[pyo3(signature = (height, width, format="nv12", mean=None, std=None, divisor=None, bgr=false, border=None, pad_value=None, to="f32", multiplier=None, zero_point=None, rounding="nearest-even", axes=None, tile=None, channels="compact", batch=None, row_strides=None))]
    #[pyo3(
        text_signature = "(height, width, format='nv12', mean=0.0, std=1.0, divisor=255.0, bgr=False, border=(0, 0, 0, 0), pad_value=0, to='f32', multiplier=None, zero_point=0, rounding='nearest-even', axes=None, tile=None, channels='compact', batch=None, row_strides=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        height: &Bound<'_, PyAny>,
        width: &Bound<'_, PyAny>,
        format: &str,
        mean: Option<&Bound<'_, PyAny>>,
        std: Option<&Bound<'_, PyAny>>,
        divisor: Option<&Bound<'_, PyAny>>,
        bgr: bool,
        border: Option<&Bound<'_, PyAny>>,
        pad_value: Option<&Bound<'_, PyAny>>,
        to: &str,
        multiplier: Option<&Bound<'_, PyAny>>,
        zero_point: Option<&Bound<'_, PyAny>>,
        rounding: &str,
        axes: Option<&Bound<'_, PyAny>>,
        tile: Option<&Bound<'_, PyAny>>,
        channels: &str,
        batch: Option<&Bound<'_, PyAny>>,
        row_strides: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PreprocPlan> {
        guarded(py, || {
            let height = uint(py, height, "height", u64::MAX)?;
            let width = uint(py, width, "width", u64::MAX)?;
            let batch = batch
                .filter(|b| !b.is_none())
                .map(|b| uint(py, b, "batch", u64::MAX))
                .transpose()?;
            let d = Defaults::new(py)?;
            let settings = Settings::parse(
                py,
                format,
                mean.unwrap_or(&d.zero),
                std.unwrap_or(&d.one),
                divisor.unwrap_or(&d.divisor),
                bgr,
                border.unwrap_or(&d.border),
                pad_value.unwrap_or(&d.pad),
                to,
                multiplier,
                zero_point.unwrap_or(&d.pad),
                rounding,
                axes,
                tile,
                channels,
            )?;
            let format = settings.format;
            let row_strides = row_strides
                .filter(|r| !r.is_none())
                .map(|r| -> PyResult<Vec<u64>> {
                    let v = items(r)?
                        .iter()
                        .enumerate()
                        .map(|(i, s)| uint(py, s, &format!("row_strides[{i}]"), u64::MAX))
                        .collect::<PyResult<Vec<u64>>>()?;
                    if v.len() != format.planes() {
                        return Err(frame_error(
                            py,
                            PY_FRAME_SHAPE,
                            format!(
                                "row_strides has {} values; format {:?} has {} plane(s), one row stride each",
                                v.len(),
                                format.name(),
                                format.planes()
                            ),
                        ));
                    }
                    Ok(v)
                })
                .transpose()?;
            let frame = plan_frame(format, height, width, batch, row_strides.as_deref());
            let plan = settings.admit(py, &frame, None)?;
            Ok(PreprocPlan {
                prepared: a65::preproc::prepare(&plan),
                settings,
                row_strides,
            })
        })
    }

    /// Runs the plan on ``frame`` (the plan's format, size and batch; as for
    /// :func:`preprocess`) into ``out`` or a new array or buffer, over ``threads`` native
    /// threads (the GIL released).
    ///
    /// Raises:
    ///     SimakError: a frame of another size or batch (0x619), and the errors of
    ///         :func:`preprocess`.
    #[pyo3(signature = (frame, out=None, threads=1))]
    fn execute<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        threads: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(py, || {
            let threads = check_threads(threads)?;
            let f = self.prepared.plan().frame();
            run_call(
                py,
                &self.settings,
                frame,
                Some((f.height, f.width, f.batch)),
                out,
                threads,
                Some(&self.prepared),
            )
        })
    }

    /// The output shape: ``(H', W', C)`` or ``(N, H', W', C)``.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.prepared.plan().output_extents())
    }

    /// The frame's height in pixels.
    #[getter]
    fn height(&self) -> u64 {
        self.prepared.plan().frame().height
    }

    /// The frame's width in pixels.
    #[getter]
    fn width(&self) -> u64 {
        self.prepared.plan().frame().width
    }

    /// The format name.
    #[getter]
    fn format(&self) -> &'static str {
        self.settings.format.name()
    }

    /// The output kind: ``"f32"``, ``"i8"``, ``"quanttess"`` or ``"casttess"``.
    #[getter]
    fn to(&self) -> &'static str {
        self.settings.to.name()
    }

    /// The batch size, or ``None`` for one frame.
    #[getter]
    fn batch(&self) -> Option<u64> {
        self.prepared.plan().frame().batch
    }

    /// Bytes of the frame buffer the plan reads (its planes packed as admitted).
    #[getter]
    fn input_span(&self) -> u64 {
        self.prepared.plan().input_span()
    }

    /// Bytes of the output: the strided span, or the tiled capacity.
    #[getter]
    fn output_span(&self) -> u64 {
        self.prepared.plan().output_span()
    }

    /// The tiled output's :class:`Layout` (``dtype`` ``"i8"`` or ``"bf16"``), for
    /// :func:`untile` and sizing device buffers; ``None`` for the strided outputs.
    #[getter]
    fn layout(&self) -> Option<Layout> {
        match self.prepared.plan().output() {
            PlanOutput::QuantTess(view, _) => Some(Layout {
                view: *view,
                dtype: DType::I8,
            }),
            PlanOutput::CastTess(view) => Some(Layout {
                view: *view,
                dtype: DType::BF16,
            }),
            _ => None,
        }
    }

    /// The A65 path chosen once (a diagnostic name).
    #[getter]
    fn implementation(&self) -> &'static str {
        self.prepared.implementation()
    }

    /// Pickling: the plan's arguments, admitted again by the constructor when loaded.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let this = slf.get();
        let s = &this.settings;
        let f = this.prepared.plan().frame();
        let floats = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let b = &s.border;
        let quant = s.quant;
        let args: Vec<Bound<'py, PyAny>> = vec![
            f.height.into_pyobject(py)?.into_any(),
            f.width.into_pyobject(py)?.into_any(),
            PyString::new(py, s.format.name()).into_any(),
            floats(&s.mean).into_pyobject(py)?.into_any(),
            floats(&s.std).into_pyobject(py)?.into_any(),
            f64::from(s.divisor).into_pyobject(py)?.into_any(),
            PyBool::new(py, s.bgr).to_owned().into_any(),
            PyTuple::new(py, [b.top, b.bottom, b.left, b.right])?.into_any(),
            s.pad
                .iter()
                .map(|&v| u64::from(v))
                .collect::<Vec<u64>>()
                .into_pyobject(py)?
                .into_any(),
            PyString::new(py, s.to.name()).into_any(),
            quant
                .map(|q| f64::from(f32::from_bits(q.multiplier_bits)))
                .into_pyobject(py)?
                .into_any(),
            quant
                .map_or(0, |q| q.zero_point)
                .into_pyobject(py)?
                .into_any(),
            PyString::new(py, quant.map_or("nearest-even", |q| q.rounding.name())).into_any(),
            s.tiled
                .axes
                .map(|a| a.to_vec())
                .into_pyobject(py)?
                .into_any(),
            s.tiled
                .tile
                .map(|t| t.to_vec())
                .into_pyobject(py)?
                .into_any(),
            PyString::new(py, s.tiled.channels.name()).into_any(),
            f.batch.into_pyobject(py)?.into_any(),
            this.row_strides.clone().into_pyobject(py)?.into_any(),
        ];
        Ok((slf.get_type().into_any(), PyTuple::new(py, args)?))
    }

    fn __repr__(&self) -> String {
        let f = self.prepared.plan().frame();
        format!(
            "PreprocPlan(height={}, width={}, format={:?}, to={:?}, batch={}, shape={:?}, implementation={:?})",
            f.height,
            f.width,
            self.settings.format.name(),
            self.settings.to.name(),
            f.batch.map_or_else(|| "None".to_owned(), |n| n.to_string()),
            self.prepared.plan().output_extents(),
            self.prepared.implementation()
        )
    }
}

/// The frame a plan is made for: planes packed back to back as in one OpenCV array, with
/// the given row strides (`None`: rows of exactly their bytes), frames back to back.
fn plan_frame(
    format: Format,
    height: u64,
    width: u64,
    batch: Option<u64>,
    row_strides: Option<&[u64]>,
) -> Frame {
    let mut frame = Frame::packed(format, height, width);
    if let Some(strides) = row_strides {
        let mut at = 0u64;
        for (p, (plane, &stride)) in frame.planes.iter_mut().zip(strides).enumerate() {
            let (rows, _) = format.plane_shape(p, height, width);
            *plane = Plane {
                offset: at,
                row_stride: stride,
            };
            at = at.saturating_add(rows.saturating_mul(stride));
        }
        frame.frame_stride = at;
    }
    if let Some(n) = batch {
        frame = frame.with_batch(n);
    }
    if batch.unwrap_or(1) < 2 {
        frame.frame_stride = 0;
    }
    frame
}

/// Bytes from an array's first element to one past its last (nonnegative strides; 0 when
/// empty).
fn element_span(extents: &[u64], strides: &[u64]) -> u64 {
    if extents.contains(&0) {
        return 0;
    }
    extents
        .iter()
        .zip(strides)
        .map(|(&e, &s)| (e - 1) * s)
        .sum::<u64>()
        + 1
}
