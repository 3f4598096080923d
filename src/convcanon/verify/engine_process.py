"""`verify --engine xla|iree` runs the engine in a child process, under a time limit.

XLA aborts the process on some modules MLIR verifies: a `pad` whose low and high padding cancel
past int64 ("overflow in static extent product", an uncaught `absl` status). In a child the
abort ends the child, and verify reports `file: error: XLA was killed by SIGABRT: ...`. Neither
engine bounds a `while` loop whose condition never fails: a run that outlasts the time limit
(`verify --timeout`) is killed and reported the same way. One child serves every module and
trial of a run: it imports JAX and IREE's runtime once, and keeps XLA's compiled executables.
Requests and replies are pickles over the child's stdin and a private copy of its stdout (only
this module's own code writes either); what native code prints goes to stderr, which is kept
for the diagnostic.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

import numpy as np

from convcanon.child_process import (
    die_with_parent,
    engine_env,
    how_it_ended,
    native_failure_message,
    python_argv,
)
from convcanon.diagnostics import ConvcanonError, SourceLoc

_LENGTH = struct.Struct("<Q")
STDERR_KEPT = 64 * 1024  # bytes: the end of what the child printed, where an abort's message is
DEFAULT_TIME_LIMIT = 300.0  # seconds one engine run (compile and one trial) may take
_ENGINE_NAMES = {"xla": "XLA", "iree": "IREE"}


def _send(stream: IO[bytes], value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    """The next pickle, or None at the end of the stream (a child that died mid-reply too)."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(header)
    data = stream.read(length)
    return pickle.loads(data) if len(data) == length else None


def _serve(engine: str, args: tuple[Any, ...]) -> list[np.ndarray]:
    if engine == "xla":
        from convcanon.verify.xla_engine import run_stablehlo_text

        text, filename, inputs = args
        return run_stablehlo_text(text, inputs, filename)
    from convcanon.verify.iree_tosa import call_vmfb

    vmfb, name, inputs, filename, driver = args
    return call_vmfb(vmfb, name, inputs, filename, driver)


def child_main() -> None:
    """The child: (engine, args) requests on stdin until it closes; each reply is
    ("ok", results) or ("error", ConvcanonError)."""
    die_with_parent()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what native code prints goes to stderr, never into a reply
    while (request := _receive(sys.stdin.buffer)) is not None:
        engine, args = request
        try:
            reply: tuple[str, object] = ("ok", _serve(engine, args))
        except ConvcanonError as err:
            reply = ("error", err)
        except Exception as err:  # the engines raise their own runtime error types
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            reply = (
                "error",
                ConvcanonError(f"{_ENGINE_NAMES[engine]} rejected the module: {first}"),
            )
        _send(replies, reply)


class EngineProcess:
    """The child, started on the first request and again after one dies or is killed."""

    def __init__(self) -> None:
        self._child: subprocess.Popen[bytes] | None = None
        self._stderr = bytearray()
        self._reader: threading.Thread | None = None
        self.time_limit = DEFAULT_TIME_LIMIT

    def run(self, engine: str, args: tuple[Any, ...], filename: str) -> list[np.ndarray]:
        """`engine`'s results for `args`, or its error at `filename`."""
        child = self._start()
        assert child.stdin is not None and child.stdout is not None
        try:
            _send(child.stdin, (engine, args))
        except (BrokenPipeError, ConnectionResetError):
            raise self._died(engine, filename) from None
        try:
            replied = select.select([child.stdout], [], [], self.time_limit)[0]
        except BaseException:  # Ctrl-C: the run it waits for is of no more use
            child.kill()
            self._ended()
            raise
        if not replied:
            raise self._killed(engine, filename)
        reply = _receive(child.stdout)
        if reply is None:
            raise self._died(engine, filename)
        status, payload = reply
        if status == "ok":
            return payload
        from convcanon.verify.placement import place_error

        raise place_error(payload, filename, is_the_file=False)

    def close(self) -> None:
        """End the child: it exits when its stdin closes."""
        child, self._child = self._child, None
        if child is not None:
            assert child.stdin is not None
            try:
                child.stdin.close()
                child.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                child.kill()
                child.wait()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._child is None:
            self._stderr = bytearray()
            self._child = subprocess.Popen(
                python_argv("from convcanon.verify.engine_process import child_main; child_main()"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=engine_env(),
            )
            self._reader = threading.Thread(target=self._keep_stderr, daemon=True)
            self._reader.start()
        return self._child

    def _keep_stderr(self) -> None:
        child = self._child
        assert child is not None and child.stderr is not None
        for chunk in iter(lambda: child.stderr.read1(8192), b""):  # pyright: ignore
            self._stderr += chunk
            del self._stderr[:-STDERR_KEPT]

    def _ended(self) -> int:
        child, self._child = self._child, None
        assert child is not None
        returncode = child.wait()
        if self._reader is not None:
            self._reader.join()
        return returncode

    def _died(self, engine: str, filename: str) -> ConvcanonError:
        returncode = self._ended()
        message = native_failure_message(self._stderr.decode(errors="replace"))
        return ConvcanonError(
            f"{_ENGINE_NAMES[engine]} {how_it_ended(returncode)}: {message}", SourceLoc(filename)
        )

    def _killed(self, engine: str, filename: str) -> ConvcanonError:
        assert self._child is not None
        self._child.kill()
        self._ended()
        return ConvcanonError(
            f"{_ENGINE_NAMES[engine]} did not finish within {self.time_limit:g} s and was stopped"
            " (a `while` loop whose condition never fails runs forever; `--timeout` sets the"
            " limit)",
            SourceLoc(filename),
        )


_PROCESS = EngineProcess()
atexit.register(_PROCESS.close)


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Within it, each engine run may take at most `seconds` (compile and run)."""
    saved, _PROCESS.time_limit = _PROCESS.time_limit, seconds
    try:
        yield
    finally:
        _PROCESS.time_limit = saved


def run_xla(text: str, inputs: Sequence[np.ndarray], filename: str) -> list[np.ndarray]:
    """`@main` of `text` on XLA's CPU backend, in this process's engine child."""
    return _PROCESS.run("xla", (text, filename, [np.asarray(x) for x in inputs]), filename)


def run_iree(
    vmfb: bytes, name: str, inputs: Sequence[np.ndarray], filename: str, driver: str
) -> list[np.ndarray]:
    """Function `name` of an IREE VM flatbuffer on `driver`, in this process's engine child."""
    arrays = [np.asarray(x, order="C") for x in inputs]
    return _PROCESS.run("iree", (vmfb, name, arrays, filename, driver), filename)
