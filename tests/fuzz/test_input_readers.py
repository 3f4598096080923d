"""Every reader bounds what it reads: devices that never end, inputs over `--max-input-size` and
npz zip bombs are refused before they are read whole or inflated; odd npz members are diagnostics.

Commands that would read without bound run in a child with a 2 GiB address-space limit and a
timeout, so a reader that regresses fails its test instead of taking the machine's memory.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import tracemalloc
import zipfile
from pathlib import Path
from typing import IO

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import main
from convcanon.diagnostics import ConvcanonError
from convcanon.fileio.npz import open_npz
from convcanon.fileio.reading import read_input

MODULE = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n"
PROGRAM = "x = @param:x -> float_type, {2}, {1}\n@1 = @return(x)\n"
TESTS = Path(__file__).resolve().parents[1]
# The child limits its own address space first (no preexec_fn: forking a process that has
# loaded JAX's threads and then running Python in the child can deadlock).
ENTRY = (
    "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
    "import sys; {1}from convcanon.cli import {0}; sys.exit({0}())"
)
# ... and, to count what it reads from one file, wraps `open` before the command runs
COUNT_READS = "sys.path.insert(0, {0!r}); from _counting import count_reads_into; "
COUNT_READS += "count_reads_into({1!r}, {2!r}); "
LIMIT_HELP = "over the input size limit"


def _run(
    argv: list[str],
    *,
    opt: bool = False,
    stdin: IO[bytes] | None = None,
    data: bytes | None = None,
    prelude: str = "",
) -> subprocess.CompletedProcess[str]:
    entry = ENTRY.format("opt_main" if opt else "main", prelude)
    return subprocess.run(
        [sys.executable, "-c", entry, *argv],
        stdin=stdin,
        input=data.decode() if data is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _run_counting_reads(
    argv: list[str], path: str, *, opt: bool
) -> tuple[subprocess.CompletedProcess[str], int, int]:
    """`_run`, with the times the child opened `path` and the bytes it read from it."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "reads"
        result = _run(argv, opt=opt, prelude=COUNT_READS.format(str(TESTS), path, str(report)))
        opens, read = map(int, report.read_text().split())
    return result, opens, read


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"m.mlir": tmp_path / "m.mlir", "p.txt": tmp_path / "p.txt"}
    paths["m.mlir"].write_text(MODULE)
    paths["p.txt"].write_text(PROGRAM)
    return paths


READERS = [
    (True, ["{dev}"]),
    (False, ["run", "{dev}"]),
    (False, ["run", "{m.mlir}", "--inputs", "{dev}"]),
    (False, ["import-migraphx", "{dev}"]),
    (False, ["verify", "{m.mlir}", "{dev}"]),
    (False, ["explain", "{dev}"]),
    (False, ["graph", "{dev}", "--format", "dot", "-o", "{out}"]),
    (True, ["--input-hlo", "{dev}"]),
]


@pytest.mark.parametrize("opt, argv", READERS, ids=[" ".join(a) for _, a in READERS])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_endless_device_is_refused_without_reading_it(
    files: dict[str, Path], tmp_path: Path, opt: bool, argv: list[str], device: str
):
    args = [
        a.replace("{dev}", device)
        .replace("{m.mlir}", str(files["m.mlir"]))
        .replace("{out}", str(tmp_path / "g.dot"))
        for a in argv
    ]
    result, opens, read = _run_counting_reads(args, device, opt=opt)
    assert (opens, read) == (1, 1), result.stderr  # one byte tells endless from empty (/dev/null)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        f"{device}: error: is a character device, not a file (a device like /dev/zero never ends)\n"
    )
    assert not (tmp_path / "g.dot").exists()


def test_stdin_from_dev_zero_is_refused():
    with open("/dev/zero", "rb") as zero:
        result = _run(["-"], opt=True, stdin=zero)
    assert result.returncode == 1
    assert result.stderr.startswith("<stdin>: error: is a character device")


def test_dev_null_is_an_empty_input_not_an_endless_one():
    result = _run(["/dev/null"], opt=True)
    assert result.returncode == 0, result.stderr
    assert "module" in result.stdout


def test_stdin_over_the_limit_is_refused_after_reading_only_the_limit():
    result = _run(["--max-input-size", "1MiB"], opt=True, data=b"// comment\n" * 200_000)
    assert result.returncode == 1
    assert (
        result.stderr == f"<stdin>: error: input {LIMIT_HELP} of 1048576 bytes (--max-input-size)\n"
    )


def test_pipe_of_nul_bytes_is_refused_at_the_input_limit():
    producer = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE)
    try:
        result = _run(["-", "--max-input-size", "4MiB"], opt=True, stdin=producer.stdout)
    finally:
        producer.kill()
        producer.wait()
    assert result.returncode == 1
    assert result.stderr == (
        f"<stdin>: error: input {LIMIT_HELP} of {4 << 20} bytes (--max-input-size)\n"
    )


# MLIR's lexer takes a NUL byte between tokens as whitespace and keeps one in a string or a
# comment (mlir/lib/AsmParser/Lexer.cpp), and mlir-opt reads stdin as it reads a file
NUL_MODULE = MODULE.replace("  return", "  // a \0 comment\n  \0return").replace(
    "@main(", '@main(%b: tensor<2xf32> {x.y = "a\0b"}, '
)


@pytest.mark.parametrize("text", [NUL_MODULE, PROGRAM.replace("@return", "\0@return")])
def test_nul_reads_the_same_from_a_file_and_a_pipe(tmp_path: Path, text: str) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(text)
    argv = ["import-migraphx"] if text.startswith("x =") else []
    from_file = _run([*argv, str(path)], opt=not argv)
    from_pipe = _run([*argv, "-"], opt=not argv, data=text.encode())
    assert from_pipe.returncode == from_file.returncode
    assert from_pipe.stdout == from_file.stdout
    assert from_pipe.stderr == from_file.stderr.replace(str(path), "<stdin>")
    if not argv:  # upstream's verdict: the module reads, NULs and all
        assert from_file.returncode == 0, from_file.stderr
        assert 'tensor<2xf32> {x.y = "a\\00b"}' in from_file.stdout


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"\0", b"\n", b"a", b"\xe9", b"ML\xefR"]), max_size=40),
    limit=st.integers(1, 200),
)
def test_a_file_and_a_pipe_of_the_same_bytes_read_the_same(data: list[bytes], limit: int) -> None:
    whole = b"".join(data)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "in"
        path.write_bytes(whole)
        from_file = _read_or_error(str(path), limit)
        with open(path, "rb") as handle:
            from_pipe = _read_or_error("-", limit, handle)
    if isinstance(from_file, tuple) and LIMIT_HELP in from_file[0]:
        # a file's size is known before it is read, a pipe's is not: the size is not said
        assert isinstance(from_pipe, tuple) and LIMIT_HELP in from_pipe[0]
    else:
        assert from_pipe == from_file


def _read_or_error(
    path: str, limit: int, stdin: IO[bytes] | None = None
) -> str | tuple[str, int, int]:
    """What the text reader makes of `path` (`-`: `stdin` through a pipe): the text, or its
    error message and position."""
    import os
    import threading

    saved = sys.stdin
    try:
        if stdin is not None:
            read_end, write_end = os.pipe()
            data = stdin.read()

            def feed() -> None:
                with open(write_end, "wb") as writer:
                    writer.write(data)

            threading.Thread(target=feed, daemon=True).start()
            sys.stdin = io.TextIOWrapper(open(read_end, "rb"))
        return read_input(path, limit)[1]
    except ConvcanonError as err:
        assert err.loc is not None
        return (err.message, err.loc.line, err.loc.col)
    finally:
        if stdin is not None:
            sys.stdin.close()
        sys.stdin = saved


def test_regular_file_over_the_default_limit_is_refused_from_its_size(tmp_path: Path):
    sparse = tmp_path / "huge.mlir"
    with open(sparse, "wb") as handle:
        handle.truncate(2 << 30)  # 2 GiB of holes: costs no disk, would cost 2 GiB to read
    for opt, argv in [(True, [str(sparse)]), (False, ["import-migraphx", str(sparse)])]:
        result, opens, read = _run_counting_reads(argv, str(sparse), opt=opt)
        assert (opens, read) == (1, 0), result.stderr  # opened to learn its size, not read
        assert result.returncode == 1, result.stderr
        assert result.stderr == (
            f"{sparse}: error: input is {2 << 30} bytes, {LIMIT_HELP} of {1 << 30} bytes "
            "(--max-input-size)\n"
        )


def test_max_input_size_applies_to_every_command(tmp_path: Path):
    big = tmp_path / "big.mlir"
    big.write_text(MODULE + "// padding\n" * 100)
    for argv in (["run", str(big)], ["explain", str(big)], ["verify", str(big), str(big)]):
        result = _run([*argv, "--max-input-size", "1000"])
        assert result.returncode == 1, (argv, result.stderr)
        assert f"{LIMIT_HELP} of 1000 bytes" in result.stderr


def test_bad_max_input_size_is_a_usage_error(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
):
    assert main(["explain", str(files["m.mlir"]), "--max-input-size", "lots"]) == 2
    assert "bad input size limit 'lots'" in capsys.readouterr().err


def test_the_limit_ends_with_the_command(files: dict[str, Path]):
    assert main(["explain", str(files["m.mlir"]), "--max-input-size", "10"]) == 1
    assert read_input(str(files["m.mlir"]))[1] == MODULE  # the default limit again


def test_text_reads_crlf_as_a_newline_and_keeps_a_lone_cr(tmp_path: Path):
    """MLIR counts lines at `\\n` alone and reads a lone `\\r` as a space."""
    source = tmp_path / "crlf.mlir"
    source.write_bytes(b"a\r\nb\rc\n")
    assert read_input(str(source)) == (str(source), "a\nb\rc\n")


# -- npz -----------------------------------------------------------------------------------------


def _npy(array: np.ndarray, version: tuple[int, int] = (1, 0)) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version)
    return buffer.getvalue()


def _zip(members: list[tuple[str, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def _npz_error(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "in.npz"
    path.write_bytes(data)
    with pytest.raises(ConvcanonError) as caught:
        dict(open_npz(str(path)))
    return caught.value.render()


@pytest.fixture(scope="module")
def zip_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 1 MB on disk, 1.2 GB inflated: one float32 array of 3e8 zeros."""
    count = 300_000_000
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (count,)}
    )
    path = tmp_path_factory.mktemp("bomb") / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("arg0.npy", "w", force_zip64=True) as member:
            member.write(header.getvalue())
            zeros = bytes(1 << 24)
            left = count * 4
            while left:
                member.write(zeros[: min(left, len(zeros))])
                left -= min(left, len(zeros))
    assert path.stat().st_size < 2_000_000
    return path


def test_zip_bomb_is_refused_from_its_zip_directory_before_inflating(
    zip_bomb: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
):
    tracemalloc.start()
    try:
        code = main(["run", str(files["m.mlir"]), "--inputs", str(zip_bomb)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"{zip_bomb}: error: cannot read inputs as .npz: its members inflate to")
    assert "refused before inflating" in err
    assert peak < 50 << 20, f"peak {peak} bytes: the archive was inflated"


def test_member_that_understates_its_size_is_not_inflated_past_it(tmp_path: Path):
    data = _zip([("arg0.npy", _npy(np.zeros(1 << 20, np.float32)))])
    real = len(_npy(np.zeros(1 << 20, np.float32)))
    # the zip directory (local header and central directory) now claims 100 bytes
    lied = data.replace(real.to_bytes(4, "little"), (100).to_bytes(4, "little"))
    assert lied != data
    message = _npz_error(tmp_path, lied)
    assert message.startswith(f"{tmp_path / 'in.npz'}: error: cannot read inputs as .npz: ")


def test_truncated_npy_header_is_a_located_diagnostic(tmp_path: Path):
    """Cut short, or with a header length that ends the dict early (numpy: tokenize.TokenError)."""
    whole = _npy(np.arange(4, dtype=np.float32))
    short_length = [whole[:8] + n.to_bytes(2, "little") + whole[10:] for n in (5, 20, 40)]
    for member in short_length + [whole[:cut] for cut in (8, 12, 30, 60)]:
        message = _npz_error(tmp_path, _zip([("arg0.npy", member)]))
        assert message.startswith(
            f"{tmp_path / 'in.npz'}: error: cannot read inputs as .npz: member 'arg0.npy' has a "
            "bad .npy header"
        ), message


def test_truncated_npy_header_through_run_is_one_line(
    tmp_path: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
):
    path = tmp_path / "in.npz"
    path.write_bytes(_zip([("arg0.npy", _npy(np.zeros(2, np.float32))[:40])]))
    assert main(["run", str(files["m.mlir"]), "--inputs", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "bad .npy header" in err


@pytest.mark.parametrize("name", ["../arg0.npy", "dir/arg0.npy", "/abs.npy", "arg0", "arg0.txt"])
def test_odd_member_names_are_refused(tmp_path: Path, name: str):
    message = _npz_error(tmp_path, _zip([(name, _npy(np.zeros(2)))]))
    assert f"an odd member name {name!r} (expected NAME.npy)" in message


def test_repeated_member_name_is_refused(tmp_path: Path):
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = _zip([("arg0.npy", _npy(np.zeros(2))), ("arg0.npy", _npy(np.ones(2)))])
    assert "a repeated member name 'arg0.npy'" in _npz_error(tmp_path, data)


def test_header_that_claims_more_data_than_the_member_holds_is_refused(tmp_path: Path):
    small = _npy(np.zeros(4, np.float32))
    claims_more = small.replace(b"(4,)", b"(9999999999,)".ljust(4)[:13]).replace(b"  \n", b"\n", 1)
    message = _npz_error(tmp_path, _zip([("arg0.npy", claims_more)]))
    assert "member 'arg0.npy': its .npy header describes 39999999996 bytes of data" in message


def _npy_with_header(header: str, data: bytes = b"") -> bytes:
    encoded = header.encode()
    encoded += b" " * (63 - (10 + len(encoded)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(encoded).to_bytes(2, "little") + encoded + data


@pytest.mark.parametrize(
    "descr, shape, reason",
    [
        ("|V0", "(1000000000000,)", "a zero-size element type"),
        ("<f4", "(-1, 0)", "a negative shape (-1, 0)"),
        ("<f4", "(2, -2)", "a negative shape (2, -2)"),
    ],
)
def test_headers_that_describe_no_real_array_are_refused(
    tmp_path: Path, descr: str, shape: str, reason: str
):
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    message = _npz_error(tmp_path, _zip([("arg0.npy", _npy_with_header(header))]))
    assert message.endswith(f"member 'arg0.npy' has a bad .npy header ({reason})"), message


def test_object_arrays_are_refused(tmp_path: Path):
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    message = _npz_error(tmp_path, _zip([("arg0.npy", buffer.getvalue())]))
    assert "holds Python objects; pickles are refused (allow_pickle=False)" in message


def test_npz_over_the_limit_is_refused_before_reading(tmp_path: Path):
    path = tmp_path / "in.npz"
    path.write_bytes(_zip([("arg0.npy", _npy(np.zeros(1000)))], zipfile.ZIP_STORED))
    with pytest.raises(ConvcanonError, match=LIMIT_HELP):
        dict(open_npz(str(path), limit=1000))


def test_valid_arrays_load_exactly_as_numpy_saves_them(tmp_path: Path):
    arrays = {
        "arg0": np.arange(12, dtype=np.float32).reshape(3, 4),
        "arg1": np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
        "scalar": np.array(2.5, np.float16),
        "empty": np.zeros((0, 3), np.uint8),
        "flags": np.array([True, False]),
        "big_endian": np.arange(3, dtype=">i4"),
        "complex": np.array([1 + 2j], np.complex64),
    }
    path = tmp_path / "in.npz"
    np.savez_compressed(path, **arrays)  # pyright: ignore[reportArgumentType]
    loaded = dict(open_npz(str(path)))
    assert sorted(loaded) == sorted(arrays)
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape, name
        np.testing.assert_array_equal(loaded[name], array)
        assert loaded[name].flags.writeable
    wide = _zip([("arg0.npy", _npy(np.arange(3.0), version=(2, 0)))])
    path.write_bytes(wide)
    np.testing.assert_array_equal(dict(open_npz(str(path)))["arg0"], np.arange(3.0))


VALID_NPZ = _zip(
    [
        ("arg0.npy", _npy(np.arange(6, dtype=np.float32).reshape(2, 3))),
        ("arg1.npy", _npy(np.ones(3))),
    ]
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, len(VALID_NPZ) - 1), st.integers(0, 255)), min_size=1, max_size=8
    ),
    cut=st.integers(1, len(VALID_NPZ)),
)
def test_damaged_npz_is_a_diagnostic_or_loads(
    tmp_path: Path, edits: list[tuple[int, int]], cut: int
):
    damaged = bytearray(VALID_NPZ)
    for offset, value in edits:
        damaged[offset] = value
    path = tmp_path / "in.npz"
    path.write_bytes(bytes(damaged[:cut]))
    try:
        arrays = dict(open_npz(str(path)))
    except ConvcanonError as err:
        assert err.render().startswith(f"{path}: error: ")
    else:
        assert all(isinstance(a, np.ndarray) for a in arrays.values())


@pytest.mark.parametrize(
    ("data", "where", "hint"),
    [
        (MODULE.encode() + b"caf\xe9\n", "4:4", False),  # a text with one bad byte
        (b"\n\x05jit_f\x1a\xff\xfe", "2:8", True),  # a serialized proto: binary from the start
    ],
)
def test_bytes_that_are_not_utf8_are_located_and_only_a_binary_start_suggests_input_hlo(
    data: bytes, where: str, hint: bool, tmp_path: Path
) -> None:
    path = tmp_path / "in.mlir"
    path.write_bytes(data)
    with pytest.raises(ConvcanonError) as info:
        read_input(str(path))
    assert info.value.render().startswith(f"{path}:{where}: error: not UTF-8 text (byte ")
    result = _run([str(path)], opt=True)
    assert result.returncode == 1
    assert result.stderr.startswith(f"{path}:{where}: error: not UTF-8 text")
    assert ("--input-hlo" in result.stderr) == hint
