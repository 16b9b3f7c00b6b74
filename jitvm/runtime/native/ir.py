"""A small, fast LLVM IR text builder with the shape of llvmlite.ir's API.

The lowering produces tens of LLVM instructions per VM instruction; llvmlite's IR objects
cost ~20 us each to create and print, which made the Python side dominate compile time
for large models. This module builds the same IR as plain text with a fraction of the
overhead. It covers exactly what the lowering uses: integer, float and pointer types,
functions, blocks, an IRBuilder with llvmlite's method names and semantics, globals,
constants and the `invariant.load` metadata. Pointers are opaque (`ptr`).
"""

from __future__ import annotations

import struct
from contextlib import contextmanager

# --- types ------------------------------------------------------------------------------------


class Type:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __str__(self):
        return self.text

    def __eq__(self, other):
        return isinstance(other, Type) and other.text == self.text

    def __hash__(self):
        return hash(self.text)

    def as_pointer(self):
        return PointerType(self)


class IntType(Type):
    __slots__ = ("width",)

    def __init__(self, width: int):
        super().__init__(f"i{width}")
        self.width = width


class FloatType(Type):
    __slots__ = ()

    def __init__(self):
        super().__init__("float")


class DoubleType(Type):
    __slots__ = ()

    def __init__(self):
        super().__init__("double")


class VoidType(Type):
    __slots__ = ()

    def __init__(self):
        super().__init__("void")


class PointerType(Type):
    """Always prints as `ptr`; may remember a pointee function type for indirect calls."""

    __slots__ = ("pointee",)

    def __init__(self, pointee=None):
        super().__init__("ptr")
        self.pointee = pointee

    def __eq__(self, other):
        return isinstance(other, PointerType)

    def __hash__(self):
        return hash("ptr")


class ArrayType(Type):
    __slots__ = ("element", "count")

    def __init__(self, element: Type, count: int):
        super().__init__(f"[{count} x {element}]")
        self.element = element
        self.count = count


class VectorType(Type):
    __slots__ = ("element", "count")

    def __init__(self, element: Type, count: int):
        super().__init__(f"<{count} x {element}>")
        self.element = element
        self.count = count


class FunctionType(Type):
    __slots__ = ("return_type", "args")

    def __init__(self, return_type: Type, args):
        self.return_type = return_type
        self.args = list(args)
        super().__init__(f"{return_type} ({', '.join(str(a) for a in self.args)})")


class StructType(Type):
    __slots__ = ("elements",)

    def __init__(self, elements):
        self.elements = list(elements)
        super().__init__("{ " + ", ".join(str(e) for e in self.elements) + " }")


# --- values -----------------------------------------------------------------------------------


class Value:
    __slots__ = ("type", "ref")

    def __init__(self, type_: Type, ref: str):
        self.type = type_
        self.ref = ref

    def get_reference(self) -> str:
        return self.ref

    @property
    def function_type(self) -> FunctionType:
        return self.type.pointee


def _float_text(value: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


class Constant(Value):
    __slots__ = ("constant",)

    def __init__(self, type_: Type, value):
        self.constant = value
        super().__init__(type_, self._text(type_, value))

    @staticmethod
    def _text(t: Type, v) -> str:
        if isinstance(t, IntType):
            if t.width == 1:
                return "true" if v else "false"
            return str(int(v))
        if isinstance(t, (FloatType, DoubleType)):
            return _float_text(float(v))
        if isinstance(t, PointerType):
            if v is None:
                return "null"
            raise TypeError("pointer constants are null only")
        if isinstance(t, ArrayType):
            if v is None:
                return "zeroinitializer"
            if isinstance(v, (bytes, bytearray)):
                return 'c"' + "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else "\\%02X" % c
                                      for c in v) + '"'
        raise TypeError(f"unsupported constant {v!r} of type {t}")


class Argument(Value):
    __slots__ = ("_fn", "_name")

    def __init__(self, fn, type_: Type, index: int):
        super().__init__(type_, f"%a{index}")
        self._fn = fn
        self._name = f"a{index}"

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, value):
        self._name = value
        self.ref = f"%{value}"


class Instruction(Value):
    """One instruction: rendered when the module is printed, so its attributes can change."""

    __slots__ = ("fmt", "align", "metadata", "weights", "block", "extra")

    def __init__(self, type_: Type, ref: str, fmt: str):
        super().__init__(type_, ref)
        self.fmt = fmt
        self.align = None
        self.metadata = None
        self.weights = None
        self.block = None
        self.extra = None

    def set_metadata(self, name: str, node) -> None:
        self.metadata = (self.metadata or ()) + ((name, node),)

    def set_weights(self, weights) -> None:
        self.weights = weights

    def render(self) -> str:
        text = self.fmt() if callable(self.fmt) else self.fmt
        if self.align is not None:
            text += f", align {self.align}"
        if self.metadata is not None:
            text += "".join(f", !{name} {node}" for name, node in self.metadata)
        if self.weights is not None:
            text += f", !prof {self.block.function.module.weights_node(self.weights)}"
        return f"{self.ref} = {text}" if self.ref else text


class Phi(Instruction):
    __slots__ = ("incoming",)

    def __init__(self, type_, ref):
        super().__init__(type_, ref, "")
        self.incoming = []
        self.fmt = lambda: f"phi {self.type} " + ", ".join(f"[ {v.ref}, %{b.name} ]" for v, b in self.incoming)

    def add_incoming(self, value, block) -> None:
        self.incoming.append((value, block))


class Switch(Instruction):
    __slots__ = ("cases",)

    def __init__(self, value, default):
        super().__init__(VoidType(), "", "")
        self.cases = []
        self.fmt = lambda: (f"switch {value.type} {value.ref}, label %{default.name} [ "
                            + " ".join(f"{c.type} {c.ref}, label %{b.name}" for c, b in self.cases) + " ]")

    def add_case(self, value, block) -> None:
        self.cases.append((value, block))


class Block:
    __slots__ = ("function", "name", "instructions", "terminator")

    def __init__(self, function, name: str):
        self.function = function
        self.name = name
        self.instructions: list[Instruction] = []
        self.terminator = None

    @property
    def is_terminated(self) -> bool:
        return self.terminator is not None


class _Blocks(list):
    def clear(self):
        super().clear()


class Function(Value):
    __slots__ = ("module", "ftype", "name", "args", "blocks", "attributes", "linkage", "_names", "_counter")

    def __init__(self, module, ftype: FunctionType, name: str):
        super().__init__(PointerType(ftype), f"@{_quote(name)}")
        self.module = module
        self.ftype = ftype
        self.name = name
        self.args = [Argument(self, t, i) for i, t in enumerate(ftype.args)]
        self.blocks: list[Block] = _Blocks()
        self.attributes: set[str] = set()
        self.linkage = ""
        self._names: dict[str, int] = {}
        self._counter = 0
        module.add_global(self)

    @property
    def function_type(self) -> FunctionType:
        return self.ftype

    def append_basic_block(self, name: str = "") -> Block:
        base = name or "b"
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        # Labels share LLVM's local namespace with arguments and values: keep them apart.
        block = Block(self, f"L.{base}" if n == 0 else f"L.{base}.{n}")
        self.blocks.append(block)
        return block

    def new_value(self) -> str:
        self._counter += 1
        return f"%v{self._counter}"

    def render(self) -> str:
        args = ", ".join(f"{a.type} {a.ref}" for a in self.args)
        attrs = (" " + " ".join(sorted(self.attributes))) if self.attributes else ""
        if not self.blocks:
            return f"declare {self.ftype.return_type} @{_quote(self.name)}({args}){attrs}"
        linkage = f"{self.linkage} " if self.linkage else ""
        out = [f"define {linkage}{self.ftype.return_type} @{_quote(self.name)}({args}){attrs} {{"]
        for block in self.blocks:
            out.append(f"{block.name}:")
            out.extend("  " + ins.render() for ins in block.instructions)
        out.append("}")
        return "\n".join(out)


def _quote(name: str) -> str:
    return name if all(c.isalnum() or c in "._" for c in name) else f'"{name}"'


class DefinedElsewhere(Value):
    """A function the module defines in its appendix text: callable, never printed itself."""
    __slots__ = ("ftype", "name")

    def __init__(self, ftype: FunctionType, name: str):
        super().__init__(PointerType(ftype), f"@{_quote(name)}")
        self.ftype = ftype
        self.name = name

    @property
    def function_type(self) -> FunctionType:
        return self.ftype


class GlobalVariable(Value):
    __slots__ = ("module", "value_type", "name", "initializer", "global_constant", "linkage", "unnamed_addr",
                 "align")

    def __init__(self, module, type_: Type, name: str):
        super().__init__(PointerType(), f"@{_quote(name)}")
        self.module = module
        self.value_type = type_
        self.name = name
        self.initializer = None
        self.global_constant = False
        self.linkage = ""
        self.unnamed_addr = False
        self.align = None
        module.add_global(self)

    def render(self) -> str:
        parts = [f"@{_quote(self.name)} ="]
        if self.linkage:
            parts.append(self.linkage)
        if self.unnamed_addr:
            parts.append("unnamed_addr")
        parts.append("constant" if self.global_constant else "global")
        init = self.initializer.ref if self.initializer is not None else "zeroinitializer"
        parts.append(f"{self.value_type} {init}")
        text = " ".join(parts)
        return text + (f", align {self.align}" if self.align else "")


class Module:
    def __init__(self, name: str = ""):
        self.name = name
        self.triple = ""
        self.data_layout = ""
        self.globals: dict[str, Value] = {}
        self._metadata: list[str] = []
        self._empty_md = None
        self._shared_nodes: dict[tuple, str] = {}  # metadata made once: branch weights, loop properties
        self.appendix: dict[str, str] = {}  # IR text added once by name (e.g. runtime.native.vecmath's)

    def intrinsic_decl(self, name: str, ret: Type, args) -> "Function":
        fn = self.globals.get(name)
        return fn if fn is not None else Function(self, FunctionType(ret, args), name)

    def add_global(self, value) -> None:
        if value.name in self.globals:
            raise KeyError(f"duplicate global {value.name}")
        self.globals[value.name] = value

    def get_global(self, name: str):
        return self.globals.get(name)

    def add_metadata(self, operands) -> str:
        """Only the empty node is needed (invariant.load); it is created once."""
        if operands:
            raise NotImplementedError("only empty metadata nodes are supported")
        if self._empty_md is None:
            self._empty_md = f"!{len(self._metadata)}"
            self._metadata.append("!{}")
        return self._empty_md

    def alias_scopes(self, names) -> dict[str, tuple[str, str]]:
        """One alias scope per name in a fresh domain: name -> (!alias.scope list, !noalias list)."""
        domain = len(self._metadata)
        self._metadata.append(f'distinct !{{!{domain}, !"jitvm.buffers.{domain}"}}')
        scopes = {}
        for name in names:
            i = len(self._metadata)
            self._metadata.append(f"distinct !{{!{i}, !{domain}}}")
            scopes[name] = f"!{i}"
        out = {}
        for name in names:
            own = len(self._metadata)
            self._metadata.append(f"!{{{scopes[name]}}}")
            others = len(self._metadata)
            self._metadata.append("!{" + ", ".join(v for k, v in scopes.items() if k != name) + "}")
            out[name] = (f"!{own}", f"!{others}")
        return out

    def loop_node(self, *properties: str) -> str:
        """A distinct `!llvm.loop` identifier carrying these properties (each is the text of a
        property node, e.g. '!"llvm.loop.unroll.disable"')."""
        refs = []
        for prop in properties:
            node = self._shared_nodes.get(("loop-property", prop))
            if node is None:
                node = f"!{len(self._metadata)}"
                self._metadata.append("!{" + prop + "}")
                self._shared_nodes[("loop-property", prop)] = node
            refs.append(node)
        i = len(self._metadata)
        self._metadata.append(f"distinct !{{!{i}" + "".join(f", {r}" for r in refs) + "}")
        return f"!{i}"

    def weights_node(self, weights) -> str:
        key = tuple(weights)
        node = self._shared_nodes.get(key)
        if node is None:
            node = f"!{len(self._metadata)}"
            self._metadata.append('!{!"branch_weights", ' + ", ".join(f"i32 {w}" for w in key) + "}")
            self._shared_nodes[key] = node
        return node

    def discard(self) -> None:
        """Lets go of everything the module holds, once it is rendered. Its parts refer to each
        other (an instruction to its block, a block to its function, a phi's text to itself),
        so without this only the cyclic garbage collector frees them, and a process lowering
        unit after unit kept several units' IR (some 1-6 MB each) until its next full collection."""
        for g in self.globals.values():
            if isinstance(g, Function):
                for block in g.blocks:
                    for ins in block.instructions:
                        ins.block = ins.fmt = ins.extra = None
                    block.instructions.clear()
                    block.function = block.terminator = None
                g.blocks.clear()
                g.args.clear()
            if isinstance(g, (Function, GlobalVariable)):
                g.module = None
        self.globals.clear()
        self._metadata.clear()
        self._shared_nodes.clear()
        self.appendix.clear()

    def __str__(self) -> str:
        out = []
        if self.triple:
            out.append(f'target triple = "{self.triple}"')
        if self.data_layout:
            out.append(f'target datalayout = "{self.data_layout}"')
        for g in self.globals.values():
            if isinstance(g, GlobalVariable):
                out.append(g.render())
        for g in self.globals.values():
            if isinstance(g, Function):
                out.append(g.render())
        out.extend(self.appendix.values())
        for i, md in enumerate(self._metadata):
            out.append(f"!{i} = {md}")
        return "\n".join(out) + "\n"


# --- the builder --------------------------------------------------------------------------------

_ICMP_SIGNED = {"==": "eq", "!=": "ne", "<": "slt", "<=": "sle", ">": "sgt", ">=": "sge"}
_ICMP_UNSIGNED = {"==": "eq", "!=": "ne", "<": "ult", "<=": "ule", ">": "ugt", ">=": "uge"}
_FCMP_ORDERED = {"==": "oeq", "!=": "one", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "ord": "ord",
                 "uno": "uno"}
_FCMP_UNORDERED = {"==": "ueq", "!=": "une", "<": "ult", "<=": "ule", ">": "ugt", ">=": "uge", "ord": "ord",
                   "uno": "uno"}
I1 = IntType(1)


class IRBuilder:
    def __init__(self, block: Block | None = None):
        self.block = block
        self._index = None  # insertion index in block (None: at the end)

    @property
    def function(self):
        return self.block.function

    # positioning
    def position_at_end(self, block: Block) -> None:
        self.block, self._index = block, None

    def position_at_start(self, block: Block) -> None:
        self.block, self._index = block, 0

    def position_before(self, instr: Instruction) -> None:
        self.block = instr.block
        self._index = self.block.instructions.index(instr)

    def _insert(self, ins: Instruction, terminator: bool = False) -> Instruction:
        ins.block = self.block
        if self._index is None:
            self.block.instructions.append(ins)
        else:
            self.block.instructions.insert(self._index, ins)
            self._index += 1
        if terminator:
            self.block.terminator = ins
        return ins

    def _value(self, type_: Type, fmt) -> Instruction:
        return self._insert(Instruction(type_, self.block.function.new_value(), fmt))

    # arithmetic
    def _binop(self, op: str, a, b, flags=()) -> Instruction:
        op = " ".join((op, *flags))
        return self._value(a.type, f"{op} {a.type} {a.ref}, {b.ref}")

    def add(self, a, b, name="", flags=()): return self._binop("add", a, b, flags)
    def sub(self, a, b, name="", flags=()): return self._binop("sub", a, b, flags)
    def mul(self, a, b, name="", flags=()): return self._binop("mul", a, b, flags)
    def sdiv(self, a, b, name=""): return self._binop("sdiv", a, b)
    def udiv(self, a, b, name=""): return self._binop("udiv", a, b)
    def srem(self, a, b, name=""): return self._binop("srem", a, b)
    def urem(self, a, b, name=""): return self._binop("urem", a, b)
    def and_(self, a, b, name=""): return self._binop("and", a, b)
    def or_(self, a, b, name=""): return self._binop("or", a, b)
    def xor(self, a, b, name=""): return self._binop("xor", a, b)
    def shl(self, a, b, name=""): return self._binop("shl", a, b)
    def ashr(self, a, b, name=""): return self._binop("ashr", a, b)
    def lshr(self, a, b, name=""): return self._binop("lshr", a, b)
    def fadd(self, a, b, name=""): return self._binop("fadd", a, b)
    def fsub(self, a, b, name=""): return self._binop("fsub", a, b)
    def fmul(self, a, b, name=""): return self._binop("fmul", a, b)
    def fdiv(self, a, b, name=""): return self._binop("fdiv", a, b)

    def not_(self, a, name=""):
        return self._value(a.type, f"xor {a.type} {a.ref}, {'true' if a.type == I1 else -1}")

    def neg(self, a, name=""):
        return self._value(a.type, f"sub {a.type} 0, {a.ref}")

    def fneg(self, a, name=""):
        return self._value(a.type, f"fneg {a.type} {a.ref}")

    def icmp_signed(self, op, a, b, name=""):
        return self._value(I1, f"icmp {_ICMP_SIGNED[op]} {a.type} {a.ref}, {b.ref}")

    def icmp_unsigned(self, op, a, b, name=""):
        return self._value(I1, f"icmp {_ICMP_UNSIGNED[op]} {a.type} {a.ref}, {b.ref}")

    def fcmp_ordered(self, op, a, b, name=""):
        return self._value(I1, f"fcmp {_FCMP_ORDERED[op]} {a.type} {a.ref}, {b.ref}")

    def fcmp_unordered(self, op, a, b, name=""):
        return self._value(I1, f"fcmp {_FCMP_UNORDERED[op]} {a.type} {a.ref}, {b.ref}")

    def select(self, cond, a, b, name=""):
        return self._value(a.type, f"select i1 {cond.ref}, {a.type} {a.ref}, {b.type} {b.ref}")

    def _cast(self, op, value, type_):
        return self._value(type_, f"{op} {value.type} {value.ref} to {type_}")

    def zext(self, v, t, name=""): return self._cast("zext", v, t)
    def sext(self, v, t, name=""): return self._cast("sext", v, t)
    def trunc(self, v, t, name=""): return self._cast("trunc", v, t)
    def bitcast(self, v, t, name=""): return self._cast("bitcast", v, t)
    def fptrunc(self, v, t, name=""): return self._cast("fptrunc", v, t)
    def fpext(self, v, t, name=""): return self._cast("fpext", v, t)
    def sitofp(self, v, t, name=""): return self._cast("sitofp", v, t)
    def uitofp(self, v, t, name=""): return self._cast("uitofp", v, t)
    def fptosi(self, v, t, name=""): return self._cast("fptosi", v, t)
    def fptoui(self, v, t, name=""): return self._cast("fptoui", v, t)
    def ptrtoint(self, v, t, name=""): return self._cast("ptrtoint", v, t)

    def _overflow(self, op, a, b):
        t = a.type
        fn = self.block.function.module.intrinsic_decl(f"llvm.{op}.with.overflow.{t}", StructType([t, I1]), [t, t])
        return self.call(fn, [a, b])

    def sadd_with_overflow(self, a, b, name=""): return self._overflow("sadd", a, b)
    def ssub_with_overflow(self, a, b, name=""): return self._overflow("ssub", a, b)
    def smul_with_overflow(self, a, b, name=""): return self._overflow("smul", a, b)
    def umul_with_overflow(self, a, b, name=""): return self._overflow("umul", a, b)

    def extract_value(self, agg, index, name=""):
        return self._value(agg.type.elements[index], f"extractvalue {agg.type} {agg.ref}, {index}")

    # memory
    def alloca(self, type_, size=None, name=""):
        ins = self._insert(Instruction(PointerType(), self.block.function.new_value(), f"alloca {type_}"))
        return ins

    def load(self, ptr, name="", align=None, typ=None):
        ins = self._value(typ, f"load {typ}, ptr {ptr.ref}")
        ins.align = align
        if isinstance(typ, PointerType) and typ.pointee is not None:
            ins.type = typ
        return ins

    def store(self, value, ptr, align=None):
        ins = self._insert(Instruction(VoidType(), "", f"store {value.type} {value.ref}, ptr {ptr.ref}"))
        ins.align = align
        return ins

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        ib = "inbounds " if inbounds else ""
        idx = ", ".join(f"{i.type} {i.ref}" for i in indices)
        return self._value(PointerType(), f"getelementptr {ib}{source_etype}, ptr {ptr.ref}, {idx}")

    def shuffle_vector(self, a, b, mask):
        """Lanes of a and b (b's numbered from a's count on) picked by the constant `mask`."""
        lanes = ", ".join(f"i32 {m}" for m in mask)
        return self._value(VectorType(a.type.element, len(mask)),
                           f"shufflevector {a.type} {a.ref}, {b.type} {b.ref}, <{len(mask)} x i32> <{lanes}>")

    def atomic_rmw(self, op, ptr, val, ordering, name=""):
        return self._value(val.type, f"atomicrmw {op} ptr {ptr.ref}, {val.type} {val.ref} {ordering}")

    # calls and control flow
    def call(self, fn, args, name="", cconv=None, tail=False, fastmath=(), attrs=(), arg_attrs=None):
        ftype = fn.function_type
        args = ", ".join(f"{a.type} {a.ref}" for a in args)
        ret = ftype.return_type
        text = f"call {ret} {fn.ref}({args})" + "".join(f" {a}" for a in attrs)
        if isinstance(ret, VoidType):
            return self._insert(Instruction(ret, "", text))
        return self._value(ret, text)

    def branch(self, target: Block):
        return self._insert(Instruction(VoidType(), "", lambda: f"br label %{target.name}"), terminator=True)

    def cbranch(self, cond, t: Block, f: Block):
        return self._insert(Instruction(VoidType(), "", lambda: f"br i1 {cond.ref}, label %{t.name}, label %{f.name}"),
                            terminator=True)

    def switch(self, value, default: Block):
        return self._insert(Switch(value, default), terminator=True)

    def phi(self, type_, name=""):
        return self._insert(Phi(type_, self.block.function.new_value()))

    def ret(self, value):
        return self._insert(Instruction(VoidType(), "", f"ret {value.type} {value.ref}"), terminator=True)

    def ret_void(self):
        return self._insert(Instruction(VoidType(), "", "ret void"), terminator=True)

    def unreachable(self):
        return self._insert(Instruction(VoidType(), "", "unreachable"), terminator=True)

    @contextmanager
    def if_then(self, pred, likely=None):
        fn = self.block.function
        then = fn.append_basic_block(f"{self.block.name}.if")
        done = fn.append_basic_block(f"{self.block.name}.endif")
        br = self.cbranch(pred, then, done)
        if likely is not None:
            br.set_weights([99, 1] if likely else [1, 99])
        self.position_at_end(then)
        yield done
        if not self.block.is_terminated:
            self.branch(done)
        self.position_at_end(done)

    @contextmanager
    def if_else(self, pred, likely=None):
        fn = self.block.function
        then = fn.append_basic_block(f"{self.block.name}.if")
        otherwise = fn.append_basic_block(f"{self.block.name}.else")
        done = fn.append_basic_block(f"{self.block.name}.endif")
        self.cbranch(pred, then, otherwise)

        @contextmanager
        def branch_to(block):
            self.position_at_end(block)
            yield block
            if not self.block.is_terminated:
                self.branch(done)

        yield branch_to(then), branch_to(otherwise)
        self.position_at_end(done)
