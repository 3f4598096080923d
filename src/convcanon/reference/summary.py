"""One line per result for `convcanon run` without `--output`: what came out, at a glance.

Printing whole tensors would flood the terminal (a ResNet feature map has 10^5 elements), and
printing nothing leaves a user with no answer; dtype, shape, range, mean and the first values
say whether a result is plausible.
"""

from __future__ import annotations

import numpy as np

FIRST_VALUES = 6


def _number(value: float | complex) -> str:
    return f"{value:.6g}"


def summarize(value: np.ndarray) -> str:
    """`float32[1, 10] min -1.2 max 3.4 mean 0.5 first [0.1, ...]`; non-finite values counted."""
    array = np.asarray(value)
    head = f"{array.dtype}[{', '.join(str(d) for d in array.shape)}]"
    if array.size == 0:
        return f"{head} (empty)"
    flat = array.reshape(-1)
    first = ", ".join(
        _number(x.item()) if x.dtype.kind != "b" else str(bool(x)) for x in flat[:FIRST_VALUES]
    )
    more = ", ..." if flat.size > FIRST_VALUES else ""
    if array.dtype.kind == "b":
        return f"{head} true {int(np.count_nonzero(flat))} of {flat.size} first [{first}{more}]"
    if array.dtype.kind == "c":
        return f"{head} first [{first}{more}]"
    wide = flat.astype(np.float64)  # also reads ml_dtypes' bfloat16 and float8 types
    finite = wide[np.isfinite(wide)]
    parts = [head]
    if finite.size:
        parts.append(
            f"min {_number(finite.min())} max {_number(finite.max())} mean {_number(finite.mean())}"
        )
    if finite.size < wide.size:
        nan = int(np.isnan(wide).sum())
        parts.append(f"non-finite {wide.size - finite.size} ({nan} nan)")
    parts.append(f"first [{first}{more}]")
    return " ".join(parts)


def print_results(results: list[np.ndarray], indent: str = "  ") -> None:
    for index, value in enumerate(results):
        print(f"{indent}result{index}: {summarize(value)}")
