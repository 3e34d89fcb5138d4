"""GF-01 inside other evaluation harnesses: the inspect_ai task (:mod:`.inspect_task`, needs the ``inspect`` extra)
and the converter of its eval logs into our run records (:mod:`.inspect_import`)."""
