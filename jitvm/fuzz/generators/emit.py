"""The program model of the fuzzer: choices, registers, live values, blocks and module text.

A generator never writes instruction syntax by hand for ISA ops: `render` fills an op's dump
template from the ISA table (the syntax `jitvm dump` prints and `jitvm.frontend.asm.assemble`
reads) with register and operand texts.

Validity is kept by construction, with a simple register model:
- every register has one bank for the whole function (i32/f32 one slot, i64/f64 an
  even-aligned pair, refs their own file);
- `FuncGen.pool` holds the values defined on every path to the current point; operands are
  taken from it only, so no register is read before it is written;
- results go to a fresh register or overwrite a pool register of the same bank, except
  `protected` ones (loop counters, bounds and steps, cached constants), so loops always
  terminate.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from jitvm.frontend import isa
from jitvm.frontend.cconv import argument_registers

from . import values

VALUE_BANKS = ("i32", "i64", "f32", "f64")
WIDE = frozenset(("i64", "f64"))
CODE = {"i32": "i", "i64": "I", "f32": "f", "f64": "F", "ref": "r"}
MODULE = "fz"



# --- choices -----------------------------------------------------------------------------

class Chooser:
    """Every random decision of a generator goes through one of these methods."""

    def int(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, percent: int) -> bool:
        """True with about `percent`% probability; shrinks towards False."""
        return self.int(0, 99) >= 100 - percent

    def bits(self, bank: str) -> int:
        raise NotImplementedError

    def scalar(self, bank: str):
        w = values.WIDTH[bank]
        b = self.bits(bank)
        if bank in ("i32", "i64"):
            return values.signed(b, w)
        return values.f32_of_bits(b) if bank == "f32" else values.f64_of_bits(b)


class RandomChooser(Chooser):
    """Decisions from a seeded `random.Random` (coverage checks, bulk data)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def int(self, lo, hi):
        return self.rng.randint(lo, hi)

    def bits(self, bank):
        w = values.WIDTH[bank]
        r = self.rng.random()
        if r < 0.45:
            return self.rng.choice(values.EDGES[bank]) & ((1 << w) - 1)
        if r < 0.7:
            n = self.rng.randint(-64, 64)
            if bank == "f32":
                return values.bits_of_f32(n / 4)
            if bank == "f64":
                return values.bits_of_f64(n / 4)
            return n & ((1 << w) - 1)
        return self.rng.getrandbits(w)


# --- text ----------------------------------------------------------------------------------

def reg_text(bank: str, reg: int, move: bool = False) -> str:
    if bank == "ref":
        return f"%{'R' if move else 'r'}{reg}"
    if bank in WIDE:
        return f"%i{reg}:{reg + 1}"
    return f"%i{reg}"


def render(op: isa.Op, **texts: str) -> str:
    """The op's dump template filled with operand texts (trailing `//` comments dropped)."""
    out = []
    for part in isa.form_parts(op.form.split(isa.FORM_COMMENT)[0]):
        if not isinstance(part, isa.FormField):
            out.append(part)
            continue
        value = op.mnemonic if part.name == "mnemonic" else texts[part.name]
        if part.mode == "prefix":
            out.append(f"{value} = " if value else "")
        elif part.mode == "suffix":
            out.append(f" {value}" if value else "")
        else:
            out.append(value)
    return "".join(out)


def remap_text(moves) -> str:
    """Moves are (src bank, src reg, dst reg) of one value (two slot moves for i64/f64) or
    ("slot", src, dst) for a single 32-bit slot."""
    parts = []
    for bank, src, dst in moves:
        if bank == "ref":
            parts.append(f"%r{src}->%r{dst}")
        elif bank == "Ref":  # moved ref
            parts.append(f"%R{src}->%r{dst}")
        elif bank in WIDE:
            parts += [f"%i{src}->%i{dst}", f"%i{src + 1}->%i{dst + 1}"]
        else:
            parts.append(f"%i{src}->%i{dst}")
    return ", ".join(parts)


def hex_bytes(data: bytes) -> str:
    return data.hex().upper()


# --- values and registers --------------------------------------------------------------------

@dataclass(frozen=True)
class V:
    """A live value: its bank and register; `loop` marks a float computed in a loop of a
    function with buffer accesses in loops (its NaN payload may differ, see
    oracles/differential.py).
    Refs carry what they hold: "buffer", "list:<element>" or "null"."""

    bank: str
    reg: int
    loop: bool = False
    kind: str = ""
    size: int | None = None  # buffers: length in bytes; lists: size (when known)

    @property
    def text(self) -> str:
        return reg_text(self.bank, self.reg)


class Registers:
    def __init__(self):
        self.next = 0
        self.holes: list[int] = []  # odd slots skipped to align a pair
        self.next_ref = 0

    def reserve_args(self, banks):
        regs = argument_registers([CODE[b] for b in banks])
        for bank, r in regs:
            if bank == "ref":
                self.next_ref = max(self.next_ref, r + 1)
            else:
                top = r + (2 if bank in WIDE else 1)
                while self.next < r:
                    self.holes.append(self.next)
                    self.next += 1
                self.next = max(self.next, top)
        return [r for _, r in regs]

    def new(self, bank: str) -> int:
        if bank == "ref":
            self.next_ref += 1
            return self.next_ref - 1
        if bank in WIDE:
            if self.next % 2:
                self.holes.append(self.next)
                self.next += 1
            self.next += 2
            return self.next - 2
        if self.holes:
            return self.holes.pop()
        self.next += 1
        return self.next - 1


# --- functions ------------------------------------------------------------------------------

@dataclass
class FuncSig:
    name: str
    args: list[str]
    results: list[str]

    @property
    def cconv(self) -> str:
        return "0" + ("".join(CODE[b] for b in self.args) or "v") + "_" + ("".join(CODE[b] for b in self.results) or "v")


@dataclass
class FuncOut:
    """A generated function: its text, signature and how the test calls it."""

    sig: FuncSig
    text: str
    calls: list[list] = field(default_factory=list)  # argument lists, called in order
    loose_results: frozenset[int] = frozenset()  # result positions computed in buffer loops
    exported: bool = True


REF_TYPES = {"buffer": "!vm.buffer", "list:i32": "!vm.list<i32>", "list:i64": "!vm.list<i64>",
             "list:f32": "!vm.list<f32>", "list:f64": "!vm.list<f64>", "list:any": "!vm.list<!vm.opaque>",
             "list:buffer": "!vm.list<!vm.buffer>"}


class FuncGen:
    """Builds one function: blocks of lines, the live pool, register allocation."""

    def __init__(self, mod: "ModuleGen", name: str, args: list[str]):
        self.mod = mod
        self.c: Chooser = mod.c
        self.name = name
        self.args = list(args)
        self.regs = Registers()
        self.pool: dict[str, list[V]] = {b: [] for b in (*VALUE_BANKS, "ref")}
        self.protected: set[tuple[str, int]] = set()
        self.blocks: list[tuple[str, list[str]]] = []
        self.open_block: list[str] | None = None
        self.labels = 0
        self.loop_taint = False  # values defined now are computed in a buffer loop
        self.no_bitcast_floats = False
        self.fresh_only = False  # every result in a new register
        self.consts: dict[tuple[str, int], V] = {}
        self.defined: list[V] = []  # every definition, in order
        self.arg_regs = self.regs.reserve_args(args)
        for bank, r in zip(args, self.arg_regs):
            self.define(bank, r, kind="buffer" if bank == "ref" else "")
        self.open(self.new_label())

    # -- blocks --------------------------------------------------------------------------------

    def new_label(self) -> str:
        self.labels += 1
        return f"^bb{self.labels - 1}"

    def open(self, label: str) -> None:
        assert self.open_block is None, "previous block not terminated"
        self.open_block = []
        self.blocks.append((label, self.open_block))

    def line(self, text: str) -> None:
        assert self.open_block is not None, "no open block"
        self.open_block.append(text)

    def end(self, text: str) -> None:
        self.line(text)
        self.open_block = None

    @property
    def is_open(self) -> bool:
        return self.open_block is not None

    # -- pool ---------------------------------------------------------------------------------

    def define(self, bank: str, reg: int, loop: bool | None = None, kind: str = "", size: int | None = None) -> V:
        loop = self.loop_taint if loop is None else loop
        lst = self.pool[bank]
        lst[:] = [v for v in lst if v.reg != reg]
        v = V(bank, reg, loop and bank in ("f32", "f64"), kind, size)
        lst.append(v)
        self.defined.append(v)
        return v

    def forget(self, bank: str, reg: int) -> None:
        self.pool[bank] = [v for v in self.pool[bank] if v.reg != reg]

    def snapshot(self):
        return {b: list(vs) for b, vs in self.pool.items()}

    def restore(self, snap) -> None:
        self.pool = {b: list(vs) for b, vs in snap.items()}

    def have(self, bank: str) -> bool:
        return bool(self.pool[bank])

    def _wide_slots(self, unprotected: bool) -> list[tuple[V, int]]:
        """(pair value, slot) for both 32-bit halves of the live i64/f64 registers."""
        if self.no_bitcast_floats:
            return []  # halves of floats show NaN payload bits (see oracles/differential.py)
        out = []
        for bank in WIDE:
            for v in self.pool[bank]:
                if not (unprotected and (bank, v.reg) in self.protected):
                    out += [(v, v.reg), (v, v.reg + 1)]
        return out

    def pick(self, bank: str, recent: bool = True) -> V:
        """A live value of the bank (made up with a constant when there is none); an i32/f32
        operand is now and then one half of a live i64/f64 register pair."""
        if bank in ("i32", "f32") and self.c.chance(4):
            halves = self._wide_slots(False)
            if halves:
                v, slot = self.c.choice(halves)
                return V(bank, slot, v.loop)
        vs = self.pool[bank]
        if not vs:
            return self.materialize(bank)
        if recent and len(vs) > 4 and self.c.chance(50):
            return vs[-1 - self.c.int(0, 3)]
        return self.c.choice(vs)

    def dest(self, bank: str) -> int:
        """Register for a result: fresh, or (sometimes) an unprotected live one of the bank."""
        candidates = [v for v in self.pool[bank] if (bank, v.reg) not in self.protected]
        if candidates and not self.fresh_only and self.c.chance(20):
            return self.c.choice(candidates).reg
        if bank in ("i32", "f32") and not self.fresh_only and self.c.chance(3):
            halves = self._wide_slots(True)
            if halves:  # overwrite half of a pair: the pair stays defined, with mixed bits
                return self.c.choice(halves)[1]
        return self.regs.new(bank)

    # -- constants -----------------------------------------------------------------------------

    def const(self, bank: str, value, reg: int | None = None) -> V:
        """`vm.const.<bank>` of an int (i32/i64) or bit pattern (f32/f64, via integer bits and
        a bitcast when the assembler cannot spell the value)."""
        reg = self.regs.new(bank) if reg is None else reg
        if bank in ("i32", "i64"):
            value = values.signed(value, values.WIDTH[bank])
            if value == 0 and self.c.chance(50):
                self.line(render(isa.op(f"const.{bank}.zero"), result=reg_text(bank, reg)))
            else:
                self.line(render(isa.op(f"const.{bank}"), result=reg_text(bank, reg), value=str(value)))
            return self.define(bank, reg)
        text = values.float_text(bank, value)
        if text is not None and (self.no_bitcast_floats or self.c.chance(60)):
            if value == 0 and self.c.chance(50):
                self.line(render(isa.op(f"const.{bank}.zero"), result=reg_text(bank, reg)))
            else:
                self.line(render(isa.op(f"const.{bank}"), result=reg_text(bank, reg), value=text))
            return self.define(bank, reg)
        ibank = "i32" if bank == "f32" else "i64"
        tmp = self.const(ibank, value)
        self.line(render(isa.op(f"bitcast.{ibank}.{bank}"), result=reg_text(bank, reg), operand=tmp.text))
        return self.define(bank, reg)

    def materialize(self, bank: str) -> V:
        if bank == "ref":
            reg = self.regs.new("ref")
            self.line(render(isa.op("const.ref.zero"), result=reg_text("ref", reg)))
            return self.define("ref", reg, kind="null")
        b = self.c.bits(bank)
        if self.no_bitcast_floats and bank in ("f32", "f64") and values.is_nan_bits(bank, b):
            b = values.bits_of_f32(1.5) if bank == "f32" else values.bits_of_f64(1.5)
        return self.const(bank, b)

    def small_const(self, bank: str, value: int) -> V:
        """A constant that is reused if already live in a register of the pool (no new line)."""
        cached = self.consts.get((bank, value))
        if cached is not None and cached in self.pool[bank]:
            return cached
        v = self.consts[(bank, value)] = self.const(bank, value)
        self.protected.add((bank, v.reg))
        return v

    # -- output --------------------------------------------------------------------------------

    def returns(self, vals: list[V]) -> FuncSig:
        self.end(render(isa.op("return"), operands=", ".join(v.text for v in vals)))
        return FuncSig(self.name, self.args, [v.bank for v in vals])

    def text(self, sig: FuncSig, exported: bool = True) -> str:
        assert self.open_block is None, f"{self.name}: a block is not terminated"
        params = ", ".join(f"{reg_text(b, r)}: {REF_TYPES['buffer'] if b == 'ref' else b}"
                           for b, r in zip(sig.args, self.arg_regs))
        results = ", ".join(REF_TYPES["buffer"] if b == "ref" else b for b in sig.results)
        lines = [f"vm.export @{sig.name}"] if exported else []
        lines.append(f"vm.func @{sig.name}({params}) -> ({results}) {{")
        for label, body in self.blocks:
            lines.append(f"{label}:")
            lines += [f"  {x}" for x in body]
        lines.append("}")
        return "\n".join(lines)


# --- modules ---------------------------------------------------------------------------------

@dataclass
class Program:
    """A generated module and the calls that exercise it."""

    text: str
    functions: list[FuncOut]
    setup: str | None = None  # called once before the rest
    observe: str | None = None  # returns the module state; called after every call
    observe_values: int = 0  # how many of its results are value words (the rest are refs)
    ref_globals: list[str] = field(default_factory=list)  # kind of each ref global
    loose_ref_globals: dict[int, str] = field(default_factory=dict)  # ref global -> float dtype

    def __repr__(self) -> str:
        n = sum(len(f.calls) for f in self.functions)
        return f"<Program: {len(self.functions)} functions, {n} calls, {len(self.text)} chars of assembly>"

    def listing(self) -> str:
        """The module text followed by the calls, for failure reports and reproducers."""
        calls = [f"// CALL @{name}({', '.join(map(repr, args))})" for name, args, _ in self.calls()]
        head = [f"// setup: @{self.setup}" if self.setup else "", f"// observe: @{self.observe}" if self.observe else ""]
        return "\n".join([h for h in head if h] + calls) + "\n" + self.text

    def calls(self):
        """(function, args) in order."""
        for f in self.functions:
            for args in f.calls:
                yield f.sig.name, list(args), f.loose_results


class ModuleGen:
    """Module-level pieces shared by the functions: rodata, globals, signatures, types."""

    def __init__(self, c: Chooser):
        self.c = c
        self.rodata: list[bytes] = []
        self.global_bytes = 0
        self.ref_globals: list[str] = []  # kind per ref global ("buffer", "list:i32", ...)
        self.functions: list[FuncOut] = []
        self.sigs: dict[str, FuncSig] = {}
        self.names = 0
        self.imports: list[str] = []
        self.kernel_buffers: list = []
        self.loose_ref_globals: dict[int, str] = {}
        self.memory_ref_globals = 0

    def name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names - 1}"

    def add_rodata(self, data: bytes) -> int:
        self.rodata.append(bytes(data))
        return len(self.rodata) - 1

    def add(self, f: FuncOut, callable_: bool = True) -> None:
        """Adds a function; callable ones may be called by functions generated later."""
        self.functions.append(f)
        if callable_:
            self.sigs[f.sig.name] = f.sig

    def text(self) -> str:
        attrs = []
        if self.global_bytes:
            attrs.append(f"vm.global_bytes = {self.global_bytes}")
        if self.ref_globals:
            attrs.append(f"vm.global_refs = {len(self.ref_globals)}")
        head = f"vm.module @{MODULE} version 0" + (f" attributes {{{', '.join(attrs)}}}" if attrs else "")
        lines = [head]
        lines += [f"vm.type {t}" for t in REF_TYPES.values()]
        lines += self.imports
        lines += [f"vm.rodata[{i}] = {hex_bytes(d)}" for i, d in enumerate(self.rodata)]
        parts = ["\n".join(lines)] + [f.text for f in self.functions]
        return "\n\n".join(parts) + "\n"


def emit_op(fg: FuncGen, name: str, out_kind: str = "", move: frozenset[str] = frozenset(), out_size=None,
            **given) -> V | None:
    """Emits ISA op `name`. Operands come from `given` (a V, or a text for non-register
    fields); other input registers are picked from the pool; the result (if any) goes to a
    new or reused register and is returned. Ref operands named in `move` carry the move bit
    (the register reads null afterwards)."""
    op = isa.op(name)
    texts = {}
    out = None
    taint = fg.loop_taint
    moved = []
    for f in op.fields:
        if f.kind == isa.REG and f.out:
            out = f
            continue
        x = given.get(f.name)
        if f.kind == isa.REG:
            v = x if x is not None else fg.pick(f.bank)
            taint = taint or v.loop
            mv = f.name in move and f.move and v.bank == "ref"
            texts[f.name] = reg_text(v.bank, v.reg, mv)
            if mv:
                moved.append(v)
        elif f.kind == isa.REGS and not f.out:
            vs = x if x is not None else []
            texts[f.name] = ", ".join(v.text for v in vs)
        else:
            texts[f.name] = str(x)
    result = None
    if out is not None:
        if "result_reg" in given:
            reg = given["result_reg"]
        else:
            reg = fg.dest(out.bank)
        texts[out.name] = reg_text(out.bank, reg)
    fg.line(render(op, **texts))
    for v in moved:
        fg.define("ref", v.reg, kind="null")
    if out is not None:
        result = fg.define(out.bank, reg, loop=taint, kind=out_kind, size=out_size)
    return result
