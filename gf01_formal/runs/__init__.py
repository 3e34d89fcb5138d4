"""Runs: the run record (:mod:`.record`) and playing one run with an agent (:mod:`.runner`)."""
