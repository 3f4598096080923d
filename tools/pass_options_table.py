"""Write docs/cli.md's table of pass options from their declarations (`convcanon.options`).

tests/readme/test_pass_options_table.py fails while that table differs from what the
declarations give; run this after adding or changing an option. Usage:

    python tools/pass_options_table.py
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]

from convcanon.pipeline import pass_options_markdown  # noqa: E402
from tools.readme_section import replace_section  # noqa: E402

START, END = "<!-- pass-options-table:start -->", "<!-- pass-options-table:end -->"


def main() -> int:
    replace_section(pass_options_markdown(), START, END, REPO / "docs" / "cli.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
