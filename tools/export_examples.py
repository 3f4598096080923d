"""Regenerate the bundled example model: StableHLO text exported by JAX, and its arguments.

Run: .venv/bin/python tools/export_examples.py   (needs JAX and flax: pip install -e '.[examples]';
the outputs are committed). The model itself is `convcanon.examples.small_cnn`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from convcanon.examples import small_cnn

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def export_small_cnn() -> str:
    return small_cnn.export_stablehlo()


def save_small_cnn_arguments(path: Path) -> None:
    """`arg0`..`argN` for `convcanon run --inputs`: real initialized parameters and an image."""
    arrays = {f"arg{i}": np.asarray(a) for i, a in enumerate(small_cnn.example_arguments())}
    np.savez_compressed(path, **arrays)  # pyright: ignore[reportArgumentType]


if __name__ == "__main__":
    EXAMPLES.mkdir(exist_ok=True)
    (EXAMPLES / "small_cnn.stablehlo.mlir").write_text(export_small_cnn())
    save_small_cnn_arguments(EXAMPLES / "small_cnn.inputs.npz")
    print("wrote", EXAMPLES / "small_cnn.stablehlo.mlir", "and", EXAMPLES / "small_cnn.inputs.npz")
