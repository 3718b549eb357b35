"""Start-up of ``roteiro-memory mcp`` to its first answer, against ``python -c pass``.

    python bench/mcp_startup.py              # 11 runs each
    python bench/mcp_startup.py --repeat 21

Each run spawns ``python -m roteiro_memory mcp`` in a small committed git
repository with a synced store, sends ``initialize``, ``notifications/initialized``
and ``tools/list`` as JSON-RPC lines on stdin, and stops the clock when the tool
list arrives.  The floor is ``python -c pass`` on the same interpreter; runs
are interleaved so a neighbour's load lands on both.  Prints the ratio of the
medians and the floor's median in milliseconds.  Timings are noisy; nothing
asserts them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")},
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def make_repo(root: Path) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, env=ENV, check=True)
    (root / "app.py").write_text("def f():\n    return 1\n")
    subprocess.run(["git", "add", "-A"], cwd=root, env=ENV, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, env=ENV, check=True)
    add = [sys.executable, "-m", "roteiro_memory", "add", "f returns 1", "--anchor", "app.py::f"]
    subprocess.run(add, cwd=root, env=ENV, check=True, capture_output=True)


def time_server(root: Path) -> float:
    """Seconds from spawn to the ``tools/list`` answer."""
    start = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "roteiro_memory", "mcp"],
        cwd=root,
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write("".join(json.dumps(m) + "\n" for m in HANDSHAKE))
    server.stdin.flush()
    while True:
        line = server.stdout.readline()
        if not line:
            raise RuntimeError("the server closed its output before listing its tools")
        answer = json.loads(line)
        if answer.get("id") == 2:
            break
    elapsed = time.perf_counter() - start
    assert len(answer["result"]["tools"]) == 6, answer
    server.stdin.close()
    server.wait(timeout=30)
    return elapsed


def time_floor() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=ENV, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="runs of each (default 11)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "repo"
        make_repo(root)
        time_server(root)  # warm the bytecode cache and sync once: start-up is measured
        floors, servers = [], []
        for index in range(args.repeat):
            if index % 2:
                servers.append(time_server(root))
                floors.append(time_floor())
            else:
                floors.append(time_floor())
                servers.append(time_server(root))
    floor, server = statistics.median(floors), statistics.median(servers)
    print(f"python -c pass: {floor * 1000:.1f} ms (median of {args.repeat})")
    print(f"roteiro-memory mcp, initialize + tools/list: {server * 1000:.1f} ms")
    print(f"ratio: {server / floor:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
