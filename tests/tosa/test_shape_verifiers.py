"""TOSA shape verifiers: an inconsistent hand-written TOSA module fails at parse, located.

Each case is a valid one-op module and a mutation of it (one string, replaced everywhere so the
function signature stays consistent). The valid module must parse
(and pass `iree-opt`); the mutation must fail in our parser with `file:line:col: error: 'op' ...`
at the op's line, and IREE's `iree-opt` (upstream MLIR's TOSA verifier) must reject it too,
except where `upstream` is False: those are TOSA 1.0 ERROR_IF rules that upstream's verifier
(LLVM in iree-base-compiler 3.13) leaves to later stages, which convcanon checks at parse because
its interpreter would otherwise fail on them at run time.
"""
# ruff: noqa: E501  (MLIR fixtures are one op per line)

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from convcanon.diagnostics import ConvcanonError
from convcanon.xdsl_io import parse_file_text

IREE_OPT = shutil.which("iree-opt") or str(Path(sys.executable).with_name("iree-opt"))

Z = '%z = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>'
SHIFT = '%s = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>'


def module(args: str, result: str, *body: str) -> str:
    """`@main(args) -> result` whose last body line defines %0; the op under test is on line 1 +
    len(body)."""
    lines = [f"func.func @main({args}) -> {result} {{", *(f"  {b}" for b in body)]
    return "\n".join([*lines, f"  func.return %0 : {result}", "}", ""])


CONV = module(
    "%x: tensor<1x6x6x2xf32>, %w: tensor<3x3x3x2xf32>",
    "tensor<1x4x4x3xf32>",
    Z,
    '%0 = "tosa.conv2d"(%x, %w, %z, %z, %z) <{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}> : (tensor<1x6x6x2xf32>, tensor<3x3x3x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x3xf32>',
)
DEPTHWISE = module(
    "%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x2xf32>",
    "tensor<1x3x3x4xf32>",
    Z,
    '%0 = "tosa.depthwise_conv2d"(%x, %w, %z, %z, %z) <{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}> : (tensor<1x5x5x2xf32>, tensor<3x3x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3x4xf32>',
)
CONV3D = module(
    "%x: tensor<1x4x4x4x2xf32>, %w: tensor<3x2x2x2x2xf32>",
    "tensor<1x2x3x3x3xf32>",
    Z,
    '%0 = "tosa.conv3d"(%x, %w, %z, %z, %z) <{acc_type = f32, dilation = array<i64: 2, 1, 1>, pad = array<i64: 0, 0, 0, 0, 0, 0>, stride = array<i64: 1, 1, 1>}> : (tensor<1x4x4x4x2xf32>, tensor<3x2x2x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3x3x3xf32>',
)
MATMUL = module(
    "%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>",
    "tensor<2x3x5xf32>",
    Z,
    '%0 = "tosa.matmul"(%a, %b, %z, %z) : (tensor<2x3x4xf32>, tensor<2x4x5xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3x5xf32>',
)
CONCAT = module(
    "%a: tensor<2x3xf32>, %b: tensor<2x4xf32>",
    "tensor<2x7xf32>",
    '%0 = "tosa.concat"(%a, %b) <{axis = 1 : i32}> : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>',
)
RESHAPE = module(
    "%x: tensor<2x6xf32>",
    "tensor<3x4xf32>",
    '%s = "tosa.const_shape"() <{values = dense<[3, 4]> : tensor<2xindex>}> : () -> !tosa.shape<2>',
    '%0 = "tosa.reshape"(%x, %s) : (tensor<2x6xf32>, !tosa.shape<2>) -> tensor<3x4xf32>',
)
TRANSPOSE = module(
    "%x: tensor<2x3x4xf32>",
    "tensor<4x2x3xf32>",
    '%0 = "tosa.transpose"(%x) <{perms = array<i32: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>',
)
SLICE = module(
    "%x: tensor<4x6xf32>",
    "tensor<2x3xf32>",
    '%b = "tosa.const_shape"() <{values = dense<[1, 3]> : tensor<2xindex>}> : () -> !tosa.shape<2>',
    '%n = "tosa.const_shape"() <{values = dense<[2, 3]> : tensor<2xindex>}> : () -> !tosa.shape<2>',
    '%0 = "tosa.slice"(%x, %b, %n) : (tensor<4x6xf32>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<2x3xf32>',
)
PAD = module(
    "%x: tensor<2x3xf32>",
    "tensor<3x6xf32>",
    Z,
    '%p = "tosa.const_shape"() <{values = dense<[0, 1, 2, 1]> : tensor<4xindex>}> : () -> !tosa.shape<4>',
    '%0 = "tosa.pad"(%x, %p, %z) : (tensor<2x3xf32>, !tosa.shape<4>, tensor<1xf32>) -> tensor<3x6xf32>',
)
TILE = module(
    "%x: tensor<1x3xf32>",
    "tensor<4x3xf32>",
    '%m = "tosa.const_shape"() <{values = dense<[4, 1]> : tensor<2xindex>}> : () -> !tosa.shape<2>',
    '%0 = "tosa.tile"(%x, %m) : (tensor<1x3xf32>, !tosa.shape<2>) -> tensor<4x3xf32>',
)
REDUCE = module(
    "%x: tensor<2x3xf32>",
    "tensor<2x1xf32>",
    '%0 = "tosa.reduce_sum"(%x) <{axis = 1 : i32}> : (tensor<2x3xf32>) -> tensor<2x1xf32>',
)
ADD = module(
    "%a: tensor<2x3xf32>, %b: tensor<1x3xf32>",
    "tensor<2x3xf32>",
    '%0 = "tosa.add"(%a, %b) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>',
)
MUL = module(
    "%a: tensor<2x3xf32>, %b: tensor<2x1xf32>",
    "tensor<2x3xf32>",
    SHIFT,
    '%0 = "tosa.mul"(%a, %b, %s) : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<1xi8>) -> tensor<2x3xf32>',
)
CLAMP = module(
    "%x: tensor<4xf32>",
    "tensor<4xf32>",
    '%0 = "tosa.clamp"(%x) <{max_val = 6.0 : f32, min_val = 0.0 : f32}> : (tensor<4xf32>) -> tensor<4xf32>',
)


@dataclass(frozen=True)
class Case:
    id: str
    valid: str
    old: str
    new: str
    fragment: str
    upstream: bool = True  # iree-opt rejects the mutation too

    @property
    def invalid(self) -> str:
        """Every occurrence replaced, so the function signature stays consistent."""
        assert self.old in self.valid, (self.id, self.old)
        return self.valid.replace(self.old, self.new)

    @property
    def line(self) -> int:
        """The op under test is the one defining %0."""
        return next(n for n, row in enumerate(self.valid.splitlines(), 1) if "%0 = " in row)


CASES = [
    Case("conv2d result shape", CONV, "tensor<1x4x4x3xf32>", "tensor<1x5x4x3xf32>",
         "'tosa.conv2d' op result shape [1, 5, 4, 3] does not match the inferred [1, 4, 4, 3]"),
    Case("conv2d stride does not divide", CONV, "stride = array<i64: 1, 1>", "stride = array<i64: 2, 1>",
         "= 3 is not divisible by stride 2"),
    Case("conv2d negative pad", CONV, "pad = array<i64: 0, 0, 0, 0>", "pad = array<i64: -1, 1, 0, 0>",
         "expects every pad value >= 0"),
    Case("conv2d dilation 0", CONV, "dilation = array<i64: 1, 1>", "dilation = array<i64: 0, 1>",
         "expects every dilation value >= 1"),
    Case("conv2d weight channels", CONV, "tensor<3x3x3x2xf32>", "tensor<3x3x3x5xf32>",
         "weight input channels 5 (last dim) differ from the input's 2", upstream=False),
    Case("depthwise result channels", DEPTHWISE, "tensor<1x3x3x4xf32>", "tensor<1x3x3x2xf32>",
         "does not match the inferred [1, 3, 3, 4]", upstream=False),
    Case("conv3d result depth", CONV3D, "tensor<1x2x3x3x3xf32>", "tensor<1x3x3x3x3xf32>",
         "does not match the inferred [1, 2, 3, 3, 3]"),
    Case("matmul inner dims", MATMUL, "tensor<2x4x5xf32>", "tensor<2x3x5xf32>",
         "a's columns (4, shape [2, 3, 4]) differ from b's rows (3"),
    Case("matmul result shape", MATMUL, "tensor<2x3x5xf32>", "tensor<2x5x3xf32>",
         "does not match the inferred [2, 3, 5]"),
    Case("concat operand shapes", CONCAT, "tensor<2x4xf32>", "tensor<3x4xf32>",
         "operand 1 shape [3, 4] differs from operand 0 shape [2, 3] outside axis 1"),
    Case("concat axis sum", CONCAT, "tensor<2x7xf32>", "tensor<2x8xf32>",
         "result shape [2, 8] does not match the inferred [2, 7]"),
    Case("concat axis out of range", CONCAT, "axis = 1 : i32", "axis = 2 : i32",
         "axis 2 is out of range for rank 2"),
    Case("reshape element count", RESHAPE, "tensor<2x6xf32>", "tensor<2x5xf32>",
         "from [2, 5] (10 elements) to [3, 4] (12 elements)"),
    Case("reshape shape vs result", RESHAPE, "dense<[3, 4]>", "dense<[4, 3]>",
         "result shape [3, 4] does not match the inferred [4, 3]"),
    Case("transpose not a permutation", TRANSPOSE, "array<i32: 2, 0, 1>", "array<i32: 2, 0, 0>",
         "permutation [2, 0, 0] is not a permutation of 3 dims"),
    Case("transpose result shape", TRANSPOSE, "tensor<4x2x3xf32>", "tensor<4x3x2xf32>",
         "result shape [4, 3, 2] does not match the inferred [4, 2, 3]"),
    Case("slice out of bounds", SLICE, "dense<[1, 3]>", "dense<[3, 4]>",
         "slice start [3, 4] size [2, 3] is out of bounds of the input [4, 6] in dim 0"),
    Case("slice result shape", SLICE, "tensor<2x3xf32>", "tensor<2x2xf32>",
         "result shape [2, 2] does not match the inferred [2, 3]"),
    Case("pad result shape", PAD, "dense<[0, 1, 2, 1]>", "dense<[0, 1, 2, 2]>",
         "result shape [3, 6] does not match the inferred [3, 7]"),
    Case("tile result shape", TILE, "dense<[4, 1]>", "dense<[2, 1]>",
         "result shape [4, 3] does not match the inferred [2, 3]", upstream=False),
    Case("reduce keeps no unit dim", REDUCE, "tensor<2x1xf32>", "tensor<2x3xf32>",
         "result shape [2, 3] does not match the inferred [2, 1]"),
    Case("add does not broadcast", ADD, "tensor<1x3xf32>", "tensor<2x4xf32>",
         "do not broadcast"),
    Case("add operand ranks differ", ADD, "tensor<1x3xf32>", "tensor<3xf32>",
         "operands have different ranks"),
    Case("mul shift not i8", MUL, "tensor<1xi8>", "tensor<1xi16>",
         "expects shift of type tensor<1xi8>"),
    Case("clamp min above max", CLAMP, "min_val = 0.0", "min_val = 7.0",
         "expects min_val <= max_val"),
]  # fmt: skip


def test_every_valid_module_parses_and_passes_iree_opt(tmp_path: Path) -> None:
    """The valid twins are real TOSA: our parser and upstream's accept them."""
    for case in {c.valid: c for c in CASES}.values():
        parse_file_text(case.valid, "ok.mlir")
    path = tmp_path / "ok.mlir"
    path.write_text("// -----\n".join({c.valid for c in CASES}))
    done = subprocess.run(
        [IREE_OPT, "--split-input-file", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_inconsistent_op_is_a_located_parse_error(case: Case) -> None:
    with pytest.raises(ConvcanonError) as caught:
        parse_file_text(case.invalid, "m.mlir")
    rendered = caught.value.render()
    assert rendered.startswith(f"m.mlir:{case.line}:3: error: '"), rendered
    assert case.fragment in rendered, rendered
    assert "\n" not in rendered


def test_upstream_rejects_the_same_modules(tmp_path: Path) -> None:
    """Cross-check with iree-opt: the cases marked upstream fail its verifier too; the others
    pass it (if upstream starts rejecting one, mark it: the table documents where we differ).
    One iree-opt run over all cases (--split-input-file keeps the file's line numbers)."""
    path = tmp_path / "bad.mlir"
    chunks, op_lines, offset = [], {}, 0
    for case in CASES:
        chunks.append(case.invalid)
        op_lines[offset + case.line] = case
        offset += case.invalid.count("\n") + 1  # the separator line
    path.write_text("// -----\n".join(chunks))
    done = subprocess.run(
        [IREE_OPT, "--split-input-file", str(path)], capture_output=True, text=True
    )
    rejected = {
        int(m[1])
        for m in re.finditer(rf"^{re.escape(str(path))}:(\d+):\d+: error:", done.stderr, re.M)
    }
    assert rejected <= set(op_lines), done.stderr  # every error is at an op under test
    differ = [c.id for line, c in op_lines.items() if (line in rejected) != c.upstream]
    assert not differ, done.stderr
