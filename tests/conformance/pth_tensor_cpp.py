"""The server's float conversions, ported line for line from rwkv_lightning_cuda ``src/io/pth_tensor.cpp``
(68daa7f; the same functions at the mirror's ``src/pth_tensor.cpp``) (test helper, one value at a time):
``float_to_f16_bits`` (``half_mant = mant + 0x1000``: ties away from zero), ``float_to_bf16_bits`` (``bits +=
0x7fff + lsb``) and ``f16_bits_to_float``. load_package turns an fp32 ``.master`` record into these 16-bit values
(``load_tensor_select``) before it checks and hashes them.
"""

from __future__ import annotations

import struct


def _bits(value: float) -> int:
    result: int = struct.unpack("<I", struct.pack("<f", value))[0]
    return result


def float_to_f16_bits(value: float) -> int:
    bits = _bits(value)
    sign = (bits >> 16) & 0x8000
    exp = ((bits >> 23) & 0xFF) - 127
    mant = bits & 0x7FFFFF
    if exp == 128:
        return sign | (0x7C00 if mant == 0 else 0x7E00)
    if exp > 15:
        return sign | 0x7C00
    if exp >= -14:
        half_exp = exp + 15
        half_mant = mant + 0x1000
        if half_mant & 0x800000:
            half_mant = 0
            half_exp += 1
            if half_exp >= 31:
                return sign | 0x7C00
        return sign | (half_exp << 10) | (half_mant >> 13)
    if exp < -24:
        return sign
    mant |= 0x800000
    shift = -exp - 14
    half_mant = mant >> (shift + 13)
    round_bit = (mant >> (shift + 12)) & 1
    half_mant += round_bit
    return sign | half_mant


def float_to_bf16_bits(value: float) -> int:
    bits = _bits(value)
    lsb = (bits >> 16) & 1
    bits = (bits + 0x7FFF + lsb) & 0xFFFFFFFF
    return bits >> 16
