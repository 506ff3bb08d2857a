"""No room of the package grows past what one reader holds: no module over 600 lines
(except the option table's data, options/table.py), no class over 300 lines.

Today's big rooms are being split on parallel branches; until each split is merged, the room
stands in an allow-list with the branch that splits it. The list only shrinks: an
allowed module or class that is no longer over its limit fails too, so the
integrator removes it from the list when the split lands.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_citecheck"
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 300
# The option table's data: one entry per setting, read as a table, not as code.
EXEMPT_MODULES = {"options/table.py": "the option table's data"}

# Today's offenders, each with the branch that splits it. Empty it as the
# splits are merged; never add to it.
ALLOWED_MODULES: dict[str, str] = {}
ALLOWED_CLASSES: dict[str, str] = {}


def module_lines(root: Path = PACKAGE) -> dict[str, int]:
    """Each module's path under the package and its number of lines."""
    return {
        path.relative_to(root).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(root.rglob("*.py"))
    }


def class_lines(root: Path = PACKAGE) -> dict[str, int]:
    """``module::Class`` (nested classes as ``Outer.Inner``) and its lines, from its
    first decorator to its last line."""
    found: dict[str, int] = {}

    def walk(node: ast.AST, module: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found[f"{module}::{name}"] = (child.end_lineno or child.lineno) - first + 1
                name += "."
            walk(child, module, name)

    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        walk(ast.parse(path.read_text(encoding="utf-8")), module, "")
    return found


def over_limits(sizes: dict[str, int], limit: int, allowed: dict[str, str], kind: str) -> list[str]:
    """What a reader must do: split what is over ``limit`` and not allowed, take off the
    allow-list what is no longer over it (or no longer exists)."""
    problems = [
        f"{name}: {lines} lines, over the {limit}-line limit for a {kind}; split it along "
        "what it does"
        for name, lines in sorted(sizes.items())
        if lines > limit and name not in allowed
    ]
    for name, branch in sorted(allowed.items()):
        if name not in sizes:
            problems.append(
                f"{name} (allowed for {branch}) no longer exists: take it off the allow-list "
                "in tests/unit/test_sizes.py"
            )
        elif sizes[name] <= limit:
            problems.append(
                f"{name} (allowed for {branch}) is {sizes[name]} lines, within the {limit}-line "
                "limit now: take it off the allow-list in tests/unit/test_sizes.py"
            )
    return problems


def test_no_module_is_over_600_lines() -> None:
    sizes = {k: v for k, v in module_lines().items() if k not in EXEMPT_MODULES}
    problems = over_limits(sizes, MAX_MODULE_LINES, ALLOWED_MODULES, "module")
    assert not problems, "\n".join(problems)


def test_no_class_is_over_300_lines() -> None:
    problems = over_limits(class_lines(), MAX_CLASS_LINES, ALLOWED_CLASSES, "class")
    assert not problems, "\n".join(problems)


def test_the_exempt_option_table_is_still_there() -> None:
    assert set(EXEMPT_MODULES) <= set(module_lines()), "the exemption names a module that is gone"


def _plant(root: Path, files: dict[str, str]) -> Path:
    package = root / "planted"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_a_long_module_and_a_long_class_are_caught(tmp_path: Path) -> None:
    body = "".join(f"        def m{i}(self) -> int:\n            return {i}\n" for i in range(150))
    package = _plant(
        tmp_path,
        {
            "big.py": "x = 1\n" * 601,
            "ok.py": "x = 1\n" * 600,
            "sub/cls.py": f"@dataclass\nclass Outer:\n    class Inner:\n{body}",
        },
    )
    problems = over_limits(module_lines(package), MAX_MODULE_LINES, {}, "module")
    assert problems == [
        "big.py: 601 lines, over the 600-line limit for a module; split it along what it does"
    ]
    classes = class_lines(package)
    # From the decorator; the inner class from its own line; 150 methods of 2 lines.
    assert classes["sub/cls.py::Outer"] == 2 + 1 + 300
    assert classes["sub/cls.py::Outer.Inner"] == 1 + 300
    problems = over_limits(classes, MAX_CLASS_LINES, {}, "class")
    assert [p.split(":")[2] for p in problems] == ["Outer", "Outer.Inner"]


def test_an_allowed_room_within_its_limit_must_leave_the_list(tmp_path: Path) -> None:
    package = _plant(tmp_path, {"small.py": "x = 1\n"})
    problems = over_limits(
        module_lines(package),
        MAX_MODULE_LINES,
        {"small.py": "i38-split", "gone.py": "i38-report"},
        "module",
    )
    assert problems == [
        "gone.py (allowed for i38-report) no longer exists: take it off the allow-list in "
        "tests/unit/test_sizes.py",
        "small.py (allowed for i38-split) is 1 lines, within the 600-line limit now: take it "
        "off the allow-list in tests/unit/test_sizes.py",
    ]
