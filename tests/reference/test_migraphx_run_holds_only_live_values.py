"""`convcanon run` of a migraphx or TOSA function holds only its live values.

The interpreter kept every intermediate until the function returned: a chain of ops, each one
under the memory limit, held all of them at once (12 exps of a 4 MB tensor peaked past 50 MB;
a long enough chain of large ones takes the machine's memory). Each value is now dropped after
the last op that reads it, as the HLO interpreter does; values read again later (a diamond)
stay until then. Measured with tracemalloc, which sees numpy's buffers.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.reference.migraphx_interp import Interpreter
from convcanon.xdsl_io import parse_file_text, print_file

N = 1 << 20  # elements: 4 MB of f32
CHAIN = 12


def _chain(n: int = N, length: int = CHAIN) -> str:
    t = f"<{n}xf32, 1>"
    lines = [f"func.func @main(%x: !migraphx.shaped{t}) -> !migraphx.shaped{t} {{"]
    previous = "%x"
    for k in range(length):
        lines.append(f"  %{k} = migraphx.tanh {previous} : {t} -> {t}")
        previous = f"%{k}"
    lines += [f"  return {previous} : !migraphx.shaped{t}", "}"]
    return "\n".join(lines) + "\n"


def _peak(text: str, inputs: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
    module = parse_file_text(text, "m.mlir")
    interpreter = Interpreter(module, "m.mlir", {})
    tracemalloc.start()
    try:
        out = interpreter.run("main", inputs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, out


def test_a_long_chain_holds_a_few_values_not_all():
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    truth = x
    for _ in range(CHAIN):
        truth = np.tanh(truth)
    text = _chain()
    module = parse_file_text(text, "m.mlir")
    migraphx_to_tosa(module, {})
    for program in (text, print_file(module)):
        peak, out = _peak(program, [x])
        np.testing.assert_allclose(out[0], truth, rtol=1e-6)
        assert peak < 5 * x.nbytes, (peak, x.nbytes)  # was > CHAIN * x.nbytes


def test_a_value_read_again_later_stays_until_then():
    t = "<4xf32, 1>"
    text = (
        f"func.func @main(%x: !migraphx.shaped{t}) -> !migraphx.shaped{t} {{\n"
        f"  %a = migraphx.exp %x : {t} -> {t}\n"
        f"  %b = migraphx.exp %a : {t} -> {t}\n"
        f"  %u = migraphx.neg %b : {t} -> {t}\n"
        f"  %c = migraphx.add %a, %u : {t}, {t} -> {t}\n"
        f"  %d = migraphx.mul %c, %x : {t}, {t} -> {t}\n"
        f"  return %d : !migraphx.shaped{t}\n}}\n"
    )
    x = np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32)
    _, out = _peak(text, [x])
    a = np.exp(x)
    np.testing.assert_allclose(out[0], (a - np.exp(a)) * x, rtol=1e-6)
