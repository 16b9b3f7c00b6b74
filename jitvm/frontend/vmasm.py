"""A module as VM assembly that `jitvm asm` turns back into the same module.

Instruction lines are exactly iree-dump-module's. Around them go the module-level lines
iree-dump-module prints (vm.module, vm.type, vm.import, vm.rodata, vm.export, vm.func) plus
what it leaves out and a module needs to come back unchanged: dependencies, signature
attributes, and descriptor values the bytecode does not already imply. Those are printed
only where they differ from what the assembler derives (see `derive`), so a module built
from text prints as that text.

A function is named by its first export, else its debug name, else `@<module>:<ordinal>`
(the spelling calls use for a function without a debug name).
"""

from __future__ import annotations

from . import derive
from .attrs import Attrs, format_dict, format_string
from .cconv import argument_registers, make_cconv
from .decode import Reg, decode_function
from .disasm import Names, instruction_lines, reg_name
from .module import FEATURE_BITS, BytecodeModule

_TYPE_OF_CODE = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "!vm.ref<?>"}
FEATURE_ATTRS = {bit: f"vm.{name.lower()}" for name, bit in FEATURE_BITS.items()}
_KNOWN_BITS = sum(FEATURE_BITS.values())


def ordinal_symbol(module_name: str, ordinal: int) -> str:
    return f"{module_name}:{ordinal}"


def unnamed_symbol(ordinal: int) -> str:
    """How iree-dump-module names a function with neither export nor debug name: `fnN`."""
    return f"fn{ordinal}"


def function_symbols(m: BytecodeModule) -> list[str]:
    """The name each function goes by in the text (the export's, the debug name, else `fnN`
    as iree-dump-module prints it); unique within the module (`module:N` where `fnN` is taken)."""
    first_export: dict[int, str] = {}
    for e in m.exports:
        first_export.setdefault(e.internal_ordinal, e.name)
    # Debug names count where the database names every function: iree-compile 3.13 writes one
    # entry (the last function's name), which would label function 0 with `__init`.
    trusted = m.debug is not None and len(m.debug.function_names) == len(m.functions)
    named = [first_export.get(i) or (m.function_name(i) if trusted else None) for i in range(len(m.functions))]
    taken: set[str] = set()
    out = []
    for i, name in enumerate(named):
        if not name or name in taken or name.startswith(m.name + ":") or \
                (name.startswith("fn") and name[2:].isdigit() and name != unnamed_symbol(i)):
            name = unnamed_symbol(i)
            if name in taken or name in named:
                name = ordinal_symbol(m.name, i)
        taken.add(name)
        out.append(name)
    return out


def default_debug_names(module_name: str, symbols: list[str]) -> list[str | None]:
    """What the assembler records as debug names when the text does not say otherwise."""
    prefix = module_name + ":"
    return [None if s.startswith(prefix) or s == unnamed_symbol(i) else s for i, s in enumerate(symbols)]


def _feature_attrs(extra: int) -> list:
    out = [(name, True) for bit, name in FEATURE_ATTRS.items() if extra & bit]
    if extra & ~_KNOWN_BITS:
        out.append(("vm.requirement_bits", extra & ~_KNOWN_BITS))
    return out


def _attributes(pairs: list) -> str:
    return f" attributes {format_dict(pairs)}" if pairs else ""


class ModuleText:
    """Decodes a module once and renders its assembly."""

    def __init__(self, m: BytecodeModule):
        self.m = m
        self.symbols = function_symbols(m)
        self.names = Names.of(m)
        self.code = [decode_function(m.function_bytes(i), f"{m.name}.{m.display_name(i)}")
                     for i in range(len(m.functions))]
        self.cconv_of = derive.module_cconv_lookup([i.signature.cconv for i in m.imports],
                                                   [s.cconv for s in m.signatures])

    def _debug_names(self) -> list[str | None]:
        m = self.m
        if m.debug is None:
            return []
        return [n or None for n in m.debug.function_names]

    def module_attributes(self) -> list:
        m = self.m
        attrs: list = []
        if m.attrs:
            attrs.append(("iree.reflection", Attrs(m.attrs)))
        function_bits = 0
        for f in m.functions:
            function_bits |= f.requirements
        attrs += _feature_attrs(m.requirements & ~function_bits)
        used_bytes = used_refs = 0
        for code in self.code:
            b, r = derive.global_usage(code)
            used_bytes, used_refs = max(used_bytes, b), max(used_refs, r)
        if m.global_bytes != used_bytes:
            attrs.append(("vm.global_bytes", m.global_bytes))
        if m.global_refs != used_refs:
            attrs.append(("vm.global_refs", m.global_refs))
        actual = self._debug_names()
        default = default_debug_names(m.name, self.symbols)
        if _trim(actual) != _trim(default):
            attrs.append(("vm.debug_names", [n or "" for n in actual]))
        return attrs

    def exports_attached(self) -> bool:
        """Whether each export can be printed right before its function (keeping the order)."""
        ordinals = [e.internal_ordinal for e in self.m.exports]
        return (ordinals == sorted(set(ordinals))
                and all(0 <= o < len(self.symbols) and self.symbols[o] == e.name
                        for o, e in zip(ordinals, self.m.exports)))

    def export_line(self, e) -> str:
        target = self.symbols[e.internal_ordinal] if 0 <= e.internal_ordinal < len(self.symbols) \
            else ordinal_symbol(self.m.name, e.internal_ordinal)
        return f"vm.export @{e.name}" + ("" if target == e.name else f" = @{target}")

    def module_lines(self) -> list[str]:
        m = self.m
        lines = [f"vm.module @{m.name} version {m.version}{_attributes(self.module_attributes())}"]
        for d in m.dependencies:
            lines.append(f"vm.dependency {'optional ' if d.optional else ''}@{d.name} version >= {d.minimum_version}")
        lines += [f"vm.type {t}" for t in m.types]
        for imp in m.imports:
            attrs = [("iree.reflection", Attrs(imp.signature.attrs))] if imp.signature.attrs else []
            lines.append(f"vm.import {'optional ' if imp.optional else ''}@{imp.name} cconv "
                         f"{format_string(imp.signature.cconv.text)}{_attributes(attrs)}")
        lines += [RodataLine(r) for r in m.rodata]
        if not self.exports_attached():
            lines += [self.export_line(e) for e in m.exports]
        return lines

    def header(self, ordinal: int) -> str:
        m = self.m
        cc = m.signatures[ordinal].cconv if ordinal < len(m.signatures) else None
        args, results, attrs = [], [], []
        if cc is not None and not cc.is_variadic:
            for code, (bank, index) in zip(cc.args, argument_registers(cc.args)):
                args.append(f"{reg_name(Reg(bank, index, False, index))}: {_TYPE_OF_CODE[code]}")
            results = [_TYPE_OF_CODE[c] for c in cc.results]
            if make_cconv(cc.args, cc.results) != cc.text:
                attrs.append(("vm.cconv", cc.text))
        elif cc is not None:
            attrs.append(("vm.cconv", cc.text))
        if cc is not None and m.signatures[ordinal].attrs:
            attrs.insert(0, ("iree.reflection", Attrs(m.signatures[ordinal].attrs)))
        d = m.functions[ordinal]
        code = self.code[ordinal]
        attrs += _feature_attrs(d.requirements & ~derive.op_features(code))
        i32, refs = derive.register_demand(code, cc, self.cconv_of)
        for key, actual, derived in (("vm.i32_registers", d.i32_register_count, i32),
                                     ("vm.ref_registers", d.ref_register_count, refs),
                                     ("vm.block_count", d.block_count, derive.block_count(code))):
            if actual != derived:
                attrs.append((key, actual))
        return (f"vm.func @{self.symbols[ordinal]}({', '.join(args)}) -> ({', '.join(results)})"
                f"{_attributes(attrs)} {{")

    def function_lines(self, ordinal: int) -> list[str]:
        lines = []
        if self.exports_attached():
            lines += [self.export_line(e) for e in self.m.exports if e.internal_ordinal == ordinal]
        lines.append(self.header(ordinal))
        lines += instruction_lines(self.names, self.code[ordinal])
        lines.append("}")
        return lines


class RodataLine(str):
    """`vm.rodata[N] = HEX`, rendered lazily: `pieces()` streams a segment of any size."""

    CHUNK = 1 << 20

    def __new__(cls, segment):
        head = f"vm.rodata[{segment.ordinal}] = "
        self = super().__new__(cls, head if segment.length > cls.CHUNK else head + bytes(segment.data).hex().upper())
        self.segment = segment
        self.head = head
        return self

    def pieces(self):
        if self.segment.length <= self.CHUNK:
            yield str(self)
            return
        yield self.head
        data = self.segment.data
        for start in range(0, len(data), self.CHUNK):
            yield bytes(data[start:start + self.CHUNK]).hex().upper()


def iter_lines_text(lines):
    """Pieces of `lines` joined by newlines, streaming rodata lines."""
    for line in lines:
        if isinstance(line, RodataLine):
            yield from line.pieces()
        else:
            yield line
        yield "\n"


def _trim(names: list) -> list:
    names = list(names)
    while names and names[-1] is None:
        names.pop()
    return names


def iter_module_text(m: BytecodeModule, leading=()):
    """The module as assembly in pieces (rodata streamed), after `leading` lines."""
    t = ModuleText(m)
    yield from iter_lines_text(list(leading) + t.module_lines() + [""])
    for i in range(len(m.functions)):
        yield from iter_lines_text(t.function_lines(i) + [""])


def module_text(m: BytecodeModule) -> str:
    """The whole module as assembly `jitvm asm` reads back to an equivalent module."""
    return "".join(iter_module_text(m))[:-1]
