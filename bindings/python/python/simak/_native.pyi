"""Type stubs of the extension module simak._native (re-exported by simak)."""

import os
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union, final

import numpy as np
import numpy.typing as npt

__version__: str
SIMD_ROUTES: bool

_Rounding = Literal["nearest-even", "toward-zero", "toward-positive", "toward-negative"]
_Channels = Literal["compact", "pad16"]
#: The channel encodings of a Layout (CBlock16: the MLA's outputs only).
_LayoutChannels = Literal["compact", "pad16", "cblock16"]
#: The input format: a name or a NumPy dtype (numpy.float32, numpy.float16,
#: ml_dtypes.bfloat16).
_DTypeLike = Union[Literal["f32", "bf16", "f16"], npt.DTypeLike]
#: The tiled (stored) format: "bf16" (CastTess), "i8" (QuantTess), "i16" or "i32" (MLA
#: outputs), or the NumPy dtypes.
_TiledDType = Union[Literal["bf16", "i8", "i16", "i32"], npt.DTypeLike]
#: A dequantization output: numpy.float32, numpy.float16, ml_dtypes.bfloat16 or a name.
_FloatOut = Union[Literal["f32", "f16", "bf16"], npt.DTypeLike]
#: An OFM buffer: a C-contiguous uint8 (or int8) array or a bytes-like object.
_Ofm = Union[npt.NDArray[np.uint8], npt.NDArray[np.int8], bytes, bytearray, memoryview]
#: A role's axis: None (absent) or a nonnegative logical axis.
_Axes = Sequence[Optional[int]]
#: _Tile extents in elements for the roles D, H, W, C.
_Tile = Sequence[int]
#: A multiplier: a float is rounded once to binary32 (nearest-even), np.float32 is exact.
_Multiplier = Union[float, np.floating[Any]]

class SimakError(ValueError):
    """A broken rule of the contract; ``code`` is the stable code of docs/errors.md."""

    code: int

def quantize(
    x: npt.ArrayLike,
    multiplier: _Multiplier,
    zero_point: int = 0,
    rounding: _Rounding = "nearest-even",
    dtype: Optional[_DTypeLike] = None,
    out: Optional[npt.NDArray[np.int8]] = None,
    threads: int = 1,
    exact: bool = False,
) -> npt.NDArray[np.int8]:
    """FP32/BF16/FP16 (rank 0..6, read in place) to INT8:
    ``saturate(round(x * multiplier) + zero_point)``; ``out`` or a new C-order array."""

def casttess(
    x: npt.ArrayLike,
    axes: _Axes = (None, 0, 1, 2),
    tile: _Tile = (1, 16, 64, 3),
    channels: _Channels = "compact",
    dtype: Optional[_DTypeLike] = None,
    out: Optional[npt.NDArray[np.uint8]] = None,
    threads: int = 1,
) -> npt.NDArray[np.uint8]:
    """FP32/BF16/FP16 (rank 1..6) to BF16 in the MlaTiled layout: ``out`` or a new 1-D
    ``uint8`` array of ``capacity`` bytes, 16-byte aligned."""

def quanttess(
    x: npt.ArrayLike,
    multiplier: _Multiplier,
    axes: _Axes = (None, 0, 1, 2),
    tile: _Tile = (1, 16, 64, 3),
    channels: _Channels = "compact",
    zero_point: int = 0,
    rounding: _Rounding = "nearest-even",
    dtype: Optional[_DTypeLike] = None,
    out: Optional[npt.NDArray[np.uint8]] = None,
    threads: int = 1,
    exact: bool = False,
) -> npt.NDArray[np.uint8]:
    """FP32/BF16/FP16 (rank 1..6) to INT8 in the MlaTiled layout (quantize's arithmetic)."""

def untile(
    t: _Ofm,
    layout: "Layout",
) -> npt.NDArray[Any]:
    """A tiled buffer back to its logical tensor (``detess`` at offset 0):
    ``ml_dtypes.bfloat16``, ``int8``, ``int16`` or ``int32`` (the layout's dtype), C order."""

def detess(
    ofm: _Ofm,
    layout: "Layout",
    offset: int = 0,
    out: Optional[npt.NDArray[Any]] = None,
    threads: int = 1,
) -> npt.NDArray[Any]:
    """One head of the MLA's output (``layout.capacity`` bytes at byte ``offset`` of
    ``ofm``) to its logical tensor of ``layout.shape`` in the layout's dtype: ``out`` (any
    strides) or a new C-order array."""

def detess_cast(
    ofm: _Ofm,
    layout: "Layout",
    offset: int = 0,
    out: Optional[npt.NDArray[np.float32]] = None,
    threads: int = 1,
) -> npt.NDArray[np.float32]:
    """One BF16 head to FP32 (``bits << 16``, NaN payloads kept)."""

def detess_dequant(
    ofm: _Ofm,
    layout: "Layout",
    multiplier: _Multiplier,
    zero_point: int = 0,
    out_dtype: _FloatOut = ...,
    offset: int = 0,
    out: Optional[npt.NDArray[Any]] = None,
    threads: int = 1,
) -> npt.NDArray[Any]:
    """One INT8/INT16/INT32 head to ``(q - zero_point) / multiplier`` (SPEC 12.2) as
    float32 (default), float16 or bfloat16."""

def dequantize(
    q: Union[npt.NDArray[np.int8], npt.NDArray[np.int16], npt.NDArray[np.int32]],
    multiplier: _Multiplier,
    zero_point: int = 0,
    out_dtype: _FloatOut = ...,
    out: Optional[npt.NDArray[Any]] = None,
) -> npt.NDArray[Any]:
    """INT8/INT16/INT32 (rank 0..6, read in place) to float32 (default), float16 or
    bfloat16: ``(q - zero_point) / multiplier``, one binary32 division (SPEC 12.2)."""

def calibrate_absmax(x: npt.ArrayLike, dtype: Optional[_DTypeLike] = None) -> float:
    """The absmax multiplier of FP32/BF16/FP16 ``x`` (rank 0..6, read in place):
    ``127 / max|x|`` over the finite elements, one binary32 division (nearest-even); 1.0
    when no element is finite and nonzero. ValueError when the quotient is not finite."""

@final
class Layout:
    """The MlaTiled layout of a logical shape: sizes in bytes, tile counts, offsets."""

    def __new__(
        cls,
        shape: Sequence[int],
        axes: _Axes,
        tile: _Tile,
        channels: _LayoutChannels = "compact",
        dtype: _TiledDType = "bf16",
        tile_align: Literal[16, 1] = 16,
    ) -> Layout: ...
    @property
    def capacity(self) -> int:
        """Bytes of the tiled buffer."""
    @property
    def tile_counts(self) -> Tuple[int, int, int, int]:
        """Tiles per role D, H, W, C."""
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def axes(self) -> Tuple[Optional[int], Optional[int], Optional[int], Optional[int]]: ...
    @property
    def tile(self) -> Tuple[int, int, int, int]: ...
    @property
    def channels(self) -> str: ...
    @property
    def dtype(self) -> str:
        """The stored dtype: "bf16", "i8", "i16" or "i32"."""
    @property
    def tile_align(self) -> int:
        """Tile alignment in bytes: 16 or 1."""
    @property
    def planes(self) -> int: ...
    @property
    def elements(self) -> int: ...
    @property
    def outer_count(self) -> int: ...
    @property
    def bytes_per_outer(self) -> int: ...
    @property
    def tiles_per_outer(self) -> int: ...
    def offset_of(self, index: Sequence[int], plane: int = 0) -> int:
        """Byte offset of byte plane ``plane`` of the element at logical ``index``."""
    def __eq__(self, other: object, /) -> bool: ...
    def __reduce__(self) -> Tuple[type[Layout], Tuple[Any, ...]]:
        """Pickling: the constructor's arguments, admitted again when loaded."""

@final
class QuantPlan:
    """A Quant geometry and parameters admitted once; ``execute`` runs it."""

    def __new__(
        cls,
        shape: Sequence[int],
        dtype: _DTypeLike,
        multiplier: _Multiplier,
        zero_point: int = 0,
        rounding: _Rounding = "nearest-even",
        input_strides: Optional[Sequence[int]] = None,
        output_strides: Optional[Sequence[int]] = None,
        exact: bool = False,
    ) -> QuantPlan: ...
    def execute(
        self,
        x: npt.ArrayLike,
        out: Optional[npt.NDArray[np.int8]] = None,
        threads: int = 1,
    ) -> npt.NDArray[np.int8]: ...
    @property
    def implementation(self) -> str:
        """The A65 route chosen once (a diagnostic name)."""
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def multiplier(self) -> float: ...
    @property
    def multiplier_bits(self) -> int: ...
    @property
    def zero_point(self) -> int: ...
    @property
    def rounding(self) -> str: ...
    @property
    def input_strides(self) -> Tuple[int, ...]: ...
    @property
    def output_strides(self) -> Tuple[int, ...]: ...
    @property
    def input_span(self) -> int: ...
    @property
    def output_span(self) -> int: ...
    @property
    def elements(self) -> int: ...
    @property
    def exact(self) -> bool: ...
    def __reduce__(self) -> Tuple[type[QuantPlan], Tuple[Any, ...]]:
        """Pickling: the constructor's arguments, admitted again when loaded."""

@final
class CastTessPlan:
    """A CastTess geometry and layout admitted once; ``execute`` runs it."""

    def __new__(
        cls,
        shape: Sequence[int],
        dtype: _DTypeLike,
        axes: _Axes,
        tile: _Tile,
        channels: _Channels = "compact",
        input_strides: Optional[Sequence[int]] = None,
    ) -> CastTessPlan: ...
    def execute(
        self,
        x: npt.ArrayLike,
        out: Optional[npt.NDArray[np.uint8]] = None,
        threads: int = 1,
    ) -> npt.NDArray[np.uint8]: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def capacity(self) -> int: ...
    @property
    def implementation(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    def __reduce__(self) -> Tuple[type[CastTessPlan], Tuple[Any, ...]]:
        """Pickling: the constructor's arguments, admitted again when loaded."""

@final
class DetessPlan:
    """One head's Detess-family call admitted once; ``run`` reads heads."""

    def __new__(
        cls,
        layout: Layout,
        op: Literal["detess", "detess_cast", "detess_dequant"] = "detess",
        multiplier: Optional[_Multiplier] = None,
        zero_point: int = 0,
        out_dtype: _FloatOut = ...,
        output_strides: Optional[Sequence[int]] = None,
    ) -> DetessPlan: ...
    def run(
        self,
        ofm: _Ofm,
        offset: int = 0,
        out: Optional[npt.NDArray[Any]] = None,
        threads: int = 1,
    ) -> npt.NDArray[Any]: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def op(self) -> str: ...
    @property
    def multiplier(self) -> Optional[float]: ...
    @property
    def zero_point(self) -> int: ...
    @property
    def out_dtype(self) -> str: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def output_strides(self) -> Tuple[int, ...]: ...
    @property
    def output_span(self) -> int: ...
    @property
    def span(self) -> int: ...
    @property
    def elements(self) -> int: ...
    @property
    def implementation(self) -> str: ...
    def __reduce__(self) -> Tuple[type[DetessPlan], Tuple[Any, ...]]:
        """Pickling: the constructor's arguments, admitted again when loaded."""

def ev74_quant_encode_relocatable(plan: QuantPlan) -> bytes: ...
def ev74_casttess_encode_relocatable(plan: CastTessPlan) -> bytes: ...
def ev74_detess_encode_relocatable(plan: DetessPlan) -> bytes: ...
def ev74_quant_bind(
    plan: QuantPlan, packet: bytes, input: Tuple[int, int], output: Tuple[int, int]
) -> bytes: ...
def ev74_casttess_bind(
    plan: CastTessPlan, packet: bytes, input: Tuple[int, int], output: Tuple[int, int]
) -> bytes: ...
def ev74_detess_bind(
    plan: DetessPlan, packet: bytes, input: Tuple[int, int], output: Tuple[int, int]
) -> bytes: ...
def ev74_preproc_encode_relocatable(plan: PreprocPlan) -> bytes: ...
def ev74_preproc_bind(
    plan: PreprocPlan, packet: bytes, input: Tuple[int, int], output: Tuple[int, int]
) -> bytes: ...
def ev74_decode(packet: bytes, validate: bool = True) -> Dict[str, Union[int, bytes]]: ...
def _quantize_with_fp_control(
    x: npt.ArrayLike, multiplier: _Multiplier, control: int, exact: bool = False
) -> npt.NDArray[np.int8]: ...

__all__ = [
    "SimakError",
    "__version__",
    "SIMD_ROUTES",
    "quantize",
    "casttess",
    "quanttess",
    "untile",
    "dequantize",
    "preprocess",
    "detess",
    "detess_cast",
    "detess_dequant",
    "calibrate_absmax",
    "ev74_quant_encode_relocatable",
    "ev74_casttess_encode_relocatable",
    "ev74_detess_encode_relocatable",
    "ev74_quant_bind",
    "ev74_casttess_bind",
    "ev74_detess_bind",
    "ev74_preproc_encode_relocatable",
    "ev74_preproc_bind",
    "ev74_decode",
    "_quantize_with_fp_control",
    "QuantPlan",
    "CastTessPlan",
    "Layout",
    "DetessPlan",
    "PreprocPlan",
    "Model",
    "ModelStage",
]

#: Preproc's frame formats (SPEC §13).
_Format = Literal["rgb", "bgr", "rgbx", "bgrx", "gray", "nv12", "i420"]
#: Preproc's outputs: FP32 or INT8 (Quant) strided, INT8 (QuantTess) or BF16 (CastTess) tiled.
_To = Literal["f32", "i8", "quanttess", "casttess"]
#: A frame: one uint8 array in OpenCV's conventions, or NV12 (Y, UV) / I420 (Y, U, V) planes.
_Frame = Union[
    npt.NDArray[np.uint8],
    Tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]],
    Tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8], npt.NDArray[np.uint8]],
]
#: One value, or one per output channel.
_PerChannel = Union[float, Sequence[float]]

def preprocess(
    frame: _Frame,
    format: _Format = "rgb",
    mean: _PerChannel = 0.0,
    std: _PerChannel = 1.0,
    divisor: float = 255.0,
    bgr: bool = False,
    border: Tuple[int, int, int, int] = (0, 0, 0, 0),
    pad_value: Union[int, Sequence[int]] = 0,
    to: _To = "f32",
    multiplier: Optional[_Multiplier] = None,
    zero_point: int = 0,
    rounding: _Rounding = "nearest-even",
    axes: Optional[_Axes] = None,
    tile: Optional[_Tile] = None,
    channels: _Channels = "compact",
    out: Optional[npt.NDArray[Any]] = None,
    threads: int = 1,
) -> npt.NDArray[Any]:
    """8-bit camera frames to the accelerator's input in one pass (SPEC §13): float32 or
    int8 ``[H', W', C]`` (``[N, H', W', C]``), or the 16-byte aligned ``uint8`` tiled
    buffer of quanttess / casttess."""

@final
class PreprocPlan:
    """A Preproc call admitted once (format, size, batch, parameters, the 256-entry tables);
    ``execute`` runs frames of that size."""

    def __new__(
        cls,
        height: int,
        width: int,
        format: _Format = "nv12",
        mean: _PerChannel = 0.0,
        std: _PerChannel = 1.0,
        divisor: float = 255.0,
        bgr: bool = False,
        border: Tuple[int, int, int, int] = (0, 0, 0, 0),
        pad_value: Union[int, Sequence[int]] = 0,
        to: _To = "f32",
        multiplier: Optional[_Multiplier] = None,
        zero_point: int = 0,
        rounding: _Rounding = "nearest-even",
        axes: Optional[_Axes] = None,
        tile: Optional[_Tile] = None,
        channels: _Channels = "compact",
        batch: Optional[int] = None,
        row_strides: Optional[Sequence[int]] = None,
    ) -> PreprocPlan: ...
    def execute(
        self,
        frame: _Frame,
        out: Optional[npt.NDArray[Any]] = None,
        threads: int = 1,
    ) -> npt.NDArray[Any]: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def height(self) -> int: ...
    @property
    def width(self) -> int: ...
    @property
    def format(self) -> str: ...
    @property
    def to(self) -> str: ...
    @property
    def batch(self) -> Optional[int]: ...
    @property
    def input_span(self) -> int: ...
    @property
    def output_span(self) -> int: ...
    @property
    def layout(self) -> Optional[Layout]: ...
    @property
    def implementation(self) -> str: ...
    def __reduce__(self) -> Tuple[type[PreprocPlan], Tuple[Any, ...]]: ...

@final
class ModelStage:
    """One stage of a :class:`Model`: an input (frame or tensor → IFM bytes) or an output
    (OFM head → tensor)."""

    @property
    def name(self) -> str: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def size(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def op(self) -> str: ...
    @property
    def params(self) -> Dict[str, str]: ...
    @property
    def plugins(self) -> List[str]: ...
    @property
    def input_bytes(self) -> int: ...
    @property
    def output_bytes(self) -> int: ...
    @property
    def backends(self) -> Tuple[str, ...]: ...
    @property
    def rules(self) -> List[str]: ...

@final
class Model:
    """A compiled model's boundary from its manifest (``*_mpk.json``, SPEC §14)."""

    @staticmethod
    def from_mpk(path: Union[str, os.PathLike[str]]) -> Model: ...
    @staticmethod
    def from_mpk_json(text: str) -> Model: ...
    @property
    def name(self) -> str: ...
    @property
    def batch(self) -> int: ...
    @property
    def ifm_size(self) -> int: ...
    @property
    def ofm_size(self) -> int: ...
    @property
    def inputs(self) -> List[ModelStage]: ...
    @property
    def outputs(self) -> List[ModelStage]: ...
    def preprocess(
        self,
        frame: npt.NDArray[Any],
        input: Union[int, str] = 0,
        out: Optional[npt.NDArray[np.uint8]] = None,
        threads: int = 1,
    ) -> npt.NDArray[np.uint8]: ...
    def postprocess(
        self,
        ofm: Union[npt.NDArray[np.uint8], bytes, bytearray, memoryview],
        threads: int = 1,
    ) -> Dict[str, npt.NDArray[Any]]: ...
