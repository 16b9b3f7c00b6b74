"""Signalling-NaN f32 constants are moved as bits, as IREE does: decoded, re-encoded and run
under both backends and iree.runtime, they come back still signalling, payload intact.

Neither assembler syntax can spell an sNaN (iree-as-module reads floats with strtof, the
dump prints `nan`), so the module is assembled with a placeholder constant whose bytes are
then replaced in the bytecode.
"""

from __future__ import annotations

import struct

import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend import load_module
from jitvm.frontend.asm import assemble
from jitvm.frontend.decode import decode_function
from jitvm.frontend.asm.encode import encode_function
from jitvm.frontend.floatbits import f32_from_bits, f32_to_bits
from jitvm.fuzz.corpus import ArgSpec, Call
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.fuzz.oracles.iree import _rt, call_vmasm
from jitvm.lower.backend import JitBackend

PLACEHOLDERS = (1.25, -3.5)  # 0x3FA00000, 0xC0600000: replaced by the sNaNs below
SNANS = (0x7FA00001, 0xFF800001)

PROGRAM = """
vm.module @snan version 0
vm.export @constants
vm.func @constants() -> (i32, i32) {
  %i0 = vm.const.f32 1.25
  %i1 = vm.const.f32 -3.5
  %i2:3 = vm.const.i64 8
  %i4 = vm.const.i32 4
  %r0 = vm.buffer.alloc %i2:3, %i4
  %i6:7 = vm.const.i64.zero
  %i8:9 = vm.const.i64 1
  vm.buffer.store.f32 %i0, %r0, %i6:7
  vm.buffer.store.f32 %i1, %r0, %i8:9
  %i10 = vm.buffer.load.i32 %r0, %i6:7
  %i11 = vm.buffer.load.i32 %r0, %i8:9
  vm.return %i10, %i11
}
"""


@pytest.fixture(scope="module")
def module_path(tmp_path_factory):
    data = bytearray(assemble(PROGRAM))
    for placeholder, snan in zip(PLACEHOLDERS, SNANS):
        old, new = struct.pack("<f", placeholder), struct.pack("<I", snan)
        assert data.count(old) == 1
        data[data.index(old):data.index(old) + 4] = new
    path = tmp_path_factory.mktemp("snan") / "snan.vmfb"
    path.write_bytes(bytes(data))
    return path


def test_floatbits_round_trip_every_kind_of_f32():
    for bits in (*SNANS, 0x7FC00000, 0xFFC12345, 0x7F800000, 0x00000001, 0x80000000, 0x3F800000):
        assert f32_to_bits(f32_from_bits(bits)) == bits, hex(bits)


def test_decoder_and_encoder_keep_the_signalling_bit(module_path):
    m = load_module(module_path)
    code = bytes(m.function_bytes(0))
    ins = decode_function(code)
    values = [i["value"] for i in ins if i.op.name == "const.f32"]
    assert [f32_to_bits(v) for v in values] == list(SNANS)
    assert encode_function(ins) == code


@pytest.mark.parametrize("backend", [InterpreterBackend, lambda: JitBackend(use_cache=False, progress=False)],
                         ids=["interp", "jit"])
def test_backends_return_the_bits_iree_returns(module_path, backend):
    rt = _rt()
    instance = rt.VmInstance()
    vm = rt.VmModule.mmap(instance, str(module_path))
    ctx = rt.VmContext(instance, [vm])
    want = [v & 0xFFFFFFFF for v in call_vmasm(vm, ctx, Call("constants", ()), [])]
    assert want == list(SNANS)
    _ctx, inst = instantiate(module_path, backend())
    got = [v & 0xFFFFFFFF for v in inst.lookup("constants").call([])]
    assert got == want
