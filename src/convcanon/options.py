"""Pass options, declared once per pass as a NamedTuple whose fields carry their help and range.

A field's name, type and default are the option's (`max_phases: int = 64` is `max-phases=64`); a
`Literal` type lists the allowed words, and the `Doc` in its `Annotated` metadata gives the help
text and, for numbers, the least value. From that one declaration come the pipeline parser
(`pass{opt=v}`), `--help`, the Python API's keyword checks, the typed options a pass reads and the
options table of docs/cli.md, so the command line and the API accept and refuse the same values
with the same message. This module imports nothing heavy: `--help` and usage errors stay fast.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, get_args, get_origin

from convcanon.diagnostics import UsageError
from convcanon.fileio.limits import INT64_MAX  # an int option's largest: int64 in MLIR
from convcanon.records import NamedTuple

if TYPE_CHECKING:
    from typing import Protocol

    class _Declaration(Protocol):
        """A pass's options NamedTuple (its class, seen through what this module reads of it);
        for type checkers only, as making a Protocol class costs start-up time."""

        __annotations__: dict[str, Any]
        _fields: tuple[str, ...]
        _field_defaults: dict[str, Any]


# The spellings of a boolean LLVM's command line takes, a pass option's and a flag's alike
# (`=TRUE` is refused there too).
LLVM_BOOLEANS: dict[str, bool] = {"true": True, "1": True, "false": False, "0": False}
OptionValue = bool | int | float | str

_DECIMAL_INT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def decimal_int(text: str) -> int | None:
    """An integer in ASCII decimal digits, or None: Python's `int` also takes `1_000`, spaces
    and the digits of other scripts (`٣`), which no MLIR tool reads as a number. Past Python's
    4300 digits it is None too (`int` refuses to convert it)."""
    if not _DECIMAL_INT.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:
        return None


def decimal_float(text: str) -> float | None:
    """A number in ASCII decimal notation (`2`, `1.5`, `1e3`), or None (as `decimal_int`)."""
    return float(text) if _DECIMAL_FLOAT.fullmatch(text) else None


class Doc:
    """An option's help text and, for an int or float option, the least value it may take.

    A plain class: a dataclass would cost ~1 ms of every start-up (the registry imports this)."""

    __slots__ = ("help", "minimum")

    def __init__(self, help: str, minimum: int | float | None = None) -> None:
        self.help = help
        self.minimum = minimum


class OptionTypeError(UsageError, TypeError):
    """A Python API option of the wrong type (`max_phases="8"`): bad usage, and a `TypeError`."""


def spelling(value: object) -> str:
    """`value` as a pipeline would write it (`true`, `2.0`, `nan`), so both front ends say the
    same thing about it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        try:
            return str(value)
        except ValueError:  # past Python's int-to-text digit limit
            return f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return value
    return repr(value)


class OptionSpec(NamedTuple):
    """One pass option as the parser, `--help`, the API and the README see it."""

    name: str  # as a pipeline writes it: max-phases
    kind: type  # bool, int, float or str
    default: OptionValue
    help: str
    choices: tuple[str, ...] = ()
    minimum: int | float | None = None

    @property
    def keyword(self) -> str:
        """The Python API's keyword and the NamedTuple field: max_phases."""
        return self.name.replace("-", "_")

    @property
    def values(self) -> str:
        """What it takes, shortly: `neuron|general`, `true|false`, `integer >= 1`."""
        if self.choices:
            return "|".join(self.choices)
        if self.kind is bool:
            return "true|false"
        what = {int: "integer", float: "number"}[self.kind]
        return what if self.minimum is None else f"{what} >= {spelling(self.minimum)}"

    def _expected(self) -> str:
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        if self.kind is bool:
            return "true or false"
        what = {int: "an integer", float: "a finite number"}[self.kind]
        return what if self.minimum is None else f"{what} >= {spelling(self.minimum)}"

    def _refusal(self, pass_name: str, spelled: str, value: object = None) -> str:
        expected = self._expected()
        if isinstance(value, int) and not isinstance(value, bool) and value > INT64_MAX:
            expected += f" and <= {INT64_MAX}"  # an int64 option, as mlir-opt declares it
        return f"{pass_name}: option '{self.name}' must be {expected}; got {spelled!r}"

    def parse(self, pass_name: str, text: str) -> OptionValue:
        """A pipeline's text for this option as its value; anything else is a `UsageError`."""
        value: OptionValue | None = text
        if self.kind is bool:
            value = True if text == "" else LLVM_BOOLEANS.get(text)  # bare: true
        elif self.kind is int:
            value = decimal_int(text)
        elif self.kind is float:
            value = decimal_float(text)
        if value is None or not self._allows(value):
            raise UsageError(self._refusal(pass_name, text, value))
        return value

    def check(self, pass_name: str, value: object) -> OptionValue:
        """A Python value for this option, refused with the message `parse` gives its spelling;
        a value of the wrong type is an `OptionTypeError` that also names the type it is."""
        spelled = spelling(value)  # as given: `max_mac_ratio=-1` is refused as `-1`, not `-1.0`
        if isinstance(value, bool) != (self.kind is bool) or not isinstance(
            value, (int, float) if self.kind is float else self.kind
        ):
            raise OptionTypeError(f"{self._refusal(pass_name, spelled)} (a {type(value).__name__})")
        if self.kind is float and isinstance(value, int | float):
            try:
                value = float(value)
            except OverflowError:  # an int past float's range: not a finite number
                value = math.inf
        assert isinstance(value, (bool, int, float, str))
        if not self._allows(value):
            raise UsageError(self._refusal(pass_name, spelled, value))
        return value

    def _allows(self, value: OptionValue) -> bool:
        if self.choices:
            return value in self.choices
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if isinstance(value, str | bool):
            return True
        if isinstance(value, int) and value > INT64_MAX:
            return False
        return self.minimum is None or value >= self.minimum

    def describe(self) -> str:
        """The `--help` line."""
        return f"{self.name}=<{self.values}> (default {spelling(self.default)}): {self.help}"


@cache
def declared_options(declaration: type[_Declaration]) -> tuple[OptionSpec, ...]:
    """The options a NamedTuple declares, in field order; a field without a `Doc`, a default or a
    type of bool, int, float, str or a `Literal` of words is a bug in the declaration."""
    # a declaration's module evaluates its annotations (no `from __future__ import annotations`):
    # evaluating them from strings here would cost ~0.3 ms of every start-up
    hints = declaration.__annotations__
    specs = []
    for field in declaration._fields:
        hint = hints[field]
        assert get_origin(hint) is Annotated, f"{field}: no Doc"
        kind, *metadata = get_args(hint)
        (doc,) = (m for m in metadata if isinstance(m, Doc))
        choices: tuple[str, ...] = get_args(kind) if get_origin(kind) is Literal else ()
        if choices:
            assert all(isinstance(c, str) for c in choices), field
            kind = str
        assert kind in (bool, int, float, str) and field in declaration._field_defaults, field
        assert doc.minimum is None or kind in (int, float), field
        spec = OptionSpec(
            field.replace("_", "-"),
            kind,
            declaration._field_defaults[field],
            doc.help,
            choices,
            doc.minimum,
        )
        spec.check("declaration", spec.default)  # a default outside its own range is a bug
        specs.append(spec)
    return tuple(specs)


def _unknown(pass_name: str, key: str, known: list[str]) -> UsageError:
    return UsageError(f"{pass_name}: unknown option {key!r}; options: {', '.join(known) or 'none'}")


def keyword_options(
    pass_name: str, specs: tuple[OptionSpec, ...], keywords: Mapping[str, object]
) -> dict[str, OptionValue]:
    """The Python API's keywords (`negative_padding="slice"`, or the pipeline's own names) as the
    pass's option mapping, every option present, each value checked as the pipeline parser
    checks it."""
    by_name = {spec.name: spec for spec in specs}
    resolved: dict[str, OptionValue] = {spec.name: spec.default for spec in specs}
    for key, value in keywords.items():
        spec = by_name.get(key.replace("_", "-"))
        if spec is None:
            raise _unknown(pass_name, key, [s.keyword for s in specs])
        resolved[spec.name] = spec.check(pass_name, value)
    return resolved


D = TypeVar("D", bound="_Declaration")


def options_from_mapping(declaration: type[D], options: Mapping[str, object], pass_name: str) -> D:
    """A pass's option mapping (the parser's or the API's, by pipeline names) as its typed
    options; absent ones take their defaults, and values are checked again, so a pass called
    directly holds the same promise."""
    specs = declared_options(declaration)
    by_name = {spec.name: spec for spec in specs}
    for key in options:
        if key not in by_name:
            raise _unknown(pass_name, key, list(by_name))
    values = {
        spec.keyword: spec.check(pass_name, options[spec.name])
        if spec.name in options
        else spec.default
        for spec in specs
    }
    return declaration(**values)
