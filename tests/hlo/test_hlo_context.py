"""The HLO context module: contexts that load dialects as modules use them, past jaxlib's
`ir.Context` wrapper (which loads them all), while later users of jaxlib (JAX) work as usual."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

from jaxlib.mlir._mlir_libs import _mlir

from convcanon.hlo.context import ir, make_context


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_jaxlibs_context_is_a_python_subclass_of_the_native_one():
    """What `make_context` relies on to skip jaxlib's wrapper `__init__` (it loads every linked
    dialect, ~6 ms a context): the native context's own `__init__` is one class up."""
    native = ir.Context.__mro__[1]
    assert native.__module__ == _mlir.ir.__name__ and native.__name__ == "Context"
    assert "__init__" in vars(ir.Context)  # the wrapper that make_context goes past
    context = make_context()
    assert isinstance(context, ir.Context) and not context.is_registered_operation("math.exp")


def test_jax_works_after_the_context_module():
    out = _run(
        "import convcanon.hlo.context\n"
        "import jax, jax.numpy as jnp\n"
        "print(jax.__version__, float(jnp.add(jnp.float32(1), 2)))\n"
    )
    assert out == f"{version('jax')} 3.0"


def test_a_dialect_not_loaded_up_front_loads_when_a_module_uses_it():
    context = make_context()
    text = (
        "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = math.exp %a : tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n}\n"
    )
    assert not context.is_registered_operation("math.exp")
    module = ir.Module.parse(text, context)
    assert context.is_registered_operation("math.exp")
    assert "math.exp %arg0 : tensor<2xf32>" in str(module)


def test_ops_of_the_dialects_loaded_up_front_can_be_built():
    context = make_context()
    with context, ir.Location.unknown():
        f32 = ir.F32Type.get()
        tensor = ir.RankedTensorType.get([2], f32)
        splat = ir.DenseElementsAttr.get_splat(tensor, ir.FloatAttr.get(f32, 1.0))
        for name, attributes in [
            ("arith.constant", {"value": splat}),
            ("stablehlo.constant", {"value": splat}),
            ("mhlo.constant", {"value": splat}),
            ("tensor.empty", {}),
        ]:
            op = ir.Operation.create(name, results=[tensor], attributes=attributes)
            assert op.verify(), name
