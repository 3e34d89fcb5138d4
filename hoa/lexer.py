"""HOA v1 tokens: split HOA text into token texts and kinds, with nested comments and escaped strings.

Speed matters (automata with 10^5 edges are common), so the text is split by one compiled regex with ``findall``
(whitespace folded into each match), comments are blanked out beforehand (nesting needs counting, not a regex), and
each distinct token text is classified once. Token offsets are only computed when a message needs a line and column.

>>> toks = tokenize('HOA: v1 /* a /* nested */ comment */ AP: 1 "a"')
>>> list(zip(toks.kinds, toks.texts)), toks.error
([('hdr', 'HOA:'), ('id', 'v1'), ('hdr', 'AP:'), ('int', '1'), ('str', '"a"')], None)
>>> toks.linecol(2)
(1, 38)
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from hoa.errors import Gf01Error

# One token per match, most frequent kinds first; possessive quantifiers never backtrack. A character no token
# accepts becomes a one-character token that classifies as "bad".
_TOKEN = re.compile(
    r"""[ \t\n\r]*+(
      [!&|()\[\]{}]
    | [0-9]++
    | [A-Za-z_][0-9A-Za-z_-]*+:?
    | "(?:[^"\\]|\\.)*+"
    | @[0-9A-Za-z_-]*+
    | --(?:BODY|END|ABORT)--
    | [^ \t\n\r]
    )""",
    re.VERBOSE | re.DOTALL,
)
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|/\*')
_COMMENT_EDGE = re.compile(r"/\*|\*/")
_NOT_NEWLINE = re.compile(r"[^\n]")
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_DIGITS = frozenset("0123456789")
_KEYWORDS = {"--BODY--": "body", "--END--": "end", "--ABORT--": "abort"}
_SYMBOLS = frozenset("!&|()[]{}")
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


@dataclass
class Tokens:
    """Token texts (as written) and kinds of an HOA text.

    Kinds: ``hdr`` HEADERNAME (with its colon), ``id`` IDENTIFIER, ``bool`` t/f, ``int`` INT, ``str`` STRING,
    ``aname`` @alias, ``sym`` one of ``! & | ( ) [ ] { }``, ``body`` / ``end`` / ``abort`` for the three keywords.
    When the text has a lexical error the lists stop before it and ``error`` holds it: the parser raises it only when
    it gets there, so an earlier syntax error is reported first and foreign text after the last automaton can be
    ignored.
    """

    source: Source
    texts: list[str]
    kinds: list[str]
    error: Gf01Error | None = None
    blanked: str = ""  # the text with comments blanked out (same offsets), what the token regex scanned
    _starts: list[int] | None = field(default=None, repr=False)

    def start(self, i: int) -> int:
        """The character offset of token ``i`` (``len(text)`` past the last token)."""
        if self._starts is None:
            self._starts = [m.start(1) for m in _TOKEN.finditer(self.blanked)]
        return self._starts[i] if i < len(self._starts) else len(self.source.text)

    def linecol(self, i: int) -> tuple[int, int]:
        """The 1-based (line, column) of token ``i``."""
        return self.source.linecol(self.start(i))

    def error_at(self, message: str, i: int) -> Gf01Error:
        """A Gf01Error located at token ``i``; past the tokens, the pending lexical error if there is one."""
        if i >= len(self.texts) and self.error is not None:
            return self.error
        return self.source.error(message, self.start(i))


def _blank_comments(text: str) -> tuple[str, int | None]:
    """``text`` with every (nested) comment replaced by spaces, newlines kept; and the offset of an unclosed one."""
    pieces: list[str] = []
    done = 0
    pos = 0
    while True:
        m = _STRING_OR_COMMENT.search(text, pos)
        if m is None:
            break
        if m.group() != "/*":
            pos = m.end()  # a string: "/*" inside it is not a comment
            continue
        depth = 0
        end = None
        for e in _COMMENT_EDGE.finditer(text, m.start()):
            depth += 1 if e.group() == "/*" else -1
            if depth == 0:
                end = e.end()
                break
        pieces.append(text[done : m.start()])
        if end is None:
            pieces.append(_NOT_NEWLINE.sub(" ", text[m.start() :]))
            return "".join(pieces), m.start()
        pieces.append(_NOT_NEWLINE.sub(" ", text[m.start() : end]))
        done = pos = end
    pieces.append(text[done:])
    return "".join(pieces), None


def _classify(tok: str) -> str:
    c = tok[0]
    if c in _IDENT_START:
        if tok[-1] == ":":
            return "hdr"
        return "bool" if tok == "t" or tok == "f" else "id"
    if c in _DIGITS:
        if (len(tok) > 1 and c == "0") or len(tok) > 10 or int(tok) >= INT_LIMIT:
            return "bad"
        return "int"
    if c == '"':
        return "str" if len(tok) > 1 else "bad"
    if len(tok) == 1 and c in _SYMBOLS:
        return "sym"
    if c == "@":
        return "aname" if len(tok) > 1 else "bad"
    return _KEYWORDS.get(tok, "bad")


def _bad_message(tok: str) -> str:
    c = tok[0]
    if c in _DIGITS:
        if c == "0":
            return f"integer {tok} has a leading zero (HOA INT is 0|[1-9][0-9]*)"
        return f"integer {tok} is too large (HOA integers are below 2^31)"
    if c == '"':
        return "unclosed string: '\"' without a matching '\"'"
    if c == "-":
        return "unexpected '-' (the keywords are --BODY--, --END-- and --ABORT--; names cannot start with '-')"
    if c == "@":
        return "empty alias name after '@'"
    return f"unexpected character {c!r}"


def tokenize(text: str, file: str | None = None) -> Tokens:
    """Split HOA ``text`` into tokens, stopping at the first lexical error (kept in ``Tokens.error``)."""
    source = Source(text, file)
    blanked, unclosed = _blank_comments(text) if "/*" in text else (text, None)
    texts: list[str] = _TOKEN.findall(blanked)
    table = {t: _classify(t) for t in set(texts)}
    kinds = list(map(table.__getitem__, texts))
    toks = Tokens(source, texts, kinds, blanked=blanked)
    if "bad" in table.values():
        i = kinds.index("bad")
        toks.error = source.error(_bad_message(texts[i]), toks.start(i))
        del texts[i:], kinds[i:]
    elif unclosed is not None:
        toks.error = source.error("unclosed comment: '/*' without a matching '*/'", unclosed)
    return toks


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
