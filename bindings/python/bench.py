"""Benchmark of the simak Python package against its peers, in one process.

Measures, with the median over repetitions after warm-up, the candidates of each row
interleaved (every repetition round times each once, so a load change on a shared machine
hits them alike):

- Quant at 64 Ki, 1 Mi and 16 Mi elements for FP32, BF16 and FP16 inputs (the peers'
  workload of ``simak bench quant``: N(0, 100) with an exact tie every 16th element,
  multiplier 0.5, zero point 3, nearest-even):
  ``simak.quantize(x, m)`` (allocates its output), ``QuantPlan.execute(x, out=y)``, PyTorch
  ``torch.quantize_per_tensor`` (scale 2 = 1 / m), ONNX Runtime ``QuantizeLinear``
  (io-binding, 1 intra-op thread) and NumPy (``np.clip(np.rint(x * m) + zp, ...)``);
- the per-call overhead at 16 elements;
- the Rust ``simak bench quant`` rate at 1 Mi in the same run (``--simak-cli``);
- ``simak.casttess`` of a 1080 x 1920 x 3 frame against PyTorch's conversion to bfloat16;
- the output side (``--only detess``): ``simak.detess_dequant`` / ``detess_cast`` and
  ``DetessPlan.run(out=)`` on the MLA's output layouts of issue 25 (a YOLO-style three-head
  INT8 CBlock16 OFM, an SSD head 19 x 19 x 273 CBlock16 in one tile, a BF16 60 x 80 x 256
  PadTo16 head in tiles of (1, 60, 80, 16), a 1 x 1000 INT8 classifier head, Compact,
  tile alignment 1) against the NumPy pipeline users write (reshape / transpose /
  ``astype`` / subtract / divide) and the same in PyTorch, all on one thread, with a
  same-traffic NumPy reference (a ``uint8`` -> ``float32`` cast of the dense codes: the
  same bytes read and written). Every peer's result is checked bit for bit against simak's;
- camera frames (``--only preproc``, issue 26): ``PreprocPlan.execute(out=)`` and
  ``simak.preprocess`` on a 1080 x 1920 RGB8 or NV12 frame (ImageNet mean and std) to INT8
  ``[1080, 1920, 3]`` strided, QuantTess and CastTess (tile (1, 16, 64, 3), compact),
  against, all on one thread: a same-traffic NumPy kernel (the frame's bytes read, each
  XORed with 0x80 as in ``simak bench preproc``, the output's written) and a plain copy of
  the same bytes (``np.copyto``, the faster bound), the OpenCV pipeline (``cv2.cvtColor`` for NV12, NumPy
  ``(x / 255 - mean) / std`` in float32, ``rint``/add/``clip``/``astype(int8)`` for INT8,
  simak's ``quanttess``/``casttess`` on the float32 result for the tiled outputs) and the
  PyTorch equivalent (``torch.from_numpy``, float division, normalize, ``round``,
  ``clamp``). The pipelines' results are checked byte for byte against simak's;
- a whole model (``--only model``, issue 30): the YOLO fixture (``tests/data/mpk``) with a
  640 x 640 RGB frame: ``Model.preprocess(out=)`` against the same op called alone
  (``PreprocPlan.execute(out=)``) and the NumPy script a user writes (normalize, quantize,
  tile PadTo16 by reshape / transpose); ``Model.postprocess`` of its three-head CBlock16
  OFM against three ``DetessPlan.run`` calls and the NumPy script (untile, cast, subtract,
  divide). Results are checked byte for byte against simak's.

Peers are optional imports: a missing one is reported and skipped. Usage:

    python bindings/python/bench.py [--reps N] [--quick] [--simak-cli target/release/simak]
        [--markdown FILE] [--only quant,overhead,casttess,detess,preproc,model]

Run it on an idle machine: the figures are wall-clock medians.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

import simak

REPO = Path(__file__).resolve().parents[2]
M = 0.5
ZP = 3


def workload(n: int, dtype: str) -> np.ndarray:
    """N(0, 100) with an exact tie (x * 0.5 = k + 0.5) every 16th element."""
    rng = np.random.default_rng(12345)
    x = rng.normal(0.0, 100.0, n).astype(np.float32)
    ties = (np.arange(n // 16) % 200 - 100) * 2 + 1
    x[::16][: ties.size] = ties.astype(np.float32)
    if dtype == "bf16":
        return x.astype(ml_dtypes.bfloat16)
    if dtype == "f16":
        return x.astype(np.float16)
    return x


# The clock: wall time (time.perf_counter), or with --clock thread the calling thread's CPU
# time (time.thread_time), which a machine shared with other work disturbs less. Every
# kernel measured here, simak's and the peers', runs on the calling thread.
CLOCK = time.perf_counter


def peers_available() -> dict:
    found = {}
    try:
        import warnings

        import torch

        torch.set_num_threads(1)
        # quantize_per_tensor is deprecated in recent PyTorch but still the reference API.
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
        found["torch"] = torch
    except Exception as e:  # an optional peer
        print(f"# torch: not available ({type(e).__name__}: {e})", file=sys.stderr)
    try:
        import onnx
        import onnxruntime as ort

        found["ort"] = (ort, onnx)
    except Exception as e:
        print(f"# onnxruntime: not available ({type(e).__name__}: {e})", file=sys.stderr)
    return found


def ort_session(ort, onnx, n: int, elem_type: int):
    """A QuantizeLinear model over a 1-D input of n elements (scale 2 = 1 / m, zp 3), on one
    intra-op thread. BF16 input goes through Cast(to=FLOAT) first: ORT's CPU QuantizeLinear
    takes float and float16 only."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", elem_type, [n])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, [n])
    scale = helper.make_tensor("scale", TensorProto.FLOAT if elem_type == TensorProto.BFLOAT16
                               else elem_type, [], [2.0])
    zp = helper.make_tensor("zp", TensorProto.INT8, [], [ZP])
    if elem_type == TensorProto.BFLOAT16:
        nodes = [helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
                 helper.make_node("QuantizeLinear", ["xf", "scale", "zp"], ["y"])]
    else:
        nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["y"])]
    graph = helper.make_graph(nodes, "q", [x], [y], [scale, zp])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def measure(fns: dict, reps: int, external: dict | None = None, min_seconds: float = 0.02) -> dict:
    """Median seconds per call of each callable, measured interleaved: every repetition
    round times each callable once (enough calls to last min_seconds), so that a load change
    on a shared machine hits every candidate alike. `external` callables return their own
    seconds per call (the Rust benchmark in a subprocess), one sample per round."""
    inner = {}
    for name, fn in fns.items():
        fn()
        t0 = time.perf_counter()
        fn()
        inner[name] = max(1, int(min_seconds / max(time.perf_counter() - t0, 1e-9)))
    samples = {name: [] for name in list(fns) + list(external or {})}
    for _ in range(reps):
        for name, fn in fns.items():
            k = inner[name]
            t0 = CLOCK()
            for _ in range(k):
                fn()
            samples[name].append((CLOCK() - t0) / k)
        for name, fn in (external or {}).items():
            samples[name].append(fn())
    return {name: statistics.median(v) for name, v in samples.items()}


def quant_rows(n: int, dtype: str, reps: int, peers: dict, cli: Path | None) -> dict:
    x = workload(n, dtype)
    y = np.empty(n, np.int8)
    plan = simak.QuantPlan(x.shape, dtype, M, zero_point=ZP)
    fns = {
        "simak.quantize": lambda: simak.quantize(x, M, zero_point=ZP),
        "plan.execute(out=)": lambda: plan.execute(x, out=y),
    }
    plan.execute(x, out=y)
    # NumPy on the FP32 value of x: the same bytes for this workload (checked for FP32).
    x32 = x.astype(np.float32)
    if dtype == "f32":
        numpy_q = lambda: np.clip(np.rint(x32 * np.float32(M)) + ZP, -128, 127).astype(np.int8)  # noqa: E731
        assert np.array_equal(numpy_q(), y), "simak and the NumPy formula differ"
    else:
        numpy_q = lambda: np.clip(np.rint(x.astype(np.float32) * np.float32(M)) + ZP, -128, 127).astype(np.int8)  # noqa: E731
    fns["numpy"] = numpy_q
    if "torch" in peers:
        torch = peers["torch"]
        tdt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype]
        xt = torch.from_numpy(x32).to(tdt)
        try:
            torch.quantize_per_tensor(xt, 2.0, ZP, torch.qint8)
            fns["torch.quantize_per_tensor"] = lambda: torch.quantize_per_tensor(xt, 2.0, ZP, torch.qint8)
        except Exception:
            # quantize_per_tensor takes float32 only: the conversion is part of the work.
            fns["torch.quantize_per_tensor"] = lambda: torch.quantize_per_tensor(xt.float(), 2.0, ZP, torch.qint8)
    if "ort" in peers:
        ort, onnx = peers["ort"]
        from onnx import TensorProto

        et = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}[dtype]
        try:
            sess = ort_session(ort, onnx, n, et)
            yo = np.empty(n, np.int8)
            binding = sess.io_binding()
            binding.bind_input("x", "cpu", 0, {"f32": np.float32, "f16": np.float16}.get(dtype, et),
                               [n], x.ctypes.data)
            binding.bind_output("y", "cpu", 0, np.int8, [n], yo.ctypes.data)
            sess.run_with_iobinding(binding)
            # x / 2 and x * 0.5 are the same real number: the bytes must agree.
            assert np.array_equal(yo, y), "ONNX Runtime bytes differ from simak's"
            fns["onnxruntime QuantizeLinear"] = lambda: sess.run_with_iobinding(binding)
        except Exception as e:
            print(f"# onnxruntime {dtype} {n}: skipped ({e})", file=sys.stderr)
    external = {}
    if cli is not None and cli.is_file() and n == 1 << 20:
        external["rust"] = lambda: rust_rate(cli, n, dtype)
    return measure(fns, reps, external)


def rust_rate(cli: Path, n: int, dtype: str) -> float | None:
    """Seconds per call of the Rust `simak bench quant` (auto route, 1 thread)."""
    if not cli.is_file():
        return None
    out = subprocess.run(
        [str(cli), "bench", "quant", "--dtype", dtype, "--elements", str(n), "--reps", "5", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    summary = json.loads(out)
    for f in summary["figures"]:
        if f["name"].startswith("quant"):
            return f["median_ns_per_call"] * 1e-9
    return summary["figures"][0]["median_ns_per_call"] * 1e-9


def overhead(reps: int) -> dict:
    x = workload(16, "f32")
    y = np.empty(16, np.int8)
    z = np.empty(16, np.float32)
    plan = simak.QuantPlan(x.shape, "f32", M, zero_point=ZP)
    return measure({
        "plan.execute(x, out=y)": lambda: plan.execute(x, out=y),
        "plan.execute(x, y)": lambda: plan.execute(x, y),
        "simak.quantize(x, m)": lambda: simak.quantize(x, M),
        "simak.quantize(x, m, zero_point=3)": lambda: simak.quantize(x, M, zero_point=ZP),
        "np.empty(16, np.int8) (reference)": lambda: np.empty(16, np.int8),
        "np.add(x, x, out=z) (reference)": lambda: np.add(x, x, out=z),
    }, reps, min_seconds=0.05)


def casttess_rows(reps: int, peers: dict) -> dict:
    rows = {}
    rng = np.random.default_rng(7)
    frame = rng.random((1080, 1920, 3), dtype=np.float32)
    layout = simak.Layout(frame.shape, (None, 0, 1, 2), (1, 16, 64, 3))
    out = np.empty(layout.capacity + 16, np.uint8)
    off = (-out.ctypes.data) % 16
    out = out[off : off + layout.capacity]
    for dtype, x in (("f32", frame), ("f16", frame.astype(np.float16)),
                     ("bf16", frame.astype(ml_dtypes.bfloat16))):
        plan = simak.CastTessPlan(x.shape, dtype, (None, 0, 1, 2), (1, 16, 64, 3))
        fns = {"simak.casttess": lambda: simak.casttess(x),
               "CastTessPlan.execute(out=)": lambda: plan.execute(x, out=out)}
        if "torch" in peers and dtype != "bf16":
            torch = peers["torch"]
            xt = torch.from_numpy(x)
            dst = torch.empty(x.shape, dtype=torch.bfloat16)
            fns["torch dst.copy_(x) to bfloat16"] = lambda: dst.copy_(xt)
        if dtype == "bf16":
            src = x.view(np.uint16)
            dst16 = np.empty_like(src)
            fns["np.copyto (memcpy, reference)"] = lambda: np.copyto(dst16, src)
        rows[dtype] = measure(fns, reps)
    return rows


# The output side (issue 25). Dequantization parameters of the INT8 workloads: the
# multiplier (the OFM's values are (q - zp) / m) and zero point.
DQ_M = np.float32(0.0625)
DQ_ZP = -3


def cblock16_numpy(seg: np.ndarray, h: int, w: int, c: int) -> np.ndarray:
    """A user's NumPy pipeline for one INT8 CBlock16 head in one tile of (1, H, W, C):
    the blocks [C/16][H][W][16] to HWC, cast, subtract, divide."""
    nb = -(-c // 16)
    q = seg.view(np.int8).reshape(nb, h, w, 16).transpose(1, 2, 0, 3).reshape(h, w, nb * 16)
    return (q[..., :c].astype(np.float32) - np.float32(DQ_ZP)) / DQ_M


def cblock16_torch(torch, seg, h: int, w: int, c: int):
    nb = -(-c // 16)
    q = seg.view(torch.int8).view(nb, h, w, 16).permute(1, 2, 0, 3).reshape(h, w, nb * 16)
    return (q[..., :c].to(torch.float32) - DQ_ZP) / float(DQ_M)


def detess_rows(reps: int, peers: dict) -> list:
    """[(workload, elements, {candidate: seconds per call})]."""
    torch = peers.get("torch")
    rng = np.random.default_rng(25)
    rows = []

    # YOLO-style: three INT8 heads in one OFM, CBlock16, tiles (1, H, W, 16).
    sizes = [(80, 80, 144), (40, 40, 144), (20, 20, 144)]
    layouts = [simak.Layout(s, (None, 0, 1, 2), (1, s[0], s[1], 16), "cblock16", "i8")
               for s in sizes]
    plans = [simak.DetessPlan(lay, "detess_dequant", DQ_M, zero_point=DQ_ZP) for lay in layouts]
    offsets = np.cumsum([0] + [lay.capacity for lay in layouts[:-1]]).tolist()
    ofm = rng.integers(0, 256, sum(lay.capacity for lay in layouts), dtype=np.uint8)
    outs = [np.empty(s, np.float32) for s in sizes]
    segs = [ofm[o:o + lay.capacity] for o, lay in zip(offsets, layouts)]
    n = sum(int(np.prod(s)) for s in sizes)

    def yolo_plan():
        for p, o, y in zip(plans, offsets, outs):
            p.run(ofm, o, y)

    def yolo_fn():
        return [simak.detess_dequant(ofm, lay, DQ_M, zero_point=DQ_ZP, offset=o)
                for lay, o in zip(layouts, offsets)]

    def yolo_numpy():
        return [cblock16_numpy(sg, *s) for sg, s in zip(segs, sizes)]

    dense = [rng.integers(0, 256, int(np.prod(s)), dtype=np.uint8) for s in sizes]
    dense_out = [np.empty(d.size, np.float32) for d in dense]

    def same_traffic():
        for d, y in zip(dense, dense_out):
            np.copyto(y, d, casting="unsafe")

    yolo_plan()
    for got, want in zip(outs, yolo_numpy()):
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), "NumPy differs"
    fns = {"plan.run(out=)": yolo_plan, "simak function": yolo_fn, "numpy": yolo_numpy,
           "same-traffic": same_traffic}
    if torch is not None:
        tsegs = [torch.from_numpy(sg) for sg in segs]

        def yolo_torch():
            return [cblock16_torch(torch, t, *s) for t, s in zip(tsegs, sizes)]

        for got, want in zip(outs, yolo_torch()):
            assert np.array_equal(got.view(np.uint32), want.numpy().view(np.uint32)), "torch differs"
        fns["torch"] = yolo_torch
    rows.append(("YOLO 3 heads 80²/40²/20² × 144, INT8 CBlock16 → FP32", n, measure(fns, reps)))

    # SSD head: 19 x 19 x 273, CBlock16, one tile.
    shape = (19, 19, 273)
    lay = simak.Layout(shape, (None, 0, 1, 2), (1, 19, 19, 273), "cblock16", "i8")
    plan = simak.DetessPlan(lay, "detess_dequant", DQ_M, zero_point=DQ_ZP)
    seg = rng.integers(0, 256, lay.capacity, dtype=np.uint8)
    y = np.empty(shape, np.float32)
    n = int(np.prod(shape))
    d8, d32 = rng.integers(0, 256, n, dtype=np.uint8), np.empty(n, np.float32)
    plan.run(seg, 0, y)
    assert np.array_equal(y.view(np.uint32), cblock16_numpy(seg, *shape).view(np.uint32))
    fns = {"plan.run(out=)": lambda: plan.run(seg, 0, y),
           "simak function": lambda: simak.detess_dequant(seg, lay, DQ_M, zero_point=DQ_ZP),
           "numpy": lambda: cblock16_numpy(seg, *shape),
           "same-traffic": lambda: np.copyto(d32, d8, casting="unsafe")}
    if torch is not None:
        tseg = torch.from_numpy(seg)
        assert np.array_equal(y.view(np.uint32),
                              cblock16_torch(torch, tseg, *shape).numpy().view(np.uint32))
        fns["torch"] = lambda: cblock16_torch(torch, tseg, *shape)
    rows.append(("SSD head 19 × 19 × 273, INT8 CBlock16 one tile → FP32", n, measure(fns, reps)))

    # BF16 60 x 80 x 256, PadTo16, tiles (1, 60, 80, 16): DetessCast.
    shape = (60, 80, 256)
    lay = simak.Layout(shape, (None, 0, 1, 2), (1, 60, 80, 16), "pad16", "bf16")
    plan = simak.DetessPlan(lay, "detess_cast")
    seg = rng.integers(0, 256, lay.capacity, dtype=np.uint8)
    y = np.empty(shape, np.float32)
    n = int(np.prod(shape))

    def bf16_numpy():
        # [C tile][H][W][plane][16] -> HWC BF16 bits -> FP32 bits.
        t = seg.reshape(16, 60, 80, 2, 16).transpose(1, 2, 0, 4, 3)
        b = np.ascontiguousarray(t).view("<u2").reshape(shape)
        return (b.astype(np.uint32) << 16).view(np.float32)

    d16, d32 = rng.integers(0, 1 << 16, n, dtype=np.uint16), np.empty(n, np.float32)
    plan.run(seg, 0, y)
    assert np.array_equal(y.view(np.uint32), bf16_numpy().view(np.uint32))
    fns = {"plan.run(out=)": lambda: plan.run(seg, 0, y),
           "simak function": lambda: simak.detess_cast(seg, lay),
           "numpy": bf16_numpy,
           "same-traffic": lambda: np.copyto(d32, d16, casting="unsafe")}
    if torch is not None:
        tseg = torch.from_numpy(seg)

        def bf16_torch():
            t = tseg.view(16, 60, 80, 2, 16).permute(1, 2, 0, 4, 3).contiguous()
            return t.view(torch.bfloat16).view(shape).float()

        assert np.array_equal(y.view(np.uint32), bf16_torch().numpy().view(np.uint32))
        fns["torch"] = bf16_torch
    rows.append(("BF16 60 × 80 × 256 PadTo16, tiles (1, 60, 80, 16) → FP32", n,
                 measure(fns, reps)))

    # A classifier head: 1 x 1000 INT8, Compact, tile alignment 1.
    shape = (1, 1000)
    lay = simak.Layout(shape, (None, None, 0, 1), (1, 1, 1, 1000), "compact", "i8", 1)
    plan = simak.DetessPlan(lay, "detess_dequant", DQ_M, zero_point=DQ_ZP)
    seg = rng.integers(0, 256, lay.capacity, dtype=np.uint8)
    y = np.empty(shape, np.float32)
    n = 1000

    def head_numpy():
        return (seg.view(np.int8).reshape(shape).astype(np.float32) - np.float32(DQ_ZP)) / DQ_M

    plan.run(seg, 0, y)
    assert np.array_equal(y.view(np.uint32), head_numpy().view(np.uint32))
    d32 = np.empty(n, np.float32)
    fns = {"plan.run(out=)": lambda: plan.run(seg, 0, y),
           "simak function": lambda: simak.detess_dequant(seg, lay, DQ_M, zero_point=DQ_ZP),
           "numpy": head_numpy,
           "same-traffic": lambda: np.copyto(d32, seg, casting="unsafe")}
    if torch is not None:
        tseg = torch.from_numpy(seg)
        fns["torch"] = lambda: (tseg.view(torch.int8).view(shape).to(torch.float32) - DQ_ZP) / float(DQ_M)
        assert np.array_equal(y.view(np.uint32), fns["torch"]().numpy().view(np.uint32))
    rows.append(("classifier head 1 × 1000 INT8 Compact, tile alignment 1 → FP32", n,
                 measure(fns, reps, min_seconds=0.05)))
    return rows


def fmt_rate(n: int, s: float) -> str:
    return f"{n / s / 1e9:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="64 Ki and 1 Mi only, 5 reps")
    ap.add_argument("--simak-cli", type=Path, default=REPO / "target" / "release" / "simak")
    ap.add_argument("--markdown", type=Path, help="also write the tables to this file")
    ap.add_argument("--only", default="quant,overhead,casttess,detess,preproc,model",
                    help="comma-separated groups: quant, overhead, casttess, detess, preproc, "
                    "model")
    ap.add_argument("--clock", choices=["wall", "thread"], default="wall",
                    help="wall time, or the calling thread's CPU time")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.thread_time
    reps = 5 if args.quick else args.reps
    sizes = [1 << 16, 1 << 20] if args.quick else [1 << 16, 1 << 20, 1 << 24]
    peers = peers_available()
    lines = []
    say = lambda s="": (print(s), lines.append(s))  # noqa: E731
    say(f"simak {simak.__version__}, Python {platform.python_version()}, NumPy {np.__version__}"
        + (f", torch {peers['torch'].__version__}" if "torch" in peers else "")
        + (f", onnxruntime {peers['ort'][0].__version__}" if "ort" in peers else "")
        + f", {platform.machine()}, {os.cpu_count()} CPUs, load average "
        + " ".join(f"{v:.1f}" for v in os.getloadavg()) + f", clock {args.clock}; route "
        + simak.QuantPlan((1 << 20,), "f32", M).implementation)
    groups = set(args.only.split(","))
    if "quant" in groups:
        quant_tables(say, sizes, reps, peers, args)
    if "overhead" in groups:
        overhead_table(say, reps)
    if "casttess" in groups:
        casttess_table(say, reps, peers)
    if "detess" in groups:
        detess_table(say, reps, peers)
    if "preproc" in groups:
        preproc_table(say, reps, peers)
    if "model" in groups:
        model_table(say, reps)
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")


def detess_table(say, reps: int, peers: dict) -> None:
    say()
    say("Output side (issue 25), one thread (torch.set_num_threads(1)); Gelem/s (median), "
        "ratio = DetessPlan.run(out=) / peer")
    say()
    say("| workload | elements | DetessPlan.run(out=) | simak function | NumPy pipeline | torch pipeline | same-traffic NumPy cast | × NumPy | × torch | × same-traffic |")
    say("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = detess_rows(reps, peers)
    for name, n, r in rows:
        cell = lambda k: fmt_rate(n, r[k]) if k in r else "—"  # noqa: E731
        ratio = lambda k: f"{r[k] / r['plan.run(out=)']:.1f}×" if k in r else "—"  # noqa: E731
        say(f"| {name} | {n} | {cell('plan.run(out=)')} | {cell('simak function')} | "
            f"{cell('numpy')} | {cell('torch')} | {cell('same-traffic')} | {ratio('numpy')} | "
            f"{ratio('torch')} | {ratio('same-traffic')} |")
    name, n, r = rows[-1]
    say()
    say(f"Per call, {name}: " + ", ".join(
        f"{k} {r[k] * 1e6:.2f} µs" for k in ("plan.run(out=)", "simak function", "numpy", "torch")
        if k in r))


def quant_tables(say, sizes, reps: int, peers: dict, args) -> None:
    say()
    say("Quant, Gelem/s (median), ratio = simak / best peer")
    say()
    say("| dtype | elements | simak.quantize | plan.execute(out=) | NumPy | torch | ONNX Runtime | Rust `simak bench` | execute / best peer | quantize / best peer | execute / Rust |")
    say("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for dtype in ("f32", "bf16", "f16"):
        for n in sizes:
            r = quant_rows(n, dtype, reps, peers, args.simak_cli)
            peer_keys = ["numpy", "torch.quantize_per_tensor", "onnxruntime QuantizeLinear"]
            best = min((r[k] for k in peer_keys if k in r), default=None)
            rust = r.get("rust")
            cell = lambda k: fmt_rate(n, r[k]) if k in r else "—"  # noqa: E731
            say(f"| {dtype} | {n} | {cell('simak.quantize')} | {cell('plan.execute(out=)')} | "
                f"{cell('numpy')} | {cell('torch.quantize_per_tensor')} | "
                f"{cell('onnxruntime QuantizeLinear')} | "
                f"{fmt_rate(n, rust) if rust else '—'} | "
                f"{best / r['plan.execute(out=)']:.2f}× | {best / r['simak.quantize']:.2f}× | "
                + (f"{rust / r['plan.execute(out=)']:.2f}× |" if rust else "— |"))


def overhead_table(say, reps: int) -> None:
    say()
    say("Per-call overhead at 16 elements (FP32), median ns per call")
    say()
    say("| call | ns |")
    say("| --- | ---: |")
    for k, v in overhead(reps).items():
        say(f"| `{k}` | {v * 1e9:.0f} |")


def casttess_table(say, reps: int, peers: dict) -> None:
    say()
    say("CastTess of a 1080 × 1920 × 3 frame, tile (1, 16, 64, 3), compact; Gelem/s (median)")
    say()
    say("| input | simak.casttess | CastTessPlan.execute(out=) | reference | ratio (execute / reference) |")
    say("| --- | ---: | ---: | ---: | ---: |")
    n = 1080 * 1920 * 3
    for dtype, r in casttess_rows(reps, peers).items():
        ref_key = next((k for k in r if k.startswith(("torch", "np."))), None)
        ref = f"{fmt_rate(n, r[ref_key])} ({ref_key})" if ref_key else "—"
        ratio = f"{r[ref_key] / r['CastTessPlan.execute(out=)']:.2f}×" if ref_key else "—"
        say(f"| {dtype} | {fmt_rate(n, r['simak.casttess'])} | {fmt_rate(n, r['CastTessPlan.execute(out=)'])} | {ref} | {ratio} |")


# Camera frames (issue 26): ImageNet normalization, Quant multiplier and zero point.
PP_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
PP_STD = np.array([0.229, 0.224, 0.225], np.float32)
PP_M = np.float32(40.0)
PP_ZP = 0
PP_TILE = (1, 16, 64, 3)


def preproc_rows(reps: int, peers: dict) -> list:
    """One row per (input, output): seconds per call of each candidate."""
    h, w = 1080, 1920
    rng = np.random.default_rng(26)
    frames = {"RGB8": rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
              "NV12": rng.integers(0, 256, (h * 3 // 2, w), dtype=np.uint8)}
    try:
        import cv2

        cv2.setNumThreads(1)
    except Exception as e:  # an optional peer
        print(f"# cv2: not available ({type(e).__name__}: {e})", file=sys.stderr)
        cv2 = None
    torch = peers.get("torch")
    rows = []
    for src, frame in frames.items():
        fmt = "rgb" if src == "RGB8" else "nv12"

        def to_rgb(frame=frame, src=src):
            return cv2.cvtColor(frame, cv2.COLOR_YUV2RGB_NV12) if src == "NV12" else frame

        def normalized(frame=frame, to_rgb=to_rgb):
            return (to_rgb().astype(np.float32) / np.float32(255) - PP_MEAN) / PP_STD

        for to in ("i8", "quanttess", "casttess"):
            kw = dict(format=fmt, mean=tuple(PP_MEAN.tolist()), std=tuple(PP_STD.tolist()), to=to)
            if to in ("i8", "quanttess"):
                kw.update(multiplier=PP_M, zero_point=PP_ZP)
            if to != "i8":
                kw.update(tile=PP_TILE)
            plan = simak.PreprocPlan(h, w, **kw)
            if to == "i8":
                out = np.empty((h, w, 3), np.int8)
            else:
                buf = np.empty(plan.output_span + 16, np.uint8)
                off = (-buf.ctypes.data) % 16
                out = buf[off : off + plan.output_span]
            want = plan.execute(frame)
            fns = {"plan": lambda plan=plan, out=out, frame=frame: plan.execute(frame, out=out),
                   "function": lambda kw=kw, frame=frame: simak.preprocess(frame, **kw)}
            # Same traffic: the frame's bytes read and the output's written, each byte
            # transformed (XOR 0x80, as `simak bench preproc`'s kernel), and a plain copy
            # (memcpy), the faster bound.
            src_bytes = frame.reshape(-1)
            dst_bytes = out.reshape(-1).view(np.uint8)
            fb = src_bytes.size

            def same_traffic(s=src_bytes, d=dst_bytes, fb=fb):
                np.bitwise_xor(s, np.uint8(0x80), out=d[:fb])
                d[fb:].fill(0)

            def memcpy(s=src_bytes, d=dst_bytes, fb=fb):
                np.copyto(d[:fb], s)
                d[fb:].fill(0)

            fns["same-traffic"] = same_traffic
            fns["memcpy"] = memcpy

            def finish_numpy(x, to=to):
                if to == "i8":
                    return np.clip(np.rint(x * PP_M) + PP_ZP, -128, 127).astype(np.int8)
                if to == "quanttess":
                    return simak.quanttess(x, PP_M, tile=PP_TILE, zero_point=PP_ZP)
                return simak.casttess(x, tile=PP_TILE)

            if cv2 is not None or src == "RGB8":
                fns["opencv"] = lambda normalized=normalized, f=finish_numpy: f(normalized())
            if torch is not None and (cv2 is not None or src == "RGB8"):
                mean_t = torch.from_numpy(PP_MEAN)
                std_t = torch.from_numpy(PP_STD)

                def torch_pipe(to_rgb=to_rgb, to=to, mean_t=mean_t, std_t=std_t):
                    x = (torch.from_numpy(to_rgb()).float() / 255.0 - mean_t) / std_t
                    if to == "i8":
                        return torch.clamp(torch.round(x * float(PP_M)) + PP_ZP, -128, 127).to(
                            torch.int8).numpy()
                    x = x.numpy()
                    if to == "quanttess":
                        return simak.quanttess(x, PP_M, tile=PP_TILE, zero_point=PP_ZP)
                    return simak.casttess(x, tile=PP_TILE)

                fns["torch"] = torch_pipe
            for k in ("opencv", "torch"):
                if k in fns:
                    got = np.asarray(fns[k]())
                    if not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
                        print(f"# preproc {src} -> {to}: {k} differs from simak "
                              f"({np.count_nonzero(got.view(np.uint8) != want.view(np.uint8))} "
                              "bytes)", file=sys.stderr)
            rows.append((src, to, measure(fns, reps)))
    return rows


def preproc_table(say, reps: int, peers: dict) -> None:
    say()
    say("Camera frames (issue 26), 1080 × 1920, one thread (cv2.setNumThreads(1), "
        "torch.set_num_threads(1)); ms per frame (median), ratio = peer / PreprocPlan.execute(out=)")
    say()
    say("| input | output | PreprocPlan.execute(out=) | simak.preprocess | same-traffic | memcpy | OpenCV pipeline | torch pipeline | × OpenCV | × torch | plan / same-traffic | plan / memcpy |")
    say("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    names = {"i8": "INT8 strided", "quanttess": "QuantTess (1,16,64,3)",
             "casttess": "CastTess (1,16,64,3)"}
    for src, to, r in preproc_rows(reps, peers):
        cell = lambda k: f"{r[k] * 1e3:.2f}" if k in r else "—"  # noqa: E731
        ratio = lambda k: f"{r[k] / r['plan']:.1f}×" if k in r else "—"  # noqa: E731
        say(f"| {src} | {names[to]} | {cell('plan')} | {cell('function')} | "
            f"{cell('same-traffic')} | {cell('memcpy')} | {cell('opencv')} | {cell('torch')} | "
            f"{ratio('opencv')} | {ratio('torch')} | {r['same-traffic'] / r['plan']:.2f}× | "
            f"{r['memcpy'] / r['plan']:.2f}× |")


def model_rows(reps: int) -> list:
    """[(stage, {candidate: seconds per call})] of the YOLO fixture at 640 x 640."""
    manifest = json.loads((REPO / "tests/data/mpk/yolo.mpk.json").read_text())
    pre = next(p for p in manifest["plugins"] if p["kernel"] == "preproc")
    pre["params"].update(input_shapes=[[1, 640, 640, 3]], scaled_height=640, padding=[0, 0, 0, 0])
    manifest["input_nodes"][0]["size"] = 640 * 640 * 3
    m = simak.Model.from_mpk_json(json.dumps(manifest))
    rng = np.random.default_rng(30)
    frame = rng.integers(0, 256, (640, 640, 3), dtype=np.uint8)
    ifm = np.empty(m.inputs[0].size, np.uint8)
    plan = simak.PreprocPlan(640, 640, format="rgb", batch=1, to="quanttess", multiplier=127.0,
                             zero_point=-128, tile=(1, 32, 32, 3), channels="pad16")
    ifm_plan = np.empty(plan.output_span, np.uint8)

    def numpy_pre():
        q = np.clip(np.rint((frame.astype(np.float32) / np.float32(255)) * np.float32(127))
                    - 128, -128, 127).astype(np.int8)
        t = np.zeros((20, 20, 32, 32, 16), np.int8)
        t[..., :3] = q.reshape(20, 32, 20, 32, 3).transpose(0, 2, 1, 3, 4)
        return t.reshape(-1).view(np.uint8)

    m.preprocess(frame, out=ifm)
    plan.execute(frame[None], out=ifm_plan)
    assert np.array_equal(ifm, ifm_plan) and np.array_equal(ifm, numpy_pre())
    rows = [("preprocess 640 × 640 RGB → QuantTess", measure({
        "model": lambda: m.preprocess(frame, out=ifm),
        "single": lambda: plan.execute(frame[None], out=ifm_plan),
        "numpy": numpy_pre,
    }, reps))]

    ofm = rng.integers(0, 256, m.ofm_size, dtype=np.uint8)
    # The heads as the fixture gives them (offset, shape, dq_scale, dq_zp, slice), by hand.
    heads = [(0, (1, 80, 80, 255), 21.5, -3, (1, 16, 16, 255)),
             (1_638_400, (1, 40, 40, 255), 33.25, 0, (1, 8, 8, 255)),
             (2_048_000, (1, 20, 20, 255), 40.0, 7, (1, 4, 4, 255))]
    plans = [simak.DetessPlan(simak.Layout(shape, (None, 1, 2, 3), tile, "cblock16", "i8"),
                              "detess_dequant", scale, zero_point=zp)
             for _, shape, scale, zp, tile in heads]

    def numpy_post():
        out = {}
        for s, (offset, shape, scale, zp, tile) in zip(m.outputs, heads):
            _, h, w, c = shape
            _, th, tw, _ = tile
            seg = ofm[offset:offset + s.size].view(np.int8)
            q = seg.reshape(h // th, w // tw, 16, th, tw, 16).transpose(0, 3, 1, 4, 2, 5)
            q = q.reshape(1, h, w, 256)[..., :c]
            out[s.name] = (q.astype(np.float32) - np.float32(zp)) / np.float32(scale)
        return out

    def singles():
        return [p.run(ofm, offset=o) for p, (o, *_rest) in zip(plans, heads)]

    got, want = m.postprocess(ofm), numpy_post()
    for k, single in zip(got, singles()):
        assert np.array_equal(got[k].view(np.uint32), want[k].view(np.uint32))
        assert np.array_equal(got[k].view(np.uint32), single.view(np.uint32))
    rows.append(("postprocess three CBlock16 INT8 heads → FP32", measure({
        "model": lambda: m.postprocess(ofm),
        "single": singles,
        "numpy": numpy_post,
    }, reps)))
    return rows


def model_table(say, reps: int) -> None:
    say()
    say("A whole model (issue 30): the YOLO fixture at 640 × 640, one thread; ms per call "
        "(median), ratio = candidate / Model")
    say()
    say("| stage | simak.Model | single ops | NumPy script | single / Model | NumPy / Model |")
    say("| --- | ---: | ---: | ---: | ---: | ---: |")
    for stage, r in model_rows(reps):
        say(f"| {stage} | {r['model'] * 1e3:.2f} | {r['single'] * 1e3:.2f} | "
            f"{r['numpy'] * 1e3:.2f} | {r['single'] / r['model']:.2f}× | "
            f"{r['numpy'] / r['model']:.1f}× |")


if __name__ == "__main__":
    main()
