"""The architecture of docs/architecture.md, as a newcomer relies on it: no private name crosses a module, the
layers are import-linter contracts with no exception listed, every package of the core says what it is, and no
test module imports another.

The contracts themselves are checked by `make layers` (part of `make test`): import-linter needs the tree of links
that mypy reads, which `make typecheck` builds."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("registry", "model", "tui", "kernels")


def _modules() -> list[Path]:
    return sorted(p for d in SOURCES for p in (REPO / d).rglob("*.py") if "__pycache__" not in p.parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _crossings(path: Path) -> list[str]:
    """``from rwkv_registry.X import _name`` and ``module._name`` (a module of the project imported by name)."""
    tree = ast.parse(path.read_text("utf-8"))
    out: list[str] = []
    modules: set[str] = set()  # local names bound to modules of the project
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("rwkv_registry")):
            for alias in node.names:
                if _private(alias.name):
                    out.append(f"{path.relative_to(REPO)}:{node.lineno} imports {alias.name} from {node.module}")
                else:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rwkv_registry") and alias.asname:
                    modules.add(alias.asname)
    for node in ast.walk(tree):
        attr = isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
        if attr and node.value.id in modules:  # type: ignore[attr-defined]
            out.append(f"{path.relative_to(REPO)}:{node.lineno} uses {node.value.id}.{node.attr}")  # type: ignore[attr-defined]
    return out


def test_no_private_name_is_imported_across_modules() -> None:
    """A name that starts with ``_`` is its module's own: another module that needs it gets a public one."""
    found = [c for p in _modules() for c in _crossings(p)]
    assert not found, "\n".join(found)


def test_the_check_of_private_names_catches_both_forms(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from rwkv_registry.engine.validate import _walk\n"
        "from rwkv_registry.hub import sync\n"
        "sync._protected('x')\n"
        "from rwkv_registry.index.layout import layout_ok\n"
    )
    found = [c.split(" ", 1)[1] for c in _crossings_at(probe)]
    assert found == ["imports _walk from rwkv_registry.engine.validate", "uses sync._protected"]


def _crossings_at(path: Path) -> list[str]:
    global REPO
    saved, REPO = REPO, path.parent
    try:
        return _crossings(path)
    finally:
        REPO = saved


def test_only_the_cli_parses_command_lines() -> None:
    """argparse is the command line's: the core's packages but ``cli/`` take plain values, so a check or a writer can
    be called (and tested) without a Namespace."""
    core = sorted(p for p in (REPO / "registry").rglob("*.py") if "__pycache__" not in p.parts and "cli" not in p.parts)
    found = []
    for path in core:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(REPO)}:{node.lineno}" for n in names if n.split(".")[0] == "argparse"]
    assert not found, found


def _test_module_imports(path: Path) -> list[str]:
    """The imports of another test module (``test_*``) in ``path``: shared helpers live in the support modules
    (regtools, mutations, hub_server, ckpt_hostile, model_helpers, …), which tests and bench import alike."""
    tree = ast.parse(path.read_text("utf-8"))
    out: list[str] = []
    for node in ast.walk(tree):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        out += [f"{path.name}:{node.lineno} imports {n}" for n in names if n.split(".")[-1].startswith("test_")]
    return out


def test_no_test_module_imports_another() -> None:
    """A test module's helpers are its own; what two test modules (or a benchmark) share is in a support module."""
    files = sorted(p for d in ("tests", "bench") for p in (REPO / d).rglob("*.py") if "__pycache__" not in p.parts)
    found = [c for p in files for c in _test_module_imports(p)]
    assert not found, "\n".join(found)


def test_the_check_of_test_module_imports_catches_both_forms(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import test_hub\nfrom test_git import publish\nfrom regtools import git\n")
    assert _test_module_imports(probe) == ["probe.py:1 imports test_hub", "probe.py:2 imports test_git"]


def test_the_layers_are_contracts_without_exceptions() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["importlinter"]
    contracts = config["contracts"]
    kinds = {c["type"] for c in contracts}
    assert {"layers", "forbidden", "acyclic_siblings"} <= kinds
    assert not [c["name"] for c in contracts if c.get("ignore_imports")]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers" and "rwkv_registry.core" in c["layers"])
    packages = {p.name for p in (REPO / "registry").iterdir() if (p / "__init__.py").exists()}
    named = {part.strip().removeprefix("rwkv_registry.") for layer in layers for part in layer.split("|")}
    assert packages <= named, sorted(packages - named)  # a new package of the core takes its place in a layer


@pytest.mark.parametrize(
    "package", sorted(p.name for p in (REPO / "registry").iterdir() if (p / "__init__.py").exists())
)
def test_every_package_of_the_core_says_what_it_is(package: str) -> None:
    doc = ast.get_docstring(ast.parse((REPO / "registry" / package / "__init__.py").read_text("utf-8")))
    assert doc and len(doc) > 40
    assert f"`{package}/`" in (REPO / "docs" / "architecture.md").read_text("utf-8") or package in (
        REPO / "docs" / "architecture.md"
    ).read_text("utf-8")
