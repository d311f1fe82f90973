"""Lesson 13: the cluster of student's processes under faults, and the text's figures.

Each fault test starts a real cluster (:mod:`grader.sandbox.cluster`: P
processes joined by ``jax.distributed``, in the sandbox where there is one),
makes one process die, hang or never join, and asserts that the whole
cluster ended, with a message that names the process and what it was doing,
within a bounded time, and that no process it started is left (read from
``/proc``: every descendant of the cluster's launcher, taken while it ran).
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from grader.config import Sandbox
from grader.lessons.l13_multi_host import on_process
from grader.sandbox import backends, jail, wire
from grader.sandbox.cluster import Cluster, ClusterHung, ClusterPool
from grader.sandbox.isolation import StudentProcessDied
from tests.sandboxed import SANDBOX

MODULE = "l13_multi_host"
BATCH = "import os\nimport jax\nimport numpy as np\n"


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (from /proc's parent links)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
                parent[int(entry.name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.update(kids)
        todo.extend(kids)
    return out


def alive(pids: set[int]) -> list[int]:
    left = []
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.append(p)
    return left


def gone(pids: set[int], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not alive(pids)


def cluster(tmp_path: Path, source: str, processes: int = 2, **kw) -> Cluster:
    (tmp_path / f"{MODULE}.py").write_text(source)
    c = Cluster(str(tmp_path), MODULE, processes, 1, **kw)
    c.start()
    return c


def students(c: Cluster) -> set[int]:
    """The launcher and everything below it, once every process has joined."""
    c.join()
    assert c.proc is not None
    pids = descendants(c.proc.pid) | {c.proc.pid}
    assert len(pids) >= c.processes + 1, pids
    return pids


def batch_question(c: Cluster) -> list[dict]:
    return [{"op": "task", "exercise": "global_batch", "task": f"{on_process.__name__}:batch",
             "payload": wire.encode({"rows": np.zeros((1, 1), np.float32)})}
            for _ in range(c.processes)]  # fmt: skip


def test_a_cluster_runs_the_same_task_in_every_process_and_leaves_nothing(tmp_path):
    c = cluster(tmp_path, BATCH + "def global_batch(rows, mesh):\n    return int(jax.process_index())\n", 3)  # fmt: skip
    pids = students(c)
    answers = c.ask(batch_question(c), "running global_batch")
    assert [wire.decode(a["result"]) for a in answers] == [{"type": "int"}] * 3
    c.stop()
    assert gone(pids)


def test_a_process_that_dies_while_importing_ends_the_cluster_and_is_named(tmp_path):
    c = cluster(tmp_path, BATCH + "if jax.process_index() == 1:\n    os._exit(3)\n")
    pids = students(c)
    with pytest.raises(StudentProcessDied, match="process 1 ended while importing your module"):
        c.load()
    assert gone(pids)


def test_a_process_that_dies_inside_a_call_ends_the_cluster_and_is_named(tmp_path):
    source = BATCH + "def global_batch(rows, mesh):\n    if jax.process_index() == 1:\n        os._exit(4)\n    return rows\n"  # fmt: skip
    c = cluster(tmp_path, source)
    pids = students(c)
    with pytest.raises(StudentProcessDied, match="process 1 ended while running global_batch"):
        c.ask(batch_question(c), "running global_batch")
    assert gone(pids)


DEADLOCK = (
    BATCH
    + """
from jax.experimental import multihost_utils

def global_batch(rows, mesh):
    if jax.process_index() == 0:  # a collective only process 0 reaches
        multihost_utils.sync_global_devices("process 0 alone")
    return rows
"""
)


def test_a_collective_not_every_process_reaches_is_stopped_at_the_limit_and_named(tmp_path):
    c = cluster(tmp_path, DEADLOCK)
    pids = students(c)
    c.load()
    start = time.monotonic()
    with pytest.raises(ClusterHung) as caught:
        c.ask(batch_question(c), "running global_batch", limit=10.0)  # process 1: room at load
    took = time.monotonic() - start
    message = str(caught.value)
    assert "process 1 returned from global_batch" in message, message
    assert "process 0 still inside after 10" in message, message
    assert "a collective not every process reached" in message
    assert "jax.process_index()" in (caught.value.hint or "")
    assert took < 10.0 + 30.0, took
    assert gone(pids)


def test_a_process_that_never_joins_ends_the_cluster_within_the_join_limit(tmp_path):
    c = cluster(tmp_path, BATCH, absent=(1,))
    c.join_limit = 4.0
    assert c.proc is not None
    time.sleep(0.5)
    pids = descendants(c.proc.pid) | {c.proc.pid}
    start = time.monotonic()
    with pytest.raises(ClusterHung, match=r"the cluster did not form: processes 0 and 1 still joining after 4 s"):  # fmt: skip
        c.join()
    assert time.monotonic() - start < 4.0 + 15.0
    assert gone(pids)


HANG_IN_TWO = (
    BATCH
    + """
import time

def global_batch(rows, mesh):
    if jax.process_count() == 2:  # the 2-process cluster hangs; the 3-process one answers
        time.sleep(1000)
    return int(jax.process_index())
"""
)


def test_clusters_started_together_share_a_launcher_and_a_hung_one_is_stopped_alone(tmp_path):
    """A pool's clusters started at once run under one launcher (jax imported
    once); a cluster stopped (here: hung past its limit) has its processes killed
    while the other goes on answering; closing the pool leaves nothing."""
    (tmp_path / f"{MODULE}.py").write_text(HANG_IN_TWO)
    pool = ClusterPool(str(tmp_path), MODULE)
    try:
        two = pool.get(2, 1, ahead=((3, 1),))
        three = pool.get(3, 1)
        assert two.proc is not None and two.proc is three.proc, "not one launcher"
        two.join()
        three.join()
        everything = descendants(two.proc.pid) | {two.proc.pid}
        before = len(alive(everything))
        assert before >= two.processes + three.processes + 1, everything
        with pytest.raises(ClusterHung, match="no process returned from global_batch"):
            two.ask(batch_question(two), "running global_batch", limit=3.0)
        deadline = time.monotonic() + 10.0
        while len(alive(everything)) > before - two.processes and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(alive(everything)) == before - two.processes, "the hung cluster's processes live on"  # fmt: skip
        answers = three.ask(batch_question(three), "running global_batch")
        assert [wire.decode(a["result"]) for a in answers] == [{"type": "int"}] * 3
    finally:
        pool.close()
    assert gone(everything)


def _launched_ahead(c: Cluster) -> bool:
    """Whether the cluster's launcher (or the sandbox around it) was told ``--ahead``."""
    assert c.proc is not None
    for pid in {c.proc.pid} | descendants(c.proc.pid):
        try:
            if b"--ahead" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


def test_clusters_started_ahead_warm_up_and_those_started_for_a_grade_do_not(tmp_path):
    """A serving worker's clusters started ahead (between two grades) warm up once
    joined; a cluster started when a grade needs it is not made to wait for that."""
    (tmp_path / f"{MODULE}.py").write_text(
        BATCH + "def global_batch(rows, mesh):\n    return int(jax.process_index())\n"
    )
    ahead, now = ClusterPool(str(tmp_path), MODULE), ClusterPool(str(tmp_path), MODULE)
    try:
        ahead.start_ahead(((2, 1),))
        started = now.get(2, 1)
        warmed = ahead.get(2, 1)
        assert _launched_ahead(warmed) and not _launched_ahead(started)
        for c in (warmed, started):
            c.load()
            answers = c.ask(batch_question(c), "running global_batch")
            assert [wire.decode(a["result"]) for a in answers] == [{"type": "int"}] * 2
    finally:
        ahead.close()
        now.close()


def test_forming_a_grades_clusters_starts_their_imports_at_once(tmp_path, capfd):
    """Each cluster the example needs is asked to import the module as soon as it
    has joined, before any is asked a question (the imports overlap); the answers
    are gathered at each cluster's first question, as before. (Each import says
    so on its output: the submission's folder is read-only to a cluster's processes.)"""
    from types import SimpleNamespace

    (tmp_path / f"{MODULE}.py").write_text(
        BATCH + "print(f'imported-{os.getpid()}-{jax.process_index()}', flush=True)\n"
        "def global_batch(rows, mesh):\n    return int(jax.process_index())\n"
    )
    pool = ClusterPool(str(tmp_path), MODULE)
    try:
        pool.form(SimpleNamespace(cluster=lambda ex: ((2, 1), (3, 1))), {})
        deadline = time.monotonic() + 300.0  # JAX imported and joined by 5 processes at load
        said = ""
        while said.count("imported-") < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
            said += capfd.readouterr().out
        assert said.count("imported-") == 5, f"not every process imported it: {said!r}"
        three = pool.get(3, 1)
        answers = three.ask(batch_question(three), "running global_batch")
        assert [wire.decode(a["result"]) for a in answers] == [{"type": "int"}] * 3
    finally:
        pool.close()


def test_the_clusters_warm_up_runs_on_this_processs_own_devices():
    """It runs through (it returns False on any error, so an API it uses that a
    JAX version lacks would silently cost the time it is there to save)."""
    from grader.sandbox.student import warm_up_cluster

    assert warm_up_cluster() is True


def test_the_launcher_waits_for_process_0_to_listen_and_no_longer():
    """The launcher starts processes 1… once process 0's coordination service
    listens (one that connects sooner retries a second later): the wait ends
    when the port listens, or when process 0 has ended, never later."""
    import socket
    import subprocess
    import threading

    from grader.sandbox import cluster as launcher

    port = launcher.free_port()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening_at: list[float] = []

    def listen_later() -> None:
        time.sleep(0.5)
        server.bind(("127.0.0.1", port))
        server.listen()
        listening_at.append(time.monotonic())

    sleeper = subprocess.Popen(["sleep", "30"])  # "process 0", alive all along
    try:
        threading.Thread(target=listen_later, daemon=True).start()
        start = time.monotonic()
        # a private name of the sandbox's (one of two reaches): its timing against a
        # listener that comes late is seen only here; a cluster's join hides it
        # (cluster.py is lesson 13's helpers' file this turn: not renamed)
        launcher._wait_for_listener(port, sleeper.pid)
        returned = time.monotonic()
        assert listening_at and returned >= listening_at[0], "returned before anything listened"
        assert returned - start < launcher.LISTEN_WAIT / 2
    finally:
        sleeper.kill()
        sleeper.wait()
        server.close()
    ended = subprocess.Popen(["true"])  # "process 0" that ended before it listened
    start = time.monotonic()
    # the same private name: a process 0 that ended is not waited for
    launcher._wait_for_listener(launcher.free_port(), ended.pid)
    assert time.monotonic() - start < launcher.LISTEN_WAIT / 2
    ended.wait()


def test_with_the_sandbox_off_the_cluster_takes_a_free_port_and_still_forms(tmp_path):
    c = cluster(tmp_path, BATCH + "def global_batch(rows, mesh):\n    return rows\n",
                sandbox=Sandbox(switch="off"))  # fmt: skip
    pids = students(c)
    assert [wire.decode(a["result"]) for a in c.ask(batch_question(c), "running global_batch")] == [{"type": "ndarray"}] * 2  # fmt: skip
    c.stop()
    assert gone(pids)


# ------------------------------------------------------------------ the text's figures


TEXT = Path(__file__).resolve().parent.parent / "course" / "lessons" / "13_multi_host.md"


def allreduce_time(nbytes, hosts, local, ici, dcn, hierarchical):
    """The lesson's model, restated here from the text (not the solution)."""
    n = hosts * local
    if not hierarchical:
        return 2 * (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)
    return 2 * (local - 1) / local * nbytes / ici + 2 * (hosts - 1) / hosts * nbytes / local / dcn


def says(text: str) -> None:
    """The lesson's text states ``text`` (a figure worked out here, in its words)."""
    body = " ".join(TEXT.read_text().split())
    assert text in body, f"the text does not say {text!r}"


def test_the_worked_example_checks_out():
    """16 nodes × 8 H100s, 7 B params in bf16 (14 GB): NVLink 450 GB/s per direction
    within a node, 8×400 Gb/s InfiniBand = 50 GB/s per GPU across."""
    n, ici, dcn = 14e9, 450e9, 50e9
    assert dcn / 1e9 == 8 * 400 / 8 / 8  # 8 ports of 400 Gb/s per node, bits → bytes, per GPU
    says(f"which is {dcn / 1e9:.0f} GB/s per GPU")
    flat = allreduce_time(n, 16, 8, ici, dcn, False)
    hier = allreduce_time(n, 16, 8, ici, dcn, True)
    says(f"2·127/128·14 GB = {2 * 127 / 128 * n / 1e9:.2f} GB | {flat:.3f} s")
    says(f"at 450 GB/s | — | {2 * 7 / 8 * n / ici:.4f} s")
    says(f"| {2 * 15 / 16 * n / 8 / 1e9:.2f} GB | {2 * 15 / 16 * n / 8 / dcn:.4f} s")
    says(f"hierarchical, total | {2 * 15 / 16 * n / 8 / 1e9:.2f} GB | {hier:.4f} s")
    says(f"The hierarchy is {flat / hier:.1f} times faster")
    says(f"NVLink is {ici / dcn:.0f} times faster than InfiniBand")


def test_the_crossover_checks_out():
    """In the bandwidth-only model the hierarchy wins exactly when ici > dcn, for
    every H and L: (L−1)/L ÷ ((HL−1)/(HL) − (H−1)/(HL)) = 1."""
    for h, l_ in [(2, 8), (16, 8), (3, 2), (4, 4)]:
        n = h * l_
        exact = (2 * (l_ - 1) / l_) / (2 * (n - 1) / n - 2 * (h - 1) / h / l_)
        assert math.isclose(exact, 1.0)
        for ratio, wins in ((1.01, True), (0.99, False)):
            faster = allreduce_time(1e9, h, l_, ratio * 1e9, 1e9, True) < allreduce_time(1e9, h, l_, ratio * 1e9, 1e9, False)  # fmt: skip
            assert faster is wins
    says("((HL−1)/(HL) − (H−1)/(HL)) = 1.00, for every H and L")
    says("2(L−1) steps within hosts and 2(H−1) across, against 2(HL−1) for the flat ring")


def test_through_the_engine_a_deadlock_is_a_timeout_that_names_the_processes(root, tmp_path):
    """The grade's own time limit (its alarm) stops a deadlocked call like the
    cluster's: a timeout whose message says which processes returned and whose
    hint names the cause the measurement shows."""
    from grader.results import Status

    solution = (root / "solutions" / f"{MODULE}.py").read_text()
    (tmp_path / f"{MODULE}.py").write_text(solution + DEADLOCK.replace(BATCH, ""))
    start = time.monotonic()
    result = backends.grade_lesson(13, MODULE, tmp_path, only=["global_batch"], timeout=15)
    (er,) = result.exercises
    assert er.status == Status.TIMEOUT, (er.status, er.error)
    assert "process 1 returned from global_batch; process 0 still inside after" in er.error
    assert "a collective not every process reached" in er.error
    assert "jax.process_index()" in er.hint
    assert time.monotonic() - start < 15 + 120  # the clusters' start is the machine's time


RAISES_IN_ONE = (
    BATCH
    + """
from jax.experimental import multihost_utils

def global_batch(rows, mesh):
    if jax.process_index() == 1:
        raise ValueError("process 1 cannot read its shard")
    multihost_utils.sync_global_devices("waits for process 1")  # process 0 waits here
    return rows
"""
)


def test_an_error_in_one_process_is_reported_without_waiting_for_the_others(root, tmp_path):
    from grader.results import Status

    solution = (root / "solutions" / f"{MODULE}.py").read_text()
    (tmp_path / f"{MODULE}.py").write_text(solution + RAISES_IN_ONE.replace(BATCH, ""))
    result = backends.grade_lesson(13, MODULE, tmp_path, only=["global_batch"], timeout=60)
    (er,) = result.exercises
    assert er.status == Status.ERROR, (er.status, er.error)
    assert "process 1 cannot read its shard" in er.error
    assert "(in process 1; process 0 still inside, waiting for it)" in er.error
    assert er.duration < 40, er.duration  # a few seconds' grace, not the 60 s limit


# ------------------------------------------------ multihost_train_step: the "hierarchical" check
# On the programs' collectives as the worker's compile reports them (no cluster needed here):
# a 2×4 mesh, the course model with d=8, f=16, one layer: 256 float32 params, |g| = 1024 bytes.


def _said(params, loss, processes=2):
    """What each process of a 2-process cluster says it returned (``on_process.shards_of``):
    one device each, every leaf whole on it."""

    def leaf(v, i):
        v = np.asarray(v, np.float32)
        return {"type": "Array", "shape": v.shape, "dtype": "float32", "spec": (),
                "shards": [(i, tuple(slice(None) for _ in v.shape), v)], "local_devices": [i],
                "process": i}  # fmt: skip

    return [{"params": {k: leaf(v, i) for k, v in params.items()}, "loss": leaf(loss, i)}
            for i in range(processes)]  # fmt: skip


def _step_trial(collectives, *, mapped=False, output=None, runs=1, said=None):
    from grader.lessons.l13_multi_host import spec
    from grader.measure.hlo import CommSummary
    from grader.reference import training
    from grader.spec import Trial

    ex = {"hosts": 2, "local": 4, "layers": 1, "rows": 2, "d": 8, "f": 16}
    rng = np.random.default_rng(0)
    params = training.draw_params(rng, 1, 8, 16)
    x, y = training.draw_batch(rng, 16, 8)
    comms = CommSummary(list(collectives))
    crossing = [(c, g) for c, g, a in spec.cross_process(comms, (2, 4), 4) if spec.HOST in a]
    fake = Trial(ex, output=output, comms=comms)
    replayed = {"runs": [{"trial": fake, "mapped": mapped, "crossing": crossing}] * runs,
                "calls": runs, "notes": [], "reference": training.sgd_step(params, x, y, 0.1)}  # fmt: skip
    trial = Trial(ex, output=said, expected=replayed["reference"],
                  extra={"replayed": replayed, "params": params, "tol": 1e-5})  # fmt: skip
    return spec.HierarchicalStep()(trial), params, x, y


def _coll(kind, groups, elements_each, operand_elements):
    from grader.measure.hlo import Collective

    size = len(groups.split("},{")[0].strip("{}").split(","))
    return Collective(kind=kind, name=f"{kind}.1", shape="f32[]", operand_bytes=4 * operand_elements,
                      operand_elements=operand_elements, group_size=size, count=1,
                      bytes_each=4 * elements_each, elements_each=elements_each, replica_groups=groups)  # fmt: skip


HIER = [
    _coll("all-reduce", "{{0,1,2,3,4,5,6,7}}", 1, 1),  # the loss, a scalar
    _coll("reduce-scatter", "{{0,1,2,3},{4,5,6,7}}", 192, 256),
    _coll("all-reduce", "{{0,4},{1,5},{2,6},{3,7}}", 64, 64),
    _coll("all-gather", "{{0,1,2,3},{4,5,6,7}}", 192, 64),
]


def test_the_budget_is_the_hierarchical_figure_padded_to_64_per_device_plus_the_loss():
    from grader.lessons.l13_multi_host.spec import grad_budget

    assert grad_budget(2, 4, 256) == 256 + 8  # 2·1/2·1024/4 bytes, the loss's 8
    assert grad_budget(3, 2, 256) == 171 * 4 + 8  # 4/3·128 = 170.7 elements, up to 171
    assert grad_budget(2, 4, 257) == 128 * 4 + 8  # 257 padded to 512 = 2·64·4: parts of 128
    # Horovod pads its fusion buffer to 64·D elements: a 512-byte gradient (128 params) on 2×4
    # sends 2·1/2·256·4/4 = 256 bytes and the loss's 4 = 260 (unpadded: 128 + 8 = 136 allowed
    # before); the flat ring sends 2·7/8·512 = 896
    assert 260 <= grad_budget(2, 4, 128) < 896


def test_the_steps_examples_keep_the_padding_allowance_below_the_nearest_mistakes():
    """On every example the step draws, the whole gradient all-reduced across hosts
    (no scatter) and a flat ring each send well over the allowance; and the explicit
    2×4 example's parameter count is not divisible by D = 4."""
    from grader.lessons.l13_multi_host import spec

    for p, d in spec.CLUSTERS:
        for layers in (1, 2):
            for dd in spec.TRAIN_D:
                for f in spec.TRAIN_F:
                    n = 2 * layers * dd * f
                    allowed = spec.grad_budget(p, d, n) - spec.LOSS_ALLOWANCE
                    assert 2 * (p - 1) / p * 4 * n > 1.9 * allowed, (p, d, n)
                    assert spec.flat_ring(p, d, 4 * n) > 2.2 * allowed, (p, d, n)
    ex = next(e for e in spec.TRAIN_EXPLICIT if e["local"] == 4)
    assert (2 * ex["layers"] * ex["d"] * ex["f"]) % 4 != 0


def test_the_hierarchical_step_passes_on_its_collectives():
    result, *_ = _step_trial(HIER)
    assert result.passed, result.message
    assert "260 bytes per device cross processes" in result.message
    assert "only its collectives" in result.message  # not mapped: said so


def test_a_flat_gradient_all_reduce_fails_naming_it_and_both_figures():
    flat = [_coll("all-reduce", "{{0,1,2,3,4,5,6,7}}", 449, 257)]  # grads and loss, combined
    result, *_ = _step_trial(flat)
    assert not result.passed
    for words in ("flat psum over both axes", "1796 bytes per device", "2(P−1)/P·|g|/D = 256",
                  "2(PD−1)/(PD)·|g| = 1792"):  # fmt: skip
        assert words in result.message, result.message


def test_no_program_on_global_arrays_fails_saying_what_was_measured():
    result, *_ = _step_trial([], runs=0)
    assert not result.passed
    assert "ran no jitted program on global arrays" in result.message
    assert "0 calls" in result.message


def test_collectives_within_processes_only_fail():
    within = [_coll("all-reduce", "{{0,1,2,3},{4,5,6,7}}", 448, 256)]
    result, *_ = _step_trial(within)
    assert not result.passed and "move nothing across processes" in result.message


def test_a_replayed_program_whose_values_are_not_the_step_fails():
    import jax

    from grader.reference import training

    _, params, x, y = _step_trial(HIER)
    want, loss = training.sgd_step(params, x, y, 0.1)
    right = (
        {k: jax.numpy.asarray(v, np.float32) for k, v in want.items()},
        jax.numpy.float32(loss),
    )
    own = _said(want, loss)  # the step's own result, as the processes returned it: right
    result, *_ = _step_trial(HIER, mapped=True, output=right, said=own)
    assert result.passed, result.message
    wrong = ({k: v + 0.01 if k == "w_out" else v for k, v in right[0].items()}, right[1])
    result, *_ = _step_trial(HIER, mapped=True, output=wrong, said=own)
    assert not result.passed
    assert "w_out differs from the single-process step on the same batch" in result.message
    assert "while the step's own result on its batch was right" in result.message
    assert "it is not the step that ran" in result.message


def test_an_honestly_wrong_step_is_not_told_it_is_not_the_step_that_ran():
    """When the step's own result is wrong too (the values check says so), the
    replayed program being wrong measures nothing more: the bytes are judged, and
    "not the step that ran" is never said."""
    import jax

    from grader.reference import training

    _, params, x, y = _step_trial(HIER)
    want, loss = training.sgd_step(params, x, y, 0.1)
    wrong_want = {k: v + 0.01 if k == "w_out" else v for k, v in want.items()}
    replayed = ({k: jax.numpy.asarray(v, np.float32) for k, v in wrong_want.items()},
                jax.numpy.float32(loss))  # fmt: skip
    result, *_ = _step_trial(HIER, mapped=True, output=replayed, said=_said(wrong_want, loss))
    assert result.passed, result.message  # its bytes are hierarchical; its values fail elsewhere
    assert "not the step that ran" not in result.message


FLAT_GRAD = _coll(
    "all-reduce", "{{0,1,2,3,4,5,6,7}}", 448, 256
)  # autodiff's psum of the whole gradient


def test_a_gradient_summed_twice_is_named_and_a_flat_one_is_not():
    """Autodiff's psum over every device (params left invariant) then the student's
    hierarchical all-reduce: the double sum is named, with the pcast; a flat psum
    alone, or the hierarchy alone, never gets those words."""
    twice, *_ = _step_trial([*HIER, FLAT_GRAD])
    assert not twice.passed
    assert "the gradient is summed twice" in twice.message, twice.message
    assert "to='varying'" in (twice.hint or "")
    flat, *_ = _step_trial([HIER[0], FLAT_GRAD])
    assert not flat.passed and "flat psum over both axes" in flat.message
    assert "twice" not in flat.message + (flat.hint or "")
    right, *_ = _step_trial(HIER)
    assert right.passed and "twice" not in right.message


def test_the_p_d_times_update_names_the_double_sum_only_when_the_program_shows_it():
    from grader.lessons.l13_multi_host.spec import _train_hint
    from grader.spec import Trial

    start = {"w": np.array([1.0, 2.0, 3.0])}
    ref = start["w"] - 0.1 * np.array([0.5, -1.0, 2.0])
    summed = start["w"] - 8 * (start["w"] - ref)

    def hint(collectives):
        rep = {"runs": [{"crossing": [(c, g) for c, g, _ in _crossing(collectives)]}]}
        params = {"w": start["w"], "rest": np.zeros(253)}  # 256 elements, as HIER's gradient
        trial = Trial({"hosts": 2, "local": 4}, output=None, extra={"params": params, "replayed": rep})  # fmt: skip
        return _train_hint("w", summed, ref, trial)

    twice = hint([*HIER, FLAT_GRAD])
    assert "sums the gradient twice" in twice and "to='varying'" in twice, twice
    undivided = hint(HIER)  # the hierarchy only: the division is what is missing
    assert "sums the gradient twice" not in undivided and "divides" in undivided, undivided
    assert "to='varying'" not in undivided
    # a flat all-reduce of the whole gradient only: autodiff's or by hand, divided or not
    either = hint([HIER[0], FLAT_GRAD])
    assert "One of these" in either and "not divided by P·D = 8" in either, either
    assert "summed twice" in either and "to='varying'" in either


def _crossing(collectives):
    from grader.lessons.l13_multi_host import spec
    from grader.measure.hlo import CommSummary

    return [(c, g, a) for c, g, a in spec.cross_process(CommSummary(list(collectives)), (2, 4), 4)
            if spec.HOST in a]  # fmt: skip


def test_a_reshape_d_does_not_divide_is_named_and_others_are_not():
    from grader.lessons.l13_multi_host.spec import _reshape_hint

    ex = {"hosts": 2, "local": 4}
    text = ("cannot reshape array of shape (2210,) (size 2210) into shape (4, -1) because the "
            "product of specified axis sizes (4) does not evenly divide 2210")  # fmt: skip
    assert "D = 4 (devices per host) does not divide 2210" in _reshape_hint(text, ex)
    assert _reshape_hint(text.replace("2210", "2048"), ex) is None  # D divides: another cause
    assert _reshape_hint(text.replace("(4, -1)", "(3, -1)"), ex) is None  # not D's parts
    assert _reshape_hint("some other error", ex) is None


MODULE_LEVEL_STEP = """
import functools


@functools.partial(jax.jit, static_argnums=(3, 4))
def _whole_step(params, x, y, mesh, lr):
    local = mesh.shape["local"]

    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        leaves, tree = jax.tree.flatten(g)
        flat = jnp.concatenate([leaf.ravel() for leaf in leaves])
        pad = (-flat.size) % local
        flat = hierarchical_all_reduce(jnp.pad(flat, (0, pad))[:, None], "host", "local")
        flat = flat[: flat.shape[0] - pad, 0] / mesh.size
        parts = jnp.split(flat, np.cumsum([leaf.size for leaf in leaves])[:-1])
        g = jax.tree.unflatten(tree, [q.reshape(leaf.shape) for q, leaf in zip(parts, leaves)])
        return jax.tree.map(lambda w, d: w - lr * d, p, g), lax.pmean(loss, ("host", "local"))

    smap = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))
    return smap(params, x, y)


def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    return _whole_step(params, x, y, mesh, lr)
"""


def test_a_step_jitted_at_module_level_with_static_args_is_measured_and_passes(root, tmp_path):
    """The recorder wraps the module's own jitted functions too, and exports at the
    call's own arguments (the mesh and lr static): the replayed program is mapped."""

    source = (root / "solutions" / f"{MODULE}.py").read_text() + MODULE_LEVEL_STEP
    (tmp_path / f"{MODULE}.py").write_text(source)
    result = backends.grade_lesson(13, MODULE, tmp_path, only=["multihost_train_step"], timeout=60)
    (er,) = result.exercises
    checks = {c.name: c for c in er.checks}
    assert er.status.value == "passed", (er.error, [c.to_dict() for c in er.checks])
    assert "within the" in checks["hierarchical"].message
    assert (
        "only its collectives" not in checks["hierarchical"].message
    )  # inputs mapped: values held


SPLIT_STEP = """
def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    local = mesh.shape["local"]

    def body(p, xr, yr):  # the gradient and the loss only: the update comes after, eagerly
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        leaves, tree = jax.tree.flatten(g)
        flat = jnp.concatenate([leaf.ravel() for leaf in leaves])
        pad = (-flat.size) % local
        flat = hierarchical_all_reduce(jnp.pad(flat, (0, pad))[:, None], "host", "local")
        flat = flat[: flat.shape[0] - pad, 0] / mesh.size
        parts = jnp.split(flat, np.cumsum([leaf.size for leaf in leaves])[:-1])
        g = jax.tree.unflatten(tree, [q.reshape(leaf.shape) for q, leaf in zip(parts, leaves)])
        return g, lax.pmean(loss, ("host", "local"))

    smap = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))
    g, loss = jax.jit(smap)(params, x, y)
    with jax.set_mesh(mesh):
        return jax.tree.map(lambda w, d: w - lr * d, params, g), loss
"""


def test_a_step_split_into_a_jitted_gradient_and_an_eager_update_passes_on_collectives(root, tmp_path):  # fmt: skip
    """Its program takes (params, x, y) and returns (dict, loss), but not the step's
    result: its values are not held to the updated params, only its collectives read."""

    source = (root / "solutions" / f"{MODULE}.py").read_text() + SPLIT_STEP
    (tmp_path / f"{MODULE}.py").write_text(source)
    result = backends.grade_lesson(13, MODULE, tmp_path, only=["multihost_train_step"], timeout=60)
    (er,) = result.exercises
    checks = {c.name: c for c in er.checks}
    assert er.status.value == "passed", (er.error, [c.to_dict() for c in er.checks])
    assert "only its collectives were read" in checks["hierarchical"].message


def test_the_train_steps_hint_names_a_factor_only_when_it_was_measured():
    """The values hint of multihost_train_step says "P·D times" (a sum where the
    mean belongs) or "D times" only when the update is exactly that; any other
    wrong update gets no hint (the message says how far it is)."""
    from grader.lessons.l13_multi_host.spec import _train_hint
    from grader.spec import Trial

    start = {"w": np.array([1.0, 2.0, 3.0])}
    ref = start["w"] - 0.1 * np.array([0.5, -1.0, 2.0])
    trial = Trial({"hosts": 2, "local": 4}, output=None, extra={"params": start})
    update = start["w"] - ref
    summed = _train_hint("w", start["w"] - 8 * update, ref, trial)
    assert summed.startswith("Your update of w is exactly P·D = 8 times"), summed
    assert "D = 4 times" in _train_hint("w", start["w"] - 4 * update, ref, trial)
    assert "1/P = 1/2 of" in _train_hint("w", start["w"] - update / 2, ref, trial)
    assert _train_hint("w", start["w"] + update, ref, trial) is None  # the sign: no factor known
    assert _train_hint("w", start["w"] - 3 * update, ref, trial) is None
    assert "loss is exactly P·D = 8 times" in _train_hint(
        "loss", np.array(8 * 0.7), np.array(0.7), trial
    )
    assert _train_hint("loss", np.array(0.9), np.array(0.7), trial) is None
    # P = D: an update 1/2 of the step's comes of a mean over either axis: both named
    square = Trial({"hosts": 2, "local": 2}, output=None, extra={"params": start})
    half = _train_hint("w", start["w"] - update / 2, ref, square)
    assert "'host' or 'local'" in half, half
    assert "'local'" not in _train_hint("w", start["w"] - update / 2, ref, trial)  # P = 2, D = 4


# ------------------------------------------------ correct public forms pass

NUMPY_INT_SLICES = """
def host_local_slices(global_shape, mesh, spec, process_index):
    # t5x's way: mark the elements this process's devices hold, read each block's bounds
    # with np.nonzero (numpy integers, not Python ints)
    held = np.zeros(global_shape, dtype=bool)
    for device, index in NamedSharding(mesh, spec).devices_indices_map(tuple(global_shape)).items():
        if device.process_index == process_index:
            held[index] = True
    bounds = []
    for dim in range(len(global_shape)):
        where = np.nonzero(held.any(axis=tuple(k for k in range(held.ndim) if k != dim)))[0]
        bounds.append(slice(where[0], where[-1] + 1))
    if not held[tuple(bounds)].all() or held.sum() != held[tuple(bounds)].size:
        raise ValueError("not one block")
    return tuple(bounds)
"""


def test_slices_of_numpy_integers_pass(root, tmp_path):
    """Slices whose bounds are numpy integers (np.nonzero's) travel over the wire as
    whole numbers and pass; before, the decoder refused them and the hint blamed os._exit."""
    assert wire.decode(wire.encode(slice(np.int64(2), np.int32(5)))) == slice(2, 5)
    assert type(wire.decode(wire.encode(slice(np.int64(2), None))).start) is int
    with pytest.raises(wire.WireError):
        wire.decode(wire.encode(slice(np.float32(2), 5)))  # not a whole number: still refused
    source = (root / "solutions" / f"{MODULE}.py").read_text() + NUMPY_INT_SLICES
    (tmp_path / f"{MODULE}.py").write_text(source)
    result = backends.grade_lesson(13, MODULE, tmp_path, only=["host_local_slices"], timeout=60)
    (er,) = result.exercises
    assert er.status.value == "passed", (er.error, [c.to_dict() for c in er.checks])


HOROVOD_STEP = """
def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    local = mesh.shape["local"]

    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        leaves, tree = jax.tree.flatten(g)
        flat = jnp.concatenate([leaf.ravel() for leaf in leaves])
        pad = (-flat.size) % (64 * local)  # Horovod pads its fusion buffer to 64·D elements
        out = hierarchical_all_reduce(jnp.pad(flat, (0, pad)).reshape(local * 64, -1), "host", "local")
        flat = out.reshape(-1)[: flat.size] / mesh.size
        parts = jnp.split(flat, np.cumsum([leaf.size for leaf in leaves])[:-1])
        g = jax.tree.unflatten(tree, [q.reshape(leaf.shape) for q, leaf in zip(parts, leaves)])
        return jax.tree.map(lambda w, d: w - lr * d, p, g), lax.pmean(loss, ("host", "local"))

    step = jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))
    return jax.jit(step)(params, x, y)
"""


def test_a_step_padded_as_horovod_pads_passes(root, tmp_path):
    """Padding the flat gradient to a multiple of 64·D elements (a constant) is
    within the bound; the bytes it sends are more than the unpadded optimum."""
    source = (root / "solutions" / f"{MODULE}.py").read_text() + HOROVOD_STEP
    (tmp_path / f"{MODULE}.py").write_text(source)
    result = backends.grade_lesson(13, MODULE, tmp_path, only=["multihost_train_step"], timeout=60)
    (er,) = result.exercises
    assert er.status.value == "passed", (er.error, [c.to_dict() for c in er.checks])


def test_the_texts_padding_example_checks_out():
    """Section 'What the grader checks': the step's allowance on 2×4 for n = 2210
    params, worked out here from the formulas (and the grader's own budget)."""
    from grader.lessons.l13_multi_host.spec import grad_budget

    n, p, d = 2210, 2, 4
    part, padded = math.ceil(n / d), math.ceil(n / (64 * d)) * 64
    says(f"⌈{n}/{d}⌉ = {part} elements and 2·½·{part}·4 = {2 * (p - 1) / p * part * 4:.0f} bytes")
    says(
        f"⌈{n}/{64 * d}⌉·64 = {padded} elements, 2·½·{padded}·4 + 8 = {grad_budget(p, d, n)} bytes"
    )
    says(f"sends {4 * n}, a flat `psum` over both axes 2·7/8·{4 * n} = {2 * 7 / 8 * 4 * n:.0f}")
    assert n % d and n == 2 * 17 * 65  # the explicit 2×4 example's count


def test_the_values_hints_of_the_all_reduce_name_only_what_was_measured():
    """An untiled all-gather (the sum, stacked as D parts) and a mean where the sum
    belongs are named; other shapes and other values get no hint."""
    from grader.lessons.l13_multi_host.spec import _shape_hint, _sum_hint
    from grader.spec import Trial

    trial = Trial({"hosts": 3, "local": 2}, output=None, extra={"host_sums": None})
    want = np.arange(24.0).reshape(6, 4)
    assert "tiled=True" in _shape_hint(want.reshape(2, 3, 4), want, trial)
    assert _shape_hint(want.reshape(3, 2, 4), want, trial) is None  # P parts, not D's
    assert _shape_hint(want[:3], want, trial) is None
    assert "divided by P = 3" in _sum_hint(want / 3, want, trial, 0)
    assert "divided by D = 2" in _sum_hint(want / 2, want, trial, 0)
    assert _sum_hint(want + 1, want, trial, 0) is None
    # P = D (the cluster a 4-device grade falls back to): a mean over either axis gives
    # the same values, so both are named, and the mean over every device apart
    square = Trial({"hosts": 2, "local": 2}, output=None, extra={"host_sums": None})
    both = _sum_hint(want / 2, want, square, 0)
    assert "divided by P = D = 2" in both and "host_axis" in both and "local_axis" in both, both
    every = _sum_hint(want / 4, want, square, 0)
    assert "P·D = 4" in every and "host_axis" not in every, every


def test_the_loaders_messages_name_the_stride_and_the_modulo_only_when_measured():
    from grader.lessons.l13_multi_host.spec import _loader_message

    p, b, step, size = 2, 8, 7, 50
    want = (step * b + np.arange(b)) % size

    def message(rows):
        return _loader_message(np.split(np.asarray(rows), p), want, p, b, "call", step, size)

    assert "past the dataset's 50" in message(step * b + np.arange(b))
    assert "moves on by the global batch" in message((step * b // p + np.arange(b)) % size)
    other = message((want + 1) % size)
    assert "past the dataset" not in other and "moves on" not in other
    assert "past the dataset" not in _loader_message(
        np.split(np.arange(8), 2), np.arange(8) % 64, 2, 8, "call", 0, 64
    )


def test_a_loader_taking_every_p_th_row_is_told_its_rows_are_strided():
    """The rows of the batch, strided over the processes (PyTorch's DistributedSampler's
    split) where contiguous blocks belong, are said strided; rows in another order no
    rearrangement of the battery gives get no hint (both ways)."""
    from grader.lessons.l13_multi_host.spec import _rearranged

    want = np.arange(16, 28)
    strided = [want[i::3] for i in range(3)]
    hint = _rearranged(strided, want, 3)
    assert hint is not None and "strided where the blocks are contiguous" in hint, hint
    assert "over 3 processes, process d holds elements d, d + 3, d + 6" in hint, hint
    assert _rearranged([want[[1, 0, 2, 3]], want[4:8], want[8:]], want, 3) is None
    assert _rearranged(np.split(want, 3), want, 3) is None  # right: nothing to say


def test_a_loader_returning_the_right_rows_as_floats_is_told_so():
    """Rows that are the right ones in float (a true division on the way) are told so;
    floats that are other rows, or a 2-D answer, get no such hint (both ways)."""
    from grader.lessons.l13_multi_host.spec import _float_rows_hint

    want = np.arange(16, 28)
    floats = [want[i * 4 : (i + 1) * 4].astype(float) for i in range(3)]
    hint = _float_rows_hint(floats, want, 3, 12)
    assert hint is not None and hint.startswith(
        "Every process's rows are the right ones, but as floats (float64)"
    ), hint
    assert _float_rows_hint([f + 1 for f in floats], want, 3, 12) is None
    assert _float_rows_hint([f[None] for f in floats], want, 3, 12) is None


@pytest.mark.parametrize(
    "mistake,old,new",
    [
        (  # the double sum's hint: cast the params to varying before jax.grad
            "l13-train-params-never-varying",
            "jax.value_and_grad(tinymodels.loss)(p, xr, yr)",
            'jax.value_and_grad(tinymodels.loss)(lax.pcast(p, ("host", "local"), to="varying"), xr, yr)',
        ),
        (  # the unreduced loss's hint: return lax.pmean(loss, ('host', 'local'))
            "l13-train-loss-not-reduced",
            "return new, loss",
            'return new, lax.pmean(loss, ("host", "local"))',
        ),
    ],
)
def test_a_fix_hint_applied_to_its_mistake_passes(root, tmp_path, mistake, old, new):
    """Issue 37, item 1: a hint never proposes a change that leaves the code wrong."""
    from tests.mistakes import MISTAKES

    m = next(x for x in MISTAKES if x.id == mistake)
    source = m.source((root / "solutions" / f"{MODULE}.py").read_text())
    assert source.count(old) == 1
    (tmp_path / f"{MODULE}.py").write_text(source.replace(old, new))
    result = backends.grade_lesson(13, MODULE, tmp_path, only=[m.exercise], timeout=60)
    (er,) = result.exercises
    assert er.status.value == "passed", (er.error, [c.to_dict() for c in er.checks])


class _FakeClient:
    """The coordination service's key-value store for two processes, the other
    process's hash given (``theirs``: None = the same as this one's)."""

    def __init__(self, theirs=None):
        self.store, self.sets, self.theirs = {}, 0, theirs

    def key_value_set(self, key, value):
        self.sets += 1
        self.store[key] = value
        other = key.rsplit("/", 1)[0] + "/1"
        self.store[other] = value if self.theirs is None else self.theirs

    def blocking_key_value_get(self, key, timeout_in_ms):
        return self.store[key]


def test_programs_are_compared_across_processes_once_and_a_difference_raises(monkeypatch):
    """Each process hashes the program it traced; a hash not every process's raises
    before anything runs; a program found alike is not compared again (a repeated
    call sends nothing between processes, where lesson 13 measures the step's bytes)."""
    import jax
    from jax._src import distributed

    monkeypatch.setattr(jax, "process_count", lambda: 2)
    monkeypatch.setattr(on_process, "_AGREED", set())
    fn = jax.jit(lambda x: x * 2 + 1)
    args = (jax.numpy.ones(3),)
    same = _FakeClient()
    monkeypatch.setattr(distributed.global_state, "client", same)
    on_process._agree(fn, args, {}, "k/1/1")
    on_process._agree(fn, args, {}, "k/1/2")
    assert same.sets == 1, "compared again"
    other = _FakeClient(theirs="another program's hash")
    monkeypatch.setattr(distributed.global_state, "client", other)
    with pytest.raises(on_process.DivergentPrograms, match="traced different programs"):
        on_process._agree(jax.jit(lambda x: x * 3), args, {}, "k/2/1")


# ------------------------------------------------- measured between processes (issue 39)


def _trial_with(collectives, traffic):
    from grader.lessons.l13_multi_host import spec
    from grader.measure.hlo import CommSummary
    from grader.reference import training
    from grader.spec import Trial

    ex = {"hosts": 2, "local": 4, "layers": 1, "rows": 2, "d": 8, "f": 16}
    params = training.draw_params(np.random.default_rng(0), 1, 8, 16)
    comms = CommSummary(list(collectives))
    crossing = [(c, g) for c, g, a in spec.cross_process(comms, (2, 4), 4) if spec.HOST in a]
    runs = [{"trial": Trial(ex, comms=comms), "mapped": False, "crossing": crossing}]
    replayed = {"runs": runs, "calls": 1, "notes": [], "reference": None}
    trial = Trial(ex, extra={"replayed": replayed, "params": params, "traffic": traffic})
    return spec.MeasuredStep()(trial)


def test_the_measured_step_holds_the_call_to_its_programs_and_to_the_gradients_bytes():
    """Figures measured on the solution and on a flat psum hidden behind a decoy
    (P = 2, D = 4, |g| = 1 KiB, second call): 7100 bytes between processes, its
    program alone 7100; 22524 with a decoy's 2368 shown."""
    from grader.lessons.l13_multi_host import spec

    ok = _trial_with(HIER, {"crossing": 7100, "shown": [7100]})
    assert ok.passed, ok.message
    hidden = _trial_with(HIER, {"crossing": 22524, "shown": [2368]})
    assert not hidden.passed
    assert "20156 bytes crossed by other means" in hidden.message
    within = _trial_with(HIER, {"crossing": 2368 + spec.exchange_margin(2), "shown": [2368]})
    assert within.passed  # the margin itself: honest calls vary by a heartbeat
    beyond = _trial_with(HIER, {"crossing": 2369 + spec.exchange_margin(2), "shown": [2368]})
    assert not beyond.passed
    # a 4-byte psum beside rows exchanged another way carries nothing of the gradient
    tiny = _trial_with([_coll("all-reduce", "{{0,1,2,3,4,5,6,7}}", 1, 1)], {"crossing": 444, "shown": [444]})  # fmt: skip
    assert not tiny.passed
    assert "the gradient is not reduced across processes in them" in tiny.message
    off = _trial_with(HIER, None)
    assert off.passed and "not measured" in off.message


def test_traffic_counts_bytes_between_two_processes_not_within_one_and_keeps_what_no_socket_shows():
    from grader.sandbox.traffic import SLACK_BYTES, Snapshot, crossing

    def sock(inode, sport, dport, received):  # bytes counted where they arrive
        return {"inode": inode, "sport": sport, "dport": dport, "sent": 0, "received": received, "family": 2}  # fmt: skip

    before = Snapshot({1: sock(1, 100, 200, 10), 2: sock(2, 200, 100, 0)}, 0, 0)
    after = Snapshot(
        {1: sock(1, 100, 200, 1010), 2: sock(2, 200, 100, 500),  # process 0 ↔ process 1
         3: sock(3, 300, 301, 700), 4: sock(4, 301, 300, 0),  # both ends in process 1
         5: sock(5, 400, 401, 900), 6: sock(6, 401, 400, 0)},  # another cluster's
        0, 0,
    )  # fmt: skip
    holder = {1: 0, 2: 1, 3: 1, 4: 1}
    packets = 20
    lo = 1000 + 500 + 700 + 900 + 66 * packets
    t = crossing(before, Snapshot(after.sockets, lo, packets), holder)
    assert (t.crossing, t.within, t.unaccounted) == (1500, 700, 0)
    # 5000 bytes more on the loopback than any socket still open shows: a closed one's
    t = crossing(before, Snapshot(after.sockets, lo + 5000 + 66 * 4, packets + 4), holder)
    # counted as crossing, less what header sizes (IPv4 or IPv6: 20 bytes a packet) may hide
    assert t.unaccounted == 5000 - 20 * 24 - SLACK_BYTES and t.crossing == 1500 + t.unaccounted


DECOY_STEP = """

def _flat_step(params, x, y, mesh, lr):
    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        g = jax.tree.map(lambda v: lax.psum(v, ("host", "local")) / mesh.size, g)
        return jax.tree.map(lambda w, d: w - lr * d, p, g), lax.pmean(loss, ("host", "local"))

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P()))(params, x, y)


_STEPS = {"flat": jax.jit(_flat_step, static_argnums=(3, 4))}  # made at import


def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    out = _STEPS["flat"](params, x, y, mesh, lr)
    n = sum(v.size for v in params.values())
    n += (-n) % mesh.shape["local"]
    zeros = jax.device_put(jnp.zeros((mesh.size * n, 1)), NamedSharding(mesh, ROWS))
    jax.jit(jax.shard_map(lambda v: hierarchical_all_reduce(v, "host", "local"), mesh=mesh,
                          in_specs=ROWS, out_specs=P()))(zeros)  # a decoy the size of the gradient
    return out
"""

GATHERED_STEP = """

def multihost_train_step(params, local_x, local_y, mesh, lr):
    from jax.experimental import multihost_utils

    x = np.asarray(multihost_utils.process_allgather(local_x, tiled=True))  # every process's rows
    y = np.asarray(multihost_utils.process_allgather(local_y, tiled=True))
    p = {k: jnp.asarray(v) for k, v in params.items()}
    loss, g = jax.value_and_grad(tinymodels.loss)(p, x, y)
    rep = NamedSharding(mesh, P())
    put = lambda v: jax.make_array_from_process_local_data(rep, np.asarray(v))
    return {k: put(w - lr * d) for (k, w), d in zip(p.items(), g.values())}, put(loss)
"""

GATHERED_BATCH = """

def global_batch(local_rows, mesh):
    from jax.experimental import multihost_utils

    everything = np.asarray(multihost_utils.process_allgather(local_rows, tiled=True))
    return jax.make_array_from_callback(everything.shape, NamedSharding(mesh, ROWS),
                                        lambda index: everything[index])
"""

FILES_STEP = """

def multihost_train_step(params, local_x, local_y, mesh, lr):  # rows through /tmp, a 4-byte psum
    i, n = jax.process_index(), jax.process_count()
    np.save(f"/tmp/rows_{i}.npy", np.concatenate([local_x, local_y], axis=1))
    ones = jax.make_array_from_process_local_data(
        NamedSharding(mesh, ROWS), np.ones((mesh.shape["local"], 1), np.float32))
    jax.block_until_ready(jax.jit(jax.shard_map(lambda v: lax.psum(v, ("host", "local")),
                                                mesh=mesh, in_specs=ROWS, out_specs=P()))(ones))
    rows = np.concatenate([np.load(f"/tmp/rows_{q}.npy") for q in range(n)])
    p = {k: jnp.asarray(v) for k, v in params.items()}
    d = local_x.shape[1]
    loss, g = jax.value_and_grad(tinymodels.loss)(p, rows[:, :d], rows[:, d:])
    rep = NamedSharding(mesh, P())
    put = lambda v: jax.make_array_from_process_local_data(rep, np.asarray(v))
    return {k: put(w - lr * dd) for (k, w), dd in zip(p.items(), g.values())}, put(loss)
"""

CACHED_STEP = """
import functools


@functools.lru_cache(maxsize=None)
def _step_for(mesh, lr):  # made once per mesh, reused by every later call
    local = mesh.shape["local"]

    def body(p, xr, yr):
        pv = lax.pcast(p, ("host", "local"), to="varying")
        loss, g = jax.value_and_grad(tinymodels.loss)(pv, xr, yr)
        leaves, tree = jax.tree.flatten(g)
        flat = jnp.concatenate([leaf.ravel() for leaf in leaves])
        pad = (-flat.size) % local
        flat = hierarchical_all_reduce(jnp.pad(flat, (0, pad))[:, None], "host", "local")
        flat = flat[: flat.shape[0] - pad, 0] / mesh.size
        parts = jnp.split(flat, np.cumsum([leaf.size for leaf in leaves])[:-1])
        g = jax.tree.unflatten(tree, [q.reshape(leaf.shape) for q, leaf in zip(parts, leaves)])
        return jax.tree.map(lambda w, d: w - lr * d, p, g), lax.pmean(loss, ("host", "local"))

    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), ROWS, ROWS), out_specs=(P(), P())))


def multihost_train_step(params, local_x, local_y, mesh, lr):
    rows = NamedSharding(mesh, ROWS)
    x = jax.make_array_from_process_local_data(rows, local_x)
    y = jax.make_array_from_process_local_data(rows, local_y)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    return _step_for(mesh, lr)(params, x, y)
"""


def _graded(root, tmp_path, extra: str, exercise: str):
    source = (root / "solutions" / f"{MODULE}.py").read_text() + extra
    (tmp_path / f"{MODULE}.py").write_text(source)
    result = backends.grade_lesson(13, MODULE, tmp_path, only=[exercise], timeout=60)
    (er,) = result.exercises
    return er, {c.name: c for c in er.checks}


needs_sandbox = pytest.mark.skipif(not jail.on(SANDBOX), reason="measured on the cluster's own network: the sandbox")  # fmt: skip


@needs_sandbox
@pytest.mark.parametrize("extra", [DECOY_STEP, GATHERED_STEP], ids=["decoy", "process_allgather"])
def test_bytes_crossing_by_other_means_than_the_steps_programs_fail_the_step(root, tmp_path, extra):
    """A flat psum in a jitted function made at import, beside a hierarchical decoy
    on zeros the gradient's size (measured 22524 bytes between processes, 2368 from
    the decoy run alone); every process's rows gathered (8704 bytes, no program)."""
    er, checks = _graded(root, tmp_path, extra, "multihost_train_step")
    assert er.status.value == "failed", (er.error, [c.to_dict() for c in er.checks])
    assert not checks["measured"].passed
    assert "crossed by other means" in checks["measured"].message
    assert "measured on the cluster's network" in checks["measured"].message


@needs_sandbox
def test_rows_gathered_with_process_allgather_fail_global_batch(root, tmp_path):
    er, checks = _graded(root, tmp_path, GATHERED_BATCH, "global_batch")
    assert er.status.value == "failed", (er.error, [c.to_dict() for c in er.checks])
    assert checks["placement"].passed  # the array itself is right: only the bytes tell
    assert not checks["rows stay"].passed
    assert "rows were sent to other processes" in checks["rows stay"].message


@needs_sandbox
def test_rows_exchanged_through_tmp_do_not_reach_the_other_processes(root, tmp_path):
    """Each process has a /tmp of its own: process 0 does not find process 1's file."""
    er, _ = _graded(root, tmp_path, FILES_STEP, "multihost_train_step")
    assert er.status.value == "error", (er.error, [c.to_dict() for c in er.checks])
    assert "FileNotFoundError" in str(er.error) and "rows_1.npy" in str(er.error)


def test_a_jitted_step_made_once_and_reused_is_recorded_and_measured_and_passes(root, tmp_path):
    er, checks = _graded(root, tmp_path, CACHED_STEP, "multihost_train_step")
    assert er.status.value == "passed", (er.error, [c.to_dict() for c in er.checks])
    assert "within the" in checks["hierarchical"].message
    if jail.on(SANDBOX):
        assert "what its program(s) move run alone" in checks["measured"].message


APART = (
    BATCH
    + """
import errno, pathlib, time

def global_batch(rows, mesh):
    i = jax.process_index()
    for folder in ("/tmp", "/dev/shm"):
        pathlib.Path(folder, f"mine-{i}").write_text("rows")
    try:
        pathlib.Path(__file__).with_name(f"mine-{i}").write_text("rows")
        folder = "writable"
    except OSError as exc:
        folder = errno.errorcode[exc.errno]
    import socket
    try:
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).bind("\\0rows")
        unix = "open"
    except OSError as exc:
        unix = errno.errorcode[exc.errno]
    time.sleep(0.5)  # the other process has written its files by now
    seen = sorted(p.name for f in ("/tmp", "/dev/shm") for p in pathlib.Path(f).glob("mine-*"))
    print(f"process {i} sees {seen}, its folder {folder}, a Unix socket {unix}", flush=True)
    return rows
"""
)


@needs_sandbox
def test_a_clusters_processes_share_no_writable_folder(tmp_path, capfd):
    """Each has a /tmp and a /dev/shm of its own; the submission's folder is read-only;
    no Unix socket (an abstract one is shared by the network namespace, and no
    counter sees what it carries)."""
    c = cluster(tmp_path, APART)
    try:
        c.join()
        c.ask(batch_question(c), "running global_batch")
        out, deadline = "", time.monotonic() + 60  # the lines come through the launcher's
        while out.count(" sees ") < 2 and time.monotonic() < deadline:  # forwarding threads
            time.sleep(0.05)
            out += capfd.readouterr().out
    finally:
        c.stop()
    for i in range(2):
        assert (
            f"process {i} sees ['mine-{i}', 'mine-{i}'], its folder EROFS, a Unix socket EPERM"
            in out
        ), out
    assert not list(tmp_path.glob("mine-*"))


# ------------------------------------------------- issue 34: readers and channels


def test_a_program_is_fingerprinted_through_the_bindings_constants_left_out():
    """Two processes that close over their own rows (constants) trace one program;
    another operation, or a collective over other axes, is another program."""
    import jax
    from jax import lax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    def fp(f, *args):
        return on_process.fingerprint(jax.jit(f).lower(*args).compiler_ir("stablehlo"))

    x = jax.numpy.ones(3)
    mine = fp(lambda v: v + np.arange(3.0), x)
    assert fp(lambda v: v + 2 * np.arange(3.0), x) == mine  # only the constant's values differ
    assert fp(lambda v: v - np.arange(3.0), x) != mine  # another operation
    mesh = jax.make_mesh((2, 4), ("h", "l"))
    y = jax.device_put(jax.numpy.ones(8), NamedSharding(mesh, P(("h", "l"))))

    def summed(axes):
        return jax.shard_map(lambda v: lax.psum(v, axes), mesh=mesh, in_specs=P(("h", "l")),
                             out_specs=P(("h", "l")))  # fmt: skip

    assert fp(summed("l"), y) != fp(summed(("h", "l")), y)  # the same op over other groups


def _fake_cluster(lines: list[bytes], limit: int | None = None):
    """A two-process cluster whose processes' answers are ``lines`` (process i's
    bytes, written before the grader asks), not started: its channels only."""
    from grader.sandbox.channel import Channel
    from grader.sandbox.cluster import Cluster

    cluster = Cluster(".", "m", 2, 1)
    channels = []
    for data in lines:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        os.write(from_w, data)
        os.close(from_w)
        os.close(to_r)  # its questions go nowhere: an answer is read, not asked
        channels.append(Channel(os.fdopen(to_w, "wb"), from_r, limit or cluster.answer_limit))
    cluster._channels = channels  # private: the channels a started cluster would hold
    return cluster


def test_a_cluster_reads_its_answers_through_channels_with_their_limits_and_words():
    """The cluster's answers come through :class:`Channel` (one class for every
    line-framed conversation): whole answers gathered from each process, an answer
    longer than the limit, a line that is no answer and a process that ended
    each stop the cluster with the words they had before."""
    from grader.faults import StudentProcessDied

    ok = _fake_cluster([b'{"seq":1,"ok":1}\n', b'{"seq":1,"ok":2}\n'])
    assert [a["ok"] for a in ok._gather(1, "running x", 5.0)] == [1, 2]
    long = _fake_cluster([b'{"seq":1,"ok":1}\n', b"x" * 100], limit=50)
    with pytest.raises(
        StudentProcessDied, match="process 1 sent an answer larger than the grader takes"
    ):
        long._gather(1, "running x", 5.0)
    assert long._channels == []  # stopped
    other = _fake_cluster([b"hello\n", b'{"seq":1,"ok":2}\n'])
    with pytest.raises(StudentProcessDied, match="process 0 wrote on the grader's channel something that is not the grader's answer while running x"):  # fmt: skip
        other._gather(1, "running x", 5.0)
    stale = _fake_cluster([b'{"seq":1,"ok":1}\n{"seq":7}\n', b'{"seq":1,"ok":2}\n'])
    with pytest.raises(
        StudentProcessDied, match="not the grader's answer"
    ):  # a second line in one read is read too
        stale._gather(1, "running x", 5.0)
    ended = _fake_cluster([b'{"seq":1,"ok":1}\n', b""])
    with pytest.raises(
        StudentProcessDied, match=r"process 1 ended while running x \(process 0 had answered\)"
    ):
        ended._gather(1, "running x", 5.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sock_diag: Linux")
def test_one_reader_reads_the_counters_afresh_each_time_it_is_asked():
    """:class:`traffic.Reader` serves every snapshot of a grade from one process:
    each answer is the counters at that moment (1000 bytes sent on a loopback
    connection between two snapshots show on its receiving socket), and closing
    it ends that process."""
    import socket

    from grader.sandbox import traffic

    reader = traffic.Reader(os.getpid())  # our own namespaces: none to enter
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    conn, _ = server.accept()
    try:
        inode = os.fstat(conn.fileno()).st_ino
        before = reader.snapshot()
        proc = reader._proc  # private: the one reader process, asked again below
        client.sendall(b"x" * 1000)
        assert conn.recv(1000, socket.MSG_WAITALL) == b"x" * 1000
        after = reader.snapshot()
        assert reader._proc is proc
        assert after.sockets[inode]["received"] - before.sockets[inode]["received"] == 1000
    finally:
        for s in (conn, client, server):
            s.close()
        reader.close()
    assert proc.poll() is not None


def test_the_step_checks_values_once_and_the_hierarchy_reuses_their_verdicts(monkeypatch):
    """``_own_values_right`` reads the verdicts the values checks gave the trial
    (kept once computed), instead of measuring them again."""
    from grader.lessons.l13_multi_host import spec
    from grader.results import CheckResult
    from grader.spec import Trial

    calls = []

    def measured(passed):
        def measure(self, trial):
            calls.append(type(self).__name__)
            return CheckResult(self.name, passed, "m")

        return measure

    monkeypatch.setattr(spec.SameEverywhere, "_measure", measured(True))
    monkeypatch.setattr(spec.StepValues, "_measure", measured(False))
    trial = Trial({"hosts": 2, "local": 4})
    assert spec.SameEverywhere()(trial).passed and not spec.StepValues()(trial).passed
    assert not spec._own_values_right(trial)
    assert calls == ["SameEverywhere", "StepValues"]  # not again


def test_only_jaxs_own_device_put_check_of_the_graders_params_is_skipped(monkeypatch):
    """``_unchecked``: jax's device_put check (known by the words jax asks it to say,
    from a frame of jax's own) does nothing for a value equal to the params the
    grader sent every process; other values, and the same call made from the
    student's module, are checked as jax checks them."""
    from jax.experimental import multihost_utils

    checked = []
    monkeypatch.setattr(multihost_utils, "assert_equal", lambda v, fail_message="": checked.append(np.asarray(v).sum()))  # fmt: skip
    said = f"<class 'numpy.ndarray'> {on_process.DEVICE_PUT_DIFFERS}. Make sure …"
    code = "def put(v, said):\n    from jax.experimental import multihost_utils\n    multihost_utils.assert_equal(v, fail_message=said)\n"  # fmt: skip
    jaxs, students = {"__name__": "jax._src.dispatch"}, {"__name__": "multihost_train_step"}
    exec(code, jaxs)
    exec(code, students)
    params = np.arange(4.0)
    with on_process._unchecked([params]):
        jaxs["put"](params.copy(), said)  # the grader's params, put by jax: skipped
        jaxs["put"](params + 1, said)  # a process's own rows: checked
        jaxs["put"](params.copy(), "another check of jax's")  # not device_put's: checked
        students["put"](params.copy(), said)  # the student's own call: checked
    assert checked == [10.0, 6.0, 6.0]
    assert multihost_utils.assert_equal.__name__ == "<lambda>"  # undone after


@needs_sandbox
def test_the_graders_own_clusters_start_once_the_students_have_joined(tmp_path):
    """A lesson whose tasks include one measured alone (``replay``) has the grader's
    own clusters started when its first exercise forms the student's (they join
    while the student's work), not when the step first needs them; a lesson
    without one starts none."""
    from types import SimpleNamespace

    (tmp_path / f"{MODULE}.py").write_text(BATCH)
    measuring = SimpleNamespace(cluster=lambda ex: ((2, 1),), tasks=(on_process.slices,))
    plain = SimpleNamespace(cluster=lambda ex: ((2, 1),), tasks=(wire.encode,))
    for spec, started in ((measuring, True), (plain, False)):
        pool = ClusterPool(str(tmp_path), MODULE)
        try:
            pool.form(spec, {})
            twins = pool._twins.pool._clusters if pool._twins else {}  # private: the pool's twins
            assert ((2, 1) in twins and twins[(2, 1)].proc is not None) is started
        finally:
            pool.close()


def test_a_loader_message_s_rule_is_its_hint_and_a_measurement_alone_gives_none():
    """The rule a loader's message states after what it measured is the check's hint
    (a step that moves on by B/P is told the global batch); a message that only measures
    (two processes loading one row, the rows in another order) gives no hint."""
    from grader.lessons.l13_multi_host.spec import _loader_message, _loader_rule

    want = np.arange(45, 60)  # step 3 of a batch of 15 over 3 processes
    parts = [np.arange(15, 20), np.arange(20, 25), np.arange(25, 30)]  # moved on by B/P
    message = _loader_message(parts, want, 3, 15, "loader_indices(…)", 3, 1000)
    assert _loader_rule(message) == (
        "Each step moves on by the global batch, B = 15 rows, so process i starts at s·B + i·B/P."
    )
    overlap = [np.arange(45, 50), np.arange(48, 53), np.arange(55, 60)]
    assert _loader_rule(_loader_message(overlap, want, 3, 15, "loader_indices(…)", 3, 1000)) is None
    order = [want[10:], want[5:10], want[:5]]
    assert _loader_rule(_loader_message(order, want, 3, 15, "loader_indices(…)", 3, 1000)) is None


def test_a_factor_of_the_update_is_read_to_the_params_float32_rounding():
    """The update read as start − returned params (float32) is known to a few of the params'
    ulps: twice the step's update is named P = 2 times though its rounding is above 1e-3 of
    the update; a wrong update is not; an update lost in the rounding names no factor (both
    ways)."""
    from grader.lessons.l13_multi_host import spec as l13
    from grader.spec import Trial

    rng = np.random.default_rng(13)
    start = rng.normal(size=(64,)).astype(np.float32) * 8
    update = (rng.normal(size=(64,)) * 2e-3).astype(np.float64)
    ref = (start - update).astype(np.float32)
    trial = Trial({"hosts": 2, "local": 4}, extra={"params": {"w_in": start}})
    twice = (start - 2 * update).astype(np.float32)
    said = l13._train_hint("w_in", twice, ref, trial)
    assert said and "exactly P = 2 times the single-process step's" in said, said
    assert l13._train_hint("w_in", (start - 2.5 * update).astype(np.float32), ref, trial) is None
    tiny = (start - update * 1e-4).astype(np.float32)
    assert l13._train_hint("w_in", (start - update * 2e-4).astype(np.float32), tiny, trial) is None
