"""Processes seen through /proc (Linux): which children a process has, and whether one ended."""

from __future__ import annotations

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
