//! Fuzz target: the command-line tool's `.npy` reader (`simak_cli::read::read_npy`).
//!
//! For any bytes: no panic and no abort (a header whose shape overflows npyz's unchecked
//! element count is an error, not a crash, also with debug assertions on as here), no
//! allocation beyond a small multiple of the input size (run with `-malloc_limit_mb`, see
//! `cargo xtask fuzz`); an accepted array has `product(shape) × element size == data
//! bytes`, data aligned to the element size, Fortran strides only for rank ≥ 2 (one per
//! axis); its library admission as the tool does it (`engine::plan`) never panics. The
//! check before reading (`precheck`) never panics, asks only for header bytes within the
//! file, and never refuses a file the reader accepts; on the first 64 bytes of a file
//! claimed 4 GiB longer it never asks for the whole file unless the header declares it.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use simak::DType;
use simak::ops::quant::Params;
use simak_cli::engine;
use simak_cli::read::{Expect, Need, npy_header, precheck, read_npy};

/// `precheck` of `data` as a file of `size` bytes, its head grown as asked.
fn check(data: &[u8], size: u64) -> Result<Need, String> {
    let mut head = &data[..data.len().min(64)];
    loop {
        match precheck(Expect::Npy, head, size)? {
            Need::Head(n) => {
                assert!(n <= size && n > head.len() as u64, "asked for {n} of {size}");
                match data.get(..n as usize) {
                    Some(h) => head = h,
                    // Beyond the bytes we have (the 4 GiB claim): stop here.
                    None => return Ok(Need::Head(n)),
                }
            }
            Need::Whole => return Ok(Need::Whole),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = npy_header(data);
    let checked = check(data, data.len() as u64);
    let claimed = data.len() as u64 + (4 << 30);
    if let Ok(Need::Whole) = check(data, claimed) {
        // Only a header that declares the 4 GiB of data may pass.
        assert!(checked.is_err(), "a file and the same file 4 GiB longer both pass");
    }
    let accepted = [DType::F32, DType::F16, DType::I8];
    let Ok(array) = read_npy(Path::new("fuzz.npy"), data, &accepted, "fuzz") else {
        return;
    };
    assert_eq!(checked, Ok(Need::Whole), "precheck refuses what read_npy accepts");
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
