"""How a module's functions split into units of compilation, and which ones run only once.

A unit is a set of functions calling each other (a connected component of the internal
call graph): calls inside a unit are direct, calls between units go through the module's
function table. Run-once code (`__init`, `__deinit`, an executable's `__set_constants`, and
what only they call) is not worth compiling: the lazy JIT runs it in the interpreter.
"""

from __future__ import annotations

RUN_ONCE_EXPORTS = ("__init", "__deinit", "__set_constants")


def call_components(verified) -> list[list[int]]:
    """The connected components of the internal call graph, each sorted, in ordinal order
    of their first function."""
    parent = list(range(len(verified.functions)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for vf in verified.functions:
        for site in vf.calls.values():
            if not site.is_import:
                parent[find(vf.ordinal)] = find(site.callee)
    components: dict[int, list[int]] = {}
    for o in range(len(parent)):
        components.setdefault(find(o), []).append(o)
    return sorted(components.values(), key=lambda c: c[0])


def reachable(verified, roots) -> set[int]:
    """The internal functions `roots` call, directly or not, and the roots themselves."""
    seen, todo = set(), list(roots)
    while todo:
        o = todo.pop()
        if o in seen:
            continue
        seen.add(o)
        todo.extend(site.callee for site in verified.functions[o].calls.values() if not site.is_import)
    return seen


def run_once(verified) -> set[int]:
    """Functions only the run-once exports reach: nothing else the module exports calls them."""
    exports = verified.module.exports
    once = [e.internal_ordinal for e in exports if e.name in RUN_ONCE_EXPORTS]
    others = [e.internal_ordinal for e in exports if e.name not in RUN_ONCE_EXPORTS]
    return reachable(verified, once) - reachable(verified, others)
