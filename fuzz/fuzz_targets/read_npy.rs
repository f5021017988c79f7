//! Fuzz target: the command-line tool's `.npy` reader (`simak_cli::read::read_npy`).
//!
//! For any bytes: no panic and no abort (a header whose shape overflows npyz's unchecked
//! element count is an error, not a crash, also with debug assertions on as here), no
//! allocation beyond a small multiple of the input size (run with `-malloc_limit_mb`, see
//! `cargo xtask fuzz`); an accepted array has `product(shape) × element size == data
//! bytes`, data aligned to the element size, Fortran strides only for rank ≥ 2 (one per
//! axis); its library admission as the tool does it (`engine::plan`) never panics.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use simak::DType;
use simak::ops::quant::Params;
use simak_cli::engine;
use simak_cli::read::{npy_header, read_npy};

fuzz_target!(|data: &[u8]| {
    let _ = npy_header(data);
    let accepted = [DType::F32, DType::F16, DType::I8];
    let Ok(array) = read_npy(Path::new("fuzz.npy"), data, &accepted, "fuzz") else {
        return;
    };
    assert!(accepted.contains(&array.dtype));
    let elem = array.dtype.size();
    let elements = array
        .shape
        .iter()
        .try_fold(1u64, |n, &e| n.checked_mul(e))
        .expect("an accepted shape's element count fits u64");
    let bytes = array.data.as_slice();
    assert_eq!(elements.checked_mul(elem as u64), Some(bytes.len() as u64));
    assert_eq!(bytes.as_ptr() as usize % elem, 0, "data not aligned");
    match &array.element_strides {
        Some(s) => {
            assert!(array.fortran && array.shape.len() > 1);
            assert_eq!(s.len(), array.shape.len());
        }
        None => assert!(!array.fortran),
    }
    let strides = array.byte_strides();
    let _ = engine::plan(&array.tensor(&strides), Params::new(1.0));
});
