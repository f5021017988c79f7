"""dequantize against a binary64 oracle, the EV74 descriptors against the contract's
offsets, the GIL released during a long call, the package surface."""

import struct
import sys
import threading
import time

import numpy as np
import pytest

import oracle
import simak


def deq_oracle(q, multiplier, zero_point):
    # The quotient in binary64 rounded to binary32: correctly rounded (53 >= 2 * 24 + 2).
    m = np.float64(np.float32(multiplier))
    return ((q.astype(np.float64) - zero_point) / m).astype(np.float32)


@pytest.mark.parametrize("m_bits", [0x3F800000, 0x3EAAAAAB, 0x41CC0000, 0x00000001,
                                    0x00400000, 0x7F7FFFFF, 0x3E99999A, 0x4B7FFFFF])
def test_dequantize_every_value_every_zero_point(m_bits):
    q = np.arange(-128, 128, dtype=np.int8)
    m = np.array([m_bits], np.uint32).view(np.float32)[0]
    for zp in range(-128, 128, 5):
        with np.errstate(over="ignore"):
            want = deq_oracle(q, m, zp)
        got = simak.dequantize(q, m, zero_point=zp)
        assert got.dtype == np.float32
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (hex(m_bits), zp)


def test_dequantize_strided_and_round_trip():
    rng = np.random.default_rng(5)
    q = rng.integers(-128, 128, size=(6, 50, 3), dtype=np.int8)
    for view in (q, q.T, q[:, ::7], np.asfortranarray(q)[1:]):
        got = simak.dequantize(view, 0.25, zero_point=-3)
        assert got.shape == view.shape and got.flags.c_contiguous
        assert np.array_equal(got, deq_oracle(np.ascontiguousarray(view), 0.25, -3))
    assert simak.dequantize(np.int8(7), 2.0, 1).item() == 3.0
    # quantize then dequantize recovers values on the grid exactly.
    x = (np.arange(-100, 100, dtype=np.float32) + 3) / np.float32(8.0)
    back = simak.dequantize(simak.quantize(x, 8.0, zero_point=-3), 8.0, zero_point=-3)
    assert np.array_equal(back, x)


def le(fmt, b, off):
    return struct.unpack_from("<" + fmt, b, off)[0]


def test_quant_packet_fields_at_the_contract_offsets():
    plan = simak.QuantPlan((3, 5), "bf16", 0.5, zero_point=-7, rounding="toward-positive",
                           input_strides=(20, 4), output_strides=(1, 3))
    p = simak.ev74.quant.encode_relocatable(plan)
    assert isinstance(p, bytes) and len(p) == 224 == simak.ev74.quant.DESCRIPTOR_SIZE
    assert p[0:4] == b"SKQT" and le("H", p, 4) == 1 and le("H", p, 6) == 224
    assert le("I", p, 8) == 1  # BF16
    assert le("I", p, 12) == 2 and le("I", p, 16) == 0  # rank 2, neither port contiguous
    assert le("Q", p, 24) == 0 and le("Q", p, 32) == 0  # relocatable
    assert le("Q", p, 40) == 15
    assert le("Q", p, 48) == 2 + 20 * 2 + 4 * 4 and le("Q", p, 56) == 1 + 2 + 3 * 4
    assert [le("Q", p, 64 + 8 * i) for i in range(6)] == [3, 5, 0, 0, 0, 0]
    assert [le("Q", p, 112 + 8 * i) for i in range(6)] == [20, 4, 0, 0, 0, 0]
    assert [le("Q", p, 160 + 8 * i) for i in range(6)] == [1, 3, 0, 0, 0, 0]
    assert le("I", p, 208) == 0x3F000000 and le("i", p, 212) == -7 and le("I", p, 216) == 2
    fields = simak.ev74.decode(p)
    assert fields["magic"] == b"SKQT" and fields["zero_point"] == -7
    assert fields["multiplier"] == 0x3F000000 and fields["extents[1]"] == 5
    assert fields["input_strides[0]"] == 20 and fields["rounding"] == 2
    assert list(fields)[:3] == ["magic", "version", "byte_length"]
    assert simak.ev74.decode(bytearray(p)) == fields
    assert simak.ev74.decode(np.frombuffer(p, np.uint8)) == fields


def test_casttess_packet_and_decode_errors():
    plan = simak.CastTessPlan((3, 4, 3), "f32", (None, 0, 1, 2), (1, 2, 2, 3), "pad16")
    p = simak.ev74.casttess.encode_relocatable(plan)
    assert len(p) == 216 and p[0:4] == b"SKCT"
    assert le("I", p, 16) == 1  # PadTo16
    assert le("Q", p, 56) == 384  # the capacity of the SPEC §5 example
    assert struct.unpack_from("<4b", p, 160) == (-1, 0, 1, 2)
    assert struct.unpack_from("<4I", p, 168) == (1, 2, 2, 3)
    assert struct.unpack_from("<4I", p, 192) == (1, 2, 2, 1) and le("I", p, 208) == 16
    f = simak.ev74.decode(p)
    assert f["axes[d]"] == -1 and f["axes[c]"] == 2 and f["tile_align"] == 16
    bad = bytearray(p)
    bad[164] = 1  # reserved word
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.decode(bad)
    assert e.value.code == 40
    assert simak.ev74.fields(bad)["reserved_164"] == 1
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.decode(p[:-1])
    assert e.value.code == 1
    q = bytearray(simak.ev74.quant.encode_relocatable(simak.QuantPlan((4,), "f32", 2.0)))
    q[208:212] = struct.pack("<I", 0xBF800000)  # multiplier -1
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.decode(q)
    assert e.value.code == 14
    # A bound packet is held to the address rules too: input slot set, output slot 0.
    q = bytearray(simak.ev74.quant.encode_relocatable(simak.QuantPlan((4,), "f32", 2.0)))
    q[24:32] = struct.pack("<Q", 0x1000)
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.decode(q)
    assert e.value.code == 39


def test_ev74_detess_descriptors_encode_and_decode():
    """The Detess-family descriptors (docs/contract.md §7), checked field by field against
    the table: an INT16 [W=3, C=17] head in CBlock16, tiles of 2 pixels by 16 channels."""
    lay = simak.Layout((3, 17), (None, None, 0, 1), (1, 1, 2, 16), "cblock16", "i16")
    plan = simak.DetessPlan(lay, op="detess_dequant", multiplier=0.5, zero_point=-3)
    p = simak.ev74.detess.encode_relocatable(plan)
    assert isinstance(p, bytes) and len(p) == simak.ev74.detess.DESCRIPTOR_SIZE == 224
    assert p[0:4] == b"SKDQ" and le("H", p, 6) == 224
    assert le("I", p, 8) == 3  # the output: FP32
    assert le("I", p, 16) == 3  # align_c16 | cblock
    assert le("Q", p, 24) == 0 and le("Q", p, 32) == 0  # relocatable
    # 3 pixels in tiles of 2, 17 channels stored as 32, 2 bytes: 2·32·2 + 32·2 = 192.
    assert le("Q", p, 48) == 192 == lay.capacity and le("Q", p, 56) == 51 * 4
    assert struct.unpack_from("<4b", p, 160) == (-1, -1, 0, 1)
    assert le("I", p, 164) == 6  # the input: INT16
    assert le("I", p, 208) == 16
    assert struct.unpack_from("<Ii", p, 216) == (0x3F000000, -3)
    f = simak.ev74.decode(p)
    assert f["input_dtype"] == 6 and f["zero_point"] == -3 and f["magic"] == b"SKDQ"
    # Detess and DetessCast: their own magic words, the words at 216 and 220 reserved.
    bf = simak.Layout((3, 17), (None, None, 0, 1), (1, 1, 2, 16), "pad16", "bf16")
    for op, magic, out in [("detess", b"SKDT", 1), ("detess_cast", b"SKDC", 3)]:
        q = simak.ev74.detess.encode_relocatable(simak.DetessPlan(bf, op=op))
        assert q[0:4] == magic and le("I", q, 8) == out and q[216:224] == bytes(8)
        assert simak.ev74.decode(q)["reserved_216"] == 0
    bad = bytearray(p)
    bad[220:224] = struct.pack("<i", -40000)  # outside INT16's range
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.decode(bad)
    assert e.value.code == 57
    # Binding: the tiled input needs 16 bytes at tile alignment 16; the packet must be the
    # plan's own encoding; the relocatable packet stays as it was.
    b = simak.ev74.detess.bind(plan, p, (0x1000, 192), (0x2000, 204))
    assert le("Q", b, 24) == 0x1000 and le("Q", b, 32) == 0x2000 and b[40:] == p[40:]
    assert simak.ev74.decode(b)["input_address"] == 0x1000
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.detess.bind(plan, p, (0x1008, 192), (0x2000, 204))
    assert e.value.code == 36
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.detess.bind(plan, p, (0x1000, 191), (0x2000, 204))
    assert e.value.code == 0x311
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.detess.bind(plan, bytes(bad), (0x1000, 192), (0x2000, 204))
    assert e.value.code == 0x310
    # Quant and CastTess bind the same way.
    qp = simak.QuantPlan((4,), "f32", 2.0)
    q = simak.ev74.quant.bind(qp, simak.ev74.quant.encode_relocatable(qp), (0x1000, 16), (0x2000, 4))
    assert le("Q", q, 24) == 0x1000 and simak.ev74.decode(q)["output_address"] == 0x2000
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.quant.bind(qp, simak.ev74.quant.encode_relocatable(qp), (0x1000, 16), (0x1008, 4))
    assert e.value.code == 37


def test_ev74_preproc_descriptor_encodes_binds_and_decodes():
    """The Preproc v1 descriptor (docs/contract.md §7), field by field against the table: a
    4×6 NV12 frame with a border, BGR, per-channel mean and std, to INT8 [5, 8, 3]."""
    plan = simak.PreprocPlan(
        4, 6, format="nv12", mean=(0.5, 0.25, 0.125), std=(0.5, 1.0, 2.0), bgr=True,
        border=(1, 0, 0, 2), pad_value=(114, 115, 116), to="i8", multiplier=2.0**-7,
        zero_point=-3,
    )
    p = simak.ev74.preproc.encode_relocatable(plan)
    assert isinstance(p, bytes) and len(p) == simak.ev74.preproc.DESCRIPTOR_SIZE == 368
    assert p[0:4] == b"SKPP" and le("H", p, 6) == 368
    assert le("I", p, 8) == 5 and le("I", p, 12) == 3  # INT8, rank 3
    assert le("I", p, 16) == 1  # bgr
    assert le("Q", p, 24) == 0 and le("Q", p, 32) == 0  # relocatable
    # 24 luma bytes + 12 chroma bytes; 5·8·3 INT8 outputs.
    assert le("Q", p, 40) == 120 and le("Q", p, 48) == 36 and le("Q", p, 56) == 120
    assert struct.unpack_from("<3Q", p, 64) == (5, 8, 3)
    assert struct.unpack_from("<3Q", p, 112) == (24, 3, 1)
    assert le("I", p, 164) == 6 and le("I", p, 212) == 2  # NV12, INT8 strided
    assert struct.unpack_from("<2Q", p, 216) == (4, 6)
    assert struct.unpack_from("<3Q", p, 232) == (0, 24, 0)
    assert struct.unpack_from("<3Q", p, 256) == (6, 6, 0)
    assert struct.unpack_from("<4Q", p, 288) == (1, 0, 0, 2)
    assert p[320:324] == bytes([114, 115, 116, 0])
    assert struct.unpack_from("<f3f3f", p, 324) == (255.0, 0.5, 0.25, 0.125, 0.5, 1.0, 2.0)
    assert struct.unpack_from("<IiI", p, 352) == (0x3C000000, -3, 1)
    f = simak.ev74.decode(p)
    assert f["magic"] == b"SKPP" and f["pixel_format"] == 6 and f["border_right"] == 2
    # A frame binds at any byte; the packet must be the plan's own encoding.
    b = simak.ev74.preproc.bind(plan, p, (0x1003, 36), (0x2001, 120))
    assert le("Q", b, 24) == 0x1003 and le("Q", b, 32) == 0x2001 and b[40:] == p[40:]
    assert simak.ev74.decode(b)["output_address"] == 0x2001
    bad = bytearray(p)
    bad[356:360] = struct.pack("<i", 128)  # outside INT8's zero points
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.decode(bad)
    assert e.value.code == 15
    bad = bytearray(p)
    bad[216:224] = struct.pack("<Q", 6)  # a 6-row frame under a 5-row output
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.decode(bad)
    assert e.value.code == 89
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.preproc.bind(plan, bytes(bad), (0x1000, 36), (0x2000, 120))
    assert e.value.code == 0x310
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.preproc.bind(plan, p, (0x1000, 35), (0x2000, 120))
    assert e.value.code == 0x311
    # A tiled output binds at 16 bytes.
    tess = simak.PreprocPlan(4, 6, format="rgb", to="casttess", tile=(1, 4, 6, 3))
    t = simak.ev74.preproc.encode_relocatable(tess)
    assert le("I", t, 8) == 1 and le("I", t, 212) == 4 and le("I", t, 208) == 16
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.preproc.bind(tess, t, (0x1000, 72), (0x2008, le("Q", t, 56)))
    assert e.value.code == 50


def test_span_not_representable_on_the_ev74():
    plan = simak.QuantPlan((2**31,), "f32", 1.0)  # 8 GiB of input: fine for the A65
    with pytest.raises(simak.SimakError) as e:
        simak.ev74.quant.encode_relocatable(plan)
    assert e.value.code == 0x301


def test_gil_is_released_during_a_long_call():
    stop = threading.Event()
    ticks = []

    def tick():
        while not stop.is_set():
            time.sleep(0.001)  # needs the GIL back after each sleep
            ticks.append(time.perf_counter())

    n = 1 << 24
    x = np.linspace(-100, 100, n, dtype=np.float32)
    out = np.empty(n, np.int8)
    t = threading.Thread(target=tick)
    t.start()
    try:
        for _ in range(6):
            t0 = time.perf_counter()
            simak.quantize(x, 0.5, out=out, exact=True)
            t1 = time.perf_counter()
            if t1 - t0 >= 0.06:
                break
            x = np.concatenate([x, x])
            out = np.empty(x.size, np.int8)
    finally:
        stop.set()
        t.join()
    assert t1 - t0 >= 0.06, "the call was too short to observe"
    inside = [s for s in ticks if t0 + 0.015 < s < t1 - 0.015]
    assert len(inside) >= 3, f"{len(inside)} ticks of the other thread during a {t1 - t0:.3f} s call"


def test_package_surface():
    assert simak.__version__ == "0.1.0"
    assert simak.ROUNDING_MODES[0] == "nearest-even" and simak.CHANNELS == ("compact", "pad16", "cblock16")
    assert simak.TILED_DTYPES == ("bf16", "i8", "i16", "i32")
    for name in simak.__all__:
        assert hasattr(simak, name), name
    for f in (simak.quantize, simak.casttess, simak.quanttess, simak.untile, simak.dequantize,
              simak.detess, simak.detess_cast, simak.detess_dequant):
        assert f.__doc__ and "Raises" in f.__doc__, f
    assert "SimakError" in repr(simak.SimakError)
    import importlib.resources as res

    files = res.files("simak")
    assert files.joinpath("py.typed").is_file() and files.joinpath("__init__.pyi").is_file()
    assert "QuantPlan(" in repr(simak.QuantPlan((2,), "f32", 1.0))
    lay = simak.Layout((2, 16), (None, None, 0, 1), (1, 1, 2, 16), "cblock16", "i8")
    assert "DetessPlan(" in repr(simak.DetessPlan(lay, "detess_dequant", 0.5))


def test_the_example_script_runs(tmp_path):
    import subprocess
    import sys

    script = oracle.REPO / "bindings" / "python" / "examples" / "quantize_and_tile.py"
    done = subprocess.run([sys.executable, str(script), "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "untile(casttess(x)) == x rounded to bfloat16: True" in done.stdout
    assert (tmp_path / "minilm-int8.safetensors").stat().st_size > 300_000
    assert (tmp_path / "chelsea-bf16-tiled.bin").stat().st_size == simak.Layout(
        (300, 451, 3), (None, 0, 1, 2), (1, 16, 64, 3)).capacity


@pytest.mark.parametrize("readme", ["README.md", "bindings/python/README.md"])
def test_readme_python_blocks_run(readme, monkeypatch):
    import re

    text = (oracle.REPO / readme).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, f"{readme} has no python block"
    monkeypatch.chdir(oracle.REPO)  # the blocks name files relative to the repository root
    for block in blocks:
        exec(compile(block, readme, "exec"), {})


def test_type_stubs_match_the_runtime(tmp_path):
    pytest.importorskip("mypy")
    import subprocess
    import sys

    # mypy's stubtest: every stub name, signature and default against the installed module.
    # Run in tmp_path: mypy's cache goes there, not into the repository.
    done = subprocess.run([sys.executable, "-m", "mypy.stubtest", "simak"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def _fresh_python(code):
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_ml_dtypes_is_imported_with_simak():
    # The first bfloat16 call must not import ml_dtypes (about a second) holding the GIL:
    # `import simak` does it, in a fresh interpreter.
    out = _fresh_python(
        "import sys\n"
        "assert 'ml_dtypes' not in sys.modules\n"
        "import simak\n"
        "print('ml_dtypes' in sys.modules)\n"
    )
    assert out.strip() == "True"


def test_simak_imports_without_ml_dtypes():
    # Without ml_dtypes: FP32 and FP16 work, a bfloat16 result says what is missing.
    out = _fresh_python(
        "import sys\n"
        "sys.modules['ml_dtypes'] = None  # import ml_dtypes raises ImportError\n"
        "import numpy as np, simak\n"
        "x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)\n"
        "assert simak.quantize(x, 1.0).tolist() == x.astype(np.int8).tolist()\n"
        "layout = simak.Layout(x.shape, (None, 0, 1, 2), (1, 2, 2, 3))\n"
        "t = simak.casttess(x, tile=(1, 2, 2, 3))\n"
        "try:\n"
        "    simak.untile(t, layout)\n"
        "except ValueError as e:\n"
        "    print(e)\n"
    )
    assert "ml_dtypes is not importable" in out
