"""The engines the run-time bench times a module on: XLA CPU and IREE CPU, compiled once each.

Both take the module text as the bench holds it (`dense_resource` weights included) and give a
module whose `run` executes @main once on device buffers and returns only when the results are
ready, so back-to-back runs time the engine and not the host copies.

XLA: JAX's CPU client, `dense_resource` weights inlined (XLA's import reads only `dense`).
IREE: `iree.compiler.compile_str` with `llvm-cpu` and `--iree-llvmcpu-target-cpu=host`, the
`local-task` driver of iree-base-runtime, @main made public and MHLO legalized the way `convcanon
verify --engine iree` does it. The compiler's scheduling statistics (dispatches, fills, copies,
executables of the whole program) are read from the same compilation: the programs have no
control flow, so the static dispatch count is the count per run.
"""

from __future__ import annotations

import json
import re
import tempfile
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from runtime.resources import inline_dense_resources

ENGINES = ("xla", "iree")
IREE_FLAGS = ("--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host")


class Module(Protocol):
    """A module compiled once on one engine."""

    stats: dict[str, int]

    def device_inputs(self, inputs: list[np.ndarray]) -> list[Any]: ...

    def run(self, buffers: list[Any]) -> list[Any]: ...

    def host(self, outputs: list[Any]) -> list[np.ndarray]: ...


class XlaModule:
    """A module compiled once on XLA CPU."""

    def __init__(self, text: str) -> None:
        from convcanon.verify.xla_engine import _cpu_client

        backend, self.device = _cpu_client()
        self.executable = backend.compile_and_load(inline_dense_resources(text), [self.device])
        self.stats: dict[str, int] = {}

    def device_inputs(self, inputs: list[np.ndarray]) -> list[Any]:
        import jax

        return [jax.device_put(x, self.device) for x in inputs]

    def run(self, buffers: list[Any]) -> list[Any]:
        out = self.executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
        for arrays in out:
            arrays[0].block_until_ready()
        return [arrays[0] for arrays in out]

    def host(self, outputs: list[Any]) -> list[np.ndarray]:
        return [np.asarray(x) for x in outputs]


@cache
def _iree_config() -> Any:
    import iree.runtime

    return iree.runtime.Config("local-task")


def iree_text(text: str) -> str:
    """What IREE's StableHLO input takes, by the verify engine's own conversion; skipped (a
    200 MB ResNet-50 with its weights is parsed and printed in seconds) when @main is public
    already and there is no MHLO."""
    from convcanon.verify.engines import iree_input_text

    if "mhlo." not in text and not re.search(r"func\.func private @main\(", text):
        return text
    return iree_input_text.__wrapped__(text, "<bench>", "main")


def iree_compile(text: str, extra: tuple[str, ...] = ()) -> tuple[bytes, dict[str, int]]:
    """The flatbuffer of `text` on llvm-cpu for this host, and the compiler's whole-program
    statistics: dispatches, fills, copies, executables."""
    import iree.compiler

    with tempfile.TemporaryDirectory() as tmp:
        stats_path = Path(tmp) / "stats.json"
        vmfb = iree.compiler.compile_str(
            iree_text(text),
            input_type="stablehlo",
            extra_args=[
                *IREE_FLAGS,
                "--iree-scheduling-dump-statistics-format=json",
                f"--iree-scheduling-dump-statistics-file={stats_path}",
                *extra,
            ],
        )
        execution = json.loads(stats_path.read_text())["stream-aggregate"]
    assert isinstance(vmfb, bytes)  # compile_str returns the flatbuffer when no output file
    stats = {
        "dispatches": int(execution["execution"]["dispatch-count"]),
        "fills": int(execution["execution"]["fill-count"]),
        "copies": int(execution["execution"]["copy-count"]),
        "executables": int(execution["executable"]["executable-count"]),
    }
    return vmfb, stats


class IreeModule:
    """A module compiled once on IREE CPU (llvm-cpu, host CPU), run on local-task."""

    def __init__(self, text: str) -> None:
        import iree.runtime

        vmfb, self.stats = iree_compile(text)
        config = _iree_config()
        self.device = config.device
        self.context = iree.runtime.SystemContext(config=config)
        vm_module = iree.runtime.VmModule.copy_buffer(config.vm_instance, vmfb)
        self.context.add_vm_module(vm_module)
        self.main = self.context.modules[vm_module.name]["main"]

    def device_inputs(self, inputs: list[np.ndarray]) -> list[Any]:
        import iree.runtime

        return [iree.runtime.asdevicearray(self.device, np.asarray(x, order="C")) for x in inputs]

    def run(self, buffers: list[Any]) -> list[Any]:
        """A synchronous call: the default ABI waits for the results before returning."""
        results = self.main(*buffers)
        return list(results) if isinstance(results, tuple | list) else [results]

    def host(self, outputs: list[Any]) -> list[np.ndarray]:
        return [np.asarray(x.to_host() if hasattr(x, "to_host") else x) for x in outputs]


def compile_on(engine: str, text: str) -> Module:
    if engine == "xla":
        return XlaModule(text)
    if engine == "iree":
        return IreeModule(text)
    raise ValueError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
