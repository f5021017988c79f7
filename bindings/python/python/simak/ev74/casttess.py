"""EV74 CastTess v1 descriptors (216 bytes, native entry ``simaai_kernels_ev74_casttess_v1``)."""

from typing import Tuple

from .. import _native

DESCRIPTOR_SIZE = 216
"""Bytes of a CastTess v1 descriptor."""


def encode_relocatable(plan: "_native.CastTessPlan") -> bytes:
    """The relocatable CastTess v1 descriptor of ``plan``: every field set, address slots 0.

    Raises:
        SimakError: the input span or the tiled capacity does not fit the device's 32-bit
            domain (0x301, 0x302).
    """
    return _native.ev74_casttess_encode_relocatable(plan)


def bind(
    plan: "_native.CastTessPlan",
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
            misaligned (36; 50: the tiled output needs 16 bytes); a range passes 2^32 (34, 35); the two ranges overlap (37).
    """
    return _native.ev74_casttess_bind(
        plan, bytes(packet), (int(input[0]), int(input[1])), (int(output[0]), int(output[1]))
    )


__all__ = ["DESCRIPTOR_SIZE", "bind", "encode_relocatable"]
