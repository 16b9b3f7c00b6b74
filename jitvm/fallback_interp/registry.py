"""Per-op interpreter handlers, registered against the ISA table's op names.

A handler is `handler(emitter, instruction)`: it writes the Python statements that execute
one instruction (see codegen.FunctionEmitter) and lives next to the semantics of its op
family (fallback_interp/ops_*.py). `missing()` names ops nobody handles;
tests/test_isa_coverage.py keeps it empty.
"""

from __future__ import annotations

from typing import Callable

from ..frontend import isa

HANDLERS: dict[str, Callable] = {}


def handles(*names: str):
    """Registers the decorated function as the handler of every op in `names`."""
    def register(fn):
        for name in names:
            if name not in isa.OPS_BY_NAME:
                raise KeyError(f"interpreter handler registered for unknown op {name!r}")
            if name in HANDLERS:
                raise KeyError(f"op {name!r} has two interpreter handlers")
            HANDLERS[name] = fn
        return fn
    return register


def handler(name: str) -> Callable | None:
    load_all()
    return HANDLERS.get(name)


def missing() -> list[str]:
    load_all()
    return sorted(n for n in isa.OPS_BY_NAME if n not in HANDLERS)


def load_all() -> None:
    from . import ops_buffers, ops_control, ops_float, ops_globals, ops_int, ops_lists, ops_refs  # noqa: F401
