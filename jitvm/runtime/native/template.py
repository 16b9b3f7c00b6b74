"""LLVM IR templates: the runtime's hand-written native code, kept in `.ll` files.

A template is IR text with placeholders, filled from `layout` (so no offset is ever written
twice) and from values its owner passes by name:

    ${Buffer.data}            byte offset of a field
    ${sizeof Buffer}          size of a struct
    ${fields Pool %pool f}    (alone on its line) `%f.<field> = getelementptr ...` for every
                              field of the Pool at %pool, padding fields (named _*) excepted
    ${NAME}                   a value: an int, a float (as an LLVM double), or text; text
                              with several lines (another rendered template) stands alone
                              on its line, at its start, and replaces that line
    ${if NAME} ...            (at a line's start) the rest of the line, kept only when the
    ${if not NAME} ...        bool NAME is true (false)

Variants (an architecture, a traced build) are chosen by which templates and values are
rendered. A placeholder without a value, or a value no placeholder uses, is an error:
a template and its owner cannot drift apart silently.
"""

from __future__ import annotations

import importlib
import re
import struct
from functools import lru_cache
from pathlib import Path

from . import layout

_PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
_CONDITION = re.compile(r"\$\{if (not )?(\w+)\}")
_NAME = re.compile(r"\w+")


class TemplateError(ValueError):
    """A template and the values given to it do not match."""


def render(package: str, name: str, /, **values) -> str:
    """Template `name`, shipped in `package` (next to the module that owns it), filled."""
    return render_text(_source(package, name), values, f"{package}/{name}")


def render_from(package: str, name: str, pool: dict) -> str:
    """Template `name` filled from the values of `pool` it names (several templates rendered
    with one set of values: a value none of them uses is the caller's to notice)."""
    text = _source(package, name)
    named = _named(package, name)
    return render_text(text, {k: v for k, v in pool.items() if k in named}, f"{package}/{name}")


@lru_cache(maxsize=None)
def _source(package: str, name: str) -> str:
    """The template's text, read from the package's folder (jitvm is installed as files: the
    code store's keys read its sources the same way; importlib.resources would cost every
    start its imports of tempfile, shutil and zipfile)."""
    return (Path(importlib.import_module(package).__file__).parent / name).read_text()


@lru_cache(maxsize=None)
def _named(package: str, name: str) -> frozenset[str]:
    """The names template `name`'s placeholders and conditions use."""
    text = _source(package, name)
    return frozenset({m[2] for m in _CONDITION.finditer(text)} | {m[1] for m in _PLACEHOLDER.finditer(text)})


def render_text(text: str, values: dict, origin: str = "<template>") -> str:
    """`text` with its placeholders filled from `layout` and `values`."""
    used: set[str] = set()
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if "${" not in line:  # most lines: kept as they are
            out.append(line)
            continue
        where = f"{origin}:{number}"
        keep = True
        condition = _CONDITION.match(line)
        if condition:
            flag = _value(condition[2], values, used, where)
            if not isinstance(flag, bool):
                raise TemplateError(f"{where}: ${{if {condition[2]}}} needs a bool, got {flag!r}")
            keep = flag != bool(condition[1])
            line = line[condition.end():]
        body = line.rstrip("\n")
        parts = _PLACEHOLDER.split(body)  # text, placeholder, text, ..., text
        if "${" in "".join(parts[::2]):
            raise TemplateError(f"{where}: malformed placeholder in {body.strip()!r}")
        if len(parts) == 3 and not parts[0] and not parts[2]:  # the placeholder alone: a block
            block = _resolve(parts[1], values, used, where)
            rendered = block.removesuffix("\n") + line[len(body):] if block else ""
        else:
            for k in range(1, len(parts), 2):
                parts[k] = _inline(_resolve(parts[k], values, used, where), where)
            rendered = "".join(parts) + line[len(body):]
        if keep:
            out.append(rendered)
    unused = set(values) - used
    if unused:
        raise TemplateError(f"{origin}: values not used: {', '.join(sorted(unused))}")
    return "".join(out)


def _resolve(expr: str, values: dict, used: set, where: str) -> str:
    words = expr.split()
    try:
        if len(words) == 2 and words[0] == "sizeof":
            return str(layout.sizeof(words[1]))
        if len(words) == 4 and words[0] == "fields":
            return _fields(*words[1:], where)
        if len(words) == 1 and "." in words[0]:
            struct_name, field_name = words[0].split(".", 1)
            return str(layout.field(struct_name, field_name).offset)
    except KeyError as e:
        raise TemplateError(f"{where}: no such struct or field: {e.args[0]}") from None
    if len(words) == 1 and _NAME.fullmatch(words[0]):
        return _text(_value(words[0], values, used, where), where)
    raise TemplateError(f"{where}: unknown placeholder ${{{expr}}}")


def _value(name: str, values: dict, used: set, where: str):
    if name not in values:
        raise TemplateError(f"{where}: no value for ${{{name}}}")
    used.add(name)
    return values[name]


def _text(value, where: str) -> str:
    if isinstance(value, bool):
        raise TemplateError(f"{where}: a bool fills only ${{if ...}}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _double(value)
    if isinstance(value, str):
        return value
    raise TemplateError(f"{where}: cannot render {value!r}")


def _double(value: float) -> str:
    """An LLVM double literal: decimal when that is exact, else the hexadecimal bit pattern."""
    decimal = f"{value:e}"
    if float(decimal) == value:
        return decimal
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def _inline(text: str, where: str) -> str:
    if "\n" in text:
        raise TemplateError(f"{where}: a value of several lines must stand alone on its line")
    return text


def _fields(struct_name: str, pointer: str, prefix: str, where: str) -> str:
    if not pointer.startswith("%"):
        raise TemplateError(f"{where}: ${{fields}} wants a %register, got {pointer!r}")
    if struct_name not in layout.STRUCTS:
        raise KeyError(struct_name)
    return "\n".join(f"  %{prefix}.{name} = getelementptr inbounds i8, ptr {pointer}, i64 "
                     f"{layout.field(struct_name, name).offset}"
                     for name, _ in layout.STRUCTS[struct_name] if not name.startswith("_"))
