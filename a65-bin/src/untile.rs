//! `simak untile` (a tiled buffer and its sidecar back to a logical `.npy`) and `simak
//! dequant` (INT8 back to FP32 as `(q - zero_point) / multiplier`).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use npyz::WriterBuilder;
use safetensors::SafeTensors;
use safetensors::tensor::Dtype as StDtype;
use serde::Serialize;
use simak::DType;
use simak::layout::{Channels, MlaTiled};

use crate::error::{CliError, bad_file, bad_tensor};
use crate::output::{Format, StOut, Target, same_file};
use crate::params::{MultiplierArg, exact_decimal, parse_multiplier, parse_zero_point};
use crate::read::{read_npy, st_dtype};
use crate::report::{emit, progress, shape_text};
use crate::tess::{Sidecar, buffer_crc32, sidecar_path, tile_pieces};

/// A parsed `simak untile` invocation.
#[derive(Debug, Clone)]
pub struct UntileJob {
    /// The tiled buffer (its sidecar is this path plus `.json`).
    pub input: PathBuf,
    /// The logical `.npy` to write (default: the input with extension `.npy`).
    pub output: Option<PathBuf>,
    /// `-q`.
    pub quiet: bool,
    /// `--json`.
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct UntileSummary {
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
pub fn run_untile(job: &UntileJob) -> Result<(), CliError> {
    let input = job.input.as_path();
    let side = sidecar_path(input);
    let output = job
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
    let target = match &job.output {
        Some(path) => Target::new("--output", path, Format::Npy)?,
        None => Target::derived(
            "the default output (INPUT with extension .npy)",
            "--output",
            &output,
            Format::Npy,
        )?,
    };
    let side_bytes = crate::read::read_file(&side, " the sidecar")?;
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
    let tiled = crate::read::read_file(input, "")?;
    if tiled.len() as u64 != view.capacity() {
        return Err(bad_file(
            input,
            format!(
                "holds {} bytes but its sidecar {} has a capacity of {} bytes (a buffer and a sidecar of different runs?)",
                tiled.len(),
                side.display(),
                view.capacity()
            ),
        ));
    }
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
    let bar = progress("untile", job.quiet, 1, elements);
    let logical = untile_in_pieces(&view, &tiled, &|n| bar.inc(n)).map_err(|e| match e {
        UntileFailure::OutOfMemory => bad_file(
            input,
            format!(
                "cannot allocate the logical tensor ({} bytes): out of memory",
                elements.saturating_mul(planes as u64)
            ),
        ),
        UntileFailure::Library(e) => CliError::Internal(anyhow!("untile: {e}")),
        UntileFailure::Piece(e) => CliError::Internal(anyhow!("untile: a piece: {e}")),
    })?;
    bar.finish_and_clear();
    let shape = sidecar.shape.clone();
    let npy_dtype = if planes == 2 {
        // BF16 → FP32 is exact: the bits shifted left by 16.
        target.write(|w| {
            let w = npyz::WriteOptions::<f32>::new()
                .default_dtype()
                .shape(&shape)
                .writer(w)
                .write_header_only()?;
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
        "float32"
    } else {
        target.write(|w| {
            let w = npyz::WriteOptions::<i8>::new()
                .default_dtype()
                .shape(&shape)
                .writer(w)
                .write_header_only()?;
            w.write_all(&logical)
        })?;
        "int8"
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
    if job.json {
        let mut s = serde_json::to_string_pretty(&summary).map_err(anyhow::Error::from)?;
        s.push('\n');
        emit(&s)
    } else if job.quiet {
        Ok(())
    } else {
        emit(&format!(
            "simak untile: {} ({} {} {}, {} bytes tiled) -> {} ({} {}, {} elements{})\n",
            summary.input,
            summary.op,
            summary.tiled_dtype,
            shape_text(&summary.shape),
            summary.capacity_bytes,
            summary.output,
            summary.npy_dtype,
            shape_text(&summary.shape),
            summary.elements,
            if planes == 2 {
                ", exact BF16 values"
            } else {
                ""
            }
        ))
    }
}

/// Why [`untile_in_pieces`] failed.
enum UntileFailure {
    /// The logical tensor or a piece's buffer could not be allocated.
    OutOfMemory,
    /// The library refused (an internal failure: the buffer was checked against the view).
    Library(simak::layout::UntileError),
    /// A piece's layout was refused (an internal failure: pieces follow the admitted view).
    Piece(simak::AdmissionError),
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

/// A parsed `simak dequant` invocation.
#[derive(Debug, Clone)]
pub struct DequantJob {
    /// An int8 `.npy` or a `.safetensors` file written by `simak quant`.
    pub input: PathBuf,
    /// Output (format follows the input).
    pub output: PathBuf,
    /// Tensors to dequantize (safetensors; empty: every I8 tensor with simak metadata).
    pub tensors: Vec<String>,
    /// `--multiplier` (`.npy` only).
    pub multiplier: Option<MultiplierArg>,
    /// `--zero-point` (`.npy` only).
    pub zero_point: Option<i32>,
    /// `-q`.
    pub quiet: bool,
    /// `--json`.
    pub json: bool,
}

/// FP32 value of an INT8 `q`: `(q - zero_point) / multiplier`, where `q - zero_point` (an
/// integer in [-255, 255]) is exact in binary32 and the division is one binary32 division
/// (round to nearest-even).
pub fn dequant_value(q: i8, zero_point: i32, multiplier: f32) -> f32 {
    (i32::from(q) - zero_point) as f32 / multiplier
}

/// The FP32 little-endian bytes of INT8 `q` ([`dequant_value`]), advancing `bar` every
/// 2^20 elements.
///
/// # Errors
///
/// The out-of-memory error (as [`crate::engine::EngineError`]) when the output cannot be
/// allocated.
fn dequant_bytes(
    q: &[u8],
    zero_point: i32,
    multiplier_bits: u32,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<u8>, crate::engine::EngineError> {
    let m = f32::from_bits(multiplier_bits);
    let mut out = crate::engine::try_zeroed("the FP32 output", q.len().saturating_mul(4))?;
    for (qs, xs) in q.chunks(1 << 20).zip(out.chunks_mut(4 << 20)) {
        for (&b, x) in qs.iter().zip(xs.chunks_exact_mut(4)) {
            x.copy_from_slice(&dequant_value(b as i8, zero_point, m).to_le_bytes());
        }
        bar.inc(qs.len() as u64);
    }
    Ok(out)
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

#[derive(Debug, Serialize)]
struct DequantSummary {
    command: &'static str,
    input: String,
    output: String,
    format: &'static str,
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
/// Bad input (exit 2): unsupported file, non-INT8 data, missing or conflicting parameters,
/// missing `simak.<t>.*` metadata; internal otherwise.
pub fn run_dequant(job: &DequantJob) -> Result<(), CliError> {
    let input = job.input.as_path();
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
                "unsupported input file type (dequant reads int8 .npy files and .safetensors files written by simak quant)",
            ));
        }
    };
    let target = Target::new(
        "--output",
        &job.output,
        if format == "npy" {
            Format::Npy
        } else {
            Format::Safetensors
        },
    )?;
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
    let (rows, copied) = if format == "npy" {
        if !job.tensors.is_empty() {
            return Err(bad_file(
                input,
                "--tensor applies to .safetensors inputs only (a .npy file holds one tensor)",
            ));
        }
        let Some(m) = &job.multiplier else {
            return Err(bad_file(
                input,
                "--multiplier is required for a .npy input (a .safetensors file from simak quant carries its own)",
            ));
        };
        let zp = job.zero_point.unwrap_or(0);
        let array = read_npy(input, &bytes, &[DType::I8], "dequant takes int8 .npy files")?;
        let bar = progress("dequant", job.quiet, 1, array.data.as_slice().len() as u64);
        let data = dequant_bytes(array.data.as_slice(), zp, m.bits, &bar)
            .map_err(|e| bad_file(input, e))?;
        bar.finish_and_clear();
        let shape = array.shape.clone();
        let order = array.order();
        target.write(|w| {
            let w = npyz::WriteOptions::<f32>::new()
                .default_dtype()
                .shape(&shape)
                .order(order)
                .writer(w)
                .write_header_only()?;
            w.write_all(&data)
        })?;
        let name = input.file_name().map_or_else(
            || input.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        (vec![row(name, &shape, m.bits, zp)], Vec::new())
    } else {
        if job.multiplier.is_some() || job.zero_point.is_some() {
            return Err(bad_file(
                input,
                "--multiplier and --zero-point apply to .npy inputs; a .safetensors file's parameters come from its simak.<tensor>.* metadata",
            ));
        }
        dequant_safetensors(job, &target, &bytes)?
    };
    let summary = DequantSummary {
        command: "dequant",
        input: input.display().to_string(),
        output: job.output.display().to_string(),
        format,
        tensors: rows,
        copied,
    };
    if job.json {
        let mut s = serde_json::to_string_pretty(&summary).map_err(anyhow::Error::from)?;
        s.push('\n');
        emit(&s)
    } else if job.quiet {
        Ok(())
    } else {
        let mut text = format!(
            "simak dequant: {} ({}) -> {}: x = (q - zero_point) / multiplier in binary32\n",
            summary.input, summary.format, summary.output
        );
        for r in &summary.tensors {
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
        if !summary.copied.is_empty() {
            text.push_str(&format!(
                "copied unchanged: {}\n",
                summary.copied.join(", ")
            ));
        }
        emit(&text)
    }
}

fn dequant_safetensors(
    job: &DequantJob,
    target: &Target,
    bytes: &[u8],
) -> Result<(Vec<DequantRow>, Vec<String>), CliError> {
    let file = job.input.as_path();
    let malformed = |e: safetensors::SafeTensorError| {
        bad_file(file, format!("malformed safetensors file: {e}"))
    };
    let st = SafeTensors::deserialize(bytes).map_err(malformed)?;
    let (_, metadata) = SafeTensors::read_metadata(bytes).map_err(malformed)?;
    crate::read::unique_safetensor_names(file, bytes)?;
    let names = metadata.offset_keys();
    let mut meta: HashMap<String, String> = metadata.metadata().clone().unwrap_or_default();
    let key = |t: &str, k: &str| format!("simak.{t}.{k}");
    let has_params = |t: &str| meta.contains_key(&key(t, "multiplier_bits"));
    let selected: BTreeSet<String> = if job.tensors.is_empty() {
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
            if st_dtype(v.dtype()) != Some(DType::I8) {
                return Err(bad_tensor(
                    file,
                    name,
                    format!("dtype {} is not supported (dequant takes I8)", v.dtype()),
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
        job.tensors.iter().cloned().collect()
    };
    let mut total = 0u64;
    for name in &selected {
        total = total.saturating_add(st.tensor(name).map_or(0, |v| v.data().len() as u64));
    }
    let bar = progress("dequant", job.quiet, selected.len(), total);
    let mut rows = Vec::new();
    let mut copied = Vec::new();
    let mut outputs: Vec<(String, StOut<'_>)> = Vec::with_capacity(names.len());
    for name in &names {
        let v = st.tensor(name).map_err(malformed)?;
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
        let zp = parse_zero_point(zp_text)
            .map_err(|e| bad_tensor(file, name, format!("{zp_key}: {e}")))?;
        let shape: Vec<u64> = v.shape().iter().map(|&e| e as u64).collect();
        rows.push(row(name.clone(), &shape, m.bits, zp));
        outputs.push((
            name.clone(),
            StOut::Converted {
                dtype: StDtype::F32,
                shape: v.shape().to_vec(),
                data: dequant_bytes(v.data(), zp, m.bits, &bar)
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
    let serialized = safetensors::serialize(outputs, Some(meta))
        .map_err(|e| CliError::Internal(anyhow!("serializing the output: {e}")))?;
    let serialized = crate::output::sorted_safetensors_header(serialized);
    target.write(|w| w.write_all(&serialized))?;
    Ok((rows, copied))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn dequant_is_one_binary32_division() {
        assert_eq!(dequant_value(10, 3, 0.5), 14.0);
        assert_eq!(dequant_value(-128, 127, 1.0), -255.0);
        assert_eq!(dequant_value(1, 0, 3.0), 1f32 / 3f32);
        assert_eq!(
            default_untile_output(Path::new("a/out.bin")),
            PathBuf::from("a/out.npy")
        );
    }
}
