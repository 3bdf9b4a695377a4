"""Write commands: ``init``, ``add-base``, ``add``, ``sums``, ``readme``.

Every write stages all new files in one :class:`~rwkv_registry.fs.atomic.Transaction` under the
registry lock and publishes them together: index.json, README.md and SHA256SUMS always stay in
step. Input is checked completely before anything is staged; a refused command leaves the
registry byte-identical.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath
from types import EllipsisType
from typing import Any

from rwkv_registry.checks.catalogue import finding
from rwkv_registry.checks.git import published_in
from rwkv_registry.checks.state import stray_state_finding
from rwkv_registry.core.errors import RefusedError, RegistryIOError, UsageError, os_error_hint
from rwkv_registry.core.fsio import sha256_file
from rwkv_registry.core.rules import Finding, Severity
from rwkv_registry.engine.facts import (
    FactsCache,
    FileFacts,
    compute_facts,
    gather_facts,
    stat_key,
)
from rwkv_registry.engine.validate import collector_paused
from rwkv_registry.fs.atomic import TMP_PREFIX, Transaction, read_stamps, refuse_unsafe_path, registry_lock, within
from rwkv_registry.index.layout import METHODS, NAME, VERSION_DIR, WEIGHT_SUFFIXES, layout_ok, misplaced, safe_rel
from rwkv_registry.index.lineage import active_successor, base_date, family_of, superseded
from rwkv_registry.index.published import bases_by_name, closed_bases
from rwkv_registry.index.readme import MARKERS as README_MARKERS
from rwkv_registry.index.readme import apply_bodies, render_bodies, skeleton, update_readme
from rwkv_registry.index.sampling import DEFAULT_SAMPLING, SAMPLING_PRESETS, unknown_sampling_hint
from rwkv_registry.index.sums import SIG_NAME, SUMS_NAME, format_sums

GITATTRIBUTES = """# Every file is hashed into SHA256SUMS: text files keep LF line ends on every checkout, whatever
# core.autocrlf says (a CRLF checkout would change their sha256).
* text=auto eol=lf
# Weights go through Git LFS (Hugging Face stores them as LFS/Xet objects).
*.pth filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
"""
GITIGNORE = """# transient files of rwkv-registry writes
.rwkv-registry.lock
.rwkv-registry.journal
.rwkv-registry-tmp-*
"""
PRECOMMIT = """# Validate the registry before every commit (https://pre-commit.com): run `pre-commit install` once.
# The hook does not need rwkv-registry on PATH (a GUI git client's PATH may lack your virtualenv): it runs
# $RWKV_REGISTRY when set (a command: /path/to/venv/bin/rwkv-registry), else the rwkv-registry on PATH, else
# `python -m rwkv_registry` with the Python that runs pre-commit, when rwkv-registry is installed there (the one
# `pre-commit install` recorded in .git/hooks/pre-commit). docs/precommit.md says more.
repos:
  - repo: local
    hooks:
      - id: rwkv-registry-validate
        name: rwkv-registry validate
        language: system
        pass_filenames: false
        require_serial: true
        always_run: true
        entry: |
          sh -c '
          if [ -n "${RWKV_REGISTRY:-}" ]; then exec $RWKV_REGISTRY validate; fi
          if command -v rwkv-registry >/dev/null 2>&1; then exec rwkv-registry validate; fi
          py=
          if [ -r "/proc/$PPID/cmdline" ]; then py=$(tr "\\0" "\\n" < "/proc/$PPID/cmdline" | head -n 1)
          else py=$(ps -o args= -p "$PPID" 2>/dev/null | cut -d " " -f 1); fi
          if [ -n "$py" ] && "$py" -c "import rwkv_registry" >/dev/null 2>&1; then
            exec "$py" -m rwkv_registry validate
          fi
          echo "rwkv-registry validate: rwkv-registry is not on PATH, nor installed for the Python running" \\
            "pre-commit (${py:-not found}): install both in one environment, or set" \\
            "RWKV_REGISTRY=/path/to/venv/bin/rwkv-registry (docs/precommit.md)" >&2
          exit 1
          '
"""
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def dump_json(value: Any) -> bytes:
    """index.json / train.json as written by the registry: 2-space indent, UTF-8, final newline.

    The text of ``json.dumps(value, indent=2, ensure_ascii=False)``, written by :func:`_indented`: with an indent,
    json uses its pure-Python encoder, a generator per level, which took a fifth of an ``add-base`` at 4,000 entries;
    a value :func:`_indented` does not know exactly (a subclass, a tuple, a cycle) goes to json itself."""
    try:
        text = _indented(value)
    except (_NotPlain, RecursionError):
        text = json.dumps(value, indent=2, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


class _NotPlain(Exception):
    """A value whose type :func:`_indented` leaves to ``json.dumps``."""


def _float_text(o: float) -> str:
    """json's text of a float (``allow_nan``: NaN, Infinity, -Infinity)."""
    if o != o:
        return "NaN"
    if o == _INF:
        return "Infinity"
    if o == -_INF:
        return "-Infinity"
    return float.__repr__(o)


_INF = float("inf")


def _key_text(k: Any) -> str:
    """A non-string key as json converts it (its order of tests: str, float, True, False, None, int)."""
    if isinstance(k, str):
        return k
    if isinstance(k, float):
        return _float_text(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    raise _NotPlain


def _indented(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)`` for values made of dict, list, str, int, float, bool and
    None (exact types), the scalars of a container written in its own loop; raises :class:`_NotPlain` otherwise."""
    from json.encoder import encode_basestring as quote  # json's own (C) string writer, as ensure_ascii=False uses

    out: list[str] = []
    put = out.append
    # the pieces joined into one chunk after a list item once 4,096 are held: 600,000 small strings kept to the end
    # added about 20 MB to an add's peak memory at 4,000 entries
    chunks: list[str] = []

    def scalar(o: Any, t: type) -> str:
        if t is str:
            return quote(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        if t is int:
            return int.__repr__(o)
        if t is float:
            return _float_text(o)
        raise _NotPlain

    def write(o: Any, t: type, nl: str) -> None:
        if t is dict:
            if not o:
                put("{}")
                return
            inner = nl + "  "
            sep = "{" + inner
            for k, v in o.items():
                put(sep + quote(k if type(k) is str else _key_text(k)) + ": ")
                sep = "," + inner
                tv = type(v)
                if tv is str:  # the common case first, without a call
                    put(quote(v))
                elif tv is dict or tv is list:
                    write(v, tv, inner)
                else:
                    put(scalar(v, tv))
            put(nl + "}")
        elif t is list:
            if not o:
                put("[]")
                return
            inner = nl + "  "
            sep = "[" + inner
            for v in o:
                put(sep)
                sep = "," + inner
                tv = type(v)
                if tv is str:  # the common case first, without a call
                    put(quote(v))
                elif tv is dict or tv is list:
                    write(v, tv, inner)
                    if len(out) >= 4096:
                        chunks.append("".join(out))
                        out.clear()
                else:
                    put(scalar(v, tv))
            put(nl + "]")
        else:
            put(scalar(o, t))

    write(value, type(value), "\n")
    return "".join(chunks) + "".join(out)


def empty_index(name: str = "") -> dict[str, Any]:
    return {
        "schema_version": 1,
        "registry": {
            "name": name,
            "title": "",
            "description": "",
            "training_data": None,
            "server": None,
            "license": None,
        },
        "bases": [],
        "entries": [],
        "unpublished": [],
        "known_issues": [],
        "links": [],
    }


def load_index(root: Path, cache: FactsCache | None = None) -> dict[str, Any]:
    """index.json of a registry about to be written; refuse to build on an invalid one. ``cache``: the
    validation cache already read by the caller (else read here for its schema results)."""
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file
    from rwkv_registry.schemas import schema_errors, schema_summary

    path = root / "index.json"
    if not path.exists():
        raise UsageError(f"{root}: no index.json here", hint="Create a registry with `rwkv-registry init PATH`.")
    cache = cache or FactsCache(root)
    known = _known_valid_index(path, cache)
    if known is not None:
        return known
    try:
        index = load_json_file(path, display="index.json")
    except JsonLoadError as e:  # its message starts with the file's name
        raise RefusedError(
            e.message, hint="Fix index.json first (`rwkv-registry validate`).", path="index.json"
        ) from None
    errors = schema_errors("index", index, memo=cache.items)
    if errors:
        shown = schema_summary(errors)
        raise RefusedError(
            f"index.json does not follow its schema ({len(errors)} error(s)): {shown}",
            hint="Fix index.json first (`rwkv-registry validate` lists every error).",
            path="index.json",
        )
    return index


def _known_valid_index(path: Path, cache: FactsCache) -> dict[str, Any] | None:
    """index.json parsed by ``json.loads`` when the validation cache holds the verdict of the strict loader and the
    schema on these very bytes (keyed by their sha256, the schemas and the code, as ``validate`` remembers it), and
    it found nothing: the strict load and the schema check would give the same value and no error. None otherwise
    (then the caller judges the bytes itself, with its own messages)."""
    from rwkv_registry.checks.json_files import json_verdict_key
    from rwkv_registry.formats.jsonload import read_json_bytes

    try:
        data = read_json_bytes(path)
    except OSError:
        return None
    if cache.get_json(json_verdict_key("index", hashlib.sha256(data).hexdigest())) != []:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError:  # only if the cache lies
        return None
    return value if isinstance(value, dict) else None


def _read_back(data: bytes) -> dict[str, Any] | None:
    """The index.json ``data`` as ``validate`` will read it (the strict loader), or None when it refuses the bytes
    (``validate`` then reports it; nothing is recorded about them)."""
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes

    try:
        value = load_json_bytes(data, path="index.json")
    except JsonLoadError:
        return None
    return value if isinstance(value, dict) else None


def registry_files(root: Path) -> dict[str, str]:
    """Every file SHA256SUMS lists (relative POSIX path: its path), in the order of a top-down ``os.walk`` with
    sorted directories and ``.git`` at the top skipped: what is not a directory (symbolic links excluded, also to
    directories, which are not entered), but the sums' own files and temporary files. The walk's entries answer
    without a stat each (``os.walk`` plus a ``Path``, ``relative_to`` and ``is_symlink`` per file cost a sixth of an
    ``add`` at 4,000 entries); each path is the entry's own string (a ``Path`` per file cost another 20 ms)."""
    from rwkv_registry.checks.sums import NOT_SUMMED
    from rwkv_registry.fs.atomic import tree_listing

    out: dict[str, str] = {}
    for _, rel, entry in tree_listing(root):  # under the lock: the walk recover made on taking it
        name = entry.name
        r = f"{rel}{name}"
        try:
            link = entry.is_symlink()
        except OSError:
            link = False  # as Path.is_symlink
        if r in NOT_SUMMED or name.startswith(TMP_PREFIX) or link:
            continue
        out[r] = entry.path
    return out


def compute_sums(
    root: Path,
    staged: dict[str, bytes] | None = None,
    staged_hashes: dict[str, str] | None = None,
    cache: FactsCache | None = None,
) -> bytes:
    """SHA256SUMS content for the registry as it will be once ``staged`` files are published.

    Weight files' hashes come from the validation cache (``cache``, else read here) when their stat key matches.
    """
    from rwkv_registry.checks.sums import NOT_SUMMED

    staged = staged or {}
    hashes: dict[str, str] = dict(staged_hashes or {})
    # walked from the resolved root: the cache knows each file by the path validate read it at (its resolved root
    # joined with the relative path); a relative PATH gave other keys, and every weight file was parsed again
    files = registry_files(root.resolve())
    cache = cache or FactsCache(root)
    big: dict[str, Path] = {}  # the weight files whose hash the cache does not hold: their facts are made
    for r, path in files.items():
        if r in staged or r in hashes or not path.endswith((".pth", ".safetensors")):
            continue
        try:
            sha = cache.sha256_of(path, stat_key(os.stat(path), path))  # gather_facts' lookup, hash alone
        except OSError:
            sha = None  # gather_facts meets it again
        if sha is None:
            big[r] = Path(path)
        else:
            hashes[r] = sha
    facts, _ = gather_facts(big, cache)
    for rel, p in files.items():
        if rel in staged or rel in hashes:
            continue
        f = facts.get(rel)
        if isinstance(f, FileFacts):
            hashes[rel] = f.sha256
        else:
            try:
                hashes[rel] = sha256_file(p)[0]
            except OSError as e:
                raise RegistryIOError(
                    f"cannot read {p} to list it in SHA256SUMS: {e.strerror or e}",
                    hint="Make the file readable (or remove it if it does not belong), then run the command again.",
                    path=rel,
                ) from e
    for rel, data in staged.items():
        if rel not in NOT_SUMMED:
            hashes[rel] = hashlib.sha256(data).hexdigest()
    return format_sums(hashes)


def _publish(
    root: Path,
    txn: Transaction,
    texts: dict[str, bytes],
    staged_hashes: dict[str, str] | None = None,
    *,
    warn_signature: bool = True,
    cache: FactsCache | None = None,
) -> None:
    """Stage ``texts`` (index.json, README.md, train.json …) plus a fresh SHA256SUMS and commit.

    ``warn_signature``: say on stderr when the new SHA256SUMS leaves an existing SHA256SUMS.sig stale.
    ``cache``: the validation cache the caller read (weight files' hashes)."""
    for rel, data in texts.items():
        txn.write_bytes(rel, data)
    sums = compute_sums(root, texts, staged_hashes, cache)
    txn.write_bytes(SUMS_NAME, sums)
    stale = warn_signature and _signature_goes_stale(root, sums)
    txn.commit()
    if stale:
        warn_stale_signature(root)


def _signature_goes_stale(root: Path, new_sums: bytes) -> bool:
    """Does writing ``new_sums`` leave an existing SHA256SUMS.sig signing other bytes?"""
    if not (root / SIG_NAME).exists():
        return False
    try:
        return (root / SUMS_NAME).read_bytes() != new_sums
    except OSError:
        return True


def warn_stale_signature(root: Path) -> None:
    """The warning of a write that changed SHA256SUMS under an existing signature (it is kept, not deleted)."""
    import sys

    sys.stderr.write(
        f"warning: SHA256SUMS changed, so {root / SIG_NAME} no longer matches it (validate reports SIG002 when "
        "keys are trusted)\n"
        f"hint: sign it again: rwkv-registry sign {root} --key KEY\n"
    )


def _read_readme(root: Path) -> bytes | None:
    """README.md's bytes (None when there is none), read once, FIFO-safe."""
    from rwkv_registry.core.fsio import open_regular

    path = root / "README.md"
    try:
        if not path.exists():
            return None
        with open_regular(path) as f:  # a FIFO would block
            return f.read()
    except OSError as e:
        raise RegistryIOError(
            f"cannot read {path}: {e.strerror or e}", hint=os_error_hint(e, path), path="README.md"
        ) from e


def _readme_for(
    root: Path,
    index: dict[str, Any],
    bodies: tuple[str, str] | None = None,
    *,
    current: bytes | EllipsisType | None = ...,
) -> bytes:
    """README.md with its generated regions rendered from ``index`` (or given as ``bodies``, rendered from it).

    ``current``: README.md's bytes as the caller read them (None: there is none); by default read here."""
    path = root / "README.md"
    raw = _read_readme(root) if isinstance(current, EllipsisType) else current
    try:
        text = skeleton() if raw is None else raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as e:
        raise RefusedError(
            f"{path}: not UTF-8 text ({e.reason} at byte {e.start})",
            hint="Save README.md as UTF-8, then run the command again.",
            path="README.md",
        ) from None
    new = apply_bodies(text, bodies or render_bodies(index))
    if new is None:
        raise RefusedError(
            f"{path} has no generated-section markers",
            hint="Add `<!-- rwkv-registry:bases:begin -->`…`end` and `<!-- rwkv-registry:sections:begin -->`…`end` "
            f"where the generated tables belong; or run `rwkv-registry readme {root} --reset`, which rebuilds "
            "README.md from the skeleton and DROPS the publisher's own text (back README.md up first).",
            path="README.md",
        )
    return new.encode("utf-8")


# --- init -----------------------------------------------------------------------------------------


def init_registry(path: str | os.PathLike[str], *, name: str = "", title: str = "RWKV-7 weights") -> list[str]:
    """Create a new registry in ``path`` (which must be absent or empty, a `.git` folder aside).

    A directory this call created is removed again if the command fails."""
    from rwkv_registry.fs.atomic import LOCK_NAME, registry_around

    root = Path(path)
    hint = "Give a new or empty directory."
    try:
        is_file = root.exists() and not root.is_dir()
    except OSError as e:  # a directory above it cannot be searched: stat raises EACCES
        raise RegistryIOError(
            f"cannot create the directory {path}: {e.strerror or e}",
            hint="Choose a place you can write to (check the permissions of the directories above it).",
            path=str(path),
        ) from e
    if is_file:
        raise UsageError(f"{path}: is a file, not a directory", hint=hint, path=str(path))
    outer = registry_around(root.absolute().parent)
    if outer is not None:
        raise UsageError(
            f"{path}: lies inside the registry at {outer}; a registry inside another would break the outer "
            "one (LAY002 for the directory, HSH004 for every file in it)",
            hint="Give a directory outside every registry.",
            path=str(path),
        )
    created = not root.exists()
    if not created:
        try:
            names = [n for n in os.listdir(root) if not re.match(r"\.(git$|rwkv-registry)", n)]
        except OSError as e:
            raise RegistryIOError(
                f"cannot read the directory {path}: {e.strerror or e}", hint=os_error_hint(e, path), path=str(path)
            ) from e
        if "index.json" in names:
            raise UsageError(f"{path}: is already a registry (it holds index.json)", hint=hint, path=str(path))
        if names:
            raise UsageError(f"{path}: exists and is not empty", hint=hint, path=str(path))
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RegistryIOError(
            f"cannot create the directory {path}: {e.strerror or e}",
            hint="Choose a place you can write to (check the parent directory's permissions, and whether its file "
            "system is mounted read-only).",
            path=str(path),
        ) from e
    try:
        with registry_lock(root, creating=True):
            index = empty_index(name or root.resolve().name)
            index["registry"]["title"] = title
            readme = update_readme(skeleton(title), index)
            assert readme is not None
            files = {
                "index.json": dump_json(index),
                "README.md": readme.encode("utf-8"),
                ".gitattributes": GITATTRIBUTES.encode(),
                ".gitignore": GITIGNORE.encode(),
                ".pre-commit-config.yaml": PRECOMMIT.encode(),
            }
            with Transaction(root) as txn:
                _publish(root, txn, files)
    except BaseException:
        if created:  # leave no empty directory (or one holding only the lock file) behind
            try:
                if set(os.listdir(root)) <= {LOCK_NAME}:
                    (root / LOCK_NAME).unlink(missing_ok=True)
                    root.rmdir()
            except OSError:
                pass
        raise
    return sorted([*files, SUMS_NAME])


# --- add-base -------------------------------------------------------------------------------------


def _sha256_of(path: Path) -> str:
    return hash_file(path)[0]


def hash_file(path: Path, progress: Callable[[int], None] | None = None) -> tuple[str, int]:
    """sha256 and size of a (possibly 14 GB) file, streamed; an I/O error stops the command."""
    try:
        return sha256_file(path, progress)
    except OSError as e:
        raise RegistryIOError(
            f"cannot read {path}: {e.strerror or e}", hint=os_error_hint(e, path), path=str(path)
        ) from e


def read_base_architecture(path: Path) -> dict[str, Any]:
    """Architecture of a base checkpoint from its tensor headers (a few hundred KB read)."""
    from rwkv_registry.core.errors import CheckpointError
    from rwkv_registry.formats.ckpt import FileSource, open_checkpoint
    from rwkv_registry.index.arch import architecture_from_shapes

    try:
        with FileSource(path) as src:
            ck = open_checkpoint(src)
    except CheckpointError as e:
        raise RefusedError(
            f"{path}: {e.message}", hint="Give an RWKV-7 base saved by torch.save.", path=str(path)
        ) from None
    except RegistryIOError:
        raise  # FileSource's own message already names the file
    except OSError as e:
        raise RegistryIOError(
            f"cannot read {path}: {e.strerror or e}", hint=os_error_hint(e, path), path=str(path)
        ) from e
    shapes = {n: tuple(t.shape) for n, t in ck.tensors.items()}
    dtype = Counter(t.dtype for t in ck.tensors.values()).most_common(1)
    try:
        return architecture_from_shapes(shapes, dtype=dtype[0][0] if dtype else None)
    except UsageError as e:
        raise UsageError(f"{path}: {e.message}", hint=e.hint, path=str(path)) from None


@collector_paused()
def add_base(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    source: str,
    source_file: str | None = None,
    revision: str | None = None,
    base_file: str | os.PathLike[str] | None = None,
    sha256: str | None = None,
    size: int | None = None,
    arch: dict[str, Any] | None = None,
    vocab: str = "rwkv_vocab_v20230424.txt",
    family: str | None = None,
    freeze_previous: bool = True,
    scores: list[dict[str, Any]] | None = None,
    notes: str | None = None,
    progress: Callable[[int], None] | None = None,
    today: str | None = None,
    warnings: list[Finding] | None = None,
    frozen: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """Register a base: from its file (hashed, architecture read), or from metadata alone.

    ``source_file`` and ``revision`` record where the base came from (default: ``<name>.pth``, no
    revision); everything is published in one transaction. ``warnings``: extended with the warnings ``validate``
    will report because of the new base (:func:`_base_warnings`), once it is written. ``frozen``: extended with
    ``(old base, the newest base of its family)`` for each base this call froze (``freeze_previous``).
    """
    from rwkv_registry.fs.atomic import require_reachable, require_registry

    root = require_registry(path)  # before a 14 GB base file is hashed
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*", source or ""):
        raise UsageError(f"--source {source!r} is not OWNER/REPO", hint="e.g. --source BlinkDL/rwkv7-g1")
    src_file: str
    if base_file is not None:
        bf = Path(base_file)
        require_reachable(bf)
        if bf.is_dir():
            raise UsageError(f"{base_file}: is a directory, not a base file", hint="Give the base .pth itself.")
        if not bf.is_file():
            raise UsageError(
                f"{base_file}: " + ("no such file" if not bf.exists() else "not a regular file"),
                hint="Give the base's .pth file (or register it from metadata: --name, --sha256, --arch).",
            )
        if sha256 is not None or size is not None:
            raise UsageError(
                "--sha256 and --size are for a base given by metadata; with BASE_FILE they are read from the file",
                hint="Drop --sha256/--size, or drop BASE_FILE.",
            )
        arch = read_base_architecture(bf)
        sha256, size = hash_file(bf, progress)
        name = name or bf.stem
        src_file = bf.name
    else:
        if not (sha256 and arch and name):
            raise UsageError(
                "without BASE_FILE, give --name, --sha256 and --arch (and --size when known)",
                hint="Give the base file itself (add-base REG BASE_FILE), or all of --name, --sha256 and --arch.",
            )
        if name.lower().endswith((".pth", ".safetensors")):
            stem = name.rsplit(".", 1)[0]
            raise UsageError(
                f"--name {name!r} ends in a file suffix: the base's name is its file name without .pth "
                f"(IDX006), and its directory would be {name}/",
                hint=f"Give --name {stem}.",
            )
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
            raise UsageError(
                f"--size {size!r}: give the base file's size in bytes (a whole number, 0 or more)",
                hint="Leave --size out when only the sha256 is known (it is recorded as null).",
            )
        sha256 = sha256.lower()
        if not _HEX64.match(sha256):
            raise UsageError(
                f"--sha256 {sha256!r} is not 64 hex characters",
                hint="Give the base file's full sha256 (`sha256sum FILE` prints it), or the file itself as BASE_FILE.",
            )
        src_file = source_file or f"{name}.pth"
    assert name is not None
    if PurePosixPath(src_file).stem != name:
        raise UsageError(
            f"base name {name!r} differs from its file {src_file!r} (IDX006)",
            hint="A base directory is named after the base file without .pth: drop --name.",
        )
    if not NAME.match(name) or name in (".", ".."):
        raise UsageError(
            f"base name {name!r} is not a valid directory name",
            hint="Letters, digits, '.', '_' and '-', starting with a letter or digit.",
        )
    family = family or family_of(name)
    with registry_lock(root):
        cache = FactsCache(root)  # read once: the index's verdict and its entries' schema results
        stamps = read_stamps(root, "index.json", "README.md")  # rewritten from the copies read below
        index = load_index(root, cache)
        bases_before = [dict(b) for b in index["bases"]]  # their statuses before any is frozen
        if any(b["name"] == name for b in index["bases"]):
            raise RefusedError(
                f"base {name!r} already exists", hint="Choose another --name; old bases are never changed."
            )
        twin = next((b["name"] for b in index["bases"] if str(b.get("sha256", "")).lower() == sha256), None)
        if twin is not None:
            raise RefusedError(
                f"base {twin!r} already records sha256 {sha256}: one base file registered twice (IDX010)",
                hint=f"Add the weights under {twin}, or check the sha256 given.",
                path="index.json",
            )
        if (root / name).exists():
            raise RefusedError(f"{root / name} already exists", hint="Remove the stray directory first.")
        index["bases"].append(
            {
                "name": name,
                "family": family,
                "source": {"repo": source, "file": src_file, "revision": revision},
                "sha256": sha256,
                "size": size,
                "vocab": vocab,
                "architecture": arch,
                "status": "active",
                "added": today or dt.date.today().isoformat(),
                "scores": list(scores or []),
                "notes": notes,
            }
        )
        before = superseded(index["bases"][:-1])
        older = superseded(index["bases"])
        _refuse_closing_unpublished(root, index, name, older, before)
        froze: list[tuple[str, str]] = []
        if freeze_previous:  # old base directories are never touched: freeze what the new base supersedes
            for b in index["bases"]:
                if b["name"] in older and b.get("status") == "active":
                    b["status"] = "frozen"
                    froze.append((b["name"], older[b["name"]]))
        _check_index_schema(index, cache.items)
        new_warnings = _base_warnings(root, dict(index, bases=bases_before), index)
        texts = {
            "index.json": dump_json(index),
            "README.md": _readme_for(root, index),
            f"{name}/state/.gitkeep": b"",
            f"{name}/miss/.gitkeep": b"",
        }
        with Transaction(root) as txn:
            txn.expect_unchanged(stamps)
            _publish(root, txn, texts, cache=cache)
    if warnings is not None:
        warnings.extend(new_warnings)
    if frozen is not None:
        frozen.extend(froze)
    return index["bases"][-1]


def _base_warnings(root: Path, before: dict[str, Any], after: dict[str, Any]) -> list[Finding]:
    """Every warning ``validate`` will report once index.json ``after`` (``before`` plus a new base, the last of its
    bases, and older ones of its family maybe frozen) is written, and does not report on ``before``, in report order.

    Which rules a new base can bring: IDX007 (``--keep-previous-active`` leaves an older base of its family active,
    or the new base is itself older than one of its family), IDX018 (its vocabulary file does not fit its
    vocab_size), TRN010 (a train.json of another base whose command line
    names the new base's file and not its own base's: only those whose bytes hold the name are parsed), IDX009,
    IDX013 and IDX014 (its scores, and comparisons against it). The others cannot change: no entry, file or
    directory but the new base's ``.gitkeep`` placeholders is written."""
    from rwkv_registry.checks.index import bases_findings
    from rwkv_registry.checks.train import base_files, train_command_findings
    from rwkv_registry.engine.validate import sort_findings
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes, read_json_bytes

    new = after["bases"][-1]
    name = new["name"]
    prior = {_seen(f) for f in bases_findings({b["name"]: b for b in before["bases"]})}
    now = bases_findings({b["name"]: b for b in after["bases"]})
    out = [f for f in now if f.severity == Severity.WARNING and _seen(f) not in prior]
    files_before = base_files({b["name"]: b for b in before["bases"]})
    files_after = base_files({b["name"]: b for b in after["bases"]})
    needle = name.encode()  # in the file name, which JSON writes as it is (unless \u-escaped)
    if files_after.get(name) is not None:
        top = Path(os.path.realpath(root))
        for b in before["bases"]:
            for method in METHODS:
                try:  # strings, not Paths: 640 train.json at 4,000 entries
                    dirs = sorted(
                        e.name
                        for e in os.scandir(os.path.join(root, b["name"], method))
                        if e.is_dir(follow_symlinks=False)
                    )
                except OSError:
                    continue  # validate: LAY003, LAY010
                for d in dirs:
                    rel = f"{b['name']}/{method}/{d}/train.json"
                    path = os.path.join(root, rel)
                    try:
                        if os.path.islink(path) and not within(top, path):
                            continue  # a link leaving the registry is not read (LAY005); one inside is, as validate
                        data = read_json_bytes(path, display=rel)
                    except OSError:
                        continue  # absent (TRN001), too large (SCH001), not a regular file (LAY015), unreadable
                    if needle not in data and b"\\u" not in data:
                        continue
                    try:
                        t = load_json_bytes(data, path=rel)
                    except JsonLoadError:
                        continue  # SCH001: validate reads nothing of it
                    if not isinstance(t, dict):
                        continue
                    seen = {_seen(f) for f in train_command_findings(rel, b["name"], t, files_before)}
                    out += [f for f in train_command_findings(rel, b["name"], t, files_after) if _seen(f) not in seen]
    out += _new_score_warnings(before, after, new, name)
    sort_findings(out)
    return out


def _refuse_closing_unpublished(
    root: Path, index: dict[str, Any], name: str, older: dict[str, str], before: dict[str, str]
) -> None:
    """add-base must not leave files that GIT003 reports: in a git registry a base that the new base
    supersedes gets no new files, so refuse when its directory holds files that ``HEAD`` does not (its
    empty ``.gitkeep`` placeholders aside, which GIT003 lets be new; so a base older than one of its
    family, superseded at once, can be registered)."""
    closing = set(older) - set(before) - {name}
    if not closing:
        return
    from rwkv_registry.checks.git import check_git  # outside git, or before the first commit, it reports no GIT003

    new_files = [f.path for f in check_git(root, index) if f.code == "GIT003" and f.path.split("/", 1)[0] in closing]
    if new_files:
        old = new_files[0].split("/", 1)[0]
        more = f" and {len(new_files) - 1} more" if len(new_files) > 1 else ""
        raise RefusedError(
            f"{new_files[0]}{more} under base {old!r} are not committed yet; base {name!r} would supersede "
            f"{old!r}, after which they are new files under a superseded base (GIT003)",
            hint=f"Commit {old}/ first (git add -A && git commit), then run add-base again; if {name} is not a "
            f"successor of {old}, give it another --family.",
            path=new_files[0],
        )


def _check_index_schema(index: dict[str, Any], memo: dict[str, Any] | None = None) -> None:
    from rwkv_registry.schemas import schema_errors, schema_summary

    errors = schema_errors("index", index, memo=memo)
    if errors:
        shown = schema_summary(errors)
        raise RefusedError(
            f"the new index.json would not follow its schema: {shown}",
            hint="Check the values given on the command line.",
        )


# --- add ------------------------------------------------------------------------------------------


def _refuse(findings: list[Finding], what: str) -> None:
    errors = [f for f in findings if f.severity == Severity.ERROR]
    if errors:
        raise RefusedError(
            f"{what} refused: {errors[0].code} {errors[0].message}"
            + (
                f" (and {len(errors) - 1} more: {', '.join(dict.fromkeys(f.code for f in errors[1:]))})"
                if len(errors) > 1
                else ""
            ),
            hint=errors[0].hint,
            findings=errors,
        )


def check_weight_file(facts: FileFacts, base: dict[str, Any], display: str) -> list[Finding]:
    """The content rules of validate for one file against one base, before it enters the registry."""
    from rwkv_registry.engine.validate import entry_file_findings

    method = facts.method
    if method is None:  # unreadable (empty, truncated, not a zip...) says so first
        broken = [f for f in facts.content_findings(display) if f.severity == Severity.ERROR]
        stray = stray_state_finding(display, facts.method, [t[0] for t in facts.tensors])
        if stray is not None and not broken:
            return [stray]
        return broken or [
            finding(
                "IDX003",
                display,
                "the file is neither a State (blocks.N.att.time_state) nor a MiSS adapter (archive/miss.json)",
            )
        ]
    entry = {"method": method, "base": base["name"], "file": {"sha256": facts.sha256, "size": facts.size}}
    if method == "miss" and isinstance(facts.manifest, dict):
        entry["miss"] = {"content_version": facts.manifest.get("content_version")}
    return entry_file_findings(display, entry, facts, {base["name"]: base})


@collector_paused()
def add_entry(
    path: str | os.PathLike[str],
    file: str | os.PathLike[str],
    *,
    base: str,
    data_version: str,
    train: str | os.PathLike[str] | dict[str, Any],
    group: str | None = None,
    entry_id: str | None = None,
    recommended: bool = False,
    profile: str | None = None,
    sampling: str = DEFAULT_SAMPLING,
    description: str = "",
    adapter_id: str | None = None,
    scores: list[dict[str, Any]] | None = None,
    known_issues: list[str] | None = None,
    step: int | None = None,
    total_steps: int | None = None,
    displaced: list[str] | None = None,
    warnings: list[Finding] | None = None,
    notes: list[str] | None = None,
    unchanged: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Register a State or MiSS file under ``base``; refuse (registry unchanged) if it does not fit.

    The same add run again (the same file with the same values, at a path an entry records) writes nothing and
    returns that entry, appended to ``unchanged`` when given; one that differs from the entry is refused, naming
    each field that differs (``field: old → new``).

    A legacy two-file MiSS package (a folder with ``adapter.json`` and ``adapter.pth``, or an ``adapter.pth``
    without ``archive/miss.json`` beside its ``adapter.json``) is checked with the server's rules on its
    ``adapter.json`` (:mod:`rwkv_registry.engine.misspkg`) and published as the single-file ``adapter-final.pth`` that
    ``save_adapter_pth`` writes for it: the same tensors and manifest, so the same content_version on the server.
    ``notes`` (when given) is extended with a line saying so. A ``.pth`` without ``archive/miss.json`` beside a
    ``checkpoint.json`` is judged as load_package judges it, a legacy training checkpoint (MIS018, MIS022).

    With ``recommended``, the entry takes the mark from the others of its base and method; their ids are
    appended to ``displaced`` when one is given, read under the same lock as the write. ``warnings``: extended
    with the warnings, and the notes (info: TRN006), that ``validate`` will report because of the new entry.
    """
    from rwkv_registry.checks.index import adapter_slot
    from rwkv_registry.checks.json_files import json_verdict, json_verdict_key
    from rwkv_registry.checks.readme import readme_verdict, readme_verdict_key
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file
    from rwkv_registry.fs.atomic import require_reachable, require_registry
    from rwkv_registry.schemas import schema_errors, schema_summary

    root = Path(path)
    src = Path(file)
    require_reachable(src)
    if src.is_dir() and (src / "index.json").is_file() and not (root / "index.json").is_file():
        what = "a file" if root.is_file() else ("not a registry" if root.exists() else "missing")
        raise UsageError(
            f"PATH and FILE look swapped: {file} is a registry, and {path} is {what}",
            hint=f"The registry comes first: rwkv-registry add {file} {path} …",
        )
    require_registry(root)  # before the file and --train are read
    from rwkv_registry.engine.misspkg import legacy_folder

    folder = legacy_folder(src) if src.is_dir() else None
    if src.is_dir() and folder is None:
        raise UsageError(
            f"{file}: is a directory, not a weight file",
            hint="Give the .pth (or .safetensors) itself, or a legacy MiSS folder holding adapter.json and "
            "adapter.pth.",
        )
    if folder is None and not src.is_file():
        raise UsageError(
            f"{file}: " + ("no such file" if not src.exists() else "not a regular file"),
            hint="Give the State (.pth or .safetensors) or MiSS adapter (.pth) file to add.",
        )
    if not VERSION_DIR.match(data_version):
        raise UsageError(
            f"--data-version {data_version!r} must look like v1.41",
            hint="Give the training data's version as v<major>.<minor>, e.g. --data-version v1.41.",
        )
    if sampling not in SAMPLING_PRESETS:  # validate's PRF003
        raise UsageError(
            f"--sampling {sampling!r} is not a sampling preset of RWKV-Agent: give one of "
            + ", ".join(SAMPLING_PRESETS),
            hint=unknown_sampling_hint(sampling),
        )
    if profile is not None and profile not in _entry_enum("profile"):
        raise UsageError(
            f"--profile {profile!r}: give g1k (a State) or g1k-think (a MiSS adapter)",
            hint="Or drop --profile: add picks g1k for a State and g1k-think for a MiSS adapter (docs/profiles.md).",
        )
    if isinstance(train, dict):
        train_obj = train
    else:
        try:
            train_obj = load_json_file(train)
        except JsonLoadError as e:
            raise UsageError(f"--train {train}: {e}", hint=e.hint) from None
    errors = schema_errors("train", train_obj)
    if errors:
        shown = "--train" if isinstance(train, dict) else f"--train {train}"
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise RefusedError(
            f"{shown} does not follow schemas/train.schema.json (SCH003): " + schema_summary(errors) + more,
            hint="Fix the train.json and add again: docs/rules.md (TRN, SCH003) and the schema list its fields.",
            findings=[],
        )
    try:
        facts, legacy = _source_facts(src, folder)
    except OSError as e:
        raise RegistryIOError(
            f"cannot read {file}: {e.strerror or e}", hint=os_error_hint(e, file), path=str(file)
        ) from e
    method = facts.method
    if method is None and {"emb.weight", "head.weight"} <= {t[0] for t in facts.tensors}:
        raise UsageError(
            f"{file}: a whole RWKV-7 model (emb.weight, head.weight), not a State or MiSS adapter trained on one",
            hint=f"Register a base with `rwkv-registry add-base {path} {file} --source OWNER/REPO`; `add` takes the "
            "light weights trained on it.",
            path=str(file),
        )
    with registry_lock(root), _Scratch() as scratch:
        cache = FactsCache(root)  # read once: schema results of the entries, hashes of the weights
        stamps = read_stamps(root, "index.json", "README.md")  # rewritten from the copies read below
        index = load_index(root, cache)
        known = set(cache.items)
        bases = {b["name"]: b for b in index["bases"]}
        if base not in bases:
            raise UsageError(
                f"--base {base!r} is not in index.json", hint=f"Known bases: {', '.join(bases) or 'none'}."
            )
        b = bases[base]
        closed = closed_bases(bases_by_name(index)).get(base)  # the policy of validate and push (GIT003)
        if closed == "frozen":
            active = active_successor(index["bases"], base)
            raise RefusedError(
                f"base {base!r} is frozen: it gets no new files"
                + (f"; new weights go under {active!r}, the active base of its family" if active else ""),
                hint=f"Retrain on {active} and add the weights there (--base {active})."
                if active
                else "Add the weights under an active base (`rwkv-registry add-base` registers a new one).",
            )
        if closed == "superseded":
            newer = superseded(index["bases"])[base]
            kept = " (add-base --keep-previous-active kept its status active, which does not reopen it)"
            raise RefusedError(
                f"base {base!r} is superseded by {newer!r} (same family, newer): old base directories are "
                f"never touched, and a new file under it would fail GIT003"
                + (kept if b.get("status") == "active" else ""),
                hint=f"Retrain on {newer} and add the weights there.",
            )
        display = str(file)
        content = check_weight_file(facts, b, display)
        _refuse(content, display)
        if legacy is not None:  # a legacy adapter.json package the server loads: published as its single file
            src, facts, content = _embedded_copy(legacy, facts, b, display, scratch)
            if notes is not None:
                notes.append(
                    f"{display}: a legacy two-file package (adapter.json + adapter.pth), published as the single-file "
                    f"adapter-final.pth with its adapter.json embedded (same tensors, content_version "
                    f"{facts.content_version})"
                )
        if train_obj.get("method") != method:
            raise RefusedError(
                f"--train says method {train_obj.get('method')!r}, the file is a {method}",
                hint="Give the train.json of this run (its `method` names the weights' kind), or the weights it "
                "describes.",
            )
        tdata = train_obj.get("data") or {}
        if tdata.get("version") != data_version:
            raise RefusedError(
                f"--train data.version is {tdata.get('version')!r}, --data-version is {data_version!r}",
                hint="Make --data-version the train.json's data.version (or fix data.version in the train.json).",
            )
        if method == "miss":
            if profile == "g1k":
                raise UsageError(
                    f"--profile g1k: {file} is a MiSS adapter, which runs with profile g1k-think (PRF001)",
                    hint="Drop --profile (g1k-think is the default for a MiSS adapter).",
                )
            if not group:
                raise UsageError(
                    "a MiSS adapter needs --group NAME (its sub-folder, e.g. r16-lr2e-5-e2)",
                    hint="Add --group with the run's group as named in the train.json `runs`.",
                )
            if not NAME.match(group):
                raise UsageError(
                    f"--group {group!r} is not usable as a folder name",
                    hint="Letters, digits, '.', '_' and '-', starting with a letter or digit (e.g. r16-lr2e-5-e2).",
                )
            rel = f"{base}/miss/{data_version}/{group}/adapter-final.pth"
            runs = [r for r in train_obj.get("runs", []) if r.get("group") == group]
            if not runs:
                raise RefusedError(
                    f"--train has no run for group {group!r}",
                    hint="train.json `runs` lists one item per group with its learning rates.",
                )
        else:
            if group:
                raise UsageError(
                    "--group is only for MiSS adapters",
                    hint=f"Drop --group: {file} is a State, which goes to BASE/state/VERSION/ (no group sub-folder).",
                )
            if adapter_id is not None:
                raise UsageError(
                    f"--adapter-id is only for MiSS adapters: {file} is a State (rwkv-cli uploads it and gets a "
                    "state_id)",
                    hint="Drop --adapter-id.",
                )
            rel = f"{base}/state/{data_version}/{src.name}"
            _refuse_state_name(src, rel)
        train_rel = f"{base}/{method}/{data_version}/train.json"
        for r in (rel, train_rel):  # a link on the way: refused before anything there is read or written
            refuse_unsafe_path(root, r)
        registered = next((e for e in index["entries"] if e["path"] == rel), None)
        if registered is not None and not os.path.lexists(root / rel):
            raise RefusedError(
                f"{rel} is registered as entry {registered['id']!r}, but its file is missing (LAY008)",
                hint=f"Restore it (`git checkout -- {rel}`, `git lfs pull`); a registered entry is never replaced.",
                path=rel,
            )
        if registered is not None:  # the same add again (a rerun before the commit), or another file of that name
            given = {
                "id": entry_id,
                "profile": profile or ("g1k-think" if method == "miss" else "g1k"),
                "sampling": sampling,
                "recommended": bool(recommended),
                "description": description,
                "adapter_id": (adapter_id or entry_id or registered["id"]) if method == "miss" else None,
                "step": step,
                "total_steps": total_steps,
            }
            changed = _rerun_differences(root / train_rel, registered, train_obj, group, facts.sha256, given)
            if not changed:
                if unchanged is not None:
                    unchanged.append(registered)
                return registered
            raise RefusedError(
                f"{rel} is already registered as entry {registered['id']!r}, and this add differs from it: "
                + "; ".join(changed),
                hint="A registered entry is never replaced (published weights never change): new weights get a new "
                "name (a State's file name, a MiSS --group) or a new --data-version; to add the same file again, "
                f"give the values it was registered with (`rwkv-registry show --path {path} {registered['id']}`).",
                path=rel,
            )
        if (root / rel).exists():
            raise RefusedError(
                f"{rel} is already in the layout, but no entry of index.json records it (LAY007)",
                hint=f"Move the file out of the registry and add it from there: `rwkv-registry add` copies it to "
                f"{rel} itself.",
                path=rel,
            )
        train_stamp = read_stamps(root, train_rel)  # a run is merged into the copy read here
        train_new_file = not (root / train_rel).exists()
        train_will_be, train_new = _merge_train(root / train_rel, train_obj, group)
        if train_new is not None:  # rewritten (or created) from that copy
            stamps.update(train_stamp)
        published = published_in(root, train_rel) if train_new is not None and (root / train_rel).exists() else None
        if published is not None:
            raise RefusedError(
                f"{train_rel} was published in {published}; adding run {group!r} would change it (GIT001)",
                hint="Published directories never change: put the new run under a new data version "
                "(e.g. --data-version " + _next_version(data_version) + ") with its own train.json.",
            )
        eid = entry_id or _default_id(
            index, b, src.stem if method == "state" else f"{data_version.replace('.', '')}-{group}"
        )
        twin = next((e for e in index["entries"] if e["id"] == eid), None)
        if twin is not None:
            _refuse_taken_id(index, twin, src, data_version, group, given=entry_id is not None)
        if profile is None:
            profile = "g1k-think" if method == "miss" else "g1k"
        entry: dict[str, Any] = {
            "id": eid,
            "path": rel,
            "base": base,
            "method": method,
        }
        if method == "miss":
            entry["group"] = group
        entry.update(
            {
                "data": {"version": data_version, "rows": tdata.get("rows"), "sha256": tdata.get("sha256")},
                "file": {"sha256": facts.sha256, "size": facts.size},
                "train": train_rel,
                "profile": profile,
                "sampling": sampling,
                "recommended": bool(recommended),
                "description": description,
            }
        )
        if step is not None:
            entry["step"] = step
        if total_steps is not None:
            entry["total_steps"] = total_steps
        if method == "miss":
            m = facts.manifest
            entry["adapter_id"] = adapter_id or eid
            taken = next((o["id"] for o in index["entries"] if adapter_slot(o) == adapter_slot(entry)), None)
            if taken is not None:
                raise RefusedError(
                    f"adapter id {entry['adapter_id']!r} is already the adapter id of entry {taken!r} of base {base!r} "
                    "(IDX012): registering both, the server would keep only the second",
                    hint="Give another --adapter-id.",
                )
            entry["miss"] = {
                "content_version": m["content_version"],
                "rank": m["rank"],
                "alpha": m["alpha"],
                "scale": m["scale"],
                "dtype": m["dtype"],
            }
        entry.update({"scores": list(scores or []), "smoke": [], "known_issues": list(known_issues or [])})
        lost_mark: list[str] = []
        if recommended:
            for other in index["entries"]:
                if other["base"] == base and other["method"] == method:
                    if other.get("recommended") is True:
                        lost_mark.append(other["id"])
                    other["recommended"] = False
        train_warnings = _refuse_train_findings(
            root, train_rel, train_will_be, index, entry, group, train, new_file=train_new_file
        )
        index["entries"].append(entry)
        new_warnings = _entry_warnings(root, index, content, cache, train_warnings, train_will_be, train_new_file)
        index_bytes = dump_json(index)
        # checked and rendered as validate will read it back (the strict loader), so that the verdicts on the
        # index.json and README.md written can be recorded for the validation that follows (the pre-commit hook)
        written = _read_back(index_bytes)
        _check_index_schema(index if written is None else written, cache.items)
        bodies = render_bodies(index if written is None else written)
        readme_bytes = _readme_for(root, index, bodies)
        texts = {"index.json": index_bytes, "README.md": readme_bytes}
        if train_new is not None:
            texts[train_rel] = train_new
        for r in (*texts, SUMS_NAME):  # a link among them or on their way: refused before the copy
            refuse_unsafe_path(root, r)
        with Transaction(root) as txn:
            txn.expect_unchanged(stamps)
            txn.check_unchanged()  # before the copy of a weight file (GBs, maybe): a stale write stops here
            txn.copy_file(rel, src)
            # the bytes published must be the bytes checked: re-hash the staged copy
            if txn.staged_sha256(rel) != facts.sha256:
                raise RegistryIOError(f"{file} changed while it was being added", hint="Run the command again.")
            _publish(root, txn, texts, {rel: facts.sha256}, cache=cache)
        # the schema results of the entries written (the new one, any whose recommended mark moved) and the verdicts
        # on the files written: the train.json (strict loader and schema), index.json (the strict loader read it back
        # above and its schema check found nothing) and README.md (the regions rendered from that very value), as
        # validate would conclude them: the validation right after (the pre-commit hook) judges none of them again
        verdict = json_verdict("train", train_new, train_rel) if train_new is not None else None
        verdicts: dict[str, Any] = dict([verdict] if verdict else [])
        if written is not None:
            index_sha = hashlib.sha256(index_bytes).hexdigest()
            verdicts[json_verdict_key("index", index_sha)] = []
            readme_sha = hashlib.sha256(readme_bytes).hexdigest()
            verdicts[readme_verdict_key(readme_sha, index_sha)] = readme_verdict(readme_bytes.decode("utf-8"), bodies)
        cache.journal_items({k: v for k, v in cache.items.items() if k not in known}, verdicts)
        if displaced is not None:
            displaced.extend(lost_mark)
        if warnings is not None:
            warnings.extend(new_warnings)
    return entry


class _Scratch:
    """A temporary directory outside the registry, made on first use and removed on exit (the single-file copy of a
    legacy MiSS package, checked before it is copied in)."""

    def __init__(self) -> None:
        self._dir: str | None = None

    def path(self, name: str) -> Path:
        if self._dir is None:
            import tempfile

            self._dir = tempfile.mkdtemp(prefix="rwkv-registry-add-")
        return Path(self._dir) / name

    def __enter__(self) -> _Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._dir is not None:
            import shutil

            shutil.rmtree(self._dir, ignore_errors=True)


def _source_facts(src: Path, folder: tuple[Path, Path] | None) -> tuple[FileFacts, tuple[Path, Path] | None]:
    """The facts of what ``add`` was given, as the server's load_package would judge it, and ``(adapter.pth,
    adapter.json)`` when it is a legacy two-file package (else None): a folder holding both, or a ``.pth`` without
    ``archive/miss.json`` beside an ``adapter.json``; beside a ``checkpoint.json`` (looked for first, as the server
    does), a legacy training checkpoint."""
    from rwkv_registry.engine.misspkg import (
        CHECKPOINT_JSON,
        checkpoint_facts,
        has_embedded_manifest,
        package_facts,
        sibling_metadata,
    )

    if folder is not None:
        return package_facts(*folder), folder
    facts = compute_facts(src)
    if facts.kind != "torch-zip" or facts.method == "state" or has_embedded_manifest(src):
        return facts, None
    sibling = sibling_metadata(src)
    if sibling is None:
        return facts, None
    name, meta = sibling
    if name == CHECKPOINT_JSON:
        return checkpoint_facts(src, meta), None
    return package_facts(src, meta), (src, meta)


def _embedded_copy(
    legacy: tuple[Path, Path], facts: FileFacts, base: dict[str, Any], display: str, scratch: _Scratch
) -> tuple[Path, FileFacts, list[Finding]]:
    """The single-file package of the legacy ``legacy`` (checked already: ``facts``), written to ``scratch`` and
    checked again as the file that will be published: (its path, its facts, its content findings)."""
    from rwkv_registry.engine.misspkg import embedded_package

    manifest = facts.manifest
    assert isinstance(manifest, dict)
    if "tensor_source" in manifest:
        raise RefusedError(
            f"{display}: adapter.json has tensor_source {manifest['tensor_source']!r}; the server ignores it in an "
            "adapter.json but reads it in an embedded manifest, so the single file would load differently",
            hint="Remove tensor_source from adapter.json (an adapter's tensors are its D) and add the folder again.",
        )
    out = scratch.path("adapter-final.pth")
    out.write_bytes(embedded_package(legacy[0], manifest))
    single = compute_facts(out)
    content = check_weight_file(single, base, display)
    if single.content_version != facts.content_version or any(f.severity == Severity.ERROR for f in content):
        raise RegistryIOError(
            f"{display}: its single-file copy does not read back as the legacy package did "
            f"(content_version {single.content_version} for {facts.content_version})",
            hint="Report this as a bug of rwkv-registry, with the package.",
        )
    return out, single, content


def _compares_against(scores_of: Any, name: str) -> bool:
    """Does one of these scores (a base's, an entry's or an unpublished weight's) compare against ``name``?"""
    return any(
        isinstance(sc, dict) and isinstance(sc.get("comparison"), dict) and sc["comparison"].get("against") == name
        for sc in (scores_of if isinstance(scores_of, list) else [])
    )


def _new_score_warnings(
    before: dict[str, Any], after: dict[str, Any], item: dict[str, Any], name: str
) -> list[Finding]:
    """The score warnings (IDX009, IDX013, IDX014) of index.json ``after`` that ``before`` lacks, ``after`` holding
    one new ``item`` (an entry or base, ``name`` its id or name): its own scores' and those of the weights compared
    against it (unknown before: IDX008; after, IDX014 may find the two of different runs). Only they can change.
    An error among them (IDX008: solved over total, run scores that are not one per run, a comparison against an
    unknown weight, more wins and losses than questions, a step beyond total_steps) is refused with its code
    (:class:`RefusedError`): ``add`` never writes an index.json that ``validate`` then fails."""
    from rwkv_registry.checks.index import score_findings

    if not item.get("scores") and "total_steps" not in item:
        return []  # nothing to check, nor to compare with (IDX014 needs its scores on the benchmark)
    prior = {_seen(f) for f in score_findings(before, lambda x: _compares_against(x.get("scores"), name))}
    now = [f for f in score_findings(after, lambda x: x is item or _compares_against(x.get("scores"), name))]
    errors = [f for f in now if f.severity == Severity.ERROR and _seen(f) not in prior]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise RefusedError(
            f"{errors[0].code}: {errors[0].message}{more}; nothing was written",
            hint=errors[0].hint,
            findings=errors,
        )
    return [f for f in now if f.severity == Severity.WARNING and _seen(f) not in prior]


def _seen(f: Finding) -> tuple[str, str, str]:
    return (f.code, f.path, f.message)


def _entry_warnings(
    root: Path,
    index: dict[str, Any],
    content: list[Finding],
    cache: FactsCache,
    train_warnings: list[Finding],
    train: dict[str, Any],
    train_new_file: bool,
) -> list[Finding]:
    """Every warning (and note) ``validate`` reports once the new entry (the last of ``index``'s entries, about to be
    written) is, and does not report without it, in report order: from the facts ``add`` holds (the file's
    ``content`` findings, the entry, the train.json it leaves), never a whole validation, never a file hashed again.

    Which rules it can bring: MIS017 (the file's own scale), PRF002 (its profile), TRN009 and the note TRN006
    (``train_warnings``),
    TRN010 (a train.json it writes anew: one merged keeps its command line), IDX011 (another entry's file holds its
    bytes), IDX016 (its data records against the others of its method and data version), IDX009, IDX013 and IDX014
    (its scores, and comparisons against it). Not IDX004 (``--recommended`` takes the mark), IDX007 and LAY011 (no
    base or directory changes), IDX015 (no licence changes), HSH007 (SHA256SUMS is written canonical)."""
    from rwkv_registry.checks.index import data_version_findings, same_bytes_finding
    from rwkv_registry.checks.profiles import profile_findings
    from rwkv_registry.checks.train import base_files, train_command_findings
    from rwkv_registry.engine.validate import sort_findings

    entry = index["entries"][-1]
    others = index["entries"][:-1]
    rel: str = entry["path"]
    out = [replace(f, path=rel) for f in content if f.severity == Severity.WARNING]  # shown with --file's name
    out += [f for f in profile_findings(rel, entry) if f.severity == Severity.WARNING]
    out += train_warnings
    bases = {b["name"]: b for b in index["bases"]}
    if train_new_file:
        out += train_command_findings(entry["train"], entry["base"], train, base_files(bases))
    # IDX011: the first entry (validate's order: one per path) whose file holds these bytes. The candidates are those
    # recording the sha256; their facts come from the validation cache (SHA256SUMS needs them right after anyway)
    sha = entry["file"]["sha256"]
    twins: dict[str, dict[str, Any]] = {}
    for e in others:
        p = e["path"]
        if e["file"]["sha256"] != sha or p in twins or not safe_rel(p):  # the schema's sha256 is lower case
            continue
        parts = p.split("/")
        if parts[0] in bases and layout_ok(parts) and p.endswith(WEIGHT_SUFFIXES):
            twins[p] = e
    if twins:
        top = root.resolve()  # the paths the cache knows them by (validate's), also for a relative PATH
        facts, _ = gather_facts({p: top / p for p in twins}, cache)
        for p, e in twins.items():
            f = facts.get(p)
            if isinstance(f, FileFacts) and f.kind != "lfs-pointer" and f.sha256 == sha:
                out.append(same_bytes_finding(rel, entry, sha, p, e))
                break
    # IDX016: only the items of its method and data version meet it
    method, version = entry["method"], entry["data"]["version"]

    def mine(x: dict[str, Any]) -> bool:
        return x.get("method") == method and isinstance(x.get("data"), dict) and x["data"].get("version") == version

    peers = [x for x in others if mine(x)]
    unpublished = [x for x in index.get("unpublished") or [] if mine(x)]
    prior = {_seen(f) for f in data_version_findings(peers + unpublished)}
    out += [f for f in data_version_findings([*peers, entry, *unpublished]) if _seen(f) not in prior]
    out += _new_score_warnings(dict(index, entries=others), index, entry, entry["id"])
    sort_findings(out)
    return out


def _entry_enum(key: str) -> list[str]:
    """The values index.json's schema allows for an entry's ``key`` (profile)."""
    from rwkv_registry.schemas import load_schema

    schema = load_schema("index")
    item = schema["properties"]["entries"]["items"]
    while "$ref" in item:
        item = schema["$defs"][item["$ref"].rsplit("/", 1)[-1]]
    return list(item["properties"][key]["enum"])


def _refuse_state_name(src: Path, rel: str) -> None:
    """A State file whose name validate would put outside the layout (LAY004): refused before anything."""

    parts = rel.split("/")
    if layout_ok(parts):
        return
    name = src.name
    if not name.endswith(WEIGHT_SUFFIXES):
        why = f"file name {name!r} does not end in .pth or .safetensors (lower case)"
        hint = f"Rename the file to {src.stem if src.suffix else name}.pth (or .safetensors) and add it again."
    else:
        why = misplaced(parts)
        hint = "Rename the file (letters, digits, '.', '_' and '-', starting with a letter or digit) and add it again."
    raise UsageError(f"{src}: {why}; validate would refuse it at {rel} (LAY004)", hint=hint, path=str(src))


def _refuse_train_findings(
    root: Path,
    train_rel: str,
    t: dict[str, Any],
    index: dict[str, Any],
    entry: dict[str, Any],
    group: str | None,
    train_arg: Any,
    *,
    new_file: bool = False,
) -> list[Finding]:
    """validate's train.json rules (TRN002–TRN009) on the data-version directory as it will be
    (``t``, its train.json): refuse when they give an error. Returns the warnings and notes (TRN006) the new entry
    brings (those not given without it), for ``add`` to show: ``validate`` would report them after the write.
    ``new_file``: there is no train.json yet, so validate reported none of its findings before."""
    from rwkv_registry.checks.train import train_findings

    d = train_rel.rsplit("/", 1)[0]
    try:
        dirs = {f"{d}/{n}" for n in os.listdir(root / d) if (root / d / n).is_dir()}
    except OSError:
        dirs = set()
    if group is not None:
        dirs.add(f"{d}/{group}")
    others = [e for e in index["entries"] if str(e.get("path", "")).startswith(d + "/")]
    findings = train_findings(train_rel, d, t, [*others, entry], dirs)
    errors = [f for f in findings if f.severity == Severity.ERROR]
    if errors:
        shown = "--train" if isinstance(train_arg, dict) else f"--train {train_arg}"
        raise RefusedError(
            f"{shown}: {errors[0].code} {train_rel}: {errors[0].message}"
            + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
            hint=errors[0].hint,
            path=train_rel,
            findings=errors,
        )
    warned = [f for f in findings if f.severity != Severity.ERROR]  # warnings, and notes (TRN006)
    if not warned:
        return []
    before = set() if new_file else {(f.code, f.path, f.message) for f in train_findings(train_rel, d, t, others, dirs)}
    return [f for f in warned if (f.code, f.path, f.message) not in before]


def _shown(value: Any) -> str:
    """A value in a ``field: old → new`` line: a sha256 cut to 12 digits, anything else as compact JSON (cut)."""
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
        return value[:12] + "…"
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= 80 else text[:79] + "…"


def _rerun_differences(
    train_path: Path,
    registered: dict[str, Any],
    train: dict[str, Any],
    group: str | None,
    sha256: str,
    given: dict[str, Any],
) -> list[str]:
    """How an add of a file at ``registered``'s path differs from that entry: ``field: old → new`` for the file's
    sha256, each value ``given`` (None: not given, never a difference) and what the train.json records (its shared
    fields, and a MiSS group's run), empty when the add is the one that made the entry."""
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file

    out: list[str] = []
    old_sha = registered["file"].get("sha256") if isinstance(registered.get("file"), dict) else None
    if old_sha != sha256:
        out.append(f"file sha256: {_shown(old_sha)} → {_shown(sha256)}")
    for key, value in given.items():
        if value is not None and registered.get(key) != value:
            out.append(f"{key}: {_shown(registered.get(key))} → {_shown(value)}")
    try:
        old_train = load_json_file(train_path)
    except (JsonLoadError, OSError):
        old_train = None
    if not isinstance(old_train, dict):
        return [*out, f"train.json: {train_path.name} cannot be read to compare"]
    keys = ["trainer", "method", "data", "hyperparameters", "command", "started", "finished"]
    for key in keys:
        if old_train.get(key) != train.get(key):
            out.append(f"train.json {key}: {_shown(old_train.get(key))} → {_shown(train.get(key))}")
    if group is not None:

        def run_of(t: dict[str, Any]) -> Any:
            runs = t.get("runs")
            listed = runs if isinstance(runs, list) else []
            return next((r for r in listed if isinstance(r, dict) and r.get("group") == group), None)

        if run_of(old_train) != run_of(train):
            out.append(f"train.json run {group!r}: {_shown(run_of(old_train))} → {_shown(run_of(train))}")
    return out


def _default_id(index: dict[str, Any], base: dict[str, Any], plain: str) -> str:
    """``plain`` (a State's file stem, or ``<data version without dots>-<group>``), or, when an entry of
    another base has it (the same data retrained on a new base, seed 000's workflow), ``plain-<base date>``."""
    taken = {e["id"]: e.get("base") for e in index["entries"]}
    if plain not in taken or taken[plain] == base["name"]:
        return plain  # free, or taken under this very base: refused as a duplicate id
    return f"{plain}-{base_date(base) or base['name']}"


def _refuse_taken_id(
    index: dict[str, Any], twin: dict[str, Any], src: Path, data_version: str, group: str | None, *, given: bool
) -> None:
    """Refuse an entry whose id (``--id``, or the default one) is ``twin``'s: say where the default came from (a
    MiSS id drops the data version's dots, so ``v2.1`` and ``v21`` give the same one) and a free id to give."""
    eid = twin["id"]
    message = f"entry id {eid!r} exists (the entry at {twin.get('path')})"
    if not given:
        twin_version = twin.get("data", {}).get("version") if isinstance(twin.get("data"), dict) else None
        if group is None:
            message += f": the default id of a State is its file name's stem ({src.name})"
        else:
            message += f": the default id of a MiSS adapter is its data version without dots, then its group ({group})"
            if isinstance(twin_version, str) and twin_version != data_version:
                message += f"; data versions {twin_version!r} and {data_version!r} both give {eid!r}"
    taken = {e["id"] for e in index["entries"]}
    candidates = [f"{data_version}-{group}"] if group is not None else []
    candidates += [f"{eid}-{n}" for n in range(2, len(taken) + 3)]
    free = next(c for c in candidates if c not in taken)
    raise RefusedError(message, hint=f"Give this entry an id of its own with --id (e.g. --id {free}).")


def _next_version(version: str) -> str:
    """``v2.1`` -> ``v2.2`` (a suggestion for a message; ``v2.1b`` -> ``v2.1b.1``)."""
    m = re.fullmatch(r"(.*?)(\d+)", version)
    return f"{m.group(1)}{int(m.group(2)) + 1}" if m else f"{version}.1"


def _merge_train(path: Path, new: dict[str, Any], group: str | None) -> tuple[dict[str, Any], bytes | None]:
    """train.json of this directory as it will be, and its bytes to write (None if the existing one
    already covers the new weights)."""
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file

    if not path.exists():
        out = dict(new)
        if group is not None:
            out["runs"] = [r for r in new.get("runs", []) if r.get("group") == group]
        return out, dump_json(out)
    try:
        old = load_json_file(path)
    except JsonLoadError as e:
        raise RefusedError(f"{path}: {e}", hint="Fix the existing train.json first.") from None
    if not isinstance(old, dict):
        raise RefusedError(
            f"{path}: the existing train.json is not a JSON object (SCH003)",
            hint=f"Fix {path} first (`rwkv-registry validate` lists every error).",
        )
    shared = ("trainer", "method", "data", "hyperparameters")
    for key in shared:
        if old.get(key) != new.get(key):
            raise RefusedError(
                f"{path.name}: {key} differs from the existing train.json of this directory",
                hint="Weights of one data-version directory share trainer, data and hyper-parameters; "
                "use another data version or fix --train.",
            )
    if group is None:
        return old, None
    runs = list(old.get("runs", []))
    if any(r.get("group") == group for r in runs):
        return old, None
    runs += [r for r in new.get("runs", []) if r.get("group") == group]
    merged = dict(old)
    merged["runs"] = runs
    return merged, dump_json(merged)


# --- generic index edits ------------------------------------------------------------------------------


def update_index(
    path: str | os.PathLike[str],
    edit: Callable[[dict[str, Any]], None],
    *,
    readme_template: str | None = None,
    warn_signature: bool = True,
) -> dict[str, Any]:
    """Apply ``edit`` to index.json (in place) and publish index, README and SHA256SUMS together.

    ``readme_template``: replace the publisher's README text (it must hold both marker pairs).
    ``warn_signature``: warn when an existing SHA256SUMS.sig goes stale (off for a caller that signs next).
    The edited index must still follow its schema, else nothing is written.
    """
    root = Path(path)
    with registry_lock(root):
        cache = FactsCache(root)  # read once: the index's verdict and its entries' schema results
        stamps = read_stamps(root, "index.json", "README.md")  # rewritten from the copies read below
        index = load_index(root, cache)
        edit(index)
        _check_index_schema(index, cache.items)
        if readme_template is not None:
            readme = update_readme(readme_template, index)
            if readme is None:
                raise UsageError(
                    "the README template lacks the generated-section markers",
                    hint="Put both marker pairs in it, each on its own line: "
                    + ", ".join(f"{b} … {e}" for b, e in README_MARKERS),
                )
            readme_bytes = readme.encode("utf-8")
        else:
            readme_bytes = _readme_for(root, index)
        with Transaction(root) as txn:
            txn.expect_unchanged(stamps)
            _publish(
                root,
                txn,
                {"index.json": dump_json(index), "README.md": readme_bytes},
                warn_signature=warn_signature,
                cache=cache,
            )
    return index


# --- sums / readme ------------------------------------------------------------------------------------


def write_sums(path: str | os.PathLike[str], *, check_index: bool = True) -> bytes:
    """Recompute SHA256SUMS.

    ``check_index`` (the default; ``rwkv-registry sums --force`` turns it off): refuse
    (:class:`RefusedError`, nothing written) when index.json cannot be parsed or breaks its schema, or
    a registered file is missing or differs from index.json, since SHA256SUMS would bless the damage. Not a
    registry, or SHA256SUMS a directory: refused before anything is created.
    """
    from rwkv_registry.fs.atomic import require_registry

    root = require_registry(path)
    sums_path = root / SUMS_NAME
    if sums_path.is_dir() and not sums_path.is_symlink():
        raise RegistryIOError(
            f"{sums_path}: is a directory; SHA256SUMS must be a file",
            hint=f"Remove or rename the directory {sums_path}, then run `rwkv-registry sums {path}` again.",
            path=SUMS_NAME,
        )
    with registry_lock(root), Transaction(root) as txn:
        if (root / "index.json").exists() and not (root / "index.json").is_file():
            raise RefusedError(
                f"{root / 'index.json'}: not a regular file; SHA256SUMS not written",
                hint="index.json must be a plain file (`rwkv-registry validate` reports LAY015).",
                path="index.json",
            )
        if not (root / "index.json").is_file():
            raise UsageError(
                f"{path} is not a registry (no index.json); give the registry root",
                hint="Give the registry's root directory (the one with index.json).",
                path=str(path),
            )
        try:
            data = compute_sums(root)
        except OSError as e:
            if isinstance(e, RegistryIOError):
                raise
            raise RegistryIOError(
                f"cannot read {e.filename or path}: {e.strerror or e}",
                hint=os_error_hint(e, e.filename or path),
                path=str(e.filename or ""),
            ) from e
        problems = _sums_problems(root, data) if check_index else []
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise RefusedError(
                f"SHA256SUMS not written: {first.code} {first.message}{more}",
                hint=f"{first.hint} Run `rwkv-registry validate {path}` to see every problem; `--force` to write "
                "anyway.",
                path=SUMS_NAME,
            )
        stale = _signature_goes_stale(root, data)
        txn.write_bytes(SUMS_NAME, data)
        txn.commit()
    if stale:
        warn_stale_signature(root)
    return data


def _sums_problems(root: Path, sums: bytes) -> list[Finding]:
    """Why ``sums`` must not be written, as findings of the rules ``validate`` would report (their hints are the
    catalogue's, but for index.json, which must be fixed first): an index.json that cannot be parsed (SCH001) or
    breaks its schema (SCH002), and each registered file that is missing (LAY008) or differs from index.json
    (HSH002, HSH001). Messages name the files in full."""
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file
    from rwkv_registry.index.sums import parse_sums
    from rwkv_registry.schemas import schema_errors, schema_summary

    index_path = root / "index.json"
    try:
        index = load_json_file(index_path, display=str(index_path))
    except JsonLoadError as e:
        return [finding("SCH001", "index.json", e.message, hint="Fix index.json first.")]
    errors = schema_errors("index", index, memo=FactsCache(root).items)
    if errors:
        shown = schema_summary(errors)
        return [
            finding(
                "SCH002",
                "index.json",
                f"{index_path} does not follow its schema ({len(errors)} error(s)): {shown}",
                hint="Fix index.json first (restore it with `git checkout -- index.json` if it was edited by mistake).",
            )
        ]
    hashes = {line.path: line.sha256 for line in parse_sums(sums)[0]}
    out: list[Finding] = []
    for entry in index["entries"]:
        rel, rec = entry["path"], entry["file"]
        shown_path = root / rel
        if rel not in hashes:
            out.append(finding("LAY008", rel, f"{shown_path}: the file of entry {entry.get('id')!r} is missing"))
            continue
        try:
            size: int | None = shown_path.stat().st_size
        except OSError:
            size = None
        if size != rec["size"]:
            out.append(finding("HSH002", rel, f"{shown_path}: {size} bytes, but index.json records {rec['size']}"))
        elif hashes[rel] != rec["sha256"].lower():
            out.append(
                finding("HSH001", rel, f"{shown_path}: sha256 is {hashes[rel]}, but index.json records {rec['sha256']}")
            )
    return out


def check_sums(path: str | os.PathLike[str]) -> list[Finding]:
    """Only the SHA256SUMS rules (HSH003–HSH007), like `sha256sum -c`."""
    from rwkv_registry.engine.validate import sums_findings
    from rwkv_registry.fs.atomic import require_registry

    return sums_findings(require_registry(path).resolve())


@collector_paused()
def write_readme(path: str | os.PathLike[str], *, reset: bool = False) -> str:
    """Regenerate README.md's generated sections (``reset``: start from the skeleton). Returns what was done, for
    the user: ``"created"`` (there was none), ``"rebuilt"`` (``reset``), ``"updated"`` or ``"unchanged"``."""
    root = Path(path)
    with registry_lock(root):
        index = load_index(root)
        readme = root / "README.md"
        stamps = read_stamps(root, "README.md")  # before it is read: an edit saved after it refuses the write
        if reset or not readme.exists():
            done = "rebuilt" if readme.exists() else "created"
            text = update_readme(skeleton(index["registry"].get("title") or "RWKV-7 weights"), index)
            assert text is not None
            data = text.encode("utf-8")
        else:
            current = _read_readme(root)  # read once: the check below and the rewrite use these very bytes
            data = _readme_for(root, index, current=current)
            done = "unchanged" if current == data else "updated"
        with Transaction(root) as txn:
            # unchanged: README.md is left as it is (not written back from what was read), SHA256SUMS refreshed
            if done != "unchanged":
                txn.expect_unchanged(stamps)
            _publish(root, txn, {} if done == "unchanged" else {"README.md": data})
    return done


def relpath(p: str) -> str:
    return PurePosixPath(p).as_posix()
