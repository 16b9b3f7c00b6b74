"""The on-disk store of compiled code: object files plus what loading them needs, by key.

Keys are content digests chosen by the user of the store: the JIT keys a module's code on
its FlatBuffer, jitvm's sources and the target (lower.llvm.cache); the runtime keys its own
native code (runtime.native.engine) on the IR text and the target. Location:
$JITVM_CACHE_DIR, else the user cache directory ($XDG_CACHE_HOME/jitvm or ~/.cache/jitvm).
Entries are written atomically; a corrupt or partial entry is ignored and rebuilt. Past
$JITVM_CACHE_MAX_MB (default 1024) the least recently used entries go when a new one is
stored.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

FORMAT = "jitvm-cache-2"
DEFAULT_MAX_MB = 1024


def cache_dir() -> Path:
    env = os.environ.get("JITVM_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitvm"


def load(k: str) -> tuple[list[bytes], dict] | None:
    d = cache_dir() / k[:2] / k
    try:
        meta = json.loads((d / "meta.json").read_text())
        objects = [(d / f"code.{i}.o").read_bytes() for i in range(len(meta.get("sizes", ())))]
    except (OSError, ValueError):
        return None
    if meta.get("format") != FORMAT or [len(o) for o in objects] != meta.get("sizes"):
        return None
    try:
        os.utime(d)  # recently used: pruned last
    except OSError:
        pass
    return objects, meta


def store(k: str, objects: list[bytes], meta: dict) -> None:
    final = cache_dir() / k[:2] / k
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
        for i, obj in enumerate(objects):
            (tmp / f"code.{i}.o").write_bytes(obj)
        (tmp / "meta.json").write_text(json.dumps({**meta, "format": FORMAT, "sizes": [len(o) for o in objects]}))
        try:
            os.replace(tmp, final)
        except OSError:  # another process stored it first
            shutil.rmtree(tmp, ignore_errors=True)
        prune(max_bytes())
    except OSError:
        pass  # a read-only or full disk only costs recompilation


def max_bytes() -> int:
    try:
        return int(float(os.environ.get("JITVM_CACHE_MAX_MB", DEFAULT_MAX_MB)) * (1 << 20))
    except ValueError:
        return DEFAULT_MAX_MB << 20


def entries() -> list[tuple[float, int, Path]]:
    """(last use, size in bytes, directory) of every entry."""
    out = []
    for d in cache_dir().glob("*/*"):
        if d.name.startswith(".tmp-"):
            continue
        try:
            out.append((d.stat().st_mtime, sum(f.stat().st_size for f in d.iterdir()), d))
        except OSError:
            continue
    return out


def prune(limit: int) -> int:
    """Removes least recently used entries until the cache holds at most `limit` bytes."""
    found = sorted(entries())
    total = sum(size for _, size, _ in found)
    removed = 0
    for _, size, d in found:
        if total <= limit:
            break
        shutil.rmtree(d, ignore_errors=True)
        total -= size
        removed += 1
    return removed


def clear() -> int:
    """Removes every cached entry; returns how many there were."""
    d = cache_dir()
    if not d.exists():
        return 0
    n = sum(1 for _ in d.glob("*/*"))
    shutil.rmtree(d, ignore_errors=True)
    return n
