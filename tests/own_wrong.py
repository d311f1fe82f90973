"""Wrong programs of issue 45's helper (not in tests/mistakes): kinds nobody catalogued,
each a one-line edit of the solution, for tests/test_relate.py (the feedback they get)."""

from __future__ import annotations

from tests.mistakes import Mistake

ADAM_NEW = 'new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}'

OWN = [
    Mistake(
        id="own-adam-m-not-stored", module="l15_optimizer", exercise="adamw_step",
        status="failed", check="values",
        says=("your [1]['m'] equals the input argument",),
        patch=((ADAM_NEW, ADAM_NEW.replace('"m": m', '"m": state["m"]')),),
    ),
    Mistake(
        id="own-adam-m-v-swapped", module="l15_optimizer", exercise="adamw_step",
        status="failed", check="values",
        says=("your [1]['m'] equals the expected leaf [1]['v']", "leaves wrong: [1]['m'], [1]['v']"),
        patch=((ADAM_NEW, ADAM_NEW.replace('"m": m, "v": v', '"m": v, "v": m')),),
    ),
    Mistake(
        id="own-zero1-mean-over-micro-only", module="l15_optimizer", exercise="zero1_step",
        status="failed", check="values",
        says=("leaves wrong: [0], [1]['m'], [1]['master'], [1]['v']; right: [1]['step']",),
        patch=(("n_terms = lax.axis_size(AXIS) * g.shape[1]", "n_terms = g.shape[1]"),),
    ),
    Mistake(
        id="own-adam-keeps-bias-corrected-moments", module="l15_optimizer",
        exercise="adamw_step", status="failed", check="values",
        says=("the factor is 1/(1 − b1ᵗ)", "the bias correction of m at t = "),
        patch=(("    return master, m, v\n", "    return master, m_hat, v_hat\n"),),
    ),
    Mistake(
        id="own-dp-step-ascends", module="l06_data_parallel", exercise="dp_train_step",
        status="failed", check="values",
        says=("(your update) is exactly -1× the expected update", "sign flipped"),
        patch=(("w - lr * (g / n)", "w + lr * (g / n)"),),
    ),
    Mistake(
        id="own-fsdp-step-divides-by-n-again", module="l07_fsdp", exercise="fsdp_train_step",
        status="failed", check="values",
        says=("(your update) is exactly", "× the expected update", "the factor is 1/(N, the size of mesh axis 'data'"),
        patch=(("w - lr * gw", "w - lr * gw / lax.axis_size('data')"),),
    ),
    Mistake(
        id="own-clip-pmean-of-squares", module="l15_optimizer", exercise="clip_by_global_norm",
        status="failed", check="values",
        says=("Your program all-reduces", "‖g‖/√N"),
        patch=(("lax.psum(jnp.sum(g * g), AXIS)", "lax.pmean(jnp.sum(g * g), AXIS)"),),
    ),
    Mistake(
        id="own-l04-scatter-out-specs-rows", module="l04_sharded_matmul",
        exercise="matmul_reducescatter", status="failed", check="values",
        says=("has its blocks along the wrong dimension", "put together along dimension 1 (columns) instead, are the expected value exactly",
              "your output's sharding P('x', None) splits dimension 0 (rows)"),
        patch=(('in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")',
                'in_specs=(P(None, "x"), P("x", None)), out_specs=P("x", None)'),),
    ),
    Mistake(
        id="own-l05-last-block-own-columns", module="l05_collective_matmul",
        exercise="allgather_matmul", status="failed", check="values",
        says=("is exactly a sum of block products, but not the right one", "no term takes X's column block"),
        patch=(("return (y + partial(w_last, n - 1)).astype", "return (y + partial(w_last, 0)).astype"),),
    ),
    Mistake(
        id="own-l05-scatter-blocks-counted-the-other-way", module="l05_collective_matmul",
        exercise="matmul_reducescatter", status="failed", check="values",
        says=("is exactly a sum of block products, but not the right one", "F block"),
        patch=(("return acc + product((me - s - 2) % n)", "return acc + product((me + s + 2) % n)"),),
    ),
    Mistake(
        id="own-fsdp-loss-not-divided-by-the-batch", module="l07_fsdp",
        exercise="fsdp_train_step", status="failed", check="values",
        says=("(your update) is exactly 8× the expected update", "the factor is B = 8, the global batch"),
        patch=(("0.5 * jnp.sum(err * err) / batch", "0.5 * jnp.sum(err * err)"),),
    ),
]  # fmt: skip
