"""A page to publish: several conformance reports side by side, in one HTML file.

Implementations are the columns, capabilities, their invariants and their
cases the rows, each cell the verdict, and each failed cell a link to the text
of what the case found.  Two reports of the same implementation (by its
``implementation`` from hello, else its backend spec) are two columns, and a
section lists what changed between the first and the last of them.  The
page is self-contained -- styles inline, no script, no request for anything
-- so it can be attached, archived or served as it is.

This module does not import pytest.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roteiro_memory.suite.vocabulary import CAPABILITIES, CORE

__all__ = ["Column", "columns", "render_page"]

JSON = Any
_ORDER = (CORE, *CAPABILITIES)
_SHOWN = {
    "passed": "passed",
    "failed": "failed",
    "known-failing": "known failing",
    "skipped": "skipped",
    "not run": "not run",
    "full": "full",
    "partial": "partial",
    "none": "none",
}
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1b1b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #c8c8c8; padding: 2px 8px; text-align: left; vertical-align: top; }
thead th { background: #eee; position: sticky; top: 0; }
tr.capability th { background: #dde4ee; font-size: 1.05em; }
tr.invariant th { padding-left: 1.2em; font-weight: 600; }
tr.case th { padding-left: 2.4em; font-weight: normal; }
td.passed, td.full { background: #d7f0d7; } td.failed, td.none { background: #f6d0d0; }
td.partial, td.known-failing { background: #f7ebc4; }
td.skipped, td.not-run { background: #f0f0f0; color: #666; }
.rules { color: #555; font-size: 0.85em; }
pre { white-space: pre-wrap; background: #f7f7f7; border: 1px solid #ddd; padding: 0.6em; }
section.breach:target { outline: 3px solid #c33; }
"""


@dataclass(frozen=True)
class Column:
    """One report as a column of the page."""

    key: str
    """The anchor prefix of its breaches (``r1``)."""
    label: str
    implementation: str
    report: Mapping[str, JSON]


def _identity(report: Mapping[str, JSON]) -> str:
    return str(report.get("implementation") or report.get("backend") or "unnamed")


def columns(reports: Sequence[Mapping[str, JSON]]) -> list[Column]:
    """The reports as columns, in the order given; a second report of the same
    implementation is labelled with its place among them."""
    seen: dict[str, int] = {}
    for report in reports:
        seen[_identity(report)] = seen.get(_identity(report), 0) + 1
    count: dict[str, int] = {}
    out = []
    for index, report in enumerate(reports):
        name = _identity(report)
        count[name] = count.get(name, 0) + 1
        label = name if seen[name] == 1 else f"{name} (report {count[name]} of {seen[name]})"
        out.append(Column(f"r{index + 1}", label, name, report))
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def _cell(status: str, link: str | None = None) -> str:
    shown = html.escape(_SHOWN.get(status, status))
    body = f'<a href="#{link}">{shown}</a>' if link else shown
    return f'<td class="{_slug(status)}">{body}</td>'


def _by(items: Sequence[Mapping[str, JSON]], key: str) -> dict[str, Mapping[str, JSON]]:
    return {str(item[key]): item for item in items}


def _rows(cols: Sequence[Column]) -> list[str]:
    compliance = [_by(c.report["compliance"], "capability") for c in cols]
    invariants = [_by(c.report["invariants"], "tag") for c in cols]
    cases = [_by(c.report["cases"], "case") for c in cols]
    titles: dict[str, Mapping[str, JSON]] = {}
    for found in invariants:
        for tag, entry in found.items():
            titles.setdefault(tag, entry)
    rows = []
    for capability in _ORDER:
        tags = [t for t, entry in titles.items() if entry["capability"] == capability]
        if not tags:
            continue
        cells = "".join(
            _cell(str(found[capability]["level"]) if capability in found else "not run")
            for found in compliance
        )
        rows.append(
            f'<tr class="capability"><th colspan="2">{html.escape(capability)}</th>{cells}</tr>'
        )
        for tag in sorted(tags):
            rules = sorted({r for found in invariants for r in found.get(tag, {}).get("rules", ())})
            cells = "".join(
                _cell(str(found[tag]["verdict"]) if tag in found else "not run")
                for found in invariants
            )
            rows.append(
                f'<tr class="invariant"><th>{html.escape(tag)}</th>'
                f'<td class="rules">{html.escape(" ".join(rules))}</td>{cells}</tr>'
            )
            ids = sorted({c for found in invariants for c in found.get(tag, {}).get("cases", ())})
            for case_id in ids:
                entries = [found.get(case_id) for found in cases]
                rules_of = next((e.get("rules", ()) for e in entries if e), ())
                cells = "".join(
                    _cell(
                        str(entry["status"]),
                        f"{col.key}-{_slug(case_id)}" if entry["status"] != "passed" else None,
                    )
                    if entry
                    else _cell("not run")
                    for col, entry in zip(cols, entries, strict=True)
                )
                rows.append(
                    f'<tr class="case" id="case-{_slug(case_id)}"><th>{html.escape(case_id)}</th>'
                    f'<td class="rules">{html.escape(" ".join(rules_of))}</td>{cells}</tr>'
                )
    return rows


def _breaches(cols: Sequence[Column]) -> list[str]:
    out = []
    for col in cols:
        for case in col.report["cases"]:
            if case["status"] == "passed":
                continue
            anchor = f"{col.key}-{_slug(str(case['case']))}"
            text = str(case.get("message") or "").strip() or str(case["status"])
            status = html.escape(_SHOWN.get(case["status"], case["status"]))
            out.append(
                f'<section class="breach" id="{anchor}"><h3>{html.escape(col.label)}: '
                f"{html.escape(str(case['case']))} ({status})</h3>"
                f"<p>{html.escape(str(case['file']))}:{html.escape(str(case['line']))}, invariant "
                f"{html.escape(str(case['invariant']))}</p><pre>{html.escape(text)}</pre></section>"
            )
    return out


def _changes(cols: Sequence[Column]) -> list[str]:
    out = []
    by_name: dict[str, list[Column]] = {}
    for col in cols:
        by_name.setdefault(col.implementation, []).append(col)
    for name, same in by_name.items():
        if len(same) < 2:
            continue
        first, last = _by(same[0].report["cases"], "case"), _by(same[-1].report["cases"], "case")
        rows = []
        for case_id in sorted(set(first) | set(last)):
            before = str(first[case_id]["status"]) if case_id in first else "absent"
            after = str(last[case_id]["status"]) if case_id in last else "absent"
            if before != after:
                rows.append(
                    f"<tr><th>{html.escape(case_id)}</th>{_cell(before)}{_cell(after)}</tr>"
                )
        head = (
            f"<h3>{html.escape(name)}: {html.escape(same[0].label)} to "
            f"{html.escape(same[-1].label)}</h3>"
        )
        if rows:
            out.append(
                f'{head}<table class="changes"><thead><tr><th>case</th><th>before</th>'
                f"<th>after</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            )
        else:
            out.append(f"{head}<p>No case changed.</p>")
    return out


def _suite_line(cols: Sequence[Column]) -> str:
    digests = {(c.report["suite"]["version"], c.report["suite"]["protocol_sha256"]) for c in cols}
    judged = ", ".join(
        f"roteiro-memory {v} (PROTOCOL.md sha256 {d[:12]})" for v, d in sorted(digests)
    )
    warning = (
        " <strong>These reports were judged by different rules; compare them with care.</strong>"
        if len({d for _, d in digests}) > 1
        else ""
    )
    return f"<p>Judged by {html.escape(judged)}.{warning}</p>"


def render_page(reports: Sequence[Mapping[str, JSON]], title: str = "Conformance matrix") -> str:
    """The page for ``reports`` (``roteiro.conformance-report/v1`` documents),
    each shown as :func:`~roteiro_memory.suite.report.shown_report` shows
    it: no DSN password, even from a report written before they were withheld."""
    from roteiro_memory.suite.report import shown_report

    cols = columns([shown_report(report) for report in reports])
    heads = "".join(
        f'<th>{html.escape(c.label)}<br><span class="rules">{html.escape(str(c.report["backend"]))}'
        f"</span></th>"
        for c in cols
    )
    totals = "".join(
        "<td>" + html.escape(", ".join(f"{n} {s}" for s, n in c.report["totals"].items())) + "</td>"
        for c in cols
    )
    changes = _changes(cols)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        _suite_line(cols),
        '<table class="matrix"><thead><tr><th>capability, invariant, case</th><th>rules</th>'
        f"{heads}</tr></thead><tbody>",
        f'<tr class="totals"><th colspan="2">cases</th>{totals}</tr>',
        *_rows(cols),
        "</tbody></table>",
    ]
    if changes:
        parts += ['<h2 id="changes">What changed</h2>', *changes]
    parts += ['<h2 id="breaches">What the cases found</h2>', *_breaches(cols), "</body></html>"]
    return "\n".join(parts) + "\n"
