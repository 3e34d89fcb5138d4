"""The ``gf01 key`` commands: ``new`` makes a key that cannot be guessed.

``gf01 key new --kind split|pilot -o FILE`` writes 64 random hex digits (a split key for ``--key-file``, or a
pilot's key); ``--kind signing`` an Ed25519 key pair, the private key as FILE and its public half as FILE.pub (for
``evaluate --sign-key FILE`` and ``validate --key FILE.pub``). A key file is made readable by its owner only (0600;
the public key 0644), written atomically, and never over an existing file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gf01_formal.cli.common import JsonOpt, emit

key_app = typer.Typer(help="Keys: make split, pilot and signing keys that cannot be guessed.", no_args_is_help=True,
                      rich_markup_mode=None, context_settings={"max_content_width": 100})


@key_app.command("new", short_help="Make a new key file (0600), never over an existing file.")
def new_cmd(
    output: Annotated[Path, typer.Option("-o", "--output", metavar="FILE", help="The new key file (it must not "
                                         "exist; --kind signing also writes FILE.pub).", show_default=False)],
    kind: Annotated[Literal["split", "pilot", "signing"], typer.Option(
        "--kind", help="split (--key-file of generate, split, release reveal), pilot (a pilot's key, FILE.key "
        "beside the pilot file) or signing (an Ed25519 pair for evaluate --sign-key and validate --key).")]
    = "split",
    json_out: JsonOpt = False,
) -> None:
    """Write a new random key to FILE (64 hex digits; an Ed25519 PEM pair for --kind signing)."""
    from gf01_formal.instances.keys import new_key, write_new_secret

    record: dict[str, Any] = {"kind": kind, "file": str(output)}
    if kind == "signing":
        from gf01_formal.runs.signing import load_verifier, new_signing_key

        private, public = new_signing_key()
        public_path = Path(f"{output}.pub")
        write_new_secret(public_path, public, mode=0o644)  # first: if the private key's name is taken, no pair
        try:
            write_new_secret(output, private)
        except BaseException:
            public_path.unlink(missing_ok=True)
            raise
        record.update(public_key=str(public_path), fingerprint=load_verifier(public_path).fingerprint)
    else:
        write_new_secret(output, new_key(kind).encode("ascii"))

    def human(r: dict[str, Any]) -> list[str]:
        if r["kind"] == "signing":
            return [f"signing key -> {r['file']} (0600), public key -> {r['public_key']} (fingerprint "
                    f"{r['fingerprint']})"]
        return [f"{r['kind']} key -> {r['file']} (0600)"]

    emit(record, json_out, human)


def register(app: typer.Typer) -> None:
    """Add the ``key`` command group (new) to ``app``."""
    app.add_typer(key_app, name="key")
