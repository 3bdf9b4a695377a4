"""The differential check: what the tool accepts, torch (and the other readers) read identically.

For one file (a :class:`diffgen.Sample`, or any bytes), :func:`check` runs

- the tool's reader, the function ``validate`` and ``add`` read weights with
  (``rwkv_registry.formats.ckpt.open_checkpoint`` over the file's bytes, as ``facts_from_buffer`` calls it);
- if the tool accepts the file:

  * ``torch-cpu``: ``torch.load(path, weights_only=True, map_location="cpu", mmap=False)`` must
    return a dict with the same tensor names (same order), dtypes, shapes and bytes; torch raising
    is a disagreement (the tool accepted a file torch cannot read);
  * ``torch-mmap``: the same with ``mmap=True`` (torch then takes each storage's offset from the
    local header itself, without reading it through miniz);
  * ``torch-default``: the same with the default ``map_location`` (tensors go to the device their
    storage names): a tensor that comes back without data (``meta``) or with other bytes is a
    disagreement; an error (e.g. ``cuda`` on a machine without one, as for any GPU-saved file)
    is only counted;
  * ``zipfile``: Python's :mod:`zipfile` must open the archive and list the same members in the same
    order;
  * ``lightning``: a model of rwkv_lightning_cuda's reader (:func:`lightning_read`, written from its
    source, see there): if it reads the file, the same tensors and the same ``miss.json``; its
    refusals (it reads bf16 and fp32 storages only) are counted, not failed;

- for a ``.safetensors`` file the tool accepts, ``safetensors.safe_open`` (framework ``pt``) must
  list the same tensors with the same dtypes, shapes and bytes.

A tool crash (any exception but :class:`CheckpointError`) is a disagreement whatever the input.
torch is only ever given files the tool accepted (it is never run on a refused, possibly hostile
file), always with ``weights_only=True``.
"""

from __future__ import annotations

import os
import struct
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Disagreement", "Outcome", "check", "check_bytes", "lightning_read", "tool_read"]

FAIL_READERS = ("tool", "torch-cpu", "torch-mmap", "torch-default", "zipfile", "lightning", "safetensors")


@dataclass(frozen=True)
class Disagreement:
    """One reader that read the file otherwise than the tool."""

    reader: str
    what: str


@dataclass
class Outcome:
    """The check of one file."""

    accepted: bool
    code: str | None  # the tool's rule when it refused
    message: str = ""
    disagreements: list[Disagreement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # counted, not failed: lightning refusals, torch-default errors

    @property
    def ok(self) -> bool:
        return not self.disagreements


Tensors = dict[str, tuple[str, tuple[int, ...], bytes]]


@dataclass
class ToolRead:
    kind: str
    tensors: Tensors
    entries: list[str]
    manifest: bytes | None


def tool_read(data: bytes) -> ToolRead:
    """The tool's reading of ``data`` (raises CheckpointError when it refuses)."""
    from rwkv_registry.formats.ckpt import MemorySource, open_checkpoint

    with MemorySource(data) as src:
        ck = open_checkpoint(src)
        tensors = {n: (t.dtype, tuple(t.shape), bytes(ck.tensor_bytes(n))) for n, t in ck.tensors.items()}
        manifest = None if ck.miss_manifest is None else bytes(ck.miss_manifest)
        return ToolRead(ck.kind, tensors, ck.entry_names(), manifest)


_ON_DEVICE = b"\0<on device> "  # stands for the bytes of a tensor torch put on another device (meta: none)


def _torch_tensors(obj: Any) -> Tensors:
    import torch

    if not isinstance(obj, dict):
        raise TypeError(f"torch.load returned {type(obj).__name__}, not a dict")
    out: Tensors = {}
    for name, t in obj.items():
        if not isinstance(name, str) or not isinstance(t, torch.Tensor):
            raise TypeError(f"item {name!r}: {type(t).__name__}")
        if t.device.type != "cpu":
            out[name] = (str(t.dtype).removeprefix("torch."), tuple(t.shape), _ON_DEVICE + str(t.device).encode())
            continue
        if t.is_contiguous():  # the bytes torch read, as stored (a copy would normalise bool bytes to 0/1)
            storage = torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage())
            start = t.storage_offset() * t.element_size()
            raw = storage.numpy().tobytes()[start : start + t.numel() * t.element_size()]
        else:  # the tool refuses non-contiguous tensors; read the values in row-major order
            dense = torch.empty(tuple(t.shape), dtype=t.dtype).copy_(t.detach())
            raw = dense.reshape(-1).view(torch.uint8).numpy().tobytes() if dense.numel() else b""
        out[name] = (str(t.dtype).removeprefix("torch."), tuple(t.shape), raw)
    return out


def _compare(reader: str, ours: Tensors, theirs: Tensors) -> list[Disagreement]:
    if list(ours) != list(theirs):
        only_ours = [n for n in ours if n not in theirs][:3]
        only_theirs = [n for n in theirs if n not in ours][:3]
        what = f"tensor names differ: tool {len(ours)} ({only_ours} only here), {reader} {len(theirs)} ({only_theirs})"
        if not only_ours and not only_theirs:
            what = "tensor order differs"
        return [Disagreement(reader, what)]
    out = []
    for name, (dtype, shape, raw) in ours.items():
        t_dtype, t_shape, t_raw = theirs[name]
        if (dtype, shape) != (t_dtype, t_shape):
            out.append(Disagreement(reader, f"{name}: tool {dtype} {list(shape)}, {reader} {t_dtype} {list(t_shape)}"))
        elif t_raw.startswith(_ON_DEVICE):
            device = t_raw[len(_ON_DEVICE) :].decode()
            out.append(
                Disagreement(
                    reader, f"{name}: {reader} gives a tensor on {device}" + (" (no data)" if device == "meta" else "")
                )
            )
        elif raw != t_raw:
            first = next(
                (i for i, (a, b) in enumerate(zip(raw, t_raw, strict=False)) if a != b), min(len(raw), len(t_raw))
            )
            out.append(
                Disagreement(reader, f"{name}: bytes differ from byte {first} ({len(raw)} vs {len(t_raw)} bytes)")
            )
    return out


def _torch_load(path: Path, **kwargs: Any) -> Tensors:
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _torch_tensors(torch.load(path, weights_only=True, **kwargs))


def _short(exc: BaseException) -> str:
    text = str(exc).split("\n", 1)[0]
    return f"{type(exc).__name__}: {text[:200]}"


def _zipfile_check(path: Path, tool: ToolRead) -> list[Disagreement]:
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if names != tool.entries:
                return [Disagreement("zipfile", f"members differ: zipfile {names[:8]}, tool {tool.entries[:8]}")]
            return []
    except Exception as exc:
        return [Disagreement("zipfile", f"zipfile cannot open it: {_short(exc)}")]


def check_bytes(data: bytes, path: Path, *, suffix: str = ".pth") -> Outcome:
    """Run every reader on ``data`` (written to ``path``, which must end with ``suffix``)."""
    try:
        tool = tool_read(data)
    except Exception as exc:
        from rwkv_registry.core.errors import CheckpointError

        if isinstance(exc, CheckpointError):
            return Outcome(False, exc.code, exc.message)
        tb = traceback.format_exception(exc)[-3:]
        return Outcome(False, None, _short(exc), [Disagreement("tool", "crash: " + "".join(tb)[-600:])])
    path.write_bytes(data)
    out = Outcome(True, None)
    try:
        if tool.kind == "safetensors":
            out.disagreements += _safetensors_check(path, tool)
            return out
        variants: list[tuple[str, dict[str, Any]]] = [
            ("torch-cpu", {"map_location": "cpu", "mmap": False}),
            ("torch-mmap", {"map_location": "cpu", "mmap": True}),
            ("torch-default", {"mmap": False}),
        ]
        for reader, kwargs in variants:
            try:
                theirs = _torch_load(path, **kwargs)
            except Exception as exc:
                if reader == "torch-default":
                    out.notes.append(f"torch-default raised {_short(exc)[:80]}")
                else:
                    out.disagreements.append(Disagreement(reader, f"torch raised {_short(exc)}"))
                continue
            out.disagreements += _compare(reader, tool.tensors, theirs)
        out.disagreements += _zipfile_check(path, tool)
        try:
            light = lightning_read(data)
        except LightningError as exc:
            out.notes.append(f"lightning refuses: {str(exc)[:80]}")
        else:
            subset = {n: v for n, v in tool.tensors.items() if n in light.tensors}
            if len(subset) < len(tool.tensors) and list(subset) == list(light.tensors):
                out.notes.append(f"lightning reads {len(subset)} of {len(tool.tensors)} tensors")
            out.disagreements += _compare(
                "lightning", subset if list(subset) == list(light.tensors) else tool.tensors, light.tensors
            )
            if light.manifest != tool.manifest:
                out.disagreements.append(
                    Disagreement(
                        "lightning", f"miss.json: lightning {_clip(light.manifest)}, tool {_clip(tool.manifest)}"
                    )
                )
    finally:
        try:
            path.unlink()
        except OSError:
            pass
    return out


def _clip(raw: bytes | None) -> str:
    return "none" if raw is None else f"{len(raw)} bytes"


def check(sample: Any, workdir: Path) -> Outcome:
    """:func:`check_bytes` for a :class:`diffgen.Sample` (file named after its class and seed)."""
    path = workdir / f"{sample.klass}-{sample.seed}{sample.suffix}"
    return check_bytes(sample.data, path, suffix=sample.suffix)


# --- safetensors -------------------------------------------------------------------------------------------


def _safetensors_check(path: Path, tool: ToolRead) -> list[Disagreement]:
    try:
        from safetensors import safe_open

        theirs: Tensors = {}
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 - safe_open is not a mapping
                theirs.update(_torch_tensors({name: f.get_tensor(name)}))
    except Exception as exc:
        return [Disagreement("safetensors", f"safetensors raised {_short(exc)}")]
    ours = dict(sorted(tool.tensors.items()))
    return _compare("safetensors", ours, dict(sorted(theirs.items())))


# --- a model of rwkv_lightning_cuda's reader ---------------------------------------------------------------


class LightningError(Exception):
    """The model of rwkv_lightning_cuda's reader refuses the file (its Status::error)."""


@dataclass
class LightningRead:
    tensors: Tensors
    manifest: bytes | None


def _u16(b: bytes, at: int) -> int:
    if at + 2 > len(b):
        raise LightningError("read past the end")
    return int(struct.unpack_from("<H", b, at)[0])


def _u32(b: bytes, at: int) -> int:
    if at + 4 > len(b):
        raise LightningError("read past the end")
    return int(struct.unpack_from("<I", b, at)[0])


def _u64(b: bytes, at: int) -> int:
    if at + 8 > len(b):
        raise LightningError("read past the end")
    return int(struct.unpack_from("<Q", b, at)[0])


@dataclass
class _LEntry:
    name: str
    method: int
    csize: int
    usize: int
    local: int
    data_offset: int = 0


def _lightning_entries(b: bytes) -> list[_LEntry]:
    """``PthArchive::open`` (whole-file mode), Alic-Li/rwkv_lightning_cuda ``src/pth_archive.cpp``:
    the end record is the *last* ``PK\\x05\\x06`` within 64 KiB + 22 bytes of the end with 22 bytes
    after it (``find_eocd``; its comment length is not read); zip64 end records only when a plain
    field is saturated; a zip64 extra field is the *first* tag 0x0001 (``apply_zip64_extra``);
    entry data follows the local header's name and extra lengths (``compute_data_offsets``)."""
    if len(b) < 22:
        raise LightningError("file is too small to be a zip archive")
    lo = max(0, len(b) - (22 + 65535))
    pos = len(b) - 22
    while pos >= lo and b[pos : pos + 4] != b"PK\x05\x06":
        pos -= 1
    if pos < lo:
        raise LightningError("end of central directory not found")
    eocd = pos
    if _u16(b, eocd + 4) != 0 or _u16(b, eocd + 6) != 0:
        raise LightningError("multi-disk zip archives are not supported")
    count, cd_size, cd_offset = _u16(b, eocd + 10), _u32(b, eocd + 12), _u32(b, eocd + 16)
    if count == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        if eocd < 20 or _u32(b, eocd - 20) != 0x07064B50:
            raise LightningError("zip64 end of central directory locator not found")
        loc = eocd - 20
        if _u32(b, loc + 4) != 0 or _u32(b, loc + 16) != 1:
            raise LightningError("multi-disk zip64 archives are not supported")
        z = _u64(b, loc + 8)
        if z + 56 > len(b) or _u32(b, z) != 0x06064B50:
            raise LightningError("zip64 end of central directory missing")
        if _u32(b, z + 16) != 0 or _u32(b, z + 20) != 0:
            raise LightningError("multi-disk zip64 archives are not supported")
        count, cd_size, cd_offset = _u64(b, z + 32), _u64(b, z + 40), _u64(b, z + 48)
    if cd_offset + cd_size > len(b):
        raise LightningError("central directory range is out of file bounds")
    entries: list[_LEntry] = []
    pos = cd_offset
    for _ in range(count):
        if pos + 46 > len(b):
            raise LightningError("central directory header is truncated")
        if _u32(b, pos) != 0x02014B50:
            raise LightningError("central directory signature mismatch")
        csize, usize = _u32(b, pos + 20), _u32(b, pos + 24)
        nlen, elen, clen = _u16(b, pos + 28), _u16(b, pos + 30), _u16(b, pos + 32)
        local = _u32(b, pos + 42)
        name_at = pos + 46
        if name_at + nlen > len(b):
            raise LightningError("central directory file name is truncated")
        e = _LEntry(b[name_at : name_at + nlen].decode("latin-1"), _u16(b, pos + 10), csize, usize, local)
        need = [usize == 0xFFFFFFFF, csize == 0xFFFFFFFF, local == 0xFFFFFFFF]
        extra_at, extra_end = name_at + nlen, name_at + nlen + elen
        if extra_end > len(b):
            raise LightningError("central directory extra field is truncated")
        p = extra_at
        found = False
        while p + 4 <= extra_end:
            tag, size = _u16(b, p), _u16(b, p + 2)
            p += 4
            if p + size > extra_end:
                raise LightningError("central directory extra block is truncated")
            if tag == 1:
                q = p
                for k, wanted in enumerate(need):
                    if wanted:
                        if q + 8 > p + size:
                            raise LightningError("zip64 extended information is truncated")
                        value = _u64(b, q)
                        q += 8
                        if k == 0:
                            e.usize = value
                        elif k == 1:
                            e.csize = value
                        else:
                            e.local = value
                found = True
                break
            p += size
        if any(need) and not found:
            raise LightningError("zip64 extended information missing")
        entries.append(e)
        pos = name_at + nlen + elen + clen
    for e in entries:
        if e.local + 30 > len(b):
            raise LightningError("local header offset is out of range")
        if _u32(b, e.local) != 0x04034B50:
            raise LightningError("local header signature mismatch")
        e.data_offset = e.local + 30 + _u16(b, e.local + 26) + _u16(b, e.local + 28)
        if e.data_offset + e.csize > len(b):
            raise LightningError("entry data range is out of file bounds")
    return entries


def _stored(b: bytes, e: _LEntry) -> bytes:
    """``PthArchive::read_stored_entry``: method 0 only, ``uncompressed_size`` bytes, no CRC check."""
    if e.method != 0:
        raise LightningError("entry is compressed")
    if e.data_offset > len(b) or e.usize > len(b) - e.data_offset:
        raise LightningError("entry data range is out of file bounds")
    return b[e.data_offset : e.data_offset + e.usize]


_MARK = object()


class _LGlobal(tuple):
    pass


class _LStorage(tuple):
    pass


class _LTensor(tuple):
    pass


class _LDict:
    pass


def _lightning_pickle(p: bytes) -> list[tuple[str, str, str, int, int, tuple[int, ...], tuple[int, ...]]]:
    """``PickleTensorParser`` (src/io/pth_tensor.cpp): a stack machine over 30 opcodes; storages of
    ``torch.BFloat16Storage`` / ``torch.FloatStorage`` only; a tensor list is collected at SETITEMS
    when every item under the MARK is (string, tensor); SETITEM and BUILD discard their operands;
    the location in the persistent id is not looked at. Returns (name, dtype, key, storage numel,
    offset, shape, stride) in pickle order."""
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    out: list[tuple[str, str, str, int, int, tuple[int, ...], tuple[int, ...]]] = []
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(p):
            raise LightningError("truncated pickle")
        pos += n
        return p[pos - n : pos]

    def mark() -> int:
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is _MARK:
                return i
        return -1

    def line() -> bytes:
        nonlocal pos
        end = p.find(b"\n", pos)
        if end < 0:
            pos = len(p)
            return b""
        text = p[pos:end]
        pos = end + 1
        return text

    while pos < len(p):
        op = p[pos]
        pos += 1
        if op == 0x80:
            take(1)
        elif op == ord("}"):
            stack.append(_LDict())
        elif op == ord("("):
            stack.append(_MARK)
        elif op in (ord("q"), ord("r")):
            idx = take(1)[0] if op == ord("q") else struct.unpack("<I", take(4))[0]
            if not stack:
                raise LightningError("BINPUT stack underflow")
            memo[idx] = stack[-1]
        elif op in (ord("h"), ord("j")):
            idx = take(1)[0] if op == ord("h") else struct.unpack("<I", take(4))[0]
            if idx not in memo:
                raise LightningError("BINGET missing memo index")
            stack.append(memo[idx])
        elif op == ord("X"):
            n = struct.unpack("<I", take(4))[0]
            stack.append(take(n).decode("utf-8", "surrogateescape"))
        elif op == ord("c"):
            module, name = line(), line()
            if not module or not name:
                raise LightningError("malformed GLOBAL opcode")
            stack.append(_LGlobal((module.decode("latin-1"), name.decode("latin-1"))))
        elif op == ord("K"):
            stack.append(take(1)[0])
        elif op == ord("M"):
            stack.append(struct.unpack("<H", take(2))[0])
        elif op == ord("J"):
            stack.append(struct.unpack("<i", take(4))[0])
        elif op in (0x8A, 0x8B):
            n = take(1)[0] if op == 0x8A else struct.unpack("<I", take(4))[0]
            raw = take(n)
            if n > 8:
                raise LightningError("LONG does not fit int64")
            stack.append(int.from_bytes(raw, "little", signed=True) if n else 0)
        elif op == ord("t"):
            m = mark()
            if m < 0:
                raise LightningError("TUPLE without MARK")
            items = tuple(stack[m + 1 :])
            del stack[m:]
            stack.append(items)
        elif op == ord(")"):
            stack.append(())
        elif op in (0x85, 0x86, 0x87):
            n = op - 0x84
            if len(stack) < n:
                raise LightningError("tuple opcode underflow")
            items = tuple(stack[-n:])
            del stack[-n:]
            stack.append(items)
        elif op in (0x88, 0x89):
            stack.append(op == 0x88)
        elif op == ord("Q"):
            if not stack or type(stack[-1]) is not tuple:
                raise LightningError("BINPERSID expects a tuple persistent id")
            pid = stack.pop()
            if (len(pid) != 5 or not isinstance(pid[0], str) or not isinstance(pid[1], _LGlobal)
                    or not isinstance(pid[2], str) or not _is_int(pid[4]) or pid[0] != "storage"):  # fmt: skip
                raise LightningError("unsupported persistent id shape")
            cls = pid[1]
            dtypes = {("torch", "BFloat16Storage"): "bfloat16", ("torch", "FloatStorage"): "float32"}
            if tuple(cls) not in dtypes:
                raise LightningError(f"unsupported storage dtype {cls[0]}.{cls[1]}")
            stack.append(_LStorage((pid[2], pid[4] & 0xFFFFFFFFFFFFFFFF, dtypes[tuple(cls)])))
        elif op == ord("R"):
            if len(stack) < 2:
                raise LightningError("REDUCE stack underflow")
            args, func = stack.pop(), stack.pop()
            if not isinstance(func, _LGlobal) or type(args) is not tuple:
                raise LightningError("unsupported REDUCE operands")
            if tuple(func) == ("collections", "OrderedDict"):
                stack.append(_LDict())
            elif tuple(func) == ("torch._utils", "_rebuild_tensor_v2"):
                if (len(args) < 4 or not isinstance(args[0], _LStorage) or not _is_int(args[1])
                        or type(args[2]) is not tuple or type(args[3]) is not tuple):  # fmt: skip
                    raise LightningError("unsupported _rebuild_tensor_v2 arguments")
                shape = tuple(args[2]) if all(_is_int(v) for v in args[2]) else ()
                stride = tuple(args[3]) if all(_is_int(v) for v in args[3]) else ()
                if len(shape) != len(stride):
                    raise LightningError("tensor shape / stride rank mismatch")
                stack.append(_LTensor((args[0], args[1] & 0xFFFFFFFFFFFFFFFF, shape, stride)))
            else:
                raise LightningError(f"unsupported REDUCE callable {func[0]}.{func[1]}")
        elif op == ord("s"):
            if len(stack) < 3:
                raise LightningError("SETITEM stack underflow")
            del stack[-2:]
            if not isinstance(stack[-1], _LDict):
                raise LightningError("SETITEM target must be dict / OrderedDict")
        elif op == ord("u"):
            m = mark()
            if m <= 0 or not isinstance(stack[m - 1], _LDict):
                raise LightningError("SETITEMS without dict / OrderedDict and MARK")
            under = stack[m + 1 :]
            if len(under) % 2:
                raise LightningError("SETITEMS requires key/value pairs")
            pairs = list(zip(under[::2], under[1::2], strict=True))
            if pairs and all(isinstance(k, str) and isinstance(v, _LTensor) for k, v in pairs):
                for k, v in pairs:
                    storage, offset, shape, stride = v
                    out.append((k, storage[2], storage[0], storage[1], offset, shape, stride))
            del stack[m:]
        elif op == ord("b"):
            if len(stack) < 2:
                raise LightningError("BUILD stack underflow")
            stack.pop()
        elif op == ord("."):
            return out
        else:
            raise LightningError(f"unsupported pickle opcode 0x{op:02x}")
    raise LightningError("pickle STOP not found")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def lightning_read(data: bytes) -> LightningRead:
    """What rwkv_lightning_cuda reads from ``data``: its tensors (``parse_pth_tensor_records`` and
    ``load_tensor_select``, src/io/pth_tensor.cpp: the prefix is that of the first entry ending in
    ``/data.pkl``; entries are found by exact name, first in central-directory order (``find_entry``);
    a storage's size must be numel x itemsize; contiguous tensors only here, as the tool refuses
    the others) and its ``archive/miss.json`` (src/miss/adapter.cpp reads that exact name).

    The model is written from the stored sources (src/pth_archive.cpp at 39913e8, src/io/pth_tensor.cpp
    at 68daa7f); the server runs the reader of its own build. Raises :class:`LightningError`."""
    entries = _lightning_entries(data)
    prefix = next((e.name[: -len("/data.pkl")] for e in entries if e.name.endswith("/data.pkl")), "")
    if not prefix:
        raise LightningError("data.pkl entry not found")

    def find(name: str) -> _LEntry | None:
        return next((e for e in entries if e.name == name), None)

    pkl = find(prefix + "/data.pkl")
    assert pkl is not None
    records = _lightning_pickle(_stored(data, pkl))
    tensors: Tensors = {}
    for name, dtype, key, numel, offset, shape, stride in records:
        e = find(f"{prefix}/data/{key}")
        if e is None:
            raise LightningError(f"storage entry not found for tensor: {name}")
        storage = _stored(data, e)
        itemsize = 2 if dtype == "bfloat16" else 4
        if numel * itemsize != len(storage):
            raise LightningError(f"storage byte size mismatch for tensor: {name}")
        n = 1
        for d in shape:
            n = n * d if d >= 0 else 0
        expected = 1
        contiguous = len(shape) == len(stride)
        for d, s in zip(reversed(shape), reversed(stride), strict=False):
            if d == 0:
                break
            if d != 1 and s != expected:
                contiguous = False
                break
            expected *= d
        if not contiguous:
            raise LightningError(f"non-contiguous tensor {name} (not modelled)")
        if n and offset + n > numel:
            raise LightningError(f"tensor data range exceeds storage: {name}")
        tensors[name] = (dtype, shape, storage[offset * itemsize : (offset + n) * itemsize] if n else b"")
    miss = find("archive/miss.json")
    return LightningRead(tensors, _stored(data, miss) if miss is not None else None)


def workdir_for(base: Path) -> Path:
    """A per-process scratch folder (on /dev/shm when there is one)."""
    root = Path("/dev/shm") if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else base
    path = root / f"diffcheck-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path
