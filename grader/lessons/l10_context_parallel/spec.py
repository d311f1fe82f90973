"""Grading spec for lesson 10: context parallelism (ring attention).

``q, k, v: [S, H, Dh]`` are split by rows over a 1-D mesh ``('seq',)``. The
grader checks every device's shard of the output against softmax attention
computed in numpy float64 (:mod:`grader.lessons.l10_context_parallel.attention`), that the output is
sharded like q, that the compiled program holds collective-permutes only, that
they carry N − 1 rotations of the local K and V blocks — exactly
(N − 1)·|local K + local V| bytes, counted at the item size the traced
program's ``ppermute`` sends (XLA:CPU widens bfloat16 in transit) — and that
temporary memory stays below the global |K| + |V|. The zigzag bonus gets the
inputs in zigzag order (device i: chunks i and 2N − 1 − i of 2N) and must
compute half a score block per step (read from the traced program).

Tolerances (float inputs, unit normal; the reference sees the inputs as the
program does, bfloat16-rounded where the example is bfloat16):

- float32: ``SAFETY·u·√(S + Dh)·max|ref|`` (u = 2⁻²⁴, SAFETY = 16 as in
  :mod:`grader.reference.training`: a length-S softmax sum after a length-Dh product).
  Measured (``python benchmarks/ring_attention.py``: six shapes, N = 3–8,
  both rings, causal and not): off by 1.4–8.1 u·max|ref| against an
  allowance of ≥ 72 u; bfloat16 scores inside are off by ≈ 3·10⁴ u
  (370–450 times the allowance, two shapes).
- bfloat16: ``BF16_ALLOWANCE·max|ref|`` = 2⁻⁴·max|ref|: rounding the output
  alone costs 2⁻⁹ relative. Measured: the reference (bfloat16 blocks sent,
  scores and softmax sums in float32) is off by 0.0015–0.0030·max|ref|; a
  ring that keeps the scores, o and lse in bfloat16 by 0.005–0.026 — inside
  the allowance, so the values alone cannot fail it: the ``precision`` check
  (:class:`~grader.lessons.l10_context_parallel.checks.SoftmaxPrecision`) reads
  the program's dtypes and requires the scores, the running max and sum (or
  lse) and the output accumulator in float32. Logic mistakes are off by O(1)
  and fail in the float32 examples.

Memory is checked in float32 at N ≥ 6 with S/N ≤ Dh, where a correct ring's
scratch (a few blocks and [H, S/N, S/N] scores) stays below the global
|K| + |V| = 2·S·H·Dh·4 bytes; figures at :data:`MEMORY_MIN_BLOCK`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import (
    Bytes,
    InputsUntouched,
    LargestTransfer,
    OnlyCollectives,
    OutputSharding,
    TempMemory,
    Values,
    relate,
    vma,
)
from grader.checks.comms import PERMUTE, streams
from grader.checks.hinted import Hinted
from grader.checks.program import precision_hint
from grader.evidence import RingSteps
from grader.later import later
from grader.lessons.l10_context_parallel import attention
from grader.lessons.l10_context_parallel.checks import (
    MergeValues,
    RotationSteps,
    ScoreBlocks,
    SoftmaxPrecision,
    kv_block_elements,
    ring_steps,
)
from grader.reference.training import SAFETY, U32
from grader.results import CheckResult
from grader.runtime import Runtime
from grader.spec import (
    FAST_COMPILE,
    Check,
    Context,
    Example,
    ExerciseSpec,
    LessonSpec,
    Run,
    Trial,
    format_example,
)

MODULE = "l10_context_parallel"
AXIS = "seq"
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}
FLOAT32 = 4
BF16_ALLOWANCE = 2.0**-4
"""bfloat16 allowance as a fraction of max|ref| (measured figures in the module docstring)."""
LSE_RANGE = 300.0
"""merge_partials draws lse in [−300, 300]: e^lse overflows float32 above ≈ 88.7."""
MEMORY_MIN_N = 6
MEMORY_MIN_BLOCK = 64
"""Memory is checked at N ≥ 6, S/N ≤ Dh, ≥ 64 elements per K block. Measured (float32,
temp / global |K| + |V|, ``python benchmarks/ring_attention.py``): on the 10 shapes
checked, reference ring 0.49–0.75, zigzag 0.49–0.79, all-gather of K and V 1.50–1.52,
every block collected with permutes 1.44–1.58. Blocks of 32 elements: zigzag up to
1.13. At N = 4 the
reference ring needs 0.73–1.09 (1.75 at one block of 16 elements): its own buffers (the
K/V it holds and receives, o and lse, the scores) are about nine blocks, and the whole
K and V only eight."""


# ------------------------------------------------------------------ examples


def _ring_sizes(ctx: Context) -> list[int]:
    """N ≥ 3, where a ring turning the wrong way shows under the causal mask."""
    return [n for n in ctx.mesh_sizes if n >= 3] or [max(ctx.mesh_sizes)]


def _merge_strategy(ctx: Context):
    return st.fixed_dictionaries(
        {
            "s": st.integers(4, 12),
            "h": st.integers(1, 3),
            "dh": st.sampled_from([4, 8]),
            "seed": st.integers(0, 2**16),
        }
    )


def ring_strategy(ctx: Context):
    return st.fixed_dictionaries(
        {
            "n": st.sampled_from(_ring_sizes(ctx)),
            "rows": st.sampled_from([2, 4, 8]),  # S/N
            "h": st.integers(1, 3),
            "dh": st.sampled_from([8, 16]),
            "mask": st.sampled_from(["causal", "none"]),
            "dtype": st.sampled_from(["float32", "bfloat16"]),
            "seed": st.integers(0, 2**16),
        }
    )


def zigzag_strategy(ctx: Context):
    return st.fixed_dictionaries(
        {
            "n": st.sampled_from(_ring_sizes(ctx)),
            "chunk": st.sampled_from([1, 2, 4]),  # S/2N; Dh = 16 differs from S/N and S/2N
            "h": st.integers(1, 2),
            "dh": st.just(16),
            "dtype": st.sampled_from(["float32", "bfloat16"]),
            "seed": st.integers(0, 2**16),
        }
    )


def _first(sizes: tuple[int, ...], ctx: Context) -> int:
    """The first of ``sizes`` this run has devices for (else the largest mesh it has)."""
    return next((n for n in sizes if n in ctx.mesh_sizes), max(ctx.mesh_sizes))


def merge_explicit(ctx: Context) -> list[Example]:
    return [{"s": 8, "h": 2, "dh": 4, "seed": 0}]


def ring_explicit(ctx: Context) -> list[Example]:
    """Causal float32 at N = 6 with S/N ≤ Dh (the memory check measures there),
    then no mask in bfloat16 at N = 3."""
    a, b = _first((6, 8, 4), ctx), _first((3,), ctx)
    return [
        {"n": a, "rows": 4, "h": 2, "dh": 8, "mask": "causal", "dtype": "float32", "seed": 0},
        {"n": b, "rows": 4, "h": 2, "dh": 8, "mask": "none", "dtype": "bfloat16", "seed": 1},
    ]


def zigzag_explicit(ctx: Context) -> list[Example]:
    """Float32 at N = 6 (memory is measured there), bfloat16 at N = 3."""
    a, b = _first((6, 8, 4), ctx), _first((3,), ctx)
    return [
        {"n": a, "chunk": 2, "h": 2, "dh": 16, "dtype": "float32", "seed": 0},
        {"n": b, "chunk": 1, "h": 1, "dh": 16, "dtype": "bfloat16", "seed": 1},
    ]


def rows_per_device(ex: Example) -> int:
    """S/N: rows per device."""
    return ex["rows"] if "rows" in ex else 2 * ex["chunk"]


def causal_of(ex: Example) -> bool:
    return ex.get("mask", "causal") == "causal"


def qkv(ex: Example, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """q, k, v [S, H, Dh], unit normal, in the example's dtype."""
    shape = (ex["n"] * rows_per_device(ex), ex["h"], ex["dh"])
    dtype = np.dtype("float32") if ex["dtype"] == "float32" else _bf16()
    return tuple(rng.standard_normal(shape).astype(np.float32).astype(dtype) for _ in range(3))


def _bf16() -> Any:
    import jax.numpy as jnp

    return jnp.dtype("bfloat16")


# ------------------------------------------------------------------ running


def _run_ring(zigzag: bool) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        mesh = rt.mesh((ex["n"],), (AXIS,))
        q, k, v = qkv(ex, rt.rng())
        s = q.shape[0]
        order = attention.zigzag_order(s, ex["n"]) if zigzag else np.arange(s)
        rows = NamedSharding(mesh, P(AXIS, None, None))
        args = tuple(jax.device_put(a[order], rows) for a in (q, k, v))
        tail = () if zigzag else (causal_of(ex),)
        jitted = jax.jit(lambda a, b, c: fn(a, b, c, mesh, *tail))
        trial = rt.compile_and_run(
            jitted, args, mesh, inputs=(q, k, v),
            order=order, dtype=ex["dtype"], sharding=rows, zigzag=zigzag,
            block_elements=rows_per_device(ex) * ex["h"] * ex["dh"],
        )  # fmt: skip
        trial.expected = later(_expected, q, k, v, causal_of(ex), order)  # in the worker only
        return trial

    return run


def _expected(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, order: np.ndarray) -> Any:
    """The float64 attention, its rows in the order the devices hold them."""
    return attention.attention(q, k, v, causal)[order]


def merge_inputs(ex: Example, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Two partials (o, lse) over disjoint key sets, float32.

    lse is drawn in [−300, 300]; half the pairs within ±3 of each other (both
    weights matter), the others anywhere. Row 0 has lse1 = −inf, row 1
    lse2 = −inf, row 2 both (a row that has seen no key yet); o = 0 there."""
    s, h, dh = ex["s"], ex["h"], ex["dh"]
    lse1 = rng.uniform(-LSE_RANGE, LSE_RANGE, (s, h))
    near = rng.random((s, h)) < 0.5
    lse2 = np.where(near, lse1 + rng.uniform(-3, 3, (s, h)), rng.uniform(-300, 300, (s, h)))
    lse1[[0, 2]] = -np.inf
    lse2[[1, 2]] = -np.inf
    o1, o2 = (rng.standard_normal((s, h, dh)) for _ in range(2))
    o1[np.isneginf(lse1)] = 0.0
    o2[np.isneginf(lse2)] = 0.0
    return tuple(a.astype(np.float32) for a in (o1, lse1, o2, lse2))


def _merged(o1: np.ndarray, lse1: np.ndarray, o2: np.ndarray, lse2: np.ndarray) -> Any:
    """The float64 merge of the partials (o1, lse1) and (o2, lse2): the reference, by the
    exercise's own argument names (which a failing check's changes of them say)."""
    return attention.merge((o1, lse1), (o2, lse2))


def _run_merge(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax

    inputs = merge_inputs(ex, rt.rng())
    trial = rt.compile_and_run(jax.jit(fn), tuple(jax.numpy.asarray(a) for a in inputs), None)
    o1, lse1, o2, lse2 = (a.astype(np.float64) for a in inputs)
    trial.expected = later(_merged, o1, lse1, o2, lse2)  # in the worker only
    trial.extra.update(lse=(lse1, lse2), o=(o1, o2))
    return trial


# ------------------------------------------------------------------ diagnoses


def _simulate(
    trial: Trial,
    held: Callable[[int, int], int],
    v_held: Callable[[int, int], int] | None = None,
    mask_block: Callable[[int, int], int] | None = None,
    local_mask: bool = False,
    summed: bool = False,
    strict: bool = False,
    blocks: int | None = None,
) -> np.ndarray:
    """A ring with a known mistake, in float64, in the layout the devices hold.

    ``strict``: the causal mask is q > k (the diagonal masked); ``blocks``: only
    the first so many of the N blocks held are attended to."""
    ex = trial.example
    q, k, v = (a.astype(np.float64) for a in trial.extra["inputs"])
    n, b, causal = ex["n"], rows_per_device(ex), causal_of(ex)

    def blk(a: np.ndarray, j: int) -> np.ndarray:
        return a[j * b : (j + 1) * b]

    out = []
    for i in range(n):
        acc = None
        for s in range(n if blocks is None else blocks):
            j = held(i, s)
            mask = None
            if causal:
                jm = mask_block(i, s) if mask_block else j
                rows = np.arange(b) + (0 if local_mask else i * b)
                cols = np.arange(b) + (0 if local_mask else jm * b)
                mask = attention.causal_mask(rows, cols)
                if strict:
                    mask &= rows[:, None] != cols[None, :]
            part = attention.partial(
                blk(q, i), blk(k, j), blk(v, v_held(i, s) if v_held else j), mask
            )
            if acc is None:
                acc = part
            elif summed:
                acc = (acc[0] + part[0], acc[1])
            else:
                acc = attention.merge(acc, part)
        out.append(acc[0])
    return np.concatenate(out)


def _alternatives(trial: Trial) -> list[tuple[str, Callable[[tuple, tuple], np.ndarray]]]:
    """Known wrong rings, in the direction the compiled permutes turn."""
    if trial.extra["zigzag"]:
        return _zigzag_alternatives(trial)
    n = trial.example["n"]
    shift = _shift(trial)

    def held(i: int, s: int) -> int:  # after s sends of `shift`
        return (i - s * shift) % n

    cases = [
        (
            "Each block's softmax is normalised over its own keys and the blocks' outputs are "
            "added up: the sum of N softmaxes is not the softmax over all keys. Keep each "
            "block's log-sum-exp and combine the partials with merge_partials, which weights "
            "each by e^(lse_block − lse_total).",
            dict(summed=True),
        ),
        (
            "Every step multiplies the new block's softmax weights by your own V block: V "
            "does not travel with K, or it travels and the V that arrived is never read (XLA "
            "then drops its send). Rotate V with K (separately, or stacked), and attend with "
            "the V that arrived with the K.",
            dict(v_held=lambda i, s: i),
        ),
    ]
    if n >= 2 and shift in (1, -1):
        cases.append((
            f"Only N − 1 = {n - 1} of the N K/V blocks are attended to: your result is exactly "
            "that of a ring that never merges the block arriving with the last rotation (the "
            f"block of device {'i + 1' if shift == 1 else 'i − 1'} when sending to "
            f"{'i + 1' if shift == 1 else 'i − 1'}). After the N − 1 attend-and-send "
            "steps, attend once more to the block you then hold, without sending it on.",
            dict(blocks=n - 1),
        ))  # fmt: skip
    if causal_of(trial.example):
        cases.append((
            "Your causal mask is strict (query position > key position): each query is kept "
            "from its own key, so the diagonal of every score matrix is masked (and the first "
            "query sees no key at all). A query sees the keys at its own position and before: "
            "q_pos >= k_pos.",
            dict(strict=True),
        ))  # fmt: skip
        cases.append((
            "Your causal mask compares r ≥ c inside each block (local row numbers, or global "
            "positions with one block index for both sides), as if every block were the "
            "diagonal one: the mask must compare global positions — "
            "query i·S/N + r against key j·S/N + c, where j is the device the K/V block you "
            "hold started on.",
            dict(local_mask=True),
        ))  # fmt: skip
        if n >= 3 and shift in (1, -1):
            towards, holds, assumed = (
                ("i + 1", "i − s", "i + s") if shift == 1 else ("i − 1", "i + s", "i − s")
            )
            cases.append((
                f"Your blocks travel to {towards}, so after s steps device i holds the K/V "
                f"block of device ({holds}) mod N — but your mask takes it as block "
                f"({assumed}) mod N, the block coming the other way round the ring. Flip the "
                "ring's direction or the index.",
                dict(mask_block=lambda i, s: (i + s * shift) % n),
            ))  # fmt: skip
    out = []
    for why, kw in cases:
        wrong = _simulate(trial, held, **kw)
        out.append((why, lambda coord, index, wrong=wrong: wrong[index]))
    if not causal_of(trial.example):  # a mask applied whatever `causal` says
        q, k, v = (a.astype(np.float64) for a in trial.extra["inputs"])
        masked = attention.attention(q, k, v, True)[trial.extra["order"]]
        out.append((
            "This example has causal=False, and your result is the causal one: the mask is "
            "applied whatever the flag says. Build it only when causal is True.",
            lambda coord, index: masked[index],
        ))  # fmt: skip
    return out


def _simulate_zigzag(
    trial: Trial,
    earlier: Callable[[int, int], bool] = lambda j, i: j < i,
    strict: bool = False,
    skipped: Callable[[int], int] | None = None,
) -> np.ndarray:
    """Zigzag ring attention in float64, in the layout the devices hold, where the
    K/V block of device j ≠ i gets the j < i treatment (both query chunks, key chunk
    j) when ``earlier(j, i)`` and the j > i one (second query chunk, both key
    chunks) otherwise. ``strict``: the diagonal block's mask is q > k;
    ``skipped(i)``: the block device i never attends to."""
    ex = trial.example
    q, k, v = (a.astype(np.float64) for a in trial.extra["inputs"])
    n, c = ex["n"], ex["chunk"]

    def positions(i: int) -> np.ndarray:
        return np.concatenate([i * c + np.arange(c), (2 * n - 1 - i) * c + np.arange(c)])

    out = []
    for i in range(n):
        pos = positions(i)
        mask = attention.causal_mask(pos, pos)
        if strict:
            mask &= pos[:, None] != pos[None, :]
        halves = [
            attention.partial(q[pos[h]], k[pos], v[pos], mask[h])
            for h in (slice(0, c), slice(c, 2 * c))
        ]
        for j in range(n):
            if j == i or (skipped is not None and j == skipped(i)):
                continue
            keys = positions(j)
            if earlier(j, i):
                halves = [
                    attention.merge(
                        part, attention.partial(q[pos[h]], k[keys[:c]], v[keys[:c]], None)
                    )
                    for part, h in zip(halves, (slice(0, c), slice(c, 2 * c)))
                ]
            else:
                halves[1] = attention.merge(
                    halves[1], attention.partial(q[pos[c:]], k[keys], v[keys], None)
                )
        out.append(np.concatenate([halves[0][0], halves[1][0]]))
    return np.concatenate(out)


def _zigzag_alternatives(trial: Trial) -> list[tuple[str, Callable[[tuple, tuple], np.ndarray]]]:
    if trial.example["n"] < 2:
        return []
    n, shift = trial.example["n"], _shift(trial)
    reversed_ = _simulate_zigzag(trial, lambda j, i: j > i)
    strict = _simulate_zigzag(trial, strict=True)
    out = [
        (
            "Your result is exactly that of a zigzag ring whose diagonal block is masked "
            "strictly (query position > key position): each query is kept from its own key "
            "(and position 0 sees none). A query sees the keys at its own position and "
            "before: pos[:, None] >= pos[None, :].",
            lambda coord, index: strict[index],
        )
    ]
    if n >= 3 and shift in (1, -1):  # at N = 2 the last block is the only one after the diagonal
        last = _simulate_zigzag(trial, skipped=lambda i: (i + shift) % n)
        towards = "i + 1" if shift == 1 else "i − 1"
        out.append((
            f"Your result is exactly that of a zigzag ring that never attends to the last "
            f"block: the one arriving with rotation N − 1 (device {towards}'s, sending to "
            f"{towards}). After the diagonal block, each of the N − 1 rotations brings a "
            "block to attend to: loop over all N − 1 of them.",
            lambda coord, index: last[index],
        ))  # fmt: skip
    return out + [
        (
            "Your result is exactly that of a zigzag ring with the two cases swapped: against "
            "the K/V block of device j > i you attend with both query chunks to key chunk j, "
            "and for j < i with your second query chunk to both key chunks (a cond on j > i, "
            "or its branches exchanged). It is the other way round: for j < i both query "
            "chunks see key chunk j whole (chunk 2N − 1 − j is in their future); for j > i only "
            "query chunk 2N − 1 − i sees keys, both chunks of the block.",
            lambda coord, index: reversed_[index],
        )
    ]


def _shift(trial: Trial) -> int:
    """The ring's direction from the compiled permutes: +1 sends to i + 1, −1 to i − 1
    (+1 when they do not all turn one way)."""
    per = streams(trial)
    return next(iter(per)) if len(per) == 1 else 1


def _attended(trial: Trial) -> list[relate.Attended]:
    """The key blocks each device's query rows may attend to (:func:`relate.attended`):
    the ring's N blocks of S/N rows, or the zigzag's 2N chunks, each query chunk its own
    group; a block on the diagonal with the causal mask, one in the rows' future 0 times."""
    ex, zigzag = trial.example, trial.extra["zigzag"]
    q, k, v = (a.astype(np.float64) for a in trial.extra["inputs"])
    order, n, b = trial.extra["order"], ex["n"], rows_per_device(ex)
    causal = causal_of(ex)
    size = ex["chunk"] if zigzag else b  # rows of one key block
    blocks = 2 * n if zigzag else n

    def groups(coord: tuple) -> list[relate.KeyGroup]:
        i = coord[0]
        rows = order[i * b : (i + 1) * b]
        own = [(slice(0, size), i), (slice(size, b), 2 * n - 1 - i)] if zigzag else [
            (slice(0, b), i)]  # fmt: skip
        out = []
        for sl, mine in own:
            pos = rows[sl]
            keys, right = {}, {}
            for j in range(blocks):
                kpos = np.arange(j * size, (j + 1) * size)
                mask = attention.causal_mask(pos, kpos) if causal and j == mine else None
                keys[j] = (k[kpos], v[kpos], mask)
                right[j] = 1 if not causal or j <= mine else 0
            out.append(relate.KeyGroup(sl, q[pos], keys, right,
                                       f"query chunk {mine}" if zigzag else ""))  # fmt: skip
        return out

    return [relate.Attended(groups, "key chunk" if zigzag else "K/V block",
                            "is in these rows' future")]  # fmt: skip


def _precision_hint(trial: Trial, result: CheckResult) -> str | None:
    dtypes = trial.program.dtypes
    if hint := precision_hint(trial, "Keep q, k, v, the scores and the softmax sums in float32."):
        return hint
    if trial.example["dtype"] == "bfloat16" and not dtypes["float32"]:
        return (
            "Your program keeps everything in bfloat16: the scores, the softmax sums and the "
            "running (o, lse) drift by about 1e-2 over the ring. Send K and V in bfloat16, but "
            "compute the scores with preferred_element_type=jnp.float32 and keep o and lse in "
            "float32 (as flash attention does); cast the result back at the end."
        )
    return None


def _merged_hint(trial: Trial, result: CheckResult) -> str | None:
    """Where the generic "only devices … are wrong" is all the values check measured, and
    the wrong devices are exactly those whose query block merges two or more key blocks'
    partial results (a causal plain ring: device d sees blocks 0 … d, device 0 its own
    alone): what only those devices do, said as the two places it lives."""
    from grader.checks.values import as_numpy

    ex = trial.example
    if (
        trial.extra.get("zigzag")
        or not causal_of(ex)
        or not (result.hint or "").startswith("Only device(s)")
    ):
        return None
    n, b = ex["n"], rows_per_device(ex)
    got = as_numpy(trial.output).astype(np.float64)
    want = np.asarray(trial.expected, np.float64)
    tol = _atol(trial)
    right = [bool(np.allclose(got[d * b : (d + 1) * b], want[d * b : (d + 1) * b], rtol=0,
                              atol=tol)) for d in range(n)]  # fmt: skip
    if not right[0] or any(right[1:]):
        return None
    return (
        f"Only device 0's rows are right, and every other device's are wrong (all {n - 1}). "
        "Under the causal mask device 0's query block sees its own key block alone, so "
        "nothing is merged there; device d > 0 sees d + 1 blocks and merges their partial "
        "(o, lse). So your code parts from the reference in what only the merging devices "
        "do: the merge (merge_partials: weights e^(lse_b − lse), lse = log(Σ e^lse_b)), the "
        "lse each block returns (lse = m + log Σ e^(s − m), its row max m added back), or "
        "the blocks that arrive from other devices (their positions under the mask)."
    )


def _atol(trial: Trial) -> float:
    ex = trial.example
    if ex["dtype"] == "bfloat16":
        return BF16_ALLOWANCE
    return SAFETY * U32 * float(np.sqrt(ex["n"] * rows_per_device(ex) + ex["dh"]))


def _sent_itemsize(trial: Trial) -> int:
    """Item size the traced program's ppermutes send (the widest), else the example's."""
    sizes = [
        ITEMSIZE.get(d, FLOAT32)
        for site in trial.program.collectives
        if site.primitive == "ppermute"
        for d in site.dtypes
    ]
    return max(sizes, default=ITEMSIZE[trial.example["dtype"]])


def _kv_bytes(trial: Trial) -> int:
    """|local K + local V| in the example's dtype."""
    return kv_block_elements(trial) * ITEMSIZE[trial.example["dtype"]]


def _global_kv_bytes(trial: Trial) -> int:
    return trial.example["n"] * 2 * trial.extra["block_elements"] * FLOAT32


def unrolled(trial: Trial) -> bool:
    """The ring has no loop in the compiled program: more collective-permute instructions than
    one rotation's K and V (2), each run once, where a loop has one or two run N − 1 times.
    Memory is checked at N ≥ 4 only, so an unrolled ring there has at least 3 of them."""
    permutes = [c for c in trial.comms.collectives if c.kind == PERMUTE and c.moves_data]
    return len(permutes) > 2 and all(c.count == 1 for c in permutes)


def _memory_hint(trial: Trial) -> str:
    """Whole K and V held: collected by a transfer larger than one block, kept as they came,
    or a ring unrolled by a Python loop (XLA then keeps every received block; the same body
    under lax.fori_loop holds one)."""
    block = kv_block_elements(trial)
    if trial.comms.largest(itemsize=1) <= block and unrolled(trial):
        return (
            "The compiled program holds a buffer as large as the whole K and V, and your ring "
            "is unrolled: no loop in it, one collective-permute per step (a Python for-loop "
            "copies its body N − 1 times). Unrolled, XLA schedules every rotation at once and "
            "keeps each received block alive, even where your code drops it; the same body "
            "under lax.fori_loop(0, N − 1, …) holds one block at a time. If your loop also "
            "collects the blocks, attend to each as it arrives instead."
        )
    if trial.comms.largest(itemsize=1) > block:
        how = (
            "you collected every block before attending: one transfer carries more than one "
            "K/V block"
        )
    else:
        how = (
            "every transfer carries one K/V block, so the blocks were kept as they arrived "
            "(e.g. collected into one array) instead of being attended to and dropped"
        )
    return (
        f"The compiled program holds a buffer as large as the whole K and V: {how}. Attend to "
        "each block as it arrives and keep only the running (o, lse) and the block you hold."
    )


def memory_skip(trial: Trial) -> str | None:
    ex = trial.example
    if ex["dtype"] != "float32":
        return "checked in float32 only (XLA:CPU widens bfloat16 transfers, adding buffers)"
    if ex["n"] < MEMORY_MIN_N:
        return (
            f"checked at N ≥ {MEMORY_MIN_N}: below, a correct ring's own buffers (about nine "
            "blocks) are of the order of the whole K and V"
        )
    if rows_per_device(ex) > ex["dh"] or trial.extra["block_elements"] < MEMORY_MIN_BLOCK:
        return (
            f"checked where S/N ≤ Dh and a K block holds ≥ {MEMORY_MIN_BLOCK} elements (else "
            "the score block or fixed buffers outweigh K and V)"
        )
    return None


def _bytes_hint(trial: Trial, result: CheckResult) -> str | None:
    sent, own = _sent_itemsize(trial), ITEMSIZE[trial.example["dtype"]]
    if sent > own:
        return (
            f"Your ppermutes send {sent}-byte items in a {trial.example['dtype']} example: you "
            "upcast K and V before sending them. Send them as they are and upcast after receiving."
        )
    return None


def _diagnose_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    found = vma.read(exc)
    carry = next((c for c in found.carries if "seq" in c.gained), None) if found else None
    if carry is not None:
        return (
            f"The loop carry {carry.path} starts invariant over 'seq' (built from constants, "
            "jnp.zeros/jnp.full, it is the same on every device), but the step makes it "
            "varying: lax.pcast its initial value to varying (lax.pcast(x, 'seq', "
            "to='varying')), as for the initial o and lse."
        )
    return None


# ------------------------------------------------------------------ checks


ONLY_PERMUTES = OnlyCollectives(
    frozenset({PERMUTE}),
    why="Ring attention passes the K/V blocks with lax.ppermute only; queries stay put.",
    advice=lambda kind, t: {
        "all-gather": "lax.all_gather collects the whole K and V on every device: memory then "
        "grows with the whole sequence, which is what context parallelism avoids. Pass one "
        "K/V block at a time with lax.ppermute, attend to it, merge, and pass it on.",
        "all-reduce": "A psum combines whole per-device results: each device's queries need "
        "every key, so pass the K/V blocks round the ring instead.",
        "all-to-all": "all_to_all re-splits the arrays by heads (Ulysses-style attention): this "
        "exercise keeps the sequence split and passes K/V blocks with lax.ppermute.",
    }.get(kind),
)


def _chunks(trial: Trial) -> dict[int, list[tuple[int, str, str]]]:
    """The output's rows in the lesson's own blocks: zigzag's 2N query chunks of S/2N
    rows (device i: chunks i and 2N − 1 − i), the plain ring's N query blocks of S/N."""
    s, n = np.shape(trial.expected)[0], trial.example["n"]
    if trial.extra.get("zigzag"):
        return {0: [(s // (2 * n), "one query chunk", "query chunks")]} if s % (2 * n) == 0 else {}
    return {0: [(s // n, "one device's query block", "query blocks")]} if s % n == 0 else {}


def _ring_checks(zigzag: bool) -> tuple[Check, ...]:
    checks: list[Check] = [
        Hinted(
            Values(atol=_atol, alternatives=_alternatives, families=_attended, units=_chunks),
            lambda t, r: _precision_hint(t, r) or _merged_hint(t, r),
        ),  # fmt: skip
        SoftmaxPrecision(),
        OutputSharding(expected=lambda t: t.extra["sharding"]),
        InputsUntouched(),
        ONLY_PERMUTES,
        RotationSteps(),
    ]
    if zigzag:
        checks.append(ScoreBlocks())
    checks += [
        Hinted(
            LargestTransfer(
                bound=_kv_bytes,
                what="one local K block + one local V block",
                itemsize=_sent_itemsize,
                hint="Send the local K and V blocks only (stacked or one each) per ppermute: a "
                "larger transfer means blocks were concatenated before passing them on.",
            ),
            _bytes_hint,
        ),
        Hinted(
            Bytes(
                expected=lambda t: (t.example["n"] - 1) * _kv_bytes(t),
                unit=_kv_bytes,
                kinds=frozenset({PERMUTE}),
                itemsize=_sent_itemsize,
                what="(N − 1)·|local K + local V|",
            ),
            _bytes_hint,
        ),
        TempMemory(
            bound=_global_kv_bytes,
            skip=memory_skip,
            what=lambda t: "the global |K| + |V| = 2·S·H·Dh·4 = 2·{}·{}·{}·4".format(
                t.example["n"] * rows_per_device(t.example), t.example["h"], t.example["dh"]
            ),
            hint=_memory_hint,
        ),
    ]
    return tuple(checks)


def _explain(trials: list[Trial]) -> list[RingSteps]:
    """The ring picture: which K/V block each device holds at each step, and how much of it
    the causal mask leaves (from the direction and amount of the compiled permutes)."""
    trial = next((t for t in trials if 3 <= t.example["n"] <= 6), trials[-1])
    ex, zigzag = trial.example, trial.extra["zigzag"]
    steps = (trial.comms.bytes(PERMUTE, itemsize=1) or 0) // kv_block_elements(trial)
    note = "Derived from the direction and amount of the collective-permutes in your program" + (
        "." if steps else ": none carries a K/V block, so each device only holds its own."
    )
    causal = zigzag or causal_of(ex)
    return [ring_steps(ex["n"], steps, _shift(trial), causal, zigzag, format_example(ex), note)]


def _merge_purpose(ex: Example) -> str | None:
    """What merge_partials' fixed example holds (issue 45 §1)."""
    return (
        f"S = {ex['s']}, H = {ex['h']}, lse in [−300, 300] where e^lse overflows float32: row 0 "
        "saw no key in partial 1, row 1 none in partial 2, row 2 none in either"
    )


def _ring_purpose(zigzag: bool) -> Callable[[Example], str | None]:
    """What each fixed example of ring_explicit / zigzag_explicit holds (issue 45 §1); N
    is the example's own, as the grading context left it."""

    def purpose(ex: Example) -> str | None:
        n, s = ex["n"], ex["n"] * rows_per_device(ex)
        if ex["dtype"] == "bfloat16":
            if zigzag:
                seen = f"causal, chunks of {ex['chunk']} row" + "s" * (ex["chunk"] > 1)
            else:
                seen = "causal" if causal_of(ex) else f"no mask (every row sees all {s} keys)"
            return (
                f"bfloat16, N = {n}, S = {s}, {seen}: the scores, running max and sum, and the "
                "output accumulator stay in float32"
            )
        memory = n >= MEMORY_MIN_N  # where the memory check measures
        if zigzag:
            return (
                f"float32, N = {n}, S = {s}, device i holding chunks i and 2N − 1 − i: each step "
                "but the diagonal computes half a score block"
                + ("; scratch stays below |K| + |V|" if memory else "")
            )
        return (
            f"float32, causal, N = {n}, S = {s}: a row sees only keys at or before it, so "
            "blocks from later devices add nothing"
            + ("; scratch stays below the global |K| + |V|" if memory else "")
        )

    return purpose


def _ring_exercise(name: str, zigzag: bool) -> ExerciseSpec:
    return ExerciseSpec(
        name=name,
        strategy=zigzag_strategy if zigzag else ring_strategy,
        explicit=zigzag_explicit if zigzag else ring_explicit,
        run=_run_ring(zigzag),
        checks=_ring_checks(zigzag),
        max_examples=1,
        diagnose_error=_diagnose_error,
        explain=_explain,
        purpose=_ring_purpose(zigzag),
    )


MERGE = ExerciseSpec(
    name="merge_partials",
    strategy=_merge_strategy,
    explicit=merge_explicit,
    run=_run_merge,
    checks=(MergeValues(),),
    max_examples=2,
    purpose=_merge_purpose,
)

SPEC = LessonSpec(
    exercises=(
        MERGE,
        _ring_exercise("ring_attention", zigzag=False),
        _ring_exercise("zigzag_ring_attention", zigzag=True),
    ),
    compiler_options=FAST_COMPILE,
)
