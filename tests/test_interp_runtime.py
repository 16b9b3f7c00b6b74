"""The reference interpreter as a runtime backend: refs, imports, ABI, traps, limits, memory.

These run tests/interp_programs/runtime/*.vmasm (functions taking refs or importing a
Python module, which IREE's Python API cannot call the same way) and corpus programs.
"""

from __future__ import annotations

import ctypes
import gc
import resource
import struct

import pytest

import jitvm
from jitvm.fallback_interp import InterpreterBackend
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.runtime.vm import abi, traps
from jitvm.runtime.vm.bytecode import describe_frame
from jitvm.runtime.vm.context import Context
from jitvm.runtime.native.layout import TrapT
from jitvm.runtime.vm.interface import NativeModule, export
from jitvm.runtime.vm.objects import VmBuffer, VmList
from jitvm.runtime.vm.semantics import MAX_CALL_DEPTH
from tests.interp_support import program


class Host(NativeModule):
    """Imports of abi.vmasm, written in Python."""

    name = "host"

    @export("twice", "0i_i")
    def twice(self, x):
        return 2 * x

    @export("sum", "0CiD_i")
    def sum(self, values):
        return sum(v for (v,) in values)

    @export("length", "0r_I")
    def length(self, buf):
        return buf.length

    @export("explode", "0i_i")
    def explode(self, x):
        raise ValueError(f"host cannot take {x}")


@pytest.fixture(scope="module")
def abi_module():
    context = Context()
    context.add(Host())
    _ctx, instance = instantiate(program("runtime/abi").vmfb, context=context)
    return instance


def test_refs_pass_through_and_come_back_owned(abi_module):
    buf = VmBuffer.from_bytes(bytes(range(24)))
    before = buf.refcount
    same, length = abi_module.lookup("echo_buffer").call([buf])
    assert same == buf and length == 24
    assert buf.refcount == before + 1  # the returned Ref owns one reference
    del same
    gc.collect()
    assert buf.refcount == before


def test_returned_containers_own_their_elements(abi_module):
    (lst,) = abi_module.lookup("make_list").call([5])
    assert isinstance(lst, VmList) and len(lst) == 5 and lst.refcount == 1
    assert [b.length for b in lst] == [64] * 5
    assert all(b.refcount == 2 for b in lst)  # the list's reference and the iteration's Ref


def test_module_state_persists_across_calls(abi_module):
    count = abi_module.lookup("count")
    first = count.call([])[0]
    assert [count.call([])[0] for _ in range(3)] == [first + 1, first + 2, first + 3]


def test_python_imports_plain_variadic_ref_and_unresolved(abi_module):
    assert abi_module.lookup("imports").call([7]) == [14, 28, 40, 0]


def test_python_exception_in_an_import_becomes_an_internal_trap(abi_module):
    with pytest.raises(jitvm.Trap) as info:
        abi_module.lookup("explode").call([3])
    t = info.value
    assert t.status_name == "INTERNAL" and "host cannot take 3" in t.message
    assert [f[1] for f in t.backtrace] == ["explode"]
    # The Python exception stays attached through the interpreted frames it unwound.
    assert isinstance(t.__cause__, ValueError) and "host cannot take 3" in str(t.__cause__)


def test_trap_backtrace_is_innermost_first_with_pcs(abi_module):
    with pytest.raises(jitvm.Trap) as info:
        abi_module.lookup("outer").call([2])
    t = info.value
    assert t.status_name == "OUT_OF_RANGE"
    assert t.message == "out-of-bounds access detected (offset=8, length=4, alignment=4, buffer length=8)"
    inner = _callee_name(abi_module, "outer")
    assert [(m, f) for m, f, _pc, _loc in t.backtrace] == [("abi", inner), ("abi", "outer")]
    inner_pc, outer_pc = t.backtrace[0][2], t.backtrace[1][2]
    assert inner_pc > 0 and outer_pc > 0  # the load and the call, not the function entries
    assert f"abi.{inner} pc {inner_pc}" in str(t)


def _callee_name(instance, caller: str) -> str:
    """The display name of the function `caller` calls (no debug names in vmasm modules)."""
    vf = instance.loaded.verified.export(caller)
    (site,) = vf.calls.values()
    return instance.loaded.verified.function(site.callee).name


def test_vm_fail_keeps_the_low_five_status_bits(abi_module):
    fail = abi_module.lookup("fail_status")
    for code, name in ((9, "FAILED_PRECONDITION"), (99, "INVALID_ARGUMENT"), (32, "UNKNOWN")):
        with pytest.raises(jitvm.Trap) as info:
            fail.call([code])
        assert info.value.status_name == name and info.value.message == "status from the program"
    with pytest.raises(jitvm.Trap) as info:  # status 0 continues: here past the last block
        fail.call([0])
    assert info.value.status_name == "FAILED_PRECONDITION"
    assert info.value.message == "execution ran past the end of the function"


def test_call_depth_is_bounded_like_the_jit(abi_module):
    recurse = abi_module.lookup("recurse")
    assert recurse.call([MAX_CALL_DEPTH - 1]) == [MAX_CALL_DEPTH - 1]
    with pytest.raises(jitvm.Trap) as info:
        recurse.call([MAX_CALL_DEPTH])
    assert info.value.status_name == "RESOURCE_EXHAUSTED"
    assert info.value.message == f"VM stack overflow: call depth exceeds {MAX_CALL_DEPTH} frames"
    assert len(info.value.backtrace) == MAX_CALL_DEPTH + 1
    assert recurse.call([10]) == [10]  # the depth counter recovered


def test_wrong_arguments_are_argument_errors(abi_module):
    with pytest.raises(jitvm.ArgumentError, match="takes 1 arguments"):
        abi_module.lookup("recurse").call([])
    with pytest.raises(jitvm.ArgumentError, match="argument 0 of abi.recurse must be an i32"):
        abi_module.lookup("recurse").call([1.5])
    with pytest.raises(jitvm.ArgumentError, match="must be a ref or None"):
        abi_module.lookup("echo_buffer").call([b"bytes"])


def test_interpreted_imports_are_called_directly_and_trap_through_both_modules():
    context = Context()
    instantiate(program("runtime/callee").vmfb, context=context)
    _ctx, caller = instantiate(program("runtime/caller").vmfb, context=context)
    divide = caller.lookup("divide")
    assert divide.call([-7, 2]) == [-3, -1]
    with pytest.raises(jitvm.Trap) as info:
        divide.call([1, 0])
    t = info.value
    assert t.status_name == "INVALID_ARGUMENT" and t.message == "integer division by zero"
    assert [(m, f) for m, f, _pc, _loc in t.backtrace] == [("callee", "checked_div"), ("caller", "divide")]


def test_signed_remainder_overflow_traps_like_division():
    """INT64_MIN % -1 (SIGFPE in IREE's C runtime) traps as INT64_MIN / -1 does."""
    _ctx, callee = instantiate(program("runtime/callee").vmfb)
    rem = callee.lookup("remainder_i64")
    assert rem.call([-7, 2]) == [-1] and rem.call([7, -2]) == [1] and rem.call([-(1 << 63), 3]) == [-2]
    with pytest.raises(jitvm.Trap) as info:
        rem.call([-(1 << 63), -1])
    assert info.value.status_name == "INVALID_ARGUMENT"
    assert info.value.message == "integer overflow in signed division (INT_MIN / -1)"


def _native_call(instance, name, args):
    fn = instance.lookup(name)
    addr, ctx = fn.native_entry()
    cfn = abi.NATIVE_FN(addr)
    slots = abi.pack_args(fn.cconv, args)
    results = abi.result_array(fn.cconv)
    rec = TrapT()
    status = cfn(ctx, slots, results, ctypes.addressof(rec))
    if status:
        raise traps.take_exception(rec, describe_frame)
    return abi.unpack_results(fn.cconv, results)


def test_native_entry_uses_the_uniform_abi(abi_module):
    buf = VmBuffer.from_bytes(b"\x01" * 10)
    before = buf.refcount
    same, length = _native_call(abi_module, "echo_buffer", [buf])  # borrowed in, owned out
    assert same == buf and length == 10
    del same
    gc.collect()
    assert buf.refcount == before
    assert _native_call(abi_module, "recurse", [5]) == [5]
    with pytest.raises(jitvm.Trap) as info:
        _native_call(abi_module, "outer", [-1])
    assert info.value.status_name == "OUT_OF_RANGE"
    assert [f[1] for f in info.value.backtrace] == [_callee_name(abi_module, "outer"), "outer"]


def test_register_aliasing_matches_iree_layout():
    """f32 bits read through an i32 op, i64 halves through i32 ops (little endian)."""
    _ctx, instance = instantiate(program("semantics").vmfb)
    got = instance.lookup("register_aliasing").call([1.5])
    bits_1_5 = struct.unpack("<I", struct.pack("<f", 1.5))[0]
    assert got[:3] == [bits_1_5 + 1, 0, 2]  # 1.5's bits + 1; hi(0xFFFFFFFF00000001) + 1; lo + 1
    assert got[3] == struct.unpack("<f", struct.pack("<f", 2 * 3.14159274101257324))[0]  # bits of pi, added as f32


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def test_ten_thousand_calls_keep_memory_flat(corpus_by_name):
    """A corpus function that allocates a list of buffers and a buffer on every call."""
    _ctx, instance = instantiate(corpus_by_name["vmasm/lists"].vmfb)
    ref_list = instance.lookup("ref_list")
    for _ in range(1000):  # warm up allocator and caches
        ref_list.call([3])
    gc.collect()
    before = _rss_kib()
    for _ in range(10_000):
        assert ref_list.call([3]) == [0, 12, 99, 3]
    gc.collect()
    grown = _rss_kib() - before
    assert grown < 256, f"RSS grew by {grown} KiB over 10,000 calls"


def test_ten_thousand_ref_round_trips_leave_refcounts_unchanged(abi_module):
    buf = VmBuffer.from_bytes(bytes(16))
    before = buf.refcount
    echo = abi_module.lookup("echo_buffer")
    for _ in range(10_000):
        echo.call([buf])
    gc.collect()
    assert buf.refcount == before


def test_buffer_views_survive_more_buffers_than_the_view_cache(abi_module):
    n = 600  # several flushes of the invocation's view cache
    assert abi_module.lookup("many_buffers").call([n]) == [n * (n - 1) // 2, 1000]
    with pytest.raises(jitvm.Trap, match="INVALID_ARGUMENT; source_buffer is null"):
        abi_module.lookup("load_after_null").call([])


def test_backend_counts_instructions_when_asked():
    backend = InterpreterBackend(count_instructions=True)
    _ctx, instance = instantiate(program("runtime/callee").vmfb, backend=backend)
    instance.lookup("checked_div").call([7, 2])
    assert instance.loaded.executable.instructions_executed() == 3  # div, rem, return
