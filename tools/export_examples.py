"""Regenerate the bundled example models (StableHLO text exported by JAX).

Run: .venv/bin/python tools/export_examples.py   (needs JAX and flax: pip install -e '.[examples]';
the outputs are committed). The model itself is `convcanon.examples.small_cnn`.
"""

from __future__ import annotations

from pathlib import Path

from convcanon.examples import small_cnn

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def export_small_cnn() -> str:
    return small_cnn.export_stablehlo()


if __name__ == "__main__":
    EXAMPLES.mkdir(exist_ok=True)
    (EXAMPLES / "small_cnn.stablehlo.mlir").write_text(export_small_cnn())
    print("wrote", EXAMPLES / "small_cnn.stablehlo.mlir")
