"""Random MIGraphX pads for the property tests of `pad` (the reference against XLA, the lowering
against IREE): a shape, every dim's begin and end pad, and a mode. Pads go from a crop of the
whole dim to past twice its length (reflect then repeats its period); every result dim keeps at
least one element."""

from __future__ import annotations

from hypothesis import strategies as st

PAD_MODES = ("constant", "reflect", "edge")
"""MIGraphX's pad modes, in its enum's order (the number it prints)."""


@st.composite
def random_pads(
    draw: st.DrawFn, max_len: int = 5
) -> tuple[tuple[int, ...], list[int], list[int], str]:
    """(lens, begins, ends, mode)."""
    lens = tuple(draw(st.integers(1, max_len)) for _ in range(draw(st.integers(1, 4))))
    begins: list[int] = []
    ends: list[int] = []
    for n in lens:
        begins.append(draw(st.integers(-n, 2 * n + 2)))
        ends.append(draw(st.integers(max(-n, 1 - n - begins[-1]), 2 * n + 2)))
    return lens, begins, ends, draw(st.sampled_from(PAD_MODES))
