"""``demo --force`` replaces an earlier demo and nothing else.

The demo's index.json names No-22/rwkv-agent-weights, which is also the user's real repository:
a ``pull`` of it, or a registry started with ``init --name``, must never be wiped by ``--force``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from rwkv_registry.core.errors import UsageError
from rwkv_registry.store.demo import build_demo


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo(tmp_path_factory.mktemp("pristine") / "demo", log=lambda _m: None)


@pytest.fixture
def demo(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(pristine, tmp_path / "demo", symlinks=True))


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_force_replaces_an_earlier_demo_even_with_edited_text(demo: Path, pristine: Path) -> None:
    (demo / "README.md").write_text("my notes on the demo\n")
    (demo / "empty-dir").mkdir()
    build_demo(demo, force=True, log=lambda _m: None)
    assert tree(demo) == tree(pristine) and not (demo / "empty-dir").exists()


def _git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def _replace_a_weight(root: Path) -> None:
    state = next(root.rglob("v141b-s1224.pth"))
    state.write_bytes(b"the user's real State" + state.read_bytes()[21:])


def _add_a_weight(root: Path) -> None:
    (next(root.rglob("state")) / "v1.41" / "mine.pth").write_bytes(b"weights")


def _add_a_note(root: Path) -> None:
    (root / "NOTES.md").write_text("plans\n")


def _add_a_link(root: Path) -> None:
    (root / "elsewhere").symlink_to(root.parent)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (_git_init, "it is a git repository"),
        (_replace_a_weight, "it holds weights the demo did not write (rwkv7-g1k-7.2b-20260930-ctx25600/state/v1.41/"),
        (_add_a_weight, "it holds files the demo does not write (rwkv7-g1k-7.2b-20260930-ctx25600/state/v1.41/mine"),
        (_add_a_note, "it holds files the demo does not write (NOTES.md)"),
        (_add_a_link, "it holds files the demo does not write (elsewhere)"),
    ],
)
def test_force_refuses_what_the_demo_did_not_write(demo: Path, change: Callable[[Path], None], why: str) -> None:
    change(demo)
    before = tree(demo)
    with pytest.raises(UsageError) as e:
        build_demo(demo, force=True, log=lambda _m: None)
    assert why in str(e.value) and "--force replaces only what the demo wrote" in str(e.value)
    assert "Nothing in it was touched" in (e.value.hint or "")
    assert tree(demo) == before


def test_cli_force_on_a_pulled_copy_of_the_real_repository_exits_2(demo: Path) -> None:
    from rwkv_registry.cli.main import main

    _replace_a_weight(demo)  # a copy of the real repository: its index names the demo's, its weights differ
    before = tree(demo)
    assert main(["demo", str(demo), "--force"]) == 2
    assert tree(demo) == before


def test_ctrl_c_while_the_demo_registry_is_written_says_incomplete_and_force_rebuilds(tmp_path, monkeypatch, capsys):
    import rwkv_registry.store.demo as demo_mod
    from rwkv_registry.cli.main import main

    calls = []
    real = demo_mod.write_synthetic_miss

    def interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(demo_mod, "write_synthetic_miss", interrupted)
    path = tmp_path / "d"
    assert main(["demo", str(path)]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"the demo registry in {path} is incomplete; remove it, or run `rwkv-registry demo {path} --force`" in err
    monkeypatch.undo()
    assert main(["demo", str(path), "--force"]) == 0  # what the message says works


def test_ctrl_c_while_the_complete_demo_registry_is_validated_says_complete(tmp_path, monkeypatch, capsys):
    import rwkv_registry.engine.validate as validate_mod
    from rwkv_registry.cli.main import main

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(validate_mod, "validate_registry", interrupted)
    path = tmp_path / "d"
    assert main(["demo", str(path)]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "incomplete" not in err
    assert f"the demo registry in {path} is complete (it was being validated" in err
