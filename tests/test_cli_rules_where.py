"""`rwkv-registry rules --where CODE`: the module that defines a rule, the modules that check it (with lines) and the
test files that test it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rwkv_registry.checks.catalogue import RULES, family_module
from rwkv_registry.cli import rules as where
from rwkv_registry.cli.main import main


def _where(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    code = main(["rules", "--where", *words])
    out, err = capsys.readouterr()
    return code, out, err


def _sections(out: str) -> tuple[list[str], list[str]]:
    """The indented lines under "checked in:" and under "tested in:" of one rule's block."""
    lines = out.splitlines()
    assert lines[1] == "defined in:" and lines[3] == "checked in:"
    checked = lines[lines.index("checked in:") + 1 : lines.index("tested in:")]
    tested = lines[lines.index("tested in:") + 1 :]
    return [x.strip() for x in checked], [x.strip() for x in tested]


def test_where_mis003_names_the_miss_checks_first_and_a_test_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _where(capsys, "MIS003")
    assert code == 0 and err == ""
    rule = RULES["MIS003"]
    assert out.splitlines()[0] == f"MIS003  {rule.severity:7}  {rule.title}"  # the line `rules` prints
    checked, tested = _sections(out)
    assert checked[0].startswith("registry/checks/miss.py: ")  # the primary module: the most occurrences
    lines = [int(n) for n in checked[0].split(": ", 1)[1].split(", ")]
    assert lines == sorted(lines) and lines
    source = (where.PACKAGE_DIR / "checks" / "miss.py").read_text().splitlines()
    assert all('"MIS003"' in source[n - 1] for n in lines)
    defined = out.splitlines()[2].strip()
    assert defined.startswith("registry/checks/miss.py: ")  # Rule("MIS003", ...), beside its checks
    line = int(defined.split(": ", 1)[1])
    assert source[line - 1].strip() == '"MIS003",' and source[line - 2].strip() == "Rule("
    assert line not in lines  # the definition is no check
    assert tested and all(x.startswith("tests/") and x.endswith(".py") for x in tested)
    assert "tests/test_validate_rules.py" in tested


def test_where_reads_the_code_in_any_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert _where(capsys, "MIS003")[:2] == _where(capsys, "mis003")[:2] == _where(capsys, " Mis003 ")[:2]


def test_where_takes_several_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _where(capsys, "mis003,LAY001", "sch001", "MIS003")
    assert code == 0
    blocks = out.rstrip("\n").split("\n\n")
    assert [b.split()[0] for b in blocks] == ["MIS003", "LAY001", "SCH001"]  # in order, once each
    assert all("\ndefined in:\n  registry/" in b for b in blocks)
    assert all("\nchecked in:\n  registry/" in b and "\ntested in:\n  tests/" in b for b in blocks)


def test_where_an_unknown_code_is_a_usage_error_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _where(capsys, "XYZ999")
    assert code == 2 and out == ""
    assert err.count("\n") == 2 and "Traceback" not in err  # the error line and its hint
    assert "\nhint: " in err
    assert "XYZ999" in err and "`rwkv-registry rules`" in err and err.startswith("error: ")
    code, out, err = _where(capsys, "MIS003", "nope")  # one unknown among known ones: nothing printed
    assert code == 2 and out == "" and "'nope'" in err


def test_where_does_not_combine_with_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--where", "MIS003", "--markdown"]) == 2
    assert "--markdown" in capsys.readouterr().err


def test_every_rule_is_defined_once_and_checked_by_some_module(capsys: pytest.CaptureFixture[str]) -> None:
    """A code that no module names but its definition is a rule nothing can emit (a dead rule); each is defined
    in the module of its family, the one that the catalogue takes it from."""
    assert main(["rules", "--where", *RULES, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["code"] for r in report] == list(RULES)
    unchecked = [r["code"] for r in report if not r["checked_in"]]
    assert unchecked == [], f"rules no module checks: {unchecked}"
    for r in report:
        assert all(p["path"].startswith("registry/") and p["lines"] for p in r["checked_in"])
        module = family_module(r["code"]).removeprefix("rwkv_registry.").replace(".", "/")
        assert r["defined_in"]["path"] == f"registry/{module}.py" and len(r["defined_in"]["lines"]) == 1, r


def test_plain_rules_output_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [f"{r.code}  {r.severity:7}  {r.title}" for r in RULES.values()]
    assert "checked in" not in out


def _package(tmp: Path, files: dict[str, str]) -> Path:
    package = tmp / "registry"
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    return package


def test_the_scan_reads_constants_in_any_expression_and_skips_the_definition(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "checks/miss.py": 'RULES = Rulebook(Rule("MIS003", E, "t", "h"))\nSEE = "MIS003"\n',
            "a.py": 'finding("MIS003", p, m)\nCODES = {"x": "MIS003"}\ncode = "MIS003" if x else "LAY001"\n',
            "b.py": 'Finding(code="MIS003")\n"see MIS003 in the docs"\n',
            "c.py": 'x = ("MIS003",)\n',
            "broken.py": 'finding("MIS003",\n',
        },
    )
    places = where.checked_in("MIS003", package)
    assert places == (
        where.Place("registry/a.py", (1, 2, 3)),  # most occurrences first
        where.Place("registry/b.py", (1,)),  # ties by path; a longer string naming it is no occurrence
        where.Place("registry/c.py", (1,)),
        where.Place("registry/checks/miss.py", (2,)),  # its use beside the table counts, Rule("MIS003", ...) not
    )
    assert where.defined_in("MIS003", package) == where.Place("registry/checks/miss.py", (1,))
    assert where.defined_in("LAY001", package) is None


def test_outside_a_source_checkout_the_tests_are_not_looked_for(tmp_path: Path) -> None:
    package = _package(tmp_path, {"a.py": 'finding("LAY001", p, m)\n'})
    [item] = where.where(["lay001"], package)
    assert item.tested_in is None
    text = where.render_where([item])
    assert "tested in: (tests/ not found: not a source checkout)" in text
    assert "checked in:\n  registry/a.py: 1\n" in text
    (tmp_path / "tests").mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tests" / "test_a.py").write_text('assert code == "LAY001"\nLAY0010 = 1\n')
    (tmp_path / "tests" / "test_b.py").write_text("LAY0010 = XLAY001\n")  # a longer word is no mention
    [item] = where.where(["LAY001"], package)
    assert item.tested_in == ("tests/test_a.py",)


def test_where_reads_the_checks_without_running_them() -> None:
    """The catalogue is imported (each family's rules sit in its module); the modules that run the checks and the
    writers (the engine, the store, the Hub, the TUI) and torch are only scanned."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from rwkv_registry.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['rules', '--where', 'MIS003', 'PTH001']) == 0\n"
        "roots = ('rwkv_registry', 'torch', 'textual')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in roots)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert "rwkv_registry.checks.catalogue" in loaded and not loaded & {"torch", "textual"}
    later = (
        "rwkv_registry.engine",
        "rwkv_registry.store",
        "rwkv_registry.hub",
        "rwkv_registry.tui",
        "rwkv_registry.model",
    )
    assert not any(m.startswith(later) for m in loaded)
