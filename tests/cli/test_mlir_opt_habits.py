"""mlir-opt's habits in convcanon-opt, checked against iree-opt (a real mlir-opt) where it can do
the same: MLIR's passes in `-p` beside ours, `--list-passes`, `--dump-pass-pipeline`, the IR
dumps and the timing report, `--mlir-elide-elementsattrs-if-larger`,
`--allow-unregistered-dialect`, and one `-o`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import CNN, MIGRAPHX_EXP, Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GENERAL = "stablehlo-canonicalize-conv{gate=general}"
TWICE = (
    "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n"
    "  %1 = stablehlo.add %a, %a : tensor<4xf32>\n"
    "  %2 = stablehlo.multiply %0, %1 : tensor<4xf32>\n"
    "  return %2 : tensor<4xf32>\n}\n"
)
# A stride-2 conv fed by an op of a dialect nobody registers, and a constant of 5 elements.
UNREGISTERED = (
    "func.func @main(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<1x4x4x4xf32> {\n"
    '  %t = "mydialect.tag"(%x) {note = "keep me"} : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32>\n'
    "  %0 = stablehlo.convolution(%t, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
    " window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64,"
    " feature_group_count = 1 : i64} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>)"
    " -> tensor<1x4x4x4xf32>\n"
    "  %c = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>\n"
    '  "other.sink"(%c) : (tensor<5xf32>) -> ()\n'
    "  return %0 : tensor<1x4x4x4xf32>\n}\n"
)


@pytest.fixture
def twice(tmp_path: Path) -> Path:
    """TWICE, in a file."""
    (path := tmp_path / "twice.mlir").write_text(TWICE)
    return path


def test_mlir_passes_run_in_order_beside_ours(opt: Runner, tmp_path: Path) -> None:
    """Ours, then canonicalize and cse: what iree-opt's canonicalize,cse make of our output."""
    ours = tmp_path / "ours.mlir"
    assert opt(CNN, "-p", GENERAL, "-o", ours).code == 0
    mixed = opt(CNN, "-p", f"{GENERAL},canonicalize,cse")
    assert mixed.code == 0, mixed.err
    theirs = iree_opt(ours, "--pass-pipeline=builtin.module(canonicalize,cse)")
    assert mixed.out.rstrip() == theirs.stdout.rstrip()
    assert mixed.out != ours.read_text()  # the MLIR passes did something


def test_the_order_of_the_pipeline_is_kept(opt: Runner) -> None:
    """cse first leaves the rewrite's pads and slices for the conv pass to make after it."""
    first = opt(CNN, "-p", f"cse,{GENERAL}")
    last = opt(CNN, "-p", f"{GENERAL},cse")
    assert first.code == last.code == 0
    assert first.out != last.out


def test_a_nested_pipeline_and_pass_options_reach_mlir(opt: Runner, twice: Path) -> None:
    result = opt(twice, "-p", "canonicalize{max-iterations=2},func.func(cse)")
    assert result.code == 0, result.err
    assert result.out.count("stablehlo.add") == 1


@pytest.mark.parametrize(
    ("pipeline", "words"),
    [
        ("no-such-pass", "and the MLIR passes jaxlib registers (convcanon-opt --list-passes)"),
        ("canonicalize{no-such-option=1}", "no such option no-such-option"),
        ("canonicalize{max-iterations=x}", "'x' value invalid"),
    ],
)
def test_a_bad_mlir_pass_is_a_usage_error(
    opt: Runner, twice: Path, pipeline: str, words: str
) -> None:
    result = opt(twice, "-p", pipeline)
    assert result.code == 2 and result.out == ""
    assert words in result.err and result.err.count("\n") == 1


def test_list_passes_names_ours_and_mlir_s(opt: Runner) -> None:
    result = opt("--list-passes", "/no/such/input")
    assert result.code == 0, result.err
    for name in ("stablehlo-canonicalize-conv", "migraphx-to-tosa", "canonicalize", "cse"):
        assert f"\n  --{name} " in result.out
    for name in ("symbol-dce", "inline"):
        assert f"\n  --{name} " in result.out
    assert "    --max-phases=<integer >= 1>" in result.out
    assert "    --max-iterations" in result.out  # canonicalize's, as jaxlib prints it


def test_dump_pass_pipeline_is_mlir_opt_s(opt: Runner, twice: Path) -> None:
    pipeline = "canonicalize,func.func(cse),symbol-dce"
    ours = opt(twice, "-p", pipeline, "--dump-pass-pipeline")
    assert ours.code == 0, ours.err
    theirs = iree_opt(twice, f"--pass-pipeline=builtin.module({pipeline})", "--dump-pass-pipeline")
    assert ours.err == theirs.stderr


def test_dump_pass_pipeline_spells_our_options(opt: Runner, twice: Path) -> None:
    result = opt(twice, "-p", f"{GENERAL},cse", "--dump-pass-pipeline")
    assert result.err.startswith("Pass Manager with 2 passes:\nbuiltin.module(\n")
    assert " gate=general " in result.err and " engine=generic " in result.err


def test_ir_dumps_are_mlir_opt_s(opt: Runner, twice: Path) -> None:
    flags = ["--mlir-print-ir-after-all", "--mlir-print-ir-before=cse"]
    ours = opt(twice, "-p", "canonicalize,cse", *flags, "-o", "/dev/null")
    assert ours.code == 0, ours.err
    theirs = iree_opt(twice, "--pass-pipeline=builtin.module(canonicalize,cse)", *flags)
    assert ours.err == theirs.stderr


def test_ir_dumps_around_our_pass(opt: Runner) -> None:
    result = opt(CNN, "-p", f"{GENERAL},cse", "--mlir-print-ir-before=stablehlo-canonicalize-conv")
    headers = re.findall(r"^// -----// IR Dump (\w+) (\w+): ", result.err, re.M)
    assert headers == [("Before", "StablehloCanonicalizeConvPass")]
    dumped = result.err.split("//----- //\n", 1)[1]
    assert dumped.rstrip() == CNN.read_text().rstrip() or "stablehlo.pad" not in dumped


def test_print_ir_of_an_unknown_pass_is_a_usage_error(opt: Runner, twice: Path) -> None:
    result = opt(twice, "-p", "cse", "--mlir-print-ir-after=no-such-pass")
    assert result.code == 2 and "unknown pass 'no-such-pass'" in result.err


def test_timing_report_is_mlir_opt_s_layout(opt: Runner, twice: Path) -> None:
    """Every line as iree-opt lays it out, times and shares aside (it also times an
    analysis)."""
    ours = opt(twice, "-p", "canonicalize,cse", "--mlir-timing", "-o", "/dev/null")
    assert ours.code == 0, ours.err
    theirs = iree_opt(
        twice,
        "--pass-pipeline=builtin.module(canonicalize,cse)",
        "--mlir-timing",
        "-o",
        "/dev/null",
    )

    def layout(report: str) -> list[str]:
        shares = (re.sub(r"\( *[\d.]+%\)", "(P%)", line) for line in report.splitlines())
        return [re.sub(r"\d+\.\d+", "N", line) for line in shares if "(A)" not in line]

    assert layout(ours.err) == layout(theirs.stderr)
    rows = re.findall(r"^ +[\d.]+ \( *[\d.]+%\)  (.+)$", ours.err, re.M)
    assert rows == ["Parser", "CanonicalizerPass", "CSEPass", "Output", "Rest", "Total"]


def test_timing_as_a_list_is_mlir_opt_s_layout(opt: Runner, twice: Path) -> None:
    """`--mlir-timing-display=list`: iree-opt's lines, times and shares aside, the timers merged
    by name (two cse runs are one row) with the root's, slowest first, then Rest and Total."""
    flags = ["--mlir-timing", "--mlir-timing-display=list", "-o", "/dev/null"]
    ours = opt(twice, "-p", "cse,canonicalize,cse", *flags)
    assert ours.code == 0, ours.err
    theirs = iree_opt(twice, "--pass-pipeline=builtin.module(cse,canonicalize,cse)", *flags)

    def rows(report: str) -> list[tuple[float, str]]:
        found = re.findall(r"^ +([\d.]+) \( *[\d.]+%\)  (.+)$", report, re.M)
        return [(float(seconds), name) for seconds, name in found if "(A)" not in name]

    def layout(report: str) -> list[str]:
        return [line for line in report.splitlines() if not re.match(r"^ +[\d.]+ \(", line)]

    assert [re.sub(r"\d+\.\d+", "N", line) for line in layout(ours.err)] == [
        re.sub(r"\d+\.\d+", "N", line) for line in layout(theirs.stderr)
    ]
    mine, iree = rows(ours.err), rows(theirs.stderr)
    assert sorted(name for _, name in mine) == sorted(name for _, name in iree)
    listed = mine[:-2]  # Rest and Total follow the list
    assert [name for _, name in mine[-2:]] == ["Rest", "Total"]
    assert listed[0][1] == "root" and listed[0][0] == mine[-1][0]
    assert [seconds for seconds, _ in listed] == sorted((s for s, _ in listed), reverse=True)


WRONG_RESULT = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<5xf32>
}
"""


def test_timing_is_reported_after_the_errors_of_a_failed_run(opt: Runner, tmp_path: Path) -> None:
    """mlir-opt prints its report at exit, also when parsing failed: the report was missing.
    Both layouts, times and shares aside, are iree-opt's."""

    def layout(report: str) -> list[str]:
        return [re.sub(r"\d+\.\d+( \( *[\d.]+%\))?", "N", line) for line in report.splitlines()]

    (tmp_path / "bad.mlir").write_text(WRONG_RESULT)
    for display in ("tree", "list"):
        flags = ["--mlir-timing", f"--mlir-timing-display={display}", "-o", "/dev/null"]
        ours = opt(tmp_path / "bad.mlir", *flags)
        theirs = iree_opt(tmp_path / "bad.mlir", *flags, check=False)
        assert ours.code == theirs.returncode == 1
        assert "Execution time report" in ours.err
        assert layout(ours.err) == layout(theirs.stderr)


def test_timing_names_our_pass(opt: Runner) -> None:
    result = opt(CNN, "-p", GENERAL, "--mlir-timing", "-o", "/dev/null")
    assert "  StablehloCanonicalizeConvPass\n" in result.err


def test_elided_elements_print_as_mlir_opt_prints_them(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "u.mlir"
    source.write_text(UNREGISTERED)
    flags = ["--allow-unregistered-dialect", "--mlir-elide-elementsattrs-if-larger=2"]
    ours = opt(source, *flags)
    assert ours.code == 0, ours.err
    assert "__elided__" in ours.out
    assert ours.out.rstrip() == iree_opt(source, *flags).stdout.rstrip()


def test_elision_on_migraphx_is_a_usage_error(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "exp.mlir"
    source.write_text(MIGRAPHX_EXP)
    result = opt(source, "--mlir-elide-elementsattrs-if-larger=2")
    assert result.code == 2 and "xDSL's printer" in result.err


def test_unregistered_ops_pass_through_untouched(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "u.mlir"
    source.write_text(UNREGISTERED)
    refused = opt(source, "-p", GENERAL)
    assert refused.code == 1 and "--allow-unregistered-dialect" in refused.err
    result = opt(source, "-p", GENERAL, "--allow-unregistered-dialect")
    assert result.code == 0, result.err
    assert '"mydialect.tag"(%arg0) {note = "keep me"}' in result.out
    assert '"other.sink"(' in result.out
    assert "stablehlo.pad" in result.out  # the conv was rewritten all the same
    assert "stride = [2, 2]" not in result.out
    # and upstream MLIR reads what we wrote
    written = tmp_path / "out.mlir"
    written.write_text(result.out)
    iree_opt(written, "--allow-unregistered-dialect")


def test_output_twice_is_a_usage_error(opt: Runner, cc: Runner, tmp_path: Path) -> None:
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    result = opt(CNN, "-o", a, "--output", b)
    assert result.code == 2 and "-o/--output given twice" in result.err
    assert not a.exists() and not b.exists()
    graph = cc("graph", CNN, "-o", tmp_path / "a.dot", "-o", tmp_path / "b.dot")
    assert graph.code == 2 and "given twice" in graph.err


def _error_lines(stderr: str) -> set[str]:
    """The `file:line:col: error: ...` lines (iree-opt adds the source line and a caret)."""
    return {line for line in stderr.splitlines() if re.match(r"\S+:\d+:\d+: error: ", line)}


_BAD_ADD = "  %{n} = stablehlo.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>"


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bad=st.integers(0, 5),
    place=st.sampled_from(["same", "plus", "minus", "above", "below"]),
    distance=st.integers(1, 3),
    aim=st.integers(-1, 1),
    text=st.sampled_from(["same shape", "requires the same shape for all", "nope", "Same"]),
    kind=st.sampled_from(["error", "warning", "remark"]),
    regex=st.booleans(),
    level=st.sampled_from(["", "=all", "=only-expected"]),
)
def test_verify_diagnostics_reads_expectations_as_iree_opt(
    opt: Runner,
    tmp_path: Path,
    bad: int,
    place: str,
    distance: int,
    aim: int,
    text: str,
    kind: str,
    regex: bool,
    level: str,
) -> None:
    """A function of six lines, one an op the verifier refuses, and an expectation placed on it
    or near it by each designator, checked at each level (`=only-expected` reports only what
    never came): our verdict and every error line are iree-opt's."""
    body = [f"  %{n} = stablehlo.add %a, %a : tensor<4xf32>" for n in range(6)]
    body[bad] = _BAD_ADD.format(n=bad)
    pattern = "{{[a-z]+}} shape" if regex else text
    comment = f"// expected-{kind}{'-re' if regex else ''}"
    lines = ["func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {", *body]
    target = 1 + bad + aim  # the line (0-based in `lines`) the expectation designates
    if place == "same":
        lines[min(max(target, 1), 6)] += f" {comment} {{{{{pattern}}}}}"
    elif place in ("plus", "minus"):
        where = max(target - distance, 0) if place == "plus" else target + distance
        offset = target - where
        sign = "+" if offset >= 0 else "-"
        lines.insert(where + (offset >= 0), f"  {comment} @{sign}{abs(offset)} {{{{{pattern}}}}}")
    elif place == "above":
        lines.insert(min(max(target, 0), 6) + 1, f"  {comment} @above {{{{{pattern}}}}}")
    else:
        lines.insert(min(max(target, 1), 6), f"  {comment} @below {{{{{pattern}}}}}")
    lines += ["  return %a : tensor<4xf32>", "}"]
    source = tmp_path / "v.mlir"
    source.write_text("\n".join(lines) + "\n")
    ours = opt(f"--verify-diagnostics{level}", source)  # a bare flag takes no argument
    theirs = iree_opt(source, f"--verify-diagnostics{level}", check=False)
    assert (ours.code, _error_lines(ours.err)) == (theirs.returncode, _error_lines(theirs.stderr))


@pytest.mark.parametrize("value", ["", "=", "=0", "=1", "=false", "=true", "=FALSE", "=maybe"])
def test_verify_each_takes_what_iree_opt_takes(opt: Runner, twice: Path, value: str) -> None:
    """`--verify-each[=BOOL]` (mlir-hlo's tests run `--verify-each=0`): the values iree-opt's
    option parser takes, and the module it prints with them."""
    flag = f"--verify-each{value}"
    theirs = iree_opt(twice, "--pass-pipeline=builtin.module(cse)", flag, check=False)
    ours = opt(twice, "-p", "cse", flag)
    assert (ours.code == 0) == (theirs.returncode == 0), (ours.err, theirs.stderr)
    if ours.code == 0:
        assert ours.out.strip() == theirs.stdout.strip()
    else:
        assert ours.code == 2 and "--verify-each" in ours.err


@pytest.mark.parametrize(("value", "verifies"), [("", True), ("=1", True), ("=0", False)])
def test_verify_each_reaches_mlir_s_pass_manager(
    opt: Runner, twice: Path, monkeypatch: pytest.MonkeyPatch, value: str, verifies: bool
) -> None:
    from convcanon.hlo import upstream

    asked: list[bool] = []
    real = upstream.pass_manager

    class Recorded:
        def __init__(self, item: str, context: object) -> None:
            self.manager = real(item, context)  # type: ignore[arg-type]

        def enable_verifier(self, on: bool) -> None:
            asked.append(on)
            self.manager.enable_verifier(on)

        def run(self, op: object) -> None:
            self.manager.run(op)  # type: ignore[arg-type]

        def __str__(self) -> str:  # the pipeline as the manager prints it
            return str(self.manager)

    monkeypatch.setattr(upstream, "pass_manager", Recorded)
    result = opt(twice, "-p", "cse,canonicalize", f"--verify-each{value}")
    assert result.code == 0, result.err
    assert asked == [verifies, verifies]


@pytest.mark.parametrize("name", ["cnn", "unregistered", "twice"])
def test_verify_roundtrip_passes_what_iree_opt_passes(
    opt: Runner, tmp_path: Path, twice: Path, name: str
) -> None:
    """`--verify-roundtrip` on modules whose printers and parsers round-trip: iree-opt and we
    accept each and print the same module after the pipeline."""
    source = {"cnn": CNN, "twice": twice}.get(name) or tmp_path / "u.mlir"
    if name == "unregistered":
        source.write_text(UNREGISTERED)
    flags = ["--verify-roundtrip", "--allow-unregistered-dialect", "-p", "cse"]
    ours = opt(source, *flags)
    assert ours.code == 0, ours.err
    theirs = iree_opt(source, *flags[:2], "--pass-pipeline=builtin.module(cse)")
    assert ours.out.strip() == theirs.stdout.strip()


@pytest.mark.parametrize("fault", ["unparsed", "textual", "bytecode"])
def test_verify_roundtrip_refuses_a_module_that_does_not_come_back(
    opt: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """A module whose printed form does not parse back (here: read without the unregistered
    ops it holds), or parses back to another module (here: one attribute more, read from text
    or from bytecode), fails the check at the module, before any pass; nothing is written."""
    from convcanon.hlo import io as hlo_io

    parse_back = hlo_io.parse_back

    def faulty(content: str | bytes, allow_unregistered: bool) -> object:
        if fault == "unparsed":
            return parse_back(content, False)
        module = parse_back(content, allow_unregistered)
        if isinstance(content, bytes) == (fault == "bytecode"):
            with module.context:
                module.operation.attributes["changed"] = hlo_io.ir.UnitAttr.get()
        return module

    (source := tmp_path / "u.mlir").write_text(UNREGISTERED)
    output = tmp_path / "out.mlir"
    monkeypatch.setattr(hlo_io, "parse_back", faulty)
    result = opt(source, "--allow-unregistered-dialect", "--verify-roundtrip", "-o", output)
    assert result.code == 1 and not output.exists()
    message = {
        "unparsed": "failed to parse textual content back, cannot verify round-trip.",
        "textual": "textual roundTrip testing roundtripped module differs from reference:",
        "bytecode": "bytecode roundTrip testing roundtripped module differs from reference:",
    }[fault]
    assert result.err.startswith(f"{source}: error: 'builtin.module' op {message}"), result.err
    if fault != "unparsed":
        assert "changed" in result.err.split("=====")[1]
    monkeypatch.undo()
    assert opt(source, "--allow-unregistered-dialect", "--verify-roundtrip", "-o", output).code == 0


def test_verify_roundtrip_is_a_usage_error_on_migraphx(opt: Runner, tmp_path: Path) -> None:
    (source := tmp_path / "exp.mlir").write_text(MIGRAPHX_EXP)
    result = opt(source, "--verify-roundtrip")
    assert result.code == 2 and "--verify-roundtrip checks HLO modules only" in result.err


FUNCTION = "func.func @f() {\n  return\n}\n"


@pytest.mark.parametrize(
    "text",
    [
        f"module {{\n{FUNCTION}}}\n",  # one module: as without the flag
        f"// a comment\n  module @named attributes {{x.y = 1 : i32}} {{\n{FUNCTION}}}\n",
        "",  # no op
        f"{FUNCTION}{FUNCTION.replace('@f', '@g')}",  # two functions
        "module {\n}\nmodule {\n}\n",  # two modules
        FUNCTION,  # one op, not a module
    ],
)
def test_no_implicit_module_reads_as_iree_opt(opt: Runner, tmp_path: Path, text: str) -> None:
    """`--no-implicit-module`: one top-level module reads and prints as iree-opt reads it; no
    op, or more than one, is iree-opt's error; one op that is not a module is the error
    iree-opt gives when a module's pipeline runs on it (convcanon-opt's pipelines are)."""
    (source := tmp_path / "m.mlir").write_text(text)
    ours = opt(source, "--no-implicit-module", "-p", "cse")
    theirs = iree_opt(
        source, "--no-implicit-module", "--pass-pipeline=builtin.module(cse)", check=False
    )
    assert (ours.code == 0) == (theirs.returncode == 0), (ours.err, theirs.stderr)
    if ours.code == 0:
        assert ours.out.strip() == theirs.stdout.strip()
        assert opt(source, "-p", "cse").out == ours.out  # as without the flag
    else:
        ours_says = ours.err.split(" error: ", 1)[1].split(" (convcanon-opt")[0].strip()
        assert ours_says in theirs.stderr, (ours.err, theirs.stderr)


def test_no_implicit_module_takes_bytecode_as_one_op(opt: Runner, tmp_path: Path) -> None:
    """Bytecode holds one top-level op, whatever the text it was written from held."""
    (source := tmp_path / "f.mlir").write_text(FUNCTION)
    bytecode = tmp_path / "f.mlirbc"
    assert opt(source, "--emit-bytecode", "-o", bytecode).code == 0
    result = opt(bytecode, "--no-implicit-module")
    assert result.code == 0, result.err
    assert "func.func @f()" in result.out


def test_no_implicit_module_is_a_usage_error_on_migraphx(opt: Runner, tmp_path: Path) -> None:
    (source := tmp_path / "exp.mlir").write_text(MIGRAPHX_EXP)
    result = opt(source, "--no-implicit-module")
    assert result.code == 2 and "--no-implicit-module checks HLO modules only" in result.err


@pytest.mark.parametrize(
    "flags",
    [
        ["--canonicalize", "--cse"],
        ["-cse", "-symbol-dce"],
        ["--canonicalize=max-iterations=2 region-simplify=disabled", "--dump-pass-pipeline"],
        ["--symbol-dce", "--canonicalize"],
    ],
    ids=["two", "one-dash", "options", "order"],
)
def test_mlir_passes_are_flags_as_in_mlir_opt(opt: Runner, twice: Path, flags: list[str]) -> None:
    """The passes --list-passes lists as `--NAME` are flags: they were unrecognized arguments.
    Output and the dumped pipeline are iree-opt's for the same flags."""
    ours = opt(twice, *flags)
    theirs = iree_opt(twice, *flags)
    assert ours.code == 0, ours.err
    assert (ours.out, ours.err) == (theirs.stdout, theirs.stderr)
