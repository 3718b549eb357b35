"""``roteiro-memory eval``: measure the retrieval arms on a dataset
(:mod:`roteiro_memory.evaluation`)."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "measure the retrieval arms (filter, search, bm25s) on a dataset"
EXAMPLE = "roteiro-memory eval coding\n  roteiro-memory eval locomo ~/data/locomo10.json --json"
SYNCS = False
"""No store of the user's, nothing to sync."""
OPTIONS_WHEN_NAMED = True
"""Its options load the evaluation harness, so the help index and completion
name the command without building them; ``eval --help`` shows them."""


def configure(parser: argparse.ArgumentParser) -> None:
    from roteiro_memory.evaluation.__main__ import configure as options

    options(parser)


def run(args: argparse.Namespace, session: Session) -> int:
    """The table, or under ``--json`` the result in the envelope."""
    import sys

    from roteiro_memory.errors import UsageError
    from roteiro_memory.evaluation import report
    from roteiro_memory.evaluation.__main__ import EvaluationRefused
    from roteiro_memory.evaluation.__main__ import run as evaluate
    from roteiro_memory.evaluation.datasets.jsonfile import DatasetFileError
    from roteiro_memory.exitcodes import ExitCode

    try:
        result = evaluate(args)
    except (EvaluationRefused, DatasetFileError) as error:
        raise UsageError(str(error)) from None
    if args.json:
        from roteiro_memory.cli.output import emit

        emit(result)
    else:
        sys.stdout.write(report.table(result))
    return ExitCode.OK
