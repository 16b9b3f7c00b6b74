"""Function groups compiled on every core: a pool of compile worker processes fed a queue.

Groups are compiled one LLVM module each (36 small modules of a ResNet take a quarter less
CPU than the same functions in two large ones) and handed out as workers become free, so
the cores stay busy whatever the groups' sizes. The caller lowers the next group while
the workers compile the previous ones. Each job carries its own optimisation options, so
one pool serves a first call's baseline and full-tier units together. A job whose worker fails or dies comes back as
None: the caller compiles it in process. A lazily compiled module starts the workers of its
first compile while it loads (`prestart`), so a first call does not wait for their start.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from pathlib import Path

from ...runtime.native import hostinfo, offload, target as targets

_ROOT = str(Path(__file__).resolve().parents[3])  # the checkout holding the jitvm package
_open: set = set()  # pools with workers; at exit they go (a background tier-up does not outlive us)
_spare: dict = {}  # (processes, target) -> a started pool no compile has taken yet


@atexit.register
def _kill_open_pools() -> None:
    for pool in list(_open):
        for p in list(pool._idle) + list(pool._busy):
            p.kill()


def prestart(processes: int, target: targets.Target) -> None:
    """Starts a pool's workers now, for the next `take` for `target`."""
    k = (processes, target)
    if k not in _spare:
        _spare[k] = CompilePool(processes, None, target)


def take(processes: int, directory: Path, target: targets.Target, nice: int = 0) -> "CompilePool":
    """A pool for `target` working in `directory`: the pre-started one if there is one (with
    at least `processes` workers alive), else a new one (its workers at `nice`)."""
    for k in [k for k in _spare if k[0] >= processes and k[1] == target] if not nice else ():
        pool = _spare.pop(k)
        if pool.workers:
            pool.directory = directory
            return pool
        pool.close()
    return CompilePool(processes, directory, target, nice)


class CompilePool:
    def __init__(self, processes: int, directory: Path | None, target: targets.Target | None, nice: int = 0):
        """`target` None: workers for this host that first print its description (Helper)."""
        import selectors  # here: a process that only maps stored code starts no workers
        import subprocess

        self.directory = directory
        self._sel = selectors.DefaultSelector()
        self._idle: list[subprocess.Popen] = []
        self._busy: dict[subprocess.Popen, int] = {}  # worker -> job index
        self._queue: list[int] = []
        self._options: dict[int, tuple] = {}  # job index -> (speed, codegen, slp)
        self.results: dict[int, bytes | None] = {}
        self._arrived: list[int] = []  # jobs finished since the last `arrived`
        _open.add(self)
        machine = ("host",) * 3 if target is None else (target.triple, target.cpu, target.features)
        args = [sys.executable, "-m", "jitvm.lower.llvm.compile_worker", *machine, str(nice)]
        for _ in range(processes):
            try:
                p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     cwd=_ROOT, text=True, bufsize=1)
            except OSError:
                continue
            self._sel.register(p.stdout, selectors.EVENT_READ, p)
            self._idle.append(p)

    @property
    def workers(self) -> int:
        return len(self._idle) + len(self._busy)

    def _paths(self, job: int) -> tuple[Path, Path]:
        return self.directory / f"g{job}.ll", self.directory / f"g{job}.o"

    def submit(self, job: int, ir_text: str, options: tuple) -> None:
        """Queues IR to compile with `options`: (speed, codegen, slp) of compiler.build_object."""
        self._paths(job)[0].write_text(ir_text)
        self._options[job] = options
        self._queue.append(job)
        self._dispatch()
        self.poll(0)

    def _dispatch(self) -> None:
        while self._queue and self._idle:
            p = self._idle.pop()
            job = self._queue.pop(0)
            ir_path, obj_path = self._paths(job)
            try:
                speed, codegen, slp = self._options[job]
                p.stdin.write(f"{ir_path}\t{obj_path}\t{speed}\t{codegen}\t{1 if slp else 0}\n")
                p.stdin.flush()
            except OSError:
                self._retire(p)
                self._queue.insert(0, job)
                continue
            self._busy[p] = job

    def poll(self, timeout: float | None) -> None:
        """Collects finished jobs (waiting up to `timeout` seconds for one; None: until one)."""
        if not self._busy:
            return
        for key, _ in self._sel.select(timeout):
            p = key.data
            if p not in self._busy:  # an idle worker's output closed: it died
                self._retire(p)
                continue
            job = self._busy.pop(p)
            answer = p.stdout.readline().strip()
            obj_path = self._paths(job)[1]
            self.results[job] = obj_path.read_bytes() if answer == "ok" and obj_path.is_file() else None
            self._arrived.append(job)
            if answer:
                self._idle.append(p)
            else:  # the worker died: its job is the caller's now
                self._retire(p)
        self._dispatch()

    def busy(self) -> bool:
        """Whether a worker is compiling a job."""
        return bool(self._busy)

    def arrived(self) -> list[int]:
        """The jobs finished (their results in `results`) since the last time asked."""
        out, self._arrived = self._arrived, []
        return out

    def finish(self) -> dict[int, bytes | None]:
        """Waits for every submitted job; jobs no worker could take come back as None. The
        workers stay until `close`."""
        while self._busy:
            self.poll(None)
        for job in self._queue:
            self.results[job] = None
        self._queue.clear()
        return self.results

    def _retire(self, p: subprocess.Popen) -> None:
        try:
            self._sel.unregister(p.stdout)
        except (KeyError, ValueError):
            pass
        if p in self._idle:
            self._idle.remove(p)
        p.kill()
        p.wait()

    def close(self) -> None:
        import subprocess  # imported by __init__ already

        for p in list(self._idle) + list(self._busy):
            try:
                self._sel.unregister(p.stdout)
            except (KeyError, ValueError):
                pass
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stdout.close()
        self._idle.clear()
        self._busy.clear()
        self._sel.close()
        _open.discard(self)


class Helper:
    """One compile worker for the process's single jobs (runtime.native.offload.Helper): this
    host's description, the runtime's own IR and a unit compiled alone go to it, one job at a
    time, so this process never loads libLLVM. Started when first needed (or by `prepare`)
    and kept until the process ends; a worker that fails or dies leaves the job to the caller."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._pool: CompilePool | None = None
        self._directory: Path | None = None
        self._description: dict | None = None
        self._failed = False
        self._jobs = 0

    def prepare(self) -> None:
        with self._lock:
            self._start()

    def _start(self) -> CompilePool | None:
        if self._pid != os.getpid():  # a forked child: the worker and its pipes are its parent's
            _open.discard(self._pool)
            self._pid, self._pool, self._directory, self._description, self._failed = os.getpid(), None, None, None, False
        if self._pool is None and not self._failed:
            import tempfile  # here: a warm load never needs it

            self._directory = Path(tempfile.mkdtemp(prefix="jitvm-helper-"))
            self._pool = CompilePool(1, self._directory, None)
            if not self._pool.workers:
                self._stop()
        return self._pool

    def _ready(self) -> CompilePool | None:
        """The started pool once its worker has said what this host is (None: no helper)."""
        pool = self._start()
        if pool is not None and self._description is None:
            worker = pool._idle[0]
            try:
                self._description = json.loads(worker.stdout.readline())
            except (OSError, ValueError):
                self._stop()
                return None
        return self._pool

    def _stop(self) -> None:
        self._failed = True
        if self._pool is not None:
            for p in list(self._pool._idle) + list(self._pool._busy):
                p.kill()
            self._pool.close()
            self._pool = None
        _remove(self._directory)

    def host_description(self) -> dict | None:
        with self._lock:
            return self._description if self._ready() is not None else None

    def compile_runtime(self, ir: str, opt: int) -> bytes | None:
        return self.compile(ir, ("runtime", opt, False))

    def compile(self, ir: str, options: tuple) -> bytes | None:
        """Object code of `ir` for this host with `options` ((speed, codegen, slp) of
        compiler.build_object, or ("runtime", opt, _)), or None: the caller compiles it."""
        with self._lock:
            pool = self._ready()
            if pool is None:
                return None
            self._jobs += 1
            job = self._jobs
            pool.submit(job, ir, options)
            obj = pool.finish().pop(job, None)
            for path in pool._paths(job):
                path.unlink(missing_ok=True)
            if not pool.workers:
                self._stop()
            return obj


_helper: Helper | None = None


def offload_llvm(start_if_cold: bool = False) -> None:
    """From now on this process's LLVM work goes to a helper worker (runtime.native.offload),
    unless JITVM_COMPILE_HERE=1. `start_if_cold`: when this host's description is not
    stored (the first load on this machine), the helper starts now, so its start overlaps
    the caller's next steps rather than waiting when the description is asked."""
    global _helper
    if _helper is None and os.environ.get("JITVM_COMPILE_HERE", "0") != "1":
        _helper = Helper()
        offload.install(_helper)
    if start_if_cold and _helper is not None and not hostinfo.known():
        _helper.prepare()


def helper(target: targets.Target) -> Helper | None:
    """The helper compiling single jobs for `target`, or None (compile here)."""
    return _helper if _helper is not None and target == targets.host() else None


@atexit.register
def _remove_helper_directory() -> None:
    """At exit (its worker is killed with the open pools): without the helper's lock, which
    a thread still compiling may hold."""
    if _helper is not None:
        _remove(_helper._directory)


def _remove(directory: Path | None) -> None:
    if directory is not None:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)


def processes() -> int:
    """Compile workers: every core (the objects do not depend on the dispatch thread count)."""
    return os.cpu_count() or 1
