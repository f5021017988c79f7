//! `simak quant`: quantize the float tensors of a `.safetensors` or `.npy` file to INT8.
//!
//! The output target is checked before the input is read; nothing is written until every
//! selected tensor has been checked and quantized, then the output is published atomically
//! ([`crate::output::Target`]).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use indicatif::ProgressBar;
use npyz::WriterBuilder;
use safetensors::SafeTensors;
use safetensors::tensor::Dtype as StDtype;
use serde::Serialize;
use simak::DType;
use simak::ops::quant::{Params, Rounding};

use crate::engine::{self, Aligned, Backend, EngineError, Quantized, Tensor};
use crate::error::{CliError, bad_file, bad_tensor};
use crate::output::{self, StOut, Target, same_file};
use crate::params::{Calibration, MultiplierArg, absmax_multiplier, exact_decimal};
use crate::read::read_npy;
use crate::report::{Row, Total, shape_text, table};

/// How each tensor's multiplier is chosen.
#[derive(Debug, Clone)]
pub enum Scale {
    /// One multiplier for every tensor, from `--multiplier`.
    Fixed(MultiplierArg),
    /// Per-tensor calibration, from `--calibrate`.
    Calibrate(Calibration),
}

/// A fully parsed `simak quant` invocation.
#[derive(Debug, Clone)]
pub struct QuantJob {
    /// Input file.
    pub input: PathBuf,
    /// Output file.
    pub output: PathBuf,
    /// Tensors picked with `--tensor` (empty: every float tensor).
    pub tensors: Vec<String>,
    /// Multiplier choice.
    pub scale: Scale,
    /// Zero point for `--multiplier` (0 under calibration).
    pub zero_point: i32,
    /// Rounding mode.
    pub rounding: Rounding,
    /// Where to run.
    pub backend: Backend,
    /// `-q`: no progress bar, no table.
    pub quiet: bool,
    /// `--json`: the summary as JSON.
    pub json: bool,
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

#[derive(Debug, Clone, Serialize)]
struct Summary {
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
    tensors: Vec<Row>,
    copied: Vec<Copied>,
    total: Total,
}

/// Runs `simak quant`.
///
/// # Errors
///
/// [`CliError::Input`] for bad input (exit 2, no output written), [`CliError::Internal`]
/// otherwise.
pub fn run(job: &QuantJob) -> Result<(), CliError> {
    let input = job.input.as_path();
    let format = Format::of(input).ok_or_else(|| {
        bad_file(
            input,
            "unsupported input file type (quant reads .safetensors and .npy files)",
        )
    })?;
    if format == Format::Npy && !job.tensors.is_empty() {
        return Err(bad_file(
            input,
            "--tensor applies to .safetensors inputs only (a .npy file holds one tensor)",
        ));
    }
    let target = Target::new("--output", &job.output, format.output())?;
    if same_file(input, &job.output) {
        return Err(bad_file(
            input,
            format!(
                "--output {} is the input file itself; choose another path",
                job.output.display()
            ),
        ));
    }
    let bytes = crate::read::read_file(input, "")?;
    let (rows, copied) = match format {
        Format::Safetensors => run_safetensors(job, &target, &bytes)?,
        Format::Npy => run_npy(job, &target, &bytes)?,
    };
    report(job, format, rows, copied)
}

fn report(
    job: &QuantJob,
    format: Format,
    rows: Vec<Row>,
    copied: Vec<Copied>,
) -> Result<(), CliError> {
    let (multiplier, calibration) = match &job.scale {
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
    let summary = Summary {
        command: "quant",
        input: job.input.display().to_string(),
        output: job.output.display().to_string(),
        format: format.name(),
        backend: match job.backend {
            Backend::A65 => "a65",
            Backend::Ev74Sim { .. } => "ev74-sim",
        },
        workers: match job.backend {
            Backend::A65 => None,
            Backend::Ev74Sim { workers } => Some(workers),
        },
        multiplier,
        calibration,
        rounding: job.rounding.name(),
        tensors: rows,
        copied,
        total,
    };
    let text = if job.json {
        let mut s = serde_json::to_string_pretty(&summary).map_err(anyhow::Error::from)?;
        s.push('\n');
        s
    } else if job.quiet {
        return Ok(());
    } else {
        summary_text(&summary)
    };
    crate::report::emit(&text)
}

fn summary_text(s: &Summary) -> String {
    let mut out = format!(
        "simak quant: {} ({}) -> {} (backend {})\n",
        s.input, s.format, s.output, s.backend
    );
    match (&s.multiplier, &s.calibration) {
        (Some(m), _) => out.push_str(&format!(
            "multiplier {:?} = binary32 {} = {} exactly; rounding {}\n",
            m.text, m.bits, m.exact, s.rounding
        )),
        (None, Some(c)) => out.push_str(&format!(
            "multiplier: {c} calibration per tensor, m = 127f32 / max|x| (one binary32 division), zero point 0; rounding {}\n",
            s.rounding
        )),
        (None, None) => {}
    }
    out.push_str(&table(&s.tensors));
    if !s.copied.is_empty() {
        let names: Vec<String> = s
            .copied
            .iter()
            .map(|c| format!("{} ({} {})", c.name, c.dtype, shape_text(&c.shape)))
            .collect();
        out.push_str(&format!(
            "copied unchanged: {}: {}\n",
            s.copied.len(),
            names.join(", ")
        ));
    }
    out
}

fn progress(job: &QuantJob, tensors: usize, elements: u64) -> ProgressBar {
    crate::report::progress("quant", job.quiet, tensors, elements)
}

/// Quantizes one tensor with the job's parameters; `name` is `None` for a `.npy` file;
/// `bar` advances as the tensor's pieces complete.
fn quantize_one(
    job: &QuantJob,
    name: Option<&str>,
    tensor: &Tensor<'_>,
    bar: &ProgressBar,
) -> Result<(Quantized, Option<f32>), CliError> {
    let file = job.input.as_path();
    let bad = |rule: &dyn std::fmt::Display| match name {
        Some(n) => bad_tensor(file, n, rule),
        None => bad_file(file, rule),
    };
    let engine_error = |e: EngineError| match e {
        EngineError::Execute(_) | EngineError::Sim(_) => CliError::Internal(anyhow!(
            "{}: {}: {e}",
            file.display(),
            name.unwrap_or("tensor")
        )),
        other => bad(&other),
    };
    let (params, abs_max) = match &job.scale {
        Scale::Fixed(m) => (
            Params::from_bits(m.bits).with_zero_point(job.zero_point),
            None,
        ),
        Scale::Calibrate(Calibration::Absmax) => {
            let a = engine::abs_max(tensor).map_err(engine_error)?;
            let bits = absmax_multiplier(a).map_err(|e| bad(&e))?;
            (Params::from_bits(bits), a)
        }
    };
    let q = engine::quantize(
        tensor,
        params.with_rounding(job.rounding),
        job.backend,
        &|n| bar.inc(n),
    )
    .map_err(engine_error)?;
    Ok((q, abs_max))
}

fn calibration_of(job: &QuantJob, abs_max: Option<f32>) -> Option<(&'static str, Option<f32>)> {
    match job.scale {
        Scale::Calibrate(Calibration::Absmax) => Some(("absmax", abs_max)),
        Scale::Fixed(_) => None,
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

fn run_safetensors(
    job: &QuantJob,
    target: &Target,
    bytes: &[u8],
) -> Result<(Vec<Row>, Vec<Copied>), CliError> {
    let file = job.input.as_path();
    let malformed = |e: safetensors::SafeTensorError| {
        bad_file(file, format!("malformed safetensors file: {e}"))
    };
    let st = SafeTensors::deserialize(bytes).map_err(malformed)?;
    let (_, metadata) = SafeTensors::read_metadata(bytes).map_err(malformed)?;
    crate::read::unique_safetensor_names(file, bytes)?;
    let names = metadata.offset_keys();
    let view = |name: &str| st.tensor(name).map_err(malformed);

    let selected: BTreeSet<String> = if job.tensors.is_empty() {
        let mut all = BTreeSet::new();
        for name in &names {
            if float_dtype(view(name)?.dtype()).is_some() {
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
        for name in &job.tensors {
            let v = st.tensor(name).map_err(|_| {
                bad_tensor(
                    file,
                    name,
                    format!(
                        "no such tensor (the file holds {})",
                        crate::report::count(names.len() as u64, "tensor", "tensors")
                    ),
                )
            })?;
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
        job.tensors.iter().cloned().collect()
    };

    let mut total_elements = 0u64;
    for name in &selected {
        let v = view(name)?;
        total_elements = total_elements.saturating_add(
            v.shape()
                .iter()
                .fold(1u64, |n, &e| n.saturating_mul(e as u64)),
        );
    }
    let bar = progress(job, selected.len(), total_elements);

    let mut rows = Vec::new();
    let mut copied = Vec::new();
    let mut outputs: Vec<(String, StOut<'_>)> = Vec::with_capacity(names.len());
    let mut meta: HashMap<String, String> = metadata.metadata().clone().unwrap_or_default();
    for name in &names {
        let v = view(name)?;
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
        let data = Aligned::new(v.data(), dtype.size()).map_err(|e| bad_tensor(file, name, e))?;
        let tensor = Tensor {
            dtype,
            shape: &shape,
            strides: None,
            out_strides: None,
            data: data.as_slice(),
        };
        let (q, abs_max) = quantize_one(job, Some(name), &tensor, &bar)?;
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
        meta.insert(
            format!("simak.{name}.calibration"),
            match job.scale {
                Scale::Fixed(_) => "none".to_owned(),
                Scale::Calibrate(c) => c.to_string(),
            },
        );
        rows.push(Row::new(
            name.clone(),
            &shape,
            dtype,
            &q,
            calibration_of(job, abs_max),
        ));
        outputs.push((
            name.clone(),
            StOut::Converted {
                dtype: StDtype::I8,
                shape: v.shape().to_vec(),
                data: q.output,
            },
        ));
    }
    bar.finish_and_clear();
    let serialized = safetensors::serialize(outputs, Some(meta))
        .map_err(|e| CliError::Internal(anyhow!("serializing the output: {e}")))?;
    let serialized = crate::output::sorted_safetensors_header(serialized);
    target.write(|w| w.write_all(&serialized))?;
    Ok((rows, copied))
}

fn run_npy(
    job: &QuantJob,
    target: &Target,
    bytes: &[u8],
) -> Result<(Vec<Row>, Vec<Copied>), CliError> {
    let file = job.input.as_path();
    let array = read_npy(
        file,
        bytes,
        &[DType::F32, DType::F16],
        "quant takes float32 and float16 .npy files",
    )?;
    let in_strides = array.byte_strides();
    let tensor = array.tensor(&in_strides);
    let elements = tensor.shape.iter().product::<u64>();
    let shape = array.shape.clone();
    let dtype = array.dtype;
    let bar = progress(job, 1, elements);
    let (q, abs_max) = quantize_one(job, None, &tensor, &bar)?;
    bar.finish_and_clear();
    let order = array.order();
    target.write(|w| {
        let w = npyz::WriteOptions::<i8>::new()
            .default_dtype()
            .shape(&shape)
            .order(order)
            .writer(w)
            .write_header_only()?;
        w.write_all(&q.output)
    })?;
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let row = Row::new(name, &shape, dtype, &q, calibration_of(job, abs_max));
    Ok((vec![row], Vec::new()))
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
}
