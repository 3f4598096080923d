"""`convcanon.records.NamedTuple` makes the same classes as `typing.NamedTuple`."""

from __future__ import annotations

import pickle
import typing

import pytest

from convcanon.records import NamedTuple


class Window(NamedTuple):
    """A window of one dim."""

    start: int
    stride: int = 1
    name: str = "w"

    @property
    def end(self) -> int:
        return self.start + self.stride

    def shifted(self, by: int) -> Window:
        return self._replace(start=self.start + by)


class TypingWindow(typing.NamedTuple):
    start: int
    stride: int = 1
    name: str = "w"


def test_fields_defaults_methods_and_docstring_are_those_of_the_body() -> None:
    w = Window(3)
    assert w == (3, 1, "w") and isinstance(w, tuple)
    assert Window._fields == TypingWindow._fields == ("start", "stride", "name")
    assert Window._field_defaults == TypingWindow._field_defaults == {"stride": 1, "name": "w"}
    assert w.end == 4 and w.shifted(2) == Window(5)
    assert Window.__doc__ == "A window of one dim."
    assert Window.__qualname__ == "Window" and Window.__module__ == __name__
    assert hash(w) == hash((3, 1, "w"))
    assert pickle.loads(pickle.dumps(w)) == w
    with pytest.raises(TypeError):
        Window()  # start has no default


def test_annotations_resolve_as_typing_namedtuples_do() -> None:
    assert typing.get_type_hints(Window) == typing.get_type_hints(TypingWindow)
    assert typing.get_type_hints(Window) == {"start": int, "stride": int, "name": str}


def test_a_body_that_typing_refuses_is_refused_with_typings_message() -> None:
    with pytest.raises(TypeError) as ours:

        class Bad(NamedTuple):
            a: int = 0
            c: int = 1
            b: int

    with pytest.raises(TypeError) as typings:

        class TypingBad(typing.NamedTuple):
            a: int = 0
            c: int = 1
            b: int

    assert str(ours.value) == str(typings.value)
    assert str(ours.value) == "Non-default namedtuple field b cannot follow default fields a, c"

    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _replace"):

        class Worse(NamedTuple):
            a: int

            def _replace(self) -> None: ...
