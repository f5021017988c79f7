"""EV74 Quant v1 descriptors (224 bytes, native entry ``simaai_kernels_ev74_quant_v1``)."""

from typing import Tuple

from .. import _native

DESCRIPTOR_SIZE = 224
"""Bytes of a Quant v1 descriptor."""


def encode_relocatable(plan: "_native.QuantPlan") -> bytes:
    """The relocatable Quant v1 descriptor of ``plan``: every field set, address slots 0.

    Raises:
        SimakError: a port's span does not fit the device's 32-bit domain (0x301, 0x302).
    """
    return _native.ev74_quant_encode_relocatable(plan)


def bind(
    plan: "_native.QuantPlan",
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
            misaligned (36, 50); a range passes 2^32 (34, 35); the two ranges overlap (37).
    """
    return _native.ev74_quant_bind(
        plan, bytes(packet), (int(input[0]), int(input[1])), (int(output[0]), int(output[1]))
    )


__all__ = ["DESCRIPTOR_SIZE", "bind", "encode_relocatable"]
