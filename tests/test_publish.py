"""``roteiro-conformance report``: the published page, as a real browser renders it.

The reports are made by the engine from real runs -- the reference model and
two broken backends of one implementation -- and the page is opened in
headless Chromium (Debian's, through its WebDriver): the test reads what the
page shows, follows a failed cell's link to the text of its breaches, and
checks the section on what changed between the two reports.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import mutants
import pytest

from roteiro_memory.precommit.conformance import main
from roteiro_memory.precommit.conformance_report import ReportError, load_report
from roteiro_memory.suite.cases import Case, load_cases, load_registry
from roteiro_memory.suite.drivers import InProcessBackend
from roteiro_memory.suite.report import build_report, case_result
from roteiro_memory.suite.runner import format_outcome, run_case

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
TOPICS = ("arguments", "capabilities")
WIDE = "integer-arguments-have-64-bit-ranges"
HIDDEN = "search-op-is-unsupported-without-search"


def _report(target: object, name: str, cases: list[Case]) -> dict[str, Any]:
    registry = load_registry()
    backend = InProcessBackend(target, name)
    results = []
    for case in cases:
        outcome = run_case(case, backend)
        message = "" if outcome.passed else format_outcome(case, outcome)
        results.append(
            {
                **case_result(case, registry, backend, outcome),
                "status": outcome.status,
                "message": message,
            }
        )
    return build_report(results, registry, name)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from roteiro_memory.stores.naming import open_store

    cases = [case for case in load_cases() if case.topic in TOPICS]
    folder = tmp_path_factory.mktemp("reports")
    made = [
        ("reference.json", open_store("memory"), "memory"),
        ("signed.json", mutants.SignedIds(), "tests.mutants:SignedIds"),
        ("hides.json", mutants.HidesSearchServesIt(), "tests.mutants:HidesSearchServesIt"),
    ]
    paths = []
    for file, target, name in made:
        path = folder / file
        path.write_text(json.dumps(_report(target, name, cases)), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def page(reports: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("page") / "matrix.html"
    assert main(["report", *map(str, reports), "--html", str(out)]) == 0
    return out


def _browser(profile: Path) -> Any:
    missing = [p for p in (CHROMIUM, DRIVER) if not Path(p).exists()]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("selenium")
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install {', '.join(missing)} (.ci/run does)")
        pytest.skip(f"needs {', '.join(missing)}: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(DRIVER))


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Any:
    profile = tmp_path_factory.mktemp("chromium-profile")
    driver = _browser(profile)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_the_page_shows_implementations_as_columns_and_cases_as_rows(
    browser: Any, page: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page.as_uri())
    assert browser.title == "Conformance matrix"
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "table.matrix thead th")]
    assert heads[2].startswith("roteiro-memory (memory)")
    assert heads[3].startswith("mutant 0.1.0 (report 1 of 2)")
    assert heads[4].startswith("mutant 0.1.0 (report 2 of 2)")
    row = browser.find_element(By.ID, f"case-{WIDE}")
    cells = row.find_elements(By.TAG_NAME, "td")
    assert [c.text for c in cells] == ["P-args-ranges P-args-types", "passed", "failed", "passed"]
    assert cells[2].value_of_css_property("background-color") == "rgba(246, 208, 208, 1)"
    assert cells[1].value_of_css_property("background-color") == "rgba(215, 240, 215, 1)"
    hidden = browser.find_element(By.ID, f"case-{HIDDEN}").find_elements(By.TAG_NAME, "td")
    assert [c.text for c in hidden[1:]] == ["skipped", "skipped", "failed"]
    levels = browser.find_elements(By.CSS_SELECTOR, "tr.capability")
    assert levels[0].text.split() == ["core", "full", "partial", "partial"]
    # Self-contained: nothing the browser would fetch.
    assert browser.find_elements(By.CSS_SELECTOR, "script, link, img, iframe") == []
    assert len(browser.get_screenshot_as_png()) > 10_000


def test_a_failed_cell_links_to_every_breach_of_its_case(browser: Any, page: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page.as_uri())
    target = f"r2-{WIDE}"
    section = browser.find_element(By.ID, target)
    cell = browser.find_element(By.ID, f"case-{WIDE}").find_elements(By.TAG_NAME, "td")[2]
    assert browser.execute_script("return window.scrollY") == 0
    cell.find_element(By.TAG_NAME, "a").click()
    assert browser.current_url.endswith(f"#{target}")
    assert browser.execute_script("return window.scrollY") > 0
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top", section)
    assert 0 <= top < 100
    assert section.is_displayed()
    text = section.text
    assert text.startswith(f"mutant 0.1.0 (report 1 of 2): {WIDE} (failed)")
    assert "(and 3 more breaches: 4 of 18 steps)" in text
    assert text.count("\nstep ") + text.count("  step ") == 4
    assert section.value_of_css_property("outline-style") == "solid"


def test_two_reports_of_one_implementation_show_what_changed(browser: Any, page: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(page.as_uri())
    heading = browser.find_element(By.ID, "changes")
    assert heading.text == "What changed"
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "table.changes tbody tr")]
    assert rows == [f"{WIDE} failed passed", f"{HIDDEN} skipped failed"]


def test_a_file_that_is_not_a_report_is_one_line_naming_it(
    tmp_path: Path, reports: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    document = json.loads(reports[0].read_text(encoding="utf-8"))
    del document["suite"]
    broken.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ReportError, match=r"broken.json: breaks report.schema.json at \$: 'suite'"):
        load_report(broken)
    out = tmp_path / "out.html"
    assert main(["report", str(reports[0]), str(broken), "--html", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"{broken}: breaks report.schema.json")
    assert not out.exists()


@pytest.mark.parametrize("stderr", ["closed", "full"])
def test_a_refusal_stderr_cannot_take_still_exits_2(tmp_path: Path, stderr: str) -> None:
    """The hook's one line is given up when stderr is closed or full; the
    status is still the refusal's, not an exception's."""
    import subprocess
    import sys

    broken = tmp_path / "broken.json"
    broken.write_text("{}", encoding="utf-8")

    def prepare() -> None:
        if stderr == "closed":
            os.close(2)
        else:
            os.dup2(os.open("/dev/full", os.O_WRONLY), 2)

    hook = [sys.executable, "-m", "roteiro_memory.precommit.conformance", "report"]
    done = subprocess.run(
        [*hook, str(broken), "--html", str(tmp_path / "out.html")],
        stdout=subprocess.DEVNULL,
        preexec_fn=prepare,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert not (tmp_path / "out.html").exists()


SECRET = "S3cr3tPw!"
RAW = f"postgres:postgresql://alice:{SECRET}@db.example/memory"


def test_a_published_page_never_shows_a_dsn_password(
    tmp_path: Path, reports: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A report written before the spec's password was withheld -- in its
    ``backend`` and in what a case printed -- is published without it."""
    document = json.loads(reports[0].read_text(encoding="utf-8"))
    document["backend"] = RAW
    document["implementation"] = None
    document["cases"][0]["message"] = f"backend {RAW!r} is in-process"
    old = tmp_path / "old.json"
    old.write_text(json.dumps(document), encoding="utf-8")
    out = tmp_path / "out.html"
    assert main(["report", str(old), "--html", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert SECRET not in page
    assert "postgres:postgresql://alice:&lt;password&gt;@db.example/memory" in page
