"""Lesson 17: what the grader reads of a kernel from its Mosaic IR (the program exported
for a TPU, :mod:`grader.lessons.l17_pallas_kernels.observed`), the counts it makes of the
reference's DMAs against the ring's formulas, and each structural diagnosis both ways:
the mistake gets it, the nearest other mistake does not (the whole grades of the
catalogue are in tests/mistakes/l17.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.lessons.l17_pallas_kernels import observed, spec
from grader.loader import load_module
from grader.measure import mosaic
from grader.results import Status
from grader.runtime import InProcess
from grader.sandbox import backends
from grader.spec import Trial
from tests.mistakes.l17 import MISTAKES

ROOT = Path(spec.__file__).resolve().parents[3]
SOLUTION = load_module(ROOT / "solutions", "l17_pallas_kernels")


def test_this_jaxlib_reads_mosaic():
    """The TPU dialect's bindings and mosaic-serde are there (a jaxlib without them is
    named here, not by a wrong grade)."""
    assert mosaic.dialect_missing() is None


@pytest.mark.parametrize(
    "exercise", ["ring_all_gather", "ring_reduce_scatter", "tiled_matmul", "all_gather_matmul"]
)
def test_the_reference_passes_on_this_jax(exercise):
    result = backends.grade_lesson(
        17, "l17_pallas_kernels", ROOT / "solutions", only=[exercise], max_examples=0
    )
    (er,) = result.exercises
    assert er.status == Status.PASSED, [c.to_dict() for c in er.checks if not c.passed]


def _read(fn, n: int, rows: int, d: int, dtype=np.float32) -> observed.Observed:
    """``fn``'s kernel exported for a TPU and counted, as the worker reads it."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((n,), ("x",), devices=jax.devices()[:n],
                         axis_types=(jax.sharding.AxisType.Explicit,))  # fmt: skip
    x = jax.device_put(np.ones((rows, d), dtype), NamedSharding(mesh, P("x", None)))
    return observed.observe(spec._read(InProcess({}), fn, (x,), n), n)


def test_the_reference_all_gather_as_read():
    """N = 3, b = 2, d = 8, float32: one block is 2·8·4 = 64 B; each device starts
    N − 1 = 2 remote DMAs to i + 1, sends 128 B, gives each step its own receive
    semaphore, waits twice at each end, and signals both neighbours first."""
    obs = _read(SOLUTION.ring_all_gather, 3, 3 * 2, 8)
    assert obs.kernels == 1 and obs.unread is None
    for row in obs.rows:
        assert row == {"remote": 2, "right": 2, "left": 0, "bytes": 128, "recv_waits": 2,
                       "recv_sems": 2, "barrier": 1, "largest": 64, "send_waits": 2,
                       "handshakes": 0, "handshake_waits": 0}  # fmt: skip


def test_the_reference_reduce_scatter_sends_float32_sums():
    """N = 4, b = 1, d = 8, bfloat16 inputs: the running sum [1, 8] travels in float32,
    32 B a step, 3 · 32 = 96 B per device."""
    import jax.numpy as jnp

    obs = _read(SOLUTION.ring_reduce_scatter, 4, 4 * 4 * 1, 8, jnp.bfloat16)
    assert obs.column("bytes") == [96] * 4 and obs.column("largest") == [32] * 4


# ------------------------------------------------------------------ diagnoses both ways

ROW = {"remote": 3, "right": 3, "left": 0, "bytes": 192, "recv_waits": 3, "recv_sems": 3,
       "barrier": 1, "largest": 64, "send_waits": 3, "handshakes": 2,
       "handshake_waits": 2}  # fmt: skip
"""The reference's row at N = 4, b = 2, d = 8, float32."""


def _trial(n: int = 4, dtype: str = "float32", overlap: bool = True,
           unread: str | None = None, **changed: int) -> Trial:  # fmt: skip
    rows = tuple({**ROW, **changed} for _ in range(n))
    ex = {"n": n, "b": 2, "d": 8, "dtype": dtype, "seed": 0}
    seen = observed.Observed(rows, 1, overlap=overlap, unread=unread)
    return Trial(example=ex, extra={spec.OBSERVED: seen})


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


def test_no_free_slot_handshake_is_named_and_n_minus_2_of_each_passes():
    """At N = 4 the reference signals and waits N − 2 = 2 times per device."""
    said = _hint(spec.Handshake(), _trial(handshakes=0, handshake_waits=0))
    assert "No free-slot handshake" in said
    assert "No free-slot handshake" in _hint(spec.Handshake(), _trial(handshake_waits=0))
    assert spec.Handshake()(_trial()).passed
    assert spec.Handshake()(_trial(n=2, handshakes=0, handshake_waits=0)).passed


def test_a_kernel_the_grader_cannot_count_is_said_and_not_guessed():
    said = _hint(spec.RemoteSteps(), _trial(unread="a remote DMA under a loop ..."))
    assert "could not count your kernel's DMAs" in said and "constant bounds" in said
    assert "N steps" not in said


def test_nan_in_the_output_is_named_and_wrong_finite_values_are_not():
    import jax.numpy as jnp

    check = spec.NaNs(spec.Values(), spec.MATMUL_NAN)
    want = np.ones((8, 8), np.float32)
    nan = Trial(example={"dtype": "float32"}, output=jnp.full((8, 8), jnp.nan), expected=want)
    off = Trial(example={"dtype": "float32"}, output=jnp.full((8, 8), 2.0), expected=want)
    assert "not zeroed on the first k step" in _hint(check, nan)
    assert "NaN" not in (check(off).hint or "")


# ------------------------------------------------------------------ the kernel's jaxpr


def _variant(mistake_id: str | None) -> dict:
    source = (ROOT / "solutions" / "l17_pallas_kernels.py").read_text()
    if mistake_id is not None:
        (mistake,) = [m for m in MISTAKES if m.id == mistake_id]
        source = mistake.source(source)
    namespace: dict = {}
    exec(compile(source, "l17_variant.py", "exec"), namespace)
    return namespace


def _accumulator(mistake_id: str | None):
    """The accumulator check on a variant's kernel, read at TPU tiles on a 2 × 2 × 2 grid."""
    import jax
    import jax.numpy as jnp

    fn = _variant(mistake_id)["tiled_matmul"]
    a = jax.ShapeDtypeStruct((16, 256), jnp.bfloat16)
    b = jax.ShapeDtypeStruct((256, 256), jnp.bfloat16)
    kernels = InProcess({}).kernels(lambda p, q: fn(p, q, 8, 128, 128), (a, b), None)
    ex = {"gm": 2, "gk": 2, "gn": 2, "bm": 8, "bk": 16, "bn": 8, "dtype": "bfloat16"}
    return spec.Accumulator()(Trial(example=ex, extra={spec.KERNELS: kernels}))


def test_the_kernel_read_tells_the_accumulator_and_the_store_apart():
    """The reference: one kernel, its sum in float32, its output stored on the last k
    step only. A bfloat16 accumulator and a store on every k step are each named, and
    not each other; an accumulator never zeroed is not the accumulator check's (values
    say it: interpret mode's NaN)."""
    assert _accumulator(None).passed
    low = _accumulator("pallas-matmul-bfloat16-accumulator")
    assert not low.passed and "bfloat16" in low.message and "The output written" not in low.hint
    every = _accumulator("pallas-matmul-output-every-k-step")
    assert not every.passed and "k steps [0, 1]" in every.message
    assert "bfloat16" not in every.message
    assert _accumulator("pallas-matmul-accumulator-not-zeroed").passed


def test_a_sum_kept_in_the_output_is_not_called_a_bfloat16_accumulator():
    """Accumulating into the output tile itself (no scratch): the check names no scratch
    buffer, and its advice is the float32 scratch, not bfloat16 rounding."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def straight(a, b, bm, bk, bn):
        def kernel(a_ref, b_ref, o_ref):
            @pl.when(pl.program_id(2) == 0)
            def _():
                o_ref[...] = jnp.zeros_like(o_ref)

            o_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

        m, k, n = a.shape[0], a.shape[1], b.shape[1]
        return pl.pallas_call(
            kernel,
            grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        )(a, b)  # fmt: skip

    a = jax.ShapeDtypeStruct((16, 256), jnp.float32)
    b = jax.ShapeDtypeStruct((256, 256), jnp.float32)
    kernels = InProcess({}).kernels(lambda p, q: straight(p, q, 8, 128, 128), (a, b), None)
    ex = {"gm": 2, "gk": 2, "gn": 2, "bm": 8, "bk": 16, "bn": 8, "dtype": "float32"}
    result = spec.Accumulator()(Trial(example=ex, extra={spec.KERNELS: kernels}))
    assert not result.passed and "no scratch buffer" in result.message, result.message
    assert "bfloat16" not in result.hint and "float32 VMEM scratch" in result.hint


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


def _gather_matmul(mistake_id: str | None) -> observed.Observed:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    fn = _variant(mistake_id)["all_gather_matmul"]
    mesh = jax.make_mesh((4,), ("x",), devices=jax.devices()[:4],
                         axis_types=(jax.sharding.AxisType.Explicit,))  # fmt: skip
    rows = NamedSharding(mesh, P("x", None))
    x = jax.device_put(np.ones((8, 32), np.float32), rows)
    w = jax.device_put(np.ones((32, 16), np.float32), rows)
    return observed.observe(spec._read(InProcess({}), fn, (x, w), 4), 4)


def test_the_bonus_order_and_handshake_are_read_from_the_kernel():
    """start, matmul, wait in the loop: overlap; the wait before the matmul: none, but its
    handshake whole (N − 2 = 2 signals and waits a device: the handshake check passes it,
    and only the overlap is named); the kernel without the free-slot handshake still
    overlaps, and its handshakes read 0."""
    ref = _gather_matmul(None)
    assert ref.overlap and ref.column("handshakes") == [2] * 4
    assert ref.column("handshake_waits") == [2] * 4
    serial = _gather_matmul("pallas-gather-matmul-waits-before-multiplying")
    assert not serial.overlap
    assert serial.column("handshakes") == serial.column("handshake_waits") == [2] * 4
    loose = _gather_matmul("pallas-gather-matmul-no-free-slot-handshake")
    assert loose.overlap and loose.column("handshakes") == [0] * 4
    assert "Not double buffered" in _hint(spec.Overlap(), _trial(overlap=False))
    assert spec.Overlap()(_trial()).passed


def test_no_barrier_reads_0_and_the_reference_reads_1():
    """The barrier: both neighbours signalled on get_barrier_semaphore's semaphore and
    waited for before the first remote DMA (the catalogue's kernel without one, its
    collective_id dropped so that Mosaic lowers it)."""
    assert _read(SOLUTION.ring_all_gather, 4, 4 * 2, 8).column("barrier") == [1] * 4
    loose = _variant("pallas-ring-no-barrier")["ring_all_gather"]
    assert _read(loose, 4, 4 * 2, 8).column("barrier") == [0] * 4
