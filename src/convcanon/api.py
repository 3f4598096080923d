"""The Python API: the CLI's jobs as typed functions, for users who already work in Python/JAX.

Every call builds its own MLIR context, so two threads can canonicalize different modules at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc, UsageError, check_argument
from convcanon.options import keyword_options
from convcanon.pipeline import PASSES, OptionValue, PassStats
from convcanon.verify.local import ConvVerdict

if TYPE_CHECKING:
    from jax.export import Exported

Dialect = Literal["stablehlo", "mhlo"]
_PASS_FOR_DIALECT: Mapping[str, str] = {
    "stablehlo": "stablehlo-canonicalize-conv",
    "mhlo": "canonicalize-conv",
}


@dataclass
class CanonicalizeResult:
    """What `canonicalize_conv` produced: the module text and the pass's counters; for bytes in,
    `serialized` is the result in the format it came in (MLIR bytecode, or a portable artifact
    for the same StableHLO version)."""

    text: str
    stats: dict[str, int] = field(default_factory=dict)
    serialized: bytes | None = None


@dataclass
class JaxCanonicalizeResult(CanonicalizeResult):
    """`from_jax`'s result; `max_abs_error` is set when the rewrite was run on XLA and compared."""

    original_text: str = ""
    max_abs_error: float | None = None


def _options(dialect: str, options: Mapping[str, Any]) -> tuple[str, dict[str, OptionValue]]:
    """The conv pass of `dialect` and its options from Python keywords (`negative_padding`),
    checked by the pass's option declaration as the pipeline parser checks them."""
    pass_name = _PASS_FOR_DIALECT.get(dialect)
    if pass_name is None:
        raise UsageError(
            f"unknown dialect {dialect!r}; expected one of {sorted(_PASS_FOR_DIALECT)}"
        )
    return pass_name, keyword_options(pass_name, PASSES[pass_name].options, options)


@overload
def canonicalize_conv(
    module_or_text: str | bytes, dialect: Dialect = "stablehlo", **options: Any
) -> CanonicalizeResult: ...
@overload
def canonicalize_conv(
    module_or_text: ir.Module, dialect: Dialect = "stablehlo", **options: Any
) -> tuple[ir.Module, dict[str, int]]: ...
@overload
def canonicalize_conv(
    module_or_text: Exported, dialect: Dialect = "stablehlo", **options: Any
) -> Exported: ...
def canonicalize_conv(
    module_or_text: str | bytes | ir.Module | Exported,
    dialect: Dialect = "stablehlo",
    **options: Any,
) -> CanonicalizeResult | tuple[ir.Module, dict[str, int]] | Exported:
    """Canonicalize every eligible convolution: explicit zero `pad`s and unit-stride partial convs.

    What comes in goes out: text gives a `CanonicalizeResult` (text + statistics); bytes (MLIR
    bytecode, or a StableHLO portable artifact as jax.export writes it) give one whose
    `serialized` is the result in the same format (an artifact for the same StableHLO version);
    an `ir.Module` is rewritten in place and returned with the statistics; a
    `jax.export.Exported` gives a new `Exported` (see `canonicalize_exported`). Options are the
    pass options with `_` for `-`, e.g. `gate="general", negative_padding="slice"`.
    """
    from convcanon.hlo.io import HloFile, parse_file_text, print_file

    if not _is_exported(module_or_text):
        check_argument(
            "canonicalize_conv",
            "module_or_text",
            module_or_text,
            (str, bytes, ir.Module),
            "str, bytes, jaxlib.mlir.ir.Module or jax.export.Exported",
        )
    check_argument("canonicalize_conv", "dialect", dialect, str)
    pass_name, resolved = _options(dialect, options)
    run_pass: Callable[[HloFile, Mapping[str, OptionValue]], PassStats] = PASSES[pass_name].load()
    if isinstance(module_or_text, ir.Module):
        stats = run_pass(HloFile(module_or_text, "<module>", debug_info=False), resolved)
        return module_or_text, dict(stats.counters)
    if isinstance(module_or_text, bytes):
        return _canonicalize_bytes(module_or_text, run_pass, resolved)
    if isinstance(module_or_text, str):
        parsed = parse_file_text(module_or_text, "<string>")
        stats = run_pass(parsed, resolved)
        return CanonicalizeResult(print_file(parsed), dict(stats.counters))
    if dialect != "stablehlo":  # it ran the StableHLO pass whatever `dialect` said
        raise UsageError(
            f"canonicalize_conv: a jax.export.Exported holds StableHLO, not {dialect!r}"
            " (dialect='stablehlo')"
        )
    return canonicalize_exported(module_or_text, **options)


def _is_exported(value: object) -> bool:
    """Whether `value` is a `jax.export.Exported`, without importing JAX for other values."""
    return type(value).__name__ == "Exported" and type(value).__module__.startswith("jax")


def _canonicalize_bytes(
    data: bytes,
    run_pass: Callable[[Any, Mapping[str, OptionValue]], PassStats],
    options: Mapping[str, OptionValue],
) -> CanonicalizeResult:
    """MLIR bytecode or a portable artifact in, the same format out (through the CLI's reader
    and writer)."""
    from convcanon.fileio.module_input import module_text_from_bytecode
    from convcanon.fileio.reading import MLIR_BYTECODE_MAGIC
    from convcanon.hlo.formats import artifact_version, emit
    from convcanon.hlo.io import parse_file_text, print_file

    where = "<bytes>"
    if not data.startswith(MLIR_BYTECODE_MAGIC):
        raise ConvcanonError(
            "not MLIR bytecode (it does not start with ML\\xefR); give MLIR text as a str",
            SourceLoc(where),
        )
    version = artifact_version(data)
    parsed = parse_file_text(module_text_from_bytecode(data, where, as_text=False), where)
    stats = run_pass(parsed, options)
    text = print_file(parsed)
    serialized = emit(parsed, "artifact" if version else "bytecode", version or "")
    return CanonicalizeResult(text, dict(stats.counters), serialized)


def from_jax(
    fn: Callable[..., Any], *example_args: Any, compare: bool = False, **options: Any
) -> JaxCanonicalizeResult:
    """Lower `fn` with JAX, canonicalize its convolutions, optionally check the result on XLA.

    `example_args` are what `jax.jit(fn)` takes (pytrees of arrays). With `compare=True` both
    modules run on XLA's CPU backend with `example_args`; a mismatch beyond float tolerance, or a
    NaN or infinity not where the original has it, raises `AssertionError` with the largest
    difference. JAX's configuration is left as it was found.
    Needs JAX: `pip install 'convcanon[xla]'`.
    """
    if not callable(fn):
        raise TypeError(f"from_jax: fn must be callable, not {type(fn).__qualname__}")
    try:
        import jax
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "convcanon.from_jax needs JAX, which is not installed: pip install 'convcanon[xla]'",
            name="jax",
        ) from None

    lowered = jax.jit(fn).lower(*example_args)
    original = lowered.as_text()
    result = canonicalize_conv(original, "stablehlo", **options)
    out = JaxCanonicalizeResult(result.text, result.stats, original_text=original)
    if compare:
        inputs = _module_inputs(lowered, example_args)
        with _jax_config_restored():
            out.max_abs_error = _max_error_on_xla(original, result.text, inputs)
    return out


def canonicalize_exported(exported: Any, **options: Any) -> Any:
    """A `jax.export.Exported` whose module is `exported`'s with its convolutions canonicalized.

    Everything else is `exported`'s own (avals, shardings, platforms, calling convention, kept
    arguments, effects), so the result serializes, deserializes and `.call`s like the original,
    also shape-polymorphic ones: jax.export's `@main` wrapper, its shape assertions and the
    dimension arguments are left as they are. Options are `canonicalize_conv`'s. Needs JAX.
    """
    try:
        from jax import export
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "convcanon.canonicalize_exported needs JAX, which is not installed: "
            "pip install 'convcanon[xla]'",
            name="jax",
        ) from None
    import dataclasses

    check_argument(
        "canonicalize_exported", "exported", exported, export.Exported, "jax.export.Exported"
    )
    where = SourceLoc("<jax.export.Exported>")
    try:
        text = exported.mlir_module()
    except Exception as err:  # jax's deserializer: a JaxRuntimeError, or worse on odd bytes
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConvcanonError(f"its module does not deserialize: {message}", where) from None
    if not re.search(r"func\.func (?:public )?@main\(", text):
        raise ConvcanonError("its module has no @main, the function an Exported calls", where)
    result = canonicalize_conv(text, "stablehlo", **options)
    serialized = _portable_artifact(result.text, exported.mlir_module_serialized)
    return dataclasses.replace(exported, mlir_module_serialized=serialized)


def _portable_artifact(text: str, original: bytes) -> bytes:
    """The module as a StableHLO portable artifact for the version `original` (an Exported's
    artifact) was written for, so a consumer that reads it reads ours; the version four weeks
    old, as jax.export writes, when it names none. Other dialects (Shardy's) are kept."""
    from jaxlib.mlir.dialects import stablehlo

    from convcanon.hlo.context import parse_module
    from convcanon.hlo.formats import artifact_version, portable_artifact

    target = artifact_version(original) or stablehlo.get_version_from_compatibility_requirement(
        stablehlo.StablehloCompatibilityRequirement.WEEK_4
    )
    module = parse_module(text, "<canonical module>")
    return portable_artifact(module, target, "<jax.export.Exported>")


def _module_inputs(lowered: Any, example_args: tuple[Any, ...]) -> list[Any]:
    """The arguments the lowered module takes, as numpy arrays of the dtypes it was lowered to.

    `jax.jit` drops unused arguments from the module (its `kept_var_idx`); feeding them anyway
    makes XLA refuse the call. The dtype is the one JAX lowered to (float32 for a float64 numpy
    array while x64 is off), which is what the module expects.
    """
    import jax
    import numpy as np

    leaves = jax.tree_util.tree_leaves(example_args)
    infos = jax.tree_util.tree_leaves(lowered.args_info)
    # `kept_var_idx` is JAX-internal: without it, assume every argument was kept.
    compile_args = getattr(getattr(lowered, "_lowering", None), "compile_args", None) or {}
    kept = compile_args.get("kept_var_idx")
    return [
        np.asarray(leaf, dtype=info.dtype)
        for index, (leaf, info) in enumerate(zip(leaves, infos, strict=True))
        if kept is None or index in kept
    ]


@contextmanager
def _jax_config_restored() -> Iterator[None]:
    """Undo every JAX configuration change made inside (the XLA engine turns on x64 globally)."""
    import jax

    before = dict(jax.config.values)
    try:
        yield
    finally:
        for name, value in before.items():
            if jax.config.values.get(name) != value:
                jax.config.update(name, value)


def _max_error_on_xla(original: str, rewritten: str, inputs: list[Any]) -> float:
    """Run both modules on XLA CPU; raise `AssertionError` past float tolerance."""
    from convcanon.verify.xla_engine import run_stablehlo_text

    expected = run_stablehlo_text(original, inputs)
    actual = run_stablehlo_text(rewritten, inputs)
    worst = 0.0
    for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
        error, why = _output_difference(want, got)
        worst = max(worst, error)
        if why:
            raise AssertionError(
                f"canonicalized module differs on XLA: output {index} {why} (max abs error {worst})"
            )
    return worst


def _output_difference(want: Any, got: Any) -> tuple[float, str]:
    """The largest difference between two results where both are finite, and why `got` is not
    `want` within float tolerance ("" if it is). A NaN or an infinity must be where `want` has
    it: it is what the program computes (a NaN is no mismatch of itself), and it takes no part
    in the tolerance, which an infinite scale would make infinite."""
    import numpy as np

    want64, got64 = np.asarray(want, np.float64), np.asarray(got, np.float64)
    finite = np.isfinite(want64) & np.isfinite(got64)
    special = ~finite
    differences = np.abs(want64[finite] - got64[finite])
    error = float(np.max(differences, initial=0.0))
    if not np.array_equal(want64[special], got64[special], equal_nan=True):
        return error, "has a NaN or an infinity where the original's has not, or another one"
    scale = float(np.max(np.abs(want64[finite]), initial=0.0))
    if np.any(differences > 1e-4 * max(scale, 1.0) + 1e-4 * np.abs(want64[finite])):
        return error, "is past float tolerance"
    return error, ""


def verify_convs(
    before: str,
    after: str | None = None,
    *,
    pipeline: str | None = None,
    engine: Literal["reference", "xla", "iree"] = "reference",
    trials: int = 1,
    seed: int = 0,
    rtol: float | None = None,
    atol: float = 0.0,
) -> list[ConvVerdict]:
    """Judge every rewritten convolution of `before` on its own (`convcanon verify`'s local
    check): the conv alone, on operands drawn at its types, in f64 is the truth; the ops that
    replace it run on `engine`. AFTER is `after` (text printed with locations, as
    `--mlir-print-debuginfo` prints it: ops are paired with BEFORE's convs by location) or
    `before` after `pipeline`. One `ConvVerdict` per rewritten conv, in order: its location,
    `verdict` (`ok`, `mismatch`, ...), AFTER's error absolute and over the output's scale.
    """
    from convcanon.reference.parsed import each_text_parsed_once
    from convcanon.verify.command import check_options
    from convcanon.verify.judge import Tolerances
    from convcanon.verify.local import judge_convs
    from convcanon.verify.placement import one_report

    check_argument("verify_convs", "before", before, str)
    check_argument("verify_convs", "after", after, (str, type(None)))
    if (after is None) == (pipeline is None):
        raise UsageError("verify_convs takes `after` or `pipeline`, one of them")
    tolerances = Tolerances(rtol, atol)
    check_options(engine, trials, seed, [1], tolerances)
    with one_report(), each_text_parsed_once():
        report = judge_convs(
            before, "<before>", after, "<after>", pipeline, engine, trials, seed, tolerances
        )
    return report.verdicts
