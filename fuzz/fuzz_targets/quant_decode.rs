//! Fuzz target: the device-side Quant v1 decoder must never panic.
//!
//! For any bytes: `decode` and `parse_bytes` return `Ok` or an error with a nonzero code;
//! an accepted descriptor emits back to the same bytes and reparses to the same
//! representation; the field listing formats without panicking ([`decode::check`]).
#![no_main]

use libfuzzer_sys::fuzz_target;
use simak_core::ev74::Quant;

#[path = "common/decode.rs"]
mod decode;

fuzz_target!(|data: &[u8]| {
    decode::check::<Quant>(data);
});
