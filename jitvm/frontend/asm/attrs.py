"""Attribute dictionaries read from VM assembly (frontend.attrs prints them).

The syntax is MLIR's, reduced to what module metadata needs: keys (bare names or strings),
unit entries (a bare key), integers, strings with MLIR escapes (`\\"`, `\\\\`, `\\n`, `\\t`,
`\\XX`), lists in `[...]` and nested dictionaries. Parsed values are Python values: True for
units, int, str, list, and `Attrs` (an ordered list of pairs) for dictionaries.
"""

from __future__ import annotations

import re

from ..attrs import BARE_KEY, Attrs
from .source import Cursor



_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|\d+)")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
_PRINTABLE = re.compile(r'[^"\\\x00-\x1f\x7f]')


def parse_string(cur: Cursor) -> str:
    """A double-quoted string at the cursor, escapes decoded (bytes via UTF-8)."""
    cur.skip_space()
    start = cur.pos
    cur.expect('"', "a quoted string")
    out = bytearray()
    text = cur.text
    while True:
        if cur.pos >= len(text):
            cur.fail("unterminated string", start)
        c = text[cur.pos]
        if c == '"':
            cur.pos += 1
            break
        if c == "\\":
            nxt = text[cur.pos + 1:cur.pos + 2]
            if nxt in _SIMPLE_ESCAPES:
                out += _SIMPLE_ESCAPES[nxt].encode()
                cur.pos += 2
                continue
            pair = text[cur.pos + 1:cur.pos + 3]
            if re.fullmatch(r"[0-9a-fA-F]{2}", pair):
                out.append(int(pair, 16))
                cur.pos += 3
                continue
            cur.fail("invalid escape in string (use \\\", \\\\, \\n, \\t or \\XX)")
        out += c.encode()
        cur.pos += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        cur.fail("string escapes do not form valid UTF-8", start)


def _key(cur: Cursor) -> str:
    cur.skip_space()
    if cur.peek('"'):
        return parse_string(cur)
    m = cur.match(BARE_KEY)
    if m is None:
        cur.fail("expected an attribute name")
    return m


def parse_value(cur: Cursor):
    cur.skip_space()
    if cur.peek('"'):
        return parse_string(cur)
    if cur.peek("{"):
        return parse_dict(cur)
    if cur.peek("["):
        cur.pos += 1
        items = []
        cur.skip_space()
        if cur.peek("]"):
            cur.pos += 1
            return items
        while True:
            items.append(parse_value(cur))
            cur.skip_space()
            if cur.peek("]"):
                cur.pos += 1
                return items
            cur.expect(",", "',' or ']'")
    m = cur.match(_INT)
    if m is not None:
        return int(m, 0)
    cur.fail("expected an attribute value (string, integer, [list] or {dictionary})")


def parse_dict(cur: Cursor) -> Attrs:
    """`{key, key = value, ...}`; duplicate keys are an error."""
    cur.skip_space()
    cur.expect("{", "'{'")
    out = Attrs()
    seen = set()
    cur.skip_space()
    if cur.peek("}"):
        cur.pos += 1
        return out
    while True:
        cur.skip_space()
        at = cur.pos
        key = _key(cur)
        if key in seen:
            cur.fail(f"duplicate attribute {key!r}", at)
        seen.add(key)
        cur.skip_space()
        if cur.peek("="):
            cur.pos += 1
            out.append((key, parse_value(cur)))
        else:
            out.append((key, True))
        cur.skip_space()
        if cur.peek("}"):
            cur.pos += 1
            return out
        cur.expect(",", "',' or '}'")
