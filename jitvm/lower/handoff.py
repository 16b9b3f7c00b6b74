"""Tier-ups that outlive the process: what is left to tier up at exit goes to a detached worker.

A one-shot process (load a model, call it once, exit) ends before its background tier-up
(lower.lazy.TIER_UP), leaving baseline code only. At exit, the units still on baseline code
(and the runtime's own code still on its quick build, runtime.native.engine) are written
down as a job in the code store (`.tier-up/ID.json`, beside the module's bytes
when it was not read from a file), and a worker process in a session of its own, at low
priority (the module the API names with `use_worker`: api.tier_worker, which needs the
runtime's modules this stage may not import), compiles their full tier into the store: the next process
finds optimised code. The job file is locked from before it is complete until the worker
ends (the worker inherits the lock), so `wait` tells a running job from one whose worker
died. Keys are locked while compiled (unit_build), so processes ending together never
compile a unit twice. JITVM_DETACHED_TIER_UP=0 turns this off: the tests do (nothing
outlives a test run unless a test asks for it, and waits).
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import json
import mmap
import os
import sys
import time
from pathlib import Path

from ..runtime.native import cache as store

ENV = "JITVM_DETACHED_TIER_UP"
JOBS = ".tier-up"  # in the store; directories starting with "." hold no entries
NICE = 10  # the worker's niceness: calls in other processes come first
_ROOT = str(Path(__file__).resolve().parents[2])  # the checkout holding the jitvm package
_registered: list = []
_worker: list[str] = []  # the module a job runs in (`python -m MODULE JOB`), named by use_worker


def use_worker(module: str) -> None:
    """Names the module that runs a job: the layer that owns the worker says which, so this
    stage never names a module above it. Without one, nothing is handed over."""
    _worker[:] = [module]


def enabled() -> bool:
    return bool(_worker) and os.environ.get(ENV, "1").strip().lower() not in ("0", "no", "off", "false")


def jobs_dir() -> Path:
    return store.cache_dir() / JOBS


def register() -> None:
    """At exit, what is left to tier up goes to a worker: the runtime code started on its
    quick build (runtime.native.engine.PENDING_RUNTIME) and whatever `at_exit` names."""
    if not _registered:
        _registered.append(lambda: [])
        atexit.register(_at_exit)


def at_exit(executables) -> None:
    """At exit, `executables()` (lazy executables) hand their baseline units to a worker."""
    register()
    _registered.append(executables)


def _at_exit() -> None:
    if not enabled():
        return
    try:
        from ..runtime.native import engine
        hand_over([e for source in _registered for e in source()], dict(engine.PENDING_RUNTIME))
    except Exception:  # noqa: BLE001 - exiting stays quiet; the next process compiles instead
        pass


def _source(executable, directory: Path, name: str) -> tuple[str, bool]:
    """Where the worker reads the module: its file when it was mapped from one (rodata is not
    copied), else its bytes written beside the job. (path, whether the job owns it)"""
    archive = executable.loaded.module.archive
    origin = archive.origin
    try:
        if isinstance(archive.keepalive, mmap.mmap) and os.path.getsize(origin) == len(archive.data):
            return os.path.abspath(origin), False
    except (OSError, TypeError):
        pass
    path = directory / name
    path.write_bytes(archive.data)
    return str(path), True


def hand_over(executables, runtime: dict | None = None) -> int | None:
    """Starts a detached worker for the baseline units of `executables` and the `runtime`
    code (key -> (IR text, opt)) to optimise; its pid, or None when there was nothing to
    hand over."""
    from ..runtime.native import target as targets

    wanted = [e for e in executables if e.backend.use_cache and e.baseline_units()]
    runtime = {k: v for k, v in (runtime or {}).items() if store.load(k) is None}
    if not wanted and not runtime:
        return None
    directory = jobs_dir()
    directory.mkdir(parents=True, exist_ok=True)
    job_id = f"{os.getpid()}-{os.urandom(4).hex()}"
    final = directory / f"{job_id}.json"
    target = wanted[0].backend.target if wanted else targets.host()
    code = []
    for i, (ir, opt) in enumerate(runtime.values()):
        path = directory / f"{job_id}.rt{i}.ll"
        path.write_text(ir)
        code.append({"ir": str(path), "opt": opt})
    modules = []
    for i, e in enumerate(wanted):
        source, owned = _source(e, directory, f"{job_id}.{i}.vmfb")
        modules.append({"name": e.loaded.name, "source": source, "owned": owned, "digest": e.digest,
                        "options": e.builder.full_options, "units": [u.ordinals for u in e.baseline_units()]})
    job = {"cache_dir": str(store.cache_dir()), "target": [target.triple, target.cpu, target.features],
           "runtime": code, "modules": modules}
    tmp = directory / f"{job_id}.json.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # before the job is visible: `wait` never takes it for a dead one
        os.write(fd, json.dumps(job).encode())
        os.replace(tmp, final)
        env = {**os.environ, ENV: "0", "JITVM_CACHE_DIR": job["cache_dir"]}
        import subprocess  # here: most processes hand nothing off

        try:
            p = subprocess.Popen([sys.executable, "-m", _worker[0], str(final)], cwd=_ROOT, env=env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 pass_fds=(fd,), start_new_session=True)
        except OSError:
            remove_job(final)
            return None
        p.returncode = 0  # not ours to wait for: no "still running" warning when this object goes
        return p.pid
    finally:
        os.close(fd)  # the worker's copy holds the lock from here


def remove_job(path: Path) -> None:
    """The job file and the module bytes it owns."""
    stem = path.name[:-len(".json")]
    for p in path.parent.glob(f"{stem}.*"):
        try:
            p.unlink()
        except OSError:
            pass


def running(directory: Path | None = None) -> int:
    """How many detached tier-ups are at work on the store (jobs left by dead workers go)."""
    directory = directory or jobs_dir()
    count = 0
    for path in directory.glob("*.json"):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue  # finished meanwhile
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                count += 1
        else:
            remove_job(path)  # nobody holds it: its worker is gone
        finally:
            os.close(fd)
    return count


def wait(timeout: float | None = None, directory: Path | None = None) -> bool:
    """Waits until no detached tier-up works on the store (`directory`: its jobs folder);
    False on timeout. What tests and benchmarks call so that nothing outlives them."""
    start = time.monotonic()
    while running(directory):
        if timeout is not None and time.monotonic() - start > timeout:
            return False
        time.sleep(0.05)
    return True
