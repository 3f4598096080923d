"""What kind of file an input is, from its text alone (before any parser is imported): which IR
framework it needs, and, when a parser refuses it, the hint that points the user the right way;
and the reading and printing settings both halves share."""

from __future__ import annotations

import re
from contextvars import ContextVar

from convcanon.fileio.split_input import ChunkText
from convcanon.records import NamedTuple

# `--allow-unregistered-dialect`: both halves' parsers let ops of unknown dialects through.
UNREGISTERED_DIALECTS: ContextVar[bool] = ContextVar("allow_unregistered_dialect", default=False)
# `--mlir-disable-threading`: MLIR contexts run their passes on one thread.
SINGLE_THREADED: ContextVar[bool] = ContextVar("mlir_disable_threading", default=False)
# `--verify-each`: MLIR's pass manager verifies the module after each of its passes.
VERIFY_EACH: ContextVar[bool] = ContextVar("verify_each", default=True)
# `--no-implicit-module`: an input is one top-level op, not ops wrapped in a module.
NO_IMPLICIT_MODULE: ContextVar[bool] = ContextVar("no_implicit_module", default=False)
# `--verify-roundtrip`: each input module must print and parse back to itself.
VERIFY_ROUNDTRIP: ContextVar[bool] = ContextVar("verify_roundtrip", default=False)


class AsmFlags(NamedTuple):
    """mlir-opt's printer flags that only change how the text reads, which MLIR's printer has
    and xDSL's does not."""

    local_scope: bool = False  # --mlir-print-local-scope: locations inline, not as aliases
    nameloc_prefix: bool = False  # --mlir-use-nameloc-as-prefix: `%sum` for a `loc("sum")`
    elide_resources: int | None = None  # --mlir-elide-resource-strings-if-larger
    skip_regions: bool = False  # --mlir-print-skip-regions: `module {...}`
    pretty_locations: bool = False  # --mlir-pretty-debuginfo: locations for a reader, not parser

    def asked(self) -> list[str]:
        """The flags that ask for something, as the command line spells them."""
        flags = (
            "--mlir-print-local-scope",
            "--mlir-use-nameloc-as-prefix",
            "--mlir-elide-resource-strings-if-larger",
            "--mlir-print-skip-regions",
            "--mlir-pretty-debuginfo",
        )
        return [
            flag for flag, v in zip(flags, self, strict=True) if v is not None and v is not False
        ]


PLAIN_ASM = AsmFlags()


def sniff_framework(text: str, default: str = "hlo") -> str:
    """A file with migraphx or tosa ops is half B's (xDSL), one with HLO ops is jaxlib's; a
    module with neither (a lowered squeeze is a bare `func.return`) gets `default`."""
    if "migraphx." in text or "tosa." in text or "!migraphx" in text:
        return "xdsl"
    if "stablehlo." in text or "mhlo." in text or "chlo." in text:
        return "hlo"
    return default


# What an MLIR file's first statement can be, after blank lines and `//` comments: an op (a
# result `%x =`, a generic `"name"(`, a builtin op, or a `dialect.op` name), an attribute or type
# alias (`#map = ...`, `!t = ...`), a resource section (`{-#`) or a bytecode file's magic.
_MLIR_START = re.compile(
    r"\A(?:[ \t\r]*(?://[^\n]*)?\n)*[ \t\r]*"
    r"(?:%|\"|\{-#|ML\xefR|[#!][\w.$-]+\s*=|(?:module|builtin\.\w+|unrealized_conversion_cast)\b"
    r"|[A-Za-z_][\w$]*\.[\w$.]+(?:\s|[@({<]|$))"
)
# MIGraphX's printed program (`program::print`): a `module: "name"` header or an instruction,
# `[mod:]name = op[fields](args) -> type, {lens}, {strides}`.
_MIGRAPHX_PROGRAM = re.compile(
    r'(?m)\A(?:[ \t\r]*\n)*[ \t\r]*(?:module:[ \t]*"[^"\n]*"[ \t\r]*$'
    r"|[^\s=#%!\"][^\s=]* = (?:@return\(|(?:@param:|@literal|[A-Za-z_]\w*[\[(])"
    r"[^\n]*->[ \t]*\w+_type\b))"
)
_UNREGISTERED_ADVICE = ". If this is intended"
UNREGISTERED_ADVICE = "--allow-unregistered-dialect lets ops of unknown dialects through"
# MLIR names a type of a dialect it does not know as !"dialect"<"body">
_QUANT_TYPE = '`!"quant"<'
NO_QUANT_DIALECT = (
    "quantized types cannot be read: jaxlib's MLIR, which reads StableHLO and MHLO here, has no "
    "quant dialect"
)
_OPS = {"hlo": "StableHLO/MHLO", "xdsl": "migraphx/TOSA"}
_TAKEN_BY = {"hlo": "stablehlo-canonicalize-conv or canonicalize-conv", "xdsl": "migraphx-to-tosa"}


def holds_no_op(text: str) -> bool:
    """Whether `text` is only whitespace and `//` comments (an empty file, the chunk after a
    trailing `// -----`): MLIR reads it as an empty module, where xDSL's parser refuses it."""
    at = 0
    while True:
        while at < len(text) and text[at] in " \t\r\n":  # MLIR's whitespace
            at += 1
        if not text.startswith("//", at):
            return at == len(text)
        at = text.find("\n", at)
        if at < 0:
            return True


_NON_BLANK = re.compile(r"\S")
_LINE_END = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # str.splitlines' ends


def first_line(text: str) -> str:
    """The first line that is not blank, shortened for a message."""
    first = _NON_BLANK.search(text)  # not splitlines(): its list of every line was 4x the text
    if first is None:
        return ""
    end = _LINE_END.search(text, first.start())
    line = text[first.start() : end.start() if end else len(text)].strip()
    return line if len(line) <= 40 else line[:37] + "..."


def _not_mlir(text: str) -> str | None:
    """What a file that is not MLIR text is, from how it starts (None: it may be MLIR)."""
    if _MIGRAPHX_PROGRAM.match(text):
        return (
            "this is a MIGraphX printed program, not MLIR: "
            "`convcanon import-migraphx FILE` turns it into a migraphx module"
        )
    if not _MLIR_START.match(text):
        return (
            f"this file is not MLIR: it starts with {first_line(text)!r}, "
            "not an op, an alias or a comment"
        )
    return None


def with_input_kind_hint(message: str, text: str, framework: str) -> str:
    """A parse error under `framework`'s passes, with what the file really is when that explains
    it: not MLIR at all; a MIGraphX printed program (`convcanon import-migraphx` reads those); the
    other half's module, and the pass that takes it. MLIR's advice to allow unregistered dialects
    becomes our flag's name when the module is ours, is dropped when it is not, and where the
    unknown dialect is `quant` (StableHLO's quantized types) says that no flag helps."""
    message, advice, _ = message.partition(_UNREGISTERED_ADVICE)
    if advice and _QUANT_TYPE in message:
        return f"{message} ({NO_QUANT_DIALECT})"
    if not text:  # read from bytecode: no text tells what the file is
        return f"{message} ({UNREGISTERED_ADVICE})" if advice else message
    # a chunk that starts after its marker: what it starts with does not say what the file is
    other_kind = None if isinstance(text, ChunkText) and text.column > 1 else _not_mlir(text)
    if other_kind is not None:
        return f"{message} ({other_kind})"
    found = sniff_framework(text, default=framework)
    if found != framework:
        return f"{message} (this module holds {_OPS[found]} ops: {_TAKEN_BY[found]} takes them)"
    if advice:
        return f"{message} ({UNREGISTERED_ADVICE})"
    return message
