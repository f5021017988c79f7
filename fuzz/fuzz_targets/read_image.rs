//! Fuzz target: the command-line tool's PNG / JPEG reader (`simak_cli::read::decode_image`).
//!
//! For any bytes: no panic and no abort, no allocation past the reader's limits (run with
//! `-malloc_limit_mb`, see `cargo xtask fuzz`); an accepted image is `[height, width, 3]`
//! with `height × width × 3 × 4 == data bytes`, the data 4-byte aligned, 8 or 16 bits per
//! sample, and every value finite under the default normalization (in [0, 1]).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use simak_cli::read::{Normalize, decode_image};

/// The image limit fuzzed: 512 MiB, below the run's 600 MB malloc limit (the CLI's default,
/// 1 GiB, is set by `--image-limit` and would need a larger malloc limit).
const LIMIT: u64 = 512 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(img) = decode_image(Path::new("fuzz.png"), data, &Normalize::default(), LIMIT) else {
        return;
    };
    assert!(matches!(img.format, "png" | "jpeg"));
    assert!(matches!(img.bits, 8 | 16));
    let [h, w, c] = img.shape[..] else {
        panic!("shape {:?} is not [h, w, 3]", img.shape);
    };
    assert_eq!(c, 3);
    let bytes = img.data.as_slice();
    assert_eq!(
        Some(bytes.len() as u64),
        h.checked_mul(w).and_then(|n| n.checked_mul(12))
    );
    assert_eq!(bytes.as_ptr() as usize % 4, 0, "data not aligned");
    for v in bytes.chunks_exact(4) {
        let v = f32::from_le_bytes([v[0], v[1], v[2], v[3]]);
        assert!((0.0..=1.0).contains(&v), "value {v}");
    }
});
