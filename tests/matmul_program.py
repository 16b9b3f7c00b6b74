"""A matmul-shaped VM function, the loop nest VMVX kernels have, for the jam tests.

@mm(out, a, b, M, N, K): out[i*N + j] += over k of a[i*K + k] * b[k*N + j], in place (the
reduction reads and writes the output element in the innermost loop, as VMVX code does);
with `transposed_b`, b[j*K + k] (the right-hand side stored transposed, as nn.Linear's
weights reach a matmul from ONNX).
Each extent comes from its argument unless given as a constant (constant trip counts are
what register blocking needs); `fused` accumulates with vm.fma.f32, else a mul and an add.
"""

from __future__ import annotations

_TEMPLATE = """
vm.module @matmul version 0
vm.export @mm
vm.func @mm(%r0: !vm.buffer, %r1: !vm.buffer, %r2: !vm.buffer, %i0: i32, %i1: i32, %i2: i32) -> () {
^bb0:
  ROWS
  COLS
  DEPTH
  %i10:11 = vm.const.i64.zero
  %i12:13 = vm.const.i64 1
  vm.br ^bb1(%i10->%i14, %i11->%i15)
^bb1:
  %i3 = vm.cmp.lt.i64.s %i14:15, %i4:5
  vm.cond_br %i3, ^bb2(), ^bb9()
^bb2:
  vm.br ^bb3(%i10->%i16, %i11->%i17)
^bb3:
  %i3 = vm.cmp.lt.i64.s %i16:17, %i6:7
  vm.cond_br %i3, ^bb4(), ^bb8()
^bb4:
  %i18:19 = vm.fma.i64 %i14:15, %i6:7, %i16:17
  vm.br ^bb5(%i10->%i20, %i11->%i21)
^bb5:
  %i3 = vm.cmp.lt.i64.s %i20:21, %i8:9
  vm.cond_br %i3, ^bb6(), ^bb7()
^bb6:
  %i22:23 = vm.fma.i64 %i14:15, %i8:9, %i20:21
  %i24 = vm.buffer.load.f32 %r1, %i22:23
  RHS_INDEX
  %i25 = vm.buffer.load.f32 %r2, %i26:27
  %i28 = vm.buffer.load.f32 %r0, %i18:19
  ACCUMULATE
  vm.buffer.store.f32 %i28, %r0, %i18:19
  %i20:21 = vm.add.i64 %i20:21, %i12:13
  vm.br ^bb5()
^bb7:
  %i16:17 = vm.add.i64 %i16:17, %i12:13
  vm.br ^bb3()
^bb8:
  %i14:15 = vm.add.i64 %i14:15, %i12:13
  vm.br ^bb1()
^bb9:
  vm.return
}
"""

_FUSED = "%i28 = vm.fma.f32 %i24, %i25, %i28"
_UNFUSED = "%i29 = vm.mul.f32 %i24, %i25\n  %i28 = vm.add.f32 %i28, %i29"


_RHS = "%i26:27 = vm.fma.i64 %i20:21, %i6:7, %i16:17"  # k*N + j
_RHS_TRANSPOSED = "%i26:27 = vm.fma.i64 %i16:17, %i8:9, %i20:21"  # j*K + k


def matmul_vmasm(rows: int | None = None, cols: int | None = None, depth: int | None = None,
                 fused: bool = True, transposed_b: bool = False) -> str:
    def extent(value, reg: int, arg: int) -> str:
        return f"%i{reg}:{reg + 1} = " + (f"vm.ext.i32.i64.s %i{arg}" if value is None else f"vm.const.i64 {value}")

    return (_TEMPLATE.replace("ROWS", extent(rows, 4, 0)).replace("COLS", extent(cols, 6, 1))
            .replace("DEPTH", extent(depth, 8, 2)).replace("ACCUMULATE", _FUSED if fused else _UNFUSED)
            .replace("RHS_INDEX", _RHS_TRANSPOSED if transposed_b else _RHS))


def run_matmul(inst, m: int, n: int, k: int, seed: int, out_rows: int | None = None,
               overlap: bool = False) -> bytes:
    """One call of @mm on seeded random buffers; the output's bytes after it. The output has
    `out_rows` rows (default m); with `overlap` it is also the right-hand side."""
    import numpy as np

    from jitvm.runtime.vm.objects import VmBuffer

    rng = np.random.default_rng(seed)
    a = VmBuffer.from_bytes(rng.standard_normal(m * k).astype(np.float32).tobytes())
    out = VmBuffer.from_bytes(rng.standard_normal((out_rows or m) * n).astype(np.float32).tobytes())
    b = out if overlap else VmBuffer.from_bytes(rng.standard_normal(k * n).astype(np.float32).tobytes())
    inst.lookup("mm").call([out, a, b, m, n, k])
    return out.tobytes()
