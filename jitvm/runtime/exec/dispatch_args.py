"""The vm objects one recorded dispatch hands its kernel, built once and repointed per run.

A reusable command buffer replays the same dispatches on every call of a model; building
their arguments anew each time (a vm.list, a vm.buffer per binding, local memory) was most
of a dispatch's host cost. `DispatchArgs` keeps them and only rewrites each binding view's
pointer, length and access before a run. After the run they are reused only if the kernel
left them as it got them: nothing else holds a reference and the list still holds exactly
the views in order. Otherwise the views get their real origins (so whoever kept one keeps
valid memory) and the set is dropped.
"""

from __future__ import annotations

import ctypes

from ..native import layout
from ..vm.objects import VmBuffer, VmList, retain
from ...frontend import types as vm_types

_BUFFER_LIST = vm_types.parse_type("!vm.buffer")
_HOST = layout.BUFFER_ORIGIN_HOST
_REFCOUNT = layout.field("Object", "refcount").offset
VIEW_REFS = 2  # a view is held by its Python wrapper and by the list
SPARE_SETS = 2  # kept per recorded dispatch: concurrent executions beyond it build their own


def view_access(mutable: bool) -> int:
    """A binding view's access bits: host-origin memory, writable when the buffer allows it."""
    return _HOST | layout.BUFFER_MUTABLE if mutable else _HOST


class DispatchArgs:
    """Binding views in a list, and zeroed local memory, for one dispatch at a time."""

    __slots__ = ("views", "structs", "list", "local", "_addrs", "_origins", "_list_struct", "_counts")

    def __init__(self, bindings: int, local_memory_size: int):
        self.views = [VmBuffer.wrap_memory(0, 0, _HOST, None) for _ in range(bindings)]
        self.structs = [v.struct for v in self.views]
        self.list = VmList.allocate(_BUFFER_LIST, bindings)
        for v in self.views:
            self.list.append(v)
        self.local = VmBuffer.allocate(local_memory_size)
        self._addrs = [v.addr for v in self.views]
        self._origins: list[VmBuffer | None] = [None] * bindings
        self._list_struct = self.list.struct
        # (reference count, what it is when only this set holds the object)
        self._counts = [(ctypes.c_int64.from_address(self.list.addr + _REFCOUNT), 1),
                        (ctypes.c_int64.from_address(self.local.addr + _REFCOUNT), 1)] + \
                       [(ctypes.c_int64.from_address(v.addr + _REFCOUNT), VIEW_REFS) for v in self.views]

    def point(self, index: int, address: int, length: int, mutable: bool, origin: VmBuffer) -> None:
        """Binding `index` views [address, address+length) of `origin`, which the caller keeps
        alive for the run."""
        s = self.structs[index]
        s.data, s.length = address, length
        s.access = view_access(mutable)
        self._origins[index] = origin

    def prepare_local(self) -> None:
        """Local memory starts zeroed on every run, as a fresh allocation would."""
        n = self.local.length
        if n:
            ctypes.memset(self.local.data_address, 0, n)

    def finish(self) -> bool:
        """After a run: True if the set may be reused. Its views keep stale pointers until the
        next `point`; nothing but this set can reach them."""
        reusable = self._untouched()
        if not reusable:
            self.give_origins(self._origins)
        self._origins = [None] * len(self._origins)
        return reusable

    def give_origins(self, origins) -> None:
        """Makes each view keep its memory (`origins[i]`, a VmBuffer or None) alive itself:
        the set is dropped, and whoever kept a view keeps valid memory."""
        for s, origin in zip(self.structs, origins):
            if origin is not None and not s.origin:
                retain(origin.addr)
                s.origin = origin.addr

    def _untouched(self) -> bool:
        if any(count.value != expected for count, expected in self._counts):
            return False
        lst = self._list_struct
        if lst.size != len(self._addrs):
            return False
        return not self._addrs or list((ctypes.c_void_p * len(self._addrs)).from_address(lst.storage)) == self._addrs
