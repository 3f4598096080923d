"""One line per result for `convcanon run` without `--output`: what came out, at a glance.

Printing whole tensors would flood the terminal (a ResNet feature map has 10^5 elements), and
printing nothing leaves a user with no answer; dtype, shape, range, mean and the first values
say whether a result is plausible.

The statistics are read a chunk at a time (each chunk widened to float64 to read bfloat16 and
float8 values, with its finite mask), so summarizing allocates a bounded few MB whatever the
result's size, not two float64 copies of it: `run --memory-limit` bounds the results, and the
summary must stay inside that.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

FIRST_VALUES = 6
CHUNK_ELEMENTS = 1 << 16  # per chunk: a float64 copy and a mask, ~600 KB with its temporaries


def _number(value: float | complex) -> str:
    return f"{value:.6g}"


def _flat_chunks(array: np.ndarray, size: int) -> Iterator[np.ndarray]:
    """The elements in C order, at most `size` at a time, without a copy of the whole array (a
    broadcast result, such as iota's, would be copied whole by `reshape(-1)`)."""
    if array.ndim == 0:
        yield array.reshape(1)
    elif array.flags.c_contiguous:
        flat = array.reshape(-1)
        for start in range(0, flat.size, size):
            yield flat[start : start + size]
    else:
        rows = max(1, size // max(1, math.prod(array.shape[1:])))
        for start in range(0, array.shape[0], rows):
            part = array[start : start + rows]
            if part.size <= size:
                yield part.reshape(-1)
            else:
                for row in part:
                    yield from _flat_chunks(row, size)


def summarize(value: np.ndarray) -> str:
    """`float32[1, 10] min -1.2 max 3.4 mean 0.5 first [0.1, ...]`; non-finite values counted."""
    array = np.asarray(value)
    head = f"{array.dtype}[{', '.join(str(d) for d in array.shape)}]"
    if array.size == 0:
        return f"{head} (empty)"
    head_values: list[np.ndarray] = []
    for chunk in _flat_chunks(array, FIRST_VALUES):
        head_values += list(chunk[: FIRST_VALUES - len(head_values)])
        if len(head_values) == FIRST_VALUES:
            break
    first = ", ".join(
        _number(x.item()) if x.dtype.kind != "b" else str(bool(x)) for x in head_values
    )
    more = ", ..." if array.size > FIRST_VALUES else ""
    if array.dtype.kind == "b":
        true = sum(int(np.count_nonzero(c)) for c in _flat_chunks(array, CHUNK_ELEMENTS))
        return f"{head} true {true} of {array.size} first [{first}{more}]"
    if array.dtype.kind == "c":
        return f"{head} first [{first}{more}]"
    count, nan, total = 0, 0, 0.0
    low, high = np.inf, -np.inf
    for chunk in _flat_chunks(array, CHUNK_ELEMENTS):
        wide = chunk.astype(np.float64)  # also reads ml_dtypes' bfloat16 and float8 types
        finite = wide[np.isfinite(wide)]
        nan += int(np.count_nonzero(np.isnan(wide)))
        if finite.size:
            count += finite.size
            total += float(finite.sum())
            low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    parts = [head]
    if count:
        parts.append(f"min {_number(low)} max {_number(high)} mean {_number(total / count)}")
    if count < array.size:
        parts.append(f"non-finite {array.size - count} ({nan} nan)")
    parts.append(f"first [{first}{more}]")
    return " ".join(parts)


def print_results(results: list[np.ndarray], indent: str = "  ") -> None:
    for index, value in enumerate(results):
        print(f"{indent}result{index}: {summarize(value)}")
