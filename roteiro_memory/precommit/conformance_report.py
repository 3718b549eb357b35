"""``roteiro-conformance report FILE.json... --html OUT.html``: a page to publish.

Reads the JSON reports ``--roteiro-report`` wrote (one per implementation, or
two of one implementation to show what changed), checks each against the
shipped ``report.schema.json``, and writes one self-contained HTML page
(:mod:`roteiro_memory.suite.publish`).  A file that cannot be read, is not
strict JSON (as ``--roteiro-report`` writes it) or does not fit the schema is
one line on stderr, ``FILE: problem``, and exit status 2; the page is written
whole or not at all, so a failure leaves an earlier one as it was.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.precommit.report import write
from roteiro_memory.privatefile import replace
from roteiro_memory.terminal import to_stderr

__all__ = ["load_report", "main"]


class ReportError(ValueError):
    """A report file that cannot be published, with what was wrong."""


def load_report(path: Path) -> dict[str, Any]:
    """``path`` as a report, checked against ``report.schema.json``."""
    import jsonschema  # type: ignore[import-untyped]  # no stubs among the dev dependencies

    from roteiro_memory.errors import byte_order_mark
    from roteiro_memory.suite.data import builtin_dir
    from roteiro_memory.suite.pipes import NotStrictJSON, strict_loads
    from roteiro_memory.suite.report import REPORT_SCHEMA, REPORT_SCHEMA_FILE

    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ReportError(f"{path}: cannot be read: {error.strerror or error}") from None
    marked = byte_order_mark(raw)
    if marked is not None:
        raise ReportError(f"{path}: {marked}")
    try:
        document = strict_loads(raw)
    except NotStrictJSON as error:
        raise ReportError(f"{path}: is not strict JSON: {error}") from None
    except ValueError as error:  # UnicodeDecodeError too
        raise ReportError(f"{path}: is not JSON: {error}") from None
    except RecursionError:
        raise ReportError(f"{path}: is nested too deeply to be a report") from None
    if not isinstance(document, dict) or document.get("schema") != REPORT_SCHEMA:
        found = document.get("schema") if isinstance(document, dict) else type(document).__name__
        raise ReportError(
            f"{path}: is not a conformance report (schema {found!r}, expected {REPORT_SCHEMA!r}; "
            "write one with pytest --roteiro-conformance --roteiro-report FILE)"
        )
    schema = json.loads((builtin_dir() / REPORT_SCHEMA_FILE).read_text(encoding="utf-8"))
    problem = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(document)
    )
    if problem is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem.absolute_path)
        raise ReportError(f"{path}: breaks {REPORT_SCHEMA_FILE} at ${where}: {problem.message}")
    return document


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="roteiro-conformance report",
        description="Publish conformance reports as one HTML page: implementations as "
        "columns, capabilities, invariants and cases as rows.",
    )
    parser.add_argument("reports", nargs="+", metavar="FILE.json", help="--roteiro-report files")
    parser.add_argument("--html", required=True, metavar="OUT.html", help="the page to write")
    parser.add_argument("--title", default="Conformance matrix", help="the page's title")
    args = parser.parse_args(argv)
    from roteiro_memory.suite.publish import render_page

    try:
        reports = [load_report(Path(name)) for name in args.reports]
    except ReportError as error:
        to_stderr(f"{error}\n")
        return int(ExitCode.USAGE)
    out = Path(args.html)
    page = render_page(reports, args.title)
    try:
        # Whole or not at all: a page that fails half-way leaves the last one as it was.
        replace(out, lambda stream: print(page, end="", file=stream))
        out.chmod(0o644)  # a page to publish, readable by whoever serves it
    except OSError as error:
        to_stderr(f"{out}: cannot be written: {error.strerror or error}\n")
        return int(ExitCode.USAGE)
    if write(sys.stdout, f"{out}: {len(reports)} report(s)\n", own=True) == "failed":
        return int(ExitCode.USAGE)
    return int(ExitCode.OK)
