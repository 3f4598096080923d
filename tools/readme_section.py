"""Replace a generated section of a page: the text between its start and end markers."""

from __future__ import annotations

from pathlib import Path


def replace_section(body: str, start: str, end: str, page: Path) -> None:
    """Write `body` between `start` and `end` in `page`; a page without them is an error."""
    text = page.read_text()
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    if not rest:
        raise SystemExit(f"{page}: no {start} marker")
    page.write_text(f"{head}{start}\n{body}{end}{tail}")
