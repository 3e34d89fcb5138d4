"""GF-01 benchmark layer: instances, generator, play protocol, agents, scoring, policies, reports and the CLI."""

from hoa.errors import Gf01Error

__all__ = ["Gf01Error"]
