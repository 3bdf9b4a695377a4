"""The handlers of ``list`` and ``show``: arguments in, the registry read by :class:`~rwkv_registry.catalog.entries.
Catalog`, printed by :mod:`rwkv_registry.catalog.render` (whose renderings the TUI shares)."""

from __future__ import annotations

import argparse

from rwkv_registry.catalog.entries import Catalog
from rwkv_registry.catalog.render import print_list, print_show


def cmd_list(args: argparse.Namespace) -> int:
    """``rwkv-registry list [PATH] [--filter QUERY] [--format text|json]``."""
    return print_list(Catalog(args.path), getattr(args, "filter", None), args.format)


def cmd_show(args: argparse.Namespace) -> int:
    """``rwkv-registry show [ENTRY_ID] [--path PATH] [--format text|json]``."""
    return print_show(Catalog(args.path), args.entry_id, args.format)
