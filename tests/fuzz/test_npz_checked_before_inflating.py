"""`run --inputs`: an npz member the entry does not take, or one whose header disagrees with its
parameter, is refused from the zip directory and the `.npy` headers, before anything is inflated.

A 400 MB member that deflates to a few hundred KB used to be inflated (and copied) before its
name was looked at: 850 MB peak for `unexpected input(s) junk`. The child's peak memory is what
these tests bound, not a time.
"""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from . import sources

HUGE_FLOATS = 100_000_000  # 400 MB of float32 zeros, ~400 KB deflated
PEAK_BOUND_KIB = 300 * 1024  # far below the member; generous above the CLI's own start-up

ADD = (
    "func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {\n"
    "  %0 = stablehlo.add %a, %b : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"
)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npz_with_huge_member(members: dict[str, np.ndarray], huge_name: str, huge_count: int) -> bytes:
    """An npz of `members` plus `huge_name`.npy: float32 zeros[huge_count], deflated as it is
    written (the inflated member is never held in memory)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (huge_count,)}
    )
    zeros = bytes(1 << 20)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in members.items():
            archive.writestr(zip_member(f"{name}.npy"), _npy(array))
        with archive.open(zip_member(f"{huge_name}.npy"), "w", force_zip64=True) as member:
            member.write(header.getvalue())  # magic, version, length and the dict
            left = huge_count * 4
            while left:
                chunk = zeros[: min(len(zeros), left)]
                member.write(chunk)
                left -= len(chunk)
    return buffer.getvalue()


def zip_member(filename: str) -> zipfile.ZipInfo:
    """A deflated member with a fixed date, so the same members make the same bytes."""
    info = zipfile.ZipInfo(filename, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def run_measured(argv: list[str]) -> tuple[int, str, str, int]:
    """Run `convcanon ARGV` in a child of a child: (exit code, stdout, stderr, its peak RSS in
    KiB).

    The middle process has no other children, so RUSAGE_CHILDREN is the CLI's alone.
    """
    probe = (
        "import resource, subprocess, sys\n"
        "cli = 'import sys; from convcanon.cli import main; sys.exit(main(sys.argv[1:]))'\n"
        "done = subprocess.run([sys.executable, '-c', cli, *sys.argv[1:]],"
        " capture_output=True, text=True)\n"
        "sys.stderr.write(done.stderr)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(done.returncode, peak)\n"
        "print(done.stdout, end='')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
    )
    first, _, stdout = done.stdout.partition("\n")
    code, peak = first.split()
    return int(code), stdout, done.stderr, int(peak)


def _module(kind: str, tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """A module and the two inputs it takes: StableHLO, or the migraphx fixture program."""
    path = tmp_path / "m.mlir"
    if kind == "stablehlo":
        path.write_text(ADD)
        return path, {"arg0": np.ones(2, np.float32), "arg1": np.ones(2, np.float32)}
    path.write_text(sources.migraphx_text())
    with np.load(io.BytesIO(sources.migraphx_inputs())) as stored:
        return path, {name: stored[name] for name in stored.files}


@pytest.mark.parametrize("kind", ["stablehlo", "migraphx"])
def test_an_unexpected_huge_member_is_refused_before_inflating(kind: str, tmp_path: Path):
    module, members = _module(kind, tmp_path)
    npz = tmp_path / "x.npz"
    npz.write_bytes(npz_with_huge_member(members, "junk", HUGE_FLOATS))
    assert npz.stat().st_size < 4 << 20  # highly compressible: the zip is small

    code, _, stderr, peak = run_measured(["run", str(module), "--inputs", str(npz)])

    assert code == 1, stderr
    assert "Traceback" not in stderr
    assert "unexpected" in stderr and "junk" in stderr, stderr
    assert peak < PEAK_BOUND_KIB, f"peak RSS {peak} KiB"


def test_a_huge_member_with_the_wrong_shape_is_refused_before_inflating(tmp_path: Path):
    module, members = _module("stablehlo", tmp_path)
    npz = tmp_path / "x.npz"
    npz.write_bytes(npz_with_huge_member({"arg0": members["arg0"]}, "arg1", HUGE_FLOATS))

    code, _, stderr, peak = run_measured(["run", str(module), "--inputs", str(npz)])

    assert code == 1, stderr
    assert f"input arg1 is float32[{HUGE_FLOATS}] but @main expects f32[2]" in stderr, stderr
    assert peak < PEAK_BOUND_KIB, f"peak RSS {peak} KiB"


def test_the_right_members_still_run(tmp_path: Path):
    module, members = _module("stablehlo", tmp_path)
    npz = tmp_path / "x.npz"
    np.savez(npz, arg0=np.array([1.0, 2.0], np.float32), arg1=np.array([3.0, 5.0], np.float32))

    code, stdout, stderr, _ = run_measured(["run", str(module), "--inputs", str(npz)])

    assert code == 0, stderr
    assert "main: ok" in stdout and "first [4, 7]" in stdout, stdout
