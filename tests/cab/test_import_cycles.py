"""No module circles inside an app (issue 30 item 3, docs/architecture.md#no-circles).

The graph is grimp's (the library `lint-imports` is built on) over the packages of pyproject's
``[tool.importlinter] root_packages``, and it holds every import a module makes, at its top or inside a function:
an import deferred into a function still makes the two modules need each other, it only hides the circle until the
function runs. Imports under ``if TYPE_CHECKING:`` are left out: they never execute and exist for the type checker
only, so a module may name a type of a module that imports it that way.

A circle is a strongly connected component of two or more modules of one app (its top-level package), or a module
that imports itself. Circles that cross apps are the ``layers`` contract's business (a layer never imports one
above it)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def root_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["root_packages"])


def import_graph() -> grimp.ImportGraph:
    return grimp.build_graph(*root_packages(), exclude_type_checking_imports=True, cache_dir=None)


def app_graphs(graph: grimp.ImportGraph) -> dict[str, dict[str, set[str]]]:
    """Per app, each of its modules and the modules of the same app it imports."""
    apps: dict[str, dict[str, set[str]]] = {}
    for module in graph.modules:
        app = module.split(".")[0]
        imported = graph.find_modules_directly_imported_by(module)
        apps.setdefault(app, {})[module] = {other for other in imported if other.split(".")[0] == app}
    return apps


def strongly_connected(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (a long chain must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def circle_in(component: list[str], edges: Mapping[str, set[str]]) -> list[str]:
    """One circle through the component's first module, by the shortest way back (breadth first)."""
    start = component[0]
    members = set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(edges.get(node, ())):
                if successor not in members:
                    continue
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if successor not in came_from:
                    came_from[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def circles(apps: Mapping[str, Mapping[str, set[str]]]) -> list[list[str]]:
    """Each circle as its modules, the first repeated at the end: one per component (the shortest through its first
    module), followed by the component's other modules when the circle does not pass through them all."""
    found = []
    for app in sorted(apps):
        edges = apps[app]
        for component in strongly_connected(edges):
            if len(component) > 1 or component[0] in edges.get(component[0], ()):
                circle = circle_in(component, edges)
                found.append([*circle, *(m for m in component if m not in circle)])
    return found


def described(circle: list[str], graph: grimp.ImportGraph) -> str:
    """``a → b → a``, then every import among the component's modules with its line, so the way to break it shows."""
    end = circle.index(circle[0], 1) + 1
    lines = [" → ".join(circle[:end])]
    if circle[end:]:
        lines[0] += f"   (with {', '.join(circle[end:])} in the same knot)"
    members = sorted(set(circle))
    for importer in members:
        for imported in members:
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"    {importer}:{detail['line_number']} → {imported}   {detail['line_contents']}")
    return "\n".join(lines)


def test_finds_a_circle_and_only_a_circle():
    edges = {"a.x": {"a.y"}, "a.y": {"a.z", "a.v"}, "a.z": {"a.x", "a.w"}, "a.w": set(), "a.s": {"a.s"},
             "a.v": {"a.y"}}
    assert circles({"a": edges}) == [["a.s", "a.s"], ["a.v", "a.y", "a.v", "a.x", "a.z"]]
    assert circles({"a": {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}}) == [["a.x", "a.y", "a.z", "a.x"]]
    assert circles({"a": {"a.x": {"a.y"}, "a.y": set()}, "b": {"b.x": set()}}) == []


def test_no_module_circle_inside_an_app():
    graph = import_graph()
    found = [described(circle, graph) for circle in circles(app_graphs(graph))]
    assert not found, "module circles inside an app (docs/architecture.md#no-circles):\n" + "\n".join(found)
