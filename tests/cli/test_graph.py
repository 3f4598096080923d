"""`convcanon graph` renders both halves' modules before/after a pass, highlighting what changed."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from convcanon.graph import Node, added_nodes

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "import sys; from convcanon.cli import main; sys.exit(main())"]
HLO = REPO / "examples" / "small_cnn.stablehlo.mlir"
MIGRAPHX = REPO / "bench" / "migraphx" / "nhwc_resblock.mlir"


def _graph(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "graph", *args], capture_output=True, text=True)


def test_added_ops_are_those_left_after_matching_by_kind():
    before = [Node("a", "stablehlo.convolution", "T", ()), Node("b", "stablehlo.add", "T", ())]
    after = [
        Node("x", "stablehlo.pad", "P", ()),
        Node("y", "stablehlo.convolution", "T", ("x",)),
        Node("z", "stablehlo.add", "T", ()),
        Node("w", "stablehlo.add", "T", ()),
    ]
    assert added_nodes(before, after) == {"x", "w"}


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


def test_hlo_graph_renders_valid_svg(tmp_path: Path):
    out = tmp_path / "g.svg"
    result = _graph(str(HLO), "-p", "stablehlo-canonicalize-conv{gate=general}", "-o", str(out))
    assert result.returncode == 0, result.stderr
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    assert "stablehlo.pad" in out.read_text()


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
