"""Writes frontends/service/config_fields.py, ServiceConfig's typed fields for the
option table's settings: ``python -m pytest_citecheck.frontends.service.config_fields_gen``
(``--check``: exit 1 when the committed module differs from the table).

Each field's type is the table's ``service_type``; its default is read from the table
when the service starts (``serve_default``, ``composed_default``), so a default changed
in the table needs no new module, a setting added or retyped does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from pytest_citecheck.core.files import generated_file_main
from pytest_citecheck.options import settings_map
from pytest_citecheck.options.table import OPTIONS, Flag, Option, cli_default

MODULE = Path(__file__).with_name("config_fields.py")
_COMMAND = "python -m pytest_citecheck.frontends.service.config_fields_gen"
# The imports a field's type may need, by the name it uses.
_IMPORTS = {
    "Path": "from pathlib import Path",
    "Prices": "from pytest_citecheck.core.prices import Prices",
    "RecordMode": "from pytest_citecheck.core.record_mode import RecordMode",
}


def by_field() -> dict[str, list[Option]]:
    """The settings the service exposes, by the ServiceConfig field they set (several
    settings make up one field, e.g. ``prices`` from ``price_credit`` and ``prices``)."""
    fields: dict[str, list[Option]] = {}
    for option in OPTIONS:
        if isinstance(option.service, str):
            fields.setdefault(option.service, []).append(option)
    return fields


def serve_default(name: str) -> Any:
    """Field ``name``'s default: what ``citecheck serve`` starts with when its flag is
    not given."""
    (option,) = by_field()[name]
    if option.action == "append":
        return ()
    flag = option.flag_of("serve")
    return cli_default(option, flag) if isinstance(flag, Flag) else option.default


def composed_default(name: str) -> Callable[[], Any]:
    """The default factory of a field several settings make up (none of them given)."""
    return partial(settings_map.COMPOSE[name], {})


def _field_line(name: str, options: list[Option]) -> str:
    types = {option.service_type for option in options}
    if len(types) != 1 or None in types:
        raise ValueError(
            f"options/table.py: the settings {', '.join(o.name for o in options)} set "
            f"ServiceConfig's field {name!r} but give it the service_type(s) "
            f"{sorted(map(str, types))}: give each one and the same type"
        )
    (annotation,) = types
    if len(options) > 1:
        return f'    {name}: {annotation} = field(default_factory=composed_default("{name}"))'
    return f'    {name}: {annotation} = field(default=serve_default("{name}"))'


def render() -> str:
    """The module, from the table."""
    lines = [_field_line(name, options) for name, options in by_field().items()]
    body = "\n".join(lines)
    imports = [line for word, line in _IMPORTS.items() if word in body]
    stdlib = [line for line in imports if not line.startswith("from pytest_citecheck")]
    ours = [line for line in imports if line not in stdlib]
    head = [
        '"""ServiceConfig\'s fields for the settings the option table gives the service.',
        "",
        "Generated from pytest_citecheck/options/table.py by",
        f"``{_COMMAND}``: do not edit",
        "(tests/integration/test_settings_mapping.py fails when it is stale).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass, field",
        "from typing import TYPE_CHECKING",
        "",
        "from pytest_citecheck.frontends.service.config_fields_gen import "
        "composed_default, serve_default",
        "",
        "if TYPE_CHECKING:",
        *(f"    {line}" for line in stdlib),
        *([""] if stdlib and ours else []),
        *(f"    {line}" for line in ours),
        "",
        "",
        "@dataclass(frozen=True)",
        "class TableFields:",
        '    """One field per setting the table gives ``citecheck serve``, in table order."""',
        "",
    ]
    return "\n".join(head) + "\n" + body + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    return generated_file_main(argv, _COMMAND, MODULE, render, "module")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
