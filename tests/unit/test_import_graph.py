"""The import graph: no cycles anywhere in firmsift, and rules that import only rules and the stdlib.

import-linter's contracts (pyproject.toml) say which layer may import which; they do not catch
two modules of one layer importing each other. This builds the same graph import-linter does
(with grimp, its graph library), imports made only under `if TYPE_CHECKING:` included, and fails
on any strongly connected component of more than one module, naming a cycle through it and the
lines that make it.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable, Mapping

import grimp

# Third-party packages a rule may import, by module: UTS #46 / IDNA 2008 host names (the
# standard library's codec is IDNA 2003). pyproject.toml's rules contract allows the same.
THIRD_PARTY_IN_RULES = {"firmsift.domain.normalize": {"idna"}}

Graph = Mapping[str, frozenset[str]]


def import_graph(package: str = "firmsift") -> Graph:
    """Module -> the modules of `package` it imports directly, `if TYPE_CHECKING:` imports included."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    return {module: frozenset(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit); each component sorted, components in order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in graph:
                    continue
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
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
    return sorted(components)


def cycles(graph: Graph) -> list[list[str]]:
    """One shortest cycle through each component of more than one module, starting and ending at
    the component's first module (by name)."""
    found = []
    for component in strongly_connected(graph):
        if len(component) > 1:
            found.append(_shortest_cycle(graph, component[0], set(component)))
    return found


def _shortest_cycle(graph: Graph, start: str, within: set[str]) -> list[str]:
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor in sorted(graph[node] & within):
            if successor == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if successor not in came_from:
                came_from[successor] = node
                queue.append(successor)
    raise AssertionError(f"{start} is in a component of more than one module, so a cycle runs through it")


def describe(cycle: Iterable[str], package: str = "firmsift") -> str:
    """`a -> b (l.12) -> a (l.3)`: each step with the lines of the importing module that make it."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    steps = list(cycle)
    text = steps[0]
    for importer, imported in zip(steps, steps[1:]):
        lines = sorted({d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)})
        text += f" -> {imported} (l.{', '.join(map(str, lines))})"
    return text


def test_no_module_of_firmsift_is_part_of_an_import_cycle() -> None:
    found = cycles(import_graph())

    assert not found, "import cycles (each shown by one shortest cycle through it):\n" + "\n".join(
        describe(cycle) for cycle in found
    )


def test_the_graph_holds_imports_made_only_for_type_checking() -> None:
    with_them = grimp.build_graph("firmsift", exclude_type_checking_imports=False, cache_dir=None)
    without = grimp.build_graph("firmsift", exclude_type_checking_imports=True, cache_dir=None)

    assert with_them.count_imports() > without.count_imports()


def test_rules_import_only_rules_and_the_standard_library() -> None:
    graph = grimp.build_graph("firmsift", include_external_packages=True, exclude_type_checking_imports=False,
                              cache_dir=None)
    rules = {"firmsift.domain", *graph.find_descendants("firmsift.domain")}
    wrong = [
        f"{module} imports {imported}"
        for module in sorted(rules)
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if imported not in rules and imported not in sys.stdlib_module_names
        and imported not in THIRD_PARTY_IN_RULES.get(module, ())
    ]

    assert not wrong, "rules (firmsift.domain) may import only rules and the standard library:\n" + "\n".join(wrong)


def test_the_cycle_check_names_a_cycle_and_only_cycles() -> None:
    graph: dict[str, frozenset[str]] = {
        "p.a": frozenset({"p.b"}),
        "p.b": frozenset({"p.c", "p.d"}),
        "p.c": frozenset({"p.a"}),
        "p.d": frozenset({"p.e"}),
        "p.e": frozenset(),
        "p.x": frozenset({"p.y"}),
        "p.y": frozenset({"p.x"}),
    }

    assert strongly_connected(graph) == [["p.a", "p.b", "p.c"], ["p.d"], ["p.e"], ["p.x", "p.y"]]
    assert cycles(graph) == [["p.a", "p.b", "p.c", "p.a"], ["p.x", "p.y", "p.x"]]
    assert cycles({k: v for k, v in graph.items() if k not in {"p.c", "p.y"}} | {"p.c": frozenset(),
                                                                                "p.y": frozenset()}) == []
