"""Instances: what a GF-01 instance is and where instances come from.

Data flows one way (a later module may import an earlier one, never the reverse):

- :mod:`.identity`, :mod:`.spec`: an instance's identity (schema names, content hash, id) and its system and task as
  plain hashable values (``SystemSpec``, ``Task``; ``hoa_system``, ``aiger_system``);
- :mod:`.problem`: the semantic check of a task and its solver-level Problem, once per task;
- :mod:`.plain`: the pydantic-free reader of the start-up path (``gf01 verify``);
- :mod:`.model`: the instance and bundle models (pydantic) and their content hashes;
- :mod:`.io`: reading instance files and bundles (``load_set``, ``load_bundle``), an instance's Problem
  (``instance_problem``);
- :mod:`.traces`, :mod:`.complexity`, :mod:`.measure`: base traces, the complexity knobs z(I), the window w(I);
- :mod:`.sources`: one way from an INSTANCE argument (instance file, bundle + id, HOA file or circuit + options) to
  an instance and its Problem (``open_instance``);
- :mod:`.peer`: instances from the peer implementation's bundles;
- :mod:`.greedy`, :mod:`.families`, :mod:`.generator`: the greedy-resistance certifier, the system families and the
  certified generator;
- :mod:`.splits`: the DEC-054 public/private split.
"""
