//! The plans and regions the EV74 codec targets (`bind`, `relocate`) read from their
//! input, in the layout `bind.rs`'s module doc describes: a Quant or CastTess spec admitted
//! by `check_inference` and the EV74 `check_inference`, and device regions placed at the
//! edges that matter.

use simak_core::ev74::{DeviceRegion, casttess, quant};
use simak_core::layout::{Channels, MlaTiled};
use simak_core::ops::casttess::TiledTensorSpec;
use simak_core::ops::quant::{Params, Rounding};
use simak_core::{DType, TensorSpec};

use crate::common::Input;

pub const DTYPES: [DType; 3] = [DType::F32, DType::BF16, DType::F16];

/// The quant spec fields read from the input.
pub struct QuantSpec {
    pub rank: usize,
    pub dtype: DType,
    pub extents: [u64; 6],
    pub in_strides: Option<[u64; 6]>,
    pub out_strides: Option<[u64; 6]>,
    pub params: Params,
}

/// Reads a Quant spec (rank, dtype, bits, extents, strides, params).
pub fn read_quant(input: &mut Input<'_>) -> QuantSpec {
    let rank = usize::from(input.u8() % 7);
    let dtype = DTYPES[usize::from(input.u8() % 3)];
    let bits = input.u8();
    let mut extents = [0u64; 6];
    for e in &mut extents[..rank] {
        *e = u64::from(input.u8());
    }
    let mut strides = |on: bool, unit: u64| {
        on.then(|| {
            let mut s = [0u64; 6];
            for x in &mut s[..rank] {
                *x = u64::from(input.u16()) * unit;
            }
            s
        })
    };
    let in_strides = strides(bits & 1 != 0, dtype.size_u64());
    let out_strides = strides(bits & 2 != 0, 1);
    let multiplier = input.u32();
    let zero_point = i32::from(input.u8() as i8);
    let rounding = Rounding::ALL[usize::from(input.u8() % 4)];
    QuantSpec {
        rank,
        dtype,
        extents,
        in_strides,
        out_strides,
        params: Params::from_bits(multiplier)
            .with_zero_point(zero_point)
            .with_rounding(rounding),
    }
}

fn quant_plan<const R: usize>(s: &QuantSpec) -> Option<quant::DevicePlan> {
    use simak_core::ops::quant::{Request, check_inference};
    let extents: [u64; R] = s.extents[..R].try_into().ok()?;
    let spec = |strides: Option<[u64; 6]>, dtype| match strides {
        Some(st) => TensorSpec::strided(extents, st[..R].try_into().unwrap(), dtype),
        None => TensorSpec::contiguous(extents, dtype),
    };
    let plan = check_inference(&Request {
        input: spec(s.in_strides, s.dtype),
        output: spec(s.out_strides, DType::I8),
        params: s.params,
    })
    .ok()?;
    quant::check_inference(&plan).ok()
}

/// The device plan of the spec, `None` when the host or the EV74 refuses it.
pub fn quant_dispatch(s: &QuantSpec) -> Option<quant::DevicePlan> {
    match s.rank {
        0 => quant_plan::<0>(s),
        1 => quant_plan::<1>(s),
        2 => quant_plan::<2>(s),
        3 => quant_plan::<3>(s),
        4 => quant_plan::<4>(s),
        5 => quant_plan::<5>(s),
        _ => quant_plan::<6>(s),
    }
}

/// The CastTess spec fields read from the input.
pub struct CastTessSpec {
    pub rank: usize,
    pub dtype: DType,
    pub extents: [u64; 6],
    pub strides: Option<[u64; 6]>,
    pub channels: Channels,
    pub axes: [Option<u8>; 4],
    pub tile: [u32; 4],
}

/// Reads a CastTess spec (rank, dtype, bits, extents, strides, axes, tile).
pub fn read_casttess(input: &mut Input<'_>) -> CastTessSpec {
    let rank = usize::from(input.u8() % 6) + 1;
    let dtype = DTYPES[usize::from(input.u8() % 3)];
    let bits = input.u8();
    let mut extents = [0u64; 6];
    for e in &mut extents[..rank] {
        *e = u64::from(input.u8());
    }
    let strides = (bits & 1 != 0).then(|| {
        let mut s = [0u64; 6];
        for x in &mut s[..rank] {
            *x = u64::from(input.u16()) * dtype.size_u64();
        }
        s
    });
    let channels = if bits & 2 != 0 {
        Channels::PadTo16
    } else {
        Channels::Compact
    };
    let mut axes = [None; 4];
    for a in &mut axes {
        let b = input.u8();
        *a = (b < 6).then_some(b);
    }
    let mut tile = [1u32; 4];
    for (t, a) in tile.iter_mut().zip(axes) {
        let b = u64::from(input.u8());
        let extent = a.and_then(|a| extents[..rank].get(usize::from(a)).copied());
        *t = u32::try_from(1 + b % extent.unwrap_or(1).max(1)).unwrap_or(1);
    }
    CastTessSpec {
        rank,
        dtype,
        extents,
        strides,
        channels,
        axes,
        tile,
    }
}

fn tess_plan<const R: usize>(
    dtype: DType,
    extents: &[u64; 6],
    strides: Option<[u64; 6]>,
    layout: MlaTiled,
) -> Option<casttess::DevicePlan> {
    use simak_core::ops::casttess::{Request, check_inference};
    let ext: [u64; R] = extents[..R].try_into().ok()?;
    let input = match strides {
        Some(s) => TensorSpec::strided(ext, s[..R].try_into().ok()?, dtype),
        None => TensorSpec::contiguous(ext, dtype),
    };
    let plan = check_inference(&Request {
        input,
        output: TiledTensorSpec::new(*input.extents(), DType::BF16, layout),
    })
    .ok()?;
    casttess::check_inference(&plan).ok()
}

/// The device plan of the spec with `layout`, `None` when the host or the EV74 refuses it.
pub fn tess_dispatch(
    rank: usize,
    dtype: DType,
    extents: &[u64; 6],
    strides: Option<[u64; 6]>,
    layout: MlaTiled,
) -> Option<casttess::DevicePlan> {
    match rank {
        1 => tess_plan::<1>(dtype, extents, strides, layout),
        2 => tess_plan::<2>(dtype, extents, strides, layout),
        3 => tess_plan::<3>(dtype, extents, strides, layout),
        4 => tess_plan::<4>(dtype, extents, strides, layout),
        5 => tess_plan::<5>(dtype, extents, strides, layout),
        _ => tess_plan::<6>(dtype, extents, strides, layout),
    }
}

/// One region for a port of `span` bytes; `after` is the input's (address, span) for the
/// output.
pub fn region(input: &mut Input<'_>, span: u64, after: Option<(u32, u64)>) -> DeviceRegion {
    let kind = input.u8();
    let a = input.u32();
    let l = input.u64();
    let address = match kind & 3 {
        0 => a,
        1 => (1u64 << 32)
            .wrapping_sub(span)
            .wrapping_sub(u64::from(a & 0xff)) as u32,
        2 => match after {
            None => a & !0xf,
            Some((base, base_span)) => {
                let base = if kind & 0x10 != 0 {
                    u64::from(base).wrapping_add(base_span)
                } else {
                    u64::from(base)
                };
                base.wrapping_add_signed(i64::from(a as i16)) as u32
            }
        },
        _ => u32::MAX - (a & 0xff),
    };
    let len = match (kind >> 2) & 3 {
        0 => l,
        1 => span.wrapping_add_signed(i64::from(l as i8)),
        2 => u64::MAX - (l & 0xff),
        _ => span,
    };
    DeviceRegion::new(address, len)
}
