"""Widgets of the TUI, one per file: the tree, the details pane, the filter box, the status bar."""
