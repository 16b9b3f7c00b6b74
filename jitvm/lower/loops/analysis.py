"""Loop-nest analysis on verified VM code, for checking buffer accesses once per nest.

VMVX kernels are nests of counted loops laid out in order: a header compares an i64
induction variable with an invariant bound and either enters the next block or leaves;
the body runs block after block (inner loops in between) and the last block branches back
after adding an invariant step. For such a nest this module finds every buffer access
whose element index is affine in the induction variables of the loops around it,
`sum(a_L * iv_L) + b` with every `a_L` and `b` invariant in the whole nest.

The lowering then emits the nest twice: a guard where the nest is entered evaluates, in
exact arithmetic, whether every access of every iteration falls inside its buffer (an
affine index takes its extremes at the corners of the iteration box); if so the copy
without per-access checks runs, otherwise the original, which traps exactly where the
interpreter would.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from ...frontend import isa
from ...verify.model import VerifiedFunction
from ..emit.effects import instruction_writes, remap_moves, written_slots

# The ops the nest patterns name; everything else is matched by its ISA attributes. A loop's
# header ends in COND_BR on LOOP_TEST (iv < bound), its body adds the step to the iv with
# STEP, and its blocks end in BR; FAIL with status 0 continues with the next block.
BLOCK, BR, COND_BR, FAIL = isa.op("block"), isa.op("br"), isa.op("cond_br"), isa.op("fail")
LOOP_TEST, STEP = isa.op("cmp.lt.i64.s"), isa.op("add.i64")

# Invariant expressions: ("const", n) | ("reg", bank, index) | (op, x, y), op in add/sub/mul
# | ("value", key): an i64 the lowering computed where the nest is entered (emitter.nest_values).
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
    """sum(coeff * iv_loop) + b over exact integers; `terms` maps loop id -> coefficient."""

    terms: tuple  # ((loop id, expr), ...) sorted, no zero coefficients
    b: tuple

    @property
    def invariant(self) -> bool:
        return not self.terms

    def coeff(self, loop: int):
        return dict(self.terms).get(loop, ZERO)

    @staticmethod
    def const(expr) -> "Affine":
        return Affine((), expr)

    @staticmethod
    def iv(loop: int) -> "Affine":
        return Affine(((loop, ONE),), ZERO)

    def combine(self, other: "Affine", op) -> "Affine":
        terms = dict(self.terms)
        for k, c in other.terms:
            terms[k] = op(terms.get(k, ZERO), c)
        return Affine(tuple(sorted((k, c) for k, c in terms.items() if c != ZERO)), op(self.b, other.b))

    def scale(self, factor) -> "Affine":
        return Affine(tuple((k, _mul(c, factor)) for k, c in self.terms if _mul(c, factor) != ZERO),
                      _mul(self.b, factor))


@dataclass(frozen=True)
class Access:
    index: int  # instruction index in the function
    buffer: int  # ref register holding the buffer (not written anywhere in the nest)
    width: int  # element size in bytes
    store: bool
    element: Affine  # element index
    loops: tuple[int, ...]  # ids of the loops around the access, outermost first
    # (loop id, step) of the loops whose induction variable register the body has already
    # stepped where the access runs: it holds iv + step, while `element` is in terms of
    # the iteration's iv (the step is folded into `element.b`).
    stepped: tuple = ()


@dataclass
class Loop:
    id: int
    header: int  # block indices
    latch: int
    exit: int
    iv: int  # i64 register of the induction variable
    start: tuple | None  # invariant expression of the iv on entry (None: the root's register)
    bound: tuple
    step: tuple
    parent: int | None = None


@dataclass
class Nest:
    """A versioning unit: the outermost analyzable loop and everything inside it."""

    loops: list[Loop]  # loops[0] is the root; parents come before children
    accesses: list[Access] = field(default_factory=list)
    # Instructions the lowering replaces by values that cannot trap (a delinearised chunk's
    # divisions, lower.loops.delinearise): pure for the jam, whatever their op.
    pure: frozenset = frozenset()
    jam_factor: int | None = None  # at most this many iterations jammed (lower.loops.jam)
    # Smaller groups, largest first, that the jammed loop's remainder runs in before its
    # plain loop (lower.loops.jam.JamPlan.then).
    jam_then: tuple = ()
    # Whether the jam may take a loop whose stored elements move in its inner loops, when the
    # jammed copies' elements are provably disjoint (lower.loops.jam._inner_lattice).
    disjoint_stores: bool = False

    @property
    def root(self) -> Loop:
        return self.loops[0]

    @property
    def blocks(self) -> range:
        return range(self.root.header, self.root.latch + 1)


_ENTRY_CONSTANTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def element_access(op: isa.Op) -> isa.Access | None:
    """The access of a buffer element load or store (fills cover ranges: not followed)."""
    access = op.access
    if op.kind != isa.BUFFERS or access is None or access.action == isa.FILL:
        return None
    return access


def successors(vf: VerifiedFunction, block) -> list[int]:
    ins = vf.instructions[block.last]
    out = []
    for f, value in zip(ins.op.fields, ins.args):
        if f.kind == isa.TARGET:
            out.append(vf.block_of_pc[value])
        elif f.kind == isa.CASES:
            out.extend(vf.block_of_pc[t] for t, _ in value)
    if ins.op is FAIL:  # status 0 continues with the next block
        nxt = vf.block_of_pc.get(ins.pc + ins.size)
        if nxt is not None:
            out.append(nxt)
    return out


def innermost_paths(nest: "Nest") -> list[list["Loop"]]:
    """Per innermost loop of the nest, the loops around it, innermost first: the iteration
    box's volume is the largest product of trip counts along one of them."""
    paths = []
    for loop in nest.loops:
        if any(other.parent == loop.id for other in nest.loops):
            continue
        path, current = [], loop
        while current is not None:
            path.append(current)
            current = nest.loops[current.parent] if current.parent is not None else None
        paths.append(path)
    return paths


def _constant_of(ins) -> int:
    """The value of a constant op (zero ops encode none)."""
    return ins["value"] if ins.op.fields[0].kind == isa.IMM else 0


def entry_constants(vf) -> dict[int, tuple[str, int]]:
    """Registers whose only write in the function is an integer constant in the entry block:
    their value anywhere after it (loop bounds, strides; cached per function)."""
    cached = _ENTRY_CONSTANTS.get(vf)
    if cached is not None:
        return cached
    writes: dict[int, int] = {}  # slot -> instructions that can write it (any edge, any way)
    for block in vf.blocks:
        for idx in range(block.first, block.last + 1):
            slots: set[int] = set()
            instruction_writes(vf, idx, slots, set())
            for slot in slots:
                writes[slot] = writes.get(slot, 0) + 1
    out = {}
    entry = vf.blocks[0]
    for idx in range(entry.first, entry.last + 1):
        ins = vf.instructions[idx]
        bank = ins.op.type
        if ins.op.kind != isa.CONST or bank not in ("i32", "i64"):
            continue
        reg = ins["result"].index
        slots = [reg, reg + 1] if bank == "i64" else [reg]
        if all(writes.get(x, 0) == 1 for x in slots):
            out[reg] = (bank, _constant_of(ins))
    _ENTRY_CONSTANTS[vf] = out
    return out


def constant_value(vf, expr, known: dict | None = None) -> int | None:
    """A loop start, bound or step that is a constant or an entry-block constant i64
    register (`known`: entry_constants(vf), when the caller has it), else None."""
    if expr[0] == "const":
        return expr[1]
    if expr[0] == "reg":
        known = entry_constants(vf) if known is None else known
        if expr[2] in known and known[expr[2]][0] == "i64":
            return known[expr[2]][1]
    return None


def static_trips(vf, loop: Loop) -> int | None:
    """A loop's trip count when its start, bound and step are constants or entry-block
    constant registers (the root loop's start, a register, taken as 0), else None."""
    known = entry_constants(vf)
    return trips_of(*(constant_value(vf, x, known) for x in (loop.start or ("const", 0), loop.bound, loop.step)))


def trips_of(start: int | None, bound: int | None, step: int | None) -> int | None:
    """Iterations of `for iv = start; iv < bound; iv += step`, or None when a value is
    unknown or the step is not positive."""
    if start is None or bound is None or step is None or step <= 0:
        return None
    return max(0, -(-(bound - start) // step))


def back_edges_of(vf: VerifiedFunction) -> dict[int, int | None]:
    """Loop header block -> its latch block (None: several latches, not a counted loop)."""
    back_edges = {}
    for block in vf.blocks:
        for t in successors(vf, block):
            if t <= block.index:
                back_edges[t] = None if t in back_edges else block.index
    return back_edges


def loop_headers(back_edges: dict) -> list[int]:
    """The headers of simple loops (one latch), in block order."""
    return sorted(h for h, latch in back_edges.items() if latch is not None)


def build_nest(vf: VerifiedFunction, header: int, back_edges: dict | None = None, overrides: dict | None = None,
               root_bound=None) -> Nest | None:
    """The analyzable nest rooted at `header`, accesses or not, or None. `overrides`:
    instruction index -> the Affine value of its result, where a caller proved it (the
    delinearised chunks of lower.loops.delinearise); `root_bound`: the root loop's bound
    as an invariant expression instead of its header's compare operand."""
    back_edges = back_edges_of(vf) if back_edges is None else back_edges
    return _NestBuilder(vf, back_edges, overrides, root_bound).build(header)


def find_nests(vf: VerifiedFunction) -> list[Nest]:
    """The outermost analyzable loop nests with at least one range-checkable access."""
    back_edges = back_edges_of(vf)
    nests: list[Nest] = []
    covered_until = -1
    for header in loop_headers(back_edges):
        if header <= covered_until:
            continue  # inside a nest already taken
        nest = build_nest(vf, header, back_edges)
        if nest is not None and nest.accesses:
            nests.append(nest)
            covered_until = nest.root.latch
    return nests


class _Unsupported(Exception):
    pass


class _NestBuilder:
    def __init__(self, vf: VerifiedFunction, back_edges: dict, overrides: dict | None = None, root_bound=None):
        self.vf = vf
        self.back_edges = back_edges
        self.overrides = overrides or {}
        self.root_bound = root_bound
        self.loops: list[Loop] = []
        self.accesses: list[Access] = []
        self.stepped: dict[int, tuple] = {}  # loop id -> step, once its iv is stepped in the body

    def build(self, header: int) -> Nest | None:
        latch = self.back_edges[header]
        self.region = range(header, latch + 1)
        self.written, self.written_refs = written_slots(self.vf, self.region)
        if not self._single_entry(header, latch):
            return None
        try:
            self._loop(header, parent=None, env=_Env(self))
        except _Unsupported:
            return None
        return Nest(self.loops, self.accesses)

    def _single_entry(self, header: int, latch: int) -> bool:
        for block in self.vf.blocks:
            if block.index in self.region:
                continue
            if any(t in self.region and t != header for t in successors(self.vf, block)):
                return False
        return True

    def invariant_expr(self, value: "Affine | None"):
        if value is None or not value.invariant:
            raise _Unsupported
        return value.b

    # -- one loop: header, then its blocks in order (inner loops recursively) ----------------

    def _loop(self, header: int, parent: int | None, env: "_Env") -> int:
        vf = self.vf
        latch = self.back_edges.get(header)
        if latch is None or latch < header:
            raise _Unsupported
        h = vf.blocks[header]
        term = vf.instructions[h.last]
        if term.op is not COND_BR or term["true_operands"]:
            raise _Unsupported
        if vf.block_of_pc[term["true_dest_pc"]] != header + 1 or header + 1 > latch:
            raise _Unsupported
        exit_block = vf.block_of_pc[term["false_dest_pc"]]
        if exit_block in range(header, latch + 1):
            raise _Unsupported
        loop_id = len(self.loops)
        # The compare deciding the loop: cmp.lt.i64.s iv, bound (bound invariant in the nest).
        compare = None
        for idx in range(h.first, h.last):
            ins = vf.instructions[idx]
            if ins.op is BLOCK:
                continue
            if ins.op.kind not in (isa.COMPARE, isa.CONST):
                raise _Unsupported
            if ins.op is LOOP_TEST and ins["result"].index == term["condition"].index:
                compare = ins
        if compare is None:
            raise _Unsupported
        iv = compare["left"].index
        bound_reg = compare["right"].index
        if bound_reg in self.written or bound_reg + 1 in self.written:
            raise _Unsupported
        start = None if parent is None else self.invariant_expr(env.read_i64(iv))
        bound = self.root_bound if parent is None and self.root_bound is not None else ("reg", "i64", bound_reg)
        loop = Loop(loop_id, header, latch, exit_block, iv, start, bound, ZERO, parent)
        self.loops.append(loop)

        loop_written, _ = written_slots(vf, range(header, latch + 1))
        body = env.fork()
        body.forget(loop_written)
        body.values[iv] = Affine.iv(loop_id)
        path = self._enclosing(loop_id)
        step = None
        block = header + 1
        while True:
            if block in self.back_edges and self.back_edges[block] is not None and block != header:
                child = self._loop(block, loop_id, body)
                child_written, _ = written_slots(vf, range(block, self.back_edges[block] + 1))
                body.forget(child_written)
                if self.loops[child].exit != self.back_edges[block] + 1:
                    raise _Unsupported
                block = self.back_edges[block] + 1
                continue
            b = vf.blocks[block]
            for idx in range(b.first, b.last):
                ins = vf.instructions[idx]
                self._access(ins, idx, body, path)
                if ins.op is STEP and ins["result"].index == iv:
                    if step is not None:
                        raise _Unsupported
                    left, right = body.read_i64(ins["left"].index), body.read_i64(ins["right"].index)
                    if left == Affine.iv(loop_id) and right is not None and right.invariant:
                        step = right.b
                        self.stepped[loop_id] = step
                    elif right == Affine.iv(loop_id) and left is not None and left.invariant:
                        step = left.b
                        self.stepped[loop_id] = step
                    else:
                        raise _Unsupported
                body.execute(ins, self.overrides.get(idx))
            term = vf.instructions[b.last]
            if term.op is not BR:
                raise _Unsupported
            target = vf.block_of_pc[term["dest_pc"]]
            if block == latch:
                if target != header or term["operands"]:
                    raise _Unsupported
                break
            if target != block + 1:
                raise _Unsupported
            body.remap(term["operands"])
            block = target
        if step is None or body.values.get(iv) != Affine(((loop_id, ONE),), step):
            raise _Unsupported
        if any(s in self.written for s in _regs_of(step)):
            raise _Unsupported  # the step must be the same in every iteration of the nest
        loop.step = step
        self.stepped.pop(loop_id, None)
        return loop_id

    def _enclosing(self, loop_id: int) -> tuple[int, ...]:
        path = []
        current: int | None = loop_id
        while current is not None:
            path.append(current)
            current = self.loops[current].parent
        return tuple(reversed(path))

    def _access(self, ins, idx: int, env: "_Env", path) -> None:
        access = element_access(ins.op)
        if access is None:
            return
        load = access.action == isa.LOAD
        buf = ins["source_buffer" if load else "target_buffer"].index
        element = env.read_i64(ins["source_offset" if load else "target_offset"].index)
        if buf in self.written_refs or element is None:
            return
        if any(s in self.written for c in [element.b, *(c for _, c in element.terms)] for s in _regs_of(c)):
            return
        stepped = tuple((lp, st) for lp, st in self.stepped.items() if lp in path)
        self.accesses.append(Access(idx, buf, access.width, not load, element, path, stepped))


def _regs_of(expr) -> list[int]:
    if expr[0] == "reg":
        return [expr[2], expr[2] + 1]
    if expr[0] in ("const", "value"):  # "value": an IR value the lowering computed (guard.InvariantEval)
        return []
    return _regs_of(expr[1]) + _regs_of(expr[2])


class _Env:
    """Symbolic register state: affine i64 values (None: unknown)."""

    def __init__(self, builder: _NestBuilder):
        self.builder = builder
        self.values: dict[int, Affine | None] = {}
        self.clobbered: set[int] = set()

    def fork(self) -> "_Env":
        e = _Env(self.builder)
        e.values = dict(self.values)
        e.clobbered = set(self.clobbered)
        return e

    def forget(self, slots) -> None:
        for s in slots:
            self.values.pop(s, None)
            self.values.pop(s - 1, None)  # an i32 write to the high half clobbers the i64 below it
            self.clobbered.add(s)

    def read_i64(self, reg: int) -> Affine | None:
        if reg in self.values:
            return self.values[reg]
        if reg in self.clobbered or reg + 1 in self.clobbered:
            return None
        if reg in self.builder.written or reg + 1 in self.builder.written:
            return None  # written in the nest but not yet in this iteration
        return Affine.const(("reg", "i64", reg))

    def _set(self, reg: int, value: Affine | None) -> None:
        self.values[reg] = value
        self.clobbered.discard(reg)
        self.clobbered.discard(reg + 1)
        self.values.pop(reg - 1, None)
        self.values.pop(reg + 1, None)

    def _clobber(self, slot: int) -> None:
        self.clobbered.add(slot)
        self.values.pop(slot, None)
        self.values.pop(slot - 1, None)

    def remap(self, pairs) -> None:
        """Branch remaps, in order (remap_moves)."""
        for kind, src, dst in remap_moves(pairs):
            if kind == "i64":
                self._set(dst.index, self.read_i64(src.index))
            elif kind == "i32":
                self._clobber(dst.index)

    def execute(self, ins, known: "Affine | None" = None) -> None:
        """Follows one instruction; `known`: its result's value, proven by the caller."""
        op = ins.op
        if known is not None:
            self._set(ins["result"].index, known)
            return
        follow = _AFFINE.get(op)
        if follow is not None:
            self._set(ins["result"].index, follow(ins, self.read_i64))
            return
        if op.kind == isa.CONST and op.type == "i64":
            self._set(ins["result"].index, Affine.const(("const", _constant_of(ins))))
            return
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


def _affine_mul(x: Affine | None, y: Affine | None) -> Affine | None:
    if x is None or y is None:
        return None
    if x.invariant:
        return y.scale(x.b)
    if y.invariant:
        return x.scale(y.b)
    return None


def _affine_sum(x: Affine | None, y: Affine | None, op) -> Affine | None:
    return None if x is None or y is None else x.combine(y, op)


_AFFINE = {  # the i64 arithmetic _Env follows: op -> (instruction, read_i64) -> Affine or None
    isa.op("add.i64"): lambda ins, get: _affine_sum(get(ins["left"].index), get(ins["right"].index), _add),
    isa.op("sub.i64"): lambda ins, get: _affine_sum(get(ins["left"].index), get(ins["right"].index), _sub),
    isa.op("mul.i64"): lambda ins, get: _affine_mul(get(ins["left"].index), get(ins["right"].index)),
    isa.op("fma.i64"): lambda ins, get: _affine_sum(
        _affine_mul(get(ins["first"].index), get(ins["second"].index)), get(ins["third"].index), _add),
}
