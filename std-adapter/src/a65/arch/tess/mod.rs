//! CastTess kernels: conversion to BF16 (SPEC §4) and the split into per-pixel byte planes
//! (SPEC §5).
//!
//! Two kernel kinds, chosen once per plan from a table built after runtime detection:
//!
//! - [`ConvertFn`]: a contiguous run of input elements → BF16 values as little-endian byte
//!   pairs, written once over `ConvertLanes` (`super::convert`: integer SIMD only); tails
//!   go through `simak_core::arith::cast`.
//! - [`SplitFn`]: pixel-major BF16 values (`tc` per pixel) → pixels of `sc` stored
//!   channels as two planes, `[lo × tc, 0 × (sc − tc), hi × tc, 0 × (sc − tc)]`, padding
//!   included. Written once over `SplitLanes` (`super::split`: x86-64 SSSE3 lanes inside
//!   AVX2 functions, AArch64 NEON) with the scalar [`fallback`].
//! - [`RowsFn`] (optional, per level): both in one pass over whole rows of compact small
//!   pixels, straight from the input rows to the output (x86-64 AVX-512 VBMI byte
//!   permutes), with no BF16 intermediate.
//! - [`BandFn`] (optional, per level): both over a whole band of tiles of 3-channel pixels
//!   in input order, 32 pixels per block into whole output vectors, with non-temporal
//!   stores on whole cache lines for outputs of at least [`STREAM_MIN`] bytes. Written
//!   once over `BandLanes` (`super::band`): every SIMD level has it (x86-64 AVX2,
//!   AVX-512, AVX-512 VBMI; AArch64 NEON, without non-temporal stores).
//!
//! The levels are those of the ISA table (`super::isa`), with the same names and features.

pub(crate) mod fallback;

use simak_core::DType;

use super::isa::Isa;
#[cfg(target_arch = "aarch64")]
use super::isa::Neon;
#[cfg(target_arch = "x86_64")]
use super::isa::{Avx2, Avx512, Avx512Vbmi};
use super::{band, convert, split};

/// Converts `output.len() / 2` elements (little-endian input of the kernel's dtype) into
/// BF16 little-endian byte pairs. `input` holds at least that many elements.
pub(crate) type ConvertFn = fn(input: &[u8], output: &mut [u8]);

/// Splits pixel-major BF16 values (`tc` per pixel, little-endian pairs in `bf`) into
/// `out.len() / (2·sc)` pixels of `2·sc` bytes each, padding channels zero. `bf` holds at
/// least `pixels · tc` values; `1 ≤ tc ≤ sc`.
pub(crate) type SplitFn = fn(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]);

/// Rows of compact pixels (`tc = sc`) for a [`RowsFn`]: row `r` holds `row_px` pixels of
/// `tc` input elements, contiguous from byte `r · in_stride` of `input`, and its
/// `2 · tc · row_px` output bytes start at byte `r · out_stride` of `out`.
// Only the x86-64 AVX-512 VBMI level has a rows kernel so far.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct Rows<'a> {
    /// Input from the first row.
    pub input: &'a [u8],
    /// Input bytes from one row to the next.
    pub in_stride: usize,
    /// Pixels per row.
    pub row_px: usize,
    /// Number of rows.
    pub rows: usize,
    /// Output from the first row.
    pub out: &'a mut [u8],
    /// Output bytes from one row to the next.
    pub out_stride: usize,
}

/// Converts and splits rows of `tc`-channel compact pixels in one pass; bytes between the
/// rows' outputs are untouched. Returns `false`, writing nothing, when the kernel does not
/// handle `tc` (whatever the rows). Panics when a row lies past `input` or `out`.
pub(crate) type RowsFn = fn(rows: Rows<'_>, tc: usize) -> bool;

/// One band of tiles for a [`BandFn`]: every W tile of one (outer, C, D, H) tile row, with
/// compact pixels of `tc` channels whose rows are contiguous in the input.
///
/// Tile row `k = d · th + h` (`d < td`, `h < th`) of W tile `iw` reads `px` pixels from input
/// byte `d · sd + h · sh + iw · tile_px · tc · E` and writes their `2 · tc · px` bytes at
/// output byte `iw · tile_stride + k · 2 · tc · px`, where `px` is `tile_px`, or `last_px`
/// for the last W tile. Bytes between the rows' outputs (tile padding) are untouched.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct Band<'a> {
    /// Input from the band's first element.
    pub input: &'a [u8],
    /// Tile depth and height (rows per tile: `td · th`).
    pub td: usize,
    /// See `td`.
    pub th: usize,
    /// Input bytes from one depth row to the next.
    pub sd: usize,
    /// Input bytes from one height row to the next.
    pub sh: usize,
    /// Pixels per row of every W tile but the last.
    pub tile_px: usize,
    /// Pixels per row of the last W tile (`1 ≤ last_px ≤ tile_px`).
    pub last_px: usize,
    /// Number of W tiles (≥ 1).
    pub tiles: usize,
    /// Output of the band from its first tile.
    pub out: &'a mut [u8],
    /// Output bytes from one W tile to the next.
    pub tile_stride: usize,
}

/// Converts and splits a whole [`Band`] of `tc`-channel compact pixels in one pass, with
/// non-temporal stores when `stream` (large outputs that will not be read back soon).
/// Returns `false`, writing nothing, when the kernel does not handle the band's shape.
/// Panics when a row lies past `input` or `out`.
pub(crate) type BandFn = fn(band: Band<'_>, tc: usize, stream: bool) -> bool;

/// Outputs of at least this many bytes are written with streaming stores where a kernel
/// has them: they do not fit the caches, so read-for-ownership traffic is pure loss.
pub(crate) const STREAM_MIN: usize = 4 << 20;

/// A CastTess kernel level: CastTess's private table of kernels, keyed by
/// [`Level`](crate::a65::Level) (`Level::tess_level`, [`TessLevel::level`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TessLevel {
    /// Portable scalar integer code.
    Scalar,
    /// x86-64 AVX2 with F16C (conversion in 256-bit lanes, split in 128-bit SSSE3 lanes),
    /// with the band kernel for compact 3-channel pixels.
    Avx2,
    /// x86-64 AVX-512 F/BW/VL (conversion in 512-bit lanes, split as AVX2), with the band
    /// kernel for compact 3-channel pixels.
    Avx512,
    /// x86-64 AVX-512 F/BW/VL/VBMI: as `Avx512`, plus conversion and split fused in
    /// registers for compact pixels of 2..=8 channels.
    Avx512Vbmi,
    /// AArch64 NEON, with the band kernel for compact 3-channel pixels (ordinary stores).
    Neon,
}

impl TessLevel {
    /// Every level, fastest first within each architecture; `Scalar` last.
    pub const ALL: [TessLevel; 5] = [
        TessLevel::Avx512Vbmi,
        TessLevel::Avx512,
        TessLevel::Avx2,
        TessLevel::Neon,
        TessLevel::Scalar,
    ];

    /// The levels automatic selection tries, in order: [`TessLevel::ALL`], or only
    /// [`TessLevel::Scalar`] when built with the `scalar-only` feature
    /// ([`SCALAR_ONLY`](super::SCALAR_ONLY)).
    pub const AUTO: &'static [TessLevel] = if super::SCALAR_ONLY {
        &[TessLevel::Scalar]
    } else {
        &TessLevel::ALL
    };

    /// The [`Level`](crate::a65::Level) of the same name.
    pub const fn level(self) -> crate::a65::Level {
        use crate::a65::Level;
        match self {
            TessLevel::Scalar => Level::Scalar,
            TessLevel::Avx2 => Level::Avx2,
            TessLevel::Avx512 => Level::Avx512,
            TessLevel::Avx512Vbmi => Level::Avx512Vbmi,
            TessLevel::Neon => Level::Neon,
        }
    }

    /// Diagnostic name.
    pub const fn name(self) -> &'static str {
        match self {
            TessLevel::Scalar => "scalar",
            TessLevel::Avx2 => super::isa::Avx2::NAME,
            TessLevel::Avx512 => super::isa::Avx512::NAME,
            TessLevel::Avx512Vbmi => super::isa::Avx512Vbmi::NAME,
            TessLevel::Neon => super::isa::Neon::NAME,
        }
    }
}

/// The kernels of one level for one input dtype.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TessKernels {
    /// Level the kernels belong to.
    pub level: TessLevel,
    /// Conversion of the plan's input dtype.
    pub convert: ConvertFn,
    /// Plane split.
    pub split: SplitFn,
    /// Conversion and split fused over whole rows, when the level has them.
    pub rows: Option<RowsFn>,
    /// Conversion and split fused over whole bands of tiles, when the level has them.
    pub band: Option<BandFn>,
}

/// The kernels of `level` for `dtype`, or `None` when this CPU lacks the level's features
/// (or `dtype` is not a CastTess input).
pub(crate) fn tess_kernels(level: TessLevel, dtype: DType) -> Option<TessKernels> {
    if !dtype.is_float() {
        return None;
    }
    let (convert, split, rows, band): (ConvertFn, SplitFn, Option<RowsFn>, Option<BandFn>) =
        match level {
            TessLevel::Scalar => (fallback::convert_fn(dtype)?, fallback::split, None, None),
            #[cfg(target_arch = "x86_64")]
            TessLevel::Avx2 => (
                convert::convert_fn::<Avx2>(dtype)?,
                split::split_fn::<Avx2>()?,
                None,
                Some(band::band_fn::<Avx2>(dtype)?),
            ),
            #[cfg(target_arch = "x86_64")]
            TessLevel::Avx512 => {
                Avx512::detect()?;
                (
                    convert::convert_fn::<Avx512>(dtype)?,
                    split::split_fn::<Avx2>()?,
                    None,
                    Some(band::band_fn::<Avx512>(dtype)?),
                )
            }
            #[cfg(target_arch = "x86_64")]
            TessLevel::Avx512Vbmi => (
                convert::convert_fn::<Avx512>(dtype)?,
                split::split_fn::<Avx2>()?,
                Some(super::x86_64::avx512vbmi::rows_fn(dtype)?),
                Some(band::band_fn::<Avx512Vbmi>(dtype)?),
            ),
            #[cfg(target_arch = "aarch64")]
            TessLevel::Neon => (
                convert::convert_fn::<Neon>(dtype)?,
                split::split_fn::<Neon>()?,
                None,
                Some(band::band_fn::<Neon>(dtype)?),
            ),
            #[allow(unreachable_patterns)]
            _ => return None,
        };
    Some(TessKernels {
        level,
        convert,
        split,
        rows,
        band,
    })
}

/// Hints the CPU to fetch `bytes` into the caches (one hint per 64-byte line). Never
/// faults and changes no memory; a no-op off x86-64.
#[inline]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let mut at = 0;
        while at < bytes.len() {
            let line = bytes.as_ptr().wrapping_add(at);
            // SAFETY: a prefetch hint never faults and has no architectural effect; `line`
            // points into `bytes` anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.cast()) };
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = bytes;
    }
}
