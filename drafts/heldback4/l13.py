"""Held-back set 4, lesson 13 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l13_multi_host"

HELD: list[Held] = [
    Held(
        id="hb4-l13-batch-rows-split-over-hosts-only",
        module=M,
        exercise="global_batch",
        what=(
            "The learner builds the global batch with P('host'), each process's rows on its "
            "host row, replicated over 'local': the values are right, but every device of a "
            "host holds all B/P of its process's rows instead of B/(P·D) over ('host', 'local')."
        ),
        cause=("('host', 'local')", "replicated", "sharding", "'local'", "every device of a host"),
        kind="layout",
        patch=(
            (
                "return jax.make_array_from_process_local_data(NamedSharding(mesh, ROWS), local_rows)",
                'return jax.make_array_from_process_local_data(NamedSharding(mesh, P("host")), local_rows)',
            ),
        ),
    ),
    Held(
        id="hb4-l13-train-params-varying-over-hosts-only",
        module=M,
        exercise="multihost_train_step",
        what=(
            "The learner casts the params to varying over 'host' only, so they stay invariant "
            "over 'local' and jax.grad already sums each host's gradients over its devices; the "
            "hierarchical all-reduce then sums them over 'local' again, a gradient 'local' times "
            "too large."
        ),
        cause=("pcast", "('host', 'local')", "varying", "summed twice", "implicit"),
        kind="collective",
        patch=(
            (
                'pv = lax.pcast(p, ("host", "local"), to="varying")',
                'pv = lax.pcast(p, "host", to="varying")  # each host keeps its own gradient',
            ),
        ),
    ),
    Held(
        id="hb4-l13-time-cross-host-without-its-two",
        module=M,
        exercise="allreduce_time",
        what=(
            "In the hierarchical time the learner costs the cross-host step as (hosts − 1)/hosts "
            "of nbytes/local, a reduce-scatter's bytes, forgetting that it is an all-reduce: "
            "2(hosts − 1)/hosts."
        ),
        cause=("2(hosts − 1)", "all-reduce", "twice", "factor 2", "reduce-scatter and all-gather"),
        kind="factor",
        patch=(
            (
                "across = 2 * (hosts - 1) / hosts * (nbytes / local) / dcn",
                "across = (hosts - 1) / hosts * (nbytes / local) / dcn",
            ),
        ),
    ),
]
