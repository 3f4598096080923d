"""What the canonical form of a padded conv costs XLA CPU by itself: the engine, not the rewrite.

The canonical form of `conv(x, w, padding=P)` is `conv(pad(x, P), w, padding=0)`. Per conv shape
and layout this times, paired against the padded conv (the original):
- `canonical`: that form, as `stablehlo-canonicalize-conv` emits it (XLA may fold the pad back
  into the conv: it does for NHWC, and cannot for NCHW, where its own layout transpose sits
  between the pad and the conv);
- `valid`: the unpadded conv over an input that is already padded (an argument of the padded
  shape): the conv kernel alone, no pad to fold or copy.
The same output, the same multiply-adds. Each setting of XLA_FLAGS runs in its own process
(XLA reads them once): XLA's default, and YNNPACK fusion off
(`--xla_cpu_experimental_ynn_fusion_type=`), which leaves convs to XLA's Eigen kernels.

Run: python bench/bench_valid_conv.py [--samples N] [--min-sample-ms MS] [--no-write]
Writes bench/RESULTS_valid_conv.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent

# (layout, batch, channels in, spatial, channels out, kernel, padding): 3x3 SAME convs of
# ResNet/U-Net stages, a 7x7 and a 1-D conv.
SHAPES: list[tuple[str, int, int, int, int, int, int]] = [
    ("NHWC", 1, 64, 112, 64, 3, 1),
    ("NHWC", 1, 64, 56, 64, 3, 1),
    ("NHWC", 1, 128, 28, 128, 3, 1),
    ("NHWC", 1, 256, 14, 256, 3, 1),
    ("NHWC", 8, 32, 32, 32, 3, 1),
    ("NHWC", 1, 32, 56, 32, 7, 3),
    ("NCHW", 1, 64, 112, 64, 3, 1),
    ("NCHW", 1, 64, 56, 64, 3, 1),
    ("NCHW", 1, 128, 28, 128, 3, 1),
    ("NCHW", 1, 256, 14, 256, 3, 1),
    ("NCHW", 8, 32, 32, 32, 3, 1),
    ("NCHW", 1, 32, 56, 32, 7, 3),
    ("NCW", 1, 512, 800, 512, 3, 1),
]

SETTINGS = {"XLA default": None, "YNNPACK off": "--xla_cpu_experimental_ynn_fusion_type="}


def _modules(shape: tuple[str, int, int, int, int, int, int]) -> tuple[list[str], list[Any]]:
    """StableHLO of the padded conv, its canonical form and the conv over a padded input, with
    their inputs (the kernel is a constant, as in an inference export)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    import convcanon

    layout, n, c, h, o, k, p = shape
    rank = len(layout) - 2
    rng = np.random.default_rng(0)
    dn = {"NHWC": ("NHWC", "HWIO", "NHWC"), "NCHW": ("NCHW", "OIHW", "NCHW")}.get(
        layout, ("NCH", "OIH", "NCH")
    )
    channels_last = layout == "NHWC"
    x_shape = (n, *([h] * rank), c) if channels_last else (n, c, *([h] * rank))
    w_shape = (*([k] * rank), c, o) if channels_last else (o, c, *([k] * rank))
    x = (rng.standard_normal(x_shape) * 0.1).astype(np.float32)
    w = jnp.asarray((rng.standard_normal(w_shape) * 0.1).astype(np.float32))
    spatial = range(1, 1 + rank) if channels_last else range(2, 2 + rank)
    pads = [(p, p) if axis in spatial else (0, 0) for axis in range(rank + 2)]
    xp = np.pad(x, pads)

    def conv(v: Any, padding: int) -> Any:
        return lax.conv_general_dilated(
            v, w, (1,) * rank, [(padding, padding)] * rank, None, None, dn
        )

    original = jax.jit(lambda v: conv(v, p)).lower(x).as_text()
    canonical = convcanon.canonicalize_conv(original, "stablehlo", gate="general").text
    valid = jax.jit(lambda v: conv(v, 0)).lower(xp).as_text()
    return [original, canonical, valid], [[x], [x], [xp]]


def measure(samples: int, min_s: float) -> list[dict[str, Any]]:
    """Per shape: ms of the padded conv and the median paired ratios, in this process."""
    import numpy as np
    from bench_runtime import Compiled, _device_inputs, max_relative_error, paired_on

    rows = []
    for shape in SHAPES:
        texts, inputs = _modules(shape)
        modules = [Compiled(t) for t in texts]
        buffers = [_device_inputs(m, i) for m, i in zip(modules, inputs, strict=True)]
        outs = [[np.asarray(a) for a in m.run(b)] for m, b in zip(modules, buffers, strict=True)]
        error = max(max_relative_error(outs[0], out) for out in outs[1:])

        timing = paired_on(modules, buffers, samples, min_s)
        rows.append(
            {
                "shape": list(shape),
                "ms": timing.original_ms(),
                "canonical": timing.median_ratio(1),
                "valid": timing.median_ratio(2),
                "error": error,
            }
        )
    return rows


def _describe(shape: list[Any]) -> str:
    layout, n, c, h, o, k, p = shape
    spatial = "x".join([str(h)] * (len(layout) - 2))
    return f"{layout} {n}x{c}x{spatial} -> {o}, {k}-tap pad {p}"


def table(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    names = list(results)
    head = "| conv (layout batch x C x spatial -> C', kernel, padding) |"
    rule = "|---|"
    for name in names:
        head += f" padded conv ms, {name} | canonical / padded | valid / padded |"
        rule += "---:|---:|---:|"
    lines = [head, rule]
    for i, row in enumerate(results[names[0]]):
        line = f"| {_describe(row['shape'])} |"
        for name in names:
            r = results[name][i]
            line += f" {r['ms']:.2f} | x{r['canonical']:.2f} | x{r['valid']:.2f} |"
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--min-sample-ms", type=float, default=50.0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.samples, args.min_sample_ms / 1000)))
        return 0
    from bench_opt import environment
    from bench_runtime import ANALYSIS_MARKER, loadavg

    results: dict[str, list[dict[str, Any]]] = {}
    load_start = loadavg()
    for name, flags in SETTINGS.items():
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        if flags is not None:
            env["XLA_FLAGS"] = flags
        command = [sys.executable, __file__, "--child", "--samples", str(args.samples)]
        command += ["--min-sample-ms", str(args.min_sample_ms)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    worst = max(r["error"] for rows in results.values() for r in rows)
    lines = [
        "# The canonical form of a padded conv on XLA CPU",
        "",
        "Generated by `bench/bench_valid_conv.py`; see its docstring for what each column is.",
        "",
        f"Machine: {environment()}; load {load_start} -> {loadavg()}.",
        f"Samples: {args.samples} paired per conv, each >= {args.min_sample_ms:g} ms of"
        " back-to-back runs per module, order alternating; ratio = median over samples.",
        "Kernels are constants.",
        f"Largest relative difference of any output from the padded conv's: {worst:.1e}.",
        "",
        *table(results),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        out = BENCH / "RESULTS_valid_conv.md"
        previous = out.read_text() if out.exists() else ""
        if ANALYSIS_MARKER in previous:
            text += "\n" + previous[previous.index(ANALYSIS_MARKER) :]
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH))
    raise SystemExit(main())
