//! Fuzz target: the device-side decoder of the Preproc v1 entry must never panic.
//!
//! For any bytes: the decoder contract of [`decode::check`]; then an accepted descriptor
//! holds a plan whose spans are the descriptor's and which the host codec lowers back to
//! the same representation (so the device's plan is exactly one admission produces).
#![no_main]

use libfuzzer_sys::fuzz_target;
use simak_core::ev74::{NativeEntry, Preproc};

#[path = "common/decode.rs"]
mod decode;

fuzz_target!(|data: &[u8]| {
    if let Some(repr) = decode::check::<Preproc>(data) {
        let plan = &repr.plan;
        assert_eq!(plan.input_span(), repr.prefix.input_span);
        assert_eq!(plan.output_span(), repr.prefix.output_span);
        assert_eq!(plan.elements(), repr.prefix.elements);
        let mut lowered = Preproc::lower(plan);
        lowered.prefix.input_address = repr.prefix.input_address;
        lowered.prefix.output_address = repr.prefix.output_address;
        assert_eq!(lowered, repr, "the decoded plan lowers to another descriptor");
    }
});
