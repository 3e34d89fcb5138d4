"""Scoring's gold set (issue 29 item 5, issue 33 item 3): listing a gold set is never much slower than counting it,
and the scorer answers each run's best match by the cheaper exact route (docs/solvers.md, "Scoring: listing or the
symbolic best match"), with the same results either way.

Costs are held by events, not by time: the number of forward passes a query runs."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from gf01_formal.instances.io import load_set
from gf01_formal.instances.sources import InstanceOptions, open_instance
from gf01_formal.scoring import scores
from gf01_formal.scoring.golds import GoldList
from gf01_formal.scoring.scores import Scorer
from solvers import api
from solvers.forward import Forward
from solvers.results import best_match_among

EXAMPLES = Path(__file__).resolve().parent.parent / "gf01_formal" / "examples"


@pytest.fixture()
def passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The forward passes run while the test runs, counted; past 12 the test stops (a runaway runs one per step)."""
    ran = [0]
    real = Forward.run

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        ran[0] += 1
        assert ran[0] <= 12, "more than 12 forward passes"
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Forward, "run", counted)
    yield ran


def long_arbiter(steps: int = 800):  # type: ignore[no-untyped-def]
    """The bundled round-robin arbiter left idle for ``steps`` steps, effect g0 at the last: |M(I)| = 1 (request r0
    at the last step)."""
    options = InstanceOptions(trace=";".join(["!r0&!r1"] * steps), effect="g0")
    return open_instance(EXAMPLES / "arbiter.hoa", None, options)[1]


def test_listing_a_gold_set_of_one_member_costs_about_a_count(passes: list[int]) -> None:
    problem = long_arbiter()
    assert api.count(problem, None) == 1
    counted = passes[0]
    golds = Scorer(problem).gold_set()
    assert golds == [((799, 0, 1),)]
    # A few passes (the count, then one listing it): not one pass per empty layer after the last member (800).
    assert passes[0] - counted <= 4 * counted


def certificates(problem, count: int, seed: int) -> list[tuple]:  # type: ignore[no-untyped-def]
    """``count`` seeded random well-formed certificates of 0-5 atoms (some valid: the oracle's, and its atoms
    dropped one at a time)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n_in, steps = problem.system.num_inputs, problem.horizon
    out = []
    for _ in range(count):
        atoms = {(int(rng.integers(steps)), int(rng.integers(n_in))): int(rng.integers(2))
                 for _ in range(int(rng.integers(0, 6)))}
        out.append(tuple(sorted((t, i, v) for (t, i), v in atoms.items())))
    oracle = api.oracle(problem, None)
    if oracle is not None:
        out += [oracle.certificate, *(oracle.certificate[:k] + oracle.certificate[k + 1:]
                                      for k in range(len(oracle.certificate)))]
    return out


def problems() -> list[tuple[str, object]]:
    bundle = load_set(EXAMPLES / "check_bundle.json")
    out = [(i.instance_id, bundle.problem(i)) for i in bundle.instances]
    one = load_set(EXAMPLES / "arbiter_priority.json")
    out.append(("arbiter_priority", one.problem(one.instances[0])))
    out.append(("arbiter-40", long_arbiter(40)))
    return out


def fingerprint(rows: list[dict]) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


#: The fingerprint of the scores below as scoring gave them before the listing rule (commit 42b69a6: every gold set
#: of at most 20,000 members listed, each run ranked over it by best_match_among).
BEFORE = {"M": "48c49ea29366743e30e4ced14a53eb30e41fff85b088d8990999c272568501b2",
          "MB": "095441430cd4e360e14c14690dae17f1067a6cff8c73eb75836d0e69ab3622a4"}


@pytest.mark.parametrize("gold_set", ["M", "MB"])
def test_scores_are_those_of_the_complete_listing_whichever_route(gold_set: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every route of the scorer (own gold, one-pass listing, symbolic query, listing after queries) gives the best
    match that ranking the complete listing gives, and the scores' fingerprint is the one from before the rule."""
    rows = []
    for name, problem in problems():
        budget = None if gold_set == "M" else problem.budget_t
        golds = list(api.enumerate_certificates(problem, budget))
        certs = certificates(problem, 12, seed=len(rows))
        want = [best_match_among(problem, c, golds) for c in certs]
        ranked = GoldList(problem, golds)
        assert [ranked.best_match(c) for c in certs] == want, name
        for per_query in (scores.MEMBERS_PER_QUERY, 10**9):  # as configured; and never listed (symbolic only)
            monkeypatch.setattr(scores, "MEMBERS_PER_QUERY", per_query)
            monkeypatch.setattr(api, "ONE_PASS_CELLS", api.ONE_PASS_CELLS if per_query < 10**9 else 0)
            scorer = Scorer(problem, gold_set_name=gold_set)
            got = [scorer.score(c) for c in certs]
            assert [scorer.best_match(c) for c in certs] == want, (name, per_query)
        rows += [{"instance": name, "certificate": list(c), **s.to_json()} for c, s in zip(certs, got, strict=True)]
    assert fingerprint(rows) == BEFORE[gold_set]


def test_batch_verify_memory_is_flat_in_the_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gf01 verify --certs --best-match`` holds one bounded chunk: doubling the batch (150 -> 300 certificates
    at T = 64) leaves the peak of traced memory where it was (it grew with the batch up to 4,096 lines a chunk).

    The bound on a chunk's simulated steps is lowered to 2^15 (from 2^21; about 146 of these lines) so that both
    batches span several chunks (2 and 3) at a size that takes two seconds, not half a minute: chunked by lines alone
    (its 4,096 lines), the larger batch's peak is 2.0 times the smaller's; streamed, the two are within a few
    percent (1.03). Under tracemalloc each certificate costs about 4 ms: 600 and 1,200 lines at 2^17 measured the
    same (0.97 streamed, 2.04 by lines) in 5.7 s of CPU."""
    from gf01_formal.scoring import batch

    monkeypatch.setattr(batch, "CELLS", 1 << 15)
    options = InstanceOptions(trace=";".join(["!r0&!r1"] * 64), effect="g0")
    rng = np.random.Generator(np.random.PCG64(5))
    lines = [json.dumps({"certificate": [[int(rng.integers(64)), f"r{int(rng.integers(2))}", int(rng.integers(2))]
                                         for _ in range(int(rng.integers(1, 5)))]}) for _ in range(300)]

    def peak(n: int) -> int:
        tracemalloc.start()
        try:
            records = batch.verify_lines(str(EXAMPLES / "arbiter.hoa"), lambda: iter(lines[:n]), options,
                                         file="certs.jsonl", best_match=True)
            done = sum(1 for r in records if r["ap_f1"] is not None)
            assert done == n
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(150), peak(300)
    assert large <= small * 1.15, (small, large)


def test_enumerating_m_of_i_past_its_last_member_runs_a_few_passes(passes: list[int]) -> None:
    """`gf01 enumerate --unbounded` of the 800-step arbiter listed its one member, then ran a pass for each empty
    layer |TS| = 2 .. 800 (each over 800 steps: minutes); a pass under the whole budget names the layers left."""
    problem = long_arbiter()
    assert list(api.enumerate_certificates(problem, None)) == [((799, 0, 1),)]
    assert passes[0] <= 4
    # The same stop on a bounded enumeration, and nothing lost where the layers are full (arbiter at 40 steps).
    assert list(api.enumerate_certificates(problem, 50)) == [((799, 0, 1),)]


def test_enumerating_skips_no_member_where_layers_are_full() -> None:
    """The layers named by the whole-budget pass lose nothing: every member of M(I) and M_B(I), in canonical order,
    on machines whose members spread over several sizes."""
    for name, problem in problems():
        for budget in (None, problem.budget_t):
            listed = list(api.enumerate_certificates(problem, budget))
            assert len(listed) == api.count(problem, budget), name
            assert listed == sorted(listed, key=lambda c: (len({t for t, _, _ in c}), len(c),
                                                           [(t, problem.system.inputs[i], v) for t, i, v in c])), name


def test_small_systems_score_in_process_and_large_ones_in_a_child() -> None:
    # A guarded query under isolating limits forks a child (about 17 ms); a small table system's scoring queries run
    # in the scorer's process, checked at each step, and give the same scores.
    from gf01_formal.runs.scoring_limit import run_limits

    small = long_arbiter(6)
    large = long_arbiter(800)
    limits = run_limits(60.0, 2048.0)
    assert limits.isolate and not scores._in_process(small, limits).isolate
    assert scores._in_process(large, limits) is limits
    assert scores._in_process(small, None) is None
    cert = certificates(small, 3, 5)
    inline = [Scorer(small, limits=limits).score(c) for c in cert]
    assert inline == [Scorer(small).score(c) for c in cert]
