//! Fuzz target: the host-side EV74 `bind` of every entry (Quant, CastTess and the three
//! Detess-family entries) against device regions.
//!
//! From a small fuzzed spec the target admits a plan (`check_inference`, then the EV74
//! `check_inference`), encodes it relocatable, and binds it to two fuzzed [`DeviceRegion`]s:
//! raw addresses and lengths, or ones placed at the edges that matter (just below 2^32,
//! `u32::MAX`, lengths around the span and near `u64::MAX`, the output overlapping or right
//! after the input). Properties:
//!
//! - nothing panics;
//! - `bind` returns exactly the error an independent model of SPEC §6 predicts (packet
//!   mismatch; then per port, input first: address 0, capacity, alignment, address + span
//!   ≤ 2^32; then overlap of the accessed ranges), or `Ok` when the model finds none;
//! - on `Ok`, the bound packet decodes with the device-side decoder to the plan's
//!   representation with the two addresses filled in, and every range it names —
//!   `[address, address + span)` per port, computed in `u128` — lies inside its region and
//!   below 2^32, the two ranges are disjoint and the addresses aligned;
//! - the device agrees with the host on the address rules: the plan's representation with
//!   the fuzzed addresses decodes iff address 0, range, alignment and overlap all pass.
//!
//! Input layout (little-endian; reads past the end give zeros):
//!
//! | bytes | meaning |
//! | --- | --- |
//! | 1 | op: bit 2 a Detess-family entry (layout below), else bit 0 CastTess (else Quant); bit 1 bind a packet of another plan |
//! | 1 | rank: Quant `% 7`, CastTess `% 6 + 1` |
//! | 1 | input dtype `% 3`: F32, BF16, F16 |
//! | 1 | bit 0 input strided; bit 1 Quant output strided / CastTess PadTo16 |
//! | rank | extents, one byte each |
//! | 2·rank | if input strided: strides in elements (× element size) |
//! | 2·rank | Quant, if output strided: output strides in bytes |
//! | 4, 1, 1 | Quant: multiplier bits, zero point (i8), rounding `% 4` |
//! | 4, 4 | CastTess: axis of D, H, W, C (≥ 6 absent), tile bytes (`1 + b % extent`) |
//! | 13, 13 | input then output region: kind (u8), a (u32), l (u64) |
//!
//! A region's address is, by `kind & 3`: `a`; `2^32 − span − (a & 0xff)` (truncated to
//! u32); for the input `a & !0xf`, for the output the input address (plus the input span
//! when `kind & 0x10`) plus `a as i16`; `u32::MAX − (a & 0xff)`. Its length is, by
//! `(kind >> 2) & 3`: `l`; `span + (l as i8)` (wrapping); `u64::MAX − (l & 0xff)`; `span`.
//!
//! A Detess-family input after the op byte: conversion `% 3` (Detess, DetessCast,
//! DetessDequant); input dtype `% 4` (INT8, INT16, INT32, BF16; DetessCast: BF16);
//! encoding (`% 3` Compact, PadTo16, CBlock16; bit 2 tile alignment 1); output dtype `% 3`
//! (DetessDequant: FP32, FP16, BF16) and bit 2 strided output; rank `% 4 + 1`; extents (one
//! byte each); if strided, output strides (u16 each, × element size); axes and tiles as
//! CastTess; multiplier bits (u32) and zero point (i16); then the two regions. The tiled
//! input is aligned to 16 bytes at tile alignment 16, else to its element size; the output
//! to its element size. The other packet is the same head with the zero point plus one
//! (DetessDequant) or the other tile alignment.
#![no_main]

mod common;
#[path = "common/plans.rs"]
mod plans;

use common::Input;
use libfuzzer_sys::fuzz_target;
use plans::{CastTessSpec, quant_dispatch, read_casttess, read_quant, region, tess_dispatch};
use simak_core::Port;
use simak_core::ev74::{self, DeviceRegion, casttess, quant};
use simak_core::DType;
use simak_core::layout::{Channels, MlaTiled, TILE_ALIGN, TileAlign};
use simak_core::ops::dequant::Params;
use simak_core::ops::quant::Rounding;

const LIMIT: u128 = 1 << 32;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let op = input.u8();
    if op & 4 != 0 {
        fuzz_detess(&mut input, op & 2 != 0);
    } else if op & 1 == 0 {
        fuzz_quant(&mut input, op & 2 != 0);
    } else {
        fuzz_casttess(&mut input, op & 2 != 0);
    }
});

fn fuzz_quant(input: &mut Input<'_>, other_packet: bool) {
    let mut spec = read_quant(input);
    let Some(plan) = quant_dispatch(&spec) else {
        return;
    };
    let encoded = if other_packet {
        // The same request with the next rounding mode: a different packet.
        spec.params.rounding = Rounding::ALL[(spec.params.rounding as usize + 1) % 4];
        match quant_dispatch(&spec) {
            Some(other) => quant::encode_relocatable(&other),
            None => return,
        }
    } else {
        quant::encode_relocatable(&plan)
    };
    let mismatch = encoded != quant::encode_relocatable(&plan);
    let view = plan.plan();
    let in_span = view.input().span();
    let out_span = view.output().span();
    let (r_in, r_out) = regions(input, in_span, out_span);
    let elem = view.input().dtype().size_u64();
    let model = expected(
        mismatch,
        plan.is_empty(),
        [
            (Port::Input, in_span, elem, r_in),
            (Port::Output, out_span, 1, r_out),
        ],
    );
    let result = quant::bind(&plan, &encoded, r_in, r_out);
    assert_eq!(
        result.as_ref().err(),
        model.as_ref().err(),
        "{r_in:?} {r_out:?}"
    );
    // The device's own address rules on the representation with these addresses.
    let mut repr = *plan.repr();
    repr.prefix.input_address = r_in.address;
    repr.prefix.output_address = r_out.address;
    let device = quant::decode(&repr.to_bytes());
    if !plan.is_empty() {
        let rules = address_rules(in_span, elem, r_in, out_span, 1, r_out);
        assert_eq!(device.is_ok(), rules, "{device:?} {r_in:?} {r_out:?}");
    }
    if let Ok(bound) = result {
        let decoded = quant::decode(bound.as_bytes()).expect("a bound packet decodes");
        assert_eq!(decoded, repr);
        assert_eq!(
            (bound.input_address(), bound.output_address()),
            (r_in.address, r_out.address)
        );
        if !plan.is_empty() {
            check_inside(
                decoded.prefix.input_address,
                decoded.prefix.input_span,
                r_in,
                elem,
            );
            check_inside(
                decoded.prefix.output_address,
                decoded.prefix.output_span,
                r_out,
                1,
            );
            check_disjoint(
                (decoded.prefix.input_address, decoded.prefix.input_span),
                (decoded.prefix.output_address, decoded.prefix.output_span),
            );
        }
    }
}

fn fuzz_casttess(input: &mut Input<'_>, other_packet: bool) {
    let CastTessSpec {
        rank,
        dtype,
        extents,
        strides,
        channels,
        axes,
        tile,
    } = read_casttess(input);
    let layout = |channels| MlaTiled::new(axes, tile, channels);
    let Some(plan) = tess_dispatch(rank, dtype, &extents, strides, layout(channels)) else {
        return;
    };
    let encoded = if other_packet {
        let other = match channels {
            Channels::Compact => Channels::PadTo16,
            Channels::PadTo16 | Channels::CBlock16 => Channels::Compact,
        };
        match tess_dispatch(rank, dtype, &extents, strides, layout(other)) {
            Some(p) => casttess::encode_relocatable(&p),
            None => return,
        }
    } else {
        casttess::encode_relocatable(&plan)
    };
    let mismatch = encoded != casttess::encode_relocatable(&plan);
    let in_span = plan.input_span();
    let out_span = plan.output_span();
    let (r_in, r_out) = regions(input, in_span, out_span);
    let elem = dtype.size_u64();
    let model = expected(
        mismatch,
        plan.is_empty(),
        [
            (Port::Input, in_span, elem, r_in),
            (Port::Output, out_span, TILE_ALIGN, r_out),
        ],
    );
    let result = casttess::bind(&plan, &encoded, r_in, r_out);
    assert_eq!(
        result.as_ref().err(),
        model.as_ref().err(),
        "{r_in:?} {r_out:?}"
    );
    let mut repr = *plan.repr();
    repr.prefix.input_address = r_in.address;
    repr.prefix.output_address = r_out.address;
    let device = casttess::decode(&repr.to_bytes());
    if !plan.is_empty() {
        let rules = address_rules(in_span, elem, r_in, out_span, TILE_ALIGN, r_out);
        assert_eq!(device.is_ok(), rules, "{device:?} {r_in:?} {r_out:?}");
    }
    if let Ok(bound) = result {
        let decoded = casttess::decode(bound.as_bytes()).expect("a bound packet decodes");
        assert_eq!(decoded, repr);
        assert_eq!(
            (bound.input_address(), bound.output_address()),
            (r_in.address, r_out.address)
        );
        if !plan.is_empty() {
            check_inside(
                decoded.prefix.input_address,
                decoded.prefix.input_span,
                r_in,
                elem,
            );
            check_inside(
                decoded.prefix.output_address,
                decoded.prefix.output_span,
                r_out,
                TILE_ALIGN,
            );
            check_disjoint(
                (decoded.prefix.input_address, decoded.prefix.input_span),
                (decoded.prefix.output_address, decoded.prefix.output_span),
            );
        }
    }
}

/// A Detess-family head read from the input (module doc), its device plan checked by the
/// entry of its op; `other` selects the variant whose packet differs.
struct DetessHead {
    conversion: u8,
    dtype: DType,
    out: DType,
    extents: Vec<u64>,
    strides: Option<Vec<u64>>,
    layout: MlaTiled,
    params: Params,
}

fn read_detess(input: &mut Input<'_>) -> DetessHead {
    let conversion = input.u8() % 3;
    let dtype = match conversion {
        1 => DType::BF16,
        _ => [DType::I8, DType::I16, DType::I32, DType::BF16][usize::from(input.u8() % 4)],
    };
    let enc = input.u8();
    let channels = [Channels::Compact, Channels::PadTo16, Channels::CBlock16][usize::from(enc % 3)];
    let align = if enc & 4 != 0 { TileAlign::Bytes1 } else { TileAlign::Bytes16 };
    let ob = input.u8();
    let out = match conversion {
        0 => dtype,
        1 => DType::F32,
        _ => [DType::F32, DType::F16, DType::BF16][usize::from(ob % 3)],
    };
    let rank = usize::from(input.u8() % 4) + 1;
    let extents: Vec<u64> = (0..rank).map(|_| u64::from(input.u8())).collect();
    let strides = (ob & 4 != 0)
        .then(|| (0..rank).map(|_| u64::from(input.u16()) * out.size_u64()).collect());
    let mut axes = [None; 4];
    for a in &mut axes {
        let b = input.u8();
        *a = (b < 6).then_some(b);
    }
    let mut tile = [1u32; 4];
    for (t, a) in tile.iter_mut().zip(axes) {
        let b = u64::from(input.u8());
        let extent = a.and_then(|a| extents.get(usize::from(a)).copied());
        *t = u32::try_from(1 + b % extent.unwrap_or(1).max(1)).unwrap_or(1);
    }
    let params = Params::from_bits(input.u32()).with_zero_point(i32::from(input.u16() as i16));
    DetessHead {
        conversion,
        dtype,
        out,
        extents,
        strides,
        layout: MlaTiled::new(axes, tile, channels).with_tile_align(align),
        params,
    }
}

/// Encodes the head's relocatable packet and binds it (generic over the entry).
fn detess_bind<P>(
    plan: &P,
    other: Option<&P>,
    input: &mut Input<'_>,
    tile_align: TileAlign,
    in_elem: u64,
    out_elem: u64,
) where
    P: simak_core::ops::OpPlan,
    P::Op: ev74::NativeEntry<Repr = simak_core::wire::detess::DetessRepr>,
{
    let Ok(device) = ev74::check_inference(plan) else {
        return;
    };
    let encoded = match other {
        Some(o) => match ev74::check_inference(o) {
            Ok(d) => ev74::encode_relocatable(&d),
            Err(_) => return,
        },
        None => ev74::encode_relocatable(&device),
    };
    let mismatch = encoded != ev74::encode_relocatable(&device);
    let (in_span, out_span) = (device.input_span(), device.output_span());
    let (r_in, r_out) = regions(input, in_span, out_span);
    let in_align = match tile_align {
        TileAlign::Bytes16 => TILE_ALIGN,
        TileAlign::Bytes1 => in_elem,
    };
    let model = expected(
        mismatch,
        device.is_empty(),
        [
            (Port::Input, in_span, in_align, r_in),
            (Port::Output, out_span, out_elem, r_out),
        ],
    );
    let result = ev74::bind(&device, &encoded, r_in, r_out);
    assert_eq!(
        result.as_ref().err(),
        model.as_ref().err(),
        "{r_in:?} {r_out:?}"
    );
    let mut repr = *device.repr();
    repr.prefix.input_address = r_in.address;
    repr.prefix.output_address = r_out.address;
    let decoded_device = ev74::decode::<P::Op>(&repr.to_bytes());
    if !device.is_empty() {
        let rules = address_rules(in_span, in_align, r_in, out_span, out_elem, r_out);
        assert_eq!(decoded_device.is_ok(), rules, "{decoded_device:?} {r_in:?} {r_out:?}");
    }
    if let Ok(bound) = result {
        let decoded = ev74::decode::<P::Op>(bound.as_bytes().as_ref()).expect("a bound packet decodes");
        assert_eq!(decoded, repr);
        if !device.is_empty() {
            check_inside(decoded.prefix.input_address, in_span, r_in, in_align);
            check_inside(decoded.prefix.output_address, out_span, r_out, out_elem);
            check_disjoint(
                (decoded.prefix.input_address, in_span),
                (decoded.prefix.output_address, out_span),
            );
        }
    }
}

fn fuzz_detess(input: &mut Input<'_>, other_packet: bool) {
    use simak_core::ops::casttess::TiledSpec;
    use simak_core::ops::{detess, detesscast, detessdequant};
    use simak_core::tensor::DynSpec;
    let h = read_detess(input);
    let request = |layout: MlaTiled| detess::DynRequest {
        input: TiledSpec {
            extents: &h.extents,
            dtype: h.dtype,
            layout,
        },
        output: match &h.strides {
            Some(s) => DynSpec::strided(&h.extents, s, h.out),
            None => DynSpec::contiguous(&h.extents, h.out),
        },
    };
    // The other packet: the other tile alignment (DetessDequant: the next zero point).
    let flipped = h.layout.with_tile_align(match h.layout.tile_align {
        TileAlign::Bytes16 => TileAlign::Bytes1,
        TileAlign::Bytes1 => TileAlign::Bytes16,
    });
    let (align, ein, eout) = (h.layout.tile_align, h.dtype.size_u64(), h.out.size_u64());
    match h.conversion {
        0 => {
            let Ok(plan) = detess::check_inference_dyn(&request(h.layout)) else {
                return;
            };
            let other = other_packet.then(|| detess::check_inference_dyn(&request(flipped)).ok()).flatten();
            if other_packet && other.is_none() {
                return;
            }
            detess_bind(&plan, other.as_ref(), input, align, ein, eout);
        }
        1 => {
            let Ok(plan) = detesscast::check_inference_dyn(&request(h.layout)) else {
                return;
            };
            let other = other_packet.then(|| detesscast::check_inference_dyn(&request(flipped)).ok()).flatten();
            if other_packet && other.is_none() {
                return;
            }
            detess_bind(&plan, other.as_ref(), input, align, ein, eout);
        }
        _ => {
            let dq = |params: Params| {
                let r = request(h.layout);
                detessdequant::check_inference_dyn(&detessdequant::DynRequest {
                    input: r.input,
                    output: r.output,
                    params,
                })
                .ok()
            };
            let Some(plan) = dq(h.params) else {
                return;
            };
            let other = other_packet
                .then(|| dq(h.params.with_zero_point(h.params.zero_point.wrapping_add(1))))
                .flatten();
            if other_packet && other.is_none() {
                return;
            }
            detess_bind(&plan, other.as_ref(), input, align, ein, eout);
        }
    }
}

/// The two regions (input, then output) read from the input, placed per the module doc.
fn regions(input: &mut Input<'_>, in_span: u64, out_span: u64) -> (DeviceRegion, DeviceRegion) {
    let r_in = region(input, in_span, None);
    let r_out = region(input, out_span, Some((r_in.address, in_span)));
    (r_in, r_out)
}

/// The error `bind` must return, modelled independently from SPEC §6.
fn expected(
    mismatch: bool,
    empty: bool,
    ports: [(Port, u64, u64, DeviceRegion); 2],
) -> Result<(), ev74::quant::BindError> {
    use ev74::quant::BindError;
    if mismatch {
        return Err(BindError::PacketMismatch);
    }
    if empty {
        return Ok(());
    }
    for (port, span, align, r) in ports {
        if r.address == 0 {
            return Err(BindError::Unbound { port });
        }
        if r.len < span {
            return Err(BindError::Capacity {
                port,
                required: span,
                found: r.len,
            });
        }
        if u64::from(r.address) % align != 0 {
            return Err(BindError::Misaligned {
                port,
                address: r.address,
                align,
            });
        }
        if u128::from(r.address) + u128::from(span) > LIMIT {
            return Err(BindError::Range {
                port,
                address: r.address,
                span,
            });
        }
    }
    let [(_, s0, _, r0), (_, s1, _, r1)] = ports;
    if ranges_meet((r0.address, s0), (r1.address, s1)) {
        return Err(BindError::Overlap);
    }
    Ok(())
}

/// The device-visible rules alone (no capacities): both addresses nonzero, in range,
/// aligned, and the accessed ranges disjoint.
fn address_rules(
    in_span: u64,
    in_align: u64,
    r_in: DeviceRegion,
    out_span: u64,
    out_align: u64,
    r_out: DeviceRegion,
) -> bool {
    let ok = |span: u64, align: u64, r: DeviceRegion| {
        r.address != 0
            && u64::from(r.address) % align == 0
            && u128::from(r.address) + u128::from(span) <= LIMIT
    };
    ok(in_span, in_align, r_in)
        && ok(out_span, out_align, r_out)
        && !ranges_meet((r_in.address, in_span), (r_out.address, out_span))
}

fn ranges_meet((a, s): (u32, u64), (b, t): (u32, u64)) -> bool {
    let (a, s, b, t) = (u128::from(a), u128::from(s), u128::from(b), u128::from(t));
    a < b + t && b < a + s
}

/// `[address, address + span)` lies inside the region and below 2^32, aligned.
fn check_inside(address: u32, span: u64, r: DeviceRegion, align: u64) {
    assert_eq!(address, r.address);
    let (lo, hi) = (u128::from(address), u128::from(address) + u128::from(span));
    assert!(lo != 0 && hi <= LIMIT, "{lo:#x}..{hi:#x}");
    assert!(
        hi <= u128::from(r.address) + u128::from(r.len),
        "{lo:#x}..{hi:#x} {r:?}"
    );
    assert_eq!(u64::from(address) % align, 0);
}

fn check_disjoint(a: (u32, u64), b: (u32, u64)) {
    assert!(!ranges_meet(a, b), "{a:?} {b:?}");
}
