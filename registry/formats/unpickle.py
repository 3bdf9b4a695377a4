"""A pickle interpreter that understands only a flat dict of tensors, and executes nothing.

``torch.save`` (protocol 2) and rwkv_lightning_cuda's writer produce ``data.pkl`` from a
handful of opcodes. This module interprets exactly those, on inert Python values, and builds a
description of each tensor (storage key, dtype, offset, shape, stride). No callable is ever
looked up or called: a GLOBAL only names one of the allowed classes, and REDUCE is checked
against the two constructions torch writes.

What torch 2.13 writes (read with :mod:`pickletools` on real files):

- ``torch.save(dict)``: ``PROTO 2, EMPTY_DICT, BINPUT, MARK, (key, tensor)*, SETITEMS, STOP``;
  dicts of more than 1000 items get one MARK/SETITEMS batch per 1000 and SETITEM for a last
  single item.
- ``torch.save(module.state_dict())``: ``GLOBAL 'collections OrderedDict', EMPTY_TUPLE,
  REDUCE``, the items, then ``EMPTY_DICT`` holding ``'_metadata'`` -> an OrderedDict of
  ``{'version': 1}`` dicts, and ``BUILD``.
- a tensor: ``GLOBAL 'torch._utils _rebuild_tensor_v2'``, then the argument tuple
  ``(persistent storage, storage_offset, size, stride, requires_grad, OrderedDict())`` where
  the storage is ``BINPERSID`` of ``('storage', GLOBAL 'torch <X>Storage', key, location,
  numel)``; memo opcodes (BINPUT/BINGET) share strings, globals and tuples.
- rwkv_lightning_cuda: the same without memo opcodes, a plain ``EMPTY_DICT`` for the hooks,
  shape and stride always as ``MARK ... TUPLE``, BININT2/BININT for larger integers.

Rule codes raised: PTH003 global outside the allow-list, PTH004 opcode outside the allow-list,
PTH006 one storage declared twice differently, PTH007 duplicate tensor name, PTH009 anything
not shaped like a flat dict of tensors (including stack misuse and truncation), PTH010 resource
bounds (memo, stack, nesting, string length), PTH021 a storage location torch does not load data from.
"""

from __future__ import annotations

import pickletools
import re
import struct
from dataclasses import dataclass

from rwkv_registry.core.errors import CheckpointError
from rwkv_registry.formats.rules import refusal

__all__ = [
    "DTYPE_ITEMSIZE",
    "MAX_DEPTH",
    "MAX_MEMO",
    "MAX_STACK",
    "STORAGE_DTYPES",
    "ParsedPickle",
    "StorageRef",
    "TensorRef",
    "parse_tensor_pickle",
]

# torch storage class -> torch dtype name, and the itemsize of each dtype.
STORAGE_DTYPES: dict[str, str] = {
    "BFloat16Storage": "bfloat16",
    "HalfStorage": "float16",
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
}
_FLOATING = frozenset({"bfloat16", "float16", "float32", "float64"})
DTYPE_ITEMSIZE: dict[str, int] = {
    "bfloat16": 2,
    "float16": 2,
    "float32": 4,
    "float64": 8,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}

MAX_MEMO = 1_000_000  # memo entries
MAX_DEPTH = 1000  # MARK nesting and object nesting
MAX_STACK = 100_000  # values on the stack (the lightning writer puts every key and tensor under one MARK)
_MAX_GLOBAL_LINE = 256

_OPNAMES = {ord(op.code.encode("latin-1")): op.name for op in pickletools.opcodes}
_KEY = re.compile(r"[A-Za-z0-9_]{1,64}\Z")
_LOCATION = re.compile(r"[a-z_]{1,32}(:[0-9]{1,6})?\Z")
# Where torch.load(weights_only=True) puts the storage's bytes (torch/serialization.py, default_restore_location):
# "cpu" (_cpu_deserialize) and "cuda"/"cuda:N" (_deserialize("cuda", ...), the same bytes copied to the GPU).
# "meta" becomes an empty storage (_meta_deserialize: no data read), while the server (rwkv_lightning_cuda
# src/io/pth_tensor.cpp make_persistent_id, which never reads the location) reads the bytes: PTH021. Other
# devices (mps, xpu, hpu, mtia, privateuse1) need that hardware, and no trainer of these weights writes them.
_LOADED_LOCATION = re.compile(r"(cpu|cuda(:[0-9]{1,6})?)\Z")

_GLOBAL_ODICT = ("collections", "OrderedDict")
_GLOBAL_REBUILD = ("torch._utils", "_rebuild_tensor_v2")


def _fail(code: str, message: str) -> CheckpointError:
    return refusal(code, message)


@dataclass(frozen=True)
class StorageRef:
    """A storage named by a persistent id: ``('storage', torch.<X>Storage, key, location, numel)``."""

    key: str
    dtype: str
    location: str
    numel: int


@dataclass(frozen=True)
class TensorRef:
    """What ``_rebuild_tensor_v2`` would have been called with."""

    storage: StorageRef
    storage_offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    requires_grad: bool


@dataclass(frozen=True)
class ParsedPickle:
    """The top-level mapping: its kind and its items in pickle order."""

    container: str  # "dict" | "OrderedDict"
    items: list[tuple[str, TensorRef]]
    has_metadata: bool  # an OrderedDict with a BUILD of ``_metadata`` (module.state_dict())


class _Global:
    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __repr__(self) -> str:
        return f"global '{self.module} {self.name}'"


class _Tuple:
    __slots__ = ("depth", "items")

    def __init__(self, items: list) -> None:
        self.items = tuple(items)
        self.depth = 1 + max((_depth(v) for v in items), default=0)


class _Dict:
    __slots__ = ("built", "depth", "items", "ordered", "sealed")

    def __init__(self, ordered: bool) -> None:
        self.items: dict[str, object] = {}
        self.ordered = ordered
        self.sealed = False  # once inside another object it may not change (no cycles)
        self.built = False
        self.depth = 1


def _depth(value: object) -> int:
    return value.depth if isinstance(value, _Tuple | _Dict) else 0


def _describe(value: object) -> str:
    if isinstance(value, _Dict):
        return "an OrderedDict" if value.ordered else "a dict"
    if isinstance(value, _Tuple):
        return f"a tuple of {len(value.items)}"
    if isinstance(value, TensorRef):
        return "a tensor"
    if isinstance(value, StorageRef):
        return "a storage"
    if isinstance(value, _Global):
        return repr(value)
    return f"{type(value).__name__} {value!r:.60}"


def _seal(value: object) -> None:
    if isinstance(value, _Dict):
        value.sealed = True


def _is_int(value: object) -> bool:
    return type(value) is int


class _Machine:
    """State of one run of the interpreter."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.stack: list[object] = []
        self.marks: list[int] = []
        self.memo: dict[int, object] = {}
        self.storages: dict[str, StorageRef] = {}
        self.saw_proto = False
        self.op_at = 0

    # -- reading arguments ---------------------------------------------------------------
    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise _fail("PTH009", f"pickle truncated inside {self.opname()} at offset {self.op_at}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def line(self) -> bytes:
        end = self.data.find(b"\n", self.pos, self.pos + _MAX_GLOBAL_LINE)
        if end < 0:
            raise _fail("PTH009", f"GLOBAL at offset {self.op_at} has no line end within {_MAX_GLOBAL_LINE} bytes")
        out = self.data[self.pos : end]
        self.pos = end + 1
        return out

    def opname(self) -> str:
        return _OPNAMES.get(self.data[self.op_at], "unknown opcode")

    # -- stack discipline ----------------------------------------------------------------
    def floor(self) -> int:
        return self.marks[-1] if self.marks else 0

    def push(self, value: object) -> None:
        if len(self.stack) >= MAX_STACK:
            raise _fail("PTH010", f"pickle stack exceeds {MAX_STACK} values at offset {self.op_at}")
        if _depth(value) > MAX_DEPTH:
            raise _fail("PTH010", f"pickle nests objects deeper than {MAX_DEPTH} at offset {self.op_at}")
        self.stack.append(value)

    def pop(self, n: int) -> list[object]:
        if len(self.stack) - n < self.floor():
            raise _fail("PTH009", f"{self.opname()} at offset {self.op_at} pops more than the stack holds")
        out = self.stack[len(self.stack) - n :]
        del self.stack[len(self.stack) - n :]
        return out

    def pop_mark(self) -> list[object]:
        if not self.marks:
            raise _fail("PTH009", f"{self.opname()} at offset {self.op_at} without a MARK")
        start = self.marks.pop()
        out = self.stack[start:]
        del self.stack[start:]
        return out

    def top(self) -> object:
        if len(self.stack) <= self.floor():
            raise _fail("PTH009", f"{self.opname()} at offset {self.op_at} on an empty stack")
        return self.stack[-1]

    # -- objects -------------------------------------------------------------------------
    def make_tuple(self, items: list[object]) -> None:
        for item in items:
            _seal(item)
        self.push(_Tuple(items))

    def set_items(self, target: object, pairs: list[object]) -> None:
        if len(pairs) % 2:
            raise _fail("PTH009", f"SETITEMS at offset {self.op_at} with an odd number of values")
        for value in pairs[1::2]:
            _seal(value)
        if not isinstance(target, _Dict):
            raise _fail("PTH009", f"{self.opname()} at offset {self.op_at} on {_describe(target)}, not a dict")
        if target.sealed:
            raise _fail("PTH009", f"{self.opname()} at offset {self.op_at} changes a dict already in use")
        for key, value in zip(pairs[0::2], pairs[1::2], strict=True):
            if not isinstance(key, str):
                raise _fail("PTH009", f"dict key {_describe(key)} at offset {self.op_at} is not a string")
            if key in target.items:
                if isinstance(value, TensorRef) or isinstance(target.items[key], TensorRef):
                    raise _fail("PTH007", f"tensor name {key!r} appears twice (offset {self.op_at})")
                raise _fail("PTH009", f"dict key {key!r} appears twice (offset {self.op_at})")
            target.items[key] = value
            target.depth = max(target.depth, 1 + _depth(value))
            if target.depth > MAX_DEPTH:
                raise _fail("PTH010", f"pickle nests objects deeper than {MAX_DEPTH} at offset {self.op_at}")

    def global_(self) -> None:
        raw_module, raw_name = self.line(), self.line()
        try:
            module, name = raw_module.decode("ascii"), raw_name.decode("ascii")
        except UnicodeDecodeError:
            text = (raw_module + b" " + raw_name).decode("latin-1")
            raise _fail("PTH003", f"pickle global {text!r} at offset {self.op_at} is not allowed") from None
        allowed = (module, name) in (_GLOBAL_ODICT, _GLOBAL_REBUILD) or (module == "torch" and name in STORAGE_DTYPES)
        if not allowed:
            raise _fail("PTH003", f"pickle global '{module} {name}' at offset {self.op_at} is not allowed")
        self.push(_Global(module, name))

    def persistent(self, pid: object) -> StorageRef:
        at = f"persistent id at offset {self.op_at}"
        if not isinstance(pid, _Tuple) or len(pid.items) != 5:
            raise _fail("PTH009", f"{at} is {_describe(pid)}, not ('storage', class, key, location, numel)")
        tag, cls, key, location, numel = pid.items
        if tag != "storage":
            raise _fail("PTH009", f"{at} has tag {_describe(tag)}, not 'storage'")
        if not isinstance(cls, _Global) or cls.module != "torch" or cls.name not in STORAGE_DTYPES:
            raise _fail("PTH009", f"{at} has storage class {_describe(cls)}")
        if not isinstance(key, str) or not _KEY.match(key):
            raise _fail("PTH009", f"{at} has storage key {_describe(key)}")
        if not isinstance(location, str) or not _LOCATION.match(location):
            raise _fail("PTH009", f"{at} has location {_describe(location)}")
        if not _LOADED_LOCATION.match(location):
            raise _fail(
                "PTH021",
                f"{at}: storage {_describe(key)} is located on {location!r}; torch.load "
                + ("gives it no data" if location == "meta" else "cannot restore it on a CPU (or CUDA) machine"),
            )
        if not _is_int(numel) or numel < 0:
            raise _fail("PTH009", f"{at} has element count {_describe(numel)}")
        ref = StorageRef(key, STORAGE_DTYPES[cls.name], location, numel)
        known = self.storages.setdefault(key, ref)
        if known.dtype != ref.dtype or known.numel != ref.numel:
            raise _fail(
                "PTH006",
                f"storage {key!r} declared as {known.numel} x {known.dtype} and as {ref.numel} x {ref.dtype}",
            )
        return known

    def reduce(self, func: object, args: object) -> object:
        at = f"REDUCE at offset {self.op_at}"
        if not isinstance(func, _Global):
            raise _fail("PTH009", f"{at} calls {_describe(func)}")
        if not isinstance(args, _Tuple):
            raise _fail("PTH009", f"{at} passes {_describe(args)} as arguments")
        if (func.module, func.name) == _GLOBAL_ODICT:
            if args.items:
                raise _fail("PTH009", f"{at}: OrderedDict called with {len(args.items)} arguments")
            return _Dict(ordered=True)
        if (func.module, func.name) == _GLOBAL_REBUILD:
            return self.rebuild_tensor(args.items)
        raise _fail("PTH009", f"{at} calls {func!r}, which is not a constructor torch uses")

    def rebuild_tensor(self, args: tuple) -> TensorRef:
        at = f"_rebuild_tensor_v2 at offset {self.op_at}"
        if len(args) != 6:
            raise _fail("PTH009", f"{at} has {len(args)} arguments, not 6")
        storage, offset, shape, stride, requires_grad, hooks = args
        if not isinstance(storage, StorageRef):
            raise _fail("PTH009", f"{at}: storage is {_describe(storage)}")
        if not _is_int(offset) or offset < 0:
            raise _fail("PTH009", f"{at}: storage offset is {_describe(offset)}")
        dims: list[tuple[int, ...]] = []
        for what, value in (("size", shape), ("stride", stride)):
            if not isinstance(value, _Tuple) or not all(_is_int(v) and 0 <= v < 1 << 63 for v in value.items):
                raise _fail(
                    "PTH009", f"{at}: {what} is {_describe(value)}, not a tuple of non-negative 64-bit ints"
                )  # torch reads them as int64: 2**63 and above fail there even where a 0 dimension empties it
            dims.append(value.items)
        if len(dims[0]) != len(dims[1]):
            raise _fail("PTH009", f"{at}: size has {len(dims[0])} dimensions, stride {len(dims[1])}")
        if not isinstance(requires_grad, bool):
            raise _fail("PTH009", f"{at}: requires_grad is {_describe(requires_grad)}")
        if requires_grad and storage.dtype not in _FLOATING:  # torch.load: only floating tensors require grad
            raise _fail("PTH009", f"{at}: requires_grad on a {storage.dtype} tensor, which torch refuses to load")
        if not isinstance(hooks, _Dict) or hooks.items:
            raise _fail("PTH009", f"{at}: backward hooks are {_describe(hooks)}, not an empty dict")
        return TensorRef(storage, offset, dims[0], dims[1], requires_grad)

    def build(self, target: object, state: object) -> None:
        at = f"BUILD at offset {self.op_at}"
        _seal(state)
        if not isinstance(target, _Dict) or not target.ordered or target.sealed or target.built:
            raise _fail("PTH009", f"{at} on {_describe(target)}; only a state_dict's _metadata is accepted")
        if not isinstance(state, _Dict) or state.ordered or list(state.items) != ["_metadata"]:
            raise _fail("PTH009", f"{at} with state {_describe(state)}; only {{'_metadata': ...}} is accepted")
        meta = state.items["_metadata"]
        if not isinstance(meta, _Dict):
            raise _fail("PTH009", f"{at}: _metadata is {_describe(meta)}")
        for module, local in meta.items.items():
            if not isinstance(local, _Dict) or not all(
                v is None or isinstance(v, str | int) for v in local.items.values()
            ):
                raise _fail("PTH009", f"{at}: _metadata[{module!r}] is not a dict of plain values")
        target.built = True

    # -- main loop -----------------------------------------------------------------------
    def run(self) -> object:
        data = self.data
        while self.pos < len(data):
            self.op_at = self.pos
            op = data[self.pos]
            self.pos += 1
            handler = _HANDLERS.get(op)
            if handler is None:
                name = _OPNAMES.get(op, "unknown")
                raise _fail(
                    "PTH004", f"pickle opcode 0x{op:02x} ({name}) at offset {self.op_at} is outside the allow-list"
                )
            if handler(self):
                if self.pos != len(data):
                    raise _fail("PTH009", f"{len(data) - self.pos} bytes after STOP at offset {self.op_at}")
                if not self.saw_proto:
                    raise _fail("PTH009", "pickle lacks the PROTO 2 header torch writes")
                if self.marks or len(self.stack) != 1:
                    raise _fail("PTH009", f"STOP at offset {self.op_at} leaves {len(self.stack)} values on the stack")
                return self.stack[0]
        raise _fail("PTH009", "pickle ends without STOP (truncated)")


# -- opcode handlers: return True on STOP ---------------------------------------------------


def _op_proto(m: _Machine) -> bool:
    version = m.take(1)[0]
    if m.op_at != 0:
        raise _fail("PTH009", f"PROTO at offset {m.op_at}: only allowed as the first opcode")
    if version != 2:
        raise _fail("PTH004", f"pickle protocol {version} (offset 0): torch writes protocol 2")
    m.saw_proto = True
    return False


def _op_stop(m: _Machine) -> bool:
    return True


def _op_mark(m: _Machine) -> bool:
    if len(m.marks) >= MAX_DEPTH:
        raise _fail("PTH010", f"more than {MAX_DEPTH} nested MARKs at offset {m.op_at}")
    m.marks.append(len(m.stack))
    return False


def _op_empty_dict(m: _Machine) -> bool:
    m.push(_Dict(ordered=False))
    return False


def _op_empty_tuple(m: _Machine) -> bool:
    m.push(_Tuple([]))
    return False


def _op_binunicode(m: _Machine) -> bool:
    (n,) = struct.unpack("<I", m.take(4))
    if n > len(m.data) - m.pos:
        raise _fail(
            "PTH010",
            f"BINUNICODE at offset {m.op_at} declares {n} bytes, more than the {len(m.data) - m.pos} left",
        )
    raw = m.take(n)
    try:
        m.push(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _fail("PTH009", f"BINUNICODE at offset {m.op_at} is not UTF-8: {raw[:40]!r}") from None
    return False


def _put(m: _Machine, index: int) -> None:
    if index not in m.memo and len(m.memo) >= MAX_MEMO:
        raise _fail("PTH010", f"pickle memo exceeds {MAX_MEMO} entries at offset {m.op_at}")
    m.memo[index] = m.top()


def _get(m: _Machine, index: int) -> None:
    if index not in m.memo:
        raise _fail("PTH009", f"{m.opname()} at offset {m.op_at} reads memo {index}, never written")
    m.push(m.memo[index])


def _op_binput(m: _Machine) -> bool:
    _put(m, m.take(1)[0])
    return False


def _op_long_binput(m: _Machine) -> bool:
    _put(m, struct.unpack("<I", m.take(4))[0])
    return False


def _op_binget(m: _Machine) -> bool:
    _get(m, m.take(1)[0])
    return False


def _op_long_binget(m: _Machine) -> bool:
    _get(m, struct.unpack("<I", m.take(4))[0])
    return False


def _op_global(m: _Machine) -> bool:
    m.global_()
    return False


def _op_binint(m: _Machine) -> bool:
    m.push(struct.unpack("<i", m.take(4))[0])
    return False


def _op_binint1(m: _Machine) -> bool:
    m.push(m.take(1)[0])
    return False


def _op_binint2(m: _Machine) -> bool:
    m.push(struct.unpack("<H", m.take(2))[0])
    return False


def _op_long1(m: _Machine) -> bool:
    n = m.take(1)[0]
    m.push(int.from_bytes(m.take(n), "little", signed=True))
    return False


def _op_tuple(m: _Machine) -> bool:
    m.make_tuple(m.pop_mark())
    return False


def _op_tuple1(m: _Machine) -> bool:
    m.make_tuple(m.pop(1))
    return False


def _op_tuple2(m: _Machine) -> bool:
    m.make_tuple(m.pop(2))
    return False


def _op_tuple3(m: _Machine) -> bool:
    m.make_tuple(m.pop(3))
    return False


def _op_newtrue(m: _Machine) -> bool:
    m.push(True)
    return False


def _op_newfalse(m: _Machine) -> bool:
    m.push(False)
    return False


def _op_none(m: _Machine) -> bool:
    m.push(None)
    return False


def _op_binpersid(m: _Machine) -> bool:
    (pid,) = m.pop(1)
    m.push(m.persistent(pid))
    return False


def _op_reduce(m: _Machine) -> bool:
    func, args = m.pop(2)
    m.push(m.reduce(func, args))
    return False


def _op_build(m: _Machine) -> bool:
    (state,) = m.pop(1)
    m.build(m.top(), state)
    return False


def _op_setitem(m: _Machine) -> bool:
    pair = m.pop(2)
    m.set_items(m.top(), pair)
    return False


def _op_setitems(m: _Machine) -> bool:
    pairs = m.pop_mark()
    m.set_items(m.top(), pairs)
    return False


_HANDLERS = {
    0x80: _op_proto,
    ord("."): _op_stop,
    ord("("): _op_mark,
    ord("}"): _op_empty_dict,
    ord(")"): _op_empty_tuple,
    ord("X"): _op_binunicode,
    ord("q"): _op_binput,
    ord("r"): _op_long_binput,
    ord("h"): _op_binget,
    ord("j"): _op_long_binget,
    ord("c"): _op_global,
    ord("J"): _op_binint,
    ord("K"): _op_binint1,
    ord("M"): _op_binint2,
    0x8A: _op_long1,
    ord("t"): _op_tuple,
    0x85: _op_tuple1,
    0x86: _op_tuple2,
    0x87: _op_tuple3,
    0x88: _op_newtrue,
    0x89: _op_newfalse,
    ord("N"): _op_none,
    ord("Q"): _op_binpersid,
    ord("R"): _op_reduce,
    ord("b"): _op_build,
    ord("s"): _op_setitem,
    ord("u"): _op_setitems,
}


def parse_tensor_pickle(data: bytes | memoryview) -> ParsedPickle:
    """Interpret ``data.pkl`` of a torch checkpoint without executing it.

    Returns the top-level mapping's items (name, :class:`TensorRef`) in pickle order. Raises
    :class:`CheckpointError` (PTH003, PTH004, PTH006, PTH007, PTH009, PTH010) on anything that
    is not a flat dict or OrderedDict of tensors as torch.save and rwkv_lightning_cuda write it.
    """
    machine = _Machine(bytes(data))
    result = machine.run()
    if not isinstance(result, _Dict):
        raise _fail("PTH009", f"pickle holds {_describe(result)}, not a dict of tensors")
    items: list[tuple[str, TensorRef]] = []
    for name, value in result.items.items():
        if not isinstance(value, TensorRef):
            raise _fail("PTH009", f"value of {name!r} is {_describe(value)}, not a tensor")
        items.append((name, value))
    return ParsedPickle("OrderedDict" if result.ordered else "dict", items, result.built)
