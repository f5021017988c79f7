"""Strided inputs read in place and strided out= written in place: Fortran order,
transposes, slices with steps, rank 0 and 6, extent-1 axes, tails around every vector
width; gaps of strided outputs untouched."""

import ml_dtypes
import numpy as np
import pytest

import oracle
import simak

M_BITS = 0x3FC00000  # 1.5
M = np.float32(1.5)


def want_for(x, zp=0, mode="nearest-even"):
    """The oracle on the logical elements of view `x` (read through NumPy's own indexing)."""
    c = np.ascontiguousarray(x)
    bits, dtype = oracle.bits_of(c)
    return oracle.quant(bits, dtype, M_BITS, zp, mode).reshape(c.shape)


def base(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * 60
    if dtype == "bf16":
        return v.astype(np.float32).astype(ml_dtypes.bfloat16)
    return v.astype(dtype)


DTYPES = [np.float32, np.float16, "bf16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_fortran_order_and_transposes(dtype):
    a = base((13, 17, 5), dtype)
    for view in (np.asfortranarray(a), a.transpose(2, 0, 1), a.transpose(1, 2, 0), a.T):
        got = simak.quantize(view, M)
        assert got.shape == view.shape and got.flags.c_contiguous
        assert np.array_equal(got, want_for(view))


@pytest.mark.parametrize("dtype", DTYPES)
def test_slices_with_steps(dtype):
    a = base((40, 90), dtype)
    for view in (a[::3], a[:, ::7], a[1::2, 3::5], a[::4, ::-1][:, ::-1], a[5:6, ::2]):
        assert np.array_equal(simak.quantize(view, M), want_for(view))


def test_rank_6_and_extent_1_axes():
    a = base((2, 1, 3, 1, 4, 5))
    assert np.array_equal(simak.quantize(a, M), want_for(a))
    v = a.transpose(5, 1, 3, 0, 2, 4)[::2]
    assert np.array_equal(simak.quantize(v, M), want_for(v))
    # An extent-1 axis may carry any stride, even a negative or zero one.
    odd = np.lib.stride_tricks.as_strided(a, shape=(2, 1, 3), strides=(a.strides[0], -4, a.strides[2]))
    assert np.array_equal(simak.quantize(odd, M), want_for(odd))
    s = np.float32(7.25)
    assert simak.quantize(np.array(s), M).item() == want_for(np.array(s)).item()


@pytest.mark.parametrize("dtype", DTYPES)
def test_tails_around_every_vector_width(dtype):
    # Contiguous runs of every length around 16, 32, 64 and the panel threshold (128),
    # also as the inner axis of a padded 2-D view.
    for n in list(range(1, 70)) + [127, 128, 129, 255, 256, 257, 511, 513, 1023, 1025]:
        a = base((n,), dtype, seed=n)
        assert np.array_equal(simak.quantize(a, M), want_for(a)), n
        padded = base((3, n + 5), dtype, seed=n)[:, 2 : 2 + n]
        assert np.array_equal(simak.quantize(padded, M), want_for(padded)), n


def test_strided_out_writes_only_its_elements():
    x = base((9, 11))
    store = np.full((9 * 3, 11 * 2 + 1), 0x5A, np.uint8).view(np.int8)
    out = store[::3, 1::2]
    assert out.shape == (9, 11)
    got = simak.quantize(x, M, out=out)
    assert got is out
    assert np.array_equal(out, want_for(x))
    mask = np.ones(store.shape, bool)
    mask[::3, 1::2][:, :] = False
    assert np.all(store[mask] == 0x5A), "a gap byte was written"
    # A Fortran-order out and a transposed input.
    outf = np.full((11, 9), 3, np.int8, order="F")
    simak.quantize(x.T, M, out=outf)
    assert np.array_equal(outf, want_for(x.T))


def test_plan_with_strides_in_bytes():
    x = base((6, 8))
    view = x[:, ::2]  # strides (32, 8)
    plan = simak.QuantPlan((6, 4), "f32", M, input_strides=view.strides,
                           output_strides=(1, 6))
    assert plan.input_strides == (32, 8) and plan.output_strides == (1, 6)
    out = np.full((4, 6), 9, np.int8).T  # strides (1, 6)
    plan.execute(view, out=out)
    assert np.array_equal(out, want_for(view))
    fresh = plan.execute(view)
    assert fresh.strides == (1, 6) and np.array_equal(fresh, want_for(view))
    # An array of another geometry is refused rather than read wrongly.
    with pytest.raises(ValueError, match="strides"):
        plan.execute(np.ascontiguousarray(view))
    with pytest.raises(simak.SimakError) as e:
        plan.execute(base((6, 5)))
    assert e.value.code == 0x202


def test_views_of_foreign_buffers_are_read_in_place():
    buf = bytearray(np.arange(64, dtype=np.float32).tobytes())
    x = np.frombuffer(buf, np.float32).reshape(8, 8)[1::2, ::3]
    assert np.array_equal(simak.quantize(x, M), want_for(x))
    mv = memoryview(np.arange(10, dtype=np.float32))
    assert np.array_equal(simak.quantize(mv, M), want_for(np.asarray(mv)))


class DLPackOnly:
    """An object that offers its data only through the DLPack protocol (as a PyTorch or JAX
    CPU tensor does)."""

    def __init__(self, array):
        self._a = array

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_objects_are_read_without_a_copy():
    a = base((5, 40))[:, ::3]
    got = simak.quantize(DLPackOnly(a), M)
    assert np.array_equal(got, want_for(a))
    try:
        import torch
    except ImportError:
        return
    t = torch.linspace(-300, 300, 1000)
    assert np.array_equal(simak.quantize(t, M), want_for(t.numpy()))
    assert np.array_equal(simak.quantize(t[::3], M), want_for(t.numpy()[::3]))
