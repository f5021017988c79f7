//! Exhaustive 16-bit sweeps through the firmware entries on the simulator, against the
//! independent f64 oracle (SPEC §3, §8).
//!
//! Every BF16 and FP16 bit pattern (65,536 elements, one contiguous tensor: DMA blocks on
//! 4 workers) for every rounding mode, extreme and middle zero points and a multiplier
//! profile that includes subnormal multipliers, powers of two across the whole binary32
//! range and random normals; on the IEEE unit and on the flushing (DAZ + FTZ) model. A
//! strided view of the same patterns runs the scatter and direct paths too.

use simak::ev74::quant::{SimOptions, run_sim_with};
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_ev74_fw::SpanKind;
use simak_tests::{oracle, profiles};

fn multipliers() -> Vec<u32> {
    let mut m: Vec<u32> = vec![profiles::ONE, profiles::POINT_THREE];
    m.extend(profiles::SUBNORMAL);
    m.extend((-149..=127).step_by(23).map(profiles::power_of_two));
    m.extend(profiles::random_normal(6));
    m
}

fn sweep(dtype: DType) {
    let n = 1u64 << 16;
    let input: Vec<u8> = (0..=0xffffu16).flat_map(|b| b.to_le_bytes()).collect();
    let mut runs = 0;
    let mut output = vec![0u8; n as usize];
    for m in multipliers() {
        for rounding in Rounding::ALL {
            for zp in [-128, 0, 127] {
                let plan = check_inference(&Request {
                    input: TensorSpec::contiguous([n], dtype),
                    output: TensorSpec::contiguous([n], DType::I8),
                    params: Params::from_bits(m)
                        .with_zero_point(zp)
                        .with_rounding(rounding),
                })
                .unwrap();
                for flush_to_zero in [false, true] {
                    let mut options = SimOptions::new(4);
                    options.flush_to_zero = flush_to_zero;
                    output.fill(0x77);
                    let run = run_sim_with(&plan, &input, &mut output, &options).unwrap();
                    assert_eq!(run.report.unwrap().kind, SpanKind::Dma);
                    runs += 1;
                    for (bits, &got) in output.iter().enumerate() {
                        let want = oracle::quant(dtype, bits as u32, m, zp, rounding);
                        assert_eq!(
                            got as i8, want,
                            "{dtype} 0x{bits:04x} m 0x{m:08x} zp {zp} {rounding} ftz {flush_to_zero}"
                        );
                    }
                }
            }
        }
    }
    eprintln!("{dtype}: {runs} sweeps of 65536 patterns through the firmware entries");
}

#[test]
fn every_bf16_pattern() {
    sweep(DType::BF16);
}

#[test]
fn every_f16_pattern() {
    sweep(DType::F16);
}

#[test]
fn every_16_bit_pattern_through_transpose_scatter_and_direct_paths() {
    // [256, 256] read transposed (transpose panels), [128, 256] every other element
    // (scatter: no contiguous input axis), and [2048, 32] rows of 32 with gaps (direct).
    let input: Vec<u8> = (0..=0xffffu16).flat_map(|b| b.to_le_bytes()).collect();
    for dtype in [DType::BF16, DType::F16] {
        for (shape, in_strides, out_strides, kind) in [
            ([256u64, 256], [2u64, 512], [256u64, 1], SpanKind::Transpose),
            ([128, 256], [1024, 4], [256, 1], SpanKind::Scatter),
            ([2048, 32], [64, 2], [40, 1], SpanKind::Direct),
        ] {
            let plan = check_inference(&Request {
                input: TensorSpec::strided(shape, in_strides, dtype),
                output: TensorSpec::strided(shape, out_strides, DType::I8),
                params: Params::from_bits(profiles::POINT_THREE)
                    .with_zero_point(-5)
                    .with_rounding(Rounding::TowardNegative),
            })
            .unwrap();
            let mut output = vec![0u8; plan.output().span() as usize];
            let run = run_sim_with(&plan, &input, &mut output, &SimOptions::new(3)).unwrap();
            assert_eq!(run.report.unwrap().kind, kind);
            for i in 0..shape[0] {
                for j in 0..shape[1] {
                    let bits = ((i * in_strides[0] + j * in_strides[1]) / 2) as u32;
                    let got = output[(i * out_strides[0] + j * out_strides[1]) as usize];
                    let want = oracle::quant(
                        dtype,
                        bits,
                        profiles::POINT_THREE,
                        -5,
                        Rounding::TowardNegative,
                    );
                    assert_eq!(got as i8, want, "{dtype} {kind:?} 0x{bits:04x}");
                }
            }
        }
    }
}
