"""EV74 Detess-family descriptors (224 bytes): Detess v1 (``b"SKDT"``, native entry
``simaai_kernels_ev74_detess_v1``), DetessCast v1 (``b"SKDC"``) and DetessDequant v1
(``b"SKDQ"``), one layout (``docs/contract.md`` §7).

Encode them here, check or list them with :func:`simak.ev74.decode` and
:func:`simak.ev74.fields`; the firmware runs them (one descriptor per head).
"""

from typing import Tuple

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


def bind(
    plan: "_native.DetessPlan",
    packet: bytes,
    input: Tuple[int, int],
    output: Tuple[int, int],
) -> bytes:
    """Binds ``packet``, the relocatable descriptor of ``plan`` (from
    :func:`encode_relocatable`), to device regions: ``input`` and ``output`` are
    ``(bus address, capacity in bytes)``. Returns the bound descriptor; ``packet`` is not
    changed and can be bound again elsewhere (``docs/contract.md`` §6).

    Raises:
        SimakError: ``packet`` is not this plan's encoding (0x310); an address is 0 (38,
            39); a region is shorter than its port's span (0x311, 0x312); an address is
            misaligned (36: the tiled input needs 16 bytes at tile alignment 16, else its element size; 50); a range passes 2^32 (34, 35); the two ranges overlap (37).
    """
    return _native.ev74_detess_bind(
        plan, bytes(packet), (int(input[0]), int(input[1])), (int(output[0]), int(output[1]))
    )


__all__ = ["DESCRIPTOR_SIZE", "bind", "encode_relocatable"]
