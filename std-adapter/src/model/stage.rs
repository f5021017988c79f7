//! A model's stages: each chain of plugins (SPEC §14) as one prepared op.

use simak_core::layout::{Channels, MlaTiled, TileAlign};
use simak_core::ops::casttess::TiledSpec;
use simak_core::ops::preproc::{Border, Format, Frame, Normalize, Output};
use simak_core::ops::quant::Params as QuantParams;
use simak_core::ops::{
    CastTess, Dequant, Detess, DetessCast, DetessDequant, Preproc, Quant, QuantTess,
};
use simak_core::ops::{
    casttess, dequant, detess, detesscast, detessdequant, preproc, quant, quanttess,
};
use simak_core::{DType, DynSpec};

use crate::a65::{self, HostOp, Prepared};

use super::error::{ModelError, ModelErrorKind};
use super::params::{
    ElementType, IN_DTYPE, IN_SHAPES, OUT_DTYPE, OUT_SHAPES, PluginParams, ROUNDING, bad, rounding,
};
use super::{Kernel, Node, Plugin, Step, check_size};

/// The op a stage runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageOp {
    /// Preproc (SPEC §13): a frame → FP32, INT8, QuantTess or CastTess.
    Preproc,
    /// Quant (SPEC §3).
    Quant,
    /// QuantTess (SPEC §3, §5).
    QuantTess,
    /// CastTess (SPEC §4, §5).
    CastTess,
    /// Detess (SPEC §12).
    Detess,
    /// DetessCast (SPEC §12).
    DetessCast,
    /// DetessDequant (SPEC §12.2).
    DetessDequant,
    /// Dequant (SPEC §12.2).
    Dequant,
}

impl StageOp {
    /// The op's name as the front-ends spell it (`preproc`, `quant`, `quanttess`,
    /// `casttess`, `detess`, `detesscast`, `detessdequant`, `dequant`).
    pub const fn name(self) -> &'static str {
        match self {
            StageOp::Preproc => "preproc",
            StageOp::Quant => "quant",
            StageOp::QuantTess => "quanttess",
            StageOp::CastTess => "casttess",
            StageOp::Detess => "detess",
            StageOp::DetessCast => "detesscast",
            StageOp::DetessDequant => "detessdequant",
            StageOp::Dequant => "dequant",
        }
    }

    /// The backends that have the op: `a65` always, `ev74` where the op has an EV74 entry
    /// (SPEC §9: Quant, CastTess, the three Detess ops and Preproc today).
    pub const fn backends(self) -> &'static [&'static str] {
        match self {
            StageOp::Quant
            | StageOp::CastTess
            | StageOp::Detess
            | StageOp::DetessCast
            | StageOp::DetessDequant
            | StageOp::Preproc => &["a65", "ev74"],
            StageOp::QuantTess | StageOp::Dequant => &["a65"],
        }
    }
}

/// What a stage is, for `inspect` and the front-ends.
#[derive(Debug, Clone, PartialEq)]
pub struct StageInfo {
    /// The model input's or output's node name.
    pub name: String,
    /// The plugins the stage fuses, in chain order.
    pub plugins: Vec<String>,
    /// The op.
    pub op: StageOp,
    /// Input stage: the shape of what the caller gives (a frame `[N, H, W, C]` for
    /// interleaved formats, `[N, H·3/2, W]` for NV12 and I420, OpenCV's layout; or the
    /// float tensor's shape). Output stage: the dense tensor's shape. Leading batch
    /// extent included.
    pub shape: Vec<u64>,
    /// Input stage: the caller's dtype (`uint8` frames); output stage: the tensor's.
    pub dtype: ElementType,
    /// Input stage: the IFM's bytes; output stage: the head's bytes in the OFM.
    pub size: u64,
    /// Input stage: the IFM's byte offset among the MLA's inputs (back to back in the
    /// MLA's input order); output stage: the head's byte offset in the OFM.
    pub offset: u64,
    /// Bytes of the caller's input (input stage) or of the OFM head (output stage).
    pub input_bytes: u64,
    /// Bytes written: the IFM (input stage) or the dense tensor (output stage).
    pub output_bytes: u64,
    /// The op's parameters as (name, value) text, in a fixed order.
    pub params: Vec<(String, String)>,
    /// The SPEC §14 rules and defaults the stage used, in words.
    pub rules: Vec<String>,
}

/// Bytes whose start is aligned (safe code: a slightly longer allocation, sliced from its
/// first aligned byte).
#[derive(Debug, Clone)]
pub struct AlignedBytes {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBytes {
    /// `len` zero bytes starting at a multiple of `align` (a power of two).
    pub fn zeroed(len: usize, align: usize) -> AlignedBytes {
        let align = align.max(1);
        let buf = vec![0u8; len + align - 1];
        let start = buf.as_ptr().align_offset(align).min(align - 1);
        AlignedBytes { buf, start, len }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

/// One output tensor of [`Model::postprocess`](super::Model::postprocess).
#[derive(Debug, Clone)]
pub struct OutputTensor {
    /// The model output's node name.
    pub name: String,
    /// Its shape (leading batch extent included).
    pub shape: Vec<u64>,
    /// Its dtype.
    pub dtype: ElementType,
    /// Its bytes, dense row-major, little-endian, aligned to 16.
    pub data: AlignedBytes,
}

impl OutputTensor {
    /// The values of an FP32 tensor (`None` for another dtype).
    pub fn f32_values(&self) -> Option<Vec<f32>> {
        (self.dtype == ElementType::D(DType::F32)).then(|| {
            self.data
                .as_slice()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
    }
}

/// A prepared input stage.
#[derive(Debug)]
pub(crate) enum InputKernel {
    // Boxed: Preproc's state holds its per-plan tables (a few KiB).
    Preproc(Box<Prepared<Preproc>>),
    Quant(Prepared<Quant>),
    QuantTess(Prepared<QuantTess>),
    CastTess(Prepared<CastTess>),
}

/// A prepared output stage.
#[derive(Debug)]
pub(crate) enum OutputKernel {
    Detess(Prepared<Detess>),
    DetessCast(Prepared<DetessCast>),
    DetessDequant(Prepared<DetessDequant>),
    Dequant(Prepared<Dequant>),
}

fn check<O: HostOp>(p: &Prepared<O>, input: &[u8], output: &[u8]) -> Result<(), crate::Error> {
    let (need_in, need_out) = O::needs(p.plan());
    a65::check_ports_at(
        (input.as_ptr() as usize, input.len()),
        (output.as_ptr() as usize, output.len()),
        need_in,
        need_out,
    )?;
    Ok(())
}

/// Runs `p` on `input`, copied once into an aligned buffer when its address is not
/// aligned as the op needs.
fn run_aligned<O: HostOp>(
    p: &Prepared<O>,
    input: &[u8],
    output: &mut [u8],
    threads: usize,
) -> Result<(), crate::Error> {
    let (need_in, _) = O::needs(p.plan());
    if !(input.as_ptr() as usize).is_multiple_of(need_in.align.max(1)) {
        let mut copy = AlignedBytes::zeroed(input.len(), need_in.align);
        copy.as_mut_slice().copy_from_slice(input);
        return Ok(a65::execute_threaded(p, threads, copy.as_slice(), output)?);
    }
    Ok(a65::execute_threaded(p, threads, input, output)?)
}

/// Where a model's stages run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The A65 host CPU, on up to `threads` threads (`a65::execute_threaded`).
    A65 {
        /// Threads (0 counts as 1).
        threads: usize,
    },
    /// The simulated EV74 (`ev74::run_sim_with`), on `workers` workers (1 to 4). A stage
    /// whose op has no EV74 entry is refused with the Runtime's missing-capability error
    /// (0x501): there is no fallback to the A65.
    Ev74Sim {
        /// Workers, 1 to 4.
        workers: usize,
    },
}

/// The Runtime's refusal of an op without an EV74 entry (SPEC §14: no silent fallback),
/// naming the op as the entry it lacks.
pub(crate) fn missing_entry(op: StageOp) -> crate::Error {
    crate::ev74::runtime::RuntimeError::MissingCapability {
        entry: op.name(),
        version: 1,
    }
    .into()
}

fn sim<P>(plan: &P, input: &[u8], output: &mut [u8], workers: usize) -> Result<(), crate::Error>
where
    P: simak_core::ops::OpPlan,
    P::Op: crate::ev74::FirmwareEntry,
{
    crate::ev74::run_sim_with(plan, input, output, &crate::ev74::SimOptions::new(workers))?;
    Ok(())
}

impl InputKernel {
    /// Prepares a Quant or QuantTess stage on its exact integer path.
    pub(crate) fn make_exact(&mut self) {
        match self {
            InputKernel::Quant(p) => *p = a65::quant::prepare_exact(p.plan()),
            InputKernel::QuantTess(p) => *p = a65::quanttess::prepare_exact(p.plan()),
            InputKernel::Preproc(_) | InputKernel::CastTess(_) => {}
        }
    }

    fn op(&self) -> StageOp {
        match self {
            InputKernel::Preproc(_) => StageOp::Preproc,
            InputKernel::Quant(_) => StageOp::Quant,
            InputKernel::QuantTess(_) => StageOp::QuantTess,
            InputKernel::CastTess(_) => StageOp::CastTess,
        }
    }

    pub(crate) fn run(
        &self,
        input: &[u8],
        ifm: &mut [u8],
        backend: Backend,
    ) -> Result<(), crate::Error> {
        match (backend, self) {
            (Backend::A65 { threads }, InputKernel::Preproc(p)) => {
                run_aligned(p, input, ifm, threads)
            }
            (Backend::A65 { threads }, InputKernel::Quant(p)) => {
                run_aligned(p, input, ifm, threads)
            }
            (Backend::A65 { threads }, InputKernel::QuantTess(p)) => {
                run_aligned(p, input, ifm, threads)
            }
            (Backend::A65 { threads }, InputKernel::CastTess(p)) => {
                run_aligned(p, input, ifm, threads)
            }
            (Backend::Ev74Sim { workers }, InputKernel::Quant(p)) => {
                sim(p.plan(), input, ifm, workers)
            }
            (Backend::Ev74Sim { workers }, InputKernel::CastTess(p)) => {
                sim(p.plan(), input, ifm, workers)
            }
            (Backend::Ev74Sim { workers }, InputKernel::Preproc(p)) => {
                sim(p.plan(), input, ifm, workers)
            }
            (Backend::Ev74Sim { .. }, k) => Err(missing_entry(k.op())),
        }
    }
}

impl OutputKernel {
    /// Checks the head's and the output's buffers (before any head is written).
    pub(crate) fn check(
        &self,
        ofm: &[u8],
        info: &StageInfo,
        out: &[u8],
    ) -> Result<(), crate::Error> {
        let head = &ofm[info.offset as usize..(info.offset + info.size) as usize];
        match self {
            OutputKernel::Detess(p) => check(p, head, out),
            OutputKernel::DetessCast(p) => check(p, head, out),
            OutputKernel::DetessDequant(p) => check(p, head, out),
            OutputKernel::Dequant(p) => check(p, head, out),
        }
    }

    fn op(&self) -> StageOp {
        match self {
            OutputKernel::Detess(_) => StageOp::Detess,
            OutputKernel::DetessCast(_) => StageOp::DetessCast,
            OutputKernel::DetessDequant(_) => StageOp::DetessDequant,
            OutputKernel::Dequant(_) => StageOp::Dequant,
        }
    }

    pub(crate) fn run(
        &self,
        head: &[u8],
        out: &mut [u8],
        backend: Backend,
    ) -> Result<(), crate::Error> {
        match (backend, self) {
            (Backend::A65 { threads }, OutputKernel::Detess(p)) => {
                Ok(a65::execute_threaded(p, threads, head, out)?)
            }
            (Backend::A65 { threads }, OutputKernel::DetessCast(p)) => {
                Ok(a65::execute_threaded(p, threads, head, out)?)
            }
            (Backend::A65 { threads }, OutputKernel::DetessDequant(p)) => {
                Ok(a65::execute_threaded(p, threads, head, out)?)
            }
            (Backend::A65 { threads }, OutputKernel::Dequant(p)) => {
                Ok(a65::execute_threaded(p, threads, head, out)?)
            }
            (Backend::Ev74Sim { workers }, OutputKernel::Detess(p)) => {
                sim(p.plan(), head, out, workers)
            }
            (Backend::Ev74Sim { workers }, OutputKernel::DetessCast(p)) => {
                sim(p.plan(), head, out, workers)
            }
            (Backend::Ev74Sim { workers }, OutputKernel::DetessDequant(p)) => {
                sim(p.plan(), head, out, workers)
            }
            (Backend::Ev74Sim { .. }, k) => Err(missing_entry(k.op())),
        }
    }
}

/// What every stage builder reads.
pub(crate) struct Context<'a, 'b> {
    pub(crate) plugins: &'b [Plugin<'a>],
    pub(crate) batch: u64,
}

fn missing(plugin: &str, key: &str) -> ModelError {
    ModelError::at(plugin, key, ModelErrorKind::MissingKey)
}

fn shape_error(plugin: &str, key: &str, message: String) -> ModelError {
    ModelError::at(plugin, key, ModelErrorKind::Shape(message))
}

fn admission(plugin: &str, e: impl Into<crate::Error>) -> ModelError {
    ModelError {
        plugin: Some(plugin.to_owned()),
        key: None,
        kind: ModelErrorKind::Stage(e.into()),
    }
}

fn unsupported(plugin: &str, kernel: String) -> ModelError {
    ModelError::at(plugin, "", ModelErrorKind::UnsupportedKernel { kernel })
}

/// Checks that `shape` (under `key` of `plugin`) leads with the batch extent.
fn check_batch(
    ctx: &Context<'_, '_>,
    plugin: &str,
    key: &str,
    shape: &[u64],
) -> Result<(), ModelError> {
    if shape.first() != Some(&ctx.batch) {
        return Err(shape_error(
            plugin,
            key,
            format!(
                "{shape:?} does not lead with the batch extent {} (shapes carry a leading \
                 batch extent; the batch comes from the batch keys, never from a shape)",
                ctx.batch
            ),
        ));
    }
    Ok(())
}

/// The `MlaTiled` layout of a `slice_shape` over a logical shape of rank `rank` (SPEC §14:
/// rank 3 names roles H, W, C of the last three axes, rank 4 D, H, W, C of the last four).
fn tiled_layout(
    plugin: &str,
    slice: &[u64],
    rank: usize,
    channels: Channels,
    align: TileAlign,
) -> Result<MlaTiled, ModelError> {
    let tile_u32 = |v: u64| {
        u32::try_from(v).map_err(|_| {
            shape_error(
                plugin,
                "slice_shape",
                format!("{slice:?} has an extent above 2^32 − 1"),
            )
        })
    };
    let (axes, tile) = match *slice {
        [h, w, c] if (3..=simak_core::MAX_RANK).contains(&rank) => {
            let r = rank as u8;
            (
                [None, Some(r - 3), Some(r - 2), Some(r - 1)],
                [1, tile_u32(h)?, tile_u32(w)?, tile_u32(c)?],
            )
        }
        [d, h, w, c] if (4..=simak_core::MAX_RANK).contains(&rank) => {
            let r = rank as u8;
            (
                [Some(r - 4), Some(r - 3), Some(r - 2), Some(r - 1)],
                [tile_u32(d)?, tile_u32(h)?, tile_u32(w)?, tile_u32(c)?],
            )
        }
        _ => {
            return Err(shape_error(
                plugin,
                "slice_shape",
                format!(
                    "{slice:?}: a slice of rank 3 (H, W, C) or 4 (D, H, W, C), at most the \
                     tensor's rank {rank} (itself at most {})",
                    simak_core::MAX_RANK
                ),
            ));
        }
    };
    Ok(MlaTiled::new(axes, tile, channels).with_tile_align(align))
}

/// The tiling of tensor `t` of an input-side plugin: `slice_shape` and `align_c16`
/// (PadTo16, tile alignment 16); `cblock = true` is refused.
fn input_tiling(
    pp: &PluginParams<'_>,
    t: usize,
    rank: usize,
    rules: &mut Vec<String>,
) -> Result<MlaTiled, ModelError> {
    let Some((_, slice)) = pp.shape(&["slice_shape"], t)? else {
        return Err(missing(pp.plugin, "slice_shape"));
    };
    if let Some((_, true)) = pp.boolean(&["cblock"], t)? {
        return Err(unsupported(
            pp.plugin,
            "tessellation with cblock=true on the input side (the input-side ops write Compact or PadTo16)".into(),
        ));
    }
    let channels = match pp.boolean(&["align_c16"], t)? {
        Some((_, true)) => Channels::PadTo16,
        Some((_, false)) => Channels::Compact,
        None => {
            rules.push(format!("{}: align_c16 absent → Compact", pp.plugin));
            Channels::Compact
        }
    };
    tiled_layout(pp.plugin, &slice, rank, channels, TileAlign::Bytes16)
}

/// The Quant parameters of tensor `t`: scale (required), zero point (default 0),
/// rounding (required in a quant stage).
fn quant_params(
    pp: &PluginParams<'_>,
    t: usize,
    rules: &mut Vec<String>,
) -> Result<QuantParams, ModelError> {
    let (scale, zp) = pp.scale_zp(t)?;
    let Some((key, scale)) = scale else {
        return Err(missing(pp.plugin, "q_scale"));
    };
    let scale = multiplier(pp, key, scale)?;
    let zp = match zp {
        Some((key, z)) => {
            i32::try_from(z).map_err(|_| bad(pp.plugin, key, "a zero point in i32", z))?
        }
        None => {
            rules.push(format!("{}: zero point absent → 0", pp.plugin));
            0
        }
    };
    let Some((key, r)) = pp.string(ROUNDING, t)? else {
        return Err(missing(pp.plugin, "rounding"));
    };
    let Some(r) = rounding(r) else {
        return Err(bad(
            pp.plugin,
            key,
            "RT_ZERO, RT_EVEN, RT_POSITVE_INFINITY, RT_NEGATIVE_INFINITY or TOZERO, TONEAREST, \
             TOPOSITIVEINFINITY, TONEGATIVEINFINITY",
            format!("{r:?}"),
        ));
    };
    Ok(QuantParams::new(scale).with_zero_point(zp).with_rounding(r))
}

/// What a chain of float-input kernels asks for.
enum FloatOut {
    Quant(QuantParams),
    QuantTess(QuantParams, MlaTiled),
    CastTess(MlaTiled),
}

fn kernel_chain(ctx: &Context<'_, '_>, chain: &[Step]) -> String {
    chain
        .iter()
        .map(|&(p, _)| format!("{:?}", ctx.plugins[p].kernel_name))
        .collect::<Vec<_>>()
        .join(" → ")
}

/// The float stage of `chain` (input side, after any preproc), over a tensor of rank
/// `rank` whose dtype is `dtype`.
fn float_out(
    ctx: &Context<'_, '_>,
    chain: &[Step],
    rank: usize,
    dtype: DType,
    rules: &mut Vec<String>,
) -> Result<FloatOut, ModelError> {
    let pp = |i: usize| ctx.plugins[chain[i].0].params();
    let t = |i: usize| chain[i].1;
    let kernels: Vec<Kernel> = chain.iter().map(|&(p, _)| ctx.plugins[p].kernel).collect();
    let first = ctx.plugins[chain[0].0].name;
    match kernels.as_slice() {
        [Kernel::Quant] => Ok(FloatOut::Quant(quant_params(&pp(0), t(0), rules)?)),
        [Kernel::Quant, Kernel::Tess] => Ok(FloatOut::QuantTess(
            quant_params(&pp(0), t(0), rules)?,
            input_tiling(&pp(1), t(1), rank, rules)?,
        )),
        [Kernel::QuantTess] => Ok(FloatOut::QuantTess(
            quant_params(&pp(0), t(0), rules)?,
            input_tiling(&pp(0), t(0), rank, rules)?,
        )),
        [Kernel::Cast, Kernel::Tess] => {
            if let Some((key, d)) = pp(0).dtype(OUT_DTYPE, t(0))?
                && d != ElementType::D(DType::BF16)
            {
                return Err(bad(
                    first,
                    key,
                    "BF16 (a cast before a tessellation writes BF16)",
                    d.numpy_name(),
                ));
            }
            Ok(FloatOut::CastTess(input_tiling(&pp(1), t(1), rank, rules)?))
        }
        [Kernel::CastTess] => Ok(FloatOut::CastTess(input_tiling(&pp(0), t(0), rank, rules)?)),
        [Kernel::Tess] if dtype == DType::BF16 => {
            rules.push(format!(
                "{first}: tessellation of BF16 input → CastTess (a re-layout)"
            ));
            Ok(FloatOut::CastTess(input_tiling(&pp(0), t(0), rank, rules)?))
        }
        _ => Err(unsupported(
            first,
            format!(
                "chain {} over {} input (SPEC §14: quant, quant → tessellation, quanttess, \
                 cast → tessellation, casttess, or a tessellation of BF16 input)",
                kernel_chain(ctx, chain),
                dtype.name()
            ),
        )),
    }
}

fn plugin_names(ctx: &Context<'_, '_>, chain: &[Step]) -> Vec<String> {
    chain
        .iter()
        .map(|&(p, _)| ctx.plugins[p].name.to_owned())
        .collect()
}

fn layout_params(params: &mut Vec<(String, String)>, layout: &MlaTiled) {
    let axes: Vec<String> = layout
        .axes
        .iter()
        .map(|a| a.map_or_else(|| "-".to_owned(), |a| a.to_string()))
        .collect();
    params.push(("axes".into(), format!("[{}]", axes.join(", "))));
    params.push(("tile".into(), format!("{:?}", layout.tile)));
    params.push(("channels".into(), layout.channels.name().into()));
    params.push(("tile_align".into(), layout.tile_align.bytes().to_string()));
}

fn quant_param_text(params: &mut Vec<(String, String)>, q: &QuantParams) {
    params.push((
        "multiplier".into(),
        format!("{:?}", f32::from_bits(q.multiplier_bits)),
    ));
    params.push(("zero_point".into(), q.zero_point.to_string()));
    params.push(("rounding".into(), q.rounding.name().into()));
}

/// Builds the input stage of `chain` (model input `node` → MLA).
pub(crate) fn input_stage(
    ctx: &Context<'_, '_>,
    node: &Node<'_>,
    chain: &[Step],
) -> Result<(StageInfo, InputKernel), ModelError> {
    let Some(&(p0, t0)) = chain.first() else {
        return Err(ModelError {
            plugin: None,
            key: Some(node.name.to_owned()),
            kind: ModelErrorKind::UnsupportedKernel {
                kernel:
                    "(none: the model input goes to the MLA unchanged, which needs no simak op)"
                        .into(),
            },
        });
    };
    let first = &ctx.plugins[p0];
    if first.kernel == Kernel::Preproc {
        return preproc_stage(ctx, node, chain);
    }
    if chain
        .iter()
        .skip(1)
        .any(|&(p, _)| ctx.plugins[p].kernel == Kernel::Preproc)
    {
        return Err(unsupported(
            first.name,
            format!("chain {} (a preproc comes first)", kernel_chain(ctx, chain)),
        ));
    }
    let pp = first.params();
    let mut rules = Vec::new();
    let Some((skey, shape)) = pp.shape(IN_SHAPES, t0)? else {
        return Err(missing(first.name, "input_shapes"));
    };
    check_batch(ctx, first.name, skey, &shape)?;
    let dtype = match pp.dtype(IN_DTYPE, t0)? {
        Some((_, ElementType::D(d))) if d.is_float() => d,
        Some((key, other)) => {
            return Err(bad(
                first.name,
                key,
                "FP32, BF16 or FP16 (a float input)",
                other.numpy_name(),
            ));
        }
        None => {
            rules.push(format!("{}: in_dtype absent → FP32", first.name));
            DType::F32
        }
    };
    let out = float_out(ctx, chain, shape.len(), dtype, &mut rules)?;
    let input = DynSpec::contiguous(&shape, dtype);
    let mut params = vec![("dtype".to_owned(), dtype.name().to_owned())];
    let (op, kernel, size) = match out {
        FloatOut::Quant(q) => {
            quant_param_text(&mut params, &q);
            let plan = quant::check_inference_dyn(&quant::DynRequest {
                input,
                output: DynSpec::contiguous(&shape, DType::I8),
                params: q,
            })
            .map_err(|e| admission(first.name, e))?;
            (
                StageOp::Quant,
                InputKernel::Quant(Prepared::new(&plan)),
                plan.output().span(),
            )
        }
        FloatOut::QuantTess(q, layout) => {
            quant_param_text(&mut params, &q);
            layout_params(&mut params, &layout);
            let plan = quanttess::check_inference_dyn(&quanttess::DynRequest {
                input,
                output: TiledSpec {
                    extents: &shape,
                    dtype: DType::I8,
                    layout,
                },
                params: q,
            })
            .map_err(|e| admission(first.name, e))?;
            (
                StageOp::QuantTess,
                InputKernel::QuantTess(Prepared::new(&plan)),
                plan.output().capacity(),
            )
        }
        FloatOut::CastTess(layout) => {
            layout_params(&mut params, &layout);
            let plan = casttess::check_inference_dyn(&casttess::DynRequest {
                input,
                output: TiledSpec {
                    extents: &shape,
                    dtype: DType::BF16,
                    layout,
                },
            })
            .map_err(|e| admission(first.name, e))?;
            (
                StageOp::CastTess,
                InputKernel::CastTess(Prepared::new(&plan)),
                plan.output().capacity(),
            )
        }
    };
    let input_bytes = shape.iter().product::<u64>() * dtype.size_u64();
    for n in [Some(node), first.inputs.get(t0)].into_iter().flatten() {
        if let Some(declared) = n.size {
            check_size(
                first.name,
                n.name,
                declared,
                input_bytes,
                "batch × the tensor's bytes",
            )?;
        }
    }
    Ok((
        StageInfo {
            name: String::new(),
            plugins: plugin_names(ctx, chain),
            op,
            shape,
            dtype: ElementType::D(dtype),
            size,
            offset: 0,
            input_bytes,
            output_bytes: size,
            params,
            rules,
        },
        kernel,
    ))
}

/// Keys a `preproc` plugin may have (SPEC §14).
const PREPROC_KEYS: &[&str] = &[
    "input_img_type",
    "output_img_type",
    "normalize",
    "channel_mean",
    "channel_stddev",
    "pad_value",
    "padding",
    "scaled_width",
    "scaled_height",
    "slice_shape",
    "align_c16",
    "cblock",
    "q_scale",
    "quant_scale",
    "dq_scale",
    "channel_params",
    "q_zp",
    "zero_point",
    "dq_zp",
    "rounding",
    "round_off",
    "input_shapes",
    "in_shapes",
    "input_shape",
    "output_shapes",
    "tensor_shapes",
    "out_shapes",
    "output_shape",
    "in_dtype",
    "input_dtype",
    "input_data_type",
    "out_dtype",
    "output_dtype",
    "output_data_type",
    "data_type",
    "batch_size",
    "desired_batch_size",
    "actual_batch_size",
    "batch_sz_model",
    "batch_size_model",
];

/// A list of numbers (one, or one per output channel) under `key`.
fn channel_list(pp: &PluginParams<'_>, key: &str) -> Result<Option<Vec<f64>>, ModelError> {
    use super::json::Json;
    let Some(v) = pp.params.get(key) else {
        return Ok(None);
    };
    let items: Vec<&Json> = match v {
        Json::Arr(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::with_capacity(items.len());
    for i in items {
        match i {
            Json::Num(n) => out.push(n.as_f64().unwrap_or(f64::NAN)),
            _ => {
                return Err(bad(
                    pp.plugin,
                    key,
                    "a number or a list of numbers (one per output channel)",
                    v,
                ));
            }
        }
    }
    Ok(Some(out))
}

fn preproc_stage(
    ctx: &Context<'_, '_>,
    node: &Node<'_>,
    chain: &[Step],
) -> Result<(StageInfo, InputKernel), ModelError> {
    let (p0, t0) = chain[0];
    let plugin = &ctx.plugins[p0];
    let name = plugin.name;
    let pp = plugin.params();
    if let super::json::Json::Obj(members) = plugin.params {
        for (k, _) in members {
            if !PREPROC_KEYS.contains(&k.as_str()) {
                return Err(ModelError::at(name, k, ModelErrorKind::UnknownKey));
            }
        }
    }
    let mut rules = Vec::new();
    let Some((fkey, ftext)) = pp.string(&["input_img_type"], t0)? else {
        return Err(missing(name, "input_img_type"));
    };
    let format = match ftext.to_ascii_uppercase().as_str() {
        "RGB" => Format::RGB8,
        "BGR" => Format::BGR8,
        "RGBX" => Format::RGBX8,
        "BGRX" => Format::BGRX8,
        "GRAY" => Format::GRAY8,
        "NV12" => Format::NV12,
        "I420" | "IYUV" => Format::I420,
        _ => {
            return Err(bad(
                name,
                fkey,
                "RGB, BGR, RGBX, BGRX, GRAY, NV12, I420 or IYUV",
                format!("{ftext:?}"),
            ));
        }
    };
    let bgr = match pp.string(&["output_img_type"], t0)? {
        None => false,
        Some((k, s)) => match s.to_ascii_uppercase().as_str() {
            "RGB" => false,
            "BGR" => true,
            _ => return Err(bad(name, k, "RGB or BGR", format!("{s:?}"))),
        },
    };
    let Some((skey, frame_shape)) = pp.shape(IN_SHAPES, t0)? else {
        return Err(missing(name, "input_shapes"));
    };
    check_batch(ctx, name, skey, &frame_shape)?;
    let (h, w) = match *frame_shape.as_slice() {
        [_, h, w] => (h, w),
        [_, h, w, c] if c == format.pixel_bytes() || (format.is_yuv() && c == 3) => (h, w),
        _ => {
            return Err(shape_error(
                name,
                skey,
                format!(
                    "{frame_shape:?}: a frame is [N, H, W] or [N, H, W, C] with C = {} for {}",
                    format.pixel_bytes(),
                    ftext
                ),
            ));
        }
    };
    for (key, v) in [("scaled_height", h), ("scaled_width", w)] {
        if let Some((k, s)) = pp.integer(&[key], t0)?
            && s as u64 != v
        {
            return Err(bad(
                name,
                k,
                &format!("{v}, the frame's size (resizing is out of scope)"),
                s,
            ));
        }
    }
    // Normalization (SPEC §14: normalize, channel_mean / channel_stddev, input_range).
    let mean = channel_list(&pp, "channel_mean")?;
    let std = channel_list(&pp, "channel_stddev")?;
    let normalize = pp.boolean(&["normalize"], t0)?.map(|(_, b)| b);
    let range = {
        let a = plugin.inputs.get(t0).and_then(|n| n.input_range);
        let b = node.input_range;
        match (a, b) {
            (Some(x), Some(y)) if x != y => {
                return Err(ModelError::at(
                    name,
                    "input_range",
                    ModelErrorKind::ConflictingAliases {
                        other: format!("the model input {:?}'s input_range", node.name),
                    },
                ));
            }
            (x, y) => x.or(y),
        }
    };
    let (divisor, mean, std): (f32, Vec<f32>, Vec<f32>) = if normalize == Some(false) {
        if mean.is_some() || std.is_some() {
            return Err(bad(
                name,
                "normalize",
                "true when channel_mean or channel_stddev is given",
                "false",
            ));
        }
        rules.push(format!(
            "{name}: normalize false → divisor 1, mean 0, std 1 (n = p)"
        ));
        (1.0, vec![0.0], vec![1.0])
    } else if mean.is_some() || std.is_some() {
        let f = |v: Option<Vec<f64>>, d: f32| {
            v.map_or(vec![d], |v| v.iter().map(|&x| x as f32).collect())
        };
        (255.0, f(mean, 0.0), f(std, 1.0))
    } else if let Some((lo, hi)) = range {
        if lo == 0.0 && hi == 255.0 {
            rules.push(format!(
                "{name}: input_range [0, 255] → no normalization (divisor 1, n = p)"
            ));
            (1.0, vec![0.0], vec![1.0])
        } else {
            let std64 = 1.0 / (hi - lo);
            let mean64 = -lo * std64 + 0.0;
            let (m, s) = (mean64 as f32, std64 as f32);
            if !(m.is_finite() && s.is_finite() && (0.0..=1.0).contains(&m) && s > 0.0 && s <= 1.0)
            {
                return Err(ModelError::at(
                    name,
                    "input_range",
                    ModelErrorKind::InputRange { lo, hi },
                ));
            }
            rules.push(format!(
                "{name}: input_range [{lo}, {hi}] → divisor 255, mean {m:?}, std {s:?}"
            ));
            (255.0, vec![m], vec![s])
        }
    } else {
        rules.push(format!(
            "{name}: no mean, std or input_range → divisor 255, mean 0, std 1"
        ));
        (255.0, vec![0.0], vec![1.0])
    };
    let pad: Vec<u8> = match channel_list(&pp, "pad_value")? {
        None => vec![0],
        Some(v) => {
            let mut out = Vec::new();
            for x in v {
                if x.fract() != 0.0 || !(0.0..=255.0).contains(&x) {
                    return Err(bad(
                        name,
                        "pad_value",
                        "integers 0 to 255 (raw 8-bit pad values)",
                        x,
                    ));
                }
                out.push(x as u8);
            }
            out
        }
    };
    let border = match pp.shape(&["padding"], t0)? {
        None => Border::default(),
        Some((_, p)) if p.len() == 4 => Border {
            top: p[0],
            bottom: p[1],
            left: p[2],
            right: p[3],
        },
        Some((k, p)) => return Err(bad(name, k, "[top, bottom, left, right]", format!("{p:?}"))),
    };
    let n = ctx.batch;
    let c = format.channels() as u64;
    let out_shape = vec![
        n,
        border.top.saturating_add(h).saturating_add(border.bottom),
        border.left.saturating_add(w).saturating_add(border.right),
        c,
    ];
    if let Some((k, s)) = pp.shape(OUT_SHAPES, t0)?
        && s != out_shape
    {
        return Err(shape_error(
            name,
            k,
            format!("{s:?}, but the frame with its padding gives {out_shape:?}"),
        ));
    }
    let out_dtype = match pp.dtype(OUT_DTYPE, t0)? {
        None => None,
        Some((_, ElementType::D(d))) if matches!(d, DType::F32 | DType::I8 | DType::BF16) => {
            Some(d)
        }
        Some((k, other)) => return Err(bad(name, k, "FP32, INT8 or BF16", other.numpy_name())),
    };
    let tiled = pp.lookup(&["slice_shape"])?.is_some();
    let output_kind = if chain.len() > 1 {
        if out_dtype.is_some_and(|d| d != DType::F32) || tiled {
            return Err(unsupported(
                name,
                format!(
                    "chain {}: a preproc followed by other kernels writes FP32, untiled",
                    kernel_chain(ctx, chain)
                ),
            ));
        }
        rules.push(format!(
            "{name}: fused with {} into one Preproc",
            plugin_names(ctx, &chain[1..]).join(", ")
        ));
        float_out(ctx, &chain[1..], 4, DType::F32, &mut rules)?
    } else {
        match (out_dtype, tiled) {
            (None | Some(DType::F32), false) => {
                if out_dtype.is_none() {
                    rules.push(format!("{name}: output_dtype absent → FP32"));
                }
                FloatOut::Quant(QuantParams::new(0.0)) // placeholder, replaced below
            }
            (Some(DType::I8), false) => FloatOut::Quant(quant_params(&pp, t0, &mut rules)?),
            (Some(DType::I8), true) => FloatOut::QuantTess(
                quant_params(&pp, t0, &mut rules)?,
                input_tiling(&pp, t0, 4, &mut rules)?,
            ),
            (Some(DType::BF16), true) => FloatOut::CastTess(input_tiling(&pp, t0, 4, &mut rules)?),
            (d, _) => {
                return Err(bad(
                    name,
                    "output_dtype",
                    "FP32 (untiled), INT8, or BF16 with slice_shape",
                    format!(
                        "{}{}",
                        d.map_or("FP32 (by default)", DType::name),
                        if tiled {
                            " with slice_shape"
                        } else {
                            " without slice_shape"
                        }
                    ),
                ));
            }
        }
    };
    let f32_out = chain.len() == 1 && matches!(out_dtype, None | Some(DType::F32));
    let output = if f32_out {
        Output::F32 { strides: None }
    } else {
        match &output_kind {
            FloatOut::Quant(q) => Output::I8 {
                strides: None,
                params: *q,
            },
            FloatOut::QuantTess(q, l) => Output::QuantTess {
                layout: *l,
                params: *q,
            },
            FloatOut::CastTess(l) => Output::CastTess { layout: *l },
        }
    };
    let frame = Frame::packed(format, h, w).with_batch(n);
    let request = preproc::Request {
        frame,
        normalize: Normalize {
            divisor,
            mean: &mean,
            std: &std,
        },
        bgr,
        border,
        pad_value: &pad,
        output,
    };
    let plan = preproc::check_inference(&request).map_err(|e| admission(name, e))?;
    let input_bytes = n.saturating_mul(frame.frame_stride);
    for nd in [Some(node), plugin.inputs.get(t0)].into_iter().flatten() {
        if let Some(declared) = nd.size {
            check_size(
                name,
                nd.name,
                declared,
                input_bytes,
                "batch × the packed frame's bytes",
            )?;
        }
    }
    let size = plan.output_span();
    let shape = if format.is_yuv() {
        vec![n, h * 3 / 2, w]
    } else {
        vec![n, h, w, format.pixel_bytes()]
    };
    let mut params = vec![
        ("format".to_owned(), format.name().to_owned()),
        ("size".to_owned(), format!("{h}x{w}")),
        ("divisor".to_owned(), format!("{divisor:?}")),
        ("mean".to_owned(), format!("{mean:?}")),
        ("std".to_owned(), format!("{std:?}")),
        ("bgr".to_owned(), bgr.to_string()),
        (
            "border".to_owned(),
            format!(
                "[{}, {}, {}, {}]",
                border.top, border.bottom, border.left, border.right
            ),
        ),
        ("pad_value".to_owned(), format!("{pad:?}")),
    ];
    let to = match output {
        Output::F32 { .. } => "f32",
        Output::I8 { .. } => "i8",
        Output::QuantTess { .. } => "quanttess",
        Output::CastTess { .. } => "casttess",
    };
    params.push(("to".to_owned(), to.to_owned()));
    match output {
        Output::I8 { params: q, .. } => quant_param_text(&mut params, &q),
        Output::QuantTess { layout, params: q } => {
            quant_param_text(&mut params, &q);
            layout_params(&mut params, &layout);
        }
        Output::CastTess { layout } => layout_params(&mut params, &layout),
        Output::F32 { .. } => {}
    }
    Ok((
        StageInfo {
            name: String::new(),
            plugins: plugin_names(ctx, chain),
            op: StageOp::Preproc,
            shape,
            dtype: ElementType::U8,
            size,
            offset: 0,
            input_bytes,
            output_bytes: size,
            params,
            rules,
        },
        InputKernel::Preproc(Box::new(Prepared::new(&plan))),
    ))
}

/// The dequantization parameters of tensor `t`: scale (required), zero point (default 0).
fn dequant_params(
    pp: &PluginParams<'_>,
    t: usize,
    rules: &mut Vec<String>,
) -> Result<dequant::Params, ModelError> {
    let (scale, zp) = pp.scale_zp(t)?;
    let Some((key, scale)) = scale else {
        return Err(missing(pp.plugin, "dq_scale"));
    };
    let scale = multiplier(pp, key, scale)?;
    let zp = match zp {
        Some((key, z)) => {
            i32::try_from(z).map_err(|_| bad(pp.plugin, key, "a zero point in i32", z))?
        }
        None => {
            rules.push(format!("{}: zero point absent → 0", pp.plugin));
            0
        }
    };
    Ok(dequant::Params::new(scale).with_zero_point(zp))
}

/// A scale of the manifest as the binary32 multiplier of SPEC §3 and §12.2: finite and
/// positive after rounding to binary32 (a value beyond binary32's range or rounding to 0
/// is refused here, naming the plugin and the key, rather than by the op's admission).
fn multiplier(pp: &PluginParams<'_>, key: &str, scale: f64) -> Result<f32, ModelError> {
    let m = scale as f32;
    if m.is_finite() && m > 0.0 {
        Ok(m)
    } else {
        Err(bad(
            pp.plugin,
            key,
            "a scale > 0 that is finite as a binary32",
            scale,
        ))
    }
}

fn dequant_out(
    pp: &PluginParams<'_>,
    t: usize,
    rules: &mut Vec<String>,
) -> Result<DType, ModelError> {
    match pp.dtype(OUT_DTYPE, t)? {
        None => {
            rules.push(format!("{}: out_dtype absent → FP32", pp.plugin));
            Ok(DType::F32)
        }
        Some((_, ElementType::D(d))) if d.is_float() => Ok(d),
        Some((k, other)) => Err(bad(pp.plugin, k, "FP32, FP16 or BF16", other.numpy_name())),
    }
}

/// The tiled head of a detess plugin's tensor `t`: its dtype, logical shape and layout.
fn detess_head(
    ctx: &Context<'_, '_>,
    pp: &PluginParams<'_>,
    t: usize,
    rules: &mut Vec<String>,
) -> Result<(DType, Vec<u64>, MlaTiled), ModelError> {
    let dtype = match pp.dtype(IN_DTYPE, t)? {
        Some((_, ElementType::D(d)))
            if matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::BF16) =>
        {
            d
        }
        Some((k, other)) => {
            return Err(bad(
                pp.plugin,
                k,
                "INT8, INT16, INT32 or BF16 (the MLA's output)",
                other.numpy_name(),
            ));
        }
        None => return Err(missing(pp.plugin, "in_dtype")),
    };
    let mut aliases: Vec<&'static str> = OUT_SHAPES.to_vec();
    aliases.push("frame_shape");
    let Some((skey, shape)) = pp.shape(&aliases, t)? else {
        return Err(missing(pp.plugin, "output_shapes"));
    };
    check_batch(ctx, pp.plugin, skey, &shape)?;
    let Some((_, slice)) = pp.shape(&["slice_shape"], t)? else {
        return Err(missing(pp.plugin, "slice_shape"));
    };
    let a = pp.boolean(&["align_c16"], t)?.map(|(_, b)| b);
    let b = pp.boolean(&["cblock"], t)?.map(|(_, b)| b);
    let channels = match (a.unwrap_or(false), b.unwrap_or(false)) {
        (false, false) => Channels::Compact,
        (true, false) => Channels::PadTo16,
        (true, true) => Channels::CBlock16,
        (false, true) => {
            return Err(bad(
                pp.plugin,
                "cblock",
                "false when align_c16 is false (SPEC §12.1)",
                true,
            ));
        }
    };
    if a.is_none() || b.is_none() {
        rules.push(format!("{}: align_c16 / cblock absent → false", pp.plugin));
    }
    let align = if channels == Channels::Compact {
        rules.push(format!(
            "{}: Compact output → tile alignment 1 (SPEC §12.1)",
            pp.plugin
        ));
        TileAlign::Bytes1
    } else {
        TileAlign::Bytes16
    };
    Ok((
        dtype,
        shape.clone(),
        tiled_layout(pp.plugin, &slice, shape.len(), channels, align)?,
    ))
}

/// Builds the output stage of `chain` (an OFM head → a model output).
pub(crate) fn output_stage(
    ctx: &Context<'_, '_>,
    chain: &[Step],
) -> Result<(StageInfo, OutputKernel), ModelError> {
    let kernels: Vec<Kernel> = chain.iter().map(|&(p, _)| ctx.plugins[p].kernel).collect();
    let Some(&(p0, t0)) = chain.first() else {
        return Err(ModelError::new(ModelErrorKind::UnsupportedKernel {
            kernel: "(none: an OFM head goes out unchanged, which needs no simak op)".into(),
        }));
    };
    let first = &ctx.plugins[p0];
    let pp0 = first.params();
    let mut rules = Vec::new();
    let mut params = Vec::new();
    let (op, kernel, shape, dtype, size) = match kernels.as_slice() {
        [Kernel::Detess, ..] | [Kernel::DetessDequant] => {
            let (tdtype, shape, layout) = detess_head(ctx, &pp0, t0, &mut rules)?;
            params.push(("dtype".into(), tdtype.name().into()));
            layout_params(&mut params, &layout);
            let input = TiledSpec {
                extents: &shape,
                dtype: tdtype,
                layout,
            };
            let dq = match kernels.as_slice() {
                [Kernel::DetessDequant] => Some((pp0, t0)),
                [Kernel::Detess, Kernel::Dequant] => {
                    Some((ctx.plugins[chain[1].0].params(), chain[1].1))
                }
                _ => None,
            };
            match (kernels.as_slice(), dq) {
                (_, Some((pp, t))) => {
                    if let Some((k, d)) = pp.dtype(IN_DTYPE, t)?
                        && d != ElementType::D(tdtype)
                    {
                        return Err(bad(
                            pp.plugin,
                            k,
                            &format!("{} (the detessellation's dtype)", tdtype.name()),
                            d.numpy_name(),
                        ));
                    }
                    let q = dequant_params(&pp, t, &mut rules)?;
                    let out = dequant_out(&pp, t, &mut rules)?;
                    params.push((
                        "multiplier".into(),
                        format!("{:?}", f32::from_bits(q.multiplier_bits)),
                    ));
                    params.push(("zero_point".into(), q.zero_point.to_string()));
                    params.push(("out_dtype".into(), out.name().into()));
                    let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
                        input,
                        output: DynSpec::contiguous(&shape, out),
                        params: q,
                    })
                    .map_err(|e| admission(first.name, e))?;
                    let span = plan.input().capacity();
                    (
                        StageOp::DetessDequant,
                        OutputKernel::DetessDequant(Prepared::new(&plan)),
                        shape,
                        out,
                        span,
                    )
                }
                ([Kernel::Detess, Kernel::Cast], None) => {
                    let pp = ctx.plugins[chain[1].0].params();
                    if let Some((k, d)) = pp.dtype(OUT_DTYPE, chain[1].1)?
                        && d != ElementType::D(DType::F32)
                    {
                        return Err(bad(
                            pp.plugin,
                            k,
                            "FP32 (a cast after a detessellation reads BF16, writes FP32)",
                            d.numpy_name(),
                        ));
                    }
                    let plan = detesscast::check_inference_dyn(&detess::DynRequest {
                        input,
                        output: DynSpec::contiguous(&shape, DType::F32),
                    })
                    .map_err(|e| admission(first.name, e))?;
                    let span = plan.input().capacity();
                    (
                        StageOp::DetessCast,
                        OutputKernel::DetessCast(Prepared::new(&plan)),
                        shape,
                        DType::F32,
                        span,
                    )
                }
                ([Kernel::Detess], None) => {
                    let plan = detess::check_inference_dyn(&detess::DynRequest {
                        input,
                        output: DynSpec::contiguous(&shape, tdtype),
                    })
                    .map_err(|e| admission(first.name, e))?;
                    let span = plan.input().capacity();
                    (
                        StageOp::Detess,
                        OutputKernel::Detess(Prepared::new(&plan)),
                        shape,
                        tdtype,
                        span,
                    )
                }
                _ => {
                    return Err(unsupported(
                        first.name,
                        format!(
                            "chain {} (SPEC §14: detessellation → dequantization | cast, or alone)",
                            kernel_chain(ctx, chain)
                        ),
                    ));
                }
            }
        }
        [Kernel::Dequant] => {
            let in_dtype = match pp0.dtype(IN_DTYPE, t0)? {
                Some((_, ElementType::D(d))) if d.is_int() => d,
                Some((k, other)) => {
                    return Err(bad(
                        first.name,
                        k,
                        "INT8, INT16 or INT32",
                        other.numpy_name(),
                    ));
                }
                None => return Err(missing(first.name, "in_dtype")),
            };
            let mut aliases: Vec<&'static str> = IN_SHAPES.to_vec();
            aliases.extend_from_slice(OUT_SHAPES);
            let Some((skey, shape)) = pp0.shape(&aliases, t0)? else {
                return Err(missing(first.name, "input_shapes"));
            };
            check_batch(ctx, first.name, skey, &shape)?;
            let q = dequant_params(&pp0, t0, &mut rules)?;
            let out = dequant_out(&pp0, t0, &mut rules)?;
            params.push(("dtype".into(), in_dtype.name().into()));
            params.push((
                "multiplier".into(),
                format!("{:?}", f32::from_bits(q.multiplier_bits)),
            ));
            params.push(("zero_point".into(), q.zero_point.to_string()));
            params.push(("out_dtype".into(), out.name().into()));
            let plan = dequant::check_inference_dyn(&dequant::DynRequest {
                input: DynSpec::contiguous(&shape, in_dtype),
                output: DynSpec::contiguous(&shape, out),
                params: q,
            })
            .map_err(|e| admission(first.name, e))?;
            let span = plan.input().span();
            (
                StageOp::Dequant,
                OutputKernel::Dequant(Prepared::new(&plan)),
                shape,
                out,
                span,
            )
        }
        _ => {
            return Err(unsupported(
                first.name,
                format!(
                    "chain {} (SPEC §14: detessellation → dequantization | cast, detessellation, \
                     detessdequant or dequantization)",
                    kernel_chain(ctx, chain)
                ),
            ));
        }
    };
    let output_bytes = shape.iter().product::<u64>() * dtype.size_u64();
    if let Some(n) = first.inputs.get(t0)
        && let Some(declared) = n.size
    {
        check_size(
            first.name,
            n.name,
            declared,
            size,
            "the head's span in the OFM",
        )?;
    }
    if let Some(&(pl, tl)) = chain.last()
        && let Some(n) = ctx.plugins[pl].outputs.get(tl)
        && let Some(declared) = n.size
    {
        check_size(
            ctx.plugins[pl].name,
            n.name,
            declared,
            output_bytes,
            "the dense tensor's bytes",
        )?;
    }
    Ok((
        StageInfo {
            name: String::new(),
            plugins: plugin_names(ctx, chain),
            op,
            shape,
            dtype: ElementType::D(dtype),
            size,
            offset: 0,
            input_bytes: size,
            output_bytes,
            params,
            rules,
        },
        kernel,
    ))
}

/// The product of a declared shape's extents (saturating: a size no buffer has).
fn bytes_of(shape: &[u64]) -> u64 {
    shape
        .iter()
        .try_fold(1u64, |a, &b| a.checked_mul(b))
        .unwrap_or(u64::MAX)
}

/// Checks an `unpack_transform`'s declared sizes (SPEC §14): `input_shapes [[1, N]]` is the
/// OFM's bytes, `output_shapes` each head's bytes (products of the shapes).
pub(crate) fn check_unpack(
    ctx: &Context<'_, '_>,
    unpack: usize,
    spans: &[u64],
) -> Result<(), ModelError> {
    let plugin = &ctx.plugins[unpack];
    let pp = PluginParams {
        plugin: plugin.name,
        params: plugin.params,
        tensors: 1,
    };
    if let Some((k, s)) = pp.shape(IN_SHAPES, 0)? {
        check_size(
            plugin.name,
            k,
            bytes_of(&s),
            spans.iter().sum(),
            "the sum of the heads' spans",
        )?;
    }
    let pp = PluginParams {
        plugin: plugin.name,
        params: plugin.params,
        tensors: spans.len(),
    };
    for (i, &span) in spans.iter().enumerate() {
        if let Some((k, s)) = pp.shape(OUT_SHAPES, i)? {
            check_size(
                plugin.name,
                k,
                bytes_of(&s),
                span,
                &format!("head {i}'s span"),
            )?;
        }
    }
    Ok(())
}
