"""calibrate_absmax against a NumPy oracle: NaN, +-inf, -0.0, subnormals, FP32, BF16 and
FP16, strided views, the zero-range rule and the overflow error."""

import ml_dtypes
import numpy as np
import pytest

import simak


def absmax_oracle(x):
    """127 / max|x| over the finite elements in binary32 (NumPy's float32 division is
    correctly rounded, nearest-even), 1.0 when no element is finite and nonzero."""
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when it widens a NaN
        a = np.abs(x.astype(np.float64)).ravel()
    a = a[np.isfinite(a) & (a > 0)]
    if a.size == 0:
        return 1.0
    with np.errstate(over="ignore"):
        return float(np.float32(127) / np.float32(a.max()))


def test_special_values_fp32():
    x = np.array([1.5, -3.25, np.nan, np.inf, -np.inf, -0.0, 2.0], np.float32)
    assert simak.calibrate_absmax(x) == float(np.float32(127) / np.float32(3.25))
    assert simak.calibrate_absmax(x) == absmax_oracle(x)
    # Only zeros, NaN and infinities, or nothing: ONNX Runtime's zero-range rule.
    for z in ([-0.0, 0.0, np.nan, np.inf], [], [np.nan]):
        assert simak.calibrate_absmax(np.array(z, np.float32)) == 1.0
    # Subnormals next to a normal maximum (127 / a is finite only for a >= about
    # 7.5e-37 = 2^-120.3, so a subnormal maximum always overflows).
    sub = np.array([2.0 ** -129, -(2.0 ** -120), -(2.0 ** -130)], np.float32)
    assert simak.calibrate_absmax(sub) == absmax_oracle(sub) == 127 * 2.0 ** 120
    with pytest.raises(ValueError, match="not a finite binary32"):
        simak.calibrate_absmax(np.array([2.0 ** -129, -(2.0 ** -130)], np.float32))
    # The smallest subnormal: 127 / 2^-149 overflows binary32.
    with pytest.raises(ValueError, match="not a finite binary32"):
        simak.calibrate_absmax(np.array([0.0, 1e-45], np.float32))
    # A rank-0 array.
    assert simak.calibrate_absmax(np.float32(-0.5)) == 254.0


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_random_tensors_and_strided_views(dtype):
    rng = np.random.default_rng(22)
    for scale in (1e-3, 1.0, 8.0, 6e4):
        with np.errstate(over="ignore"):  # float16 overflows to inf at scale 6e4
            x = (rng.standard_normal((5, 7, 3)) * scale).astype(dtype)
        x.flat[::11] = np.nan
        x.flat[5] = np.inf
        x.flat[6] = -np.inf
        for view in (x, x.T, x[:, ::2], np.asfortranarray(x)[1:], x[..., 1]):
            assert simak.calibrate_absmax(view) == absmax_oracle(view), (dtype, scale)


def test_every_fp16_and_bf16_pattern():
    """Each 16-bit pattern alone (with a zero): the subnormals, -0.0, both infinities and
    every NaN of both formats."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for fmt, dt in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        pairs = np.stack([bits, np.zeros_like(bits)], axis=1)
        for row in pairs[::37]:
            x = row.view(dt)
            want = absmax_oracle(x)
            if np.isinf(want):
                with pytest.raises(ValueError):
                    simak.calibrate_absmax(x)
            else:
                assert simak.calibrate_absmax(x) == want, (fmt, hex(row[0]))
                assert simak.calibrate_absmax(row, dtype=fmt) == want


def test_refuses_int8():
    with pytest.raises(simak.SimakError) as e:
        simak.calibrate_absmax(np.zeros(3, np.int8))
    assert e.value.code == 5
