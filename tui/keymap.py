"""User key bindings: every binding of the TUI has an id, and a keymap maps ids to keys.

Two places, the second winning: the ``keymap`` object of ``tui.json`` in the user config
directory (``RWKV_REGISTRY_TUI_CONFIG`` names another file) and the environment variable
``RWKV_REGISTRY_KEYMAP`` as ``id=key,id=key``. Example::

    {"keymap": {"registry.validate": "ctrl+r", "registry.copy_usage": "ctrl+y,y"}}

    RWKV_REGISTRY_KEYMAP="registry.compare=x,app.toggle_dark=f2" rwkv-registry tui

A bad file or entry is reported (the TUI shows it as a notification), never fatal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

BINDING_IDS = (
    "registry.validate",
    "registry.copy_usage",
    "registry.edit_train",
    "registry.compare",
    "registry.focus_filter",
    "registry.clear_filter",
    "registry.tab_info",
    "registry.tab_train",
    "registry.tab_miss",
    "registry.tab_scores",
    "registry.tab_checks",
    "compare.close",
    "app.toggle_dark",
    "app.quit",
)


def config_path() -> Path:
    """Where ``tui.json`` is read from."""
    env = os.environ.get("RWKV_REGISTRY_TUI_CONFIG")
    if env:
        return Path(env)
    from platformdirs import user_config_dir

    return Path(user_config_dir("rwkv-registry", appauthor=False)) / "tui.json"


def load_keymap() -> tuple[dict[str, str], list[str]]:
    """(keymap, problems): binding id -> key string(s), and what could not be used."""
    keymap: dict[str, str] = {}
    problems: list[str] = []
    path = config_path()
    if path.is_file():
        try:
            data = json.loads(path.read_text("utf-8"))
            items = data.get("keymap", {}) if isinstance(data, dict) else None
            if not isinstance(items, dict):
                raise ValueError("'keymap' must be an object of binding id to key")
            for k, v in items.items():
                _add(keymap, problems, str(k), v, str(path))
        except (OSError, ValueError) as e:
            problems.append(f"{path}: {e}")
    env = os.environ.get("RWKV_REGISTRY_KEYMAP", "")
    for item in filter(None, (x.strip() for x in env.split(";" if ";" in env else ","))):
        k, sep, v = item.partition("=")
        if not sep:
            problems.append(f"RWKV_REGISTRY_KEYMAP: {item!r} is not id=key")
            continue
        _add(keymap, problems, k.strip(), v.strip(), "RWKV_REGISTRY_KEYMAP")
    return keymap, problems


def _add(keymap: dict[str, str], problems: list[str], binding_id: str, key: object, where: str) -> None:
    if binding_id not in BINDING_IDS:
        problems.append(f"{where}: unknown binding id {binding_id!r} (known: {', '.join(BINDING_IDS)})")
    elif not isinstance(key, str) or not key.strip():
        problems.append(f"{where}: {binding_id}: the key must be a non-empty string")
    elif any(not k.strip() or " " in k.strip() for k in key.split(",")):
        problems.append(
            f"{where}: {binding_id}: {key!r} is not a key or a comma-separated list of keys "
            "(one key each, e.g. 'ctrl+y,y'; no spaces, no key sequences)"
        )
    else:
        keymap[binding_id] = key.strip()
