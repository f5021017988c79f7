//! Fuzz target: the host-side EV74 `bind` of both ops (Quant and CastTess) against device
//! regions.
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
//! | 1 | op: bit 0 CastTess (else Quant); bit 1 bind a packet of another plan |
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
#![no_main]

mod common;
#[path = "common/plans.rs"]
mod plans;

use common::Input;
use libfuzzer_sys::fuzz_target;
use plans::{CastTessSpec, quant_dispatch, read_casttess, read_quant, region, tess_dispatch};
use simak_core::Port;
use simak_core::ev74::{self, DeviceRegion, casttess, quant};
use simak_core::layout::{Channels, MlaTiled, TILE_ALIGN};
use simak_core::ops::quant::Rounding;

const LIMIT: u128 = 1 << 32;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let op = input.u8();
    if op & 1 == 0 {
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
