"""Module-level rules: the tables the function rules index into must be consistent first.

Each rule takes the module and raises a VerifyError naming it; `MODULE_RULES` runs them in
order, so by the time functions are verified every descriptor lies inside the bytecode,
every signature parses and is not variadic, and the state the runtime will allocate is
bounded.
"""

from __future__ import annotations

from ..errors import FormatError
from ..frontend.cconv import register_demand
from ..frontend.module import BytecodeModule
from ..frontend.types import VmType, parse_type
from . import limits
from .features import FeatureError, missing_features_message
from .site import module_error


def check_features(module: BytecodeModule, features: int) -> None:
    message = missing_features_message(module.requirements, features)
    if message:
        raise FeatureError(f"module '{module.name}': {message}")


def _resolvable(t: VmType, ref_types: frozenset[str]) -> bool:
    if t.kind != "ref":
        return True
    if t.ref not in ref_types:
        return False
    return t.element is None or _resolvable(t.element, ref_types)


def resolve_types(module: BytecodeModule, ref_types: frozenset[str]) -> tuple[VmType, ...]:
    """Every type-table entry parsed, with each ref type (and list element) registered."""
    out = []
    for i, name in enumerate(module.types):
        try:
            t = parse_type(name, f"types[{i}]")
        except (FormatError, RecursionError) as e:
            message = str(e) if isinstance(e, FormatError) else f"types[{i}]: type nesting too deep"
            raise module_error(module, message) from None
        if not _resolvable(t, ref_types):
            raise module_error(module, f"types[{i}] {name} names a ref type no module registers "
                                       f"(known: {', '.join(sorted(ref_types))})")
        out.append(t)
    return tuple(out)


def check_dependencies(module: BytecodeModule) -> None:
    for i, d in enumerate(module.dependencies):
        if not d.name:
            raise module_error(module, f"dependencies[{i}] has no module name")


def check_imports(module: BytecodeModule) -> None:
    for imp in module.imports:
        owner, _, fn = imp.name.partition(".")
        if not owner or not fn:
            raise module_error(module, f"imports[{imp.ordinal}] name {imp.name!r} is not of the form "
                                       f"'module.function'")


def check_signatures(module: BytecodeModule) -> None:
    if len(module.signatures) != len(module.functions):
        raise module_error(module, f"{len(module.signatures)} function signatures for "
                                   f"{len(module.functions)} function descriptors")
    for i, sig in enumerate(module.signatures):
        if sig.cconv.is_variadic:
            raise module_error(module, f"function '{module.display_name(i)}' (#{i}) has a variadic "
                                       f"calling convention ({sig.cconv}); only imports may be variadic")


def check_exports(module: BytecodeModule) -> None:
    n = len(module.functions)
    for e in module.exports:
        if not e.name:
            raise module_error(module, f"exports[{e.ordinal}] has no name")
        if not 0 <= e.internal_ordinal < n:
            raise module_error(module, f"export '{e.name}' names function {e.internal_ordinal}, out of "
                                       f"range ({n} functions)")


def check_rodata(module: BytecodeModule) -> None:
    size = len(module.archive.data)
    for seg in module.rodata:
        if seg.offset < 0 or seg.length < 0 or seg.offset + seg.length > size:
            raise module_error(module, f"rodata[{seg.ordinal}] ({seg.length} bytes at file offset "
                                       f"{seg.offset}) lies outside the {size}-byte file")


def _bounded(module: BytecodeModule, what: str, value: int, limit: int) -> None:
    if not 0 <= value <= limit:
        raise module_error(module, f"{what} is {value}; this runtime allows 0 to {limit}")


def check_state(module: BytecodeModule) -> None:
    _bounded(module, "module state global_bytes_capacity", module.global_bytes, limits.MAX_GLOBAL_BYTES)
    _bounded(module, "module state global_ref_count", module.global_refs, limits.MAX_GLOBAL_REFS)
    for i, size in enumerate(module.rwdata_sizes):
        _bounded(module, f"rwdata[{i}] byte_size", size, limits.MAX_RWDATA_SEGMENT_BYTES)


def check_descriptors(module: BytecodeModule) -> None:
    total = len(module.bytecode)
    for d in module.functions:
        fn = f"function '{module.display_name(d.ordinal)}' (#{d.ordinal})"
        if d.bytecode_length <= 0 or d.bytecode_offset < 0 or d.bytecode_offset + d.bytecode_length > total:
            raise module_error(module, f"{fn} bytecode ({d.bytecode_length} bytes at offset "
                                       f"{d.bytecode_offset}) is not inside the {total}-byte bytecode_data")
        if d.bytecode_length > limits.MAX_FUNCTION_BYTES:
            raise module_error(module, f"{fn} has {d.bytecode_length} bytes of bytecode; this runtime "
                                       f"allows {limits.MAX_FUNCTION_BYTES}")
        if d.block_count <= 0:
            raise module_error(module, f"{fn} declares {d.block_count} blocks; functions have at least one")
        _bounded(module, f"{fn} i32_register_count", d.i32_register_count, limits.MAX_I32_REGISTERS)
        _bounded(module, f"{fn} ref_register_count", d.ref_register_count, limits.MAX_REF_REGISTERS)
        cconv = module.signatures[d.ordinal].cconv
        need_i32, need_ref = register_demand(cconv.args)
        if need_i32 > d.i32_register_count or need_ref > d.ref_register_count:
            raise module_error(module, f"{fn} needs {need_i32} i32 and {need_ref} ref registers for its "
                                       f"arguments ({cconv}) but declares {d.i32_register_count} and "
                                       f"{d.ref_register_count}")


MODULE_RULES = (check_dependencies, check_imports, check_signatures, check_exports, check_rodata,
                check_state, check_descriptors)
"""run in this order: descriptors rely on signatures being one per function"""
