"""docs/architecture.md maps the package as it is, so it cannot go stale again.

Its module tree (the fenced block that starts with ``pytest_citecheck/``) lists every
module of the package, each on its own line under its folder, and nothing that does
not exist; a package's ``__init__.py`` is listed when it holds more than a docstring.
Every path the page names in backticks exists, and every code name it cites in
backticks (``Engine.preflight``, ``engine/gate.evaluate``, ``finish_run``) is
defined in the package: a class, function, constant, field, parameter or a value
the package spells.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_citecheck"
DOC = ROOT / "docs" / "architecture.md"
TREE_ROOT = "pytest_citecheck/"
_ENTRY = re.compile(r"(?P<name>\w+(?:\.py|/))(?:\s|$)")
_CODE = re.compile(r"`([^`\n]+)`")
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_PATH = re.compile(r"[\w.]+(?:/[\w.]*)+|\w+\.py")


class TreeError(ValueError):
    pass


def tree_block(text: str) -> list[tuple[int, str]]:
    """The lines (numbered in the file) of the fenced block whose first line is
    ``pytest_citecheck/``."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.strip() == "```" and start + 1 < len(lines) and lines[start + 1] == TREE_ROOT:
            block = []
            for number in range(start + 2, len(lines)):
                if lines[number].strip() == "```":
                    return block
                block.append((number + 1, lines[number]))
            break
    raise TreeError(f"no fenced block starting with the line {TREE_ROOT!r}")


def listed_modules(text: str) -> dict[str, int]:
    """Each module path the tree lists (``engine/core.py``; a folder as ``engine/``)
    and its line in the file. An entry's name stands two spaces deeper than its
    folder's; a deeper line continues the description above it."""
    found: dict[str, int] = {}
    folders: list[str] = []
    for number, line in tree_block(text):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        depth, odd = divmod(indent, 2)
        depth -= 1
        if odd or depth < 0 or depth > len(folders):
            continue  # a description's continuation
        match = _ENTRY.match(line.lstrip(" "))
        if match is None:
            raise TreeError(
                f"docs/architecture.md:{number}: {line.strip()!r} stands where a module's "
                "name is expected: start the line with `name.py` or `folder/`, or indent a "
                "description line under the description above it"
            )
        name = match["name"]
        del folders[depth:]
        path = "".join(folders) + name
        if path in found:
            raise TreeError(f"docs/architecture.md:{number}: {path} is listed twice")
        found[path] = number
        if name.endswith("/"):
            folders.append(name)
    return found


def _is_bare(path: Path) -> bool:
    """A module that holds only a docstring (and ``from __future__`` imports)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for node in body:
        docstring = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            return False
    return True


def real_modules(root: Path = PACKAGE) -> tuple[set[str], set[str]]:
    """The package's modules and folders as the tree names them: the ones it must list,
    and the bare ``__init__.py`` files it may list."""
    required: set[str] = set()
    optional: set[str] = set()
    for path in root.rglob("*.py"):
        relative = path.relative_to(root).as_posix()
        if path.name == "__init__.py" and _is_bare(path):
            optional.add(relative)
        else:
            required.add(relative)
        if path.name == "__init__.py" and path.parent != root:
            required.add(path.parent.relative_to(root).as_posix() + "/")
    return required, optional


def tree_problems(text: str, root: Path = PACKAGE) -> list[str]:
    listed = listed_modules(text)
    required, optional = real_modules(root)
    missing = sorted(required - set(listed))
    extra = sorted(set(listed) - required - optional)
    problems = []
    if missing:
        problems.append(
            "docs/architecture.md's module tree does not list these modules of "
            "pytest_citecheck: add a line for each under its folder (its name two spaces "
            "deeper than the folder's, then what it holds):\n  " + "\n  ".join(missing)
        )
    if extra:
        problems.append(
            "docs/architecture.md's module tree lists modules that do not exist (moved, "
            "renamed or removed): remove them or write their new place:\n  "
            + "\n  ".join(f"{path} (line {listed[path]})" for path in extra)
        )
    return problems


@dataclass
class Names:
    """What the package defines: module paths, each module's and each class's names,
    and every name or value spelled anywhere in it."""

    modules: dict[str, set[str]] = field(default_factory=dict)  # dotted -> top-level
    classes: dict[str, set[str]] = field(default_factory=dict)  # class -> members
    anywhere: set[str] = field(default_factory=set)


def package_names(root: Path = PACKAGE) -> Names:
    names = Names()
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        names.modules.setdefault(dotted, set()).update(_defined(tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names.classes.setdefault(node.name, set()).update(_defined(node.body))
        # Every word of the module: its names, its imports (`_pytest`), the values it spells.
        names.anywhere.update(re.findall(r"\w+", source))
    return names


def _defined(body: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            found.update(_defined(node.body))
    return found


def _resolves(reference: str, names: Names, *, strict: bool = False) -> bool:
    """``Class.member`` when the qualifier is a class of the package; ``module.name``
    (a module by its last dotted parts) when it is a module that defines the name
    (``strict``: only so); otherwise (``terms.option``: a variable's attribute) both
    parts spelled somewhere. A plain name: spelled somewhere in the package."""
    qualifier, _, last = reference.rpartition(".")
    if not qualifier:
        return last in names.anywhere
    short = qualifier.rpartition(".")[2]
    if short in names.classes:
        return last in names.classes[short]
    if any(
        (dotted == qualifier or dotted.endswith("." + qualifier)) and last in top
        for dotted, top in names.modules.items()
    ):
        return True
    return not strict and short in names.anywhere and last in names.anywhere


def _path_reference(code: str) -> tuple[str, str] | None:
    """A backticked path split into the file and the name it cites in it:
    ``engine/gate.py`` -> (engine/gate.py, ""), ``engine/gate.evaluate`` ->
    (engine/gate.py, evaluate), ``plugin/`` -> (plugin/, ""); None for no path."""
    if not _PATH.fullmatch(code):
        return None
    if code.endswith((".py", "/")):
        return code, ""
    module, dot, name = code.rpartition(".")
    if "/" in module and dot and _NAME.fullmatch(name):
        return module + ".py", name
    return code, ""


def _path_problem(code: str, root: Path, repo: Path, names: Names) -> str | None:
    split = _path_reference(code)
    assert split is not None
    path, attribute = split
    if path.startswith(("tests/", "docs/", "scripts/", "bench/")):
        exists = (repo / path).exists()
    elif "/" in path:
        exists = (root / path).exists()
    else:  # a module by its file name alone (`report_hooks.py`)
        exists = any(root.rglob(path))
    if not exists:
        return f"`{code}`: no {path} in the package"
    module = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    if attribute and not _resolves(f"{module}.{attribute}", names, strict=True):
        return f"`{code}`: {path} defines no {attribute}"
    return None


def reference_problems(text: str, root: Path = PACKAGE, repo: Path = ROOT) -> list[str]:
    """Each backticked path that does not exist and each backticked code name (or the
    function a backticked call names) that the package does not define, with its line."""
    names = package_names(root)
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        for code in _CODE.findall(line):
            code = code.strip()
            call = re.match(r"([A-Za-z_][\w.]*)\(", code)
            if call:
                code = call[1]
            if _path_reference(code) is not None:
                problem = _path_problem(code, root, repo, names)
            elif _NAME.fullmatch(code) and not _resolves(code, names):
                problem = (
                    f"`{code}` names nothing the package defines: it was renamed or "
                    "removed; write its present name"
                )
            else:
                problem = None
            if problem:
                problems.append(f"docs/architecture.md:{number}: {problem}")
    return problems


def test_the_module_tree_lists_every_module_and_nothing_else() -> None:
    problems = tree_problems(DOC.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_every_name_the_page_cites_exists() -> None:
    problems = reference_problems(DOC.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def _layering_test_order() -> tuple[list[str], list[str]]:
    """LAYERS and FRONT_ENDS as tests/unit/test_layers.py holds them."""
    found: dict[str, list[str]] = {}
    tree = ast.parse((ROOT / "tests" / "unit" / "test_layers.py").read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id in ("LAYERS", "FRONT_ENDS"):
            found[target.id] = list(ast.literal_eval(node.value))
    return found["LAYERS"], found["FRONT_ENDS"]


def test_the_layer_line_is_the_layering_tests_order() -> None:
    layers, front_ends = _layering_test_order()
    floors = [layer for layer in layers if layer != "front end"]
    line = " < ".join([*floors, "{" + ", ".join(front_ends) + "}"])
    assert f"\n```\n{line}\n```\n" in DOC.read_text(encoding="utf-8"), (
        "docs/architecture.md's layer line must read, as tests/unit/test_layers.py "
        f"holds the layers:\n{line}"
    )


# -- the checks shown to catch what they are for, on a planted package --------------------

_PLANTED_TREE = """\
# Planted

```
pytest_citecheck/
  __init__.py        the version
  core/              below
    kept.py          Kept, which the text
                     below.py continues (a description, not a module)
    gone.py          removed since
  moved.py           now elsewhere
```
"""


def _plant(tmp_path: Path) -> Path:
    root = tmp_path / "pytest_citecheck"
    files = {
        "__init__.py": "__version__ = '1'\n",
        "core/__init__.py": '"""A bare package."""\n',
        "core/kept.py": "class Kept:\n    def run(self, *, budget: int) -> None: ...\n",
        "core/new.py": "LIMIT = 1\n",
        "engine/__init__.py": "from x import y\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_a_stale_tree_is_caught_with_what_to_add_and_remove(tmp_path: Path) -> None:
    problems = tree_problems(_PLANTED_TREE, _plant(tmp_path))
    assert len(problems) == 2
    missing, extra = problems
    assert missing.endswith(":\n  core/new.py\n  engine/\n  engine/__init__.py")
    assert "add a line for each under its folder" in missing
    assert extra.endswith(":\n  core/gone.py (line 9)\n  moved.py (line 10)")
    assert "remove them or write their new place" in extra


def test_a_line_that_is_no_module_name_is_named(tmp_path: Path) -> None:
    text = _PLANTED_TREE.replace("  moved.py ", "  moved ")
    with pytest.raises(TreeError, match=r"architecture.md:10: 'moved .*`name.py` or `folder/`"):
        tree_problems(text, _plant(tmp_path))


def test_a_removed_name_is_caught(tmp_path: Path) -> None:
    root = _plant(tmp_path)
    text = (
        "`Kept.run` `core/kept.py` `core/kept.Kept` `budget` `LIMIT` `Kept`\n"
        "`Kept.verify_claims` `verify_claims` `core/gone.py` `core/kept.Gone`\n"
    )
    assert reference_problems(text, root, tmp_path) == [
        "docs/architecture.md:2: `Kept.verify_claims` names nothing the package defines: "
        "it was renamed or removed; write its present name",
        "docs/architecture.md:2: `verify_claims` names nothing the package defines: "
        "it was renamed or removed; write its present name",
        "docs/architecture.md:2: `core/gone.py`: no core/gone.py in the package",
        "docs/architecture.md:2: `core/kept.Gone`: core/kept.py defines no Gone",
    ]
