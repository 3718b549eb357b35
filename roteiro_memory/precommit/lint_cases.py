"""``roteiro-lint-cases``: conformance case files that the suite can load.

Each file is validated by the suite's own loader
(:mod:`roteiro_memory.suite.cases`): the JSON Schema, invariant tags known to the
registry, ops the protocol has, references to values an earlier step saved,
capabilities that cover the ops.  A folder of case files is what the suite
loads together (``--roteiro-cases DIR``), so each folder is checked on its own:
against its ``invariants.yaml`` (checked itself when it is among the files)
over the shipped registry (a ``properties.yaml`` is checked against its own
schema and the property names; other reserved names are passed over), and for
case ids used twice -- by two of its
files, or by one of its files and a shipped file it does not replace (a file
replaces the shipped file of the same name).  pre-commit passes only the
files that changed, so the folder's other files are read for their ids.  Every
schema error of a file is reported, one line each.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.precommit.report import arguments, cannot_read, parser, report
from roteiro_memory.terminal import to_stderr

if TYPE_CHECKING:
    from roteiro_memory.suite.cases import Case, Invariant

__all__ = ["lint", "main"]


def _loadable(paths: Sequence[Path], registry: Mapping[str, Invariant]) -> list[Case]:
    """The cases of ``paths``, passing over a file that does not load: that
    is for the run that checks it."""
    from roteiro_memory.suite.cases import CaseFileError, load_file

    out: list[Case] = []
    for path in paths:
        try:
            out.extend(load_file(path, registry))
        except CaseFileError:
            continue
    return out


class _Shipped:
    """The shipped case files and their cases, read once, when first needed."""

    def __init__(self) -> None:
        self._cases: dict[str, list[Case]] | None = None

    def cases(self, replaced: set[str]) -> list[Case]:
        if self._cases is None:
            from roteiro_memory.suite.cases import case_files, load_registry

            registry = load_registry()
            self._cases = {p.name: _loadable([p], registry) for p in case_files(builtin=True)}
        return [c for name, cases in self._cases.items() if name not in replaced for c in cases]


def _lint_folder(folder: Path, paths: Sequence[Path], shipped: _Shipped | None) -> Iterator[str]:
    from roteiro_memory.suite.cases import (
        RESERVED_FILES,
        CaseFileError,
        case_files,
        claim_case_id,
        load_file,
        load_registry,
    )
    from roteiro_memory.suite.properties import PROPERTIES_FILE, load_properties

    try:
        registry = load_registry([folder])
    except CaseFileError as error:
        yield str(error)
        return
    for path in paths:
        if path.name == PROPERTIES_FILE:
            try:
                load_properties(path, registry)
            except CaseFileError as error:
                yield from map(str, error.every)
    cases = [p for p in paths if p.name not in RESERVED_FILES and not p.name.startswith("_")]
    # realpath, not Path.resolve: a symlink loop is a file that cannot be
    # read (said when it is loaded), not an error here.
    passed = {os.path.realpath(p) for p in cases}
    siblings = [
        p
        for p in case_files([folder], builtin=False)
        if p.is_file() and os.path.realpath(p) not in passed
    ]
    seen: dict[str, Case] = {}
    if shipped is not None:
        for case in shipped.cases({p.name for p in case_files([folder], builtin=False)}):
            seen.setdefault(case.id, case)
    for case in _loadable(siblings, registry):
        seen.setdefault(case.id, case)
    for path in cases:
        try:
            loaded = load_file(path, registry)
        except CaseFileError as error:
            yield from map(str, error.every)
            continue
        for case in loaded:
            duplicate = claim_case_id(seen, case)
            if duplicate is not None:
                yield str(duplicate)


def lint(files: Sequence[str], *, shipped: bool = True) -> Iterator[str]:
    """One finding per file that cannot be loaded, and per case id used twice."""
    from roteiro_memory.precommit.sniff import unreadable
    from roteiro_memory.suite.cases import CASE_FILE_SUFFIX

    by_folder: dict[Path, list[Path]] = {}
    seen: set[str] = set()
    for name in files:
        reason = unreadable(name)  # gone, in no folder, a name too long, no permission
        if reason is not None:
            yield str(cannot_read(name, reason))
            continue
        real = os.path.realpath(name)
        if real in seen:
            continue  # one file named twice, or by two names: linted once, never its own duplicate
        seen.add(real)
        path = Path(name)
        if not path.is_file():
            # Reading a FIFO would wait for a writer for ever.
            yield f"{name}: not a regular file, so not a case file (a case file is YAML text)"
            continue
        if not path.name.endswith(CASE_FILE_SUFFIX):
            # The suite would never run its cases: passing it would promise
            # what no run keeps (a .yml file, say).
            yield f"{name}: not a case file: the suite loads only files named *{CASE_FILE_SUFFIX}"
            continue
        by_folder.setdefault(path.parent, []).append(path)
    cache = _Shipped() if shipped else None
    for folder, paths in by_folder.items():
        yield from _lint_folder(folder, paths, cache)


def main(argv: Sequence[str] | None = None) -> int:
    cli = parser(
        "roteiro-lint-cases",
        "Validate conformance case files: schema, invariant tags, ops, unique case ids.",
    )
    cli.add_argument(
        "--no-shipped",
        dest="shipped",
        action="store_false",
        help="do not compare case ids with the cases this package ships",
    )
    cli.add_argument(
        "--install-requirements",
        action="store_true",
        help="first install the suite's requirements into this environment if they are "
        "missing (the pre-commit hook does, as pre-commit installs only the package)",
    )
    args = arguments(cli, argv)
    if not args.files:
        return int(ExitCode.OK)
    from roteiro_memory.suite.extras import ensure_suite

    missing = ensure_suite(
        "roteiro-lint-cases", ("yaml", "jsonschema"), install=args.install_requirements
    )
    if missing is not None:
        to_stderr(f"{missing}\n")
        return int(ExitCode.USAGE)
    return report(lint(args.files, shipped=args.shipped))


if __name__ == "__main__":
    raise SystemExit(main())
