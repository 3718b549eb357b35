"""What symbols beyond Python cost a sync, through the installed console script.

    python bench/symbols.py                    # 5,000 files of each kind
    python bench/symbols.py --files 1000 --repeat 3

Builds two committed repositories in a temporary directory: one of
``--files`` TypeScript, JavaScript, Go, Rust and Java files (a fifth each,
read with tree-sitter, the ``symbols`` extra), and an equivalent one of as
many Python files (read with ``ast``), each file a type with three methods,
a function and a function nested in it.  For each it times ``roteiro-memory
sync`` into a fresh store (cold: every file parsed) and after editing one
source file (incremental: that file parsed), interleaved with the floor: a
Python process that runs ``git ls-files`` on the same repository and exits.
Printed as ratios measured in the same run: each against the floor, and the
other languages' against Python's.  Exit status 0 when each is within its
bound, 1 when any is over, 2 when the extra is not installed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from measure import interleave, ratio_check
from sync import PY_TEMPLATE, git, run

COLD_BOUND = 2.5
"""A cold sync of the other languages, over the Python-only one's."""

EDIT_BOUND = 1.5
"""A sync after one edit in the other languages, over the same in Python."""

TEMPLATES = {
    ".ts": """\
import {{ clamp }} from "./util";

export class Widget{n} {{
  constructor(private size: number) {{}}

  get area(): number {{
    return this.size * this.size;
  }}

  grow(by: number): Widget{n} {{
    return new Widget{n}(this.size + by);
  }}
}}

export function make{n}(size: number = {n}): Widget{n} {{
  function clamp(value: number): number {{
    return Math.max(0, value);
  }}
  return new Widget{n}(clamp(size));
}}
""",
    ".js": """\
export class Widget{n} {{
  constructor(size) {{
    this.size = size;
  }}

  get area() {{
    return this.size * this.size;
  }}

  grow(by) {{
    return new Widget{n}(this.size + by);
  }}
}}

export function make{n}(size = {n}) {{
  function clamp(value) {{
    return Math.max(0, value);
  }}
  return new Widget{n}(clamp(size));
}}
""",
    ".go": """\
package pkg{n}

type Widget{n} struct {{
	size int
}}

func (w *Widget{n}) Init(size int) {{
	w.size = size
}}

func (w Widget{n}) Area() int {{
	return w.size * w.size
}}

func (w Widget{n}) Grow(by int) Widget{n} {{
	return Widget{n}{{size: w.size + by}}
}}

func Make{n}(size int) Widget{n} {{
	type clamp struct{{ value int }}
	return Widget{n}{{size: size}}
}}
""",
    ".rs": """\
#[derive(Debug, Clone)]
pub struct Widget{n} {{
    size: i64,
}}

impl Widget{n} {{
    pub fn new(size: i64) -> Self {{
        Widget{n} {{ size }}
    }}

    pub fn area(&self) -> i64 {{
        self.size * self.size
    }}

    pub fn grow(&self, by: i64) -> Self {{
        Widget{n}::new(self.size + by)
    }}
}}

pub fn make_{n}(size: i64) -> Widget{n} {{
    fn clamp(value: i64) -> i64 {{
        value.max(0)
    }}
    Widget{n}::new(clamp(size))
}}
""",
    ".java": """\
package pkg;

public class Widget{n} {{
    private final int size;

    public Widget{n}(int size) {{
        this.size = size;
    }}

    public int area() {{
        return size * size;
    }}

    public Widget{n} grow(int by) {{
        return new Widget{n}(size + by);
    }}

    static class Maker {{
        static Widget{n} make(int size) {{
            return new Widget{n}(Math.max(0, size));
        }}
    }}
}}
""",
}


def build(root: Path, files: int, suffixes: list[str]) -> Path:
    """A committed repository of ``files`` source files, the suffixes taken
    in turn; the path of the first, the one the incremental sync edits."""
    for index in range(files):
        folder = root / f"pkg{index % 50:02d}" / f"sub{index % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        suffix = suffixes[index % len(suffixes)]
        template = PY_TEMPLATE if suffix == ".py" else TEMPLATES[suffix]
        name = f"Widget{index}{suffix}" if suffix == ".java" else f"mod{index}{suffix}"
        (folder / name).write_text(template.format(n=index))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "synthetic")
    return next(root.glob(f"pkg00/sub0/*{suffixes[0]}"))


def trials(
    script: str, root: Path, stores: Path, edited: Path
) -> dict[str, Callable[[], contextlib.AbstractContextManager[Callable[[], object]]]]:
    """The cold sync, the sync after one edit, and the floor, on ``root``."""
    counter = iter(range(1_000_000))
    warm = stores / f"{root.name}-warm.db"
    run(root, [script, "sync", "--db", str(warm)])()
    original = edited.read_text()
    floor_argv = [
        sys.executable,
        "-c",
        "import subprocess; subprocess.run(['git', 'ls-files'], check=True,"
        " stdout=subprocess.DEVNULL)",
    ]

    @contextlib.contextmanager
    def cold() -> Iterator[Callable[[], object]]:
        db = stores / f"{root.name}-cold{next(counter)}.db"
        yield run(root, [script, "sync", "--db", str(db)])
        db.unlink()

    @contextlib.contextmanager
    def one_edit() -> Iterator[Callable[[], object]]:
        comment = "#" if edited.suffix == ".py" else "//"
        edited.write_text(original + f"\n{comment} edit {next(counter)}\n")
        yield run(root, [script, "sync", "--db", str(warm)])

    @contextlib.contextmanager
    def floor() -> Iterator[Callable[[], object]]:
        yield run(root, floor_argv)

    return {"cold": cold, "one edit": one_edit, "git ls-files": floor}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    script = shutil.which("roteiro-memory")
    if script is None:
        sys.stderr.write("bench/symbols.py: the roteiro-memory console script is not installed\n")
        return 2
    if importlib.util.find_spec("tree_sitter") is None:
        sys.stderr.write(
            "bench/symbols.py: tree-sitter is not installed; pip install -e '.[symbols]'\n"
        )
        return 2
    times: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="roteiro-symbols-") as scratch:
        stores = Path(scratch) / "stores"
        stores.mkdir()
        for name, suffixes in (("other", list(TEMPLATES)), ("python", [".py"])):
            root = Path(scratch) / name
            root.mkdir()
            edited = build(root, options.files, suffixes)
            made = trials(script, root, stores, edited)
            cold = interleave(
                {"cold": made["cold"], "git ls-files": made["git ls-files"]},
                options.repeat,
                warmup=False,
            )
            edit = interleave(
                {"one edit": made["one edit"], "git ls-files": made["git ls-files"]},
                options.repeat,
                warmup=True,
            )
            times[name] = {
                "cold": cold["cold"],
                "one edit": edit["one edit"],
                "floor (cold)": cold["git ls-files"],
                "floor": edit["git ls-files"],
            }
    other, python = times["other"], times["python"]
    count = f"{options.files:,}"
    print(
        f"synthetic repositories: {count} TypeScript, JavaScript, Go, Rust and Java files "
        f"(a fifth each), and {count} Python files; floor: python running git ls-files"
    )
    for name, subject, floor in (
        (f"cold, {count} TS/JS/Go/Rust/Java", other["cold"], other["floor (cold)"]),
        (f"cold, {count} Python", python["cold"], python["floor (cold)"]),
        ("one edit, TS/JS/Go/Rust/Java", other["one edit"], other["floor"]),
        ("one edit, Python", python["one edit"], python["floor"]),
    ):
        print(_scale(name, subject, floor))
    checks = [
        ratio_check("cold, other languages / Python", other["cold"], python["cold"], COLD_BOUND),
        ratio_check(
            "one edit, other languages / Python", other["one edit"], python["one edit"], EDIT_BOUND
        ),
    ]
    for check in checks:
        print(check.line())
    return 0 if all(check.ok for check in checks) else 1


def _scale(name: str, subject: list[float], floor: list[float]) -> str:
    """A ratio to the floor, printed for scale (no bound)."""
    mid_subject, mid_floor = statistics.median(subject), statistics.median(floor)
    return (
        f"  {name:<34} {mid_subject / mid_floor:>10.2f}x  the floor  "
        f"{mid_subject * 1000:9.1f} ms vs {mid_floor * 1000:8.1f} ms  (median of {len(subject)})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
