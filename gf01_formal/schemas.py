"""Every artifact schema of the toolkit, declared once in code (pydantic) and exported as JSON Schema to docs/schemas/.

``gf01 export-schemas DIR`` writes them; a test checks that docs/schemas/ holds exactly what this module exports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gf01_formal.artifacts import pretty_json, write_text_atomic


def documents() -> dict[str, dict[str, Any]]:
    """The JSON Schema documents, by file name under docs/schemas/."""
    from gf01_formal.instances.generator import GenConfig
    from gf01_formal.instances.model import Bundle, Instance
    from gf01_formal.instances.splits import SplitManifest
    from gf01_formal.play import protocol
    from gf01_formal.remote import protocol as wire
    from gf01_formal.remote.receipts import Receipt
    from gf01_formal.remote.tokens import TokensFile
    from gf01_formal.runs import record

    return {
        "instance.v2.json": Instance.model_json_schema(),
        "bundle.v2.json": Bundle.model_json_schema(),
        "gen_cfg.v1.json": GenConfig.model_json_schema(),
        "split_manifest.v1.json": SplitManifest.model_json_schema(),
        **protocol.schema_documents(),
        **record.schema_documents(),
        "remote_receipt.v1.json": Receipt.model_json_schema(),
        "remote_tokens.v1.json": TokensFile.model_json_schema(),
        "remote_open.v1.json": wire.OpenRequest.model_json_schema(),
        "remote_line.v1.json": wire.LineRequest.model_json_schema(),
    }


def export(directory: str | Path) -> list[Path]:
    """Write every schema document into ``directory`` (atomically); returns the written paths, sorted."""
    paths = []
    for name, doc in sorted(documents().items()):
        path = Path(directory) / name
        write_text_atomic(path, pretty_json(doc))
        paths.append(path)
    return paths
