//! Regressions found by the fuzz targets (`fuzz/fuzz_targets/`), each rebuilt here from the
//! committed input named in its test (under `fuzz/corpus/<target>/`).

use simak::a65;
use simak::ops::quant::{Params, Request, check_inference};
use simak::{DType, TensorSpec};

/// `admission`, seed `regress_empty_huge_extent`: an empty Quant plan (one extent 0) whose
/// other extents multiply past `u64` is admitted (an empty tensor needs no storage), and
/// `prepare` merged its packed axes with an unchecked product: "attempt to multiply with
/// overflow" in `walk.rs` with overflow checks on. An empty plan now gets an empty
/// traversal before any merging, and executes as a no-op.
#[test]
fn empty_plan_with_huge_extents_prepares() {
    let extents = [0, 1, 0xb9b9_b9b9_b9b9_39ff, 33, 33];
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous(extents, DType::F32),
        output: TensorSpec::contiguous(extents, DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    assert!(plan.is_empty());
    let prepared = a65::quant::prepare(&plan);
    let mut out = [0xa5u8; 4];
    assert_eq!(a65::quant::execute(&prepared, &[], &mut out), Ok(()));
    assert_eq!(out, [0xa5; 4]);
    let exact = a65::quant::prepare_exact(&plan);
    assert_eq!(a65::quant::execute(&exact, &[], &mut out), Ok(()));
}
