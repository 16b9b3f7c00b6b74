"""Worker processes for mutants: a crash or a hang is a number, not the end of the run.

`MutantPool` feeds batches of mutants to workers. Each worker reports one outcome per
mutant as it goes, so when a worker dies (SIGSEGV) or stops answering (a hang) the mutant it
was on is known: it is recorded as "crash" or "hang", the worker is replaced and the rest of
its batch is resent. Timeouts are charged by phase (protocol.py).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Iterable, Iterator

from . import protocol
from .checks import CHECKS
from .protocol import CRASH, HANG, SLOW_CALL, SLOW_PHASES


def _worker(conn, check: str, options: dict) -> None:
    fn = CHECKS[check]
    if options.get("memory_limit"):  # a mutant may legitimately ask for a huge buffer
        import resource

        limit = int(options["memory_limit"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if options.get("run"):
        import importlib

        for module in options.get("runner_modules", ()):
            importlib.import_module(module)  # modules that register RUNNERS
    while True:
        try:
            batch = conn.recv()
        except EOFError:
            return
        if batch is None:
            return
        for key, data in batch:
            protocol.set_sink(lambda name, what, counts, key=key: conn.send(
                ("phase", key, name, what, dict(counts or {}))))
            status, detail, *rest = fn(data, options)
            protocol.set_sink(None)
            conn.send(("done", key, (status, detail, dict(rest[0]) if rest else {})))


class _Worker:
    def __init__(self, ctx, check: str, options: dict):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, check, options), daemon=True)
        self.process.start()
        child.close()
        self.pending: deque = deque()  # (key, data) sent, not yet answered, in order
        self.last = time.monotonic()
        self.at_start()

    def at_start(self) -> None:
        """The state at the start of a mutant: loading it, nothing counted."""
        self.phase, self.what, self.counts = "load", "", {}

    def send(self, batch) -> None:
        self.pending.extend(batch)
        self.conn.send(batch)
        self.last = time.monotonic()

    def kill(self) -> int | None:
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(5)
        self.conn.close()
        return self.process.exitcode


@dataclass
class PoolStats:
    restarts: int = 0


class MutantPool:
    """Runs `check` on mutants in `workers` child processes; yields (key, (status, detail, counts)).

    `timeout` is the budget of the "load" phase (and of any phase without its own budget);
    `budgets` maps other phases to seconds, e.g. {"compile": 60, "init": 2, "call": 2}.
    """

    def __init__(self, check: str, workers: int = 2, timeout: float = 10.0, batch: int = 16,
                 options: dict | None = None, budgets: dict | None = None):
        methods = multiprocessing.get_all_start_methods()
        self.ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.check = check
        self.size = max(1, workers)
        self.timeout = timeout
        self.budgets = dict(budgets or {})
        self.batch = batch
        self.options = dict(options or {})
        self.workers: list[_Worker] = []
        self.stats = PoolStats()

    def __enter__(self) -> "MutantPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for w in self.workers:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
            w.kill()
        self.workers = []

    def _spawn(self) -> _Worker:
        return _Worker(self.ctx, self.check, self.options)

    def budget(self, phase_name: str) -> float:
        return self.budgets.get(phase_name, self.timeout)

    def run(self, items: Iterable[tuple[object, bytes]]) -> Iterator[tuple[object, tuple[str, str, dict]]]:
        todo: deque = deque(items)
        while len(self.workers) < self.size:
            self.workers.append(self._spawn())
        while todo or any(w.pending for w in self.workers):
            for w in self.workers:
                if not w.pending and todo:
                    w.send([todo.popleft() for _ in range(min(self.batch, len(todo)))])
            busy = [w for w in self.workers if w.pending]
            ready = wait([w.conn for w in busy], timeout=0.25)
            now = time.monotonic()
            for i, w in enumerate(list(self.workers)):
                if not w.pending:
                    continue
                if w.conn in ready:
                    try:
                        kind, key, *message = w.conn.recv()
                    except (EOFError, OSError):
                        yield self._replace(i, CRASH)
                        continue
                    w.last = now
                    if kind == "phase":
                        w.phase, w.what, w.counts = message
                        continue
                    w.pending.popleft()
                    w.at_start()
                    yield key, message[0]
                elif now - w.last > self.budget(w.phase):
                    yield self._replace(i, SLOW_CALL if w.phase in SLOW_PHASES else HANG)

    def _replace(self, i: int, status: str):
        """The worker's current mutant is the culprit; restart it with the rest of its batch."""
        old = self.workers[i]
        exitcode = old.kill()
        key, _ = old.pending.popleft()
        rest = list(old.pending)
        self.stats.restarts += 1
        new = self.workers[i] = self._spawn()
        if rest:
            new.send(rest)
        where = f"{old.phase} {old.what}".strip()
        if status == CRASH:
            detail = f"worker exit code {exitcode}"
            if exitcode is not None and exitcode < 0:
                detail = f"killed by signal {signal.Signals(-exitcode).name}"
            detail += f" during {where}"
        else:
            detail = f"{where}: no answer in {self.budget(old.phase):g} s"
        counts = dict(old.counts)
        if status == SLOW_CALL:
            counts["slow_calls"] = counts.get("slow_calls", 0) + 1
        return key, (status, detail, counts)
