"""Jammed copies that compute the same value compute it once.

In a jammed (lower.loops.jam) region every copy runs the same instructions, differing only in
the induction variables of the jammed loops: P's (one lane per iteration of P's group) and,
when register-blocked, Q's. A value that depends on neither (an inner loop's counter, a
weight's offset) is equal in all copies; one that depends only on Q (a matmul's left-hand
element) is equal in all copies of one Q lane. Lowering it once per distinct value instead
of once per copy leaves LLVM a fraction of the instructions to optimise, which is where a
ResNet's compile time goes (64 copies per blocked nest).

The analysis follows values, not registers (IREE reuses a register for an index and then
for an accumulator): reaching definitions over the region's blocks, the remap moves on its
edges and the induction variables the jam spreads at its headers; definitions meeting at a
use form one web, and each web gets a *taint*, the lanes (P, Q) its value can depend on
(the least fixpoint; anything not understood depends on every lane). Copy k's value of a
web lives in the register file of its *holder*, the copy with k's lanes in the taint and
lane 0 elsewhere (except values of P's lanes alone, which every copy keeps: see holder_of),
and only holders execute the definitions. The last copy is the real
register file: it reads like the others, and where it does not execute a definition it
copies the holder's result, so the headers and the code after the region find every
register there.

Sound because the copies run in lockstep, instruction by instruction and move by move
(lower.loops.jam), so at every point each copy's file holds the values reaching that point; within
a step the highest copy goes first, so a copy reads its holder's (a lower copy's) register
before the holder's own execution of the step overwrites it. The jammed region is pure; its stored elements are distinct per copy and apart from what it
reads, so a load with a shared address reads memory no copy writes. Control decisions are
shared already (copy 0 decides for all).
"""

from __future__ import annotations

from ...frontend import isa
from ..emit.effects import instruction_writes, remap_moves
from ..emit.types import LoweringError
from .analysis import BR, element_access

P_LANE, Q_LANE = 1, 2
ALL_LANES = P_LANE | Q_LANE

# Ops that compute register results from fixed register operands alone: the ISA's pure ops
# but switch, whose register list neither this analysis nor lower.loops.jam follows
# (lower.loops.jam allows them in a jammed region unless they can trap).
REGISTER_OPS = frozenset(op for op in isa.OPS.values() if op.pure and all(f.kind != isa.REGS for f in op.fields))
# ... and whose result may be shared: those, and proven loads (of memory the region does not write).
_SHAREABLE = REGISTER_OPS | {op for op in isa.OPS.values()
                             if (a := element_access(op)) is not None and a.action == isa.LOAD}


def _slots(reg) -> tuple[int, ...]:
    return (reg.index, reg.index + 1) if reg.bank in ("i64", "f64") else (reg.index,)


class _Step:
    """One thing the copies do in lockstep: an instruction, a remap move or a header's
    spread of an induction variable. `reads`/`writes`: i32 slots; `pairs`: slot groups that
    form one 64-bit value (one web)."""

    __slots__ = ("key", "reads", "writes", "pairs", "shareable", "seed")

    def __init__(self, key, reads=(), writes=(), pairs=(), shareable=False, seed=None):
        self.key, self.reads, self.writes, self.pairs = key, tuple(reads), tuple(writes), tuple(pairs)
        self.shareable, self.seed = shareable, seed


def _instruction_step(vf, idx: int, unchecked, nest_loops) -> _Step:
    ins = vf.instructions[idx]
    written: set[int] = set()
    instruction_writes(vf, idx, written, set())
    reads, pairs, results = [], [], 0
    for f, value in zip(ins.op.fields, ins.args):
        regs = [value] if f.kind == isa.REG else list(value) if f.kind == isa.REGS else []
        if f.kind in (isa.REMAP, isa.CASES):
            moves = value if f.kind == isa.REMAP else [m for _, ms in value for m in ms]
            regs = [src for src, _ in moves]
        for r in regs:
            if r.is_ref:
                continue
            if f.kind == isa.REG and r.bank in ("i64", "f64"):
                pairs.append(_slots(r))
            if f.kind == isa.REG and f.out:
                results += 1
            elif not f.out:
                reads.extend(_slots(r))
    access = unchecked.get(idx)
    if access is not None:  # a proven access rebuilds its index from the loops' ivs (guard.proven_index)
        for loop_id in access.loops:
            if access.element.coeff(loop_id) != ("const", 0):
                iv = nest_loops[loop_id].iv
                reads.extend((iv, iv + 1))
                pairs.append((iv, iv + 1))
    return _Step(idx, reads, sorted(written), pairs, ins.op in _SHAREABLE and results == 1)


def _move_steps(term_idx: int, side: str, pairs) -> list[_Step]:
    steps = []
    for j, (kind, src, dst) in enumerate(remap_moves(pairs)):
        key = ("move", term_idx, side, j)
        if kind == "i64":
            s, d = (src.index, src.index + 1), (dst.index, dst.index + 1)
            steps.append(_Step(key, s, d, (s, d), True))
        elif kind == "i32":
            steps.append(_Step(key, (src.index,), (dst.index,), (), True))
        else:
            steps.append(_Step(key))
    return steps


class CopySharing:
    """Which copies execute each step of a jammed region and where each copy reads a value.

    `blocks`: the VM blocks lowered per copy; `headers`: VM header block -> (lane of its
    loop's induction variable, iv slot, VM block its group enters, VM block it exits to or
    None) for the headers the jam synthesizes; `entry`: the header the region starts at.
    Copy k is lane k % factor of Q and lane k // factor of P (factor 1: P alone).
    `enabled` False: every copy executes everything (the share_copies step is off)."""

    def __init__(self, e, blocks, headers: dict, entry: int, n: int, factor: int, enabled: bool = True):
        self.n, self.factor = n, factor
        self.now = None  # key of the step being lowered
        self._def_taint: dict = {}  # step key -> taint of what it defines
        self._use_taint: dict = {}  # (step key, slot) -> taint of the value read there
        self._reach_at = None  # step key -> slot -> defining steps (when analysed)
        if enabled:
            self._analyse(e.vf, blocks, headers, entry, e.unchecked, e.nest_loops)

    # --- analysis -----------------------------------------------------------------------------------

    def _analyse(self, vf, blocks, headers, entry, unchecked, nest_loops) -> None:
        nodes: dict = {}  # node -> (steps, successor nodes)

        def goto(t):
            return ("header", t) if t in headers else ("block", t) if t in blocks else None

        for h, (lane, iv, body, exit_) in headers.items():
            nodes[("header", h)] = ([], [n for n in (("spread", h), goto(exit_) if exit_ is not None else None) if n])
            nodes[("spread", h)] = ([_Step(("spread", h), (), (iv, iv + 1), ((iv, iv + 1),), False, lane)],
                                    [goto(body)])
        for bi in blocks:
            block = vf.blocks[bi]
            steps = [_instruction_step(vf, idx, unchecked, nest_loops) for idx in range(block.first, block.last)]
            term = vf.instructions[block.last]
            succ = []
            if term.op is BR:
                steps += _move_steps(block.last, "", term["operands"])
                succ.append(goto(vf.block_of_pc[term["dest_pc"]]))
            else:
                steps.append(_Step(("cond", block.last), (term["condition"].index,)))
                for side in ("true", "false"):
                    edge = ("edge", block.last, side)
                    nodes[edge] = (_move_steps(block.last, side, term[f"{side}_operands"]),
                                   [goto(vf.block_of_pc[term[f"{side}_dest_pc"]])])
                    succ.append(edge)
            nodes[("block", bi)] = (steps, [s for s in succ if s is not None])

        # Reaching definitions: per node, slot -> frozenset of defining step keys.
        start = ("header", entry)
        ins: dict = {n: {} for n in nodes}
        work = [start]
        seen = set()
        reach_at: dict = {}  # step key -> state before it
        while work:
            node = work.pop()
            state = dict(ins[node])
            steps, succ = nodes[node]
            for st in steps:
                reach_at[st.key] = state.copy()
                for s in st.writes:
                    state[s] = frozenset((st.key,))
            for nxt in succ:
                if nxt not in nodes:
                    continue
                merged = ins[nxt]
                grew = nxt not in seen
                for s, defs in state.items():
                    old = merged.get(s, frozenset())
                    if not defs <= old:
                        merged[s] = old | defs
                        grew = True
                if grew:
                    seen.add(nxt)
                    work.append(nxt)

        # Webs: definitions meeting at a use, a step's results and a 64-bit value's halves.
        parent: dict = {}

        def find(x):
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(xs):
            xs = [find(x) for x in xs]
            for x in xs[1:]:
                parent[x] = xs[0]

        all_steps = [st for steps, _ in nodes.values() for st in steps if st.key in reach_at]
        for st in all_steps:
            state = reach_at[st.key]
            if st.writes:
                union([st.key])
            for s in st.reads:
                union(list(state.get(s, ())))
            for group in st.pairs:  # both halves of a 64-bit value read here come from one file
                if set(group) <= set(st.reads):
                    union([d for s in group for d in state.get(s, ())])
        taint: dict = {}
        changed = True
        while changed:
            changed = False
            for st in all_steps:
                if not st.writes:
                    continue
                bits = st.seed if st.seed is not None else 0 if st.shareable else ALL_LANES
                state = reach_at[st.key]
                for s in st.reads:
                    for d in state.get(s, ()):
                        bits |= taint.get(find(d), 0)
                w = find(st.key)
                if taint.get(w, 0) | bits != taint.get(w, 0):
                    taint[w] = taint.get(w, 0) | bits
                    changed = True
        for st in all_steps:
            state = reach_at[st.key]
            if st.writes:
                self._def_taint[st.key] = taint.get(find(st.key), 0)
            for s in set(st.reads):
                webs = {find(d) for d in state.get(s, ())}
                self._use_taint[(st.key, s)] = taint.get(webs.pop(), 0) if webs else 0
        self._reach_at, self._find, self._taint = reach_at, find, taint

    # --- queries ------------------------------------------------------------------------------------

    def holder_of(self, k: int, bits: int) -> int:
        """The copy whose file holds copy k's value of something depending on lanes `bits`."""
        if bits == ALL_LANES or bits == P_LANE:
            # Values of P's lanes alone (a matmul's right-hand row) stay with every copy:
            # shared across Q's lanes, SLP packed the 16 columns of one ResNet kernel
            # (4x2048x512) as 8 + 4 + 2 + 1 + 1 and spilled, 3x slower; LLVM merges them.
            return k
        f = self.factor
        return ((k // f) * f if bits & P_LANE else 0) + (k % f if bits & Q_LANE else 0)

    def read_holder(self, k: int, slot: int) -> int:
        """Where copy k reads `slot` in the step being lowered."""
        bits = self._use_taint.get((self.now, slot))
        if bits is None:
            bits = self._unlisted_read(slot)
        return self.holder_of(k, bits)

    def _unlisted_read(self, slot: int) -> int:
        """A read the analysis did not list (none known today): the taint of the one web
        reaching here, or every lane (own file) when nothing was analysed."""
        if self._reach_at is None:
            return ALL_LANES
        defs = self._reach_at.get(self.now, {}).get(slot, ())
        webs = {self._find(d) for d in defs}
        if len(webs) > 1:
            raise LoweringError("jam", f"register slot {slot} read with values of several webs")
        return self._taint.get(webs.pop(), 0) if webs else 0

    def runs(self, k: int, key) -> bool:
        """Whether copy k executes step `key` (else its holder computed the result)."""
        bits = self._def_taint.get(key)
        return bits is None or self.holder_of(k, bits) == k

    def def_holder(self, k: int, key) -> int:
        """The copy that executes step `key` for copy k."""
        bits = self._def_taint.get(key)
        return k if bits is None else self.holder_of(k, bits)
