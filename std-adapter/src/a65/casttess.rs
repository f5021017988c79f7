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
//! use simak::ops::casttess::{check_inference, Request, TiledTensorSpec};
//! use simak::{DType, TensorSpec};
//!
//! // SPEC §5 example: shape [W=2, C=3], one tile of two pixels, 12 bytes + 4 padding.
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     output: TiledTensorSpec::new(
//!         [2, 3],
//!         DType::BF16,
//!         MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact),
//!     ),
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
use simak_core::ops::CastTess as CastTessOp;
use simak_core::ops::casttess::Plan;

use super::{ExecuteError, HostOp, Level, LevelError, PortNeed};

use super::arch::tess::{
    Band, BandFn, ConvertFn, Rows, RowsFn, STREAM_MIN, SplitFn, TessKernels, TessLevel,
    tess_kernels,
};
/// [`execute`] over raw pointers, for the C ABI: the generic
/// [`execute_raw`](super::execute_raw) (SPEC §6), the op inferred from the `Prepared`.
pub use super::raw::execute_raw;
use super::tess::{self, Geometry, PANEL, Packer};

/// The prepared state of a CastTess plan ([`HostOp::State`]): kernel level and geometry
/// selected once. Opaque; held by [`Prepared`].
#[derive(Debug, Clone, Copy)]
pub struct State {
    plan: Plan,
    kernels: TessKernels,
    geometry: Geometry,
}

/// A CastTess plan prepared for the A65: kernel level and geometry selected once.
pub type Prepared = super::Prepared<CastTessOp>;

/// One piece of a split CastTess call ([`Prepared::split`](super::Prepared::split)): whole
/// tiles, one disjoint range of the call's output, so pieces can run concurrently on any
/// threads (they are `Send`). A piece may be run again (for example by a benchmark); each
/// run rewrites the same bytes.
pub type Piece<'a> = super::Piece<'a, CastTessOp>;

one_call!(casttess);

/// Prepares `plan` with the fastest kernel level this CPU offers (the scalar kernels when
/// built with the `scalar-only` feature, see [`SCALAR_ONLY`](super::SCALAR_ONLY)). Reads no
/// tensor data and allocates nothing.
pub fn prepare(plan: &Plan) -> Prepared {
    Prepared::new(plan)
}

/// The state of a forced kernel `level`, or `None` when this CPU lacks it.
pub(crate) fn with_level(plan: &Plan, level: TessLevel) -> Option<State> {
    let kernels = tess_kernels(level, plan.input().dtype())?;
    Some(State {
        plan: *plan,
        kernels,
        geometry: Geometry::new(plan.input(), plan.output()),
    })
}

/// Prepares `plan` at a forced [`Level`] (SPEC §10: the same bytes as [`prepare`], at that
/// level's speed), for benchmarks and comparisons. Reads no tensor data and allocates
/// nothing.
///
/// # Errors
///
/// [`LevelError::NotDetected`] when this CPU lacks the level's features;
/// [`LevelError::NoKernel`] for the levels CastTess has no kernels at (`x86_64-sse4.1`,
/// `aarch64-neon-fp16`).
pub fn prepare_at(plan: &Plan, level: Level) -> Result<Prepared, LevelError> {
    Prepared::at(plan, level)
}

impl Prepared {
    /// The same level without its fused kernels (the band kernel of compact 3-channel
    /// pixels and the fused rows): every batch takes the general convert-then-split path.
    /// Same bytes (SPEC §10). A test and cost-estimate hook (`cargo xtask neon-cost`), not
    /// public API.
    #[doc(hidden)]
    pub fn general_path(self) -> Prepared {
        Prepared {
            state: State {
                kernels: TessKernels {
                    rows: None,
                    band: None,
                    ..self.state.kernels
                },
                ..self.state
            },
        }
    }

    /// Whether this preparation has a fused kernel (band or rows) that
    /// [`general_path`](Prepared::general_path) removes.
    #[doc(hidden)]
    pub fn has_fused_path(&self) -> bool {
        self.state.kernels.rows.is_some() || self.state.kernels.band.is_some()
    }
}

/// CastTess on the A65: FP32 / FP16 / BF16 in, BF16 `MlaTiled` out (SPEC §4, §5, §6,
/// §10). Integer code only: no level depends on the FP environment. A part owns whole
/// tiles, consecutive in storage order (SPEC §5), with balanced tile counts, so its output
/// is one range of whole 16-byte blocks that no other part writes, each tile's padding
/// written by the part that owns the tile; a tile is never cut.
///
/// ```
/// use simak::a65;
/// use simak::layout::{Channels, MlaTiled};
/// use simak::ops::casttess::{check_inference, Request, TiledTensorSpec};
/// use simak::{DType, TensorSpec};
///
/// // A [H=32, W=128, C=3] FP32 image in (1, 16, 64, 3) tiles: 4 tiles of 6144 bytes.
/// let plan = check_inference(&Request {
///     input: TensorSpec::contiguous([32, 128, 3], DType::F32),
///     output: TiledTensorSpec::new(
///         [32, 128, 3],
///         DType::BF16,
///         MlaTiled::new([None, Some(0), Some(1), Some(2)], [1, 16, 64, 3], Channels::Compact),
///     ),
/// })?;
/// let prepared = a65::casttess::prepare(&plan);
/// let input: Vec<u8> = (0..32 * 128 * 3).flat_map(|i| (i as f32).to_le_bytes()).collect();
/// #[repr(align(16))]
/// struct Out([u8; 4 * 6144]);
/// let mut out = Box::new(Out([0; 4 * 6144]));
/// let output = &mut out.0;
/// let pieces = prepared.split(2, &input, output)?;
/// assert_eq!(pieces[1].output_range(), 2 * 6144..4 * 6144);
/// std::thread::scope(|s| {
///     let runs: Vec<_> = pieces.into_iter().map(|mut p| s.spawn(move || p.run())).collect();
///     runs.into_iter().try_for_each(|r| r.join().expect("no panic"))
/// })?;
/// // Each pixel: the low bytes of its 3 channels, then the high bytes (SPEC §5).
/// // Pixel (0, 0), channel 1: 1.0 = BF16 0x3f80, in tile 0 (the first piece).
/// assert_eq!([output[1], output[4]], [0x80, 0x3f]);
/// // Pixel (16, 0), channel 0: 6144.0 = BF16 0x45c0, first in tile 2 (the second piece).
/// assert_eq!([output[2 * 6144], output[2 * 6144 + 3]], [0xc0, 0x45]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl HostOp for CastTessOp {
    type State = State;
    type Part<'a> = tess::Part<'a>;

    fn prepare(plan: &Plan) -> State {
        TessLevel::AUTO
            .iter()
            .copied()
            .find_map(|level| with_level(plan, level))
            .unwrap_or_else(|| unreachable!("the scalar level is always available"))
    }

    fn prepare_at(plan: &Plan, level: Level) -> Result<State, LevelError> {
        level.check_detected()?;
        level
            .tess_level()
            .and_then(|l| with_level(plan, l))
            .ok_or(LevelError::NoKernel {
                level,
                op: "casttess",
                dtype: plan.input().dtype(),
            })
    }

    #[inline]
    fn plan(state: &State) -> &Plan {
        &state.plan
    }

    fn implementation(state: &State) -> &'static str {
        state.kernels.level.name()
    }

    fn level(state: &State) -> Level {
        state.kernels.level.level()
    }

    /// The input's accessed span aligned to its element size, the output's capacity
    /// 16-byte aligned.
    #[inline]
    fn needs(plan: &Plan) -> (PortNeed, PortNeed) {
        tess::needs(plan.input(), plan.output())
    }

    #[inline]
    fn uses_fp(_: &State) -> bool {
        false
    }

    #[inline]
    fn run(state: &State, input: &[u8], output: &mut [u8]) {
        tess::run(&state.geometry, &packer(state), input, output);
    }

    fn partition<'a>(
        state: &State,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Vec<tess::Part<'a>> {
        tess::parts(&state.geometry, parts, input, output)
    }

    fn run_part(state: &State, part: &mut tess::Part<'_>) {
        part.run(&state.geometry, &packer(state));
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

/// Converts `input` into the tiled BF16 `output` as `prepared` describes (the generic
/// [`a65::execute`](super::execute) for CastTess).
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
#[inline]
pub fn execute(prepared: &Prepared, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
    super::execute(prepared, input, output)
}

/// The packer of a state's kernels.
fn packer(state: &State) -> Cast {
    let dtype = state.plan.input().dtype();
    Cast {
        convert: state.kernels.convert,
        split: state.kernels.split,
        rows: state.kernels.rows,
        band: state.kernels.band,
        elem: dtype.size(),
        bf16: dtype == DType::BF16,
        stream: state.plan.output().capacity() >= STREAM_MIN as u64,
    }
}
