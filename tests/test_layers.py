"""The house's layering, checked from the source: `ui` -> `tools` -> `agents`, never upward, and no new
import circle between modules (type-only and function-level imports count: they are circles too, only hidden).
"""
from __future__ import annotations

import ast
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"agents": 0, "tools": 1, "ui": 2}
# Entry points are applications on top of the library, like app.py: `python -m agents` offers the built-in tools.
ENTRY_POINTS = {"agents.__main__"}
# Circles that exist today and are being taken apart (issue 20). The test fails on any other circle, and on
# any of these growing; remove an entry when its circle is gone.
KNOWN_CIRCLES: list[set[str]] = []


def module_files(root: Path = PROJECT_ROOT) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in LAYERS:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def import_graph(root: Path = PROJECT_ROOT) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its source."""
    modules = module_files(root)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # `from . import x`, `from ..y import z`: relative to this module's package
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{parent}.{base}" if base else parent
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in filter(None, map(owner, targets)):
                if target != name and not name.startswith(target + "."):  # a package's own __init__ is not a circle
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(group)
    return found


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """"<module> imports <module>" for each import from a lower layer into a higher one (entry points excepted)."""
    return [f"{source} imports {target}" for source, targets in graph.items() if source not in ENTRY_POINTS
            for target in targets if LAYERS[target.split(".")[0]] > LAYERS[source.split(".")[0]]]


def test_imports_go_one_way_ui_tools_agents() -> None:
    upward = upward_imports(import_graph())
    assert not upward, "imports against the layering (ui -> tools -> agents):\n" + "\n".join(sorted(upward))


def test_no_new_import_circles() -> None:
    new = [sorted(group) for group in circles(import_graph()) if not any(group <= known for known in KNOWN_CIRCLES)]
    assert not new, f"new import circles: {new}"


def test_the_checks_see_an_upward_import_and_a_circle(tmp_path: Path) -> None:
    """The checker itself: a planted upward import and planted circles (absolute, and through relative imports
    in a sub-package) are found."""
    for package, files in {"agents": {"a.py": "import agents.b\n", "b.py": "def f():\n    from agents import a\n"},
                           "agents/sub": {"c.py": "from .d import f\n", "d.py": "def f():\n    from . import c\n",
                                          "e.py": "from ..a import g\n"},
                           "tools": {"t.py": ""}, "ui": {"u.py": ""}}.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        for name, text in files.items():
            (tmp_path / package / name).write_text(text)
    (tmp_path / "agents" / "up.py").write_text("from ui.u import x\n")
    graph = import_graph(tmp_path)
    assert upward_imports(graph) == ["agents.up imports ui.u"]
    assert {"agents.a", "agents.b"} in circles(graph)
    assert {"agents.sub.c", "agents.sub.d"} in circles(graph)
    assert graph["agents.sub.e"] == {"agents.a"}
