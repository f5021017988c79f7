"""Type stubs of the simak package (docs/contract.md is the normative contract)."""

from typing import Tuple

from . import _native as _native
from . import ev74 as ev74
from ._native import CastTessPlan as CastTessPlan
from ._native import Layout as Layout
from ._native import QuantPlan as QuantPlan
from ._native import SimakError as SimakError
from ._native import calibrate_absmax as calibrate_absmax
from ._native import casttess as casttess
from ._native import dequantize as dequantize
from ._native import quantize as quantize
from ._native import quanttess as quanttess
from ._native import untile as untile

__version__: str
ROUNDING_MODES: Tuple[str, str, str, str]
CHANNELS: Tuple[str, str]
__all__ = [
    "CHANNELS",
    "CastTessPlan",
    "Layout",
    "QuantPlan",
    "ROUNDING_MODES",
    "SimakError",
    "__version__",
    "calibrate_absmax",
    "casttess",
    "dequantize",
    "ev74",
    "quantize",
    "quanttess",
    "untile",
]
