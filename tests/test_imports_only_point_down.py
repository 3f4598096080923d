"""Every import in `src/convcanon` points down the layers, and no modules import each other.

Bottom to top: shared support, the dialects (each its own group: a dialect never imports another
dialect), the file adapter that knows every half-B dialect, the conversions and HLO passes, the
reference interpreters, the differential checks, the commands. Imports are read with `ast`, so a
function-level or `TYPE_CHECKING` import counts as much as one at the top of a file, and so does
`importlib.import_module("convcanon...")` with a literal name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

import convcanon

PACKAGE = Path(convcanon.__file__).resolve().parent

# (layer, group, module patterns), bottom to top. A module may import a lower layer, or its own
# group of its own layer; a module listed by name is placed there, any other by the longest
# pattern that matches it.
LAYERS: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "support",
        "support",
        (
            "convcanon.child_process",
            "convcanon.diagnostics",
            "convcanon.diagnostic_verifier",
            "convcanon.fileio",
            "convcanon.fileio.*",
            "convcanon.ir_kind",
            "convcanon.options",
            "convcanon.pass_instruments",
            "convcanon.pipeline",
            "convcanon.posix_regex",
            "convcanon.records",
            # pure shape and layout algebra (no IR), shared by both half-B dialects
            "convcanon.migraphx.layout",
            "convcanon.migraphx.shape_rules",
        ),
    ),
    (
        "dialects",
        "hlo",
        (
            "convcanon.hlo",
            "convcanon.hlo.context",
            "convcanon.hlo.conv_params",
            "convcanon.hlo.dialect_check",
            "convcanon.hlo.dialects",
            "convcanon.hlo.hlo_import",
            "convcanon.hlo.io",
            "convcanon.hlo.legalize",
            "convcanon.hlo.params",
            "convcanon.hlo.resources",
        ),
    ),
    ("dialects", "migraphx", ("convcanon.migraphx", "convcanon.migraphx.*")),
    ("dialects", "tosa", ("convcanon.tosa", "convcanon.tosa.*")),
    ("all half-B dialects", "xdsl_io", ("convcanon.xdsl_io",)),
    ("conversions", "conversions", ("convcanon.conversion", "convcanon.conversion.*")),
    ("conversions", "conversions", ("convcanon.hlo.*", "convcanon.refine")),
    ("reference", "reference", ("convcanon.reference", "convcanon.reference.*")),
    ("verify", "verify", ("convcanon.verify", "convcanon.verify.*")),
    (
        "commands",
        "commands",
        (
            "convcanon",  # the lazy public API
            "convcanon.api",
            "convcanon.cli",
            "convcanon.cli_arguments",
            "convcanon.command_arguments",
            "convcanon.driver",
            "convcanon.examples",
            "convcanon.examples.*",
            "convcanon.graph",
            "convcanon.hlo.explain",
            "convcanon.migraphx_api",
            "convcanon.opt_arguments",
            "convcanon.reference.command",
            "convcanon.verify.command",
            "convcanon.verify.run_inputs",
            "convcanon.verify.local",  # judges with the command's comparison, runs pipelines
        ),
    ),
]
RANK = {layer: rank for rank, layer in enumerate(dict.fromkeys(name for name, _, _ in LAYERS))}


def module_files() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["convcanon", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def place(module: str) -> tuple[str, str]:
    """The (layer, group) of a module: its own name if listed, else the longest matching pattern."""
    matches = [
        ("*" not in pattern, len(pattern), layer, group)
        for layer, group, patterns in LAYERS
        for pattern in patterns
        if fnmatchcase(module, pattern)
    ]
    assert matches, f"{module} is in no layer: add it to LAYERS"
    *_, layer, group = max(matches)
    return layer, group


def imported_names(tree: ast.Module, module: str, is_package: bool) -> Iterator[tuple[str, int]]:
    """Every dotted name the module imports, with its line, at any depth: `from pkg import x`
    gives `pkg.x` (a module, or a name defined in `pkg`)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [base])])
            yield from ((f"{base}.{alias.name}", node.lineno) for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value, node.lineno


def edges_of(source: str, module: str, is_package: bool, modules: set[str]) -> dict[str, int]:
    """The modules of `modules` that `source` imports -> the line of the first such import.
    A name resolves to the longest module it starts with (`pkg.function` is `pkg`)."""
    edges: dict[str, int] = {}
    for name, line in imported_names(ast.parse(source), module, is_package):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            edges.setdefault(name, line)
    return edges


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: line of its first import}."""
    files = module_files()
    return {
        module: edges_of(path.read_text(), module, path.name == "__init__.py", set(files))
        for module, path in files.items()
    }


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    files = module_files()
    found = []
    for module, edges in sorted(graph.items()):
        layer, group = place(module)
        for target, line in sorted(edges.items()):
            target_layer, target_group = place(target)
            if RANK[target_layer] < RANK[layer]:
                continue
            if RANK[target_layer] == RANK[layer] and target_group == group:
                continue
            where = files[module].relative_to(PACKAGE.parent)
            found.append(
                f"{where}:{line}: {module} ({layer}/{group}) imports {target}"
                f" ({target_layer}/{target_group})"
            )
    return found


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_every_module_has_a_layer():
    for module in module_files():
        place(module)


def test_no_module_imports_a_layer_above_it_or_another_group_of_its_layer():
    found = upward_imports(import_graph())
    assert not found, "imports that point up or across:\n" + "\n".join(found)


def test_no_modules_import_each_other():
    graph = import_graph()
    described = []
    for cycle in import_cycles(graph):
        members = set(cycle)
        edges = [
            f"  {module} -> {target} (line {line})"
            for module in cycle
            for target, line in sorted(graph[module].items())
            if target in members
        ]
        described.append(" <-> ".join(cycle) + "\n" + "\n".join(edges))
    assert not described, "import cycles:\n" + "\n".join(described)


def folder_graph(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, str]]:
    """The import graph between folders: a module counts as its folder right below
    `convcanon` (`convcanon.conversion.migraphx_to_tosa.x` is `convcanon.conversion`; a
    top-level module is itself), unless LAYERS places it in another layer than its folder (a
    command kept beside its dialect, `convcanon.hlo.explain`, is itself); each edge names one
    import that makes it."""

    def folder(module: str) -> str:
        top = ".".join(module.split(".")[:2])
        return module if place(module)[0] != place(top)[0] else top

    folders: dict[str, dict[str, str]] = {}
    for module, edges in sorted(graph.items()):
        for target, line in sorted(edges.items()):
            a, b = folder(module), folder(target)
            if a != b:
                folders.setdefault(a, {}).setdefault(b, f"{module} -> {target} (line {line})")
    return folders


def test_no_folders_import_each_other():
    """A package (say `migraphx`) whose `__init__` reached up to a command module that imports
    the conversion, which imports `migraphx`, is a cycle of folders though no two modules
    import each other."""
    folders = folder_graph(import_graph())
    cycles = import_cycles({a: dict.fromkeys(edges, 0) for a, edges in folders.items()})
    described = [
        " <-> ".join(cycle)
        + "".join(f"\n  {folders[a][b]}" for a in cycle for b in cycle if b in folders.get(a, {}))
        for cycle in cycles
    ]
    assert not described, "folder cycles:\n" + "\n".join(described)


# Each table of per-op classes or functions -> the module (or modules) that join it and the op
# families it joins from.
REGISTRIES = {
    "migraphx ops": (
        "convcanon.migraphx.dialect",  # the program importer reads its instruction table here
        (
            "convcanon.migraphx.ops",
            "convcanon.migraphx.boundary_ops",
            "convcanon.migraphx.quant_ops",
        ),
    ),
    "lowerings": (
        "convcanon.conversion.migraphx_to_tosa.function_lowering",
        (
            "convcanon.conversion.migraphx_to_tosa.lowerings",
            "convcanon.conversion.migraphx_to_tosa.reduce_lowerings",
            "convcanon.conversion.migraphx_to_tosa.shape_lowerings",
            "convcanon.conversion.migraphx_to_tosa.quant_lowerings",
        ),
    ),
    "interpreter kernels": (
        "convcanon.reference.migraphx_interp",
        (
            "convcanon.reference.migraphx_kernels",
            "convcanon.reference.tosa_interp",
            "convcanon.reference.migraphx_quant_interp",
        ),
    ),
    "tosa ops": (
        ("convcanon.tosa.ops", "convcanon.xdsl_io"),  # the dialect, and its quantized ops beside it
        ("convcanon.tosa.movement_ops", "convcanon.tosa.compute_ops", "convcanon.tosa.quant_ops"),
    ),
}


def test_each_registry_is_joined_in_one_place_from_families_that_do_not_import_each_other():
    graph = import_graph()
    found = []
    for registry, (joiner, families) in REGISTRIES.items():
        joiners = (joiner,) if isinstance(joiner, str) else joiner
        found += [
            f"{registry}: no one of {', '.join(joiners)} imports {f}"
            for f in families
            if not any(f in graph[j] for j in joiners)
        ]
        for family in families:
            found += [
                f"{registry}: {family} imports {other}"
                for other in (*joiners, *families)
                if other in graph[family]
            ]
    assert not found, "\n".join(found)


def test_the_graph_sees_every_kind_of_import():
    """The checks above are only as good as the graph: imports inside a function, under
    `TYPE_CHECKING`, relative, or by `importlib.import_module` with a literal name all count."""
    source = """
from typing import TYPE_CHECKING
import importlib
from convcanon.a import b, helper
from . import c
if TYPE_CHECKING:
    from convcanon.d import Thing
def later():
    import convcanon.e.f
    return importlib.import_module("convcanon.g"), "convcanon.h:entry"
"""
    modules = {"convcanon", "convcanon.a", "convcanon.a.b", "convcanon.p", "convcanon.p.m"}
    modules |= {"convcanon.p.c", "convcanon.d", "convcanon.e", "convcanon.g", "convcanon.h"}
    edges = edges_of(source, "convcanon.p.m", False, modules)
    assert edges == {
        "convcanon.a.b": 4,
        "convcanon.a": 4,  # `helper` is a name defined in convcanon.a
        "convcanon.p.c": 5,
        "convcanon.d": 7,
        "convcanon.e": 9,  # the longest module `convcanon.e.f` starts with
        "convcanon.g": 10,  # a string naming an entry point is not an import
    }
