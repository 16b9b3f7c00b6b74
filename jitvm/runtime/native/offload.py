"""LLVM's work for the runtime done in another process, when the JIT provides one (issue 22, item 5).

Loading libLLVM touches some 35-40 MB of its pages (static initialisers across its 84 MB of
code) and compiling touches 20-25 MB more: on a cold load that was most of the gap between
jitvm's peak resident set and IREE's. The JIT's compile workers (lower.llvm.compile_pool)
load LLVM anyway, so the JIT installs a `Helper` here: this host's description
(runtime.native.target.host, when the store has none) and the runtime's own IR compiled to
object code (runtime.native.engine) then come from a worker, and a process that only lowers
and links never loads libLLVM. Without a helper, or when it fails, the work is done here.
"""

from __future__ import annotations

from typing import Protocol


class Helper(Protocol):
    def host_description(self) -> dict[str, str] | None:
        """What runtime.native.target asks LLVM about this host (triple, cpu, features, llvm)."""

    def compile_runtime(self, ir: str, opt: int) -> bytes | None:
        """Object code of runtime IR text for this host at `opt` (runtime.native.engine.compile_object)."""

    def prepare(self) -> None:
        """Starts the helper's process now (its start overlaps what the caller does next)."""


_helper: Helper | None = None


def install(helper: Helper | None) -> None:
    """Where LLVM work goes from now on (None: this process)."""
    global _helper
    _helper = helper


def installed() -> Helper | None:
    return _helper


def host_description() -> dict[str, str] | None:
    return _helper.host_description() if _helper is not None else None


def compile_runtime(ir: str, opt: int) -> bytes | None:
    return _helper.compile_runtime(ir, opt) if _helper is not None else None
