"""The package's imports point down the layers and never round in a cycle.

Layers, lowest first (docs/architecture.md): core < claims < stages < recording
< engine < options < large_audit < reports < {plugin, frontends}. A module may import
its own layer and those below; plugin and frontends never import each other; package code never
imports the public API module (``pytest_citecheck.api``, a door for users).
pytest, ``_pytest`` and pluggy are imported only under ``plugin/``: the engine,
the CLI and the service run without them.

Every import counts: module level, inside functions, under TYPE_CHECKING, and
``importlib.import_module("...")`` with a literal name. Each kind of violation is
planted in a throwaway package below, so the checks are shown to catch it.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_citecheck"
LAYERS = (
    "core",
    "claims",
    "stages",
    "recording",
    "engine",
    "options",
    "large_audit",
    "reports",
    "front end",
)
FRONT_ENDS = ("plugin", "frontends")
PUBLIC_API = "api"  # pytest_citecheck.api: for scripts, never for the package
# The doors for users, each never imported by the package: the API, the Inspect AI scorer.
DOORS = (PUBLIC_API, "inspect")
TEST_FRAMEWORK = ("pytest", "_pytest", "pluggy")


@dataclass(frozen=True)
class Package:
    """A package's modules and what each imports: its own modules (``graph``) and the
    top-level names of everything else (``external``)."""

    name: str
    modules: dict[str, Path]
    graph: dict[str, set[str]]
    external: dict[str, set[str]]


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_module_target(node: ast.Call) -> str | None:
    """The literal module name of ``importlib.import_module("x")`` or
    ``import_module("x")``; None for any other call or a computed name."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "import_module" or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def imported_names(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Every module name ``path`` imports, at any depth (a ``from X import y`` names
    X.y when y is a module of the package, else X)."""
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
                found.add(child if child in modules else base)
        elif isinstance(node, ast.Call) and (target := _import_module_target(node)):
            found.add(target)
    return found


def _owning_module(target: str, modules: dict[str, Path]) -> str | None:
    """The package module ``target`` names, or the nearest one above it."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def scan(root: Path) -> Package:
    modules = {module_name(root, p): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    external: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = imported_names(path, name, modules)
        own = {_owning_module(t, modules) for t in found if t.split(".")[0] == root.name}
        graph[name] = {m for m in own if m is not None and m != name}
        external[name] = {t.split(".")[0] for t in found if t.split(".")[0] != root.name}
    return Package(root.name, modules, graph, external)


def top(name: str) -> str:
    return [*name.split("."), ""][1]


def layer(name: str) -> int | None:
    """The layer index of a module; None for the package root."""
    if "." not in name:
        return None
    if top(name) in (*FRONT_ENDS, *DOORS):
        return LAYERS.index("front end")
    return LAYERS.index(top(name)) if top(name) in LAYERS else None


def stray_modules(pkg: Package) -> list[str]:
    return [m for m in pkg.modules if m != pkg.name and layer(m) is None]


def upward_imports(pkg: Package) -> list[str]:
    upward = []
    for name, targets in sorted(pkg.graph.items()):
        here = layer(name)
        for target in sorted(targets):
            there = layer(target)
            if top(target) in DOORS and top(name) not in DOORS:
                upward.append(f"{name} -> {target} (the public API, for users)")
            elif here is not None and there is not None and there > here:
                upward.append(f"{name} ({LAYERS[here]}) -> {target} ({LAYERS[there]})")
    return upward


def crossed_front_ends(pkg: Package) -> list[str]:
    return [
        f"{name} -> {target}"
        for name, targets in sorted(pkg.graph.items())
        for target in sorted(targets)
        if {top(name), top(target)} == set(FRONT_ENDS)
    ]


def cycles(pkg: Package) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for target in sorted(pkg.graph[name]):
            if state.get(target) == 1:
                found.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[name] = 2

    for name in sorted(pkg.graph):
        if name not in state:
            visit(name)
    return found


def framework_imports_outside_plugin(pkg: Package) -> list[str]:
    return [
        f"{name} imports {lib}"
        for name, libs in sorted(pkg.external.items())
        if top(name) != "plugin"
        for lib in sorted(libs & set(TEST_FRAMEWORK))
    ]


REAL = scan(PACKAGE)


def test_every_module_belongs_to_a_layer() -> None:
    assert stray_modules(REAL) == []


def test_no_import_points_up_a_layer() -> None:
    assert upward_imports(REAL) == []


def test_plugin_and_frontends_do_not_import_each_other() -> None:
    assert crossed_front_ends(REAL) == []


def test_there_is_no_import_cycle() -> None:
    assert cycles(REAL) == []


def test_pytest_and_pluggy_are_imported_only_under_plugin() -> None:
    assert framework_imports_outside_plugin(REAL) == []


def test_the_walk_sees_function_level_imports() -> None:
    # The engine builds the pipeline lazily, inside a method: the walk must see it.
    assert "pytest_citecheck.engine.pipeline" in REAL.graph["pytest_citecheck.engine.verification"]
    # and the plugin's pytest imports are seen (allowed there).
    assert "pytest" in REAL.external["pytest_citecheck.plugin.options"]


# A throwaway package with one violation of each kind; the checks must name each.
PLANTED = {
    "__init__.py": "",
    "core/__init__.py": "",
    "core/ok.py": "import os\n",
    # upward: core imports the engine
    "core/upward.py": "from pytest_citecheck.engine import run\n",
    # a cycle inside one layer
    "claims/__init__.py": "",
    "claims/a.py": "from pytest_citecheck.claims import b\n",
    "claims/b.py": "import pytest_citecheck.claims.a\n",
    # pytest at module level below plugin
    "stages/__init__.py": "",
    "stages/storage.py": "import pytest\n",
    # pytest inside a function, under TYPE_CHECKING, _pytest, pluggy
    "engine/__init__.py": "def run() -> None: ...\n",
    "engine/recheck.py": textwrap.dedent(
        """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from _pytest.config import Config


        def later() -> None:
            import pytest

            pytest.fail("x")
        """
    ),
    "recording/__init__.py": "",
    "recording/hooks.py": "import pluggy\n",
    # importlib.import_module of a higher layer, both spellings
    "reports/__init__.py": "",
    "claims/lazy.py": textwrap.dedent(
        """
        import importlib
        from importlib import import_module


        def load() -> None:
            importlib.import_module("pytest_citecheck.reports.html")
            import_module("pytest_citecheck.plugin")
            importlib.import_module("pytest")
        """
    ),
    "reports/html.py": "",
    # a front end reaching into the other one, and into the public API
    "plugin/__init__.py": "import pytest\nimport pluggy\n",
    "frontends/__init__.py": "",
    "frontends/cli.py": "from pytest_citecheck.plugin import x\nfrom pytest_citecheck import api\n",
    "api.py": "from pytest_citecheck.engine import run\n",
    # a module in no layer
    "misc.py": "",
}


@pytest.fixture
def planted(tmp_path: Path) -> Package:
    root = tmp_path / "pytest_citecheck"
    for relative, source in PLANTED.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return scan(root)


def test_the_checks_catch_an_upward_import_including_through_import_module(
    planted: Package,
) -> None:
    assert upward_imports(planted) == [
        "pytest_citecheck.claims.lazy (claims) -> pytest_citecheck.plugin (front end)",
        "pytest_citecheck.claims.lazy (claims) -> pytest_citecheck.reports.html (reports)",
        "pytest_citecheck.core.upward (core) -> pytest_citecheck.engine (engine)",
        "pytest_citecheck.frontends.cli -> pytest_citecheck.api (the public API, for users)",
    ]


def test_the_checks_catch_a_cycle(planted: Package) -> None:
    assert cycles(planted) == [
        ["pytest_citecheck.claims.a", "pytest_citecheck.claims.b", "pytest_citecheck.claims.a"]
    ]


def test_the_checks_catch_pytest_and_pluggy_at_any_depth_below_plugin(planted: Package) -> None:
    assert framework_imports_outside_plugin(planted) == [
        "pytest_citecheck.claims.lazy imports pytest",  # importlib.import_module("pytest")
        "pytest_citecheck.engine.recheck imports _pytest",  # under TYPE_CHECKING
        "pytest_citecheck.engine.recheck imports pytest",  # inside a function
        "pytest_citecheck.recording.hooks imports pluggy",
        "pytest_citecheck.stages.storage imports pytest",  # module level
    ]


def test_the_checks_catch_front_ends_crossing_and_stray_modules(planted: Package) -> None:
    crossed = ["pytest_citecheck.frontends.cli -> pytest_citecheck.plugin"]
    assert crossed_front_ends(planted) == crossed
    assert stray_modules(planted) == ["pytest_citecheck.misc"]
