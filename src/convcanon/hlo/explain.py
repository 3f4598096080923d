"""`convcanon explain FILE`: one row per conv, the gate's decision and what the rewrite emits.

It is a dry run of the real pass on the parsed module (nothing is written), so the phases and
multiply-adds shown are those of the ops the pass actually built.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from convcanon.diagnostics import ConvcanonError, UsageError
from convcanon.fileio.stdout import encode_text, write_stdout
from convcanon.ir_kind import with_input_kind_hint
from convcanon.pipeline import CONV_PASS_FOR_DIALECT, PassInvocation, parse_pipeline

_CONV_PASSES = {name: dialect for dialect, name in CONV_PASS_FOR_DIALECT.items()}


def _ops_summary(ops: list[str]) -> str:
    return _kinds(Counter(ops))


def _ops_after(record: Any) -> dict[str, int]:
    """The ops that stand for the conv after the pass, by kind: the rewrite's ops, or the conv
    (a `dynamic_conv` with constant padding is a `convolution` by then)."""
    if not record.decision.accepted:
        return {record.kept: 1}
    return dict(Counter(record.ops_added))


def module_ops(module: Any) -> int:
    """The ops of a module, nested ones included (all but the module and its functions)."""
    from jaxlib.mlir import ir

    count = 0

    def visit(op: Any) -> Any:
        nonlocal count
        if op.name not in _CONTAINERS:
            count += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return count


_CONTAINERS = frozenset({"builtin.module", "func.func"})


def _amount(value: int | None) -> str:
    """A padding amount; `?` where the pass did not read it (null in the JSON)."""
    return "?" if value is None else str(value)


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


def _row(record: Any) -> dict[str, Any]:
    p = record.params
    unread = record.kept == "dynamic_conv"  # its padding is an operand the pass did not read
    loc = record.loc
    source = getattr(loc, "source", None)
    return {
        "location": str(loc),
        "source": str(source or ""),  # the user's file:line:col a debug-info export carries
        "op_name": getattr(loc, "op_path", ""),  # and its op-name path, jit(f)/conv_general_...
        "lhs": record.types[0],
        "rhs": record.types[1],
        "result": record.types[2],
        "stride": list(p.strides),
        "padding": [[None, None] if unread else list(pair) for pair in p.padding],
        "lhs_dilation": list(p.lhs_dilation),
        "rhs_dilation": list(p.rhs_dilation),
        "reversal": list(p.reversal),
        "feature_groups": p.feature_group_count,
        "batch_groups": p.batch_group_count,
        "decision": "rewrite" if record.decision.accepted else "skip",
        "canonical": record.decision.canonical,  # skipped with nothing to do
        "reason": record.decision.reason,
        "phases": record.phases,  # partial convs emitted, after merging
        "phases_unmerged": record.unmerged,  # one per phase (merge-phases=none)
        "ops_added": record.ops_added,
        "ops_before": {record.kind: 1},  # the conv itself
        "ops_after": _ops_after(record),
        "macs_before": 0 if p.dynamic_reason else p.macs,
        "macs_after": record.macs_after,
        "lattice_macs_before": record.lattice_macs_before,  # products of real or padding elements
        "lhs_phases": record.lhs_phases,  # output phases of the lhs-dilation rewrite
        "max_phases": record.max_phases,
        "policy": record.policy,  # the engine policy it was planned under
        "merge": record.merge,  # exact, pad-kernel (the option's or the policy's choice), none
    }


def _summary(rows: list[dict[str, Any]], ops: tuple[int, int] | None) -> dict[str, Any]:
    rejected = Counter(r["reason"] for r in rows if r["decision"] == "skip" and not r["canonical"])
    ops_before: Counter[str] = Counter()
    ops_after: Counter[str] = Counter()
    for r in rows:
        ops_before.update(r["ops_before"])
        ops_after.update(r["ops_after"])
    summary = {
        "convs_seen": len(rows),
        "rewritten": sum(r["decision"] == "rewrite" for r in rows),
        "already_canonical": sum(r["canonical"] for r in rows),
        "rejected": dict(rejected),
        "macs_before": sum(r["macs_before"] for r in rows),
        "macs_after": sum(r["macs_after"] for r in rows),
        "ops_before": dict(ops_before),
        "ops_after": dict(ops_after),
    }
    if ops is not None:
        summary["module_ops_before"], summary["module_ops_after"] = ops
    return summary


_COLUMNS = (
    "location",
    "source",
    "lhs",
    "rhs",
    "result",
    "window",
    "groups",
    "decision",
    "reason",
    "phases",
    "ops",
    "ops added",
    "multiply-adds",
)


def _cells(row: dict[str, Any]) -> list[str]:
    pads = ",".join(f"({_amount(lo)},{_amount(hi)})" for lo, hi in row["padding"])
    window = (
        f"stride={_ints(tuple(row['stride']))} pad=[{pads}] "
        f"lhs_dil={_ints(tuple(row['lhs_dilation']))} rhs_dil={_ints(tuple(row['rhs_dilation']))}"
    )
    if any(row["reversal"]):
        window += " reverse=" + _ints(tuple(int(r) for r in row["reversal"]))
    return [
        row["location"],
        f"{row['source']} {row['op_name']}".strip(),
        row["lhs"],
        row["rhs"],
        row["result"],
        window,
        f"f={row['feature_groups']} b={row['batch_groups']}",
        "canonical" if row["canonical"] else row["decision"],
        row["reason"],
        _phases_cell(row),
        f"{sum(row['ops_before'].values())} -> {sum(row['ops_after'].values())}",
        _ops_summary(row["ops_added"]),
        f"{row['macs_before']} dense, {row['lattice_macs_before']} lattice -> {row['macs_after']}",
    ]


def _phases_cell(row: dict[str, Any]) -> str:
    notes = []
    if row["phases_unmerged"] > row["phases"]:
        notes.append(f"{row['phases_unmerged']} before merging")
    if row["lhs_phases"]:
        notes.append(f"{row['lhs_phases']} out")
    if row["decision"] == "rewrite" and row["merge"] == "pad-kernel":
        notes.append("zero-extended kernel")
    return str(row["phases"]) + (f" ({', '.join(notes)})" if notes else "")


def _lattice_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The floor a rewrite that never multiplies inserted zeros can reach, and max-phases."""
    lattice = sum(r["lattice_macs_before"] for r in rows)
    after = sum(r["macs_after"] for r in rows if r["decision"] == "rewrite")
    lattice_done = sum(r["lattice_macs_before"] for r in rows if r["decision"] == "rewrite")
    ratio = f" (rewritten: after / lattice x{after / lattice_done:.3f})" if lattice_done else ""
    limit = max((r["max_phases"] for r in rows), default=0)
    unmerged = sum(max(r["phases_unmerged"], r["phases"]) for r in rows)
    policies = sorted({r["policy"] for r in rows})
    return [
        f"engine policy: {', '.join(policies) or '-'}",
        f"lattice multiply-adds: {lattice} before{ratio}",
        f"partial convs: {sum(r['phases'] for r in rows)}, {unmerged} before merging"
        f" (max-phases {limit} per conv)",
    ]


def _summary_lines(summary: dict[str, Any]) -> list[str]:
    lines = [
        f"convs seen: {summary['convs_seen']}",
        f"rewritten: {summary['rewritten']}",
        f"rejected: {sum(summary['rejected'].values())}",
    ]
    if summary["already_canonical"]:  # skipped with nothing to do, not rejected
        lines.insert(2, f"already canonical: {summary['already_canonical']}")
    lines += [f"  {n} x {reason}" for reason, n in summary["rejected"].items()]
    before, after = summary["macs_before"], summary["macs_after"]
    ratio = f" (x{after / before:.2f})" if before else ""
    lines.append(f"multiply-adds: {before} before, {after} after{ratio}")
    ops_before, ops_after = summary["ops_before"], summary["ops_after"]
    lines.append(
        f"conv ops: {sum(ops_before.values())} before, {sum(ops_after.values())} after"
        f" ({_kinds(ops_after)})"
    )
    if "module_ops_before" in summary:
        lines.append(
            f"module ops: {summary['module_ops_before']} before, "
            f"{summary['module_ops_after']} after"
        )
    return lines


def _dialect_lines(rows: list[dict[str, Any]]) -> list[str]:
    """`dialects: stablehlo (2 convs), mhlo (1 conv)` for a module that holds both."""
    counts = Counter(r.get("dialect", "") for r in rows)
    if len(counts) < 2:
        return []
    return ["dialects: " + ", ".join(f"{d} ({n} conv{'s' * (n > 1)})" for d, n in counts.items())]


def _kinds(counts: Mapping[str, int]) -> str:
    """`2x slice, pad`: op kinds by count, in the order first seen."""
    return ", ".join(f"{n}x {name}" if n > 1 else name for name, n in counts.items()) or "-"


# Every character that ends a line (for `str.splitlines`, a terminal or a Markdown renderer),
# written as its escape: a cell (a JAX op name, a file name) stays on its row.
_LINE_BREAKS = {
    ord(c): c.encode("unicode_escape").decode() for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
}


def _utf8_strings(value: Any) -> Any:
    """`value` with every string valid Unicode: a file name from argv that is not UTF-8 (Python
    holds its bytes as lone surrogates, which `json.dumps` writes as `\\udcXX` escapes that
    strict JSON readers refuse) has each such byte written as `\\xXX`, as Python's
    backslashreplace does."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return encode_text(value).decode("utf-8", "backslashreplace")
        return value
    if isinstance(value, dict):
        return {_utf8_strings(k): _utf8_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_utf8_strings(v) for v in value]
    return value


def render(rows: list[dict[str, Any]], fmt: str, ops: tuple[int, int] | None = None) -> str:
    """The rows and their summary; `ops`: the module's ops before and after the pass."""
    summary = _summary(rows, ops)
    if fmt == "json":
        document = _utf8_strings({"convs": rows, "summary": summary})
        return json.dumps(document, indent=2) + "\n"
    table = [list(_COLUMNS)] + [_cells(r) for r in rows]
    source = _COLUMNS.index("source")
    if not any(line[source] for line in table[1:]):  # no debug info: no empty column
        table = [line[:source] + line[source + 1 :] for line in table]
    table = [[c.translate(_LINE_BREAKS) for c in line] for line in table]
    if fmt == "markdown":
        lines = ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in table]
        lines.insert(1, "|" + "---|" * len(table[0]))
        tail = _summary_lines(summary) + _dialect_lines(rows) + _lattice_lines(rows)
        return "\n".join(lines + [""] + [f"- {s}" for s in tail]) + "\n"
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in table]
    tail = _summary_lines(summary) + _dialect_lines(rows) + _lattice_lines(rows)
    return "\n".join([s.rstrip() for s in lines] + [""] + tail) + "\n"


def _conv_pass(pipeline: str) -> PassInvocation:
    passes = [p for p in parse_pipeline(pipeline) if p.info.name in _CONV_PASSES]
    if len(passes) != 1:
        raise UsageError(
            f"explain needs exactly one conv pass in the pipeline ({', '.join(_CONV_PASSES)})"
        )
    return passes[0]


def explain_module(
    text: str, filename: str, pipeline: str | None = None
) -> tuple[list[dict[str, Any]], tuple[int, int]]:
    """Dry-run the pipeline's conv pass on `text`: one row per conv it saw, and the module's
    ops before and after the pass. Without a pipeline, the conv pass of the dialect the
    module's convs are in (StableHLO when it has none)."""
    from convcanon.hlo.dialect_check import convs_by_dialect
    from convcanon.hlo.dialects import DIALECTS
    from convcanon.hlo.io import parse_file_text
    from convcanon.hlo.passes import canonicalize

    invocations = [_conv_pass(pipeline)] if pipeline is not None else []
    try:
        hlo_file = parse_file_text(text, filename)
    except ConvcanonError as err:
        err.message = with_input_kind_hint(err.message, text, "hlo")
        raise
    if not invocations:  # each dialect that has convs (a module may hold both), else StableHLO
        found = convs_by_dialect(hlo_file.module)
        dialects = [d for d in CONV_PASS_FOR_DIALECT if found[d]] or ["stablehlo"]
        invocations = [_conv_pass(CONV_PASS_FOR_DIALECT[d]) for d in dialects]
    before = module_ops(hlo_file.module)
    listed: list[tuple[tuple[int, int], dict[str, Any]]] = []
    for invocation in invocations:
        dialect = DIALECTS[_CONV_PASSES[invocation.info.name]]
        for record in canonicalize(hlo_file, invocation.options, dialect)[1]:
            loc = record.loc
            listed.append(((loc.line, loc.col), _row(record) | {"dialect": dialect.name}))
    if len(invocations) > 1:  # in the module's order
        listed.sort(key=lambda item: item[0])
    return [row for _, row in listed], (before, module_ops(hlo_file.module))


def explain_file(
    input: str,
    pipeline: str | None,
    fmt: str,
    input_hlo: bool = False,
    split_marker: str = "",
) -> int:
    """`convcanon explain`; with a `split_marker`, every chunk's convs (at their
    lines in the file) in one table and one summary, every bad chunk's error reported."""
    if pipeline is not None:
        _conv_pass(pipeline)  # usage errors before reading anything
    if input_hlo:
        from convcanon.hlo.hlo_import import hlo_file_to_stablehlo_text

        filename, text = input, hlo_file_to_stablehlo_text(input)
    else:
        from convcanon.fileio.module_input import read_mlir_input

        filename, text = read_mlir_input(input)
    if not split_marker:
        rows, ops = explain_module(text, filename, pipeline)
        write_stdout(render(rows, fmt, ops))
        return 0
    from convcanon.diagnostics import text_starts_at_line
    from convcanon.driver import ChunkErrors
    from convcanon.fileio.split_input import chunk_column, split_input_file

    rows, before, after, errors = [], 0, 0, []
    for offset, chunk in split_input_file(text, split_marker, filename):
        try:
            with text_starts_at_line(offset + 1, chunk_column(chunk)):
                chunk_rows, (chunk_before, chunk_after) = explain_module(chunk, filename, pipeline)
        except ConvcanonError as err:
            errors.append(err)
            continue
        rows += chunk_rows
        before, after = before + chunk_before, after + chunk_after
    if errors:
        raise ChunkErrors(errors)
    write_stdout(render(rows, fmt, (before, after)))
    return 0
