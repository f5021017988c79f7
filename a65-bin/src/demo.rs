//! `simak demo`: the quant pipeline on embedded, generated tensors; needs no files.
//!
//! Two tensors come from a fixed-seed PCG32 generator using only exact or IEEE-rounded
//! binary32 arithmetic (no libm), so every platform generates the same bits:
//!
//! - an image-like `[224, 224, 3]` HWC tensor in [0, 1] (smooth gradients plus noise);
//! - a weight-like `[384, 384]` matrix, about N(0, 0.05) (Irwin–Hall sum of 12 uniforms),
//!   with a few outliers and special values (±∞, NaN, −0, a subnormal).
//!
//! Each is converted to FP32, BF16 (nearest-even from the FP32 bits) and FP16 (`half`,
//! nearest-even), then quantized with several parameter sets. The summary lists every job
//! and an FNV-1a 64 checksum over all outputs in job order.

use std::hash::Hasher;

use anyhow::anyhow;
use clap::Args;
use fnv::FnvHasher;
use rand_core::RngCore;
use serde::Serialize;
use simak::DType;
use simak::ops::quant::{Params, Rounding};

use crate::engine::{self, Aligned, Tensor};
use crate::error::CliError;
use crate::params::absmax_multiplier;
use crate::report::{self, Context, Done, Row, Total, table};

/// The default generator seed.
pub const DEFAULT_SEED: u64 = 0x5eed_5a3a_2024_0001;

/// Run the quant pipeline on embedded generated tensors (no files needed) and print a
/// checksum of all outputs.
#[derive(Debug, Args)]
#[command(
    long_about = "Run the quant pipeline on embedded generated tensors: an image-like \
    [224, 224, 3] HWC tensor in [0, 1] and a weight-like [384, 384] matrix (about N(0, \
    0.05), with outliers, infinities, a NaN and subnormals), each as FP32, BF16 and FP16, \
    quantized with fixed multipliers, absmax calibration and all four rounding modes. \
    Prints the jobs and an FNV-1a 64 checksum over all outputs (the same on every run \
    and platform for a given seed)."
)]
pub struct DemoArgs {
    /// Seed of the tensor generator, decimal or 0x hex [default: 0x5eed5a3a20240001].
    #[arg(long, value_name = "SEED", value_parser = parse_seed)]
    seed: Option<u64>,
}

/// Parses `--seed`: decimal or `0x` hex, 64 bits.
///
/// # Errors
///
/// The text is not a 64-bit number.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|e| format!("{text:?} is not a 64-bit seed: {e}"))
}

/// The demo's and the bench's generator: PCG32 (XSH RR 64/32) from `rand_pcg`, whose
/// `Pcg32::new(state, stream)` is the PCG reference's `pcg32_srandom(state, stream)`.
pub(crate) use rand_pcg::Pcg32;

/// Uniform in [0, 1): the top 24 bits of the next `u32` scaled by 2^-24 (exact).
pub(crate) fn unit(rng: &mut Pcg32) -> f32 {
    (rng.next_u32() >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// The image-like tensor, `[224, 224, 3]` HWC, values in [0, 1].
fn image(seed: u64) -> (Vec<u64>, Vec<f32>) {
    let (h, w, c) = (224usize, 224usize, 3usize);
    let mut rng = Pcg32::new(seed, 1);
    let mut data = Vec::with_capacity(h * w * c);
    for y in 0..h {
        for x in 0..w {
            for ch in 0..c {
                let gy = y as f32 / (h - 1) as f32;
                let gx = x as f32 / (w - 1) as f32;
                let base = match ch {
                    0 => gy,
                    1 => gx,
                    _ => 1.0 - 0.5 * (gx + gy),
                };
                let v = 0.75 * base + 0.25 * unit(&mut rng);
                data.push(v.clamp(0.0, 1.0));
            }
        }
    }
    (vec![h as u64, w as u64, c as u64], data)
}

/// The weight-like matrix, `[384, 384]`, about N(0, 0.05), with outliers and specials.
fn weights(seed: u64) -> (Vec<u64>, Vec<f32>) {
    let n = 384usize;
    let mut rng = Pcg32::new(seed, 2);
    let mut data: Vec<f32> = (0..n * n)
        .map(|_| {
            let s: f32 = (0..12).map(|_| unit(&mut rng)).sum();
            (s - 6.0) * 0.05
        })
        .collect();
    // Outliers: a sparse set of large values that saturate under fixed multipliers.
    for i in (0..data.len()).step_by(4099) {
        data[i] *= 24.0;
    }
    let specials = [
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -0.0,
        f32::from_bits(0x0000_0101),
        f32::MIN_POSITIVE,
    ];
    for (k, v) in specials.into_iter().enumerate() {
        data[1000 + 37 * k] = v;
    }
    (vec![n as u64, n as u64], data)
}

/// FP32 → BF16, round to nearest-even on the bits (NaN kept as a quiet NaN).
fn bf16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) as u16) | 0x0040;
    }
    (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// Little-endian storage of `values` in `dtype`.
fn encode(values: &[f32], dtype: DType) -> Vec<u8> {
    match dtype {
        DType::F32 => values.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::BF16 => values
            .iter()
            .flat_map(|&x| bf16_bits(x).to_le_bytes())
            .collect(),
        DType::F16 => values
            .iter()
            .flat_map(|&x| half::f16::from_f32(x).to_bits().to_le_bytes())
            .collect(),
        DType::I8 | DType::I16 | DType::I32 => Vec::new(),
    }
}

/// How a demo quantization picks its multiplier.
#[derive(Debug, Clone, Copy)]
enum Pick {
    Fixed(u32),
    Absmax,
}

/// A generated tensor as a demo quantization reads it: its logical shape and byte strides
/// (`None`: row-major contiguous) over FP32 values.
#[derive(Debug, Clone, Copy)]
struct Generated<'a> {
    shape: &'a [u64],
    strides: Option<&'a [u64]>,
    values: &'a [f32],
}

/// The demo's results so far: one row per quantization, and FNV-1a 64 over all outputs.
#[derive(Default)]
struct Results {
    rows: Vec<Row>,
    hash: FnvHasher,
}

impl Results {
    /// Quantizes `input` stored as `dtype` on the A65 with the multiplier `pick`, the zero
    /// point and the rounding; adds its row and its output to the hash.
    fn quantize(
        &mut self,
        name: String,
        input: Generated<'_>,
        dtype: DType,
        pick: Pick,
        zero_point: i32,
        rounding: Rounding,
    ) -> Result<(), CliError> {
        let bytes = encode(input.values, dtype);
        let internal = |e: &dyn std::fmt::Display| CliError::Internal(anyhow!("demo {name}: {e}"));
        let data = Aligned::new(&bytes, dtype.size()).map_err(|e| internal(&e))?;
        let tensor = Tensor {
            dtype,
            shape: input.shape,
            strides: input.strides,
            out_strides: None,
            data: data.as_slice(),
        };
        let (bits, calibration) = match pick {
            Pick::Fixed(bits) => (bits, None),
            Pick::Absmax => {
                let a = engine::abs_max(&tensor).map_err(|e| internal(&e))?;
                let bits = absmax_multiplier(a).map_err(|e| internal(&e))?;
                (bits, Some(("absmax", a)))
            }
        };
        let params = Params::from_bits(bits)
            .with_zero_point(zero_point)
            .with_rounding(rounding);
        let q = engine::quantize(&tensor, params, engine::Backend::A65, &|_| {})
            .map_err(|e| internal(&e))?;
        self.hash.write(&q.output);
        self.rows
            .push(Row::new(name, input.shape, dtype, &q, calibration));
        Ok(())
    }
}

/// What `simak demo` did: one row per job and the checksum of all outputs.
#[derive(Debug, Clone, Serialize)]
pub struct DemoSummary {
    command: &'static str,
    seed: String,
    jobs: Vec<Row>,
    total: Total,
    checksum: String,
}

/// Runs `simak demo`: quantizes the generated tensors and checksums the outputs.
///
/// # Errors
///
/// [`CliError::Internal`] if the library refuses a job (it never should).
pub fn run(args: DemoArgs, _ctx: &Context) -> Result<Done<DemoSummary>, CliError> {
    let seed = args.seed.unwrap_or(DEFAULT_SEED);
    let (image_shape, image) = image(seed);
    let (weight_shape, weight) = weights(seed);
    let hwc = Generated {
        shape: &image_shape,
        strides: None,
        values: &image,
    };
    // The image viewed as CHW over its HWC storage: a strided input, contiguous output.
    let chw = Generated {
        shape: &[3, 224, 224],
        strides: Some(&[4, 224 * 3 * 4, 3 * 4]),
        values: &image,
    };
    let matrix = Generated {
        shape: &weight_shape,
        strides: None,
        values: &weight,
    };
    let image_pick = |multiplier: f32| Pick::Fixed(multiplier.to_bits());
    let nearest = Rounding::NearestEven;

    let mut results = Results::default();
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let name = format!("image.{dtype} hwc");
        results.quantize(name, hwc, dtype, image_pick(255.0), -128, nearest)?;
    }
    let name = "image.f32 chw-view".to_owned();
    results.quantize(name, chw, DType::F32, image_pick(127.0), -128, nearest)?;
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let name = format!("weight.{dtype}");
        results.quantize(name, matrix, dtype, Pick::Fixed(0x4400_0000), 0, nearest)?;
    }
    for rounding in Rounding::ALL {
        let name = format!("weight.f32 absmax {rounding}");
        results.quantize(name, matrix, DType::F32, Pick::Absmax, 0, rounding)?;
    }
    for dtype in [DType::BF16, DType::F16] {
        let name = format!("weight.{dtype} absmax");
        results.quantize(name, matrix, dtype, Pick::Absmax, 0, nearest)?;
    }
    let Results { rows, hash } = results;
    let checksum = format!("0x{:016x}", hash.finish());
    let total = Total::of(&rows);
    Ok(Done::summary(DemoSummary {
        command: "demo",
        seed: format!("0x{seed:016x}"),
        jobs: rows,
        total,
        checksum,
    }))
}

impl report::Summary for DemoSummary {
    fn text(&self) -> String {
        format!(
            "simak demo: generated tensors (seed {}), backend a65\n{}checksum fnv1a64 {}\n",
            self.seed,
            table(&self.jobs),
            self.checksum
        )
    }

    /// `-q` still prints the checksum line.
    fn quiet_text(&self) -> Option<String> {
        Some(format!("checksum fnv1a64 {}\n", self.checksum))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// `simak demo` alone, as clap parses it.
    #[derive(Debug, clap::Parser)]
    struct Demo {
        #[command(flatten)]
        args: DemoArgs,
    }

    #[test]
    fn default_seed_is_the_documented_one() {
        use clap::Parser as _;
        let cli = Demo::try_parse_from(["demo"]).unwrap();
        assert_eq!(cli.args.seed, None);
        assert_eq!(parse_seed("0x5eed5a3a20240001"), Ok(DEFAULT_SEED));
        assert_eq!(parse_seed("12"), Ok(12));
        assert!(parse_seed("0xzz").is_err());
    }

    #[test]
    fn pcg32_matches_the_reference_stream() {
        // pcg32_srandom(42, 54) from the PCG reference (pcg32-demo).
        let mut rng = Pcg32::new(42, 54);
        let first: Vec<u32> = (0..6).map(|_| rng.next_u32()).collect();
        assert_eq!(
            first,
            [
                0xa15c_02b7,
                0x7b47_f409,
                0xba1d_3330,
                0x83d2_f293,
                0xbfa4_784b,
                0xcbed_606e
            ]
        );
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(bf16_bits(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert!(f32::from_bits(u32::from(bf16_bits(f32::NAN)) << 16).is_nan());
    }

    #[test]
    fn generators_stay_in_range() {
        let (_, img) = image(DEFAULT_SEED);
        assert!(img.iter().all(|&v| (0.0..=1.0).contains(&v)));
        let (_, w) = weights(DEFAULT_SEED);
        assert!(w.iter().any(|v| v.is_nan()));
        assert_eq!(w.len(), 384 * 384);
    }

    #[test]
    fn fnv1a_reference() {
        // FNV-1a 64 of "a", from the FNV reference test vectors.
        let mut h = FnvHasher::default();
        h.write(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
    }
}
