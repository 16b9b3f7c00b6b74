"""The interpreter's DispatchRunner for the HAL: the workgroup loop without marshalling.

The HAL's serial runner calls the entry point through `Function.call` once per workgroup,
converting arguments to raw values and opening a fresh invocation each time. This runner
calls the interpreted entry function directly with raw values and keeps one invocation
(one `Stack`) for the whole grid, so the binding buffers' views are opened once per
dispatch instead of once per workgroup. Order and traps are the serial runner's: z
outermost, x innermost, the first failing workgroup stops the dispatch; denormals flushed.
"""

from __future__ import annotations

from ..runtime.vm import nativelib
from ..runtime.exec.dispatch import Dispatch, SerialDispatchRunner
from ..runtime.exec.fpu import denormals_flushed
from . import frames


class InterpDispatchRunner:
    def __init__(self, interpreted):
        self._interpreted = interpreted  # Function -> its raw interpreted function, or None
        self._fallback = SerialDispatchRunner()

    def run(self, dispatch: Dispatch) -> None:
        fn = self._interpreted(dispatch.entry)
        if fn is None:  # not an interpreted function (another backend prepared it)
            self._fallback.run(dispatch)
            return
        retain = nativelib.fn.jv_retain
        refs = (dispatch.local_memory.addr, dispatch.constants.addr, dispatch.bindings.addr)
        local, constants, bindings = refs
        cx, cy, cz = dispatch.workgroup_count
        sx, sy, sz = dispatch.workgroup_size
        with denormals_flushed(), frames.invocation() as stk:
            for z in range(cz):
                for y in range(cy):
                    for x in range(cx):
                        for r in refs:  # the entry function owns (and releases) its ref arguments
                            retain(r)
                        fn(stk, local, constants, bindings, x, y, z, sx, sy, sz, cx, cy, cz)
