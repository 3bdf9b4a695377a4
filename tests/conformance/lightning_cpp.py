"""rwkv_lightning_cuda's own serializers, ported line for line (test helper; shares no code with rwkv_registry).

From Alic-Li/rwkv_lightning_cuda, read whole with the search tool:

- ``src/io/pth_writer.cpp`` (43ceb30) ``write_pth(path, tensors, miss_manifest)``: the pickle (``p{0x80, 2, '}',
  '('}``; per tensor ``pickle_string(name)``, ``pickle_global("torch._utils", "_rebuild_tensor_v2")``, ``'(' '('``,
  ``pickle_string("storage")``, ``pickle_global("torch", BFloat16Storage|HalfStorage|FloatStorage)``,
  ``pickle_string(std::to_string(i))``, ``pickle_string("cpu")``, ``pickle_int(n)``, ``'t' 'Q'``, ``pickle_int(0)``,
  ``'('`` dims ``'t'``, ``'('`` contiguous strides ``'t'``, ``0x89 '}' 't' 'R'``; then ``'u' '.'``), the entries
  ``archive/data/<i>``, ``archive/data.pkl``, ``archive/byteorder`` ("little"), ``archive/version`` ("3\\n") and,
  when ``miss_manifest`` is not empty, ``archive/miss.json``; and ``write_zip``: local headers ``u32 0x04034b50,
  u16 20, u16 0 (flags), u16 0 (method: stored), u16 0, u16 0 (time, date), crc, size, size, name length, u16 0``,
  the name and the data, unaligned; central headers ``0x02014b50, 20, 20, 0, 0, 0, 0, crc, size, size, name
  length, 0, 0, 0, 0, u32 0, offset``; the end record ``0x06054b50, 0, 0, count, count, central size, central
  offset, 0``. ``pickle_int``: ``K`` for 0…255, ``M`` for 256…65535, else ``J`` (u32 of the int32).
- ``include/rwkv/io/pth_writer.hpp``: ``WriteTensor{name, shape, fp16, data, bf16}``.
- JsonCpp (open-source-parsers/jsoncpp 1.9.5 ``src/lib_json/json_writer.cpp``), as the C++ calls it:
  ``json()`` in adapter.cpp (``StreamWriterBuilder w; w["indentation"] = ""``) and ``StreamWriterBuilder{}`` /
  ``operator<<`` in trainer.cpp (the defaults: ``indentation`` "\\t", ``commentStyle`` "All", so every non-empty
  array is written on several lines, ``colonSymbol`` " : ", no final newline): ``BuiltStyledStreamWriter``
  ``writeValue``, ``writeArrayValue``, ``writeIndent``, ``writeWithIndent``; ``valueToString(double)`` ``%.17g``
  plus ``.0`` when the text has neither ``.`` nor ``e``; ``valueToQuotedStringN`` escapes.

Values are Python's: ``None``, ``bool``, ``int`` (a JsonCpp Int64, or UInt64 above 2^63-1), ``float`` (a real),
``str``, ``list``, ``dict`` (a ``std::map``: keys in byte order).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# --- pth_writer.cpp ---------------------------------------------------------------------------------


@dataclass
class WriteTensor:
    """include/rwkv/io/pth_writer.hpp ``WriteTensor``: 16-bit when ``fp16`` or ``bf16``, else float32."""

    name: str
    shape: Sequence[int]
    fp16: bool = False
    data: bytes = b""
    bf16: bool = False


def _u16(value: int) -> bytes:
    return struct.pack("<H", value & 0xFFFF)


def _u32(value: int) -> bytes:
    return struct.pack("<I", value & 0xFFFFFFFF)


def _pickle_string(value: str) -> bytes:  # pickle_string: 'X', u32 size, bytes
    raw = value.encode()
    return b"X" + _u32(len(raw)) + raw


def _pickle_int(value: int) -> bytes:  # pickle_int(std::int32_t)
    if 0 <= value <= 255:
        return b"K" + bytes([value])
    if 0 <= value <= 65535:
        return b"M" + _u16(value)
    return b"J" + _u32(value)


def _pickle_global(module: str, name: str) -> bytes:  # pickle_global: 'c' module '\n' name '\n'
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def write_zip(entries: Iterable[tuple[str, bytes]]) -> bytes:
    """pth_writer.cpp ``write_zip``: stored entries, then the central directory and the end record."""
    out = bytearray()
    done: list[tuple[str, bytes, int, int]] = []
    for name, data in entries:
        crc = zlib.crc32(data) & 0xFFFFFFFF
        offset = len(out)
        raw_name = name.encode()
        out += _u32(0x04034B50) + _u16(20) + _u16(0) + _u16(0) + _u16(0) + _u16(0)
        out += _u32(crc) + _u32(len(data)) + _u32(len(data)) + _u16(len(raw_name)) + _u16(0)
        out += raw_name + data
        done.append((name, data, crc, offset))
    central_offset = len(out)
    for name, data, crc, offset in done:
        raw_name = name.encode()
        out += _u32(0x02014B50) + _u16(20) + _u16(20) + _u16(0) + _u16(0) + _u16(0) + _u16(0)
        out += _u32(crc) + _u32(len(data)) + _u32(len(data)) + _u16(len(raw_name))
        out += _u16(0) + _u16(0) + _u16(0) + _u16(0) + _u32(0) + _u32(offset)
        out += raw_name
    central_size = len(out) - central_offset
    out += _u32(0x06054B50) + _u16(0) + _u16(0) + _u16(len(done)) + _u16(len(done))
    out += _u32(central_size) + _u32(central_offset) + _u16(0)
    return bytes(out)


def tensor_pickle(tensors: Sequence[WriteTensor]) -> bytes:
    """The ``archive/data.pkl`` write_pth builds (and its checks: ambiguous dtype, invalid shape, data size)."""
    p = bytearray([0x80, 2, ord("}"), ord("(")])
    for i, t in enumerate(tensors):
        if t.fp16 and t.bf16:
            raise ValueError("ambiguous PTH dtype")
        n = 1
        for d in t.shape:
            if d <= 0 or n > 0x7FFFFFFF // d:
                raise ValueError("invalid PTH shape")
            n *= d
        if len(t.data) != n * (2 if (t.fp16 or t.bf16) else 4):
            raise ValueError("PTH data size mismatch")
        p += _pickle_string(t.name)
        p += _pickle_global("torch._utils", "_rebuild_tensor_v2")
        p += b"(("
        p += _pickle_string("storage")
        p += _pickle_global("torch", "BFloat16Storage" if t.bf16 else ("HalfStorage" if t.fp16 else "FloatStorage"))
        p += _pickle_string(str(i))
        p += _pickle_string("cpu")
        p += _pickle_int(n)
        p += b"tQ"
        p += _pickle_int(0)
        p += b"(" + b"".join(_pickle_int(d) for d in t.shape) + b"t"
        stride = [0] * len(t.shape)
        step = 1
        for j in range(len(stride) - 1, -1, -1):
            stride[j] = step
            step *= t.shape[j]
        p += b"(" + b"".join(_pickle_int(d) for d in stride) + b"t"
        p += bytes([0x89]) + b"}tR"
    p += b"u."
    return bytes(p)


def write_pth(tensors: Sequence[WriteTensor], miss_manifest: str | bytes = "", *, pickle: bytes | None = None) -> bytes:
    """The bytes ``llm_infer::write_pth(path, tensors, miss_manifest)`` writes (``pickle``: another data.pkl, for
    hostile tests)."""
    p = tensor_pickle(tensors) if pickle is None else pickle
    entries = [(f"archive/data/{i}", bytes(t.data)) for i, t in enumerate(tensors)]
    entries.append(("archive/data.pkl", p))
    entries.append(("archive/byteorder", b"little"))
    entries.append(("archive/version", b"3\n"))
    manifest = miss_manifest.encode() if isinstance(miss_manifest, str) else bytes(miss_manifest)
    if manifest:  # if (!miss_manifest.empty())
        entries.append(("archive/miss.json", manifest))
    return write_zip(entries)


# --- the earlier test helper's API (tests/lightning_writer.py), on the port above -----------------------

STORAGE_OF = {"bfloat16": "BFloat16Storage", "float16": "HalfStorage", "float32": "FloatStorage"}
ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}


def _as_spec(value: Any) -> tuple[str, tuple[int, ...], bytes]:
    """(dtype, shape, raw bytes) from a torch tensor or a (dtype, shape, bytes) triple."""
    if isinstance(value, tuple):
        dtype, shape, raw = value
        return dtype, tuple(shape), bytes(raw)
    import torch

    t = value.detach().contiguous().cpu()
    dtype = str(t.dtype).replace("torch.", "")
    return dtype, tuple(t.shape), t.reshape(-1).view(torch.uint8).numpy().tobytes()


def write_tensors(tensors: Mapping[str, Any]) -> list[WriteTensor]:
    """``WriteTensor`` records for ``{name: torch tensor or (dtype, shape, raw)}`` (bf16, fp16 or fp32 only)."""
    out = []
    for name, value in tensors.items():
        dtype, shape, raw = _as_spec(value)
        if dtype not in STORAGE_OF:
            raise ValueError(f"{name}: the trainer writes only bf16/fp16/fp32, not {dtype}")
        out.append(WriteTensor(name, list(shape), dtype == "float16", raw, dtype == "bfloat16"))
    return out


def lightning_pickle(specs: Sequence[tuple[str, str, tuple[int, ...]]]) -> bytes:
    """data.pkl for (name, dtype, shape) items, storage i for item i."""
    tensors = []
    for name, dtype, shape in specs:
        n = 1
        for d in shape:
            n *= d
        tensors.append(
            WriteTensor(name, list(shape), dtype == "float16", bytes(n * ITEMSIZE[dtype]), dtype == "bfloat16")
        )
    return tensor_pickle(tensors)


def lightning_bytes(
    tensors: Mapping[str, Any], miss_json: bytes | None = None, *, pickle: bytes | None = None
) -> bytes:
    """The whole file for ``{name: torch tensor or (dtype, shape, raw)}``; ``pickle`` replaces data.pkl."""
    return write_pth(write_tensors(tensors), miss_json or b"", pickle=pickle)


def write_lightning(path: str | Path, tensors: Mapping[str, Any], miss_json: bytes | None = None) -> Path:
    """Write a checkpoint like rwkv_lightning_cuda to ``path``."""
    p = Path(path)
    p.write_bytes(lightning_bytes(tensors, miss_json))
    return p


# --- JsonCpp's StreamWriterBuilder -----------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _real(x: float) -> str:
    """valueToString(double, useSpecialFloats=false, precision=17, significantDigits)."""
    if x != x:
        return "null"
    if x in (float("inf"), float("-inf")):
        return "1e+9999" if x > 0 else "-1e+9999"
    text = "%.17g" % x
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def _quoted(s: str) -> str:
    """valueToQuotedStringN(emitUTF8=false): code points below 0x20 and above 0x7F as \\u escapes."""
    out = ['"']
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
            continue
        cp = ord(ch)
        if cp < 0x20 or 0x80 <= cp < 0x10000:
            out.append(f"\\u{cp:04x}")
        elif cp >= 0x10000:
            cp -= 0x10000
            out.append(f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


@dataclass
class _Styled:
    """BuiltStyledStreamWriter with commentStyle "All" (arrays always multi-line) and no comments."""

    indentation: str
    out: list[str] = field(default_factory=list)
    indent_string: str = ""
    indented: bool = False

    def write(self, root: Any) -> str:
        self.indented = True  # write(): indented_ = true; writeValue(root); endingLineFeedSymbol_ ""
        self.write_value(root)
        return "".join(self.out)

    def write_indent(self) -> None:
        if self.indentation:
            self.out.append("\n" + self.indent_string)

    def write_with_indent(self, value: str) -> None:
        if not self.indented:
            self.write_indent()
        self.out.append(value)
        self.indented = False

    def write_value(self, value: Any) -> None:
        if value is None:
            self.out.append("null")
        elif value is True or value is False:
            self.out.append("true" if value else "false")
        elif isinstance(value, int):
            self.out.append(str(value))
        elif isinstance(value, float):
            self.out.append(_real(value))
        elif isinstance(value, str):
            self.out.append(_quoted(value))
        elif isinstance(value, list):
            self.write_array(value)
        elif isinstance(value, dict):
            if not value:
                self.out.append("{}")
                return
            self.write_with_indent("{")
            self.indent_string += self.indentation
            names = sorted(value, key=lambda k: k.encode())
            for i, name in enumerate(names):
                self.write_with_indent(_quoted(name))
                self.out.append(" : " if self.indentation else ":")
                self.write_value(value[name])
                if i + 1 == len(names):
                    break
                self.out.append(",")
            self.indent_string = self.indent_string[: len(self.indent_string) - len(self.indentation)]
            self.write_with_indent("}")
        else:
            raise TypeError(type(value))

    def write_array(self, value: list[Any]) -> None:
        if not value:
            self.out.append("[]")
            return
        self.write_with_indent("[")  # isMultiLine: cs_ == CommentStyle::All
        self.indent_string += self.indentation
        for i, child in enumerate(value):
            if not self.indented:
                self.write_indent()
            self.indented = True
            self.write_value(child)
            self.indented = False
            if i + 1 == len(value):
                break
            self.out.append(",")
        self.indent_string = self.indent_string[: len(self.indent_string) - len(self.indentation)]
        self.write_with_indent("]")


def json_compact(value: Any) -> str:
    """adapter.cpp ``json(v)``: ``StreamWriterBuilder w; w["indentation"] = ""; Json::writeString(w, v)``."""
    return _Styled("").write(value)


def json_styled(value: Any) -> str:
    """``Json::writeString(Json::StreamWriterBuilder{}, v)`` and ``std::ofstream << v`` (the defaults)."""
    return _Styled("\t").write(value)
