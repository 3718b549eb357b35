"""Start-up of ``roteiro-memory mcp``, beside a minimal server built with the
same MCP SDK (``bench/mcp_minimal.py``: one tool).

    python bench/mcp_startup.py              # 11 runs each
    python bench/mcp_startup.py --repeat 21

Each run is what a host does: the SDK's own stdio client spawns the server,
initializes the session and asks ``tools/list``; the clock runs from just
before the spawn to the tool list in hand.  ``roteiro-memory mcp`` runs as
the installed console script, in a small committed git repository whose
store holds a few records and whose stat cache is settled (a host starts
servers where work is going on, not in a fresh clone).  The two servers run
interleaved, in alternating order, so a neighbour's load lands on both; a
run of ``python -c pass`` gives the scale.

Target: the median of ``roteiro-memory mcp`` at most 1.3x the minimal
server's.  Besides wall time, each server process's CPU time (user + system,
from spawn to exit) is reported.  Exit status 0 when within the bound.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

BOUND = 1.3

HERE = Path(__file__).resolve().parent

ENV = {
    **{
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ROTEIRO_") and k != "PYTHONDONTWRITEBYTECODE"
    },
    "PYTHONPYCACHEPREFIX": os.path.join(tempfile.gettempdir(), "roteiro-bench-pycache"),
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def make_repo(root: Path, script: str) -> None:
    root.mkdir()
    for argv in (["init", "-q", "-b", "main"],):
        subprocess.run(["git", *argv], cwd=root, env=ENV, check=True)
    (root / "app.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    subprocess.run(["git", "add", "-A"], cwd=root, env=ENV, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, env=ENV, check=True)
    for n, anchor in enumerate(("app.py::f", "app.py::g", "app.py")):
        add = [script, "add", f"record {n} about {anchor}", "--anchor", anchor]
        subprocess.run(add, cwd=root, env=ENV, check=True, capture_output=True)
    time.sleep(2.2)  # the stat cache's racy window: then a read writes the cache
    subprocess.run([script, "list"], cwd=root, env=ENV, check=True, capture_output=True)


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _first_tool_list(command: str, args: list[str], cwd: Path) -> tuple[float, int]:
    params = StdioServerParameters(command=command, args=args, cwd=cwd, env=ENV)
    with open(os.devnull, "w") as quiet:
        start = time.perf_counter()
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            elapsed = time.perf_counter() - start
    return elapsed, len(tools)


def time_server(command: str, args: list[str], tools: int, cwd: Path) -> tuple[float, float]:
    """Wall seconds to the tool list, and the server's CPU seconds."""
    before = _child_cpu()
    elapsed, listed = anyio.run(_first_tool_list, command, args, cwd)
    if listed != tools:
        raise SystemExit(f"{command} {args} listed {listed} tools, expected {tools}")
    return elapsed, _child_cpu() - before


def time_floor() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=ENV, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="runs of each (default 11)")
    args = parser.parse_args()
    script = shutil.which("roteiro-memory") or str(Path(sys.executable).parent / "roteiro-memory")
    if not Path(script).exists():
        sys.stderr.write(
            "bench/mcp_startup.py: the roteiro-memory console script is not installed\n"
        )
        return 2
    from roteiro_memory.agents.tools import TOOLS

    with tempfile.TemporaryDirectory(prefix="roteiro-bench-mcp-") as folder:
        root = Path(folder) / "repo"
        make_repo(root, script)
        subjects: dict[str, tuple[str, list[str], int]] = {
            "minimal SDK server": (sys.executable, [str(HERE / "mcp_minimal.py")], 1),
            "roteiro-memory mcp": (script, ["mcp"], len(TOOLS)),
        }
        for command, argv, tools in subjects.values():  # warm the bytecode caches
            time_server(command, argv, tools, root)
        wall: dict[str, list[float]] = {name: [] for name in subjects}
        cpu: dict[str, list[float]] = {name: [] for name in subjects}
        floors: list[float] = []
        for index in range(args.repeat):
            order = list(subjects) if index % 2 == 0 else list(reversed(subjects))
            for name in order:
                seconds, spent = time_server(*subjects[name], root)
                wall[name].append(seconds)
                cpu[name].append(spent)
            floors.append(time_floor())
    mid: dict[str, Any] = {name: statistics.median(times) for name, times in wall.items()}
    mid_cpu = {name: statistics.median(times) for name, times in cpu.items()}
    floor = statistics.median(floors)
    print(f"python -c pass: {floor * 1000:.1f} ms (median of {args.repeat}, for scale)")
    for name in subjects:
        print(
            f"{name}: spawn to the tools/list answer {mid[name] * 1000:.1f} ms wall "
            f"({mid[name] / floor:.1f}x python -c pass), server CPU {mid_cpu[name] * 1000:.1f} ms"
        )
    ratio = mid["roteiro-memory mcp"] / mid["minimal SDK server"]
    cpu_ratio = mid_cpu["roteiro-memory mcp"] / mid_cpu["minimal SDK server"]
    verdict = "ok" if ratio <= BOUND else "OVER"
    print(
        f"ratio: {ratio:.2f}x the minimal SDK server (bound {BOUND}x) {verdict}; "
        f"CPU {cpu_ratio:.2f}x; medians of {args.repeat}"
    )
    return 0 if ratio <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())
