"""The ``roteiro-memory`` command line: the entry point and parser
(:mod:`.main`), the session and commands (:mod:`.commands`), text rendering
(:mod:`.render`) and anchor parsing (:mod:`.anchors`)."""

from __future__ import annotations

from roteiro_memory.cli.main import console, main

__all__ = ["console", "main"]
