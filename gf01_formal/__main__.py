"""``python -m gf01_formal``: the same as the ``gf01`` command."""

import sys

from gf01_formal.cli import main

sys.exit(main())
