"""Campaigns: a baseline panel (DEC-056) played over every instance of a bundle, on a local process pool or on an
existing dask.distributed cluster, scored, validated, reported and analysed; resumable after any interruption.

==============  ==============================================================================================
module          what it is for
==============  ==============================================================================================
``shards``      the work as tasks: batches of episodes with deterministic shard keys; what a worker runs
``executors``   where tasks run: in process, a local pool of processes that die with the driver, or Dask
``run``         ``gf01 campaign``: the plan, the append-only runs file, and the final artifacts
==============  ==============================================================================================

docs/campaigns.md describes the layout of a campaign directory and what a rerun does.
"""
