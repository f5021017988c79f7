//! Fuzz target: the device-side CastTess v1 decoder must never panic.
//!
//! For any bytes: the decoder contract of [`decode::check`]; then an accepted descriptor's
//! layout admits with the capacity the descriptor states, and its work geometry (tile
//! classes, tasks) builds when it is nonempty.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simak_core::ev74::CastTess;

#[path = "common/decode.rs"]
mod decode;

fuzz_target!(|data: &[u8]| {
    if let Some(repr) = decode::check::<CastTess>(data) {
        let tiled = repr.tiled().expect("a decoded layout admits");
        assert_eq!(tiled.capacity(), repr.prefix.output_span);
        if !repr.is_empty() {
            let g = simak_ev74_fw::tess::TessGeometry::new(&repr).expect("geometry");
            assert!(g.n_classes() <= 16 && g.tasks >= 1);
        }
    }
});
