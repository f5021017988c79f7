"""The EV74 descriptors (``docs/contract.md`` §7): relocatable packets from plans, and
their fields back.

- ``simak.ev74.quant.encode_relocatable(plan)``: the 224-byte Quant v1 descriptor of a
  :class:`simak.QuantPlan`, both address slots 0;
- ``simak.ev74.casttess.encode_relocatable(plan)``: the 216-byte CastTess v1 descriptor of
  a :class:`simak.CastTessPlan`;
- ``simak.ev74.detess.encode_relocatable(plan)``: the 224-byte Detess v1, DetessCast v1
  or DetessDequant v1 descriptor of one head's :class:`simak.DetessPlan`;
- ``simak.ev74.preproc.encode_relocatable(plan)``: the 368-byte Preproc v1 descriptor of a
  :class:`simak.PreprocPlan`;
- :func:`decode`: a descriptor's fields as a dict, after the device's validation;
  :func:`fields` lists them without validating.
"""

from typing import Dict, Union

from .. import _native
from . import casttess, detess, preproc, quant

BytesLike = Union[bytes, bytearray, memoryview]


def decode(packet: BytesLike) -> Dict[str, Union[int, bytes]]:
    """Validates an EV74 descriptor as the device does and returns its fields.

    The entry is told by the magic word (``b"SKQT"`` Quant v1, ``b"SKCT"`` CastTess v1,
    ``b"SKDT"``, ``b"SKDC"``, ``b"SKDQ"`` the Detess-family entries, ``b"SKPP"`` Preproc v1),
    else by the length when one entry alone has it (216 bytes: CastTess v1; 368 bytes:
    Preproc v1), else the Quant v1 rules judge it. A relocatable packet (both address slots 0) is held
    to every rule but the bound-address ones; a bound packet to all of them.

    Args:
        packet: the descriptor bytes (``bytes``, ``bytearray``, ``memoryview`` or a
            ``uint8`` array).

    Returns:
        A dict from field name to value, in wire order, with the names of
        ``simak packet decode --json`` (``"magic"``, ``"version"``, ..., ``"extents[0]"``,
        ...): the magic as ``bytes``, every other field as ``int``.

    Raises:
        SimakError: the first broken rule, with its descriptor code (1 to 58, 80 to 97).
    """
    return _native.ev74_decode(bytes(packet), True)


def fields(packet: BytesLike) -> Dict[str, Union[int, bytes]]:
    """The fields of a descriptor as :func:`decode` returns them, without validating.

    Raises:
        SimakError: code 1 when ``packet`` is not the descriptor's size.
    """
    return _native.ev74_decode(bytes(packet), False)


__all__ = ["casttess", "decode", "detess", "fields", "preproc", "quant"]
