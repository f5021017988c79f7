//! Runs one tensor through the library: request → `check_inference` → A65 `prepare` →
//! `execute` (or the simulated EV74: `ev74::quant::run_sim`), plus the statistics the
//! summary reports.
//!
//! The rank is a const generic in the library (`TensorSpec<R>`, R ≤ 6); files carry it at
//! run time, so [`plan`] dispatches with a `match` over 0..=6 to one generic function.

use std::borrow::Cow;
use std::time::Instant;

use simak::a65::ExecuteError;
use simak::a65::quant::{execute, prepare};
use simak::ev74;
use simak::ops::quant::{Params, Plan, Request, check_inference};
use simak::{AdmissionError, DType, MAX_RANK, TensorSpec};

/// Why a tensor could not be quantized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The rank is above what the library admits.
    #[error("rank {rank} is above the supported maximum {MAX_RANK}")]
    Rank {
        /// Rank found.
        rank: usize,
    },
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
}

impl Quantized {
    /// Elements per second of the `execute` call; `None` when it took no measurable time.
    pub fn elements_per_second(&self) -> Option<f64> {
        (self.seconds > 0.0).then(|| self.elements as f64 / self.seconds)
    }
}

/// Checks a Quant request for `tensor` with `params`, choosing the rank at run time.
///
/// # Errors
///
/// [`EngineError::Rank`] above rank 6; [`EngineError::Admission`] for anything the library
/// refuses.
pub fn plan(tensor: &Tensor<'_>, params: Params) -> Result<Plan, EngineError> {
    match tensor.shape.len() {
        0 => plan_rank::<0>(tensor, params),
        1 => plan_rank::<1>(tensor, params),
        2 => plan_rank::<2>(tensor, params),
        3 => plan_rank::<3>(tensor, params),
        4 => plan_rank::<4>(tensor, params),
        5 => plan_rank::<5>(tensor, params),
        6 => plan_rank::<6>(tensor, params),
        rank => Err(EngineError::Rank { rank }),
    }
}

/// The library's input spec of `tensor` at rank `R` (contiguous or strided in bytes).
///
/// # Errors
///
/// [`EngineError::Rank`] when the shape or strides do not have `R` entries.
pub fn input_spec<const R: usize>(tensor: &Tensor<'_>) -> Result<TensorSpec<R>, EngineError> {
    let rank = tensor.shape.len();
    let array = |values: &[u64]| -> Result<[u64; R], EngineError> {
        <[u64; R]>::try_from(values).map_err(|_| EngineError::Rank { rank })
    };
    let extents = array(tensor.shape)?;
    Ok(match tensor.strides {
        Some(s) => TensorSpec::strided(extents, array(s)?, tensor.dtype),
        None => TensorSpec::contiguous(extents, tensor.dtype),
    })
}

fn plan_rank<const R: usize>(tensor: &Tensor<'_>, params: Params) -> Result<Plan, EngineError> {
    let rank = tensor.shape.len();
    let input = input_spec::<R>(tensor)?;
    let extents = *input.extents();
    let output = match tensor.out_strides {
        Some(s) => TensorSpec::strided(
            extents,
            <[u64; R]>::try_from(s).map_err(|_| EngineError::Rank { rank })?,
            DType::I8,
        ),
        None => TensorSpec::contiguous(extents, DType::I8),
    };
    Ok(check_inference(&Request {
        input,
        output,
        params,
    })?)
}

/// Quantizes `tensor` on `backend`: plans, prepares, times `execute` (A65) or the simulated
/// device run (EV74), then counts saturations.
///
/// # Errors
///
/// As [`plan`]; [`EngineError::Short`] when the data does not cover the input span;
/// [`EngineError::Execute`] if the library refuses the buffers (internal);
/// [`EngineError::Device`] when the tensor does not fit the EV74; [`EngineError::Sim`] when
/// the simulated device fails.
pub fn quantize(
    tensor: &Tensor<'_>,
    params: Params,
    backend: Backend,
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
    let (output, seconds, route) = match backend {
        Backend::A65 => {
            // Zeroing writes every page now, so the timed call measures the conversion alone.
            let mut output = try_zeroed("the output buffer", out_len)?;
            let prepared = prepare(&plan);
            let start = Instant::now();
            execute(&prepared, tensor.data, &mut output)?;
            (
                output,
                start.elapsed().as_secs_f64(),
                prepared.implementation().to_owned(),
            )
        }
        Backend::Ev74Sim { workers } => {
            // Only the accessed span goes to the device; the device's output region becomes
            // the output (no host copy next to it), and per-byte write counts (a test aid,
            // two bytes per output byte) are not kept.
            let input = tensor.data.get(..span as usize).unwrap_or(tensor.data);
            let options = ev74::quant::SimOptions {
                track_writes: false,
                ..ev74::quant::SimOptions::new(workers)
            };
            let start = Instant::now();
            let (_, output) =
                ev74::quant::run_sim_to_vec(&plan, input, out_len, &options).map_err(sim_error)?;
            (output, start.elapsed().as_secs_f64(), ev74_route(workers))
        }
    };
    let saturated = count_saturated(&plan, tensor);
    Ok(Quantized {
        output,
        params: plan.params(),
        elements: plan.elements(),
        saturated,
        seconds,
        route,
    })
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
/// row-major order.
fn for_each_element(plan: &Plan, data: &[u8], mut f: impl FnMut(u32)) {
    let view = plan.input();
    if view.is_empty() {
        return;
    }
    let elem = view.dtype().size();
    let rank = view.rank();
    let extents = view.extents();
    let strides = view.strides();
    let mut index = [0u64; MAX_RANK];
    let mut offset = 0u64;
    loop {
        let at = offset as usize;
        if let Some(bytes) = data.get(at..at + elem) {
            f(load(bytes));
        }
        // Advance the coordinate with carry, fastest axis last.
        let mut axis = rank;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            offset += strides[axis];
            if index[axis] < extents[axis] {
                break;
            }
            offset -= strides[axis] * index[axis];
            index[axis] = 0;
        }
    }
}

/// The largest finite magnitude of the tensor's elements as an `f32` (exact for FP32, BF16
/// and FP16), or `None` when no element is finite and nonzero.
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
    let dtype = tensor.dtype;
    let mut best: Option<f32> = None;
    for_each_element(&plan, tensor.data, |bits| {
        let x = decode(dtype, bits).abs();
        if x.is_finite() && x > 0.0 && best.is_none_or(|b| x > b) {
            best = Some(x);
        }
    });
    Ok(best)
}

/// Exact `f32` value of one element's raw bits.
pub fn decode(dtype: DType, bits: u32) -> f32 {
    match dtype {
        DType::F32 => f32::from_bits(bits),
        DType::BF16 => f32::from_bits(bits << 16),
        DType::F16 => half::f16::from_bits(bits as u16).to_f32(),
        DType::I8 => f32::from(bits as u8 as i8),
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
    pub fn new(data: &'a [u8], align: usize) -> Aligned<'a> {
        if align <= 1 || (data.as_ptr() as usize).is_multiple_of(align) {
            return Aligned {
                bytes: Cow::Borrowed(data),
                start: 0,
                len: data.len(),
            };
        }
        Self::copy_with(data.len(), align, |dst| dst.copy_from_slice(data))
    }

    /// An aligned buffer of `len` bytes filled by `fill` (which receives exactly `len` bytes).
    pub fn copy_with(len: usize, align: usize, fill: impl FnOnce(&mut [u8])) -> Aligned<'a> {
        let align = align.max(1);
        let mut buf = vec![0u8; len + align - 1];
        let start = buf.as_ptr().align_offset(align);
        // `align_offset` on a byte pointer always succeeds in practice; fall back to a
        // start of 0 otherwise (execute would then report the misalignment).
        let start = if start < align { start } else { 0 };
        fill(&mut buf[start..start + len]);
        Aligned {
            bytes: Cow::Owned(buf),
            start,
            len,
        }
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

/// A zeroed, writable buffer whose start is aligned (safe code only: the slice starts at
/// the first aligned byte of a slightly longer allocation).
#[derive(Debug)]
pub struct AlignedBuf {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` zero bytes starting at a multiple of `align`.
    pub fn zeroed(len: usize, align: usize) -> AlignedBuf {
        let align = align.max(1);
        let buf = vec![0u8; len + align - 1];
        let start = buf.as_ptr().align_offset(align);
        let start = if start < align { start } else { 0 };
        AlignedBuf { buf, start, len }
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

    #[test]
    fn every_rank_dispatches() {
        for rank in 0..=6usize {
            let shape = vec![2u64; rank];
            let n = 1usize << rank;
            let data = f32_bytes(&vec![1.5f32; n]);
            let aligned = Aligned::new(&data, 4);
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
            EngineError::Rank { rank: 7 }
        );
    }

    #[test]
    fn saturation_uses_the_wide_value() {
        // 200 with zp -100 → 100, not saturated; 300 + 0 saturates; -inf saturates; NaN not.
        let data = f32_bytes(&[200.0, 300.0, f32::NEG_INFINITY, f32::NAN, -228.0, -229.0]);
        let aligned = Aligned::new(&data, 4);
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
        let aligned = Aligned::new(&data, 4);
        let t = Tensor {
            dtype: DType::F32,
            shape: &[2, 3],
            strides: Some(&[4, 8]),
            out_strides: None,
            data: aligned.as_slice(),
        };
        let q = quantize(&t, Params::new(1.0), Backend::A65).unwrap();
        assert_eq!(q.output, [1u8, 2, 3, 4, 5, 6]);
        assert_eq!(abs_max(&t).unwrap(), Some(6.0));
    }

    #[test]
    fn aligned_copies_only_when_needed() {
        let data = vec![0u8; 17];
        let whole = Aligned::new(&data, 1);
        assert!(!whole.is_copy());
        let off = &data[1..];
        let a = Aligned::new(off, 4);
        assert_eq!(a.as_slice().len(), 16);
        assert!((a.as_slice().as_ptr() as usize).is_multiple_of(4));
    }

    #[test]
    fn abs_max_skips_non_finite() {
        let data = f32_bytes(&[f32::INFINITY, -3.0, f32::NAN, 2.0, -0.0]);
        let aligned = Aligned::new(&data, 4);
        let t = Tensor {
            dtype: DType::F32,
            shape: &[5],
            strides: None,
            out_strides: None,
            data: aligned.as_slice(),
        };
        assert_eq!(abs_max(&t).unwrap(), Some(3.0));
        let zeros = f32_bytes(&[0.0, -0.0, f32::NAN]);
        let aligned = Aligned::new(&zeros, 4);
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
            let mut b = AlignedBuf::zeroed(len, 16);
            assert_eq!(b.as_slice().len(), len);
            assert!((b.as_mut_slice().as_ptr() as usize).is_multiple_of(16));
        }
    }
}
