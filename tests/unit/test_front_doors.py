"""The outer ring's shape (issue 28): the packages of firmsift import each other without cycles,
and only the wiring (src/entrypoints/wiring) names a concrete adapter or holds a container: the
front doors are handed their application objects (wiring/roles.py, container.api()).

import-linter (pyproject.toml) holds the front doors' layers; these hold what its contracts cannot
say for modules not yet written: a new entrypoint module is checked as soon as it exists."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_import_graph import Graph, cycles, import_graph

SRC = Path(__file__).resolve().parents[2] / "src"
WIRING = "firmsift.entrypoints.wiring"
CONTAINER_BUILDERS = {"Container", "in_memory_container"}  # the calls that build a whole graph
CONTAINER_MODULES = {f"{WIRING}.container", f"{WIRING}.memory"}  # importing these is holding a container


def package_graph(graph: Graph, package: str) -> Graph:
    """`package`'s direct children (sub-packages and modules), each standing for all it holds, and
    which of them each imports."""
    def child(module: str) -> str | None:
        if not module.startswith(package + "."):
            return None
        return f"{package}.{module[len(package) + 1:].split('.')[0]}"

    children: dict[str, set[str]] = {}
    for module, imported in graph.items():
        if (importer := child(module)) is not None:
            children.setdefault(importer, set()).update(
                other for other in map(child, imported) if other is not None and other != importer)
    return {name: frozenset(imports) for name, imports in children.items()}


def test_no_two_packages_import_each_other() -> None:
    graph = import_graph()
    packages = sorted({module for module in graph if any(other.startswith(module + ".") for other in graph)})
    found = {package: cycles(package_graph(graph, package)) for package in packages}

    assert not {package: found for package, found in found.items() if found}, (
        "packages importing each other, by the package holding them (one cycle through each):\n"
        + "\n".join(f"{package}: {' -> '.join(c.rsplit('.', 1)[-1] for c in cycle)}"
                    for package, package_cycles in found.items() for cycle in package_cycles))


def test_the_package_check_sees_a_cycle_through_sub_packages() -> None:
    graph = {"p.a.x": frozenset({"p.b.y"}), "p.b.y": frozenset({"p.b.z"}), "p.b.z": frozenset({"p.a.w"}),
             "p.a.w": frozenset(), "p.c": frozenset({"p.a.x"})}

    assert package_graph(graph, "p") == {"p.a": frozenset({"p.b"}), "p.b": frozenset({"p.a"}),
                                         "p.c": frozenset({"p.a"})}
    assert cycles(package_graph(graph, "p")) == [["p.a", "p.b", "p.a"]]


def _entrypoint_modules() -> dict[str, Path]:
    folder = SRC / "entrypoints"
    modules = {}
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(("firmsift", *(parts[:-1] if parts[-1] == "__init__" else parts)))
        if not (name == WIRING or name.startswith(WIRING + ".")):
            modules[name] = path
    return modules


def _through_the_wiring_problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("firmsift.adapters"):
            problems.append(f"l.{node.lineno} imports {node.module}")
        elif isinstance(node, ast.ImportFrom) and node.module in CONTAINER_MODULES:
            problems.append(f"l.{node.lineno} imports the container ({node.module})")
        elif isinstance(node, ast.Import):
            problems += [f"l.{node.lineno} imports {a.name}" for a in node.names if a.name.startswith("firmsift.adapters")]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONTAINER_BUILDERS:
            problems.append(f"l.{node.lineno} builds a container ({node.func.id})")
    return sorted(problems, key=lambda problem: int(problem[2:].split(' ', 1)[0]))


def test_only_the_wiring_imports_adapters_or_builds_a_container() -> None:
    problems = {name: found for name, path in _entrypoint_modules().items()
                if (found := _through_the_wiring_problems(path))}

    assert not problems, "\n".join(f"{name}: {'; '.join(found)}" for name, found in problems.items())


def test_the_wiring_check_finds_an_adapter_import_and_a_container(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text("from firmsift.adapters.sql.engine import database_url\nimport firmsift.adapters.readiness\n"
                      "from firmsift.ports.queue import WorkQueue\n\ndef f():\n    return Container(settings=1)\n"
                      "from firmsift.entrypoints.wiring.container import Container\n"
                      "from firmsift.entrypoints.wiring.roles import started\n")

    assert _through_the_wiring_problems(module) == [
        "l.1 imports firmsift.adapters.sql.engine", "l.2 imports firmsift.adapters.readiness",
        "l.6 builds a container (Container)", "l.7 imports the container (firmsift.entrypoints.wiring.container)"]
