"""Attribute dictionaries as VM assembly prints them: `attributes {vm.yield, vm.global_bytes = 40}`.

The syntax is MLIR's, reduced to what module metadata needs: keys (bare names or strings),
unit entries (a bare key), integers, strings with MLIR escapes (`\\"`, `\\\\`, `\\n`, `\\t`,
`\\XX`), lists in `[...]` and nested dictionaries; frontend.asm.attrs reads them back.
"""

from __future__ import annotations

import re


class Attrs(list):
    """A dictionary attribute: [(key, value), ...] in source order."""


BARE_KEY = re.compile(r"[A-Za-z_][\w.$-]*")
_PRINTABLE = re.compile(r'[^"\\\x00-\x1f\x7f]')


def format_string(value: str) -> str:
    """The quoted, escaped form parse_string reads back to `value`."""
    out = []
    for ch in value:
        if _PRINTABLE.fullmatch(ch):
            out.append(ch)
        elif ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append("".join(f"\\{b:02X}" for b in ch.encode()))
    return '"' + "".join(out) + '"'


def _format_key(key: str) -> str:
    return key if BARE_KEY.fullmatch(key) else format_string(key)


def format_value(value) -> str:
    if value is True:
        raise ValueError("unit attributes have no value")
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, bool):
        raise ValueError("booleans are not attribute values")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Attrs):
        return format_dict(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(x) for x in value) + "]"
    raise ValueError(f"cannot print attribute value {value!r}")


def format_dict(pairs) -> str:
    items = []
    for key, value in pairs:
        items.append(_format_key(key) if value is True else f"{_format_key(key)} = {format_value(value)}")
    return "{" + ", ".join(items) + "}"
