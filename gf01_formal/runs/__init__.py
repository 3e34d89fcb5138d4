"""Runs: the typed run record and everything that makes, stores and checks one.

- :mod:`.record`: :class:`~.record.RunRecord` with its typed parts (:class:`~.record.RunBase`, the score columns of
  :class:`~gf01_formal.scoring.values.Scores`, :class:`~.record.Step`) and the record builders; no agent, engine or
  solver is imported there, so reading runs for a report loads none;
- :mod:`.recorder`: the one :class:`~.recorder.EpisodeRecorder` every transport drives (runner, browser, inspect);
- :mod:`.replay`: the one replay that ``gf01 validate``, the browser and the inspect importer share;
- :mod:`.runner`: one run of an agent, scored within :mod:`.scoring_limit`'s limits; :mod:`.store`: runs files
  (a bundle's runs: :mod:`gf01_formal.campaign`);
- :mod:`.validate`: ``gf01 validate``; :mod:`.peer`: the peer implementation's run records, re-scored;
- :mod:`.agent_check`: ``gf01 agent check``, an external program's protocol faults over a few runs.
"""
