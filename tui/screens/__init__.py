"""Screens of the TUI: the browser (main) and the comparison of two entries."""
