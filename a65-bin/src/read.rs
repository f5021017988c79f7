//! Reading tensors from files: `.npy` arrays, one tensor of a `.safetensors` file, and
//! PNG / JPEG images decoded to HWC FP32 (for `casttess` / `quanttess`).
//!
//! Every failure is bad input naming the file (and the tensor where there is one).

use std::io::Cursor;
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use npyz::{Endianness, NpyHeader, Order, TypeChar};
use safetensors::SafeTensors;
use safetensors::tensor::Dtype as StDtype;
use safetensors::tensor::TensorView;
use simak::DType;

use crate::engine::{Aligned, Tensor};
use crate::error::{CliError, bad_file, bad_tensor};
use crate::report::shape_text;

/// Parses an `.npy` header with npyz; returns it and the offset of the data.
///
/// npyz computes the element count with unchecked products, which panics on overflow in
/// debug builds: a lying shape is caught here (quietly) and reported as malformed.
pub fn npy_header(bytes: &[u8]) -> Result<(NpyHeader, usize), String> {
    // npyz allocates the header's claimed length (up to 4 GiB in version 2 and 3) before
    // reading it: check the claim against the file first.
    let mut header_bytes = bytes.len();
    if bytes.starts_with(b"\x93NUMPY") {
        let claim = match bytes.get(6) {
            Some(1) => bytes
                .get(8..10)
                .map(|b| (10, u64::from(u16::from_le_bytes([b[0], b[1]])))),
            Some(2 | 3) => bytes
                .get(8..12)
                .map(|b| (12, u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))),
            _ => None,
        };
        if let Some((start, len)) = claim {
            if start + len > bytes.len() as u64 {
                return Err(format!(
                    "the header length {len} runs past the end of the file ({} bytes)",
                    bytes.len()
                ));
            }
            // In range: start + len ≤ bytes.len().
            header_bytes = (start + len) as usize;
            let text = &bytes[start as usize..header_bytes];
            let depth = bracket_depth(text);
            if depth > NPY_MAX_DEPTH {
                return Err(format!(
                    "the header nests brackets {depth} deep (at most {NPY_MAX_DEPTH})"
                ));
            }
        }
    }
    // The parser's work is bounded too: some headers within the depth limit still make it
    // backtrack for minutes (the `read_npy` fuzz target found one of 173 bytes).
    let limit = npy_call_limit(header_bytes.min(NPY_HEADER_MAX as usize));
    pest::set_call_limit(NonZeroUsize::new(limit));
    let mut cursor = Cursor::new(bytes);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let parsed = catch_unwind(AssertUnwindSafe(|| NpyHeader::from_reader(&mut cursor)));
    std::panic::set_hook(previous);
    match parsed {
        Ok(Ok(header)) => {
            let offset = usize::try_from(cursor.position()).map_err(|e| e.to_string())?;
            Ok((header, offset))
        }
        Ok(Err(e)) if e.to_string().contains("call limit reached") => Err(format!(
            "the header is too complex to parse (over {limit} parser steps; a header NumPy \
             writes takes at most about 45 a byte)"
        )),
        Ok(Err(e)) => Err(npyz_message(&e.to_string())),
        Err(_) => Err("the header's shape overflows".to_owned()),
    }
}

/// npyz's refusal of a header in one plain sentence: its syntax errors carry the parser's
/// multi-line diagnostic (a `--> line:column` locator, the header's text and a caret under
/// it, then `= expected …`), reduced here to the column and what was expected.
fn npyz_message(text: &str) -> String {
    if !text.contains('\n') {
        return text.to_owned();
    }
    let lead = text
        .split("syntax error")
        .next()
        .unwrap_or_default()
        .trim_end()
        .trim_end_matches(':');
    let at = text
        .split_once("--> ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|place| place.rsplit(':').next())
        .map(|column| format!(" at column {column} of the header"))
        .unwrap_or_default();
    let expected = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("= "))
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    format!("{lead}: syntax error{at}{expected}")
}

/// Deepest bracket nesting of an `.npy` header that is handed to npyz. A plain dtype's
/// header nests 2 deep (`{'shape': (2, 3)}`), a flat record dtype's 4 (`{'descr': [('a',
/// '<f4', (2,))]}`, rejected later as unsupported). npyz parses the header with a
/// backtracking parser whose time grows exponentially with the nesting (about 3.5× per
/// level: 1 ms at 4 deep, 0.15 s at 8, 9 s at 12 in a release build); a 118-byte header
/// of 50 nested `{` ran for minutes (found by the `read_npy` fuzz target).
pub const NPY_MAX_DEPTH: usize = 4;

/// Most parser steps (pest's call limit, set process-wide before each header) npyz may take
/// on an `.npy` header of `bytes` bytes (with its preamble, as its length field declares;
/// the file's length when that is unreadable; at most [`NPY_HEADER_MAX`] counted):
/// `50,000 + 256 · bytes`. Within [`NPY_MAX_DEPTH`] a header can still make the
/// backtracking parser take minutes (a 173-byte one found by the `read_npy` fuzz target,
/// mixing unterminated strings and numbers: now refused in about 2 ms). Headers NumPy writes
/// take 14 to 44 steps a byte (measured: a plain one 1,746 for 128 bytes, a 32-axis shape
/// 8,412 for 192, a nested record dtype 8,091 for 192, spaces padding to 65,024 bytes about
/// 1 a byte).
pub fn npy_call_limit(bytes: usize) -> usize {
    50_000 + 256 * bytes
}

/// The deepest nesting of `(`, `[` and `{` in a header's text, outside Python string
/// literals (quoted with `'` or `"`, backslash escapes).
fn bracket_depth(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    for &b in text {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'\'' | b'"' => quote = Some(b),
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    deepest
}

/// An `.npy` array: dtype, shape, order and its little-endian data, aligned to the element
/// size (big-endian files are converted once; little-endian data is borrowed when aligned).
#[derive(Debug)]
pub struct NpyArray<'a> {
    /// Element dtype (`F32`, `F16` or `I8`).
    pub dtype: DType,
    /// Logical shape.
    pub shape: Vec<u64>,
    /// Whether the data is in Fortran (column-major) order (only for rank ≥ 2).
    pub fortran: bool,
    /// Element strides of the storage (Fortran order), `None` for C order.
    pub element_strides: Option<Vec<u64>>,
    /// The data, little-endian, aligned to the element size.
    pub data: Aligned<'a>,
}

impl NpyArray<'_> {
    /// Byte strides of the storage (Fortran order), `None` for C order.
    pub fn byte_strides(&self) -> Option<Vec<u64>> {
        let elem = self.dtype.size() as u64;
        self.element_strides
            .as_ref()
            .map(|s| s.iter().map(|&x| x * elem).collect())
    }

    /// The storage order.
    pub fn order(&self) -> Order {
        if self.fortran {
            Order::Fortran
        } else {
            Order::C
        }
    }

    /// The array as a library tensor (contiguous output strides in the same order).
    pub fn tensor<'s>(&'s self, in_strides: &'s Option<Vec<u64>>) -> Tensor<'s> {
        Tensor {
            dtype: self.dtype,
            shape: &self.shape,
            strides: in_strides.as_deref(),
            out_strides: self.element_strides.as_deref(),
            data: self.data.as_slice(),
        }
    }
}

/// Reads an `.npy` file's array whose dtype is one of `accepted` (float32 → `F32`, float16
/// → `F16`, int8 → `I8`); `accepts` words the rule for the error message, e.g. `quant takes
/// float32 and float16 .npy files`.
///
/// # Errors
///
/// Bad input naming `file`: malformed header, a dtype outside `accepted`, a data size that
/// disagrees with the shape.
pub fn read_npy<'a>(
    file: &Path,
    bytes: &'a [u8],
    accepted: &[DType],
    accepts: &str,
) -> Result<NpyArray<'a>, CliError> {
    read_npy_as(file, bytes, accepted, accepts, None)
}

/// [`read_npy`], and with `as_dtype` = `Some(DType::BF16)` (`--dtype bf16`) reads a file of
/// 2-byte raw elements (descr `<V2` or `|V2`, as ml_dtypes saves `bfloat16` arrays: numpy
/// has no name for bfloat16) as BF16, little-endian, and refuses any other descr.
///
/// # Errors
///
/// Those of [`read_npy`]; with `as_dtype`, a descr other than a 2-byte void.
pub fn read_npy_as<'a>(
    file: &Path,
    bytes: &'a [u8],
    accepted: &[DType],
    accepts: &str,
    as_dtype: Option<DType>,
) -> Result<NpyArray<'a>, CliError> {
    let (header, offset) =
        npy_header(bytes).map_err(|e| bad_file(file, format!("malformed .npy file: {e}")))?;
    let descr = header.dtype().descr();
    let unsupported = || bad_file(file, format!("dtype {descr} is not supported ({accepts})"));
    let npyz::DType::Plain(ts) = header.dtype() else {
        return Err(unsupported());
    };
    let void2 = (ts.type_char(), ts.size_field()) == (TypeChar::RawData, 2);
    let dtype = match (as_dtype, ts.type_char(), ts.size_field()) {
        (Some(DType::BF16), _, _) if void2 => DType::BF16,
        (Some(d), _, _) => {
            return Err(bad_file(
                file,
                format!(
                    "--dtype {} reads bfloat16 .npy files (descr <V2, as ml_dtypes saves them), not dtype {descr}",
                    d.name()
                ),
            ));
        }
        (None, TypeChar::Float, 4) => DType::F32,
        (None, TypeChar::Float, 2) => DType::F16,
        (None, TypeChar::Int, 1) => DType::I8,
        (None, TypeChar::Int, 2) => DType::I16,
        (None, TypeChar::Int, 4) => DType::I32,
        (None, ..) if void2 => {
            return Err(bad_file(
                file,
                format!(
                    "dtype {descr} is not supported ({accepts}); if it holds bfloat16 (ml_dtypes), pass --dtype bf16"
                ),
            ));
        }
        _ => return Err(unsupported()),
    };
    if as_dtype.is_none() && !accepted.contains(&dtype) {
        return Err(unsupported());
    }
    // A void dtype has no byte order: ml_dtypes writes the machine's (little-endian).
    let big_endian = ts.endianness() == Endianness::Big && !void2;
    let elem = dtype.size();
    let shape = header.shape().to_vec();
    let elements = shape
        .iter()
        .try_fold(1u64, |n, &e| n.checked_mul(e))
        .ok_or_else(|| {
            bad_file(
                file,
                "malformed .npy file: the shape's element count overflows",
            )
        })?;
    let need = elements
        .checked_mul(elem as u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| bad_file(file, "malformed .npy file: the data size overflows"))?;
    let data = bytes.get(offset..).unwrap_or(&[]);
    if data.len() != need {
        return Err(bad_file(
            file,
            format!(
                "malformed .npy file: the data holds {} bytes but shape {} of {descr} needs {need}",
                data.len(),
                shape_text(&shape)
            ),
        ));
    }
    // An empty array holds no data, so its order does not matter; read as C order, it
    // never gets npyz's zero strides (refused on an axis of extent > 1).
    let fortran = header.order() == Order::Fortran && shape.len() > 1 && !shape.contains(&0);
    let element_strides = fortran.then(|| header.strides().to_vec());
    let data = if big_endian && elem > 1 {
        Aligned::copy_with(need, elem, |dst| {
            for (d, s) in dst.chunks_exact_mut(elem).zip(data.chunks_exact(elem)) {
                d.copy_from_slice(s);
                d.reverse();
            }
        })
    } else {
        Aligned::new(data, elem)
    }
    .map_err(|e| bad_file(file, e))?;
    Ok(NpyArray {
        dtype,
        shape,
        fortran,
        element_strides,
        data,
    })
}

/// The simak dtype of a safetensors dtype, if it is one simak reads.
pub fn st_dtype(dtype: StDtype) -> Option<DType> {
    match dtype {
        StDtype::F32 => Some(DType::F32),
        StDtype::BF16 => Some(DType::BF16),
        StDtype::F16 => Some(DType::F16),
        StDtype::I8 => Some(DType::I8),
        _ => None,
    }
}

/// Checks that no name appears twice in a `.safetensors` header that
/// [`SafeTensors::deserialize`] accepted (its JSON map keeps the last of duplicate keys, so
/// a duplicated name would silently pick one of two descriptions).
///
/// # Errors
///
/// Bad input naming `file` and the duplicated name.
pub fn unique_safetensor_names(file: &Path, bytes: &[u8]) -> Result<(), CliError> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(k);
            }
            Ok(keys)
        }
    }
    let header = bytes
        .get(..8)
        .and_then(|n| usize::try_from(u64::from_le_bytes(n.try_into().ok()?)).ok())
        .and_then(|n| bytes.get(8..8usize.checked_add(n)?));
    let Some(header) = header else {
        return Err(bad_file(
            file,
            "malformed safetensors file: truncated header",
        ));
    };
    let mut keys = serde_json::Deserializer::from_slice(header)
        .deserialize_map(Keys)
        .map_err(|e| bad_file(file, format!("malformed safetensors file: {e}")))?;
    keys.sort_unstable();
    if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
        return Err(bad_file(
            file,
            format!(
                "malformed safetensors file: the header names `{}` twice",
                w[0]
            ),
        ));
    }
    Ok(())
}

/// A `.safetensors` file checked as a whole: its header parsed and free of duplicate names.
pub struct StFile<'a> {
    /// The input file (for messages).
    file: std::path::PathBuf,
    /// The parsed file.
    pub st: SafeTensors<'a>,
    /// Its tensor names in the order of their data.
    pub names: Vec<String>,
    /// Its `__metadata__` (empty when it has none).
    pub metadata: std::collections::HashMap<String, String>,
}

impl<'a> StFile<'a> {
    /// Parses the `.safetensors` file `bytes` read from `file`.
    ///
    /// # Errors
    ///
    /// Bad input naming `file`: a malformed header, a name given twice.
    pub fn open(file: &Path, bytes: &'a [u8]) -> Result<StFile<'a>, CliError> {
        let st = SafeTensors::deserialize(bytes).map_err(|e| malformed(file, e))?;
        let (_, metadata) = SafeTensors::read_metadata(bytes).map_err(|e| malformed(file, e))?;
        unique_safetensor_names(file, bytes)?;
        Ok(StFile {
            file: file.to_path_buf(),
            names: metadata.offset_keys(),
            metadata: metadata.metadata().clone().unwrap_or_default(),
            st,
        })
    }

    /// The tensor `name`, one of [`StFile::names`].
    ///
    /// # Errors
    ///
    /// Bad input naming the file when its header does not describe the tensor's data.
    pub fn tensor(&self, name: &str) -> Result<TensorView<'a>, CliError> {
        self.st.tensor(name).map_err(|e| malformed(&self.file, e))
    }

    /// The tensor `name` as the user named it.
    ///
    /// # Errors
    ///
    /// Bad input naming the tensor when the file has none of that name.
    pub fn named(&self, name: &str) -> Result<TensorView<'a>, CliError> {
        self.st.tensor(name).map_err(|_| {
            bad_tensor(
                &self.file,
                name,
                format!(
                    "no such tensor (the file holds {})",
                    crate::report::count(self.names.len() as u64, "tensor", "tensors")
                ),
            )
        })
    }
}

/// The file name of `path` (the whole path if it has none), as summaries name a file's
/// only tensor.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A `.safetensors` file the parser refused.
fn malformed(file: &Path, e: safetensors::SafeTensorError) -> CliError {
    bad_file(file, format!("malformed safetensors file: {e}"))
}

/// One tensor of a `.safetensors` file.
#[derive(Debug)]
pub struct StTensor<'a> {
    /// Tensor name.
    pub name: String,
    /// Dtype.
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<u64>,
    /// Little-endian data aligned to the element size.
    pub data: Aligned<'a>,
}

/// Picks the tensor named `name` from a `.safetensors` file, or its only tensor when `name`
/// is `None`; its dtype must be one of `accepted` (`accepts` words the rule).
///
/// # Errors
///
/// Bad input naming the file (malformed, several tensors and no `--tensor`, unknown name)
/// or the tensor (dtype).
pub fn pick_safetensor<'a>(
    file: &Path,
    bytes: &'a [u8],
    name: Option<&str>,
    accepted: &[DType],
    accepts: &str,
) -> Result<StTensor<'a>, CliError> {
    let st = StFile::open(file, bytes)?;
    let names = &st.names;
    let name = match name {
        Some(n) => n.to_owned(),
        None => match names.as_slice() {
            [only] => only.clone(),
            [] => return Err(bad_file(file, "the file holds no tensor")),
            many => {
                let shown: Vec<&str> = many.iter().take(4).map(String::as_str).collect();
                return Err(bad_file(
                    file,
                    format!(
                        "the file holds {} tensors ({}{}); pick one with --tensor",
                        many.len(),
                        shown.join(", "),
                        if many.len() > 4 { ", …" } else { "" }
                    ),
                ));
            }
        },
    };
    let view = st.named(&name)?;
    let dtype = match st_dtype(view.dtype()) {
        Some(d) if accepted.contains(&d) => d,
        _ => {
            return Err(bad_tensor(
                file,
                &name,
                format!("dtype {} is not supported ({accepts})", view.dtype()),
            ));
        }
    };
    Ok(StTensor {
        dtype,
        shape: view.shape().iter().map(|&e| e as u64).collect(),
        data: Aligned::new(view.data(), dtype.size()).map_err(|e| bad_tensor(file, &name, e))?,
        name,
    })
}

/// Decoder limits for images: width and height at most this many pixels.
pub const IMAGE_MAX_SIDE: u32 = 16384;
/// The default image limit in bytes (`--image-limit`, in MiB, sets another): 1 GiB, which
/// admits a 48-megapixel RGB photo (8000 × 6000 × 3 FP32 = 576 MB). See [`decode_image`].
pub const IMAGE_DEFAULT_LIMIT: u64 = 1 << 30;

/// Image normalization: `(p / full_scale - mean[c]) / std[c]`, all in binary32.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalize {
    /// Per-channel mean (R, G, B).
    pub mean: [f32; 3],
    /// Per-channel standard deviation (R, G, B).
    pub std: [f32; 3],
}

impl Default for Normalize {
    fn default() -> Self {
        Normalize {
            mean: [0.0; 3],
            std: [1.0; 3],
        }
    }
}

/// A decoded image as an HWC FP32 tensor.
#[derive(Debug)]
pub struct DecodedImage {
    /// `png` or `jpeg`.
    pub format: &'static str,
    /// Bits per sample of the source (8 or 16).
    pub bits: u8,
    /// Source color type, e.g. `Rgb8`.
    pub color: String,
    /// `[height, width, 3]`.
    pub shape: Vec<u64>,
    /// FP32 little-endian HWC data, 4-byte aligned.
    pub data: Aligned<'static>,
}

/// Decodes a PNG or JPEG image under [`IMAGE_MAX_SIDE`] pixels a side and `limit` bytes:
/// an image whose HWC FP32 tensor (12 bytes per pixel) would exceed `limit` is refused from
/// its header, before decoding (the conversion's copies are sized by the pixel count, which
/// a small file can make huge: a blank PNG compresses ~1000:1), and the decoder may
/// allocate at most `limit` bytes ([`IMAGE_DEFAULT_LIMIT`] by default). Converts it
/// to RGB (gray is replicated, alpha dropped), then to HWC FP32 with
/// `(p as f32 / 255.0 - mean) / std` (65535 for 16-bit images), each step in binary32.
///
/// # Errors
///
/// Bad input naming the file: not a PNG or JPEG, malformed or truncated data, an image past
/// the decoder limits.
pub fn decode_image(
    file: &Path,
    bytes: &[u8],
    norm: &Normalize,
    limit: u64,
) -> Result<DecodedImage, CliError> {
    use image::{ColorType, ImageFormat, ImageReader, Limits};
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| bad_file(file, format!("cannot read: {e}")))?;
    let (format, image_format) = match reader.format() {
        Some(f @ ImageFormat::Png) => ("png", f),
        Some(f @ ImageFormat::Jpeg) => ("jpeg", f),
        _ => {
            return Err(bad_file(
                file,
                "not a PNG or JPEG image (the only image formats read)",
            ));
        }
    };
    // The header alone (a second reader over the same bytes: `into_dimensions` consumes it).
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), image_format)
        .into_dimensions()
        .map_err(|e| bad_file(file, format!("malformed {format} image: {e}")))?;
    let tensor = u64::from(width) * u64::from(height) * 12;
    if tensor > limit {
        return Err(bad_file(
            file,
            format!(
                "{format} image of {width} x {height} pixels exceeds the limits: its FP32 tensor would take {} MiB (limit {} MiB; --image-limit sets another)",
                tensor.div_ceil(1 << 20),
                limit >> 20
            ),
        ));
    }
    if image_format == ImageFormat::Jpeg {
        let (width, height, color, rgb) = decode_jpeg_rgb8(file, bytes)?;
        let len = width * height * 3 * 4;
        let data = Aligned::copy_with(len, 4, |dst| {
            to_fp32(norm, &mut rgb.iter().map(|&p| f32::from(p)), 255.0, dst);
        })
        .map_err(|e| bad_file(file, e))?;
        return Ok(DecodedImage {
            format,
            bits: 8,
            color: color.to_owned(),
            shape: vec![height as u64, width as u64, 3],
            data,
        });
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(IMAGE_MAX_SIDE);
    limits.max_image_height = Some(IMAGE_MAX_SIDE);
    limits.max_alloc = Some(limit);
    let mut reader = reader;
    reader.limits(limits);
    let image = reader.decode().map_err(|e| match e {
        image::ImageError::Limits(l) => bad_file(
            file,
            format!(
                "{format} image exceeds the decoder limits ({IMAGE_MAX_SIDE} x {IMAGE_MAX_SIDE} pixels, {} MiB; --image-limit sets another): {l}",
                limit >> 20
            ),
        ),
        other => bad_file(file, format!("malformed {format} image: {other}")),
    })?;
    let color = image.color();
    let sixteen = matches!(
        color,
        ColorType::L16 | ColorType::La16 | ColorType::Rgb16 | ColorType::Rgba16
    );
    let (width, height) = (image.width() as usize, image.height() as usize);
    // Straight from the RGB samples into the aligned FP32 buffer (no intermediate tensor),
    // from samples that are the decoded buffer itself when the image is RGB already
    // (`into_rgb8`): the peak is the RGB samples plus the tensor.
    let len = width * height * 3 * 4;
    let data = if sixteen {
        let rgb = image.into_rgb16();
        Aligned::copy_with(len, 4, |dst| {
            to_fp32(
                norm,
                &mut rgb.as_raw().iter().map(|&p| f32::from(p)),
                65535.0,
                dst,
            );
        })
    } else {
        let rgb = image.into_rgb8();
        Aligned::copy_with(len, 4, |dst| {
            to_fp32(
                norm,
                &mut rgb.as_raw().iter().map(|&p| f32::from(p)),
                255.0,
                dst,
            );
        })
    }
    .map_err(|e| bad_file(file, e))?;
    Ok(DecodedImage {
        format,
        bits: if sixteen { 16 } else { 8 },
        color: format!("{color:?}"),
        shape: vec![height as u64, width as u64, 3],
        data,
    })
}

/// A decoded photo as 8-bit samples (for `simak preproc`).
#[derive(Debug)]
pub struct DecodedU8 {
    /// `png` or `jpeg`.
    pub format: &'static str,
    /// Source color type, e.g. `Rgb8`.
    pub color: String,
    /// Height in pixels.
    pub height: u64,
    /// Width in pixels.
    pub width: u64,
    /// `height · width · 3` RGB samples, or `height · width` gray samples.
    pub pixels: Vec<u8>,
}

/// Decodes an 8-bit PNG or JPEG photo under [`IMAGE_MAX_SIDE`] pixels a side and `limit`
/// bytes to RGB8 (`gray` false: a grayscale photo is replicated, alpha dropped) or GRAY8
/// (`gray` true: the photo must be grayscale; alpha dropped). JPEG by libjpeg-turbo (as
/// [`decode_image`]), PNG by the `image` crate.
///
/// # Errors
///
/// Bad input naming the file: not a PNG or JPEG, malformed, past the limits, a 16-bit
/// PNG (a frame holds 8-bit samples), a color photo read as gray, a CMYK JPEG.
pub fn decode_image_u8(
    file: &Path,
    bytes: &[u8],
    gray: bool,
    limit: u64,
) -> Result<DecodedU8, CliError> {
    use image::{ColorType, ImageFormat, ImageReader, Limits};
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| bad_file(file, format!("cannot read: {e}")))?;
    let not_gray = |color: &str| {
        bad_file(
            file,
            format!(
                "--format gray takes a grayscale photo; this one is {color} (use --format rgb)"
            ),
        )
    };
    match reader.format() {
        Some(ImageFormat::Jpeg) => {
            if gray {
                use turbojpeg::{Colorspace, Decompressor, Image, PixelFormat};
                let malformed =
                    |e: turbojpeg::Error| bad_file(file, format!("malformed jpeg image: {e}"));
                let mut decoder = Decompressor::new().map_err(malformed)?;
                let header = decoder.read_header(bytes).map_err(malformed)?;
                if header.colorspace != Colorspace::Gray {
                    return Err(not_gray("a color jpeg"));
                }
                let (width, height) = (header.width, header.height);
                if width > IMAGE_MAX_SIDE as usize || height > IMAGE_MAX_SIDE as usize {
                    return Err(bad_file(
                        file,
                        format!(
                            "jpeg image exceeds the decoder limits ({IMAGE_MAX_SIDE} x {IMAGE_MAX_SIDE} pixels): {width} x {height}"
                        ),
                    ));
                }
                let mut pixels = Vec::new();
                pixels
                    .try_reserve_exact(width * height)
                    .map_err(|_| bad_file(file, "cannot allocate the gray image: out of memory"))?;
                pixels.resize(width * height, 0);
                let image = Image {
                    pixels: pixels.as_mut_slice(),
                    width,
                    pitch: width,
                    height,
                    format: PixelFormat::GRAY,
                };
                decoder.decompress(bytes, image).map_err(malformed)?;
                return Ok(DecodedU8 {
                    format: "jpeg",
                    color: "L8".to_owned(),
                    height: height as u64,
                    width: width as u64,
                    pixels,
                });
            }
            let (width, height, color, pixels) = decode_jpeg_rgb8(file, bytes)?;
            Ok(DecodedU8 {
                format: "jpeg",
                color: color.to_owned(),
                height: height as u64,
                width: width as u64,
                pixels,
            })
        }
        Some(ImageFormat::Png) => {
            let mut limits = Limits::default();
            limits.max_image_width = Some(IMAGE_MAX_SIDE);
            limits.max_image_height = Some(IMAGE_MAX_SIDE);
            limits.max_alloc = Some(limit);
            let mut reader = reader;
            reader.limits(limits);
            let image = reader.decode().map_err(|e| match e {
                image::ImageError::Limits(l) => bad_file(
                    file,
                    format!(
                        "png image exceeds the decoder limits ({IMAGE_MAX_SIDE} x {IMAGE_MAX_SIDE} pixels, {} MiB): {l}",
                        limit >> 20
                    ),
                ),
                other => bad_file(file, format!("malformed png image: {other}")),
            })?;
            let color = image.color();
            if !matches!(
                color,
                ColorType::L8 | ColorType::La8 | ColorType::Rgb8 | ColorType::Rgba8
            ) {
                return Err(bad_file(
                    file,
                    format!(
                        "a {color:?} png is not an 8-bit frame (preproc reads 8-bit gray and RGB photos)"
                    ),
                ));
            }
            let (width, height) = (u64::from(image.width()), u64::from(image.height()));
            let pixels = if gray {
                if !matches!(color, ColorType::L8 | ColorType::La8) {
                    return Err(not_gray(&format!("{color:?}")));
                }
                image.into_luma8().into_raw()
            } else {
                image.into_rgb8().into_raw()
            };
            Ok(DecodedU8 {
                format: "png",
                color: format!("{color:?}"),
                height,
                width,
                pixels,
            })
        }
        _ => Err(bad_file(
            file,
            "not a PNG or JPEG image (the only image formats read)",
        )),
    }
}

/// Writes `(p / scale - mean[c]) / std[c]` (binary32, channel `c = k % 3` of sample `k`) as
/// little-endian FP32 into `dst`, one sample per 4 bytes.
fn to_fp32(norm: &Normalize, raw: &mut dyn Iterator<Item = f32>, scale: f32, dst: &mut [u8]) {
    for (k, (d, p)) in dst.chunks_exact_mut(4).zip(raw).enumerate() {
        let c = k % 3;
        d.copy_from_slice(&((p / scale - norm.mean[c]) / norm.std[c]).to_le_bytes());
    }
}

/// Decodes a JPEG to 8-bit RGB with libjpeg-turbo (the `turbojpeg` crate, its default
/// decoding: the accurate integer IDCT and "fancy" (smooth) chroma upsampling), the decoder
/// of PIL, OpenCV and torchvision, so the samples are byte-equal to theirs. A warning of the
/// decoder (a truncated or corrupt scan, which it would fill with grey) is an error here.
/// Returns width, height, the source color type as `image` names it, and the
/// `width · height · 3` samples.
fn decode_jpeg_rgb8(
    file: &Path,
    bytes: &[u8],
) -> Result<(usize, usize, &'static str, Vec<u8>), CliError> {
    use turbojpeg::{Colorspace, Decompressor, Image, PixelFormat};
    let malformed = |e: turbojpeg::Error| bad_file(file, format!("malformed jpeg image: {e}"));
    let mut decoder = Decompressor::new().map_err(malformed)?;
    let header = decoder.read_header(bytes).map_err(malformed)?;
    let (width, height) = (header.width, header.height);
    if width > IMAGE_MAX_SIDE as usize || height > IMAGE_MAX_SIDE as usize {
        return Err(bad_file(
            file,
            format!(
                "jpeg image exceeds the decoder limits ({IMAGE_MAX_SIDE} x {IMAGE_MAX_SIDE} pixels): {width} x {height}"
            ),
        ));
    }
    // The names of `image::ColorType::from_jpeg` (what `image` would report).
    let color = match header.colorspace {
        Colorspace::Gray => "L8",
        Colorspace::CMYK | Colorspace::YCCK => {
            // libjpeg-turbo does not convert them to RGB, and each library inverts and
            // converts them its own way: no samples to be byte-equal to.
            return Err(bad_file(
                file,
                "a CMYK (or YCCK) jpeg image is not read: convert it to RGB first",
            ));
        }
        _ => "Rgb8",
    };
    let len = width * height * 3;
    let mut rgb = Vec::new();
    rgb.try_reserve_exact(len).map_err(|_| {
        bad_file(
            file,
            format!(
                "cannot allocate the {len} bytes of a {width} x {height} RGB image: out of memory"
            ),
        )
    })?;
    rgb.resize(len, 0);
    let image = Image {
        pixels: rgb.as_mut_slice(),
        width,
        pitch: width * 3,
        height,
        format: PixelFormat::RGB,
    };
    decoder.decompress(bytes, image).map_err(malformed)?;
    Ok((width, height, color, rgb))
}

/// What an input file must be, checked from its size (file metadata) and its first bytes
/// before its payload is read or allocated ([`read_input`], [`precheck`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Any file (sidecars): at most this many bytes.
    AtMost(u64),
    /// An `.npy` file: magic, a header of at most [`NPY_HEADER_MAX`] bytes, and exactly the
    /// data its shape and dtype declare.
    Npy,
    /// A `.safetensors` file: a header of at most [`SAFETENSORS_HEADER_MAX`] bytes that the
    /// `safetensors` crate accepts, and exactly the data its offsets declare.
    Safetensors,
    /// A PNG or JPEG image (by its magic) of at most `limit` bytes (the image limit: a
    /// compressed image is smaller than its 12-byte-a-pixel FP32 tensor).
    Image {
        /// `--image-limit` in bytes.
        limit: u64,
    },
    /// An EV74 descriptor: at most [`simak::ev74::MAX_DESCRIPTOR_SIZE`] bytes (a
    /// shorter one that is not its entry's size is refused by the device decoder's size
    /// rule after reading).
    Packet,
}

/// The longest `.npy` header read, in bytes (magic, version, length and dictionary): 1 MiB.
/// NumPy's own reader refuses headers past 10,000 bytes by default; simak's writer emits
/// under 200.
pub const NPY_HEADER_MAX: u64 = 1 << 20;

/// The longest `.safetensors` header, in bytes: that of the `safetensors` crate (its
/// `MAX_HEADER_SIZE`).
pub const SAFETENSORS_HEADER_MAX: u64 = 100_000_000;

/// The first bytes of a file read before its checks, and the largest read at once when the
/// rest is read into its final buffer: 64 KiB and 8 MiB.
const HEAD: u64 = 64 << 10;
const CHUNK: usize = 8 << 20;

/// What [`precheck`] needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The checks passed: read the whole file.
    Whole,
    /// Read the first this many bytes (the whole header), then check again.
    Head(u64),
}

/// Checks an input's first bytes `head` against what it must be and its size `size` in
/// bytes (from its metadata), before its payload is read: magic, header, and the size the
/// header implies. `head` is the file's first `min(size, n)` bytes for the `n` asked for
/// (64 KiB at first).
///
/// # Errors
///
/// The reason the file is refused (the text after the file's name).
pub fn precheck(expect: Expect, head: &[u8], size: u64) -> Result<Need, String> {
    match expect {
        Expect::AtMost(max) if size > max => Err(format!(
            "holds {size} bytes, more than the {max} such a file can hold"
        )),
        Expect::AtMost(_) => Ok(Need::Whole),
        Expect::Packet => {
            let max = simak::ev74::MAX_DESCRIPTOR_SIZE as u64;
            if size > max {
                // One phrase a size, naming the entries of that size in table order.
                let mut sizes: Vec<(usize, Vec<&str>)> = Vec::new();
                for e in &simak::ev74::ENTRIES {
                    match sizes.iter_mut().find(|(size, _)| *size == e.size) {
                        Some((_, titles)) => titles.push(e.title),
                        None => sizes.push((e.size, vec![e.title])),
                    }
                }
                let sizes: Vec<String> = sizes
                    .iter()
                    .map(|(size, titles)| format!("{size} bytes ({})", titles.join(", ")))
                    .collect();
                return Err(format!(
                    "holds {size} bytes: not an EV74 descriptor, which is {}",
                    sizes.join(" or ")
                ));
            }
            Ok(Need::Whole)
        }
        Expect::Image { limit } => {
            let format = if head.starts_with(b"\x89PNG\r\n\x1a\n") {
                "png"
            } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
                "jpeg"
            } else {
                return Err("not a PNG or JPEG image (the only image formats read)".to_owned());
            };
            if size > limit {
                return Err(format!(
                    "{format} file of {size} bytes exceeds the image limit of {} MiB (--image-limit sets another)",
                    limit >> 20
                ));
            }
            Ok(Need::Whole)
        }
        Expect::Npy => npy_precheck(head, size),
        Expect::Safetensors => safetensors_precheck(head, size),
    }
}

/// [`precheck`] of an `.npy` file.
fn npy_precheck(head: &[u8], size: u64) -> Result<Need, String> {
    let malformed = |e: String| format!("malformed .npy file: {e}");
    let claim = if head.starts_with(b"\x93NUMPY") {
        match head.get(6) {
            Some(1) => head
                .get(8..10)
                .map(|b| 10 + u64::from(u16::from_le_bytes([b[0], b[1]]))),
            Some(2 | 3) => head
                .get(8..12)
                .map(|b| 12 + u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
            _ => None,
        }
    } else {
        None
    };
    let header = match claim {
        Some(end) if end > size => {
            return Err(malformed(format!(
                "the header length {} runs past the end of the file ({size} bytes)",
                end - if head.get(6) == Some(&1) { 10 } else { 12 }
            )));
        }
        Some(end) if end > NPY_HEADER_MAX => {
            return Err(malformed(format!(
                "the header takes {end} bytes (simak reads headers of at most {NPY_HEADER_MAX})"
            )));
        }
        Some(end) if end > head.len() as u64 => return Ok(Need::Head(end)),
        // In range: end ≤ head.len().
        Some(end) => &head[..end as usize],
        // No magic or version: npyz words the refusal.
        None => head,
    };
    let (parsed, offset) = npy_header(header).map_err(malformed)?;
    let descr = parsed.dtype().descr();
    let Some(elem) = parsed.dtype().num_bytes() else {
        // Not a fixed-size dtype: refused by the reader, read nothing more.
        return Err(format!("dtype {descr} is not supported"));
    };
    let shape = parsed.shape();
    // An extent of 0 makes the array empty whatever the others (as the reader counts it).
    let need = if shape.contains(&0) {
        0
    } else {
        shape
            .iter()
            .try_fold(elem as u64, |n, &e| n.checked_mul(e))
            .ok_or_else(|| malformed("the data size overflows".to_owned()))?
    };
    let data = size - offset as u64;
    if data != need {
        return Err(malformed(format!(
            "the data holds {data} bytes but shape {} of {descr} needs {need}",
            shape_text(shape)
        )));
    }
    Ok(Need::Whole)
}

/// [`precheck`] of a `.safetensors` file: the header as the `safetensors` crate reads it
/// (its own errors), then the data its offsets declare against the file's size.
fn safetensors_precheck(head: &[u8], size: u64) -> Result<Need, String> {
    let malformed = |e: &dyn std::fmt::Display| format!("malformed safetensors file: {e}");
    let Some(n) = head.get(..8) else {
        // Under 8 bytes: read it, the parser refuses it.
        return Ok(Need::Whole);
    };
    let n = u64::from_le_bytes([n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]);
    if n > SAFETENSORS_HEADER_MAX {
        return Err(malformed(&safetensors::SafeTensorError::HeaderTooLarge));
    }
    let end = 8 + n;
    if end > size {
        return Err(malformed(&format!(
            "the header length {n} runs past the end of the file ({size} bytes)"
        )));
    }
    if end > head.len() as u64 {
        return Ok(Need::Head(end));
    }
    // In range: end ≤ head.len().
    let header = &head[..end as usize];
    let metadata = std::str::from_utf8(&header[8..])
        .ok()
        .and_then(|text| serde_json::from_str::<safetensors::tensor::Metadata>(text).ok());
    let Some(metadata) = metadata else {
        // The crate's own words for the header it refuses.
        return match SafeTensors::read_metadata(header) {
            Err(e) => Err(malformed(&e)),
            Ok(_) => Ok(Need::Whole),
        };
    };
    let data = metadata.data_len() as u64;
    if end + data != size {
        return Err(malformed(&format!(
            "the header describes {data} bytes of data but the file holds {}",
            size - end
        )));
    }
    Ok(Need::Whole)
}

/// The size in bytes of the input file `path` from its metadata; `what` follows "cannot
/// read" in its errors (`""` for an input, `" the sidecar"`). Only regular files (or
/// symlinks to them) are read: a device or FIFO could stream forever (`/dev/zero`) or block.
///
/// # Errors
///
/// Bad input naming `path`: missing or unreadable, a special file.
pub fn file_size(path: &Path, what: &str) -> Result<u64, CliError> {
    let meta =
        std::fs::metadata(path).map_err(|e| bad_file(path, format!("cannot read{what}: {e}")))?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "a device or other special file"
        };
        return Err(bad_file(
            path,
            format!("cannot read{what}: {kind}; simak reads regular files only"),
        ));
    }
    Ok(meta.len())
}

/// Reads the input file `path` after checking it against `expect` ([`precheck`]): first its
/// size from the metadata and its first bytes (the header), then, only when they agree, the
/// rest in chunks of at most 8 MiB into one buffer reserved (fallibly) at the file's size.
/// Memory is thus bounded by what the header declares. `what` follows "cannot read" in
/// its errors (`""` for an input, `" the sidecar"`).
///
/// # Errors
///
/// Bad input naming `path`: missing or unreadable, a special file, refused by its checks,
/// too large for memory, or changed in size while read.
pub fn read_input(path: &Path, what: &str, expect: Expect) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    let size = file_size(path, what)?;
    let cannot = |e: &dyn std::fmt::Display| bad_file(path, format!("cannot read{what}: {e}"));
    let mut file = std::fs::File::open(path).map_err(|e| cannot(&e))?;
    let mut bytes = Vec::new();
    let mut want = size.min(HEAD);
    loop {
        read_upto(&mut file, &mut bytes, want).map_err(|e| cannot(&e))?;
        match precheck(expect, &bytes, size).map_err(|e| bad_file(path, e))? {
            Need::Whole => break,
            Need::Head(n) if n > want && n <= size => want = n,
            Need::Head(n) => {
                return Err(CliError::Internal(anyhow::anyhow!(
                    "{}: the check asked for {n} header bytes of {size} after {want}",
                    path.display()
                )));
            }
        }
    }
    let whole = usize::try_from(size).map_err(|_| cannot(&"too large for this machine"))?;
    bytes
        .try_reserve_exact(whole - bytes.len())
        .map_err(|_| cannot(&format_args!("cannot allocate {size} bytes: out of memory")))?;
    read_upto(&mut file, &mut bytes, size).map_err(|e| cannot(&e))?;
    let mut probe = [0u8; 1];
    if file.read(&mut probe).map_err(|e| cannot(&e))? != 0 {
        return Err(cannot(&"the file grew while it was read"));
    }
    Ok(bytes)
}

/// Reads from `file` until `bytes` holds `upto` bytes, at most [`CHUNK`] at a time.
fn read_upto(file: &mut std::fs::File, bytes: &mut Vec<u8>, upto: u64) -> std::io::Result<()> {
    use std::io::Read;
    while (bytes.len() as u64) < upto {
        let start = bytes.len();
        let n = ((upto - start as u64) as usize).min(CHUNK);
        bytes.resize(start + n, 0);
        file.read_exact(&mut bytes[start..]).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                std::io::Error::other("the file shrank while it was read")
            } else {
                e
            }
        })?;
    }
    Ok(())
}

/// What kind of file an input path names, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// `.safetensors`.
    Safetensors,
    /// `.npy`.
    Npy,
    /// `.png`, `.jpg`, `.jpeg`.
    Image,
}

impl InputKind {
    /// The kind of `path` by its (case-insensitive) extension.
    pub fn of(path: &Path) -> Option<InputKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "safetensors" => Some(InputKind::Safetensors),
            "npy" => Some(InputKind::Npy),
            "png" | "jpg" | "jpeg" => Some(InputKind::Image),
            _ => None,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use npyz::WriterBuilder;

    #[test]
    fn npy_header_reports_the_data_offset() {
        let mut buf = Vec::new();
        npyz::WriteOptions::<f32>::new()
            .default_dtype()
            .shape(&[2, 3])
            .writer(&mut buf)
            .write_header_only()
            .unwrap();
        let header_len = buf.len();
        buf.extend([0u8; 24]);
        let (h, off) = npy_header(&buf).unwrap();
        assert_eq!(off, header_len);
        assert_eq!(h.shape(), &[2, 3]);
        assert!(npy_header(b"not an npy file").is_err());
    }

    #[test]
    fn kinds_follow_the_extension() {
        assert_eq!(InputKind::of(Path::new("a.PNG")), Some(InputKind::Image));
        assert_eq!(InputKind::of(Path::new("a.jpeg")), Some(InputKind::Image));
        assert_eq!(InputKind::of(Path::new("a.npy")), Some(InputKind::Npy));
        assert_eq!(InputKind::of(Path::new("a.gif")), None);
    }

    #[test]
    fn images_normalize_in_binary32() {
        // A 2 x 1 RGB8 PNG.
        let mut png = Vec::new();
        image::ImageEncoder::write_image(
            image::codecs::png::PngEncoder::new(&mut png),
            &[0, 128, 255, 51, 1, 2],
            2,
            1,
            image::ExtendedColorType::Rgb8,
        )
        .unwrap();
        let norm = Normalize {
            mean: [0.5, 0.25, 0.0],
            std: [0.5, 2.0, 1.0],
        };
        let img = decode_image(Path::new("x.png"), &png, &norm, IMAGE_DEFAULT_LIMIT).unwrap();
        assert_eq!(img.shape, [1, 2, 3]);
        let got: Vec<f32> = img
            .data
            .as_slice()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let f = |p: u8, m: f32, s: f32| (p as f32 / 255.0 - m) / s;
        assert_eq!(
            got,
            [
                f(0, 0.5, 0.5),
                f(128, 0.25, 2.0),
                f(255, 0.0, 1.0),
                f(51, 0.5, 0.5),
                f(1, 0.25, 2.0),
                f(2, 0.0, 1.0)
            ]
        );
    }
}
