"""Regenerates the NV12 / I420 test frames and their RGB as decoded by OpenCV.

Run from this directory: python3 make.py (needs numpy and opencv-python-headless).
Writes, for H = 10 and W = 16 (1.5·H·W = 240 bytes a frame):
  nv12.yuv  i420.yuv   the frames, OpenCV's single-array layout (H·3/2 rows of W bytes)
  nv12.rgb  i420.rgb   cv2.cvtColor(frame, COLOR_YUV2RGB_NV12 / COLOR_YUV2RGB_I420),
                       H·W·3 bytes, row-major R, G, B
The frames hold uniform random bytes (fixed seed) with the luma and chroma extremes
(0, 16, 128, 235, 240, 255) on the first rows so saturation is reached.
"""

import cv2
import numpy as np

H, W = 10, 16
rng = np.random.default_rng(20261203)
edges = np.array([0, 16, 128, 235, 240, 255], dtype=np.uint8)
for name, code in (("nv12", cv2.COLOR_YUV2RGB_NV12), ("i420", cv2.COLOR_YUV2RGB_I420)):
    frame = rng.integers(0, 256, size=(H * 3 // 2, W), dtype=np.uint8)
    frame[0, :] = np.resize(edges, W)
    frame[H, :] = np.resize(edges[::-1], W)
    frame[H + 1, :] = np.resize(np.roll(edges, 2), W)
    rgb = cv2.cvtColor(frame, code)
    assert rgb.shape == (H, W, 3) and rgb.dtype == np.uint8
    frame.tofile(f"{name}.yuv")
    rgb.tofile(f"{name}.rgb")
print(cv2.__version__)
