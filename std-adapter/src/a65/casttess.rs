//! A65 CastTess: FP32 / FP16 / BF16 → BF16 `MlaTiled` over borrowed host buffers (SPEC §4,
//! §5, §6, §10).
//!
//! `prepare` picks the kernel level once (AVX-512 VBMI, AVX-512, AVX2, NEON or scalar); `execute` rechecks
//! the buffers, then converts and splits into byte planes in one pass per bounded batch
//! (no intermediate tensor, no heap allocation), writing every required padding byte with
//! zero and nothing past the required span. Every level gives identical bytes; none
//! depends on the FP environment (integer code only).
//!
//! ```
//! use simak::a65;
//! use simak::layout::{Channels, MlaTiled};
//! use simak::ops::casttess::{check_inference, Request};
//! use simak::{DType, TensorSpec};
//!
//! // SPEC §5 example: shape [W=2, C=3], one tile of two pixels, 12 bytes + 4 padding.
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     layout: MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact),
//! })?;
//! let prepared = a65::casttess::prepare(&plan);
//! let input: Vec<u8> = [1.0f32, 2.0, 3.0, -1.0, -2.0, -3.0]
//!     .iter()
//!     .flat_map(|x| x.to_le_bytes())
//!     .collect();
//! #[repr(align(16))]
//! struct Out([u8; 16]);
//! let mut out = Out([0xee; 16]);
//! a65::casttess::execute(&prepared, &input, &mut out.0)?;
//! assert_eq!(
//!     out.0,
//!     [0x80, 0x00, 0x40, 0x3f, 0x40, 0x40, 0x80, 0x00, 0x40, 0xbf, 0xc0, 0xc0, 0, 0, 0, 0]
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use simak_core::DType;
use simak_core::ops::casttess::Plan;

use super::ExecuteError;

use super::arch::tess::{
    Band, BandFn, ConvertFn, Rows, RowsFn, STREAM_MIN, SplitFn, TessKernels, TessLevel,
    tess_kernels,
};
pub use super::raw::casttess as execute_raw;
use super::tess::{self, Geometry, PANEL, Packer};

/// A CastTess plan prepared for the A65: kernel level and geometry selected once.
#[derive(Debug, Clone, Copy)]
pub struct Prepared {
    plan: Plan,
    kernels: TessKernels,
    geometry: Geometry,
}

one_call!(casttess);

/// Prepares `plan` with the fastest kernel level this CPU offers (the scalar kernels when
/// built with the `scalar-only` feature, see [`TessLevel::AUTO`]). Reads no tensor data
/// and allocates nothing.
pub fn prepare(plan: &Plan) -> Prepared {
    TessLevel::AUTO
        .iter()
        .copied()
        .find_map(|level| prepare_with_level(plan, level))
        .unwrap_or_else(|| unreachable!("the scalar level is always available"))
}

/// Prepares `plan` with a forced kernel `level`, or `None` when this CPU lacks it. A test
/// hook, not public API: levels are an implementation detail (SPEC §10).
#[doc(hidden)]
pub fn prepare_with_level(plan: &Plan, level: TessLevel) -> Option<Prepared> {
    let kernels = tess_kernels(level, plan.input().dtype())?;
    Some(Prepared {
        plan: *plan,
        kernels,
        geometry: Geometry::new(plan.input(), plan.output()),
    })
}

impl Prepared {
    /// The checked plan this was prepared from.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Diagnostic name of the selected kernel level, e.g. `x86_64-avx512` (not an API
    /// contract, SPEC §10).
    pub fn implementation(&self) -> &'static str {
        self.kernels.level.name()
    }

    /// The selected kernel level.
    #[doc(hidden)]
    pub fn level(&self) -> TessLevel {
        self.kernels.level
    }

    /// The same level without its fused kernels (the band kernel of compact 3-channel
    /// pixels and the fused rows): every batch takes the general convert-then-split path.
    /// Same bytes (SPEC §10). A test and cost-estimate hook (`cargo xtask neon-cost`), not
    /// public API.
    #[doc(hidden)]
    pub fn general_path(self) -> Prepared {
        Prepared {
            kernels: TessKernels {
                rows: None,
                band: None,
                ..self.kernels
            },
            ..self
        }
    }

    /// Whether this preparation has a fused kernel (band or rows) that
    /// [`general_path`](Prepared::general_path) removes.
    #[doc(hidden)]
    pub fn has_fused_path(&self) -> bool {
        self.kernels.rows.is_some() || self.kernels.band.is_some()
    }
}

/// The CastTess packer: conversion then plane split, per batch.
struct Cast {
    convert: ConvertFn,
    split: SplitFn,
    rows: Option<RowsFn>,
    band: Option<BandFn>,
    elem: usize,
    bf16: bool,
    stream: bool,
}

impl Packer for Cast {
    fn pixels(&self, raw: &[u8], tc: usize, sc: usize, out: &mut [u8], scratch: &mut [u8]) {
        if self.bf16 {
            (self.split)(raw, tc, sc, out);
            return;
        }
        let n = raw.len() / self.elem;
        debug_assert!(n <= PANEL);
        let bf = &mut scratch[..2 * n];
        (self.convert)(raw, bf);
        (self.split)(bf, tc, sc, out);
    }

    fn rows(&self, rows: Rows<'_>, tc: usize) -> bool {
        self.rows.is_some_and(|f| f(rows, tc))
    }

    fn band(&self, band: Band<'_>, tc: usize) -> bool {
        self.band.is_some_and(|f| f(band, tc, self.stream))
    }

    fn channels(&self, raw: &[u8], ca: usize, pixel: &mut [u8], scratch: &mut [u8]) {
        let n = raw.len() / self.elem;
        let bf = &mut scratch[..2 * n];
        (self.convert)(raw, bf);
        let sc = pixel.len() / 2;
        let (lo, hi) = pixel.split_at_mut(sc);
        for (k, v) in bf.chunks_exact(2).enumerate() {
            lo[ca + k] = v[0];
            hi[ca + k] = v[1];
        }
    }
}

/// Converts `input` into the tiled BF16 `output` as `prepared` describes.
///
/// `input` holds the input port's storage from its first element (little-endian, at least
/// `plan.input().span()` bytes, aligned to the element size); `output` holds at least
/// `plan.output().capacity()` bytes starting 16-byte aligned. Exactly the first `capacity`
/// bytes are written, padding included (zero), whatever they held before; bytes past them
/// are never touched. An empty plan needs no storage and writes nothing. Allocates
/// nothing; independent of the FP environment.
///
/// # Errors
///
/// Checked before any write, in this order: [`ExecuteError::Capacity`],
/// [`ExecuteError::Misaligned`], [`ExecuteError::AddressOverflow`] (input, then output),
/// [`ExecuteError::Overlap`]. On error nothing was written.
pub fn execute(prepared: &Prepared, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
    let plan = &prepared.plan;
    if plan.is_empty() {
        return Ok(());
    }
    tess::check_ports(plan.input(), plan.output(), input, output)?;
    let dtype = plan.input().dtype();
    let packer = Cast {
        convert: prepared.kernels.convert,
        split: prepared.kernels.split,
        rows: prepared.kernels.rows,
        band: prepared.kernels.band,
        elem: dtype.size(),
        bf16: dtype == DType::BF16,
        stream: plan.output().capacity() >= STREAM_MIN as u64,
    };
    tess::run(&prepared.geometry, &packer, input, output);
    Ok(())
}
