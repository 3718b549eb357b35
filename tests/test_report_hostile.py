"""Reports of a hostile backend: every text a backend supplies -- its
implementation's name, its answers, its refusals, its stderr -- may carry a DSN
password, markup, backtick fences, lone surrogates; an argument may be NaN.
The JSON report is strict JSON holding no password, the Markdown summary and
the published page show that text as text, and ``roteiro-conformance
report`` refuses a file it cannot publish in one line."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roteiro_memory.precommit.conformance import main
from roteiro_memory.precommit.conformance_report import ReportError, load_report
from roteiro_memory.suite.cases import load_cases, load_registry
from roteiro_memory.suite.drivers import InProcessBackend
from roteiro_memory.suite.pipes import strict_loads
from roteiro_memory.suite.publish import render_page
from roteiro_memory.suite.report import build_report, case_result, write_report
from roteiro_memory.suite.runner import format_outcome, run_case

SECRET = "s3cretpw"
RAW = f"postgres:postgresql://alice:{SECRET}@db.example/mem"
MARKUP = '<img src=x onerror=alert(1)>"><script>alert(2)</script>'
FENCE = "x\n````\n# Injected heading\n" + MARKUP + "\n"


class _Refused(Exception):
    kind = "Corrupt"


class _Hostile:
    """Declares episodic under a name that is markup, and refuses every op
    with a message that breaks fences, quotes the DSN and holds a lone surrogate."""

    def call(self, op: str, args: Any = None) -> Any:
        if op == "hello":
            return {
                "protocol": "roteiro.conformance/v1",
                "capabilities": ["episodic"],
                "implementation": {"name": MARKUP, "version": "1 ``` `|`"},
            }
        if op == "reset":
            return None
        raise _Refused(f"{FENCE} connecting to {RAW} \ud800")


def _results() -> list[dict[str, Any]]:
    registry = load_registry()
    backend = InProcessBackend(_Hostile(), RAW)
    cases = [c for c in load_cases() if set(c.requires) <= {"episodic"}][:3]
    results = []
    for case in cases:
        outcome = run_case(case, backend)
        outcome = dataclasses.replace(
            outcome,
            stderr=f"started as ['--db', '{RAW[9:]}']\n{FENCE}",
            args={"confidence": float("nan"), "said": MARKUP},
        )
        assert outcome.status == "failed"
        results.append(
            {
                **case_result(case, registry, backend, outcome),
                "status": outcome.status,
                "message": format_outcome(case, outcome),
            }
        )
    return results


def _texts(value: Any) -> Iterator[str]:
    """Every string in ``value``, keys included, at any depth."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _texts(key)
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("report")
    return write_report(
        folder / "report.json",
        results=_results(),
        registry=load_registry(),
        backend=RAW,
        notes=[f"reading {RAW} wrote to it: {MARKUP}"],
    )


def test_the_report_holds_the_dsn_password_in_no_text_at_any_depth() -> None:
    report = build_report(_results(), load_registry(), RAW, notes=[f"note on {RAW}"])
    found = [text for text in _texts(report) if SECRET in text]
    assert found == []
    assert any("<password>" in text for text in _texts(report["cases"][0]["outcome"]["stderr"]))


def test_the_written_report_is_strict_json_without_the_password(
    written: tuple[Path, Path],
) -> None:
    """NaN is written as its name and a lone surrogate as the text of its
    escape, so the report reads back as strict JSON and fits its schema."""
    report_file, summary = written
    raw = report_file.read_bytes()
    report = strict_loads(raw)
    assert SECRET.encode() not in raw
    assert SECRET not in summary.read_text(encoding="utf-8")
    assert report["cases"][0]["outcome"]["args"]["confidence"] == "NaN"
    assert any("\\ud800" in text for text in _texts(report))
    assert load_report(report_file) == report


def test_a_report_file_starting_with_a_byte_order_mark_is_refused_saying_so(
    written: tuple[Path, Path], tmp_path: Path
) -> None:
    """RFC 8259 forbids a byte-order mark before JSON text; the report is
    refused in the library's one wording of that, not Python's."""
    report_file, _ = written
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + report_file.read_bytes())
    with pytest.raises(ReportError) as caught:
        load_report(marked)
    assert str(caught.value) == (
        f"{marked}: starts with a byte-order mark (U+FEFF): expected UTF-8 JSON text without one"
    )


def _outside_code(markdown: str) -> Iterator[str]:
    """The Markdown's lines outside fenced blocks, less their code spans and
    backslash-escaped characters: what a renderer may read as markup."""
    fence: str | None = None
    for line in markdown.splitlines():
        run = re.fullmatch(r"(`{3,})\s*", line)
        if fence is None and run:
            fence = run[1]
        elif fence is not None:
            if run and len(run[1]) >= len(fence):
                fence = None
        else:
            spans_removed = re.sub(r"(`+)(.+?)(?<!`)\1(?!`)", "", line)
            yield re.sub(r"\\[!-/:-@\[-`{-~]", "", spans_removed)  # escaped: shown as itself
    assert fence is None, "a fence was left open"


def test_backend_text_in_the_markdown_summary_stays_in_its_fence_or_span(
    written: tuple[Path, Path],
) -> None:
    markdown = written[1].read_text(encoding="utf-8")
    assert MARKUP in markdown  # shown, as code
    for line in _outside_code(markdown):
        assert "<" not in line, line
        assert not line.startswith("# Injected"), line


def test_a_published_page_shows_every_backend_string_as_text() -> None:
    """Two reports of one implementation whose every backend-supplied string
    is markup: the matrix, the breaches and what changed between them."""
    first = build_report(_results(), load_registry(), RAW)
    second = json.loads(json.dumps(first))
    second["cases"][0]["status"] = "passed"
    page = render_page([first, second])
    assert "What changed" in page
    for tag in ("<img", "<script", "</script"):
        assert tag not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[" * 100000, "nested too deeply"),
        ('{"schema": "roteiro.conformance-report/v1", "backend": "\\ud800"}', "lone surrogate"),
        ('{"confidence": NaN}', "the token NaN is not JSON"),
    ],
)
def test_a_report_that_cannot_be_published_is_one_line_and_leaves_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, problem: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    page = tmp_path / "page.html"
    page.write_text("the last page", encoding="utf-8")
    assert main(["report", str(bad), "--html", str(page)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1
    assert problem in said
    assert page.read_text(encoding="utf-8") == "the last page"


WRITES_WITHIN_A_FILE_SIZE_LIMIT = """
import resource, signal, sys
from pathlib import Path
from roteiro_memory.suite.cases import load_registry
from roteiro_memory.suite.report import write_report

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    write_report(Path(sys.argv[1]), results=[], registry=load_registry(), backend="memory")
except OSError as error:
    print(error.strerror)
    sys.exit(3)
"""


def test_a_report_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """A write that fails half-way (a full disk, here a file size limit)
    leaves the report and its summary as they were, and no other file."""
    report = tmp_path / "report.json"
    report.write_text("the last report", encoding="utf-8")
    summary = tmp_path / "report.md"
    summary.write_text("the last summary", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", WRITES_WITHIN_A_FILE_SIZE_LIMIT, str(report)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "File too large" in done.stdout
    assert report.read_text(encoding="utf-8") == "the last report"
    assert summary.read_text(encoding="utf-8") == "the last summary"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.md"]
