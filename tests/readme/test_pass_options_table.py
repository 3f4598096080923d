"""The CLI reference's table of pass options is the one the option declarations give, row for
row."""

from __future__ import annotations

from pathlib import Path

from convcanon.pipeline import PASSES, pass_options_markdown

CLI_REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
START, END = "<!-- pass-options-table:start -->\n", "<!-- pass-options-table:end -->"


def _reference_table() -> str:
    _, start, rest = CLI_REFERENCE.read_text().partition(START)
    table, end, _ = rest.partition(END)
    assert start and end, f"docs/cli.md has no {START.strip()} ... {END} section"
    return table


def test_reference_table_is_what_the_declarations_give() -> None:
    assert _reference_table() == pass_options_markdown(), (
        "docs/cli.md's pass options table is stale: run python tools/pass_options_table.py"
    )


def test_every_option_of_every_pass_has_a_row_with_its_default() -> None:
    rows = [line.split(" | ") for line in _reference_table().splitlines()[2:]]
    named = {(cells[1].strip("`"), cells[3].strip("`")) for cells in rows}
    for info in PASSES.values():
        for option in info.options:
            default = str(option.default).lower() if option.kind is bool else str(option.default)
            assert (option.name, default) in named, (info.name, option.name)
