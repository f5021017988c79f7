//! `simak model`: a model's boundary from its manifest (`*_mpk.json`, SPEC §14 in
//! docs/contract.md): `inspect` prints the stages simak reads from it, `preprocess` turns a
//! photo or `.npy` into the IFM bytes of one input, `postprocess` turns an OFM buffer into
//! one tensor per output. A thin front-end over `simak::model::Model`.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Subcommand};
use serde::Serialize;

use simak::model::{Backend as ModelBackend, ElementType, Model, ModelError, StageInfo};

use crate::engine::Backend;
use crate::error::{CliError, bad_file};
use crate::output::{Format, StOut, Target};
use crate::params::BackendArg;
use crate::read::{self, Expect};
use crate::report::{self, Context, Done, shape_text};

/// `simak model`: read a compiled model's manifest (`*_mpk.json`, SPEC §14) and run its
/// stages.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Print the stages simak reads from a manifest: for each model input and output, the
    /// op, the plugins it fuses, shapes, dtypes, byte sizes and offsets, parameters, and
    /// which SPEC §14 rules and defaults were used.
    Inspect(InspectArgs),
    /// Run one input stage: a photo (PNG/JPEG, for an RGB or GRAY preproc stage) or a
    /// `.npy` (a uint8 frame in OpenCV's layout, or a float tensor of the stage's shape) →
    /// the IFM bytes the MLA reads (raw bytes).
    Preprocess(PreprocessArgs),
    /// Run every output stage: an OFM buffer (raw bytes, exactly the model's OFM size) →
    /// one tensor per model output, in one `.npz` (NumPy's `np.load`) or `.safetensors`.
    Postprocess(PostprocessArgs),
}

/// `simak model inspect`'s flags.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The manifest (`*_mpk.json`).
    #[arg(value_name = "MPK")]
    pub mpk: PathBuf,
}

/// `simak model preprocess`'s flags.
#[derive(Debug, Args)]
pub struct PreprocessArgs {
    /// The manifest (`*_mpk.json`).
    #[arg(value_name = "MPK")]
    pub mpk: PathBuf,
    /// The frame or tensor: `.png`, `.jpg`/`.jpeg` or `.npy`.
    #[arg(long, value_name = "PHOTO|NPY")]
    pub input: PathBuf,
    /// The IFM bytes to write (raw; not `.npy`, `.safetensors`, `.json` or an image name).
    #[arg(long, value_name = "IFM.bin")]
    pub output: PathBuf,
    /// Which model input (0-based, in the manifest's `input_nodes` order).
    #[arg(long, default_value_t = 0)]
    pub input_index: usize,
    /// Execution backend: a65 (host cores) or ev74-sim (the EV74 firmware's entries on the
    /// host simulator; a stage whose op has no EV74 entry is refused, code 0x501).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BackendArg::A65)]
    pub backend: BackendArg,
    /// EV74 worker ring size, 1 to 4 (with --backend ev74-sim only; 4 when not given).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4))]
    pub workers: Option<u64>,
    /// Threads, 1 to 256 (above 1 with --backend a65 only).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
}

/// `simak model postprocess`'s flags.
#[derive(Debug, Args)]
pub struct PostprocessArgs {
    /// The manifest (`*_mpk.json`).
    #[arg(value_name = "MPK")]
    pub mpk: PathBuf,
    /// The OFM buffer (raw bytes).
    #[arg(long, value_name = "OFM.bin")]
    pub input: PathBuf,
    /// `.npz` (not for BF16 outputs) or `.safetensors`; tensors named as the model's
    /// outputs.
    #[arg(long, value_name = "OUT.npz|OUT.safetensors")]
    pub output: PathBuf,
    /// Execution backend: a65 (host cores) or ev74-sim (the EV74 firmware's entries on the
    /// host simulator; a stage whose op has no EV74 entry is refused, code 0x501).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BackendArg::A65)]
    pub backend: BackendArg,
    /// EV74 worker ring size, 1 to 4 (with --backend ev74-sim only; 4 when not given).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4))]
    pub workers: Option<u64>,
    /// Threads, 1 to 256 (above 1 with --backend a65 only).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
}

/// A model error in words with its stable code.
fn model_error(path: &Path, e: &ModelError) -> CliError {
    let code = e.code();
    let code = if code <= 255 {
        format!("code {code}")
    } else {
        format!("code 0x{code:03x}")
    };
    // The Runtime's refusal of a stage without an EV74 entry: the A65 runs every stage.
    let hint = if e.code() == 0x501 {
        "; --backend a65 runs every stage"
    } else {
        ""
    };
    match e.kind {
        // The library's message names the file already.
        simak::model::ModelErrorKind::Io(_) => CliError::Input(format!("{e} ({code})")),
        _ => bad_file(path, format!("{e} ({code}{hint})")),
    }
}

fn load(path: &Path) -> Result<Model, CliError> {
    Model::from_mpk(path).map_err(|e| model_error(path, &e))
}

/// The library backend of `--backend`, `--workers` and `--threads`, and its name.
fn backend(
    arg: BackendArg,
    workers: Option<u64>,
    threads: u32,
) -> Result<(ModelBackend, &'static str), CliError> {
    match arg.with_workers(workers)? {
        Backend::A65 => Ok((
            ModelBackend::A65 {
                threads: threads as usize,
            },
            "a65",
        )),
        Backend::Ev74Sim { workers } if threads == 1 => {
            Ok((ModelBackend::Ev74Sim { workers }, "ev74-sim"))
        }
        Backend::Ev74Sim { .. } => Err(CliError::Input(
            "--threads applies to --backend a65 only".to_owned(),
        )),
    }
}

/// One stage as `inspect` prints it.
#[derive(Debug, Serialize)]
pub struct StageRow {
    side: &'static str,
    name: String,
    op: &'static str,
    plugins: Vec<String>,
    shape: Vec<u64>,
    dtype: &'static str,
    size: u64,
    offset: u64,
    input_bytes: u64,
    output_bytes: u64,
    backends: &'static [&'static str],
    params: Vec<(String, String)>,
    rules: Vec<String>,
}

fn row(side: &'static str, s: &StageInfo) -> StageRow {
    StageRow {
        side,
        name: s.name.clone(),
        op: s.op.name(),
        plugins: s.plugins.clone(),
        shape: s.shape.clone(),
        dtype: s.dtype.numpy_name(),
        size: s.size,
        offset: s.offset,
        input_bytes: s.input_bytes,
        output_bytes: s.output_bytes,
        backends: s.op.backends(),
        params: s.params.clone(),
        rules: s.rules.clone(),
    }
}

/// `simak model inspect`'s summary.
#[derive(Debug, Serialize)]
pub struct InspectSummary {
    command: &'static str,
    manifest: String,
    name: String,
    batch: u64,
    ifm_bytes: u64,
    ofm_bytes: u64,
    stages: Vec<StageRow>,
}

impl report::Summary for InspectSummary {
    fn text(&self) -> String {
        let mut out = format!(
            "simak model inspect: {} (model {:?}, batch {}): IFM {} bytes, OFM {} bytes\n",
            self.manifest, self.name, self.batch, self.ifm_bytes, self.ofm_bytes
        );
        for s in &self.stages {
            let (from, to) = if s.side == "input" {
                (
                    format!("{} {}", s.dtype, shape_text(&s.shape)),
                    format!("IFM [{}, +{})", s.offset, s.size),
                )
            } else {
                (
                    format!("OFM [{}, +{})", s.offset, s.size),
                    format!("{} {}", s.dtype, shape_text(&s.shape)),
                )
            };
            out.push_str(&format!(
                "\n{} {:?}: {} ({}): {from} -> {to}; backends {}\n",
                s.side,
                s.name,
                s.op,
                s.plugins.join(" + "),
                s.backends.join(", ")
            ));
            for (k, v) in &s.params {
                out.push_str(&format!("  {k:<11} {v}\n"));
            }
            for r in &s.rules {
                out.push_str(&format!("  rule: {r}\n"));
            }
        }
        out
    }

    /// The table is the command's result: `-q` prints it too.
    fn quiet_text(&self) -> Option<String> {
        Some(self.text())
    }
}

/// Runs `simak model inspect`.
///
/// # Errors
///
/// Bad input (exit 2) for a manifest simak refuses (with its code).
pub fn run_inspect(args: InspectArgs, _ctx: &Context) -> Result<Done<InspectSummary>, CliError> {
    let m = load(&args.mpk)?;
    let mut stages: Vec<StageRow> = m.inputs().iter().map(|s| row("input", s)).collect();
    stages.extend(m.outputs().iter().map(|s| row("output", s)));
    Ok(Done::summary(InspectSummary {
        command: "model inspect",
        manifest: args.mpk.display().to_string(),
        name: m.name().to_owned(),
        batch: m.batch(),
        ifm_bytes: m.ifm_size(),
        ofm_bytes: m.ofm_size(),
        stages,
    }))
}

/// `simak model preprocess` / `postprocess`'s summary.
#[derive(Debug, Serialize)]
pub struct RunSummary {
    command: &'static str,
    manifest: String,
    input: String,
    output: String,
    backend: &'static str,
    stages: Vec<StageRow>,
    execute_seconds: f64,
}

impl report::Summary for RunSummary {
    fn text(&self) -> String {
        let mut out = format!(
            "simak {}: {} with {} -> {} ({}, {:.3} ms)\n",
            self.command,
            self.input,
            self.manifest,
            self.output,
            self.backend,
            self.execute_seconds * 1e3
        );
        for s in &self.stages {
            out.push_str(&format!(
                "  {} {:?}: {} {} {} ({} bytes -> {} bytes)\n",
                s.side,
                s.name,
                s.op,
                s.dtype,
                shape_text(&s.shape),
                s.input_bytes,
                s.output_bytes
            ));
        }
        out
    }
}

/// The bytes of the input file for `stage`: a photo's RGB8/GRAY8 pixels, or a `.npy`'s
/// data, checked against the stage's dtype and shape.
fn input_bytes(path: &Path, stage: &StageInfo) -> Result<Vec<u8>, CliError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "png" | "jpg" | "jpeg" => {
            let channels = stage.shape.get(3).copied();
            let gray = match (stage.dtype, stage.shape.len(), channels) {
                (ElementType::U8, 4, Some(3)) => false,
                (ElementType::U8, 4, Some(1)) | (ElementType::U8, 3, _) => true,
                _ => {
                    return Err(bad_file(
                        path,
                        format!(
                            "input {:?} takes {} {}: a photo decodes to RGB8 or GRAY8 frames only; \
                             give a .npy",
                            stage.name,
                            stage.dtype.numpy_name(),
                            shape_text(&stage.shape)
                        ),
                    ));
                }
            };
            let limit = read::IMAGE_DEFAULT_LIMIT;
            let bytes = read::read_input(path, "", Expect::Image { limit })?;
            let img = read::decode_image_u8(path, &bytes, gray, limit)?;
            let want = &stage.shape[1..3];
            if stage.shape[0] != 1 || [img.height, img.width] != want {
                return Err(bad_file(
                    path,
                    format!(
                        "a {} x {} photo, but input {:?} takes {} (resizing is out of scope)",
                        img.height,
                        img.width,
                        stage.name,
                        shape_text(&stage.shape)
                    ),
                ));
            }
            Ok(img.pixels)
        }
        "npy" => {
            let bytes = read::read_input(path, "", Expect::Npy)?;
            let (header, offset) = read::npy_header(&bytes)
                .map_err(|e| bad_file(path, format!("malformed .npy file: {e}")))?;
            let (dtype, big_endian) = match header.dtype() {
                npyz::DType::Plain(ts) => (
                    match (ts.type_char(), ts.size_field()) {
                        (npyz::TypeChar::Uint, 1) => Some(ElementType::U8),
                        (npyz::TypeChar::Float, 4) => Some(ElementType::D(simak::DType::F32)),
                        (npyz::TypeChar::Float, 2) => Some(ElementType::D(simak::DType::F16)),
                        _ => None,
                    },
                    ts.endianness() == npyz::Endianness::Big,
                ),
                _ => (None, false),
            };
            // With batch 1 the leading 1 may be left out, as in Python.
            let shape = header.shape();
            let fits = shape == stage.shape.as_slice()
                || (stage.shape.first() == Some(&1) && shape == &stage.shape[1..]);
            if dtype != Some(stage.dtype) || !fits {
                let given = dtype.map_or_else(
                    || format!("dtype {}", header.dtype().descr()),
                    |d| d.numpy_name().to_owned(),
                );
                return Err(bad_file(
                    path,
                    format!(
                        "{given} {}, but input {:?} takes {} {}",
                        shape_text(shape),
                        stage.name,
                        stage.dtype.numpy_name(),
                        shape_text(&stage.shape)
                    ),
                ));
            }
            if header.order() == npyz::Order::Fortran && stage.shape.len() > 1 {
                return Err(bad_file(
                    path,
                    "a Fortran-order array: save it in C order (np.ascontiguousarray)",
                ));
            }
            let mut data = bytes[offset..].to_vec();
            if big_endian {
                // Big-endian elements, little-endian for the model.
                let size = stage.dtype.size() as usize;
                for e in data.chunks_exact_mut(size) {
                    e.reverse();
                }
            }
            Ok(data)
        }
        _ => Err(bad_file(
            path,
            "give a .png, .jpg, .jpeg or .npy input (by its extension)",
        )),
    }
}

/// Runs `simak model preprocess`.
///
/// # Errors
///
/// Bad input (exit 2) for a refused manifest, an input index past the model's inputs, an
/// input whose dtype or shape is not the stage's, an output name of a structured format.
pub fn run_preprocess(args: PreprocessArgs, _ctx: &Context) -> Result<Done<RunSummary>, CliError> {
    let target = Target::new("--output", &args.output, Format::Raw)?;
    target.not_input("--output", &args.input)?;
    target.not_input("--output", &args.mpk)?;
    let m = load(&args.mpk)?;
    let Some(stage) = m.inputs().get(args.input_index) else {
        return Err(bad_file(
            &args.mpk,
            format!(
                "--input-index {}: the model has {} input(s)",
                args.input_index,
                m.inputs().len()
            ),
        ));
    };
    let (b, backend_name) = backend(args.backend, args.workers, args.threads)?;
    let data = input_bytes(&args.input, stage)?;
    let start = Instant::now();
    let ifm = m
        .preprocess_on(args.input_index, &data, b)
        .map_err(|e| model_error(&args.input, &e))?;
    let seconds = start.elapsed().as_secs_f64();
    let staged = target.stage(|w| w.write_all(ifm.as_slice()))?;
    Ok(Done::new(
        RunSummary {
            command: "model preprocess",
            manifest: args.mpk.display().to_string(),
            input: args.input.display().to_string(),
            output: args.output.display().to_string(),
            backend: backend_name,
            stages: vec![row("input", stage)],
            execute_seconds: seconds,
        },
        vec![staged],
    ))
}

/// The `.npz` bytes of `tensors` (a stored zip of `NAME.npy` members, as `np.savez`).
fn npz(tensors: &[simak::model::OutputTensor]) -> Result<Vec<u8>, CliError> {
    use npyz::WriterBuilder;
    let internal =
        |e: &dyn std::fmt::Display| CliError::Internal(anyhow::anyhow!("writing the .npz: {e}"));
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    for t in tensors {
        zip.start_file(format!("{}.npy", t.name), options)
            .map_err(|e| internal(&e))?;
        let shape = &t.shape;
        let data = t.data.as_slice();
        let header = |w: &mut zip::ZipWriter<Cursor<Vec<u8>>>| -> std::io::Result<()> {
            macro_rules! write_as {
                ($t:ty) => {{
                    let w = npyz::WriteOptions::<$t>::new()
                        .default_dtype()
                        .shape(shape)
                        .writer(&mut *w)
                        .write_header_only()?;
                    w.write_all(data)
                }};
            }
            match t.dtype {
                ElementType::D(simak::DType::F32) => write_as!(f32),
                ElementType::D(simak::DType::F16) => write_as!(half::f16),
                ElementType::D(simak::DType::I8) => write_as!(i8),
                ElementType::D(simak::DType::I16) => write_as!(i16),
                ElementType::D(simak::DType::I32) => write_as!(i32),
                ElementType::U8 => write_as!(u8),
                ElementType::D(simak::DType::BF16) => Err(std::io::Error::other("bfloat16")),
            }
        };
        header(&mut zip).map_err(|e| internal(&e))?;
    }
    Ok(zip.finish().map_err(|e| internal(&e))?.into_inner())
}

/// Runs `simak model postprocess`.
///
/// # Errors
///
/// Bad input (exit 2) for a refused manifest, an OFM file whose size is not the model's OFM
/// size, an output that is neither `.npz` nor `.safetensors`, BF16 outputs into `.npz`.
pub fn run_postprocess(
    args: PostprocessArgs,
    _ctx: &Context,
) -> Result<Done<RunSummary>, CliError> {
    let ext = args
        .output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let target = match ext.as_str() {
        "npz" => Target::new("--output", &args.output, Format::Raw)?,
        "safetensors" => Target::new("--output", &args.output, Format::Safetensors)?,
        _ => {
            return Err(CliError::Input(format!(
                "--output {}: give an .npz or a .safetensors file",
                args.output.display()
            )));
        }
    };
    target.not_input("--output", &args.input)?;
    target.not_input("--output", &args.mpk)?;
    let m = load(&args.mpk)?;
    let (b, backend_name) = backend(args.backend, args.workers, args.threads)?;
    if ext == "npz"
        && let Some(s) = m
            .outputs()
            .iter()
            .find(|s| s.dtype == ElementType::D(simak::DType::BF16))
    {
        return Err(bad_file(
            &args.mpk,
            format!(
                "output {:?} is bfloat16, which a .npz cannot hold: write a .safetensors output",
                s.name
            ),
        ));
    }
    let size = read::file_size(&args.input, "")?;
    if size != m.ofm_size() {
        return Err(bad_file(
            &args.input,
            format!(
                "{size} bytes, but the model's OFM is {} bytes (the sum of its heads' spans)",
                m.ofm_size()
            ),
        ));
    }
    let bytes = read::read_input(&args.input, "", Expect::AtMost(size))?;
    let start = Instant::now();
    let tensors = m
        .postprocess_on(&bytes, b)
        .map_err(|e| model_error(&args.input, &e))?;
    let seconds = start.elapsed().as_secs_f64();
    let staged = if ext == "npz" {
        let content = npz(&tensors)?;
        target.stage(|w| w.write_all(&content))?
    } else {
        let st: Vec<(String, StOut<'_>)> = tensors
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    StOut::Converted {
                        dtype: st_dtype(t.dtype),
                        shape: t.shape.iter().map(|&e| e as usize).collect(),
                        data: t.data.as_slice().to_vec(),
                    },
                )
            })
            .collect();
        target.stage_safetensors(st, std::collections::HashMap::new())?
    };
    Ok(Done::new(
        RunSummary {
            command: "model postprocess",
            manifest: args.mpk.display().to_string(),
            input: args.input.display().to_string(),
            output: args.output.display().to_string(),
            backend: backend_name,
            stages: m.outputs().iter().map(|s| row("output", s)).collect(),
            execute_seconds: seconds,
        },
        vec![staged],
    ))
}

fn st_dtype(t: ElementType) -> safetensors::Dtype {
    use safetensors::Dtype;
    match t {
        ElementType::U8 => Dtype::U8,
        ElementType::D(simak::DType::F32) => Dtype::F32,
        ElementType::D(simak::DType::BF16) => Dtype::BF16,
        ElementType::D(simak::DType::F16) => Dtype::F16,
        ElementType::D(simak::DType::I8) => Dtype::I8,
        ElementType::D(simak::DType::I16) => Dtype::I16,
        ElementType::D(simak::DType::I32) => Dtype::I32,
    }
}
