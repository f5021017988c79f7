//! Fuzz target: `simak::model::Model::from_mpk_json` on arbitrary text (SPEC §14), seeded
//! with the repository's manifests (`tests/data/mpk`, `tests/data/mpk/errors`: `cargo xtask
//! fuzz` passes them as extra corpora). Properties:
//!
//! - nothing panics, and memory stays bounded (the run's `-malloc_limit_mb`);
//! - an accepted model's stages are consistent: IFM offsets and sizes back to back within
//!   `ifm_size`, heads back to back within `ofm_size`;
//! - when its buffers are small (at most 1 MiB each), every input stage runs on zero bytes
//!   and the output stages on a zero OFM without an error, and a buffer one byte short is
//!   refused with `BufferSize` (0x70d) and nothing written.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simak::model::{AlignedBytes, Model};

const SMALL: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(m) = Model::from_mpk_json(text) else {
        return;
    };
    let mut end = 0;
    for s in m.outputs() {
        assert_eq!(s.offset, end, "heads back to back");
        end += s.size;
    }
    assert_eq!(end, m.ofm_size());
    for s in m.inputs() {
        assert!(s.offset + s.size <= m.ifm_size());
    }
    for (i, s) in m.inputs().iter().enumerate() {
        if s.input_bytes > SMALL || s.size > SMALL {
            continue;
        }
        let input = AlignedBytes::zeroed(s.input_bytes as usize, 16);
        let mut ifm = AlignedBytes::zeroed(s.size as usize, 16);
        m.prepare_input(i, input.as_slice(), ifm.as_mut_slice(), 1)
            .expect("a zero input runs");
        if s.size > 0 {
            let mut short = vec![0xa5u8; s.size as usize - 1];
            let e = m
                .prepare_input(i, input.as_slice(), &mut short, 1)
                .unwrap_err();
            assert_eq!(e.code(), 0x70d);
            assert!(short.iter().all(|&b| b == 0xa5), "nothing written");
        }
    }
    if m.ofm_size() <= SMALL && m.outputs().iter().all(|s| s.output_bytes <= SMALL) {
        let ofm = AlignedBytes::zeroed(m.ofm_size() as usize, 16);
        let outs = m.postprocess(ofm.as_slice(), 1).expect("a zero OFM runs");
        assert_eq!(outs.len(), m.outputs().len());
    }
});
