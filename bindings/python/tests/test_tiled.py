"""casttess, quanttess, Layout and untile against the NumPy layout oracle (oracle.tiled)
and the integer BF16 oracle; untile o casttess round trips; out= into dirty buffers."""

import ml_dtypes
import numpy as np
import pytest

import oracle
import simak

LAYOUTS = [
    # shape, axes (D, H, W, C), tile
    ((300, 451, 3), (None, 0, 1, 2), (1, 16, 64, 3)),
    ((2, 3), (None, None, 0, 1), (1, 1, 2, 3)),
    ((3, 4, 3), (None, 0, 1, 2), (1, 2, 2, 3)),
    ((5, 3), (None, None, 0, 1), (1, 1, 4, 3)),
    ((2, 5, 7, 19), (None, 1, 2, 3), (1, 2, 3, 16)),  # an outer axis, a boundary C tile
    ((4, 6, 5, 3, 2), (1, 2, 3, 0), (2, 4, 2, 3)),  # D present, roles out of axis order
    ((7,), (None, None, None, 0), (1, 1, 1, 4)),
    ((3, 1, 40), (None, 0, 2, None), (1, 2, 8, 1)),  # C absent
    ((2, 2, 2, 2, 2, 3), (0, 2, 4, 5), (1, 2, 1, 2)),  # rank 6, two outer axes
]


def floats(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal(shape) * 50).astype(np.float32)
    if dtype == "bf16":
        return v.astype(ml_dtypes.bfloat16)
    return v.astype(dtype)


def bf16_oracle(x):
    bits, dtype = oracle.bits_of(np.ascontiguousarray(x))
    return oracle.to_bf16_bits(bits, dtype)


@pytest.mark.parametrize("shape,axes,tile", LAYOUTS)
@pytest.mark.parametrize("channels", ["compact", "pad16"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, "bf16"])
def test_casttess_matches_the_layout_oracle(shape, axes, tile, channels, dtype):
    x = floats(shape, dtype)
    t = simak.casttess(x, axes=axes, tile=tile, channels=channels)
    want = oracle.tiled(bf16_oracle(x), axes, tile, channels, planes=2)
    layout = simak.Layout(shape, axes, tile, channels=channels, dtype="bf16")
    assert t.dtype == np.uint8 and t.ndim == 1 and t.ctypes.data % 16 == 0
    assert t.size == layout.capacity == want.size
    assert np.array_equal(t, want)
    # Round trip: untile gives the BF16 values in logical order.
    y = simak.untile(t, layout)
    assert y.dtype == ml_dtypes.bfloat16 and y.shape == shape
    assert np.array_equal(y.view(np.uint16), bf16_oracle(x))


@pytest.mark.parametrize("shape,axes,tile", LAYOUTS)
@pytest.mark.parametrize("channels", ["compact", "pad16"])
def test_quanttess_matches_the_oracles(shape, axes, tile, channels):
    x = floats(shape, np.float32, seed=3)
    for mode, zp in (("nearest-even", 0), ("toward-negative", -20)):
        t = simak.quanttess(x, 0.8, axes=axes, tile=tile, channels=channels, zero_point=zp,
                            rounding=mode)
        q = oracle.quant(x.view(np.uint32), "f32", int(np.float32(0.8).view(np.uint32)), zp, mode)
        want = oracle.tiled(q.reshape(shape), axes, tile, channels, planes=1)
        assert np.array_equal(t, want)
        layout = simak.Layout(shape, axes, tile, channels=channels, dtype="i8")
        y = simak.untile(t, layout)
        assert y.dtype == np.int8 and np.array_equal(y, q.reshape(shape))
        assert np.array_equal(
            simak.quanttess(x, 0.8, axes=axes, tile=tile, channels=channels, zero_point=zp,
                            rounding=mode, exact=True),
            want,
        )


@pytest.mark.parametrize("shape,axes,tile", LAYOUTS)
@pytest.mark.parametrize("channels", ["compact", "pad16"])
def test_threads_give_the_oracle_bytes(shape, axes, tile, channels):
    # threads=N splits the call into pieces of whole tiles (Prepared::split), one per
    # native thread; every count gives the oracle's bytes, into new and dirty buffers.
    x = floats(shape, np.float32, seed=5)
    want = oracle.tiled(bf16_oracle(x), axes, tile, channels, planes=2)
    q = oracle.quant(x.view(np.uint32), "f32", int(np.float32(0.8).view(np.uint32)), -3,
                     "nearest-even")
    want_q = oracle.tiled(q.reshape(shape), axes, tile, channels, planes=1)
    plan = simak.CastTessPlan(shape, "f32", axes=axes, tile=tile, channels=channels)
    for n in (2, 3, 8):
        assert np.array_equal(simak.casttess(x, axes=axes, tile=tile, channels=channels,
                                             threads=n), want)
        out = simak.casttess(-x, axes=axes, tile=tile, channels=channels)  # dirty, aligned
        assert plan.execute(x, out=out, threads=n) is out and np.array_equal(out, want)
        assert np.array_equal(simak.quanttess(x, 0.8, axes=axes, tile=tile, channels=channels,
                                              zero_point=-3, threads=n), want_q)


def test_contract_examples():
    # SPEC §5: [2, 3], W = 0, C = 1, tile (1, 1, 2, 3), compact: capacity 16, element
    # (w=1, c=2) low byte at 8, high byte at 11.
    layout = simak.Layout((2, 3), (None, None, 0, 1), (1, 1, 2, 3))
    assert layout.capacity == 16 and layout.offset_of((1, 2)) == 8
    assert layout.offset_of((1, 2), plane=1) == 11
    assert simak.Layout((3, 4, 3), (None, 0, 1, 2), (1, 2, 2, 3), "pad16").capacity == 384
    assert simak.Layout((5, 3), (None, None, 0, 1), (1, 1, 4, 3), "pad16", "i8").capacity == 80
    big = simak.Layout((300, 451, 3), (None, 0, 1, 2), (1, 16, 64, 3))
    assert big.tile_counts == (1, 19, 8, 1)
    assert big.shape == (300, 451, 3) and big.axes == (None, 0, 1, 2)
    assert big.tile == (1, 16, 64, 3) and big.channels == "compact" and big.dtype == "bf16"
    assert big.planes == 2 and big.elements == 300 * 451 * 3 and big.outer_count == 1
    assert big.bytes_per_outer == big.capacity and big.tiles_per_outer == 19 * 8
    assert simak.Layout((300, 451, 3), (None, 0, 1, 2), (1, 16, 64, 3)) == big


def test_bf16_conversion_vectors_of_the_contract():
    f32 = np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00018000, 0x7F800001, 0x7FFFFFFF,
                    0xFFFFFFFF], np.uint32)
    want32 = [0x3F80, 0x3F82, 0x7F80, 0x0002, 0x7F80, 0x8000, 0x0000]
    f16 = np.array([0x0001, 0x03FF, 0x7BFF, 0x7C00, 0x7D00, 0xFC01], np.uint16)
    want16 = [0x3380, 0x3880, 0x4780, 0x7F80, 0x7FE0, 0xFFC0]
    for bits, dt, want in ((f32, np.float32, want32), (f16, np.float16, want16)):
        n = bits.size
        layout = simak.Layout((n,), (None, None, None, 0), (1, 1, 1, n))
        t = simak.casttess(bits.view(dt), axes=layout.axes, tile=layout.tile)
        assert simak.untile(t, layout).view(np.uint16).tolist() == want


def test_peer_bf16_vectors():
    checked = 0
    for name in ("onnx-cast-bf16.json", "pytorch-bf16.json", "mldtypes-fp16-bf16.json"):
        peer = oracle.load_peer(name)
        for entry in peer["agreeing"] + peer.get("disagreeing", []):
            if entry["op"] != "cast_bf16" or entry.get("expected") is None:
                continue
            dtype = {"float32": np.float32, "float16": np.float16}[entry["in_dtype"]]
            bits = oracle.peer_bits(entry)
            n = bits.size
            t = simak.casttess(bits.view(dtype), axes=(None, None, None, 0), tile=(1, 1, 1, n))
            got = simak.untile(t, simak.Layout((n,), (None, None, None, 0), (1, 1, 1, n)))
            want = entry["expected"] if entry["agrees_with_contract"] else entry["contract_output"]
            want = [int(w, 16) if isinstance(w, str) else w for w in np.ravel(want)]
            assert got.view(np.uint16).tolist() == want, entry["name"]
            checked += 1
    assert checked >= 5


def test_every_fp16_pattern_casts_as_the_integer_oracle():
    bits = np.arange(65536, dtype=np.uint16)
    t = simak.casttess(bits, dtype="f16", axes=(None, None, 0, None), tile=(1, 1, 4096, 1))
    got = simak.untile(t, simak.Layout((65536,), (None, None, 0, None), (1, 1, 4096, 1)))
    assert np.array_equal(got.view(np.uint16), oracle.f16_bits_to_bf16(bits))
    # ml_dtypes agrees on every non-NaN pattern (an independent implementation).
    f = bits.view(np.float16)
    keep = ~np.isnan(f)
    with np.errstate(invalid="ignore"):
        peer = f.astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(got.view(np.uint16)[keep], peer[keep])


def test_photo_round_trip_and_strided_input():
    from PIL import Image

    img = np.asarray(Image.open(oracle.data_path("chelsea.png")).convert("RGB"))
    x = img.astype(np.float32) / np.float32(255.0)
    axes, tile = (None, 0, 1, 2), (1, 16, 64, 3)
    t = simak.casttess(x)  # the defaults are this HWC layout
    assert np.array_equal(t, oracle.tiled(bf16_oracle(x), axes, tile, "compact", 2))
    layout = simak.Layout(x.shape, axes, tile)
    assert np.array_equal(simak.untile(t, layout), x.astype(ml_dtypes.bfloat16))
    # CHW storage read in place through a transposed view.
    chw = np.ascontiguousarray(x.transpose(2, 0, 1))
    view = chw.transpose(1, 2, 0)
    assert not view.flags.c_contiguous
    assert np.array_equal(simak.casttess(view), t)


def test_out_into_a_dirty_buffer():
    x = floats((5, 7, 3), np.float32)
    axes, tile = (None, 0, 1, 2), (1, 2, 4, 3)
    layout = simak.Layout(x.shape, axes, tile, "pad16")
    cap = layout.capacity
    store = np.full(cap + 64, 0xEE, np.uint8)
    off = (-store.ctypes.data) % 16
    out = store[off : off + cap + 32]  # larger than the capacity
    got = simak.casttess(x, axes=axes, tile=tile, channels="pad16", out=out)
    assert got is out
    want = oracle.tiled(bf16_oracle(x), axes, tile, "pad16", 2)
    assert np.array_equal(out[:cap], want), "padding not rewritten"
    assert np.all(out[cap:] == 0xEE) and np.all(store[:off] == 0xEE)
    assert np.all(store[off + cap :] == 0xEE), "bytes past the capacity were touched"
    qout = store[off : off + cap]
    qout[:] = 0x77
    simak.quanttess(x, 2.0, axes=axes, tile=tile, channels="pad16", zero_point=9, out=qout)
    qcap = simak.Layout(x.shape, axes, tile, "pad16", "i8").capacity
    q = oracle.quant(x.view(np.uint32), "f32", 0x40000000, 9)
    assert np.array_equal(qout[:qcap], oracle.tiled(q.reshape(x.shape), axes, tile, "pad16", 1))
    assert np.all(qout[qcap:] == 0x77)


def test_casttess_plan_execute_and_encode():
    x = floats((16, 24, 3), np.float16)
    plan = simak.CastTessPlan(x.shape, "f16", (None, 0, 1, 2), (1, 8, 8, 3))
    t = plan.execute(x)
    assert np.array_equal(t, simak.casttess(x, tile=(1, 8, 8, 3)))
    assert plan.capacity == plan.layout.capacity == t.size
    assert plan.dtype == "f16" and isinstance(plan.implementation, str)
    out = np.zeros(plan.capacity + 16, np.uint8)
    off = (-out.ctypes.data) % 16
    plan.execute(x, out=out[off:])
    assert np.array_equal(out[off : off + plan.capacity], t)


def test_empty_tensor_capacity_0():
    x = np.zeros((0, 4, 3), np.float32)
    t = simak.casttess(x, tile=(1, 1, 4, 3))
    assert t.size == 0
    layout = simak.Layout((0, 4, 3), (None, 0, 1, 2), (1, 1, 4, 3))
    assert layout.capacity == 0 and layout.tile_counts == (0, 0, 0, 0)
    assert simak.untile(t, layout).shape == (0, 4, 3)
