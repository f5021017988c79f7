"""Type stubs of the simak package (docs/contract.md is the normative contract)."""

from typing import Any, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import ev74 as ev74

__version__: str
ROUNDING_MODES: Tuple[str, str, str, str]
CHANNELS: Tuple[str, str]

Rounding = Literal["nearest-even", "toward-zero", "toward-positive", "toward-negative"]
Channels = Literal["compact", "pad16"]
#: The input format: a name or a NumPy dtype (numpy.float32, numpy.float16,
#: ml_dtypes.bfloat16).
DTypeLike = Union[Literal["f32", "bf16", "f16"], npt.DTypeLike]
#: The tiled format: "bf16" (CastTess) or "i8" (QuantTess).
TiledDType = Union[Literal["bf16", "i8"], npt.DTypeLike]
#: A role's axis: None (absent) or a nonnegative logical axis.
Axes = Sequence[Optional[int]]
#: Tile extents in elements for the roles D, H, W, C.
Tile = Sequence[int]
#: A multiplier: a float is rounded once to binary32 (nearest-even), np.float32 is exact.
Multiplier = Union[float, np.floating[Any]]

class SimakError(ValueError):
    """A broken rule of the contract; ``code`` is the stable code of docs/errors.md."""

    code: int

def quantize(
    x: npt.ArrayLike,
    multiplier: Multiplier,
    zero_point: int = 0,
    rounding: Rounding = "nearest-even",
    dtype: Optional[DTypeLike] = None,
    out: Optional[npt.NDArray[np.int8]] = None,
    threads: int = 1,
    exact: bool = False,
) -> npt.NDArray[np.int8]:
    """FP32/BF16/FP16 (rank 0..6, read in place) to INT8:
    ``saturate(round(x * multiplier) + zero_point)``; ``out`` or a new C-order array."""

def casttess(
    x: npt.ArrayLike,
    axes: Axes = (None, 0, 1, 2),
    tile: Tile = (1, 16, 64, 3),
    channels: Channels = "compact",
    dtype: Optional[DTypeLike] = None,
    out: Optional[npt.NDArray[np.uint8]] = None,
    threads: int = 1,
) -> npt.NDArray[np.uint8]:
    """FP32/BF16/FP16 (rank 1..6) to BF16 in the MlaTiled layout: ``out`` or a new 1-D
    ``uint8`` array of ``capacity`` bytes, 16-byte aligned."""

def quanttess(
    x: npt.ArrayLike,
    multiplier: Multiplier,
    axes: Axes = (None, 0, 1, 2),
    tile: Tile = (1, 16, 64, 3),
    channels: Channels = "compact",
    zero_point: int = 0,
    rounding: Rounding = "nearest-even",
    dtype: Optional[DTypeLike] = None,
    out: Optional[npt.NDArray[np.uint8]] = None,
    threads: int = 1,
    exact: bool = False,
) -> npt.NDArray[np.uint8]:
    """FP32/BF16/FP16 (rank 1..6) to INT8 in the MlaTiled layout (quantize's arithmetic)."""

def untile(t: npt.NDArray[np.uint8], layout: "Layout") -> npt.NDArray[Any]:
    """A tiled buffer back to its logical tensor: ``ml_dtypes.bfloat16`` (a "bf16" layout)
    or ``int8`` (an "i8" layout), C order."""

def dequantize(
    q: npt.NDArray[np.int8], multiplier: Multiplier, zero_point: int = 0
) -> npt.NDArray[np.float32]:
    """INT8 to FP32: ``(q - zero_point) / multiplier``, one binary32 division."""

class Layout:
    """The MlaTiled layout of a logical shape: sizes in bytes, tile counts, offsets."""

    def __init__(
        self,
        shape: Sequence[int],
        axes: Axes,
        tile: Tile,
        channels: Channels = "compact",
        dtype: TiledDType = "bf16",
    ) -> None: ...
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
    def dtype(self) -> str: ...
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
    def __eq__(self, other: object) -> bool: ...

class QuantPlan:
    """A Quant geometry and parameters admitted once; ``execute`` runs it."""

    def __init__(
        self,
        shape: Sequence[int],
        dtype: DTypeLike,
        multiplier: Multiplier,
        zero_point: int = 0,
        rounding: Rounding = "nearest-even",
        input_strides: Optional[Sequence[int]] = None,
        output_strides: Optional[Sequence[int]] = None,
        exact: bool = False,
    ) -> None: ...
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

class CastTessPlan:
    """A CastTess geometry and layout admitted once; ``execute`` runs it."""

    def __init__(
        self,
        shape: Sequence[int],
        dtype: DTypeLike,
        axes: Axes,
        tile: Tile,
        channels: Channels = "compact",
        input_strides: Optional[Sequence[int]] = None,
    ) -> None: ...
    def execute(
        self, x: npt.ArrayLike, out: Optional[npt.NDArray[np.uint8]] = None
    ) -> npt.NDArray[np.uint8]: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def capacity(self) -> int: ...
    @property
    def implementation(self) -> str: ...
    @property
    def dtype(self) -> str: ...

__all__: list[str]
