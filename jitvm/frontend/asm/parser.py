"""VM assembly text -> a ModuleBuilder: the module-level grammar, one line at a time.

Top level (what `jitvm dump` prints, a superset of what iree-as-module reads):

    vm.module @name [version N] [attributes {...}]
    vm.dependency [optional] @name version >= N
    vm.type <type>
    vm.import [optional] @module.function cconv "<cconv>" [attributes {...}]
    vm.rodata[N] = <hex bytes>
    vm.global.<i32|i64|f32|f64> [private] [mutable] @name [= 0 : <type>]
    vm.global.ref [private] [mutable] @name : <type>
    vm.export @name [= @function]
    vm.func @name(%i0: i32, %i2:3 : i64, %r0: !vm.ref<?>) -> (i32) [attributes {...}] {
    ^label:
      <instruction in dump syntax, see asm.forms>
    }

Comments run from `//` to the end of a line (outside strings); lines may carry the
`[offset]` prefix iree-dump-module prints with --bytecode_offsets.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from ...errors import AsmError, Error
from .. import isa
from ..cconv import argument_registers, make_cconv, parse_cconv
from ..module import FEATURE_BITS
from .writer import FunctionDef, ModuleBuilder, Pending, VALUE_GLOBAL_SIZES
from . import attrs as attr_syntax
from .forms import MATCHERS, MNEMONIC, Label, read_reg, scan_type
from .source import Cursor

_SYMBOL = re.compile(r"@([\w.$:-]+)")
_WORD = re.compile(r"[\w.\[\]-]+")
_UINT = re.compile(r"\d+(?!\w)")
_HEX = re.compile(r"[0-9a-fA-F]*")
_LABEL_LINE = re.compile(r"\^([\w.$-]+)\s*:")
_OFFSET_PREFIX = re.compile(r"\s*\[[^\]]*\]")
_TYPE_CODES = {"i32": "i", "i64": "I", "f32": "f", "f64": "F"}
BLOCK = isa.OPS[(isa.CORE, isa.BLOCK_MARKER)]
FEATURE_ATTRS = {f"vm.{name.lower()}": bit for name, bit in FEATURE_BITS.items()}


def type_code(name: str) -> str | None:
    """Calling-convention code of a signature type: i32 i64 f32 f64, or r for any ref."""
    if name.startswith("!"):
        return "r"
    return _TYPE_CODES.get(name)


# --- attribute handlers -------------------------------------------------------------------

def _int_attr(cur, value, at, key):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        cur.fail(f"{key} takes a non-negative integer", at)
    return value


def _reflection(cur, value, at, key):
    if not isinstance(value, attr_syntax.Attrs) or not all(isinstance(v, str) for _, v in value):
        cur.fail(f"{key} takes a dictionary of strings", at)
    return tuple(value)


def _unit(cur, value, at, key):
    if value is not True:
        cur.fail(f"{key} is a unit attribute (write it without a value)", at)
    return True


def _string_list(cur, value, at, key):
    if not isinstance(value, list) or isinstance(value, attr_syntax.Attrs) or \
            not all(isinstance(v, str) for v in value):
        cur.fail(f"{key} takes a list of strings", at)
    return list(value)


def _cconv(cur, value, at, key):
    if not isinstance(value, str):
        cur.fail(f"{key} takes a calling convention string", at)
    try:
        parse_cconv(value, key)
    except Error as e:  # FormatError from parse_cconv
        cur.fail(str(e), at)
    return value


def _set(attr):
    return lambda target, v: setattr(target, attr, v)


def _add_features(target, bits):
    target.features |= bits


_FEATURE_HANDLERS = {key: (_unit, (lambda bit: lambda t, v: _add_features(t, bit))(bit))
                     for key, bit in FEATURE_ATTRS.items()}

MODULE_ATTRS = {
    "iree.reflection": (_reflection, lambda m, v: m.attrs.extend(v)),
    "vm.requirement_bits": (_int_attr, _add_features),
    "vm.global_bytes": (_int_attr, _set("global_bytes")),
    "vm.global_refs": (_int_attr, _set("global_refs")),
    "vm.debug_names": (_string_list, _set("debug_names")),
    **_FEATURE_HANDLERS,
}
FUNCTION_ATTRS = {
    "iree.reflection": (_reflection, _set("attrs")),
    "vm.requirement_bits": (_int_attr, _add_features),
    "vm.i32_registers": (_int_attr, _set("i32_registers")),
    "vm.ref_registers": (_int_attr, _set("ref_registers")),
    "vm.block_count": (_int_attr, _set("block_count")),
    "vm.cconv": (_cconv, _set("cconv")),
    **_FEATURE_HANDLERS,
}
IMPORT_ATTRS = {
    "iree.reflection": (_reflection, _set("attrs")),
}


def _apply_attrs(cur: Cursor, target, table: dict) -> None:
    """Parses `attributes {...}` at the cursor and applies each entry through `table`."""
    cur.skip_space()
    start = cur.pos
    pairs = attr_syntax.parse_dict(cur)
    for key, value in pairs:
        at = cur.text.find(key, start)
        handler = table.get(key)
        if handler is None:
            cur.fail(f"unknown attribute {key!r} here (known: {', '.join(sorted(table))})", max(at, start))
        check, apply = handler
        apply(target, check(cur, value, max(at, start), key))


def _maybe_attributes(cur: Cursor, target, table: dict) -> None:
    cur.skip_space()
    if cur.peek("attributes"):
        cur.pos += len("attributes")
        _apply_attrs(cur, target, table)


def _end(cur: Cursor) -> None:
    cur.skip_space()
    if cur.pos < cur.limit and not cur.peek("//"):
        cur.fail(f"unexpected {cur.text[cur.pos:cur.pos + 16]!r}")


def _symbol(cur: Cursor, what: str) -> str:
    return cur.word(_SYMBOL, what)[1:]


def _keyword(cur: Cursor, word: str) -> bool:
    cur.skip_space()
    if re.match(re.escape(word) + r"(?![\w.])", cur.text[cur.pos:cur.limit]):
        cur.pos += len(word)
        return True
    return False


def _uint(cur: Cursor, what: str) -> int:
    return int(cur.word(_UINT, what))


class _State:
    def __init__(self, builder: ModuleBuilder, source: str, allow_module: bool):
        self.b = builder
        self.source = source
        self.allow_module = allow_module
        self.module_seen = False
        self.fn: FunctionDef | None = None
        self.fn_cursor: Cursor | None = None
        self.label_uses: list[Label] = []

    # -- top level ------------------------------------------------------------------------

    def directive(self, cur: Cursor) -> None:
        cur.skip_space()
        at = cur.pos
        word = cur.word(_WORD, "a directive (vm.module, vm.type, vm.import, vm.rodata, vm.global, "
                               "vm.export, vm.func)")
        if word.startswith("vm.rodata["):
            cur.pos = at + len("vm.rodata")
            return self.rodata(cur)
        if word.startswith("vm.global."):
            return self.global_(cur, word[len("vm.global."):], at)
        handler = self.DIRECTIVES.get(word)
        if handler is None:
            cur.fail(f"unknown directive {word!r}", at)
        handler(self, cur)

    def module(self, cur: Cursor) -> None:
        cur.skip_space()
        at = cur.pos
        name = _symbol(cur, "the module name (@name)")
        if self.module_seen:
            cur.fail("the module is already declared", at)
        if name != self.b.name:
            if self.allow_module:
                raise AssertionError("assemble() names the builder after the first vm.module")
            cur.fail(f"this text declares module @{name} but the builder builds @{self.b.name}", at)
        self.module_seen = True
        if _keyword(cur, "version"):
            self.b.version = _uint(cur, "a version number")
        _maybe_attributes(cur, self.b, MODULE_ATTRS)
        _end(cur)

    def dependency(self, cur: Cursor) -> None:
        optional = _keyword(cur, "optional")
        cur.skip_space()
        at = cur.pos
        name = _symbol(cur, "a module name (@name)")
        version = 0
        if _keyword(cur, "version"):
            cur.expect(">=", "'>=' (the minimum version)")
            version = _uint(cur, "a version number")
        _end(cur)
        self.b.add_dependency(name, version, optional, cur.where(at))

    def type_(self, cur: Cursor) -> None:
        at = cur.pos
        name = scan_type(cur)
        _end(cur)
        self.b.add_type(name, cur.where(at))

    def import_(self, cur: Cursor) -> None:
        optional = _keyword(cur, "optional")
        cur.skip_space()
        at = cur.pos
        name = _symbol(cur, "the imported function (@module.function)")
        if not _keyword(cur, "cconv"):
            cur.fail("expected cconv \"<calling convention>\"")
        cur.skip_space()
        cc_at = cur.pos
        cconv = attr_syntax.parse_string(cur)
        target = SimpleNamespace(attrs=())
        _maybe_attributes(cur, target, IMPORT_ATTRS)
        _end(cur)
        try:
            parse_cconv(cconv, f"import @{name}")
        except Error as e:  # FormatError from parse_cconv
            cur.fail(str(e), cc_at)
        self.b.add_import(name, cconv, optional, target.attrs, cur.where(at))

    def rodata(self, cur: Cursor) -> None:
        cur.expect("[", "'['")
        at = cur.pos
        ordinal = _uint(cur, "the rodata ordinal")
        cur.expect("]", "']'")
        if ordinal != len(self.b.rodata):
            cur.fail(f"rodata segments are declared in order: expected vm.rodata[{len(self.b.rodata)}]", at)
        cur.expect("=", "'= <hex bytes>'")
        cur.skip_space()
        hex_at = cur.pos
        digits = cur.match(_HEX) or ""
        _end(cur)
        if len(digits) % 2:
            cur.fail(f"odd number of hex digits ({len(digits)})", hex_at)
        self.b.add_rodata(bytes.fromhex(digits))

    def global_(self, cur: Cursor, kind: str, at: int) -> None:
        if kind not in VALUE_GLOBAL_SIZES and kind != "ref":
            cur.fail(f"unknown global kind vm.global.{kind} (i32, i64, f32, f64 or ref)", at)
        _keyword(cur, "private")
        _keyword(cur, "mutable")
        cur.skip_space()
        name_at = cur.pos
        name = _symbol(cur, "the global's name (@name)")
        type_name = kind
        cur.skip_space()
        if kind == "ref":
            cur.expect(":", "': <ref type>' after a ref global")
            type_at = cur.pos
            type_name = scan_type(cur)
            if not type_name.startswith("!"):
                cur.fail(f"a ref global needs a ref type, not {type_name}", type_at)
        elif cur.peek("="):
            cur.pos += 1
            cur.skip_space()
            value_at = cur.pos
            value = cur.word(re.compile(r"[-+]?[\w.]+"), "the initial value")
            try:
                zero = float(value) == 0
            except ValueError:
                zero = False
            if not zero:
                cur.fail("globals start at zero; store other initial values from an __init function",
                         value_at)
            cur.expect(":", "': <type>'")
            t_at = cur.pos
            declared = scan_type(cur)
            if declared != kind:
                cur.fail(f"initializer type {declared} does not match vm.global.{kind}", t_at)
        _end(cur)
        self.b.add_global(name, type_name, cur.where(name_at))

    def export(self, cur: Cursor) -> None:
        cur.skip_space()
        at = cur.pos
        name = _symbol(cur, "the export name (@name)")
        function = name
        cur.skip_space()
        if cur.peek("="):
            cur.pos += 1
            function = _symbol(cur, "the exported function (@name)")
        _end(cur)
        self.b.add_export(name, function, cur.where(at))

    def func(self, cur: Cursor) -> None:
        cur.skip_space()
        at = cur.pos
        symbol = _symbol(cur, "the function name (@name)")
        cur.expect("(", "'(' and the arguments")
        args = self._arguments(cur)
        results: list[str] = []
        cur.skip_space()
        if cur.peek("->"):
            cur.pos += 2
            cur.expect("(", "'(' and the result types")
            results = self._types_until(cur, ")")
        fn = FunctionDef(symbol=symbol, cconv=make_cconv(args, results), where=cur.where(at))
        _maybe_attributes(cur, fn, FUNCTION_ATTRS)
        cur.expect("{", "'{' to open the body")
        _end(cur)
        self.fn = fn
        self.fn_cursor = Cursor(cur.text, cur.line, cur.source, at)
        self.label_uses = []

    def _arguments(self, cur: Cursor) -> list[str]:
        codes: list[str] = []
        regs = []
        cur.skip_space()
        if cur.peek(")"):
            cur.pos += 1
            return codes
        while True:
            cur.skip_space()
            reg_at = cur.pos
            reg = read_reg(cur, "any", False)
            cur.expect(":", "': <type>' after the argument register")
            t_at = cur.pos
            code = type_code(scan_type(cur))
            if code is None:
                cur.fail("argument types are i32, i64, f32, f64 or a ref type", t_at)
            codes.append(code)
            regs.append((reg, reg_at))
            cur.skip_space()
            if cur.peek(")"):
                cur.pos += 1
                break
            cur.expect(",", "',' or ')'")
        for (bank, index), (reg, reg_at) in zip(argument_registers(codes), regs):
            want = f"%r{index}" if bank == "ref" else (f"%i{index}:{index + 1}" if bank in ("i64", "f64")
                                                      else f"%i{index}")
            if (reg.bank == "ref") != (bank == "ref") or reg.index != index:
                cur.fail(f"arguments occupy registers in order: this one is {want}", reg_at)
        return codes

    def _types_until(self, cur: Cursor, close: str) -> list[str]:
        codes: list[str] = []
        cur.skip_space()
        if cur.peek(close):
            cur.pos += 1
            return codes
        while True:
            cur.skip_space()
            if cur.peek("%"):  # a named result: `%i0: i32`
                read_reg(cur, "any", False)
                cur.expect(":", "':'")
            t_at = cur.pos
            code = type_code(scan_type(cur))
            if code is None:
                cur.fail("result types are i32, i64, f32, f64 or a ref type", t_at)
            codes.append(code)
            cur.skip_space()
            if cur.peek(close):
                cur.pos += 1
                return codes
            cur.expect(",", f"',' or '{close}'")

    DIRECTIVES = {
        "vm.module": module, "vm.dependency": dependency, "vm.type": type_, "vm.import": import_,
        "vm.export": export, "vm.func": func,
    }

    # -- function bodies ----------------------------------------------------------------

    def body_line(self, cur: Cursor) -> None:
        fn = self.fn
        cur.skip_space()
        if cur.peek("}"):
            cur.pos += 1
            _end(cur)
            return self.end_function()
        m = _LABEL_LINE.match(cur.text, cur.pos, cur.limit)
        if m is not None:
            at = cur.pos
            cur.pos = m.end()
            _end(cur)
            name = m.group(1)
            if name in fn.labels:
                cur.fail(f"duplicate block label ^{name}", at)
            fn.labels[name] = len(fn.body)
            fn.body.append(Pending(BLOCK, (), cur.where(at)))
            return
        m = MNEMONIC.search(cur.text, cur.pos, cur.limit)
        if m is None:
            cur.fail("expected an instruction (vm.<op>), a block label (^name:) or '}'")
        matcher = MATCHERS.get(m.group(0))
        if matcher is None:
            cur.fail(f"unknown instruction {m.group(0)!r}", m.start())
        at = cur.pos
        args = matcher.parse(cur, self.b)
        if not fn.body:
            fn.body.append(Pending(BLOCK, (), cur.where(at)))  # the entry block needs no label
        fn.body.append(Pending(matcher.op, args, cur.where(at)))
        for f, value in zip(matcher.op.fields, args):
            if f.kind == isa.TARGET:
                self.label_uses.append(value)
            elif f.kind == isa.CASES:
                self.label_uses.extend(t for t, _ in value)

    def end_function(self) -> None:
        fn = self.fn
        for label in self.label_uses:
            if label.name not in fn.labels:
                raise label.where.error(f"unknown block label ^{label.name} in @{fn.symbol}")
        self.fn = None
        self.b.add_function(fn)


def parse_into(builder: ModuleBuilder, text: str, source: str = "<vmasm>", allow_module: bool = False) -> None:
    """Parses `text` line by line into `builder`; AsmError names line and column."""
    state = _State(builder, source, allow_module)
    for lineno, line in enumerate(text.split("\n"), 1):
        cur = Cursor(line, lineno, source)
        m = _OFFSET_PREFIX.match(line)
        if m is not None:
            cur.pos = m.end()
        cur.skip_space()
        if cur.pos >= cur.limit or cur.peek("//"):
            continue
        try:
            if state.fn is not None:
                state.body_line(cur)
            else:
                state.directive(cur)
        except AsmError:
            raise
        except Error as e:  # a builder error without a position: give it this line's
            raise AsmError(str(e), lineno, cur.pos + 1, source, line) from None
    if state.fn is not None:
        raise state.fn.where.error(f"function @{state.fn.symbol} is not closed with '}}'")


_MODULE_LINE = re.compile(r"\s*vm\.module\s+@([\w.$-]+)")


def assemble_builder(text: str, source: str = "<vmasm>") -> ModuleBuilder:
    """A builder for a whole module: the first directive must be `vm.module @name`."""
    for lineno, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        m = _MODULE_LINE.match(line)
        if m is None:
            raise AsmError("a module starts with `vm.module @name`", lineno, len(line) - len(line.lstrip()) + 1,
                           source, line)
        builder = ModuleBuilder(m.group(1))
        parse_into(builder, text, source, allow_module=True)
        return builder
    raise AsmError("empty source: a module starts with `vm.module @name`", None, None, source)
