"""Hands memory jitvm no longer needs back to the kernel, at quiet points (issue 22, item 5).

Most of the resident memory jitvm has over IREE's runtime is LLVM's own code and read-only
data: libllvmlite's pages that compiling and linking touched (some 36 MB after import,
47 MB after a cached load, 72 MB after a cold one), plus the C heap that LLVM freed but
glibc keeps. Neither is needed to run compiled code: the read-only pages are unmodified
copies of the library file, which MADV_DONTNEED drops from this process (the next touch
maps them again from the page cache: a minor fault, no I/O), and malloc_trim returns the
heap's free pages.

Releasing costs the next compile those page faults, so `release` belongs where no
compilation follows soon (the end of `jitvm.load`, the end of a tier-up batch), never
after each compiled unit. Only mappings that are private, not writable and hold no
anonymous (copied-on-write) pages are dropped: the RELRO segment, which the loader
relocated and then made read-only, is anonymous and stays. `JITVM_RELEASE_MEMORY=0`
turns releasing off (for measuring what it saves).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import sys
import threading

import numpy as np

from . import clib

LIBRARIES = ("libllvmlite",)  # shared objects whose clean read-only pages are dropped
MAPS, PAGEMAP = "/proc/self/maps", "/proc/self/pagemap"
_lock = threading.Lock()
_libc = None
_ranges: list[tuple[int, int]] = []  # what release drops, found on its first call


def enabled() -> bool:
    """Whether `release` does anything here (Linux with glibc, not turned off)."""
    return (os.environ.get("JITVM_RELEASE_MEMORY", "1") != "0" and platform.system() == "Linux"
            and platform.libc_ver()[0] == "glibc" and os.path.exists(PAGEMAP))


def clean_readonly_ranges(libraries=LIBRARIES) -> list[tuple[int, int, int]]:
    """(start, end, resident bytes) of each private, non-writable mapping of `libraries`'
    files that holds no anonymous page: the pages MADV_DONTNEED can drop without loss.
    Anonymous pages are told by the page map's flags (bit 63 present, 62 swapped, 61 a
    file page): a quarter of the time smaps takes, which measures every mapping."""
    candidates = []
    with open(MAPS) as f:
        for line in f:
            head = line.split(None, 5)
            if len(head) == 6 and head[1][1] == "-" and head[1][3] == "p" and any(lib in head[5] for lib in libraries):
                start, end = head[0].split("-")
                candidates.append((int(start, 16), int(end, 16)))
    out = []
    page = os.sysconf("SC_PAGE_SIZE")
    fd = os.open(PAGEMAP, os.O_RDONLY)
    try:
        for start, end in candidates:
            flags = np.frombuffer(os.pread(fd, (end - start) // page * 8, start // page * 8), np.uint64) >> np.uint64(61)
            present, anonymous = (flags & np.uint64(4)) != 0, (flags & np.uint64(3)) != 1  # swapped or not a file page
            if not np.any(anonymous & present | ((flags & np.uint64(2)) != 0)):
                out.append((start, end, int(np.count_nonzero(present)) * page))
    finally:
        os.close(fd)
    return out


def _c_library():
    global _libc
    if _libc is None:
        lib = clib.process()
        lib.madvise.argtypes, lib.madvise.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
        lib.malloc_trim.argtypes, lib.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        _libc = lib
    return _libc


def _llvm_loaded() -> bool:
    """Whether LLVM's library is mapped: llvmlite's bindings load it when imported, and a
    process that only mapped stored code never imports them (nothing to scan the maps for)."""
    return "llvmlite.binding" in sys.modules


def release() -> bool:
    """Drops LLVM's clean read-only pages and trims the C heap; whether it did. The
    mappings are found once LLVM is loaded (about 2 ms) and kept: not writable,
    they cannot gain anonymous pages later."""
    global _ranges
    if not enabled():
        return False
    with _lock:
        try:
            libc = _c_library()
            if not _ranges and _llvm_loaded():
                _ranges = [(start, end) for start, end, _rss in clean_readonly_ranges()]
            for start, end in _ranges:
                libc.madvise(start, end - start, mmap.MADV_DONTNEED)
            libc.malloc_trim(0)
        except (OSError, AttributeError, ValueError):
            return False
        return True
