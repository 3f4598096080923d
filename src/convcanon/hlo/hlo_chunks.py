"""The chunks of split HLO text (`--input-hlo --split-input-file`), converted in one child.

Each conversion runs XLA, which may abort the process, so it runs in a child; a child per chunk
paid JAX's start-up (seconds) for each, hours for a file of a few thousand small modules. One
child converts the chunks in turn and answers each as it finishes, so when XLA aborts on one,
the answers before it stand, that chunk gets the abort as its error, and a new child takes the
rest: a child per aborting chunk at most.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

from convcanon.child_process import (
    child_env,
    die_with_parent,
    how_it_ended,
    native_failure_message,
    python_argv,
)
from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.fileio.module_input import reader_budget

Chunk = tuple[int, str]  # (the file's line it starts at, its HLO text)
_CHILD = "from convcanon.hlo.hlo_chunks import child_main; child_main()"


def convert_chunks(chunks: Sequence[Chunk], filename: str) -> list[bytes | ConvcanonError]:
    """Each chunk as StableHLO bytecode located at its lines in `filename`, or its error."""
    results: list[bytes | ConvcanonError] = []
    while len(results) < len(chunks):
        results += _convert_in_child(chunks[len(results) :], filename)
    return results


def _convert_in_child(chunks: Sequence[Chunk], filename: str) -> list[bytes | ConvcanonError]:
    """The answers of one child: for every chunk, or up to the one it stopped on (its error)."""
    payload = json.dumps(chunks).encode()
    timeout = reader_budget(len(payload))
    try:
        child = subprocess.run(
            [*python_argv(_CHILD), filename],
            input=payload,
            capture_output=True,
            env=child_env(),
            timeout=timeout,
        )
        out, ended = child.stdout, f"{how_it_ended(child.returncode)}"
        ended += f": {native_failure_message(child.stderr.decode(errors='replace'))}"
    except subprocess.TimeoutExpired as err:  # killed; the answers it gave stand
        out, ended = err.stdout or b"", f"did not finish in {timeout:g} s"
    answers = _answers(out, filename)
    if len(answers) < len(chunks):  # the child stopped on this chunk
        where = _module_start(*chunks[len(answers)], filename)
        answers.append(ConvcanonError(f"XLA's HLO reader {ended}", where))
    return answers


def _module_start(line: int, text: str, filename: str) -> SourceLoc:
    """Where a chunk's module starts (its `HloModule`), past the blanks after the marker."""
    blanks = text[: len(text) - len(text.lstrip())]
    return SourceLoc(filename, line + blanks.count("\n"), len(blanks) - blanks.rfind("\n"))


def _answers(out: bytes, filename: str) -> list[bytes | ConvcanonError]:
    """The child's framed answers: `ok N` and N bytes of bytecode, or `error LINE COL N` and N
    bytes of message; a frame cut short (the child died writing it) is not an answer."""
    answers: list[bytes | ConvcanonError] = []
    at = 0
    while (end := out.find(b"\n", at)) >= 0:
        kind, *numbers = out[at:end].split()
        size = int(numbers[-1])
        body = out[end + 1 : end + 1 + size]
        if len(body) < size:
            break
        if kind == b"ok":
            answers.append(body)
        else:
            line, col = int(numbers[0]), int(numbers[1])
            where = SourceLoc(filename, line, col) if line else SourceLoc(filename)
            answers.append(ConvcanonError(body.decode(errors="replace"), where))
        at = end + 1 + size
    return answers


def child_main() -> None:
    """The child: JSON `[[line, text], ...]` on stdin, the file's name as its argument; an
    answer a chunk on stdout, flushed as each is done."""
    from convcanon.hlo.hlo_import import hlo_to_bytecode

    die_with_parent()
    filename = sys.argv[1]
    out = sys.stdout.buffer
    for line, text in json.loads(sys.stdin.buffer.read()):
        try:  # XLA numbers lines from the text's start: the lines before the chunk lead it
            bytecode = hlo_to_bytecode(("\n" * (line - 1) + text).encode(), filename)
        except ConvcanonError as err:
            message = err.folded_message().encode()
            at = (err.loc.line, err.loc.col) if err.loc and err.loc.line else (0, 0)
            out.write(b"error %d %d %d\n" % (*at, len(message)) + message)
        else:
            out.write(b"ok %d\n" % len(bytecode) + bytecode)
        out.flush()
