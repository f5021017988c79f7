//! `simak untile` (a tiled buffer and its sidecar back to a logical `.npy`) and `simak
//! dequant` (INT8 back to FP32 as `(q - zero_point) / multiplier`).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::Args;
use safetensors::tensor::Dtype as StDtype;
use serde::Serialize;
use simak::DType;
use simak::layout::{Channels, MlaTiled};

use crate::detess::OutDType;
use crate::error::{CliError, bad_file, bad_tensor};
use crate::output::{Format, StOut, Staged, Target, same_file};
use crate::params::{distinct, exact_decimal, parse_dequant_zero_point, parse_multiplier};
use crate::read::{StFile, read_npy, st_dtype};
use crate::report::{self, Context, Done, shape_text};
use crate::tess::{Sidecar, buffer_crc32, sidecar_path, tile_pieces};

/// The largest sidecar read, in bytes: 1 MiB (a sidecar simak writes takes under 2 KiB; a
/// larger file is refused from its size before it is read).
pub const SIDECAR_MAX: u64 = 1 << 20;

/// Read a tiled buffer and its sidecar back into a logical .npy (BF16 as float32, INT8
/// as int8).
#[derive(Debug, Args)]
#[command(
    long_about = "Read a tiled buffer written by casttess or quanttess (and its sidecar \
    FILE.json) back into a logical row-major .npy: CastTess BF16 values as float32 \
    (exact: the BF16 bits shifted left by 16), QuantTess values as int8. The sidecar is \
    checked against the layout the library derives and against its own sidecar_crc32, \
    and the buffer must be exactly capacity_bytes long with the sidecar's buffer_crc32 \
    (else the two files come from different runs, or one was edited: exit 2). Without \
    --output, the default INPUT with extension .npy must not exist."
)]
pub struct UntileArgs {
    /// The tiled buffer (its sidecar is INPUT.json).
    #[arg(value_name = "INPUT")]
    input: PathBuf,
    /// The logical .npy to write [default: INPUT with extension .npy, which must not exist:
    /// only a file named here is ever replaced].
    #[arg(long, value_name = "PATH")]
    output: Option<PathBuf>,
}

/// What `simak untile` did.
#[derive(Debug, Serialize)]
pub struct UntileSummary {
    command: &'static str,
    input: String,
    sidecar_path: String,
    output: String,
    op: String,
    shape: Vec<u64>,
    tiled_dtype: String,
    npy_dtype: &'static str,
    elements: u64,
    capacity_bytes: u64,
}

/// The `.npy` path `simak untile X` writes by default: `X` with extension `.npy`.
pub fn default_untile_output(input: &Path) -> PathBuf {
    input.with_extension("npy")
}

/// Checks a sidecar and admits its layout.
fn admit_sidecar(path: &Path, s: &Sidecar) -> Result<simak::layout::TiledView, CliError> {
    let bad = |rule: String| bad_file(path, rule);
    let planes = match (s.op.as_str(), s.output_dtype.as_str()) {
        ("casttess", "bf16") => 2,
        ("quanttess", "i8") => 1,
        (op @ ("casttess" | "quanttess"), dt) => {
            return Err(bad(format!(
                "sidecar: output_dtype {dt:?} does not match op {op:?}"
            )));
        }
        (op, _) => {
            return Err(bad(format!(
                "sidecar: op {op:?} is neither \"casttess\" nor \"quanttess\""
            )));
        }
    };
    if !matches!(s.input_dtype.as_str(), "f32" | "bf16" | "f16") {
        return Err(bad(format!(
            "sidecar: input_dtype {:?} is none of \"f32\", \"bf16\", \"f16\"",
            s.input_dtype
        )));
    }
    let channels = match s.channels.as_str() {
        "compact" => Channels::Compact,
        "pad16" => Channels::PadTo16,
        other => {
            return Err(bad(format!(
                "sidecar: channels {other:?} is neither \"compact\" nor \"pad16\""
            )));
        }
    };
    let mut axes = [None; 4];
    for (slot, &a) in axes.iter_mut().zip(s.axes.iter()) {
        *slot = match a {
            -1 => None,
            0..=5 => Some(a as u8),
            _ => {
                return Err(bad(format!(
                    "sidecar: axis {a} is neither -1 nor a logical axis 0..=5"
                )));
            }
        };
    }
    let view = MlaTiled::new(axes, s.tile, channels)
        .admit(&s.shape, planes)
        .map_err(|e| bad(format!("sidecar: {e}")))?;
    for (key, stated, derived) in [
        ("capacity_bytes", s.capacity_bytes, view.capacity()),
        ("tiles_per_outer", s.tiles_per_outer, view.tiles_per_outer()),
        ("outer_count", s.outer_count, view.outer_count()),
    ] {
        if stated != derived {
            return Err(bad(format!(
                "sidecar: {key} is {stated} but the layout gives {derived}"
            )));
        }
    }
    Ok(view)
}

/// Runs `simak untile`.
///
/// # Errors
///
/// Bad input (exit 2) for a missing or inconsistent sidecar, a buffer whose length or
/// CRC-32 is not the sidecar's (a pair from different runs), an output equal to an input,
/// a default output name that exists; internal otherwise.
pub fn run_untile(args: UntileArgs, ctx: &Context) -> Result<Done<UntileSummary>, CliError> {
    let input = args.input.as_path();
    let side = sidecar_path(input);
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| default_untile_output(input));
    // The buffer first: a wrong buffer path should be reported as such, not as its sidecar.
    if let Err(e) = std::fs::metadata(input) {
        return Err(bad_file(input, format!("cannot read: {e}")));
    }
    for target in [input, side.as_path()] {
        if same_file(target, &output) || target == output {
            return Err(bad_file(
                input,
                format!(
                    "--output {} is an input file; choose another path",
                    output.display()
                ),
            ));
        }
    }
    let target = match &args.output {
        Some(path) => Target::new("--output", path, Format::Npy)?,
        None => Target::derived(
            "the default output (INPUT with extension .npy)",
            "--output",
            &output,
            Format::Npy,
        )?,
    };
    let side_bytes = crate::read::read_input(
        &side,
        " the sidecar",
        crate::read::Expect::AtMost(SIDECAR_MAX),
    )?;
    let side_text = String::from_utf8(side_bytes)
        .map_err(|e| bad_file(&side, format!("malformed sidecar: not UTF-8: {e}")))?;
    let sidecar: Sidecar = serde_json::from_str(&side_text)
        .map_err(|e| bad_file(&side, format!("malformed sidecar: {e}")))?;
    let view = admit_sidecar(&side, &sidecar)?;
    let (Some(crc), Some(own)) = (&sidecar.buffer_crc32, &sidecar.sidecar_crc32) else {
        return Err(bad_file(
            &side,
            "sidecar: no buffer_crc32 or sidecar_crc32 (written by an older simak): re-run casttess or quanttess to write the buffer and its sidecar again",
        ));
    };
    let actual_own = sidecar.own_crc32();
    if !actual_own.eq_ignore_ascii_case(own) {
        return Err(bad_file(
            &side,
            format!(
                "sidecar: its fields have CRC-32 {actual_own}, not its sidecar_crc32 {own}: the sidecar was edited; re-run casttess or quanttess"
            ),
        ));
    }
    // The buffer's size against the sidecar's capacity before reading it.
    let tiled_size = crate::read::file_size(input, "")?;
    if tiled_size != view.capacity() {
        return Err(bad_file(
            input,
            format!(
                "holds {} bytes but its sidecar {} has a capacity of {} bytes (a buffer and a sidecar of different runs?)",
                tiled_size,
                side.display(),
                view.capacity()
            ),
        ));
    }
    let tiled = crate::read::read_input(input, "", crate::read::Expect::AtMost(view.capacity()))?;
    let actual = buffer_crc32(&tiled);
    if !actual.eq_ignore_ascii_case(crc) {
        return Err(bad_file(
            input,
            format!(
                "CRC-32 {actual} does not match buffer_crc32 {crc} of its sidecar {}: the two files come from different runs (or the buffer changed); re-run casttess or quanttess",
                side.display()
            ),
        ));
    }
    let planes = view.planes();
    let elements = view.elements();
    let bar = ctx.progress("untile", 1, elements);
    let shape = sidecar.shape.clone();
    let oom = |bytes: u64| {
        bad_file(
            input,
            format!("cannot allocate the logical tensor ({bytes} bytes): out of memory"),
        )
    };
    // The library's Detess ops (SPEC §12: untile is Detess at offset 0): CastTess BF16
    // straight to FP32 (DetessCast), QuantTess INT8 unchanged (Detess).
    let detessed = detess_buffer(&view, &tiled).map_err(|e| match e {
        UntileFailure::OutOfMemory => oom(elements.saturating_mul(4)),
        UntileFailure::Library(e) => CliError::Internal(anyhow!("untile: {e}")),
        UntileFailure::Piece(e) => CliError::Internal(anyhow!("untile: {e}")),
        UntileFailure::Execute(e) => CliError::Internal(anyhow!("untile: {e}")),
    })?;
    let (staged, npy_dtype) = if let Some(values) = detessed {
        bar.inc(elements);
        bar.finish_and_clear();
        if planes == 2 {
            let staged =
                target.stage_npy::<f32>(&shape, npyz::Order::C, |w| w.write_all(&values))?;
            (staged, "float32")
        } else {
            let staged =
                target.stage_npy::<i8>(&shape, npyz::Order::C, |w| w.write_all(&values))?;
            (staged, "int8")
        }
    } else {
        // A PadTo16 layout whose C tile is neither C nor a multiple of 16: SPEC §5's
        // input-side layouts allow it, the Detess ops' c16 rule does not (SPEC §12.1); the
        // layout's own untile reads it.
        let logical = untile_in_pieces(&view, &tiled, &|n| bar.inc(n)).map_err(|e| match e {
            UntileFailure::OutOfMemory => oom(elements.saturating_mul(planes as u64)),
            UntileFailure::Library(e) => CliError::Internal(anyhow!("untile: {e}")),
            UntileFailure::Piece(e) => CliError::Internal(anyhow!("untile: a piece: {e}")),
            UntileFailure::Execute(e) => CliError::Internal(anyhow!("untile: {e}")),
        })?;
        bar.finish_and_clear();
        if planes == 2 {
            // BF16 → FP32 is exact: the bits shifted left by 16.
            let staged = target.stage_npy::<f32>(&shape, npyz::Order::C, |w| {
                let mut buf = Vec::with_capacity(64 << 10);
                for block in logical.chunks(32 << 10) {
                    buf.clear();
                    for pair in block.chunks_exact(2) {
                        let bits = u32::from(u16::from_le_bytes([pair[0], pair[1]])) << 16;
                        buf.extend_from_slice(&bits.to_le_bytes());
                    }
                    w.write_all(&buf)?;
                }
                Ok(())
            })?;
            (staged, "float32")
        } else {
            let staged =
                target.stage_npy::<i8>(&shape, npyz::Order::C, |w| w.write_all(&logical))?;
            (staged, "int8")
        }
    };
    let summary = UntileSummary {
        command: "untile",
        input: input.display().to_string(),
        sidecar_path: side.display().to_string(),
        output: output.display().to_string(),
        op: sidecar.op.clone(),
        shape: sidecar.shape.clone(),
        tiled_dtype: sidecar.output_dtype.clone(),
        npy_dtype,
        elements,
        capacity_bytes: view.capacity(),
    };
    Ok(Done::new(summary, vec![staged]))
}

impl report::Summary for UntileSummary {
    fn text(&self) -> String {
        format!(
            "simak untile: {} ({} {} {}, {} bytes tiled) -> {} ({} {}, {} elements{})\n",
            self.input,
            self.op,
            self.tiled_dtype,
            shape_text(&self.shape),
            self.capacity_bytes,
            self.output,
            self.npy_dtype,
            shape_text(&self.shape),
            self.elements,
            // BF16 values are written as float32, exactly.
            if self.npy_dtype == "float32" {
                ", exact BF16 values"
            } else {
                ""
            }
        )
    }
}

/// The row-major values of a simak tiled buffer through the library's Detess ops (SPEC
/// §12): BF16 (two planes) as FP32 by DetessCast, INT8 unchanged by Detess. `None` when
/// the Detess ops do not admit the layout (the c16 tile-channel rule of SPEC §12.1, which
/// SPEC §5's input-side PadTo16 layouts need not follow).
fn detess_buffer(
    view: &simak::layout::TiledView,
    tiled: &[u8],
) -> Result<Option<Vec<u8>>, UntileFailure> {
    use simak::ops::detess::DynRequest;
    let shape = &view.extents()[..view.rank()];
    let bf16 = view.planes() == 2;
    let request = DynRequest {
        input: simak::ops::casttess::TiledSpec {
            extents: shape,
            dtype: if bf16 { DType::BF16 } else { DType::I8 },
            layout: *view.layout(),
        },
        output: simak::DynSpec::contiguous(shape, if bf16 { DType::F32 } else { DType::I8 }),
    };
    let plan = if bf16 {
        simak::ops::detesscast::check_inference_dyn(&request).map(|p| {
            let prepared = simak::a65::detesscast::prepare(&p);
            (
                p.output().span(),
                Box::new(move |i: &[u8], o: &mut [u8]| {
                    simak::a65::detesscast::execute(&prepared, i, o)
                })
                    as Box<dyn Fn(&[u8], &mut [u8]) -> Result<(), simak::a65::ExecuteError>>,
            )
        })
    } else {
        simak::ops::detess::check_inference_dyn(&request).map(|p| {
            let prepared = simak::a65::detess::prepare(&p);
            (
                p.output().span(),
                Box::new(move |i: &[u8], o: &mut [u8]| simak::a65::detess::execute(&prepared, i, o))
                    as Box<dyn Fn(&[u8], &mut [u8]) -> Result<(), simak::a65::ExecuteError>>,
            )
        })
    };
    let (span, run) = match plan {
        Ok(p) => p,
        Err(simak::AdmissionError::C16TileChannels { .. }) => return Ok(None),
        Err(e) => return Err(UntileFailure::Piece(e)),
    };
    let capacity = tiled.len();
    // The tiled bytes at a 16-byte aligned address (SPEC §12.1).
    let copy;
    let input = if tiled.as_ptr().align_offset(16) == 0 {
        tiled
    } else {
        let mut v = simak::ev74::sim::try_zeroed::<u8>(capacity + 16)
            .map_err(|_| UntileFailure::OutOfMemory)?;
        let skew = v.as_ptr().align_offset(16).min(16);
        v[skew..skew + capacity].copy_from_slice(tiled);
        copy = v;
        &copy[skew..skew + capacity]
    };
    let mut out = simak::ev74::sim::try_zeroed::<u8>(span as usize)
        .map_err(|_| UntileFailure::OutOfMemory)?;
    run(input, &mut out).map_err(UntileFailure::Execute)?;
    Ok(Some(out))
}

/// Why [`untile_in_pieces`] failed.
enum UntileFailure {
    /// The logical tensor or a piece's buffer could not be allocated.
    OutOfMemory,
    /// The library refused (an internal failure: the buffer was checked against the view).
    Library(simak::layout::UntileError),
    /// A piece's layout was refused (an internal failure: pieces follow the admitted view).
    Piece(simak::AdmissionError),
    /// The Detess op refused the buffers (an internal failure: they were built for it).
    Execute(simak::a65::ExecuteError),
}

/// The logical row-major bytes of `tiled` under `view`, untiled piece by piece (the pieces
/// of [`tile_pieces`]), calling `progress` with each piece's elements. A piece narrows one
/// logical axis `a`, so in row-major order it is `prod(extents[..a])` blocks of
/// `len · prod(extents[a + 1..])` elements, each copied to its place.
fn untile_in_pieces(
    view: &simak::layout::TiledView,
    tiled: &[u8],
    progress: &dyn Fn(u64),
) -> Result<Vec<u8>, UntileFailure> {
    let planes = view.planes() as u64;
    let shape = &view.extents()[..view.rank()];
    let len = usize::try_from(view.elements().saturating_mul(planes))
        .map_err(|_| UntileFailure::OutOfMemory)?;
    let mut logical =
        simak::ev74::sim::try_zeroed::<u8>(len).map_err(|_| UntileFailure::OutOfMemory)?;
    let mut at = 0usize;
    for p in tile_pieces(view) {
        let axis = p.piece.axis;
        let mut sub_shape = shape.to_vec();
        if let Some(e) = sub_shape.get_mut(axis) {
            *e = p.piece.len;
        }
        let sub = p
            .layout
            .admit(&sub_shape, view.planes() as u8)
            .map_err(UntileFailure::Piece)?;
        let capacity = sub.capacity() as usize;
        let piece_bytes = tiled.get(at..at + capacity).unwrap_or(&[]);
        let mut part = simak::ev74::sim::try_zeroed::<u8>((sub.elements() * planes) as usize)
            .map_err(|_| UntileFailure::OutOfMemory)?;
        sub.untile(piece_bytes, &mut part)
            .map_err(UntileFailure::Library)?;
        at += capacity;
        // Row-major blocks: outer = prod(shape[..axis]), block = len · inner.
        let inner: u64 = shape.get(axis + 1..).unwrap_or(&[]).iter().product();
        let outer: u64 = shape.get(..axis).unwrap_or(&[]).iter().product();
        let block = (p.piece.len * inner * planes) as usize;
        let full_block = (shape.get(axis).copied().unwrap_or(1) * inner * planes) as usize;
        let first = (p.piece.start * inner * planes) as usize;
        for k in 0..outer as usize {
            let src = &part[k * block..(k + 1) * block];
            let dst = k * full_block + first;
            logical[dst..dst + block].copy_from_slice(src);
        }
        progress(sub.elements());
    }
    if at as u64 != view.capacity() {
        return Err(UntileFailure::Library(simak::layout::UntileError::Tiled {
            required: view.capacity(),
            found: at as u64,
        }));
    }
    Ok(logical)
}

/// Turn INT8 / INT16 / INT32 back into floats: (q - zero_point) / multiplier.
#[derive(Debug, Args)]
#[command(
    long_about = "Turn INT8, INT16 or INT32 back into FP32 (or FP16, BF16 with --out-dtype) \
    as x = (q - zero_point) / multiplier (SPEC §12.2): q - zero_point rounded once to \
    binary32 (exact for INT8 and INT16), then one binary32 division (round to \
    nearest-even), then the output dtype's rounding. .npy: an int8, int16 or int32 array \
    with --multiplier and --zero-point (default 0; in the input dtype's range); the output \
    is a .npy of the same shape and order (float32 or float16: .npy cannot hold \
    bfloat16). .safetensors: every I8 tensor carrying simak.<tensor>.multiplier_bits \
    metadata (as written by `simak quant`), or those named with --tensor (I8, I16 or I32), \
    with their own zero point; the output has the dequantized tensors in --out-dtype, the \
    other tensors copied, and the input's metadata less the simak.<tensor>.* keys of the \
    dequantized tensors. Library refusals carry their code (docs/errors.md)."
)]
pub struct DequantArgs {
    /// An int8, int16 or int32 .npy, or a .safetensors file (as written by `simak quant`,
    /// or with tensors named by --tensor).
    #[arg(value_name = "INPUT")]
    input: PathBuf,
    /// Output; its format follows the input.
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
    /// Dequantize only this tensor (safetensors; repeatable).
    #[arg(long = "tensor", value_name = "NAME")]
    tensors: Vec<String>,
    /// The multiplier M the data was quantized with (.npy only).
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    multiplier: Option<String>,
    /// The zero point (.npy only) [default: 0]; in the input dtype's range.
    #[arg(long, value_name = "Z", allow_hyphen_values = true)]
    zero_point: Option<String>,
    /// The output dtype.
    #[arg(long, value_enum, value_name = "DTYPE", default_value_t = OutDType::F32)]
    out_dtype: OutDType,
}

/// Elements dequantized per call (the progress bar advances by as many).
const DEQUANT_CHUNK: usize = 1 << 20;

/// The `out` little-endian bytes of the `dtype` codes `q` (INT8, INT16 or INT32,
/// little-endian), dequantized by the library's Dequant op on the A65 (SPEC §12.2),
/// advancing `bar` every 2^20 elements.
///
/// # Errors
///
/// The library's refusal of the parameters, with its code (a zero point outside the
/// dtype's range), and the out-of-memory error when the output cannot be allocated.
fn dequant_bytes(
    q: &[u8],
    dtype: DType,
    out: DType,
    zero_point: i32,
    multiplier_bits: u32,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<u8>, String> {
    use simak::ops::dequant::{DynRequest, Params, check_inference_dyn};
    let (e, o) = (dtype.size(), out.size());
    let n = q.len() / e;
    let plan = |len: usize| {
        let extents = [len as u64];
        check_inference_dyn(&DynRequest {
            input: simak::DynSpec::contiguous(&extents, dtype),
            output: simak::DynSpec::contiguous(&extents, out),
            params: Params::from_bits(multiplier_bits).with_zero_point(zero_point),
        })
        .map(|p| simak::a65::dequant::prepare(&p))
        .map_err(|e| crate::detess::coded(&e))
    };
    let full = plan(DEQUANT_CHUNK.min(n))?;
    let mut y = crate::engine::try_zeroed("the dequantized output", n.saturating_mul(o))
        .map_err(|e| e.to_string())?;
    // The codes at an address aligned to their size (a safetensors tensor may sit at any
    // offset).
    let copy;
    let q = if q.as_ptr().align_offset(e) == 0 {
        q
    } else {
        let mut v =
            crate::engine::try_zeroed("the codes", q.len() + e).map_err(|e| e.to_string())?;
        let skew = v.as_ptr().align_offset(e).min(e);
        v[skew..skew + q.len()].copy_from_slice(q);
        copy = v;
        &copy[skew..skew + q.len()]
    };
    for (qs, ys) in q
        .chunks(DEQUANT_CHUNK * e)
        .zip(y.chunks_mut(DEQUANT_CHUNK * o))
    {
        let len = qs.len() / e;
        let prepared = if len == DEQUANT_CHUNK.min(n) {
            full.clone()
        } else {
            plan(len)?
        };
        simak::a65::dequant::execute(&prepared, qs, ys).map_err(|e| format!("internal: {e}"))?;
        bar.inc(len as u64);
    }
    Ok(y)
}

#[derive(Debug, Serialize)]
struct DequantRow {
    name: String,
    shape: Vec<u64>,
    multiplier_bits: String,
    multiplier: String,
    zero_point: i32,
    elements: u64,
}

/// What `simak dequant` did.
#[derive(Debug, Serialize)]
pub struct DequantSummary {
    command: &'static str,
    input: String,
    output: String,
    format: &'static str,
    out_dtype: &'static str,
    tensors: Vec<DequantRow>,
    copied: Vec<String>,
}

fn row(name: String, shape: &[u64], bits: u32, zero_point: i32) -> DequantRow {
    DequantRow {
        name,
        shape: shape.to_vec(),
        multiplier_bits: format!("0x{bits:08x}"),
        multiplier: exact_decimal(bits),
        zero_point,
        elements: shape.iter().product(),
    }
}

/// Runs `simak dequant`.
///
/// # Errors
///
/// Bad input (exit 2): unsupported file, non-integer data, missing or conflicting parameters,
/// missing `simak.<t>.*` metadata; internal otherwise.
pub fn run_dequant(args: DequantArgs, ctx: &Context) -> Result<Done<DequantSummary>, CliError> {
    let input = args.input.as_path();
    let out = DType::from(args.out_dtype);
    let multiplier = match &args.multiplier {
        Some(t) => Some(parse_multiplier(t).map_err(|e| bad_file(input, e))?),
        None => None,
    };
    let zero_point = match &args.zero_point {
        Some(t) => Some(parse_dequant_zero_point(t).map_err(|e| bad_file(input, e))?),
        None => None,
    };
    let tensors = distinct(args.tensors)?;
    let ext = input
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let format = match ext.as_deref() {
        Some("npy") => "npy",
        Some("safetensors") => "safetensors",
        _ => {
            return Err(bad_file(
                input,
                "unsupported input file type (dequant reads int8, int16 and int32 .npy files and .safetensors files written by simak quant)",
            ));
        }
    };
    let target = Target::new(
        "--output",
        &args.output,
        if format == "npy" {
            Format::Npy
        } else {
            Format::Safetensors
        },
    )?;
    target.not_input("--output", input)?;
    let expect = if format == "npy" {
        crate::read::Expect::Npy
    } else {
        crate::read::Expect::Safetensors
    };
    let bytes = crate::read::read_input(input, "", expect)?;
    let (rows, copied, staged) = if format == "npy" {
        if !tensors.is_empty() {
            return Err(bad_file(
                input,
                "--tensor applies to .safetensors inputs only (a .npy file holds one tensor)",
            ));
        }
        if out == DType::BF16 {
            return Err(bad_file(
                &args.output,
                "a .npy file cannot hold bfloat16: write a .safetensors output, or --out-dtype f32 or f16",
            ));
        }
        let Some(m) = &multiplier else {
            return Err(bad_file(
                input,
                "--multiplier is required for a .npy input (a .safetensors file from simak quant carries its own)",
            ));
        };
        let zp = zero_point.unwrap_or(0);
        let array = read_npy(
            input,
            &bytes,
            &[DType::I8, DType::I16, DType::I32],
            "dequant takes int8, int16 and int32 .npy files",
        )?;
        let bar = ctx.progress("dequant", 1, array.shape.iter().product());
        let data = dequant_bytes(array.data.as_slice(), array.dtype, out, zp, m.bits, &bar)
            .map_err(|e| bad_file(input, e))?;
        bar.finish_and_clear();
        let shape = array.shape.clone();
        let body = |w: &mut dyn std::io::Write| w.write_all(&data);
        let staged = if out == DType::F16 {
            target.stage_npy::<half::f16>(&shape, array.order(), body)?
        } else {
            target.stage_npy::<f32>(&shape, array.order(), body)?
        };
        let name = crate::read::file_name(input);
        (vec![row(name, &shape, m.bits, zp)], Vec::new(), staged)
    } else {
        if multiplier.is_some() || zero_point.is_some() {
            return Err(bad_file(
                input,
                "--multiplier and --zero-point apply to .npy inputs; a .safetensors file's parameters come from its simak.<tensor>.* metadata",
            ));
        }
        dequant_safetensors(input, &tensors, out, ctx, &target, &bytes)?
    };
    let summary = DequantSummary {
        command: "dequant",
        input: input.display().to_string(),
        output: args.output.display().to_string(),
        format,
        out_dtype: out.name(),
        tensors: rows,
        copied,
    };
    Ok(Done::new(summary, vec![staged]))
}

impl report::Summary for DequantSummary {
    fn text(&self) -> String {
        let mut text = format!(
            "simak dequant: {} ({}) -> {}: x = (q - zero_point) / multiplier in binary32, as {}\n",
            self.input, self.format, self.output, self.out_dtype
        );
        for r in &self.tensors {
            text.push_str(&format!(
                "{}  {}  multiplier {} ({})  zero point {}  {} elements\n",
                r.name,
                shape_text(&r.shape),
                r.multiplier_bits,
                r.multiplier,
                r.zero_point,
                r.elements
            ));
        }
        if !self.copied.is_empty() {
            text.push_str(&format!("copied unchanged: {}\n", self.copied.join(", ")));
        }
        text
    }
}

/// The integer dtypes `simak dequant` reads from a safetensors file.
fn int_dtype(dtype: StDtype) -> Option<DType> {
    match dtype {
        StDtype::I8 => Some(DType::I8),
        StDtype::I16 => Some(DType::I16),
        StDtype::I32 => Some(DType::I32),
        _ => None,
    }
}

fn dequant_safetensors(
    file: &Path,
    tensors: &[String],
    out: DType,
    ctx: &Context,
    target: &Target,
    bytes: &[u8],
) -> Result<(Vec<DequantRow>, Vec<String>, Staged), CliError> {
    let st = StFile::open(file, bytes)?;
    let names = &st.names;
    let mut meta: HashMap<String, String> = st.metadata.clone();
    let key = |t: &str, k: &str| format!("simak.{t}.{k}");
    let has_params = |t: &str| meta.contains_key(&key(t, "multiplier_bits"));
    let selected: BTreeSet<String> = if tensors.is_empty() {
        let all: BTreeSet<String> = names
            .iter()
            .filter(|n| {
                st.tensor(n)
                    .is_ok_and(|v| st_dtype(v.dtype()) == Some(DType::I8))
                    && has_params(n)
            })
            .cloned()
            .collect();
        if all.is_empty() {
            return Err(bad_file(
                file,
                "no I8 tensor with simak.<tensor>.multiplier_bits metadata (write the file with simak quant)",
            ));
        }
        all
    } else {
        for name in tensors {
            let v = st.named(name)?;
            if int_dtype(v.dtype()).is_none() {
                return Err(bad_tensor(
                    file,
                    name,
                    format!(
                        "dtype {} is not supported (dequant takes I8, I16 and I32)",
                        v.dtype()
                    ),
                ));
            }
            if !has_params(name) {
                return Err(bad_tensor(
                    file,
                    name,
                    format!("no {} metadata", key(name, "multiplier_bits")),
                ));
            }
        }
        tensors.iter().cloned().collect()
    };
    let mut total = 0u64;
    for name in &selected {
        total = total.saturating_add(st.tensor(name).map_or(0, |v| v.data().len() as u64));
    }
    let bar = ctx.progress("dequant", selected.len(), total);
    let mut rows = Vec::new();
    let mut copied = Vec::new();
    let mut outputs: Vec<(String, StOut<'_>)> = Vec::with_capacity(names.len());
    for name in names {
        let v = st.tensor(name)?;
        if !selected.contains(name) {
            copied.push(name.clone());
            outputs.push((name.clone(), StOut::Copied(v)));
            continue;
        }
        let bits_text = &meta[&key(name, "multiplier_bits")];
        let m = parse_multiplier(bits_text).map_err(|e| {
            bad_tensor(file, name, format!("{}: {e}", key(name, "multiplier_bits")))
        })?;
        // Both keys or neither: a multiplier without its zero point would decode every value
        // with an assumed 0 (simak quant writes both).
        let zp_key = key(name, "zero_point");
        let zp_text = meta.get(&zp_key).ok_or_else(|| {
            bad_tensor(
                file,
                name,
                format!(
                    "{} is given but {zp_key} is missing (simak quant writes both)",
                    key(name, "multiplier_bits")
                ),
            )
        })?;
        let zp = parse_dequant_zero_point(zp_text)
            .map_err(|e| bad_tensor(file, name, format!("{zp_key}: {e}")))?;
        let dtype = int_dtype(v.dtype()).unwrap_or(DType::I8);
        let shape: Vec<u64> = v.shape().iter().map(|&e| e as u64).collect();
        rows.push(row(name.clone(), &shape, m.bits, zp));
        outputs.push((
            name.clone(),
            StOut::Converted {
                dtype: match out {
                    DType::F16 => StDtype::F16,
                    DType::BF16 => StDtype::BF16,
                    _ => StDtype::F32,
                },
                shape: v.shape().to_vec(),
                data: dequant_bytes(v.data(), dtype, out, zp, m.bits, &bar)
                    .map_err(|e| bad_tensor(file, name, e))?,
            },
        ));
    }
    bar.finish_and_clear();
    // The simak.<t>.* keys describe INT8 data; drop them for the tensors now in FP32.
    for name in &selected {
        for k in [
            "multiplier_bits",
            "zero_point",
            "rounding",
            "input_dtype",
            "calibration",
        ] {
            meta.remove(&key(name, k));
        }
    }
    let staged = target.stage_safetensors(outputs, meta)?;
    Ok((rows, copied, staged))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn dequant_bytes_are_the_library_division() {
        let bar = indicatif::ProgressBar::hidden();
        let bytes = dequant_bytes(
            &[10, 0x80, 1],
            DType::I8,
            DType::F32,
            3,
            0.5f32.to_bits(),
            &bar,
        )
        .unwrap();
        let values: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        // (10 - 3) / 0.5, (-128 - 3) / 0.5, (1 - 3) / 0.5: exact in binary32.
        assert_eq!(values, [14.0, -262.0, -4.0]);
        assert!(dequant_bytes(&[1], DType::I8, DType::F32, 200, 0.5f32.to_bits(), &bar).is_err());
        assert_eq!(
            default_untile_output(Path::new("a/out.bin")),
            PathBuf::from("a/out.npy")
        );
    }
}
