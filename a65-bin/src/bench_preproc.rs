//! `simak bench preproc`: in-process throughput of A65 Preproc (SPEC §13) on a camera
//! frame, one thread, beside a same-traffic kernel measured in the same run.
//!
//! Workloads: a frame of H × W pixels (default 1080 × 1920) of PCG32 bytes, as RGB8 and as
//! NV12 (packed, OpenCV's single-array layout), each to three outputs of `[H, W, 3]`:
//!
//! | output | what |
//! | --- | --- |
//! | `i8` | INT8 strided (contiguous), Quant with multiplier 40, zero point 3, nearest-even |
//! | `quanttess` | INT8 `MlaTiled`, tile (1, 16, 64, 3) (H and W clamped to a smaller frame), compact, the same Quant parameters |
//! | `casttess` | BF16 `MlaTiled`, tile (1, 16, 64, 3), compact |
//!
//! with ImageNet's normalization (divisor 255, mean 0.485, 0.456, 0.406, std 0.229,
//! 0.224, 0.225).
//!
//! The same-traffic kernel ([`same_traffic`]) reads every byte of the frame once and
//! writes every byte of the output once (each frame byte widened to `output / frame`
//! bytes), a plain loop into the op's own output buffer (the same working set): the memory
//! floor of producing that output from that frame. Per
//! workload both kernels are calibrated to about [`crate::bench_detess::SAMPLE`] per
//! sample, then sampled interleaved; the median per call is reported, and the ratio of the
//! reference's median to the op's (1.0: as fast as the traffic allows).

use std::hint::black_box;
use std::time::Duration;

use clap::{Args, ValueEnum};
use rand_core::RngCore;
use serde::Serialize;
use simak::a65::{self, Level};
use simak::layout::{Channels, TILE_ALIGN};
use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output, Request};
use simak::ops::quant::Params;

use crate::bench::parse_level;
use crate::bench_detess::{Kernel, interleaved};
use crate::demo::Pcg32;
use crate::engine::AlignedBuf;
use crate::error::CliError;
use crate::report::{self, Context, Done};

/// The flags of `simak bench preproc`.
#[derive(Debug, Args)]
pub struct BenchPreprocArgs {
    /// The frame's height and width in pixels, each even and at least 2.
    #[arg(long, value_name = "H,W", default_value = "1080,1920", value_parser = parse_frame)]
    frame: FrameSize,
    /// One input format instead of both.
    #[arg(long, value_enum, value_name = "FORMAT")]
    input: Option<BenchInput>,
    /// One output instead of all three.
    #[arg(long, value_enum, value_name = "OUTPUT")]
    output: Option<BenchOutput>,
    /// Samples per kernel (interleaved); the median is reported.
    #[arg(long, value_name = "R", default_value_t = 21, value_parser = clap::value_parser!(u64).range(1..=1000))]
    reps: u64,
    /// Prepare at this level instead of the best one: scalar, x86_64-sse4.1, x86_64-avx2,
    /// x86_64-avx512, aarch64-neon (the names of `simak::a65::Level`); a level this CPU
    /// lacks is refused (exit 2).
    #[arg(long, value_name = "NAME", value_parser = parse_level)]
    level: Option<Level>,
}

/// A frame's height and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSize(u64, u64);

/// Parses `--frame H,W`: two even extents, each at least 2 (NV12 needs even sizes).
///
/// # Errors
///
/// Not two comma-separated integers, or an odd or zero extent.
pub fn parse_frame(text: &str) -> Result<FrameSize, String> {
    let list = crate::params::parse_u64_list(text)?;
    let [h, w] = <[u64; 2]>::try_from(list).map_err(|l| {
        format!(
            "expected 2 comma-separated extents (H,W), found {}",
            l.len()
        )
    })?;
    if h == 0 || w == 0 || h % 2 != 0 || w % 2 != 0 {
        return Err(format!(
            "{h},{w}: each extent must be even and at least 2 (NV12)"
        ));
    }
    Ok(FrameSize(h, w))
}

/// The input formats measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchInput {
    /// Interleaved RGB8.
    Rgb,
    /// NV12 (packed).
    Nv12,
}

/// The outputs measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchOutput {
    /// INT8, strided (contiguous).
    I8,
    /// INT8 MlaTiled (1, 16, 64, 3), compact.
    Quanttess,
    /// BF16 MlaTiled (1, 16, 64, 3), compact.
    Casttess,
}

impl BenchInput {
    fn name(self) -> &'static str {
        match self {
            BenchInput::Rgb => "rgb",
            BenchInput::Nv12 => "nv12",
        }
    }
}

impl BenchOutput {
    fn name(self) -> &'static str {
        match self {
            BenchOutput::I8 => "i8",
            BenchOutput::Quanttess => "quanttess",
            BenchOutput::Casttess => "casttess",
        }
    }
}

/// One workload's figures.
#[derive(Debug, Serialize)]
pub struct PreprocRow {
    input: BenchInput,
    output: BenchOutput,
    /// Bytes of the frame read per call.
    frame_bytes: u64,
    /// Bytes of output written per call.
    output_bytes: u64,
    /// Output elements per call.
    elements: u64,
    /// The A65 route and its level.
    route: String,
    level: String,
    median_ns: f64,
    min_ns: f64,
    elements_per_s: f64,
    /// The same-traffic kernel: median and fastest sample per call.
    reference_median_ns: f64,
    reference_min_ns: f64,
    /// The reference's median over the op's: 1.0 runs at the traffic floor.
    ratio_to_reference: f64,
}

/// What `simak bench preproc` measured.
#[derive(Debug, Serialize)]
pub struct BenchPreprocSummary {
    threads: usize,
    reps: usize,
    /// H, W.
    frame: [u64; 2],
    rows: Vec<PreprocRow>,
}

/// The same-traffic kernel: reads each byte of `input` once and writes each byte of
/// `output` once: with `r = output.len() / input.len()` (at least 1) each input byte
/// becomes `r` output bytes; output bytes past `r · input.len()` are zeroed (tile padding).
pub fn same_traffic(input: &[u8], output: &mut [u8]) {
    let r = (output.len() / input.len().max(1)).max(1);
    let split = (input.len() * r).min(output.len());
    let (body, tail) = output.split_at_mut(split);
    match r {
        1 => {
            for (o, &i) in body.iter_mut().zip(input) {
                *o = i ^ 0x80;
            }
        }
        2 => {
            for (o, &i) in body.chunks_exact_mut(2).zip(input) {
                o.copy_from_slice(&(u16::from(i) << 8 | 0x80).to_le_bytes());
            }
        }
        4 => {
            for (o, &i) in body.chunks_exact_mut(4).zip(input) {
                o.copy_from_slice(&(u32::from(i) << 24).to_le_bytes());
            }
        }
        _ => {
            for (o, &i) in body.chunks_exact_mut(r).zip(input) {
                o.fill(i);
            }
        }
    }
    tail.fill(0);
}

const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];
const TILE: [u32; 4] = [1, 16, 64, 3];

/// The Preproc plan of one workload.
fn plan(
    input: BenchInput,
    output: BenchOutput,
    FrameSize(h, w): FrameSize,
) -> Result<preproc::Plan, simak::AdmissionError> {
    let format = match input {
        BenchInput::Rgb => Format::RGB8,
        BenchInput::Nv12 => Format::NV12,
    };
    let params = Params::new(40.0).with_zero_point(3);
    // The tile clamped to a small frame.
    let tile = [
        TILE[0],
        TILE[1].min(h.min(u64::from(u32::MAX)) as u32),
        TILE[2].min(w.min(u64::from(u32::MAX)) as u32),
        TILE[3],
    ];
    let layout = Output::default_layout(false, tile, Channels::Compact);
    preproc::check_inference(&Request {
        frame: Frame::packed(format, h, w),
        normalize: Normalize {
            divisor: 255.0,
            mean: &MEAN,
            std: &STD,
        },
        bgr: false,
        border: Border::default(),
        pad_value: &[0],
        output: match output {
            BenchOutput::I8 => Output::I8 {
                strides: None,
                params,
            },
            BenchOutput::Quanttess => Output::QuantTess { layout, params },
            BenchOutput::Casttess => Output::CastTess { layout },
        },
    })
}

/// Measures one workload.
fn measure(
    input: BenchInput,
    output: BenchOutput,
    size: FrameSize,
    reps: usize,
    level: Option<Level>,
) -> Result<PreprocRow, CliError> {
    let bad = |what: String| CliError::Input(format!("bench preproc: {what}"));
    let internal = |e: a65::ExecuteError| CliError::Internal(anyhow::anyhow!("{e}"));
    let plan = plan(input, output, size).map_err(|e| bad(e.to_string()))?;
    let prepared = match level {
        Some(l) => a65::preproc::prepare_at(&plan, l).map_err(|e| bad(e.to_string()))?,
        None => a65::preproc::prepare(&plan),
    };
    let in_len = plan.input_span() as usize;
    let out_len = plan.output_span() as usize;
    let mut frame = AlignedBuf::zeroed("the frame", in_len, 64).map_err(|e| bad(e.to_string()))?;
    Pcg32::new(0x5ee0_2026_1203, 26).fill_bytes(frame.as_mut_slice());
    let frame = frame.as_slice();
    let align = TILE_ALIGN as usize;
    let mut out =
        AlignedBuf::zeroed("the output", out_len, align.max(64)).map_err(|e| bad(e.to_string()))?;
    // One checked call before timing (the timed calls ignore the result).
    a65::preproc::execute(&prepared, frame, out.as_mut_slice()).map_err(internal)?;
    let prepared = &prepared;
    // Both kernels write the same output buffer (the same working set).
    let out = std::cell::RefCell::new(out);
    let out = &out;
    let mut kernels: Vec<Kernel<'_>> = vec![
        Box::new(move || {
            let mut out = out.borrow_mut();
            let _ =
                a65::preproc::execute(prepared, black_box(frame), black_box(out.as_mut_slice()));
        }),
        Box::new(move || {
            same_traffic(black_box(frame), black_box(out.borrow_mut().as_mut_slice()))
        }),
    ];
    let m = interleaved(&mut kernels, reps);
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    let elements = plan.elements();
    Ok(PreprocRow {
        input,
        output,
        frame_bytes: in_len as u64,
        output_bytes: out_len as u64,
        elements,
        route: prepared.implementation().to_owned(),
        level: prepared.level().name().to_owned(),
        median_ns: ns(m[0].0),
        min_ns: ns(m[0].1),
        elements_per_s: elements as f64 / m[0].0.as_secs_f64(),
        reference_median_ns: ns(m[1].0),
        reference_min_ns: ns(m[1].1),
        ratio_to_reference: m[1].0.as_secs_f64() / m[0].0.as_secs_f64(),
    })
}

/// Runs `simak bench preproc`.
///
/// # Errors
///
/// Bad input (exit 2) when a buffer cannot be allocated or the frame is refused; internal
/// when `execute` fails.
pub fn run(args: BenchPreprocArgs, _ctx: &Context) -> Result<Done<BenchPreprocSummary>, CliError> {
    let reps = args.reps as usize;
    let inputs = match args.input {
        Some(i) => vec![i],
        None => vec![BenchInput::Rgb, BenchInput::Nv12],
    };
    let outputs = match args.output {
        Some(o) => vec![o],
        None => vec![
            BenchOutput::I8,
            BenchOutput::Quanttess,
            BenchOutput::Casttess,
        ],
    };
    let mut rows = Vec::new();
    for &i in &inputs {
        for &o in &outputs {
            rows.push(measure(i, o, args.frame, reps, args.level)?);
        }
    }
    Ok(Done::summary(BenchPreprocSummary {
        threads: 1,
        reps,
        frame: [args.frame.0, args.frame.1],
        rows,
    }))
}

impl report::Summary for BenchPreprocSummary {
    fn text(&self) -> String {
        use std::fmt::Write as _;
        let mut text = format!(
            "preproc {}x{} frame, 1 thread, median of {} interleaved samples; ref = same-traffic kernel (read the frame, write the output)\n",
            self.frame[0], self.frame[1], self.reps
        );
        let _ = writeln!(
            text,
            "{:<6} {:<10} {:>10} {:>10} {:>11} {:>11} {:>9} {:>11} {:>6}  route (level)",
            "input",
            "output",
            "frame B",
            "output B",
            "op med ns",
            "op min ns",
            "Melem/s",
            "ref med ns",
            "x ref"
        );
        for r in &self.rows {
            let _ = writeln!(
                text,
                "{:<6} {:<10} {:>10} {:>10} {:>11.0} {:>11.0} {:>9.1} {:>11.0} {:>6.2}  {} ({})",
                r.input.name(),
                r.output.name(),
                r.frame_bytes,
                r.output_bytes,
                r.median_ns,
                r.min_ns,
                r.elements_per_s / 1e6,
                r.reference_median_ns,
                r.ratio_to_reference,
                r.route,
                r.level
            );
        }
        text
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn same_traffic_reads_each_byte_and_writes_each_byte() {
        let input = [1u8, 2, 3];
        let mut out = [0xffu8; 7];
        same_traffic(&input, &mut out);
        assert_eq!(out, [0x80, 1, 0x80, 2, 0x80, 3, 0]);
        let mut out = [0u8; 3];
        same_traffic(&input, &mut out);
        assert_eq!(out, [0x81, 0x82, 0x83]);
    }

    #[test]
    fn frames_must_be_even() {
        assert!(parse_frame("4,6").is_ok());
        assert!(parse_frame("3,6").is_err());
        assert!(parse_frame("0,6").is_err());
        assert!(parse_frame("4").is_err());
    }
}
