"""Reading the traced program: primitives, loops and where the collectives sit."""

from __future__ import annotations

import numpy as np

from grader.measure import jaxpr


def _program(body, n: int = 4):
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.measure import devices

    mesh = devices.make_mesh((n,), ("x",))
    a = jax.device_put(np.ones((n * 6, 3), np.float32), NamedSharding(mesh, P("x")))
    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P()))
    return jaxpr.trace(f, a)


def test_collective_after_a_scan_is_outside_the_loop():
    import jax.numpy as jnp
    from jax import lax

    def body(a):
        total, _ = lax.scan(lambda c, r: (c + jnp.tanh(r), None), jnp.zeros_like(a[0]), a)
        return lax.psum(total, "x")

    prog = _program(body)
    assert [(lp.primitive, lp.length) for lp in prog.loops] == [("scan", 6)]
    assert prog.loops[0].contains("tanh") and not prog.loops[0].contains("psum_invariant")
    (site,) = prog.collectives
    assert site.kind == "all-reduce" and site.dtypes == ("float32",) and site.axes == ("x",)
    assert not site.in_loop and prog.kinds() == {"all-reduce"}


def test_collective_inside_a_fori_loop_knows_its_loop_and_dtype():
    import jax.numpy as jnp
    from jax import lax

    def body(a):
        def step(i, c):
            return c + lax.psum(a[i].astype(jnp.bfloat16), "x").astype(jnp.float32)

        return lax.fori_loop(0, 5, step, jnp.zeros(a.shape[1:], jnp.float32))

    prog = _program(body)
    (site,) = prog.collectives
    assert site.dtypes == ("bfloat16",)  # what the program sends, before XLA widens it
    assert prog.dtypes["bfloat16"] >= 2 and prog.dtypes["float32"] >= 1
    assert [(lp.primitive, lp.length) for lp in site.loops] == [("scan", 5)]
    assert prog.collectives_in(lambda lp: lp.length == 5) == [site]
    assert prog.collectives_in(lambda lp: lp.length == 6) == []


def test_while_loop_has_no_length_and_python_loops_leave_no_loop():
    import jax.numpy as jnp
    from jax import lax

    def dynamic(a):
        n = lax.axis_index("x") + 2  # bound known only at run time: a while loop
        return lax.psum(lax.fori_loop(0, n, lambda i, c: c * 2.0, a.sum()), "x")

    def unrolled(a):
        c = jnp.zeros((), a.dtype)
        for i in range(3):
            c = c + a[i].sum()
        return lax.psum(c, "x")

    prog = _program(dynamic)
    assert [(lp.primitive, lp.length) for lp in prog.loops] == [("while", None)]
    prog = _program(unrolled)
    assert prog.loops == () and "reduce_sum" in prog.primitives()
