"""The host's description for code generation, kept in the code store so a warm process never
starts LLVM to learn it.

What the JIT keys compiled code on (runtime.native.target.host: LLVM's process triple, its
host CPU name and features; LLVM's version) costs importing llvmlite's bindings and loading
libLLVM (35-55 ms), although a warm load only maps stored code. So the description is asked
of LLVM once and stored (runtime.native.cache) under a key made of cheap facts that decide
every field of it:

- the machine: sys.platform, platform.machine(), and /proc/cpuinfo's identity and feature
  lines (vendor, family, model, stepping, model name, flags; on arm64 the CPU implementer,
  part, variant and revision and Features) over every processor: LLVM's CPU name and
  features follow from the same CPUID (arm64: ID register) values the kernel reports there;
- arm64 Linux: the kernel's hwcaps (AT_HWCAP, AT_HWCAP2), which the features are made of;
- LLVM: llvmlite's version and its library file (path, size, modification time), so a
  rebuilt or replaced llvmlite makes a new key;
- how the description is computed: the sources of this module, target.py and hwcaps.py.

A change to any of them is a new key, so a stale record is never found (it is pruned like
any unused entry). A record that is not a well-formed description is ignored and replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import threading
from pathlib import Path
from typing import Callable

from . import cache, hwcaps

FORMAT = "host-description-1"
FIELDS = ("triple", "cpu", "features", "llvm")  # all strings
CPUINFO = "/proc/cpuinfo"
_IDENTITY = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags", "CPU implementer",
             "CPU architecture", "CPU variant", "CPU part", "CPU revision", "Features")
_SOURCES = ("hostinfo.py", "target.py", "hwcaps.py")

_lock = threading.Lock()
_description: dict[str, str] | None = None
STATS = {"asked_llvm": 0, "from_store": 0}


def description(probe: Callable[[], dict[str, str]]) -> dict[str, str]:
    """This host's description (FIELDS): from the store, else `probe()` (LLVM's answer), stored."""
    global _description
    with _lock:
        if _description is None:
            key = record_key()
            hit = cache.load(key)
            found = _valid(hit)
            if found is None:
                if hit is not None:
                    cache.drop(key)  # not a description (another jitvm's record?): replaced
                found = probe()
                cache.store(key, [json.dumps(found, sort_keys=True).encode()], {"what": "host description"})
                STATS["asked_llvm"] += 1
            else:
                STATS["from_store"] += 1
            _description = found
        return _description


def known() -> bool:
    """Whether `description` costs no probe: answered before in this process, or stored."""
    return _description is not None or cache.contains(record_key())


def adopt(bundle) -> None:
    """Takes this host's description from `bundle` (runtime.native.bundle.Bundle: its entries
    are checked against their digests) when it holds one under this host's key, before the
    bundle is checked against the host (which needs the description)."""
    global _description
    with _lock:
        if _description is None:
            found = _valid(bundle.entry(record_key()))
            if found is not None:
                _description = found
                STATS["from_store"] += 1


def _valid(hit) -> dict[str, str] | None:
    """The description a store entry holds, or None when it holds none well-formed."""
    if hit is None or len(hit[0]) != 1:
        return None
    try:
        found = json.loads(hit[0][0])
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(found, dict) or sorted(found) != sorted(FIELDS) or \
            not all(isinstance(found[f], str) for f in FIELDS):
        return None
    return found


def record_key() -> str:
    """The store key of this host's description: a digest of the facts above."""
    h = hashlib.sha256()
    for part in (FORMAT, sys.platform, platform.machine(), _cpu_identity(), repr(hwcaps.read()), *_llvm_library(),
                 *_source_texts()):
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return "host" + h.hexdigest()


def _cpu_identity() -> str:
    """/proc/cpuinfo's identity and feature lines, one sorted set over all processors ("" where
    there is none)."""
    try:
        with open(CPUINFO, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    processors = set()
    for block in text.split("\n\n"):
        fields = []
        for line in block.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() in _IDENTITY:
                fields.append(f"{name.strip()}={value.strip()}")
        if fields:
            processors.add("\n".join(sorted(fields)))
    return "\n\n".join(sorted(processors))


def _llvm_library() -> tuple[str, ...]:
    """llvmlite's version and its native library's path, size and modification time (without
    importing llvmlite's bindings, which would load the library)."""
    import llvmlite
    from llvmlite.utils import get_library_name

    path = os.path.join(os.path.dirname(llvmlite.__file__), "binding", get_library_name())
    try:
        st = os.stat(path)
        stat = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
    except OSError:
        stat = "missing"
    return llvmlite.__version__, path, stat


def _source_texts() -> tuple[bytes, ...]:
    here = Path(__file__).resolve().parent
    out = []
    for name in _SOURCES:
        try:
            out.append((here / name).read_bytes())
        except OSError:
            out.append(b"")
    return tuple(out)


def forget() -> None:
    """Drops this process's copy (tests: the next `description` reads the store again)."""
    global _description
    with _lock:
        _description = None
