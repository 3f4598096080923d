"""Native libraries run in a child Python process.

XLA aborts the process on some inputs it accepts (a `Check failed`, an uncaught `absl` status, an
`LLVM ERROR`). Where a command hands it user input, the call runs in a child: the abort ends the
child, and the command reports it as one line, `file: error: ... was killed by SIGABRT: ...`.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

MESSAGE_LIMIT = 400  # characters of a native failure kept in the one-line diagnostic

_GLOG_PREFIX = re.compile(r"^[FEWI]\d{4} [\d:.]+\s+\d+ [\w.\-]+:\d+\] ")


def python_argv(call: str) -> list[str]:
    """This interpreter running `call`, e.g. `from m import main; main()`; `-P`: the working
    directory is not on the child's import path, so no file there can stand in for a module."""
    return [sys.executable, "-P", "-c", call]


_PARENT = "CONVCANON_PARENT_PID"


def child_env() -> dict[str, str]:
    """This environment, with this copy of convcanon first on the child's import path, the
    native libraries' INFO logging off, and this process named as the child's parent."""
    package_root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    env[_PARENT] = str(os.getpid())
    return env


# XLA's CPU backend drops NaN where StableHLO propagates it: a reduction's max and min ("fast
# min/max") and YNNPACK's fused reductions (a relu fused into a mean) treat it as missing. IREE and
# the reference follow the spec. An engine that verifies must too: a NaN the spec carries to the
# output vanishes in a max-pool, and the truth computed so can pass a wrong rewrite.
XLA_SPEC_FLAGS = {
    "xla_cpu_enable_fast_min_max": "false",
    "xla_cpu_experimental_ynn_fusion_type": "",
}


def engine_env() -> dict[str, str]:
    """`child_env()` for a child that runs XLA: XLA_FLAGS with the spec's NaN semantics, unless
    the user's XLA_FLAGS already sets one of those flags (theirs is kept)."""
    env = child_env()
    flags = env.get("XLA_FLAGS", "")
    ours = [f"--{name}={value}" for name, value in XLA_SPEC_FLAGS.items() if name not in flags]
    env["XLA_FLAGS"] = " ".join([flags, *ours]).strip()
    return env


def parent_death_signal() -> Callable[[], object]:
    """A call that has the calling process killed when its parent ends (Linux's
    PR_SET_PDEATHSIG; elsewhere it does nothing). Resolved before a fork, so a `preexec_fn`
    only calls `prctl` in the child."""
    if not sys.platform.startswith("linux"):
        return lambda: None
    import ctypes

    prctl = ctypes.CDLL(None).prctl
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL)


def die_with_parent() -> None:
    """Called first in a Python child: it is killed when its parent ends, however the parent
    ends (on Linux: when the parent's thread that started it ends). A parent killed by SIGTERM
    mid-run would otherwise leave XLA running a loop that never ends, with no one left to stop
    it. A parent that ended before the signal was set leaves an orphan, which ends here."""
    parent_death_signal()()
    if str(os.getppid()) != os.environ.get(_PARENT, str(os.getppid())):
        os._exit(1)


def native_failure_message(stderr: str) -> str:
    """What a native abort printed, trimmed to its message: no log prefixes, no stack trace."""
    kept: list[str] = []
    for line in stderr.splitlines():
        if line.startswith("*** Check failure stack trace") or line.lstrip().startswith("@ 0x"):
            break
        line = _GLOG_PREFIX.sub("", line).strip()
        if line and not line.startswith(("WARNING: All log messages before absl", "*** SIG")):
            kept.append(line)
    message = "; ".join(kept) or "no message"
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 3] + "..."
    return message


def how_it_ended(returncode: int) -> str:
    """`was killed by SIGABRT`, or `exited with status N`."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"
