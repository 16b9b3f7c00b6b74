"""HAL exports implemented in Python: buffer_view.trace (it calls the host's trace sink).

The other buffer and buffer-view functions are native (hal.native, buffers.ll).
"""

from __future__ import annotations

from ...vm.interface import export
from .buffer_view import HalBufferView
from .errors import buffer_string, deref


class BufferExports:
    @export("buffer_view.trace", "0rCrD_v")
    def buffer_view_trace(self, key, views):
        name = buffer_string(key, "hal.buffer_view.trace key")
        checked = [deref(v, HalBufferView, f"hal.buffer_view.trace view {i}") for i, (v,) in enumerate(views)]
        sink = getattr(self, "trace_sink", None)
        if sink is not None:
            sink(name, checked)
