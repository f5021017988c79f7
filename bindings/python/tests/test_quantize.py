"""simak.quantize and QuantPlan against the independent oracle (oracle.quant): exhaustive
BF16 and FP16 patterns, FP32 boundary classes, the peers' vectors, real tensors."""

import math

import ml_dtypes
import numpy as np
import pytest

import oracle
import simak

# Multiplier profiles (binary32 bits): identity, powers of two (small, large, the
# half-precision routes' range edges), non-powers of two, a subnormal, the largest finite.
MULTIPLIERS = [
    0x3F800000,  # 1
    0x3F000000,  # 0.5
    0x42800000,  # 64
    0x3A800000,  # 2^-10
    0x33800000,  # 2^-24
    0x47000000,  # 2^15
    0x49800000,  # 2^20
    0x3EAAAAAB,  # 1/3
    0x41CC0000,  # 25.5
    0x3E99999A,  # 0.3 (the 4.5 example of SPEC §3)
    0x00000001,  # smallest subnormal
    0x7F7FFFFF,  # largest finite
]


def as_dtype(bits, dtype):
    if dtype == "f32":
        return bits.astype(np.uint32).view(np.float32)
    if dtype == "bf16":
        return bits.astype(np.uint16).view(ml_dtypes.bfloat16)
    return bits.astype(np.uint16).view(np.float16)


def m_of(bits):
    return np.array([bits], np.uint32).view(np.float32)[0]


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("mode", oracle.MODES)
def test_every_16_bit_pattern_every_profile(dtype, mode):
    bits = np.arange(65536, dtype=np.uint32)
    x = as_dtype(bits, dtype)
    for mbits in MULTIPLIERS:
        for zp in (0, -128, 37):
            got = simak.quantize(x, m_of(mbits), zero_point=zp, rounding=mode)
            want = oracle.quant(bits, dtype, mbits, zp, mode)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (
                f"{dtype} m=0x{mbits:08x} zp={zp} {mode}: {bad.size} differ, first pattern "
                f"0x{bits[bad[0]]:04x}: got {got[bad[0]]} want {want[bad[0]]}"
            )


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_uint16_storage_with_dtype_reads_the_same_bits(dtype):
    bits = np.arange(65536, dtype=np.uint16)
    got = simak.quantize(bits, np.float32(0.75), dtype=dtype, rounding="toward-positive")
    assert np.array_equal(got, oracle.quant(bits, dtype, 0x3F400000, 0, "toward-positive"))


def fp32_boundary_bits():
    """Around every rounding boundary that matters: half-integers and integers up to the
    saturation range, 2^20, 127.5/128.5, subnormals, signed zeros, infinities, NaN payloads,
    the largest finite values, plus a fixed random sample of all patterns."""
    vals = []
    for k in range(-300, 301):
        for base in (k, k + 0.5):
            f = np.float32(base)
            vals += [f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))]
    for e in range(-149, 128):
        f = np.float32(2.0**e)
        vals += [f, -f, np.nextafter(f, np.float32(0)), np.nextafter(f, np.float32(np.inf))]
    bits = np.array(vals, np.float32).view(np.uint32)
    special = np.array(
        [0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
         0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 0xFFC00001, 0x7FFFFFFF, 0xFFFFFFFF,
         0x49800000, 0x497FFFFF, 0x43000000, 0x42FF0000, 0x43008000],
        np.uint32,
    )
    rng = np.random.default_rng(20260412)
    sample = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits, special, sample])


@pytest.mark.parametrize("mode", oracle.MODES)
def test_fp32_boundary_classes(mode):
    bits = fp32_boundary_bits()
    x = bits.view(np.float32)
    for mbits in MULTIPLIERS + [0x3F7FFFFF, 0x3F800001, 0x4B000000]:
        for zp in (0, -100, 127):
            got = simak.quantize(x, m_of(mbits), zero_point=zp, rounding=mode)
            want = oracle.quant(bits, "f32", mbits, zp, mode)
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (
                f"m=0x{mbits:08x} zp={zp} {mode}: first 0x{bits[bad[0]]:08x}: "
                f"got {got[bad[0]]} want {want[bad[0]]}"
            )


def test_worked_examples_of_the_contract():
    # 15 x 0.3f: the binary32 product is exactly 4.5, nearest-even gives 4.
    assert simak.quantize(np.float32(15), m_of(0x3E99999A)).item() == 4
    # Product 200 with zero point -100 gives 100 (added before saturation).
    assert simak.quantize(np.float32(100), 2.0, zero_point=-100).item() == 100
    assert simak.quantize(np.float32(1.25), 2.0, zero_point=-3).item() == -1
    got = simak.quantize(np.array([1.0, -7.0, 300.0, np.nan], np.float32), 0.5, zero_point=3)
    assert got.tolist() == [3, -1, 127, 3]


def test_python_float_multiplier_is_rounded_once_np_float32_exact():
    # 0.1 is not a binary32 value: a Python float rounds once (to 0x3dcccccd).
    x = np.array([5.0, 15.0, 25.0, 35.0, 45.0], np.float32)
    want = oracle.quant(x.view(np.uint32), "f32", 0x3DCCCCCD)
    assert np.array_equal(simak.quantize(x, 0.1), want)
    assert np.array_equal(simak.quantize(x, np.float32(0.1)), want)
    # A float between two binary32 neighbours goes to the nearer one (ties to even).
    lo = float(np.float32(1.0))
    hi = float(np.nextafter(np.float32(1.0), np.float32(2.0)))
    plan = simak.QuantPlan((1,), "f32", (lo + hi) / 2)
    assert plan.multiplier_bits == 0x3F800000  # the tie goes to the even significand
    plan = simak.QuantPlan((1,), "f32", lo + (hi - lo) * 0.75)
    assert plan.multiplier_bits == 0x3F800001
    assert simak.QuantPlan((1,), "f32", np.float32(hi)).multiplier == hi


def test_peer_quantize_vectors():
    checked = 0
    for name in ("onnx-quantizelinear.json", "onnxruntime-quantizelinear.json",
                 "pytorch-quantize-per-tensor.json"):
        peer = oracle.load_peer(name)
        for entry in peer["agreeing"] + peer.get("disagreeing", []):
            if entry["op"] != "quantize" or entry.get("expected") is None:
                continue
            dtype = oracle.PEER_DTYPES[entry["in_dtype"]]
            bits = oracle.peer_bits(entry)
            x = as_dtype(bits, dtype).reshape(entry["shape"])
            m = m_of(int(entry["multiplier_bits"], 16))
            got = simak.quantize(x, m, zero_point=entry["zero_point"], rounding=entry["rounding"])
            want = entry["expected"] if entry["agrees_with_contract"] else entry["contract_output"]
            assert got.reshape(-1).tolist() == list(np.ravel(want)), entry["name"]
            checked += 1
    assert checked >= 20


def load_safetensors(name):
    from safetensors.numpy import load_file

    return load_file(str(oracle.data_path(name)))


@pytest.mark.parametrize(
    "file,dtype",
    [
        ("minilm-l6-layer0-f32-subset.safetensors", "f32"),
        ("minilm-l6-layer0-f16-subset.safetensors", "f16"),
    ],
)
def test_real_model_tensors(file, dtype):
    tensors = load_safetensors(file)
    assert len(tensors) == 19
    for name, t in tensors.items():
        bits, d = oracle.bits_of(t)
        assert d == dtype
        for mbits in (0x42800000, 0x41CC0000):
            got = simak.quantize(t, m_of(mbits))
            assert got.shape == t.shape
            assert np.array_equal(got, oracle.quant(bits, d, mbits)), name
    # SPEC test data note: at multiplier 64 exactly one element of the subset saturates.
    if dtype == "f32":
        sat = sum(int((simak.quantize(t, 64.0) == 127).sum()) for t in tensors.values())
        assert sat == 1


def test_real_bf16_tensors_through_uint16_storage():
    # safetensors' NumPy loader has no bfloat16: read the raw bytes as uint16.
    import json
    import struct

    raw = oracle.data_path("minilm-l6-layer0-bf16-subset.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    body = raw[8 + n :]
    count = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "BF16"
        a, b = info["data_offsets"]
        bits = np.frombuffer(body[a:b], np.uint16).reshape(info["shape"])
        got_u16 = simak.quantize(bits, 64.0, dtype="bf16")
        got_ml = simak.quantize(bits.view(ml_dtypes.bfloat16), 64.0)
        want = oracle.quant(bits, "bf16", 0x42800000)
        assert np.array_equal(got_u16, want) and np.array_equal(got_ml, want), name
        count += 1
    assert count == 19


def test_photo_quantized():
    from PIL import Image

    img = np.asarray(Image.open(oracle.data_path("chelsea.png")).convert("RGB"))
    assert img.shape == (300, 451, 3)
    x = img.astype(np.float32) / np.float32(255.0)
    for mode in oracle.MODES:
        got = simak.quantize(x, 127.0, zero_point=-64, rounding=mode)
        assert np.array_equal(got, oracle.quant(x.view(np.uint32), "f32", 0x42FE0000, -64, mode))


def test_plan_execute_matches_quantize_and_reports_its_route():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((37, 129)) * 40).astype(np.float32)
    plan = simak.QuantPlan(x.shape, "f32", 0.7, zero_point=5, rounding="toward-zero")
    y = np.empty(x.shape, np.int8)
    assert plan.execute(x, out=y) is y
    want = oracle.quant(x.view(np.uint32), "f32", int(np.float32(0.7).view(np.uint32)), 5,
                        "toward-zero")
    assert np.array_equal(y, want)
    assert np.array_equal(plan.execute(x), want)
    assert isinstance(plan.implementation, str) and plan.implementation
    exact = simak.QuantPlan(x.shape, "f32", 0.7, zero_point=5, rounding="toward-zero",
                            exact=True)
    assert exact.implementation == "exact-scalar" and exact.exact
    assert np.array_equal(exact.execute(x), want)
    assert plan.shape == (37, 129) and plan.dtype == "f32" and plan.zero_point == 5
    assert plan.rounding == "toward-zero" and plan.elements == 37 * 129
    assert plan.input_strides == (516, 4) and plan.output_strides == (129, 1)
    assert plan.input_span == 37 * 129 * 4 and plan.output_span == 37 * 129
    assert math.isclose(plan.multiplier, 0.7, rel_tol=1e-7)


def test_exact_route_gives_the_same_bytes():
    bits = fp32_boundary_bits()
    x = bits.view(np.float32)
    for mode in oracle.MODES:
        a = simak.quantize(x, 3.7, zero_point=-9, rounding=mode)
        b = simak.quantize(x, 3.7, zero_point=-9, rounding=mode, exact=True)
        assert np.array_equal(a, b)


def test_threads_give_the_same_bytes():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((64, 4099)) * 100).astype(np.float32)
    one = simak.quantize(x, 0.9, threads=1)
    for n in (2, 3, 7):
        assert np.array_equal(simak.quantize(x, 0.9, threads=n), one)
    plan = simak.QuantPlan(x.shape, "f32", 0.9)
    assert np.array_equal(plan.execute(x, threads=2), one)
    xt = x.T  # strided: split along the axis with the largest output stride
    assert np.array_equal(simak.quantize(xt, 0.9, threads=2), one.T)


def test_rank_0_and_empty():
    assert simak.quantize(np.float32(2.5), 1.0).shape == ()
    assert simak.quantize(np.float32(2.5), 1.0).item() == 2
    assert simak.quantize(np.float32(3.5), 1.0, rounding="toward-negative").item() == 3
    e = simak.quantize(np.zeros((3, 0, 2), np.float32), 1.0)
    assert e.shape == (3, 0, 2) and e.dtype == np.int8
    assert simak.quantize(np.zeros(0, np.float16), 1.0).shape == (0,)
