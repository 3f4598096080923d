"""A numpy interpreter over jaxlib's MLIR IR for StableHLO and MHLO modules.

Ops are dispatched by name from one table that holds both dialects' spellings (`stablehlo.add` and
`mhlo.add` share a handler: their attribute names agree). Values are numpy arrays in a storage dtype
per element type (sub-byte integers live in int8/uint8 and are wrapped after every op); tuples are
Python tuples. chlo ops are first expanded by jaxlib's own `chlo-legalize-to-stablehlo`, so their
semantics are upstream's. Every result's buffer, and every kernel's planned peak, is checked
against the memory limit before anything is allocated; going over is an error at the op.

Regions of `while`, `case`, `if` and `sort` may use values of the enclosing blocks (StableHLO does
not isolate them), so blocks run in a chain of scopes. Each block is read from the IR once, and
a value is dropped after its last use, so a function holds only its live values.
"""

from __future__ import annotations

import math
import re
from collections import ChainMap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo, stablehlo

from convcanon.diagnostics import MAX_CALL_DEPTH, ConvcanonError, SourceLoc
from convcanon.hlo.context import source_loc
from convcanon.reference import kernels

DEFAULT_MEMORY_LIMIT = 4 << 30
DEFAULT_MAX_LOOP_ITERATIONS = 100_000

# -- element types -------------------------------------------------------------------------------

_DTYPES: dict[str, Any] = {
    "i1": np.bool_,
    "i2": np.int8,
    "i4": np.int8,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui2": np.uint8,
    "ui4": np.uint8,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "f32": np.float32,
    "f64": np.float64,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "f8E4M3B11FNUZ": ml_dtypes.float8_e4m3b11fnuz,
    "complex<f32>": np.complex64,
    "complex<f64>": np.complex128,
}
_NARROW = {"i2": (2, True), "i4": (4, True), "ui2": (2, False), "ui4": (4, False)}


@dataclass(frozen=True)
class TensorType:
    """Shape and element type of a ranked tensor, with the numpy dtype that stores it."""

    shape: tuple[int, ...]
    element: str

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_DTYPES[self.element])

    @property
    def nbytes(self) -> int:
        if self.element == TUPLE:
            return 0
        return math.prod(self.shape) * self.dtype.itemsize


def element_name(t: ir.Type) -> str:
    return str(t)


TUPLE = "tuple"  # the element name of a tuple value's `TensorType` (no storage dtype)


def tensor_type(t: ir.Type, loc: SourceLoc | None = None) -> TensorType:
    """The `TensorType` of an MLIR type (scalars are rank-0 tensors); unsupported types error."""
    if isinstance(t, ir.TupleType):
        return TensorType((), TUPLE)
    if isinstance(t, ir.RankedTensorType):
        ranked = ir.RankedTensorType(t)
        if not ranked.has_static_shape:
            raise ConvcanonError(f"dynamic shape {t} is not supported by the interpreter", loc)
        shape, element = tuple(ranked.shape), element_name(ranked.element_type)
    else:
        shape, element = (), element_name(t)
    if element not in _DTYPES:
        raise ConvcanonError(f"element type {element} is not supported by the interpreter", loc)
    return TensorType(shape, element)


def normalize(x: np.ndarray | Any, tt: TensorType, batched: bool = False) -> np.ndarray:
    """Cast to the storage dtype, wrap sub-byte integers, check the shape.

    `batched`: a reducer body evaluated on whole arrays of its scalar arguments at once; values
    then carry a leading batch shape and only the element type is enforced.
    """
    if tt.element == TUPLE:
        return x
    arr = np.asarray(x)
    if arr.dtype != tt.dtype:
        with np.errstate(all="ignore"):
            arr = arr.astype(tt.dtype)
    if tt.element in _NARROW:
        arr = kernels.wrap_integer(arr, *_NARROW[tt.element])
    if arr.shape != tt.shape and not batched:
        if arr.ndim:
            raise ValueError(f"computed shape {list(arr.shape)}, declared {list(tt.shape)}")
        arr = np.broadcast_to(arr, tt.shape).copy()
    return arr


# -- dense literals ------------------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)|(0x[0-9A-Fa-f]+)|(true|false)|([-+]?[0-9.]+(?:[eE][-+]?\d+)?|[-+]?inf|nan)"
)


def _scalar_token(token: str, tt: TensorType) -> Any:
    """One literal: decimal, true/false, or a hex bit pattern of a float element."""
    if token in ("true", "false"):
        return token == "true"
    if token.startswith("0x"):
        bits = int(token, 16)
        dtype = tt.dtype
        if dtype.kind in "fcV":
            base = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
            store = base if dtype.kind == "c" else dtype
            return np.array(bits, dtype=f"u{store.itemsize}").view(store)[()]
        return bits
    return float(token) if tt.dtype.kind in "fcV" or "." in token or "e" in token else int(token)


def parse_dense_text(text: str, tt: TensorType) -> np.ndarray:
    """Parse the `dense<...>` literal that MLIR prints (hex blobs, splats, nested lists)."""
    _check_literal_size(tt)
    if "dense<" not in text:  # dense_resource<...>: the bindings do not expose a blob's bytes
        kind = text.split("<", 1)[0]
        raise ValueError(
            f"{kind} constants are read only once inlined "
            "(convcanon.hlo.resources.inline_dense_resources)"
        )
    start = text.index("dense<") + len("dense<")
    body = text[start : _matching_angle(text, start - 1)]
    if body.startswith('"0x'):
        raw = bytes.fromhex(body[3:-1])
        arr = np.frombuffer(raw, dtype=tt.dtype)
        n = math.prod(tt.shape)
        return normalize(arr if arr.size == n else arr[:1].reshape(()), tt)
    values: list[Any] = []
    for m in _TOKEN_RE.finditer(body):
        if m[1] is not None:
            part = TensorType((), "f64")
            values.append(complex(_scalar_token(m[1], part), _scalar_token(m[2], part)))
        else:
            values.append(_scalar_token(m[0], tt))
    dtype = tt.dtype
    if dtype.kind in "iub":
        arr = np.array(values, dtype=object).astype(np.int64 if dtype.kind != "u" else np.uint64)
    elif dtype.kind == "c":
        arr = np.array(values, dtype=np.complex128)
    else:
        # Built in the element type itself: a hex token keeps its bits (through f64 a signalling
        # NaN is quieted and a bf16 NaN loses its payload), a decimal rounds once.
        with np.errstate(all="ignore"):
            arr = np.array(values, dtype=dtype)
    if arr.size == 1 and tt.shape != (1,) * len(tt.shape):
        arr = arr.reshape(())
    else:
        arr = arr.reshape(tt.shape)
    return normalize(arr, tt)


def _matching_angle(text: str, open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(text)):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced dense literal")


def _check_literal_size(tt: TensorType) -> None:
    """A literal is expanded only within the memory limit (a splat of 4e11 elements is 4 bytes of
    IR): the limit in force, else the default, also for callers outside the interpreter."""
    limit = kernels.current_limit() or DEFAULT_MEMORY_LIMIT
    if tt.nbytes > limit:
        raise ConvcanonError(
            f"a {tt.element} literal of shape {list(tt.shape)} needs {tt.nbytes} bytes, over the "
            f"memory limit of {limit}"
        )


def dense_value(attr: ir.Attribute, tt: TensorType) -> np.ndarray:
    """The array of a dense elements attribute: buffer protocol when numpy can, text otherwise."""
    _check_literal_size(tt)
    if isinstance(attr, ir.DenseElementsAttr) and not ir.DenseElementsAttr(attr).is_splat:
        try:
            return normalize(np.array(attr), tt)
        except (TypeError, ValueError):
            pass
    return parse_dense_text(str(attr), tt)


# -- attribute readers ---------------------------------------------------------------------------


def ints(attr: ir.Attribute | None, default: Sequence[int] = ()) -> list[int]:
    """A list of ints from `array<i64: ...>`, `array<i1: ...>` or `dense<...> : tensor<Nxi64>`."""
    if attr is None:
        return list(default)
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return [int(v) for v in ir.DenseI64ArrayAttr(attr)]
    if isinstance(attr, ir.DenseBoolArrayAttr):
        return [int(v) for v in ir.DenseBoolArrayAttr(attr)]
    if isinstance(attr, ir.IntegerAttr):
        return [ir.IntegerAttr(attr).value]
    if isinstance(attr, ir.DenseElementsAttr):
        arr = np.array(attr) if not ir.DenseElementsAttr(attr).is_splat else None
        if arr is None:
            size = math.prod(ir.ShapedType(attr.type).shape)
            text = str(attr)
            value = text[text.index("<") + 1 : text.index(">")]
            scalar = {"true": 1, "false": 0}.get(value.strip())
            return [int(value) if scalar is None else scalar] * size
        return [int(v) for v in arr.ravel()]
    raise ValueError(f"not an integer array: {attr}")


def _attr(op: ir.Operation, name: str) -> ir.Attribute | None:
    return op.attributes[name] if name in op.attributes else None


def _int_attr(op: ir.Operation, name: str, default: int) -> int:
    attr = _attr(op, name)
    return default if attr is None else ir.IntegerAttr(attr).value


def _conv_dims(attr: ir.Attribute) -> Any:
    text = str(attr)
    return (mhlo if text.startswith("#mhlo") else stablehlo).ConvDimensionNumbers(attr)


def _dot_dims(attr: ir.Attribute) -> Any:
    text = str(attr)
    return (mhlo if text.startswith("#mhlo") else stablehlo).DotDimensionNumbers(attr)


def _enum_word(attr: ir.Attribute) -> str:
    """`#stablehlo<comparison_direction LT>` -> "LT"."""
    return str(attr).rstrip(">").split()[-1]


# -- check results -------------------------------------------------------------------------------


@dataclass
class CheckResult:
    loc: SourceLoc
    op: str
    ok: bool
    detail: str = ""


@dataclass
class Env:
    """Per-run state: memory limit and the checks executed so far."""

    memory_limit: int = DEFAULT_MEMORY_LIMIT
    # A loop whose condition never turns false, or a call that recurses, must end in a
    # diagnostic, not run until killed.
    max_loop_iterations: int = DEFAULT_MAX_LOOP_ITERATIONS
    call_depth: int = 0
    checks: list[CheckResult] = field(default_factory=list)
    # Sum float reductions one element at a time, rounding each step, in the StableHLO reference
    # interpreter's order: the `check` expectations of conformance tests were produced that way.
    ordered: bool = False


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


# -- the interpreter -----------------------------------------------------------------------------

Handler = Callable[["Interpreter", ir.Operation, list[np.ndarray], list[TensorType]], list[Any]]


class Interpreter:
    """Runs functions of one parsed module."""

    def __init__(
        self, module: ir.Module, filename: str, line_offset: int = 0, env: Env | None = None
    ):
        self.module = module
        self.filename = filename
        self.line_offset = line_offset
        self.env = env or Env()
        self.functions: dict[str, ir.Operation] = {}
        if _has_chlo(module):
            from convcanon.hlo.legalize import chlo_to_stablehlo

            chlo_to_stablehlo(module)
        for op in module.body.operations:
            if op.operation.name == "func.func":
                name = ir.StringAttr(op.attributes["sym_name"]).value
                self.functions[name] = op.operation
        self._scope: ChainMap[Any, Any] = ChainMap()
        self._steps: dict[ir.Block, list[_Step]] = {}
        self.constants: dict[ir.Operation, np.ndarray] = {}

    def loc(self, op: ir.Operation) -> SourceLoc:
        return source_loc(op.location, self.filename, self.line_offset)

    def call(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        func = self.functions[name]
        block = func.regions[0].blocks[0]
        with kernels.memory_limit(self.env.memory_limit):
            return self.run_block(block, list(args))

    def run_block(
        self, block: ir.Block, args: Sequence[np.ndarray], batched: bool = False
    ) -> list[np.ndarray]:
        """Run one block on `args`; its ops may also read values of the enclosing blocks."""
        outer = self._scope
        self._scope = outer.new_child()
        try:
            return self._run_ops(block, args, batched)
        finally:
            self._scope = outer

    def _compile(self, block: ir.Block) -> list[_Step]:
        """What each op of a block needs at run time, read from the IR once (loops rerun it)."""
        steps = []
        for op in block.operations:
            op = op.operation
            name = op.name
            if name in _TERMINATORS:
                steps.append(_Step(op, name, None, list(op.operands), [], []))
                break
            handler = _handler(name)
            types = [tensor_type(r.type, self.loc(op)) for r in op.results]
            steps.append(_Step(op, name, handler, list(op.operands), list(op.results), types))
        _mark_last_uses(block, steps)
        return steps

    def _run_ops(self, block: ir.Block, args: Sequence[np.ndarray], batched: bool) -> list[Any]:
        # IEEE results on inf and nan are the ones the ops define; numpy's warnings about them
        # (with a line of our source) are noise on stderr
        with np.errstate(all="ignore"):
            return self._run_steps(block, args, batched)

    def _run_steps(self, block: ir.Block, args: Sequence[np.ndarray], batched: bool) -> list[Any]:
        values = self._scope
        for arg, value in zip(block.arguments, args, strict=True):
            values[arg] = value
        steps = self._steps.get(block)
        if steps is None:
            steps = self._steps[block] = self._compile(block)
        limit = self.env.memory_limit
        for step in steps:
            op, name, handler, result_types = step.op, step.name, step.handler, step.types
            if not step.results and name in _TERMINATORS:
                return [values[v] for v in step.operands]
            operands = [values[v] for v in step.operands]
            for tt in result_types:
                if tt.nbytes > limit:
                    raise ConvcanonError(_result_over(name, tt, limit), self.loc(op))
            if handler is None:
                raise ConvcanonError(f"the interpreter does not support op '{name}'", self.loc(op))
            try:
                results = handler(self, op, operands, result_types)
                for res, value, tt in zip(step.results, results, result_types, strict=True):
                    values[res] = normalize(value, tt, batched)
                for dead in step.dead:  # their last use: the memory goes back now
                    del values.maps[0][dead]
            except ConvcanonError:
                raise
            except MemoryError as err:  # a kernel's plan over the limit, or the machine's
                raise ConvcanonError(f"out of memory: {name}: {err}", self.loc(op)) from None
            except (ValueError, IndexError, KeyError, TypeError, ArithmeticError) as err:
                raise ConvcanonError(f"cannot interpret '{name}': {err}", self.loc(op)) from None
        return []

    def region_fn(self, region: ir.Region) -> Callable[..., np.ndarray]:
        """A reducer body as a numpy function on whole arrays (a single op is mapped directly)."""
        block = region.blocks[0]
        kind = _single_op(region)
        if kind in _BINARY:
            fn = _BINARY[kind]
            return lambda a, b: fn(a, b)

        def body(*arrays: np.ndarray) -> np.ndarray:
            return self.run_block(block, list(arrays), batched=True)[0]

        return body

    def region_fn_multi(self, region: ir.Region) -> Callable[..., list[np.ndarray]]:
        block = region.blocks[0]
        return lambda *arrays: self.run_block(block, list(arrays), batched=True)

    def run_region(self, region: ir.Region, args: Sequence[Any]) -> list[Any]:
        """Run a control-flow region once (not batched: its values have their declared shapes)."""
        return self.run_block(region.blocks[0], list(args))


def _has_chlo(module: ir.Module) -> bool:
    found = False

    def visit(op: Any) -> Any:
        nonlocal found
        if op.name.startswith("chlo."):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _single_op(region: ir.Region) -> str | None:
    """The op's name (no dialect) if a region is exactly `return op(arg0, arg1)` (fast paths)."""
    block = region.blocks[0]
    ops = [op.operation for op in block.operations]
    args = list(block.arguments)
    if len(ops) != 2 or len(args) != 2 or list(ops[0].operands) != args:
        return None
    if list(ops[1].operands) != [ops[0].results[0]]:
        return None
    return ops[0].name.split(".", 1)[-1]


@dataclass(frozen=True)
class _Step:
    """One op of a compiled block: its handler, operand and result values, result types."""

    op: ir.Operation
    name: str
    handler: Handler | None
    operands: list[ir.Value]
    results: list[ir.Value]
    types: list[TensorType]
    dead: list[ir.Value] = field(default_factory=list)  # values of the block last used here


def _mark_last_uses(block: ir.Block, steps: list[_Step]) -> None:
    """Give each step the block's values (arguments, results) that no later op reads, so a long
    function holds only its live values (as XLA does), not every intermediate it ever made.

    A use inside a nested region counts at the op that holds the region; a value used outside
    this block, or by an op not found, is kept.
    """
    index = {step.op: k for k, step in enumerate(steps)}
    defined = [(v, -1) for v in block.arguments]
    defined += [(r, k) for k, step in enumerate(steps) for r in step.results]
    for value, born in defined:
        last = born
        for use in value.uses:
            owner: Any = use.owner.operation
            while owner is not None and owner not in index:
                owner = owner.parent
            if owner is None:
                last = len(steps)
                break
            last = max(last, index[owner])
        if 0 <= last < len(steps) and steps[last].name not in _TERMINATORS:
            steps[last].dead.append(value)


_HLO = {"stablehlo", "mhlo"}
_TERMINATORS = {"func.return", "stablehlo.return", "mhlo.return", "return"}


# -- elementwise ---------------------------------------------------------------------------------


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C-style division truncating toward zero (numpy floors)."""
    if a.dtype.kind == "b":
        return a
    if a.dtype.kind not in "iu":
        return np.divide(a, b)
    safe = np.where(b == 0, 1, b)
    q = np.floor_divide(a, safe)
    fix = (np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0))
    q = q + fix.astype(q.dtype)
    return np.where(b == 0, np.array(-1).astype(a.dtype), q)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        safe = np.where(b == 0, 1, b)
        return np.where(b == 0, a, np.fmod(a, safe))
    return np.fmod(a, b)


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_or(a, b) if a.dtype == np.bool_ else np.add(a, b)


def _multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_and(a, b) if a.dtype == np.bool_ else np.multiply(a, b)


def _subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_xor(a, b) if a.dtype == np.bool_ else np.subtract(a, b)


def _shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    return np.where((b < 0) | (b >= bits), 0, np.left_shift(a, np.clip(b, 0, bits - 1)))


def _shift_right_logical(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    unsigned = a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "i" else a
    shifted = np.right_shift(unsigned, np.clip(b, 0, bits - 1).astype(unsigned.dtype))
    shifted = np.where((b < 0) | (b >= bits), 0, shifted).astype(unsigned.dtype)
    return shifted.view(a.dtype) if a.dtype.kind == "i" else shifted


def _shift_right_arithmetic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sign fill from the top bit, also for unsigned types (as XLA does)."""
    bits = a.dtype.itemsize * 8
    signed = np.dtype(f"i{a.dtype.itemsize}")
    amount = np.where((b < 0) | (b >= bits), bits - 1, b)  # out of range: sign fill
    shifted = np.right_shift(np.asarray(a, order="C").view(signed), amount.astype(signed))
    return shifted.view(a.dtype)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        negative = b < 0
        result = np.power(a, np.where(negative, 0, b))
        one_like = np.where(np.abs(a.astype(np.int64)) == 1, a**0 * np.where(b % 2 == 0, 1, a), 0)
        return np.where(negative, one_like, result)
    return np.power(a, b)


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": _add,
    "subtract": _subtract,
    "multiply": _multiply,
    "divide": _int_divide,
    "remainder": _remainder,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": lambda a, b: np.logical_and(a, b) if a.dtype == np.bool_ else np.bitwise_and(a, b),
    "or": lambda a, b: np.logical_or(a, b) if a.dtype == np.bool_ else np.bitwise_or(a, b),
    "xor": lambda a, b: np.logical_xor(a, b) if a.dtype == np.bool_ else np.bitwise_xor(a, b),
    "power": _power,
    "atan2": np.arctan2,
    "shift_left": _shift_left,
    "shift_right_logical": _shift_right_logical,
    "shift_right_arithmetic": _shift_right_arithmetic,
    "complex": lambda a, b: a + 1j * b.astype(np.complex128),
}


def _round_afz(x: np.ndarray) -> np.ndarray:
    """Round half away from zero; `floor(|x| + 0.5)` would round 0.49999997 up in f32."""
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole)


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _popcnt(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x.view(f"u{x.dtype.itemsize}"))


def _clz(x: np.ndarray) -> np.ndarray:
    """Leading zeros by binary search on the bits (float log2 is wrong above 2^53)."""
    bits = x.dtype.itemsize * 8
    u = np.asarray(x, order="C").view(f"u{x.dtype.itemsize}").astype(np.uint64)
    zeros = np.zeros(u.shape, np.int64)
    width = bits
    while width > 1:
        width //= 2
        high = u >> np.uint64(bits - width)
        empty = high == 0
        zeros += np.where(empty, width, 0)
        u = np.where(empty, u << np.uint64(width), u) & np.uint64((1 << bits) - 1)
    zeros += (u >> np.uint64(bits - 1)) == 0
    return zeros.astype(x.dtype)


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))
    return np.sign(x)


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "negate": np.negative,
    "abs": np.abs,
    "exponential": np.exp,
    "exponential_minus_one": np.expm1,
    "log": np.log,
    "log_plus_one": np.log1p,
    "logistic": _logistic,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "tanh": np.tanh,
    "sine": np.sin,
    "cosine": np.cos,
    "tan": np.tan,
    "floor": np.floor,
    "ceil": np.ceil,
    "round_nearest_afz": _round_afz,
    "round_nearest_even": np.rint,
    "sign": _sign,
    "not": _not,
    "popcnt": _popcnt,
    "count_leading_zeros": _clz,
    "is_finite": np.isfinite,
    "real": np.real,
    "imag": np.imag,
}


def _compute_dtype(x: np.ndarray) -> np.ndarray:
    """bf16/f8 compute in float32 (ml_dtypes ufunc coverage is partial); the result rounds back."""
    if x.dtype.kind == "V" or (x.dtype.kind == "f" and x.dtype.itemsize == 1):
        return x.astype(np.float32)
    if x.dtype.name in ("bfloat16",) or x.dtype.type.__module__.startswith("ml_dtypes"):
        return x.astype(np.float32)
    return x


def _plan_elementwise(
    name: str, args: Sequence[np.ndarray], temporaries: int = 2, width: int = 4
) -> None:
    """An elementwise op's peak: operands widened for computing (bf16/f8 in f32), then up to
    `temporaries` full-size values as wide as the widest operand (at least `width` bytes)."""
    size = max((a.size for a in args), default=1)
    widened = sum(a.size * 4 for a in args if a.dtype.kind == "V" or a.dtype.itemsize < 2)
    width = max([width, *(a.dtype.itemsize for a in args)])
    kernels.plan(name, widened + temporaries * size * width)


# handler -> its `_plan_elementwise` (temporaries, width): a plan read from types alone, so
# `check_planned_peaks` can refuse a module before its inputs are made
_TYPE_PLANS: dict[Handler, tuple[int, int]] = {}


def _unary_handler(fn: Callable[[np.ndarray], np.ndarray]) -> Handler:
    def handle(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
        _plan_elementwise(op.name, args)
        with np.errstate(all="ignore"):
            return [fn(_compute_dtype(args[0]))]

    _TYPE_PLANS[handle] = (2, 4)
    return handle


def _binary_handler(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Handler:
    def handle(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
        _plan_elementwise(op.name, args, temporaries=3)
        with np.errstate(all="ignore"):
            return [fn(_compute_dtype(args[0]), _compute_dtype(args[1]))]

    _TYPE_PLANS[handle] = (3, 4)
    return handle


_COMPARE = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered like IEEE totalOrder: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN."""
    x = np.asarray(x, order="C")
    signed = x.view(f"i{x.dtype.itemsize}").astype(np.int64)
    magnitude = signed & np.int64((1 << (8 * x.dtype.itemsize - 1)) - 1)
    return np.where(signed < 0, -magnitude - 1, magnitude)


def _compare(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    direction = _enum_word(op.attributes["comparison_direction"])
    kind = _enum_word(op.attributes["compare_type"]) if "compare_type" in op.attributes else ""
    _plan_elementwise(op.name, args, temporaries=3)
    a, b = args
    if kind == "TOTALORDER" and a.dtype.kind in "fV":
        a, b = _total_order_key(a), _total_order_key(b)
    elif kind == "UNSIGNED" and a.dtype.kind == "i":
        a, b = (np.asarray(v, order="C").view(f"u{v.dtype.itemsize}") for v in (a, b))
    elif a.dtype.kind == "c" and direction not in ("EQ", "NE"):
        a, b = np.real(a), np.real(b)
    with np.errstate(all="ignore"):
        return [_COMPARE[direction](_compute_dtype(a), _compute_dtype(b))]


def _select(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [np.where(args[0], args[1], args[2])]


def _clamp(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    lo, x, hi = args
    return [np.minimum(np.maximum(x, lo), hi)]


def _convert(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    x = args[0]
    target = rt[0].dtype
    _plan_elementwise(op.name, [x], temporaries=4, width=8)  # float -> int goes through f64
    if x.dtype.kind == "c" and target.kind != "c":
        x = np.real(x)
    if x.dtype.kind in "fV" and target.kind in "iu":
        info = np.iinfo(target)
        with np.errstate(all="ignore"):
            wide = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
            return [np.clip(wide, info.min, info.max).astype(target)]
    if target == np.bool_:
        return [x != 0]
    with np.errstate(all="ignore"):  # a float too big for the narrower type becomes inf
        return [x.astype(target)]


def _bitcast_convert(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    flat = np.asarray(args[0], order="C").reshape(-1)  # a view to another width needs 1-d
    return [flat.view(rt[0].dtype).reshape(rt[0].shape)]


# -- structural ops ------------------------------------------------------------------------------


def _value_attr(op: ir.Operation, tt: TensorType) -> np.ndarray:
    """The array of an op's `value` attribute."""
    try:
        attr = op.attributes["value"]
    except TypeError:  # complex and other element types the bindings cannot downcast
        return parse_dense_text(str(op), tt)
    return dense_value(attr, tt)


def _constant(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    """Read once per interpreter: a loop body's constants are not re-parsed every iteration
    (values are never written in place, so sharing the array is safe)."""
    value = it.constants.get(op)
    if value is None:
        value = it.constants[op] = _value_attr(op, rt[0])
    return [value]


_IOTA_CHUNK = 1 << 16  # indices made in int64 at a time, then cast into the result's row


def _iota(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    """One row of the result's type, made a chunk at a time (an int64 `arange` of the whole row
    would be 8 bytes an element outside the plan), broadcast to the result's shape."""
    dim = _int_attr(op, "iota_dimension", 0)
    tt = rt[0]
    shape = tt.shape
    length = shape[dim]
    chunk = min(length, _IOTA_CHUNK)
    kernels.plan(op.name, length * tt.dtype.itemsize, 3 * chunk * 8)
    row = np.empty(length, tt.dtype)
    for start in range(0, length, _IOTA_CHUNK):
        indices = np.arange(start, min(length, start + _IOTA_CHUNK))
        if tt.element in _NARROW:
            indices = kernels.wrap_integer(indices, *_NARROW[tt.element])
        with np.errstate(all="ignore"):
            row[start : start + len(indices)] = indices.astype(tt.dtype)
    view = [1] * len(shape)
    view[dim] = length
    return [np.broadcast_to(row.reshape(view), shape)]


def _reshape(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [args[0].reshape(rt[0].shape)]


def _transpose(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [kernels.transpose(args[0], ints(op.attributes["permutation"]))]


def _broadcast_in_dim(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    dims = ints(op.attributes["broadcast_dimensions"])
    return [kernels.broadcast_in_dim(args[0], rt[0].shape, dims)]


def _broadcast(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [np.broadcast_to(args[0], rt[0].shape)]


def _pad(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    low = ints(op.attributes["edge_padding_low"])
    high = ints(op.attributes["edge_padding_high"])
    interior = ints(op.attributes["interior_padding"])
    return [kernels.pad(args[0], args[1], low, high, interior)]


def _slice(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    start = ints(op.attributes["start_indices"])
    limit = ints(op.attributes["limit_indices"])
    strides = ints(_attr(op, "strides"), [1] * len(start))
    return [kernels.slice_(args[0], start, limit, strides)]


def _concatenate(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    return [np.concatenate(args, axis=_int_attr(op, "dimension", 0))]


def _reverse(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [np.flip(args[0], tuple(ints(op.attributes["dimensions"])))]


def _composite(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    """`stablehlo.composite` means its decomposition function."""
    callee = ir.FlatSymbolRefAttr(op.attributes["decomposition"]).value
    if callee not in it.functions:
        raise ConvcanonError(f"composite's decomposition @{callee} is not defined", it.loc(op))
    return it.call(callee, args)


def _get_dimension_size(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    return [np.int32(args[0].shape[_int_attr(op, "dimension", 0)])]


def _call(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    if callee not in it.functions:
        raise ConvcanonError(f"call to unknown function @{callee}", it.loc(op))
    if not it.functions[callee].regions[0].blocks:
        raise ConvcanonError(f"call to @{callee}, a declaration without a body", it.loc(op))
    if it.env.call_depth >= MAX_CALL_DEPTH:
        raise ConvcanonError(
            f"calls nest deeper than {MAX_CALL_DEPTH} at @{callee} (recursion?)", it.loc(op)
        )
    it.env.call_depth += 1
    try:
        return it.call(callee, args)
    finally:
        it.env.call_depth -= 1


def _dot_general(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    dims = _dot_dims(op.attributes["dot_dimension_numbers"])
    return [
        kernels.dot_general(
            _compute_dtype(args[0]),
            _compute_dtype(args[1]),
            lhs_batch=list(dims.lhs_batching_dimensions),
            rhs_batch=list(dims.rhs_batching_dimensions),
            lhs_contracting=list(dims.lhs_contracting_dimensions),
            rhs_contracting=list(dims.rhs_contracting_dimensions),
            preferred_dtype=rt[0].dtype,
            ordered=it.env.ordered,
        )
    ]


def _dot(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    lhs, rhs = (_compute_dtype(a) for a in args)
    return [
        kernels.dot_general(
            lhs,
            rhs,
            lhs_batch=[],
            rhs_batch=[],
            lhs_contracting=[lhs.ndim - 1],
            rhs_contracting=[0],
            preferred_dtype=rt[0].dtype,
            ordered=it.env.ordered,
        )
    ]


def _conv_impl(
    it: Interpreter,
    op: ir.Operation,
    lhs: np.ndarray,
    rhs: np.ndarray,
    padding_rows: list[int],
    rt: TensorType,
) -> np.ndarray:
    if not math.prod(rt.shape):  # as XLA: no window fits (padding cropping past the input, a
        return np.zeros(rt.shape, rt.dtype)  # dilated window wider than int64), nothing to do
    dims = _conv_dims(op.attributes["dimension_numbers"])
    nsp = len(dims.input_spatial_dimensions)
    padding = [(padding_rows[2 * i], padding_rows[2 * i + 1]) for i in range(nsp)]
    strides = ints(_attr(op, "window_strides"), [1] * nsp)
    lhs_dil = ints(_attr(op, "lhs_dilation"), [1] * nsp)
    rhs_dil = ints(_attr(op, "rhs_dilation"), [1] * nsp)
    reversal = [bool(v) for v in ints(_attr(op, "window_reversal"), [0] * nsp)]
    fgc = _int_attr(op, "feature_group_count", 1)
    bgc = _int_attr(op, "batch_group_count", 1)
    lhs_spec = (
        dims.input_batch_dimension,
        dims.input_feature_dimension,
        tuple(dims.input_spatial_dimensions),
    )
    return kernels.conv_general(
        _compute_dtype(lhs),
        _compute_dtype(rhs),
        window_strides=strides,
        padding=padding,
        lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil,
        window_reversal=reversal,
        lhs_spec=lhs_spec,
        rhs_spec=(
            dims.kernel_input_feature_dimension,
            dims.kernel_output_feature_dimension,
            tuple(dims.kernel_spatial_dimensions),
        ),
        out_spec=(
            dims.output_batch_dimension,
            dims.output_feature_dimension,
            tuple(dims.output_spatial_dimensions),
        ),
        feature_group_count=fgc,
        batch_group_count=bgc,
        preferred_dtype=rt.dtype,
        ordered=it.env.ordered,
    )


def _convolution(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    padding = ints(_attr(op, "padding"), [])
    nsp = len(rt[0].shape) - 2
    return [_conv_impl(it, op, args[0], args[1], padding or [0] * (2 * nsp), rt[0])]


def _dynamic_conv(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    spatial = len(_conv_dims(op.attributes["dimension_numbers"]).input_spatial_dimensions)
    amounts = np.asarray(args[2])
    integer = amounts.dtype.name.startswith(("int", "uint"))  # ml_dtypes' int4 too, not bool
    if amounts.shape != (spatial, 2) or not integer:  # MHLO's verifier does not check them
        shape = f"{amounts.dtype}{list(amounts.shape)}"
        raise ValueError(f"padding {shape}, expected integers of shape [{spatial}, 2]")
    padding = [int(v) for v in amounts.ravel()]
    return [_conv_impl(it, op, args[0], args[1], padding, rt[0])]


def _reduce(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    half = len(args) // 2
    dims = ints(op.attributes["dimensions"])
    if half != 1:
        return _reduce_variadic(it, op, args, dims)
    body = it.region_fn(op.regions[0])
    x, init = args
    return [kernels.reduce(x, init, dims, body, it.env.ordered)]


def _reduce_variadic(it: Interpreter, op: ir.Operation, args: list[np.ndarray], dims):
    """Variadic reduce (argmax-style): sequential over the reduced elements, whole arrays each."""
    half = len(args) // 2
    xs, inits = args[:half], args[half:]
    keep = [d for d in range(xs[0].ndim) if d not in dims]
    flats = [np.transpose(x, [*keep, *dims]).reshape(*(x.shape[d] for d in keep), -1) for x in xs]
    accs = [np.broadcast_to(i, flats[0].shape[:-1]).copy() for i in inits]
    body = it.region_fn_multi(op.regions[0])
    for k in range(flats[0].shape[-1]):
        accs = body(*accs, *(f[..., k] for f in flats))
    return accs


def _reduce_window(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    half = len(args) // 2
    rank = args[0].ndim
    padding = ints(_attr(op, "padding"), [0] * (2 * rank))
    return kernels.reduce_window_variadic(
        args[:half],
        args[half:],
        window_dimensions=ints(op.attributes["window_dimensions"]),
        window_strides=ints(_attr(op, "window_strides"), [1] * rank),
        base_dilations=ints(_attr(op, "base_dilations"), [1] * rank),
        window_dilations=ints(_attr(op, "window_dilations"), [1] * rank),
        padding=[(padding[2 * i], padding[2 * i + 1]) for i in range(rank)],
        body=_combiner(it, op.regions[0], rt),
    )


# -- checks --------------------------------------------------------------------------------------


def _check(
    it: Interpreter, op: ir.Operation, kind: str, actual: np.ndarray, expected: np.ndarray
) -> None:
    if kind in ("expect_eq", "expect_eq_const"):
        mask = _equal_mask(actual, expected)
    elif kind in ("expect_almost_eq", "expect_almost_eq_const"):
        tolerance = 1e-3 if op.name.endswith("custom_call") else 1e-4
        if "tolerance" in op.attributes:
            tolerance = ir.FloatAttr(op.attributes["tolerance"]).value
        mask = _almost_mask(actual, expected, tolerance)
    elif kind == "expect_close":
        lo = _int_attr(op, "min_ulp_difference", 0)
        hi = _int_attr(op, "max_ulp_difference", 3)
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


def _check_op(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    kind = op.name.split(".", 1)[1]
    actual = args[0]
    if kind.endswith("_const"):
        expected = _value_attr(op, tensor_type(op.operands[0].type))
    else:
        expected = args[1]
    _check(it, op, kind, actual, expected)
    return []


_PASS_THROUGH_CALLS = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"}


def _custom_call(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    target = ir.StringAttr(op.attributes["call_target_name"]).value
    if target in _PASS_THROUGH_CALLS and len(args) == len(rt):
        return list(args)
    if not target.startswith("check."):
        raise ConvcanonError(f"the interpreter does not support custom_call @{target}", it.loc(op))
    kind = target.split(".", 1)[1]
    if kind.endswith("_const"):
        expected = _value_attr(op, tensor_type(op.operands[0].type))
    else:
        expected = args[1]
    _check(it, op, kind, args[0], expected)
    return [a for a in args[: len(rt)]]


def _tuple(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    return [tuple(args)]


def _get_tuple_element(it: Interpreter, op: ir.Operation, args: list[Any], rt):
    return [args[0][_int_attr(op, "index", 0)]]


def _identity(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    """optimization_barrier and single-device sharding annotations: values pass through."""
    return list(args)


# -- indexing ------------------------------------------------------------------------------------


def _dims_attr(op: ir.Operation, name: str, kind: str) -> Any:
    """Gather/scatter dimension numbers in either dialect's attribute."""
    attr = op.attributes[name]
    dialect = mhlo if str(attr).startswith("#mhlo") else stablehlo
    return getattr(dialect, kind)(attr)


def _gather(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    dims = _dims_attr(op, "dimension_numbers", "GatherDimensionNumbers")
    return [
        kernels.gather(
            args[0],
            args[1],
            offset_dims=list(dims.offset_dims),
            collapsed_slice_dims=list(dims.collapsed_slice_dims),
            operand_batching_dims=list(dims.operand_batching_dims),
            start_indices_batching_dims=list(dims.start_indices_batching_dims),
            start_index_map=list(dims.start_index_map),
            index_vector_dim=dims.index_vector_dim,
            slice_sizes=ints(op.attributes["slice_sizes"]),
        )
    ]


def _scatter(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    dims = _dims_attr(op, "scatter_dimension_numbers", "ScatterDimensionNumbers")
    count = (len(args) - 1) // 2
    region = op.regions[0]
    return kernels.scatter(
        args[:count],
        args[count],
        args[count + 1 :],
        update_window_dims=list(dims.update_window_dims),
        inserted_window_dims=list(dims.inserted_window_dims),
        input_batching_dims=list(dims.input_batching_dims),
        scatter_indices_batching_dims=list(dims.scatter_indices_batching_dims),
        scatter_dims_to_operand_dims=list(dims.scattered_dims_to_operand_dims),
        index_vector_dim=dims.index_vector_dim,
        combine=_combiner(it, region, rt[:count]),
        add=_single_op(region) == "add",
    )


def _combiner(it: Interpreter, region: ir.Region, types: Sequence[TensorType]) -> Any:
    """An update computation on whole arrays, its results rounded to the operands' types
    (a region that is one binary op runs as that numpy function, without the block walk)."""
    body = it.region_fn_multi(region)
    kind = _single_op(region)
    if len(types) == 1 and kind in _BINARY:
        binary = _BINARY[kind]
        body = lambda a, b: [binary(a, b)]  # noqa: E731

    def combine(*arrays: np.ndarray) -> list[np.ndarray]:
        return [
            normalize(v, TensorType((), t.element), batched=True)
            for v, t in zip(body(*arrays), types, strict=True)
        ]

    return combine


def _select_and_scatter(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    operand, source, init = args
    rank = operand.ndim
    padding = ints(_attr(op, "padding"), [0] * (2 * rank))
    select = it.region_fn_multi(op.regions[0])
    return [
        kernels.select_and_scatter(
            operand,
            source,
            init,
            window_dimensions=ints(_attr(op, "window_dimensions"), [1] * rank),
            window_strides=ints(_attr(op, "window_strides"), [1] * rank),
            padding=[(padding[2 * i], padding[2 * i + 1]) for i in range(rank)],
            select=lambda a, b: select(a, b)[0],
            combine=_combiner(it, op.regions[1], rt),
            add=_single_op(op.regions[1]) == "add",
        )
    ]


def _dynamic_slice(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    starts = _start_indices(args[1:])
    return [kernels.dynamic_slice(args[0], starts, ints(op.attributes["slice_sizes"]))]


def _dynamic_update_slice(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    return [kernels.dynamic_update_slice(args[0], args[1], _start_indices(args[2:]))]


def _start_indices(args: Sequence[np.ndarray]) -> list[int]:
    """Scalar start operands (MHLO's older form passes one 1-D tensor)."""
    return [int(v) for a in args for v in np.asarray(a).ravel()]


def _sort(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    dimension = _int_attr(op, "dimension", -1)
    if dimension < 0:
        dimension += args[0].ndim
    less = it.region_fn_multi(op.regions[0])
    return kernels.sort(args, dimension, lambda *pairs: less(*pairs)[0])


def _reduce_precision(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    x = args[0]
    wide = _compute_dtype(x)
    exponent = _int_attr(op, "exponent_bits", 8)
    mantissa = _int_attr(op, "mantissa_bits", 23)
    return [kernels.reduce_precision(wide, exponent, mantissa)]


# -- control flow --------------------------------------------------------------------------------


def _while(it: Interpreter, op: ir.Operation, args: list[Any], rt):
    cond, body = op.regions
    values = list(args)
    limit = it.env.max_loop_iterations
    for _ in range(limit):
        if not bool(np.asarray(it.run_region(cond, values)[0])):
            return values
        values = it.run_region(body, values)
    if not bool(np.asarray(it.run_region(cond, values)[0])):
        return values
    raise ConvcanonError(
        f"stablehlo.while ran {limit} iterations and its condition still holds "
        f"(the limit; `convcanon run --max-loop-iterations N` sets it)",
        it.loc(op),
    )


def _case(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    """An index out of range runs the last branch."""
    branches = list(op.regions)
    index = int(np.asarray(args[0]))
    if not 0 <= index < len(branches):
        index = len(branches) - 1
    return it.run_region(branches[index], [])


def _if(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    taken = op.regions[0] if bool(np.asarray(args[0])) else op.regions[1]
    return it.run_region(taken, [])


def _map(it: Interpreter, op: ir.Operation, args: list[np.ndarray], rt):
    return it.region_fn_multi(op.regions[0])(*args)


_TYPE_PLANS[_compare] = (3, 4)
_TYPE_PLANS[_convert] = (4, 8)


def _result_over(name: str, tt: TensorType, limit: int) -> str:
    return (
        f"{name} result {tt.element} tensor of shape {list(tt.shape)} needs {tt.nbytes} bytes, "
        f"over the memory limit of {limit}"
    )


def _handler(name: str) -> Handler | None:
    handler = OPS.get(name.split(".", 1)[-1]) if name.split(".")[0] in _HLO else None
    return handler or OPS.get(name)


def check_planned_peaks(
    module: ir.Module, filename: str, limit: int = DEFAULT_MEMORY_LIMIT, elementwise: bool = True
) -> None:
    """Refuse, before any input is made, a module the interpreter would refuse at an op: a result
    over `limit`, or (`elementwise`) an elementwise op whose plan (read from its types) is. Both
    are lower bounds of what the run checks, so nothing it would run is refused; a caller about
    to allocate inputs (verify's random ones, their f64 copies) learns it without allocating
    them. Results alone bound what another engine is handed: XLA aborts the process on a shape
    whose size overflows int64, and allocates whatever a module asks."""
    found: list[tuple[ir.Operation, str]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        types = [r.type for r in op.results] + [v.type for v in op.operands]
        if not all(
            isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape
            for t in types
        ):
            return ir.WalkResult.ADVANCE
        for result in op.results:
            tt = tensor_type(result.type)
            if tt.nbytes > limit:
                found.append((op, _result_over(op.name, tt, limit)))
                return ir.WalkResult.INTERRUPT
        params = _TYPE_PLANS.get(_handler(op.name))  # pyright: ignore[reportArgumentType]
        if elementwise and params is not None and op.operands:
            fakes = [
                np.broadcast_to(np.zeros((), tt.dtype), tt.shape)
                for tt in (tensor_type(v.type) for v in op.operands)
            ]
            try:
                with kernels.memory_limit(limit):
                    _plan_elementwise(op.name, fakes, *params)
            except kernels.OverBudget as err:
                found.append((op, f"out of memory: {op.name}: {err}"))
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if found:
        op, message = found[0]
        raise ConvcanonError(message, source_loc(op.location, filename))


OPS: dict[str, Handler] = {
    **{name: _unary_handler(fn) for name, fn in _UNARY.items()},
    **{name: _binary_handler(fn) for name, fn in _BINARY.items()},
    "compare": _compare,
    "select": _select,
    "clamp": _clamp,
    "convert": _convert,
    "bitcast_convert": _bitcast_convert,
    "constant": _constant,
    "arith.constant": _constant,  # torch-mlir writes BatchNorm's eps as one
    "iota": _iota,
    "reshape": _reshape,
    "transpose": _transpose,
    "broadcast_in_dim": _broadcast_in_dim,
    "broadcast": _broadcast,
    "pad": _pad,
    "slice": _slice,
    "concatenate": _concatenate,
    "reverse": _reverse,
    "dot_general": _dot_general,
    "dot": _dot,
    "convolution": _convolution,
    "dynamic_conv": _dynamic_conv,
    "reduce": _reduce,
    "reduce_window": _reduce_window,
    "custom_call": _custom_call,
    "tuple": _tuple,
    "get_tuple_element": _get_tuple_element,
    "optimization_barrier": _identity,
    "gather": _gather,
    "scatter": _scatter,
    "select_and_scatter": _select_and_scatter,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "sort": _sort,
    "reduce_precision": _reduce_precision,
    "while": _while,
    "case": _case,
    "if": _if,
    "map": _map,
    "composite": _composite,
    "get_dimension_size": _get_dimension_size,
    "func.call": _call,
    "call": _call,
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
