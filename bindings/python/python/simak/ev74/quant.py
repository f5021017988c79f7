"""EV74 Quant v1 descriptors (224 bytes, native entry ``simaai_kernels_ev74_quant_v1``)."""

from .. import _native

DESCRIPTOR_SIZE = 224
"""Bytes of a Quant v1 descriptor."""


def encode_relocatable(plan: "_native.QuantPlan") -> bytes:
    """The relocatable Quant v1 descriptor of ``plan``: every field set, address slots 0.

    Raises:
        SimakError: a port's span does not fit the device's 32-bit domain (0x301, 0x302).
    """
    return _native.ev74_quant_encode_relocatable(plan)


__all__ = ["DESCRIPTOR_SIZE", "encode_relocatable"]
