"""No module replaces entries of `sys.modules`: start-up is paid honestly or not at all (a
stand-in for `logging`, `numpy` or a package's `__init__` breaks silently when what it stands
in for changes). Read with `ast`: any assignment, deletion or mutating call on `sys.modules`."""

from __future__ import annotations

import ast
from pathlib import Path

import convcanon

PACKAGE = Path(convcanon.__file__).resolve().parent
MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _is_sys_modules(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "modules"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def writes_to_sys_modules(source: str) -> list[int]:
    """Lines that assign, delete or mutate `sys.modules` (or an item of it)."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MUTATORS and _is_sys_modules(node.func.value):
                lines.append(node.lineno)
        for target in targets:
            if _is_sys_modules(target) or (
                isinstance(target, ast.Subscript) and _is_sys_modules(target.value)
            ):
                lines.append(target.lineno)
    return sorted(lines)


def test_no_module_writes_to_sys_modules():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in writes_to_sys_modules(path.read_text())
    ]
    assert not found


def test_each_kind_of_write_is_seen():
    source = (
        "import sys\n"
        "sys.modules['a'] = None\n"
        "del sys.modules['a']\n"
        "sys.modules.update({})\n"
        "sys.modules.setdefault('b', None)\n"
        "sys.modules = {}\n"
        "x = sys.modules.get('c')\n"  # a read
    )
    assert writes_to_sys_modules(source) == [2, 3, 4, 5, 6]
