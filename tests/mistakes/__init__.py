"""Realistic wrong implementations, each with the diagnosis the grader must give.

Each mistake changes one function of a lesson's reference solution: either
a one-line edit of the solution's text (``patch``), or a whole wrong
function appended to a copy of it (``code``; the later ``def`` wins). ``check`` names the check that must fail (or ``None`` when the whole
exercise must end in an error/timeout), ``status`` the exercise's status, and
``says`` words the failing check's message or the hint must contain.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    id: str
    module: str
    exercise: str
    code: str
    status: str
    check: str | None
    says: tuple[str, ...]
    patch: tuple[tuple[str, str], ...] = ()
    """(old, new) edits of the solution's own text, for one-line mistakes."""

    def source(self, solution: str) -> str:
        """The solution module with this mistake in it."""
        for old, new in self.patch:
            assert solution.count(old) == 1, f"{self.id}: {old!r} no longer in the solution"
            solution = solution.replace(old, new)
        return solution + ("\n" + HEADER + self.code if self.code else "")


L02 = "l02_collectives"
L01 = "l01_meshes"
HEADER = "import jax\nimport jax.numpy as jnp\nimport numpy as np\nfrom jax import lax\n"

MISTAKES = [
    # ------------------------------------------------------------ lesson 2
    Mistake(
        "wrong-ring-direction",
        L02,
        "ring_all_gather",
        """
def ring_all_gather(x, axis_name):
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    b = x.shape[0]
    left = [(i, (i - 1) % n) for i in range(n)]  # sends left ...
    out = lax.pcast(jnp.zeros((n * b, *x.shape[1:]), x.dtype), axis_name, to="varying")
    out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)

    def step(s, carry):
        out, block = carry
        block = lax.ppermute(block, axis_name, left)
        owner = (me - s - 1) % n  # ... but indexes as if it sent right
        return lax.dynamic_update_slice_in_dim(out, block, owner * b, axis=0), block

    return lax.fori_loop(0, n - 1, step, (out, x))[0]
""",
        "failed",
        "values",
        ("mirrored", "ring"),
    ),
    Mistake(
        "calls-all-gather",
        L02,
        "ring_all_gather",
        """
def ring_all_gather(x, axis_name):
    return lax.all_gather(x, axis_name, tiled=True)
""",
        "failed",
        "collectives",
        ("all-gather", "lax.all_gather"),
    ),
    Mistake(
        "one-step-too-many",
        L02,
        "ring_all_gather",
        "",
        "failed",
        "steps",
        ("too many",),
        patch=(("lax.fori_loop(0, n - 1, step, (out, x))", "lax.fori_loop(0, n, step, (out, x))"),),
    ),
    Mistake(
        "butterfly-power-of-two",
        L02,
        "ring_all_gather",
        """
def ring_all_gather(x, axis_name):
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    out, d = x, 1
    while d < n:  # recursive doubling: partner i XOR d
        other = lax.ppermute(out, axis_name, [(i, i ^ d) for i in range(n)])
        lower = (me & d) == 0
        out = jnp.where(lower, jnp.concatenate([out, other]), jnp.concatenate([other, out]))
        d *= 2
    return out
""",
        "failed",
        "steps",
        ("butterfly", "power of two"),
    ),
    Mistake(
        "all-reduce-sends-everything",
        L02,
        "ring_all_reduce",
        """
def ring_all_reduce(x, axis_name):
    n = lax.axis_size(axis_name)
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, block = x, x
    for _ in range(n - 1):  # the whole array, N - 1 times
        block = lax.ppermute(block, axis_name, right)
        acc = acc + block
    return acc
""",
        "failed",
        "bytes",
        ("whole arrays",),
    ),
    Mistake(
        "reduce-scatter-wrong-chunk",
        L02,
        "ring_reduce_scatter",
        "",
        "failed",
        "values",
        ("meant for device i + 1",),
        # starts with its own chunk, so every sum ends one device too far
        patch=(
            ("acc = chunk((me - 1) % n)", "acc = chunk(me)"),
            ("chunk((me - s - 2) % n)", "chunk((me - s - 1) % n)"),
        ),
    ),
    Mistake(
        "reduce-scatter-chunk-0-everywhere",
        L02,
        "ring_reduce_scatter",
        """
def ring_reduce_scatter(x, axis_name):
    n = lax.axis_size(axis_name)
    c = x.shape[0] // n
    right = [(i, (i + 1) % n) for i in range(n)]
    acc, block = x, x
    for _ in range(n - 1):
        block = lax.ppermute(block, axis_name, right)
        acc = acc + block
    return acc[:c]  # chunk 0 on every device: axis_index forgotten
""",
        "failed",
        "values",
        ("device 0",),
    ),
    Mistake(
        "all-reduce-mean",
        L02,
        "ring_all_reduce",
        """
def ring_all_reduce(x, axis_name):
    n = lax.axis_size(axis_name)
    return ring_all_gather(ring_reduce_scatter(x, axis_name), axis_name) / n  # a mean
""",
        "failed",
        "values",
        ("too small", "mean"),
    ),
    Mistake(
        "returns-none",
        L02,
        "ring_all_gather",
        """
def ring_all_gather(x, axis_name):
    lax.ppermute(x, axis_name, [(0, 0)])
""",
        "failed",
        "returns",
        ("returned None", "return"),
    ),
    Mistake(
        "returns-list",
        L02,
        "ring_all_gather",
        """
def ring_all_gather(x, axis_name):
    return [x] * lax.axis_size(axis_name)
""",
        "failed",
        "returns",
        ("list",),
    ),
    Mistake(
        "wrong-shape",
        L02,
        "ring_reduce_scatter",
        """
def ring_reduce_scatter(x, axis_name):
    return x  # forgot to scatter
""",
        "failed",
        "returns",
        ("shape",),
    ),
    Mistake(
        "wrong-dtype",
        L02,
        "ring_all_reduce",
        """
_correct_all_reduce = ring_all_reduce

def ring_all_reduce(x, axis_name):
    return _correct_all_reduce(x, axis_name).astype(jnp.float32)
""",
        "failed",
        "returns",
        ("dtype",),
    ),
    Mistake(
        "nan",
        L02,
        "ring_all_reduce",
        """
_correct_all_reduce = ring_all_reduce

def ring_all_reduce(x, axis_name):
    total = _correct_all_reduce(x, axis_name)
    return total * jnp.log(total - total - 1)  # log of a negative number
""",
        "failed",
        "values",
        ("NaN",),
    ),
    Mistake(
        "raises",
        L02,
        "ring_all_gather",
        """
def ring_all_gather(x, axis_name):
    return helper(x)

def helper(x):
    raise ValueError("my own bug")
""",
        "error",
        None,
        ("my own bug", "helper"),
    ),
    # ------------------------------------------------------------ lesson 1
    Mistake(
        "floor-division-hides-indivisible",
        L01,
        "shard_shape",
        """
def shard_shape(global_shape, mesh_shape, spec):
    out = []
    for dim, size in enumerate(global_shape):
        entry = spec[dim] if dim < len(spec) else None
        axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
        out.append(size // math.prod(mesh_shape[a] for a in axes))
    return tuple(out)
""",
        "failed",
        "values",
        ("Integer division",),
    ),
    Mistake(
        "tuple-entry-first-axis-only",
        L01,
        "shard_shape",
        """
def shard_shape(global_shape, mesh_shape, spec):
    out = []
    for dim, size in enumerate(global_shape):
        entry = spec[dim] if dim < len(spec) else None
        ways = 1 if entry is None else mesh_shape[entry if isinstance(entry, str) else entry[0]]
        if size % ways:
            raise ValueError("indivisible")
        out.append(size // ways)
    return tuple(out)
""",
        "failed",
        "values",
        ("product of all their sizes",),
    ),
    Mistake(
        "zip-truncates-short-spec",
        L01,
        "shard_shape",
        """
def shard_shape(global_shape, mesh_shape, spec):
    out = []
    for size, entry in zip(global_shape, spec):
        axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
        ways = math.prod(mesh_shape[a] for a in axes)
        if size % ways:
            raise ValueError("indivisible")
        out.append(size // ways)
    return tuple(out)
""",
        "failed",
        "values",
        ("zip",),
    ),
    Mistake(
        "minor-major-swapped",
        L01,
        "device_slices",
        "",
        "failed",
        "values",
        ("first is major",),
        patch=(("for a in axes:  # row-major", "for a in reversed(axes):  # row-major"),),
    ),
    Mistake(
        "slice-at-block-index",
        L01,
        "device_slices",
        "",
        "failed",
        "values",
        ("block index × shard size",),
        patch=(("slice(index * size, (index + 1) * size)", "slice(index, index + size)"),),
    ),
    Mistake(
        "replicas-left-out",
        L01,
        "device_slices",
        """
_correct_device_slices = device_slices

def device_slices(global_shape, mesh_shape, spec):
    named = {a for e in spec if e is not None for a in ((e,) if isinstance(e, str) else e)}
    full = _correct_device_slices(global_shape, mesh_shape, spec)
    names = list(mesh_shape)
    # keeps only the devices at coordinate 0 of every axis the spec does not name
    return {c: s for c, s in full.items() if all(c[i] == 0 for i, a in enumerate(names) if a not in named)}
""",
        "failed",
        "values",
        ("hold copies",),
    ),
    Mistake(
        "place-replicated",
        L01,
        "place",
        """
def place(x, mesh, spec):
    return jax.device_put(x, NamedSharding(mesh, PartitionSpec()))
""",
        "failed",
        "sharding",
        ("replicated",),
    ),
    Mistake(
        "place-returns-numpy",
        L01,
        "place",
        """
def place(x, mesh, spec):
    return np.asarray(jax.device_put(x, NamedSharding(mesh, spec)))
""",
        "failed",
        "values",
        ("ndarray", "jax.Array"),
    ),
    Mistake(
        "place-mutates-input",
        L01,
        "place",
        """
def place(x, mesh, spec):
    x[...] = x.astype(np.float16)  # "saves memory", in place
    return jax.device_put(x, NamedSharding(mesh, spec))
""",
        "failed",
        "inputs",
        ("modified in place",),
    ),
    Mistake(
        "bytes-counts-elements",
        L01,
        "bytes_per_device",
        """
def bytes_per_device(global_shape, dtype, mesh_shape, spec):
    return math.prod(shard_shape(global_shape, mesh_shape, spec))
""",
        "failed",
        "values",
        ("itemsize",),
    ),
]

# Lessons 3 onwards keep their mistakes in a module each.
from tests.mistakes import l03, l04, l05, l06, l11  # noqa: E402

MISTAKES += l03.MISTAKES + l04.MISTAKES + l05.MISTAKES + l06.MISTAKES + l11.MISTAKES
