"""The JIT's per-op lowering handlers: one table built from every op family's own.

A handler is `handler(emitter, instruction)` and lives next to the semantics of its op
family (lower/emit/ops_*.py). `LOWERINGS.missing()` names ops nobody lowers;
tests/test_isa_coverage.py keeps it empty.
"""

from __future__ import annotations

from ...frontend.handlers import OpHandlers
from . import ops_arith, ops_control, ops_float, ops_lists, ops_memory, ops_refs

LOWERINGS = OpHandlers("lowering", ops_arith.lowers, ops_control.lowers, ops_float.lowers, ops_lists.lowers,
                       ops_memory.lowers, ops_refs.lowers)
