"""Remote evaluation on a sealed split (``gf01 eval serve``, ``gf01 evaluate --remote``; docs/remote.md): the key
holder's server holds the instances and plays every episode; the participant's agent stays with its owner, and only
gf01.agent.v1 lines cross the connection.

Modules, one job each: :mod:`.protocol` (the wire's requests, answers and size limits), :mod:`.tokens` (teams'
hashed tokens and quotas), :mod:`.receipts` (signed receipts and their check), :mod:`.episodes` (the server's side
of one episode: the relay agent that ``runs.runner.play_run`` drives), :mod:`.server` (the Starlette application and
its state), :mod:`.leaderboard` (the public page and JSON), :mod:`.client` (the participant's relay).
"""
