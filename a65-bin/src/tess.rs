//! `simak casttess` and `simak quanttess`: convert a tensor (`.npy`, one tensor of a
//! `.safetensors` file, or a PNG / JPEG image as HWC FP32) into the `MlaTiled` layout
//! (SPEC §4, §5) and write the physical buffer plus a JSON sidecar describing it.
//!
//! Both targets are checked before the input is read. Both files are written in full to
//! staging files first and published only when both are complete, the buffer before its
//! sidecar ([`crate::report::finish`]); the sidecar records the buffer's length and
//! CRC-32, so a reader can tell a buffer and a sidecar of different runs apart.
//!
//! A large tensor runs in pieces ([`tile_pieces`]), each a request of its own whose tiles
//! are one range of the output, so that the progress bar advances within it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use serde::{Deserialize, Serialize};
use simak::DType;
use simak::layout::{MlaTiled, TiledView};
use simak::ops::casttess::TiledSpec;
use simak::ops::quant::Params;
use simak::ops::{casttess, quanttess};
use simak::{a65, ev74};

use crate::engine::{self, AlignedBuf, Backend, EngineError, Piece, Tensor};
use crate::error::{CliError, Subject, bad_file};
use crate::output::{Format, Target};
use crate::params::{BackendArg, LayoutFlags, NpyDtypeArg, exact_decimal, parse_rgb, parse_std};
use crate::quant::{Quantization, ScaleArgs};
use crate::read::{self, InputKind, Normalize};
use crate::report::{self, Context, Done, rate_text, shape_text};

/// The input, output and layout flags of casttess and quanttess.
#[derive(Debug, Args)]
pub struct TessArgs {
    /// Input: .npy, .safetensors, .png, .jpg or .jpeg.
    #[arg(long, value_name = "PATH")]
    input: PathBuf,
    /// The tensor to convert (safetensors; default: the file's only tensor).
    #[arg(long, value_name = "NAME")]
    tensor: Option<String>,
    /// .npy inputs: read the elements as DTYPE. bf16 reads ml_dtypes' bfloat16 files (descr
    /// <V2, 2-byte raw data: numpy has no name for bfloat16); any other descr is refused.
    #[arg(long, value_enum, value_name = "DTYPE")]
    dtype: Option<NpyDtypeArg>,
    /// The physical buffer to write; the sidecar goes to PATH.json.
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
    #[command(flatten)]
    layout: LayoutFlags,
    /// Images: per-channel mean subtracted after scaling to [0, 1] [default: 0,0,0].
    #[arg(long, value_name = "R,G,B", value_parser = parse_rgb, allow_hyphen_values = true)]
    mean: Option<[f32; 3]>,
    /// Images: per-channel standard deviation divided by (each > 0) [default: 1,1,1].
    #[arg(long, value_name = "R,G,B", value_parser = parse_std, allow_hyphen_values = true)]
    std: Option<[f32; 3]>,
    /// Images: the largest FP32 tensor an image may decode to, in MiB (12 bytes per pixel;
    /// also the decoder's allocation limit). The default, 1024, admits a 48-megapixel RGB
    /// photo (8000 x 6000 x 3 FP32, 576 MB).
    #[arg(long, value_name = "MIB", default_value_t = crate::read::IMAGE_DEFAULT_LIMIT >> 20,
          value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    image_limit: u64,
    /// A65 threads: each piece of the tensor runs as T pieces of whole tiles
    /// (`Prepared::split`), one per thread; the bytes do not depend on T. 1 to 256;
    /// --backend a65 only.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = crate::params::threads_parser())]
    threads: u64,
}

/// Convert a tensor or image to BF16 in the MlaTiled layout (writes OUT and OUT.json).
#[derive(Debug, Args)]
#[command(
    long_about = "Convert a tensor or image to BF16 in the MlaTiled layout of the ML \
    accelerator (SPEC §4, §5): FP32 -> BF16 rounds to nearest-even on the bits (NaNs \
    wrap as the integer formula does), FP16 -> BF16 rounds the exact value, BF16 is \
    copied.\n\n\
    Inputs: .npy (float32, float16; C or Fortran order), .safetensors (the tensor named \
    by --tensor, or the only one; F32, BF16, F16), PNG and JPEG images (decoded under \
    limits of 16384 x 16384 pixels and --image-limit, 1024 MiB by default, which admits \
    a 48-megapixel photo; converted to RGB, then HWC FP32 [H, W, 3] as (p / 255 - mean) \
    / std in binary32; 65535 for 16-bit images).\n\n\
    --axes D,H,W,C names the logical axis playing each role (-1 absent); the other \
    axes are outer axes. --tile D,H,W,C gives the tile extents. Writes the physical \
    buffer (capacity bytes, zero padding) to --output and a JSON sidecar to \
    OUTPUT.json (op, shape, input_dtype, output_dtype, axes, tile, channels, \
    capacity_bytes, tiles_per_outer, outer_count, buffer_crc32: the CRC-32 of the \
    buffer, sidecar_crc32: the CRC-32 of the sidecar's own fields), both atomically; \
    `simak untile` reads them back and refuses a pair whose checksums do not match."
)]
pub struct CastTessArgs {
    #[command(flatten)]
    tess: TessArgs,
    /// Execution backend: a65 (host cores) or ev74-sim (EV74 firmware on the host
    /// simulator).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BackendArg::A65)]
    backend: BackendArg,
    /// EV74 worker ring size, 1 to 4 (with --backend ev74-sim only; 4 when not given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4))]
    workers: Option<u64>,
}

/// Quantize a tensor or image to INT8 in the MlaTiled layout (writes OUT and OUT.json).
#[derive(Debug, Args)]
#[command(
    long_about = "Quantize a tensor or image to INT8 (SPEC §3) in the MlaTiled layout \
    (SPEC §5), on the A65 (QuantTess has no EV74 entry). Inputs, --axes, --tile, \
    --channels and the sidecar are as for casttess; the sidecar adds multiplier_bits, \
    zero_point and rounding. The quant flags are those of `simak quant`."
)]
#[command(
    mut_arg("multiplier", |a| a.help("The multiplier M, as for `simak quant`")),
    mut_arg("calibrate", |a| a.help(
        "Pick the multiplier from the data (absmax: 127 / max|x|), as for `simak quant`"
    )),
    mut_arg("zero_point", |a| a.help("Zero point in [-128, 127]. Default 0. Not with --calibrate")),
)]
pub struct QuantTessArgs {
    #[command(flatten)]
    tess: TessArgs,
    // --multiplier, --calibrate, --zero-point, --rounding: those of `simak quant`, with
    // the help texts above.
    #[command(flatten)]
    scale: ScaleArgs,
    /// Execution backend. Only a65: QuantTess has no EV74 entry (ev74-sim is refused).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BackendArg::A65)]
    backend: BackendArg,
}

impl TessArgs {
    /// Image normalization, when `--mean` or `--std` was given.
    fn normalize(&self) -> Option<Normalize> {
        if self.mean.is_none() && self.std.is_none() {
            return None;
        }
        let d = Normalize::default();
        Some(Normalize {
            mean: self.mean.unwrap_or(d.mean),
            std: self.std.unwrap_or(d.std),
        })
    }
}

/// Which conversion.
#[derive(Debug, Clone)]
pub enum TessOp {
    /// CastTess: FP32 / FP16 / BF16 → MlaTiled BF16.
    Cast,
    /// QuantTess: FP32 / BF16 / FP16 → MlaTiled INT8 with Quant parameters.
    Quant(Quantization),
}

impl TessOp {
    fn name(&self) -> &'static str {
        match self {
            TessOp::Cast => "casttess",
            TessOp::Quant(_) => "quanttess",
        }
    }
}

/// The JSON sidecar written next to a tiled buffer (`OUT.bin.json`): everything needed to
/// read the buffer back (`simak untile`).
/// Read strictly: unknown keys are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sidecar {
    /// `casttess` or `quanttess`.
    pub op: String,
    /// Logical shape (row-major axis order of the input).
    pub shape: Vec<u64>,
    /// Input dtype: `f32`, `bf16` or `f16`.
    pub input_dtype: String,
    /// Output dtype: `bf16` (casttess) or `i8` (quanttess).
    pub output_dtype: String,
    /// Logical axis playing D, H, W, C (-1: absent).
    pub axes: [i64; 4],
    /// Tile extents D, H, W, C.
    pub tile: [u32; 4],
    /// `compact` or `pad16`.
    pub channels: String,
    /// Bytes of the physical buffer.
    pub capacity_bytes: u64,
    /// Tiles per outer index.
    pub tiles_per_outer: u64,
    /// Number of outer indices.
    pub outer_count: u64,
    /// QuantTess: multiplier bits as `0x%08x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplier_bits: Option<String>,
    /// QuantTess: zero point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_point: Option<i32>,
    /// QuantTess: rounding mode name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounding: Option<String>,
    /// CRC-32 (IEEE 802.3, as zlib's `crc32`) of the buffer's `capacity_bytes` bytes, as
    /// `0x%08x`: ties the sidecar to the buffer written with it. Optional when read only so
    /// that its absence gets a precise error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_crc32: Option<String>,
    /// CRC-32 of the sidecar itself, `0x%08x`: of its other keys as compact JSON with the
    /// keys sorted (Python's `json.dumps(d, sort_keys=True, separators=(",", ":"))`), so
    /// that an edited layout field (a tile, an axis, the shape) is refused rather than read
    /// as another layout. Whitespace does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar_crc32: Option<String>,
}

/// The sidecar's `buffer_crc32` of a buffer.
pub fn buffer_crc32(buffer: &[u8]) -> String {
    format!("0x{:08x}", crc32fast::hash(buffer))
}

impl Sidecar {
    /// The `sidecar_crc32` of this sidecar's fields (whatever its own `sidecar_crc32`).
    pub fn own_crc32(&self) -> String {
        let bare = Sidecar {
            sidecar_crc32: None,
            ..self.clone()
        };
        // Serializing plain fields cannot fail; an empty text would only fail the check.
        let sorted: std::collections::BTreeMap<String, serde_json::Value> =
            match serde_json::to_value(&bare) {
                Ok(serde_json::Value::Object(map)) => map.into_iter().collect(),
                _ => std::collections::BTreeMap::new(),
            };
        let text = serde_json::to_vec(&sorted).unwrap_or_default();
        format!("0x{:08x}", crc32fast::hash(&text))
    }

    /// Seals the sidecar to `buffer`: its `buffer_crc32`, then its own `sidecar_crc32`.
    pub fn seal(&mut self, buffer: &[u8]) {
        self.buffer_crc32 = Some(buffer_crc32(buffer));
        self.sidecar_crc32 = Some(self.own_crc32());
    }
}

impl Sidecar {
    /// The sidecar of a tiled output; `quant` adds the QuantTess parameters.
    pub fn new(op: &str, input_dtype: DType, view: &TiledView, quant: Option<Params>) -> Sidecar {
        let layout = view.layout();
        Sidecar {
            op: op.to_owned(),
            shape: view.extents()[..view.rank()].to_vec(),
            input_dtype: input_dtype.name().to_owned(),
            output_dtype: if view.planes() == 2 { "bf16" } else { "i8" }.to_owned(),
            axes: layout.axes.map(|a| a.map_or(-1, i64::from)),
            tile: layout.tile,
            channels: layout.channels.name().to_owned(),
            capacity_bytes: view.capacity(),
            tiles_per_outer: view.tiles_per_outer(),
            outer_count: view.outer_count(),
            multiplier_bits: quant.map(|p| format!("0x{:08x}", p.multiplier_bits)),
            zero_point: quant.map(|p| p.zero_point),
            rounding: quant.map(|p| p.rounding.name().to_owned()),
            buffer_crc32: None,
            sidecar_crc32: None,
        }
    }
}

/// The sidecar path of a tiled output: the output path with `.json` appended.
pub fn sidecar_path(output: &Path) -> PathBuf {
    let mut s = output.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

#[derive(Debug, Serialize)]
struct MultiplierEcho {
    bits: String,
    exact: String,
    calibration: Option<String>,
    abs_max: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'static str>,
}

/// What `simak casttess` / `simak quanttess` did: the input, the outputs, the route and the
/// sidecar written.
#[derive(Debug, Serialize)]
pub struct TessSummary {
    command: &'static str,
    input: String,
    format: &'static str,
    tensor: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<String>,
    output: String,
    sidecar_path: String,
    backend: &'static str,
    workers: Option<usize>,
    /// A65 threads (`--threads`).
    threads: usize,
    route: String,
    elements: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    multiplier: Option<MultiplierEcho>,
    #[serde(skip_serializing_if = "Option::is_none")]
    saturated: Option<u64>,
    execute_seconds: f64,
    elements_per_second: Option<f64>,
    /// `--backend ev74-sim`: the simulated cost (`docs/cost-model.md`), flattened.
    #[serde(flatten)]
    sim_cost: Option<report::SimCost>,
    sidecar: Sidecar,
}

/// An input tensor, owned or borrowed from the file's bytes.
struct Loaded<'a> {
    /// Tensor name (safetensors) or file name.
    name: String,
    /// `npy`, `safetensors`, `png` or `jpeg`.
    format: &'static str,
    dtype: DType,
    shape: Vec<u64>,
    strides: Option<Vec<u64>>,
    data: engine::Aligned<'a>,
    /// Whether errors about it name a tensor (safetensors).
    named: bool,
    /// Images: how the pixels became FP32.
    source: Option<String>,
}

const ACCEPTS: &str = "casttess and quanttess take F32, BF16 and F16 tensors";

fn load<'a>(args: &TessArgs, kind: InputKind, bytes: &'a [u8]) -> Result<Loaded<'a>, CliError> {
    let file = args.input.as_path();
    Ok(match kind {
        InputKind::Npy => {
            let a = read::read_npy_as(
                file,
                bytes,
                &[DType::F32, DType::F16],
                "casttess and quanttess take float32 and float16 .npy files",
                args.dtype.map(NpyDtypeArg::dtype),
            )?;
            let strides = a.byte_strides();
            Loaded {
                name: read::file_name(file),
                format: "npy",
                dtype: a.dtype,
                shape: a.shape,
                strides,
                data: a.data,
                named: false,
                source: None,
            }
        }
        InputKind::Safetensors => {
            let t = read::pick_safetensor(
                file,
                bytes,
                args.tensor.as_deref(),
                &[DType::F32, DType::BF16, DType::F16],
                ACCEPTS,
            )?;
            Loaded {
                name: t.name,
                format: "safetensors",
                dtype: t.dtype,
                shape: t.shape,
                strides: None,
                data: t.data,
                named: true,
                source: None,
            }
        }
        InputKind::Image => {
            let norm = args.normalize().unwrap_or_default();
            let img = read::decode_image(file, bytes, &norm, args.image_limit << 20)?;
            let source = format!(
                "{} {}-bit {} -> RGB -> HWC f32 (p / {} - mean {:?}) / std {:?}",
                img.format,
                img.bits,
                img.color,
                if img.bits == 16 { 65535 } else { 255 },
                norm.mean,
                norm.std
            );
            Loaded {
                name: read::file_name(file),
                format: img.format,
                dtype: DType::F32,
                shape: img.shape,
                strides: None,
                data: img.data,
                named: false,
                source: Some(source),
            }
        }
    })
}

/// Checks the options against each other and the input kind, before reading.
fn check_options(
    args: &TessArgs,
    op: &TessOp,
    backend: Backend,
    kind: Option<InputKind>,
) -> Result<InputKind, CliError> {
    let input = args.input.as_path();
    let kind = kind.ok_or_else(|| {
        bad_file(
            input,
            format!(
                "unsupported input file type ({} reads .npy, .safetensors, .png, .jpg and .jpeg files)",
                op.name()
            ),
        )
    })?;
    if let (TessOp::Quant(_), Backend::Ev74Sim { .. }) = (op, backend) {
        return Err(bad_file(
            input,
            "--backend ev74-sim: QuantTess has no EV74 entry (it runs on the A65 only); use --backend a65",
        ));
    }
    if args.threads > 1 && backend != Backend::A65 {
        return Err(bad_file(input, "--threads applies to --backend a65 only"));
    }
    if args.tensor.is_some() && kind != InputKind::Safetensors {
        return Err(bad_file(
            input,
            "--tensor applies to .safetensors inputs only",
        ));
    }
    if args.normalize().is_some() && kind != InputKind::Image {
        return Err(bad_file(
            input,
            "--mean and --std apply to image inputs (.png, .jpg, .jpeg) only",
        ));
    }
    Ok(kind)
}

/// Runs `simak casttess`: converts and stages the buffer and its sidecar.
///
/// # Errors
///
/// [`CliError::Input`] for bad input (exit 2, nothing written), [`CliError::Internal`]
/// otherwise.
pub fn run_casttess(args: CastTessArgs, ctx: &Context) -> Result<Done<TessSummary>, CliError> {
    let backend = args.backend.with_workers(args.workers)?;
    convert(&args.tess, &TessOp::Cast, backend, ctx)
}

/// Runs `simak quanttess`: quantizes and stages the buffer and its sidecar.
///
/// # Errors
///
/// As [`run_casttess`]; bad input for Quant parameters outside their rules.
pub fn run_quanttess(args: QuantTessArgs, ctx: &Context) -> Result<Done<TessSummary>, CliError> {
    let op = TessOp::Quant(args.scale.parse(&args.tess.input)?);
    convert(&args.tess, &op, args.backend.with_workers(None)?, ctx)
}

/// Converts the input of `args` with `op` on `backend` and stages both outputs.
fn convert(
    args: &TessArgs,
    op: &TessOp,
    backend: Backend,
    ctx: &Context,
) -> Result<Done<TessSummary>, CliError> {
    let input = args.input.as_path();
    let kind = check_options(args, op, backend, InputKind::of(input))?;
    let layout = args.layout.layout();
    let sidecar_out = sidecar_path(&args.output);
    let buffer_target = Target::new("--output", &args.output, Format::Raw)?;
    let sidecar_target = Target::new(
        "the sidecar (--output with .json appended)",
        &sidecar_out,
        Format::Json,
    )?;
    buffer_target.not_input("--output", input)?;
    sidecar_target.not_input("the sidecar", input)?;
    let expect = match kind {
        InputKind::Npy => read::Expect::Npy,
        InputKind::Safetensors => read::Expect::Safetensors,
        InputKind::Image => read::Expect::Image {
            limit: args.image_limit << 20,
        },
    };
    let bytes = read::read_input(input, "", expect)?;
    let loaded = load(args, kind, &bytes)?;
    let subject = Subject {
        file: input,
        tensor: loaded.named.then_some(loaded.name.as_str()),
        label: &loaded.name,
    };
    let bad = |rule: &dyn std::fmt::Display| subject.bad(rule);
    let engine_error = |e: EngineError| subject.engine(e);
    let tensor = Tensor {
        dtype: loaded.dtype,
        shape: &loaded.shape,
        strides: loaded.strides.as_deref(),
        out_strides: None,
        data: loaded.data.as_slice(),
    };
    let threads = args.threads as usize;
    let bar = ctx.progress(op.name(), 1, tensor.shape.iter().product::<u64>());
    let advance = |n: u64| bar.inc(n);
    let (result, multiplier, saturated, mut sidecar) = match op {
        TessOp::Cast => {
            let plan = cast_plan(&tensor, layout).map_err(|e| bad(&layout_rule(e)))?;
            check_span(&plan.input().span(), &tensor).map_err(engine_error)?;
            let result =
                run_cast(&plan, &tensor, backend, threads, &advance).map_err(engine_error)?;
            let sidecar = Sidecar::new("casttess", tensor.dtype, plan.output(), None);
            (result, None, None, sidecar)
        }
        TessOp::Quant(quantization) => {
            let (params, calibration) = quantization.params(&tensor, &subject)?;
            let plan = quant_plan(&tensor, layout, params).map_err(|e| bad(&layout_rule(e)))?;
            check_span(&plan.input().span(), &tensor).map_err(engine_error)?;
            let result = run_quant(&plan, &tensor, threads, &advance).map_err(engine_error)?;
            let qplan = engine::plan(&tensor, params).map_err(engine_error)?;
            let saturated = engine::count_saturated(&qplan, &tensor);
            let p = plan.params();
            let echo = MultiplierEcho {
                bits: format!("0x{:08x}", p.multiplier_bits),
                exact: exact_decimal(p.multiplier_bits),
                calibration: calibration.map(|c| c.0.to_owned()),
                abs_max: calibration.and_then(|c| c.1),
                note: calibration
                    .is_some_and(|c| c.1.is_none())
                    .then_some(crate::params::ZERO_RANGE_NOTE),
            };
            let sidecar = Sidecar::new("quanttess", tensor.dtype, plan.output(), Some(p));
            (result, Some(echo), Some(saturated), sidecar)
        }
    };
    bar.finish_and_clear();
    sidecar.seal(result.output.as_slice());
    let mut json = serde_json::to_string_pretty(&sidecar).map_err(anyhow::Error::from)?;
    json.push('\n');
    let physical = buffer_target.stage(|w| w.write_all(result.output.as_slice()))?;
    let side = sidecar_target.stage(|w| w.write_all(json.as_bytes()))?;
    let summary = TessSummary {
        command: op.name(),
        input: input.display().to_string(),
        format: loaded.format,
        tensor: loaded.name.clone(),
        image: loaded.source.clone(),
        output: args.output.display().to_string(),
        sidecar_path: sidecar_out.display().to_string(),
        backend: backend.name(),
        workers: backend.workers(),
        threads,
        route: result.route,
        elements: result.elements,
        multiplier,
        saturated,
        execute_seconds: result.seconds,
        elements_per_second: (result.seconds > 0.0)
            .then(|| result.elements as f64 / result.seconds),
        sim_cost: result
            .sim_cost
            .as_ref()
            .map(|(cost, calls)| report::SimCost::new(cost, *calls)),
        sidecar,
    };
    Ok(Done::new(summary, vec![physical, side]))
}

impl report::Summary for TessSummary {
    fn text(&self) -> String {
        summary_text(self)
    }
}

fn summary_text(s: &TessSummary) -> String {
    let c = &s.sidecar;
    let axes: Vec<String> = ["D", "H", "W", "C"]
        .iter()
        .zip(c.axes)
        .map(|(r, a)| {
            if a < 0 {
                format!("{r}=-")
            } else {
                format!("{r}={a}")
            }
        })
        .collect();
    let mut out = format!(
        "simak {}: {} ({}, tensor {}) -> {} + {} (backend {})\n",
        s.command, s.input, s.format, s.tensor, s.output, s.sidecar_path, s.backend
    );
    if let Some(image) = &s.image {
        out.push_str(&format!("image: {image}\n"));
    }
    out.push_str(&format!(
        "shape {} {} -> {} MlaTiled: axes {}, tile {}, channels {}\n",
        shape_text(&c.shape),
        c.input_dtype,
        c.output_dtype,
        axes.join(" "),
        shape_text(&c.tile.map(u64::from)),
        c.channels
    ));
    if let Some(m) = &s.multiplier {
        out.push_str(&format!(
            "multiplier {} = {} exactly{}; zero point {}; rounding {}; saturated {}\n",
            m.bits,
            m.exact,
            match (&m.calibration, m.abs_max) {
                (Some(cal), Some(a)) => format!(" ({cal}, max|x| = {a:e})"),
                _ => String::new(),
            },
            c.zero_point.unwrap_or(0),
            c.rounding.as_deref().unwrap_or(""),
            s.saturated.unwrap_or(0)
        ));
        if let Some(note) = m.note {
            out.push_str(&format!("note: {note}\n"));
        }
    }
    out.push_str(&format!(
        "capacity {} bytes = {} x {}; {} elements ({} bytes logical); execute {:.3} ms, {} elements/s; route {}\n",
        c.capacity_bytes,
        crate::report::count(c.outer_count, "outer index", "outer indices"),
        crate::report::count(c.tiles_per_outer, "tile", "tiles"),
        s.elements,
        s.elements * if c.output_dtype == "bf16" { 2 } else { 1 },
        s.execute_seconds * 1e3,
        rate_text(s.elements_per_second),
        s.route
    ));
    if let Some(cost) = &s.sim_cost {
        out.push_str(&format!("ev74-sim: {}\n", cost.text()));
    }
    out
}

/// Words a library admission error for the command line: layout rules name the flag
/// ([`crate::params::layout_rule`]).
pub fn layout_rule(e: EngineError) -> String {
    match e {
        EngineError::Admission(a) => crate::params::layout_rule(a),
        other => other.to_string(),
    }
}

fn check_span(span: &u64, tensor: &Tensor<'_>) -> Result<(), EngineError> {
    if (tensor.data.len() as u64) < *span {
        return Err(EngineError::Short {
            required: *span,
            found: tensor.data.len() as u64,
        });
    }
    Ok(())
}

/// A finished conversion: the physical buffer and how it was produced.
struct TessResult {
    output: AlignedBuf,
    elements: u64,
    seconds: f64,
    route: String,
    /// EV74 simulator: the cost summed over the calls, and the number of calls.
    sim_cost: Option<(ev74::Cost, u64)>,
}

/// The tiled output spec of `tensor` with `layout` and dtype `dtype`.
fn tiled<'a>(tensor: &Tensor<'a>, layout: MlaTiled, dtype: DType) -> TiledSpec<'a> {
    TiledSpec {
        extents: tensor.shape,
        dtype,
        layout,
    }
}

/// Checks a CastTess request for `tensor` (any rank at run time).
pub fn cast_plan(tensor: &Tensor<'_>, layout: MlaTiled) -> Result<casttess::Plan, EngineError> {
    Ok(casttess::check_inference_dyn(&casttess::DynRequest {
        input: tensor.input(),
        output: tiled(tensor, layout, casttess::OUTPUT_DTYPE),
    })?)
}

/// Checks a QuantTess request for `tensor` (any rank at run time).
fn quant_plan(
    tensor: &Tensor<'_>,
    layout: MlaTiled,
    params: Params,
) -> Result<quanttess::Plan, EngineError> {
    Ok(quanttess::check_inference_dyn(&quanttess::DynRequest {
        input: tensor.input(),
        output: tiled(tensor, layout, quanttess::OUTPUT_DTYPE),
        params,
    })?)
}

/// A zeroed 16-byte-aligned buffer of the layout's capacity, its pages faulted in.
fn output_buffer(view: &TiledView) -> Result<AlignedBuf, EngineError> {
    let len = usize::try_from(view.capacity()).map_err(|_| EngineError::OutOfMemory {
        what: "the tiled output buffer",
        bytes: view.capacity(),
    })?;
    AlignedBuf::zeroed(
        "the tiled output buffer",
        len,
        simak::layout::TILE_ALIGN as usize,
    )
}

/// One piece of a tiled conversion: the rows of [`Piece`] with the layout's tile, whose
/// role extent along the cut axis is clipped to the piece (a boundary piece holds the
/// boundary tiles, whose bytes depend only on their actual extents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TilePiece {
    /// The rows of the cut axis.
    pub piece: Piece,
    /// The layout of the piece's request.
    pub layout: MlaTiled,
}

/// Splits a tiled conversion into pieces whose tiles are consecutive in storage order, so
/// that each piece's output is one range of the buffer (pieces in order, ranges adjacent).
/// Storage runs outer indices, then C, D, H and W tiles (SPEC §5), so the cut is the
/// slowest level with more than one entry: the first outer axis longer than 1 (when every
/// outer axis before it has one index), else whole C tiles, else D, else H tile rows, else
/// W tiles. A tensor below [`engine::PIECE_MIN_ELEMENTS`] is one piece.
pub fn tile_pieces(view: &TiledView) -> Vec<TilePiece> {
    let layout = *view.layout();
    let shape = &view.extents()[..view.rank()];
    let elements = view.elements();
    let whole = vec![TilePiece {
        piece: Piece {
            axis: 0,
            start: 0,
            len: shape.first().copied().unwrap_or(1),
        },
        layout,
    }];
    if elements < engine::PIECE_MIN_ELEMENTS {
        return whole;
    }
    let cut = view
        .outer_axes()
        .iter()
        .map(|&a| usize::from(a))
        .find(|&a| shape[a] > 1)
        .map(|a| (a, 1, None))
        .or_else(|| {
            // Slots D = 0, H = 1, W = 2, C = 3, in storage order C, D, H, W.
            [3usize, 0, 1, 2].into_iter().find_map(|slot| {
                let axis = layout.axes[slot]?;
                (view.tile_counts()[slot] > 1).then_some((
                    usize::from(axis),
                    u64::from(layout.tile[slot]),
                    Some(slot),
                ))
            })
        });
    let Some((axis, granule, slot)) = cut else {
        return whole;
    };
    engine::along(axis, shape[axis], granule, elements)
        .into_iter()
        .map(|piece| {
            let mut layout = layout;
            if let Some(slot) = slot {
                layout.tile[slot] = layout.tile[slot].min(piece.len as u32);
            }
            TilePiece { piece, layout }
        })
        .collect()
}

/// Runs a tiled conversion of `tensor` piece by piece ([`tile_pieces`]) into a new zeroed
/// buffer of `view`'s capacity. Each piece is a request of its own (`plan`) whose output is
/// the next `capacity` bytes of the buffer, run by `execute`, which returns the seconds its
/// kernel took and its route; `progress` is called with each piece's elements. Checks that
/// the pieces' ranges tile the whole buffer. Returns the buffer, the seconds over all
/// pieces and the first piece's route.
fn run_tiled<P>(
    view: &TiledView,
    in_strides: &[u64],
    tensor: &Tensor<'_>,
    progress: &dyn Fn(u64),
    plan: impl Fn(&Tensor<'_>, MlaTiled) -> Result<P, EngineError>,
    capacity: impl Fn(&P) -> u64,
    mut execute: impl FnMut(&P, &[u8], &mut [u8]) -> Result<(f64, String), EngineError>,
) -> Result<(AlignedBuf, f64, Option<String>), EngineError> {
    let mut output = output_buffer(view)?;
    let mut seconds = 0.0;
    let mut route = None;
    let mut at = 0usize;
    for p in tile_pieces(view) {
        let part = p.piece.of(tensor, in_strides, &[]);
        let part = part.tensor();
        let part_plan = plan(&part, p.layout)?;
        let capacity = capacity(&part_plan);
        let out = output
            .as_mut_slice()
            .get_mut(at..)
            .ok_or(EngineError::Short {
                required: at as u64,
                found: view.capacity(),
            })?;
        let found = out.len() as u64;
        let out = out.get_mut(..capacity as usize).ok_or(EngineError::Short {
            required: capacity,
            found,
        })?;
        let (s, r) = execute(&part_plan, part.data, out)?;
        seconds += s;
        route.get_or_insert(r);
        at += capacity as usize;
        progress(p.piece.len * (view.elements() / view.extents()[p.piece.axis].max(1)));
    }
    if at as u64 != view.capacity() {
        return Err(EngineError::Short {
            required: view.capacity(),
            found: at as u64,
        });
    }
    Ok((output, seconds, route))
}

/// CastTess of `tensor` under `plan` on `backend`, in pieces ([`run_tiled`]).
fn run_cast(
    plan: &casttess::Plan,
    tensor: &Tensor<'_>,
    backend: Backend,
    threads: usize,
    progress: &dyn Fn(u64),
) -> Result<TessResult, EngineError> {
    let in_strides = &plan.input().strides()[..plan.input().rank()];
    let mut sim_cost = (ev74::Cost::default(), 0u64);
    let (output, seconds, route) = run_tiled(
        plan.output(),
        in_strides,
        tensor,
        progress,
        cast_plan,
        |p| p.output().capacity(),
        |p, data, out| match backend {
            Backend::A65 => {
                let start = Instant::now();
                let prepared = a65::casttess::prepare(p);
                a65::execute_threaded(&prepared, threads, data, out)?;
                let route = prepared.implementation().to_owned();
                Ok((start.elapsed().as_secs_f64(), route))
            }
            Backend::Ev74Sim { workers } => {
                let start = Instant::now();
                // Only the accessed span goes to the device.
                let span = p.input().span() as usize;
                let input = data.get(..span).unwrap_or(data);
                let run =
                    ev74::casttess::run_sim(p, input, out, workers).map_err(engine::sim_error)?;
                let seconds = start.elapsed().as_secs_f64();
                sim_cost.0.add(&run.cost);
                sim_cost.1 += u64::from(run.report.is_some());
                Ok((seconds, engine::ev74_route(workers)))
            }
        },
    )?;
    let route = match (backend, route) {
        (Backend::A65, None) => a65::casttess::prepare(plan).implementation().to_owned(),
        (_, route) => route.unwrap_or_default(),
    };
    Ok(TessResult {
        output,
        elements: plan.elements(),
        seconds,
        route,
        sim_cost: match backend {
            Backend::A65 => None,
            Backend::Ev74Sim { .. } => Some(sim_cost),
        },
    })
}

/// QuantTess of `tensor` under `plan` on the A65, in pieces ([`run_tiled`]).
fn run_quant(
    plan: &quanttess::Plan,
    tensor: &Tensor<'_>,
    threads: usize,
    progress: &dyn Fn(u64),
) -> Result<TessResult, EngineError> {
    let in_strides = &plan.input().strides()[..plan.input().rank()];
    let params = plan.params();
    let (output, seconds, route) = run_tiled(
        plan.output(),
        in_strides,
        tensor,
        progress,
        |part, layout| quant_plan(part, layout, params),
        |p| p.output().capacity(),
        |p, data, out| {
            let prepared = a65::quanttess::prepare(p);
            let start = Instant::now();
            a65::execute_threaded(&prepared, threads, data, out)?;
            let route = prepared.implementation().to_owned();
            Ok((start.elapsed().as_secs_f64(), route))
        },
    )?;
    let route = route.unwrap_or_else(|| a65::quanttess::prepare(plan).implementation().to_owned());
    Ok(TessResult {
        output,
        elements: plan.elements(),
        seconds,
        route,
        sim_cost: None,
    })
}

#[cfg(test)]
pub(crate) mod test {
    use super::*;
    use simak::layout::Channels;

    /// The layout example of SPEC §5: a `[2, 3]` BF16 tensor, W = axis 0, C = axis 1, tile
    /// 2 x 3, compact channels.
    pub(crate) fn spec_example() -> TiledView {
        MlaTiled::new(
            [None, None, Some(0), Some(1)],
            [1, 1, 2, 3],
            Channels::Compact,
        )
        .admit(&[2, 3], 2)
        .unwrap()
    }

    /// Every level a tiled conversion can be cut at (an outer axis; C, D, H and W tiles,
    /// with boundary tiles in the last piece): the pieces' ranges tile the buffer, progress
    /// advances more than once and sums to the elements, and the bytes equal one library
    /// call on the whole plan, for CastTess on both backends and QuantTess.
    #[test]
    fn tiled_pieces_give_the_bytes_of_one_call() {
        type Case = (&'static [u64], [Option<u8>; 4], [u32; 4], Channels);
        let cases: [Case; 5] = [
            // outer axis 0 (extent 3), HWC tiles below it
            (
                &[3, 300, 500, 3],
                [None, Some(1), Some(2), Some(3)],
                [1, 16, 64, 3],
                Channels::Compact,
            ),
            // C tiles slowest: 40 channels in tiles of 16 (boundary 8)
            (
                &[200, 150, 40],
                [None, Some(0), Some(1), Some(2)],
                [1, 8, 32, 16],
                Channels::PadTo16,
            ),
            // D tiles
            (
                &[37, 100, 300],
                [Some(0), Some(1), Some(2), None],
                [4, 16, 64, 1],
                Channels::Compact,
            ),
            // H tile rows of an HWC frame
            (
                &[723, 517, 3],
                [None, Some(0), Some(1), Some(2)],
                [1, 16, 64, 3],
                Channels::Compact,
            ),
            // W tiles of a 1-D tensor
            (
                &[1 << 20 | 77],
                [None, None, Some(0), None],
                [1, 1, 64, 1],
                Channels::Compact,
            ),
        ];
        for (shape, axes, tile, channels) in cases {
            let n: u64 = shape.iter().product();
            let values: Vec<f32> = (0..n).map(|i| (i % 1021) as f32 * 0.013 - 6.0).collect();
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let data = engine::Aligned::new(&bytes, 4).unwrap();
            let tensor = Tensor {
                dtype: DType::F32,
                shape,
                strides: None,
                out_strides: None,
                data: data.as_slice(),
            };
            let layout = MlaTiled::new(axes, tile, channels);
            let plan = cast_plan(&tensor, layout).unwrap();
            assert!(tile_pieces(plan.output()).len() > 1, "{shape:?} is cut");
            let mut reference = output_buffer(plan.output()).unwrap();
            a65::casttess::execute(
                &a65::casttess::prepare(&plan),
                tensor.data,
                reference.as_mut_slice(),
            )
            .unwrap();
            for backend in [Backend::A65, Backend::Ev74Sim { workers: 2 }] {
                let steps = std::cell::RefCell::new(Vec::new());
                // The A65 also splits each piece over 2 threads (same bytes).
                let threads = if backend == Backend::A65 { 2 } else { 1 };
                let r = run_cast(&plan, &tensor, backend, threads, &|k| {
                    steps.borrow_mut().push(k)
                })
                .unwrap();
                let steps = steps.into_inner();
                assert!(steps.len() > 1);
                assert_eq!(steps.iter().sum::<u64>(), n, "{shape:?}");
                assert!(
                    r.output.as_slice() == reference.as_slice(),
                    "{shape:?} {backend:?}"
                );
            }
            let params = Params::new(3.0).with_zero_point(7);
            let qplan = quant_plan(&tensor, layout, params).unwrap();
            let mut qref = output_buffer(qplan.output()).unwrap();
            a65::quanttess::execute(
                &a65::quanttess::prepare(&qplan),
                tensor.data,
                qref.as_mut_slice(),
            )
            .unwrap();
            let q = run_quant(&qplan, &tensor, 3, &|_| {}).unwrap();
            assert!(
                q.output.as_slice() == qref.as_slice(),
                "quanttess {shape:?}"
            );
        }
    }

    #[test]
    fn sidecar_of_the_spec_example() {
        let view = spec_example();
        let s = Sidecar::new("casttess", DType::F32, &view, None);
        let json: serde_json::Value = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "op": "casttess", "shape": [2, 3], "input_dtype": "f32",
                "output_dtype": "bf16", "axes": [-1, -1, 0, 1], "tile": [1, 1, 2, 3],
                "channels": "compact", "capacity_bytes": 16, "tiles_per_outer": 1,
                "outer_count": 1
            })
        );
        assert_eq!(
            sidecar_path(Path::new("a/out.bin")),
            PathBuf::from("a/out.bin.json")
        );
    }
}
