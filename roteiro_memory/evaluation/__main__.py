"""The command line of the evaluation: ``python -m roteiro_memory.evaluation``.

``configure`` and ``run`` are what ``roteiro-memory eval`` wires in (which
puts the result, under ``--json``, in its envelope).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from roteiro_memory import lexical, privatefile
from roteiro_memory.evaluation import report
from roteiro_memory.evaluation.arms import ARMS, missing_package
from roteiro_memory.evaluation.datasets.codebase import DEFAULT_SEED as CODEBASE_SEED
from roteiro_memory.evaluation.datasets.codebase import codebase
from roteiro_memory.evaluation.datasets.coding import DEFAULT_SEED, coding
from roteiro_memory.evaluation.datasets.corpus import Dataset
from roteiro_memory.evaluation.datasets.jsonfile import DatasetFileError
from roteiro_memory.evaluation.datasets.locomo import locomo
from roteiro_memory.evaluation.datasets.longmemeval import GRANULARITIES, longmemeval
from roteiro_memory.evaluation.run import DEFAULT_STORE, STORES, evaluate, model_only
from roteiro_memory.exitcodes import ExitCode

__all__ = ["EvaluationRefused", "configure", "main", "parse_tokenizer", "run"]

DATASETS = ("coding", "codebase", "locomo", "longmemeval")


class EvaluationRefused(Exception):
    """A command line that parses but asks for what cannot be run."""


def parse_tokenizer(name: str) -> lexical.Tokenizer:
    """A tokenizer from its name (``punct+fold+stem``, ``raw`` for none)."""
    if name == "raw":
        return lexical.Tokenizer(**dict.fromkeys(lexical.SWITCHES.values(), False))
    parts = name.split("+")
    unknown = [p for p in parts if p not in lexical.SWITCHES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown tokenizer switch {unknown[0]!r} in {name!r}: expected 'raw' or "
            f"switches joined by '+' from {', '.join(lexical.SWITCHES)}"
        )
    return lexical.Tokenizer(**{field: key in parts for key, field in lexical.SWITCHES.items()})


def _scoring(text: str) -> str:
    """A scoring variant's name as it is written back (``proximity=1``)."""
    from roteiro_memory.evaluation.scoring import parse_scoring

    try:
        return parse_scoring(text).name
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive(text: str) -> int:
    """A count of at least one (``--sample``)."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive whole number")
    return int(text)


def _arms(text: str) -> list[str]:
    """The arms ``--arms`` names, each once: none would run nothing and
    print an empty table, one named twice would count every query twice."""
    arms = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise EvaluationRefused(f"unknown arm {unknown[0]!r}: expected some of {', '.join(ARMS)}")
    if not arms:
        raise EvaluationRefused(
            f"--arms {text!r}: names no arm; expected some of {', '.join(ARMS)}"
        )
    twice = [a for a in ARMS if arms.count(a) > 1]
    if twice:
        raise EvaluationRefused(f"--arms {text!r}: names {twice[0]!r} twice; name each arm once")
    return arms


def _check_target(path: Path | None, option: str, args: argparse.Namespace) -> None:
    """Refuse, before anything runs, a file to write that cannot be: in a
    folder that is not there, a folder, what ``export -o`` would not replace
    either (a FIFO, whose opening would wait for ever after the run, a
    device), the dataset file being read, or the ``--output`` file for the
    plot."""
    if path is None:
        return
    folder = path.parent
    if not folder.is_dir():
        raise EvaluationRefused(
            f"{option} {path}: the folder {folder} does not exist; create it, or choose a "
            "file in a folder that does"
        )
    if path.is_dir():
        raise EvaluationRefused(f"{option} {path}: is a folder; expected the path of a file")
    try:
        privatefile.check_replaceable(path)
    except OSError as error:
        raise EvaluationRefused(f"{option} {path}: {error.strerror}; choose another file") from None
    if args.path is not None and privatefile.same_file(path, args.path):
        raise EvaluationRefused(
            f"{option} {path}: that is the dataset file being read; choose another file"
        )
    if option == "--plot" and args.output is not None and privatefile.same_file(path, args.output):
        raise EvaluationRefused(
            f"{option} {path}: that is the --output file too; the result and the plot are two files"
        )


def _write(path: Path, option: str, content: str | bytes) -> None:
    """Write ``content`` (text as UTF-8) to ``path`` whole, beside it and
    moved into place as ``export -o`` is
    (:func:`roteiro_memory.privatefile.replace`): a write that fails leaves
    no partial file, and an earlier one as it was."""

    def put(out: TextIO) -> None:
        if isinstance(content, bytes):
            out.buffer.write(content)  # nothing goes through the text layer
        else:
            out.write(content)

    try:
        privatefile.replace(path, put)
    except OSError as error:
        raise EvaluationRefused(
            f"cannot write {option} {path}: {error.strerror or error}; the evaluation ran, "
            "but nothing was written there (a file already there is as it was)"
        ) from None


def configure(parser: argparse.ArgumentParser) -> None:
    """The evaluation's options, on the parser of ``roteiro-memory eval`` or its own."""
    parser.add_argument("dataset", choices=DATASETS)
    parser.add_argument("path", nargs="?", type=Path, help="the dataset file (public datasets)")
    parser.add_argument(
        "--seed",
        type=int,
        help=f"generator seed (coding {DEFAULT_SEED}, codebase {CODEBASE_SEED} by default; "
        "the generated datasets only)",
    )
    parser.add_argument(
        "--sample",
        type=_positive,
        help="keep the first N conversations/instances (locomo and longmemeval only)",
    )
    parser.add_argument(
        "--granularity",
        choices=GRANULARITIES,
        help="one record per session (the default) or per user turn (longmemeval only)",
    )
    parser.add_argument(
        "--arms", default=",".join(ARMS), help=f"comma-separated, from {', '.join(ARMS)}"
    )
    parser.add_argument(
        "--tokenizer",
        type=parse_tokenizer,
        default=lexical.TOKENIZER,
        help=f"search tokenizer variant, to measure one (default {lexical.TOKENIZER.name})",
    )
    parser.add_argument(
        "--scoring",
        type=_scoring,
        default="bm25",
        help="search scoring variant, to measure one (default bm25, the protocol's; "
        "proximity[=W], anchor=W, confidence=P joined by '+')",
    )
    parser.add_argument(
        "--store",
        choices=STORES,
        default=DEFAULT_STORE,
        help=f"the store the filter and search arms run on (default {DEFAULT_STORE}; "
        "memory to measure a --tokenizer or --scoring variant)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--no-timing", action="store_true", help="leave latency out")
    parser.add_argument("--output", type=Path, help="also write the JSON result to this file")
    parser.add_argument(
        "--plot", type=Path, metavar="FILE.png", help="draw recall_any@k per arm, as PNG"
    )


DATASETS_TAKING = {
    "seed": ("coding", "codebase"),
    "sample": ("locomo", "longmemeval"),
    "granularity": ("longmemeval",),
}
"""The options that apply to some datasets only, and those datasets."""


def _check_applies(args: argparse.Namespace) -> None:
    """Refuse an option given for a dataset it does not apply to, rather
    than run without it."""
    for option, datasets in DATASETS_TAKING.items():
        if getattr(args, option) is not None and args.dataset not in datasets:
            raise EvaluationRefused(
                f"--{option} does not apply to {args.dataset}: only "
                f"{' and '.join(datasets)} take{'s' if len(datasets) == 1 else ''} it"
            )


def _dataset(args: argparse.Namespace) -> Dataset:
    if args.dataset == "coding":
        return coding(DEFAULT_SEED if args.seed is None else args.seed)
    if args.dataset == "codebase":
        return codebase(CODEBASE_SEED if args.seed is None else args.seed)
    if args.path is None:
        raise DatasetFileError(
            f"{args.dataset} is read from a path you give, never downloaded: "
            f"roteiro-memory eval {args.dataset} PATH"
        )
    if args.dataset == "locomo":
        return locomo(args.path, args.sample)
    return longmemeval(args.path, args.granularity or "session", args.sample)


def _progress() -> Callable[[int], None] | None:
    if not sys.stderr.isatty():
        return None

    def show(done: int) -> None:
        sys.stderr.write(f"\r{'#' * min(done, 40):<40} {done} haystack(s)")
        sys.stderr.flush()

    return show


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the evaluation the parsed command line asks for, writing its
    ``--output`` and ``--plot`` files; the result.  :class:`EvaluationRefused`
    for arms or a tokenizer that cannot be run, :class:`DatasetFileError` for
    a dataset file that cannot be read, before anything is run, or that
    gave no question to measure, before anything is written."""
    _check_applies(args)
    arms = _arms(args.arms)
    missing = missing_package(arms)
    if missing is not None:
        raise EvaluationRefused(missing)
    refusal = model_only(args.store, args.tokenizer, args.scoring)
    if refusal is not None:
        raise EvaluationRefused(refusal)
    _check_target(args.output, "--output", args)
    _check_target(args.plot, "--plot", args)
    plot_refusal = None if args.plot is None else report.plot_refusal(args.plot)
    if plot_refusal is not None:
        raise EvaluationRefused(plot_refusal)
    dataset = _dataset(args)
    progress = _progress()
    result = evaluate(
        dataset,
        arms,
        store=args.store,
        tokenizer=args.tokenizer,
        scoring=args.scoring,
        timing=not args.no_timing,
        progress=progress,
    )
    if progress is not None:
        sys.stderr.write("\n")
    _check_measured(args.path, result["dataset"])
    if args.output is not None:
        _write(args.output, "--output", report.to_json(result))
    if args.plot is not None:
        _write(args.plot, "--plot", report.plot(result))
    return result


def _check_measured(path: Path | None, dataset: dict[str, Any]) -> None:
    """Refuse a dataset file that gave no question to measure (an empty
    array, or every question left out): its result would be a table of
    nothing, read as a pass.  Before ``--output`` or ``--plot`` is written."""
    if dataset["queries"]:
        return
    left_out = "; ".join(f"{why}: {count:,}" for why, count in dataset["excluded"].items())
    raise DatasetFileError(
        f"{path}: no question to measure in {dataset['haystacks']:,} "
        f"{'haystack' if dataset['haystacks'] == 1 else 'haystacks'}"
        + (f" (left out: {left_out})" if left_out else "")
        + f"; is it the {dataset['name']} file?"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m roteiro_memory.evaluation")
    configure(parser)
    args = parser.parse_args(argv)
    try:
        result = run(args)
    except EvaluationRefused as error:
        parser.error(str(error))
    except DatasetFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return ExitCode.USAGE
    sys.stdout.write(report.to_json(result) if args.json else report.table(result))
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
