"""simak: FP32 / BF16 / FP16 NumPy tensors into exactly what the ML accelerator consumes.

A thin layer over the Rust library of the same name: the same bytes as both simak backends
(the A65 host CPU and the EV74 DSP), the speed of the Rust SIMD kernels, the GIL released
while kernels run, and errors as :class:`SimakError` (a ``ValueError``) with the stable
``code`` of ``docs/errors.md``.

Operations (``docs/contract.md`` is the normative contract):

- :func:`quantize`: FP32/BF16/FP16 to INT8, ``saturate(round(x * multiplier) + zero_point)``,
  and :class:`QuantPlan` to admit a geometry once and run it many times;
- :func:`casttess`: FP32/BF16/FP16 to BF16 in the accelerator's ``MlaTiled`` layout,
  :func:`quanttess`: to INT8 in that layout, :class:`Layout` for its sizes and offsets,
  :func:`untile` to read a tiled buffer back;
- the MLA's outputs back (SPEC §12): :func:`detess` (one head of the OFM buffer, in its
  tiled :class:`Layout` with Compact, PadTo16 or CBlock16 channels, to its logical tensor),
  :func:`detess_cast` (BF16 heads to FP32), :func:`detess_dequant` (INT8/INT16/INT32 heads
  to FP32/FP16/BF16 real values) and :class:`DetessPlan` for repeated calls;
- :func:`dequantize`: INT8/INT16/INT32 back to FP32/FP16/BF16, ``(q - zero_point) / multiplier``;
- :func:`preprocess`: 8-bit camera frames (RGB8, BGR8, RGBX8, BGRX8, GRAY8, NV12, I420;
  NumPy ``uint8`` in OpenCV's conventions) to FP32, INT8 or the tiled outputs in one pass
  (SPEC §13: YUV, channel order, border, normalization), and :class:`PreprocPlan`;
- :class:`Model`: a compiled model's whole boundary from its manifest (``*_mpk.json``,
  SPEC §14): ``Model.from_mpk(path)``, ``m.preprocess(frame)`` (the IFM bytes),
  ``m.postprocess(ofm)`` (a ``dict`` of output name → array);
- :func:`calibrate_absmax`: the absmax multiplier of a tensor, ``127 / max|x|`` over its
  finite elements (1.0 when there is none), as ``simak quant --calibrate absmax`` picks it;
- :mod:`simak.ev74`: the EV74 descriptors (224-byte Quant v1, 216-byte CastTess v1,
  224-byte Detess v1, DetessCast v1 and DetessDequant v1, 368-byte Preproc v1).

Inputs are read in place: NumPy arrays (C order, Fortran order or any strided view with
nonnegative, non-overlapping strides) and anything ``np.asarray(x, copy=False)`` views
without a copy (PyTorch CPU tensors, JAX CPU arrays). A view the contract does not admit is
a :class:`SimakError` naming the rule; ``np.ascontiguousarray(x)`` is the way out.
"""

from . import _native
from ._native import (
    CastTessPlan,
    DetessPlan,
    Layout,
    Model,
    ModelStage,
    PreprocPlan,
    QuantPlan,
    SimakError,
    calibrate_absmax,
    casttess,
    dequantize,
    detess,
    detess_cast,
    detess_dequant,
    preprocess,
    quantize,
    quanttess,
    untile,
)
from . import ev74

__version__: str = _native.__version__

ROUNDING_MODES = ("nearest-even", "toward-zero", "toward-positive", "toward-negative")
"""The rounding modes of :func:`quantize`, the default first."""

CHANNELS = ("compact", "pad16", "cblock16")
"""The channel encodings of :class:`Layout` (the input-side ops take the first two)."""

TILED_DTYPES = ("bf16", "i8", "i16", "i32")
"""The stored dtypes of :class:`Layout` (the input-side ops write the first two)."""

__all__ = [
    "CHANNELS",
    "CastTessPlan",
    "DetessPlan",
    "Layout",
    "Model",
    "ModelStage",
    "PreprocPlan",
    "QuantPlan",
    "ROUNDING_MODES",
    "SimakError",
    "TILED_DTYPES",
    "__version__",
    "calibrate_absmax",
    "casttess",
    "dequantize",
    "detess",
    "detess_cast",
    "detess_dequant",
    "ev74",
    "preprocess",
    "quantize",
    "quanttess",
    "untile",
]
