"""Type stubs of the simak package (docs/contract.md is the normative contract)."""

from typing import Tuple

from . import _native as _native
from . import ev74 as ev74
from ._native import CastTessPlan as CastTessPlan
from ._native import DetessPlan as DetessPlan
from ._native import Layout as Layout
from ._native import Model as Model
from ._native import ModelStage as ModelStage
from ._native import PreprocPlan as PreprocPlan
from ._native import QuantPlan as QuantPlan
from ._native import SimakError as SimakError
from ._native import calibrate_absmax as calibrate_absmax
from ._native import casttess as casttess
from ._native import dequantize as dequantize
from ._native import detess as detess
from ._native import detess_cast as detess_cast
from ._native import detess_dequant as detess_dequant
from ._native import preprocess as preprocess
from ._native import quantize as quantize
from ._native import quanttess as quanttess
from ._native import untile as untile

__version__: str
ROUNDING_MODES: Tuple[str, str, str, str]
CHANNELS: Tuple[str, str, str]
TILED_DTYPES: Tuple[str, str, str, str]
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
