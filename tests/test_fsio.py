"""registry/core/fsio.py: the FIFO-safe, bounded opener shared by every reader (JSON, README.md, weight files'
heads)."""

from __future__ import annotations

import ast
import errno
import os
from pathlib import Path

import pytest

import rwkv_registry

PKG = Path(rwkv_registry.__file__).resolve().parent


def test_open_regular_reads_a_file_and_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    from rwkv_registry.core.fsio import open_regular

    p = tmp_path / "README.md"
    p.write_bytes(b"hello")
    with open_regular(p) as f:
        assert f.read() == b"hello"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as e:
        open_regular(fifo)  # no writer: a plain open would block here
    assert e.value.errno == errno.EINVAL and "not a regular file" in str(e.value)


def test_readers_of_non_json_files_do_not_take_the_opener_from_jsonload() -> None:
    """open_regular and read_at_most live in fsio; jsonload uses them, and the JSON loader is not where
    README.md, SHA256SUMS or a weight file's head are opened from."""
    for name in ("store/ops.py", "engine/facts.py", "engine/validate.py"):
        tree = ast.parse((PKG / name).read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in ("jsonload", "rwkv_registry.formats.jsonload"):
                taken = {a.name for a in node.names}
                assert not taken & {"open_regular", "read_at_most"}, (name, taken)
    from rwkv_registry.core import fsio
    from rwkv_registry.formats import jsonload

    assert jsonload.read_at_most is fsio.read_at_most  # still importable from jsonload (tests, callers)


def test_open_regular_closes_what_it_refuses(tmp_path: Path) -> None:
    """A refused FIFO or directory leaves no file descriptor open (kills the mutant without os.close in the
    refusal path: each refusal leaked one)."""
    from rwkv_registry.core.fsio import open_regular

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    if before is None:
        pytest.skip("no /proc/self/fd to count open descriptors")
    for _ in range(20):
        for target in (fifo, tmp_path):
            with pytest.raises(OSError):
                open_regular(target)
    assert len(os.listdir("/proc/self/fd")) == before


def test_open_regular_without_following_links_refuses_a_link_and_reads_the_file(tmp_path: Path) -> None:
    """``follow_symlinks=False`` (the stale-read check's content hash): a link in place of the file is refused
    (ELOOP), the file itself read as before; the default still follows the link."""
    from rwkv_registry.core.fsio import open_regular

    target = tmp_path / "index.json"
    target.write_bytes(b"{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(OSError) as e:
        open_regular(link, follow_symlinks=False)
    assert e.value.errno == errno.ELOOP
    with open_regular(target, follow_symlinks=False) as f:
        assert f.read() == b"{}"
    with open_regular(link) as f:
        assert f.read() == b"{}"


def test_the_stale_read_hash_is_sha256_file_of_a_regular_file_only(tmp_path: Path) -> None:
    """What atomic.read_stamps records of a file changed just now (within COARSE_NS) is facts.sha256_file of it
    without following a link: the same hash for a file (also one larger than a read step), none for a link, a FIFO
    (not opened: it would block), a directory; no file, nothing seen."""
    import hashlib

    from rwkv_registry.core.fsio import sha256_file
    from rwkv_registry.fs.atomic import Seen, file_stamp, read_stamps

    data = os.urandom((1 << 20) + 3)
    p = tmp_path / "README.md"
    p.write_bytes(data)
    link = tmp_path / "link.md"
    link.symlink_to(p)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "dir").mkdir()
    seen = read_stamps(tmp_path, "README.md", "link.md", "fifo", "dir", "absent")
    assert seen["README.md"] == Seen(file_stamp(p), sha256_file(p)[0])
    assert sha256_file(p)[0] == hashlib.sha256(data).hexdigest() == sha256_file(link)[0]
    for other in ("link.md", "fifo", "dir"):
        assert seen[other] == Seen(file_stamp(tmp_path / other), None), other
    assert seen["absent"] is None
