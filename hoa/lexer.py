"""HOA v1 tokens: split HOA text into kinds, texts and offsets, with nested comments and escaped strings.

One compiled master regex scans the whole text with ``finditer``; leading whitespace is folded into each match so
that a token costs one match. Positions are character offsets; :class:`Source` turns an offset into line and column
(both from 1) only when a message needs them.

>>> toks = tokenize('HOA: v1 /* a /* nested */ comment */ AP: 1 "a"')
>>> toks.error is None
True
>>> list(zip(toks.kinds, toks.texts))
[('hdr', 'HOA:'), ('id', 'v1'), ('hdr', 'AP:'), ('int', '1'), ('str', '"a"')]
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from hoa.errors import Gf01Error

# Token kinds: "hdr" HEADERNAME (with its colon), "id" IDENTIFIER, "bool" t/f, "int" INT, "str" STRING (quotes and
# escapes kept as written), "aname" @alias, "sym" one of ! & | ( ) [ ] { }, "body" / "end" / "abort" for
# --BODY-- / --END-- / --ABORT--.
_MASTER = re.compile(
    r"""[ \t\n\r]*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<hdr>[A-Za-z_][0-9A-Za-z_-]*:)
    | (?P<id>[A-Za-z_][0-9A-Za-z_-]*)
    | (?P<int>[0-9]+)
    | (?P<sym>[!&|()\[\]{}])
    | (?P<aname>@[0-9A-Za-z_-]+)
    | (?P<kw>--(?:BODY|END|ABORT)--)
    | (?P<com>/\*)
    | (?P<bad>[^ \t\n\r])
    )""",
    re.VERBOSE | re.DOTALL,
)
_COMMENT_EDGE = re.compile(r"/\*|\*/")
_KEYWORDS = {"--BODY--": "body", "--END--": "end", "--ABORT--": "abort"}
#: HOA integers are below 2^31 (spec, "Common Tokens").
INT_LIMIT = 1 << 31


@dataclass(frozen=True)
class Source:
    """The text being read and its file name; maps offsets to (line, col) for error messages."""

    text: str
    file: str | None = None
    _newlines: list[int] = field(default_factory=list, repr=False, compare=False)

    def linecol(self, pos: int) -> tuple[int, int]:
        """The 1-based (line, column) of character offset ``pos``."""
        if not self._newlines and "\n" in self.text:
            self._newlines.extend(m.start() for m in re.finditer("\n", self.text))
        line = bisect_right(self._newlines, pos - 1)
        start = self._newlines[line - 1] + 1 if line else 0
        return line + 1, pos - start + 1

    def error(self, message: str, pos: int) -> Gf01Error:
        """A Gf01Error located at offset ``pos`` of this source."""
        line, col = self.linecol(pos)
        return Gf01Error(message, file=self.file, line=line, col=col)


@dataclass(frozen=True)
class Tokens:
    """Parallel token lists (kind, text as written, start offset), plus the source they came from.

    When the text has a lexical error, the lists stop there and ``error`` holds it: the parser raises it only if it
    reaches that point, so an earlier syntax error is reported first and text after the last automaton that is not
    HOA at all can be ignored.
    """

    source: Source
    kinds: list[str]
    texts: list[str]
    starts: list[int]
    error: Gf01Error | None = None


def _comment_end(text: str, start: int, source: Source) -> int:
    """The offset just after the comment opened at ``start``, honouring nesting (``/*a/*b*/c*/`` is one comment)."""
    depth = 0
    for m in _COMMENT_EDGE.finditer(text, start):
        depth += 1 if m.group() == "/*" else -1
        if depth == 0:
            return m.end()
    raise source.error("unclosed comment: '/*' without a matching '*/'", start)


def tokenize(text: str, file: str | None = None) -> Tokens:
    """Split HOA ``text`` into tokens, stopping at the first lexical error (kept in ``Tokens.error``)."""
    source = Source(text, file)
    kinds: list[str] = []
    texts: list[str] = []
    starts: list[int] = []
    try:
        _scan(text, source, kinds, texts, starts)
    except Gf01Error as err:
        return Tokens(source, kinds, texts, starts, err)
    return Tokens(source, kinds, texts, starts)


def _scan(text: str, source: Source, kinds: list[str], texts: list[str], starts: list[int]) -> None:
    add_kind, add_text, add_start = kinds.append, texts.append, starts.append
    it = _MASTER.finditer(text)
    while True:
        for m in it:
            kind = m.lastgroup
            start = m.start(kind)  # type: ignore[arg-type]
            tok = m.group(kind)  # type: ignore[arg-type]
            if kind == "id":
                if tok == "t" or tok == "f":
                    kind = "bool"
            elif kind == "int":
                if len(tok) > 1 and tok[0] == "0":
                    raise source.error(f"integer {tok} has a leading zero (HOA INT is 0|[1-9][0-9]*)", start)
                if len(tok) > 10 or int(tok) >= INT_LIMIT:
                    raise source.error(f"integer {tok} is too large (HOA integers are below 2^31)", start)
            elif kind == "kw":
                kind = _KEYWORDS[tok]
            elif kind == "com":
                # Nested comments cannot be matched by a regex: find the end by counting, then resume scanning.
                it = _MASTER.finditer(text, _comment_end(text, start, source))
                break
            elif kind == "bad":
                raise source.error(_bad_message(text, start), start)
            add_kind(kind)  # type: ignore[arg-type]
            add_text(tok)
            add_start(start)
        else:
            return


def _bad_message(text: str, pos: int) -> str:
    ch = text[pos]
    if ch == '"':
        return "unclosed string: '\"' without a matching '\"'"
    if text.startswith("--", pos):
        word = re.match(r"--[A-Za-z]*-*", text[pos:])
        shown = word.group() if word else "--"
        return f"unknown keyword {shown!r} (expected --BODY--, --END-- or --ABORT--)"
    if ch == "@":
        return "empty alias name after '@'"
    return f"unexpected character {ch!r}"


def decode_string(token: str) -> str:
    """The content of a STRING token: quotes removed, ``\\"`` and ``\\\\`` unescaped, other escapes kept as written.

    Keeping unknown escapes (``\\n`` stays backslash + n) makes decoding lossless: :func:`encode_string` inverts it.
    """
    body = token[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r'\\(["\\])', r"\1", body)


def encode_string(value: str) -> str:
    """``value`` as a HOA STRING token (the inverse of :func:`decode_string`)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


__all__ = ["INT_LIMIT", "Source", "Tokens", "decode_string", "encode_string", "tokenize"]
