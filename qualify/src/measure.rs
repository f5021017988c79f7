//! Timing one workload on one backend: setup (plan, buffers, input values) outside the
//! timing, a warm-up, then `reps` samples of wall time per call and the process CPU time
//! of all timed calls (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)` through `rustix`: every
//! thread of the process, the simulator's device thread included).
//!
//! - A65: one sample is `inner` back-to-back `execute` calls, `inner` chosen in the warm-up
//!   so that a sample lasts at least [`SAMPLE_MIN`]; the figure is the sample's time / inner.
//! - EV74 (`ev74-sim`): **Runtime latency**, the host wall time from `Executor::submit` to
//!   the confirmed completion (`Completion::wait`) on the simulated transport, per call, with
//!   the buffers written once beforehand. Address-phase Quant and CastTess cases place their
//!   ports at the phases inside retained allocations (`DeviceBuffer::region_at`).
//!   The firmware's entry-to-return time is reported separately, in the cost model's
//!   simulated cycles (`entry_to_return_simulated_cycles`).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use simak::a65;
use simak::ev74;
use simak::ev74::runtime::{DeviceBuffer, Executor, ExecutorOptions, SimConfig, SimTransport};
use simak::layout::Channels;
use simak::layout::MlaTiled;
use simak::layout::TileAlign;
use simak::ops::casttess::{self, TiledSpec};
use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output};
use simak::ops::quant::{self, Params};
use simak::ops::{self, dequant, detess, detesscast, detessdequant, quanttess};
use simak::{DType, DynSpec};
use simak_tests::bytes::Aligned;

use super::catalogue::{Op, Workload};
use super::values;

/// The shortest sample on the A65: calls are repeated until a sample lasts this long.
pub const SAMPLE_MIN: Duration = Duration::from_micros(500);
/// How long the warm-up runs (at least 2 calls).
const WARM_UP: Duration = Duration::from_millis(10);
/// How long one EV74 completion may take before the run fails.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The backend of a qualification run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The A65 host cores.
    A65,
    /// The simulated EV74 through the Runtime, with this many workers.
    Ev74Sim(usize),
}

impl Backend {
    /// `a65` or `ev74-sim`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::A65 => "a65",
            Backend::Ev74Sim(_) => "ev74-sim",
        }
    }
}

/// The figures of one ID on one backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdResult {
    /// The workload ID.
    pub id: String,
    /// `quant`, `casttess` or `quanttess`.
    pub op: String,
    /// `dense`, `strided`, `ordinary` or `address-phase`.
    pub kind: String,
    /// What one sample times: `a65-execute` or `ev74-runtime` (submit to confirmed
    /// completion).
    pub measure: String,
    /// The A65 route or kernel level (diagnostic), or `ev74-sim (N workers)`.
    pub route: String,
    /// Elements per call.
    pub elements: u64,
    /// Calls per sample.
    pub calls_per_sample: u64,
    /// Wall nanoseconds per call, one value per sample, in the order taken (for pairing).
    pub samples_ns: Vec<f64>,
    /// Median of `samples_ns`.
    pub median_ns: f64,
    /// 95th percentile (nearest rank) of `samples_ns`.
    pub p95_ns: f64,
    /// Largest of `samples_ns`.
    pub max_ns: f64,
    /// Process CPU nanoseconds per call over all timed calls (all threads).
    pub cpu_ns_per_call: f64,
    /// EV74 only: the firmware entry alone (dispatch, descriptor load and the slowest
    /// worker), in simulated cycles of the default cost model (`docs/cost-model.md`), from
    /// one simulated run of the workload outside the timing. Absent on the A65.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_to_return_simulated_cycles: Option<u64>,
}

/// The `q`-quantile (nearest rank, `0 < q ≤ 1`) of sorted values.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The median (mean of the two middle values for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Process CPU time in nanoseconds.
fn cpu_now() -> u128 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as u128 * 1_000_000_000 + t.tv_nsec as u128
}

/// [`time`]'s figures: samples (ns per call), calls per sample, CPU ns per call.
type Timing = (Vec<f64>, u64, f64);

/// Prepares `plan` for the A65 at the automatic level and times the generic
/// [`a65::execute`] on the given ports (every op the same way). Returns the route's name
/// and [`time`]'s figures.
fn time_a65<O: a65::HostOp>(
    plan: &O::Plan,
    reps: usize,
    input: &[u8],
    output: &mut [u8],
    fail: &dyn Fn(&dyn std::fmt::Display) -> String,
) -> Result<(String, Timing), String> {
    let prepared = a65::Prepared::<O>::new(plan);
    let t = time(reps, || {
        a65::execute(&prepared, black_box(&*input), black_box(&mut *output)).map_err(|e| fail(&e))
    })?;
    Ok((prepared.implementation().to_owned(), t))
}

/// Runtime latency of `plan` on the simulated EV74 (`device`): the ports at the workload's
/// address phases (0 but for the address-phase cases) inside retained allocations, the
/// packet bound once, then `reps` samples of submit-to-confirmed-completion.
fn time_ev74<P>(
    plan: &P,
    w: &Workload,
    input_bytes: &[u8],
    device: &Device,
    reps: usize,
    fail: &dyn Fn(&dyn std::fmt::Display) -> String,
) -> Result<Timing, String>
where
    P: ops::OpPlan,
    P::Op: ev74::NativeEntry,
{
    let dp = ev74::check_inference(plan).map_err(|e| fail(&e))?;
    let encoded = ev74::encode_relocatable(&dp);
    // The entry's output span: Quant's accessed span, CastTess's tiled capacity.
    let output_len = dp.output_span();
    let (i, o) = device.buffers_at(
        input_bytes,
        u64::from(w.input_phase),
        output_len,
        u64::from(w.output_phase),
    )?;
    let e = |e: ev74::runtime::RuntimeError| fail(&e);
    let input_region = i
        .region_at(u64::from(w.input_phase), input_bytes.len() as u64)
        .map_err(e)?;
    let output_region = o
        .region_at(u64::from(w.output_phase), output_len)
        .map_err(e)?;
    let bound = ev74::bind(&dp, &encoded, input_region, output_region).map_err(|e| fail(&e))?;
    time(reps, || {
        device
            .executor
            .submit(&bound, &i, &o)
            .and_then(|c| c.wait(TIMEOUT))
            .map(drop)
            .map_err(|e| fail(&e))
    })
}

/// One simulated run of `plan` at the workload's address phases with `workers` workers,
/// writes not tracked (for the cost model's cycles).
fn run_sim<P>(
    plan: &P,
    w: &Workload,
    input: &[u8],
    out: &mut [u8],
    workers: usize,
) -> Result<ev74::SimRun, ev74::SimError>
where
    P: ops::OpPlan,
    P::Op: ev74::FirmwareEntry,
{
    let options = ev74::SimOptions {
        input_phase: w.input_phase,
        output_phase: w.output_phase,
        track_writes: false,
        ..ev74::SimOptions::new(workers)
    };
    ev74::run_sim_with(plan, input, out, &options)
}

/// Times `call`: warm-up, then `reps` samples. Returns (samples ns per call, calls per
/// sample, CPU ns per call).
fn time(reps: usize, mut call: impl FnMut() -> Result<(), String>) -> Result<Timing, String> {
    let start = Instant::now();
    let mut calls = 0u32;
    while calls < 2 || start.elapsed() < WARM_UP {
        call()?;
        calls += 1;
    }
    let per_call = start.elapsed().as_nanos() / u128::from(calls);
    let inner = (SAMPLE_MIN.as_nanos() / per_call.max(1)).clamp(1, 1 << 20) as u64;
    let mut samples = Vec::with_capacity(reps);
    let cpu_start = cpu_now();
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..inner {
            call()?;
        }
        samples.push(t.elapsed().as_nanos() as f64 / inner as f64);
    }
    let cpu = (cpu_now() - cpu_start) as f64 / (reps as u64 * inner) as f64;
    Ok((samples, inner, cpu))
}

/// Writes each element of `bits` (row-major over `shape`) at its strided byte offset.
pub fn scatter(dtype: DType, shape: &[u64], strides: &[u64], bits: &[u32], buf: &mut [u8]) {
    let size = dtype.size();
    let mut k = 0;
    for_each_offset(shape, strides, |at| {
        buf[at..at + size].copy_from_slice(&bits[k].to_le_bytes()[..size]);
        k += 1;
    });
}

/// Calls `f` with the byte offset of every element, row-major over `shape` (plain index ×
/// stride sums; nothing from the library's walker).
pub fn for_each_offset(shape: &[u64], strides: &[u64], mut f: impl FnMut(usize)) {
    if shape.contains(&0) {
        return;
    }
    let mut index = vec![0u64; shape.len()];
    loop {
        f(index
            .iter()
            .zip(strides)
            .map(|(&i, &s)| (i * s) as usize)
            .sum());
        let mut k = shape.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            index[k] += 1;
            if index[k] < shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

/// The planned workload.
enum Planned {
    Quant(quant::Plan),
    CastTess(casttess::Plan),
    QuantTess(quanttess::Plan),
    Detess(detess::Plan),
    DetessCast(detesscast::Plan),
    DetessDequant(detessdequant::Plan),
    Dequant(dequant::Plan),
    Preproc(preproc::Plan),
}

impl Planned {
    fn input_span(&self) -> u64 {
        match self {
            Planned::Quant(p) => p.input().span(),
            Planned::CastTess(p) => p.input().span(),
            Planned::QuantTess(p) => p.input().span(),
            Planned::Detess(p) => p.input().capacity(),
            Planned::DetessCast(p) => p.input().capacity(),
            Planned::DetessDequant(p) => p.input().capacity(),
            Planned::Dequant(p) => p.input().span(),
            Planned::Preproc(p) => p.input_span(),
        }
    }

    fn output_len(&self) -> u64 {
        match self {
            Planned::Quant(p) => p.output().span(),
            Planned::CastTess(p) => p.output().capacity(),
            Planned::QuantTess(p) => p.output().capacity(),
            Planned::Detess(p) => p.output().span(),
            Planned::DetessCast(p) => p.output().span(),
            Planned::DetessDequant(p) => p.output().span(),
            Planned::Dequant(p) => p.output().span(),
            Planned::Preproc(p) => p.output_span(),
        }
    }
}

/// The workload's params, plan and input bytes (from the span's start).
fn plan(w: &Workload) -> Result<(Planned, Vec<u8>), String> {
    let dtype = w.input_dtype();
    let (m, zp) = w.profile.params();
    let params = Params::from_bits(m)
        .with_zero_point(zp)
        .with_rounding(w.rounding_mode());
    let input = DynSpec::strided(&w.shape, &w.input_strides, dtype);
    let refuse = |e: simak::AdmissionError| format!("{}: the library refused it: {e}", w.id);
    let out_dtype = w.output_dtype_value();
    let out_spec = DynSpec::strided(
        &w.shape,
        w.output_strides.as_deref().unwrap_or(&[]),
        out_dtype,
    );
    let tiled_input = || TiledSpec {
        extents: &w.shape,
        dtype,
        layout: MlaTiled::new(
            [None, Some(0), Some(1), Some(2)],
            w.tiled.map_or([1; 4], |t| t.tile),
            w.channel_mode(),
        )
        .with_tile_align(if w.tile_align == Some(1) {
            TileAlign::Bytes1
        } else {
            TileAlign::Bytes16
        }),
    };
    let dq = dequant::Params::from_bits(m).with_zero_point(zp);
    let planned = match w.op {
        Op::Detess => Planned::Detess(
            detess::check_inference_dyn(&detess::DynRequest {
                input: tiled_input(),
                output: out_spec,
            })
            .map_err(refuse)?,
        ),
        Op::DetessCast => Planned::DetessCast(
            detesscast::check_inference_dyn(&detess::DynRequest {
                input: tiled_input(),
                output: out_spec,
            })
            .map_err(refuse)?,
        ),
        Op::DetessDequant => Planned::DetessDequant(
            detessdequant::check_inference_dyn(&detessdequant::DynRequest {
                input: tiled_input(),
                output: out_spec,
                params: dq,
            })
            .map_err(refuse)?,
        ),
        Op::Dequant => Planned::Dequant(
            dequant::check_inference_dyn(&dequant::DynRequest {
                input,
                output: out_spec,
                params: dq,
            })
            .map_err(refuse)?,
        ),
        Op::Preproc => Planned::Preproc(preproc_plan(w, params).map_err(refuse)?),
        Op::Quant => {
            let out = w.output_strides.as_deref().unwrap_or(&[]);
            Planned::Quant(
                quant::check_inference_dyn(&quant::DynRequest {
                    input,
                    output: DynSpec::strided(&w.shape, out, DType::I8),
                    params,
                })
                .map_err(refuse)?,
            )
        }
        Op::CastTess | Op::QuantTess => {
            let tile = w.tiled.map_or([1; 4], |t| t.tile);
            let layout = MlaTiled::new([None, Some(0), Some(1), Some(2)], tile, w.channel_mode());
            if w.op == Op::CastTess {
                Planned::CastTess(
                    casttess::check_inference_dyn(&casttess::DynRequest {
                        input,
                        output: TiledSpec {
                            extents: &w.shape,
                            dtype: DType::BF16,
                            layout,
                        },
                    })
                    .map_err(refuse)?,
                )
            } else {
                Planned::QuantTess(
                    quanttess::check_inference_dyn(&quanttess::DynRequest {
                        input,
                        output: TiledSpec {
                            extents: &w.shape,
                            dtype: DType::I8,
                            layout,
                        },
                        params,
                    })
                    .map_err(refuse)?,
                )
            }
        }
    };
    if w.is_output_side() || w.op == Op::Preproc {
        // Raw bytes over the whole input (codes, BF16 patterns and tile padding alike;
        // frame bytes).
        let len = planned.input_span() as usize;
        let words = values::generate(w.profile, dtype, len.div_ceil(4), values::seed_of(&w.id));
        let mut bytes: Vec<u8> = words.iter().flat_map(|b| b.to_le_bytes()).collect();
        bytes.truncate(len);
        return Ok((planned, bytes));
    }
    let n = w.elements() as usize;
    let bits = values::generate(w.profile, dtype, n, values::seed_of(&w.id));
    let mut bytes = vec![0u8; planned.input_span() as usize];
    scatter(dtype, &w.shape, &w.input_strides, &bits, &mut bytes);
    Ok((planned, bytes))
}

/// ImageNet's per-channel mean and std (with divisor 255) of the Preproc workloads.
const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// The Preproc plan of workload `w`: its frame, ImageNet's normalization, no border, the
/// output `w.to` (INT8 outputs with `params`).
fn preproc_plan(w: &Workload, params: Params) -> Result<preproc::Plan, simak::AdmissionError> {
    let format = if w.frame_format == Some("nv12") {
        Format::NV12
    } else {
        Format::RGB8
    };
    let layout =
        Output::default_layout(false, w.tiled.map_or([1; 4], |t| t.tile), Channels::Compact);
    let output = match w.to {
        Some("i8") => Output::I8 {
            strides: None,
            params,
        },
        Some("quanttess") => Output::QuantTess { layout, params },
        Some("casttess") => Output::CastTess { layout },
        _ => Output::F32 { strides: None },
    };
    preproc::check_inference(&preproc::Request {
        frame: Frame::packed(format, w.shape[0], w.shape[1]),
        normalize: Normalize {
            divisor: 255.0,
            mean: &MEAN,
            std: &STD,
        },
        bgr: false,
        border: Border {
            top: 0,
            bottom: 0,
            left: 0,
            right: 0,
        },
        pad_value: &[0],
        output,
    })
}

/// The connected EV74 Runtime of an `ev74-sim` run (one simulated device for the run).
pub struct Device {
    executor: Executor,
    workers: usize,
}

impl Device {
    /// A simulated device with `workers` workers behind the Runtime, CastTess probed.
    ///
    /// # Errors
    ///
    /// A message when the Runtime cannot connect.
    pub fn connect(workers: usize) -> Result<Device, String> {
        let transport = Arc::new(SimTransport::new(SimConfig::new(workers)));
        let executor = Executor::connect_with(
            transport,
            ExecutorOptions {
                probe_casttess: true,
            },
        )
        .map_err(|e| format!("cannot connect to the simulated EV74: {e}"))?;
        Ok(Device { executor, workers })
    }

    /// An input buffer holding `input` at byte `input_phase` and an output buffer of
    /// `output_phase + out_len` bytes: ports at address phases inside retained allocations.
    fn buffers_at(
        &self,
        input: &[u8],
        input_phase: u64,
        out_len: u64,
        output_phase: u64,
    ) -> Result<(DeviceBuffer, DeviceBuffer), String> {
        let e = |e: ev74::runtime::RuntimeError| format!("EV74 device memory: {e}");
        let i = self
            .executor
            .allocate(input_phase + input.len() as u64)
            .map_err(e)?;
        i.write(input_phase, input).map_err(e)?;
        let o = self.executor.allocate(output_phase + out_len).map_err(e)?;
        Ok((i, o))
    }
}

/// Measures workload `w` on `backend` with `reps` samples.
///
/// # Errors
///
/// A message naming the ID when the library refuses the workload or a call fails.
pub fn measure(
    w: &Workload,
    backend: Backend,
    device: Option<&Device>,
    reps: usize,
) -> Result<IdResult, String> {
    let (planned, input_bytes) = plan(w)?;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", w.id);
    let mut cycles = None;
    let (measure, route, (samples, inner, cpu)) = match backend {
        Backend::A65 => {
            let phase_in = w.input_phase as usize;
            let phase_out = w.output_phase as usize;
            let mut input = Aligned::new(phase_in + input_bytes.len(), 0);
            input.as_mut_slice()[phase_in..].copy_from_slice(&input_bytes);
            let mut output = Aligned::new(phase_out + planned.output_len() as usize, 0);
            let (route, t) = {
                let input = &input.as_slice()[phase_in..];
                let output = &mut output.as_mut_slice()[phase_out..];
                match &planned {
                    Planned::Quant(p) => time_a65::<ops::Quant>(p, reps, input, output, &fail)?,
                    Planned::CastTess(p) => {
                        time_a65::<ops::CastTess>(p, reps, input, output, &fail)?
                    }
                    Planned::QuantTess(p) => {
                        time_a65::<ops::QuantTess>(p, reps, input, output, &fail)?
                    }
                    Planned::Detess(p) => time_a65::<ops::Detess>(p, reps, input, output, &fail)?,
                    Planned::DetessCast(p) => {
                        time_a65::<ops::DetessCast>(p, reps, input, output, &fail)?
                    }
                    Planned::DetessDequant(p) => {
                        time_a65::<ops::DetessDequant>(p, reps, input, output, &fail)?
                    }
                    Planned::Dequant(p) => time_a65::<ops::Dequant>(p, reps, input, output, &fail)?,
                    Planned::Preproc(p) => time_a65::<ops::Preproc>(p, reps, input, output, &fail)?,
                }
            };
            ("a65-execute", route, t)
        }
        Backend::Ev74Sim(workers) => {
            let device = device.ok_or_else(|| fail(&"no EV74 device connected"))?;
            let route = format!("ev74-sim ({workers} workers)");
            cycles = Some(simulated_cycles(&planned, w, &input_bytes, device.workers)?);
            let t = match &planned {
                Planned::Quant(p) => time_ev74(p, w, &input_bytes, device, reps, &fail)?,
                Planned::CastTess(p) => time_ev74(p, w, &input_bytes, device, reps, &fail)?,
                Planned::QuantTess(_) => {
                    return Err(fail(&"QuantTess has no EV74 entry (A65 only)"));
                }
                Planned::Detess(_)
                | Planned::DetessCast(_)
                | Planned::DetessDequant(_)
                | Planned::Dequant(_) => {
                    return Err(fail(
                        &"the output-side ops have no EV74 entry here (A65 only)",
                    ));
                }
                Planned::Preproc(_) => return Err(fail(&"Preproc has no EV74 entry (A65 only)")),
            };
            ("ev74-runtime", route, t)
        }
    };
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(IdResult {
        id: w.id.clone(),
        op: w.op.name().to_owned(),
        kind: w.kind.name().to_owned(),
        measure: measure.to_owned(),
        route,
        elements: w.elements(),
        calls_per_sample: inner,
        median_ns: median(&samples),
        p95_ns: quantile(&sorted, 0.95),
        max_ns: sorted.last().copied().unwrap_or(f64::NAN),
        samples_ns: samples,
        cpu_ns_per_call: cpu,
        entry_to_return_simulated_cycles: cycles,
    })
}

/// The cost model's simulated cycles of one run of `planned` (the workload's address
/// phases, `workers` workers), outside any timing.
fn simulated_cycles(
    planned: &Planned,
    w: &Workload,
    input: &[u8],
    workers: usize,
) -> Result<u64, String> {
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", w.id);
    let mut out = vec![0u8; planned.output_len() as usize];
    let run = match planned {
        Planned::Quant(p) => run_sim(p, w, input, &mut out, workers),
        Planned::CastTess(p) => run_sim(p, w, input, &mut out, workers),
        Planned::QuantTess(_) => return Err(fail(&"QuantTess has no EV74 entry (A65 only)")),
        Planned::Detess(_)
        | Planned::DetessCast(_)
        | Planned::DetessDequant(_)
        | Planned::Dequant(_) => {
            return Err(fail(
                &"the output-side ops have no EV74 entry here (A65 only)",
            ));
        }
        Planned::Preproc(_) => return Err(fail(&"Preproc has no EV74 entry (A65 only)")),
    };
    Ok(run.map_err(|e| fail(&e))?.cost.simulated_cycles)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.95), 19.0);
        assert_eq!(quantile(&v, 1.0), 20.0);
        assert_eq!(quantile(&v[..1], 0.95), 1.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn offsets_are_index_times_stride_sums() {
        let mut seen = Vec::new();
        for_each_offset(&[2, 3], &[10, 1], |o| seen.push(o));
        assert_eq!(seen, [0, 1, 2, 10, 11, 12]);
        let mut none = 0;
        for_each_offset(&[2, 0], &[1, 1], |_| none += 1);
        assert_eq!(none, 0);
    }
}
