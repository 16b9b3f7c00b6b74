"""The process's C library through one ctypes handle (errno kept for messages).

Each caller types the functions it uses where it first needs them; the names never
overlap, so one handle serves the loader's mmap, the memory release's madvise, the heap's
mallopt, the symbol lookups and the rest.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache


@lru_cache(maxsize=1)
def process() -> ctypes.CDLL:
    """The process's global symbols: the C library and whatever else is loaded globally."""
    return ctypes.CDLL(None, use_errno=True)


def function(name: str, restype, argtypes: list):
    """The C function `name`, typed, or None where this C library has no such function."""
    try:
        fn = getattr(process(), name)
    except AttributeError:
        return None
    fn.restype, fn.argtypes = restype, argtypes
    return fn


def address(name: str) -> int | None:
    """Where `name` is in the process, or None."""
    try:
        return ctypes.cast(process()[name], ctypes.c_void_p).value
    except AttributeError:
        return None
