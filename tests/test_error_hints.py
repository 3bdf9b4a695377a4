"""Every error that stops a command says the fix: each ``RegistryError`` built in the code gets a ``hint``.

The check walks the AST of registry/, model/, tui/ and kernels/: a call of ``RegistryError`` or of one of its
subclasses (found by their ``class`` lines, through any depth) must pass ``hint=`` with something that is not an
empty string. A few classes supply their own hint (listed in ``SELF_HINTED``, each checked at run time).
"""

from __future__ import annotations

import ast
import errno
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.core.errors import CheckpointError, RegistryError, os_error_hint
from rwkv_registry.formats.jsonload import JsonLoadError, JsonTooLargeError
from rwkv_registry.formats.rules import refusal

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("registry", "model", "tui", "kernels")

# Classes whose constructor fills the hint itself when the caller gives none.
SELF_HINTED = {
    "JsonLoadError": "the SCH001 fix by default",
    "JsonTooLargeError": "its own fix (check that this is the right file)",
}

# Files whose errors may lack a hint for now, with the reason. Keep it short: a hint almost always helps.
ALLOWED: dict[str, str] = {}


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    cls: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.cls}(...) {self.why}"


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def error_classes(trees: dict[str, ast.Module]) -> set[str]:
    """RegistryError and every class that derives from it, at any depth, in ``trees``."""
    names = {"RegistryError"}
    while True:
        more = {
            node.name
            for tree in trees.values()
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and any(_name(b) in names for b in node.bases)
        }
        if more <= names:
            return names
        names |= more


def _empty(value: ast.expr) -> bool:
    """Is ``value`` an empty (or blank) string written in the code?"""
    if isinstance(value, ast.Constant):
        return value.value is None or (isinstance(value.value, str) and not value.value.strip())
    if isinstance(value, ast.JoinedStr):
        return not value.values or all(
            isinstance(v, ast.Constant) and isinstance(v.value, str) and not v.value.strip() for v in value.values
        )
    return False


def unhinted(trees: dict[str, ast.Module]) -> list[Site]:
    """Every construction of an error class without a usable ``hint=``."""
    classes = error_classes(trees) - set(SELF_HINTED)
    out = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _name(node.func) not in classes:
                continue
            cls = str(_name(node.func))
            hint = next((k.value for k in node.keywords if k.arg == "hint"), None)
            if hint is None:
                unpacked = any(k.arg is None for k in node.keywords)
                out.append(Site(path, node.lineno, cls, "passes **kwargs, no visible hint" if unpacked else "no hint"))
            elif _empty(hint):
                out.append(Site(path, node.lineno, cls, "an empty hint"))
    return out


def parse_tree(folders: tuple[str, ...] = SCANNED) -> dict[str, ast.Module]:
    return {
        p.relative_to(ROOT).as_posix(): ast.parse(p.read_text("utf-8"), str(p))
        for folder in folders
        for p in sorted((ROOT / folder).rglob("*.py"))
    }


def test_every_error_that_stops_a_command_carries_a_hint() -> None:
    sites = unhinted(parse_tree())
    bad = [s for s in sites if s.path not in ALLOWED]
    assert not bad, "errors without a hint (give hint=, the fix, not the message again):\n" + "\n".join(map(str, bad))
    stale = set(ALLOWED) - {s.path for s in sites}
    assert not stale, f"every error of {sorted(stale)} has a hint now: remove it from ALLOWED"


def test_the_check_finds_an_error_without_a_hint() -> None:
    src = (
        "class RegistryError(Exception): ...\n"
        "class UsageError(RegistryError): ...\n"
        "class Deeper(UsageError): ...\n"
        "def f(e, kw):\n"
        "    raise UsageError('no hint')\n"
        "    raise Deeper('empty', hint='')\n"
        "    raise errors.UsageError('blank f-string', hint=f' ')\n"
        "    err = Deeper('built, raised later', **kw)\n"
        "    raise UsageError('fine', hint='Do this.')\n"
        "    raise Deeper(f'fine {e}', hint=e.hint or 'Do that.')\n"
        "    raise refusal('PTH001', 'its rule gives the hint')\n"
        "    raise ValueError('not ours')\n"
    )
    sites = unhinted({"x.py": ast.parse(src)})
    assert [(s.line, s.cls, s.why) for s in sites] == [
        (5, "UsageError", "no hint"),
        (6, "Deeper", "an empty hint"),
        (7, "UsageError", "an empty hint"),
        (8, "Deeper", "passes **kwargs, no visible hint"),
    ]


def test_the_scan_sees_the_error_classes_of_every_package() -> None:
    classes = error_classes(parse_tree())
    assert {"UsageError", "RegistryIOError", "RefusedError", "LockedError", "ModelError"} <= classes
    assert {"ShapeMismatchError", "BrokenEntryError", "JsonTooLargeError"} <= classes  # two levels down, other files
    assert set(SELF_HINTED) <= classes


@pytest.mark.parametrize(
    "error",
    [
        refusal("PTH001", "file is empty"),
        JsonLoadError("a.json", "Expecting value", line=1, col=1),
        JsonTooLargeError("a.json", 10**9, 64 * 2**20),
    ],
    ids=lambda e: type(e).__name__,
)
def test_self_hinted_classes_fill_the_hint(error: RegistryError) -> None:
    assert error.hint.strip()


def test_a_readers_refusal_takes_its_rules_hint_unless_given_one() -> None:
    e = refusal("LFS001", "a pointer")
    assert isinstance(e, CheckpointError) and e.code == "LFS001" and e.hint == RULES["LFS001"].hint
    assert refusal("PTH001", "it shrank", hint="Wait for the writer.").hint == "Wait for the writer."
    assert refusal("MIS002", "too large", hint=RULES["MIS002"].hint).code == "MIS002"  # another family's: given
    with pytest.raises(KeyError):
        refusal("MIS002", "too large")  # a code of no reader rule, and no fix given: a bug, not a silent blank


_RULE_CODE = re.compile(r"^[A-Z]{3}\d{3}$")


def test_every_checkpoint_error_code_is_a_rule_with_a_hint() -> None:
    """The readers' refusal(code, ...) and _fail(code, ...) name rules of the catalogue, whose hint they carry."""
    codes: dict[str, str] = {}
    for path, tree in parse_tree(("registry", "model")).items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node.func) in ("refusal", "_fail") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str) and _RULE_CODE.match(first.value):
                    codes.setdefault(first.value, f"{path}:{node.lineno}")
    assert len(codes) >= 10, codes  # the readers raise PTH001..PTH012, LFS001, MIS...
    missing = {c: where for c, where in codes.items() if c not in RULES or not RULES[c].hint.strip()}
    assert not missing, f"checkpoint errors with a code that is no rule (or has no hint): {missing}"


# --- the CLI prints the hint ------------------------------------------------------------------------------------


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from rwkv_registry.cli.main import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_prints_the_hint_of_a_bad_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rwkv_registry.cli.main import main

    reg = tmp_path / "reg"
    assert main(["init", str(reg)]) == 0
    capsys.readouterr()
    arch = "n_layer=2,n_embd=128,vocab_size=65536"
    argv = ["add-base", str(reg), "--name", "rwkv7-x", "--sha256", "xyz", "--arch", arch, "--source", "BlinkDL/x"]
    code, out, err = _fails(argv, capsys)
    assert code == 2 and out == ""
    assert "error: --sha256 'xyz' is not 64 hex characters" in err
    assert "hint: Give the base file's full sha256 (`sha256sum FILE` prints it)" in err
    weights, train = tmp_path / "s.pth", tmp_path / "train.json"
    weights.write_bytes(b"x")
    train.write_text("{}")
    argv = ["add", str(reg), str(weights), "--base", "rwkv7-x", "--train", str(train), "--data-version", "1.41"]
    code, out, err = _fails(argv, capsys)
    assert code == 2 and "must look like v1.41" in err and "hint: " in err and "--data-version v1.41." in err


def test_cli_prints_the_hint_with_format_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a.json"
    a.write_text("[]")
    code, out, err = _fails(["compare", str(a), str(a), "--format", "json"], capsys)
    assert code == 2 and out == ""  # no half JSON report: the error and its fix go to stderr
    assert f"error: {a}: not a JSON object" in err
    assert "hint: compare takes per-question result files (results.schema.json)" in err


def test_cli_prints_the_fix_of_an_os_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    real_open = os.open

    def full_disk(path: str, *args: int) -> int:
        if str(path).endswith(".key"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_open(path, *args)

    monkeypatch.setattr(os, "open", full_disk)
    code, _out, err = _fails(["keygen", str(tmp_path / "signing.key")], capsys)
    assert code == 2
    assert f"error: cannot create {tmp_path / 'signing.key'}: No space left on device" in err
    assert f"hint: Free some space (or quota) on the disk that holds {tmp_path}" in err
    assert not (tmp_path / "signing.key").exists()


@pytest.mark.parametrize(
    ("number", "words"),
    [
        ("ENOSPC", "Free some space"),
        ("EDQUOT", "Free some space"),
        ("EACCES", "Check the permissions of /r"),
        ("EPERM", "Check the permissions of /r"),
        ("EROFS", "read-only file system"),
        ("ENOENT", "missing or was moved"),
        ("ENAMETOOLONG", "shorter path"),
        ("EISDIR", "is a directory"),
        ("EIO", "the disk is healthy"),
    ],
)
def test_os_error_hint_by_errno(number: str, words: str) -> None:
    import errno

    from rwkv_registry.core.errors import os_error_hint

    assert words in os_error_hint(OSError(getattr(errno, number), "x"), "/r")


def test_an_integer_too_long_to_parse_gets_the_number_fix_not_the_syntax_one() -> None:
    from rwkv_registry.formats.jsonload import load_json_bytes

    with pytest.raises(JsonLoadError) as caught:
        load_json_bytes(b'{"n": ' + b"7" * 5000 + b"}", path="train.json")
    assert "digits" in caught.value.message  # Python's own limit, hit before the range check
    assert caught.value.hint.startswith("Write numbers within ±1.7e308")
    assert caught.value.hint != RULES["SCH001"].hint


@pytest.mark.parametrize(
    ("code", "says"),
    [
        (errno.ENOSPC, "Free some space (or quota) on the disk that holds /w/x"),
        (errno.EDQUOT, "Free some space (or quota) on the disk that holds /w/x"),
        (errno.EACCES, "Check the permissions of /w/x and of the directories above it"),
        (errno.EPERM, "Check the permissions of /w/x and of the directories above it"),
        (errno.EROFS, "/w/x is on a read-only file system"),
        (errno.ENOENT, "/w/x (or a directory above it) is missing or was moved"),
        (errno.ENOTDIR, "/w/x (or a directory above it) is missing or was moved"),
        (errno.ENAMETOOLONG, "A name on the path is too long for the file system"),
        (errno.EISDIR, "/w/x is a directory: give a file."),
        (errno.EIO, "Check that /w/x is reachable and the disk is healthy"),
        (None, "Check that /w/x is reachable and the disk is healthy"),
    ],
)
def test_each_errno_gets_its_fix(code: int | None, says: str) -> None:
    e = OSError(code, "message") if code is not None else OSError("no errno")
    assert os_error_hint(e, "/w/x").startswith(says)
