"""Lesson 16: the cost model against the scaling book's published LLaMA-2-13B figures,
the float64 reference and its mistake models, and the sharded programs graded in
this process (the reference passes; the checks' diagnoses are in tests/mistakes/l16.py)."""

from __future__ import annotations

import numpy as np
import pytest

from grader.expected.l16_serving import cost
from grader.lessons.l16_serving import model, serve
from grader.lessons.l16_serving.records import MODELS, SLICES, Slice, param_count
from grader.loader import load_module
from grader.results import Status
from grader.sandbox import backends

L13, GQA, V5E = MODELS["llama-2-13b"], MODELS["llama-2-13b-gqa"], SLICES["tpu-v5e-8"]

# "How to Scale Your Model" (Austin et al., 2025), "All About Transformer Inference",
# the tables of "Modeling throughput and latency for LLaMA 2-13B": 8 TPU v5e, bf16,
# 8,192-token caches. batch → (step time in ms, tokens/s).
BOOK_MHA = {1: (4.98, 200.61), 8: (12.13, 659.30), 16: (20.30, 787.99), 32: (36.65, 873.21),
            64: (69.33, 923.13), 240: (249.09, 963.53)}  # fmt: skip
BOOK_GQA = {1: (4.17, 239.94), 8: (5.60, 1429.19), 16: (7.23, 2212.48), 32: (10.50, 3047.62),
            64: (17.04, 3756.62), 240: (52.99, 4529.34)}  # fmt: skip
BOOK_MEMORY = {1: (6.7, 32.7), 8: (53.6, 79.6), 16: (107.2, 133.2), 32: (214.4, 240.4),
               64: (428.8, 454.8), 240: (1608, 1634)}  # fmt: skip
BOOK_MEMORY_GQA = {1: (1.34, 27.34), 8: (10.72, 36.72), 16: (21.44, 47.44), 32: (42.88, 68.88),
                   64: (85.76, 111.76), 240: (321.6, 347.6)}  # fmt: skip
"""The same tables' memory rows, batch → (KV cache, total), both columns headed "GiB"."""
SOLUTION = load_module(serve.__file__.rsplit("/grader/", 1)[0] + "/solutions", "l16_serving")


def test_llama_2_13b_as_the_book_lists_it():
    """L, D, N, K, H, V from the book's table; 13e9 parameters, 26 GB of bf16 weights."""
    assert (L13.layers, L13.d_model, L13.heads, L13.kv_heads, L13.head_dim, L13.vocab) == (
        40, 5120, 40, 40, 128, 32000)  # fmt: skip
    assert abs(param_count(L13) / 13e9 - 1) < 0.002
    assert (
        abs(param_count(GQA) / param_count(L13) - 1) < 1e-4
    )  # "the total number of params the same"


@pytest.mark.parametrize("fns", [cost, SOLUTION], ids=["reference", "solution"])
def test_kv_cache_of_one_8k_sequence_is_6_7_gb(fns):
    """The book: 8192 · 40 · 128 · 40 · 2 · 2 = 6.7 GB (10⁹ B; 6.25 GiB), and 1.34 GB with 8 kv heads."""
    assert fns.kv_cache_bytes(L13, 8192, 2) == 6_710_886_400
    assert round(fns.kv_cache_bytes(L13, 8192, 2) / 2**30, 2) == 6.25
    assert round(fns.kv_cache_bytes(GQA, 8192, 2) / 1e9, 2) == 1.34


@pytest.mark.parametrize("fns", [cost, SOLUTION], ids=["reference", "solution"])
@pytest.mark.parametrize(
    "m, book", [(L13, BOOK_MEMORY), (GQA, BOOK_MEMORY_GQA)], ids=["mha", "gqa"]
)
def test_the_books_memory_rows_headed_gib_are_in_10_9_bytes(fns, m, book):
    """The book's "6.7 GB" per 8k sequence, and its memory rows (caches, and caches plus
    26 GB of weights) within 0.3 % when read as 10⁹ B, 7 % off when read as 2³⁰ B: the
    unit the text states. Its slice, "128GiB of HBM", is 2³⁰ B: 8 · 16 GiB."""
    assert round(fns.kv_cache_bytes(L13, 8192, 2) / 1e9, 1) == 6.7
    assert V5E.chips * V5E.hbm_bytes == 128 * 2**30
    weights = param_count(m) * 2
    for batch, (caches, total) in book.items():
        ours = batch * fns.kv_cache_bytes(m, 8192, 2)
        assert abs(ours / 1e9 / caches - 1) < 0.003, batch
        assert abs((ours + weights) / 1e9 / total - 1) < 0.003, batch
        assert abs(ours / 2**30 / caches - 1) > 0.06, batch


@pytest.mark.parametrize("fns", [cost, SOLUTION], ids=["reference", "solution"])
@pytest.mark.parametrize("m, book", [(L13, BOOK_MHA), (GQA, BOOK_GQA)], ids=["mha", "gqa"])
def test_step_time_and_throughput_within_a_quarter_percent_of_the_book(fns, m, book):
    """The book rounds the cache to 6.7 (1.34) GB and the weights to 26 GB: 0.25 % covers it."""
    for batch, (ms, tokens) in book.items():
        assert abs(fns.decode_step_time(m, V5E, batch, 8192, 2) * 1e3 / ms - 1) < 0.0025, batch
        assert abs(fns.throughput(m, V5E, batch, 8192, 2) / tokens - 1) < 0.0025, batch


@pytest.mark.parametrize("fns", [cost, SOLUTION], ids=["reference", "solution"])
def test_max_batch_and_critical_batch_as_the_book_says(fns):
    """ "We OOM beyond batch size 16" (128 GiB of HBM); B* = 240 in bf16, 120 with int8 weights."""
    assert fns.max_batch(L13, V5E, 8192, 2) == 16
    assert round(fns.critical_batch(V5E, 2)) == 240
    assert round(fns.critical_batch(V5E, 1)) == 120
    assert fns.max_batch(L13, Slice("one-v5e", 1, 1.97e14, 16 * 2**30, 8.2e11), 8192, 2) == 0


def test_prefill_is_compute_bound_and_decode_memory_bound():
    """The text's worked figures: an 8k prefill takes 153 ms of compute against 5 ms of memory."""
    t = cost.prefill_time(L13, V5E, 1, 8192, 2)
    assert abs(t - 0.1527) < 5e-4
    flops = 2 * param_count(L13) * 8192 + 2 * 40 * 40 * 128 * 8192**2
    assert t == pytest.approx(flops / (8 * 1.97e14))
    weights = 2 * param_count(L13) / (8 * 8.2e11)
    assert cost.decode_step_time(L13, V5E, 1, 8192, 2) > weights  # memory: weights + cache


# ------------------------------------------------------------------ the float64 model


def _drawn(seed: int = 3):
    rng = np.random.default_rng(seed)
    p = model.draw_params(rng, 3, 16, 16, 32, 32, 12)
    prompt = rng.integers(0, 32, (4, 5))
    return p, prompt


def test_incremental_decoding_equals_recomputing_everything():
    p, prompt = _drawn()
    tokens, want = model.greedy(p, prompt, 4, 3)
    got = model.decode(p, prompt, tokens[:, :3], 4, 12, model.EXACT)
    np.testing.assert_allclose(got, want[1:], rtol=0, atol=1e-12)


@pytest.mark.parametrize("how", [model.MASK_BEFORE, model.MASK_AFTER, model.POSITION_ZERO])
def test_each_mistake_model_is_far_from_the_truth_and_from_the_others(how):
    """So a diagnosis that matches one of them cannot match the right logits or another one."""
    for ex in serve.EXPLICIT:
        s, p, prompt = serve.draw(ex, np.random.default_rng(ex["seed"]))
        tokens, want = model.greedy(p, prompt, s.heads, serve.STEPS)
        fed = tokens[:, : serve.STEPS]
        mine = model.decode(p, prompt, fed, s.heads, s.slots, how)
        scale = np.abs(want).max()
        assert np.abs(mine - want[1:]).max() > 100 * serve.ATOL * scale
        for other in {model.MASK_BEFORE, model.MASK_AFTER, model.POSITION_ZERO} - {how}:
            theirs = model.decode(p, prompt, fed, s.heads, s.slots, other)
            assert np.abs(mine - theirs).max() > 100 * serve.ATOL * scale


def test_examples_leave_an_empty_slot_and_a_cache_larger_than_an_activation():
    """An empty slot after the last position (a mask ≤ pos + 1 shows); one layer's keys on a
    device outweigh any activation [B/data, T, D] (a collective that carries them is told)."""
    for ex in serve.EXPLICIT:
        s = serve.sizes(ex)
        assert s.slots > s.prompt + serve.STEPS
        assert s.layer_kv_elements > s.batch // s.data * s.prompt * serve.D


def test_prefill_s_cache_feeds_decode_and_the_greedy_tokens_match_the_recomputation():
    """The two programs chained as a server runs them: the solution's prefill, then its
    decode_step on its own cache (donated) and its own greedy tokens, against the float64
    model that recomputes the whole sequence for every token."""
    import jax

    ex = serve.EXPLICIT[0]
    s, p, prompt = serve.draw(ex, np.random.default_rng(7))
    mesh = jax.make_mesh(ex["mesh"], ("data", "model"))
    put = lambda x, spec: jax.device_put(x, jax.NamedSharding(mesh, jax.P(*spec)))  # noqa: E731
    params = {k: put(v, serve.LAYOUT[k]) for k, v in p.items()}
    tokens, want = model.greedy(p, prompt, s.heads, serve.STEPS)
    prefill = jax.jit(lambda q, t: SOLUTION.prefill(q, t, mesh, s.heads, s.slots))
    step = jax.jit(lambda q, c, t, pos: SOLUTION.decode_step(q, c, t, pos, mesh, s.heads),
                   donate_argnums=(1,))  # fmt: skip
    logits, cache = prefill(params, put(prompt, ("data", None)))
    got = []
    for k in range(serve.STEPS + 1):
        scale = np.abs(want[k]).max()
        np.testing.assert_allclose(np.asarray(logits, np.float64), want[k], atol=serve.ATOL * scale)
        got.append(np.asarray(logits).argmax(-1))
        if k < serve.STEPS:
            fed, pos = put(got[-1].astype(np.int32), ("data",)), put(np.int32(s.prompt + k), ())
            logits, cache = step(params, cache, fed, pos)
    np.testing.assert_array_equal(np.stack(got, 1), tokens)


def test_a_cache_written_one_position_late_is_said_where_and_how():
    """The decode hint reads the returned cache: its first wrong layer, where, and (only
    where every wrong entry holds another place's expected value) how they moved; a cache
    computed wrongly gets where only, and a right one nothing (both ways)."""
    import jax

    from grader.spec import Trial

    ex = serve.EXPLICIT[0]
    s, p, prompt = serve.draw(ex, np.random.default_rng(3))
    fed = np.random.default_rng(4).integers(0, serve.VOCAB, (s.batch, serve.STEPS))
    seq = np.concatenate([prompt, fed], axis=1)
    right = np.zeros(s.cache_shape, np.float32)
    right[:, :, :, : seq.shape[1]] = model.kv(p, seq, s.heads)
    late = right.copy()  # each new token's entries written at pos + 1: pos left 0
    late[:, :, :, s.prompt + 1 : seq.shape[1] + 1] = right[:, :, :, s.prompt : seq.shape[1]]
    late[:, :, :, s.prompt] = 0

    def said(cache):
        trial = Trial(ex, output={"cache": jax.device_put(cache)},
                      extra={"sizes": s, "params": p, "prompt": prompt, "fed": fed})  # fmt: skip
        return serve._cache_said(trial)

    hint = said(late)
    assert hint.startswith("The cache your last step returns first differs from the reference's")
    assert "in layer 0: wrong only along axis 2 (position) at indices 5–8" in hint, hint
    assert "each holds the element 1 place before it along axis 2 (position)" in hint, hint
    off = right.copy()
    off[:, :, :, s.prompt :] += 0.5 * (right[:, :, :, s.prompt :] != 0)
    computed = said(off)
    assert "in layer 0" in computed and "expected value of another index" not in computed
    assert said(right) is None


# ------------------------------------------------------------------ graded here


def test_the_reference_passes_prefill_and_decode_in_process(root):
    result = backends.grade_lesson(16, "l16_serving", root / "solutions",
                                 only=["prefill", "decode_step", "decode_step_gqa"], timeout=120, isolate=False)  # fmt: skip
    for er in result.exercises:
        assert er.status == Status.PASSED, (er.exercise, [c.to_dict() for c in er.checks])
        said = {c.name: c.message for c in er.checks}
        assert "2 per layer" in said["collectives"]
    decode = next(er for er in result.exercises if er.exercise == "decode_step")
    assert "in place" in {c.name for c in decode.checks}
    gqa = next(er for er in result.exercises if er.exercise == "decode_step_gqa")
    assert "all-to-alls" in {c.name: c.message for c in gqa.checks}["collectives"]


def test_the_worker_donates_what_the_exported_program_donates():
    """The grading worker compiles an exported program with the donation it declares
    (``tf.aliasing_output``), so the cache aliases there as where it was traced; a
    program that donates nothing is compiled without."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.exported import donated_argnums

    ex = serve.EXPLICIT[0]
    s, p, _ = serve.draw(ex, np.random.default_rng(0))
    mesh = jax.make_mesh(ex["mesh"], ("data", "model"))
    put = lambda x, spec: jax.device_put(x, NamedSharding(mesh, P(*spec)))  # noqa: E731
    args = (
        {k: put(v, serve.LAYOUT[k]) for k, v in p.items()},
        put(np.zeros(s.cache_shape, np.float32), serve.CACHE_SPEC),
        put(np.zeros(s.batch, np.int32), ("data",)),
        put(np.int32(s.prompt), ()),
    )

    def step(*a):
        return SOLUTION.decode_step(*a, mesh, s.heads)

    for donate, want in (((1,), (1,)), ((), ())):
        blob = jax.export.export(jax.jit(step, donate_argnums=donate), platforms=["cpu"])(*args)
        exported = jax.export.deserialize(blob.serialize())
        assert donated_argnums(exported) == want
    compiled = jax.jit(exported.call).trace(*args).lower().compile()
    assert compiled.memory_analysis().alias_size_in_bytes == 0
    blob = jax.export.export(jax.jit(step, donate_argnums=(1,)), platforms=["cpu"])(*args)
    exported = jax.export.deserialize(blob.serialize())
    compiled = jax.jit(exported.call, donate_argnums=(1,)).trace(*args).lower().compile()
    assert compiled.memory_analysis().alias_size_in_bytes == s.device_cache_bytes


# ------------------------------------------------------------------ bonus: speculative sampling


def test_the_reference_verification_emits_the_target_exactly():
    """The text's worked example (p = (0.75, 0.25), q = (0.5, 0.5)) and every explicit one."""
    from grader.expected.l16_serving import speculative as grader_side
    from grader.lessons.l16_serving import speculative as spec

    p, q = np.array([0.75, 0.25]), np.array([0.5, 0.5])
    assert grader_side.verify(p, q, 1)[0] == 0.5
    np.testing.assert_allclose(spec.emitted(q, [grader_side.verify(p, q, x) for x in (0, 1)]), p)
    for ex in spec.EXPLICIT:
        p, q = spec.distribution(ex["p"]), spec.distribution(ex["q"])
        answers = [
            grader_side.verify(p, q, x) if q[x] > 0 else (0.0, np.zeros_like(p))
            for x in range(len(p))
        ]
        assert np.abs(spec.emitted(q, answers) - p).max() <= spec.TOL


def test_expected_tokens_as_the_text_says():
    assert SOLUTION.expected_tokens(0.8, 4) == pytest.approx(3.3616)
    assert SOLUTION.expected_tokens(1.0, 3) == 4.0
    assert SOLUTION.expected_tokens(0.0, 5) == 1.0


def test_every_drawn_gqa_example_has_k_dividing_the_query_heads_and_below_model():
    """A drawn example the reference cannot compute is a grader fault: the strategy
    must draw only K | N = model · heads_per with K < model (where model > 1)."""
    from hypothesis import HealthCheck, given, settings

    from grader.spec import FULL

    seen = []

    @settings(max_examples=200, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(serve.gqa_strategy(FULL))
    def draw(ex):
        s = serve.sizes(ex)
        seen.append((s.model, s.heads, s.kv))
        assert s.heads % s.kv == 0 and (s.kv < s.model or s.model == 1), ex

    draw()
    assert any(m == 3 for m, _, _ in seen) and any(kv == 2 for _, _, kv in seen)


# ------------------------------------------------------------------ the real grading path

SALT = 0x16
"""One salt for both ways: the same data, so the same words."""


@pytest.mark.parametrize(
    "mistake",
    ["l16-cache-through-scan", "l16-mask-misses-the-new-token", "l16-cache-offloaded-to-host"],
)
def test_chained_decode_steps_grade_the_same_in_process_and_isolated(root, tmp_path, mistake):
    """decode_step's programs are chained (each step is fed the cache the last one returned,
    donated): through the student's process they are traced on decoys and replayed in the
    worker. The verdict — status, example, every check's message and hint — is the
    in-process one, for a copy made each step (the memory analysis with donation), the
    mask off by one (whose hint replays the steps so far) and the cache sent to host
    memory (the memory kind carried by the exported program); the solution passing that
    way is tests/test_isolation.py's."""
    from tests.mistakes.l16 import MISTAKES

    (m,) = [m for m in MISTAKES if m.id == mistake]
    source = m.source((root / "solutions" / "l16_serving.py").read_text())
    verdicts = []
    for name, chosen in (("here", backends.here(SALT)), ("isolated", backends.isolated(SALT))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "l16_serving.py").write_text(source)
        (er,) = backends.grade_lesson(16, "l16_serving", tmp_path / name, backend=chosen,
                                      only=["decode_step"], max_examples=0, timeout=120).exercises  # fmt: skip
        verdicts.append((er.status, er.example, er.error, er.hint,
                         [(c.name, c.passed, c.message, c.hint) for c in er.checks]))  # fmt: skip
    here, isolated = verdicts
    assert here[0] == Status.FAILED and m.check in {c[0] for c in here[4] if not c[1]}, here
    assert isolated == here


def test_the_head_split_hint_is_only_for_the_head_split_cache(root, tmp_path):
    """decode_step_gqa with the cache's batch axes named the other way round, (model, data):
    shard_map refuses it too, and the hint is shard_map's, not the heads' one."""
    source = (root / "solutions" / "l16_serving.py").read_text()
    old = "CACHE_GQA = P(None, None, (DATA, MODEL), None, None, None)"
    (tmp_path / "l16_serving.py").write_text(
        source.replace(old, old.replace("(DATA, MODEL)", "(MODEL, DATA)"))
    )
    (er,) = backends.grade_lesson(16, "l16_serving", tmp_path, only=["decode_step_gqa"],
                                  max_examples=0, timeout=60).exercises  # fmt: skip
    assert er.status == Status.ERROR, er
    assert "cannot be split" not in (er.hint or "") and "in_specs" in (er.hint or ""), er.hint


@pytest.mark.parametrize(
    "exercise, example",
    [("decode_step_gqa", {**serve.GQA_EXPLICIT[0], "mesh": (1, 1)}),
     ("decode_step_gqa", {**serve.GQA_EXPLICIT[0], "mesh": (2, 1)}),
     ("decode_step", {**serve.EXPLICIT[0], "mesh": (2, 1)})],
    ids=["gqa-1x1", "gqa-2x1", "mha-2x1"],
)  # fmt: skip
def test_one_model_device_has_nothing_to_sum_or_swap(root, exercise, example):
    """On one 'model' device (the fallback of a grade on fewer than 4 devices) XLA drops the
    all-reduces and all-to-alls over it: the reference passes with none. The all-to-all
    count expected 2·L there, and the reference failed on 1 to 3 devices."""
    (er,) = backends.grade_lesson(16, "l16_serving", root / "solutions", only=[exercise],
                                  example=example, timeout=60).exercises  # fmt: skip
    assert er.status == Status.PASSED, [c.to_dict() for c in er.checks]
    said = {c.name: c.message for c in er.checks}
    assert said["collectives"] == "no collective: one 'model' device, nothing to sum"


SIGNATURES = {
    "l16-cache-offloaded-to-host": "memory it came in",
    "l16-gqa-new-keys-moved-like-queries": "keys or values are moved",
    "l16-gqa-own-rows-moved-by-all-to-all": "each of [B/data, 1, N/model, Dh]",
    "l16-gqa-logits-summed": "the logits: they come from h",
    "l16-gqa-h-averaged-over-model": "Measured: all-reduces",
    "l16-cache-layer-rewritten-whole": "each layer of the cache is rewritten whole",
}
"""Each diagnosis's own words: the memory kind, the all-to-alls' two hints and the two
of too many all-reduces."""


@pytest.mark.parametrize(
    "mistake",
    [*SIGNATURES, "l16-cache-through-scan", "l16-cache-rewritten-with-where",
     "l16-cache-read-as-it-came", "l16-cache-stacked-from-its-layers",
     "l16-gqa-queries-gathered-not-swapped", "l16-mlp-psum-forgotten-unchecked"],
)  # fmt: skip
def test_each_serving_diagnosis_is_told_only_for_its_own_mistake(root, tmp_path, mistake):
    """Both ways: a mistake of SIGNATURES gets its words (the catalogue checks them in
    full) and none of the others'; the nearest mistakes of the same checks (a copy each
    step, the queries gathered, a psum forgotten) get none of them."""
    from tests.mistakes.l16 import MISTAKES

    (m,) = [m for m in MISTAKES if m.id == mistake]
    source = m.source((root / "solutions" / "l16_serving.py").read_text())
    (tmp_path / "l16_serving.py").write_text(source)
    (er,) = backends.grade_lesson(16, "l16_serving", tmp_path, only=[m.exercise],
                                  max_examples=0, timeout=60).exercises  # fmt: skip
    assert er.status == Status.FAILED, er
    said = " ".join(f"{c.message} {c.hint}" for c in er.checks) + f" {er.hint}"
    for other, words in SIGNATURES.items():
        assert (words in said) == (other == mistake), (other, said)


PYTHON_LOOP = '''
def decode_step(params, cache, tokens, pos, mesh, n_heads):
    """The layers in a Python loop, as Hugging Face's Flax models and gpt-fast write them."""
    n_layers, _, hdh = params["wq"].shape
    dh = hdh // n_heads

    def body(p, cache, tok, pos):
        h = (p["embed"][tok] + p["pos"][pos])[:, None]
        visible = (jnp.arange(cache.shape[3]) <= pos)[None]
        for i in range(n_layers):
            w = {k: p[k][i] for k in ("wq", "wk", "wv", "wo", "w_in", "w_out")}
            q, k, v = (_heads(h, w[n], dh) for n in ("wq", "wk", "wv"))
            cache = lax.dynamic_update_slice(cache, jnp.stack([k, v])[None], (i, 0, 0, pos, 0, 0))
            h = _block_out(h, _attend(q, cache[i, 0], cache[i, 1], visible), w)
        return h[:, 0] @ p["unembed"], cache

    return jax.shard_map(
        body, mesh=mesh, in_specs=(PARAMS, CACHE, P(DATA), P()), out_specs=(P(DATA, None), CACHE)
    )(params, cache, tokens, pos)
'''


def test_a_python_loop_over_layers_updates_the_cache_in_place(root, tmp_path):
    """Issue 47: unrolled, each layer's write is one slot in place, but XLA:CPU keeps the
    layers' reads alive, and a bound on temporaries refused it ("a copy of the cache is
    made each step": 9,220 temporary bytes against a cache of 8,192). What it writes is
    what is judged: the new token's keys and values, one update per layer."""
    source = (root / "solutions" / "l16_serving.py").read_text()
    (tmp_path / "l16_serving.py").write_text(source + PYTHON_LOOP)
    (er,) = backends.grade_lesson(16, "l16_serving", tmp_path, only=["decode_step"],
                                  max_examples=0, timeout=60).exercises  # fmt: skip
    assert er.status == Status.PASSED, [c.to_dict() for c in er.checks if not c.passed]
    said = {c.name: c.message for c in er.checks}["in place"]
    assert "written a step: the new token's keys and values" in said


@pytest.mark.parametrize(
    "mistake, words, not_words",
    [
        ("l16-speculative-residual-undefined-where-p-equals-q", "divides 0/0", "not clamped"),
        ("l16-speculative-accept-unclamped", "not clamped", "0/0"),
    ],
)
def test_an_undefined_residual_is_named_and_not_an_unclamped_acceptance(
    root, tmp_path, mistake, words, not_words
):
    """Issue 47: where p = q the residual max(p − q, 0)/Σ is 0/0. The report printed the
    emitted probabilities as [nan, nan, nan] ((1 − a)·nan with a = 1: a residual that is
    never drawn from) and named an unclamped acceptance, which min(1, p/q) = 1 cannot
    show there. Now the residual is named, and the unclamped acceptance only where it
    shows."""
    from tests.mistakes.l16 import MISTAKES

    (m,) = [m for m in MISTAKES if m.id == mistake]
    (tmp_path / "l16_serving.py").write_text(
        m.source((root / "solutions" / "l16_serving.py").read_text())
    )
    (er,) = backends.grade_lesson(16, "l16_serving", tmp_path, only=["verify_draft"],
                                  max_examples=0, timeout=60).exercises  # fmt: skip
    said = " ".join(f"{c.message} {c.hint}" for c in er.checks if not c.passed) + f" {er.hint}"
    assert er.status == Status.FAILED and words in said and not_words not in said, said
    assert "nan" not in {c.name: c.message for c in er.checks}["distribution"]


@pytest.mark.parametrize("same", [True, False])
def test_the_undefined_residuals_hint_is_shown_only_where_p_equals_q(same):
    """A residual that is not finite names 0/0 and the docstring's rule only where p = q
    (where max(p − q, 0) sums to 0); elsewhere that cannot be the cause: no hint."""
    from grader.lessons.l16_serving.speculative import PerToken
    from grader.spec import Trial

    p = np.array([0.5, 0.3, 0.2])
    q = p.copy() if same else np.array([0.2, 0.3, 0.5])
    nan = np.full(3, np.nan)
    result = PerToken()(Trial({}, output=[(0, 1.0, nan)], extra={"p": p, "q": q}))
    assert not result.passed
    assert ("divides 0/0" in result.message) == same and (result.hint is not None) == same
    assert same or result.message.endswith("not finite")


def test_a_decode_reading_holds_an_infinite_logit_to_itself_only():
    """The serving readings compare within 2e-5 of the largest |logit|: an infinite logit
    (a masked position) made that bound infinite, so any value matched (audit 67); it is
    now matched by the same infinity only, the finite ones as before (both ways)."""
    from grader.lessons.l16_serving.serve import _near

    want = np.array([[1.0, -np.inf, 2.0]])
    assert _near(want.copy(), want)
    assert not _near(np.array([[1.0, 5.0, 2.0]]), want)  # a finite value where -inf belongs
    assert not _near(np.array([[9.0, -np.inf, 2.0]]), want)  # off on a finite element
    assert _near(np.array([[1.0, -np.inf, 2.0 + 1e-6]]), want)
