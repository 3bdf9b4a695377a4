"""Resource bounds: zip bombs, 100,000-entry zips, sizes beyond the file, deep JSON, a 500 MB index.json.

Each bomb (tests/malicious/bombs.py) replaces one file of a small registry; `validate` runs in a
child process and must finish (a 60 s guard, not a speed test) with the bomb's rule on that
file, using less than 200 MB more memory (peak RSS) than validating the clean registry.
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from regtools import build_registry

sys.path.insert(0, str(Path(__file__).parent / "malicious"))

from bombs import BOMBS, place
from ckpt_hostile import Entry, checkpoint_entries, simple_pickle
from evil_cases import torch_members, zip_archive
from rss_probe import MB, probe

from rwkv_registry.core.errors import CheckpointError, RefusedError
from rwkv_registry.formats.ckpt import open_checkpoint
from rwkv_registry.formats.jsonload import JsonLoadError, JsonTooLargeError, load_json_bytes, read_json_bytes
from rwkv_registry.store.ops import load_index

EXTRA_RSS = 200 * MB


@pytest.fixture(scope="module")
def baseline_rss(state_only_template: Path) -> int:
    clean = probe("validate", str(state_only_template))
    assert clean.rc == 0 and clean.json()["ok"], clean.stderr
    return clean.max_rss


def _check_bomb(bomb_id: str, state_only_template: Path, baseline_rss: int, tmp_path: Path) -> None:
    bomb = BOMBS[bomb_id]
    reg = tmp_path / "reg"
    shutil.copytree(state_only_template, reg)
    path = place(bomb, reg)
    try:
        run = probe("validate", str(reg), timeout=60)
    finally:
        path.unlink()  # the big ones must not stay in the temporary directory
    assert not run.timed_out, f"validate did not finish on {bomb_id}"
    assert run.rc == 0 and "Traceback" not in run.stderr, run.stderr
    codes = [code for code, rel, _ in run.json()["findings"] if rel == bomb.target]
    assert bomb.code in codes, codes
    assert run.max_rss - baseline_rss < EXTRA_RSS, f"{(run.max_rss - baseline_rss) / MB:.0f} MB over the baseline"


@pytest.mark.parametrize("bomb_id", sorted(b.id for b in BOMBS.values() if not b.slow))
def test_bomb_is_refused_in_bounded_memory(
    bomb_id: str, state_only_template: Path, baseline_rss: int, tmp_path: Path
) -> None:
    _check_bomb(bomb_id, state_only_template, baseline_rss, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("bomb_id", sorted(b.id for b in BOMBS.values() if b.slow))
def test_slow_bomb_is_refused_in_bounded_memory(
    bomb_id: str, state_only_template: Path, baseline_rss: int, tmp_path: Path
) -> None:
    _check_bomb(bomb_id, state_only_template, baseline_rss, tmp_path)


def test_the_memory_check_can_fail(tmp_path: Path) -> None:
    """Control: a child that does allocate 300 MB is measured as such."""
    run = probe("json", str(tmp_path / "missing.json"))
    small = run.max_rss
    big = probe("alloc", str(300 * MB))
    assert big.max_rss - small > 250 * MB


# --- oversize JSON is refused by stat, unread -------------------------------------------------------------


def test_oversize_json_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    with open(path, "wb") as f:
        f.truncate(500 * MB)  # sparse: reading it would take 500 MB
    with pytest.raises(JsonTooLargeError) as info:
        read_json_bytes(path, display="index.json")
    assert isinstance(info.value, OSError) and isinstance(info.value, JsonLoadError)
    assert info.value.strerror == "the file is 524,288,000 bytes, over the 67,108,864-byte limit of registry JSON files"
    with pytest.raises(RefusedError, match="over the limit"):
        load_index(tmp_path)


def test_read_json_bytes_reads_small_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b'{"a": 1}')
    assert read_json_bytes(tmp_path / "a.json") == b'{"a": 1}'
    with pytest.raises(JsonTooLargeError):
        read_json_bytes(tmp_path / "a.json", max_bytes=7)
    with pytest.raises(FileNotFoundError):
        read_json_bytes(tmp_path / "none.json")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b"2" + b"0" * 308, "an integer of 309 digits"),
        (b"[-" + b"9" * 400 + b"]", "an integer of 400 digits"),
        (b'{"alpha": 1e400}', "a number"),
        (b"[-2E+0309]", "a number"),
        # a long mantissa times a small exponent: json makes inf, and a regex on 3-digit exponents missed it
        (b"[1" + b"0" * 300 + b"e9]", "a number"),
        (b'{"lr": 0.5, "x": -' + b"9" * 200 + b".5e110}", "a number"),
    ],
    ids=["2e308-int", "400-digit-int", "1e400", "-2e309", "300-digits-e9", "200-digits-e110"],
)
def test_numbers_beyond_a_double_are_refused(text: bytes, why: str) -> None:
    with pytest.raises(JsonLoadError) as info:
        load_json_bytes(text)
    assert info.value.reason == f"{why} is beyond the range of a double"


def test_numbers_within_a_double_pass() -> None:
    assert load_json_bytes(b"[1e308, -1.7e308, 1" + b"0" * 307 + b', "1e400", 2.5e-400]') == [
        1e308, -1.7e308, 10**307, "1e400", 0.0
    ]  # fmt: skip
    sha = "3e123" + "ab" * 29 + "e4"  # hex with exponent-like runs: a string, not a number
    assert load_json_bytes(f'{{"sha256": "{sha}", "n": 1{"0" * 300}e-9}}'.encode()) == {"sha256": sha, "n": 1e291}


# --- hidden bytes in a zip (polyglots) -----------------------------------------------------------------------


def test_bytes_before_the_first_entry_are_refused() -> None:
    members = torch_members(simple_pickle(1), {"0": bytes(8)})
    data = zip_archive(members, prefix=b"PK\x03\x04" + bytes(60))
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(data)
    assert (info.value.code, info.value.message) == (
        "PTH017",
        "64 bytes between the start of the file and 'archive/data/0' belong to no entry (hidden data)",
    )


def test_bytes_before_the_central_directory_are_refused() -> None:
    data = bytearray(zip_archive(torch_members(simple_pickle(1), {"0": bytes(8)})))
    eocd = data.rfind(b"PK\x05\x06")
    cd_offset = struct.unpack_from("<I", data, eocd + 16)[0]
    hidden = b"hidden pickle"
    data[cd_offset:cd_offset] = hidden
    struct.pack_into("<I", data, eocd + len(hidden) + 16, cd_offset + len(hidden))
    with pytest.raises(CheckpointError, match="13 bytes between entry 'archive/version' and the central directory"):
        open_checkpoint(bytes(data))


def _with_descriptors(entries: list[Entry], descriptor: Callable[[int, int], bytes]) -> bytes:
    """A stored zip, flag 0x08 (data descriptor) on every entry and ``descriptor(crc, size)`` after each."""
    body = bytearray()
    central = bytearray()
    for e in entries:
        raw = e.name.encode()
        offset = len(body)
        crc = zlib.crc32(e.data)
        body += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0x08, 0, 0, 0, 0, 0, 0, len(raw), 0) + raw + e.data
        body += descriptor(crc, len(e.data))
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0x08, 0, 0, 0, crc, len(e.data),
                               len(e.data), len(raw), 0, 0, 0, 0, 0, offset) + raw  # fmt: skip
    n = len(entries)
    return bytes(body + central + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(central), len(body), 0))


def _descriptor(crc: int, size: int) -> bytes:
    """What miniz writes after an entry below 4 GiB (mz_zip_writer_add_mem_ex_v2): signature, CRC, 32-bit sizes."""
    return struct.pack("<4sIII", b"PK\x07\x08", crc, size, size)


def test_data_descriptors_are_not_hidden_bytes() -> None:
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    assert open_checkpoint(_with_descriptors(entries, _descriptor)).tensors["t0"].shape == (2,)


@pytest.mark.parametrize(
    ("descriptor", "code"),
    [
        (lambda crc, size: bytes(16), "PTH017"),  # zeros: a descriptor in length only
        (lambda crc, size: struct.pack("<III", crc, size, size), "PTH017"),  # no signature (torch always writes one)
        (lambda crc, size: struct.pack("<4sIQQ", b"PK\x07\x08", crc, size, size), "PTH018"),  # 64-bit, no zip64
        (lambda crc, size: _descriptor(crc, size) + b"tail", "PTH017"),  # 4 bytes after it
        (lambda crc, size: _descriptor(crc, size)[:-5], "PTH018"),  # its sizes run into the next header
    ],
    ids=["zeros", "no-signature", "64-bit", "longer", "shorter"],
)
def test_anything_but_the_descriptor_torch_writes_is_refused(
    descriptor: Callable[[int, int], bytes], code: str
) -> None:
    """Accepted until issue 26: 12 to 24 bytes of anything after a flagged entry (bytes no entry owns)."""
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(_with_descriptors(entries, descriptor))
    assert info.value.code == code, info.value.message


def test_a_descriptor_disagreeing_with_the_directory_is_refused() -> None:
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(_with_descriptors(entries, lambda crc, size: _descriptor(crc ^ 1, size)))
    assert info.value.code == "PTH018" and "the data descriptor of 'archive/data/0' says CRC" in info.value.message


def test_descriptor_sized_gap_without_the_flag_is_refused() -> None:
    members = torch_members(simple_pickle(1), {"0": bytes(8)})
    members[1].gap_before = bytes(16)
    with pytest.raises(CheckpointError, match=r"16 bytes between entry 'archive/data/0' and 'archive/data\.pkl'"):
        open_checkpoint(zip_archive(members))


def test_size_check_reads_nothing_big(tmp_path: Path) -> None:
    """The 100,000-entry archive is refused from its end record: a FileSource reads a few bytes."""
    from rwkv_registry.formats.ckpt import FileSource

    path = tmp_path / "many.pth"
    BOMBS["entries-100k"].write(path)
    with FileSource(path) as src, pytest.raises(CheckpointError) as info:
        open_checkpoint(src)
    assert info.value.code == "PTH010"
    assert src.bytes_read < 4096 < os.path.getsize(path)


def test_index_declaring_a_huge_base_is_checked_in_bounded_time(
    state_only_template: Path, baseline_rss: int, tmp_path: Path
) -> None:
    """A 2**31-layer base: the State check used to build 2**31 expected names (found by bench/fuzz.py)."""
    import json

    reg = tmp_path / "reg"
    shutil.copytree(state_only_template, reg)
    index = json.loads((reg / "index.json").read_text())
    index["bases"][0]["architecture"]["n_layer"] = 2**31
    (reg / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    run = probe("validate", str(reg), timeout=60)
    assert not run.timed_out and run.rc == 0, run.stderr
    state = [m for code, rel, m in run.json()["findings"] if code == "STA001"]
    assert len(state) == 1 and state[0].startswith("2 state tensors for a 2147483648-layer base; missing [")
    assert all(f"'blocks.{i}.att.time_state'" in state[0] for i in (2, 3, 4))
    assert run.max_rss - baseline_rss < EXTRA_RSS


def test_huge_sums_and_readme_are_refused_unread(tmp_path: Path) -> None:
    """SHA256SUMS and README.md beyond 64 MiB give a finding by size, without being read (sparse files)."""
    from rwkv_registry.core.fsio import MAX_TEXT_BYTES
    from rwkv_registry.engine.validate import validate_registry

    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    for name in ("SHA256SUMS", "README.md"):
        with open(root / name, "r+b") as f:
            f.truncate(MAX_TEXT_BYTES + 1)
    report = validate_registry(root, use_cache=False)
    messages = {(f.code, f.path): f.message for f in report.findings}
    assert "not read" in messages[("HSH003", "SHA256SUMS")]
    assert "not read" in messages[("RDM001", "README.md")]
