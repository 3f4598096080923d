"""`convcanon graph`: the dataflow graph of a module before and after a pipeline, side by side.

Convolutions are highlighted, and so are the ops the pipeline added (an op of the "after" graph
with no op of the same name and result type left to match in the "before" graph). Rendering uses
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from convcanon.child_process import parent_death_signal
from convcanon.diagnostics import ConvcanonError, SourceLoc, UsageError
from convcanon.fileio import (
    check_output_path,
    check_timeout,
    parse_byte_size,
    read_mlir_input,
    write_output,
)

FORMATS = ("svg", "png", "dot")
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


def _short_type(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _hlo_nodes(parsed: object) -> list[Node]:
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
            nodes.append(Node(k, operation.name, _short_type(result_type), inputs))
    return nodes


def _xdsl_nodes(parsed: object) -> list[Node]:
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
        nodes.append(Node(k, op.name, _short_type(result_type), inputs))
    return nodes


def _is_conv(op: str) -> bool:
    return op.endswith(("convolution", "dynamic_conv", "conv2d", "conv3d"))


def added_nodes(before: Iterable[Node], after: Iterable[Node]) -> set[str]:
    """Keys of `after` nodes left over once each is matched to a `before` node of the same kind."""
    pool = Counter((n.op, n.result_type) for n in before)
    added = set()
    for node in after:
        kind = (node.op, node.result_type)
        if pool[kind] > 0:
            pool[kind] -= 1
        else:
            added.add(node.key)
    return added


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(panels: list[tuple[str, list[Node], set[str]]]) -> str:
    """One cluster per panel, laid out left to right; convs orange, added ops green."""
    lines = [
        "digraph convcanon {",
        "  rankdir=TB; newrank=true;",
        '  node [shape=box, fontsize=10, fontname="Helvetica"];',
    ]
    for index, (title, nodes, added) in enumerate(panels):
        lines.append(f"  subgraph cluster_{index} {{")
        lines.append(f'    label="{_escape(title)}"; fontsize=14;')
        for node in nodes:
            style = ""
            if _is_conv(node.op):
                style = ', style=filled, fillcolor="#f8b26a"'
            elif node.key in added:
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
    from convcanon.driver import FRAMEWORKS, choose_framework, run_pipeline
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
    extract = _hlo_nodes if framework == "hlo" else _xdsl_nodes
    before = extract(adapter.parse_text(text, filename))
    panels = [("input", before, set[str]())]
    if passes:
        module = adapter.parse_text(text, filename)
        run_pipeline(module, passes)
        after = extract(module)
        panels.append((f"after {pipeline}", after, added_nodes(before, after)))
    if not before:
        raise ConvcanonError("the module has no ops to draw", SourceLoc(filename))
    nodes = sum(len(panel_nodes) for _, panel_nodes, _ in panels)
    if fmt != "dot" and nodes > max_nodes:
        counts = ", ".join(f"{len(n)} {title}" for title, n, _ in panels)
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
