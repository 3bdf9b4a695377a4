"""The layout rules (LAY001–LAY017): what may lie where in a registry, under which names, and how it may be linked."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from rwkv_registry.checks.miss import LEGACY_FILES
from rwkv_registry.core.rules import E, Finding, Rule, Rulebook, W
from rwkv_registry.core.textsafe import clip
from rwkv_registry.fs.atomic import (
    CASE_TWIN_HINT,
    JOURNAL_NAME,
    LINK_OUTSIDE_HINT,
    LOCK_NAME,
    TMP_PREFIX,
    is_transient,
)
from rwkv_registry.index.layout import METHODS, VERSION_DIR, layout_ok, misplaced, name_key
from rwkv_registry.index.sums import SIG_NAME, SUMS_NAME

ROOT_FILES = {
    "index.json",
    SUMS_NAME,
    SIG_NAME,
    "README.md",
    ".gitattributes",
    ".gitignore",
    ".pre-commit-config.yaml",
    "LICENSE",
    "LICENSE.md",
    "LICENSE.txt",
    LOCK_NAME,
    JOURNAL_NAME,
}

RULES = Rulebook(
    Rule(
        "LAY001",
        E,
        "unknown entry at the registry root",
        "Only index.json, SHA256SUMS (and SHA256SUMS.sig), README.md, LICENSE (.md, .txt), .gitattributes, "
        ".gitignore, .pre-commit-config.yaml and one directory per base may sit at the root; move or delete "
        "the entry.",
    ),
    Rule(
        "LAY002",
        E,
        "base directory not recorded in index.json",
        "Register it with `rwkv-registry add-base`, or remove the directory.",
    ),
    Rule(
        "LAY003",
        E,
        "base in index.json has no directory",
        "Create `<base>/state` and `<base>/miss` (add-base does), or remove the base from index.json.",
    ),
    Rule(
        "LAY004",
        E,
        "file in a place the layout does not allow",
        "Weights go to <base>/state/<data-version>/<name>.pth (or .safetensors) or "
        "<base>/miss/<data-version>/<group>/adapter-final.pth (the single-file package; a legacy "
        "adapter.json + adapter.pth folder is published with `rwkv-registry add REGISTRY FOLDER …`, which checks "
        "it and writes adapter-final.pth: MIS021), with train.json beside the versions; move or delete the file.",
    ),
    Rule(
        "LAY005",
        E,
        "symbolic link leaving the registry",
        LINK_OUTSIDE_HINT,  # the writers' refusals carry it too (fs/atomic.py)
    ),
    Rule(
        "LAY006",
        E,
        "unsafe recorded path",
        "Record paths relative to the registry root, with `/` separators, without `..` or a leading `/`.",
    ),
    Rule(
        "LAY007", E, "weight file without an entry in index.json", "Register it with `rwkv-registry add`, or delete it."
    ),
    Rule(
        "LAY008",
        E,
        "entry whose file is missing",
        "Restore the file (`git checkout -- PATH`, `git lfs pull`) or remove the entry from index.json.",
    ),
    Rule(
        "LAY009",
        E,
        "entry path does not match its base, method, data version or group",
        "Entry fields and the path must agree: <base>/<method>/<data-version>/…; fix one of them.",
    ),
    Rule(
        "LAY010",
        E,
        "file cannot be read",
        "Check permissions and the file system; the validator needs read access to every file.",
    ),
    Rule(
        "LAY011",
        W,
        "empty directory",
        "Remove the empty directory (git does not track it) or add the weights that belong there.",
    ),
    Rule(
        "LAY012",
        E,
        "interrupted write left behind",
        "A write command was killed; run `rwkv-registry recover PATH` (any write command also recovers): "
        "it completes a journaled write or removes its temporary files.",
    ),
    Rule(
        "LAY013",
        E,
        "a write is in progress",
        "Another rwkv-registry command holds the registry's lock and is writing; wait for it to finish, then "
        "validate again (nothing else was checked: the tree is half-written).",
    ),
    Rule(
        "LAY014",
        E,
        "files look moved or renamed",
        "Files recorded in index.json or SHA256SUMS are missing, and files with the same sha256 sit elsewhere: "
        "published paths never change; move them back (`git mv NEW OLD`), or, if an entry's path in index.json "
        "was edited, restore it (`git checkout -- index.json`). The per-file findings of the move are left out "
        "until then.",
    ),
    Rule(
        "LAY015",
        E,
        "not a regular file or directory",
        "Only regular files and directories are hashed and published (a FIFO, socket or device file is not): delete "
        "it and put the file itself in its place: `rwkv-registry readme PATH` writes README.md, `rwkv-registry sums "
        "PATH` SHA256SUMS, `rwkv-registry init` the .gitattributes it shows; in a git clone, `git checkout -- PATH` "
        "restores a committed one.",
    ),
    Rule(
        "LAY016",
        E,
        "not a registry",
        "Check the path: a registry's root holds index.json, README.md, SHA256SUMS and one directory per base "
        "(<base>/state, <base>/miss). To start one here: `rwkv-registry init PATH`, then `rwkv-registry add-base "
        "PATH BASE_FILE --source OWNER/REPO`; `rwkv-registry demo PATH` builds an example registry.",
    ),
    Rule(
        "LAY017",
        E,
        "names that differ only in letter case or Unicode normalization",
        CASE_TWIN_HINT,  # the writers' refusals carry it too (fs/atomic.py)
    ),
)
finding = RULES.finding


def case_twins(names: Sequence[str], rel: str) -> list[Finding]:
    """LAY017 for each name of one directory ``rel`` ("" for the root; ``names`` sorted) that differs from an earlier
    one only in letter case or Unicode normalization (:func:`~rwkv_registry.index.layout.name_key`): one file on macOS
    and Windows. The local walk's check, and the Hub validator's on its listing."""
    out: list[Finding] = []
    if len(names) < 2:
        return out
    first: dict[str, str] = {}
    for name in names:
        if not rel and name == ".git":
            continue
        other = first.setdefault(name_key(name), name)
        if other != name:
            out.append(
                finding(
                    "LAY017",
                    f"{rel}/{name}" if rel else name,
                    f"{clip(name)!r} and {clip(other)!r} differ only in letter case or Unicode normalization: "
                    "on macOS and Windows they are one file",
                )
            )
    return out


def _basename(rel: str) -> str:
    return rel[rel.rfind("/") + 1 :]


def legacy_folder_of(parts: Sequence[str], files: Collection[str]) -> str | None:
    """The folder ``<base>/miss/<version>/<group>`` when ``parts`` is its ``adapter.json`` or ``adapter.pth`` and the
    folder holds both among ``files`` (a legacy two-file MiSS package: MIS021), else None."""
    if len(parts) != 5 or parts[1] != "miss" or parts[4] not in LEGACY_FILES:
        return None
    folder = "/".join(parts[:4])
    return folder if all(f"{folder}/{name}" in files for name in LEGACY_FILES) else None


def layout_findings(
    files: Collection[str],
    dirs: Collection[str],
    empty_dirs: Sequence[str],
    bases: Collection[str],
    *,
    judge_base_dirs: bool = True,
) -> tuple[list[Finding], set[str]]:
    """LAY001–LAY004, LAY011 and LAY012 on a tree of ``files`` and ``dirs`` (relative paths), ``empty_dirs`` among
    them, whose index.json names ``bases``; ``judge_base_dirs`` False when index.json is unreadable (its SCH finding
    says so): no verdict on which directories are bases. Also the legacy two-file MiSS packages found
    (:func:`legacy_folder_of`: MIS021 judges them, not LAY004)."""
    out: list[Finding] = []
    legacy: set[str] = set()
    base_dirs = {d for d in dirs if "/" not in d} if judge_base_dirs else set()
    for name in sorted(base_dirs - set(bases)):
        out.append(finding("LAY002", name, f"directory {name}/ is not a base in index.json"))
    for name in sorted(set(bases) - base_dirs):
        out.append(finding("LAY003", name, f"base {name!r} has no directory {name}/"))
    for rel in files:
        if _basename(rel).startswith(TMP_PREFIX) or rel == JOURNAL_NAME:
            out.append(finding("LAY012", rel, "temporary file or journal of an interrupted write"))
            continue
        parts = rel.split("/")
        if len(parts) == 1:
            if rel not in ROOT_FILES:
                out.append(finding("LAY001", rel, f"{rel} is not a known registry file"))
            continue
        if parts[0] not in bases:
            continue  # LAY002 covers the whole directory
        folder = legacy_folder_of(parts, files)
        if folder is not None:
            legacy.add(folder)
        elif not layout_ok(parts):
            out.append(finding("LAY004", rel, misplaced(parts)))
    for d in dirs:
        parts = d.split("/")
        if len(parts) == 3 and parts[1] in METHODS and not VERSION_DIR.match(parts[2]):
            out.append(finding("LAY004", d, f"data-version directory {parts[2]!r} must look like v1.41"))
        elif len(parts) == 2 and parts[0] in bases and parts[1] not in METHODS:
            out.append(finding("LAY004", d, "a base directory holds only state/ and miss/"))
    for d in empty_dirs:
        out.append(finding("LAY011", d, "empty directory"))
    return out, legacy


def entry_path_findings(path: str, entry: Mapping[str, Any]) -> list[Finding]:
    """LAY009: the index.json ``entry`` recorded at ``path`` names another base, method, data version or group
    than its path says, or a ``train`` that is not its data-version directory's train.json. A field that is absent
    is SCH002's: compared only when present, never shown as None."""
    out: list[Finding] = []
    eid = entry.get("id")
    parts = path.split("/")
    method = entry.get("method")
    expected_len = 5 if method == "miss" else 4
    fields = {"base": entry.get("base"), "method": method, "data": (entry.get("data") or {}).get("version")}
    if method == "miss":
        fields["group"] = entry.get("group")
    if (
        len(parts) != expected_len
        or ("base" in entry and parts[0] != entry.get("base"))
        or ("method" in entry and parts[1] != method)
        or (fields["data"] is not None and parts[2] != fields["data"])
        or (method == "miss" and (parts[3] != entry.get("group") or parts[4] != "adapter-final.pth"))
    ):
        shown = ", ".join(f"{k} {v}" for k, v in fields.items() if v is not None)
        out.append(finding("LAY009", path, f"entry {eid!r} ({shown}) does not match its path"))
    train = entry.get("train")
    if isinstance(train, str) and train != "/".join([*parts[:3], "train.json"]):
        out.append(
            finding(
                "LAY009", path, f"entry {eid!r}: train {train!r} is not the train.json of its data-version directory"
            )
        )
    return out


def _common_tail(old: str, new: str) -> int:
    """Trailing path components the two share, leaving at least one of each (the renamed part)."""
    a, b = old.split("/"), new.split("/")
    n = 0
    while n < min(len(a), len(b)) - 1 and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def find_moves(
    want: Mapping[str, str], by_sha: Mapping[str, Sequence[str]]
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """LAY014's matching: each missing recorded path of ``want`` (path -> its recorded sha256) paired with the
    unrecorded file of the same sha256 (``by_sha``) that shares the most trailing path components with it, best
    matches first so that a weaker candidate does not take a file a better one needs; a tie is not guessed. The
    pairs are grouped by what was renamed: (old prefix, new prefix) -> [(old path, new path)]."""

    def best_tail(old: str) -> int:
        return max((_common_tail(old, c) for c in by_sha.get(want[old], [])), default=-1)

    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    used: set[str] = set()
    for old in sorted(want, key=lambda o: (-best_tail(o), o)):
        old_parts = old.split("/")
        cands = sorted(
            (c for c in by_sha.get(want[old], []) if c not in used),
            key=lambda c, o=old: _common_tail(o, c),  # type: ignore[misc]  # mypy cannot type a lambda's default
            reverse=True,
        )
        if not cands or (len(cands) > 1 and _common_tail(old, cands[0]) == _common_tail(old, cands[1])):
            continue  # none, or no best match: not guessed
        new = cands[0]
        used.add(new)
        k = _common_tail(old, new)
        new_parts = new.split("/")
        key = ("/".join(old_parts[: len(old_parts) - k]), "/".join(new_parts[: len(new_parts) - k]))
        groups.setdefault(key, []).append((old, new))
    return groups


def move_finding(old_p: str, new_p: str, pairs: Sequence[tuple[str, str]], *, listed: bool) -> Finding:
    """LAY014 for the ``pairs`` (old path, new path) of one renamed ``old_p`` -> ``new_p``; ``listed``: whether
    SHA256SUMS lists the old path (if not, only index.json knows it: the entry's path may have been edited)."""
    if len(pairs) == 1 and (old_p, new_p) == pairs[0] and not listed:
        message = (
            f"index.json records {old_p}, which is missing; {new_p} holds the same bytes "
            "(was the entry's path edited, or the file moved?)"
        )
    elif len(pairs) == 1 and (old_p, new_p) == pairs[0]:
        message = f"{old_p} is missing and {new_p} holds the same bytes: moved or renamed?"
    else:
        message = (
            f"{old_p}/ looks renamed to {new_p}/ ({len(pairs)} recorded file(s) missing there, found here "
            "with the same sha256)"
        )
    return finding("LAY014", new_p, message, moved_from=old_p)


# --- what the walk finds, and whether a tree is a registry at all ---------------------------------------------

REGISTRY_MARKERS = frozenset({"index.json", "README.md", SUMS_NAME, SIG_NAME})  # a root holding one is a registry


def escaping_link_finding(rel: str, target: str) -> Finding:
    """LAY005 for a symbolic link at ``rel`` whose ``target`` lies outside the registry (never followed)."""
    return finding("LAY005", rel, f"symbolic link to {target} leaves the registry")


def special_file_finding(rel: str, kind: str) -> Finding:
    """LAY015 for ``rel``, ``kind`` (a FIFO, a socket, a device: never opened) in place of a file or directory."""
    return finding("LAY015", rel, f"{kind}, not a regular file or directory")


def marks_a_registry(paths: Iterable[str]) -> bool:
    """Whether any of ``paths`` (relative to the root, of any kind: file, directory, link, FIFO) makes the root a
    registry, damaged or not: a registry file (:data:`REGISTRY_MARKERS`) or a file of an interrupted write at the
    root, or a ``state`` or ``miss`` directory one level below. Without one, the root is plainly no registry:
    LAY016 alone (:func:`not_a_registry_finding`) instead of each missing file's finding."""
    for rel in paths:
        top, _, below = rel.partition("/")
        if top in REGISTRY_MARKERS or is_transient(top) or below in METHODS:
            return True
    return False


def not_a_registry_finding(root: str, tops: Sequence[str]) -> Finding:
    """LAY016 for the directory ``root``, plainly no registry, holding ``tops`` (its entries, sorted)."""
    where = "it is empty" if not tops else f"it holds {len(tops)} other entr{'y' if len(tops) == 1 else 'ies'}"
    where += f" ({', '.join(repr(t) for t in tops[:3])}{', …' if len(tops) > 3 else ''})" if tops else ""
    return finding(
        "LAY016",
        ".",
        f"{root} is not a registry: no index.json, README.md, SHA256SUMS or base directory "
        f"(<base>/state, <base>/miss) at its root; {where}",
    )
