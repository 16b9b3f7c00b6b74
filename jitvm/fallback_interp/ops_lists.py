"""vm.list operations, through the implementation of IREE's list rules shared with the JIT.

runtime.vm.listops converts between element types as IREE does (integer widths sign-extend or
truncate, f32 <-> f64 convert, anything else reads 0), refuses values of variant elements
holding refs (and the reverse) with FAILED_PRECONDITION, and bounds-checks indices as
unsigned 32-bit values. `vm.list.get.ref` of an element whose type is not the one the op
names yields null, like IREE (a `!vm.opaque` type names none, so it always yields null).
"""

from __future__ import annotations

from ..frontend.handlers import OpHandlers
from ..runtime.vm import nativelib, traps
from ..runtime.vm.listops import deref
from ..runtime.vm.objects import storage_for
from .ops_control import store_ref
from .ops_refs import ref_type_id

handles = OpHandlers("interpreter")  # this family's part of registry.HANDLERS

_CODES = {"i32": 3, "i64": 4, "f32": 5, "f64": 6}


def alloc(mode: int, etype: int, esize: int, capacity: int) -> int:
    obj = nativelib.fn.jv_list_alloc(mode, etype, esize, capacity)
    if not obj:
        raise traps.make_trap(traps.OUT_OF_MEMORY, message="list allocation")
    return obj


def reserve(addr: int, minimum: int) -> None:
    deref(addr)
    if nativelib.fn.jv_list_reserve(addr, minimum):
        raise traps.make_trap(traps.OUT_OF_MEMORY, message="list reserve")


def resize(addr: int, size: int) -> None:
    deref(addr)
    if nativelib.fn.jv_list_resize(addr, size):
        raise traps.make_trap(traps.OUT_OF_MEMORY, message="list resize")


def size(addr: int) -> int:
    return deref(addr).size


@handles("list.alloc")
def _alloc(e, ins):
    mode, etype, esize = storage_for(e.vf.module.types[ins["element_type"]])
    fn = e.const(alloc, "lalloc")
    e.line(f"x = {fn}({mode}, {etype}, {esize}, {e.u32(ins['initial_capacity'])})")
    store_ref(e, ins["result"], "x")


@handles("list.reserve")
def _reserve(e, ins):
    e.line(f"{e.const(reserve, 'lreserve')}({e.ref(ins['list'])}, {e.u32(ins['minimum_capacity'])})")


@handles("list.resize")
def _resize(e, ins):
    e.line(f"{e.const(resize, 'lresize')}({e.ref(ins['list'])}, {e.u32(ins['new_size'])})")


@handles("list.size")
def _size(e, ins):
    e.line(f"{e.u32(ins['result'])} = {e.const(size, 'lsize')}({e.ref(ins['list'])})")


def _python_value(e, reg, ty: str) -> str:
    return {"i32": e.i32, "i64": e.i64, "f32": e.f32, "f64": e.f64}[ty](reg)


@handles("list.get.i32", "list.get.i64", "list.get.f32", "list.get.f64")
def _get(e, ins):
    ty = ins.op.type
    e.line(f"{_python_value(e, ins['result'], ty)} = LGETV({e.ref(ins['list'])}, {e.u32(ins['index'])}, "
           f"{_CODES[ty]})")


@handles("list.set.i32", "list.set.i64", "list.set.f32", "list.set.f64")
def _set(e, ins):
    ty = ins.op.type
    e.line(f"LSETV({e.ref(ins['list'])}, {e.u32(ins['index'])}, {_CODES[ty]}, "
           f"{_python_value(e, ins['value'], ty)})")


@handles("list.get.ref")
def _get_ref(e, ins):
    result = ins["result"]
    e.line(f"x = LGETR({e.ref(ins['list'])}, {e.u32(ins['index'])}, {bool(result.move)}, 0)")
    with e.indented(f"if x and TID(x) != {ref_type_id(e, ins['type_def'])}:"):
        e.line("REL(x)")
        e.line("x = 0")
    store_ref(e, result, "x")


@handles("list.set.ref")
def _set_ref(e, ins):
    value = ins["value"]
    e.line(f"LSETR({e.ref(ins['list'])}, {e.u32(ins['index'])}, {e.ref(value)}, {bool(value.move)})")
    if value.move:
        e.line(f"R[{value.index}] = 0")
