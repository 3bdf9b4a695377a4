"""``rwkv-registry tui``: a Textual browser for a registry.

The package is imported only by the ``tui`` command. :mod:`rwkv_registry.tui.app` holds the App,
``screens/`` and ``widgets/`` one class per file, :mod:`rwkv_registry.tui.messages` the app-level
messages and ``registry.tcss`` the one stylesheet. Everything it shows comes from the core's
:mod:`rwkv_registry.catalog.entries` (the data layer of ``list`` and ``show`` too); validation runs in a
child process (:mod:`rwkv_registry.tui.validation_process`) through :mod:`rwkv_registry.tui.validation`.
Neither this file nor ``validation``/``validation_process``/``keymap`` import textual, so they can be tested
without it (and the child process never imports it).
"""
