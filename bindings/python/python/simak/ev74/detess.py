"""EV74 Detess-family descriptors (224 bytes): Detess v1 (``b"SKDT"``, native entry
``simaai_kernels_ev74_detess_v1``), DetessCast v1 (``b"SKDC"``) and DetessDequant v1
(``b"SKDQ"``), one layout (``docs/contract.md`` §7).

Encode them here, check or list them with :func:`simak.ev74.decode` and
:func:`simak.ev74.fields`; the firmware runs them (one descriptor per head).
"""

from .. import _native

DESCRIPTOR_SIZE = 224
"""Bytes of a Detess-family descriptor."""


def encode_relocatable(plan: "_native.DetessPlan") -> bytes:
    """The relocatable descriptor of one head's ``plan``: every field set, address slots 0.

    The entry is the plan's op: ``"detess"`` → Detess v1, ``"detess_cast"`` →
    DetessCast v1, ``"detess_dequant"`` → DetessDequant v1 (with its multiplier and zero
    point). A multi-head OFM is one descriptor per head.

    Raises:
        SimakError: the head's span or the output's span does not fit the device's 32-bit
            domain (0x301, 0x302).
    """
    return _native.ev74_detess_encode_relocatable(plan)


__all__ = ["DESCRIPTOR_SIZE", "encode_relocatable"]
