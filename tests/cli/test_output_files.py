"""Outputs are written whole or not at all, never replace a link or a device, and every failure to
write (stdout included) is `OUT: error: ...` with exit 1 and no temporary file left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from convcanon.cli import main, opt_main
from convcanon.diagnostics import ConvcanonError
from convcanon.fileio.output_file import write_output

MODULE = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n"
CONSTANT_MODULE = (
    "func.func @main() -> tensor<2xf32> {\n  %a = stablehlo.constant dense<1.0> : tensor<2xf32>\n"
    "  return %a : tensor<2xf32>\n}\n"
)
PROGRAM = "x = @param:x -> float_type, {2}, {1}\n@1 = @return(x)\n"
NO_SPACE = "cannot write the output: no space left on the device"
OPT = [sys.executable, "-c", "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"]


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _leftovers(*directories: Path) -> list[str]:
    return [p.name for d in directories for p in d.iterdir() if p.name.endswith(".tmp")]


def _write_error(path: str, data: str | bytes = "module {}\n") -> str:
    with pytest.raises(ConvcanonError) as caught:
        write_output(path, data)
    return caught.value.render()


@contextlib.contextmanager
def _mounted_tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A private tmpfs (root only): the full or read-only file system a test needs."""
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a private tmpfs ({mounted.stderr.strip()}); needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


# -- regular files -------------------------------------------------------------------------------


def test_new_file_gets_umask_permissions_and_no_temp_is_left(tmp_path: Path):
    target = tmp_path / "out.mlir"
    write_output(str(target), "module {}\n")
    assert target.read_text() == "module {}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]


def test_replaced_file_keeps_its_permissions(tmp_path: Path):
    target = tmp_path / "out.mlir"
    target.write_text("old\n")
    target.chmod(0o640)
    write_output(str(target), "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_failed_write_leaves_the_old_file(tmp_path: Path):
    target = tmp_path / "out.mlir"
    target.write_text("old\n")

    class Boom(str):
        def encode(self, *args: object, **kwargs: object) -> bytes:  # type: ignore[override]
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_output(str(target), Boom("new"))
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]


# -- symlinks and descriptors --------------------------------------------------------------------


def test_symlink_to_a_regular_file_stays_a_link_and_its_target_is_written(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "real.mlir"
    target.write_text("old\n")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    write_output(str(link), "new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n"
    assert not _leftovers(tmp_path, elsewhere)


def test_chain_of_relative_symlinks_is_followed_to_the_end(tmp_path: Path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "real.mlir").write_text("old\n")
    (tmp_path / "d" / "hop").symlink_to("real.mlir")
    (tmp_path / "link").symlink_to("d/hop")
    write_output(str(tmp_path / "link"), "new\n")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "d" / "hop").is_symlink()
    assert (tmp_path / "d" / "real.mlir").read_text() == "new\n"


def test_dangling_symlink_creates_the_file_it_names(tmp_path: Path):
    link = tmp_path / "link.mlir"
    link.symlink_to(tmp_path / "new.mlir")
    write_output(str(link), "fresh\n")
    assert link.is_symlink()
    assert (tmp_path / "new.mlir").read_text() == "fresh\n"


@pytest.mark.parametrize("stdout_kind", ["regular file", "pipe"])
def test_link_to_proc_self_fd_1_writes_into_the_childs_stdout(tmp_path: Path, stdout_kind: str):
    """The child's `-o` is a private link to its own /proc/self/fd/1: the output lands on its
    stdout (a file the shell redirected to, or a pipe) and neither the link nor /dev is touched."""
    module = tmp_path / "m.mlir"
    module.write_text(MODULE)
    link = tmp_path / "out-link"
    link.symlink_to("/proc/self/fd/1")
    command = [*OPT, str(module), "-o", str(link)]
    if stdout_kind == "regular file":
        captured = tmp_path / "captured.txt"
        with open(captured, "wb") as stdout:
            result = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True)
        written = captured.read_text()
    else:
        result = subprocess.run(command, capture_output=True, text=True)
        written = result.stdout
    assert result.returncode == 0, result.stderr
    assert "func.func @main" in written
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert stat.S_ISLNK(os.lstat("/proc/self/fd/1").st_mode)
    assert not _leftovers(tmp_path)


def test_output_through_proc_self_fd_appends_where_the_shell_redirected(tmp_path: Path):
    """A private link to /proc/self/fd/1, with stdout opened to append: the output goes at the
    end of what was there, as a shell's `>>` promises."""
    module = tmp_path / "m.mlir"
    module.write_text(MODULE)
    link = tmp_path / "out-link"
    link.symlink_to("/proc/self/fd/1")
    captured = tmp_path / "captured.txt"
    captured.write_text("first line\n")
    with open(captured, "ab") as stdout:
        result = subprocess.run(
            [*OPT, str(module), "-o", str(link)], stdout=stdout, stderr=subprocess.PIPE, text=True
        )
    assert result.returncode == 0, result.stderr
    text = captured.read_text()
    assert text.startswith("first line\n") and "func.func @main" in text
    assert link.is_symlink()


def test_writing_to_dev_null_keeps_the_device():
    write_output("/dev/null", "module {}\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_fifo_is_written_in_place(tmp_path: Path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    write_output(str(fifo), "through the fifo\n")
    out, _ = reader.communicate(timeout=30)
    assert out == b"through the fifo\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# -- targets that cannot be written --------------------------------------------------------------


def test_missing_parent_directory_is_an_output_error(tmp_path: Path):
    out = str(tmp_path / "no-such-dir" / "out.mlir")
    assert _write_error(out).startswith(f"{out}: error: ")
    assert "no such directory" in _write_error(out)


def test_a_directory_is_not_an_output(tmp_path: Path):
    assert _write_error(str(tmp_path)) == f"{tmp_path}: error: is a directory"
    assert _write_error(f"{tmp_path}/") == f"{tmp_path}/: error: is a directory"


def test_empty_output_path_is_an_error():
    assert _write_error("") == "'': error: the output path is empty"


def test_dev_full_is_an_output_error():
    assert (
        _write_error("/dev/full")
        == "/dev/full: error: cannot write the output: no space left on the device"
    )


def test_read_only_file_system_is_an_output_error_and_leaves_the_old_file(tmp_path: Path):
    with _mounted_tmpfs(tmp_path / "ro", "size=64k") as where:
        (where / "out.mlir").write_text("old\n")
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        message = _write_error(str(where / "out.mlir"))
        assert message.startswith(f"{where / 'out.mlir'}: error: ")
        assert "Read-only file system" in message
        assert sorted(p.name for p in where.iterdir()) == ["out.mlir"]
        assert (where / "out.mlir").read_text() == "old\n"


def test_full_disk_is_an_output_error_and_leaves_no_temp(tmp_path: Path):
    with _mounted_tmpfs(tmp_path / "small", "size=64k") as where:
        (where / "out.mlir").write_text("old\n")
        message = _write_error(str(where / "out.mlir"), b"x" * (1 << 20))
        assert message.endswith(NO_SPACE)
        assert sorted(p.name for p in where.iterdir()) == ["out.mlir"]
        assert (where / "out.mlir").read_text() == "old\n"


COMMANDS = [
    ("convcanon-opt", ["{in}", "-o", "{out}"], MODULE),
    ("convcanon", ["import-migraphx", "{in}", "-o", "{out}"], PROGRAM),
    ("convcanon", ["graph", "{in}", "--format", "dot", "-o", "{out}"], MODULE),
    ("convcanon", ["run", "{in}", "--output", "{out}"], CONSTANT_MODULE),
]  # fmt: skip


@pytest.mark.parametrize(
    "program, argv, text", COMMANDS, ids=["convcanon-opt", "import-migraphx", "graph", "run"]
)
@pytest.mark.parametrize("where", ["missing directory", "dev/full"])
def test_every_command_writes_through_the_one_writer(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    program: str,
    argv: list[str],
    text: str,
    where: str,
):
    source = tmp_path / "input.txt"
    source.write_text(text)
    out = str(tmp_path / "missing" / "out") if where == "missing directory" else "/dev/full"
    entry = opt_main if program == "convcanon-opt" else main
    code = entry([a.replace("{in}", str(source)).replace("{out}", out) for a in argv])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith(f"{out}: error: "), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not _leftovers(tmp_path)


# -- stdout --------------------------------------------------------------------------------------


def test_stdout_on_dev_full_is_an_error(tmp_path: Path):
    module = tmp_path / "m.mlir"
    module.write_text(MODULE)
    with open("/dev/full", "w") as full:
        result = subprocess.run([*OPT, str(module)], stdout=full, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 1
    assert (
        result.stderr == "<stdout>: error: cannot write the output: no space left on the device\n"
    )


STDOUT_COMMANDS = [
    ["explain", "{m}"],
    ["verify", "{m}", "{m}"],
    ["run", "{c}"],
    ["import-migraphx", "{p}"],
    ["graph", "{m}", "--format", "dot", "-o", "-"],
]


@pytest.mark.parametrize("argv", STDOUT_COMMANDS, ids=[a[0] for a in STDOUT_COMMANDS])
def test_every_command_reports_a_full_stdout(tmp_path: Path, argv: list[str]):
    files = {"{m}": MODULE, "{c}": CONSTANT_MODULE, "{p}": PROGRAM}
    for key, text in files.items():
        (tmp_path / key.strip("{}")).write_text(text)
    args = [str(tmp_path / a.strip("{}")) if a in files else a for a in argv]
    entry = "import sys; from convcanon.cli import main; sys.exit(main())"
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-c", entry, *args], stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert result.returncode == 1
    assert result.stderr == f"<stdout>: error: {NO_SPACE}\n"


def test_stdout_to_a_closed_pipe_is_an_error(tmp_path: Path):
    module = tmp_path / "m.mlir"
    module.write_text(MODULE)
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the child's first write gets EPIPE
    try:
        result = subprocess.run(
            [*OPT, str(module)], stdout=write_end, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write_end)
    assert result.returncode == 1
    assert result.stderr.startswith("<stdout>: error: cannot write the output: Broken pipe")
    assert len(result.stderr.splitlines()) == 1, result.stderr


# -- signals -------------------------------------------------------------------------------------

_DIES_MID_WRITE = textwrap.dedent(
    """
    import os, signal, sys, time
    from convcanon.fileio import output_file

    def fsync_then_signal(fd):  # the temporary is written and not yet renamed
        os.kill(os.getpid(), signal.{name})
        time.sleep(30)

    os.fsync = fsync_then_signal
    output_file.write_output(sys.argv[1], "new contents\\n")
    """
)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_terminating_signal_mid_write_removes_the_temporary(tmp_path: Path, name: str):
    target = tmp_path / "out.mlir"
    target.write_text("old\n")
    # as a terminal session starts it (a harness under nohup would pass SIGHUP in ignored)
    reset = f"import signal; signal.signal(signal.{name}, signal.SIG_DFL)\n"
    script = reset + _DIES_MID_WRITE.replace("{name}", name)
    result = subprocess.run(
        [sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == -getattr(signal, name), result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlir"]
    assert target.read_text() == "old\n"


def test_ignored_sighup_stays_ignored_during_a_write(tmp_path: Path):
    """Under nohup a SIGHUP mid-write changes nothing: the write completes."""
    target = tmp_path / "out.mlir"
    script = "import signal; signal.signal(signal.SIGHUP, signal.SIG_IGN)\n" + _DIES_MID_WRITE
    script = script.replace("{name}", "SIGHUP").replace("time.sleep(30)", "pass")
    result = subprocess.run(
        [sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert target.read_text() == "new contents\n"


# -- the input is never the output ---------------------------------------------------------------


@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_output_that_is_the_input_under_another_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
):
    module = tmp_path / "m.mlir"
    module.write_text(MODULE)
    alias = tmp_path / f"alias-{uuid.uuid4().hex}.mlir"
    if how == "symlink":
        alias.symlink_to(module)
    else:
        os.link(module, alias)
    code = opt_main([str(module), "-o", str(alias)])
    assert code == 2
    assert "is the input file" in capsys.readouterr().err
    assert module.read_text() == MODULE


def test_an_output_written_from_another_thread_is_whole_and_keeps_the_signal_handlers(
    tmp_path: Path,
) -> None:
    """Off the main thread Python refuses to install signal handlers: the writer then writes
    without them (the API's callers may write from worker threads) and changes none."""
    import threading

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    target = tmp_path / "out.mlir"
    errors: list[BaseException] = []

    def write() -> None:
        try:
            write_output(str(target), "module {}\n")
        except BaseException as err:  # noqa: BLE001 (reported by the main thread)
            errors.append(err)

    worker = threading.Thread(target=write)
    worker.start()
    worker.join()
    assert not errors
    assert target.read_text() == "module {}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlir"]
    assert {s: signal.getsignal(s) for s in before} == before
