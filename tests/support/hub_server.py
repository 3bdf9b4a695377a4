"""A Hugging Face Hub look-alike on 127.0.0.1, for tests without network.

It serves the endpoints huggingface_hub 2.4 calls for what rwkv-registry does, with the headers
and status codes of the real Hub, so the real client runs unmodified against it:

- ``GET /api/models/{repo}[/revision/{rev}]``: repo info with ``sha`` and ``siblings``;
- ``GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=&expand=``: files with ``oid`` (git blob id),
  ``size`` and, for LFS files, ``lfs: {oid: sha256, size, pointerSize}``; paginated by ``Link``;
- ``POST /api/models/{repo}/paths-info/{rev}`` (form ``paths``);
- ``HEAD|GET /{repo}/resolve/{rev}/{path}``: ``X-Repo-Commit``, ``ETag`` (git blob id); an LFS file
  answers 302 to the storage server with ``X-Linked-Size`` and ``X-Linked-Etag`` (its sha256);
- storage (a second port, like the Hub's CDN): ``HEAD|GET /blobs/{sha256}`` with single Range support
  (206, ``Content-Range``), ``PUT /upload/{sha256}`` (LFS basic transfer);
- ``POST /api/models/{repo}/preupload/{rev}``: ``uploadMode`` lfs/regular from .gitattributes or size;
- ``POST /{repo}.git/info/lfs/objects/batch`` and ``POST /lfs-verify/{repo}``: the LFS batch API;
- ``POST /api/models/{repo}/commit/{rev}``: NDJSON commit (header with ``parentCommit``, ``file``,
  ``lfsFile``, ``deletedFile``, ``deletedFolder``); a stale ``parentCommit`` gets 412;
- ``POST /api/validate-yaml``.

Errors carry ``X-Error-Code`` (RepoNotFound, RevisionNotFound, EntryNotFound) like the Hub's.
Test helpers: :meth:`FakeHub.create_repo`, :meth:`FakeHub.commit_files` (seed or change a repo
directly), :attr:`FakeHub.log` (every request: method, path, Range, Authorization, Accept-Encoding, body bytes sent),
:attr:`FakeHub.before_commit` (a hook run when a commit request arrives, to simulate a race) and
:attr:`FakeHub.rewrite` (a hook that may change any answer: a hostile Hub or proxy), :attr:`FakeHub.latency` and
:attr:`FakeHub.bandwidth` (a slow link: a pause before each answer, a cap on each answer's bytes per second, sent in
pieces of :attr:`FakeHub.chunk` bytes).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

LFS_THRESHOLD = 10 * 1024 * 1024  # the Hub stores bigger files in LFS whatever .gitattributes says
DEFAULT_GITATTRIBUTES = (
    b"*.pth filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
)


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class Blob:
    """A file of a commit: its content address and how git stores it."""

    sha256: str
    size: int
    lfs: bool

    @property
    def git_oid(self) -> str:
        return git_blob_id(lfs_pointer(self.sha256, self.size)) if self.lfs else self._regular_oid

    _regular_oid: str = ""


@dataclass
class Repo:
    commits: dict[str, dict[str, Blob]] = field(default_factory=dict)  # oid -> files
    refs: dict[str, str] = field(default_factory=dict)  # branch -> oid


def _lfs_patterns(gitattributes: bytes) -> list[str]:
    out = []
    for line in gitattributes.decode("utf-8", "replace").splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#") and "filter=lfs" in fields[1:]:
            out.append(fields[0])
    return out


class FakeHub:
    """The server pair (Hub API on one port, storage on another). Use as a context manager."""

    def __init__(self, page_size: int = 1000) -> None:
        self.page_size = page_size
        self.content: dict[str, bytes] = {}  # sha256 -> bytes (LFS store and git blobs alike)
        self.repos: dict[str, Repo] = {}
        self.log: list[dict[str, Any]] = []
        self.before_commit: Callable[[str], None] | None = None
        self.ignore_range = False  # behave like a broken proxy that answers 200 with the whole file
        # a slow link (bench/pull_bench.py): seconds before each answer, and bytes per second of each answer's body
        # (a per-connection cap, as a CDN or a congested route gives); 0: none
        self.latency = 0.0
        self.bandwidth = 0
        self.chunk = 64 * 1024  # with a bandwidth cap, the body is sent in pieces of this many bytes
        # a hostile Hub: rewrite(server, method, path, status, body, headers) -> (status, body, headers),
        # called on every answer before it is sent (headers include Content-Length when it is to be kept)
        self.rewrite: (
            Callable[[str, str, str, int, bytes, dict[str, str]], tuple[int, bytes, dict[str, str]]] | None
        ) = None
        self.lock = threading.RLock()
        self._counter = 0
        self.api = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, "api"))
        self.cdn = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self, "cdn"))
        self.api.hub = self.cdn.hub = self  # type: ignore[attr-defined]
        self.api.handle_error = self.cdn.handle_error = lambda request, address: None  # clients may hang up
        self.api.daemon_threads = self.cdn.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.api.server_address[1]}"
        self.storage = f"http://127.0.0.1:{self.cdn.server_address[1]}"
        self._threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (self.api, self.cdn)]

    def __enter__(self) -> FakeHub:
        for t in self._threads:
            t.start()
        return self

    @contextmanager
    def rewriting(self, hook: Callable[..., tuple[int, bytes, dict[str, str]]]) -> Iterator[None]:
        """Answer through ``hook`` (see :attr:`rewrite`) inside the ``with`` block only."""
        self.rewrite = hook
        try:
            yield
        finally:
            self.rewrite = None

    def __exit__(self, *exc: object) -> None:
        for s in (self.api, self.cdn):
            s.shutdown()
            s.server_close()

    # --- state helpers (tests call these directly) ----------------------------------------------------
    def create_repo(self, repo_id: str, files: dict[str, bytes] | None = None) -> str:
        """A repository with a main branch holding the Hub's default .gitattributes (and ``files``)."""
        with self.lock:
            self.repos[repo_id] = Repo()
            return self.commit_files(repo_id, {".gitattributes": DEFAULT_GITATTRIBUTES, **(files or {})}, base=None)

    def commit_files(
        self, repo_id: str, files: dict[str, bytes | None], *, branch: str = "main", base: str | None = "head"
    ) -> str:
        """Commit ``files`` (None deletes) on ``branch`` directly; returns the new commit id."""
        with self.lock:
            repo = self.repos[repo_id]
            parent = repo.refs.get(branch) if base == "head" else base
            tree = dict(repo.commits.get(parent, {})) if parent else {}
            for path, data in files.items():
                if data is None:
                    tree.pop(path, None)
                else:
                    tree[path] = self.store(path, data, tree)
            return self._new_commit(repo, branch, tree)

    def store(self, path: str, data: bytes, tree: dict[str, Blob]) -> Blob:
        sha = hashlib.sha256(data).hexdigest()
        self.content[sha] = data
        lfs = self.is_lfs(path, len(data), tree)
        return Blob(sha, len(data), lfs, "" if lfs else git_blob_id(data))

    def is_lfs(self, path: str, size: int, tree: dict[str, Blob]) -> bool:
        attrs = tree.get(".gitattributes")
        patterns = _lfs_patterns(self.content[attrs.sha256]) if attrs else []
        name = path.rsplit("/", 1)[-1]
        return size >= LFS_THRESHOLD or any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, p) for p in patterns)

    def _new_commit(self, repo: Repo, branch: str, tree: dict[str, Blob]) -> str:
        self._counter += 1
        oid = hashlib.sha1(f"{self._counter}:{sorted((p, b.sha256) for p, b in tree.items())}".encode()).hexdigest()
        repo.commits[oid] = tree
        repo.refs[branch] = oid
        return oid

    def head(self, repo_id: str, branch: str = "main") -> str:
        return self.repos[repo_id].refs[branch]

    def files(self, repo_id: str, rev: str = "main") -> dict[str, bytes]:
        """The content of every file at ``rev``."""
        repo = self.repos[repo_id]
        tree = repo.commits[repo.refs.get(rev, rev)]
        return {p: self.content[b.sha256] for p, b in tree.items()}

    def set_lfs_sha256(self, repo_id: str, path: str, sha256: str) -> None:
        """Make the Hub's metadata of ``path`` lie (same bytes served, another sha256 listed)."""
        with self.lock:
            repo = self.repos[repo_id]
            tree = dict(repo.commits[repo.refs["main"]])
            old = tree[path]
            self.content[sha256] = self.content[old.sha256]
            tree[path] = Blob(sha256, old.size, old.lfs, old._regular_oid)
            self._new_commit(repo, "main", tree)

    def bytes_sent(self, server: str | None = None) -> int:
        return sum(e["sent"] for e in self.log if server is None or e["server"] == server)


# --- the HTTP side ------------------------------------------------------------------------------------


class _Reply(Exception):
    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {}


def _error(status: int, code: str, message: str) -> _Reply:
    return _Reply(status, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message})


def _handler(hub: FakeHub, server: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
            if isinstance(body, bytes):
                data = body
            elif body is None:
                data = b""
            else:
                data = json.dumps(body).encode()
                headers = {"Content-Type": "application/json", **(headers or {})}
            headers = dict(headers or {})
            if "Content-Length" not in headers:
                headers["Content-Length"] = str(len(data))
            if hub.rewrite is not None:
                status, data, headers = hub.rewrite(
                    server, self.command, urlsplit(self.path).path, status, data, headers
                )
            if hub.latency:
                time.sleep(hub.latency)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            # logged before the body: a client that stops reading (a full disk, Ctrl-C) and hangs up makes the write
            # fail, and a test counting requests must see this one (before, it was logged after the body, or never)
            entry = {
                "server": server,
                "method": self.command,
                "path": urlsplit(self.path).path,
                "range": self.headers.get("Range"),
                "authorization": self.headers.get("Authorization"),
                "accept_encoding": self.headers.get("Accept-Encoding"),
                "status": status,
                "sent": 0,  # body bytes handed to the connection so far
            }
            with hub.lock:
                hub.log.append(entry)
            if self.command != "HEAD" and data:
                step = hub.chunk if hub.bandwidth else len(data)
                for at in range(0, len(data), step):
                    self.wfile.write(data[at : at + step])
                    entry["sent"] += len(data[at : at + step])
                    if hub.bandwidth:
                        time.sleep(len(data[at : at + step]) / hub.bandwidth)
            if int(headers.get("Content-Length", len(data))) > entry["sent"] and self.command != "HEAD":
                self.close_connection = True  # a truncated answer: hang up before the promised length

        def _dispatch(self) -> None:
            try:
                body = self._body() if self.command in ("POST", "PUT") else b""
                route = (_api_route if server == "api" else _cdn_route)(hub, self, body)
                self._send(200, route)
            except _Reply as r:
                self._send(r.status, r.body, r.headers)

        do_GET = do_HEAD = do_POST = do_PUT = _dispatch

    return Handler


def _repo(hub: FakeHub, repo_id: str) -> Repo:
    repo = hub.repos.get(repo_id)
    if repo is None:
        raise _error(404, "RepoNotFound", "Repository not found")
    return repo


def _commit(hub: FakeHub, repo: Repo, rev: str) -> tuple[str, dict[str, Blob]]:
    oid = repo.refs.get(rev)
    if oid is None:
        matches = [c for c in repo.commits if c.startswith(rev)] if len(rev) >= 7 else []
        if len(matches) != 1:
            raise _error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        oid = matches[0]
    return oid, repo.commits[oid]


def _tree_item(path: str, blob: Blob) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "file", "oid": blob.git_oid, "size": blob.size, "path": path}
    if blob.lfs:
        item["lfs"] = {"oid": blob.sha256, "size": blob.size, "pointerSize": len(lfs_pointer(blob.sha256, blob.size))}
    return item


def _listing(tree: dict[str, Blob], prefix: str, recursive: bool) -> list[dict[str, Any]]:
    dirs: set[str] = set()
    items = []
    base = prefix.rstrip("/") + "/" if prefix else ""
    if prefix and prefix not in tree and not any(p.startswith(base) for p in tree):
        raise _error(404, "EntryNotFound", f"{prefix} does not exist")
    for path in sorted(tree):
        if not path.startswith(base):
            continue
        rest = path[len(base) :]
        parts = rest.split("/")
        for i in range(1, len(parts)):
            if recursive or i == 1:
                dirs.add(base + "/".join(parts[:i]))
        if recursive or len(parts) == 1:
            items.append(_tree_item(path, tree[path]))
    folders = [{"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "path": d} for d in sorted(dirs)]
    return folders + items


_API = re.compile(r"^/api/models/([^/]+/[^/]+)(?:/(revision|tree|paths-info|preupload|commit)/([^/]+)(/.*)?)?$")


def _api_route(hub: FakeHub, h: BaseHTTPRequestHandler, body: bytes) -> Any:
    url = urlsplit(h.path)
    query = parse_qs(url.query)
    if url.path == "/api/validate-yaml" and h.command == "POST":
        return {"errors": [], "warnings": []}
    m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", url.path)
    if m and h.command in ("GET", "HEAD"):
        return _resolve(hub, h, unquote(m.group(1)), unquote(m.group(2)), unquote(m.group(3)))
    m = re.match(r"^/([^/]+/[^/]+)\.git/info/lfs/objects/batch$", url.path)
    if m and h.command == "POST":
        return _lfs_batch(hub, unquote(m.group(1)), json.loads(body))
    m = re.match(r"^/lfs-verify/([^/]+/[^/]+)$", url.path)
    if m and h.command == "POST":
        doc = json.loads(body)
        if doc.get("oid") not in hub.content or len(hub.content[doc["oid"]]) != doc.get("size"):
            raise _Reply(404, {"error": "object not uploaded"})
        return {"ok": True}
    m = _API.match(url.path)
    if not m:
        raise _Reply(404, {"error": f"no route {h.command} {url.path}"})
    repo_id, kind, rev, rest = unquote(m.group(1)), m.group(2), unquote(m.group(3) or "main"), m.group(4) or ""
    with hub.lock:
        repo = _repo(hub, repo_id)
        if kind in (None, "revision") and h.command == "GET":
            oid, tree = _commit(hub, repo, rev)
            return {
                "id": repo_id,
                "modelId": repo_id,
                "sha": oid,
                "private": False,
                "siblings": [{"rfilename": p} for p in sorted(tree)],
            }
        if kind == "tree" and h.command == "GET":
            _, tree = _commit(hub, repo, rev)
            recursive = query.get("recursive", ["false"])[0].lower() == "true"
            items = _listing(tree, unquote(rest.lstrip("/")), recursive)
            start = int(query.get("cursor", ["0"])[0])
            page = items[start : start + hub.page_size]
            headers = {}
            if start + hub.page_size < len(items):
                nxt = f"{hub.endpoint}{url.path}?recursive={str(recursive).lower()}&cursor={start + hub.page_size}"
                headers["Link"] = f'<{nxt}>; rel="next"'
            raise _Reply(200, page, headers)
        if kind == "paths-info" and h.command == "POST":
            _, tree = _commit(hub, repo, rev)
            paths = parse_qs(body.decode())["paths"]
            out = []
            for p in paths:
                if p in tree:
                    out.append(_tree_item(p, tree[p]))
                elif any(q.startswith(p + "/") for q in tree):
                    out.append({"type": "directory", "oid": hashlib.sha1(p.encode()).hexdigest(), "path": p})
            return out
        if kind == "preupload" and h.command == "POST":
            _, tree = _commit(hub, repo, rev)
            files = []
            for f in json.loads(body)["files"]:
                blob = tree.get(f["path"])
                lfs = hub.is_lfs(f["path"], f["size"], tree)
                remote_oid = None if blob is None else (blob.sha256 if blob.lfs else blob.git_oid)
                files.append(
                    {
                        "path": f["path"],
                        "uploadMode": "lfs" if lfs else "regular",
                        "shouldIgnore": False,
                        "oid": remote_oid,
                    }
                )
            return {"files": files, "commitOid": repo.refs.get(rev)}
    if kind == "commit" and h.command == "POST":
        if hub.before_commit is not None:
            hub.before_commit(repo_id)
        return _apply_commit(hub, repo_id, rev, body)
    raise _Reply(405, {"error": f"{h.command} not allowed on {url.path}"})


def _apply_commit(hub: FakeHub, repo_id: str, branch: str, body: bytes) -> Any:
    lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
    with hub.lock:
        repo = _repo(hub, repo_id)
        if branch not in repo.refs:
            raise _error(404, "RevisionNotFound", f"Invalid rev id: {branch}")
        head = repo.refs[branch]
        header = next((x["value"] for x in lines if x["key"] == "header"), None)
        if header is None or not header.get("summary"):
            raise _Reply(400, {"error": "commit header with a summary is required"})
        parent = header.get("parentCommit")
        if parent is not None and not head.startswith(parent):
            raise _Reply(412, {"error": "A commit has happened since. Please refresh and try again."})
        tree = dict(repo.commits[head])
        for op in lines:
            key, value = op["key"], op["value"]
            if key == "file":
                data = base64.b64decode(value["content"])
                tree[value["path"]] = hub.store(value["path"], data, tree)
            elif key == "lfsFile":
                data = hub.content.get(value["oid"])
                if data is None or len(data) != value.get("size", len(data)):
                    raise _Reply(422, {"error": f"LFS object {value['oid']} was not uploaded"})
                tree[value["path"]] = Blob(value["oid"], len(data), True, "")
            elif key == "deletedFile":
                if value["path"] not in tree:
                    raise _error(404, "EntryNotFound", "A file with this name doesn't exist")
                del tree[value["path"]]
            elif key == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                for p in [p for p in tree if p.startswith(prefix)]:
                    del tree[p]
            elif key != "header":
                raise _Reply(400, {"error": f"unknown operation {key}"})
        oid = hub._new_commit(repo, branch, tree)
    return {"success": True, "commitOid": oid, "commitUrl": f"{hub.endpoint}/{repo_id}/commit/{oid}", "hookOutput": ""}


def _resolve(hub: FakeHub, h: BaseHTTPRequestHandler, repo_id: str, rev: str, path: str) -> Any:
    with hub.lock:
        repo = _repo(hub, repo_id)
        oid, tree = _commit(hub, repo, rev)
        blob = tree.get(path)
        if blob is None:
            raise _Reply(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": oid})
    headers = {"X-Repo-Commit": oid, "ETag": f'"{blob.git_oid}"', "Accept-Ranges": "bytes"}
    if blob.lfs:
        headers.update(
            {
                "Location": f"{hub.storage}/blobs/{blob.sha256}",
                "X-Linked-Size": str(blob.size),
                "X-Linked-Etag": f'"{blob.sha256}"',
            }
        )
        raise _Reply(302, None, headers)
    return _ranged(h, hub.content[blob.sha256], headers)


def _ranged(h: BaseHTTPRequestHandler, data: bytes, headers: dict[str, str]) -> Any:
    spec = None if h.server.hub.ignore_range else h.headers.get("Range")  # type: ignore[attr-defined]
    m = re.match(r"^bytes=(\d*)-(\d*)$", spec or "")
    if spec is None or m is None or (not m.group(1) and not m.group(2)):
        if h.command == "HEAD":
            raise _Reply(200, None, {**headers, "Content-Length": str(len(data))})
        raise _Reply(200, data, headers)
    size = len(data)
    if m.group(1):
        start, end = int(m.group(1)), min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
    else:
        start, end = max(0, size - int(m.group(2))), size - 1
    if start >= size or start > end:
        raise _Reply(416, None, {"Content-Range": f"bytes */{size}"})
    part = data[start : end + 1]
    headers = {**headers, "Content-Range": f"bytes {start}-{end}/{size}"}
    if h.command == "HEAD":
        raise _Reply(206, None, {**headers, "Content-Length": str(len(part))})
    raise _Reply(206, part, headers)


def _lfs_batch(hub: FakeHub, repo_id: str, doc: dict[str, Any]) -> Any:
    _repo(hub, repo_id)
    if doc.get("operation") != "upload" or "basic" not in doc.get("transfers", ["basic"]):
        raise _Reply(422, {"message": "only basic uploads"})
    objects = []
    for obj in doc["objects"]:
        item: dict[str, Any] = {"oid": obj["oid"], "size": obj["size"]}
        if obj["oid"] not in hub.content:
            item["actions"] = {
                "upload": {"href": f"{hub.storage}/upload/{obj['oid']}"},
                "verify": {"href": f"{hub.endpoint}/lfs-verify/{quote(repo_id, safe='/')}"},
            }
        objects.append(item)
    raise _Reply(200, {"transfer": "basic", "objects": objects}, {"Content-Type": "application/vnd.git-lfs+json"})


def _cdn_route(hub: FakeHub, h: BaseHTTPRequestHandler, body: bytes) -> Any:
    path = urlsplit(h.path).path
    m = re.match(r"^/blobs/([0-9a-f]{64})$", path)
    if m and h.command in ("GET", "HEAD"):
        data = hub.content.get(m.group(1))
        if data is None:
            raise _Reply(404, b"NoSuchKey")
        return _ranged(h, data, {"ETag": f'"{m.group(1)}"', "Accept-Ranges": "bytes"})
    m = re.match(r"^/upload/([0-9a-f]{64})$", path)
    if m and h.command == "PUT":
        if hashlib.sha256(body).hexdigest() != m.group(1):
            raise _Reply(400, b"BadDigest")
        with hub.lock:
            hub.content[m.group(1)] = body
        raise _Reply(200, b"", {"ETag": f'"{m.group(1)}"'})
    raise _Reply(404, b"no such storage route")


def load_registry(hub: FakeHub, repo_id: str, root: Path) -> str:
    """Create ``repo_id`` holding the registry at ``root`` (lock and transient files left out)."""
    files = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts and not p.name.startswith(".rwkv-registry")
    }
    return hub.create_repo(repo_id, files)


_counter = iter(range(10**6))


def new_repo(hub: FakeHub, root: Path | None = None) -> str:
    """A new repository on ``hub`` (a fresh name each call), holding the registry at ``root`` if one is given."""
    repo_id = f"tester/reg-{next(_counter)}"
    if root is None:
        hub.create_repo(repo_id)
    else:
        load_registry(hub, repo_id, root)
    return repo_id


def plain_git_repo(hub: FakeHub, root: Path) -> str:
    """A Hub repository holding the registry at ``root`` with its weights in plain git, not LFS (committed before
    its .gitattributes routed them to LFS: a push by git without git-lfs installed)."""
    repo_id = new_repo(hub)
    hub.commit_files(repo_id, {".gitattributes": b"*.md text\n"})
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    files = {r: b for r, b in files.items() if not r.startswith(".rwkv-registry")}
    hub.commit_files(repo_id, {r: b for r, b in files.items() if r != ".gitattributes"})
    hub.commit_files(repo_id, {".gitattributes": files[".gitattributes"]})
    return repo_id
