"""The README runs as written: its shell commands in order, in a copy of the checkout, and each of
its Python blocks, with their printed values checked against the `# value` comments beside them.

Each block runs with only the core importable, plus the extras that the prose just before it says
it needs ("needs the `xla` extra"): optional packages are hidden by stubs that fail to import, as
on a core-only install. So a command that silently needs JAX fails here.

Install steps and the test command itself are not re-run here (they need the network and would
recurse); instead the first command must install the core only, and `.ci/run` must run exactly the
README's test command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
VENV = Path(sys.prefix)
LANGUAGES = {"bash", "python", "text"}
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache"
)


#: The optional packages each extra brings (pyproject.toml); the core has none of them.
EXTRAS = {"xla": {"jax"}, "iree": {"iree"}, "examples": {"jax", "flax"}}
OPTIONAL = set().union(*EXTRAS.values())
_NEEDS = re.compile(r"needs the `?(\w+)`? extra")


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    line: int  # of the opening fence, 1-based
    extras: frozenset[str]  # named by the prose between the previous block and this one


def readme_blocks() -> list[Block]:
    text = README.read_text()
    blocks, previous_end = [], 0
    for m in _FENCE.finditer(text):
        extras = frozenset(_NEEDS.findall(text[previous_end : m.start()]))
        blocks.append(Block(m[1], m[2], text.count("\n", 0, m.start()) + 1, extras))
        previous_end = m.end()
    return blocks


def hidden_packages(extras: frozenset[str]) -> set[str]:
    unknown = extras - EXTRAS.keys()
    assert not unknown, f"README names unknown extras {sorted(unknown)}"
    return OPTIONAL - set().union(*(EXTRAS[e] for e in extras))


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Packages named like the optional ones that fail to import, as if not installed."""
    root = tmp_path_factory.mktemp("not-installed")
    for name in OPTIONAL:
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError('No module named {name!r}', name={name!r})\n"
        )
    return root


def core_env(stubs: Path, extras: frozenset[str]) -> dict[str, str]:
    """The environment of a core install plus `extras`: the venv's bin first on PATH."""
    hidden = stubs.parent / f"{stubs.name}-{'-'.join(sorted(extras)) or 'core'}"
    if not hidden.exists():
        hidden.mkdir()
        for name in hidden_packages(extras):
            (hidden / name).symlink_to(stubs / name, target_is_directory=True)
    path = f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "PYTHONPATH": str(hidden)}


def shell_commands() -> list[tuple[str, frozenset[str]]]:
    """Every non-comment line of every bash block, in README order, with the block's extras."""
    return [
        (line.strip(), block.extras)
        for block in readme_blocks()
        if block.language == "bash"
        for line in block.text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def _is_install(step: str) -> bool:
    return step.startswith(("python3 -m venv", ".venv/bin/pip install"))


def _is_test_run(step: str) -> bool:
    return step.startswith(".venv/bin/python -m pytest")


def runnable(command: str) -> str | None:
    """The command without its install and test-run steps (`a && b && c`), or None if nothing is
    left."""
    steps = [s.strip() for s in command.split("&&")]
    kept = [s for s in steps if not _is_install(s) and not _is_test_run(s)]
    return " && ".join(kept) or None


def test_every_code_block_is_labelled_so_none_escapes_the_suite():
    blocks = readme_blocks()
    unlabelled = [b.line for b in blocks if b.language not in LANGUAGES]
    assert not unlabelled, f"README fences at lines {unlabelled} need bash, python or text"
    assert sum(b.language == "python" for b in blocks) >= 3
    assert len(shell_commands()) >= 8


def test_a_core_only_block_cannot_import_an_optional_package(stubs: Path):
    code = "import jax"
    core = subprocess.run(
        [sys.executable, "-c", code], env=core_env(stubs, frozenset()), capture_output=True
    )
    assert core.returncode == 1 and b"No module named 'jax'" in core.stderr
    xla = subprocess.run([sys.executable, "-c", code], env=core_env(stubs, frozenset({"xla"})))
    assert xla.returncode == 0


def test_first_command_installs_only_the_core_and_runs_the_main_job():
    (first, first_extras), (second, _) = shell_commands()[:2]
    assert not first_extras
    steps = [s.strip() for s in first.split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    assert ".venv/bin/pip install -e ." in steps
    assert "[" not in first, "the first command must not install extras"
    assert runnable(first) is not None and runnable(first).startswith(".venv/bin/convcanon-opt ")
    assert any(_is_test_run(s.strip()) for s in second.split("&&"))


def test_ci_runs_exactly_the_readme_test_command():
    second = shell_commands()[1][0]
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert second in [line.strip() for line in ci], f"{second!r} is not a line of .ci/run"


@pytest.fixture(scope="module")
def checkout_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout whose `.venv` is the venv running these tests."""
    if not (VENV / "bin" / "convcanon").exists():
        pytest.skip(f"the tests do not run in a venv with convcanon installed ({VENV})")
    copy = tmp_path_factory.mktemp("readme") / "convcanon"
    shutil.copytree(REPO, copy, ignore=_NOT_COPIED, symlinks=True)
    (copy / ".venv").symlink_to(VENV, target_is_directory=True)
    return copy


def test_shell_commands_run_as_written_in_order(checkout_copy: Path, stubs: Path):
    no_dot = shutil.which("dot") is None and os.environ.get("CI", "").lower() != "true"
    for command, extras in shell_commands():
        step = runnable(command)
        if step is None or (no_dot and step.startswith(".venv/bin/convcanon graph ")):
            continue  # rendering needs Graphviz, which the README says to install
        result = subprocess.run(
            ["bash", "-c", step],
            cwd=checkout_copy,
            env=core_env(stubs, extras),
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, (
            f"$ {step}\n(extras: {sorted(extras) or 'none'})\nexit {result.returncode}\n"
            f"{result.stderr}"
        )


_PRINTED = re.compile(r"^print\(.*\)\s+#\s*(.+)$")


def _python_blocks() -> list[Block]:
    return [b for b in readme_blocks() if b.language == "python"]


@pytest.mark.parametrize("block", _python_blocks(), ids=lambda b: f"README.md:{b.line}")
def test_python_block_runs_and_prints_what_its_comments_say(block: Block, stubs: Path):
    expected = [m[1].strip() for m in map(_PRINTED.match, block.text.splitlines()) if m]
    result = subprocess.run(
        [sys.executable, "-c", block.text],
        cwd=REPO,  # the blocks read examples/ and write nothing
        env=core_env(stubs, block.extras),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == expected
