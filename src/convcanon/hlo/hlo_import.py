"""XLA HLO in (`convcanon-opt --input-hlo`): HloModuleProto or HLO text -> StableHLO text.

Production compilers of this kind consume HLO, so we accept it and convert with JAX's own converter
(`jax.extend.mlir.hlo_to_stablehlo`). This is the one place in half A that imports JAX: only when
HLO is actually given.
"""

from __future__ import annotations

from pathlib import Path

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.hlo.context import make_context, print_module


def _hlo_text_to_proto(text: str, filename: str) -> bytes:
    try:
        from jax._src.lib import hlo  # pyright: ignore  # JAX's own HLO text parser
    except ImportError:
        raise ConvcanonError(
            "HLO text needs a JAX that can parse it (jax._src.lib.hlo.hlo_module_from_text);"
            " pass a serialized HloModuleProto (.pb) instead",
            SourceLoc(filename),
        ) from None
    try:
        return hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    except Exception as err:  # XLA raises its own status errors; all mean "bad HLO text"
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConvcanonError(f"cannot parse HLO text: {first}", SourceLoc(filename)) from None


def hlo_bytes_to_module(data: bytes, filename: str, context: ir.Context) -> ir.Module:
    """Convert an HloModuleProto (or HLO text) to a StableHLO module in `context`."""
    try:
        from jax.extend.mlir import hlo_to_stablehlo
    except ImportError:
        raise ConvcanonError(
            "--input-hlo needs JAX (pip install 'convcanon[xla]')", SourceLoc(filename)
        ) from None
    if data.lstrip().startswith(b"HloModule"):
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise ConvcanonError("HLO text is not UTF-8", SourceLoc(filename)) from None
        data = _hlo_text_to_proto(text, filename)
    try:
        bytecode = hlo_to_stablehlo(data)
    except Exception as err:  # the converter reports malformed protos as generic errors
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConvcanonError(
            f"not a valid serialized HloModuleProto: {first}", SourceLoc(filename)
        ) from None
    try:
        return ir.Module.parse(bytecode, context)
    except ir.MLIRError as err:
        raise ConvcanonError(f"converted HLO does not parse: {err}", SourceLoc(filename)) from None


def hlo_file_to_stablehlo_text(path: str) -> str:
    """Read an HLO file (proto or text) and return StableHLO text for the passes."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ConvcanonError(err.strerror or str(err), SourceLoc(path)) from None
    return print_module(hlo_bytes_to_module(data, path, make_context()))
