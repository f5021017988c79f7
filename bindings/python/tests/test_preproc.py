"""simak.preprocess and simak.PreprocPlan (SPEC §13) against an independent NumPy reference
written here from the contract's text: the BT.601 integer YUV formula, the channel order,
the border and the normalization n = f32(f32(f32(p) / divisor) - mean) / std, each step
in float32. The equivalence rule: the fused bytes equal the existing op (quantize,
quanttess, casttess) run on the reference FP32 tensor. OpenCV's cvtColor checks the YUV
step where opencv-python-headless is installed."""

import pickle

import numpy as np
import pytest

import simak

FORMATS = ("rgb", "bgr", "rgbx", "bgrx", "gray", "nv12", "i420")
MODES = ("nearest-even", "toward-zero", "toward-positive", "toward-negative")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


# ----------------------------------------------------------------- the reference (§13)


def yuv_to_rgb(y, u, v):
    """OpenCV's BT.601 limited-range fixed point, as SPEC §13 states it."""
    y = np.maximum(0, y.astype(np.int64) - 16) * 1220542
    u = u.astype(np.int64) - 128
    v = v.astype(np.int64) - 128
    base = y + (1 << 19)
    r = (base + 1673527 * v) >> 20
    g = (base - 852492 * v - 409993 * u) >> 20
    b = (base + 2116026 * u) >> 20
    return np.clip(np.stack([r, g, b], axis=-1), 0, 255).astype(np.uint8)


def up2(c):
    """Each chroma sample shared by its 2x2 block of luma."""
    return np.repeat(np.repeat(c, 2, axis=-2), 2, axis=-1)


def rgb_of(frame, fmt):
    """The raw 8-bit R, G, B (or gray) values of a packed frame or batch: [..., H, W, C]."""
    if fmt in ("rgb", "rgbx"):
        return np.asarray(frame)[..., :3]
    if fmt in ("bgr", "bgrx"):
        return np.asarray(frame)[..., 2::-1]
    if fmt == "gray":
        return np.asarray(frame)[..., None]
    if isinstance(frame, tuple):
        if fmt == "nv12":
            y, uv = frame
            uv = uv.reshape(uv.shape[: y.ndim - 2] + (y.shape[-2] // 2, y.shape[-1] // 2, 2))
            u, v = uv[..., 0], uv[..., 1]
        else:
            y, u, v = frame
        return yuv_to_rgb(y, up2(u), up2(v))
    f = np.ascontiguousarray(frame)
    rows, w = f.shape[-2:]
    h = rows * 2 // 3
    lead = f.shape[:-2]
    if fmt == "nv12":
        y = f[..., :h, :]
        uv = f[..., h:, :].reshape(lead + (h // 2, w // 2, 2))
        u, v = uv[..., 0], uv[..., 1]
    else:
        flat = f.reshape(lead + (rows * w,))
        q = (h // 2) * (w // 2)
        y = flat[..., : h * w].reshape(lead + (h, w))
        u = flat[..., h * w : h * w + q].reshape(lead + (h // 2, w // 2))
        v = flat[..., h * w + q : h * w + 2 * q].reshape(lead + (h // 2, w // 2))
    return yuv_to_rgb(y, up2(u), up2(v))


def reference(frame, fmt, mean=0.0, std=1.0, divisor=255.0, bgr=False, border=(0, 0, 0, 0),
              pad_value=0):
    """The FP32 tensor n of SPEC §13 ([H', W', C] or [N, H', W', C])."""
    raw = rgb_of(frame, fmt)
    c = raw.shape[-1]
    if bgr and c == 3:
        raw = raw[..., ::-1]
    top, bottom, left, right = border
    h, w = raw.shape[-3:-1]
    shape = raw.shape[:-3] + (top + h + bottom, left + w + right, c)
    padded = np.empty(shape, np.uint8)
    padded[...] = np.broadcast_to(np.asarray(pad_value, np.uint8), (c,))
    padded[..., top : top + h, left : left + w, :] = raw
    x = padded.astype(np.float32)
    x = x / np.float32(divisor)
    x = x - np.broadcast_to(np.asarray(mean, np.float32), (c,))
    x = x / np.broadcast_to(np.asarray(std, np.float32), (c,))
    assert x.dtype == np.float32
    return x


def existing(n, to, multiplier=None, zero_point=0, rounding="nearest-even", axes=None,
             tile=None, channels="compact"):
    """The existing op on the reference tensor (the equivalence rule)."""
    if to == "f32":
        return n
    if to == "i8":
        return simak.quantize(n, multiplier, zero_point=zero_point, rounding=rounding)
    if axes is None:
        axes = (None, 1, 2, 3) if n.ndim == 4 else (None, 0, 1, 2)
    if tile is None:
        tile = (1, min(16, n.shape[-3]), min(64, n.shape[-2]), n.shape[-1])
    if to == "quanttess":
        return simak.quanttess(n, multiplier, axes=axes, tile=tile, channels=channels,
                               zero_point=zero_point, rounding=rounding)
    return simak.casttess(n, axes=axes, tile=tile, channels=channels)


def same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                  want.dtype, want.shape)
    g = np.ascontiguousarray(got).view(np.uint8)
    w = np.ascontiguousarray(want).view(np.uint8)
    if not np.array_equal(g, w):
        bad = np.flatnonzero(g.ravel() != w.ravel())
        raise AssertionError(f"{bad.size} bytes differ, first at byte {bad[0]}: "
                             f"{g.ravel()[bad[:8]]} != {w.ravel()[bad[:8]]}")


# ------------------------------------------------------------------------- frames


def make_frame(fmt, h, w, seed=0, batch=None):
    rng = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    shape = {
        "rgb": (h, w, 3), "bgr": (h, w, 3), "rgbx": (h, w, 4), "bgrx": (h, w, 4),
        "gray": (h, w), "nv12": (h * 3 // 2, w), "i420": (h * 3 // 2, w),
    }[fmt]
    return rng.integers(0, 256, lead + shape, dtype=np.uint8)


def params_for(to, mode="nearest-even"):
    if to in ("i8", "quanttess"):
        return dict(multiplier=40.0, zero_point=-3, rounding=mode)
    return {}


# ------------------------------------------------------------------- equivalence


CASES = [(to, mode) for to in ("f32", "casttess") for mode in ("nearest-even",)] + [
    (to, mode) for to in ("i8", "quanttess") for mode in MODES
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("to,mode", CASES)
@pytest.mark.parametrize("bgr", [False, True])
@pytest.mark.parametrize("border", [(0, 0, 0, 0), (1, 2, 3, 0)])
def test_equivalence(fmt, to, mode, bgr, border):
    h, w = (6, 10) if fmt in ("nv12", "i420") else (5, 7)
    frame = make_frame(fmt, h, w, seed=hash((fmt, to, mode)) % 1000)
    c = 1 if fmt == "gray" else 3
    mean, std = (MEAN, STD) if c == 3 else (0.5, 0.25)
    pad = (114, 0, 255) if c == 3 else 114
    p = params_for(to, mode)
    got = simak.preprocess(frame, format=fmt, mean=mean, std=std, bgr=bgr, border=border,
                           pad_value=pad, to=to, **p)
    n = reference(frame, fmt, mean, std, 255.0, bgr, border, pad)
    same(got, existing(n, to, **p))


@pytest.mark.parametrize("to", ["f32", "i8", "quanttess", "casttess"])
@pytest.mark.parametrize("fmt", ["rgb", "bgrx", "gray"])
def test_exhaustive_256_values_every_channel(fmt, to):
    # Every channel of the frame takes each of the 256 values (rotated per channel).
    values = np.arange(256, dtype=np.uint8)
    chans = np.stack([np.roll(values, 85 * k) for k in range(4)], axis=-1)  # (256, 4)
    frame = chans.reshape(16, 16, 4)
    if fmt == "rgb":
        frame = np.ascontiguousarray(frame[..., :3])
    elif fmt == "gray":
        frame = np.ascontiguousarray(frame[..., 0])
    c = 1 if fmt == "gray" else 3
    for mean, std, divisor in [(0.0, 1.0, 255.0), (MEAN[:c], STD[:c], 255.0),
                               ((3.0, -1.5, 0.1)[:c], (-0.7, 1e-3, 3.0)[:c], 7.0),
                               (0.0, 1.0, 1.0)]:
        p = params_for(to)
        got = simak.preprocess(frame, format=fmt, mean=mean, std=std, divisor=divisor,
                               to=to, **p)
        n = reference(frame, fmt, mean, std, divisor)
        same(got, existing(n, to, **p))


@pytest.mark.parametrize("fmt", ["nv12", "i420"])
def test_exhaustive_yuv_values(fmt):
    # Y takes every value 4 times, U and V every value once each (V rotated).
    h, w = 32, 32
    y = np.tile(np.arange(256, dtype=np.uint8), 4).reshape(h, w)
    u = np.arange(256, dtype=np.uint8).reshape(16, 16)
    v = np.roll(np.arange(256, dtype=np.uint8), 77).reshape(16, 16)
    if fmt == "nv12":
        frame = np.concatenate([y, np.stack([u, v], -1).reshape(16, 32)])
    else:
        frame = np.concatenate([y.ravel(), u.ravel(), v.ravel()]).reshape(48, 32)
    got = simak.preprocess(frame, format=fmt, divisor=1.0)
    rgb = yuv_to_rgb(y, up2(u), up2(v))
    same(got, rgb.astype(np.float32))
    for to in ("i8", "casttess"):
        p = params_for(to)
        got = simak.preprocess(frame, format=fmt, mean=MEAN, std=STD, to=to, bgr=True, **p)
        same(got, existing(reference(frame, fmt, MEAN, STD, bgr=True), to, **p))


def test_yuv_formula_known_points():
    # Black, white and the saturating corners, from the formula by hand.
    assert yuv_to_rgb(np.uint8(16), np.uint8(128), np.uint8(128)).tolist() == [0, 0, 0]
    assert yuv_to_rgb(np.uint8(235), np.uint8(128), np.uint8(128)).tolist() == [255, 255, 255]
    frame = np.array([[235, 235], [235, 235], [128, 128]], np.uint8)  # NV12 2x2
    got = simak.preprocess(frame, format="nv12", divisor=1.0)
    assert got.shape == (2, 2, 3)
    assert np.all(got == 255.0)


# ------------------------------------------------------- strides, planes, batches


def odd_view(frame, fmt, seed):
    """The same pixels in a bigger buffer with odd row (and frame) strides."""
    rng = np.random.default_rng(seed)
    lead = frame.shape[:-3] if fmt not in ("gray", "nv12", "i420") else frame.shape[:-2]
    if fmt in ("nv12", "i420", "gray"):
        rows, w = frame.shape[-2:]
        big = rng.integers(0, 256, tuple(2 * n + 1 for n in lead) + (rows + 2, w + 5),
                           dtype=np.uint8)
        sl = tuple(slice(1, None, 2) for _ in lead) + (slice(1, rows + 1), slice(3, w + 3))
    else:
        h, w, c = frame.shape[-3:]
        big = rng.integers(0, 256, tuple(2 * n + 1 for n in lead) + (h + 3, w + 4, c),
                           dtype=np.uint8)
        sl = tuple(slice(1, None, 2) for _ in lead) + (slice(2, h + 2), slice(1, w + 1))
    view = big[sl]
    view[...] = frame
    return view


@pytest.mark.parametrize("fmt", ["rgb", "bgr", "rgbx", "bgrx", "gray", "nv12"])
@pytest.mark.parametrize("batch", [None, 1, 2, 3])
@pytest.mark.parametrize("to", ["f32", "i8", "quanttess", "casttess"])
def test_odd_strides_and_batches(fmt, batch, to):
    h, w = (6, 14) if fmt == "nv12" else (7, 9)
    frame = make_frame(fmt, h, w, seed=7, batch=batch)
    view = odd_view(frame, fmt, 3)
    assert not view.flags.c_contiguous
    p = params_for(to)
    got = simak.preprocess(view, format=fmt, mean=0.25, std=0.5, border=(2, 0, 1, 1),
                           pad_value=9, to=to, **p)
    n = reference(frame, fmt, 0.25, 0.5, border=(2, 0, 1, 1), pad_value=9)
    assert n.shape[:-3] == (() if batch is None else (batch,))
    same(got, existing(n, to, **p))


@pytest.mark.parametrize("fmt", ["rgb", "bgrx", "gray"])
def test_pixels_not_contiguous_are_gathered(fmt):
    frame = make_frame(fmt, 9, 16, seed=11)
    for view in (frame[:, ::2], np.asfortranarray(frame), frame[::2, 1::3]):
        got = simak.preprocess(view, format=fmt, to="i8", multiplier=30.0)
        same(got, existing(reference(np.ascontiguousarray(view), fmt), "i8", multiplier=30.0))


@pytest.mark.parametrize("fmt", ["nv12", "i420"])
@pytest.mark.parametrize("batch", [None, 2])
@pytest.mark.parametrize("layout", ["separate", "one-buffer", "uv-pairs"])
def test_plane_tuples(fmt, batch, layout):
    h, w = 8, 12
    rng = np.random.default_rng(5)
    lead = () if batch is None else (batch,)
    y = rng.integers(0, 256, lead + (h, w), dtype=np.uint8)
    if fmt == "nv12":
        chroma = [rng.integers(0, 256, lead + (h // 2, w), dtype=np.uint8)]
        if layout == "uv-pairs":
            chroma = [chroma[0].reshape(lead + (h // 2, w // 2, 2))]
    else:
        chroma = [rng.integers(0, 256, lead + (h // 2, w // 2), dtype=np.uint8)
                  for _ in range(2)]
    planes = (y, *chroma)
    if layout == "one-buffer":
        # Views into one decoder buffer, chroma first, with gaps between planes.
        sizes = [p.size // max(1, p.shape[0] if batch else 1) for p in planes]
        per = sum(sizes) + 5 * len(planes)
        buf = rng.integers(0, 256, (batch or 1, per), dtype=np.uint8)
        views, at = [], 0
        for p in reversed(planes):
            inner = p.shape[1:] if batch else p.shape
            k = int(np.prod(inner))
            v = buf[:, at : at + k].reshape((batch or 1,) + inner)
            v[...] = p if batch else p[None]
            assert np.shares_memory(v, buf)
            views.insert(0, v if batch else v[0])
            at += k + 5
        planes = tuple(views)
    want = existing(reference(tuple(np.asarray(p) for p in planes), fmt, MEAN, STD), "quanttess",
                    multiplier=25.0)
    got = simak.preprocess(planes, format=fmt, mean=MEAN, std=STD, to="quanttess",
                           multiplier=25.0)
    same(got, want)
    # The packed single array gives the same bytes.
    if layout != "one-buffer":
        if fmt == "nv12":
            single = np.concatenate([y, chroma[0].reshape(lead + (h // 2, w))], axis=-2)
        else:
            single = np.concatenate(
                [p.reshape(lead + (-1,)) for p in planes], axis=-1).reshape(lead + (h * 3 // 2, w))
        same(simak.preprocess(single, format=fmt, mean=MEAN, std=STD, to="quanttess",
                              multiplier=25.0), want)


@pytest.mark.parametrize("threads", range(1, 8))
def test_threads_same_bytes(threads):
    frame = make_frame("nv12", 38, 70, seed=2, batch=3)
    for to in ("f32", "quanttess", "casttess"):
        p = params_for(to)
        got = simak.preprocess(frame, format="nv12", mean=MEAN, std=STD, border=(1, 3, 0, 5),
                               to=to, threads=threads, tile=(1, 8, 16, 3) if to != "f32" else None,
                               **p)
        n = reference(frame, "nv12", MEAN, STD, border=(1, 3, 0, 5))
        same(got, existing(n, to, tile=(1, 8, 16, 3), **p))


def test_out_arrays_and_strided_out():
    frame = make_frame("rgb", 5, 6, seed=1)
    n = reference(frame, "rgb")
    out = np.full((5, 6, 3), 7.0, np.float32)
    assert simak.preprocess(frame, out=out) is out
    same(out, n)
    # A strided out=: only its elements are written.
    base = np.full((5, 6, 5), 99, np.int8)
    view = base[:, :, 1:4]
    simak.preprocess(frame, to="i8", multiplier=50.0, out=view)
    same(view, simak.quantize(n, 50.0))
    assert np.all(base[:, :, 0] == 99) and np.all(base[:, :, 4] == 99)
    # Tiled out=: the capacity's bytes, 16-byte aligned buffer.
    plan = simak.PreprocPlan(5, 6, format="rgb", to="casttess")
    buf = np.zeros(plan.output_span + 32, np.uint8)
    off = (-buf.ctypes.data) % 16
    tgt = buf[off : off + plan.output_span]
    got = simak.preprocess(frame, to="casttess", out=tgt)
    assert got is tgt
    same(tgt, existing(n, "casttess"))


def test_new_tiled_buffer_is_aligned_and_layout_reads_back():
    frame = make_frame("bgr", 20, 70, seed=4)
    plan = simak.PreprocPlan(20, 70, format="bgr", to="quanttess", multiplier=60.0)
    buf = plan.execute(frame)
    assert buf.dtype == np.uint8 and buf.ndim == 1 and buf.ctypes.data % 16 == 0
    assert buf.size == plan.layout.capacity == plan.output_span
    n = reference(frame, "bgr")
    same(simak.untile(buf, plan.layout), simak.quantize(n, 60.0))


# ------------------------------------------------------------------------- plans


def test_plan_matches_function_and_pickles():
    kw = dict(format="i420", mean=MEAN, std=STD, divisor=250.0, bgr=True, border=(2, 2, 4, 4),
              pad_value=(1, 2, 3), to="quanttess", multiplier=33.0, zero_point=5,
              rounding="toward-zero", tile=(1, 4, 8, 3), channels="pad16", batch=2)
    plan = simak.PreprocPlan(10, 12, **kw)
    frames = make_frame("i420", 10, 12, seed=9, batch=2)
    del kw["batch"]
    want = simak.preprocess(frames, **kw)
    same(plan.execute(frames), want)
    same(plan.execute(frames, threads=3), want)
    again = pickle.loads(pickle.dumps(plan))
    same(again.execute(frames), want)
    assert again.shape == plan.shape == (2, 14, 20, 3)
    assert (again.height, again.width, again.batch, again.format, again.to) == (
        10, 12, 2, "i420", "quanttess")
    assert "PreprocPlan" in repr(plan)


def test_plan_with_row_strides_and_other_geometry():
    frame = make_frame("nv12", 6, 10, seed=3)
    padded = odd_view(frame, "nv12", 1)  # rows of 15 bytes
    plan = simak.PreprocPlan(6, 10, format="nv12", row_strides=(padded.strides[0],) * 2)
    same(plan.execute(padded), reference(frame, "nv12"))
    same(plan.execute(frame), reference(frame, "nv12"))  # packed rows: admitted per call
    assert plan.layout is None
    with pytest.raises(simak.SimakError) as e:
        plan.execute(make_frame("nv12", 8, 10))
    assert e.value.code == 0x619
    with pytest.raises(simak.SimakError) as e:
        simak.PreprocPlan(6, 10, format="nv12", row_strides=(4, 10))
    assert e.value.code == 0x241


# ------------------------------------------------------------------------ errors


def error_code(f, *a, **kw):
    with pytest.raises(simak.SimakError) as e:
        f(*a, **kw)
    return e.value.code


@pytest.mark.parametrize("fmt", ["nv12", "i420"])
def test_odd_sizes_refused(fmt):
    assert error_code(simak.preprocess, np.zeros((7, 4), np.uint8), format=fmt) == 0x240  # H=5
    assert error_code(simak.preprocess, np.zeros((6, 5), np.uint8), format=fmt) == 0x240  # W=5
    assert error_code(simak.PreprocPlan, 5, 4, format=fmt) == 0x240
    assert error_code(simak.preprocess, np.zeros((8, 4), np.uint8), format=fmt) == 0x619


def test_parameter_errors_write_nothing():
    frame = make_frame("rgb", 4, 4)
    out = np.full((4, 4, 3), 3.0, np.float32)
    cases = [
        (dict(std=0.0), 0x246),
        (dict(std=(1.0, -0.0, 1.0)), 0x246),
        (dict(mean=float("nan")), 0x244),
        (dict(mean=(0.0, 0.0, float("inf"))), 0x244),
        (dict(divisor=0.0), 0x245),
        (dict(divisor=-1.0), 0x245),
        (dict(divisor=float("nan")), 0x244),
        (dict(mean=(0.1, 0.2)), 0x247),
        (dict(pad_value=(1, 2)), 0x247),
        (dict(pad_value=256), 0x608),
        (dict(border=(0, -1, 0, 0)), 0x608),
        (dict(format="yuyv"), 0x601),
        (dict(to="f16"), 0x601),
        (dict(rounding="up"), 0x601),
    ]
    for kw, code in cases:
        assert error_code(simak.preprocess, frame, out=out, **kw) == code, kw
        assert np.all(out == 3.0)


def test_output_argument_errors():
    frame = make_frame("rgb", 4, 4)
    assert error_code(simak.preprocess, frame, to="i8") == 0x61b
    assert error_code(simak.preprocess, frame, to="quanttess") == 0x61b
    assert error_code(simak.preprocess, frame, to="f32", multiplier=2.0) == 0x61b
    assert error_code(simak.preprocess, frame, to="i8", multiplier=2.0, tile=(1, 2, 2, 3)) == 0x61b
    assert error_code(simak.PreprocPlan, 4, 4, format="rgb", to="i8") == 0x61b
    assert error_code(simak.preprocess, frame, to="i8", multiplier=-1.0) == 14
    assert error_code(simak.preprocess, frame, to="i8", multiplier=1.0, zero_point=200) == 15
    assert error_code(simak.preprocess, frame, out=np.zeros((4, 4, 3), np.float64)) == 0x201
    assert error_code(simak.preprocess, frame, out=np.zeros((4, 5, 3), np.float32)) == 0x202
    ro = np.zeros((4, 4, 3), np.float32)
    ro.flags.writeable = False
    assert error_code(simak.preprocess, frame, out=ro) == 0x605
    assert error_code(simak.preprocess, frame, to="casttess", out=np.zeros(8, np.uint8)) == 0x402


def test_frame_errors():
    f = make_frame("rgb", 4, 4)
    # A float frame, a 2-channel frame, a frame of the wrong rank or channel count.
    assert error_code(simak.preprocess, f.astype(np.float32)) == 0x618
    assert error_code(simak.preprocess, f.astype(np.float32), format="nv12") == 0x618
    assert error_code(simak.preprocess, f.astype(np.uint16)) == 0x618
    assert error_code(simak.preprocess, f[..., :2]) == 0x619
    assert error_code(simak.preprocess, np.zeros((4, 4, 2), np.uint8), format="gray") == 0x619
    assert error_code(simak.preprocess, np.zeros((2, 4, 4, 2), np.uint8), format="gray") == 0x619
    assert error_code(simak.preprocess, f, format="rgbx") == 0x619
    assert error_code(simak.preprocess, f[..., 0]) == 0x619
    assert error_code(simak.preprocess, np.zeros(12, np.uint8), format="nv12") == 0x619
    # Negative strides: 0x604 (format="bgr" is the way to swap channels).
    assert error_code(simak.preprocess, f[..., ::-1]) == 0x604
    # I420 in one array with padded rows; NV12 tolerates them.
    padded = np.zeros((6, 6), np.uint8)[:, :4]
    assert error_code(simak.preprocess, padded, format="i420") == 0x61a
    simak.preprocess(padded, format="nv12")


def test_plane_errors():
    y = np.zeros((4, 6), np.uint8)
    uv = np.zeros((2, 6), np.uint8)
    u = np.zeros((2, 3), np.uint8)
    assert error_code(simak.preprocess, (y, uv[:1]), format="nv12") == 0x619  # short UV
    assert error_code(simak.preprocess, (y, u), format="nv12") == 0x619
    assert error_code(simak.preprocess, (y, u, u[:, :2]), format="i420") == 0x619
    assert error_code(simak.preprocess, (y, u), format="i420") == 0x619
    assert error_code(simak.preprocess, (y, uv), format="rgb") == 0x619
    assert error_code(simak.preprocess, (y, uv.astype(np.float32)), format="nv12") == 0x618
    # Overlapping planes: the same array as U and V, or Y's rows as UV.
    assert error_code(simak.preprocess, (y, u, u), format="i420") == 0x242
    buf = np.zeros(40, np.uint8)
    assert error_code(simak.preprocess, (buf[:24].reshape(4, 6), buf[18:30].reshape(2, 6)),
                      format="nv12") == 0x242
    # The output over the frame: nothing written.
    alias = np.zeros(4 * 4 * 3 * 4, np.uint8)
    out = alias.view(np.float32).reshape(4, 4, 3)
    src = alias[: 4 * 4 * 3].reshape(4, 4, 3)
    assert error_code(simak.preprocess, src, out=out) == 0x407
    assert np.all(alias == 0)


# ------------------------------------------------------------------------ OpenCV


try:
    import cv2
except ImportError:  # pragma: no cover - opencv-python-headless is optional
    cv2 = None


@pytest.mark.skipif(cv2 is None, reason="opencv-python-headless is not installed")
@pytest.mark.parametrize("fmt", ["nv12", "i420"])
@pytest.mark.parametrize("size", [(2, 2), (8, 14), (64, 96)])
def test_opencv_cvtcolor(fmt, size):
    h, w = size
    frame = make_frame(fmt, h, w, seed=h * w)
    codes = {
        ("nv12", False): cv2.COLOR_YUV2RGB_NV12, ("nv12", True): cv2.COLOR_YUV2BGR_NV12,
        ("i420", False): cv2.COLOR_YUV2RGB_I420, ("i420", True): cv2.COLOR_YUV2BGR_I420,
    }
    for bgr in (False, True):
        want = cv2.cvtColor(frame, codes[(fmt, bgr)]).astype(np.float32)
        same(simak.preprocess(frame, format=fmt, bgr=bgr, divisor=1.0), want)
    # And the reference agrees with OpenCV, so the equivalence tests rest on its bytes.
    same(rgb_of(frame, fmt), cv2.cvtColor(frame, codes[(fmt, False)]))


@pytest.mark.skipif(cv2 is None, reason="opencv-python-headless is not installed")
def test_opencv_pipeline_int8():
    frame = make_frame("nv12", 16, 32, seed=1)
    rgb = cv2.cvtColor(frame, cv2.COLOR_YUV2RGB_NV12)
    x = (rgb.astype(np.float32) / np.float32(255) - np.asarray(MEAN, np.float32)) / np.asarray(
        STD, np.float32)
    want = np.clip(np.rint(x * np.float32(40.0)), -128, 127).astype(np.int8)
    got = simak.preprocess(frame, format="nv12", mean=MEAN, std=STD, to="i8", multiplier=40.0)
    same(got, want)


def test_output_between_planes_of_one_buffer():
    # Planes and the output in one device-like buffer: the output lies in the gap between
    # the Y and UV planes, so it may not be read as part of the frame.
    rng = np.random.default_rng(8)
    buf = np.zeros(400, np.uint8)
    y = buf[0:24].reshape(4, 6)
    uv = buf[300:312].reshape(2, 6)
    y[...] = rng.integers(0, 256, y.shape)
    uv[...] = rng.integers(0, 256, uv.shape)
    frame = (y.copy(), uv.copy())
    out = buf[100:172].view(np.int8).reshape(4, 6, 3)
    got = simak.preprocess((y, uv), format="nv12", to="i8", multiplier=64.0, out=out)
    assert got is out
    same(out.copy(), simak.quantize(reference(frame, "nv12"), 64.0))
    assert np.array_equal(y, frame[0]) and np.array_equal(uv, frame[1])
