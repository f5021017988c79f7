//! Fuzz target: the device-side Quant v1 decoder must never panic.
//!
//! For any bytes: `decode` and `parse_bytes` return `Ok` or an error with a nonzero code;
//! an accepted descriptor emits back to the same bytes and reparses to the same
//! representation; the field listing formats without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simak_core::ev74::quant::decode;
use simak_core::wire::quant::{QuantDescriptorV1, QuantRepr};

fuzz_target!(|data: &[u8]| {
    let parsed = QuantRepr::parse_bytes(data);
    match decode(data) {
        Ok(repr) => {
            assert_eq!(parsed, Ok(repr));
            let bytes = repr.to_bytes();
            assert_eq!(&bytes[..], data, "emit is not the inverse of parse");
            assert_eq!(decode(&bytes), Ok(repr));
        }
        Err(e) => {
            assert_ne!(e.code(), 0);
            let _ = format!("{e}");
        }
    }
    if let Ok(raw) = QuantDescriptorV1::new_checked(data) {
        let _ = format!("{raw}");
    }
});
