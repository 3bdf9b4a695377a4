"""``rwkv-registry validate``: every rule of :mod:`rwkv_registry.core.rules` on a registry directory.

>>> report = validate_registry("path/to/registry")          # doctest: +SKIP
>>> report.ok, report.counts                                # doctest: +SKIP
(True, {'error': 0, 'warning': 0, 'info': 2})

Weight files are read once each, in parallel threads, and their facts cached outside the tree
(:mod:`rwkv_registry.engine.facts`); JSON Schema results are cached by content hash. A warm run on an
unchanged registry reads only the small JSON and text files.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from rwkv_registry import __version__
from rwkv_registry.core.codekey import code_digest  # the verdict keys' and the facts cache's: the code deciding them
from rwkv_registry.core.errors import UsageError
from rwkv_registry.fs.atomic import LOCK_NAME, TMP_PREFIX, registry_around, require_directory, scan_tree, within

if TYPE_CHECKING:
    from rwkv_registry.checks.git import GitAhead
from rwkv_registry.checks.catalogue import finding
from rwkv_registry.checks.index import (
    adapter_id_findings,
    bases_findings,
    data_version_findings,
    index_items,
    license_findings,
    method_finding,
    recommended_findings,
    records,
    same_bytes_findings,
    score_findings,
    server_findings,
)
from rwkv_registry.checks.json_files import Invalid, json_file_findings, json_verdict_key
from rwkv_registry.checks.layout import (
    REGISTRY_MARKERS,
    case_twins,
    entry_path_findings,
    escaping_link_finding,
    find_moves,
    layout_findings,
    marks_a_registry,
    move_finding,
    not_a_registry_finding,
    special_file_finding,
)
from rwkv_registry.checks.lfs import gitattributes_findings
from rwkv_registry.checks.miss import (
    TargetSpec,
    check_against_base,
    entry_manifest_findings,
    legacy_package_findings,
    unmanifested_finding,
)
from rwkv_registry.checks.profiles import profile_findings
from rwkv_registry.checks.readme import readme_findings
from rwkv_registry.checks.state import state_findings, stray_state_finding
from rwkv_registry.checks.sums import NOT_SUMMED, entry_hash_findings, sums_file_findings
from rwkv_registry.checks.train import (
    base_files,
    data_version_dirs,
    missing_train_findings,
    train_command_findings,
    train_findings,
)
from rwkv_registry.core.fsio import read_at_most, sha256_file
from rwkv_registry.core.rules import Finding, Severity
from rwkv_registry.engine.facts import (
    FactsCache,
    FileFacts,
    gather_facts,
)
from rwkv_registry.index.layout import (
    METHODS,
    WEIGHT_SUFFIXES,
    layout_ok,
)
from rwkv_registry.index.sums import SUMS_NAME
from rwkv_registry.schemas import schema_digest


@dataclass
class Report:
    """Findings of one validation run, with counts and stats."""

    target: str
    findings: list[Finding] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(str(f.severity) for f in self.findings)
        return {s.value: c.get(s.value, 0) for s in Severity}

    @property
    def ok(self) -> bool:
        return self.counts["error"] == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": {"name": "rwkv-registry", "version": __version__},
            "target": self.target,
            "ok": self.ok,
            "counts": self.counts,
            "findings": [f.to_json() for f in self.findings],
            "stats": {
                "files": self.stats.get("files", 0),
                "bytes_hashed": self.stats.get("bytes_hashed", 0),
                "cache_hits": self.stats.get("cache_hits", 0),
                "elapsed_s": round(self.stats.get("elapsed_s", 0.0), 4),
                "bytes_fetched": self.stats.get("bytes_fetched"),
            },
        }


@dataclass
class Tree:
    """What the walk found: files by relative POSIX path (their absolute paths, as strings: a Path per file was
    a twentieth of a warm run at 4,000 entries), and every directory."""

    files: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    empty_dirs: list[str] = field(default_factory=list)
    unreadable: set[str] = field(default_factory=set)  # directories that could not be listed (LAY010)
    special: set[str] = field(default_factory=set)  # FIFOs, sockets, devices (LAY015)
    links: set[str] = field(default_factory=set)  # symbolic links to files inside the registry: not in SHA256SUMS


def _file_kind(entry: os.DirEntry[str]) -> str:
    """What a directory entry that is neither a regular file nor a directory is: ``a FIFO``, ``a socket``, …"""
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError:
        return "a special file"
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device")):
        if test(mode):
            return name
    return "a block device" if stat.S_ISBLK(mode) else "a special file"


def _holds_a_method_directory(directory: str) -> bool:
    """Whether ``directory`` has an entry named ``state`` or ``miss``, of any kind (what makes a directory at the
    root a base directory for :meth:`Validator.not_a_registry`); False when it cannot be listed."""
    try:
        with os.scandir(directory) as entries:
            return any(entry.name in METHODS for entry in entries)
    except OSError:
        return False


def walk_tree(root: Path, out: list[Finding]) -> Tree:
    """Every file and directory under ``root`` but ``.git`` at the top, by the writers' walk
    (:func:`~rwkv_registry.fs.atomic.scan_tree`, each directory's entries sorted): a symbolic link is never followed
    out of the registry (LAY005) nor into a directory; a directory that cannot be listed or an entry that cannot
    be asked is LAY010, a FIFO, socket or device LAY015, two names in one directory that differ only by case LAY017
    (:func:`case_twins`). The walk's findings go to ``out``."""
    tree = Tree()
    # relative paths as strings ("" for the root): no PurePosixPath per entry (a tenth of a warm run at 4,000)
    for _, prefix, entries in scan_tree(root, sort_entries=True):
        rel = prefix[:-1]
        if isinstance(entries, OSError):
            out.append(finding("LAY010", rel or ".", f"cannot list the directory: {entries.strerror}"))
            tree.unreadable.add(rel)
            continue
        if rel and not entries:
            tree.empty_dirs.append(rel)
        if len(entries) > 1:
            out.extend(case_twins([e.name for e in entries], rel))
        for entry in entries:
            r = prefix + entry.name
            if not rel and entry.name == ".git":
                continue
            link = entry.is_symlink()
            if link and not within(root, entry.path):
                out.append(escaping_link_finding(r, os.readlink(entry.path)))
                continue
            try:
                if entry.is_dir():
                    tree.dirs.add(r)  # entered by the walk unless it is a link
                elif entry.is_file():
                    tree.files[r] = entry.path
                    if link:
                        tree.links.add(r)
                else:
                    out.append(special_file_finding(r, _file_kind(entry)))
                    tree.special.add(r)
            except OSError as e:
                out.append(finding("LAY010", r, f"cannot stat: {e.strerror}"))
    return tree


class Snapshot:
    """What one validation reads (a :class:`Validator`'s ``snapshot``): here the local tree at ``root``, walked once
    (:func:`walk_tree`), its weight files' facts cached or read in parallel threads (:func:`gather_facts`). Another
    source says how to list and how to read, as a subclass: a Hub repository at one commit
    (:class:`rwkv_registry.hub.commands.HubSnapshot`), a pulled copy whose skipped weights are known by the Hub's
    metadata (``hub/sync.py``), a run that reports each file as it completes (``tui/validation.py``). The rules stay
    the Validator's, whatever the source."""

    history = True  # git's history can be asked (GIT001–GIT007); a Hub repository keeps its own
    reads_legacy_packages = (
        True  # a legacy package's adapter.pth is here to be read (MIS021 gives the server's verdict)
    )

    def __init__(self, root: Path) -> None:
        self.root = root

    def walk(self, findings: list[Finding]) -> Tree:
        """Every file and directory (symlinks checked, never followed out); findings of the walk go to ``findings``."""
        return walk_tree(self.root, findings)

    def facts(self, tree: Tree, weights: list[str], v: Validator) -> dict[str, FileFacts | OSError]:
        """Facts of the weight files ``weights`` of ``tree``: from ``v.cache``, else read once each in parallel
        threads (``v.progress`` told of each); what it measured goes to ``v.stats``."""
        facts, stats = gather_facts({r: tree.files[r] for r in weights}, v.cache, progress=v.progress)
        v.stats.update(stats)
        return facts


class Validator:
    """One validation run. Use :func:`validate_registry`. ``snapshot``: what it reads (the local tree at ``root`` by
    default); ``before_step(v)``: called before each rule step (the browser's, to yield and to stop)."""

    def __init__(
        self,
        root: Path,
        *,
        use_cache: bool,
        since: str | None,
        progress: Callable[[str, int], None] | None = None,
        cache: FactsCache | None = None,
        snapshot: Snapshot | None = None,
        before_step: Callable[[Validator], object] | None = None,
    ) -> None:
        self.root = root
        self.snapshot = snapshot if snapshot is not None else Snapshot(root)
        self.before_step = before_step
        self.since = since
        self.progress = progress
        # ``cache``: one already opened for ``root`` (``pull`` seeds it with the facts its download check read)
        self.cache = cache if cache is not None else FactsCache(root, enabled=use_cache)
        self.findings: list[Finding] = []
        self.index: dict[str, Any] | None = None
        self.bases: dict[str, dict[str, Any]] = {}
        self.entries_by_path: dict[str, dict[str, Any]] = {}
        self.ids: set[str] = set()  # entry and unpublished ids
        self.small_hashes: dict[str, str] = {}
        # sha256 and git's (SHA-1) blob id of the bytes index.json was parsed from: check_git compares HEAD's
        self.index_ids: tuple[str | None, str | None] = (None, None)
        self.stats: dict[str, Any] = {}
        self.trusted_keys: list[str] = []
        self.invalid_json: set[str] = set()  # JSON files that failed their schema (rules on them guarded)
        self.sums_listed: dict[str, str] = {}  # SHA256SUMS: path -> sha256 (first listing)
        self.file_sha: dict[str, str] = {}  # sha256 of every summable file on disk, from check_sums
        self.sums_gone: dict[str, Finding] = {}  # HSH005 findings by the listed path
        self.schema_digest: str | None = None
        # id of a MiSS target list -> (that list, the architecture it fits): check_miss checks it once
        self.fitted_targets: dict[int, tuple[list[dict[str, Any]], dict[str, Any]]] = {}
        self.legacy_folders: set[str] = set()  # <base>/miss/<version>/<group> holding adapter.json + adapter.pth
        self.base_files: dict[str, str] | None = None  # base_files(self.bases), once per run (check_train_command)
        self.git_ahead: GitAhead | None = None  # check_history's git commands, started early (start_history)

    def add(self, f: Finding) -> None:
        self.findings.append(f)

    # --- JSON ---------------------------------------------------------------------------------
    def load_json(self, rel: str, schema: str, code: str) -> Any:
        """Parse a JSON file and check it against a schema; schema errors are cached by content."""
        from rwkv_registry.formats.jsonload import read_json_bytes

        try:
            data = read_json_bytes(os.path.join(self.root, rel))  # refuses an oversize file by stat, unread
        except OSError as e:
            self.add(finding("LAY010", rel, f"cannot read: {e.strerror}"))
            return None
        self.small_hashes[rel] = hashlib.sha256(data).hexdigest()
        if rel == "index.json":
            from rwkv_registry.checks.git import git_blob_id

            self.index_ids = (self.small_hashes[rel], git_blob_id(data))
        if self.schema_digest is None:  # read once per run, not once per JSON file
            self.schema_digest = f"{schema_digest()}:{code_digest()}"
        value, found = json_file_findings(
            rel,
            data,
            schema,
            code,
            key=json_verdict_key(schema, self.small_hashes[rel], self.schema_digest),
            memo=self.cache,
            items=self.cache.items if self.cache.enabled else None,  # index.json entries, by content
        )
        self.findings += found
        if isinstance(value, Invalid):
            self.invalid_json.add(rel)
        return value

    # --- the run --------------------------------------------------------------------------------
    def run(self) -> None:
        """All rules. Subclasses (the Hub validator) override :meth:`walk`, :meth:`collect_facts`
        and :meth:`check_history` to validate a tree that is not a local directory."""
        from rwkv_registry.checks.signatures import (
            check_signatures,  # SIG001–SIG004 (cryptography loads only when keys exist)
        )

        t0 = time.perf_counter()
        tops = self.plainly_not_a_registry()
        if tops is not None:  # decided from the root's entries: a wrong path is not walked
            self.findings = [not_a_registry_finding(str(self.root), [name for name, _ in tops])]
            self.stats["files"] = sum(1 for _, is_file in tops if is_file)
            self.stats["elapsed_s"] = time.perf_counter() - t0
            return
        tree = self.walk()
        if self.not_a_registry(tree):
            self.stats["files"] = len(tree.files)
            self.stats["elapsed_s"] = time.perf_counter() - t0
            return
        self.guarded(self.load_index, tree)
        self.start_history()
        self.guarded(self.check_layout, tree)
        self.guarded(self.check_license, tree)
        self.guarded(self.check_server)
        weights = self.weight_files(tree)
        facts = self.collect_facts(tree, weights)
        self.guarded(self.check_entries, tree, weights, facts)
        self.guarded(self.check_legacy_packages, tree)
        self.guarded(self.check_train_files, tree, weights)
        self.check_sums(tree, facts)
        self.fold_moves(tree)
        self.findings += check_signatures(self.root, set(tree.files), self.index, self.trusted_keys)
        if "index.json" in self.invalid_json:
            self.add(finding("SCH005", "README.md", "README rules skipped until index.json follows its schema"))
        else:
            self.guarded(self.check_readme, tree)
        self.check_gitattributes(tree)
        self.guarded(self.check_history)
        self.drop_unseen_echoes(tree)
        self.cache.save(live=tree.files.values())
        self.stats["files"] = len(tree.files)
        self.stats["elapsed_s"] = time.perf_counter() - t0

    def not_a_registry(self, tree: Tree) -> bool:
        """Is the tree plainly no registry (an empty directory, a wrong path): nothing at its root that a registry
        or a write into one leaves (index.json, README.md, SHA256SUMS, SHA256SUMS.sig, a file of an interrupted
        write), in any form (a file, a directory, a link, a FIFO), and no directory holding ``state`` or ``miss``?
        Then the one finding is LAY016, instead of each missing file's own (SCH004 twice, RDM001, LFS002 twice)
        and whatever else lies there (LAY001 for every file of, say, a home directory). A registry that is merely
        damaged (index.json gone but README.md there, …) keeps its detailed findings; so does a root that cannot
        be listed (LAY010)."""
        if "" in tree.unreadable or any(m in tree.files for m in REGISTRY_MARKERS):
            return False  # the usual case, decided without going through the tree
        seen = [*tree.files, *tree.dirs, *tree.special, *(f.path for f in self.findings)]  # LAY005: links out
        if marks_a_registry(seen):
            return False
        self.findings = [not_a_registry_finding(str(self.root), sorted({r.partition("/")[0] for r in seen}))]
        return True

    def plainly_not_a_registry(self) -> list[tuple[str, bool]] | None:
        """:meth:`not_a_registry` decided before the walk, from the root's entries and the names in its directories
        alone (all that decides it): the root's entries but ``.git``, sorted, each with whether it is a regular file,
        when the root is plainly no registry; else None (a registry, damaged or not, or a root that cannot be
        listed: walked). A wrong path (a home directory, a disk) is then not walked to its last file before the
        one finding. Only for a snapshot walked as the local tree is (a Hub repository's is no local directory;
        a pulled copy's skipped weights are not on disk)."""
        if type(self.snapshot).walk is not Snapshot.walk:
            return None
        tops: list[tuple[str, bool]] = []
        try:
            with os.scandir(self.root) as entries:
                for entry in entries:
                    name = entry.name
                    if name == ".git":
                        continue
                    if marks_a_registry([name]):
                        return None
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        is_file = entry.is_file() and not (entry.is_symlink() and not within(self.root, entry.path))
                    except OSError:
                        is_dir = is_file = False
                    if is_dir and _holds_a_method_directory(entry.path):
                        return None
                    tops.append((name, is_file))
        except OSError:
            return None  # LAY010 from the walk
        return sorted(tops)

    def drop_unseen_echoes(self, tree: Tree) -> None:
        """What was never seen is reported once, by its cause: a directory that cannot be listed (LAY010; unless it
        is the root) or a FIFO, socket or device in place of a file (LAY015, never opened). The findings that would
        call what lies there missing or empty (LAY008, TRN001 for its train.json, HSH005 "cannot be read" for a
        listed one, README.md's RDM001, SHA256SUMS's SCH004, .gitattributes' LFS002, …) are echoes of that cause,
        dropped."""
        prefixes = () if "" in tree.unreadable else tuple(f"{d}/" for d in tree.unreadable)
        if not prefixes and not tree.special:
            return

        def unseen(rel: str) -> bool:
            return rel in tree.special or rel.startswith(prefixes)

        echoes = {id(f) for rel, f in self.sums_gone.items() if unseen(rel)}
        self.findings = [
            f
            for f in self.findings
            if f.code in ("LAY010", "LAY015")
            or not (
                id(f) in echoes
                or unseen(f.path)
                or (
                    f.code == "TRN001"  # "has no train.json": not seen, not missing
                    and ((prefixes and f.path in tree.unreadable) or f"{f.path}/train.json" in tree.special)
                )
            )
        ]

    def guarded(self, step: Callable[..., object], *args: Any) -> None:
        """Run a rule step; on a JSON file that broke its schema, rules that cannot read it are
        skipped (SCH005) instead of crashing. Without schema errors, an exception is a bug: raised."""
        if self.before_step is not None:
            self.before_step(self)
        try:
            step(*args)
        except (TypeError, AttributeError, KeyError, ValueError, IndexError) as e:
            if not self.invalid_json:
                raise
            where = sorted(self.invalid_json)
            self.add(
                finding(
                    "SCH005",
                    where[0],
                    f"rules of {step.__name__} skipped: {', '.join(where)} "
                    f"does not follow its schema ({type(e).__name__})",
                )
            )

    def walk(self) -> Tree:
        """Every file and directory of the snapshot."""
        return self.snapshot.walk(self.findings)

    def collect_facts(self, tree: Tree, weights: list[str]) -> dict[str, FileFacts | OSError]:
        """Facts of the weight files, as the snapshot reads them."""
        return self.snapshot.facts(tree, weights, self)

    def start_history(self) -> None:
        """Start the git commands of :meth:`check_history` now, in the background (:class:`~.gitcheck.GitAhead`),
        when it will run them against HEAD (index.json read, no ``--since``) and is this class's own (the Hub
        validator's has no clone)."""
        if self.index is None or self.since or not self.snapshot.history:
            return
        from rwkv_registry.checks.git import GitAhead

        self.git_ahead = GitAhead.start(self.root)

    def check_history(self) -> None:
        """Git immutability (GIT001–GIT006); none for a snapshot without git's history (the Hub keeps its own)."""
        if not self.snapshot.history:
            return
        if self.index is not None or self.since:
            from rwkv_registry.checks.git import check_git, fold_history

            ids = self.index_ids if self.index is not None else (None, None)
            self.findings += check_git(
                self.root,
                self.index,
                self.since,
                index_sha256=ids[0],
                index_blob_id=ids[1],
                memo=self.cache,
                ahead=self.git_ahead,
            )
            self.findings = fold_history(self.root, self.findings)

    def load_index(self, tree: Tree) -> dict[str, Any] | None:
        if "index.json" not in tree.files:
            self.add(finding("SCH004", "index.json", "index.json is missing"))
            return None
        value = self.load_json("index.json", "index", "SCH002")
        if isinstance(value, Invalid):
            value = value.value
        if not isinstance(value, dict):
            return None
        self.index = value
        rec, found = records(value)
        self.findings += found
        self.bases, self.entries_by_path, self.ids = rec.bases, rec.entries_by_path, rec.ids
        self.guarded(self.check_bases)
        self.guarded(self.check_adapter_ids, value)
        self.guarded(self.check_data_versions, value)
        self.guarded(self.check_scores, value)
        return value

    # --- IDX (checks/index.py) ----------------------------------------------------------------------------------
    def check_data_versions(self, index: dict[str, Any]) -> None:
        self.findings += data_version_findings(index_items(index))

    def check_adapter_ids(self, index: dict[str, Any]) -> None:
        self.findings += adapter_id_findings(index)

    def check_bases(self) -> None:
        self.findings += bases_findings(self.bases)

    def check_scores(self, index: dict[str, Any]) -> None:
        self.findings += score_findings(index, bases=self.bases, ids=self.ids)

    def check_license(self, tree: Tree) -> None:
        self.findings += license_findings(self.index, (r for r in tree.files if "/" not in r))

    def check_server(self) -> None:
        self.findings += server_findings(self.index)

    def check_layout(self, tree: Tree) -> None:
        found, self.legacy_folders = layout_findings(
            tree.files,
            tree.dirs,
            tree.empty_dirs,
            self.bases,
            # index.json unreadable (SCH001/SCH002/SCH004 say so): no verdict on the directories
            judge_base_dirs=self.index is not None and isinstance(self.index.get("bases"), list),
        )
        self.findings += found

    def check_legacy_packages(self, tree: Tree) -> None:
        """MIS021 (checks/miss.py ``legacy_package_findings``) on each legacy two-file package the layout found,
        with the server's verdict from its adapter.pth where the snapshot can read it. Not cached (a rare sight)."""
        from rwkv_registry.engine.misspkg import ADAPTER_JSON, ADAPTER_PTH, package_facts

        for folder in sorted(self.legacy_folders):
            if not self.snapshot.reads_legacy_packages:  # a Hub listing: its adapter.pth (LFS) is not downloaded
                self.findings += legacy_package_findings(folder, None)
                continue
            pth, manifest = tree.files[f"{folder}/{ADAPTER_PTH}"], tree.files[f"{folder}/{ADAPTER_JSON}"]
            try:
                facts = package_facts(Path(pth), Path(manifest))
            except OSError as e:
                self.add(finding("LAY010", f"{folder}/{ADAPTER_PTH}", f"cannot read: {e.strerror or e}"))
                continue
            content = facts.content_findings(f"{folder}/{ADAPTER_PTH}")
            self.findings += legacy_package_findings(folder, content, facts.content_version)

    def weight_files(self, tree: Tree) -> list[str]:
        """Weight files in allowed places (others got LAY004)."""
        out = []
        for rel in tree.files:
            parts = rel.split("/")
            if parts[0] in self.bases and layout_ok(parts) and rel.endswith(WEIGHT_SUFFIXES):
                out.append(rel)
        return out

    def check_entries(self, tree: Tree, weights: list[str], facts: dict[str, FileFacts | OSError]) -> None:
        for rel in weights:
            if rel not in self.entries_by_path:
                self.add(finding("LAY007", rel, "no entry in index.json records this file"))
        for path, e in self.entries_by_path.items():
            eid = e.get("id")
            self.findings += entry_path_findings(path, e)
            self.findings += profile_findings(path, e)
            if path not in tree.files:
                self.add(finding("LAY008", path, f"entry {eid!r}: the file does not exist"))
                continue
            f = facts.get(path)
            if isinstance(f, OSError):
                self.add(finding("LAY010", path, f"cannot read: {f.strerror or f}"))
                continue
            if f is None:
                continue  # in a place outside the layout: LAY004 already
            self.check_file(path, e, f)
        self.check_same_bytes(facts)
        self.findings += recommended_findings(self.entries_by_path.values())

    def check_same_bytes(self, facts: dict[str, FileFacts | OSError]) -> None:
        """IDX011 (LFS pointers are not the bytes: LFS001)."""
        shas = {p: f.sha256 for p, f in facts.items() if isinstance(f, FileFacts) and f.kind != "lfs-pointer"}
        self.findings += same_bytes_findings(self.entries_by_path, shas)

    def check_file(self, path: str, e: dict[str, Any], f: FileFacts) -> None:
        content = f.content_findings(path)
        if f.kind == "lfs-pointer":  # only `git lfs pull` helps: the hash and size findings would blame the file
            self.findings += content
            return
        self.findings += entry_hash_findings(
            path, e["file"] if isinstance(e.get("file"), dict) else {}, f.sha256, f.size
        )
        self.findings += content
        if f.kind == "unknown":
            return
        if any(x.code.startswith("PTH") for x in content):
            return
        method = e.get("method")
        unmanifested = (
            unmanifested_finding(path, [t[0] for t in f.tensors]) if method == "miss" and f.method is None else None
        )
        if unmanifested is not None:
            self.add(unmanifested)
            return
        stray = stray_state_finding(path, f.method, [t[0] for t in f.tensors]) if method == "state" else None
        if stray is not None:
            self.add(stray)
            return
        wrong = method_finding(path, method, f.method)  # IDX003
        if wrong is not None:
            self.add(wrong)
            return
        base = self.bases.get(str(e.get("base")))
        arch = (base or {}).get("architecture") if isinstance(base, dict) else None
        if method == "state":
            self.check_state(path, f, arch)
        elif method == "miss":
            self.check_miss(path, e, f, base, arch)

    def check_state(self, path: str, f: FileFacts, arch: dict[str, Any] | None) -> None:
        self.findings += state_findings(path, f.size, f.kind, f.tensors, arch)

    def check_miss(
        self, path: str, e: dict[str, Any], f: FileFacts, base: dict[str, Any] | None, arch: dict[str, Any] | None
    ) -> None:
        manifest = f.manifest if isinstance(f.manifest, dict) else None
        if manifest is None:
            return
        rec = e["miss"] if isinstance(e.get("miss"), dict) else {}
        self.findings += entry_manifest_findings(path, rec, manifest, base)
        if isinstance(arch, dict):
            # Adapters of one base and rank share their cached target list (the cache's blobs): a list that fitted
            # this very architecture object already fits again. Both are held, so their ids stay theirs this run.
            fitted = self.fitted_targets.get(id(f.targets))
            if fitted is not None and fitted[0] is f.targets and fitted[1] is arch:
                return
            specs = [
                TargetSpec(t["layer"], t["target"], t["tensor"], t["in_features"], tuple(t["shape"])) for t in f.targets
            ]
            try:
                misfits = check_against_base(specs, arch, path)
            except (KeyError, TypeError, ValueError):
                return
            self.findings += misfits
            if not misfits:
                self.fitted_targets[id(f.targets)] = (f.targets, arch)

    def check_train_files(self, tree: Tree, weights: list[str]) -> None:
        version_dirs = data_version_dirs(weights, self.entries_by_path, tree.dirs, self.bases)
        self.findings += missing_train_findings(version_dirs, tree.dirs, tree.files)
        group_dirs: dict[str, set[str]] = {}  # data-version directory -> its group directories, for TRN004
        mis015 = {f.path for f in self.findings if f.code == "MIS015"}  # an index record that is wrong: no TRN008 echo
        for p in tree.dirs:
            if p.count("/") == 3:
                group_dirs.setdefault(p.rsplit("/", 1)[0], set()).add(p)
        for d, entries in sorted(version_dirs.items()):
            rel = f"{d}/train.json"
            if d not in tree.dirs or rel not in tree.files:
                continue  # TRN001 (missing_train_findings), or the directory is gone
            value = self.load_json(rel, "train", "SCH003")
            if isinstance(value, Invalid):
                value = value.value
            if not isinstance(value, dict):
                continue
            unsure = frozenset(str(e.get("id")) for e in entries if e.get("path") in mis015)
            self.findings.extend(train_findings(rel, d, value, entries, group_dirs.get(d, set()), unsure))
            self.check_train_command(rel, d.split("/")[0], value)

    def check_train_command(self, rel: str, base: str, t: dict[str, Any]) -> None:
        """TRN010: the command line names another registered base's file, and not this base's."""
        if self.base_files is None:  # the bases do not change during a run: their files are listed once
            self.base_files = base_files(self.bases)
        self.findings += train_command_findings(rel, base, t, self.base_files)

    def check_sums(self, tree: Tree, facts: dict[str, FileFacts | OSError]) -> None:
        """The SHA256SUMS rules (:func:`~rwkv_registry.checks.sums.sums_file_findings`) against what ``sums`` would
        list (``ops.registry_files``: a link is read through as its target, which is listed itself), hashed from
        the facts, the small files already read, or read now."""
        if SUMS_NAME not in tree.files:
            self.findings += sums_file_findings(None, self.root, (), {}, ()).findings
            return
        expected = {
            r
            for r in tree.files
            if r not in NOT_SUMMED and r not in tree.links and not _basename(r).startswith(TMP_PREFIX)
        }
        actual: dict[str, str] = {}
        for rel in sorted(expected):
            f = facts.get(rel)
            if isinstance(f, FileFacts):
                actual[rel] = f.sha256
            elif rel in self.small_hashes:
                actual[rel] = self.small_hashes[rel]
            elif f is None:
                try:
                    actual[rel] = sha256_file(tree.files[rel])[0]
                except OSError:
                    continue
        pointers = {r for r, f in facts.items() if isinstance(f, FileFacts) and f.kind == "lfs-pointer"}
        verdict = sums_file_findings(tree.files[SUMS_NAME], self.root, expected, actual, pointers)
        self.findings += verdict.findings
        self.sums_listed, self.file_sha, self.sums_gone = verdict.listed, actual, verdict.gone

    def fold_moves(self, tree: Tree) -> None:
        """LAY014: recorded files that are missing while unrecorded files with the same sha256 sit elsewhere
        (a renamed directory or file). One finding per renamed directory replaces the per-file findings
        (LAY007, LAY008, HSH004, HSH005, and the findings on the moved copies), and LAY002/LAY003 of a
        renamed base directory."""
        want: dict[str, str] = {}  # recorded path missing on disk -> its recorded sha256
        for rel, sha in self.sums_listed.items():
            if rel not in tree.files:
                want[rel] = sha
        for rel, e in self.entries_by_path.items():
            rec = e.get("file")
            if rel not in tree.files and isinstance(rec, dict) and isinstance(rec.get("sha256"), str):
                want.setdefault(rel, rec["sha256"].lower())
        if not want:
            return
        by_sha: dict[str, list[str]] = {}
        for rel, sha in self.file_sha.items():
            if rel not in self.entries_by_path and (rel not in self.sums_listed or rel.endswith(WEIGHT_SUFFIXES)):
                by_sha.setdefault(sha, []).append(rel)
        groups = find_moves(want, by_sha)
        if not groups:
            return
        drop_paths: set[str] = set()
        drop: set[int] = set()
        for (old_p, new_p), pairs in sorted(groups.items()):
            drop_paths.update(p for pair in pairs for p in pair)
            drop.update(id(self.sums_gone[o]) for o, _ in pairs if o in self.sums_gone)
            if "/" not in new_p and "/" not in old_p:  # a base directory renamed: LAY002 + LAY003 are this
                drop.update(id(f) for f in self.findings if (f.code, f.path) in (("LAY002", new_p), ("LAY003", old_p)))
            self.add(move_finding(old_p, new_p, pairs, listed=old_p in self.sums_listed))
        self.findings = [
            f for f in self.findings if id(f) not in drop and not (f.path in drop_paths and f.code in _MOVE_NOISE)
        ]

    def check_readme(self, tree: Tree) -> None:
        self.findings += readme_findings(
            tree.files.get("README.md"),
            self.index,
            index_sha256=self.small_hashes.get("index.json"),
            digests=self.schema_digest,
            memo=self.cache,
        )

    def check_gitattributes(self, tree: Tree) -> None:
        """LFS002 (:func:`~rwkv_registry.checks.lfs.gitattributes_findings`) on every .gitattributes of the tree."""
        from rwkv_registry.core.fsio import open_regular
        from rwkv_registry.formats.gitattr import MAX_READ

        texts: dict[str, bytes] = {}
        for rel in (r for r in tree.files if r == ".gitattributes" or r.endswith("/.gitattributes")):
            try:
                with open_regular(tree.files[rel]) as fh:
                    texts[rel] = read_at_most(fh, os.fstat(fh.fileno()).st_size, MAX_READ + 1)
            except OSError:
                texts[rel] = b""
        self.findings += gitattributes_findings(texts, tree.files)


# findings on the two paths of a moved file that only say "it moved": LAY014 replaces them
_MOVE_NOISE = frozenset({"LAY007", "LAY008", "HSH004", "TRN003", "TRN006"})


def _basename(rel: str) -> str:
    """``PurePosixPath(rel).name`` without building a path object (thousands per run)."""
    name = rel[rel.rfind("/") + 1 :]
    return name if name and name != "." else PurePosixPath(rel).name


def write_in_progress(root: Path) -> bool:
    """Is the registry's write lock (:data:`~rwkv_registry.fs.atomic.LOCK_NAME`) held by a live process?

    The lock is an ``flock`` that the kernel drops when its process dies, so a lock file left by a killed
    writer reads as free. Probed with a shared, non-blocking ``flock`` on a read-only descriptor: nothing is
    created or written (validate works on read-only copies), and the probe never waits."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system: filelock uses another mechanism there; no verdict
        return False
    try:
        fd = os.open(root / LOCK_NAME, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False  # no lock file (or unreadable): nobody is writing through rwkv-registry
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the probe's own shared lock
    return False


def validate_registry(
    path: str | os.PathLike[str],
    *,
    use_cache: bool = True,
    since: str | None = None,
    progress: Callable[[str, int], None] | None = None,
    trusted_keys: list[str] | None = None,
    cache: FactsCache | None = None,
) -> Report:
    """Run every rule on the registry at ``path``. Raises :class:`UsageError` if it is not a directory.
    ``cache``: a facts cache already opened for ``path`` (instead of the user cache's, or none with ``use_cache``
    False)."""
    root, early = before_validation(path)
    if early is not None:
        return early
    with collector_paused():
        v = Validator(root, use_cache=use_cache, since=since, progress=progress, cache=cache)
        v.trusted_keys = list(trusted_keys or [])
        report = run_validator(v, path)
        del v  # its index, cache and facts are freed here by their reference counts, unscanned by the collector
    return report


def before_validation(path: str | os.PathLike[str]) -> tuple[Path, Report | None]:
    """What :func:`validate_registry` checks before any rule (shared with the TUI's live validation): the
    resolved root, and the report to give instead of running the rules (LAY013 while a write is in progress), if
    any. Raises :class:`UsageError` when ``path`` is no directory (absent, or deleted since), or a directory
    without index.json inside a registry."""
    root = Path(path)
    require_directory(root)
    root = root.resolve()
    if not (root / "index.json").exists():
        outer = registry_around(root)
        if outer is not None:
            raise UsageError(
                f"{path}: no index.json here; it lies inside the registry at {outer}",
                hint=f"Validate the registry's root: rwkv-registry validate {outer}",
            )
    if write_in_progress(root):
        # a half-written tree gives temporary files (LAY012 "run recover") and half-made directories
        # (TRN001): none of it is wrong, and recover must not run under a live writer
        where = f"lock {LOCK_NAME} is held by a running rwkv-registry command"
        return root, Report(str(path), [finding("LAY013", LOCK_NAME, f"a write is in progress ({where})")], {})
    return root, None


def run_validator(v: Validator, path: str | os.PathLike[str]) -> Report:
    """Run ``v`` (made for the root :func:`before_validation` gave) and report its findings in report order."""
    v.run()
    sort_findings(v.findings)
    return Report(str(path), v.findings, v.stats)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block (as it was before, after it); also a decorator.

    A validation run builds hundreds of thousands of objects that live until its end (index.json, the cache,
    the facts of every file) and no garbage cycles worth collecting in between: each automatic collection
    that their allocation triggers scans them again, for nothing (a twelfth of a warm run at 4,000 entries).
    The writes that read the whole index (``add``, ``add-base``, ``readme``) are run the same way. Objects are
    still freed by their reference counts as usual; a cycle made meanwhile is collected after."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
_DIGITS = re.compile(r"(\d+)")


def sort_findings(findings: list[Finding]) -> None:
    """Report order, in place: errors first, then by path, code and message, numbers in a message
    compared as numbers ("line 2" before "line 10")."""

    def key(f: Finding) -> tuple[Any, ...]:
        parts = _DIGITS.split(f.message)
        natural = tuple((0, int(p), "") if i % 2 else (1, 0, p) for i, p in enumerate(parts))
        return (_SEVERITY_ORDER[str(f.severity)], f.path, f.code, natural)

    findings.sort(key=key)


def sums_findings(root: Path) -> list[Finding]:
    """The SHA256SUMS rules alone (HSH003–HSH007, and SCH004 of its lines) for the registry at ``root``, walked
    and hashed as ``validate`` does (the facts cache included): what ``sums --check`` reports."""
    v = Validator(root, use_cache=True, since=None)
    tree = walk_tree(root, v.findings)
    weights = [r for r in tree.files if r.endswith(WEIGHT_SUFFIXES)]
    facts, _ = gather_facts({r: tree.files[r] for r in weights}, v.cache)
    v.check_sums(tree, facts)
    v.cache.save()
    return [f for f in v.findings if f.code.startswith(("HSH", "SCH004"))]


def entry_file_findings(display: str, entry: dict[str, Any], facts: FileFacts, bases: dict[str, Any]) -> list[Finding]:
    """The per-file rules of ``validate`` (shapes against the base, the MiSS manifest, hashes) for one weight file
    recorded as ``entry`` against ``bases``, with no tree walked: what ``add`` checks before a file enters."""
    v = Validator(Path("."), use_cache=False, since=None)
    v.bases = dict(bases)
    v.check_file(display, entry, facts)
    return v.findings


def listed_sums_findings(root: Path, files: dict[str, str], facts: dict[str, FileFacts | OSError]) -> list[Finding]:
    """The SHA256SUMS rules of ``validate`` for ``root``'s SHA256SUMS against a listing (``files``: relative path to
    local path) whose hashes ``facts`` already hold (a Hub listing's LFS sha256, say): nothing else is read."""
    v = Validator(root, use_cache=False, since=None)
    v.check_sums(Tree(files=files), facts)
    return v.findings
