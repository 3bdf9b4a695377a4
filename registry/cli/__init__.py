"""The command line: the parser, the handlers, the entry point. The top layer of the core: no other package of
registry/ imports it; model/smoke/ reads the think-token limit from cli.main, and tui/ builds on the layers below."""
