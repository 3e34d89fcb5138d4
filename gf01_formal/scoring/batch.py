"""Scoring many certificates in one process (``gf01 verify INSTANCE --certs FILE``): each instance's Problem is
built once, and the certificates of a chunk of lines are simulated together
(:func:`gf01_formal.scoring.certificates.score_many`).

The batch streams: the file is read twice, line by line (once to check every line, then once more to score it chunk by
chunk), so memory holds one chunk and its records, whatever the file's length: at most :data:`CHUNK` certificates and
at most :data:`CELLS` simulated steps (a certificate of |C| atoms simulates |C| + 1 runs of T steps), so that a chunk
at T = 256 weighs what one at T = 16 does. Best matches (``--best-match``) come from one
:class:`~gf01_formal.scoring.scores.Scorer` per instance: a valid certificate is its own gold, and the gold set is
counted once and listed when that is cheaper than a symbolic query per line (its rule), so thousands of lines of one
instance cost one listing and a ranking each, not a solver query each.

Input lines are JSON objects ``{"instance_id": ID, "certificate": [[t, "input", v], ...]}`` (``instance_id`` may be
left out when INSTANCE holds one instance); blank lines are skipped. Output records come in input order, each with
its ``line`` number. A line that is not such an object is a user error naming the file and line, found before
anything is scored; a malformed certificate is scored (false, with its reasons), as everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from encoders.problem import Problem
from gf01_formal.artifacts import parse_json
from gf01_formal.instances.io import InstanceSet, load_set
from gf01_formal.instances.sources import is_hoa_text, open_instance
from gf01_formal.scoring.certificates import (
    GoldSet,
    ParsedCertificate,
    parse_certificate,
    score,
    score_many,
    verification_record,
    with_best_match,
)
from gf01_formal.scoring.score import Score
from gf01_formal.scoring.scores import Scorer
from hoa.errors import Gf01Error, quote
from hoa.files import read_text
from solvers.limits import Limits, Unknown

#: Lines scored together (one vectorised simulation per instance per chunk), at most.
CHUNK = 4096
#: Simulated steps of a chunk, at most: sum over its certificates of (|C| + 1) x T (8 bytes each in a few arrays of
#: the simulation; 2^21 keeps a chunk's arrays within about 100 MB at any T).
CELLS = 1 << 21


def verify_lines(
    source: str,
    lines: Callable[[], Iterable[str]],
    options: Any = None,
    *,
    file: str,
    instance_id: str | None = None,
    subset_min: bool = False,
    best_match: bool = False,
    gold_set: GoldSet = "M",
    backend: str | None = None,
    limits: Callable[[], Limits | None] = lambda: None,
) -> Iterator[dict[str, Any]]:
    """One score record per certificate line of ``lines()`` (read from ``file``), against the instances of
    ``source``. ``lines`` opens the lines afresh at each call: they are read twice (check, then score).

    ``limits`` gives the limits of each optional diagnostic (SubsetMin, best match) when it starts; the best match
    ranks its gold in ``gold_set``.
    """
    text = read_text(source)
    if is_hoa_text(text) or options is not None:
        loaded = InstanceSet((open_instance(source, instance_id, options)[0],), None, source)
    else:
        loaded = load_set(source)
    instances = loaded.by_id
    only = next(iter(instances)) if len(instances) == 1 else instance_id

    problems: dict[str, Problem] = {}

    def problem_of(iid: str) -> Problem:
        # Once per instance, not per line: instance_problem looks its task up at every call.
        if iid not in problems:
            problems[iid] = loaded.problem(instances[iid])
        return problems[iid]

    # Every line is read and checked before the first is scored: a bad line is an error with no result printed,
    # never a run of results that stops part-way. Nothing of the check is kept but the instances' problems.
    for number, line in enumerate(lines(), start=1):
        if line.strip():
            iid, _ = _entry(line, number, file, only)
            if iid not in instances:
                raise Gf01Error(f"no instance {quote(iid, 60)} in {quote(source, 200, bare=True)}", file=file,
                                line=number, field="instance_id")
            problem_of(iid)
    scorers: dict[str, Scorer] = {}

    def scorer_of(iid: str) -> Scorer:
        if iid not in scorers:
            scorers[iid] = Scorer(problem_of(iid), gold_set_name=gold_set)
        return scorers[iid]

    entries: list[tuple[int, str, ParsedCertificate]] = []
    cells = 0
    for number, line in enumerate(lines(), start=1):
        if not line.strip():
            continue
        iid, data = _entry(line, number, file, only)
        p = problem_of(iid)
        cert = parse_certificate(data, p.system.inputs, horizon=p.horizon, budget_t=p.budget_t)
        weight = (len(cert.atoms) + 1) * p.horizon
        if entries and (len(entries) == CHUNK or cells + weight > CELLS):
            yield from _score_chunk(entries, problem_of, scorer_of, subset_min, best_match, gold_set, backend, limits)
            entries, cells = [], 0
        entries.append((number, iid, cert))
        cells += weight
    yield from _score_chunk(entries, problem_of, scorer_of, subset_min, best_match, gold_set, backend, limits)


def _entry(line: str, number: int, file: str, only: str | None) -> tuple[str, Any]:
    try:
        obj = parse_json(line)
    except Gf01Error as ex:
        raise Gf01Error(ex.message, file=file, line=number) from None
    if not isinstance(obj, dict) or "certificate" not in obj:
        raise Gf01Error('expected an object {"instance_id": ID, "certificate": [...]}', file=file, line=number)
    iid = obj.get("instance_id", only)
    if not isinstance(iid, str):
        raise Gf01Error("instance_id: a string naming an instance of INSTANCE is needed", file=file, line=number)
    return iid, obj["certificate"]


def _score_chunk(
    chunk: list[tuple[int, str, ParsedCertificate]],
    problem_of: Callable[[str], Problem],
    scorer_of: Callable[[str], Scorer],
    subset_min: bool,
    best_match: bool,
    gold_set: GoldSet,
    backend: str | None,
    limits: Callable[[], Limits | None],
) -> Iterator[dict[str, Any]]:
    scores: dict[int, Score] = {}
    if backend in (None, "explicit") and not subset_min:
        for iid in sorted({iid for _, iid, _ in chunk}):
            mine = [(n, c) for n, i, c in chunk if i == iid]
            for (n, _), s in zip(mine, score_many(problem_of(iid), [c for _, c in mine]), strict=True):
                scores[n] = s
    for number, iid, cert in chunk:
        p = problem_of(iid)
        s = scores.get(number) or score(p, cert, subset_min=subset_min, backend=backend, limits=limits())
        if best_match and backend is None:
            record = _matched(scorer_of(iid), cert, s, gold_set, limits())
        else:
            record = verification_record(p, cert, s, measure=best_match, gold_set=gold_set, backend=backend,
                                         limits=limits())
        yield {"line": number, "instance_id": iid, **record}


def _matched(scorer: Scorer, cert: ParsedCertificate, s: Score, gold_set: GoldSet,
             limits: Limits | None) -> dict[str, Any]:
    """:func:`~gf01_formal.scoring.certificates.verification_record` of ``s`` with its best match, found by the
    instance's scorer: the same record (only the certificate's well-formed atoms take part, and a best match that runs
    out of ``limits`` leaves the verdicts with ``unknown`` saying why)."""
    try:
        bm = scorer.best_match(cert.atoms, valid=s.valid if cert.well_formed else None, limits=limits)
    except Unknown as ex:
        return {**s.to_json(), "unknown": ex.to_json()}
    return with_best_match(scorer.problem, s, bm, gold_set).to_json()
