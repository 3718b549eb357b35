"""``roteiro-lint-cases``: conformance case files that the suite can load.

Each file is validated by the suite's own loader
(:mod:`pytest_roteiro.cases`): the JSON Schema, invariant tags known to the
registry, ops the protocol has, references to values an earlier step saved,
capabilities that cover the ops.  Across the files, a case id may be used once,
and not by a shipped case the files do not replace (a file replaces the
shipped file of the same name, as the suite loads them).  An
``invariants.yaml`` among the files is the registry for its folder and is
checked itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from roteiro_memory.precommit.report import parser, report

if TYPE_CHECKING:
    from pytest_roteiro.cases import Case

__all__ = ["lint", "main"]


def _others(folders: Sequence[Path], passed: set[Path], *, shipped: bool) -> list[Case]:
    """The cases the suite would load beside the files passed: every case file
    in their folders, and the shipped files those folders do not replace.  A
    file that does not load is left to the run that checks it."""
    from pytest_roteiro.cases import CaseFileError, case_files, load_file, load_registry

    paths = case_files(folders, builtin=False)
    if shipped:
        names = {path.name for path in paths}
        paths += [path for path in case_files(builtin=True) if path.name not in names]
    registry = load_registry(folders)
    out: list[Case] = []
    for path in paths:
        if path.resolve() in passed:
            continue
        try:
            out.extend(load_file(path, registry))
        except CaseFileError:
            continue
    return out


def lint(files: Sequence[str], *, shipped: bool = True) -> Iterator[str]:
    """One finding per file that cannot be loaded, and per case id used twice."""
    from pytest_roteiro.cases import REGISTRY_FILE, CaseFileError, load_file, load_registry

    paths = [Path(name) for name in files]
    folders = sorted({path.parent for path in paths})
    try:
        registry = load_registry(folders)
    except CaseFileError as error:
        yield str(error)
        return
    cases = [p for p in paths if p.name != REGISTRY_FILE and not p.name.startswith("_")]
    seen: dict[str, Case] = {}
    for case in _others(folders, {p.resolve() for p in cases}, shipped=shipped):
        seen.setdefault(case.id, case)
    for path in cases:
        try:
            loaded = load_file(path, registry)
        except CaseFileError as error:
            yield str(error)
            continue
        for case in loaded:
            first = seen.setdefault(case.id, case)
            if first is not case:
                yield str(
                    CaseFileError(
                        path,
                        f"duplicate case id, first defined at {first.file}:{first.line}",
                        line=case.line,
                        case_id=case.id,
                    )
                )


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
    args = cli.parse_args(argv)
    return report(lint(args.files, shipped=args.shipped))


if __name__ == "__main__":
    raise SystemExit(main())
