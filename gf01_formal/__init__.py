"""GF-01 benchmark layer, one subpackage per concern, data flowing one way (docs/, DESIGN.md section 2):
``instances`` (the model, files, sources, the certified generator, splits, measurement), ``scoring`` (certificate
format and exact scores), ``play`` (the episode engine, protocol messages, the Gymnasium environment), ``agents``
(the baseline panel, external programs, the LLM adapter), ``runs`` (records, one run, the runs file, validation, the
protocol check of an external agent), ``report`` (reports, pilots, caps, releases), ``campaign`` (the one
orchestrator: evaluate and campaigns), ``web`` (the R1 browser game), ``integrations`` (inspect_ai) and ``cli``
(the ``gf01`` command line); loose at the root only ``artifacts`` (atomic JSON files and hashes), ``schemas`` (the
JSON Schema export) and ``workers`` (process pools and program groups that die with the harness)."""

from hoa.errors import Gf01Error

__all__ = ["Gf01Error"]
