"""The hooks through the real ``pre-commit``: ``pre-commit try-repo`` with this
checkout as the hook repository, in a temporary git repository of inputs.

The checkout's files (committed or not) are copied into a temporary repository
and committed there, so what is tested is the working tree, whatever is
committed.  ``try-repo`` builds each hook's environment afresh from that
repository -- installing the package as a user's pre-commit would -- so these
tests need the package index (or a pip cache) and take a while; they live in
this module alone so a narrow run can leave them out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from precommit_plants import (
    BAD_CASES,
    BAD_STORES,
    GOOD_CASE,
    plant_backend_repo,
    plant_bad_store,
    plant_cases,
    plant_companions,
    plant_export,
    plant_foreign_sqlite,
    plant_store,
)
from test_precommit_check_store import EXPECTED as STORE_FINDINGS

from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[1]
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "hooks",
    "GIT_AUTHOR_EMAIL": "hooks@example.invalid",
    "GIT_COMMITTER_NAME": "hooks",
    "GIT_COMMITTER_EMAIL": "hooks@example.invalid",
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_IDENTITY}
    )


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's working tree, committed in a repository of its own."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    dest = tmp_path_factory.mktemp("hook-repo")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "the checkout under test")
    return dest


@pytest.fixture(scope="session")
def pre_commit_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = {**os.environ, **GIT_IDENTITY}
    env["PRE_COMMIT_HOME"] = str(tmp_path_factory.mktemp("pre-commit-home"))
    env["PRE_COMMIT_COLOR"] = "never"
    env.pop("ROTEIRO_MEMORY_DB", None)
    env.pop("SKIP", None)
    return env


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "user"
    repo.mkdir()
    _git(repo, "init", "-q")
    return repo


def try_repo(
    env: dict[str, str], hook_repo: Path, repo: Path, hook: str, files: Sequence[Path]
) -> tuple[int, str]:
    """``pre-commit try-repo HOOK_REPO HOOK --files ...`` in ``repo``; its
    status and everything it printed."""
    names = [str(f.relative_to(repo)) for f in files]
    _git(repo, "add", "--", *names)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(hook_repo),
            hook,
            "--color",
            "never",
            "--files",
            *names,
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_e2e_forbid_store(pre_commit_env: dict[str, str], hook_repo: Path, user_repo: Path) -> None:
    text = user_repo / "memory.db"
    text.write_text("a text file with a store's name\n")
    good = [text, plant_foreign_sqlite(user_repo / "fixture.db")]
    status, output = try_repo(pre_commit_env, hook_repo, user_repo, "roteiro-forbid-store", good)
    assert status == 0, output
    assert "Passed" in output

    store = plant_store(user_repo / "notes.bin")
    database, wal, shm = plant_companions(user_repo / "copies")
    export = plant_export(user_repo / "backup.jsonl", store)
    bad = [store, database, wal, shm, export]
    status, output = try_repo(pre_commit_env, hook_repo, user_repo, "roteiro-forbid-store", bad)
    assert status == 1, output
    for path in bad:
        name = path.relative_to(user_repo)
        assert f"{name}: " in output
        assert f"unstage it with: git rm --cached -- {name}\n" in output
    assert (
        f"notes.bin: a roteiro-memory store (schema version {SCHEMA_VERSION}) must not be committed"
        in output
    )
    assert "copies/memory.db-wal: the write-ahead log of a roteiro-memory store" in output
    assert "copies/memory.db-shm: the shared-memory index of a roteiro-memory store" in output
    assert "backup.jsonl: a roteiro-memory export must not be committed" in output


def test_e2e_check_store(pre_commit_env: dict[str, str], hook_repo: Path, user_repo: Path) -> None:
    text = user_repo / "notes.txt"
    text.write_text("not a store\n")
    good = [plant_store(user_repo / "good.sqlite"), plant_foreign_sqlite(user_repo / "f.db"), text]
    status, output = try_repo(pre_commit_env, hook_repo, user_repo, "roteiro-check-store", good)
    assert status == 0, output

    bad = [plant_bad_store(user_repo / f"{how}.sqlite", how) for how in sorted(BAD_STORES)]
    status, output = try_repo(pre_commit_env, hook_repo, user_repo, "roteiro-check-store", bad)
    assert status == 1, output
    for how in sorted(BAD_STORES):
        assert f"{how}.sqlite: {STORE_FINDINGS[how]}" in output, how


def test_e2e_lint_cases(pre_commit_env: dict[str, str], hook_repo: Path, user_repo: Path) -> None:
    good = user_repo / "conformance" / "extra.yaml"
    good.parent.mkdir()
    good.write_text(GOOD_CASE)
    status, output = try_repo(pre_commit_env, hook_repo, user_repo, "roteiro-lint-cases", [good])
    assert status == 0, output

    planted = {how: plant_cases(user_repo / how / "conformance", how) for how in sorted(BAD_CASES)}
    bad = [path for plant in planted.values() for path in plant.files]
    status, output = try_repo(pre_commit_env, hook_repo, user_repo, "roteiro-lint-cases", bad)
    assert status == 1, output
    for how, plant in planted.items():
        relative = plant.expected.replace(f"{user_repo}/", "")
        assert relative in output, how
        assert plant.mentions in output


def test_e2e_conformance(pre_commit_env: dict[str, str], hook_repo: Path, user_repo: Path) -> None:
    """try-repo cannot pass ``args``; the backend comes from the repository's
    pytest configuration, the hook's other way of naming it."""
    plant_backend_repo(user_repo)
    ini = user_repo / "pytest.ini"
    files = [user_repo / "mybackend.py", user_repo / "cases" / "extra.yaml", ini]
    ini.write_text("[pytest]\nroteiro_backend = mybackend:sound\nroteiro_cases = cases\n")
    status, output = try_repo(pre_commit_env, hook_repo, user_repo, "roteiro-conformance", files)
    assert status == 0, output

    ini.write_text("[pytest]\nroteiro_backend = mybackend:broken\nroteiro_cases = cases\n")
    status, output = try_repo(pre_commit_env, hook_repo, user_repo, "roteiro-conformance", files)
    assert status == 1, output
    assert (
        "cases/extra.yaml:8: case 'extra-record-returns-id': step 1 memory.record: "
        "id differs (expected 1, actual 101)"
    ) in output


def test_e2e_conformance_with_the_users_additional_dependencies(
    pre_commit_env: dict[str, str], hook_repo: Path, user_repo: Path
) -> None:
    """A user's ``additional_dependencies`` (for their backend) replace the
    manifest's list; the hook still finds the suite, which it installs itself."""
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=hook_repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    config = user_repo / ".pre-commit-config.yaml"
    config.write_text(
        "repos:\n"
        f"  - repo: {hook_repo}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: roteiro-conformance\n"
        "        args: [--backend, memory]\n"
        "        additional_dependencies: [pip]\n",
        encoding="utf-8",
    )
    _git(user_repo, "add", ".pre-commit-config.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "roteiro-conformance", "--all-files"],
        cwd=user_repo,
        env=pre_commit_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
