"""The forward backend beyond the contract suite: more random problems against the brute-force twin, counts past
2^63, canonical and lazy enumeration, uniform samples, and the time cap as a promise for every backend."""

from __future__ import annotations

import dataclasses
import itertools
import math
import multiprocessing
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
from backend_common import arbiter_view, history_problem
from brute import brute_best_match, brute_valid_set
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.random import PCG64, Generator
from strategies import certificates, problems

from encoders.problem import Problem
from gf01_formal.cli import main
from hoa.label import Var, parse_named
from hoa.mealy import MealyView
from hoa.writer import write
from solvers import api, backward_half, class_blocks, forward, forward_pass, key_counts, layers, quotient
from solvers.canonical import flips_to_atoms, order_key
from solvers.limits import Limits, Unknown
from solvers.results import BestMatch


def parity_machine(n_in: int, T: int) -> Problem:
    """Two states holding the parity of every input bit seen so far; output o = the parity after this step.

    Base trace all zeros, effect o at t* = T - 1 (hard): Suff(F) iff |F| is odd, and then every removal is even, so
    M(I) is exactly the odd-size flip sets: |M(I)| = 2^(T n_in - 1).
    """
    size = 1 << n_in
    par = [bin(x).count("1") & 1 for x in range(size)]
    nxt = [[p ^ q for p in par] for q in (0, 1)]
    view = MealyView.from_table(tuple(f"a{k}" for k in range(n_in)), ("o",), nxt, nxt)
    return Problem(view, (0,) * T, Var(0), T - 1)


def random_table(states: int, inputs: int, steps: int, seed: int) -> Problem:
    """A random Mealy table, one output, random base trace, effect o at t* = T - 1 (hard)."""
    rng = Generator(PCG64(seed))
    nxt = rng.integers(0, states, size=(states, 1 << inputs))
    out = rng.integers(0, 2, size=(states, 1 << inputs))
    view = MealyView.from_table(tuple(f"i{k}" for k in range(inputs)), ("o",), nxt, out)
    trace = tuple(int(x) for x in rng.integers(0, 1 << inputs, size=steps))
    return Problem(view, trace, Var(0), steps - 1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=11, max_states=5), data=st.data())
def test_count_enumerate_sample_match_brute(problem: Problem, data: st.DataObject) -> None:
    budget = data.draw(st.one_of(st.none(), st.integers(0, problem.horizon)))
    expected = brute_valid_set(problem, budget)
    assert forward.count(problem, budget) == len(expected)
    assert list(forward.enumerate_certificates(problem, budget)) == expected
    k = data.draw(st.integers(0, 4))
    got = forward.sample(problem, budget, k, seed=data.draw(st.integers(0, 3)))
    assert len(got) == min(k, len(expected)) and len(set(got)) == len(got)
    assert set(got) <= set(expected)
    assert got == sorted(got, key=lambda c: order_key(problem, c))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=11, max_states=5), data=st.data())
def test_count_by_class_blocks_matches_brute(problem: Problem, data: st.DataObject) -> None:
    # Every step the class blocks can take takes them (they are used from BLOCK_MIN pairs on otherwise), with the
    # image tables of every letter or (MAX_IMAGE_TABLE 0, as at 16 inputs) of the letters the step reaches only.
    budget = data.draw(st.one_of(st.none(), st.integers(0, problem.horizon)))
    expected = len(brute_valid_set(problem, budget))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(forward_pass, "BLOCK_MIN", 0)
        mp.setattr(quotient, "IMAGE_PAYOFF", 0)
        mp.setattr(quotient, "MAX_IMAGE_TABLE", data.draw(st.sampled_from((0, quotient.MAX_IMAGE_TABLE))))
        taken: list[bool] = []
        step_blocks = forward_pass.Forward._step_blocks

        def spy(self: forward_pass.Forward, *args: object) -> object:
            got = step_blocks(self, *args)
            taken.append(got is not None)
            return got

        mp.setattr(forward_pass.Forward, "_step_blocks", spy)
        assert forward.count(problem, budget) == expected
    assert taken and all(taken)


def test_class_blocks_and_pairs_agree_on_wide_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    # Thousands of keys a step, budgets that bind and do not, counts past the limbs: both expansions, same counts.
    monkeypatch.setattr(key_counts, "OBJECT_LIMBS", 4)  # Python ints from 224 bits on (the default: about 4,000)
    for seed, inputs, steps, budget in ((1, 4, 60, None), (2, 5, 30, 4), (3, 6, 16, 9), (4, 5, 120, None)):
        problem = random_table(6, inputs, steps, seed)
        monkeypatch.setattr(forward_pass, "BLOCKS", False)
        pairs = forward.count(problem, budget)
        monkeypatch.setattr(forward_pass, "BLOCKS", True)
        monkeypatch.setattr(forward_pass, "BLOCK_MIN", 0)
        assert forward.count(problem, budget) == pairs > 0
    assert pairs.bit_length() > key_counts.LIMB * key_counts.OBJECT_LIMBS  # the last instance's counts pass the limbs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=11, max_states=5), data=st.data())
def test_count_in_pieces_matches_brute(problem: Problem, data: st.DataObject) -> None:
    # Class blocks whose steps are summed in pieces of a few pairs (and masks copied a few at a time): same counts.
    budget = data.draw(st.one_of(st.none(), st.integers(0, problem.horizon)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(forward_pass, "BLOCK_MIN", 0)
        mp.setattr(quotient, "IMAGE_PAYOFF", 0)
        mp.setattr(forward_pass, "PIECE", data.draw(st.sampled_from((1, 2, 7))))
        mp.setattr(class_blocks, "MASKS", data.draw(st.sampled_from((1, 3, class_blocks.MASKS))))
        mp.setattr(quotient, "MAX_IMAGE_TABLE", data.draw(st.sampled_from((0, quotient.MAX_IMAGE_TABLE))))
        # Or pair by pair, in pieces likewise (a piece ends after a chunk of keys: chunks of a few pairs).
        mp.setattr(forward_pass, "BLOCKS", data.draw(st.booleans()))
        mp.setattr(forward_pass, "CHUNK", data.draw(st.sampled_from((1, 8, forward_pass.CHUNK))))
        assert forward.count(problem, budget) == len(brute_valid_set(problem, budget))


@pytest.fixture
def merged(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of pieces merged at the end of each step split into pieces (``key_counts.side_by_side``), as the
    counts run."""
    merges: list[int] = []
    side_by_side = key_counts.side_by_side

    def spy(parts: list[np.ndarray]) -> np.ndarray:
        merges.append(len(parts))
        return side_by_side(parts)

    monkeypatch.setattr(key_counts, "side_by_side", spy)
    return merges


def test_pieces_and_one_piece_agree_on_wide_instances(monkeypatch: pytest.MonkeyPatch, merged: list[int]) -> None:
    # Thousands of keys a step, budgets that bind and do not, pieces summed in one and two limbs, a count past the
    # limbs (80 steps: 253 bits; its wide steps are the backward half's since MEET, so no piece here holds Python
    # ints): a step in pieces counts what the step in one piece counts.
    monkeypatch.setattr(key_counts, "OBJECT_LIMBS", 4)
    monkeypatch.setattr(forward_pass, "BLOCK_MIN", 0)
    monkeypatch.setattr(quotient, "IMAGE_PAYOFF", 0)
    defaults = forward_pass.PIECE, class_blocks.MASKS
    for seed, inputs, steps, budget in ((1, 4, 60, None), (2, 5, 30, 4), (3, 6, 16, 9), (4, 5, 80, None)):
        problem = random_table(6, inputs, steps, seed)
        one = forward.count(problem, budget)
        assert not merged
        # Pieces of one pair (a third of the test) but on the 80-step instance: there they failed no mutation that
        # the 60-step one's or the larger pieces did not (docs/performance.md, ninth pass).
        for piece, masks in ((1, 2), (97, 5), (300, class_blocks.MASKS))[steps == 80:]:
            monkeypatch.setattr(forward_pass, "PIECE", piece)
            monkeypatch.setattr(class_blocks, "MASKS", masks)
            assert forward.count(problem, budget) == one > 0
            assert merged and max(merged) > 1, (seed, piece, merged)
            merged.clear()
        monkeypatch.setattr(forward_pass, "PIECE", defaults[0])
        monkeypatch.setattr(class_blocks, "MASKS", defaults[1])
    assert one.bit_length() > key_counts.LIMB * key_counts.OBJECT_LIMBS


def test_pair_by_pair_pieces_and_one_piece_agree(monkeypatch: pytest.MonkeyPatch, merged: list[int]) -> None:
    # The pair-by-pair path of a plain count in pieces of 1 and 300 pairs against one piece: budgets that bind
    # and do not, and every piece's groups merged at the end of its step (a piece ends after a chunk of keys).
    monkeypatch.setattr(forward_pass, "BLOCKS", False)
    monkeypatch.setattr(forward_pass, "CHUNK", 128)
    for seed, inputs, steps, budget in ((1, 4, 30, None), (2, 5, 30, 4)):
        problem = random_table(6, inputs, steps, seed)
        one = forward.count(problem, budget)
        assert not merged
        for piece in (1, 300):
            monkeypatch.setattr(forward_pass, "PIECE", piece)
            assert forward.count(problem, budget) == one > 0
            assert merged and max(merged) > 1, (seed, piece, merged)
            merged.clear()
        monkeypatch.setattr(forward_pass, "PIECE", 1 << 21)


def test_image_tables_are_their_definition() -> None:
    # img[x, j, v] is the union of next(c, x) over the classes c = 8j + k whose bit k is set in byte v, die[x, j, v]
    # whether one of them shows the effect under x (built bit by bit; here class by class over the 256 values).
    checked = 0
    for seed, states, inputs in ((1, 6, 4), (2, 13, 3), (3, 16, 5), (4, 70, 3)):
        fw = forward_pass.Forward(random_table(states, inputs, 12, seed))
        for t in range(10):
            got = fw.tables._images(t)
            if got is None:
                continue
            nxt, hit = fw.quo.nxt[t], fw.quo.hit[t]
            size, words = nxt.shape[0], fw.tables.words
            img = np.zeros((fw.quo.letters, (size + 7) // 8, 256, words), dtype=np.uint64)
            die = np.zeros(img.shape[:3], dtype=bool)
            hot = quotient.onehot(nxt.T, words)
            for c in range(size):
                sel = ((np.arange(256) >> (c % 8)) & 1).astype(bool)
                img[:, c // 8, sel, :] |= hot[:, c, None, :]
                die[:, c // 8, sel] |= hit[c, :, None]
            assert (got[0] == img).all() and (got[1] == die).all()
            checked += size > 8
            if size <= 63:
                # The class blocks' folded tables, of every letter and of a few: the same images, hopeless classes
                # cleared, bit 63 where one shows the effect.
                drop = quotient.class_set(fw.quo.hopeless[t + 1], 1)[0]
                want = np.where(die, np.uint64(1) << np.uint64(63), np.uint64(0)) | (img[..., 0] & ~drop)
                assert (quotient.fold_images(nxt, hit, drop) == want.transpose(1, 0, 2)).all()
                few = np.array([0, fw.quo.letters - 1])
                assert (quotient.fold_images(nxt[:, few], hit[:, few], drop) == want[few].transpose(1, 0, 2)).all()
    assert checked


def test_count_beyond_2_to_the_63() -> None:
    p = parity_machine(2, 40)
    assert forward.count(p, None) == 2**79
    # Within a budget: odd flip sets touching at most 3 of the 40 steps; each touched step flips 1 or 2 inputs.
    # sum over k steps and j single-flip steps (odd j): C(40, k) C(k, j) (2 ways per single, 1 per double).
    within = sum(math.comb(40, k) * math.comb(k, j) * 2**j for k in range(4) for j in range(1, k + 1, 2))
    assert forward.count(p, 3) == within
    assert forward.count(parity_machine(3, 30), None) == 2**89


def test_count_past_the_limbs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Counts wider than OBJECT_LIMBS limbs: the pass goes on in Python ints from the step they pass it.
    default = key_counts.OBJECT_LIMBS
    monkeypatch.setattr(key_counts, "OBJECT_LIMBS", 4)
    assert forward.count(parity_machine(3, 120), None) == 2**359
    p = parity_machine(2, 150)
    within = sum(math.comb(150, k) * math.comb(k, j) * 2**j for k in range(91) for j in range(1, k + 1, 2))
    assert within.bit_length() > key_counts.LIMB * key_counts.OBJECT_LIMBS
    assert forward.count(p, 90) == within
    assert forward.count(p, 151) == 2**299
    monkeypatch.setattr(key_counts, "OBJECT_LIMBS", default)
    assert key_counts.LIMB * default < 4399
    assert forward.count(parity_machine(4, 1100), None) == 2**4399  # past the default's limbs too


def test_limb_sums_of_large_groups_do_not_overflow() -> None:
    # A group of more than GROUP_MAX pairs of the largest limb would overflow one uint64 reduction: it is summed in
    # parts. The sums are the Python ints' sums, in rows, columns and past OBJECT_LIMBS.
    rng = Generator(PCG64(5))
    top = (1 << key_counts.LIMB) - 1
    cases = ((1, 3, key_counts.GROUP_MAX * 3 + 7), (3, 50, 200_000), (key_counts.OBJECT_LIMBS, 4, 70_000))
    for limbs, keys, pairs in cases:
        parent = np.full((keys, limbs), top, dtype=np.uint64)
        parent[1:] = rng.integers(0, top, size=(keys - 1, limbs), dtype=np.uint64)
        ints = [key_counts.to_int(parent, k) for k in range(keys)]
        src = rng.integers(0, keys, size=pairs)
        src[: key_counts.GROUP_MAX + 2] = 0  # the first group: more than GROUP_MAX copies of the largest count
        starts = np.array([0, key_counts.GROUP_MAX + 5, pairs - 3, pairs - 1])
        got = key_counts.sum_limbs(parent, src, starts)
        ends = [*starts[1:].tolist(), pairs]
        want = [sum(ints[i] for i in src[a:b].tolist()) for a, b in zip(starts.tolist(), ends, strict=True)]
        assert [key_counts.to_int(got, g) for g in range(starts.size)] == want


def test_enumeration_is_canonical_and_lazy() -> None:
    # 2^79 valid certificates: a non-lazy enumeration would hit the time cap (Unknown), not answer.
    p = parity_machine(2, 40)
    first = list(forward.enumerate_certificates(p, None, 6, limits=Limits(seconds=60)))
    assert first == [((0, 0, 1),), ((0, 1, 1),), ((1, 0, 1),), ((1, 1, 1),), ((2, 0, 1),), ((2, 1, 1),)]
    it = forward.enumerate_certificates(p, 3, limits=Limits(seconds=60))
    head = list(itertools.islice(it, 200))
    it.close()
    assert head == sorted(head, key=lambda c: order_key(p, c))
    assert all(len(c) % 2 == 1 for c in head)
    # Names out of index order: canonical order compares input names, not indices.
    view = MealyView.from_table(("z", "b"), ("o",), [[0, 1, 1, 0], [1, 0, 0, 1]], [[0, 1, 1, 0], [1, 0, 0, 1]])
    q = Problem(view, (0, 0), Var(0), 1)
    got = list(forward.enumerate_certificates(q, None))
    assert got == brute_valid_set(q, None)
    assert got[:2] == [((0, 1, 1),), ((0, 0, 1),)]  # (0, "b") before (0, "z")


def test_sample_unranks_every_certificate_once() -> None:
    """Unranking is a bijection from [0, N) onto M_B(I): with uniform ranks, samples are uniform."""
    p = random_table(6, 2, 5, seed=11)
    expected = brute_valid_set(p, 2)
    assert 5 <= len(expected) < 200
    assert forward.sample(p, 2, len(expected) + 5, seed=0) == expected
    fw = forward_pass.Forward(p)
    clock = Limits().start()
    res = fw.run(forward_pass.PassSettings(2, "sample", edges=True), clock)
    togo = forward._counts_to_go(fw, res, clock, "sample")
    total = key_counts.to_int(togo[0], 0)
    certs = [flips_to_atoms(p, forward._unrank(fw, res, togo, r, clock)) for r in range(total)]
    assert total == len(expected) and sorted(certs, key=lambda c: order_key(p, c)) == expected


def _chi_square(counts: np.ndarray) -> float:
    exp = counts.sum() / counts.size
    return float(((counts - exp) ** 2 / exp).sum())


def test_sample_is_uniform() -> None:
    # Fixed seeds: the statistic is a deterministic number; the bounds are the chi-square 0.1 % tails.
    rng = Generator(PCG64(5))
    draws = np.array([forward._uniform_below(rng, 13) for _ in range(13_000)])
    assert _chi_square(np.bincount(draws, minlength=13)) < 32.9  # 12 degrees of freedom
    big = 3**50  # beyond 64 bits: the top bits of the draw must be uniform too
    tops = np.array([forward._uniform_below(rng, big) * 8 // big for _ in range(4000)])
    assert _chi_square(np.bincount(tops, minlength=8)) < 24.3  # 7 degrees of freedom
    # End to end: one certificate per seed.
    p = random_table(4, 2, 3, seed=2)
    expected = brute_valid_set(p, None)
    assert 3 <= len(expected) <= 12
    index = {c: k for k, c in enumerate(expected)}
    hits = np.zeros(len(expected), dtype=np.int64)
    for seed in range(60 * len(expected)):
        (cert,) = forward.sample(p, None, 1, seed)
        hits[index[cert]] += 1
    dof = len(expected) - 1
    bound = {2: 13.8, 3: 16.3, 4: 18.5, 5: 20.5, 6: 22.5, 7: 24.3, 8: 26.1, 9: 27.9, 10: 29.6, 11: 31.3}[dof]
    assert _chi_square(hits) < bound
    assert forward.sample(p, None, 2, seed=9) == forward.sample(p, None, 2, seed=9)
    assert api.sample(p, None, 2, 9) == forward.sample(p, None, 2, seed=9)


def test_best_match_ties_break_on_the_digest() -> None:
    # The parity machine with one step: all four odd sets of {a, b, c, d}-style flips tie on (F1_AP, F1_TS, Eff_t)
    # for the empty agent; the gold is the one with the lowest sha256.
    p = parity_machine(3, 1)
    golds = brute_valid_set(p, None)
    assert len(golds) == 4
    got = forward.best_match(p, [], None)
    assert got.gold == min(golds, key=lambda c: api.gold_digest(p, c))
    assert got == api.best_match(p, [], None, backend="explicit")


def test_best_match_digest_walk_shares_prefixes() -> None:
    # Ties whose certificates share a first step: the walk hashes a shared prefix once, hands it to its last child
    # without a copy, and still takes the lowest digest of the whole tie class (the explicit backend ranks all).
    # Parity over 2 inputs and 3 steps: for both atoms of one step, the 4 ties (2 for step 1) all start with that step.
    p = parity_machine(2, 3)
    for agent in ([(0, 0, 1), (0, 1, 1)], [(1, 0, 1), (1, 1, 1)], [(0, 0, 1), (2, 1, 1)]):
        golds = brute_valid_set(p, None)
        got = forward.best_match(p, agent, None)
        assert got == api.best_match(p, agent, None, backend="explicit")
        assert got == BestMatch(**dataclasses.asdict(brute_best_match(p, agent, None)))
        assert got.gold in golds


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=10, max_states=5), data=st.data())
def test_best_match_matches_brute_on_every_budget(problem: Problem, data: st.DataObject) -> None:
    """The two-pass best match (least costs per key, then the tie class) against the twin, over M(I) and M_B(I),
    for agents drawn near a gold (supersets, subsets, shifted atoms) and at random."""
    budget = data.draw(st.one_of(st.none(), st.integers(0, problem.horizon)))
    golds = brute_valid_set(problem, None)
    choice = data.draw(st.integers(0, 2))
    if golds and choice:
        cert = list(data.draw(st.sampled_from(golds)))
        extra = data.draw(certificates(problem))
        taken = {(t, i) for t, i, _ in cert}
        cert += [a for a in extra if (a[0], a[1]) not in taken][: data.draw(st.integers(0, 3))]
        cert = cert[data.draw(st.integers(0, 1)):] if choice == 2 else cert
    else:
        cert = list(data.draw(certificates(problem)))
    got = forward.best_match(problem, cert, budget)
    assert got == BestMatch(**dataclasses.asdict(brute_best_match(problem, cert, budget)))


def test_unknown_survives_pickling() -> None:
    ex = Unknown("count", "time limit 1 s", {"seconds": 1.5, "keys": 3})
    back = pickle.loads(pickle.dumps(ex))
    assert (back.query, back.reason, back.spent, str(back)) == (ex.query, ex.reason, ex.spent, str(ex))


QUERIES = {
    "count": lambda be, p, lim: api.count(p, None, be, limits=lim),
    "enumerate": lambda be, p, lim: list(api.enumerate_certificates(p, None, None, be, limits=lim)),
    "best_match": lambda be, p, lim: api.best_match(p, [(3, 0, 1), (7, 2, 0)], None, be, limits=lim),
    "oracle": lambda be, p, lim: api.oracle(p, None, be, limits=lim),
}


@pytest.mark.parametrize("name", api.BACKENDS)
def test_time_cap_is_a_promise(name: str) -> None:
    """Under Limits(seconds=s) every heavy query answers or raises Unknown within s + 1 s (asserted with slack for a
    loaded machine), although none of them can finish this problem in time; no child process is left behind."""
    p = random_table(16, 6, 40, seed=3)
    p.system.tables  # noqa: B018 - compile the tables outside the timed calls
    cap = 0.25  # every query is cut short: a shorter cap proves the same promise at half the CPU
    for query, call in QUERIES.items():
        start = time.monotonic()
        try:
            call(name, p, Limits(seconds=cap))
        except Unknown as ex:
            assert "time limit" in ex.reason
        elapsed = time.monotonic() - start
        assert elapsed < cap + 1 + 1.5, (name, query, elapsed)
    assert multiprocessing.active_children() == []


def test_memory_limit_is_unknown_not_a_crash() -> None:
    """Under Limits(memory=m) a query that needs more answers Unknown ("memory limit"), its process is reaped, and
    a query that fits answers exactly as without the limit."""
    from solvers.limits import resident_mib

    small = random_table(4, 2, 6, seed=1)
    assert forward.count(small, None, limits=Limits(memory=4096)) == forward.count(small, None)
    big = random_table(16, 8, 40, seed=3)
    big.system.tables  # noqa: B018 - compiled in this process, shared by the child
    cap = (resident_mib() or 0.0) + 40
    with pytest.raises(Unknown) as got:
        forward.count(big, None, limits=Limits(memory=cap, seconds=120))
    assert "memory limit" in got.value.reason
    assert multiprocessing.active_children() == []



def test_memory_limit_in_this_process_without_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Limits(memory=m, isolate=False) (the campaign's scoring): no child process; the cap is checked at every clock
    check, so a query that needs more still answers Unknown ("memory limit")."""
    from solvers import limits as limits_mod
    from solvers.limits import resident_mib

    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child process was started")

    monkeypatch.setattr(limits_mod, "_start_child", no_child)
    small = random_table(4, 2, 6, seed=1)
    assert forward.count(small, None, limits=Limits(memory=4096, isolate=False)) == forward.count(small, None)
    big = random_table(16, 8, 40, seed=3)
    big.system.tables  # noqa: B018
    with pytest.raises(Unknown) as got:
        forward.count(big, None, limits=Limits(memory=(resident_mib() or 0.0) + 40, isolate=False))
    assert "memory limit" in got.value.reason


def test_a_quotient_past_255_classes_matches_the_brute_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 28: a step of 256 classes crashed the quotient (class counts were packed in a byte).
    p = history_problem(4, 2)
    assert max(forward.quotient(p).sizes) == 256
    for dense in (True, False):  # new removal runs as class sets, and as class ids (what wide steps use)
        monkeypatch.setattr(quotient, "DENSE_RUNS", quotient.DENSE_RUNS if dense else 0)
        for budget in (None, 2, 1):
            expected = brute_valid_set(p, budget)
            assert forward.count(p, budget) == len(expected) > 0
            assert list(forward.enumerate_certificates(p, budget)) == expected
            assert set(forward.sample(p, budget, 5, seed=3)) <= set(expected)
            assert forward.best_match(p, expected[-1][:1], budget) == brute_best_match(p, expected[-1][:1], budget)


def test_a_quotient_past_65535_classes_matches_the_brute_twin() -> None:
    # 65,536 classes at step 4: class sets of 1,024 words, new removal runs as class ids, images by members.
    p = history_problem(4, 4, 2)
    assert max(forward.quotient(p).sizes) == 65536
    # Budget 2 only, and no count: the count on this machine is test_backends's 65,536-class agreement (forward
    # against the twin, same budget); each query here builds the quotient again (about 1 s of CPU).
    expected = brute_valid_set(p, 2)
    assert list(forward.enumerate_certificates(p, 2, limits=Limits(memory=3000))) == expected
    assert forward.best_match(p, expected[0], 2) == brute_best_match(p, expected[0], 2)


def test_a_404_state_controller_answers_at_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 28's regression: a 404-state arbiter-like controller, 8 steps of s_0&s_1&s_2, effect g_2 (266 classes at
    # one step) ended in exit 70 for count, listing, best match and the normal-mode oracle. The commands run through
    # the CLI's main() (exit status and output as the console script gives them; tests/test_bad_input.py's
    # test_bad_input_in_a_real_process runs the entry point itself), sparing four interpreter start-ups.
    view = arbiter_view()
    hoa = tmp_path / "arbiter.hoa"
    hoa.write_text(write(view.to_automaton("arbiter")))
    opts = ["--trace", ";".join(["s_0&s_1&s_2"] * 8), "--effect", "g_2"]
    problem = Problem(view, (7,) * 8, parse_named("g_2", view.outputs), 7)
    assert max(forward.quotient(problem).sizes) > 255
    expected = api.backend("bdd").count(problem, None)

    def gf01(*args: str) -> str:
        status = main(list(args))
        out, err = capsys.readouterr()
        assert status == 0, err
        assert "Traceback" not in err
        return out

    assert str(expected) in gf01("enumerate", str(hoa), *opts, "--count")
    assert gf01("enumerate", str(hoa), *opts, "--limit", "3").strip()
    cert = tmp_path / "cert.json"
    cert.write_text("[]")
    assert "AP P / R / F1" in gf01("verify", str(hoa), str(cert), *opts, "--best-match")
    assert gf01("oracle", str(hoa), *opts, "--mode", "normal").strip()


def test_dominated_keys_are_dropped_only_when_another_key_of_their_state_beats_them() -> None:
    # Keys sorted by (q, b, S, h, g) as a pruned pass gives them; costs per key in column 0.
    from solvers.forward import _undominated
    from solvers.layers import Layer

    rows = [  # q, S, h, g, cost, kept
        (0, 1, 0, 0, 5, False),  # (0, 1) beats it: more shared timesteps, less cost
        (0, 1, 0, 1, 4, True),
        (0, 1, 1, 0, 6, False),  # more hits than (0, 1) but dearer; (1, 1) beats it at the same cost
        (0, 1, 1, 1, 6, True),  # more hits than (0, 1), dearer: neither dominates
        (0, 2, 0, 0, 1, True),  # another S: nothing to compare with
        (1, 1, 0, 0, 3, False),  # (2, 2) of the same (q, S) at the same cost
        (1, 1, 2, 2, 3, True),
    ]
    layer = Layer(np.array([r[0] for r in rows]), np.array([[r[1]] for r in rows], dtype=np.uint64),
                  np.zeros(len(rows), dtype=np.int64), np.array([[r[2], r[3]] for r in rows]),
                  np.array([[r[4]] for r in rows]))
    assert _undominated(0)(layer).tolist() == [r[5] for r in rows]
    # Hits alone (one key per (q, S, h)): h = 0 at 5 is beaten by h = 2 at 5, h = 1 at 4 by nothing.
    one = Layer(np.zeros(4, dtype=np.int64), np.ones((4, 1), dtype=np.uint64), np.zeros(4, dtype=np.int64),
                np.array([[0], [1], [2], [0]]), np.array([[5], [4], [5], [9]]))
    one.q[3] = 1
    assert _undominated(0)(one).tolist() == [False, True, True, True]


def test_best_match_of_the_empty_certificate_needs_no_threshold_pass() -> None:
    # With nothing to hit, every member ranks by Eff_t alone: R* is the oracle's Eff_t, and one pass (the tie
    # class's) runs.
    from solvers import forward_pass

    p = parity_machine(3, 2)
    runs: list[forward_pass.PassSettings] = []
    real = forward_pass.Forward.run

    def run(self: forward_pass.Forward, settings: forward_pass.PassSettings, clock: object) -> forward_pass.Pass:
        runs.append(settings)
        return real(self, settings, clock)  # type: ignore[arg-type]

    forward_pass.Forward.run = run  # type: ignore[method-assign]
    try:
        got = forward.best_match(p, [], None)
    finally:
        forward_pass.Forward.run = real  # type: ignore[method-assign]
    assert got == BestMatch(**dataclasses.asdict(brute_best_match(p, [], None)))
    assert [s.edges for s in runs] == [True]


@pytest.mark.parametrize("width", [3, 64, 65, 300])
def test_unique_rows_is_numpys_unique(width: int) -> None:
    # The quotient's grouping of signatures (wide rows by their bytes) gives numpy's classes, first rows and order.
    rng = Generator(PCG64(width))
    for rows in (1, 2, 17, 200):
        sig = rng.integers(-1, 3, size=(rows, width))
        sig[rows // 2:] = sig[: rows - rows // 2] if rows > 2 else sig[rows // 2:]
        if width > 3:
            sig[:, 2:] = 0  # rows that differ in their first columns only, and many equal rows
        uniq, first, inv = np.unique(sig, axis=0, return_index=True, return_inverse=True)
        got = quotient.unique_rows(sig)
        assert np.array_equal(got[0], uniq) and np.array_equal(got[1], first)
        assert np.array_equal(got[2], inv.ravel())


# Agents whose start pass (most hits, then fewest atoms) is not the best rank: the search needs a second pass,
# which moves F1_AP ((4, ...), (7, ...)) or only F1_TS at the same F1_AP ((23, ...), (62, ...), (157, ...)).
DINKELBACH_CASES = [
    (4, ((0, 0, 1), (1, 1, 0), (2, 0, 1), (3, 0, 0))),
    (7, ((1, 0, 0), (1, 1, 0), (4, 0, 1), (5, 0, 1))),
    (23, ((0, 1, 1), (1, 0, 1), (4, 0, 1), (5, 0, 1))),
    (62, ((1, 1, 0), (4, 0, 0), (4, 1, 1), (5, 1, 0))),
    (157, ((1, 0, 0), (2, 1, 1), (4, 0, 0), (5, 1, 1))),
]


@pytest.mark.parametrize(("seed", "agent"), DINKELBACH_CASES)
def test_best_match_ratio_search_runs_until_the_ratios_repeat(seed: int, agent: tuple) -> None:
    # Each pass moves (lambda, mu) strictly up, and the search stops only when a pass confirms them: the ratios of
    # the pass before the last are not the best rank's, so a search stopped one pass early answers wrongly here.
    from solvers import forward_best
    from solvers.limits import NO_LIMITS

    p = random_table(4, 2, 6, seed)
    passes: list = []
    got = forward_best.best_by_ratios(forward_pass.Forward(p), agent, None, NO_LIMITS.start(), passes)
    expected = brute_best_match(p, agent, None)
    assert got == BestMatch(**dataclasses.asdict(expected))
    assert len(passes) >= 3 and passes[1:] == sorted(set(passes[1:]))
    best = (got.ap_f1, got.ts_f1)
    assert tuple(float(x) for x in passes[-1]) == best
    assert tuple(float(x) for x in passes[-2]) != best


@pytest.mark.parametrize(("seed", "agent"), DINKELBACH_CASES[:3])
def test_best_match_by_threshold_passes_where_the_packed_cost_is_too_wide(
        seed: int, agent: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    # Past COST_BITS the ratio search declines and the threshold passes rank: the same golds as the twin's.
    from solvers import forward_best

    p = random_table(4, 2, 6, seed)
    monkeypatch.setattr(forward_best, "COST_BITS", 8)
    for budget in (None, 2):
        assert forward.best_match(p, agent, budget) == brute_best_match(p, agent, budget)
    assert forward.best_match(p, [], None) == brute_best_match(p, [], None)


def test_packed_fields_unpack_signed_lowest_first() -> None:
    from solvers.forward_best import unpack

    rng = Generator(PCG64(5))
    widths = (4, 3, 6)
    for _ in range(200):
        fields = [int(rng.integers(-(1 << (w - 1)) + 1, 1 << (w - 1))) for w in widths]
        top = int(rng.integers(-50, 50))
        value = top
        for f, w in zip(reversed(fields), reversed(widths), strict=True):
            value = (value << w) + f
        assert unpack(value, widths) == [*fields, top]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=11, max_states=5), data=st.data())
def test_count_with_a_backward_half_matches_brute(problem: Problem, data: st.DataObject) -> None:
    # The steps from MEET * steps on counted backward (keys found forward, completions summed from the end) at any
    # switch step, in blocks of a few masks, with tables of every letter or of the reached ones: the twin's counts.
    budget = data.draw(st.one_of(st.none(), st.just(problem.horizon), st.integers(0, problem.horizon)))
    taken: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        meet = data.draw(st.sampled_from((0.0, 0.3, 0.5, 0.9)))
        mp.setattr(backward_half, "MEET", meet)
        mp.setattr(backward_half, "MEET_LIMBS", 0)
        mp.setattr(forward_pass, "BLOCK_MIN", data.draw(st.sampled_from((0, forward_pass.BLOCK_MIN))))
        mp.setattr(class_blocks, "MASKS", data.draw(st.sampled_from((1, 3, class_blocks.MASKS))))
        mp.setattr(quotient, "IMAGE_PAYOFF", 0)
        mp.setattr(quotient, "MAX_IMAGE_TABLE", data.draw(st.sampled_from((0, quotient.MAX_IMAGE_TABLE))))
        half = backward_half.BackwardHalf.count

        def spy(self: backward_half.BackwardHalf, t0: int, *args: object) -> object:
            taken.append(t0)
            return half(self, t0, *args)  # type: ignore[arg-type]

        mp.setattr(backward_half.BackwardHalf, "count", spy)
        assert forward.count(problem, budget) == len(brute_valid_set(problem, budget))
    # No budget binds (|TS| untracked): the count switches (at step 0 with MEET 0); a binding budget keeps the
    # forward pass.
    if budget is not None and budget <= problem.t_star:
        assert taken == []
    elif meet == 0.0:
        assert taken == [0]


@pytest.mark.parametrize("masks", [7, class_blocks.MASKS])
def test_backward_half_agrees_with_forward_on_wide_instances(masks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Counts of many limbs with random bits, keys of 512 masks (row sums in parts of GROUP_MAX, carried a limb up),
    # the forward counts past the limbs (Python ints) at the switch: the same counts as the forward pass alone.
    monkeypatch.setattr(class_blocks, "MASKS", masks)
    taken: list[int] = []
    half = backward_half.BackwardHalf.count

    def spy(self: backward_half.BackwardHalf, t0: int, *args: object) -> tuple[list[int], np.ndarray]:
        taken.append(t0)
        sizes, completions = half(self, t0, *args)  # type: ignore[arg-type]
        assert not (completions >> np.uint64(key_counts.LIMB)).any()  # carried: every limb within LIMB bits
        return sizes, completions

    monkeypatch.setattr(backward_half.BackwardHalf, "count", spy)
    # Three instances: a fourth (5 inputs, 160 steps, 4 limbs) failed no mutation of the backward half the others
    # passed (docs/performance.md, eighth pass).
    for seed, inputs, steps, limbs in ((1, 4, 200, 4), (2, 9, 30, 73), (3, 6, 80, 2)):
        problem = random_table(6, inputs, steps, seed)
        monkeypatch.setattr(key_counts, "OBJECT_LIMBS", limbs)
        monkeypatch.setattr(backward_half, "MEET", 2.0)  # never
        alone = forward.count(problem, None)
        assert not taken
        monkeypatch.setattr(backward_half, "MEET", 0.5)
        assert forward.count(problem, None) == alone > 1 << (3 * key_counts.LIMB)
        assert len(taken) == 1 and taken.pop() >= steps // 2
    assert forward.count(parity_machine(9, 14), None) == 2 ** (9 * 14 - 1)
    assert taken


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=11, max_states=5), data=st.data())
def test_backward_completions_as_rows_match_brute(problem: Problem, data: st.DataObject) -> None:
    # The next completions read as rows of 1-3 limbs, from tables over every next code or (DENSE_AFTER 0) over the
    # next keys through an index: the twin's counts at every switch step.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backward_half, "MEET", data.draw(st.sampled_from((0.0, 0.5))))
        mp.setattr(backward_half, "MEET_LIMBS", 0)
        mp.setattr(forward_pass, "BLOCK_MIN", 0)
        mp.setattr(backward_half, "ROW_MASKS", 0)  # every step's completions as rows
        mp.setattr(backward_half, "ROW_LIMBS", data.draw(st.sampled_from((1, 2, 3))))
        mp.setattr(backward_half, "DENSE_AFTER", data.draw(st.sampled_from((0, backward_half.DENSE_AFTER))))
        mp.setattr(backward_half, "COMPACT", data.draw(st.booleans()))
        mp.setattr(quotient, "IMAGE_PAYOFF", 0)
        assert forward.count(problem, None) == len(brute_valid_set(problem, None))


#: The forward pass's counts of random_table(6, inputs, steps, seed) without a backward half, made once per module
#: (the rows test's params are the backward half's settings alone).
FORWARD_ALONE: dict[tuple[int, int, int], int] = {}


@pytest.mark.parametrize(("rows", "dense"), [(1, 0), (3, 0), (2, 1 << 40), (3, 1 << 40)])
def test_backward_completions_as_rows_agree_on_wide_instances(rows: int, dense: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Completions of many limbs with random bits, read in groups of 1-3 limbs (the last group narrower), through the
    # index or the tables over every code, reused from step to step (cleaned after each): the forward pass's counts.
    monkeypatch.setattr(backward_half, "ROW_MASKS", 0)
    monkeypatch.setattr(backward_half, "ROW_LIMBS", rows)
    monkeypatch.setattr(backward_half, "DENSE_AFTER", dense)
    complete = backward_half.BackwardHalf._complete
    calls: list[int] = []

    def spy(self: backward_half.BackwardHalf, *args: object) -> np.ndarray:
        got = complete(self, *args)  # type: ignore[arg-type]
        # The tables kept for the next step hold zeros only: a code no next key has must read 0 there.
        assert not any(table.any() for table in self._after)
        calls.append(1)
        return got

    monkeypatch.setattr(backward_half.BackwardHalf, "_complete", spy)
    # The 200-step instance (5+ limbs) with groups of 3 limbs only: in groups of 1 and 2 it failed no mutation of
    # _complete_rows the 80-step one passed (docs/performance.md, eighth pass).
    for seed, inputs, steps in ((1, 4, 200), (3, 6, 80)) if rows == 3 else ((3, 6, 80),):
        problem = random_table(6, inputs, steps, seed)
        if (seed, inputs, steps) not in FORWARD_ALONE:  # the forward pass alone reads none of the params
            monkeypatch.setattr(backward_half, "MEET", 2.0)  # never
            FORWARD_ALONE[seed, inputs, steps] = forward.count(problem, None)
        alone = FORWARD_ALONE[seed, inputs, steps]
        monkeypatch.setattr(backward_half, "MEET", 0.5)
        assert forward.count(problem, None) == alone > 1 << (3 * key_counts.LIMB)
    assert calls


def test_backward_completions_by_columns_and_rows_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same completions whichever way a step reads the next layer's: a limb column at a time (ROW_MASKS past every
    # step's masks a key), as rows (ROW_MASKS 0), or as the pass chooses.
    problem = random_table(6, 6, 80, 3)
    monkeypatch.setattr(backward_half, "MEET", 0.5)
    counts = []
    for least in (1 << 30, 0, backward_half.ROW_MASKS):
        monkeypatch.setattr(backward_half, "ROW_MASKS", least)
        counts.append(forward.count(problem, None))
    assert counts[0] == counts[1] == counts[2] > 1 << (3 * key_counts.LIMB)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=11, max_states=5), data=st.data())
def test_narrow_codes_match_brute(problem: Problem, data: st.DataObject) -> None:
    # Class blocks' live codes as uint32 per next class (no budget, counts in this process): pieces cut by their
    # live codes or by their sources' span (2^1-2^16 keys), blocks of few masks split by that span: the twin's counts.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(backward_half, "MEET", 2.0)  # every step forward
        mp.setattr(forward_pass, "BLOCK_MIN", 0)
        mp.setattr(quotient, "IMAGE_PAYOFF", 0)
        mp.setattr(forward_pass, "NARROW_SRC", data.draw(st.sampled_from((1, 2, forward_pass.NARROW_SRC))))
        mp.setattr(forward_pass, "PIECE", data.draw(st.sampled_from((1, 5, forward_pass.PIECE))))
        mp.setattr(class_blocks, "MASKS", data.draw(st.sampled_from((1, 3, class_blocks.MASKS))))
        assert forward.count(problem, None) == len(brute_valid_set(problem, None))


def test_narrow_and_wide_codes_agree_on_wide_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    # Thousands of keys a step, counts past the limbs: uint32 codes per next class (pieces of every size and span)
    # count what int64 codes count, and the narrow step is the one taken.
    monkeypatch.setattr(key_counts, "OBJECT_LIMBS", 4)
    monkeypatch.setattr(forward_pass, "BLOCK_MIN", 0)
    monkeypatch.setattr(backward_half, "MEET", 2.0)
    monkeypatch.setattr(quotient, "IMAGE_PAYOFF", 0)
    narrow = forward_pass.Forward._step_narrow
    taken: list[int] = []

    def spy(self: forward_pass.Forward, plan: layers.StepPlan, *args: object) -> object:
        taken.append(plan.t)
        return narrow(self, plan, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(forward_pass.Forward, "_step_narrow", spy)
    for seed, inputs, steps in ((1, 4, 60), (4, 5, 80)):  # 80 steps: 253 bits, past 4 limbs of 56
        problem = random_table(6, inputs, steps, seed)
        monkeypatch.setattr(forward_pass, "NARROW", False)
        wide = forward.count(problem, None)
        assert not taken
        monkeypatch.setattr(forward_pass, "NARROW", True)
        for src, piece in ((forward_pass.NARROW_SRC, forward_pass.PIECE), (3, 1 << 21), (16, 97)):
            monkeypatch.setattr(forward_pass, "NARROW_SRC", src)
            monkeypatch.setattr(forward_pass, "PIECE", piece)
            assert forward.count(problem, None) == wide > 0
            assert taken
            taken.clear()
        monkeypatch.setattr(forward_pass, "NARROW_SRC", 16)
        monkeypatch.setattr(forward_pass, "PIECE", 1 << 21)
    assert wide.bit_length() > key_counts.LIMB * key_counts.OBJECT_LIMBS


@pytest.mark.parametrize(("rows", "dense"), [(1, 0), (3, 0), (2, 1 << 40), (4, 1 << 40)])
def test_compact_and_full_codes_agree_on_wide_instances(rows: int, dense: int,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # The quiet backward steps read the next completions by compact codes (the class set without the edited run's
    # class; every pair that ends clipped to one zero row), through the index or the tables over every code, in
    # groups of 1-4 limbs: they count what the full codes count, and the compact path is the one taken.
    monkeypatch.setattr(backward_half, "ROW_MASKS", 0)
    monkeypatch.setattr(backward_half, "ROW_LIMBS", rows)
    monkeypatch.setattr(backward_half, "DENSE_AFTER", dense)
    monkeypatch.setattr(backward_half, "MEET", 0.5)
    calls: list[int] = []
    real = backward_half.compact_codes

    def spy(*args: object) -> np.ndarray:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(backward_half, "compact_codes", spy)
    # One instance (80 steps, 6 inputs: 7 limbs): the 200-step and 120-step ones failed and passed the same eight
    # mutations of compact_codes and _complete_rows, at every param (docs/performance.md, ninth pass).
    for seed, inputs, steps in ((3, 6, 80),):
        problem = random_table(6, inputs, steps, seed)
        monkeypatch.setattr(backward_half, "COMPACT", False)
        full = forward.count(problem, None)
        assert not calls
        monkeypatch.setattr(backward_half, "COMPACT", True)
        assert forward.count(problem, None) == full > 1 << (3 * key_counts.LIMB)
        assert calls
        calls.clear()


def test_discovery_by_key_and_by_mask_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    # The discovery's class blocks as (keys, masks) (a key's codes copied as whole rows of the image tables) find
    # the keys the (masks, keys) blocks find: the same counts, on class sets of one byte and of two (12 states:
    # the second byte's tables too), with quiet steps and the effect step; the by-key blocks are the ones taken.
    monkeypatch.setattr(backward_half, "MEET", 0.25)
    monkeypatch.setattr(backward_half, "MEET_LIMBS", 0)
    monkeypatch.setattr(quotient, "IMAGE_PAYOFF", 0)
    blocks = class_blocks.ClassBlocks.blocks
    chunks: list[int] = []
    widest: list[int] = []

    def spy(self: class_blocks.ClassBlocks, plan: layers.StepPlan, layer: layers.Layer, comb: np.ndarray,
            *args: object, **kwargs: object) -> object:
        if kwargs.get("by_key"):
            chunks.append(comb.shape[0])
        return blocks(self, plan, layer, comb, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(class_blocks.ClassBlocks, "blocks", spy)
    for states, inputs, steps, seed in ((6, 5, 60, 3), (12, 4, 40, 1), (14, 5, 24, 2)):
        problem = random_table(states, inputs, steps, seed)
        monkeypatch.setattr(backward_half, "BY_KEY", False)
        by_mask = forward.count(problem, None)
        assert not chunks
        monkeypatch.setattr(backward_half, "BY_KEY", True)
        assert forward.count(problem, None) == by_mask > 0
        assert chunks
        widest.append(max(chunks))
        chunks.clear()
    assert widest[0] == 1 and max(widest) >= 2
