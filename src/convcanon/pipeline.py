"""Pass registry and MLIR-style pipeline parsing (`pass-a{opt=v opt2=w},pass-b`).

The registry names each pass, the IR framework it runs on (`hlo`: jaxlib's MLIR; `xdsl`: half B) and
its options, without importing the pass itself, so `--help` and usage errors stay fast. A pass's
options are the NamedTuple that declares them (`convcanon.options`); the parser, `--help` and the
options table of docs/cli.md here, and the Python API, all read that one declaration.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from convcanon.diagnostics import UsageError
from convcanon.options import OptionSpec, OptionValue, declared_options, spelling
from convcanon.records import NamedTuple

__all__ = [
    "CONV_PASS_FOR_DIALECT",
    "PASSES",
    "Framework",
    "OptionSpec",
    "OptionValue",
    "PassInfo",
    "PassInvocation",
    "PassStats",
    "describe_passes",
    "parse_pipeline",
    "pass_options_markdown",
]

Framework = Literal["hlo", "xdsl"]


def _load(entry: str) -> Any:
    module_name, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module_name), attr)


class PassInfo(NamedTuple):
    name: str
    framework: Framework
    summary: str
    entry: str  # "module:function", called as function(module, options) -> PassStats
    declaration: str = ""  # "module:Class", the NamedTuple that declares the pass's options

    def load(self) -> Callable[..., Any]:
        return _load(self.entry)

    @property
    def options(self) -> tuple[OptionSpec, ...]:
        """The pass's options, read from their declaration when first asked for: a pipeline of
        one pass imports only that pass's declaration."""
        return declared_options(_load(self.declaration)) if self.declaration else ()


class PassStats:
    """Counters a pass reports (`--stats`), e.g. convs seen / rewritten / skipped by reason.

    A plain class, not a dataclass: generating one's methods costs ~0.4 ms of every
    convcanon-opt start-up."""

    __slots__ = ("counters",)

    def __init__(self, counters: dict[str, int] | None = None) -> None:
        self.counters: dict[str, int] = {} if counters is None else counters

    def __repr__(self) -> str:
        return f"PassStats({self.counters!r})"

    def bump(self, key: str, by: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + by


# The conv pass of each HLO dialect: the CLI, `explain` and the mismatch error name them.
CONV_PASS_FOR_DIALECT: Mapping[str, str] = {
    "stablehlo": "stablehlo-canonicalize-conv",
    "mhlo": "canonicalize-conv",
}

PASSES: dict[str, PassInfo] = {
    p.name: p
    for p in (
        PassInfo(
            "canonicalize-conv",
            "hlo",
            "MHLO: make conv padding an explicit pad and strides exact slices",
            "convcanon.hlo.passes:canonicalize_conv_mhlo",
            "convcanon.hlo.options:ConvOptions",
        ),
        PassInfo(
            "stablehlo-canonicalize-conv",
            "hlo",
            "StableHLO: make conv padding an explicit pad and strides exact slices",
            "convcanon.hlo.passes:canonicalize_conv_stablehlo",
            "convcanon.hlo.options:ConvOptions",
        ),
        PassInfo(
            "migraphx-to-tosa",
            "xdsl",
            "lower migraphx (strided values) to TOSA 1.0, keeping every layout",
            "convcanon.conversion.migraphx_to_tosa:migraphx_to_tosa",
            "convcanon.conversion.migraphx_to_tosa.options:MigraphxToTosaOptions",
        ),
    )
}


# Our passes that may be nested in `func.func(...)`: each function's convs are rewritten alone.
FUNCTION_PASSES = frozenset(name for name, info in PASSES.items() if info.framework == "hlo")


class PassInvocation(NamedTuple):
    info: PassInfo
    options: Mapping[str, OptionValue]


def _split_top_level(text: str) -> list[str]:
    """The pipeline's items: commas inside an item's `{options}` or nested `op(pipeline)` do not
    split it."""
    parts, braces, parens, current = [], 0, 0, []
    for ch in text:
        # Inside `{options}` only braces nest: a `(` or `)` there is part of an option's value.
        if ch == "{":
            braces += 1
        elif ch == "}":
            braces -= 1
        elif braces == 0 and ch == "(":
            parens += 1
        elif braces == 0 and ch == ")":
            parens -= 1
        if braces < 0 or parens < 0:
            raise UsageError(f"unbalanced '{ch}' in pipeline {text!r}")
        if ch == "," and braces == 0 and parens == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if braces or parens:
        raise UsageError(f"unbalanced '{{' or '(' in pipeline {text!r}")
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _unwrapped(text: str) -> str:
    """The pipeline inside its anchor: `builtin.module(...)` or `any(...)` around the whole of
    it, where the anchor's parenthesis closes at the end (`any(cse),any(cse)` is two items).
    One anchor: the module's; a `func.func(...)` is a nested pipeline, run on each function, as
    mlir-opt runs it, and an anchor inside the first one nests as well."""
    stripped = text.strip()
    closing = _closing_parens(stripped)
    for anchor in ("builtin.module(", "any("):
        if stripped.startswith(anchor) and closing.get(len(anchor) - 1) == len(stripped) - 1:
            return stripped[len(anchor) : -1].strip()
    return stripped


# Nested pipelines deeper than this are refused: jaxlib's pipeline parser takes time quadratic
# in the depth (1,000 levels: 0.3 s; 10,000: 24 s).
MAX_PIPELINE_DEPTH = 1000


def _closing_parens(text: str) -> dict[int, int]:
    """Where each parenthesis closes, found in one pass; braces of options nest on their own,
    as `_split_top_level` reads them. Nesting past MAX_PIPELINE_DEPTH is a usage error."""
    closing: dict[int, int] = {}
    opened: list[int] = []
    braces = 0
    for index, ch in enumerate(text):
        braces += (ch == "{") - (ch == "}")
        if braces == 0 and ch == "(":
            opened.append(index)
            if len(opened) > MAX_PIPELINE_DEPTH:
                raise UsageError(f"the pipeline nests over {MAX_PIPELINE_DEPTH} deep")
        elif braces == 0 and ch == ")" and opened:
            closing[opened.pop()] = index
    return closing


def _read_options(rest: str) -> tuple[list[str], bool, str]:
    """`rest` (what follows a pass's `{`) read as MLIR's pass option parser reads it: its
    `key=value` tokens (split at spaces, except inside quotes or braces, each value's enclosing
    quotes or braces dropped: `gate="general"` is `gate=general`), whether a `}` ended them, and
    what follows. A quote that never closes is a plain character, as there."""
    tokens: list[str] = []
    current: list[str] = []
    depth = 0  # braces opened inside the options
    quote = ""
    for index, ch in enumerate(rest):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"" and rest.find(ch, index + 1) >= 0:
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}" and depth == 0:
            tokens += ["".join(current)] if current else []
            return [_unquoted(token) for token in tokens], True, rest[index + 1 :]
        elif ch == "}":
            depth -= 1
        elif ch.isspace() and depth == 0:
            tokens += ["".join(current)] if current else []
            current = []
            continue
        current.append(ch)
    return [], False, ""


def _unquoted(token: str) -> str:
    key, eq, value = token.partition("=")
    value = value.strip()
    if len(value) >= 2 and (value[0], value[-1]) in (("'", "'"), ('"', '"'), ("{", "}")):
        value = value[1:-1].strip()
    return key + eq + value


def _known_passes() -> str:
    return ", ".join(sorted(PASSES))


def parse_pipeline(text: str) -> list[PassInvocation]:
    """Parse `name{key=value key2=value2},name2` (an outer `builtin.module(...)` is accepted).
    A name that is not ours is one of the MLIR passes jaxlib registers, or a usage error."""
    invocations = []
    for item in _split_top_level(_unwrapped(text)):
        nested = _function_nest(item)
        if nested is not None:
            invocations += nested
        else:
            invocations.append(_invocation(item))
    return invocations


# The nested pipelines our conv passes may sit in directly: on each function, or on each op of
# the module (every function), the same for a pass that rewrites each function's convs alone.
_FUNCTION_NESTS = ("func.func(", "any(")


def _pass_name(item: str) -> str:
    return re.match(r"[\w.$-]*", item.strip())[0]  # pyright: ignore[reportOptionalSubscript]


def _function_nest(item: str) -> list[PassInvocation] | None:
    """`func.func(...)` or `any(...)` holding one of our conv passes: MLIR's passes in it run
    nested as written, and ours on the module, which is the same (a conv pass reads and
    rewrites each function's convs on their own). None for any other item."""
    anchor = next((a for a in _FUNCTION_NESTS if item.startswith(a)), "")
    if not anchor or _closing_parens(item).get(len(anchor) - 1) != len(item) - 1:
        return None
    inner = _split_top_level(item[len(anchor) : -1])
    if not any(_pass_name(sub) in FUNCTION_PASSES for sub in inner):
        return None
    invocations: list[PassInvocation] = []
    theirs: list[str] = []  # MLIR's passes since the last of ours, nested as written
    for sub in [*inner, ""]:
        if theirs and (not sub or _pass_name(sub) in FUNCTION_PASSES):
            invocations.append(_upstream(f"{anchor}{','.join(theirs)})"))
            theirs = []
        if _pass_name(sub) in FUNCTION_PASSES:
            invocations.append(_invocation(sub))
        elif sub:
            theirs.append(sub)
    return invocations


def _invocation(item: str) -> PassInvocation:
    """One pipeline item: one of our passes with its options, or MLIR's."""
    name, brace, rest = item.partition("{")
    name = name.strip()
    _refuse_commas_between_options(name, rest if brace else "")
    info = PASSES.get(name)
    if info is None:
        return _upstream(item)
    options: dict[str, OptionValue] = {o.name: o.default for o in info.options}
    if brace:
        tokens, closed, after = _read_options(rest)
        if not closed:
            raise UsageError(f"{name}: options must end with '}}'")
        if after.strip():
            raise UsageError(
                f"{name}: expected ',' after its options, before '{after.strip()}'"
                " (passes are separated by commas)"
            )
        specs = {o.name: o for o in info.options}
        for token in tokens:
            key, _, value = token.partition("=")
            spec = specs.get(key)
            if spec is None:
                known = ", ".join(specs) or "none"
                raise UsageError(f"{name}: unknown option '{key}'; options: {known}")
            options[key] = spec.parse(name, value)
    return PassInvocation(info, options)


def _refuse_commas_between_options(name: str, options: str) -> None:
    """`{gate=general,engine=iree-cpu}`: MLIR separates a pass's options by spaces."""
    written = options.rpartition("}")[0] if "}" in options else options
    if re.search(r",\s*[\w-]+=", written):
        spaced = " ".join(written.replace(",", " ").split())
        raise UsageError(
            f"{name}: options are separated by spaces, not commas: write '{name}{{{spaced}}}'"
        )


# The passes `--list-passes` describes: MLIR's pass class name (as mlir-opt's IR dumps and
# timing report name them) and what each does.
MLIR_PASSES: Mapping[str, tuple[str, str]] = {
    "canonicalize": ("CanonicalizerPass", "fold and simplify ops with every dialect's patterns"),
    "cse": ("CSEPass", "eliminate common sub-expressions"),
    "symbol-dce": ("SymbolDCEPass", "remove private functions nothing calls"),
    "symbol-privatize": ("SymbolPrivatizePass", "make symbols private, except those excluded"),
    "inline": ("InlinerPass", "inline function calls"),
    "sccp": ("SCCPPass", "propagate constants through the program (sparse conditional)"),
    "remove-dead-values": ("RemoveDeadValuesPass", "remove values and arguments nothing reads"),
    "loop-invariant-code-motion": (
        "LoopInvariantCodeMotionPass",
        "hoist loop-invariant ops out of loops",
    ),
    "control-flow-sink": ("ControlFlowSinkPass", "sink ops into the branches that use them"),
    "topological-sort": ("TopologicalSortPass", "order ops of graph regions by their uses"),
    "strip-debuginfo": ("StripDebugInfoPass", "replace every location with an unknown one"),
}
# StableHLO's, CHLO's and MHLO's passes that jaxlib registers on request, as stablehlo-opt and
# mlir-hlo-opt name them; a pass restricted to functions runs on each one, as mlir-opt nests it.
HLO_PASSES: Mapping[str, tuple[str, str]] = {
    "chlo-legalize-to-stablehlo": (
        "ChloLegalizeToStablehloPass",
        "expand CHLO ops (erf, top_k, broadcasting arithmetic) into StableHLO",
    ),
    "stablehlo-legalize-to-hlo": ("StablehloLegalizeToHloPass", "StableHLO to MHLO"),
    "hlo-legalize-to-stablehlo": ("HloLegalizeToStablehloPass", "MHLO to StableHLO"),
    "chlo-legalize-to-hlo": ("ChloLegalizeToHloPass", "expand CHLO ops into MHLO"),
    "stablehlo-refine-shapes": (
        "StablehloRefineShapesPass",
        "make dynamic shapes static where constants and argument types fix them",
    ),
    "stablehlo-refine-arguments": (
        "StablehloRefineArgumentsPass",
        "give the main function's arguments the types of its types option",
    ),
    "stablehlo-canonicalize-dynamism": (
        "StablehloCanonicalizeDynamismPass",
        "turn dynamic ops whose shape operands are constant into static ones",
    ),
    "stablehlo-legalize-to-vhlo": ("StablehloLegalizeToVhloPass", "StableHLO to versioned VHLO"),
    "vhlo-legalize-to-stablehlo": ("VhloLegalizeToStablehloPass", "versioned VHLO to StableHLO"),
    "vhlo-to-version": ("VhloToVersionPass", "convert VHLO ops to a target version's"),
    "stablehlo-compatibility-expander": (
        "StablehloCompatibilityExpanderPass",
        "rewrite ops newer than the target version with older ones",
    ),
    "stablehlo-convert-to-signless": (
        "StablehloConvertToSignlessPass",
        "make unsigned and signed integer types signless",
    ),
    "stablehlo-legalize-composite-to-call": (
        "StablehloLegalizeCompositeToCallPass",
        "replace each composite op by a call of its decomposition",
    ),
    "stablehlo-legalize-deprecated-ops": (
        "StablehloLegalizeDeprecatedOpsPass",
        "rewrite deprecated ops with their replacements",
    ),
    "stablehlo-complex-math-expander": (
        "StablehloComplexMathExpanderPass",
        "expand complex math ops into real arithmetic",
    ),
    "stablehlo-wrap-in-composite": (
        "StablehloWrapInCompositePass",
        "wrap ops in composites with their decomposition",
    ),
    "stablehlo-legalize-quant-to-math": (
        "StablehloLegalizeQuantToMathPass",
        "lower quantized ops to integer arithmetic",
    ),
    "stablehlo-legalize-quantized-op-to-qdq": (
        "StablehloLegalizeQuantizedOpToQDQPass",
        "decompose quantized ops into dequantize, float op, quantize",
    ),
    "stablehlo-legalize-qdq-to-quantized-op": (
        "StablehloLegalizeQDQToQuantizedOpPass",
        "fuse dequantize, float op, quantize into a quantized op",
    ),
    "shape-legalize-to-stablehlo": (
        "ShapeLegalizeToStablehloPass",
        "lower shape computations to StableHLO",
    ),
    "mhlo-flatten-tuple": ("FlattenTuplePass", "flatten MHLO tuples"),
    "mhlo-sink-constants-to-control-flow": (
        "SinkConstantsToControlFlowPass",
        "move constants into the regions of control flow that use them",
    ),
    "mhlo-legalize-einsum-to-dot-general": (
        "LegalizeEinsumToDotGeneralPass",
        "MHLO einsum to dot_general",
    ),
    "mhlo-legalize-dot-to-dot-general": (
        "LegalizeDotToDotGeneralPass",
        "MHLO dot to dot_general",
    ),
    "mhlo-collapse-elementwise-map": (
        "CollapseElementwiseMapPass",
        "inline MHLO maps of elementwise ops",
    ),
}
UPSTREAM_PASSES: Mapping[str, tuple[str, str]] = {**MLIR_PASSES, **HLO_PASSES}


UPSTREAM_ENTRY = "convcanon.hlo.upstream:run_upstream"
INLINE_ENTRY = "convcanon.hlo.upstream:run_inline"  # jaxlib's `inline` inlines nothing
UPSTREAM_ENTRIES = (UPSTREAM_ENTRY, INLINE_ENTRY)


def _upstream(item: str) -> PassInvocation:
    """An item of MLIR passes jaxlib registers (`cse`, `canonicalize{max-iterations=2}`,
    `func.func(cse)`), checked by jaxlib's own pipeline parser."""
    name = re.match(r"[\w.$-]*", item)[0]  # pyright: ignore[reportOptionalSubscript]
    if not name or name[0].isdigit():
        raise UsageError(f"unknown pass '{item}'; available passes: {_known_passes()}")
    try:
        printed = _load("convcanon.hlo.upstream:textual")(item)
    except UsageError as err:
        unknown = re.search(r"'([^']*)' does not refer to a registered pass", str(err))
        if unknown is None:
            raise
        if unknown[1] in FUNCTION_PASSES:
            raise UsageError(
                f"'{unknown[1]}' cannot be nested in '{name}(...)': write it at the top level of"
                " the pipeline or directly inside func.func(...) or any(...)"
            ) from None
        if unknown[1] in PASSES:
            raise UsageError(
                f"'{unknown[1]}' runs on the whole module: write it at the top level of the"
                f" pipeline, not nested in '{name}(...)'"
            ) from None
        raise UsageError(
            f"unknown pass '{unknown[1]}'; available passes: {_known_passes()}, and the MLIR"
            " passes jaxlib registers (convcanon-opt --list-passes)"
        ) from None
    summary = "MLIR's pass, run by jaxlib's PassManager"
    entry = INLINE_ENTRY if name == "inline" else UPSTREAM_ENTRY
    return PassInvocation(PassInfo(name, "hlo", summary, entry), {"pipeline": printed})


def describe_passes() -> str:
    lines = ["passes:"]
    for info in PASSES.values():
        lines.append(f"  {info.name}: {info.summary}")
        for option in info.options:
            lines.append(f"      {option.describe()}")
    return "\n".join(lines)


def pass_options_markdown() -> str:
    """docs/cli.md's table of every pass option, one row each; passes that share their options
    share their rows."""
    rows = ["| pass | option | values | default | what it does |", "|---|---|---|---|---|"]
    groups: dict[tuple[OptionSpec, ...], list[str]] = {}
    for info in PASSES.values():
        groups.setdefault(info.options, []).append(info.name)
    for options, names in groups.items():
        first = ", ".join(f"`{name}`" for name in names)
        if not options:
            rows.append(f"| {first} | none | | | |")
        for index, option in enumerate(options):
            cells = (
                first if index == 0 else "",
                f"`{option.name}`",
                f"`{option.values}`",
                f"`{spelling(option.default)}`",
                option.help,
            )
            rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def list_passes() -> str:
    """`--list-passes`: ours with their options, then the MLIR passes this jaxlib registers, in
    mlir-opt's layout."""
    lines = ["Passes:"]
    for info in PASSES.values():
        lines.append(f"  --{info.name:<48} -   {info.summary}")
        for option in info.options:
            flag = f"--{option.name}=<{option.values}>"
            lines.append(f"    {flag:<48} - {option.help} (default {spelling(option.default)})")
    accept: Callable[[Iterable[str]], Mapping[str, str]] = _load("convcanon.hlo.upstream:accepted")
    for title, passes in (
        ("MLIR passes jaxlib registers (any other it registers runs too)", MLIR_PASSES),
        ("StableHLO, CHLO and MHLO passes jaxlib registers", HLO_PASSES),
    ):
        lines += ["", f"{title}:"]
        for name, printed in accept(passes).items():
            lines.append(f"  --{name:<48} -   {passes[name][1]}")
            for option, value in re.findall(r"([\w-]+)=(\S*)", printed.partition("{")[2]):
                lines.append(f"    --{option:<46} - (default {value.rstrip('})') or 'empty'})")
    return "\n".join(lines) + "\n"
