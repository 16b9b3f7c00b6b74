"""Lowering one VerifiedFunction to LLVM IR: registers, blocks, refs, traps, unwinding.

Every function gets the uniform native ABI `i32 (state, args, results, trap)`. Registers
live in two allocas laid out exactly like IREE's register file (i32 slots shared by i32,
f32 and i64/f64 pairs; pointer slots for refs), which SROA and mem2reg turn into SSA
values. Traps branch to cold blocks that fill the trap record and unwind: every exit
releases the refs still held in registers.
"""

from __future__ import annotations

from ...errors import STATUS_CODES
from ...frontend.cconv import argument_registers
from ...frontend.decode import Reg
from ...runtime.native import ir, layout
from ...runtime.vm import traps
from ...runtime.vm.nativelib import BUFFER_TYPE_ID
from ...runtime.vm.semantics import MAX_CALL_DEPTH
from ...verify.model import VerifiedFunction
from .registry import LOWERINGS
from .effects import written_slots
from .types import BANK_TYPE, I1, I8, I32, I64, PTR, LoweringError, const, offset_of, opaque_alloca


class Emitter:
    """Lowers one function into `fn` (already declared in the module by the caller)."""

    def __init__(self, mod, vf: VerifiedFunction, fn: ir.Function, nest_lowering=None):
        self.mod = mod  # lower.module.ModuleLowering: declarations, constants, symbols
        # How loop nests are lowered (lower.loops.versioning), or None: block by block.
        self.nest_lowering = nest_lowering
        self.vf = vf
        self.fn = fn
        self.state, self.args, self.results, self.trap_rec = fn.args
        for a, n in zip(fn.args, ("state", "args", "results", "trap")):
            a.name = n
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.pc = 0
        self.ordinal = vf.ordinal
        n32 = max(2, vf.i32_registers + (vf.i32_registers & 1))
        nref = max(1, vf.ref_registers)
        self.n32, self.nref = n32, nref
        self.i32file = opaque_alloca(self.b, ir.ArrayType(I32, n32), "i32regs")
        self.reffile = opaque_alloca(self.b, ir.ArrayType(PTR, nref), "refregs")
        # Per ref register, what a buffer access needs: whether it holds a vm.buffer, its
        # data, length and access bits. Updated on every write of the register, so inside
        # a loop they are loop-invariant SSA values once mem2reg has run.
        self.shadow = {}
        self._slots: dict[int, ir.Value] = {}
        self._ref_slots: dict[int, ir.Value] = {}
        self.copy: int | None = None  # jammed copy being lowered (None: the real registers)
        self.renamed: frozenset[int] = frozenset()
        self.sharing = None  # lower.loops.sharing.CopySharing of the jammed region being lowered
        self._copy_files: dict[int, ir.Value] = {}
        self._copy_slots: dict[tuple[int, int], ir.Value] = {}
        self.blocks = [fn.append_basic_block(f"bb{i}") for i in range(len(vf.blocks))]
        self.unwind = fn.append_basic_block("unwind")
        self.block_override: dict[int, ir.Block] = {}  # while lowering a loop copy
        # While a delinearised loop's chunk is lowered (lower.loops.delinearise): VM block ->
        # LLVM block for branches leaving the copies (to the next chunk), instruction index ->
        # its lowering there, and the chunk's values ("value" invariant expressions) by key.
        self.redirect: dict[int, ir.Block] = {}
        self.overrides: dict = {}
        self.nest_values: dict = {}
        # Accesses proven in range by a loop guard: instruction index -> loops.Access, and the
        # nest's loops by id (the fast copy rebuilds their indices from the affine form).
        self.unchecked: dict = {}
        self.nest_loops: dict = {}
        # In a fast copy, (emitter, access) -> the element index rebuilt from its affine form.
        self.proven_index = None
        self.repacked: dict = {}  # instruction index -> (data pointer, Access) of a packed load (lower.loops.pack)
        # In the guarded fast copy of a loop nest, which NaN an add/mul of two NaNs returns is
        # left to LLVM (see ops_float._nan_rule): pinning it costs 2-4x on kernels.
        self.fast_copy = False
        self.alias: dict = {}  # (buffer register, jammed copy) -> (scope, noalias) metadata
        self.jam_copy = None  # which jammed copy is being lowered (None: the remainder loop)
        # While a jammed region is lowered: loop id -> (lane, step) of each jammed loop, copy
        # k's iv being the group's start + lane(k) * step (lower.loops.jam), and (instruction, block,
        # copy, index) of the first copy's proven index of the instruction being lowered
        # (guard.proven_index derives the other copies' from it).
        self.jam_lanes: dict = {}
        self.jam_index = None
        self._depth_ptr = None
        self._owned_refs: list[int] | None = None

    # --- registers ------------------------------------------------------------------------------

    def sub_emitter(self, fn: ir.Function) -> "Emitter":
        """An emitter of this function's code into another LLVM function (a split loop's body)."""
        return Emitter(self.mod, self.vf, fn, self.nest_lowering)

    def entry_builder(self) -> ir.IRBuilder:
        b = ir.IRBuilder(self.entry)
        if self.entry.is_terminated:
            b.position_before(self.entry.terminator)
        return b

    def slot(self, index: int):
        """Address of i32 register slot `index` (one GEP per register, in the entry block).

        While a jammed copy is lowered, registers its region writes live in the copy's own file.
        """
        if self.copy is not None and index in self.renamed:
            return self._copy_slot(self.copy, index)
        p = self._slots.get(index)
        if p is None:
            p = self._slots[index] = self.entry_builder().gep(self.i32file, [const(I64, index)],
                                                               source_etype=I32, inbounds=True)
        return p

    def _copy_slot(self, copy: int, index: int):
        key = (copy, index)
        p = self._copy_slots.get(key)
        if p is None:
            file = self._copy_files.get(copy)
            if file is None:
                b = ir.IRBuilder(self.entry)
                b.position_at_start(self.entry)
                file = self._copy_files[copy] = opaque_alloca(b, ir.ArrayType(I32, self.n32), f"i32regs_copy{copy}")
            p = self._copy_slots[key] = self.entry_builder().gep(file, [const(I64, index)], source_etype=I32,
                                                                  inbounds=True)
        return p

    def ref_slot(self, index: int):
        p = self._ref_slots.get(index)
        if p is None:
            p = self._ref_slots[index] = self.entry_builder().gep(self.reffile, [const(I64, index)],
                                                                   source_etype=PTR, inbounds=True)
        return p

    def get(self, reg: Reg, bank: str | None = None):
        bank = bank or reg.bank
        if bank == "ref":
            return self.b.load(self.ref_slot(reg.index), typ=PTR)
        index = reg.index
        if self.sharing is not None and self.jam_copy is not None and index in self.renamed:
            holder = self.sharing.read_holder(self.jam_copy, index)
            slot = self.slot(index) if holder == self.sharing.n - 1 else self._copy_slot(holder, index)
        else:
            slot = self.slot(index)
        v = self.b.load(slot, typ=BANK_TYPE[bank])
        v.align = 8 if bank in ("i64", "f64") else 4
        return v

    def set(self, reg: Reg, value, bank: str | None = None) -> None:
        bank = bank or reg.bank
        assert bank != "ref", "use set_ref for refs"
        st = self.b.store(value, self.slot(reg.index))
        st.align = 8 if bank in ("i64", "f64") else 4

    def i32(self, reg: Reg):
        return self.get(reg, "i32")

    def i64(self, reg: Reg):
        return self.get(reg, "i64")

    # --- refs -------------------------------------------------------------------------------------

    def retain(self, obj) -> None:
        """Adds a reference to `obj` unless it is null (a module-local helper LLVM inlines)."""
        if not (isinstance(obj, ir.Constant) and obj.constant is None):
            self.b.call(self.mod.helper("retain"), [obj])

    def release(self, obj) -> None:
        """Drops a reference to `obj` unless null; destroys it when it was the last."""
        if not (isinstance(obj, ir.Constant) and obj.constant is None):
            self.b.call(self.mod.helper("release"), [obj])

    def store_ref(self, index: int, value) -> None:
        """Writes a ref register (no reference counting) and refreshes its buffer shadow."""
        self.b.store(value, self.ref_slot(index))
        self._update_shadow(index, value)

    def set_ref(self, reg: Reg, owned_value) -> None:
        """Stores an owned reference into a register, releasing what it held."""
        slot = self.ref_slot(reg.index)
        old = self.b.load(slot, typ=PTR)
        self.store_ref(reg.index, owned_value)
        self.release(old)

    def clear_ref(self, reg: Reg) -> None:
        """Forgets a moved-from register without releasing (ownership went elsewhere)."""
        self.store_ref(reg.index, const(PTR, None))

    # --- buffer shadows ---------------------------------------------------------------------------

    _SHADOW_FIELDS = (("ok", I1), ("data", PTR), ("length", I64), ("access", I32))
    _SHADOW_TYPES = dict(_SHADOW_FIELDS)

    def _shadow_slots(self, index: int):
        slots = self.shadow.get(index)
        if slots is None:
            b = ir.IRBuilder(self.entry)
            b.position_at_start(self.entry)
            slots = {n: opaque_alloca(b, t, f"r{index}_{n}", 8) for n, t in self._SHADOW_FIELDS}
            # A register read before anything is written to it holds null (the register file
            # starts zeroed): its facts start as "no buffer", never as uninitialized memory.
            for n, t in self._SHADOW_FIELDS:
                b.store(const(t, None) if t == PTR else const(t, 0), slots[n])
            self.shadow[index] = slots
        return slots

    def _update_shadow(self, index: int, value) -> None:
        """Branch-free: loads come from a zeroed stand-in object when `value` is no buffer."""
        b = self.b
        slots = self._shadow_slots(index)
        if isinstance(value, ir.Constant):
            values = {"ok": const(I1, 0), "data": const(PTR, None), "length": const(I64, 0),
                      "access": const(I32, 0)}
        else:
            stand_in = self.mod.null_object()
            nonnull = b.icmp_unsigned("!=", value, const(PTR, None))
            header = b.select(nonnull, value, stand_in)
            ok = b.icmp_unsigned("==", self.type_id_of(header), const(I32, BUFFER_TYPE_ID))
            obj = b.select(ok, value, stand_in)
            values = {"ok": ok}
            for name, ty in self._SHADOW_FIELDS[1:]:
                p = b.gep(obj, [const(I64, offset_of("Buffer", name))], source_etype=I8, inbounds=True)
                v = b.load(p, typ=ty)
                v.set_metadata("invariant.load", self.mod.module.add_metadata([]))
                values[name] = v
        for name, _ in self._SHADOW_FIELDS:
            b.store(values[name], slots[name])

    def buffer_shadow(self, reg: Reg) -> dict:
        """The buffer facts of a ref register: {"ok", "data", "length", "access"} values."""
        slots = self._shadow_slots(reg.index)
        return {n: self.b.load(slots[n], typ=t) for n, t in self._SHADOW_FIELDS}

    def buffer_field(self, reg: Reg, name: str):
        """One of those facts, loaded here."""
        return self.b.load(self._shadow_slots(reg.index)[name], typ=self._SHADOW_TYPES[name])

    def take_ref(self, reg: Reg, allow_move: bool = True):
        """An owned reference to a register's object: the register's own if moved, else +1."""
        value = self.get(reg, "ref")
        if allow_move and reg.move:
            self.clear_ref(reg)
        else:
            self.retain(value)
        return value

    def retain_or_move(self, src: Reg, dst: Reg) -> None:
        """IREE's retain-or-move of one ref register into another."""
        if src.index == dst.index:
            return
        self.set_ref(dst, self.take_ref(src))

    def type_id_of(self, obj):
        """An object's runtime type id (never changes, so the load is marked invariant)."""
        p = self.b.gep(obj, [const(I64, offset_of("Object", "type_id"))], source_etype=I8)
        v = self.b.load(p, typ=I32)
        v.set_metadata("invariant.load", self.mod.module.add_metadata([]))
        return v

    # --- constants and symbols --------------------------------------------------------------

    def cstring(self, text: str):
        return self.mod.cstring(text)

    def runtime(self, name: str) -> ir.Function:
        return self.mod.runtime(name)

    def state_field(self, name: str):
        p = self.b.gep(self.state, [const(I64, offset_of("ModuleState", name))], source_etype=I8)
        return self.b.load(p, typ=PTR if layout.field("ModuleState", name).type == "ptr" else I64)

    # --- traps ------------------------------------------------------------------------------------

    def _status(self, status):
        if isinstance(status, ir.Value):
            return status
        return const(I32, status)

    def trap(self, kind: traps.TrapKind, args=(), status=None, message=None) -> None:
        """Records a trap at the current pc and unwinds (ends the current block)."""
        b = self.b
        st = self._status(STATUS_CODES[kind.status] if status is None else status)
        vals = [self._i64(a) for a in args] + [const(I64, 0)] * (4 - len(args))
        msg = message if isinstance(message, ir.Value) else (
            self.cstring(message) if message else const(PTR, None))
        b.call(self.mod.helper("trap"), [self.trap_rec, self.state, const(I32, self.ordinal), const(I32, self.pc),
                                         st, const(I32, kind.code), *vals, msg])
        b.branch(self.unwind)

    def push_frame(self) -> None:
        self.b.call(self.runtime("jv_trap_push_frame"),
                    [self.trap_rec, self.state, const(I32, self.ordinal), const(I32, self.pc)])

    def check(self, ok, kind: traps.TrapKind, args=(), status=None, message=None) -> None:
        """Continues when `ok` (i1) holds; otherwise traps in a cold block."""
        b = self.b
        cold = self.fn.append_basic_block(f"trap_pc{self.pc}")
        cont = self.fn.append_basic_block(f"ok_pc{self.pc}")
        br = b.cbranch(ok, cont, cold)
        br.set_weights([1 << 20, 1])
        b.position_at_end(cold)
        self.trap(kind, args, status, message)
        b.position_at_end(cont)

    def check_status(self, status) -> None:
        """After a call: on a nonzero status add this frame to the record and unwind."""
        b = self.b
        failed = b.icmp_unsigned("!=", status, const(I32, 0))
        cold = self.fn.append_basic_block(f"unwind_pc{self.pc}")
        cont = self.fn.append_basic_block(f"after_pc{self.pc}")
        br = b.cbranch(failed, cold, cont)
        br.set_weights([1, 1 << 20])
        b.position_at_end(cold)
        self.push_frame()
        b.branch(self.unwind)
        b.position_at_end(cont)

    def _i64(self, v):
        if isinstance(v, int):
            return const(I64, v)
        if v.type == I64:
            return v
        if isinstance(v.type, ir.IntType):
            return self.b.sext(v, I64) if v.type.width < 64 else self.b.trunc(v, I64)
        raise TypeError(v.type)

    # --- the whole function -------------------------------------------------------------------

    def prologue(self) -> None:
        """Zeroed register files, like a fresh IREE frame, and the call scratch space."""
        b = self.b
        b.call(self.mod.intrinsic_memset(), [self.i32file, const(I8, 0), const(I64, 4 * self.n32), const(I1, 0)])
        b.call(self.mod.intrinsic_memset(), [self.reffile, const(I8, 0), const(I64, 8 * self.nref), const(I1, 0)])
        arg_slots, result_slots = self._call_slot_demand()
        self.call_args = opaque_alloca(b, ir.ArrayType(I64, max(1, arg_slots)), "call_args")
        self.call_results = opaque_alloca(b, ir.ArrayType(I64, max(1, result_slots)), "call_results")
        self.tmp64 = opaque_alloca(b, I64, "tmp64")  # out-parameter of runtime helpers

    def lower(self) -> None:
        vf = self.vf
        b = self.b
        self.prologue()
        self._enter_depth()
        self._copy_arguments()
        b.branch(self.blocks[0])
        nests = self.nest_lowering.nests(vf) if self.nest_lowering is not None else {}
        inside = {i for nest in nests.values() for i in nest.blocks if i != nest.root.header}
        for block in vf.blocks:
            if block.index in nests:
                self.nest_lowering.lower(self, nests[block.index])
            elif block.index in inside:  # lowered in its nest's copies; nothing jumps here
                b.position_at_end(self.blocks[block.index])
                b.unreachable()
            else:
                self.lower_block(block.index, self.blocks[block.index])
        self._emit_unwind()

    def target_block(self, pc: int) -> ir.Block:
        """The LLVM block a branch to `pc` goes to (a loop copy's own blocks inside it)."""
        index = self.vf.block_of_pc[pc]
        block = self.block_override.get(index)
        return block if block is not None else self.redirect.get(index, self.blocks[index])

    def lower_instructions(self, indices) -> None:
        vf = self.vf
        for i in indices:
            ins = vf.instructions[i]
            self.pc = ins.pc
            self.index = i
            handler = self.overrides.get(i) or LOWERINGS.handler(ins.op.name)
            if handler is None:
                raise LoweringError(ins.op.name, "no lowering registered")
            handler(self, ins)

    def lower_block(self, index: int, llvm_block: ir.Block) -> None:
        b = self.b
        vf = self.vf
        block = vf.blocks[index]
        b.position_at_end(llvm_block)
        self.lower_instructions(range(block.first, block.last + 1))
        if not b.block.is_terminated:
            raise LoweringError(vf.instructions[block.last].op.name, "block does not end in a terminator")

    def _call_slot_demand(self) -> tuple[int, int]:
        args = results = 0
        for site in self.vf.calls.values():
            spans = sum(1 for a in site.cconv.args if not isinstance(a, str))
            args = max(args, len(site.arg_codes) + spans)
            results = max(results, len(site.result_codes))
        return args, results

    def _enter_depth(self) -> None:
        b = self.b
        self._depth_ptr = b.gep(self.trap_rec, [const(I64, offset_of("Trap", "depth"))], source_etype=I8)
        depth = b.add(b.load(self._depth_ptr, typ=I32), const(I32, 1))
        b.store(depth, self._depth_ptr)
        too_deep = b.icmp_signed(">", depth, const(I32, MAX_CALL_DEPTH))
        cold = self.fn.append_basic_block("stack_overflow")
        cont = self.fn.append_basic_block("args")
        b.cbranch(too_deep, cold, cont).set_weights([1, 1 << 20])
        b.position_at_end(cold)
        self.trap(traps.STACK_OVERFLOW, [MAX_CALL_DEPTH])
        b.position_at_end(cont)

    def leave_depth(self) -> None:
        b = self.b
        b.store(b.sub(b.load(self._depth_ptr, typ=I32), const(I32, 1)), self._depth_ptr)

    def _copy_arguments(self) -> None:
        b = self.b
        codes = self.vf.cconv.args
        for i, (code, (bank, index)) in enumerate(zip(codes, argument_registers(codes))):
            p = b.gep(self.args, [const(I64, i)], source_etype=I64)
            if bank == "ref":
                obj = b.load(p, typ=PTR)
                self.retain(obj)  # arguments are borrowed; the register owns a reference
                self.store_ref(index, obj)
            else:
                v = b.load(p, typ=BANK_TYPE[bank])
                self.set(Reg(bank, index, False, index), v, bank)

    def owned_refs(self) -> list[int]:
        """The ref registers that can hold a reference when the function leaves: its ref
        arguments and every register something writes. The others stay null (the file starts
        zeroed), so returns and unwinds release only these: a descriptor may declare up to
        16383 ref registers, and releasing each one at every exit made compile time explode."""
        if self._owned_refs is None:
            _, written = written_slots(self.vf, range(len(self.vf.blocks)))
            args = {index for bank, index in argument_registers(self.vf.cconv.args) if bank == "ref"}
            self._owned_refs = sorted(r for r in written | args if r < self.vf.ref_registers)
        return self._owned_refs

    def release_all_refs(self) -> None:
        for i in self.owned_refs():
            slot = self.ref_slot(i)
            self.release(self.b.load(slot, typ=PTR))
            self.b.store(const(PTR, None), slot)

    def _emit_unwind(self) -> None:
        b = self.b
        b.position_at_end(self.unwind)
        self.release_all_refs()
        self.leave_depth()
        status = b.load(self.trap_rec, typ=I32)
        b.ret(status)
