"""Teams' tokens and quotas for remote evaluation (``gf01 eval token issue|revoke|list``; docs/remote.md).

A token is ``gf01t_<id>_<secret>``: the id (8 hex digits) names its row in the tokens file, the secret is 32 random
bytes in hex. The file keeps the sha256 of the whole token, never the token: whoever reads the file (a backup) cannot
play as a team. It is written atomically with mode 0600; the server reads it again whenever it changes, so a token
issued or revoked while the server runs counts from the next request.

Per team (every token of the team shares them): ``episodes_per_day`` (episodes opened in a UTC day, restarts
included), ``concurrent`` (episodes open at once), and ``oracle``: whether the team may play EVAL-OC, whose tool
(``oracle-exact-search-v1``) answers optimal certificates of the sealed instances (off unless issued with it); and
``panel``: the team is the operator's own, whose runs the leaderboard shows as the baseline panel (DEC-056), never a
team that merely names its agent ``oracle``. They are the last issued token's; the clock decides the day only, never
an output.

>>> store = TokenStore.load(path)          # doctest: +SKIP
>>> token = store.issue("team-a")           # doctest: +SKIP
>>> store.check(token).team                 # doctest: +SKIP
'team-a'
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from gf01_formal.artifacts import canonical_json, parse_json, write_text_atomic
from hoa.errors import Gf01Error, quote

TOKENS_SCHEMA = "gf01-formal.remote_tokens.v1"
#: A team's name: what the leaderboard shows (letters, digits, '.', '_', '-').
TEAM = r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}"
TOKEN = re.compile(r"gf01t_([0-9a-f]{8})_([0-9a-f]{64})")
DEFAULT_EPISODES_PER_DAY = 1000
DEFAULT_CONCURRENT = 4
#: The largest tokens file read (a few hundred bytes a token).
MAX_FILE = 16 << 20


class TokenRow(BaseModel):
    """One issued token: its id, its team, the sha256 of the token, whether it is revoked, the team's quotas."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    token_id: str = Field(pattern=r"^[0-9a-f]{8}$")
    team: str = Field(pattern=f"^{TEAM}$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    revoked: bool = False
    episodes_per_day: int = Field(ge=1)
    concurrent: int = Field(ge=1)
    oracle: bool = Field(default=False, description="the team may play EVAL-OC (its tool answers certificates)")
    panel: bool = Field(default=False, description="the operator's own team: its runs are the leaderboard's "
                        "baseline panel")


class TokensFile(BaseModel):
    """The tokens file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: str = TOKENS_SCHEMA
    tokens: list[TokenRow] = Field(default_factory=list)


@dataclass(frozen=True)
class Team:
    """Who a valid token is: the team and its quotas."""

    name: str
    token_id: str
    episodes_per_day: int
    concurrent: int
    oracle: bool = False
    panel: bool = False


class Refused(Exception):
    """A request refused for its token: the HTTP status (401 no or unknown token, 403 revoked, 429 over quota) and
    one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def check_team(name: object) -> str:
    """A team name, or a Gf01Error (field ``--team``)."""
    if not isinstance(name, str) or not re.fullmatch(TEAM, name):
        raise Gf01Error(f"{quote(name, 60)}: 1 to 40 letters, digits, '.', '_' or '-', starting with a letter or "
                        "digit", field="--team")
    return name


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenStore:
    """The tokens file at ``path`` (missing: no token yet)."""

    def __init__(self, path: str | os.PathLike[str], *, must_exist: bool = False) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int, int] | None = None
        self.rows: list[TokenRow] = []
        self._must_exist = must_exist
        self._by_id: dict[str, TokenRow] = {}
        #: Tokens checked since the file was last read (token -> its team): a request of a known token costs a stat
        #: and a dict lookup, not a hash (the file's change empties it).
        self._known: dict[str, Team] = {}
        self.reload()

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TokenStore:
        return cls(path)

    def reload(self) -> None:
        """Read the file again if it changed since it was read (or was never read)."""
        name = quote(os.fspath(self.path), 200, bare=True)
        try:
            st = self.path.stat()
        except FileNotFoundError:
            if self._must_exist:
                raise Gf01Error("cannot read: no such file (gf01 eval token issue makes it)", file=name) from None
            self._stamp, self.rows, self._by_id, self._known = None, [], {}, {}
            return
        except OSError as ex:
            raise Gf01Error(f"cannot read: {ex.strerror or ex}", file=name) from None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp:
            return
        if not self.path.is_file():
            raise Gf01Error("is not a regular file (a tokens file)", file=name)
        if st.st_size > MAX_FILE:
            raise Gf01Error(f"is larger than {MAX_FILE >> 20} MiB: not a tokens file", file=name)
        from gf01_formal.instances.model import validate_model

        data = parse_json(self.path.read_text(encoding="utf-8", errors="replace"), file=name)
        if not isinstance(data, dict) or data.get("schema_version") != TOKENS_SCHEMA:
            raise Gf01Error(f"not a tokens file (schema_version {TOKENS_SCHEMA})", file=name, field="schema_version")
        parsed: TokensFile = validate_model(TokensFile, data, file=name)
        self.rows, self._stamp = list(parsed.tokens), stamp
        self._by_id = {r.token_id: r for r in self.rows}
        self._known = {}

    def _save(self) -> None:
        body = TokensFile(tokens=self.rows).model_dump(mode="json")
        write_text_atomic(self.path, canonical_json(body) + "\n", mode=0o600)
        self._stamp = None
        self.reload()

    def issue(self, team: str, *, episodes_per_day: int = DEFAULT_EPISODES_PER_DAY,
              concurrent: int = DEFAULT_CONCURRENT, oracle: bool = False, panel: bool = False) -> str:
        """A new token of ``team`` (returned once: only its hash is kept); the team's quotas, whether it may play
        EVAL-OC and whether it is the operator's panel become these."""
        check_team(team)
        taken = {r.token_id for r in self.rows}
        token_id = secrets.token_hex(4)
        while token_id in taken:
            token_id = secrets.token_hex(4)
        token = f"gf01t_{token_id}_{secrets.token_hex(32)}"
        quotas = {"episodes_per_day": episodes_per_day, "concurrent": concurrent, "oracle": oracle, "panel": panel}
        rows = [r.model_copy(update=quotas) if r.team == team else r for r in self.rows]
        rows.append(TokenRow(token_id=token_id, team=team, sha256=_digest(token), **quotas))
        self.rows = rows
        self._save()
        return token

    def revoke(self, which: str) -> list[TokenRow]:
        """Revoke a token (by its id, or the token itself) or every token of a team (by its name); returns the rows
        revoked now. A Gf01Error when nothing matches."""
        match = TOKEN.fullmatch(which)
        key = match.group(1) if match else which
        hits = [r for r in self.rows if r.token_id == key or r.team == key]
        if not hits:
            raise Gf01Error(f"no token has the id or team {quote(which, 60)}", field="TOKEN_OR_TEAM")
        now = [r for r in hits if not r.revoked]
        self.rows = [r.model_copy(update={"revoked": True}) if r in hits else r for r in self.rows]
        self._save()
        return now

    def check(self, token: str | None) -> Team:
        """The team of a valid token; :class:`Refused` (401, 403) otherwise."""
        self.reload()
        if not token:
            raise Refused(401, "no token: send Authorization: Bearer <token> (gf01 eval token issue makes one)")
        known = self._known.get(token)
        if known is not None:
            return known
        match = TOKEN.fullmatch(token)
        row = None if match is None else self._by_id.get(match.group(1))
        if row is None or not hmac.compare_digest(row.sha256, _digest(token)):
            raise Refused(401, "the token is not valid on this server")
        if row.revoked:
            raise Refused(403, f"the token {row.token_id} of team {row.team} is revoked")
        team = Team(row.team, row.token_id, row.episodes_per_day, row.concurrent, row.oracle, row.panel)
        self._known[token] = team
        return team

    def panel_teams(self) -> frozenset[str]:
        """The operator's teams (issued with ``panel``): their runs are the leaderboard's baseline panel, whatever
        their agents are called. A revoked token's team stays one: its runs were played under it."""
        self.reload()
        return frozenset(r.team for r in self.rows if r.panel)
