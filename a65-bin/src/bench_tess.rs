//! `simak bench casttess` and `simak bench quanttess`: in-process throughput of A65
//! CastTess (SPEC §4, §5) and QuantTess (SPEC §3, §5) on an HWC camera frame, at the
//! auto-selected or a forced level (`simak::a65::Level`), beside two same-process
//! references: a plain read of the input and a memcpy of the output's bytes (the traffic
//! floor of producing that output from a buffer of the same size).
//!
//! Workload: the frame `[H, W, C]` (default 1080 × 1920 × 3) as one contiguous tensor of
//! the input dtype, axes D,H,W,C = -1,0,1,2, tile (1, 16, 64, C) clamped to the frame
//! unless `--tile` gives it, compact channels unless `--channels pad16`; values from the
//! peers' N(0, 100) generator ([`crate::bench::workload`]); QuantTess with the peers'
//! Quant parameters (multiplier 0.5, zero point 3, nearest-even). Timing, figures and
//! the JSON `figures` list are those of `simak bench quant` ([`crate::bench`]).

use simak::ops::casttess::TiledTensorSpec;
use std::hint::black_box;

use clap::Args;
use serde::Serialize;
use simak::a65::{self, Level, reference};
use simak::layout::MlaTiled;
use simak::ops::quant::Params;
use simak::ops::{casttess, quanttess};
use simak::{DType, TensorSpec};

use crate::bench::{
    Figure, allocate, encode, figure, figure_table, level_names, parse_level, threaded, time,
    warn_threads, workload,
};
use crate::engine::AlignedBuf;
use crate::error::CliError;
use crate::params::{ChannelsArg, DTypeArg, layout_rule, parse_tile};
use crate::report::{self, Context, Done};

/// The flags of `simak bench casttess` and `simak bench quanttess`.
#[derive(Debug, Args)]
pub struct BenchTessArgs {
    /// The frame's extents H,W,C (an HWC tensor, contiguous), each at least 1.
    #[arg(long, value_name = "H,W,C", default_value = "1080,1920,3", value_parser = parse_frame)]
    frame: Frame,
    /// Tile extents D,H,W,C [default: 1,16,64,C, H and W clamped to the frame].
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_tile)]
    tile: Option<[u32; 4]>,
    /// Channel mode.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ChannelsArg::Compact)]
    channels: ChannelsArg,
    /// Input dtype.
    #[arg(long, value_enum, default_value_t = DTypeArg::F32)]
    dtype: DTypeArg,
    /// Force a kernel level instead of the one auto-selection picks: scalar,
    /// x86_64-avx2, x86_64-avx512, x86_64-avx512vbmi, aarch64-neon (CastTess), or scalar,
    /// x86_64-sse4.1, x86_64-avx2, x86_64-avx512, aarch64-neon (QuantTess); the names of
    /// `simak::a65::Level`. A level this CPU lacks, or one the op has no kernel at, is
    /// refused (exit 2). The JSON `levels` list names the levels that run here.
    #[arg(long, value_name = "NAME", value_parser = parse_level)]
    level: Option<Level>,
    /// Threads, 1 to 256: above 1 the call is split once into pieces of whole tiles
    /// (`Prepared::split`; fewer when the frame has fewer tiles), each run on its own
    /// thread every repetition; the waiting threads spin, so use at most one per core.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: u64,
    /// Repetitions; the median is reported.
    #[arg(long, value_name = "R", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=1000))]
    reps: u64,
}

/// A frame's extents H, W, C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame([u64; 3]);

/// Parses `--frame H,W,C`: three extents, each at least 1.
///
/// # Errors
///
/// Not three comma-separated unsigned integers, or an extent of 0.
pub fn parse_frame(text: &str) -> Result<Frame, String> {
    let list = crate::params::parse_u64_list(text)?;
    let extents: [u64; 3] = <[u64; 3]>::try_from(list).map_err(|l| {
        format!(
            "expected 3 comma-separated extents (H,W,C), found {}",
            l.len()
        )
    })?;
    if let Some(role) = extents
        .iter()
        .zip(["H", "W", "C"])
        .find_map(|(&e, r)| (e == 0).then_some(r))
    {
        return Err(format!("the {role} extent is 0 (each must be at least 1)"));
    }
    Ok(Frame(extents))
}

/// Which tiled op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TessBench {
    /// CastTess into BF16.
    Cast,
    /// QuantTess into INT8 with the peers' Quant parameters.
    Quant,
}

impl TessBench {
    fn name(self) -> &'static str {
        match self {
            TessBench::Cast => "casttess",
            TessBench::Quant => "quanttess",
        }
    }
}

/// A prepared tiled op.
#[derive(Debug, Clone, Copy)]
enum Prepared {
    Cast(a65::casttess::Prepared),
    Quant(a65::quanttess::Prepared),
}

impl Prepared {
    fn implementation(&self) -> &'static str {
        match self {
            Prepared::Cast(p) => p.implementation(),
            Prepared::Quant(p) => p.implementation(),
        }
    }

    fn execute(&self, input: &[u8], output: &mut [u8]) -> Result<(), a65::ExecuteError> {
        match self {
            Prepared::Cast(p) => a65::casttess::execute(p, input, output),
            Prepared::Quant(p) => a65::quanttess::execute(p, input, output),
        }
    }
}

/// The two tiled plans of one workload.
#[derive(Debug, Clone, Copy)]
enum Plan {
    Cast(casttess::Plan),
    Quant(quanttess::Plan),
}

impl Plan {
    fn capacity(&self) -> u64 {
        match self {
            Plan::Cast(p) => p.output().capacity(),
            Plan::Quant(p) => p.output().capacity(),
        }
    }

    fn prepare(&self, level: Option<Level>) -> Result<Prepared, a65::LevelError> {
        Ok(match (self, level) {
            (Plan::Cast(p), None) => Prepared::Cast(a65::casttess::prepare(p)),
            (Plan::Quant(p), None) => Prepared::Quant(a65::quanttess::prepare(p)),
            (Plan::Cast(p), Some(l)) => Prepared::Cast(a65::casttess::prepare_at(p, l)?),
            (Plan::Quant(p), Some(l)) => Prepared::Quant(a65::quanttess::prepare_at(p, l)?),
        })
    }
}

/// What `simak bench casttess` / `simak bench quanttess` measured.
#[derive(Debug, Serialize)]
pub struct BenchTessSummary {
    op: &'static str,
    dtype: String,
    output_dtype: String,
    /// H, W, C.
    frame: [u64; 3],
    /// D, H, W, C.
    tile: [u32; 4],
    channels: &'static str,
    elements: usize,
    output_bytes: u64,
    threads: usize,
    reps: usize,
    /// The implementation that ran (`implementation()`).
    level: String,
    /// The levels `--level` accepts for this workload on this CPU.
    levels: Vec<String>,
    figures: Vec<Figure>,
}

/// Times the op on `threads` threads: one thread calls `execute`; more split the call
/// once (`Prepared::split`, pieces of whole tiles) and run the pieces on their threads each
/// repetition ([`crate::bench::threaded`], as `simak bench quant` does).
fn measure(
    prepared: &Prepared,
    threads: usize,
    reps: usize,
    input: &[u8],
    output: &mut [u8],
) -> Result<(std::time::Duration, std::time::Duration), CliError> {
    match prepared {
        _ if threads == 1 => Ok(time(reps, || {
            let _ = prepared.execute(black_box(input), black_box(output));
        })),
        Prepared::Cast(p) => measure_split(p, threads, reps, input, output),
        Prepared::Quant(p) => measure_split(p, threads, reps, input, output),
    }
}

/// [`measure`] for `threads` > 1, for either op: the call [`a65::split`] into at most
/// `threads` pieces, timed by [`threaded`].
fn measure_split<O: a65::HostOp>(
    prepared: &a65::Prepared<O>,
    threads: usize,
    reps: usize,
    input: &[u8],
    output: &mut [u8],
) -> Result<(std::time::Duration, std::time::Duration), CliError> {
    let pieces = prepared
        .split(threads, input, output)
        .map_err(|e| CliError::Internal(anyhow::anyhow!("{e}")))?;
    threaded(pieces.into_iter().map(|mut p| move || p.run()), reps)
}

/// Runs `simak bench casttess` or `simak bench quanttess`.
///
/// # Errors
///
/// Bad input (exit 2): a layout the library refuses (a tile extent
/// outside 1..=extent), a frame too large to address, a `--level` this CPU lacks or the
/// op has no kernel at, a buffer that cannot be allocated; all before anything is
/// printed. Internal when `execute` fails.
pub fn run(
    op: TessBench,
    args: BenchTessArgs,
    ctx: &Context,
) -> Result<Done<BenchTessSummary>, CliError> {
    let name = op.name();
    let bad = |what: String| CliError::Input(format!("bench {name}: {what}"));
    let threads = args.threads as usize;
    let reps = args.reps as usize;
    let dtype = DType::from(args.dtype);
    let [h, w, c] = args.frame.0;
    let tile = args.tile.unwrap_or([
        1,
        16u64.min(h) as u32,
        64u64.min(w) as u32,
        u32::try_from(c).unwrap_or(u32::MAX),
    ]);
    let layout = MlaTiled::new(
        [None, Some(0), Some(1), Some(2)],
        tile,
        args.channels.into(),
    );
    let input_spec = TensorSpec::contiguous([h, w, c], dtype);
    let plan = match op {
        TessBench::Cast => casttess::check_inference(&casttess::Request {
            input: input_spec,
            output: TiledTensorSpec::new(*input_spec.extents(), DType::BF16, layout),
        })
        .map(Plan::Cast),
        TessBench::Quant => quanttess::check_inference(&quanttess::Request {
            input: input_spec,
            output: TiledTensorSpec::new(*input_spec.extents(), DType::I8, layout),
            params: Params::new(0.5).with_zero_point(3),
        })
        .map(Plan::Quant),
    }
    .map_err(|e| bad(layout_rule(e)))?;
    let prepared = plan
        .prepare(args.level)
        .map_err(|e| bad(format!("--level: {e}")))?;
    let levels = level_names(
        Level::ALL
            .into_iter()
            .filter(|&l| plan.prepare(Some(l)).is_ok()),
    );

    let n = h
        .checked_mul(w)
        .and_then(|hw| hw.checked_mul(c))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| bad("the frame is too large".to_owned()))?;
    let in_len = (n as u64).saturating_mul(dtype.size() as u64);
    let capacity = plan.capacity();
    let cap = usize::try_from(capacity).map_err(|_| bad("the output is too large".to_owned()))?;
    // Allocated (fallibly) before any value is generated: an impossible size fails at once.
    let mut output = AlignedBuf::zeroed("the tiled output buffer", cap, 64)
        .map_err(|e| CliError::Input(format!("bench: {e}")))?;
    let mut source = allocate("the memcpy source buffer", capacity, true)?;
    let input = encode(dtype, workload(n), in_len)?;
    let internal = |e: a65::ExecuteError| CliError::Internal(anyhow::anyhow!("{e}"));
    prepared
        .execute(&input, output.as_mut_slice())
        .map_err(internal)?;
    source.copy_from_slice(output.as_slice());

    warn_threads(threads, ctx);
    let mut figures = Vec::new();
    let t = measure(&prepared, threads, reps, &input, output.as_mut_slice())?;
    figures.push(figure(
        &format!("{name} {}", prepared.implementation()),
        n,
        input.len(),
        t,
    ));
    // Reference: a plain read of the input (sum of its 8-byte words).
    let read = time(reps, || {
        black_box(reference::read(black_box(&input)));
    });
    figures.push(figure("reference: plain read", n, input.len(), read));
    // Reference: a memcpy of the output's bytes (what it reads is `capacity` bytes).
    let out = output.as_mut_slice();
    let copy = time(reps, || {
        black_box(&mut *out).copy_from_slice(black_box(&source));
    });
    figures.push(figure("reference: memcpy of the output", n, cap, copy));

    let summary = BenchTessSummary {
        op: name,
        dtype: dtype.name().to_owned(),
        output_dtype: match op {
            TessBench::Cast => DType::BF16.name().to_owned(),
            TessBench::Quant => DType::I8.name().to_owned(),
        },
        frame: args.frame.0,
        tile,
        channels: match args.channels {
            ChannelsArg::Compact => "compact",
            ChannelsArg::Pad16 => "pad16",
            ChannelsArg::Cblock16 => "cblock16",
        },
        elements: n,
        output_bytes: capacity,
        threads,
        reps,
        level: prepared.implementation().to_owned(),
        levels,
        figures,
    };
    Ok(Done::summary(summary))
}

impl report::Summary for BenchTessSummary {
    fn text(&self) -> String {
        let [h, w, c] = self.frame;
        let [td, th, tw, tc] = self.tile;
        let mut text = format!(
            "{} {} -> {}, frame {h}x{w}x{c} ({}), tile {td},{th},{tw},{tc} {}, output {} bytes, {}, median of {}\n",
            self.op,
            self.dtype,
            self.output_dtype,
            report::count(self.elements as u64, "element", "elements"),
            self.channels,
            self.output_bytes,
            report::count(self.threads as u64, "thread", "threads"),
            report::count(self.reps as u64, "repetition", "repetitions"),
        );
        text.push_str(&format!("levels on this CPU: {}\n", self.levels.join(", ")));
        text.push_str(&figure_table(&self.figures));
        text
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn frames_take_three_positive_extents() {
        assert_eq!(parse_frame("1080,1920,3"), Ok(Frame([1080, 1920, 3])));
        assert_eq!(parse_frame(" 4, 5 ,6"), Ok(Frame([4, 5, 6])));
        assert_eq!(
            parse_frame("1080,1920").unwrap_err(),
            "expected 3 comma-separated extents (H,W,C), found 2"
        );
        assert_eq!(
            parse_frame("4,0,3").unwrap_err(),
            "the W extent is 0 (each must be at least 1)"
        );
        assert!(parse_frame("4,x,3").unwrap_err().contains("\"x\""));
    }
}
