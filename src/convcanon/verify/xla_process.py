"""`verify --engine xla` runs XLA in a child process.

XLA aborts the process on some modules MLIR verifies: a `pad` whose low and high padding cancel
past int64 ("overflow in static extent product", an uncaught `absl` status). In a child the
abort ends the child, and verify reports `file: error: XLA was killed by SIGABRT: ...`. One child
serves every module and trial of a run: it imports JAX once and keeps XLA's compiled
executables. Requests and replies are pickles over the child's stdin and a private copy of its
stdout (only this module's own code writes either); what native code prints goes to stderr,
which is kept for the diagnostic.
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

from convcanon.child_process import child_env, how_it_ended, native_failure_message, python_argv
from convcanon.diagnostics import ConvcanonError, SourceLoc

_LENGTH = struct.Struct("<Q")
STDERR_KEPT = 64 * 1024  # bytes: the end of what the child printed, where an abort's message is


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


def child_main() -> None:
    """The child: (text, filename, inputs) requests on stdin until it closes; each reply is
    ("ok", results) or ("error", ConvcanonError)."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what native code prints goes to stderr, never into a reply
    from convcanon.verify.xla_engine import run_stablehlo_text

    while (request := _receive(sys.stdin.buffer)) is not None:
        text, filename, inputs = request
        try:
            reply: tuple[str, object] = ("ok", run_stablehlo_text(text, inputs, filename))
        except ConvcanonError as err:
            reply = ("error", err)
        except Exception as err:  # XLA raises its own runtime error types
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            reply = ("error", ConvcanonError(f"XLA rejected the module: {first}"))
        _send(replies, reply)


class XlaProcess:
    """The child, started on the first request and again after one dies."""

    def __init__(self) -> None:
        self._child: subprocess.Popen[bytes] | None = None
        self._stderr = bytearray()
        self._reader: threading.Thread | None = None

    def run(self, text: str, filename: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        child = self._start()
        assert child.stdin is not None and child.stdout is not None
        try:
            _send(child.stdin, (text, filename, [np.asarray(x) for x in inputs]))
            reply = _receive(child.stdout)
        except (BrokenPipeError, ConnectionResetError):
            reply = None
        if reply is None:
            raise self._died(filename)
        status, payload = reply
        if status == "ok":
            return payload
        error: ConvcanonError = payload
        error.loc = error.loc or SourceLoc(filename)
        raise error

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
                python_argv("from convcanon.verify.xla_process import child_main; child_main()"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_env(),
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

    def _died(self, filename: str) -> ConvcanonError:
        child, self._child = self._child, None
        assert child is not None
        returncode = child.wait()
        if self._reader is not None:
            self._reader.join()
        message = native_failure_message(self._stderr.decode(errors="replace"))
        return ConvcanonError(f"XLA {how_it_ended(returncode)}: {message}", SourceLoc(filename))


_PROCESS = XlaProcess()
atexit.register(_PROCESS.close)


def run_isolated(text: str, inputs: Sequence[np.ndarray], filename: str) -> list[np.ndarray]:
    """`@main` of `text` on XLA's CPU backend, in this process's XLA child."""
    return _PROCESS.run(text, filename, inputs)
