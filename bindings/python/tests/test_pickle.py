"""Pickling plans and layouts: the state is the request's parameters, admitted again by the
constructor on load (a tampered pickle is a SimakError), and a spawn-context process pool
gives the bytes the same plans give in process."""

import copy
import multiprocessing
import pickle

import ml_dtypes
import numpy as np
import pytest

import oracle
import simak

X = np.linspace(-40, 40, 4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5)


def plans():
    """One of each class, with strides and non-default options where they exist."""
    xt = X.transpose(1, 0, 2)  # a strided view
    return [
        simak.QuantPlan(X.shape, "f32", 0.75, zero_point=-3, rounding="toward-zero"),
        simak.QuantPlan(xt.shape, "f32", np.float32(1e-39), input_strides=xt.strides,
                        output_strides=(4 * 5, 6 * 4 * 5, 1), exact=True),
        simak.QuantPlan((), "bf16", 3.0),
        simak.CastTessPlan(X.shape, "f32", (None, 0, 1, 2), (1, 3, 4, 5), channels="pad16"),
        simak.CastTessPlan(xt.shape, np.float32, (1, None, 0, 2), (2, 1, 5, 5),
                           input_strides=xt.strides),
        simak.Layout(X.shape, (None, 0, 1, 2), (1, 3, 4, 5)),
        simak.Layout((3, 7), (None, None, 0, 1), (1, 1, 2, 7), channels="pad16", dtype="i8"),
        simak.Layout((2, 3, 20), (None, 1, None, 2), (1, 2, 1, 16), "cblock16", "i32", 1),
        simak.DetessPlan(OUT_LAYOUT),
        simak.DetessPlan(OUT_LAYOUT, "detess_dequant", np.float32(1e-39), zero_point=-7,
                         out_dtype=ml_dtypes.bfloat16, output_strides=(4, 2 * 4 * 20, 2 * 4)),
        simak.DetessPlan(simak.Layout((3, 4, 5), (None, 0, 1, 2), (1, 2, 4, 5), "compact",
                                      "bf16", 1), "detess_cast"),
    ]


# An INT16 head in CBlock16 (the MLA's output side) and bytes for it.
OUT_LAYOUT = simak.Layout((2, 4, 20), (None, 0, 1, 2), (1, 2, 3, 16), "cblock16", "i16")
OFM = np.random.default_rng(27).integers(0, 256, 4096, dtype=np.uint8)


def raw(a):
    """An array's bytes in logical order."""
    return np.ascontiguousarray(a).view(np.uint8)


def same(a, b):
    assert type(a) is type(b)
    assert repr(a) == repr(b)
    names = [n for n in dir(a) if not n.startswith("_") and not callable(getattr(a, n))]
    for n in names:
        got, want = getattr(b, n), getattr(a, n)
        if isinstance(want, simak.Layout):
            assert got == want, n
        else:
            assert got == want or (got != got and want != want), n


def run(item):
    """What a worker does with a plan: its result on the input it was sent with (an array
    and the transpose to view it through: a pickled array arrives C-contiguous)."""
    obj, (x, axes) = item
    if axes is not None:
        x = x.transpose(axes)
    if isinstance(obj, simak.DetessPlan):
        return obj, obj.run(x, offset=16), None
    if isinstance(obj, simak.Layout) and obj.dtype not in ("bf16", "i8"):
        return obj, simak.detess(x, obj), obj.offset_of([e - 1 for e in obj.shape], 3)
    if isinstance(obj, simak.Layout):
        t = (simak.casttess if obj.dtype == "bf16" else simak.quanttess)(
            *((x,) if obj.dtype == "bf16" else (x, 2.0)), axes=obj.axes, tile=obj.tile,
            channels=obj.channels)
        return obj, simak.untile(t, obj), obj.offset_of([e - 1 for e in obj.shape])
    return obj, obj.execute(x), None


def inputs():
    t = (1, 0, 2)
    return [(X, None), (X, t), (np.array(1.5, ml_dtypes.bfloat16), None), (X, None), (X, t),
            (X, None), (np.arange(21, dtype=np.float32).reshape(3, 7), None), (OFM, None),
            (OFM, None), (OFM, None), (OFM, None)]


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_round_trip(protocol):
    for plan, x in zip(plans(), inputs()):
        back = pickle.loads(pickle.dumps(plan, protocol=protocol))
        same(plan, back)
        _, want, off = run((plan, x))
        _, got, off2 = run((back, x))
        assert got.dtype == want.dtype and got.strides == want.strides
        assert np.array_equal(raw(got), raw(want)) and off == off2
        same(plan, copy.deepcopy(plan))


def test_a_spawn_pool_gives_the_in_process_bytes():
    items = list(zip(plans(), inputs()))
    want = [run(item) for item in items]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.map(run, items, chunksize=1)
    assert len(got) == len(want)
    for (p, g, o), (q, w, o2) in zip(got, want):
        same(q, p)  # the plan came back from the worker too
        assert g.dtype == w.dtype and g.shape == w.shape and o == o2
        assert np.array_equal(raw(g), raw(w))


def code_of(fn):
    with pytest.raises(simak.SimakError) as e:
        fn()
    assert f"(simak error code {oracle.code_text(e.value.code)})" in str(e.value)
    return e.value.code, str(e.value)


def test_a_tampered_pickle_is_a_simak_error():
    # Protocol 0 writes floats as text: the multiplier 0.75 becomes -0.75 in the bytes.
    plan = simak.QuantPlan((4,), "f32", 0.75)
    data = pickle.dumps(plan, protocol=0)
    assert data.count(b"F0.75\n") == 1
    assert pickle.loads(data).multiplier == 0.75
    code, message = code_of(lambda: pickle.loads(data.replace(b"F0.75\n", b"F-0.75\n")))
    assert code == 14 and "is not > 0" in message
    code, _ = code_of(lambda: pickle.loads(data.replace(b"F0.75\n", b"Fnan\n")))
    assert code == 13

    # Any argument list an attacker writes goes through the constructor.
    class Tampered:
        def __init__(self, cls, args):
            self.cls, self.args = cls, args

        def __reduce__(self):
            return self.cls, self.args

    def loads(obj, args):
        cls, good = obj.__reduce__()
        assert cls is type(obj)
        assert isinstance(pickle.loads(pickle.dumps(Tampered(cls, good))), cls)
        return lambda: pickle.loads(pickle.dumps(Tampered(cls, args)))

    q = simak.QuantPlan((8, 8), "f32", 0.5)
    c = simak.CastTessPlan((4, 6, 5), "f32", (None, 0, 1, 2), (1, 3, 4, 5))
    lay = simak.Layout((4, 6, 5), (None, 0, 1, 2), (1, 3, 4, 5))
    dp = simak.DetessPlan(OUT_LAYOUT, "detess_dequant", 0.5)
    cases = [
        (q, ([8, -8], "f32", 0.5, 0, "nearest-even", None, None, False), 0x608),
        (q, ([8, 8], "f64", 0.5, 0, "nearest-even", None, None, False), 0x601),
        (q, ([8, 8], "f32", 0.5, 300, "nearest-even", None, None, False), 15),
        (q, ([8, 8], "f32", 0.5, 0, "up", None, None, False), 0x601),
        (q, ([8, 8], "f32", 0.5, 0, "nearest-even", [4, 4], None, False), 28),  # overlap
        (q, ([8, 8], "f32", 0.5, 0, "nearest-even", [32, 4], [0, 1], False), 21),
        (q, ([8, 8], "f32", 0.5, 0, "nearest-even", [32, 4, 1], None, False), 0x205),
        (q, ([1] * 7, "f32", 0.5, 0, "nearest-even", None, None, False), 6),
        (c, ([4, 6, 5], "f32", [None, 0, 1, 7], [1, 3, 4, 5], "compact", None), 43),
        (c, ([4, 6, 5], "f32", [None, 0, 0, 2], [1, 3, 4, 5], "compact", None), 44),
        (c, ([4, 6, 5], "f32", [None, 0, 1, 2], [1, 3, 40, 5], "compact", None), 47),
        (c, ([4, 6, 5], "f32", [None, 0, 1, 2], [1, 3, 4, 5], "pad8", None), 0x601),
        (lay, ([4, 6, 5], [None, 0, 1, 2], [1, 3, 4, 5], "compact", "f32"), 0x601),
        (lay, ([4, 6, 5], [None, 0, 1, 2], [1, 0, 4, 5], "compact", "bf16"), 47),
        (lay, ([4, 6, 5], [None, -1, 1, 2], [1, 3, 4, 5], "compact", "bf16"), 43),
        (lay, ([2**62, 2**62, 5], [None, 0, 1, 2], [1, 3, 4, 5], "compact", "bf16"), 25),
        (lay, ([4, 6, 5], [None, 0, 1, 2], [1, 3, 4, 5], "compact", "bf16", 8), 0x601),
        (lay, ([4, 6, 5], [None, 0, 1, 2], [1, 3, 4, 5], "cblock16", "i64", 1), 0x601),
        (dp, (OUT_LAYOUT, "detess_dequant", 0.0, 0, "f32", None), 14),
        (dp, (OUT_LAYOUT, "detess_dequant", 0.5, 40000, "f32", None), 0x223),
        (dp, (OUT_LAYOUT, "detess_dequant", 0.5, 0, "i8", None), 0x601),
        (dp, (OUT_LAYOUT, "detess_dequant", None, None, None, None), 0x601),
        (dp, (OUT_LAYOUT, "dequant", 0.5, 0, "f32", None), 0x601),
        (dp, (OUT_LAYOUT, "detess_cast", None, None, None, None), 5),
        (dp, (OUT_LAYOUT, "detess_dequant", 0.5, 0, "f32", [4, 4, 4]), 29),
        (dp, (simak.Layout((4, 40), (None, None, 0, 1), (1, 1, 4, 20), "pad16", "i8"),
              "detess", None, None, None, None), 0x224),
    ]
    for obj, args, want in cases:
        code, message = code_of(loads(obj, args))
        assert code == want, (args, message)
