"""Loop analysis on verified VM code, for checking buffer accesses once per loop.

VMVX kernels are nests of counted loops: a header compares an i64 induction variable with
a loop-invariant bound, a single body block loads and stores buffer elements at indices
that are affine in the induction variable, increments it by an invariant step and
branches back. For such an innermost loop this module finds every buffer access in the
body whose element index is `a * iv + b` (a and b loop-invariant). The lowering then emits
the loop twice: a guard on entry evaluates, in exact 128-bit arithmetic, whether every
iteration's accesses fall inside their buffers; if so the copy without per-access checks
runs, otherwise the original, which traps exactly where the interpreter would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..frontend import isa
from ..verify.model import VerifiedFunction

# Invariant expressions: ("const", n) | ("reg", bank, index) | (op, x, y) with op add/sub/mul.
ZERO = ("const", 0)
ONE = ("const", 1)


def _add(x, y):
    if x == ZERO:
        return y
    if y == ZERO:
        return x
    if x[0] == "const" and y[0] == "const":
        return ("const", x[1] + y[1])
    return ("add", x, y)


def _sub(x, y):
    if y == ZERO:
        return x
    if x[0] == "const" and y[0] == "const":
        return ("const", x[1] - y[1])
    return ("sub", x, y)


def _mul(x, y):
    if x == ZERO or y == ZERO:
        return ZERO
    if x == ONE:
        return y
    if y == ONE:
        return x
    if x[0] == "const" and y[0] == "const":
        return ("const", x[1] * y[1])
    return ("mul", x, y)


@dataclass(frozen=True)
class Affine:
    """a * iv + b over exact integers, iv being the induction variable at iteration start."""

    a: tuple
    b: tuple

    @property
    def invariant(self) -> bool:
        return self.a == ZERO


@dataclass(frozen=True)
class Access:
    index: int  # instruction index in the function
    buffer: int  # ref register holding the (loop-invariant) buffer
    width: int  # element size in bytes
    store: bool
    element: Affine  # element index


@dataclass
class CountedLoop:
    header: int  # block indices
    body: int
    exit: int
    body_on_true: bool  # cond_br's true edge enters the body
    iv: int  # i64 register of the induction variable
    bound: tuple  # invariant expression
    step: tuple  # invariant expression (positive for the guard to pass)
    accesses: list[Access] = field(default_factory=list)


_WIDTH = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "f32": 4, "f64": 8}


def access_width(op: isa.Op) -> int | None:
    """Element size of a buffer load/store op, from its name (buffer.load.i16.u -> 2)."""
    if op.family not in ("buffer_load", "buffer_store"):
        return None
    return _WIDTH[op.name.split(".")[2]]


def successors(vf: VerifiedFunction, block) -> list[int]:
    ins = vf.instructions[block.last]
    out = []
    for f, value in zip(ins.op.fields, ins.args):
        if f.kind == isa.TARGET:
            out.append(vf.block_of_pc[value])
        elif f.kind == isa.CASES:
            out.extend(vf.block_of_pc[t] for t, _ in value)
    if ins.op.name == "fail":  # status 0 continues with the next block
        nxt = vf.block_of_pc.get(ins.pc + ins.size)
        if nxt is not None:
            out.append(nxt)
    return out


def written_slots(vf: VerifiedFunction, blocks) -> tuple[set[int], set[int]]:
    """(i32 slots, ref registers) written anywhere in `blocks`, branch remaps included."""
    i32: set[int] = set()
    refs: set[int] = set()
    for bi in blocks:
        block = vf.blocks[bi]
        for idx in range(block.first, block.last + 1):
            ins = vf.instructions[idx]
            for f, value in zip(ins.op.fields, ins.args):
                regs = []
                if f.kind == isa.REG and f.out:
                    regs = [value]
                elif f.kind == isa.REGS and f.out:
                    regs = list(value)
                elif f.kind == isa.REMAP:
                    regs = [d for _, d in value]
                elif f.kind == isa.CASES:
                    regs = [d for _, pairs in value for _, d in pairs]
                elif f.kind == isa.REG and f.bank == "ref" and f.move and value.move:
                    regs = [value]  # a moved-from register is cleared
                elif f.kind == isa.REGS and f.bank in ("any", "ref"):
                    regs = [r for r in value if r.is_ref and r.move]
                for r in regs:
                    if r.is_ref:
                        refs.add(r.index)
                    else:
                        i32.add(r.index)
                        if r.bank in ("i64", "f64") or f.kind == isa.REGS and f.out:
                            i32.add(r.index + 1)  # call results may be 64-bit
            site = vf.calls.get(idx)
            if site is not None:
                for code, r in zip(site.result_codes, ins["results"]):
                    if code in "IF":
                        i32.add(r.index + 1)
    return i32, refs


def find_counted_loops(vf: VerifiedFunction) -> list[CountedLoop]:
    """Innermost two-block counted loops whose buffer accesses can be range-checked once."""
    out = []
    for block in vf.blocks:
        for target in successors(vf, block):
            if target != block.index - 1:
                continue
            loop = _analyze(vf, header=target, body=block.index)
            if loop is not None and loop.accesses:
                out.append(loop)
    return out


def _analyze(vf: VerifiedFunction, header: int, body: int) -> CountedLoop | None:
    h, bb = vf.blocks[header], vf.blocks[body]
    # The body must branch back to the header and nowhere else; the header must exit or enter.
    if successors(vf, bb) != [header] or vf.instructions[bb.last].op.name != "br":
        return None
    term = vf.instructions[h.last]
    if term.op.name != "cond_br":
        return None
    t, f = vf.block_of_pc[term["true_dest_pc"]], vf.block_of_pc[term["false_dest_pc"]]
    if t == body and f != body and not term["true_operands"]:
        body_on_true, exit_block = True, f
    elif f == body and t != body and not term["false_operands"]:
        body_on_true, exit_block = False, t
    else:
        return None  # (remaps on the exit edge are fine: they run outside the loop)
    # Only the header and body blocks reach the body: entering the body from elsewhere
    # would bypass the guard.
    for other in vf.blocks:
        if other.index not in (header, body) and body in successors(vf, other):
            return None

    written, written_refs = written_slots(vf, (header, body))

    # Header: markers, pure compares, then the cond_br on `iv < bound`.
    cond = term["condition"].index
    compare = None
    for idx in range(h.first, h.last):
        ins = vf.instructions[idx]
        if ins.op.name == "block":
            continue
        if ins.op.family not in ("binary_cmp", "unary_cmp", "const", "zero"):
            return None
        if ins.op.name == "cmp.lt.i64.s" and ins["result"].index == cond:
            compare = ins
    if compare is None:
        return None
    iv = compare["left"].index
    bound_reg = compare["right"]
    if bound_reg.index in written or bound_reg.index + 1 in written:
        return None
    if iv not in written:
        return None
    if body_on_true is False:
        return None  # `iv < bound` exits: not a counted loop over [start, bound)

    evaluator = _BodyEvaluator(vf, written, written_refs, iv)
    step = None
    accesses: list[Access] = []
    for idx in range(bb.first, bb.last):
        ins = vf.instructions[idx]
        width = access_width(ins.op)
        if width is not None:
            buf_field = "source_buffer" if ins.op.family == "buffer_load" else "target_buffer"
            off_field = "source_offset" if ins.op.family == "buffer_load" else "target_offset"
            buf = ins[buf_field].index
            element = evaluator.read_i64(ins[off_field].index)
            if buf not in written_refs and element is not None:
                accesses.append(Access(idx, buf, width, ins.op.family == "buffer_store", element))
        if ins.op.name == "add.i64" and ins["result"].index == iv:
            if step is not None:
                return None  # incremented twice
            left = evaluator.read_i64(ins["left"].index)
            right = evaluator.read_i64(ins["right"].index)
            if left == Affine(ONE, ZERO) and right is not None and right.invariant:
                step = right.b
            elif right == Affine(ONE, ZERO) and left is not None and left.invariant:
                step = left.b
            else:
                return None
        evaluator.execute(ins)
    if step is None or not evaluator.iv_consistent(step):
        return None
    return CountedLoop(header, body, exit_block, body_on_true, iv, ("reg", "i64", bound_reg.index), step,
                       accesses)


class _BodyEvaluator:
    """Symbolic execution of one iteration of the body, tracking affine i64 values."""

    def __init__(self, vf, written: set[int], written_refs: set[int], iv: int):
        self.vf = vf
        self.written = written
        self.iv = iv
        self.values: dict[int, Affine | None] = {}  # i64 register -> value (None: unknown)
        self.clobbered: set[int] = set()  # i32 slots overwritten by non-i64 values

    def read_i64(self, reg: int) -> Affine | None:
        if reg in self.values:
            return self.values[reg]
        if reg in self.clobbered or reg + 1 in self.clobbered:
            return None
        if reg == self.iv:
            return Affine(ONE, ZERO)
        if reg in self.written or reg + 1 in self.written:
            return None  # carried from the previous iteration: not affine in iv
        return Affine(ZERO, ("reg", "i64", reg))

    def _set(self, reg: int, value: Affine | None) -> None:
        self.values[reg] = value
        self.clobbered.discard(reg)
        self.clobbered.discard(reg + 1)
        self.values.pop(reg - 1, None)  # an i64 value overlapping from below is gone
        self.values.pop(reg + 1, None)

    def _clobber(self, slot: int) -> None:
        self.clobbered.add(slot)
        self.values.pop(slot, None)
        self.values.pop(slot - 1, None)

    def execute(self, ins) -> None:
        name = ins.op.name
        get = self.read_i64
        value: Affine | None = None
        handled = True
        if name == "const.i64":
            value = Affine(ZERO, ("const", ins["value"]))
        elif name == "const.i64.zero":
            value = Affine(ZERO, ZERO)
        elif name in ("add.i64", "sub.i64"):
            x, y = get(ins["left"].index), get(ins["right"].index)
            if x is not None and y is not None:
                f = _add if name == "add.i64" else _sub
                value = Affine(f(x.a, y.a), f(x.b, y.b))
        elif name == "mul.i64":
            value = _affine_mul(get(ins["left"].index), get(ins["right"].index))
        elif name == "fma.i64":
            p = _affine_mul(get(ins["first"].index), get(ins["second"].index))
            c = get(ins["third"].index)
            if p is not None and c is not None:
                value = Affine(_add(p.a, c.a), _add(p.b, c.b))
        else:
            handled = False
        if handled:
            self._set(ins["result"].index, value)
            return
        # Anything else: forget what it writes.
        for f, v in zip(ins.op.fields, ins.args):
            if f.kind == isa.REG and f.out and f.bank != "ref":
                if f.bank in ("i64", "f64"):
                    self._set(v.index, None)
                else:
                    self._clobber(v.index)
            elif f.kind == isa.REGS and f.out:
                for r in v:
                    if not r.is_ref:
                        self._clobber(r.index)
                        self._clobber(r.index + 1)

    def iv_consistent(self, step) -> bool:
        """After the body, the iv register must hold iv + step (and nothing else wrote it)."""
        return self.values.get(self.iv) == Affine(ONE, step) and self.iv + 1 not in self.clobbered


def _affine_mul(x: Affine | None, y: Affine | None) -> Affine | None:
    if x is None or y is None:
        return None
    if x.invariant:
        return Affine(_mul(x.b, y.a), _mul(x.b, y.b))
    if y.invariant:
        return Affine(_mul(y.b, x.a), _mul(y.b, x.b))
    return None


