"""GF-01 benchmark layer: instances and where they come from (instance files, bundles, HOA files, the peer's
bundles), the certified generator and its system families, splits, certificates and their scores, measurement, and
the ``gf01`` command line.
"""

from hoa.errors import Gf01Error

__all__ = ["Gf01Error"]
