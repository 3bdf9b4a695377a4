"""The rwkv_vocab_v20230424 tokenizer: round trips, equality with the rwkv package's TRIE tokenizer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rwkv_registry.model import get_tokenizer
from rwkv_registry.model.tokenizer import VOCAB_NAME, default_vocab_path

SAMPLES = {
    "chinese": "先认基模：State 和 MiSS 都只对训练时用的那一个基模文件有效。",
    "french": "Nous entraînons des modèles RWKV à piloter les 231 outils réels ; ça coûte 0,53 $.",
    "emoji": "Done ✅ 🎉👍🏽 family: 👨‍👩‍👧‍👦 flags 🇫🇷🇨🇳",
    "code": "def f(x: int) -> int:\n    return x ** 2  # square\n\n\tif x != 0:\r\n        pass\n",
    "json": '{"name":"read_file","arguments":{"path":"a.txt","n":[1,2.5,null,true]}}',
    "chat": "System: tools\n\nUser: hi\n\nAssistant: <think></think>",
    "think_open": "User: hi\n\nAssistant: <think",
    "think_fast": "User: hi\n\nAssistant: <think></think",
}


@pytest.fixture(scope="module")
def trie():
    from rwkv.rwkv_tokenizer import TRIE_TOKENIZER

    return TRIE_TOKENIZER(str(default_vocab_path()))


@pytest.mark.parametrize("name", list(SAMPLES))
def test_round_trip(name: str) -> None:
    tok = get_tokenizer()
    ids = tok.encode(SAMPLES[name])
    assert all(1 <= i < 65536 for i in ids)
    assert tok.decode(ids) == SAMPLES[name]


@pytest.mark.parametrize("name", list(SAMPLES))
def test_same_ids_as_the_rwkv_package(name: str, trie) -> None:
    assert get_tokenizer().encode(SAMPLES[name]) == trie.encode(SAMPLES[name])


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_random_text_matches_the_rwkv_package(trie, text: str) -> None:
    tok = get_tokenizer()
    ids = tok.encode(text)
    assert ids == (trie.encode(text) if text else [])
    assert tok.decode(ids) == text


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=60))
def test_arbitrary_bytes_round_trip(trie, data: bytes) -> None:
    tok = get_tokenizer()
    ids = tok.encode_bytes(data)
    assert tok.decode_bytes(ids) == data
    if data:
        assert ids == trie.encodeBytes(data)


def test_the_withheld_bracket_is_a_token_boundary(trie) -> None:
    """RWKV-Agent's prompt.go (e3ed3d4) ends the thinking prompts before the final ">" because the tokenizer would
    otherwise end them on another token: checked here with the rwkv package's own tokenizer (docs/profiles.md)."""

    def tail(text: str, n: int) -> list[str]:
        return [trie.decodeBytes([i]).decode("utf-8") for i in trie.encode(text)[-n:]]

    assert tail("Assistant: <think", 3) == [":", " <", "think"]
    assert tail("Assistant: <think>", 3) == [" <", "think", ">"]
    assert tail("Assistant: <think></think", 3) == ["think", "></", "think"]
    assert tail("Assistant: <think></think>", 3) == ["></", "think", ">"]


def test_greedy_longest_match_facts() -> None:
    tok = get_tokenizer()
    assert tok.encode("\n\n") == [261]  # one token, the G1 turn separator
    assert len(tok.encode("User")) == 1
    assert tok.decode([0]) == "" and tok.decode_bytes([0, 70000]) == b""
    assert tok.decode(tok.encode_bytes(b"\xc3")) == "\ufffd"  # half a UTF-8 character


def test_vocabulary_comes_from_the_installed_package_not_the_repo() -> None:
    import rwkv

    path = default_vocab_path()
    assert path.name == VOCAB_NAME and path.parent == Path(rwkv.__file__).parent
    assert len(path.read_text(encoding="utf-8").splitlines()) == 65529
    repo = Path(__file__).resolve().parents[2]
    tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.split()
    assert not [t for t in tracked if t.endswith(VOCAB_NAME)]
