"""The folder list shows the architecture: no import cycles, and the layers
import only downwards.

The import graph is read from the source (every ``import`` and ``from ...
import``, including those inside functions and under ``TYPE_CHECKING``), not
from what happens to be imported at run time, so a lazy import that closes a
cycle is caught too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("roteiro_memory", "pytest_roteiro")

SPECIFIC_STORES = ("roteiro_memory.stores.sqlite", "roteiro_memory.stores.postgres")
"""Modules that tie a caller to one database."""

CHOOSE_A_STORE = (
    "roteiro_memory",  # the package's lazy public names include SQLiteStore
    "roteiro_memory.stores",
    "roteiro_memory.cli",
    "roteiro_memory.precommit",
)
"""Modules (or folders) allowed to name a specific store: those that choose one by name."""

CORE = tuple(
    f"roteiro_memory.{name}"
    for name in ("errors", "semantics", "results", "store", "protocol", "check", "transfer")
)
"""The library's generic modules: rules, shapes and formats, no persistence."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(module: str) -> bool:
    return (ROOT / module.replace(".", "/") / "__init__.py").is_file()


@cache
def _modules() -> frozenset[str]:
    return frozenset(
        _module_name(path) for package in PACKAGES for path in (ROOT / package).rglob("*.py")
    )


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _own(name: str) -> str | None:
    """The longest module of ours that ``name`` is, or lies in."""
    while name:
        if name in _modules():
            return name
        name = name.rpartition(".")[0]
    return None


def _imported(module: str) -> Iterator[tuple[str, int]]:
    """Every module ``module`` imports, absolute, with its line.

    ``from PACKAGE import name`` imports ``PACKAGE.name`` when that is one of
    our modules, else ``PACKAGE``.  The parent packages Python imports on the
    way are not counted: a package is not in a cycle with its own modules by
    being their folder.
    """
    path = ROOT / module.replace(".", "/")
    path = path / "__init__.py" if _is_package(module) else path.with_suffix(".py")
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            for alias in node.names:
                name = f"{base}.{alias.name}"
                yield (name if name in _modules() else base), node.lineno


@cache
def _graph() -> dict[str, frozenset[str]]:
    """Our modules and the modules of ours each imports (itself excluded)."""
    graph: dict[str, frozenset[str]] = {}
    for module in _modules():
        targets = {_own(name) for name, _ in _imported(module)}
        graph[module] = frozenset(t for t in targets if t is not None and t != module)
    return graph


def _cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan),
    each as one cycle through it, ``a -> b -> ... -> a``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_through(graph, component) for component in components]


def _cycle_through(graph: dict[str, frozenset[str]], component: set[str]) -> list[str]:
    """One shortest cycle from the component's first module back to itself."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & component):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"{sorted(component)} is not strongly connected")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in prefixes)


def _offending(sources: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    """``module:line imports name`` for each import of ``forbidden`` by a module in ``sources``."""
    found = []
    for module in sorted(_modules()):
        if not _within(module, sources):
            continue
        for name, line in _imported(module):
            if _within(name, forbidden):
                found.append(f"{module}:{line} imports {name}")
    return sorted(set(found))


def test_layout_reads_every_module() -> None:
    """A guard for the graph itself: it must see the lazy imports the packages rely on."""
    graph = _graph()
    assert {"roteiro_memory.errors", "pytest_roteiro.plugin", "roteiro_memory.suite.cases"} <= set(
        graph
    )
    # A function-level import, and one under TYPE_CHECKING:
    assert "roteiro_memory.suite.cases" in graph["roteiro_memory.precommit.lint_cases"]
    assert "roteiro_memory.suite.runner" in graph["pytest_roteiro.hookspecs"]


def test_layout_has_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_layout_only_store_choosers_import_a_specific_store() -> None:
    everything = tuple(_modules())
    found = [
        f
        for f in _offending(everything, SPECIFIC_STORES)
        if not _within(f.split(":", 1)[0], CHOOSE_A_STORE)
    ]
    assert not found, "\n".join(found)


def test_layout_generic_modules_import_no_store() -> None:
    """The rules, shapes and formats know the contract, never a persistence layer."""
    found = _offending(CORE, ("roteiro_memory.stores", "sqlite3", "psycopg"))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("package", ["roteiro_memory"])
def test_layout_the_library_imports_no_pytest(package: str) -> None:
    """The suite's engine runs cases without pytest (the CLI and the hooks use it)."""
    found = _offending((package,), ("pytest", "_pytest", "pytest_roteiro", "pluggy"))
    assert not found, "\n".join(found)


def test_layout_the_suite_imports_none_of_the_implementation() -> None:
    """The suite checks any backend, so it keeps its own copy of the
    vocabulary (checked by ``test_vocabulary``); only the drivers, which
    build the built-in backends by name, reach the library."""
    suite = tuple(m for m in _modules() if m.startswith("roteiro_memory.suite"))
    found = [
        f
        for f in _offending(suite, ("roteiro_memory",))
        if not _within(f.split(":", 1)[0], ("roteiro_memory.suite.drivers",))
        and not _within(f.split(" imports ", 1)[1], ("roteiro_memory.suite",))
    ]
    assert not found, "\n".join(found)


FACADE = frozenset({"roteiro_memory", "roteiro_memory.__main__"})
"""The public names and the ``python -m`` entry: the top, importing anything."""


def _package(module: str) -> str:
    """Which package ``module`` belongs to, at the level the layout is read:
    the top-level packages (``roteiro_memory.cli``, ``roteiro_memory.stores``,
    ``pytest_roteiro``), the library's own modules (``roteiro_memory`` core)
    and the facade above everything."""
    if module in FACADE:
        return "roteiro_memory (public names)"
    parts = module.split(".")
    if parts[0] != "roteiro_memory":
        return parts[0]
    if len(parts) > 2 or _is_package(module):
        return ".".join(parts[:2])
    return "roteiro_memory (core)"


def _package_graph() -> dict[str, frozenset[str]]:
    edges: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        source = _package(module)
        edges.setdefault(source, set())
        edges[source].update(_package(t) for t in targets if _package(t) != source)
    return {package: frozenset(targets) for package, targets in edges.items()}


def test_layout_the_package_graph_has_no_cycle() -> None:
    """A package importing another that imports it back is a cycle, even when
    no single module closes it (the command line and the agents' server both
    reach the use cases; neither reaches the other's insides)."""
    graph = _package_graph()
    assert {"roteiro_memory.app", "roteiro_memory.cli", "roteiro_memory.agents"} <= set(graph)
    cycles = _cycles(graph)
    assert not cycles, "package cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_layout_front_ends_reach_the_store_through_the_use_cases() -> None:
    """The command line, the agents' server and the wire server turn their
    input into a request; what a request does lives in roteiro_memory.app,
    which imports none of them."""
    graph = _package_graph()
    front_ends = {"roteiro_memory.cli", "roteiro_memory.agents"}
    assert not graph["roteiro_memory.app"] & front_ends
    assert "roteiro_memory.cli" not in graph["roteiro_memory.agents"]
    assert "roteiro_memory.app" in graph["roteiro_memory.agents"]
    assert "roteiro_memory.app" in graph["roteiro_memory.cli"]


MAX_MODULE_LINES = 700


def test_layout_no_module_is_longer_than_a_module_should_be() -> None:
    """One module, one responsibility: a module past this is doing two jobs."""
    long = {
        module: lines
        for module in _modules()
        if (lines := len(_source(module).splitlines())) > MAX_MODULE_LINES
    }
    assert not long, long


def _source(module: str) -> str:
    path = ROOT / module.replace(".", "/")
    path = path / "__init__.py" if _is_package(module) else path.with_suffix(".py")
    return path.read_text(encoding="utf-8")


def test_layout_the_suite_names_no_store() -> None:
    """The suite's engine checks any backend: the stores it drives, even the
    reference ones, come through the ``roteiro.backends`` entry points, which
    point into the stores package, never through an import."""
    suite = tuple(m for m in _modules() if m.startswith("roteiro_memory.suite"))
    found = _offending(suite, ("roteiro_memory.stores",))
    assert not found, "\n".join(found)


def test_layout_no_handler_only_passes_over_what_it_caught() -> None:
    """A failure is handled by name: a handler whose body is only ``pass``
    hides what went wrong and says nothing of why that is safe; one that
    means "nothing to do" says so (``contextlib.suppress`` with its reason,
    or the value the failure stands for)."""
    passing = [
        f"{module}:{handler.lineno}"
        for module in sorted(_modules())
        for handler in ast.walk(ast.parse(_source(module)))
        if isinstance(handler, ast.ExceptHandler)
        and all(isinstance(statement, ast.Pass) for statement in handler.body)
    ]
    assert not passing, passing
