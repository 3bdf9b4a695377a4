"""Tests from a mutation audit of the Hub modules (push, pull, validate hf://, Range reads) and a
hostile look-alike Hub: content that disagrees with the tree listing, wrong sizes and ranges, unsafe
paths, truncated downloads, a tampered signature. Each test here failed on at least one mutant of
registry/hub.py, _hub_sync.py, _hub_remote.py, _hub_http.py or _hub_facts.py, or on a real bug.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest
from hub_server import FakeHub
from regtools import TINY_BASE, build_registry, resum
from test_hub import copy, new_repo

from rwkv_registry.errors import RegistryIOError
from rwkv_registry.hub import validate_hub

STATE = f"{TINY_BASE}/state/v1/s1.pth"
TRAIN = f"{TINY_BASE}/state/v1/train.json"


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    with FakeHub() as server:
        yield server


@pytest.fixture(autouse=True)
def hub_env(hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """As in tests/test_hub.py: the test server, a throw-away HF_HOME, never a real token."""
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

    home = tmp_path_factory.mktemp("hf_home")
    for name, value in {
        "HF_ENDPOINT": hub.endpoint,
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HOME": str(home),
        "HF_TOKEN": "hf_test_token_for_the_local_server",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)
    disable_progress_bars()
    yield
    enable_progress_bars()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("tiny")
    return build_registry(tmp / "reg", tmp)


def serve_other_bytes(hub: FakeHub, repo_id: str, path: str, data: bytes) -> None:
    """The Hub keeps listing ``path``'s sha256/blob id but serves ``data`` (a tampered CDN or proxy)."""
    blob = hub.repos[repo_id].commits[hub.head(repo_id)][path]
    hub.content[blob.sha256] = data


def test_small_lfs_file_served_with_other_bytes_is_refused(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """With `* filter=lfs`, train.json sits in LFS: its bytes are read and must also be the ones hashed.

    The listing's sha256 matches SHA256SUMS (and so the signature); the bytes served differ. Before the
    fix the validator read the served bytes but took their sha256 from the listing: a signed, tampered
    train.json validated clean.
    """
    from rwkv_registry.signing import generate_keypair, sign_registry

    reg = copy(tiny, tmp_path / "reg")
    (reg / ".gitattributes").write_text("* filter=lfs diff=lfs merge=lfs -text\n")
    resum(reg)
    key, pub, _ = generate_keypair(tmp_path / "k.key")
    sign_registry(reg, key)
    repo_id = new_repo(hub, reg)
    assert validate_hub(f"hf://{repo_id}", trusted_keys=[str(pub)]).ok
    train = (reg / TRAIN).read_bytes()
    tampered = train.replace(b"T08:00:00Z", b"T07:00:00Z", 1)  # passes every other rule
    assert tampered != train and len(tampered) == len(train)
    serve_other_bytes(hub, repo_id, TRAIN, tampered)
    with pytest.raises(RegistryIOError, match=r"train\.json") as e:
        validate_hub(f"hf://{repo_id}", trusted_keys=[str(pub)])
    assert hashlib.sha256(tampered).hexdigest()[:12] in e.value.message


def test_plain_git_file_served_with_other_bytes_is_refused(
    hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rwkv_registry.cli import main

    repo_id = new_repo(hub, tiny)
    index = (tiny / "index.json").read_bytes()
    serve_other_bytes(hub, repo_id, "index.json", index.replace(b"rwkv7", b"RWKV7", 1))
    with pytest.raises(RegistryIOError, match=r"index\.json.*git blob id"):
        validate_hub(f"hf://{repo_id}")
    assert main(["validate", f"hf://{repo_id}"]) == 2  # an I/O error, not a finding, and no traceback
    err = capsys.readouterr().err
    assert "tree listing says" in err and "Traceback" not in err


def test_truncated_small_file_download_is_refused(hub: FakeHub, tiny: Path) -> None:
    repo_id = new_repo(hub, tiny)
    index = (tiny / "index.json").read_bytes()
    serve_other_bytes(hub, repo_id, "index.json", index[: len(index) // 2])
    with pytest.raises(RegistryIOError, match=r"index\.json.*bytes"):
        validate_hub(f"hf://{repo_id}")
