"""Playing GF-01: the episode engine (:mod:`.episode`, no I/O), the canonical-json-v1 messages of protocol
gf01.agent.v1 (:mod:`.protocol`) and the Gymnasium environment (:mod:`.gym_env`)."""
