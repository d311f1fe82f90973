"""Grading spec for lesson 1: shard shapes, device slices, placement, bytes.

The reference is JAX itself: ``NamedSharding(mesh, spec).shard_shape`` and
``devices_indices_map`` on real (or simulated) meshes of 1, 2 and 3 axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import InputsUntouched, OutputSharding, Values
from grader.checks.scalar import RAISES, Agrees
from grader.evidence import Table
from grader.runtime import Runtime, call_pure, inputs_intact
from grader.spec import Context, Example, ExerciseSpec, LessonSpec, Trial

AXES = ("x", "y", "z")
MESHES = [
    (1,), (2,), (3,), (4,), (6,), (8,),
    (1, 4), (2, 1), (2, 2), (2, 3), (3, 2), (2, 4), (4, 2),
    (2, 2, 2), (1, 2, 3), (2, 1, 2),
]  # fmt: skip
ON_DEVICE = ("float32", "bfloat16", "int8")
"""dtypes an array keeps on the device (float64 needs jax_enable_x64, which is off)."""


# ------------------------------------------------------------ examples


def encode_spec(entries: list) -> str:
    """``[('x', 'y'), None, 'z', ('x',)]`` → ``'x+y/-/z/x+'``."""
    out = []
    for e in entries:
        if e is None:
            out.append("-")
        elif isinstance(e, str):
            out.append(e)
        else:
            out.append("+".join(e) + ("+" if len(e) == 1 else ""))
    return "/".join(out)


def decode_spec(text: str) -> tuple:
    if not text:
        return ()
    entries: list = []
    for part in text.split("/"):
        if part == "-":
            entries.append(None)
        elif "+" in part:
            entries.append(tuple(a for a in part.split("+") if a))
        else:
            entries.append(part)
    return tuple(entries)


def _tuple(v: Any) -> tuple[int, ...]:
    return v if isinstance(v, tuple) else (v,)


def _axes(entry: Any) -> tuple[str, ...]:
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


@st.composite
def _layout(
    draw,
    ctx: Context,
    indivisible: bool = True,
    dtypes: tuple[str, ...] = (),
    with_seed: bool = False,
):
    mesh = draw(st.sampled_from([m for m in MESHES if math.prod(m) <= ctx.n_devices]))
    names = AXES[: len(mesh)]
    ndim = draw(st.integers(1, 3))
    length = draw(st.sampled_from([ndim, ndim, ndim, *range(ndim)]))  # mostly full specs
    groups: list[list[str]] = [[] for _ in range(length)]
    for axis in draw(st.permutations(names)):
        slot = draw(st.integers(-1, length - 1)) if length else -1
        if slot >= 0:
            groups[slot].append(axis)
    entries = []
    for g in groups:
        if not g:
            entries.append(None)
        elif len(g) == 1:
            entries.append(g[0] if draw(st.integers(0, 3)) else (g[0],))
        else:
            entries.append(tuple(g))
    sizes = dict(zip(names, mesh))
    shape = []
    for dim in range(ndim):
        ways = math.prod(sizes[a] for a in _axes(entries[dim])) if dim < length else 1
        shape.append(ways * draw(st.integers(1, 3)))
    splittable = [d for d in range(length) if math.prod(sizes[a] for a in _axes(entries[d])) > 1]
    if indivisible and splittable and draw(st.integers(0, 3)) == 0:
        d = draw(st.sampled_from(splittable))
        ways = math.prod(sizes[a] for a in _axes(entries[d]))
        shape[d] = ways * draw(st.integers(0, 2)) + draw(st.integers(1, ways - 1))
    ex: Example = {"mesh": tuple(mesh), "shape": tuple(shape), "spec": encode_spec(entries)}
    if dtypes:
        ex["dtype"] = draw(st.sampled_from(dtypes))
    if with_seed:
        ex["seed"] = draw(st.integers(0, 2**16))
    return ex


def _explicit(indivisible: bool, extra: dict) -> Callable[[Context], list[Example]]:
    cases = [
        ((1,), (3,), "x"),  # an axis of size 1
        ((2, 4), (8, 6), "y/-"),  # the lesson's worked example
        ((2, 4), (8, 2), "x+y/-"),
        ((2, 4), (8, 2), "y+x/-"),  # the same axes, the other order
        ((2, 3), (4, 6, 5), "x/y"),  # a spec shorter than the rank
    ]
    if indivisible:
        cases.append(((2, 4), (6, 8), "y/-"))

    def explicit(ctx: Context) -> list[Example]:
        return [
            {"mesh": m, "shape": s, "spec": spec, **extra}
            for m, s, spec in cases
            if math.prod(m) <= ctx.n_devices
        ]

    return explicit


_INDIVISIBLE = (
    "(6, 8) as P('y', None) on {'x': 2, 'y': 4}: 6 rows do not split into 4 equal blocks, "
    "so JAX raises ValueError, and so does right code"
)

PURPOSES: dict[tuple, dict[str, str]] = {
    ((1,), (3,), "x"): {
        "shard_shape": "a mesh axis of size 1: splitting (3,) over x divides by 1, the shard "
        "is the whole (3,)",
        "device_slices": "a mesh axis of size 1: its one device, at coordinate (0,), holds "
        "the whole array, 0:3",
        "place": "a mesh of one device: the whole (3,) array lands on it, with the sharding P('x')",
        "bytes_per_device": "a mesh axis of size 1: its one device holds all 3 float32 "
        "elements, 12 bytes",
    },
    ((2, 4), (8, 6), "y/-"): {
        "shard_shape": "the lesson's worked example, (8, 6) as P('y', None) on {'x': 2, "
        "'y': 4}: the shard is (8/4, 6) = (2, 6)",
        "device_slices": "the lesson's worked example, P('y', None) on {'x': 2, 'y': 4}: "
        "device (c_x, c_y) holds rows 2·c_y:2·c_y + 2, the same for both c_x",
        "place": "the lesson's worked example: (8, 6) float32 as P('y', None) on {'x': 2, "
        "'y': 4}, rows split over y and copied along x",
        "bytes_per_device": "the lesson's worked example: a (2, 6) float32 shard, 48 bytes "
        "per device (the whole array is 192)",
    },
    ((2, 4), (8, 2), "x+y/-"): {
        "shard_shape": "(8, 2) as P(('x', 'y'), None) on {'x': 2, 'y': 4}: dim 0 splits "
        "into 2·4 = 8 blocks, shard (1, 2)",
        "device_slices": "dim 0 split over ('x', 'y'), x major, on {'x': 2, 'y': 4}: device "
        "(c_x, c_y) holds row 4·c_x + c_y",
        "place": "dim 0 split over ('x', 'y'), x major, on {'x': 2, 'y': 4}: one row per "
        "device, device (c_x, c_y) holds row 4·c_x + c_y",
        "bytes_per_device": "dim 0 split over ('x', 'y') on {'x': 2, 'y': 4}: a (1, 2) "
        "float32 shard, 8 bytes per device",
    },
    ((2, 4), (8, 2), "y+x/-"): {
        "shard_shape": "(8, 2) as P(('y', 'x'), None), the same axes in the other order: "
        "still 8 blocks, shard (1, 2)",
        "device_slices": "dim 0 split over ('y', 'x'), y major, on {'x': 2, 'y': 4}: device "
        "(c_x, c_y) holds row 2·c_y + c_x",
        "place": "dim 0 split over ('y', 'x'), y major, on {'x': 2, 'y': 4}: one row per "
        "device, device (c_x, c_y) holds row 2·c_y + c_x",
        "bytes_per_device": "dim 0 split over ('y', 'x'), the same axes in the other order: "
        "still a (1, 2) float32 shard, 8 bytes per device",
    },
    ((2, 3), (4, 6, 5), "x/y"): {
        "shard_shape": "a spec of 2 entries on a 3-D array, P('x', 'y') on {'x': 2, 'y': 3}: "
        "dim 2 stays whole, shard (2, 2, 5)",
        "device_slices": "a spec of 2 entries on a 3-D array, P('x', 'y') on {'x': 2, 'y': "
        "3}: every device holds all of dim 2, 0:5",
        "place": "a spec of 2 entries on a (4, 6, 5) array, P('x', 'y') on {'x': 2, 'y': 3}: "
        "dim 2 stays whole on every device",
        "bytes_per_device": "a spec of 2 entries on a 3-D array: a (2, 2, 5) float32 shard, "
        "80 bytes per device",
    },
    ((2, 4), (6, 8), "y/-"): {
        "shard_shape": _INDIVISIBLE,
        "device_slices": _INDIVISIBLE,
        "bytes_per_device": _INDIVISIBLE,
    },
}
"""What each fixed example (:func:`_explicit`) is for (issue 45 §1), by its layout
(mesh, shape, spec) and then by exercise: the contrast each layout was chosen for."""


def _purpose(exercise: str) -> Callable[[Example], str | None]:
    """The sentence of ``exercise``'s fixed examples, from :data:`PURPOSES`."""

    def purpose(ex: Example) -> str | None:
        layout = (tuple(ex["mesh"]), tuple(ex["shape"]), ex["spec"])
        return PURPOSES.get(layout, {}).get(exercise)

    return purpose


def _reference(rt: Runtime, ex: Example):
    """(mesh, NamedSharding, shape, spec tuple, mesh_shape dict) for an example."""
    from jax.sharding import NamedSharding, PartitionSpec

    mesh_dims = _tuple(ex["mesh"])
    mesh = rt.mesh(mesh_dims, AXES[: len(mesh_dims)])
    spec = decode_spec(ex["spec"])
    return (
        mesh,
        NamedSharding(mesh, PartitionSpec(*spec)),
        _tuple(ex["shape"]),
        spec,
        dict(zip(AXES, mesh_dims)),
    )


# ------------------------------------------------------------ checks


def _differs(got: Any, want: Any, trial: Trial) -> tuple[str, list[Table]]:
    if isinstance(want, dict) and isinstance(got, dict):
        keys = sorted(set(want) | set(got))
        bad = [k for k in keys if want.get(k) != got.get(k)]
        rows = [
            [str(k), _show_slices(want.get(k, "—")), _show_slices(got.get(k, "—"))] for k in bad[:8]
        ]
        table = Table(["device", "JAX says", "yours"], rows)
        return f"{len(bad)} of {len(want)} devices get the wrong slice", [table]
    return f"returned {_show(got)}; JAX says {_show(want)}", []


def _agrees(
    normalize: Callable[[Any, Trial], Any], explain: Callable[[Any, Any, Trial], str | None]
) -> Agrees:
    """A pure function's answer equals JAX's (``trial.expected``); indivisible
    layouts must raise ValueError."""
    return Agrees(
        normalize=normalize,
        diagnose=explain,
        differs=_differs,
        agreed="agrees with JAX's NamedSharding, ValueError included",
        unraised=lambda t: (
            f" although shape {t.example['shape']} does not divide over spec "
            f"{decode_spec(t.example['spec'])}"
        ),
        raise_hints=(
            "Check divisibility yourself and raise ValueError with a clear message.",
            "Integer division hides indivisibility: test size % ways before dividing.",
        ),
    )


def _show(v: Any) -> str:
    if isinstance(v, dict):
        items = list(v.items())
        text = ", ".join(f"{k}: {_show_slices(s)}" for k, s in items[:4])
        return "{" + text + (", …" if len(items) > 4 else "") + "}"
    return repr(v)


def _show_slices(s: Any) -> str:
    if isinstance(s, tuple) and all(isinstance(p, tuple) for p in s):
        return "[" + ", ".join(f"{a}:{b}" for a, b in s) + "]"
    return repr(s)


def _as_shape(out: Any, trial: Trial) -> tuple[int, ...]:
    if not isinstance(out, (tuple, list)) or not all(isinstance(d, (int, np.integer)) for d in out):
        raise TypeError(f"returned {out!r}; expected a tuple of ints")
    return tuple(int(d) for d in out)


def _explain_shape(got: tuple, want: tuple, trial: Trial) -> str | None:
    shape = _tuple(trial.example["shape"])
    spec = decode_spec(trial.example["spec"])
    if len(got) != len(want):
        return (
            f"The shard has as many dims as the array ({len(want)}); a spec shorter than "
            "the rank leaves the remaining dims unsplit (zip() stops at the shorter one)."
        )
    if got == shape:
        return "Nothing was divided: a dim named in the spec shrinks by the size of its mesh axes."
    for dim, entry in enumerate(spec):
        axes = _axes(entry)
        if len(axes) > 1 and got[dim] != want[dim]:
            return "A dim split over a tuple of axes is divided by the product of all their sizes."
    return None


def _as_slices(out: Any, trial: Trial) -> dict:
    shape = _tuple(trial.example["shape"])
    if not isinstance(out, dict):
        raise TypeError(f"returned {type(out).__name__}; expected a dict keyed by mesh coordinate")
    norm = {}
    for key, value in out.items():
        coord = (key,) if isinstance(key, (int, np.integer)) else key
        if not isinstance(coord, tuple) or not isinstance(value, tuple):
            raise TypeError(
                f"entry {key!r}: {value!r}; expected a tuple coordinate → tuple of slices"
            )
        if not all(isinstance(s, slice) for s in value) or len(value) > len(shape):
            raise TypeError(f"entry {key!r}: {value!r}; expected one slice per dim")
        full = value + (slice(None),) * (len(shape) - len(value))
        norm[tuple(int(c) for c in coord)] = tuple(s.indices(n)[:2] for s, n in zip(full, shape))
    return norm


def _explain_slices(got: dict, want: dict, trial: Trial) -> str | None:
    if set(got) != set(want):
        missing = sorted(set(want) - set(got))
        return (
            f"Coordinates missing, e.g. {missing[:3]}: every device has an entry, also the "
            "ones that hold copies along mesh axes the spec does not name."
            if missing
            else "Keys must be mesh coordinates, one index per mesh axis in mesh order."
        )
    spec = decode_spec(trial.example["spec"])
    bad = next(k for k in want if got[k] != want[k])
    hint = f"Device {bad} should hold {_show_slices(want[bad])}, not {_show_slices(got[bad])}."
    if any(len(_axes(e)) > 1 for e in spec):
        hint += (
            " For a tuple of axes the first is major: block = c_first · size(second) + c_second."
        )
    if any(
        g[0] != w[0] and w[1] > w[0] and g[0] * (w[1] - w[0]) == w[0]
        for g, w in zip(got[bad], want[bad])
    ):
        hint += " A slice starts at block index × shard size, not at the block index."
    return hint


# ------------------------------------------------------------ runners


def _run_shard_shape(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    _, sharding, shape, spec, sizes = _reference(rt, ex)
    want = _expected(lambda: tuple(sharding.shard_shape(shape)))
    return Trial(
        ex, output=call_pure(fn, (shape, dict(sizes), spec), want == RAISES), expected=want
    )


def _run_device_slices(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    from grader.checks.values import device_coords

    mesh, sharding, shape, spec, sizes = _reference(rt, ex)

    def jax_answer() -> dict:
        sharding.shard_shape(shape)  # raises on indivisible layouts
        coords = device_coords(mesh)
        return {
            coords[d.id]: tuple(s.indices(n)[:2] for s, n in zip(idx, shape))
            for d, idx in sharding.devices_indices_map(shape).items()
        }

    want = _expected(jax_answer)
    return Trial(
        ex, output=call_pure(fn, (shape, dict(sizes), spec), want == RAISES), expected=want
    )


def _run_bytes(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax.numpy as jnp

    _, sharding, shape, spec, sizes = _reference(rt, ex)
    dtype = jnp.dtype(ex["dtype"])
    want = _expected(lambda: math.prod(sharding.shard_shape(shape)) * dtype.itemsize)
    return Trial(
        ex, output=call_pure(fn, (shape, dtype, dict(sizes), spec), want == RAISES), expected=want
    )


def _run_place(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec

    mesh, sharding, shape, spec, _ = _reference(rt, ex)
    rng = rt.rng()
    x = rng.standard_normal(shape).astype(jnp.dtype(ex["dtype"]))
    copy = np.array(x)
    out = fn(x, mesh, PartitionSpec(*spec))
    trial = Trial(ex, output=out, expected=copy, mesh=mesh, extra={"dtype": ex["dtype"]})
    trial.extra["sharding"] = sharding
    trial.inputs_intact = inputs_intact((x,), [copy])
    return trial


def _expected(compute: Callable[[], Any]) -> Any:
    try:
        return compute()
    except ValueError:
        return RAISES


def _as_int(out: Any, trial: Trial) -> int:
    if isinstance(out, bool) or not isinstance(out, (int, np.integer)):
        raise TypeError(f"returned {out!r}; expected an int")
    return int(out)


def _explain_bytes(got: int, want: int, trial: Trial) -> str | None:
    import jax.numpy as jnp

    itemsize = jnp.dtype(trial.example["dtype"]).itemsize
    if got == want // itemsize:
        return "That is the number of elements: multiply by dtype.itemsize."
    if got == math.prod(_tuple(trial.example["shape"])) * itemsize:
        return "That is the whole array: each device holds one shard."
    return None


SPEC = LessonSpec(
    exercises=(
        ExerciseSpec(
            name="shard_shape",
            strategy=lambda ctx: _layout(ctx),
            explicit=_explicit(True, {}),
            run=_run_shard_shape,
            checks=(_agrees(_as_shape, _explain_shape),),
            max_examples=25,
            purpose=_purpose("shard_shape"),
        ),
        ExerciseSpec(
            name="device_slices",
            strategy=lambda ctx: _layout(ctx),
            explicit=_explicit(True, {}),
            run=_run_device_slices,
            checks=(_agrees(_as_slices, _explain_slices),),
            max_examples=25,
            purpose=_purpose("device_slices"),
        ),
        ExerciseSpec(
            name="place",
            strategy=lambda ctx: _layout(ctx, indivisible=False, dtypes=ON_DEVICE, with_seed=True),
            explicit=_explicit(False, {"dtype": "float32", "seed": 0}),
            run=_run_place,
            checks=(
                Values(),
                OutputSharding(expected=lambda t: t.extra["sharding"]),
                InputsUntouched(),
            ),
            max_examples=6,
            purpose=_purpose("place"),
        ),
        ExerciseSpec(
            name="bytes_per_device",
            strategy=lambda ctx: _layout(ctx, dtypes=(*ON_DEVICE, "float64")),
            explicit=_explicit(True, {"dtype": "float32"}),
            run=_run_bytes,
            checks=(_agrees(_as_int, _explain_bytes),),
            max_examples=25,
            purpose=_purpose("bytes_per_device"),
        ),
    ),
)
