"""A delinearised chunk that walks channels (lower.loops.jam, lower.loops.delinearise).

IREE tiles some depthwise convolutions channel innermost (EfficientNet-Lite0's, exported
through ONNX): the flat loop's chunk walks the channels, and each copy's accumulator lies a
channel plane further on, a stride held in an entry-block constant register rather than a
literal. Such a chunk is jammed like one that walks columns. The kernel below has that
shape; the JIT must give the interpreter's bytes and traps with the jam, also where planes
overlap (stride 1 or negative: different chunks then share elements, and only the chunks'
order keeps the additions' order).
"""

from __future__ import annotations

import numpy as np
import pytest

import jitvm
from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.lower.loops import jam
from jitvm.lower.loops.delinearise import ChunkPlan
from jitvm.lower.loops.versioning import NestVersioning
from jitvm.runtime.vm.objects import VmBuffer
from jitvm.verify import verify_module
from tests.test_jit_delinearise import _FLOOR

# @dw(out, in, C, H, K, off): for i in [0, H*C): h, c = delinearise(i) by C (c innermost);
# for k in [0, K): out[off + c*S + h] += in[c*T + h + k] * in[c*T + k], S and T constants.
CHANNELS = """
vm.module @dw version 0
vm.export @dw
vm.func @dw(%r0: !vm.buffer, %r1: !vm.buffer, %i0: i32, %i1: i32, %i2: i32, %i3: i32) -> () {{
^bb0:
  %i4:5 = vm.ext.i32.i64.s %i0
  %i6:7 = vm.ext.i32.i64.s %i1
  %i8:9 = vm.ext.i32.i64.s %i2
  %i10:11 = vm.ext.i32.i64.s %i3
  %i12:13 = vm.mul.i64 %i6:7, %i4:5
  %i14:15 = vm.const.i64.zero
  %i16:17 = vm.const.i64 1
  %i18:19 = vm.const.i64 -1
  %i40:41 = vm.const.i64 {plane}
  %i42:43 = vm.const.i64 {taps}
  vm.br ^bb1(%i14->%i20, %i15->%i21)
^bb1:
  %i22 = vm.cmp.lt.i64.s %i20:21, %i12:13
  vm.cond_br %i22, ^bb2(), ^bb6()
^bb2:
{floor}
  %i28:29 = vm.fma.i64 %i26:27, %i40:41, %i24:25
  %i28:29 = vm.add.i64 %i28:29, %i10:11
  %i44:45 = vm.mul.i64 %i26:27, %i42:43
  vm.br ^bb3(%i14->%i30, %i15->%i31)
^bb3:
  %i32 = vm.cmp.lt.i64.s %i30:31, %i8:9
  vm.cond_br %i32, ^bb4(), ^bb5()
^bb4:
  %i34:35 = vm.add.i64 %i44:45, %i30:31
  %i38 = vm.buffer.load.f32 %r1, %i34:35
  %i34:35 = vm.add.i64 %i34:35, %i24:25
  %i36 = vm.buffer.load.f32 %r1, %i34:35
  %i39 = vm.buffer.load.f32 %r0, %i28:29
  %i39 = vm.fma.f32 %i36, %i38, %i39
  vm.buffer.store.f32 %i39, %r0, %i28:29
  %i30:31 = vm.add.i64 %i30:31, %i16:17
  vm.br ^bb3()
^bb5:
  %i20:21 = vm.add.i64 %i20:21, %i16:17
  vm.br ^bb1()
^bb6:
  vm.return
}}
"""
TAPS = 40  # T: each channel's input row
H, K = 5, 4


def _source(plane: int) -> str:
    # h = floordiv(i, C) into %i24, c = floormod(i, C) into %i26
    return CHANNELS.format(plane=plane, taps=TAPS, floor=_FLOOR.format(x="%i20:21", n="%i4:5", q="%i24:25", r="%i26:27"))


@pytest.mark.parametrize("plane", [H, 1, -3])
def test_a_chunk_over_channels_is_jammed(plane):
    vf = verify_module(load_module(assemble(_source(plane), "<dw>"))).functions[0]
    (chunked,) = [n for n in NestVersioning().nests(vf).values() if isinstance(n, ChunkPlan)]
    plan = jam.plan(vf, chunked.chunk)
    assert plan is not None and plan.loop.id == chunked.chunk.root.id and plan.factor == 16


@pytest.fixture(scope="module")
def backends():
    return {"jit": JitBackend(use_cache=False, progress=False, threads=1), "interp": InterpreterBackend()}


def _run(inst, channels: int, plane: int, off: int, out_size: int):
    rng = np.random.default_rng(channels)
    data = rng.standard_normal(channels * TAPS + H + K).astype(np.float32)
    start = rng.standard_normal(out_size).astype(np.float32)
    dst, src = VmBuffer.from_bytes(start.tobytes()), VmBuffer.from_bytes(data.tobytes())
    try:
        inst.lookup("dw").call([dst, src, channels, H, K, off])
    except jitvm.Trap as e:
        return ("trap", e.status_name, e.message)
    return dst.tobytes()


@pytest.mark.parametrize("channels", [3, 16, 17, 37, 64])
@pytest.mark.parametrize("plane", [H, 1, -3])
def test_channel_chunks_agree_with_the_interpreter(backends, channels, plane):
    vmfb = assemble(_source(plane), "<dw>")
    off = -plane * (channels - 1) if plane < 0 else 0  # the lowest element is 0
    size = off + max(plane, 0) * (channels - 1) + H  # ... and the highest size - 1
    got = {name: _run(instantiate(vmfb, be)[1], channels, plane, off, size) for name, be in backends.items()}
    assert not isinstance(got["interp"], tuple)
    assert got["jit"] == got["interp"]
    # too small an output: the checked copy runs and traps where the interpreter does
    got = {name: _run(instantiate(vmfb, be)[1], channels, plane, off, size - 1) for name, be in backends.items()}
    assert isinstance(got["interp"], tuple) and got["jit"] == got["interp"]
