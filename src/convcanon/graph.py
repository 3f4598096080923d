"""`convcanon graph`: the dataflow graph of a module before and after a pipeline, side by side.

Convolutions are highlighted, and so are the ops the pipeline created, by provenance: each input
op is marked before the pipeline runs on the module, and an op of the "after" graph that is not
an input op, kept, is one it created (not the model's own ops of the same kind). Rendering uses
Graphviz's `dot`; `--format dot` needs nothing but this module. Graphviz's layout grows much
faster than the graph (a 3,000-op chain took 3.9 GB before it died), so a rendered graph is
refused past a node limit, and `dot` runs under a time and memory limit.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from convcanon.child_process import parent_death_signal
from convcanon.diagnostics import ConvcanonError, SourceLoc, UsageError
from convcanon.fileio.limits import check_timeout, parse_byte_size
from convcanon.fileio.module_input import read_mlir_input
from convcanon.fileio.output_file import check_output_path, write_output

DEFAULT_MAX_NODES = 1500
DEFAULT_TIMEOUT = 120.0  # seconds
DEFAULT_MEMORY_LIMIT = "4GiB"
_EXTENSIONS = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot"}


@dataclass(frozen=True)
class Node:
    key: str  # unique within its graph
    op: str  # e.g. stablehlo.convolution
    result_type: str
    inputs: tuple[str, ...]  # keys of producer nodes (block arguments are nodes too)
    created: bool = False  # an op the pipeline created (not one of the input's, kept)


def _short_type(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _hlo_ops(parsed: object) -> Iterator[tuple[int, Any]]:
    """(function index, op) of each op of each function's entry block, in order."""
    from convcanon.hlo.io import HloFile

    assert isinstance(parsed, HloFile)
    for index, func in enumerate(parsed.module.body.operations):
        if func.operation.name == "func.func" and func.operation.regions[0].blocks:
            for op in func.operation.regions[0].blocks[0].operations:
                yield index, op.operation


def _hlo_nodes(parsed: object, created: Callable[[Any], bool] | None = None) -> list[Node]:
    from jaxlib.mlir import ir

    from convcanon.hlo.io import HloFile

    assert isinstance(parsed, HloFile)
    nodes: list[Node] = []
    keys: dict[ir.Operation, str] = {}
    for index, func in enumerate(parsed.module.body.operations):
        if func.operation.name != "func.func" or not func.operation.regions[0].blocks:
            continue
        entry = func.operation.regions[0].blocks[0]
        arg_keys = []
        for arg in entry.arguments:
            k = f"f{index}_arg{arg.arg_number}"
            arg_keys.append(k)
            nodes.append(Node(k, f"arg{arg.arg_number}", _short_type(str(arg.type)), ()))

        def key_of(value: ir.Value, arg_keys: list[str] = arg_keys) -> str:
            owner = value.owner
            if isinstance(owner, ir.Block):
                return arg_keys[ir.BlockArgument(value).arg_number]
            return keys.get(owner.operation, "?")  # type: ignore[union-attr]

        for op in entry.operations:
            operation = op.operation
            inputs = tuple(key_of(v) for v in operation.operands)
            k = f"n{len(nodes)}"
            keys[operation] = k
            result_type = str(operation.results[0].type) if len(operation.results) else ""
            new = created is not None and created(operation)
            nodes.append(Node(k, operation.name, _short_type(result_type), inputs, new))
    return nodes


_ORIGIN = "convcanon.mark.origin."  # the name that marks an input op (hlo.context.MARK_PREFIX)


def _mark_origins(parsed: object) -> list[str]:
    """Wrap each input op's location in a name that numbers it; returns each number's op name.

    An op the pipeline creates carries no mark, or (ops a rewrite builds take the location of
    the op they replace) a mark it shares with the others built for that op."""
    from jaxlib.mlir import ir

    from convcanon.hlo.io import HloFile

    assert isinstance(parsed, HloFile)
    names = []
    with parsed.module.context:
        for number, (_, op) in enumerate(list(_hlo_ops(parsed))):
            op.location = ir.Location.name(f"{_ORIGIN}{number}", childLoc=op.location)
            names.append(op.name)
    return names


def _marks(location: Any) -> set[int]:
    """The origin numbers in a location tree (a fusion of two ops' locations has both)."""
    from jaxlib.mlir import ir

    found: set[int] = set()
    pending, seen = [location], 0
    while pending and seen < 256:  # location trees are shallow; a bound keeps a hostile one cheap
        current, seen = pending.pop(), seen + 1
        if type(current) is ir.Location:  # the bindings hand out the base class: downcast it
            with current.context:
                current = ir.Location.from_attr(current.attr)
        if isinstance(current, ir.NameLoc):
            if current.name_str.startswith(_ORIGIN):
                found.add(int(current.name_str[len(_ORIGIN) :]))
            pending.append(current.child_loc)
        elif isinstance(current, ir.FusedLoc):
            pending += current.locations
        elif isinstance(current, ir.CallSiteLoc):
            pending += [current.callee, current.caller]
    return found


def _created_hlo_ops(parsed: object, names: list[str]) -> Callable[[Any], bool]:
    """Whether an op after the pipeline is one it created: an input op is the only op that
    carries its mark, under its own name; the ops built in place of one share its mark."""
    marks = {op: _marks(op.location) for _, op in _hlo_ops(parsed)}
    holders = Counter(mark for found in marks.values() for mark in found)

    def created(op: Any) -> bool:
        return not any(holders[mark] == 1 and names[mark] == op.name for mark in marks[op])

    return created


def _xdsl_nodes(parsed: object, created: Callable[[Any], bool] | None = None) -> list[Node]:
    from xdsl.ir import Block, Operation

    assert isinstance(parsed, Operation)
    nodes: list[Node] = []
    keys: dict[int, str] = {}

    def key_of(value: object) -> str:
        owner = getattr(value, "owner", None)
        if isinstance(owner, Block):
            k = f"{id(owner)}_arg{getattr(value, 'index', 0)}"
            if id(value) not in keys:
                keys[id(value)] = k
                nodes.append(Node(k, f"arg{getattr(value, 'index', 0)}", "", ()))
            return keys[id(value)]
        return keys.get(id(owner), "?")

    for op in parsed.walk():
        if op is parsed or op.name in ("func.func", "builtin.module"):
            continue
        inputs = tuple(key_of(v) for v in op.operands)
        k = f"n{len(nodes)}"
        keys[id(op)] = k
        result_type = str(op.results[0].type) if op.results else ""
        new = created is not None and created(op)
        nodes.append(Node(k, op.name, _short_type(result_type), inputs, new))
    return nodes


def _created_xdsl_ops(parsed: object) -> Callable[[Any], bool]:
    """xDSL ops are Python objects: an input op is one of the objects the input parsed to (all
    kept alive here, so no new op can take one's id)."""
    from xdsl.ir import Operation

    assert isinstance(parsed, Operation)
    inputs = list(parsed.walk())
    ids = {id(op) for op in inputs}
    return lambda op, inputs=inputs: id(op) not in ids


def _is_conv(op: str) -> bool:
    return op.endswith(("convolution", "dynamic_conv", "conv2d", "conv3d"))


def _drawn_panels(
    parsed: object, framework: str, passes: list[Any], pipeline: str
) -> list[tuple[str, list[Node]]]:
    """The input's graph, and the graph after `passes` with the ops they created marked: the
    input ops are tagged before the pipeline runs on the module, then found after it."""
    from convcanon.driver import run_pipeline

    if framework == "hlo":
        before = _hlo_nodes(parsed)
        if not passes:
            return [("input", before)]
        names = _mark_origins(parsed)
        run_pipeline(parsed, passes)
        return [
            ("input", before),
            (f"after {pipeline}", _hlo_nodes(parsed, _created_hlo_ops(parsed, names))),
        ]
    before = _xdsl_nodes(parsed)
    if not passes:
        return [("input", before)]
    created = _created_xdsl_ops(parsed)
    run_pipeline(parsed, passes)
    return [("input", before), (f"after {pipeline}", _xdsl_nodes(parsed, created))]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(panels: list[tuple[str, list[Node]]]) -> str:
    """One cluster per panel, laid out left to right; convs orange, ops the pipeline created
    green."""
    lines = [
        "digraph convcanon {",
        "  rankdir=TB; newrank=true;",
        '  node [shape=box, fontsize=10, fontname="Helvetica"];',
    ]
    for index, (title, nodes) in enumerate(panels):
        lines.append(f"  subgraph cluster_{index} {{")
        lines.append(f'    label="{_escape(title)}"; fontsize=14;')
        for node in nodes:
            style = ""
            if _is_conv(node.op):
                style = ', style=filled, fillcolor="#f8b26a"'
            elif node.created:
                style = ', style=filled, fillcolor="#9be39b"'
            elif node.op.startswith("arg"):
                style = ", shape=ellipse"
            label = node.op if not node.result_type else f"{node.op}\\n{_escape(node.result_type)}"
            lines.append(f'    p{index}_{node.key} [label="{label}"{style}];')
        for node in nodes:
            for source in node.inputs:
                if source != "?":
                    lines.append(f"    p{index}_{source} -> p{index}_{node.key};")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def format_for(output: str, fmt: str | None) -> str:
    """`--format` if given, else the output's extension; stdout and no extension mean SVG.

    A `--format` that contradicts a known extension (`--format svg -o g.png`) is refused: it
    would write a file whose name lies about its contents.
    """
    extension = "" if output == "-" else os.path.splitext(output)[1].lower()
    if fmt is not None:
        implied = _EXTENSIONS.get(extension)
        if implied is not None and implied != fmt:
            raise UsageError(
                f"--format {fmt} contradicts the output name {output!r} ({implied}); "
                "drop --format or rename the output"
            )
        return fmt
    if not extension:
        return "svg"
    if extension not in _EXTENSIONS:
        raise UsageError(
            f"cannot tell the graph format from {output!r}: use a .svg, .png or .dot name, "
            "or --format svg|png|dot"
        )
    return _EXTENSIONS[extension]


def _dot_child_setup(limit: int | None) -> Callable[[], None]:
    """What the `dot` child does before it runs: it ends with this process, and under an
    address-space limit a huge layout fails instead of swapping."""
    with_parent = parent_death_signal()

    def setup() -> None:
        with_parent()
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return setup


def render(
    dot_text: str,
    fmt: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    memory_limit: int | None = None,
    progress: str = "",
) -> bytes:
    """Run Graphviz's `dot`; past a second, say on stderr that it works and how long it took."""
    if fmt == "dot":
        return dot_text.encode()
    dot = shutil.which("dot")
    if dot is None:
        raise ConvcanonError(
            "rendering needs Graphviz's `dot` (apt-get install graphviz); use --format dot"
        )
    limit = memory_limit  # bound for the closure
    try:
        child = subprocess.Popen(
            [dot, f"-T{fmt}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_dot_child_setup(limit),
        )
    except OSError as err:  # e.g. ENOMEM: the limit is too small for dot to start at all
        raise ConvcanonError(
            f"cannot start Graphviz's dot under the memory limit of {limit} bytes "
            f"(--memory-limit): {err.strerror}"
        ) from None
    start = time.monotonic()
    slow = False
    try:
        try:
            stdout, stderr = child.communicate(dot_text.encode(), timeout=min(1.0, timeout))
        except subprocess.TimeoutExpired:
            slow = True
            print(f"graph: rendering {progress}with Graphviz ...", file=sys.stderr, flush=True)
            stdout, stderr = child.communicate(timeout=max(timeout - 1.0, 0.0))
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise ConvcanonError(
            f"Graphviz did not finish within {timeout:g} s (--timeout); "
            "draw a smaller module or use --format dot"
        ) from None
    if slow:
        print(f"graph: rendered in {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)
    if child.returncode != 0:
        message = stderr.decode(errors="replace").strip()
        memory_words = ("alloc", "memory", "failed to map")
        if limit and (child.returncode < 0 or any(w in message.lower() for w in memory_words)):
            raise ConvcanonError(
                f"Graphviz ran out of its memory limit of {limit} bytes (--memory-limit): "
                f"{message or f'killed by signal {-child.returncode}'}"
            )
        raise ConvcanonError(f"dot failed: {message}")
    return stdout


def graph_command(
    input_path: str,
    pipeline: str,
    fmt: str | None,
    output: str,
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    timeout: float = DEFAULT_TIMEOUT,
    memory_limit: str | int = DEFAULT_MEMORY_LIMIT,
) -> int:
    from convcanon.driver import FRAMEWORKS, choose_framework
    from convcanon.pipeline import parse_pipeline

    fmt = format_for(output, fmt)
    if max_nodes < 1:
        raise UsageError(f"--max-nodes must be at least 1, not {max_nodes}")
    check_timeout(timeout)
    limit = parse_byte_size(memory_limit, "memory limit")  # at least one byte: 0 is no bound
    passes = parse_pipeline(pipeline)
    check_output_path(input_path, output)
    filename, text = read_mlir_input(input_path)
    framework = choose_framework(passes, text)
    adapter = FRAMEWORKS[framework]
    with adapter.job():
        panels = _drawn_panels(adapter.parse_text(text, filename), framework, passes, pipeline)
    before = panels[0][1]
    if not before:
        raise ConvcanonError("the module has no ops to draw", SourceLoc(filename))
    nodes = sum(len(panel_nodes) for _, panel_nodes in panels)
    if fmt != "dot" and nodes > max_nodes:
        counts = ", ".join(f"{len(n)} {title}" for title, n in panels)
        raise ConvcanonError(
            f"the graph has {nodes} nodes ({counts}), over the limit of {max_nodes} for "
            f"rendering: Graphviz's layout would take minutes and gigabytes; raise --max-nodes, "
            "or write --format dot",
            SourceLoc(filename),
        )
    data = render(
        to_dot(panels),
        fmt,
        timeout=timeout,
        memory_limit=limit,
        progress=f"{nodes} nodes as {fmt} ",
    )
    write_output(output, data)
    return 0
