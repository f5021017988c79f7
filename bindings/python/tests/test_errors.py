"""Every error path: SimakError (a ValueError) with the stable code of docs/errors.md and a
message naming the rule; nothing written on error."""

import ctypes
import platform

import ml_dtypes
import numpy as np
import pytest

import oracle
import simak


def code_of(excinfo):
    assert isinstance(excinfo.value, ValueError)
    return excinfo.value.code


def raises(code, fn, *args, match=None, **kwargs):
    with pytest.raises(simak.SimakError, match=match) as e:
        fn(*args, **kwargs)
    assert code_of(e) == code, str(e.value)
    assert f"(simak error code {oracle.code_text(code)})" in str(e.value)
    return e.value


X = np.linspace(-3, 3, 64, dtype=np.float32)


def test_simak_error_is_a_value_error():
    assert issubclass(simak.SimakError, ValueError)


@pytest.mark.parametrize(
    "x",
    [
        np.zeros(4, np.float64),
        np.zeros(4, np.int32),
        np.zeros(4, np.int8),
        np.zeros(4, np.uint16),  # 16-bit storage without dtype=
        np.zeros(4, ">f4"),
        np.zeros(4, np.complex64),
    ],
)
def test_wrong_input_dtype(x):
    e = raises(5, simak.quantize, x, 1.0)
    assert "dtype" in str(e)
    raises(5, simak.casttess, x.reshape(1, 1, 4), tile=(1, 1, 1, 4))


def test_dtype_argument_must_agree_and_be_one_of_the_choices():
    raises(5, simak.quantize, np.zeros(4, np.float16), 1.0, dtype="bf16")
    raises(5, simak.quantize, np.zeros(4, np.float32), 1.0, dtype="f16")
    e = raises(0x601, simak.quantize, X, 1.0, dtype="f64")
    assert '"f32", "bf16", "f16"' in str(e)
    raises(0x601, simak.quantize, X, 1.0, dtype=np.float64)
    # Agreeing dtypes, as strings or NumPy dtypes.
    for d in ("f32", np.float32, np.dtype("float32")):
        simak.quantize(X, 1.0, dtype=d)
    simak.quantize(np.zeros(4, ml_dtypes.bfloat16), 1.0, dtype=ml_dtypes.bfloat16)


def test_rank_7():
    x = np.zeros((1,) * 7, np.float32)
    e = raises(6, simak.quantize, x, 1.0)
    assert "7" in str(e)
    raises(6, simak.casttess, x)
    raises(6, simak.casttess, np.float32(1.0))  # rank 0: the tiled ops need 1..=6
    raises(6, simak.Layout, (), (None, None, None, None), (1, 1, 1, 1))


@pytest.mark.parametrize(
    "m,code",
    [(0.0, 14), (-0.0, 14), (-1.0, 14), (float("inf"), 13), (float("-inf"), 13),
     (float("nan"), 13), (1e-60, 14), (1e60, 13)],
)
def test_bad_multiplier(m, code):
    raises(code, simak.quantize, X, m)
    raises(code, simak.QuantPlan, (4,), "f32", m)
    raises(code, simak.quanttess, X.reshape(4, 4, 4), m, tile=(1, 4, 4, 4))
    raises(code, simak.dequantize, np.zeros(3, np.int8), m)


@pytest.mark.parametrize("zp", [128, -129, 1000, 2**40, -(2**70)])
def test_zero_point_out_of_range(zp):
    e = raises(15, simak.quantize, X, 1.0, zero_point=zp)
    assert str(zp) in str(e)
    raises(15, simak.dequantize, np.zeros(3, np.int8), 1.0, zero_point=zp)


def test_bad_option_strings_list_the_choices():
    e = raises(0x601, simak.quantize, X, 1.0, rounding="round-half-up")
    assert "nearest-even" in str(e) and "toward-negative" in str(e)
    e = raises(0x601, simak.casttess, X.reshape(4, 4, 4), tile=(1, 4, 4, 4), channels="pad8")
    assert "compact" in str(e) and "pad16" in str(e)
    raises(0x601, simak.Layout, (4,), (None, None, 0, None), (1, 1, 4, 1), dtype="f32")


def test_negative_axes_and_bad_layouts():
    x = X.reshape(4, 4, 4)
    e = raises(43, simak.casttess, x, axes=(None, -1, 1, 2), tile=(1, 4, 4, 4))
    assert "None" in str(e)
    raises(43, simak.Layout, (4, 4), (None, 0, 1, -1), (1, 1, 1, 1))
    raises(43, simak.casttess, x, axes=(None, 0, 1, 3), tile=(1, 4, 4, 4))  # past the rank
    raises(44, simak.casttess, x, axes=(None, 0, 0, 2), tile=(1, 4, 4, 4))  # repeated
    raises(47, simak.casttess, x, axes=(None, 0, 1, 2), tile=(1, 5, 4, 4))  # tile > extent
    raises(47, simak.casttess, x, axes=(None, 0, 1, 2), tile=(1, 0, 4, 4))
    raises(47, simak.casttess, x, axes=(None, 0, 1, 2), tile=(1, -2, 4, 4))
    with pytest.raises(ValueError):
        simak.casttess(x, axes=(0, 1, 2))


@pytest.mark.parametrize(
    "make,code,hint",
    [
        (lambda a: a[::-1], 0x604, "negative"),
        (lambda a: np.broadcast_to(a[:1], (8,)), 20, "stride 0"),
        (lambda a: np.lib.stride_tricks.as_strided(a, shape=(4, 4), strides=(8, 4)), 28, "overlap"),
        (lambda a: a.view(np.uint8)[2:-2].view(np.float32), 0x403, "aligned"),
    ],
)
def test_non_admissible_views_name_the_rule_and_the_way_out(make, code, hint):
    base = np.arange(64, dtype=np.float32)
    x = make(base)
    e = raises(code, simak.quantize, x, 1.0)
    assert hint in str(e)
    if code != 0x403:
        assert "np.ascontiguousarray" in str(e)
    # The way out works (a misaligned array is already C-contiguous: it needs a copy).
    fixed = x.copy() if code == 0x403 else np.ascontiguousarray(x)
    want = oracle.quant(fixed.view(np.uint32), "f32", 0x3F800000)
    assert np.array_equal(simak.quantize(fixed, 1.0), want)


def test_stride_not_a_multiple_of_the_element_size():
    rec = np.zeros(8, dtype=[("a", np.float32), ("b", np.int8)])  # stride 5 bytes
    raises(19, simak.quantize, rec["a"], 1.0)


def test_out_errors_write_nothing():
    out = np.full(64, 7, np.int8)
    raises(0x202, simak.quantize, X, 1.0, out=np.zeros(63, np.int8))
    raises(0x202, simak.quantize, X, 1.0, out=np.zeros((8, 8), np.int8))
    raises(0x201, simak.quantize, X, 1.0, out=np.zeros(64, np.uint8))
    ro = np.zeros(64, np.int8)
    ro.flags.writeable = False
    raises(0x605, simak.quantize, X, 1.0, out=ro)
    raises(21, simak.quantize, X, 1.0,
           out=np.lib.stride_tricks.as_strided(out, shape=(64,), strides=(0,)))
    raises(29, simak.quantize, X.reshape(8, 8), 1.0,
           out=np.lib.stride_tricks.as_strided(out, shape=(8, 8), strides=(4, 1)))
    assert np.all(out == 7)
    with pytest.raises(TypeError):
        simak.quantize(X, 1.0, out=[0] * 64)
    # Overlapping input and output storage.
    buf = np.zeros(64 * 4, np.uint8)
    x = buf.view(np.float32)
    raises(0x407, simak.quantize, x, 1.0, out=buf[:64].view(np.int8))
    assert np.all(buf == 0)


def test_tiled_out_too_small_misaligned_or_read_only():
    x = X.reshape(4, 4, 4)
    cap = simak.Layout(x.shape, (None, 0, 1, 2), (1, 2, 2, 4)).capacity
    store = np.full(cap + 64, 0xAB, np.uint8)
    off = (-store.ctypes.data) % 16
    raises(0x402, simak.casttess, x, tile=(1, 2, 2, 4), out=store[off : off + cap - 1])
    raises(0x404, simak.casttess, x, tile=(1, 2, 2, 4), out=store[off + 1 : off + 1 + cap])
    raises(0x402, simak.quanttess, x, 1.0, tile=(1, 2, 2, 4), out=store[off : off + 10])
    ro = store[off : off + cap]
    ro.flags.writeable = False
    raises(0x605, simak.casttess, x, tile=(1, 2, 2, 4), out=ro)
    raises(0x201, simak.casttess, x, tile=(1, 2, 2, 4), out=np.zeros(cap, np.int16))
    assert np.all(store == 0xAB)
    raises(0x607, simak.casttess, x, tile=(1, 2, 2, 4), out=np.zeros(2 * cap, np.uint8)[::2],
           match="C-contiguous")
    raises(0x411, simak.untile, np.zeros(cap - 1, np.uint8),
           simak.Layout(x.shape, (None, 0, 1, 2), (1, 2, 2, 4)))


def test_threads_arguments():
    with pytest.raises(ValueError, match="at least 1"):
        simak.quantize(X, 1.0, threads=0)
    with pytest.raises(ValueError, match="above 256"):
        simak.quantize(X, 1.0, threads=257)
    # A negative count is the same ValueError as 0, not an OverflowError.
    with pytest.raises(ValueError, match="at least 1"):
        simak.quantize(X, 1.0, threads=-1)
    with pytest.raises(ValueError, match="at least 1"):
        simak.QuantPlan(X.shape, "f32", 1.0).execute(X, threads=-3)
    with pytest.raises(ValueError, match="at least 1"):
        simak.casttess(X.reshape(4, 4, 4), tile=(1, 4, 4, 4), threads=0)
    with pytest.raises(ValueError, match="above 256"):
        simak.quanttess(X.reshape(4, 4, 4), 1.0, tile=(1, 4, 4, 4), threads=257)
    with pytest.raises(ValueError, match="at least 1"):
        simak.CastTessPlan((4, 4, 4), "f32", (None, 0, 1, 2), (1, 4, 4, 4)).execute(
            X.reshape(4, 4, 4), threads=-1)


def test_no_silent_copy():
    # A Python list, a float or None would need a copy (np.asarray(copy=False) refuses): a
    # TypeError that says what to pass, for every function that reads an array.
    for bad in ([1.0, 2.0], 2.5, None):
        with pytest.raises(TypeError, match="np.asarray"):
            simak.quantize(bad, 1.0)
    with pytest.raises(TypeError, match="list"):
        simak.dequantize([1, 2, 3], 1.0)


def test_a_bool_multiplier_is_refused():
    with pytest.raises(TypeError, match="multiplier must be a real number"):
        simak.quantize(X, True)


def test_plan_geometry_mismatch():
    plan = simak.QuantPlan((64,), "f32", 1.0)
    raises(0x202, plan.execute, X[:32])
    raises(5, plan.execute, X.astype(np.float16))
    raises(0x202, plan.execute, X, out=np.zeros(32, np.int8))
    # Same extents, other byte strides: a plan is made for one memory layout.
    plan2 = simak.QuantPlan((8, 8), "f32", 1.0)
    raises(0x606, plan2.execute, np.asfortranarray(X.reshape(8, 8)), match="byte strides")
    raises(0x606, plan2.execute, X.reshape(8, 8), out=np.zeros((8, 8), np.int8, order="F"))


def test_fp_environment_error_via_the_seam():
    # The test seam supplies an MXCSR / FPCR value with flush-to-zero; the register itself
    # is not touched. An exact plan never checks.
    x = np.linspace(-5, 5, 4096, dtype=np.float32)
    control = 0x9FC0 if platform.machine() in ("x86_64", "AMD64") else 1 << 24
    if not simak._native.SIMD_ROUTES:
        pytest.skip("built with scalar-only")
    e = raises(0x408, simak._native._quantize_with_fp_control, x, 1.0, control)
    assert "exact=True" in str(e) and "flush-to-zero" in str(e)
    got = simak._native._quantize_with_fp_control(x, 1.0, control, exact=True)
    assert np.array_equal(got, oracle.quant(x.view(np.uint32), "f32", 0x3F800000))


class FlushToZero:
    """Sets flush-to-zero and denormals-are-zero on this thread through the C library's
    fegetenv / fesetenv (as torch.set_flush_denormal(True) or -ffast-math code does) and
    restores the saved environment on exit."""

    def __init__(self):
        self.libm = ctypes.CDLL("libm.so.6")
        self.saved = ctypes.create_string_buffer(64)

    def __enter__(self):
        if self.libm.fegetenv(self.saved) != 0:
            pytest.skip("fegetenv failed")
        env = ctypes.create_string_buffer(self.saved.raw, 64)
        machine = platform.machine()
        if machine == "x86_64":
            # fenv_t: 28 bytes of x87 state, then the 32-bit MXCSR.
            mxcsr = int.from_bytes(env.raw[28:32], "little") | 0x8040  # FTZ | DAZ
            ctypes.memmove(ctypes.addressof(env) + 28, mxcsr.to_bytes(4, "little"), 4)
        elif machine == "aarch64":
            fpcr = int.from_bytes(env.raw[0:4], "little") | (1 << 24)  # FZ
            ctypes.memmove(ctypes.addressof(env), fpcr.to_bytes(4, "little"), 4)
        else:
            pytest.skip(f"no FP environment recipe for {machine}")
        self.libm.fesetenv(env)
        return self

    def __exit__(self, *exc):
        self.libm.fesetenv(self.saved)
        return False


class RoundTowardZero(FlushToZero):
    """Sets the rounding mode toward zero on this thread (fesetround, x87 and SSE alike)
    and restores the saved environment on exit."""

    def __enter__(self):
        if self.libm.fegetenv(self.saved) != 0:
            pytest.skip("fegetenv failed")
        toward_zero = {"x86_64": 0xC00, "aarch64": 0xC00000}.get(platform.machine())
        if toward_zero is None:
            pytest.skip(f"no FE_TOWARDZERO for {platform.machine()}")
        if self.libm.fesetround(toward_zero) != 0:
            pytest.skip("fesetround failed")
        return self


@pytest.mark.skipif(platform.system() != "Linux", reason="glibc fesetenv")
@pytest.mark.parametrize("environment", [FlushToZero, RoundTowardZero])
def test_the_multiplier_does_not_depend_on_the_fp_environment(environment):
    # A Python float is rounded once to nearest-even binary32 and a numpy.float32 is taken
    # by its bits, whatever the thread's rounding mode or flush-to-zero says. The expected
    # bits come from NumPy in the default environment, before the change.
    multipliers = [0.1, 1e-39, 3.0000001, np.float32(0.1), np.float32(1e-39)]
    want = [int(np.float32(m).view(np.uint32)) for m in multipliers]
    x = np.float32([5, 15, 25, -35, 0.5])
    q = np.arange(-128, 128, dtype=np.int8)
    want_q = oracle.quant(x.view(np.uint32), "f32", want[0])
    want_deq = simak.dequantize(q, 0.1)
    subnormal = np.float32(1e-39)  # made here: NumPy's own conversion obeys flush-to-zero
    with environment():
        got = [simak.QuantPlan((1,), "f32", m, exact=True).multiplier_bits
               for m in multipliers]
        got_q = simak.quantize(x, 0.1, exact=True)
        got_deq = simak.dequantize(q, 0.1)
        got_deq_sub = simak.dequantize(q, subnormal)
    assert [hex(b) for b in got] == [hex(b) for b in want]
    assert np.array_equal(got_q, want_q)
    assert np.array_equal(got_deq.view(np.uint32), want_deq.view(np.uint32))
    assert np.array_equal(got_deq_sub.view(np.uint32),
                          simak.dequantize(q, subnormal).view(np.uint32))


@pytest.mark.skipif(platform.system() != "Linux", reason="glibc fesetenv")
def test_real_flush_to_zero_environment():
    if not simak._native.SIMD_ROUTES:
        pytest.skip("built with scalar-only")
    x = np.concatenate([np.linspace(-200, 200, 8192, dtype=np.float32),
                        np.array([1e-40, -3e-39], np.float32)])
    m_bits = 0x3F400000
    want = oracle.quant(x.view(np.uint32), "f32", m_bits)  # computed before FTZ is set
    tiled_want = simak.casttess(x.reshape(1, -1, 1), tile=(1, 1, 64, 1))
    deq_want = simak.dequantize(np.arange(-128, 128, dtype=np.int8), np.float32(2.0**127))
    out = np.full(x.shape, 55, np.int8)
    with FlushToZero():
        e = raises(0x408, simak.quantize, x, 0.75, out=out)
        assert "exact=True" in str(e)
        assert np.all(out == 55), "written before the FP check"
        raises(0x408, simak.QuantPlan(x.shape, "f32", 0.75).execute, x)
        raises(0x408, simak.quanttess, x.reshape(1, -1, 1), 0.75, tile=(1, 1, 64, 1))
        got = simak.quantize(x, 0.75, exact=True)
        got_plan = simak.QuantPlan(x.shape, "f32", 0.75, exact=True).execute(x)
        tiled = simak.casttess(x.reshape(1, -1, 1), tile=(1, 1, 64, 1))
        qt = simak.quanttess(x.reshape(1, -1, 1), 0.75, tile=(1, 1, 64, 1), exact=True)
        deq = simak.dequantize(np.arange(-128, 128, dtype=np.int8), np.float32(2.0**127))
    assert np.array_equal(got, want) and np.array_equal(got_plan, want)
    assert np.array_equal(tiled, tiled_want)  # CastTess is integer code
    assert np.array_equal(simak.untile(qt, simak.Layout((1, x.size, 1), (None, 0, 1, 2),
                                                        (1, 1, 64, 1), dtype="i8")),
                          want.reshape(1, -1, 1))
    assert np.array_equal(deq.view(np.uint32), deq_want.view(np.uint32))  # subnormal results kept
    assert np.any((deq != 0) & (np.abs(deq) < np.finfo(np.float32).tiny))


def test_a_short_tiled_buffer_is_refused_before_the_result_is_allocated():
    # The logical tensor of this layout would be 2 TiB: refused on the buffer's length.
    huge = simak.Layout((2**40,), (None, None, None, 0), (1, 1, 1, 1))
    assert huge.capacity == 2**44
    raises(0x411, simak.untile, np.zeros(16, np.uint8), huge)


def test_untile_of_a_non_contiguous_buffer_is_0x607():
    x = X.reshape(4, 4, 4)
    layout = simak.Layout(x.shape, (None, 0, 1, 2), (1, 2, 2, 4))
    t = simak.casttess(x, tile=(1, 2, 2, 4))
    spread = np.zeros(2 * t.size, np.uint8)
    spread[::2] = t
    e = raises(0x607, simak.untile, spread[::2], layout, match="C-contiguous")
    assert "np.ascontiguousarray(t)" in str(e)
    # The contiguous copy of the same bytes is read back.
    got = simak.untile(np.ascontiguousarray(spread[::2]), layout)
    assert np.array_equal(got, x.astype(ml_dtypes.bfloat16))
    # A non-contiguous memoryview likewise.
    raises(0x607, simak.untile, memoryview(spread)[::2], layout, match="memoryview")


def test_untile_reads_bytes_bytearray_and_memoryview():
    x = X.reshape(4, 4, 4)
    layout = simak.Layout(x.shape, (None, 0, 1, 2), (1, 2, 2, 4))
    t = simak.casttess(x, tile=(1, 2, 2, 4))
    want = x.astype(ml_dtypes.bfloat16)
    for buf in (t.tobytes(), bytearray(t.tobytes()), memoryview(t.tobytes())):
        got = simak.untile(buf, layout)
        assert got.dtype == ml_dtypes.bfloat16 and np.array_equal(got, want)
    q = simak.quanttess(x, 2.0, tile=(1, 2, 2, 4))
    qlayout = simak.Layout(x.shape, (None, 0, 1, 2), (1, 2, 2, 4), dtype="i8")
    assert np.array_equal(simak.untile(q.tobytes(), qlayout), simak.quantize(x, 2.0))
    # Too short: the capacity rule, with the true sizes.
    e = raises(0x411, simak.untile, t.tobytes()[:-1], layout)
    assert str(layout.capacity) in str(e) and str(layout.capacity - 1) in str(e)


def test_a_rank_mismatched_out_names_both_ranks():
    x = X.reshape(8, 8)
    e = raises(0x202, simak.quantize, x, 1.0, out=np.zeros((8, 8, 1), np.int8))
    assert "out= has rank 3" in str(e) and "x has rank 2" in str(e), str(e)
    assert "axis 2" not in str(e)
    e = raises(0x202, simak.quantize, x, 1.0, out=np.zeros(64, np.int8))
    assert "out= has rank 1" in str(e) and "x has rank 2" in str(e), str(e)
    plan = simak.QuantPlan((8, 8), "f32", 1.0)
    e = raises(0x202, plan.execute, x, out=np.zeros((8, 8, 1), np.int8))
    assert "rank 3" in str(e) and "rank 2" in str(e), str(e)
    e = raises(0x202, plan.execute, X)
    assert "x has rank 1" in str(e) and "rank 2" in str(e), str(e)


@pytest.mark.parametrize("m,code,to", [(1e-60, 14, "zero"), (1e-46, 14, "zero"),
                                       (1e60, 13, "infinity"), (3.5e38, 13, "infinity")])
def test_a_multiplier_that_rounds_to_zero_or_infinity_says_so(m, code, to):
    for fn in (lambda: simak.quantize(X, m), lambda: simak.QuantPlan((4,), "f32", m),
               lambda: simak.quanttess(X.reshape(4, 4, 4), m, tile=(1, 4, 4, 4))):
        e = raises(code, fn)
        assert f"multiplier {m!r} rounds to {to} in binary32" in str(e), str(e)
    # The smallest subnormal and the largest finite value are kept.
    assert simak.QuantPlan((4,), "f32", 1.4e-45).multiplier_bits == 1
    assert simak.QuantPlan((4,), "f32", 3.4e38).multiplier_bits == 0x7F7F_C99E


def test_offset_of_outside_the_layout_is_simak_error():
    layout = simak.Layout((4, 4, 4), (None, 0, 1, 2), (1, 2, 2, 4))
    assert layout.offset_of((0, 0, 0)) == 0
    for index in ((-1, 0, 0), (0, 0, -1), (4, 0, 0), (0, 0), (0, 0, 0, 0)):
        e = raises(0x608, layout.offset_of, index)
        assert f"index {list(index)} is not inside shape [4, 4, 4]" in str(e), str(e)
    e = raises(0x608, layout.offset_of, (-1, 0, 0))
    assert "negative" in str(e)
    raises(0x608, layout.offset_of, (0, 0, 0), plane=2, match="plane 2 is not in 0..2")
    raises(0x608, layout.offset_of, (0, 0, 0), plane=-1, match="plane -1 is not in 0..2")


def test_a_negative_extent_or_stride_talks_about_extents_or_strides():
    e = raises(0x608, simak.QuantPlan, (4, -2), "f32", 1.0)
    assert "shape[1] is -2: extents are element counts" in str(e), str(e)
    assert "stride" not in str(e)
    raises(0x608, simak.CastTessPlan, (-4, 4, 4), "f32", (None, 0, 1, 2), (1, 2, 2, 4),
           match=r"shape\[0\] is -4: extents")
    raises(0x608, simak.Layout, (4, -4, 4), (None, 0, 1, 2), (1, 2, 2, 4),
           match=r"shape\[1\] is -4: extents")
    raises(0x608, simak.QuantPlan, (4,), "f32", 1.0, input_strides=(-4,),
           match=r"input_strides\[0\] is -4: strides are in bytes and never negative")
    raises(0x608, simak.QuantPlan, (4,), "f32", 1.0, output_strides=(-1,),
           match=r"output_strides\[0\] is -1: strides")
