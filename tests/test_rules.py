"""Traceability both ways between PROTOCOL.md and the cases.

Every rule PROTOCOL.md states carries a tag, every tag is cited by a case,
every tag a case or the registry cites is defined, and every phrase a clause
quotes from PROTOCOL is on the page word for word -- so a reader can check
everything a case rests on from the files the project ships.
"""

from __future__ import annotations

import collections
import json
import re
import textwrap
import unicodedata
from pathlib import Path

import pytest

from roteiro_memory.suite.cases import Case, CaseFileError, load_cases, load_file, load_registry
from roteiro_memory.suite.durability import ENTRIES as DURABILITY_ENTRIES
from roteiro_memory.suite.rules import (
    RULE_TAG,
    protocol_rules,
    protocol_sections,
    protocol_text,
    quoted_phrases,
    unquoted_phrases,
)

_CITED_TAG = re.compile(r"\bP-[a-z0-9]+(?:-[a-z0-9]+)*")


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases()


def test_every_rule_has_a_well_formed_tag_and_some_text() -> None:
    rules = protocol_rules()
    assert len(rules) >= 60
    for tag, text in rules.items():
        assert RULE_TAG.match(tag), tag
        assert len(text.split()) >= 3, (tag, text)


def test_every_rule_is_cited_by_a_case(cases: list[Case]) -> None:
    """A YAML case, or a durability entry (which runs no YAML steps)."""
    cited = collections.Counter(tag for case in cases for tag in case.rules)
    cited.update(tag for entry in DURABILITY_ENTRIES for tag in entry.rules)
    uncited = [tag for tag in protocol_rules() if tag not in cited]
    assert not uncited, f"PROTOCOL.md rules no case cites: {uncited}"


def test_every_shipped_case_cites_a_rule(cases: list[Case]) -> None:
    bare = [case.id for case in cases if not case.rules]
    assert not bare, f"cases citing no PROTOCOL rule: {bare}"


def test_every_tag_mentioned_anywhere_is_defined(cases: list[Case]) -> None:
    """Clauses, registry entries and PROTOCOL.md itself name only defined rules."""
    rules = protocol_rules()
    texts = [case.clause for case in cases]
    texts += [inv.clause for inv in load_registry().values()]
    texts.append(protocol_text())
    named = {tag for text in texts for tag in _CITED_TAG.findall(text)}
    assert sorted(named - set(rules)) == []


def _quoting(cases: list[Case]) -> list[tuple[str, str, tuple[str, ...]]]:
    """Every clause that may quote PROTOCOL: the cases', the properties' and
    the registry's, with what it is and the rules it cites."""
    from roteiro_memory.suite.properties import load_properties, property_files

    registry = load_registry()
    found = [(f"case {case.id}", case.clause, case.rules) for case in cases]
    for path in property_files():
        found += [
            (f"property {spec.id}", spec.clause, spec.rules)
            for spec in load_properties(path, registry)
        ]
    found += [(f"invariant {inv.tag}", inv.clause, ()) for inv in registry.values()]
    return found


def test_every_phrase_quoted_from_protocol_is_on_the_page(cases: list[Case]) -> None:
    """In double quotes or in parentheses after ``PROTOCOL``; a miss shows the
    text of the rules the case cites, to quote from."""
    rules = protocol_rules()
    missing = []
    for what, clause, cited in _quoting(cases):
        for phrase in unquoted_phrases(clause):
            texts = "\n".join(f"    [{tag}] {rules[tag]}" for tag in cited)
            missing.append(f"{what} quotes {phrase!r}, not on the page; its rules say:\n{texts}")
    assert not missing, "\n".join(missing)


def test_clauses_quote_protocol_in_parentheses(cases: list[Case]) -> None:
    """Most cases quote the page's own words, so every one of those is checked."""
    quoted = [what for what, clause, _ in _quoting(cases) if quoted_phrases(clause)]
    assert len(quoted) > 120


def test_quoted_section_titles_exist() -> None:
    sections = protocol_sections()
    assert "The wire form" in sections
    assert "The rules, briefly" in sections
    for inv in load_registry().values():
        for title in re.findall(r'PROTOCOL "([^"]+)"', inv.clause):
            assert title in sections, (inv.tag, title)


def test_the_checker_finds_a_paraphrase_passed_off_as_a_quote() -> None:
    assert unquoted_phrases('PROTOCOL "An operation that fails changes nothing"') == []
    assert unquoted_phrases('PROTOCOL "A failed op leaves the store alone"') == [
        "A failed op leaves the store alone"
    ]
    assert unquoted_phrases('ADR-0013 "Scope"; "not on this page"') == []
    assert unquoted_phrases('PROTOCOL memory.get; "not on this page"') == ["not on this page"]
    # Markdown marks and line breaks do not count.
    assert unquoted_phrases('PROTOCOL "the entry returned shows the values from before"') == []
    # A phrase in parentheses is a quote too, nested parentheses and all.
    assert unquoted_phrases('PROTOCOL "Error kinds" (A failed operation leaves it alone)') == [
        "A failed operation leaves it alone"
    ]
    assert unquoted_phrases("PROTOCOL (null is accepted exactly where the tables say so)") == [
        "null is accepted exactly where the tables say so"
    ]
    assert (
        unquoted_phrases(
            "PROTOCOL (Generation = the largest id stored now, superseded included (0 when empty))"
        )
        == []
    )
    assert unquoted_phrases("ADR-0013 (not ours to check); memory.rs (nor this)") == []


def test_a_case_citing_an_undefined_rule_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "topic.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            cases:
              - id: c1
                title: t
                clause: c
                invariant: ids-never-reused
                rules: [P-ids, P-no-such-rule]
                requires: [episodic]
                steps: [{op: memory.record, args: {kind: lesson, body: x}}]
            """
        ),
        encoding="utf-8",
    )
    with pytest.raises(CaseFileError, match=r"at rules: unknown rule\(s\) P-no-such-rule"):
        load_file(path, load_registry())


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_cases_use_only_code_points_whose_unicode_properties_are_settled(
    cases: list[Case],
) -> None:
    """PROTOCOL [P-unicode]: whitespace and case mappings the same since Unicode 3.2."""
    texts: list[str] = []
    for case in cases:
        for step in case.steps:
            texts += _strings(dict(step.args))
            texts += [s for check in step.checks for s in _strings(check.value)]
            if step.raw is not None:
                try:
                    texts += _strings(json.loads(step.raw))
                except ValueError:
                    texts.append(step.raw)
    used = {ch for text in texts for ch in text if ord(ch) > 127}
    assert len(used) > 10
    old = unicodedata.ucd_3_2_0
    for ch in sorted(used):
        if 0xD800 <= ord(ch) <= 0xDFFF:
            continue  # a lone surrogate, which a case sends to be refused
        settled = old.category(ch) == unicodedata.category(ch) and (
            old.bidirectional(ch) == unicodedata.bidirectional(ch)
        )
        inert = not ch.isspace() and ch.lower() == ch == ch.upper()
        assert settled or inert, f"U+{ord(ch):04X} {unicodedata.name(ch, '?')}"


def test_every_durability_entry_cites_defined_rules() -> None:
    defined = protocol_rules()
    for entry in DURABILITY_ENTRIES:
        assert entry.rules, entry.id
        assert all(tag in defined for tag in entry.rules), (entry.id, entry.rules)


def test_the_departures_from_memory_rs_are_listed_in_one_place() -> None:
    """PROTOCOL's preface keeps what memory.rs decides; every rule that says in
    place that memory.rs does otherwise is a row of the one list, and every
    row names such a rule."""
    text = protocol_text()
    section = text[text.index("## Where this page departs from memory.rs") :]
    listed = set(re.findall(r"^\| \[(P-[a-z0-9-]+)\]", section, flags=re.MULTILINE))
    rules = protocol_rules()
    depart = {
        tag for tag, body in rules.items() if re.search(r"PROTOCOL decides[;:] memory\.rs", body)
    }
    assert listed == depart
    assert {"P-validate-anchor", "P-args-ranges", "P-limit-huge"} <= listed
