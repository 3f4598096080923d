"""The Python API mirrors the CLI: same passes, same options, same errors, per-call contexts."""

from __future__ import annotations

import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

import convcanon
from convcanon.diagnostics import ConvcanonError, UsageError
from convcanon.driver import transform_text
from convcanon.hlo.context import make_context, parse_module

REPO = Path(__file__).resolve().parents[2]
SMALL_CNN = (REPO / "examples" / "small_cnn.stablehlo.mlir").read_text()


def test_text_in_gives_the_same_text_and_stats_as_the_cli_driver():
    result = convcanon.canonicalize_conv(SMALL_CNN, gate="general", negative_padding="slice")
    expected = transform_text(
        SMALL_CNN, "x.mlir", "stablehlo-canonicalize-conv{gate=general negative-padding=slice}"
    )
    assert result.text == expected
    assert result.stats["convs-seen"] == 6
    assert result.stats["rewritten-pad"] == 5
    assert result.stats["rewritten-stride"] == 4


def test_module_in_is_rewritten_in_place_and_returned():
    module = parse_module(SMALL_CNN, "x.mlir", make_context())
    out, stats = convcanon.canonicalize_conv(module, gate="general")
    assert out is module
    assert stats["rewritten-stride"] == 4
    assert "stride = [2, 2]" not in str(module)


def _conv1d(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (2,), [(1, 1)])


def test_default_gate_is_the_neuron_preset():
    x, w = jnp.ones((1, 3, 16), jnp.float32), jnp.ones((4, 3, 3), jnp.float32)
    text = jax.jit(_conv1d).lower(x, w).as_text()
    default = convcanon.canonicalize_conv(text)
    assert default.stats == {"convs-seen": 1, "skipped: lhs rank 3 is not 4": 1}
    assert default.text == transform_text(text, "x.mlir", "")
    general = convcanon.canonicalize_conv(text, gate="general")
    assert general.stats["rewritten-stride"] == 1


def test_mhlo_dialect_runs_the_mhlo_pass():
    from convcanon.hlo.legalize import to_mhlo

    module = parse_module(SMALL_CNN, "x.mlir", make_context())
    to_mhlo(module)
    text = str(module)
    assert "mhlo.convolution" in text
    result = convcanon.canonicalize_conv(text, "mhlo", gate="general")
    assert result.stats["rewritten-stride"] == 4
    assert "mhlo.pad" in result.text


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"gate": "wide"}, "must be one of"),
        ({"no_such_option": True}, "unknown option"),
        ({"max_window_param": "31"}, r"must be an integer >= 1; got '31' \(a str\)"),
        ({"max_mac_ratio": float("nan")}, "must be a finite number >= 1; got 'nan'"),
    ],
)
def test_bad_options_are_usage_errors(options: dict[str, object], fragment: str):
    with pytest.raises(UsageError, match=fragment):
        convcanon.canonicalize_conv(SMALL_CNN, **options)


def test_unknown_dialect_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown dialect"):
        convcanon.canonicalize_conv(SMALL_CNN, "tosa")  # type: ignore[arg-type]


def test_malformed_text_raises_a_located_error():
    with pytest.raises(ConvcanonError) as info:
        convcanon.canonicalize_conv("func.func @f() {\n  %0 = stablehlo.bogus\n}\n")
    assert info.value.loc is not None and info.value.loc.line == 2


class _Net(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.Conv(4, (3, 3), strides=(2, 2), padding=((1, 2), (0, 1)))(x)
        x = nn.relu(x)
        x = nn.Conv(6, (3, 3), strides=(2, 1), kernel_dilation=(1, 2), feature_group_count=2)(x)
        return nn.Conv(3, (1, 1), strides=(2, 2))(x)


def test_from_jax_round_trips_a_flax_cnn_with_xla_equal_results():
    net = _Net()
    x = jax.random.normal(jax.random.PRNGKey(1), (2, 17, 15, 3))
    params = net.init(jax.random.PRNGKey(0), x)
    result = convcanon.from_jax(net.apply, params, x, compare=True, gate="general")
    assert result.max_abs_error is not None and result.max_abs_error < 1e-4
    assert result.stats["rewritten-stride"] == 3
    assert "stablehlo.convolution" in result.original_text


def test_from_jax_compare_catches_a_wrong_rewrite(monkeypatch: pytest.MonkeyPatch):
    """The comparison is real: corrupt the rewritten text and it must raise."""
    import convcanon.api as api

    real = api.canonicalize_conv

    def corrupt(text: str, dialect: str = "stablehlo", **options: object):
        result = real(text, dialect, **options)  # type: ignore[arg-type]
        result.text = result.text.replace("stablehlo.add", "stablehlo.subtract", 1)
        return result

    monkeypatch.setattr(api, "canonicalize_conv", corrupt)
    x = jnp.ones((1, 9, 9, 8), jnp.float32)  # 8 features: four phase convs and their adds
    w = jnp.asarray(np.random.default_rng(0).normal(size=(3, 3, 8, 2)), jnp.float32)

    def conv(x: jax.Array, w: jax.Array) -> jax.Array:
        dims = ("NHWC", "HWIO", "NHWC")
        return jax.lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dims)

    with pytest.raises(AssertionError, match="differs on XLA"):
        api.from_jax(conv, x, w, compare=True, gate="general")


def test_two_threads_canonicalize_different_modules_at_once():
    other = transform_text(SMALL_CNN, "x.mlir", "")  # same model, parsed separately per call
    inputs = [SMALL_CNN, other.replace("@main", "@main")]
    expected = [convcanon.canonicalize_conv(t, gate="general").text for t in inputs]
    results: list[list[str]] = [[], []]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def work(index: int) -> None:
        try:
            barrier.wait()
            for _ in range(5):
                results[index].append(
                    convcanon.canonicalize_conv(inputs[index], gate="general").text
                )
        except BaseException as err:  # noqa: BLE001 - surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for index in range(2):
        assert results[index] == [expected[index]] * 5
