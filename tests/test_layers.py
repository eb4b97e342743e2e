"""The import graph of the project's own modules: no cycles, and no lower layer importing a higher one.

Every import counts, wherever it stands: at module level, inside a function
(lazy imports) or under ``if TYPE_CHECKING``. The graph is read with `ast`
from the source, so a test run does not depend on what happens to be imported.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("backends", "sharding", "hyperion_console")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Every module `module` imports (project modules resolved to the deepest one named)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, node, path.name == "__init__.py")
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    return {name: imports_of(name, path, known) for name, path in modules.items()}


def _project(graph: dict[str, set[str]], name: str) -> set[str]:
    return {m for m in graph[name] if m in graph and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(_project(graph, node)):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _edges(graph, source: str, target: str) -> list[str]:
    return sorted(f"{m} -> {i}" for m in graph if _within(m, source)
                  for i in _project(graph, m) if _within(i, target))


def test_the_graph_is_read(graph):
    """The checks below only mean something if the graph has the edges we know exist."""
    assert "backends.submit.plan" in _project(graph, "backends.submit.commandline")
    assert "backends.errors" in _project(graph, "sharding.errors")
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles(graph):
    assert _cycles(graph) == []


# (lower, higher): nothing in `lower` imports anything in `higher`.
FORBIDDEN = [
    ("backends", "sharding"),
    ("backends", "hyperion_console"),
    ("sharding", "hyperion_console"),
    # inside backends: shared bottom < records < submit | watch < launch < cli
    ("backends.errors", "backends.records"), ("backends.ranges", "backends.records"),
    ("backends.states", "backends.records"), ("backends.logheader", "backends.records"),
    ("backends.printable", "backends.records"), ("backends.fileio", "backends.records"),
    ("backends.fileio", "backends.submit"), ("backends.fileio", "backends.watch"),
    ("backends.records", "backends.submit"), ("backends.records", "backends.watch"),
    ("backends.submit", "backends.watch"), ("backends.watch", "backends.submit"),
    ("backends.submit", "backends.launch"), ("backends.watch", "backends.launch"),
    ("backends.records", "backends.launch"),
    ("backends.submit", "backends.attempt"), ("backends.watch", "backends.attempt"),
    ("backends.records", "backends.attempt"), ("backends.attempt", "backends.launch"),
    ("backends.attempt", "backends.cli"), ("backends.launch_slurm", "backends.cli"),
    ("backends.submit", "backends.launch_slurm"), ("backends.watch", "backends.launch_slurm"),
    ("backends.submit", "backends.retry"), ("backends.watch", "backends.retry"),
    ("backends.records", "backends.retry"), ("backends.retry", "backends.cli"),
    ("backends.submit", "backends.retry_sizes"), ("backends.watch", "backends.retry_sizes"),
    ("backends.retry_sizes", "backends.cli"),
    ("backends.submit", "backends.cli"), ("backends.watch", "backends.cli"),
    ("backends.records", "backends.cli"), ("backends.launch", "backends.cli"),
    # the command-line parser sits on top of the planner, the renderers below it
    ("backends.submit.plan", "backends.submit.commandline"),
    ("backends.submit.slurm", "backends.submit.plan"),
    ("backends.submit.slurm", "backends.submit.commandline"),
    ("backends.submit.local", "backends.submit.commandline"),
]


@pytest.mark.parametrize("lower,higher", FORBIDDEN, ids=[f"{a}-x-{b}" for a, b in FORBIDDEN])
def test_lower_layers_do_not_import_higher_ones(graph, lower, higher):
    assert _edges(graph, lower, higher) == []


def test_model_imports_nothing_above_it(graph):
    """The option and plan types come first: everything else in submit builds on them."""
    allowed = {"backends.errors", "backends.submit.array", "backends.submit.config",
               "backends.submit.resources", "backends.submit.site_options", "backends.ranges",
               "backends", "backends.submit"}
    assert _project(graph, "backends.submit.model") <= allowed


def test_sharding_uses_only_pure_backends_math_outside_the_bridge(graph):
    pure = {"backends", "backends.ranges", "backends.errors", "backends.printable", "backends.fileio",
            "backends.jsontext",   # text formatting like printable: no process, no state
            "backends.shellwords",  # a path shown as one shell word (what to remove): text too
            "backends.shard_env",  # the shard variables' names, which both sides must spell alike
            "backends.job_id"}     # a Slurm job id's text, which both sides must read alike
    # and reading submit records: which of them name a checkpoint (no launcher, no submit planner)
    readers = {"sharding.run_records": pure | {"backends.records", "backends.records.record"}}
    offending = sorted(f"{m} -> {i}" for m in graph if _within(m, "sharding") and m != "sharding.resubmit"
                       for i in _project(graph, m) if _within(i, "backends") and i not in readers.get(m, pure))
    assert offending == []


def test_only_the_console_imports_textual(graph):
    offending = sorted(f"{m} -> {i}" for m in graph if not _within(m, "hyperion_console")
                       for i in graph[m] if _within(i, "textual"))
    assert offending == []


def test_core_imports_without_textual():
    """The headless core (every backends and sharding module) imports without textual loaded."""
    names = [m for m in project_modules() if not _within(m, "hyperion_console")]
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n    importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
