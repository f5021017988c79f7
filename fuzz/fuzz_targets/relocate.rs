//! Fuzz target: the host-side EV74 `relocate` of both ops (Quant and CastTess): a DMA-BUF
//! relocation table applied to an encoded packet (SPEC §6, the second way to bind).
//!
//! From a small fuzzed spec the target admits a plan as `bind` does, encodes it relocatable
//! (or, on request, another plan's packet) and applies a fuzzed relocation table of up to
//! four entries: known slots (24 input, 32 output), unknown byte offsets, duplicates,
//! missing ports, each with a fuzzed region placed as `bind`'s are. Properties:
//!
//! - nothing panics;
//! - an independent model of the table rules predicts the error: packet mismatch first;
//!   then, in table order, an offset that is not 24 or 32 is `UnknownSlot` (0x313), a
//!   port named twice `DuplicateRelocation` (0x314 input, 0x315 output);
//! - a table naming each port once (in either order) gives exactly what `bind` gives for
//!   the two regions: the same error, or a packet with the same bytes;
//! - a table that misses a port: for a nonempty plan, a missing input is
//!   `Unbound { Input }`; a missing output is `Unbound { Output }` unless the input region
//!   breaks a rule first (then an input-port error, as `bind` gives it with an unbound
//!   output); an empty plan relocates to the packet `bind` gives for unbound regions.
//!
//! Input layout (little-endian; reads past the end give zeros): `bind.rs`'s op byte and
//! spec, then
//!
//! | bytes | meaning |
//! | --- | --- |
//! | 1 | table length `% 5` |
//! | 2, 13 | per relocation: kind, offset byte; region as in `bind.rs` |
//!
//! A relocation's slot is, by `kind & 3`: 24; 32; the offset byte; the offset byte × 8
//! (hitting 24 and 32 among other multiples of 8). Its region is placed for the span of
//! the port its slot names (0 for an unknown slot), the output's after the last input
//! region of the table.
#![no_main]

mod common;
#[path = "common/plans.rs"]
mod plans;

use common::Input;
use libfuzzer_sys::fuzz_target;
use plans::{quant_dispatch, read_casttess, read_quant, region, tess_dispatch};
use simak_core::Port;
use simak_core::ev74::{
    self, BindError, DevicePlan, DeviceRegion, NativeEntry, Packet, Relocation,
};
use simak_core::layout::{Channels, MlaTiled};
use simak_core::ops::quant::Rounding;
use simak_core::state::Encoded;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let op = input.u8();
    let other_packet = op & 2 != 0;
    if op & 1 == 0 {
        let mut spec = read_quant(&mut input);
        let Some(plan) = quant_dispatch(&spec) else {
            return;
        };
        let encoded = if other_packet {
            spec.params.rounding = Rounding::ALL[(spec.params.rounding as usize + 1) % 4];
            match quant_dispatch(&spec) {
                Some(other) => ev74::encode_relocatable(&other),
                None => return,
            }
        } else {
            ev74::encode_relocatable(&plan)
        };
        check(&mut input, &plan, &encoded);
    } else {
        let spec = read_casttess(&mut input);
        let layout = |channels| MlaTiled::new(spec.axes, spec.tile, channels);
        let dispatch = |channels| {
            tess_dispatch(
                spec.rank,
                spec.dtype,
                &spec.extents,
                spec.strides,
                layout(channels),
            )
        };
        let Some(plan) = dispatch(spec.channels) else {
            return;
        };
        let encoded = if other_packet {
            let other = match spec.channels {
                Channels::Compact => Channels::PadTo16,
                Channels::PadTo16 | Channels::CBlock16 => Channels::Compact,
            };
            match dispatch(other) {
                Some(p) => ev74::encode_relocatable(&p),
                None => return,
            }
        } else {
            ev74::encode_relocatable(&plan)
        };
        check(&mut input, &plan, &encoded);
    }
});

/// Reads the table, relocates, and checks the result against the model and `bind`.
fn check<E: NativeEntry>(
    input: &mut Input<'_>,
    plan: &DevicePlan<E>,
    encoded: &Packet<E, Encoded>,
) {
    let spans = [plan.input_span(), plan.output_span()];
    let mut table = Vec::new();
    let mut last_input = None;
    for _ in 0..input.u8() % 5 {
        let kind = input.u8();
        let offset = usize::from(input.u8());
        let slot = match kind & 3 {
            0 => 24,
            1 => 32,
            2 => offset,
            _ => offset * 8,
        };
        let (span, after) = match slot {
            24 => (spans[0], None),
            32 => (spans[1], last_input),
            _ => (0, None),
        };
        let r = region(input, span, after);
        if slot == 24 {
            last_input = Some((r.address, spans[0]));
        }
        table.push(Relocation::at_slot(slot, r));
    }
    let mismatch = *encoded != ev74::encode_relocatable(plan);
    let result = ev74::relocate(plan, encoded, &table);
    let bytes = |r: &Result<Packet<E, _>, BindError>| {
        r.as_ref()
            .map(|p| p.as_bytes().as_ref().to_vec())
            .map_err(Clone::clone)
    };
    match model(mismatch, &table) {
        Err(e) => assert_eq!(result.err(), Some(e), "{table:?}"),
        Ok([Some(r_in), Some(r_out)]) => {
            let bound = ev74::bind(plan, encoded, r_in, r_out);
            assert_eq!(bytes(&result), bytes(&bound), "{table:?}");
        }
        Ok([r_in, r_out]) => {
            let unbound = DeviceRegion::new(0, 0);
            let bound = ev74::bind(
                plan,
                encoded,
                r_in.unwrap_or(unbound),
                r_out.unwrap_or(unbound),
            );
            assert_eq!(bytes(&result), bytes(&bound), "{table:?}");
            if plan.is_empty() {
                assert!(result.is_ok(), "{result:?} {table:?}");
            } else if r_in.is_none() {
                let unbound = BindError::Unbound { port: Port::Input };
                assert_eq!(result.err(), Some(unbound), "{table:?}");
            } else {
                let err = result.expect_err("a missing output relocation binds nothing");
                assert!(
                    err == BindError::Unbound { port: Port::Output } || input_port(&err),
                    "{err:?} {table:?}"
                );
            }
        }
    }
}

/// The table rules of SPEC §6, modelled independently: the packet must be the plan's,
/// then in table order each slot is 24 or 32 and named at most once. The regions the
/// table names, input then output.
fn model(mismatch: bool, table: &[Relocation]) -> Result<[Option<DeviceRegion>; 2], BindError> {
    if mismatch {
        return Err(BindError::PacketMismatch);
    }
    let mut named = [None, None];
    for r in table {
        let (i, port) = match r.slot {
            24 => (0, Port::Input),
            32 => (1, Port::Output),
            slot => return Err(BindError::UnknownSlot { slot }),
        };
        if named[i].is_some() {
            return Err(BindError::DuplicateRelocation { port });
        }
        named[i] = Some(r.region);
    }
    Ok(named)
}

/// Whether `err` is one of bind's region errors on the input port.
fn input_port(err: &BindError) -> bool {
    matches!(
        err,
        BindError::Unbound { port: Port::Input }
            | BindError::Capacity {
                port: Port::Input,
                ..
            }
            | BindError::Misaligned {
                port: Port::Input,
                ..
            }
            | BindError::Range {
                port: Port::Input,
                ..
            }
    )
}
