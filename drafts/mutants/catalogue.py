"""How many of the references' own catalogued variants one change of the plain reference's
formula gives (grader/checks/mutants.py; issue 45 §4: fix classes, not cases).

    python -m drafts.mutants.catalogue

Three references carry their known mistakes as a switch or a list: lesson 15's ``adamw``
(``variant=``), lesson 16's cached ``decode`` (``how=``) and lesson 16's speculative
``known`` list. For each, on drawn inputs, it asks whether some change of the plain
reference (``variant=None``, ``how=EXACT``) gives the catalogued variant's value exactly,
and prints the first that does (as a failing check would say it), or none.
"""

from __future__ import annotations

import numpy as np

from grader.checks import mutants


def first(reference, args, kwargs, want) -> str | None:
    import jax

    for m in mutants.mutants(reference):
        try:
            with np.errstate(all="ignore"):
                got = m.fn(*args, **kwargs)
        except Exception:
            continue
        a, b = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
        if len(a) == len(b) and all(
            np.shape(x) == np.shape(y) and np.allclose(x, y, rtol=1e-12, atol=1e-15, equal_nan=True)
            for x, y in zip(a, b)
        ):
            return m.said
    return None


def main() -> None:
    from grader.expected import l15_optimizer as adam
    from grader.expected.l16_serving import model as lm
    from grader.expected.l16_serving import speculative as spec
    from grader.lessons.l15_optimizer.spec import ADAMW_WORDS
    from grader.lessons.l16_serving import model as draw

    rng = np.random.default_rng(0)
    rows = []
    master, m, v, g = rng.normal(size=16), rng.normal(size=16), rng.random(16), rng.normal(size=16)
    for variant in dict.fromkeys([*ADAMW_WORDS, "no-bias"]):
        want = adam.adamw(master, m, v, 3, g, variant=variant)
        rows.append(
            (f"l15 adamw variant={variant}", first(adam.adamw, (master, m, v, 3, g), {}, want))
        )

    params = draw.draw_params(rng, 2, 16, 16, 32, 40, 12) if hasattr(draw, "draw_params") else None
    if params is not None:
        prompt, fed = rng.integers(0, 40, (2, 4)), rng.integers(0, 40, (2, 3))
        for how in (draw.MASK_BEFORE, draw.MASK_AFTER, draw.POSITION_ZERO):
            want = lm.decode(params, prompt, fed, 4, 12, how)
            rows.append(
                (f"l16 decode how={how}", first(lm.decode, (params, prompt, fed, 4, 12), {}, want))
            )

    p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    right_a, right_r = spec.verify(p, q, 0)
    for i, (words, want_accept, residual) in enumerate(spec.known(p, q, 0)):
        found = None
        for mt in mutants.mutants(spec.verify):
            try:
                with np.errstate(all="ignore"):
                    a, r = mt.fn(p, q, 0)
            except Exception:
                continue
            if (
                np.isclose(a, want_accept, rtol=1e-12)
                and (
                    residual is None
                    or (np.shape(r) == np.shape(residual) and np.allclose(r, residual, rtol=1e-12))
                )
                and not (np.isclose(a, right_a) and np.allclose(r, right_r))
            ):
                found = mt.said
                break
        rows.append((f"l16 verify known[{i}]: {words[:50]}…", found))
    for name, said in rows:
        print(f"{'FOUND' if said else 'none '}  {name}\n        {said or ''}")
    print(
        f"{sum(1 for _, s in rows if s)} of {len(rows)} catalogued variants are one change of the plain reference"
    )


if __name__ == "__main__":
    main()
