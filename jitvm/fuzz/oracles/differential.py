"""Running a generated program under both backends and comparing everything it shows.

Each program is assembled once (jitvm.frontend.asm.assemble) and instantiated under the
reference interpreter and the JIT. Its calls run in order in each instance, so module
state carries over; after every call the program's `observe` function (if any) returns
the whole module state (value globals as i64 words, every ref global), compared too.

Outcomes are compared with calls.py's `outcome`/`same_outcome`: results bit for bit (NaN
payloads included), traps by status name and message. On top of that, refs are compared
by content (buffers: length, mutability and bytes; lists: mode, element type, size and
elements) and by identity pattern (which results are the same object).

The one tolerated difference (see `jitvm/lower/emit/ops_float.py:_first_nan_wins`): in the
JIT's guarded fast copy of a loop nest, an add or mul that meets two NaNs with different
payloads may return either. Only values computed in loops of functions with buffer
accesses in loops are affected; the generator marks those (kernel results, and the float
buffers kernels store to) and only there two NaNs of the same width compare equal.
Everything else, including every NaN outside such loops, must match to the bit.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import numpy as np

from jitvm.frontend.asm import assemble
from jitvm.lower.backend import STATS
from jitvm.runtime.vm.objects import Ref, VmBuffer, VmList

from ..generators.emit import Program
from .calls import describe, instantiate, outcome, same_outcome, same_value, show

_DTYPES = {"f32": np.float32, "f64": np.float64}


@dataclass
class Report:
    calls: int = 0
    traps: int = 0
    problems: list[str] = field(default_factory=list)


def _buffer_equal(a: VmBuffer, b: VmBuffer, loose: str | None) -> bool:
    if a.length != b.length or a.mutable != b.mutable:
        return False
    x, y = a.tobytes(), b.tobytes()
    if x == y:
        return True
    if loose is None:
        return False
    dt = _DTYPES[loose]
    n = len(x) // np.dtype(dt).itemsize * np.dtype(dt).itemsize
    if x[n:] != y[n:]:
        return False
    u = np.frombuffer(x[:n], dt)
    v = np.frombuffer(y[:n], dt)
    same_bits = np.frombuffer(x[:n], np.uint8).reshape(-1, np.dtype(dt).itemsize) == \
        np.frombuffer(y[:n], np.uint8).reshape(-1, np.dtype(dt).itemsize)
    return bool(np.all(same_bits.all(axis=1) | (np.isnan(u) & np.isnan(v))))


def _canon(obj, depth: int = 0):
    """A comparable picture of a value: refs by content (lists recursively, three deep)."""
    if isinstance(obj, VmBuffer):
        return ("buffer", obj.length, obj.mutable, obj.tobytes())
    if isinstance(obj, VmList):
        s = obj.struct
        items = []
        if depth < 3:
            for i in range(len(obj)):
                items.append(_canon(obj.get(i), depth + 1))
        return ("list", s.mode, s.element_type, len(obj), tuple(items))
    if isinstance(obj, Ref):
        return ("ref", obj.type_name)
    if isinstance(obj, float):
        return ("float", struct.pack("<d", obj))
    return (type(obj).__name__, obj)


def _identity(results) -> tuple:
    seen: dict[int, int] = {}
    out = []
    for i, r in enumerate(results):
        if isinstance(r, Ref):
            out.append(seen.setdefault(r.addr, i))
        else:
            out.append(None)
    return tuple(out)


def agree(a, b, loose=frozenset(), loose_refs=None) -> bool:
    """Same outcome; `loose` result positions let two NaNs match, `loose_refs` maps result
    positions of float buffers to their dtype for an element-wise NaN-tolerant compare."""
    loose_refs = loose_refs or {}
    if not same_outcome(a, b):
        if a[0] != "ok" or b[0] != "ok" or len(a[1]) != len(b[1]):
            return False
        for i, (x, y) in enumerate(zip(a[1], b[1])):
            if same_value(x, y):
                continue
            if i in loose and isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
                continue
            return False
    if a[0] != "ok":
        return True
    if _identity(a[1]) != _identity(b[1]):
        return False
    for i, (x, y) in enumerate(zip(a[1], b[1])):
        if isinstance(x, VmBuffer) and isinstance(y, VmBuffer):
            if not _buffer_equal(x, y, loose_refs.get(i)):
                return False
        elif isinstance(x, Ref) or isinstance(y, Ref):
            if _canon(x) != _canon(y):
                return False
    return True


def _differences(a, b, loose_refs=None) -> str:
    """Where two "ok" outcomes differ: result positions, and the first differing bytes of buffers."""
    if a[0] != "ok" or b[0] != "ok" or len(a[1]) != len(b[1]):
        return ""
    out = []
    for i, (x, y) in enumerate(zip(a[1], b[1])):
        if isinstance(x, VmBuffer) and isinstance(y, VmBuffer):
            if not _buffer_equal(x, y, (loose_refs or {}).get(i)):
                bx, by = x.tobytes(), y.tobytes()
                at = next((k for k in range(min(len(bx), len(by))) if bx[k] != by[k]), min(len(bx), len(by)))
                lo = max(0, at - 8)
                out.append(f"result {i}: buffer of {x.length}/{y.length} bytes differs from byte {at}: "
                           f"{bx[lo:at + 24].hex()} != {by[lo:at + 24].hex()}")
        elif isinstance(x, Ref) or isinstance(y, Ref):
            if _canon(x) != _canon(y):
                out.append(f"result {i}: {str(_canon(x))[:150]} != {str(_canon(y))[:150]}")
        elif not same_value(x, y):
            out.append(f"result {i}: {describe(x)} != {describe(y)}")
    return "\n    ".join(out)


def _show(o) -> str:
    if o[0] == "ok":
        parts = []
        for v in o[1]:
            if isinstance(v, VmBuffer):
                parts.append(f"buffer[{v.length}{'' if v.mutable else ' ro'}]={v.tobytes()[:64].hex()}")
            elif isinstance(v, VmList):
                parts.append(f"list{_canon(v)[1:]}"[:200])
            else:
                parts.append(describe(v))
        return "[" + ", ".join(parts) + "]"
    return show(o)


def assemble_program(program: Program) -> bytes:
    return assemble(program.text, "<fuzz>")


def run_program(program: Program, backends: dict, vmfb: bytes | None = None) -> Report:
    """Runs every call of `program` under each backend ("interp" and "jit"); mismatches in
    `Report.problems`."""
    vmfb = vmfb if vmfb is not None else assemble_program(program)
    fallbacks = STATS["fallback_functions"]
    insts = {name: instantiate(vmfb, be)[1] for name, be in backends.items()}
    if STATS["fallback_functions"] != fallbacks:
        return Report(problems=["the JIT fell back to the interpreter for some function"])
    report = Report()
    observe_loose = {}
    if program.observe:
        observe_loose = {program.observe_values + k: dt for k, dt in program.loose_ref_globals.items()}

    def call(name, args, loose=frozenset(), loose_refs=None, label=None):
        got = {k: outcome(inst.lookup(name), args) for k, inst in insts.items()}
        report.calls += 1
        if got["interp"][0] == "trap":
            report.traps += 1
        if not agree(got["interp"], got["jit"], loose, loose_refs):
            shown = ", ".join(map(describe, args))
            diff = _differences(got["interp"], got["jit"], loose_refs)
            report.problems.append(f"{label or ''}@{name}({shown}):\n    interp {_show(got['interp'])[:600]}\n"
                                   f"    jit    {_show(got['jit'])[:600]}" + (f"\n    {diff}" if diff else ""))
            return False
        return True

    if program.setup:
        call(program.setup, [])
    for name, args, loose in program.calls():
        ok = call(name, args, loose)
        if program.observe:
            ok = call(program.observe, [], loose_refs=observe_loose, label=f"state after @{name}: ") and ok
        if not ok:
            break  # later calls would only repeat a diverged state
    return report
