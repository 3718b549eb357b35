"""How many bytes the agent-facing answers take, over a store of 200 records.

    python bench/answers.py

An agent pays for every answer in context.  This builds a committed
repository of 20 modules and a store of 200 records like a working clone's
(every kind; anchored to files, to functions and to nothing; bodies from a
short sentence to a paragraph; a few drifted by an edit), starts
``roteiro-memory mcp`` through the MCP SDK's own stdio client, and prints
the bytes of:

* ``tools/list`` -- target at most 10,000 (input schemas stating every limit
  and rule the tools hold take about 2,400 of it: white space and control
  characters spelt out, so Python and ECMA-262 patterns read alike);
* a default ``search`` (a query of two words, every default) -- target at most 6,000;
* a default ``list``, and a default ``touched`` after the edit;
* a ``roteiro-memory hook`` answer to Claude Code's PreToolUse event for the
  module with the most records (the same answer a session gets at most once).

Each MCP figure is the result as the client received it, serialized as it
travels (JSON, no white space), with the bytes of its text content -- what a
model reads -- beside it.  Bytes are deterministic, so the tests assert the
targets (``tests/test_mcp_answers.py``); this prints them.  Exit status 0
when both targets hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SEARCH_BOUND = 6000
TOOLS_BOUND = 10000

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")},
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

KINDS = ("lesson", "attempt", "decision", "pattern", "outcome")

MODULE = """\
class Client{n}:
    def get(self, path):
        return self.send("GET", path)

    def send(self, method, path, retries=3):
        return method, path, retries


def backoff{n}(attempt):
    return min(2 ** attempt, 30)
"""

CLAUSES = (
    "the client retries a timeout once more than the limit says",
    "backoff grows by powers of two and is capped at thirty seconds",
    "a 503 from the upstream is retried, a 500 is not",
    "the request id is logged before the first attempt, not after",
    "tests that mock the clock must also patch the jitter",
    "the connection pool is shared across threads, so close() is a no-op",
    "paths are normalised before they are signed; do not sign the raw path",
    "we tried caching the token per request and it doubled the latency",
)


def body(n: int) -> str:
    """A body of one to four clauses, so lengths run from about 50 to 300
    characters the way recorded lessons do."""
    parts = [CLAUSES[(n + k * 3) % len(CLAUSES)] for k in range(1 + n % 4)]
    return f"Record {n}: " + "; ".join(parts) + "."


def anchor(n: int) -> str | None:
    module = f"src/mod{n % 20}.py"
    return (None, module, f"{module}::Client{n % 20}.send", f"{module}::backoff{n % 20}")[n % 4]


def build(root: Path, records: int = 200) -> None:
    """The repository and its store: ``records`` written through the command
    line (so anchors capture real blobs), then one module edited so the
    records about it drift."""
    (root / "src").mkdir(parents=True)
    for index in range(20):
        (root / "src" / f"mod{index}.py").write_text(MODULE.format(n=index))
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *argv], cwd=root, env=ENV, check=True)
    from roteiro_memory.cli import main

    here = os.getcwd()
    os.chdir(root)
    try:
        for n in range(records):
            argv = ["add", body(n), "--kind", KINDS[n % 5], "--confidence", f"{(n % 9 + 1) / 10}"]
            where = anchor(n)
            if where is not None:
                argv += ["--anchor", where]
            with open(os.devnull, "w") as quiet:
                stdout, sys.stdout = sys.stdout, quiet
                try:
                    if main(argv) != 0:
                        raise SystemExit(f"bench/answers.py: could not record {argv}")
                finally:
                    sys.stdout = stdout
    finally:
        os.chdir(here)
    edited = root / "src" / "mod3.py"
    edited.write_text(edited.read_text().replace("min(2 ** attempt, 30)", "min(2 ** attempt, 60)"))


def _size(model: Any) -> int:
    return len(model.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))


def _text(result: Any) -> int:
    return sum(len(block.text.encode("utf-8")) for block in result.content)


async def mcp_sizes(root: Path, command: list[str]) -> dict[str, tuple[int, int]]:
    """Bytes of each answer, and of its text, through the SDK's own client."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=root, env=ENV)
    sizes: dict[str, tuple[int, int]] = {}
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            sizes["tools/list"] = (_size(listed), 0)
            for name, arguments in (
                ("search", {"query": "retry timeout"}),
                ("list", {}),
                ("touched", {}),
            ):
                result = await session.call_tool(name, arguments)
                if result.is_error:
                    raise SystemExit(f"bench/answers.py: {name} failed: {result.content[0].text}")
                sizes[name] = (_size(result), _text(result))
    return sizes


def read_event(root: Path, path: Path, session: str) -> dict[str, Any]:
    """Claude Code's PreToolUse event for a Read of ``path``, as its hooks
    reference gives it."""
    return {
        "session_id": session,
        "transcript_path": str(root / "transcript.jsonl"),
        "cwd": str(root),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": str(path)},
        "tool_use_id": "toolu_bench",
    }


def run_hook(command: list[str], root: Path, event: dict[str, Any]) -> str:
    """What ``command`` (ending in ``hook``) answers ``event`` with."""
    done = subprocess.run(
        command,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=root,
        env=ENV,
        check=True,
    )
    if "additionalContext" not in done.stdout:
        raise SystemExit(f"bench: the hook said nothing: {done.stderr}")
    return done.stdout


def hook_size(root: Path, command: list[str]) -> int:
    """Bytes of the hook's answer to Claude Code's PreToolUse Read of the
    module with the most records, in a fresh session."""
    event = read_event(root, root / "src" / "mod1.py", "bench-answers")
    return len(run_hook([*command[:-1], "hook"], root, event).encode("utf-8"))


def main() -> int:
    import anyio

    command = [sys.executable, "-m", "roteiro_memory", "mcp"]
    with tempfile.TemporaryDirectory(prefix="roteiro-bench-answers-") as folder:
        root = Path(folder) / "repo"
        build(root)
        sizes = anyio.run(mcp_sizes, root, command)
        hook = hook_size(root, command)
    print("bytes of each answer over 200 records (text content, what a model reads, beside):")
    for name, (whole, text) in sizes.items():
        print(f"  {name:<10} {whole:>6} bytes" + (f"  (text {text})" if text else ""))
    print(f"  {'hook':<10} {hook:>6} bytes  (PreToolUse Read of src/mod1.py, fresh session)")
    tools, search = sizes["tools/list"][0], sizes["search"][0]
    ok = tools <= TOOLS_BOUND and search <= SEARCH_BOUND
    print(
        f"tools/list {tools} of at most {TOOLS_BOUND}, search {search} of at most "
        f"{SEARCH_BOUND}: {'ok' if ok else 'OVER'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
