"""The `check` dialect of StableHLO's interpreter tests (and its custom_call spelling): each
expectation is recorded in the run's `Env.checks`."""

from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError
from convcanon.reference.hlo.attributes import int_attr
from convcanon.reference.hlo.machine import CheckResult, Handler, Machine
from convcanon.reference.hlo.values import tensor_type, value_attr


def _float_view(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _equal_mask(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    if actual.dtype.kind in "fcV":
        a, e = _float_view(actual), _float_view(expected)
        return (a == e) | (np.isnan(a) & np.isnan(e))
    return actual == expected


def _almost_mask(actual: np.ndarray, expected: np.ndarray, tolerance: float) -> np.ndarray:
    if actual.dtype.kind not in "fcV":
        return actual == expected
    a, e = _float_view(actual), _float_view(expected)
    with np.errstate(all="ignore"):
        close = np.abs(a - e) <= tolerance * np.maximum(1.0, np.abs(e))
    return close | (a == e) | (np.isnan(a) & np.isnan(e))


def _ulp_mask(actual: np.ndarray, expected: np.ndarray, lo: int, hi: int) -> np.ndarray:
    if actual.dtype.kind not in "fV":
        return _equal_mask(actual, expected)
    a, e = np.asarray(actual, order="C"), np.asarray(expected.astype(actual.dtype), order="C")
    bits = np.dtype(f"i{a.dtype.itemsize}")
    ai, ei = a.view(bits).astype(np.int64), e.view(bits).astype(np.int64)
    top = np.int64(1) << (8 * a.dtype.itemsize - 1)
    ai = np.where(ai < 0, -(ai + top), ai)  # sign-magnitude bits -> a monotone integer key
    ei = np.where(ei < 0, -(ei + top), ei)
    distance = np.abs(ai - ei)
    ok = (distance >= lo) & (distance <= hi)
    a, e = _float_view(a), _float_view(e)
    return ok | (a == e) | (np.isnan(a) & np.isnan(e))


def _check(
    it: Machine, op: ir.Operation, kind: str, actual: np.ndarray, expected: np.ndarray
) -> None:
    if kind in ("expect_eq", "expect_eq_const"):
        mask = _equal_mask(actual, expected)
    elif kind in ("expect_almost_eq", "expect_almost_eq_const"):
        tolerance = 1e-3 if op.name.endswith("custom_call") else 1e-4
        if "tolerance" in op.attributes:
            tolerance = ir.FloatAttr(op.attributes["tolerance"]).value
        mask = _almost_mask(actual, expected, tolerance)
    elif kind == "expect_close":
        lo = int_attr(op, "min_ulp_difference", 0)
        hi = int_attr(op, "max_ulp_difference", 3)
        mask = _ulp_mask(actual, expected, lo, hi)
    elif kind == "expect_serialized_eq":
        return
    else:
        raise ConvcanonError(f"the interpreter does not support check '{kind}'", it.loc(op))
    mask = np.broadcast_to(mask, actual.shape)
    ok = bool(mask.all())
    detail = ""
    if not ok:
        first = np.argwhere(~mask)[0]
        index = tuple(int(i) for i in first)
        detail = (
            f"{kind} failed at index {list(index)}: got {actual[index]}, "
            f"expected {np.broadcast_to(expected, actual.shape)[index]} "
            f"({int((~mask).sum())} of {mask.size} elements differ)"
        )
    it.env.checks.append(CheckResult(it.loc(op), kind, ok, detail))


def _check_op(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    kind = op.name.split(".", 1)[1]
    actual = args[0]
    if kind.endswith("_const"):
        expected = value_attr(op, tensor_type(op.operands[0].type))
    else:
        expected = args[1]
    _check(it, op, kind, actual, expected)
    return []


_PASS_THROUGH_CALLS = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"}


def _custom_call(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    target = ir.StringAttr(op.attributes["call_target_name"]).value
    if target in _PASS_THROUGH_CALLS and len(args) == len(rt):
        return list(args)
    if not target.startswith("check."):
        raise ConvcanonError(f"the interpreter does not support custom_call @{target}", it.loc(op))
    kind = target.split(".", 1)[1]
    if kind.endswith("_const"):
        expected = value_attr(op, tensor_type(op.operands[0].type))
    else:
        expected = args[1]
    _check(it, op, kind, args[0], expected)
    return [a for a in args[: len(rt)]]


HANDLERS: dict[str, Handler] = {
    "custom_call": _custom_call,
    **{
        f"check.{kind}": _check_op
        for kind in (
            "expect_eq",
            "expect_eq_const",
            "expect_almost_eq",
            "expect_almost_eq_const",
            "expect_close",
            "expect_serialized_eq",
        )
    },
}
