"""The on-disk store of compiled code: object files plus what loading them needs, by key.

Keys are content digests chosen by the user of the store: the JIT keys a module's code on
its FlatBuffer, jitvm's sources and the target (lower.llvm.cache); the runtime keys its own
native code (runtime.native.engine) on the IR text and the target. Location:
$JITVM_CACHE_DIR, else the user cache directory ($XDG_CACHE_HOME/jitvm or ~/.cache/jitvm).
Entries are written atomically; a corrupt or partial entry is ignored and rebuilt; `lock`
lets processes sharing the store agree who compiles an entry (the others wait, then read it). Past
$JITVM_CACHE_MAX_MB (default 1024) the least recently used entries go when a new one is
stored.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

FORMAT = "jitvm-cache-3"  # 3: each object's sha256 in meta.json, checked when read
DEFAULT_MAX_MB = 1024

_bundles: list = []  # read-only layers searched before the directory (runtime.native.bundle)
_recorders: list[set] = []  # keys read or stored while a `recording()` is open
_warned: set[str] = set()
LOCKS = ".locks"  # lock files of keys being compiled; directories starting with "." hold no entries


def cache_dir() -> Path:
    env = os.environ.get("JITVM_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitvm"


def load(k: str) -> tuple[list[bytes], dict] | None:
    """The entry `k` (its objects and meta) from a bundle in use or the directory, or None.
    An entry whose bytes do not match its digests is dropped with a warning (once) and
    rebuilt: code that may be corrupt is never run."""
    for recorder in _recorders:
        recorder.add(k)
    for bundle in _bundles:
        hit = bundle.entry(k)
        if hit is not None:
            return hit
    d = cache_dir() / k[:2] / k
    try:
        meta = json.loads((d / "meta.json").read_text())
        objects = [(d / f"code.{i}.o").read_bytes() for i in range(len(meta.get("sizes", ())))]
    except (OSError, ValueError):
        return None
    if not intact(objects, meta):
        _warn_once(k, f"jitvm: the cached code in {d} is damaged or stale; compiling it again")
        _remove(d)
        return None
    try:
        os.utime(d)  # recently used: pruned last
    except OSError:
        pass
    return objects, meta


def contains(k: str) -> bool:
    """Whether the store (a bundle in use or the directory) has an entry `k`: a hint for
    what to prepare (not read, so not checked; `load` reads and checks)."""
    return any(bundle.entry(k) is not None for bundle in _bundles) or \
        (cache_dir() / k[:2] / k / "meta.json").exists()


def intact(objects: list[bytes], meta: dict) -> bool:
    """Whether `objects` are what `meta` says was stored (format, sizes, sha256 digests)."""
    return meta.get("format") == FORMAT and [len(o) for o in objects] == meta.get("sizes") and \
        [hashlib.sha256(o).hexdigest() for o in objects] == meta.get("digests")


def describe(objects: list[bytes], meta: dict) -> dict:
    """`meta` with the fields `intact` checks."""
    return {**meta, "format": FORMAT, "sizes": [len(o) for o in objects],
            "digests": [hashlib.sha256(o).hexdigest() for o in objects]}


def _remove(path) -> None:
    """Removes a directory tree, if it is there (shutil imported here: reading needs none of it)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


@contextmanager
def recording():
    """The keys this process reads or stores while the block runs (what a bundle needs)."""
    keys: set[str] = set()
    _recorders.append(keys)
    try:
        yield keys
    finally:
        _recorders.remove(keys)


def use(bundle) -> None:
    """Searches `bundle` (runtime.native.bundle.Bundle) before the directory from now on."""
    if bundle not in _bundles:
        _bundles.insert(0, bundle)


def store(k: str, objects: list[bytes], meta: dict) -> None:
    for recorder in _recorders:
        recorder.add(k)
    final = cache_dir() / k[:2] / k
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # here: a process that only reads the store never needs it

        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
        for i, obj in enumerate(objects):
            (tmp / f"code.{i}.o").write_bytes(obj)
        (tmp / "meta.json").write_text(json.dumps(describe(objects, meta)))
        try:
            os.replace(tmp, final)
        except OSError:  # another process stored it first
            _remove(tmp)
        prune(max_bytes())
    except OSError:
        pass  # a read-only or full disk only costs recompilation


def drop(k: str) -> None:
    """Removes the directory's entry `k` (one its reader found unusable), so it can be stored anew."""
    _remove(cache_dir() / k[:2] / k)


@contextmanager
def lock(k: str, blocking: bool = True):
    """Holds the store's lock on key `k` (an flock on a file of its own, removed by its
    holder, so none pile up; the kernel drops the lock of a process that dies). Yields
    False when `blocking` is False and another process holds it, or when the store cannot
    hold lock files (read-only): then nobody is told to wait."""
    path = cache_dir() / LOCKS / k
    fd = None
    try:
        while True:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                yield False
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except OSError as e:
                os.close(fd)
                fd = None
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EINTR):
                    yield False
                    return
                if not blocking:
                    yield False
                    return
                continue
            try:  # the file we locked is still the lock's (its last holder removes it)
                if os.fstat(fd).st_ino == os.stat(path).st_ino:
                    break
            except OSError:
                pass
            os.close(fd)
            fd = None
        yield True
    finally:
        if fd is not None:
            try:
                os.unlink(path)
            except OSError:
                pass
            os.close(fd)


def max_bytes() -> int:
    try:
        return int(float(os.environ.get("JITVM_CACHE_MAX_MB", DEFAULT_MAX_MB)) * (1 << 20))
    except ValueError:
        return DEFAULT_MAX_MB << 20


def entries() -> list[tuple[float, int, Path]]:
    """(last use, size in bytes, directory) of every entry."""
    out = []
    for d in cache_dir().glob("*/*"):
        if d.name.startswith(".tmp-") or d.parent.name.startswith("."):
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
        _remove(d)
        total -= size
        removed += 1
    return removed


def clear() -> int:
    """Removes every cached entry; returns how many there were."""
    d = cache_dir()
    if not d.exists():
        return 0
    n = sum(1 for e in d.glob("*/*") if not e.parent.name.startswith("."))
    _remove(d)
    return n
