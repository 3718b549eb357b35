"""Replays of generated repository histories, in every language with
symbols: after each commit -- definitions edited, renamed, deleted, added,
moved, the file edited outside them, its syntax broken and mended, the file
renamed -- every lesson's anchor reads the verdict the history's own ground
truth gives (:mod:`code_history`, which asks no parser and no store), the
graph holds exactly the file's definitions, and each earlier commit's graph
(``rev_graph``) gives that commit's verdicts too."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from code_history import RENDERERS, Truth, joined, plan, start, step, verdict
from test_graph import git

from roteiro_memory.repo.graph import find_repo, rev_graph, sync
from roteiro_memory.repo.languages import file_key, symbol_key, symbol_prefix
from roteiro_memory.stores.sqlite.store import SQLiteStore


@pytest.mark.parametrize("language", sorted(RENDERERS))
def test_every_verdict_of_a_generated_history_agrees_with_its_ground_truth(
    tmp_path: Path, language: str
) -> None:
    rng = random.Random(f"history of {language}")
    module = start(language, rng)
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    repo = find_repo(root)
    assert repo is not None
    store = SQLiteStore(tmp_path / "m.db")
    lessons: list[tuple[int, str, str, str]] = []
    """Each lesson: its id, the path and qualname it is anchored to, and that
    definition's text when it was written."""
    parsed: Truth = {}
    """The texts of the file as last parsed."""
    commits: list[tuple[str, str, Truth]] = []
    done: list[str] = []
    changes = plan(rng)
    while not done or changes or module.broken:
        if done:
            before = module.path
            done.append(step(module, "" if module.broken else changes.pop(), rng))
            if module.path != before:
                (root / module.path).parent.mkdir(parents=True, exist_ok=True)
                git(root, "mv", before, module.path)
        else:
            done.append("start")
        source, now = module.render()
        (root / module.path).write_text(source)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", done[-1])
        sync(store, repo)
        if not module.broken:
            parsed = now
            commits.append((git(root, "rev-parse", "HEAD").strip(), module.path, now))
            prefix = symbol_prefix(module.path)
            assert {n.key for n in store.export_graph() if n.key.startswith(prefix)} == {
                symbol_key(module.path, name) for name in now if name
            }, done

        states = {r.id: r.anchor_state.value for r in store.list().records}
        for lesson, path, qualname, captured in lessons:
            here = path == module.path
            wanted = verdict(
                captured, qualname, now if here else {}, parsed if here and module.broken else None
            )
            assert states[lesson] == wanted, (path, qualname, done)

        if not module.broken:
            for qualname in rng.sample(sorted(now), 2):
                key = symbol_key(module.path, qualname) if qualname else file_key(module.path)
                lesson = store.record("lesson", f"about {qualname or 'the file'}", anchor=key)
                lessons.append((lesson, module.path, qualname, joined(now[qualname])))

    made = {what.split()[0] for what in done}
    assert made >= {"edit", "rename", "delete", "add", "move", "break", "mend", "git"}, done
    for sha, path, then in commits:
        _, graph = rev_graph(repo, sha, store.export_graph())
        states = {r.id: r.anchor_state.value for r in store.list(graph=graph).records}
        for lesson, anchored, qualname, captured in lessons:
            wanted = verdict(captured, qualname, then if anchored == path else {}, None)
            assert states[lesson] == wanted, (sha, anchored, qualname)
    store.close()
