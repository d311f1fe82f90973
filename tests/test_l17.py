"""Lesson 17: what the grader watches of a kernel in TPU interpret mode (on this jax), the
summary it makes of the reference's DMAs against the ring's formulas, and each
structural diagnosis both ways: the mistake gets it, the nearest other mistake does not
(the whole grades of the catalogue are in tests/mistakes/l17.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.lessons.l17_pallas_kernels import dmas, spec
from grader.loader import load_module
from grader.results import Status
from grader.sandbox import backends
from grader.spec import Trial
from tests.mistakes.l17 import MISTAKES

ROOT = Path(spec.__file__).resolve().parents[3]
SOLUTION = load_module(ROOT / "solutions", "l17_pallas_kernels")


def test_this_jax_has_what_the_grader_watches():
    """The interpreter's hooks exist with the arguments read (a newer jax that renames
    them is named here, not by a wrong grade)."""
    assert dmas.supported() is None


@pytest.mark.parametrize(
    "exercise", ["ring_all_gather", "ring_reduce_scatter", "tiled_matmul", "all_gather_matmul"]
)
def test_the_reference_passes_on_this_jax(exercise):
    result = backends.grade_lesson(
        17, "l17_pallas_kernels", ROOT / "solutions", only=[exercise], max_examples=0
    )
    (er,) = result.exercises
    assert er.status == Status.PASSED, [c.to_dict() for c in er.checks if not c.passed]


def _watch(fn, n: int, rows: int, d: int, dtype=np.float32) -> dmas.Observed:
    import jax
    from jax.experimental.pallas import tpu as pltpu
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((n,), ("x",), devices=jax.devices()[:n],
                         axis_types=(jax.sharding.AxisType.Explicit,))  # fmt: skip
    x = jax.device_put(np.ones((rows, d), dtype), NamedSharding(mesh, P("x", None)))
    with pltpu.force_tpu_interpret_mode(spec._interpret(True)), dmas.watch() as log:
        jax.block_until_ready(fn(x, mesh))
    return dmas.Observed.read(np.asarray(dmas.summary(log, n)), n)


def test_the_reference_all_gather_as_watched():
    """N = 3, b = 2, d = 8, float32: one block is 2·8·4 = 64 B; each device starts
    N − 1 = 2 remote DMAs to i + 1, sends 128 B, gives each step its own receive
    semaphore, waits twice at each end, and signals both neighbours first."""
    obs = _watch(SOLUTION.ring_all_gather, 3, 3 * 2, 8)
    assert not obs.races
    for row in obs.rows:
        assert row == {"remote": 2, "right": 2, "left": 0, "bytes": 128, "recv_waits": 2,
                       "recv_sems": 2, "barrier": 1, "largest": 64, "send_waits": 2}  # fmt: skip


def test_the_reference_reduce_scatter_sends_float32_sums():
    """N = 4, b = 1, d = 8, bfloat16 inputs: the running sum [1, 8] travels in float32,
    32 B a step, 3 · 32 = 96 B per device."""
    import jax.numpy as jnp

    obs = _watch(SOLUTION.ring_reduce_scatter, 4, 4 * 4 * 1, 8, jnp.bfloat16)
    assert obs.column("bytes") == [96] * 4 and obs.column("largest") == [32] * 4


# ------------------------------------------------------------------ diagnoses both ways

ROW = {"remote": 3, "right": 3, "left": 0, "bytes": 192, "recv_waits": 3, "recv_sems": 3,
       "barrier": 1, "largest": 64, "send_waits": 3}  # fmt: skip
"""The reference's row at N = 4, b = 2, d = 8, float32."""


def _trial(n: int = 4, dtype: str = "float32", races: bool = False, **changed: int) -> Trial:
    row = [{**ROW, **changed}[c] for c in dmas.COLUMNS]
    table = [row] * n + [[int(races)] + [0] * (len(dmas.COLUMNS) - 1)]
    ex = {"n": n, "b": 2, "d": 8, "dtype": dtype, "seed": 0}
    return Trial(example=ex, extra={spec.OBSERVED: np.array(table)})


def _hint(check, trial: Trial) -> str:
    result = check(trial)
    assert not result.passed, result.message
    return f"{result.message} {result.hint}"


def test_a_shared_receive_semaphore_is_named_and_n_semaphores_are_not():
    assert "One receive semaphore shared" in _hint(spec.ReceiveSemaphores(), _trial(recv_sems=1))
    assert "One receive semaphore shared" not in _hint(
        spec.ReceiveSemaphores(), _trial(recv_sems=4)
    )


def test_n_steps_is_named_and_a_shared_semaphore_passes_the_count():
    assert "N steps instead of N − 1" in _hint(spec.RemoteSteps(), _trial(remote=4, right=4))
    assert "N steps instead" not in _hint(spec.RemoteSteps(), _trial(remote=2, right=2))
    assert spec.RemoteSteps()(_trial(recv_sems=1)).passed


def test_the_missing_wait_is_the_one_named():
    recv = _hint(spec.Waits(), _trial(recv_waits=2))
    assert "A wait missing" in recv and "wait_recv" in recv and "wait_send" not in recv
    send = _hint(spec.Waits(), _trial(send_waits=0))
    assert "wait_send" in send and "wait_recv" not in send
    assert spec.Waits()(_trial(recv_sems=1)).passed  # a shared semaphore still waits N − 1 times


def test_the_left_neighbour_is_named_and_mixed_directions_are_not():
    assert "left neighbour (i − 1)" in _hint(spec.Direction(), _trial(right=0, left=3))
    assert "left neighbour" not in _hint(spec.Direction(), _trial(right=2, left=1))
    assert spec.Direction()(_trial(n=2, right=1, remote=1, left=0, bytes=64, recv_sems=1)).passed


def test_a_bfloat16_running_sum_is_named_only_in_bfloat16():
    """Half of (N − 1) float32 blocks in a bfloat16 example; the same bytes in a float32
    example (a block of half the rows) is not called a bfloat16 sum."""
    half = {"bytes": 3 * 32, "largest": 32}
    assert "travels in bfloat16" in _hint(spec.ScatterBytes(), _trial(dtype="bfloat16", **half))
    assert "travels in bfloat16" not in _hint(spec.ScatterBytes(), _trial(**half))


def test_no_barrier_is_named_and_a_barrier_passes():
    assert "No barrier" in _hint(spec.Barrier(), _trial(barrier=0))
    assert spec.Barrier()(_trial(remote=4, right=4)).passed


def test_a_race_is_reported_and_none_passes():
    assert "race detector reported a race" in _hint(spec.NoRace(), _trial(races=True))
    assert spec.NoRace()(_trial()).passed


def test_nan_in_the_output_is_named_and_wrong_finite_values_are_not():
    import jax.numpy as jnp

    check = spec.NaNs(spec.Values(), spec.MATMUL_NAN)
    want = np.ones((8, 8), np.float32)
    nan = Trial(example={"dtype": "float32"}, output=jnp.full((8, 8), jnp.nan), expected=want)
    off = Trial(example={"dtype": "float32"}, output=jnp.full((8, 8), 2.0), expected=want)
    assert "not zeroed on the first k step" in _hint(check, nan)
    assert "NaN" not in (check(off).hint or "")


# ------------------------------------------------------------------ the kernel's jaxpr


def _kernel_row(mistake_id: str | None) -> dict[str, int]:
    import jax
    import jax.numpy as jnp

    source = (ROOT / "solutions" / "l17_pallas_kernels.py").read_text()
    if mistake_id is not None:
        (mistake,) = [m for m in MISTAKES if m.id == mistake_id]
        source = mistake.source(source)
    namespace: dict = {}
    exec(compile(source, "l17_variant.py", "exec"), namespace)
    a = jax.ShapeDtypeStruct((16, 32), jnp.bfloat16)
    b = jax.ShapeDtypeStruct((32, 16), jnp.bfloat16)
    traced = jax.make_jaxpr(lambda p, q: namespace["tiled_matmul"](p, q, 8, 16, 8))(a, b)
    return dict(zip(spec.KERNEL_COLUMNS, spec.kernel_summary(traced)[0]))


def test_the_kernel_read_tells_the_accumulator_and_the_store_apart():
    """The reference: one kernel, a float32 scratch, its output stored under a condition,
    on a 2 × 2 × 2 grid. A bfloat16 accumulator and a store on every k step are each
    seen; an accumulator never zeroed is not the accumulator check's (values say it)."""
    ref = _kernel_row(None)
    assert ref == {"kernels": 1, "acc_f32": 1, "acc_low": 0, "stores": 1,
                   "stores_unconditional": 0, "grid": 8}  # fmt: skip
    assert _kernel_row("pallas-matmul-bfloat16-accumulator")["acc_low"] == 1
    every = _kernel_row("pallas-matmul-output-every-k-step")
    assert every["stores_unconditional"] == 1 and every["acc_low"] == 0
    assert _kernel_row("pallas-matmul-accumulator-not-zeroed") == ref


def test_the_tpu_benchmark_says_there_is_no_tpu_and_runs_in_interpret_mode(capsys):
    """benchmarks/pallas_tpu.py (the lead runs it on the chip): without a TPU it says so
    and exits 0; --interpret runs its code path on CPU and prints jnp.dot's line and the
    tiled matmul's, with the values checked."""
    import importlib.util

    path = ROOT / "benchmarks" / "pallas_tpu.py"
    loaded = importlib.util.spec_from_file_location("pallas_tpu", path)
    bench = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(bench)
    assert bench.main([]) == 0
    assert "no TPU on this host" in capsys.readouterr().out
    assert bench.main(["--interpret", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "jnp.dot:" in out and "tiled_matmul bm=128 bk=128 bn=128:" in out
    assert "refused" not in out


def _order(mistake_id: str | None) -> int:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    source = (ROOT / "solutions" / "l17_pallas_kernels.py").read_text()
    if mistake_id is not None:
        (mistake,) = [m for m in MISTAKES if m.id == mistake_id]
        source = mistake.source(source)
    namespace: dict = {}
    exec(compile(source, "l17_variant.py", "exec"), namespace)
    mesh = jax.make_mesh((4,), ("x",), devices=jax.devices()[:4],
                         axis_types=(jax.sharding.AxisType.Explicit,))  # fmt: skip
    rows = NamedSharding(mesh, P("x", None))
    x = jax.ShapeDtypeStruct((8, 32), jnp.float32, sharding=rows)
    w = jax.ShapeDtypeStruct((32, 16), jnp.float32, sharding=rows)
    fn = namespace["all_gather_matmul"]
    return spec.kernel_order(jax.make_jaxpr(lambda p, q: fn(p, q, mesh))(x, w))


def test_the_bonus_order_tells_waiting_first_from_double_buffering():
    """start, matmul, wait in the loop: 1; wait before the matmul: 0; the kernel without
    the free-slot handshake still overlaps (its race is the race detector's)."""
    assert _order(None) == 1
    assert _order("pallas-gather-matmul-waits-before-multiplying") == 0
    assert _order("pallas-gather-matmul-no-free-slot-handshake") == 1
    trial = _trial()
    trial.extra[spec.OBSERVED][-1, 1] = 0
    assert "Not double buffered" in _hint(spec.Overlap(), trial)
    trial.extra[spec.OBSERVED][-1, 1] = 1
    assert spec.Overlap()(trial).passed


def test_the_barrier_is_whichever_semaphore_get_barrier_semaphore_gave():
    """Two devices; each signals the other on the barrier semaphore (collective_id 3,
    the interpreter's fixed id for it) and waits before its remote DMA: a barrier. The
    same signals on another semaphore (id 0) are not one."""

    def log(sem: int) -> dmas.Log:
        out = dmas.Log()
        for dev in (0, 1):
            peer = 1 - dev
            out.events += [
                ("get_barrier_semaphore", dev, {"collective_id": 3}),
                ("semaphore_signal", dev, {"sem_id": sem, "inc": 1, "target_device_id": peer}),
                ("semaphore_wait", dev, {"sem_id": sem, "value": 1}),
                ("dma_start", dev, {"dst_device_id": peer, "dst_sem_id": 7, "src_sem_id": 6}),
            ]
        return out

    barrier = dmas.COLUMNS.index("barrier")
    assert [row[barrier] for row in dmas.summary(log(3), 2)[:2]] == [1, 1]
    assert [row[barrier] for row in dmas.summary(log(0), 2)[:2]] == [0, 0]
