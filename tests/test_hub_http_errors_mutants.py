"""Mutation audit of the hub errors in _hub_http: RemoteStatusError and LocalWriteError as built, status_hint by
status, and what error_status / error_reason read of an HTTP error."""

from __future__ import annotations

import errno
from types import SimpleNamespace

import pytest

from rwkv_registry.hub.transport import (
    LocalWriteError,
    RemoteStatusError,
    error_reason,
    error_status,
    public_url,
    status_hint,
    write_hint,
)

SIGNED = "https://cdn.example/repo/blob?X-Amz-Signature=secret#frag"


def test_a_status_error_names_the_url_without_its_query_and_the_status() -> None:
    e = RemoteStatusError(SIGNED, 403, "Forbidden", hint="h")
    assert str(e.message) == "https://cdn.example/repo/blob: the server answered HTTP 403 Forbidden"
    assert e.status == 403 and e.url == "https://cdn.example/repo/blob" and e.path == e.url and e.hint == "h"
    assert "secret" not in str(e)
    unknown = RemoteStatusError(SIGNED, None, "HfHubHTTPError", hint="h")
    assert "answered an error status HfHubHTTPError" in unknown.message and unknown.status is None


def test_a_local_write_error_says_the_destination_and_the_os_error() -> None:
    e = LocalWriteError("/tmp/x.pth", OSError(errno.ENOSPC, "No space left on device"), hint=write_hint("/tmp/x.pth"))
    assert e.message == "cannot write the download to /tmp/x.pth: No space left on device"
    assert e.errno == errno.ENOSPC and e.path == "/tmp/x.pth" and "/tmp/x.pth" in (e.hint or "")
    bare = LocalWriteError("/d", OSError("disk gone"), hint="h")
    assert bare.message == "cannot write the download to /d: disk gone" and bare.errno is None


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (401, "refused access"),
        (403, "refused access"),
        (404, "is not served"),
        (410, "is not served"),
        (429, "rate-limiting"),
        (500, "failed this request after its retries"),
        (None, "failed this request after its retries"),
    ],
)
def test_each_status_gets_its_hint(status: int | None, says: str) -> None:
    assert says in status_hint(status)


def test_status_and_reason_are_read_from_the_response() -> None:
    e = Exception("x")
    e.response = SimpleNamespace(status_code=404, reason_phrase="Not Found")  # type: ignore[attr-defined]
    assert error_status(e) == 404 and error_reason(e) == "Not Found"
    odd = ValueError("x")
    odd.response = SimpleNamespace(status_code="404", reason_phrase="")  # type: ignore[attr-defined]
    assert error_status(odd) is None and error_reason(odd) == "ValueError"
    assert error_status(KeyError()) is None and error_reason(KeyError()) == "KeyError"


def test_public_url_drops_the_query_and_the_fragment() -> None:
    assert public_url(SIGNED) == "https://cdn.example/repo/blob"
