"""Immutability of published files, from git history (GitPython).

Baseline: ``HEAD``, or ``--since REV``. A file that exists at the baseline under a base directory
must not be modified or deleted in the working tree or the index (GIT001, GIT002; the message
names the commit that published it; a file marked assume-unchanged or skip-worktree, which git's diffs do not
look at, is compared with its published blob here); a base that is ``frozen`` at the baseline or now, or that a
newer base of its family supersedes, gets no new files (GIT003; the empty ``.gitkeep`` placeholders of
its method folders excepted; with ``--since``, a file whose last commit in the range was made while its base
was open, by that commit's index.json, and that the index and working tree leave as committed, is not new
under a closed base). A base ``frozen`` at the baseline must still be ``frozen`` (GIT005): reopened in
one commit, it would take new files in the next. Outside a git work tree (a plain copy, a
``pull``) they cannot be checked, and GIT004 (a warning) says so; inside one whose history git cannot read
(``.git/objects`` unreadable, a commit missing from a corrupt object store) the guarantee cannot be given either,
and GIT006 is an error, so that the pre-commit hook fails instead of passing unchecked; so is a git work tree
where git itself cannot be run (not on PATH): nothing would be checked either. The Hub validator
(``hf://``) skips them by design, the Hub keeping its own history.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from rwkv_registry.core.errors import UsageError
from rwkv_registry.core.rules import E, Finding, Rule, Rulebook, W
from rwkv_registry.index.lineage import active_successor
from rwkv_registry.index.published import (
    base_identity_changes,
    bases_by_name,
    change_code,
    closed_bases,
    empty_under,
    reopened,
)

# --- the rules ----------------------------------------------------------------------------------------------------

RULES = Rulebook(
    Rule(
        "GIT001",
        E,
        "published file modified",
        "Files under a base directory never change once committed; restore it "
        "(`git checkout HEAD -- PATH`) and publish the new weights under a new name or data version.",
    ),
    Rule(
        "GIT002",
        E,
        "published file deleted",
        "Old base directories are never touched; restore it with `git checkout HEAD -- PATH`.",
    ),
    Rule(
        "GIT003",
        E,
        "new file under a frozen or superseded base",
        "A frozen base, or one that a newer base of its family has superseded, gets no new files (its empty "
        ".gitkeep placeholders aside); add the weights under the newest base.",
    ),
    Rule(
        "GIT004",
        W,
        "git history unavailable",
        "Immutability could not be checked; run inside a git clone with git installed.",
    ),
    Rule(
        "GIT005",
        E,
        "frozen base reopened",
        "A frozen base stays frozen once committed (reopened, its old directory could take new files in a later "
        'commit): set its status back to "frozen" in index.json, and train on the newest base of its family '
        "(`rwkv-registry add-base` for a new one).",
    ),
    Rule(
        "GIT006",
        E,
        "git history unreadable in a git work tree",
        "The registry is in a git work tree, but git cannot read its history, so immutability (GIT001–GIT003, "
        "GIT005, GIT007) was not checked: install git or put it on PATH (`git --version`); give the user running "
        "validate read access to .git (`ls -l .git/objects`); when "
        "git says 'dubious ownership' (a clone owned by another user, as in CI containers), mark it safe with "
        "`git config --global --add safe.directory PATH`; or repair the object store (`git fsck`; clone the "
        "repository again if objects are missing).",
    ),
    Rule(
        "GIT007",
        E,
        "identity of a published base changed",
        "A base's sha256, size and file name say which base file its weights were trained on (a State loads on "
        "any base of its size, so nothing else checks it): once committed they never change. Restore the "
        "recorded values in index.json (`git diff index.json` shows them); a different base file is a new base: "
        "`rwkv-registry add-base` with that file, and retrain the weights on it.",
    ),
)
finding = RULES.finding


def _split_z(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


# The argument lists of the git commands of a check against a baseline: one source for :func:`_check_repo`, which
# runs them, and :class:`GitAhead`, which runs the same ones ahead and is answered only for identical arguments.


def _name_status_args(*args: str) -> tuple[str, ...]:
    """``git diff --name-status`` of ``args`` (revisions, ``--cached``, ``--`` and the pathspec)."""
    return ("diff", "--name-status", "--no-renames", "-z", *args)


def _untracked_args(spec: str) -> tuple[str, ...]:
    """``git ls-files`` of the files under pathspec ``spec``, each with its tag (:func:`_listed`): the tracked ones
    (those marked assume-unchanged or skip-worktree, which git's diffs do not look at, are told by it) and the
    untracked, not ignored ones (``?``)."""
    return ("ls-files", "-v", "--cached", "--others", "--exclude-standard", "-z", "--", spec)


def _listed(out: str) -> tuple[list[str], dict[str, str]]:
    """The untracked paths of a :func:`_untracked_args` listing, and the tracked ones git was told not to look at in
    the working tree, with the flag that says so: a lower-case tag (``git update-index --assume-unchanged``) or
    ``S`` (``--skip-worktree``, as a sparse checkout sets it)."""
    untracked: list[str] = []
    blind: dict[str, str] = {}
    for item in _split_z(out):
        tag, _, path = item.partition(" ")
        if tag == "?":
            untracked.append(path)
        elif tag.islower():
            blind[path] = "assume-unchanged"
        elif tag == "S":
            blind[path] = "skip-worktree"
    return untracked, blind


def _object_id_args(spec: str) -> tuple[str, ...]:
    """``git rev-parse`` of the object ``spec`` (``REV:PATH``) names; fails, with no message, when none."""
    return ("rev-parse", "--verify", "-q", spec)


def _name_status(repo: Any, *args: str) -> dict[str, str]:
    parts = _split_z(repo.git.diff(*_name_status_args(*args)[1:]))
    return {parts[i + 1]: parts[i][0] for i in range(0, len(parts) - 1, 2)}


class _GitFailed(Exception):
    """A git command of :class:`_PlainRepo` that failed, worded as GitPython's ``GitCommandError``."""

    def __init__(self, command: list[str], status: int, stderr: str) -> None:
        super().__init__(command, status, stderr)
        self.stderr = f"\n  stderr: '{stderr}'" if stderr else ""
        self.text = f"Cmd('git') failed due to: exit code({status})\n  cmdline: {' '.join(command)}{self.stderr}"

    def __str__(self) -> str:
        return self.text


class _NoGit(Exception):
    """The git executable cannot be run."""


def _run_git(cwd: str, args: tuple[str, ...]) -> bytes:
    """stdout of ``git ARGS`` run in ``cwd`` as GitPython runs it (its environment, LANGUAGE=C and LC_ALL=C,
    no stdin); raises :class:`_GitFailed` on a non-zero exit and :class:`_NoGit` when git cannot be run."""
    command = ["git", *args]
    env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C"}
    try:
        p = subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    except FileNotFoundError as e:
        raise _NoGit(str(e)) from None
    if p.returncode != 0:
        err = p.stderr[:-1] if p.stderr.endswith(b"\n") else p.stderr
        raise _GitFailed(command, p.returncode, err.decode("utf-8", "surrogateescape"))
    return p.stdout


def _answer(cwd: str, args: tuple[str, ...], answers: dict[tuple[str, ...], bytes | Exception]) -> bytes:
    """``_run_git(cwd, args)``, or what :class:`GitAhead` got for these very arguments (once: taken out)."""
    if args in answers:
        got = answers.pop(args)
        if isinstance(got, Exception):
            raise got
        return got
    return _run_git(cwd, args)


class _PlainCommands:
    """``repo.git.<command>(*args)`` of GitPython for the few commands used here: stdout as text (UTF-8,
    surrogateescape), one trailing newline dropped."""

    def __init__(self, cwd: str, answers: dict[tuple[str, ...], bytes | Exception]) -> None:
        self.cwd = cwd
        self.answers = answers

    def _text(self, *args: str) -> str:
        out = _answer(self.cwd, args, self.answers)
        return (out[:-1] if out.endswith(b"\n") else out).decode("utf-8", "surrogateescape")

    def diff(self, *args: str) -> str:
        return self._text("diff", *args)

    def ls_files(self, *args: str) -> str:
        return self._text("ls-files", *args)

    def log(self, *args: str) -> str:
        return self._text("log", *args)

    def hash_object(self, *args: str) -> str:
        return self._text("hash-object", *args)

    def rev_parse(self, *args: str) -> str:
        return self._text("rev-parse", *args)

    def show(self, *args: str) -> str:
        return self._text("show", *args)


class _PlainRepo:
    """The work tree of an ordinary clone, found without GitPython (whose import is about a fifth of a warm
    ``validate`` at 1,000 entries): what ``git.Repo(root, search_parent_directories=True)`` finds, in the one
    case this recognises exactly; :func:`_plain_repo` returns None for every other case but no repository at all,
    which GitPython handles."""

    def __init__(self, top: str) -> None:
        self.working_tree_dir = top
        # outputs (or failures) of commands run ahead by GitAhead, by their arguments: each used once, in place
        # of running the command again
        self.answers: dict[tuple[str, ...], bytes | Exception] = {}
        self.git = _PlainCommands(top, self.answers)

    def _run(self, args: tuple[str, ...]) -> bytes:
        return _answer(self.working_tree_dir, args, self.answers)

    def head(self) -> str | None:
        """HEAD's commit (full sha), or None before the first commit."""
        try:
            out = self._run(_HEAD_COMMIT)
        except _GitFailed as e:
            if e.args[1] == 1 and not e.stderr:  # --verify -q: no such revision, said by the exit code alone
                _unborn_head(lambda: _run_git(self.working_tree_dir, _HEAD_REF).decode("ascii", "replace"), _GitFailed)
                return None
            raise
        return out.decode("ascii", "replace").strip()

    def show_bytes(self, spec: str) -> bytes | None:
        try:
            return self._run(("show", spec))
        except _GitFailed:
            return None

    def blob_id(self, spec: str) -> str | None:
        """The object id ``spec`` (``REV:PATH``) names, or None when there is none."""
        try:
            out = self._run(_object_id_args(spec))
        except _GitFailed:
            return None
        return out.decode("ascii", "replace").strip() or None


_HEAD_REF = _object_id_args("HEAD")  # the commit HEAD names, not read: fails only when unborn
_HEAD_COMMIT = _object_id_args("HEAD^{commit}")


class GitAhead:
    """The git commands of a check against HEAD (:func:`check_git` without ``--since``) in an ordinary clone,
    started in a background thread while validation reads the registry: the same commands, with the same
    arguments and environment, that :func:`_check_repo` runs, their outputs or failures kept on the
    :class:`_PlainRepo` and given to it in place of running them again (each once). The working-tree diff alone
    is about a fifth of a warm run's wall time at 4,000 entries, and the Python side waits for it otherwise.
    Started only when :func:`_plain_repo` finds an ordinary clone; a command it did not foresee, or one asked
    before it was run, is run then, as without it."""

    def __init__(self, root: Path, plain: _PlainRepo) -> None:
        self.root = root
        self.plain = plain
        self.answers: dict[tuple[str, ...], bytes | Exception] = {}  # filled by the thread, read once it is done
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._work, name="rwkv-git-ahead", daemon=True)

    @classmethod
    def start(cls, root: Path) -> GitAhead | None:
        plain = _plain_repo(root)
        if not isinstance(plain, _PlainRepo):
            return None
        ahead = cls(root, plain)
        ahead._thread.start()
        return ahead

    def _work(self) -> None:
        answers: dict[tuple[str, ...], bytes | Exception] = {}
        try:
            top = self.plain.working_tree_dir

            def run(args: tuple[str, ...]) -> bytes:
                try:
                    out = _run_git(top, args)
                except (_GitFailed, _NoGit) as e:
                    answers[args] = e
                    raise
                answers[args] = out
                return out

            head = run(_HEAD_COMMIT).decode("ascii", "replace").strip()
            prefix, spec = _scope(self.root, top)
            if not head:
                return
            for args in _baseline_commands(head, prefix, spec):
                run(args)
        except Exception:  # the check runs what is missing itself, and meets the same failure there
            pass
        finally:
            self.answers = answers
            self._done.set()

    def repo(self) -> _PlainRepo:
        """The clone's :class:`_PlainRepo`, holding the outputs, once the commands are done."""
        self._done.wait()
        self.plain.answers.update(self.answers)
        return self.plain


class _Unreadable(Exception):
    """A repository whose HEAD names a commit that git cannot read (a missing or corrupt object)."""


def _unborn_head(head_ref: Any, git_error: type[Exception] | tuple[type[Exception], ...]) -> None:
    """Returns when HEAD names no commit yet (a repository before its first commit); raises
    :class:`_Unreadable` when it names one that ``HEAD^{commit}`` could not read. ``head_ref`` runs
    ``git rev-parse --verify -q HEAD``, raising ``git_error`` when HEAD names nothing."""
    try:
        sha = head_ref().strip()
    except git_error:
        return
    raise _Unreadable(f"HEAD names commit {sha[:12]}, which the object store lacks or cannot read")


def git_blob_id(data: bytes, length: int = 40) -> str:
    """The id git gives a blob of ``data``: SHA-1 (``length`` 40) or, in a SHA-256 repository (64), SHA-256 of
    ``blob <size>\\0`` and the bytes."""
    h = hashlib.sha1(usedforsecurity=False) if length == 40 else hashlib.sha256()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_PYTHON_GIT_EXECUTABLE")
_BARE_FALSE = re.compile(r"^\s*bare\s*=\s*false\s*$", re.IGNORECASE | re.MULTILINE)


class _NoRepo:
    """What :func:`_plain_repo` finds when no directory from ``root`` up to ``/`` holds ``.git`` or looks like
    a git directory, and no GIT_DIR-like variable is set: GitPython would find no repository either."""


_NO_REPO = _NoRepo()


def _not_a_work_tree(root: Path) -> Finding:
    return finding(
        "GIT004",
        ".",
        f"{root} is not inside a git work tree (a copy or a pull?): published files were not checked "
        "for changes (GIT001–GIT003)",
    )


def _unreadable(why: str) -> Finding:
    return finding("GIT006", ".", f"git failed: {why.strip()[:200]}")


GIT_NOT_FOUND = "the git executable is not available (not on PATH)"
GITPYTHON_NOT_FOUND = "GitPython or the git executable is not available (GitPython not installed, or git not on PATH)"
_IN_WORK_TREE = ", but the registry is in a git work tree: its history was not read"
NO_GIT_IN_WORK_TREE = GIT_NOT_FOUND + _IN_WORK_TREE


def _git_missing(root: Path, what: str = GIT_NOT_FOUND) -> Finding:
    """git cannot be run (``what`` says which part is missing): GIT006 (an error) inside a git work tree, whose
    guarantee then cannot be given (the pre-commit hook, or CI, would pass having checked nothing); GIT004 (a
    warning) outside every work tree. One message shape for every route: ``what``, then where it matters."""
    if _work_tree_around(root):
        return finding("GIT006", ".", what + _IN_WORK_TREE)
    return finding("GIT004", ".", what)


def _work_tree_around(root: Path) -> bool:
    """Does a ``.git`` (directory or file) sit in ``root`` or above it, or does a GIT_DIR-like variable name one?"""
    if any(os.environ.get(v) for v in _GIT_ENV[:4]):
        return True
    try:
        cur = os.path.realpath(root)
    except (OSError, ValueError):
        return False
    while True:
        if os.path.lexists(os.path.join(cur, ".git")):
            return True
        parent = os.path.dirname(cur)
        if parent == cur:
            return False
        cur = parent


def _plain_repo(root: Path) -> _PlainRepo | _NoRepo | None:
    """The repository around ``root`` when it is an ordinary clone: the nearest ``.git`` above ``root``
    (resolved, as GitPython resolves a Path) is a directory with ``HEAD``, ``objects/`` and ``refs/``, no
    linked-worktree files, and a config that sets no ``core.worktree`` and no ``core.bare`` other than false;
    no directory on the way is itself a git directory, and no GIT_DIR-like variable is set. :data:`_NO_REPO`
    when nothing up to ``/`` can be a repository; None otherwise (GitPython then finds the repository, or says
    there is none)."""
    if any(v in os.environ for v in _GIT_ENV):
        return None
    try:
        cur = os.fspath(root.resolve())
    except (OSError, RuntimeError):
        return None
    while True:
        dotgit = os.path.join(cur, ".git")
        if os.path.lexists(dotgit):
            if not (
                os.path.isdir(dotgit)
                and not os.path.islink(dotgit)
                and os.path.isfile(os.path.join(dotgit, "HEAD"))
                and os.path.isdir(os.path.join(dotgit, "objects"))
                and os.path.isdir(os.path.join(dotgit, "refs"))
                and not os.path.lexists(os.path.join(dotgit, "commondir"))
                and not os.path.lexists(os.path.join(dotgit, "gitdir"))
            ):
                return None
            try:
                config = Path(dotgit, "config").read_text("utf-8", "replace")
            except OSError:
                return None
            if "worktree" in config.lower() or len(re.findall(r"bare", config, re.IGNORECASE)) != len(
                _BARE_FALSE.findall(config)
            ):
                return None
            return _PlainRepo(cur)
        if os.path.lexists(os.path.join(cur, "HEAD")):
            return None  # perhaps a git directory itself: GitPython's case
        parent, tail = os.path.split(cur)
        if not tail or parent == cur:
            return _NO_REPO  # nothing up to the file-system root: GIT004 without importing GitPython
        cur = parent


def check_git(
    root: Path,
    index: dict[str, Any] | None,
    since: str | None = None,
    *,
    index_sha256: str | None = None,
    index_blob_id: str | None = None,
    memo: Any = None,
    ahead: GitAhead | None = None,
) -> list[Finding]:
    """GIT001–GIT005 and GIT007 for the registry at ``root``. ``index_blob_id``, git's (SHA-1) blob id of the
    index.json bytes that ``index`` was parsed from (:func:`git_blob_id`), spares reading and parsing HEAD's
    index.json when it is HEAD's (the usual case); ``index_sha256``, their sha256, spares parsing it (read, then
    compared) in a SHA-256 repository.
    ``memo`` (a :class:`~rwkv_registry.engine.facts.FactsCache`) remembers the bases of index.json blobs by their git
    id, so that HEAD's, when index.json was just changed (the pre-commit hook after an ``add``), is not read and
    parsed either: those of the index.json validated now are recorded whenever the cache is written anyway.
    ``ahead``: the same commands started earlier for ``root`` (:class:`GitAhead`), whose outputs are used."""
    if since is None and ahead is not None and ahead.root == root:
        plain: _PlainRepo | _NoRepo | None = ahead.repo()
    else:
        plain = _plain_repo(root) if since is None else None
    if isinstance(plain, _NoRepo):
        return [_not_a_work_tree(root)]
    if plain is not None:
        try:
            head = plain.head()
        except _GitFailed as e:
            return [_unreadable(str(e.stderr or e))]
        except _Unreadable as e:
            return [_unreadable(str(e))]
        except _NoGit:  # an ordinary clone (a work tree), whose history git is needed to read: GIT006
            return [_git_missing(root)]
        if head is None:
            return []  # a repository without commits: nothing is published yet
        return _check_repo(root, index, None, plain, head, (_GitFailed,), (index_sha256, index_blob_id), memo)
    try:
        import git
    except ImportError:  # GitPython missing or git not installed
        return [_git_missing(root, GITPYTHON_NOT_FOUND)]
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        if since:
            raise UsageError(
                f"--since {since}: {root} is not inside a git repository",
                hint="Drop --since, or run it in a clone of the registry's repository.",
            ) from None
        return [_not_a_work_tree(root)]
    except git.GitCommandNotFound:
        return [_git_missing(root)]
    rev = since or "HEAD"
    try:
        commit = repo.commit(rev)
    except (git.BadName, ValueError, git.GitCommandError, OSError):  # OSError: git cat-file gone (a corrupt store)
        if not since:
            try:
                _unborn_head(lambda: repo.git.rev_parse(*_HEAD_REF[1:]), git.GitCommandError)
            except _Unreadable as e:
                return [_unreadable(str(e))]
            try:
                repo.git.rev_parse("--git-dir")
            except git.GitCommandError as e:  # .git that git itself cannot read (its objects unreadable)
                return [_unreadable(str(e.stderr or e))]
        if since:
            top = Path(repo.working_tree_dir or root).resolve()
            raise UsageError(
                f"--since {since}: no such revision in {top}",
                hint="Give a commit, tag or branch name known to this clone.",
            ) from None
        return []  # a repository without commits: nothing is published yet
    if since:
        try:  # HEAD~1 of a shallow clone names a parent whose object was never fetched
            repo.git.cat_file("-e", f"{commit.hexsha}^{{commit}}")
        except git.GitCommandError:
            top = Path(repo.working_tree_dir or root).resolve()
            raise UsageError(
                f"--since {since}: commit {commit.hexsha[:12]} is not in the clone at {top} (a shallow clone?), "
                "so nothing could be compared with it",
                hint="Fetch the history first: git fetch --unshallow (in CI, check out with the full history, "
                "e.g. actions/checkout's fetch-depth: 0).",
            ) from None
    return _check_repo(root, index, since, repo, commit.hexsha, (git.GitCommandError,), (None, None), None)


def _scope(root: Path, top: str | os.PathLike[str]) -> tuple[PurePosixPath, str]:
    """``root``'s path in the work tree at ``top`` (both resolved) and the pathspec that limits git's commands to
    it ("." at the top): the same for :func:`_check_repo` and :class:`GitAhead`, whose outputs are found by these
    very arguments."""
    prefix = PurePosixPath(root.resolve().relative_to(Path(top).resolve()).as_posix())
    return prefix, "." if str(prefix) == "." else str(prefix)


def _index_path(prefix: PurePosixPath) -> str:
    """index.json's path in the work tree, for ``REV:PATH``."""
    return "index.json" if str(prefix) == "." else f"{prefix}/index.json"


def _worktree_diff(baseline: str, spec: str) -> tuple[str, ...]:
    return (baseline, "--", spec)


def _staged_diff(baseline: str, spec: str) -> tuple[str, ...]:
    return ("--cached", baseline, "--", spec)


def _baseline_commands(baseline: str, prefix: PurePosixPath, spec: str) -> list[tuple[str, ...]]:
    """What :func:`_check_repo` (without ``--since``) runs against ``baseline`` after resolving it, in its order:
    the working-tree and index diffs, the untracked files, the id of the baseline's index.json (:func:`_index_at`).
    :class:`GitAhead` runs these very lists ahead; ``tests/test_git.py`` holds the two to them."""
    return [
        _name_status_args(*_worktree_diff(baseline, spec)),
        _name_status_args(*_staged_diff(baseline, spec)),
        _untracked_args(spec),
        _object_id_args(f"{baseline}:{_index_path(prefix)}"),
    ]


def _check_repo(
    root: Path,
    index: dict[str, Any] | None,
    since: str | None,
    repo: Any,
    baseline: str,
    git_errors: tuple[type[Exception], ...],
    index_ids: tuple[str | None, str | None],
    memo: Any,
) -> list[Finding]:
    """GIT001–GIT003 in ``repo`` (GitPython's or a :class:`_PlainRepo`) against commit ``baseline``."""
    try:
        prefix, spec = _scope(root, repo.working_tree_dir or root)
        # with --since, a change may be committed already (--no-verify): HEAD vs baseline says so
        committed = _name_status(repo, baseline, "HEAD", "--", spec) if since else {}
        changed = _name_status(repo, *_worktree_diff(baseline, spec))  # working tree vs baseline
        staged = _name_status(repo, *_staged_diff(baseline, spec))  # index vs baseline
        untracked, blind = _listed(repo.git.ls_files(*_untracked_args(spec)[1:]))
        baseline_index = _index_at(repo, baseline, prefix, index, *index_ids, memo)
    except git_errors as e:
        return [_unreadable(str(getattr(e, "stderr", "") or e))]

    def rel(p: str) -> str:
        return PurePosixPath(p).relative_to(prefix).as_posix() if str(prefix) != "." else p

    bases_now = bases_by_name(index)
    bases_then = bases_by_name(baseline_index)
    # closed at the baseline or now: unfreezing a base in the same change does not open it
    closed = closed_bases(bases_then, bases_now)
    empty = empty_under(root)
    known = set(bases_now) | set(bases_then)

    closed_by_commit: dict[str, dict[Any, str]] = {}

    def closed_at(sha: str) -> dict[Any, str]:
        """The bases closed at the baseline or at commit ``sha`` (by its index.json)."""
        if sha not in closed_by_commit:
            closed_by_commit[sha] = closed_bases(bases_then, bases_by_name(_index_at(repo, sha, prefix)))
        return closed_by_commit[sha]

    heads: dict[str, dict[str, str]] = {}

    def since_head(where: str) -> dict[str, str]:
        """What the index or the working tree changes from HEAD (asked only when a committed file was spared)."""
        if where not in heads:
            cached = ("--cached",) if where == "index" else ()
            heads[where] = _name_status(repo, *cached, "HEAD", "--", spec)
        return heads[where]

    out: list[Finding] = []
    for name, status in reopened(bases_then, bases_now):  # a frozen base reopened: the next commit could add files
        out.append(
            finding(
                "GIT005",
                "index.json",
                f"base {name} is frozen in index.json at {'HEAD' if since is None else since}, "
                f"but its status is now {status!r}",
            )
        )
    out += [
        finding(
            "GIT007",
            "index.json",
            f"base {name} was published at {at} with other values: {what}",
            base=name,
            sha256_then=bases_then[name].get("sha256"),
        )
        for name, what in base_identity_changes(bases_then, bases_now, index)
        for at in ["HEAD" if since is None else since]
    ]

    def goes(base: str | None) -> str:
        """``; new weights go under B`` naming the active base of ``base``'s family, when there is one."""
        active = active_successor(bases_now.values(), base) if base is not None else None
        return f"; new weights go under {active}" if active else ""

    seen: set[str] = set()
    spared: set[str] = set()
    for status_map, where in ((committed, "commit"), (staged, "index"), (changed, "working tree")):
        for path, status in sorted(status_map.items()):
            r = rel(path)
            code = change_code(r, status, known, closed, empty)
            if code is None or r in seen:
                continue  # no finding: no `git log` for where it was committed (one per path, on every changed file)
            base: str | None = r.split("/", 1)[0]  # a base's directory: the policy judges nothing outside one
            if where != "commit" and r in spared and path not in since_head(where):
                continue  # as committed: judged in the commit pass
            place, last = _committed_in(repo, path, baseline, since) if where == "commit" else (f"in the {where}", None)
            if code == "GIT003" and last is not None and base not in closed_at(last):
                spared.add(r)  # committed (last touched) while its base was still open, and closed only after
                continue
            seen.add(r)
            if code != "GIT003":
                what = "deleted" if code == "GIT002" else "modified"
                out.append(
                    finding(
                        code,
                        r,
                        f"{what} {place}, but it was published in {_published_in(repo, path, baseline)}",
                    )
                )
            else:
                out.append(finding("GIT003", r, f"new file under {closed[base]} base {base} ({place})" + goes(base)))
    for path, flag in sorted(blind.items()):  # edits git's diffs do not see: compared here, with the baseline's blob
        r = rel(path)
        base = r.split("/", 1)[0] if "/" in r else None
        if base not in known or r in seen:
            continue
        try:
            edited = _blind_edit(repo, root / r, path, baseline)
        except git_errors as e:
            return [_unreadable(str(getattr(e, "stderr", "") or e))]
        if edited:
            seen.add(r)
            out.append(
                finding(
                    "GIT001",
                    r,
                    f"modified in the working tree, which git was told not to look at ({flag}: clear it with "
                    f"`git update-index --no-{flag} {path}`), but it was published in "
                    f"{_published_in(repo, path, baseline)}",
                )
            )
    for path in untracked:
        r = rel(path)
        base = r.split("/", 1)[0]  # a base's directory when the policy says GIT003
        if r not in seen and change_code(r, "A", known, closed, empty) == "GIT003":
            out.append(finding("GIT003", r, f"new untracked file under {closed[base]} base {base}" + goes(base)))
    return out


def _blind_edit(repo: Any, file: Path, path: str, baseline: str) -> bool:
    """Whether ``file`` (``path`` in the work tree), which git's diffs do not look at, holds other bytes than its blob
    at ``baseline``: git's blob id of the file as ``git add`` would store it (``git hash-object``: its attributes'
    filters, end-of-line conversion), or of the Git LFS pointer to its bytes, is compared with the baseline's. A
    file not at the baseline (not published) or not in the working tree (a sparse checkout leaves it out; git
    commits no deletion of it either) is not an edit; anything else than a regular file in its place is."""
    try:
        published = repo.git.rev_parse("--verify", "-q", f"{baseline}:{path}").strip()
    except Exception:  # not at the baseline: git says so by its exit code alone
        return False
    if not published or not os.path.lexists(file):
        return False
    if not file.is_file() or file.is_symlink():
        return True
    if repo.git.hash_object("--", path).strip() == published:
        return False
    from rwkv_registry.core.fsio import sha256_file
    from rwkv_registry.formats.lfs import LFS_VERSION_LINE

    sha256, size = sha256_file(file)
    pointer = b"%s\noid sha256:%s\nsize %d\n" % (LFS_VERSION_LINE, sha256.encode(), size)
    return git_blob_id(pointer, len(published)) != published


def published_in(root: Path, rel: str) -> str | None:
    """Where ``rel`` (relative to the registry at ``root``) was published, if ``HEAD`` holds it:
    ``"commit abc1234 (date, “subject”)"``; None outside git, before the first commit, or when
    ``HEAD`` does not hold the file (so it may still change)."""
    try:
        import git
    except ImportError:
        return None
    try:
        repo, prefix = _repo_and_prefix(git, root)
        path = rel if prefix == "." else f"{prefix}/{rel}"
        repo.commit("HEAD").tree[path]  # KeyError: not in HEAD
        return _published_in(repo, path, "HEAD")
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError, ValueError, KeyError):
        return None
    except git.GitCommandNotFound:
        return None


def changed_since_head(root: Path, rels: list[str]) -> set[str] | None:
    """Which of ``rels`` (relative to the registry at ``root``) differ in the working tree from ``HEAD``;
    None outside git, before the first commit, or when git fails (HSH001 then cannot say which side changed)."""
    try:
        import git
    except ImportError:
        return None
    try:
        repo, prefix = _repo_and_prefix(git, root)
        full = {(r if prefix == "." else f"{prefix}/{r}"): r for r in rels}
        # the registry's whole directory, filtered here: thousands of paths on the command line could pass
        # the system's argument limit (E2BIG, an OSError GitPython does not turn into GitCommandError)
        out = repo.git.diff("--name-only", "--no-renames", "-z", "HEAD", "--", prefix)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError, git.GitCommandNotFound):
        return None
    except ValueError:
        return None
    return {full[p] for p in _split_z(out) if p in full}


def as_committed(root: Path, rels: list[str]) -> set[str] | None:
    """Which of ``rels`` (relative to the registry at ``root``) are in ``HEAD`` and unchanged since, staged or not;
    None outside git (told without running git or importing GitPython), before the first commit, or when git
    fails. Two plain git commands, run in ``root`` (paths relative to it)."""
    if not _work_tree_around(root):
        return None
    cwd = os.fspath(root)
    try:
        committed = _run_git(cwd, ("ls-tree", "-r", "--name-only", "-z", "HEAD", "--", "."))
        changed = _run_git(cwd, ("diff", "--name-only", "--no-renames", "--relative", "-z", "HEAD", "--", "."))
    except (_GitFailed, _NoGit, OSError):
        return None
    want = set(rels)

    def paths(out: bytes) -> set[str]:
        return {p for p in _split_z(out.decode("utf-8", "surrogateescape")) if p in want}

    return paths(committed) - paths(changed)


def _repo_and_prefix(git: Any, root: Path) -> tuple[Any, str]:
    """The repository around ``root`` and ``root``'s path inside its work tree ("." at the top); raises
    GitPython's errors outside a repository, ValueError when ``root`` is outside the work tree."""
    repo = git.Repo(root, search_parent_directories=True)
    return repo, str(_scope(root, repo.working_tree_dir or root)[0])


_LOG_FORMAT = "%h %as %s"  # what _commit_words reads


def _commit_words(line: str) -> str:
    """``commit abc1234 (date, “subject”)`` from a ``git log --format=%h %as %s`` line."""
    sha, _, rest = line.partition(" ")
    date, _, subject = rest.partition(" ")
    return f"commit {sha} ({date}, “{subject[:60]}”)"


def _published_in(repo: Any, path: str, rev: str) -> str:
    log = repo.git.log("--diff-filter=A", f"--format={_LOG_FORMAT}", rev, "--", path).strip().splitlines()
    return _commit_words(log[-1]) if log else "an earlier commit"


def _committed_in(repo: Any, path: str, baseline: str, since: str | None) -> tuple[str, str | None]:
    """``in commit abc1234 (date, “subject”) after --since REV``, and that commit's full sha: the newest commit
    since the baseline that touched ``path`` (None when git names none)."""
    log = repo.git.log("-1", f"--format=%H {_LOG_FORMAT}", f"{baseline}..HEAD", "--", path).strip()
    if not log:
        return f"in a commit after --since {since}", None
    sha, _, words = log.partition(" ")
    return f"in {_commit_words(words)}, after --since {since}", sha


def _index_at(
    repo: Any,
    rev: str,
    prefix: PurePosixPath,
    now: dict[str, Any] | None = None,
    now_sha256: str | None = None,
    now_blob_id: str | None = None,
    memo: Any = None,
) -> dict[str, Any] | None:
    """index.json at ``rev`` (None when absent or unparseable). With ``now`` and git's SHA-1 blob id of the bytes
    it was parsed from, a :class:`_PlainRepo` compares blob ids first: the same id gives ``now`` itself, unread.
    With ``memo``, another blob's bases come from it when known, as ``{"bases": …}`` (all that the callers read
    of a baseline), and those of ``now`` are recorded there when the memo is being written anyway (dirty). In a
    SHA-256 repository, the blob is read and compared by ``now_sha256``, as without a blob id."""
    path = _index_path(prefix)
    try:
        if isinstance(repo, _PlainRepo):
            # the blob's id first only when something can answer for it (no extra git command otherwise)
            oid = repo.blob_id(f"{rev}:{path}") if (now is not None and now_blob_id) or memo else ""
            if oid is None:
                return None
            if now is not None and now_blob_id and len(oid) == len(now_blob_id):
                if memo is not None and memo.dirty and memo.get_json(f"git-bases:{now_blob_id}") is None:
                    memo.put_json(f"git-bases:{now_blob_id}", {"bases": now.get("bases")})
                if now_blob_id == oid:
                    return now  # the same bytes as index.json now (the usual case): that value, not read again
            known = memo.get_json(f"git-bases:{oid}") if memo is not None and oid else None
            if isinstance(known, dict):
                return known
            raw = repo.show_bytes(f"{rev}:{path}")
            if raw is None:
                return None
            if now is not None and now_sha256 is not None and hashlib.sha256(raw).hexdigest() == now_sha256:
                return now  # a SHA-256 repository: the same bytes, compared once read
            data = json.loads((raw[:-1] if raw.endswith(b"\n") else raw).decode("utf-8", "surrogateescape"))
            if memo is not None and oid and isinstance(data, dict):
                memo.put_json(f"git-bases:{oid}", {"bases": data.get("bases")})
        else:
            data = json.loads(repo.git.show(f"{rev}:{path}"))
    except Exception:  # absent at the baseline or unparseable: no frozen bases to honour from it
        return None
    return data if isinstance(data, dict) else None


# --- the run's findings, folded with what git says ------------------------------------------------------------


def fold_history(root: Path, findings: list[Finding]) -> list[Finding]:
    """The findings of a run in a git clone, after :func:`check_git`'s, folded so that one cause gives one finding
    that names it: HSH001 says which side changed since HEAD (:func:`which_side_changed`), MIS013 names a base edit
    of index.json (:func:`blame_the_base_edit`), GIT001 takes in the hash findings of the file it names
    (:func:`fold_published_edits`), and TRN006 is left out for a train.json already committed
    (:func:`quiet_committed_notes`)."""
    findings = which_side_changed(root, findings)
    findings = blame_the_base_edit(findings)
    findings = fold_published_edits(findings)
    return quiet_committed_notes(root, findings)


def which_side_changed(root: Path, findings: list[Finding]) -> list[Finding]:
    """HSH001 in a git clone: tell whether the file or index.json differs from HEAD."""
    hsh = [f for f in findings if f.code == "HSH001"]
    changed = changed_since_head(root, [*{f.path for f in hsh}, "index.json"]) if hsh else None
    if changed is None:
        return findings
    out: list[Finding] = []
    for f in findings:
        if f.code == "HSH001":
            which = [p for p in (f.path, "index.json") if p in changed]
            note = (
                f"git: {' and '.join(which)} changed since HEAD"
                if which
                else "git: both are as committed in HEAD (the mismatch was committed)"
            )
            f = f.amended(f"{f.message} ({note})")
        out.append(f)
    return out


def blame_the_base_edit(findings: list[Finding]) -> list[Finding]:
    """MIS013 beside GIT007: when a published base's sha256 was edited in index.json and an adapter's
    fingerprint is the sha256 the base was published with, the edit (not the adapter) caused the mismatch;
    the finding says so and its hint points at GIT007 instead of telling to move the adapter."""
    from rwkv_registry.checks.miss import MIS013_BY_BASE_EDIT

    edited = {
        f.extra.get("base"): f.extra.get("sha256_then")
        for f in findings
        if f.code == "GIT007" and isinstance(f.extra.get("sha256_then"), str)
    }
    if not edited:
        return findings
    out: list[Finding] = []
    for f in findings:
        name = f.extra.get("base")
        if f.code == "MIS013" and name in edited and f.extra.get("base_fingerprint") == edited[name]:
            message = (
                f"{f.message}; it is the sha256 base {name} was published with: the edit of index.json (GIT007) "
                "caused this, not the adapter"
            )
            f = f.amended(message, hint=MIS013_BY_BASE_EDIT)
        out.append(f)
    return out


def fold_published_edits(findings: list[Finding]) -> list[Finding]:
    """One finding for one cause: a published file edited (GIT001) no longer has the sha256 (or size) that
    index.json and SHA256SUMS record, and those findings (HSH001, HSH002, HSH006) of that file are left out; the
    GIT001 message names them."""
    edited = {f.path for f in findings if f.code == "GIT001"}
    echoes = {"HSH001": "sha256", "HSH002": "size", "HSH006": "SHA256SUMS"}
    gone: dict[str, list[str]] = {}
    kept: list[Finding] = []
    for f in findings:
        if f.code in echoes and f.path in edited:
            gone.setdefault(f.path, []).append(f.code)
        else:
            kept.append(f)
    if not gone:
        return findings
    for i, f in enumerate(kept):
        if f.code == "GIT001" and f.path in gone:
            codes = sorted(set(gone[f.path]))
            recorded = " and ".join(echoes[c] for c in codes if c != "HSH006")
            what = " and ".join(
                [*([f"index.json's {recorded}"] if recorded else []), *(["SHA256SUMS"] if "HSH006" in codes else [])]
            )
            kept[i] = f.amended(f"{f.message}; so it no longer matches {what} ({', '.join(codes)})")
    return kept


def quiet_committed_notes(root: Path, findings: list[Finding]) -> list[Finding]:
    """TRN006 (no trainer commit recorded) only for a train.json not yet committed: a committed one is
    published and never changes, so the note could not be acted on and would repeat at every commit (the
    pre-commit hook). Outside git every train.json's note is reported."""
    notes = [f.path for f in findings if f.code == "TRN006"]
    committed = as_committed(root, notes) if notes else None
    if not committed:
        return findings
    return [f for f in findings if not (f.code == "TRN006" and f.path in committed)]
