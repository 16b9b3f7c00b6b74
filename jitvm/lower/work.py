"""How much a kernel's workgroup does, estimated from its loop nests: which code is worth
the full tier before its first call (lower.lazy).

The estimate counts buffer element accesses: each access in a nest (lower.loops.analysis)
times the static trip counts of the loops around it (a loop whose count is not a constant
counts once, so the estimate errs low: code stays on the quick baseline tier).
"""

from __future__ import annotations

import math
import weakref

_known: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # VerifiedFunction -> its estimate


def accesses_per_workgroup(vf) -> int:
    """Buffer element accesses one run of `vf` makes, as far as its trip counts are constants."""
    total = _known.get(vf)
    if total is None:
        from .loops.analysis import find_nests, static_trips  # the loop analysis only when something compiles

        total = 0
        for nest in find_nests(vf):
            trips = {loop.id: static_trips(vf, loop) for loop in nest.loops}
            total += sum(math.prod(trips[i] or 1 for i in access.loops) for access in nest.accesses)
        _known[vf] = total
    return total
