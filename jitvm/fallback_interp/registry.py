"""The interpreter's per-op handlers: one table built from every op family's own.

A handler is `handler(emitter, instruction)`: it writes the Python statements that execute
one instruction (see codegen.FunctionEmitter) and lives next to the semantics of its op
family (fallback_interp/ops_*.py). `HANDLERS.missing()` names ops nobody handles;
tests/test_isa_coverage.py keeps it empty.
"""

from __future__ import annotations

from ..frontend.handlers import OpHandlers
from . import ops_buffers, ops_control, ops_float, ops_globals, ops_int, ops_lists, ops_refs

HANDLERS = OpHandlers("interpreter", ops_buffers.handles, ops_control.handles, ops_float.handles,
                      ops_globals.handles, ops_int.handles, ops_lists.handles, ops_refs.handles)
