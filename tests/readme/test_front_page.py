"""The README is a front page and docs/ holds the rest: the README is short and narrow, links every
page, and its examples keep the default gate; the pages' links resolve; the CLI reference names
every option of every command; the PyTorch install is the pinned CPU-only build."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .pages import DOCS, README, blocks, page_name, pages

MAX_LINES, MAX_WIDTH = 150, 100
#: The pages the README's table must point at (the reference moved out of the README).
REQUIRED_PAGES = [
    "user-guide.md",
    "cli.md",
    "formats.md",
    "engine-policies.md",
    "verification.md",
    "bad_input.md",
    "ARCHITECTURE.md",
    "fuzzing.md",
]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_is_a_front_page_of_short_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines, over {MAX_LINES}"
    wide = [i for i, line in enumerate(lines, 1) if len(line) > MAX_WIDTH]
    assert not wide, f"README.md lines over {MAX_WIDTH} characters: {wide}"


def test_readme_links_every_docs_page():
    linked = {target.partition("#")[0] for target in _LINK.findall(README.read_text())}
    assert {f"docs/{name}" for name in REQUIRED_PAGES} <= linked
    on_disk = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert on_disk <= linked, f"docs pages the README does not link: {sorted(on_disk - linked)}"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {_anchor(m[1]) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def _broken_links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"\w+://", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", pages(), ids=page_name)
def test_every_link_resolves_to_a_file_and_heading(page: Path):
    assert not _broken_links(page), f"{page_name(page)}: broken links {_broken_links(page)}"


def test_a_broken_link_is_found(tmp_path: Path):
    page = tmp_path / "p.md"
    page.write_text("# Top\n\n[a](p.md#top) [b](p.md#nowhere) [c](gone.md) [d](https://x.y/z)\n")
    assert _broken_links(page) == ["p.md#nowhere", "gone.md"]


_GATE = re.compile(r"""gate\s*=\s*['"]?general""")


def test_readme_examples_keep_the_default_gate():
    overriding = [b.line for b in blocks(README) if _GATE.search(b.text)]
    assert not overriding, f"README.md blocks at lines {overriding} override the default gate"


@pytest.mark.parametrize("page", pages(), ids=page_name)
def test_a_block_that_overrides_the_gate_follows_prose_saying_why(page: Path):
    for block in blocks(page):
        if block.language != "text" and _GATE.search(block.text):
            assert (
                "`gate=general` is for" in block.prose or "`gate=general` takes" in block.prose
            ), (
                f"{page_name(page)}:{block.line} overrides the default gate without the prose "
                "before it saying why"
            )


def _torch_installs(text: str) -> list[list[str]]:
    """The arguments of each `pip install` line that installs torch or torch-mlir."""
    installs = [
        line.split("pip install", 1)[1].split()
        for line in text.splitlines()
        if "pip install" in line
    ]
    return [args for args in installs if {_name(a) for a in args} & {"torch", "torch-mlir"}]


def _name(requirement: str) -> str:
    return re.split(r"[=<>~!\[]", requirement, maxsplit=1)[0]


def test_the_pytorch_install_is_the_pinned_cpu_build():
    installs = [args for page in pages() for args in _torch_installs(page.read_text())]
    assert installs, "no page says how to install PyTorch and torch-mlir"
    for args in installs:
        line = " ".join(args)
        for requirement in args:
            if _name(requirement) in {"torch", "torch-mlir"}:
                assert "==" in requirement, f"{requirement} is not pinned: {line}"
            if _name(requirement) == "torch":
                assert "--index-url https://download.pytorch.org/whl/cpu" in line, line


def _long_options(command: list[str]) -> set[str]:
    """The long options `--help` declares: its usage lines and its option lines, not the prose."""
    wide = {**os.environ, "COLUMNS": "1000"}  # an option name is never wrapped
    help_text = subprocess.run(
        [*command, "--help"], capture_output=True, text=True, check=True, timeout=120, env=wide
    ).stdout
    usage, _, rest = help_text.partition("\n\n")
    declared = [re.split(r"(?<=\S)\s{2,}", line, maxsplit=1)[0] for line in rest.splitlines()]
    declared = [line for line in declared if re.match(r"\s{2}-", line)]
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", "\n".join([usage, *declared]))) - {
        "--help"
    }


BIN = Path(sys.prefix) / "bin"
#: Each command and the argv that runs it.
COMMANDS = {
    "convcanon-opt": [str(BIN / "convcanon-opt")],
    **{
        name: [str(BIN / "convcanon"), name]
        for name in ["explain", "run", "verify", "import-migraphx", "graph"]
    },
}


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_reference_names_every_option_of_every_command(command: str):
    argv = COMMANDS[command]
    if not Path(argv[0]).exists():
        pytest.skip(f"the tests do not run in a venv with convcanon installed ({sys.prefix})")
    reference = (DOCS / "cli.md").read_text()
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", reference))
    missing = sorted(_long_options(argv) - named)
    assert not missing, f"docs/cli.md does not name {command}'s options {missing}"


def test_required_pages_exist_and_say_something():
    for name in REQUIRED_PAGES:
        page = DOCS / name
        assert page.exists(), f"docs/{name} is missing"
        assert page.read_text().startswith("# "), f"docs/{name} has no title"
