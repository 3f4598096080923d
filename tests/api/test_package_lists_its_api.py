"""`import convcanon` is cheap, yet `help(convcanon)` and `dir(convcanon)` show the whole API."""

from __future__ import annotations

import pydoc
import subprocess
import sys

import convcanon


def test_dir_lists_the_lazy_functions():
    assert {"canonicalize_conv", "from_jax", "CanonicalizeResult"} <= set(dir(convcanon))
    assert {"import_program", "lower_to_tosa", "parse_module", "print_module"} <= set(
        dir(convcanon)
    )


def test_help_shows_each_function_with_its_signature():
    text = pydoc.render_doc(convcanon, renderer=pydoc.plaintext)
    assert "canonicalize_conv(module_or_text" in text
    assert "from_jax(fn" in text
    assert "import_program(text" in text
    assert "lower_to_tosa(module" in text


def test_import_and_dir_do_not_load_mlir_or_jax():
    code = (
        "import sys, convcanon; dir(convcanon); print(sorted({'jax', 'jaxlib'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr
