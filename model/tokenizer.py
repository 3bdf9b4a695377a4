"""The RWKV World tokenizer ``rwkv_vocab_v20230424``: greedy longest match over UTF-8 bytes.

The vocabulary is read from the installed ``rwkv`` package (``rwkv/rwkv_vocab_v20230424.txt``,
65529 lines ``<id> <python literal> <byte length>``); no copy lives in this repository. Token 0
is the end-of-text token and decodes to nothing. Literals are parsed with
:func:`ast.literal_eval` (never ``eval``).

Encoding takes, at each position, the longest vocabulary entry that is a prefix of the remaining
bytes (every single byte is an entry, so encoding never fails). Candidates are indexed by their
first two bytes and tried longest first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path

from rwkv_registry.model.errors import ModelError

VOCAB_NAME = "rwkv_vocab_v20230424.txt"
VOCAB_PACKAGE = "rwkv"
_VOCAB_HINT = "The installed rwkv package is not the expected one: pip install --force-reinstall rwkv==0.8.32."
END_OF_TEXT = 0


class RWKVTokenizer:
    """Encoder/decoder for ``rwkv_vocab_v20230424``."""

    def __init__(self, vocab_path: str | Path | None = None) -> None:
        path = Path(vocab_path) if vocab_path is not None else default_vocab_path()
        self.vocab_path = str(path)
        self.id_to_bytes: dict[int, bytes] = {}
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                idx = int(line[: line.index(" ")])
                literal = ast.literal_eval(line[line.index(" ") : line.rindex(" ")].strip())
                length = int(line[line.rindex(" ") :])
            except (ValueError, SyntaxError) as exc:
                raise ModelError(
                    f"{path}:{line_no}: unreadable vocabulary line ({exc})", hint=_VOCAB_HINT, path=str(path)
                ) from None
            token = literal.encode("utf-8") if isinstance(literal, str) else literal
            if not isinstance(token, bytes) or len(token) != length:
                raise ModelError(
                    f"{path}:{line_no}: token length {length} does not match its literal",
                    hint=_VOCAB_HINT,
                    path=str(path),
                )
            self.id_to_bytes[idx] = token
        self.bytes_to_id = {b: i for i, b in self.id_to_bytes.items()}
        # first byte -> second byte -> candidates, longest first; single bytes apart.
        self._single: dict[int, int] = {}
        self._table: dict[int, dict[int, list[tuple[bytes, int]]]] = {}
        for token, idx in sorted(self.bytes_to_id.items(), key=lambda kv: -len(kv[0])):
            if len(token) == 1:
                self._single[token[0]] = idx
            else:
                self._table.setdefault(token[0], {}).setdefault(token[1], []).append((token, idx))

    @property
    def vocab_size(self) -> int:
        """Largest id + 1 (the model's vocabulary, 65536, is larger: the tail is unused)."""
        return max(self.id_to_bytes) + 1

    def encode_bytes(self, src: bytes) -> list[int]:
        """Token ids of ``src``, greedy longest match."""
        out: list[int] = []
        i, n = 0, len(src)
        while i < n:
            found = None
            if i + 1 < n:
                for token, idx in self._table.get(src[i], {}).get(src[i + 1], ()):
                    if src.startswith(token, i):
                        found = (len(token), idx)
                        break
            if found is None:
                found = (1, self._single[src[i]])
            out.append(found[1])
            i += found[0]
        return out

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (UTF-8)."""
        return self.encode_bytes(text.encode("utf-8"))

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """The bytes of ``tokens``; 0 (end of text) and unknown ids give nothing."""
        return b"".join(self.id_to_bytes.get(int(t), b"") for t in tokens)

    def decode(self, tokens: Iterable[int], errors: str = "replace") -> str:
        """The text of ``tokens``; invalid UTF-8 (a cut multi-byte character) follows ``errors``."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)


def default_vocab_path() -> Path:
    """Where the installed ``rwkv`` package keeps ``rwkv_vocab_v20230424.txt``."""
    try:
        ref = resources.files(VOCAB_PACKAGE).joinpath(VOCAB_NAME)
    except ModuleNotFoundError:
        raise ModelError(
            f"the {VOCAB_PACKAGE!r} package, which ships {VOCAB_NAME}, is not installed",
            hint="pip install rwkv==0.8.32 (it is in the dev extras).",
        ) from None
    path = Path(str(ref))
    if not path.is_file():
        raise ModelError(
            f"{path}: the vocabulary file is missing from the installed rwkv package", hint=_VOCAB_HINT, path=str(path)
        )
    return path


@lru_cache(maxsize=1)
def get_tokenizer() -> RWKVTokenizer:
    """The shared tokenizer over the packaged vocabulary (built once, ~0.5 s)."""
    return RWKVTokenizer()
