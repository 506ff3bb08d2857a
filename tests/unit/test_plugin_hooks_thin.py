"""The pytest front end stays thin, as pytest-xdist's and syrupy's hooks are: each
hook in ``plugin/__init__.py`` and each of ``SessionHooks``' hooks hands its work on
in at most five lines; no module of ``plugin/`` is over 600 lines, no class over 300."""

from __future__ import annotations

import ast
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[2] / "pytest_citecheck" / "plugin"
MAX_HOOK_LINES = 5
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 300


def body_lines(func: ast.FunctionDef) -> int:
    """The lines of a function's body, its docstring left out."""
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body:
        return 0
    return (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def fat_hooks(source: str, where: str) -> list[str]:
    """The hooks (``pytest_*``, and fixtures) of ``source`` over the limit."""
    fat = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
        if (node.name.startswith("pytest_") or fixture) and body_lines(node) > MAX_HOOK_LINES:
            fat.append(f"{where}:{node.lineno} {node.name}: {body_lines(node)} lines")
    return fat


def session_hooks_source() -> str:
    tree = ast.parse((PLUGIN / "session_hooks.py").read_text(encoding="utf-8"))
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SessionHooks"]
    assert found, "SessionHooks is not in plugin/session_hooks.py"
    return ast.unparse(found[0])


def test_the_plugins_hooks_are_delegations() -> None:
    source = (PLUGIN / "__init__.py").read_text(encoding="utf-8")
    assert fat_hooks(source, "plugin/__init__.py") == []
    assert fat_hooks(session_hooks_source(), "SessionHooks") == []


def test_a_fat_hook_is_seen() -> None:
    fat = "def pytest_configure(config):\n" + "    x = 1\n" * 6
    thin = 'def pytest_configure(config):\n    """Doc."""\n' + "    x = 1\n" * 5
    assert fat_hooks(fat, "f") == ["f:1 pytest_configure: 6 lines"]
    assert fat_hooks(thin, "f") == []


def test_no_plugin_module_or_class_is_too_big() -> None:
    big = []
    for path in sorted(PLUGIN.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            big.append(f"{path.name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_CLASS_LINES:
                    big.append(f"{path.name}:{node.lineno} class {node.name}: {size} lines")
    assert big == []
