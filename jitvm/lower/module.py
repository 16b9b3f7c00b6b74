"""A VerifiedModule -> one LLVM module: runtime declarations, constants, every function.

A function whose lowering fails (an op without a handler, a construct the lowering does
not support) is left out; the backend runs it in the interpreter instead and says so.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from ..runtime.native import ir, layout, mathlib, vecmath
from ..runtime.vm.objects import checked_type_id, names_ref_type
from ..runtime.vm.symbols import prototype as runtime_prototype
from ..verify.model import VerifiedModule
from .emit.emitter import Emitter
from .emit.types import F32, F64, FN_TYPE, I1, I8, I32, I64, PTR, VOID, LoweringError, function_symbol, offset_of
from .loops import outline
from .loops.versioning import NestVersioning
from .steps import LoopSteps
from .type_table import type_table_symbol

_CTYPE_TO_IR = {ctypes.c_void_p: PTR, ctypes.c_int32: I32, ctypes.c_uint32: I32, ctypes.c_int64: I64,
                ctypes.c_uint64: I64, ctypes.c_float: F32, ctypes.c_double: F64, None: VOID}
_MATH_TO_IR = {"f32": F32, "f64": F64, "i32": I32, "i64": I64, "long": I64, "llong": I64}


# With `wide_vectors` (a target with 512-bit vector registers, runtime.native.target.wide_vectors)
# the code of VM functions with a register-blocked nest asks LLVM's vectorisers for them (see
# ModuleLowering.prefer_wide_vectors): its x86 tuning prefers 256 bits,
# since older Xeons slowed their clock down on 512-bit code. Every lane still computes the same
# operations in the same order. Measured one thread (Xeon, Sapphire Rapids class, CPU time,
# load 5-11), 256 -> 512 bits with 4 x 16 register blocking: matmul 512 5.18 -> 4.16 ms, 3x3 conv
# 4.05 -> 3.11 ms, 1x1 conv 1.67 -> 1.28 ms, MLP 2.71 -> 2.23 ms, ResNet-50-style 64x64 39.6 -> 30.4 ms.
WIDE_VECTORS_ATTRIBUTE = '"prefer-vector-width"="512"'


@dataclass
class Fallback:
    ordinal: int
    name: str
    op: str
    reason: str


@dataclass
class LoweredModule:
    ir_module: ir.Module
    key: str  # distinguishes this module's symbols from other compilation units
    symbols: dict[int, str]  # lowered function ordinal -> symbol
    fallbacks: list[Fallback] = field(default_factory=list)
    blocked_nests: int = 0  # loop nests lowered register-blocked (statistics)
    # (cell symbol, ordinal, header) of each checked copy compiled only when needed (lower.loops.outline)
    deferred: list[tuple[str, int, int]] = field(default_factory=list)

    def __str__(self) -> str:
        return str(self.ir_module)


class ModuleLowering:
    def __init__(self, verified: VerifiedModule, key: str, triple: str = "", data_layout: str = "", **steps: bool):
        self.verified = verified
        self.steps = LoopSteps(**steps)  # the loop optimisations applied (lower.steps)
        self._vector_math_used: set[str] = set()
        self.blocked_nests = 0  # nests lowered register-blocked (statistics)
        self.deferred: list[tuple[str, int, int]] = []  # checked copies left out (lower.loops.outline)
        self.nest_lowering = NestVersioning(self.steps.chunk_loops) if self.steps.version_loops else None
        self.pack_buffers: dict = {}  # LLVM function name -> its stack buffer for those copies
        self.key = key
        self.module = ir.Module(name=f"jitvm.{verified.name}")
        if triple:
            self.module.triple = triple
        if data_layout:
            self.module.data_layout = data_layout
        self._runtime: dict[str, ir.Function] = {}
        self._strings: dict[str, ir.GlobalVariable] = {}
        self.functions: dict[int, ir.Function] = {}
        # Runtime type ids differ between processes, so code reads them from a table that
        # the loader fills (see type_table_symbol) instead of embedding them.
        n = max(1, len(verified.types))
        self.type_table = ir.GlobalVariable(self.module, ir.ArrayType(I32, n), name=type_table_symbol(key))
        self.type_table.initializer = ir.Constant(ir.ArrayType(I32, n), None)

    # --- declarations used by the emitters ----------------------------------------------------

    def runtime(self, name: str) -> ir.Function:
        """A native runtime function or callback (runtime.vm.symbols) or a libm function, declared once."""
        fn = self._runtime.get(name)
        if fn is None:
            proto = runtime_prototype(name)
            if proto is not None:
                ret = _CTYPE_TO_IR[proto._restype_]
                args = [_CTYPE_TO_IR[a] for a in proto._argtypes_]
            else:
                result, arg_types = mathlib.FUNCTIONS[name]
                ret, args = _MATH_TO_IR[result], [_MATH_TO_IR[a] for a in arg_types]
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
            fn.attributes.add("nounwind")
            self._runtime[name] = fn
        return fn

    def math_call(self, name: str):
        """The callee and call attributes for libm function `name`: its vecmath wrapper where
        vector math is on and has a form of it, else the libm function itself."""
        if self.steps.vector_math and name in vecmath.FUNCTIONS:
            self.runtime(name)  # the wrapper calls it
            if name not in self._vector_math_used:
                self._vector_math_used.add(name)
                self.module.appendix["vecmath"] = vecmath.definitions(self._vector_math_used, declare_libm=False,
                                                                      wide=self.steps.wide_forms)
            return ir.DefinedElsewhere(ir.FunctionType(F32, [F32]), vecmath.SCALAR_NAME[name]), \
                (vecmath.call_attributes(name, self.steps.wide_forms),)
        return self.runtime(name), ("nobuiltin",)

    def helper(self, name: str) -> ir.Function:
        """Small module-local functions the emitters call instead of repeating their IR."""
        fn = self._runtime.get("jv." + name)
        if fn is None:
            fn = self._runtime["jv." + name] = getattr(self, "_helper_" + name)()
        return fn

    def _define(self, name: str, ret, args, attrs=("nounwind",)) -> tuple[ir.Function, ir.IRBuilder]:
        fn = ir.Function(self.module, ir.FunctionType(ret, args), name="jv." + name)
        fn.linkage = "internal"
        for a in attrs:
            fn.attributes.add(a)
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    def _helper_retain(self) -> ir.Function:
        fn, b = self._define("retain", VOID, [PTR], ("nounwind", "alwaysinline"))
        (obj,) = fn.args
        with b.if_then(b.icmp_unsigned("!=", obj, ir.Constant(PTR, None))):
            b.atomic_rmw("add", obj, ir.Constant(I64, 1), "monotonic")
        b.ret_void()
        return fn

    def _helper_release(self) -> ir.Function:
        fn, b = self._define("release", VOID, [PTR], ("nounwind", "alwaysinline"))
        (obj,) = fn.args
        with b.if_then(b.icmp_unsigned("!=", obj, ir.Constant(PTR, None))):
            old = b.atomic_rmw("sub", obj, ir.Constant(I64, 1), "acq_rel")
            with b.if_then(b.icmp_unsigned("==", old, ir.Constant(I64, 1)), likely=False):
                dptr = b.gep(obj, [ir.Constant(I64, offset_of("Object", "destroy"))], source_etype=I8)
                destroy = b.load(dptr, typ=ir.FunctionType(VOID, [PTR]).as_pointer())
                b.call(destroy, [obj])
        b.ret_void()
        return fn

    def _helper_trap(self) -> ir.Function:
        """Records a trap and this function's frame: one call per trap site, kept cold."""
        fn, b = self._define("trap", VOID, [PTR, PTR, I32, I32, I32, I32, I64, I64, I64, I64, PTR],
                             ("nounwind", "cold", "noinline"))
        trap, state, ordinal, pc, status, kind, a0, a1, a2, a3, msg = fn.args
        b.call(self.runtime("jv_trap_set"), [trap, status, kind, a0, a1, a2, a3, msg])
        b.call(self.runtime("jv_trap_push_frame"), [trap, state, ordinal, pc])
        b.ret_void()
        return fn

    def intrinsic(self, name: str, ret, args) -> ir.Function:
        fn = self._runtime.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
            self._runtime[name] = fn
        return fn

    def intrinsic_memset(self) -> ir.Function:
        return self.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])

    def ref_type_id(self, builder, type_index: int):
        """The runtime type id a checked ref op compares against, as an IR value: the module's
        type table entry (filled at load), or a constant where it names no ref type."""
        t = self.verified.types[type_index]
        if not names_ref_type(t):
            return ir.Constant(I32, checked_type_id(t))
        p = builder.gep(self.type_table, [ir.Constant(I64, type_index)], inbounds=True, source_etype=I32)
        v = builder.load(p, typ=I32)
        v.set_metadata("invariant.load", self.module.add_metadata([]))
        return v

    def null_object(self):
        """A zeroed object-sized constant standing in for null refs in branch-free loads."""
        g = self._runtime.get("__null_object")
        if g is None:
            ty = ir.ArrayType(I64, (max(layout.sizeof("Buffer"), layout.sizeof("List")) + 7) // 8)
            g = ir.GlobalVariable(self.module, ty, name="jv.null_object")
            g.initializer = ir.Constant(ty, None)
            g.global_constant = True
            g.linkage = "private"
            g.align = 16
            self._runtime["__null_object"] = g
        return g

    def cstring(self, text: str):
        g = self._strings.get(text)
        if g is None:
            data = bytearray(text.encode("utf-8")) + b"\0"
            ty = ir.ArrayType(I8, len(data))
            g = ir.GlobalVariable(self.module, ty, name=f"str.{len(self._strings)}")
            g.initializer = ir.Constant(ty, data)
            g.global_constant = True
            g.linkage = "private"
            g.unnamed_addr = True
            self._strings[text] = g
        return g

    def function(self, ordinal: int) -> ir.Function:
        """The LLVM function of internal function `ordinal` (declared on first use)."""
        fn = self.functions.get(ordinal)
        if fn is None:
            fn = ir.Function(self.module, FN_TYPE, name=function_symbol(self.key, ordinal))
            self.mark_code(fn)
            self.functions[ordinal] = fn
        return fn

    def mark_code(self, fn: ir.Function) -> None:
        """The attributes of a function holding a VM function's code (or part of it)."""
        fn.attributes.add("nounwind")

    def prefer_wide_vectors(self, fn: ir.Function) -> None:
        """`fn` holds a register-blocked nest: with wide_vectors, LLVM may use 512-bit vectors
        in it. Only there: a nest jammed over 64 columns alone (a matrix-vector product) keeps
        8 accumulators at 256 bits but 4 at 512, and GPT-2's 1x3072x768 one ran 15% slower."""
        if self.steps.wide_vectors:
            fn.attributes.add(WIDE_VECTORS_ATTRIBUTE)

    # --- lowering -------------------------------------------------------------------------------

    def lower(self, ordinals=None) -> LoweredModule:
        vm = self.verified
        ordinals = range(len(vm.functions)) if ordinals is None else ordinals
        symbols: dict[int, str] = {}
        fallbacks: list[Fallback] = []
        for ordinal in ordinals:
            vf = vm.functions[ordinal]
            fn = self.function(ordinal)
            try:
                Emitter(self, vf, fn, self.nest_lowering).lower()
                symbols[ordinal] = fn.name
            except LoweringError as e:
                fn.blocks.clear()
                fallbacks.append(Fallback(ordinal, vf.name, e.op, str(e)))
        # Functions that stayed declarations are reached through the module's function table.
        for ordinal, fn in self.functions.items():
            if ordinal not in symbols:
                self._make_table_thunk(ordinal, fn)
        return LoweredModule(self.module, self.key, symbols, fallbacks, self.blocked_nests, self.deferred)

    def lower_checked(self, ordinal: int, header: int) -> str:
        """The module of the checked copy of function `ordinal`'s nest at block `header`,
        deferred when the function was lowered (lower.loops.outline); its symbol is
        function_symbol(key, ordinal)."""
        vf = self.verified.functions[ordinal]
        nest = self.nest_lowering.nests(vf)[header]
        outline.emit_copy(Emitter(self, vf, self.function(ordinal), self.nest_lowering), nest)
        return str(self.module)

    def _make_table_thunk(self, ordinal: int, fn: ir.Function) -> None:
        """A body for a function the JIT could not lower: call through state->functions[i]."""
        fn.blocks.clear()
        fn.linkage = "internal"
        state, args, results, trap = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        table = b.load(b.gep(state, [ir.Constant(I64, offset_of("ModuleState", "functions"))], source_etype=I8),
                       typ=PTR)
        target = b.load(b.gep(table, [ir.Constant(I64, ordinal)], source_etype=PTR), typ=FN_TYPE.as_pointer())
        b.ret(b.call(target, [state, args, results, trap]))
