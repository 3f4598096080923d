"""The HLO context module: jaxlib loaded without its package `__init__`, and contexts that load
dialects as modules use them, while later users of jaxlib (JAX) see the package as usual."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

from convcanon.hlo.context import ir, make_context


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_jaxlib_init_runs_when_a_name_of_it_is_first_asked():
    out = _run(
        "import sys\n"
        "import convcanon.hlo.context\n"
        "print('jaxlib.version' in sys.modules)\n"
        "import jaxlib\n"
        "print(jaxlib.__version__)\n"
        "print('jaxlib.version' in sys.modules, '__getattr__' in vars(jaxlib))\n"
    )
    assert out.splitlines() == ["False", version("jaxlib"), "True False"]


def test_jax_works_after_the_context_module():
    out = _run(
        "import convcanon.hlo.context\n"
        "import jax, jax.numpy as jnp\n"
        "print(jax.__version__, float(jnp.add(jnp.float32(1), 2)))\n"
    )
    assert out == f"{version('jax')} 3.0"


def test_jaxlib_logger_reaches_logging_when_jax_uses_it():
    out = _run(
        "import sys, convcanon.hlo.context\n"
        "print('logging' in sys.modules)\n"
        "import logging\n"
        "logging.basicConfig(level=logging.DEBUG, stream=sys.stdout,\n"
        "                    format='%(name)s %(message)s')\n"
        "from jaxlib.mlir import ir\n"
        "ir.Context()\n"  # jaxlib's own Context logs through the logger it kept
    )
    lines = out.splitlines()
    assert lines[0] == "False"
    assert "jaxlib.mlir._mlir_libs Loading all available dialects" in lines[1:]


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
