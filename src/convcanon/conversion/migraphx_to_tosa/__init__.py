"""`migraphx-to-tosa`: type conversion at the boundary, per-op lowerings, the TOSA emitter."""

from convcanon.conversion.migraphx_to_tosa.function_lowering import migraphx_to_tosa

__all__ = ["migraphx_to_tosa"]
