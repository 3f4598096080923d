"""Random values for every option of every pass, through `convcanon-opt` and the Python API.

Both read one declaration per pass, so they must agree: a set of values one accepts the other
accepts, and then both write the same module; a set one refuses the other refuses, with the same
message, naming the first bad option and the range it takes. The CLI refuses with exit 2, one
line on stderr and no output file.
"""

from __future__ import annotations

import contextlib
import io
import math
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

import convcanon
from convcanon.cli import opt_main
from convcanon.diagnostics import UsageError
from convcanon.hlo.gate import ConvOptions
from convcanon.options import OptionSpec, OptionTypeError, spelling
from convcanon.pipeline import PASSES, describe_passes

from . import sources


def _lower(text: str, options: dict[str, Any]) -> str:
    module = convcanon.lower_to_tosa(convcanon.parse_module(text), **options)
    return convcanon.print_module(module)


# pass -> (its input module, the Python API's run of it with keyword options)
RUNS: dict[str, tuple[Callable[[], str], Callable[[str, dict[str, Any]], str]]] = {
    "stablehlo-canonicalize-conv": (
        sources.STABLEHLO.read_text,
        lambda text, kw: convcanon.canonicalize_conv(text, "stablehlo", **kw).text,
    ),
    "canonicalize-conv": (
        sources.mhlo_text,
        lambda text, kw: convcanon.canonicalize_conv(text, "mhlo", **kw).text,
    ),
    "migraphx-to-tosa": (sources.migraphx_text, _lower),
}


def test_every_pass_with_options_is_run_here() -> None:
    assert {name for name, info in PASSES.items() if info.options} == set(RUNS)


def test_numeric_options_take_what_their_help_says() -> None:
    numeric = {
        spec.name: (spec.kind, spec.minimum)
        for info in PASSES.values()
        for spec in info.options
        if spec.kind in (int, float)
    }
    assert numeric == {
        "max-window-param": (int, 1),
        "max-phases": (int, 1),
        "max-mac-ratio": (float, 1),
    }
    assert "max-phases=<integer >= 1> (default 64)" in describe_passes()
    assert "max-mac-ratio=<number >= 1> (default 2.0)" in describe_passes()


def test_help_lists_every_option_with_its_values_and_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        opt_main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse rewraps the epilog's lines
    for info in PASSES.values():
        for spec in info.options:
            assert f"{spec.name}=<{spec.values}> (default {spelling(spec.default)})" in shown


def _is_pipeline_word(text: str) -> bool:
    """Text a pipeline can carry as one option value: no separator, brace, quote (MLIR's pass
    option parser groups and drops quotes) or space."""
    return not any(
        c in "{},='\"" or c.isspace() or unicodedata.category(c).startswith(("C", "Z"))
        for c in text
    )


_WORDS = st.text(st.characters(blacklist_categories=("C", "Z")), max_size=12).filter(
    _is_pipeline_word
)


def _typed_values(spec: OptionSpec) -> st.SearchStrategy[object]:
    """Values of the option's own Python type, in and out of its range."""
    if spec.kind is bool:
        return st.booleans()
    if spec.kind is int:
        return st.integers(1, 100) | st.integers(-3, 3) | st.integers(-(2**70), 2**70)
    if spec.kind is float:
        finite = st.floats(1, 1e6) | st.integers(1, 3)
        return finite | st.floats() | st.integers(-3, 0) | st.sampled_from([math.nan, math.inf])
    return st.sampled_from(spec.choices) | st.sampled_from(spec.choices) | _WORDS


def _valid(spec: OptionSpec, value: object) -> bool:
    """The documented range, written out here and not taken from the parser: an integer option
    is an int64, as mlir-opt declares it."""
    if spec.choices:
        return value in spec.choices
    if isinstance(value, bool):
        return True
    if isinstance(value, int) and value > 2**63 - 1:
        return False
    if spec.minimum is None:
        return True
    assert isinstance(value, int | float)
    return math.isfinite(value) and value >= spec.minimum


@st.composite
def _pass_and_options(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    name = draw(st.sampled_from(sorted(RUNS)))
    chosen = draw(st.lists(st.sampled_from(PASSES[name].options), unique=True))
    return name, {spec.keyword: draw(_typed_values(spec)) for spec in chosen}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("option-inputs")
    paths = {}
    for name, (text, _) in RUNS.items():
        paths[name] = work / f"{name}.mlir"
        paths[name].write_text(text())
    return paths


def _cli(pass_name: str, options: dict[str, object], path: Path) -> tuple[int, str, str | None]:
    """`convcanon-opt PATH -p 'pass{opt=v ...}' -o OUT` in-process: exit, stderr, OUT or None."""
    tokens = " ".join(f"{key.replace('_', '-')}={spelling(v)}" for key, v in options.items())
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.mlir"
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = opt_main([str(path), "-p", f"{pass_name}{{{tokens}}}", "-o", str(out)])
        return code, err.getvalue(), out.read_text() if out.exists() else None


def _spec(pass_name: str, keyword: str) -> OptionSpec:
    (spec,) = (s for s in PASSES[pass_name].options if s.keyword == keyword)
    return spec


@settings(max_examples=sources.examples(60), deadline=None)
@given(case=_pass_and_options())
@example(case=("stablehlo-canonicalize-conv", {"max_phases": -1}))
@example(case=("stablehlo-canonicalize-conv", {"merge_phases": "pad-kernel", "max_mac_ratio": -1}))
@example(case=("stablehlo-canonicalize-conv", {"max_mac_ratio": math.nan}))
@example(case=("stablehlo-canonicalize-conv", {"max_mac_ratio": math.inf}))
@example(case=("canonicalize-conv", {"max_window_param": 0, "gate": "general"}))
@example(case=("migraphx-to-tosa", {"types": "native"}))
@example(case=("migraphx-to-tosa", {"types": "exotic"}))
@example(case=("canonicalize-conv", {"gate": ")"}))  # a paren in braces is a value
@example(case=("canonicalize-conv", {"gate": "("}))
@example(case=("canonicalize-conv", {"gate": "'"}))  # a quote that never closes is a value
@example(case=("canonicalize-conv", {"max_window_param": 2**63}))  # past int64
@example(case=("canonicalize-conv", {"max_phases": 2**63, "max_window_param": 0}))
def test_cli_and_api_accept_and_refuse_the_same_values(
    case: tuple[str, dict[str, object]], inputs: dict[str, Path]
) -> None:
    pass_name, options = case
    code, stderr, written = _cli(pass_name, options, inputs[pass_name])
    bad = [k for k, v in options.items() if not _valid(_spec(pass_name, k), v)]
    run_api = RUNS[pass_name][1]
    event("accepted" if not bad else "refused")
    if not bad:
        assert code == 0, stderr
        assert written == run_api(inputs[pass_name].read_text(), options) + "\n"
        return
    with pytest.raises(UsageError) as refused:
        run_api(inputs[pass_name].read_text(), options)
    assert not isinstance(refused.value, OptionTypeError)
    first = _spec(pass_name, bad[0])
    message = str(refused.value)
    assert message.startswith(f"{pass_name}: option '{first.name}' must be ")
    assert message.endswith(f"; got {spelling(options[bad[0]])!r}")
    assert (code, stderr, written) == (2, f"error: {message}\n", None)


def _wrong_values(spec: OptionSpec) -> st.SearchStrategy[object]:
    """Values of every other Python type (an int is a float option's own type)."""
    kinds: dict[type, st.SearchStrategy[object]] = {
        bool: st.booleans(),
        int: st.integers(-3, 3) | st.integers(),
        float: st.floats(),
        str: _WORDS,
    }
    others = [strategy for kind, strategy in kinds.items() if kind is not spec.kind]
    if spec.kind is float:
        others.remove(kinds[int])
    return st.one_of(st.none(), st.lists(st.integers(0, 9), max_size=2), *others)


@settings(max_examples=sources.examples(60), deadline=None)
@given(data=st.data())
def test_api_refuses_a_value_of_the_wrong_type_as_the_cli_refuses_its_text(
    data: st.DataObject, inputs: dict[str, Path]
) -> None:
    pass_name = data.draw(st.sampled_from(sorted(RUNS)))
    spec = data.draw(st.sampled_from(PASSES[pass_name].options))
    value = data.draw(_wrong_values(spec))
    with pytest.raises(OptionTypeError) as refused:
        RUNS[pass_name][1](inputs[pass_name].read_text(), {spec.keyword: value})
    assert isinstance(refused.value, TypeError)
    message, suffix = str(refused.value), f" (a {type(value).__name__})"
    assert message.startswith(f"{pass_name}: option '{spec.name}' must be ")
    assert message.endswith(suffix)
    if not _is_pipeline_word(spelling(value)):
        return  # the CLI cannot write this value
    code, stderr, _ = _cli(pass_name, {spec.keyword: value}, inputs[pass_name])
    if code != 0:  # `8` is text the CLI reads as an integer; `None` is not
        assert (code, stderr) == (2, f"error: {message.removesuffix(suffix)}\n")


def test_a_pass_called_directly_checks_its_mapping() -> None:
    with pytest.raises(UsageError, match="option 'max-phases' must be an integer >= 1; got '0'"):
        ConvOptions.from_mapping({"max-phases": 0})
    with pytest.raises(UsageError, match="unknown option 'max_phases'"):
        ConvOptions.from_mapping({"max_phases": 8})  # the mapping uses the pipeline's names
    assert ConvOptions.from_mapping({"max-mac-ratio": 3}).max_mac_ratio == 3.0


@pytest.mark.parametrize("value", [1 << 63, 10**30])
def test_an_integer_option_past_int64_is_refused_as_mlir_opt_refuses_it(
    value: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """mlir-opt declares integer pass options int64: a larger value is refused, not held."""
    text = sources.STABLEHLO.read_text()
    bound = f"must be an integer >= 1 and <= {(1 << 63) - 1}; got '{value}'"
    with pytest.raises(UsageError, match=bound):
        convcanon.canonicalize_conv(text, max_phases=value)
    pipeline = f"stablehlo-canonicalize-conv{{max-phases={value}}}"
    assert opt_main([str(sources.STABLEHLO), "-p", pipeline]) == 2
    assert bound in capsys.readouterr().err
    assert convcanon.canonicalize_conv(text, max_phases=(1 << 63) - 1).stats["convs-seen"] > 0


def test_text_for_a_number_is_a_type_error_though_the_cli_reads_the_same_text() -> None:
    with pytest.raises(TypeError, match=r"must be an integer >= 1; got '8' \(a str\)$"):
        convcanon.canonicalize_conv(sources.STABLEHLO.read_text(), max_phases="8")


@pytest.mark.parametrize(
    ("option", "text"),
    [
        ("max-phases", "1_000"),
        ("max-phases", "\u0663"),  # ARABIC-INDIC DIGIT THREE: Python's int reads it as 3
        ("max-phases", "0x10"),
        ("max-phases", "1e3"),
        ("max-mac-ratio", "1_0"),
        ("max-mac-ratio", "\u0662.5"),
    ],
)
def test_a_number_not_in_ascii_decimal_digits_is_refused(
    option: str, text: str, inputs: dict[str, Path]
) -> None:
    """As in mlir-opt: `int` and `float` take `1_000` and other scripts' digits; options do not."""
    path = inputs["stablehlo-canonicalize-conv"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = opt_main([str(path), "-p", f"stablehlo-canonicalize-conv{{{option}={text}}}"])
    what = "an integer >= 1" if option == "max-phases" else "a finite number >= 1"
    assert (code, err.getvalue()) == (
        2,
        f"error: stablehlo-canonicalize-conv: option '{option}' must be {what}; got {text!r}\n",
    )


def test_an_integer_of_five_thousand_digits_is_refused_not_a_traceback(
    inputs: dict[str, Path],
) -> None:
    text = "9" * 5000  # past Python's int conversion limit of 4300 digits
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = opt_main(
            [
                str(inputs["stablehlo-canonicalize-conv"]),
                "-p",
                f"stablehlo-canonicalize-conv{{max-phases={text}}}",
            ]
        )
    assert code == 2
    assert err.getvalue().startswith(
        "error: stablehlo-canonicalize-conv: option 'max-phases' must be"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--seed", "1_0"],
        ["--trials", "9" * 5000],
        ["--trials", "\u0663"],
        ["--batch-sizes", "1,2_0"],
        ["--seed", "0x1"],
        ["--timeout", "1_0"],
    ],
)
def test_a_count_not_in_ascii_decimal_digits_is_a_usage_error(argv: list[str]) -> None:
    from convcanon.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["verify", str(sources.STABLEHLO), str(sources.STABLEHLO), *argv])
    assert code == 2
    assert f"argument {argv[0]}: must be" in err.getvalue()
