//! `simak-qualify correctness`: the correctness catalogue on both backends against
//! the independent oracles, with no timing.
//!
//! The cases are data generated from fixed seeds (their definitions never change with the
//! code under test):
//!
//! - `correct/quant/<dtype>/<nnn>`: 300 per dtype, rank 0 to 6 with empty and singleton
//!   axes, independent input and output layouts (random physical axis orders, row gaps,
//!   singleton axes with arbitrary strides), random parameters (normal, power-of-two and
//!   subnormal multipliers, any zero point, every rounding mode) and values biased to
//!   special ones. Checked per element against the f64 oracle (`simak_tests::oracle`) at
//!   offsets computed here; every output byte no element maps to must keep its fill.
//! - CastTess (`simak_tests::tiled`: the SPEC §4 conversions and the plain-loop SPEC §5
//!   layout oracle), the full physical output padding included, and guard bytes past it:
//!   `correct/casttess/random/<dtype>/<nnn>` 300 per dtype; `…/large/<dtype>/<nn>` 33 per
//!   dtype (channel panels above 4096 stored values, and large spatial tiles);
//!   `…/hcontig/<dtype>/<name>` 10 per dtype at the H-contiguous eligibility boundary (one
//!   regular panel, H > 1, H stride of one element, a W pitch that fits a signed 32-bit
//!   value, at least 128 input bytes: cases on both sides of each condition);
//!   `…/bf16-tail/<name>` the four strided BF16 tail cases of the EV74 short-row gathers
//!   (`simak_tests::bf16_tails`: W, H, D and outer boundaries, two compact and two Pad16),
//!   whose EV74 runs must also move the table's exact-width and direct rows
//!   (`TessStats::exact_width_rows`, `TessStats::source_direct_rows`, both nonzero);
//!   `…/empty/<n>` 3; `…/sweep/<dtype>/<layout>` every FP16 and BF16 bit pattern through an
//!   ordinary and an H-contiguous layout (4).
//!
//! - `correct/quanttess/random/<dtype>/<nnn>`: 100 per dtype, random shapes, layouts,
//!   strides and parameters as the Quant and CastTess cases; the expected buffer is the
//!   f64 Quant oracle placed by the SPEC §5 layout oracle. A65 only (no EV74 entry).
//!
//! - The output side (SPEC §12), A65 only (no EV74 entry): `correct/detess/random/<dtype>/<nnn>`,
//!   `correct/detesscast/random/bf16/<nnn>` and `correct/detessdequant/random/<dtype>/<nnn>`,
//!   30 heads per dtype (INT8, INT16, INT32, BF16; one in two converted: BF16 by DetessCast,
//!   the integers by DetessDequant into FP32, FP16 or BF16 with random multipliers and zero
//!   points), each a random head of 1–3 frames in every encoding and alignment
//!   (`simak_tests::detess::random_head`), its OFM bytes random, its output strided with
//!   gaps; expected from the SPEC §12.1 byte oracle (`simak_tests::detess`) and the exact
//!   SPEC §12.2 reference (`simak_tests::dequant`). `correct/dequant/random/<dtype>/<nnn>`:
//!   30 per integer dtype, random shapes and strides on both ports, random codes and
//!   parameters, every output dtype, against the same exact reference.
//!
//! - Preproc (SPEC §13), A65 only (no EV74 entry): `correct/preproc/random/<format>/<nn>`, 12
//!   per frame format, random frames (planes in random order with gaps, odd row strides,
//!   batches of none to 2, up to 70 pixels wide), borders, normalizations, channel orders
//!   and pad values, into FP32 and INT8 at random strides and QuantTess and CastTess in
//!   random layouts, in turn; expected: the FP32 tensor of the independent SPEC §13 oracle
//!   (`simak_tests::preproc`: the formats, the border, the YUV integer formula restated, the
//!   normalization in native binary32) through the f64 Quant oracle, §4's BF16 rule and the
//!   SPEC §5 layout oracle.
//!
//! Each case runs on the A65 at every Quant route or CastTess kernel level this CPU has
//! (`prepare_at`; automatic selection picks one of them) and
//! on the simulated EV74 (`run_sim`, workers 1 to 4 in turn), into dirty output buffers
//! with guard bytes.

use std::ops::Range;

use simak::a65;
use simak::a65::Level;
use simak::ev74;
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::{self, TiledSpec};
use simak::ops::preproc::{self, Border, Format, Normalize, Output};
use simak::ops::quant::{self, Params, Rounding};
use simak::ops::{self, Dequant, Detess, DetessCast, DetessDequant};
use simak::ops::{dequant, detess, detesscast, detessdequant, quanttess};
use simak::{DType, DynSpec};
use simak_tests::bf16_tails;
use simak_tests::bytes::Aligned;
use simak_tests::detess::{Head, output_spec, random_head};
use simak_tests::hcontig::{self, ordered};
use simak_tests::oracle;
use simak_tests::preproc::{Setup, random_frame};
use simak_tests::rng::Rng;
use simak_tests::tiled::{oracle_bf16, oracle_tiled, random_bits};

use super::catalogue::DTYPES;
use super::measure::for_each_offset;

/// QuantTess cases per dtype (`correct/quanttess/random/<dtype>/<nnn>`).
pub const QUANTTESS_PER_DTYPE: usize = 100;
/// Bytes past each output's span that must stay untouched.
const GUARD: usize = 32;
/// The fill of output buffers and guards.
const DIRTY: u8 = 0xa5;

/// One correctness case.
#[derive(Debug, Clone)]
pub struct Case {
    /// The stable ID.
    pub id: String,
    /// Group: `quant`, `casttess-random`, `quanttess-random`, `casttess-large`,
    /// `casttess-hcontig`, `casttess-bf16-tail`, `casttess-empty`, `casttess-sweep`,
    /// `detess-random`, `detesscast-random`, `detessdequant-random`, `dequant-random` or
    /// `preproc-random`.
    pub group: &'static str,
    /// Input dtype.
    pub dtype: DType,
    /// Logical extents.
    pub shape: Vec<u64>,
    /// Input byte strides (the output-side Detess cases: the output's, in the head's
    /// element size; their input is the head's tiled bytes).
    pub strides: Vec<u64>,
    /// What the case converts into.
    pub target: Target,
    /// Seed of the input bytes; `None`: the values are every 16-bit pattern in order.
    pub seed: Option<u64>,
    /// The source rows the EV74 run must move on each short-row path (checked from the
    /// firmware's report beside the bytes); `None`: the path is not checked.
    pub ev74_rows: Option<Ev74Rows>,
}

/// Source rows of one EV74 CastTess call on the short-row paths of SPEC §8, as the firmware
/// reports them in `TessStats` (the same in one call with any worker count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ev74Rows {
    /// Rows moved by one BF16 exact-width 2D DMA command each
    /// (`TessStats::exact_width_rows`).
    pub exact_width: u64,
    /// Rows read with direct loads (`TessStats::source_direct_rows`).
    pub direct: u64,
}

impl Ev74Rows {
    /// How `tess`, the report of one run, differs from these rows, as text.
    fn difference(&self, tess: &ev74::firmware::TessStats) -> Option<String> {
        let got = Ev74Rows {
            exact_width: tess.exact_width_rows,
            direct: tess.source_direct_rows,
        };
        (got != *self).then(|| {
            format!(
                "EV74 path: {} exact-width rows and {} direct rows, expected {} and {}",
                got.exact_width, got.direct, self.exact_width, self.direct
            )
        })
    }
}

/// The output of a case.
#[derive(Debug, Clone)]
pub enum Target {
    /// Quant into INT8 with these byte strides and parameters.
    Quant {
        /// Output byte strides.
        strides: Vec<u64>,
        /// Parameters.
        params: Params,
        /// Output bytes before the port inside the buffer (any phase: no alignment).
        phase: usize,
    },
    /// CastTess into this layout.
    Tiled(MlaTiled),
    /// QuantTess into this layout with these parameters (A65 only: no EV74 entry).
    QuantTiled {
        /// The output layout.
        layout: MlaTiled,
        /// Parameters.
        params: Params,
    },
    /// Detess, DetessCast or DetessDequant of one head (A65 only: no EV74 entry).
    Detess {
        /// The head (its output strides in its own element size).
        head: Head,
        /// The conversion after the read-back.
        convert: Convert,
    },
    /// Preproc of a camera frame (A65 only): the case's `dtype` is FP32 and its `shape` the
    /// output extents (SPEC §13's equivalent tensor), its `strides` the strided output's.
    Preproc {
        /// The frame and parameters.
        setup: Setup,
        /// The output.
        out: PreprocOut,
    },
    /// Dequant into `out` with these output byte strides (A65 only).
    Dequant {
        /// Output byte strides.
        strides: Vec<u64>,
        /// Output dtype: FP32, FP16 or BF16.
        out: DType,
        /// Parameters.
        params: dequant::Params,
    },
}

/// The output of a Preproc case (SPEC §13).
#[derive(Debug, Clone)]
pub enum PreprocOut {
    /// FP32 at the case's strides.
    F32,
    /// INT8 (Quant) at the case's strides.
    I8(Params),
    /// INT8 `MlaTiled` (QuantTess).
    QuantTess(MlaTiled, Params),
    /// BF16 `MlaTiled` (CastTess).
    CastTess(MlaTiled),
}

/// The conversion of an output-side case (SPEC §12).
#[derive(Debug, Clone, Copy)]
pub enum Convert {
    /// Detess: the head's own dtype.
    None,
    /// DetessCast: BF16 → FP32.
    Cast,
    /// DetessDequant into `out` with `params`.
    Dequant {
        /// Output dtype: FP32, FP16 or BF16.
        out: DType,
        /// Parameters.
        params: dequant::Params,
    },
}

impl Convert {
    /// The output dtype for a head of `dtype`.
    fn out(self, dtype: DType) -> DType {
        match self {
            Convert::None => dtype,
            Convert::Cast => DType::F32,
            Convert::Dequant { out, .. } => out,
        }
    }
}

/// Input span in bytes of `shape` with byte `strides`, elements of `elem` bytes.
fn span(shape: &[u64], strides: &[u64], elem: u64) -> u64 {
    if shape.contains(&0) {
        return 0;
    }
    elem + shape
        .iter()
        .zip(strides)
        .map(|(&e, &s)| (e - 1) * s)
        .sum::<u64>()
}

/// Random byte strides for `shape`: a random physical axis order (or row-major), each
/// axis's stride the run of the faster ones plus a gap of up to 2 elements; singleton axes
/// sometimes carry an arbitrary stride.
fn random_strides(rng: &mut Rng, shape: &[u64], elem: u64) -> Vec<u64> {
    let rank = shape.len();
    let mut order: Vec<usize> = (0..rank).collect();
    let packed = rng.chance(1, 4);
    if !packed {
        rng.shuffle(&mut order);
    }
    let mut strides = vec![0u64; rank];
    let mut run = elem;
    for &a in order.iter().rev() {
        let gap = if packed || rng.chance(1, 2) {
            0
        } else {
            rng.below(3) * elem
        };
        strides[a] = run + gap;
        run = strides[a] * shape[a].max(1);
    }
    for a in 0..rank {
        if shape[a] == 1 && rng.chance(1, 3) {
            strides[a] = rng.below(1000) * elem;
        }
    }
    strides
}

/// A random shape of rank `min_rank` to 6 (at most 3000 elements at rank 1, 6400 at rank
/// 2, 6^rank above; sometimes empty).
fn random_shape(rng: &mut Rng, min_rank: u64) -> Vec<u64> {
    let rank = min_rank + rng.below(7 - min_rank);
    let mut shape: Vec<u64> = (0..rank)
        .map(|_| match rng.below(10) {
            0 => 1,
            1 => 0,
            2..=4 => 1 + rng.below(3),
            _ => {
                1 + rng.below(match rank {
                    1 => 3000,
                    2 => 80,
                    _ => 6,
                })
            }
        })
        .collect();
    // Mostly nonempty: an extent 0 stays in about one case in 12.
    if shape.contains(&0) && !rng.chance(1, 2) {
        for e in shape.iter_mut().filter(|e| **e == 0) {
            *e = 2;
        }
    }
    shape
}

/// A random multiplier: normal near the INT8 range, any normal, a power of two, subnormal.
fn random_multiplier(rng: &mut Rng) -> u32 {
    match rng.below(4) {
        0 => ((rng.range_i64(120, 134) as u32) << 23) | (rng.next_u32() & 0x7f_ffff),
        1 => ((rng.range_i64(1, 254) as u32) << 23) | (rng.next_u32() & 0x7f_ffff),
        2 => simak_tests::profiles::power_of_two(rng.range_i64(-149, 127) as i32),
        _ => (rng.next_u32() & 0x7f_ffff) | 1,
    }
}

/// A random layout over `shape`: roles on distinct axes, random tiles, either channel mode.
fn random_layout(rng: &mut Rng, shape: &[u64]) -> MlaTiled {
    let mut free: Vec<u8> = (0..shape.len() as u8).collect();
    rng.shuffle(&mut free);
    let mut axes = [None; 4];
    for slot in axes.iter_mut() {
        if !free.is_empty() && rng.chance(3, 4) {
            *slot = free.pop();
        }
    }
    let mut tile = [1u32; 4];
    for (t, a) in tile.iter_mut().zip(axes) {
        if let Some(a) = a {
            let e = shape[a as usize];
            *t = if e == 0 {
                1 + rng.below(4) as u32
            } else if rng.chance(1, 4) {
                e as u32
            } else {
                1 + rng.below(e) as u32
            };
        }
    }
    let channels = if rng.chance(1, 2) {
        Channels::Compact
    } else {
        Channels::PadTo16
    };
    MlaTiled::new(axes, tile, channels)
}

fn dtype_seed(dtype: DType) -> u64 {
    match dtype {
        DType::F32 => 1,
        DType::BF16 => 2,
        _ => 3,
    }
}

fn hwc(axes_c_last: bool) -> [Option<u8>; 4] {
    if axes_c_last {
        [None, Some(0), Some(1), Some(2)]
    } else {
        [None, None, Some(0), Some(1)]
    }
}

/// The H-contiguous boundary cases of one dtype (`simak_tests::hcontig`, one table with
/// the std-adapter EV74 tests): one regular panel (tile = whole tensor), H > 1, H stride 1
/// element, ≥ 128 input bytes, each condition crossed.
pub fn hcontig_cases(dtype: DType) -> Vec<Case> {
    hcontig::cases(dtype)
        .into_iter()
        .map(|c| Case {
            id: format!("correct/casttess/hcontig/{}/{}", dtype.name(), c.name),
            group: "casttess-hcontig",
            dtype,
            seed: Some(0x4c07 + dtype_seed(dtype) * 100 + c.name.len() as u64),
            ev74_rows: None,
            shape: c.shape,
            strides: c.strides,
            target: Target::Tiled(c.layout),
        })
        .collect()
}

/// The four strided BF16 tail cases of the EV74 short-row gathers (`simak_tests::bf16_tails`,
/// one table with the std-adapter EV74 tests): W, H, D and outer boundaries, two compact and
/// two Pad16, each mixing exact-width rows and direct rows in the table's counts.
pub fn bf16_tail_cases() -> Vec<Case> {
    bf16_tails::cases()
        .into_iter()
        .enumerate()
        .map(|(i, c)| Case {
            id: format!("correct/casttess/bf16-tail/{}", c.name),
            group: "casttess-bf16-tail",
            dtype: DType::BF16,
            seed: Some(0xbf16_7a11 + i as u64),
            shape: c.shape,
            strides: c.strides,
            target: Target::Tiled(c.layout),
            ev74_rows: Some(Ev74Rows {
                exact_width: c.exact_width_rows,
                direct: c.direct_rows,
            }),
        })
        .collect()
}

/// The 33 large-panel and spatial cases of one dtype.
fn large_cases(dtype: DType) -> Vec<Case> {
    let e = dtype.size() as u64;
    let mut rng = Rng::new(0x1a76e + dtype_seed(dtype));
    (0..33)
        .map(|i| {
            let (shape, layout) = match i % 3 {
                // Channel panels: more than 4096 stored channels, a multiple of 16 or not.
                0 | 1 => {
                    let c = if i % 3 == 0 {
                        4096 + 16 * (1 + rng.below(64))
                    } else {
                        4097 + rng.below(300)
                    };
                    let w = 1 + rng.below(3);
                    let channels = if rng.chance(1, 2) {
                        Channels::Compact
                    } else {
                        Channels::PadTo16
                    };
                    (
                        vec![w, c],
                        MlaTiled::new(
                            hwc(false),
                            [1, 1, 1 + rng.below(w) as u32, c as u32],
                            channels,
                        ),
                    )
                }
                // Large spatial tiles over few channels.
                _ => {
                    let (h, w, c) = (16 + rng.below(81), 32 + rng.below(97), 1 + rng.below(4));
                    let tile = [1, (h / (1 + rng.below(2))) as u32, w as u32, c as u32];
                    let channels = if rng.chance(1, 2) {
                        Channels::Compact
                    } else {
                        Channels::PadTo16
                    };
                    (vec![h, w, c], MlaTiled::new(hwc(true), tile, channels))
                }
            };
            let strides = random_strides(&mut rng, &shape, e);
            Case {
                id: format!("correct/casttess/large/{}/{i:02}", dtype.name()),
                group: "casttess-large",
                dtype,
                shape,
                strides,
                target: Target::Tiled(layout),
                seed: Some(rng.next_u64()),
                ev74_rows: None,
            }
        })
        .collect()
}

/// The whole correctness catalogue, in its fixed order.
pub fn catalogue() -> Vec<Case> {
    let mut out = Vec::new();
    for dtype in DTYPES {
        let e = dtype.size() as u64;
        let mut rng = Rng::new(0x9a17_0000 + dtype_seed(dtype));
        for i in 0..300 {
            let shape = random_shape(&mut rng, 0);
            let strides = random_strides(&mut rng, &shape, e);
            let out_strides = random_strides(&mut rng, &shape, 1);
            let params = Params::from_bits(random_multiplier(&mut rng))
                .with_zero_point(rng.range_i64(-128, 127) as i32)
                .with_rounding(*rng.pick(&Rounding::ALL));
            out.push(Case {
                id: format!("correct/quant/{}/{i:03}", dtype.name()),
                group: "quant",
                dtype,
                shape,
                strides,
                target: Target::Quant {
                    strides: out_strides,
                    params,
                    phase: rng.below(16) as usize,
                },
                seed: Some(rng.next_u64()),
                ev74_rows: None,
            });
        }
    }
    for dtype in DTYPES {
        let e = dtype.size() as u64;
        let mut rng = Rng::new(0xca57_0000 + dtype_seed(dtype));
        for i in 0..300 {
            let shape = random_shape(&mut rng, 1);
            let layout = random_layout(&mut rng, &shape);
            let strides = random_strides(&mut rng, &shape, e);
            out.push(Case {
                id: format!("correct/casttess/random/{}/{i:03}", dtype.name()),
                group: "casttess-random",
                dtype,
                shape,
                strides,
                target: Target::Tiled(layout),
                seed: Some(rng.next_u64()),
                ev74_rows: None,
            });
        }
    }
    for dtype in DTYPES {
        let e = dtype.size() as u64;
        let mut rng = Rng::new(0x9747_0000 + dtype_seed(dtype));
        for i in 0..QUANTTESS_PER_DTYPE {
            let shape = random_shape(&mut rng, 1);
            let layout = random_layout(&mut rng, &shape);
            let strides = random_strides(&mut rng, &shape, e);
            let params = Params::from_bits(random_multiplier(&mut rng))
                .with_zero_point(rng.range_i64(-128, 127) as i32)
                .with_rounding(*rng.pick(&Rounding::ALL));
            out.push(Case {
                id: format!("correct/quanttess/random/{}/{i:03}", dtype.name()),
                group: "quanttess-random",
                dtype,
                shape,
                strides,
                target: Target::QuantTiled { layout, params },
                seed: Some(rng.next_u64()),
                ev74_rows: None,
            });
        }
    }
    for dtype in DTYPES {
        out.extend(large_cases(dtype));
    }
    for dtype in DTYPES {
        out.extend(hcontig_cases(dtype));
    }
    out.extend(bf16_tail_cases());
    for (i, (dtype, shape)) in [
        (DType::F32, [0u64, 4, 3]),
        (DType::BF16, [5, 0, 2]),
        (DType::F16, [3, 2, 0]),
    ]
    .into_iter()
    .enumerate()
    {
        let strides = ordered(&shape, &[0, 1, 2], dtype.size() as u64, None);
        out.push(Case {
            id: format!("correct/casttess/empty/{i}"),
            group: "casttess-empty",
            dtype,
            shape: shape.to_vec(),
            strides,
            target: Target::Tiled(MlaTiled::new(hwc(true), [1, 1, 1, 1], Channels::PadTo16)),
            seed: Some(i as u64),
            ev74_rows: None,
        });
    }
    for dtype in [DType::F16, DType::BF16] {
        // Ordinary: [W = 4096, C = 16] channel-last, tiles of 64 pixels.
        out.push(Case {
            id: format!("correct/casttess/sweep/{}/ordinary", dtype.name()),
            group: "casttess-sweep",
            dtype,
            shape: vec![4096, 16],
            strides: vec![32, 2],
            target: Target::Tiled(MlaTiled::new(hwc(false), [1, 1, 64, 16], Channels::Compact)),
            seed: None,
            ev74_rows: None,
        });
        // H-contiguous: [H = 16, W = 64, C = 64], H fastest in memory, tiles that each take
        // the EV74 whole-panel H-contiguous path (`simak_tests::hcontig::sweep`).
        let (shape, strides, layout) = hcontig::sweep();
        out.push(Case {
            id: format!("correct/casttess/sweep/{}/hcontig", dtype.name()),
            group: "casttess-sweep",
            dtype,
            shape,
            strides,
            target: Target::Tiled(layout),
            seed: None,
            ev74_rows: None,
        });
    }
    out.extend(output_side_cases());
    out.extend(preproc_cases());
    out
}

/// Output-side heads per dtype (`detess-random`, `detesscast-random`,
/// `detessdequant-random`).
pub const DETESS_PER_DTYPE: usize = 30;
/// Dequant cases per integer dtype (`dequant-random`).
pub const DEQUANT_PER_DTYPE: usize = 30;

/// Random output-side parameters for `dtype` (an integer dtype): a multiplier of any
/// class (normal, power of two, subnormal) and a zero point in the dtype's range (INT32:
/// within ±10^6 or at the ends).
fn random_dequant_params(rng: &mut Rng, dtype: DType) -> dequant::Params {
    let (lo, hi) = dtype.int_range().expect("an integer dtype");
    let zero_point = match rng.below(4) {
        0 => lo,
        1 => hi,
        _ => rng.range_i64(lo.max(-1_000_000), hi.min(1_000_000)),
    };
    dequant::Params::from_bits(random_multiplier(rng)).with_zero_point(zero_point as i32)
}

/// The output-side cases (SPEC §12): Detess, DetessCast and DetessDequant heads, then
/// Dequant.
fn output_side_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (d, dtype) in [DType::I8, DType::I16, DType::I32, DType::BF16]
        .into_iter()
        .enumerate()
    {
        let mut rng = Rng::new(0xde7e_0000 + d as u64);
        for i in 0..DETESS_PER_DTYPE {
            let head = random_head(&mut rng, 1 + i % 3, dtype);
            let convert = match (i % 2, dtype) {
                (0, _) => Convert::None,
                (_, DType::BF16) => Convert::Cast,
                _ => Convert::Dequant {
                    out: *rng.pick(&[DType::F32, DType::F16, DType::BF16]),
                    params: random_dequant_params(&mut rng, dtype),
                },
            };
            let (op, group) = match convert {
                Convert::None => ("detess", "detess-random"),
                Convert::Cast => ("detesscast", "detesscast-random"),
                Convert::Dequant { .. } => ("detessdequant", "detessdequant-random"),
            };
            out.push(Case {
                id: format!("correct/{op}/random/{}/{i:03}", dtype.name()),
                group,
                dtype,
                shape: head.shape.iter().map(|&e| e as u64).collect(),
                strides: head.out_strides.iter().map(|&s| s as u64).collect(),
                target: Target::Detess { head, convert },
                seed: Some(rng.next_u64()),
                ev74_rows: None,
            });
        }
    }
    for (d, dtype) in [DType::I8, DType::I16, DType::I32].into_iter().enumerate() {
        let e = dtype.size() as u64;
        let mut rng = Rng::new(0xdea9_0000 + d as u64);
        for i in 0..DEQUANT_PER_DTYPE {
            let shape = random_shape(&mut rng, 0);
            let strides = random_strides(&mut rng, &shape, e);
            let out_dtype = *rng.pick(&[DType::F32, DType::F16, DType::BF16]);
            let out_strides = random_strides(&mut rng, &shape, out_dtype.size() as u64);
            out.push(Case {
                id: format!("correct/dequant/random/{}/{i:03}", dtype.name()),
                group: "dequant-random",
                dtype,
                shape,
                strides,
                target: Target::Dequant {
                    strides: out_strides,
                    out: out_dtype,
                    params: random_dequant_params(&mut rng, dtype),
                },
                seed: Some(rng.next_u64()),
                ev74_rows: None,
            });
        }
    }
    out
}

/// Preproc cases per format (`correct/preproc/random/<format>/<nn>`).
pub const PREPROC_PER_FORMAT: usize = 12;

/// The Preproc cases (SPEC §13): per format, random frames (planes in random order with
/// gaps, odd row strides, batches of none to 2, widths up to 70 pixels so that every level's
/// blocks and tails run), borders, normalizations (per channel or once, negative std),
/// channel orders and pad values, into each output in turn: FP32 and INT8 at random strides,
/// QuantTess and CastTess in random layouts.
fn preproc_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (f, format) in Format::ALL.into_iter().enumerate() {
        let mut rng = Rng::new(0x26_9a00 + f as u64);
        let even = format.is_yuv();
        for i in 0..PREPROC_PER_FORMAT {
            let dim = |rng: &mut Rng, max: u64| {
                let v = 1 + rng.below(max);
                if even { v.next_multiple_of(2) } else { v }
            };
            let (h, w) = (dim(&mut rng, 6), dim(&mut rng, 70));
            let batch = *rng.pick(&[None, Some(1), Some(2)]);
            let (frame, _) = random_frame(&mut rng, format, h, w, batch);
            let c = format.channels();
            let per = |rng: &mut Rng, lo: f32, span: f32| -> Vec<f32> {
                let n = if rng.chance(1, 2) { 1 } else { c };
                (0..n)
                    .map(|_| lo + span * (rng.below(1000) as f32 / 1000.0))
                    .collect()
            };
            let mut std = per(&mut rng, 0.05, 1.0);
            if rng.chance(1, 4) {
                std[0] = -std[0];
            }
            let border = if rng.chance(1, 3) {
                Border {
                    top: rng.below(3),
                    bottom: rng.below(3),
                    left: rng.below(3),
                    right: rng.below(3),
                }
            } else {
                Border::default()
            };
            let setup = Setup {
                frame,
                divisor: *rng.pick(&[255.0, 1.0, 127.5, 3.0]),
                mean: per(&mut rng, -0.5, 1.0),
                std,
                bgr: rng.chance(1, 2),
                border,
                pad: (0..if rng.chance(1, 2) { 1 } else { c })
                    .map(|_| rng.next_u32() as u8)
                    .collect(),
            };
            let shape = setup.extents();
            let params = Params::new(*rng.pick(&[1.0f32, 40.0, 127.0, 0.8]))
                .with_zero_point(rng.range_i64(-20, 20) as i32)
                .with_rounding(*rng.pick(&Rounding::ALL));
            let (strides, out_kind) = match i % 4 {
                0 => (random_strides(&mut rng, &shape, 4), PreprocOut::F32),
                1 => (random_strides(&mut rng, &shape, 1), PreprocOut::I8(params)),
                2 => (
                    Vec::new(),
                    PreprocOut::QuantTess(random_layout(&mut rng, &shape), params),
                ),
                _ => (
                    Vec::new(),
                    PreprocOut::CastTess(random_layout(&mut rng, &shape)),
                ),
            };
            out.push(Case {
                id: format!("correct/preproc/random/{format}/{i:02}"),
                group: "preproc-random",
                dtype: DType::F32,
                shape,
                strides,
                target: Target::Preproc {
                    setup,
                    out: out_kind,
                },
                seed: Some(rng.next_u64()),
                ev74_rows: None,
            });
        }
    }
    out
}

/// The request of a Preproc case.
fn preproc_request<'a>(
    case: &'a Case,
    setup: &'a Setup,
    out: &'a PreprocOut,
) -> preproc::Request<'a> {
    preproc::Request {
        frame: setup.frame,
        normalize: Normalize {
            divisor: setup.divisor,
            mean: &setup.mean,
            std: &setup.std,
        },
        bgr: setup.bgr,
        border: setup.border,
        pad_value: &setup.pad,
        output: match out {
            PreprocOut::F32 => Output::F32 {
                strides: Some(&case.strides),
            },
            PreprocOut::I8(params) => Output::I8 {
                strides: Some(&case.strides),
                params: *params,
            },
            PreprocOut::QuantTess(layout, params) => Output::QuantTess {
                layout: *layout,
                params: *params,
            },
            PreprocOut::CastTess(layout) => Output::CastTess { layout: *layout },
        },
    }
}

/// One mismatch.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Mismatch {
    /// The case ID.
    pub id: String,
    /// `a65 (<route or level>)` or `ev74-sim (<N> workers)`.
    pub backend: String,
    /// What differs.
    pub detail: String,
}

/// The input bytes of `case` (the span from its first element).
fn input_of(case: &Case) -> (Vec<u8>, Vec<u32>) {
    let mut rng = Rng::new(case.seed.unwrap_or(0));
    if let Target::Detess { head, .. } = &case.target {
        // The head's tiled bytes, padding included, all random.
        return (
            (0..head.span()).map(|_| rng.next_u32() as u8).collect(),
            Vec::new(),
        );
    }
    if let Target::Preproc { setup, .. } = &case.target {
        // The frame's buffer, gaps included, all random; the oracle's FP32 tensor.
        let f = &setup.frame;
        let len = (f.batch.unwrap_or(1).max(1) * f.frame_stride) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        let bits = setup.tensor(&bytes).iter().map(|v| v.to_bits()).collect();
        return (bytes, bits);
    }
    let elem = case.dtype.size();
    let len = span(&case.shape, &case.strides, elem as u64) as usize;
    let n: usize = case.shape.iter().product::<u64>() as usize;
    // Holes get random bytes: nothing may read them into the result.
    let mut bytes: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
    let bits: Vec<u32> = match case.seed {
        None => (0..n as u32).map(|b| b & 0xffff).collect(),
        Some(_) if case.dtype.is_int() => (0..n).map(|_| rng.next_u32()).collect(),
        Some(_) => (0..n).map(|_| random_bits(&mut rng, case.dtype)).collect(),
    };
    let mut k = 0;
    for_each_offset(&case.shape, &case.strides, |at| {
        bytes[at..at + elem].copy_from_slice(&bits[k].to_le_bytes()[..elem]);
        k += 1;
    });
    (bytes, bits)
}

/// The first difference between `got` and `want`, as text.
fn first_difference(got: &[u8], want: &[u8]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} bytes, expected {}", got.len(), want.len()));
    }
    got.iter().zip(want).position(|(a, b)| a != b).map(|k| {
        format!(
            "byte {k} of {} is {:#04x}, expected {:#04x}",
            want.len(),
            got[k],
            want[k]
        )
    })
}

/// What the backends wrote into one dirty output buffer of `len` + guard bytes: the A65
/// once per route or kernel level this CPU has (named by its implementation), the EV74
/// once (`None` for QuantTess, which has no EV74 entry).
struct Outputs {
    a65: Vec<(String, Result<Vec<u8>, String>)>,
    ev74: Option<Result<Vec<u8>, String>>,
    /// CastTess: the firmware's data-movement report of the EV74 run (`None` when it
    /// failed or submitted nothing).
    ev74_tess: Option<ev74::firmware::TessStats>,
}

/// Runs `plan` at every A65 route or kernel level this CPU has (named by its
/// implementation), each on a `len`-byte buffer filled with [`DIRTY`] (16-byte aligned when
/// `aligned`), the output port at `port` of it, on `threads` threads.
fn each_a65<O: a65::HostOp>(
    plan: &O::Plan,
    input: &[u8],
    len: usize,
    aligned: bool,
    port: Range<usize>,
    threads: usize,
) -> Vec<(String, Result<Vec<u8>, String>)> {
    Level::ALL
        .iter()
        .rev()
        .filter_map(|&l| a65::Prepared::<O>::at(plan, l).ok())
        .map(|p| {
            let run = |out: &mut [u8]| {
                a65::execute_threaded(&p, threads, input, &mut out[port.clone()])
                    .map_err(|e| e.to_string())
            };
            let got = if aligned {
                let mut a = Aligned::new(len, DIRTY);
                run(a.as_mut_slice()).map(|()| a.as_slice().to_vec())
            } else {
                let mut a = vec![DIRTY; len];
                run(&mut a).map(|()| a)
            };
            (p.implementation().to_owned(), got)
        })
        .collect()
}

/// Runs `case` on both backends (`workers` EV74 workers), the A65 at every route or level
/// this CPU has; `plant` corrupts one byte of each backend's output at `plant_at` (the
/// test hook).
fn run_case(
    case: &Case,
    input: &[u8],
    workers: usize,
    plant_at: Option<usize>,
) -> Result<(Outputs, usize, usize), String> {
    let refuse = |e: &dyn std::fmt::Display| format!("{}: {e}", case.id);
    let in_spec = DynSpec::strided(&case.shape, &case.strides, case.dtype);
    let aligned_input = Aligned::from_slice(input);
    let input_a65 = aligned_input.as_slice();
    let plant = |mut v: Vec<u8>| {
        if let Some(b) = plant_at.and_then(|at| v.get_mut(at)) {
            *b ^= 0x01;
        }
        v
    };
    let planted = |outputs: Outputs| Outputs {
        a65: outputs
            .a65
            .into_iter()
            .map(|(name, got)| (name, got.map(plant)))
            .collect(),
        ev74: outputs.ev74.map(|got| got.map(plant)),
        ev74_tess: outputs.ev74_tess,
    };
    match &case.target {
        Target::Quant {
            strides,
            params,
            phase,
        } => {
            let plan = quant::check_inference_dyn(&quant::DynRequest {
                input: in_spec,
                output: DynSpec::strided(&case.shape, strides, DType::I8),
                params: *params,
            })
            .map_err(|e| refuse(&e))?;
            let out_span = plan.output().span() as usize;
            let len = phase + out_span + GUARD;
            let port = *phase..*phase + out_span;
            let a65 = each_a65::<ops::Quant>(&plan, input_a65, len, false, port.clone(), 1);
            let mut d = vec![DIRTY; len];
            let options = ev74::quant::SimOptions {
                track_writes: false,
                ..ev74::quant::SimOptions::new(workers)
            };
            let ev74 = ev74::quant::run_sim_with(&plan, input, &mut d[port.clone()], &options)
                .map(|_| d)
                .map_err(|e| e.to_string());
            let ev74 = Some(ev74);
            let outputs = Outputs {
                a65,
                ev74,
                ev74_tess: None,
            };
            Ok((planted(outputs), *phase, out_span))
        }
        Target::Tiled(layout) => {
            let plan = casttess::check_inference_dyn(&casttess::DynRequest {
                input: in_spec,
                output: TiledSpec {
                    extents: &case.shape,
                    dtype: DType::BF16,
                    layout: *layout,
                },
            })
            .map_err(|e| refuse(&e))?;
            let capacity = plan.output().capacity() as usize;
            let a65 =
                each_a65::<ops::CastTess>(&plan, input_a65, capacity + GUARD, true, 0..capacity, 1);
            let mut d = vec![DIRTY; capacity + GUARD];
            let options = ev74::casttess::SimOptions {
                track_writes: false,
                ..ev74::casttess::SimOptions::new(workers)
            };
            let (ev74, ev74_tess) =
                match ev74::casttess::run_sim_with(&plan, input, &mut d[..capacity], &options) {
                    Ok(run) => (Ok(d), run.report.map(|r| r.tess)),
                    Err(e) => (Err(e.to_string()), None),
                };
            let outputs = Outputs {
                a65,
                ev74: Some(ev74),
                ev74_tess,
            };
            Ok((planted(outputs), 0, capacity))
        }
        Target::QuantTiled { layout, params } => {
            let plan = quanttess::check_inference_dyn(&quanttess::DynRequest {
                input: in_spec,
                output: TiledSpec {
                    extents: &case.shape,
                    dtype: DType::I8,
                    layout: *layout,
                },
                params: *params,
            })
            .map_err(|e| refuse(&e))?;
            let capacity = plan.output().capacity() as usize;
            let a65 = each_a65::<ops::QuantTess>(
                &plan,
                input_a65,
                capacity + GUARD,
                true,
                0..capacity,
                1,
            );
            let outputs = Outputs {
                a65,
                ev74: None,
                ev74_tess: None,
            };
            Ok((planted(outputs), 0, capacity))
        }
        Target::Detess { head, convert } => {
            let tiled = TiledSpec {
                extents: &case.shape,
                dtype: head.dtype,
                layout: head.layout(),
            };
            let out = convert.out(head.dtype);
            let strides = output_spec(head, out);
            let output = DynSpec::strided(&case.shape, &strides, out);
            let out_span = span(&case.shape, &strides, out.size() as u64) as usize;
            let run = |a65| Outputs {
                a65,
                ev74: None,
                ev74_tess: None,
            };
            let outputs = match *convert {
                Convert::None => {
                    let plan = detess::check_inference_dyn(&detess::DynRequest {
                        input: tiled,
                        output,
                    })
                    .map_err(|e| refuse(&e))?;
                    run(each_level::<Detess>(&plan, input_a65, out_span, workers))
                }
                Convert::Cast => {
                    let plan = detesscast::check_inference_dyn(&detess::DynRequest {
                        input: tiled,
                        output,
                    })
                    .map_err(|e| refuse(&e))?;
                    run(each_level::<DetessCast>(
                        &plan, input_a65, out_span, workers,
                    ))
                }
                Convert::Dequant { params, .. } => {
                    let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
                        input: tiled,
                        output,
                        params,
                    })
                    .map_err(|e| refuse(&e))?;
                    run(each_level::<DetessDequant>(
                        &plan, input_a65, out_span, workers,
                    ))
                }
            };
            Ok((planted(outputs), 0, out_span))
        }
        Target::Preproc { setup, out } => {
            let plan = preproc::check_inference(&preproc_request(case, setup, out))
                .map_err(|e| refuse(&e))?;
            let out_span = plan.output_span() as usize;
            let outputs = Outputs {
                a65: each_level::<ops::Preproc>(&plan, input_a65, out_span, workers),
                ev74: None,
                ev74_tess: None,
            };
            Ok((planted(outputs), 0, out_span))
        }
        Target::Dequant {
            strides,
            out,
            params,
        } => {
            let plan = dequant::check_inference_dyn(&dequant::DynRequest {
                input: in_spec,
                output: DynSpec::strided(&case.shape, strides, *out),
                params: *params,
            })
            .map_err(|e| refuse(&e))?;
            let out_span = plan.output().span() as usize;
            let outputs = Outputs {
                a65: each_level::<Dequant>(&plan, input_a65, out_span, workers),
                ev74: None,
                ev74_tess: None,
            };
            Ok((planted(outputs), 0, out_span))
        }
    }
}

/// Runs the plan of an A65-only op at every level this CPU has, on `threads` threads,
/// into a dirty aligned buffer whose first `out_span` bytes are the output port, followed
/// by the guard.
fn each_level<O: a65::HostOp>(
    plan: &O::Plan,
    input: &[u8],
    out_span: usize,
    threads: usize,
) -> Vec<(String, Result<Vec<u8>, String>)> {
    each_a65::<O>(plan, input, out_span + GUARD, true, 0..out_span, threads)
}

/// The expected buffer of `case`: fill, then the oracle's bytes.
fn expected(case: &Case, input: &[u8], bits: &[u32], phase: usize, span_len: usize) -> Vec<u8> {
    match &case.target {
        Target::Quant {
            strides, params, ..
        } => {
            let mut want = vec![DIRTY; phase + span_len + GUARD];
            let mut k = 0;
            for_each_offset(&case.shape, strides, |at| {
                want[phase + at] = oracle::quant(
                    case.dtype,
                    bits[k],
                    params.multiplier_bits,
                    params.zero_point,
                    params.rounding,
                ) as u8;
                k += 1;
            });
            want
        }
        Target::Tiled(layout) => expected_tiled(
            case,
            layout,
            2,
            span_len,
            |b| oracle_bf16(case.dtype, b).to_le_bytes(),
            bits,
        ),
        Target::QuantTiled { layout, params } => expected_tiled(
            case,
            layout,
            1,
            span_len,
            |b| {
                let q = oracle::quant(
                    case.dtype,
                    b,
                    params.multiplier_bits,
                    params.zero_point,
                    params.rounding,
                );
                [q as u8, 0]
            },
            bits,
        ),
        Target::Detess { head, convert } => expected_detess(head, *convert, input),
        Target::Preproc { out, .. } => {
            let quant = |p: &Params, b: u32| {
                oracle::quant(DType::F32, b, p.multiplier_bits, p.zero_point, p.rounding) as u8
            };
            match out {
                PreprocOut::F32 | PreprocOut::I8(_) => {
                    let mut want = vec![DIRTY; span_len + GUARD];
                    let mut k = 0;
                    for_each_offset(&case.shape, &case.strides, |at| {
                        match out {
                            PreprocOut::I8(p) => want[at] = quant(p, bits[k]),
                            _ => want[at..at + 4].copy_from_slice(&bits[k].to_le_bytes()),
                        }
                        k += 1;
                    });
                    want
                }
                PreprocOut::QuantTess(layout, p) => {
                    expected_tiled(case, layout, 1, span_len, |b| [quant(p, b), 0], bits)
                }
                PreprocOut::CastTess(layout) => expected_tiled(
                    case,
                    layout,
                    2,
                    span_len,
                    |b| oracle_bf16(DType::F32, b).to_le_bytes(),
                    bits,
                ),
            }
        }
        Target::Dequant {
            strides,
            out,
            params,
        } => {
            let mut want = vec![DIRTY; span_len + GUARD];
            let size = out.size();
            let mut k = 0;
            for_each_offset(&case.shape, strides, |at| {
                let y = reference(signed(bits[k], case.dtype), params, *out);
                want[at..at + size].copy_from_slice(&y.to_le_bytes()[..size]);
                k += 1;
            });
            want
        }
    }
}

/// The code of the little-endian bits `bits` of an integer `dtype`, sign-extended.
fn signed(bits: u32, dtype: DType) -> i64 {
    let shift = 32 - 8 * dtype.size() as u32;
    i64::from(((bits << shift) as i32) >> shift)
}

/// The exact SPEC §12.2 result bits of code `q` (`simak_tests::dequant`).
fn reference(q: i64, params: &dequant::Params, out: DType) -> u32 {
    simak_tests::dequant::reference(q, i64::from(params.zero_point), params.multiplier_bits, out)
}

/// The expected output of an output-side case: each element's bytes read from `ofm` at the
/// SPEC §12.1 oracle's offsets, converted, placed at the output strides; the fill
/// elsewhere and in the guard.
fn expected_detess(head: &Head, convert: Convert, ofm: &[u8]) -> Vec<u8> {
    let (offsets, per_outer) = head.tile_offsets();
    let e = head.e();
    let out = convert.out(head.dtype);
    let strides = output_spec(head, out);
    let shape: Vec<u64> = head.shape.iter().map(|&x| x as u64).collect();
    let out_span = span(&shape, &strides, out.size() as u64) as usize;
    let mut want = vec![DIRTY; out_span + GUARD];
    head.for_each(|index| {
        let mut bits = 0u32;
        for p in 0..e {
            bits |= u32::from(ofm[head.byte_of(&offsets, per_outer, index, p)]) << (8 * p);
        }
        let y = match convert {
            Convert::None => bits,
            Convert::Cast => bits << 16,
            Convert::Dequant { params, .. } => reference(signed(bits, head.dtype), &params, out),
        };
        let at: usize = index
            .iter()
            .zip(&strides)
            .map(|(&i, &s)| i * s as usize)
            .sum();
        want[at..at + out.size()].copy_from_slice(&y.to_le_bytes()[..out.size()]);
    });
    want
}

/// The expected tiled buffer of `case`: the plain-loop layout oracle over the values
/// `value(bits of the element)` (`planes` bytes each), zeros up to `span_len`, then the
/// guard's fill.
fn expected_tiled(
    case: &Case,
    layout: &MlaTiled,
    planes: usize,
    span_len: usize,
    value: impl Fn(u32) -> [u8; 2],
    bits: &[u32],
) -> Vec<u8> {
    let shape: Vec<usize> = case.shape.iter().map(|&e| e as usize).collect();
    // Row-major index of a logical index, to find its value in `bits`.
    let flat = |index: &[usize]| {
        index
            .iter()
            .zip(&shape)
            .fold(0usize, |acc, (&i, &e)| acc * e + i)
    };
    let mut want = oracle_tiled(
        &case.shape,
        layout.axes,
        layout.tile,
        layout.channels,
        planes,
        |index| value(bits[flat(index)]),
    );
    want.resize(span_len, 0);
    want.extend(std::iter::repeat_n(DIRTY, GUARD));
    want
}

/// The outcome of the correctness catalogue.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// Cases run, per group, in catalogue order of first appearance.
    pub cases: Vec<(String, usize)>,
    /// Cases run in all.
    pub total: usize,
    /// Cases also run on the simulated EV74 (all but QuantTess and the output side, which
    /// have no EV74 entry).
    pub ev74_cases: usize,
    /// Byte comparisons made (both backends).
    pub bytes_compared: u64,
    /// Every mismatch found.
    pub mismatches: Vec<Mismatch>,
}

/// Runs the cases selected by `keep` on both backends against the oracles. `plant`, the
/// test hook, corrupts one byte of both backends' outputs for that case ID: the first
/// byte the oracle defines (the first element's, or byte 0 of a tiled buffer).
pub fn run(cases: &[Case], plant: Option<&str>, progress: &dyn Fn()) -> Outcome {
    let mut outcome = Outcome {
        cases: Vec::new(),
        total: 0,
        ev74_cases: 0,
        bytes_compared: 0,
        mismatches: Vec::new(),
    };
    for (k, case) in cases.iter().enumerate() {
        let (input, bits) = input_of(case);
        let workers = 1 + k % 4;
        let plant_at = (plant == Some(case.id.as_str())).then(|| match &case.target {
            Target::Quant { strides, phase, .. } => {
                let mut first = None;
                for_each_offset(&case.shape, strides, |at| {
                    first = first.or(Some(at));
                });
                phase + first.unwrap_or(0)
            }
            Target::Dequant { strides, .. } => {
                let mut first = None;
                for_each_offset(&case.shape, strides, |at| {
                    first = first.or(Some(at));
                });
                first.unwrap_or(0)
            }
            Target::Tiled(_)
            | Target::QuantTiled { .. }
            | Target::Detess { .. }
            | Target::Preproc { .. } => 0,
        });
        match run_case(case, &input, workers, plant_at) {
            Err(e) => outcome.mismatches.push(Mismatch {
                id: case.id.clone(),
                backend: "both".to_owned(),
                detail: format!("not admitted: {e}"),
            }),
            Ok((outputs, phase, span_len)) => {
                let want = expected(case, &input, &bits, phase, span_len);
                outcome.ev74_cases += usize::from(outputs.ev74.is_some());
                let ev74_name = format!(
                    "ev74-sim ({})",
                    simak_cli::report::count(workers as u64, "worker", "workers")
                );
                // The EV74 path, where the case states it: after the bytes, and only when
                // the run succeeded (a failed run is reported with the bytes).
                let path = case.ev74_rows.and_then(|rows| match &outputs.ev74_tess {
                    Some(tess) => rows.difference(tess),
                    None if matches!(outputs.ev74, Some(Ok(_))) => {
                        Some("EV74 path: the run made no report".to_owned())
                    }
                    None => None,
                });
                let ev74 = outputs.ev74.map(|got| (ev74_name.clone(), got));
                let a65 = outputs
                    .a65
                    .into_iter()
                    .map(|(route, got)| (format!("a65 ({route})"), got));
                for (backend, got) in a65.chain(ev74) {
                    outcome.bytes_compared += want.len() as u64;
                    let detail = match got {
                        Err(e) => Some(format!("the backend failed: {e}")),
                        Ok(got) => first_difference(&got, &want),
                    };
                    if let Some(detail) = detail {
                        outcome.mismatches.push(Mismatch {
                            id: case.id.clone(),
                            backend,
                            detail,
                        });
                    }
                }
                if let Some(detail) = path {
                    outcome.mismatches.push(Mismatch {
                        id: case.id.clone(),
                        backend: ev74_name,
                        detail,
                    });
                }
            }
        }
        match outcome.cases.iter_mut().find(|(g, _)| g == case.group) {
            Some((_, n)) => *n += 1,
            None => outcome.cases.push((case.group.to_owned(), 1)),
        }
        outcome.total += 1;
        progress();
    }
    outcome
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn counts_are_the_documented_ones() {
        let all = catalogue();
        let count = |g: &str| all.iter().filter(|c| c.group == g).count();
        assert_eq!(count("quant"), 900);
        assert_eq!(count("casttess-random"), 900);
        assert_eq!(count("casttess-large"), 99);
        assert_eq!(count("casttess-hcontig"), 30);
        assert_eq!(count("casttess-bf16-tail"), 4);
        assert_eq!(count("casttess-empty"), 3);
        assert_eq!(count("casttess-sweep"), 4);
        assert_eq!(count("detess-random"), 4 * DETESS_PER_DTYPE / 2);
        assert_eq!(count("detesscast-random"), DETESS_PER_DTYPE / 2);
        assert_eq!(count("detessdequant-random"), 3 * DETESS_PER_DTYPE / 2);
        assert_eq!(count("dequant-random"), 3 * DEQUANT_PER_DTYPE);
        assert_eq!(count("preproc-random"), 7 * PREPROC_PER_FORMAT);
        let mut ids: Vec<&str> = all.iter().map(|c| c.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
    }

    #[test]
    fn hcontig_cases_sit_on_both_sides_of_each_condition() {
        for dtype in DTYPES {
            let cases = hcontig_cases(dtype);
            let bytes = |c: &Case| c.shape.iter().product::<u64>() * dtype.size() as u64;
            let by = |n: &str| cases.iter().find(|c| c.id.ends_with(n)).unwrap();
            assert_eq!(bytes(by("exact-128-bytes")), 128);
            assert!(bytes(by("below-128-bytes")) < 128);
            assert_eq!(by("exact-128-bytes").strides[0], dtype.size() as u64);
            assert_eq!(by("h-stride-2").strides[0], 2 * dtype.size() as u64);
            assert_eq!(by("h-extent-1").shape[0], 1);
            for c in &cases {
                assert!(c.strides[1] < 1 << 31, "{}", c.id);
            }
        }
    }

    #[test]
    fn bf16_tail_cases_expect_both_short_row_paths() {
        let cases = bf16_tail_cases();
        assert_eq!(cases.len(), 4);
        let mut pad16 = 0;
        for c in &cases {
            assert!(c.id.starts_with("correct/casttess/bf16-tail/"), "{}", c.id);
            assert_eq!(c.dtype, DType::BF16, "{}", c.id);
            let rows = c.ev74_rows.expect("a tail case states its EV74 rows");
            assert!(rows.exact_width > 0 && rows.direct > 0, "{}", c.id);
            let Target::Tiled(layout) = &c.target else {
                panic!("{} is not CastTess", c.id);
            };
            assert_eq!(layout.tile[3], 1, "{}", c.id);
            pad16 += usize::from(layout.channels == Channels::PadTo16);
        }
        assert_eq!(pad16, 2);
        // Only the tail cases state a path.
        let stated = catalogue().iter().filter(|c| c.ev74_rows.is_some()).count();
        assert_eq!(stated, 4);
    }

    #[test]
    fn a_wrong_ev74_path_is_a_difference() {
        let rows = Ev74Rows {
            exact_width: 24,
            direct: 288,
        };
        let tess = |exact_width_rows, source_direct_rows| ev74::firmware::TessStats {
            exact_width_rows,
            source_direct_rows,
            ..Default::default()
        };
        assert_eq!(rows.difference(&tess(24, 288)), None);
        for wrong in [tess(0, 288), tess(24, 0), tess(0, 312), tess(25, 288)] {
            let detail = rows.difference(&wrong).expect("a difference");
            assert!(detail.starts_with("EV74 path: "), "{detail}");
        }
    }

    #[test]
    fn sweeps_cover_every_16_bit_pattern() {
        for c in catalogue().iter().filter(|c| c.group == "casttess-sweep") {
            let (_, bits) = input_of(c);
            let mut seen = bits.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), 65536, "{}", c.id);
        }
    }
}
