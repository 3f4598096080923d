"""`migraphx.batch_norm_inference`: older MIGraphX's batch norm (before its ONNX parser wrote
the arithmetic out), in rocMLIR's syntax. Its own module: `ops.py` is full; it joins `CORE_OPS`
there.

    %y = migraphx.batch_norm_inference %x, %scale, %bias, %mean, %variance {bn_mode = 1 : i64,
           epsilon = 9.99999975e-06 : f32, momentum = 8.99999976e-01 : f32} : <...>, ... -> <...>

MIGraphX prints `batch_norm_inference[epsilon=1e-05,momentum=0.9,bn_mode=1](...)`: bn_mode is
its enum's number, per_activation (0) or spatial (1); momentum is training's and unused here.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, opt_attr_def

from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.op_base import (
    Lens,
    MigraphxOp,
    f32_value,
    int_value,
    same_element_type,
)
from convcanon.migraphx.shaped_type import is_float_type

BN_MODES = ("per_activation", "spatial")
"""MIGraphX's batch_norm_inference::bn_infer_mode_t, in its enum's order."""


@irdl_op_definition
class BatchNormInferenceOp(MigraphxOp):
    """scale * (x - mean) / sqrt(variance + epsilon) + bias, the four parameters per channel
    (spatial: one value per dim 1 of x) or per element of one batch entry (per_activation),
    as MIGraphX's reference target computes it."""

    name = "migraphx.batch_norm_inference"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input", "a", "b", "c", "d")
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("epsilon", "momentum", "bn_mode")
    PROGRAM_FLOATS: ClassVar[frozenset[str]] = frozenset({"epsilon", "momentum"})
    epsilon = opt_attr_def(FloatAttr)
    momentum = opt_attr_def(FloatAttr)
    bn_mode = opt_attr_def(IntegerAttr)

    def mode(self) -> str:
        """The mode's name (spatial when absent, MIGraphX's default)."""
        value = int_value(self, "bn_mode", 1)
        if not 0 <= value < len(BN_MODES):
            choices = ", ".join(f"{n} ({k})" for k, n in enumerate(BN_MODES))
            raise rules.ShapeError(f"batch_norm_inference bn_mode must be {choices}, got {value}")
        return BN_MODES[value]

    def epsilon_value(self) -> float:
        """epsilon as MIGraphX holds it, an f32 (1e-6 when absent, MIGraphX's default)."""
        return f32_value(self, "epsilon", float(np.float32(1e-6)))

    def parameter_lens(self) -> Lens:
        """The lens each parameter is read in, broadcast against x: [1, C, 1, ...] (spatial) or
        [1, *x.lens[1:]] (per_activation); every parameter holds that many elements."""
        x, *params = self.in_types()
        if len(x.lens) < 2:
            raise rules.ShapeError(
                "batch_norm_inference needs an input of rank >= 2 ([N, C, ...]), got "
                f"{list(x.lens)}"
            )
        if self.mode() == "spatial":
            lens: Lens = (1, x.lens[1], *([1] * (len(x.lens) - 2)))
        else:
            lens = (1, *x.lens[1:])
        for k, p in enumerate(params, 1):
            if p.lens != params[0].lens:
                raise rules.ShapeError(
                    f"batch_norm_inference parameters differ in shape: #{k} is {list(p.lens)}, "
                    f"#1 {list(params[0].lens)}"
                )
            if math.prod(p.lens) != math.prod(lens):
                raise rules.ShapeError(
                    f"batch_norm_inference ({self.mode()}) parameter #{k} of {list(p.lens)} holds "
                    f"{math.prod(p.lens)} elements, not the {math.prod(lens)} of {list(lens)}"
                )
        return lens

    def infer(self) -> tuple[Lens, Attribute]:
        types = self.in_types()
        element = same_element_type(types)
        if not is_float_type(element):
            raise rules.ShapeError(f"batch_norm_inference needs float operands, got {element}")
        self.parameter_lens()
        self.epsilon_value()
        f32_value(self, "momentum", 0.9)  # unused, but of rocMLIR's type
        return types[0].lens, element
