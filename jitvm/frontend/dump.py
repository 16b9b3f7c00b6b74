"""`jitvm dump`: a module summary plus every function disassembled, as text or JSON.

The text is VM assembly `jitvm asm` reads back (`vmasm`); the summary before it is a block
of `//` comments, so the whole output assembles.
"""

from __future__ import annotations

import json

from ..errors import Error
from .cconv import Span
from .decode import decode_function
from .disasm import Names, instruction_lines
from .module import BytecodeModule, feature_names
from .vmasm import ModuleText, iter_module_text

_CODE_TYPE = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "!vm.ref<?>"}


def signature_text(cconv) -> str:
    def arg(a):
        if isinstance(a, Span):
            return "tuple<" + ", ".join(_CODE_TYPE[c] for c in a.codes) + ">..."
        return _CODE_TYPE[a]
    return f"({', '.join(arg(a) for a in cconv.args)}) -> ({', '.join(_CODE_TYPE[c] for c in cconv.results)})"


def _features(bits: int) -> str:
    names = feature_names(bits)
    return " | ".join(names + [f"{bits:08X}"]) if names else f"{bits:08X}"


def summary_lines(m: BytecodeModule) -> list[str]:
    out = [f"// module @{m.name} : version {m.version}, bytecode {m.bytecode_major}.{m.bytecode_minor}",
           f"// source: {m.origin}",
           f"Requirements: {_features(m.requirements)}", ""]
    if m.attrs:
        out.append("Attributes:")
        out += [f"  {k} = {v}" for k, v in m.attrs] + [""]
    out.append("Required Types:")
    out += [f"  [{i:3}] {t}" for i, t in enumerate(m.types)] + [""]
    if m.dependencies:
        out.append("Module Dependencies:")
        out += [f"  {d.name}, version >= {d.minimum_version}, {'optional' if d.optional else 'required'}"
                for d in m.dependencies] + [""]
    if m.imports:
        out.append("Imported Functions:")
        for imp in m.imports:
            opt = " (optional)" if imp.optional else ""
            out.append(f"  [{imp.ordinal:3}] {imp.name}{signature_text(imp.signature.cconv)}{opt}")
        out.append("")
    out.append("Exported Functions:")
    for e in m.exports:
        sig = m.signatures[e.internal_ordinal] if 0 <= e.internal_ordinal < len(m.signatures) else None
        out.append(f"  [{e.ordinal:3}] {e.name}{signature_text(sig.cconv) if sig else '(?)'}")
        if sig:
            out += [f"        {k}: {v}" for k, v in sig.attrs]
    out += ["", "Rodata:"]
    for r in m.rodata:
        where = (f"external at file offset {r.offset} (+{r.external_offset} after the rodata base)"
                 if r.external else f"embedded at file offset {r.offset}")
        out.append(f"  .rodata[{r.ordinal:3}] {r.length:>10} bytes, {where}")
    out += ["", "Module State:",
            f"  {m.global_bytes} bytes, {m.global_refs} refs", "",
            "Functions:",
            "    # |   Offset |   Length | Blocks | i32 # | ref # | Requirements | Name"]
    for f in m.functions:
        out.append(f"  {f.ordinal:3} | {f.bytecode_offset:08X} | {f.bytecode_length:8} | {f.block_count:6} | "
                   f"{f.i32_register_count:5} | {f.ref_register_count:5} | {_features(f.requirements):12} | "
                   f"{m.display_name(f.ordinal)}")
    out.append("")
    return out


def find_function(m: BytecodeModule, name_or_ordinal: str) -> int:
    if name_or_ordinal.isdigit() and int(name_or_ordinal) < len(m.functions):
        return int(name_or_ordinal)
    e = m.export(name_or_ordinal)
    if e is not None:
        return e.internal_ordinal
    for i in range(len(m.functions)):
        if m.function_name(i) == name_or_ordinal:
            return i
    raise Error(f"{m.origin}: no function named {name_or_ordinal!r}; exports are "
                f"{', '.join(e.name for e in m.exports) or 'none'}")


def iter_dump_text(m: BytecodeModule, function: str | None = None, summary: bool = True):
    """dump_text in pieces, so a module with GiBs of rodata prints without building one string."""
    if function is not None:
        yield "\n".join(ModuleText(m).function_lines(find_function(m, function)) + [""])
        return
    leading = [f"// {line}" if line else "" for line in summary_lines(m)] if summary else []
    yield from iter_module_text(m, leading)


def dump_text(m: BytecodeModule, function: str | None = None, summary: bool = True) -> str:
    """Summary (as comments) and assembly; with `function`, just that function."""
    text = "".join(iter_dump_text(m, function, summary))
    return text if function is not None else text[:-1]


def dump_json(m: BytecodeModule, function: str | None = None) -> str:
    names = Names.of(m)
    ordinals = range(len(m.functions)) if function is None else [find_function(m, function)]
    functions = []
    for i in ordinals:
        d = m.functions[i]
        ins = decode_function(m.function_bytes(i), f"{m.name}.{m.display_name(i)}")
        functions.append({
            "ordinal": i, "name": m.display_name(i),
            "export": m.export_of[i].name if i in m.export_of else None,
            "calling_convention": m.signatures[i].cconv.text if i < len(m.signatures) else None,
            "bytecode_offset": d.bytecode_offset, "bytecode_length": d.bytecode_length,
            "block_count": d.block_count, "i32_registers": d.i32_register_count,
            "ref_registers": d.ref_register_count, "requirements": feature_names(d.requirements),
            "instructions": [{"pc": x.pc, "op": x.op.mnemonic, "text": line.strip()}
                             for x, line in zip(ins, instruction_lines(names, ins))],
        })
    doc = {
        "name": m.name, "version": m.version,
        "bytecode_version": [m.bytecode_major, m.bytecode_minor],
        "requirements": feature_names(m.requirements), "attrs": dict(m.attrs), "types": list(m.types),
        "dependencies": [{"name": d.name, "minimum_version": d.minimum_version, "optional": d.optional}
                         for d in m.dependencies],
        "imports": [{"name": i.name, "calling_convention": i.signature.cconv.text, "optional": i.optional}
                    for i in m.imports],
        "exports": [{"name": e.name, "function": e.internal_ordinal,
                     "calling_convention": m.signatures[e.internal_ordinal].cconv.text
                     if 0 <= e.internal_ordinal < len(m.signatures) else None,
                     "attrs": dict(m.signatures[e.internal_ordinal].attrs)
                     if 0 <= e.internal_ordinal < len(m.signatures) else {}}
                    for e in m.exports],
        "rodata": [{"ordinal": r.ordinal, "external": r.external, "file_offset": r.offset, "length": r.length}
                   for r in m.rodata],
        "state": {"global_bytes": m.global_bytes, "global_refs": m.global_refs},
        "functions": functions,
    }
    return json.dumps(doc, indent=2)
