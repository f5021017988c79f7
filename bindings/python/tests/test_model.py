"""simak.Model (SPEC §14, issue 30): the repository's synthetic manifests
(tests/data/mpk) read into the stages their hand-written sidecars list; preprocess and
postprocess equal the single ops called with parameters written here by hand, and the
classifier's output SPEC §12.2's formula in NumPy; every error fixture raises SimakError
with its code, naming its plugin."""

import json

import numpy as np
import pytest

import simak
import oracle

MPK = oracle.DATA / "mpk"


def model(name):
    return simak.Model.from_mpk(MPK / f"{name}.mpk.json")


@pytest.mark.parametrize("name", ["yolo", "bf16", "classifier"])
def test_stages_match_the_sidecar(name):
    m = model(name)
    want = json.loads((MPK / f"{name}.expected.json").read_text())
    assert (m.batch, m.ifm_size, m.ofm_size) == (want["batch"], want["ifm_size"], want["ofm_size"])
    for stages, wanted in [(m.inputs, want["inputs"]), (m.outputs, want["outputs"])]:
        assert len(stages) == len(wanted)
        for s, w in zip(stages, wanted):
            assert s.name == w["name"]
            assert s.op == w["op"]
            assert s.plugins == w["plugins"]
            assert s.shape == tuple(w["shape"])
            assert s.dtype == np.dtype(w["dtype"])
            assert (s.size, s.offset) == (w["size"], w["offset"])
            assert s.backends == tuple(w["backends"])


def test_from_mpk_json_equals_from_mpk():
    text = (MPK / "yolo.mpk.json").read_text()
    a, b = simak.Model.from_mpk_json(text), model("yolo")
    assert [s.shape for s in a.outputs] == [s.shape for s in b.outputs]
    assert a.ofm_size == b.ofm_size


def test_yolo_equals_single_op_calls():
    m = model("yolo")
    rng = np.random.default_rng(30)
    frame = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    ifm = m.preprocess(frame)
    assert ifm.dtype == np.uint8 and ifm.shape == (6_553_600,)
    want = simak.preprocess(frame[None], format="rgb", border=(80, 80, 0, 0), pad_value=114,
                            to="quanttess", multiplier=127.0, zero_point=-128,
                            tile=(1, 32, 32, 3), channels="pad16")
    assert np.array_equal(ifm, want)
    # By name, with the batch axis, threaded, into out=.
    out = np.empty(6_553_600, np.uint8)
    assert m.preprocess(frame[None], input="image", out=out, threads=2) is out
    assert np.array_equal(out, want)

    ofm = rng.integers(0, 256, 2_150_400, dtype=np.uint8)
    outs = m.postprocess(ofm, threads=2)
    assert list(outs) == ["p3", "p4", "p5"]
    heads = [(0, (80, 80, 255), (16, 16, 255), 21.5, -3),
             (1_638_400, (40, 40, 255), (8, 8, 255), 33.25, 0),
             (2_048_000, (20, 20, 255), (4, 4, 255), 40.0, 7)]
    for (offset, shape, tile, scale, zp), got in zip(heads, outs.values()):
        layout = simak.Layout((1,) + shape, (None, 1, 2, 3), (1,) + tile, channels="cblock16",
                              dtype="i8")
        want = simak.detess_dequant(ofm, layout, scale, zero_point=zp, offset=offset)
        assert got.shape == (1,) + shape and got.dtype == np.float32
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    # bytes give the same tensors.
    again = m.postprocess(ofm.tobytes())
    assert all(np.array_equal(again[k], outs[k]) for k in outs)


def test_classifier_equals_numpy():
    m = model("classifier")
    rng = np.random.default_rng(32)
    ofm = rng.integers(0, 256, 20, dtype=np.uint8)
    got = m.postprocess(ofm)["probs"]
    want = ((ofm.view(np.int8).astype(np.float32) + np.float32(5)) / np.float32(12.75))
    assert np.array_equal(got.ravel().view(np.uint32), want.view(np.uint32))
    x = (rng.integers(-2000, 2000, (2, 8, 8, 3)) / 100).astype(np.float32)
    want = simak.quantize(x, 0.5, zero_point=3)
    assert np.array_equal(m.preprocess(x).view(np.int8), want.ravel())


def test_every_error_fixture_raises_its_code():
    cases = json.loads((MPK / "errors" / "expected.json").read_text())
    for name, w in cases.items():
        with pytest.raises(simak.SimakError) as e:
            simak.Model.from_mpk(MPK / "errors" / f"{name}.mpk.json")
        if w["code"] is not None:
            assert e.value.code == w["code"], (name, str(e.value))
        if w["plugin"] is not None:
            assert w["plugin"] in str(e.value), name


def test_bad_calls_raise_and_write_nothing():
    m = model("yolo")
    frame = np.zeros((480, 640, 3), np.uint8)
    with pytest.raises(simak.SimakError) as e:
        m.preprocess(frame.astype(np.float32))
    assert e.value.code == 5
    with pytest.raises(simak.SimakError):
        m.preprocess(frame[:, :320])
    with pytest.raises(simak.SimakError) as e:
        m.preprocess(frame, input=1)
    assert e.value.code == 0x70E
    out = np.full(6_553_599, 7, np.uint8)
    with pytest.raises(simak.SimakError) as e:
        m.preprocess(frame, out=out)
    assert e.value.code == 0x70D and (out == 7).all()
    with pytest.raises(simak.SimakError) as e:
        m.postprocess(np.zeros(100, np.uint8))
    assert e.value.code == 0x70D


def test_arguments_are_checked_with_clear_errors():
    c = model("classifier")
    x = np.zeros((2, 8, 8, 3), np.float32)
    # input=: an int or a str; a bool, a float or bytes is a TypeError.
    assert np.array_equal(c.preprocess(x, input="pixels"), c.preprocess(x, input=0))
    for bad in [True, 0.0, b"pixels"]:
        with pytest.raises(TypeError, match="input= takes"):
            c.preprocess(x, input=bad)
    with pytest.raises(simak.SimakError) as e:
        c.preprocess(x, input=2**70)
    assert e.value.code == 0x70E
    # frame: an array of the stage's shape (0x70d otherwise); not a list or None.
    for bad in [x.tolist(), None, b"\0" * 1536]:
        with pytest.raises(TypeError, match="frame must be a NumPy array"):
            c.preprocess(bad)
    with pytest.raises(simak.SimakError) as e:
        c.preprocess(np.zeros((2, 8, 8, 4), np.float32))
    assert e.value.code == 0x70D
    # out= sharing memory with the frame: 0x407, not "read-only".
    buf = np.zeros(1536, np.uint8)
    with pytest.raises(simak.SimakError) as e:
        c.preprocess(buf.view(np.float32).reshape(2, 8, 8, 3), out=buf[:384])
    assert e.value.code == 0x407 and "overlaps" in str(e.value)
    # A huge argument's repr is cut in messages.
    y = model("yolo")
    with pytest.raises(simak.SimakError) as e:
        y.preprocess(np.zeros((480, 640, 3), np.uint8), out=bytearray(6_553_600))
    assert e.value.code == 5 and len(str(e.value)) < 1000
    # ofm: uint8 or int8 bytes only, and a non-contiguous view is named as `ofm`.
    with pytest.raises(simak.SimakError) as e:
        c.postprocess(np.zeros(20, np.bool_))
    assert e.value.code == 5
    with pytest.raises(simak.SimakError) as e:
        c.postprocess(memoryview(np.zeros(40, np.uint8))[::2])
    assert "ofm is a memoryview" in str(e.value)
