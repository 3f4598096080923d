"""`migraphx.pad`: MIGraphX's pad (constant, reflect or edge) in rocMLIR's syntax. Its own
module: `ops.py` is full; it joins `CORE_OPS` there.

    %p = migraphx.pad %x {mode = "constant", pads = [0, 0, 1, 1, 0, 0, 1, 1],
           value = 0.00000000e+00 : f32} : <1x3x4x4xf32, 48x16x4x1> -> <1x3x6x6xf32, ...>

MIGraphX prints `pad[mode=0,pads={0, 0, 1, 1, 0, 0, 1, 1},value=0]`: the mode as its enum's
number (constant, reflect, edge), every begin pad then every end pad, and the float `value`
(rocMLIR's F32Attr). rocMLIR's mode is an enum attribute; here it is its name, as pooling's.

The semantics are MIGraphX's reference op (`op::pad::compute`). MIGraphX's ONNX parser writes
a reflect or edge Pad as slices and a concat, so printed programs mostly hold constant pads; its
GPU kernel computes the constant mode alone and reads the begin pads unsigned (a negative one is
no crop there), and older reference targets padded in constant mode whatever the mode.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, StringAttr
from xdsl.ir import Attribute
from xdsl.irdl import attr_def, irdl_op_definition, opt_attr_def

from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.op_base import Lens, MigraphxOp, f32_value, int_list
from convcanon.migraphx.shaped_type import lowest_value, numpy_dtype


@irdl_op_definition
class PadOp(MigraphxOp):
    """Each output element reads the input at its index minus the begin pad, mapped by the mode:
    constant keeps it (outside the input: `value`), reflect mirrors it about the first and last
    element, edge clamps it (MIGraphX's reference, `pad::get_pad_func`)."""

    name = "migraphx.pad"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("mode", "pads", "value")
    PROGRAM_ENUMS: ClassVar[dict[str, tuple[str, ...]]] = {"mode": rules.PAD_MODES}
    PROGRAM_FLOATS: ClassVar[frozenset[str]] = frozenset({"value"})
    pads = attr_def(ArrayAttr)
    value = opt_attr_def(FloatAttr)
    mode = opt_attr_def(StringAttr)

    def pad_mode(self) -> str:
        """The mode's name (constant when absent, MIGraphX's default)."""
        attr = self.attributes.get("mode")
        if attr is None:
            return "constant"
        if not isinstance(attr, StringAttr) or attr.data not in rules.PAD_MODES:
            raise rules.ShapeError(
                f"pad mode must be one of {', '.join(rules.PAD_MODES)}, got {attr}"
            )
        return attr.data

    def pad_value(self) -> float:
        """`value` as MIGraphX holds it, an f32 (0 when absent, MIGraphX's default)."""
        return f32_value(self, "value", 0.0)

    def begins_ends(self) -> tuple[Lens, Lens]:
        (x,) = self.in_types()
        pads = int_list(self, "pads")
        rules.pad_lens(x.lens, pads)
        rank = len(x.lens)
        return tuple(pads[:rank]), tuple(pads[rank:])

    def fill(self, dtype: np.dtype) -> np.ndarray:
        """The constant written outside the input, in the result's `dtype`: MIGraphX's
        `pad_clamp` of the f32 value (see `fill_value`)."""
        return fill_value(self.pad_value(), dtype)

    def infer(self) -> tuple[Lens, Attribute]:
        (x,) = self.in_types()
        self.pad_mode()
        self.fill(numpy_dtype(x.element_type))  # a fill the type cannot hold is refused here
        return rules.pad_lens(x.lens, int_list(self, "pads")), x.element_type


_F32 = np.finfo(np.float32)
_INTEGER_NAMES = ("int4", "uint4")


def fill_value(value: float, dtype: np.dtype) -> np.ndarray:
    """MIGraphX's `pad_clamp<T>(float value)`: f32's lowest and max (and the values one ulp
    inside them, its float_equal) become T's lowest and max; anything else is clamped to T's
    range, so an infinity becomes T's finite extreme, and converted (an integer truncates
    toward zero). A NaN stays NaN in a float type and has no integer value: ShapeError (the
    op's verifier refuses it). The value is a 0-d array of `dtype`."""
    dtype = np.dtype(dtype)
    integer = dtype.kind in "iub" or dtype.name in _INTEGER_NAMES
    low, high = _bounds(dtype)
    if value <= float(np.nextafter(_F32.min, np.float32(0))):
        return np.asarray(low).astype(dtype)
    if value >= float(np.nextafter(_F32.max, np.float32(0))):
        return np.asarray(high).astype(dtype)
    if value != value:
        if integer:
            raise rules.ShapeError(f"a NaN pad value has no {dtype} value (undefined in MIGraphX)")
        return np.asarray(np.nan).astype(dtype)
    if integer:  # compared as integers: int64's max is no float
        whole = min(max(int(value), int(low)), int(high))
        return np.asarray(whole).astype(dtype)
    return np.asarray(min(max(value, float(low)), float(high))).astype(dtype)


def _bounds(dtype: np.dtype) -> tuple[float | int, float | int]:
    """T's lowest and max, as numeric_limits<T> gives them (a bool: false and true)."""
    import ml_dtypes

    if dtype == np.bool_:
        return 0, 1
    if dtype.kind in "iu" or dtype.name in _INTEGER_NAMES:
        info = ml_dtypes.iinfo(dtype)
        return int(info.min), int(info.max)
    return lowest_value(dtype), float(ml_dtypes.finfo(dtype).max)
