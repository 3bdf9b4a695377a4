"""Text from a registry, made safe to show: on a terminal (:func:`printable`) and in a message (:func:`clip`).

A registry is data from strangers (a ``pull``, a clone, a colleague's copy): every string in it (a description, a
tensor name, a path in SHA256SUMS, a score's note) may hold terminal control sequences or be megabytes long.

- :func:`printable` escapes what a terminal would obey rather than show: the C0 and C1 control characters (ESC
  starts the CSI and OSC sequences that move the cursor, clear the screen, retitle the window or write a hyperlink;
  CR rewrites the line), DEL, the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069, U+200E,
  U+200F, U+061C: "Trojan Source", CVE-2021-42574) and every other format character (zero-width spaces that make
  two names look alike), line and paragraph separators, and the lone surrogates of a file name that is not UTF-8
  (printing one raises ``UnicodeEncodeError``). Each becomes its Python escape (``\\x1b``, ``\\u202e``), visible
  and harmless. Every text output prints registry text through it: ``validate``'s report, the warnings and errors
  of the write commands, ``list``, ``show`` and the TUI (:func:`printable_renderable` for rich renderables, and
  :func:`printable_console`). JSON output is left exact: ``json.dumps`` escapes control characters itself.
- :func:`clip` shortens a name or path quoted in a message to :data:`QUOTE_LIMIT` characters, its head and tail
  kept and the length said: a 20 MB tensor name is then no 20 MB message (and no 200 MB of copies of it).
- :func:`json_text` is the ``--format json`` output: exact JSON (the same values), with the characters that
  ``json.dumps(ensure_ascii=False)`` leaves raw but a terminal would obey (C1 controls, bidirectional and other
  format characters, separators, lone surrogates) written as ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "MESSAGE_LIMIT",
    "PATH_LIMIT",
    "QUOTE_LIMIT",
    "clip",
    "json_text",
    "printable",
    "printable_console",
    "printable_renderable",
]

QUOTE_LIMIT = 200
"""The most characters of one name or path a message quotes (:func:`clip`)."""

MESSAGE_LIMIT = 4000
"""The most characters of a finding's or an error's message (:func:`rwkv_registry.core.rules.finding`,
:class:`rwkv_registry.core.errors.RegistryError`): a safety net for a message that quotes a long value without
:func:`clip`."""

PATH_LIMIT = 1024
"""The most characters of a finding's or an error's path (no file of a registry has a path that long)."""

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(ch: str) -> str:
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def printable(text: Any, *, newlines: bool = False) -> str:
    """``text`` (``str()`` of it when no string) with every character a terminal would act on escaped (see the
    module docstring); tabs are kept, and line feeds when ``newlines`` (text laid out on several lines on purpose).
    Text without such characters is returned as it is."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():  # no control, format, separator or surrogate character: the common case, at C speed
        return s
    import unicodedata  # only here (a command that prints plain text never needs it)

    out = []
    for ch in s:
        if ch == "\t" or (ch == "\n" and newlines) or ch.isprintable():
            out.append(ch)
        elif unicodedata.category(ch) in _ESCAPED_CATEGORIES:
            out.append(_escape(ch))
        else:  # a space other than U+0020, a private-use or unassigned code point: shown as it is
            out.append(ch)
    return "".join(out)


def clip(text: Any, limit: int = QUOTE_LIMIT) -> str:
    """``text`` (``str()`` of it) at most about ``limit`` characters long: a longer one keeps its first and last
    characters (the start of a name and its extension) around ``…[N characters]…``."""
    s = text if isinstance(text, str) else str(text)
    if len(s) <= limit:
        return s
    tail = max(limit // 4, 1)
    head = max(limit - tail, 1)
    return f"{s[:head]}…[{len(s) - head - tail} characters]…{s[-tail:]}"


class _Printable:
    """A rich renderable shown with :func:`printable` applied to its text (the styles and rich's own control
    segments kept)."""

    def __init__(self, renderable: Any) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        for segment in console.render(self.renderable, options):
            text, style, control = segment
            if control or text.isprintable() or text == "\n":
                yield segment
            else:
                yield Segment(printable(text, newlines=True), style)

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement.get(console, options, self.renderable)


def printable_renderable(renderable: Any) -> Any:
    """``renderable`` (a rich renderable or a string) wrapped so that its text is shown through :func:`printable`:
    for what a TUI widget or a rich console shows of registry data laid out by rich."""
    return _Printable(renderable)


class _PrintableHook:
    """A rich render hook wrapping everything a console prints in :func:`printable_renderable`."""

    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [_Printable(r) for r in renderables]


def printable_console(console: Any) -> Any:
    """``console`` (a rich Console) made to print everything through :func:`printable` (a render hook): the
    consoles of the text commands, whatever they print."""
    console.push_render_hook(_PrintableHook())
    return console


# DEL and above (json.dumps escapes the C0 controls); written as a negated class: "[\\u007f-\\U0010ffff]" takes 5 ms
# to compile, at every start of the command line
_NON_ASCII = re.compile("[^\x00-\x7e]")


def _json_escape(match: re.Match[str]) -> str:
    import unicodedata

    ch = match.group()
    if ch.isprintable() or unicodedata.category(ch) not in _ESCAPED_CATEGORIES:
        return ch
    n = ord(ch)
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


def json_text(value: Any, *, indent: int = 2) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=False)``, but every character a terminal would act on (see
    the module docstring) escaped as ``\\uXXXX``: the same JSON value, safe to print. (Such characters can only be
    inside strings, where an escape means the same character.)"""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return text if text.isascii() and "\x7f" not in text else _NON_ASCII.sub(_json_escape, text)
