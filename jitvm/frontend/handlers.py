"""Per-op handler tables keyed by the ISA table's op names.

Each op-family module of a backend keeps its own table (`lowers = OpHandlers("lowering")`,
then `@lowers("add.i32", ...)` on its handlers); the backend's registry is one table built
from those, explicitly (`OpHandlers("lowering", ops_arith.lowers, ...)`), so no global
dict is filled by whichever modules happen to be imported. Names are checked against the
ISA table when registered, and a test keeps `missing()` empty.
"""

from __future__ import annotations

from typing import Callable

from . import isa


class OpHandlers:
    """Handlers by op name: a decorator to register them, lookups, the ops left without one."""

    def __init__(self, what: str, *parts: "OpHandlers"):
        self.what = what
        self.by_name: dict[str, Callable] = {}
        for part in parts:
            for name, fn in part.by_name.items():
                self._put(name, fn)

    def _put(self, name: str, fn: Callable) -> None:
        if name not in isa.OPS_BY_NAME:
            raise KeyError(f"{self.what} registered for unknown op {name!r}")
        if name in self.by_name:
            raise KeyError(f"op {name!r} has two {self.what} handlers")
        self.by_name[name] = fn

    def __call__(self, *names: str):
        """Registers the decorated function as the handler of every op in `names`."""
        def register(fn):
            for name in names:
                self._put(name, fn)
            return fn
        return register

    def handler(self, name: str) -> Callable | None:
        return self.by_name.get(name)

    def missing(self) -> list[str]:
        return sorted(n for n in isa.OPS_BY_NAME if n not in self.by_name)
