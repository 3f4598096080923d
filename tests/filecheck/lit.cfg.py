"""lit configuration: every `.mlir` here is a FileCheck test of one rewrite or lowering rule.

`convcanon-opt` and `FileCheck` are the ones installed beside the Python that runs lit (the
project's venv), whatever is on PATH."""

# ruff: noqa: F821  (lit injects `config`)
from __future__ import annotations

import os
import sys
import tempfile

import lit.formats

config.name = "convcanon"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["inputs"]
config.test_source_root = os.path.dirname(__file__)
# lit writes `Output/` dirs and a timing file under the exec root: keep them out of the tree.
config.test_exec_root = os.path.join(tempfile.gettempdir(), f"convcanon-lit-{os.getuid()}")

_BIN = os.path.dirname(sys.executable)
config.substitutions.append(("convcanon-opt", os.path.join(_BIN, "convcanon-opt")))
config.substitutions.append(("FileCheck", os.path.join(_BIN, "filecheck")))
config.environment["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")
config.environment["TF_CPP_MIN_LOG_LEVEL"] = "1"
