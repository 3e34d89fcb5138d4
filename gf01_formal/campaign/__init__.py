"""The one orchestrator: agents played over every instance of a bundle, in process, in threads, on a local process
pool or on an existing dask.distributed cluster, each record appended as it arrives; resumable after any
interruption. ``gf01 evaluate`` is that alone; ``gf01 campaign`` plays a DEC-056 panel and then validates, reports
and analyses.

==============  ==============================================================================================
module          what it is for
==============  ==============================================================================================
``shards``      the plan and the work as tasks: batches of episodes with deterministic shard keys; what a worker
                runs
``executors``   where tasks run: inline, threads, a local pool of processes that die with the driver (replaced
                when a worker dies), or Dask
``driver``      the missing runs of a plan, played on an executor and appended to the runs file
``evaluate``    ``gf01 evaluate``: any agents over a bundle or an instance file, no report tail
``run``         ``gf01 campaign``: the panel, the campaign file, then the final artifacts
==============  ==============================================================================================

docs/campaigns.md describes the layout of a campaign directory and what a rerun does.
"""
