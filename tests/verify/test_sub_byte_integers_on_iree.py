"""Sub-byte integer arguments and results (i2, i4, ui2, ui4) on IREE: verify handed IREE the
int8/uint8 buffers the interpreter keeps them in, and every call failed IREE's element type
check ("input0 element type mismatch; expected i4 (10000004) but have si8"); a sub-byte result
could not be read back either (iree.runtime maps no numpy dtype to it). Now they go in packed
as IREE takes them and come back one to a byte: on every pair of codes IREE, XLA and the
interpreter agree element for element (wrapping included), verify judges them on IREE, and a
tensor IREE cannot hold (5 x i4: not whole bytes) is IREE's located error, not a traceback."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from convcanon.verify.engines import ENGINES
from convcanon.verify.iree_buffers import pack_bits, unpack_bits
from convcanon.verify.signature import module_signature

from .cli_calls import cli, verify_tells_apart

pytest.importorskip("iree.runtime")
pytest.importorskip("jax")

ELEMENTS = ["i2", "i4", "ui2", "ui4"]


def _program(element: str, shape: tuple[int, ...], op: str = "add") -> str:
    """Three results; the second widens %b, whose codes differ along the packed (last) axis:
    IREE gives it in i32, so it shows the order of the codes within a byte going in (the others
    go in and come back through the same packing, blind to an order reversed both ways)."""
    t = f"tensor<{'x'.join(map(str, shape))}x{element}>"
    wide = t.replace(element, "i32")
    return (
        f"func.func @main(%a: {t}, %b: {t}) -> ({t}, {wide}, {t}) {{\n"
        f"  %0 = stablehlo.{op} %a, %b : {t}\n"
        f"  %1 = stablehlo.multiply %0, %b : {t}\n"
        f"  %2 = stablehlo.convert %b : ({t}) -> {wide}\n"
        f"  return %1, %2, %a : {t}, {wide}, {t}\n}}\n"
    )


def _every_pair(element: str) -> tuple[np.ndarray, np.ndarray]:
    """a[i, j] = code i, b[i, j] = code j: every pair of the type's values, in a byte."""
    name = element.replace("i", "int")  # i4 -> int4, ui4 -> uint4
    held = ml_dtypes.iinfo(getattr(ml_dtypes, name))
    values = np.arange(int(held.min), int(held.max) + 1)
    byte = np.uint8 if element.startswith("u") else np.int8
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.astype(byte), b.astype(byte)


@pytest.mark.parametrize("element", ELEMENTS)
def test_iree_xla_and_the_interpreter_agree_on_every_pair_of_codes(element: str):
    a, b = _every_pair(element)
    text = _program(element, a.shape)
    results = {
        engine: ENGINES[engine](text, "m.mlir", "main", [a, b])
        for engine in ("reference", "xla", "iree")
    }
    for engine in ("xla", "iree"):
        for ours, theirs in zip(results["reference"], results[engine], strict=True):
            assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), (
                engine,
                element,
                ours,
                theirs,
            )
    assert np.array_equal(results["iree"][2], a)  # read back as it went in


@pytest.mark.parametrize("bits", [2, 4])
def test_packing_is_undone_by_unpacking(bits: int):
    rng = np.random.default_rng(bits)
    for signed in (True, False):
        low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        for count in (1, 7, 8, 33):
            values = rng.integers(low, high, count)
            raw = pack_bits(values, bits)
            assert raw.size == -(-count * bits // 8)
            assert np.array_equal(unpack_bits(raw, bits, count, signed), values)


@pytest.mark.parametrize("element", ["i4", "ui2"])
def test_verify_on_iree_judges_sub_byte_integers(element: str, tmp_path: Path):
    before, wrong = tmp_path / "before.mlir", tmp_path / "wrong.mlir"
    before.write_text(_program(element, (4, 8)))
    wrong.write_text(_program(element, (4, 8), "subtract"))
    verify_tells_apart(before, wrong, "iree")


def test_a_sub_byte_tensor_iree_cannot_hold_is_its_located_error(tmp_path: Path):
    before = tmp_path / "odd.mlir"
    before.write_text(_program("i4", (5,)))
    assert module_signature(before.read_text(), str(before), None).args  # it parses
    code, out, err = cli("verify", str(before), str(before), "--engine", "iree")
    assert code == 1 and "Traceback" not in err, (out, err)
    assert err.startswith(f"{before}:1:1: error: IREE rejected the module: "), err
    assert "'tensor<5xi4>' does not have integral number of total bytes" in err, err
