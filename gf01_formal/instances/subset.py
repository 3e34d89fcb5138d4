"""A bundle of some instances of another (``gf01 bundle subset``): the instances as they are, a new instances hash,
and a provenance that names the source. The source's seed and requested count are dropped (the subset does not
regenerate from them); its cfg and cfg hash stay (they say how the instances were made).

>>> small = subset(bundle, ids=[bundle.instances[0].instance_id])
>>> len(small.instances), small.instances_hash != bundle.instances_hash
(1, True)
"""

from __future__ import annotations

from gf01_formal.instances.model import Bundle, Instance, make_bundle
from hoa.errors import Gf01Error, quote


def subset(source: Bundle | Instance, *, file: str | None = None, ids: list[str] | None = None,
           count: int | None = None) -> Bundle:
    """The bundle of the instances of ``source`` named by ``ids`` (in the source's order), or of its first
    ``count``; a Gf01Error names an id the source lacks, or a count past its size."""
    if not isinstance(source, Bundle):
        raise Gf01Error("is one instance, not a bundle: nothing to take a subset of", file=file)
    have = [i.instance_id for i in source.instances]
    if ids is not None:
        missing = [i for i in dict.fromkeys(ids) if i not in have]
        if missing:
            raise Gf01Error(f"no instance {quote(missing[0], 60)} in the bundle ({len(have)} instances)", file=file,
                            field="--ids")
        keep = set(ids)
        chosen = [i for i in source.instances if i.instance_id in keep]
        how = f"{len(chosen)} named instances"
    else:
        assert count is not None
        if count > len(have):
            raise Gf01Error(f"the bundle has {len(have)} instances, fewer than {count}", file=file, field="--count")
        chosen = list(source.instances[:count])
        how = f"the first {count} instances"
    provenance = (f"subset of bundle {source.instances_hash[:16]} ({how} of {len(have)}); its provenance: "
                  f"{source.provenance}")
    return make_bundle(chosen, generator_version=source.generator_version, provenance=provenance, cfg=source.cfg,
                       cfg_hash=source.cfg_hash, source_fields=dict(source.source_fields))
