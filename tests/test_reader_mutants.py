"""Checks of the safe reader that a mutation audit found no test for.

Each test pins one check of registry/formats/unpickle.py, _zipread.py, ckpt.py, sums.py or lfs.py that
could be broken (an off-by-one, a dropped comparison) with the rest of the suite still passing.
Where torch reads the same bytes, the test says what torch does with them.
"""

from __future__ import annotations

import io
import struct

import pytest
import torch
from ckpt_hostile import Entry, build_zip, checkpoint_entries, safetensors_bytes, simple_pickle, with_pickle

from rwkv_registry.core.errors import CheckpointError
from rwkv_registry.formats.ckpt import MemorySource, open_checkpoint
from rwkv_registry.formats.lfs import LFS_VERSION_LINE, LfsPointer, parse_lfs_pointer
from rwkv_registry.formats.unpickle import MAX_DEPTH, parse_tensor_pickle
from rwkv_registry.index.sums import format_sums, parse_sums

# --- pickle builders ---------------------------------------------------------------------------


def _s(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _i(value: int) -> bytes:
    if 0 <= value < 256:
        return b"K" + bytes([value])
    return b"J" + struct.pack("<i", value)


def _tup(items: tuple[int, ...]) -> bytes:
    return b"(" + b"".join(_i(v) for v in items) + b"t"


def _pid(key: str = "0", storage: str = "FloatStorage", numel: int = 2, *, tag: str = "storage") -> bytes:
    """BINPERSID of ('storage', torch.<storage>, key, 'cpu', numel)."""
    return b"(" + _s(tag) + f"ctorch\n{storage}\n".encode() + _s(key) + _s("cpu") + _i(numel) + b"tQ"


REBUILD = b"ctorch._utils\n_rebuild_tensor_v2\n"


def _tensor(
    *,
    pid: bytes | None = None,
    shape: tuple[int, ...] = (2,),
    stride: tuple[int, ...] = (1,),
    requires_grad: bytes = b"\x89",
    hooks: bytes = b"}",
) -> bytes:
    """Opcodes pushing one _rebuild_tensor_v2(storage, 0, shape, stride, requires_grad, hooks)."""
    pid = _pid() if pid is None else pid
    return REBUILD + b"(" + pid + _i(0) + _tup(shape) + _tup(stride) + requires_grad + hooks + b"tR"


def _dict(*items: bytes) -> bytes:
    """A protocol-2 pickle of a plain dict of ``items`` (each: key opcodes + value opcodes)."""
    return b"\x80\x02}(" + b"".join(items) + b"u."


def _refusal(data: bytes) -> tuple[str, str]:
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(data)
    return info.value.code, info.value.message


def _pickle_refusal(pkl: bytes) -> tuple[str, str]:
    with pytest.raises(CheckpointError) as info:
        parse_tensor_pickle(pkl)
    return info.value.code, info.value.message


GOOD = _dict(_s("w") + _tensor())


def test_the_hand_built_pickle_is_accepted() -> None:
    """The control for the pickles below: the builders make a file both readers accept."""
    data = with_pickle(GOOD)
    assert open_checkpoint(data).tensors["w"].shape == (2,)
    assert torch.load(io.BytesIO(data), weights_only=True)["w"].shape == (2,)


# --- _pickle.py: argument reads and stack discipline -------------------------------------------


def test_every_truncation_of_a_pickle_is_refused() -> None:
    """A pickle cut inside an opcode's argument (also one byte short) is refused, not an IndexError or a
    struct.error (PTH010 where the cut falls inside a BINUNICODE, whose length then runs past the end)."""
    pkl = b"\x80\x02}q\x00(" + _s("w") + _tensor() + _s("n") + b"M\x00\x01" + b"J\x00\x00\x00\x01" + b"\x86u."
    for cut in range(len(pkl)):
        code, _ = _pickle_refusal(pkl[:cut])
        assert code in ("PTH009", "PTH010"), cut


def test_global_line_is_bounded() -> None:
    """A GLOBAL whose module line runs past 256 bytes is refused for its length, before any lookup."""
    pkl = b"\x80\x02c" + b"a" * 300 + b"\nb\n."
    code, message = _pickle_refusal(pkl)
    assert code == "PTH009"
    assert message == "GLOBAL at offset 2 has no line end within 256 bytes"


def test_pop_below_a_mark_is_refused() -> None:
    """TUPLE1 right after a MARK takes its item from below the MARK: torch's unpickler raises "stack
    underflow"; the reader must not take it as the shape tuple that follows the MARK."""
    size = b"K\x02(\x85"  # 2 MARK TUPLE1: the TUPLE1 reaches below the MARK
    args = b"(" + _pid() + _i(0) + size + b"K\x01t" + b"\x89}t"  # ... (2,) then 1 TUPLE closes the MARK
    pkl = _dict(_s("w") + REBUILD + args + b"R")
    with pytest.raises(Exception):  # noqa: B017 - torch raises UnpicklingError here
        torch.load(io.BytesIO(with_pickle(pkl)), weights_only=True)
    code, message = _refusal(with_pickle(pkl))
    assert code == "PTH009" and "pops more than the stack holds" in message


def test_stop_with_an_open_mark_is_refused() -> None:
    pkl = GOOD[:-1] + b"(."
    assert _refusal(with_pickle(pkl)) == ("PTH009", "STOP at offset 111 leaves 1 values on the stack")


def test_proto_after_the_first_opcode_is_refused() -> None:
    pkl = b"\x80\x02}\x80\x02(" + _s("w") + _tensor() + b"u."
    assert _refusal(with_pickle(pkl)) == ("PTH009", "PROTO at offset 3: only allowed as the first opcode")


# --- _pickle.py: dicts -------------------------------------------------------------------------


def test_hooks_changed_after_the_tensor_was_built_are_refused() -> None:
    """The hooks dict is empty when _rebuild_tensor_v2 sees it, then is fetched from the memo and filled
    and hidden as a _metadata entry: torch.load keeps the very dict as the tensor's _backward_hooks."""
    hooks = b"}q\x07"  # EMPTY_DICT BINPUT 7
    tensor = _tensor(hooks=hooks)
    fill = b"h\x07(" + _s("0") + _s("payload") + b"u"  # BINGET 7, {'0': 'payload'}
    meta = b"ccollections\nOrderedDict\n)R(" + _s("") + fill + b"u"
    state = b"}(" + _s("_metadata") + meta + b"u"
    pkl = b"\x80\x02ccollections\nOrderedDict\n)R(" + _s("w") + tensor + b"u" + state + b"b."
    loaded = torch.load(io.BytesIO(with_pickle(pkl)), weights_only=True)
    assert dict(loaded["w"]._backward_hooks) == {"0": "payload"}  # what the check keeps out
    code, message = _refusal(with_pickle(pkl))
    assert code == "PTH009" and message.endswith("changes a dict already in use")


def test_a_tensor_name_repeated_with_another_value_is_a_duplicate_name() -> None:
    pkl = _dict(_s("w") + _tensor() + _s("w") + _i(1))
    code, message = _refusal(with_pickle(pkl))
    assert code == "PTH007" and "'w'" in message


def test_dicts_nested_too_deep_are_a_resource_bound() -> None:
    """{'a': {'a': ...}} 1001 deep (each level under its own MARK, within the MARK bound)."""
    pkl = b"\x80\x02}" + b"(" + _s("a") + b"}" + (b"(" + _s("a") + b"}") * (MAX_DEPTH - 1) + b"u" * MAX_DEPTH + b"."
    code, message = _pickle_refusal(pkl)
    assert code == "PTH010" and f"deeper than {MAX_DEPTH}" in message


def test_build_twice_is_refused() -> None:
    state = b"}(" + _s("_metadata") + b"ccollections\nOrderedDict\n)R" + b"u"
    body = b"\x80\x02ccollections\nOrderedDict\n)R(" + _s("w") + _tensor() + b"u"
    assert open_checkpoint(with_pickle(body + state + b"b.")).tensors["w"].shape == (2,)
    code, message = _refusal(with_pickle(body + state + b"b" + state + b"b."))
    assert code == "PTH009" and "only a state_dict's _metadata is accepted" in message


# --- _pickle.py: globals, persistent ids and tensor arguments ----------------------------------


def test_storage_class_name_from_another_module_is_not_allowed() -> None:
    pid = b"(" + _s("storage") + b"cos\nFloatStorage\n" + _s("0") + _s("cpu") + _i(2) + b"tQ"
    code, message = _refusal(with_pickle(_dict(_s("w") + _tensor(pid=pid))))
    assert code == "PTH003" and "'os FloatStorage'" in message


def test_persistent_id_tag_must_be_storage() -> None:
    pkl = _dict(_s("w") + _tensor(pid=_pid(tag="module")))
    with pytest.raises(Exception):  # noqa: B017 - torch's persistent_load refuses the tag
        torch.load(io.BytesIO(with_pickle(pkl)), weights_only=True)
    code, message = _refusal(with_pickle(pkl))
    assert code == "PTH009" and "has tag str 'module', not 'storage'" in message


def test_storage_declared_twice_with_different_dtypes() -> None:
    """Same element count, another dtype: torch silently reuses the first declaration for both tensors."""
    pkl = _dict(_s("a") + _tensor(), _s("b") + _tensor(pid=_pid(storage="IntStorage")))
    assert _refusal(with_pickle(pkl)) == ("PTH006", "storage '0' declared as 2 x float32 and as 2 x int32")


@pytest.mark.parametrize(
    ("shape", "stride", "what"),
    [((-1,), (1,), "size"), ((1,), (-1,), "stride"), ((2, -1), (1, 1), "size")],
    ids=["size", "stride", "inner-size"],
)
def test_negative_size_or_stride_is_refused(shape: tuple[int, ...], stride: tuple[int, ...], what: str) -> None:
    code, message = _refusal(with_pickle(_dict(_s("w") + _tensor(shape=shape, stride=stride))))
    assert code == "PTH009" and f": {what} is a tuple of " in message


@pytest.mark.parametrize("value", [_i(1), b"N", _s("yes"), b")"], ids=["int", "none", "str", "tuple"])
def test_requires_grad_must_be_a_bool(value: bytes) -> None:
    """torch: "requires_grad must be a bool"."""
    code, message = _refusal(with_pickle(_dict(_s("w") + _tensor(requires_grad=value))))
    assert code == "PTH009" and ": requires_grad is " in message


@pytest.mark.parametrize("storage", ["LongStorage", "IntStorage", "BoolStorage", "ByteStorage"])
def test_requires_grad_on_a_tensor_that_is_not_floating_is_refused(storage: str) -> None:
    """torch: "only Tensors of floating point and complex dtype can require gradients"."""
    pkl = _dict(_s("w") + _tensor(pid=_pid(storage=storage), requires_grad=b"\x88"))
    with pytest.raises(RuntimeError):
        torch.load(io.BytesIO(with_pickle(pkl, {"0": bytes(16)})), weights_only=True)
    code, message = _refusal(with_pickle(pkl, {"0": bytes(16)}))
    assert code == "PTH009" and "requires_grad on a " in message
    floating = _dict(_s("w") + _tensor(requires_grad=b"\x88"))  # a float32 tensor may require grad
    assert open_checkpoint(with_pickle(floating, {"0": bytes(8)})).tensors["w"].shape == (2,)


def _long1(value: int) -> bytes:
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


@pytest.mark.parametrize(("shape", "stride"), [((1 << 63, 0), (1, 1)), ((1, 2), (1 << 63, 1))])
def test_sizes_and_strides_past_int64_are_refused(shape: tuple[int, ...], stride: tuple[int, ...]) -> None:
    """A 0 dimension makes the element count 0, so only the int64 bound catches these; torch:
    "Overflow when unpacking long long"."""

    def tup(items: tuple[int, ...]) -> bytes:
        return b"(" + b"".join(_long1(v) if v >= 1 << 31 else _i(v) for v in items) + b"t"

    args = b"(" + _pid() + _i(0) + tup(shape) + tup(stride) + b"\x89}t"
    data = with_pickle(_dict(_s("w") + REBUILD + args + b"R"))
    with pytest.raises((TypeError, RuntimeError, OverflowError)):
        torch.load(io.BytesIO(data), weights_only=True)
    code, message = _refusal(data)
    assert code == "PTH009" and "not a tuple of non-negative 64-bit ints" in message


def test_sizes_above_32767_written_as_binint2_are_read_unsigned() -> None:
    """torch writes 256..65535 as BININT2 (unsigned): a 40,000-element tensor is not negative."""
    buf = io.BytesIO()
    torch.save({"w": torch.zeros(40_000, dtype=torch.uint8)}, buf)
    assert b"M\x40\x9c" in buf.getvalue()  # BININT2 40000
    ckpt = open_checkpoint(buf.getvalue())
    assert ckpt.tensors["w"].shape == (40_000,) and ckpt.tensors["w"].nbytes == 40_000


def test_long1_is_signed() -> None:
    """LONG1 is two's complement: 0xff is -1 (a negative storage offset), not 255."""

    def offset_pickle(offset: bytes) -> bytes:
        args = b"(" + _pid() + offset + _tup((1,)) + _tup((1,)) + b"\x89}t"
        return _dict(_s("w") + REBUILD + args + b"R")

    assert open_checkpoint(with_pickle(offset_pickle(b"\x8a\x01\x01"))).tensors["w"].storage_offset == 1
    code, message = _refusal(with_pickle(offset_pickle(b"\x8a\x01\xff")))
    assert code == "PTH009" and message.endswith(": storage offset is int -1")


ALLOWED_OPCODES = b"\x80.(})XqrhjcJKM\x8at\x85\x86\x87\x88\x89NQRbsu"


def test_every_other_opcode_is_outside_the_allow_list() -> None:
    """All 256 byte values: what torch does not write is PTH004 (PUT, GET, LONG4, FRAME, ... included)."""
    assert len(ALLOWED_OPCODES) == 27
    for opcode in set(range(256)) - set(ALLOWED_OPCODES):
        code, message = _pickle_refusal(b"\x80\x02}" + bytes([opcode]) + b"0\n0\n.")
        assert code == "PTH004" and message.startswith(f"pickle opcode 0x{opcode:02x} "), opcode


def test_build_below_a_mark_is_refused() -> None:
    """BUILD whose target sits below the MARK: torch's unpickler raises "stack underflow"."""
    state = b"}(" + _s("_metadata") + b"ccollections\nOrderedDict\n)R" + b"u"
    pkl = b"\x80\x02ccollections\nOrderedDict\n)R(" + state + b"b" + _s("w") + _tensor() + b"u."
    with pytest.raises(Exception):  # noqa: B017 - UnpicklingError
        torch.load(io.BytesIO(with_pickle(pkl)), weights_only=True)
    code, message = _refusal(with_pickle(pkl))
    assert code == "PTH009" and "on an empty stack" in message


# --- _zipread.py -------------------------------------------------------------------------------

_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_FIELDS = {"flags": 3, "method": 4, "crc": 7, "csize": 8, "usize": 9, "disk": 13, "attrs": 15, "offset": 16}


def _edit_central(data: bytes, name: str, *, extra: bytes | None = None, **fields: int) -> bytes:
    """``data`` (a zip without comment or zip64 records) with the central header of ``name`` changed:
    ``fields`` (flags, method, crc, csize, usize, disk, attrs, offset) and its extra field."""
    eocd = len(data) - 22
    sig, disk, cd_disk, n, n_disk, cd_size, cd_offset, comment = struct.unpack_from("<4sHHHHIIH", data, eocd)
    assert sig == b"PK\x05\x06" and comment == 0
    cd = data[cd_offset : cd_offset + cd_size]
    out = bytearray()
    pos = 0
    for _ in range(n):
        head = list(_CENTRAL.unpack_from(cd, pos))
        nlen, elen, clen = head[10], head[11], head[12]
        raw = cd[pos + 46 : pos + 46 + nlen]
        ext = cd[pos + 46 + nlen : pos + 46 + nlen + elen]
        if raw == name.encode():
            for key, value in fields.items():
                head[_FIELDS[key]] = value
            ext = ext if extra is None else extra
            head[11] = len(ext)
        out += _CENTRAL.pack(*head) + raw + ext + cd[pos + 46 + nlen + elen : pos + 46 + nlen + elen + clen]
        pos += 46 + nlen + elen + clen
    tail = struct.pack("<4sHHHHIIH", b"PK\x05\x06", disk, cd_disk, n, n_disk, len(out), cd_offset, 0)
    return data[:cd_offset] + bytes(out) + tail


STORAGE = "archive/data/0"
ARCHIVE = with_pickle(simple_pickle(1), {"0": struct.pack("<2f", 1.5, 2.5)})


def test_edit_central_without_changes_keeps_a_valid_archive() -> None:
    assert _edit_central(ARCHIVE, STORAGE) == ARCHIVE


def test_bytes_after_the_end_record_are_refused() -> None:
    """torch (miniz) loads an archive followed by junk; the reader refuses the unexplained bytes."""
    assert torch.load(io.BytesIO(ARCHIVE + b"junk"), weights_only=True)["t0"].tolist() == [1.5, 2.5]
    assert _refusal(ARCHIVE + b"junk")[0] == "PTH014"
    assert _refusal(ARCHIVE + b"PK\x05\x06" + bytes(18))[0] == "PTH001"  # a second, empty end record


def test_bytes_between_the_directory_and_the_end_record_are_refused() -> None:
    eocd = len(ARCHIVE) - 22
    data = ARCHIVE[:eocd] + b"hidden" + ARCHIVE[eocd:]
    code, message = _refusal(data)
    assert code == "PTH001" and "does not end where the end record starts" in message


def _zip64_archive() -> bytes:
    buf = io.BytesIO()
    torch.save({"w": torch.arange(4, dtype=torch.int32)}, buf)
    return buf.getvalue()


@pytest.mark.parametrize(("offset", "fmt", "value"), [(8, "<H", 7), (10, "<H", 7), (12, "<I", 1), (16, "<I", 1)])
def test_end_record_disagreeing_with_the_zip64_record_is_refused(offset: int, fmt: str, value: int) -> None:
    """torch writes both end records; a plain record whose entry count, directory size or offset is
    neither the zip64 value nor the 0xFF.. sentinel makes two readers see two archives."""
    data = bytearray(_zip64_archive())
    eocd = data.rfind(b"PK\x05\x06")
    assert data.rfind(b"PK\x06\x07") == eocd - 20
    current = struct.unpack_from(fmt, data, eocd + offset)[0]
    struct.pack_into(fmt, data, eocd + offset, current + value)
    code, message = _refusal(bytes(data))
    assert code == "PTH001" and "disagrees with the zip64 record" in message


def test_zip64_end_record_size_reaching_past_the_locator_is_refused() -> None:
    data = bytearray(_zip64_archive())
    record = data.rfind(b"PK\x06\x06")
    assert struct.unpack_from("<Q", data, record + 4)[0] == 44  # what torch writes: the locator follows
    struct.pack_into("<Q", data, record + 4, 45)
    locator = data.rfind(b"PK\x06\x07")
    assert _refusal(bytes(data)) == (
        "PTH001",
        f"zip64 end record at offset {record} declares size 45, but the locator follows at {locator}",
    )


def test_bytes_hidden_between_the_zip64_record_and_its_locator_are_refused() -> None:
    """torch loads such a file too, but no record explains the bytes (the policy: none hidden)."""
    z = _zip64_archive()
    locator = z.rfind(b"PK\x06\x07")
    data = z[:locator] + b"HIDDEN PAYLOAD " * 20 + z[locator:]
    code, message = _refusal(data)
    assert code == "PTH001" and "declares size 44, but the locator follows at" in message


def test_a_disk_number_in_a_zip64_field_is_refused() -> None:
    """Disk 0xFFFF with the zip64 field saying disk 0: miniz, torch's reader, refuses the archive
    ("unsupported multidisk archive"), so the reader does too."""
    data = _edit_central(ARCHIVE, STORAGE, disk=0xFFFF, extra=struct.pack("<HHI", 1, 4, 0))
    with pytest.raises(RuntimeError):
        torch.load(io.BytesIO(data), weights_only=True)
    code, message = _refusal(data)
    assert code == "PTH011" and "disk number in a zip64 field" in message


def test_extra_field_longer_than_its_header_is_refused() -> None:
    """A zip64 extra field declaring 28 bytes where the header holds 24."""
    extra = struct.pack("<HHQQQ", 1, 28, 8, 8, 0)
    data = _edit_central(ARCHIVE, STORAGE, extra=extra, csize=0xFFFFFFFF, usize=0xFFFFFFFF, offset=0xFFFFFFFF)
    assert open_checkpoint(_edit_central(data, STORAGE, extra=struct.pack("<HHQQQ", 1, 24, 8, 8, 0))).tensors
    code, message = _refusal(data)
    assert (code, message) == ("PTH001", "entry 'archive/data/0': extra field 0x0001 runs past its header")


def test_zip64_disk_number_is_four_bytes() -> None:
    """Disk 0xFFFF in the header: the zip64 extra field then ends with a 4-byte disk number (here 1)."""
    data = _edit_central(ARCHIVE, STORAGE, disk=0xFFFF, extra=struct.pack("<HHI", 1, 4, 1))
    assert _refusal(data)[0] == "PTH011"


@pytest.mark.parametrize("csize", [4, 12])
def test_stored_entry_with_another_compressed_size_is_refused(csize: int) -> None:
    """torch: "invalid header or archive is corrupted"."""
    data = _edit_central(ARCHIVE, STORAGE, csize=csize)
    code, message = _refusal(data)
    assert code == "PTH001" and f"compressed size {csize} != size 8" in message


@pytest.mark.parametrize(("flags", "what"), [(0x0001, "encrypted"), (0x0040, "encrypted"), (0x0020, "patched")])
def test_central_flags_alone_are_checked(flags: int, what: str) -> None:
    """Flags set in the central directory only (the local header is clean): torch refuses on them."""
    code, message = _refusal(_edit_central(ARCHIVE, STORAGE, flags=flags))
    assert code == "PTH011" and what in message


def test_entry_on_another_disk_is_refused() -> None:
    code, message = _refusal(_edit_central(ARCHIVE, STORAGE, disk=1))
    assert code == "PTH011" and "starts on disk 1" in message


def test_bytes_at_the_end_of_the_central_directory_are_refused() -> None:
    eocd = len(ARCHIVE) - 22
    data = bytearray(ARCHIVE[:eocd] + b"hidden" + ARCHIVE[eocd:])
    size = struct.unpack_from("<I", data, eocd + 6 + 12)[0]
    struct.pack_into("<I", data, eocd + 6 + 12, size + 6)  # the directory now holds the 6 bytes
    code, message = _refusal(bytes(data))
    assert (code, message) == ("PTH017", "6 unexplained bytes at the end of the central directory")


def test_local_header_naming_another_entry_is_refused() -> None:
    """Python's zipfile refuses it too ("File name in directory and header differ")."""
    assert ARCHIVE[30:44] == STORAGE.encode()  # the first local header's name
    data = ARCHIVE[:30] + b"archive/data/9" + ARCHIVE[44:]
    code, message = _refusal(data)
    assert code == "PTH018" and "names another entry than 'archive/data/0'" in message


@pytest.mark.parametrize(
    ("offset", "fmt", "value", "message"),
    [
        (8, "<H", 8, "entry 'archive/data/0' is compressed (local header method 8)"),
        (14, "<I", 0xFFFFFFFF, "local header of 'archive/data/0' disagrees with the directory on its CRC"),
    ],
    ids=["method", "crc-sentinel"],
)
def test_local_header_fields_are_checked(offset: int, fmt: str, value: int, message: str) -> None:
    """torch and zipfile read the directory's method and CRC; the local header must still agree (0xFFFFFFFF
    stands for a zip64 size, never for a CRC)."""
    data = bytearray(ARCHIVE)
    struct.pack_into(fmt, data, offset, value)  # the first local header (archive/data/0)
    assert _refusal(bytes(data))[1] == message


# --- ckpt.py -----------------------------------------------------------------------------------


def test_storage_entry_longer_than_declared_is_refused() -> None:
    """Bytes past a storage's declared elements would hide data no tensor accounts for."""
    code, message = _refusal(with_pickle(simple_pickle(1), {"0": bytes(12)}))
    assert code == "PTH006" and "holds 12 bytes" in message


@pytest.mark.parametrize("shape", [(3, 0), (0,), (2, 0, 3)])
def test_empty_tensors_of_any_shape_are_contiguous(shape: tuple[int, ...]) -> None:
    buf = io.BytesIO()
    torch.save({"e": torch.zeros(shape)}, buf)
    info = open_checkpoint(buf.getvalue()).tensors["e"]
    assert (info.shape, info.nbytes) == (shape, 0)


def test_more_than_64_dimensions_are_refused() -> None:
    pkl = _dict(_s("w") + _tensor(pid=_pid(numel=1), shape=(1,) * 65, stride=(1,) * 65))
    assert _refusal(with_pickle(pkl, {"0": bytes(4)})) == ("PTH013", "tensor 'w' has 65 dimensions (limit 64)")
    ok = _dict(_s("w") + _tensor(pid=_pid(numel=1), shape=(1,) * 64, stride=(1,) * 64))
    assert len(open_checkpoint(with_pickle(ok, {"0": bytes(4)})).tensors["w"].shape) == 64


@pytest.mark.parametrize(
    ("prefix", "why"),
    [("C:", "has an absolute path"), ("arch\\ive", "contains a backslash"), ("arch\x01ive", "control characters")],
)
def test_unsafe_prefix_folder_for_every_entry(prefix: str, why: str) -> None:
    """The same bad folder on every entry (so no 'several prefix folders' or 'unexpected entry' hides the rule)."""
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)}, prefix=prefix)
    code, message = _refusal(build_zip(entries))
    assert code == "PTH008" and why in message


@pytest.mark.parametrize("name", ["code/__torch__.py", "extra/x", "constants/0"])
def test_torchscript_folders_mark_a_torchscript_archive(name: str) -> None:
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)}, extra=[Entry(f"archive/{name}", b"")])
    code, message = _refusal(build_zip(entries))
    assert (code, message) == ("PTH005", f"entry archive/{name} marks a TorchScript archive, not a checkpoint")


@pytest.mark.parametrize("order", [b"LITTLE", b"little\n", b"", b"middle"])
def test_byteorder_other_than_little_is_refused(order: bytes) -> None:
    """torch raises "Unknown endianness type" for anything but little/big; big is PTH013 as well."""
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    entries[2] = Entry("archive/byteorder", order)
    assert _refusal(build_zip(entries))[0] == "PTH013"


def test_safetensors_header_length_just_past_the_end_is_refused() -> None:
    """A declared header length 1..8 bytes past the end: PTH012 for the header, not a read error."""
    header = {"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}
    blob = safetensors_bytes(header, b"")
    for extra in (1, 8):
        bad = struct.pack("<Q", len(blob) - 8 + extra) + blob[8:]
        code, message = _refusal(bad)
        assert code == "PTH012" and "runs past the end of the file" in message, extra


@pytest.mark.parametrize(("offset", "length"), [(2, 2), (4, 0), (-1, 1), (0, -1)])
def test_memory_source_reads_exactly_or_raises(offset: int, length: int) -> None:
    """The ByteSource contract: exactly ``length`` bytes, else PTH001 (never a shorter slice)."""
    source = MemorySource(b"abc")
    assert bytes(source.read(1, 2)) == b"bc"
    with pytest.raises(CheckpointError) as info:
        source.read(offset, length)
    assert info.value.code == "PTH001"


# --- sums.py -----------------------------------------------------------------------------------

H = "ab" * 32


def test_sums_lines_in_binary_mode_and_with_dot_slash_parse() -> None:
    """`sha256sum -b` writes '<hash> *path'; `sha256sum ./x` writes './x'."""
    lines, bad = parse_sums(f"{H} *w.pth\n{H.upper()}  ./dir/a.json\n".encode())
    assert bad == []
    assert [(line.sha256, line.path) for line in lines] == [(H, "w.pth"), (H, "dir/a.json")]


def test_sums_are_written_lower_case_in_utf8_byte_order() -> None:
    """UTF-8 byte order differs from code point order for undecodable names (surrogate escapes)."""
    data = format_sums({"\u00e9.bin": H.upper(), "\udc80.bin": H, "a.bin": H})
    assert data == f"{H}  a.bin\n{H}  \udc80.bin\n{H}  \u00e9.bin\n".encode("utf-8", "surrogateescape")


def test_sums_escape_a_carriage_return_in_a_path() -> None:
    data = format_sums({"a\r": H})
    assert data == f"\\{H}  a\\r\n".encode()
    assert [line.path for line in parse_sums(data)[0]] == ["a\r"]


# --- lfs.py ------------------------------------------------------------------------------------

LFS = LFS_VERSION_LINE + b"\noid sha256:" + H.encode() + b"\nsize 7\n"


def _padded(total: int) -> bytes:
    """The pointer with an extension line making it exactly ``total`` bytes long."""
    pad = total - len(LFS) - len(b"x-pad \n")
    return LFS + b"x-pad " + b"a" * pad + b"\n"


def test_lfs_pointer_must_be_under_1024_bytes() -> None:
    assert parse_lfs_pointer(_padded(1023)) == LfsPointer(H, 7)
    assert parse_lfs_pointer(_padded(1024)) is None


@pytest.mark.parametrize(
    "data",
    [
        LFS + LFS_VERSION_LINE + b"\n",  # a second version line
        LFS + b"ext \n",  # empty value
        LFS.replace(b"spec/v1\n", b"spec/v1.1\n"),  # version line with more after v1
        LFS + b"X-ext 1\n",  # upper-case key
    ],
    ids=["version-twice", "empty-value", "version-suffix", "upper-case-key"],
)
def test_malformed_lfs_pointers(data: bytes) -> None:
    assert parse_lfs_pointer(data) is None
