"""Instruction lines -> operands, with one matcher per op derived from its dump form.

Each op's `form` in the ISA table (the syntax iree-dump-module prints) is compiled once into
a sequence of literal words, the mnemonic, and operand fields; matching walks it left to
right, skipping whitespace between words, so errors point at the first thing that does not
fit. A field is scanned by the reader of its *kind* (register, constant, type, label, ...),
never by op. The trailing `// ...` comments of the dump (constant hex, rodata size) are
accepted and ignored.

iree-as-module also reads a generic form for simple ops: results, then the mnemonic, then
the operands in wire order with a type operand written `: type` after the operand before it
(`vm.global.store.indirect.i32 %off, %val`). Where it differs from the dump form it is
derived from the same field list and tried second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import AsmError
from .. import isa
from ..decode import Reg
from .encode import EncodeError, reg as make_reg
from ..floatbits import round_to_f32
from .writer import Label, Symbol
from .source import Cursor

_REG = re.compile(r"%([irR])(\d+)(?::(\d+))?")
_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|\d+)(?![\w.])")
_FLOAT = re.compile(r"[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|0[xX][0-9a-fA-F.]+(?:[pP][-+]?\d+)?)(?![\w.])",
                    re.IGNORECASE)
_SYMBOL = re.compile(r"@([\w.$:-]+)")
_LABEL = re.compile(r"\^([\w.$-]+)")
_UINT = re.compile(r"\d+(?!\w)")
_STORAGE = re.compile(r"\.(rwdata|refs)\[(\d+)\]")

INT_RANGE = {"i32": (-(1 << 31), (1 << 32) - 1), "i64": (-(1 << 63), (1 << 64) - 1)}


# --- field readers: one per operand kind ------------------------------------------------

def read_reg(cur: Cursor, bank: str, allow_move: bool) -> Reg:
    """A register of `bank` ("any" for untyped lists): %iN, %iN:N+1 (i64/f64), %rN, %RN."""
    cur.skip_space()
    at = cur.pos
    m = _REG.match(cur.text, cur.pos, cur.limit)
    if m is None:
        want = {"ref": "a ref register (%rN)", "any": "a register"}.get(bank, f"an {bank} register (%iN)")
        found = cur.text[cur.pos:cur.pos + 12] or "end of line"
        cur.fail(f"expected {want}, found {found!r}")
    cur.pos = m.end()
    kind, index, high = m.group(1), int(m.group(2)), m.group(3)
    try:
        if kind in "rR":
            if bank not in ("ref", "any"):
                cur.fail(f"expected an {bank} register, found a ref register", at)
            if high is not None:
                cur.fail("ref registers are not pairs", at)
            if kind == "R" and not allow_move:
                cur.fail("this operand cannot move its ref (write %r, not %R)", at)
            return make_reg("ref", index, kind == "R")
        if bank == "ref":
            cur.fail("expected a ref register (%rN)", at)
        if high is not None:
            if bank in ("i32", "f32"):
                cur.fail(f"an {bank} operand is a single register, not a pair", at)
            if int(high) != index + 1:
                cur.fail(f"a register pair names adjacent registers (%i{index}:{index + 1})", at)
        return make_reg("i32" if bank == "any" else bank, index)
    except EncodeError as e:
        cur.fail(str(e), at)


def _read_int(cur: Cursor, bank: str) -> int:
    cur.skip_space()
    at = cur.pos
    text = cur.match(_INT)
    if text is None:
        cur.fail(f"expected an {bank} constant")
    value = int(text, 0)
    lo, hi = INT_RANGE[bank]
    if not lo <= value <= hi:
        cur.fail(f"{text} does not fit in {bank}", at)
    return value


def _read_float(cur: Cursor, bank: str) -> float:
    cur.skip_space()
    at = cur.pos
    text = cur.match(_FLOAT)
    if text is None:
        cur.fail(f"expected an {bank} constant")
    lower = text.lower().lstrip("+")
    if "0x" in lower:
        value = float.fromhex(lower)
    else:
        value = float(lower)
    if bank == "f32":  # the value the bytecode will hold: rounded to f32
        try:
            value = round_to_f32(value)
        except OverflowError:
            cur.fail(f"{text} is out of range for f32", at)
    return value


def _read_imm(f: isa.Field):
    if f.bank in ("f32", "f64"):
        return lambda cur, ctx: _read_float(cur, f.bank)
    return lambda cur, ctx: _read_int(cur, f.bank)


def _read_uint(what: str):
    def read(cur: Cursor, ctx) -> int:
        value = int(cur.word(_UINT, what))
        if value > 0xFFFFFFFF:
            cur.fail(f"{what} {value} does not fit in 32 bits")
        return value
    return read


def _read_global(f: isa.Field):
    """`.rwdata[N]` / `.refs[N]` (storage offsets as the dump prints them) or `@name`."""
    storage = "refs" if f.bank == "ref" else "rwdata"

    def read(cur: Cursor, ctx):
        cur.skip_space()
        at = cur.pos
        if cur.peek("@"):
            name = cur.word(_SYMBOL, "a global name")[1:]
            return Symbol(name, cur.where(at))
        m = _STORAGE.match(cur.text, cur.pos, cur.limit)
        if m is None:
            cur.fail(f"expected .{storage}[N] or @global")
        if m.group(1) != storage:
            cur.fail(f"{f.bank} globals live in .{storage}, not .{m.group(1)}")
        cur.pos = m.end()
        value = int(m.group(2))
        if value > 0xFFFFFFFF:
            cur.fail(f"global offset {value} does not fit in 32 bits", at)
        return value
    return read


_FUNC_NAME = re.compile(r"@?([\w.$:-]+)")


def _read_func(cur: Cursor, ctx) -> Symbol:
    """A function name; the dump form supplies the `@` as a literal, the generic form does not."""
    cur.skip_space()
    at = cur.pos - 1 if cur.pos and cur.text[cur.pos - 1] == "@" else cur.pos
    text = cur.word(_FUNC_NAME, "a function name (@name)")
    return Symbol(text.lstrip("@"), cur.where(at))


def scan_type(cur: Cursor) -> str:
    """A type name: `i32`, `!hal.buffer`, `!vm.list<!vm.list<?>>`, `?`."""
    cur.skip_space()
    start = cur.pos
    depth = 0
    text = cur.text
    while cur.pos < cur.limit:
        c = text[cur.pos]
        if c == "<":
            depth += 1
        elif c == ">":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (c.isspace() or c in ",()"):
            break
        cur.pos += 1
    name = text[start:cur.pos]
    if not name or depth:
        cur.fail("expected a type", start)
    return name


def _read_type(cur: Cursor, ctx) -> int:
    at = cur.pos
    name = scan_type(cur)
    return ctx.type_ordinal(name, cur.where(at))


def _read_string(cur: Cursor, ctx, closing: str) -> bytes:
    """The text up to the last `closing` on the line (so the string may contain quotes)."""
    end = cur.text.rfind(closing, cur.pos, cur.limit)
    if end < 0:
        opening = cur.pos - 1 if cur.pos and cur.text[cur.pos - 1] == '"' else cur.pos
        cur.fail(f"unterminated string (no closing {closing!r})", opening)
    data = cur.text[cur.pos:end].encode("utf-8")
    if len(data) > 0xFFFF:
        cur.fail(f"string of {len(data)} bytes exceeds the 65535 a string operand holds")
    cur.pos = end
    return data


def _read_label(cur: Cursor, ctx) -> Label:
    cur.skip_space()
    at = cur.pos
    return Label(cur.word(_LABEL, "a block label (^name)")[1:], cur.where(at))


def _comma_list(cur: Cursor, item, starts) -> tuple:
    """Comma-separated items; empty when the next text does not start an item."""
    out = []
    cur.skip_space()
    if not starts(cur):
        return ()
    while True:
        out.append(item(cur))
        cur.skip_space()
        if not cur.peek(","):
            return tuple(out)
        save = cur.pos
        cur.pos += 1
        cur.skip_space()
        if not starts(cur):
            cur.pos = save
            return tuple(out)


def _starts_reg(cur: Cursor) -> bool:
    return cur.peek("%")


def _read_remap(cur: Cursor, ctx=None) -> tuple:
    def pair(c: Cursor):
        src = read_reg(c, "any", True)
        c.expect("->", "'->'")
        return src, read_reg(c, "any", True)
    return _comma_list(cur, pair, _starts_reg)


def _read_regs(f: isa.Field):
    allow_move = f.bank in ("any", "ref")
    return lambda cur, ctx: _comma_list(cur, lambda c: read_reg(c, f.bank, allow_move), _starts_reg)


def _read_segments(cur: Cursor, ctx) -> tuple:
    def item(c: Cursor) -> int:
        value = int(c.word(_UINT, "a segment size"))
        if value > 0xFFFF:
            c.fail(f"segment size {value} does not fit in 16 bits")
        return value
    return _comma_list(cur, item, lambda c: bool(_UINT.match(c.text, c.pos, c.limit)))


def _read_cases(cur: Cursor, ctx) -> tuple:
    """`, 0: ^bb1(remap), 1: ^bb2(remap)` as the dump prints a branch table's cases."""
    cases = []
    while True:
        cur.skip_space()
        if not cur.peek(","):
            return tuple(cases)
        cur.pos += 1
        at = cur.pos
        index = int(cur.word(_UINT, "a case number"))
        if index != len(cases):
            cur.fail(f"case {index} out of order: cases are numbered from 0 (expected {len(cases)})", at)
        cur.expect(":", "':'")
        target = _read_label(cur, ctx)
        cur.expect("(", "'('")
        remap = _read_remap(cur)
        cur.expect(")", "')'")
        cases.append((target, remap))


_KIND_READERS = {
    isa.REG: lambda f: (lambda cur, ctx: read_reg(cur, f.bank, f.move)),
    isa.IMM: _read_imm,
    isa.GLOBAL: _read_global,
    isa.RODATA: lambda f: _read_uint("a rodata ordinal"),
    isa.FUNC: lambda f: _read_func,
    isa.TYPE: lambda f: _read_type,
    isa.TARGET: lambda f: _read_label,
    isa.REMAP: lambda f: _read_remap,
    isa.REGS: _read_regs,
    isa.SEGMENTS: lambda f: _read_segments,
    isa.CASES: lambda f: _read_cases,
}


# --- compiled forms -----------------------------------------------------------------------

@dataclass(frozen=True)
class _Lit:
    words: tuple[str, ...]


@dataclass(frozen=True)
class _Field:
    index: int
    mode: str  # "plain", "prefix" ("{x=}": "x = " when present), "suffix" ("{x= }")


_MNEMONIC = object()


@dataclass(frozen=True)
class _AnyType:
    """A type the form prints for information only (`!vm.ref<?>` in cast.any.ref): any type reads."""

    shown: str


@dataclass(frozen=True)
class _Branch:
    """A target with its operand remap, `^label(%a->%b)`; without operands the parens may go."""

    target: int
    remap: int


def _fold_branches(parts: list) -> list:
    """[TARGET, "(", REMAP, ")..."] -> [_Branch, "..."] so `vm.br ^bb1` reads like `^bb1()`."""
    out: list = []
    i = 0
    while i < len(parts):
        p = parts[i]
        nxt = parts[i + 1:i + 4]
        if (isinstance(p, _Field) and len(nxt) == 3 and isinstance(nxt[0], _Lit) and nxt[0].words == ("(",)
                and isinstance(nxt[1], _Field) and isinstance(nxt[2], _Lit) and nxt[2].words
                and nxt[2].words[0].startswith(")")):
            out.append((p.index, nxt[1].index))
            rest = (nxt[2].words[0][1:],) if nxt[2].words[0] != ")" else ()
            rest += nxt[2].words[1:]
            if rest:
                out.append(_Lit(rest))
            i += 4
            continue
        out.append(p)
        i += 1
    return out


def _is_whole_type(word: str) -> bool:
    return word.startswith("!") and word.count("<") == word.count(">")


def _split_words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def compile_form(form: str, op: isa.Op) -> tuple:
    """Template -> parts; literal brackets around a GLOBAL field fold into the field."""
    raw: list = []
    for part in isa.form_parts(form.split(isa.FORM_COMMENT, 1)[0]):
        if not isinstance(part, isa.FormField):
            raw.append(part)
        elif part.name == "mnemonic":
            raw.append(_MNEMONIC)
        elif part.name == "block":
            raise ValueError("block markers are labels, not instructions")
        else:
            raw.append(_Field(op.index(part.name), part.mode))
    # Merge adjacent literal strings, fold `.rwdata[` ... `]` into GLOBAL fields.
    merged: list = []
    for part in raw:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    for i, part in enumerate(merged):
        if isinstance(part, _Field) and op.fields[part.index].kind == isa.GLOBAL:
            before, after = merged[i - 1], merged[i + 1]
            cut = before.rfind(".")
            merged[i - 1] = before[:cut]
            merged[i + 1] = after[1:]
    parts: list = []
    for p in merged:
        if not isinstance(p, str):
            parts.append(p)
            continue
        words: list[str] = []
        for word in _split_words(p):
            if _is_whole_type(word):
                if words:
                    parts.append(_Lit(tuple(words)))
                    words = []
                parts.append(_AnyType(word))
            else:
                words.append(word)
        if words:
            parts.append(_Lit(tuple(words)))
    folded = []
    for p in _fold_branches(parts):
        if isinstance(p, tuple):
            target, remap = p
            if op.fields[target].kind == isa.TARGET and op.fields[remap].kind == isa.REMAP:
                folded.append(_Branch(target, remap))
            else:
                folded += [_Field(target, "plain"), _Lit(("(",)), _Field(remap, "plain"), _Lit((")",))]
        else:
            folded.append(p)
    return tuple(folded)


def wire_forms(op: isa.Op) -> list[str]:
    """iree-as-module's generic spelling: outputs, mnemonic, inputs in wire order.

    A type operand follows the operand before it as `: type`, a string is quoted, and a
    trailing register list may be left out when it is empty. Ops with branch targets or
    segment lists have no generic spelling.
    """
    simple = {isa.REG, isa.IMM, isa.GLOBAL, isa.RODATA, isa.FUNC, isa.TYPE, isa.STRING, isa.REGS}
    if any(f.kind not in simple for f in op.fields):
        return []
    outs = [f"{{{f.name}}}" for f in op.fields if f.out]
    ins: list[str] = []
    for f in op.fields:
        if f.out:
            continue
        if f.kind == isa.TYPE and ins:
            ins[-1] += f" : {{{f.name}}}"
        elif f.kind == isa.STRING:
            ins.append(f'"{{{f.name}}}"')
        else:
            ins.append(f"{{{f.name}}}")
    lhs = ", ".join(outs) + " = " if outs else ""
    variants = [ins]
    last = [f for f in op.fields if not f.out][-1:] if ins else []
    if last and last[0].kind == isa.REGS:
        variants.append(ins[:-1])
    return [lhs + "{mnemonic}" + (" " + ", ".join(v) if v else "") for v in variants]


@dataclass(frozen=True)
class Matcher:
    op: isa.Op
    forms: tuple  # compiled forms, the dump form first
    readers: tuple  # one per field

    def parse(self, cur: Cursor, ctx) -> tuple:
        """Operands in wire order; raises AsmError from the form that matched furthest."""
        start = cur.pos
        best = None
        for parts in self.forms:
            cur.pos = start
            try:
                return self._parse(parts, cur, ctx)
            except AsmError as e:  # keep the error of the form that got furthest
                if best is None or (e.column or 0) > (best.column or 0):
                    best = e
        raise best

    def _parse(self, parts, cur: Cursor, ctx) -> tuple:
        args: list = [None] * len(self.op.fields)
        for i, part in enumerate(parts):
            if part is _MNEMONIC:
                cur.expect(self.op.mnemonic, f"'{self.op.mnemonic}'")
                if cur.pos < cur.limit and not (cur.text[cur.pos].isspace() or cur.text[cur.pos] in "(@"):
                    cur.fail(f"unknown instruction (expected {self.op.mnemonic})")
            elif isinstance(part, _Lit):
                for word in part.words:
                    cur.expect(word, f"'{word}'")
            elif isinstance(part, _AnyType):
                scan_type(cur)
            elif isinstance(part, _Branch):
                args[part.target] = _read_label(cur, ctx)
                cur.skip_space()
                if cur.peek("("):
                    cur.pos += 1
                    args[part.remap] = _read_remap(cur)
                    cur.expect(")", "')' after the branch operands")
                else:
                    args[part.remap] = ()
            elif self.op.fields[part.index].kind == isa.STRING:
                nxt = parts[i + 1] if i + 1 < len(parts) else None
                closing = nxt.words[0] if isinstance(nxt, _Lit) and nxt.words else '"'
                args[part.index] = _read_string(cur, ctx, closing)
            elif part.mode == "prefix":
                save = cur.pos
                value = self.readers[part.index](cur, ctx)
                cur.skip_space()
                if value and cur.peek("="):
                    cur.pos += 1
                else:
                    cur.pos, value = save, ()
                args[part.index] = value
            else:
                args[part.index] = self.readers[part.index](cur, ctx)
        cur.skip_space()
        if cur.pos < cur.limit and not cur.peek("//"):
            cur.fail(f"unexpected {cur.text[cur.pos:cur.pos + 16]!r} after the operands of {self.op.mnemonic}")
        return tuple(() if a is None and f.kind == isa.REGS else a for f, a in zip(self.op.fields, args))


def _matcher(op: isa.Op) -> Matcher:
    forms = [compile_form(op.form, op)]
    for generic in wire_forms(op):
        compiled = compile_form(generic, op)
        if compiled not in forms:
            forms.append(compiled)
    readers = tuple(_KIND_READERS[f.kind](f) if f.kind != isa.STRING else None for f in op.fields)
    return Matcher(op, tuple(forms), readers)


MATCHERS: dict[str, Matcher] = {op.mnemonic: _matcher(op) for op in isa.OPS.values()
                                if op.code != isa.BLOCK_MARKER or op.opset != isa.CORE}
"""vm.<name> -> its matcher, for every instruction (block markers are label lines)."""

MNEMONIC = re.compile(r"(?<![\w.@!%^])vm\.[\w.]+")
