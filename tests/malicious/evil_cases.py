"""The malicious-file corpus: each case built deterministically from a marker path, never loaded here.

Every case is a weight file (a torch zip, a raw pickle, a safetensors file or a TorchScript
archive) modelled on a public scanner corpus or advisory. The pickle payloads, if a permissive
loader ran them (``pickle.load``, ``torch.load(weights_only=False)``, ``torch.jit.load``), would
only create the marker file; that is how the tests tell that nothing ran. ``code`` is the rule
our validator must report for the file.

Pickles are assembled opcode by opcode (:func:`call`, :func:`put` …) so that each case holds
exactly the trick it is named for, independent of the Python version that writes it.

Usage (tests and bench scripts)::

    from evil_cases import CASES, write_case
    path = write_case(CASES["posix-system"], tmp_path)       # tmp_path/posix-system.pth
    marker = marker_for(tmp_path, "posix-system")             # must never exist
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CASES", "Case", "marker_for", "write_case", "zip_archive"]

# --- a tiny pickle assembler (protocol-2 opcodes unless a case needs another) ------------------


def s(text: str) -> bytes:
    """BINUNICODE."""
    raw = text.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw


def i(value: int) -> bytes:
    """BININT1 / BININT / LONG1."""
    if 0 <= value < 256:
        return b"K" + bytes([value])
    if -(2**31) <= value < 2**31:
        return b"J" + struct.pack("<i", value)
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def g(module: str, name: str) -> bytes:
    """GLOBAL 'module name'."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


Arg = str | int | bytes | tuple


def v(value: Arg) -> bytes:
    """Opcodes pushing ``value``: a str, an int, a tuple of values, or raw opcodes (bytes)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return s(value)
    if isinstance(value, int):
        return i(value)
    return b"(" + b"".join(v(x) for x in value) + b"t"


def call(func: bytes, *args: Arg) -> bytes:
    """``func(*args)``: func is opcodes pushing a callable (usually :func:`g`)."""
    return func + v(tuple(args)) + b"R"


def put(n: int) -> bytes:
    """BINPUT n."""
    return b"q" + bytes([n])


def get(n: int) -> bytes:
    """BINGET n."""
    return b"h" + bytes([n])


def dict_of(value_ops: bytes, key: str = "w") -> bytes:
    """A whole protocol-2 pickle of ``{key: <value_ops>}``."""
    return b"\x80\x02}" + s(key) + value_ops + b"s."


def shell(marker: Path) -> str:
    return f"touch {marker}"


def py(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').close()"


# --- zip containers ----------------------------------------------------------------------------


@dataclass
class Member:
    """One zip member and what to falsify about it."""

    name: str
    data: bytes
    flags: int = 0
    method: int = 0  # 8: deflate the data here
    crc: int | None = None
    gap_before: bytes = b""  # bytes no entry explains, written before this member's local header
    local_extra: bytes = b""  # the local header's extra field
    central_extra: bytes = b""  # the central header's extra field
    comment: bytes = b""  # the central header's per-entry comment
    central_offset: int | None = None  # the central header's offset field (None: where the local header is)
    local_flags: int | None = None  # the local header's flags (None: ``flags``)
    version_needed: int = 20  # "version needed to extract", central and local header (rwkv_lightning_cuda: 20)


def zip_archive(members: list[Member], *, prefix: bytes = b"", suffix: bytes = b"", comment_length: int = 0) -> bytes:
    """A zip of ``members`` (offsets absolute, so ``prefix`` bytes make a polyglot), then ``suffix``; the end record
    declares ``comment_length`` bytes of comment (the caller appends them, or lies)."""
    body = bytearray(prefix)
    central = bytearray()
    for m in members:
        body += m.gap_before
        raw = m.name.encode("utf-8")
        stored = zlib.compress(m.data)[2:-4] if m.method == 8 else m.data
        crc = zlib.crc32(m.data) if m.crc is None else m.crc
        offset = len(body)
        lflags = m.flags if m.local_flags is None else m.local_flags
        head = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", m.version_needed, lflags, m.method, 0, 0, crc, len(stored),
                           len(m.data), len(raw), len(m.local_extra))  # fmt: skip
        body += head + raw + m.local_extra + stored
        at = offset if m.central_offset is None else m.central_offset
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, m.version_needed, m.flags, m.method, 0, 0, crc,
                               len(stored), len(m.data), len(raw), len(m.central_extra), len(m.comment), 0, 0, 0,
                               at)  # fmt: skip
        central += raw + m.central_extra + m.comment
    n = len(members)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(central), len(body), comment_length)
    return bytes(body + central + end) + suffix


def torch_members(pkl: bytes, storages: dict[str, bytes] | None = None, prefix: str = "archive") -> list[Member]:
    """The members torch/rwkv_lightning_cuda write around ``data.pkl``."""
    out = [Member(f"{prefix}/data/{k}", d) for k, d in (storages or {}).items()]
    return [*out, Member(f"{prefix}/data.pkl", pkl), Member(f"{prefix}/byteorder", b"little"),
            Member(f"{prefix}/version", b"3\n")]  # fmt: skip


def archive(pkl: bytes, storages: dict[str, bytes] | None = None) -> bytes:
    """A stored torch-style archive around ``pkl``."""
    return zip_archive(torch_members(pkl, storages))


def tensor_dict(tensors: list[tuple[str, str, str, int, tuple[int, ...], int]], *, hooks: bytes = b"}") -> bytes:
    """``{name: tensor}`` as torch writes it; each tensor (name, storage class, key, numel, shape, offset)."""
    out = bytearray(b"\x80\x02}(")
    for name, storage, key, numel, shape, offset in tensors:
        stride: list[int] = []
        step = 1
        for dim in reversed(shape):
            stride.insert(0, step)
            step *= dim
        pid = v(("storage", g("torch", storage), key, "cpu", numel)) + b"Q"
        out += s(name) + call(g("torch._utils", "_rebuild_tensor_v2"), pid, offset, tuple(shape), tuple(stride),
                              b"\x89", hooks)  # fmt: skip
    return bytes(out + b"u.")


GOOD_TENSOR = ("blocks.0.att.time_state", "FloatStorage", "0", 2, (2,), 0)
GOOD_STORAGE = {"0": struct.pack("<2f", 0.5, -0.25)}


def good_archive() -> bytes:
    """A valid one-tensor archive (the control: the wrapper itself is accepted)."""
    return archive(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)


# --- the cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One malicious file."""

    id: str
    title: str
    source: str  # the public corpus / advisory it is modelled on
    code: str  # the rule our validator must report
    build: Callable[[Path], bytes] = field(repr=False)  # marker path -> file bytes
    runs_code: bool = True  # would an unrestricted loader create the marker?
    needs_torch: bool = False


def _evil(kind: str) -> Callable[[Path], bytes]:
    """Single-REDUCE payloads ``{'w': module.name(args)}`` inside a torch archive."""

    def build(m: Path) -> bytes:
        payloads: dict[str, bytes] = {
            "posix-system": call(g("posix", "system"), shell(m)),
            "os-system": call(g("os", "system"), shell(m)),
            "nt-system": call(g("nt", "system"), shell(m)),
            "builtins-eval": call(g("builtins", "eval"), py(m)),
            "builtin-eval-py2": call(g("__builtin__", "eval"), py(m)),
            "builtins-exec": call(g("builtins", "exec"), py(m)),
            "subprocess-popen": call(g("subprocess", "Popen"), ("touch", str(m))),
            "subprocess-check-output": call(g("subprocess", "check_output"), ("touch", str(m))),
            "runpy-run-code": call(g("runpy", "_run_code"), py(m), b"}"),
            "pkgutil-resolve-name": call(call(g("pkgutil", "resolve_name"), "os:system"), shell(m)),
            "timeit-setup": call(g("timeit", "timeit"), "pass", py(m)),
            "cprofile-run": call(g("cProfile", "run"), py(m)),
            "pydoc-pipepager": call(g("pydoc", "pipepager"), "x", shell(m)),
            "torch-collect-env-run": call(g("torch.utils.collect_env", "run"), shell(m)),
            "functools-partial": call(call(g("functools", "partial"), g("os", "system"), shell(m))),
            "getattr-import-chain": call(
                call(g("builtins", "getattr"), call(g("builtins", "__import__"), "os"), "system"), shell(m)
            ),
            "operator-methodcaller": call(
                call(g("operator", "methodcaller"), "system", shell(m)), call(g("importlib", "import_module"), "os")
            ),
            "operator-attrgetter": call(
                call(call(g("operator", "attrgetter"), "system"), call(g("importlib", "import_module"), "os")),
                shell(m),
            ),
        }
        return archive(dict_of(payloads[kind]))

    return build


def _importlib_chain(m: Path) -> bytes:
    # import_module('os') first (kept in the memo), then getattr(<memo>, 'system')(command)
    body = b"\x80\x02}" + s("mod") + call(g("importlib", "import_module"), "os") + put(5) + b"s"
    body += s("w") + call(call(g("builtins", "getattr"), get(5), "system"), shell(m)) + b"s."
    return archive(body)


def _stack_global_memo(m: Path) -> bytes:
    # STACK_GLOBAL takes module and name from the stack: here from the memo, the trick that made
    # picklescan see `torch._utils _rebuild_tensor_v2` while `os system` was loaded
    decoy = b"(" + s("os") + put(0) + s("system") + put(1) + s("torch._utils") + put(2)
    decoy += s("_rebuild_tensor_v2") + put(3) + b"t"
    body = b"\x80\x02}" + s("decoy") + decoy + b"s" + s("w") + get(0) + get(1) + b"\x93" + v((shell(m),)) + b"Rs."
    return archive(body)


def _memoize_mix(m: Path) -> bytes:
    # BINPUT then MEMOIZE (protocol 4): a scanner that numbers MEMOIZE on its own counter reads the
    # wrong memo slots when STACK_GLOBAL's operands come back through BINGET
    decoy = b"(" + s("torch._utils") + put(0) + s("_rebuild_tensor_v2") + put(1) + b"t"
    evil = s("posix") + b"\x94" + s("system") + b"\x94" + b"\x93" + v((shell(m),)) + b"R"
    return archive(b"\x80\x02}" + s("decoy") + decoy + b"s" + s("w") + evil + b"s.")


def _protocol_4(m: Path) -> bytes:
    class Reduce:
        def __reduce__(self) -> tuple:
            return os.system, (shell(m),)

    return archive(pickle.dumps({"w": Reduce()}, protocol=4))


def _protocol_0_inst(m: Path) -> bytes:
    # protocol 0: INST pushes os.system(*args) in one opcode, no GLOBAL/REDUCE pair to look for
    text = "(S'" + shell(m) + "'\nios\nsystem\n."
    return archive(text.encode())


def _build_setstate(m: Path) -> bytes:
    # BUILD with a slot state {'__setstate__': os.system} plants a method; the next BUILD calls it
    odict = call(g("collections", "OrderedDict"))
    plant = b"(N}" + s("__setstate__") + g("os", "system") + b"stb"
    return archive(dict_of(odict + plant + s(shell(m)) + b"b"))


def _build_on_tensor(m: Path) -> bytes:
    # BUILD on a rebuilt tensor with an attribute state (torch's loader would setattr on it)
    pkl = tensor_dict([GOOD_TENSOR])[:-2]  # drop SETITEMS and STOP: the tensor is on the stack
    state = b"}" + s("__class__") + s("object") + b"s"
    return archive(pkl + state + b"bu.", GOOD_STORAGE)


def _build_odict_attrs(m: Path) -> bytes:
    # BUILD on the OrderedDict with a state other than {'_metadata': ...}
    body = call(g("collections", "OrderedDict")) + b"}" + s("_modules") + s(shell(m)) + b"sb"
    return archive(b"\x80\x02" + body + b".")


def _storage_class_evil(m: Path) -> bytes:
    pid = v(("storage", call(g("posix", "system"), shell(m)), "0", "cpu", 2)) + b"Q"
    rebuilt = call(g("torch._utils", "_rebuild_tensor_v2"), pid, 0, (2,), (1,), b"\x89", b"}")
    return archive(dict_of(rebuilt), GOOD_STORAGE)


def _backward_hooks(m: Path) -> bytes:
    hooks = call(g("collections", "OrderedDict")) + b"(" + s("0") + s(shell(m)) + b"u"
    return archive(tensor_dict([GOOD_TENSOR], hooks=hooks), GOOD_STORAGE)


def _storage_key_outside(m: Path) -> bytes:
    return archive(tensor_dict([("w", "FloatStorage", "../../../../etc/passwd", 2, (2,), 0)]), GOOD_STORAGE)


def _storage_key_missing(m: Path) -> bytes:
    return archive(tensor_dict([("w", "FloatStorage", "7", 2, (2,), 0)]), GOOD_STORAGE)


def _storage_numel_huge(m: Path) -> bytes:
    return archive(tensor_dict([("w", "FloatStorage", "0", 2**61, (2**61,), 0)]), GOOD_STORAGE)


def _tensor_beyond_storage(m: Path) -> bytes:
    return archive(tensor_dict([("w", "FloatStorage", "0", 2, (2, 1024), 0)]), GOOD_STORAGE)


def _duplicate_tensor(m: Path) -> bytes:
    pkl = tensor_dict([GOOD_TENSOR, (*GOOD_TENSOR[:2], "1", *GOOD_TENSOR[3:])])
    return archive(pkl, {"0": GOOD_STORAGE["0"], "1": struct.pack("<2f", float("nan"), 1.0)})


def _huge_binunicode(m: Path) -> bytes:
    return archive(b"\x80\x02}X" + struct.pack("<I", 0xFFFFFFF0) + b"w" * 64)


def _deep_marks(m: Path) -> bytes:
    return archive(b"\x80\x02" + b"(" * 100_000 + b"}.")


def _deep_tuples(m: Path) -> bytes:
    return archive(dict_of(b")" + b"\x85" * 50_000))


def _memo_flood(m: Path) -> bytes:
    puts = b"".join(b"r" + struct.pack("<I", n) for n in range(1_000_001))
    return archive(b"\x80\x02N" + puts + b"0}.")


def _memo_billion_laughs(m: Path) -> bytes:
    # each level is a pair of the level below through the memo: 2**60 leaves, 60 objects
    body = s("lol") + put(0)
    for n in range(60):
        body += get(n) + b"\x86" + put(n + 1)  # (x, x) from x on the stack and x from the memo
    return archive(b"\x80\x02}" + s("w") + body + b"s.")


def _memo_mutate_after_use(m: Path) -> bytes:
    # a dict stored in the memo, used as a value, then fetched again and changed (aliasing)
    inner = b"}" + put(9)
    body = b"\x80\x02}" + s("a") + inner + b"s" + s("b") + get(9) + s("evil") + s(shell(m)) + b"ss."
    return archive(body)


def _torchscript(m: Path) -> bytes:
    from ts_payload import torchscript_bytes  # imports torch

    return torchscript_bytes(str(m))


def _full_module(m: Path) -> bytes:
    import io

    import torch

    buf = io.BytesIO()
    torch.save(torch.nn.Linear(2, 2), buf)
    return buf.getvalue()


def _numpy_array(m: Path) -> bytes:
    body = call(g("numpy.core.multiarray", "_reconstruct"), g("numpy", "ndarray"), (0,), "b")
    return archive(dict_of(body))


def _nested_zip(m: Path) -> bytes:
    # a broken inner archive (bad CRC, bogus sizes) next to a malicious data.pkl: scanners that
    # recurse into it crashed; loaders read data.pkl only
    inner = zip_archive([Member("inner/data.pkl", b"\x80\x02}.", crc=1)])[:-6] + b"\xff\xff\xff\xff\x00\x00"
    pkl = dict_of(call(g("posix", "system"), shell(m)))
    return zip_archive([*torch_members(pkl), Member("archive/inner.zip", inner)])


def _zip_flag_bit(m: Path) -> bytes:
    members = torch_members(dict_of(call(g("posix", "system"), shell(m))))
    members[0].flags = 0x0001  # "encrypted", though it is not
    return zip_archive(members)


def _zip_bad_crc(m: Path) -> bytes:
    members = torch_members(dict_of(call(g("posix", "system"), shell(m))))
    members[0].crc = 0xDEADBEEF
    return zip_archive(members)


def _zip_duplicate_data_pkl(m: Path) -> bytes:
    benign = Member("archive/data.pkl", tensor_dict([GOOD_TENSOR]))
    evil = Member("archive/data.pkl", dict_of(call(g("posix", "system"), shell(m))))
    return zip_archive([Member("archive/data/0", GOOD_STORAGE["0"]), benign, evil,
                        Member("archive/byteorder", b"little"), Member("archive/version", b"3\n")])  # fmt: skip


def _zip_directory_attribute(m: Path) -> bytes:
    # the storage's external attributes carry the DOS directory bit: miniz extracts nothing for a
    # "directory", so torch.load fills the tensor from an uninitialised buffer (found by bench/fuzz.py)
    data = bytearray(archive(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE))
    central = data.find(b"PK\x01\x02")  # the first central header: archive/data/0
    struct.pack_into("<I", data, central + 38, 0x10)
    return bytes(data)


def _zip_traversal(m: Path) -> bytes:
    return zip_archive([*torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE),
                        Member("archive/../../../.bashrc", shell(m).encode())])  # fmt: skip


def _zip_deflated_pickle(m: Path) -> bytes:
    members = torch_members(dict_of(call(g("posix", "system"), shell(m))))
    members[0].method = 8
    return zip_archive(members)


def _zip_two_prefixes(m: Path) -> bytes:
    evil = torch_members(dict_of(call(g("posix", "system"), shell(m))), prefix="other")
    return zip_archive([*torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE), *evil])


def _raw_pickle(m: Path) -> bytes:
    return dict_of(call(g("posix", "system"), shell(m)))


def _polyglot_pickle_prefix(m: Path) -> bytes:
    # a pickle, then a valid archive with absolute offsets: zip readers that search for the end
    # record accept it, torch.load sees no zip magic at offset 0 and unpickles the prefix
    prefix = dict_of(call(g("posix", "system"), shell(m)))
    return zip_archive(torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE), prefix=prefix)


def _polyglot_hidden_gap(m: Path) -> bytes:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members[1].gap_before = dict_of(call(g("posix", "system"), shell(m)))  # between data/0 and data.pkl
    return zip_archive(members)


def _polyglot_safetensors_zip(m: Path) -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    header += b" " * (-len(header) % 8)
    st = struct.pack("<Q", len(header)) + header + GOOD_STORAGE["0"]
    return st + archive(dict_of(call(g("posix", "system"), shell(m))))


def _safetensors_header_bomb(m: Path) -> bytes:
    return struct.pack("<Q", 2**62) + b'{"w": {}}' + b" " * 7


# --- zip structure read differently by torch (miniz), rwkv_lightning_cuda and the validator (issue 26) ---------

NAN_STORAGE = {"0": struct.pack("<2f", float("nan"), float("nan"))}


def _evil_members(m: Path) -> list[Member]:
    return torch_members(dict_of(call(g("posix", "system"), shell(m))))


def hide_in_comment(outer: bytes, hidden: list[Member], *, after: bytes = b"", hidden_comment: int = 0) -> bytes:
    """``outer`` whose end record's comment holds a complete archive of ``hidden`` (offsets absolute), then
    ``after``: the validator before issue 26 took the outer end record (its comment fits), miniz and
    rwkv_lightning_cuda take the last signature, the hidden one."""
    placeholder = outer[:-2] + b"\0\0"
    whole = zip_archive(hidden, prefix=placeholder, comment_length=hidden_comment) + after
    return outer[:-2] + struct.pack("<H", len(whole) - len(outer)) + whole[len(outer) :]


def _eocd_comment_archive(m: Path) -> bytes:
    # two bytes after the hidden end record, so that only the outer one "fits" its comment
    return hide_in_comment(good_archive(), _evil_members(m), after=b"\0\0")


def _eocd_lying_comment(m: Path) -> bytes:
    # the hidden end record declares a 65535-byte comment the file does not have
    return hide_in_comment(good_archive(), _evil_members(m), hidden_comment=0xFFFF)


def _eocd_64k_junk(m: Path) -> bytes:
    hidden = len(hide_in_comment(good_archive(), _evil_members(m))) - len(good_archive())
    return hide_in_comment(good_archive(), _evil_members(m), after=b"\0" * (0xFFFF - hidden))


def _case_shadow_pkl(m: Path) -> bytes:
    benign = Member("archive/data.pkl", tensor_dict([GOOD_TENSOR]))
    evil = Member("archive/DATA.PKL", dict_of(call(g("posix", "system"), shell(m))))
    return zip_archive([Member("archive/data/0", GOOD_STORAGE["0"]), evil, benign,
                        Member("archive/byteorder", b"little"), Member("archive/version", b"3\n")])  # fmt: skip


def _case_shadow_storage(m: Path) -> bytes:
    return zip_archive([Member("archive/DATA/0", NAN_STORAGE["0"]), *torch_members(tensor_dict([GOOD_TENSOR]),
                        GOOD_STORAGE)])  # fmt: skip


def _zip64_extra_twice(m: Path) -> bytes:
    # data.pkl's offset is a zip64 value given twice: miniz and rwkv_lightning_cuda take the first copy (a local
    # header with the payload, hidden inside the storage's bytes), the validator before issue 26 the last
    evil_pkl = dict_of(call(g("posix", "system"), shell(m)))
    name = b"archive/data.pkl"
    hidden = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, zlib.crc32(evil_pkl), len(evil_pkl),
                         len(evil_pkl), len(name), 0) + name + evil_pkl  # fmt: skip
    hidden += bytes(-len(hidden) % 4)
    numel = len(hidden) // 4
    pkl = tensor_dict([("blocks.0.att.time_state", "FloatStorage", "0", numel, (numel,), 0)])
    storage_at = 0
    hidden_at = storage_at + 30 + len(b"archive/data/0")
    pkl_at = hidden_at + len(hidden)
    members = torch_members(pkl, {"0": hidden})
    first, second = struct.pack("<HHQ", 1, 8, hidden_at), struct.pack("<HHQ", 1, 8, pkl_at)
    members[1].central_offset, members[1].central_extra = 0xFFFFFFFF, first + second
    return zip_archive(members)


def _entry_comment_payload(m: Path) -> bytes:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members[1].comment = dict_of(call(g("posix", "system"), shell(m)))
    return zip_archive(members)


def _local_extra_payload(m: Path) -> bytes:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    payload = dict_of(call(g("posix", "system"), shell(m)))
    members[0].local_extra = struct.pack("<HH", 0xCAFE, len(payload)) + payload
    return zip_archive(members)


def _descriptor_gap(m: Path) -> bytes:
    # flag 0x08 on the storage and 16 bytes after it that are no data descriptor (no signature, no CRC)
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members[0].flags = 0x08
    members[1].gap_before = b"\x80\x02}q\x00." + bytes(10)
    return zip_archive(members)


def _local_flags_disagree(m: Path) -> bytes:
    # the local header announces a data descriptor the directory does not: a streaming reader looks for one
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members[0].local_flags = 0x08
    return zip_archive(members)


def _extra_member_payload(m: Path) -> bytes:
    return zip_archive([*torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE),
                        Member("archive/payload.pkl", dict_of(call(g("posix", "system"), shell(m))))])  # fmt: skip


def _no_version_record(m: Path) -> bytes:
    return zip_archive(torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)[:-1])


def _meta_location(m: Path) -> bytes:
    pid = v(("storage", g("torch", "FloatStorage"), "0", "meta", 2)) + b"Q"
    pkl = b"\x80\x02}(" + s("blocks.0.att.time_state")
    pkl += call(g("torch._utils", "_rebuild_tensor_v2"), pid, 0, (2,), (1,), b"\x89", b"}") + b"u."
    return archive(pkl, NAN_STORAGE)


def _version_needed_64(m: Path) -> bytes:
    # data.pkl "needs" version 6.4 to extract: torch (miniz) and the server never read the field and load the file,
    # Python's zipfile refuses to open it (NotImplementedError: zip file version 6.4)
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members[1].version_needed = 64
    return zip_archive(members)


def _miss_json_other_prefix(m: Path) -> bytes:
    # a torch.save-style prefix named after the file, with a manifest inside: the server looks up only
    # archive/miss.json and does not see it, torch never reads it, a reader of <prefix>/miss.json would
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE, prefix="adapter-final")
    manifest = json.dumps({"format_version": 1, "method": "miss", "content_version": "0" * 64}).encode()
    return zip_archive([*members, Member("adapter-final/miss.json", manifest)])


_EVIL = {
    "posix-system": ("os.system as pickled on Linux (posix.system)", "picklescan tests/data (os.system payloads)"),
    "os-system": ("GLOBAL 'os system' written by hand", "modelscan os.system cases"),
    "nt-system": ("os.system as pickled on Windows (nt.system)", "picklescan tests/data (nt.system)"),
    "builtins-eval": ("builtins.eval of Python source", "picklescan / modelscan eval cases"),
    "builtin-eval-py2": ("__builtin__.eval (protocol-2 import fixing)", "picklescan __builtin__ globals"),
    "builtins-exec": ("builtins.exec of Python source", "picklescan / modelscan exec cases"),
    "subprocess-popen": ("subprocess.Popen(['touch', …])", "modelscan subprocess cases"),
    "subprocess-check-output": ("subprocess.check_output", "picklescan subprocess globals"),
    "runpy-run-code": ("runpy._run_code(source, {})", "picklescan unsafe-globals list (runpy)"),
    "pkgutil-resolve-name": ("pkgutil.resolve_name('os:system')(…)", "picklescan GHSA-vvpj-8cmc-gx39"),
    "timeit-setup": ("timeit.timeit('pass', setup=<source>)", "picklescan unsafe-globals list (timeit)"),
    "cprofile-run": ("cProfile.run(<source>)", "modelscan PR #313 (cProfile.run)"),
    "pydoc-pipepager": ("pydoc.pipepager(text, <shell command>)", "picklescan unsafe-globals list (pydoc)"),
    "torch-collect-env-run": ("torch.utils.collect_env.run(<shell command>)", "google/saferpickle#18"),
    "functools-partial": ("functools.partial(os.system, …)()", "functools.partial gadgets"),
    "getattr-import-chain": ("getattr(__import__('os'), 'system')(…)", "getattr gadget chains"),
    "operator-methodcaller": ("operator.methodcaller('system', …)(os)", "trailofbits/fickling#190"),
    "operator-attrgetter": ("operator.attrgetter('system')(os)(…)", "picklescan #66 (attrgetter chains)"),
}

_CASE_LIST: list[Case] = [
    *(Case(k, t, src, "PTH003", _evil(k), runs_code=k != "nt-system") for k, (t, src) in _EVIL.items()),
    Case("importlib-chain", "getattr(importlib.import_module('os'), 'system')(…)", "picklescan #66 and PR #74",
         "PTH003", _importlib_chain),
    Case("stack-global-memo", "STACK_GLOBAL fed from the memo (scanner sees a safe global)",
         "picklescan #14 / imaginaryctf 'Safe Pickle'", "PTH004", _stack_global_memo),
    Case("memoize-mix", "MEMOIZE mixed with BINPUT, STACK_GLOBAL", "modelscan PR #54", "PTH004", _memoize_mix),
    Case("protocol-4", "pickle.dumps(protocol=4) of os.system", "picklescan tests/data (protocol 4)", "PTH004",
         _protocol_4),
    Case("protocol-0-inst", "protocol 0 INST 'os system' (no GLOBAL/REDUCE)", "protocol-0 INST payloads", "PTH004",
         _protocol_0_inst),
    Case("build-setstate", "BUILD plants __setstate__ = os.system, a second BUILD calls it",
         "BUILD __setstate__ injection", "PTH003", _build_setstate),
    Case("build-on-tensor", "BUILD with an attribute state on a tensor", "BUILD on arbitrary objects", "PTH009",
         _build_on_tensor, runs_code=False),
    Case("build-odict-attrs", "BUILD on the OrderedDict with a state other than _metadata",
         "BUILD on arbitrary objects", "PTH009", _build_odict_attrs, runs_code=False),
    Case("storage-class-evil", "persistent id whose storage class is os.system(…)", "modelaudit PR #1654",
         "PTH003", _storage_class_evil),
    Case("backward-hooks", "_rebuild_tensor_v2 with non-empty backward hooks", "torch _rebuild_tensor_v2 hooks",
         "PTH009", _backward_hooks, runs_code=False),
    Case("storage-key-outside", "storage key '../../../../etc/passwd' (outside the archive)",
         "zip path traversal via persistent id", "PTH009", _storage_key_outside, runs_code=False),
    Case("storage-key-missing", "storage key naming no archive entry", "modelaudit PR #1654", "PTH006",
         _storage_key_missing, runs_code=False),
    Case("storage-numel-huge", "storage declaring 2**61 elements in 8 bytes", "declared size beyond the file",
         "PTH006", _storage_numel_huge, runs_code=False),
    Case("tensor-beyond-storage", "tensor shape reaching past its storage", "out-of-bounds tensor view", "PTH006",
         _tensor_beyond_storage, runs_code=False),
    Case("duplicate-tensor", "one tensor name twice (the second shadows the first)", "dict key shadowing",
         "PTH007", _duplicate_tensor, runs_code=False),
    Case("huge-binunicode", "BINUNICODE declaring 4 GiB in a 64-byte pickle", "picklescan / fickling DoS cases",
         "PTH010", _huge_binunicode, runs_code=False),
    Case("deep-marks", "100,000 nested MARKs", "deep recursion", "PTH010", _deep_marks, runs_code=False),
    Case("deep-tuples", "tuples nested 50,000 deep", "deep recursion", "PTH010", _deep_tuples, runs_code=False),
    Case("memo-flood", "1,000,001 memo entries", "memo abuse", "PTH010", _memo_flood, runs_code=False),
    Case("memo-billion-laughs", "60 levels of pairs through the memo (2**60 leaves)", "memo abuse", "PTH009",
         _memo_billion_laughs, runs_code=False),
    Case("memo-mutate-after-use", "a memoized dict changed after it was used", "memo aliasing", "PTH009",
         _memo_mutate_after_use, runs_code=False),
    Case("torchscript-cve-2025-32434", "TorchScript archive whose __setstate__ creates a file",
         "CVE-2025-32434 (torch.load(weights_only=True) ran TorchScript)", "PTH005", _torchscript,
         needs_torch=True),
    Case("full-module", "torch.save(nn.Linear): the module class is a global", "modelscan torch cases", "PTH003",
         _full_module, runs_code=False, needs_torch=True),
    Case("numpy-array", "numpy.core.multiarray._reconstruct in a state dict", "modelscan numpy globals", "PTH003",
         _numpy_array, runs_code=False),
    Case("nested-zip", "malicious data.pkl next to a broken nested zip", "picklescan GHSA-7q5r-7gvp-wc82",
         "PTH019", _nested_zip),  # the member archive/inner.zip is refused first (PTH003 before issue 26)
    Case("zip-flag-bit", "data.pkl flagged encrypted, stored in clear", "picklescan GHSA-w8jq-xcqf-f792",
         "PTH011", _zip_flag_bit),
    Case("zip-bad-crc", "malicious data.pkl with a wrong CRC-32", "CVE-2025-10156 (picklescan ZIP CRC)", "PTH002",
         _zip_bad_crc),
    Case("zip-duplicate-data-pkl", "two data.pkl members, benign first", "zip name confusion", "PTH008",
         _zip_duplicate_data_pkl),
    Case("zip-directory-attribute", "storage member flagged as a directory (DOS attribute 0x10)",
         "found by bench/fuzz.py (torch reads uninitialised memory)", "PTH011", _zip_directory_attribute,
         runs_code=False),
    Case("zip-traversal", "member 'archive/../../../.bashrc'", "zip slip", "PTH008", _zip_traversal,
         runs_code=False),
    Case("zip-deflated-pickle", "data.pkl deflated (byte patterns hidden from scanners)", "scanner evasion",
         "PTH011", _zip_deflated_pickle),
    Case("zip-two-prefixes", "a second archive folder with its own malicious data.pkl",
         "modelaudit PR #1098 (hidden pickles)", "PTH008", _zip_two_prefixes, runs_code=False),
    Case("eocd-comment-archive", "a second archive (malicious data.pkl) inside the end record's comment",
         "issue 26 (hostile-input review)", "PTH014", _eocd_comment_archive),
    Case("eocd-lying-comment", "the hidden archive's end record declares a comment it lacks",
         "issue 26 (hostile-input review)", "PTH014", _eocd_lying_comment),
    Case("eocd-64k-junk", "a hidden archive and junk filling the 65535-byte comment", "issue 26 (hostile-input review)",
         "PTH014", _eocd_64k_junk),
    Case("case-shadow-data-pkl", "data.pkl benign, DATA.PKL malicious (miniz looks names up ignoring case)",
         "issue 26 (hostile-input review)", "PTH015", _case_shadow_pkl),
    Case("case-shadow-storage", "archive/DATA/0 of NaN beside the finite archive/data/0",
         "issue 26 (hostile-input review)", "PTH015", _case_shadow_storage, runs_code=False),
    Case("zip64-extra-twice", "data.pkl's zip64 offset given twice: first copy a payload hidden in a storage",
         "issue 26 (hostile-input review)", "PTH016", _zip64_extra_twice),
    Case("entry-comment-payload", "a pickle in data.pkl's per-entry comment", "issue 26 (hostile-input review)",
         "PTH017", _entry_comment_payload, runs_code=False),
    Case("local-extra-payload", "a pickle in an unknown local extra field", "issue 26 (hostile-input review)",
         "PTH017", _local_extra_payload, runs_code=False),
    Case("descriptor-gap", "16 unowned bytes where a data descriptor is announced", "issue 26 (hostile-input review)",
         "PTH017", _descriptor_gap, runs_code=False),
    Case("local-flags-disagree", "the local header announces a descriptor the directory does not",
         "issue 26 (hostile-input review)", "PTH018", _local_flags_disagree, runs_code=False),
    Case("extra-member-payload", "archive/payload.pkl beside the checkpoint", "issue 26 (hostile-input review)",
         "PTH019", _extra_member_payload, runs_code=False),
    Case("no-version-record", "no archive/version record", "issue 26 (hostile-input review)", "PTH020",
         _no_version_record, runs_code=False),
    Case("meta-location", "a storage located on 'meta' (torch reads no data)", "issue 26 (hostile-input review)",
         "PTH021", _meta_location, runs_code=False),
    Case("version-needed-64", "data.pkl needs zip version 6.4 (torch loads it, Python's zipfile refuses the file)",
         "issue 26 (differential campaign)", "PTH022", _version_needed_64, runs_code=False),
    Case("miss-json-other-prefix", "adapter-final/miss.json: a manifest the server never reads",
         "issue 26 (differential campaign)", "PTH019", _miss_json_other_prefix, runs_code=False),
    Case("raw-pickle", "a bare pickle named .pth (torch's legacy format)", "CVE-2025-10155 (extension bypass)",
         "PTH001", _raw_pickle),
    Case("polyglot-pickle-prefix", "a pickle, then a valid archive (zip found from the end)",
         "polyglot files", "PTH001", _polyglot_pickle_prefix),
    Case("polyglot-hidden-gap", "valid archive with a pickle hidden between two members",
         "modelaudit PR #1043 (hidden pickles)", "PTH017", _polyglot_hidden_gap, runs_code=False),
    Case("polyglot-safetensors-zip", "safetensors file with a malicious archive appended", "polyglot files",
         "PTH012", _polyglot_safetensors_zip, runs_code=False),
    Case("safetensors-header-bomb", "safetensors header length 2**62", "safetensors DoS", "PTH012",
         _safetensors_header_bomb, runs_code=False),
]  # fmt: skip

CASES: dict[str, Case] = {c.id: c for c in _CASE_LIST}


def marker_for(directory: Path, case_id: str) -> Path:
    """Where the payload of ``case_id`` built in ``directory`` would write."""
    return directory / f"{case_id}.PWNED"


def write_case(case: Case, directory: Path) -> Path:
    """Build ``case`` into ``directory``/<id>.pth; its marker is :func:`marker_for`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{case.id}.pth"
    path.write_bytes(case.build(marker_for(directory, case.id).resolve()))
    return path
