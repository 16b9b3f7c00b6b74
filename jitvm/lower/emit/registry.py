"""Per-op lowering handlers, registered against the ISA table's op names.

Each handler is `handler(emitter, instruction)` and lives next to the semantics of its op
family (lower/emit/ops_*.py). `missing()` names ops nobody lowers;
tests/test_isa_coverage.py keeps it empty.
"""

from __future__ import annotations

from typing import Callable

from ...frontend import isa

HANDLERS: dict[str, Callable] = {}


def lowers(*names: str):
    """Registers the decorated function as the lowering of every op in `names`."""
    def register(fn):
        for name in names:
            if name not in isa.OPS_BY_NAME:
                raise KeyError(f"lowering registered for unknown op {name!r}")
            if name in HANDLERS:
                raise KeyError(f"op {name!r} lowered twice")
            HANDLERS[name] = fn
        return fn
    return register


def handler(name: str) -> Callable | None:
    return HANDLERS.get(name)


def missing() -> list[str]:
    _load_all()
    return sorted(n for n in isa.OPS_BY_NAME if n not in HANDLERS)


def _load_all() -> None:
    from . import ops_arith, ops_control, ops_float, ops_lists, ops_memory, ops_refs  # noqa: F401
