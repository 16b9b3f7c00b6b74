"""Verified functions -> Python source, compiled once per loaded module.

Each VM function becomes one Python function over a register file laid out exactly like
IREE's: a zeroed bytearray of 32-bit slots seen through memoryviews of every type (`I`/`U`
signed/unsigned i32, `J`/`K` signed/unsigned i64 over aligned slot pairs, `F` f32, `D`
f64), so a register written as one type and read as another sees the same bits, and a
list `R` of ref registers holding object addresses (each owns one reference). Its blocks
become the leaves of a binary decision tree on the block index inside one `while` loop;
each leaf loops on itself and small branch targets are copied into their predecessors, so
a loop's header and body usually run without going back to the tree. The statements of
each instruction come from the op's handler (registry). Generating straight Python for
every block and letting CPython compile it is what makes the interpreter fast enough for
VMVX kernels: no per-instruction dispatch, registers are memoryview items.

The source is a `_bind(env)` function defining every VM function as a closure over one
instance's state (globals, import adapters) and returning them in ordinal order. A table
maps each generated line to the pc of the instruction it came from, which is how a trap
names the failing instruction.
"""

from __future__ import annotations

import hashlib
import itertools
import linecache
import marshal
import sys
import types
import weakref
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import UnsupportedError
from ..frontend.cconv import argument_registers
from ..runtime.native import cache as store
from ..runtime.vm.semantics import MAX_CALL_DEPTH
from ..verify.model import VerifiedFunction, VerifiedModule
from . import frames, runtime_names
from .ops_control import emit_remap
from .registry import HANDLERS

BASE_INDENT = "    "
INLINE_LIMIT = 6  # a branch target of at most this many instructions is copied in place
_module_ids = itertools.count()
STATS: Counter = Counter()  # compiled, cache_hits: modules' Python compiled, or taken from the code store

# Register-file views: name -> memoryview format.
VIEW_FORMATS = {"I": "i", "U": "I", "J": "q", "K": "Q", "F": "f", "D": "d"}


class CodegenError(UnsupportedError):
    """An instruction the interpreter cannot translate (a missing handler)."""


@dataclass
class GeneratedModule:
    """The interpreter's Python for one module, with what binding it needs."""

    source: str
    filename: str
    namespace: dict  # module-level names of the generated code
    env_specs: dict  # per-instance name `_bind` reads from its env -> what it is
    infos: list  # FunctionInfo per function ordinal


class FunctionEmitter:
    """Writes the Python statements of one function; handlers call its methods."""

    def __init__(self, gen: "ModuleCodegen", vf: VerifiedFunction):
        self.gen = gen
        self.vf = vf
        self.ordinal = vf.ordinal
        self.views: set[str] = set()
        self.lines: list[tuple[int, str, int | None]] = []  # (indent, text, pc)
        self.depth = 0
        self.pc: int | None = None
        self.index = 0  # index of the current instruction in vf.instructions
        n32 = vf.i32_registers + (vf.i32_registers & 1)
        self.scratch = n32  # an f32 slot for rounding intermediate results (fma)
        self.register_bytes = 4 * (n32 + 2)
        self.uses_views = False
        self.view_locals: set[int] = set()
        self.leaf: int | None = None  # block whose dispatch-tree leaf is being emitted
        self.inlining = False  # emitting a copy of a branch target

    # --- registers ---------------------------------------------------------------------------

    def _view(self, name: str, index: int) -> str:
        self.views.add(name)
        return f"{name}[{index}]"

    def view(self, name: str) -> str:
        """The name of a whole register-file view ("I", "U", "J", "K", "F", "D")."""
        self.views.add(name)
        return name

    def i32(self, reg) -> str:
        return self._view("I", reg.index)

    def u32(self, reg) -> str:
        return self._view("U", reg.index)

    def i64(self, reg) -> str:
        return self._view("J", reg.index >> 1)

    def u64(self, reg) -> str:
        return self._view("K", reg.index >> 1)

    def f32(self, reg) -> str:
        return self._view("F", reg.index)

    def f64(self, reg) -> str:
        return self._view("D", reg.index >> 1)

    def bits(self, reg, bank: str) -> str:
        """The raw bits of a value register: U[] for 32-bit banks, K[] for 64-bit ones."""
        return self.u64(reg) if bank in ("i64", "f64") else self.u32(reg)

    def ref(self, reg) -> str:
        return f"R[{reg.index}]"

    def scratch_f32(self) -> str:
        return self._view("F", self.scratch)

    # --- names -----------------------------------------------------------------------------

    def const(self, value, hint: str = "c") -> str:
        """A module-level name bound to `value` (helpers, tables, type ids)."""
        return self.gen.const(value, hint)

    def env(self, name: str, spec: tuple) -> str:
        """A per-instance name (global views, import adapters) the bind env provides.

        `spec` says what it is; the backend builds the value for each instance from it.
        """
        self.gen.env_specs[name] = spec
        return name

    def buffer_views(self) -> str:
        self.uses_views = True
        return "V"

    def view_local(self, reg) -> str:
        """The local caching the BufferView of ref register `reg` (see ops_buffers)."""
        self.view_locals.add(reg.index)
        return f"vb{reg.index}"

    # --- statements ------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append((self.depth, text, self.pc))

    @contextmanager
    def indented(self, header: str):
        self.line(header)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def raise_(self, expr: str) -> None:
        self.line(f"raise {expr}")

    def block_index(self, pc: int) -> int:
        return self.vf.block_of_pc[pc]

    def goto(self, target_pc: int, remap=()) -> None:
        """Applies a branch's register remap and continues at the block at `target_pc`.

        A branch to the block being emitted repeats its loop; a small target block is
        copied in place (once: copies do not copy further); any other target goes back to
        the dispatch tree.
        """
        emit_remap(self, remap)
        target = self.block_index(target_pc)
        if target == self.leaf:
            self.line("continue")
        elif not self.inlining and self._inlinable(target):
            saved = self.pc, self.index
            self.inlining = True
            try:
                self._emit_instructions(target)
            finally:
                self.inlining = False
                self.pc, self.index = saved
        else:
            self.line(f"b = {target}")
            self.line("break")

    def dispatch(self, expr: str) -> None:
        """Continues at the block whose index `expr` computes (through the dispatch tree)."""
        self.line(f"b = {expr}")
        self.line("break")

    def _inlinable(self, index: int) -> bool:
        block = self.vf.blocks[index]
        return block.last - block.first <= INLINE_LIMIT

    def next_block_pc(self) -> int | None:
        """The pc of the block after the current instruction (for fall-through), if any."""
        ins = self.vf.instructions[self.index]
        pc = ins.pc + ins.size
        return pc if pc in self.vf.block_of_pc else None

    # --- the whole function ------------------------------------------------------------------

    def emit(self) -> None:
        vf = self.vf
        body_start = len(self.lines)
        self.depth = 4  # _bind > def > try > while > blocks
        self._emit_tree(0, len(vf.blocks))
        body = self.lines[body_start:]
        del self.lines[body_start:]
        self._emit_frame(body)

    def _emit_tree(self, lo: int, hi: int) -> None:
        if hi - lo == 1:
            self._emit_block(lo)
            return
        mid = (lo + hi) // 2
        self.pc = None
        with self.indented(f"if b < {mid}:"):
            self._emit_tree(lo, mid)
        self.pc = None
        with self.indented("else:"):
            self._emit_tree(mid, hi)

    def _emit_block(self, index: int) -> None:
        """A leaf of the dispatch tree: the block's code in a loop of its own, so branches
        back to it (directly or through a copied successor) skip the dispatch tree."""
        self.leaf = index
        self.pc = None
        with self.indented("while True:"):
            self._emit_instructions(index)
        self.pc = None
        self.line("continue")

    def _emit_instructions(self, index: int) -> None:
        vf = self.vf
        block = vf.blocks[index]
        if self.gen.count_blocks:
            self.pc = block.pc
            self.line(f"BLOCK_COUNTS[{self.gen.block_counter(self.ordinal, index, block.last - block.first)}] += 1")
        for i in range(block.first + 1, block.last + 1):  # the marker itself does nothing
            ins = vf.instructions[i]
            self.pc = ins.pc
            self.index = i
            h = HANDLERS.handler(ins.op.name)
            if h is None:
                raise CodegenError(f"{vf.qualified_name}: the interpreter has no handler for "
                                   f"{ins.op.mnemonic} (pc {ins.pc})")
            h(self, ins)

    def _emit_frame(self, body) -> None:
        vf = self.vf
        codes = vf.cconv.args
        placement = argument_registers(codes)
        params = ", ".join(["stk"] + [f"a{i}" for i in range(len(codes))])
        nref = vf.ref_registers
        self.pc = None
        out = []

        def put(depth, text):
            out.append((depth, text, None))

        put(1, f"def f{vf.ordinal}({params}):")
        if nref:
            refs = ["0"] * nref
            for i, (bank, reg) in enumerate(placement):
                if bank == "ref":
                    refs[reg] = f"a{i}"
            if all(r == "0" for r in refs):
                put(2, f"R = [0] * {nref}")
            else:
                put(2, f"R = [{', '.join(refs)}]")
        put(2, "d = stk.depth + 1")
        put(2, "stk.depth = d")
        put(2, "try:")
        put(3, "if d > MAXD:")
        put(4, "raise TRAP(K_STACK_OVERFLOW, MAXD)")
        value_args = [(i, bank, reg) for i, (bank, reg) in enumerate(placement) if bank != "ref"]
        for _, bank, reg in value_args:
            self.views.add("K" if bank in ("i64", "f64") else "U")
        if self.views:
            put(3, f"m = MV(BA({self.register_bytes}))")
            for name in sorted(self.views):
                put(3, f"{name} = m.cast({VIEW_FORMATS[name]!r})")
        if self.uses_views:
            put(3, "V = stk.views")
        if self.view_locals:
            put(3, " = ".join(f"vb{i}" for i in sorted(self.view_locals)) + " = NOVIEW")
        for i, bank, reg in value_args:
            if bank in ("i64", "f64"):
                put(3, f"K[{reg >> 1}] = a{i}")
            else:
                put(3, f"U[{reg}] = a{i}")
        put(3, "b = 0")
        put(3, "while True:")
        self.lines = out + body
        self.pc = None
        tail = [
            (2, "except Exception as e:"),
            (3, f"_trap = UNWIND(e, {self.gen.info_name(vf.ordinal)})"),
            (3, "raise _trap from _trap.__cause__"),  # the Python exception a trap came from stays attached
            (2, "finally:"),
            (3, "stk.depth = d - 1"),
        ]
        if nref:
            tail += [(3, "for x in R:"), (4, "if x:"), (5, "REL(x)")]
        self.lines += [(d, t, None) for d, t in tail]


class ModuleCodegen:
    """Generates and compiles the Python form of a verified module."""

    def __init__(self, verified: VerifiedModule, rodata_addresses: list[int], count_blocks: bool = False):
        self.verified = verified
        self.rodata = rodata_addresses
        self.namespace = runtime_names.namespace()
        self.namespace["MAXD"] = MAX_CALL_DEPTH
        # Optional instrumentation: executions per block, to count executed instructions.
        self.count_blocks = count_blocks
        self.block_sizes: list[int] = []  # instructions (without the marker) per counted block
        self.namespace["BLOCK_COUNTS"] = self.block_counts = []
        self.env_specs: dict[str, tuple] = {}
        self._consts: dict = {}
        self._names = itertools.count()

    def const(self, value, hint: str = "c") -> str:
        key = (type(value), value) if isinstance(value, (int, float, str, bytes, tuple)) else id(value)
        name = self._consts.get(key)
        if name is None:
            name = f"_{hint}{next(self._names)}"
            self.namespace[name] = value
            self._consts[key] = name
        return name

    def block_counter(self, ordinal: int, block: int, size: int) -> int:
        self.block_sizes.append(size)
        self.block_counts.append(0)
        return len(self.block_sizes) - 1

    def info_name(self, ordinal: int) -> str:
        return f"INFO{ordinal}"

    def generate(self) -> GeneratedModule:
        vm = self.verified
        module_id = next(_module_ids)
        # (compile() refuses a NUL, which a module name may hold)
        filename = f"<jitvm-interp {vm.name.replace(chr(0), chr(92) + '0')}#{module_id}>"
        rows: list[tuple[int, str, int | None]] = []
        function_rows = []
        for vf in vm.functions:
            fe = FunctionEmitter(self, vf)
            fe.emit()
            function_rows.append(fe.lines)
        rows.append((0, "def _bind(_env):", None))
        for name in sorted(self.env_specs):
            rows.append((1, f"{name} = _env[{name!r}]", None))
        for lines in function_rows:
            rows.extend(lines)
        names = ", ".join(f"f{vf.ordinal}" for vf in vm.functions)
        rows.append((1, f"return ({names}{',' if len(vm.functions) == 1 else ''})", None))
        source = "\n".join(BASE_INDENT * depth + text for depth, text, _ in rows) + "\n"
        code_lines = [None] + [pc for _, _, pc in rows]  # 1-based line numbers
        infos = []
        for vf in vm.functions:
            info = frames.FunctionInfo(vm.name, vf.name, vf.ordinal, vm.module, code_lines)
            self.namespace[self.info_name(vf.ordinal)] = info
            infos.append(info)
        return GeneratedModule(source, filename, self.namespace, dict(self.env_specs), infos)


def compile_module(gen: GeneratedModule, owner, cached: bool = False):
    """Executes the generated source; returns the `_bind(env)` function.

    While `owner` lives, Python tracebacks through the generated code show its lines.
    `cached`: the compiled source is kept in the code store (runtime.native.cache), so a
    later process loading the same module skips CPython's compiler (most of preparing it).
    """
    code = _compiled(gen.source, gen.filename) if cached else compile(gen.source, gen.filename, "exec")
    exec(code, gen.namespace)  # noqa: S102 - our own generated code
    linecache.cache[gen.filename] = (len(gen.source), None, gen.source.splitlines(True), gen.filename)
    weakref.finalize(owner, linecache.cache.pop, gen.filename, None)
    return gen.namespace["_bind"]


def _compiled(source: str, filename: str) -> types.CodeType:
    """`source` compiled, from the code store when an earlier process compiled the same text
    with this Python (a marshalled code object is only valid for the Python that made it),
    else compiled and stored."""
    h = hashlib.sha256(f"interp-code-1\0{sys.version}\0{marshal.version}\0".encode())
    h.update(source.encode())
    key = "py" + h.hexdigest()
    hit = store.load(key)  # the store checks the bytes' digest: a damaged entry is not read
    if hit is not None:
        try:
            code = marshal.loads(hit[0][0])
        except (EOFError, ValueError, TypeError):
            code = None
        if isinstance(code, types.CodeType):
            STATS["cache_hits"] += 1
            return _renamed(code, filename)
    STATS["compiled"] += 1
    code = compile(source, filename, "exec")
    store.store(key, [marshal.dumps(code)], {"what": "interpreter code"})
    return code


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """`code` and the functions inside it attributed to `filename` (tracebacks read this
    module's lines from linecache under that name)."""
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)
