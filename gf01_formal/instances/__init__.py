"""Instances: what a GF-01 instance is and where instances come from.

Data flows one way (a later module may import an earlier one, never the reverse):

- :mod:`.model`: the instance and bundle models (pydantic) and their content hashes;
- :mod:`.io`: reading instance files and bundles, checking them, building the solver-level Problem;
- :mod:`.traces`, :mod:`.complexity`, :mod:`.measure`: base traces, the complexity knobs z(I), the window w(I);
- :mod:`.sources`: one way from an INSTANCE argument (instance file, bundle + id, HOA file + options) to a Problem;
- :mod:`.peer`: instances from the peer implementation's bundles;
- :mod:`.greedy`, :mod:`.families`, :mod:`.generator`: the greedy-resistance certifier, the system families and the
  certified generator;
- :mod:`.splits`: the DEC-054 public/private split.
"""
