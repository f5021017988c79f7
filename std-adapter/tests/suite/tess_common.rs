//! Shared pieces of the CastTess / QuantTess tests: the independent plain-loop layout oracle
//! written from SPEC §5 (it shares no code with the library's traversal or with
//! `TiledView::offset_of`) and the independent BF16 conversion oracle, both from
//! `simak_tests::tiled`; a fixed-seed case generator and a runner that checks dirty-buffer
//! reuse and guard bytes.
#![allow(dead_code)]

use simak::a65;
use simak::a65::Level;
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::{self, TiledSpec};
use simak::ops::quant::Params;
use simak::ops::quanttess;
use simak::{DType, DynSpec};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;

/// Bytes past the required span that must stay untouched.
pub const GUARD: usize = 48;
/// The guard and dirty-buffer fill byte.
pub const DIRTY: u8 = 0xa5;

// The conversion oracles and the odometer live in `simak_tests::tiled`, shared with
// `cargo xtask qualify correctness` (`simak-qualify correctness`).
pub use simak_tests::tiled::{
    for_each_index, oracle_bf16, oracle_f16, oracle_f32, oracle_tiled, random_bits,
};

/// A test case: logical shape, input layout (byte strides), tiled layout.
#[derive(Debug, Clone)]
pub struct Case {
    pub dtype: DType,
    pub shape: Vec<u64>,
    /// Input byte strides per logical axis.
    pub strides: Vec<u64>,
    /// Input buffer length in bytes (covers the span; holes in between).
    pub input_len: usize,
    pub axes: [Option<u8>; 4],
    pub tile: [u32; 4],
    pub channels: Channels,
}

impl Case {
    /// A random layout over `shape` and a random strided input (row gaps up to 2
    /// elements), drawn from `rng` in that order.
    pub fn random(rng: &mut Rng, dtype: DType, shape: Vec<u64>) -> Case {
        let (axes, tile, channels) = random_layout(rng, &shape);
        let (strides, input_len) = random_strides(rng, &shape, dtype.size() as u64, 2);
        Case {
            dtype,
            shape,
            strides,
            input_len,
            axes,
            tile,
            channels,
        }
    }

    /// An input of `shape` with byte `strides` (holes between elements are allowed) under
    /// `layout`; the buffer ends at the last element's last byte (the span).
    pub fn strided(dtype: DType, shape: Vec<u64>, strides: Vec<u64>, layout: MlaTiled) -> Case {
        let e = dtype.size() as u64;
        let last: u64 = shape.iter().zip(&strides).map(|(&n, &s)| (n - 1) * s).sum();
        Case {
            dtype,
            shape,
            strides,
            input_len: (last + e) as usize,
            axes: layout.axes,
            tile: layout.tile,
            channels: layout.channels,
        }
    }

    /// An input buffer (other bytes `fill`) whose elements hold every 16-bit pattern in
    /// logical (C) order; the case has exactly 65,536 16-bit elements.
    pub fn every_16_bit_pattern(&self, fill: u8) -> Aligned {
        let shape: Vec<usize> = self.shape.iter().map(|&n| n as usize).collect();
        let mut input = Aligned::new(self.input_len, fill);
        let mut k = 0u32;
        for_each_index(&shape, |i| {
            let at = self.input_offset(i);
            input.as_mut_slice()[at..at + 2].copy_from_slice(&(k as u16).to_le_bytes());
            k += 1;
        });
        assert_eq!(k, 65536);
        input
    }

    pub fn layout(&self) -> MlaTiled {
        MlaTiled::new(self.axes, self.tile, self.channels)
    }

    pub fn elements(&self) -> usize {
        self.shape.iter().product::<u64>() as usize
    }

    /// Byte offset of a logical index in the input.
    pub fn input_offset(&self, index: &[usize]) -> usize {
        index
            .iter()
            .zip(&self.strides)
            .map(|(&i, &s)| i * s as usize)
            .sum()
    }
}

/// Reads the raw bits of the element at `index` from the input.
pub fn read_raw(case: &Case, input: &[u8], index: &[usize]) -> u32 {
    let at = case.input_offset(index);
    let size = case.dtype.size();
    let mut b = [0u8; 4];
    b[..size].copy_from_slice(&input[at..at + size]);
    u32::from_le_bytes(b)
}

/// The expected CastTess buffer of `case` over `input`.
pub fn expected_cast(case: &Case, input: &[u8]) -> Vec<u8> {
    oracle_tiled(&case.shape, case.axes, case.tile, case.channels, 2, |i| {
        oracle_bf16(case.dtype, read_raw(case, input, i)).to_le_bytes()
    })
}

/// The expected QuantTess buffer of `case` over `input` with `params`: the f64 Quant
/// oracle of `simak_tests`, tiled by the plain-loop layout oracle (one byte plane).
pub fn expected_quant(case: &Case, input: &[u8], params: Params) -> Vec<u8> {
    oracle_tiled(&case.shape, case.axes, case.tile, case.channels, 1, |i| {
        let q = simak_tests::oracle::quant(
            case.dtype,
            read_raw(case, input, i),
            params.multiplier_bits,
            params.zero_point,
            params.rounding,
        );
        [q as u8, 0]
    })
}

/// The CastTess plan of `case`, admitted at its runtime rank.
pub fn cast_plan(case: &Case) -> casttess::Plan {
    casttess::check_inference_dyn(&casttess::DynRequest {
        input: DynSpec::strided(&case.shape, &case.strides, case.dtype),
        output: TiledSpec {
            extents: &case.shape,
            dtype: DType::BF16,
            layout: case.layout(),
        },
    })
    .unwrap_or_else(|e| panic!("{case:?}: {e}"))
}

/// The QuantTess plan of `case` with `params`, admitted at its runtime rank.
pub fn quant_plan(case: &Case, params: Params) -> quanttess::Plan {
    quanttess::check_inference_dyn(&quanttess::DynRequest {
        input: DynSpec::strided(&case.shape, &case.strides, case.dtype),
        output: TiledSpec {
            extents: &case.shape,
            dtype: DType::I8,
            layout: case.layout(),
        },
        params,
    })
    .unwrap_or_else(|e| panic!("{case:?}: {e}"))
}

/// Every CastTess level this CPU offers, and each level with fused kernels (band, rows)
/// once more without them (`Prepared::general_path`), so that the general
/// convert-then-split path of every level meets the oracle too.
pub fn levels(plan: &casttess::Plan) -> Vec<a65::casttess::Prepared> {
    Level::ALL
        .into_iter()
        .rev()
        .filter_map(|l| a65::casttess::prepare_at(plan, l).ok())
        .flat_map(|p| {
            let general = p.has_fused_path().then(|| p.general_path());
            std::iter::once(p).chain(general)
        })
        .collect()
}

/// Runs `run` on a dirty output buffer (capacity + guard, 16-byte aligned) twice, checks
/// the guard bytes after each call and that both calls give `expected`. Returns the
/// number of byte comparisons.
pub fn check_dirty(what: &str, expected: &[u8], mut run: impl FnMut(&mut [u8])) -> usize {
    let mut buf = Aligned::new(expected.len() + GUARD, DIRTY);
    for pass in 0..2 {
        let out = buf.as_mut_slice();
        if pass == 1 {
            // A different dirty pattern in the required span on the second call.
            for (k, b) in out[..expected.len()].iter_mut().enumerate() {
                *b = (k as u8).wrapping_mul(31) ^ 0x5a;
            }
        }
        run(out);
        let (span, guard) = out.split_at(expected.len());
        if span != expected {
            let k = span.iter().zip(expected).position(|(a, b)| a != b).unwrap();
            panic!(
                "{what} pass {pass}: byte {k} of {} is {:#04x}, expected {:#04x}",
                expected.len(),
                span[k],
                expected[k]
            );
        }
        assert!(
            guard.iter().all(|&b| b == DIRTY),
            "{what}: guard bytes touched"
        );
    }
    expected.len()
}

/// Fills every byte of `input` with random bits, then writes random elements (biased to
/// special values) at every logical index.
pub fn fill_input(rng: &mut Rng, case: &Case) -> Aligned {
    let mut buf = Aligned::new(case.input_len, 0);
    for b in buf.as_mut_slice().iter_mut() {
        *b = rng.next_u32() as u8;
    }
    let shape: Vec<usize> = case.shape.iter().map(|&e| e as usize).collect();
    let size = case.dtype.size();
    let input = buf.as_mut_slice();
    for_each_index(&shape, |i| {
        let at = case.input_offset(i);
        let bits = random_bits(rng, case.dtype);
        input[at..at + size].copy_from_slice(&bits.to_le_bytes()[..size]);
    });
    buf
}

/// Random input strides for `shape`: a random physical axis order, each axis's stride the
/// span of the faster ones plus a random gap (in elements); contiguous with probability
/// `contiguous_num / 4`. Returns (strides, buffer length).
pub fn random_strides(
    rng: &mut Rng,
    shape: &[u64],
    elem: u64,
    contiguous_num: u64,
) -> (Vec<u64>, usize) {
    let rank = shape.len();
    let mut order: Vec<usize> = (0..rank).collect();
    let contiguous = rng.chance(contiguous_num, 4);
    if !contiguous {
        rng.shuffle(&mut order);
    }
    // `order` lists axes from slowest to fastest.
    let mut strides = vec![0u64; rank];
    let mut span = elem;
    for &a in order.iter().rev() {
        let gap = if contiguous || !rng.chance(1, 2) {
            0
        } else {
            rng.below(3) * elem
        };
        strides[a] = span + gap;
        span = strides[a] * shape[a].max(1);
    }
    // Singleton axes may carry any stride (normalized to 0 by admission).
    for a in 0..rank {
        if shape[a] == 1 && rng.chance(1, 3) {
            strides[a] = rng.below(1000) * elem;
        }
    }
    let len = elem as usize
        + shape
            .iter()
            .zip(&strides)
            .map(|(&e, &s)| (e.max(1) - 1) * s)
            .sum::<u64>() as usize;
    (strides, len)
}

/// A random axis map and tiles for `shape`.
pub fn random_layout(rng: &mut Rng, shape: &[u64]) -> ([Option<u8>; 4], [u32; 4], Channels) {
    let rank = shape.len();
    let mut free: Vec<u8> = (0..rank as u8).collect();
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
            let e = shape[a as usize].max(1);
            *t = if rng.chance(1, 4) {
                e as u32
            } else {
                1 + rng.below(e) as u32
            };
            if shape[a as usize] == 0 {
                *t = 1 + rng.below(4) as u32;
            }
        }
    }
    let channels = if rng.chance(1, 2) {
        Channels::Compact
    } else {
        Channels::PadTo16
    };
    (axes, tile, channels)
}
