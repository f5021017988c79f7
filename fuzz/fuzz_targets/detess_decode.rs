//! Fuzz target: the device-side decoders of the Detess-family entries (Detess v1,
//! DetessCast v1, DetessDequant v1) must never panic.
//!
//! For any bytes, as each of the three entries: the decoder contract of [`decode::check`];
//! then an accepted descriptor's tiled input admits with the physical span the descriptor
//! states, the conversion is the entry's, and only DetessDequant carries parameters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simak_core::ev74::{Detess, DetessCast, DetessDequant};
use simak_core::wire::detess::{Conversion, DetessRepr};

#[path = "common/decode.rs"]
mod decode;

fn accepted(repr: DetessRepr, conversion: Conversion) {
    assert_eq!(repr.conversion, conversion);
    let tiled = repr.tiled().expect("a decoded layout admits");
    assert_eq!(tiled.capacity(), repr.prefix.input_span);
    assert_eq!(repr.dequant_params().is_some(), conversion == Conversion::Dequant);
}

fuzz_target!(|data: &[u8]| {
    if let Some(repr) = decode::check::<Detess>(data) {
        accepted(repr, Conversion::Detess);
    }
    if let Some(repr) = decode::check::<DetessCast>(data) {
        accepted(repr, Conversion::Cast);
    }
    if let Some(repr) = decode::check::<DetessDequant>(data) {
        accepted(repr, Conversion::Dequant);
    }
});
