//! A65 Quant coalescing (SPEC §6, issue 23 scope 8): a packed, compatible permutation —
//! both ports packed in the same physical axis order, whatever that order is — coalesces
//! into one run over the whole tensor, so `execute` makes one numerical call
//! (`Prepared::run_len` is the element count). Ports packed in different orders do not.
//! The bytes are checked against the f64 oracle of `simak-tests`.

use simak::a65::quant::{execute, prepare};
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::axes::permutations;
use simak_tests::bytes;
use simak_tests::oracle;

const SHAPE: [u64; 4] = [3, 4, 5, 7];

/// Byte strides of `SHAPE` packed with `order` (slowest axis first) and `elem`-byte
/// elements.
fn packed(order: &[usize], elem: u64) -> [u64; 4] {
    let mut strides = [0u64; 4];
    let mut s = elem;
    for &a in order.iter().rev() {
        strides[a] = s;
        s *= SHAPE[a];
    }
    strides
}

#[test]
fn a_packed_compatible_permutation_runs_as_one_numerical_call() {
    let n: u64 = SHAPE.iter().product();
    let m = 0x3e99_999a; // 0.3
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let e = dtype.size() as u64;
        let bits: Vec<u32> = (0..n as u32)
            .map(|k| match dtype {
                DType::F32 => (k as f32 * 1.7 - 150.0).to_bits(),
                _ => 0x3c00 + k * 37 % 0x4000,
            })
            .collect();
        for order in permutations(4) {
            for out_order in [order.clone(), (0..4).collect()] {
                let compatible = out_order == order;
                let ins = packed(&order, e);
                let outs = packed(&out_order, 1);
                let plan = check_inference(&Request {
                    input: TensorSpec::strided(SHAPE, ins, dtype),
                    output: TensorSpec::strided(SHAPE, outs, DType::I8),
                    params: Params::from_bits(m).with_zero_point(-2),
                })
                .unwrap();
                let prepared = prepare(&plan);
                if compatible {
                    assert_eq!(prepared.run_len() as u64, n, "{dtype} order {order:?}");
                } else {
                    // Packed in different orders: no single run covers both ports.
                    assert!((prepared.run_len() as u64) < n, "{dtype} {order:?}");
                }
                // Element k of the logical row-major order sits at the strided offsets.
                let mut input = vec![0u8; (n * e) as usize];
                let mut want = vec![0u8; n as usize];
                let mut k = 0usize;
                for i0 in 0..SHAPE[0] {
                    for i1 in 0..SHAPE[1] {
                        for i2 in 0..SHAPE[2] {
                            for i3 in 0..SHAPE[3] {
                                let idx = [i0, i1, i2, i3];
                                let at = |s: &[u64; 4]| -> usize {
                                    idx.iter().zip(s).map(|(i, s)| i * s).sum::<u64>() as usize
                                };
                                bytes::write(dtype, &mut input, at(&ins), bits[k]);
                                want[at(&outs)] =
                                    oracle::quant(dtype, bits[k], m, -2, Rounding::NearestEven)
                                        as u8;
                                k += 1;
                            }
                        }
                    }
                }
                let mut got = vec![0x55u8; n as usize];
                execute(&prepared, &input, &mut got).unwrap();
                assert_eq!(got, want, "{dtype} {order:?} -> {out_order:?}");
            }
        }
    }
}
