"""Positions in VM assembly text: a cursor over one line that fails with line and column."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import AsmError

_SPACE = re.compile(r"[ \t\r]*")


@dataclass(frozen=True)
class Where:
    """A place in the source, kept with anything resolved later (symbols, labels)."""

    source: str
    line: int
    column: int
    text: str

    def error(self, message: str) -> AsmError:
        return AsmError(message, self.line, self.column, self.source, self.text)


class Cursor:
    """Scans one source line; `fail` raises AsmError at the current (or a given) column."""

    __slots__ = ("text", "pos", "line", "source", "limit")

    def __init__(self, text: str, line: int, source: str, pos: int = 0, limit: int | None = None):
        self.text = text
        self.pos = pos
        self.line = line
        self.source = source
        self.limit = len(text) if limit is None else limit

    def where(self, pos: int | None = None) -> Where:
        return Where(self.source, self.line, (self.pos if pos is None else pos) + 1, self.text)

    def fail(self, message: str, pos: int | None = None):
        raise self.where(pos).error(message)

    def skip_space(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= self.limit

    def peek(self, literal: str) -> bool:
        return self.text.startswith(literal, self.pos)

    def match(self, pattern: re.Pattern) -> str | None:
        m = pattern.match(self.text, self.pos, self.limit)
        if m is None:
            return None
        self.pos = m.end()
        return m.group(0)

    def expect(self, literal: str, what: str | None = None) -> None:
        self.skip_space()
        if not self.text.startswith(literal, self.pos):
            found = self.text[self.pos:self.pos + 12] or "end of line"
            self.fail(f"expected {what or repr(literal)}, found {found!r}")
        self.pos += len(literal)

    def word(self, pattern: re.Pattern, what: str) -> str:
        self.skip_space()
        m = self.match(pattern)
        if m is None:
            found = self.text[self.pos:self.pos + 12] or "end of line"
            self.fail(f"expected {what}, found {found!r}")
        return m
