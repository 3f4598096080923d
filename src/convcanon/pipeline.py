"""Pass registry and MLIR-style pipeline parsing (`pass-a{opt=v opt2=w},pass-b`).

The registry names each pass, the IR framework it runs on (`hlo`: jaxlib's MLIR; `xdsl`: half B) and
its options, without importing the pass itself, so `--help` and usage errors stay fast.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from convcanon.diagnostics import UsageError

Framework = Literal["hlo", "xdsl"]
OptionValue = bool | int | float | str


class OptionSpec(NamedTuple):
    name: str
    kind: type  # bool, int, float or str
    default: OptionValue
    help: str
    choices: tuple[str, ...] = ()

    def parse(self, pass_name: str, text: str) -> OptionValue:
        if self.kind is bool:
            if text in ("true", "1", ""):
                return True
            if text in ("false", "0"):
                return False
            raise UsageError(
                f"{pass_name}: option '{self.name}' expects true or false, got {text!r}"
            )
        if self.kind is int:
            try:
                return int(text)
            except ValueError:
                raise UsageError(
                    f"{pass_name}: option '{self.name}' expects an integer, got {text!r}"
                ) from None
        if self.kind is float:
            try:
                value = float(text)
            except ValueError:
                value = float("nan")
            if not math.isfinite(value):
                raise UsageError(
                    f"{pass_name}: option '{self.name}' expects a finite number, got {text!r}"
                )
            return value
        if self.choices and text not in self.choices:
            raise UsageError(
                f"{pass_name}: option '{self.name}' must be one of {', '.join(self.choices)};"
                f" got {text!r}"
            )
        return text

    def describe(self) -> str:
        values = "|".join(self.choices) if self.choices else self.kind.__name__
        default = str(self.default).lower() if isinstance(self.default, bool) else self.default
        return f"{self.name}=<{values}> (default {default}): {self.help}"


class PassInfo(NamedTuple):
    name: str
    framework: Framework
    summary: str
    entry: str  # "module:function", called as function(module, options) -> PassStats
    options: tuple[OptionSpec, ...] = ()

    def load(self) -> Callable[..., Any]:
        module_name, _, attr = self.entry.partition(":")
        return getattr(importlib.import_module(module_name), attr)


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


_CONV_OPTIONS = (
    OptionSpec(
        "gate",
        str,
        "neuron",
        "eligibility preset: neuron (rank 4, small params) or general (any rank >= 3)",
        ("neuron", "general"),
    ),
    OptionSpec(
        "allow-small-spatial", bool, False, "accept lhs spatial extents of 2 or 3 (gate=neuron)"
    ),
    OptionSpec("max-window-param", int, 31, "largest stride or |padding| accepted (gate=neuron)"),
    OptionSpec(
        "max-phases",
        int,
        64,
        "largest number of partial convs one conv's rewrite may emit, counted after phase"
        " merging; more is rejected with a reason",
    ),
    OptionSpec(
        "merge-phases",
        str,
        "exact",
        "exact: partial convs of equal shape become one conv (inputs concatenated on the"
        " feature dim), at the same multiply-adds; pad-kernel: also zero-extend sub-kernels so"
        " that phases merge, within max-mac-ratio of the floor; none: one conv per phase",
        ("exact", "pad-kernel", "none"),
    ),
    OptionSpec(
        "conv-layout",
        str,
        "keep",
        "keep: rewritten convs keep their dimension numbers (a channels-first strided conv's"
        " fold, a kernel-gradient conv's pad and a unit-stride conv's pad, unless it grows the"
        " lhs by more than half, are laid out channels-last in front of them);"
        " channels-last: move each rewritten"
        " conv to [b, 0.., f]x[0.., i, o] between transposes, for engines that compute"
        " channels-last (XLA CPU folds the explicit pad and keeps the phase slices in place)",
        ("keep", "channels-last"),
    ),
    OptionSpec(
        "max-mac-ratio",
        float,
        2.0,
        "merge-phases=pad-kernel: largest multiply-adds of a rewritten conv over its floor",
    ),
    OptionSpec(
        "lhs-dilation",
        str,
        "polyphase",
        "polyphase: one conv per output phase, never multiplying inserted zeros; interior-pad:"
        " fold it into the pad's interior padding",
        ("polyphase", "interior-pad"),
    ),
    OptionSpec(
        "wide-partials",
        bool,
        True,
        "f16/bf16/f8 convs split in partials: sum them in f32 and convert once (false: round"
        " each partial to the result type)",
    ),
    OptionSpec(
        "negative-padding",
        str,
        "pad",
        "pad: negative pad amounts; slice: positive pad then slice for the negative parts",
        ("pad", "slice"),
    ),
    OptionSpec("verbose", bool, False, "remark on convs whose operands come from another conv"),
)

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
            _CONV_OPTIONS,
        ),
        PassInfo(
            "stablehlo-canonicalize-conv",
            "hlo",
            "StableHLO: make conv padding an explicit pad and strides exact slices",
            "convcanon.hlo.passes:canonicalize_conv_stablehlo",
            _CONV_OPTIONS,
        ),
        PassInfo(
            "migraphx-to-tosa",
            "xdsl",
            "lower migraphx (strided values) to TOSA 1.0, keeping every layout",
            "convcanon.conversion.migraphx_to_tosa:migraphx_to_tosa",
            (
                OptionSpec(
                    "types",
                    str,
                    "conformant",
                    "conformant: fp8 FNUZ, e8m0, fp4 and int4 values travel as their storage"
                    " integers (MIGraphX's buffers; every tensor inside TOSA 1.0's profiles, as"
                    " IREE requires); native: tensors of those types, for backends that have them",
                    ("conformant", "native"),
                ),
            ),
        ),
    )
}


class PassInvocation(NamedTuple):
    info: PassInfo
    options: Mapping[str, OptionValue]


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise UsageError(f"unbalanced '}}' in pipeline {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise UsageError(f"unbalanced '{{' in pipeline {text!r}")
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _known_passes() -> str:
    return ", ".join(sorted(PASSES))


def parse_pipeline(text: str) -> list[PassInvocation]:
    """Parse `name{key=value key2=value2},name2` (an outer `builtin.module(...)` is accepted)."""
    body = text.strip()
    for wrapper in ("builtin.module(", "func.func("):
        if body.startswith(wrapper) and body.endswith(")"):
            body = body[len(wrapper) : -1]
    invocations = []
    for item in _split_top_level(body):
        name, brace, rest = item.partition("{")
        name = name.strip()
        info = PASSES.get(name)
        if info is None:
            raise UsageError(f"unknown pass '{name}'; available passes: {_known_passes()}")
        options: dict[str, OptionValue] = {o.name: o.default for o in info.options}
        if brace:
            if not rest.endswith("}"):
                raise UsageError(f"{name}: options must end with '}}'")
            specs = {o.name: o for o in info.options}
            for token in rest[:-1].split():
                key, _, value = token.partition("=")
                spec = specs.get(key)
                if spec is None:
                    known = ", ".join(specs) or "none"
                    raise UsageError(f"{name}: unknown option '{key}'; options: {known}")
                options[key] = spec.parse(name, value)
        invocations.append(PassInvocation(info, options))
    return invocations


def describe_passes() -> str:
    lines = ["passes:"]
    for info in PASSES.values():
        lines.append(f"  {info.name}: {info.summary}")
        for option in info.options:
            lines.append(f"      {option.describe()}")
    return "\n".join(lines)
