"""Fuzzing the HOA reader: random text and mutated HOA files (the repository's own, and the corpus's when present)
raise only Gf01Error, each within a time guard, and whatever is accepted round-trips through the writer."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from corpus import CORPUS, needs_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoa import parse, write
from hoa.errors import Gf01Error

ROOT = Path(__file__).resolve().parents[1]
# The repository's own HOA files are always a mutation base; the corpus's files join them when it is present.
OWN_FILES = sorted([*(ROOT / "tests" / "data" / "hoa").glob("*.hoa"),
                    *(ROOT / "gf01_formal" / "examples").glob("*.hoa")])
#: Every single input must be read (or refused) within this many seconds; inputs here are at most a few kB.
GUARD_SECONDS = 3.0


class ParseTimeout(Exception):
    """Raised by the alarm when one input takes longer than the guard."""


@contextmanager
def time_guard(seconds: float) -> Iterator[None]:
    """Interrupt the block with ParseTimeout after ``seconds`` (SIGALRM; the test fails, it does not measure)."""

    def on_alarm(signum: int, frame: object) -> None:
        raise ParseTimeout(f"input not handled within {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_or_refuse(text: str) -> None:
    """Parse ``text``: only Gf01Error may escape, errors are located, accepted automata round-trip."""
    with time_guard(GUARD_SECONDS):
        try:
            automata = parse(text, "fuzz.hoa")
        except Gf01Error as err:
            assert err.file == "fuzz.hoa" and err.line is not None and err.col is not None, err
            assert err.line <= text.count("\n") + 1
            return
        for aut in automata:
            assert parse(write(aut)) == [aut]


TOKENS = [
    "HOA:", "v1", "States:", "Start:", "AP:", "Alias:", "Acceptance:", "acc-name:", "tool:", "name:",
    "properties:", "controllable-AP:", "--BODY--", "--END--", "--ABORT--", "State:", "Inf", "Fin", "(", ")", "[",
    "]", "{", "}", "!", "&", "|", "t", "f", "0", "1", "2", "3", "17", '"a"', '"b\\"c"', "@x", "@y", "/*", "*/",
    "deterministic", "complete", "state-labels", "trans-labels", "implicit-labels", "univ-branch", "Buchi", "x-h:",
    "\n", " ", "-", ":", ".", "#", "\\", '"',
]

CORPUS_FILES = sorted(p for p in CORPUS.glob("hoa/*/*.hoa") if p.stat().st_size < 4000) if CORPUS else []
MUTATION_BASE = OWN_FILES + CORPUS_FILES


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=120), st.lists(st.sampled_from([" ", "\n", "", "\t"])))
def test_random_token_soup_raises_only_gf01error(tokens: list[str], seps: list[str]):
    text = "".join(tok + (seps[i % len(seps)] if seps else " ") for i, tok in enumerate(tokens))
    read_or_refuse(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_random_characters_raise_only_gf01error(text: str):
    read_or_refuse(text)
    read_or_refuse("HOA: v1 " + text)


@st.composite
def mutated_corpus_file(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(MUTATION_BASE)).read_text()
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 20)))
        op = draw(st.sampled_from(["delete", "insert", "duplicate", "replace", "truncate"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + " " + draw(st.sampled_from(TOKENS)) + " " + text[i:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "replace":
            text = text[:i] + draw(st.text(max_size=3)) + text[j:]
        else:
            text = text[:i]
    return text


def test_the_mutation_base_has_the_own_files():
    assert len(OWN_FILES) >= 5


@needs_corpus
def test_the_mutation_base_has_the_corpus():
    assert len(CORPUS_FILES) > 300


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_corpus_file())
def test_mutated_hoa_files_raise_only_gf01error(text: str):
    read_or_refuse(text)


def test_the_guard_interrupts_a_runaway_input():
    # The guard itself must work, or the fuzz tests above would hang instead of failing.
    try:
        with time_guard(0.05):
            while True:
                pass
    except ParseTimeout:
        return
    raise AssertionError("the time guard did not fire")
