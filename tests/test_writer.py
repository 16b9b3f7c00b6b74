"""ModuleBuilder: modules built from constants and assembly load and run in IREE and jitvm."""

from __future__ import annotations

import struct
import zipfile

import numpy as np
import pytest

import jitvm
from jitvm.frontend import load_module, pack_bits
from jitvm.frontend.asm import ModuleBuilder, add_functions
from jitvm.frontend.archive import SEGMENT_ALIGNMENT
from jitvm.frontend.dump import dump_text
from jitvm.frontend.module import FEATURE_BITS
from jitvm.frontend.asm.writer import BuildError, MAX_EMBEDDED

READERS = """
vm.export @byte_at
vm.func @byte_at(%i0:1 : i64, %i2: i32) -> (i32) {
^bb0:
  %r0 = vm.const.ref.rodata 0
  %r1 = vm.const.ref.rodata 1
  %r2 = vm.const.ref.rodata 2
  %r3 = vm.select.ref %i2 ? %r1 : %r0 -> !vm.buffer
  %i3 = vm.const.i32 2
  %i4 = vm.cmp.eq.i32 %i2, %i3
  %r3 = vm.select.ref %i4 ? %r2 : %r3 -> !vm.buffer
  %i5 = vm.buffer.load.i8.u %r3, %i0:1
  vm.return %i5
}

vm.export @lengths
vm.func @lengths() -> (i64, i64, i64) {
^bb0:
  %r0 = vm.const.ref.rodata 0
  %r1 = vm.const.ref.rodata 1
  %r2 = vm.const.ref.rodata 2
  %i0:1 = vm.buffer.length %r0
  %i2:3 = vm.buffer.length %r1
  %i4:5 = vm.buffer.length %r2
  vm.return %i0:1, %i2:3, %i4:5
}
"""


def iree_call(path, name, *args):
    import iree.runtime as rt

    instance = rt.VmInstance()
    module = rt.VmModule.mmap(instance, str(path))
    context = rt.VmContext(instance, [module])
    arguments = rt.VmVariantList(len(args))
    for a in args:
        arguments.push_int(a)
    results = rt.VmVariantList(4)
    context.invoke(module.lookup_function(name), arguments, results)
    return [results.get_variant(i) for i in range(results.size)]


def jitvm_call(path, name, *args, backend="jit"):
    from jitvm.api import get_backend
    from jitvm.runtime.vm.bytecode import LoadedModule
    from jitvm.runtime.vm.context import Context

    context = Context()
    instance = context.add(LoadedModule(jitvm.verify_module(load_module(path)), get_backend(backend)))
    return list(instance.lookup(name).call(list(args)))


def interp_call(path, name, *args):
    return jitvm_call(path, name, *args, backend="interp")


RUNTIMES = pytest.mark.parametrize("call", [iree_call, jitvm_call, interp_call], ids=["iree", "jit", "interp"])


@pytest.fixture()
def three_segments(tmp_path):
    small = b"hello, vm"
    floats = np.linspace(-1, 1, 2000, dtype=np.float32)  # 8000 bytes: external
    nibbles = (np.arange(10001) % 16 - 8).astype(np.int8)  # packed: 5001 bytes, external
    b = ModuleBuilder("built")
    assert b.add_rodata(small) == 0
    assert b.add_rodata(floats) == 1
    assert b.add_rodata(nibbles, bits=4) == 2
    add_functions(b, READERS)
    path = tmp_path / "built.vmfb"
    b.write(path)
    return path, [small, floats.tobytes(), pack_bits(nibbles, 4).tobytes()]


def test_segments_are_placed_and_read_back(three_segments):
    path, expected = three_segments
    m = load_module(path)
    assert [bytes(r.data) for r in m.rodata] == expected
    assert [r.external for r in m.rodata] == [False, True, True]
    for r in m.rodata:
        if r.external:
            assert r.offset % SEGMENT_ALIGNMENT == 0
    with zipfile.ZipFile(path) as z:  # a valid ZIP64 archive with correct CRCs
        assert z.testzip() is None
        assert z.namelist() == ["module.fb", "rodata_1.bin", "rodata_2.bin"]
        assert z.read("rodata_2.bin") == expected[2]


@RUNTIMES
def test_built_module_runs(three_segments, call):
    path, expected = three_segments
    assert call(path, "lengths") == [len(e) for e in expected]
    for which, data in enumerate(expected):
        for offset in (0, len(data) // 2, len(data) - 1):
            assert call(path, "byte_at", offset, which) == [data[offset]], (which, offset)


def test_descriptors_and_requirements_are_derived():
    b = ModuleBuilder("derive")
    add_functions(b, """
vm.func @f32_user(%i0: f32, %i2:3 : i64, %r0: !vm.buffer) -> (f32) {
  %i1 = vm.add.f32 %i0, %i0
  vm.br ^next
^next:
  vm.return %i1
}
vm.func @yielder() -> () attributes {vm.yield} {
  vm.return
}
vm.func @caller() -> (i64) {
  %i0 = vm.const.i32 1
  %i1 = vm.call @derive.f32_user(%i0, %i0, %r5)
  vm.return %i0
}
""")
    m = load_module(b.to_bytes())
    f, y, c = m.functions
    assert (f.i32_register_count, f.ref_register_count, f.block_count) == (4, 1, 2)
    assert f.requirements == FEATURE_BITS["EXT_F32"]
    assert y.requirements == FEATURE_BITS["YIELD"]
    assert m.requirements == FEATURE_BITS["EXT_F32"] | FEATURE_BITS["YIELD"]
    # The call passes %i0 as the i64 argument, so it occupies %i0..%i1; the result is f32.
    # `vm.return %i0` returns an i64: registers 0 and 1.
    assert (c.i32_register_count, c.ref_register_count) == (2, 6)
    assert [m.function_name(i) for i in range(3)] == ["f32_user", "yielder", "caller"]
    assert [s.cconv.text for s in m.signatures] == ["0fIr_f", "0v_v", "0v_I"]


def test_named_globals_are_laid_out_like_iree_as_module():
    b = ModuleBuilder("g")
    add_functions(b, """
vm.global.i64 private mutable @wide = 0 : i64
vm.global.i32 mutable @a
vm.global.ref private mutable @buf : !vm.buffer
vm.global.f32 @b = 0.0 : f32
vm.export @set
vm.func @set(%i0: i32) -> () {
  vm.global.store.i32 %i0, @a
  %i2:3 = vm.global.load.i64 @wide
  %r0 = vm.global.load.ref @buf : !vm.buffer
  vm.return
}
""")
    m = load_module(b.to_bytes())
    assert (m.global_bytes, m.global_refs) == (16, 1)  # a@0, b@4, wide@8; buf is ref 0
    text = dump_text(m, summary=False)
    assert "vm.global.store.i32 %i0, .rwdata[0]" in text
    assert "%i2:3 = vm.global.load.i64 .rwdata[8]" in text
    assert "%r0 = vm.global.load.ref .refs[0] : !vm.buffer" in text


def test_add_functions_calls_share_one_module():
    b = ModuleBuilder("parts")
    b.add_import("other.f", "0i_i")
    add_functions(b, """
vm.export @main
vm.func @main(%i0: i32) -> (i32) {
  %i1 = vm.call @helper(%i0)
  vm.return %i1
}
""")
    add_functions(b, """
vm.func @helper(%i0: i32) -> (i32) {
  %i1 = vm.call @other.f(%i0)
  vm.return %i1
}
""")
    m = load_module(b.to_bytes())
    text = dump_text(m, summary=False)
    assert "%i1 = vm.call @parts.helper(%i0)" in text
    assert "%i1 = vm.call @other.f(%i0)" in text


def test_rodata_placement_can_be_chosen():
    b = ModuleBuilder("place")
    b.add_rodata(b"x" * (MAX_EMBEDDED - 1))
    b.add_rodata(b"y" * 10, external=True, alignment=32)
    b.add_rodata(np.zeros(MAX_EMBEDDED, np.uint8), external=False)
    add_functions(b, "vm.func @f() -> () {\n  vm.return\n}")
    m = load_module(b.to_bytes())
    assert [r.external for r in m.rodata] == [False, True, False]
    assert m.rodata[1].offset % 32 == 0
    with pytest.raises(BuildError, match="power of two"):
        b.add_rodata(b"z", alignment=48)


def test_big_endian_arrays_are_written_little_endian():
    b = ModuleBuilder("endian")
    b.add_rodata(np.array([1, 2], dtype=">u4"))
    add_functions(b, "vm.func @f() -> () {\n  vm.return\n}")
    assert bytes(load_module(b.to_bytes()).rodata[0].data) == struct.pack("<II", 1, 2)


def test_a_failing_stream_leaves_no_file(tmp_path):
    b = ModuleBuilder("bad")
    values = np.zeros(1 << 20, np.int16)
    values[-1] = 100  # does not fit 4 bits: found while streaming
    b.add_rodata(values, bits=4)
    add_functions(b, "vm.func @f() -> () {\n  vm.return\n}")
    path = tmp_path / "bad.vmfb"
    with pytest.raises(BuildError, match=r"rodata\[0\]: element 1048575 = 100 does not fit in 4 bits"):
        b.write(path)
    assert list(tmp_path.iterdir()) == []


SWITCH_REF = """
vm.module @sw version 0
vm.rodata[0] = 0A
vm.rodata[1] = 0B
vm.rodata[2] = 0C
vm.export @pick
vm.func @pick(%i0: i32) -> (i32) {
  %r0 = vm.const.ref.rodata 0
  %r1 = vm.const.ref.rodata 1
  %r2 = vm.const.ref.rodata 2
  %r3 = vm.switch.ref %i0[%r0, %r1] else %r2 -> !vm.buffer
  %i2:3 = vm.const.i64.zero
  %i1 = vm.buffer.load.i8.u %r3, %i2:3
  vm.return %i1
}
"""


@RUNTIMES
def test_switch_ref_carries_its_type_through_the_text(tmp_path, call):
    """switch.ref encodes a type the dump form must show for the line to reassemble."""
    from jitvm.frontend.asm import assemble

    path = tmp_path / "sw.vmfb"
    path.write_bytes(assemble(SWITCH_REF))
    text = dump_text(load_module(path), summary=False)
    assert "%r3 = vm.switch.ref %i0[%r0, %r1] else %r2 -> !vm.buffer" in text
    assert dump_text(load_module(assemble(text)), summary=False) == text
    assert [call(path, "pick", i)[0] for i in (0, 1, 2, -1)] == [0x0A, 0x0B, 0x0C, 0x0C]


def test_list_of_any_is_written_as_opaque(tmp_path):
    """`!vm.list<?>` (MLIR's spelling) assembles to the `!vm.opaque` element iree-as-module
    writes, which the verifier accepts; `?` alone is not a type-table name."""
    from jitvm.frontend.asm import assemble
    from jitvm.verify import verify_module

    text = """
vm.module @anylist version 0
vm.export @f
vm.func @f() -> (i32) {
  %i0 = vm.const.i32 3
  %r0 = vm.list.alloc %i0 : !vm.list<?>
  vm.list.resize %r0, %i0
  %i1 = vm.list.size %r0
  vm.return %i1
}
"""
    module = load_module(assemble(text))
    assert list(module.types) == ["!vm.opaque"]
    verify_module(module)
