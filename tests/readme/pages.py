"""The documentation pages as the tests read them: README.md and docs/*.md, their fenced blocks,
the shell commands in those blocks, and the extras the prose before each block says it needs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
LANGUAGES = {"bash", "python", "text"}
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_NEEDS = re.compile(r"needs the `?(\w+)`? extra")

#: The optional packages each extra brings (pyproject.toml); the core has none of them.
EXTRAS = {"xla": {"jax"}, "iree": {"iree"}, "examples": {"jax", "flax"}}
OPTIONAL = set().union(*EXTRAS.values())


def pages() -> list[Path]:
    """Every page whose commands must run as written: the README first, then docs/ by name."""
    return [README, *sorted(DOCS.glob("*.md"))]


def page_name(page: Path) -> str:
    return str(page.relative_to(REPO))


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    line: int  # of the opening fence, 1-based
    prose: str  # between the previous block and this one
    output: str | None  # a `text` block or a table right after it (blank lines between): its output

    @property
    def extras(self) -> frozenset[str]:
        """The extras the prose before the block says it needs."""
        return frozenset(_NEEDS.findall(self.prose))


def _shown_output(after: str) -> str | None:
    """What the page shows right after a block as its output: a text block, or markdown (a table
    and the list after it, as `explain --format markdown` prints them)."""
    rest = after.lstrip("\n")
    if rest.startswith("```text\n"):
        return rest[len("```text\n") : rest.index("\n```", len("```text")) + 1]
    if rest.startswith("|"):
        shown = []
        for line in rest.splitlines():
            if line and not line.startswith(("|", "- ")):
                break
            shown.append(line)
        return "\n".join(shown).rstrip("\n") + "\n"
    return None


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found, previous_end = [], 0
    for m in _FENCE.finditer(text):
        prose = text[previous_end : m.start()]
        output = _shown_output(text[m.end() :]) if m[1] != "text" else None
        found.append(Block(m[1], m[2], text.count("\n", 0, m.start()) + 1, prose, output))
        previous_end = m.end()
    return found


def commands(block: Block) -> list[str]:
    """The shell commands of a bash block: one per line, `\\`-continued lines joined, comments
    left out."""
    joined = re.sub(r"\\\n\s*", "", block.text)
    return [
        line.strip()
        for line in joined.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def shell_commands(page: Path) -> list[tuple[str, frozenset[str]]]:
    """Every command of every bash block of `page`, in order, with the block's extras."""
    return [
        (command, block.extras)
        for block in blocks(page)
        if block.language == "bash"
        for command in commands(block)
    ]


def hidden_packages(extras: frozenset[str]) -> set[str]:
    unknown = extras - EXTRAS.keys()
    assert not unknown, f"a page names unknown extras {sorted(unknown)}"
    return OPTIONAL - set().union(*(EXTRAS[e] for e in extras))


def is_install(step: str) -> bool:
    return step.startswith(("python3 -m venv", ".venv/bin/pip install"))


def is_test_run(step: str) -> bool:
    return step.startswith(".venv/bin/python -m pytest")


def runnable(command: str) -> str | None:
    """The command without its install and test-run steps (`a && b && c`), or None if nothing is
    left."""
    steps = [s.strip() for s in command.split("&&")]
    kept = [s for s in steps if not is_install(s) and not is_test_run(s)]
    return " && ".join(kept) or None
