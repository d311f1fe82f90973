"""Capture the compiled HLO that tests/test_hlo.py reads, with the JAX installed here.

    python tests/data/hlo/capture.py tests/data/hlo/jax-$(python -c 'import jax; print(jax.__version__)')

Each program uses one collective form the reader must understand: groups
along one axis of a 2-D mesh, a 3-device ring, and a 2x3 mesh.
"""

import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def compiled(f, mesh, in_specs, out_specs, *args) -> str:
    prog = jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)
    return jax.jit(prog).lower(*args).compile().as_text()


def save(path: Path, text: str) -> None:
    path.write_text(text.replace(str(Path(__file__).resolve()), "capture.py"))


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    m4 = jax.make_mesh((2, 2), ("x", "y"), devices=jax.devices()[:4])
    m3 = jax.make_mesh((3,), ("x",), devices=jax.devices()[:3])
    m6 = jax.make_mesh((2, 3), ("x", "y"), devices=jax.devices()[:6])

    def put(mesh, shape, spec):
        return jax.device_put(jnp.ones(shape, jnp.float32), NamedSharding(mesh, spec))

    # a (2,2) mesh: psum over 'y', then all-gather over 'x' (lesson 4's matmul_2d shape)
    text = compiled(
        lambda a, b: lax.all_gather(lax.psum(a @ b, "y"), "x", tiled=True),
        m4, (P("x", "y"), P("y", None)), P(None, None),
        put(m4, (8, 8), P("x", "y")), put(m4, (8, 8), P("y", None)),
    )  # fmt: skip
    save(out / "2d.hlo", text)
    text = compiled(
        lambda a: lax.psum_scatter(a, "x", scatter_dimension=0, tiled=True),
        m4, P(None, "y"), P("x", "y"), put(m4, (8, 8), P(None, "y")),
    )  # fmt: skip
    save(out / "rs.hlo", text)
    text = compiled(
        lambda a: (lax.psum(a, "x"), lax.all_to_all(a, "x", 1, 1, tiled=True)),
        m3, P("x"), (P("x"), P("x")), put(m3, (6, 6), P("x")),
    )  # fmt: skip
    save(out / "1d3.hlo", text)
    text = compiled(
        lambda a: (lax.psum(a, ("x", "y")), lax.all_gather(a, "y", tiled=True, axis=1)),
        m6, P("x", "y"), (P("x", "y"), P("x", None)), put(m6, (6, 6), P("x", "y")),
    )  # fmt: skip
    save(out / "2x3.hlo", text)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
