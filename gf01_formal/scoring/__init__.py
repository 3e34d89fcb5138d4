"""Scoring: certificates and their exact scores.

- :mod:`.score`: the one score type (:class:`~.score.Score`, the run record's field names);
- :mod:`.values`: the run record's pydantic columns, generated from it;
- :mod:`.certificates`: the certificate format (parsing, structural checks) and the exact checks of one certificate;
- :mod:`.scores`: the scores of a finished episode (MET-C, MET-M, best match, the SubsetMin diagnostic);
- :mod:`.batch`: many certificates in one process (``gf01 verify INSTANCE --certs FILE``).
"""
