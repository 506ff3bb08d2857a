"""The package's imports point down the layers and never round in a cycle.

Layers, lowest first (docs/architecture.md): core < claims < stages < recording
< engine < reports < {plugin, frontends}. A module may import its own layer and
those below; plugin and frontends never import each other; package code never
imports the top-level re-export shims (they are import paths for users). Every
``import`` counts: module level, inside functions and under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_citecheck"
LAYERS = ("core", "claims", "stages", "recording", "engine", "reports", "front end")
FRONT_ENDS = ("plugin", "frontends")
# Re-export shims for the documented import paths (docs/): for users, never the package.
SHIMS = {
    "pytest_citecheck.models",
    "pytest_citecheck.schema",
    "pytest_citecheck.fetch",
    "pytest_citecheck.retrieval",
    "pytest_citecheck.transport",
    "pytest_citecheck.judges",
    "pytest_citecheck.judges.base",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """The package modules ``name`` imports (a ``from X import y`` names X.y when
    y is a module, else X)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def layer(name: str) -> int | None:
    """The layer index of a module; None for the package root and the shims."""
    parts = name.split(".")
    if len(parts) < 2 or name in SHIMS:
        return None
    top = parts[1]
    if top in FRONT_ENDS:
        return LAYERS.index("front end")
    return LAYERS.index(top) if top in LAYERS else None


def test_every_module_belongs_to_a_layer_or_is_a_shim() -> None:
    stray = [m for m in MODULES if layer(m) is None and m != "pytest_citecheck" and m not in SHIMS]
    assert stray == []


def test_no_import_points_up_a_layer() -> None:
    upward = []
    for name, targets in GRAPH.items():
        here = layer(name)
        for target in targets:
            there = layer(target)
            if target in SHIMS and name not in SHIMS:
                upward.append(f"{name} -> {target} (a shim for users)")
            elif here is not None and there is not None and there > here:
                upward.append(f"{name} ({LAYERS[here]}) -> {target} ({LAYERS[there]})")
    assert upward == []


def top(name: str) -> str:
    return [*name.split("."), ""][1]


def test_plugin_and_frontends_do_not_import_each_other() -> None:
    crossed = [
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if {top(name), top(target)} == set(FRONT_ENDS)
    ]
    assert crossed == []


def test_there_is_no_import_cycle() -> None:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for target in sorted(GRAPH[name]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name)
    assert cycles == []


def test_the_walk_sees_function_level_imports() -> None:
    # The engine builds the pipeline lazily, inside a method: the walk must see it.
    assert "pytest_citecheck.engine.pipeline" in GRAPH["pytest_citecheck.engine.verification"]


@pytest.mark.parametrize("module", ["pytest_citecheck.frontends.cli"])
def test_the_cli_loads_neither_pytest_nor_the_plugin_options(module: str) -> None:
    probe = (
        f"import {module}, sys; "
        "print(sorted(m for m in ('pytest', '_pytest', 'pytest_citecheck.plugin.options') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
