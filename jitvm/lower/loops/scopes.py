"""Alias scopes for the fast copy of a nest the jam leaves alone: one scope per buffer.

In a nest that stores to one buffer and loads from another (a dequantisation: an int8
weight times its row's scale, into a float buffer), LLVM cannot tell that the stores leave
the loaded bytes alone: it reloads every invariant load after each store and does not
vectorise. The guard already knows each access's element range; when the bytes the nest
stores to lie apart from every other buffer it accesses (jam.ranges_apart), a third copy
of the nest runs whose accesses carry one alias scope per buffer register, and LLVM may
then keep loads in registers and vectorise. When they overlap, the plain fast copy runs,
as before. Only proven accesses carry scopes (ops_memory), and the ranges cover exactly
those; any other access stays unscoped, so LLVM assumes it may alias anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from .analysis import Nest
from .jam import ranges_apart


@dataclass(frozen=True)
class ScopePlan:
    region: range  # the nest's blocks
    stored: tuple[int, ...]  # ref registers of the buffers the nest stores to
    others: tuple[int, ...]  # ref registers of the buffers it only loads from

    def keys(self) -> list[tuple[int, None]]:
        """The alias-scope names (buffer register, no jammed copy), as the lowering looks them up."""
        return [(r, None) for r in (*self.stored, *self.others)]


def plan(vf, nest: Nest) -> ScopePlan | None:
    """The buffers of `nest` to scope apart, when its proven stores could alias another
    buffer's proven accesses (else None)."""
    stored = tuple(sorted({a.buffer for a in nest.accesses if a.store}))
    others = tuple(sorted({a.buffer for a in nest.accesses} - set(stored)))
    if not stored or len(stored) + len(others) < 2:
        return None
    return ScopePlan(nest.blocks, stored, others)


def apart(e, scoped: ScopePlan, nest: Nest, ranges):
    """i1: the stored bytes lie apart from every other buffer's (emitted with the guard)."""
    return ranges_apart(e, scoped.region, scoped.stored, scoped.others, nest, ranges)
