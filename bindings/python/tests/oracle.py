"""Independent NumPy oracles for the simak contract (docs/contract.md), written from the
contract's text, never from simak: tests compare simak's bytes with these.

- Quant (§3): the product of the exactly decoded input and the multiplier is formed in
  binary64 (exact: at most 24 + 24 significant bits), rounded once to binary32 by NumPy's
  float64 -> float32 conversion (nearest-even, gradual underflow), rounded to an integer with
  the mode, the zero point added, saturated to [-128, 127]; NaN gives the zero point.
- BF16 conversions (§4) in integer NumPy on the bit patterns.
- The MlaTiled layout (§5) by walking tiles in storage order and laying pixels out plane by
  plane.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"

MODES = ("nearest-even", "toward-zero", "toward-positive", "toward-negative")


def data_path(name: str) -> Path:
    path = DATA / name
    if not path.is_file():
        raise FileNotFoundError(f"test data {path} is missing (tests/data holds it)")
    return path


def decode_exact(bits: np.ndarray, dtype: str) -> np.ndarray:
    """The exact values of bit patterns as float64 (NaN payloads dropped, which no
    oracle step needs)."""
    bits = np.asarray(bits)
    # Signalling NaNs raise NumPy's "invalid" flag when widened; their value is NaN either way.
    with np.errstate(invalid="ignore"):
        if dtype == "f32":
            return bits.astype(np.uint32).view(np.float32).astype(np.float64)
        if dtype == "bf16":
            return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        if dtype == "f16":
            return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    raise ValueError(dtype)


def binary32_product(values: np.ndarray, multiplier_bits: int) -> np.ndarray:
    """x * m in binary64 (exact), rounded once to binary32 (returned as float64)."""
    m = float(np.array([multiplier_bits], np.uint32).view(np.float32)[0])
    with np.errstate(over="ignore", invalid="ignore"):
        return (values * m).astype(np.float32).astype(np.float64)


def round_mode(p: np.ndarray, mode: str) -> np.ndarray:
    if mode == "nearest-even":
        return np.rint(p)
    if mode == "toward-zero":
        return np.trunc(p)
    if mode == "toward-positive":
        return np.ceil(p)
    if mode == "toward-negative":
        return np.floor(p)
    raise ValueError(mode)


def quant(bits: np.ndarray, dtype: str, multiplier_bits: int, zero_point: int = 0,
          mode: str = "nearest-even") -> np.ndarray:
    """The INT8 results of SPEC §3 for input bit patterns."""
    p = binary32_product(decode_exact(bits, dtype), multiplier_bits)
    with np.errstate(invalid="ignore"):
        r = np.clip(round_mode(p, mode) + zero_point, -128, 127)
    r = np.where(np.isnan(p), zero_point, r)
    return r.astype(np.int8)


def f32_bits_to_bf16(bits: np.ndarray) -> np.ndarray:
    """(bits + 0x7fff + ((bits >> 16) & 1)) >> 16 with 32-bit wraparound."""
    b = bits.astype(np.uint64)
    return ((((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFFFFFF) >> 16)).astype(np.uint16)


def f16_bits_to_bf16(bits: np.ndarray) -> np.ndarray:
    """The exact FP16 value rounded once to nearest-even BF16; NaNs quieted with their sign
    and top 7 payload bits. Decoded field by field."""
    b = bits.astype(np.uint32)
    sign = b >> 15
    exp = (b >> 10) & 0x1F
    mant = b & 0x3FF
    normal_f32 = (sign << 31) | ((exp + 112) << 23) | (mant << 13)
    # Subnormals: mant * 2^-24, exact in binary64 and in binary32.
    sub_val = (mant.astype(np.float64) * 2.0**-24).astype(np.float32).view(np.uint32)
    sub_f32 = (sign << 31) | sub_val.astype(np.uint32)
    inf_f32 = (sign << 31) | np.uint32(0x7F800000)
    f32 = np.where(exp == 0, sub_f32, np.where(exp == 31, inf_f32, normal_f32))
    out = f32_bits_to_bf16(f32.astype(np.uint32))
    nan = (exp == 31) & (mant != 0)
    nan_bf16 = ((sign << 15) | 0x7FC0 | (mant >> 3)).astype(np.uint16)
    return np.where(nan, nan_bf16, out).astype(np.uint16)


def to_bf16_bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """SPEC §4 on an array given as bit patterns of `dtype`."""
    if dtype == "f32":
        return f32_bits_to_bf16(x.astype(np.uint32))
    if dtype == "f16":
        return f16_bits_to_bf16(x.astype(np.uint16))
    if dtype == "bf16":
        return x.astype(np.uint16)
    raise ValueError(dtype)


def bits_of(x: np.ndarray) -> tuple[np.ndarray, str]:
    """An array's bit patterns and its dtype name."""
    name = x.dtype.name
    if name == "float32":
        return x.view(np.uint32), "f32"
    if name == "float16":
        return x.view(np.uint16), "f16"
    if name == "bfloat16":
        return x.view(np.uint16), "bf16"
    raise ValueError(name)


def tiled(values: np.ndarray, axes, tile, channels: str, planes: int) -> np.ndarray:
    """The MlaTiled bytes of logical `values` (uint16 BF16 bits for planes=2, int8 for
    planes=1) with roles `axes` (D, H, W, C; None absent) and `tile` extents."""
    shape = values.shape
    rank = len(shape)
    present = [a for a in axes if a is not None]
    outer = [a for a in range(rank) if a not in present]
    # Move outer axes first (ascending), then D, H, W, C (absent ones as extent 1).
    v = np.transpose(values, outer + present)
    outer_count = int(np.prod([shape[a] for a in outer], dtype=np.int64)) if outer else 1
    role_ext = [shape[a] if a is not None else 1 for a in axes]
    v = v.reshape([outer_count] + role_ext)
    if planes == 2:
        b = v.astype(np.uint16)
        planes_arr = np.stack([(b & 0xFF).astype(np.uint8), (b >> 8).astype(np.uint8)], axis=-2)
    else:
        planes_arr = v.astype(np.int8).view(np.uint8)[..., None, :]
    # planes_arr: (outer, D, H, W, planes, C)
    ed, eh, ew, ec = role_ext
    td, th, tw, tc = tile
    chunks = []
    for o in range(outer_count):
        for c0 in range(0, ec, tc):
            for d0 in range(0, ed, td):
                for h0 in range(0, eh, th):
                    for w0 in range(0, ew, tw):
                        block = planes_arr[o, d0:d0 + td, h0:h0 + th, w0:w0 + tw, :, c0:c0 + tc]
                        tcp = block.shape[-1]
                        sc = tcp if channels == "compact" else -(-tcp // 16) * 16
                        padded = np.zeros(block.shape[:-1] + (sc,), np.uint8)
                        padded[..., :tcp] = block
                        flat = padded.reshape(-1)
                        size = -(-flat.size // 16) * 16
                        tile_bytes = np.zeros(size, np.uint8)
                        tile_bytes[: flat.size] = flat
                        chunks.append(tile_bytes)
    if not chunks:
        return np.zeros(0, np.uint8)
    return np.concatenate(chunks)


def load_peer(name: str) -> dict:
    with open(data_path(f"peer/{name}"), encoding="utf-8") as f:
        return json.load(f)


def peer_bits(entry: dict) -> np.ndarray:
    width = np.uint32 if entry["in_dtype"] == "float32" else np.uint16
    return np.array([int(b, 16) for b in entry["in_bits"]], dtype=width)


PEER_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def code_text(code):
    """A simak error code as docs/errors.md writes it (and the messages end with it):
    decimal for the descriptor rules (1 to 255), 0x and three or more hex digits above."""
    return str(code) if code <= 255 else f"0x{code:03x}"
