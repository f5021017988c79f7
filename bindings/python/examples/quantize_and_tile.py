"""Quantizes a real model file and tiles a real photo with simak, on the repository's own
data (tests/data): the MiniLM layer-0 subset (safetensors, FP32) and chelsea.png.

    python bindings/python/examples/quantize_and_tile.py [--out-dir DIR]

For each tensor: a per-tensor multiplier 127 / max|x| (rounded once to binary32), INT8 by
simak.quantize, the worst error after simak.dequantize. For the photo: FP32 HWC in [0, 1],
BF16 in the MlaTiled layout by simak.casttess (tiles of 16 rows x 64 columns x 3 channels),
read back by simak.untile. With --out-dir, writes the INT8 tensors (safetensors) and the
tiled photo (.bin) there.
"""

import argparse
from pathlib import Path

import ml_dtypes
import numpy as np
from PIL import Image
from safetensors.numpy import load_file, save_file

import simak

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"


def quantize_model(path: Path, out_dir):
    tensors = load_file(str(path))
    quantized, metadata = {}, {}
    print(f"{path.name}: {len(tensors)} tensors")
    for name, x in tensors.items():
        absmax = float(np.max(np.abs(x)))
        m = np.float32(127.0 / absmax) if absmax > 0 else np.float32(1.0)
        q = simak.quantize(x, m)  # nearest-even, zero point 0
        err = np.max(np.abs(simak.dequantize(q, m) - x))
        print(f"  {name:55s} {str(x.shape):12s} m={m:.6g}  max |x - dequantize(q)| = {err:.3g}"
              f" (half a step {0.5 / m:.3g})")
        assert err <= 0.5 / m * (1 + 1e-4)  # half a step, plus the FP32 rounding of x
        quantized[name] = q
        metadata[f"simak.{name}.multiplier_bits"] = f"0x{int(m.view(np.uint32)):08x}"
        metadata[f"simak.{name}.zero_point"] = "0"
    if out_dir:
        save_file(quantized, str(out_dir / "minilm-int8.safetensors"), metadata=metadata)


def tile_photo(path: Path, out_dir):
    rgb = np.asarray(Image.open(path).convert("RGB"))
    x = rgb.astype(np.float32) / np.float32(255.0)  # HWC, C order
    axes, tile = (None, 0, 1, 2), (1, 16, 64, 3)
    t = simak.casttess(x, axes=axes, tile=tile)
    layout = simak.Layout(x.shape, axes, tile)
    print(f"{path.name}: {x.shape} FP32 -> {t.size} bytes of tiled BF16 "
          f"({layout.tile_counts[1]} x {layout.tile_counts[2]} tiles, 16-byte aligned: "
          f"{t.ctypes.data % 16 == 0})")
    back = simak.untile(t, layout)
    assert np.array_equal(back, x.astype(ml_dtypes.bfloat16))
    print("  untile(casttess(x)) == x rounded to bfloat16: True")
    if out_dir:
        t.tofile(out_dir / "chelsea-bf16-tiled.bin")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path)
    args = ap.parse_args()
    if args.out_dir:
        args.out_dir.mkdir(parents=True, exist_ok=True)
    quantize_model(DATA / "minilm-l6-layer0-f32-subset.safetensors", args.out_dir)
    tile_photo(DATA / "chelsea.png", args.out_dir)


if __name__ == "__main__":
    main()
