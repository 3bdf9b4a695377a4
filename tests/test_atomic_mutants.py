"""Checks of registry/fs/atomic.py that a mutation audit found no test for.

Each test kills at least one hand-made mutant of atomic.py that the rest of the suite let live
(named in its docstring): a write that fails or is interrupted must leave nothing behind and the
registry as it was.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import ClassVar

import pytest

from rwkv_registry.core.errors import RegistryIOError
from rwkv_registry.fs import atomic
from rwkv_registry.fs.atomic import TMP_PREFIX, atomic_write_bytes


def _temps(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith(TMP_PREFIX))


@pytest.mark.parametrize("error", [OSError(errno.EXDEV, "Invalid cross-device link"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_atomic_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    """A03: without the unlink of _atomic_write's except branch, the temporary file stayed beside the target."""
    target = tmp_path / "index.json"
    target.write_bytes(b"old")

    def fail(src: object, dst: object) -> None:
        raise error

    monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(RegistryIOError if isinstance(error, OSError) else KeyboardInterrupt) as info:
        atomic_write_bytes(target, b"new")
    if isinstance(error, OSError):
        assert str(target) in info.value.message and "Invalid cross-device link" in info.value.message
    assert _temps(tmp_path) == []
    assert target.read_bytes() == b"old"


def test_an_index_json_alone_above_is_no_registry_for_init(tmp_path: Path) -> None:
    """A06: registry_around took any directory holding an index.json for a registry, so init refused a
    directory inside a project whose own index.json (a web page's, say) has neither SHA256SUMS nor README.md
    beside it; with one of them beside it, it is a registry and init still refuses."""
    from rwkv_registry.cli.main import main
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.store.ops import init_registry

    (tmp_path / "index.json").write_text("{}")
    main_rc = main(["init", str(tmp_path / "weights")])
    assert main_rc == 0 and (tmp_path / "weights" / "index.json").is_file()
    (tmp_path / "README.md").write_text("# a registry\n")
    with pytest.raises(UsageError, match="lies inside the registry at"):
        init_registry(tmp_path / "more")
    assert not (tmp_path / "more").exists()


def test_an_index_json_linking_to_the_registry_itself_is_not_called_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A07: index_link_outside without its ``target == top`` case took a link to the registry's own directory
    for one leaving it, and readme refused it as LAY005 ('outside the registry'), which it is not."""
    from rwkv_registry.cli.main import main
    from rwkv_registry.fs.atomic import index_link_outside

    root = tmp_path / "r"
    assert main(["init", str(root)]) == 0
    (root / "index.json").unlink()
    (root / "index.json").symlink_to(".")
    assert index_link_outside(root) is None
    capsys.readouterr()
    assert main(["readme", str(root)]) == 1
    err = capsys.readouterr().err
    assert "index.json: is not a regular file" in err and "LAY005" not in err


@pytest.mark.parametrize("names", [[], ["notes.txt", ".rwkv-registry.lock"]], ids=["empty", "a-lock-among-files"])
def test_only_a_directory_of_nothing_but_transient_files_passes_for_an_interrupted_init(
    tmp_path: Path, names: list[str]
) -> None:
    """A10: an empty directory, A11: one holding any transient file among others, taken for a killed init (so
    a write command would take its lock and recover there) instead of 'not a registry'."""
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.fs.atomic import require_registry

    for name in names:
        (tmp_path / name).write_text("")
    with pytest.raises(UsageError, match="is not a registry"):
        require_registry(tmp_path)
    (tmp_path / "notes.txt").unlink(missing_ok=True)
    if names:
        assert require_registry(tmp_path) == tmp_path  # the lock file alone: a killed init, recover cleans it


class _BusyLock:
    """A FileLock always held by someone else: records each acquire's timeout and times out."""

    asked: ClassVar[list[float]] = []

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path

    def acquire(self, timeout: float) -> None:
        import filelock

        self.asked.append(timeout)
        raise filelock.Timeout(self.path)

    def release(self) -> None:
        raise AssertionError("never acquired")


@pytest.mark.parametrize(
    ("timeout", "tty", "asked", "notice"),
    [(30.0, False, [5.0, 25.0], True), (5.0, False, [5.0], False), (3.0, True, [1.0, 2.0], True)],
)
def test_a_blocked_writer_waits_its_timeout_in_all_saying_so_once_past_the_notice(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    timeout: float,
    tty: bool,
    asked: list[float],
    notice: bool,
) -> None:
    """A12: timeout < notice (for <=) said 'waiting' for a wait that ended right there; A13: the second acquire
    waited the whole timeout again (notice + timeout in all)."""
    import filelock

    from rwkv_registry.core.errors import LockedError

    (tmp_path / "index.json").write_text("{}")
    monkeypatch.setattr(filelock, "FileLock", _BusyLock)
    monkeypatch.setattr(atomic, "_stderr_is_terminal", lambda: tty)
    monkeypatch.setattr(_BusyLock, "asked", [])
    with (
        pytest.raises(LockedError, match=f"lock .* held for {timeout:g} s"),
        atomic.registry_lock(tmp_path, timeout=timeout),
    ):
        pass
    assert _BusyLock.asked == asked
    assert ("waiting for the lock held by another rwkv-registry command" in capsys.readouterr().err) is notice
