"""Plans cached per conv configuration emit exactly what planning each conv afresh does, and
convcanon-opt's HLO job runs without the generated op classes."""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _mlir

from convcanon.diagnostics import ConvcanonError
from convcanon.hlo import passes
from convcanon.hlo.context import generic_op_classes
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.passes import canonicalize
from convcanon.records import NamedTuple

from .cases import parse

_CONV = "dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{{window}}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : (tensor<{lhs}>, tensor<{rhs}>) -> tensor<{out}>"
_STRIDED = _CONV.format(
    window="stride = [2, 2], pad = [[1, 1], [1, 1]]",
    lhs="1x8x8x2xf32",
    rhs="3x3x2x2xf32",
    out="1x4x4x2xf32",
)
_TRANSPOSED = _CONV.format(
    window="pad = [[1, 1], [1, 1]], lhs_dilate = [2, 2]",
    lhs="1x4x4x2xf32",
    rhs="2x2x2x2xf32",
    out="1x8x8x2xf32",
)
_HALF = _CONV.format(
    window="stride = [2, 2], pad = [[1, 1], [1, 1]]",
    lhs="1x8x8x2xf16",
    rhs="3x3x2x2xf16",
    out="1x4x4x2xf16",
)

# Every configuration repeats: on other operands, on one value as both operands (conv(x, x) must
# be emitted on the operands the conv has), in a second function (its own block and zero constant).
REPEATS = f"""
func.func public @main(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x2xf32>, %u: tensor<1x4x4x2xf32>, %k: tensor<2x2x2x2xf32>, %h: tensor<1x8x8x2xf16>, %g: tensor<3x3x2x2xf16>) -> (tensor<1x4x4x2xf32>, tensor<1x8x8x2xf32>, tensor<1x4x4x2xf16>) {{
  %0 = stablehlo.convolution(%x, %w) {_STRIDED}
  %1 = stablehlo.tanh %x : tensor<1x8x8x2xf32>
  %2 = stablehlo.convolution(%1, %w) {_STRIDED}
  %3 = stablehlo.add %0, %2 : tensor<1x4x4x2xf32>
  %4 = stablehlo.convolution(%u, %k) {_TRANSPOSED}
  %5 = stablehlo.convolution(%3, %k) {_TRANSPOSED}
  %6 = stablehlo.add %4, %5 : tensor<1x8x8x2xf32>
  %7 = stablehlo.convolution(%h, %g) {_HALF}
  %8 = stablehlo.convolution(%h, %g) {_HALF}
  %9 = stablehlo.add %7, %8 : tensor<1x4x4x2xf16>
  return %3, %6, %9 : tensor<1x4x4x2xf32>, tensor<1x8x8x2xf32>, tensor<1x4x4x2xf16>
}}
func.func private @same(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x2xf32>, %s: tensor<2x2x2x2xf32>) -> (tensor<1x4x4x2xf32>, tensor<1x8x8x2xf32>) {{
  %0 = stablehlo.convolution(%x, %w) {_STRIDED}
  %1 = stablehlo.slice %x [0:1, 0:4, 0:4, 0:2] : (tensor<1x8x8x2xf32>) -> tensor<1x4x4x2xf32>
  %2 = stablehlo.convolution(%1, %s) {_TRANSPOSED}
  return %0, %2 : tensor<1x4x4x2xf32>, tensor<1x8x8x2xf32>
}}
func.func private @twice(%x: tensor<2x2x2x2xf32>) -> tensor<2x1x1x2xf32> {{
  %0 = stablehlo.convolution(%x, %x) {_CONV.format(window="stride = [2, 2]", lhs="2x2x2x2xf32", rhs="2x2x2x2xf32", out="2x1x1x2xf32")}
  return %0 : tensor<2x1x1x2xf32>
}}
func.func private @twice_other(%x: tensor<2x2x2x2xf32>, %y: tensor<2x2x2x2xf32>) -> tensor<2x1x1x2xf32> {{
  %0 = stablehlo.convolution(%x, %x) {_CONV.format(window="stride = [2, 2]", lhs="2x2x2x2xf32", rhs="2x2x2x2xf32", out="2x1x1x2xf32")}
  %1 = stablehlo.convolution(%x, %y) {_CONV.format(window="stride = [2, 2]", lhs="2x2x2x2xf32", rhs="2x2x2x2xf32", out="2x1x1x2xf32")}
  %2 = stablehlo.add %0, %1 : tensor<2x1x1x2xf32>
  return %2 : tensor<2x1x1x2xf32>
}}
"""

OPTIONS = [
    pytest.param({"gate": "general"}, id="default"),
    pytest.param(
        {"gate": "general", "lhs-dilation": "interior-pad", "negative-padding": "slice"},
        id="interior-pad",
    ),
    pytest.param({"gate": "general", "wide-partials": False}, id="narrow-partials"),
]


def _canonical(dialect: Dialect, options: dict[str, bool | int | str]) -> tuple[str, object]:
    hlo = parse(REPEATS, dialect)
    stats, records = canonicalize(hlo, options, dialect)
    summary = [(r.phases, r.ops_added, r.macs_after) for r in records]
    text = hlo.module.operation.get_asm(enable_debug_info=True)
    return str(text), (stats.counters, summary)


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("dialect", [STABLEHLO, MHLO], ids=["stablehlo", "mhlo"])
def test_cached_plans_emit_what_fresh_plans_do(
    dialect: Dialect, options: dict[str, bool | int | str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once with the pass's caches (a configuration is planned and its ops emitted once, then
    replayed at each repeat), once afresh: every conv gets a key of its own, so neither its
    plan nor its emitted ops can come from another conv's."""
    planned: list[object] = []
    emitted: list[object] = []
    real_plan, real_emit, real_key = passes.plan_conv, passes.emit, passes.conv_key

    def counted_plan(*args: object) -> object:
        planned.append(args[0])
        return real_plan(*args)  # pyright: ignore[reportArgumentType]

    def counted_emit(*args: object) -> object:
        emitted.append(args[1])
        return real_emit(*args)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(passes, "plan_conv", counted_plan)
    monkeypatch.setattr(passes, "emit", counted_emit)
    cached = _canonical(dialect, options)
    # one plan and one emission per distinct configuration: strided, transposed, f16, 2x2/2
    assert (len(planned), len(emitted)) == (4, 4)

    keys = itertools.count()

    def own_key(*args: object) -> object:
        return (real_key(*args), next(keys))  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(passes, "conv_key", own_key)
    planned.clear()
    emitted.clear()
    fresh = _canonical(dialect, options)
    convs = REPEATS.count("stablehlo.convolution(")
    assert (len(planned), len(emitted)) == (convs, convs)
    assert cached == fresh


def test_generic_op_classes_restores_the_search_path() -> None:
    before = list(_mlir.globals.dialect_search_modules)
    with pytest.raises(RuntimeError), generic_op_classes():
        assert _mlir.globals.dialect_search_modules == []
        raise RuntimeError("the job failed")
    assert list(_mlir.globals.dialect_search_modules) == before


def test_convcanon_opt_never_imports_the_generated_op_classes(tmp_path) -> None:
    source = tmp_path / "in.mlir"
    source.write_text(REPEATS)
    code = (
        "import sys; from convcanon.cli import opt_main; "
        f"rc = opt_main([{str(source)!r}, '-p', 'stablehlo-canonicalize-conv{{gate=general}}', '-o', {str(tmp_path / 'out.mlir')!r}]); "
        "assert rc == 0; "
        "print(sorted(m for m in sys.modules if m.startswith('jaxlib.mlir.dialects')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_invalid_created_op_fails_verification_of_a_parsed_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A parsed module is verified op by op after the pass (only what it created): a rewrite bug
    that builds an ill-typed op must still fail, before anything is printed."""
    from convcanon.hlo import build
    from convcanon.hlo.io import parse_file_text

    def bad_add(self: build.Builder, lhs: build.Ref, rhs: build.Ref) -> build.Ref:
        wrong = ir.RankedTensorType.get([7], self.info(lhs)[1])
        return self._create(self._add_name, wrong, [lhs, rhs], {})

    monkeypatch.setattr(build.Builder, "add", bad_add)
    hlo = parse_file_text(REPEATS, "in.mlir")
    assert hlo.verified
    with pytest.raises(
        ConvcanonError, match="internal error: the rewritten module does not verify"
    ):
        canonicalize(hlo, {"gate": "general", "merge-phases": "exact"}, STABLEHLO)


# -- what a plan depends on is in its key ---------------------------------------------------------

_RESOURCES = '{-#\n  dialect_resources: {\n    builtin: {\n      pad: "0x080000000100000000000000010000000000000001000000000000000100000000000000"\n    }\n  }\n#-}\n'
_PADDINGS = ("attribute", "argument", "dense_resource", "constant", "constant-and-attribute")


class _Conv(NamedTuple):
    element: str  # f32 or f16
    stride: int
    pad: int
    padding: str  # where the padding comes from, one of _PADDINGS


def _conv_module(convs: list[_Conv]) -> str:
    """One function holding `convs`, all on the same 1x7x7x2 lhs and 3x3x2x2 kernel of their
    element type; a dynamic_conv's padding operand is the function's argument %p, a
    dense_resource constant (the same blob each time) or a dense constant."""
    body, results = [], []
    for i, c in enumerate(convs):
        out = (7 + 2 * c.pad - 3) // c.stride + 1
        lhs, rhs, res = (
            f"tensor<1x7x7x2x{c.element}>",
            f"tensor<3x3x2x2x{c.element}>",
            f"tensor<1x{out}x{out}x2x{c.element}>",
        )
        x, w = f"%x_{c.element}", f"%w_{c.element}"
        attrs = (
            "batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,"
            f" feature_group_count = 1 : i64, window_strides = array<i64: {c.stride}, {c.stride}>"
        )
        pairs = f"dense<[[{c.pad}, {c.pad}], [{c.pad}, {c.pad}]]>"
        if c.padding == "attribute":
            body.append(
                f'  %{i} = "stablehlo.convolution"({x}, {w}) <{{{attrs}, padding = {pairs} : tensor<2x2xi64>}}> : ({lhs}, {rhs}) -> {res}'
            )
        else:
            operand = "%p"
            if c.padding == "dense_resource":
                body.append(f"  %c{i} = stablehlo.constant dense_resource<pad> : tensor<2x2xi64>")
                operand = f"%c{i}"
            elif c.padding.startswith("constant"):
                body.append(f"  %c{i} = stablehlo.constant {pairs} : tensor<2x2xi64>")
                operand = f"%c{i}"
            if c.padding == "constant-and-attribute":
                attrs += f", padding = {pairs} : tensor<2x2xi64>"
            body.append(
                f'  %{i} = "stablehlo.dynamic_conv"({x}, {w}, {operand}) <{{{attrs}}}> : ({lhs}, {rhs}, tensor<2x2xi64>) -> {res}'
            )
        results.append((f"%{i}", res))
    args = ", ".join(
        f"%x_{e}: tensor<1x7x7x2x{e}>, %w_{e}: tensor<3x3x2x2x{e}>" for e in ("f32", "f16")
    )
    returned = ", ".join(name for name, _ in results)
    types = ", ".join(ty for _, ty in results)
    return (
        f"func.func public @main({args}, %p: tensor<2x2xi64>) -> ({types}) {{\n"
        + "\n".join(body)
        + f"\n  return {returned} : {types}\n}}\n"
        + _RESOURCES
    )


def _plans(convs: list[_Conv]) -> list[object]:
    _, records = canonicalize(parse(_conv_module(convs)), {"gate": "general"}, STABLEHLO)
    return [(r.plan, r.kind, r.kept) for r in records]


def test_dynamic_convs_whose_paddings_are_unread_for_different_reasons_keep_their_reasons() -> None:
    """Same types and attributes, one padded from an argument and one from a dense_resource:
    the second once reused the first's plan, and `explain` gave both the first's reason."""
    convs = [_Conv("f32", 2, 1, "argument"), _Conv("f32", 2, 1, "dense_resource")]
    _, records = canonicalize(parse(_conv_module(convs)), {"gate": "general"}, STABLEHLO)
    assert [r.decision.reason for r in records] == [
        "padding is computed at run time (a dynamic_conv; refine its shapes first)",
        "its padding is a dense_resource constant, which the pass does not read",
    ]


_CONVS = st.builds(
    _Conv,
    st.sampled_from(["f32", "f16"]),
    st.sampled_from([1, 2]),
    st.sampled_from([0, 1]),
    st.sampled_from(_PADDINGS),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(convs=st.lists(_CONVS, min_size=2, max_size=6))
def test_convs_that_differ_in_anything_the_plan_reads_never_share_a_plan(
    convs: list[_Conv],
) -> None:
    """Each conv of a module gets the plan it gets alone in a module (where no plan can be
    shared): its types, attributes, op and the source of its padding operand all count."""
    assert _plans(convs) == [_plans([c])[0] for c in convs]
