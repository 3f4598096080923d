"""Runs migraphx and TOSA modules on numpy values, with flat strided buffers at the boundary.

Inside a function every `!migraphx.shaped` value is its *logical* numpy array (strides only
matter in memory); a function's shaped arguments arrive as flat buffers and are read through
their layout, its shaped results are written back into flat buffers. Each op runs the kernel
`op_table` gives for its class, once its result (and a conv's im2col chunk) fits the memory
limit; `op_table` joins the kernel families (`migraphx_kernels`, `tosa_interp`,
`migraphx_quant_interp`), which do not import each other.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from convcanon.diagnostics import MAX_CALL_DEPTH, ConvcanonError, SourceLoc
from convcanon.migraphx import layout
from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.declared_strides import reconcile_strides
from convcanon.migraphx.shaped_type import ShapedType
from convcanon.reference.kernels import budget, element_steps
from convcanon.reference.kernels.contraction import im2col_chunk_bytes
from convcanon.reference.migraphx_kernels import NIBBLE_BOUNDS, OP_TABLE, KernelTable, type_dtype

_loaded_table: KernelTable | None = None


def op_table() -> KernelTable:
    """Every kernel the interpreter knows: OP_TABLE, TOSA's and the quantization family's (built
    once). The kernel modules do not import each other; this is the one place they meet."""
    global _loaded_table
    if _loaded_table is None:
        from convcanon.reference import migraphx_quant_interp as quant
        from convcanon.reference import tosa_interp

        _loaded_table = {
            **OP_TABLE,
            **tosa_interp.TOSA_KERNELS,
            **quant.QUANT_KERNELS,
            **quant.TOSA_QUANT_KERNELS,
        }
    return _loaded_table


# -- functions and the flat boundary -------------------------------------------------------------


def boundary_in(value: np.ndarray, ty: Attribute) -> np.ndarray:
    """A flat argument buffer -> the value the function body sees."""
    if isinstance(ty, ShapedType):
        return layout.read_buffer(value.astype(ty.dtype()), ty.lens, ty.stride_values)
    return value


def boundary_out(value: np.ndarray, ty: Attribute) -> np.ndarray:
    """A returned value -> the flat buffer the caller gets."""
    if isinstance(ty, ShapedType):
        return layout.write_buffer(value, ty.lens, ty.stride_values)
    return value


def flat_input_shape(ty: Attribute) -> tuple[int, ...]:
    if isinstance(ty, ShapedType):
        return (ty.flat_size(),)
    if isinstance(ty, TensorType):
        return tuple(ty.get_shape())
    raise TypeError(f"unsupported argument type {ty}")


@dataclass(frozen=True)
class FlatArg:
    """One flat argument buffer: its numpy shape and dtype (`element` names the dtype)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    element: str

    @property
    def declared_dtype(self) -> np.dtype:
        """As HLO's `TensorType.declared_dtype`: a flat buffer is held in its own type."""
        return self.dtype


def flat_args(function: func.FuncOp) -> list[FlatArg]:
    """A storage buffer (`types=conformant`) counts as the values it stores: the engines pack
    and unpack it, so it takes the same inputs as the migraphx argument it lowers."""
    from convcanon.tosa.storage import boundary_storage, value_dtype

    storages, _ = boundary_storage(function)
    args = []
    for index, ty in enumerate(function.function_type.inputs.data):
        kind = storages[index] if index < len(storages) else None
        if kind is not None:
            dtype = value_dtype(kind[0])
            args.append(FlatArg((kind[1],), dtype, dtype.name))
        else:
            args.append(FlatArg(flat_input_shape(ty), type_dtype(ty), type_dtype(ty).name))
    return args


DEFAULT_MEMORY_LIMIT = 4 << 30


MAX_RANK = 32
"""The most dims a value may have in a run: the kernels compute on numpy arrays, which hold at
most 64 dims, and some index or contract with up to twice a value's (past it numpy raised
IndexError or ValueError out of a kernel or the argument's layout)."""


def _rank_error(ty: Attribute) -> str | None:
    """Why a value of type `ty` cannot be run, if its rank is past MAX_RANK."""
    rank = len(_logical_shape(ty))
    if rank <= MAX_RANK:
        return None
    return f"has rank {rank}: a run holds at most {MAX_RANK} dims (its kernels are numpy's)"


def _logical_shape(ty: Attribute) -> tuple[int, ...]:
    """The shape the body's numpy array has (a shaped value's lens, not its flat buffer)."""
    if isinstance(ty, ShapedType):
        return tuple(ty.lens)
    if isinstance(ty, TensorType):
        return tuple(ty.get_shape())
    return ()


def _im2col_bytes(name: str, out: Sequence[int], x: np.ndarray, w: np.ndarray) -> int:
    """The largest im2col chunk a conv copies at once: output positions times a window of every
    input feature (f64 worst case), in chunks of kernels.contraction.IM2COL_CHUNK_BYTES (or one
    position)."""
    if len(out) < 3 or w.ndim < 3:
        return 0
    if name.startswith("migraphx."):  # NCHW..., weights OIHW...
        channels, cin, window = out[1], x.shape[1], math.prod(w.shape[2:])
    elif "depthwise" in name:  # NHWC, weights HWCM
        channels, cin, window = out[-1], x.shape[-1], math.prod(w.shape[:-2])
    else:  # TOSA NHWC / NDHWC, weights OHWI
        channels, cin, window = out[-1], x.shape[-1], math.prod(w.shape[1:-1])
    return im2col_chunk_bytes((math.prod(out) // max(1, channels),), window * cin * 8)


def dead_after(block: Block) -> dict[Operation, list[SSAValue]]:
    """The block's values (arguments, results) by the op after which no op reads them: a
    function then holds only its live values, not every intermediate it made (a chain of ops,
    each under the memory limit, held them all). A use inside an op's regions counts at that
    op; what the terminator reads is returned, so it stays."""
    ops = list(block.ops)
    if not ops:
        return {}
    last: dict[SSAValue, Operation] = dict.fromkeys(block.args, ops[0])
    for op in ops:
        for inner in op.walk():
            for value in inner.operands:
                if value in last:  # a value of this block (those of inner blocks are not)
                    last[value] = op
        last.update(dict.fromkeys(op.results, op))  # never read: dead once made
    dead: dict[Operation, list[SSAValue]] = {}
    for value, op in last.items():
        if op is not ops[-1]:
            dead.setdefault(op, []).append(value)
    return dead


class Interpreter:
    """Runs the functions of one module; errors carry `filename` and the op's line."""

    def __init__(
        self,
        module: ModuleOp,
        filename: str,
        op_lines: Mapping[Operation, int],
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
    ):
        self.module = module
        self.filename = filename
        self.op_lines = op_lines
        self.memory_limit = memory_limit
        self.meter = budget.new_meter()
        self.table = op_table()
        self.functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}

    def error(self, message: str, op: Operation | None = None) -> ConvcanonError:
        from convcanon.migraphx.io import op_location, text_line_loc

        where = op_location(op) if op is not None else None
        line = self.op_lines.get(op, 0) if op is not None else 0
        return ConvcanonError(message, where or text_line_loc(self.filename, line))

    def call(
        self, name: str, args: Sequence[np.ndarray], caller: Operation | None = None, depth: int = 0
    ) -> list[np.ndarray]:
        """Evaluate @name on body-level values (logical arrays for shaped arguments)."""
        # IEEE results on inf and nan are the ones the ops define; numpy's warnings about them
        # (with a line of our source) are noise on stderr
        with np.errstate(all="ignore"), budget.metered(self.meter):
            return self._call(name, args, caller, depth)

    def _call(
        self, name: str, args: Sequence[np.ndarray], caller: Operation | None, depth: int
    ) -> list[np.ndarray]:
        function = self.functions.get(name)
        if function is None:
            raise self.error(f"no function @{name} in this module", caller)
        if not function.body.blocks:
            raise self.error(f"@{name} is a declaration: it has no body to run", caller or function)
        if depth > MAX_CALL_DEPTH:
            raise self.error(
                f"calls nest deeper than {MAX_CALL_DEPTH} at @{name} (recursion?)", caller
            )
        block = function.body.blocks[0]
        env: dict[SSAValue, np.ndarray] = dict(zip(block.args, args, strict=True))
        dead = dead_after(block)
        for op in block.ops:
            operands = [env[v] for v in op.operands]
            if isinstance(op, func.ReturnOp):
                return operands
            if isinstance(op, func.CallOp):
                results = self.call(op.callee.root_reference.data, operands, op, depth + 1)
            else:
                kernel = self.table.get(type(op))
                if kernel is None:
                    raise self.error(f"no reference semantics for '{op.name}'", op)
                self.check_memory(op, operands)
                try:
                    budget.spend("its elements", _op_elements(op, operands))
                    with budget.memory_limit(self.memory_limit):  # kernels plan intermediates
                        results = [kernel(op, operands)]
                except MemoryError as err:  # OverBudget: a kernel's plan over the limit
                    raise self.error(f"out of memory: '{op.name}': {err}", op) from None
                except budget.OverWork as err:
                    raise self.error(budget.over_work(f"'{op.name}'", err), op) from None
                except (layout.LayoutError, rules.ShapeError) as err:
                    raise self.error(f"'{op.name}': {err}", op) from None
                except ValueError as err:  # operand shapes the op's verifier let through
                    raise self.error(f"'{op.name}' cannot be evaluated: {err}", op) from None
            env.update(zip(op.results, results, strict=True))
            for value in dead.get(op, ()):
                del env[value]
        raise self.error(f"@{name} has no func.return")

    def check_memory(self, op: Operation, operands: Sequence[np.ndarray]) -> None:
        """Refuse, before the kernel allocates, a result (with a conv's im2col chunk) over the
        limit: a hostile `dense<1.0> : tensor<99999999999xf32>` must not eat the machine."""
        for result in op.results:
            if not isinstance(result.type, ShapedType | TensorType):
                continue  # e.g. !tosa.shape: no buffer
            if (why := _rank_error(result.type)) is not None:
                raise self.error(f"'{op.name}' result {why}", op)
            shape = _logical_shape(result.type)
            needed = math.prod(shape) * type_dtype(result.type).itemsize
            what = f"result of shape {list(shape)}"
            if "conv" in op.name and len(operands) >= 2:  # the result and one chunk at a time
                needed += _im2col_bytes(op.name, shape, operands[0], operands[1])
                what += " with its im2col buffer"
            if needed > self.memory_limit:
                raise self.error(
                    f"'{op.name}' {what} needs {needed} bytes, over the memory limit of "
                    f"{self.memory_limit}",
                    op,
                )

    def run(self, name: str, flat_inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run @name on flat buffers; returns flat buffers (shaped results written by layout)."""
        function = self.functions[name]
        if not function.body.blocks:
            raise self.error(f"@{name} is a declaration: it has no body to run", function)
        in_types = function.function_type.inputs.data
        out_types = function.function_type.outputs.data
        for ty in (*in_types, *out_types):
            if (why := _rank_error(ty)) is not None:
                raise self.error(f"@{name}'s {ty} {why}", function)
            shapes = [_logical_shape(ty)]
            if isinstance(ty, ShapedType):
                shapes.append(flat_input_shape(ty))
            needed = max(math.prod(shape) for shape in shapes) * type_dtype(ty).itemsize
            if needed > self.memory_limit:
                raise self.error(
                    f"@{name}'s {ty} needs {needed} bytes, over the memory limit of "
                    f"{self.memory_limit}",
                    function,
                )
        from convcanon.tosa.storage import boundary_storage, pack_inputs, unpack_outputs

        storage_in, storage_out = boundary_storage(function)
        flat_inputs = pack_inputs(list(flat_inputs), storage_in)
        args = [boundary_in(v, t) for v, t in zip(flat_inputs, in_types, strict=True)]
        results = self.call(name, args)
        try:
            outputs = [boundary_out(v, t) for v, t in zip(results, out_types, strict=True)]
            return unpack_outputs(outputs, storage_out)
        except layout.LayoutError as err:
            raise self.error(f"@{name} result: {err}", function) from None


def _op_elements(op: Operation, operands: Sequence[np.ndarray]) -> int:
    """The steps an op costs besides a kernel's own: its dispatch and its elements, and what an
    elementwise op's elements cost past being read and written."""
    results = sum(
        math.prod(_logical_shape(r.type))
        for r in op.results
        if isinstance(r.type, ShapedType | TensorType)
    )
    steps = budget.OP_STEPS + results + sum(v.size for v in operands)
    # only a measured op's result has a dtype to look up (a !tosa.shape has none)
    if operands and len(op.results) == 1 and op.name in element_steps.table("migraphx"):
        result = type_dtype(op.results[0].type)
        steps += element_steps.extra_steps("migraphx", op.name, operands[0].dtype, result) * results
    return steps


class _OpLines(Mapping[Operation, int]):
    """`migraphx.io.op_lines(module, text)`, read when an error needs a line: parsing gave
    every op it finds a location already, and finding them again costs a scan per op name."""

    def __init__(self, module: ModuleOp, text: str) -> None:
        self.module, self.text = module, text

    @functools.cached_property
    def lines(self) -> dict[Operation, int]:
        from convcanon.migraphx.io import op_lines

        return op_lines(self.module, self.text)

    def __getitem__(self, op: Operation) -> int:
        return self.lines[op]

    def __iter__(self) -> Iterator[Operation]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)


def _as_nibbles(value: np.ndarray, dtype: np.dtype, what: str, where: SourceLoc) -> np.ndarray:
    """npz has no 4-bit dtype: an si4/ui4 argument may come as any integer array of its values."""
    low, high = NIBBLE_BOUNDS[dtype.name]
    if value.size and (int(value.min()) < low or int(value.max()) > high):
        raise ConvcanonError(
            f"{what} holds {int(value.min())}..{int(value.max())}, outside {dtype}'s {low}..{high}",
            where,
        )
    return value.astype(np.int8).astype(dtype)


def bind_inputs(
    function: func.FuncOp, inputs: Mapping[str, np.ndarray], filename: str
) -> list[np.ndarray]:
    """npz arrays arg0..argN -> the entry's flat argument buffers (count, shape, dtype checked)."""
    from convcanon.migraphx.io import op_location
    from convcanon.tosa.storage import boundary_storage, pack_named_inputs

    where = op_location(function) or SourceLoc(filename)
    types = function.function_type.inputs.data
    name = function.sym_name.data
    expected = [f"arg{i}" for i in range(len(types))]
    missing = [k for k in expected if k not in inputs]
    extra = sorted(set(inputs) - set(expected))
    if missing or extra:  # names only: a lazy npz inflates nothing before this
        what = f"missing {', '.join(missing)}" if missing else f"unexpected {', '.join(extra)}"
        raise ConvcanonError(f"@{name} takes {len(types)} flat buffer(s); {what}", where)
    named = {key: inputs[key] for key in expected}
    inputs = pack_named_inputs(named, boundary_storage(function)[0])  # values -> storage bytes
    buffers: list[np.ndarray] = []
    for key, ty in zip(expected, types, strict=True):
        value = np.asarray(inputs[key])
        shape, dtype = flat_input_shape(ty), type_dtype(ty)
        if value.dtype.kind == "V" and value.dtype.itemsize == dtype.itemsize:
            value = value.view(dtype)
        if dtype.name in NIBBLE_BOUNDS and value.dtype.kind in "iu" and tuple(value.shape) == shape:
            value = _as_nibbles(value, dtype, f"input {key}", where)
        if tuple(value.shape) != shape or value.dtype != dtype:
            raise ConvcanonError(
                f"input {key} is {value.dtype}{list(value.shape)} but @{name} expects the flat "
                f"buffer {dtype}{list(shape)} of {ty}",
                where,
            )
        buffers.append(value)
    return buffers


def default_entry(names: Sequence[str]) -> str | None:
    """The function run when none is named: @main, else the only one (None: no choice)."""
    return "main" if "main" in names else (names[0] if len(names) == 1 else None)


def run_module_text(
    text: str,
    filename: str,
    entry: str | None,
    inputs: Mapping[str, np.ndarray],
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
) -> tuple[str, list[np.ndarray]]:
    """Parse, verify and run one function (`entry`, default @main or the only one) on flat
    input buffers `arg0..argN`; returns the name of the function it ran and its results as
    flat buffers.

    The parse is shared with the command's readers of `text` (`reference.parsed`): only
    `reconcile_strides` changes it (a contradicted intermediate retyped in place, never a
    boundary type), and a second time finds nothing to change."""
    from convcanon.reference.parsed import read_only_xdsl_module

    module = read_only_xdsl_module(text, filename)
    reconcile_strides(module, filename)
    interp = Interpreter(module, filename, _OpLines(module, text), memory_limit)
    names = list(interp.functions)
    if entry is None:
        entry = default_entry(names)
        if entry is None:
            raise ConvcanonError(
                f"no @main; choose a function with --entry ({', '.join(names) or 'none'})",
                SourceLoc(filename),
            )
    if entry not in interp.functions:
        known = ", ".join(names) or "none"
        raise ConvcanonError(f"no function @{entry} (functions: {known})", SourceLoc(filename))
    function = interp.functions[entry]
    if not function.body.blocks:
        raise interp.error(f"@{entry} is a declaration: it has no body to run", function)
    return entry, interp.run(entry, bind_inputs(function, inputs, filename))
