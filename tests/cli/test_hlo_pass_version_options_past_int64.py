"""`target=X.Y.Z` of StableHLO's version passes (vhlo-to-version, stablehlo-compatibility-
expander) with a number past int64: StableHLO checks the form, then aborts the process reading
the number (`LLVM ERROR: failed to parse version number`, SIGABRT). It is refused before the
pass runs, as LLVM's option parser refuses an integer out of range: a usage error, nothing
written. A number within int64 still reaches the pass (its own error when past the current
version)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

OPT = [sys.executable, "-c", "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"]
VHLO = (
    "module {\n"
    "  vhlo.func_v1 @main(%a: !vhlo.tensor_v1<4x!vhlo.f32_v1>) -> (!vhlo.tensor_v1<4x!vhlo.f32_v1>)"
    ' {\n    "vhlo.return_v1"(%a) : (!vhlo.tensor_v1<4x!vhlo.f32_v1>) -> ()\n'
    "  } {arg_attrs = #vhlo.array_v1<[]>, res_attrs = #vhlo.array_v1<[]>, sym_visibility ="
    ' #vhlo.string_v1<"">, function_type = #vhlo.type_v1<!vhlo.func_v1<'
    "(!vhlo.tensor_v1<4x!vhlo.f32_v1>) -> !vhlo.tensor_v1<4x!vhlo.f32_v1>>>}\n}\n"
)
STABLEHLO = (
    "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %0 = stablehlo.abs %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
)


def _opt(tmp_path: Path, text: str, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    source = tmp_path / "in.mlir"
    source.write_text(text)
    out = tmp_path / "out.mlir"
    done = subprocess.run(
        [*OPT, str(source), *args, "-o", str(out)], capture_output=True, text=True, timeout=120
    )
    return done, out


@pytest.mark.parametrize(
    "pass_name, text", [("vhlo-to-version", VHLO), ("stablehlo-compatibility-expander", STABLEHLO)]
)
@pytest.mark.parametrize("version", ["99999999999999999999.0.0", "1.0.9223372036854775808"])
@pytest.mark.parametrize("as_flag", [False, True], ids=["-p", "flag"])
def test_a_version_number_past_int64_is_a_usage_error_not_an_abort(
    tmp_path: Path, pass_name: str, text: str, version: str, as_flag: bool
) -> None:
    args = (
        [f"--{pass_name}=target={version}"]
        if as_flag
        else ["-p", f"{pass_name}{{target={version}}}"]
    )
    done, out = _opt(tmp_path, text, *args)
    number = max(version.split("."), key=int)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: pass '{pass_name}{{target={version}}}': target={version}: version number"
        f" {number} does not fit in int64\n",
    )
    assert not out.exists()


def test_a_version_number_within_int64_reaches_the_pass(tmp_path: Path) -> None:
    done, out = _opt(tmp_path, VHLO, "-p", "vhlo-to-version{target=9223372036854775807.0.0}")
    assert done.returncode == 1, done.stderr
    assert "error: target version 9223372036854775807.0.0 is greater than current version" in (
        done.stderr
    )
    assert not out.exists()
