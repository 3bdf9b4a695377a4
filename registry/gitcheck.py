"""Immutability of published files, from git history (GitPython).

Baseline: ``HEAD``, or ``--since REV``. A file that exists at the baseline under a base directory
must not be modified or deleted in the working tree or the index (GIT001, GIT002; the message
names the commit that published it); a base that is ``frozen`` at the baseline or now, or that a
newer base of its family supersedes, gets no new files (GIT003; the empty ``.gitkeep`` placeholders of
its method folders excepted; with ``--since``, a file whose last commit in the range was made while its base
was open, by that commit's index.json, and that the index and working tree leave as committed, is not new
under a closed base). Outside a git work tree (a plain copy, a
``pull``) they cannot be checked, and GIT004 (a warning) says so; the Hub validator (``hf://``) skips them by
design, the Hub keeping its own history.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import UsageError
from .lineage import superseded
from .rules import Finding, finding


def _split_z(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


def _name_status(repo: Any, *args: str) -> dict[str, str]:
    parts = _split_z(repo.git.diff("--name-status", "--no-renames", "-z", *args))
    return {parts[i + 1]: parts[i][0] for i in range(0, len(parts) - 1, 2)}


def check_git(root: Path, index: dict[str, Any] | None, since: str | None = None) -> list[Finding]:
    """GIT001–GIT004 for the registry at ``root``."""
    try:
        import git
    except ImportError:  # GitPython missing or git not installed
        return [finding("GIT004", ".", "GitPython or the git executable is not available")]
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        if since:
            raise UsageError(
                f"--since {since}: {root} is not inside a git repository",
                hint="Drop --since, or run it in a clone of the registry's repository.",
            ) from None
        return [
            finding(
                "GIT004",
                ".",
                f"{root} is not inside a git work tree (a copy or a pull?): published files were not checked "
                "for changes (GIT001–GIT003)",
            )
        ]
    except git.GitCommandNotFound:
        return [finding("GIT004", ".", "the git executable is not available")]
    try:
        top = Path(repo.working_tree_dir or root).resolve()
        prefix = PurePosixPath(root.resolve().relative_to(top).as_posix())
        rev = since or "HEAD"
        try:
            commit = repo.commit(rev)
        except (git.BadName, ValueError, git.GitCommandError):
            if since:
                raise UsageError(
                    f"--since {since}: no such revision in {top}",
                    hint="Give a commit, tag or branch name known to this clone.",
                ) from None
            return []  # a repository without commits: nothing is published yet
        spec = "." if str(prefix) == "." else str(prefix)
        # with --since, a change may be committed already (--no-verify): HEAD vs baseline says so
        committed = _name_status(repo, commit.hexsha, "HEAD", "--", spec) if since else {}
        changed = _name_status(repo, commit.hexsha, "--", spec)  # working tree vs baseline
        staged = _name_status(repo, "--cached", commit.hexsha, "--", spec)  # index vs baseline
        untracked = _split_z(repo.git.ls_files("--others", "--exclude-standard", "-z", "--", spec))
        baseline_index = _index_at(repo, commit.hexsha, prefix)
    except git.GitCommandError as e:
        return [finding("GIT004", ".", f"git failed: {str(e.stderr or e).strip()[:200]}")]

    def rel(p: str) -> str:
        return PurePosixPath(p).relative_to(prefix).as_posix() if str(prefix) != "." else p

    bases_now = _bases(index)
    bases_then = _bases(baseline_index)
    # closed at the baseline or now: unfreezing a base in the same change does not open it
    closed = _closed(bases_then, bases_now)
    known = set(bases_now) | set(bases_then)

    closed_by_commit: dict[str, dict[Any, str]] = {}

    def closed_at(sha: str) -> dict[Any, str]:
        """The bases closed at the baseline or at commit ``sha`` (by its index.json)."""
        if sha not in closed_by_commit:
            closed_by_commit[sha] = _closed(bases_then, _bases(_index_at(repo, sha, prefix)))
        return closed_by_commit[sha]

    heads: dict[str, dict[str, str]] = {}

    def since_head(where: str) -> dict[str, str]:
        """What the index or the working tree changes from HEAD (asked only when a committed file was spared)."""
        if where not in heads:
            cached = ("--cached",) if where == "index" else ()
            heads[where] = _name_status(repo, *cached, "HEAD", "--", spec)
        return heads[where]

    out: list[Finding] = []
    seen: set[str] = set()
    spared: set[str] = set()
    for status_map, where in ((committed, "commit"), (staged, "index"), (changed, "working tree")):
        for path, status in sorted(status_map.items()):
            r = rel(path)
            base = r.split("/", 1)[0] if "/" in r else None
            if base not in known or r in seen:
                continue
            new_in_closed = status == "A" and base in closed and not _placeholder(root, r)
            if status not in ("M", "T", "D") and not new_in_closed:
                continue  # no finding: no `git log` for where it was committed (one per path, on every changed file)
            if where != "commit" and r in spared and path not in since_head(where):
                continue  # as committed: judged in the commit pass
            place, last = (
                _committed_in(repo, path, commit.hexsha, since) if where == "commit" else (f"in the {where}", None)
            )
            if new_in_closed and last is not None and base not in closed_at(last):
                spared.add(r)  # committed (last touched) while its base was still open, and closed only after
                continue
            if status in ("M", "T", "D"):
                seen.add(r)
                code = "GIT002" if status == "D" else "GIT001"
                what = "deleted" if status == "D" else "modified"
                out.append(
                    finding(
                        code,
                        r,
                        f"{what} {place}, but it was published in {_published_in(repo, path, commit.hexsha)}",
                    )
                )
            else:
                seen.add(r)
                out.append(finding("GIT003", r, f"new file under {closed[base]} base {base} ({place})"))
    for path in untracked:
        r = rel(path)
        base = r.split("/", 1)[0] if "/" in r else None
        if base in closed and r not in seen and not _placeholder(root, r):
            out.append(finding("GIT003", r, f"new untracked file under {closed[base]} base {base}"))
    return out


def _placeholder(root: Path, rel: str) -> bool:
    """``<base>/state/.gitkeep`` or ``<base>/miss/.gitkeep``, empty: what add-base makes so that git keeps
    the method folders (LAY003). It carries nothing, so GIT003 lets it be new under a closed base: a base
    older than one of its family, or two bases added before a commit, can be registered."""
    parts = rel.split("/")
    if len(parts) != 3 or parts[1] not in ("state", "miss") or parts[2] != ".gitkeep":
        return False
    try:
        return (root / rel).stat().st_size == 0
    except OSError:
        return False


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


def _repo_and_prefix(git: Any, root: Path) -> tuple[Any, str]:
    """The repository around ``root`` and ``root``'s path inside its work tree ("." at the top); raises
    GitPython's errors outside a repository, ValueError when ``root`` is outside the work tree."""
    repo = git.Repo(root, search_parent_directories=True)
    top = Path(repo.working_tree_dir or root).resolve()
    return repo, root.resolve().relative_to(top).as_posix()


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


def _bases(index: dict[str, Any] | None) -> dict[Any, dict[str, Any]]:
    """An index.json's bases by name (none when it has no list of them)."""
    bases = index.get("bases") if isinstance(index, dict) else None
    return {b.get("name"): b for b in bases if isinstance(b, dict)} if isinstance(bases, list) else {}


def _closed(*indexes: dict[Any, dict[str, Any]]) -> dict[Any, str]:
    """The bases closed in any of ``indexes`` (bases by name, as :func:`_bases` gives them), and how:
    ``frozen`` by status, else ``superseded`` when a newer base of their family exists there (IDX007)."""
    closed = {n: "frozen" for bases in indexes for n, b in bases.items() if b.get("status") == "frozen"}
    for bases in indexes:
        for n in superseded(bases.values()):
            closed.setdefault(n, "superseded")
    return closed


def _index_at(repo: Any, rev: str, prefix: PurePosixPath) -> dict[str, Any] | None:
    path = "index.json" if str(prefix) == "." else f"{prefix}/index.json"
    try:
        data = json.loads(repo.git.show(f"{rev}:{path}"))
    except Exception:  # absent at the baseline or unparseable: no frozen bases to honour from it
        return None
    return data if isinstance(data, dict) else None
