"""Random inputs for `convcanon run` when none are given: the entry function's arguments drawn
as `verify` draws its first trial's (N(0,1) floats, small integers, fair booleans), from
`--seed`, with a note on stderr saying what was drawn when the run is over."""

from __future__ import annotations

import sys

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.ir_kind import sniff_framework
from convcanon.verify.inputs import DISTRIBUTIONS, InputsTooLarge, drawn_description


def _hlo_arguments(
    text: str, filename: str, entry: str | None, rng: np.random.Generator, limit: int
) -> tuple[str, list, list[np.ndarray]]:
    """The entry's name, its arguments (`TensorType`s) and their random values."""
    from convcanon.verify.inputs import random_inputs
    from convcanon.verify.signature import module_signature

    signature = module_signature(text, filename, entry, limit)
    return signature.entry, signature.args, random_inputs(signature.args, rng)


def _xdsl_arguments(
    text: str, filename: str, entry: str | None, rng: np.random.Generator, limit: int
) -> tuple[str, list, list[np.ndarray]]:
    """The entry's name, its flat arguments and their random values."""
    from convcanon.reference.migraphx_interp import flat_args
    from convcanon.verify import half_b
    from convcanon.verify.inputs import random_buffers

    function = half_b.entry_function(half_b.parse(text, filename), filename, entry)
    args = flat_args(function)
    half_b.check_memory(function, args, filename, limit)
    return function.sym_name.data, args, random_buffers(args, rng)


class RandomFeed:
    """`feed(text, filename, entry)`: the entry's arguments (`arg0`, ...) drawn from one
    generator seeded with `seed` (chunk after chunk); `notes` says what was drawn, for the
    command to print once the run is over (an error stays one line)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.notes: list[str] = []

    def __call__(
        self, text: str, filename: str, entry: str | None, limit: int
    ) -> dict[str, np.ndarray]:
        arguments = _xdsl_arguments if sniff_framework(text) == "xdsl" else _hlo_arguments
        try:
            name, args, values = arguments(text, filename, entry, self.rng, limit)
        except InputsTooLarge:  # `run` would say they are missing
            raise
        except ConvcanonError:  # no such entry, a dynamic shape: `run` says it in its words
            return {}
        if values:
            self.notes.append(
                f"{SourceLoc(filename)}: note: no --inputs: @{name}'s {len(values)} argument(s)"
                f" drawn at random ({drawn_description(DISTRIBUTIONS[0], args)}) with --seed"
                f" {self.seed}"
            )
        return {f"arg{index}": value for index, value in enumerate(values)}

    def print_notes(self) -> None:
        for note in self.notes:
            print(note, file=sys.stderr)
