//! Fuzz target: the command-line tool's `.safetensors` reader
//! (`simak_cli::read::pick_safetensor` and `unique_safetensor_names`).
//!
//! For any bytes: no panic and no abort, no allocation beyond a small multiple of the input
//! size (run with `-malloc_limit_mb`, see `cargo xtask fuzz`). The only tensor is picked
//! when no name is given, then each of the (first 8) names the header lists; an accepted
//! tensor has the asked-for name (when one was asked for), an accepted dtype,
//! `product(shape) × element size == data bytes` and data aligned to the element size. The
//! check before reading (`precheck`) never panics and never refuses a file the parser
//! accepts, and refuses the same bytes claimed 4 GiB longer.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use simak::DType;
use simak_cli::read::{
    Expect, Need, StTensor, pick_safetensor, precheck, unique_safetensor_names,
};

const ACCEPTED: [DType; 4] = [DType::F32, DType::BF16, DType::F16, DType::I8];

fuzz_target!(|data: &[u8]| {
    let file = Path::new("fuzz.safetensors");
    let _ = unique_safetensor_names(file, data);
    if let Ok(t) = pick_safetensor(file, data, None, &ACCEPTED, "fuzz") {
        check(&t);
    }
    let checked = precheck(Expect::Safetensors, data, data.len() as u64);
    let longer = precheck(Expect::Safetensors, data, data.len() as u64 + (4 << 30));
    let Ok(st) = safetensors::SafeTensors::deserialize(data) else {
        return;
    };
    assert_eq!(checked, Ok(Need::Whole), "precheck refuses what the parser accepts");
    assert!(longer.is_err(), "the same header passes for a file 4 GiB longer");
    for name in st.names().into_iter().take(8) {
        if let Ok(t) = pick_safetensor(file, data, Some(name), &ACCEPTED, "fuzz") {
            assert_eq!(&t.name, name);
            check(&t);
        }
    }
});

fn check(t: &StTensor<'_>) {
    assert!(ACCEPTED.contains(&t.dtype));
    let elem = t.dtype.size();
    let elements = t
        .shape
        .iter()
        .try_fold(1u64, |n, &e| n.checked_mul(e))
        .expect("an accepted shape's element count fits u64");
    let bytes = t.data.as_slice();
    assert_eq!(elements.checked_mul(elem as u64), Some(bytes.len() as u64));
    assert_eq!(bytes.as_ptr() as usize % elem, 0, "data not aligned");
}
