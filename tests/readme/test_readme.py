"""Every page runs as written: README.md and each docs/*.md, its shell commands and Python blocks
in order, in a fresh copy of the checkout; Python blocks' printed values are checked against the
`# value` comments beside them, and an output the page shows right after a block (a text block
or a table) is what the block's last command prints.

Each block runs with only the core importable, plus the extras that the prose just before it says
it needs ("needs the `xla` extra"): optional packages are hidden by stubs that fail to import, as
on a core-only install. So a command that silently needs JAX fails here.

Install steps and the test command itself are not re-run here (they need the network and would
recurse); instead the README's first command must install the core only, and `.ci/run` must run
exactly the README's test command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .pages import (
    LANGUAGES,
    OPTIONAL,
    README,
    REPO,
    Block,
    blocks,
    commands,
    hidden_packages,
    is_test_run,
    page_name,
    pages,
    runnable,
    shell_commands,
)

VENV = Path(sys.prefix)
_NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache"
)


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


@pytest.mark.parametrize("page", pages(), ids=page_name)
def test_every_code_block_is_labelled_so_none_escapes_the_suite(page: Path):
    unlabelled = [b.line for b in blocks(page) if b.language not in LANGUAGES]
    assert not unlabelled, f"{page_name(page)} fences at lines {unlabelled} need bash/python/text"


def test_the_pages_hold_the_commands_and_snippets():
    every = [b for page in pages() for b in blocks(page)]
    assert sum(b.language == "python" for b in every) >= 5
    assert sum(len(shell_commands(page)) for page in pages()) >= 20


def test_a_core_only_block_cannot_import_an_optional_package(stubs: Path):
    code = "import jax"
    core = subprocess.run(
        [sys.executable, "-c", code], env=core_env(stubs, frozenset()), capture_output=True
    )
    assert core.returncode == 1 and b"No module named 'jax'" in core.stderr
    xla = subprocess.run([sys.executable, "-c", code], env=core_env(stubs, frozenset({"xla"})))
    assert xla.returncode == 0


def test_first_command_installs_only_the_core_and_runs_the_main_job():
    (first, first_extras), (second, _) = shell_commands(README)[:2]
    assert not first_extras
    steps = [s.strip() for s in first.split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    assert ".venv/bin/pip install -e ." in steps
    assert "[" not in first, "the first command must not install extras"
    main_job = runnable(first)
    assert main_job is not None and main_job.startswith(".venv/bin/convcanon-opt ")
    assert any(is_test_run(s.strip()) for s in second.split("&&"))


def test_ci_runs_exactly_the_readme_test_command():
    second = shell_commands(README)[1][0]
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert second in [line.strip() for line in ci], f"{second!r} is not a line of .ci/run"


def test_joined_continuation_lines_are_one_command():
    block = Block("bash", "# c\na \\\n  && b\nc\n", 1, "", None)
    assert commands(block) == ["a && b", "c"]


@pytest.fixture
def checkout_copy(tmp_path: Path) -> Path:
    """A fresh copy of the checkout whose `.venv` is the venv running these tests."""
    if not (VENV / "bin" / "convcanon").exists():
        pytest.skip(f"the tests do not run in a venv with convcanon installed ({VENV})")
    copy = tmp_path / "convcanon"
    shutil.copytree(REPO, copy, ignore=_NOT_COPIED, symlinks=True)
    (copy / ".venv").symlink_to(VENV, target_is_directory=True)
    return copy


_PRINTED = re.compile(r"^print\(.*\)\s+#\s*(.+)$")


def _run_python(block: Block, where: str, cwd: Path, env: dict[str, str]) -> None:
    expected = [m[1].strip() for m in map(_PRINTED.match, block.text.splitlines()) if m]
    result = subprocess.run(
        [sys.executable, "-c", block.text],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"{where}: Python block failed\n{result.stderr}"
    assert result.stdout.splitlines() == expected, f"{where}: printed values differ"


def _run_shell(block: Block, where: str, cwd: Path, env: dict[str, str]) -> str | None:
    """Run the block's commands in order; the last one's stdout, or None if none ran."""
    no_dot = shutil.which("dot") is None and os.environ.get("CI", "").lower() != "true"
    stdout = None
    for command in commands(block):
        step = runnable(command)
        if step is None or (no_dot and step.startswith(".venv/bin/convcanon graph ")):
            stdout = None
            continue  # installs are not re-run; rendering needs Graphviz, which the docs name
        result = subprocess.run(
            ["bash", "-c", step],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, (
            f"{where}\n$ {step}\n(extras: {sorted(block.extras) or 'none'})\n"
            f"exit {result.returncode}\n{result.stderr}"
        )
        stdout = result.stdout
    return stdout


@pytest.mark.parametrize("page", pages(), ids=page_name)
def test_page_runs_as_written_in_order(page: Path, checkout_copy: Path, stubs: Path):
    for block in blocks(page):
        where = f"{page_name(page)}:{block.line}"
        env = core_env(stubs, block.extras)
        if block.language == "python":
            _run_python(block, where, checkout_copy, env)
        elif block.language == "bash":
            stdout = _run_shell(block, where, checkout_copy, env)
            if block.output is not None and stdout is not None:
                assert stdout == block.output, f"{where}: the output shown is not what it prints"


def test_the_output_a_page_shows_is_the_block_or_markdown_right_after(tmp_path: Path):
    page = tmp_path / "p.md"
    page.write_text(
        "```bash\na\n```\n\n```text\nout\n```\n"
        "```bash\nb\n```\n\n| t |\n|---|\n\n- n: 1\n\nprose\n"
        "```bash\nc\n```\nprose\n```text\nnot its output\n```\n"
    )
    shown = [b.output for b in blocks(page) if b.language == "bash"]
    assert shown == ["out\n", "| t |\n|---|\n\n- n: 1\n", None]
