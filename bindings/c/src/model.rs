//! A model's whole boundary from its manifest (SPEC §14): `simak_model_from_mpk` reads a
//! compiled model's `*_mpk.json` into its input stages (frame or float tensor → IFM bytes)
//! and output stages (OFM buffer → one dense tensor per head), each a prepared op of the
//! library; the stage queries describe them, `simak_model_preprocess` and
//! `simak_model_postprocess` run them on the A65.
//!
//! Every rule is `simak::model`'s: a refused manifest reports its code (0x700–0x710, or
//! the op's own admission code) and a message naming the plugin and the key.

use std::ffi::{CStr, CString, OsStr, c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use simak::Port;
use simak::a65::ExecuteError;
use simak::model::{ElementType, Model, ModelError, ModelErrorKind, StageInfo};

use crate::{
    Failure, SIMAK_PLAN_EXACT, borrow, clone_handle, dtype_code, free_handle, guard, into_handle,
    put, simak_dtype, simak_error,
};

/// A model read from its manifest (opaque; immutable; shareable between threads; the
/// strings its queries return live as long as the model).
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug)]
pub struct simak_model(ModelHandle);

/// One stage of a model (`simak_model_input`, `simak_model_output`). The strings and
/// arrays belong to the model and live as long as it (its last handle); a NUL inside a
/// manifest's string is dropped from its C string. An input stage's `output_bytes` and an
/// output stage's `input_bytes` equal its `size`.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy)]
pub struct simak_model_stage {
    /// The model input's or output's node name (NUL-terminated).
    pub name: *const c_char,
    /// The op the stage runs: "preproc", "quant", "quanttess", "casttess", "detess",
    /// "detesscast", "detessdequant" or "dequant".
    pub op: *const c_char,
    /// Axes of `shape` (at most 6).
    pub rank: u32,
    /// Input stage: the shape of what the caller gives (a frame `[N, H, W, C]` for
    /// interleaved formats, `[N, H·3/2, W]` for NV12 and I420, OpenCV's layout; or the
    /// float tensor's shape). Output stage: the dense tensor's shape. Leading batch extent
    /// included; slots from `rank` on are 0.
    pub shape: [u64; 6],
    /// Input stage: the caller's dtype (`SIMAK_DTYPE_U8` for frames); output stage: the
    /// tensor's. A `simak_dtype` code.
    pub dtype: u32,
    /// Input stage: the IFM's bytes; output stage: the head's bytes in the OFM.
    pub size: u64,
    /// Input stage: the IFM's byte offset among the MLA's inputs (back to back in input
    /// order); output stage: the head's byte offset in the OFM.
    pub offset: u64,
    /// Bytes of the caller's input (input stage: the frame or tensor) or of the OFM head
    /// (output stage).
    pub input_bytes: u64,
    /// Bytes written: the IFM (input stage) or the dense tensor (output stage).
    pub output_bytes: u64,
    /// 1 when the stage's op has an EV74 entry, else 0 (the A65 runs every stage).
    pub ev74: u32,
    /// Plugins the stage fuses, in chain order.
    pub plugin_count: usize,
    /// `plugin_count` plugin names.
    pub plugins: *const *const c_char,
    /// The op's parameters, in a fixed order.
    pub param_count: usize,
    /// `param_count` parameter names, as `simak model inspect` prints them
    /// (docs/contract.md §14 lists each op's): e.g. "multiplier", "zero_point",
    /// "rounding", "axes", "tile", "channels", "tile_align", "out_dtype".
    pub param_names: *const *const c_char,
    /// `param_count` parameter values as text: numbers in decimal (a multiplier is the
    /// shortest decimal of its binary32), lists as "[a, b, …]" ("-" an absent axis).
    pub param_values: *const *const c_char,
    /// The SPEC §14 rules and defaults the stage used, in words.
    pub rule_count: usize,
    /// `rule_count` rules.
    pub rules: *const *const c_char,
}

/// What a model handle holds: the model and its stages' strings as C strings.
#[derive(Debug)]
struct ModelHandle {
    model: Model,
    name: CString,
    inputs: Vec<StageText>,
    outputs: Vec<StageText>,
}

/// A stage's strings as C strings, and arrays of pointers to them (pointing into the
/// strings' own heap buffers, which do not move with the struct).
#[derive(Debug)]
struct StageText {
    name: CString,
    op: CString,
    #[allow(dead_code, reason = "owns the strings the pointer arrays point into")]
    strings: Vec<CString>,
    plugins: Vec<*const c_char>,
    param_names: Vec<*const c_char>,
    param_values: Vec<*const c_char>,
    rules: Vec<*const c_char>,
}

impl StageText {
    fn new(info: &StageInfo) -> StageText {
        let mut strings = Vec::new();
        let mut list = |items: &mut dyn Iterator<Item = &str>| -> Vec<*const c_char> {
            items
                .map(|s| {
                    let owned = c_text(s);
                    let ptr = owned.as_ptr();
                    strings.push(owned);
                    ptr
                })
                .collect()
        };
        let plugins = list(&mut info.plugins.iter().map(String::as_str));
        let param_names = list(&mut info.params.iter().map(|(k, _)| k.as_str()));
        let param_values = list(&mut info.params.iter().map(|(_, v)| v.as_str()));
        let rules = list(&mut info.rules.iter().map(String::as_str));
        StageText {
            name: c_text(&info.name),
            op: c_text(info.op.name()),
            strings,
            plugins,
            param_names,
            param_values,
            rules,
        }
    }

    fn stage(&self, info: &StageInfo) -> simak_model_stage {
        let mut shape = [0u64; 6];
        for (slot, &e) in shape.iter_mut().zip(&info.shape) {
            *slot = e;
        }
        simak_model_stage {
            name: self.name.as_ptr(),
            op: self.op.as_ptr(),
            rank: info.shape.len().min(6) as u32,
            shape,
            dtype: match info.dtype {
                ElementType::U8 => simak_dtype::SIMAK_DTYPE_U8 as u32,
                ElementType::D(d) => dtype_code(d),
            },
            size: info.size,
            offset: info.offset,
            input_bytes: info.input_bytes,
            output_bytes: info.output_bytes,
            ev74: u32::from(info.op.backends().contains(&"ev74")),
            plugin_count: self.plugins.len(),
            plugins: self.plugins.as_ptr(),
            param_count: self.param_names.len(),
            param_names: self.param_names.as_ptr(),
            param_values: self.param_values.as_ptr(),
            rule_count: self.rules.len(),
            rules: self.rules.as_ptr(),
        }
    }
}

/// `s` as a C string, any NUL inside dropped.
fn c_text(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

impl From<ModelError> for Failure {
    fn from(e: ModelError) -> Failure {
        Failure::new(e.code(), e.to_string())
    }
}

/// The body of both constructors: `*model` is NULL first; a NULL `model` (0x603) and
/// flags other than `SIMAK_PLAN_EXACT` (0x601) are refused before `read` gives the model;
/// on success `*model` is a new handle.
///
/// # Safety
///
/// `model` and `error` are NULL or writable; `read` is sound to call.
unsafe fn model_new(
    model: *mut *mut simak_model,
    flags: u32,
    error: *mut simak_error,
    read: impl FnOnce() -> Result<Model, Failure>,
) -> u32 {
    // SAFETY: `model` is null or writable by this function's contract.
    unsafe { put(model, std::ptr::null_mut()) };
    let body = || {
        if model.is_null() {
            return Err(Failure::null("model"));
        }
        if flags & !SIMAK_PLAN_EXACT != 0 {
            return Err(Failure::invalid_enum(format!(
                "model flags 0x{flags:x} have bits other than SIMAK_PLAN_EXACT (0x1)"
            )));
        }
        let mut m = read()?;
        if flags & SIMAK_PLAN_EXACT != 0 {
            m = m.with_exact_paths();
        }
        let handle = ModelHandle {
            name: c_text(m.name()),
            inputs: m.inputs().iter().map(StageText::new).collect(),
            outputs: m.outputs().iter().map(StageText::new).collect(),
            model: m,
        };
        // SAFETY: `model` is not null (checked) and writable.
        unsafe { put(model, into_handle(simak_model(handle))) };
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// Reads the manifest file at `path` (a NUL-terminated file name, any bytes but NUL) into a
/// model: its plugins wired into chains, each chain admitted and prepared for the A65
/// (SPEC §14). `flags` is 0 or `SIMAK_PLAN_EXACT`: the Quant and QuantTess input stages on
/// the exact integer path (the same bytes in any FP environment, for a program built with
/// `-ffast-math`; without it their SIMD routes refuse such a program's calls with 0x408).
/// On success `*model` is a new handle (free it with `simak_model_free`); on failure it is
/// NULL.
///
/// Returns 0; 0x603 for a NULL `model` or `path`, 0x601 for other flags; 0x700 when the
/// file cannot be read or holds more than 16 MiB (at most that much is read, whatever the
/// file); 0x701 when its bytes are not UTF-8; then the codes of
/// `simak_model_from_mpk_json`.
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string; `model` NULL or writable; `error` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_from_mpk(
    path: *const c_char,
    flags: u32,
    model: *mut *mut simak_model,
    error: *mut simak_error,
) -> u32 {
    let read = || {
        if path.is_null() {
            return Err(Failure::null("path"));
        }
        // SAFETY: not null, and NUL-terminated by this function's contract.
        let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
        let path = Path::new(<OsStr as OsStrExt>::from_bytes(bytes));
        Ok(Model::from_mpk(path)?)
    };
    // SAFETY: this function's contract; `read` reads only `path`.
    unsafe { model_new(model, flags, error, read) }
}

/// Reads a manifest's JSON text (`text_bytes` bytes of UTF-8 at `text`, no terminating NUL
/// needed) into a model, as `simak_model_from_mpk` (`flags` too).
///
/// Returns 0; 0x603 for a NULL `model`, or a NULL `text` with `text_bytes` > 0; 0x601 for
/// other flags; else the code of docs/errors.md naming the plugin and the key: 0x701 text
/// that is not UTF-8 or not a JSON object, 0x70f a repeated key, 0x702 a missing key, 0x703
/// a bad value, 0x704 conflicting aliases, 0x705 an unsupported kernel, 0x706 an unknown
/// `preproc` key, 0x707 a per-tensor list of the wrong length, 0x708 unequal batch keys,
/// 0x709 a declared size that differs from the computed one, 0x70a a graph that is not a
/// set of chains, 0x70b a shape, 0x70c an `input_range`, or an op's admission code.
///
/// # Safety
///
/// `text` is NULL or readable for `text_bytes` bytes; `model` NULL or writable; `error`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_from_mpk_json(
    text: *const c_char,
    text_bytes: usize,
    flags: u32,
    model: *mut *mut simak_model,
    error: *mut simak_error,
) -> u32 {
    let read = || {
        // SAFETY: this function's contract.
        let bytes = unsafe { bytes_in(text.cast(), text_bytes, "text") }?;
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Failure::from(ModelError {
                plugin: None,
                key: None,
                kind: ModelErrorKind::Json(format!("the manifest is not UTF-8 text: {e}")),
            })
        })?;
        Ok(Model::from_mpk_json(text)?)
    };
    // SAFETY: this function's contract; `read` reads only `text`.
    unsafe { model_new(model, flags, error, read) }
}

/// `len` bytes at `ptr` (empty for `len` 0, whatever `ptr`), or [`Failure::null`].
///
/// # Safety
///
/// `ptr` is null or readable for `len` bytes, not written during `'a`.
unsafe fn bytes_in<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: not null and readable for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Shares `model`: one more reference to the same immutable model. NULL for NULL.
///
/// # Safety
///
/// `model` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_clone(model: *const simak_model) -> *mut simak_model {
    // SAFETY: `model` is null or live by this function's contract.
    unsafe { clone_handle(model) }
}

/// Releases one reference to `model`; the model (and every string its queries returned)
/// is freed with its last handle. Nothing for NULL.
///
/// # Safety
///
/// `model` is NULL or a live handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_free(model: *mut simak_model) {
    // SAFETY: `model` is null or live by this function's contract.
    unsafe { free_handle(model) }
}

/// The model behind a handle.
///
/// # Safety
///
/// `model` is NULL or a live handle.
unsafe fn handle<'a>(model: *const simak_model) -> Result<&'a ModelHandle, Failure> {
    // SAFETY: the caller's contract.
    unsafe { borrow(model, "model") }.map(|m| &m.0)
}

/// The manifest's `name` (empty when it has none), owned by the model; NULL for NULL.
///
/// # Safety
///
/// `model` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_name(model: *const simak_model) -> *const c_char {
    // SAFETY: this function's contract.
    unsafe { handle(model) }.map_or(std::ptr::null(), |m| m.name.as_ptr())
}

/// Frames per call (SPEC §14's batch keys; 1 when the manifest gives none); 0 for NULL.
///
/// # Safety
///
/// `model` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_batch(model: *const simak_model) -> u64 {
    // SAFETY: this function's contract.
    unsafe { handle(model) }.map_or(0, |m| m.model.batch())
}

/// Bytes of all IFMs, back to back in the MLA's input order; 0 for NULL.
///
/// # Safety
///
/// `model` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_ifm_size(model: *const simak_model) -> u64 {
    // SAFETY: this function's contract.
    unsafe { handle(model) }.map_or(0, |m| m.model.ifm_size())
}

/// Bytes of the OFM buffer (every head); 0 for NULL.
///
/// # Safety
///
/// `model` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_ofm_size(model: *const simak_model) -> u64 {
    // SAFETY: this function's contract.
    unsafe { handle(model) }.map_or(0, |m| m.model.ofm_size())
}

/// The number of input stages; 0 for NULL.
///
/// # Safety
///
/// `model` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_input_count(model: *const simak_model) -> usize {
    // SAFETY: this function's contract.
    unsafe { handle(model) }.map_or(0, |m| m.inputs.len())
}

/// The number of output stages (heads); 0 for NULL.
///
/// # Safety
///
/// `model` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_output_count(model: *const simak_model) -> usize {
    // SAFETY: this function's contract.
    unsafe { handle(model) }.map_or(0, |m| m.outputs.len())
}

/// The stage at `index` of `side` into `*stage`.
///
/// # Safety
///
/// As `simak_model_input`.
unsafe fn stage_of(
    model: *const simak_model,
    index: usize,
    stage: *mut simak_model_stage,
    error: *mut simak_error,
    input: bool,
) -> u32 {
    let body = || {
        // SAFETY: the caller's contract.
        let m = unsafe { handle(model) }?;
        if stage.is_null() {
            return Err(Failure::null("stage"));
        }
        let (infos, texts) = if input {
            (m.model.inputs(), &m.inputs)
        } else {
            (m.model.outputs(), &m.outputs)
        };
        let (Some(info), Some(text)) = (infos.get(index), texts.get(index)) else {
            return Err(ModelError {
                plugin: None,
                key: None,
                kind: ModelErrorKind::Index {
                    side: if input { "input" } else { "output" },
                    index,
                    count: infos.len(),
                },
            }
            .into());
        };
        // SAFETY: `stage` is not null (checked) and writable by the caller's contract.
        unsafe { put(stage, text.stage(info)) };
        Ok(())
    };
    // SAFETY: `error` is null or writable by the caller's contract.
    unsafe { guard(error, body) }
}

/// Describes input stage `index` (in the model's `input_nodes` order) in `*stage`.
///
/// Returns 0, 0x70e for an index past `simak_model_input_count`, 0x603 for a NULL `model`
/// or `stage`. Nothing is written on failure.
///
/// # Safety
///
/// `model` is NULL or a live handle; `stage` NULL or writable; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_input(
    model: *const simak_model,
    index: usize,
    stage: *mut simak_model_stage,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract.
    unsafe { stage_of(model, index, stage, error, true) }
}

/// Describes output stage `index` (in the model's `output_nodes` order) in `*stage`.
///
/// Returns as `simak_model_input`, against `simak_model_output_count`.
///
/// # Safety
///
/// As `simak_model_input`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_output(
    model: *const simak_model,
    index: usize,
    stage: *mut simak_model_stage,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract.
    unsafe { stage_of(model, index, stage, error, false) }
}

/// A caller's buffer: its address and length in bytes, the port it is and its name for
/// messages ("the frame", "output 2", …).
struct Region {
    ptr: usize,
    len: usize,
    port: Port,
    name: String,
}

/// The code of an execute error of SPEC §6.
fn code_of(e: ExecuteError) -> u32 {
    simak::Error::from(e).code()
}

/// The checks of SPEC §6 that need addresses only, before any slice is formed: a null
/// buffer with bytes (0x409 the input, 0x40a an output), a range that wraps the address
/// space or exceeds `isize::MAX` (0x405, 0x406), two ranges that overlap (0x407; the
/// outputs among themselves too). Empty buffers are never touched. Messages name the
/// buffers.
fn check_regions(regions: &[Region]) -> Result<(), Failure> {
    for r in regions.iter().filter(|r| r.len > 0) {
        if r.ptr == 0 {
            return Err(Failure::new(
                code_of(ExecuteError::NullPointer { port: r.port }),
                format!("{} is NULL, with {} bytes", r.name, r.len),
            ));
        }
        if isize::try_from(r.len).is_err() || r.ptr.checked_add(r.len).is_none() {
            return Err(Failure::new(
                code_of(ExecuteError::AddressOverflow { port: r.port }),
                format!(
                    "{} at 0x{:x} with {} bytes passes the end of the address space",
                    r.name, r.ptr, r.len
                ),
            ));
        }
    }
    let nonempty: Vec<&Region> = regions.iter().filter(|r| r.len > 0).collect();
    for (k, a) in nonempty.iter().enumerate() {
        for b in &nonempty[k + 1..] {
            if a.ptr < b.ptr + b.len && b.ptr < a.ptr + a.len {
                return Err(Failure::new(
                    code_of(ExecuteError::Overlap),
                    format!("{} and {} overlap", a.name, b.name),
                ));
            }
        }
    }
    Ok(())
}

/// Runs input stage `input` on the A65: `frame` (the frame or float tensor, exactly
/// `simak_model_stage::input_bytes`, row-major in the stage's `shape`) → `ifm` (exactly the
/// stage's `size` bytes, aligned to 16 for a tiled IFM), on up to `threads` threads (0
/// counts as 1).
///
/// Checked before anything is read or written: a NULL `model` (0x603), a NULL `frame`
/// (0x409) or `ifm` (0x40a) with bytes, address overflow (0x405, 0x406), overlapping
/// buffers (0x407), an index past the inputs (0x70e), a byte length other than the
/// stage's (0x70d), then the op's own checks: the IFM's alignment (0x404: 16 bytes for a
/// tiled IFM, that is a QuantTess or CastTess stage or a Preproc one whose `to` parameter
/// is tiled; the frame may be at any address), and for a Quant or QuantTess stage of a
/// model made without `SIMAK_PLAN_EXACT`, the calling thread's FP environment (0x408: a
/// program running with flush-to-zero).
///
/// # Safety
///
/// `model` is NULL or a live handle. When every check passes, `frame` must be readable for
/// `frame_bytes` bytes and `ifm` readable and writable for `ifm_bytes` bytes, and no other
/// thread may write the frame or access the IFM until the call returns. `error` is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_preprocess(
    model: *const simak_model,
    input: usize,
    frame: *const c_void,
    frame_bytes: usize,
    ifm: *mut c_void,
    ifm_bytes: usize,
    threads: u32,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        // SAFETY: this function's contract.
        let m = unsafe { handle(model) }?;
        check_regions(&[
            Region {
                ptr: frame as usize,
                len: frame_bytes,
                port: Port::Input,
                name: "the frame".into(),
            },
            Region {
                ptr: ifm as usize,
                len: ifm_bytes,
                port: Port::Output,
                name: "the IFM".into(),
            },
        ])?;
        // SAFETY: checked not null when nonempty, not wrapping; readable by this
        // function's contract.
        let frame = unsafe { bytes_in(frame.cast(), frame_bytes, "frame") }?;
        // SAFETY: as above, writable, and disjoint from `frame` (overlap check).
        let ifm = unsafe { bytes_out(ifm.cast(), ifm_bytes) };
        m.model
            .prepare_input(input, frame, ifm, threads.max(1) as usize)?;
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// `len` writable bytes at `ptr` (empty for `len` 0, whatever `ptr`).
///
/// # Safety
///
/// `ptr` is not null when `len` > 0, and then readable and writable for `len` bytes, not
/// accessed otherwise during `'a`.
unsafe fn bytes_out<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

/// Runs every output stage on the A65: `ofm` (exactly `simak_model_ofm_size` bytes,
/// aligned to 16 when a head has tile alignment 16, else to the heads' element size) →
/// `outputs[i]` (`output_count` buffers, one per output stage in order; `output_bytes[i]`
/// exactly the stage's `output_bytes`, the dense row-major tensor, at any address), on up
/// to `threads` threads (0 counts as 1).
///
/// Checked before anything is read or written: a NULL `model` (0x603), an `output_count`
/// other than `simak_model_output_count` (0x710; nothing is read from the arrays), NULL
/// `outputs` or `output_bytes` (0x603), a NULL `ofm` (0x409) or output (0x40a) with
/// bytes, address overflow (0x405, 0x406), any two buffers overlapping (0x407), a byte
/// length other than the model's (0x70d), then each op's own checks (the OFM's alignment,
/// 0x403). The messages name the buffer (`output 2 ("p5")`).
///
/// # Safety
///
/// `model` is NULL or a live handle; `outputs` and `output_bytes` NULL or readable for
/// `output_count` values. When every check passes, `ofm` must be readable for `ofm_bytes`
/// bytes and each `outputs[i]` readable and writable for `output_bytes[i]` bytes, and no
/// other thread may write the OFM or access an output until the call returns. `error` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_model_postprocess(
    model: *const simak_model,
    ofm: *const c_void,
    ofm_bytes: usize,
    outputs: *const *mut c_void,
    output_bytes: *const usize,
    output_count: usize,
    threads: u32,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        // SAFETY: this function's contract.
        let m = unsafe { handle(model) }?;
        let mut regions = vec![Region {
            ptr: ofm as usize,
            len: ofm_bytes,
            port: Port::Input,
            name: "the OFM".into(),
        }];
        if output_count != m.outputs.len() {
            return Err(ModelError {
                plugin: None,
                key: None,
                kind: ModelErrorKind::BufferCount {
                    expected: m.outputs.len(),
                    found: output_count,
                },
            }
            .into());
        }
        if output_count > 0 {
            if outputs.is_null() {
                return Err(Failure::null("outputs"));
            }
            if output_bytes.is_null() {
                return Err(Failure::null("output_bytes"));
            }
        }
        for k in 0..output_count {
            // SAFETY: `outputs` is not null (checked) and readable for `output_count` values
            // by this function's contract; `k < output_count`.
            let ptr = unsafe { outputs.wrapping_add(k).read_unaligned() };
            // SAFETY: as above for `output_bytes`.
            let len = unsafe { output_bytes.wrapping_add(k).read_unaligned() };
            regions.push(Region {
                ptr: ptr as usize,
                len,
                port: Port::Output,
                name: format!("output {k} ({:?})", m.model.outputs()[k].name),
            });
        }
        check_regions(&regions)?;
        // SAFETY: checked not null when nonempty, not wrapping; readable by this
        // function's contract.
        let ofm = unsafe { bytes_in(ofm.cast(), ofm_bytes, "ofm") }?;
        let mut outs: Vec<&mut [u8]> = regions[1..]
            .iter()
            // SAFETY: each checked not null when nonempty and not wrapping; writable by
            // this function's contract, and disjoint from the OFM and from each other
            // (overlap check).
            .map(|r| unsafe { bytes_out(r.ptr as *mut u8, r.len) })
            .collect();
        m.model
            .read_outputs(ofm, &mut outs, threads.max(1) as usize)?;
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}
