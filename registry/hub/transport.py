"""HTTP reads of Hub files, counted byte by byte: whole small files and Range reads of large ones.

Everything goes through huggingface_hub's own HTTP client (:func:`huggingface_hub.utils.get_session`,
:func:`~huggingface_hub.utils.http_stream_backoff`, :func:`~huggingface_hub.get_hf_file_metadata`), so
proxies, tokens, offline mode and ``HF_ENDPOINT`` behave as they do for ``hf_hub_download``.

A :class:`RemoteFile` is a :class:`rwkv_registry.formats.ckpt.ByteSource` over one file: ``open_checkpoint``
reads its zip records and pickle through it without downloading the weights. Before the reader
runs, :meth:`RemoteFile.prefetch_zip_metadata` fetches, in a few parallel Range requests, exactly
what the reader will ask for (end records, central directory, every local header, the small
entries such as ``data.pkl`` and ``miss.json``), so a 14 GB base costs a few hundred KB and a
handful of round trips.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from rwkv_registry.core.errors import RegistryIOError

__all__ = [
    "DownloadCut",
    "Fetcher",
    "LocalWriteError",
    "RangeIgnored",
    "RangeNotSatisfiable",
    "RemoteFile",
    "RemoteStatusError",
    "WrongAnswerError",
]

TAIL_BYTES = 8 * 1024  # first read of a zip: end records and usually the central directory
GAP_BYTES = 4 * 1024  # ranges closer than this are fetched in one request
LOCAL_EXTRA_SLACK = 256  # local header extra field allowance (torch pads data to 64 bytes)
MAX_PLANNED_ENTRY = 64 * 1024 * 1024  # small entries read whole (the reader's own bounds apply too)
# a file whose storage ignores Range (answers 200 with the whole body) is read whole when it is no larger than this
# and its sha256 is listed (the bytes are then checked); a larger one is refused, never downloaded by accident
WHOLE_READ_BYTES = 8 * 1024 * 1024
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
_STORAGE = re.compile(r"^[^/]+/data/[A-Za-z0-9_]+$")


class RangeNotSatisfiable(RegistryIOError):
    """The server answered 416 to a Range request continuing a partial file: it holds fewer bytes than that."""


class DownloadCut(RegistryIOError):
    """A download stopped before its end by the network (a cut connection, a transport error): the bytes received
    so far are good to continue from. ``written_from``: the offset they were written from, as
    :meth:`Fetcher.resume` returns it (0: the server answered with the whole file, from its first byte)."""

    def __init__(self, message: str, *, written_from: int, hint: str, path: str = "") -> None:
        super().__init__(message, hint=hint, path=path)
        self.written_from = written_from


_CUT_HINT = "The connection to the Hub (or its storage) dropped before the end of the file. Try again."
OTHER_BYTES_HINT = (
    "The server (the Hub's storage, a proxy, HF_ENDPOINT) does not answer with the file the Hub lists. Try again; if "
    "it persists, check HF_ENDPOINT and the proxy, or report it."
)


WRONG_ANSWER_HINT = (
    "The Hub's storage, or a proxy or mirror between here and it (HF_ENDPOINT, HTTPS_PROXY), does not answer HTTP "
    "Range requests as asked: this is no finding against the repository, and nothing was judged of this file. Try "
    "again; if it persists, check HF_ENDPOINT and the proxy, or report it to whoever runs the server."
)


class WrongAnswerError(RegistryIOError):
    """The Hub or its storage answered a read of ``url`` with other bytes than were asked (a ``200`` with the whole
    body to a Range request, a ``Content-Range`` or a length other than asked, a file size other than the tree
    listing's): a problem of the server or of a proxy, no finding against the repository. ``asked`` and ``got`` say
    what was asked and what came; ``url`` is shown without its query string (a storage URL's signature)."""

    def __init__(self, url: str, asked: str, got: str, *, hint: str) -> None:
        shown = public_url(url)
        super().__init__(f"{shown}: asked for {asked}, the server answered {got}", hint=hint, path=shown)
        self.url = shown
        self.asked = asked
        self.got = got


class RangeIgnored(WrongAnswerError):
    """A ``200`` with the whole file to a Range request for part of it (a server or proxy that ignores Range); raised
    before the body is read. :class:`RemoteFile` reads a small file whole instead (:data:`WHOLE_READ_BYTES`)."""


class RemoteStatusError(RegistryIOError):
    """The Hub or its storage answered an error status (after huggingface_hub's retries) to a read of ``url``: no
    finding against the repository (its files may be fine) but no verdict either. ``status``: the HTTP status."""

    def __init__(self, url: str, status: int | None, detail: str, *, hint: str) -> None:
        shown = public_url(url)
        code = f"HTTP {status}" if status is not None else "an error status"
        super().__init__(f"{shown}: the server answered {code} {detail}", hint=hint, path=shown)
        self.url = shown
        self.status = status


class LocalWriteError(RegistryIOError):
    """Writing a download to its local destination failed (a full disk, a read-only mount, a quota): an error of
    this machine, never of the Hub. ``errno``: the OSError's."""

    def __init__(self, dest: str, error: OSError, *, hint: str) -> None:
        text = error.strerror or str(error) or type(error).__name__
        super().__init__(f"cannot write the download to {dest}: {text}", hint=hint, path=dest)
        self.errno = error.errno


def write_hint(dest: str) -> str:
    """What to do when a download cannot be written to ``dest``."""
    return (
        f"Free space on the disk holding {dest} (or point TMPDIR at a disk with room) and run the command again; "
        "nothing was kept."
    )


def public_url(url: str) -> str:
    """``url`` without its query string and fragment (a storage URL's query holds its signature)."""
    parts = urlsplit(url)
    return parts._replace(query="", fragment="").geturl()


def status_hint(status: int | None) -> str:
    """What to do about an error status of the Hub or its storage."""
    if status in (401, 403):
        return (
            "The Hub or its storage refused access: check that the token (HF_TOKEN or `hf auth login`) can read this "
            "repository, accept a gated repository's terms on the Hub, and run again (a storage link expires)."
        )
    if status in (404, 410):
        return (
            "A file of the tree listing is not served: the commit may have been force-pushed away or its storage "
            "object lost. Check the revision (validate hf://OWNER/REPO@REVISION) and run again; if it persists, "
            "report it to the repository's owner."
        )
    if status == 429:
        return "The Hub is rate-limiting this client: wait a few minutes and run again (logging in raises the limit)."
    return "The Hub or its storage failed this request after its retries. Try again later."


def error_status(e: BaseException) -> int | None:
    response = getattr(e, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def error_reason(e: BaseException) -> str:
    """The reason phrase of an error answer (never its URL, whose query may hold a signature)."""
    response = getattr(e, "response", None)
    reason = getattr(response, "reason_phrase", None)
    return reason if isinstance(reason, str) and reason else type(e).__name__


def _sink_name(sink: BinaryIO) -> str:
    name = getattr(sink, "name", None)
    return name if isinstance(name, str) else "the download's destination"


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


class Fetcher:
    """Counts every body byte received from the Hub and its storage, across threads."""

    def __init__(self, endpoint: str, token: str | bool | None = None) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.token = token
        self.bytes_fetched = 0
        self.requests = 0
        self.whole_reads = 0  # files read whole because their storage ignored Range (RemoteFile)
        self._lock = threading.Lock()

    def _headers(self, url: str) -> dict[str, str]:
        """Hub headers (token included) for Hub URLs only, never for a storage/CDN host."""
        if _origin(url) != _origin(self.endpoint):
            return {}
        from huggingface_hub.utils import build_hf_headers

        return build_hf_headers(token=self.token)

    def _count(self, n: int) -> None:
        with self._lock:
            self.bytes_fetched += n

    def get(
        self,
        url: str,
        *,
        start: int | None = None,
        end: int | None = None,
        total: int | None = None,
        sink: BinaryIO | None = None,
        size: int | None = None,
    ) -> bytes:
        """The body of ``url`` (bytes ``start..end`` inclusive when given). Raises :class:`RegistryIOError`, and
        :class:`DownloadCut` (one request, not retried: the caller names the file) for a connection cut mid-body,
        saying how many bytes had arrived.

        With ``sink``, the body is written there as it arrives and ``b""`` is returned. ``size``: the
        length a whole (not ranged) body must have; a longer one is cut off as soon as it exceeds it.

        A ranged answer must be ``206`` with the matching ``Content-Range`` (and, when ``total`` is
        given, the expected file size); a server that ignores the Range header is refused before
        its body is read, so a 14 GB file is never downloaded by accident.
        """
        from huggingface_hub.errors import HfHubHTTPError
        from huggingface_hub.utils import hf_raise_for_status, http_stream_backoff

        headers = self._headers(url)
        ranged = start is not None
        if ranged:
            assert start is not None and end is not None and end >= start
            headers["Range"] = f"bytes={start}-{end}"
            headers["Accept-Encoding"] = "identity"
        with self._lock:
            self.requests += 1
        want = (end - start + 1) if ranged else size  # type: ignore[operator]
        try:
            with http_stream_backoff("GET", url, headers=headers) as response:
                if response.status_code >= 400:
                    response.read()
                    hf_raise_for_status(response)
                if ranged:
                    self._check_range(response, url, start, end, total)  # type: ignore[arg-type]
                chunks: list[bytes] = []
                got = 0
                try:
                    for chunk in response.iter_bytes():
                        got += len(chunk)
                        self._count(len(chunk))
                        if want is not None and got > want:
                            if ranged:  # cut off at once: a long answer is not read to its end
                                raise WrongAnswerError(
                                    url,
                                    f"bytes {start}-{end}",
                                    f"more than the {want} bytes asked for (cut off)",
                                    hint=WRONG_ANSWER_HINT,
                                )
                            raise RegistryIOError(
                                f"{url}: the server sent more than the {want} bytes listed",
                                hint=OTHER_BYTES_HINT,
                                path=url,
                            )
                        if sink is not None:
                            try:
                                sink.write(chunk)
                            except OSError as e:  # a full disk: an error of this machine, not of the Hub
                                raise LocalWriteError(_sink_name(sink), e, hint=write_hint(_sink_name(sink))) from e
                        else:
                            chunks.append(chunk)
                except (RegistryIOError, OSError):  # an OSError of sink (a full disk) is no cut connection
                    raise
                except Exception as e:  # a cut connection: raised here, not into http_stream_backoff's generator,
                    # which would send the whole request again and then fail with "generator didn't stop after
                    # throw()" (it cannot yield a second answer): see resume
                    of = f" of the {want} bytes" if want is not None else " bytes"
                    where = f" asked for at offset {start}" if ranged else ""
                    raise DownloadCut(
                        f"{url}: the connection was cut after {got}{of}{where} ({type(e).__name__}: {_first_line(e)})",
                        written_from=start or 0,
                        hint=_CUT_HINT,
                        path=url,
                    ) from e
        except RegistryIOError:
            raise
        except HfHubHTTPError as e:
            status = error_status(e)
            raise RemoteStatusError(url, status, error_reason(e), hint=status_hint(status)) from e
        except Exception as e:  # httpx2 transport errors, offline mode
            raise RegistryIOError(
                f"cannot fetch {url}: {type(e).__name__}: {e}",
                hint="Check the network, a proxy, or HF_ENDPOINT (HF_HUB_OFFLINE=1 forbids every request), and run "
                "again.",
                path=url,
            ) from e
        if want is not None and got != want:
            if ranged:
                raise WrongAnswerError(
                    url, f"bytes {start}-{end} ({want} bytes)", f"{got} bytes", hint=WRONG_ANSWER_HINT
                )
            raise RegistryIOError(f"{url}: expected {want} bytes, got {got}", hint=OTHER_BYTES_HINT, path=url)
        return b"".join(chunks)

    def resume(
        self, url: str, sink: BinaryIO, offset: int, size: int, progress: Callable[[int], None] | None = None
    ) -> int:
        """Write bytes ``offset`` to ``size - 1`` of ``url`` into ``sink`` (a file holding the first ``offset``
        bytes), with ONE request: ``Range: bytes=offset-`` when ``offset`` > 0. Returns the offset the body was
        written from: ``offset`` for a ``206`` whose ``Content-Range`` answers exactly that range, 0 for a ``200``
        (a server or proxy that ignores Range sends the whole file: ``sink`` is truncated and written from 0).

        Raises :class:`RangeNotSatisfiable` on a ``416`` (nothing written), :class:`RegistryIOError` on any other
        error status, a ``Content-Range`` of other bytes, a body longer than ``size`` (cut off as soon as it
        is) or shorter; what arrived before a cut connection or Ctrl-C stays written (a prefix of the file).
        An :class:`OSError` of ``sink`` (a full disk) propagates as it is. The token goes to Hub URLs only
        (:meth:`_headers`), never to a storage/CDN host. ``progress`` is called with the bytes of the file
        written so far, after each chunk.
        """
        from huggingface_hub.errors import HfHubHTTPError
        from huggingface_hub.utils import hf_raise_for_status, http_stream_backoff

        headers = self._headers(url)
        headers["Accept-Encoding"] = "identity"
        if offset:
            headers["Range"] = f"bytes={offset}-"
        with self._lock:
            self.requests += 1
        start = got = offset
        try:
            with http_stream_backoff("GET", url, headers=headers) as response:
                status = response.status_code
                if offset and status == 416:
                    response.read()
                    raise RangeNotSatisfiable(
                        f"HTTP 416 to a Range request from byte {offset} of {size}",
                        hint="The storage holds fewer bytes than were kept: they are not this file's. Fetch it whole.",
                        path=url,
                    )
                if status >= 400:
                    response.read()
                    hf_raise_for_status(response)
                if status == 200:
                    start = 0
                elif status == 206 and offset:
                    span = response.headers.get("Content-Range", "")
                    m = _CONTENT_RANGE.match(span)
                    if not m or (int(m.group(1)), int(m.group(2)), m.group(3)) != (offset, size - 1, str(size)):
                        raise RegistryIOError(
                            f"Content-Range {span!r} does not answer bytes {offset}-{size - 1} of {size}",
                            hint=OTHER_BYTES_HINT,
                            path=url,
                        )
                else:
                    raise RegistryIOError(
                        f"HTTP {status} to a download" + (f" from byte {offset}" if offset else ""),
                        hint=OTHER_BYTES_HINT,
                        path=url,
                    )
                sink.seek(start)
                sink.truncate()
                got = start
                try:
                    for chunk in response.iter_bytes():
                        got += len(chunk)
                        self._count(len(chunk))
                        if got > size:
                            raise RegistryIOError(
                                f"the server sent more than the {size} bytes listed", hint=OTHER_BYTES_HINT, path=url
                            )
                        sink.write(chunk)
                        if progress is not None:
                            progress(got)
                except (RegistryIOError, OSError):
                    raise
                except Exception as e:  # a cut connection: raised here, not into http_stream_backoff's generator,
                    # which would send the request again (from byte 0 of the body) and fail to yield it twice
                    raise DownloadCut(
                        f"the connection was cut after {got} of the file's {size} bytes ({type(e).__name__}: "
                        f"{_first_line(e)})",
                        written_from=start,
                        hint=_CUT_HINT,
                    ) from e
        except HfHubHTTPError as e:  # before OSError: huggingface_hub's HTTP errors are OSErrors too
            raise RegistryIOError(
                f"the Hub answered: {_first_line(e)}", hint=status_hint(error_status(e)), path=public_url(url)
            ) from e
        except (RegistryIOError, OSError):
            raise
        except Exception as e:  # httpx2 transport errors (a cut connection)
            raise DownloadCut(
                f"the download stopped after {got} of the file's {size} bytes ({type(e).__name__}: {_first_line(e)})",
                written_from=start,
                hint=_CUT_HINT,
            ) from e
        if got != size:
            raise DownloadCut(
                f"the download ended after {got} of the file's {size} bytes", written_from=start, hint=_CUT_HINT
            )
        return start

    @staticmethod
    def _check_range(response: Any, url: str, start: int, end: int, total: int | None) -> None:
        asked = f"bytes {start}-{end}" + (f" of {total}" if total is not None else "")
        if response.status_code == 200:
            whole = total is not None and start == 0 and end == total - 1
            length = response.headers.get("Content-Length")
            one = length is not None and length.isdigit() and int(length) == end - start + 1 and not start
            if not (whole or one):
                shown = f"{length} bytes" if length is not None else "a body of unknown length"
                raise RangeIgnored(
                    url,
                    asked,
                    f"HTTP 200 with the whole file ({shown}): it ignored the Range header",
                    hint=WRONG_ANSWER_HINT,
                )
            return
        if response.status_code != 206:
            raise WrongAnswerError(
                url, asked, f"HTTP {response.status_code}, not 206 (Partial Content)", hint=WRONG_ANSWER_HINT
            )
        span = response.headers.get("Content-Range")
        m = _CONTENT_RANGE.match(span or "")
        if not m or int(m.group(1)) != start or int(m.group(2)) != end:
            raise WrongAnswerError(
                url, asked, f"Content-Range {span!r}, which does not answer bytes {start}-{end}", hint=WRONG_ANSWER_HINT
            )
        if total is not None and m.group(3) != "*" and int(m.group(3)) != total:
            holds = f"the file holds {m.group(3)} bytes, the Hub's tree listing says {total}"
            raise WrongAnswerError(url, asked, f"Content-Range {span!r}: {holds}", hint=WRONG_ANSWER_HINT)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class RemoteFile:
    """A :class:`~rwkv_registry.formats.ckpt.ByteSource` over one remote file, read by HTTP Range requests.

    Fetched ranges are kept, so the reader's many small reads cost one request each at most and
    nothing twice. ``url`` is the file's storage location (the target of the Hub's ``resolve``
    redirect), ``size`` its size from the Hub's metadata.
    """

    def __init__(
        self,
        fetcher: Fetcher,
        url: str,
        size: int,
        *,
        name: str = "",
        workers: int = 8,
        gap: int = GAP_BYTES,
        sha256: str | None = None,
    ) -> None:
        self.fetcher = fetcher
        self.url = url
        self.size = size
        self.path = name or url
        self.workers = workers
        self.gap = gap  # ranges closer than this are fetched in one request
        self.sha256 = sha256  # the listing's: a file read whole (its storage ignores Range) must have it
        self._whole: bytes | None = None  # the file read whole (and checked) because its storage ignored Range
        self._starts: list[int] = []
        self._data: list[bytes] = []
        self._lock = threading.Lock()
        self._whole_lock = threading.Lock()

    # --- the ByteSource protocol ------------------------------------------------------------------
    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``, from what was fetched or by one new Range request."""
        from rwkv_registry.formats.rules import refusal

        if offset < 0 or length < 0 or offset + length > self.size:
            raise refusal("PTH001", f"read of {length} bytes at offset {offset} is beyond the end ({self.size} bytes)")
        if length == 0:
            return b""
        hit = self._cached(offset, length)
        if hit is not None:
            return hit
        self._fetch([(offset, offset + length)])
        hit = self._cached(offset, length)
        assert hit is not None
        return hit

    @property
    def read_whole(self) -> bool:
        """Whether the file was read whole (its storage ignored Range) and checked against the listing."""
        return self._whole is not None

    def _cached(self, offset: int, length: int) -> bytes | None:
        if self._whole is not None:
            return self._whole[offset : offset + length]
        with self._lock:
            i = bisect.bisect_right(self._starts, offset) - 1
            # segments may overlap: look back a little for one that covers the whole read
            for j in range(i, max(i - 8, -1), -1):
                s, d = self._starts[j], self._data[j]
                if s <= offset and offset + length <= s + len(d):
                    return d[offset - s : offset - s + length]
        return None

    def _store(self, start: int, data: bytes) -> None:
        with self._lock:
            i = bisect.bisect_left(self._starts, start)
            self._starts.insert(i, start)
            self._data.insert(i, data)

    def _fetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Fetch half-open ``[start, end)`` ranges (merged when close), in parallel."""
        merged = [r for r in coalesce_ranges(ranges, self.size, self.gap) if self._cached(r[0], r[1] - r[0]) is None]
        if not merged:
            return

        def one(r: tuple[int, int]) -> None:
            start, end = r
            if self._whole is not None:
                return
            try:
                self._store(start, self.fetcher.get(self.url, start=start, end=end - 1, total=self.size))
            except RangeIgnored:
                if self.sha256 is None or self.size > WHOLE_READ_BYTES:
                    raise  # never a large download by accident, nor bytes that cannot be checked
                self._read_whole()

        if len(merged) == 1:
            one(merged[0])
            return
        with ThreadPoolExecutor(max_workers=min(self.workers, len(merged))) as pool:
            list(pool.map(one, merged))

    def _read_whole(self) -> None:
        """The whole file in one request (its storage ignores Range), checked against the listing's size and sha256
        before any of it is used; once, whichever thread comes first. Raises :class:`RegistryIOError`."""
        with self._whole_lock:
            if self._whole is not None:
                return
            data = self.fetcher.get(self.url, size=self.size)
            got = hashlib.sha256(data).hexdigest()
            if len(data) != self.size or got != self.sha256:
                raise RegistryIOError(
                    f"{public_url(self.url)}: read whole (the server ignored the Range header), it served "
                    f"{len(data)} bytes whose sha256 is {got[:12]}…, the Hub's tree listing says {self.size} bytes "
                    f"of sha256 {(self.sha256 or '?')[:12]}…",
                    hint=OTHER_BYTES_HINT,
                    path=public_url(self.url),
                )
            with self.fetcher._lock:
                self.fetcher.whole_reads += 1
            self._whole = data

    # --- planning -----------------------------------------------------------------------------------
    def prefetch_zip_metadata(self) -> None:
        """Fetch what :func:`rwkv_registry.formats.ckpt.open_checkpoint` reads of a torch zip, in few requests.

        Lenient on purpose: anything unexpected stops the planning, and the reader then fetches
        on demand and reports the problem with its own rule code.
        """
        from rwkv_registry.core.errors import CheckpointError
        from rwkv_registry.formats.lfs import MAX_POINTER_SIZE

        head = (0, min(self.size, MAX_POINTER_SIZE))
        tail = (max(0, self.size - TAIL_BYTES), self.size)
        self._fetch([head, tail])
        try:
            plan = self._zip_plan()
        except CheckpointError:  # the reader names the problem when it meets it
            return
        self._fetch(plan)

    def _zip_plan(self) -> list[tuple[int, int]]:
        """The ranges :func:`rwkv_registry.formats.zipread.read_zip` will read, from that reader's own parsing of
        the end
        records and the central directory (over this file's Range reads): each local header with room for its
        extra field, the small entries whole, and each data descriptor (the bytes right before the next header
        or the central directory, where a well-formed archive has it)."""
        from rwkv_registry.formats.zipread import DESCRIPTOR_MAX, LOCAL_HEADER_SIZE, read_central_directory

        directory = read_central_directory(self)
        ordered = sorted(directory.entries, key=lambda e: e.header_offset)
        following = [e.header_offset for e in ordered[1:]] + [directory.offset]
        plan: list[tuple[int, int]] = []
        for entry, next_start in zip(ordered, following, strict=True):
            header_end = entry.header_offset + LOCAL_HEADER_SIZE + len(entry.raw) + LOCAL_EXTRA_SLACK
            if _STORAGE.match(entry.name) or entry.size > MAX_PLANNED_ENTRY:
                plan.append((entry.header_offset, min(header_end, directory.offset)))
            else:
                plan.append((entry.header_offset, min(header_end + entry.size, directory.offset)))
            if entry.flags & 0x0008:  # torch's data descriptor, right before the next record
                plan.append((max(entry.header_offset, next_start - DESCRIPTOR_MAX), next_start))
        return plan


def coalesce_ranges(ranges: Iterable[tuple[int, int]], size: int, gap: int = GAP_BYTES) -> list[tuple[int, int]]:
    """Sorted, clipped, merged ``[start, end)`` ranges; neighbours closer than ``gap`` bytes join."""
    clipped = sorted((max(0, a), min(size, b)) for a, b in ranges if min(size, b) > max(0, a))
    out: list[tuple[int, int]] = []
    for a, b in clipped:
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
