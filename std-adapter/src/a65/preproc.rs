//! A65 Preproc: 8-bit camera frames → FP32 (strided), INT8 (Quant strided, QuantTess
//! `MlaTiled`) or BF16 (CastTess `MlaTiled`) over borrowed host buffers (SPEC §13, §6,
//! §10).
//!
//! `prepare` builds, once per plan, a table of the 256 results per output channel: the
//! FP32 bits of [`Plan::value_bits`](simak_core::ops::preproc::Plan::value_bits), that
//! value through Quant's exact element function (SPEC §3), or through §4's FP32 → BF16 rule.
//! Every output byte is then a table entry of the pixel's raw 8-bit value (the YUV step is
//! OpenCV's integer formula, [`yuv_to_rgb`](simak_core::arith::preproc::yuv_to_rgb)), so
//! the result equals the existing op run on the FP32 tensor of SPEC §13 byte for byte (the
//! equivalence rule). The tables and the integer routes need no FP environment check; the
//! BF16 lanes below run only in the default FP environment (else the tables), so a call
//! never fails because of it.
//!
//! It reads the frame a row piece at a time
//! ([`Plan::pixel_row_by`](simak_core::ops::preproc::Plan::pixel_row_by): up to 64 pixels,
//! each plane's row sliced once), for strided outputs and for tile rows along W. The YUV
//! step of NV12 and I420 rows runs 16 pixels at a time in integer SIMD (`arch::yuv`:
//! SSE4.1, AVX2 (also at the AVX-512 levels), NEON; the portable formula at the `scalar`
//! level and with the `scalar-only` feature).
//!
//! INT8 outputs (Quant strided, QuantTess) of three channels go through an exact integer
//! affine map in SIMD where the tables admit one (`arch::affine`: per channel
//! `sat_i8((p · a + b) >> 16)`, found at `prepare` and checked against the tables on all 256
//! values; every monotone table whose slope is at most 64 codes per raw step has one):
//! packed pixel runs, straight from the frame when it is RGB8 (or BGR8 with `bgr`) without
//! a border in the run, else from the row piece. The route is then `preproc-<level>-i8`.
//! Compact three-channel BF16 tiles go through FP SIMD lanes where they equal the tables
//! (`arch::bf16map`: per channel `((p · a) + b) · k` with the reciprocals, or SPEC §13's
//! divisions, rounded to BF16 in integer lanes and placed by byte shuffles; chosen and
//! checked against the tables on all 256 values at `prepare`, in the default FP
//! environment): blocks of 8 pixels, straight from the frame as above or from the row
//! piece (NV12, I420). The route is then `preproc-<level>-bf16` (`-bf16-div` with the
//! divisions). The rest of such a row writes each pixel's six bytes as one OR of three
//! placed table entries. Before a tile row is read through the row piece, the next tile's
//! row pieces are prefetched (`arch::prefetch`, x86-64). Everything else is table lookups
//! in portable code. `prepare_at` accepts every level this CPU has; `prepare` takes the
//! best (scalar with `scalar-only`). No heap allocation during `execute`.
//!
//! ```
//! use simak::a65;
//! use simak::ops::preproc::{check_inference, Border, Format, Frame, Normalize, Output, Request};
//!
//! let plan = check_inference(&Request {
//!     frame: Frame::packed(Format::BGR8, 1, 2),
//!     normalize: Normalize { divisor: 1.0, ..Normalize::DEFAULT },
//!     bgr: false,
//!     border: Border { top: 0, bottom: 0, left: 1, right: 0 },
//!     pad_value: &[7],
//!     output: Output::F32 { strides: None },
//! })?;
//! let prepared = a65::preproc::prepare(&plan);
//! let frame = [1u8, 2, 3, 4, 5, 6]; // two BGR pixels
//! let mut out = [0u8; 3 * 3 * 4];
//! a65::preproc::execute(&prepared, &frame, &mut out)?;
//! let values: Vec<f32> = out.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
//! assert_eq!(values, [7.0, 7.0, 7.0, 3.0, 2.0, 1.0, 6.0, 5.0, 4.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use core::ops::Range;

use simak_core::arith::cast::f32_to_bf16;
use simak_core::layout::{TILE_ALIGN, TiledView};
use simak_core::ops::Preproc as PreprocOp;
use simak_core::ops::preproc::{Format, Plan, PlanOutput, PortableYuv, YuvRows};
use simak_core::{DType, View};

use super::arch::affine::{self, Affine3, AffineLanes};
use super::arch::bf16map::{self, Bf16Lanes, Bf16Map3, Steps};
use super::arch::isa::Isa;
#[cfg(target_arch = "aarch64")]
use super::arch::isa::Neon;
#[cfg(target_arch = "x86_64")]
use super::arch::isa::{Avx2, Sse41};
use super::arch::yuv::YuvLanes;
use super::{ExecuteError, HostOp, Level, LevelError, PortNeed};

/// [`execute`] over raw pointers, for the C ABI: the generic
/// [`execute_raw`](super::execute_raw) (SPEC §6), the op inferred from the `Prepared`.
pub use super::raw::execute_raw;

/// A Preproc plan prepared for the A65: the per-channel tables built once.
pub type Prepared = super::Prepared<PreprocOp>;

/// One piece of a split Preproc call ([`Prepared::split`](super::Prepared::split)).
pub type Piece<'a> = super::Piece<'a, PreprocOp>;

/// The YUV step of a prepared plan: the level's 16-pixel [`YuvLanes`] block (SSE4.1,
/// AVX2 also at the AVX-512 levels, NEON), or the portable formula.
#[derive(Debug, Clone, Copy)]
enum Yuv {
    Portable,
    Simd(Block),
}

impl Yuv {
    /// The block of a level (detected by the caller): portable at `scalar`, else the
    /// level's SIMD block, also with the `scalar-only` feature (as the other ops'
    /// `prepare_at`, so that its tests compare the SIMD block with the portable default).
    fn at(level: Level) -> Yuv {
        Block::at(level).map_or(Yuv::Portable, Yuv::Simd)
    }

    /// The diagnostic name.
    fn implementation(self) -> &'static str {
        match self {
            Yuv::Portable => "preproc-portable",
            Yuv::Simd(b) => b.names()[0],
        }
    }
}

impl Yuv {
    /// Two rows of NV12 pixels sharing the chroma row `uv` ([`Plan::nv12_pair`]): luma
    /// `y0` into `out0` and `y1` into `out1` (one pixel each per luma byte, pair `k / 2`
    /// for pixel `k`), the SIMD blocks computing each chroma block once for both rows.
    fn nv12_pair(
        &self,
        y0: &[u8],
        y1: &[u8],
        uv: &[u8],
        out0: &mut [[u8; 3]],
        out1: &mut [[u8; 3]],
    ) {
        let n = out0.len();
        let blocks = n / 16;
        let (o0, o1) = (
            out0[..16 * blocks].as_flattened_mut(),
            out1[..16 * blocks].as_flattened_mut(),
        );
        let done = match *self {
            Yuv::Portable => 0,
            #[cfg(target_arch = "x86_64")]
            Yuv::Simd(Block::Sse41(t)) => t.yuv_nv12_pair_blocks(y0, y1, uv, o0, o1),
            #[cfg(target_arch = "x86_64")]
            Yuv::Simd(Block::Avx2(t)) => t.yuv_nv12_pair_blocks(y0, y1, uv, o0, o1),
            #[cfg(target_arch = "aarch64")]
            Yuv::Simd(Block::Neon(t)) => t.yuv_nv12_pair_blocks(y0, y1, uv, o0, o1),
        };
        let k = 16 * done;
        if k < n {
            for (out, luma) in [(out0, y0), (out1, y1)] {
                PortableYuv.yuv_row(
                    &mut out[k..n],
                    &luma[k..n],
                    &uv[k..],
                    &uv[k + 1..],
                    2,
                    false,
                );
            }
        }
    }
}

impl YuvRows for Yuv {
    fn yuv_row(
        &self,
        out: &mut [[u8; 3]],
        luma: &[u8],
        u: &[u8],
        v: &[u8],
        step: usize,
        odd: bool,
    ) {
        match *self {
            Yuv::Portable => PortableYuv.yuv_row(out, luma, u, v, step, odd),
            #[cfg(target_arch = "x86_64")]
            Yuv::Simd(Block::Sse41(t)) => yuv_blocks(t, out, luma, u, v, step, odd),
            #[cfg(target_arch = "x86_64")]
            Yuv::Simd(Block::Avx2(t)) => yuv_blocks(t, out, luma, u, v, step, odd),
            #[cfg(target_arch = "aarch64")]
            Yuv::Simd(Block::Neon(t)) => yuv_blocks(t, out, luma, u, v, step, odd),
        }
    }
}

/// [`YuvRows::yuv_row`] by 16-pixel blocks of `lanes` from the first pixel of an even
/// column; the odd first pixel and the last `< 16` ones by the portable formula.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
fn yuv_blocks<T: YuvLanes>(
    lanes: T,
    out: &mut [[u8; 3]],
    luma: &[u8],
    u: &[u8],
    v: &[u8],
    step: usize,
    odd: bool,
) {
    let n = out.len().min(luma.len());
    let first = usize::from(odd).min(n);
    if first == 1 {
        PortableYuv.yuv_row(&mut out[..1], &luma[..1], u, v, step, true);
    }
    // Pixel `first + k` uses pair `first + k / 2`.
    let blocks = (n - first) / 16;
    // NV12: `v` is `u` one byte on; block b's 8 pairs are 16 bytes of `u` from 2·(first + 8b).
    let done = if step == 2 {
        let uv = u.get(2 * first..).unwrap_or_default();
        let o = out[first..first + 16 * blocks].as_flattened_mut();
        lanes.yuv_nv12_blocks(&luma[first..first + 16 * blocks], uv, o)
    } else {
        0
    };
    for b in done..blocks {
        let (k, c) = (first + 16 * b, first + 8 * b);
        let y: &[u8; 16] = luma[k..k + 16]
            .try_into()
            .unwrap_or_else(|_| unreachable!("16 bytes"));
        let o: &mut [u8; 48] = out[k..k + 16]
            .as_flattened_mut()
            .try_into()
            .unwrap_or_else(|_| unreachable!("48 bytes"));
        let (mut ub, mut vb) = ([0u8; 8], [0u8; 8]);
        for (j, (ub, vb)) in ub.iter_mut().zip(&mut vb).enumerate() {
            (*ub, *vb) = (u[(c + j) * step], v[(c + j) * step]);
        }
        lanes.yuv16(y, &ub, &vb, o);
    }
    let tail = first + 16 * blocks;
    if tail < n {
        let c = (first + 8 * blocks) * step;
        PortableYuv.yuv_row(
            &mut out[tail..n],
            &luma[tail..n],
            &u[c..],
            &v[c..],
            step,
            false,
        );
    }
}

/// A level's SIMD blocks (the YUV step's and the INT8 outputs' affine map's): SSE4.1,
/// AVX2 (also at the AVX-512 levels) or NEON.
#[derive(Debug, Clone, Copy)]
enum Block {
    #[cfg(target_arch = "x86_64")]
    Sse41(Sse41),
    #[cfg(target_arch = "x86_64")]
    Avx2(Avx2),
    #[cfg(target_arch = "aarch64")]
    Neon(Neon),
}

impl Block {
    /// The blocks of `level` (detected by the caller); `None` at `scalar`.
    fn at(level: Level) -> Option<Block> {
        match level {
            #[cfg(target_arch = "x86_64")]
            Level::Sse41 => Sse41::detect().map(Block::Sse41),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 | Level::Avx512 | Level::Avx512Vbmi => Avx2::detect().map(Block::Avx2),
            #[cfg(target_arch = "aarch64")]
            Level::Neon | Level::NeonFp16 => Neon::detect().map(Block::Neon),
            _ => None,
        }
    }

    /// The diagnostic names of the routes with these blocks: the YUV step's, the INT8
    /// affine map's, the BF16 map's with products and with divisions.
    fn names(self) -> [&'static str; 4] {
        match self {
            #[cfg(target_arch = "x86_64")]
            Block::Sse41(_) => [
                "preproc-sse4.1-yuv",
                "preproc-sse4.1-i8",
                "preproc-sse4.1-bf16",
                "preproc-sse4.1-bf16-div",
            ],
            #[cfg(target_arch = "x86_64")]
            Block::Avx2(_) => [
                "preproc-avx2-yuv",
                "preproc-avx2-i8",
                "preproc-avx2-bf16",
                "preproc-avx2-bf16-div",
            ],
            #[cfg(target_arch = "aarch64")]
            Block::Neon(_) => [
                "preproc-neon-yuv",
                "preproc-neon-i8",
                "preproc-neon-bf16",
                "preproc-neon-bf16-div",
            ],
        }
    }
}

/// An INT8 output's channels as one affine map in SIMD ([`affine::fit`]), when the tables
/// admit one.
#[derive(Debug, Clone)]
struct Affine {
    block: Block,
    map: Affine3,
}

impl Affine {
    /// The map for `plan`'s tables at `level`, if its output is INT8 with three channels,
    /// the level has a block and the tables fit.
    fn new(plan: &Plan, tables: &Tables, level: Level) -> Option<Affine> {
        if !matches!(
            plan.output(),
            PlanOutput::I8(..) | PlanOutput::QuantTess(..)
        ) || plan.channels() != 3
        {
            return None;
        }
        let block = Block::at(level)?;
        let t = tables.0.map(|row| row.map(|v| v as u8 as i8));
        affine::fit(&t).map(|map| Affine { block, map })
    }

    /// Writes the map of `raw`'s bytes into `dst` (three bytes per pixel) for the pixels
    /// of whole SIMD steps; returns how many pixels that was.
    #[inline]
    fn pixels(&self, raw: &[[u8; 3]], dst: &mut [u8]) -> usize {
        let src = raw.as_flattened();
        let done = match self.block {
            #[cfg(target_arch = "x86_64")]
            Block::Sse41(t) => t.affine3(&self.map, src, dst),
            #[cfg(target_arch = "x86_64")]
            Block::Avx2(t) => t.affine3(&self.map, src, dst),
            #[cfg(target_arch = "aarch64")]
            Block::Neon(t) => t.affine3(&self.map, src, dst),
        };
        done / 3
    }
}

/// The 256 results per output channel (output bytes little-endian in a `u32`).
#[derive(Clone)]
struct Tables([[u32; 256]; 3]);

/// A BF16 output's results placed as one Compact three-channel pixel's six bytes (low
/// bytes plane, then high bytes plane): channel `c`'s low byte at byte `c`, its high byte
/// at byte `3 + c` of a little-endian `u64`, so a pixel is the OR of three entries.
#[derive(Clone)]
struct Placed(Box<[[u64; 256]; 3]>);

impl fmt::Debug for Placed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Placed(3 × 256)")
    }
}

impl Placed {
    fn new(t: &Tables) -> Placed {
        let mut w = Box::new([[0u64; 256]; 3]);
        for (c, (w, t)) in w.iter_mut().zip(&t.0).enumerate() {
            for (w, &v) in w.iter_mut().zip(t) {
                *w = u64::from(v & 0xff) << (8 * c) | u64::from((v >> 8) & 0xff) << (24 + 8 * c);
            }
        }
        Placed(w)
    }
}

impl fmt::Debug for Tables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tables(3 × 256)")
    }
}

/// The prepared state of a Preproc plan ([`HostOp::State`]): the plan and its tables.
/// Opaque; held by [`Prepared`].
#[derive(Debug, Clone)]
pub struct State {
    plan: Plan,
    tables: Tables,
    placed: Option<Placed>,
    bf16: Option<Bf16>,
    affine: Option<Affine>,
    yuv: Yuv,
    level: Level,
}

/// Prepares `plan`: builds the per-channel tables (SPEC §13). Reads no frame data.
pub fn prepare(plan: &Plan) -> Prepared {
    Prepared::new(plan)
}

/// Prepares `plan` at a forced [`Level`]: that level's YUV and INT8 blocks (the portable
/// path at `scalar`), the same bytes at every level this CPU has (SPEC §10).
///
/// # Errors
///
/// [`LevelError::NotDetected`] when this CPU lacks the level.
pub fn prepare_at(plan: &Plan, level: Level) -> Result<Prepared, LevelError> {
    Prepared::at(plan, level)
}

/// Admission and preparation in one call:
/// `prepare(&simak::ops::preproc::check_inference(request)?)`.
///
/// # Errors
///
/// The admission error.
pub fn check_inference(
    request: &simak_core::ops::preproc::Request<'_>,
) -> Result<Prepared, simak_core::AdmissionError> {
    Ok(prepare(&simak_core::ops::preproc::check_inference(
        request,
    )?))
}

/// Runs the call `prepared` describes (the generic [`a65::execute`](super::execute) for
/// Preproc).
///
/// `input` holds the frame buffer from its start (at least `plan.input_span()` bytes, any
/// alignment); `output` holds the output port's storage: at least `plan.output_span()`
/// bytes, 4-byte aligned for FP32, 16-byte aligned for the tiled outputs. Only the bytes
/// elements map to are written (strided), or exactly the first `capacity` bytes, padding
/// 0x00 included (tiled). An empty plan writes nothing. Allocates nothing.
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

/// What the state writes per element.
#[derive(Clone, Copy)]
enum Kind {
    /// Strided, `bytes` per element (4 for FP32, 1 for INT8).
    Strided { bytes: usize },
    /// Tiled, `planes` byte planes (1 for INT8, 2 for BF16).
    Tiled { planes: usize },
}

fn kind(plan: &Plan) -> Kind {
    match plan.output() {
        PlanOutput::F32(_) => Kind::Strided { bytes: 4 },
        PlanOutput::I8(..) => Kind::Strided { bytes: 1 },
        PlanOutput::QuantTess(..) => Kind::Tiled { planes: 1 },
        PlanOutput::CastTess(_) => Kind::Tiled { planes: 2 },
    }
}

/// A Compact three-channel BF16 output's pixels in FP SIMD ([`bf16map::fit`]), when the
/// level has blocks and the lanes' model equals the tables (checked in the default FP
/// environment; a call uses it only in that environment).
#[derive(Debug, Clone)]
struct Bf16 {
    block: Block,
    map: Bf16Map3,
}

impl Bf16 {
    /// The map for `plan`'s tables at `level`, if its output is CastTess with three
    /// channels, the level has a block, the FP environment is the default and a model fits.
    fn new(plan: &Plan, tables: &Tables, level: Level) -> Option<Bf16> {
        if !matches!(plan.output(), PlanOutput::CastTess(_)) || plan.channels() != 3 {
            return None;
        }
        let block = Block::at(level)?;
        if !super::untess::fp_ok() {
            return None;
        }
        let (divisor, mean, std) = plan.normalization_bits();
        bf16map::fit(divisor, mean, std, &tables.0).map(|map| Bf16 { block, map })
    }

    /// Writes the Compact BF16 pixels of the packed raw bytes `src` (three a pixel) into
    /// `dst` (six a pixel) for the pixels of whole SIMD blocks; returns how many pixels
    /// that was. Only in the default FP environment.
    #[inline]
    fn pixels(&self, src: &[u8], dst: &mut [u8]) -> usize {
        match self.block {
            #[cfg(target_arch = "x86_64")]
            Block::Sse41(t) => t.bf16x3(&self.map, src, dst),
            #[cfg(target_arch = "x86_64")]
            Block::Avx2(t) => t.bf16x3(&self.map, src, dst),
            #[cfg(target_arch = "aarch64")]
            Block::Neon(t) => t.bf16x3(&self.map, src, dst),
        }
    }
}

/// The per-channel tables of `plan` (SPEC §13's equivalence: the existing op's result on
/// the FP32 value of each raw byte).
fn tables(plan: &Plan) -> Tables {
    let mut t = [[0u32; 256]; 3];
    for (c, row) in t.iter_mut().enumerate().take(plan.channels()) {
        for (p, slot) in row.iter_mut().enumerate() {
            let bits = plan.value_bits(c, p as u8);
            *slot = match plan.output() {
                PlanOutput::F32(_) => bits,
                PlanOutput::I8(_, q) | PlanOutput::QuantTess(_, q) => {
                    let k = q.kernels(DType::F32);
                    u32::from((k.element)(q.multiplier(), q.zero_point(), bits) as u8)
                }
                PlanOutput::CastTess(_) => u32::from(f32_to_bf16(bits)),
            };
        }
    }
    Tables(t)
}

/// The logical slot (n, y, x, c) of each output axis: rank 3 has no n.
fn slot_of(plan: &Plan, axis: usize) -> usize {
    axis + 4 - plan.output_extents().len()
}

/// Output extents per slot (n, y, x, c), n = 1 without a batch.
fn extents4(plan: &Plan) -> [usize; 4] {
    let mut e = [1usize; 4];
    for (axis, &x) in plan.output_extents().iter().enumerate() {
        e[slot_of(plan, axis)] = x as usize;
    }
    e
}

/// Strides per slot (n, y, x, c) of a strided output view.
fn strides4(plan: &Plan, view: &View) -> [usize; 4] {
    let mut s = [0usize; 4];
    for axis in 0..plan.output_extents().len() {
        s[slot_of(plan, axis)] = view.strides()[axis] as usize;
    }
    s
}

/// A one-pixel cache of raw pixel values over the call's input.
struct Pixels<'a> {
    plan: &'a Plan,
    input: &'a [u8],
    key: (usize, usize, usize),
    raw: [u8; 3],
}

impl<'a> Pixels<'a> {
    fn new(plan: &'a Plan, input: &'a [u8]) -> Self {
        Pixels {
            plan,
            input,
            key: (usize::MAX, 0, 0),
            raw: [0; 3],
        }
    }

    #[inline]
    fn get(&mut self, n: usize, y: usize, x: usize) -> [u8; 3] {
        if self.key != (n, y, x) {
            self.key = (n, y, x);
            self.raw = self.plan.pixel(self.input, n as u64, y as u64, x as u64);
        }
        self.raw
    }
}

/// Writes the strided elements whose slot indices lie in `ranges` into `out`, which
/// starts at byte `base` of the output port.
fn run_strided(
    state: &State,
    bytes: usize,
    input: &[u8],
    out: &mut [u8],
    ranges: &[Range<usize>; 4],
    base: usize,
) {
    let plan = &state.plan;
    let view = match plan.output() {
        PlanOutput::F32(v) | PlanOutput::I8(v, _) => v,
        _ => return,
    };
    let [sn, sy, sx, sc] = strides4(plan, view);
    let t = &state.tables.0;
    let (mut raw, mut raw1) = ([[0u8; 3]; ROW], [[0u8; 3]; ROW]);
    // INT8 packed three-channel rows straight from a frame in the output's channel order.
    let direct = state
        .affine
        .as_ref()
        .filter(|_| bytes == 1 && sc == 1 && sx == 3 && ranges[3] == (0..3));
    let write = |raw: &[[u8; 3]], at: usize, out: &mut [u8]| {
        // The part's slice starts at `base`, at or before every element it owns (the C
        // axis too may be the one cut).
        let row = Row {
            raw,
            at,
            sx,
            sc,
            channels: ranges[3].clone(),
            base,
        };
        if bytes == 4 {
            row.write::<4>(t, None, out);
        } else {
            row.write::<1>(t, state.affine.as_ref(), out);
        }
    };
    for n in ranges[0].clone() {
        // Whether row `y` was written with the row before it (an NV12 pair).
        let mut paired = false;
        for y in ranges[1].clone() {
            if paired {
                paired = false;
                continue;
            }
            let (x0, x1) = (ranges[2].start, ranges[2].end);
            // Rows y and y + 1 sharing a chroma row: each chroma pair converted once.
            if y + 1 < ranges[1].end
                && plan
                    .nv12_pair(input, n as u64, y as u64, x0 as u64, (x1 - x0) as u64)
                    .is_some()
            {
                let mut x = x0;
                let mut whole = true;
                while x < x1 {
                    let k = (x1 - x).min(ROW);
                    let Some((l0, l1, uv)) =
                        plan.nv12_pair(input, n as u64, y as u64, x as u64, k as u64)
                    else {
                        whole = false;
                        break;
                    };
                    let (r0, r1) = (&mut raw[..k], &mut raw1[..k]);
                    state.yuv.nv12_pair(l0, l1, uv, r0, r1);
                    if plan.bgr() {
                        for px in r0.iter_mut().chain(r1.iter_mut()) {
                            px.swap(0, 2);
                        }
                    }
                    let at = n * sn + y * sy + x * sx;
                    write(r0, at, out);
                    write(r1, at + sy, out);
                    x += k;
                }
                if whole {
                    paired = true;
                    continue;
                }
            }
            let x = x0;
            let count = ranges[2].end - x;
            if let Some(a) = direct {
                let src = plan.packed_row(input, n as u64, y as u64, x as u64, count as u64);
                if let Some(src) = src {
                    let at = n * sn + y * sy + x * sx - base;
                    let dst = &mut out[at..at + 3 * count];
                    let done = 3 * a.pixels(src.as_chunks::<3>().0, dst);
                    for (k, (y, &p)) in dst[done..].iter_mut().zip(&src[done..]).enumerate() {
                        *y = t[k % 3][usize::from(p)] as u8;
                    }
                    continue;
                }
            }
            let mut x = x;
            while x < ranges[2].end {
                let k = (ranges[2].end - x).min(ROW);
                let raw = &mut raw[..k];
                plan.pixel_row_by(&state.yuv, input, n as u64, y as u64, x as u64, raw);
                write(raw, n * sn + y * sy + x * sx, out);
                x += k;
            }
        }
    }
}

/// Pixels per row piece of the strided walk (a stack buffer of raw values).
const ROW: usize = 64;

/// A piece of an output row: the raw values of its pixels, the output byte of the first
/// (relative to the port), the strides and the covered channels.
struct Row<'a> {
    raw: &'a [[u8; 3]],
    at: usize,
    sx: usize,
    sc: usize,
    channels: Range<usize>,
    base: usize,
}

impl Row<'_> {
    /// Writes each covered element's `B` bytes (the table entry's low bytes) into `out`,
    /// which starts at port byte `base`; packed three-channel pixels through `affine`'s
    /// SIMD blocks where it is given (INT8), the rest through the tables.
    #[inline(always)]
    fn write<const B: usize>(&self, t: &[[u32; 256]; 3], affine: Option<&Affine>, out: &mut [u8]) {
        let Row {
            raw,
            at,
            sx,
            sc,
            ref channels,
            base,
        } = *self;
        if channels.start == 0 && channels.end == 3 && sc == B && sx == 3 * B {
            // Packed three-channel pixels (HWC): one contiguous run of 3·B bytes each.
            let run = &mut out[at - base..][..3 * B * raw.len()];
            let done = affine.map_or(0, |a| a.pixels(raw, run));
            let (raw, run) = (&raw[done..], &mut run[3 * B * done..]);
            for (px, y) in raw.iter().zip(run.chunks_exact_mut(3 * B)) {
                for (c, y) in y.chunks_exact_mut(B).enumerate() {
                    y.copy_from_slice(&t[c][usize::from(px[c])].to_le_bytes()[..B]);
                }
            }
            return;
        }
        for (i, px) in raw.iter().enumerate() {
            let p = at + i * sx;
            for c in channels.clone() {
                let o = p + c * sc - base;
                out[o..o + B].copy_from_slice(&t[c][usize::from(px[c])].to_le_bytes()[..B]);
            }
        }
    }
}

/// Writes tiles `tiles` (storage order) into `out`, which starts at the first of them.
fn run_tiled(state: &State, planes: usize, input: &[u8], out: &mut [u8], tiles: Range<u64>) {
    let plan = &state.plan;
    let view: &TiledView = match plan.output() {
        PlanOutput::QuantTess(v, _) | PlanOutput::CastTess(v) => v,
        _ => return,
    };
    let layout = view.layout();
    let outer_axes = view.outer_axes();
    let extents = view.extents();
    let t = &state.tables.0;
    let mut pixels = Pixels::new(plan, input);
    let (mut raw, mut raw1) = ([[0u8; 3]; ROW], [[0u8; 3]; ROW]);
    // Unit steps per role, as slot vectors.
    let mut role_slot = [None; 4];
    for (r, axis) in layout.axes.iter().enumerate() {
        role_slot[r] = axis.map(|a| slot_of(plan, usize::from(a)));
    }
    // The BF16 lanes, in the default FP environment only (read once per call).
    let bf16 = state.bf16.as_ref().filter(|_| super::untess::fp_ok());
    let mut pos = 0usize;
    let skip = usize::try_from(tiles.start).unwrap_or(usize::MAX);
    let take = usize::try_from(tiles.end - tiles.start).unwrap_or(usize::MAX);
    for tile in view.tiles().skip(skip).take(take) {
        // The slot index of the tile's first element.
        let mut first = [0usize; 4];
        let mut outer = tile.outer;
        for &a in outer_axes.iter().rev() {
            let e = extents[usize::from(a)];
            first[slot_of(plan, usize::from(a))] = (outer % e) as usize;
            outer /= e;
        }
        for (r, slot) in role_slot.iter().enumerate() {
            if let Some(s) = *slot {
                first[s] = (tile.index[r] * u64::from(view.tile()[r])) as usize;
            }
        }
        let [td, th, tw, tc] = tile.extents.map(|e| e as usize);
        let sc = view.stored_channels(tc as u64).unwrap_or(tc as u64) as usize;
        let pixel_bytes = sc * planes;
        let data = td * th * tw * pixel_bytes;
        let size = tile.bytes as usize;
        let dst = &mut out[pos..pos + size];
        // Tile rows along x with channels along c (the usual roles): one row piece of raw
        // values per tile row.
        let rows = role_slot[2] == Some(2) && role_slot[3] == Some(3) && tw <= ROW;
        let mut k = 0usize;
        // Whether the previous tile row was written as the first of a pair with this one.
        let mut paired = false;
        for d in 0..td {
            for h in 0..th {
                let mut row = first;
                for (r, i) in [(0, d), (1, h)] {
                    if let Some(s) = role_slot[r] {
                        row[s] += i;
                    }
                }
                if rows && paired {
                    // The second row of a pair, written with the first.
                    paired = false;
                    k += tw;
                    continue;
                }
                if rows {
                    let [n, y, x, c0] = row;
                    let (dst, pair) = dst[k * pixel_bytes..].split_at_mut(tw * pixel_bytes);
                    if let Some(a) = state
                        .affine
                        .as_ref()
                        .filter(|_| c0 == 0 && tc == 3 && sc == 3)
                        && let Some(src) =
                            plan.packed_row(input, n as u64, y as u64, x as u64, tw as u64)
                    {
                        // INT8 straight from a frame in the output's channel order.
                        let done = 3 * a.pixels(src.as_chunks::<3>().0, dst);
                        for (k, (y, &p)) in dst[done..].iter_mut().zip(&src[done..]).enumerate() {
                            *y = t[k % 3][usize::from(p)] as u8;
                        }
                        k += tw;
                        continue;
                    }
                    if let Some(b) = bf16.filter(|_| planes == 2 && c0 == 0 && tc == 3 && sc == 3)
                        && let (Some(w), Some(src)) = (
                            state.placed.as_ref(),
                            plan.packed_row(input, n as u64, y as u64, x as u64, tw as u64),
                        )
                    {
                        // Compact BF16 straight from a frame in the output's channel order.
                        let done = b.pixels(src, dst);
                        placed_pixels(w, src[3 * done..].as_chunks::<3>().0, &mut dst[6 * done..]);
                        k += tw;
                        continue;
                    }
                    if h + 1 < th
                        && role_slot[1] == Some(1)
                        && let Some((y0, y1, uv)) =
                            plan.nv12_pair(input, n as u64, y as u64, x as u64, tw as u64)
                    {
                        // Two NV12 rows that share a chroma row, rows h and h + 1 of the
                        // tile: each chroma pair converted once.
                        // The next tile's same rows (tiles along W are adjacent in the frame).
                        for piece in [y0, y1, uv] {
                            prefetch_after(input, piece, piece.len());
                        }
                        let (r0, r1) = (&mut raw[..tw], &mut raw1[..tw]);
                        state.yuv.nv12_pair(y0, y1, uv, r0, r1);
                        if plan.bgr() {
                            for px in r0.iter_mut().chain(r1.iter_mut()) {
                                px.swap(0, 2);
                            }
                        }
                        let d1 = &mut pair[..tw * pixel_bytes];
                        piece_row(state, bf16, planes, r0, c0, tc, sc, dst);
                        piece_row(state, bf16, planes, r1, c0, tc, sc, d1);
                        paired = true;
                        k += tw;
                        continue;
                    }
                    // The next tile's same row (tiles along W are adjacent in the frame).
                    prefetch_row(plan, input, n as u64, y as u64, (x + tw) as u64, tw as u64);
                    plan.pixel_row_by(
                        &state.yuv,
                        input,
                        n as u64,
                        y as u64,
                        x as u64,
                        &mut raw[..tw],
                    );
                    piece_row(state, bf16, planes, &raw[..tw], c0, tc, sc, dst);
                    k += tw;
                    continue;
                }
                for w in 0..tw {
                    let px = &mut dst[k * pixel_bytes..(k + 1) * pixel_bytes];
                    for ch in 0..tc {
                        let mut e = row;
                        for (r, i) in [(2, w), (3, ch)] {
                            if let Some(s) = role_slot[r] {
                                e[s] += i;
                            }
                        }
                        let raw = pixels.get(e[0], e[1], e[2]);
                        let v = t[e[3]][usize::from(raw[e[3]])];
                        for (p, plane) in px.chunks_exact_mut(sc).enumerate() {
                            plane[ch] = (v >> (8 * p)) as u8;
                        }
                    }
                    for plane in px.chunks_exact_mut(sc) {
                        plane[tc..].fill(0);
                    }
                    k += 1;
                }
            }
        }
        dst[data..].fill(0);
        pos += size;
    }
}

/// Prefetch hints for the frame bytes of output pixels `(n, y, x0 + k)`, `k < count`, that
/// lie inside the frame: each plane's row piece (the shared chroma row of YUV formats),
/// clamped to `input`. A hint for the tile walk, whose 16 rows of a tile are 16 streams
/// through the frame; never a read.
fn prefetch_row(plan: &Plan, input: &[u8], n: u64, y: u64, x0: u64, count: u64) {
    let (f, b) = (plan.frame(), plan.border());
    let (Some(y), Some(x0)) = (y.checked_sub(b.top), x0.checked_sub(b.left)) else {
        return;
    };
    if y >= f.height || x0 >= f.width {
        return;
    }
    let count = count.min(f.width - x0);
    let base = n.saturating_mul(f.frame_stride);
    let piece = |plane: usize, row: u64, byte: u64, len: u64| {
        let p = &f.planes[plane];
        let start = base
            .saturating_add(p.offset)
            .saturating_add(row.saturating_mul(p.row_stride))
            .saturating_add(byte);
        let start = usize::try_from(start)
            .unwrap_or(usize::MAX)
            .min(input.len());
        let end = start
            .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
            .min(input.len());
        super::arch::prefetch(&input[start..end]);
    };
    match f.format {
        Format::NV12 => {
            piece(0, y, x0, count);
            piece(1, y / 2, x0 & !1, count + 1);
        }
        Format::I420 => {
            piece(0, y, x0, count);
            piece(1, y / 2, x0 / 2, count / 2 + 1);
            piece(2, y / 2, x0 / 2, count / 2 + 1);
        }
        format => piece(
            0,
            y,
            x0 * format.pixel_bytes(),
            count * format.pixel_bytes(),
        ),
    }
}

/// One tile row of `planes` byte planes (1: INT8, 2: BF16) from its row piece of raw
/// values `raw` ([`tile_row`]): INT8 through the affine map's blocks where the plan has
/// one, Compact three-channel BF16 through the BF16 lanes (`bf16`, where usable) and the
/// placed entries.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn piece_row(
    state: &State,
    bf16: Option<&Bf16>,
    planes: usize,
    raw: &[[u8; 3]],
    c0: usize,
    tc: usize,
    sc: usize,
    dst: &mut [u8],
) {
    let t = &state.tables.0;
    if planes == 1 {
        tile_row::<1>(t, state.affine.as_ref(), raw, c0, tc, sc, dst);
    } else if let Some(w) = state
        .placed
        .as_ref()
        .filter(|_| c0 == 0 && tc == 3 && sc == 3)
    {
        // Compact BF16: whole blocks in the lanes, the rest by the entries.
        let done = bf16.map_or(0, |b| b.pixels(raw.as_flattened(), dst));
        placed_pixels(w, &raw[done..], &mut dst[6 * done..]);
    } else {
        tile_row::<2>(t, None, raw, c0, tc, sc, dst);
    }
}

/// Prefetch hints for the `len` bytes of `input` that follow `piece`, a slice of `input`,
/// clamped to `input`; never a read.
#[inline]
fn prefetch_after(input: &[u8], piece: &[u8], len: usize) {
    let start = (piece.as_ptr() as usize)
        .wrapping_sub(input.as_ptr() as usize)
        .saturating_add(piece.len())
        .min(input.len());
    let end = start.saturating_add(len).min(input.len());
    super::arch::prefetch(&input[start..end]);
}

/// Compact three-channel BF16 pixels of raw values `raw` into `dst` (six bytes a pixel):
/// each pixel's six bytes as one OR of three [`Placed`] entries.
#[inline]
fn placed_pixels(w: &Placed, raw: &[[u8; 3]], dst: &mut [u8]) {
    for (px, r) in dst.as_chunks_mut::<6>().0.iter_mut().zip(raw) {
        let v = w.0[0][usize::from(r[0])] | w.0[1][usize::from(r[1])] | w.0[2][usize::from(r[2])];
        px.copy_from_slice(&v.to_le_bytes()[..6]);
    }
}

/// One tile row from a row piece of raw values `raw` (one per pixel): pixel `w` at
/// `dst[w · P · sc..]`, its plane `p` (`P` byte planes of `sc` stored channels) the byte
/// `p` of the table entry of each covered channel `c0..c0 + tc`, then zeros up to `sc`.
/// With `affine` (INT8, `P` = 1), packed three-channel rows go through its SIMD blocks.
#[inline(always)]
fn tile_row<const P: usize>(
    t: &[[u32; 256]; 3],
    affine: Option<&Affine>,
    raw: &[[u8; 3]],
    c0: usize,
    tc: usize,
    sc: usize,
    dst: &mut [u8],
) {
    if c0 == 0 && tc == 3 && sc == 3 {
        // Three channels stored as three (Compact): a fixed pattern per pixel.
        let done = affine.map_or(0, |a| a.pixels(raw, dst));
        let (raw, dst) = (&raw[done..], &mut dst[3 * P * done..]);
        for (px, r) in dst.chunks_exact_mut(3 * P).zip(raw) {
            let v = [
                t[0][usize::from(r[0])],
                t[1][usize::from(r[1])],
                t[2][usize::from(r[2])],
            ];
            for (p, plane) in px.chunks_exact_mut(3).enumerate() {
                for (y, v) in plane.iter_mut().zip(v) {
                    *y = (v >> (8 * p)) as u8;
                }
            }
        }
        return;
    }
    for (px, r) in dst.chunks_exact_mut(P * sc).zip(raw) {
        for (p, plane) in px.chunks_exact_mut(sc).enumerate() {
            for (ch, y) in plane[..tc].iter_mut().enumerate() {
                *y = (t[c0 + ch][usize::from(r[c0 + ch])] >> (8 * p)) as u8;
            }
            plane[tc..].fill(0);
        }
    }
}

/// One part of a split Preproc call: its share of the output (disjoint bytes) and what it
/// covers.
pub struct Part<'a> {
    input: &'a [u8],
    output: &'a mut [u8],
    work: Work,
}

#[derive(Debug, Clone)]
enum Work {
    /// Strided: slot index ranges, and the output byte the part's slice starts at.
    Strided {
        ranges: [Range<usize>; 4],
        base: usize,
    },
    /// Tiled: tiles in storage order.
    Tiled { tiles: Range<u64> },
}

impl fmt::Debug for Part<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Part")
            .field("output_bytes", &self.output.len())
            .field("work", &self.work)
            .finish()
    }
}

fn run_work(state: &State, input: &[u8], output: &mut [u8], work: &Work) {
    match (kind(&state.plan), work) {
        (Kind::Strided { bytes }, Work::Strided { ranges, base }) => {
            run_strided(state, bytes, input, output, ranges, *base);
        }
        (Kind::Tiled { planes }, Work::Tiled { tiles }) => {
            run_tiled(state, planes, input, output, tiles.clone());
        }
        _ => {}
    }
}

/// Preproc on the A65 (SPEC §13): the per-channel tables, one portable walker for strided
/// outputs and one for tiled outputs. Parts: strided outputs are cut along the output
/// axis of largest stride (its slabs are disjoint byte ranges by the nonoverlap proof),
/// tiled outputs into consecutive whole tiles.
impl HostOp for PreprocOp {
    type State = State;
    type Part<'a> = Part<'a>;

    fn prepare(plan: &Plan) -> State {
        // The best level, as the other ops choose it (scalar with `scalar-only`).
        let level = super::untess::Lanes::auto().level();
        let tables = tables(plan);
        State {
            plan: *plan,
            affine: Affine::new(plan, &tables, level),
            placed: matches!(plan.output(), PlanOutput::CastTess(_)).then(|| Placed::new(&tables)),
            bf16: Bf16::new(plan, &tables, level),
            tables,
            yuv: Yuv::at(level),
            level,
        }
    }

    fn prepare_at(plan: &Plan, level: Level) -> Result<State, LevelError> {
        level.check_detected()?;
        let tables = tables(plan);
        Ok(State {
            plan: *plan,
            affine: Affine::new(plan, &tables, level),
            placed: matches!(plan.output(), PlanOutput::CastTess(_)).then(|| Placed::new(&tables)),
            bf16: Bf16::new(plan, &tables, level),
            tables,
            yuv: Yuv::at(level),
            level,
        })
    }

    #[inline]
    fn plan(state: &State) -> &Plan {
        &state.plan
    }

    fn implementation(state: &State) -> &'static str {
        if let Some(a) = &state.affine {
            a.block.names()[1]
        } else if let Some(b) = state
            .bf16
            .as_ref()
            .filter(|_| !state.plan.frame().format.is_yuv())
        {
            b.block.names()[if b.map.steps == Steps::Mul { 2 } else { 3 }]
        } else if state.plan.frame().format.is_yuv() {
            state.yuv.implementation()
        } else {
            Yuv::Portable.implementation()
        }
    }

    fn level(state: &State) -> Level {
        state.level
    }

    /// The frame buffer's span (byte-aligned); the output span (FP32: 4-byte aligned,
    /// INT8: 1) or tiled capacity (16-byte aligned).
    fn needs(plan: &Plan) -> (PortNeed, PortNeed) {
        let align = match plan.output() {
            PlanOutput::F32(_) => 4,
            PlanOutput::I8(..) => 1,
            _ => TILE_ALIGN as usize,
        };
        (
            PortNeed {
                span: plan.input_span(),
                align: 1,
            },
            PortNeed {
                span: plan.output_span(),
                align,
            },
        )
    }

    fn uses_fp(_: &State) -> bool {
        false
    }

    fn run(state: &State, input: &[u8], output: &mut [u8]) {
        run_work(state, input, output, &whole(&state.plan));
    }

    fn partition<'a>(
        state: &State,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Vec<Part<'a>> {
        let plan = &state.plan;
        let parts = parts.max(1);
        let mut out = Vec::new();
        match plan.output() {
            PlanOutput::F32(view) | PlanOutput::I8(view, _) => {
                let e = extents4(plan);
                let s = strides4(plan, view);
                // The axis of largest stride among those of extent > 1.
                let Some(axis) = (0..4).filter(|&a| e[a] > 1).max_by_key(|&a| s[a]) else {
                    out.push(Part {
                        input,
                        output,
                        work: whole(plan),
                    });
                    return out;
                };
                let span = view.span() as usize;
                let rest = span - (e[axis] - 1) * s[axis];
                let count = parts.min(e[axis]);
                let mut remaining = output;
                let mut at = 0usize;
                for k in 0..count {
                    let (i0, i1) = (e[axis] * k / count, e[axis] * (k + 1) / count);
                    let (lo, hi) = (i0 * s[axis], (i1 - 1) * s[axis] + rest);
                    let (_, from) = core::mem::take(&mut remaining).split_at_mut(lo - at);
                    let (mine, tail) = from.split_at_mut(hi - lo);
                    remaining = tail;
                    at = hi;
                    let mut ranges = [0..e[0], 0..e[1], 0..e[2], 0..e[3]];
                    ranges[axis] = i0..i1;
                    out.push(Part {
                        input,
                        output: mine,
                        work: Work::Strided { ranges, base: lo },
                    });
                }
            }
            PlanOutput::QuantTess(view, _) | PlanOutput::CastTess(view) => {
                let total = view.outer_count() * view.tiles_per_outer();
                let count = (parts as u64).min(total.max(1));
                let bounds: Vec<u64> = (0..=count).map(|k| total * k / count).collect();
                // Byte offsets of the boundary tiles, in one walk.
                let mut offsets = Vec::with_capacity(bounds.len());
                let mut next = 0usize;
                for (i, tile) in view.tiles().enumerate() {
                    while next < bounds.len() && bounds[next] == i as u64 {
                        offsets.push(tile.offset as usize);
                        next += 1;
                    }
                }
                while offsets.len() < bounds.len() {
                    offsets.push(view.capacity() as usize);
                }
                let mut remaining = output;
                for k in 0..count as usize {
                    if bounds[k] == bounds[k + 1] {
                        continue;
                    }
                    let (mine, tail) =
                        core::mem::take(&mut remaining).split_at_mut(offsets[k + 1] - offsets[k]);
                    remaining = tail;
                    out.push(Part {
                        input,
                        output: mine,
                        work: Work::Tiled {
                            tiles: bounds[k]..bounds[k + 1],
                        },
                    });
                }
            }
        }
        out
    }

    fn run_part(state: &State, part: &mut Part<'_>) {
        run_work(state, part.input, part.output, &part.work);
    }
}

/// The work of the whole call.
fn whole(plan: &Plan) -> Work {
    match plan.output() {
        PlanOutput::F32(_) | PlanOutput::I8(..) => {
            let e = extents4(plan);
            Work::Strided {
                ranges: [0..e[0], 0..e[1], 0..e[2], 0..e[3]],
                base: 0,
            }
        }
        PlanOutput::QuantTess(v, _) | PlanOutput::CastTess(v) => Work::Tiled {
            tiles: 0..v.outer_count() * v.tiles_per_outer(),
        },
    }
}
