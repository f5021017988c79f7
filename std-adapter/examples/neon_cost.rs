//! The workload driver of `cargo xtask neon-cost`: runs one A65 kernel, forced to one
//! route or level, once, so that an instruction count of the whole process under
//! `qemu-aarch64` (taken at two sizes and subtracted) gives the kernel's instructions per
//! element.
//!
//! ```text
//! neon_cost list                 # every workload this CPU runs: NAME ELEMENTS-PER-SIZE-STEP
//! neon_cost run NAME K           # NAME once on K size steps (K = 1 or 2)
//! ```
//!
//! The buffers and their contents are the same whatever `K` (sized and filled for the
//! largest `K`), so everything but the kernel's own work cancels in the difference of the
//! counts at `K = 2` and `K = 1`. Workloads (SPEC §10 routes and CastTess levels):
//!
//! - `quant/DTYPE/ROUTE`: Quant of `8192 · K` contiguous elements to INT8, multiplier 0.5
//!   (a power of two, so the FP16 routes take it), zero point 3, nearest-even;
//! - `casttess/DTYPE/LEVEL/PATH`: CastTess of a `16·K × 1920 × 3` HWC frame, tile
//!   (1, 16, 64, 3) Compact, `PATH` = `band` (the level as `prepare_at` gives it,
//!   with its band kernel) or `general` (the same level without its fused kernels,
//!   `Prepared::general_path`; a level without fused kernels, `scalar`, has only this);
//! - `preproc/nv12/OUTPUT/LEVEL`: Preproc of a `16·K × 1920` NV12 frame (ImageNet mean and
//!   std over 255) to `OUTPUT` = `casttess` (BF16, tile (1, 16, 64, 3) Compact) or
//!   `quanttess` (INT8, the same tiles, multiplier 40, zero point 3), elements counted as
//!   output values (3 per pixel).
//!
//! Inputs: values uniform in [-200, 200) (normal numbers; BF16 truncated from FP32, FP16
//! rounded by `half`), a 4096-element pattern repeated.
#![allow(missing_docs)]

use simak::a65::{self, Level};
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::TiledTensorSpec;
use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output};
use simak::ops::{casttess, quant};
use simak::{DType, TensorSpec};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;

/// Quant elements per size step.
const QUANT_STEP: usize = 8192;
/// CastTess frame width (pixels) and rows per size step (one band of tiles).
const FRAME_W: usize = 1920;
/// CastTess rows per size step: one tile row.
const BAND_ROWS: usize = 16;
/// The largest size step.
const MAX_K: usize = 2;

/// One forced kernel.
#[derive(Clone, Copy)]
enum Workload {
    Quant(DType, Level),
    CastTess(DType, Level, bool),
    /// NV12 Preproc to CastTess (`true`) or QuantTess (`false`).
    Preproc(bool, Level),
}

impl Workload {
    fn name(self) -> String {
        match self {
            Workload::Quant(d, r) => format!("quant/{d}/{}", r.name()),
            Workload::CastTess(d, l, general) => {
                let path = if general { "general" } else { "band" };
                format!("casttess/{d}/{}/{path}", l.name())
            }
            Workload::Preproc(cast, l) => {
                let out = if cast { "casttess" } else { "quanttess" };
                format!("preproc/nv12/{out}/{}", l.name())
            }
        }
    }

    fn dtype(self) -> DType {
        match self {
            Workload::Quant(d, _) | Workload::CastTess(d, _, _) => d,
            // The frame's bytes.
            Workload::Preproc(..) => DType::I8,
        }
    }

    /// Elements per size step.
    fn step(self) -> usize {
        match self {
            Workload::Quant(..) => QUANT_STEP,
            Workload::CastTess(..) | Workload::Preproc(..) => BAND_ROWS * FRAME_W * 3,
        }
    }
}

const DTYPES: [DType; 3] = [DType::F32, DType::BF16, DType::F16];

fn quant_plan(dtype: DType, n: usize) -> quant::Plan {
    quant::check_inference(&quant::Request {
        input: TensorSpec::contiguous([n as u64], dtype),
        output: TensorSpec::contiguous([n as u64], DType::I8),
        params: quant::Params::new(0.5).with_zero_point(3),
    })
    .expect("a valid Quant request")
}

fn tess_plan(dtype: DType, rows: usize) -> casttess::Plan {
    casttess::check_inference(&casttess::Request {
        input: TensorSpec::contiguous([rows as u64, FRAME_W as u64, 3], dtype),
        output: TiledTensorSpec::new(
            [rows as u64, FRAME_W as u64, 3],
            DType::BF16,
            MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 16, 64, 3],
                Channels::Compact,
            ),
        ),
    })
    .expect("a valid CastTess request")
}

/// The level forced, with its fused kernels (`general == false`: `None` when it has none)
/// or without them.
fn tess_prepared(
    dtype: DType,
    level: Level,
    general: bool,
    rows: usize,
) -> Option<a65::casttess::Prepared> {
    let p = a65::casttess::prepare_at(&tess_plan(dtype, rows), level).ok()?;
    match (general, p.has_fused_path()) {
        (false, fused) => fused.then_some(p),
        (true, _) => Some(p.general_path()),
    }
}

/// The Preproc plan of an NV12 frame of `rows × 1920` pixels.
fn preproc_plan(cast: bool, rows: usize) -> preproc::Plan {
    let layout = Output::default_layout(false, [1, 16, 64, 3], Channels::Compact);
    let output = if cast {
        Output::CastTess { layout }
    } else {
        Output::QuantTess {
            layout,
            params: quant::Params::new(40.0).with_zero_point(3),
        }
    };
    preproc::check_inference(&preproc::Request {
        frame: Frame::packed(Format::NV12, rows as u64, FRAME_W as u64),
        normalize: Normalize {
            divisor: 255.0,
            mean: &[0.485, 0.456, 0.406],
            std: &[0.229, 0.224, 0.225],
        },
        bgr: false,
        border: Border::default(),
        pad_value: &[0],
        output,
    })
    .expect("a valid Preproc request")
}

/// Every workload this CPU runs, in table order.
fn workloads() -> Vec<Workload> {
    let mut out = Vec::new();
    for dtype in DTYPES {
        let plan = quant_plan(dtype, QUANT_STEP);
        for route in Level::ALL.into_iter().rev() {
            if a65::quant::prepare_at(&plan, route).is_ok() {
                out.push(Workload::Quant(dtype, route));
            }
        }
    }
    for dtype in DTYPES {
        for level in Level::ALL.into_iter().rev() {
            for general in [false, true] {
                if tess_prepared(dtype, level, general, BAND_ROWS).is_some() {
                    out.push(Workload::CastTess(dtype, level, general));
                }
            }
        }
    }
    for cast in [true, false] {
        for level in Level::ALL.into_iter().rev() {
            if a65::preproc::prepare_at(&preproc_plan(cast, BAND_ROWS), level).is_ok() {
                out.push(Workload::Preproc(cast, level));
            }
        }
    }
    out
}

/// `n` elements of `dtype`: a fixed-seed 4096-element pattern, repeated.
fn input(dtype: DType, n: usize) -> Aligned {
    let mut rng = Rng::new(0x6e65_6f6e_636f_7374);
    let pattern: Vec<u8> = (0..4096)
        .flat_map(|_| {
            let x = (rng.next_u32() as f64 / 4_294_967_296.0 * 400.0 - 200.0) as f32;
            let bits = match dtype {
                DType::F32 => x.to_bits(),
                DType::BF16 => x.to_bits() >> 16,
                _ => u32::from(half::f16::from_f32(x).to_bits()),
            };
            bits.to_le_bytes().into_iter().take(dtype.size())
        })
        .collect();
    let mut buf = Aligned::new(n * dtype.size(), 0);
    for chunk in buf.as_mut_slice().chunks_mut(pattern.len()) {
        chunk.copy_from_slice(&pattern[..chunk.len()]);
    }
    buf
}

fn run(w: Workload, k: usize) -> Result<(), String> {
    let max = w.step() * MAX_K;
    let n = w.step() * k;
    let data = input(w.dtype(), max);
    match w {
        Workload::Quant(dtype, route) => {
            let mut out = Aligned::new(max, 0);
            let p = a65::quant::prepare_at(&quant_plan(dtype, n), route)
                .map_err(|_| "route unavailable")?;
            a65::quant::execute(&p, data.as_slice(), out.as_mut_slice())
                .map_err(|e| e.to_string())?;
            std::hint::black_box(out.as_slice());
        }
        Workload::CastTess(dtype, level, general) => {
            let capacity = tess_plan(dtype, BAND_ROWS * MAX_K).output().capacity() as usize;
            let mut out = Aligned::new(capacity, 0);
            let p =
                tess_prepared(dtype, level, general, BAND_ROWS * k).ok_or("level unavailable")?;
            a65::casttess::execute(&p, data.as_slice(), out.as_mut_slice())
                .map_err(|e| e.to_string())?;
            std::hint::black_box(out.as_slice());
        }
        Workload::Preproc(cast, level) => {
            let span = preproc_plan(cast, BAND_ROWS * MAX_K).output_span() as usize;
            let mut out = Aligned::new(span, 0);
            let plan = preproc_plan(cast, BAND_ROWS * k);
            let p = a65::preproc::prepare_at(&plan, level).map_err(|_| "level unavailable")?;
            let frame = &data.as_slice()[..plan.input_span() as usize];
            a65::preproc::execute(
                &p,
                frame,
                &mut out.as_mut_slice()[..plan.output_span() as usize],
            )
            .map_err(|e| e.to_string())?;
            std::hint::black_box(out.as_slice());
        }
    }
    println!("{} elements={n}", w.name());
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["list"] => {
            for w in workloads() {
                println!("{} {}", w.name(), w.step());
            }
            Ok(())
        }
        ["run", name, k] => match (
            workloads().into_iter().find(|w| w.name() == *name),
            k.parse::<usize>(),
        ) {
            (Some(w), Ok(k @ 1..=MAX_K)) => run(w, k),
            (None, _) => Err(format!("unknown workload `{name}` (see `list`)")),
            _ => Err(format!("K must be 1..={MAX_K}, not `{k}`")),
        },
        _ => Err("usage: neon_cost list | neon_cost run NAME K".to_owned()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("neon_cost: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
