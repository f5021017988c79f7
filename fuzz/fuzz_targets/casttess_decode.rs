//! Fuzz target: the device-side CastTess v1 decoder must never panic.
//!
//! For any bytes: `decode` and `parse_bytes` return `Ok` or an error with a nonzero code;
//! an accepted descriptor emits back to the same bytes and reparses to the same
//! representation, its layout admits with the capacity the descriptor states, and its
//! work geometry (tile classes, tasks) builds when it is nonempty; the field listing
//! formats without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simak_core::ev74::casttess::decode;
use simak_core::wire::casttess::{CastTessDescriptorV1, CastTessRepr};

fuzz_target!(|data: &[u8]| {
    let parsed = CastTessRepr::parse_bytes(data);
    match decode(data) {
        Ok(repr) => {
            assert_eq!(parsed, Ok(repr));
            let bytes = repr.to_bytes();
            assert_eq!(&bytes[..], data, "emit is not the inverse of parse");
            assert_eq!(decode(&bytes), Ok(repr));
            let tiled = repr.tiled().expect("a decoded layout admits");
            assert_eq!(tiled.capacity(), repr.prefix.output_span);
            if !repr.is_empty() {
                let g = simak_ev74_fw::tess::TessGeometry::new(&repr).expect("geometry");
                assert!(g.n_classes() <= 16 && g.tasks >= 1);
            }
        }
        Err(e) => {
            assert_ne!(e.code(), 0);
            let _ = format!("{e}");
        }
    }
    if let Ok(raw) = CastTessDescriptorV1::new_checked(data) {
        let _ = format!("{raw}");
    }
});
