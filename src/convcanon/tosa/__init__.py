"""The TOSA 1.0 dialect as `migraphx-to-tosa` emits it: ops (xDSL) and their shape rules."""
