//! `simak quant`: quantize the float tensors of a `.safetensors` or `.npy` file to INT8.
//!
//! The output target is checked before the input is read; nothing is written until every
//! selected tensor has been checked and quantized, then the output is staged and published
//! by [`crate::report::finish`] ([`crate::output::Target`]).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use clap::{ArgGroup, Args};
use indicatif::ProgressBar;
use safetensors::tensor::Dtype as StDtype;
use serde::Serialize;
use simak::DType;
use simak::ops::quant::{Params, Rounding};

use crate::engine::{self, Aligned, Backend, Quantized, Tensor};
use crate::error::{CliError, Subject, bad_file, bad_tensor};
use crate::output::{self, StOut, Staged, Target};
use crate::params::{
    BackendArg, Calibration, MultiplierArg, NpyDtypeArg, RoundingArg, absmax_multiplier,
    check_output_order, distinct, exact_decimal, parse_multiplier, parse_output_order,
    parse_zero_point, permuted_output,
};
use crate::read::{StFile, read_npy_as};
use crate::report::{self, Context, Done, Row, Total, shape_text, table};

/// Quantize the float tensors of a .safetensors or .npy file to INT8 (per tensor: one
/// multiplier and zero point a tensor).
#[derive(Debug, Args)]
#[command(
    long_about = "Quantize the float tensors of a .safetensors or .npy file to INT8.\n\n\
    Each element x becomes saturate(round(binary32(x * M)) + Z) in [-128, 127]: the product \
    is rounded once to binary32 (nearest-even, subnormals kept), then to an integer with \
    --rounding; NaN gives Z, +inf 127, -inf -128.\n\n\
    Quantization is per tensor only: one multiplier M and one zero point Z for a whole \
    tensor (--multiplier for every tensor, or --calibrate for one M per tensor); there is \
    no per-channel or per-block scale.\n\n\
    .safetensors: every F32, BF16 and F16 tensor (or only those named with --tensor) \
    becomes an I8 tensor of the same name and shape; other tensors are copied unchanged; \
    the input's metadata is kept and each quantized tensor's parameters are recorded as \
    simak.<tensor>.multiplier_bits (0x%08x), simak.<tensor>.zero_point, \
    simak.<tensor>.rounding, simak.<tensor>.input_dtype and simak.<tensor>.calibration.\n\n\
    .npy: a float32 or float16 array (little- or big-endian, C or Fortran order) becomes \
    an int8 .npy of the same shape and order.\n\n\
    From ONNX QuantizeLinear (y = saturate(round(x / scale) + zero_point)): pass \
    --multiplier with 1/scale rounded once to binary32. When 1/scale is exact (scale a \
    power of two) every result agrees; otherwise x * M and x / scale can round to \
    different binary32 values, and at exact ties the integer can differ by one (scale \
    0.039215686 = 1/25.5: x = -5 gives the tie -127.5 here, -128 under nearest-even, \
    while a library that divides gets -127.49999, -127). docs/contract.md §3.\n\n\
    The output is written to a temporary file in the output's folder and renamed over \
    --output on success (an existing file is replaced atomically); on any error nothing \
    is written. A summary table (tensor, shape, dtype, multiplier bits, zero point, \
    rounding, saturated count, elements, elements/s of the execute call) is printed on \
    stdout. \"Saturated\" counts elements whose rounded value plus zero point fell \
    outside [-128, 127]."
)]
pub struct QuantArgs {
    /// Input file: .safetensors (F32, BF16, F16 tensors) or .npy (float32, float16).
    #[arg(long, value_name = "PATH")]
    input: PathBuf,
    /// Quantize only this tensor (safetensors; repeatable). Default: every F32, BF16 and
    /// F16 tensor. Unselected tensors are copied unchanged.
    #[arg(long = "tensor", value_name = "NAME")]
    tensors: Vec<String>,
    /// .npy inputs: read the elements as DTYPE. bf16 reads ml_dtypes' bfloat16 files (descr
    /// <V2, 2-byte raw data: numpy has no name for bfloat16); any other descr is refused.
    #[arg(long, value_enum, value_name = "DTYPE")]
    dtype: Option<NpyDtypeArg>,
    /// Output file; its format follows the input (.safetensors with I8 tensors, or int8
    /// .npy). Replaced atomically if it exists; must not be the input.
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
    // --multiplier, --calibrate, --zero-point, --rounding.
    #[command(flatten)]
    scale: ScaleArgs,
    /// Execution backend. a65 runs on the host CPU cores (the fastest route the CPU offers;
    /// every route gives bit-identical results); ev74-sim runs the EV74 firmware on the host
    /// simulator (byte-identical to a65).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BackendArg::A65)]
    backend: BackendArg,
    /// EV74 worker ring size, 1 to 4 (with --backend ev74-sim only; 4 when not given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4))]
    workers: Option<u64>,
    /// Store each quantized tensor permuted: the output holds numpy.transpose(x, AXES) in C
    /// order (e.g. 0,2,3,1 turns NCHW into NHWC, shape [N, H, W, C]), quantized straight
    /// into that layout on either backend. AXES must be a permutation of the tensor's axes;
    /// every selected tensor must have that rank.
    #[arg(long, value_name = "AXES", allow_hyphen_values = true)]
    output_order: Option<String>,
}

/// The Quant parameter flags of `simak quant`, shared with `simak quanttess` (which words
/// their help more briefly, pointing here).
#[derive(Debug, Clone, Args)]
#[command(group(
    ArgGroup::new("scale").required(true).args(["multiplier", "calibrate"])
))]
pub struct ScaleArgs {
    /// The multiplier M (it multiplies: q = x * M). A decimal such as 0.0078125, rounded
    /// once to the nearest binary32, or exact bits as 0x followed by 8 hex digits
    /// (0x3e99999a). Must be finite and > 0 (subnormals allowed). From an ONNX
    /// QuantizeLinear scale s: M = 1/s rounded to binary32 (see the long help).
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    multiplier: Option<String>,
    /// Pick the multiplier per tensor from its data instead of --multiplier. absmax:
    /// m = 127f32 / max|x| over the finite elements, computed as one binary32 division
    /// (nearest-even) of 127 by the exact f32 value of max|x|; zero point 0. A tensor with
    /// no finite nonzero element (all zero, NaN or infinite, or empty) gets m = 1.0, ONNX
    /// Runtime's rule for a zero range, and the summary says so; a tensor whose m is not
    /// finite (max|x| below about 7.5e-37) is an error.
    #[arg(long, value_enum, value_name = "METHOD")]
    calibrate: Option<Calibration>,
    /// Zero point Z added after rounding, in [-128, 127]. Default 0. Not with --calibrate.
    #[arg(
        long,
        value_name = "Z",
        allow_hyphen_values = true,
        conflicts_with = "calibrate"
    )]
    zero_point: Option<String>,
    /// Integer rounding of the binary32 product.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = RoundingArg::NearestEven)]
    rounding: RoundingArg,
}

/// How each tensor's multiplier is chosen.
#[derive(Debug, Clone)]
pub enum Scale {
    /// One multiplier for every tensor, from `--multiplier`.
    Fixed(MultiplierArg),
    /// Per-tensor calibration, from `--calibrate`.
    Calibrate(Calibration),
}

/// The Quant parameters the flags give, before any tensor's calibration.
#[derive(Debug, Clone)]
pub struct Quantization {
    /// Multiplier choice.
    pub scale: Scale,
    /// Zero point for `--multiplier` (0 under calibration).
    pub zero_point: i32,
    /// Rounding mode.
    pub rounding: Rounding,
}

/// A tensor's calibration for the summary: the method and the largest finite magnitude it
/// found (`None`: no finite nonzero element).
pub type Calibrated = (&'static str, Option<f32>);

impl ScaleArgs {
    /// The parameters the flags give; errors name `input`.
    ///
    /// # Errors
    ///
    /// Bad input (exit 2) for a multiplier or zero point outside its rule.
    pub fn parse(&self, input: &Path) -> Result<Quantization, CliError> {
        let scale = match (&self.multiplier, self.calibrate) {
            (Some(text), _) => {
                Scale::Fixed(parse_multiplier(text).map_err(|e| bad_file(input, e))?)
            }
            (None, Some(c)) => Scale::Calibrate(c),
            // clap's required group makes this unreachable; report it as usage anyway.
            (None, None) => {
                return Err(bad_file(
                    input,
                    "one of --multiplier or --calibrate is required",
                ));
            }
        };
        let zero_point = match &self.zero_point {
            Some(text) => parse_zero_point(text).map_err(|e| bad_file(input, e))?,
            None => 0,
        };
        Ok(Quantization {
            scale,
            zero_point,
            rounding: self.rounding.into(),
        })
    }
}

impl Quantization {
    /// The parameters of `tensor`: the fixed multiplier with the zero point, or the absmax
    /// multiplier of its data (zero point 0); with the calibration found, if any.
    ///
    /// # Errors
    ///
    /// Bad input naming `subject` when the data gives no finite multiplier.
    pub fn params(
        &self,
        tensor: &Tensor<'_>,
        subject: &Subject<'_>,
    ) -> Result<(Params, Option<Calibrated>), CliError> {
        let (params, calibrated) = match &self.scale {
            Scale::Fixed(m) => (
                Params::from_bits(m.bits).with_zero_point(self.zero_point),
                None,
            ),
            Scale::Calibrate(Calibration::Absmax) => {
                let a = engine::abs_max(tensor).map_err(|e| subject.engine(e))?;
                let bits = absmax_multiplier(a).map_err(|e| subject.bad(&e))?;
                (Params::from_bits(bits), Some(("absmax", a)))
            }
        };
        Ok((params.with_rounding(self.rounding), calibrated))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Safetensors,
    Npy,
}

impl Format {
    fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "safetensors" => Some(Format::Safetensors),
            "npy" => Some(Format::Npy),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Format::Safetensors => "safetensors",
            Format::Npy => "npy",
        }
    }

    /// The output format: that of the input.
    fn output(self) -> output::Format {
        match self {
            Format::Safetensors => output::Format::Safetensors,
            Format::Npy => output::Format::Npy,
        }
    }
}

/// A tensor passed through unchanged (safetensors only).
#[derive(Debug, Clone, Serialize)]
struct Copied {
    name: String,
    dtype: String,
    shape: Vec<u64>,
}

#[derive(Debug, Clone, Serialize)]
struct MultiplierEcho {
    text: String,
    bits: String,
    exact: String,
}

/// What `simak quant` did: the parameters, one row per quantized tensor, the tensors copied.
#[derive(Debug, Clone, Serialize)]
pub struct QuantSummary {
    command: &'static str,
    input: String,
    output: String,
    format: &'static str,
    backend: &'static str,
    /// Worker ring size of `ev74-sim` (`null` for `a65`).
    workers: Option<usize>,
    multiplier: Option<MultiplierEcho>,
    calibration: Option<String>,
    rounding: &'static str,
    /// `--output-order` axes (`null` when not given: outputs keep the input's shape).
    output_order: Option<Vec<usize>>,
    tensors: Vec<Row>,
    copied: Vec<Copied>,
    total: Total,
}

/// How this run quantizes the tensors of its input.
struct Quantizer<'a> {
    file: &'a Path,
    /// `--output-order` axes.
    order: Option<&'a [usize]>,
    quantization: &'a Quantization,
    backend: Backend,
    ctx: &'a Context,
    /// `--dtype` of a `.npy` input.
    npy_dtype: Option<DType>,
}

/// Runs `simak quant`: quantizes and stages the output.
///
/// # Errors
///
/// [`CliError::Input`] for bad input (exit 2, no output written), [`CliError::Internal`]
/// otherwise.
pub fn run(args: QuantArgs, ctx: &Context) -> Result<Done<QuantSummary>, CliError> {
    let input = args.input.as_path();
    let backend = args.backend.with_workers(args.workers)?;
    let quantization = args.scale.parse(input)?;
    let order = match &args.output_order {
        Some(text) => Some(parse_output_order(text).map_err(|e| bad_file(input, e))?),
        None => None,
    };
    let tensors = distinct(args.tensors)?;
    let format = Format::of(input).ok_or_else(|| {
        bad_file(
            input,
            "unsupported input file type (quant reads .safetensors and .npy files)",
        )
    })?;
    if format == Format::Npy && !tensors.is_empty() {
        return Err(bad_file(
            input,
            "--tensor applies to .safetensors inputs only (a .npy file holds one tensor)",
        ));
    }
    let target = Target::new("--output", &args.output, format.output())?;
    target.not_input("--output", input)?;
    let expect = match format {
        Format::Safetensors => crate::read::Expect::Safetensors,
        Format::Npy => crate::read::Expect::Npy,
    };
    let bytes = crate::read::read_input(input, "", expect)?;
    let quantizer = Quantizer {
        file: input,
        order: order.as_deref(),
        quantization: &quantization,
        backend,
        ctx,
        npy_dtype: args.dtype.map(NpyDtypeArg::dtype),
    };
    let (rows, copied, staged) = match format {
        Format::Safetensors => quantizer.safetensors(&tensors, &target, &bytes)?,
        Format::Npy => quantizer.npy(&target, &bytes)?,
    };
    let (multiplier, calibration) = match &quantization.scale {
        Scale::Fixed(m) => (
            Some(MultiplierEcho {
                text: m.text.clone(),
                bits: format!("0x{:08x}", m.bits),
                exact: exact_decimal(m.bits),
            }),
            None,
        ),
        Scale::Calibrate(c) => (None, Some(c.to_string())),
    };
    let total = Total::of(&rows);
    let summary = QuantSummary {
        command: "quant",
        input: input.display().to_string(),
        output: args.output.display().to_string(),
        format: format.name(),
        backend: backend.name(),
        workers: backend.workers(),
        multiplier,
        calibration,
        rounding: quantization.rounding.name(),
        output_order: order,
        tensors: rows,
        copied,
        total,
    };
    Ok(Done::new(summary, vec![staged]))
}

impl report::Summary for QuantSummary {
    fn text(&self) -> String {
        let mut out = format!(
            "simak quant: {} ({}) -> {} (backend {})\n",
            self.input, self.format, self.output, self.backend
        );
        match (&self.multiplier, &self.calibration) {
            (Some(m), _) => out.push_str(&format!(
                "multiplier {:?} = binary32 {} = {} exactly; rounding {}\n",
                m.text, m.bits, m.exact, self.rounding
            )),
            (None, Some(c)) => out.push_str(&format!(
                "multiplier: {c} calibration per tensor, m = 127f32 / max|x| (one binary32 division), zero point 0; rounding {}\n",
                self.rounding
            )),
            (None, None) => {}
        }
        if let Some(axes) = &self.output_order {
            let axes: Vec<String> = axes.iter().map(usize::to_string).collect();
            out.push_str(&format!(
                "output order {}: each output holds numpy.transpose(x, ({})) in C order\n",
                axes.join(","),
                axes.join(", ")
            ));
        }
        out.push_str(&table(&self.tensors));
        if !self.copied.is_empty() {
            let names: Vec<String> = self
                .copied
                .iter()
                .map(|c| format!("{} ({} {})", c.name, c.dtype, shape_text(&c.shape)))
                .collect();
            out.push_str(&format!(
                "copied unchanged: {}: {}\n",
                self.copied.len(),
                names.join(", ")
            ));
        }
        out
    }
}

fn float_dtype(dtype: StDtype) -> Option<DType> {
    match dtype {
        StDtype::F32 => Some(DType::F32),
        StDtype::BF16 => Some(DType::BF16),
        StDtype::F16 => Some(DType::F16),
        _ => None,
    }
}

impl Quantizer<'_> {
    fn progress(&self, tensors: usize, elements: u64) -> ProgressBar {
        self.ctx.progress("quant", tensors, elements)
    }

    /// Quantizes one tensor; `name` is `None` for a `.npy` file; `bar` advances as the
    /// tensor's pieces complete.
    fn one(
        &self,
        name: Option<&str>,
        tensor: &Tensor<'_>,
        bar: &ProgressBar,
    ) -> Result<(Quantized, Option<Calibrated>), CliError> {
        let subject = Subject {
            file: self.file,
            tensor: name,
            label: name.unwrap_or("tensor"),
        };
        let (params, calibrated) = self.quantization.params(tensor, &subject)?;
        let q = engine::quantize(tensor, params, self.backend, &|n| bar.inc(n))
            .map_err(|e| subject.engine(e))?;
        Ok((q, calibrated))
    }

    /// Quantizes the selected tensors of a `.safetensors` file (`tensors`; empty: every
    /// float tensor) and stages the output with the others copied.
    fn safetensors(
        &self,
        tensors: &[String],
        target: &Target,
        bytes: &[u8],
    ) -> Result<(Vec<Row>, Vec<Copied>, Staged), CliError> {
        let file = self.file;
        let st = StFile::open(file, bytes)?;
        let names = &st.names;
        let selected: BTreeSet<String> = if tensors.is_empty() {
            let mut all = BTreeSet::new();
            for name in names {
                if float_dtype(st.tensor(name)?.dtype()).is_some() {
                    all.insert(name.clone());
                }
            }
            if all.is_empty() {
                return Err(bad_file(
                    file,
                    format!(
                        "no F32, BF16 or F16 tensor to quantize (the file holds {})",
                        crate::report::count(names.len() as u64, "tensor", "tensors")
                    ),
                ));
            }
            all
        } else {
            for name in tensors {
                let v = st.named(name)?;
                if float_dtype(v.dtype()).is_none() {
                    return Err(bad_tensor(
                        file,
                        name,
                        format!(
                            "dtype {} is not supported (quant takes F32, BF16, F16)",
                            v.dtype()
                        ),
                    ));
                }
            }
            tensors.iter().cloned().collect()
        };

        let mut total_elements = 0u64;
        for name in &selected {
            let v = st.tensor(name)?;
            if let Some(axes) = self.order {
                let shape: Vec<u64> = v.shape().iter().map(|&e| e as u64).collect();
                check_output_order(axes, &shape).map_err(|e| bad_tensor(file, name, e))?;
            }
            total_elements = total_elements.saturating_add(
                v.shape()
                    .iter()
                    .fold(1u64, |n, &e| n.saturating_mul(e as u64)),
            );
        }
        let bar = self.progress(selected.len(), total_elements);

        let mut rows = Vec::new();
        let mut copied = Vec::new();
        let mut outputs: Vec<(String, StOut<'_>)> = Vec::with_capacity(names.len());
        let mut meta: HashMap<String, String> = st.metadata.clone();
        for name in names {
            let v = st.tensor(name)?;
            let shape: Vec<u64> = v.shape().iter().map(|&e| e as u64).collect();
            let dtype = match float_dtype(v.dtype()) {
                Some(d) if selected.contains(name) => d,
                _ => {
                    copied.push(Copied {
                        name: name.clone(),
                        dtype: v.dtype().to_string(),
                        shape,
                    });
                    outputs.push((name.clone(), StOut::Copied(v)));
                    continue;
                }
            };
            let data =
                Aligned::new(v.data(), dtype.size()).map_err(|e| bad_tensor(file, name, e))?;
            let permuted = self.order.map(|axes| permuted_output(&shape, axes));
            let tensor = Tensor {
                dtype,
                shape: &shape,
                strides: None,
                out_strides: permuted.as_ref().map(|(s, _)| s.as_slice()),
                data: data.as_slice(),
            };
            let (q, calibrated) = self.one(Some(name), &tensor, &bar)?;
            let p = q.params;
            meta.insert(
                format!("simak.{name}.multiplier_bits"),
                format!("0x{:08x}", p.multiplier_bits),
            );
            meta.insert(format!("simak.{name}.zero_point"), p.zero_point.to_string());
            meta.insert(
                format!("simak.{name}.rounding"),
                p.rounding.name().to_owned(),
            );
            meta.insert(format!("simak.{name}.input_dtype"), v.dtype().to_string());
            if let Some(axes) = self.order {
                let axes: Vec<String> = axes.iter().map(usize::to_string).collect();
                meta.insert(format!("simak.{name}.output_order"), axes.join(","));
            }
            meta.insert(
                format!("simak.{name}.calibration"),
                match self.quantization.scale {
                    Scale::Fixed(_) => "none".to_owned(),
                    Scale::Calibrate(c) => c.to_string(),
                },
            );
            rows.push(Row::new(name.clone(), &shape, dtype, &q, calibrated));
            outputs.push((
                name.clone(),
                StOut::Converted {
                    dtype: StDtype::I8,
                    shape: match &permuted {
                        Some((_, p)) => p.iter().map(|&e| e as usize).collect(),
                        None => v.shape().to_vec(),
                    },
                    data: q.output,
                },
            ));
        }
        bar.finish_and_clear();
        let staged = target.stage_safetensors(outputs, meta)?;
        Ok((rows, copied, staged))
    }

    /// Quantizes the array of a `.npy` file and stages the output.
    fn npy(
        &self,
        target: &Target,
        bytes: &[u8],
    ) -> Result<(Vec<Row>, Vec<Copied>, Staged), CliError> {
        let file = self.file;
        let array = read_npy_as(
            file,
            bytes,
            &[DType::F32, DType::F16],
            "quant takes float32 and float16 .npy files",
            self.npy_dtype,
        )?;
        let in_strides = array.byte_strides();
        let mut tensor = array.tensor(&in_strides);
        let permuted = match self.order {
            Some(axes) => {
                check_output_order(axes, &array.shape).map_err(|e| bad_file(file, e))?;
                Some(permuted_output(&array.shape, axes))
            }
            None => None,
        };
        if let Some((strides, _)) = &permuted {
            tensor.out_strides = Some(strides);
        }
        let elements = tensor.shape.iter().product::<u64>();
        let shape = array.shape.clone();
        let dtype = array.dtype;
        let bar = self.progress(1, elements);
        let (q, calibrated) = self.one(None, &tensor, &bar)?;
        bar.finish_and_clear();
        let staged = match &permuted {
            Some((_, p)) => {
                target.stage_npy::<i8>(p, npyz::Order::C, |w| w.write_all(&q.output))?
            }
            None => target.stage_npy::<i8>(&shape, array.order(), |w| w.write_all(&q.output))?,
        };
        let name = crate::read::file_name(file);
        let row = Row::new(name, &shape, dtype, &q, calibrated);
        Ok((vec![row], Vec::new(), staged))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(
            Format::of(Path::new("a/b.safetensors")),
            Some(Format::Safetensors)
        );
        assert_eq!(Format::of(Path::new("b.NPY")), Some(Format::Npy));
        assert_eq!(Format::of(Path::new("b.npz")), None);
        assert_eq!(Format::of(Path::new("b")), None);
    }

    /// `simak quant` alone, as clap parses it.
    #[derive(Debug, clap::Parser)]
    struct Quant {
        #[command(flatten)]
        args: QuantArgs,
    }

    #[test]
    fn negative_values_parse_as_values() {
        use clap::Parser as _;
        let cli = Quant::try_parse_from([
            "quant",
            "--input",
            "a.npy",
            "--output",
            "b.npy",
            "--multiplier",
            "-1",
            "--zero-point",
            "-129",
        ])
        .unwrap();
        assert_eq!(cli.args.scale.multiplier.as_deref(), Some("-1"));
        assert_eq!(cli.args.scale.zero_point.as_deref(), Some("-129"));
    }
}
