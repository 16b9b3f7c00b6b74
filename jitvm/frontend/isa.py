"""THE opcode table of VM bytecode 17.0: every opcode, its number, operands and dump form.

Decoder, disassembler, verifier, interpreter and lowering all read this table (or register
handlers against its names); no other module lists opcodes. Facts (numbers, operand order)
follow IREE's bytecode format; the layout of the table is jitvm's own.

Operands are `Field`s in wire order. Register fields name their bank (i32, i64, f32, f64,
ref) and whether they are written; the dump form is a template over field names, rendered
by `disasm`. Each row also says what the op does (`Sem`: its kind, whether it may trap or
ends a block, the memory it accesses, how it calls), so analyses and backends ask the table
instead of keeping lists of op names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from .module import FEATURE_BITS

# Field kinds, in wire terms.
REG = "reg"  # u16 register ordinal; i64/f64 name the first of an aligned pair
IMM = "imm"  # inline constant of the field's bank type (i32/i64/f32/f64)
GLOBAL = "global"  # u32 global byte offset (values) or ref ordinal (refs)
RODATA = "rodata"  # u32 rodata segment ordinal
FUNC = "func"  # u32 function ordinal; high bit set means an import
IMPORT_BIT = 0x80000000  # that bit
TYPE = "type"  # u32 index into the module type table
STRING = "string"  # u16 length + bytes
TARGET = "target"  # u32 pc of a block marker in the same function
REMAP = "remap"  # 2-aligned: u16 count, count x (u16 src, u16 dst) register moves
REGS = "regs"  # 2-aligned: u16 count, count x u16 registers (bank: a type or "any")
SEGMENTS = "segments"  # 2-aligned: u16 count, count x u16 plain numbers
CASES = "cases"  # u16 count, count x (u32 target, remap list)

CORE, EXT_F32, EXT_F64 = "core", "ext_f32", "ext_f64"
PREFIX_OF_SET = {EXT_F32: 0xE0, EXT_F64: 0xE1}
SET_OF_PREFIX = {v: k for k, v in PREFIX_OF_SET.items()}
FEATURE_OF_SET = {CORE: 0, EXT_F32: FEATURE_BITS["EXT_F32"], EXT_F64: FEATURE_BITS["EXT_F64"]}
BLOCK_MARKER = 0x79

BANK_WIDTH = {"i32": 4, "f32": 4, "i64": 8, "f64": 8}
ELEMENT_WIDTH = {"i8": 1, "i16": 2, **BANK_WIDTH}  # bytes of a value in memory

# Op.kind, what an op does. The first five compute register results from register operands
# and nothing else (Op.pure); the others touch memory, objects, control or other functions.
ARITH = "arith"  # integer and float arithmetic, bit operations, shifts, math functions
CAST = "cast"  # a value converted to another type or width (trunc, ext, cast, bitcast)
COMPARE = "compare"  # an i32 0 or 1 from one or two operands
CONST = "const"  # an inline constant or a zero
SELECT = "select"  # an operand chosen by a condition (select) or an index (switch)
GLOBALS = "globals"  # module globals: rwdata bytes and the ref table (Op.access)
BUFFERS = "buffers"  # vm.buffer objects; element loads, stores and fills carry an Op.access
LISTS = "lists"  # vm.list objects
REFS = "refs"  # ref registers: rodata refs, assignment, checked casts, discards
CONTROL = "control"  # block markers, branches, return, fail, yield, break
CALLS = "calls"  # calls (Op.call) and import.resolved
DEBUG = "debug"  # trace and print
PURE_KINDS = frozenset({ARITH, CAST, COMPARE, CONST, SELECT})

LOAD, STORE, FILL = "load", "store", "fill"  # Access.action


@dataclass(frozen=True)
class Access:
    """A value moved between a register of the op's type and memory: elements of a buffer
    (offsets count elements) or a global (offsets count rwdata bytes; refs, table slots).

    i8 and i16 elements live in i32 registers: loads extend them (sign- or zero- as
    `signed` says), stores and fills keep the register's low bits."""

    action: str  # LOAD, STORE or FILL (a store of one value over a range of elements)
    element: str  # the type in memory: i8, i16, i32, i64, f32, f64 or ref
    signed: bool | None = None  # loads of i8/i16: sign-extended (True) or zero-extended (False)
    indirect: bool = False  # globals: the offset is in a register and checked when the op runs

    @property
    def width(self) -> int | None:
        """Bytes of one element (None for refs)."""
        return ELEMENT_WIDTH.get(self.element)

    @property
    def narrow(self) -> bool:
        """Narrower than its register: extended by loads, truncated by stores and fills."""
        return self.element in ("i8", "i16")


@dataclass(frozen=True)
class Call:
    """A call: its operand and result lists are typed by the callee's calling convention."""

    variadic: bool = False  # segment sizes expand the callee's variadic spans; imports only
    yieldable: bool = False  # the callee may yield; the op ends its block, resuming at dest_pc


class Sem(NamedTuple):
    """A row's semantic columns, which become the Op's fields of the same names."""

    kind: str
    traps: bool = False
    terminator: bool = False
    access: Access | None = None
    call: Call | None = None


@dataclass(frozen=True)
class Field:
    """One operand of an instruction encoding."""

    name: str
    kind: str
    bank: str | None = None  # register bank / immediate type / list element type
    out: bool = False  # the instruction writes this register (or list of registers)
    move: bool = False  # ref register that may carry the move bit


@dataclass(frozen=True)
class Op:
    """One opcode: its encoding, dump form and what the verifier and backends know of it."""

    name: str  # mnemonic without the "vm." prefix: "add.i32"
    opset: str  # CORE, EXT_F32, EXT_F64
    code: int
    family: str  # encoding class: "binary", "global_load", ...
    type: str | None  # the family's value type ("i32", "f64", "ref"), if any
    fields: tuple[Field, ...]
    form: str  # dump template
    kind: str  # ARITH, CAST, COMPARE, CONST, SELECT, GLOBALS, BUFFERS, LISTS, REFS, CONTROL, CALLS, DEBUG
    traps: bool = False  # may stop the program with a status for some operands or state
    terminator: bool = False  # ends its block
    access: Access | None = None  # loads, stores and fills of buffer elements and globals
    call: Call | None = None  # calls to functions and imports

    @property
    def pure(self) -> bool:
        """Computes its register results from its register operands and immediates alone
        (and clears the ref operands it moves from): no memory, objects, control or calls."""
        return self.kind in PURE_KINDS

    @property
    def mnemonic(self) -> str:
        return "vm." + self.name

    @property
    def feature(self) -> int:
        return FEATURE_OF_SET[self.opset]

    @property
    def encoded(self) -> bytes:
        """The opcode bytes: one for core ops, prefix + code for extension ops."""
        if self.opset == CORE:
            return bytes([self.code])
        return bytes([PREFIX_OF_SET[self.opset], self.code])

    def field(self, name: str) -> Field:
        return self.fields[self.index(name)]

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {f.name: i for i, f in enumerate(self.fields)}

    def __hash__(self) -> int:
        """Ops key the decoder's, verifier's, interpreter's and lowering's tables, looked up
        per instruction: hashed once by (opset, code), which tells ops apart (equal ops,
        compared field by field, hash alike), not by every field each time."""
        h = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = hash((self.opset, self.code))
        return h

    def index(self, name: str) -> int:
        """The position of field `name` (looked up per instruction operand by the lowering
        and the verifier: a table per op, built on first use)."""
        try:
            return self._positions[name]
        except KeyError:
            raise KeyError(f"vm.{self.name} has no field {name!r}") from None


# --- dump forms: the template syntax the disassembler renders and the assembler reads ----

FORM_COMMENT = "  //"  # starts a template's trailing comment (constant in hex, rodata size)
_FORM_TOKEN = re.compile(r"\{\{|\}\}|\{(\w+)(=?)( ?)(?::(\w+))?\}")


@dataclass(frozen=True)
class FormField:
    """A placeholder of a dump template."""

    name: str  # a field name, "mnemonic" or "block"
    mode: str  # "plain"; "prefix" ({x=}: "x = " when x is present); "suffix" ({x= }: " x")
    spec: str | None  # rendering hint after a colon ("hex32", "size", ...)


def form_parts(form: str) -> list:
    """A dump template as literal strings and FormFields; `{{` and `}}` are literal braces."""
    parts: list = []
    pos = 0
    for m in _FORM_TOKEN.finditer(form):
        parts.append(form[pos:m.start()])
        pos = m.end()
        if m.group(0) in ("{{", "}}"):
            parts.append(m.group(0)[0])
            continue
        name, eq, space, spec = m.groups()
        parts.append(FormField(name, "prefix" if eq and not space else "suffix" if eq else "plain", spec))
    parts.append(form[pos:])
    return parts


def _r(name: str, bank: str, out: bool = False, move: bool = False) -> Field:
    return Field(name, REG, bank, out, move)


# --- encoding families: (fields, dump form) for a value type t --------------------------

def _unary(t):
    return (_r("operand", t), _r("result", t, True)), "{result} = {mnemonic} {operand}"


def _binary(t):
    return (_r("left", t), _r("right", t), _r("result", t, True)), "{result} = {mnemonic} {left}, {right}"


def _ternary(t):
    return ((_r("first", t), _r("second", t), _r("third", t), _r("result", t, True)),
            "{result} = {mnemonic} {first}, {second}, {third}")


def _shift(t):
    return (_r("operand", t), _r("amount", "i32"), _r("result", t, True)), "{result} = {mnemonic} {operand}, {amount}"


def _select(t):
    return ((_r("condition", "i32"), _r("true_value", t), _r("false_value", t), _r("result", t, True)),
            "{result} = {mnemonic} {condition} ? {true_value} : {false_value}")


def _powi(t):
    return (_r("operand", t), _r("exponent", "i64"), _r("result", t, True)), "{result} = {mnemonic} {operand}, {exponent}"


def _unary_cmp(t):
    return (_r("operand", t), _r("result", "i32", True)), "{result} = {mnemonic} {operand}"


def _binary_cmp(t):
    return (_r("left", t), _r("right", t), _r("result", "i32", True)), "{result} = {mnemonic} {left}, {right}"


def _conversion(src, dst):
    return (_r("operand", src), _r("result", dst, True)), "{result} = {mnemonic} {operand}"


def _global_load(t):
    return (Field("byte_offset", GLOBAL, t), _r("result", t, True)), "{result} = {mnemonic} .rwdata[{byte_offset}]"


def _global_store(t):
    return (Field("byte_offset", GLOBAL, t), _r("value", t)), "{mnemonic} {value}, .rwdata[{byte_offset}]"


def _global_load_indirect(t):
    return ((_r("byte_offset", "i32"), _r("result", t, True)),
            "{result} = {mnemonic} .rwdata[{byte_offset}]")


def _global_store_indirect(t):
    return (_r("byte_offset", "i32"), _r("value", t)), "{mnemonic} {value}, .rwdata[{byte_offset}]"


def _zero(t):
    return (_r("result", t, True),), "{result} = {mnemonic}"


_CONST_COMMENT = {"i32": "  // {value:hex32}", "i64": "  // {value:hex64}", "f32": "", "f64": ""}


def _const(t):
    return (Field("value", IMM, t), _r("result", t, True)), "{result} = {mnemonic} {value}" + _CONST_COMMENT[t]


def _list_get(t):
    return ((_r("list", "ref"), _r("index", "i32"), _r("result", t, True)),
            "{result} = {mnemonic} {list}, {index}")


def _list_set(t):
    return (_r("list", "ref"), _r("index", "i32"), _r("value", t)), "{mnemonic} {list}, {index}, {value}"


def _buffer_load(t):
    return ((_r("source_buffer", "ref"), _r("source_offset", "i64"), _r("result", t, True)),
            "{result} = {mnemonic} {source_buffer}, {source_offset}")


def _buffer_store(t):
    return ((_r("target_buffer", "ref"), _r("target_offset", "i64"), _r("value", t)),
            "{mnemonic} {value}, {target_buffer}, {target_offset}")


def _buffer_fill(t):
    return ((_r("target_buffer", "ref"), _r("target_offset", "i64"), _r("length", "i64"), _r("value", t)),
            "{mnemonic} {target_buffer}, {target_offset}, {length}, {value}")


def _switch(t):
    return ((_r("index", "i32"), _r("default_value", t), Field("values", REGS, t), _r("result", t, True)),
            "{result} = {mnemonic} {index}[{values}] else {default_value}")


def _branch(_=None):
    return (Field("dest_pc", TARGET), Field("operands", REMAP)), "{mnemonic} {dest_pc}({operands})"


def _fixed(fields, form):
    return lambda _=None: (tuple(fields), form)


_call = _fixed((Field("callee_ordinal", FUNC), Field("operands", REGS, "any"), Field("results", REGS, "any", True)),
               "{results=}{mnemonic} @{callee_ordinal}({operands})")
_call_variadic = _fixed(
    (Field("callee_ordinal", FUNC), Field("segment_sizes", SEGMENTS), Field("operands", REGS, "any"),
     Field("results", REGS, "any", True)),
    "{results=}{mnemonic} @{callee_ordinal} segments[{segment_sizes}]({operands})")
_call_yieldable = _fixed(
    (Field("callee_ordinal", FUNC), Field("operands", REGS, "any"), Field("dest_pc", TARGET),
     Field("results", REGS, "any", True)),
    "{mnemonic} @{callee_ordinal}({operands}) -> {dest_pc}({results})")
_call_variadic_yieldable = _fixed(
    (Field("callee_ordinal", FUNC), Field("segment_sizes", SEGMENTS), Field("operands", REGS, "any"),
     Field("dest_pc", TARGET), Field("results", REGS, "any", True)),
    "{mnemonic} @{callee_ordinal} segments[{segment_sizes}]({operands}) -> {dest_pc}({results})")
_trace = _fixed((Field("event_name", STRING), Field("operands", REGS, "any")), '{mnemonic} "{event_name}"({operands})')
_cond_branch = _fixed(
    (_r("condition", "i32"), Field("true_dest_pc", TARGET), Field("true_operands", REMAP),
     Field("false_dest_pc", TARGET), Field("false_operands", REMAP)),
    "{mnemonic} {condition}, {true_dest_pc}({true_operands}), {false_dest_pc}({false_operands})")
_cond_break = _fixed((_r("condition", "i32"), Field("dest_pc", TARGET), Field("operands", REMAP)),
                     "{mnemonic} {condition}, {dest_pc}({operands})")
_branch_table = _fixed(
    (_r("index", "i32"), Field("default_dest_pc", TARGET), Field("default_operands", REMAP), Field("cases", CASES)),
    "{mnemonic} {index} {{ default: {default_dest_pc}({default_operands}){cases} }}")


# --- semantic columns shared by many rows -------------------------------------------------

_ARITH, _CAST, _COMPARE, _CONST, _SELECT = Sem(ARITH), Sem(CAST), Sem(COMPARE), Sem(CONST), Sem(SELECT)
_DIVISION = Sem(ARITH, traps=True)  # integer division: by zero, and INT_MIN / -1 when signed
_CHECKED_SELECT = Sem(SELECT, traps=True)  # ref selects check the chosen ref's type
_LIST = Sem(LISTS, traps=True)  # null lists, indices out of range, element types
_BUFFER = Sem(BUFFERS, traps=True)  # null buffers, ranges, read-only targets, allocation
_JUMP = Sem(CONTROL, terminator=True)


def _global(action: str, element: str, indirect: bool = False) -> Sem:
    # Direct value offsets are proven by the verifier; indirect ones and ref types are checked.
    return Sem(GLOBALS, traps=indirect or element == "ref", access=Access(action, element, indirect=indirect))


def _buffer(action: str, element: str, signed: bool | None = None) -> Sem:
    return Sem(BUFFERS, traps=True, access=Access(action, element, signed))


def _calls(variadic: bool = False, yieldable: bool = False) -> Sem:
    return Sem(CALLS, traps=True, terminator=yieldable, call=Call(variadic, yieldable))


# --- the table ----------------------------------------------------------------------------
# (code, name, family, type-or-(src, dst), fields+form builder, semantic columns)

def _global_rows(base: int, ty: str):
    """The four value-global ops of type `ty`, from opcode `base` (core and both extensions)."""
    return [(base, f"global.load.{ty}", "global_load", ty, _global_load, _global(LOAD, ty)),
            (base + 1, f"global.store.{ty}", "global_store", ty, _global_store, _global(STORE, ty)),
            (base + 2, f"global.load.indirect.{ty}", "global_load_indirect", ty, _global_load_indirect,
             _global(LOAD, ty, indirect=True)),
            (base + 3, f"global.store.indirect.{ty}", "global_store_indirect", ty, _global_store_indirect,
             _global(STORE, ty, indirect=True))]


def _core_table():
    t = _global_rows(0x00, "i32") + _global_rows(0x04, "i64")
    t += [
        (0x08, "global.load.ref", "global_load", "ref", _fixed(
            (Field("global", GLOBAL, "ref"), Field("type_def", TYPE), _r("value", "ref", True, True)),
            "{value} = {mnemonic} .refs[{global}] : {type_def}"), _global(LOAD, "ref")),
        (0x09, "global.store.ref", "global_store", "ref", _fixed(
            (Field("global", GLOBAL, "ref"), Field("type_def", TYPE), _r("value", "ref", False, True)),
            "{mnemonic} {value}, .refs[{global}] : {type_def}"), _global(STORE, "ref")),
        (0x0A, "global.load.indirect.ref", "global_load_indirect", "ref", _fixed(
            (_r("global", "i32"), Field("type_def", TYPE), _r("value", "ref", True, True)),
            "{value} = {mnemonic} .refs[{global}] : {type_def}"), _global(LOAD, "ref", indirect=True)),
        (0x0B, "global.store.indirect.ref", "global_store_indirect", "ref", _fixed(
            (_r("global", "i32"), Field("type_def", TYPE), _r("value", "ref", False, True)),
            "{mnemonic} {value}, .refs[{global}] : {type_def}"), _global(STORE, "ref", indirect=True)),
        (0x0C, "const.i32.zero", "zero", "i32", _zero, _CONST),
        (0x0D, "const.i32", "const", "i32", _const, _CONST),
        (0x0E, "const.i64.zero", "zero", "i64", _zero, _CONST),
        (0x0F, "const.i64", "const", "i64", _const, _CONST),
        (0x10, "const.ref.zero", "zero", "ref", _fixed((_r("result", "ref", True, True),), "{result} = {mnemonic}"),
         _CONST),
        (0x11, "const.ref.rodata", "const_rodata", "ref", _fixed(
            (Field("rodata", RODATA), _r("value", "ref", True, True)),
            "{value} = {mnemonic} {rodata}  // {rodata:size}"), Sem(REFS)),
        (0x12, "list.alloc", "list_alloc", "ref", _fixed(
            (Field("element_type", TYPE), _r("initial_capacity", "i32"), _r("result", "ref", True, True)),
            "{result} = {mnemonic} {initial_capacity} : !vm.list<{element_type}>"), _LIST),
        (0x13, "list.reserve", "list_reserve", "ref", _fixed(
            (_r("list", "ref"), _r("minimum_capacity", "i32")), "{mnemonic} {list}, {minimum_capacity}"), _LIST),
        (0x14, "list.size", "list_size", "ref", _fixed(
            (_r("list", "ref"), _r("result", "i32", True)), "{result} = {mnemonic} {list}"), _LIST),
        (0x15, "list.resize", "list_resize", "ref", _fixed(
            (_r("list", "ref"), _r("new_size", "i32")), "{mnemonic} {list}, {new_size}"), _LIST),
        (0x16, "list.get.i32", "list_get", "i32", _list_get, _LIST),
        (0x17, "list.set.i32", "list_set", "i32", _list_set, _LIST),
        (0x18, "list.get.i64", "list_get", "i64", _list_get, _LIST),
        (0x19, "list.set.i64", "list_set", "i64", _list_set, _LIST),
        (0x1A, "list.get.ref", "list_get", "ref", _fixed(
            (_r("list", "ref"), _r("index", "i32"), Field("type_def", TYPE), _r("result", "ref", True, True)),
            "{result} = {mnemonic} {list}, {index} : {type_def}"), _LIST),
        (0x1B, "list.set.ref", "list_set", "ref", _fixed(
            (_r("list", "ref"), _r("index", "i32"), _r("value", "ref", False, True)),
            "{mnemonic} {list}, {index}, {value}"), _LIST),
        (0x1C, "select.i32", "select", "i32", _select, _SELECT),
        (0x1D, "select.i64", "select", "i64", _select, _SELECT),
        (0x1E, "select.ref", "select", "ref", _fixed(
            (_r("condition", "i32"), Field("type_def", TYPE), _r("true_value", "ref", False, True),
             _r("false_value", "ref", False, True), _r("result", "ref", True, True)),
            "{result} = {mnemonic} {condition} ? {true_value} : {false_value} -> {type_def}"), _CHECKED_SELECT),
        (0x1F, "switch.i32", "switch", "i32", _switch, _SELECT),
        (0x20, "switch.i64", "switch", "i64", _switch, _SELECT),
        # iree-dump-module skips switch.ref's type operand when decoding (so misprints the
        # rest); jitvm prints it, as select.ref does, so the line says everything it encodes.
        (0x21, "switch.ref", "switch", "ref", _fixed(
            (_r("index", "i32"), Field("type_def", TYPE), _r("default_value", "ref", False, True),
             Field("values", REGS, "ref"), _r("result", "ref", True, True)),
            "{result} = {mnemonic} {index}[{values}] else {default_value} -> {type_def}"), _CHECKED_SELECT),
    ]
    arith = [("add", _ARITH), ("sub", _ARITH), ("mul", _ARITH), ("div.{t}.s", _DIVISION), ("div.{t}.u", _DIVISION),
             ("rem.{t}.s", _DIVISION), ("rem.{t}.u", _DIVISION), ("fma", _ARITH)]
    for base, ty in ((0x22, "i32"), (0x2A, "i64")):
        for i, (n, sem) in enumerate(arith):
            name = n.format(t=ty) if "{t}" in n else f"{n}.{ty}"
            t.append((base + i, name, "ternary" if n == "fma" else "binary", ty,
                      _ternary if n == "fma" else _binary, sem))
    for base, ty in ((0x32, "i32"), (0x36, "i64")):
        t += [(base, f"not.{ty}", "unary", ty, _unary, _ARITH), (base + 1, f"and.{ty}", "binary", ty, _binary, _ARITH),
              (base + 2, f"or.{ty}", "binary", ty, _binary, _ARITH),
              (base + 3, f"xor.{ty}", "binary", ty, _binary, _ARITH)]
    for base, ty in ((0x3A, "i32"), (0x3D, "i64")):
        t += [(base, f"shl.{ty}", "shift", ty, _shift, _ARITH), (base + 1, f"shr.{ty}.s", "shift", ty, _shift, _ARITH),
              (base + 2, f"shr.{ty}.u", "shift", ty, _shift, _ARITH)]
    t += [
        (0x40, "trunc.i32.i8", "unary", "i32", _unary, _CAST),
        (0x41, "trunc.i32.i16", "unary", "i32", _unary, _CAST),
        (0x42, "trunc.i64.i32", "conversion", ("i64", "i32"), _conversion, _CAST),
        (0x43, "ext.i8.i32.s", "unary", "i32", _unary, _CAST),
        (0x44, "ext.i8.i32.u", "unary", "i32", _unary, _CAST),
        (0x45, "ext.i16.i32.s", "unary", "i32", _unary, _CAST),
        (0x46, "ext.i16.i32.u", "unary", "i32", _unary, _CAST),
        (0x47, "ext.i32.i64.s", "conversion", ("i32", "i64"), _conversion, _CAST),
        (0x48, "ext.i32.i64.u", "conversion", ("i32", "i64"), _conversion, _CAST),
    ]
    for base, ty in ((0x49, "i32"), (0x4E, "i64")):
        t += [(base, f"cmp.eq.{ty}", "binary_cmp", ty, _binary_cmp, _COMPARE),
              (base + 1, f"cmp.ne.{ty}", "binary_cmp", ty, _binary_cmp, _COMPARE),
              (base + 2, f"cmp.lt.{ty}.s", "binary_cmp", ty, _binary_cmp, _COMPARE),
              (base + 3, f"cmp.lt.{ty}.u", "binary_cmp", ty, _binary_cmp, _COMPARE),
              (base + 4, f"cmp.nz.{ty}", "unary_cmp", ty, _unary_cmp, _COMPARE)]
    t += [
        (0x53, "cmp.eq.ref", "binary_cmp", "ref", _binary_cmp, _COMPARE),
        (0x54, "cmp.ne.ref", "binary_cmp", "ref", _binary_cmp, _COMPARE),
        (0x55, "cmp.nz.ref", "unary_cmp", "ref", _unary_cmp, _COMPARE),
        (0x56, "br", "branch", None, _branch, _JUMP),
        (0x57, "cond_br", "cond_branch", None, _cond_branch, _JUMP),
        (0x58, "call", "call", None, _call, _calls()),
        (0x59, "call.variadic", "call_variadic", None, _call_variadic, _calls(variadic=True)),
        (0x5A, "return", "return", None, _fixed((Field("operands", REGS, "any"),), "{mnemonic}{operands= }"), _JUMP),
        (0x5B, "fail", "fail", None, _fixed((_r("status", "i32"), Field("message", STRING)),
                                            '{mnemonic} {status}, "{message}"'),
         Sem(CONTROL, traps=True, terminator=True)),  # status 0 continues with the next block
        (0x5C, "import.resolved", "import_resolved", None, _fixed(
            (Field("import_ordinal", FUNC), _r("result", "i32", True)), "{result} = {mnemonic} @{import_ordinal}"),
         Sem(CALLS)),
        (0x5D, "yield", "yield", None, _branch, _JUMP),
        (0x5E, "trace", "trace", None, _trace, Sem(DEBUG)),
        (0x5F, "print", "trace", None, _trace, Sem(DEBUG)),
        (0x60, "cond_break", "cond_break", None, _cond_break, _JUMP),
        (0x61, "break", "break", None, _branch, _JUMP),
        (0x62, "buffer.load.i8.u", "buffer_load", "i32", _buffer_load, _buffer(LOAD, "i8", signed=False)),
        (0x63, "buffer.load.i8.s", "buffer_load", "i32", _buffer_load, _buffer(LOAD, "i8", signed=True)),
        (0x64, "buffer.load.i16.u", "buffer_load", "i32", _buffer_load, _buffer(LOAD, "i16", signed=False)),
        (0x65, "buffer.load.i16.s", "buffer_load", "i32", _buffer_load, _buffer(LOAD, "i16", signed=True)),
        (0x66, "buffer.load.i32", "buffer_load", "i32", _buffer_load, _buffer(LOAD, "i32")),
        (0x67, "buffer.load.i64", "buffer_load", "i64", _buffer_load, _buffer(LOAD, "i64")),
        (0x68, "buffer.store.i8", "buffer_store", "i32", _buffer_store, _buffer(STORE, "i8")),
        (0x69, "buffer.store.i16", "buffer_store", "i32", _buffer_store, _buffer(STORE, "i16")),
        (0x6A, "buffer.store.i32", "buffer_store", "i32", _buffer_store, _buffer(STORE, "i32")),
        (0x6B, "buffer.store.i64", "buffer_store", "i64", _buffer_store, _buffer(STORE, "i64")),
        (0x6C, "buffer.alloc", "buffer_alloc", None, _fixed(
            (_r("length", "i64"), _r("alignment", "i32"), _r("result", "ref", True, True)),
            "{result} = {mnemonic} {length}, {alignment}"), _BUFFER),
        (0x6D, "buffer.clone", "buffer_clone", None, _fixed(
            (_r("source", "ref"), _r("offset", "i64"), _r("length", "i64"), _r("alignment", "i32"),
             _r("result", "ref", True, True)),
            "{result} = {mnemonic} {source}, {offset}, {length}, {alignment}"), _BUFFER),
        (0x6E, "buffer.length", "buffer_length", None, _fixed(
            (_r("buffer", "ref"), _r("result", "i64", True)), "{result} = {mnemonic} {buffer}"), _BUFFER),
        (0x6F, "buffer.copy", "buffer_copy", None, _fixed(
            (_r("source_buffer", "ref"), _r("source_offset", "i64"), _r("target_buffer", "ref"),
             _r("target_offset", "i64"), _r("length", "i64")),
            "{mnemonic} {source_buffer}, {source_offset}, {target_buffer}, {target_offset}, {length}"), _BUFFER),
        (0x70, "buffer.compare", "buffer_compare", None, _fixed(
            (_r("lhs_buffer", "ref"), _r("lhs_offset", "i64"), _r("rhs_buffer", "ref"), _r("rhs_offset", "i64"),
             _r("length", "i64"), _r("result", "i32", True)),
            "{result} = {mnemonic} {lhs_buffer}, {lhs_offset}, {rhs_buffer}, {rhs_offset}, {length}"), _BUFFER),
        (0x71, "buffer.fill.i8", "buffer_fill", "i32", _buffer_fill, _buffer(FILL, "i8")),
        (0x72, "buffer.fill.i16", "buffer_fill", "i32", _buffer_fill, _buffer(FILL, "i16")),
        (0x73, "buffer.fill.i32", "buffer_fill", "i32", _buffer_fill, _buffer(FILL, "i32")),
        (0x74, "buffer.fill.i64", "buffer_fill", "i64", _buffer_fill, _buffer(FILL, "i64")),
        (0x75, "ctlz.i32", "unary", "i32", _unary, _ARITH),
        (0x76, "ctlz.i64", "unary", "i64", _unary, _ARITH),
        (0x77, "abs.i32", "unary", "i32", _unary, _ARITH),
        (0x78, "abs.i64", "unary", "i64", _unary, _ARITH),
        (BLOCK_MARKER, "block", "block", None, _fixed((), "{block}:"), Sem(CONTROL)),
    ]
    for base, ty in ((0x7A, "i32"), (0x7E, "i64")):
        t += [(base, f"min.{ty}.s", "binary", ty, _binary, _ARITH),
              (base + 1, f"min.{ty}.u", "binary", ty, _binary, _ARITH),
              (base + 2, f"max.{ty}.s", "binary", ty, _binary, _ARITH),
              (base + 3, f"max.{ty}.u", "binary", ty, _binary, _ARITH)]
    t += [
        (0x82, "cast.any.ref", "cast_ref", "ref", _fixed(
            (_r("operand", "ref", False, True), Field("result_type", TYPE), _r("result", "ref", True, True)),
            "{result} = {mnemonic} {operand} : !vm.ref<?> -> {result_type}"), Sem(REFS, traps=True)),
        (0x83, "br_table", "branch_table", None, _branch_table, _JUMP),
        (0x84, "buffer.hash", "buffer_hash", None, _fixed(
            (_r("source_buffer", "ref"), _r("source_offset", "i64"), _r("length", "i64"), _r("result", "i64", True)),
            "{result} = {mnemonic} {source_buffer}, {source_offset}, {length}"), _BUFFER),
        (0x85, "discard.refs", "discard_refs", None, _fixed((Field("refs", REGS, "any"),), "{mnemonic} {refs}"),
         Sem(REFS)),
        (0x86, "assign.ref", "assign_ref", "ref", _fixed(
            (_r("source", "ref", False, True), _r("result", "ref", True, True)), "{result} = {mnemonic} {source}"),
         Sem(REFS)),
        (0x87, "call.yieldable", "call_yieldable", None, _call_yieldable, _calls(yieldable=True)),
        (0x88, "call.variadic.yieldable", "call_variadic_yieldable", None, _call_variadic_yieldable,
         _calls(variadic=True, yieldable=True)),
    ]
    return t


def _float_table(ty: str):
    """EXT_F32 and EXT_F64 share their first 20 opcodes and most op names."""
    wide = "i64"
    t = _global_rows(0x00, ty) + [
        (0x04, f"const.{ty}.zero", "zero", ty, _zero, _CONST),
        (0x05, f"const.{ty}", "const", ty, _const, _CONST),
        (0x06, f"list.get.{ty}", "list_get", ty, _list_get, _LIST),
        (0x07, f"list.set.{ty}", "list_set", ty, _list_set, _LIST),
        (0x08, f"select.{ty}", "select", ty, _select, _SELECT),
        (0x09, f"switch.{ty}", "switch", ty, _switch, _SELECT),
    ]
    for i, n in enumerate(["add", "sub", "mul", "div", "rem"]):
        t.append((0x0A + i, f"{n}.{ty}", "binary", ty, _binary, _ARITH))
    t += [(0x0F, f"fma.{ty}", "ternary", ty, _ternary, _ARITH)]
    for i, n in enumerate(["abs", "neg", "ceil", "floor"]):
        t.append((0x10 + i, f"{n}.{ty}", "unary", ty, _unary, _ARITH))
    if ty == "f32":
        conv = [(0x14, "cast.si32.f32", "i32", "f32"), (0x15, "cast.ui32.f32", "i32", "f32"),
                (0x16, "cast.f32.si32", "f32", "i32"), (0x17, "cast.f32.ui32", "f32", "i32"),
                (0x18, "bitcast.i32.f32", "i32", "f32"), (0x19, "bitcast.f32.i32", "f32", "i32")]
        math_base = 0x1A
    else:
        conv = [(0x14, "trunc.f64.f32", "f64", "f32"), (0x15, "ext.f32.f64", "f32", "f64"),
                (0x16, "cast.si32.f64", "i32", "f64"), (0x17, "cast.ui32.f64", "i32", "f64"),
                (0x18, "cast.f64.si32", "f64", "i32"), (0x19, "cast.f64.ui32", "f64", "i32"),
                (0x1A, "cast.si64.f64", "i64", "f64"), (0x1B, "cast.ui64.f64", "i64", "f64"),
                (0x1C, "cast.f64.si64", "f64", "i64"), (0x1D, "cast.f64.ui64", "f64", "i64"),
                (0x1E, "bitcast.i64.f64", "i64", "f64"), (0x1F, "bitcast.f64.i64", "f64", "i64")]
        math_base = 0x20
    t += [(code, name, "conversion", (src, dst), _conversion, _CAST) for code, name, src, dst in conv]
    math = [("atan", 1), ("atan2", 2), ("cos", 1), ("sin", 1), ("exp", 1), ("exp2", 1), ("expm1", 1),
            ("log", 1), ("log10", 1), ("log1p", 1), ("log2", 1), ("pow", 2), ("rsqrt", 1), ("sqrt", 1),
            ("tanh", 1), ("erf", 1)]
    for i, (n, arity) in enumerate(math):
        t.append((math_base + i, f"{n}.{ty}", "binary" if arity == 2 else "unary", ty,
                  _binary if arity == 2 else _unary, _ARITH))
    cmp_base = math_base + len(math)
    cmps = ["cmp.eq.{t}.o", "cmp.eq.{t}.u", "cmp.ne.{t}.o", "cmp.ne.{t}.u", "cmp.lt.{t}.o", "cmp.lt.{t}.u",
            "cmp.lte.{t}.o", "cmp.lte.{t}.u"]
    for i, n in enumerate(cmps):
        t.append((cmp_base + i, n.format(t=ty), "binary_cmp", ty, _binary_cmp, _COMPARE))
    base = cmp_base + len(cmps)
    t += [
        (base, f"cmp.nan.{ty}", "unary_cmp", ty, _unary_cmp, _COMPARE),
        (base + 1, f"buffer.load.{ty}", "buffer_load", ty, _buffer_load, _buffer(LOAD, ty)),
        (base + 2, f"buffer.store.{ty}", "buffer_store", ty, _buffer_store, _buffer(STORE, ty)),
        (base + 3, f"buffer.fill.{ty}", "buffer_fill", ty, _buffer_fill, _buffer(FILL, ty)),
        (base + 4, f"round.{ty}", "unary", ty, _unary, _ARITH),
        (base + 5, f"min.{ty}", "binary", ty, _binary, _ARITH),
        (base + 6, f"max.{ty}", "binary", ty, _binary, _ARITH),
        (base + 7, f"round.{ty}.even", "unary", ty, _unary, _ARITH),
    ]
    if ty == "f32":
        t += [(base + 8, "cast.f32.si64", "conversion", ("f32", wide), _conversion, _CAST),
              (base + 9, "cast.f32.ui64", "conversion", ("f32", wide), _conversion, _CAST),
              (base + 10, "cast.si64.f32", "conversion", (wide, "f32"), _conversion, _CAST),
              (base + 11, "cast.ui64.f32", "conversion", (wide, "f32"), _conversion, _CAST)]
    # IREE 3.13: x to an integer power (math.fpowi), the exponent an i64 register
    t += [(base + (12 if ty == "f32" else 8), f"fpowi.{ty}", "powi", ty, _powi, _ARITH)]
    return t


def _build() -> dict[tuple[str, int], Op]:
    table: dict[tuple[str, int], Op] = {}
    for opset, rows in ((CORE, _core_table()), (EXT_F32, _float_table("f32")), (EXT_F64, _float_table("f64"))):
        for code, name, family, ty, builder, sem in rows:
            fields, form = builder(*ty) if isinstance(ty, tuple) else builder(ty)
            key = (opset, code)
            assert key not in table, f"duplicate opcode {key}"
            table[key] = Op(name, opset, code, family, ty[1] if isinstance(ty, tuple) else ty, fields, form, *sem)
    return table


OPS: dict[tuple[str, int], Op] = _build()
"""(opset, code) -> Op for every opcode of bytecode 17.0 (prefix bytes are not ops)."""

OPS_BY_NAME: dict[str, Op] = {op.name: op for op in OPS.values()}
assert len(OPS_BY_NAME) == len(OPS), "op names must be unique"

CORE_OPS: list[Op | None] = [OPS.get((CORE, i)) for i in range(256)]
EXT_OPS: dict[int, list[Op | None]] = {
    prefix: [OPS.get((opset, i)) for i in range(256)] for prefix, opset in SET_OF_PREFIX.items()}


def op(name: str) -> Op:
    """Looks an op up by mnemonic, with or without the "vm." prefix."""
    return OPS_BY_NAME[name[3:] if name.startswith("vm.") else name]
