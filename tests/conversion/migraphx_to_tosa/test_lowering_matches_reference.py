"""Many random programs: the lowered TOSA, run by our TOSA interpreter, equals the migraphx
reference semantics over flat strided buffers (cheap: no IREE compile; IREE judges a subset in
test_lowering_matches_iree). Convs, whose two interpreters share one numpy kernel, are judged
by XLA instead."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

from convcanon.xdsl_io import parse_file_text

from .harness import as_signless, check_with_interpreter, lower, random_inputs, reference
from .programs import (
    ConvConfig,
    Lens,
    conv_configs,
    conv_program,
    dot_programs,
    elementwise_programs,
    memory_layouts,
    reduction_programs,
)

# numpy warns of nothing in the reference, whatever the values (no RuntimeWarning of a cast)
pytestmark = pytest.mark.filterwarnings("error")

_MANY = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]


def _logical(buffer: np.ndarray, lens: Lens, strides: Lens) -> np.ndarray:
    """The tensor a flat strided buffer holds."""
    return as_strided(buffer, lens, [s * buffer.itemsize for s in strides], writeable=False)


def _xla_conv(cfg: ConvConfig, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None):
    """The program `conv_program` writes (conv, then + bias and relu), computed by XLA."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    y = lax.conv_general_dilated(
        jnp.asarray(x),
        jnp.asarray(w),
        window_strides=cfg.stride,
        padding=list(zip(cfg.begins, cfg.ends, strict=True)),
        rhs_dilation=cfg.dilation,
        feature_group_count=cfg.group,
        precision=lax.Precision.HIGHEST,
    )
    if bias is not None:
        y = jax.nn.relu(y + bias.reshape(1, -1, *[1] * len(cfg.spatial)))
    return np.asarray(y)


@_MANY
@given(data=st.data())
def test_random_conv_lowering_matches_xla(data: st.DataObject) -> None:
    """The lowered TOSA (TOSA interpreter) and the migraphx program (migraphx interpreter),
    each over flat strided buffers of random layouts, against XLA's conv of the tensors."""
    cfg = data.draw(conv_configs())
    x_strides, w_strides, out_strides = (
        data.draw(memory_layouts(lens)) for lens in (cfg.in_lens, cfg.w_lens, cfg.out_lens)
    )
    text = conv_program(cfg, x_strides, w_strides, out_strides, bias=data.draw(st.booleans()))
    inputs = random_inputs(parse_file_text(text, "<test>"))
    x, w = _logical(inputs[0], cfg.in_lens, x_strides), _logical(inputs[1], cfg.w_lens, w_strides)
    expected = _xla_conv(cfg, x, w, inputs[2] if len(inputs) == 3 else None)
    flat = [as_signless(v) for v in inputs]
    for (result,) in (reference(lower(text), flat), reference(text, inputs)):
        got = _logical(result, cfg.out_lens, out_strides)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@_MANY
@given(elementwise_programs())
def test_random_elementwise_lowering_matches_reference(text: str) -> None:
    check_with_interpreter(text)


@_MANY
@given(dot_programs())
def test_random_dot_lowering_matches_reference(text: str) -> None:
    check_with_interpreter(text)


@_MANY
@given(reduction_programs())
def test_random_reduction_lowering_matches_reference(text: str) -> None:
    check_with_interpreter(text)
