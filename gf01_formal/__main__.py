"""``python -m gf01_formal``: the same as the ``gf01`` command."""

from gf01_formal.cli import run

run()
