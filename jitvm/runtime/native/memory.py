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
import os
import platform
import threading

LIBRARIES = ("libllvmlite",)  # shared objects whose clean read-only pages are dropped
SMAPS = "/proc/self/smaps"
_MADV_DONTNEED = 4  # Linux, every architecture
_lock = threading.Lock()
_libc = None
_ranges: list[tuple[int, int]] = []  # what release drops, found on its first call


def enabled() -> bool:
    """Whether `release` does anything here (Linux with glibc, not turned off)."""
    return (os.environ.get("JITVM_RELEASE_MEMORY", "1") != "0" and platform.system() == "Linux"
            and platform.libc_ver()[0] == "glibc" and os.path.exists(SMAPS))


def clean_readonly_ranges(libraries=LIBRARIES) -> list[tuple[int, int, int]]:
    """(start, end, resident bytes) of each private, non-writable mapping of `libraries`'
    files that holds no anonymous page: the pages MADV_DONTNEED can drop without loss."""
    out = []
    current = None  # (start, end) of a candidate mapping whose fields are being read
    rss = anonymous = 0
    with open(SMAPS) as f:
        for line in f:
            head = line.split(None, 5)
            if "-" in head[0] and len(head) >= 5:  # a mapping's header: range perms offset dev inode [path]
                if current is not None and anonymous == 0:
                    out.append((*current, rss))
                current = None
                path = head[5] if len(head) > 5 else ""
                perms = head[1]
                if perms[1] == "-" and perms[3] == "p" and any(lib in path for lib in libraries):
                    start, end = head[0].split("-")
                    current, rss, anonymous = (int(start, 16), int(end, 16)), 0, 0
            elif current is not None:
                if head[0] == "Rss:":
                    rss = int(head[1]) * 1024
                elif head[0] == "Anonymous:":
                    anonymous = int(head[1])
    if current is not None and anonymous == 0:
        out.append((*current, rss))
    return out


def _c_library():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.madvise.argtypes, lib.madvise.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
        lib.malloc_trim.argtypes, lib.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        _libc = lib
    return _libc


def release() -> bool:
    """Drops LLVM's clean read-only pages and trims the C heap; whether it did. The
    mappings are found once (reading smaps costs milliseconds) and kept: not writable,
    they cannot gain anonymous pages later."""
    global _ranges
    if not enabled():
        return False
    with _lock:
        try:
            libc = _c_library()
            if not _ranges:
                _ranges = [(start, end) for start, end, _rss in clean_readonly_ranges()]
            for start, end in _ranges:
                libc.madvise(start, end - start, _MADV_DONTNEED)
            libc.malloc_trim(0)
        except (OSError, AttributeError, ValueError):
            return False
        return True
