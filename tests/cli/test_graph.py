"""`convcanon graph` renders both halves' modules before/after a pass, highlighting what changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from _processes import children_outlive_a_stop  # pyright: ignore[reportMissingImports]

_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
requires_dot = pytest.mark.skipif(
    shutil.which("dot") is None and not _CI,
    reason="Graphviz's dot is not installed (apt-get install graphviz)",
)

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "import sys; from convcanon.cli import main; sys.exit(main())"]
HLO = REPO / "examples" / "small_cnn.stablehlo.mlir"
MIGRAPHX = REPO / "bench" / "migraphx" / "nhwc_resblock.mlir"
GENERAL = "stablehlo-canonicalize-conv{gate=general}"


def _graph(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "graph", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def _after_panel(dot: str) -> tuple[dict[str, tuple[str, bool]], dict[str, list[str]]]:
    """The after panel's nodes (op, drawn as created) and each node's producers."""
    nodes = {
        key: (op, "#9be39b" in style)
        for key, op, style in re.findall(
            r'^    (p1_\w+) \[label="([\w.]+)[^"]*"(.*)\];$', dot, re.M
        )
    }
    producers: dict[str, list[str]] = {}
    for source, target in re.findall(r"^    (p1_\w+) -> (p1_\w+);$", dot, re.M):
        producers.setdefault(target, []).append(source)
    return nodes, producers


def test_the_rewrite_s_partial_sums_are_created_and_the_model_s_bias_adds_are_not(
    tmp_path: Path,
):
    """By provenance, not by kind: the adds that sum a rewrite's partial convs are green (as
    many as `explain` lists), the model's own bias adds (an add of a broadcast bias) are not,
    though they are adds of the same type."""
    out = tmp_path / "g.dot"
    result = _graph(str(HLO), "-p", GENERAL, "--format", "dot", "-o", str(out))
    assert result.returncode == 0, result.stderr
    nodes, producers = _after_panel(out.read_text())
    adds = {key: created for key, (op, created) in nodes.items() if op == "stablehlo.add"}

    def fed_by(key: str, op: str) -> int:
        return sum(nodes[p][0] == op for p in producers[key])

    bias = {k for k in adds if fed_by(k, "stablehlo.broadcast_in_dim")}
    assert bias and not any(adds[k] for k in bias)
    two_partials = {k for k in adds if fed_by(k, "stablehlo.convolution") == 2}
    assert two_partials and all(adds[k] for k in two_partials)
    listed = json.loads(
        subprocess.run(
            [*CLI, "explain", str(HLO), "-p", GENERAL, "--format", "json"],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    )
    partial_sums = sum(row["ops_added"].count("add") for row in listed["convs"])
    assert sum(adds.values()) == partial_sums > len(two_partials)


def test_an_untouched_module_draws_nothing_as_created(tmp_path: Path):
    """A pipeline that changes nothing (the neuron gate leaves this stem alone) creates
    nothing, whatever matches by kind."""
    out = tmp_path / "g.dot"
    result = _graph(str(HLO), "-p", "cse", "--format", "dot", "-o", str(out))
    assert result.returncode == 0, result.stderr
    nodes, _ = _after_panel(out.read_text())
    assert nodes and not any(created for _, created in nodes.values())


def test_ops_mlir_passes_create_are_created(tmp_path: Path):
    """canonicalize folds two constants' sum into a new constant: that one is green (though
    the input had constants of its type), the add that reads an argument is the module's own."""
    module = tmp_path / "fold.mlir"
    module.write_text(
        "func.func @main(%x: i32) -> i32 {\n"
        "  %a = arith.constant 1 : i32\n"
        "  %b = arith.constant 2 : i32\n"
        "  %c = arith.addi %a, %b : i32\n"
        "  %d = arith.addi %x, %c : i32\n"
        "  return %d : i32\n}\n"
    )
    out = tmp_path / "g.dot"
    result = _graph(str(module), "-p", "canonicalize", "--format", "dot", "-o", str(out))
    assert result.returncode == 0, result.stderr
    nodes, _ = _after_panel(out.read_text())
    assert sorted(nodes.values()) == [
        ("arg0", False),
        ("arith.addi", False),
        ("arith.constant", True),
        ("func.return", False),
    ]


def test_a_dynamic_conv_is_drawn_as_a_conv(tmp_path: Path):
    """A dynamic_conv whose padding is computed at run time stays; it is a conv all the same."""
    text = (
        "func.func @main(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>, %p: tensor<2x2xi64>)"
        " -> tensor<1x4x4x4xf32> {\n"
        '  %0 = "stablehlo.dynamic_conv"(%x, %w, %p) <{batch_group_count = 1 : i64,'
        " dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,"
        " feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>}> :"
        " (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>, tensor<2x2xi64>) -> tensor<1x4x4x4xf32>\n"
        "  return %0 : tensor<1x4x4x4xf32>\n}\n"
    )
    module = tmp_path / "m.mlir"
    module.write_text(text)
    out = tmp_path / "g.dot"
    result = _graph(
        str(module), "-p", "stablehlo-canonicalize-conv", "--format", "dot", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    conv = [line for line in out.read_text().splitlines() if "stablehlo.dynamic_conv" in line]
    assert len(conv) == 2  # one per panel
    assert all("#f8b26a" in line for line in conv)


def test_dot_output_has_both_panels_and_highlights(tmp_path: Path):
    out = tmp_path / "g.dot"
    result = _graph(
        str(HLO),
        "-p",
        "stablehlo-canonicalize-conv{gate=general}",
        "--format",
        "dot",
        "-o",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    dot = out.read_text()
    assert "cluster_0" in dot and "cluster_1" in dot
    assert dot.count("#f8b26a") > 6  # the 6 input convs plus the partial convs after
    assert "#9be39b" in dot  # pads, slices and adds the rewrite added
    assert 'label="after stablehlo-canonicalize-conv{gate=general}"' in dot
    for panel in ("p0", "p1"):  # each function argument is drawn once per panel
        assert dot.count(f'{panel}_f0_arg1 [label="arg1') == 1
    assert '_arg1 [label="arg1\\ntensor<7x7x3x8xf32>", style=filled' not in dot


@requires_dot
def test_hlo_graph_renders_valid_svg(tmp_path: Path):
    out = tmp_path / "g.svg"
    result = _graph(str(HLO), "-p", "stablehlo-canonicalize-conv{gate=general}", "-o", str(out))
    assert result.returncode == 0, result.stderr
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    assert "stablehlo.pad" in out.read_text()


@requires_dot
def test_migraphx_graph_renders_valid_png(tmp_path: Path):
    out = tmp_path / "g.png"
    result = _graph(str(MIGRAPHX), "-p", "migraphx-to-tosa", "--format", "png", "-o", str(out))
    assert result.returncode == 0, result.stderr
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000


def test_bad_input_is_a_diagnostic_and_writes_nothing(tmp_path: Path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %0 = stablehlo.bogus\n}\n")
    out = tmp_path / "g.svg"
    result = _graph(str(bad), "-o", str(out))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{bad}:2:") and "Traceback" not in result.stderr
    assert not out.exists()


def _chain(tmp_path: Path, ops: int) -> Path:
    """A module whose graph is a chain of `ops` adds (Graphviz's worst case for its size)."""
    lines = ["func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {"]
    previous = "%arg0"
    for i in range(ops):
        lines.append(f"  %{i} = stablehlo.add {previous}, {previous} : tensor<4xf32>")
        previous = f"%{i}"
    lines += [f"  return {previous} : tensor<4xf32>", "}"]
    path = tmp_path / "chain.mlir"
    path.write_text("\n".join(lines) + "\n")
    return path


def _fake_dot(tmp_path: Path, seconds: float) -> dict[str, str]:
    """An environment whose `dot` sleeps, then prints an SVG: renders of a known duration."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dot = bin_dir / "dot"
    dot.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {seconds}\necho '<svg/>'\n")
    dot.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_dash_output_is_stdout_not_a_file_named_dash(tmp_path: Path):
    result = _graph(str(HLO), "--format", "dot", "-o", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("digraph convcanon {")
    assert not (tmp_path / "-").exists()


@requires_dot
def test_format_follows_the_output_extension(tmp_path: Path):
    for name, magic in (("g.png", b"\x89PNG"), ("g.dot", b"digraph"), ("g.svg", b"<?xml")):
        result = _graph(str(HLO), "-o", str(tmp_path / name))
        assert result.returncode == 0, result.stderr
        assert (tmp_path / name).read_bytes().startswith(magic), name


def test_format_contradicting_the_extension_is_a_usage_error(tmp_path: Path):
    result = _graph(str(HLO), "--format", "svg", "-o", str(tmp_path / "g.png"))
    assert result.returncode == 2
    assert "--format svg contradicts the output name" in result.stderr
    assert not (tmp_path / "g.png").exists()


def test_unknown_extension_without_format_is_a_usage_error(tmp_path: Path):
    result = _graph(str(HLO), "-o", str(tmp_path / "g.pdf"))
    assert result.returncode == 2
    assert "cannot tell the graph format from" in result.stderr and "--format" in result.stderr
    assert not (tmp_path / "g.pdf").exists()


def test_chain_of_3000_ops_is_refused_before_graphviz_runs(tmp_path: Path):
    chain = _chain(tmp_path, 3000)
    out = tmp_path / "g.svg"
    result = _graph(str(chain), "-o", str(out), env=_fake_dot(tmp_path, 30))  # 30 s if it ran
    assert result.returncode == 1
    assert result.stderr.startswith(f"{chain}: error: the graph has 3002 nodes (3002 input)")
    assert "over the limit of 1500" in result.stderr and "--max-nodes" in result.stderr
    assert not out.exists()


def test_node_limit_is_an_option_and_dot_text_has_none(tmp_path: Path):
    chain = _chain(tmp_path, 30)
    refused = _graph(str(chain), "--max-nodes", "10", "-o", str(tmp_path / "g.svg"))
    assert refused.returncode == 1 and "over the limit of 10" in refused.stderr
    dot = _graph(str(chain), "--max-nodes", "10", "-o", str(tmp_path / "g.dot"))
    assert dot.returncode == 0, dot.stderr


def test_render_past_its_timeout_is_stopped_with_a_message(tmp_path: Path):
    out = tmp_path / "g.svg"
    result = _graph(str(HLO), "--timeout", "1.5", "-o", str(out), env=_fake_dot(tmp_path, 20))
    assert result.returncode == 1
    assert "Graphviz did not finish within 1.5 s (--timeout)" in result.stderr
    assert not out.exists()


def test_render_longer_than_a_second_says_so_on_stderr(tmp_path: Path):
    out = tmp_path / "g.svg"
    result = _graph(str(HLO), "-o", str(out), env=_fake_dot(tmp_path, 1.5))
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("graph: rendering ") and "nodes as svg with Graphviz" in lines[0]
    assert lines[1].startswith("graph: rendered in ")
    assert out.read_text().strip() == "<svg/>"


@requires_dot
def test_quick_render_prints_nothing_on_stderr(tmp_path: Path):
    result = _graph(str(HLO), "-o", str(tmp_path / "g.svg"))
    assert result.returncode == 0 and result.stderr == ""


@requires_dot
def test_graphviz_memory_is_bounded(tmp_path: Path):
    result = _graph(str(HLO), "--memory-limit", "1MiB", "-o", str(tmp_path / "g.svg"))
    assert result.returncode == 1
    assert "memory limit of 1048576 bytes (--memory-limit)" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_graph_leaves_no_renderer_running(tmp_path: Path):
    """Graphviz is a child of `graph`: a `graph` stopped mid-render takes it along (a `dot`
    that never ends stands in for a layout that takes hours)."""
    fake = tmp_path / "bin" / "dot"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec sleep 1000\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    argv = [*CLI, "graph", str(HLO), "-o", str(tmp_path / "g.svg"), "--timeout", "600"]
    assert children_outlive_a_stop(argv, "sleep", env) == [], "dot outlived graph"
    assert not (tmp_path / "g.svg").exists()


F8_CONV = """func.func @main(%x: tensor<1x8x8x4xf8E8M0FNU>, %w: tensor<3x3x4x4xf8E8M0FNU>) -> tensor<1x8x8x4xf8E8M0FNU> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x4xf8E8M0FNU>, tensor<3x3x4x4xf8E8M0FNU>) -> tensor<1x8x8x4xf8E8M0FNU>
  return %0 : tensor<1x8x8x4xf8E8M0FNU>
}
"""  # noqa: E501


def test_a_pipeline_error_in_graph_is_placed_as_convcanon_opt_places_it(tmp_path: Path):
    """graph marks the input ops' locations to find them after the pipeline: the mark must not
    move an error (it was `m.mlir: error:` with a note at `-:2:8`)."""
    source = tmp_path / "m.mlir"
    source.write_text(F8_CONV)
    argv = [str(source), "-p", "stablehlo-canonicalize-conv", "-o", str(tmp_path / "g.dot")]
    result = subprocess.run([*CLI, "graph", *argv], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert without_source_lines(result.stderr) == (
        f"{source}:2:8: error: EUET001: element type f8E8M0FNU of the convolution's lhs cannot"
        " be zero-padded\n"
    )
    assert not (tmp_path / "g.dot").exists()
