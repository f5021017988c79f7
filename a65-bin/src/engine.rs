//! Runs one tensor through the library: request → `check_inference` → A65 `prepare` →
//! `execute` (or the simulated EV74: `ev74::quant::run_sim`), plus the statistics the
//! summary reports.
//!
//! Files carry the rank at run time: requests go through the library's run-time-rank
//! constructors (`check_inference_dyn` over `DynSpec`s).

use std::borrow::Cow;
use std::time::Instant;

use simak::a65::ExecuteError;
use simak::a65::quant::{execute, prepare};
use simak::ev74;
use simak::ops::quant::{DynRequest, Params, Plan, check_inference_dyn};
use simak::{AdmissionError, DType, DynSpec};

/// Why a tensor could not be quantized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The library refused the request (bad input: strides, shape, parameters).
    #[error("{0}")]
    Admission(#[from] AdmissionError),
    /// The library refused the buffers this tool built (an internal failure).
    #[error("execute refused the buffers: {0}")]
    Execute(#[from] ExecuteError),
    /// The tensor does not fit the EV74 device (its 32-bit address domain or the simulated
    /// memory): bad input for `--backend ev74-sim`.
    #[error("does not fit the EV74 device: {0}")]
    Device(String),
    /// The simulated EV74 refused the command or faulted (an internal failure).
    #[error("the simulated EV74 failed: {0}")]
    Sim(String),
    /// The host could not allocate a buffer (out of memory): `bytes` is the size of the
    /// failed request. Reported like an input that cannot be read (exit 2).
    #[error("cannot allocate {what} ({bytes} bytes): out of memory")]
    OutOfMemory {
        /// What the buffer was for, e.g. `the output buffer`.
        what: &'static str,
        /// Bytes requested.
        bytes: u64,
    },
    /// The data is shorter than the tensor's accessed span.
    #[error("data holds {found} bytes but the tensor needs {required}")]
    Short {
        /// Bytes needed.
        required: u64,
        /// Bytes given.
        found: u64,
    },
}

/// One input tensor: logical shape, dtype, optional byte strides and its little-endian bytes.
#[derive(Debug, Clone, Copy)]
pub struct Tensor<'a> {
    /// Input dtype (`F32`, `BF16` or `F16`).
    pub dtype: DType,
    /// Logical extents in elements.
    pub shape: &'a [u64],
    /// Input byte strides per logical axis; `None` for row-major contiguous.
    pub strides: Option<&'a [u64]>,
    /// Output byte strides per logical axis; `None` for row-major contiguous.
    pub out_strides: Option<&'a [u64]>,
    /// The input storage from its first element, little-endian, aligned to the element size.
    pub data: &'a [u8],
}

/// Where a tensor is quantized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The A65 host cores (`a65::quant::execute`).
    A65,
    /// The EV74 firmware on the host simulator with this many workers (1 to 4).
    Ev74Sim {
        /// Worker ring size.
        workers: usize,
    },
}

impl Backend {
    /// `a65` or `ev74-sim`, as the summaries name it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::A65 => "a65",
            Backend::Ev74Sim { .. } => "ev74-sim",
        }
    }

    /// The worker ring size of `ev74-sim` (`None` for `a65`).
    pub fn workers(self) -> Option<usize> {
        match self {
            Backend::A65 => None,
            Backend::Ev74Sim { workers } => Some(workers),
        }
    }
}

/// The result of quantizing one tensor.
#[derive(Debug, Clone)]
pub struct Quantized {
    /// The INT8 output storage (the output port's span).
    pub output: Vec<u8>,
    /// Parameters the plan was checked with.
    pub params: Params,
    /// Number of elements.
    pub elements: u64,
    /// Elements whose `r + zero_point` fell outside [-128, 127] (counted in a separate pass,
    /// not timed).
    pub saturated: u64,
    /// Wall time of the `execute` call alone, in seconds.
    pub seconds: f64,
    /// The route: the A65 route name (diagnostic), or `ev74-sim (N workers)`.
    pub route: String,
    /// EV74 simulator: the simulated cost summed over the calls the tensor ran in, and the
    /// number of calls; `None` on the A65.
    pub sim_cost: Option<(ev74::Cost, u64)>,
    /// EV74 simulator: the Quant span kinds the calls took (`SpanKind::name`), each once in
    /// the order first taken; empty on the A65.
    pub sim_paths: Vec<&'static str>,
}

impl Quantized {
    /// Elements per second of the `execute` call; `None` when it took no measurable time.
    pub fn elements_per_second(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.elements as f64 / self.seconds)
    }
}

/// Checks a Quant request for `tensor` with `params` (any rank at run time).
///
/// # Errors
///
/// [`EngineError::Admission`] for anything the library refuses (rank above 6 included).
pub fn plan(tensor: &Tensor<'_>, params: Params) -> Result<Plan, EngineError> {
    Ok(check_inference_dyn(&DynRequest {
        input: tensor.input(),
        output: DynSpec {
            extents: tensor.shape,
            strides: tensor.out_strides,
            dtype: DType::I8,
        },
        params,
    })?)
}

impl<'a> Tensor<'a> {
    /// The input port as the library's spec of run-time rank.
    pub fn input(&self) -> DynSpec<'a> {
        DynSpec {
            extents: self.shape,
            strides: self.strides,
            dtype: self.dtype,
        }
    }
}

/// Quantizes `tensor` on `backend`: plans, prepares, times `execute` (A65) or the simulated
/// device run (EV74), then counts saturations. A large tensor runs in pieces along its
/// slowest output axis ([`pieces`]), each a request of its own over the same strides, and
/// `progress` is called with each piece's elements as it completes (every element is
/// independent, so the bytes are those of one call).
///
/// # Errors
///
/// As [`plan`]; [`EngineError::Short`] when the data does not cover the input span;
/// [`EngineError::Execute`] if the library refuses the buffers (internal);
/// [`EngineError::Device`] when the tensor does not fit the EV74; [`EngineError::Sim`] when
/// the simulated device fails; [`EngineError::OutOfMemory`] when the output cannot be
/// allocated.
pub fn quantize(
    tensor: &Tensor<'_>,
    params: Params,
    backend: Backend,
    progress: &dyn Fn(u64),
) -> Result<Quantized, EngineError> {
    let plan = plan(tensor, params)?;
    let span = plan.input().span();
    if (tensor.data.len() as u64) < span {
        return Err(EngineError::Short {
            required: span,
            found: tensor.data.len() as u64,
        });
    }
    let out_len = usize::try_from(plan.output().span()).map_err(|_| EngineError::Short {
        required: plan.output().span(),
        found: usize::MAX as u64,
    })?;
    // Zeroing writes every page now, so the timed calls measure the conversion alone.
    let mut output = try_zeroed("the output buffer", out_len)?;
    let in_strides = plan.input().strides()[..plan.input().rank()].to_vec();
    let out_strides = plan.output().strides()[..plan.output().rank()].to_vec();
    let mut seconds = 0.0;
    let mut route = String::new();
    let mut sim_cost: Option<(ev74::Cost, u64)> = None;
    let mut sim_paths: Vec<&'static str> = Vec::new();
    for piece in pieces(tensor.shape, &out_strides, 1) {
        let part = piece.of(tensor, &in_strides, &out_strides);
        let part_plan = self::plan(&part.tensor(), params)?;
        let out_at = piece.offset(&out_strides);
        let out = output.get_mut(out_at..).ok_or(EngineError::Short {
            required: out_at as u64,
            found: out_len as u64,
        })?;
        let start = Instant::now();
        match backend {
            Backend::A65 => {
                let prepared = prepare(&part_plan);
                execute(&prepared, part.data, out)?;
                if route.is_empty() {
                    route = prepared.implementation().to_owned();
                }
            }
            Backend::Ev74Sim { workers } => {
                // Only the accessed span goes to the device; per-byte write counts (a test
                // aid, two bytes per output byte) are not kept.
                let span = part_plan.input().span() as usize;
                let input = part.data.get(..span).unwrap_or(part.data);
                let options = ev74::quant::SimOptions {
                    track_writes: false,
                    ..ev74::quant::SimOptions::new(workers)
                };
                let out_span = (part_plan.output().span() as usize).min(out.len());
                let out = &mut out[..out_span];
                let run = ev74::quant::run_sim_with(&part_plan, input, out, &options)
                    .map_err(sim_error)?;
                let (cost, calls) = sim_cost.get_or_insert_with(Default::default);
                cost.add(&run.cost);
                *calls += u64::from(run.report.is_some());
                if let Some(kind) = run.report.map(|r| r.kind.name())
                    && !sim_paths.contains(&kind)
                {
                    sim_paths.push(kind);
                }
                route = ev74_route(workers);
            }
        }
        seconds += start.elapsed().as_secs_f64();
        progress(part_plan.elements());
    }
    if route.is_empty() {
        route = match backend {
            Backend::A65 => prepare(&plan).implementation().to_owned(),
            Backend::Ev74Sim { workers } => ev74_route(workers),
        };
    }
    let saturated = count_saturated(&plan, tensor);
    Ok(Quantized {
        output,
        params: plan.params(),
        elements: plan.elements(),
        saturated,
        seconds,
        route,
        sim_cost: match backend {
            Backend::A65 => None,
            Backend::Ev74Sim { .. } => Some(sim_cost.unwrap_or_default()),
        },
        sim_paths,
    })
}

/// Elements above which a tensor runs in pieces (so that progress advances within it).
pub const PIECE_MIN_ELEMENTS: u64 = 1 << 20;
/// Elements per piece to aim for.
const PIECE_ELEMENTS: u64 = 1 << 19;

/// Rows `start..start + len` of logical axis `axis`: one piece of a tensor that runs as a
/// request of its own (same strides, extents narrowed along `axis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The logical axis cut.
    pub axis: usize,
    /// First row.
    pub start: u64,
    /// Rows.
    pub len: u64,
}

impl Piece {
    /// The piece covering the whole tensor (axis 0, or nothing for rank 0).
    fn whole(shape: &[u64]) -> Piece {
        Piece {
            axis: 0,
            start: 0,
            len: shape.first().copied().unwrap_or(1),
        }
    }

    /// Byte offset of the piece's first element under `strides`.
    pub fn offset(&self, strides: &[u64]) -> usize {
        strides
            .get(self.axis)
            .map_or(0, |&s| (self.start * s) as usize)
    }

    /// The piece of `tensor` (whose byte strides are `in_strides`, its output's
    /// `out_strides`): narrowed extents, explicit strides, data from the piece's first
    /// element.
    pub fn of<'a>(&self, tensor: &Tensor<'a>, in_strides: &[u64], out_strides: &[u64]) -> Part<'a> {
        let mut shape = tensor.shape.to_vec();
        if let Some(extent) = shape.get_mut(self.axis) {
            *extent = self.len;
        }
        let at = self.offset(in_strides);
        Part {
            dtype: tensor.dtype,
            shape,
            strides: in_strides.to_vec(),
            out_strides: out_strides.to_vec(),
            data: tensor.data.get(at..).unwrap_or(&[]),
        }
    }
}

/// An owned piece of a tensor ([`Piece::of`]).
#[derive(Debug, Clone)]
pub struct Part<'a> {
    dtype: DType,
    shape: Vec<u64>,
    strides: Vec<u64>,
    out_strides: Vec<u64>,
    /// The input bytes from the piece's first element.
    pub data: &'a [u8],
}

impl Part<'_> {
    /// The piece as a [`Tensor`].
    pub fn tensor(&self) -> Tensor<'_> {
        Tensor {
            dtype: self.dtype,
            shape: &self.shape,
            strides: Some(&self.strides),
            out_strides: Some(&self.out_strides),
            data: self.data,
        }
    }
}

/// Splits a tensor of `shape` into pieces along the axis with the largest output stride
/// (the slowest in `out_strides`, so each piece's outputs are one range of whole rows), in
/// whole multiples of `granule` rows, of about `PIECE_ELEMENTS` each. A tensor below
/// [`PIECE_MIN_ELEMENTS`] elements, or whose slowest axis has one row, is one piece.
pub fn pieces(shape: &[u64], out_strides: &[u64], granule: u64) -> Vec<Piece> {
    let elements: u64 = shape.iter().product();
    let axis = (0..shape.len()).filter(|&a| shape[a] > 1).max_by_key(|&a| {
        (
            out_strides.get(a).copied().unwrap_or(0),
            std::cmp::Reverse(a),
        )
    });
    match axis {
        Some(axis) if elements >= PIECE_MIN_ELEMENTS => along(axis, shape[axis], granule, elements),
        _ => vec![Piece::whole(shape)],
    }
}

/// Pieces of `extent` rows of `axis` in multiples of `granule` rows, about
/// `PIECE_ELEMENTS` of the tensor's `elements` each.
pub fn along(axis: usize, extent: u64, granule: u64, elements: u64) -> Vec<Piece> {
    let granule = granule.max(1);
    let per_row = (elements / extent.max(1)).max(1);
    let rows = (PIECE_ELEMENTS / per_row).max(1).next_multiple_of(granule);
    let mut out = Vec::new();
    let mut start = 0;
    while start < extent {
        let len = rows.min(extent - start);
        out.push(Piece { axis, start, len });
        start += len;
    }
    out
}

/// The route column of an EV74-sim run.
pub fn ev74_route(workers: usize) -> String {
    format!(
        "ev74-sim ({workers} worker{})",
        if workers == 1 { "" } else { "s" }
    )
}

/// `len` zero bytes, allocated fallibly: [`EngineError::OutOfMemory`] naming `what` when
/// the host cannot provide them (instead of aborting the process).
///
/// # Errors
///
/// [`EngineError::OutOfMemory`].
pub fn try_zeroed(what: &'static str, len: usize) -> Result<Vec<u8>, EngineError> {
    ev74::sim::try_zeroed(len).map_err(|_| EngineError::OutOfMemory {
        what,
        bytes: len as u64,
    })
}

/// Sorts a simulated-run failure into out of host memory, bad input (the tensor does not
/// fit the device) or an internal failure.
pub fn sim_error(e: ev74::quant::SimError) -> EngineError {
    use ev74::quant::SimError;
    use ev74::sim::MemoryError;
    match e {
        SimError::Memory(MemoryError::HostAllocation { bytes }) => EngineError::OutOfMemory {
            what: "the simulated EV74 memory",
            bytes,
        },
        SimError::Represent(_) | SimError::Memory(_) => EngineError::Device(e.to_string()),
        SimError::Bind(_) | SimError::Firmware(_) => EngineError::Sim(e.to_string()),
    }
}

/// Counts elements whose pre-saturation value `wide + zero_point` is outside [-128, 127],
/// using the library's exact `wide` kernel. Visits every element once through the plan's
/// input view (any layout).
pub fn count_saturated(plan: &Plan, tensor: &Tensor<'_>) -> u64 {
    let wide = plan.kernels().wide;
    let m = plan.multiplier();
    let zp = plan.zero_point();
    let mut count = 0u64;
    for_each_element(plan, tensor.data, |bits| {
        let v = i64::from(wide(m, bits)) + i64::from(zp);
        if !(-128..=127).contains(&v) {
            count += 1;
        }
    });
    count
}

/// Calls `f` with the raw bits of every element of the plan's input view, in logical
/// row-major order (the library's strided walk, [`simak::View::offsets`]).
fn for_each_element(plan: &Plan, data: &[u8], mut f: impl FnMut(u32)) {
    let view = plan.input();
    let elem = view.dtype().size();
    for offset in view.offsets() {
        let at = offset as usize;
        if let Some(bytes) = data.get(at..at + elem) {
            f(load(bytes));
        }
    }
}

/// The largest finite magnitude of the tensor's elements as an `f32` (exact for FP32, BF16
/// and FP16), or `None` when no element is finite and nonzero: the library's
/// [`simak::calibrate::abs_max`] over the tensor's admitted input view.
pub fn abs_max(tensor: &Tensor<'_>) -> Result<Option<f32>, EngineError> {
    // Any valid multiplier gives a plan whose view visits every element.
    let plan = plan(tensor, Params::from_bits(0x3f80_0000))?;
    let span = plan.input().span();
    if (tensor.data.len() as u64) < span {
        return Err(EngineError::Short {
            required: span,
            found: tensor.data.len() as u64,
        });
    }
    simak::calibrate::abs_max(plan.input(), tensor.data).map_err(|e| match e.source_error() {
        simak::error::ErrorSource::Admission(a) => EngineError::Admission(*a),
        _ => EngineError::Short {
            required: span,
            found: tensor.data.len() as u64,
        },
    })
}

/// Exact `f32` value of one element's raw bits.
pub fn decode(dtype: DType, bits: u32) -> f32 {
    match dtype {
        DType::F32 => f32::from_bits(bits),
        DType::BF16 => f32::from_bits(bits << 16),
        DType::F16 => half::f16::from_bits(bits as u16).to_f32(),
        DType::I8 => f32::from(bits as u8 as i8),
        DType::I16 => f32::from(bits as u16 as i16),
        DType::I32 => bits as i32 as f32,
    }
}

#[inline(always)]
fn load(bytes: &[u8]) -> u32 {
    match *bytes {
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
        [a, b] => u32::from(u16::from_le_bytes([a, b])),
        [a] => u32::from(a),
        _ => 0,
    }
}

/// Bytes aligned to an element size: borrowed when already aligned, else copied once into a
/// buffer whose start is aligned (safe code only: the copy starts at `align_offset`).
#[derive(Debug)]
pub struct Aligned<'a> {
    bytes: Cow<'a, [u8]>,
    start: usize,
    len: usize,
}

impl<'a> Aligned<'a> {
    /// `data` as-is when its address is a multiple of `align`, else an aligned copy.
    ///
    /// # Errors
    ///
    /// [`EngineError::OutOfMemory`] when the copy cannot be allocated.
    pub fn new(data: &'a [u8], align: usize) -> Result<Aligned<'a>, EngineError> {
        if align <= 1 || (data.as_ptr() as usize).is_multiple_of(align) {
            return Ok(Aligned {
                bytes: Cow::Borrowed(data),
                start: 0,
                len: data.len(),
            });
        }
        Self::copy_with(data.len(), align, |dst| dst.copy_from_slice(data))
    }

    /// An aligned buffer of `len` bytes filled by `fill` (which receives exactly `len` bytes).
    ///
    /// # Errors
    ///
    /// [`EngineError::OutOfMemory`] when the buffer cannot be allocated.
    pub fn copy_with(
        len: usize,
        align: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<Aligned<'a>, EngineError> {
        let (mut buf, start) = aligned_zeroed("an aligned copy of the input", len, align)?;
        fill(&mut buf[start..start + len]);
        Ok(Aligned {
            bytes: Cow::Owned(buf),
            start,
            len,
        })
    }

    /// Whether this is a copy.
    #[cfg(test)]
    pub fn is_copy(&self) -> bool {
        matches!(self.bytes, Cow::Owned(_))
    }

    /// The aligned bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..self.start + self.len]
    }
}

/// `len + align - 1` zero bytes, allocated fallibly, and the offset of the first multiple
/// of `align` in them (safe code only: the caller slices from there).
fn aligned_zeroed(
    what: &'static str,
    len: usize,
    align: usize,
) -> Result<(Vec<u8>, usize), EngineError> {
    let align = align.max(1);
    let total = len.checked_add(align - 1).ok_or(EngineError::OutOfMemory {
        what,
        bytes: u64::MAX,
    })?;
    let buf = try_zeroed(what, total)?;
    let start = buf.as_ptr().align_offset(align);
    // `align_offset` on a byte pointer always succeeds in practice; fall back to a start of
    // 0 otherwise (execute would then report the misalignment).
    let start = if start < align { start } else { 0 };
    Ok((buf, start))
}

/// A zeroed, writable buffer whose start is aligned (safe code only: the slice starts at
/// the first aligned byte of a slightly longer allocation).
#[derive(Debug)]
pub struct AlignedBuf {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` zero bytes starting at a multiple of `align`; `what` names the buffer in the
    /// error.
    ///
    /// # Errors
    ///
    /// [`EngineError::OutOfMemory`] when the buffer cannot be allocated.
    pub fn zeroed(what: &'static str, len: usize, align: usize) -> Result<AlignedBuf, EngineError> {
        let (buf, start) = aligned_zeroed(what, len, align)?;
        Ok(AlignedBuf { buf, start, len })
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

#[cfg(test)]
mod test {
    use super::*;
    use simak::ops::quant::Rounding;

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// Issue 10 scope 8: one large tensor reports progress piece by piece while it runs,
    /// not once at the end, and the pieces give the bytes of one whole call.
    #[test]
    fn progress_advances_within_one_large_tensor() {
        let shape = [6u64, 512, 1024];
        let n = 6 * 512 * 1024;
        let values: Vec<f32> = (0..n).map(|k| (k % 251) as f32 - 125.0).collect();
        let data = f32_bytes(&values);
        let aligned = Aligned::new(&data, 4).unwrap();
        let calls = std::cell::RefCell::new(Vec::new());
        let q = quantize(
            &Tensor {
                dtype: DType::F32,
                shape: &shape,
                strides: None,
                out_strides: None,
                data: aligned.as_slice(),
            },
            Params::new(1.0),
            Backend::A65,
            &|k| calls.borrow_mut().push(k),
        )
        .unwrap();
        let calls = calls.into_inner();
        assert!(calls.len() >= 4, "progress called {} times", calls.len());
        assert!(calls.iter().all(|&k| k <= PIECE_ELEMENTS), "{calls:?}");
        assert_eq!(calls.iter().sum::<u64>(), n as u64);
        // Multiplier 1: every value is an integer in [-125, 125], so q is the value itself.
        let expected: Vec<u8> = values.iter().map(|&x| x as i8 as u8).collect();
        assert!(q.output == expected, "pieces differ from the whole call");
    }

    #[test]
    fn every_rank_dispatches() {
        for rank in 0..=6usize {
            let shape = vec![2u64; rank];
            let n = 1usize << rank;
            let data = f32_bytes(&vec![1.5f32; n]);
            let aligned = Aligned::new(&data, 4).unwrap();
            let q = quantize(
                &Tensor {
                    dtype: DType::F32,
                    shape: &shape,
                    strides: None,
                    out_strides: None,
                    data: aligned.as_slice(),
                },
                Params::new(1.0),
                Backend::A65,
                &|_| {},
            )
            .unwrap();
            assert_eq!(q.output, vec![2u8; n], "rank {rank}");
        }
        let shape = [1u64; 7];
        assert_eq!(
            plan(
                &Tensor {
                    dtype: DType::F32,
                    shape: &shape,
                    strides: None,
                    out_strides: None,
                    data: &[0; 4],
                },
                Params::new(1.0)
            )
            .unwrap_err(),
            EngineError::Admission(AdmissionError::Rank {
                rank: 7,
                min: 0,
                max: 6
            })
        );
    }

    #[test]
    fn saturation_uses_the_wide_value() {
        // 200 with zp -100 → 100, not saturated; 300 + 0 saturates; -inf saturates; NaN not.
        let data = f32_bytes(&[200.0, 300.0, f32::NEG_INFINITY, f32::NAN, -228.0, -229.0]);
        let aligned = Aligned::new(&data, 4).unwrap();
        let q = quantize(
            &Tensor {
                dtype: DType::F32,
                shape: &[6],
                strides: None,
                out_strides: None,
                data: aligned.as_slice(),
            },
            Params::new(1.0)
                .with_zero_point(-100)
                .with_rounding(Rounding::TowardZero),
            Backend::A65,
            &|_| {},
        )
        .unwrap();
        assert_eq!(q.output, [100u8, 127, 128, 156, 128, 128]);
        // 300-100=200 ✗, -inf ✗, -229-100 ✗, -228-100 = -328 ✗; 200-100 ✓, NaN ✓.
        assert_eq!(q.saturated, 4);
    }

    #[test]
    fn strided_views_visit_every_element_once() {
        // A 2 × 3 Fortran-order tensor: element (i, j) at (i + 2 j) · 4 bytes.
        let data = f32_bytes(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let aligned = Aligned::new(&data, 4).unwrap();
        let t = Tensor {
            dtype: DType::F32,
            shape: &[2, 3],
            strides: Some(&[4, 8]),
            out_strides: None,
            data: aligned.as_slice(),
        };
        let q = quantize(&t, Params::new(1.0), Backend::A65, &|_| {}).unwrap();
        assert_eq!(q.output, [1u8, 2, 3, 4, 5, 6]);
        assert_eq!(abs_max(&t).unwrap(), Some(6.0));
    }

    /// A tensor above [`PIECE_MIN_ELEMENTS`] runs in pieces along its slowest output axis:
    /// progress advances more than once, sums to the element count, and the bytes are
    /// those of one library call, for C- and Fortran-order outputs and both backends.
    #[test]
    fn large_tensors_run_in_pieces_with_the_bytes_of_one_call() {
        let (rows, cols) = (1031u64, 2053u64);
        let n = (rows * cols) as usize;
        assert!(n as u64 >= PIECE_MIN_ELEMENTS);
        let values: Vec<f32> = (0..n).map(|i| (i % 509) as f32 * 0.37 - 90.0).collect();
        let data = f32_bytes(&values);
        let aligned = Aligned::new(&data, 4).unwrap();
        let params = Params::new(0.75).with_zero_point(-3);
        for out_strides in [None, Some([1u64, rows])] {
            let t = Tensor {
                dtype: DType::F32,
                shape: &[rows, cols],
                strides: None,
                out_strides: out_strides.as_ref().map(|s| &s[..]),
                data: aligned.as_slice(),
            };
            let whole = plan(&t, params).unwrap();
            let mut reference = vec![0u8; whole.output().span() as usize];
            execute(&prepare(&whole), aligned.as_slice(), &mut reference).unwrap();
            for backend in [Backend::A65, Backend::Ev74Sim { workers: 3 }] {
                let steps = std::cell::RefCell::new(Vec::new());
                let q = quantize(&t, params, backend, &|k| steps.borrow_mut().push(k)).unwrap();
                let steps = steps.into_inner();
                assert!(steps.len() > 1, "{backend:?}: {} piece(s)", steps.len());
                assert_eq!(steps.iter().sum::<u64>(), n as u64);
                assert!(q.output == reference, "{backend:?} {out_strides:?}");
            }
        }
        let cut = pieces(&[rows, cols], &[1, rows], 1);
        assert!(
            cut.iter().all(|p| p.axis == 1),
            "Fortran order cuts the last axis"
        );
        assert_eq!(cut.iter().map(|p| p.len).sum::<u64>(), cols);
        assert_eq!(
            pieces(&[8, 8], &[8, 1], 1).len(),
            1,
            "small tensors are one piece"
        );
    }

    #[test]
    fn aligned_copies_only_when_needed() {
        let data = vec![0u8; 17];
        let whole = Aligned::new(&data, 1).unwrap();
        assert!(!whole.is_copy());
        let off = &data[1..];
        let a = Aligned::new(off, 4).unwrap();
        assert_eq!(a.as_slice().len(), 16);
        assert!((a.as_slice().as_ptr() as usize).is_multiple_of(4));
    }

    #[test]
    fn abs_max_skips_non_finite() {
        let data = f32_bytes(&[f32::INFINITY, -3.0, f32::NAN, 2.0, -0.0]);
        let aligned = Aligned::new(&data, 4).unwrap();
        let t = Tensor {
            dtype: DType::F32,
            shape: &[5],
            strides: None,
            out_strides: None,
            data: aligned.as_slice(),
        };
        assert_eq!(abs_max(&t).unwrap(), Some(3.0));
        let zeros = f32_bytes(&[0.0, -0.0, f32::NAN]);
        let aligned = Aligned::new(&zeros, 4).unwrap();
        let t = Tensor {
            shape: &[3],
            data: aligned.as_slice(),
            ..t
        };
        assert_eq!(abs_max(&t).unwrap(), None);
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for len in [0, 1, 16, 33] {
            let mut b = AlignedBuf::zeroed("a test buffer", len, 16).unwrap();
            assert_eq!(b.as_slice().len(), len);
            assert!((b.as_mut_slice().as_ptr() as usize).is_multiple_of(16));
        }
    }
}
