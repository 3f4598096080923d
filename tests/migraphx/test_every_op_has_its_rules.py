"""Every migraphx op is declared once, in its class, and has all the tool needs of it: a shape
rule, a lowering to TOSA and a reference kernel, each registered against the class; the program
importer reads its instruction table from the classes. A new op that misses one fails here."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import ClassVar

from xdsl.ir import Attribute, Operation
from xdsl.irdl import OptAttributeDef, irdl_op_definition

from convcanon.conversion.migraphx_to_tosa.function_lowering import BOUNDARY_OPS, LOWERINGS
from convcanon.conversion.migraphx_to_tosa.lowerings import CORE_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.norm_lowerings import NORM_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.pad_lowerings import PAD_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.pool_lowerings import POOL_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.quant_lowerings import QUANT_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.reduce_lowerings import REDUCE_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.shape_lowerings import SHAPE_LOWERINGS
from convcanon.migraphx.dialect import Migraphx
from convcanon.migraphx.importer import OP_FIELDS
from convcanon.migraphx.op_base import Lens, MigraphxOp
from convcanon.migraphx.ops import ConvolutionOp
from convcanon.migraphx.quant_ops import QuantDotOp
from convcanon.reference.migraphx_interp import op_table
from convcanon.tosa.ops import TOSA
from convcanon.tosa.quant_ops import TOSA_QUANT_OPS


def has_shape_rule(op: type[Operation]) -> bool:
    """A migraphx op computes its result in `infer()`; the literal checks its value in `verify_`."""
    if issubclass(op, MigraphxOp):
        return op.infer is not MigraphxOp.infer
    return "verify_" in vars(op)


def missing_rules(
    ops: Iterable[type[Operation]],
    lowerings: Collection[type[Operation]],
    kernels: Collection[type[Operation]],
) -> list[str]:
    ops = list(ops)
    found = [f"{op.name} has no shape rule" for op in ops if not has_shape_rule(op)]
    found += [
        f"{op.name} has no lowering" for op in ops if op not in lowerings and op not in BOUNDARY_OPS
    ]
    found += [f"{op.name} has no reference kernel" for op in ops if op not in kernels]
    found += [f"a lowering of {op.name}, no op of the dialect" for op in lowerings if op not in ops]
    return found


def test_every_migraphx_op_has_a_shape_rule_a_lowering_and_a_kernel() -> None:
    ops = list(Migraphx.operations)
    assert {ConvolutionOp, QuantDotOp} <= set(ops)  # both op families are in the list
    assert missing_rules(ops, LOWERINGS, op_table()) == []


@irdl_op_definition
class _RulelessOp(MigraphxOp):
    name = "migraphx.test_ruleless"


@irdl_op_definition
class _LonelyOp(MigraphxOp):
    name = "migraphx.test_lonely"
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ()

    def infer(self) -> tuple[Lens, Attribute]:
        raise NotImplementedError


def test_an_op_without_its_rules_is_named() -> None:
    ops: list[type[Operation]] = [*Migraphx.operations, _RulelessOp, _LonelyOp]
    lowerings = {op: lowering for op, lowering in LOWERINGS.items() if op is not ConvolutionOp}
    kernels = {op: kernel for op, kernel in op_table().items() if op is not QuantDotOp}
    assert missing_rules(ops, lowerings, kernels) == [
        "migraphx.test_ruleless has no shape rule",
        "migraphx.convolution has no lowering",
        "migraphx.test_ruleless has no lowering",
        "migraphx.test_lonely has no lowering",
        "migraphx.quant_dot has no reference kernel",
        "migraphx.test_ruleless has no reference kernel",
        "migraphx.test_lonely has no reference kernel",
    ]
    assert missing_rules([ConvolutionOp], {ConvolutionOp, QuantDotOp}, {ConvolutionOp}) == [
        "a lowering of migraphx.quant_dot, no op of the dialect"
    ]


def test_each_op_family_lowers_its_own_ops() -> None:
    families = [
        CORE_LOWERINGS.keys(),
        REDUCE_LOWERINGS.keys(),
        POOL_LOWERINGS.keys(),
        PAD_LOWERINGS.keys(),
        NORM_LOWERINGS.keys(),
        SHAPE_LOWERINGS.keys(),
        QUANT_LOWERINGS.keys(),
    ]
    assert sum(len(family) for family in families) == len(LOWERINGS)
    assert LOWERINGS.keys() == set().union(*families)


def test_every_tosa_op_the_lowering_may_emit_has_a_kernel() -> None:
    kernels = op_table()
    assert [op.name for op in [*TOSA.operations, *TOSA_QUANT_OPS] if op not in kernels] == []


def test_the_importer_reads_each_instruction_from_its_op_class() -> None:
    declared = [
        (op.program_name(), op)
        for op in Migraphx.operations
        if issubclass(op, MigraphxOp) and op.program_name() is not None
    ]
    names = [name for name, _ in declared]
    assert len(names) == len(set(names))
    assert OP_FIELDS == {name: (op, op.PROGRAM_FIELDS) for name, op in declared}
    assert OP_FIELDS["convolution"] == (
        ConvolutionOp,
        ("padding", "stride", "dilation", "group", "padding_mode"),
    )
    assert OP_FIELDS["unpack_int4"][0].name == "migraphx.unpack"


def test_each_program_field_is_an_attribute_its_op_declares() -> None:
    """A field the importer writes must be one the op reads (unsqueeze listed `steps` and
    declared only `axes`: `steps={2}` imported as an unread attribute and a shape error), and a
    field left out at its MIGraphX default must be one the op may lack. A field may name its
    attribute otherwise (pooling's `lengths` is rocMLIR's `length`)."""
    found = []
    for op in Migraphx.operations:
        if not issubclass(op, MigraphxOp):
            continue
        declared = op.get_irdl_definition().attributes
        attribute = {f: op.PROGRAM_ATTRIBUTES.get(f, f) for f in op.PROGRAM_FIELDS}
        found += [f"{op.name}: {f}" for f in op.PROGRAM_FIELDS if attribute[f] not in declared]
        found += [
            f"{op.name}: default of {f}"
            for f in op.PROGRAM_DEFAULTS
            if f not in op.PROGRAM_FIELDS
            or not isinstance(declared.get(attribute[f]), OptAttributeDef)
        ]
    assert found == []
