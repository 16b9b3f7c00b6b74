"""The reference interpreter: every VM op executed in Python with IREE's exact semantics.

Each verified function is translated once into Python source (codegen) from per-op
handlers registered against the ISA table (registry, ops_*.py) and compiled by CPython; a
register file is a zeroed bytearray seen through typed memoryviews, exactly IREE's layout,
so values written as one type and read as another alias as they do in IREE. The JIT must
produce bit-identical results and the same traps; both backends share runtime.vm.traps
(kinds and messages), runtime.vm.listops, runtime.vm.hashing, runtime.native.mathlib (libm) and
runtime.vm.semantics (host facts: fused fma, float->u64 conversion, call depth).

IREE behaviour pinned down by experiment against iree-base-runtime 3.13 (x86_64):
  * vm.fma.f32/f64 is a multiply then an add, each rounded (not fused);
  * when both operands of a float op are NaN the first one wins, quieted (x86 SSE);
  * vm.round.f32.even / f64.even follow IREE's fallback: round, then move ties to the even
    neighbour, so -0.5 rounds to +0.0 (roundeven would give -0.0);
  * vm.cast.f32.ui64 is exact up to 2^64 (1e19 -> 9999999980506447872) and gives INT64_MIN
    for NaN, infinities, values >= 2^64 and < -2^63; negative values wrap (-1.0 -> -1);
    f32 -> i32/u32/i64 go through lroundf/llroundf (NaN -> 0 in 32 bits, INT64_MIN in 64),
    f64 -> i32/u32 through lroundf/llroundf of the double rounded to float;
  * vm.switch.i64 reads its cases through the i32 register view, sign-extended;
  * a remap list copies one 32-bit slot per entry, in order (an i64 remapped as one entry
    moves only its low half; the compiler emits two entries); calls and returns pass i64
    and f64 values whole;
  * checked ref transfers against `!vm.opaque` fail for every non-null ref ("source ref type
    mismatch"), and vm.list.get.ref with that type yields null;
  * vm.fail with status 0 continues with the next block; other statuses keep their low 5
    bits (0 -> UNKNOWN);
  * vm.trace and vm.print print nothing; vm.break and vm.cond_break are plain branches;
  * IREE's stack holds about 6,475 frames of a small function (1 MiB: 128 bytes per
    bytecode frame plus its registers); jitvm bounds calls at runtime.vm.semantics
    .MAX_CALL_DEPTH frames in both backends (RESOURCE_EXHAUSTED beyond).
Where IREE's C runtime dies instead of failing (SIGFPE on integer division by zero and
INT_MIN / -1 or INT_MIN % -1; wild reads when an offset computation wraps) jitvm traps with
INVALID_ARGUMENT / OUT_OF_RANGE.
"""

from .backend import InterpExecutable, InterpreterBackend

__all__ = ["InterpExecutable", "InterpreterBackend"]
