"""The output side (docs/contract.md §12): detess, detess_cast, detess_dequant, dequantize
and DetessPlan against independent NumPy oracles written here from the contract's text:

- the OFM bytes of a head are built from §12.1's byte formula (tile order of §5, Compact and
  PadTo16 planes per pixel, CBlock16 blocks `(c / 16)·(npix·16·E) + k·16·E + p·16 + c mod 16`,
  tile size rounded up to the tile alignment) with every padding byte random, so a result
  that reads padding differs;
- dequantization by §12.2's steps in NumPy: `d = q − zp` in int64, `x = float32(d)`, `y =
  float32(x / s)` computed in binary64 and rounded once to binary32 (the binary64 quotient
  of two binary32 values rounds to the correctly rounded binary32 quotient: 53 ≥ 2·24 + 2,
  subnormal results included), FP16 by NumPy's nearest-even float32 → float16, BF16 by §4's
  rule in integer arithmetic.
"""

import ml_dtypes
import numpy as np
import pytest

import oracle
import simak

RNG = np.random.default_rng(20261203)

E_OF = {"i8": 1, "i16": 2, "i32": 4, "bf16": 2}
UINT_OF = {1: np.uint8, 2: np.uint16, 4: np.uint32}
NP_OF = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "bf16": ml_dtypes.bfloat16}


# ---------------------------------------------------------------------------------------
# The oracle: §12.1's bytes of one head.


def ofm_bytes(values, axes, tile, channels, tile_align, rng):
    """The head's bytes for logical `values` (an integer array of E-byte codes, or
    bfloat16), roles `axes` (D, H, W, C; None absent), `tile` extents. Padding (channels
    and tile tails) is random: it is never to be read."""
    e = values.dtype.itemsize
    codes = values.view(UINT_OF[e]).astype(np.uint64)
    shape = values.shape
    rank = len(shape)
    present = [a for a in axes if a is not None]
    outer = [a for a in range(rank) if a not in present]
    v = np.transpose(codes, outer + present)
    outer_count = int(np.prod([shape[a] for a in outer])) if outer else 1
    role = [shape[a] if a is not None else 1 for a in axes]
    v = v.reshape([outer_count] + role)
    # Byte planes, least significant first: (outer, D, H, W, C, E).
    planes = np.stack([((v >> (8 * p)) & 0xFF).astype(np.uint8) for p in range(e)], axis=-1)
    ed, eh, ew, ec = role
    td, th, tw, tc = tile
    chunks = []
    for o in range(outer_count):
        for c0 in range(0, ec, tc):  # channel tile, depth tile, height tile, width tile
            for d0 in range(0, ed, td):
                for h0 in range(0, eh, th):
                    for w0 in range(0, ew, tw):
                        block = planes[o, d0:d0 + td, h0:h0 + th, w0:w0 + tw, c0:c0 + tc, :]
                        npix = block.shape[0] * block.shape[1] * block.shape[2]
                        tcp = block.shape[3]
                        sc = tcp if channels == "compact" else -(-tcp // 16) * 16
                        px = rng.integers(0, 256, (npix, sc, e), dtype=np.uint8)
                        px[:, :tcp, :] = block.reshape(npix, tcp, e)
                        if channels == "cblock16":
                            # [block b][pixel k][plane p][c mod 16]
                            body = px.reshape(npix, sc // 16, 16, e).transpose(1, 0, 3, 2)
                        else:
                            # [pixel k][plane p][channel c]
                            body = px.transpose(0, 2, 1)
                        flat = body.reshape(-1)
                        size = -(-flat.size // tile_align) * tile_align
                        t = rng.integers(0, 256, size, dtype=np.uint8)
                        t[: flat.size] = flat
                        chunks.append(t)
    return np.concatenate(chunks) if chunks else np.zeros(0, np.uint8)


def random_values(shape, dtype, rng):
    if dtype == "bf16":
        return rng.integers(0, 1 << 16, shape, dtype=np.uint16).view(ml_dtypes.bfloat16)
    info = np.iinfo(NP_OF[dtype])
    return rng.integers(info.min, info.max, shape, dtype=NP_OF[dtype], endpoint=True)


def bits(a):
    a = np.asarray(a)
    return a.view(UINT_OF[a.dtype.itemsize])


# Heads: (shape without frames, axes without frames, tile): boundary tiles on every role.
HEADS = {
    "compact": [
        ((5, 7, 3), (None, 0, 1, 2), (1, 2, 3, 3)),
        ((4, 6, 37), (None, 0, 1, 2), (1, 3, 4, 10)),
        ((3, 2, 5, 9), (0, 1, 2, 3), (2, 2, 2, 4)),
        ((1000,), (None, None, None, 0), (1, 1, 1, 1000)),
        ((11, 3), (None, None, 0, 1), (1, 1, 4, 3)),
    ],
    "pad16": [
        ((5, 7, 3), (None, 0, 1, 2), (1, 2, 3, 3)),
        ((4, 6, 37), (None, 0, 1, 2), (1, 3, 4, 16)),
        ((3, 5, 40), (None, 0, 1, 2), (1, 3, 5, 32)),
        ((2, 3, 33), (None, 0, 1, 2), (1, 2, 3, 33)),
    ],
    "cblock16": [
        ((5, 7, 3), (None, 0, 1, 2), (1, 2, 3, 3)),
        ((4, 6, 37), (None, 0, 1, 2), (1, 3, 4, 16)),
        ((3, 5, 40), (None, 0, 1, 2), (1, 2, 5, 32)),
        ((2, 3, 33), (None, 0, 1, 2), (1, 2, 3, 33)),
        ((2, 3, 2, 20), (0, 1, 2, 3), (1, 2, 2, 20)),
    ],
}


def with_frames(shape, axes, frames):
    """A batch of `frames` as the leading outer axis (no axis for frames=None)."""
    if frames is None:
        return shape, axes
    return (frames,) + shape, tuple(None if a is None else a + 1 for a in axes)


def cases():
    for channels, heads in HEADS.items():
        for dtype in ("i8", "i16", "i32", "bf16"):
            for align in (16, 1):
                for k, (shape, axes, tile) in enumerate(heads):
                    frames = (None, 1, 2, 3)[k % 4] if k else 3
                    yield channels, dtype, align, shape, axes, tile, frames


@pytest.mark.parametrize("channels,dtype,align,shape,axes,tile,frames", list(cases()))
def test_detess_against_the_byte_formula(channels, dtype, align, shape, axes, tile, frames):
    rng = np.random.default_rng(abs(hash((channels, dtype, align, shape, frames))) % 2**32)
    shape, axes = with_frames(shape, axes, frames)
    x = random_values(shape, dtype, rng)
    ofm = ofm_bytes(x, axes, tile, channels, align, rng)
    layout = simak.Layout(shape, axes, tile, channels=channels, dtype=dtype, tile_align=align)
    assert layout.capacity == ofm.size and layout.dtype == dtype
    assert layout.tile_align == align and layout.channels == channels
    for threads in (1, 3, 7):
        y = simak.detess(ofm, layout, threads=threads)
        assert y.dtype == NP_OF[dtype] and y.shape == shape
        assert np.array_equal(bits(y), bits(x))
    # The same head after other bytes, read at an offset (unaligned offsets included), from
    # bytes, a bytearray and a uint8 array.
    pre = int(rng.integers(1, 40))
    big = np.concatenate([rng.integers(0, 256, pre, dtype=np.uint8), ofm,
                          rng.integers(0, 256, 5, dtype=np.uint8)])
    for buf in (big, big.tobytes(), bytearray(big.tobytes()), memoryview(big.tobytes())):
        assert np.array_equal(bits(simak.detess(buf, layout, offset=pre)), bits(x))
    if dtype == "bf16":
        got = simak.detess_cast(ofm, layout)
        want = (bits(x).astype(np.uint32) << 16).view(np.float32)
        assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32),
                                                          want.view(np.uint32))
    else:
        m, zp = np.float32(0.37), int(np.iinfo(NP_OF[dtype]).min // 3)
        for od in (np.float32, np.float16, ml_dtypes.bfloat16):
            got = simak.detess_dequant(ofm, layout, m, zero_point=zp, out_dtype=od)
            assert got.dtype == od and got.shape == shape
            assert np.array_equal(bits(got), bits(dequant_oracle(x, m, zp, od)))


def test_sima_fixture_sizes():
    L = simak.Layout
    assert L((2, 3, 33), (None, 0, 1, 2), (1, 2, 3, 33), "compact", "bf16", 1).capacity == 396
    assert L((2, 3, 33), (None, 0, 1, 2), (1, 2, 3, 33), "pad16", "bf16").capacity == 576
    assert L((19, 19, 273), (None, 0, 1, 2), (1, 19, 19, 273), "cblock16", "i8").capacity == 103968
    assert L((16, 16, 16), (None, 0, 1, 2), (1, 16, 16, 16), "compact", "i8", 1).capacity == 4096
    assert L((60, 80, 65), (None, 0, 1, 2), (1, 60, 80, 65), "pad16", "i8").capacity == 384000
    # A BF16 C = 1 c16 pixel reads (b[16] << 8) | b[0].
    lay = L((1, 1, 1), (None, 0, 1, 2), (1, 1, 1, 1), "cblock16", "bf16")
    b = np.arange(32, dtype=np.uint8) + 100
    assert lay.capacity == 32
    assert bits(simak.detess(b, lay)).item() == (116 << 8) | 100


def test_multi_head_ofm_at_running_offsets():
    """A YOLO-like OFM of three heads back to back: each head at the sum of the spans
    before it."""
    rng = np.random.default_rng(3)
    heads = [((8, 8, 20), (1, 8, 8, 16)), ((4, 4, 20), (1, 4, 4, 16)), ((2, 2, 20), (1, 2, 2, 16))]
    xs, parts, layouts = [], [], []
    for shape, tile in heads:
        x = random_values(shape, "i8", rng)
        xs.append(x)
        parts.append(ofm_bytes(x, (None, 0, 1, 2), tile, "cblock16", 16, rng))
        layouts.append(simak.Layout(shape, (None, 0, 1, 2), tile, "cblock16", "i8"))
    ofm = np.concatenate(parts)
    offset = 0
    for x, lay in zip(xs, layouts):
        plan = simak.DetessPlan(lay, "detess_dequant", 0.5, zero_point=-3)
        got = plan.run(ofm, offset=offset)
        want = dequant_oracle(x, np.float32(0.5), -3, np.float32)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        assert np.array_equal(simak.detess(ofm, lay, offset=offset), x)
        offset += lay.capacity
    assert offset == ofm.size


# ---------------------------------------------------------------------------------------
# Strided outputs.


def test_out_is_any_strided_view():
    rng = np.random.default_rng(5)
    shape, axes, tile = (6, 5, 20), (None, 0, 1, 2), (1, 4, 3, 16)
    for dtype in ("i8", "i16", "i32", "bf16"):
        x = random_values(shape, dtype, rng)
        ofm = ofm_bytes(x, axes, tile, "cblock16", 16, rng)
        lay = simak.Layout(shape, axes, tile, "cblock16", dtype)
        # An NCHW buffer viewed as NHWC: (C, H, W) storage transposed to (H, W, C).
        store = np.full((20, 6, 5), 7, NP_OF[dtype])
        view = store.transpose(1, 2, 0)
        got = simak.detess(ofm, lay, out=view)
        assert got is view
        assert np.array_equal(bits(store), bits(x.transpose(2, 0, 1)))
        # Every other element of a wider buffer: the gaps keep their bytes.
        wide = np.full((6, 5, 40), 9, NP_OF[dtype])
        simak.detess(ofm, lay, out=wide[:, :, ::2])
        assert np.array_equal(bits(wide[:, :, ::2]), bits(x))
        assert np.all(bits(wide[:, :, 1::2]) == bits(np.full(1, 9, NP_OF[dtype]))[0])
        if dtype != "bf16":
            f = np.zeros((20, 6, 5), np.float16)
            simak.detess_dequant(ofm, lay, 2.0, out=f.transpose(1, 2, 0))
            assert np.array_equal(bits(f), bits(dequant_oracle(x, np.float32(2.0), 0,
                                                                np.float16).transpose(2, 0, 1)))
        else:
            f = np.zeros((20, 6, 5), np.float32)
            simak.detess_cast(ofm, lay, out=f.transpose(1, 2, 0), threads=2)
            want = (bits(x).astype(np.uint32) << 16).transpose(2, 0, 1)
            assert np.array_equal(f.view(np.uint32), want)


def test_plan_output_strides_and_reuse():
    rng = np.random.default_rng(6)
    shape, axes, tile = (2, 6, 5, 20), (None, 1, 2, 3), (1, 4, 3, 16)
    x = random_values(shape, "i16", rng)
    ofm = ofm_bytes(x, axes, tile, "pad16", 16, rng)
    lay = simak.Layout(shape, axes, tile, "pad16", "i16")
    nchw = np.zeros((2, 20, 6, 5), np.float32).transpose(0, 2, 3, 1)
    plan = simak.DetessPlan(lay, "detess_dequant", np.float32(0.25), zero_point=100,
                            output_strides=nchw.strides)
    assert plan.span == lay.capacity and plan.shape == shape and plan.out_dtype == "f32"
    want = dequant_oracle(x, np.float32(0.25), 100, np.float32)
    got = plan.run(ofm)
    assert got.strides == nchw.strides and np.array_equal(got, want)
    assert plan.run(ofm, out=nchw) is nchw and np.array_equal(nchw, want)
    # A C-order out= is not this plan's geometry.
    e = raise_code(0x606, plan.run, ofm, out=np.zeros(shape, np.float32))
    assert "strides" in str(e)


# ---------------------------------------------------------------------------------------
# Dequantization (§12.2).


def dequant_oracle(q, m, zp, out_dtype):
    """§12.2 in NumPy: d exact in int64, x = float32(d), y = float32(x / s) via binary64."""
    d = np.asarray(q).astype(np.int64) - np.int64(zp)
    x = d.astype(np.float32)
    s = np.float64(np.float32(m))
    with np.errstate(over="ignore", under="ignore"):
        y = (x.astype(np.float64) / s).astype(np.float32)
    y = np.where(d == 0, np.float32(0.0), y)  # a zero numerator gives +0
    if out_dtype is np.float32:
        return y
    if out_dtype is np.float16:
        with np.errstate(over="ignore"):
            return y.astype(np.float16)
    return oracle.f32_bits_to_bf16(y.view(np.uint32)).view(ml_dtypes.bfloat16)


MULTIPLIERS = [
    np.uint32(1).view(np.float32),  # the smallest subnormal
    np.float32(2.0**-140),  # subnormal
    np.float32(2.0**-5),
    np.float32(1.0),
    np.float32(1 / 3),
    np.float32(0.1),
    np.float32(2.0**100),
    np.float32(3.0e38),  # huge
]


@pytest.mark.parametrize("m", MULTIPLIERS, ids=lambda m: f"{int(np.float32(m).view(np.uint32)):#x}")
@pytest.mark.parametrize("od", [np.float32, np.float16, ml_dtypes.bfloat16],
                         ids=["f32", "f16", "bf16"])
def test_every_int8_code(m, od):
    q = np.arange(-128, 128, dtype=np.int8)
    lay = simak.Layout((256,), (None, None, None, 0), (1, 1, 1, 256), "compact", "i8", 1)
    for zp in (-128, -1, 0, 5, 127):
        want = dequant_oracle(q, m, zp, od)
        got = simak.dequantize(q, m, zero_point=zp, out_dtype=od)
        assert got.dtype == od and np.array_equal(bits(got), bits(want)), zp
        fused = simak.detess_dequant(q.view(np.uint8), lay, m, zero_point=zp, out_dtype=od)
        assert np.array_equal(bits(fused), bits(want)), zp


@pytest.mark.parametrize("m", MULTIPLIERS, ids=lambda m: f"{int(np.float32(m).view(np.uint32)):#x}")
def test_every_int16_code(m):
    q = np.arange(-32768, 32768, dtype=np.int16)
    for zp in (-32768, 0, 32767, -7):
        for od in (np.float32, np.float16, ml_dtypes.bfloat16):
            got = simak.dequantize(q, m, zero_point=zp, out_dtype=od)
            assert np.array_equal(bits(got), bits(dequant_oracle(q, m, zp, od))), (zp, od)


def test_int32_codes():
    rng = np.random.default_rng(32)
    edges = [-(2**31), 2**31 - 1, 2**24, 2**24 + 1, 2**24 - 1, -(2**24) - 1, -(2**24) + 1,
             2**25 + 3, 0, 1, -1, 16777217, -16777219]
    q = np.concatenate([np.array(edges, np.int64).astype(np.int32),
                        rng.integers(-(2**31), 2**31, 4000, dtype=np.int64).astype(np.int32)])
    for m in MULTIPLIERS:
        for zp in (-(2**31), 0, 2**31 - 1, 12345):
            for od in (np.float32, np.float16, ml_dtypes.bfloat16):
                got = simak.dequantize(q, m, zero_point=zp, out_dtype=od)
                assert np.array_equal(bits(got), bits(dequant_oracle(q, m, zp, od))), (m, zp)


def test_fusion_identities():
    rng = np.random.default_rng(8)
    for dtype in ("i8", "i16", "i32"):
        shape, axes, tile = (2, 7, 5, 35), (None, 1, 2, 3), (1, 3, 2, 16)
        x = random_values(shape, dtype, rng)
        ofm = ofm_bytes(x, axes, tile, "cblock16", 16, rng)
        lay = simak.Layout(shape, axes, tile, "cblock16", dtype)
        for od in (np.float32, np.float16, ml_dtypes.bfloat16):
            fused = simak.detess_dequant(ofm, lay, 0.3, zero_point=3, out_dtype=od, threads=2)
            two = simak.dequantize(simak.detess(ofm, lay), 0.3, zero_point=3, out_dtype=od)
            assert np.array_equal(bits(fused), bits(two))
    shape = (3, 4, 17)
    x = random_values(shape, "bf16", rng)
    ofm = ofm_bytes(x, (None, 0, 1, 2), (1, 2, 4, 17), "pad16", 16, rng)
    lay = simak.Layout(shape, (None, 0, 1, 2), (1, 2, 4, 17), "pad16", "bf16")
    cast = simak.detess_cast(ofm, lay)
    assert np.array_equal(cast.view(np.uint32),
                          bits(simak.detess(ofm, lay)).astype(np.uint32) << 16)


def test_recent_plans_are_reused_only_for_the_same_request():
    """The functions keep the prepared plans of recent calls: requests that differ in any
    parameter, dtype or geometry, cycled past the cache's size, still give their own
    results."""
    q = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    q16 = q.astype(np.int16) * 200
    lay = simak.Layout((16, 16), (None, None, 0, 1), (1, 1, 5, 16), "cblock16", "i8")
    ofm = ofm_bytes(q, lay.axes, lay.tile, "cblock16", 16, np.random.default_rng(1))
    requests = [(m, zp, od) for m in (0.5, 0.25, 3.0) for zp in (0, 1, -128)
                for od in (np.float32, np.float16)]
    for _ in range(2):
        for m, zp, od in requests:
            want = dequant_oracle(q, np.float32(m), zp, od)
            assert np.array_equal(bits(simak.dequantize(q, m, zp, od)), bits(want))
            assert np.array_equal(bits(simak.detess_dequant(ofm, lay, m, zp, od)), bits(want))
            assert np.array_equal(bits(simak.dequantize(q.T, m, zp, od)), bits(want.T))
            assert np.array_equal(bits(simak.dequantize(q16, m, zp, od)),
                                  bits(dequant_oracle(q16, np.float32(m), zp, od)))


def test_dequantize_out_and_strided_input():
    q = np.arange(-600, 600, dtype=np.int16).reshape(30, 40)
    out = np.zeros((40, 30), np.float16).T
    assert simak.dequantize(q, 4.0, zero_point=-5, out=out) is out
    assert np.array_equal(bits(out), bits(dequant_oracle(q, 4.0, -5, np.float16)))
    qt = q.T
    got = simak.dequantize(qt, 4.0, out_dtype="bf16")
    assert got.dtype == ml_dtypes.bfloat16
    assert np.array_equal(bits(got), bits(dequant_oracle(qt, 4.0, 0, ml_dtypes.bfloat16)))


# ---------------------------------------------------------------------------------------
# Round trips with the input-side ops.


@pytest.mark.parametrize("channels", ["compact", "pad16"])
def test_detess_of_casttess_and_quanttess(channels):
    rng = np.random.default_rng(9)
    for shape, axes, tile in [((5, 7, 3), (None, 0, 1, 2), (1, 2, 3, 3)),
                              ((2, 6, 5, 20), (None, 1, 2, 3), (1, 4, 3, 16)),
                              ((3, 4, 6), (2, 0, 1, None), (2, 3, 4, 1)),
                              ((2, 3, 5, 33), (1, 2, 3, 0), (1, 2, 4, 2))]:
        x = rng.normal(0, 50, shape).astype(np.float32)
        t = simak.casttess(x, axes=axes, tile=tile, channels=channels)
        lay = simak.Layout(shape, axes, tile, channels, "bf16")
        want = oracle.f32_bits_to_bf16(x.view(np.uint32))
        assert np.array_equal(bits(simak.detess(t, lay)), want)
        assert np.array_equal(bits(simak.untile(t, lay)), want)
        qt = simak.quanttess(x, 0.5, zero_point=3, axes=axes, tile=tile, channels=channels)
        qlay = simak.Layout(shape, axes, tile, channels, "i8")
        assert np.array_equal(simak.detess(qt, qlay), simak.quantize(x, 0.5, zero_point=3))


def test_untile_reads_section5_pad16_tiles_detess_refuses():
    """simak's input side may write PadTo16 C tiles that are neither C nor a multiple of 16
    (the MLA never does): Detess refuses them (0x224), untile still reads them."""
    rng = np.random.default_rng(11)
    x = rng.normal(0, 30, (3, 5, 7)).astype(np.float32)
    axes, tile = (None, 0, 1, 2), (1, 2, 2, 5)
    qt = simak.quanttess(x, 0.5, axes=axes, tile=tile, channels="pad16")
    lay = simak.Layout(x.shape, axes, tile, "pad16", "i8")
    raise_code(0x224, simak.detess, qt, lay)
    assert np.array_equal(simak.untile(qt, lay), simak.quantize(x, 0.5))
    # And the bytes are §5's: the oracle writes the same tiles (padding zero there).
    q = simak.quantize(x, 0.5)
    want = ofm_bytes(q, axes, tile, "pad16", 16, np.random.default_rng(0))
    pad = simak.Layout(x.shape, axes, tile, "pad16", "i8")
    assert want.size == qt.size == pad.capacity


# ---------------------------------------------------------------------------------------
# Bad input: a SimakError with its code; `out` untouched.


def raise_code(code, fn, *args, **kwargs):
    with pytest.raises(simak.SimakError) as e:
        fn(*args, **kwargs)
    assert e.value.code == code, str(e.value)
    assert f"(simak error code {oracle.code_text(code)})" in str(e.value)
    return e.value


def test_bad_inputs_leave_out_untouched():
    rng = np.random.default_rng(10)
    shape, axes, tile = (4, 5, 20), (None, 0, 1, 2), (1, 4, 5, 16)
    x = random_values(shape, "i8", rng)
    ofm = ofm_bytes(x, axes, tile, "cblock16", 16, rng)
    lay = simak.Layout(shape, axes, tile, "cblock16", "i8")
    out = np.full(shape, 55, np.int8)
    fout = np.full(shape, 1.5, np.float32)

    def untouched():
        assert np.all(out == 55) and np.all(fout == 1.5)

    raise_code(0x610, simak.detess, ofm[:-1], lay, out=out)
    raise_code(0x610, simak.detess, ofm, lay, offset=1, out=out)
    raise_code(0x611, simak.detess, ofm, lay, offset=ofm.size, out=out)
    raise_code(0x611, simak.detess, ofm, lay, offset=-1, out=out)
    raise_code(0x611, simak.detess, ofm, lay, offset=2**70, out=out)
    raise_code(0x612, simak.detess, ofm, lay, out=np.zeros(shape, np.uint8))
    raise_code(0x612, simak.detess, ofm, lay, out=np.zeros(shape, np.int16))
    raise_code(0x613, simak.detess, ofm, lay, out=np.zeros((4, 5, 21), np.int8))
    raise_code(0x613, simak.detess, ofm, lay, out=np.zeros((4, 100), np.int8))
    raise_code(0x612, simak.detess_dequant, ofm, lay, 1.0, out=np.zeros(shape, np.float64))
    raise_code(0x612, simak.detess_dequant, ofm, lay, 1.0, out_dtype=np.float16, out=fout)
    raise_code(0x613, simak.detess_dequant, ofm, lay, 1.0, out=np.zeros((5, 4, 20), np.float32))
    raise_code(14, simak.detess_dequant, ofm, lay, 0.0, out=fout)
    raise_code(13, simak.detess_dequant, ofm, lay, float("nan"), out=fout)
    raise_code(13, simak.detess_dequant, ofm, lay, float("inf"), out=fout)
    raise_code(0x223, simak.detess_dequant, ofm, lay, 1.0, zero_point=128, out=fout)
    raise_code(0x223, simak.detess_dequant, ofm, lay, 1.0, zero_point=-(2**40), out=fout)
    raise_code(0x601, simak.detess_dequant, ofm, lay, 1.0, out_dtype=np.float64, out=fout)
    raise_code(5, simak.detess_cast, ofm, lay, out=fout)  # an i8 layout is not BF16
    raise_code(5, simak.detess, ofm.view(np.int8).astype(np.int16), lay, out=out)
    raise_code(0x607, simak.detess, np.repeat(ofm, 2)[::2], lay, out=out)
    ro = np.zeros(shape, np.int8)
    ro.flags.writeable = False
    raise_code(0x605, simak.detess, ofm, lay, out=ro)
    raise_code(0x604, simak.detess, ofm, lay, out=np.zeros(shape, np.int8)[::-1])
    raise_code(21, simak.detess, ofm, lay,
               out=np.lib.stride_tricks.as_strided(out, shape, (0, 20, 1)))
    # Overlap of the OFM and out=.
    shared = np.zeros(ofm.size + 400, np.uint8)
    shared[: ofm.size] = ofm
    raise_code(0x407, simak.detess, shared, lay, out=shared[8:8 + 400].view(np.int8).reshape(shape))
    untouched()
    # The c16 tile-channel rule and the (false, true) flags.
    bad = simak.Layout((4, 5, 40), axes, (1, 4, 5, 20), "cblock16", "i8")
    raise_code(0x224, simak.detess, np.zeros(bad.capacity, np.uint8), bad, out=None)
    raise_code(0x601, simak.Layout, shape, axes, tile, "cblock8", "i8")
    raise_code(0x601, simak.Layout, shape, axes, tile, "cblock16", "i64")
    raise_code(0x601, simak.Layout, shape, axes, tile, "cblock16", "i8", 8)
    # The input-side ops refuse CBlock16 and tile alignment 1.
    xf = np.zeros(shape, np.float32)
    raise_code(0x220, simak.casttess, xf, axes=axes, tile=tile, channels="cblock16")
    # DetessPlan misuse.
    raise_code(0x601, simak.DetessPlan, lay, "detess_dequant")
    raise_code(0x601, simak.DetessPlan, lay, "detess", 1.0)
    raise_code(0x601, simak.DetessPlan, lay, "detess_quant")
    plan = simak.DetessPlan(lay)
    raise_code(0x610, plan.run, ofm[:-16], out=out)
    raise_code(0x612, plan.run, ofm, out=fout)
    untouched()
    with pytest.raises(ValueError):
        simak.detess(ofm, lay, threads=0)


def test_empty_head():
    lay = simak.Layout((0, 4, 16), (None, 0, 1, 2), (1, 1, 4, 16), "cblock16", "i16")
    assert lay.capacity == 0
    assert simak.detess(b"", lay).shape == (0, 4, 16)
    assert simak.detess(b"abc", lay, offset=3).dtype == np.int16


def test_layout_pickles_with_tile_align():
    import pickle

    lay = simak.Layout((3, 5, 20), (None, 0, 1, 2), (1, 2, 5, 16), "cblock16", "i32", 1)
    back = pickle.loads(pickle.dumps(lay))
    assert back == lay and back.tile_align == 1 and back.dtype == "i32" and back.planes == 4
    assert back.capacity == lay.capacity
    assert back != simak.Layout((3, 5, 20), (None, 0, 1, 2), (1, 2, 5, 16), "cblock16", "i32")
