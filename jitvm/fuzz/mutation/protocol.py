"""What a worker tells the pool: the status of each mutant, and the phase it is in.

Apart from the pool so that checks and runners (which run inside workers) can report a
phase without importing the pool's process machinery.
"""

from __future__ import annotations

from typing import Callable

ACCEPTED, REJECTED, BUG, CRASH, HANG = "accepted", "rejected", "bug", "crash", "hang"
SLOW_CALL = "slow_call"  # accepted; one of its calls ran past the call budget (and was stopped)

# Phases a worker reports; a timeout in one of SLOW_PHASES is SLOW_CALL, elsewhere a HANG.
PHASES = ("load", "compile", "init", "call")
SLOW_PHASES = ("init", "call")

_sink: Callable | None = None  # set in a worker for the mutant it is on


def set_sink(sink: Callable | None) -> None:
    """Where `phase` reports go (the worker's pipe while it works on a mutant), or None."""
    global _sink
    _sink = sink


def phase(name: str, what: str = "", counts: dict | None = None) -> None:
    """Tells the parent what this worker is doing now (a no-op outside a pool worker).

    `name` is one of PHASES; `what` names the thing (an export and its argument set);
    `counts` so far are kept by the parent in case the worker never answers again.
    """
    if _sink is not None:
        _sink(name, what, counts)
