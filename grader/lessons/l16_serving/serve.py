"""Lesson 16's sharded half: ``prefill`` and ``decode_step`` of the tiny language model
(:mod:`grader.lessons.l16_serving.model`) on a ``('data', 'model')`` mesh.

Params Megatron-split over 'model' (wq, wk, wv and w_in by columns, wo and w_out by
rows), the embeddings replicated; the KV cache ``[L, 2, B, S, H, Dh]`` sharded
``P(None, None, 'data', None, 'model', None)``: 1/(data·model) of it per device.

Held against: the logits, against the float64 reference that recomputes the whole
sequence (tolerance 2e-5·max|ref|: the reference solution is within 2e-7 of it, a
bfloat16 cache 1e-3 off), and the greedy token wherever the reference's top two logits
are further apart than that; the cache's values (prefill: positions < T against the
reference's keys and values), shape, dtype and sharding; the collectives: only
all-reduces over 'model', exactly 2·L per program (one after attention's wo, one after
the MLP's w_out: the tiny model's two row-parallel matmuls per layer), none over
'data', and none carrying a layer's keys or values; for ``decode_step`` also that the
cache it returns is aliased to the donated one (``alias`` ≥ the device's cache bytes in
the memory analysis) and that a step writes into it only the new token's keys and values
(the compiled program's writes of a buffer of the cache's size, :class:`Donated`).

``decode_step`` is graded from the reference's own cache after the prompt, then its
own cache step after step (3 steps, each fed the reference's greedy token: teacher
forcing, so one wrong step does not hide the next): graded apart from ``prefill``.
Examples: 2×2, 2×3 and 3×2 (3 and 6 devices), 1×4, 4×2, 1×1; two or three layers;
the cache longer than prompt + steps, so an empty slot past the new position exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import relate, variants
from grader.checks.groups import grouped, show_groups, spanned_axes
from grader.evidence import Table
from grader.later import in_worker, later
from grader.lessons.l16_serving import model
from grader.results import CheckResult
from grader.runtime import Runtime, StudentReturnError
from grader.spec import Check, Context, Example, ExerciseSpec, Trial

DATA, MODEL = "data", "model"
D, DH, VOCAB, F_PER = 16, 4, 32, 8
STEPS = 3
ATOL = 2e-5


def _near(got: np.ndarray, want: np.ndarray) -> bool:
    """``got`` within ATOL of ``want``'s largest finite magnitude everywhere, an infinite
    element matched only by itself (:func:`grader.checks.values.within`: an infinite bound
    would match anything)."""
    from grader.checks.values import within

    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return False
    scale = float(np.abs(want[np.isfinite(want)]).max(initial=0.0))
    return bool(np.all(within(got, want, ATOL * scale, 0.0) | (np.isnan(got) & np.isnan(want))))


"""Logits within ATOL·max|reference| (module docstring)."""
CACHE_SPEC = (None, None, DATA, None, MODEL, None)
CACHE_GQA = (None, None, (DATA, MODEL), None, None, None)
LAYOUT = {
    "embed": (), "pos": (), "unembed": (),
    "wq": (None, None, MODEL), "wk": (None, None, MODEL), "wv": (None, None, MODEL),
    "wo": (None, MODEL, None), "w_in": (None, None, MODEL), "w_out": (None, MODEL, None),
}  # fmt: skip
LAYOUT_GQA = {**LAYOUT, "wk": (), "wv": ()}
"""With K < model key/value heads: wk and wv replicated (they are small)."""


def _cache_shape_hint(got: tuple[int, ...], s: Sizes) -> str:
    """The layout, and where axis 3 (the positions) is the prompt's length: room for the
    prompt alone."""
    want = s.cache_shape
    said = ("Keep the layout [L, 2, B, S, K, Dh]: K and V stacked on axis 1, the cache's "
            "full length S on axis 3.")  # fmt: skip
    if (len(got) == len(want) and got[3] == s.prompt != want[3]
            and got[:3] == want[:3] and got[4:] == want[4:]):  # fmt: skip
        said = (f"Axis 3 of your cache is {got[3]}, the prompt's length T, where its full "
                f"length S = {want[3]} belongs: the cache holds a slot for every position a "
                "decode step will write, not the prompt's alone (the slots after the prompt "
                "stay zeros until then). " + said)  # fmt: skip
    return said


@dataclass(frozen=True)
class Sizes:
    data: int
    model: int
    layers: int
    batch: int
    heads: int
    prompt: int
    slots: int
    kv_heads: int = 0
    """Key/value heads (0: as many as query heads); fewer than 'model' devices in
    ``decode_step_gqa``, whose cache is split by batch over both axes."""

    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads

    @property
    def gqa(self) -> bool:
        return self.kv < self.heads

    @property
    def cache_shape(self) -> tuple[int, ...]:
        return (self.layers, 2, self.batch, self.slots, self.kv, DH)

    @property
    def cache_bytes(self) -> int:
        return int(np.prod(self.cache_shape)) * 4

    @property
    def device_cache_bytes(self) -> int:
        return self.cache_bytes // (self.data * self.model)

    @property
    def layer_kv_elements(self) -> int:
        """One layer's keys (or values) on one device: [B/data, S, H/model, Dh], or
        [B/(data·model), S, K, Dh] when split by batch."""
        return self.device_cache_bytes // (4 * 2 * self.layers)

    @property
    def cache_spec(self) -> tuple:
        return CACHE_GQA if self.gqa else CACHE_SPEC

    @property
    def layout(self) -> dict[str, tuple]:
        return LAYOUT_GQA if self.gqa else LAYOUT

    @property
    def all_to_all_bytes(self) -> int:
        """2·L all-to-alls over 'model' of [B/data, 1, N/model, Dh] each: (m−1)/m of it sent."""
        each = self.batch // self.data * self.heads // self.model * DH * 4
        return 2 * self.layers * ((self.model - 1) * each // self.model)


def sizes(ex: Example) -> Sizes:
    data, m = ex["mesh"]
    if "kv_heads" in ex:  # decode_step_gqa: rows per device, the batch over both axes
        return Sizes(data, m, ex["layers"], data * m * ex["rows"], m * ex["heads_per"],
                     ex["prompt"], ex["slots"], ex["kv_heads"])  # fmt: skip
    return Sizes(data, m, ex["layers"], data * ex["rows"], m * ex["heads_per"], ex["prompt"],
                 ex["slots"])  # fmt: skip


MESHES = ((2, 2), (2, 3), (3, 2), (1, 4), (4, 2), (1, 1), (2, 1), (1, 2))


def strategy(ctx: Context) -> Any:
    meshes = [m for m in MESHES if m[0] * m[1] <= ctx.n_devices] or [(1, 1)]
    # two to four layers: Donated reads what a step writes, which no layer count blurs
    # (a temporaries bound needed L ≥ 3: at L = 2 a correct step's temporaries reached the
    # whole cache, 3,416 B against 3,072 at 1 row, 1 head, 48 slots)
    return st.fixed_dictionaries({
        "mesh": st.sampled_from(meshes), "layers": st.sampled_from([2, 3, 4]),
        "rows": st.sampled_from([1, 2]), "heads_per": st.sampled_from([1, 2]),
        "prompt": st.sampled_from([3, 5]), "slots": st.sampled_from([48, 64]),
        "seed": st.integers(0, 2**16),
    })  # fmt: skip


EXPLICIT = (
    {"mesh": (2, 2), "layers": 3, "rows": 2, "heads_per": 1, "prompt": 5, "slots": 48, "seed": 0},
    {"mesh": (2, 3), "layers": 2, "rows": 1, "heads_per": 2, "prompt": 3, "slots": 64, "seed": 1},
    {"mesh": (3, 2), "layers": 2, "rows": 2, "heads_per": 2, "prompt": 4, "slots": 48, "seed": 2},
)
"""2×2; 2×3 and 3×2: meshes of 6, where a size hard-coded to a power of two shows."""


def explicit(ctx: Context) -> list[Example]:
    fits = [e for e in EXPLICIT if e["mesh"][0] * e["mesh"][1] <= ctx.n_devices]
    return fits or [{**EXPLICIT[0], "mesh": (1, 1)}]


MESH_PURPOSE = {
    (2, 2): "a 2×2 mesh",
    (2, 3): "a 2×3 mesh ('model' = 3: 6 devices, not a power of two)",
    (3, 2): "a 3×2 mesh ('data' = 3: 6 devices, not a power of two)",
}
"""The feature of each fixed example's mesh (:data:`EXPLICIT`'s docstring)."""


def purpose(ex: Example) -> str | None:
    """What a fixed example of ``prefill`` or ``decode_step`` is for (issue 45 §1): its
    mesh, and the share of the cache each device holds there (the whole of it on the one
    device of a grade with too few for :data:`EXPLICIT`)."""
    s = sizes(ex)
    sizes_said = f"B = {s.batch}, N = {s.heads}, L = {s.layers}"
    slots = f"{s.slots} slots for a prompt of {s.prompt}"
    if tuple(ex["mesh"]) == (1, 1):
        return (
            f"one device (a 1×1 mesh, all this grade has), {sizes_said}: the whole cache, {slots}"
        )
    mesh = MESH_PURPOSE.get(tuple(ex["mesh"]))
    if mesh is None:
        return None
    rows, heads = s.batch // s.data, s.heads // s.model
    return (
        f"{mesh}, {sizes_said}: each device's cache holds {rows} row{'s' if rows > 1 else ''} "
        f"and {heads} head{'s' if heads > 1 else ''}, {slots}"
    )


def draw(ex: Example, rng: np.random.Generator) -> tuple[Sizes, dict, np.ndarray]:
    s = sizes(ex)
    params = model.draw_params(rng, s.layers, D, s.heads * DH, s.model * F_PER, VOCAB, s.slots,
                               s.kv * DH)  # fmt: skip
    prompt = rng.integers(0, VOCAB, (s.batch, s.prompt)).astype(np.int32)
    return s, params, prompt


def _place(mesh: Any, x: Any, spec: tuple) -> Any:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    return jax.device_put(x, NamedSharding(mesh, P(*spec)))


def _pair(out: Any, fname: str) -> tuple[Any, Any]:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise StudentReturnError(
            f"{fname} returned {type(out).__name__}; expected a pair (logits, cache)",
            hint="Return both: `return logits, cache`.",
        )
    return out[0], out[1]


# ------------------------------------------------------------------ running


def run_prefill(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax

    mesh = rt.mesh(ex["mesh"], (DATA, MODEL))
    s, params, prompt = draw(ex, rt.rng())
    placed = {k: _place(mesh, v, LAYOUT[k]) for k, v in params.items()}
    heads, slots = s.heads, s.slots
    program = jax.jit(lambda p, t: fn(p, t, mesh, heads, slots))
    trial = rt.compile_and_run(program, (placed, _place(mesh, prompt, (DATA, None))), mesh)
    logits, cache = _pair(trial.output, "prefill")
    trial.output = {"logits": [logits], "cache": cache}
    trial.expected = later(_prefill_expected, params, prompt, heads)  # in the worker only
    trial.extra.update(sizes=s, tokens=[prompt.shape[1]], what="prefill")
    return trial


def _prefill_expected(params: dict, prompt: np.ndarray, heads: int) -> dict[str, Any]:
    """The float64 logits of the prompt's last token, and every layer's keys and values."""
    return {"logits": [model.logits(params, prompt, heads)[:, -1]],
            "kv": model.kv(params, prompt, heads)}  # fmt: skip


def _decode_inputs(
    s: Sizes, params: dict, prompt: np.ndarray
) -> tuple[np.ndarray, Any, np.ndarray]:
    """(greedy tokens [B, STEPS + 1], their float64 logits, the cache holding the prompt's
    keys and values): the decode steps' inputs come from the reference, which only the
    worker computes; the student's process, where it is hidden and the data are decoys,
    traces the same programs on zeros of the same shapes (:func:`grader.later.in_worker`)."""

    def reference() -> tuple[np.ndarray, Any, np.ndarray]:
        tokens, want = model.greedy(params, prompt, s.heads, STEPS)
        start = np.zeros(s.cache_shape, np.float32)
        start[:, :, :, : s.prompt] = model.kv(params, prompt, s.heads)
        return tokens, want, start

    def stand_in() -> tuple[np.ndarray, Any, np.ndarray]:
        tokens = np.zeros((prompt.shape[0], STEPS + 1), np.int64)
        return tokens, None, np.zeros(s.cache_shape, np.float32)

    return in_worker(reference, otherwise=stand_in)


def run_decode(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax

    mesh = rt.mesh(ex["mesh"], (DATA, MODEL))
    s, params, prompt = draw(ex, rt.rng())
    placed = {k: _place(mesh, v, s.layout[k]) for k, v in params.items()}
    tokens, want, start = _decode_inputs(s, params, prompt)
    cache = _place(mesh, start, s.cache_spec)
    heads = s.heads
    program = jax.jit(lambda p, c, t, pos: fn(p, c, t, pos, mesh, heads), donate_argnums=(1,))
    first, logits = None, []
    for step in range(STEPS):
        fed = _place(mesh, tokens[:, step].astype(np.int32), (DATA,))
        pos = _place(mesh, np.int32(s.prompt + step), ())
        trial = rt.compile_and_run(program, (placed, cache, fed, pos), mesh)
        out, cache = _pair(trial.output, "decode_step")
        _fed_on(cache, s, step)
        logits.append(out)
        first = first or trial
    assert first is not None
    first.output = {"logits": logits, "cache": cache}
    # read in the worker only (the student's process has no reference: ``want`` is None there)
    first.expected = later(lambda: {"logits": list(want[1:]), "tokens": tokens[:, 1:]})
    first.extra.update(sizes=s, what="decode", params=params, prompt=prompt,
                       fed=tokens[:, :STEPS], positions=[s.prompt + k for k in range(STEPS)])  # fmt: skip
    return first


def _fed_on(cache: Any, s: Sizes, step: int) -> None:
    """The cache a decode step returns is the next step's input: of the kind it came."""
    shape, dtype = tuple(getattr(cache, "shape", ())), str(getattr(cache, "dtype", ""))
    if shape != s.cache_shape or dtype != "float32":
        said = f"{dtype}{list(shape)}" if dtype else type(cache).__name__
        raise StudentReturnError(
            f"decode step {step + 1} returned the cache as {said}; expected float32"
            f"{list(s.cache_shape)} as it came (the next step is fed it, and the caller "
            "donated the old one to it)",
            hint="Return the cache with the shape, dtype and sharding it came with: the "
            "server donates it and writes the next token into the same buffer.",
        )


# ------------------------------------------------------------------ checks


def _host(x: Any) -> np.ndarray | None:
    import jax

    if not isinstance(x, jax.Array):
        return None
    return np.asarray(x, np.float64)


def _step_name(trial: Trial, k: int) -> str:
    if trial.extra["what"] == "prefill":
        return "prefill (the prompt's last token)"
    return f"decode step {k + 1} (position {trial.extra['positions'][k]})"


VARIANTS = (
    (model.MASK_BEFORE,
     "Your logits are those of a new token that does not attend to itself: the mask keeps "
     "keys < pos, but the token at pos is written into the cache first and must be seen "
     "(keys ≤ pos, as the causal mask of prefill keeps the diagonal)."),
    (model.MASK_AFTER,
     "Your logits are those of a new token that also attends to the empty slot after it: "
     "the mask keeps keys ≤ pos + 1, and that slot holds zeros (a score of 0 still takes "
     "softmax weight). Keep keys ≤ pos."),
    (model.POSITION_ZERO,
     "Your logits are those of every new token embedded at position 0: decode adds "
     "pos_embedding[pos] for the token at pos — the positions do not advance if you reuse "
     "prefill's pos[:T] with T = 1."),
)  # fmt: skip


@dataclass(frozen=True)
class Logits(Check):
    """Each program's logits against the float64 recomputation; the greedy tokens."""

    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        got_all, want_all = trial.output["logits"], trial.expected["logits"]
        for k, (got, want) in enumerate(zip(got_all, want_all)):
            where = _step_name(trial, k)
            host = _host(got)
            if host is None or host.shape != want.shape:
                shape = getattr(got, "shape", type(got).__name__)
                return CheckResult(self.name, False,
                                   f"{where}: logits of shape {shape}; expected {want.shape} "
                                   "[B, V] float32")  # fmt: skip
            if str(got.dtype) != "float32":
                return CheckResult(
                    self.name, False, f"{where}: logits {got.dtype}; expected float32"
                )
            scale = float(np.abs(want).max())
            allowed = ATOL * scale
            err = np.abs(np.nan_to_num(host - want, nan=np.inf))
            if err.max() > allowed:
                rows = sorted({int(r) for r in np.nonzero(err.max(-1) > allowed)[0]})
                table = Table(["row", "largest |error|", "allowed"],
                              [[str(r), f"{err[r].max():.3g}", f"{allowed:.3g}"] for r in rows[:8]])  # fmt: skip
                return CheckResult(
                    self.name, False,
                    f"{where}: logits differ from the reference (which recomputes the whole "
                    f"sequence) by up to {err.max():.3g}, allowed {allowed:.3g}, in rows {rows}",
                    evidence=[table], hint=self._hint(trial, k),
                )  # fmt: skip
            top = np.sort(want, -1)
            clear = top[:, -1] - top[:, -2] > 2 * allowed
            picked, right = host.argmax(-1), want.argmax(-1)
            if np.any(clear & (picked != right)):
                return CheckResult(self.name, False,
                                   f"{where}: greedy tokens {picked.tolist()}; expected {right.tolist()}")  # fmt: skip
        return CheckResult(self.name, True,
                           f"logits of {len(want_all)} program(s) within {ATOL:g}·max|ref| of the "
                           "float64 recomputation; greedy tokens agree")  # fmt: skip

    @staticmethod
    def _hint(trial: Trial, k: int) -> str | None:
        if trial.extra["what"] != "decode":
            if position := _prefill_position(trial):
                return position
            changed = _prefill_changed(trial)
            return ((f"{changed} " if changed else "")
                    + "The prompt's logits differ: check the causal mask (keys ≤ query), the "
                    "positions added at the input, and one psum over 'model' after each "
                    "row-parallel matmul (o @ wo, tanh(h @ w_in) @ w_out).")  # fmt: skip
        s = trial.extra["sizes"]
        got = [_host(x) for x in trial.output["logits"][: k + 1]]
        for how, hint in VARIANTS:
            alt = model.decode(trial.extra["params"], trial.extra["prompt"], trial.extra["fed"],
                               s.heads, s.slots, how)  # fmt: skip
            if all(g is not None and _near(g, a)
                   for g, a in zip(got, alt)):  # fmt: skip
                return hint
        said = _cache_said(trial)
        changed = _decode_changed(trial, got)
        if k > 0:
            return ("The first steps agree and a later one does not: the cache you return is "
                    "not the one the next step needs. Write the new keys and values at pos "
                    "(lax.dynamic_update_slice), in every layer, and return the whole cache."
                    + (f" {changed}" if changed else "") + (f" {said}" if said else ""))  # fmt: skip
        return " ".join(x for x in (changed, said) if x) or None


def _prefill_position(trial: Trial) -> str | None:
    """Where the student's logits are exactly the reference's at another position of the
    prompt (every row), that position, in one sentence; None where they are not."""
    later = variants.deferred(trial)
    got = _host(trial.output["logits"][0]) if trial.output.get("logits") else None
    if later is None or got is None:
        return None
    _, (params, prompt, heads), _ = later.call  # _prefill_expected(params, prompt, heads)
    every = np.asarray(model.logits(params, prompt, heads))  # [B, T, V]
    if every.ndim != 3 or every.shape[0::2] != got.shape:
        return None
    last = every.shape[1] - 1
    for p in range(last):
        at = every[:, p]
        if _near(got, at):
            which = " (the first)" if p == 0 else ""
            return (f"Your logits are exactly the reference's for the prompt's token at position "
                    f"{p}{which}, in every row, where those of its last token (position {last}) "
                    "belong: prefill returns the logits that pick the next token.")  # fmt: skip
    return None


def _prefill_changed(trial: Trial) -> str | None:
    """The first change of the reference's logits (:func:`model.logits`: its arguments,
    then its formula down to the attention, :mod:`grader.checks.variants`) whose last
    position's logits are the student's, in one sentence; None where none is."""
    later = variants.deferred(trial)
    got = _host(trial.output["logits"][0]) if trial.output.get("logits") else None
    if later is None or got is None:
        return None
    _, (params, prompt, heads), _ = later.call  # _prefill_expected(params, prompt, heads)

    def matches(alt: Any) -> bool:
        last = np.asarray(alt)[:, -1] if np.ndim(alt) == 3 else None
        return last is not None and last.shape == got.shape and bool(
            _near(got, last))  # fmt: skip

    change = variants.first_change_of((model.logits, (params, prompt, heads), {}), matches)
    if change is None:
        return None
    return f"Your logits are exactly what the reference computes {change.said}."


def _decode_changed(trial: Trial, got: list[np.ndarray | None]) -> str | None:
    """The first change of the reference's cached decoding (:func:`model.decode`: its
    arguments, then its formula, :mod:`grader.checks.variants`) whose logits are the
    student's at every step so far, in one sentence; None where none is."""
    s = trial.extra["sizes"]
    call = (model.decode, (trial.extra["params"], trial.extra["prompt"], trial.extra["fed"],
                           s.heads, s.slots), {})  # fmt: skip

    def matches(alt: Any) -> bool:
        alt = np.asarray(alt)
        return alt.ndim == 3 and len(alt) >= len(got) and all(
            g is not None and g.shape == a.shape and _near(g, a)
            for g, a in zip(got, alt)
        )  # fmt: skip

    change = variants.first_change_of(call, matches)
    if change is None:
        return None
    return (f"Your logits of every decode step so far are exactly what the reference's "
            f"cached decoding computes {change.said}.")  # fmt: skip


CACHE_AXES = ("keys/values", "sequence", "position", "head", "feature")
"""The axes of one layer's cache, [2, B, S, H, Dh], by name."""


def _cache_said(trial: Trial) -> str | None:
    """Where the cache the last decode step returned first differs from the reference's
    (every layer's keys and values of the prompt and the fed tokens, 0 past them): the
    first wrong layer, where in it (:func:`relate.localise`), and whether its wrong
    entries hold expected ones of other places (:func:`relate.moved`). A wrong entry of
    a later layer follows from a wrong earlier one, so only the first is read. None
    where the cache matches or cannot be read."""
    s = trial.extra["sizes"]
    got = _host(trial.output["cache"])
    if got is None or got.shape != s.cache_shape:
        return None
    seq = np.concatenate([trial.extra["prompt"], trial.extra["fed"]], axis=1)
    want = np.zeros(s.cache_shape)
    want[:, :, :, : seq.shape[1]] = model.kv(trial.extra["params"], seq, s.heads)
    allowed = ATOL * float(np.abs(want).max())

    def close(a: np.ndarray, e: np.ndarray) -> np.ndarray:
        return np.abs(a - e) <= allowed

    bad = ~close(got, want)
    wrong = [layer for layer in range(got.shape[0]) if bad[layer].any()]
    if not wrong:
        return None
    first = wrong[0]
    where = relate.localise(bad[first], CACHE_AXES)
    moved = relate.moves(got[first], want[first], bad[first], close, CACHE_AXES)
    said = (f"The cache your last step returns first differs from the reference's (every "
            f"layer's keys and values of the prompt and the fed tokens) in layer {first}: "
            f"{where}")  # fmt: skip
    return f"{said}; {moved.said('it')}." if moved else f"{said}."


@dataclass(frozen=True)
class CacheLayout(Check):
    """The returned cache: [L, 2, B, S, H, Dh] float32, sharded P(None, None, 'data',
    None, 'model', None), each device holding 1/(data·model) of it; prefill's holds
    the prompt's keys and values."""

    name: str = "cache"

    def __call__(self, trial: Trial) -> CheckResult:
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        s: Sizes = trial.extra["sizes"]
        cache = trial.output["cache"]
        if not isinstance(cache, jax.Array):
            return CheckResult(self.name, False, f"the cache returned is {type(cache).__name__}; "
                               "expected a jax.Array")  # fmt: skip
        if tuple(cache.shape) != s.cache_shape or str(cache.dtype) != "float32":
            return CheckResult(self.name, False,
                               f"the cache is {cache.dtype}{list(cache.shape)}; expected "
                               f"float32{list(s.cache_shape)} [layers, 2, batch, seq, heads, head_dim]",
                               hint=_cache_shape_hint(tuple(cache.shape), s))  # fmt: skip
        kind, home = _memory_kinds(cache, trial.mesh)
        if kind != home:
            return CheckResult(
                self.name, False,
                f"the cache comes back in {kind} memory; it came in {home} memory, where the "
                "next step reads it",
                hint=_OFFLOADED,
            )  # fmt: skip
        want = NamedSharding(trial.mesh, P(*s.cache_spec))
        held = max((sh.data.nbytes for sh in cache.addressable_shards), default=0)
        if not cache.sharding.is_equivalent_to(want, cache.ndim) or held != s.device_cache_bytes:
            spec = getattr(cache.sharding, "spec", cache.sharding)
            return CheckResult(
                self.name, False,
                f"the cache comes back sharded {spec}, {held:,} bytes on a device; expected "
                f"P{s.cache_spec}: {s.cache_bytes:,}/(data·model) = {s.device_cache_bytes:,}",
                hint="out_specs for the cache: P(None, None, 'data', None, 'model', None) — "
                "each device keeps its own sequences' keys and values for its own heads.",
            )  # fmt: skip
        kv = trial.expected.get("kv")
        if kv is not None:
            got = np.asarray(cache, np.float64)[:, :, :, : s.prompt]
            err = float(np.abs(got - kv).max())
            if err > ATOL * float(np.abs(kv).max()):
                return CheckResult(
                    self.name, False,
                    f"the cache's positions 0…{s.prompt - 1} differ from the prompt's keys and "
                    f"values by up to {err:.3g}",
                    hint="Layer i's keys go to cache[i, 0, :, :T] and its values to "
                    "cache[i, 1, :, :T], computed from that layer's input h.",
                )  # fmt: skip
        return CheckResult(self.name, True,
                           f"[L, 2, B, S, K, Dh] sharded P{s.cache_spec}: {held:,} bytes per device")  # fmt: skip


_OFFLOADED = (
    "Return the cache in the memory it came in (no device_put to another memory kind): "
    "moved off the device, the whole cache is copied out every step and back in at the "
    "next, where a step in place writes one position."
)


def _memory_kinds(cache: Any, mesh: Any) -> tuple[str | None, str | None]:
    """The memory kind the returned cache is in, and the devices' default one (where the
    grader placed the cache it handed in)."""
    kind = getattr(cache.sharding, "memory_kind", None)
    try:
        home = mesh.devices.flat[0].default_memory().kind
    except Exception:  # a backend without memory kinds: nothing to tell apart
        return kind, kind
    return (kind or home), home


@dataclass(frozen=True)
class Collectives(Check):
    """Only all-reduces over 'model', 2·L of them, each of one activation."""

    name: str = "collectives"

    def __call__(self, trial: Trial) -> CheckResult:
        s: Sizes = trial.extra["sizes"]
        try:
            found = grouped(trial)
        except ValueError as exc:
            return CheckResult(self.name, False, str(exc))
        shape, names = tuple(trial.mesh.devices.shape), tuple(trial.mesh.axis_names)
        rows = [[c.kind, c.shape, str(c.count), "+".join(sorted(spanned_axes(g, shape, names)))]
                for c, g in found]  # fmt: skip
        evidence = [Table(["kind", "shape", "times", "over"], rows)]
        kinds = ("all-reduce", "all-to-all") if s.gqa else ("all-reduce",)
        for c, groups in found:
            axes = spanned_axes(groups, shape, names)
            if c.kind not in kinds or axes != {MODEL}:
                over = " and ".join(f"'{a}'" for a in sorted(axes))
                return CheckResult(
                    self.name, False,
                    f"{c.kind} of {c.shape} over {over} (groups {show_groups(groups)})",
                    evidence=evidence, hint=_kind_hint(c, axes, s),
                )  # fmt: skip
        if s.gqa:
            swaps = sum(c.count or 0 for c, _ in found if c.kind == "all-to-all")
            moved = sum(c.total() or 0 for c, _ in found if c.kind == "all-to-all")
            expected = 2 * s.layers if s.model > 1 else 0  # over one device XLA drops them
            if swaps != expected or moved != s.all_to_all_bytes:
                return CheckResult(
                    self.name, False,
                    f"{swaps} all-to-alls over 'model' sending {moved:,} bytes per device; "
                    f"expected {'2·L = ' if s.model > 1 else ''}{expected} sending {s.all_to_all_bytes:,}: one turns "
                    "each layer's queries [B/data, 1, N/model, Dh] from head-split to "
                    "batch-split, one turns the attention output back",
                    evidence=evidence, hint=_swaps_hint(s, found),
                )  # fmt: skip
        count = sum(c.count or 0 for c, _ in found if c.kind == "all-reduce")
        want = 2 * s.layers if s.model > 1 else 0
        if count != want:
            return CheckResult(
                self.name, False,
                f"{count} all-reduces over 'model' per program; expected 2·L = {want}: one after "
                "attention's wo and one after the MLP's w_out in each layer",
                evidence=evidence,
                hint=_too_many(s, count, trial.extra["what"], found)
                if count > want else "A row-parallel matmul's partial sum is never summed "
                "over 'model': psum o @ wo and tanh(h @ w_in) @ w_out.",
            )  # fmt: skip
        if s.model == 1:
            return CheckResult(self.name, True, "no collective: one 'model' device, nothing to sum",
                               evidence=evidence)  # fmt: skip
        also = f" and {2 * s.layers} all-to-alls" if s.gqa else ""
        return CheckResult(self.name, True,
                           f"{count} all-reduces over 'model' (2 per layer){also}, nothing else",
                           evidence=evidence)  # fmt: skip


def _swaps_hint(s: Sizes, found: list) -> str:
    """All-to-alls of the wrong count or bytes. One of [B/data, 1, K, Dh] (where K differs
    from the N/model query heads a device holds, so q's and o's cannot have that size) is
    the new token's keys or values moved to the rows' devices: named. Otherwise what a
    step sends, without a cause."""
    b = s.batch // s.data
    if s.kv != s.heads // s.model and any(
        c.kind == "all-to-all" and c.operand_elements == b * s.kv * DH for c, _ in found
    ):
        return (
            f"An all-to-all of [B/data, 1, K, Dh] = [{b}, 1, {s.kv}, {DH}]: the new token's "
            "keys or values are moved to the device of their rows, as the queries are. wk and "
            "wv are replicated: each device computes them for its own B/(data·model) rows "
            "(its slice of h) with no collective; only q and attention's output move."
        )
    return (
        "lax.all_to_all(q, 'model', 0, 2, tiled=True) before attention (split the rows, "
        "gather the heads) and lax.all_to_all(o, 'model', 2, 0, tiled=True) after it, each "
        "of [B/data, 1, N/model, Dh] per device; the cache itself never moves."
    )


def _too_many(s: Sizes, count: int, what: str, found: list) -> str:
    if what == "prefill" and s.prompt > 1 and count == s.prompt * 2 * s.layers:
        return (
            f"{count} = T·2·L: the prompt runs one token at a time, T = {s.prompt} sequential "
            "decode steps, each with its own psums. Prefill takes all T positions in one pass "
            "(a causal mask over [T, T]): T times fewer, T times larger collectives, and "
            "matmuls of B·T rows that keep the chip busy."
        )
    b = s.batch // s.data
    reduced = [c for c, _ in found if c.kind == "all-reduce"]
    if any(f"[{b},{VOCAB}]" in c.shape for c in reduced):  # [B/data, V]: only the logits
        return (
            f"An all-reduce of [B/data, V] = [{b}, {VOCAB}], the logits: they come from h "
            "(already summed over 'model') and the replicated unembed, with no collective. "
            "One psum over 'model' per row-parallel matmul, no more."
        )
    times: dict[str, int] = {}
    for c in reduced:  # the same shape in several places (loop bodies): counted together
        times[c.shape.split("{")[0]] = times.get(c.shape.split("{")[0], 0) + (c.count or 0)
    shapes = ", ".join(f"{shape} ×{n}" for shape, n in times.items())
    return (
        f"Measured: all-reduces over 'model' of {shapes}, {count} in all, {count - 2 * s.layers} "
        "more than a step needs: one psum per row-parallel matmul (o @ wo, tanh(h @ w_in) @ "
        "w_out), each of an activation [B/data, T, D]; h is already the same on every "
        "'model' device after them."
    )


def _kind_hint(c: Any, axes: set[str], s: Sizes) -> str:
    from grader.measure.hlo import shape_elements

    kind = c.kind
    if DATA in axes:
        return ("Nothing crosses 'data' when serving: each device row holds its own "
                "sequences and their caches, whole weights of its 'model' column.")  # fmt: skip
    small = max(c.operand_elements, shape_elements(c.shape)) < s.layer_kv_elements
    if kind == "all-gather" and s.gqa and small:
        return ("An all-gather over 'model' of an activation (the queries or attention's "
                "output): every device receives all of it, 'model' times what it attends "
                "for. lax.all_to_all hands each device only its own rows: all_to_all(q, "
                "'model', 0, 2, tiled=True) before attention, all_to_all(o, 'model', 2, 0, "
                "tiled=True) after it.")  # fmt: skip
    if kind == "all-gather" and s.gqa:
        return ("An all-gather over 'model' as large as the cache: the batch-split cache is "
                "gathered. Move the queries to the rows instead (lax.all_to_all), and back.")  # fmt: skip
    if kind == "all-gather":
        return ("An all-gather over 'model': something split over heads (the cache, or q, k, v) "
                "is gathered. Attention runs on each device's own heads; only the "
                "row-parallel outputs are summed.")  # fmt: skip
    return "Only psum over 'model' is needed: one after o @ wo, one after the MLP."


@dataclass(frozen=True)
class CacheStays(Check):
    """No collective moves as much as one layer's keys (or values) on one device."""

    name: str = "cache traffic"

    def __call__(self, trial: Trial) -> CheckResult:
        s: Sizes = trial.extra["sizes"]
        limit = s.layer_kv_elements
        for c in trial.comms.collectives:
            if not (c.count and c.moves_data):
                continue
            from grader.measure.hlo import shape_elements

            moved = max(c.operand_elements, shape_elements(c.shape))
            if moved >= limit:
                keys = "[B/(data·model), S, K, Dh]" if s.gqa else "[B/data, S, H/model, Dh]"
                mine = ("its own B/(data·model) sequences, all K key/value heads; only the "
                        "queries and attention's output move (all_to_all over 'model') and "
                        "activations [B/data, 1, D] are summed") if s.gqa else (
                        "its own sequences' cached keys and values for its own heads; only "
                        "activations [B/data, T, D] are summed over 'model'")  # fmt: skip
                return CheckResult(
                    self.name, False,
                    f"a {c.kind} of {c.shape} ({moved:,} numbers) runs {c.count}×: as large as "
                    f"one layer's keys on a device {keys} = {limit:,}: the "
                    "cache (or a gathered copy of it) crosses devices",
                    hint=f"The cache never moves: every device attends over {mine}.",
                )  # fmt: skip
        return CheckResult(self.name, True, "no collective carries the cache")


@dataclass(frozen=True)
class Donated(Check):
    """The returned cache reuses the donated one (the memory analysis's alias bytes), and
    a step writes into it only the new token's keys and values: read from the compiled
    program (:func:`grader.measure.hlo.writes`), every instruction that writes a buffer of
    the device's cache size, with how many times it runs. An in-place update
    (dynamic-update-slice, scatter) writes its update; anything else of that size (a
    copy, a concatenate, a select, a broadcast) writes the whole cache: a copy of it.

    What is written, not the temporaries: a Python loop over layers writes one slot per
    layer in place, but XLA:CPU keeps each unrolled layer's reads alive, near or past one
    cache (measured at 2×2: 9,028 temporary bytes against the cache's 9,216), while each
    layer's keys and values rewritten whole by a jnp.where and written back keep one
    layer of temporaries (5,400 bytes) and write the whole cache every step (3 updates of
    3,072 bytes)."""

    name: str = "in place"

    def __call__(self, trial: Trial) -> CheckResult:
        from grader.measure import hlo

        s: Sizes = trial.extra["sizes"]
        memory = trial.memory or {}
        alias = memory.get("alias")
        text = getattr(trial.comms, "text", "")
        if alias is None or not text:
            return CheckResult(self.name, True, "memory analysis unavailable on this backend")
        want = s.device_cache_bytes
        if alias < want:
            # Reached only by a cache in another memory kind. The grader's jit donates the
            # cache, and jax pairs a donated input with an output of the same global shape,
            # dtype and memory kind (jax._src.interpreters.mlir._set_up_aliases), which XLA
            # must then write in place, adding a copy where the program needs one (a write
            # of the whole cache, the next branch). Another shape or dtype is refused before
            # (_fed_on); a copy (cache + 0, jnp.array(cache), a concatenate) or the function
            # wrapped in its own jax.jit without donation still aliases (measured: 9,216 of
            # 9,216 bytes at 2×2). A cache offloaded to host memory between steps does not:
            # catalogued as l16-cache-offloaded-to-host.
            kind, home = _memory_kinds(trial.output["cache"], trial.mesh)
            where = f" (in {kind} memory; it came in {home} memory)" if kind != home else ""
            return CheckResult(
                self.name, False,
                f"{alias:,} bytes of the outputs alias the inputs; the donated cache is "
                f"{want:,} bytes per device: the cache you return is a new buffer{where}",
                hint=_OFFLOADED if where else "XLA writes a donated input in place only into "
                "an output of the same shape, dtype, sharding and memory kind: return the "
                "cache as it came (the same out_specs as in_specs), updated with "
                "lax.dynamic_update_slice.",
            )  # fmt: skip
        local = (s.layers, 2, s.batch // s.data, s.slots, s.kv // s.model, DH)
        if s.gqa:  # split by batch over both axes
            local = (s.layers, 2, s.batch // (s.data * s.model), s.slots, s.kv, DH)
        found = hlo.writes(text, local)
        new = want // s.slots  # one position of every layer: the new token's keys and values
        evidence = [_writes_table(found)]
        whole = [w for w in found if not w.in_place]
        if whole:
            ops = ", ".join(sorted({f"{w.opcode} ×{_times(w.count)}" for w in whole}))
            return CheckResult(
                self.name, False,
                f"the compiled step writes the whole cache ({want:,} bytes per device) outside "
                f"an in-place update ({ops}): a copy of the cache is made each step",
                evidence=evidence,
                hint=_whole_write_hint({w.opcode for w in whole}),
            )  # fmt: skip
        written = sum(t for w in found if (t := w.total()) is not None)
        largest = max(found, key=lambda w: w.bytes_each, default=None)
        if largest is not None and (written > new or largest.bytes_each > new):
            runs = sum(w.count or 0 for w in found)
            return CheckResult(
                self.name, False,
                f"each step writes {written:,} bytes into the cache in place ({runs} updates "
                f"of {_dims(largest.written)}, {largest.bytes_each:,} bytes each); the new "
                f"token's keys and values are {new:,} bytes (one position of every layer): "
                "each layer of the cache is rewritten whole",
                evidence=evidence,
                hint="Each update writes a whole layer's keys and values [1, 2, b, S, h, dh] "
                "back, though only position pos changed (as a jnp.where(slot == pos, new, "
                "cache[i]) written back does): a decode step is "
                "memory-bound, and that writes as many bytes as attention reads. Write only "
                "the new position: lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0)) "
                "with new [1, 2, b, 1, h, dh].",
            )  # fmt: skip
        return CheckResult(
            self.name, True,
            f"the cache is updated in place ({alias:,} bytes aliased; {written:,} bytes "
            "written a step: the new token's keys and values)",
            evidence=evidence,
        )  # fmt: skip


WHOLE_WRITES = {
    "concatenate": "a concatenate (your step joins pieces into a cache-sized buffer)",
    "select": "a jnp.where over the whole cache (a select of cache size)",
    "copy": "a copy: a cache carried both ways through lax.scan (xs and ys) makes one, and "
    "so does reading the cache as it came after writing into it (XLA must keep the old one)",
}
"""What writes a whole cache, by the HLO opcode that writes it: a hint names only the
opcodes the compiled step holds (issue 45 §5: no concatenate blamed where there is none)."""


def _whole_write_hint(opcodes: set[str]) -> str:
    said = [WHOLE_WRITES.get(op, f"a {op} of the cache's size") for op in sorted(opcodes)]
    return (
        "Read one layer's keys and values at a time, and write only the new position. "
        f"What writes all of it in your compiled step: {'; '.join(said)}."
    )


def _times(count: int | None) -> str:
    return "?" if count is None else str(count)


def _dims(shape: str) -> str:
    """``f32[1,2,2,48,1,4]{5,4,3,2,1,0}`` → ``[1, 2, 2, 48, 1, 4]``."""
    inner = shape.partition("[")[2].partition("]")[0]
    return "[" + ", ".join(inner.split(",")) + "]"


def _writes_table(found: list) -> Table:
    rows = [[w.opcode, _dims(w.shape), _dims(w.written), f"{w.bytes_each:,}", _times(w.count)]
            for w in found]  # fmt: skip
    return Table(["writes a buffer the cache's size", "buffer", "writes", "bytes", "times"],
                 rows or [["(none)", "", "", "0", "0"]])  # fmt: skip


PREFILL = ExerciseSpec(
    name="prefill", strategy=strategy, explicit=explicit, run=run_prefill,
    checks=(Logits(), CacheLayout(), Collectives(), CacheStays()), max_examples=1,
    purpose=purpose,
)  # fmt: skip
DECODE = ExerciseSpec(
    name="decode_step", strategy=strategy, explicit=explicit, run=run_decode,
    checks=(Logits(), CacheLayout(), Collectives(), CacheStays(), Donated()), max_examples=1,
    purpose=purpose,
)  # fmt: skip


GQA_EXPLICIT = (
    {"mesh": (2, 2), "layers": 2, "rows": 1, "heads_per": 2, "kv_heads": 1, "prompt": 5,
     "slots": 48, "seed": 3},
    {"mesh": (1, 4), "layers": 2, "rows": 2, "heads_per": 1, "kv_heads": 2, "prompt": 3,
     "slots": 64, "seed": 4},
    {"mesh": (2, 3), "layers": 2, "rows": 1, "heads_per": 2, "kv_heads": 2, "prompt": 4,
     "slots": 48, "seed": 5},
)  # fmt: skip
"""K = 1 and 2 key/value heads on 2, 3 and 4 'model' devices (fewer heads than devices)."""


def gqa_strategy(ctx: Context) -> Any:
    meshes = [m for m in ((2, 2), (1, 4), (2, 3), (1, 2), (4, 2)) if m[0] * m[1] <= ctx.n_devices]
    pairs = st.tuples(st.sampled_from(meshes or [(1, 1)]), st.sampled_from([1, 2]))
    return pairs.flatmap(  # K divides the N = model · heads_per query heads, and K < model
        lambda mh: st.fixed_dictionaries({
            "mesh": st.just(mh[0]), "layers": st.sampled_from([2, 3]),
            "rows": st.sampled_from([1, 2]), "heads_per": st.just(mh[1]),
            "kv_heads": st.sampled_from(
                [k for k in (1, 2) if k < mh[0][1] and mh[0][1] * mh[1] % k == 0] or [1]),
            "prompt": st.sampled_from([3, 5]), "slots": st.sampled_from([48, 64]),
            "seed": st.integers(0, 2**16),
        })
    )  # fmt: skip


def _gqa_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    """The cache given decode_step's head-split in_specs: with K < model key/value heads
    shard_map refuses it (K heads do not divide over 'model', or the spec is not the
    placement the cache arrives with)."""
    head_split = "P(None, None, 'data', None, 'model', None)"
    s = sizes(ex)
    if head_split not in str(exc) or s.kv % s.model == 0:
        return None  # on one 'model' device the heads do split: shard_map's own hint
    return (
        f"The cache is given decode_step's layout {head_split}, its key/value heads split "
        f"over 'model'; here K = {s.kv} key/value heads and 'model' has {s.model} devices, so "
        f"the heads cannot be split. The cache arrives split by batch over both axes, "
        f"P{CACHE_GQA}: give that in in_specs and out_specs, and move the queries to the "
        "rows with lax.all_to_all around attention instead."
    )


def gqa_explicit(ctx: Context) -> list[Example]:
    fits = [e for e in GQA_EXPLICIT if e["mesh"][0] * e["mesh"][1] <= ctx.n_devices]
    return fits or [{**GQA_EXPLICIT[0], "mesh": (1, 1)}]  # one device: K = 1 of N = 2


def gqa_purpose(ex: Example) -> str | None:
    """What a fixed example of ``decode_step_gqa`` is for (issue 45 §1): K key/value heads,
    fewer than the 'model' devices (:data:`GQA_EXPLICIT`'s docstring), or one device."""
    if ex not in GQA_EXPLICIT and ex != {**GQA_EXPLICIT[0], "mesh": (1, 1)}:
        return None
    s = sizes(ex)
    if s.model == 1:
        return (
            f"one device (a 1×1 mesh, all this grade has), K = {s.kv} key/value head for "
            f"N = {s.heads} query heads: the whole cache on it"
        )
    rows = s.batch // (s.data * s.model)
    return (
        f"K = {s.kv} key/value head{'s' if s.kv > 1 else ''} for N = {s.heads} query heads "
        f"on a {s.data}×{s.model} mesh, fewer than its {s.model} 'model' devices: the cache "
        f"split by batch over both axes, {rows} row{'s' if rows > 1 else ''} a device"
    )


DECODE_GQA = ExerciseSpec(
    name="decode_step_gqa", strategy=gqa_strategy, explicit=gqa_explicit, run=run_decode,
    checks=(Logits(), CacheLayout(), Collectives(), CacheStays(), Donated()), max_examples=1,
    diagnose_error=_gqa_error, purpose=gqa_purpose,
)  # fmt: skip
