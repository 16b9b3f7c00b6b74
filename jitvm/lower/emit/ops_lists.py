"""vm.list operations.

Allocation and resizing call the native runtime; element get/set go through the shared
implementation of IREE's conversion rules (runtime.vm.listops), except `vm.list.get.ref` on
ref lists: kernels read their bindings that way, so it is inlined.
"""

from __future__ import annotations

from ...frontend.handlers import OpHandlers
from ...runtime.native import layout
from ...runtime.vm import nativelib, traps
from ...runtime.vm.objects import storage_for
from .types import F32, F64, I1, I8, I32, I64, PTR, const, offset_of

lowers = OpHandlers("lowering")  # this family's part of registry.LOWERINGS

_CODES = {"i32": 3, "i64": 4, "f32": 5, "f64": 6}


def list_operand(e, reg):
    """The list object in `reg`, trapping like IREE ("list is null") for null or non-lists."""
    obj = e.get(reg, "ref")
    e.check(e.b.icmp_unsigned("!=", obj, const(PTR, None)), traps.NULL_REF, message="list")
    e.check(e.b.icmp_unsigned("==", e.type_id_of(obj), const(I32, nativelib.LIST_TYPE_ID)),
            traps.NULL_REF, message="list")
    return obj


def _field(e, obj, name, ty):
    return e.b.load(e.b.gep(obj, [const(I64, offset_of("List", name))], source_etype=I8, inbounds=True), typ=ty)


def _check_oom(e, status, what):
    e.check(e.b.icmp_unsigned("==", status, const(I32, 0)), traps.OUT_OF_MEMORY, message=what)


@lowers("list.alloc")
def _alloc(e, ins):
    vm_type = e.vf.module.types[ins["element_type"]]
    mode, etype, esize = storage_for(vm_type)
    if mode == layout.LIST_REF:
        etype = e.mod.ref_type_id(e.b, ins["element_type"])
    else:
        etype = const(I32, etype)
    cap = e.i32(ins["initial_capacity"])
    obj = e.b.call(e.runtime("jv_list_alloc"), [const(I32, mode), etype, const(I32, esize), cap])
    e.check(e.b.icmp_unsigned("!=", obj, const(PTR, None)), traps.OUT_OF_MEMORY, message="list allocation")
    e.set_ref(ins["result"], obj)


@lowers("list.reserve")
def _reserve(e, ins):
    obj = list_operand(e, ins["list"])
    _check_oom(e, e.b.call(e.runtime("jv_list_reserve"), [obj, e.i32(ins["minimum_capacity"])]), "list reserve")


@lowers("list.resize")
def _resize(e, ins):
    obj = list_operand(e, ins["list"])
    _check_oom(e, e.b.call(e.runtime("jv_list_resize"), [obj, e.i32(ins["new_size"])]), "list resize")


@lowers("list.size")
def _size(e, ins):
    obj = list_operand(e, ins["list"])
    e.set(ins["result"], _field(e, obj, "size", I32), "i32")


def _get_value(e, ins):
    ty = ins.op.type
    obj = list_operand(e, ins["list"])
    status = e.b.call(e.runtime("jv_list_get_value"),
                      [e.trap_rec, obj, e.i32(ins["index"]), const(I32, _CODES[ty]), e.tmp64])
    e.check_status(status)
    bits = e.b.load(e.tmp64, typ=I64)
    value = {"i32": lambda: e.b.trunc(bits, I32), "i64": lambda: bits,
             "f32": lambda: e.b.bitcast(e.b.trunc(bits, I32), F32), "f64": lambda: e.b.bitcast(bits, F64)}[ty]()
    e.set(ins["result"], value, ty)


def _set_value(e, ins):
    ty = ins.op.type
    obj = list_operand(e, ins["list"])
    v = e.get(ins["value"], ty)
    bits = {"i32": lambda: e.b.zext(v, I64), "i64": lambda: v,
            "f32": lambda: e.b.zext(e.b.bitcast(v, I32), I64), "f64": lambda: e.b.bitcast(v, I64)}[ty]()
    status = e.b.call(e.runtime("jv_list_set_value"),
                      [e.trap_rec, obj, e.i32(ins["index"]), const(I32, _CODES[ty]), bits])
    e.check_status(status)


for _ty in _CODES:
    lowers(f"list.get.{_ty}")(_get_value)
    lowers(f"list.set.{_ty}")(_set_value)


@lowers("list.get.ref")
def _get_ref(e, ins):
    b = e.b
    obj = list_operand(e, ins["list"])
    result = ins["result"]
    expected = e.mod.ref_type_id(b, ins["type_def"])
    index = e.i32(ins["index"])
    mode = _field(e, obj, "mode", I32)
    fast = e.fn.append_basic_block(f"list_ref_fast_pc{e.pc}")
    slow = e.fn.append_basic_block(f"list_ref_slow_pc{e.pc}")
    done = e.fn.append_basic_block(f"list_ref_done_pc{e.pc}")
    b.cbranch(b.icmp_unsigned("==", mode, const(I32, layout.LIST_REF)), fast, slow)

    b.position_at_end(fast)
    size = _field(e, obj, "size", I32)
    e.check(b.icmp_unsigned("<", index, size), traps.LIST_OUT_OF_RANGE, [b.zext(index, I64), b.zext(size, I64)])
    storage = _field(e, obj, "storage", PTR)
    slot = b.gep(storage, [b.zext(index, I64)], source_etype=PTR, inbounds=True)
    value = b.load(slot, typ=PTR)
    # A ref of another type reads as null (IREE fetches it, then releases it).
    pre = b.block
    check = e.fn.append_basic_block(f"list_ref_type_pc{e.pc}")
    typed = e.fn.append_basic_block(f"list_ref_typed_pc{e.pc}")
    b.cbranch(b.icmp_unsigned("!=", value, const(PTR, None)), check, typed)
    b.position_at_end(check)
    match = b.icmp_unsigned("==", e.type_id_of(value), expected)
    b.branch(typed)
    b.position_at_end(typed)
    good = b.phi(I1)
    good.add_incoming(const(I1, 1), pre)
    good.add_incoming(match, check)
    kept = b.select(good, value, const(PTR, None))
    if result.move:
        b.store(const(PTR, None), slot)
        with b.if_then(b.not_(good)):
            e.release(value)
    else:
        e.retain(kept)
    value = kept
    fast_end = b.block
    b.branch(done)

    b.position_at_end(slow)
    status = b.call(e.runtime("jv_list_get_ref"),
                    [e.trap_rec, obj, index, const(I32, int(result.move)), expected, e.tmp64])
    e.check_status(status)
    slow_value = b.load(e.tmp64, typ=PTR)
    slow_end = b.block
    b.branch(done)

    b.position_at_end(done)
    phi = b.phi(PTR)
    phi.add_incoming(value, fast_end)
    phi.add_incoming(slow_value, slow_end)
    e.set_ref(result, phi)


@lowers("list.set.ref")
def _set_ref(e, ins):
    obj = list_operand(e, ins["list"])
    value = ins["value"]
    status = e.b.call(e.runtime("jv_list_set_ref"),
                      [e.trap_rec, obj, e.i32(ins["index"]), e.get(value, "ref"), const(I32, int(value.move))])
    e.check_status(status)
    if value.move:
        e.clear_ref(value)
