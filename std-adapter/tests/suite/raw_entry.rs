//! The raw-pointer entries (`a65::{quant,casttess,quanttess}::execute_raw`, SPEC §6): each
//! refusal (null pointers, capacity, alignment, address overflow, overlap) comes before any
//! write, in the documented order, with its stable code; a nonempty call writes the bytes
//! of the SPEC's worked examples and nothing outside the accessed span; an empty plan
//! looks at no pointer.

use simak::a65::{self, ExecuteError};
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::TiledTensorSpec;
use simak::ops::quant::Params;
use simak::ops::{casttess, quant, quanttess};
use simak::{DType, Port, TensorSpec};
use simak_tests::bytes::Aligned;

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The SPEC §3 worked example: multiplier 0.5, zero point 3.
fn quant_plan(extents: [u64; 1]) -> a65::quant::Prepared {
    a65::quant::prepare(
        &quant::check_inference(&quant::Request {
            input: TensorSpec::contiguous(extents, DType::F32),
            output: TensorSpec::contiguous(extents, DType::I8),
            params: Params::new(0.5).with_zero_point(3),
        })
        .unwrap(),
    )
}

/// Calls the Quant raw entry on `input` and `output` with the given lengths.
fn run_quant(
    prepared: &a65::quant::Prepared,
    input: *const u8,
    input_len: usize,
    output: *mut u8,
    output_len: usize,
) -> Result<(), ExecuteError> {
    // SAFETY: every pointer a test passes is null, or valid for its length (the refusals
    // under test happen before any access; bogus addresses are never dereferenced because
    // their checks fail first).
    unsafe { a65::quant::execute_raw(prepared, input, input_len, output, output_len) }
}

#[test]
fn quant_writes_the_worked_example_and_nothing_else() {
    let prepared = quant_plan([4]);
    let input = Aligned::from_slice(&f32_bytes(&[1.0, -7.0, 300.0, f32::NAN]));
    let mut out = [0xeeu8; 6];
    let r = run_quant(
        &prepared,
        input.as_slice().as_ptr(),
        16,
        out[1..].as_mut_ptr(),
        5,
    );
    assert_eq!(r, Ok(()));
    assert_eq!(out, [0xee, 3, 0xff, 127, 3, 0xee]);
}

#[test]
fn quant_refusals_come_first_in_order_with_their_codes() {
    let prepared = quant_plan([4]);
    let input = Aligned::from_slice(&f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
    let in_ptr = input.as_slice().as_ptr();
    let mut out = [0xeeu8; 8];
    let out_ptr = out.as_mut_ptr();
    let cases: Vec<(Result<(), ExecuteError>, u32)> = vec![
        // Both null: the input is named first.
        (
            run_quant(&prepared, std::ptr::null(), 16, std::ptr::null_mut(), 4),
            0x409,
        ),
        (
            run_quant(&prepared, in_ptr, 16, std::ptr::null_mut(), 4),
            0x40a,
        ),
        // A null pointer is refused even with a zero length.
        (run_quant(&prepared, std::ptr::null(), 0, out_ptr, 4), 0x409),
        (run_quant(&prepared, in_ptr, 15, out_ptr, 4), 0x401),
        (run_quant(&prepared, in_ptr, 16, out_ptr, 3), 0x402),
        (
            run_quant(&prepared, in_ptr.wrapping_add(2), 16, out_ptr, 4),
            0x403,
        ),
        // A bogus address near the top: aligned, long enough, but address + span wraps.
        (
            run_quant(&prepared, (usize::MAX & !3) as *const u8, 16, out_ptr, 4),
            0x405,
        ),
        (
            run_quant(&prepared, in_ptr, 16, (usize::MAX - 1) as *mut u8, 4),
            0x406,
        ),
    ];
    for (k, (r, code)) in cases.into_iter().enumerate() {
        let e = r.expect_err("refused");
        assert_eq!(e.code(), code, "case {k}: {e}");
        assert_eq!(simak::Error::from(e).code(), code);
    }
    assert_eq!(out, [0xee; 8], "nothing written");
    assert_eq!(
        run_quant(&prepared, std::ptr::null(), 16, std::ptr::null_mut(), 4)
            .unwrap_err()
            .to_string(),
        "input pointer is null"
    );
}

#[test]
fn overlapping_ports_in_one_buffer_are_refused_before_any_write() {
    let prepared = quant_plan([4]);
    let mut buf = Aligned::new(32, 0);
    buf.as_mut_slice()[..16].copy_from_slice(&f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
    let before = buf.as_slice().to_vec();
    let base = buf.as_mut_slice().as_mut_ptr();
    // The output starts inside the input's 16 bytes.
    let r = run_quant(&prepared, base, 16, base.wrapping_add(12), 4);
    assert_eq!(r, Err(ExecuteError::Overlap));
    // Generous lengths that overlap beyond the spans are fine: only spans count.
    let r = run_quant(&prepared, base, 32, base.wrapping_add(16), 16);
    assert_eq!(r, Ok(()));
    // 0.5 → 0, 1, 1.5 → 2 (ties to even), 2; plus the zero point 3.
    assert_eq!(&buf.as_slice()[16..20], &[3, 4, 5, 5]);
    assert_eq!(&buf.as_slice()[..16], &before[..16]);
}

#[test]
fn an_empty_plan_looks_at_no_pointer() {
    let prepared = quant_plan([0]);
    assert_eq!(
        run_quant(&prepared, std::ptr::null(), 0, std::ptr::null_mut(), 0),
        Ok(())
    );
}

#[test]
fn casttess_and_quanttess_check_raw_ports_as_their_slices() {
    // SPEC §5 example: [W=2, C=3] compact, one tile of 12 bytes plus 4 of padding.
    let layout = MlaTiled::new(
        [None, None, Some(0), Some(1)],
        [1, 1, 2, 3],
        Channels::Compact,
    );
    let cast = a65::casttess::prepare(
        &casttess::check_inference(&casttess::Request {
            input: TensorSpec::contiguous([2, 3], DType::F32),
            output: TiledTensorSpec::new([2, 3], DType::BF16, layout),
        })
        .unwrap(),
    );
    let input = Aligned::from_slice(&f32_bytes(&[1.0, 2.0, 3.0, -1.0, -2.0, -3.0]));
    let in_ptr = input.as_slice().as_ptr();
    let mut out = Aligned::new(32, 0xee);
    let out_ptr = out.as_mut_slice().as_mut_ptr();
    // SAFETY: null pointers and live buffers of the stated lengths.
    let r = unsafe { a65::casttess::execute_raw(&cast, in_ptr, 24, std::ptr::null_mut(), 16) };
    assert_eq!(r, Err(ExecuteError::NullPointer { port: Port::Output }));
    // SAFETY: as above; the misaligned output pointer stays inside `out`.
    let r = unsafe { a65::casttess::execute_raw(&cast, in_ptr, 24, out_ptr.wrapping_add(8), 24) };
    assert_eq!(r.map_err(|e| e.code()), Err(0x404));
    // SAFETY: as above.
    let r = unsafe { a65::casttess::execute_raw(&cast, in_ptr, 24, out_ptr, 15) };
    assert_eq!(r.map_err(|e| e.code()), Err(0x402));
    assert!(out.as_slice().iter().all(|&b| b == 0xee), "nothing written");
    // SAFETY: as above.
    let r = unsafe { a65::casttess::execute_raw(&cast, in_ptr, 24, out_ptr, 32) };
    assert_eq!(r, Ok(()));
    assert_eq!(
        &out.as_slice()[..16],
        &[
            0x80, 0x00, 0x40, 0x3f, 0x40, 0x40, 0x80, 0x00, 0x40, 0xbf, 0xc0, 0xc0, 0, 0, 0, 0
        ]
    );
    assert!(
        out.as_slice()[16..].iter().all(|&b| b == 0xee),
        "past the capacity untouched"
    );

    let qt = a65::quanttess::prepare(
        &quanttess::check_inference(&quanttess::Request {
            input: TensorSpec::contiguous([2, 3], DType::F32),
            output: TiledTensorSpec::new([2, 3], DType::I8, layout),
            params: Params::new(0.5).with_zero_point(3),
        })
        .unwrap(),
    );
    // SAFETY: as above.
    let r = unsafe { a65::quanttess::execute_raw(&qt, std::ptr::null(), 24, out_ptr, 16) };
    assert_eq!(r.map_err(|e| e.code()), Err(0x409));
    // SAFETY: as above.
    let r = unsafe { a65::quanttess::execute_raw(&qt, in_ptr, 24, out_ptr, 16) };
    assert_eq!(r, Ok(()));
    // 0.5→0+3, 1→1+3, 1.5→2+3, -0.5→-0+3, -1→-1+3, -1.5→-2+3; then 10 padding zeros.
    assert_eq!(
        &out.as_slice()[..16],
        &[3, 4, 5, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    );
}
