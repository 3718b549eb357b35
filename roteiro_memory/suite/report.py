"""The conformance report: per-invariant verdicts, the compliance table, the
JSON report and its Markdown summary, and the known-failures file.

Results come in as one dict per case (``case``, ``invariant``, ``capability``,
``status`` -- passed, failed, skipped or known-failing -- and ``message``).

This module does not import pytest.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roteiro_memory.suite.cases import Invariant, read_yaml
from roteiro_memory.suite.drivers import (
    check_replaceable,
    replace_file,
    shown_spec,
    strict_json,
    withholder,
)
from roteiro_memory.suite.errors import BackendFailure, CaseFileError, OpError
from roteiro_memory.suite.vocabulary import CAPABILITIES, CORE

if TYPE_CHECKING:
    from roteiro_memory.suite.cases import Case
    from roteiro_memory.suite.runner import Backend, Outcome

__all__ = [
    "REPORT_SCHEMA",
    "REPORT_SCHEMA_FILE",
    "KnownFailure",
    "Verdict",
    "build_report",
    "case_result",
    "compliance",
    "compliance_table",
    "declared_capabilities",
    "implementation",
    "invariant_verdicts",
    "judge",
    "load_known_failures",
    "markdown_summary",
    "project_path",
    "report_path_problem",
    "seed_line",
    "shown_report",
    "suite_identity",
    "summary_path",
    "write_report",
]

REPORT_SCHEMA = "roteiro.conformance-report/v1"
REPORT_SCHEMA_FILE = "report.schema.json"
"""The JSON Schema of the report, shipped with the cases."""
PROTOCOL = "roteiro.conformance/v1"
STATUSES = ("passed", "failed", "skipped", "known-failing")
_CAPABILITY_ORDER = (CORE, *CAPABILITIES)


@dataclass(frozen=True)
class KnownFailure:
    """A case expected to fail, and why."""

    id: str
    reason: str
    link: str | None = None

    def describe(self) -> str:
        return self.reason if self.link is None else f"{self.reason} ({self.link})"


def load_known_failures(path: Path) -> dict[str, KnownFailure]:
    """Read a known-failures file: a YAML list of ``{id, reason, link?}``."""
    if not path.is_file():
        if not path.exists():
            raise CaseFileError(path, "known-failures file does not exist")
        what = "a folder" if path.is_dir() else "not a regular file"
        raise CaseFileError(path, f"is {what}, where a known-failures file (YAML) was expected")
    document = read_yaml(path)
    if document is None:
        return {}
    if not isinstance(document, list):
        raise CaseFileError(path, "expected a YAML list of {id, reason, link?} entries")
    out: dict[str, KnownFailure] = {}
    for index, entry in enumerate(document):
        where = f"[{index}]"
        line = getattr(entry, "line", None)
        if not isinstance(entry, dict):
            raise CaseFileError(path, "expected a mapping {id, reason, link?}", path=where)
        extra = sorted(set(entry) - {"id", "reason", "link"})
        if extra:
            raise CaseFileError(
                path, f"unknown field(s) {extra}; allowed: id, reason, link", line=line, path=where
            )
        for name in ("id", "reason"):
            if not isinstance(entry.get(name), str) or not entry[name].strip():
                raise CaseFileError(
                    path, f"'{name}' must be a non-empty string", line=line, path=f"{where}.{name}"
                )
        link = entry.get("link")
        if link is not None and not isinstance(link, str):
            raise CaseFileError(path, "'link' must be a string", line=line, path=f"{where}.link")
        if entry["id"] in out:
            raise CaseFileError(path, f"{entry['id']!r} is listed twice", line=line, path=where)
        out[entry["id"]] = KnownFailure(entry["id"], entry["reason"], link)
    return out


@dataclass(frozen=True)
class Verdict:
    """What a run makes of one outcome, the known-failures file considered.

    ``status`` is passed, failed, skipped or known-failing.  ``message`` is
    what to show; for a failure it is None when the outcome itself (its
    step, expected and actual) is what to show.
    """

    status: str
    message: str | None = None


def judge(
    entry: str,
    status: str,
    message: str,
    known: KnownFailure | None,
    *,
    listed_in: Path | None,
) -> Verdict:
    """The verdict on ``entry`` (``case ID`` or ``property ID``) whose run
    ended with ``status`` and ``message``.

    A skip stays a skip.  An entry listed as a known failure is known-failing
    when it fails, and a failure when it passes: the file must not keep an
    entry that no longer fails, or it would hide that entry's next regression.
    """
    if status == "skipped":
        return Verdict("skipped", message)
    if known is not None:
        if status == "failed":
            return Verdict("known-failing", f"known failure: {known.describe()}")
        return Verdict(
            "failed",
            f"{entry} is listed in {listed_in} ({known.reason}) but now passes: "
            "remove it from that file",
        )
    if status == "failed":
        return Verdict("failed")
    return Verdict("passed")


def declared_capabilities(backend: Backend | None) -> list[str] | None:
    """The capabilities ``backend`` declared, if its hello has been answered."""
    if backend is None:
        return None
    try:
        return sorted(backend.capabilities())
    except (OpError, BackendFailure):
        return None


def implementation(backend: Backend | None) -> str | None:
    """The implementation's name and version from hello, when it gives them."""
    describe = getattr(backend, "implementation", None)
    if not callable(describe):
        return None
    try:
        found = describe()
    except (OpError, BackendFailure):
        return None
    return found if isinstance(found, str) else None


def case_result(
    case: Case,
    registry: Mapping[str, Invariant],
    backend: Backend | None,
    outcome: Outcome | None,
) -> dict[str, Any]:
    """One case's entry in the report, before its status is known (the
    reporter adds ``status`` and ``message``)."""
    return {
        "case": case.id,
        "title": case.title,
        "file": case.file.name,
        "path": project_path(case.file),
        "line": case.line,
        "invariant": case.invariant,
        "rules": list(case.rules),
        "capability": registry[case.invariant].capability,
        "requires": list(case.requires),
        "declared": declared_capabilities(backend),
        "implementation": implementation(backend),
        "outcome": outcome.to_json() if outcome is not None else None,
    }


def project_path(file: Path) -> str:
    """How a report names the file of a case: by its path from the folder
    the suite runs in (a project's root), as a finding names it, where the
    file lies in that folder; else by its name alone, so that no report
    carries a path outside the project (a home folder, where the package is
    installed)."""
    try:
        return Path(os.path.abspath(file)).relative_to(os.getcwd()).as_posix()
    except ValueError:
        return file.name


def invariant_verdicts(
    results: Iterable[Mapping[str, Any]], registry: Mapping[str, Invariant]
) -> dict[str, str]:
    """Each invariant's verdict over its cases: failed if any case failed,
    else known-failing if any is, else skipped if none ran, else passed;
    ``not run`` when no case of it was selected."""
    by_tag: dict[str, list[str]] = {tag: [] for tag in registry}
    for result in results:
        by_tag.setdefault(result["invariant"], []).append(result["status"])
    verdicts: dict[str, str] = {}
    for tag, statuses in by_tag.items():
        if not statuses:
            verdicts[tag] = "not run"
        elif "failed" in statuses:
            verdicts[tag] = "failed"
        elif "known-failing" in statuses:
            verdicts[tag] = "known-failing"
        elif all(s == "skipped" for s in statuses):
            verdicts[tag] = "skipped"
        else:
            verdicts[tag] = "passed"
    return verdicts


def compliance(
    results: Sequence[Mapping[str, Any]], registry: Mapping[str, Invariant]
) -> list[dict[str, Any]]:
    """One row per capability: invariant counts by verdict and a level --
    ``full`` (every invariant that ran passed), ``none`` (none passed),
    ``partial``, or ``not run``.  Only invariants with a case that ran count
    towards the level; ``not run`` counts those whose cases were all skipped
    (a capability not declared) or not selected, so a backend declaring only
    some capabilities can be ``full`` on each of them."""
    verdicts = invariant_verdicts(results, registry)
    rows = []
    for capability in _CAPABILITY_ORDER:
        tags = [t for t, inv in registry.items() if inv.capability == capability]
        if not tags:
            continue
        counts = {status: 0 for status in (*STATUSES, "not run")}
        for tag in tags:
            counts[verdicts[tag]] += 1
        counts["not run"] += counts["skipped"]
        ran = len(tags) - counts["not run"]
        if ran == 0:
            level = "not run"
        elif counts["passed"] == ran:
            level = "full"
        elif counts["passed"] == 0:
            level = "none"
        else:
            level = "partial"
        rows.append({"capability": capability, "invariants": len(tags), **counts, "level": level})
    return rows


_COLUMNS = ("capability", "invariants", "passed", "failed", "known-failing", "not run", "level")


def compliance_table(
    results: Sequence[Mapping[str, Any]], registry: Mapping[str, Invariant]
) -> list[str]:
    """The compliance table as aligned text lines, with the case totals."""
    rows = compliance(results, registry)
    cells = [list(_COLUMNS)] + [[str(row[c]) for c in _COLUMNS] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    totals = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
    lines.append(
        f"cases: {len(results)} run, "
        + ", ".join(f"{totals[s]} {s}" for s in STATUSES)
        + "; invariants counted per capability (an invariant fails if any of its cases fails;"
        " 'not run' when none of its cases ran, which leaves the level alone)"
    )
    return lines


def suite_identity() -> dict[str, str]:
    """Which suite judged: its version, the protocol it checks, and the
    SHA-256 of the ``PROTOCOL.md`` it read, so two reports can be compared
    knowing they were judged by the same rules."""
    from roteiro_memory.suite.data import builtin_dir, suite_version
    from roteiro_memory.suite.rules import PROTOCOL_FILE

    page = (builtin_dir() / PROTOCOL_FILE).read_bytes()
    return {
        "version": suite_version(),
        "protocol": PROTOCOL,
        "protocol_sha256": hashlib.sha256(page).hexdigest(),
    }


def build_report(
    results: Sequence[Mapping[str, Any]],
    registry: Mapping[str, Invariant],
    backend: str,
    seed: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON report (``roteiro.conformance-report/v1``, whose shape
    ``report.schema.json`` gives) of one run, as :func:`shown_report` shows
    it.  ``backend`` is the spec as given, never as shown: the report
    records it as :func:`~roteiro_memory.suite.drivers.shown_spec` shows it,
    and withholds the passwords it carries from the free text -- a spec
    already shown carries none but ``<password>``, and would leave them in."""
    verdicts = invariant_verdicts(results, registry)
    declared = next((r["declared"] for r in results if r.get("declared") is not None), None)
    implementation = next((r["implementation"] for r in results if r.get("implementation")), None)
    report = {
        "schema": REPORT_SCHEMA,
        "suite": suite_identity(),
        "backend": backend,
        "implementation": implementation,
        "declared_capabilities": declared,
        "notes": list(notes),
        "properties": dict(seed) if seed is not None else None,
        "totals": {s: sum(1 for r in results if r["status"] == s) for s in STATUSES},
        "compliance": compliance(results, registry),
        "invariants": [
            {
                "tag": tag,
                "title": inv.title,
                "clause": inv.clause,
                "capability": inv.capability,
                "verdict": verdicts[tag],
                "cases": sorted(r["case"] for r in results if r["invariant"] == tag),
                "rules": sorted(
                    {rule for r in results if r["invariant"] == tag for rule in r.get("rules", ())}
                ),
            }
            for tag, inv in registry.items()
        ],
        "cases": sorted(results, key=lambda r: (r["file"], r["line"])),
    }
    return shown_report(report)


def shown_report(report: Mapping[str, Any]) -> dict[str, Any]:
    """``report`` as it may be written or shown: its ``backend`` as
    :func:`~roteiro_memory.suite.drivers.shown_spec` shows the spec (any
    DSN's password withheld), and the passwords that spec carries withheld
    from every other text it holds, at any depth -- a program may echo its
    command line anywhere: on stderr, in a message, in an answer, in its
    implementation's name.  So the spec in ``backend`` must be the one
    given, as :func:`build_report` puts it there (and as a report written
    before the spec was shown holds it, which is then published without
    them too): from a spec already shown, the only password to withhold is
    ``<password>``.  A number JSON cannot carry (NaN, an infinity: a case
    may send one) is shown as its name, a string.  The report still fits
    its schema."""
    spec = str(report.get("backend", ""))
    withhold = withholder(spec)

    def shown(value: Any) -> Any:
        if isinstance(value, str):
            return withhold(value)
        if isinstance(value, float) and not math.isfinite(value):
            return _NONFINITE[str(value)]
        if isinstance(value, Mapping):
            return {shown(key): shown(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [shown(item) for item in value]
        return value

    out = {key: shown(value) for key, value in report.items()}
    out["backend"] = shown_spec(spec)
    return out


_NONFINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
"""A number JSON cannot carry, shown by the name a lenient parser gives it."""


def markdown_summary(report: Mapping[str, Any]) -> str:
    """The Markdown page written beside the JSON report (shown as
    :func:`shown_report` shows it).  What a backend or a case file wrote --
    the spec, the implementation's name, notes, ids, messages -- stays text:
    inline it is escaped or a code span, a message is fenced by more
    backticks than it holds in a row, so none of it can close its fence or
    be read as Markdown or HTML."""
    report = shown_report(report)
    out = [f"# Conformance report: {_code(report['backend'])}", ""]
    totals = report["totals"]
    out.append(", ".join(f"{totals[s]} {s}" for s in STATUSES) + " cases.")
    if report.get("implementation"):
        out += ["", f"Implementation: {_code(report['implementation'])}."]
    declared = report.get("declared_capabilities")
    if declared is not None:
        out += ["", f"Declared capabilities: {', '.join(declared) or 'none'}."]
    if report.get("properties"):
        out += ["", seed_line(report["properties"]["seed"], report["properties"]["explore"])]
    suite = report.get("suite")
    if suite:
        out += [
            "",
            f"Judged by roteiro-memory {suite['version']} ({suite['protocol']}, PROTOCOL.md "
            f"sha256 {suite['protocol_sha256'][:12]}).",
        ]
    for note in report.get("notes") or ():
        out += ["", f"Note: {_text(str(note))}"]
    out += ["", "## Compliance by capability", ""]
    out.append("| " + " | ".join(_COLUMNS) + " |")
    out.append("|" + "---|" * len(_COLUMNS))
    for row in report["compliance"]:
        out.append("| " + " | ".join(str(row[c]) for c in _COLUMNS) + " |")
    out += ["", "## Invariants", ""]
    out += ["| invariant | capability | verdict | cases |", "|---|---|---|---|"]
    for inv in report["invariants"]:
        tag = _code(inv["tag"]).replace("|", "\\|")  # a table's cell ends at a bare |
        out.append(f"| {tag} | {inv['capability']} | {inv['verdict']} | {len(inv['cases'])} |")
    problems = [c for c in report["cases"] if c["status"] != "passed"]
    if problems:
        out += ["", "## Cases not passed", ""]
        for case in problems:
            out.append(f"### {_code(case['case'])} -- {case['status']}")
            out.append("")
            out.append(
                f"{_code(case['file'])}:{case['line']}, invariant {_code(case['invariant'])}"
            )
            if case["message"]:
                out += ["", *_fenced(case["message"].rstrip())]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _text(text: str) -> str:
    """``text`` as Markdown prose that reads as itself: on one line, every
    ASCII punctuation character backslash-escaped (CommonMark lets each be),
    so none begins markup, a table cell's end or an HTML tag."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", " ".join(text.split()))


def _code(text: str) -> str:
    """``text`` as a Markdown code span, on one line: delimited by one
    backtick more than the longest run it holds, padded so a backtick at
    either end is its own."""
    flat = " ".join(str(text).split())
    ticks = "`" * (_longest_run(flat, "`") + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def _fenced(text: str) -> list[str]:
    """``text`` as a fenced code block: a fence of more backticks than any
    run the text holds (at least three), which no line of it can close."""
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return [fence, text, fence]


def _longest_run(text: str, mark: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(mark)}+", text)), default=0)


def seed_line(seed: int, explore: bool) -> str:
    """How the properties drew their sequences, and how to draw them again."""
    if explore:
        return (
            f"Properties explored with seed {seed}: --roteiro-seed {seed} repeats this run; "
            "pin what they found by pasting the case they printed."
        )
    return (
        f"Properties used the fixed seed {seed}, the same every run; "
        "--roteiro-explore tries new sequences."
    )


def write_report(
    path: Path,
    *,
    results: Sequence[Mapping[str, Any]],
    registry: Mapping[str, Invariant],
    backend: str,
    seed: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> tuple[Path, Path]:
    """Write the JSON report to ``path`` and its Markdown summary beside it
    (:func:`summary_path`); both paths are returned.  ``backend`` is the spec
    as given (:func:`build_report`), written only as shown.  ``seed`` is
    ``{"seed": N, "explore": bool}`` when properties ran.  The report is
    strict JSON, as the wire is: a lone surrogate a backend answered is
    written as the six characters of its escape
    (:func:`~roteiro_memory.errors.strict_json`), in the summary too.
    Each file is written whole or not at all
    (:func:`~roteiro_memory.suite.drivers.replace_file`): a write that fails half-way
    leaves the one there before as it was.  Raises OSError when either
    cannot be written."""
    report = build_report(results, registry, backend, seed, notes)
    text = strict_json(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
    summary = strict_json(markdown_summary(report))
    md = summary_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, lambda out: print(text, file=out))
    replace_file(md, lambda out: print(summary, end="", file=out))
    return path, md


def summary_path(path: Path) -> Path:
    """Where the Markdown summary of the report at ``path`` is written."""
    return path.with_suffix(".md")


def report_path_problem(path: Path) -> str | None:
    """Why the report cannot be written to ``path`` (nor its summary beside
    it), found before a run rather than after it; None when both can be.
    A path ending in ``.md`` is refused: the summary's name is the report's
    with ``.md``, and would be the same file.  A folder that does not exist
    yet is made when the report is written, under one that does.  Each file
    is written beside its place and moved into it, so what must be writable
    is the folder; what is there is never opened, and must be a file to
    replace (:func:`~roteiro_memory.suite.drivers.check_replaceable`): not a
    FIFO, a device or a stream."""

    if path.suffix.lower() == ".md":
        return (
            f"{path} ends in .md, which names the Markdown summary written beside the JSON "
            f"report; give the JSON report's path (e.g. {path.with_suffix('.json')})"
        )
    for target in (path, summary_path(path)):
        if target.is_dir():
            return f"{target} is a folder, not a file to write"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"{path} cannot be made: {folder} is not a folder"
    for target in (path, summary_path(path)):
        try:
            check_replaceable(target)
        except OSError as error:
            return f"{target} cannot be replaced: {error.strerror or error}"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return f"{path} cannot be written: {error.strerror or error}"
    return None
