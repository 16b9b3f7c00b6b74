"""The module-level names generated code runs with: runtime helpers and trap kinds.

Handlers write these names into the code they generate; this is the one place that binds
them. Every generated module gets a fresh copy (its constants are added to it).
"""

from __future__ import annotations

import builtins

from ..runtime.vm import listops, nativelib, traps
from . import buffers, floats, frames


def _trap_kinds() -> dict:
    return {f"K_{name}": kind for name, kind in vars(traps).items() if isinstance(kind, traps.TrapKind)}


def namespace() -> dict:
    ns = {
        "__builtins__": builtins,
        "BA": bytearray,
        "MV": memoryview,
        # references
        "RET": nativelib.fn.jv_retain,
        "REL": nativelib.fn.jv_release,
        "TID": buffers.type_id,
        # traps
        "TRAP": traps.make_trap,
        "UNWIND": frames.unwind,
        # buffers
        "BV": buffers.view,
        "NOVIEW": buffers.NOVIEW,
        "OOB": buffers.out_of_range,
        "STF": buffers.store_failed,
        "BFILL": buffers.fill,
        "BCOPY": buffers.copy,
        "BCMP": buffers.compare,
        "BHASH": buffers.hash_range,
        "BALLOC": buffers.alloc,
        "BCLONE": buffers.clone,
        # lists (IREE's rules, shared with the JIT)
        "LDEREF": listops.deref,
        "LGETV": listops.get_value,
        "LSETV": listops.set_value,
        "LGETR": listops.get_ref,
        "LSETR": listops.set_ref,
        # floats
        "FDIV0": floats.divide_by_zero,
        "NAN1": floats.first_nan,
        "NAN1B32": floats.first_nan_f32,
        "FMANAN32": floats.fused_fma_nan("f32"),
        "FMANAN64": floats.fused_fma_nan("f64"),
        "I2F32": floats.int_to_f32,
        "REVEN32": floats.round_even_f32,
        "REVEN64": floats.round_even_f64,
        "CASTF32U64": nativelib.fn.jv_cast_f32_ui64,
    }
    ns.update(_trap_kinds())
    return ns
