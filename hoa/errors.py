"""The project's one exception type for errors a user can cause (bad input files, fields or arguments).

It lives in the lowest layer so that every layer raises the same type; the CLI prints it on one line
(``file:line:col: message``) and exits non-zero.
"""

from __future__ import annotations


class Gf01Error(Exception):
    """A user-caused error: bad HOA text, a bad certificate, a bad artifact field, a policy violation.

    >>> str(Gf01Error("AP index 3 out of range", file="a.hoa", line=4, col=9))
    'a.hoa:4:9: AP index 3 out of range'
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.field = field
        super().__init__(self.__str__())

    def located(self, file: str) -> Gf01Error:
        """The same error, attributed to ``file`` (used by readers that learn the file name late)."""
        return Gf01Error(self.message, file=file, line=self.line, col=self.col, field=self.field)

    def __str__(self) -> str:
        where = [p for p in (self.file, self.line, self.col) if p is not None]
        prefix = ":".join(str(p) for p in where)
        body = f"{self.field}: {self.message}" if self.field else self.message
        return f"{prefix}: {body}" if prefix else body


def quote(value: object, limit: int = 80, *, bare: bool = False) -> str:
    """``repr(value)`` (or ``str`` with ``bare``) cut to ``limit`` characters, so that an error message never echoes a
    huge input back in full.

    >>> quote("x" * 100, 10)
    "'xxxxxxx...' (102 characters)"
    """
    text = str(value) if bare else repr(value)
    if len(text) <= limit:
        return text
    close = text[0] if not bare and text[0] in "'\"" else ""
    return f"{text[: max(1, limit - 2)]}...{close} ({len(text)} characters)"
