"""What a user installing convcanon gets: a wheel that builds, the license it declares, the extras
the README and the error messages name."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_license_is_an_spdx_string_with_the_apache_text_beside_it():
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_engines_and_examples_are_extras():
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(d.startswith("jax") for d in extras["xla"])
    assert {d.split(">")[0] for d in extras["iree"]} == {"iree-base-compiler", "iree-base-runtime"}
    assert {d.split(">")[0] for d in extras["examples"]} == {"jax", "flax"}
    core = " ".join(PYPROJECT["project"]["dependencies"])
    assert "jax>" not in core.replace("jaxlib", "") and "iree" not in core and "flax" not in core


def test_changelog_has_an_unreleased_section():
    assert "## [Unreleased]" in (REPO / "CHANGELOG.md").read_text()


def test_wheel_builds_with_the_license_and_the_examples_module(tmp_path: Path):
    source = tmp_path / "src"  # setuptools writes build/ into the tree it builds: not ours
    shutil.copytree(
        REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info")
    )
    out = tmp_path / "wheels"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "-w", str(out), "--no-deps", "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("convcanon-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = next(archive.read(n).decode() for n in names if n.endswith("/METADATA"))
    assert "License-Expression: Apache-2.0" in metadata
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "convcanon/examples/small_cnn.py" in names and "convcanon/py.typed" in names
