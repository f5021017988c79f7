//! `simak detess`: read the accelerator's output buffer (an OFM of 1 to 32 heads in the
//! MLA's output layouts, SPEC §12.1) back into logical tensors: the stored values
//! (Detess), BF16 as FP32 (DetessCast) or dequantized (DetessDequant, SPEC §12.2), on the
//! A65.
//!
//! A head is given by the single-head flags (`--shape --axes --tile --channels
//! --tile-align --dtype [--offset]`) or by repeated `--head KEY=VALUE:...` specs. Every
//! head is admitted and placed against the buffer (offsets, spans, overlaps) and every
//! output checked before the buffer is read; nothing is written unless every check passed.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use safetensors::Dtype as StDtype;
use serde::Serialize;
use simak::layout::{MlaTiled, TileAlign};
use simak::ops::casttess::TiledSpec;
use simak::ops::dequant::Params;
use simak::ops::detess::{HeadSpec, MAX_HEADS, place_heads};
use simak::{AdmissionError, DType, DynSpec};
use simak::{a65, ev74};

use crate::engine::Backend;
use crate::error::{CliError, bad_file};
use crate::output::{Format, StOut, Staged, Target, same_file};
use crate::params::{
    AxesArg, BackendArg, ChannelsArg, ParamError, U64List, check_output_order, exact_decimal,
    parse_axes, parse_dequant_zero_point, parse_multiplier, parse_output_order, parse_tess_shape,
    parse_tile, parse_tile_align, permuted_output, threads_parser,
};
use crate::report::{self, Context, Done, shape_text};

/// The `--help` text of `--head`, also the reference for its syntax.
const HEAD_HELP: &str = "One head of a multi-head OFM (repeat once per head, in buffer \
order): KEY=VALUE items separated by ':', the keys spelled as the single-head flags: \
shape=H,W,C (required), tile=D,H,W,C (required), channels=compact|pad16|cblock16 \
(required), dtype=i8|i16|i32|bf16 (required), axes=D,H,W,C [default: the last three \
logical axes as H, W, C], tile-align=16|1 [default: 1 for compact, 16 otherwise], \
offset=BYTES [default: the end of the head before it, 0 for the first; a last head \
placed by default must end at the buffer's end], name=NAME (the \
safetensors tensor name) [default: head0, head1, ...], multiplier=M and zero-point=Z (this \
head's dequantization parameters, overriding --multiplier and --zero-point). Example: \
--head shape=80,80,144:tile=1,80,80,16:channels=cblock16:dtype=i8:multiplier=0.0625";

/// Read the accelerator's output buffer (OFM) back into logical tensors.
#[derive(Debug, Args)]
#[command(
    long_about = "Read the accelerator's output buffer (OFM: 1 to 32 heads, each in an MLA \
    output layout, SPEC §12.1) back into logical tensors: the stored values (Detess), BF16 \
    as float32 with --cast (DetessCast: the bits shifted left by 16, exact), or INT8 / \
    INT16 / INT32 dequantized with --multiplier (DetessDequant: x = (q - zero_point) / \
    multiplier, one binary32 division, SPEC §12.2) as float32, float16 or bfloat16.\n\n\
    One head: --shape, --tile, --channels and --dtype (with --axes, --tile-align and \
    --offset when the defaults do not fit). Several heads: one --head spec per head, in \
    buffer order; a head's offset defaults to the end of the head before it. Heads are \
    checked against the buffer (offset, span, overlap) before it is read; when the last \
    head's offset is defaulted, the heads must reach the buffer's end (give that offset, 0 \
    included, to read part of a buffer).\n\n\
    Outputs: one --output FILE.npy per head, in head order, or one --output \
    FILE.safetensors holding a tensor per head (named by the heads' name= keys, else \
    head0, head1, ...). .npy cannot hold bfloat16: write .safetensors, or use --cast / \
    --out-dtype f32. Only files named with --output are written, and only after every \
    check passed. Library refusals carry their stable code (docs/errors.md), e.g. \
    \"(code 0x227)\" for a head that runs past the end of the buffer."
)]
pub struct DetessArgs {
    /// The OFM buffer: the accelerator's output bytes, as read from the device.
    #[arg(value_name = "OFM")]
    input: PathBuf,
    /// Logical shape of the head, e.g. H,W,C or N,H,W,C (frames as the leading outer axis).
    #[arg(long, value_name = "SHAPE", value_parser = parse_tess_shape, conflicts_with = "heads")]
    shape: Option<U64List>,
    /// Logical axis playing D, H, W, C; -1 for an absent role [default: the last three
    /// axes as H, W, C].
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_axes, allow_hyphen_values = true, conflicts_with = "heads")]
    axes: Option<AxesArg>,
    /// Tile extents for D, H, W, C (absent roles take 1).
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_tile, conflicts_with = "heads")]
    tile: Option<[u32; 4]>,
    /// Channel encoding of the head (SPEC §12.1).
    #[arg(long, value_enum, value_name = "ENCODING", conflicts_with = "heads")]
    channels: Option<ChannelsArg>,
    /// Tile alignment in bytes [default: 1 for compact, 16 for pad16 and cblock16].
    #[arg(long, value_name = "16|1", value_parser = parse_tile_align, conflicts_with = "heads")]
    tile_align: Option<TileAlign>,
    /// The stored dtype.
    #[arg(long, value_enum, value_name = "DTYPE", conflicts_with = "heads")]
    dtype: Option<OfmDType>,
    /// Byte offset of the head in the buffer [default: 0, and then the head must end at the
    /// buffer's end; a given offset, 0 included, reads the head wherever the buffer holds it].
    #[arg(long, value_name = "BYTES", conflicts_with = "heads")]
    offset: Option<u64>,
    #[arg(long = "head", value_name = "SPEC", help = HEAD_HELP)]
    heads: Vec<String>,
    /// Dequantize (DetessDequant): the multiplier M the values were quantized with
    /// (decimal, or 0x and 8 hex digits for its binary32 bits); x = (q - Z) / M.
    #[arg(
        long,
        value_name = "M",
        allow_hyphen_values = true,
        conflicts_with = "cast"
    )]
    multiplier: Option<String>,
    /// The zero point Z of --multiplier [default: 0]; in the stored dtype's range.
    #[arg(long, value_name = "Z", allow_hyphen_values = true)]
    zero_point: Option<String>,
    /// BF16 heads as float32 (DetessCast: the bits shifted left by 16, exact).
    #[arg(long)]
    cast: bool,
    /// The output dtype of --multiplier (f32, f16 or bf16) or --cast (f32) [default: f32].
    #[arg(long, value_enum, value_name = "DTYPE")]
    out_dtype: Option<OutDType>,
    /// Store each head permuted: numpy.transpose(x, AXES) in C order (e.g. 0,3,1,2 turns
    /// NHWC into NCHW), written straight into that layout. Every head must have that rank.
    #[arg(long, value_name = "AXES", allow_hyphen_values = true)]
    output_order: Option<String>,
    /// Output file: one .npy per head (repeat, in head order) or one .safetensors.
    #[arg(long, short = 'o', value_name = "PATH", required = true)]
    output: Vec<PathBuf>,
    /// Threads per head (1 to 256; above 1 with --backend a65 only).
    #[arg(long, value_name = "N", value_parser = threads_parser(), default_value_t = 1)]
    threads: u64,
    /// Execution backend: a65 (host cores) or ev74-sim (the EV74 firmware's Detess,
    /// DetessCast or DetessDequant entry on the host simulator; one descriptor per head).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BackendArg::A65)]
    backend: BackendArg,
    /// EV74 worker ring size, 1 to 4 (with --backend ev74-sim only; 4 when not given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4))]
    workers: Option<u64>,
}

/// The stored dtype of an MLA output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OfmDType {
    /// 8-bit integers.
    I8,
    /// 16-bit integers (two byte planes).
    I16,
    /// 32-bit integers (four byte planes).
    I32,
    /// bfloat16 (two byte planes).
    Bf16,
}

impl From<OfmDType> for DType {
    fn from(d: OfmDType) -> Self {
        match d {
            OfmDType::I8 => DType::I8,
            OfmDType::I16 => DType::I16,
            OfmDType::I32 => DType::I32,
            OfmDType::Bf16 => DType::BF16,
        }
    }
}

/// A float output dtype (`--out-dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutDType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16 (rounded to nearest-even, subnormals kept, overflow to infinity).
    F16,
    /// bfloat16 (SPEC §4's rounding; safetensors outputs only).
    Bf16,
}

impl From<OutDType> for DType {
    fn from(d: OutDType) -> Self {
        match d {
            OutDType::F32 => DType::F32,
            OutDType::F16 => DType::F16,
            OutDType::Bf16 => DType::BF16,
        }
    }
}

/// A library refusal in words with its stable code (docs/errors.md): decimal for the
/// descriptor rules (1 to 255), hex above.
pub fn coded(e: &AdmissionError) -> String {
    format!("{e} ({})", code_text(e.code()))
}

/// `code 13` for a descriptor rule's code, `code 0x224` above 255 (as docs/errors.md
/// writes them).
fn code_text(code: u32) -> String {
    if code <= 255 {
        format!("code {code}")
    } else {
        format!("code 0x{code:03x}")
    }
}

/// A refused `--multiplier` / `--zero-point` in words, with the library rule's code.
pub fn param_text(e: &ParamError) -> String {
    match e {
        ParamError::MultiplierRule { rule, .. } | ParamError::ZeroPointRule { rule, .. } => {
            format!("{e} ({})", code_text(rule.code()))
        }
        other => other.to_string(),
    }
}

/// One head as the command line gives it, before admission.
#[derive(Debug, Clone)]
struct HeadArg {
    name: Option<String>,
    shape: Vec<u64>,
    axes: Option<AxesArg>,
    tile: [u32; 4],
    channels: ChannelsArg,
    tile_align: Option<TileAlign>,
    dtype: OfmDType,
    offset: Option<u64>,
    multiplier: Option<String>,
    zero_point: Option<String>,
}

impl HeadArg {
    /// The layout: the given axes or the last three logical axes as H, W, C; the given
    /// alignment or 1 for Compact, 16 otherwise.
    fn layout(&self) -> MlaTiled {
        let rank = self.shape.len();
        let axes = self.axes.unwrap_or_else(|| {
            let mut a = [None; 4];
            for (k, slot) in a.iter_mut().skip(1).rev().enumerate() {
                // C = rank - 1, W = rank - 2, H = rank - 3 where they exist.
                *slot = rank.checked_sub(k + 1).map(|x| x as u8);
            }
            a
        });
        let align = self.tile_align.unwrap_or(match self.channels {
            ChannelsArg::Compact => TileAlign::Bytes1,
            _ => TileAlign::Bytes16,
        });
        MlaTiled::new(axes, self.tile, self.channels.into()).with_tile_align(align)
    }
}

/// Parses one `--head` spec (see [`HEAD_HELP`]).
fn parse_head(text: &str) -> Result<HeadArg, String> {
    let (mut name, mut shape, mut axes, mut tile, mut channels) = (None, None, None, None, None);
    let (mut align, mut dtype, mut offset, mut multiplier, mut zero_point) =
        (None, None, None, None, None);
    for item in text.split(':') {
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!("{item:?} is not KEY=VALUE"));
        };
        let (key, value) = (key.trim(), value.trim());
        let dup = |set: bool| {
            if set {
                Err(format!("{key} is given twice"))
            } else {
                Ok(())
            }
        };
        let bad = |e: String| format!("{key}: {e}");
        match key {
            "name" => {
                dup(name.is_some())?;
                if value.is_empty() {
                    return Err("name: an empty name".to_owned());
                }
                if value == "__metadata__" {
                    return Err(
                        "name: `__metadata__` is the safetensors header's own key".to_owned()
                    );
                }
                name = Some(value.to_owned());
            }
            "shape" => {
                dup(shape.is_some())?;
                shape = Some(parse_tess_shape(value).map_err(bad)?.0);
            }
            "axes" => {
                dup(axes.is_some())?;
                axes = Some(parse_axes(value).map_err(bad)?);
            }
            "tile" => {
                dup(tile.is_some())?;
                tile = Some(parse_tile(value).map_err(bad)?);
            }
            "channels" => {
                dup(channels.is_some())?;
                channels = Some(ChannelsArg::from_str(value, false).map_err(|_| {
                    format!("channels: {value:?} is none of compact, pad16, cblock16")
                })?);
            }
            "tile-align" => {
                dup(align.is_some())?;
                align = Some(parse_tile_align(value).map_err(bad)?);
            }
            "dtype" => {
                dup(dtype.is_some())?;
                dtype = Some(
                    OfmDType::from_str(value, false)
                        .map_err(|_| format!("dtype: {value:?} is none of i8, i16, i32, bf16"))?,
                );
            }
            "offset" => {
                dup(offset.is_some())?;
                offset = Some(
                    value
                        .parse::<u64>()
                        .map_err(|_| format!("offset: {value:?} is not a byte count"))?,
                );
            }
            "multiplier" => {
                dup(multiplier.is_some())?;
                multiplier = Some(value.to_owned());
            }
            "zero-point" => {
                dup(zero_point.is_some())?;
                zero_point = Some(value.to_owned());
            }
            other => {
                return Err(format!(
                    "unknown key {other:?} (keys: name, shape, axes, tile, channels, tile-align, dtype, offset, multiplier, zero-point)"
                ));
            }
        }
    }
    let need = |what: &str| format!("{what}= is required");
    Ok(HeadArg {
        name,
        shape: shape.ok_or_else(|| need("shape"))?,
        axes,
        tile: tile.ok_or_else(|| need("tile"))?,
        channels: channels.ok_or_else(|| need("channels"))?,
        tile_align: align,
        dtype: dtype.ok_or_else(|| need("dtype"))?,
        offset,
        multiplier,
        zero_point,
    })
}

/// What each head is turned into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The stored values (Detess).
    Values,
    /// BF16 as FP32 (DetessCast).
    Cast,
    /// Dequantized (DetessDequant).
    Dequant,
}

/// One admitted head, prepared for the A65.
enum Prepared {
    Detess(a65::detess::Prepared),
    Cast(a65::detesscast::Prepared),
    Dequant(a65::detessdequant::Prepared),
}

impl Prepared {
    /// The head's span in the buffer, in bytes.
    fn span(&self) -> u64 {
        match self {
            Prepared::Detess(p) => p.plan().input().capacity(),
            Prepared::Cast(p) => p.plan().input().capacity(),
            Prepared::Dequant(p) => p.plan().input().capacity(),
        }
    }

    /// The output's span, in bytes.
    fn out_span(&self) -> u64 {
        match self {
            Prepared::Detess(p) => p.plan().output().span(),
            Prepared::Cast(p) => p.plan().output().span(),
            Prepared::Dequant(p) => p.plan().output().span(),
        }
    }

    /// Runs the head on `backend`: the A65 with `threads`, or the simulated EV74 (its
    /// cost returned).
    fn run(
        &self,
        backend: Backend,
        threads: usize,
        input: &[u8],
        output: &mut [u8],
    ) -> Result<Option<SimCost>, String> {
        match backend {
            Backend::A65 => match self {
                Prepared::Detess(p) => a65::execute_threaded(p, threads, input, output),
                Prepared::Cast(p) => a65::execute_threaded(p, threads, input, output),
                Prepared::Dequant(p) => a65::execute_threaded(p, threads, input, output),
            }
            .map(|()| None)
            .map_err(|e| e.to_string()),
            Backend::Ev74Sim { workers } => {
                let options = ev74::SimOptions::new(workers);
                let run = match self {
                    Prepared::Detess(p) => ev74::run_sim_with(p.plan(), input, output, &options),
                    Prepared::Cast(p) => ev74::run_sim_with(p.plan(), input, output, &options),
                    Prepared::Dequant(p) => ev74::run_sim_with(p.plan(), input, output, &options),
                }
                .map_err(|e| e.to_string())?;
                Ok(Some(SimCost {
                    workers,
                    simulated_cycles: run.cost.simulated_cycles,
                    dma_commands: run.cost.dma_commands,
                    bytes_read: run.cost.bytes_read,
                    bytes_written: run.cost.bytes_written,
                }))
            }
        }
    }
}

/// A head's simulated EV74 run (`--backend ev74-sim`; `docs/cost-model.md`).
#[derive(Debug, Clone, Copy, Serialize)]
struct SimCost {
    workers: usize,
    simulated_cycles: u64,
    dma_commands: u64,
    bytes_read: u64,
    bytes_written: u64,
}

/// One head's result in the summary.
#[derive(Debug, Serialize)]
struct HeadRow {
    name: String,
    offset: u64,
    span_bytes: u64,
    shape: Vec<u64>,
    axes: [i8; 4],
    tile: [u32; 4],
    channels: &'static str,
    tile_align: u64,
    dtype: &'static str,
    output_shape: Vec<u64>,
    output_dtype: &'static str,
    #[serde(skip)]
    out: DType,
    #[serde(skip_serializing_if = "Option::is_none")]
    multiplier_bits: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    multiplier: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    zero_point: Option<i32>,
    elements: u64,
    /// `--backend ev74-sim`: the head's simulated run.
    #[serde(skip_serializing_if = "Option::is_none")]
    ev74: Option<SimCost>,
}

/// What `simak detess` did.
#[derive(Debug, Serialize)]
pub struct DetessSummary {
    command: &'static str,
    input: String,
    buffer_bytes: u64,
    op: &'static str,
    backend: &'static str,
    outputs: Vec<String>,
    heads: Vec<HeadRow>,
}

fn st_dtype(d: DType) -> StDtype {
    match d {
        DType::F32 => StDtype::F32,
        DType::BF16 => StDtype::BF16,
        DType::F16 => StDtype::F16,
        DType::I8 => StDtype::I8,
        DType::I16 => StDtype::I16,
        DType::I32 => StDtype::I32,
    }
}

/// The heads the command line names: the `--head` specs, or the single-head flags.
fn head_args(args: &DetessArgs) -> Result<Vec<HeadArg>, CliError> {
    let usage = |m: String| CliError::Input(m);
    if !args.heads.is_empty() {
        if args.heads.len() > MAX_HEADS {
            let e = AdmissionError::HeadCount {
                count: args.heads.len(),
            };
            return Err(usage(format!("--head: {}", coded(&e))));
        }
        return args
            .heads
            .iter()
            .enumerate()
            .map(|(k, text)| parse_head(text).map_err(|e| usage(format!("--head {k}: {e}"))))
            .collect();
    }
    let missing: Vec<&str> = [
        ("--shape", args.shape.is_none()),
        ("--tile", args.tile.is_none()),
        ("--channels", args.channels.is_none()),
        ("--dtype", args.dtype.is_none()),
    ]
    .iter()
    .filter(|(_, m)| *m)
    .map(|(f, _)| *f)
    .collect();
    let (Some(shape), Some(tile), Some(channels), Some(dtype)) =
        (&args.shape, args.tile, args.channels, args.dtype)
    else {
        return Err(usage(format!(
            "{} required (or one --head spec per head)",
            missing.join(", ")
        )));
    };
    Ok(vec![HeadArg {
        name: None,
        shape: shape.0.clone(),
        axes: args.axes,
        tile,
        channels,
        tile_align: args.tile_align,
        dtype,
        offset: args.offset,
        multiplier: None,
        zero_point: None,
    }])
}

/// The outputs: one `.npy` per head, or one `.safetensors`.
enum Outputs {
    Npy(Vec<Target>),
    Safetensors(Target),
}

fn outputs(args: &DetessArgs, heads: usize) -> Result<Outputs, CliError> {
    let input = args.input.as_path();
    let is_st = |p: &Path| {
        p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"))
    };
    for (k, a) in args.output.iter().enumerate() {
        for b in &args.output[..k] {
            if a == b || same_file(a, b) {
                return Err(bad_file(
                    a,
                    "--output names the same file twice; name one file per head",
                ));
            }
        }
    }
    let out = if let [one] = args.output.as_slice()
        && is_st(one)
    {
        Outputs::Safetensors(Target::new("--output", one, Format::Safetensors)?)
    } else {
        if args.output.len() != heads {
            return Err(CliError::Input(format!(
                "{} --output files for {heads} head{}: give one .npy per head, in head order, or one .safetensors",
                args.output.len(),
                if heads == 1 { "" } else { "s" }
            )));
        }
        Outputs::Npy(
            args.output
                .iter()
                .map(|p| Target::new("--output", p, Format::Npy))
                .collect::<Result<_, _>>()?,
        )
    };
    match &out {
        Outputs::Npy(ts) => ts.iter().try_for_each(|t| t.not_input("--output", input))?,
        Outputs::Safetensors(t) => t.not_input("--output", input)?,
    }
    Ok(out)
}

/// Runs `simak detess`.
///
/// # Errors
///
/// Bad input (exit 2) for a head the library refuses (with its code), heads that do not fit
/// the buffer, a bad parameter, outputs that do not match the heads; internal otherwise.
pub fn run(args: DetessArgs, ctx: &Context) -> Result<Done<DetessSummary>, CliError> {
    let input = args.input.as_path();
    let backend = args.backend.with_workers(args.workers)?;
    if args.threads > 1 && backend != Backend::A65 {
        return Err(CliError::Input(
            "--threads applies to --backend a65 only".to_owned(),
        ));
    }
    let heads = head_args(&args)?;
    let global_m = match &args.multiplier {
        Some(t) => Some(parse_multiplier(t).map_err(|e| CliError::Input(param_text(&e)))?),
        None => None,
    };
    let mode = if args.cast {
        Mode::Cast
    } else if global_m.is_some() || heads.iter().any(|h| h.multiplier.is_some()) {
        Mode::Dequant
    } else {
        Mode::Values
    };
    if mode != Mode::Dequant
        && (args.zero_point.is_some() || heads.iter().any(|h| h.zero_point.is_some()))
    {
        return Err(CliError::Input(
            "a zero point applies with --multiplier (dequantization) only".to_owned(),
        ));
    }
    if args.cast && heads.iter().any(|h| h.multiplier.is_some()) {
        return Err(CliError::Input(
            "--cast and a head's multiplier= exclude each other".to_owned(),
        ));
    }
    let out_dtype: Option<DType> = match (mode, args.out_dtype) {
        (Mode::Values, Some(_)) => {
            return Err(CliError::Input(
                "--out-dtype applies with --multiplier or --cast (plain detess writes the stored dtype)".to_owned(),
            ));
        }
        (Mode::Values, None) => None,
        (_, d) => Some(d.map_or(DType::F32, DType::from)),
    };
    let order = match &args.output_order {
        Some(text) => Some(parse_output_order(text).map_err(|e| bad_file(input, e))?),
        None => None,
    };
    let targets = outputs(&args, heads.len())?;
    let buffer = crate::read::file_size(input, "")?;
    // Admit every head.
    let mut prepared = Vec::with_capacity(heads.len());
    let mut rows = Vec::with_capacity(heads.len());
    let mut span16: Vec<u64> = Vec::with_capacity(heads.len());
    for (k, h) in heads.iter().enumerate() {
        let label = if args.heads.is_empty() {
            "head".to_owned()
        } else {
            format!("--head {k}")
        };
        let bad = |m: String| CliError::Input(format!("{}: {label}: {m}", input.display()));
        let dtype = DType::from(h.dtype);
        let out = out_dtype.unwrap_or(dtype);
        if let (Outputs::Npy(_), DType::BF16) = (&targets, out) {
            return Err(bad(
                "a .npy file cannot hold bfloat16: write a .safetensors output, or use --cast or --out-dtype f32"
                    .to_owned(),
            ));
        }
        let shape = &h.shape;
        let axes: Vec<usize> = match &order {
            Some(axes) => {
                check_output_order(axes, shape).map_err(bad)?;
                axes.clone()
            }
            None => (0..shape.len()).collect(),
        };
        let (elem_strides, out_shape) = permuted_output(shape, &axes);
        let strides: Vec<u64> = elem_strides
            .iter()
            .map(|s| s.saturating_mul(out.size() as u64))
            .collect();
        let layout = h.layout();
        let tiled = TiledSpec {
            extents: shape,
            dtype,
            layout,
        };
        let output = DynSpec {
            extents: shape,
            strides: Some(&strides),
            dtype: out,
        };
        let (params, zp) = if mode == Mode::Dequant {
            let m = match &h.multiplier {
                Some(t) => parse_multiplier(t).map_err(|e| bad(param_text(&e)))?,
                None => global_m.clone().ok_or_else(|| {
                    bad("no multiplier: give --multiplier or this head's multiplier=".to_owned())
                })?,
            };
            let zp = match h.zero_point.as_ref().or(args.zero_point.as_ref()) {
                Some(t) => parse_dequant_zero_point(t).map_err(bad)?,
                None => 0,
            };
            (Some(m), zp)
        } else {
            (None, 0)
        };
        let admitted = match (mode, &params) {
            (Mode::Values, _) => {
                simak::ops::detess::check_inference_dyn(&simak::ops::detess::DynRequest {
                    input: tiled,
                    output,
                })
                .map(|p| Prepared::Detess(a65::detess::prepare(&p)))
            }
            (Mode::Cast, _) => {
                simak::ops::detesscast::check_inference_dyn(&simak::ops::detess::DynRequest {
                    input: tiled,
                    output,
                })
                .map(|p| Prepared::Cast(a65::detesscast::prepare(&p)))
            }
            (Mode::Dequant, m) => simak::ops::detessdequant::check_inference_dyn(
                &simak::ops::detessdequant::DynRequest {
                    input: tiled,
                    output,
                    params: Params::from_bits(m.as_ref().map_or(0, |m| m.bits)).with_zero_point(zp),
                },
            )
            .map(|p| Prepared::Dequant(a65::detessdequant::prepare(&p))),
        };
        let p = admitted.map_err(|e| bad(coded(&e)))?;
        // The span this head would have with 16-byte tile alignment (for the coverage hint).
        span16.push(
            layout
                .with_tile_align(TileAlign::Bytes16)
                .admit(shape, dtype.size() as u8)
                .map_or(p.span(), |v| v.capacity()),
        );
        rows.push(HeadRow {
            name: h.name.clone().unwrap_or_else(|| format!("head{k}")),
            offset: 0,
            span_bytes: p.span(),
            shape: shape.clone(),
            axes: layout.axes.map(|a| a.map_or(-1, |a| a as i8)),
            tile: layout.tile,
            channels: layout.channels.name(),
            tile_align: layout.tile_align.bytes(),
            dtype: dtype.name(),
            output_shape: out_shape,
            output_dtype: out.name(),
            out,
            multiplier_bits: params.as_ref().map(|m| format!("0x{:08x}", m.bits)),
            multiplier: params.as_ref().map(|m| exact_decimal(m.bits)),
            zero_point: params.as_ref().map(|_| zp),
            elements: shape.iter().product(),
            ev74: None,
        });
        prepared.push(p);
    }
    for (k, r) in rows.iter().enumerate() {
        if rows[..k].iter().any(|o| o.name == r.name) {
            return Err(CliError::Input(format!(
                "--head {k}: name {:?} is given to two heads",
                r.name
            )));
        }
    }
    // Place the heads against the buffer before reading it.
    let specs: Vec<HeadSpec> = heads
        .iter()
        .zip(&prepared)
        .map(|(h, p)| HeadSpec {
            span: p.span(),
            offset: h.offset,
        })
        .collect();
    let mut offsets = vec![0u64; specs.len()];
    place_heads(buffer, &specs, &mut offsets).map_err(|e| bad_file(input, coded(&e)))?;
    // A last head placed by default (after the head before it, or at 0) must end at the
    // buffer's end: a buffer left over, most often read with the wrong tile alignment,
    // would give other values silently.
    let end = offsets
        .last()
        .zip(specs.last())
        .map_or(0, |(o, h)| o + h.span);
    if specs.last().is_some_and(|h| h.offset.is_none()) && end != buffer {
        let hint =
            if specs.iter().all(|h| h.offset.is_none()) && span16.iter().sum::<u64>() == buffer {
                "with 16-byte tile alignment they would cover it exactly, as simak's own \
             quanttess and casttess buffers are written: give --tile-align 16 (tile-align=16 \
             in each --head)"
            } else {
                "check each head's shape, tile, channels, dtype and tile alignment (simak's own \
             quanttess and casttess buffers align tiles to 16 bytes); to read only part of a \
             buffer, give the last head's offset (--offset, or offset= in its --head)"
            };
        return Err(bad_file(
            input,
            format!(
                "the last head ends at byte {end} of the {buffer}-byte buffer, and a last head \
                 placed by default must end at the buffer's end: {hint}"
            ),
        ));
    }
    for (r, &o) in rows.iter_mut().zip(&offsets) {
        r.offset = o;
    }
    let bytes = crate::read::read_input(input, "", crate::read::Expect::AtMost(buffer))?;
    let total: u64 = rows.iter().map(|r| r.elements).sum();
    let bar = ctx.progress("detess", rows.len(), total);
    let threads = args.threads as usize;
    let mut results: Vec<Vec<u8>> = Vec::with_capacity(rows.len());
    for (p, r) in prepared.iter().zip(rows.iter_mut()) {
        let span = p.span() as usize;
        let at = r.offset as usize;
        let head = bytes.get(at..at + span).ok_or_else(|| {
            CliError::Internal(anyhow::anyhow!("head {} past the buffer read", r.name))
        })?;
        // The head's bytes at a 16-byte aligned address (SPEC §12.1).
        let mut scratch = crate::engine::try_zeroed("the head's bytes", span + 16)
            .map_err(|e| bad_file(input, e))?;
        let skew = scratch.as_ptr().align_offset(16).min(16);
        let aligned = &mut scratch[skew..skew + span];
        aligned.copy_from_slice(head);
        let mut out = crate::engine::try_zeroed("the output tensor", p.out_span() as usize)
            .map_err(|e| bad_file(input, e))?;
        r.ev74 = p
            .run(backend, threads, aligned, &mut out)
            .map_err(|e| CliError::Internal(anyhow::anyhow!("detess {}: {e}", r.name)))?;
        bar.inc(r.elements);
        results.push(out);
    }
    bar.finish_and_clear();
    let staged: Vec<Staged> = match &targets {
        Outputs::Npy(ts) => ts
            .iter()
            .zip(&rows)
            .zip(&results)
            .map(|((t, r), data)| stage_npy(t, r, data))
            .collect::<Result<_, _>>()?,
        Outputs::Safetensors(t) => {
            let tensors: Vec<(String, StOut<'_>)> = rows
                .iter()
                .zip(results)
                .map(|(r, data)| {
                    (
                        r.name.clone(),
                        StOut::Converted {
                            dtype: st_dtype(r.out),
                            shape: r.output_shape.iter().map(|&e| e as usize).collect(),
                            data,
                        },
                    )
                })
                .collect();
            vec![t.stage_safetensors(tensors, std::collections::HashMap::new())?]
        }
    };
    let summary = DetessSummary {
        command: "detess",
        input: input.display().to_string(),
        buffer_bytes: buffer,
        op: match mode {
            Mode::Values => "detess",
            Mode::Cast => "detess_cast",
            Mode::Dequant => "detess_dequant",
        },
        backend: backend.name(),
        outputs: args
            .output
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        heads: rows,
    };
    Ok(Done::new(summary, staged))
}

/// Stages one head's `.npy` (its output dtype, the output shape in C order).
fn stage_npy(t: &Target, r: &HeadRow, data: &[u8]) -> Result<Staged, CliError> {
    let shape = &r.output_shape;
    let order = npyz::Order::C;
    let body = |w: &mut dyn std::io::Write| w.write_all(data);
    match r.out {
        DType::I8 => t.stage_npy::<i8>(shape, order, body),
        DType::I16 => t.stage_npy::<i16>(shape, order, body),
        DType::I32 => t.stage_npy::<i32>(shape, order, body),
        DType::F16 => t.stage_npy::<half::f16>(shape, order, body),
        // BF16 was refused for .npy outputs before any work.
        _ => t.stage_npy::<f32>(shape, order, body),
    }
}

impl report::Summary for DetessSummary {
    fn text(&self) -> String {
        let mut text = format!(
            "simak detess: {} ({} bytes, {} head{}, {}) -> {}\n",
            self.input,
            self.buffer_bytes,
            self.heads.len(),
            if self.heads.len() == 1 { "" } else { "s" },
            self.op,
            self.outputs.join(", ")
        );
        if self.backend != "a65" {
            text.push_str(&format!("backend {}\n", self.backend));
        }
        for h in &self.heads {
            let params = match (&h.multiplier_bits, &h.multiplier, h.zero_point) {
                (Some(b), Some(m), Some(z)) => {
                    format!("  multiplier {b} ({m})  zero point {z}")
                }
                _ => String::new(),
            };
            text.push_str(&format!(
                "{}  offset {}  {} bytes  {} {} {} tile {} align {}  -> {} {}{}\n",
                h.name,
                h.offset,
                h.span_bytes,
                h.dtype,
                shape_text(&h.shape),
                h.channels,
                shape_text(&h.tile.map(u64::from)),
                h.tile_align,
                h.output_dtype,
                shape_text(&h.output_shape),
                params
            ));
            if let Some(c) = &h.ev74 {
                text.push_str(&format!(
                    "  ev74-sim: {} worker{}, {} simulated cycles, {} DMA commands, {} bytes read (the descriptor's included), {} written\n",
                    c.workers,
                    if c.workers == 1 { "" } else { "s" },
                    c.simulated_cycles,
                    c.dma_commands,
                    c.bytes_read,
                    c.bytes_written
                ));
            }
        }
        text
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn head_specs_parse_with_defaults() {
        let h = parse_head("shape=4,5,20:tile=1,4,5,16:channels=cblock16:dtype=i8").unwrap();
        let l = h.layout();
        assert_eq!(l.axes, [None, Some(0), Some(1), Some(2)]);
        assert_eq!(l.tile_align, TileAlign::Bytes16);
        let h = parse_head("shape=7,3:tile=1,1,7,3:channels=compact:dtype=bf16:offset=32").unwrap();
        assert_eq!(h.layout().axes, [None, None, Some(0), Some(1)]);
        assert_eq!(h.layout().tile_align, TileAlign::Bytes1);
        assert_eq!(h.offset, Some(32));
        for bad in [
            "shape=4:tile=1,1,1,4:channels=compact",
            "shape=4:shape=4:tile=1,1,1,4:channels=compact:dtype=i8",
            "shape=4:tile=1,1,1,4:channels=c16:dtype=i8",
            "shape=4:tile=1,1,1,4:channels=compact:dtype=i8:colour=red",
            "shape=4:tile=1,1,1,4:channels=compact:dtype=i8:tile-align=8",
            "shape=4 tile=1,1,1,4",
        ] {
            assert!(parse_head(bad).is_err(), "{bad}");
        }
    }
}
