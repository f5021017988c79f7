//! The C ABI's call overhead: `simak_quant_execute` called through the installed shared
//! library (`dlopen` of `target/dist/lib/libsimak.so.0.1.0`, so the call goes through the
//! very code a C program links) against `simak::a65::quant::execute` called from Rust, on
//! the same contiguous FP32 buffers at 16 and 1 Mi elements, in one run.
//!
//! A third column times `simak::a65::quant::execute_raw` (the raw-pointer entry the C
//! function wraps) from Rust, to tell the raw entry's checks from the FFI boundary.
//!
//! Samples of the calls alternate, so that both see the same machine state; each
//! sample times a batch of calls (many for 16 elements, one for 1 Mi) and the report gives
//! the median time per call, the difference and the ratio C / Rust.
//!
//! Run `cargo xtask dist` first, then `cargo bench -p simak-capi --bench overhead`
//! (`SIMAK_LIB=path` names another library).

use std::ffi::{CString, c_char, c_int, c_void};
use std::time::Instant;

use simak::ops::quant::{Params, Request, check_inference};
use simak::{DType, TensorSpec, a65};

// The C ABI's types, as in simak.h.
#[repr(C)]
struct Tensor {
    rank: u32,
    extents: [u64; 6],
    strides: *const u64,
    dtype: u32,
}

#[repr(C)]
struct QuantParams {
    multiplier_bits: u32,
    zero_point: i32,
    rounding: u32,
    flags: u32,
}

type PlanNew = unsafe extern "C" fn(
    *const Tensor,
    *const Tensor,
    *const QuantParams,
    *mut *mut c_void,
    *mut c_void,
) -> u32;
type Execute = unsafe extern "C" fn(
    *const c_void,
    *const c_void,
    usize,
    *mut c_void,
    usize,
    *mut c_void,
) -> u32;
type PlanFree = unsafe extern "C" fn(*mut c_void);

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

const RTLD_NOW: c_int = 2;

/// The library's functions.
struct Library {
    plan_new: PlanNew,
    execute: Execute,
    plan_free: PlanFree,
}

fn symbol(handle: *mut c_void, name: &str) -> *mut c_void {
    let c = CString::new(name).expect("no NUL");
    // SAFETY: `handle` is a live dlopen handle and `c` a NUL-terminated name.
    let p = unsafe { dlsym(handle, c.as_ptr()) };
    assert!(!p.is_null(), "libsimak has no symbol {name}");
    p
}

fn open(path: &str) -> Library {
    let c = CString::new(path).expect("no NUL");
    // SAFETY: a NUL-terminated path; libsimak's initializers have no preconditions.
    let handle = unsafe { dlopen(c.as_ptr(), RTLD_NOW) };
    if handle.is_null() {
        // SAFETY: dlerror has no preconditions.
        let message = unsafe { dlerror() };
        // SAFETY: after a failed dlopen, dlerror returns a NUL-terminated message.
        let why = unsafe { std::ffi::CStr::from_ptr(message) };
        eprintln!("cannot load {path}: {why:?}; run `cargo xtask dist` first");
        std::process::exit(1);
    }
    let plan_new = symbol(handle, "simak_quant_plan_new");
    let execute = symbol(handle, "simak_quant_execute");
    let plan_free = symbol(handle, "simak_quant_plan_free");
    Library {
        // SAFETY: the symbol is simak.h's function of exactly this signature.
        plan_new: unsafe { std::mem::transmute::<*mut c_void, PlanNew>(plan_new) },
        // SAFETY: as above.
        execute: unsafe { std::mem::transmute::<*mut c_void, Execute>(execute) },
        // SAFETY: as above.
        plan_free: unsafe { std::mem::transmute::<*mut c_void, PlanFree>(plan_free) },
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let default = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/dist/lib/libsimak.so.0.1.0"
    );
    let path = std::env::var("SIMAK_LIB").unwrap_or_else(|_| default.to_owned());
    let lib = open(&path);
    println!("library: {path}");
    println!(
        "{:>9} {:>8} {:>13} {:>13} {:>13} {:>11} {:>8}  route",
        "elements", "samples", "Rust (ns)", "Rust raw (ns)", "C (ns)", "C - Rust", "C/Rust"
    );
    for (n, batch, samples) in [(16usize, 20_000usize, 101usize), (1 << 20, 1, 301)] {
        let input: Vec<u8> = (0..n)
            .flat_map(|i| ((i % 1000) as f32 * 0.37 - 185.0).to_le_bytes())
            .collect();
        let mut rust_out = vec![0u8; n];
        let mut c_out = vec![0u8; n];
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous([n as u64], DType::F32),
            output: TensorSpec::contiguous([n as u64], DType::I8),
            params: Params::new(0.5),
        })
        .expect("admitted");
        let prepared = a65::quant::prepare(&plan);

        let mut extents = [0u64; 6];
        extents[0] = n as u64;
        let ti = Tensor {
            rank: 1,
            extents,
            strides: std::ptr::null(),
            dtype: 3,
        };
        let to = Tensor {
            rank: 1,
            extents,
            strides: std::ptr::null(),
            dtype: 5,
        };
        let params = QuantParams {
            multiplier_bits: 0.5f32.to_bits(),
            zero_point: 0,
            rounding: 1,
            flags: 0,
        };
        let mut c_plan: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid tensors, parameters and out-pointer; a null error is allowed.
        let code = unsafe { (lib.plan_new)(&ti, &to, &params, &mut c_plan, std::ptr::null_mut()) };
        assert_eq!(code, 0, "simak_quant_plan_new");

        let mut rust = Vec::with_capacity(samples);
        let mut raw = Vec::with_capacity(samples);
        let mut c = Vec::with_capacity(samples);
        for _ in 0..samples {
            let t = Instant::now();
            for _ in 0..batch {
                a65::quant::execute(&prepared, &input, &mut rust_out).expect("execute");
            }
            rust.push(t.elapsed().as_secs_f64() * 1e9 / batch as f64);
            let t = Instant::now();
            for _ in 0..batch {
                // SAFETY: buffers of the plan's spans that do not overlap.
                let r = unsafe {
                    a65::quant::execute_raw(
                        &prepared,
                        input.as_ptr(),
                        input.len(),
                        rust_out.as_mut_ptr(),
                        rust_out.len(),
                    )
                };
                r.expect("execute_raw");
            }
            raw.push(t.elapsed().as_secs_f64() * 1e9 / batch as f64);
            let t = Instant::now();
            for _ in 0..batch {
                // SAFETY: a live plan; buffers of the plan's spans that do not overlap.
                let code = unsafe {
                    (lib.execute)(
                        c_plan,
                        input.as_ptr().cast(),
                        input.len(),
                        c_out.as_mut_ptr().cast(),
                        c_out.len(),
                        std::ptr::null_mut(),
                    )
                };
                assert_eq!(code, 0);
            }
            c.push(t.elapsed().as_secs_f64() * 1e9 / batch as f64);
        }
        assert_eq!(rust_out, c_out, "the C ABI gives the Rust bytes");
        // SAFETY: the plan made above, freed once.
        unsafe { (lib.plan_free)(c_plan) };
        let (r, rr, cm) = (median(&mut rust), median(&mut raw), median(&mut c));
        println!(
            "{n:>9} {samples:>8} {r:>13.1} {rr:>13.1} {cm:>13.1} {:>11.1} {:>8.3}  {}",
            cm - r,
            cm / r,
            prepared.implementation()
        );
    }
}
