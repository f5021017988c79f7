"""EV74 CastTess v1 descriptors (216 bytes, native entry ``simaai_kernels_ev74_casttess_v1``)."""

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


__all__ = ["DESCRIPTOR_SIZE", "encode_relocatable"]
