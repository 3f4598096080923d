"""Lower migraphx text to TOSA and judge it: iree-opt verifies, IREE runs, the migraphx reference
interpreter (flat strided buffers) is the expected result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.migraphx.shaped_type import ShapedType
from convcanon.reference.migraphx_interp import Interpreter
from convcanon.reference.migraphx_kernels import type_dtype
from convcanon.xdsl_io import parse_file_text, print_file

IREE_OPT = Path(sys.executable).with_name("iree-opt")


def lower(text: str) -> str:
    module = parse_file_text(text, "<test>")
    migraphx_to_tosa(module, {})
    return print_file(module)


def entry(module: ModuleOp) -> func.FuncOp:
    """The first public function, as IREE's runner picks it."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    public = [
        f for f in functions if f.sym_visibility is None or f.sym_visibility.data != "private"
    ]
    return (public or functions)[0]


def random_inputs(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = []
    for ty in entry(module).function_type.inputs.data:
        if isinstance(ty, ShapedType):
            shape = (ty.flat_size(),)
        else:
            assert isinstance(ty, TensorType)
            shape = tuple(ty.get_shape())
        dtype = type_dtype(ty)
        if dtype == np.bool_:
            inputs.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype.kind == "u":  # the upper half too, where unsigned meaning differs from signed
            high = min(int(np.iinfo(dtype).max), 1 << 40)
            inputs.append(rng.integers(0, high, shape, endpoint=True).astype(dtype))
        elif dtype.kind == "i":
            inputs.append(rng.integers(-5, 6, shape).astype(dtype))
        else:
            inputs.append(rng.uniform(0.5, 2.0, shape).astype(dtype))
    return inputs


def reference(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    module = parse_file_text(text, "<test>")
    return Interpreter(module, "<test>", {}).run(entry(module).sym_name.data, inputs)


def iree_opt_verify(tosa_text: str) -> None:
    done = subprocess.run(
        [str(IREE_OPT), "-", "-o", "/dev/null"], input=tosa_text, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr + "\n" + tosa_text


def as_signless(x: np.ndarray) -> np.ndarray:
    """An unsigned buffer as the signless (numpy: signed) buffer TOSA holds: the same bits."""
    return x.view(x.dtype.str.replace("u", "i")) if x.dtype.kind == "u" else x


def assert_close(actual: list[np.ndarray], expected: list[np.ndarray], rtol: float = 1e-4) -> None:
    assert len(actual) == len(expected)
    actual = [as_signless(a) for a in actual]
    expected = [as_signless(e) for e in expected]
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape, (a.shape, e.shape)
        if e.dtype.kind in "fV":
            np.testing.assert_allclose(
                a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=rtol
            )
        else:
            np.testing.assert_array_equal(a, e)


def check_with_iree(
    text: str, seed: int = 0, rtol: float = 1e-4, inputs: list[np.ndarray] | None = None
) -> str:
    """Lower, verify with iree-opt, run on IREE and on our TOSA interpreter; returns the TOSA."""
    from convcanon.verify.iree_tosa import run_tosa_text

    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    if inputs is None:
        inputs = random_inputs(parse_file_text(text, "<test>"), seed)
    expected = reference(text, inputs)
    flat = [as_signless(x) for x in inputs]
    assert_close(run_tosa_text(tosa_text, flat), expected, rtol)
    assert_close(reference(tosa_text, flat), expected, rtol)
    return tosa_text


def check_with_interpreter(
    text: str, seed: int = 0, rtol: float = 1e-4, inputs: list[np.ndarray] | None = None
) -> str:
    """Lower and run the TOSA on our reference interpreter (cheap: no IREE compile)."""
    tosa_text = lower(text)
    if inputs is None:
        inputs = random_inputs(parse_file_text(text, "<test>"), seed)
    flat = [as_signless(x) for x in inputs]
    assert_close(reference(tosa_text, flat), reference(text, inputs), rtol)
    return tosa_text
