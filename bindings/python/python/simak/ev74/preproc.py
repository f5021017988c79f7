"""EV74 Preproc v1 descriptors (368 bytes, ``b"SKPP"``, native entry
``simaai_kernels_ev74_preproc_v1``, route 0x34; ``docs/contract.md`` §7).

Encode one from a :class:`simak.PreprocPlan` (its frame geometry, normalization, border and
output), bind it to device regions, and check or list it with :func:`simak.ev74.decode`
and :func:`simak.ev74.fields`. The firmware's Preproc entry runs it (``simak preproc
--backend ev74-sim`` on the host simulator).
"""

from typing import Tuple

from .. import _native

DESCRIPTOR_SIZE = 368
"""Bytes of a Preproc v1 descriptor."""


def encode_relocatable(plan: "_native.PreprocPlan") -> bytes:
    """The relocatable descriptor of ``plan``: every field set, address slots 0.

    The frame is the plan's own geometry (its ``row_strides``, or rows of exactly their
    bytes; a batch's frame stride); the per-channel tables are not in the descriptor (the
    firmware builds them from the divisor, mean and std).

    Raises:
        SimakError: the frame's span or the output's span does not fit the device's 32-bit
            domain (0x301, 0x302).
    """
    return _native.ev74_preproc_encode_relocatable(plan)


def bind(
    plan: "_native.PreprocPlan",
    packet: bytes,
    input: Tuple[int, int],
    output: Tuple[int, int],
) -> bytes:
    """Binds ``packet``, the relocatable descriptor of ``plan`` (from
    :func:`encode_relocatable`), to device regions: ``input`` (the frame) and ``output`` are
    ``(bus address, capacity in bytes)``. Returns the bound descriptor; ``packet`` is not
    changed and can be bound again elsewhere (``docs/contract.md`` §6).

    Raises:
        SimakError: ``packet`` is not this plan's encoding (0x310); an address is 0 (38,
            39); a region is shorter than its port's span (0x311, 0x312); the output is
            misaligned (50: its element size, or 16 bytes for ``"quanttess"`` and
            ``"casttess"``; the frame binds at any byte); a range passes 2^32 (34, 35); the
            two ranges overlap (37).
    """
    return _native.ev74_preproc_bind(
        plan, bytes(packet), (int(input[0]), int(input[1])), (int(output[0]), int(output[1]))
    )


__all__ = ["DESCRIPTOR_SIZE", "bind", "encode_relocatable"]
