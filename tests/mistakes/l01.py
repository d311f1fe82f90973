"""Realistic wrong implementations for lesson 1 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L01 = "l01_meshes"

MISTAKES: list[Mistake] = [
    Mistake(
        id="floor-division-hides-indivisible",
        module=L01,
        exercise="shard_shape",
        code="""
def shard_shape(global_shape, mesh_shape, spec):
    out = []
    for dim, size in enumerate(global_shape):
        entry = spec[dim] if dim < len(spec) else None
        axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
        out.append(size // math.prod(mesh_shape[a] for a in axes))
    return tuple(out)
""",
        status="failed",
        check="values",
        says=("Integer division",),
    ),
    Mistake(
        id="tuple-entry-first-axis-only",
        module=L01,
        exercise="shard_shape",
        code="""
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
        status="failed",
        check="values",
        says=("product of all their sizes",),
    ),
    Mistake(
        id="zip-truncates-short-spec",
        module=L01,
        exercise="shard_shape",
        code="""
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
        status="failed",
        check="values",
        says=("zip",),
    ),
    Mistake(
        id="minor-major-swapped",
        module=L01,
        exercise="device_slices",
        status="failed",
        check="values",
        says=("first is major",),
        patch=(("for a in axes:  # row-major", "for a in reversed(axes):  # row-major"),),
    ),
    Mistake(
        id="slice-at-block-index",
        module=L01,
        exercise="device_slices",
        status="failed",
        check="values",
        says=("block index × shard size",),
        patch=(("slice(index * size, (index + 1) * size)", "slice(index, index + size)"),),
    ),
    Mistake(
        id="replicas-left-out",
        module=L01,
        exercise="device_slices",
        code="""
_correct_device_slices = device_slices

def device_slices(global_shape, mesh_shape, spec):
    named = {a for e in spec if e is not None for a in ((e,) if isinstance(e, str) else e)}
    full = _correct_device_slices(global_shape, mesh_shape, spec)
    names = list(mesh_shape)
    # keeps only the devices at coordinate 0 of every axis the spec does not name
    return {c: s for c, s in full.items() if all(c[i] == 0 for i, a in enumerate(names) if a not in named)}
""",
        status="failed",
        check="values",
        says=("hold copies",),
    ),
    Mistake(
        id="place-replicated",
        module=L01,
        exercise="place",
        code="""
def place(x, mesh, spec):
    return jax.device_put(x, NamedSharding(mesh, PartitionSpec()))
""",
        status="failed",
        check="sharding",
        says=("replicated",),
    ),
    Mistake(
        id="place-returns-numpy",
        module=L01,
        exercise="place",
        code="""
def place(x, mesh, spec):
    return np.asarray(jax.device_put(x, NamedSharding(mesh, spec)))
""",
        status="failed",
        check="values",
        says=("ndarray", "jax.Array"),
    ),
    Mistake(
        id="place-mutates-input",
        module=L01,
        exercise="place",
        code="""
def place(x, mesh, spec):
    x[...] = x.astype(np.float16)  # "saves memory", in place
    return jax.device_put(x, NamedSharding(mesh, spec))
""",
        status="failed",
        check="inputs",
        says=("modified in place",),
    ),
    Mistake(
        id="bytes-counts-elements",
        module=L01,
        exercise="bytes_per_device",
        code="""
def bytes_per_device(global_shape, dtype, mesh_shape, spec):
    return math.prod(shard_shape(global_shape, mesh_shape, spec))
""",
        status="failed",
        check="values",
        says=("itemsize",),
    ),
]
