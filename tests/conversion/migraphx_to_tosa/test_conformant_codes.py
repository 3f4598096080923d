"""`types=conformant` decodes and encodes every code point bit for bit, on IREE and on our TOSA
interpreter: fp8 FNUZ (both), e8m0 and fp4 to and from f32, int4 from and to integers. The 4-bit
buffers are packed two to a byte (low nibble first) and every code is tried in both nibbles.

The expected encodings are MIGraphX's rules, modelled here independently of the lowering:
fp8 FNUZ round to nearest even and saturate at the largest finite value, inf/NaN -> 0x80;
e8m0 is the f32 exponent field; fp4 rounds to nearest even and saturates at 6 (the lowering
reads no NaN sign: NaN -> +0); int4 keeps the low 4 bits.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from convcanon.reference.migraphx_interp import run_module_text
from convcanon.tosa.storage import (
    boundary_storage,
    from_storage,
    pack_inputs,
    to_storage,
    unpack_outputs,
    value_dtype,
)
from convcanon.verify.iree_tosa import run_tosa_text
from convcanon.xdsl_io import parse_file_text

from .harness import entry, iree_opt_verify, lower

FLOATS = ("f8E4M3FNUZ", "f8E5M2FNUZ", "f8E8M0FNU", "f4E2M1FN")
FOREIGN_TENSOR = re.compile(r"x(f8E4M3FNUZ|f8E5M2FNUZ|f8E8M0FNU|f4E2M1FN|i4)>")


def _convert(source: str, target: str, n: int) -> str:
    return (
        f"func.func @main(%a: !migraphx.shaped<{n}x{source}, 1>) -> "
        f"!migraphx.shaped<{n}x{target}, 1> {{\n"
        f"  %0 = migraphx.convert %a : <{n}x{source}, 1> to <{n}x{target}, 1>\n"
        f"  return %0 : !migraphx.shaped<{n}x{target}, 1>\n}}\n"
    )


def lowered(text: str) -> str:
    """The conformant lowering, checked: iree-opt verifies it, no tensor of a foreign type."""
    tosa = lower(text)
    iree_opt_verify(tosa)
    assert not FOREIGN_TENSOR.search(tosa), FOREIGN_TENSOR.search(tosa)
    return tosa


def on_both_engines(
    tosa: str, values: list[np.ndarray], iree: bool = True
) -> dict[str, list[np.ndarray]]:
    """IREE (values packed and unpacked by the buffers' labels; unless not `iree`) and our TOSA
    interpreter (fed the raw storage bytes)."""
    function = entry(parse_file_text(tosa, "<t>"))
    ins, outs = boundary_storage(function)
    raw = pack_inputs(values, ins)
    assert all(x.dtype == np.int8 for x, kind in zip(raw, ins, strict=True) if kind)
    feed = {f"arg{i}": x for i, x in enumerate(raw)}
    _, interpreted = run_module_text(tosa, "<t>", function.sym_name.data, feed)
    results = {"interpreter": unpack_outputs(interpreted, outs)}
    if iree:
        results["iree"] = run_tosa_text(tosa, values)
    return results


def assert_same_bits(got: np.ndarray, expected: np.ndarray, engine: str) -> None:
    """Equal bit patterns; NaNs equal whatever their payload."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, engine
    if expected.dtype == np.float32:
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(got), nan, err_msg=engine)
        bits, want = got.view(np.uint32)[~nan], expected.view(np.uint32)[~nan]
        np.testing.assert_array_equal(bits, want, err_msg=engine)
    else:
        np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8), err_msg=engine)


# -- decode ----------------------------------------------------------------------------------------


def all_codes(element: str) -> np.ndarray:
    """Every code as values: each byte once; for 4-bit types every byte, so each nibble code
    sits in the low and in the high half."""
    data = np.arange(256, dtype=np.uint8).view(np.int8)
    count = 512 if element in ("f4E2M1FN", "si4", "ui4") else 256
    return from_storage(data, element, count)


@pytest.mark.parametrize("element", FLOATS)
def test_every_code_decodes_to_its_f32_value(element: str) -> None:
    values = all_codes(element)
    expected = values.astype(np.float32)  # ml_dtypes: MLIR's meaning of each code
    tosa = lowered(_convert(element, "f32", values.size))
    for engine, (got,) in on_both_engines(tosa, [values]).items():
        assert_same_bits(got, expected, engine)


@pytest.mark.parametrize(("element", "low", "high"), [("si4", -8, 7), ("ui4", 0, 15)])
def test_every_int4_nibble_decodes_to_its_value(element: str, low: int, high: int) -> None:
    values = all_codes(element)
    ints = values.astype(np.int64)
    assert ints.min() == low and ints.max() == high
    raw = np.arange(256)
    low_nibbles, high_nibbles = ints[0::2], ints[1::2]
    np.testing.assert_array_equal(low_nibbles & 15, raw & 15)
    np.testing.assert_array_equal(high_nibbles & 15, raw >> 4)
    tosa = lowered(_convert(element, "si32", values.size))
    for engine, (got,) in on_both_engines(tosa, [values]).items():
        np.testing.assert_array_equal(got, ints.astype(np.int32), err_msg=engine)


# -- encode ----------------------------------------------------------------------------------------


def probes(element: str) -> np.ndarray:
    """Every finite value of the type, the midpoints between neighbours and the f32 values next
    to them, beyond the range, the smallest values, inf, NaN and zeros, with both signs; for
    4-bit types twice, shifted by one, so each lands in both nibbles."""
    codes = np.arange(16 if element == "f4E2M1FN" else 256, dtype=np.uint8)
    values = codes.view(value_dtype(element)).astype(np.float32)
    finite = np.unique(np.abs(values[np.isfinite(values)]))
    mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    near = [np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(0))]
    top, bottom = finite[-1], finite[finite > 0][0]
    with np.errstate(over="ignore"):  # e8m0's 2^127 * 2 is inf, which is wanted
        beyond = [top * 1.5, top * 2]
    edges = [*beyond, 1e30, np.finfo(np.float32).max, np.inf, bottom / 2, bottom / 4]
    edges += [1e-40, np.finfo(np.float32).tiny, 0.0]
    magnitudes = np.concatenate([finite, mids, *near, np.asarray(edges, np.float32)])
    signed = np.concatenate([magnitudes, -magnitudes, [np.float32(np.nan)]]).astype(np.float32)
    if element == "f4E2M1FN":
        signed = np.concatenate([signed, [np.float32(0.0)], signed])
    return signed


def migraphx_codes(x: np.ndarray, element: str) -> np.ndarray:
    """MIGraphX's encodings (its clipping fp8 cast, its generic e8m0 float, float_to_fp4)."""
    dtype = value_dtype(element)
    if element == "f8E8M0FNU":  # the exponent field of |x|: truncation, NaN/inf 0xFF
        return ((np.abs(x).view(np.uint32) >> 23) & 0xFF).astype(np.uint8)
    if element == "f4E2M1FN":  # ties to even, saturating; NaN as +0 (its sign is not read)
        codes = x.astype(dtype).view(np.uint8).copy()
        codes[np.isnan(x)] = 0
        return codes
    largest = float(ml_dtypes.finfo(dtype).max)
    codes = np.clip(x, -largest, largest).astype(dtype).view(np.uint8).copy()
    codes[~np.isfinite(x)] = 0x80
    return codes


def test_the_encoding_model_is_migraphx_s_rule() -> None:
    """Spot checks of the model against MIGraphX's rules written out by hand."""
    cases = {
        "f8E4M3FNUZ": [(244.0, 0x7F), (-1e6, 0xFF), (np.inf, 0x80), (-1e-30, 0), (-0.0, 0)],
        "f8E5M2FNUZ": [(61440.0, 0x7F), (-np.inf, 0x80), (1.5 * 2.0**-17, 0x02)],
        "f8E8M0FNU": [(1.5, 127), (3.99, 128), (-4.0, 129), (1e-40, 0), (np.nan, 255)],
        "f4E2M1FN": [(0.25, 0), (0.75, 2), (1.25, 2), (2.5, 4), (5.0, 6), (5.01, 7), (-0.0, 8)],
    }
    for element, pairs in cases.items():
        x = np.asarray([v for v, _ in pairs], np.float32)
        np.testing.assert_array_equal(migraphx_codes(x, element), [c for _, c in pairs])


@pytest.mark.parametrize("element", FLOATS)
def test_f32_encodes_with_migraphx_rounding_and_saturation(element: str) -> None:
    x = probes(element)
    expected = migraphx_codes(x, element).view(value_dtype(element))
    tosa = lowered(_convert("f32", element, x.size))
    for engine, (got,) in on_both_engines(tosa, [x]).items():
        assert_same_bits(got, expected, engine)


@pytest.mark.parametrize("element", ["si4", "ui4"])
def test_integers_encode_to_int4_by_their_low_bits(element: str) -> None:
    every = np.arange(-128, 128, dtype=np.int8)
    x = np.concatenate([every, [np.int8(0)], every])  # each value in both nibbles
    nibble = x.astype(np.int64) & 15
    value = np.where(nibble >= 8, nibble - 16, nibble) if element == "si4" else nibble
    expected = value.astype(value_dtype(element))
    tosa = lowered(_convert("si8", element, x.size))
    for engine, (got,) in on_both_engines(tosa, [x]).items():
        np.testing.assert_array_equal(got.astype(np.int64), value, err_msg=engine)
        np.testing.assert_array_equal(to_storage(got, element), to_storage(expected, element))
