"""grader/checks/groups.py and payload.py: replica groups, spanned axes, what collectives carry.

Hand-written attribute texts first (every form XLA prints), then real
programs compiled on the simulated CPU mesh, where the groups are read back
from the HLO and mapped to mesh axes.
"""

from __future__ import annotations

import pytest

from grader.checks.groups import parse_groups, show_groups, spanned_axes
from grader.lessons.l08_tensor_parallel.checks import arrays, carried_bytes, largest_array
from grader.measure import hlo

# ---------------------------------------------------------------- forms


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("{{0,1,2},{3,4,5}}", ((0, 1, 2), (3, 4, 5))),
        ("{{0,3},{1,4},{2,5}}", ((0, 3), (1, 4), (2, 5))),
        ("{{0}}", ((0,),)),
        ("{}", ((0, 1, 2, 3, 4, 5),)),
        ("", ((0, 1, 2, 3, 4, 5),)),
        ("[2,3]<=[6]", ((0, 1, 2), (3, 4, 5))),
        ("[3,2]<=[2,3]T(1,0)", ((0, 3), (1, 4), (2, 5))),
        ("[1,6]<=[6]", ((0, 1, 2, 3, 4, 5),)),
        ("mesh['data'=2,'model'=3] {'model'}", ((0, 1, 2), (3, 4, 5))),
        ("mesh['data'=2,'model'=3] {'data'}", ((0, 3), (1, 4), (2, 5))),
        ("mesh['data'=2,'model'=3] {'data','model'}", ((0, 1, 2, 3, 4, 5),)),
        ("mesh['data'=2,'model'=3] {}", ((0,), (1,), (2,), (3,), (4,), (5,))),
    ],
)
def test_every_form_gives_the_same_groups(text: str, groups: tuple) -> None:
    assert parse_groups(text, 6) == groups


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        # x=4 split [2, 2]: position = 2·x + y = 2·(2·a + b) + y; (1)2 is a, (2)2 is b
        ("mesh['x'=4,'y'=2] {'x':(1)2}", ((0, 4), (1, 5), (2, 6), (3, 7))),
        ("mesh['x'=4,'y'=2] {'x':(2)2}", ((0, 2), (1, 3), (4, 6), (5, 7))),
        ("mesh['x'=4,'y'=2] {'x':(2)2,'y'}", ((0, 1, 2, 3), (4, 5, 6, 7))),
        ("mesh['x'=4,'y'=2] {'x':(1)4}", ((0, 2, 4, 6), (1, 3, 5, 7))),  # all of x
    ],
)
def test_a_sub_axis_groups_along_its_factor_of_the_axis(text: str, groups: tuple) -> None:
    """jax ≥ 0.11 may name part of an axis (``'x':(pre)size``); the HLO reader's byte
    counts and the checks' groups both need its groups, not a refusal."""
    assert parse_groups(text, 8) == groups
    size = hlo._group_size(f"all-reduce(%p), replica_groups={text}, to_apply=%add", 8)
    assert size == len(groups[0])


@pytest.mark.parametrize(
    "text",
    [
        "mesh['x'=2] {'z'}",  # an axis the mesh does not have
        "mesh['x'=2,'x'=2] {'x'}",  # an axis twice
        "mesh['x'=4] {'x':(2)4}",  # a sub-axis larger than what is left of x
        "mesh['x'=2,'y'=2] {'y'} device_ids=[3,2,1,0]",  # more than this reader knows
        "{0,1}",
        "<=[4]",
        "[2,2]<=[4]T(0,0)",
        "[3,2]<=[4]",
        "all",
    ],
)
def test_an_unknown_form_is_refused_not_guessed(text: str) -> None:
    with pytest.raises(ValueError, match="replica_groups"):
        parse_groups(text, 4)
    with pytest.raises(hlo.HloFormatError, match="replica groups"):
        hlo._group_size(f"all-reduce(%p), replica_groups={text}, to_apply=%add", 4)


def test_spanned_axes_on_a_2x3_mesh() -> None:
    shape, names = (2, 3), ("data", "model")
    assert spanned_axes(((0, 1, 2), (3, 4, 5)), shape, names) == {"model"}
    assert spanned_axes(((0, 3), (1, 4), (2, 5)), shape, names) == {"data"}
    assert spanned_axes(((0, 1, 2, 3, 4, 5),), shape, names) == {"data", "model"}
    assert spanned_axes(((0,), (1,)), shape, names) == set()
    assert spanned_axes(((0, 4),), shape, names) == {"data", "model"}  # a diagonal


def test_show_groups_shortens_long_lists() -> None:
    assert show_groups(((0, 1), (2, 3))) == "{0,1} {2,3}"
    assert show_groups(tuple((i,) for i in range(6)), limit=2) == "{0} {1} … (6 groups)"


# ---------------------------------------------------------------- hlo keeps the raw attribute

HLO = """\
HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (p: f32[4,8], q: f32[4,8]) -> (f32[4,8], f32[4,8]) {
  %p = f32[4,8]{1,0} parameter(0)
  %q = f32[4,8]{1,0} parameter(1)
  %r1 = f32[4,8]{1,0} all-reduce(%p), channel_id=1, replica_groups=[3,2]<=[2,3]T(1,0), use_global_device_ids=true, to_apply=%add
  ROOT %r2 = (f32[4,8]{1,0}, f32[4,8]{1,0}) all-reduce(%p, %q), channel_id=2, replica_groups={{0,1,2},{3,4,5}}, use_global_device_ids=true, to_apply=%add
}
"""


def test_collectives_keep_their_replica_groups_and_merged_arrays() -> None:
    first, merged = hlo.summarize(HLO, num_devices=6).collectives
    assert first.replica_groups == "[3,2]<=[2,3]T(1,0)"
    assert merged.replica_groups == "{{0,1,2},{3,4,5}}"
    assert arrays(first) == ["f32[4,8]"]
    assert arrays(merged) == ["f32[4,8]", "f32[4,8]"]
    assert carried_bytes(merged) == 2 * 4 * 8 * 4  # both arrays
    assert largest_array(merged) == 4 * 8 * 4  # but neither is larger than one
    assert largest_array(first) == 4 * 8 * 4


# ---------------------------------------------------------------- compiled programs


def _psum_groups(axes, order: list[int]) -> tuple[set[str], str]:
    import jax
    import numpy as np
    from jax import lax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    devs = jax.devices()
    mesh = jax.make_mesh((2, 3), ("data", "model"), devices=[devs[i] for i in order])
    spec = P("data", "model")
    f = jax.shard_map(
        lambda x: lax.psum(x, axes), mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False
    )
    x = jax.device_put(np.zeros((4, 6), np.float32), NamedSharding(mesh, spec))
    comms = hlo.summarize(jax.jit(f).lower(x).compile().as_text(), num_devices=6)
    (c,) = [c for c in comms.collectives if c.kind == "all-reduce"]
    groups = parse_groups(c.replica_groups, 6)
    return spanned_axes(groups, (2, 3), ("data", "model")), c.replica_groups


@pytest.mark.parametrize("order", [[0, 1, 2, 3, 4, 5], [5, 2, 7, 0, 1, 3]])
def test_groups_read_from_a_compiled_psum_name_the_axes_summed(order: list[int]) -> None:
    """Positions are in the mesh's row-major order, whichever devices it holds."""
    assert _psum_groups("model", order)[0] == {"model"}
    assert _psum_groups("data", order)[0] == {"data"}
    assert _psum_groups(("data", "model"), order)[0] == {"data", "model"}


def test_a_collective_whose_groups_cannot_be_read_fails_loudly() -> None:
    import jax

    from grader.checks.groups import GroupsWithin
    from grader.spec import Trial

    mesh = jax.make_mesh((2, 2), ("data", "model"), devices=jax.devices()[:4])
    odd = hlo.Collective(
        kind="all-reduce", name="ar.1", shape="f32[4]", operand_bytes=16, operand_elements=4,
        group_size=2, count=1, bytes_each=16, elements_each=4,
        replica_groups="mesh['data'=2,'model'=2] {'model'} device_ids=[3,2,1,0]",
    )  # fmt: skip
    result = GroupsWithin(frozenset({"model"}))(Trial({}, comms=hlo.CommSummary([odd]), mesh=mesh))
    assert not result.passed
    assert "form of replica groups this grader cannot read" in result.message


def test_the_report_draws_each_device_with_its_group() -> None:
    from io import StringIO

    from rich.console import Console, Group

    from grader import evidence as ev
    from grader.report import draw

    item = ev.ReplicaGroups(
        example="mesh=2x3", mesh_shape=[2, 3], axis_names=["data", "model"],
        rows=[ev.GroupedCollective("all-reduce", "f32[4,8]", 85, [0, 0, 0, 1, 1, 1], ["model"])],
    )  # fmt: skip
    out = StringIO()
    Console(file=out, width=80).print(Group(*draw(item)))
    text = out.getvalue()
    assert "all-reduce of f32[4,8], 85 B sent per device, 2 group(s) spanning model" in text
    assert "│ 0               │ a │ a │ a │" in text
    assert "│ 1               │ b │ b │ b │" in text
