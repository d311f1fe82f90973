"""grader.checks.vma reads the type errors of shard_map from their text.

The texts below were recorded on jax 0.10.2 from small programs (the program
is in each comment); newer JAX may word them otherwise, so the reader must
leave unknown parts empty rather than guess."""

from __future__ import annotations

from grader.checks import vma
from grader.sandbox.wire import remote_exception

TAIL = (
    "\n\nCheck if these output values are meant to be replicated over those mesh axes. If not, "
    "consider revising the corresponding out_specs entries. If so, consider disabling the check "
    "by passing the check_vma=False argument to `jax.shard_map`."
)

# shard_map(lambda x, w, w2: (x @ w) @ w2, in_specs=(P(), P(None,'model'), P('model',None)),
#           out_specs=P()) on a 4-device mesh: the psum after the row-parallel matmul is missing
ONE_OUTPUT = (
    "shard_map applied to the function 'mp' was given out_specs which require replication which "
    "can't be statically inferred given the mesh:\n\nThe mesh given has shape (4,) with "
    "corresponding axis names ('model',).\n\nout_specs is P() which implies that the "
    "corresponding output value is replicated across mesh axis 'model', but could not infer "
    "replication over any axes" + TAIL
)

# fsdp_train_step returning all-gathered params (no to='invarying') with out_specs=(P(), P()):
# one line per leaf of the params dict, under the shared prefix spec
PARAMS_REPLICATED = (
    "shard_map applied to the function 'body' was given out_specs which require replication "
    "which can't be statically inferred given the mesh:\n\nThe mesh given has shape (1,) with "
    "corresponding axis names ('data',).\n\n* out_specs[0] is P() which implies that the "
    "corresponding output value is replicated across mesh axis 'data', but could not infer "
    "replication over any axes\n\n* out_specs[0] is P() which implies that the corresponding "
    "output value is replicated across mesh axis 'data', but could not infer replication over "
    "any axes" + TAIL
)

# shard_map(lambda x: (x, [x]), mesh 2x2 ('data','model'), in_specs=P('data','model'),
#           out_specs=(P(), [P('data')]))
TWO_AXES = (
    "shard_map applied to the function '<lambda>' was given out_specs which require replication "
    "which can't be statically inferred given the mesh:\n\nThe mesh given has shape (2, 2) with "
    "corresponding axis names ('data', 'model').\n\n* out_specs[0] is P() which implies that the "
    "corresponding output value is only varying across mesh axes {} and not {data,model}, but it "
    "was inferred to be possibly varying over {data,model}\n\n* out_specs[1][0] is P('data',) "
    "which implies that the corresponding output value is replicated across mesh axis 'model', "
    "but could not infer replication over any axes" + TAIL
)

# a tree output: out_specs=({'a': P(), 'b': P()}, P()) with 'a' = x @ w unreduced
TREE_PATH = (
    "shard_map applied to the function 'tree' was given out_specs which require replication "
    "which can't be statically inferred given the mesh:\n\nThe mesh given has shape (4,) with "
    "corresponding axis names ('model',).\n\nout_specs[0]['a'] is P() which implies that the "
    "corresponding output value is replicated across mesh axis 'model', but could not infer "
    "replication over any axes" + TAIL
)

# lax.fori_loop(0, n, step, (jnp.zeros(x.shape, x.dtype), x)) whose body adds a ppermuted block
FORI_CARRY = (
    "scan body function carry input and carry output must have equal types, but they differ:\n\n"
    "The input carry component loop_carry[1][0] has type float32[2,8] but the corresponding "
    "output carry component has type float32[2,8]{V:model}, so the manual axis types do not "
    "match.\n\nThis might be fixed by applying `jax.lax.pcast(..., ('model',), to='varying')`, "
    "to the initial carry value corresponding to the input carry component loop_carry[1][0].\n"
    "See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more information."
    "\n\nRevise the function so that all output types match the corresponding input types."
)

# a fori_loop with a traced bound (a while_loop) over a carry from jnp.zeros
WHILE_CARRY = (
    "while_loop body function carry input and carry output must have equal types, but they "
    "differ:\n\nThe input carry component loop_carry[2] has type float32[2,8] but the "
    "corresponding output carry component has type float32[2,8]{V:model}, so the manual axis "
    "types do not match.\n\nThis might be fixed by applying `jax.lax.pcast(..., ('model',), "
    "to='varying')`, to the initial carry value corresponding to the input carry component "
    "loop_carry[2].\nSee https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for "
    "more information.\n\nRevise the function so that all output types match the corresponding "
    "input types."
)

# lax.scan over a carry pcast to varying over 'data' only, adding x of P('data','model')
SCAN_CARRY_2D = (
    "scan body function carry input and carry output must have equal types, but they differ:\n\n"
    "The input carry c has type float32[4,4]{V:data} but the corresponding output carry "
    "component has type float32[4,4]{V:(data,model)}, so the manual axis types do not match.\n\n"
    "This might be fixed by applying `jax.lax.pcast(..., ('model',), to='varying')`, to the "
    "initial carry value corresponding to the input carry c.\nSee "
    "https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more information.\n\n"
    "Revise the function so that all output types match the corresponding input types."
)

# lax.cond(True, lambda: x, lambda: jnp.zeros(x.shape)) with x varying over 'model'
COND = (
    "cond branches must have equal output types but they differ.\n\ntrue_fun is <lambda> at "
    "/tmp/vmaprobe/p2.py:68\nfalse_fun is <lambda> at /tmp/vmaprobe/p2.py:68\n\nThe output of "
    "true_fun has type float32[2,8]{V:model} but the corresponding output of false_fun has type "
    "float32[2,8], so the manual axis types do not match.\n\nThis might be fixed by applying "
    "`jax.lax.pcast(..., (), to='varying')` to the output of true_fun.\nSee "
    "https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more information.\n\n"
    "Revise true_fun and/or false_fun so that all output types match."
)

PCAST_TWICE = "Unsupported pcast from=varying, to='varying'"  # lax.pcast of a P('model') input

# train_step with the rule heads → 'data': its in_specs differ from the params' placement
IN_SPECS_TEXT = (
    "in_specs passed to shard_map: P(None, 'data', 'data') does not match the specs of the "
    "input: P(None, 'data', 'model') for arg: float32[8,8@data,8@model]. `in_specs` is an "
    "optional argument so you can omit specifying it and shard_map will infer the in_specs from "
    "the arguments. If you want to reshard your inputs, you can use `jax.reshard` on the "
    "arguments and then pass those args to shard_map."
)

# shard_map(..., out_specs=P('model', 'model'))
DUPLICATE_TEXT = (
    "A single NamedSharding spec specification can map every mesh axis to at most one "
    "positional dimension, but P('model', 'model') has duplicate entries for `model`"
)

# a @ b of P(None,'model') by P('model',None) on an Explicit mesh, outside shard_map
CONTRACTING = (
    "Contracting dimensions are sharded and it is ambiguous how the output should be sharded. "
    "Please specify the output sharding via the `out_sharding` parameter. Got "
    "lhs_contracting_spec=('model',) and rhs_contracting_spec=('model',)"
)

# top1_dispatch(x @ router_w, C) on the global tokens P('expert', None): jnp.cumsum over tokens
CUMSUM = (
    "Input should be unsharded over the axis being reduced. Got input type=int32[4@expert,1] "
    "and axis=0"
)


def test_one_output_varying_over_one_axis():
    err = vma.read(ValueError(ONE_OUTPUT))
    assert err.kind == vma.OUT_SPECS
    assert err.function == "mp" and err.mesh_axes == ("model",)
    assert err.outputs == (vma.Output("", "P()", ("model",)),)
    hint = vma.explain(err)
    assert hint.startswith("The output has out_specs P(), which says") and "'model'" in hint


def test_output_paths_and_both_forms():
    err = vma.read(ValueError(TWO_AXES))
    assert err.mesh_axes == ("data", "model")
    assert err.outputs == (
        vma.Output("[0]", "P()", ("data", "model")),
        vma.Output("[1][0]", "P('data',)", ("model",)),
    )
    assert err.varying_axes == ("data", "model")
    assert vma.read(ValueError(TREE_PATH)).outputs[0].path == "[0]['a']"


def test_one_line_per_leaf_is_one_fact():
    err = vma.read(ValueError(PARAMS_REPLICATED))
    assert err.outputs == (vma.Output("[0]", "P()", ("data",)),)


def test_carries():
    (c,) = vma.read(TypeError(FORI_CARRY)).carries
    assert (c.loop, c.path, c.before, c.after, c.gained) == (
        "scan", "loop_carry[1][0]", (), ("model",), ("model",)
    )  # fmt: skip
    (w,) = vma.read(TypeError(WHILE_CARRY)).carries
    assert (w.loop, w.path, w.gained) == ("while_loop", "loop_carry[2]", ("model",))
    (s,) = vma.read(TypeError(SCAN_CARRY_2D)).carries
    assert (s.path, s.before, s.after, s.gained) == ("c", ("data",), ("data", "model"), ("model",))
    hint = vma.explain(vma.read(TypeError(SCAN_CARRY_2D)))
    assert "lax.pcast(init, 'model', to='varying')" in hint and "carry c" in hint


def test_a_carry_made_invariant_in_the_body_is_not_told_to_pcast_its_start():
    text = FORI_CARRY.replace("type float32[2,8] but", "type float32[2,8]{V:model} but").replace(
        "has type float32[2,8]{V:model}, so", "has type float32[2,8], so"
    )
    err = vma.read(TypeError(text))
    (c,) = err.carries
    assert c.lost == ("model",) and not c.gained
    hint = vma.explain(err)
    assert "psum or pmean" in hint and "pcast(init" not in hint


def test_a_carry_of_another_shape_is_no_vma_error():
    text = FORI_CARRY.replace("float32[2,8]{V:model}", "float32[4,8]{V:model}").replace(
        "float32[2,8] but", "float32[4,8]{V:model} but"
    )
    assert vma.read(TypeError(text)) is None


def test_cond_branches():
    err = vma.read(TypeError(COND))
    assert err.kind == vma.BRANCHES and err.axes == ("model",)
    # JAX's own suggestion there (pcast over () of true_fun's output) is not repeated
    assert "(..., 'model', to='varying')" in vma.explain(err)


def test_pcast_in_specs_duplicate():
    assert vma.read(ValueError(PCAST_TWICE)).kind == vma.PCAST
    err = vma.read(ValueError(IN_SPECS_TEXT))
    assert (err.kind, err.spec, err.placed, err.arg) == (
        vma.IN_SPECS, "P(None, 'data', 'data')", "P(None, 'data', 'model')",
        "float32[8,8@data,8@model]",
    )  # fmt: skip
    dup = vma.read(remote_exception("DuplicateSpecError", DUPLICATE_TEXT))
    assert (dup.kind, dup.spec, dup.axes) == (vma.DUPLICATE, "P('model', 'model')", ("model",))
    assert "for two dimensions" in vma.explain(dup)


def test_sharding_type_errors_say_what_jax_says():
    for text in (CONTRACTING, CUMSUM):
        err = vma.read(remote_exception("ShardingTypeError", text))
        assert err.kind == vma.SHARDING
        assert "outside jax.shard_map" in vma.explain(err) and text in vma.explain(err)


def test_unknown_wording_is_said_not_guessed():
    """A newer JAX's text the reader cannot parse: the facts stay empty, the hint quotes it."""
    text = "shard_map out_specs require replication: output #0 may vary over ('model',)"
    err = vma.read(ValueError(text))
    assert err.kind == vma.OUT_SPECS and err.outputs == ()
    assert "cannot prove" in vma.explain(err)
    other = vma.read(TypeError("check_vma: mismatched varying manual axes in foo"))
    assert other.kind == vma.OTHER and "mismatched varying manual axes" in vma.explain(other)
    assert vma.read(ValueError("shapes (3,) and (4,) do not match")) is None


def test_frames_from_the_students_process():
    exc = remote_exception("ShardingTypeError", CUMSUM)
    exc.student_text = (
        "Traceback (your code, most recent call last):\n"
        '  File "/w/l11_expert_parallel.py", line 120, in moe_layer\n'
        "    dispatch, combine = top1_dispatch(x @ router_w, capacity)\n"
        '  File "/w/l11_expert_parallel.py", line 56, in top1_dispatch\n'
        "    onehot, slot = _slots(choice, n_experts)\n"
    )
    assert [f for f, _ in vma.frames(exc)] == ["moe_layer", "top1_dispatch"]
    assert vma.frames(exc)[0][1].startswith("dispatch, combine = top1_dispatch(")


# lesson 6's accumulation with the carry from jnp.zeros(w.shape) for params pcast to varying:
# two carries, listed with bullets
TWO_CARRIES = (
    "scan body function carry input and carry output must have equal types, but they differ:\n\n"
    "  * the input carry component a['w_in'] has type float32[2,8,16] but the corresponding "
    "output carry component has type float32[2,8,16]{V:data}, so the manual axis types do not "
    "match;\n  * the input carry component a['w_out'] has type float32[2,16,8] but the "
    "corresponding output carry component has type float32[2,16,8]{V:data}, so the manual axis "
    "types do not match.\n\nThis might be fixed by:\n  * applying `jax.lax.pcast(..., ('data',), "
    "to='varying')`, to the initial carry value corresponding to the input carry component "
    "a['w_in'];\n  * applying `jax.lax.pcast(..., ('data',), to='varying')`, to the initial "
    "carry value corresponding to the input carry component a['w_out'].\nSee "
    "https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more information.\n\n"
    "Revise the function so that all output types match the corresponding input types."
)


def test_two_carries():
    err = vma.read(TypeError(TWO_CARRIES))
    assert [(c.path, c.before, c.after) for c in err.carries] == [
        ("a['w_in']", (), ("data",)),
        ("a['w_out']", (), ("data",)),
    ]


def test_the_jaxpr_says_when_check_vma_is_off():
    import jax
    from jax import lax

    from grader.measure import jaxpr

    mesh = jax.make_mesh((2,), ("x",), devices=jax.devices()[:2])
    x = jax.device_put(jax.numpy.ones((2, 2)), jax.NamedSharding(mesh, jax.P("x")))
    for check, want in ((True, 0), (False, 1)):
        f = jax.shard_map(
            lambda b: lax.psum(b, "x"), mesh=mesh, in_specs=jax.P("x"), out_specs=jax.P(),
            check_vma=check,
        )  # fmt: skip
        assert jaxpr.trace(f, x).counts[jaxpr.UNCHECKED] == want


def test_types_with_unreduced_axes_as_newer_jax_prints_them():
    """jax 0.12 prints ``{V:model, U:data}`` for a value varying over model, unreduced over data."""
    text = FORI_CARRY.replace("float32[2,8]{V:model}", "float32[2,8]{V:model, U:data}")
    (c,) = vma.read(TypeError(text)).carries
    assert (c.before, c.after) == ((), ("model",))


def test_an_out_specs_rank_error_is_no_type_error():
    """out_specs=P('x') for jnp.sum(block): a spec too long for a scalar, not vma (jax 0.10.2)."""
    text = (
        "shard_map applied to the function '<lambda>' was given an out_specs entry which is too "
        "long to be compatible with the corresponding output value from the function:\n\n"
        "out_specs is P('x',) which has length 1, but <lambda>(*args) has shape float32[], which "
        "has rank 0 (and 0 < 1)\n\nEntries in out_specs must be of length no greater than the "
        "number of axes in the corresponding output value.\n\nEither revise the spec to be "
        "shorter, or modify '<lambda>' so that its outputs have sufficient rank.\n\nFor scalar "
        "values (rank 0), consider using an out_specs entry of `P()`, where `P = "
        "jax.sharding.PartitionSpec`. In particular, for rank 0 outputs which are not constant "
        "over the mesh, add at least one (singleton) axis to them so that they can be "
        "concatenated using out_specs."
    )
    assert vma.read(ValueError(text)) is None


def test_pcast_to_invarying():
    """lax.pcast(x, 'x', to='invarying'): all_gather's keyword given to pcast (jax 0.10.2)."""
    text = "Got unexpected `to` value. Allowed `to` values are: {'unreduced', 'reduced', 'varying'}"
    err = vma.read(ValueError(text))
    assert err.kind == vma.PCAST_TO
    assert "lax.psum or lax.pmean" in vma.explain(err)
    other = "Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` values are: {...}"
    assert vma.read(ValueError(other)) is None  # all_gather's own: not a pcast
