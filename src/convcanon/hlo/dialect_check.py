"""A conv pass over the other dialect's convolutions is a user mistake, not a no-op: say which
pass the module needs."""

from __future__ import annotations

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.context import source_loc
from convcanon.hlo.dialects import DIALECTS, Dialect
from convcanon.hlo.io import HloFile
from convcanon.pipeline import CONV_PASS_FOR_DIALECT


def convs_by_dialect(module: ir.Module) -> dict[str, list[ir.Operation]]:
    """Every conv (`convolution` or `dynamic_conv`) of each HLO dialect in the module, in
    pre-order (one walk, in C++)."""
    names = {name: d.name for d in DIALECTS.values() for name in d.convs}
    found: dict[str, list[ir.Operation]] = {name: [] for name in DIALECTS}

    def visit(op: ir.Operation) -> ir.WalkResult:
        dialect = names.get(op.name)
        if dialect is not None:
            found[dialect].append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def check_conv_dialect(hlo_file: HloFile, dialect: Dialect) -> None:
    """Raise when the module has no `dialect` conv but has convs of the other HLO dialect, or
    VHLO ones."""
    found = convs_by_dialect(hlo_file.module)
    if found[dialect.name]:
        return
    for other, convs in found.items():
        if other != dialect.name and convs:
            ours, theirs = CONV_PASS_FOR_DIALECT[dialect.name], CONV_PASS_FOR_DIALECT[other]
            kinds = " and ".join(sorted({op.name for op in convs}))
            first = convs[0].name
            raise ConvcanonError(
                f"{ours} found no {dialect.conv} but {len(convs)} {kinds}"
                f" op{'s' if len(convs) > 1 else ''}: use {theirs} for {other} modules",
                source_loc(
                    convs[0].location,
                    hlo_file.filename,
                    position=hlo_file.position_of(first, 0),  # convs[0] is the first of its name
                ),
            )
    _check_vhlo(hlo_file, dialect)


def _check_vhlo(hlo_file: HloFile, dialect: Dialect) -> None:
    """Raise when the module's convs are VHLO ones: StableHLO's serialized form (a portable
    artifact's contents, printed), which no pass reads; passed over, they were left as they
    were without a word."""
    convs: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.startswith("vhlo.convolution_"):
            convs.append(op)
        return ir.WalkResult.ADVANCE

    hlo_file.module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    if convs:
        ours = CONV_PASS_FOR_DIALECT[dialect.name]
        raise ConvcanonError(
            f"{ours} found no {dialect.conv} but {len(convs)} {convs[0].name}"
            f" op{'s' if len(convs) > 1 else ''}: VHLO, StableHLO's serialized form, which the"
            " conv passes do not read; give the portable artifact itself, or legalize the"
            " module to StableHLO first (stablehlo-opt --vhlo-legalize-to-stablehlo)",
            source_loc(convs[0].location, hlo_file.filename),
        )
