"""The float64 reference of the course model, its inputs and the tolerance it implies."""

from __future__ import annotations

import numpy as np
import pytest

from grader.reference import training

SIZES = training.Sizes(n_layers=3, batch=24, d=8, f=16)


def _draw(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = training.draw_params(rng, SIZES.n_layers, SIZES.d, SIZES.f)
    return params, *training.draw_batch(rng, SIZES.batch, SIZES.d)


def _err(got, ref) -> float:
    """Worst array's error as a fraction of its max|ref|."""
    return max(
        float(np.max(np.abs(np.asarray(got[k], np.float64) - ref[k]) / np.max(np.abs(ref[k]))))
        for k in ref
    )


def test_inputs_are_float32_normal_scaled_by_fan_in():
    params, x, y = _draw()
    assert {a.dtype for a in (*params.values(), x, y)} == {np.dtype("float32")}
    assert params["w_in"].shape == (3, 8, 16) and params["w_out"].shape == (3, 16, 8)
    # std ≈ 1/√fan-in: 1/√8 ≈ 0.35 for w_in, 1/√16 = 0.25 for w_out
    assert 0.28 < params["w_in"].std() < 0.43 and 0.2 < params["w_out"].std() < 0.3
    assert len(np.unique(x)) == x.size  # floats, not a handful of small integers


def test_reference_matches_jax_in_float32_within_tolerance():
    import jax

    import tinymodels

    params, x, y = _draw(1)
    value, ref = training.grads(params, x, y)
    got = jax.grad(tinymodels.loss)(params, x, y)
    assert _err(got, ref) <= training.tolerance(SIZES)
    assert value == pytest.approx(float(tinymodels.loss(params, x, y)), rel=1e-5)
    assert training.loss(params, x, y) == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(
        training.forward(params, x), tinymodels.forward(params, x), rtol=1e-5, atol=1e-5
    )


def test_reference_gradient_is_the_derivative():
    """A central difference in float64 agrees with the hand-written backward."""
    params, x, y = _draw(2)
    _, g = training.grads(params, x, y)
    eps = 1e-6
    for key, idx in (("w_in", (1, 2, 3)), ("w_out", (2, 5, 7))):
        up = {k: v.astype(np.float64).copy() for k, v in params.items()}
        down = {k: v.copy() for k, v in up.items()}
        up[key][idx] += eps
        down[key][idx] -= eps
        numeric = (training.loss(up, x, y) - training.loss(down, x, y)) / (2 * eps)
        assert numeric == pytest.approx(g[key][idx], rel=1e-6, abs=1e-10)


def test_bfloat16_inside_is_far_outside_the_tolerance():
    import jax
    import jax.numpy as jnp

    import tinymodels

    params, x, y = _draw(3)
    _, ref = training.grads(params, x, y)
    x16 = x.astype(jnp.bfloat16).astype(np.float32)
    got = jax.grad(tinymodels.loss)(params, x16, y)
    assert _err(got, ref) > 10 * training.tolerance(SIZES)


def test_sgd_step_is_params_minus_lr_grads():
    params, x, y = _draw(4)
    new, value = training.sgd_step(params, x, y, 0.5)
    _, g = training.grads(params, x, y)
    np.testing.assert_allclose(new["w_in"], params["w_in"] - 0.5 * g["w_in"], rtol=1e-12)
    assert value == training.loss(params, x, y)


def _leaf_values(trial_output, expected):
    from grader.checks import Values
    from grader.checks.trees import PerLeaf
    from grader.measure import devices
    from grader.spec import Trial

    check = PerLeaf(
        inner=Values(atol=lambda t: training.tolerance(SIZES)),
        leaf_extra=lambda t, path: {"dtype": "float32"},
    )
    mesh = devices.make_mesh((1,), ("data",))
    return check(Trial(example={}, output=trial_output, expected=expected, mesh=mesh))


def test_per_leaf_values_names_the_wrong_array():
    import jax
    import jax.numpy as jnp

    import tinymodels

    params, x, y = _draw(5)
    _, ref = training.grads(params, x, y)
    got = jax.grad(tinymodels.loss)(params, x, y)
    assert _leaf_values(got, ref).passed
    wrong = {"w_in": got["w_in"], "w_out": 4 * got["w_out"]}
    result = _leaf_values(wrong, ref)
    assert not result.passed and result.message.startswith("['w_out']:")
    assert "['w_out']" in result.evidence[0].text  # a Note naming the array, then its map
    assert [type(e).__name__ for e in result.evidence[1:]] == ["DeviceMap"]
    lossy = jax.tree.map(lambda a: a.astype(jnp.bfloat16).astype(jnp.float32), got)
    assert not _leaf_values(lossy, ref).passed  # rounding the result alone is caught
    result = _leaf_values((got["w_in"], got["w_out"]), ref)
    assert not result.passed and "expected dict(w_in: [3,8,16]" in result.message
