"""Snapshot half A's outputs on every input x option preset; compare two snapshots byte for byte.

A refactor of the HLO conv canonicalization must keep its outputs; this proves it:

    python bench/snapshot_outputs.py check --rev HEAD      # HEAD's outputs vs the working tree's
    python bench/snapshot_outputs.py write DIR [--src SRC | --rev REV] [--inputs OLD/inputs]
    python bench/snapshot_outputs.py compare DIR_A DIR_B   # exit 1 on any difference

Run it from the repository root with the venv's python (`PYTHONPATH=$PWD/src`; the inputs are
generated with this tree's test and bench helpers, JAX included). `write` saves the inputs under
DIR/inputs; a later `write --inputs DIR/inputs` reuses them. Inputs: the bench programs
(bench/runtime/models.py at quick size, ResNet-50, bench/synthetic.py at 2000 ops of both kinds,
examples/), every tests/filecheck/hlo input, the modules the tests build (flax models, training
steps, jax.export polymorphic programs, a fixed list of random convs from tests/hlo/cases.py and
the dynamic-batch strategy, in f32/f16/bf16/f64/i32 and as MHLO) and the shared corpus convs.
Torch programs are skipped (torch is not installed and none are exported in the repo).

Per input and preset, DIR/<input>__<preset>.mlir is the printed module (or `// exit N` and the
error text when the pass refuses it) and DIR/<input>__<preset>.stderr holds `--stats` and remarks;
DIR/<input>__explain-<preset>.txt is `convcanon explain` for the two gate presets, and
DIR/<input>__other-dialect-pass.mlir the error of the other dialect's pass. The pass runs
in one subprocess per snapshot with PYTHONPATH=SRC, through the CLI entry points in process, with
the working directory at the inputs so no path of the checkout appears in any output.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]

# name -> pass options (the pass defaults: gate=neuron, merge-phases=auto, conv-layout=auto,
# engine=xla-cpu)
PRESETS: dict[str, str] = {
    "neuron": "",
    "general": "gate=general",
    "merge-none": "gate=general merge-phases=none",
    "pad-kernel": "gate=general merge-phases=pad-kernel",
    "channels-last": "gate=general conv-layout=channels-last",
    "interior-pad": "gate=general lhs-dilation=interior-pad",
    "negative-slice": "gate=general negative-padding=slice",
    "narrow-partials": "gate=general wide-partials=false",
    "pad-kernel-channels-last": "gate=general merge-phases=pad-kernel conv-layout=channels-last",
    "pad-kernel-mac3": "gate=general merge-phases=pad-kernel max-mac-ratio=3",
    "max-phases-4": "gate=general max-phases=4",
    "neuron-small-verbose": "allow-small-spatial=true max-window-param=7 verbose=true",
    "exact": "gate=general merge-phases=exact",
    "iree-cpu": "gate=general engine=iree-cpu",
    "generic": "gate=general engine=generic",
    "xla-cpu": "gate=general engine=xla-cpu",
}
EXPLAIN_PRESETS = ("neuron", "general")
RANDOM_CONVS = 240  # per strategy; hypothesis derandomized, so the same list every run
DYNAMIC_CONVS = 30


# -- inputs --------------------------------------------------------------------------------------


def _deterministic_examples(strategy: SearchStrategy[T], count: int) -> list[T]:
    """`count` draws of a hypothesis strategy, the same on every run: a fixed seed (not
    `derandomize`, whose seed is a digest of this function's source), no database."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    drawn: list[T] = []

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @seed(29)
    @given(example=strategy)
    def collect(example: T) -> None:
        drawn.append(example)

    collect()  # pyright: ignore[reportCallIssue]  (given supplies `example`)
    return drawn


def _fixture_value(fixture: object) -> Any:
    """What a pytest fixture function returns, called outside pytest."""
    return getattr(fixture, "__wrapped__", fixture)()  # type: ignore[operator]


def _without_locations(text: str) -> str:
    """jax.export's module printed without its locations, which name the caller's file and line."""
    from convcanon.hlo.context import make_context, parse_module

    return str(parse_module(text, "input.mlir", make_context()))


def _to_mhlo(text: str) -> str:
    from convcanon.hlo import legalize
    from convcanon.hlo.context import make_context, parse_module

    module = parse_module(text, "input.mlir", make_context())
    legalize.to_mhlo(module)
    return str(module)


_BLOB = re.compile(r'"0x([0-9A-Fa-f]{8})[0-9A-Fa-f]*"')


def _small_blobs(text: str) -> str:
    """Each dense_resource blob cut to its alignment word and one zero word: the pass reads only
    their types, and 300 MB of ResNet weights printed back per preset would dwarf the run."""
    head, marker, resources = text.partition("{-#")
    return head + marker + _BLOB.sub(lambda m: f'"0x{m.group(1)}00000000"', resources)


def _bench_inputs() -> Iterator[tuple[str, str]]:
    from bench import synthetic
    from bench.runtime import models

    for name, program in models.PROGRAMS.items():
        yield f"bench-{name}-quick", _small_blobs(models.export(program, "quick")[0])
    yield "bench-resnet50", (REPO / "bench/models/resnet50.stablehlo.mlir").read_text()
    yield "synthetic-conv-dense-2000", synthetic.synthetic_module(2000, seed=0)
    resnet_ops = 2400  # the smallest size above one ResNet-50 main (resnet_mix needs one copy)
    yield f"synthetic-resnet-mix-{resnet_ops}", synthetic.resnet_mix_module(resnet_ops)
    for path in sorted((REPO / "examples").glob("*.mlir")):
        yield f"example-{path.stem}", path.read_text()


def _lit_inputs() -> Iterator[tuple[str, str]]:
    for path in sorted((REPO / "tests/filecheck/hlo").glob("*.mlir")):
        yield f"lit-{path.stem}", path.read_text()


def _test_model_inputs() -> Iterator[tuple[str, str]]:
    import jax
    import jax.numpy as jnp

    from tests import _polymorphic
    from tests.api import test_from_jax_training, test_hlo_api
    from tests.hlo import test_hlo_models, test_hlo_round_trip, test_hlo_training

    yield "test-flax-tiny-cnn", _fixture_value(test_hlo_models.flax_export)[0]
    for name, (make, shape) in test_hlo_training.MODELS.items():
        yield f"test-training-{name}", test_hlo_training.training_step(make(), shape)[0]
    for name in _polymorphic.PROGRAMS:
        exported = _polymorphic.export_program(name).mlir_module()
        yield f"test-polymorphic-{name}", _without_locations(exported)
    yield "test-round-trip-conv", str(_fixture_value(test_hlo_round_trip.jax_module))
    net = test_hlo_api._Net()
    x = jax.ShapeDtypeStruct((2, 17, 15, 3), jnp.float32)
    params = jax.eval_shape(net.init, jax.random.PRNGKey(0), x)
    yield "test-api-net", jax.jit(net.apply).lower(params, x).as_text()
    auto = test_from_jax_training.AutoEncoder()
    xa = jax.ShapeDtypeStruct((2, 16, 16, 3), jnp.float32)
    pa = jax.eval_shape(auto.init, jax.random.PRNGKey(0), xa)

    def loss(p: object, v: jax.Array) -> jax.Array:
        y = auto.apply(p, v)  # type: ignore[arg-type]
        return jnp.mean(jnp.square(y[:, : v.shape[1], : v.shape[2]] - v))  # type: ignore[index]

    yield "test-autoencoder-grad", jax.jit(jax.grad(loss)).lower(pa, xa).as_text()


def _random_conv_inputs() -> Iterator[tuple[str, str]]:
    from tests.hlo import cases, test_hlo_dynamic_batch

    strategies = {
        "conv": cases.conv_cases(),
        "conv-f16": cases.conv_cases(elements=("f16",)),
        "conv-wide": cases.conv_cases(elements=("f32",), max_pad=6, stride_range=(1, 5)),
    }
    for kind, strategy in strategies.items():
        for i, case in enumerate(_deterministic_examples(strategy, RANDOM_CONVS)):
            text = case.text
            yield f"random-{kind}-{i:03d}", text
            if kind == "conv-f16" and i % 2 == 0:
                yield f"random-conv-bf16-{i:03d}", text.replace("xf16>", "xbf16>")
            if kind == "conv" and i % 3 == 0:
                yield f"random-conv-mhlo-{i:03d}", _to_mhlo(text)
    for i, poly in enumerate(
        _deterministic_examples(test_hlo_dynamic_batch.poly_convs(), DYNAMIC_CONVS)
    ):
        text = _without_locations(poly.text)
        yield f"random-dynamic-batch-{i:03d}", text
        if i % 2 == 0:
            yield f"random-dynamic-batch-mhlo-{i:03d}", _to_mhlo(text)
    yield "test-dynamic-spatial", cases.DYNAMIC


def _corpus_inputs() -> Iterator[tuple[str, str]]:
    shared = Path(os.environ.get("CONVCANON_SHARED") or REPO.parent / "shared")
    for path in sorted((shared / "corpus" / "stablehlo").glob("*.mlir")):
        text = path.read_text()
        if "convolution" in text:
            yield f"corpus-{path.stem}", text


def generate_inputs(out: Path) -> int:
    """Write every input as out/<name>.mlir; MHLO twins of a few StableHLO programs too."""
    for root in (str(REPO), str(REPO / "src")):
        if root not in sys.path:
            sys.path.insert(0, root)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    sources: list[Callable[[], Iterator[tuple[str, str]]]] = [
        _bench_inputs,
        _lit_inputs,
        _test_model_inputs,
        _random_conv_inputs,
        _corpus_inputs,
    ]
    mhlo_twins = {"example-small_cnn.stablehlo", "test-flax-tiny-cnn", "test-training-2d"}
    for source in sources:
        for name, text in source():
            (out / f"{name}.mlir").write_text(text)
            count += 1
            if name in mhlo_twins:
                (out / f"{name}-mhlo.mlir").write_text(_to_mhlo(text))
                count += 1
    return count


# -- running the pass (inside the subprocess, with the snapshot's src first on the path) -------


def _captured(call: Callable[[], int]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = call()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except Exception as err:  # a crash is an output too; no traceback (paths differ)
            code = -1
            stderr.write(f"crash: {type(err).__name__}: {err}\n")
    return code, stdout.getvalue(), stderr.getvalue()


def run_snapshot(inputs: Path, out: Path) -> None:
    """Every input x preset through convcanon-opt, and explain, in this process."""
    from convcanon.cli import main, opt_main

    out.mkdir(parents=True, exist_ok=True)
    os.chdir(inputs)
    for path in sorted(inputs.glob("*.mlir")):
        text = path.read_text()
        dialect_pass = "canonicalize-conv" if "mhlo.convolution" in text else None
        dialect_pass = dialect_pass or "stablehlo-canonicalize-conv"
        split = ["--split-input-file"] if "// -----" in text else []
        other = "stablehlo-canonicalize-conv" if dialect_pass == "canonicalize-conv" else None
        argv = [path.name, "-p", other or "canonicalize-conv", "-o", "-", *split]
        code, stdout, stderr = _captured(lambda argv=argv: opt_main(argv))
        (out / f"{path.stem}__other-dialect-pass.mlir").write_text(
            f"// exit {code}\n{stdout if code == 0 else ''}{stderr}"
        )
        for preset, options in PRESETS.items():
            pipeline = f"{dialect_pass}{{{options}}}" if options else dialect_pass
            argv = [path.name, "-p", pipeline, "-o", "-", "--stats", *split]
            code, stdout, stderr = _captured(lambda argv=argv: opt_main(argv))
            module = stdout if code == 0 else f"// exit {code}\n{stderr}"
            (out / f"{path.stem}__{preset}.mlir").write_text(module)
            (out / f"{path.stem}__{preset}.stderr").write_text(stderr)
            if preset in EXPLAIN_PRESETS and not split:
                argv = ["explain", path.name, "-p", pipeline]
                code, stdout, stderr = _captured(lambda argv=argv: main(argv))
                (out / f"{path.stem}__explain-{preset}.txt").write_text(
                    f"// exit {code}\n{stdout}{stderr}"
                )


def write(out: Path, src: Path, inputs: Path | None) -> None:
    """Snapshot the code under `src` into `out` (inputs generated unless `inputs` is given)."""
    start = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    saved = out / "inputs"
    if inputs is None:
        count = generate_inputs(saved)
        print(f"generated {count} inputs in {time.monotonic() - start:.1f} s")
    elif inputs.resolve() != saved.resolve():
        shutil.rmtree(saved, ignore_errors=True)
        shutil.copytree(inputs, saved)
    env = dict(os.environ, PYTHONPATH=str(src.resolve()), JAX_PLATFORMS="cpu")
    outputs = out / "outputs"
    subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "_run", str(saved.resolve()), str(outputs)],
        env=env,
        check=True,
    )
    (out / "meta.json").write_text(json.dumps({"src": str(src)}, indent=2) + "\n")
    files = len(list(outputs.iterdir()))
    print(f"wrote {files} outputs of {src} to {out} in {time.monotonic() - start:.1f} s")


@contextlib.contextmanager
def worktree_of(rev: str) -> Iterator[Path]:
    """A temporary detached `git worktree` of `rev` under /tmp, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="snapshot-rev-"))
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(path), rev], check=True
    )
    try:
        yield path
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False
        )
        shutil.rmtree(path, ignore_errors=True)


# -- comparing -----------------------------------------------------------------------------------


def compare(a: Path, b: Path, excerpt_lines: int = 20) -> int:
    """Print every differing or missing output file; 1 if any, else 0."""
    out_a, out_b = a / "outputs", b / "outputs"
    names_a = {p.name for p in out_a.iterdir()}
    names_b = {p.name for p in out_b.iterdir()}
    differing = 0
    for name in sorted(names_a ^ names_b):
        print(f"missing in {b if name in names_a else a}: {name}")
    for name in sorted(names_a & names_b):
        left, right = (out_a / name).read_bytes(), (out_b / name).read_bytes()
        if left == right:
            continue
        differing += 1
        print(f"differs: {name}")
        diff = difflib.unified_diff(
            left.decode(errors="replace").splitlines(),
            right.decode(errors="replace").splitlines(),
            str(out_a / name),
            str(out_b / name),
            lineterm="",
            n=1,
        )
        for line in list(diff)[:excerpt_lines]:
            print(f"    {line}")
    missing = len(names_a ^ names_b)
    same = len(names_a & names_b) - differing
    print(f"{same} identical, {differing} differing, {missing} missing")
    return 1 if differing or missing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="snapshot one checkout's outputs into DIR")
    w.add_argument("dir", type=Path)
    w.add_argument("--src", type=Path, default=REPO / "src", help="the src/ whose pass runs")
    w.add_argument("--rev", help="run REV's src/ (a temporary git worktree)")
    w.add_argument("--inputs", type=Path, help="reuse these inputs instead of generating them")
    c = sub.add_parser("compare", help="compare two snapshot DIRs; exit 1 on any difference")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    k = sub.add_parser("check", help="REV's outputs vs the working tree's, on the same inputs")
    k.add_argument("--rev", required=True)
    k.add_argument("--inputs", type=Path, help="reuse these inputs instead of generating them")
    r = sub.add_parser("_run")  # internal: the subprocess that runs one checkout's pass
    r.add_argument("inputs", type=Path)
    r.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "_run":
        run_snapshot(args.inputs, args.out)
        return 0
    if args.command == "compare":
        return compare(args.a, args.b)
    if args.command == "write":
        if args.rev:
            with worktree_of(args.rev) as tree:
                write(args.dir, tree / "src", args.inputs)
        else:
            write(args.dir, args.src, args.inputs)
        return 0
    with tempfile.TemporaryDirectory(prefix="snapshot-check-") as tmp:
        old, new = Path(tmp) / "rev", Path(tmp) / "tree"
        with worktree_of(args.rev) as tree:
            write(old, tree / "src", args.inputs)
        write(new, REPO / "src", old / "inputs")
        return compare(old, new)


if __name__ == "__main__":
    sys.exit(main())
