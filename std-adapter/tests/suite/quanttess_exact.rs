//! `a65::quanttess::prepare_exact`: the exact route gives the bytes of `prepare` and runs
//! under an FP control word that the vector routes refuse (flush-to-zero and
//! denormals-are-zero set), given through the test seam (the register is never changed).

use simak::a65;
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::TiledTensorSpec;
use simak::ops::quant::{Params, Rounding};
use simak::ops::quanttess::{Request, check_inference};
use simak::{DType, TensorSpec};

#[repr(align(16))]
struct Aligned([u8; 4096]);

#[test]
fn exact_quanttess_matches_prepare_and_ignores_the_fp_environment() {
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([7, 9, 5], DType::F32),
        output: TiledTensorSpec::new(
            [7, 9, 5],
            DType::I8,
            MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 4, 8, 5],
                Channels::PadTo16,
            ),
        ),
        params: Params::new(0.37)
            .with_zero_point(-5)
            .with_rounding(Rounding::TowardNegative),
    })
    .expect("admissible");
    let input: Vec<u8> = (0..7 * 9 * 5)
        .flat_map(|k| ((k as f32 - 150.0) * 1.37 + 0.5).to_le_bytes())
        .collect();
    let capacity = plan.output().capacity() as usize;
    let (mut fast, mut exact) = (Aligned([0xee; 4096]), Aligned([0x11; 4096]));
    let prepared = a65::quanttess::prepare(&plan);
    a65::quanttess::execute(&prepared, &input, &mut fast.0[..capacity]).expect("runs");
    let exact_prepared = a65::quanttess::prepare_exact(&plan);
    assert_eq!(exact_prepared.implementation(), "exact-scalar");
    // MXCSR (x86-64) with FTZ and DAZ set, or FPCR (AArch64) with FZ set.
    let control = if cfg!(target_arch = "x86_64") {
        0x9fc0
    } else {
        1 << 24
    };
    a65::execute_with_fp_control(
        &exact_prepared,
        &input,
        &mut exact.0[..capacity],
        Some(control),
    )
    .expect("the exact route does not check the FP environment");
    assert_eq!(&fast.0[..capacity], &exact.0[..capacity]);
    if prepared.implementation() != "exact-scalar" {
        let mut refused = Aligned([0x22; 4096]);
        let e = a65::execute_with_fp_control(
            &prepared,
            &input,
            &mut refused.0[..capacity],
            Some(control),
        )
        .expect_err("a vector route checks the FP environment");
        assert_eq!(simak::Error::from(e).code(), 0x408);
        assert!(refused.0.iter().all(|&b| b == 0x22), "nothing written");
    }
}
