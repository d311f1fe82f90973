"""A cost formula's one changed term, said exactly (issue 45 §3, :mod:`grader.checks.terms`):
each change of the battery named where it gives the answer and nowhere else, nothing said
where no single change does, and every lesson's term tree equal to its answer."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.checks import relate, terms
from grader.checks.scalar import RAISES, Scalar, close
from grader.checks.terms import Max, Sum, Term
from grader.spec import FULL, Trial

LAT, BW = Term("latency, 3·α", 3e-6), Term("bandwidth, 3·V/(N·W)", 7.5e-4)
RING = Sum(LAT, BW)
ROOF = Max(Term("math time, 2·m·k·n / peak", 2e-3), Term("memory time, bytes / bandwidth", 5e-3))
KNOWN = terms.squares(relate.quantities({"n": 4, "nbytes": 3 << 20}))


def _say(got, formula=RING, want=None):
    want = terms.value(formula) if want is None else want
    return terms.explain(got, want, formula, KNOWN, close)


def test_a_term_times_one_of_the_examples_sizes_is_named_with_the_term_and_the_size():
    said = _say(LAT.value + 4 * BW.value)
    assert said.startswith("Your value 0.003003 is exactly the formula with its bandwidth term")
    assert "(3·V/(N·W) = 0.00075 s) multiplied by n = 4" in said
    said = _say(LAT.value + 16 * BW.value)
    assert "bandwidth term" in said and "the square of n = 4 (16)" in said


def test_a_term_left_out_or_alone_is_named():
    assert "without its latency term (3·α = 3e-06 s)" in _say(BW.value)
    assert _say(5e-3, ROOF) is None  # the memory term alone is the answer itself
    assert "without its memory time term (bytes / bandwidth = 0.005 s)." in _say(2e-3, ROOF)
    three = Sum(LAT, BW, Term("start-up, once", 1e-3))
    assert "reduced to its bandwidth term (3·V/(N·W) = 0.00075 s) alone" in _say(BW.value, three)


def test_a_max_for_a_sum_and_a_sum_for_a_max_are_named():
    assert (
        "with its math time and memory time terms added, where the formula takes the larger"
        in _say(7e-3, ROOF)
    )
    assert (
        "with only the larger of its latency and bandwidth terms, where the formula adds them"
        in _say(BW.value)
    )


def test_nothing_is_said_where_no_single_change_gives_the_value():
    assert _say(LAT.value + 1.37 * BW.value) is None  # no size of the example is 1.37
    assert _say(7 * LAT.value + 5 * BW.value) is None  # two terms changed
    assert _say(terms.value(RING)) is None  # the answer itself
    assert _say(float("nan")) is None and _say(True) is None


def test_a_tree_that_does_not_give_the_answer_says_nothing():
    """The guard: a term tree out of step with the answer would name false causes."""
    assert _say(LAT.value + 4 * BW.value, want=terms.value(RING) * 1.01) is None


def test_every_size_equal_to_the_factor_is_named_not_only_the_first():
    known = terms.squares(relate.quantities({"n": 2, "rows": 2}))
    said = terms.explain(LAT.value + 2 * BW.value, terms.value(RING), RING, known, close)
    assert "multiplied by 2 (or n = 2, or rows = 2: equal on this example)" in said  # 2 leads


def test_a_change_that_gives_another_value_on_a_probe_is_not_said():
    """A probe (the student's answer on another fixed example) parts two readings equal
    here: the bandwidth left out gives the latency alone here, and there too only where
    the student's answer there is it (both ways); a probe without a formula cannot tell."""
    lat2, bw2 = Term("latency, 3·α", 5e-6), Term("bandwidth, 3·V/(N·W)", 2e-3)
    there = Sum(lat2, bw2)
    known = terms.squares(relate.quantities({"n": 4, "nbytes": 3 << 20}))
    want = terms.value(RING)
    kept = terms.explain(LAT.value, want, RING, KNOWN, close,
                         [terms.Probe(lat2.value, there, known)])  # fmt: skip
    assert "without its bandwidth term" in kept
    parted = terms.explain(LAT.value, want, RING, KNOWN, close,
                           [terms.Probe(lat2.value + 0.5 * bw2.value, there, known)])  # fmt: skip
    assert parted is None
    blind = terms.explain(LAT.value, want, RING, KNOWN, close, [terms.Probe(1.0, None, known)])
    assert "without its bandwidth term" in blind


def test_a_probe_keeps_only_the_equal_sizes_that_give_its_answer_too():
    """rows = 2 and n = 2 and 2 are one factor here; on a probe where rows = 3 and n = 2,
    a bandwidth term doubled there says n = 2 and 2, not rows."""
    known = terms.squares(relate.quantities({"n": 2, "rows": 2}))
    there = terms.squares(relate.quantities({"n": 2, "rows": 3}))
    lat2, bw2 = Term("latency, 3·α", 5e-6), Term("bandwidth, 3·V/(N·W)", 2e-3)
    probe = terms.Probe(lat2.value + 2 * bw2.value, Sum(lat2, bw2), there)
    said = terms.explain(LAT.value + 2 * BW.value, terms.value(RING), RING, known, close, [probe])
    assert "multiplied by 2 (or n = 2: equal on this example)" in said, said
    assert "rows" not in said
    probe = terms.Probe(lat2.value + 3 * bw2.value, Sum(lat2, bw2), there)
    said = terms.explain(LAT.value + 2 * BW.value, terms.value(RING), RING, known, close, [probe])
    assert "multiplied by rows = 2." in said, said


def _decode_hint(step_time) -> str:
    """decode_step_time graded on its first fixed example (batch 1, where reading the
    weights takes longest) as the exercise's own run and check do it: the probes too."""
    spec = importlib.import_module("grader.lessons.l16_serving.spec")
    s = spec.DECODE_TIME
    ex = s.examples(FULL)[0]
    trial = s.run(None, step_time, ex)
    r = s.check()(trial)
    assert not r.passed
    return r.hint or ""


def test_a_roofline_that_wraps_the_caches_is_not_told_they_are_missing():
    """max(caches, weights' FLOPs, weights' read) gives the weights' time on batch 1,
    as caches left out would; at batch 16 the caches set it: the probes part them (both
    ways — the caches truly left out keep their catalogued words)."""
    from solutions import l16_serving as sol

    def parts(m, s, batch, context, itemsize):
        bandwidth = s.chips * s.hbm_bandwidth
        caches = batch * sol.kv_cache_bytes(m, context, itemsize) / bandwidth
        p = sol.param_count(m)
        return caches, max(2.0 * batch * p / (s.chips * s.peak_flops), p * itemsize / bandwidth)

    def overlapped(*args):
        return max(parts(*args))

    def without_caches(*args):
        return parts(*args)[1]

    hint = _decode_hint(overlapped)
    assert "caches are missing" not in hint and "without its caches" not in hint, hint
    assert "only the larger of its caches read, weights' FLOPs, weights' read terms" in hint
    assert "caches are missing" in _decode_hint(without_caches)


# ------------------------------------------------------------ every lesson's trees


def _scalars() -> list[tuple[str, Scalar]]:
    found = []
    for module in ("l03_cost_model", "l13_multi_host", "l14_planning", "l16_serving"):
        spec = importlib.import_module(f"grader.lessons.{module}.spec")
        found += [(f"{module}.{s.name}", s) for s in vars(spec).values()
                  if isinstance(s, Scalar) and s.terms is not None]  # fmt: skip
    return found


SCALARS = _scalars()


def test_the_cost_models_have_their_trees():
    assert {name for name, _ in SCALARS} >= {
        "l03_cost_model.matmul_time", "l03_cost_model.collective_time",
        "l13_multi_host.allreduce_time", "l16_serving.prefill_time",
        "l16_serving.decode_step_time", "l14_planning.param_count",
    }  # fmt: skip


def _agrees(s: Scalar, ex: dict) -> None:
    want = s.want(ex)
    tree = s.terms(**ex)
    if want == RAISES or tree is None:
        assert want == RAISES or want == 0.0, (s.name, ex, want)
        return
    assert close(terms.value(tree), want), (s.name, ex, terms.value(tree), want)


@pytest.mark.parametrize("name,scalar", SCALARS, ids=[n for n, _ in SCALARS])
def test_a_lessons_tree_gives_its_answer_on_every_fixed_example(name, scalar):
    for ex in scalar.examples(FULL):
        _agrees(scalar, ex)


@pytest.mark.parametrize("name,scalar", SCALARS, ids=[n for n, _ in SCALARS])
@settings(max_examples=40, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])  # fmt: skip
@given(data=st.data())
def test_a_lessons_tree_gives_its_answer_on_drawn_examples(name, scalar, data):
    _agrees(scalar, data.draw(scalar.draw(FULL)))


def test_the_check_says_the_change_where_no_suspect_matches_and_keeps_a_suspects_words():
    """Through the exercise's own check: the suspect's words where one matches (all-reduce
    timed as an all-gather), the term where none does (its bandwidth halved)."""
    spec = importlib.import_module("grader.lessons.l03_cost_model.spec")
    s = spec.COLLECTIVE_TIME
    ex = {"kind": "all_reduce", "nbytes": 1 << 20, "n": 4, "link": "nvlink4"}  # fixed, third
    tree, want = s.terms(**ex), s.want(ex)
    latency, bandwidth = (t.value for t in tree.parts)
    check = s.check()
    halved = check(Trial(ex, output=latency + bandwidth / 2, expected=want,
                         extra={"call": "c", "formula": "f"}))  # fmt: skip
    assert not halved.passed and "bandwidth term" in halved.hint
    assert "multiplied by ½ (or 1/(√(n = 4)): equal on this example)" in halved.hint
    as_gather = check(Trial(ex, output=(latency + bandwidth) / 2, expected=want,
                            extra={"call": "c", "formula": "f"}))  # fmt: skip
    assert "reduce-scatter followed by an all-gather" in as_gather.hint
    assert "exactly the formula" not in as_gather.hint


def test_a_parameter_count_whose_embeddings_are_counted_every_layer_is_told_so():
    """param_count's terms (an int answer): the embeddings multiplied by the number of
    layers is told which term and which of the model's counts; an answer two terms off
    gets no such sentence (both ways)."""
    spec = importlib.import_module("grader.lessons.l14_planning.spec")
    s = spec.PARAM_COUNT
    ex = s.examples(None)[0]  # LLaMA-3-8B
    embeddings, layers = (int(t.value) for t in s.terms(**ex).parts)
    check = s.check()

    def told(answer: int) -> str:
        r = check(Trial(ex, output=answer, expected=s.want(ex),
                        extra={"call": "c", "formula": "f"}))  # fmt: skip
        assert not r.passed
        return r.hint or ""

    hint = told(32 * embeddings + layers)
    assert "embeddings term (2·D·V = " in hint and "multiplied by L = layers (32)" in hint, hint
    assert "exactly the formula" not in told(3 * embeddings + 2 * layers)


def test_another_kind_of_the_fixed_examples_is_said_where_it_gives_the_answer():
    """collective_time for a reduce-scatter timed as an all-reduce: the answer the formula
    gives with kind = 'all_reduce' (a value the fixed examples hold) is said; an answer
    a little off is not (both ways)."""
    spec = importlib.import_module("grader.lessons.l03_cost_model.spec")
    s = spec.COLLECTIVE_TIME
    ex = {"kind": "reduce_scatter", "nbytes": 1 << 20, "n": 4, "link": "nvlink4"}
    check = s.check()
    as_all_reduce = s.want({**ex, "kind": "all_reduce"})
    r = check(Trial(ex, output=as_all_reduce, expected=s.want(ex),
                    extra={"call": "c", "formula": "f"}))  # fmt: skip
    assert "with kind = 'all_reduce' in place of 'reduce_scatter'" in (r.hint or ""), r.hint
    r = check(Trial(ex, output=as_all_reduce * 1.01, expected=s.want(ex),
                    extra={"call": "c", "formula": "f"}))  # fmt: skip
    assert "kind = " not in (r.hint or "")


def test_train_flops_with_the_attention_of_the_forward_pass_alone_is_told_its_term():
    """The attention term a third of itself (the forward alone): the term and the 3 of a
    training step; the weights' term a third gets that term, not attention's (both ways)."""
    spec = importlib.import_module("grader.lessons.l14_planning.spec")
    s = spec.TRAIN_FLOPS
    ex = s.examples(FULL)[0]
    weights, attention = (t.value for t in s.terms(**ex).parts)
    check = s.check()

    def told(answer: float) -> str:
        r = check(Trial(ex, output=answer, expected=s.want(ex),
                        extra={"call": "c", "formula": "f"}))  # fmt: skip
        return r.hint or ""

    hint = told(weights + attention / 3)
    assert "attention term (12·L·N·H·S·T" in hint and "1/(3 (a training step" in hint, hint
    hint = told(weights / 3 + attention)
    assert "weights term (6·P·T" in hint and "attention term" not in hint, hint


def _allreduce_time(in_host, cross_host):
    """lesson 13's allreduce_time spec, its first fixed example (hierarchical, 16 hosts of
    8), and a student's function that is right on a flat ring and, hierarchical, adds
    ``in_host(nbytes, local, ici, dcn)`` and ``cross_host(nbytes, hosts, local, ici, dcn)``."""
    spec = importlib.import_module("grader.lessons.l13_multi_host.spec")
    s = next(v for v in vars(spec).values() if getattr(v, "name", None) == "allreduce_time")

    def fn(nbytes, hosts, local, ici, dcn, hierarchical):
        if not hierarchical:
            n = hosts * local
            return 2 * (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)
        return in_host(nbytes, hosts, local, ici, dcn) + cross_host(nbytes, hosts, local, ici, dcn)

    return s, s.examples(FULL)[0], fn


def test_a_change_of_the_fields_is_said_only_where_the_probes_show_it_too():
    """allreduce_time's hierarchical branch with the two links swapped: ici and dcn
    swapped is said (on the probe, 4 hosts of 1 device, swapping them gives the answer
    there too); the same answer here with a probe answer no swap gives is not (both ways:
    the change is moved to the probe through the hidden reference's own parameters)."""
    s, ex, swapped = _allreduce_time(
        lambda n, h, loc, ici, dcn: 2 * (loc - 1) / loc * n / dcn,
        lambda n, h, loc, ici, dcn: 2 * (h - 1) / h * (n / loc) / ici,
    )

    def here_only(nbytes, hosts, local, ici, dcn, hierarchical):
        return swapped(nbytes, hosts, local, ici, dcn, hierarchical) * (1.5 if local == 1 else 1)

    for fn, said in ((swapped, True), (here_only, False)):
        r = s.check()(s.run(None, fn, ex))
        assert not r.passed
        assert ("with ici and dcn swapped" in (r.hint or "")) is said, (fn.__name__, r.hint)


def test_only_times_have_the_sum_max_slip():
    """Times overlap, so a sum taken as a max (or back) is a slip only among them; counts
    (parameters, FLOPs, bytes) always add: no "only the larger" change for them (both
    ways)."""
    from grader.checks.terms import Sum, Term, changes

    counts = [c.said for c in changes(Sum(Term("a", 1.0, "FLOPs"), Term("b", 2.0, "FLOPs")), [])]
    times = [c.said for c in changes(Sum(Term("a", 1.0, "s"), Term("b", 2.0, "s")), [])]
    assert not any("larger" in said for said in counts), counts
    assert any("only the larger of its a and b terms" in said for said in times), times


def test_a_cross_host_part_per_host_is_its_term_times_local_over_hosts():
    """allreduce_time's cross-host part n/H where n/L belongs: that term times L/H, said
    (and kept by the probes, whose L/H differ); the in-host term times the same factor is
    not that term (both ways)."""
    in_host = lambda n, h, loc, ici, dcn: 2 * (loc - 1) / loc * n / ici  # noqa: E731
    cross = lambda n, h, loc, ici, dcn: 2 * (h - 1) / h * (n / loc) / dcn  # noqa: E731
    s, ex, per_host = _allreduce_time(in_host, lambda n, h, loc, ici, dcn: cross(n, h, h, ici, dcn))
    r = s.check()(s.run(None, per_host, ex))
    assert "its cross-host term" in r.hint and "multiplied by L/H = local/hosts (8/16)" in r.hint
    _, _, scaled = _allreduce_time(lambda n, h, loc, *links: in_host(n, h, loc, *links) * loc / h,
                                   cross)  # fmt: skip
    r = s.check()(s.run(None, scaled, ex))
    assert "cross-host term" not in (r.hint or ""), r.hint
