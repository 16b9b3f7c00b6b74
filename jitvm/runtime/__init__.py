"""jitvm's runtime (native/, vm/, exec/, modules/), and the iree.runtime drop-in.

`import jitvm.runtime as ireert` gives the names of iree.runtime (jitvm.api.dropin); they
load on first use, so importing the runtime's own packages (jitvm.runtime.vm.objects,
...) does not load the API.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from ..api import dropin

    try:
        return getattr(dropin, name)
    except AttributeError:
        raise AttributeError(f"module 'jitvm.runtime' has no attribute '{name}'") from None


def __dir__():
    from ..api import dropin

    return sorted(set(globals()) | set(dropin.__all__))
