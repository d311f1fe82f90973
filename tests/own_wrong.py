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
]  # fmt: skip
