"""`migraphx-to-tosa`'s options, declared once (see `convcanon.options`): adding an option is
adding a field here. Imported by the pass registry for `--help`, so it imports nothing heavy."""

from collections.abc import Mapping
from typing import Annotated, Literal

from convcanon.options import Doc, options_from_mapping
from convcanon.records import NamedTuple

Types = Literal["conformant", "native"]


class MigraphxToTosaOptions(NamedTuple):
    """The pass's options, typed; each field's `Doc` is its `--help` and docs/cli.md text."""

    types: Annotated[
        Types,
        Doc(
            "conformant: fp8 FNUZ, e8m0, fp4 and int4 values travel as their storage integers"
            " (MIGraphX's buffers; every tensor inside TOSA 1.0's profiles, as IREE requires);"
            " native: tensors of those types, for backends that have them"
        ),
    ] = "conformant"
    strict_strides: Annotated[
        bool,
        Doc(
            "a declared layout must tile memory and an intermediate's declared strides must be"
            " its op's (errors); default: every layout that is only read is accepted, and a"
            " contradicted intermediate takes its op's strides with a warning"
        ),
    ] = False

    @staticmethod
    def from_mapping(options: Mapping[str, object]) -> "MigraphxToTosaOptions":
        """The parser's or the API's option mapping (pipeline names), each value checked."""
        return options_from_mapping(MigraphxToTosaOptions, options, "migraphx-to-tosa")
