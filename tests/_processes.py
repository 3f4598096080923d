"""Processes seen through /proc (Linux): which children a process has, and whether one ended."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def children_running(parent: int, marker: str) -> list[int]:
    """Live processes whose parent is `parent` and whose command line holds `marker` (Linux)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == parent and marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its exit status is left to collect


def children_outlive_a_stop(
    argv: list[str], marker: str, env: dict[str, str] | None = None, settle: float = 0.0
) -> list[int]:
    """Start `argv`, wait for its child whose command line holds `marker`, stop it with SIGTERM
    `settle` seconds later, and give its children 30 s to end: those still alive."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (children := children_running(process.pid, marker)):
            assert process.poll() is None, process.communicate()[1].decode(errors="replace")
            assert time.monotonic() < deadline, f"no child process {marker!r}"
            time.sleep(0.1)
        time.sleep(settle)
        process.terminate()
        process.wait(timeout=60)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        return [pid for pid in children if alive(pid)]
    finally:
        process.kill()
        process.wait()
