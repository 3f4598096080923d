"""`--input-hlo` on HLO that makes XLA abort the process: a one-line diagnostic, never a SIGABRT."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from convcanon.child_process import native_failure_message

OPT = [sys.executable, "-c", "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"]

PARAMETER_7 = """HloModule m

ENTRY main {
  a = f32[2] parameter(0)
  b = f32[2] parameter(7)
  ROOT c = f32[2] add(a, b)
}
"""
TUPLE_ELEMENT_OF_ARRAY = """HloModule m

ENTRY main {
  a = f32[2] parameter(0)
  ROOT c = f32[2] get-tuple-element(a), index=0
}
"""


@pytest.mark.parametrize(
    "hlo, message",
    [
        (PARAMETER_7, "Check failed: param_no >= 0 && param_no < parameter_count"),
        (TUPLE_ELEMENT_OF_ARRAY, "LLVM ERROR: Failed to infer result type(s)."),
    ],
    ids=["parameter(7) of 2", "get-tuple-element of an array"],
)
def test_xla_abort_is_a_one_line_diagnostic(tmp_path: Path, hlo: str, message: str):
    source = tmp_path / "bad.hlo"
    source.write_text(hlo)
    out = tmp_path / "out.mlir"
    result = subprocess.run(
        [*OPT, "--input-hlo", str(source), "-o", str(out)], capture_output=True, text=True
    )
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{source}: error: XLA's HLO reader was killed by SIGABRT: ")
    assert message in lines[0]
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.hlo"]


def test_native_failure_message_drops_log_prefixes_and_stack_traces():
    stderr = (
        "F1201 07:31:09.206196    9276 hlo_computation.cc:188] Check failed: param_no >= 0 \n"
        "ERROR: invalid parameter number. Expected [0, 2), got 7\n"
        "*** Check failure stack trace: ***\n"
        "    @     0x7f1d7abf0634  absl::log_internal::LogMessage::SendToLog()\n"
    )
    assert native_failure_message(stderr) == (
        "Check failed: param_no >= 0; ERROR: invalid parameter number. Expected [0, 2), got 7"
    )
    assert native_failure_message("") == "no message"
    assert len(native_failure_message("x" * 10_000)) == 400


def test_hlo_input_is_bounded_like_every_input(tmp_path: Path):
    source = tmp_path / "big.hlo"
    source.write_text(PARAMETER_7 + " " * 2000)
    result = subprocess.run(
        [*OPT, "--input-hlo", str(source), "--max-input-size", "1KiB"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"{source}: error: input is 2")
    assert "over the input size limit of 1024 bytes" in result.stderr


def test_hlo_reader_that_never_finishes_is_killed_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convcanon.diagnostics import ConvcanonError
    from convcanon.hlo import hlo_import

    hanging = tmp_path / "python"  # stands in for the interpreter the reader runs in
    hanging.write_text("#!/bin/sh\nexec sleep 60\n")
    hanging.chmod(0o755)
    monkeypatch.setattr(hlo_import, "HLO_READER_TIMEOUT", 0.5)
    monkeypatch.setattr(hlo_import, "python_argv", lambda call: [str(hanging)])
    with pytest.raises(ConvcanonError) as info:
        hlo_import.hlo_bytes_to_bytecode_isolated(PARAMETER_7.encode(), "slow.hlo")
    assert info.value.render() == "slow.hlo: error: XLA's HLO reader did not finish in 0.5 s"
