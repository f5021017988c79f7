//! Admission (SPEC §2, §3) and A65 buffer checks (SPEC §6): one test per rule, each
//! asserting the exact error value, plus the acceptances the rules must not catch.

use simak::a65::{self, ExecuteError};
use simak::ops::casttess::TiledTensorSpec;
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{AdmissionError, DType, Port, TensorSpec};
use simak_tests::bytes::{Aligned, encode};

fn req<const R: usize>(input: TensorSpec<R>, output: TensorSpec<R>) -> Request<R> {
    Request {
        input,
        output,
        params: Params::new(1.0),
    }
}

fn f32s<const R: usize>(extents: [u64; R]) -> TensorSpec<R> {
    TensorSpec::contiguous(extents, DType::F32)
}

fn i8s<const R: usize>(extents: [u64; R]) -> TensorSpec<R> {
    TensorSpec::contiguous(extents, DType::I8)
}

fn with_params(params: Params) -> Result<simak::ops::quant::Plan, AdmissionError> {
    check_inference(&Request {
        input: f32s([4]),
        output: i8s([4]),
        params,
    })
}

// ---------------------------------------------------------------------------------------
// DType

#[test]
fn dtype_input_i8() {
    assert_eq!(
        check_inference(&req(TensorSpec::contiguous([4], DType::I8), i8s([4]))),
        Err(AdmissionError::DType {
            port: Port::Input,
            found: DType::I8
        })
    );
}

#[test]
fn dtype_output_not_i8() {
    for found in [DType::F32, DType::BF16, DType::F16] {
        assert_eq!(
            check_inference(&req(f32s([4]), TensorSpec::contiguous([4], found))),
            Err(AdmissionError::DType {
                port: Port::Output,
                found
            }),
            "{found}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Shape

#[test]
fn shape_mismatch() {
    assert_eq!(
        check_inference(&req(f32s([2, 3]), i8s([2, 4]))),
        Err(AdmissionError::ShapeMismatch {
            axis: 1,
            input: 3,
            output: 4
        })
    );
    // An empty output does not excuse a mismatch.
    assert_eq!(
        check_inference(&req(f32s([5, 1]), i8s([0, 1]))),
        Err(AdmissionError::ShapeMismatch {
            axis: 0,
            input: 5,
            output: 0
        })
    );
}

// ---------------------------------------------------------------------------------------
// Strides

#[test]
fn stride_not_multiple() {
    assert_eq!(
        check_inference(&req(TensorSpec::strided([3], [6], DType::F32), i8s([3]))),
        Err(AdmissionError::StrideNotMultiple {
            port: Port::Input,
            axis: 0,
            stride: 6,
            elem_size: 4
        })
    );
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([2, 2], [4, 3], DType::F16),
            i8s([2, 2])
        )),
        Err(AdmissionError::StrideNotMultiple {
            port: Port::Input,
            axis: 1,
            stride: 3,
            elem_size: 2
        })
    );
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([2, 2], [5, 2], DType::BF16),
            i8s([2, 2])
        )),
        Err(AdmissionError::StrideNotMultiple {
            port: Port::Input,
            axis: 0,
            stride: 5,
            elem_size: 2
        })
    );
    // Strides of an empty tensor are still validated (SPEC §2).
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([0, 3], [2, 4], DType::F32),
            i8s([0, 3])
        )),
        Err(AdmissionError::StrideNotMultiple {
            port: Port::Input,
            axis: 0,
            stride: 2,
            elem_size: 4
        })
    );
}

#[test]
fn zero_stride() {
    assert_eq!(
        check_inference(&req(TensorSpec::strided([3], [0], DType::F32), i8s([3]))),
        Err(AdmissionError::ZeroStride {
            port: Port::Input,
            axis: 0,
            extent: 3
        })
    );
    assert_eq!(
        check_inference(&req(
            f32s([2, 3]),
            TensorSpec::strided([2, 3], [0, 1], DType::I8)
        )),
        Err(AdmissionError::ZeroStride {
            port: Port::Output,
            axis: 0,
            extent: 2
        })
    );
}

#[test]
fn span_overflow_element_count() {
    // 2^32 · 2^32 elements: the count overflows u64 (strides themselves fit).
    assert_eq!(
        check_inference(&req(f32s([1 << 32, 1 << 32]), i8s([1 << 32, 1 << 32]))),
        Err(AdmissionError::SpanOverflow { port: Port::Input })
    );
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([1 << 32, 1 << 32], [4 << 32, 4], DType::F32),
            i8s([1 << 32, 1 << 32])
        )),
        Err(AdmissionError::SpanOverflow { port: Port::Input })
    );
}

#[test]
fn span_overflow_span() {
    // elem + 2^63 · 2 overflows.
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([3], [1 << 63], DType::F32),
            i8s([3])
        )),
        Err(AdmissionError::SpanOverflow { port: Port::Input })
    );
    // Output: 1 + u64::MAX · 1 overflows; the element count (2) is fine.
    assert_eq!(
        check_inference(&req(
            f32s([2]),
            TensorSpec::strided([2], [u64::MAX], DType::I8)
        )),
        Err(AdmissionError::SpanOverflow { port: Port::Output })
    );
    // Overflow from the sum alone, each product fitting:
    // 4 + 2^62·2 + (2^63 − 4)·1 = 2^64.
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([3, 2], [1 << 62, (1 << 63) - 4], DType::F32),
            i8s([3, 2])
        )),
        Err(AdmissionError::SpanOverflow { port: Port::Input })
    );
    // The boundary: 4 + 2·(2^63 − 4) = 2^64 − 4 fits and is admitted.
    let plan = check_inference(&req(
        TensorSpec::strided([3], [(1 << 63) - 4], DType::F32),
        i8s([3]),
    ))
    .unwrap();
    assert_eq!(plan.input().span(), u64::MAX - 3);
}

/// A contiguous spec whose packed strides do not fit u64: the caller gave no stride, so the
/// overflow is a span overflow (SPEC §2: checked u64 arithmetic, overflow is an error).
#[test]
fn span_overflow_contiguous_packed_strides() {
    // 4 × 2^62 elements of 4 bytes: axis 0's packed stride would be 2^64.
    assert_eq!(
        check_inference(&req(f32s([4, 1 << 62]), i8s([4, 1 << 62]))),
        Err(AdmissionError::SpanOverflow { port: Port::Input })
    );
    assert_eq!(
        check_inference(&req(
            TensorSpec::contiguous([2, 1 << 63], DType::F16),
            i8s([2, 1 << 63])
        )),
        Err(AdmissionError::SpanOverflow { port: Port::Input })
    );
}

// ---------------------------------------------------------------------------------------
// Nonoverlap proof

#[test]
fn overlap_rows_overlap() {
    // [3, 4] with strides (8, 4): each row spans 16 bytes but rows are 8 apart.
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([3, 4], [8, 4], DType::F32),
            i8s([3, 4])
        )),
        Err(AdmissionError::Overlap {
            port: Port::Input,
            axis: 0,
            stride: 8,
            required: 16
        })
    );
}

#[test]
fn overlap_equal_strides() {
    // Two axes with the same stride: the second in sort order fails.
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([2, 2], [4, 4], DType::F32),
            i8s([2, 2])
        )),
        Err(AdmissionError::Overlap {
            port: Port::Input,
            axis: 1,
            stride: 4,
            required: 8
        })
    );
    assert_eq!(
        check_inference(&req(
            f32s([3, 3]),
            TensorSpec::strided([3, 3], [2, 2], DType::I8)
        )),
        Err(AdmissionError::Overlap {
            port: Port::Output,
            axis: 1,
            stride: 2,
            required: 5
        })
    );
}

#[test]
fn overlap_interleaved_but_disjoint_fails_the_proof() {
    // [3, 2] with strides (8, 12): elements at bytes {0, 8, 16} + {0, 12} =
    // {0, 8, 16, 12, 20, 28}; the 4-byte elements do not actually overlap, but the proof
    // needs 12 ≥ 4 + 8·2 = 20 and fails (SPEC §2: conservative).
    let offsets: Vec<u64> = (0..3)
        .flat_map(|i| (0..2).map(move |j| 8 * i + 12 * j))
        .collect();
    for (a, &x) in offsets.iter().enumerate() {
        for &y in &offsets[a + 1..] {
            assert!(x.abs_diff(y) >= 4, "the example really is disjoint");
        }
    }
    assert_eq!(
        check_inference(&req(
            TensorSpec::strided([3, 2], [8, 12], DType::F32),
            i8s([3, 2])
        )),
        Err(AdmissionError::Overlap {
            port: Port::Input,
            axis: 1,
            stride: 12,
            required: 20
        })
    );
    // Output port, transposed-interleaved: [2, 3] strides (1, 1)·… (2, 3) → offsets
    // {0, 3, 6} + {0, 2} disjoint, but 3 < 1 + 2·1... sorted (2: axis 0, 3: axis 1):
    // axis 0 stride 2 ≥ 1, covered 1 + 2 = 3; axis 1 stride 3 ≥ 3 passes; so use (2, 3)
    // with extent 3 on axis 0: covered 1 + 2·2 = 5 > 3.
    assert_eq!(
        check_inference(&req(
            f32s([3, 2]),
            TensorSpec::strided([3, 2], [2, 3], DType::I8)
        )),
        Err(AdmissionError::Overlap {
            port: Port::Output,
            axis: 1,
            stride: 3,
            required: 5
        })
    );
}

#[test]
fn overlap_proof_accepts_the_boundary() {
    // Stride exactly equal to the span of the faster axes passes.
    let plan = check_inference(&req(
        TensorSpec::strided([3, 2], [8, 20], DType::F32),
        TensorSpec::strided([3, 2], [2, 5], DType::I8),
    ))
    .unwrap();
    assert_eq!(plan.input().span(), 4 + 16 + 20);
    assert_eq!(plan.output().span(), 1 + 4 + 5);
}

// ---------------------------------------------------------------------------------------
// Parameters

#[test]
fn multiplier_not_finite() {
    for bits in [
        0x7fc0_0000u32, // NaN
        0x7f80_0001,    // signalling NaN
        0xffc0_0000,    // negative NaN
        0x7f80_0000,    // +inf
        0xff80_0000,    // -inf
    ] {
        assert_eq!(
            with_params(Params::from_bits(bits)),
            Err(AdmissionError::MultiplierNotFinite { bits }),
            "0x{bits:08x}"
        );
    }
    assert_eq!(
        with_params(Params::new(f32::INFINITY)),
        Err(AdmissionError::MultiplierNotFinite { bits: 0x7f80_0000 })
    );
}

#[test]
fn multiplier_not_positive() {
    for bits in [
        0x0000_0000u32, // +0
        0x8000_0000,    // -0
        0xbf80_0000,    // -1
        0x8000_0001,    // negative subnormal
        0x807f_ffff,    // negative subnormal
        0xff7f_ffff,    // most negative finite
    ] {
        assert_eq!(
            with_params(Params::from_bits(bits)),
            Err(AdmissionError::MultiplierNotPositive { bits }),
            "0x{bits:08x}"
        );
    }
}

#[test]
fn multiplier_subnormal_and_extremes_accepted() {
    for bits in [
        0x0000_0001u32,
        0x007f_ffff,
        0x0080_0000,
        0x7f7f_ffff,
        0x3e99_999a,
    ] {
        let plan = with_params(Params::from_bits(bits)).unwrap();
        assert_eq!(plan.params().multiplier_bits, bits);
        assert_eq!(plan.multiplier().bits(), bits);
    }
}

#[test]
fn zero_point_out_of_range() {
    for zero_point in [128, -129, i32::MAX, i32::MIN, 255, -256] {
        assert_eq!(
            with_params(Params::new(1.0).with_zero_point(zero_point)),
            Err(AdmissionError::ZeroPointOutOfRange { zero_point }),
            "{zero_point}"
        );
    }
    for zero_point in [-128, 127, 0] {
        assert_eq!(
            with_params(Params::new(1.0).with_zero_point(zero_point))
                .unwrap()
                .zero_point(),
            zero_point
        );
    }
}

#[test]
fn rounding_code() {
    for code in [4u32, 5, 0xff, u32::MAX] {
        assert_eq!(
            Rounding::try_from(code),
            Err(AdmissionError::RoundingCode { code })
        );
    }
    // SPEC §7 codes.
    assert_eq!(Rounding::try_from(0), Ok(Rounding::TowardZero));
    assert_eq!(Rounding::try_from(1), Ok(Rounding::NearestEven));
    assert_eq!(Rounding::try_from(2), Ok(Rounding::TowardPositive));
    assert_eq!(Rounding::try_from(3), Ok(Rounding::TowardNegative));
    for r in Rounding::ALL {
        assert_eq!(Rounding::try_from(r.code()), Ok(r));
    }
    assert_eq!(Rounding::default(), Rounding::NearestEven);
    assert_eq!(Params::new(1.0).rounding, Rounding::NearestEven);
    assert_eq!(Params::new(1.0).zero_point, 0);
}

// ---------------------------------------------------------------------------------------
// Acceptances

#[test]
fn extent_one_axis_with_any_stride_is_normalized() {
    // Axis 0 has extent 1 and strides that are not multiples of the element size (or huge).
    for (sin, sout) in [(5u64, 7u64), (3, 0), (u64::MAX, u64::MAX), (0, 1)] {
        let plan = check_inference(&Request {
            input: TensorSpec::strided([1, 3], [sin, 4], DType::F32),
            output: TensorSpec::strided([1, 3], [sout, 1], DType::I8),
            params: Params::new(2.0),
        })
        .unwrap_or_else(|e| panic!("strides ({sin}, {sout}): {e:?}"));
        assert_eq!(plan.input().strides()[0], 0);
        assert_eq!(plan.output().strides()[0], 0);
        assert_eq!(plan.input().span(), 12);
        assert_eq!(plan.output().span(), 3);
        let input = Aligned::from_slice(&encode(
            DType::F32,
            &[1.25f32.to_bits(), (-3.0f32).to_bits(), 0.75f32.to_bits()],
        ));
        let mut out = [0u8; 3];
        a65::quant::execute(&a65::quant::prepare(&plan), input.as_slice(), &mut out).unwrap();
        assert_eq!(out.map(|b| b as i8), [2, -6, 2]);
    }
}

#[test]
fn empty_tensor_with_zero_stride_on_the_empty_axis() {
    let plan = check_inference(&Request {
        input: TensorSpec::strided([0, 3], [0, 4], DType::F32),
        output: TensorSpec::strided([0, 3], [0, 1], DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    assert!(plan.is_empty());
    assert_eq!(plan.elements(), 0);
    assert_eq!(plan.input().span(), 0);
    assert_eq!(plan.output().span(), 0);
    let prepared = a65::quant::prepare(&plan);
    // No storage needed.
    a65::quant::execute(&prepared, &[], &mut []).unwrap();
    // Nothing written into whatever buffers are passed (even a misaligned input).
    let storage = Aligned::new(9, 0x11);
    let mut out = [0xa5u8; 8];
    a65::quant::execute(&prepared, &storage.as_slice()[1..], &mut out).unwrap();
    assert_eq!(out, [0xa5; 8]);
    // Empty with a zero stride on a non-empty axis of extent > 1 is still rejected.
    assert_eq!(
        check_inference(&Request {
            input: TensorSpec::strided([0, 3], [0, 0], DType::F32),
            output: TensorSpec::strided([0, 3], [0, 1], DType::I8),
            params: Params::new(1.0),
        }),
        Err(AdmissionError::ZeroStride {
            port: Port::Input,
            axis: 1,
            extent: 3
        })
    );
}

#[test]
fn rank_zero_scalar() {
    for (input, output) in [
        (
            TensorSpec::<0>::contiguous([], DType::F32),
            TensorSpec::<0>::contiguous([], DType::I8),
        ),
        (
            TensorSpec::<0>::strided([], [], DType::F32),
            TensorSpec::<0>::strided([], [], DType::I8),
        ),
    ] {
        let plan = check_inference(&Request {
            input,
            output,
            params: Params::new(2.0).with_zero_point(-3),
        })
        .unwrap();
        assert_eq!(plan.elements(), 1);
        assert_eq!(plan.input().rank(), 0);
        assert_eq!(plan.input().span(), 4);
        assert_eq!(plan.output().span(), 1);
        let input = Aligned::from_slice(&1.25f32.to_le_bytes());
        let mut out = [0u8; 3];
        a65::quant::execute(&a65::quant::prepare(&plan), input.as_slice(), &mut out).unwrap();
        // 1.25 × 2 = 2.5 → 2 (ties to even) − 3 = −1; bytes past the span untouched.
        assert_eq!(out, [(-1i8) as u8, 0, 0]);
    }
}

// ---------------------------------------------------------------------------------------
// A65 execute buffer checks: exact error values, and nothing written.

fn plan_f32_4() -> a65::quant::Prepared {
    a65::quant::prepare(&check_inference(&req(f32s([4]), i8s([4]))).unwrap())
}

fn data_f32_4() -> Vec<u8> {
    encode(DType::F32, &[1.0f32, 2.0, 3.0, 4.0].map(f32::to_bits))
}

#[test]
fn execute_input_too_short() {
    let prepared = plan_f32_4();
    let input = Aligned::from_slice(&data_f32_4()[..15]);
    let mut out = [0xa5u8; 4];
    assert_eq!(
        a65::quant::execute(&prepared, input.as_slice(), &mut out),
        Err(ExecuteError::Capacity {
            port: Port::Input,
            required: 16,
            found: 15
        })
    );
    assert_eq!(out, [0xa5; 4]);
    let mut out = [0xa5u8; 4];
    assert_eq!(
        a65::quant::execute(&prepared, &[], &mut out),
        Err(ExecuteError::Capacity {
            port: Port::Input,
            required: 16,
            found: 0
        })
    );
    assert_eq!(out, [0xa5; 4]);
}

#[test]
fn execute_output_too_short() {
    let prepared = plan_f32_4();
    let input = Aligned::from_slice(&data_f32_4());
    let mut out = [0xa5u8; 3];
    assert_eq!(
        a65::quant::execute(&prepared, input.as_slice(), &mut out),
        Err(ExecuteError::Capacity {
            port: Port::Output,
            required: 4,
            found: 3
        })
    );
    assert_eq!(out, [0xa5; 3]);
}

#[test]
fn execute_capacity_uses_the_strided_span() {
    // Input [2] stride 8 → span 12 (not 8); output [2] stride 5 → span 6 (not 2).
    let prepared = a65::quant::prepare(
        &check_inference(&req(
            TensorSpec::strided([2], [8], DType::F32),
            TensorSpec::strided([2], [5], DType::I8),
        ))
        .unwrap(),
    );
    let input = Aligned::new(12, 0);
    let mut out = [0xa5u8; 6];
    assert_eq!(
        a65::quant::execute(&prepared, &input.as_slice()[..11], &mut out),
        Err(ExecuteError::Capacity {
            port: Port::Input,
            required: 12,
            found: 11
        })
    );
    assert_eq!(
        a65::quant::execute(&prepared, input.as_slice(), &mut out[..5]),
        Err(ExecuteError::Capacity {
            port: Port::Output,
            required: 6,
            found: 5
        })
    );
    assert_eq!(out, [0xa5; 6]);
    // Exactly the span is enough; the gap byte stays untouched.
    a65::quant::execute(&prepared, input.as_slice(), &mut out).unwrap();
    assert_eq!(out, [0, 0xa5, 0xa5, 0xa5, 0xa5, 0]);
}

#[test]
fn execute_misaligned_input() {
    for (dtype, align) in [(DType::F32, 4usize), (DType::F16, 2), (DType::BF16, 2)] {
        let prepared = a65::quant::prepare(
            &check_inference(&req(TensorSpec::contiguous([4], dtype), i8s([4]))).unwrap(),
        );
        let storage = Aligned::new(4 * dtype.size() + 8, 0x3c);
        let input = &storage.as_slice()[1..];
        assert_eq!(input.as_ptr() as usize % align, 1);
        let mut out = [0xa5u8; 4];
        assert_eq!(
            a65::quant::execute(&prepared, input, &mut out),
            Err(ExecuteError::Misaligned {
                port: Port::Input,
                address: input.as_ptr() as usize,
                align
            }),
            "{dtype}"
        );
        assert_eq!(out, [0xa5; 4], "{dtype}");
        // The same buffer one element further on is aligned again and runs.
        let input = &storage.as_slice()[dtype.size()..];
        a65::quant::execute(&prepared, input, &mut out).unwrap();
    }
}

#[test]
fn execute_output_needs_no_alignment() {
    let prepared = plan_f32_4();
    let input = Aligned::from_slice(&data_f32_4());
    let mut storage = Aligned::new(8, 0xa5);
    a65::quant::execute(
        &prepared,
        input.as_slice(),
        &mut storage.as_mut_slice()[1..5],
    )
    .unwrap();
    assert_eq!(storage.as_slice(), &[0xa5, 1, 2, 3, 4, 0xa5, 0xa5, 0xa5]);
}

#[test]
fn execute_checks_the_input_port_first() {
    // Documented order: input (capacity, alignment, address), then output.
    let prepared = plan_f32_4();
    let input = Aligned::from_slice(&data_f32_4()[..15]);
    let mut out = [0xa5u8; 3];
    assert_eq!(
        a65::quant::execute(&prepared, input.as_slice(), &mut out),
        Err(ExecuteError::Capacity {
            port: Port::Input,
            required: 16,
            found: 15
        })
    );
    assert_eq!(out, [0xa5; 3]);
}

// ---------------------------------------------------------------------------------------
// Requests of run-time rank (`check_inference_dyn`) against the const-generic ones

/// Random extents (some 0 or 1) and strides (packed, padded, permuted, or broken) of rank
/// `R`, for one dtype.
fn random_port<const R: usize>(
    rng: &mut simak_tests::rng::Rng,
    extents: [u64; R],
    elem: u64,
) -> TensorSpec<R> {
    let dtype = match elem {
        4 => DType::F32,
        2 => DType::BF16,
        _ => DType::I8,
    };
    match rng.below(4) {
        0 => TensorSpec::contiguous(extents, dtype),
        1 => {
            // Row-major with padding, or a random (possibly overlapping) stride set.
            let mut strides = [0u64; R];
            let mut s = elem;
            for axis in (0..R).rev() {
                strides[axis] = s;
                s *= extents[axis].max(1) + rng.below(2);
            }
            TensorSpec::strided(extents, strides, dtype)
        }
        2 => {
            let mut strides = [0u64; R];
            for st in strides.iter_mut() {
                *st = elem * rng.below(64);
            }
            TensorSpec::strided(extents, strides, dtype)
        }
        _ => {
            let mut strides = [0u64; R];
            for st in strides.iter_mut() {
                *st = rng.below(200);
            }
            TensorSpec::strided(extents, strides, dtype)
        }
    }
}

fn dyn_of<const R: usize>(spec: &TensorSpec<R>) -> simak::DynSpec<'_> {
    let strides = match spec.layout() {
        simak::Layout::Contiguous => None,
        simak::Layout::Strided(s) => Some(&s[..]),
    };
    simak::DynSpec {
        extents: spec.extents(),
        strides,
        dtype: spec.dtype(),
    }
}

fn same_plans_at_rank<const R: usize>(rng: &mut simak_tests::rng::Rng) {
    use simak::layout::{Channels, MlaTiled};
    use simak::ops::casttess::TiledSpec;
    use simak::ops::{casttess, quant, quanttess};
    for _ in 0..200 {
        let mut extents = [0u64; R];
        for e in extents.iter_mut() {
            *e = rng.below(6);
        }
        let element = [4, 2][rng.below(2) as usize];
        let input = random_port(rng, extents, element);
        let output = random_port(rng, extents, 1);
        let multiplier = [0.5f32, 3.0, -1.0][rng.below(3) as usize];
        let params = Params::new(multiplier);
        let fixed = check_inference(&Request {
            input,
            output,
            params,
        });
        let dynamic = quant::check_inference_dyn(&quant::DynRequest {
            input: dyn_of(&input),
            output: dyn_of(&output),
            params,
        });
        assert_eq!(fixed, dynamic, "quant rank {R}: {input:?} {output:?}");
        if R == 0 {
            continue;
        }
        let mut axes = [None; 4];
        for (slot, axis) in [3usize, 2, 1, 0].into_iter().zip(0..R.min(4)) {
            axes[slot] = Some((R - 1 - axis) as u8);
        }
        let mut tile = [1u32; 4];
        for (slot, t) in tile.iter_mut().enumerate() {
            if let Some(a) = axes[slot] {
                *t = 1 + rng.below(extents[a as usize].max(1)) as u32;
            }
        }
        let channels = [Channels::Compact, Channels::PadTo16][rng.below(2) as usize];
        let layout = MlaTiled::new(axes, tile, channels);
        let output = TiledSpec {
            extents: &extents,
            dtype: DType::BF16,
            layout,
        };
        assert_eq!(
            casttess::check_inference(&casttess::Request {
                input,
                output: TiledTensorSpec::new(*input.extents(), DType::BF16, layout)
            }),
            casttess::check_inference_dyn(&casttess::DynRequest {
                input: dyn_of(&input),
                output,
            }),
            "casttess rank {R}"
        );
        assert_eq!(
            quanttess::check_inference(&quanttess::Request {
                input,
                output: TiledTensorSpec::new(*input.extents(), DType::I8, layout),
                params
            }),
            quanttess::check_inference_dyn(&quanttess::DynRequest {
                input: dyn_of(&input),
                output: TiledSpec {
                    dtype: DType::I8,
                    ..output
                },
                params,
            }),
            "quanttess rank {R}"
        );
    }
}

#[test]
fn runtime_rank_requests_give_the_const_generic_plans() {
    let mut rng = simak_tests::rng::Rng::new(0x5eed_0011);
    same_plans_at_rank::<0>(&mut rng);
    same_plans_at_rank::<1>(&mut rng);
    same_plans_at_rank::<2>(&mut rng);
    same_plans_at_rank::<3>(&mut rng);
    same_plans_at_rank::<4>(&mut rng);
    same_plans_at_rank::<5>(&mut rng);
    same_plans_at_rank::<6>(&mut rng);
}

#[test]
fn runtime_rank_requests_check_their_own_rules() {
    use simak::layout::{Channels, MlaTiled};
    use simak::ops::casttess::TiledSpec;
    use simak::ops::{casttess, quant, quanttess};
    let seven = [1u64; 7];
    let rank7 = quant::check_inference_dyn(&quant::DynRequest {
        input: simak::DynSpec::contiguous(&seven, DType::F32),
        output: simak::DynSpec::contiguous(&seven, DType::I8),
        params: Params::new(1.0),
    });
    assert_eq!(
        rank7,
        Err(AdmissionError::Rank {
            rank: 7,
            min: 0,
            max: 6
        })
    );
    let extents = [2u64, 3];
    assert_eq!(
        quant::check_inference_dyn(&quant::DynRequest {
            input: simak::DynSpec::strided(&extents, &[12], DType::F32),
            output: simak::DynSpec::contiguous(&extents, DType::I8),
            params: Params::new(1.0),
        }),
        Err(AdmissionError::StridesRank {
            port: Port::Input,
            extents: 2,
            strides: 1
        })
    );
    assert_eq!(
        quant::check_inference_dyn(&quant::DynRequest {
            input: simak::DynSpec::contiguous(&extents, DType::F32),
            output: simak::DynSpec::contiguous(&extents[..1], DType::I8),
            params: Params::new(1.0),
        }),
        Err(AdmissionError::ShapeMismatch {
            axis: 1,
            input: 3,
            output: 0
        })
    );
    let layout = MlaTiled::new(
        [None, None, Some(0), Some(1)],
        [1, 1, 2, 3],
        Channels::Compact,
    );
    let input = simak::DynSpec::contiguous(&extents, DType::F32);
    let cast = |dtype, out: &[u64]| {
        casttess::check_inference_dyn(&casttess::DynRequest {
            input,
            output: TiledSpec {
                extents: out,
                dtype,
                layout,
            },
        })
    };
    assert!(cast(DType::BF16, &extents).is_ok());
    assert_eq!(
        cast(DType::I8, &extents),
        Err(AdmissionError::DType {
            port: Port::Output,
            found: DType::I8
        })
    );
    assert_eq!(
        cast(DType::BF16, &[2, 4]),
        Err(AdmissionError::ShapeMismatch {
            axis: 1,
            input: 3,
            output: 4
        })
    );
    assert_eq!(
        quanttess::check_inference_dyn(&quanttess::DynRequest {
            input,
            output: TiledSpec {
                extents: &extents,
                dtype: DType::BF16,
                layout,
            },
            params: Params::new(1.0),
        }),
        Err(AdmissionError::DType {
            port: Port::Output,
            found: DType::BF16
        })
    );
    // The one-call A65 convenience: admission and preparation together.
    let prepared = a65::quant::check_inference(&req(f32s([4]), i8s([4]))).unwrap();
    let mut out = [0u8; 4];
    a65::quant::execute(&prepared, &encode(DType::F32, &[0x3f80_0000; 4]), &mut out).unwrap();
    assert_eq!(out, [1; 4]);
    assert_eq!(
        a65::quant::check_inference(&req(f32s([4]), f32s([4]))).unwrap_err(),
        AdmissionError::DType {
            port: Port::Output,
            found: DType::F32
        }
    );
}
